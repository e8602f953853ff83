//! The `faultline-node` command line: `format`, `run`, `verify` and `dump` (see the crate docs in lib.rs).
//!
//! It lives in the library so that the `faultline` harness can embed the reference node (`faultline node ...`), which
//! keeps a fresh `cargo run --release -- run` working without a separate build of this binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use crate::api::{router, ApiState};
use crate::checkpoint::{self, CheckpointRef};
use crate::checksum::hex;
use crate::config::{Members, Reconfiguration, POOL_SIZE_MAX};
use crate::mutants::{Bug, Mutants};
use crate::network::{serve_inbound, Outbound};
use crate::replica::lease::LeaseConfig;
use crate::replica::{Replica, ReplicaConfig, StatusSnapshot};
use crate::superblock::{Superblock, VsrState};
use crate::wal::entry::{EntryHeader, HEADER_SIZE_BYTES};
use crate::wal::head::Head;
use crate::wal::journal::{scan_dir, Journal, JournalError, WAL_FILE_NAME};
use clap::{Parser, Subcommand, ValueEnum};

/// Default executed ops between checkpoints: the WAL holds one to two intervals (about 0.5 to 1 MiB of register
/// entries), and a replica lagging by less than one interval still repairs from prepares.
pub const DEFAULT_CHECKPOINT_INTERVAL_OPS: u64 = 4096;

/// Most events queued for the replica core (peer messages and client requests) before new ones are dropped.
const EVENT_QUEUE_MAX: usize = 16 * 1024;

#[derive(Parser)]
#[command(
    name = "faultline-node",
    version = concat!(env!("CARGO_PKG_VERSION"), " (source ", env!("FAULTLINE_NODE_SOURCE"), ")"),
    about = "A VSR replica with a hash-chained WAL (faultline's reference system)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a fresh superblock (and empty WAL) into a data dir.
    Format {
        /// Data dir (created if needed).
        #[arg(long)]
        data_dir: PathBuf,
        /// Cluster id.
        #[arg(long)]
        cluster_id: u64,
        /// This replica's id (0-based).
        #[arg(long)]
        id: u8,
        /// Number of replica ids in the pool (every replica the cluster may ever have, members or not; at most 16).
        #[arg(long)]
        replica_count: u8,
        /// The members of the first epoch, by id (`0,1,2`); default: every id of the pool.
        #[arg(long, value_delimiter = ',', conflicts_with = "join")]
        members: Vec<u8>,
        /// Mark the dir as wiped (or a joiner's): on `run` the replica learns the cluster's epoch and members from the
        /// others and does VSR recovery before it takes part (a joiner waits until it is added).
        #[arg(long)]
        join: bool,
        /// Overwrite an existing superblock (and delete the WAL).
        #[arg(long)]
        force: bool,
    },
    /// Runs the replica.
    Run(RunArgs),
    /// Runs the boot scan read-only and prints the verdict (exit 0 ok, 1 refused).
    Verify {
        /// Data dir.
        data_dir: PathBuf,
    },
    /// Prints the WAL entries in file order (op, view, parent, checksum, file offset).
    Dump {
        /// Data dir.
        data_dir: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// This replica's id (must match the superblock).
    #[arg(long)]
    id: u8,
    /// Data dir written by `faultline-node format`.
    #[arg(long)]
    data_dir: PathBuf,
    /// HTTP client API listen address.
    #[arg(long)]
    client_addr: String,
    /// Listen address for inbound replica connections.
    #[arg(long)]
    peer_addr: String,
    /// `ID=HOST:PORT`: where this replica dials replica ID (once per other replica, or one comma-separated list,
    /// as faultline's exec adapter hands out `{peers}`).
    #[arg(long = "peer", alias = "peers", value_parser = parse_peer, value_delimiter = ',')]
    peers: Vec<(u8, String)>,
    /// `ID=HOST:PORT`: the client API address of replica ID (named in 421 answers); repeated or comma-separated.
    #[arg(long = "peer-client", alias = "peer-clients", value_parser = parse_peer, value_delimiter = ',')]
    peer_clients: Vec<(u8, String)>,
    /// Expected cluster id (checked against the superblock).
    #[arg(long)]
    cluster_id: Option<u64>,
    /// Default client request deadline.
    #[arg(long, default_value_t = 5000)]
    request_timeout_ms: u64,
    /// Primary heartbeat interval.
    #[arg(long, default_value_t = 100)]
    heartbeat_interval_ms: u64,
    /// Base view-change timeout (each arm randomized in [t, 2t)).
    #[arg(long, default_value_t = 600)]
    view_change_timeout_ms: u64,
    /// Serve every read through the log, never on the primary's lease (and make no lease promises).
    #[arg(long)]
    no_lease_reads: bool,
    /// The read lease's clock bound: most a replica's clock rate differs from real time, in percent.
    #[arg(long, default_value_t = 10)]
    clock_drift_max_percent: u64,
    /// The read lease's clock bound: most a replica's clock jumps (forward or back) during one promise.
    #[arg(long, default_value_t = 100)]
    clock_jump_max_ms: u64,
    /// Log line format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Executed ops between checkpoints (a snapshot of the state machine; the WAL then drops what the previous
    /// one covers, and a replica too far behind catches up by state transfer). 0: never (the WAL grows forever).
    #[arg(long, default_value_t = DEFAULT_CHECKPOINT_INTERVAL_OPS)]
    checkpoint_interval_ops: u64,
    /// Turn on a documented bug (a "mutant", for faultline's detection matrix; see nodes/README.md). Repeatable.
    /// Off by default: never use it outside tests of the test harness itself.
    #[arg(long = "bug", value_enum, value_name = "NAME")]
    bugs: Vec<Bug>,
    /// The `--bug`s are on in only this share of data dirs: drawn once, at the first start on a data dir, and kept
    /// in it (`bug-draw`), so every restart of that replica has the same bugs. A mutant whose failure reproduces one
    /// time in K, for testing how faultline's shrink and replay deal with such failures.
    #[arg(long, value_name = "P", default_value_t = 1.0, value_parser = parse_probability)]
    bug_probability: f64,
}

