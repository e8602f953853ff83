//! Inter-replica transport over TCP.
//!
//! A replica *sends* to peer j only on a connection it dialled itself (so a proxy on each directed link sees all
//! i->j traffic) and *reads* from connections accepted on its peer address. Every queue is bounded: a full queue
//! drops the message, which VSR tolerates (timeouts and repair recover). A bad frame closes the connection.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::config::Members;
use crate::message::{FrameHeader, Message, FRAME_HEADER_SIZE_BYTES};
use crate::replica::Event;

/// Frames queued per outbound peer link before new ones are dropped.
pub const PEER_QUEUE_SIZE_MAX: usize = 4096;
const CONNECT_TIMEOUT_MS: u64 = 1000;
const WRITE_TIMEOUT_MS: u64 = 2000;
const BODY_READ_TIMEOUT_MS: u64 = 5000;
const RECONNECT_DELAY_MS: u64 = 100;

/// Handles to the outbound links (one per replica of the pool), used by the replica core to send messages.
#[derive(Clone)]
pub struct Outbound {
    cluster: u64,
    replica: u8,
    /// The epoch every frame is stamped with: the sender's, set by the core when it enters an epoch.
    epoch: Arc<AtomicU64>,
    links: Arc<BTreeMap<u8, mpsc::Sender<Arc<Vec<u8>>>>>,
}

impl Outbound {
    /// Spawns one dialling task per peer on the current tokio runtime.
    pub fn spawn(cluster: u64, replica: u8, peers: &BTreeMap<u8, String>) -> Outbound {
        let mut links = BTreeMap::new();
        for (&peer, address) in peers {
            let (sender, receiver) = mpsc::channel(PEER_QUEUE_SIZE_MAX);
            tokio::spawn(run_link(peer, address.clone(), receiver));
            links.insert(peer, sender);
        }
        Outbound {
            cluster,
            replica,
            epoch: Arc::new(AtomicU64::new(0)),
            links: Arc::new(links),
        }
    }

    /// Stamps every frame sent from now on with `epoch`.
    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Release);
    }

    /// Queues `message` for `peer`; drops it if the link's queue is full.
    pub fn send(&self, peer: u8, message: &Message) {
        assert_ne!(peer, self.replica, "a replica never sends to itself");
        let Some(link) = self.links.get(&peer) else {
            tracing::warn!(peer, "no address for peer; message dropped");
            return;
        };
        let epoch = self.epoch.load(Ordering::Acquire);
        let frame = Arc::new(message.encode_frame(self.cluster, self.replica, epoch));
        if let Err(mpsc::error::TrySendError::Full(_)) = link.try_send(frame) {
            tracing::debug!(peer, "peer queue full; message dropped");
        }
    }

    /// Sends `message` to every peer of the pool (members or not).
    pub fn broadcast(&self, message: &Message) {
        for &peer in self.links.keys() {
            self.send(peer, message);
        }
    }

    /// Sends `message` to every peer in `members`.
    pub fn broadcast_to(&self, members: Members, message: &Message) {
        for &peer in self.links.keys().filter(|&&peer| members.contains(peer)) {
            self.send(peer, message);
        }
    }
}

async fn run_link(peer: u8, address: String, mut receiver: mpsc::Receiver<Arc<Vec<u8>>>) {
    let mut was_connected = true;
    loop {
        let connect = tokio::time::timeout(Duration::from_millis(CONNECT_TIMEOUT_MS), TcpStream::connect(&address));
        let mut stream = match connect.await {
            Ok(Ok(stream)) => stream,
            outcome => {
                if was_connected {
                    let error = match outcome {
                        Ok(Err(error)) => error.to_string(),
                        _ => "connect timed out".to_string(),
                    };
                    tracing::info!(peer, %address, %error, "peer link down; retrying");
                    was_connected = false;
                }
                // Stale messages are useless once the link is down: drain them (bounded by the queue size).
                while receiver.try_recv().is_ok() {}
                tokio::time::sleep(Duration::from_millis(RECONNECT_DELAY_MS)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        if !was_connected {
            tracing::info!(peer, %address, "peer link up");
            was_connected = true;
        }
        loop {
            let Some(frame) = receiver.recv().await else { return };
            let write = tokio::time::timeout(Duration::from_millis(WRITE_TIMEOUT_MS), stream.write_all(&frame));
            if !matches!(write.await, Ok(Ok(()))) {
                tracing::info!(peer, %address, "peer link write failed; reconnecting");
                break;
            }
        }
    }
}

/// Accepts peer connections on `listener` and feeds decoded messages to the replica core.
pub async fn serve_inbound(
    listener: TcpListener,
    cluster: u64,
    replica: u8,
    replica_count: u8,
    events: SyncSender<Event>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, remote)) => {
                let events = events.clone();
                tokio::spawn(async move {
                    let _ = stream.set_nodelay(true);
                    if let Err(reason) = read_frames(stream, cluster, replica, replica_count, events).await {
                        tracing::warn!(%remote, %reason, "closing inbound peer connection");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(RECONNECT_DELAY_MS)).await;
            }
        }
    }
}

async fn read_frames(
    mut stream: TcpStream,
    cluster: u64,
    replica: u8,
    replica_count: u8,
    events: SyncSender<Event>,
) -> Result<(), String> {
    loop {
        let mut header_bytes = [0u8; FRAME_HEADER_SIZE_BYTES];
        match stream.read_exact(&mut header_bytes).await {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) => return Err(error.to_string()),
        }
        let header = FrameHeader::decode(&header_bytes, cluster).map_err(|e| e.to_string())?;
        if header.replica >= replica_count || header.replica == replica {
            return Err(format!("frame claims sender replica {}", header.replica));
        }
        let mut body = vec![0u8; header.size_bytes as usize];
        let read = tokio::time::timeout(
            Duration::from_millis(BODY_READ_TIMEOUT_MS),
            stream.read_exact(&mut body),
        );
        match read.await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(error.to_string()),
            Err(_) => return Err("timed out reading a frame body".to_string()),
        }
        let message = Message::decode_body(&header, &body).map_err(|e| e.to_string())?;
        match events.try_send(Event::Message {
            from: header.replica,
            epoch: header.epoch,
            message,
        }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => tracing::debug!("replica event queue full; message dropped"),
            Err(TrySendError::Disconnected(_)) => return Ok(()),
        }
    }
}
