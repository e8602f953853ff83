//! One proxied connection: two pumps (forward and backward), each a reader and a writer joined by a bounded queue, so
//! delay adds latency without cutting throughput, and order is kept because deadlines never go backwards.

use super::{PathState, ProxyId, ProxyLimits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Counters of one proxy, shared by its connections.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub accepted: AtomicU64,
    pub over_limit: AtomicU64,
    pub aborted: AtomicU64,
    pub forward_bytes: AtomicU64,
    pub backward_bytes: AtomicU64,
    pub corrupted_bytes: AtomicU64,
}

/// Everything a connection task needs; it owns clones of the mesh's watch receivers, never the mesh.
pub(super) struct ConnectionCtx {
    pub proxy: ProxyId,
    pub upstream: SocketAddr,
    pub limits: ProxyLimits,
    /// Whether link faults (delay, rate, corrupt) apply: peer proxies only.
    pub data_faults: bool,
    pub forward: watch::Receiver<PathState>,
    pub backward: watch::Receiver<PathState>,
    pub reset: watch::Receiver<bool>,
    pub shutdown: watch::Receiver<bool>,
    pub counters: Arc<Counters>,
    pub seed: u64,
    pub index: u64,
}

/// How a connection ended.
enum End {
    /// Both directions reached EOF: close normally.
    Closed,
    /// Abort both sides with RST.
    Abort,
}

struct Streams {
    inbound: TcpStream,
    upstream: Option<TcpStream>,
}

/// Serves one accepted connection until both sides close, or a fault, a heal after a cut, or shutdown aborts it.
pub(super) async fn run(inbound: TcpStream, ctx: ConnectionCtx) {
    let _ = inbound.set_nodelay(true);
    let epochs = (ctx.forward.borrow().cut_epoch, ctx.backward.borrow().cut_epoch);
    let mut streams = Streams {
        inbound,
        upstream: None,
    };
    let end = tokio::select! {
        end = serve(&ctx, &mut streams) => end,
        _ = healed_after_cut(ctx.forward.clone(), ctx.backward.clone(), epochs) => End::Abort,
        _ = reset_signal(ctx.reset.clone()) => End::Abort,
        _ = shutdown_signal(ctx.shutdown.clone()) => End::Abort,
    };
    if let End::Abort = end {
        ctx.counters.aborted.fetch_add(1, Ordering::Relaxed);
        // SO_LINGER 0: close sends RST, so both ends see the connection die instead of a clean EOF.
        let _ = streams.inbound.set_zero_linger();
        if let Some(upstream) = &streams.upstream {
            let _ = upstream.set_zero_linger();
        }
    }
}

async fn serve(ctx: &ConnectionCtx, streams: &mut Streams) -> End {
    // A connection opened across a cut is held without dialling: the watcher resets it when the path heals.
    wait_open(ctx.forward.clone()).await;
    wait_open(ctx.backward.clone()).await;
    let upstream = match tokio::time::timeout(ctx.limits.connect_timeout, TcpStream::connect(ctx.upstream)).await {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(error)) => {
            tracing::debug!(proxy = %ctx.proxy, upstream = %ctx.upstream, %error, "proxy upstream connect failed");
            return End::Abort;
        }
        Err(_) => return End::Abort,
    };
    let _ = upstream.set_nodelay(true);
    let upstream = streams.upstream.insert(upstream);
    let (inbound_read, inbound_write) = streams.inbound.split();
    let (upstream_read, upstream_write) = upstream.split();
    let rng = |direction: &str| {
        crate::rng::stream(
            ctx.seed,
            &format!("network/proxy {} connection {} {direction}", ctx.proxy, ctx.index),
        )
    };
    let forward = Pump {
        path: ctx.forward.clone(),
        data_faults: ctx.data_faults,
        limits: ctx.limits,
        bytes: &ctx.counters.forward_bytes,
        corrupted: &ctx.counters.corrupted_bytes,
    };
    let backward = Pump {
        path: ctx.backward.clone(),
        bytes: &ctx.counters.backward_bytes,
        ..forward.clone()
    };
    let pumped = tokio::try_join!(
        forward.run(inbound_read, upstream_write, rng("forward")),
        backward.run(upstream_read, inbound_write, rng("backward")),
    );
    match pumped {
        Ok(_) => End::Closed,
        Err(_) => End::Abort,
    }
}

/// Resolves when the mesh shuts down (or is dropped).
pub(super) async fn shutdown_signal(mut shutdown: watch::Receiver<bool>) {
    // An error means the sender (the mesh) is gone: that is a shutdown too.
    let _ = shutdown.wait_for(|stopped| *stopped).await;
}

/// Resolves when a reset fault is put on this proxy's link.
async fn reset_signal(mut reset: watch::Receiver<bool>) {
    if reset.wait_for(|reset| *reset).await.is_err() {
        std::future::pending::<()>().await; // the mesh is gone: shutdown_signal fires
    }
}

