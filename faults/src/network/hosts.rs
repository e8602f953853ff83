//! The network of a run on hosts.
//!
//! - Partitions: each host's own nftables drops what comes from the nodes it must not hear, Jepsen's grudges
//!   (`iptables -A INPUT -s PEER -j DROP`), set through the host's agent. Only the nodes' addresses are ever named,
//!   so the control's own SSH connection to a host is never cut.
//! - Link faults (delay, rate, corrupt, reset), when the plan has any: each host's agent runs the proxies of its
//!   node's outgoing peer links (a [`super::proxy::ProxyMesh`] holding only those), and its node dials each peer
//!   through them. Every host's mesh is told every link fault, so the bytes a node sends to another are governed by
//!   the same path state whichever of the two opened the connection, exactly as in the one mesh of a local run.

use super::{Grudge, Link, LinkFault, LinkFaultKind, NetworkError};
use futures_util::future::BoxFuture;
use std::net::IpAddr;

/// Sets one host's firewall: drop everything that comes from `from` (an empty list: drop nothing).
pub trait Firewall: Send + Sync {
    /// Makes node `node`'s host deaf to `from`, replacing what it was deaf to before.
    fn deafen(&self, node: usize, from: Vec<IpAddr>) -> BoxFuture<'_, Result<(), String>>;
}

/// A change of the link faults, told to every host's proxies.
#[derive(Debug, Clone)]
pub enum LinkChange {
    /// Put `fault` on the link (replacing one of its kind).
    Set(Link, LinkFault),
    /// Clear the fault of this kind from the link.
    Clear(Link, LinkFaultKind),
    /// Clear every link fault.
    ClearAll,
}

/// The hosts' proxies: a link change applied on every host.
pub trait HostLinks: Send + Sync {
    /// Applies `change` on every host's proxies.
    fn change(&self, change: LinkChange) -> BoxFuture<'_, Result<(), String>>;
}

/// The network of a run on hosts.
pub struct HostsNetwork {
    node_ips: Vec<IpAddr>,
    firewall: Box<dyn Firewall>,
    /// The hosts' proxies, when the plan has link faults (else peers dial each other directly).
    links: Option<Box<dyn HostLinks>>,
    /// What each host is deaf to now, as last set (`None`: unknown, set it again); held while a grudge is set,
    /// so one is in force at a time.
    applied: tokio::sync::Mutex<Vec<Option<Vec<IpAddr>>>>,
}

impl HostsNetwork {
    /// Nodes at `node_ips`, each host's firewall set through `firewall`.
    pub fn new(node_ips: Vec<IpAddr>, firewall: Box<dyn Firewall>) -> HostsNetwork {
        let n = node_ips.len();
        HostsNetwork {
            node_ips,
            firewall,
            links: None,
            applied: tokio::sync::Mutex::new(vec![None; n]),
        }
    }

    /// With link faults through the hosts' proxies.
    pub fn with_links(mut self, links: Box<dyn HostLinks>) -> HostsNetwork {
        self.links = Some(links);
        self
    }

    /// Applies a link change on every host.
    pub async fn change_links(&self, change: LinkChange) -> Result<(), NetworkError> {
        match &self.links {
            Some(links) => links.change(change).await.map_err(NetworkError::Hosts),
            None if matches!(change, LinkChange::ClearAll) => Ok(()),
            None => Err(NetworkError::Hosts(
                "the hosts' peer traffic is not proxied (the plan had no link fault when the run started)".into(),
            )),
        }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.node_ips.len()
    }

    /// Replaces the grudge in force: each host deaf to exactly the nodes the grudge says it does not hear.
    pub async fn apply(&self, grudge: &Grudge) -> Result<(), NetworkError> {
        if grudge.node_count() != self.node_count() {
            return Err(NetworkError::Hosts(format!(
                "grudge `{grudge}` is for {} nodes, the run has {}",
                grudge.node_count(),
                self.node_count()
            )));
        }
        let mut applied = self.applied.lock().await;
        // Every host that must change, set at once (one host after another took a round trip each).
        let changes: Vec<(usize, Vec<IpAddr>)> = (0..self.node_count())
            .map(|to| (to, grudge.deaf_to(to).iter().map(|&from| self.node_ips[from]).collect()))
            .filter(|(to, from): &(usize, Vec<IpAddr>)| applied[*to].as_ref() != Some(from))
            .collect();
        for (to, _) in &changes {
            applied[*to] = None; // unknown until the host says it is set
        }
        let setting = changes.iter().map(|(to, from)| self.firewall.deafen(*to, from.clone()));
        let mut failed = Vec::new();
        for ((to, from), result) in changes.iter().zip(futures_util::future::join_all(setting).await) {
            match result {
                Ok(()) => applied[*to] = Some(from.clone()),
                Err(e) => failed.push(format!("n{}'s host: {e}", to + 1)),
            }
        }
        match failed.as_slice() {
            [] => Ok(()),
            _ => Err(NetworkError::Hosts(failed.join("; "))),
        }
    }
}
