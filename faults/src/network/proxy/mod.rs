//! The proxy mesh: one userspace TCP proxy per directed link `i -> j` (and optionally per client beside node `i`
//! talking to node `j`), whose states change instantly and cheaply. No root needed.
//!
//! Node `i` is told to reach node `j`'s peer port at the listen address of proxy `i -> j`; that proxy forwards to
//! node `j`'s real peer address. Every proxied connection carries bytes both ways, and each direction is governed by
//! the *path* it travels: bytes `i` sends to `j` follow path `i -> j`, whichever side opened the connection. So a
//! [`Grudge`] (who does not hear whom) applies per path, and a one-way cut stalls one direction only.
//!
//! Path states:
//! - **pass**;
//! - **cut** (from the grudge): a silent partition. The proxy stops reading and stops writing, so bytes wait in
//!   kernel buffers and the sender's TCP flow control, as they would behind a dead router; nothing inside a stream is
//!   ever discarded. New connections are accepted and held without connecting upstream. Every connection that lived
//!   through a cut is reset (RST on both sides) when the path heals, since TCP cannot lose bytes in the middle of a
//!   connection and a partition long enough to matter would have timed it out;
//! - **delay** (latency ± jitter per chunk, order kept), **rate** (bytes/s per connection and direction), **corrupt**
//!   (each byte replaced with probability p): [`LinkFault`]s on the path, peer proxies only;
//! - **reset** (a [`LinkFault`] on link `i -> j`): proxy `i -> j` closes its listener, so connections are refused
//!   by the kernel, and resets every connection it carries.
//!
//! Client proxies (`client@n1->n2`: a client standing beside node 1 talking to node 2's client port) follow the grudge
//! of path `n1 -> n2` (and `n2 -> n1` for replies) but no link faults, so a client beside a minority sees what it would
//! see in a real partition.
//!
//! Bounds: at most `max_connections` concurrent connections per proxy (more are reset at accept), at most
//! `chunks_in_flight` chunks of `chunk_bytes` queued per direction, a connect timeout upstream. Every task ends when
//! the mesh is dropped.

mod connection;
#[cfg(test)]
mod tests;

use super::grudge::{Grudge, Link};
use super::link_fault::{LinkFault, LinkFaultKind};
use connection::{ConnectionCtx, Counters};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// Which proxy: a peer link, or a client beside a node talking to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProxyId {
    /// Node `from` dialling node `to`'s peer port.
    Peer(Link),
    /// A client standing beside node `beside`, dialling node `to`'s client port (`beside` may equal `to`).
    Client {
        /// Where the client stands in the partition.
        beside: usize,
        /// The node it talks to.
        to: usize,
    },
}

impl ProxyId {
    /// Paths (sender -> receiver) of the bytes flowing forward (to the upstream) and backward (replies).
    fn paths(self) -> (Link, Link) {
        let (from, to) = match self {
            ProxyId::Peer(link) => (link.from, link.to),
            ProxyId::Client { beside, to } => (beside, to),
        };
        (Link::new(from, to), Link::new(to, from))
    }
}

impl fmt::Display for ProxyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyId::Peer(link) => write!(f, "{link}"),
            ProxyId::Client { beside, to } => write!(f, "client@{}", Link::new(*beside, *to)),
        }
    }
}

impl Serialize for ProxyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One proxy to start: where it listens and where it forwards.
#[derive(Debug, Clone)]
pub struct ProxySpec {
    /// Which link it serves.
    pub id: ProxyId,
    /// Address to listen on (port 0 picks one; read it back with [`ProxyMesh::listen_addr`]).
    pub listen: SocketAddr,
    /// The node's real address (peer port for peer proxies, client port for client proxies).
    pub upstream: SocketAddr,
}

/// Bounds of the mesh.
#[derive(Debug, Clone, Copy)]
pub struct ProxyLimits {
    /// Concurrent connections per proxy; more are reset at accept.
    pub max_connections: usize,
    /// Timeout of the upstream connect.
    pub connect_timeout: Duration,
    /// Largest chunk read at once.
    pub chunk_bytes: usize,
    /// Chunks queued per direction of a connection (bounds memory under delay: `chunk_bytes * chunks_in_flight`).
    pub chunks_in_flight: usize,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_connections: 256,
            connect_timeout: Duration::from_secs(2),
            chunk_bytes: 16 * 1024,
            chunks_in_flight: 64,
        }
    }
}

