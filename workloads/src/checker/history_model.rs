//! The checker a history model names: what `faultline check FILE --model M` runs on a history from anywhere, built
//! from the same [`Checker`]s a run's workload check uses, so a file and a run are judged alike.

use super::{BankWorkload, Checker, CounterWorkload, Linearizability, LongForkWorkload, SetWorkload, TxnWorkload};
use crate::bank_check::BankCheckOptions;
use crate::linearizability::CheckOptions;
use crate::long_fork_check::LongForkOptions;
use crate::models::ModelKind;
use crate::set_check::SetCheckOptions;
use crate::txn_check::{ConsistencyModel, TxnCheckOptions, TxnInputError, TxnModel};
use std::time::Duration;

/// Every model a history can be checked against, Jepsen's, Elle's and Knossos's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistoryModel {
    /// Knossos's cas-register, one per key (linearizability).
    CasRegister,
    /// Porcupine's key-value store (linearizability).
    Kv,
    /// An append-only log per key (linearizability).
    AppendLog,
    /// Knossos's mutex (linearizability).
    Mutex,
    /// Elle's list-append transactions.
    ListAppend,
    /// Elle's rw-register transactions.
    RwRegister,
    /// Jepsen's set: adds against a final read.
    Set,
    /// Jepsen's set-full: adds against every read.
    SetFull,
    /// Jepsen's counter.
    Counter,
    /// Jepsen's bank.
    Bank,
    /// Jepsen's long fork.
    LongFork,
}

impl HistoryModel {
    /// Every model, in the order help lists them.
    pub const ALL: [HistoryModel; 11] = [
        HistoryModel::CasRegister,
        HistoryModel::Kv,
        HistoryModel::AppendLog,
        HistoryModel::Mutex,
        HistoryModel::ListAppend,
        HistoryModel::RwRegister,
        HistoryModel::Set,
        HistoryModel::SetFull,
        HistoryModel::Counter,
        HistoryModel::Bank,
        HistoryModel::LongFork,
    ];

    /// The model's name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            HistoryModel::CasRegister => "cas-register",
            HistoryModel::Kv => "kv",
            HistoryModel::AppendLog => "append-log",
            HistoryModel::Mutex => "mutex",
            HistoryModel::ListAppend => "list-append",
            HistoryModel::RwRegister => "rw-register",
            HistoryModel::Set => "set",
            HistoryModel::SetFull => "set-full",
            HistoryModel::Counter => "counter",
            HistoryModel::Bank => "bank",
            HistoryModel::LongFork => "long-fork",
        }
    }

    /// The linearizability model it is, if it is one.
    pub fn linearizable(self) -> Option<ModelKind> {
        match self {
            HistoryModel::CasRegister => Some(ModelKind::CasRegister),
            HistoryModel::Kv => Some(ModelKind::Kv),
            HistoryModel::AppendLog => Some(ModelKind::AppendLog),
            HistoryModel::Mutex => Some(ModelKind::Mutex),
            _ => None,
        }
    }
}

impl std::str::FromStr for HistoryModel {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Ok(kind) = name.parse::<ModelKind>() {
            return Ok(match kind {
                ModelKind::CasRegister => HistoryModel::CasRegister,
                ModelKind::Kv => HistoryModel::Kv,
                ModelKind::AppendLog => HistoryModel::AppendLog,
                ModelKind::Mutex => HistoryModel::Mutex,
            });
        }
        HistoryModel::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let known: Vec<&str> = HistoryModel::ALL.iter().map(|m| m.name()).collect();
            format!("unknown model {name:?}: expected one of {}", known.join(", "))
        })
    }
}

/// Everything a model's checker may be told, each used by the models it concerns and ignored by the others.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOptions {
    /// Linearizability: wall-clock budget.
    pub timeout: Duration,
    /// list-append, rw-register: the claimed models (Elle's `--consistency-models`; default strict-serializable).
    pub consistency_models: Vec<ConsistencyModel>,
    /// list-append, rw-register: anomalies to look for beside the models (Elle's `--anomalies`).
    pub anomalies: Vec<String>,
    /// rw-register: writes follow reads within a transaction (Elle's `wfr-keys`).
    pub writes_follow_reads: bool,
    /// rw-register: a read of a value nobody wrote is the key's initial value, as Elle takes it (not a garbage read).
    pub unwritten_reads_initial: bool,
    /// set-full: stale reads make the history invalid.
    pub linearizable_set: bool,
    /// bank: total, accounts, negative balances.
    pub bank: BankCheckOptions,
    /// long-fork: keys per read.
    pub group_size: Option<usize>,
}

