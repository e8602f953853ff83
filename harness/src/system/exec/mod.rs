//! The `exec` adapter: a system described in the plan alone, so a team can test its own store without writing Rust.
//!
//! ```yaml
//! system:
//!   kind: exec
//!   nodes: 3
//!   prepare: [./mydb, init, --dir, "{data_dir}", --id, "{id}"]      # optional, once per node before its first start
//!   start: [./mydb, serve, --dir, "{data_dir}", --listen, "{client_addr}", --peers, "{peers}"]
//!   ready: {http: "http://{client_addr}/health"}                   # or {tcp: ...} or {command: [...]}
//!   status: {http: "http://{client_addr}/status", role: /role, primary_when: [leader], commit_point: [/commit]}
//!   client: {command: [python3, client.py]}
//! ```
//!
//! - Commands are argument vectors with `{variable}` templates ([`Template`]; `{{` and `}}` are literal braces). An
//!   unknown variable is a plan error at its `file:line:column`. A relative program (`./mydb`) is relative to the
//!   plan's folder, and so is `{plan_dir}`; both are made absolute at load, so the stored `plan.yaml` runs anywhere.
//! - Each node listens on `ports.client + i` and `ports.peer + i` of the run's address (a free loopback address, or
//!   its namespace address under netns). With network faults and the proxy backend, `{peers}` names the proxies of
//!   the node's outgoing links, so the node must dial its peers only there (else set `proxy_partitions: false`).
//! - Status: an HTTP GET whose JSON answer is read with JSON pointers (RFC 6901): `role` (compared with
//!   `primary_when`, and `backup_when` if given), `primary` (the 0-based id of the primary the node believes in), and
//!   `commit_point` (the values are joined; two nodes have converged when they are equal). A pointer that does not
//!   resolve in a node's answer stops the run's setup with a message naming it: a plan mistake, not a node fault.
//!   Optional `durable` (a pointer to a durable lower bound: a number, or a vector clock compared per component)
//!   with a top-level `recovered: {line, after}` (the boot log line saying what a restarted node kept) turns on the
//!   durability check.
//! - `user: NAME` runs the node's commands (`start`, `prepare`, `wipe`, `verify`, `stop`, the `ready` and `status`
//!   commands) as that user: its groups, group and user id are set between fork and exec, and `HOME`, `USER` and
//!   `LOGNAME` name it. faultline stays root (it signals, chowns and unmounts); before `prepare` and after a wipe it
//!   gives the node's folder (data dir, config files, `node.log`, `status.log`) to the user, and the fault filesystem
//!   lets other users in (`allow_other`; the kernel checks their accesses with `default_permissions`). The client
//!   command runs as faultline does: it only talks to the nodes over the network. Refused at load when faultline is
//!   not root, the user does not exist, or the netns backend would wrap the nodes in `ip netns exec`.
//! - Clients: one process per logical client speaking JSON lines on stdin/stdout ([`client`], spec in
//!   `plans/exec/PROTOCOL.md`); their stderr goes to `clients.log` in the run's store folder.
//! - On hosts (`--hosts`), a node's own commands run on its host and its config files are written there; the probes
//!   and the clients run here ([`hosts`]).

pub mod client;
mod cluster;
mod config;
mod hosts;
mod membership;
mod ports;
mod program;
pub mod starts;
mod status;
mod template;

pub use config::{ClientSpec, CommandSpec, ExecConfig, LogLines, ReadyProbe, RecoveredLine, StatusProbe, WipeSpec};
pub use hosts::node_programs_on_hosts;
pub use membership::{MembershipHooks, Order as MembershipOrder};
pub use ports::Ports;
pub use template::{Scope, Template, Vars};

use super::{
    BankClient, LogClient, NodeAddrs, NodeStatus, ProbeError, Progress, Recovered, RegisterClient, SetClient, System,
    TxnClient,
};
use crate::plan::WorkloadKind;
use crate::remote::workbench::FileWrite;
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use faultline_workloads::position::Position;
use serde_json::Value;
use serde_saphyr::Spanned;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Bound on one `prepare`, `wipe` or `verify` command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters of a status answer quoted in a misconfiguration message.
pub(super) const QUOTE_CHARS_MAX: usize = 300;

