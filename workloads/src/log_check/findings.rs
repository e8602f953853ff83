//! Collecting anomalies: counted all, kept up to a cap per kind (a broken run can have millions), graded against the
//! durability promise, and summed up into the verdict and its one-sentence reason.

use super::{Anomaly, AnomalyKind, Durability, LogCheckStats, OpRef, Severity, MAX_ANOMALIES_PER_KIND};
use crate::verdict::Verdict;
use serde_json::Value;
use std::collections::BTreeMap;

/// The parts of an anomaly a check supplies; built only when the anomaly is kept.
pub(super) struct Detail {
    pub offsets: Vec<u64>,
    pub payloads: Vec<Value>,
    pub ops: Vec<OpRef>,
    pub reason: String,
}

/// Whether an anomaly can be the consequence of losing acknowledged appends from memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause {
    /// Explained by a loss of acknowledged data: a warning when the promise is memory-only durability.
    MaybeLoss,
    /// Never explained by a loss (duplicates, phantoms, a read contradicting itself): always an error.
    Never,
}

/// Anomalies found so far.
pub(super) struct Findings {
    pub anomalies: Vec<Anomaly>,
    pub counts: BTreeMap<AnomalyKind, u64>,
    errors: u64,
    warnings: u64,
    durability: Durability,
}

impl Findings {
    pub fn new(durability: Durability) -> Self {
        Findings {
            anomalies: Vec::new(),
            counts: BTreeMap::new(),
            errors: 0,
            warnings: 0,
            durability,
        }
    }

    /// Counts an anomaly and keeps it (calling `detail`) while its kind is under the cap.
    pub fn report(&mut self, kind: AnomalyKind, log: &str, cause: Cause, detail: impl FnOnce() -> Detail) {
        let severity = match (cause, self.durability) {
            (Cause::MaybeLoss, Durability::QuorumMemory) => Severity::Warning,
            _ => Severity::Error,
        };
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
        }
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        if *count > MAX_ANOMALIES_PER_KIND as u64 {
            return;
        }
        let Detail {
            offsets,
            payloads,
            ops,
            reason,
        } = detail();
        self.anomalies.push(Anomaly {
            kind,
            severity,
            log: log.to_string(),
            offsets,
            payloads,
            ops,
            reason,
        });
    }

    /// The verdict and one sentence saying why.
    pub fn verdict(&self, stats: &LogCheckStats) -> (Verdict, String) {
        let counts = self
            .counts
            .iter()
            .map(|(kind, n)| format!("{n} {}", kind_name(*kind)))
            .collect::<Vec<_>>()
            .join(", ");
        let first = |severity| self.anomalies.iter().find(|a| a.severity == severity);
        if let Some(first) = first(Severity::Error) {
            let reason = format!("log anomalies found ({counts}); first: {}", first.reason);
            return (Verdict::Invalid, reason);
        }
        if let Some(first) = first(Severity::Warning) {
            let reason = format!(
                "only anomalies that acknowledging in memory allows after a power loss ({counts}); first: {}",
                first.reason
            );
            return (Verdict::Unknown, reason);
        }
        let unseen = match stats.acked_unseen {
            0 => String::new(),
            n => format!(" ({n} acknowledged appends were never read back, so their survival is unconfirmed)"),
        };
        let reason = format!(
            "{} appends ({} acknowledged) and {} reads over {} logs show no lost, duplicated, inconsistent, \
             non-monotonic, stale or phantom entries{unseen}",
            stats.appends, stats.appends_ok, stats.reads_ok, stats.logs
        );
        (Verdict::Valid, reason)
    }
}

fn kind_name(kind: AnomalyKind) -> &'static str {
    match kind {
        AnomalyKind::Lost => "lost",
        AnomalyKind::Duplicated => "duplicated",
        AnomalyKind::Inconsistent => "inconsistent",
        AnomalyKind::NonMonotonic => "non-monotonic",
        AnomalyKind::Stale => "stale",
        AnomalyKind::Phantom => "phantom",
    }
}