impl Default for ModelOptions {
    /// Elle's, Jepsen's and Knossos's defaults: strict-serializable, no writes-follow-reads assumption, set-full not
    /// claimed linearizable, 30 s for a linearizability search.
    fn default() -> Self {
        ModelOptions {
            timeout: Duration::from_secs(30),
            consistency_models: vec![ConsistencyModel::StrictSerializable],
            anomalies: Vec::new(),
            writes_follow_reads: false,
            unwritten_reads_initial: false,
            linearizable_set: false,
            bank: BankCheckOptions::default(),
            group_size: None,
        }
    }
}

/// The checker of `model` with `options`; refuses an anomaly name Elle's hierarchy does not know.
pub fn checker_for(model: HistoryModel, options: &ModelOptions) -> Result<Box<dyn Checker>, TxnInputError> {
    if let Some(kind) = model.linearizable() {
        return Ok(Box::new(Linearizability {
            model: kind,
            options: CheckOptions {
                timeout: options.timeout,
                ..CheckOptions::default()
            },
        }));
    }
    let txn = |txn_model: TxnModel| -> Result<Box<dyn Checker>, TxnInputError> {
        let mut txn_options =
            TxnCheckOptions::for_claims(txn_model, options.consistency_models.clone(), options.anomalies.clone())?;
        txn_options.writes_follow_reads = options.writes_follow_reads;
        txn_options.unwritten_reads_initial = options.unwritten_reads_initial;
        Ok(Box::new(TxnWorkload { options: txn_options }))
    };
    Ok(match model {
        HistoryModel::ListAppend => txn(TxnModel::ListAppend)?,
        HistoryModel::RwRegister => txn(TxnModel::RwRegister)?,
        HistoryModel::Set => Box::new(SetWorkload {
            options: SetCheckOptions::default(),
            final_read: true,
        }),
        HistoryModel::SetFull => Box::new(SetWorkload {
            options: SetCheckOptions {
                linearizable: options.linearizable_set,
            },
            final_read: false,
        }),
        HistoryModel::Counter => Box::new(CounterWorkload),
        HistoryModel::Bank => Box::new(BankWorkload {
            options: options.bank.clone(),
        }),
        HistoryModel::LongFork => Box::new(LongForkWorkload {
            options: LongForkOptions {
                group_size: options.group_size,
            },
        }),
        HistoryModel::CasRegister | HistoryModel::Kv | HistoryModel::AppendLog | HistoryModel::Mutex => {
            unreachable!("linearizability models returned above")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_model_name_when_parsed_should_give_the_model_and_its_check() {
        for model in HistoryModel::ALL {
            assert_eq!(model.name().parse::<HistoryModel>(), Ok(model));
            let checker = checker_for(model, &ModelOptions::default()).expect("default options are accepted");
            let expected = match model {
                m if m.linearizable().is_some() => "linearizability",
                HistoryModel::ListAppend | HistoryModel::RwRegister => "txn",
                HistoryModel::Set | HistoryModel::SetFull => "set",
                other => other.name(),
            };
            assert_eq!(checker.name(), expected, "{model:?}");
        }
        assert!("bogus".parse::<HistoryModel>().unwrap_err().contains("long-fork"));
    }

    #[test]
    fn given_an_unknown_anomaly_when_building_a_txn_checker_should_refuse_naming_the_known_ones() {
        let options = ModelOptions {
            anomalies: vec!["G3".into()],
            ..ModelOptions::default()
        };
        let refused = checker_for(HistoryModel::ListAppend, &options)
            .err()
            .expect("G3 is not an anomaly");
        assert!(refused.to_string().contains("unknown anomaly \"G3\""), "{refused}");
    }
}
