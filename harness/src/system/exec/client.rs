//! The exec adapter's client: one process per logical client, speaking JSON lines (spec: `plans/exec/PROTOCOL.md`).
//!
//! faultline writes one op per line on the process's stdin and reads one answer per line from its stdout:
//!
//! ```text
//! > {"id":17,"process":4,"f":"write","key":"k3","value":"v42","node":"n2","addr":"127.0.0.1:25002","timeout_ms":1500}
//! < {"id":17,"type":"ok"}
//! ```
//!
//! Jepsen semantics: a process has one op in flight. An op the process never received (it could not start, or its
//! stdin was closed) is `fail`. An op it received but did not answer by the op's deadline, or answered with a line
//! that is not a well-formed answer to *that* op (not JSON, another id, an unknown type), has an unknown outcome:
//! `info` ([`super::super::unknown`]: a read is `fail`, it had no effect), and the process is killed; the next op
//! starts a fresh one. Every such error names the client and the line; the client's stderr goes to `clients.log`.
//!
//! A fresh process's first op waits [`STARTUP_ALLOWANCE`] longer: an interpreter and its imports take their time
//! before the process reads its first line, and the op's `timeout_ms` is the client's own budget from then on.
//! Processes that end before their first answer are counted run-wide ([`ClientStarts`]): when none has ever
//! answered, the client's set-up is broken and the run stops on it.

use super::starts::ClientStarts;
use crate::supervisor::{self, LaunchCommand};
use crate::system::{
    bank_balances, txn_answer, txn_is_read_only, unknown, Bank, BankClient, LogClient, Outcome, RegisterClient,
    SetClient, TxnClient, BANK_KEY,
};
use async_trait::async_trait;
use faultline_faults::process::{node_name, parse_node_name};
use serde_json::{json, Value};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

/// How long past an op's deadline faultline still waits for its answer (pipes and process scheduling).
const ANSWER_GRACE: Duration = Duration::from_millis(250);
/// How much longer a fresh process's first op may take: its start (a Python interpreter importing kazoo took 0.5 s
/// on a loaded 2-core machine; a JVM takes seconds).
pub const STARTUP_ALLOWANCE: Duration = Duration::from_secs(3);
/// Lines of a client process's stderr kept to quote when it dies before its first answer.
const STDERR_TAIL_LINES: usize = 40;
/// How long to wait for a dead process's stderr to drain.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(500);
/// Characters of a bad line quoted in an error.
const QUOTE_CHARS_MAX: usize = 200;

/// `clients.log` of a run: every client process's stderr, each line prefixed with its process, and the harness's
/// notes on starts, replacements and protocol errors.
pub struct ClientLog {
    file: Option<Mutex<std::fs::File>>,
    run_id: String,
}

impl ClientLog {
    /// Creates (appends to) the log at `path`.
    pub fn create(path: &Path, run_id: &str) -> anyhow::Result<Arc<ClientLog>> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot open the client log {}: {e}", path.display()))?;
        Ok(Arc::new(ClientLog {
            file: Some(Mutex::new(file)),
            run_id: run_id.to_string(),
        }))
    }

    /// A log that writes nothing (unit tests).
    pub fn disabled() -> Arc<ClientLog> {
        Arc::new(ClientLog {
            file: None,
            run_id: "test".into(),
        })
    }

    fn line(&self, process: u64, text: &str) {
        if let Some(file) = &self.file {
            if let Ok(mut file) = file.lock() {
                let _ = writeln!(file, "[p{process}] {text}");
            }
        }
    }
}

/// A running client process.
struct Running {
    pid: i32,
    child: tokio::process::Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// It gave a well-formed answer (until then it is still starting).
    answered: bool,
    /// The last lines of its stderr, and the task that reads them.
    stderr_tail: Arc<Mutex<std::collections::VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// The end of its stderr, once it has drained (bounded: a grandchild may hold the pipe open).
    async fn stderr_tail(&mut self) -> Vec<String> {
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(STDERR_DRAIN_WAIT, task).await;
        }
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tail.iter().cloned().collect()
    }
}

/// A client of any workload kind, bound to one home node, backed by one client process at a time.
pub struct ExecClient {
    command: LaunchCommand,
    log: Arc<ClientLog>,
    starts: Arc<ClientStarts>,
    addrs: Vec<SocketAddr>,
    home: usize,
    op_timeout: Duration,
    process: u64,
    running: tokio::sync::Mutex<Option<Running>>,
    next_id: AtomicU64,
}

