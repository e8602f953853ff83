//! The exec adapter's plan section (`system: {kind: exec, ...}`): its types, load-time checks and the build of a run.

use super::client;
use super::cluster::{ListSpec, RestartAllSpec};
pub use super::ports::Ports;
use super::template::Scope;
use super::{ExecSystem, MembershipHooks, Template};
use crate::plan::{Bounded, Plan, PlanError, WorkloadKind};
use crate::system::{AdapterSpec, BuildContext, Built, Capabilities, Recovered};
use anyhow::Context;
use async_trait::async_trait;
use faultline_workloads::position::Position;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// The user the node's commands run as (`start`, `prepare`, `wipe`, `verify`, `stop`, the `ready` and `status`
    /// commands), e.g. `postgres` for a system that refuses to run as root. faultline stays root; it gives the node's
    /// folder and the files it writes there to this user. The client command runs as faultline does (it only talks
    /// to the nodes over the network). Needs faultline to run as root, and a user that exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Spanned<String>>,
    /// Extra environment of every command of a node: `start`, `prepare`, `stop`, `verify`, `wipe`, the `ready` and
    /// `status` commands (values are templates; the client has its own, `client.env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Spanned<String>>,
    /// When a started node is ready; default: it answers the status probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<ReadyProbe>,
    /// How to ask a node for its role and commit point. Without it faultline knows no roles and no commit point:
    /// role targets, role triggers and the convergence check are refused, the rest works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusProbe>,
    /// Configuration files, path -> content, both templates: written before a node's first start (before
    /// `prepare`) and again after a wipe, never at a restart (the system may rewrite them). A relative path is
    /// relative to the node's folder (`{node_dir}`); every file must stay inside it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_files: BTreeMap<String, Spanned<String>>,
    /// Offline check of a stopped node's data dir (exit 0 = sound), run on every node in the restart-all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<CommandSpec>,
    /// Lists of nodes in the syntax the system wants, each `{list.NAME}` in per-node templates: `{cluster: {of:
    /// peers, item: "{host}:{port.peer}", separator: ","}}` gives `127.0.0.1:26002,127.0.0.1:26003` (write
    /// `gcomm://{list.cluster}` around it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lists: BTreeMap<String, ListSpec>,
    /// How the restart-all starts the nodes again, for a system that must start from its most advanced node (a
    /// Galera cluster after a full crash): `{position: [cmd, ...]}` reads, from each stopped node's own files, how
    /// far it got (the last line of its output a number); the highest starts first and alone, with `{start}` =
    /// `restart-all-first`, and the others once it is ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_all: Option<RestartAllSpec>,
    /// How a wiped node rejoins: the harness empties its data dir, then runs this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wipe: Option<WipeSpec>,
    /// Substrings of a log line that say the node refused to boot (its last matching line is the refusal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusal_patterns: Vec<String>,
    /// The WAL files, relative to the data dir (disk surgery aims at them), e.g. `wal/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_glob: Option<String>,
    /// Named file classes of a node's data dir, each a glob relative to it, e.g. `{wal: "raft/*.log", snapshot:
    /// "snap/*", data: "data/*.seg"}`, for cuts that name them (`files: wal`). `wal` defaults to `wal_glob`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Asks node `{id}` to stop gracefully (`kind: stop`, `corrupt` with `stop: graceful`); default: SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<CommandSpec>,
    /// The boot log line that says what a restarted node kept (with `status.durable`, the durability check; without
    /// it the node's first status answer after its boot says it).
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
    /// How many of the nodes bootstrap the cluster (n1..nM); the others are spares that membership changes add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Spanned<Bounded<1, 9>>>,
    /// The membership hooks (`add`, `remove`, `list`): with them, plans may change who is a member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membership: Option<Spanned<MembershipHooks>>,
    /// The plan's folder as `{plan_dir}` named it at load, set by faultline (a stored plan keeps it): on hosts, the
    /// files of this folder that a node's commands name are copied to the node's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_folder: Option<PathBuf>,
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

