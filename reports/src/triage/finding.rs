//! Findings: what each failing check of a run says, as signatures that identify the bug rather than the run.
//!
//! A check yields one finding per distinct thing it found, from its structured details where it has them:
//!
//! | check | finding kind(s) | key line |
//! |---|---|---|
//! | `boot` | `refused-clean-disk` per refusal nothing explains | the refusal line the check quotes, masked |
//! |        | `booted-on-damage`, `crashed`, `no-recovery` per other problem | the exit (`exit code 101`), or what was missing |
//! |        | `refused-after-surgery` (a majority refused legitimately: unknown) | - |
//! | `set` | one per anomaly kind: `lost`, `stale`, `phantom`, `failed-but-present` | - |
//! | `log` | one per anomaly kind of the verdict's severity | - |
//! | `linearizability` | `not-linearizable` | the model |
//! | `durability` | `forgotten` or `booted-on-damage` per bad restart | how the node stopped (`kill`, `restart-all`) |
//! | `liveness` | `no-recovery` | the step after which no write was accepted |
//! | `convergence` | `no-convergence` | - |
//! | `log-patterns` | `log-pattern` per distinct matched line | a panic's `file.rs:LINE` and message, else the line |
//! | any other, and any check that could not decide | `inconclusive` / `other` | the check's reason, masked |
//!
//! Only checks whose verdict is the run's (non-valid) verdict yield findings, as only they made the verdict: an
//! `unknown` convergence behind an `invalid` boot is the boot's consequence.
//!
//! The signature is (system, check, kind, key). The plan is not part of it: the same stale read under `iggy-kill` and
//! `iggy-mixed` is one bug. The system is: a stale read of etcd and one of Iggy are not.

use super::mask::{log_line_key, mask_line};
use crate::results::{CheckResult, Results, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// Characters of a finding's example kept (the raw line a person reads beside the key).
const EXAMPLE_CHARS_MAX: usize = 400;

/// What kind of thing a check found. The order is the severity order within a [`Severity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// A node refused to boot on a disk nothing corrupted (or its own verifier refused it).
    RefusedCleanDisk,
    /// Acknowledged data missing from later reads.
    Lost,
    /// A node booted with less than it had applied, no surgery recorded.
    Forgotten,
    /// A node booted on damage it should have refused.
    BootedOnDamage,
    /// One acknowledged entry at two places.
    Duplicated,
    /// Reads disagree on what an entry is.
    Inconsistent,
    /// Data nobody wrote.
    Phantom,
    /// Data whose write was answered as definitely failed.
    FailedButPresent,
    /// The history has no linearization.
    NotLinearizable,
    /// Transactions show an isolation anomaly their claimed consistency model forbids (a dependency cycle, an
    /// intermediate read, ...); the key is the anomaly class.
    IsolationAnomaly,
    /// A read missed what was acknowledged before it began.
    Stale,
    /// A reader saw the log go backwards or change.
    NonMonotonic,
    /// No write was accepted within the bound after healing, or a node never came back.
    NoRecovery,
    /// A node exited on its own.
    Crashed,
    /// The nodes did not reach the same commit point.
    NoConvergence,
    /// A node's log matched a failure pattern.
    LogPattern,
    /// A majority refused to boot after recorded surgery: beyond the fault model.
    RefusedAfterSurgery,
    /// A check could not decide (or the run did not finish).
    Inconclusive,
    /// A failure no rule above describes.
    Other,
}

/// How bad a finding is; the first is the worst. Classes and a run's headline are ordered by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// A node refused to boot on a clean disk: the cluster loses a replica to its own bug, and two lose the quorum.
    RefusedCleanDisk,
    /// Acknowledged data lost or corrupted.
    DataLoss,
    /// Not linearizable, stale or non-monotonic reads.
    Consistency,
    /// The cluster did not recover (no write accepted, a node down or crashed).
    NoRecovery,
    /// The nodes did not converge.
    NoConvergence,
    /// A failure pattern in a node log (a panic the process survived).
    LogPattern,
    /// Anything else, and what could not be decided.
    Other,
}

