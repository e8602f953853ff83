//! The exec adapter's port bases (`system.ports`): every node's ports are a base plus its index, named ports for
//! templates, and the checks that keep the ranges (the proxies' too) inside the port space and apart.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Port bases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// More ports by name, each a base (node i: `base + i`): `{port.NAME}`, `{addr.NAME}`, `{addrs.NAME}` and
    /// `{node.K.port.NAME}` in templates, e.g. `{admin: 28001, election: 29001}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub named: BTreeMap<String, u16>,
}

impl Ports {
    /// Every port name and its base: `client`, `peer`, then the named ones.
    pub fn bases(&self) -> Vec<(String, u16)> {
        [("client".to_string(), self.client), ("peer".to_string(), self.peer)]
            .into_iter()
            .chain(self.named.iter().map(|(name, base)| (name.clone(), *base)))
            .collect()
    }

    /// Every port name.
    pub fn names(&self) -> Vec<String> {
        self.bases().into_iter().map(|(name, _)| name).collect()
    }

    /// The base of port `name`.
    pub fn base(&self, name: &str) -> Option<u16> {
        self.bases().into_iter().find(|(n, _)| n == name).map(|(_, base)| base)
    }

    /// Names that are not identifiers, ranges that leave the port space or overlap (the proxies' too), for a
    /// cluster of `nodes`.
    pub(super) fn check(&self, nodes: usize) -> Result<(), String> {
        for name in self.named.keys() {
            let identifier =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !identifier {
                return Err(format!(
                    "ports.named: `{name}` is not a port name (letters, digits, `_` and `-`, e.g. `admin`)"
                ));
            }
            if ["client", "peer", "proxy"].contains(&name.as_str()) {
                return Err(format!(
                    "ports.named: `{name}` is already a port of every node; give it as `ports.{name}`"
                ));
            }
        }
        let mut ranges: Vec<(String, u32, u32)> = self
            .bases()
            .into_iter()
            .map(|(name, base)| (name, base as u32, base as u32 + nodes as u32 - 1))
            .collect();
        ranges.push((
            "proxy".into(),
            self.proxy as u32,
            self.proxy as u32 + 10 * (nodes as u32 - 1) + nodes as u32 - 1,
        ));
        for (name, low, high) in &ranges {
            if *low == 0 || *high > u16::MAX as u32 {
                return Err(format!(
                    "ports: `{name}` ({low}..={high} for {nodes} nodes) leaves the port range 1..=65535"
                ));
            }
        }
        for (i, (a, a_low, a_high)) in ranges.iter().enumerate() {
            for (b, b_low, b_high) in &ranges[i + 1..] {
                if a_low <= b_high && b_low <= a_high {
                    return Err(format!(
                        "ports: `{a}` ({a_low}..={a_high}) and `{b}` ({b_low}..={b_high}) overlap for {nodes} nodes; \
                         give each its own range (node i uses base + i)"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            client: default_client_port(),
            peer: default_peer_port(),
            proxy: default_proxy_port(),
            named: BTreeMap::new(),
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
