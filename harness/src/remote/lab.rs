//! A run's nodes on hosts: node i on the i-th host of the hosts file, reached over SSH with its agent running, its
//! files under `WORKDIR/runs/RUN_ID/n<i+1>` on that host, its processes in [`RemoteHands`].
//!
//! What a run on hosts can do is what those hands do: start, kill, pause, stop and restart nodes, read their logs,
//! run their one-shot commands (format, offline verification), mount the fault filesystem over their data (power
//! loss, I/O faults), cut their files (`corrupt`, final-phase surgery), move their clocks (libfaketime on the host),
//! and partition hosts from each other (each host's nft). [`check_plan`] refuses, before anything starts, what needs
//! more of a host than that (link faults, this machine's namespaces, other adapters).

use super::agent::Request;
use super::client::AgentClient;
use super::hosts::HostSpec;
use super::ssh::{connect, Connected, SshOptions};
use crate::plan::Plan;
use crate::remote::hands::{Hands, RemoteHands};
use faultline_faults::network::hosts::{HostLinks, HostsNetwork, LinkChange};
use faultline_faults::network::{BackendKind, Network};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Each host's firewall, set through its agent (`deafen`).
struct AgentFirewall(Vec<Arc<super::client::AgentClient>>);

impl faultline_faults::network::hosts::Firewall for AgentFirewall {
    fn deafen(
        &self,
        node: usize,
        rules: faultline_faults::network::hosts::HostRules,
    ) -> futures::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.0[node]
                .call(super::agent::Request::Deafen {
                    from: rules.deaf_to,
                    loss: rules.loss,
                })
                .await
                .map(|_| ())
        })
    }
}

/// Every host's proxies, told each link change (all hosts at once).
struct AgentLinks(Vec<Arc<AgentClient>>);

impl HostLinks for AgentLinks {
    fn change(&self, change: LinkChange) -> futures::future::BoxFuture<'_, Result<(), String>> {
        let request = match change {
            LinkChange::Set(link, fault) => Request::MeshSet {
                from: link.from,
                to: link.to,
                fault,
            },
            LinkChange::Clear(link, kind) => Request::MeshClear {
                from: link.from,
                to: link.to,
                kind,
            },
            LinkChange::ClearAll => Request::MeshClearAll,
        };
        Box::pin(async move {
            let calls = self.0.iter().map(|agent| agent.call(request.clone()));
            let failed: Vec<String> = futures::future::join_all(calls)
                .await
                .into_iter()
                .enumerate()
                .filter_map(|(node, answer)| answer.err().map(|e| format!("n{}'s host: {e}", node + 1)))
                .collect();
            match failed.as_slice() {
                [] => Ok(()),
                _ => Err(failed.join("; ")),
            }
        })
    }
}

/// Whether `plan` has link faults that go through proxies (all but packet loss, which each host's nftables does):
/// timed, scripted or triggered.
fn plan_has_proxied_link_faults(plan: &Plan) -> bool {
    let proxied = |fault: &faultline_faults::network::LinkFault| {
        !matches!(fault, faultline_faults::network::LinkFault::Loss { .. })
    };
    plan.nemesis.network.as_ref().is_some_and(|n| {
        n.value.links.iter().any(|l| proxied(&l.fault))
            || n.value
                .script
                .iter()
                .any(|step| step.fault.as_ref().is_some_and(proxied))
    }) || plan.nemesis.triggers.iter().any(|t| {
        t.value.action.kind == faultline_faults::trigger::TriggeredKind::Link
            && t.value.action.fault.as_ref().is_none_or(proxied)
    })
}