/// The severity of each kind and how it reads: one table that the code and the tests both use.
const KINDS: &[(FindingKind, Severity, &str)] = &[
    (
        FindingKind::RefusedCleanDisk,
        Severity::RefusedCleanDisk,
        "refused to boot on a clean disk",
    ),
    (FindingKind::Lost, Severity::DataLoss, "lost acknowledged data"),
    (FindingKind::Forgotten, Severity::DataLoss, "forgot applied entries"),
    (
        FindingKind::BootedOnDamage,
        Severity::DataLoss,
        "booted on damage it should refuse",
    ),
    (FindingKind::Duplicated, Severity::DataLoss, "duplicated data"),
    (FindingKind::Inconsistent, Severity::DataLoss, "inconsistent data"),
    (FindingKind::Phantom, Severity::DataLoss, "data nobody wrote"),
    (
        FindingKind::FailedButPresent,
        Severity::DataLoss,
        "failed write took effect",
    ),
    (FindingKind::NotLinearizable, Severity::Consistency, "not linearizable"),
    (
        FindingKind::IsolationAnomaly,
        Severity::Consistency,
        "isolation anomaly",
    ),
    (FindingKind::Stale, Severity::Consistency, "stale reads"),
    (FindingKind::NonMonotonic, Severity::Consistency, "non-monotonic reads"),
    (FindingKind::NoRecovery, Severity::NoRecovery, "no recovery"),
    (FindingKind::Crashed, Severity::NoRecovery, "crashed"),
    (FindingKind::NoConvergence, Severity::NoConvergence, "no convergence"),
    (FindingKind::LogPattern, Severity::LogPattern, "log pattern"),
    (
        FindingKind::RefusedAfterSurgery,
        Severity::Other,
        "a majority refused after surgery",
    ),
    (FindingKind::Inconclusive, Severity::Other, "inconclusive"),
    (FindingKind::Other, Severity::Other, "other"),
];

impl FindingKind {
    fn entry(self) -> &'static (FindingKind, Severity, &'static str) {
        KINDS
            .iter()
            .find(|(kind, _, _)| *kind == self)
            .expect("every finding kind is in KINDS")
    }

    /// How bad it is.
    pub fn severity(self) -> Severity {
        self.entry().1
    }

    /// How it reads (`refused to boot on a clean disk`).
    pub fn label(self) -> &'static str {
        self.entry().2
    }
}

impl Severity {
    /// How it reads in a table.
    pub fn label(self) -> &'static str {
        match self {
            Severity::RefusedCleanDisk => "refusal on clean disk",
            Severity::DataLoss => "data loss",
            Severity::Consistency => "consistency",
            Severity::NoRecovery => "no recovery",
            Severity::NoConvergence => "no convergence",
            Severity::LogPattern => "log pattern",
            Severity::Other => "other",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What identifies a bug: the system, the check, the kind of finding and a key line with the run masked out.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Signature {
    /// The system kind (`iggy`, `etcd`, `reference`, `exec`).
    pub system: String,
    /// The check (`boot`, `set`, `log-patterns`, ...).
    pub check: String,
    /// What it found.
    pub kind: FindingKind,
    /// The masked key line (see [`super::mask`]); empty when the kind says it all.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

impl Signature {
    /// The class id: `c` and 8 hex digits of the signature's xxh3-64. xxh3 is specified and stable across
    /// platforms and versions (std's hasher is not), so an id in a notes file means the same class next year; the
    /// `c` keeps YAML from reading an id of digits as a number.
    pub fn id(&self) -> String {
        let text = format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.system,
            self.check,
            self.kind.label(),
            self.key
        );
        class_id(&text)
    }

    /// `iggy set: stale reads`, `iggy boot: refused to boot on a clean disk: iggy refused to boot: ...`.
    pub fn title(&self) -> String {
        let system = if self.system.is_empty() {
            String::new()
        } else {
            format!("{} ", self.system)
        };
        match self.key.as_str() {
            "" => format!("{system}{}: {}", self.check, self.kind.label()),
            key => format!("{system}{}: {}: {key}", self.check, self.kind.label()),
        }
    }
}

/// `c` + the first 8 hex digits of xxh3-64 of `text`.
pub(crate) fn class_id(text: &str) -> String {
    format!("c{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))[..9].to_string()
}

/// One thing a check found in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What identifies it.
    pub signature: Signature,
    /// The raw evidence it was keyed on (a refusal line, a matched log line, a reason), cut, for a person.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub example: String,
    /// The finding of the same run it follows from ([`super::folds`]): shown under it, no class of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<super::folds::Cause>,
}

impl Finding {
    fn new(system: &str, check: &str, kind: FindingKind, key: String, example: &str) -> Finding {
        Finding {
            signature: Signature {
                system: system.to_string(),
                check: check.to_string(),
                kind,
                key,
            },
            example: example.trim().chars().take(EXAMPLE_CHARS_MAX).collect(),
            cause: None,
        }
    }

    /// How bad it is.
    pub fn severity(&self) -> Severity {
        self.signature.kind.severity()
    }
}

/// Every finding of a run, one per signature: each check whose verdict is the run's, not valid. Those that follow
/// from another finding of the run ([`super::folds`]) carry their cause and come after the rest; each part is most
/// severe first.
pub fn findings(results: &Results) -> Vec<Finding> {
    if results.verdict == Verdict::Valid {
        return Vec::new();
    }
    let mut all: Vec<Finding> = results
        .checks
        .iter()
        .filter(|c| c.verdict == results.verdict)
        .flat_map(|c| check_findings(&results.system, c))
        .collect();
    all.sort_by(|a, b| (a.severity(), &a.signature).cmp(&(b.severity(), &b.signature)));
    let mut seen = BTreeSet::new();
    all.retain(|f| seen.insert(f.signature.clone()));
    super::folds::fold(Some(results), &mut all);
    all.sort_by_key(|f| f.cause.is_some());
    all
}

/// The finding of a run that did not finish: the harness error line is all there is. It names no system: a failure
/// of the harness is the harness's, whatever it was testing.
pub fn harness_finding(error_line: &str) -> Finding {
    Finding::new(
        "",
        "harness",
        FindingKind::Inconclusive,
        mask_line(error_line),
        error_line,
    )
}

/// The check whose findings are the most severe among the checks with the run's (non-valid) verdict; ties go to
/// the first in check order. `None` for a valid run.
pub fn headline_check<'a>(system: &str, verdict: Verdict, checks: &'a [CheckResult]) -> Option<&'a CheckResult> {
    if verdict == Verdict::Valid {
        return None;
    }
    checks
        .iter()
        .enumerate()
        .filter(|(_, c)| c.verdict == verdict)
        .min_by_key(|(i, c)| (check_severity(system, c), *i))
        .map(|(_, c)| c)
}

