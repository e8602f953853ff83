//! Synthetic store folders for report tests and the benchmark: a valid run, a non-linearizable run (with a real
//! checker explanation), a boot-refusal run, and headless Chromium helpers.
#![allow(dead_code)] // each test binary uses a different part

use faultline_reports::results::{CheckResult, Counts, Results, Verdict, SCHEMA_VERSION};
use faultline_workloads::history::{Event, EventKind, History, HistoryWriter};
use faultline_workloads::{check_history, CheckOptions, ModelKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// 2026-01-01T00:00:00Z: the synthetic runs' wall-clock start.
pub const ANCHOR_UNIX_NS: u64 = 1_767_225_600_000_000_000;
/// History time of the run-start event.
const RUN_START_NS: u64 = 1_000_000;
/// The refusal line of the boot-refusal run.
pub const REFUSAL_LINE: &str =
    "ERROR wal: interior corruption at offset 4096 in wal-000001 (op 7 does not chain): refusing to boot";
/// The failing key of the non-linearizable run.
pub const BAD_KEY: &str = "k-bad";
/// A hostile log line: the report must escape it.
pub const HOSTILE_LINE: &str = "WARN peer said </script><script>window.pwned=1</script> \u{2028} <!-- & done";

/// Builds one run's history and node logs, then writes a store folder.
pub struct RunBuilder {
    events: Vec<Event>,
    logs: BTreeMap<String, Vec<String>>,
    plan: String,
    seed: u64,
}

fn ns(t_ms: f64) -> u64 {
    (t_ms * 1e6) as u64
}

fn blank(kind: EventKind, f: &str, t_ms: f64) -> Event {
    Event {
        index: 0,
        time_ns: ns(t_ms),
        kind,
        process: None,
        worker: None,
        node: None,
        f: f.to_string(),
        key: None,
        value: Value::Null,
        error: None,
    }
}

impl RunBuilder {
    /// A run of `plan` with `seed`, starting with its run-start event.
    pub fn new(plan: &str, seed: u64) -> RunBuilder {
        let mut run = RunBuilder {
            events: Vec::new(),
            logs: BTreeMap::new(),
            plan: plan.to_string(),
            seed,
        };
        let mut start = blank(EventKind::Meta, "run-start", RUN_START_NS as f64 / 1e6);
        start.value = json!({
            "run_id": "test", "plan": plan, "plan_digest": "0123456789abcdef", "seed": seed, "system": "reference",
            "faultline_version": "0.1.0", "faultline_binary_xxh3": "aaaa", "node_binary": "/bin/faultline-node",
            "node_binary_xxh3": "bbbb", "wall_clock_start": rfc3339(ANCHOR_UNIX_NS), "wall_clock_unix_ns": ANCHOR_UNIX_NS,
            "loopback_ip": "127.0.0.1", "repro": repro(plan, seed),
        });
        run.events.push(start);
        run
    }

    /// A client op from `t0_ms` to `t1_ms` (none: never completed) ending `outcome` with `result` as its value.
    #[allow(clippy::too_many_arguments)]
    pub fn op(
        &mut self,
        worker: u64,
        process: u64,
        f: &str,
        key: &str,
        value: Value,
        (t0_ms, t1_ms): (f64, Option<f64>),
        outcome: EventKind,
        result: Value,
    ) -> &mut Self {
        let mut invoke = blank(EventKind::Invoke, f, t0_ms);
        invoke.process = Some(process);
        invoke.worker = Some(worker);
        invoke.node = Some(format!("n{}", worker % 3 + 1));
        invoke.key = Some(key.to_string());
        invoke.value = value;
        if let Some(t1) = t1_ms {
            let mut done = invoke.clone();
            done.kind = outcome;
            done.time_ns = ns(t1);
            done.value = result;
            if outcome != EventKind::Ok {
                done.error = Some(
                    if outcome == EventKind::Info {
                        "timed out"
                    } else {
                        "not primary"
                    }
                    .to_string(),
                );
            }
            self.events.push(done);
        }
        self.events.push(invoke);
        self
    }

    /// A transaction from `t0_ms` to `t1_ms` ending `outcome`: `sent` is its micro-ops as the client sent them
    /// (reads `null`), `done` as its completion holds them (reads filled when `ok`).
    #[allow(clippy::too_many_arguments)]
    pub fn txn(
        &mut self,
        worker: u64,
        (t0_ms, t1_ms): (f64, f64),
        outcome: EventKind,
        sent: Value,
        done: Value,
    ) -> &mut Self {
        let mut invoke = blank(EventKind::Invoke, "txn", t0_ms);
        invoke.process = Some(worker);
        invoke.worker = Some(worker);
        invoke.node = Some(format!("n{}", worker % 3 + 1));
        invoke.value = sent;
        let mut completion = invoke.clone();
        completion.kind = outcome;
        completion.time_ns = ns(t1_ms);
        completion.value = done;
        self.events.push(invoke);
        self.events.push(completion);
        self
    }

    /// A lifecycle event.
    pub fn lifecycle(&mut self, t_ms: f64, f: &str, node: Option<&str>, value: Value) -> &mut Self {
        let mut event = blank(EventKind::Lifecycle, f, t_ms);
        event.node = node.map(str::to_string);
        event.value = value;
        self.events.push(event);
        self
    }

    /// A nemesis event.
    pub fn nemesis(&mut self, t_ms: f64, f: &str, node: &str, value: Value) -> &mut Self {
        let mut event = blank(EventKind::Nemesis, f, t_ms);
        event.node = Some(node.to_string());
        event.value = value;
        self.events.push(event);
        self
    }

    /// A node log line stamped with the wall-clock time of history time `t_ms`.
    pub fn log(&mut self, node: &str, t_ms: f64, text: &str) -> &mut Self {
        let stamp = rfc3339(wall(t_ms));
        self.logs
            .entry(node.to_string())
            .or_default()
            .push(format!("{stamp}  {text}"));
        self
    }

    /// A node log line as the node wrote it; `stamp(t_ms)` gives the wall-clock time of history time `t_ms`.
    pub fn raw_log(&mut self, node: &str, line: &str) -> &mut Self {
        self.logs.entry(node.to_string()).or_default().push(line.to_string());
        self
    }

    /// The harness's start marker in a node log, and the node's lifecycle `start` event.
    pub fn start_node(&mut self, node: &str, t_ms: f64) -> &mut Self {
        let line = format!(
            "=== faultline: starting `/bin/faultline-node run --id {node}` at {} ===",
            rfc3339(wall(t_ms))
        );
        self.logs.entry(node.to_string()).or_default().push(line);
        self.lifecycle(t_ms, "start", Some(node), json!({"pid": 100}))
    }

    /// Sorts events by time, numbers them, and returns the history.
    pub fn history(&mut self) -> History {
        self.events.sort_by_key(|e| e.time_ns);
        for (i, e) in self.events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        History {
            events: self.events.clone(),
            truncated_tail: false,
        }
    }

    /// Writes the store folder `dir` with the checks `checks(history)` returns.
    pub fn write(mut self, dir: &Path, checks: impl FnOnce(&History) -> Vec<CheckResult>) -> PathBuf {
        let mut end = blank(EventKind::Meta, "run-end", 0.0);
        end.time_ns = self.events.iter().map(|e| e.time_ns).max().unwrap_or(0) + 1_000_000;
        end.value = json!({"interrupted": false});
        self.events.push(end);
        let history = self.history();
        std::fs::create_dir_all(dir).unwrap();
        let mut writer = HistoryWriter::new(std::fs::File::create(dir.join("history.jsonl")).unwrap());
        for event in &history.events {
            writer.append(event.clone()).unwrap();
        }
        writer.flush().unwrap();
        for (node, lines) in &self.logs {
            let node_dir = dir.join("nodes").join(node);
            std::fs::create_dir_all(&node_dir).unwrap();
            std::fs::write(node_dir.join("node.log"), lines.join("\n") + "\n").unwrap();
        }
        std::fs::write(
            dir.join("plan.yaml"),
            format!(
                "name: {}\nseed: {}\ntime_limit: 2s\nsystem: {{kind: reference, nodes: 3}}\n",
                self.plan, self.seed
            ),
        )
        .unwrap();
        let checks = checks(&history);
        let (verdict, reason) = Results::combine(&checks);
        let results = Results {
            schema_version: SCHEMA_VERSION,
            faultline_version: "0.1.0".into(),
            verdict,
            reason,
            plan: self.plan.clone(),
            system: "reference".into(),
            seed: self.seed,
            started_at: rfc3339(ANCHOR_UNIX_NS),
            duration_ms: history.events.last().map_or(0, |e| e.time_ns / 1_000_000),
            store_dir: dir.display().to_string(),
            repro: repro(&self.plan, self.seed),
            checks,
            counts: Counts::of(&history),
            coverage: Default::default(),
            behaviours: Default::default(),
        };
        std::fs::write(dir.join("results.json"), serde_json::to_vec_pretty(&results).unwrap()).unwrap();
        dir.to_path_buf()
    }
}

/// The repro command the synthetic runs record.
pub fn repro(plan: &str, seed: u64) -> String {
    format!("faultline run store/{plan}/20260101T000000Z-seed{seed}/plan.yaml --seed {seed}")
}

/// The wall-clock time of history time `t_ms`, RFC 3339 UTC with microseconds.
pub fn stamp(t_ms: f64) -> String {
    rfc3339(wall(t_ms))
}

fn wall(t_ms: f64) -> u64 {
    ANCHOR_UNIX_NS - RUN_START_NS + ns(t_ms)
}

/// Formats unix nanoseconds as RFC 3339 UTC with microseconds.
pub fn rfc3339(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let micros = (unix_ns % 1_000_000_000) / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A key whose name is markup: the transactions section must escape it in text, tables and the cycle graph.
pub const HOSTILE_KEY: &str = "</script><script>window.pwned=1</script>";

/// A txn run (list-append, claimed strict-serializable) under a kill of n2: sequential transactions that are fine,
/// then write skew between two concurrent transactions on `k9` and [`HOSTILE_KEY`] (each reads the key the other
/// appends to, and misses that append), which a later read shows: a G2-item, found by the real checker.
pub fn invalid_txn_run(dir: &Path) -> PathBuf {
    use faultline_workloads::checker::TxnWorkload;
    use faultline_workloads::{CheckInput, Checker};
    let mut run = RunBuilder::new("reference-txn", 11);
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        run.start_node(node, 5.0 + i as f64);
        run.lifecycle(100.0 + i as f64, "boot-ok", Some(node), json!({"boot_ms": 95}));
    }
    let mut lists: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for i in 0..90u64 {
        let (worker, key, t0) = (i % 3, format!("k{}", i % 3), 120.0 + i as f64 * 10.0);
        let failed = worker == 1 && (300.0..900.0).contains(&t0);
        let outcome = if failed { EventKind::Fail } else { EventKind::Ok };
        let (sent, done) = if i % 2 == 0 {
            let op = json!([["append", key, i + 1]]);
            if !failed {
                lists.entry(key.clone()).or_default().push(i as i64 + 1);
            }
            (op.clone(), op)
        } else {
            let seen = lists.get(&key).cloned().unwrap_or_default();
            (
                json!([["r", key, null]]),
                if failed {
                    json!([["r", key, null]])
                } else {
                    json!([["r", key, seen]])
                },
            )
        };
        run.txn(worker, (t0, t0 + 4.0), outcome, sent, done);
    }
    run.nemesis(
        300.0,
        "kill",
        "n2",
        json!({"fault_id": 1, "source": "targeted", "target": "primary"}),
    );
    run.nemesis(900.0, "start", "n2", json!({"fault_id": 1}));
    let (a, b) = (
        json!([["r", HOSTILE_KEY, null], ["append", "k9", 1001]]),
        json!([["r", "k9", null], ["append", HOSTILE_KEY, 1002]]),
    );
    run.txn(
        0,
        (1100.0, 1110.0),
        EventKind::Ok,
        a,
        json!([["r", HOSTILE_KEY, []], ["append", "k9", 1001]]),
    );
    run.txn(
        1,
        (1101.0, 1111.0),
        EventKind::Ok,
        b,
        json!([["r", "k9", []], ["append", HOSTILE_KEY, 1002]]),
    );
    let both = json!([["r", HOSTILE_KEY, null], ["r", "k9", null]]);
    run.txn(
        2,
        (1120.0, 1125.0),
        EventKind::Ok,
        both,
        json!([["r", HOSTILE_KEY, [1002]], ["r", "k9", [1001]]]),
    );
    let late = json!([["append", "k9", 1003]]);
    run.txn(0, (1130.0, 1140.0), EventKind::Info, late.clone(), late);
    run.write(dir, |history| {
        let logs = BTreeMap::new();
        let txn = TxnWorkload::default().check(&CheckInput {
            history,
            node_logs: &logs,
        });
        vec![
            check(
                "history",
                Verdict::Valid,
                "the run finished",
                json!({"events": history.events.len()}),
            ),
            txn,
        ]
    })
}

/// Boots three nodes, runs a register workload on keys k0..k2 with a kill and a pause, then the final phase.
fn base_run(plan: &str, seed: u64) -> RunBuilder {
    let mut run = RunBuilder::new(plan, seed);
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        run.start_node(node, 5.0 + i as f64);
        run.log(node, 6.0 + i as f64, "INFO starting replica");
        run.lifecycle(100.0 + i as f64, "boot-ok", Some(node), json!({"boot_ms": 95}));
    }
    run.lifecycle(110.0, "cluster-ready", None, json!({"ready_ms": 3}));
    // Sequential ops (no two overlap), so the register history is linearizable by construction.
    let mut values: BTreeMap<String, Value> = BTreeMap::new();
    for i in 0..240u64 {
        let (worker, key) = (i % 4, format!("k{}", i % 3));
        let t0 = 120.0 + i as f64 * 8.0;
        let during_kill = (900.0..1500.0).contains(&t0);
        let (f, value) = match i % 3 {
            0 => ("write", json!(format!("v{i}"))),
            _ => ("read", Value::Null),
        };
        let outcome = if during_kill && worker == 1 {
            EventKind::Fail
        } else {
            EventKind::Ok
        };
        let result = if f == "read" {
            values.get(&key).cloned().unwrap_or(Value::Null)
        } else {
            value.clone()
        };
        if f == "write" && outcome == EventKind::Ok {
            values.insert(key.clone(), value.clone());
        }
        run.op(worker, worker, f, &key, value, (t0, Some(t0 + 5.0)), outcome, result);
    }
    run.nemesis(
        900.0,
        "kill",
        "n2",
        json!({"fault_id": 1, "source": "targeted", "target": "primary", "pid": 101, "signal": "SIGKILL"}),
    );
    run.log("n2", 899.0, HOSTILE_LINE);
    run.log("n2", 899.5, "INFO view change started");
    run.nemesis(1500.0, "start", "n2", json!({"fault_id": 1, "pid": 102}));
    run.start_node("n2", 1500.5);
    run.lifecycle(1600.0, "boot-ok", Some("n2"), json!({"boot_ms": 99}));
    run.nemesis(
        1700.0,
        "pause",
        "n1",
        json!({"fault_id": 2, "source": "flap", "target": "n1", "signal": "SIGSTOP"}),
    );
    run.nemesis(1900.0, "resume", "n1", json!({"fault_id": 2, "signal": "SIGCONT"}));
    run.lifecycle(2100.0, "fault-phase-end", None, json!({"phase_ms": 2000}));
    run.lifecycle(2101.0, "final-phase", None, json!({}));
    run.lifecycle(
        2110.0,
        "recovered",
        None,
        json!({"after": "heal", "recovery_ms": 9, "attempts": 1}),
    );
    run.lifecycle(
        2200.0,
        "converged",
        None,
        json!({"converge_ms": 90, "commit_point": "op=160"}),
    );
    run.lifecycle(2300.0, "restart-all", None, json!({}));
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        run.lifecycle(2301.0 + i as f64, "kill", Some(node), json!({"signal": "SIGKILL"}));
    }
    run
}

