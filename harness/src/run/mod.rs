//! One run, start to end: resolve the plan, sweep leftovers, set up the store, start the cluster, drive the workload
//! under the nemesis for the time limit, run the final phase, tear down, and check the history.

pub mod analyze;
pub mod cleanup;
pub mod final_phase;
pub mod host_sweep;
pub mod lab;
pub mod logging;
pub mod progress;
pub mod recorder;
pub mod runlock;
pub mod store;
pub mod workload;

use crate::plan::{IoFaultWindow, NetworkBackend, Plan};
use crate::remote::hands::{Hands, LocalHands};
use crate::run::lab::{BootState, Lab};
use crate::run::recorder::Recorder;
use crate::run::workload::Workload;
use crate::supervisor::Supervisor;
use crate::system::{BuildContext, Built, System};
use anyhow::Context;
use faultline_faults::interpreter::Families;
use faultline_faults::io::{IoFaults, IoWindow};
use faultline_faults::network::netns::NetnsLab;
use faultline_faults::network::schedule::{self as network_faults, NetworkFaults, NetworkHolds};
use faultline_faults::network::{BackendChoice, BackendKind, Network};
use faultline_faults::process::{
    self as process_faults, node_name, MembershipFaults, NodeHolds, ProcessFaults, RollingFaults,
};
use faultline_faults::rng::stream;
use faultline_faults::trigger::{TriggerSpec, Triggers};
use faultline_reports::results::{Results, Verdict};
use faultline_workloads::history::{Lifecycle, Meta};
use runlock::RunLock;
use serde_json::json;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Bound on waiting for the first primary after the cluster starts.
const FIRST_PRIMARY_TIMEOUT: Duration = Duration::from_secs(30);

/// How to run.
pub struct RunOptions {
    /// The plan (already validated).
    pub plan: Plan,
    /// Where the store lives.
    pub store_root: PathBuf,
    /// No progress bar.
    pub quiet: bool,
    /// The hosts the nodes live on (`--hosts`); none: this machine.
    pub remote: Option<crate::remote::lab::RemoteOptions>,
}

/// What a run produced.
pub struct RunOutcome {
    /// The store folder of this run.
    pub store_dir: PathBuf,
    /// Checked results.
    pub results: Results,
}