impl ExecClient {
    /// A client for logical process `process`; its process starts with its first op.
    pub fn new(
        command: LaunchCommand,
        log: Arc<ClientLog>,
        starts: Arc<ClientStarts>,
        addrs: Vec<SocketAddr>,
        home: usize,
        op_timeout: Duration,
        process: u64,
    ) -> ExecClient {
        ExecClient {
            command,
            log,
            starts,
            addrs,
            home,
            op_timeout,
            process,
            running: tokio::sync::Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// `client p4 (python3 client.py)`.
    fn who(&self) -> String {
        format!("client p{} (`{}`)", self.process, self.command.display())
    }

    fn spawn(&self) -> std::io::Result<Running> {
        let mut child = supervisor::owned_command(&self.command, &self.log.run_id)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let pid = child.id().map(|p| p as i32).unwrap_or(-1);
        supervisor::track_group(pid);
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the client's pipes were not created"));
        };
        let (log, process) = (self.log.clone(), self.process);
        log.line(
            process,
            &format!("=== faultline: started `{}` (pid {pid}) ===", self.command.display()),
        );
        let stderr_tail = Arc::new(Mutex::new(std::collections::VecDeque::new()));
        let tail = stderr_tail.clone();
        let stderr_task = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.line(process, &line);
                let mut tail = tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        Ok(Running {
            pid,
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            answered: false,
            stderr_tail,
            stderr_task: Some(stderr_task),
        })
    }

    /// Kills the running process (it is replaced by a fresh one at the next op), noting why.
    fn replace(&self, running: &mut Option<Running>, why: &str) {
        if let Some(old) = running.take() {
            self.log.line(
                self.process,
                &format!("=== faultline: replacing pid {}: {why} ===", old.pid),
            );
            supervisor::kill_and_forget_group(old.pid);
        }
    }

    /// Sends one op and reads its answer: the outcome and the node that served it. `key` is `None` for a
    /// transaction (its keys are in its micro-ops; the line says `"key": null`).
    async fn call(&self, f: &str, key: Option<&str>, value: Value, is_read: bool) -> (Outcome, usize) {
        let mut running = self.running.lock().await;
        if running.is_none() {
            match self.spawn() {
                Ok(fresh) => *running = Some(fresh),
                Err(e) => {
                    self.starts
                        .stillborn(&self.who(), &format!("could not start: {e}"), &[]);
                    return (
                        Outcome::Fail(format!("{} could not start: {e} (the op was not sent)", self.who())),
                        self.home,
                    );
                }
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let op = json!({
            "id": id,
            "process": self.process,
            "f": f,
            "key": key,
            "value": value,
            "node": node_name(self.home),
            "addr": self.addrs[self.home].to_string(),
            "timeout_ms": self.op_timeout.as_millis() as u64,
        });
        let process = running.as_mut().expect("started above");
        let allowance = if process.answered {
            Duration::ZERO
        } else {
            STARTUP_ALLOWANCE
        };
        let deadline = tokio::time::Instant::now() + self.op_timeout + ANSWER_GRACE + allowance;
        let sent = async {
            process.stdin.write_all(format!("{op}\n").as_bytes()).await?;
            process.stdin.flush().await
        };
        if let Err(e) = sent.await {
            let exit = process
                .child
                .try_wait()
                .ok()
                .flatten()
                .map_or("still running".into(), |s| s.to_string());
            let why = format!("{} did not take op {id} ({e}; {exit}): the op was not sent", self.who());
            if !process.answered {
                let stderr = process.stderr_tail().await;
                self.starts
                    .stillborn(&self.who(), &format!("did not take its first op ({exit})"), &stderr);
            }
            self.replace(&mut running, &why);
            return (Outcome::Fail(why), self.home);
        }
        let answer = tokio::time::timeout_at(deadline, process.stdout.next_line()).await;
        let line = match answer {
            Ok(Ok(Some(line))) => line,
            Err(_) => {
                let why = format!("{} gave no answer to op {id} within {:?}", self.who(), self.op_timeout);
                self.replace(&mut running, &why);
                return (unknown(is_read, format!("{why}; its process is replaced")), self.home);
            }
            Ok(Ok(None)) | Ok(Err(_)) => {
                let exit = match tokio::time::timeout(Duration::from_millis(200), process.child.wait()).await {
                    Ok(Ok(status)) => status.to_string(),
                    _ => "its stdout closed".into(),
                };
                let why = format!("{} exited ({exit}) before answering op {id}", self.who());
                if !process.answered {
                    let stderr = process.stderr_tail().await;
                    self.starts.stillborn(&self.who(), &format!("exited ({exit})"), &stderr);
                }
                self.replace(&mut running, &why);
                return (
                    unknown(is_read, format!("{why}; a fresh process takes over")),
                    self.home,
                );
            }
        };
        match self.read_answer(id, &line) {
            Ok((outcome, served_by)) => {
                if !process.answered {
                    process.answered = true;
                    self.starts.answered();
                }
                (sort(outcome, is_read), served_by)
            }
            Err(why) => {
                let why = format!("{}: {why}", self.who());
                self.replace(&mut running, &why);
                (unknown(is_read, format!("{why}; its process is replaced")), self.home)
            }
        }
    }

    /// One answer line: `{"id": N, "type": "ok"|"fail"|"info", "value"?, "error"?, "node"?}`.
    fn read_answer(&self, id: u64, line: &str) -> Result<(Outcome, usize), String> {
        let answer: Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "printed a line that is not JSON ({e}): {} (expected {{\"id\":{id},\"type\":\"ok\"|\"fail\"|\"info\",...}}; \
                 logs go to stderr)",
                quote(line)
            )
        })?;
        match answer["id"].as_u64() {
            Some(got) if got == id => {}
            Some(got) => {
                return Err(format!(
                    "answered op {got}, but the op in flight is {id}: {}",
                    quote(line)
                ))
            }
            None => {
                return Err(format!(
                    "answered without a numeric `id` (op {id} is in flight): {}",
                    quote(line)
                ))
            }
        }
        let served_by = match answer["node"].as_str() {
            None => self.home,
            Some(name) => match parse_node_name(name).filter(|&n| n < self.addrs.len()) {
                Some(node) => node,
                None => {
                    return Err(format!(
                        "named node `{name}`, which is not n1..n{}: {}",
                        self.addrs.len(),
                        quote(line)
                    ))
                }
            },
        };
        let error = answer["error"].as_str().map(str::to_string);
        let outcome = match answer["type"].as_str() {
            Some("ok") => Outcome::Ok(answer.get("value").cloned().unwrap_or(Value::Null)),
            Some("fail") => Outcome::Fail(error.unwrap_or_else(|| "the client answered fail".into())),
            Some("info") => Outcome::Info(error.unwrap_or_else(|| "the client answered info".into())),
            _ => {
                return Err(format!(
                    "answered op {id} with type {}, not \"ok\", \"fail\" or \"info\": {}",
                    answer["type"],
                    quote(line)
                ))
            }
        };
        Ok((outcome, served_by))
    }