fn linearizability_check(history: &History) -> CheckResult {
    let result = check_history(history, ModelKind::CasRegister, &CheckOptions::default());
    CheckResult {
        name: "linearizability".into(),
        verdict: result.verdict,
        reason: result.reason.clone(),
        details: serde_json::to_value(&result).unwrap(),
        evidence_ns: None,
        warnings: Vec::new(),
        evidence_nodes: Vec::new(),
        not_checked: false,
    }
}

fn check(name: &str, verdict: Verdict, reason: &str, details: Value) -> CheckResult {
    CheckResult {
        name: name.into(),
        verdict,
        reason: reason.into(),
        details,
        evidence_ns: None,
        warnings: Vec::new(),
        evidence_nodes: Vec::new(),
        not_checked: false,
    }
}

fn passing_checks(history: &History, boot: CheckResult) -> Vec<CheckResult> {
    vec![
        check(
            "history",
            Verdict::Valid,
            "the run finished",
            json!({"events": history.events.len(), "truncated_tail": false}),
        ),
        linearizability_check(history),
        boot,
        check(
            "liveness",
            Verdict::Valid,
            "the cluster accepted a write 9 ms after heal",
            json!({"recovered": [{"after": "heal", "recovery_ms": 9, "attempts": 1}]}),
        ),
        check(
            "convergence",
            Verdict::Valid,
            "every node reached the same commit point",
            json!([{"converge_ms": 90, "commit_point": "op=160"}]),
        ),
        check(
            "log-patterns",
            Verdict::Valid,
            "no node log matches [\"panicked at\"]",
            Value::Null,
        ),
    ]
}