/// The state of one path (bytes sent by one node to another), shared with every connection that carries it.
#[derive(Debug, Clone, Default, PartialEq)]
struct PathState {
    /// Nothing flows.
    cut: bool,
    /// Incremented each time the path becomes cut, so a connection notices even a cut it did not see happen.
    cut_epoch: u64,
    delay_ms: u64,
    jitter_ms: u64,
    rate_bytes_per_s: Option<u64>,
    corrupt_probability: f64,
}

/// Errors of the proxy mesh.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A listener could not bind.
    #[error("proxy {proxy}: cannot listen on {addr}: {source}")]
    Bind {
        /// The proxy.
        proxy: ProxyId,
        /// Its listen address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// A grudge or link names nodes outside the mesh.
    #[error("{what} does not fit a mesh of {node_count} nodes")]
    OutOfRange {
        /// What was asked.
        what: String,
        /// Mesh size.
        node_count: usize,
    },
    /// The fault makes no sense here.
    #[error("{0}")]
    Invalid(String),
}

/// Counters of one proxy since the mesh started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProxyStats {
    /// Which proxy.
    pub id: ProxyId,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections reset at accept because `max_connections` were open.
    pub over_limit: u64,
    /// Connections aborted with RST (reset fault, heal after a cut, failed upstream connect, shutdown).
    pub aborted: u64,
    /// Bytes forwarded towards the upstream node.
    pub forward_bytes: u64,
    /// Bytes forwarded back.
    pub backward_bytes: u64,
    /// Bytes replaced by the corrupt fault (both directions).
    pub corrupted_bytes: u64,
}