/// The worst severity of a check's findings.
pub fn check_severity(system: &str, check: &CheckResult) -> Severity {
    check_findings(system, check)
        .iter()
        .map(Finding::severity)
        .min()
        .unwrap_or(Severity::Other)
}

/// What one failing check found (nothing for a valid check).
pub fn check_findings(system: &str, check: &CheckResult) -> Vec<Finding> {
    if check.verdict == Verdict::Valid {
        return Vec::new();
    }
    let found = if check.verdict == Verdict::Unknown {
        unknown_findings(system, check)
    } else {
        match check.name.as_str() {
            "boot" => boot(system, check),
            "set" => set(system, check),
            "log" => log(system, check),
            "txn" => txn(system, check),
            "linearizability" => {
                let model = check.details["model"].as_str().unwrap_or("");
                vec![Finding::new(
                    system,
                    &check.name,
                    FindingKind::NotLinearizable,
                    model.into(),
                    &check.reason,
                )]
            }
            "durability" => durability(system, check),
            "liveness" => {
                let after = check.details["timeout"]["after"]
                    .as_str()
                    .map(mask_line)
                    .unwrap_or_default();
                vec![Finding::new(
                    system,
                    &check.name,
                    FindingKind::NoRecovery,
                    after,
                    &check.reason,
                )]
            }
            "convergence" => vec![Finding::new(
                system,
                &check.name,
                FindingKind::NoConvergence,
                String::new(),
                &check.reason,
            )],
            "log-patterns" => log_patterns(system, check),
            _ => Vec::new(),
        }
    };
    if found.is_empty() {
        // Details this code does not know (an older results.json, a new check): the reason is the evidence.
        let kind = if check.verdict == Verdict::Unknown {
            FindingKind::Inconclusive
        } else {
            FindingKind::Other
        };
        return vec![Finding::new(
            system,
            &check.name,
            kind,
            mask_line(&check.reason),
            &check.reason,
        )];
    }
    found
}

/// A check that could not decide: a boot check's majority of legitimate refusals, else an inconclusive reason.
fn unknown_findings(system: &str, check: &CheckResult) -> Vec<Finding> {
    let legit_majority = check.name == "boot" && check.reason.contains("refused to boot after disk surgery");
    if legit_majority {
        return vec![Finding::new(
            system,
            &check.name,
            FindingKind::RefusedAfterSurgery,
            String::new(),
            &check.reason,
        )];
    }
    let log_warnings = check.name == "log" && check.details["anomalies"].is_array();
    if log_warnings {
        return log(system, check);
    }
    Vec::new()
}

/// `boot`: each refusal nothing explains, keyed on its line; each other problem by what it says. Problems are
/// sentences (`details.<node>.problems`); their wording is the boot checker's, and the test beside this code runs
/// the real checker, so a change of wording fails it rather than silently turning a crash into `other`.
fn boot(system: &str, check: &CheckResult) -> Vec<Finding> {
    let mut found = Vec::new();
    let Some(nodes) = check.details.as_object() else {
        return found;
    };
    for node in nodes.values() {
        for refusal in node["refusals"].as_array().into_iter().flatten() {
            if refusal["legitimate"].as_bool() == Some(false) {
                let line = refusal["line"].as_str().unwrap_or("");
                found.push(Finding::new(
                    system,
                    &check.name,
                    FindingKind::RefusedCleanDisk,
                    mask_line(line),
                    line,
                ));
            }
        }
        for problem in node["problems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some((kind, key)) = boot_problem(problem) {
                found.push(Finding::new(system, &check.name, kind, key, problem));
            }
        }
    }
    found
}