/// The exec system of one run.
pub struct ExecSystem {
    config: ExecConfig,
    /// `system.user`, looked up: the user every node command runs as.
    user: Option<Arc<crate::supervisor::RunAs>>,
    /// The nodes' folder on their machine (this one, or each node's host).
    nodes_dir: PathBuf,
    /// `store/.../nodes` here: the logs of the status commands, which run here (`nodes_dir` on a local run).
    local_nodes_dir: PathBuf,
    /// Each node's hands: where its own commands run and its config files are written (none: this machine).
    hands: Vec<Arc<dyn crate::remote::hands::Hands>>,
    /// When the nodes live on hosts: what their commands name there.
    on_hosts: Option<hosts::OnHosts>,
    node_ips: Vec<IpAddr>,
    /// `peer_routes[i][j]`: where node i dials node j (a proxy of the mesh), when peer traffic is proxied.
    peer_routes: Option<Vec<Vec<SocketAddr>>>,
    faultline: PathBuf,
    clients: Arc<client::ClientLog>,
    /// Whether any client process has answered yet, and how many ended before their first answer.
    starts: Arc<starts::ClientStarts>,
    http: reqwest::Client,
    /// `log_lines` as [`System::log_patterns`] gives them.
    log_patterns: Vec<(&'static str, std::borrow::Cow<'static, str>)>,
    /// The run's id (tags the processes the adapter starts).
    run_id: String,
    /// Each node's persistent status process, when `status.persistent` (empty otherwise).
    persistent: Vec<status::Persistent>,
    /// The members at the start (`members:`; the others are spares, prepared as joiners).
    initial_members: Vec<usize>,
    /// The members of the moment, as the lab last passed them to a membership hook (`{members}`).
    members: std::sync::Mutex<Vec<usize>>,
}

impl ExecSystem {
    fn name(node: usize) -> String {
        faultline_faults::process::node_name(node)
    }

    /// Where node `from` dials node `to`.
    fn peer_route(&self, from: usize, to: usize) -> SocketAddr {
        self.peer_routes
            .as_ref()
            .map_or(self.addrs(to).peer, |routes| routes[from][to])
    }