/// Runs a plan end to end.
pub async fn run(options: RunOptions) -> anyhow::Result<RunOutcome> {
    let mut plan = options.plan;
    let seed = *plan.seed.get_or_insert_with(|| u64::from(rand::random::<u32>()));
    // A swarm plan runs its seed's configuration, and the store keeps that (reduced) plan.
    let plan = crate::plan::swarm::configure(&plan, seed);
    let run_id = format!("{}-{:x}", std::process::id(), rand::random::<u32>());

    // Leftovers of dead runs of every kind, whatever this plan uses.
    let leftovers = tokio::task::spawn_blocking(|| crate::run::cleanup::sweep(false)).await?;
    for line in leftovers.describe(false).lines() {
        eprintln!("faultline: leftovers of dead runs: {line}");
    }
    let store_dir = store::create_run_dir(&options.store_root, &plan.name.0, seed)?;
    let _lock = RunLock::acquire(&runlock::runs_dir(), &run_id, &store_dir).context("taking the run lock")?;
    // From here on every warning of this run (any crate's) is also kept with it.
    let _run_log =
        crate::run::logging::RunLog::open(&store_dir.join("faultline.log")).context("creating faultline.log")?;
    std::fs::write(store_dir.join("plan.yaml"), plan.to_yaml()).context("writing plan.yaml")?;

    let node_count = plan.system.nodes();
    let nodes_dir = store_dir.join("nodes");
    let log_paths: Vec<PathBuf> = (0..node_count)
        .map(|i| nodes_dir.join(node_name(i)).join("node.log"))
        .collect();
    for path in &log_paths {
        std::fs::create_dir_all(path.parent().expect("log path has a parent"))?;
    }
    let recorder = Recorder::create(&store_dir.join("history.jsonl"))?;
    // On hosts the network is theirs (each host's nft), never this machine's namespaces.
    let netns = match options.remote {
        Some(_) => None,
        None => start_netns(&plan, &run_id, node_count).await?,
    };
    // Nodes on hosts: each host reached over SSH, faultline installed there, its agent running.
    let remote = match &options.remote {
        Some(remote) => Some(
            crate::remote::lab::RemoteLab::connect(remote, node_count, &run_id)
                .await
                .context("reaching the hosts")?,
        ),
        None => None,
    };
    // Whatever ends the run (its end, or an error on the way), the hosts' agents are told to end what they started
    // at once: a channel that merely closed would keep the nodes for the agents' linger.
    let ran = async {
        let supervisor = Supervisor::start(&run_id);
        let hands: Vec<Arc<dyn Hands>> = match &remote {
            Some(remote) => remote.hands.clone(),
            None => {
                // One supervisor for every node of this machine.
                let local: Arc<dyn Hands> = Arc::new(LocalHands::new(supervisor.clone()));
                vec![local; node_count]
            }
        };
        let system_nodes_dir = remote.as_ref().map_or(nodes_dir.clone(), |r| r.nodes_dir.clone());
        let target = build_system(
            &plan,
            (seed, &run_id),
            (system_nodes_dir, nodes_dir),
            netns.as_ref().map(|(lab, _)| lab),
            (hands.clone(), remote.as_ref()),
        )
        .await?;
        let (system, network) = (target.system, target.network);
        let mut meta = run_meta(
            &plan,
            seed,
            &run_id,
            &target.binary,
            &store_dir,
            &target.node_ips,
            (network.as_ref(), system.as_ref()),
        );
        if let Some(remote) = &remote {
            meta["hosts"] = remote.describe();
        }
        recorder.meta(Meta::RunStart, meta);
        record_host_links(&hands, &recorder);
        let mut lab = Lab::new(
            system.clone(),
            hands,
            recorder.clone(),
            log_paths,
            plan.final_phase.boot_timeout.duration(),
        );
        let wipes_live_refusals = plan.final_phase.after_refusal == crate::plan::AfterRefusal::Wipe;
        lab.arm_cuts(seed, plan.system.adapter().file_classes(), wipes_live_refusals);
        if let Some((netns_lab, _)) = &netns {
            lab.launch_inside(netns_lab.clone());
        }
        if plan.disk.fault_fs {
            let options = faultline_faults::fusefs::FaultFsOptions {
                seed,
                metadata: plan.disk.metadata,
                writeback: plan.disk.writeback,
                allow_other: system.runs_as_other_user(),
                ..Default::default()
            };
            lab.mount_fault_fs(&faultline_faults::fusefs::run_tag(&run_id), options)
                .await?;
        }
        if plan.nemesis.has_clock_faults() {
            // Each node's clock file in its folder on its machine: beside its log here, beside its data on a host.
            let dirs = match &remote {
                Some(remote) => (0..node_count).map(|node| remote.node_dir(node)).collect(),
                None => lab.log_dirs(),
            };
            lab.enable_clocks(dirs).await.context("setting up clock faults")?;
        }
        let lab = Arc::new(lab);

        // Under netns every client socket must be opened inside the lab namespace: the whole drive runs on the lab
        // runtime, whose threads all live there (a socket stays in the namespace it was created in).
        let driven = {
            let (plan, lab, network, quiet) = (Arc::new(plan.clone()), lab.clone(), network.clone(), options.quiet);
            let future = async move { drive(&plan, seed, &lab, network.as_ref(), quiet).await };
            match &netns {
                Some((_, runtime)) => runtime.spawn(future),
                None => tokio::spawn(future),
            }
        };
        let abort = driven.abort_handle();
        let interrupted = tokio::select! {
            result = driven => { result.context("the run task failed")??; false }
            _ = shutdown_signal() => { abort.abort(); true }
        };
        if interrupted {
            recorder.meta(
                Meta::Interrupted,
                json!({"reason": "the harness received SIGINT/SIGTERM"}),
            );
        }
        lab.kill_all_quietly().await;
        lab.unmount_fault_fs().await;
        Ok::<_, anyhow::Error>((system, interrupted))
    }
    .await;
    if let Some(remote) = remote {
        // The nodes' files come back into the store, as a local run keeps them there (a failed run's too).
        remote.fetch_node_files(&store_dir.join("nodes")).await;
        remote.close().await;
    }
    let (system, interrupted) = ran?;
    if let Some((netns_lab, runtime)) = netns {
        runtime.shutdown_background();
        let teardown = tokio::task::spawn_blocking(move || netns_lab.teardown()).await;
        if let Ok(Err(e)) = teardown {
            tracing::warn!(error = %e, "netns teardown failed; the next run's sweep removes leftovers");
        }
    }
    recorder.lifecycle(Lifecycle::Teardown, None, json!({}));
    recorder.meta(Meta::RunEnd, json!({"interrupted": interrupted}));

    let results = analyze::analyze_and_write(&store_dir)?;
    // A VALID run keeps its nodes' logs, not their data (on hosts: the copies brought back into the store).
    if results.verdict == Verdict::Valid {
        for node in 0..node_count {
            let data_dir = match &options.remote {
                Some(_) => remote_data_copy(&store_dir, &system.data_dir(node), node),
                None => Some(system.data_dir(node)),
            };
            if let Some(data_dir) = data_dir {
                let _ = std::fs::remove_dir_all(&data_dir);
                let _ = std::fs::remove_dir_all(data_dir.with_extension("backing"));
            }
        }
    }
    store::point_latest(&options.store_root, &store_dir);
    Ok(RunOutcome { store_dir, results })
}

