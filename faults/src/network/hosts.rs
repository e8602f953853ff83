//! The network of a run on hosts.
//!
//! - Partitions: each host's own nftables drops what comes from the nodes it must not hear, Jepsen's grudges
//!   (`iptables -A INPUT -s PEER -j DROP`), set through the host's agent. Only the nodes' addresses are ever named,
//!   so the control's own SSH connection to a host is never cut.
//! - Link faults (delay, rate, corrupt, reset), when the plan has any: each host's agent runs the proxies of its
//!   node's outgoing peer links (a [`super::proxy::ProxyMesh`] holding only those), and its node dials each peer
//!   through them. Every host's mesh is told every link fault, so the bytes a node sends to another are governed by
//!   the same path state whichever of the two opened the connection, exactly as in the one mesh of a local run.
//! - Packet loss on a link `from -> to`: host `to`'s nftables drops that share of the packets from `from`'s address
//!   (`numgen random mod 100 < P`), as the netns backend does in a local run; it needs no proxies.

use super::{Grudge, Link, LinkFault, LinkFaultKind, NetworkError};
use futures_util::future::BoxFuture;
use std::net::IpAddr;

/// A share of the packets from one address that a host drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lossy {
    /// The sender's address.
    pub from: IpAddr,
    /// Percent of its packets dropped (1..=100).
    pub percent: u8,
}

/// What one host's firewall drops: everything from `deaf_to`, and a share of what comes from each of `loss`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    /// Senders whose packets are all dropped (a partition).
    pub deaf_to: Vec<IpAddr>,
    /// Senders whose packets are dropped at random (packet loss).
    pub loss: Vec<Lossy>,
}

/// Sets one host's firewall.
pub trait Firewall: Send + Sync {
    /// Makes node `node`'s host drop what `rules` say, replacing what it dropped before (empty rules: nothing).
    fn deafen(&self, node: usize, rules: HostRules) -> BoxFuture<'_, Result<(), String>>;
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
    /// The rules in force, as meant and as last set on each host.
    state: tokio::sync::Mutex<Rules>,
}

/// The partitions and losses in force, and what each host was last told (held while hosts are set, so one change
/// is in force at a time).
struct Rules {
    /// Each host's grudge: the nodes it must not hear.
    deaf_to: Vec<Vec<IpAddr>>,
    /// Packet loss by link.
    loss: std::collections::BTreeMap<Link, u8>,
    /// What each host's firewall holds (`None`: unknown, set it again).
    applied: Vec<Option<HostRules>>,
}

impl HostsNetwork {
    /// Nodes at `node_ips`, each host's firewall set through `firewall`.
    pub fn new(node_ips: Vec<IpAddr>, firewall: Box<dyn Firewall>) -> HostsNetwork {
        let n = node_ips.len();
        HostsNetwork {
            node_ips,
            firewall,
            links: None,
            state: tokio::sync::Mutex::new(Rules {
                deaf_to: vec![Vec::new(); n],
                loss: Default::default(),
                applied: vec![None; n],
            }),
        }
    }

    /// With link faults through the hosts' proxies.
    pub fn with_links(mut self, links: Box<dyn HostLinks>) -> HostsNetwork {
        self.links = Some(links);
        self
    }

    /// Applies a link change on every host: packet loss in the hosts' firewalls, the rest in their proxies.
    pub async fn change_links(&self, change: LinkChange) -> Result<(), NetworkError> {
        let loss = match &change {
            LinkChange::Set(link, LinkFault::Loss { percent }) => Some((*link, Some(*percent))),
            LinkChange::Clear(link, LinkFaultKind::Loss) => Some((*link, None)),
            _ => None,
        };
        if let Some((link, percent)) = loss {
            let mut state = self.state.lock().await;
            match percent {
                Some(percent) => state.loss.insert(link, percent),
                None => state.loss.remove(&link),
            };
            return self.set_hosts(&mut state).await;
        }
        if matches!(change, LinkChange::ClearAll) {
            let mut state = self.state.lock().await;
            state.loss.clear();
            self.set_hosts(&mut state).await?;
        }
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
        let mut state = self.state.lock().await;
        state.deaf_to = (0..self.node_count())
            .map(|to| grudge.deaf_to(to).iter().map(|&from| self.node_ips[from]).collect())
            .collect();
        self.set_hosts(&mut state).await
    }

    /// Sets every host whose rules changed, all at once (one host after another took a round trip each).
    async fn set_hosts(&self, state: &mut Rules) -> Result<(), NetworkError> {
        let changes: Vec<(usize, HostRules)> = (0..self.node_count())
            .map(|to| {
                let loss = state
                    .loss
                    .iter()
                    .filter(|(link, _)| link.to == to)
                    .map(|(link, &percent)| Lossy {
                        from: self.node_ips[link.from],
                        percent,
                    })
                    .collect();
                (
                    to,
                    HostRules {
                        deaf_to: state.deaf_to[to].clone(),
                        loss,
                    },
                )
            })
            .filter(|(to, rules)| state.applied[*to].as_ref() != Some(rules))
            .collect();
        for (to, _) in &changes {
            state.applied[*to] = None; // unknown until the host says it is set
        }
        let setting = changes
            .iter()
            .map(|(to, rules)| self.firewall.deafen(*to, rules.clone()));
        let mut failed = Vec::new();
        for ((to, rules), result) in changes.iter().zip(futures_util::future::join_all(setting).await) {
            match result {
                Ok(()) => state.applied[*to] = Some(rules.clone()),
                Err(e) => failed.push(format!("n{}'s host: {e}", to + 1)),
            }
        }
        match failed.as_slice() {
            [] => Ok(()),
            _ => Err(NetworkError::Hosts(failed.join("; "))),
        }
    }
}