/// The kind and key of a boot problem sentence; `None` for a refusal (its refusal entry is the finding).
fn boot_problem(problem: &str) -> Option<(FindingKind, String)> {
    if problem.contains("refused to boot on a disk nothing corrupted") {
        return None;
    }
    if problem.contains("on a WAL that its own offline verification refused") {
        // The verifier's line names the damage the plan injected, not the bug: the key stays empty.
        return Some((FindingKind::BootedOnDamage, String::new()));
    }
    if let Some((_, rest)) = problem.split_once("exited on its own (") {
        // `exit code 101`, `signal 6`: the number is the finding, so it is not masked.
        let exit = rest.split_once(')').map_or(rest, |(exit, _)| exit);
        return Some((FindingKind::Crashed, exit.to_string()));
    }
    if problem.contains("was not ready within") {
        return Some((FindingKind::NoRecovery, "not ready in time after starting".into()));
    }
    if problem.contains("did not boot after the restart-all") {
        return Some((FindingKind::NoRecovery, "did not boot after the restart-all".into()));
    }
    Some((FindingKind::Other, mask_line(problem)))
}

/// `set`: one finding per anomaly kind counted (the kept anomalies are capped per kind; the counts are not).
fn set(system: &str, check: &CheckResult) -> Vec<Finding> {
    let counts = check.details["stats"]["anomalies"].as_object();
    let mut found = Vec::new();
    for (name, count) in counts.into_iter().flatten() {
        if count.as_u64() == Some(0) {
            continue;
        }
        let kind = match name.as_str() {
            "lost" => FindingKind::Lost,
            "stale" => FindingKind::Stale,
            "unexpected" => FindingKind::Phantom,
            "failed-but-present" => FindingKind::FailedButPresent,
            _ => FindingKind::Other,
        };
        let example = first_example(&check.details["anomalies"], name, "description").unwrap_or(&check.reason);
        let key = if kind == FindingKind::Other {
            name.clone()
        } else {
            String::new()
        };
        found.push(Finding::new(system, &check.name, kind, key, example));
    }
    found
}

/// `txn`: one finding per anomaly class the claimed model forbids, with its first explanation as the example: lost,
/// phantom and duplicate values and reads of aborted writes as the data findings they are, every other class (the
/// cycles, intermediate and internal reads, incompatible orders) as an isolation anomaly keyed by its class.
fn txn(system: &str, check: &CheckResult) -> Vec<Finding> {
    use faultline_workloads::txn_check::{AnomalyClass, TxnCheckResult};
    let Ok(result) = serde_json::from_value::<TxnCheckResult>(check.details.clone()) else {
        return Vec::new();
    };
    let found = result
        .anomaly_counts
        .keys()
        .filter(|class| result.forbidden_classes().contains(class) && !class.is_unknown());
    found
        .map(|class| {
            let kind = match class {
                AnomalyClass::Lost => FindingKind::Lost,
                AnomalyClass::GarbageRead => FindingKind::Phantom,
                AnomalyClass::DuplicateElements => FindingKind::Duplicated,
                AnomalyClass::G1a => FindingKind::FailedButPresent,
                _ => FindingKind::IsolationAnomaly,
            };
            let example = result
                .anomalies
                .get(class)
                .and_then(|found| found.first())
                .map_or(check.reason.as_str(), |anomaly| anomaly.explanation.as_str());
            let key = if kind == FindingKind::IsolationAnomaly {
                class.name().to_string()
            } else {
                String::new()
            };
            Finding::new(system, &check.name, kind, key, example)
        })
        .collect()
}

/// `log`: one finding per anomaly kind whose severity made the verdict (errors for invalid, warnings for unknown).
fn log(system: &str, check: &CheckResult) -> Vec<Finding> {
    let severity = if check.verdict == Verdict::Invalid {
        "error"
    } else {
        "warning"
    };
    let mut kinds = BTreeSet::new();
    let mut found = Vec::new();
    for anomaly in check.details["anomalies"].as_array().into_iter().flatten() {
        let name = anomaly["kind"].as_str().unwrap_or("");
        if anomaly["severity"] != severity || !kinds.insert(name.to_string()) {
            continue;
        }
        let kind = match name {
            "lost" => FindingKind::Lost,
            "duplicated" => FindingKind::Duplicated,
            "inconsistent" => FindingKind::Inconsistent,
            "non-monotonic" => FindingKind::NonMonotonic,
            "stale" => FindingKind::Stale,
            "phantom" => FindingKind::Phantom,
            _ => FindingKind::Other,
        };
        let key = if kind == FindingKind::Other {
            name.to_string()
        } else {
            String::new()
        };
        let example = anomaly["reason"].as_str().unwrap_or(&check.reason);
        found.push(Finding::new(system, &check.name, kind, key, example));
    }
    found
}

