//! faultline nemeses: the faults a run injects into the lab.
//!
//! - [`clock`]: clock faults (bump, strobe, skew) on one node's view of time, through libfaketime.
//! - [`process`]: kill -9 and restart, SIGSTOP/SIGCONT pauses, on roles (`primary`, `backup`, ...) or node sets, with a
//!   seeded schedule that composes overlapping faults (independent per-node crash/restart flaps plus targeted faults).
//! - [`network`]: partitions in Jepsen's shapes (any grudge, one-way included) and link faults (delay, rate, corrupt,
//!   reset, loss), through a userspace proxy mesh (no root) or network namespaces with nftables (root).
//! - [`disk`]: surgery on a stopped node's files; every cut is recorded exactly (file, offset, bytes before/after).
//! - [`fusefs`]: a FUSE fault filesystem over a node's data dir: power loss (drops unsynced writes and directory
//!   entries), torn writes, EIO, ENOSPC, stalls.
//! - [`io`]: windows of I/O faults (EIO, ENOSPC, stalls) on one node's fault filesystem.
//! - [`interpreter`]: the one timed loop of a fault phase: it merges the process, network and I/O schedules, starts
//!   and stops each fault at its time through its family ([`interpreter::TimedFault`]), and heals what is still
//!   active when the phase stops.
//!
//! A nemesis acts on the lab only through the small traits the harness implements ([`process::Lab`],
//! [`network::schedule::NetworkLab`], [`io::IoLab`]), and records every fault it starts or heals as a history event.

pub mod clock;
pub mod disk;
pub mod fusefs;
pub mod interpreter;
pub mod io;
pub mod network;
pub mod process;
pub mod rng;
pub mod trigger;
pub mod units;
