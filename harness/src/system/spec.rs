//! The `system:` section of a plan: one arm per adapter, each the adapter's own typed config, tagged by `kind`.
//!
//! This file is the adapter table: adding a built-in adapter is one line here plus its own module.

use super::AdapterSpec;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// The adapter table: one line per adapter, `"kind" => Variant(its plan section)`. It defines [`SystemSpec`], the
/// `system:` section (tagged by `kind`), its parsing and the dispatch to each adapter's [`AdapterSpec`].
macro_rules! adapters {
    ($($name:literal => $variant:ident($config:ty)),* $(,)?) => {
        /// The system under test: `system: {kind: NAME, ...}`, each adapter's own section.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "kind")]
        // One plan holds one of these, parsed once per run: the exec arm's size costs nothing worth a Box.
        #[allow(clippy::large_enum_variant)]
        pub enum SystemSpec {
            $(
                #[doc = concat!("`kind: ", $name, "`.")]
                #[serde(rename = $name)]
                $variant($config),
            )*
        }

        impl SystemSpec {
            /// Every adapter kind, as plans name it.
            pub const KINDS: &'static [&'static str] = &[$($name),*];

            /// The adapter kind (`reference`, `etcd`, ...).
            pub fn kind(&self) -> &'static str {
                match self { $(SystemSpec::$variant(_) => $name),* }
            }

            /// The adapter's side of the section.
            pub fn adapter(&self) -> &dyn AdapterSpec {
                match self { $(SystemSpec::$variant(config) => config),* }
            }

            /// The adapter's side of the section, to change (the matrix's `--bug`).
            pub fn adapter_mut(&mut self) -> &mut dyn AdapterSpec {
                match self { $(SystemSpec::$variant(config) => config),* }
            }

            /// Cluster size: every adapter's section has `nodes: Bounded<1, 9>`.
            pub fn nodes(&self) -> usize {
                match self { $(SystemSpec::$variant(config) => config.nodes.0 as usize),* }
            }

            /// How many nodes are members at the start: the adapter's `members:`, else every node.
            pub fn initial_members(&self) -> usize {
                self.adapter().members().map_or(self.nodes(), |members| members.value.0 as usize)
            }

            /// Sets the cluster size (`--nodes`; the plan is validated again after).
            pub fn set_nodes(&mut self, nodes: usize) {
                match self { $(SystemSpec::$variant(config) => config.nodes = crate::plan::Bounded(nodes as u64)),* }
            }

            fn parse_rest<'de, A: serde::de::MapAccess<'de>>(kind: &str, rest: A) -> Result<SystemSpec, A::Error> {
                let rest = serde::de::value::MapAccessDeserializer::new(rest);
                match kind {
                    $($name => <$config>::deserialize(rest).map(SystemSpec::$variant),)*
                    other => Err(serde::de::Error::unknown_variant(other, Self::KINDS)),
                }
            }
        }
    };
}

adapters! {
    "reference" => Reference(crate::system::reference::ReferenceConfig),
    "etcd" => Etcd(crate::system::etcd::EtcdConfig),
    "iggy" => Iggy(crate::system::iggy::IggyConfig),
    "exec" => Exec(crate::system::exec::ExecConfig),
}

impl<'de> Deserialize<'de> for SystemSpec {
    /// `kind` comes first, then the rest of the map is parsed straight from the YAML as the adapter's own section,
    /// so every error inside it keeps its `file:line:column` (serde's buffered internally tagged enums lose them).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SystemVisitor;
        impl<'de> serde::de::Visitor<'de> for SystemVisitor {
            type Value = SystemSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(
                    f,
                    "a system section starting with `kind` ({})",
                    SystemSpec::KINDS.join(", ")
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<SystemSpec, A::Error> {
                match map.next_key::<String>()?.as_deref() {
                    Some("kind") => {
                        let kind: String = map.next_value()?;
                        SystemSpec::parse_rest(&kind, map)
                    }
                    other => Err(serde::de::Error::custom(format!(
                        "the system section must start with `kind` (one of {}), e.g. `system: {{kind: exec, nodes: 3, \
                         ...}}`; found {}",
                        SystemSpec::KINDS.join(", "),
                        other.map_or("an empty section".to_string(), |key| format!("`{key}` first"))
                    ))),
                }
            }
        }
        d.deserialize_map(SystemVisitor)
    }
}
