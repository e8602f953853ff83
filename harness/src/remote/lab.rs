//! A run's nodes on hosts: node i on the i-th host of the hosts file, reached over SSH with its agent running, its
//! files under `WORKDIR/runs/RUN_ID/n<i+1>` on that host, its processes in [`RemoteHands`].
//!
//! What a run on hosts can do today is what those hands do: start, kill, pause, stop and restart nodes, read their
//! logs, run their one-shot commands (format, offline verification). [`check_plan`] refuses, before anything
//! starts, what needs more of a host than that (network faults, the fault filesystem, disk surgery, clock faults).

use super::hosts::HostSpec;
use super::ssh::{connect, Connected, SshOptions};
use crate::plan::Plan;
use crate::remote::hands::{Hands, RemoteHands};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Each host's firewall, set through its agent (`deafen`).
struct AgentFirewall(Vec<Arc<super::client::AgentClient>>);

impl faultline_faults::network::hosts::Firewall for AgentFirewall {
    fn deafen(&self, node: usize, from: Vec<IpAddr>) -> futures::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.0[node]
                .call(super::agent::Request::Deafen { from })
                .await
                .map(|_| ())
        })
    }
}

/// Round trips per host for the clock sync at connect.
const CLOCK_SAMPLES: usize = 8;

/// Where a run's nodes live when they live on hosts.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The hosts, node i on the i-th.
    pub hosts: Vec<HostSpec>,
    /// How to reach them.
    pub ssh: SshOptions,
}

/// The connected hosts of one run.
pub struct RemoteLab {
    /// Each node's host, connected (node i on `hosts[i]`).
    pub hosts: Vec<Connected>,
    /// The nodes' folder on every host: `WORKDIR/runs/RUN_ID`.
    pub nodes_dir: PathBuf,
    /// Each node's address: its host's, as the control's SSH connection reached it.
    pub node_ips: Vec<IpAddr>,
    /// Each node's hands.
    pub hands: Vec<Arc<dyn Hands>>,
    /// ssh's control sockets (removed with the lab).
    _control_dir: tempfile::TempDir,
}

/// Why `plan` cannot run on hosts yet, if it cannot: each feature it uses that a host cannot do yet, named.
pub fn check_plan(plan: &Plan, hosts: &[HostSpec]) -> Result<(), String> {
    let mut lacking = Vec::new();
    if plan.system.kind() != "reference" {
        lacking.push(format!(
            "the {} adapter (the reference node runs on hosts so far)",
            plan.system.kind()
        ));
    }
    let links = plan.nemesis.network.as_ref().is_some_and(|n| !n.value.links.is_empty())
        || plan
            .nemesis
            .triggers
            .iter()
            .any(|t| t.value.action.kind == faultline_faults::trigger::TriggeredKind::Link);
    if links {
        lacking.push(
            "link faults, timed or triggered (partitions between hosts work; delays, loss and resets come next)".into(),
        );
    }
    if plan.network.backend == crate::plan::NetworkBackend::Netns {
        lacking.push(
            "`network: {backend: netns}` (namespaces are this machine's; on hosts, partitions are each host's nft)"
                .into(),
        );
    }
    if plan.disk.fault_fs {
        lacking.push("the fault filesystem (`disk: {fault_fs: true}`: power loss, I/O faults)".into());
    }
    if plan.nemesis.has_clock_faults() {
        lacking.push("clock faults".into());
    }
    if !plan.final_phase.surgery.is_empty() || plan.final_phase.test_only_corrupt_wal.is_some() {
        lacking.push("disk surgery in the final phase".into());
    }
    let corrupt = plan.nemesis.process.as_ref().is_some_and(|p| {
        p.value
            .faults
            .iter()
            .any(|f| f.kind == faultline_faults::process::ProcessFault::Corrupt)
            || p.value
                .script
                .iter()
                .any(|f| f.kind == faultline_faults::process::ProcessFault::Corrupt)
    });
    let triggered_corrupt = plan
        .nemesis
        .triggers
        .iter()
        .any(|t| t.value.action.kind == faultline_faults::trigger::TriggeredKind::Corrupt);
    if corrupt || triggered_corrupt {
        lacking.push("`corrupt` faults (cuts of a live node's files)".into());
    }
    let nodes = plan.system.nodes();
    if hosts.len() < nodes {
        lacking.push(format!(
            "{nodes} hosts: the hosts file names {} (one host per node)",
            hosts.len()
        ));
    }
    let workdirs: std::collections::BTreeSet<&PathBuf> = hosts.iter().take(nodes).map(|h| &h.workdir).collect();
    if workdirs.len() > 1 {
        lacking.push("one workdir on every host (the hosts file gives several)".into());
    }
    match lacking.as_slice() {
        [] => Ok(()),
        _ => Err(format!(
            "plan {} cannot run on hosts yet: it needs {}",
            plan.name,
            lacking.join("; ")
        )),
    }
}

