//! The exec adapter's status probe: where a node's status document comes from.
//!
//! Three forms, one answer (a JSON object the plan's pointers read):
//! - `http`: a GET (or a POST of `post`) whose 2xx body is the document;
//! - `command`: a command run per probe that prints the document on stdout; a non-zero exit says the node did not
//!   answer (it is down, paused or not serving);
//! - `command` with `persistent: true`: one long-lived process per node. faultline writes one line per probe,
//!   `{"probe": N, "timeout_ms": T}`, and reads one line back: the document, or `{"error": "why"}` (that key
//!   alone) when the node did not answer. For systems whose status is a CLI or a line protocol (`redis-cli INFO`,
//!   ZooKeeper's `srvr`), where starting a process every 100 ms costs more than the probe.
//!
//! The persistent process follows the client protocol's rules (`plans/exec/PROTOCOL.md`): an answer after the
//! deadline, a line that is not a JSON object, or a process that exits or closes stdout gets it killed (its process
//! group) and a fresh one started at the next probe. A late or dying process only costs that probe (the node did not
//! answer); a line that is not JSON is a misconfiguration, quoted, and stops the run's setup as an HTTP answer that
//! is not JSON does. Its stderr, and faultline's notes on starts and replacements, go to `status.log` in the node's
//! folder.

use super::QUOTE_CHARS_MAX;
use crate::supervisor::{self, LaunchCommand};
use crate::system::ProbeError;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

/// The shortest deadline a command probe gets: starting a process (a Python interpreter, a JVM tool) takes tens to
/// hundreds of milliseconds, more than the observer's own probe timeout.
pub(super) const COMMAND_TIMEOUT_MIN: Duration = Duration::from_secs(1);
/// How often the observer runs a one-shot status command on each node (an HTTP or persistent status: every 100 ms).
pub(super) const COMMAND_OBSERVE_INTERVAL: Duration = Duration::from_millis(500);
/// What a freshly started persistent status process gets on top of its first probe's deadline.
pub(super) const STARTUP_ALLOWANCE: Duration = Duration::from_secs(2);
/// The shortest deadline a persistent status process gets for one answer (pipes and scheduling on a busy machine).
pub(super) const PERSISTENT_TIMEOUT_MIN: Duration = Duration::from_millis(250);

/// A status command's stderr and faultline's notes about it: `status.log` of the node's folder.
#[derive(Clone)]
pub(super) struct StatusLog {
    file: Option<Arc<Mutex<std::fs::File>>>,
}

impl StatusLog {
    /// Appends to `path` (a log that cannot be opened writes nothing: the probe matters more than its log).
    pub(super) fn open(path: PathBuf) -> StatusLog {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path).ok();
        StatusLog {
            file: file.map(|f| Arc::new(Mutex::new(f))),
        }
    }

    pub(super) fn line(&self, text: &str) {
        if let Some(file) = &self.file {
            if let Ok(mut file) = file.lock() {
                let _ = writeln!(file, "{text}");
            }
        }
    }
}

