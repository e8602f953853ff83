//! One campaign run as a child `faultline run` process, and what it left behind.
//!
//! Why child processes rather than runs in-process (as `faultline matrix` does): a run owns process-wide things (the
//! live-group registry that Ctrl-C and panics kill, the spawner thread its nodes' parent-death signal is tied to, its
//! SIGINT handling and run lock), so K runs in one process would share and fight over them, and a panic in one would
//! take down the others. As a child, each run keeps the lifecycle `faultline run` already has: SIGINT makes it stop
//! its nodes, tear down its lab and record an interrupted history; SIGKILL kills its nodes through their parent-death
//! signal. The child itself gets a parent-death signal too, so a campaign killed with SIGKILL leaves no run behind.

use faultline_reports::results::{Results, Verdict};
use faultline_reports::seeds::{failing_checks, failure_of, BuildIdentity};
use faultline_reports::triage::{findings, harness_finding, Finding};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// What a child is asked to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `faultline run` argument: plan file path or built-in name.
    pub plan_arg: String,
    /// Run seed.
    pub seed: u64,
    /// Fault-phase override.
    pub time_limit: Option<String>,
    /// Node-count override.
    pub nodes: Option<u64>,
    /// More `faultline run` arguments, the same for every run (`--hosts FILE --ssh-config FILE`).
    pub extra: Vec<String>,
}

impl RunRequest {
    /// The arguments after `faultline run PLAN` (shared by the child's command line and the repro command).
    pub fn option_args(&self) -> Vec<String> {
        let mut args = vec!["--seed".to_string(), self.seed.to_string()];
        if let Some(limit) = &self.time_limit {
            args.extend(["--time-limit".to_string(), limit.clone()]);
        }
        if let Some(nodes) = self.nodes {
            args.extend(["--nodes".to_string(), nodes.to_string()]);
        }
        args.extend(self.extra.iter().cloned());
        args
    }
}

/// Starts `faultline run` for `request` in its own process group, output to `log_path`.
pub fn spawn(request: &RunRequest, store_root: &Path, log_path: &Path) -> std::io::Result<Child> {
    let exe = crate::supervisor::self_exe()?;
    let log = std::fs::File::create(log_path)?;
    let log_err = log.try_clone()?;
    let parent_pid = std::process::id() as i32;
    let mut command = Command::new(exe);
    command
        .arg("run")
        .arg(&request.plan_arg)
        .args(request.option_args())
        .arg("--store")
        .arg(store_root)
        .arg("--quiet")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Its own group: a terminal's Ctrl-C reaches the campaign only, which forwards it (see `Scheduler::stop`).
        .process_group(0);
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent_pid {
                libc::_exit(137);
            }
            Ok(())
        });
    }
    command.spawn()
}

/// What a finished child left.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run's verdict; a harness error (no results) is `unknown`.
    pub verdict: Verdict,
    /// (failing check, first line of its reason), or (`harness`, the error line) when the run did not finish.
    pub failure: Option<(String, String)>,
    /// Every check with the run's non-valid verdict (`harness` when the run did not finish).
    pub failing_checks: Vec<String>,
    /// What the failing checks found, most severe first (the harness error when the run did not finish).
    pub findings: Vec<Finding>,
    /// Run length (from its results, else wall time).
    pub duration_ms: u64,
    /// CPU time of the run and everything it waited for (its nodes, clients, tools), from its reaping.
    pub cpu_ms: Option<u64>,
    /// The run folder, relative to the store root.
    pub store_dir: Option<String>,
    /// The binaries the run used.
    pub build: BuildIdentity,
    /// The run went to its end: its history check says it finished (not interrupted, no harness error).
    pub complete: bool,
}