fn parse_probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Ok(p),
        _ => Err(format!("expected a probability in (0, 1], got {text}")),
    }
}

/// The file in a data dir that keeps whether its `--bug`s were drawn on (`on` or `off`).
const BUG_DRAW_FILE: &str = "bug-draw";

/// Whether the `--bug`s are on for this data dir: drawn with `probability` at the first start, then as kept.
fn bugs_drawn_on(data_dir: &std::path::Path, probability: f64) -> std::io::Result<bool> {
    let path = data_dir.join(BUG_DRAW_FILE);
    match std::fs::read_to_string(&path) {
        Ok(kept) => Ok(kept.trim() == "on"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let on = rand::random::<f64>() < probability;
            std::fs::write(&path, if on { "on\n" } else { "off\n" })?;
            Ok(on)
        }
        Err(e) => Err(e),
    }
}

fn parse_peer(text: &str) -> Result<(u8, String), String> {
    let (id, address) = text
        .split_once('=')
        .ok_or_else(|| format!("expected ID=HOST:PORT, got {text}"))?;
    let id = id
        .trim()
        .parse::<u8>()
        .map_err(|e| format!("bad replica id in {text}: {e}"))?;
    if address.is_empty() {
        return Err(format!("empty address in {text}"));
    }
    Ok((id, address.to_string()))
}

fn init_logging(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Runs the node command line on `args` (the first item is the program name), as `main` does.
pub fn main_from_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Format {
            data_dir,
            cluster_id,
            id,
            replica_count,
            members,
            join,
            force,
        } => {
            init_logging(LogFormat::Text);
            let identity = Identity {
                cluster_id,
                id,
                replica_count,
            };
            format(&data_dir, identity, &members, join, force)
        }
        Command::Run(args) => {
            init_logging(args.log_format);
            run(args)
        }
        Command::Verify { data_dir } => verify(&data_dir),
        Command::Dump { data_dir } => dump(&data_dir),
    }
}

/// Who a replica is: its cluster, its id and the size of the pool of ids.
struct Identity {
    cluster_id: u64,
    id: u8,
    replica_count: u8,
}

/// The members `format` writes: the first epoch's (`--members`, default every id of the pool), or none for a joiner
/// (epoch 0), which learns them from the cluster.
fn first_members(identity: &Identity, members: &[u8], join: bool) -> Result<(u64, Members), String> {
    if join {
        return Ok((0, Members::NONE));
    }
    if members.is_empty() {
        return Ok((1, Members::first(identity.replica_count)));
    }
    let set = Members::from_ids(members.iter().copied())?;
    if let Some(outside) = set.ids().find(|&m| m >= identity.replica_count) {
        return Err(format!(
            "--members names replica {outside}, outside the pool of {} (ids 0..{})",
            identity.replica_count,
            identity.replica_count - 1
        ));
    }
    Ok((1, set))
}

