//! Checking a run from its store folder alone (plan.yaml, history.jsonl, node logs): the end of every run, and
//! `faultline analyze DIR` for a run that crashed or to re-check with a newer checker.
//!
//! Checks, combined as the worst of their parts (invalid beats unknown beats valid):
//! - `history`: the run finished; an interrupted or crashed run is at best `unknown`;
//! - `linearizability` (register workload): the client history under the cas-register model;
//! - `log` (log workload): lost, duplicated, reordered, stale and phantom messages;
//! - `set` (set workload): acknowledged elements lost or missing from later reads, elements nobody added;
//! - `boot`: no node refused to boot or died on its own, except a refusal after recorded disk surgery on that node
//!   since it last booted; every node booted after the restart-all;
//! - `liveness`: after healing (and after the restart-all) the cluster accepted a write within the bound;
//! - `convergence`: every node reached the same commit point;
//! - `log-patterns`: none of the plan's failure patterns appears in a node log (ANSI colour codes stripped first).

use crate::plan::{Plan, WorkloadKind};
use faultline_reports::results::{CheckResult, Counts, Results, Verdict, SCHEMA_VERSION};
use faultline_workloads::history::{Event, EventKind, History};
use faultline_workloads::{check_history, check_log, check_set, CheckOptions, LogCheckOptions, ModelKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Checks a store folder and writes `results.json`, `junit.xml` and `report.html` into it, and the store's index.
pub fn analyze_and_write(store_dir: &Path) -> anyhow::Result<Results> {
    let results = analyze(store_dir)?;
    let json = serde_json::to_vec_pretty(&results)?;
    faultline_reports::write_atomic(&store_dir.join("results.json"), &json)?;
    faultline_reports::write_atomic(
        &store_dir.join("junit.xml"),
        faultline_reports::junit::render(&results).as_bytes(),
    )?;
    faultline_reports::write_report(store_dir)?;
    if let Some(store_root) = store_root_of(store_dir) {
        faultline_reports::write_index(&store_root)?;
    }
    Ok(results)
}

/// `store/<plan>/<run>` -> `store`.
fn store_root_of(store_dir: &Path) -> Option<std::path::PathBuf> {
    Some(store_dir.canonicalize().ok()?.parent()?.parent()?.to_path_buf())
}

/// Checks a store folder.
pub fn analyze(store_dir: &Path) -> anyhow::Result<Results> {
    let plan = Plan::load(&store_dir.join("plan.yaml"))?;
    let history = History::read_jsonl(&store_dir.join("history.jsonl"))?;
    let checks = vec![
        check_completion(&history),
        match plan.workload.kind {
            WorkloadKind::Register => check_linearizability(&history, &plan),
            WorkloadKind::Log => check_log_workload(&history, &plan),
            WorkloadKind::Set => check_set_workload(&history),
        },
        check_boot(&history),
        check_liveness(&history, &plan),
        check_convergence(&history, &plan),
        check_log_patterns(store_dir, &plan),
    ];
    let (verdict, reason) = Results::combine(&checks);
    let start = history
        .events
        .iter()
        .find(|e| e.kind == EventKind::Meta && e.f == "run-start");
    let meta = start.map(|e| e.value.clone()).unwrap_or(Value::Null);
    let duration_ms = history.events.last().map(|e| e.time_ns / 1_000_000).unwrap_or(0);
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        faultline_version: env!("CARGO_PKG_VERSION").to_string(),
        verdict,
        reason,
        plan: plan.name.0.clone(),
        system: plan.system.kind().to_string(),
        seed: plan.seed.unwrap_or(0),
        started_at: meta["wall_clock_start"].as_str().unwrap_or("").to_string(),
        duration_ms,
        store_dir: store_dir.display().to_string(),
        repro: format!(
            "faultline run --seed {} {}",
            plan.seed.unwrap_or(0),
            store_dir.join("plan.yaml").display()
        ),
        checks,
        counts: Counts::of(&history),
    })
}

fn check(name: &str, verdict: Verdict, reason: String, details: Value) -> CheckResult {
    CheckResult {
        name: name.to_string(),
        verdict,
        reason,
        details,
        evidence_ns: None,
    }
}