fn boot_ok() -> CheckResult {
    let details = json!({
        "n1": {"boots": 2, "refusals": [], "problems": []},
        "n2": {"boots": 3, "refusals": [], "problems": []},
        "n3": {"boots": 2, "refusals": [], "problems": []},
    });
    check(
        "boot",
        Verdict::Valid,
        "every start booted (7 boots); no refusals",
        details,
    )
}

fn restart_all_boots(run: &mut RunBuilder) {
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        run.start_node(node, 2310.0 + i as f64);
        run.lifecycle(2400.0 + i as f64, "boot-ok", Some(node), json!({"boot_ms": 90}));
    }
    run.lifecycle(2500.0, "teardown", None, json!({}));
}

/// A run every check passes.
pub fn valid_run(dir: &Path) -> PathBuf {
    let mut run = base_run("default", 42);
    restart_all_boots(&mut run);
    run.write(dir, |h| passing_checks(h, boot_ok()))
}

/// A run whose key `k-bad` is not linearizable: a read returns a value nobody wrote while a write overlaps it.
pub fn invalid_linearizability_run(dir: &Path) -> PathBuf {
    let run = base_run("default", 7);
    bad_key_ops(run, false).write(dir, |h| passing_checks(h, boot_ok()))
}

/// The same run with the last read in the final phase: after the heal, `k-bad` reads "a", missing the acknowledged
/// write of "b" (a write lost at a failover).
pub fn lost_write_run(dir: &Path) -> PathBuf {
    let run = base_run("default", 8);
    bad_key_ops(run, true).write(dir, |h| passing_checks(h, boot_ok()))
}

