//! The final phase: with every fault healed, the cluster must recover (accept a write within the bound), converge
//! (every node the same commit point), answer final reads; then every node is kill -9ed, its WAL verified offline,
//! restarted, and must boot; then the cluster must recover again and answer the final reads again. "Every node" is
//! every member: a spare, or a node a membership change removed, stays down.
//!
//! Every probe and read here is an ordinary client op in the history, checked with the rest, so a write lost across
//! the restart-all shows up as a linearizability violation.

use crate::plan::WorkloadKind;
use crate::plan::{AfterRefusal, Plan};
use crate::run::lab::{BootState, Lab};
use crate::run::workload::{perform, Client, PlannedOp, Workload};
use crate::system::{Outcome, StartKind};
use faultline_faults::disk;
use faultline_faults::process::{node_name, parse_node_name};
use faultline_workloads::checker::TXN_F;
use faultline_workloads::history::{Lifecycle, Nemesis};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Entries per page of a final log read.
const FINAL_READ_PAGE_ENTRIES: u64 = 1000;
/// Upper bound on the pages of one log's final read.
const FINAL_READ_PAGES_MAX: usize = 10_000;
/// Keys one final read-only transaction reads (txn workload).
const FINAL_TXN_READ_KEYS: usize = 8;
/// Pause between recovery probe attempts.
const PROBE_RETRY_DELAY: Duration = Duration::from_millis(200);
/// Bound on an offline verification command.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the final phase (the fault phase has already healed every fault).
pub async fn run(plan: &Plan, lab: &Arc<Lab>, workload: &Arc<Workload>) {
    let recorder = lab.recorder();
    let spec = &plan.final_phase;
    recorder.lifecycle(Lifecycle::FinalPhase, None, json!({}));
    // A membership change whose outcome was unknown may have taken effect since: the members are asked again.
    if lab.system().membership().is_some() {
        lab.refresh_members().await;
    }
    if spec.after_refusal == AfterRefusal::Wipe {
        remedy_last_live_refusals(lab).await;
    }
    // Heal everything: a member that stopped on its own (and was judged for it) is started again, and so is one the
    // lab stopped as a spare while the change that made it a member was still unknown. A spare, or a node a change
    // removed, stays down.
    for node in lab.members() {
        if matches!(
            lab.boot_state(node),
            BootState::Stopped | BootState::Crashed(_) | BootState::Refused(_) | BootState::TimedOut
        ) {
            let details = lab.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
            recorder.lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
        }
    }
    let op_timeout = plan.workload.op_timeout.duration();
    if !recover(lab, workload, "heal", spec.recovery_timeout.duration(), op_timeout).await {
        return;
    }
    converge(lab, spec.convergence_timeout()).await;
    final_reads(lab, workload, "after-heal", op_timeout).await;
    if !spec.restart_all {
        return;
    }
    restart_all(plan, lab).await;
    if recover(
        lab,
        workload,
        "restart-all",
        spec.recovery_timeout.duration(),
        op_timeout,
    )
    .await
    {
        converge(lab, spec.convergence_timeout()).await;
        final_reads(lab, workload, "after-restart-all", op_timeout).await;
    }
}

/// Writes probe values until one is acknowledged; records `recovered` or `recovery-timeout`.
async fn recover(
    lab: &Arc<Lab>,
    workload: &Arc<Workload>,
    after: &str,
    timeout: Duration,
    op_timeout: Duration,
) -> bool {
    let recorder = lab.recorder();
    let started = tokio::time::Instant::now();
    let worker = u64::MAX; // the final phase's own lane
    let mut attempt = 0u64;
    while started.elapsed() < timeout {
        attempt += 1;
        let members = lab.members();
        let home = match lab.find_primary().await {
            Some(primary) => primary,
            None if members.is_empty() => (attempt as usize) % lab.node_count(),
            None => members[(attempt as usize) % members.len()],
        };
        let process = workload.new_process();
        let Ok(client) = Client::new(lab.system().as_ref(), workload.kind(), home, op_timeout, process) else {
            return false;
        };
        let op = probe_op(workload, after, attempt);
        let outcome = perform(recorder, &client, process, worker, &node_name(home), &op).await;
        if matches!(outcome, Outcome::Ok(_)) {
            recorder.lifecycle(
                Lifecycle::Recovered,
                None,
                json!({"after": after, "recovery_ms": started.elapsed().as_millis() as u64, "attempts": attempt}),
            );
            return true;
        }
        tokio::time::sleep(PROBE_RETRY_DELAY).await;
    }
    recorder.lifecycle(
        Lifecycle::RecoveryTimeout,
        None,
        json!({"after": after, "timeout_ms": timeout.as_millis() as u64, "attempts": attempt}),
    );
    false
}

