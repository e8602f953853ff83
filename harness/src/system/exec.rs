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
//!   Optional `durable` (a pointer to a durable lower bound) with a top-level `recovered: {line, after}` (the boot
//!   log line saying what a restarted node kept) turns on the durability check.
//! - Clients: one process per logical client speaking JSON lines on stdin/stdout ([`client`], spec in
//!   `plans/exec/PROTOCOL.md`); their stderr goes to `clients.log` in the run's store folder.

pub mod client;
mod template;

pub use template::{Template, Vars};

use super::{
    AdapterSpec, BuildContext, Built, Capabilities, LogClient, NodeAddrs, NodeStatus, ProbeError, Progress, Recovered,
    RegisterClient, Role, SetClient, System,
};
use crate::plan::{Bounded, Plan, PlanError, WorkloadKind};
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Bound on one `prepare`, `wipe` or `verify` command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// Characters of a status answer quoted in a misconfiguration message.
const QUOTE_CHARS_MAX: usize = 300;

/// A command line of the plan: program and arguments, each a template.
pub type CommandSpec = Vec<Spanned<String>>;

/// The plan section `system: {kind: exec, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecConfig {
    /// Cluster size (1..=9).
    pub nodes: Bounded<1, 9>,
    /// Run once per node before its first start (e.g. format its data dir; the dir exists already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<CommandSpec>,
    /// Starts node `{id}` on its data dir; it must keep running in the foreground (stdout and stderr are its log).
    pub start: CommandSpec,
    /// Extra environment of every command (values are templates).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Spanned<String>>,
    /// When a started node is ready; default: it answers the status probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<ReadyProbe>,
    /// How to ask a node for its role and commit point.
    pub status: StatusProbe,
    /// Offline check of a stopped node's data dir (exit 0 = sound), run on every node in the restart-all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<CommandSpec>,
    /// How a wiped node rejoins: the harness empties its data dir, then runs this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe: Option<WipeSpec>,
    /// Substrings of a log line that say the node refused to boot (its last matching line is the refusal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal_patterns: Vec<String>,
    /// The WAL files, relative to the data dir (disk surgery aims at them), e.g. `wal/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_glob: Option<String>,
    /// The boot log line that says what a restarted node kept (with `status.durable`, the durability check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<RecoveredLine>,
    /// Text of the node's own log lines that say what it is doing, for triggers and coverage: `repairing` (it
    /// started repairing its log), `repaired` (done), `view-change` (a view change or election started). Each is a
    /// substring of the line, e.g. `{repairing: "repair start", view-change: "became candidate"}`.
    #[serde(default, skip_serializing_if = "LogLines::is_empty")]
    pub log_lines: LogLines,
    /// The client process.
    pub client: ClientSpec,
    /// Port bases: node i listens on `client + i` and `peer + i`; the proxy of link i->j on `proxy + 10 i + j`.
    #[serde(default)]
    pub ports: Ports,
    /// Whether the proxy mesh can partition the system (its nodes dial peers only at the addresses in `{peers}`).
    #[serde(default = "yes")]
    pub proxy_partitions: bool,
}

fn yes() -> bool {
    true
}

/// When a node is ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ReadyProbe {
    /// An HTTP GET that answers 2xx.
    Http(Spanned<String>),
    /// A TCP connect that succeeds.
    Tcp(Spanned<String>),
    /// A command that exits 0.
    Command(CommandSpec),
}

/// The status probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusProbe {
    /// The URL of a JSON status document (a GET, or a POST of `post`).
    pub http: Spanned<String>,
    /// A body to POST instead of a GET (e.g. `"{}"` for gRPC gateways, which answer POSTs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<String>,
    /// JSON pointer to the node's role; without it (and without `primary_if_equal`) the system has no primary
    /// faultline can see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Spanned<String>>,
    /// Two JSON pointers, e.g. `[/leader, /header/member_id]`: the node is the primary when they hold the same value
    /// (Raft systems that report their leader's id and their own), else a backup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary_if_equal: Vec<Spanned<String>>,
    /// Role values of a primary / leader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary_when: Vec<String>,
    /// Role values of a backup / follower; default: every role that is not a primary's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backup_when: Vec<String>,
    /// JSON pointer to the 0-based id of the primary the node believes in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<Spanned<String>>,
    /// JSON pointers whose values, joined, are equal on two nodes exactly when they have converged.
    pub commit_point: Vec<Spanned<String>>,
    /// JSON pointer to the view, term or epoch the node is in (a number, or a string of digits): of two nodes that
    /// claim to lead, the one in the newer view is the primary (the other was cut off and does not know yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Spanned<String>>,
    /// JSON pointer to a durable lower bound (a number, or a string of digits): a value the node can only have
    /// reached after persisting everything up to it (e.g. its commit or applied index). With `recovered`, it turns
    /// on the durability check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<Spanned<String>>,
    /// How long after the node reports a durable value that value is surely on its disk (0 for a system that reports
    /// only what it fsynced; etcd-like systems that apply before their WAL write finishes need about a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_settle: Option<faultline_faults::units::Millis>,
}

