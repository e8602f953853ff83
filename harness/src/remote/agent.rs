//! `faultline agent`: faultline's hands on a host it reaches over SSH. The control runs it over the SSH channel and
//! speaks JSON lines to it (stdin: requests, stdout: answers and events; `plans/exec/AGENT.md` is the protocol). On
//! its host it does what the harness does locally: starts node processes (own process group, parent-death signal,
//! output appended to a log file), signals them (only the processes it started), reads files back (logs, node
//! files), and tells the control when a process exits. Every answer and event carries the agent's monotonic clock,
//! which the control maps to its own ([`super::clock`]).
//!
//! The agent lives exactly as long as its channel: when stdin closes (the control exited, was SIGKILLed, or the SSH
//! connection dropped) it SIGKILLs every process group it started and exits, so nothing it started outlives it.

use super::workbench::{take_preload, FileWrite, Workbench};
use crate::supervisor::{signal_group, LaunchCommand};
use base64::Engine;
use faultline_faults::network::proxy::{ProxyId, ProxyLimits, ProxyMesh, ProxySpec};
use faultline_faults::network::Link;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

pub use super::protocol::{Envelope, Request, PROTOCOL, READ_MAX};

/// The agent's monotonic clock, ns (CLOCK_MONOTONIC: the one the control maps).
pub fn mono_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The wall clock, ns since the epoch.
pub fn real_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// This executable's build id: the xxh3 of its bytes, as 16 hex digits. The control compares it with its own to
/// know an uploaded copy is whole and the same build.
pub fn build_id() -> std::io::Result<String> {
    build_id_of(std::path::Path::new("/proc/self/exe"))
}

/// The build id of the executable at `path`.
pub fn build_id_of(path: &std::path::Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(format!("{:016x}", hasher.digest()))
}

/// What the host can do, for the control's preflight: root, FUSE, nft, tc (netem), libfaketime.
fn capabilities() -> Value {
    let on_path = |program: &str| {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
            .unwrap_or(false)
            || ["/usr/sbin", "/sbin"]
                .iter()
                .any(|dir| std::path::Path::new(dir).join(program).is_file())
    };
    let faketime = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .iter()
    .find(|p| std::path::Path::new(p).is_file());
    json!({
        "root": nix::unistd::geteuid().is_root(),
        "fuse": std::path::Path::new("/dev/fuse").exists(),
        "nft": on_path("nft"),
        "tc": on_path("tc"),
        "libfaketime": faketime,
    })
}

/// This agent's own nftables table (one per agent, so two runs' agents on one host never touch each other's).
fn firewall_table() -> String {
    format!("faultline_agent_{}", std::process::id())
}