/// `durability`: each bad restart. A forgotten restart is keyed on how the node stopped: a kill -9 (the restart-all's
/// too), a power loss, a crash (forgetting across a power loss is an fsync bug, across a kill -9 another one); a boot
/// on damage is not, since the damage was the plan's.
fn durability(system: &str, check: &CheckResult) -> Vec<Finding> {
    let mut found = Vec::new();
    let nodes = check.details["nodes"].as_object();
    for node in nodes.into_iter().flat_map(|n| n.values()) {
        for restart in node["restarts"].as_array().into_iter().flatten() {
            let text = restart["text"].as_str().unwrap_or("");
            let (kind, key) = match restart["judgement"].as_str() {
                Some("forgotten") => (FindingKind::Forgotten, stop_cause(restart["cause"].as_str(), text)),
                Some("booted-on-damage") => (FindingKind::BootedOnDamage, String::new()),
                _ => continue,
            };
            found.push(Finding::new(system, &check.name, kind, key, text));
        }
    }
    found
}

/// `kill`, `power-loss`, `crashed` or the recorded cause. The details record a power loss only in the restart's
/// sentence (`before the power loss at ...`), so that is where it is read.
fn stop_cause(cause: Option<&str>, text: &str) -> String {
    match cause.unwrap_or("") {
        "kill" | "restart-all" if text.contains("the power loss") => "power-loss".into(),
        "kill" | "restart-all" => "kill".into(),
        other => other.into(),
    }
}

/// `log-patterns`: each distinct matched line, keyed on [`log_line_key`].
fn log_patterns(system: &str, check: &CheckResult) -> Vec<Finding> {
    let hits = check.details.as_array().into_iter().flatten();
    hits.map(|hit| {
        let line = hit["line"].as_str().unwrap_or("");
        let next = hit["next"].as_str();
        let example = match next {
            Some(next) => format!("{line} {next}"),
            None => line.to_string(),
        };
        Finding::new(
            system,
            &check.name,
            FindingKind::LogPattern,
            log_line_key(line, next),
            &example,
        )
    })
    .collect()
}

