//! The control's side of the agent protocol: requests by id over the agent's stdin, answers matched from its
//! stdout, the agent's own events (a process exited) on a channel, and the clock sync that maps the agent's
//! monotonic clock to the control's.

use super::agent::{mono_ns, real_ns, Envelope, Request};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// How long a request may take before the agent counts as unresponsive.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

type Pending = Arc<Mutex<BTreeMap<u64, oneshot::Sender<Value>>>>;

/// A connected agent.
pub struct AgentClient {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    next_id: AtomicU64,
    /// Set when the agent's channel has closed (its reader saw the end).
    closed: Arc<std::sync::atomic::AtomicBool>,
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
        let pending: Pending = Arc::default();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let reader_pending = pending.clone();
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_closed = closed.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(from).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    let _ = events_tx.send(serde_json::json!({"event": "garbage", "line": line}));
                    continue;
                };
                match message["id"].as_u64() {
                    Some(id) => {
                        if let Some(waiter) = reader_pending.lock().expect("pending lock").remove(&id) {
                            let _ = waiter.send(message);
                        }
                    }
                    None => {
                        let _ = events_tx.send(message);
                    }
                }
            }
            // The agent is gone: every request still waiting fails (its sender is dropped), and every later one.
            reader_closed.store(true, Ordering::SeqCst);
            reader_pending.lock().expect("pending lock").clear();
        });
        let client = AgentClient {
            writer: tokio::sync::Mutex::new(Box::new(to)),
            pending,
            next_id: AtomicU64::new(1),
            closed,
        };
        (client, events_rx)
    }

    /// Whether the agent's channel has closed: nothing sent to it will be answered.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends `request` and waits for its answer: the `ok` value and the agent's monotonic time of the answer.
    pub async fn call(&self, request: Request) -> Result<(Value, u64), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, tx);
        // Checked after the insert: a reader that ended before it cleared nothing of this request's.
        if self.is_closed() {
            self.pending.lock().expect("pending lock").remove(&id);
            return Err("the agent's channel is closed (its host went away, or the connection to it)".into());
        }
        let mut line = serde_json::to_string(&Envelope { id, request }).expect("requests serialize");
        line.push('\n');
        {
            let mut writer = self.writer.lock().await;
            let sent = async {
                writer.write_all(line.as_bytes()).await?;
                writer.flush().await
            };
            if let Err(e) = sent.await {
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