fn format(dir: &Path, identity: Identity, members: &[u8], join: bool, force: bool) -> ExitCode {
    let Identity {
        cluster_id,
        id,
        replica_count,
    } = identity;
    if replica_count == 0 || replica_count > POOL_SIZE_MAX || id >= replica_count {
        tracing::error!(
            id,
            replica_count,
            "replica id must be below the replica count, which is at most {POOL_SIZE_MAX}"
        );
        return ExitCode::FAILURE;
    }
    let (epoch, members) = match first_members(&identity, members, join) {
        Ok(first) => first,
        Err(reason) => {
            tracing::error!("{reason}");
            return ExitCode::FAILURE;
        }
    };
    let superblock = Superblock {
        cluster_id,
        replica: id,
        replica_count,
        members,
        recovering: join,
        state: VsrState {
            epoch,
            ..VsrState::default()
        },
        checkpoint: CheckpointRef::default(),
        wal_base: Head { op: 0, checksum: 0 },
        acked: 0,
        sequence: 1,
    };
    match Superblock::format(dir, superblock, force) {
        Ok(()) => {
            tracing::info!(data_dir = %dir.display(), cluster_id, id, replica_count, %members, join, "formatted");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
    }
}

fn verify(dir: &Path) -> ExitCode {
    let superblock = match Superblock::open(dir) {
        Ok(superblock) => superblock,
        Err(error) => {
            println!("{error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = checkpoint::read(dir, superblock.checkpoint) {
        println!("{error}");
        return ExitCode::FAILURE;
    }
    match scan_dir(dir, superblock.cluster_id, superblock.wal_base) {
        Ok(report) => {
            let ops = report.entries.len();
            let op_max = report.entries.last().map_or(0, |e| e.entry.header.op);
            let base = match superblock.checkpoint.op {
                0 => String::new(),
                op => format!(" above the wal base {}, checkpoint at op {op}", superblock.wal_base.op),
            };
            let torn = match report.torn_tail {
                Some(torn) => format!(
                    "; torn tail at offset {} would be truncated: {}",
                    torn.offset_bytes, torn.reason
                ),
                None => String::new(),
            };
            // The contiguous head above the base, as the replica computes it at boot.
            let stored: std::collections::BTreeSet<u64> = report.entries.iter().map(|e| e.entry.header.op).collect();
            let mut head = superblock.wal_base.op;
            while stored.contains(&(head + 1)) {
                head += 1;
            }
            let lost = if superblock.acked > head && !superblock.recovering {
                format!(
                    "; the wal ends at op {head}, below the acknowledged mark {}: it lost acknowledged entries and \
                     its log is no candidate in a view change until it holds a view's log again",
                    superblock.acked
                )
            } else {
                String::new()
            };
            println!("ok: {ops} entries (op max {op_max}){base}{torn}{lost}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("{error}");
            ExitCode::FAILURE
        }
    }
}

fn dump(dir: &Path) -> ExitCode {
    let path = dir.join(WAL_FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            println!("wal {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut offset = 0usize;
    while offset < bytes.len() {
        match EntryHeader::decode(&bytes[offset..]) {
            Ok(header) => {
                let body_start = (offset + HEADER_SIZE_BYTES).min(bytes.len());
                let body_end = (body_start + header.size_bytes as usize).min(bytes.len());
                let reconfiguration = Reconfiguration::decode(&bytes[body_start..body_end])
                    .map(|r| {
                        format!(
                            " reconfiguration: epoch={} members={} start_view={}",
                            r.epoch, r.members, r.start_view
                        )
                    })
                    .unwrap_or_default();
                println!(
                    "op={} view={} parent={} checksum={} offset={} size={} client={} request={}{reconfiguration}",
                    header.op,
                    header.view,
                    hex(header.parent),
                    hex(header.checksum),
                    offset,
                    header.size_bytes,
                    header.client_id,
                    header.request_number
                );
                offset += HEADER_SIZE_BYTES + header.size_bytes as usize;
            }
            Err(error) => {
                println!("stop at offset={offset}: {error}");
                break;
            }
        }
    }
    ExitCode::SUCCESS
}

fn run(mut args: RunArgs) -> ExitCode {
    if !args.bugs.is_empty() && args.bug_probability < 1.0 {
        match bugs_drawn_on(&args.data_dir, args.bug_probability) {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!("the --bug draw of this data dir is off: running without the bugs");
                args.bugs.clear();
            }
            Err(e) => {
                tracing::error!("cannot keep the --bug draw in {}: {e}", args.data_dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    let superblock = match Superblock::open(&args.data_dir) {
        Ok(superblock) => superblock,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(reason) = check_identity(&args, &superblock) {
        tracing::error!("{reason}");
        return ExitCode::FAILURE;
    }
    tracing::info!(
        replica = args.id,
        cluster_id = superblock.cluster_id,
        replica_count = superblock.replica_count,
        data_dir = %args.data_dir.display(),
        "starting"
    );
    let mutants = Mutants::from_bugs(&args.bugs);
    if !mutants.is_empty() {
        tracing::warn!("MUTANT ACTIVE: {mutants}");
    }
    let checkpoint = match checkpoint::read(&args.data_dir, superblock.checkpoint) {
        Ok(checkpoint) => checkpoint,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let journal = match Journal::open_with_mutants(&args.data_dir, superblock.cluster_id, superblock.wal_base, mutants)
    {
        Ok((journal, torn)) => {
            if let Some(torn) = torn {
                tracing::warn!(offset = torn.offset_bytes, reason = %torn.reason, "torn tail truncated");
            }
            journal
        }
        Err(JournalError::Refused(refusal)) => {
            tracing::error!("{refusal}");
            return ExitCode::FAILURE;
        }
        Err(error) => {
            tracing::error!("{error}; refusing to boot");
            return ExitCode::FAILURE;
        }
    };
    install_panic_exit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(args, superblock, checkpoint, journal))
}

fn check_identity(args: &RunArgs, superblock: &Superblock) -> Result<(), String> {
    if args.id != superblock.replica {
        return Err(format!(
            "--id {} but the superblock belongs to replica {}",
            args.id, superblock.replica
        ));
    }
    if let Some(cluster_id) = args.cluster_id.filter(|&c| c != superblock.cluster_id) {
        return Err(format!(
            "--cluster-id {cluster_id} but the superblock says {}",
            superblock.cluster_id
        ));
    }
    let peers: Vec<u8> = args.peers.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u8> = (0..superblock.replica_count).filter(|&id| id != args.id).collect();
    let mut sorted = peers.clone();
    sorted.sort_unstable();
    if sorted != expected {
        return Err(format!(
            "--peer must name every other replica exactly once: got {peers:?}, expected {expected:?}"
        ));
    }
    Ok(())
}

/// A panic in any thread (an asserted invariant) stops the whole replica: a crash beats running on.
fn install_panic_exit() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        std::process::exit(101);
    }));
}

async fn serve(
    args: RunArgs,
    superblock: Superblock,
    checkpoint: Option<checkpoint::Loaded>,
    journal: Journal,
) -> ExitCode {
    let peer_listener = match tokio::net::TcpListener::bind(&args.peer_addr).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(address = %args.peer_addr, %error, "cannot listen on the peer address");
            return ExitCode::FAILURE;
        }
    };
    let client_listener = match tokio::net::TcpListener::bind(&args.client_addr).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(address = %args.client_addr, %error, "cannot listen on the client address");
            return ExitCode::FAILURE;
        }
    };
    let cluster = superblock.cluster_id;
    let peers: BTreeMap<u8, String> = args.peers.iter().cloned().collect();
    let outbound = Outbound::spawn(cluster, args.id, &peers);
    let published = Arc::new(Mutex::new(StatusSnapshot::default()));
    let Some(lease) = lease_config(&args) else {
        return ExitCode::FAILURE;
    };
    let config = ReplicaConfig {
        cluster,
        replica: args.id,
        replica_count: superblock.replica_count,
        data_dir: args.data_dir.clone(),
        heartbeat_interval_ms: args.heartbeat_interval_ms.max(1),
        view_change_timeout_ms: args.view_change_timeout_ms.max(1),
        checkpoint_interval_ops: args.checkpoint_interval_ops,
        mutants: Mutants::from_bugs(&args.bugs),
        lease,
    };
    let replica = match Replica::new(config, superblock, checkpoint, journal, outbound, published.clone()) {
        Ok(replica) => replica,
        Err(error) => {
            tracing::error!(%error, "cannot start the replica");
            return ExitCode::FAILURE;
        }
    };
    let (events, receiver) = std::sync::mpsc::sync_channel(EVENT_QUEUE_MAX);
    std::thread::Builder::new()
        .name("replica".to_string())
        .spawn(move || {
            if let Err(error) = replica.run(receiver) {
                tracing::error!(%error, "fatal: replica stopped");
                std::process::exit(2);
            }
        })
        .expect("spawn the replica thread");
    if let Err(error) = crate::replica::spawn_ticker(events.clone()) {
        tracing::error!(%error, "cannot start the replica's ticker thread");
        return ExitCode::FAILURE;
    }
    tokio::spawn(serve_inbound(
        peer_listener,
        cluster,
        args.id,
        config_count(&peers),
        events.clone(),
    ));
    let shutdown = events.clone();
    let mut client_addresses: BTreeMap<u8, String> = args.peer_clients.iter().cloned().collect();
    client_addresses.insert(args.id, args.client_addr.clone());
    let state = ApiState {
        events,
        status: published,
        client_addresses: Arc::new(client_addresses),
        request_timeout_ms: args.request_timeout_ms,
    };
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            tracing::error!(%error, "cannot listen for SIGTERM");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(client_addr = %args.client_addr, peer_addr = %args.peer_addr, "ready");
    tokio::select! {
        served = axum::serve(client_listener, router(state)) => {
            if let Err(error) = served {
                tracing::error!(%error, "client API stopped");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        _ = terminate.recv() => shut_down(shutdown).await,
    }
}

/// Bound on a clean stop: the replica's current loop iteration and its group fsync.
const SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A clean stop on SIGTERM (what operators do in a rolling restart): the client API stops answering (requests in
/// flight get no reply: their outcome is unknown to the client), the replica ends its loop after its group fsync,
/// and the process exits 0. Whatever it acknowledged is on disk, as after any fsync.
async fn shut_down(events: std::sync::mpsc::SyncSender<crate::replica::Event>) -> ExitCode {
    tracing::info!("SIGTERM: stopping");
    let (done, finished) = tokio::sync::oneshot::channel();
    // The queue is bounded; wait for room off the runtime.
    let sent = tokio::task::spawn_blocking(move || events.send(crate::replica::Event::Shutdown { done }).is_ok()).await;
    if !matches!(sent, Ok(true)) {
        tracing::error!("the replica is gone; exiting");
        return ExitCode::FAILURE;
    }
    match tokio::time::timeout(SHUTDOWN_TIMEOUT, finished).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => {
            tracing::error!(timeout = ?SHUTDOWN_TIMEOUT, "the replica did not stop in time; exiting");
            ExitCode::FAILURE
        }
    }
}

/// The read-lease settings of `run`, or `None` (logged) when the clock bound leaves no lease: a backup promises
/// for the view-change timeout's lower bound, and the primary's lease is that minus the drift margin.
fn lease_config(args: &RunArgs) -> Option<LeaseConfig> {
    let lease = LeaseConfig {
        enabled: !args.no_lease_reads,
        promise_ms: args.view_change_timeout_ms.max(1),
        drift_max_percent: args.clock_drift_max_percent,
        jump_max_ms: args.clock_jump_max_ms,
        ignores_drift: args.bugs.contains(&Bug::LeaseIgnoresDrift),
    };
    if !lease.enabled {
        return Some(lease);
    }
    if args.clock_drift_max_percent >= 100 {
        tracing::error!(
            clock_drift_max_percent = args.clock_drift_max_percent,
            "--clock-drift-max-percent must be below 100"
        );
        return None;
    }
    let read_lease_ms = lease.read_lease_ms();
    if read_lease_ms == 0 {
        tracing::error!(
            promise_ms = lease.promise_ms,
            clock_drift_max_percent = lease.drift_max_percent,
            clock_jump_max_ms = lease.jump_max_ms,
            "the clock bound leaves no read lease: raise --view-change-timeout-ms, lower --clock-jump-max-ms or \
             --clock-drift-max-percent, or pass --no-lease-reads"
        );
        return None;
    }
    if read_lease_ms <= args.heartbeat_interval_ms {
        tracing::warn!(
            read_lease_ms,
            heartbeat_interval_ms = args.heartbeat_interval_ms,
            "the read lease is not longer than the heartbeat interval: most reads will go through the log"
        );
    }
    tracing::info!(
        read_lease_ms,
        promise_ms = lease.promise_ms,
        clock_drift_max_percent = lease.drift_max_percent,
        clock_jump_max_ms = lease.jump_max_ms,
        "read leases on"
    );
    Some(lease)
}

fn config_count(peers: &BTreeMap<u8, String>) -> u8 {
    peers.len() as u8 + 1
}