/// Runs a one-shot status command: its stdout is the document, a non-zero exit or a timeout is no answer.
pub(super) async fn run_command(
    command: &LaunchCommand,
    run_id: &str,
    timeout: Duration,
    log: &StatusLog,
) -> Result<Value, ProbeError> {
    let child = supervisor::owned_command(command, run_id)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            ProbeError::Misconfigured(format!(
                "its status command cannot start ({e}): {} (system.status.command)",
                command.display()
            ))
        })?;
    let pid = child.id().map(|p| p as i32).unwrap_or(-1);
    supervisor::track_group(pid);
    let output = tokio::time::timeout(timeout.max(COMMAND_TIMEOUT_MIN), child.wait_with_output()).await;
    // The command's own children (a `sh -c` pipeline) die with its group, whatever happened.
    supervisor::kill_and_forget_group(pid);
    let output = match output {
        Ok(Ok(output)) => output,
        Ok(Err(_)) => return Err(ProbeError::NoAnswer),
        Err(_) => {
            log.line(&format!(
                "=== faultline: status command (pid {pid}) did not finish within {:?}; killed ===",
                timeout.max(COMMAND_TIMEOUT_MIN)
            ));
            return Err(ProbeError::NoAnswer);
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.trim().is_empty() {
        log.line(stderr.trim_end());
    }
    if !output.status.success() {
        return Err(ProbeError::NoAnswer);
    }
    document(&output.stdout, "system.status.command", &command.display())
}

/// Reads one status document: a JSON object; `{"error": ...}` alone is no answer.
fn document(bytes: &[u8], field: &str, source: &str) -> Result<Value, ProbeError> {
    let text = String::from_utf8_lossy(bytes);
    let quoted: String = text.trim().chars().take(QUOTE_CHARS_MAX).collect();
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(map)) if map.len() == 1 && map.contains_key("error") => Err(ProbeError::NoAnswer),
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(ProbeError::Misconfigured(format!(
            "its status answer from `{source}` ({field}) is JSON but not an object: {quoted}"
        ))),
        Err(e) => Err(ProbeError::Misconfigured(format!(
            "its status answer from `{source}` ({field}) is not one JSON object ({e}): `{quoted}` (print logs on \
             stderr; they go to status.log in the node's folder)"
        ))),
    }
}

/// A running persistent status process.
struct Running {
    pid: i32,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Kept so the process is reaped (and killed if it is dropped early).
    _child: tokio::process::Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        supervisor::kill_and_forget_group(self.pid);
    }
}

/// One node's persistent status process: started at its first probe, replaced when it misbehaves.
pub(super) struct Persistent {
    command: LaunchCommand,
    run_id: String,
    log: StatusLog,
    running: tokio::sync::Mutex<Option<Running>>,
    next_probe: AtomicU64,
}

impl Persistent {
    /// The process of one node (nothing runs until the first probe).
    pub(super) fn new(command: LaunchCommand, run_id: &str, log: StatusLog) -> Persistent {
        Persistent {
            command,
            run_id: run_id.to_string(),
            log,
            running: tokio::sync::Mutex::new(None),
            next_probe: AtomicU64::new(1),
        }
    }

    fn spawn(&self) -> std::io::Result<Running> {
        let mut child = supervisor::owned_command(&self.command, &self.run_id)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let pid = child.id().map(|p| p as i32).unwrap_or(-1);
        supervisor::track_group(pid);
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            supervisor::kill_and_forget_group(pid);
            return Err(std::io::Error::other("the status process's pipes were not created"));
        };
        self.log.line(&format!(
            "=== faultline: started status process `{}` (pid {pid}) ===",
            self.command.display()
        ));
        let log = self.log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.line(&line);
            }
        });
        Ok(Running {
            pid,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            _child: child,
        })
    }

    /// Kills the running process, noting why; the next probe starts a fresh one.
    fn replace(&self, running: &mut Option<Running>, why: &str) {
        if let Some(old) = running.take() {
            self.log.line(&format!(
                "=== faultline: replacing status process pid {}: {why} ===",
                old.pid
            ));
        }
    }

    /// One probe: a line out, a line back within the deadline.
    pub(super) async fn probe(&self, timeout: Duration) -> Result<Value, ProbeError> {
        let timeout = timeout.max(PERSISTENT_TIMEOUT_MIN);
        let deadline = tokio::time::Instant::now() + timeout;
        // Probes of one node queue here; a probe that waited past its deadline did not get an answer.
        let Ok(mut running) = tokio::time::timeout_at(deadline, self.running.lock()).await else {
            return Err(ProbeError::NoAnswer);
        };
        let mut deadline = deadline;
        if running.is_none() {
            match self.spawn() {
                Ok(fresh) => {
                    *running = Some(fresh);
                    // A fresh process first starts its interpreter (a pyenv shim alone took 0.2-0.4 s): its first
                    // answer gets that time on top of the probe's.
                    deadline += STARTUP_ALLOWANCE;
                }
                Err(e) => {
                    return Err(ProbeError::Misconfigured(format!(
                        "its persistent status process cannot start ({e}): {} (system.status.command)",
                        self.command.display()
                    )))
                }
            }
        }
        let n = self.next_probe.fetch_add(1, Ordering::Relaxed);
        let request = json!({"probe": n, "timeout_ms": timeout.as_millis() as u64});
        let process = running.as_mut().expect("started above");
        let sent = async {
            process.stdin.write_all(format!("{request}\n").as_bytes()).await?;
            process.stdin.flush().await
        };
        if let Err(e) = sent.await {
            self.replace(&mut running, &format!("it did not take probe {n} ({e})"));
            return Err(ProbeError::NoAnswer);
        }
        match tokio::time::timeout_at(deadline, process.stdout.next_line()).await {
            Err(_) => {
                self.replace(
                    &mut running,
                    &format!("no answer to probe {n} within {} ms", timeout.as_millis()),
                );
                Err(ProbeError::NoAnswer)
            }
            Ok(Ok(None)) | Ok(Err(_)) => {
                self.replace(
                    &mut running,
                    &format!("it closed stdout or exited before answering probe {n}"),
                );
                Err(ProbeError::NoAnswer)
            }
            Ok(Ok(Some(line))) => {
                let answer = document(line.as_bytes(), "system.status.command", &self.command.display());
                if let Err(ProbeError::Misconfigured(why)) = &answer {
                    self.replace(&mut running, why);
                }
                answer
            }
        }
    }
}