    /// An `ok` whose value does not have the shape `expect` says is a protocol error too: the op's outcome is
    /// unknown and the process is replaced.
    async fn call_expecting(
        &self,
        f: &str,
        key: &str,
        value: Value,
        is_read: bool,
        shape: fn(&Value) -> Result<Value, &'static str>,
    ) -> (Outcome, usize) {
        let (outcome, node) = self.call(f, Some(key), value, is_read).await;
        match outcome {
            Outcome::Ok(value) => match shape(&value) {
                Ok(value) => (Outcome::Ok(value), node),
                Err(expected) => {
                    let why = format!(
                        "{} answered {f} ok with value {}, expected {expected}",
                        self.who(),
                        quote(&value.to_string())
                    );
                    self.replace(&mut *self.running.lock().await, &why);
                    (unknown(is_read, format!("{why}; its process is replaced")), node)
                }
            },
            other => (other, node),
        }
    }
}

impl Drop for ExecClient {
    fn drop(&mut self) {
        if let Some(running) = self.running.get_mut().take() {
            supervisor::kill_and_forget_group(running.pid);
        }
    }
}

/// The client's own `info` on a read still means the read had no effect (the one rule in [`unknown`]).
fn sort(outcome: Outcome, is_read: bool) -> Outcome {
    match outcome {
        Outcome::Info(why) => unknown(is_read, why),
        other => other,
    }
}

fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS_MAX) {
        Some((cut, _)) => format!("`{}...`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

fn register_value(value: &Value) -> Result<Value, &'static str> {
    match value {
        Value::String(_) | Value::Null => Ok(value.clone()),
        _ => Err("a string, or null for a missing key"),
    }
}

fn anything(_: &Value) -> Result<Value, &'static str> {
    Ok(Value::Null)
}

fn log_offset(value: &Value) -> Result<Value, &'static str> {
    value["offset"]
        .as_u64()
        .map(|offset| json!({"offset": offset}))
        .ok_or("{\"offset\": N}")
}

fn set_elements(value: &Value) -> Result<Value, &'static str> {
    match value.as_array() {
        Some(elements) if elements.iter().all(Value::is_string) => Ok(value.clone()),
        _ => Err("an array of the set's elements (strings)"),
    }
}

#[async_trait]
impl RegisterClient for ExecClient {
    async fn read(&self, key: &str) -> (Outcome, usize) {
        self.call_expecting("read", key, Value::Null, true, register_value)
            .await
    }

    async fn write(&self, key: &str, value: &str) -> (Outcome, usize) {
        self.call_expecting("write", key, json!(value), false, anything).await
    }

    async fn cas(&self, key: &str, from: &str, to: &str) -> (Outcome, usize) {
        self.call_expecting("cas", key, json!([from, to]), false, anything)
            .await
    }
}

#[async_trait]
impl LogClient for ExecClient {
    async fn append(&self, log: &str, payload: &str) -> (Outcome, usize) {
        self.call_expecting("append", log, json!(payload), false, log_offset)
            .await
    }

    async fn read(&self, log: &str, from: u64, limit: u64) -> (Outcome, usize) {
        let (outcome, node) = self
            .call_expecting("read", log, json!({"from": from, "limit": limit}), true, |value| {
                let entries = value["entries"]
                    .as_array()
                    .ok_or("{\"entries\": [[offset, payload], ...], \"end\": N}")?;
                let well_formed = entries.iter().all(|e| e[0].is_u64() && e[1].is_string());
                if !well_formed {
                    return Err("entries as [offset, payload] pairs");
                }
                Ok(value.clone())
            })
            .await;
        match outcome {
            Outcome::Ok(value) => (
                Outcome::Ok(json!({"from": from, "entries": value["entries"], "end": value["end"]})),
                node,
            ),
            other => (other, node),
        }
    }
}

#[async_trait]
impl TxnClient for ExecClient {
    /// `f: txn`, value = the micro-op list; an `ok` must return it with every read filled ([`txn_answer`]), else
    /// the outcome is unknown and the process is replaced, as for any malformed answer.
    async fn txn(&self, ops: &Value) -> (Outcome, usize) {
        let is_read = txn_is_read_only(ops);
        let (outcome, node) = self.call("txn", None, ops.clone(), is_read).await;
        match outcome {
            Outcome::Ok(value) => match txn_answer(ops, &value) {
                Ok(value) => (Outcome::Ok(value), node),
                Err(wrong) => {
                    let why = format!("{} answered txn ok, but {wrong}", self.who());
                    self.replace(&mut *self.running.lock().await, &why);
                    (unknown(is_read, format!("{why}; its process is replaced")), node)
                }
            },
            other => (other, node),
        }
    }
}

/// The bank's ops: `f: read` or `transfer` on key `bank`, the bank (and the transfer) in the value.
#[async_trait]
impl BankClient for ExecClient {
    async fn read(&self, bank: Bank) -> (Outcome, usize) {
        let value = json!({"accounts": bank.accounts, "total": bank.total});
        self.call_expecting("read", BANK_KEY, value, true, bank_balances).await
    }

    async fn transfer(&self, bank: Bank, from: u64, to: u64, amount: u64) -> (Outcome, usize) {
        let value = json!({"from": from, "to": to, "amount": amount, "accounts": bank.accounts, "total": bank.total});
        self.call_expecting("transfer", BANK_KEY, value, false, anything).await
    }
}

#[async_trait]
impl SetClient for ExecClient {
    async fn add(&self, element: &str) -> (Outcome, usize) {
        self.call_expecting("add", crate::system::SET_KEY, json!(element), false, anything)
            .await
    }

