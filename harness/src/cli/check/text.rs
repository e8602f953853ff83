//! What `faultline check` prints for a person (on stderr): the verdict and why, and for each kind of check the
//! evidence in a few lines: the linearizability explanation, the anomaly classes and models (in Elle's words), the
//! lost and stale elements, the unbalanced reads, the forks.

use faultline_workloads::checker::{CheckResult, HistoryModel};
use faultline_workloads::linearizability::ExplainKeys;
use faultline_workloads::txn_check::{AnomalyClass, ConsistencyModel, TxnCheckResult};
use faultline_workloads::LinearizabilityResult;
use serde_json::Value;
use std::fmt::Write;

/// Anomalies shown per class, and evidence lines per check.
const SHOWN: usize = 3;

/// The text for a check's result; `explain` chooses the failing keys of a linearizability check explained in full.
pub fn render(check: &CheckResult, model: HistoryModel, explain: &ExplainKeys) -> String {
    if check.not_checked {
        return headline(check);
    }
    let details = &check.details;
    match check.name.as_str() {
        "linearizability" => match serde_json::from_value::<LinearizabilityResult>(details.clone()) {
            Ok(result) => faultline_workloads::linearizability::render_text_explaining(&result, explain),
            Err(_) => headline(check),
        },
        "txn" => match serde_json::from_value::<TxnCheckResult>(details.clone()) {
            Ok(result) => txn(&result, model),
            Err(_) => headline(check),
        },
        _ => {
            let mut out = headline(check);
            for line in evidence(details).into_iter().take(SHOWN) {
                let _ = writeln!(out, "  {line}");
            }
            out
        }
    }
}

fn headline(check: &CheckResult) -> String {
    if check.not_checked {
        return format!("{}\n", check.reason); // "not checked: why"
    }
    format!("{}: {}\n", check.verdict, check.reason)
}

fn names(models: &[ConsistencyModel]) -> String {
    if models.is_empty() {
        return "none".to_string();
    }
    models.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
}

/// The txn result as Elle states it, then the first anomalies of each class with their reasons.
fn txn(result: &TxnCheckResult, model: HistoryModel) -> String {
    let mut out = format!("{}: {}\n", result.verdict, result.reason);
    let types = if result.anomaly_types.is_empty() {
        "none".to_string()
    } else {
        let faultlines = |name: &str| AnomalyClass::parse(name).is_some_and(|c| c.elle_result().starts_with("none"));
        let shown: Vec<String> = result
            .anomaly_types
            .iter()
            .map(|t| {
                if faultlines(t) {
                    format!("{t} (faultline's own)")
                } else {
                    t.clone()
                }
            })
            .collect();
        shown.join(", ")
    };
    let _ = writeln!(out, "  {} anomaly types (Elle's names): {types}", model.name());
    let _ = writeln!(out, "  ruled out (Elle's :not): {}", names(&result.not));
    if !result.also_not.is_empty() {
        let _ = writeln!(out, "  also ruled out: {}", names(&result.also_not));
    }
    let _ = writeln!(
        out,
        "  strongest models still held: {}",
        names(&result.strongest_models)
    );
    if result.anomalies.contains_key(&AnomalyClass::GarbageRead) && model == HistoryModel::RwRegister {
        let _ = writeln!(
            out,
            "  differs from Elle on purpose: Elle's rw-register takes a read of a value nobody wrote as the key's \
             value from before the history (its own tests call such histories valid); --unwritten-reads-initial \
             gives Elle's verdict"
        );
    }
    for (class, found) in &result.anomalies {
        let total = result.anomaly_counts.get(class).copied().unwrap_or(found.len() as u64);
        let _ = writeln!(out, "  {class} ({} found, {}):", total, class.elle_result());
        for anomaly in found.iter().take(SHOWN) {
            let _ = writeln!(out, "    {}", anomaly.explanation);
            for step in &anomaly.cycle {
                let _ = writeln!(out, "      {}", step.sentence);
            }
        }
    }
    let s = &result.stats;
    let _ = writeln!(
        out,
        "  {} transactions ({} ok, {} fail, {} info), {} keys, checked in {} ms",
        s.txns, s.ok, s.failed, s.info, s.keys, s.check_ms
    );
    out
}

/// The evidence lines of the other checks: their anomalies', errors' or forks' sentences.
fn evidence(details: &Value) -> Vec<String> {
    let lists = ["anomalies", "errors", "forks"];
    let sentence = |item: &Value| {
        ["description", "explanation"]
            .iter()
            .find_map(|field| item[field].as_str().map(str::to_string))
            .unwrap_or_else(|| item.to_string())
    };
    lists
        .iter()
        .filter_map(|list| details[list].as_array())
        .flatten()
        .map(sentence)
        .collect()
}