fn check_completion(history: &History) -> CheckResult {
    let end = history
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Meta && e.f == "run-end");
    let interrupted = history
        .events
        .iter()
        .any(|e| e.kind == EventKind::Meta && e.f == "interrupted");
    let setup_failed = history
        .events
        .iter()
        .find(|e| e.kind == EventKind::Lifecycle && e.f == "setup-failed");
    let details = json!({"events": history.events.len(), "truncated_tail": history.truncated_tail});
    if let Some(failed) = setup_failed {
        let who = failed.node.clone().unwrap_or_else(|| "the cluster".into());
        return check(
            "history",
            Verdict::Unknown,
            format!("setup failed: {who} never became ready ({})", failed.value),
            details,
        );
    }
    match (end, interrupted) {
        (Some(_), false) => check(
            "history",
            Verdict::Valid,
            format!("the run finished; {} events recorded", history.events.len()),
            details,
        ),
        (_, true) => check(
            "history",
            Verdict::Unknown,
            "the run was interrupted (SIGINT/SIGTERM); what was recorded is checked".into(),
            details,
        ),
        (None, _) => {
            let last = history
                .events
                .last()
                .map(|e| format!("#{} {:?} {}", e.index, e.kind, e.f))
                .unwrap_or_default();
            check(
                "history",
                Verdict::Unknown,
                format!("the run did not finish (the history ends at {last}); what was recorded is checked"),
                details,
            )
        }
    }
}

fn check_log_workload(history: &History, plan: &Plan) -> CheckResult {
    let defaults = LogCheckOptions::default();
    let options = LogCheckOptions {
        linearizable_reads: plan.workload.linearizable_reads.unwrap_or(defaults.linearizable_reads),
        durability: plan.workload.durability.unwrap_or(defaults.durability),
    };
    let result = check_log(history, &options);
    let details = serde_json::to_value(&result).unwrap_or(Value::Null);
    let mut checked = check("log", result.verdict, result.reason.clone(), details);
    checked.evidence_ns = result
        .anomalies
        .iter()
        .flat_map(|a| a.ops.iter())
        .filter_map(|op| {
            let index = op.completion_index.unwrap_or(op.invoke_index);
            history
                .events
                .get(index as usize)
                .filter(|e| e.index == index)
                .map(|e| e.time_ns)
        })
        .min();
    checked
}

fn check_set_workload(history: &History) -> CheckResult {
    let result = check_set(history);
    let details = serde_json::to_value(&result).unwrap_or(Value::Null);
    let mut checked = check("set", result.verdict, result.reason.clone(), details);
    checked.evidence_ns = result
        .anomalies
        .iter()
        .filter_map(|a| a.first_missing_ns.or(a.last_seen_ns))
        .min();
    checked
}

fn check_linearizability(history: &History, plan: &Plan) -> CheckResult {
    let options = CheckOptions {
        timeout: Duration::from_millis(plan.check.timeout.0),
        memory_budget_bytes: plan.check.memory_budget_mib.0 << 20,
        ..CheckOptions::default()
    };
    let result = check_history(history, ModelKind::CasRegister, &options);
    let details = serde_json::to_value(&result).unwrap_or(Value::Null);
    let mut checked = check("linearizability", result.verdict, result.reason.clone(), details);
    checked.evidence_ns = result.explanation.as_ref().and_then(|e| {
        let index = e.op.complete_index.unwrap_or(e.op.invoke_index);
        history
            .events
            .get(index as usize)
            .filter(|ev| ev.index == index)
            .map(|ev| ev.time_ns)
    });
    checked
}

/// How long after an I/O-fault window a node's exit still counts as its reaction to the injected errors.
const IO_FAULT_GRACE_NS: u64 = 2_000_000_000;

/// Per-node boot bookkeeping while walking the history.
#[derive(Default)]
struct NodeBoots {
    /// Disk surgery recorded since the node last booted cleanly.
    surgery_since_boot: bool,
    /// The offline verifier refused this node's WAL and the node has not been started since.
    verify_refused: Option<String>,
    boots: u64,
    refusals: Vec<Value>,
    problems: Vec<String>,
    /// When the first problem happened (ns since run start).
    first_problem_ns: Option<u64>,
    /// Injected I/O faults count until this time (the window's end plus a grace for the node to notice).
    io_faults_until_ns: Option<u64>,
    /// Exits on injected I/O errors: fail-stop, a correct reaction, noted but not a problem.
    io_exits: Vec<String>,
    legit: u64,
}

impl NodeBoots {
    fn problem(&mut self, at_ns: u64, text: String) {
        self.first_problem_ns.get_or_insert(at_ns);
        self.problems.push(text);
    }
}

