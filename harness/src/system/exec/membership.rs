//! The exec adapter's membership hooks, `system.membership: {add, remove, list}`: commands the plan writes, so any
//! system that can change its members from a command line can be tested doing it.
//!
//! ```yaml
//! system:
//!   kind: exec
//!   nodes: 5
//!   members: 3                      # n1..n3 bootstrap the cluster; n4, n5 are spares, prepared by `wipe`
//!   wipe: {command: [./mydb, init, --join, --dir, "{data_dir}"]}
//!   membership:
//!     add: [./mydb-admin, add, "{id}", --via, "{member_addrs.client}"]
//!     remove: [./mydb-admin, remove, "{id}", --via, "{member_addrs.client}"]
//!     list: [./mydb-admin, members, --via, "{client_addr}"]
//!     order: start-then-add         # or add-then-start (etcd's `member add`, then the joiner starts)
//! ```
//!
//! - Each command is templated as node `{id}`'s (the joiner's or the leaver's for `add` and `remove`, the asked
//!   member's for `list`), with two variables of the moment: `{members}` (the 0-based ids of the current members,
//!   comma-separated) and `{member_addrs.NAME}` (`ID=HOST:PORT,...` of their port NAME). `start` and `prepare` may
//!   use them too (a joiner's `start` naming the cluster it joins).
//! - A joiner, and every spare before its first start, is prepared as a wiped node is: its data dir emptied, its
//!   config files written, then `system.wipe.command` (which must make it a node that joins rather than bootstraps).
//! - `add` and `remove` end Jepsen-style: exit 0 is done (stdout, if JSON with `members`, names the new members);
//!   exit 1 is refused, surely not applied; any other exit, or none within [`CHANGE_TIMEOUT`], is unknown and the
//!   list that follows says.
//! - `list` prints the members: a JSON list of 0-based ids or node names (`[0, 1, 3]`, `["n1", "n2", "n4"]`), or an
//!   object `{"members": [...], "epoch": N}`. It is asked of every current member at once; the answer of the newest
//!   `epoch` wins (a lagging member may still list an older configuration), else the first member's that answers.

use super::{CommandSpec, ExecSystem};
use crate::system::membership::{ChangeOutcome, JoinOrder, Listed, Membership};
use crate::system::System;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Bound on one `add` or `remove` command: a reconfiguration may wait for a view change and a commit.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on one `list` command.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);
/// The exit code of a change that was refused and surely not applied.
const EXIT_REFUSED: i32 = 1;

/// The plan section `system.membership`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipHooks {
    /// Adds node `{id}` to the cluster (see the module doc for its exit codes).
    pub add: CommandSpec,
    /// Removes node `{id}` from the cluster.
    pub remove: CommandSpec,
    /// Prints the members, asked of member `{id}`.
    pub list: CommandSpec,
    /// Whether a joiner starts before its `add` (default) or after it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub order: Order,
}

/// `system.membership.order`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// The joiner is started, then added (it waits to be added).
    #[default]
    StartThenAdd,
    /// The joiner is added, then started (it joins a cluster that lists it already).
    AddThenStart,
}

fn is_default(order: &Order) -> bool {
    *order == Order::default()
}

impl MembershipHooks {
    /// The commands, with their plan paths.
    pub(super) fn commands(&self) -> [(&'static str, &CommandSpec); 3] {
        [
            ("system.membership.add", &self.add),
            ("system.membership.remove", &self.remove),
            ("system.membership.list", &self.list),
        ]
    }

    /// The commands, to resolve their paths.
    pub(super) fn commands_mut(&mut self) -> [&mut CommandSpec; 3] {
        [&mut self.add, &mut self.remove, &mut self.list]
    }
}

#[async_trait]
impl Membership for ExecSystem {
    fn join_order(&self) -> JoinOrder {
        match self.config.membership.as_ref().map(|hooks| hooks.value.order) {
            Some(Order::AddThenStart) => JoinOrder::AddThenStart,
            _ => JoinOrder::StartThenAdd,
        }
    }

    async fn prepare_joiner(&self, node: usize, members: &[usize]) -> anyhow::Result<()> {
        self.set_members(members);
        self.make_data_dir(node).await?;
        System::wipe(self, node).await
    }

    async fn add(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        self.change("add", node, members).await
    }

    async fn remove(&self, node: usize, members: &[usize]) -> ChangeOutcome {
        self.change("remove", node, members).await
    }