/// The status probe: `http` or `command` (once per probe, or one `persistent` process per node), read with JSON
/// pointers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusProbe {
    /// The URL of a JSON status document (a GET, or a POST of `post`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Spanned<String>>,
    /// A command that prints the status document (one JSON object) on stdout; a non-zero exit: the node did not
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandSpec>,
    /// Run `command` once per node and talk to it in lines: `{"probe": N, "timeout_ms": T}` out, the document (or
    /// `{"error": "why"}`) back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
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
    /// JSON pointer to a digest of the node's data (a hash, a count and a checksum ...): two nodes at the same commit
    /// point whose digests differ have diverged data, which commit points alone cannot show. Convergence then also
    /// waits for equal digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<Spanned<String>>,
    /// JSON pointer to the view, term or epoch the node is in (a number, or a string of digits): of two nodes that
    /// claim to lead, the one in the newer view is the primary (the other was cut off and does not know yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Spanned<String>>,
    /// JSON pointer to a durable lower bound (a number, or a string of digits; or a vector clock, an object of
    /// numbers such as `{"1": 3181, "2": 5}` or a string that writes one, compared per component): a value the node
    /// can only have reached after persisting everything up to it (e.g. its commit or applied index). It turns on
    /// the durability check: what a restarted node kept is read from its boot line (`recovered`) or, without one,
    /// from its first status answer once it is ready (so it must not answer before it has loaded its state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<Spanned<String>>,
    /// Extra environment of the status `command`, on top of `system.env` (values are templates).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Spanned<String>>,
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

    /// As [`System::log_patterns`](crate::system::System::log_patterns) gives them.
    pub(super) fn patterns(&self) -> Vec<(&'static str, std::borrow::Cow<'static, str>)> {
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

/// Where a restarted node says what it kept: its boot log (the first line that contains `line`, and the position
/// right after `after` in it, a number or a vector clock such as Tarantool's `{1: 3181, 2: 5}`; e.g. `{line:
/// "\"msg\":\"newRaft ", after: "lastindex:"}` for etcd), or, for a system that logs no such line, its first
/// status answer once it is ready (`{status: /op}`: a JSON pointer to what the node holds on its own disk, such as
/// its log's head).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveredLine {
    /// Text the boot line contains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<Spanned<String>>,
    /// Text right before the position: a number (decimal, or hexadecimal after `0x`) or a vector clock in braces
    /// (`{1: 3181, 2: 5}`, `{"1": 3181}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Spanned<String>>,
    /// A JSON pointer into the first status answer after the boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Spanned<String>>,
}

impl RecoveredLine {
    /// The position in the first line of `boot_log` that contains `line`, right after `after` (`None` for a
    /// `status` pointer).
    pub(super) fn read(&self, boot_log: &str) -> Option<Recovered> {
        Recovered::from_line(boot_log, &self.line.as_ref()?.value, &self.after.as_ref()?.value)
    }

    /// Where the plan writes it, for messages.
    fn anchor(&self) -> Option<&Spanned<String>> {
        self.line.as_ref().or(self.status.as_ref()).or(self.after.as_ref())
    }

    /// A boot line with its number's marker, or a status pointer; not both, not neither.
    fn check(&self) -> Result<(), String> {
        match (&self.line, &self.after, &self.status) {
            (Some(_), Some(_), None) => Ok(()),
            (None, None, Some(pointer)) if pointer.value.starts_with('/') => Ok(()),
            (None, None, Some(pointer)) => Err(format!(
                "system.recovered.status: `{}` is not a JSON pointer: it starts with `/`, e.g. `/op`",
                pointer.value
            )),
            _ => Err(
                "system.recovered takes `{line, after}` (the boot log line that says what a restarted node \
                      kept, and the text right before its number) or `{status: POINTER}` (the number in its first \
                      status answer once it is ready), e.g. {line: \"recovered\", after: \"op=\"} or {status: /op}"
                    .into(),
            ),
        }
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
    /// Extra environment of the client command (values are templates, as in `command`), e.g.
    /// `{PG_ISOLATION: repeatable-read}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Spanned<String>>,
    /// The workload kinds it speaks (default: register, log, set; a client that speaks `f: txn` lists `txn`).
    #[serde(default = "all_workloads")]
    pub workloads: Vec<WorkloadKind>,
}

fn all_workloads() -> Vec<WorkloadKind> {
    vec![WorkloadKind::Register, WorkloadKind::Log, WorkloadKind::Set]
}

impl ExecConfig {
    /// The durable position a status answer gives at `status.durable`: a number or a vector clock.
    pub(super) fn durable_at(&self, raw: &serde_json::Value) -> Option<Position> {
        let pointer = self.status.as_ref()?.durable.as_ref()?;
        super::position_at(raw, &pointer.value)
    }

    /// What a restarted node's status answer says it kept: at `recovered.status`, else at `status.durable`.
    pub(super) fn kept_at(&self, raw: &serde_json::Value) -> Option<Position> {
        match self.recovered.as_ref().and_then(|r| r.status.as_ref()) {
            Some(pointer) => super::position_at(raw, &pointer.value),
            None => self.durable_at(raw),
        }
    }

