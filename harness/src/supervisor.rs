//! Node supervision: the harness owns every process it starts, and only ever signals those.
//!
//! - Every node runs in its own process group, so a signal reaches the node and any children it forks.
//! - Every node gets `PR_SET_PDEATHSIG = SIGKILL`. The kernel sends it when the *thread* that forked the child exits,
//!   not the process, so all spawns happen on one long-lived spawner thread that lives as long as the harness.
//!   If the harness is SIGKILLed, the kernel kills every node.
//! - Every node's environment carries `FAULTLINE_RUN_ID`, so the startup sweep of a later run can recognise leftovers
//!   of a crashed run (and nothing else).
//! - A registry of live process groups lets Ctrl-C and panic paths kill them all before exiting.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Environment variable that tags a process with the run that spawned it.
pub const RUN_ID_ENV: &str = "FAULTLINE_RUN_ID";

/// Variables a node started with `env_clear` still inherits.
const KEPT_ENV: &[&str] = &["PATH", "HOME"];

/// Process groups this harness spawned and that have not been reaped yet.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// This executable as a path that runs *this* build: its own path while that still names it, else
/// `/proc/<pid>/exe` (a rebuild that replaced or deleted the file during a long campaign must not make children fail
/// to start, or run a different build than the one that started). `/proc/<pid>/exe`, unlike `/proc/self/exe`, means
/// this process from any process, e.g. through `ip netns exec`.
pub fn self_exe() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let exe = std::env::current_exe()?;
    let running = std::fs::metadata("/proc/self/exe")?;
    match std::fs::metadata(&exe) {
        Ok(file) if file.ino() == running.ino() && file.dev() == running.dev() => Ok(exe),
        _ => Ok(PathBuf::from(format!("/proc/{}/exe", std::process::id()))),
    }
}

/// A command to start one node.
#[derive(Debug, Clone)]
pub struct LaunchCommand {
    /// Executable.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (only `PATH`, `HOME` and the run id are kept) instead of inheriting the
    /// harness's: for systems that reject unknown variables of their own prefix.
    pub env_clear: bool,
    /// The user it runs as (an exec plan's `system.user`); `None`: as the harness (root).
    pub user: Option<Arc<RunAs>>,
}

/// A user a command runs as: its ids and groups are set between fork and exec, and `HOME`, `USER` and `LOGNAME`
/// name it, as `runuser` would (the harness stays root, so it can still signal, chown and unmount).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Every group it is in (its primary group too), as `initgroups` would set them.
    pub groups: Vec<u32>,
    /// Its home directory.
    pub home: PathBuf,
}

impl RunAs {
    /// Looks `name` up in the user database (`/etc/passwd`, `/etc/group`, or whatever NSS is configured).
    pub fn lookup(name: &str) -> Result<RunAs, String> {
        let user = nix::unistd::User::from_name(name)
            .map_err(|e| format!("cannot look user `{name}` up: {e}"))?
            .ok_or_else(|| format!("there is no user `{name}` on this machine (create it, e.g. `useradd --system {name}`, or install the package that does)"))?;
        let c_name = std::ffi::CString::new(name).map_err(|_| format!("`{name}` is not a user name"))?;
        let groups = nix::unistd::getgrouplist(&c_name, user.gid)
            .map_err(|e| format!("cannot list the groups of user `{name}`: {e}"))?;
        Ok(RunAs {
            name: name.to_string(),
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups: groups.into_iter().map(|g| g.as_raw()).collect(),
            home: user.dir,
        })
    }

    /// `setpriv`'s arguments that make the command after them run as this user (ids and every group), for a
    /// command whose own start must stay root (`ip netns exec`).
    pub fn setpriv_args(&self) -> Vec<String> {
        let groups: Vec<String> = self.groups.iter().map(u32::to_string).collect();
        let mut args = vec![format!("--reuid={}", self.uid), format!("--regid={}", self.gid)];
        args.push(if groups.is_empty() {
            "--clear-groups".to_string()
        } else {
            format!("--groups={}", groups.join(","))
        });
        args.push("--".to_string());
        args
    }

    /// The environment that names the user.
    pub(crate) fn env(&self) -> [(&'static str, std::ffi::OsString); 3] {
        [
            ("HOME", self.home.clone().into_os_string()),
            ("USER", self.name.clone().into()),
            ("LOGNAME", self.name.clone().into()),
        ]
    }

    /// Whether the user may enter (search) directory `dir`, by its mode bits alone (no ACLs).
    pub fn can_search(&self, metadata: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        let mode = metadata.mode();
        if metadata.uid() == self.uid {
            mode & 0o100 != 0
        } else if self.groups.contains(&metadata.gid()) || metadata.gid() == self.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        }
    }
}

