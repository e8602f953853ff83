//! The bank workload's ops (Jepsen's bank): reads of every balance and transfers of 1 to `max_transfer` between two
//! distinct accounts, each op carrying the bank ([`Bank`]) so that whichever client comes first opens it.

use super::PlannedOp;
use crate::plan::BankSpec;
use crate::system::{Bank, BANK_KEY};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// The bank a spec describes.
pub fn bank_of(spec: &BankSpec) -> Bank {
    Bank {
        accounts: spec.accounts.0,
        total: spec.total.0,
    }
}

/// The bank an op's value carries (as [`read`] and [`transfer`] write it).
pub fn bank_in(value: &Value) -> Bank {
    Bank {
        accounts: value["accounts"].as_u64().unwrap_or(0),
        total: value["total"].as_u64().unwrap_or(0),
    }
}

/// A read of every balance: `{"accounts": N, "total": T}`.
pub fn read(bank: Bank) -> PlannedOp {
    PlannedOp {
        f: "read",
        key: BANK_KEY.to_string(),
        value: json!({"accounts": bank.accounts, "total": bank.total}),
    }
}

/// A transfer of `amount` from `from` to `to`: `{"from", "to", "amount", "accounts", "total"}`.
pub fn transfer(bank: Bank, from: u64, to: u64, amount: u64) -> PlannedOp {
    PlannedOp {
        f: "transfer",
        key: BANK_KEY.to_string(),
        value: json!({"from": from, "to": to, "amount": amount, "accounts": bank.accounts, "total": bank.total}),
    }
}

/// A transfer between two distinct accounts drawn at random, of 1 to the spec's `max_transfer`.
pub fn random_transfer(spec: &BankSpec, rng: &mut ChaCha8Rng) -> PlannedOp {
    let bank = bank_of(spec);
    let from = rng.gen_range(0..bank.accounts);
    let to = (from + rng.gen_range(1..bank.accounts)) % bank.accounts;
    transfer(bank, from, to, rng.gen_range(1..=spec.max_transfer.0))
}