/// The exec section's `log_lines` (see [`ExecConfig::log_lines`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LogLines {
    /// A node started repairing its log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairing: Option<String>,
    /// It finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repaired: Option<String>,
    /// A view change (an election) started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_change: Option<String>,
}

impl LogLines {
    fn is_empty(&self) -> bool {
        self.repairing.is_none() && self.repaired.is_none() && self.view_change.is_none()
    }

    /// As [`System::log_patterns`] gives them.
    fn patterns(&self) -> Vec<(&'static str, std::borrow::Cow<'static, str>)> {
        [
            ("repairing", &self.repairing),
            ("repaired", &self.repaired),
            ("view-change", &self.view_change),
        ]
        .into_iter()
        .filter_map(|(name, text)| Some((name, std::borrow::Cow::Owned(text.clone()?))))
        .collect()
    }
}

/// How a node's boot log says what it kept: the first line that contains `line`, and the number right after `after`
/// in it (e.g. `{line: "\"msg\":\"newRaft ", after: "lastindex:"}` for etcd).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveredLine {
    /// Text the boot line contains.
    pub line: Spanned<String>,
    /// Text right before the number.
    pub after: Spanned<String>,
}

impl RecoveredLine {
    /// The number of the first line of `boot_log` that contains `line`, right after `after`.
    fn read(&self, boot_log: &str) -> Option<Recovered> {
        Recovered::from_line(boot_log, &self.line.value, &self.after.value)
    }
}

/// How a wiped node rejoins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WipeSpec {
    /// Run after the data dir was emptied (e.g. `init --join`).
    pub command: CommandSpec,
}

/// The client process of every logical client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// The command (templates: `{node_count}`, `{client_addrs}`, `{faultline}`).
    pub command: CommandSpec,
    /// The workload kinds it speaks (default all: register, log, set).
    #[serde(default = "all_workloads")]
    pub workloads: Vec<WorkloadKind>,
}

fn all_workloads() -> Vec<WorkloadKind> {
    vec![WorkloadKind::Register, WorkloadKind::Log, WorkloadKind::Set]
}

/// Port bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ports {
    /// Client port of node 0.
    #[serde(default = "default_client_port")]
    pub client: u16,
    /// Peer port of node 0.
    #[serde(default = "default_peer_port")]
    pub peer: u16,
    /// Proxy of link 0->0 (link i->j: `+ 10 i + j`).
    #[serde(default = "default_proxy_port")]
    pub proxy: u16,
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            client: default_client_port(),
            peer: default_peer_port(),
            proxy: default_proxy_port(),
        }
    }
}

fn default_client_port() -> u16 {
    25_001
}

fn default_peer_port() -> u16 {
    26_001
}

fn default_proxy_port() -> u16 {
    27_000
}

impl ExecConfig {
    /// Every command of the section, with its plan path (for messages) and whether it runs per node.
    fn commands(&self) -> Vec<(&'static str, &CommandSpec, bool)> {
        let mut commands = vec![
            ("system.start", &self.start, true),
            ("system.client.command", &self.client.command, false),
        ];
        if let Some(prepare) = &self.prepare {
            commands.push(("system.prepare", prepare, true));
        }
        if let Some(verify) = &self.verify {
            commands.push(("system.verify", verify, true));
        }
        if let Some(wipe) = &self.wipe {
            commands.push(("system.wipe.command", &wipe.command, true));
        }
        if let Some(ReadyProbe::Command(ready)) = &self.ready {
            commands.push(("system.ready.command", ready, true));
        }
        commands
    }