    async fn list(&self, members: &[usize]) -> Result<Listed, String> {
        let Some(hooks) = &self.config.membership else {
            return Err("system.membership is not set".into());
        };
        self.set_members(members);
        let asked: Vec<usize> = if members.is_empty() {
            (0..self.node_count()).collect()
        } else {
            members.to_vec()
        };
        let runs = asked.iter().map(|&node| async move {
            let output = self
                .run_output("membership list", &hooks.value.list, node, LIST_TIMEOUT)
                .await
                .map_err(|e| format!("{e:#}"))?;
            if !output.status.success() {
                return Err(format!("exited {}: {}", output.status, stderr_of(&output)));
            }
            parse_list(&String::from_utf8_lossy(&output.stdout), self.node_count())
        });
        let answers = futures::future::join_all(runs).await;
        let newest = answers
            .iter()
            .filter_map(|answer| answer.as_ref().ok())
            .enumerate()
            .max_by_key(|(order, listed)| (listed.epoch, std::cmp::Reverse(*order)));
        match newest {
            Some((_, listed)) => Ok(listed.clone()),
            None => Err(asked
                .iter()
                .zip(&answers)
                .filter_map(|(node, answer)| answer.as_ref().err().map(|e| format!("{}: {e}", Self::name(*node))))
                .collect::<Vec<_>>()
                .join("; ")),
        }
    }

    fn members_in_answer(&self, answer: &Value) -> Option<Listed> {
        answer.get("members")?;
        parse_value(answer, self.node_count()).ok()
    }
}

impl ExecSystem {
    /// Runs the `add` or `remove` command for `node` with `members` as the members of the moment.
    async fn change(&self, what: &str, node: usize, members: &[usize]) -> ChangeOutcome {
        let Some(hooks) = &self.config.membership else {
            return ChangeOutcome::Fail("system.membership is not set".into());
        };
        self.set_members(members);
        let spec = if what == "add" {
            &hooks.value.add
        } else {
            &hooks.value.remove
        };
        let output = match self
            .run_output(&format!("membership {what}"), spec, node, CHANGE_TIMEOUT)
            .await
        {
            Ok(output) => output,
            // Not run at all (a missing program) applies nothing; no exit in time may have.
            Err(error) if error.to_string().contains("did not finish") => {
                return ChangeOutcome::Info(format!("{error:#}"))
            }
            Err(error) => return ChangeOutcome::Fail(format!("{error:#}")),
        };
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
        match output.status.code() {
            Some(0) => ChangeOutcome::Ok(serde_json::from_str(&stdout).unwrap_or(Value::String(stdout))),
            Some(EXIT_REFUSED) => ChangeOutcome::Fail(format!("refused (exit 1): {}", stderr_of(&output))),
            _ => ChangeOutcome::Info(format!("exited {}: {}", output.status, stderr_of(&output))),
        }
    }
}

/// The command's stderr, trimmed, for a message.
fn stderr_of(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let text = text.trim();
    text.chars().take(super::QUOTE_CHARS_MAX).collect()
}

/// Reads a `list` command's output (see the module doc).
pub(super) fn parse_list(text: &str, node_count: usize) -> Result<Listed, String> {
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "its output is not JSON ({e}): print a list of member ids or names, e.g. [0, 1, 3]; it printed `{}`",
            text.trim().chars().take(super::QUOTE_CHARS_MAX).collect::<String>()
        )
    })?;
    parse_value(&value, node_count)
}

/// A list of ids or names, or `{"members": list, "epoch": N}`.
fn parse_value(value: &Value, node_count: usize) -> Result<Listed, String> {
    let (list, epoch) = match value {
        Value::Array(_) => (value, None),
        Value::Object(object) => (
            object.get("members").ok_or("its output has no `members`")?,
            object.get("epoch").and_then(Value::as_u64),
        ),
        other => return Err(format!("its output is {other}, not a list of members")),
    };
    let items = list.as_array().ok_or("`members` is not a list")?;
    let mut members = Vec::with_capacity(items.len());
    for item in items {
        let node = match item {
            Value::Number(id) => id.as_u64().map(|id| id as usize),
            Value::String(name) => faultline_faults::process::parse_node_name(name),
            _ => None,
        };
        match node {
            Some(node) if node < node_count => members.push(node),
            _ => {
                return Err(format!(
                    "`{item}` is not a node: members are 0-based ids below {node_count} or names n1..n{node_count}"
                ))
            }
        }
    }
    members.sort_unstable();
    members.dedup();
    Ok(Listed { epoch, members })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_ids_names_or_an_epoch_object_when_a_list_is_parsed_should_give_the_members() {
        assert_eq!(parse_list("[3, 0, 1]\n", 5).unwrap().members, vec![0, 1, 3]);
        assert_eq!(parse_list(r#"["n1","n4"]"#, 5).unwrap().members, vec![0, 3]);
        let listed = parse_list(r#"{"epoch": 4, "members": [1, 2], "view": 9}"#, 5).unwrap();
        assert_eq!((listed.epoch, listed.members), (Some(4), vec![1, 2]));
    }

    #[test]
    fn given_a_node_outside_the_pool_or_text_when_a_list_is_parsed_should_say_what_it_expected() {
        let error = parse_list("[0, 7]", 5).unwrap_err();
        assert!(error.contains("`7` is not a node"), "{error}");
        let error = parse_list("n1 n2", 5).unwrap_err();
        assert!(error.contains("not JSON") && error.contains("n1 n2"), "{error}");
    }
}