/// Most bytes of one node's files a run brings back from its host (a node's WAL and snapshots for a test run are
/// megabytes; a system that keeps gigabytes keeps them on its host, and the run says so).
pub const FETCH_MAX_BYTES: u64 = 1 << 30;

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
    let kind = plan.system.kind();
    if !["reference", "etcd", "exec"].contains(&kind) {
        lacking.push(format!(
            "the {kind} adapter (the reference node, etcd and exec systems run on hosts so far)"
        ));
    }
    if let crate::plan::SystemSpec::Exec(exec) = &plan.system {
        if let Some(user) = &exec.user {
            lacking.push(format!(
                "`system.user: {}` (line {}): on hosts a node's commands run as the agent does, as the hosts file's \
                 SSH user (root, for the fault filesystem and nft); drop `user`",
                user.value,
                user.referenced.line()
            ));
        }
    }
    // On hosts, partitions are each host's nftables whatever backend the plan names (`netns` asks for real packet
    // drops, which they are); link faults go through each host's proxies of the node's peer links, which only a
    // system that dials its peers where faultline says can use.
    if let Some(network) = &plan.nemesis.network {
        if let Err(message) = network.value.validate(plan.system.nodes(), BackendKind::Hosts) {
            lacking.push(message);
        }
    }
    if plan_has_proxied_link_faults(plan) && !plan.system.adapter().capabilities().proxy_partitions {
        lacking.push(format!(
            "link faults on a {kind} cluster (on hosts they go through proxies of each node's peer links, and {kind} \
             dials its peers itself): drop them, or run it here with `network: {{backend: netns}}`"
        ));
    }
    if plan.final_phase.test_only_corrupt_wal.is_some() {
        lacking.push("`final_phase.test_only_corrupt_wal` (a test's hook on this machine's files)".into());
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
        let control_dir = super::ssh::control_dir()?;
        let hosts = &options.hosts[..node_count];
        let connecting = hosts
            .iter()
            .map(|h| connect(h, &options.ssh, control_dir.path(), CLOCK_SAMPLES));
        let mut connected = Vec::new();
        for result in futures::future::join_all(connecting).await {
            connected.push(result.map_err(anyhow::Error::msg)?);
        }
        // One run at a time on a host (checked before anything starts there).
        let claims = connected.iter().map(|h| {
            h.agent.call(Request::Claim {
                dir: h.host.workdir.clone(),
                run: run_id.to_string(),
            })
        });
        for (host, claimed) in connected.iter().zip(futures::future::join_all(claims).await) {
            claimed.map_err(|e| anyhow::anyhow!("{}: {e}", host.host))?;
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

    /// Node `node`'s folder on its host (its log, its clock file; its data dir is the adapter's, inside it).
    pub fn node_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(faultline_faults::process::node_name(node))
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

    /// The network of a plan with network faults: each host's own nftables for partitions, set through its agent;
    /// and when the system routes its peers (`upstreams`: each node's peer address), each host's proxies of its
    /// node's peer links, forwarding to `upstreams[to]`, with `routes[i][j]` = where node i must dial node j
    /// (`None`: peers dial each other). As in a local run's mesh, the proxies carry the peers' traffic whenever the
    /// plan has network faults, so a link fault at any moment (timed, scripted, triggered, replayed) finds them.
    pub async fn network(
        &self,
        plan: &Plan,
        seed: u64,
        upstreams: Option<Vec<SocketAddr>>,
    ) -> anyhow::Result<(Option<Network>, Option<Vec<Vec<SocketAddr>>>)> {
        if !plan.nemesis.has_network_faults() {
            return Ok((None, None));
        }
        let agents: Vec<Arc<AgentClient>> = self.hosts.iter().map(|h| h.agent.clone()).collect();
        let mut hosts = HostsNetwork::new(self.node_ips.clone(), Box::new(AgentFirewall(agents.clone())));
        let mut routes = None;
        if let Some(upstreams) = upstreams {
            let n = self.hosts.len();
            let starting = agents.iter().enumerate().map(|(me, agent)| {
                agent.call(Request::MeshStart {
                    node_count: n,
                    me,
                    upstreams: upstreams.clone(),
                    seed,
                })
            });
            let mut rows = Vec::new();
            for (node, answer) in futures::future::join_all(starting).await.into_iter().enumerate() {
                let (ok, _) =
                    answer.map_err(|e| anyhow::anyhow!("{}: starting its proxies: {e}", self.hosts[node].host))?;
                let row: Vec<SocketAddr> = serde_json::from_value(ok["routes"].clone())
                    .map_err(|e| anyhow::anyhow!("{}: its agent's routes: {e}", self.hosts[node].host))?;
                rows.push(row);
            }
            routes = Some(rows);
            hosts = hosts.with_links(Box::new(AgentLinks(agents)));
        }
        Ok((Some(Network::Hosts(Arc::new(hosts))), routes))
    }

    /// The faultline executable on node `node`'s host.
    pub fn executable(&self, node: usize) -> PathBuf {
        self.hosts[node].executable.clone()
    }

    /// Brings each node's files on its host (its folder, `WORKDIR/runs/RUN_ID/nI`) into `local_nodes_dir/nI` here, so
    /// the store holds them as for a local run; the node's log is mirrored already. A node whose files cannot all
    /// come back (its host gone, more than [`FETCH_MAX_BYTES`]) keeps what did and says what did not in
    /// `local_nodes_dir/nI/FETCH.txt`; its files stay on the host. The hosts' run folder is removed once every
    /// node's files are back.
    pub async fn fetch_node_files(&self, local_nodes_dir: &std::path::Path) {
        let mut all_back = true;
        for node in 0..self.hosts.len() {
            let local = local_nodes_dir.join(faultline_faults::process::node_name(node));
            if let Err(e) = self.fetch_node(node, &local).await {
                all_back = false;
                let note = format!(
                    "{}'s files did not all come back from {}: {e}\nWhat is missing is still on the host, in {}\n",
                    faultline_faults::process::node_name(node),
                    self.hosts[node].host,
                    self.node_dir(node).display()
                );
                tracing::warn!("{}", note.trim_end());
                let _ = std::fs::create_dir_all(&local);
                let _ = std::fs::write(local.join("FETCH.txt"), note);
            }
        }
        if all_back {
            for host in &self.hosts {
                let _ = host
                    .agent
                    .call(Request::Remove {
                        path: self.nodes_dir.clone(),
                    })
                    .await;
            }
        }
    }

    async fn fetch_node(&self, node: usize, local: &std::path::Path) -> Result<(), String> {
        use base64::Engine;
        let agent = &self.hosts[node].agent;
        let remote = self.node_dir(node);
        let (listing, _) = agent.call(Request::List { dir: remote.clone() }).await?;
        let files: Vec<(PathBuf, u64)> = listing["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| Some((PathBuf::from(f["path"].as_str()?), f["size"].as_u64()?)))
            .collect();
        let total: u64 = files.iter().map(|(_, size)| size).sum();
        if total > FETCH_MAX_BYTES {
            return Err(format!(
                "{total} bytes, more than the {FETCH_MAX_BYTES} a run brings back per node"
            ));
        }
        for (relative, size) in files {
            // The log is mirrored as it grows (and the mirror is what the report read).
            if relative == std::path::Path::new("node.log") {
                continue;
            }
            let target = local.join(&relative);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
            }
            let mut out = std::fs::File::create(&target).map_err(|e| format!("creating {}: {e}", target.display()))?;
            let mut offset = 0;
            while offset < size {
                let request = Request::Read {
                    path: remote.join(&relative),
                    offset,
                    max: None,
                };
                let (ok, _) = agent.call(request).await?;
                let data = base64::engine::general_purpose::STANDARD
                    .decode(ok["data"].as_str().unwrap_or(""))
                    .map_err(|e| format!("a chunk of {} is not base64: {e}", relative.display()))?;
                if data.is_empty() {
                    break; // it shrank meanwhile
                }
                std::io::Write::write_all(&mut out, &data).map_err(|e| format!("writing {}: {e}", target.display()))?;
                offset += data.len() as u64;
            }
        }
        Ok(())
    }

    /// Ends every agent (each kills what it started), then the connections.
    pub async fn close(self) {
        for host in &self.hosts {
            let _ = host.agent.call(super::agent::Request::Shutdown).await;
        }
    }
}