    fn commands_mut(&mut self) -> Vec<&mut CommandSpec> {
        let mut commands = vec![&mut self.start, &mut self.client.command];
        commands.extend(self.prepare.as_mut());
        commands.extend(self.verify.as_mut());
        commands.extend(self.wipe.as_mut().map(|w| &mut w.command));
        if let Some(ReadyProbe::Command(ready)) = &mut self.ready {
            commands.push(ready);
        }
        commands
    }

    /// Every per-node template string that is not a command.
    fn node_templates(&self) -> Vec<(String, &Spanned<String>)> {
        let mut templates: Vec<(String, &Spanned<String>)> =
            self.env.iter().map(|(k, v)| (format!("system.env.{k}"), v)).collect();
        templates.push(("system.status.http".into(), &self.status.http));
        match &self.ready {
            Some(ReadyProbe::Http(url)) => templates.push(("system.ready.http".into(), url)),
            Some(ReadyProbe::Tcp(addr)) => templates.push(("system.ready.tcp".into(), addr)),
            _ => {}
        }
        templates
    }
}

#[async_trait]
impl AdapterSpec for ExecConfig {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: self.client.workloads.clone(),
            proxy_partitions: self.proxy_partitions,
            primary_probe: self.status.role.is_some() || !self.status.primary_if_equal.is_empty(),
            wipe: self.wipe.is_some(),
            offline_verify: self.verify.is_some(),
            durable_progress: self.status.durable.is_some() && self.recovered.is_some(),
            // A plan declares it with `disk: {interior_damage: refuse}`.
            refuses_interior_damage: false,
            repairing_pattern: self.log_lines.repairing.is_some(),
            repaired_pattern: self.log_lines.repaired.is_some(),
        }
    }

    fn resolve_paths(&mut self, dir: &Path) {
        let dir_text = dir.display().to_string();
        let resolve = |text: &mut Spanned<String>| {
            text.value = Template::replace_var(&text.value, "plan_dir", &dir_text);
        };
        for command in self.commands_mut() {
            command.iter_mut().for_each(resolve);
            if let Some(program) = command.first_mut() {
                let path = Path::new(&program.value);
                if !program.value.contains('{') && program.value.contains('/') && path.is_relative() {
                    let path = path.strip_prefix("./").unwrap_or(path);
                    program.value = dir.join(path).display().to_string();
                }
            }
        }
        self.env.values_mut().for_each(resolve);
    }

    fn validate(&self, plan: &Plan, origin: &str) -> Result<(), PlanError> {
        let at = |spanned: &Spanned<String>, message: String| PlanError {
            origin: origin.to_string(),
            line: spanned.referenced.line(),
            column: spanned.referenced.column(),
            message,
        };
        for (field, command, per_node) in self.commands() {
            let Some(program) = command.first() else {
                return Err(PlanError {
                    origin: origin.to_string(),
                    line: 0,
                    column: 0,
                    message: format!("{field} is empty: give the program and its arguments, e.g. [./mydb, serve]"),
                });
            };
            let allowed = if per_node { Vars::NODE } else { Vars::CLIENT };
            for arg in command {
                Template::parse(&arg.value, allowed).map_err(|e| at(arg, format!("{field}: {e}")))?;
            }
            check_program(&program.value).map_err(|e| at(program, format!("{field}: {e}")))?;
        }
        for (field, template) in self.node_templates() {
            Template::parse(&template.value, Vars::NODE).map_err(|e| at(template, format!("{field}: {e}")))?;
        }
        let pointers = self
            .status
            .role
            .iter()
            .chain(&self.status.primary)
            .chain(&self.status.commit_point)
            .chain(&self.status.primary_if_equal)
            .chain(&self.status.durable)
            .chain(&self.status.view);
        for pointer in pointers {
            if !pointer.value.is_empty() && !pointer.value.starts_with('/') {
                return Err(at(
                    pointer,
                    format!(
                        "`{}` is not a JSON pointer: it starts with `/`, e.g. `/role` or `/raft/commit`",
                        pointer.value
                    ),
                ));
            }
        }
        match (&self.status.durable, &self.recovered) {
            (Some(durable), None) => {
                return Err(at(
                    durable,
                    "system.status.durable needs system.recovered too (the boot line that says what a restarted \
                     node kept, e.g. {line: \"recovered\", after: \"op=\"}): the durability check compares the two"
                        .into(),
                ))
            }
            (None, Some(recovered)) => {
                return Err(at(
                    &recovered.line,
                    "system.recovered needs system.status.durable too (a JSON pointer to a durable lower bound, e.g. \
                     /commit): the durability check compares the two"
                        .into(),
                ))
            }
            _ => {}
        }
        if self.status.commit_point.is_empty() {
            return Err(at(
                &self.status.http,
                "system.status.commit_point needs at least one JSON pointer (e.g. [/commit, /head]): the final \
                 phase waits for every node to report the same values"
                    .into(),
            ));
        }
        if let Some(first) = self.status.primary_if_equal.first() {
            if self.status.primary_if_equal.len() != 2 || self.status.role.is_some() {
                return Err(at(
                    first,
                    "system.status.primary_if_equal takes two JSON pointers (the leader's id and the node's own), \
                     and replaces `role`"
                        .into(),
                ));
            }
        }
        if let Some(role) = &self.status.role {
            if self.status.primary_when.is_empty() {
                return Err(at(
                    role,
                    "system.status.role needs `primary_when`: the role values of a primary (e.g. [leader])".into(),
                ));
            }
        }
        let surgery = !plan.final_phase.surgery.is_empty() || plan.final_phase.test_only_corrupt_wal.is_some();
        if surgery && self.wal_glob.is_none() {
            return Err(PlanError {
                origin: origin.to_string(),
                line: 0,
                column: 0,
                message: "this plan cuts WAL files, but system.wal_glob does not say which files are the WAL \
                          (e.g. `wal_glob: \"wal/*\"`)"
                    .into(),
            });
        }
        Ok(())
    }

    async fn build(&self, context: BuildContext<'_>) -> anyhow::Result<Built> {
        let n = context.node_count();
        let ports: Vec<u16> = (0..n as u16)
            .flat_map(|i| [self.ports.client + i, self.ports.peer + i])
            .chain(
                (0..n)
                    .flat_map(|i| (0..n).map(move |j| (i * 10 + j) as u16))
                    .map(|d| self.ports.proxy + d),
            )
            .collect();
        let node_ips = context.node_ips(&ports)?;
        let addr = |ip: IpAddr, base: u16, node: usize| SocketAddr::new(ip, base + node as u16);
        let (network, routes) = if self.proxy_partitions {
            context
                .proxied_network(
                    |to| addr(node_ips[to], self.ports.peer, to),
                    |from, to| SocketAddr::new(node_ips[0], self.ports.proxy + (from * 10 + to) as u16),
                )
                .await?
        } else {
            (context.netns_network(), None)
        };
        let faultline = crate::supervisor::self_exe().context("cannot find the faultline executable")?;
        let store_dir = context.nodes_dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let system = ExecSystem {
            config: self.clone(),
            nodes_dir: context.nodes_dir.clone(),
            node_ips: node_ips.clone(),
            peer_routes: routes,
            faultline: faultline.clone(),
            clients: client::ClientLog::create(&store_dir.join("clients.log"), context.run_id)?,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(2)
                .build()
                .context("building the status probe's HTTP client")?,
            log_patterns: self.log_lines.patterns(),
        };
        let program = system.node_vars(0).expand(&self.start[0].value);
        Ok(Built {
            system: Arc::new(system),
            binary: PathBuf::from(program),
            node_ips,
            network,
        })
    }
}

