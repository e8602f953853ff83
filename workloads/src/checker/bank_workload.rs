//! `bank`: every read of the accounts sums to the bank's total with no negative balance (Jepsen's bank), by
//! [`crate::bank_check`]. The details are the whole [`crate::bank_check::BankCheckResult`]; the evidence time is
//! the first unbalanced read's completion.

use super::{CheckInput, CheckResult, Checker};
use crate::bank_check::{check_bank, BankCheckOptions};
use serde_json::Value;

/// Checks a bank history.
#[derive(Debug, Clone, Default)]
pub struct BankWorkload {
    /// The total, the accounts, whether balances may go negative.
    pub options: BankCheckOptions,
}

impl Checker for BankWorkload {
    fn name(&self) -> &'static str {
        "bank"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = check_bank(input.history, &self.options);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result.errors.first().map(|e| e.time_ns);
        checked
    }
}
