//! Checking a run from its store folder alone (plan.yaml, history.jsonl, node logs): the end of every run, and
//! `faultline analyze DIR` for a run that crashed or to re-check with a newer checker.
//!
//! The checks themselves live in [`faultline_workloads::checker`], each with its rules; this module only reads the
//! store, builds the list of checkers from the plan (in the order `results.json` lists them), composes them (invalid
//! beats unknown beats valid) and writes the results.

use crate::plan::{Plan, WorkloadKind};
use faultline_reports::explored;
use faultline_reports::results::{Counts, Results, SCHEMA_VERSION};
use faultline_reports::triage::{check_findings, Finding, FindingKind};
use faultline_workloads::bank_check::BankCheckOptions;
use faultline_workloads::behaviour::RunBehaviours;
use faultline_workloads::checker::{
    check_all, BankWorkload, Boot, CheckInput, Checker, Completion, Convergence, Durability, Linearizability, Liveness,
    LogPatterns, LogWorkload, LongForkWorkload, SetWorkload, TxnWorkload, WorkloadHealth,
};
use faultline_workloads::history::{History, Meta};
use faultline_workloads::long_fork_check::LongForkOptions;
use faultline_workloads::{CheckOptions, LogCheckOptions, ModelKind};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Checks a store folder and writes `behaviours.json`, `results.json`, `junit.xml` and `report.html` into it, and
/// the store's index.
pub fn analyze_and_write(store_dir: &Path) -> anyhow::Result<Results> {
    let (results, behaviours) = analyze(store_dir)?;
    faultline_reports::write_atomic(&store_dir.join(BEHAVIOURS_FILE), &serde_json::to_vec(&behaviours)?)?;
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

/// A run's behaviours, beside its results.
pub const BEHAVIOURS_FILE: &str = "behaviours.json";

/// Checks a store folder and extracts its behaviours (`faultline_workloads::behaviour`, with a `finding` behaviour
/// per failure class the checks found).
pub fn analyze(store_dir: &Path) -> anyhow::Result<(Results, RunBehaviours)> {
    let plan = Plan::load(&store_dir.join("plan.yaml"))?;
    let history = History::read_jsonl(&store_dir.join("history.jsonl"))?;
    let node_logs = read_node_logs(store_dir);
    let input = CheckInput {
        history: &history,
        node_logs: &node_logs,
    };
    let mut composed = check_all(&checkers(&plan), &input);
    // What the plan promises about files damaged on a live cluster decides what a failure after a cut means.
    let damage = faultline_workloads::checker::damage::live_damage(&history);
    faultline_workloads::checker::damage::judge(&mut composed.checks, &damage, promise(&plan));
    (composed.verdict, composed.reason) = faultline_workloads::checker::combine(&composed.checks);
    let system = plan.system.kind().to_string();
    // The headline is the most severe failing check (a refusal to boot before the stale read it causes), not the
    // first in check order.
    let reason = match faultline_reports::triage::headline_check(&system, composed.verdict, &composed.checks) {
        Some(check) => format!("{}: {}", check.name, check.reason),
        None => composed.reason,
    };
    let (verdict, checks) = (composed.verdict, composed.checks);
    let start = history.events.iter().find(|e| e.is(Meta::RunStart));
    let meta = start.map(|e| e.value.clone()).unwrap_or(Value::Null);
    let duration_ms = history.events.last().map(|e| e.time_ns / 1_000_000).unwrap_or(0);
    let mut behaviours = faultline_workloads::behaviour::behaviours(&history, &node_logs);
    let mut results = Results {
        schema_version: SCHEMA_VERSION,
        faultline_version: env!("CARGO_PKG_VERSION").to_string(),
        verdict,
        reason,
        plan: plan.name.0.clone(),
        system,
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
        coverage: faultline_workloads::coverage::coverage(&history),
        behaviours: Default::default(),
    };
    for finding in faultline_reports::triage::findings(&results) {
        behaviours.add_finding(&finding.signature.title(), duration_ms * 1_000_000);
    }
    results.behaviours = behaviours.summary();
    results.behaviours.novelty = campaign_line(store_dir).map(|line| explored::novelty(&line, &behaviours));
    Ok((results, behaviours))
}

/// The line a campaign's behaviour log has for the run at `store_dir`, if one has.
fn campaign_line(store_dir: &Path) -> Option<explored::ExploredRun> {
    let real = store_dir.canonicalize().ok()?;
    let run = real.file_name()?.to_string_lossy().into_owned();
    let plan = real.parent()?.file_name()?.to_string_lossy().into_owned();
    explored::logged_run(real.parent()?.parent()?, &format!("{plan}/{run}"))
}

/// Sets a run's novelty (what it showed first in its campaign, from the campaign's behaviour log) in its
/// `results.json` and re-renders its report: a campaign calls it once it has logged the run, which is after the
/// run's own analysis.
pub fn annotate_novelty(store_dir: &Path) -> anyhow::Result<()> {
    let Some(line) = campaign_line(store_dir) else {
        return Ok(());
    };
    let behaviours: RunBehaviours = serde_json::from_slice(&std::fs::read(store_dir.join(BEHAVIOURS_FILE))?)?;
    let path = store_dir.join("results.json");
    let mut results: Results = serde_json::from_slice(&std::fs::read(&path)?)?;
    results.behaviours.novelty = Some(explored::novelty(&line, &behaviours));
    faultline_reports::write_atomic(&path, &serde_json::to_vec_pretty(&results)?)?;
    faultline_reports::write_report(store_dir)?;
    Ok(())
}

/// What a run still in flight has already settled: each refusal to boot on a disk nothing corrupted in the history
/// written so far. Nothing later in the run can explain such a refusal away (surgery recorded after it does not
/// count), so a finding here is one the finished run will have. Other findings can still change or depend on the
/// end (a read is stale only against the writes checked with it; a node not yet booted may still boot), so they are
/// not here.
pub fn settled_findings(store_dir: &Path) -> anyhow::Result<Vec<Finding>> {
    let plan = Plan::load(&store_dir.join("plan.yaml"))?;
    let history = History::read_jsonl(&store_dir.join("history.jsonl"))?;
    let node_logs = BTreeMap::new();
    let input = CheckInput {
        history: &history,
        node_logs: &node_logs,
    };
    let boot = Boot::default().check(&input);
    Ok(check_findings(plan.system.kind(), &boot)
        .into_iter()
        .filter(|finding| finding.signature.kind == FindingKind::RefusedCleanDisk)
        .collect())
}

/// What `plan` declares its system promises when a minority's files are damaged on a live cluster.
fn promise(plan: &Plan) -> faultline_workloads::checker::damage::Promise {
    use faultline_workloads::checker::damage::Promise;
    match plan.disk.minority_damage.as_ref().map(|d| d.value) {
        None | Some(crate::plan::MinorityDamage::Tolerate) => Promise::Tolerate,
        Some(crate::plan::MinorityDamage::Refuse) => Promise::Refuse,
        Some(crate::plan::MinorityDamage::Anything) => Promise::Anything,
    }
}

/// The checks of a run under `plan`, in the order `results.json` lists them.
fn checkers(plan: &Plan) -> Vec<Box<dyn Checker>> {
    let workload: Box<dyn Checker> = match plan.workload.kind {
        WorkloadKind::Register => Box::new(Linearizability {
            model: ModelKind::CasRegister,
            options: CheckOptions {
                timeout: Duration::from_millis(plan.check.timeout.0),
                memory_budget_bytes: plan.check.memory_budget_mib.0 << 20,
                ..CheckOptions::default()
            },
        }),
        WorkloadKind::Log => {
            let defaults = LogCheckOptions::default();
            Box::new(LogWorkload {
                options: LogCheckOptions {
                    linearizable_reads: plan.workload.linearizable_reads.unwrap_or(defaults.linearizable_reads),
                    durability: plan.workload.durability.unwrap_or(defaults.durability),
                },
            })
        }
        WorkloadKind::Set => Box::new(SetWorkload::default()),
        WorkloadKind::Txn => Box::new(txn_checker(plan)),
        WorkloadKind::Bank => {
            let bank = plan.workload.bank.as_ref().map(|b| b.value).unwrap_or_default();
            Box::new(BankWorkload {
                options: BankCheckOptions {
                    total: Some(bank.total.0 as i64),
                    accounts: Some((0..bank.accounts.0).map(|i| i.to_string()).collect()),
                    negative_balances: false,
                },
            })
        }
        WorkloadKind::LongFork => Box::new(LongForkWorkload {
            options: LongForkOptions {
                group_size: Some(plan.workload.group_size.map_or(3, |g| g.0) as usize),
            },
        }),
    };
    let final_phase_enabled = plan.final_phase.enabled;
    let capabilities = plan.system.adapter().capabilities();
    let mut checkers: Vec<Box<dyn Checker>> = vec![
        Box::new(Completion),
        workload,
        Box::new(WorkloadHealth),
        Box::new(Boot::default()),
        Box::new(Liveness { final_phase_enabled }),
        Box::new(Convergence {
            final_phase_enabled,
            commit_point_known: capabilities.status_probe,
        }),
    ];
    // Only for systems whose adapter reads a durable progress number and a boot's own account of what it kept.
    if capabilities.durable_progress {
        checkers.push(Box::new(Durability {
            refuses_interior_damage: match plan.disk.interior_damage {
                Some(declared) => declared == crate::plan::InteriorDamage::Refuse,
                None => {
                    capabilities.refuses_interior_damage
                        || promise(plan) == faultline_workloads::checker::damage::Promise::Refuse
                }
            },
            lazy_fsync: plan.workload.durability == Some(faultline_workloads::Durability::QuorumMemory),
        }));
    }
    checkers.push(Box::new(LogPatterns {
        patterns: plan.log_patterns.clone(),
    }));
    checkers
}

/// The txn workload's check: the plan's model and claimed consistency (default strict-serializable), with the order
/// edges (real time, process order) the claim needs to be decided.
fn txn_checker(plan: &Plan) -> TxnWorkload {
    use faultline_workloads::txn_check::{ConsistencyModel, TxnCheckOptions, TxnModel};
    let model = plan.workload.model.as_ref().map_or(TxnModel::ListAppend, |m| m.value);
    let claimed = plan
        .workload
        .consistency
        .unwrap_or(ConsistencyModel::StrictSerializable);
    TxnWorkload {
        options: TxnCheckOptions::for_claims(model, vec![claimed], Vec::new())
            .expect("a claim without anomaly names is always accepted"),
    }
}

/// Node name -> log text, from `nodes/<name>/node.log`; a node whose log cannot be read as text is left out.
pub(crate) fn read_node_logs(store_dir: &Path) -> BTreeMap<String, String> {
    let entries = match std::fs::read_dir(store_dir.join("nodes")) {
        Ok(entries) => entries,
        Err(_) => return BTreeMap::new(),
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.path().join("node.log")).ok()?;
            Some((entry.file_name().to_string_lossy().into_owned(), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::history::{Event, Lifecycle, Nemesis};
    use serde_json::json;

    /// A run folder of the built-in default plan whose history so far is `events`, then `tail` (a line being written).
    fn run_in_flight(events: Vec<Event>, tail: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let plan = crate::plan::builtin::load("default").unwrap();
        std::fs::write(dir.path().join("plan.yaml"), plan.to_yaml()).unwrap();
        let mut text = String::new();
        for (i, mut event) in events.into_iter().enumerate() {
            event.index = i as u64;
            event.time_ns = i as u64 * 1_000_000;
            text.push_str(&serde_json::to_string(&event).unwrap());
            text.push('\n');
        }
        text.push_str(tail);
        std::fs::write(dir.path().join("history.jsonl"), text).unwrap();
        dir
    }

    fn lifecycle(name: Lifecycle, node: &str, value: serde_json::Value) -> Event {
        Event::named(name, Some(node.into()), value)
    }

    #[test]
    fn given_a_run_in_flight_with_a_refusal_on_a_clean_disk_should_settle_it_and_not_one_after_surgery() {
        let line = "interior WAL corruption at pos 4096: op 7 does not chain to op 6";
        let dir = run_in_flight(
            vec![
                lifecycle(Lifecycle::BootOk, "n1", json!({})),
                lifecycle(Lifecycle::BootOk, "n2", json!({})),
                Event::named(
                    Nemesis::DiskSurgery,
                    Some("n1".into()),
                    json!({"surgery": "flip", "offset": 10}),
                ),
                lifecycle(
                    Lifecycle::BootRefused,
                    "n1",
                    json!({"line": "checksum mismatch at pos 10"}),
                ),
                lifecycle(Lifecycle::BootRefused, "n2", json!({"line": line})),
                // Not booted yet: not a settled finding, the run may still boot it.
                lifecycle(Lifecycle::Start, "n3", json!({})),
            ],
            "{\"index\":7,\"time_ns\":7000000,\"kind\":\"lifecy",
        );
        let settled = settled_findings(dir.path()).unwrap();
        assert_eq!(settled.len(), 1, "{settled:?}");
        assert_eq!(settled[0].signature.kind, FindingKind::RefusedCleanDisk);
        assert_eq!(settled[0].signature.system, "reference");
        assert_eq!(settled[0].example, line);
    }

    #[test]
    fn given_a_run_in_flight_without_a_refusal_should_settle_nothing() {
        let dir = run_in_flight(
            vec![
                lifecycle(Lifecycle::BootOk, "n1", json!({})),
                lifecycle(Lifecycle::Crashed, "n1", json!({"exit": "exit code 101"})),
            ],
            "",
        );
        assert_eq!(settled_findings(dir.path()).unwrap(), Vec::new());
    }
}