fn check_boot(history: &History) -> CheckResult {
    let mut nodes: BTreeMap<String, NodeBoots> = BTreeMap::new();
    let mut restart_all_at: Option<u64> = None;
    let mut booted_after_restart: BTreeMap<String, bool> = BTreeMap::new();
    for event in &history.events {
        let Some(node) = event.node.clone() else {
            if event.kind == EventKind::Lifecycle && event.f == "restart-all" {
                restart_all_at = Some(event.index);
            }
            continue;
        };
        let entry = nodes.entry(node.clone()).or_default();
        match (event.kind, event.f.as_str()) {
            (EventKind::Nemesis, "disk-surgery") if event.value.get("surgery").is_some() => {
                entry.surgery_since_boot = true
            }
            (EventKind::Lifecycle, "boot-ok") => {
                entry.boots += 1;
                entry.surgery_since_boot = false;
                if let Some(line) = entry.verify_refused.take() {
                    entry.problem(
                        event.time_ns,
                        format!(
                            "{node} booted at {:.3}s on a WAL that its own offline verification refused ({line}): it \
                         accepts corrupt entries instead of refusing to boot",
                            event.time_ns as f64 / 1e9
                        ),
                    );
                }
                if restart_all_at.is_some() {
                    booted_after_restart.insert(node, true);
                }
            }
            (EventKind::Lifecycle, "verify-refused") => {
                entry.verify_refused = Some(event.value["line"].as_str().unwrap_or("").to_string());
                judge_refusal(entry, &node, event)
            }
            (EventKind::Lifecycle, "boot-refused") => {
                entry.verify_refused = None;
                judge_refusal(entry, &node, event)
            }
            (EventKind::Nemesis, "io-fault-start") => entry.io_faults_until_ns = Some(u64::MAX),
            (EventKind::Nemesis, "io-fault-stop") => {
                entry.io_faults_until_ns = Some(event.time_ns + IO_FAULT_GRACE_NS);
            }
            (EventKind::Lifecycle, "crashed")
                if entry.io_faults_until_ns.is_some_and(|until| event.time_ns <= until) =>
            {
                entry.io_exits.push(format!(
                    "{node} stopped on an injected I/O error ({}) at {:.3}s",
                    event.value["exit"].as_str().unwrap_or("?"),
                    event.time_ns as f64 / 1e9
                ));
            }
            (EventKind::Lifecycle, "crashed") => entry.problem(
                event.time_ns,
                format!(
                    "{node} exited on its own ({}) at {:.3}s",
                    event.value["exit"].as_str().unwrap_or("?"),
                    event.time_ns as f64 / 1e9
                ),
            ),
            (EventKind::Lifecycle, "boot-timeout") => entry.problem(
                event.time_ns,
                format!(
                    "{node} was not ready within {} ms of starting",
                    event.value["timeout_ms"]
                ),
            ),
            _ => {}
        }
    }
    let end_ns = history.events.last().map_or(0, |e| e.time_ns);
    if restart_all_at.is_some() {
        for (node, entry) in nodes.iter_mut() {
            let legit_refusal = entry.legit > 0;
            if !booted_after_restart.contains_key(node) && !legit_refusal && entry.problems.is_empty() {
                entry.problem(end_ns, format!("{node} did not boot after the restart-all"));
            }
        }
    }
    let problems: Vec<String> = nodes.values().flat_map(|n| n.problems.clone()).collect();
    let legit_nodes = nodes.values().filter(|n| n.legit > 0).count();
    let details: serde_json::Map<String, Value> = nodes
        .iter()
        .map(|(name, n)| {
            (
                name.clone(),
                json!({"boots": n.boots, "refusals": n.refusals, "problems": n.problems, "io_exits": n.io_exits}),
            )
        })
        .collect();
    let details = Value::Object(details);
    if let Some(first) = problems.first() {
        let more = if problems.len() > 1 {
            format!(" (and {} more)", problems.len() - 1)
        } else {
            String::new()
        };
        let mut result = check("boot", Verdict::Invalid, format!("{first}{more}"), details);
        result.evidence_ns = nodes.values().filter_map(|n| n.first_problem_ns).min();
        return result;
    }
    let majority = nodes.len() / 2 + 1;
    if legit_nodes >= majority && !nodes.is_empty() {
        let reason = format!(
            "{legit_nodes} of {} nodes refused to boot after disk surgery: beyond the fault model",
            nodes.len()
        );
        return check("boot", Verdict::Unknown, reason, details);
    }
    let boots: u64 = nodes.values().map(|n| n.boots).sum();
    let io_exits: usize = nodes.values().map(|n| n.io_exits.len()).sum();
    let io_note = if io_exits > 0 {
        format!("; {io_exits} fail-stop exit(s) on injected I/O errors")
    } else {
        String::new()
    };
    let reason = match legit_nodes {
        0 => format!("every start booted ({boots} boots); no refusals{io_note}"),
        n => format!("{boots} boots; {n} node(s) refused to boot after recorded disk surgery, as they should{io_note}"),
    };
    check("boot", Verdict::Valid, reason, details)
}