impl LaunchCommand {
    /// The command as one shell-like line, for logs and reports.
    pub fn display(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with a code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
    /// Unknown: the node's host went away (the connection to its agent closed), and the process with it.
    HostLost,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::HostLost => write!(f, "its host went away (the connection to its agent closed)"),
            Exit::Signal(sig) => {
                let name = Signal::try_from(*sig).map(|s| s.as_str()).unwrap_or("?");
                write!(f, "signal {sig} ({name})")
            }
        }
    }
}

/// A started process: its pid (= its process group id) and a watch that turns `Some` when it has exited.
#[derive(Debug, Clone)]
pub struct Spawned {
    /// Process id and process group id.
    pub pid: i32,
    /// Becomes `Some(exit)` once the process is reaped.
    pub exited: tokio::sync::watch::Receiver<Option<Exit>>,
}

struct SpawnRequest {
    command: LaunchCommand,
    log_path: PathBuf,
    reply: tokio::sync::oneshot::Sender<std::io::Result<Spawned>>,
}

/// Spawns processes from one long-lived thread (see the module docs for why).
#[derive(Clone)]
pub struct Supervisor {
    tx: std::sync::mpsc::Sender<SpawnRequest>,
    run_id: String,
}

impl Supervisor {
    /// Starts the spawner thread. It lives until the process exits.
    pub fn start(run_id: &str) -> Supervisor {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        let tag = run_id.to_string();
        std::thread::Builder::new()
            .name("faultline-spawner".into())
            .spawn(move || {
                for request in rx {
                    let result = spawn_now(&request.command, &request.log_path, &tag);
                    let _ = request.reply.send(result);
                }
                // All senders dropped: keep this thread alive anyway, so PDEATHSIG does not fire for children that
                // are still running (it is tied to this thread's life).
                loop {
                    std::thread::park();
                }
            })
            .expect("spawning the supervisor thread");
        Supervisor {
            tx,
            run_id: run_id.to_string(),
        }
    }

    /// The run id every spawned process is tagged with.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Starts `command` with stdout and stderr appended to `log_path`.
    pub async fn spawn(&self, command: LaunchCommand, log_path: PathBuf) -> std::io::Result<Spawned> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(SpawnRequest {
                command,
                log_path,
                reply,
            })
            .map_err(|_| std::io::Error::other("the supervisor thread is gone"))?;
        rx.await
            .map_err(|_| std::io::Error::other("the supervisor thread dropped a spawn request"))?
    }
}

fn spawn_now(command: &LaunchCommand, log_path: &PathBuf, run_id: &str) -> std::io::Result<Spawned> {
    let mut log = OpenOptions::new().create(true).append(true).open(log_path)?;
    writeln!(
        log,
        "=== faultline: starting `{}` at {} ===",
        command.display(),
        humantime::format_rfc3339_millis(std::time::SystemTime::now())
    )?;
    let stderr_log = log.try_clone()?;
    let parent_pid = std::process::id() as i32;
    let mut cmd = Command::new(&command.program);
    if command.env_clear {
        cmd.env_clear();
        for kept in KEPT_ENV {
            if let Some(value) = std::env::var_os(kept) {
                cmd.env(kept, value);
            }
        }
    }
    if let Some(user) = &command.user {
        cmd.envs(user.env());
    }
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .env(RUN_ID_ENV, run_id)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr_log)
        .process_group(0);
    // SAFETY: the hook makes only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(die_with_parent(parent_pid, command.user.clone()));
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start {}: {e}", command.program.display())))?;
    let pid = child.id() as i32;
    LIVE_GROUPS.lock().expect("live-group registry poisoned").insert(pid);
    let (tx, exited) = tokio::sync::watch::channel(None);
    std::thread::Builder::new()
        .name(format!("faultline-reap-{pid}"))
        .spawn(move || {
            let exit = match child.wait() {
                Ok(status) => match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(sig)) => Exit::Signal(sig),
                    (None, None) => Exit::Code(-1),
                },
                Err(_) => Exit::Code(-1),
            };
            // The group leader is gone; SIGKILL stragglers it may have forked, then forget the group.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            LIVE_GROUPS.lock().expect("live-group registry poisoned").remove(&pid);
            let _ = tx.send(Some(exit));
        })?;
    Ok(Spawned { pid, exited })
}

/// A command for a helper process the harness owns but does not supervise as a node (an exec system's client
/// processes): its own process group, the run id in its environment, and a parent-death signal. The signal is tied
/// to the spawning thread, so spawn it from a runtime worker (they live as long as the run), never from a blocking
/// pool thread; [`track_group`] it so Ctrl-C and panic paths kill it, and [`kill_and_forget_group`] it when done.
pub fn owned_command(command: &LaunchCommand, run_id: &str) -> tokio::process::Command {
    let parent_pid = std::process::id() as i32;
    let mut cmd = tokio::process::Command::new(&command.program);
    if let Some(user) = &command.user {
        cmd.envs(user.env());
    }
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .env(RUN_ID_ENV, run_id)
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: the hook makes only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(die_with_parent(parent_pid, command.user.clone()));
    }
    cmd
}