/// The `field` of the first anomaly of `kind` in an anomaly list.
fn first_example<'a>(anomalies: &'a Value, kind: &str, field: &str) -> Option<&'a str> {
    anomalies.as_array()?.iter().find(|a| a["kind"] == kind)?[field].as_str()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::Counts;
    use faultline_workloads::checker::{Boot, CheckInput, Checker, LogPatterns, SetWorkload};
    use faultline_workloads::history::{Event, EventKind, History};
    use serde_json::json;
    use std::collections::BTreeMap;

    /// Iggy's chain refusal as the adapter quotes it, for `op`.
    pub(crate) fn iggy_refusal_line(op: u64) -> String {
        format!(
            "iggy refused to boot: interior WAL corruption at pos {}: op {op} does not chain to op {} (parent {} != \
             {}) with 4096 bytes of entries following; refusing to truncate and discard the committed suffix",
            op * 256,
            op - 1,
            op * 7919,
            op * 104_729
        )
    }

    fn event(kind: EventKind, f: &str, node: Option<&str>, process: Option<u64>, time_ms: u64, value: Value) -> Event {
        Event {
            index: 0,
            time_ns: time_ms * 1_000_000,
            kind,
            process,
            worker: process,
            node: node.map(str::to_string),
            f: f.to_string(),
            key: None,
            value,
            error: None,
        }
    }

    fn history(events: Vec<Event>) -> History {
        let events = events.into_iter().enumerate().map(|(i, mut e)| {
            e.index = i as u64;
            e
        });
        History {
            events: events.collect(),
            truncated_tail: false,
        }
    }

    fn lifecycle(f: &str, node: Option<&str>, value: Value) -> Event {
        event(EventKind::Lifecycle, f, node, None, 0, value)
    }

    fn run_check(checker: &dyn Checker, history: &History, logs: &BTreeMap<String, String>) -> CheckResult {
        checker.check(&CheckInput {
            history,
            node_logs: logs,
        })
    }

    /// The real boot check of a restart-all after which each `(node, event, value)` happened.
    pub(crate) fn boot_check(after_restart: &[(&str, &str, Value)]) -> CheckResult {
        let mut events: Vec<Event> = ["n1", "n2", "n3"]
            .iter()
            .map(|n| lifecycle("boot-ok", Some(n), json!({})))
            .collect();
        events.push(lifecycle("restart-all", None, json!({})));
        events.extend(
            after_restart
                .iter()
                .map(|(node, f, value)| lifecycle(f, Some(node), value.clone())),
        );
        run_check(&Boot::default(), &history(events), &BTreeMap::new())
    }

    /// The real boot check of a run in which n2 refused to boot with Iggy's chain refusal of `op`.
    pub(crate) fn iggy_refusal_check(op: u64) -> CheckResult {
        boot_check(&[
            ("n1", "boot-ok", json!({})),
            ("n2", "boot-refused", json!({"line": iggy_refusal_line(op)})),
            ("n3", "boot-ok", json!({})),
        ])
    }

    /// The real log-patterns check of a node log with Iggy's swallowed commit_min panic (`expected`, `got`).
    pub(crate) fn iggy_panic_check(node: &str, expected: u64, got: u64) -> CheckResult {
        let log = format!(
            "INFO repairing toward the merged log\nthread 'shard-{}' panicked at core/consensus/src/impls.rs:1494:9:\n\
             assertion `left == right` failed: commit_min must advance sequentially: expected {expected}, got {got}\n\
             note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            got % 2
        );
        let logs = BTreeMap::from([(node.to_string(), log)]);
        let checker = LogPatterns {
            patterns: vec!["panicked at".into()],
        };
        run_check(&checker, &history(vec![]), &logs)
    }

    /// The real set check of a history where every element of `stale` is missed by a read and then seen again, and
    /// every element of `lost` is missed by every read after its add was acknowledged.
    pub(crate) fn set_check(stale: &[&str], lost: &[&str]) -> CheckResult {
        let mut events = Vec::new();
        for (i, element) in stale.iter().chain(lost).enumerate() {
            let process = Some(i as u64 + 1);
            events.push(event(EventKind::Invoke, "add", Some("n1"), process, 10, json!(element)));
            events.push(event(EventKind::Ok, "add", Some("n1"), process, 20, json!(element)));
        }
        let reader = Some(100);
        events.push(event(EventKind::Invoke, "read", Some("n2"), reader, 30, Value::Null));
        events.push(event(EventKind::Ok, "read", Some("n2"), reader, 40, json!([])));
        events.push(event(EventKind::Invoke, "read", Some("n1"), reader, 50, Value::Null));
        events.push(event(EventKind::Ok, "read", Some("n1"), reader, 60, json!(stale)));
        run_check(&SetWorkload::default(), &history(events), &BTreeMap::new())
    }

    /// A results document of `system` with `checks`, its verdict the worst of theirs.
    pub(crate) fn results(system: &str, checks: Vec<CheckResult>) -> Results {
        let (verdict, reason) = Results::combine(&checks);
        Results {
            schema_version: crate::results::SCHEMA_VERSION,
            faultline_version: "test".into(),
            verdict,
            reason,
            plan: "iggy-mixed".into(),
            system: system.into(),
            seed: 1,
            started_at: String::new(),
            duration_ms: 0,
            store_dir: String::new(),
            repro: String::new(),
            checks,
            counts: Counts::default(),
            coverage: Default::default(),
            behaviours: Default::default(),
        }
    }

    fn kinds(findings: &[Finding]) -> Vec<FindingKind> {
        findings.iter().map(|f| f.signature.kind).collect()
    }

    #[test]
    fn given_a_run_with_a_stale_read_a_refusal_and_a_panic_when_found_should_yield_each_refusal_first() {
        let run = results(
            "iggy",
            vec![
                set_check(&["e334"], &[]),
                iggy_refusal_check(1234),
                iggy_panic_check("n3", 42, 44),
            ],
        );
        let found = findings(&run);
        assert_eq!(
            kinds(&found),
            vec![
                FindingKind::RefusedCleanDisk,
                FindingKind::Stale,
                FindingKind::LogPattern
            ],
            "{found:#?}"
        );
        assert_eq!(
            found[0].signature.key,
            "iggy refused to boot: interior WAL corruption at pos N: op N does not chain to op N (parent N != N) \
             with N bytes of entries following; refusing to truncate and discard the committed suffix"
        );
        assert_eq!(
            found[0].example,
            iggy_refusal_line(1234),
            "the raw line is kept for people"
        );
        assert_eq!(
            found[2].signature.key,
            "panicked at impls.rs:1494: assertion `left == right` failed: commit_min must advance sequentially: \
             expected N, got N"
        );
        assert!(
            run.reason.starts_with("set: "),
            "check order puts the stale read first: {}",
            run.reason
        );
        let headline = headline_check(&run.system, run.verdict, &run.checks).expect("an invalid run has one");
        assert_eq!(
            headline.name, "boot",
            "the refusal is the headline, not the first check"
        );
        assert_eq!(
            crate::seeds::failure_of(&run).map(|(check, _)| check).as_deref(),
            Some("boot")
        );
    }

    #[test]
    fn given_two_runs_of_the_same_bugs_with_other_numbers_and_nodes_when_found_should_have_the_same_signatures() {
        let one = results(
            "iggy",
            vec![
                set_check(&["e334", "e335"], &[]),
                iggy_refusal_check(1234),
                iggy_panic_check("n3", 42, 44),
            ],
        );
        let two = results(
            "iggy",
            vec![
                set_check(&["e47"], &[]),
                iggy_refusal_check(9),
                iggy_panic_check("n1", 1730, 1733),
            ],
        );
        let ids = |r: &Results| findings(r).iter().map(|f| f.signature.id()).collect::<Vec<_>>();
        assert_eq!(ids(&one), ids(&two));
        assert_eq!(ids(&one).len(), 3);
        assert!(
            ids(&one).iter().all(|id| id.len() == 9 && id.starts_with('c')),
            "{:?}",
            ids(&one)
        );
    }

    #[test]
    fn given_stale_and_lost_set_elements_when_found_should_be_two_findings_lost_first() {
        let run = results("iggy", vec![set_check(&["e1"], &["e2"])]);
        let found = findings(&run);
        assert_eq!(kinds(&found), vec![FindingKind::Lost, FindingKind::Stale], "{found:#?}");
        assert_ne!(found[0].signature.id(), found[1].signature.id());
        assert!(
            found[0].example.contains("`e2`") && found[0].example.contains("lost"),
            "{}",
            found[0].example
        );
        assert_eq!(found[0].severity(), Severity::DataLoss);
        assert_eq!(found[1].severity(), Severity::Consistency);
    }

    #[test]
    fn given_two_different_bugs_with_similar_lines_when_found_should_not_merge() {
        let panic_at = |line: &str, message: &str| {
            let log = format!("thread 'shard-0' panicked at core/consensus/src/impls.rs:{line}:9:\n{message}\n");
            let checker = LogPatterns {
                patterns: vec!["panicked at".into()],
            };
            let logs = BTreeMap::from([("n1".to_string(), log)]);
            findings(&results("iggy", vec![run_check(&checker, &history(vec![]), &logs)]))[0]
                .signature
                .id()
        };
        assert_ne!(
            panic_at(
                "1494",
                "assertion `left == right` failed: commit_min must advance sequentially: expected 4, got 6"
            ),
            panic_at(
                "1497",
                "assertion failed: self.commit_max.get() >= self.commit_min.get()"
            ),
            "another assertion of the same function"
        );
        let refusal = |line: &str| {
            let check = boot_check(&[("n2", "boot-refused", json!({ "line": line }))]);
            findings(&results("iggy", vec![check]))[0].signature.clone()
        };
        let chain = refusal(&iggy_refusal_line(77));
        let header = refusal(
            "iggy refused to boot: mid-file WAL corruption at pos 1292: corrupt header; refusing to truncate and \
             discard committed entries",
        );
        assert_eq!(
            (chain.kind, header.kind),
            (FindingKind::RefusedCleanDisk, FindingKind::RefusedCleanDisk)
        );
        assert_ne!(chain.id(), header.id(), "a chain break and a torn header are two bugs");
        let mut on_etcd = chain.clone();
        on_etcd.system = "etcd".into();
        assert_ne!(chain.id(), on_etcd.id(), "one line on two systems is two bugs");
    }

    #[test]
    fn given_the_boot_checkers_own_problem_sentences_when_found_should_name_each_kind() {
        let check = boot_check(&[
            ("n1", "crashed", json!({"exit": "exit code 101"})),
            ("n2", "boot-timeout", json!({"timeout_ms": 30000})),
            ("n3", "boot-ok", json!({})),
        ]);
        let found = check_findings("reference", &check);
        let pairs: Vec<(FindingKind, &str)> = found
            .iter()
            .map(|f| (f.signature.kind, f.signature.key.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (FindingKind::Crashed, "exit code 101"),
                (FindingKind::NoRecovery, "not ready in time after starting"),
            ]
        );
        let damaged = boot_check(&[
            ("n1", "boot-ok", json!({})),
            (
                "n2",
                "verify-refused",
                json!({"line": "wal /x/wal at offset 9 (op 3): interior header corruption"}),
            ),
            ("n2", "boot-ok", json!({})),
            ("n3", "boot-ok", json!({})),
        ]);
        let found = check_findings("reference", &damaged);
        assert_eq!(
            kinds(&found),
            vec![FindingKind::RefusedCleanDisk, FindingKind::BootedOnDamage],
            "its verifier refused a disk nothing corrupted, then it booted on it anyway: {found:#?}"
        );
        let missing = boot_check(&[("n1", "boot-ok", json!({})), ("n3", "boot-ok", json!({}))]);
        assert_eq!(
            check_findings("reference", &missing)[0].signature.key,
            "did not boot after the restart-all"
        );
    }

    #[test]
    fn given_checks_without_structured_details_or_without_a_decision_when_found_should_fall_back_to_the_reason() {
        let old_boot = CheckResult::new(
            "boot",
            Verdict::Invalid,
            "n2 refused to boot at 12.5s: op 77 is bad".into(),
            Value::Null,
        );
        let found = check_findings("reference", &old_boot);
        assert_eq!(kinds(&found), vec![FindingKind::Other]);
        assert_eq!(found[0].signature.key, "nX refused to boot at D: op N is bad");
        let timed_out = CheckResult::new(
            "linearizability",
            Verdict::Unknown,
            "the search ran out of its 30000 ms budget on key k3".into(),
            Value::Null,
        );
        assert_eq!(
            kinds(&check_findings("etcd", &timed_out)),
            vec![FindingKind::Inconclusive]
        );
        let surgery = CheckResult::new(
            "boot",
            Verdict::Unknown,
            "2 of 3 nodes refused to boot after disk surgery: beyond the fault model".into(),
            json!({}),
        );
        assert_eq!(
            kinds(&check_findings("etcd", &surgery)),
            vec![FindingKind::RefusedAfterSurgery]
        );
        let valid = results(
            "etcd",
            vec![CheckResult::new("boot", Verdict::Valid, "ok".into(), json!({}))],
        );
        assert!(findings(&valid).is_empty() && headline_check("etcd", valid.verdict, &valid.checks).is_none());
    }

    #[test]
    fn given_durability_liveness_and_convergence_failures_when_found_should_key_them_on_their_facts() {
        let durability = CheckResult::new(
            "durability",
            Verdict::Invalid,
            "n2 applied 717 before the kill -9 at 31.2 s and booted at 519".into(),
            json!({"nodes": {"n2": {"restarts": [
                {"judgement": "forgotten", "cause": "restart-all",
                 "text": "n2 applied 717 before the restart-all's kill -9 at 31.2 s and booted at 519"},
                {"judgement": "ok", "cause": "kill", "text": "fine"}
            ]}, "n3": {"restarts": [
                {"judgement": "forgotten", "cause": "kill", "text": "n3 applied 9 before the power loss at 2.0 s"},
                {"judgement": "booted-on-damage", "cause": "kill", "text": "n3 booted after flip-bits ..."}
            ]}}}),
        );
        let liveness = CheckResult::new(
            "liveness",
            Verdict::Invalid,
            "the cluster did not accept a write within 30000 ms after restart-all".into(),
            json!({"recovered": [], "timeout": {"after": "restart-all", "timeout_ms": 30000}}),
        );
        let convergence = CheckResult::new("convergence", Verdict::Invalid, "no".into(), json!({}));
        let found = findings(&results("reference", vec![liveness, convergence, durability]));
        let pairs: Vec<(FindingKind, &str)> = found
            .iter()
            .map(|f| (f.signature.kind, f.signature.key.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (FindingKind::Forgotten, "kill"),
                (FindingKind::Forgotten, "power-loss"),
                (FindingKind::BootedOnDamage, ""),
                (FindingKind::NoRecovery, "restart-all"),
                (FindingKind::NoConvergence, ""),
            ],
            "the restart-all's kill -9 is a kill -9; a power loss is not"
        );
    }

    #[test]
    fn given_an_invalid_txn_check_when_triaged_should_give_one_finding_per_forbidden_class() {
        use faultline_workloads::checker::TxnWorkload;
        let op = |kind, process, value: Value| Event {
            index: 0,
            time_ns: 0,
            kind,
            process: Some(process),
            worker: Some(process),
            node: None,
            f: "txn".into(),
            key: None,
            value,
            error: None,
        };
        // Write skew: each reads the key the other appends to, before the other's append (a later read shows both).
        let events = vec![
            op(EventKind::Invoke, 0, json!([["r", "x", null], ["append", "y", 1]])),
            op(EventKind::Invoke, 1, json!([["r", "y", null], ["append", "x", 2]])),
            op(EventKind::Ok, 0, json!([["r", "x", null], ["append", "y", 1]])),
            op(EventKind::Ok, 1, json!([["r", "y", null], ["append", "x", 2]])),
            op(EventKind::Invoke, 2, json!([["r", "x", null], ["r", "y", null]])),
            op(EventKind::Ok, 2, json!([["r", "x", [2]], ["r", "y", [1]]])),
        ];
        let history = History {
            events: events
                .into_iter()
                .enumerate()
                .map(|(i, mut e)| {
                    e.index = i as u64;
                    e.time_ns = i as u64;
                    e
                })
                .collect(),
            truncated_tail: false,
        };
        let logs = BTreeMap::new();
        let check = TxnWorkload::default().check(&CheckInput {
            history: &history,
            node_logs: &logs,
        });
        assert_eq!(check.verdict, Verdict::Invalid, "{}", check.reason);
        let found = check_findings("reference", &check);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].signature.kind, FindingKind::IsolationAnomaly);
        assert_eq!(found[0].severity(), Severity::Consistency);
        assert!(
            found[0].example.starts_with("G2-item: a cycle of 2"),
            "{}",
            found[0].example
        );
    }

    #[test]
    fn given_every_finding_kind_when_looked_up_should_have_one_severity_and_label() {
        let mut labels = BTreeSet::new();
        for (kind, severity, label) in KINDS {
            assert_eq!(kind.severity(), *severity);
            assert!(labels.insert(*label), "labels tell kinds apart: {label}");
        }
        assert_eq!(
            KINDS.len(),
            FindingKind::Other as usize + 1,
            "every kind is in the table"
        );
    }
}
