//! Network faults: partitions (any grudge, one-way included) and slow, throttled, corrupting, resetting or lossy
//! links, through one of two backends.
//!
//! - [`grudge`]: who does not hear whom ([`Grudge`]), and directed [`Link`]s. The history records grudges.
//! - [`shape`]: Jepsen's partition shapes as pure, seeded functions producing grudges.
//! - [`link_fault`]: link faults and which backend can inject which ([`BackendKind::supports`]).
//! - [`proxy`]: the userspace proxy mesh (no root), for systems that take per-node peer addresses.
//! - [`netns`]: network namespaces and nftables (root), for black-box systems; nothing leaves the machine.
//! - [`schedule`]: the plan spec, the seeded schedule and the network family of the timed interpreter, which records
//!   `partition-start`/`-stop` and `link-fault`/`-heal` events.
//!
//! The harness builds one backend per run, wraps it in a [`Network`], and hands that to the network family.

pub mod grudge;
pub mod hosts;
pub mod link_fault;
pub mod netns;
pub mod proxy;
pub mod schedule;
pub mod shape;

pub use grudge::{Grudge, Link};
pub use link_fault::{BackendKind, LinkFault, LinkFaultKind};

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A plan's choice of network backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendChoice {
    /// The proxy mesh.
    Proxy,
    /// Namespaces and nftables.
    Netns,
    /// netns when root, `ip` and `nft` are present and namespaces can be created, else proxy.
    #[default]
    Auto,
}

impl BackendChoice {
    /// The backend to use and a sentence saying why, for the run log and the history. `netns` without root or tools
    /// is an error naming what to install; `auto` never fails.
    pub fn resolve(self) -> Result<(BackendKind, String), netns::NetnsError> {
        match self {
            BackendChoice::Proxy => Ok((BackendKind::Proxy, "network backend: proxy (chosen by the plan)".into())),
            BackendChoice::Netns => {
                netns::preflight()?;
                Ok((BackendKind::Netns, "network backend: netns (chosen by the plan)".into()))
            }
            BackendChoice::Auto => Ok(match netns::preflight() {
                Ok(()) => (
                    BackendKind::Netns,
                    "network backend: netns (auto: root, ip and nft present)".into(),
                ),
                Err(why) => (BackendKind::Proxy, format!("network backend: proxy (auto: {why})")),
            }),
        }
    }
}

/// Errors of either backend.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// From the proxy mesh.
    #[error(transparent)]
    Proxy(#[from] proxy::ProxyError),
    /// From the netns lab.
    #[error(transparent)]
    Netns(#[from] netns::NetnsError),
    /// A blocking netns call did not finish.
    #[error("netns call aborted: {0}")]
    Join(String),
    /// From a host's firewall (its agent).
    #[error("{0}")]
    Hosts(String),
}

/// A run's network, over either backend. Cheap to clone.
#[derive(Clone)]
pub enum Network {
    /// The proxy mesh.
    Proxy(Arc<proxy::ProxyMesh>),
    /// The netns lab.
    Netns(Arc<netns::NetnsLab>),
    /// The hosts' own firewalls (a run on hosts).
    Hosts(Arc<hosts::HostsNetwork>),
}

impl Network {
    /// Which backend.
    pub fn kind(&self) -> BackendKind {
        match self {
            Network::Proxy(_) => BackendKind::Proxy,
            Network::Netns(_) => BackendKind::Netns,
            Network::Hosts(_) => BackendKind::Hosts,
        }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        match self {
            Network::Proxy(mesh) => mesh.node_count(),
            Network::Netns(lab) => lab.node_count(),
            Network::Hosts(hosts) => hosts.node_count(),
        }
    }

    /// Replaces the grudge in force (an empty grudge heals).
    pub async fn apply(&self, grudge: &Grudge) -> Result<(), NetworkError> {
        match self {
            Network::Proxy(mesh) => Ok(mesh.apply(grudge)?),
            Network::Netns(lab) => {
                let grudge = grudge.clone();
                blocking(lab, move |lab| lab.apply(&grudge)).await
            }
            Network::Hosts(hosts) => hosts.apply(grudge).await,
        }
    }

    /// Heals every partition; link faults stay.
    pub async fn heal(&self) -> Result<(), NetworkError> {
        self.apply(&Grudge::none(self.node_count())).await
    }

    /// Puts `fault` on `link` (replacing a fault of the same kind there).
    pub async fn set_link_fault(&self, link: Link, fault: LinkFault) -> Result<(), NetworkError> {
        match self {
            Network::Proxy(mesh) => Ok(mesh.set_link_fault(link, fault)?),
            Network::Netns(lab) => blocking(lab, move |lab| lab.set_link_fault(link, fault)).await,
            Network::Hosts(hosts) => {
                BackendKind::Hosts.check(fault.kind()).map_err(NetworkError::Hosts)?;
                hosts.change_links(hosts::LinkChange::Set(link, fault)).await
            }
        }
    }

    /// Clears the fault of `kind` from `link`.
    pub async fn clear_link_fault(&self, link: Link, kind: LinkFaultKind) -> Result<(), NetworkError> {
        match self {
            Network::Proxy(mesh) => {
                mesh.clear_link_fault(link, kind);
                Ok(())
            }
            Network::Netns(lab) => blocking(lab, move |lab| lab.clear_link_fault(link, kind)).await,
            Network::Hosts(hosts) => hosts.change_links(hosts::LinkChange::Clear(link, kind)).await,
        }
    }

    /// Heals every partition and clears every link fault.
    pub async fn heal_everything(&self) -> Result<(), NetworkError> {
        self.heal().await?;
        match self {
            Network::Proxy(mesh) => {
                mesh.clear_link_faults();
                Ok(())
            }
            Network::Netns(lab) => blocking(lab, |lab| lab.clear_link_faults()).await,
            Network::Hosts(hosts) => hosts.change_links(hosts::LinkChange::ClearAll).await,
        }
    }
}

/// Runs a netns call (it spawns `ip`/`nft`) off the async runtime.
async fn blocking(
    lab: &Arc<netns::NetnsLab>,
    call: impl FnOnce(&netns::NetnsLab) -> Result<(), netns::NetnsError> + Send + 'static,
) -> Result<(), NetworkError> {
    let lab = lab.clone();
    tokio::task::spawn_blocking(move || call(&lab))
        .await
        .map_err(|e| NetworkError::Join(e.to_string()))?
        .map_err(NetworkError::from)
}