/// The recovery probe: an ordinary write of the workload's kind, checked with the rest.
fn probe_op(workload: &Workload, after: &str, attempt: u64) -> PlannedOp {
    if let Some(op) = workload.probe(after, attempt) {
        return op;
    }
    let (f, key) = match workload.kind() {
        WorkloadKind::Register => ("write", format!("probe-{after}")),
        WorkloadKind::Log => ("append", format!("probe-{after}")),
        // The probe's element is one more element of the one set, checked with the others.
        WorkloadKind::Set => ("add", crate::system::SET_KEY.to_string()),
        WorkloadKind::Txn | WorkloadKind::Bank | WorkloadKind::LongFork => (TXN_F, format!("probe-{after}")),
    };
    match workload.kind() {
        // One write of a value unique on the probe's key: the attempt number.
        WorkloadKind::Txn => PlannedOp {
            f,
            key: String::new(),
            value: json!([[workload.txn_write_f(), key, attempt]]),
        },
        _ => PlannedOp {
            f,
            key,
            value: Value::from(format!("probe-{after}-{attempt}")),
        },
    }
}

/// A member's boot state as the convergence sentence says it.
fn boot_state_words(state: &BootState) -> &'static str {
    match state {
        BootState::Stopped => "stopped",
        BootState::Starting => "not ready yet",
        BootState::Ready => "ready",
        BootState::Refused(_) => "refused to boot",
        BootState::Crashed(_) => "crashed",
        BootState::TimedOut => "not ready within its boot timeout",
    }
}