    /// Every command of the section, with its plan path (for messages) and whether it runs per node.
    pub(super) fn commands(&self) -> Vec<(&'static str, &CommandSpec, bool)> {
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
        if let Some(stop) = &self.stop {
            commands.push(("system.stop", stop, true));
        }
        if let Some(restart_all) = &self.restart_all {
            commands.push(("system.restart_all.position", &restart_all.position, true));
        }
        if let Some(wipe) = &self.wipe {
            commands.push(("system.wipe.command", &wipe.command, true));
        }
        if let Some(ReadyProbe::Command(ready)) = &self.ready {
            commands.push(("system.ready.command", ready, true));
        }
        if let Some(command) = self.status.as_ref().and_then(|s| s.command.as_ref()) {
            commands.push(("system.status.command", command, true));
        }
        if let Some(hooks) = &self.membership {
            commands.extend(hooks.value.commands().map(|(field, command)| (field, command, true)));
        }
        commands
    }

    fn commands_mut(&mut self) -> Vec<&mut CommandSpec> {
        let mut commands = vec![&mut self.start, &mut self.client.command];
        commands.extend(self.prepare.as_mut());
        commands.extend(self.verify.as_mut());
        commands.extend(self.stop.as_mut());
        commands.extend(self.restart_all.as_mut().map(|r| &mut r.position));
        commands.extend(self.wipe.as_mut().map(|w| &mut w.command));
        if let Some(ReadyProbe::Command(ready)) = &mut self.ready {
            commands.push(ready);
        }
        if let Some(command) = self.status.as_mut().and_then(|s| s.command.as_mut()) {
            commands.push(command);
        }
        if let Some(hooks) = &mut self.membership {
            commands.extend(hooks.value.commands_mut());
        }
        commands
    }

    /// Every per-node template string that is not a command.
    fn node_templates(&self) -> Vec<(String, &Spanned<String>)> {
        let mut templates: Vec<(String, &Spanned<String>)> =
            self.env.iter().map(|(k, v)| (format!("system.env.{k}"), v)).collect();
        if let Some(status) = &self.status {
            templates.extend(status.env.iter().map(|(k, v)| (format!("system.status.env.{k}"), v)));
        }
        if let Some(url) = self.status.as_ref().and_then(|s| s.http.as_ref()) {
            templates.push(("system.status.http".into(), url));
        }
        for (path, content) in &self.config_files {
            templates.push((format!("system.config_files[{path:?}]"), content));
        }
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
    fn node_command(&self) -> Result<(PathBuf, Vec<String>), String> {
        let mut words = self.start.iter().map(|word| word.value.clone());
        let program = words.next().ok_or("`start` is empty")?;
        Ok((PathBuf::from(program), words.collect()))
    }

    fn file_classes(&self) -> Vec<(String, String)> {
        let mut classes: Vec<(String, String)> = self.files.clone().into_iter().collect();
        if let (Some(wal), false) = (&self.wal_glob, self.files.contains_key("wal")) {
            classes.push(("wal".to_string(), wal.clone()));
        }
        classes
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: self.client.workloads.clone(),
            proxy_partitions: self.proxy_partitions,
            primary_probe: self
                .status
                .as_ref()
                .is_some_and(|s| s.role.is_some() || !s.primary_if_equal.is_empty()),
            status_probe: self.status.is_some(),
            wipe: self.wipe.is_some(),
            offline_verify: self.verify.is_some(),
            // Without `recovered`, a restarted node's first status answer says what it kept.
            durable_progress: self.status.as_ref().is_some_and(|s| s.durable.is_some()),
            // A plan declares it with `disk: {interior_damage: refuse}`.
            refuses_interior_damage: false,
            repairing_pattern: self.log_lines.repairing.is_some(),
            repaired_pattern: self.log_lines.repaired.is_some(),
            membership: self.membership.is_some(),
        }
    }

    fn members(&self) -> Option<Spanned<Bounded<1, 9>>> {
        self.members.clone()
    }

    fn resolve_paths(&mut self, dir: &Path) {
        self.plan_folder.get_or_insert_with(|| dir.to_path_buf());
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
        self.client.env.values_mut().for_each(resolve);
        if let Some(status) = &mut self.status {
            status.env.values_mut().for_each(resolve);
        }
    }

