//! The control's side of the agent protocol: requests by id over the agent's stdin, answers matched from its
//! stdout, the agent's own events (a process exited) on a channel, and the clock sync that maps the agent's
//! monotonic clock to the control's. With a [`Resume`] (the agent's reattach socket and a way to reach its host
//! again), a link that drops is reattached with backoff ([`super::session`] has the agent's side): the requests
//! waiting for answers are sent again, the answers and events missed come back, and the events channel says
//! `link-lost` and `link-restored` (or `link-failed`, after which the client is closed).

use super::agent::{mono_ns, real_ns, Envelope, Request};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// How long a request may take before the agent counts as unresponsive.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one write to the agent's link may block (a link that died with its buffers full).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a reattached agent may take to answer the attach.
const ATTACH_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// The first and the longest pause between reattach attempts.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(2));

/// Requests waiting for answers: each one's waiter and its line (sent again after a reattach).
type Pending = Arc<Mutex<BTreeMap<u64, (oneshot::Sender<Value>, String)>>>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;
type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// A new link to the agent's host: the stdin and stdout of `faultline agent --attach SOCKET` run there.
pub type Relink = Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<(Writer, Reader), String>> + Send + Sync>;

/// How a dropped link is reattached.
#[derive(Clone)]
pub struct Resume {
    /// Opens a new link.
    pub relink: Relink,
    /// The agent's token (from its `hello`).
    pub token: String,
    /// How long to keep trying (the agent's linger, less a margin).
    pub window: Duration,
}

/// A connected agent.
pub struct AgentClient {
    writer: Arc<tokio::sync::Mutex<Writer>>,
    pending: Pending,
    next_id: AtomicU64,
    /// Set when the agent's channel has closed for good (its reader saw the end, and no reattach took).
    closed: Arc<std::sync::atomic::AtomicBool>,
    /// How a dropped link is reattached, once the agent said how.
    resume: Arc<Mutex<Option<Resume>>>,
}

/// How the agent's clocks relate to the control's, from the round trip with the least delay.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ClockSync {
    /// Agent monotonic minus control monotonic, ns: an agent event at `m` happened at control time `m - offset`.
    pub mono_offset_ns: i64,
    /// Agent wall clock minus control wall clock, ns (what a person compares: the hosts' clocks disagree by this).
    pub wall_offset_ns: i64,
    /// Half the best round trip, ns: how far either offset may be off.
    pub uncertainty_ns: u64,
    /// The best round trip, ns.
    pub rtt_ns: u64,
    /// Round trips measured.
    pub samples: usize,
}

impl ClockSync {
    /// Control monotonic time of an agent event at agent monotonic `agent_ns`.
    pub fn to_control(&self, agent_ns: u64) -> u64 {
        (agent_ns as i128 - self.mono_offset_ns as i128).max(0) as u64
    }
}

impl AgentClient {
    /// Speaks to an agent whose stdin is `to` and stdout `from`; its events (`{"event": ...}`) arrive on the
    /// returned channel, which closes when the agent's stdout does (the agent exited or the link dropped).
    pub fn new(
        to: impl AsyncWrite + Send + Unpin + 'static,
        from: impl AsyncRead + Send + Unpin + 'static,
    ) -> (AgentClient, mpsc::UnboundedReceiver<Value>) {
        let client = AgentClient {
            writer: Arc::new(tokio::sync::Mutex::new(Box::new(to))),
            pending: Arc::default(),
            next_id: AtomicU64::new(1),
            closed: Arc::default(),
            resume: Arc::default(),
        };
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let link = Link {
            writer: Arc::downgrade(&client.writer),
            pending: client.pending.clone(),
            resume: client.resume.clone(),
            events: events_tx,
            last_seq: 0,
        };
        let closed = client.closed.clone();
        let pending = client.pending.clone();
        tokio::spawn(async move {
            link.read(Box::new(from)).await;
            // The agent is gone: every request still waiting fails (its sender is dropped), and every later one.
            closed.store(true, Ordering::SeqCst);
            pending.lock().expect("pending lock").clear();
        });
        (client, events_rx)
    }

