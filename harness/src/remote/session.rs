//! The agent's channel to its control, made to survive a dropped SSH connection.
//!
//! The control starts `faultline agent` over SSH, so the channel is that session's stdin and stdout. A session can
//! drop mid-run (a network blip, a restarted sshd, a NAT timeout) while the host and its nodes are fine; ending the
//! run's nodes with it would turn a fault of the *harness's* link into a fault of the system under test. So an
//! agent started with a linger keeps everything running for that long after its channel closes, listening on a
//! Unix socket beside its executable (mode 0600, its path and a random token told to the control in `hello`). The
//! control reconnects with `faultline agent --attach SOCKET` over a new SSH session (a plain byte relay) and sends
//! `{"attach": TOKEN, "resume_from": SEQ}`: the agent answers `{"attached": true}`, then every message the control
//! may have missed (each carries a `seq`; the agent keeps the recent ones), and the control sends again every
//! request still waiting for an answer (the agent ignores an id it has seen, so nothing runs twice). No reattach
//! within the linger: the agent ends as if its channel had closed for good (it kills what it started).
//!
//! Hand-written: this is a resumable session over any byte stream (mosh's idea, on top of SSH), which no crate
//! offers for a JSON-lines protocol.

use serde_json::{json, Value};
use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Bytes of recent messages kept for a control that reattaches (a `read` answer is at most ~5.6 MB of base64).
const REPLAY_MAX_BYTES: usize = 32 << 20;
/// How long a connection to the socket may take to present its token.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(5);

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// What the request loop hears.
enum Input {
    /// A request line of link `generation`.
    Line(String),
    /// Link `generation` closed.
    Closed(u64),
    /// Link `generation` was attached (replacing every earlier one).
    Attached(u64),
}

/// What the writer task is told.
enum Output {
    /// A message for the control (gets its `seq` here).
    Message(Value),
    /// A new link: `header` first, then the kept messages after `resume_from`.
    Attach(Writer, Value, u64),
}

/// The agent's side of its channel: request lines in, messages out, across reattaches.
pub struct Channel {
    inputs: mpsc::UnboundedReceiver<Input>,
    writer: tokio::task::JoinHandle<()>,
    out: mpsc::UnboundedSender<Value>,
    linger: Duration,
    generation: u64,
    /// Request ids already taken (a control that reattaches sends its unanswered requests again).
    seen: BTreeSet<u64>,
    /// Where a control reattaches (none without a linger).
    socket: Option<PathBuf>,
    token: String,
}

impl Channel {
    /// The channel on this process's stdin and stdout. With a `linger`, it survives their close for that long,
    /// waiting for a reattach on a socket in `socket_dir`.
    pub fn open(linger: Duration, socket_dir: &Path) -> Channel {
        let (input_tx, inputs) = mpsc::unbounded_channel();
        let (out, out_rx) = mpsc::unbounded_channel::<Value>();
        let (attach_tx, attach_rx) = mpsc::unbounded_channel::<Output>();
        spawn_reader(tokio::io::stdin(), 0, input_tx.clone());
        let writer = tokio::spawn(write_out(Box::new(tokio::io::stdout()), out_rx, attach_rx));
        let token = format!("{:032x}", rand::random::<u128>());
        let mut socket = None;
        if !linger.is_zero() {
            let path = socket_dir.join(format!("agent-{}.sock", std::process::id()));
            let _ = std::fs::remove_file(&path);
            let bound = tokio::net::UnixListener::bind(&path).and_then(|listener| {
                std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
                Ok(listener)
            });
            match bound {
                Ok(listener) => {
                    tokio::spawn(listen(listener, token.clone(), input_tx, attach_tx));
                    socket = Some(path);
                }
                // Without the socket the agent still serves; it just cannot be reattached (its `hello` says so).
                Err(e) => {
                    let _ = std::fs::remove_file(&path);
                    eprintln!(
                        "faultline agent: cannot listen for reattaches at {}: {e}",
                        path.display()
                    );
                }
            }
        }
        Channel {
            inputs,
            writer,
            out,
            linger,
            generation: 0,
            seen: BTreeSet::new(),
            socket,
            token,
        }
    }

    /// Where and how a control reattaches (for `hello`), if it can.
    pub fn resume(&self) -> Value {
        match &self.socket {
            Some(socket) => json!({"socket": socket, "token": self.token, "linger_ms": self.linger.as_millis() as u64}),
            None => Value::Null,
        }
    }

    /// Sends messages to the control.
    pub fn sender(&self) -> mpsc::UnboundedSender<Value> {
        self.out.clone()
    }

    /// The next request line of a request not seen before; `None` once the control is gone for good (the channel
    /// closed and no reattach came within the linger).
    pub async fn next_line(&mut self) -> Option<String> {
        let mut lost_at: Option<tokio::time::Instant> = None;
        loop {
            let deadline = lost_at.map(|at| at + self.linger);
            let input = tokio::select! {
                input = self.inputs.recv() => input?,
                _ = sleep_until(deadline) => return None,
            };
            match input {
                Input::Line(line) => {
                    let id = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["id"].as_u64());
                    if let Some(id) = id {
                        if !self.seen.insert(id) {
                            continue; // sent again after a reattach; its answer is on its way
                        }
                    }
                    return Some(line);
                }
                Input::Closed(generation) if generation == self.generation => {
                    if self.linger.is_zero() {
                        return None;
                    }
                    lost_at = Some(tokio::time::Instant::now());
                }
                Input::Closed(_) => {} // a link already replaced
                Input::Attached(generation) => {
                    self.generation = generation;
                    lost_at = None;
                }
            }
        }
    }
}