fn bad_key_ops(mut run: RunBuilder, final_read: bool) -> RunBuilder {
    let t = 1000.0;
    run.op(
        5,
        50,
        "write",
        BAD_KEY,
        json!("a"),
        (t, Some(t + 10.0)),
        EventKind::Ok,
        json!("a"),
    );
    run.op(
        6,
        60,
        "write",
        BAD_KEY,
        json!("b"),
        (t + 20.0, Some(t + 60.0)),
        EventKind::Ok,
        json!("b"),
    );
    run.op(
        7,
        70,
        "read",
        BAD_KEY,
        Value::Null,
        (t + 25.0, Some(t + 40.0)),
        EventKind::Ok,
        json!("b"),
    );
    run.op(
        5,
        51,
        "read",
        BAD_KEY,
        Value::Null,
        (t + 70.0, Some(t + 80.0)),
        EventKind::Ok,
        json!("a"),
    );
    if final_read {
        run.lifecycle(t + 65.0, "final-reads", None, json!({"label": "after-heal"}));
    }
    restart_all_boots(&mut run);
    run
}

/// A run in which n2 refuses to boot after the restart-all although nothing corrupted its disk.
pub fn boot_refusal_run(dir: &Path) -> PathBuf {
    let mut run = base_run("default", 99);
    for (i, node) in ["n1", "n3"].iter().enumerate() {
        run.start_node(node, 2310.0 + i as f64 * 2.0);
        run.lifecycle(2400.0 + i as f64, "boot-ok", Some(node), json!({"boot_ms": 90}));
    }
    run.start_node("n2", 2311.0);
    run.log("n2", 2315.0, "INFO opening wal-000001");
    run.log("n2", 2315.5, HOSTILE_LINE);
    run.log("n2", 2316.0, REFUSAL_LINE);
    let refused_at = 2330.0;
    run.lifecycle(
        refused_at,
        "boot-refused",
        Some("n2"),
        json!({"pid": 103, "exit": "exit status: 1", "line": REFUSAL_LINE}),
    );
    run.lifecycle(2500.0, "teardown", None, json!({}));
    let history = run.history();
    let index = history
        .events
        .iter()
        .find(|e| e.f == "boot-refused")
        .map(|e| e.index)
        .unwrap();
    let problem = format!("n2 refused to boot on a disk nothing corrupted (boot-refused at 2.330s): {REFUSAL_LINE}");
    let boot = check(
        "boot",
        Verdict::Invalid,
        &problem,
        json!({
            "n1": {"boots": 2, "refusals": [], "problems": []},
            "n2": {"boots": 2, "refusals": [{"event": "boot-refused", "index": index, "line": REFUSAL_LINE, "legitimate": false}], "problems": [problem]},
            "n3": {"boots": 2, "refusals": [], "problems": []},
        }),
    );
    run.write(dir, |h| passing_checks(h, boot))
}