    /// From now on, a dropped link is reattached as `resume` says.
    pub fn resume_with(&self, resume: Resume) {
        *self.resume.lock().expect("resume lock") = Some(resume);
    }

    /// Whether the agent's channel has closed: nothing sent to it will be answered.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends `request` and waits for its answer: the `ok` value and the agent's monotonic time of the answer.
    pub async fn call(&self, request: Request) -> Result<(Value, u64), String> {
        if matches!(request, Request::Shutdown) {
            // The agent ends after this answer: its channel's end is no drop to reattach.
            *self.resume.lock().expect("resume lock") = None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let mut line = serde_json::to_string(&Envelope { id, request }).expect("requests serialize");
        line.push('\n');
        self.pending
            .lock()
            .expect("pending lock")
            .insert(id, (tx, line.clone()));
        // Checked after the insert: a reader that ended before it cleared nothing of this request's.
        if self.is_closed() {
            self.pending.lock().expect("pending lock").remove(&id);
            return Err("the agent's channel is closed (its host went away, or the connection to it)".into());
        }
        let sent = write_line(&mut *self.writer.lock().await, &line).await;
        if let Err(e) = sent {
            // A link being reattached sends it again; without a way back, it is gone.
            if self.resume.lock().expect("resume lock").is_none() {
                self.pending.lock().expect("pending lock").remove(&id);
                return Err(format!("the agent's channel is closed: {e}"));
            }
        }
        let answer = match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => return Err("the agent's channel closed before it answered".into()),
            Err(_) => {
                self.pending.lock().expect("pending lock").remove(&id);
                return Err(format!("the agent did not answer within {CALL_TIMEOUT:?}"));
            }
        };
        let at = answer["mono_ns"].as_u64().unwrap_or(0);
        match answer.get("error").and_then(Value::as_str) {
            Some(error) => Err(error.to_string()),
            None => Ok((answer["ok"].clone(), at)),
        }
    }

    /// Measures the clocks over `samples` round trips and keeps the one with the least delay (its midpoint is the
    /// best estimate; half its round trip bounds the error).
    pub async fn sync_clock(&self, samples: usize) -> Result<ClockSync, String> {
        let mut best: Option<ClockSync> = None;
        for _ in 0..samples.max(1) {
            let (mono0, real0) = (mono_ns(), real_ns());
            let (ok, agent_mono) = self.call(Request::Clock).await?;
            let (mono1, real1) = (mono_ns(), real_ns());
            let agent_real = ok["real_ns"]
                .as_u64()
                .ok_or("the agent's clock answer has no real_ns")?;
            let rtt = mono1.saturating_sub(mono0);
            let sample = ClockSync {
                mono_offset_ns: (agent_mono as i128 - (mono0 as i128 + mono1 as i128) / 2) as i64,
                wall_offset_ns: (agent_real as i128 - (real0 as i128 + real1 as i128) / 2) as i64,
                uncertainty_ns: rtt / 2,
                rtt_ns: rtt,
                samples,
            };
            if best.is_none_or(|b| sample.rtt_ns < b.rtt_ns) {
                best = Some(sample);
            }
        }
        Ok(best.expect("at least one sample"))
    }
}

async fn write_line(writer: &mut Writer, line: &str) -> Result<(), String> {
    let write = async {
        writer.write_all(line.as_bytes()).await?;
        writer.flush().await
    };
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!("the link took more than {WRITE_TIMEOUT:?} to take a request")),
    }
}

/// The reading side of a client: answers to their waiters, events to the channel, and the reattaches.
struct Link {
    /// The client's writer: weak, so a client dropped closes the agent's stdin (the agent ends, then this reader).
    writer: std::sync::Weak<tokio::sync::Mutex<Writer>>,
    pending: Pending,
    resume: Arc<Mutex<Option<Resume>>>,
    events: mpsc::UnboundedSender<Value>,
    /// The last message's `seq` (a reattached agent sends what came after it; older ones are dropped).
    last_seq: u64,
}