    /// `ID=HOST:PORT,...` of every node, in id order.
    fn id_list(&self, addr_of: impl Fn(usize) -> SocketAddr, skip: Option<usize>) -> String {
        (0..self.node_count())
            .filter(|&i| Some(i) != skip)
            .map(|i| format!("{i}={}", addr_of(i)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Starts the persistent status process slots (one per node; each process starts at its node's first probe).
    fn with_persistent_status(mut self) -> Self {
        if let Some(StatusProbe {
            command: Some(spec),
            persistent: true,
            ..
        }) = &self.config.status
        {
            self.persistent = (0..self.node_count())
                .map(|node| {
                    let command = self.status_command(spec, node);
                    status::Persistent::new(command, &self.run_id, self.status_log(node))
                })
                .collect();
        }
        self
    }

    /// `status.log` of a node's folder: its status command's stderr.
    fn status_log(&self, node: usize) -> status::StatusLog {
        status::StatusLog::open(self.local_nodes_dir.join(Self::name(node)).join("status.log"))
    }

    /// The node's folder (its data dir's parent).
    fn node_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(Self::name(node))
    }

    /// Node `node`'s port `name`.
    fn port_addr(&self, node: usize, base: u16) -> SocketAddr {
        SocketAddr::new(self.node_ips[node], base + node as u16)
    }

    /// The template variables of node `node`.
    fn node_vars(&self, node: usize) -> Vars {
        let me = self.addrs(node);
        let mut vars = self.client_vars();
        vars.set("id", node.to_string());
        vars.set("name", Self::name(node));
        vars.set("data_dir", self.data_dir(node).display().to_string());
        vars.set("node_dir", self.node_dir(node).display().to_string());
        vars.set("host", self.node_ips[node].to_string());
        vars.set("client_addr", me.client.to_string());
        vars.set("peer_addr", me.peer.to_string());
        vars.set("peers", self.id_list(|to| self.peer_route(node, to), Some(node)));
        for (name, list) in &self.config.lists {
            vars.set(format!("list.{name}"), self.list(node, list));
        }
        for (name, base) in self.config.ports.bases() {
            vars.set(format!("port.{name}"), (base + node as u16).to_string());
            vars.set(format!("addr.{name}"), self.port_addr(node, base).to_string());
        }
        let members = self.members.lock().expect("members lock").clone();
        let ids: Vec<String> = members.iter().map(usize::to_string).collect();
        vars.set("members", ids.join(","));
        for (name, base) in self.config.ports.bases() {
            let addrs: Vec<String> = members
                .iter()
                .map(|&m| format!("{m}={}", self.port_addr(m, base)))
                .collect();
            vars.set(format!("member_addrs.{name}"), addrs.join(","));
        }
        vars
    }

    /// The template variables of node `node`'s own commands, which run on its machine: on a host, `{faultline}` is
    /// the one installed there.
    fn host_vars(&self, node: usize) -> Vars {
        let mut vars = self.node_vars(node);
        if let Some(on_hosts) = &self.on_hosts {
            vars.set("faultline", on_hosts.executables[node].display().to_string());
        }
        vars
    }

    /// A command of node `node`'s own (start, prepare, wipe, verify, stop, a membership hook), expanded with `vars`
    /// (from [`ExecSystem::host_vars`]) as it runs on the node's machine.
    fn node_command(&self, spec: &CommandSpec, vars: &Vars) -> LaunchCommand {
        let command = self.command(spec, vars);
        match &self.on_hosts {
            Some(on_hosts) => on_hosts.rewrite(command),
            None => command,
        }
    }

    /// Writes `bytes` to `path` on node `node`'s machine.
    async fn write_node_file(&self, node: usize, path: &Path, bytes: &[u8], how: FileWrite) -> anyhow::Result<()> {
        match self.hands.get(node) {
            Some(hands) => hands.write_file(path, bytes, how).await,
            None => crate::remote::workbench::write_file(path, bytes, how),
        }
        .map_err(anyhow::Error::msg)
    }

    /// Creates node `node`'s data dir on its machine.
    async fn make_data_dir(&self, node: usize) -> anyhow::Result<()> {
        let dir = self.data_dir(node);
        match self.hands.get(node) {
            Some(hands) => hands.make_dir(&dir, None).await,
            None => crate::remote::workbench::make_dir(&dir, None),
        }
        .map_err(anyhow::Error::msg)
    }

    /// Takes `members` as the members of the moment (`{members}`, `{member_addrs.NAME}`).
    fn set_members(&self, members: &[usize]) {
        *self.members.lock().expect("members lock") = members.to_vec();
    }

    /// The variables every command may use: the cluster's.
    fn client_vars(&self) -> Vars {
        let mut vars = Vars::default();
        vars.set("node_count", self.node_count().to_string());
        vars.set("client_addrs", self.id_list(|i| self.addrs(i).client, None));
        vars.set("faultline", self.faultline.display().to_string());
        for (name, base) in self.config.ports.bases() {
            vars.set(format!("addrs.{name}"), self.id_list(|i| self.port_addr(i, base), None));
            for k in 0..self.node_count() {
                vars.set(format!("node.{k}.port.{name}"), (base + k as u16).to_string());
                vars.set(format!("node.{k}.addr.{name}"), self.port_addr(k, base).to_string());
            }
        }
        for k in 0..self.node_count() {
            vars.set(format!("node.{k}.host"), self.node_ips[k].to_string());
        }
        vars
    }

    /// Writes the plan's `config_files` of node `node` (before its first start, and after a wipe).
    async fn write_config_files(&self, node: usize) -> anyhow::Result<()> {
        let vars = self.host_vars(node);
        let node_dir = self.node_dir(node);
        for (path, content) in &self.config.config_files {
            let expanded = PathBuf::from(vars.expand(path));
            let target = lexical(&node_dir.join(&expanded));
            anyhow::ensure!(
                target.starts_with(lexical(&node_dir)),
                "system.config_files: `{path}` is {}, outside {}'s folder {}; a config file lives in the node's folder",
                target.display(),
                Self::name(node),
                node_dir.display()
            );
            let durable = FileWrite::Durable { mode: None };
            self.write_node_file(node, &target, vars.expand(&content.value).as_bytes(), durable)
                .await
                .with_context(|| format!("writing {}'s config file {}", Self::name(node), target.display()))?;
        }
        Ok(())
    }

    /// Gives node `node`'s folder and everything in it (its data dir, config files and logs; not the fault
    /// filesystem's backing dir, reached through the mount instead) to `system.user`, and checks that the user can
    /// reach the folder at all: a parent it may not enter (a `0700` temp dir) would fail every command later with a
    /// bare "Permission denied".
    fn give_to_user(&self, node: usize) -> anyhow::Result<()> {
        let Some(user) = &self.user else {
            return Ok(());
        };
        let node_dir = self.node_dir(node);
        for ancestor in node_dir.ancestors().skip(1) {
            let metadata = std::fs::metadata(ancestor).with_context(|| format!("reading {}", ancestor.display()))?;
            anyhow::ensure!(
                user.can_search(&metadata),
                "system.user: `{}` cannot enter {} (mode {:o}), a parent of {}'s folder {}; give it `o+x` (e.g. \
                 `chmod 755 {}`), or keep the store somewhere it can reach (`--store`)",
                user.name,
                ancestor.display(),
                std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o7777,
                Self::name(node),
                node_dir.display(),
                ancestor.display()
            );
        }
        for log in ["node.log", "status.log"] {
            let path = node_dir.join(log);
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
        }
        let backing = self.data_dir(node).with_extension("backing");
        let hidden = self.data_dir(node).join(faultline_faults::fusefs::HIDDEN_DIR_NAME);
        let mut pending = vec![node_dir];
        while let Some(path) = pending.pop() {
            std::os::unix::fs::lchown(&path, Some(user.uid), Some(user.gid))
                .with_context(|| format!("system.user: giving {} to `{}`", path.display(), user.name))?;
            let metadata = std::fs::symlink_metadata(&path).with_context(|| format!("reading {}", path.display()))?;
            if metadata.is_dir() {
                for entry in std::fs::read_dir(&path).with_context(|| format!("reading {}", path.display()))? {
                    let entry = entry?.path();
                    if entry != backing && entry != hidden {
                        pending.push(entry);
                    }
                }
            }
        }
        Ok(())
    }

    /// A command of a node, with `system.env`.
    fn command(&self, spec: &CommandSpec, vars: &Vars) -> LaunchCommand {
        self.command_with_env(spec, vars, [&self.config.env])
    }

    /// A command with the environments `envs` (later ones win), expanded with `vars`.
    fn command_with_env<'a>(
        &self,
        spec: &CommandSpec,
        vars: &Vars,
        envs: impl IntoIterator<Item = &'a std::collections::BTreeMap<String, Spanned<String>>>,
    ) -> LaunchCommand {
        let mut words = spec.iter().map(|word| vars.expand(&word.value));
        let mut env: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        for extra in envs {
            env.extend(extra.iter().map(|(k, v)| (k.clone(), vars.expand(&v.value))));
        }
        LaunchCommand {
            program: PathBuf::from(words.next().unwrap_or_default()),
            args: words.collect(),
            env: env.into_iter().collect(),
            env_clear: false,
            user: self.user.clone(),
        }
    }

    /// The status command of node `node`: `system.env` and `status.env`.
    fn status_command(&self, spec: &CommandSpec, node: usize) -> LaunchCommand {
        let status_env = self.config.status.as_ref().map(|s| &s.env);
        self.command_with_env(
            spec,
            &self.node_vars(node),
            [&self.config.env].into_iter().chain(status_env),
        )
    }

    /// Runs a one-shot command of node `node` to completion, its output appended to the node's log.
    async fn run_once(&self, what: &str, spec: &CommandSpec, node: usize) -> anyhow::Result<()> {
        let output = self.run_output(what, spec, node, COMMAND_TIMEOUT).await?;
        anyhow::ensure!(
            output.status.success(),
            "{what} of {} failed ({}): {}\n  command: {}",
            Self::name(node),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim(),
            self.node_command(spec, &self.host_vars(node)).display()
        );
        Ok(())
    }

    /// Runs a one-shot command of node `node`, bounded by `timeout`, its output appended to the node's log; what it
    /// printed and how it exited.
    async fn run_output(
        &self,
        what: &str,
        spec: &CommandSpec,
        node: usize,
        timeout: Duration,
    ) -> anyhow::Result<std::process::Output> {
        let command = self.node_command(spec, &self.host_vars(node));
        let output = match self.hands.get(node) {
            Some(hands) => hands.output(&command, timeout).await.map_err(anyhow::Error::msg),
            None => tokio::time::timeout(timeout, crate::supervisor::one_shot_command(&command).output())
                .await
                .map_err(|_| anyhow::anyhow!("`{}` did not end within {timeout:?} (killed)", command.display()))?
                .map_err(anyhow::Error::from),
        }
        .with_context(|| format!("the {what} command of {}", Self::name(node)))?;
        let log = self.node_dir(node).join("node.log");
        let mut text = format!("=== faultline: {what} `{}`: {} ===\n", command.display(), output.status);
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        // A log line lost (a host gone) costs the reader one line; the command's own outcome is what counts.
        let _ = self
            .write_node_file(node, &log, text.as_bytes(), FileWrite::Append)
            .await;
        Ok(output)
    }

    /// The status document at `url` (template) of node `node`: a GET, or a POST of `post`.
    async fn probe_http(
        &self,
        node: usize,
        url: &str,
        post: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, ProbeError> {
        let url = self.node_vars(node).expand(url);
        let request = match post {
            Some(body) => self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.to_string()),
            None => self.http.get(&url),
        };
        let response = request
            .timeout(timeout)
            .send()
            .await
            .map_err(|_| ProbeError::NoAnswer)?;
        if !response.status().is_success() {
            return Err(ProbeError::NoAnswer);
        }
        let body = response.bytes().await.map_err(|_| ProbeError::NoAnswer)?;
        serde_json::from_slice(&body).map_err(|e| {
            ProbeError::Misconfigured(format!(
                "its status answer at {url} (system.status.http) is not JSON ({e}): {}",
                String::from_utf8_lossy(&body[..body.len().min(QUOTE_CHARS_MAX)])
            ))
        })
    }

    fn client(
        &self,
        home: usize,
        op_timeout: Duration,
        process: u64,
        kind: WorkloadKind,
    ) -> Option<client::ExecClient> {
        self.config.client.workloads.contains(&kind).then(|| {
            // The client runs as faultline does, with its own environment: it only talks to the nodes over the network.
            let command = LaunchCommand {
                user: None,
                ..self.command_with_env(
                    &self.config.client.command,
                    &self.client_vars(),
                    [&self.config.client.env],
                )
            };
            let addrs = (0..self.node_count()).map(|i| self.addrs(i).client).collect();
            client::ExecClient::new(
                command,
                self.clients.clone(),
                self.starts.clone(),
                addrs,
                home,
                op_timeout,
                process,
            )
        })
    }
}

/// `path` without `.` and `..` components (resolved by name, not through the filesystem: the file may not exist).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The number at `pointer` in a status answer: a JSON number, or a string of digits.
fn number_at(raw: &Value, pointer: &str) -> Option<u64> {
    match raw.pointer(pointer)? {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// The position at `pointer` in a status answer: a number as [`number_at`] reads it, or a vector clock (an object
/// of numbers, or a string that writes one, `"{1: 3181, 2: 5}"`).
fn position_at(raw: &Value, pointer: &str) -> Option<Position> {
    if let Some(number) = number_at(raw, pointer) {
        return Some(Position::Scalar(number));
    }
    match raw.pointer(pointer)? {
        Value::String(text) if text.trim_start().starts_with('{') => Position::from_text(text),
        value @ Value::Object(_) => Position::from_json(value),
        _ => None,
    }
}

/// A JSON value, clipped for a message.
fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(QUOTE_CHARS_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[async_trait]
impl System for ExecSystem {
    fn progress(&self, status: &NodeStatus) -> Progress {
        let number = |pointer: &Option<Spanned<String>>| {
            pointer
                .as_ref()
                .and_then(|pointer| number_at(&status.raw, &pointer.value))
        };
        let Some(config) = &self.config.status else {
            return Progress::default();
        };
        // A vector clock is summed: one number for lag and catching up (the durability check reads the clock).
        let durable = self.durable_position(status).map(|position| position.total());
        Progress {
            view: number(&config.view),
            durable,
            numbers: durable.map(|d| ("durable", d)).into_iter().collect(),
        }
    }

    fn durable_settle(&self) -> Duration {
        self.config
            .status
            .as_ref()
            .and_then(|s| s.durable_settle)
            .map_or(Duration::ZERO, |m| Duration::from_millis(m.0))
    }

    fn recovered(&self, boot_log: &str) -> Option<Recovered> {
        self.config.recovered.as_ref()?.read(boot_log)
    }

    fn kept_from_status(&self) -> bool {
        let no_boot_line = self.config.recovered.as_ref().is_none_or(|r| r.status.is_some());
        no_boot_line && self.config.status.as_ref().is_some_and(|s| s.durable.is_some())
    }

    fn durable_position(&self, status: &NodeStatus) -> Option<Position> {
        self.config.durable_at(&status.raw)
    }

    fn kept(&self, status: &NodeStatus) -> Option<u64> {
        self.kept_position(status)?.as_scalar()
    }

    fn kept_position(&self, status: &NodeStatus) -> Option<Position> {
        self.config.kept_at(&status.raw)
    }

    fn log_patterns(&self) -> &[(&'static str, std::borrow::Cow<'static, str>)] {
        &self.log_patterns
    }

    fn kind(&self) -> &'static str {
        "exec"
    }

    fn node_count(&self) -> usize {
        self.config.nodes.0 as usize
    }

    fn initial_members(&self) -> Vec<usize> {
        self.initial_members.clone()
    }

    fn membership(&self) -> Option<&dyn super::membership::Membership> {
        self.config
            .membership
            .as_ref()
            .map(|_| self as &dyn super::membership::Membership)
    }

    fn data_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(Self::name(node)).join("data")
    }

    fn addrs(&self, node: usize) -> NodeAddrs {
        NodeAddrs {
            client: SocketAddr::new(self.node_ips[node], self.config.ports.client + node as u16),
            peer: SocketAddr::new(self.node_ips[node], self.config.ports.peer + node as u16),
        }
    }

    async fn prepare(&self, node: usize) -> anyhow::Result<()> {
        self.make_data_dir(node).await?;
        if self.config.membership.is_some() && !self.initial_members.contains(&node) {
            // A spare: a joiner-to-be, prepared as a wiped node is (it must join, never bootstrap a cluster).
            return self.wipe(node).await;
        }
        self.write_config_files(node).await?;
        self.give_to_user(node)?;
        match &self.config.prepare {
            Some(prepare) => self.run_once("prepare", prepare, node).await,
            None => Ok(()),
        }
    }

    async fn wipe(&self, node: usize) -> anyhow::Result<()> {
        let Some(wipe) = &self.config.wipe else {
            anyhow::bail!(
                "system.wipe is not set: {} cannot be wiped and rejoin",
                Self::name(node)
            );
        };
        match self.hands.get(node) {
            Some(hands) => hands
                .empty_dir(&self.data_dir(node))
                .await
                .map_err(anyhow::Error::msg)?,
            None => super::empty_data_dir(&self.data_dir(node))?,
        }
        self.write_config_files(node).await?;
        self.give_to_user(node)?;
        self.run_once("wipe", &wipe.command, node).await
    }

    fn launch(&self, node: usize, kind: super::StartKind) -> LaunchCommand {
        let mut vars = self.host_vars(node);
        vars.set("start", kind.as_str().to_string());
        self.node_command(&self.config.start, &vars)
    }

    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError> {
        let Some(config) = &self.config.status else {
            return Err(ProbeError::NoAnswer);
        };
        let raw = match (&config.http, &config.command) {
            (Some(url), _) => {
                self.probe_http(node, &url.value, config.post.as_deref(), timeout)
                    .await?
            }
            (None, Some(_)) if config.persistent => self.persistent[node].probe(timeout).await?,
            (None, Some(spec)) => {
                let command = self.status_command(spec, node);
                status::run_command(&command, &self.run_id, timeout, &self.status_log(node)).await?
            }
            (None, None) => return Err(ProbeError::NoAnswer),
        };
        self.read_status(raw)
    }

    fn reports_status(&self) -> bool {
        self.config.status.is_some()
    }

    fn observe_interval(&self) -> Duration {
        match &self.config.status {
            // A process per probe costs tens of milliseconds of CPU (a Python interpreter: over a hundred,
            // `benches/status_probe.rs`): probed as often as an HTTP status, it would take the cores the nodes need.
            Some(StatusProbe {
                command: Some(_),
                persistent: false,
                ..
            }) => status::COMMAND_OBSERVE_INTERVAL,
            _ => Duration::from_millis(100),
        }
    }

    async fn ready(&self, node: usize, timeout: Duration) -> bool {
        let vars = self.node_vars(node);
        match &self.config.ready {
            None if self.config.status.is_some() => self.probe(node, timeout).await.is_ok(),
            // No status: a node is ready when it accepts connections on its client address.
            None => {
                let connect = tokio::net::TcpStream::connect(self.addrs(node).client);
                matches!(tokio::time::timeout(timeout, connect).await, Ok(Ok(_)))
            }
            Some(ReadyProbe::Http(url)) => {
                let answer = self.http.get(vars.expand(&url.value)).timeout(timeout).send().await;
                answer.is_ok_and(|a| a.status().is_success())
            }
            Some(ReadyProbe::Tcp(addr)) => {
                let connect = tokio::net::TcpStream::connect(vars.expand(&addr.value));
                matches!(tokio::time::timeout(timeout, connect).await, Ok(Ok(_)))
            }
            Some(ReadyProbe::Command(spec)) => {
                let command = self.command(spec, &vars);
                let status = crate::supervisor::one_shot_command(&command)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                matches!(tokio::time::timeout(timeout.max(Duration::from_secs(1)), status).await, Ok(Ok(s)) if s.success())
            }
        }
    }

    fn next_primary(&self, _primary: usize) -> Option<usize> {
        None
    }

    fn wal_glob(&self) -> &str {
        self.config.wal_glob.as_deref().unwrap_or("*")
    }

    fn runs_as_other_user(&self) -> bool {
        self.user.is_some()
    }

    fn client_setup_error(&self) -> Option<String> {
        self.starts.broken()
    }

    fn stop_command(&self, node: usize, pid: i32) -> Option<LaunchCommand> {
        let mut vars = self.host_vars(node);
        vars.set("pid", pid.to_string());
        self.config.stop.as_ref().map(|spec| self.node_command(spec, &vars))
    }

    fn restart_position_command(&self, node: usize) -> Option<LaunchCommand> {
        let spec = &self.config.restart_all.as_ref()?.position;
        Some(self.node_command(spec, &self.host_vars(node)))
    }

    fn verify_command(&self, node: usize) -> Option<LaunchCommand> {
        self.config
            .verify
            .as_ref()
            .map(|spec| self.node_command(spec, &self.host_vars(node)))
    }

    fn boot_refusal_line(&self, log_tail: &str) -> Option<String> {
        let text = faultline_workloads::checker::strip_ansi(log_tail);
        let lines: Vec<&str> = text.lines().collect();
        let matched = lines
            .iter()
            .rposition(|line| self.config.refusal_patterns.iter().any(|p| line.contains(p.as_str())))?;
        Some(super::refusal::quote(&lines, matched))
    }

    fn register_client(&self, home: usize, op_timeout: Duration, process: u64) -> Option<Box<dyn RegisterClient>> {
        let client = self.client(home, op_timeout, process, WorkloadKind::Register)?;
        Some(Box::new(client))
    }

    fn log_client(&self, home: usize, op_timeout: Duration, process: u64) -> Option<Box<dyn LogClient>> {
        let client = self.client(home, op_timeout, process, WorkloadKind::Log)?;
        Some(Box::new(client))
    }

    fn set_client(&self, home: usize, op_timeout: Duration, process: u64) -> Option<Box<dyn SetClient>> {
        let client = self.client(home, op_timeout, process, WorkloadKind::Set)?;
        Some(Box::new(client))
    }

    fn txn_client(&self, home: usize, op_timeout: Duration, process: u64) -> Option<Box<dyn TxnClient>> {
        // The long-fork workload's ops are transactions too (`f: txn`, rw-register micro-ops).
        let client = self
            .client(home, op_timeout, process, WorkloadKind::Txn)
            .or_else(|| self.client(home, op_timeout, process, WorkloadKind::LongFork))?;
        Some(Box::new(client))
    }

    fn bank_client(&self, home: usize, op_timeout: Duration, process: u64) -> Option<Box<dyn BankClient>> {
        let client = self.client(home, op_timeout, process, WorkloadKind::Bank)?;
        Some(Box::new(client))
    }
}

#[cfg(test)]
mod position_tests;
#[cfg(test)]
mod tests;