/// Where a host's node data dir (`WORKDIR/runs/RUN_ID/nI/...`) was brought back into the store: the same path under
/// `nodes/nI` of the run's folder.
fn remote_data_copy(store_dir: &std::path::Path, host_data_dir: &std::path::Path, node: usize) -> Option<PathBuf> {
    let name = node_name(node);
    let components: Vec<_> = host_data_dir.components().collect();
    let at = components.iter().rposition(|c| c.as_os_str() == name.as_str())?;
    let relative: PathBuf = components[at + 1..].iter().collect();
    (!relative.as_os_str().is_empty()).then(|| store_dir.join("nodes").join(&name).join(relative))
}

/// Setup, fault phase, final phase, with the observer watching every node throughout.
async fn drive(plan: &Plan, seed: u64, lab: &Arc<Lab>, network: Option<&Network>, quiet: bool) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let observer = tokio::spawn(lab.clone().observe(stop_rx));
    let result = drive_phases(plan, seed, lab, network, quiet).await;
    let _ = stop_tx.send(true);
    let _ = observer.await;
    result
}

async fn drive_phases(
    plan: &Plan,
    seed: u64,
    lab: &Arc<Lab>,
    network: Option<&Network>,
    quiet: bool,
) -> anyhow::Result<()> {
    let recorder = lab.recorder().clone();
    let system = lab.system().clone();
    for node in 0..lab.node_count() {
        system.prepare(node).await?;
    }
    // Spares (nodes beyond `members:`) stay down until a membership change adds them.
    let members = lab.members();
    lab.record_members("plan");
    for &node in &members {
        let details = lab.start_node(node).await.map_err(anyhow::Error::msg)?;
        recorder.lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
    }
    for &node in &members {
        let state = lab.wait_boot(node).await;
        if state != BootState::Ready {
            recorder.lifecycle(
                Lifecycle::SetupFailed,
                Some(&node_name(node)),
                json!({"state": format!("{state:?}")}),
            );
            return Ok(()); // the boot check reports it
        }
    }
    if let Some(why) = lab.misconfiguration().await {
        eprintln!("faultline: the plan does not fit the system: {why}");
        recorder.lifecycle(Lifecycle::SetupFailed, None, json!({"reason": why}));
        return Ok(());
    }
    let started = tokio::time::Instant::now();
    let has_primary = plan.system.adapter().capabilities().primary_probe;
    while has_primary && lab.find_primary().await.is_none() {
        if started.elapsed() > FIRST_PRIMARY_TIMEOUT {
            recorder.lifecycle(
                Lifecycle::SetupFailed,
                None,
                json!({"reason": "no primary", "timeout_ms": FIRST_PRIMARY_TIMEOUT.as_millis() as u64}),
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    recorder.lifecycle(
        Lifecycle::ClusterReady,
        None,
        json!({"ready_ms": started.elapsed().as_millis() as u64}),
    );

    let workload = Workload::new(&plan.workload, stream(seed, "workload"));
    let client_works = fault_phase(plan, seed, lab, network, &workload, quiet).await;
    if plan.final_phase.enabled && client_works {
        final_phase::run(plan, lab, &workload).await;
    }
    Ok(())
}

/// Workers and nemesis for `time_limit`; every fault healed at the end. False when the phase stopped early because
/// the client cannot work at all (recorded as `setup-failed`): then nothing after it can judge the system.
async fn fault_phase(
    plan: &Plan,
    seed: u64,
    lab: &Arc<Lab>,
    network: Option<&Network>,
    workload: &Arc<Workload>,
    quiet: bool,
) -> bool {
    let recorder = lab.recorder().clone();
    let phase_ms = plan.time_limit.0;
    let schedule = fault_schedule(plan, seed);
    let network_schedule = match network {
        Some(_) => network_fault_schedule(plan, seed),
        None => Vec::new(),
    };
    recorder.meta(
        Meta::Schedule,
        json!({"process": schedule, "network": network_schedule}),
    );
    // Rolling faults (`targets: each`) and membership changes run beside the timed interpreter: their steps wait for
    // the cluster (each node to be ready again, a reconfiguration to commit).
    let (schedule, rolling_schedule) = process_faults::split_rolling(schedule);
    let (membership_schedule, schedule) = process_faults::split_membership(schedule);
    let io_windows = io_faults(&plan.nemesis.io);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..plan.workload.concurrency.0 {
        let rng = stream(seed, &format!("worker-{worker}"));
        workers.spawn(workload.clone().run_worker(
            lab.system().clone(),
            recorder.clone(),
            (worker, lab.members_watch()),
            rng,
            stop_rx.clone(),
        ));
    }
    // Subscribed before the phase starts, so the triggers see its first observations; without triggers nobody
    // listens, and the observer sends nothing.
    let facts = (!plan.nemesis.triggers.is_empty()).then(|| lab.facts());
    let triggers: Vec<TriggerSpec> = plan.nemesis.triggers.iter().map(|t| t.value.clone()).collect();
    let stable = plan.nemesis.process.as_ref().and_then(|p| p.value.stable.clone());
    let max_down = plan.nemesis.process.as_ref().and_then(|p| p.value.max_down);
    let phase_start = tokio::time::Instant::now();
    let (nemesis_lab, nemesis_network, nemesis_stop) = (lab.clone(), network.cloned(), stop_rx.clone());
    let nemesis = tokio::spawn(async move {
        let lab = nemesis_lab.as_ref();
        let members = lab.members();
        let holds = (
            NodeHolds::with_members(lab.node_count(), &members).with_max_down(max_down),
            NetworkHolds::seeded(seed),
        );
        let rolling = RollingFaults::shared(lab, &rolling_schedule, holds.0.clone());
        let mut membership = MembershipFaults::shared(lab, &membership_schedule, holds.0.clone());
        let mut families = Families {
            process: ProcessFaults::shared(lab, &schedule, holds.0.clone()),
            network: nemesis_network
                .as_ref()
                .map(|network| NetworkFaults::shared(network, lab, &network_schedule, holds.1.clone())),
            io: IoFaults::new(lab, &io_windows),
        };
        if let Some(facts) = facts {
            let mut triggers = Triggers::new(lab, &triggers, seed, nemesis_network.as_ref(), holds, stable, phase_ms);
            tokio::join!(
                families.run(phase_start, nemesis_stop.clone()),
                rolling.run(phase_start, nemesis_stop.clone()),
                membership.run(phase_start, nemesis_stop.clone()),
                triggers.run(phase_start, nemesis_stop, facts),
            );
        } else {
            tokio::join!(
                families.run(phase_start, nemesis_stop.clone()),
                rolling.run(phase_start, nemesis_stop.clone()),
                membership.run(phase_start, nemesis_stop),
            );
        }
    });
    let client_broken = watch_phase(plan, lab, workload, phase_start, quiet).await;
    let _ = stop_tx.send(true);
    while workers.join_next().await.is_some() {}
    let _ = nemesis.await;
    if let Some(why) = &client_broken {
        eprintln!("faultline: stopping the run early: {why}");
        recorder.lifecycle(Lifecycle::SetupFailed, None, json!({"reason": "client", "error": why}));
    }
    // A phase stopped early says how long it ran.
    let ran_ms = match client_broken {
        Some(_) => phase_start.elapsed().as_millis() as u64,
        None => phase_ms,
    };
    recorder.lifecycle(Lifecycle::FaultPhaseEnd, None, json!({"phase_ms": ran_ms}));
    client_broken.is_none()
}

/// Shows progress until the fault phase's end, wiping refused nodes where the plan says so; stops early with the
/// reason when the client cannot work at all.
async fn watch_phase(
    plan: &Plan,
    lab: &Arc<Lab>,
    workload: &Workload,
    phase_start: tokio::time::Instant,
    quiet: bool,
) -> Option<String> {
    let phase_ms = plan.time_limit.0;
    let progress = crate::run::progress::Progress::new(quiet, phase_ms);
    let deadline = phase_start + Duration::from_millis(phase_ms);
    let mut client_broken = None;
    while tokio::time::Instant::now() < deadline && client_broken.is_none() {
        let stats = &workload.stats;
        let counts = (
            stats.ok.load(Ordering::Relaxed),
            stats.fail.load(Ordering::Relaxed),
            stats.info.load(Ordering::Relaxed),
        );
        progress.update(
            phase_start.elapsed().as_millis() as u64,
            counts,
            &lab.fault_summary().await,
        );
        if plan.final_phase.after_refusal == crate::plan::AfterRefusal::Wipe {
            final_phase::remedy_live_refusals(lab).await;
        }
        client_broken = lab.system().client_setup_error();
        tokio::time::sleep(
            Duration::from_millis(250).min(deadline.saturating_duration_since(tokio::time::Instant::now())),
        )
        .await;
    }
    progress.finish();
    client_broken
}

/// Records what happens to the links to the nodes' hosts (dropped, reattached, lost) in the history, as it happens.
fn record_host_links(hands: &[Arc<dyn Hands>], recorder: &Recorder) {
    for (node, hands) in hands.iter().enumerate() {
        let Some(mut events) = hands.take_link_events() else {
            continue;
        };
        let recorder = recorder.clone();
        tokio::spawn(async move {
            while let Some(mut event) = events.recv().await {
                let kind = match event["event"].as_str() {
                    Some("link-lost") => Lifecycle::HostLinkLost,
                    Some("link-restored") => Lifecycle::HostLinkRestored,
                    Some("link-failed") => Lifecycle::HostLinkFailed,
                    _ => continue,
                };
                if let Some(fields) = event.as_object_mut() {
                    fields.remove("event");
                    fields.remove("seq");
                }
                recorder.lifecycle(kind, Some(&node_name(node)), event);
            }
        });
    }
}

/// Builds the plan's system through its adapter's constructor: each node at its namespace address under netns,
/// else all on one free loopback address, peers routed through the proxy mesh where the adapter allows it.
async fn build_system(
    plan: &Plan,
    (seed, run_id): (u64, &str),
    (nodes_dir, local_nodes_dir): (PathBuf, PathBuf),
    netns: Option<&Arc<NetnsLab>>,
    (hands, remote): (Vec<Arc<dyn Hands>>, Option<&crate::remote::lab::RemoteLab>),
) -> anyhow::Result<Built> {
    let context = BuildContext {
        plan,
        seed,
        run_id,
        nodes_dir,
        local_nodes_dir,
        netns,
        hands,
        remote,
    };
    let capabilities = plan.system.adapter().capabilities();
    anyhow::ensure!(
        netns.is_some() || remote.is_some() || !context.has_network_faults() || capabilities.proxy_partitions,
        "this plan partitions a {} system, which needs the netns backend, and this machine cannot use it (run as \
         root with iproute2 and nftables installed)",
        plan.system.kind()
    );
    plan.system.adapter().build(context).await
}

/// Builds the netns lab (and a runtime whose threads live in its lab namespace) when the plan asks for the netns
/// backend, or for `auto` and this machine can do it.
async fn start_netns(
    plan: &Plan,
    run_id: &str,
    node_count: usize,
) -> anyhow::Result<Option<(Arc<NetnsLab>, tokio::runtime::Runtime)>> {
    let choice = match plan.network.backend {
        NetworkBackend::Proxy => return Ok(None),
        NetworkBackend::Netns => BackendChoice::Netns,
        NetworkBackend::Auto => BackendChoice::Auto,
    };
    let (kind, why) = tokio::task::spawn_blocking(move || choice.resolve()).await??;
    eprintln!("faultline: {why}");
    if kind != BackendKind::Netns {
        return Ok(None);
    }
    let run_id = run_id.to_string();
    let lab = tokio::task::spawn_blocking(move || NetnsLab::create(&run_id, node_count)).await??;
    let lab = Arc::new(lab);
    let runtime = lab.lab_runtime(2).context("starting the lab runtime")?;
    Ok(Some((lab, runtime)))
}

/// The plan's I/O-fault windows as the I/O nemesis takes them.
fn io_faults(windows: &[IoFaultWindow]) -> Vec<IoWindow> {
    let window = |window: &IoFaultWindow| IoWindow {
        start_ms: window.at.0,
        duration_ms: window.duration.0,
        node: process_faults::parse_node_name(&window.node.value).expect("validated at plan load"),
        faults: window.faults.clone(),
    };
    windows.iter().map(window).collect()
}

/// The process-fault schedule of a plan for a seed (deterministic: the same seed gives the same schedule).
pub fn fault_schedule(plan: &Plan, seed: u64) -> Vec<process_faults::ScheduledFault> {
    let plan = crate::plan::swarm::configure(plan, seed);
    let pool = process_faults::Pool {
        nodes: plan.system.nodes(),
        dynamic: plan.changes_membership(),
    };
    match &plan.nemesis.process {
        Some(spec) => process_faults::generate_in(&spec.value, pool, plan.time_limit.0, &mut stream(seed, "nemesis")),
        None => Vec::new(),
    }
}

/// The network-fault schedule (partitions, link faults) a plan and seed give: what a run of it draws when its system
/// takes network faults. Shared by the run and `faultline plan --schedule`, so the two cannot disagree.
pub fn network_fault_schedule(plan: &Plan, seed: u64) -> Vec<network_faults::ScheduledNetworkFault> {
    let plan = crate::plan::swarm::configure(plan, seed);
    match &plan.nemesis.network {
        Some(spec) => network_faults::generate(
            &spec.value,
            plan.system.nodes(),
            plan.time_limit.0,
            &mut stream(seed, "network"),
        ),
        None => Vec::new(),
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn run_meta(
    plan: &Plan,
    seed: u64,
    run_id: &str,
    node_binary: &Path,
    store_dir: &Path,
    node_ips: &[IpAddr],
    (network, system): (Option<&Network>, &dyn System),
) -> serde_json::Value {
    // The binaries are hashed first: the wall clock is read last, right before the event is stamped with the
    // history's clock, so the pair anchors node log lines to the history within a millisecond (read before the
    // hashing, it was 30-40 ms early, and a line seemed to come after the fault it fired).
    let faultline_xxh3 = std::env::current_exe().ok().and_then(|p| file_digest(&p));
    let node_xxh3 = file_digest(node_binary);
    let plan_digest = plan.digest();
    let now = std::time::SystemTime::now();
    let unix_ns = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    json!({
        "run_id": run_id,
        "plan": plan.name.0,
        "plan_digest": plan_digest,
        "seed": seed,
        "system": plan.system.kind(),
        "faultline_version": env!("CARGO_PKG_VERSION"),
        "faultline_binary_xxh3": faultline_xxh3,
        "node_binary": node_binary.display().to_string(),
        "node_binary_xxh3": node_xxh3,
        "wall_clock_start": humantime::format_rfc3339_millis(now).to_string(),
        "wall_clock_unix_ns": unix_ns,
        "node_ips": node_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "network_backend": network.map(|n| format!("{:?}", n.kind()).to_lowercase()),
        "ready_needs_quorum": system.ready_needs_quorum(),
        "repro": format!("faultline run --seed {seed} {}", store_dir.join("plan.yaml").display()),
    })
}

/// xxh3-128 of a file, hex (identifies the exact binaries a run used).
pub fn file_digest(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes)))
}