/// A program that exists: a path to a file, a template (checked when it runs), or a name found on `PATH`.
fn check_program(program: &str) -> Result<(), String> {
    if program.contains('{') {
        return Ok(());
    }
    let path = Path::new(program);
    if program.contains('/') {
        return match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => Ok(()),
            Ok(_) => Err(format!("`{program}` is not a file")),
            Err(e) => Err(format!("`{program}` cannot be run: {e} (build it, or fix the path)")),
        };
    }
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .any(|dir| dir.join(program).is_file());
    if found {
        Ok(())
    } else {
        Err(format!(
            "`{program}` is not on PATH (install it, or give a path such as `./{program}`, relative to the plan)"
        ))
    }
}

/// The exec system of one run.
pub struct ExecSystem {
    config: ExecConfig,
    nodes_dir: PathBuf,
    node_ips: Vec<IpAddr>,
    /// `peer_routes[i][j]`: where node i dials node j (a proxy of the mesh), when peer traffic is proxied.
    peer_routes: Option<Vec<Vec<SocketAddr>>>,
    faultline: PathBuf,
    clients: Arc<client::ClientLog>,
    http: reqwest::Client,
    /// `log_lines` as [`System::log_patterns`] gives them.
    log_patterns: Vec<(&'static str, std::borrow::Cow<'static, str>)>,
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

