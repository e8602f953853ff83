//! `faultline-node`: faultline's reference system under test.
//!
//! A Viewstamped Replication (Revisited) replica with a hash-chained, checksummed on-disk WAL, serving a
//! key-value register store and append-only logs over HTTP/JSON. The binary (`src/main.rs`) is thin glue over:
//! - [`wal`]: entry format, boot scan (`verify`), head tracking and the journal;
//! - [`superblock`]: durable identity, VSR state and the epoch's members in two checksummed copies;
//! - [`config`]: member sets and the reconfiguration entry (the protocol is `replica::reconfiguration`);
//! - [`checkpoint`]: snapshots of the state machine, so the WAL stays bounded and a lagging replica catches up by
//!   state transfer;
//! - [`message`] and [`network`]: the framed, checksummed replica protocol over TCP;
//! - [`replica`]: the VSR core (normal operation, view change, repair, recovery);
//! - [`mutants`]: switchable, documented real bugs (off by default) for faultline's detection matrix;
//! - [`state_machine`] and [`api`]: what clients see.

pub mod api;
pub mod checkpoint;
pub mod checksum;
pub mod cli;
pub mod config;
pub mod message;
pub mod mutants;
pub mod network;
pub mod replica;
pub mod state_machine;
pub mod superblock;
pub mod wal;

/// The identity of the sources this node was built from (see build.rs): `faultline-node --version` prints it, and
/// the harness runs a `faultline-node` binary only when its identity is the one of the node compiled into it.
pub const SOURCE_ID: &str = env!("FAULTLINE_NODE_SOURCE");