/// A one-shot command (`prepare`, `wipe`, `verify`, a ready probe): program, arguments, environment and, with a
/// `user`, that user's ids and groups. It runs in the harness's process group and is killed when dropped.
pub fn one_shot_command(command: &LaunchCommand) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&command.program);
    if let Some(user) = &command.user {
        cmd.envs(user.env());
        let user = user.clone();
        // SAFETY: the hook makes only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || become_user(&user));
        }
    }
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    cmd
}

/// The child side of [`RunAs`], between fork and exec: supplementary groups, then the group, then the user (in
/// that order: each step needs the privilege the next one drops). Only async-signal-safe calls (the group list was
/// built before the fork).
fn become_user(user: &RunAs) -> std::io::Result<()> {
    // SAFETY: setgroups reads `groups.len()` gids from a live slice; setgid and setuid take plain ids.
    unsafe {
        if libc::setgroups(user.groups.len(), user.groups.as_ptr()) != 0
            || libc::setgid(user.gid) != 0
            || libc::setuid(user.uid) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The child side of the parent-death signal, run between fork and exec: first become `user` (if any: a change of
/// credentials clears the parent-death signal, so it comes before the signal is armed), then SIGKILL when the
/// spawning thread dies, and exit at once if the harness (`parent_pid`) already died before the signal was armed.
/// Only async-signal-safe calls (setgroups, setgid, setuid, prctl, getppid, _exit).
fn die_with_parent(
    parent_pid: i32,
    user: Option<Arc<RunAs>>,
) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    move || {
        if let Some(user) = &user {
            become_user(user)?;
        }
        // SAFETY: prctl, getppid and _exit are async-signal-safe and touch no memory of the parent.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The harness may have died between fork and prctl: then nobody would kill us later.
            if libc::getppid() != parent_pid {
                libc::_exit(137);
            }
        }
        Ok(())
    }
}

/// Registers a process group spawned with [`owned_command`] (so [`kill_all_spawned`] reaches it).
pub fn track_group(pid: i32) {
    LIVE_GROUPS.lock().expect("live-group registry poisoned").insert(pid);
}

/// Whether process group `pgid` still has a member that is not a zombie (a zombie holds no ports or files), or a
/// descendant outside it that [`signal_group`] killed with it still lives. Read from /proc, since `kill(-pgid, 0)`
/// also counts zombies, which nobody may reap soon (orphans go to init).
pub fn group_has_live_members(pgid: i32) -> bool {
    if strays_alive(pgid) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so read after its last `)`.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
    })
}

/// SIGKILLs a group registered with [`track_group`] and forgets it.
pub fn kill_and_forget_group(pid: i32) {
    let mut groups = LIVE_GROUPS.lock().expect("live-group registry poisoned");
    if groups.remove(&pid) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Sends `signal` to the process group of `pid`, which must be a live group this harness spawned. A kill, a pause
/// and a resume also reach the group's descendants that left it: PostgreSQL's postmaster puts every backend and
/// helper it forks in a session of its own (`setsid`), so a kill of its group alone would leave them running (still
/// answering clients, still writing to the data dir after a power loss, and holding the shared memory that stops
/// the next start: "pre-existing shared memory block is still in use"). The group is stopped first, so nothing in
/// it forks while its descendants are listed.
pub fn signal_group(pid: i32, signal: Signal) -> Result<(), String> {
    if !LIVE_GROUPS.lock().expect("live-group registry poisoned").contains(&pid) {
        return Err(format!(
            "pid {pid} is not a live process group spawned by this run; not signalling it"
        ));
    }
    let group = Pid::from_raw(pid);
    let signal_err = |e| format!("killpg({pid}, {signal}): {e}");
    match signal {
        Signal::SIGKILL | Signal::SIGSTOP => {
            killpg(group, Signal::SIGSTOP).map_err(signal_err)?;
            let strays = descendants_outside_group(pid);
            for (stray, _) in &strays {
                let _ = nix::sys::signal::kill(Pid::from_raw(*stray), signal);
            }
            if signal == Signal::SIGKILL && !strays.is_empty() {
                STRAYS.lock().expect("stray registry poisoned").insert(pid, strays);
            }
            killpg(group, signal).map_err(signal_err)
        }
        Signal::SIGCONT => {
            killpg(group, signal).map_err(signal_err)?;
            for (stray, _) in descendants_outside_group(pid) {
                let _ = nix::sys::signal::kill(Pid::from_raw(stray), signal);
            }
            Ok(())
        }
        _ => killpg(group, signal).map_err(signal_err),
    }
}

/// Descendants of process group `pgid` killed with it that are in another group (see [`signal_group`]), by group:
/// pid and start time (so that a reused pid is not taken for one of them).
static STRAYS: Mutex<BTreeMap<i32, Vec<(i32, u64)>>> = Mutex::new(BTreeMap::new());

/// One process's `/proc/<pid>/stat` fields: state, parent, process group, start time (clock ticks since boot).
fn proc_stat(pid: i32) -> Option<(char, i32, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    // priority nice threads itrealvalue starttime ...`: comm may hold spaces and parentheses, so read after its
    // last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((
        state,
        fields.get(1)?.parse().ok()?,
        fields.get(2)?.parse().ok()?,
        fields.get(19)?.parse().ok()?,
    ))
}