use super::quote;
use crate::system::{NodeStatus, Role};
use serde_saphyr::Spanned;

impl super::ExecSystem {
    /// Reads a status answer with the plan's pointers.
    pub(super) fn read_status(&self, raw: Value) -> Result<NodeStatus, ProbeError> {
        let Some(status) = &self.config.status else {
            return Err(ProbeError::NoAnswer);
        };
        let lookup = |pointer: &Spanned<String>, what: &str| -> Result<String, ProbeError> {
            match raw.pointer(&pointer.value) {
                Some(Value::String(text)) => Ok(text.clone()),
                Some(other) => Ok(other.to_string()),
                None => Err(ProbeError::Misconfigured(format!(
                    "its status answer has no `{}` (the JSON pointer of system.status.{what}, plan line {}); the \
                     answer was: {}",
                    pointer.value,
                    pointer.referenced.line(),
                    quote(&raw)
                ))),
            }
        };
        let role = match (&status.role, status.primary_if_equal.as_slice()) {
            (None, [leader, me]) => {
                if lookup(leader, "primary_if_equal")? == lookup(me, "primary_if_equal")? {
                    Role::Primary
                } else {
                    Role::Backup
                }
            }
            (None, _) => Role::Other,
            (Some(pointer), _) => {
                let value = lookup(pointer, "role")?;
                if status.primary_when.contains(&value) {
                    Role::Primary
                } else if status.backup_when.is_empty() || status.backup_when.contains(&value) {
                    Role::Backup
                } else {
                    Role::Other
                }
            }
        };
        let primary = match &status.primary {
            Some(pointer) => lookup(pointer, "primary")?.parse::<usize>().ok(),
            None => None,
        };
        let mut parts = Vec::new();
        for pointer in &status.commit_point {
            parts.push(format!("{}={}", pointer.value, lookup(pointer, "commit_point")?));
        }
        // The data's digest joins the commit point: nodes at the same position with different data have not
        // converged (a replica that applied six more elements at the same vclock).
        if let Some(pointer) = &status.digest {
            parts.push(format!("digest {}={}", pointer.value, lookup(pointer, "digest")?));
        }
        Ok(NodeStatus {
            role,
            primary: primary.filter(|_| role != Role::Other),
            commit_point: parts.join(" "),
            raw,
        })
    }
}