    /// The template variables of node `node`.
    fn node_vars(&self, node: usize) -> Vars {
        let me = self.addrs(node);
        let mut vars = self.client_vars();
        vars.set("id", node.to_string());
        vars.set("name", Self::name(node));
        vars.set("data_dir", self.data_dir(node).display().to_string());
        vars.set("client_addr", me.client.to_string());
        vars.set("peer_addr", me.peer.to_string());
        vars.set("peers", self.id_list(|to| self.peer_route(node, to), Some(node)));
        vars
    }

    /// The variables every command may use.
    fn client_vars(&self) -> Vars {
        let mut vars = Vars::default();
        vars.set("node_count", self.node_count().to_string());
        vars.set("client_addrs", self.id_list(|i| self.addrs(i).client, None));
        vars.set("faultline", self.faultline.display().to_string());
        vars
    }

    fn command(&self, spec: &CommandSpec, vars: &Vars) -> LaunchCommand {
        let mut words = spec.iter().map(|word| vars.expand(&word.value));
        LaunchCommand {
            program: PathBuf::from(words.next().unwrap_or_default()),
            args: words.collect(),
            env: self
                .config
                .env
                .iter()
                .map(|(k, v)| (k.clone(), vars.expand(&v.value)))
                .collect(),
            env_clear: false,
        }
    }

    /// Runs a one-shot command of node `node` to completion, its output appended to the node's log.
    async fn run_once(&self, what: &str, spec: &CommandSpec, node: usize) -> anyhow::Result<()> {
        let command = self.command(spec, &self.node_vars(node));
        let output = tokio::time::timeout(
            COMMAND_TIMEOUT,
            tokio::process::Command::new(&command.program)
                .args(&command.args)
                .envs(command.env.iter().map(|(k, v)| (k, v)))
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "{what} of {} did not finish within {COMMAND_TIMEOUT:?}: {}",
                Self::name(node),
                command.display()
            )
        })?
        .with_context(|| {
            format!(
                "cannot run the {what} command of {}: {}",
                Self::name(node),
                command.display()
            )
        })?;
        let log = self.nodes_dir.join(Self::name(node)).join("node.log");
        let mut text = format!("=== faultline: {what} `{}`: {} ===\n", command.display(), output.status);
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        append(&log, &text);
        anyhow::ensure!(
            output.status.success(),
            "{what} of {} failed ({}): {}\n  command: {}",
            Self::name(node),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim(),
            command.display()
        );
        Ok(())
    }

    /// Reads a status answer with the plan's pointers.
    fn read_status(&self, raw: Value) -> Result<NodeStatus, ProbeError> {
        let status = &self.config.status;
        let lookup = |pointer: &Spanned<String>, what: &str| -> Result<String, ProbeError> {
            match raw.pointer(&pointer.value) {
                Some(Value::String(text)) => Ok(text.clone()),
                Some(other) => Ok(other.to_string()),
                None => Err(ProbeError::Misconfigured(format!(
                    "its status answer has no `{}` (the JSON pointer of system.status.{what}, plan line {}); the \
                     answer was: {}",
                    pointer.value,
                    pointer.referenced.line(),
                    quote(&raw)
                ))),
            }
        };
        let role = match (&status.role, status.primary_if_equal.as_slice()) {
            (None, [leader, me]) => {
                if lookup(leader, "primary_if_equal")? == lookup(me, "primary_if_equal")? {
                    Role::Primary
                } else {
                    Role::Backup
                }
            }
            (None, _) => Role::Other,
            (Some(pointer), _) => {
                let value = lookup(pointer, "role")?;
                if status.primary_when.contains(&value) {
                    Role::Primary
                } else if status.backup_when.is_empty() || status.backup_when.contains(&value) {
                    Role::Backup
                } else {
                    Role::Other
                }
            }
        };
        let primary = match &status.primary {
            Some(pointer) => lookup(pointer, "primary")?.parse::<usize>().ok(),
            None => None,
        };
        let mut parts = Vec::new();
        for pointer in &status.commit_point {
            parts.push(format!("{}={}", pointer.value, lookup(pointer, "commit_point")?));
        }
        Ok(NodeStatus {
            role,
            primary: primary.filter(|_| role != Role::Other),
            commit_point: parts.join(" "),
            raw,
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
            let command = self.command(&self.config.client.command, &self.client_vars());
            let addrs = (0..self.node_count()).map(|i| self.addrs(i).client).collect();
            client::ExecClient::new(command, self.clients.clone(), addrs, home, op_timeout, process)
        })
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

fn append(path: &Path, text: &str) {
    use std::io::Write;
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(text.as_bytes());
    }
}