impl Link {
    /// Reads links until one ends and cannot be reattached.
    async fn read(mut self, mut from: Reader) {
        loop {
            let mut lines = BufReader::new(from).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                self.take(line);
            }
            let resume = self.resume.lock().expect("resume lock").clone();
            let Some(resume) = resume else { return };
            if self.writer.strong_count() == 0 {
                return; // the client is gone: nobody to reattach for
            }
            let lost = std::time::Instant::now();
            let _ = self.events.send(json!({"event": "link-lost"}));
            match self.reattach(&resume).await {
                Ok((writer, reader, attempts)) => {
                    let Some(shared) = self.writer.upgrade() else { return };
                    let mut current = shared.lock().await;
                    *current = writer;
                    // Every request still waiting, again: the agent skips those it has, and answers the rest.
                    let lines: Vec<String> = self
                        .pending
                        .lock()
                        .expect("pending lock")
                        .values()
                        .map(|(_, l)| l.clone())
                        .collect();
                    for line in &lines {
                        if write_line(&mut current, line).await.is_err() {
                            break; // the new link dropped too: its reader ends, and the next reattach sends them
                        }
                    }
                    drop(current);
                    let after_ms = lost.elapsed().as_millis() as u64;
                    let _ = self.events.send(json!({"event": "link-restored", "after_ms": after_ms, "attempts": attempts, "resent": lines.len()}));
                    from = reader;
                }
                Err(error) => {
                    let after_ms = lost.elapsed().as_millis() as u64;
                    let _ = self
                        .events
                        .send(json!({"event": "link-failed", "after_ms": after_ms, "error": error}));
                    return;
                }
            }
        }
    }

    /// One message: an answer to its waiter, an event to the channel; a message seen before is dropped.
    fn take(&mut self, line: String) {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            let _ = self.events.send(json!({"event": "garbage", "line": line}));
            return;
        };
        if let Some(seq) = message["seq"].as_u64() {
            if seq <= self.last_seq {
                return;
            }
            self.last_seq = seq;
        }
        match message["id"].as_u64() {
            Some(id) => {
                if let Some((waiter, _)) = self.pending.lock().expect("pending lock").remove(&id) {
                    let _ = waiter.send(message);
                }
            }
            None => {
                let _ = self.events.send(message);
            }
        }
    }

    /// Reattaches with backoff until the window closes: the new link and the attempts it took.
    async fn reattach(&self, resume: &Resume) -> Result<(Writer, Reader, u32), String> {
        let deadline = tokio::time::Instant::now() + resume.window;
        let mut pause = BACKOFF.0;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match self.attach_once(resume).await {
                Ok((writer, reader)) => return Ok((writer, reader, attempts)),
                Err(error) => error,
            };
            if tokio::time::Instant::now() + pause >= deadline {
                return Err(format!(
                    "could not reattach within {:?} ({attempts} attempts; the last: {error})",
                    resume.window
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(BACKOFF.1);
        }
    }

    async fn attach_once(&self, resume: &Resume) -> Result<(Writer, Reader), String> {
        let (mut writer, reader) = (resume.relink)().await?;
        let line = format!("{}\n", json!({"attach": resume.token, "resume_from": self.last_seq}));
        write_line(&mut writer, &line).await?;
        let mut reader = BufReader::new(reader);
        let mut answer = String::new();
        match tokio::time::timeout(ATTACH_ANSWER_TIMEOUT, reader.read_line(&mut answer)).await {
            Ok(Ok(n)) if n > 0 => {}
            Ok(Ok(_)) => return Err("the agent is gone (its socket closed the link)".into()),
            Ok(Err(e)) => return Err(format!("reading the agent's answer: {e}")),
            Err(_) => {
                return Err(format!(
                    "the agent did not answer the attach within {ATTACH_ANSWER_TIMEOUT:?}"
                ))
            }
        }
        let answer: Value =
            serde_json::from_str(&answer).map_err(|e| format!("the agent's answer to the attach: {e}: {answer}"))?;
        match answer["attached"].as_bool() {
            // What it read past the answer (the replay) stays in the buffer, read next.
            Some(true) => Ok((writer, Box::new(reader))),
            _ => Err(format!("the agent refused the attach: {}", answer["error"])),
        }
    }
}