fn judge_refusal(entry: &mut NodeBoots, node: &str, event: &Event) {
    let line = event.value["line"].as_str().unwrap_or("").to_string();
    let legit = entry.surgery_since_boot;
    entry
        .refusals
        .push(json!({"event": event.f, "index": event.index, "line": line, "legitimate": legit}));
    if legit {
        if event.f == "boot-refused" {
            entry.legit += 1;
        }
    } else {
        entry.problem(
            event.time_ns,
            format!(
                "{node} refused to boot on a disk nothing corrupted ({} at {:.3}s): {line}",
                event.f,
                event.time_ns as f64 / 1e9
            ),
        );
    }
}

fn lifecycle_events<'a>(history: &'a History, f: &'a str) -> impl Iterator<Item = &'a Event> {
    history
        .events
        .iter()
        .filter(move |e| e.kind == EventKind::Lifecycle && e.f == f)
}

fn check_liveness(history: &History, plan: &Plan) -> CheckResult {
    let lifecycle = |f| lifecycle_events(history, f);
    let recovered: Vec<Value> = lifecycle("recovered").map(|e| e.value.clone()).collect();
    if let Some(timeout) = lifecycle("recovery-timeout").next() {
        return check(
            "liveness",
            Verdict::Invalid,
            format!(
                "the cluster did not accept a write within {} ms after {}",
                timeout.value["timeout_ms"],
                timeout.value["after"].as_str().unwrap_or("?")
            ),
            json!({"recovered": recovered, "timeout": timeout.value}),
        );
    }
    if !plan.final_phase.enabled {
        return check(
            "liveness",
            Verdict::Valid,
            "not checked: the plan disables the final phase".into(),
            Value::Null,
        );
    }
    if recovered.is_empty() {
        return check(
            "liveness",
            Verdict::Unknown,
            "the final phase did not run to the recovery probe".into(),
            Value::Null,
        );
    }
    let summary: Vec<String> = recovered
        .iter()
        .map(|r| format!("{} ms after {}", r["recovery_ms"], r["after"].as_str().unwrap_or("?")))
        .collect();
    check(
        "liveness",
        Verdict::Valid,
        format!("the cluster accepted a write {}", summary.join(", ")),
        json!({"recovered": recovered}),
    )
}

fn check_convergence(history: &History, plan: &Plan) -> CheckResult {
    let lifecycle = |f| lifecycle_events(history, f);
    if let Some(timeout) = lifecycle("convergence-timeout").next() {
        return check(
            "convergence",
            Verdict::Invalid,
            format!(
                "nodes did not reach the same commit point within {} ms: {}",
                timeout.value["timeout_ms"], timeout.value["commit_points"]
            ),
            timeout.value.clone(),
        );
    }
    let converged: Vec<Value> = lifecycle("converged").map(|e| e.value.clone()).collect();
    if !plan.final_phase.enabled {
        return check(
            "convergence",
            Verdict::Valid,
            "not checked: the plan disables the final phase".into(),
            Value::Null,
        );
    }
    if converged.is_empty() {
        return check(
            "convergence",
            Verdict::Unknown,
            "the final phase did not reach the convergence check".into(),
            Value::Null,
        );
    }
    let times: Vec<String> = converged.iter().map(|c| format!("{} ms", c["converge_ms"])).collect();
    check(
        "convergence",
        Verdict::Valid,
        format!("every node reached the same commit point (after {})", times.join(", ")),
        json!(converged),
    )
}