/// Reads what a child that exited with `status` left: its log names its run folder, whose results.json has the
/// verdict and whose history's first line the binaries.
pub fn result_of(
    status: ExitStatus,
    log_path: &Path,
    store_root: &Path,
    wall_ms: u64,
    cpu_ms: Option<u64>,
) -> RunResult {
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    let run_dir = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("  report: "))
        .and_then(|report| Path::new(report).parent().map(Path::to_path_buf));
    let results = run_dir.as_ref().and_then(|dir| read_results(dir).ok());
    let store_dir = run_dir.as_ref().map(|dir| relative_to(dir, store_root));
    let build = run_dir.as_ref().map(|dir| build_of(dir)).unwrap_or_default();
    match results {
        Some(results) if matches!(status.code(), Some(0..=2)) => RunResult {
            verdict: results.verdict,
            failure: failure_of(&results),
            failing_checks: failing_checks(&results),
            findings: findings(&results),
            duration_ms: results.duration_ms,
            cpu_ms,
            complete: results
                .checks
                .iter()
                .any(|c| c.name == "history" && c.verdict == Verdict::Valid),
            store_dir,
            build,
        },
        _ => {
            let error = harness_error(status, &log);
            RunResult {
                verdict: Verdict::Unknown,
                findings: vec![harness_finding(&error)],
                failure: Some(("harness".to_string(), error)),
                failing_checks: vec!["harness".to_string()],
                duration_ms: wall_ms,
                cpu_ms,
                store_dir,
                build,
                complete: false,
            }
        }
    }
}

/// Reaps `child` if it has exited, without blocking: its exit status and the CPU time (user and system) it and
/// every descendant it waited for used (`wait4`'s rusage: a run reaps its nodes, so their CPU counts too).
pub fn try_reap(child: &Child) -> std::io::Result<Option<(ExitStatus, u64)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data that wait4 fills in; zeroed is a valid value of it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid with valid pointers to locals.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
    match pid {
        0 => Ok(None),
        -1 => Err(std::io::Error::last_os_error()),
        _ => {
            let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
            Ok(Some((
                ExitStatus::from_raw(status),
                ms(usage.ru_utime) + ms(usage.ru_stime),
            )))
        }
    }
}

fn read_results(run_dir: &Path) -> anyhow::Result<Results> {
    Ok(serde_json::from_slice(&std::fs::read(run_dir.join("results.json"))?)?)
}

/// The binaries a run recorded in its first history line (`run-start`).
fn build_of(run_dir: &Path) -> BuildIdentity {
    let first = std::fs::read_to_string(run_dir.join("history.jsonl"))
        .ok()
        .and_then(|text| text.lines().next().map(str::to_string))
        .and_then(|line| serde_json::from_str::<serde_json::Value>(&line).ok());
    let Some(first) = first else {
        return BuildIdentity::default();
    };
    let meta = &first["value"];
    let text = |key: &str| meta[key].as_str().map(str::to_string);
    BuildIdentity {
        node_binary: text("node_binary"),
        node_xxh3: text("node_binary_xxh3"),
        faultline_xxh3: text("faultline_binary_xxh3"),
        git_rev: None,
    }
}

/// The last error line of a child's output, or how it ended.
fn harness_error(status: ExitStatus, log: &str) -> String {
    let line = log
        .lines()
        .rev()
        .find(|l| l.starts_with("faultline") && l.contains("error"))
        .or_else(|| log.lines().rev().find(|l| !l.trim().is_empty()));
    let ended = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "ended".to_string(),
    };
    match line {
        Some(line) => format!("{ended}: {}", line.trim()),
        None => format!("{ended} without output"),
    }
}

/// `root/plan/run` -> `plan/run` (both made absolute first when they can be).
pub fn relative_to(dir: &Path, root: &Path) -> String {
    let absolute = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (dir, root) = (absolute(dir), absolute(root));
    let rel: PathBuf = dir.strip_prefix(&root).map(Path::to_path_buf).unwrap_or(dir);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A command line with each argument quoted for a POSIX shell where needed.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | '+' | ','));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