    fn validate(&self, plan: &Plan, origin: &str) -> Result<(), PlanError> {
        let at = |spanned: &Spanned<String>, message: String| PlanError {
            origin: origin.to_string(),
            line: spanned.referenced.line(),
            column: spanned.referenced.column(),
            message,
        };
        if let Some(user) = &self.user {
            check_user(&user.value, plan).map_err(|message| at(user, message))?;
        }
        if let (Some(hooks), None) = (&self.membership, &self.wipe) {
            return Err(PlanError {
                origin: origin.to_string(),
                line: hooks.defined.line(),
                column: hooks.defined.column(),
                message: "system.membership needs `system.wipe`: a joiner (and a spare before its first start) is \
                          prepared as a wiped node, by `wipe.command`, which must make it join rather than bootstrap"
                    .into(),
            });
        }
        let nodes = plan.system.nodes();
        self.ports.check(nodes).map_err(|message| PlanError {
            origin: origin.to_string(),
            line: 0,
            column: 0,
            message,
        })?;
        let port_names = self.ports.names();
        let list_names: Vec<String> = self.lists.keys().cloned().collect();
        for (name, list) in &self.lists {
            let field = format!("system.lists.{name}.item");
            super::template::check_list_item(&list.item.value, &port_names)
                .map_err(|e| at(&list.item, format!("{field}: {e}")))?;
        }
        let node_scope = Scope {
            per_node: true,
            ports: &port_names,
            node_count: nodes,
            pid: false,
            start: false,
            lists: &list_names,
        };
        let client_scope = Scope {
            per_node: false,
            ..node_scope
        };
        let stop_scope = Scope {
            pid: true,
            ..node_scope
        };
        let start_scope = Scope {
            start: true,
            ..node_scope
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
            let scope = match (per_node, field) {
                (true, "system.stop") => &stop_scope,
                (true, "system.start") => &start_scope,
                (true, _) => &node_scope,
                (false, _) => &client_scope,
            };
            for arg in command {
                Template::parse(&arg.value, scope).map_err(|e| at(arg, format!("{field}: {e}")))?;
            }
            // On hosts, a node's own commands run there: the build looks for their programs on the hosts.
            if !(super::hosts::node_programs_elsewhere() && super::hosts::runs_on_node_machine(field)) {
                super::program::check_program(&program.value).map_err(|e| at(program, format!("{field}: {e}")))?;
            }
        }
        for (field, template) in self.node_templates() {
            Template::parse(&template.value, &node_scope).map_err(|e| at(template, format!("{field}: {e}")))?;
        }
        for (name, value) in &self.client.env {
            Template::parse(&value.value, &client_scope)
                .map_err(|e| at(value, format!("system.client.env.{name}: {e}")))?;
        }
        for (path, content) in &self.config_files {
            let field = format!("system.config_files[{path:?}]");
            Template::parse(path, &node_scope).map_err(|e| at(content, format!("{field} (its path): {e}")))?;
            let anchored = path.starts_with("{node_dir}") || path.starts_with("{data_dir}");
            let relative_inside = Path::new(path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir));
            if !anchored && !relative_inside {
                return Err(at(
                    content,
                    format!(
                        "{field}: a config file lives in the node's folder: write a path relative to it (`node.conf`), \
                         or one under `{{node_dir}}` or `{{data_dir}}`"
                    ),
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
        let located = |spanned: Option<&Spanned<String>>, message: String| match spanned {
            Some(spanned) => at(spanned, message),
            None => PlanError {
                origin: origin.to_string(),
                line: 0,
                column: 0,
                message,
            },
        };
        if let Some(recovered) = &self.recovered {
            recovered
                .check()
                .map_err(|message| located(recovered.anchor(), message))?;
        }
        if let (None, Some(recovered)) = (&self.status, &self.recovered) {
            return Err(located(
                recovered.anchor(),
                "system.recovered needs system.status with a `durable` pointer: the durability check compares what a \
                 node reported before it stopped with what it booted with"
                    .into(),
            ));
        }
        let Some(status) = &self.status else {
            return Ok(());
        };
        let status_at = status
            .http
            .as_ref()
            .or(status.command.as_ref().and_then(|c| c.first()))
            .or(status.commit_point.first());
        let status_err = |message: &str| match status_at {
            Some(spanned) => at(spanned, message.to_string()),
            None => PlanError {
                origin: origin.to_string(),
                line: 0,
                column: 0,
                message: message.to_string(),
            },
        };
        match (&status.http, &status.command) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(status_err(
                    "system.status takes one source: `http: URL` (a JSON document), or `command: [...]` (prints one; \
                     add `persistent: true` to keep one process per node and ask it a line per probe)",
                ))
            }
            (Some(_), None) if status.persistent => {
                return Err(status_err(
                    "system.status.persistent is for `command`: an HTTP probe keeps its connections anyway",
                ))
            }
            (None, Some(_)) if status.post.is_some() => {
                return Err(status_err(
                    "system.status.post is the body of an HTTP POST; a status `command` takes none",
                ))
            }
            _ => {}
        }
        let pointers = status
            .role
            .iter()
            .chain(&status.primary)
            .chain(&status.commit_point)
            .chain(&status.digest)
            .chain(&status.primary_if_equal)
            .chain(&status.durable)
            .chain(&status.view);
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
        if let (None, Some(recovered)) = (&status.durable, &self.recovered) {
            return Err(located(
                recovered.anchor(),
                "system.recovered needs system.status.durable too (a JSON pointer to a durable lower bound, e.g. \
                 /commit): the durability check compares the two"
                    .into(),
            ));
        }
        if status.commit_point.is_empty() {
            return Err(status_err(
                "system.status.commit_point needs at least one JSON pointer (e.g. [/commit, /head]): the final \
                 phase waits for every node to report the same values",
            ));
        }
        if let Some(first) = status.primary_if_equal.first() {
            if status.primary_if_equal.len() != 2 || status.role.is_some() {
                return Err(at(
                    first,
                    "system.status.primary_if_equal takes two JSON pointers (the leader's id and the node's own), \
                     and replaces `role`"
                        .into(),
                ));
            }
        }
        if let Some(role) = &status.role {
            if status.primary_when.is_empty() {
                return Err(at(
                    role,
                    "system.status.role needs `primary_when`: the role values of a primary (e.g. [leader])".into(),
                ));
            }
        }
        Ok(())
    }

    async fn build(&self, context: BuildContext<'_>) -> anyhow::Result<Built> {
        let n = context.node_count();
        let bases: Vec<u16> = self.ports.bases().into_iter().map(|(_, base)| base).collect();
        let ports: Vec<u16> = (0..n as u16)
            .flat_map(|i| bases.iter().map(move |base| base + i))
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
            (context.netns_network().await?, None)
        };
        let faultline = crate::supervisor::self_exe().context("cannot find the faultline executable")?;
        let store_dir = context
            .local_nodes_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let on_hosts = context.remote.map(|remote| super::hosts::OnHosts {
            executables: (0..n).map(|node| remote.executable(node)).collect(),
            plan_folder: self.plan_folder.clone(),
            plan_copy: context.nodes_dir.join("plan"),
        });
        if let Some(on_hosts) = &on_hosts {
            let files = on_hosts.named_files(super::hosts::node_command_words(self))?;
            on_hosts.copy(&context.hands, &files).await?;
        }
        let user = match &self.user {
            Some(name) => Some(Arc::new(
                crate::supervisor::RunAs::lookup(&name.value).map_err(|e| anyhow::anyhow!("system.user: {e}"))?,
            )),
            None => None,
        };
        let system = ExecSystem {
            config: self.clone(),
            user,
            nodes_dir: context.nodes_dir.clone(),
            local_nodes_dir: context.local_nodes_dir.clone(),
            hands: context.hands.clone(),
            on_hosts,
            node_ips: node_ips.clone(),
            peer_routes: routes,
            faultline: faultline.clone(),
            clients: client::ClientLog::create(&store_dir.join("clients.log"), context.run_id)?,
            starts: Default::default(),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(2)
                .build()
                .context("building the status probe's HTTP client")?,
            log_patterns: self.log_lines.patterns(),
            run_id: context.run_id.to_string(),
            persistent: Vec::new(),
            initial_members: context.initial_members(),
            members: std::sync::Mutex::new(context.initial_members()),
        };
        let system = system.with_persistent_status();
        if system.on_hosts.is_some() {
            system.check_programs_on_hosts().await?;
        }
        let vars = system.node_vars(0);
        let start: Vec<String> = self.start.iter().map(|word| vars.expand(&word.value)).collect();
        Ok(Built {
            binary: super::program::launched_program(&start),
            system: Arc::new(system),
            node_ips,
            network,
        })
    }
}

/// A `system.user` this run can take: faultline is root (only root may change a process's user) and the user exists.
/// (In network namespaces, `ip netns exec` runs as root and `setpriv` becomes the user inside: the lab does that.)
fn check_user(name: &str, _plan: &Plan) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "system.user: running the nodes as `{name}` needs faultline to run as root (only root may start a process \
             as another user); run it with sudo, or drop `user`"
        ));
    }
    crate::supervisor::RunAs::lookup(name).map_err(|e| format!("system.user: {e}"))?;
    Ok(())
}
