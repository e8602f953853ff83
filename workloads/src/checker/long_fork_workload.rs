//! `long-fork`: inserts that readers saw in two orders (Jepsen's long-fork), by [`crate::long_fork_check`]. The
//! details are the whole [`crate::long_fork_check::LongForkResult`]; the evidence time is the later completion of
//! the first fork's two reads.

use super::{time_of, CheckInput, CheckResult, Checker};
use crate::long_fork_check::{check_long_fork, LongForkOptions};
use serde_json::Value;

/// Checks a long-fork history.
#[derive(Debug, Clone, Copy, Default)]
pub struct LongForkWorkload {
    /// The group size, if the history must keep to one.
    pub options: LongForkOptions,
}

impl Checker for LongForkWorkload {
    fn name(&self) -> &'static str {
        "long-fork"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = check_long_fork(input.history, &self.options);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result
            .forks
            .first()
            .and_then(|f| time_of(input.history, f.a.index.max(f.b.index)));
        checked
    }
}