/// Every live process that descends from a member of group `pgid` but is not in it, with its start time.
fn descendants_outside_group(pgid: i32) -> Vec<(i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let processes: Vec<(i32, (char, i32, i32, u64))> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, proc_stat(pid)?)))
        .collect();
    let mut inside: BTreeSet<i32> = processes
        .iter()
        .filter(|(_, (_, _, pgrp, _))| *pgrp == pgid)
        .map(|(pid, _)| *pid)
        .collect();
    let mut strays = Vec::new();
    // Parents before children is not guaranteed by pid order (pids wrap): repeat until nothing new is found; each
    // pass adds a generation, and a process tree is shallow.
    loop {
        let found: Vec<(i32, u64)> = processes
            .iter()
            .filter(|(pid, (state, ppid, _, _))| {
                !inside.contains(pid) && inside.contains(ppid) && !matches!(state, 'Z' | 'X')
            })
            .map(|(pid, (_, _, _, start))| (*pid, *start))
            .collect();
        if found.is_empty() {
            return strays;
        }
        for (pid, start) in found {
            inside.insert(pid);
            strays.push((pid, start));
        }
    }
}

/// Whether a stray killed with group `pgid` still lives (same pid and start time, not a zombie); forgets the group's
/// strays once none does.
fn strays_alive(pgid: i32) -> bool {
    let mut strays = STRAYS.lock().expect("stray registry poisoned");
    let Some(list) = strays.get(&pgid) else {
        return false;
    };
    let alive = list.iter().any(|(pid, start)| {
        proc_stat(*pid).is_some_and(|(state, _, _, started)| started == *start && !matches!(state, 'Z' | 'X'))
    });
    if !alive {
        strays.remove(&pgid);
    }
    alive
}

/// SIGKILLs every live process group this harness spawned (Ctrl-C, panic and error paths).
pub fn kill_all_spawned() {
    let groups: Vec<i32> = LIVE_GROUPS
        .lock()
        .map(|g| g.iter().copied().collect())
        .unwrap_or_default();
    for pid in groups {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGSTOP);
        for (stray, _) in descendants_outside_group(pid) {
            let _ = nix::sys::signal::kill(Pid::from_raw(stray), Signal::SIGKILL);
        }
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Makes panics kill every spawned node before the default hook runs.
pub fn install_panic_cleanup() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all_spawned();
        default_hook(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_group_whose_leader_died_when_a_child_lives_on_should_count_it_until_it_exits() {
        // The leader exits at once; its child, in the same group, sleeps on.
        let leader = Command::new("sh")
            .args(["-c", "sleep 30 & exit 0"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        let mut leader = leader;
        leader.wait().unwrap();
        assert!(group_has_live_members(pgid), "the orphaned sleep is still in the group");
        killpg(Pid::from_raw(pgid), Signal::SIGKILL).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group_has_live_members(pgid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!group_has_live_members(pgid), "killed, nothing of the group lives");
        assert!(!group_has_live_members(i32::MAX), "no such group");
    }

    #[test]
    fn given_a_child_that_left_the_group_when_the_group_is_killed_should_kill_it_too_and_wait_for_it() {
        // PostgreSQL's way: the leader forks a child that makes a session (and group) of its own.
        let mut leader = Command::new("sh")
            .args(["-c", "setsid sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        track_group(pgid);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut strays = descendants_outside_group(pgid);
        while strays.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            strays = descendants_outside_group(pgid);
        }
        assert_eq!(strays.len(), 1, "the setsid sleep is outside the group: {strays:?}");
        let (stray, _) = strays[0];

        signal_group(pgid, Signal::SIGKILL).unwrap();
        leader.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group_has_live_members(pgid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!group_has_live_members(pgid), "the group and its stray are gone");
        let stray_state = proc_stat(stray).map(|(state, ..)| state);
        assert!(
            matches!(stray_state, None | Some('Z' | 'X')),
            "the stray {stray} was killed: {stray_state:?}"
        );
        kill_and_forget_group(pgid);
    }
}