/// Waits until every node reports the same commit point; records `converged` or `convergence-timeout`.
async fn converge(lab: &Arc<Lab>, timeout: Duration) -> bool {
    if !lab.system().reports_status() {
        // No status, no commit point to compare: the check says so (`convergence`), nothing is recorded.
        return true;
    }
    let started = tokio::time::Instant::now();
    loop {
        // Members that legitimately refused to boot (or crashed: the boot check reports those) are left out; the
        // rest must agree, and they must be a majority of the members. A removed node is not required to converge.
        let points: Vec<Option<String>> = lab.commit_points().await;
        let members = lab.members();
        let live: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&n| lab.boot_state(n) == BootState::Ready)
            .collect();
        let first = live.first().and_then(|&n| points[n].clone());
        let agree = first.is_some() && live.len() > members.len() / 2 && live.iter().all(|&n| points[n] == first);
        // A member still starting (in state transfer) is waited for: the others agreeing is not yet convergence.
        // If it is still starting when the wait ends, the ready ones' agreement is recorded with it left out (the
        // boot check judges a node that never became ready).
        let starting = members.iter().any(|&n| lab.boot_state(n) == BootState::Starting);
        if agree && (!starting || started.elapsed() > timeout) {
            // Who was compared, and who was not (and why): a member still in state transfer is no member that
            // reached the commit point.
            let compared: Vec<String> = live.iter().map(|&n| node_name(n)).collect();
            let left_out: serde_json::Map<String, Value> = members
                .iter()
                .filter(|n| !live.contains(n))
                .map(|&n| (node_name(n), json!(boot_state_words(&lab.boot_state(n)))))
                .collect();
            let members: Vec<String> = members.iter().map(|&n| node_name(n)).collect();
            lab.recorder().lifecycle(
                Lifecycle::Converged,
                None,
                json!({"converge_ms": started.elapsed().as_millis() as u64, "commit_point": first, "members": members,
                    "compared": compared, "left_out": left_out}),
            );
            return true;
        }
        if started.elapsed() > timeout {
            let by_node: serde_json::Map<String, Value> = points
                .iter()
                .enumerate()
                .filter(|(i, _)| members.contains(i))
                .map(|(i, p)| (node_name(i), json!(p)))
                .collect();
            lab.recorder().lifecycle(
                Lifecycle::ConvergenceTimeout,
                None,
                json!({"timeout_ms": timeout.as_millis() as u64, "commit_points": by_node}),
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads every key the run used: registers through the primary; every log, page by page from offset 0, from every
/// node in turn (the client follows the system's redirects, so a system that serves reads locally is read locally).
async fn final_reads(lab: &Arc<Lab>, workload: &Arc<Workload>, label: &str, op_timeout: Duration) {
    lab.recorder()
        .lifecycle(Lifecycle::FinalReads, None, json!({"label": label}));
    let members = lab.members();
    let primary = lab
        .find_primary()
        .await
        .unwrap_or(members.first().copied().unwrap_or(0));
    let homes: Vec<usize> = match workload.kind() {
        WorkloadKind::Register | WorkloadKind::Txn | WorkloadKind::Bank | WorkloadKind::LongFork => vec![primary],
        // Every member is asked for the whole set; each forwards its linearizable read to the primary it knows.
        WorkloadKind::Log | WorkloadKind::Set => members,
    };
    for home in homes {
        final_reads_from(lab, workload, home, op_timeout).await;
    }
}

async fn final_reads_from(lab: &Arc<Lab>, workload: &Arc<Workload>, home: usize, op_timeout: Duration) {
    let recorder = lab.recorder();
    let kind = workload.kind();
    if kind == WorkloadKind::Txn {
        let mut keys = workload.keys_used();
        keys.extend(["probe-heal".to_string(), "probe-restart-all".to_string()]);
        let ops = keys.chunks(FINAL_TXN_READ_KEYS).map(|chunk| PlannedOp {
            f: TXN_F,
            key: String::new(),
            value: Value::Array(chunk.iter().map(|key| json!(["r", key, null])).collect()),
        });
        final_ops(lab, workload, home, op_timeout, ops.collect()).await;
        return;
    }
    if matches!(kind, WorkloadKind::Bank | WorkloadKind::LongFork) {
        final_ops(lab, workload, home, op_timeout, workload.final_ops()).await;
        return;
    }
    let mut process = workload.new_process();
    let Ok(mut client) = Client::new(lab.system().as_ref(), kind, home, op_timeout, process) else {
        return;
    };
    let mut keys = workload.keys_used();
    if kind != WorkloadKind::Set {
        keys.extend(["probe-heal".to_string(), "probe-restart-all".to_string()]);
    }
    for key in keys {
        let mut from = 0u64;
        for _page in 0..FINAL_READ_PAGES_MAX {
            let value = match kind {
                WorkloadKind::Log => json!({"from": from, "limit": FINAL_READ_PAGE_ENTRIES}),
                _ => Value::Null,
            };
            let op = PlannedOp {
                f: "read",
                key: key.clone(),
                value,
            };
            let outcome = perform(recorder, &client, process, u64::MAX, &node_name(home), &op).await;
            let next = match &outcome {
                Outcome::Info(_) => {
                    process = workload.new_process();
                    match Client::new(lab.system().as_ref(), kind, home, op_timeout, process) {
                        Ok(fresh) => client = fresh,
                        Err(_) => return,
                    }
                    None
                }
                Outcome::Ok(read) if kind == WorkloadKind::Log => {
                    let last = read["entries"]
                        .as_array()
                        .and_then(|e| e.last())
                        .and_then(|e| e[0].as_u64());
                    last.map(|last| last + 1)
                        .filter(|next| read["end"].as_u64().is_some_and(|end| *next < end))
                }
                _ => None,
            };
            match next {
                Some(next) => from = next,
                None => break,
            }
        }
    }
}

/// Final reads that are ordinary ops of the workload, checked with the rest of the history (a lost append, a lost
/// transfer, an insert seen in another order shows in them): the txn workload's read-only transactions of up to
/// [`FINAL_TXN_READ_KEYS`] keys each, the bank's read, the long-fork groups' reads.
async fn final_ops(lab: &Arc<Lab>, workload: &Arc<Workload>, home: usize, op_timeout: Duration, ops: Vec<PlannedOp>) {
    let recorder = lab.recorder();
    let kind = workload.kind();
    let mut process = workload.new_process();
    let Ok(mut client) = Client::new(lab.system().as_ref(), kind, home, op_timeout, process) else {
        return;
    };
    for op in ops {
        if let Outcome::Info(_) = perform(recorder, &client, process, u64::MAX, &node_name(home), &op).await {
            process = workload.new_process();
            match Client::new(lab.system().as_ref(), kind, home, op_timeout, process) {
                Ok(fresh) => client = fresh,
                Err(_) => return,
            }
        }
    }
}

/// kill -9 every node, verify every WAL offline, restart every node, wait for every boot.
async fn restart_all(plan: &Plan, lab: &Arc<Lab>) {
    let recorder = lab.recorder();
    let members = lab.members();
    recorder.lifecycle(Lifecycle::RestartAll, None, json!({}));
    for &node in &members {
        let details = lab
            .kill_node_for(node, Some("restart-all"))
            .await
            .unwrap_or_else(|e| json!({"error": e}));
        recorder.lifecycle(Lifecycle::Kill, Some(&node_name(node)), details);
    }
    if plan.final_phase.power_loss {
        // Every member was killed above, so this is one power loss of the whole cluster.
        for &node in &members {
            let lost = lab
                .lose_unsynced_node(node)
                .await
                .unwrap_or_else(|e| json!({"error": e}));
            recorder.nemesis(
                Nemesis::PowerLoss,
                Some(&node_name(node)),
                json!({"source": "restart-all", "lost": lost}),
            );
        }
    }
    cut_disks(plan, lab).await;
    if let Some(corrupt) = &plan.final_phase.test_only_corrupt_wal {
        let node = parse_node_name(&corrupt.node.value).expect("validated at plan load");
        let data_dir = lab.system().data_dir(node);
        match disk::corrupt_interior(&data_dir, lab.system().wal_glob()) {
            Ok(record) if corrupt.recorded => {
                recorder.nemesis(
                    Nemesis::DiskSurgery,
                    Some(&node_name(node)),
                    json!({"test_only": true, "surgery": record}),
                );
            }
            Ok(_) => {} // deliberately unrecorded: simulates a disk nothing (visible) corrupted
            Err(e) => {
                recorder.nemesis(
                    Nemesis::DiskSurgery,
                    Some(&node_name(node)),
                    json!({"test_only": true, "error": e.to_string()}),
                );
            }
        }
    }
    for &node in &members {
        verify_offline(lab, node).await;
    }
    // A system that must start from its most advanced node: that one first and alone, the others once it is up.
    let positions = restart_positions(lab, &members).await;
    let positions = &positions;
    let start = |node: usize, kind: StartKind| async move {
        let mut details = lab
            .start_node_as(node, Some(kind))
            .await
            .unwrap_or_else(|e| json!({"error": e}));
        if let Some((_, position)) = positions.iter().flatten().find(|(n, _)| *n == node) {
            details["position"] = position.clone();
        }
        recorder.lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
    };
    let mut rest = members.clone();
    // (When no node could say its position, none is known to be the most advanced: all start together.)
    let first = positions
        .iter()
        .flatten()
        .next()
        .filter(|(_, position)| position.is_number());
    if let Some(&(first, _)) = first {
        start(first, StartKind::RestartAllFirst).await;
        lab.wait_boot(first).await;
        rest.retain(|&node| node != first);
    }
    for &node in &rest {
        start(node, StartKind::RestartAll).await;
    }
    for &node in &members {
        lab.wait_boot(node).await;
    }
    if plan.final_phase.after_refusal == AfterRefusal::Wipe {
        wipe_refused(lab).await;
    }
}

/// With `system.restart_all.position`: every stopped member's position as its own files say, the most advanced
/// first (ties by node id; a node whose command failed or printed no number last, its error as its position).
async fn restart_positions(lab: &Arc<Lab>, members: &[usize]) -> Option<Vec<(usize, Value)>> {
    let mut ranked = Vec::new();
    for &node in members {
        let command = lab.system().restart_position_command(node)?;
        let output = lab.hands(node).output(&command, VERIFY_TIMEOUT).await;
        let (position, value) = match output {
            Ok(output) => {
                let stdout = String::from_utf8_lossy(&output.stdout);
                let last = stdout
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("");
                match last.parse::<i128>() {
                    Ok(number) if output.status.success() => (Some(number), json!(number)),
                    _ => (
                        None,
                        json!({"error": format!("`{}` exited {} printing {last:?}, not a number", command.display(), output.status)}),
                    ),
                }
            }
            Err(e) => (None, json!({ "error": e })),
        };
        ranked.push((std::cmp::Reverse(position), node, value));
    }
    ranked.sort_by_key(|&(position, node, _)| (position, node));
    Some(ranked.into_iter().map(|(_, node, value)| (node, value)).collect())
}

/// The plan's surgery on stopped nodes, each cut recorded exactly.
async fn cut_disks(plan: &Plan, lab: &Arc<Lab>) {
    let seed = plan.seed.unwrap_or(0);
    for surgery in &plan.final_phase.surgery {
        let node = parse_node_name(&surgery.node.value).expect("validated at plan load");
        let name = node_name(node);
        let data_dir = lab.system().data_dir(node);
        let cut = match crate::system::resolve_cut(&plan.system.adapter().file_classes(), &surgery.cut) {
            Ok(cut) => cut,
            Err(e) => {
                lab.recorder()
                    .nemesis(Nemesis::DiskSurgery, Some(&name), json!({"error": e}));
                continue;
            }
        };
        // A fresh surgeon of the node's own stream for each step, on the node's machine.
        let value = match lab.hands(node).cut(&data_dir, &cut, (seed, &name), false).await {
            Ok(record) => json!({"surgery": record}),
            Err(e) => json!({"error": e}),
        };
        lab.recorder().nemesis(Nemesis::DiskSurgery, Some(&name), value);
    }
}

/// During the fault phase (plans with `after_refusal: wipe`): a node that refused to boot after a live cut damaged
/// it is wiped and started again as an empty replica that recovers from its peers, as the final phase does, once the
/// nodes that are ready and intact (not damaged or wiped without having caught up since) are a majority of the
/// cluster: wiping while fewer hold the data would leave it nowhere but on a minority, which is the harness's doing.
/// A refusal no cut explains is left alone: it is the evidence of a bug.
pub(super) async fn remedy_live_refusals(lab: &Arc<Lab>) {
    let members = lab.members();
    let majority = members.len() / 2 + 1;
    for node in 0..lab.node_count() {
        if lab.boot_state(node) == BootState::Ready {
            lab.note_ready(node);
        }
    }
    for &node in &members {
        let intact = members
            .iter()
            .filter(|&&n| lab.boot_state(n) == BootState::Ready && !lab.damaged_by_cut(n))
            .count();
        match lab.boot_state(node) {
            BootState::Refused(_) if lab.damaged_by_cut(node) && intact >= majority => {
                let name = node_name(node);
                // Empty from here until it has caught up with what the cluster holds now.
                lab.mark_damaged(node);
                match lab.system().wipe(node).await {
                    Ok(()) => {
                        lab.recorder()
                            .lifecycle(Lifecycle::Wipe, Some(&name), json!({"after": "a live cut"}));
                        let details = lab.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
                        lab.recorder().lifecycle(Lifecycle::Start, Some(&name), details);
                    }
                    Err(e) => {
                        lab.recorder().lifecycle(
                            Lifecycle::WipeFailed,
                            Some(&name),
                            json!({"error": format!("{e:#}")}),
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// A node a live cut made refuse at the very end of the fault phase (restarted by its fault's end, refusing after the
/// phase's last look) is wiped now, as the fault phase would have done, so that it has caught up (the convergence
/// wait below sees to that) before the restart-all: otherwise the restart-all's own surgery on another node leaves
/// two damaged nodes, too few to wipe either, and the run fails on the harness's timing. Damaged nodes still booting
/// are waited for first, since their refusal may be on its way, and a wiped node until it booted (each wait within
/// the boot timeout: the watcher settles every start by then).
async fn remedy_last_live_refusals(lab: &Arc<Lab>) {
    for node in 0..lab.node_count() {
        if lab.boot_state(node) == BootState::Starting && lab.damaged_by_cut(node) {
            lab.wait_boot(node).await;
        }
    }
    remedy_live_refusals(lab).await;
    // A wiped node boots empty before the convergence wait can count it among the nodes that must agree.
    for node in 0..lab.node_count() {
        if lab.boot_state(node) == BootState::Starting {
            lab.wait_boot(node).await;
        }
    }
}

/// Wipes every node that refused to boot and starts it as an empty replica that recovers from its peers, but only
/// while the nodes that booted on their own data are a majority: wiping more would leave no quorum that holds the
/// acknowledged state, and whatever an empty majority then does is the harness's doing, not the system's (seen on
/// Iggy when an unforced refusal came on top of the surgery's). Then the refused nodes stay down.
async fn wipe_refused(lab: &Arc<Lab>) {
    let members = lab.members();
    let refused: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&node| matches!(lab.boot_state(node), BootState::Refused(_)))
        .collect();
    let intact = members
        .iter()
        .filter(|&&node| lab.boot_state(node) == BootState::Ready)
        .count();
    let majority = members.len() / 2 + 1;
    if !refused.is_empty() && intact < majority {
        for &node in &refused {
            lab.recorder().lifecycle(
                Lifecycle::WipeSkipped,
                Some(&node_name(node)),
                json!({"reason": format!(
                    "only {intact} of {} members booted on their own data: wiping would leave no majority holding it",
                    members.len()
                )}),
            );
        }
        return;
    }
    for node in refused {
        let name = node_name(node);
        match lab.system().wipe(node).await {
            Ok(()) => {
                lab.recorder().lifecycle(Lifecycle::Wipe, Some(&name), json!({}));
                let details = lab.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
                lab.recorder().lifecycle(Lifecycle::Start, Some(&name), details);
                lab.wait_boot(node).await;
            }
            Err(e) => {
                lab.recorder()
                    .lifecycle(Lifecycle::WipeFailed, Some(&name), json!({"error": format!("{e:#}")}));
            }
        }
    }
}

/// Runs the system's offline WAL verification on a stopped node, if it has one; records `verify-ok`/`verify-refused`.
async fn verify_offline(lab: &Arc<Lab>, node: usize) {
    let Some(command) = lab.system().verify_command(node) else {
        return;
    };
    let output = lab.hands(node).output(&command, VERIFY_TIMEOUT).await;
    let name = node_name(node);
    match output {
        Ok(output) if output.status.success() => {
            lab.recorder()
                .lifecycle(Lifecycle::VerifyOk, Some(&name), json!({"command": command.display()}));
        }
        Ok(output) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            let line = lab
                .system()
                .boot_refusal_line(&text)
                .unwrap_or_else(|| text.trim().lines().last().unwrap_or("").to_string());
            lab.recorder().lifecycle(
                Lifecycle::VerifyRefused,
                Some(&name),
                json!({"command": command.display(), "exit": output.status.to_string(), "line": line}),
            );
        }
        Err(e) => {
            lab.recorder().lifecycle(
                Lifecycle::VerifyError,
                Some(&name),
                json!({"command": command.display(), "error": e}),
            );
        }
    }
}