struct Proxy {
    spec: ProxySpec,
    reset: watch::Sender<bool>,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct Control {
    grudge: Grudge,
    faults: BTreeMap<Link, BTreeMap<LinkFaultKind, LinkFault>>,
}

/// A running mesh of proxies. Dropping it stops every proxy and connection task.
pub struct ProxyMesh {
    node_count: usize,
    /// Index `from * node_count + to`: the state of bytes sent by `from` to `to`.
    paths: Vec<watch::Sender<PathState>>,
    proxies: Vec<Proxy>,
    control: Mutex<Control>,
    shutdown: watch::Sender<bool>,
}

impl ProxyMesh {
    /// Binds every proxy's listener (failing on the first that cannot bind) and starts serving, all paths passing.
    /// `seed` feeds the jitter and corruption streams (`crate::rng::stream` per proxy, connection and direction).
    pub async fn start(
        node_count: usize,
        specs: Vec<ProxySpec>,
        limits: ProxyLimits,
        seed: u64,
    ) -> Result<ProxyMesh, ProxyError> {
        let paths: Vec<watch::Sender<PathState>> = (0..node_count * node_count)
            .map(|_| watch::Sender::new(PathState::default()))
            .collect();
        let (shutdown, _) = watch::channel(false);
        let mut proxies = Vec::with_capacity(specs.len());
        for mut spec in specs {
            let (forward, backward) = spec.id.paths();
            let in_range = |l: Link| l.from < node_count && l.to < node_count;
            let self_peer = matches!(spec.id, ProxyId::Peer(l) if l.from == l.to);
            if !in_range(forward) || self_peer {
                return Err(ProxyError::OutOfRange {
                    what: format!("proxy {}", spec.id),
                    node_count,
                });
            }
            let listener = TcpListener::bind(spec.listen)
                .await
                .map_err(|source| ProxyError::Bind {
                    proxy: spec.id,
                    addr: spec.listen,
                    source,
                })?;
            spec.listen = listener.local_addr().map_err(|source| ProxyError::Bind {
                proxy: spec.id,
                addr: spec.listen,
                source,
            })?;
            let (reset, _) = watch::channel(false);
            let counters = Arc::new(Counters::default());
            let listener_task = ListenerTask {
                spec: spec.clone(),
                limits,
                seed,
                forward: paths[forward.from * node_count + forward.to].subscribe(),
                backward: paths[backward.from * node_count + backward.to].subscribe(),
                reset: reset.subscribe(),
                shutdown: shutdown.subscribe(),
                counters: counters.clone(),
            };
            let task = tokio::spawn(listener_task.run(listener));
            proxies.push(Proxy {
                spec,
                reset,
                counters,
                task,
            });
        }
        Ok(ProxyMesh {
            node_count,
            paths,
            proxies,
            control: Mutex::new(Control {
                grudge: Grudge::none(node_count),
                faults: BTreeMap::new(),
            }),
            shutdown,
        })
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// Where a proxy listens (the bound address, so port 0 is resolved).
    pub fn listen_addr(&self, id: ProxyId) -> Option<SocketAddr> {
        self.proxies.iter().find(|p| p.spec.id == id).map(|p| p.spec.listen)
    }

    /// Replaces the current grudge (an empty grudge heals every partition). Takes effect at once.
    pub fn apply(&self, grudge: &Grudge) -> Result<(), ProxyError> {
        if grudge.node_count() != self.node_count {
            return Err(ProxyError::OutOfRange {
                what: format!("grudge `{grudge}` of {} nodes", grudge.node_count()),
                node_count: self.node_count,
            });
        }
        let mut control = self.control.lock().expect("proxy control poisoned");
        control.grudge = grudge.clone();
        self.publish(&control);
        Ok(())
    }

    /// Heals every partition (link faults stay).
    pub fn heal(&self) {
        self.apply(&Grudge::none(self.node_count))
            .expect("a grudge of the mesh's own size fits");
    }

    /// The grudge in force.
    pub fn grudge(&self) -> Grudge {
        self.control.lock().expect("proxy control poisoned").grudge.clone()
    }

    /// Adds `fault` to `link` (replacing a fault of the same kind there). Loss is refused: a byte stream cannot lose
    /// packets (use the netns backend).
    pub fn set_link_fault(&self, link: Link, fault: LinkFault) -> Result<(), ProxyError> {
        fault.validate().map_err(ProxyError::Invalid)?;
        if link.from >= self.node_count || link.to >= self.node_count || link.from == link.to {
            return Err(ProxyError::OutOfRange {
                what: format!("link {link}"),
                node_count: self.node_count,
            });
        }
        if fault.kind() == LinkFaultKind::Loss {
            return Err(ProxyError::Invalid(
                "the proxy backend cannot drop packets (loss): use `network: netns`".into(),
            ));
        }
        let mut control = self.control.lock().expect("proxy control poisoned");
        control.faults.entry(link).or_default().insert(fault.kind(), fault);
        self.publish(&control);
        Ok(())
    }

    /// Removes the fault of `kind` from `link`, if any.
    pub fn clear_link_fault(&self, link: Link, kind: LinkFaultKind) {
        let mut control = self.control.lock().expect("proxy control poisoned");
        if let Some(faults) = control.faults.get_mut(&link) {
            faults.remove(&kind);
            if faults.is_empty() {
                control.faults.remove(&link);
            }
        }
        self.publish(&control);
    }

    /// Removes every link fault.
    pub fn clear_link_faults(&self) {
        let mut control = self.control.lock().expect("proxy control poisoned");
        control.faults.clear();
        self.publish(&control);
    }

    /// Counters of every proxy.
    pub fn stats(&self) -> Vec<ProxyStats> {
        self.proxies
            .iter()
            .map(|p| {
                let c = &p.counters;
                ProxyStats {
                    id: p.spec.id,
                    accepted: c.accepted.load(Ordering::Relaxed),
                    over_limit: c.over_limit.load(Ordering::Relaxed),
                    aborted: c.aborted.load(Ordering::Relaxed),
                    forward_bytes: c.forward_bytes.load(Ordering::Relaxed),
                    backward_bytes: c.backward_bytes.load(Ordering::Relaxed),
                    corrupted_bytes: c.corrupted_bytes.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// Pushes the control state to every path and proxy; only changed values wake connections.
    fn publish(&self, control: &Control) {
        let n = self.node_count;
        for from in 0..n {
            for to in 0..n {
                let link = Link::new(from, to);
                let cut = from != to && !control.grudge.hears(to, from);
                let faults = control.faults.get(&link);
                let fault = |kind| faults.and_then(|f: &BTreeMap<LinkFaultKind, LinkFault>| f.get(&kind));
                self.paths[from * n + to].send_if_modified(|state| {
                    let mut next = state.clone();
                    if cut && !state.cut {
                        next.cut_epoch += 1;
                    }
                    next.cut = cut;
                    (next.delay_ms, next.jitter_ms) = match fault(LinkFaultKind::Delay) {
                        Some(LinkFault::Delay { latency, jitter }) => (latency.0, jitter.0),
                        _ => (0, 0),
                    };
                    next.rate_bytes_per_s = match fault(LinkFaultKind::Rate) {
                        Some(LinkFault::Rate { bytes_per_s }) => Some(*bytes_per_s),
                        _ => None,
                    };
                    next.corrupt_probability = match fault(LinkFaultKind::Corrupt) {
                        Some(LinkFault::Corrupt { probability }) => *probability,
                        _ => 0.0,
                    };
                    let changed = next != *state;
                    *state = next;
                    changed
                });
            }
        }
        for proxy in &self.proxies {
            if let ProxyId::Peer(link) = proxy.spec.id {
                let reset = control
                    .faults
                    .get(&link)
                    .is_some_and(|f| f.contains_key(&LinkFaultKind::Reset));
                proxy
                    .reset
                    .send_if_modified(|state| std::mem::replace(state, reset) != reset);
            }
        }
    }
}

impl Drop for ProxyMesh {
    fn drop(&mut self) {
        // Connection tasks watch `shutdown` (and its sender going away); listeners are aborted outright.
        self.shutdown.send_replace(true);
        for proxy in &self.proxies {
            proxy.task.abort();
        }
    }
}

/// One proxy's accept loop.
struct ListenerTask {
    spec: ProxySpec,
    limits: ProxyLimits,
    seed: u64,
    forward: watch::Receiver<PathState>,
    backward: watch::Receiver<PathState>,
    reset: watch::Receiver<bool>,
    shutdown: watch::Receiver<bool>,
    counters: Arc<Counters>,
}

impl ListenerTask {
    async fn run(mut self, listener: TcpListener) {
        let permits = Arc::new(Semaphore::new(self.limits.max_connections));
        let mut listener = Some(listener);
        let mut connection_index = 0u64;
        loop {
            if *self.reset.borrow_and_update() {
                // Closing the listener makes the kernel refuse new connections (RST to the SYN).
                listener = None;
            } else if listener.is_none() {
                listener = self.rebind().await;
                if listener.is_none() {
                    return; // shut down while rebinding
                }
            }
            let accept = async {
                match &listener {
                    Some(l) => l.accept().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                accepted = accept => match accepted {
                    Ok((stream, _)) => {
                        connection_index += 1;
                        self.admit(stream, connection_index, &permits);
                    }
                    Err(error) => {
                        // EMFILE and the like: back off instead of spinning.
                        tracing::warn!(proxy = %self.spec.id, %error, "proxy accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                changed = self.reset.changed() => if changed.is_err() { return },
                _ = connection::shutdown_signal(self.shutdown.clone()) => return,
            }
        }
    }

    fn admit(&self, stream: tokio::net::TcpStream, index: u64, permits: &Arc<Semaphore>) {
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            self.counters.over_limit.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_zero_linger();
            return;
        };
        let ctx = ConnectionCtx {
            proxy: self.spec.id,
            upstream: self.spec.upstream,
            limits: self.limits,
            data_faults: matches!(self.spec.id, ProxyId::Peer(_)),
            forward: self.forward.clone(),
            backward: self.backward.clone(),
            reset: self.reset.clone(),
            shutdown: self.shutdown.clone(),
            counters: self.counters.clone(),
            seed: self.seed,
            index,
        };
        tokio::spawn(async move {
            connection::run(stream, ctx).await;
            drop(permit);
        });
    }

    /// Rebinds the listen address after a reset heals; retries every 100 ms until it works or the mesh shuts down.
    async fn rebind(&mut self) -> Option<TcpListener> {
        for attempt in 0u64.. {
            match TcpListener::bind(self.spec.listen).await {
                Ok(listener) => return Some(listener),
                Err(error) if attempt % 50 == 0 => {
                    tracing::warn!(proxy = %self.spec.id, addr = %self.spec.listen, %error, "proxy cannot rebind")
                }
                Err(_) => {}
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = connection::shutdown_signal(self.shutdown.clone()) => return None,
            }
        }
        None
    }
}