/// Runs an nft script (`nft -f -`).
fn nft(script: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = std::process::Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run nft (install nftables on this host): {e}"))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())
        .map_err(|e| format!("cannot write to nft: {e}"))?;
    let output = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "nft refused the rules: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// What a `sweep` does on this host (`faultline clean`'s sweep of what dead agents and runs left, which lives with
/// the run's cleanup; given by the command that starts the agent). Blocking.
pub type Sweeper = fn(bool) -> Value;

/// The processes this agent started, by pid (the leaders of their groups).
type Started = Arc<Mutex<BTreeMap<i32, ()>>>;

/// What the agent holds for its control: the processes it started, its workbench (mounts, surgeons, clocks) and
/// its node's peer proxies.
#[derive(Clone, Default)]
struct Holdings {
    started: Started,
    bench: Arc<Workbench>,
    mesh: Arc<Mutex<Option<Arc<ProxyMesh>>>>,
    /// The run lock of the host, while this agent holds it.
    claim: Arc<Mutex<Option<nix::fcntl::Flock<std::fs::File>>>>,
    /// The folder it claimed.
    claimed_dir: Arc<Mutex<Option<PathBuf>>>,
}

impl Holdings {
    fn mesh(&self) -> Result<Arc<ProxyMesh>, String> {
        self.mesh
            .lock()
            .expect("mesh lock")
            .clone()
            .ok_or_else(|| "no proxies run on this host (`mesh-start` first)".to_string())
    }
}

/// Runs the agent on stdin/stdout until the control asks it to shut down, or its channel closes and (with a
/// `linger`) no reattach comes within it ([`super::session`]); then kills what it started. Returns the process
/// exit code.
pub async fn serve(sweep: Sweeper, linger: std::time::Duration) -> u8 {
    // The reattach socket lives beside the executable: the host's faultline workdir, which only its user may enter.
    let socket_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir);
    let mut channel = super::session::Channel::open(linger, &socket_dir);
    let out_tx = channel.sender();
    let held = Holdings::default();
    while let Some(line) = channel.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let envelope: Envelope = match serde_json::from_str(&line) {
            Ok(envelope) => envelope,
            Err(e) => {
                let id = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["id"].as_u64());
                let _ = out_tx.send(json!({"id": id, "error": format!("bad request: {e}"), "mono_ns": mono_ns()}));
                continue;
            }
        };
        if matches!(envelope.request, Request::Shutdown) {
            let _ = out_tx.send(json!({"id": envelope.id, "ok": {}, "mono_ns": mono_ns()}));
            break;
        }
        let hello = matches!(envelope.request, Request::Hello);
        let answer = match handle(envelope.request, (&held, sweep), &out_tx).await {
            Ok(mut ok) if hello => {
                ok["resume"] = channel.resume();
                json!({"id": envelope.id, "ok": ok, "mono_ns": mono_ns()})
            }
            Ok(ok) => json!({"id": envelope.id, "ok": ok, "mono_ns": mono_ns()}),
            Err(error) => json!({"id": envelope.id, "error": error, "mono_ns": mono_ns()}),
        };
        let _ = out_tx.send(answer);
    }
    // The channel is gone (or the control asked): nothing this agent started may outlive it, nor its firewall.
    let pids: Vec<i32> = held.started.lock().expect("started lock").keys().copied().collect();
    for pid in pids {
        let _ = signal_group(pid, Signal::SIGKILL);
    }
    // Then its mounts (lazily where a killed process still holds a file there).
    let bench = held.bench.clone();
    if let Ok(errors) = tokio::task::spawn_blocking(move || bench.unmount_all()).await {
        for error in errors {
            eprintln!("faultline agent: unmounting {error}");
        }
    }
    let table = firewall_table();
    let _ = nft(&format!("add table inet {table}\ndelete table inet {table}\n"));
    drop(out_tx);
    channel.finish().await;
    0
}

/// Runs `work` on the agent's workbench on a blocking thread (it touches the disk).
async fn on_bench<T: Send + 'static>(
    held: &Holdings,
    work: impl FnOnce(&Workbench) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let bench = held.bench.clone();
    tokio::task::spawn_blocking(move || work(&bench))
        .await
        .map_err(|e| format!("the agent's worker failed: {e}"))?
}