/// Waits until the path is not cut.
async fn wait_open(mut path: watch::Receiver<PathState>) {
    if path.wait_for(|state| !state.cut).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves when either path was cut at some point since `epochs` (or is cut now) and both are open again.
async fn healed_after_cut(
    mut forward: watch::Receiver<PathState>,
    mut backward: watch::Receiver<PathState>,
    epochs: (u64, u64),
) {
    let mut was_cut = false;
    loop {
        let (f, b) = (
            forward.borrow_and_update().clone(),
            backward.borrow_and_update().clone(),
        );
        was_cut |= f.cut || b.cut || f.cut_epoch != epochs.0 || b.cut_epoch != epochs.1;
        if was_cut && !f.cut && !b.cut {
            return;
        }
        let changed = tokio::select! {
            changed = forward.changed() => changed,
            changed = backward.changed() => changed,
        };
        if changed.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A chunk read from one side, to be written to the other no earlier than `deliver_at`.
struct Chunk {
    bytes: Vec<u8>,
    deliver_at: Instant,
}

/// One direction of a connection.
#[derive(Clone)]
struct Pump<'a> {
    path: watch::Receiver<PathState>,
    data_faults: bool,
    limits: ProxyLimits,
    bytes: &'a AtomicU64,
    corrupted: &'a AtomicU64,
}

impl Pump<'_> {
    /// Copies `reader` to `writer` under the path's state; forwards EOF as a half-close.
    async fn run(
        self,
        reader: impl AsyncRead + Unpin,
        writer: impl AsyncWrite + Unpin,
        mut rng: ChaCha8Rng,
    ) -> io::Result<()> {
        let (queue, queued) = mpsc::channel::<Chunk>(self.limits.chunks_in_flight);
        let jitter_rng = ChaCha8Rng::seed_from_u64(rng.gen());
        tokio::try_join!(
            self.read_side(reader, queue, jitter_rng),
            self.write_side(queued, writer, rng)
        )?;
        Ok(())
    }

    async fn read_side(
        &self,
        mut reader: impl AsyncRead + Unpin,
        queue: mpsc::Sender<Chunk>,
        mut rng: ChaCha8Rng,
    ) -> io::Result<()> {
        let mut path = self.path.clone();
        let mut buffer = vec![0u8; self.limits.chunk_bytes];
        let mut last_deadline = Instant::now();
        loop {
            // While cut, stop reading: bytes wait in the kernel and the sender's flow control, never discarded.
            wait_open(path.clone()).await;
            let n = reader.read(&mut buffer).await?;
            if n == 0 {
                return Ok(()); // dropping the queue tells the writer to half-close
            }
            let now = Instant::now();
            let delay_ms = if self.data_faults {
                let state = path.borrow_and_update();
                let jitter = state.jitter_ms as i64;
                let jittered = state.delay_ms as i64 + if jitter > 0 { rng.gen_range(-jitter..=jitter) } else { 0 };
                jittered.max(0) as u64
            } else {
                0
            };
            // Deadlines never go backwards, so jitter cannot reorder a stream.
            let deliver_at = (now + Duration::from_millis(delay_ms)).max(last_deadline);
            last_deadline = deliver_at;
            let chunk = Chunk {
                bytes: buffer[..n].to_vec(),
                deliver_at,
            };
            if queue.send(chunk).await.is_err() {
                return Ok(()); // the writer failed; its error ends the pump
            }
        }
    }

    async fn write_side(
        &self,
        mut queued: mpsc::Receiver<Chunk>,
        mut writer: impl AsyncWrite + Unpin,
        mut rng: ChaCha8Rng,
    ) -> io::Result<()> {
        let path = self.path.clone();
        let mut next_send = Instant::now();
        while let Some(mut chunk) = queued.recv().await {
            if chunk.deliver_at > Instant::now() {
                tokio::time::sleep_until(chunk.deliver_at).await;
            }
            let mut offset = 0;
            while offset < chunk.bytes.len() {
                wait_open(path.clone()).await;
                let (rate, probability) = if self.data_faults {
                    let state = path.borrow();
                    (state.rate_bytes_per_s, state.corrupt_probability)
                } else {
                    (None, 0.0)
                };
                let remaining = chunk.bytes.len() - offset;
                // Under a rate cap, write 20 ms worth at a time so the stream is smooth rather than bursty.
                let piece_len = rate.map_or(remaining, |r| ((r / 50) as usize).clamp(1, remaining));
                if let Some(rate) = rate {
                    let now = Instant::now();
                    if next_send > now {
                        tokio::time::sleep_until(next_send).await;
                    }
                    let cost = Duration::from_secs_f64(piece_len as f64 / rate as f64);
                    next_send = next_send.max(Instant::now()) + cost;
                }
                let piece = &mut chunk.bytes[offset..offset + piece_len];
                if probability > 0.0 {
                    let flipped = corrupt(piece, probability, &mut rng);
                    self.corrupted.fetch_add(flipped, Ordering::Relaxed);
                }
                writer.write_all(piece).await?;
                self.bytes.fetch_add(piece_len as u64, Ordering::Relaxed);
                offset += piece_len;
            }
        }
        // The reader saw EOF: pass the half-close on. The peer may already be gone; that is not an error here.
        let _ = writer.shutdown().await;
        Ok(())
    }
}

/// Replaces each byte with a different random byte with probability `probability`; returns how many it replaced.
/// Gaps between replaced bytes are geometric, so the cost is per replaced byte, not per byte.
pub(super) fn corrupt(bytes: &mut [u8], probability: f64, rng: &mut impl Rng) -> u64 {
    let mut flipped = 0;
    let mut position = geometric(probability, rng);
    while position < bytes.len() as u64 {
        bytes[position as usize] ^= rng.gen_range(1..=255u8);
        flipped += 1;
        position += 1 + geometric(probability, rng);
    }
    flipped
}

/// Number of failures before the first success of a Bernoulli(p) trial.
fn geometric(probability: f64, rng: &mut impl Rng) -> u64 {
    if probability >= 1.0 {
        return 0;
    }
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    (u.ln() / (1.0 - probability).ln()).floor().min(u64::MAX as f64 / 2.0) as u64
}