/// A run in which n1 logs like etcd 3.4 (zap JSON, `ts` in UTC and with a `+0000` offset) and crashes at 3.000s,
/// and n2 logs like Iggy (ANSI colours before an RFC 3339 time, an OSC hyperlink) and refuses to boot at 4.000s.
pub fn etcd_and_iggy_logs_run(dir: &Path) -> PathBuf {
    let mut run = base_run("mixed-logs", 5);
    run.start_node("n1", 2000.0);
    let millis = |t_ms: f64| stamp(t_ms)[..23].to_string();
    run.raw_log(
        "n1",
        &format!(
            r#"{{"level":"info","ts":"{}Z","caller":"etcdserver/server.go:2063","msg":"published local member"}}"#,
            millis(2900.0)
        ),
    );
    run.raw_log(
        "n1",
        &format!(
            r#"{{"level":"warn","ts":"{}+0000","caller":"wal/wal.go:802","msg":"slow fdatasync","took":"1.2s"}}"#,
            millis(2950.0)
        ),
    );
    run.lifecycle(
        3000.0,
        "crashed",
        Some("n1"),
        json!({"pid": 101, "exit": "exit status: 2"}),
    );
    run.start_node("n2", 3800.0);
    run.raw_log(
        "n2",
        &format!(
            "\u{1b}[2m{}\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2mserver::bootstrap\u{1b}[0m: loading journal",
            stamp(3900.0)
        ),
    );
    run.raw_log(
        "n2",
        &format!(
            "\u{1b}[2m{}\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m \u{1b}]8;;file:///core/journal.rs\u{1b}\\journal\u{1b}]8;;\u{1b}\\: {}",
            stamp(3950.0),
            IGGY_REFUSAL
        ),
    );
    run.lifecycle(
        4000.0,
        "boot-refused",
        Some("n2"),
        json!({"pid": 102, "exit": "exit status: 1", "line": IGGY_REFUSAL}),
    );
    run.lifecycle(4500.0, "teardown", None, json!({}));
    run.write(dir, |h| passing_checks(h, boot_ok()))
}