async fn handle(
    request: Request,
    (held, sweep): (&Holdings, Sweeper),
    out: &mpsc::UnboundedSender<Value>,
) -> Result<Value, String> {
    let started = &held.started;
    match request {
        Request::Hello => Ok(json!({
            "protocol": PROTOCOL,
            "version": env!("CARGO_PKG_VERSION"),
            "build": build_id().map_err(|e| format!("cannot read /proc/self/exe: {e}"))?,
            "pid": std::process::id(),
            "uid": nix::unistd::geteuid().as_raw(),
            "hostname": std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim(),
            "kernel": nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default(),
            "capabilities": capabilities(),
            // The address the control's SSH connection came in on: where the control reaches this host.
            "ssh_address": std::env::var("SSH_CONNECTION").ok().and_then(|c| c.split_whitespace().nth(2).map(str::to_string)),
        })),
        Request::Clock => Ok(json!({"real_ns": real_ns()})),
        Request::Spawn {
            argv,
            env,
            cwd,
            log,
            clock,
        } => spawn((argv, env, cwd, log), clock.as_deref(), held, out),
        Request::Run {
            argv,
            env,
            cwd,
            timeout_ms,
        } => {
            let (program, args) = argv.split_first().ok_or("run: `argv` is empty")?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .envs(env)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let output = tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), cmd.output())
                .await
                .map_err(|_| format!("`{program}` did not end within {timeout_ms} ms (killed)"))?
                .map_err(|e| format!("cannot run `{program}`: {e}"))?;
            use std::os::unix::process::ExitStatusExt;
            let encode = |bytes: &[u8]| {
                let kept = &bytes[bytes.len().saturating_sub(READ_MAX as usize)..];
                base64::engine::general_purpose::STANDARD.encode(kept)
            };
            Ok(
                json!({"status": output.status.into_raw(), "stdout": encode(&output.stdout), "stderr": encode(&output.stderr)}),
            )
        }
        Request::Signal { pid, signal } => {
            let signal = Signal::from_str(&signal).map_err(|_| format!("unknown signal `{signal}`"))?;
            if !started.lock().expect("started lock").contains_key(&pid) {
                return Err(format!(
                    "pid {pid} is not a process this agent started; it signals only its own"
                ));
            }
            signal_group(pid, signal)?;
            Ok(json!({}))
        }
        Request::GroupAlive { pid } => {
            if !started.lock().expect("started lock").contains_key(&pid) {
                return Err(format!("pid {pid} is not a process this agent started"));
            }
            Ok(json!({"alive": crate::supervisor::group_has_live_members(pid)}))
        }
        Request::Read { path, offset, max } => {
            let mut file = std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            let size = file.metadata().map_err(|e| e.to_string())?.len();
            let want = max.unwrap_or(READ_MAX).min(READ_MAX);
            file.seek(SeekFrom::Start(offset)).map_err(|e| e.to_string())?;
            let mut data = Vec::new();
            file.take(want).read_to_end(&mut data).map_err(|e| e.to_string())?;
            Ok(json!({"size": size, "data": base64::engine::general_purpose::STANDARD.encode(&data)}))
        }
        Request::Deafen { from, loss } => {
            let table = firewall_table();
            // Created if missing, then replaced as a whole: one atomic transaction.
            let mut script = format!("add table inet {table}\ndelete table inet {table}\n");
            if !from.is_empty() || !loss.is_empty() {
                let (v4, v6): (Vec<&std::net::IpAddr>, Vec<&std::net::IpAddr>) =
                    from.iter().partition(|ip| ip.is_ipv4());
                script.push_str(&format!(
                    "table inet {table} {{\n  chain input {{\n    type filter hook input priority -10; policy accept;\n"
                ));
                for (family, ips) in [("ip", v4), ("ip6", v6)] {
                    if !ips.is_empty() {
                        let list: Vec<String> = ips.iter().map(ToString::to_string).collect();
                        script.push_str(&format!("    {family} saddr {{ {} }} drop\n", list.join(", ")));
                    }
                }
                for lossy in &loss {
                    let family = if lossy.from.is_ipv4() { "ip" } else { "ip6" };
                    // `numgen random mod 100` is 0..=99: all of it is a plain drop.
                    let share = match lossy.percent {
                        100.. => String::new(),
                        percent => format!("numgen random mod 100 < {percent} "),
                    };
                    script.push_str(&format!("    {family} saddr {} {share}drop\n", lossy.from));
                }
                script.push_str("  }\n}\n");
            }
            nft(&script)?;
            Ok(json!({"table": table, "deaf_to": from, "loss": loss}))
        }
        Request::FsMount {
            mountpoint,
            backing,
            options,
        } => {
            let tag = faultline_faults::fusefs::run_tag("agent");
            on_bench(held, move |bench| bench.mount(&backing, &mountpoint, &tag, options)).await?;
            Ok(json!({"tag": faultline_faults::fusefs::run_tag("agent")}))
        }
        Request::FsLoseUnsynced { mountpoint } => on_bench(held, move |bench| bench.lose_unsynced(&mountpoint)).await,
        Request::FsFaults { mountpoint, faults } => {
            on_bench(held, move |bench| bench.set_io_faults(&mountpoint, &faults)).await?;
            Ok(json!({}))
        }
        Request::FsUnmount { mountpoint } => {
            on_bench(held, move |bench| bench.unmount(&mountpoint)).await?;
            Ok(json!({}))
        }
        Request::Cut {
            dir,
            cut,
            seed,
            stream,
            keep,
        } => on_bench(held, move |bench| bench.cut(&dir, &cut, (seed, &stream), keep)).await,
        Request::ClockEnable { dir } => {
            held.bench.enable_clock(&dir)?;
            Ok(json!({"file": dir.join(faultline_faults::clock::faketime::CONTROL_FILE)}))
        }
        // On the agent's runtime: a strobe flips the clock on a task of its own.
        Request::ClockSet { dir, shift } => held.bench.set_clock(&dir, shift),
        Request::MeshStart {
            node_count,
            me,
            upstreams,
            seed,
        } => start_mesh(held, (node_count, me), upstreams, seed).await,
        Request::MeshSet { from, to, fault } => {
            held.mesh()?
                .set_link_fault(Link::new(from, to), fault)
                .map_err(|e| e.to_string())?;
            Ok(json!({}))
        }
        Request::MeshClear { from, to, kind } => {
            held.mesh()?.clear_link_fault(Link::new(from, to), kind);
            Ok(json!({}))
        }
        Request::Claim { dir, run } => claim(held, &dir, &run),
        Request::Sweep { dry_run } => tokio::task::spawn_blocking(move || sweep(dry_run))
            .await
            .map_err(|e| format!("the sweep failed: {e}")),
        Request::MakeDir { dir, mode } => {
            super::workbench::make_dir(&dir, mode)?;
            Ok(json!({}))
        }
        Request::Write {
            path,
            data,
            append,
            mode,
        } => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| format!("the data for {} is not base64: {e}", path.display()))?;
            let how = match append {
                true => FileWrite::Append,
                false => FileWrite::Durable { mode },
            };
            on_bench(held, move |_| super::workbench::write_file(&path, &bytes, how)).await?;
            Ok(json!({}))
        }
        Request::EmptyDir { dir } => {
            on_bench(held, move |_| super::workbench::empty_dir(&dir)).await?;
            Ok(json!({}))
        }
        Request::List { dir } => {
            let mut files = Vec::new();
            list_files(&dir, &dir, &mut files).map_err(|e| format!("listing {}: {e}", dir.display()))?;
            Ok(json!({ "files": files }))
        }
        Request::Remove { path } => {
            let claimed = held.claimed_dir.lock().expect("claim lock").clone();
            let inside = claimed.is_some_and(|dir| {
                path.is_absolute()
                    && path.starts_with(dir.join("runs"))
                    && !path.components().any(|c| c == std::path::Component::ParentDir)
            });
            if !inside {
                return Err(format!(
                    "{} is not inside runs/ of the folder this agent claimed; it removes nothing else",
                    path.display()
                ));
            }
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
                Ok(_) => std::fs::remove_file(&path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            }
            .map_err(|e| format!("removing {}: {e}", path.display()))?;
            Ok(json!({}))
        }
        Request::MeshClearAll => {
            if let Some(mesh) = held.mesh.lock().expect("mesh lock").as_ref() {
                mesh.clear_link_faults();
            }
            Ok(json!({}))
        }
        Request::Shutdown => unreachable!("handled by the loop"),
    }
}

