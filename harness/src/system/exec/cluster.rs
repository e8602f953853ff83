//! How the exec adapter's nodes see the cluster beyond their own variables: lists of nodes in the syntax a system
//! wants (`system.lists`, `{list.NAME}`), and the order in which the restart-all starts them (`system.restart_all`).

use super::config::CommandSpec;
use super::template::Vars;
use super::ExecSystem;
use crate::system::System;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

/// One of `system.lists`: which nodes, each written as `item`, joined by `separator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListSpec {
    /// `peers` (every other node, at the addresses it dials them: the proxies', when proxied), `nodes` (every node,
    /// itself too) or `members` (the members of the moment).
    pub of: ListOf,
    /// A template of the listed node: `{id}`, `{name}`, `{host}`, `{port.NAME}`, `{addr.NAME}`.
    pub item: Spanned<String>,
    /// Between items (default `,`).
    #[serde(default = "comma")]
    pub separator: String,
}

fn comma() -> String {
    ",".into()
}

/// Which nodes a list names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListOf {
    /// Every other node, as this node dials it.
    Peers,
    /// Every node, this one too.
    Nodes,
    /// The members of the moment.
    Members,
}

/// `system.restart_all`: how the restart-all orders its starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartAllSpec {
    /// Run on each stopped node (its `{data_dir}` and the other node variables): prints how far the node got, a
    /// number on its last line (e.g. `sed -n 's/^seqno: *//p' {data_dir}/grastate.dat`).
    pub position: CommandSpec,
}

impl ExecSystem {
    /// `list` as node `node` sees it: each listed node's item, joined.
    pub(super) fn list(&self, node: usize, list: &ListSpec) -> String {
        let listed: Vec<usize> = match list.of {
            ListOf::Peers => (0..self.node_count()).filter(|&k| k != node).collect(),
            ListOf::Nodes => (0..self.node_count()).collect(),
            ListOf::Members => self.members.lock().expect("members lock").clone(),
        };
        let items: Vec<String> = listed
            .into_iter()
            .map(|k| {
                let mut vars = Vars::default();
                vars.set("id", k.to_string());
                vars.set("name", Self::name(k));
                vars.set("host", self.node_ips[k].to_string());
                for (port, base) in self.config.ports.bases() {
                    vars.set(format!("port.{port}"), (base + k as u16).to_string());
                    vars.set(format!("addr.{port}"), self.port_addr(k, base).to_string());
                }
                if list.of == ListOf::Peers {
                    // The address this node dials its peer at (the proxy of the link, when proxied).
                    let route = self.peer_route(node, k);
                    vars.set("host", route.ip().to_string());
                    vars.set("port.peer", route.port().to_string());
                    vars.set("addr.peer", route.to_string());
                }
                vars.expand(&list.item.value)
            })
            .collect();
        items.join(&list.separator)
    }
}