impl Channel {
    /// Ends the channel: what is still queued for the control is written (as far as a link takes it).
    pub async fn finish(mut self) {
        let (none, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.out, none));
        let writer = std::mem::replace(&mut self.writer, tokio::spawn(async {}));
        let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(socket) = &self.socket {
            let _ = std::fs::remove_file(socket);
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Feeds the lines of link `generation` to the request loop, then says it closed.
fn spawn_reader(
    from: impl AsyncRead + Send + Unpin + 'static,
    generation: u64,
    inputs: mpsc::UnboundedSender<Input>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(from).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if inputs.send(Input::Line(line)).is_err() {
                return;
            }
        }
        let _ = inputs.send(Input::Closed(generation));
    })
}

/// Numbers every message, keeps the recent ones, and writes them to the current link (none while detached).
async fn write_out(
    first: Writer,
    mut messages: mpsc::UnboundedReceiver<Value>,
    mut attaches: mpsc::UnboundedReceiver<Output>,
) {
    let mut current: Option<Writer> = Some(first);
    let mut kept: VecDeque<(u64, String)> = VecDeque::new();
    let mut kept_bytes = 0usize;
    let mut seq = 0u64;
    loop {
        let output = tokio::select! {
            message = messages.recv() => match message {
                Some(message) => Output::Message(message),
                None => break,
            },
            Some(attach) = attaches.recv() => attach,
        };
        match output {
            Output::Message(mut message) => {
                seq += 1;
                message["seq"] = json!(seq);
                let mut line = message.to_string();
                line.push('\n');
                if let Some(writer) = &mut current {
                    if write_line(writer, &line).await.is_err() {
                        current = None; // its reader sees the close; a reattach brings a new writer
                    }
                }
                kept_bytes += line.len();
                kept.push_back((seq, line));
                while kept_bytes > REPLAY_MAX_BYTES && kept.len() > 1 {
                    let (_, old) = kept.pop_front().expect("not empty");
                    kept_bytes -= old.len();
                }
            }
            Output::Attach(mut writer, mut header, resume_from) => {
                let oldest = kept.front().map_or(seq + 1, |(s, _)| *s);
                if resume_from + 1 < oldest {
                    header = json!({"error": format!(
                        "the messages after {resume_from} are gone (this agent keeps the last {REPLAY_MAX_BYTES} bytes)"
                    )});
                }
                let mut line = header.to_string();
                line.push('\n');
                let mut ok = write_line(&mut writer, &line).await.is_ok() && header.get("error").is_none();
                for (_, line) in kept.iter().filter(|(s, _)| *s > resume_from) {
                    if !ok {
                        break;
                    }
                    ok = write_line(&mut writer, line).await.is_ok();
                }
                if ok {
                    current = Some(writer);
                }
            }
        }
    }
    if let Some(writer) = &mut current {
        let _ = writer.flush().await;
    }
}

async fn write_line(writer: &mut Writer, line: &str) -> std::io::Result<()> {
    writer.write_all(line.as_bytes()).await?;
    writer.flush().await
}

/// Accepts reattaches: a connection that presents the token becomes the link (the one before it is dropped).
async fn listen(
    listener: tokio::net::UnixListener,
    token: String,
    inputs: mpsc::UnboundedSender<Input>,
    attaches: mpsc::UnboundedSender<Output>,
) {
    let mut generation = 0u64;
    let mut previous: Option<tokio::task::JoinHandle<()>> = None;
    while let Ok((stream, _)) = listener.accept().await {
        let (read, write) = stream.into_split();
        let mut reader = BufReader::new(read);
        let mut first = String::new();
        let greeting = tokio::time::timeout(ATTACH_TIMEOUT, reader.read_line(&mut first)).await;
        let asked: Value = match greeting {
            Ok(Ok(n)) if n > 0 => serde_json::from_str(&first).unwrap_or(Value::Null),
            _ => continue,
        };
        if asked["attach"].as_str() != Some(token.as_str()) {
            let mut write: Writer = Box::new(write);
            let _ = write_line(&mut write, "{\"error\":\"wrong token\"}\n").await;
            continue;
        }
        generation += 1;
        if let Some(old) = previous.take() {
            old.abort();
        }
        let header = json!({"attached": true, "mono_ns": super::agent::mono_ns()});
        let resume_from = asked["resume_from"].as_u64().unwrap_or(0);
        if attaches
            .send(Output::Attach(Box::new(write), header, resume_from))
            .is_err()
            || inputs.send(Input::Attached(generation)).is_err()
        {
            return;
        }
        previous = Some(spawn_reader(reader, generation, inputs.clone()));
    }
}

/// `faultline agent --attach SOCKET`: relays this process's stdin and stdout to the agent listening on `socket`,
/// until either side closes.
pub async fn relay(socket: &Path) -> std::io::Result<()> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    let (mut read, mut write) = stream.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut write).await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut read, &mut tokio::io::stdout()).await;
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
    Ok(())
}