fn check_log_patterns(store_dir: &Path, plan: &Plan) -> CheckResult {
    let mut hits = Vec::new();
    let nodes_dir = store_dir.join("nodes");
    let mut logs: Vec<_> = std::fs::read_dir(&nodes_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    logs.sort();
    for node_dir in logs {
        let node = node_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(node_dir.join("node.log")) else {
            continue;
        };
        let text = strip_ansi(&text);
        for (number, line) in text.lines().enumerate() {
            if let Some(pattern) = plan.log_patterns.iter().find(|p| line.contains(p.as_str())) {
                hits.push(json!({"node": node, "line_number": number + 1, "pattern": pattern, "line": line}));
            }
        }
    }
    match hits.first() {
        None => check(
            "log-patterns",
            Verdict::Valid,
            format!("no node log matches {:?}", plan.log_patterns),
            Value::Null,
        ),
        Some(first) => check(
            "log-patterns",
            Verdict::Invalid,
            format!(
                "{} log line {} matches `{}`: {}",
                first["node"].as_str().unwrap_or("?"),
                first["line_number"],
                first["pattern"].as_str().unwrap_or("?"),
                first["line"].as_str().unwrap_or("")
            ),
            json!(hits),
        ),
    }
}

/// `text` without ANSI escape sequences (CSI `ESC [ ... final-byte`, and lone `ESC x`): colour codes between the
/// words of a log line must not hide a pattern.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // A CSI sequence runs to its final byte (0x40..=0x7e); any other escape is two characters.
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::blank;

    fn lifecycle(f: &str, node: &str, value: Value) -> Event {
        Event {
            kind: EventKind::Lifecycle,
            node: Some(node.into()),
            ..blank(f, value)
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

    #[test]
    fn given_a_refusal_without_surgery_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            Event {
                kind: EventKind::Lifecycle,
                ..blank("restart-all", json!({}))
            },
            lifecycle(
                "boot-refused",
                "n1",
                json!({"line": "wal: op 7 does not chain: refusing to boot"}),
            ),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(result.reason.contains("does not chain"), "{}", result.reason);
    }

    #[test]
    fn given_a_refusal_after_recorded_surgery_when_checked_should_be_legitimate() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            lifecycle("boot-ok", "n3", json!({})),
            Event {
                kind: EventKind::Lifecycle,
                ..blank("restart-all", json!({}))
            },
            Event {
                kind: EventKind::Nemesis,
                node: Some("n2".into()),
                ..blank("disk-surgery", json!({"surgery": {"offset": 1}}))
            },
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-refused", "n2", json!({"line": "refusing to boot"})),
            lifecycle("boot-ok", "n3", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    }

    #[test]
    fn given_a_boot_after_a_refused_verification_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            Event {
                kind: EventKind::Nemesis,
                node: Some("n1".into()),
                ..blank("disk-surgery", json!({"surgery": {}}))
            },
            lifecycle(
                "verify-refused",
                "n1",
                json!({"line": "interior corruption: refusing to boot"}),
            ),
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(result.reason.contains("accepts corrupt entries"), "{}", result.reason);
    }

    #[test]
    fn given_an_exit_during_an_io_fault_window_when_checked_should_be_a_fail_stop_but_later_exits_a_crash() {
        let nemesis = |f: &str| Event {
            kind: EventKind::Nemesis,
            node: Some("n2".into()),
            ..blank(f, json!({}))
        };
        let at = |mut e: Event, time_ns: u64| {
            e.time_ns = time_ns;
            e
        };
        let h = history(vec![
            at(lifecycle("boot-ok", "n2", json!({})), 1),
            at(nemesis("io-fault-start"), 10),
            at(lifecycle("crashed", "n2", json!({"exit": "exit code 2"})), 20),
            at(nemesis("io-fault-stop"), 30),
            at(lifecycle("boot-ok", "n2", json!({})), 40),
        ]);
        assert_eq!(check_boot(&h).verdict, Verdict::Valid, "{}", check_boot(&h).reason);
        let mut late = h.events.clone();
        late.push(at(
            lifecycle("crashed", "n2", json!({"exit": "exit code 2"})),
            30 + IO_FAULT_GRACE_NS + 1,
        ));
        let late = history(late);
        assert_eq!(
            check_boot(&late).verdict,
            Verdict::Invalid,
            "an exit long after the window is a crash"
        );
    }

    #[test]
    fn given_a_node_missing_after_restart_all_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            Event {
                kind: EventKind::Lifecycle,
                ..blank("restart-all", json!({}))
            },
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result.reason.contains("n2 did not boot after the restart-all"),
            "{}",
            result.reason
        );
    }

    #[test]
    fn given_coloured_log_text_when_stripped_should_match_plain_patterns() {
        let line = "\u{1b}[31mthread 'shard-0' \u{1b}[1mpanicked\u{1b}[0m at core/x.rs:1:2";
        assert_eq!(strip_ansi(line), "thread 'shard-0' panicked at core/x.rs:1:2");
        assert!(strip_ansi("\u{1b}[2m2026\u{1b}[0m panicked at").contains("panicked at"));
    }
}