impl RemoteLab {
    /// Connects node i's host for each of `node_count` nodes (all at once), with faultline installed and its agent
    /// running; the nodes' folder is `WORKDIR/runs/RUN_ID`. An unreachable host ends it, naming the host.
    pub async fn connect(options: &RemoteOptions, node_count: usize, run_id: &str) -> anyhow::Result<RemoteLab> {
        let control_dir = tempfile::Builder::new().prefix("faultline-ssh-").tempdir()?;
        let hosts = &options.hosts[..node_count];
        let connecting = hosts
            .iter()
            .map(|h| connect(h, &options.ssh, control_dir.path(), CLOCK_SAMPLES));
        let mut connected = Vec::new();
        for result in futures::future::join_all(connecting).await {
            connected.push(result.map_err(anyhow::Error::msg)?);
        }
        let nodes_dir = hosts[0].workdir.join("runs").join(run_id);
        let mut node_ips = Vec::new();
        let mut hands: Vec<Arc<dyn Hands>> = Vec::new();
        for (node, host) in connected.iter_mut().enumerate() {
            let arrived = host.hello["ssh_address"]
                .as_str()
                .and_then(|a| a.parse::<IpAddr>().ok());
            let ip = host.host.address.or(arrived).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: its agent could not say which address the control reached it at: give it `address=IP` in \
                     the hosts file",
                    host.host
                )
            })?;
            node_ips.push(ip);
            let (_, none) = tokio::sync::mpsc::unbounded_channel();
            let events = std::mem::replace(&mut host.events, none);
            let log = nodes_dir
                .join(faultline_faults::process::node_name(node))
                .join("node.log");
            hands.push(RemoteHands::new(host.agent.clone(), events, log));
        }
        Ok(RemoteLab {
            hosts: connected,
            nodes_dir,
            node_ips,
            hands,
            _control_dir: control_dir,
        })
    }

    /// What the run's metadata says of the hosts: each node's host, address, build and clock (offset from the
    /// control's and its uncertainty).
    pub fn describe(&self) -> Value {
        self.hosts
            .iter()
            .zip(&self.node_ips)
            .enumerate()
            .map(|(node, (host, ip))| {
                json!({
                    "node": faultline_faults::process::node_name(node),
                    "host": host.host.to_string(),
                    "address": ip.to_string(),
                    "kernel": host.hello["kernel"],
                    "uploaded": host.uploaded,
                    "clock": host.clock,
                })
            })
            .collect()
    }

    /// The network of a plan with partitions: each host's own nftables, set through its agent.
    pub fn network(&self, plan: &Plan) -> Option<faultline_faults::network::Network> {
        use faultline_faults::network::hosts::HostsNetwork;
        plan.nemesis.has_network_faults().then(|| {
            let agents = self.hosts.iter().map(|h| h.agent.clone()).collect();
            let hosts = HostsNetwork::new(self.node_ips.clone(), Box::new(AgentFirewall(agents)));
            faultline_faults::network::Network::Hosts(Arc::new(hosts))
        })
    }

    /// The faultline executable on node `node`'s host.
    pub fn executable(&self, node: usize) -> PathBuf {
        self.hosts[node].executable.clone()
    }

    /// Ends every agent (each kills what it started), then the connections.
    pub async fn close(self) {
        for host in &self.hosts {
            let _ = host.agent.call(super::agent::Request::Shutdown).await;
        }
    }
}