    async fn read_all(&self) -> (Outcome, usize) {
        self.call_expecting("read", crate::system::SET_KEY, Value::Null, true, set_elements)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client process that answers every op with `answer` (its `value`), keeping the op's id.
    fn client_answering(answer: &str) -> ExecClient {
        client_running(&format!(
            "import json, sys\nfor line in sys.stdin:\n    op = json.loads(line)\n    answer = {answer}\n    \
             answer['id'] = op['id']\n    print(json.dumps(answer), flush=True)\n"
        ))
        .0
    }

    /// A client process running the Python `script`, with a 5 s op timeout, and the run-wide account of its starts.
    fn client_running(script: &str) -> (ExecClient, Arc<ClientStarts>) {
        client_with_timeout(script, Duration::from_secs(5))
    }

    fn client_with_timeout(script: &str, op_timeout: Duration) -> (ExecClient, Arc<ClientStarts>) {
        let command = LaunchCommand {
            program: "python3".into(),
            args: vec!["-c".into(), script.to_string()],
            env: Vec::new(),
            env_clear: false,
            user: None,
        };
        let addrs = vec!["127.0.0.1:1".parse().unwrap()];
        let starts = Arc::new(ClientStarts::default());
        let client = ExecClient::new(command, ClientLog::disabled(), starts.clone(), addrs, 0, op_timeout, 3);
        (client, starts)
    }

    /// A Python client counts its op's deadline from when it reads the op; its interpreter and imports come first.
    #[tokio::test]
    async fn given_a_client_that_starts_slower_than_the_op_timeout_when_its_first_op_runs_should_still_be_answered() {
        let script = "import json, sys, time\ntime.sleep(1.5)\nfor line in sys.stdin:\n    op = json.loads(line)\n    \
                      print(json.dumps({'id': op['id'], 'type': 'ok', 'value': None}), flush=True)\n";
        let (client, starts) = client_with_timeout(script, Duration::from_millis(500));
        let (first, _) = RegisterClient::read(&client, "k1").await;
        assert_eq!(
            first,
            Outcome::Ok(Value::Null),
            "the first op waits for the process to start"
        );
        let (second, _) = RegisterClient::read(&client, "k1").await;
        assert_eq!(second, Outcome::Ok(Value::Null));
        assert_eq!(starts.broken(), None);
    }

    #[tokio::test]
    async fn given_a_client_that_dies_before_its_first_answer_again_and_again_should_say_its_set_up_is_broken() {
        let script = "import sys\nsys.stderr.write('Traceback (most recent call last):\\n')\n\
                      sys.stderr.write(\"ModuleNotFoundError: No module named 'kazoo'\\n\")\nsys.exit(1)\n";
        let (client, starts) = client_running(script);
        for attempt in 1..=super::super::starts::STILLBORN_MAX {
            let (outcome, _) = RegisterClient::write(&client, "k1", "v1").await;
            assert!(!matches!(outcome, Outcome::Ok(_)), "{outcome:?}");
            let broken = starts.broken();
            assert_eq!(
                broken.is_some(),
                attempt == super::super::starts::STILLBORN_MAX,
                "{broken:?}"
            );
        }
        let why = starts.broken().unwrap();
        assert!(
            why.contains("No module named 'kazoo'") && why.contains("exited (exit status: 1)"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn given_txn_answers_when_read_should_take_filled_reads_and_make_a_changed_list_unknown() {
        let ops = json!([["append", "k1", 3], ["r", "k1", null]]);
        let good = client_answering(r#"{"type": "ok", "value": [["append", "k1", 3], ["r", "k1", [1, 3]]]}"#);
        let (outcome, node) = good.txn(&ops).await;
        assert_eq!(outcome, Outcome::Ok(json!([["append", "k1", 3], ["r", "k1", [1, 3]]])));
        assert_eq!(node, 0);

        let changed = client_answering(r#"{"type": "ok", "value": [["append", "k1", 4], ["r", "k1", [4]]]}"#);
        let Outcome::Info(why) = changed.txn(&ops).await.0 else {
            panic!("a changed write makes the outcome unknown");
        };
        assert!(why.contains("micro-op 0 came back"), "{why}");

        // A transaction without writes had no effect, whatever its answer: a bad one is a `fail`.
        let read_only = json!([["r", "k1", null]]);
        assert!(matches!(changed.txn(&read_only).await.0, Outcome::Fail(_)));
        let aborted = client_answering(r#"{"type": "fail", "error": "serialization failure"}"#);
        assert_eq!(aborted.txn(&ops).await.0, Outcome::Fail("serialization failure".into()));
    }
}