/// Takes the host's run lock in `dir` for `run` (see [`Request::Claim`]).
fn claim(held: &Holdings, dir: &std::path::Path, run: &str) -> Result<Value, String> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(".faultline-run.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut file = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut file, _)) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(format!(
            "this host is busy: another faultline run holds {} ({}); one run at a time on a host (its nodes' ports \
             are fixed), so wait for it to end or give this run other hosts",
            path.display(),
            holder.trim()
            ));
        }
    };
    file.set_len(0).map_err(|e| e.to_string())?;
    writeln!(
        file,
        "run {run}, agent pid {}, since {}",
        std::process::id(),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now())
    )
    .map_err(|e| e.to_string())?;
    *held.claim.lock().expect("claim lock") = Some(file);
    *held.claimed_dir.lock().expect("claim lock") = Some(dir.to_path_buf());
    Ok(json!({"lock": path}))
}

/// Appends every regular file under `dir` to `files` (`{path, size}`, path relative to `root`).
fn list_files(root: &std::path::Path, dir: &std::path::Path, files: &mut Vec<Value>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            list_files(root, &entry.path(), files)?;
        } else if kind.is_file() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            files.push(json!({"path": relative, "size": entry.metadata()?.len()}));
        }
    }
    Ok(())
}

/// Starts node `me`'s peer proxies on this host's loopback (replacing any); where `me` dials each node.
async fn start_mesh(
    held: &Holdings,
    (node_count, me): (usize, usize),
    upstreams: Vec<std::net::SocketAddr>,
    seed: u64,
) -> Result<Value, String> {
    if me >= node_count || upstreams.len() != node_count {
        return Err(format!(
            "mesh-start: node {me} of {node_count} with {} upstreams",
            upstreams.len()
        ));
    }
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let specs = (0..node_count)
        .filter(|&to| to != me)
        .map(|to| ProxySpec {
            id: ProxyId::Peer(Link::new(me, to)),
            listen: loopback,
            upstream: upstreams[to],
        })
        .collect();
    let mesh = ProxyMesh::start(node_count, specs, ProxyLimits::default(), seed)
        .await
        .map_err(|e| format!("starting the proxies: {e}"))?;
    let routes: Vec<std::net::SocketAddr> = (0..node_count)
        .map(|to| match to == me {
            true => upstreams[me],
            false => mesh
                .listen_addr(ProxyId::Peer(Link::new(me, to)))
                .expect("every other node has its proxy"),
        })
        .collect();
    *held.mesh.lock().expect("mesh lock") = Some(Arc::new(mesh));
    Ok(json!({ "routes": routes }))
}