/// The refusal line of the Iggy-style node of [`etcd_and_iggy_logs_run`].
pub const IGGY_REFUSAL: &str = "interior WAL corruption at pos 1292: header checksum mismatch";

/// A fresh temp folder for one test.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("faultline-report-{name}-"))
        .tempdir()
        .unwrap()
}

/// The page's embedded data (`#report-data`), parsed back.
pub fn embedded_data(page: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"report-data\">";
    let start = page.find(open).expect("the page embeds its data") + open.len();
    let end = start + page[start..].find("</script>").expect("the data script is closed");
    serde_json::from_str(&page[start..end]).expect("the embedded data is JSON")
}

/// Headless Chromium, if installed. Under `CI=true` a missing browser is a failure, elsewhere a skip.
pub fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/chromium");
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but /usr/bin/chromium is missing: apt-get install -y chromium");
    }
    eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install -y chromium)");
    None
}

fn chromium_command(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// Loads `page` in headless Chromium and returns the DOM after load and the wall time it took.
pub fn dump_dom(chromium: &Path, page: &Path) -> (String, Duration) {
    let profile = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = chromium_command(chromium, profile.path())
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (String::from_utf8_lossy(&output.stdout).into_owned(), elapsed)
}

/// Screenshots `page` (1400x2400) into `png`.
pub fn screenshot(chromium: &Path, page: &Path, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let output = chromium_command(chromium, profile.path())
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1400,2400")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The text of the element with `id` in a dumped DOM.
pub fn element_text<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let start = at + dom[at..].find('>')? + 1;
    let end = start + dom[start..].find('<')?;
    Some(&dom[start..end])
}