#[async_trait]
impl System for ExecSystem {
    fn progress(&self, status: &NodeStatus) -> Progress {
        let number = |pointer: &Option<Spanned<String>>| {
            pointer
                .as_ref()
                .and_then(|pointer| match status.raw.pointer(&pointer.value)? {
                    Value::Number(number) => number.as_u64(),
                    Value::String(text) => text.parse().ok(),
                    _ => None,
                })
        };
        let durable = number(&self.config.status.durable);
        Progress {
            view: number(&self.config.status.view),
            durable,
            numbers: durable.map(|d| ("durable", d)).into_iter().collect(),
        }
    }

    fn durable_settle(&self) -> Duration {
        self.config
            .status
            .durable_settle
            .map_or(Duration::ZERO, |m| Duration::from_millis(m.0))
    }

    fn recovered(&self, boot_log: &str) -> Option<Recovered> {
        self.config.recovered.as_ref()?.read(boot_log)
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
        let dir = self.data_dir(node);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
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
        super::empty_data_dir(&self.data_dir(node))?;
        self.run_once("wipe", &wipe.command, node).await
    }

    fn launch(&self, node: usize) -> LaunchCommand {
        self.command(&self.config.start, &self.node_vars(node))
    }

    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError> {
        let url = self.node_vars(node).expand(&self.config.status.http.value);
        let request = match &self.config.status.post {
            Some(body) => self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone()),
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
        let raw: Value = serde_json::from_slice(&body).map_err(|e| {
            ProbeError::Misconfigured(format!(
                "its status answer at {url} (system.status.http) is not JSON ({e}): {}",
                String::from_utf8_lossy(&body[..body.len().min(QUOTE_CHARS_MAX)])
            ))
        })?;
        self.read_status(raw)
    }