/// What a `spawn` starts: program and arguments, environment, working directory, log.
type SpawnOrder = (Vec<String>, BTreeMap<String, String>, Option<PathBuf>, PathBuf);

fn spawn(
    (argv, env, cwd, log): SpawnOrder,
    clock: Option<&std::path::Path>,
    held: &Holdings,
    out: &mpsc::UnboundedSender<Value>,
) -> Result<Value, String> {
    let started = &held.started;
    let (program, args) = argv.split_first().ok_or("spawn: `argv` is empty")?;
    let mut env: Vec<(String, String)> = env.into_iter().collect();
    if let Some(dir) = clock {
        let preload = take_preload(&mut env, false, std::env::var("LD_PRELOAD").ok());
        env.extend(held.bench.clock_env(dir, preload.as_deref())?);
    }
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("cannot open the log {}: {e}", log.display()))
    };
    let command = LaunchCommand {
        program: program.into(),
        args: args.to_vec(),
        env,
        env_clear: false,
        user: None,
    };
    // Tagged with the agent's own id, which no run lock names: a local `faultline clean` leaves them alone, and a
    // sweep of a host finds what an agent that died left behind.
    let mut cmd = crate::supervisor::owned_command(&command, &format!("agent-{}", std::process::id()));
    cmd.stdin(std::process::Stdio::null())
        .stdout(open()?)
        .stderr(open()?)
        .kill_on_drop(false);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let started_at = mono_ns();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let pid = child.id().ok_or("the process exited before it had a pid")? as i32;
    crate::supervisor::track_group(pid);
    started.lock().expect("started lock").insert(pid, ());
    if let Some(dir) = clock {
        held.bench.clock_spawned(dir)?;
    }
    let (out, started) = (out.clone(), started.clone());
    tokio::spawn(async move {
        let status = child.wait().await;
        use std::os::unix::process::ExitStatusExt;
        let (code, signal) = match &status {
            Ok(s) => (s.code(), s.signal()),
            Err(_) => (None, None),
        };
        // The group's leader is gone; its group may still have members, which the control's next kill reaches
        // only while the pid is still ours: keep it until the agent ends.
        let _ = started;
        let signal = signal
            .and_then(|s| Signal::try_from(s).ok())
            .map(|s| s.as_str().to_string());
        let _ = out.send(json!({"event": "exit", "pid": pid, "code": code, "signal": signal, "mono_ns": mono_ns()}));
    });
    Ok(json!({"pid": pid, "started_mono_ns": started_at}))
}