    async fn ready(&self, node: usize, timeout: Duration) -> bool {
        let vars = self.node_vars(node);
        match &self.config.ready {
            None => self.probe(node, timeout).await.is_ok(),
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
                let status = tokio::process::Command::new(&command.program)
                    .args(&command.args)
                    .envs(command.env.iter().map(|(k, v)| (k, v)))
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
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

    fn verify_command(&self, node: usize) -> Option<LaunchCommand> {
        self.config
            .verify
            .as_ref()
            .map(|spec| self.command(spec, &self.node_vars(node)))
    }

    fn boot_refusal_line(&self, log_tail: &str) -> Option<String> {
        let text = crate::analyze::strip_ansi(log_tail);
        text.lines()
            .rev()
            .find(|line| self.config.refusal_patterns.iter().any(|p| line.contains(p.as_str())))
            .map(|line| line.trim().to_string())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Result<Plan, PlanError> {
        let text = crate::plan::DEFAULT_PLAN_YAML.replace(
            "system:\n  kind: reference        # faultline-node, found next to the faultline executable\n  nodes: 3\n",
            yaml,
        );
        assert_ne!(
            text,
            crate::plan::DEFAULT_PLAN_YAML,
            "the default plan's system section moved"
        );
        Plan::parse(&text, "p.yaml")
    }

    /// The line of the composed plan that holds `needle` (the system section starts at line 13).
    fn line_of(section: &str, needle: &str) -> u64 {
        let text = crate::plan::DEFAULT_PLAN_YAML;
        let before = text[..text.find("system:\n").unwrap()].lines().count() as u64;
        before + section.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
    }

    const GOOD: &str = "system:\n  kind: exec\n  nodes: 3\n  start: [sh, -c, \"exec sleep 1000\", \"{id}\"]\n  status: {http: \"http://{client_addr}/status\", role: /role, primary_when: [leader], commit_point: [/commit]}\n  log_lines: {repairing: \"repair start\", view-change: \"view change started\"}\n  client: {command: [sh]}\n";

    #[test]
    fn given_a_complete_exec_section_when_parsed_should_be_valid() {
        let plan = config(GOOD).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.system.kind(), "exec");
        assert!(plan.system.adapter().capabilities().primary_probe);
        assert!(
            plan.system.adapter().capabilities().repairing_pattern,
            "log_lines names `repairing`"
        );
        let again = Plan::parse(&plan.to_yaml(), "roundtrip").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.to_yaml(), plan.to_yaml());
    }

    #[test]
    fn given_an_unknown_template_variable_when_parsed_should_point_at_it_and_list_the_known_ones() {
        let text = GOOD.replace("\"{id}\"", "\"{data_dri}\"");
        let err = config(&text).unwrap_err();
        assert_eq!(err.line, line_of(&text, "{data_dri}"), "{err}");
        assert!(err.column > 0, "{err}");
        assert!(err.message.contains("{data_dri}"), "{err}");
        assert!(err.message.contains("data_dir"), "{err}");
    }

    #[test]
    fn given_a_per_node_variable_in_the_client_command_when_parsed_should_say_why_not() {
        let err = config(&GOOD.replace("command: [sh]", "command: [sh, \"{data_dir}\"]")).unwrap_err();
        assert!(err.message.contains("system.client.command"), "{err}");
        assert!(err.message.contains("{data_dir}"), "{err}");
    }

    #[test]
    fn given_a_missing_program_when_parsed_should_name_it_and_what_to_do() {
        let text = GOOD.replace("start: [sh,", "start: [./no-such-db,");
        let err = config(&text).unwrap_err();
        assert_eq!(err.line, line_of(&text, "no-such-db"), "{err}");
        assert!(
            err.message.contains("no-such-db") && err.message.contains("build it"),
            "{err}"
        );
        let err = config(&GOOD.replace("command: [sh]", "command: [no-such-client-xyz]")).unwrap_err();
        assert!(err.message.contains("not on PATH"), "{err}");
    }

    #[test]
    fn given_a_pointer_without_a_slash_when_parsed_should_explain_pointers() {
        let err = config(&GOOD.replace("role: /role", "role: role")).unwrap_err();
        assert!(err.message.contains("JSON pointer"), "{err}");
    }

    #[test]
    fn given_a_system_section_not_starting_with_kind_when_parsed_should_say_kind_comes_first() {
        let err = config(&GOOD.replace("  kind: exec\n  nodes: 3\n", "  nodes: 3\n  kind: exec\n")).unwrap_err();
        assert!(err.message.contains("must start with `kind`"), "{err}");
        let err = config(&GOOD.replace("kind: exec", "kind: exce")).unwrap_err();
        assert!(err.message.contains("exce") && err.message.contains("exec"), "{err}");
    }

    #[test]
    fn given_an_etcd_switch_on_an_exec_system_when_parsed_should_reject_the_field_with_its_location() {
        let text = GOOD.replace("  nodes: 3\n", "  nodes: 3\n  serializable_reads: true\n");
        let err = config(&text).unwrap_err();
        assert_eq!(err.line, line_of(&text, "serializable_reads"), "{err}");
        assert!(err.message.contains("unknown field `serializable_reads`"), "{err}");
    }

    #[test]
    fn given_role_targets_without_a_role_pointer_when_validated_should_reject_them() {
        let err = config(&GOOD.replace("role: /role, primary_when: [leader], ", "")).unwrap_err();
        assert!(err.message.contains("role targets"), "{err}");
    }

    fn system(status: StatusProbe) -> ExecSystem {
        let mut plan = config(GOOD).unwrap();
        let crate::plan::SystemSpec::Exec(exec) = &mut plan.system else {
            unreachable!("parsed as exec")
        };
        exec.status = status;
        ExecSystem {
            config: exec.clone(),
            nodes_dir: "/tmp/faultline-exec-test/nodes".into(),
            node_ips: vec!["127.9.9.1".parse().unwrap(); 3],
            peer_routes: None,
            faultline: "/usr/bin/faultline".into(),
            clients: client::ClientLog::disabled(),
            http: reqwest::Client::new(),
            log_patterns: exec.log_lines.patterns(),
        }
    }

    fn spanned(text: &str) -> Spanned<String> {
        serde_saphyr::from_str(&format!("\"{text}\"")).unwrap()
    }

    #[test]
    fn given_a_status_answer_when_read_with_pointers_should_give_role_primary_and_commit_point() {
        let system = system(StatusProbe {
            http: spanned("http://{client_addr}/status"),
            post: None,
            primary_if_equal: vec![],
            role: Some(spanned("/raft/role")),
            primary_when: vec!["leader".into()],
            backup_when: vec!["follower".into()],
            primary: Some(spanned("/raft/leader")),
            commit_point: vec![spanned("/commit"), spanned("/head")],
            view: None,
            durable: None,
            durable_settle: None,
        });
        let status = system
            .read_status(serde_json::json!({"raft": {"role": "leader", "leader": 2}, "commit": 7, "head": "ab"}))
            .unwrap();
        assert_eq!(status.role, Role::Primary);
        assert_eq!(status.primary, Some(2));
        assert_eq!(status.commit_point, "/commit=7 /head=ab");
        let candidate = system
            .read_status(serde_json::json!({"raft": {"role": "candidate", "leader": 0}, "commit": 7, "head": "ab"}))
            .unwrap();
        assert_eq!(candidate.role, Role::Other);
        assert_eq!(candidate.primary, None);
    }

    #[test]
    fn given_a_view_pointer_when_reading_progress_should_give_the_view_as_a_number_or_digits() {
        let probe = |view: Option<&str>| StatusProbe {
            http: spanned("http://{client_addr}/status"),
            post: None,
            primary_if_equal: vec![],
            role: Some(spanned("/role")),
            primary_when: vec!["leader".into()],
            backup_when: vec![],
            primary: None,
            commit_point: vec![spanned("/commit")],
            view: view.map(spanned),
            durable: None,
            durable_settle: None,
        };
        let with_view = system(probe(Some("/raft/term")));
        let number = with_view
            .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
            .unwrap();
        assert_eq!(with_view.progress(&number).view, Some(12));
        let digits = with_view
            .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": "13"}}))
            .unwrap();
        assert_eq!(with_view.progress(&digits).view, Some(13));
        let without = system(probe(None));
        let status = without
            .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
            .unwrap();
        assert_eq!(without.progress(&status).view, None);
    }

    #[test]
    fn given_leader_and_own_ids_when_read_with_primary_if_equal_should_tell_leader_from_follower() {
        let system = system(StatusProbe {
            http: spanned("http://{client_addr}/status"),
            post: Some("{}".into()),
            role: None,
            primary_if_equal: vec![spanned("/leader"), spanned("/header/member_id")],
            primary_when: vec![],
            backup_when: vec![],
            primary: None,
            commit_point: vec![spanned("/raftIndex")],
            view: None,
            durable: None,
            durable_settle: None,
        });
        let leader = serde_json::json!({"leader": "71", "header": {"member_id": "71"}, "raftIndex": "9"});
        assert_eq!(system.read_status(leader).unwrap().role, Role::Primary);
        let follower = serde_json::json!({"leader": "71", "header": {"member_id": "12"}, "raftIndex": "9"});
        assert_eq!(system.read_status(follower).unwrap().role, Role::Backup);
    }

    #[test]
    fn given_a_status_answer_without_a_pointer_when_read_should_be_a_misconfiguration_naming_it() {
        let system = system(StatusProbe {
            http: spanned("http://{client_addr}/status"),
            post: None,
            primary_if_equal: vec![],
            role: Some(spanned("/role")),
            primary_when: vec!["leader".into()],
            backup_when: vec![],
            primary: None,
            commit_point: vec![spanned("/commit_index")],
            view: None,
            durable: None,
            durable_settle: None,
        });
        let err = system
            .read_status(serde_json::json!({"role": "leader", "commit": 3}))
            .unwrap_err();
        let ProbeError::Misconfigured(why) = err else {
            panic!("{err:?}")
        };
        assert!(why.contains("/commit_index") && why.contains("commit_point"), "{why}");
        assert!(why.contains("\"commit\":3"), "the answer is quoted: {why}");
    }

    #[test]
    fn given_node_vars_when_expanded_should_give_ids_addresses_and_peers_without_self() {
        let system = system(
            config(GOOD)
                .map(|p| match p.system {
                    crate::plan::SystemSpec::Exec(e) => e.status,
                    _ => unreachable!("parsed as exec"),
                })
                .unwrap(),
        );
        let vars = system.node_vars(1);
        assert_eq!(
            vars.expand("{id} {name} {client_addr} {peer_addr} {node_count}"),
            "1 n2 127.9.9.1:25002 127.9.9.1:26002 3"
        );
        assert_eq!(vars.expand("{peers}"), "0=127.9.9.1:26001,2=127.9.9.1:26003");
        assert_eq!(
            vars.expand("{client_addrs}"),
            "0=127.9.9.1:25001,1=127.9.9.1:25002,2=127.9.9.1:25003"
        );
        assert_eq!(vars.expand("{data_dir}"), "/tmp/faultline-exec-test/nodes/n2/data");
    }
}
