//! What a `stop` or `corrupt` fault carries beyond its kind: the grace of a graceful stop, how `corrupt` takes its
//! targets down, and its cuts.
//!
//! ```yaml
//! nemesis:
//!   process:
//!     faults:
//!       - {kind: stop, targets: one, duration: 1s..3s, grace: 5s}
//!       - kind: corrupt                      # a minority's files damaged while the majority serves
//!         targets: minority
//!         duration: 500ms..2s
//!         stop: graceful                     # or kill (default), power-loss
//!         cuts:
//!           - {op: truncate-tail, files: wal, max_bytes: 4096}
//!           - {op: flip-bits, files: wal, region: interior, bits: 2}
//! ```
//!
//! A cut's `files:` names a file class the system's adapter declares (the reference node: `wal`, `snapshot`,
//! `superblock`; etcd: `wal`, `snapshot`, `data`; exec: its plan's `system.files`), or is a glob relative to the data
//! dir (anything with `*`, `?`, `[`, `/` or `.` in it). A `snapshot-chunk` taken at one fault can be restored by a
//! later fault on the same node: a disk that silently returns an old version of a block.

use crate::clock::{ClockShift, ClockSpec};
use crate::disk::spec::SurgerySpec;
use crate::units::Millis;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a graceful stop waits for the node to exit before SIGKILL, when the plan does not say.
pub const DEFAULT_GRACE: Millis = Millis(10_000);

/// How a fault takes a node down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopHow {
    /// SIGKILL.
    Kill,
    /// SIGKILL, then what was not fsynced is lost (the fault filesystem).
    PowerLoss,
    /// Asked to stop (SIGTERM or the adapter's stop command), SIGKILL after the grace.
    Graceful,
}

/// What a scheduled `stop` or `corrupt` fault carries (empty for the other kinds).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultDetail {
    /// The grace of a graceful stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace: Option<Millis>,
    /// How `corrupt` takes its targets down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopHow>,
    /// `corrupt`'s cuts, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<SurgerySpec>,
    /// A `clock` fault's change, drawn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockShift>,
    /// A `membership` fault's change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<super::MembershipChange>,
}

impl FaultDetail {
    /// The detail of a plan's fault.
    pub fn new(grace: Option<Millis>, stop: Option<StopHow>, cuts: &[SurgerySpec]) -> FaultDetail {
        FaultDetail {
            grace,
            stop,
            cuts: cuts.to_vec(),
            clock: None,
            change: None,
        }
    }

    /// The detail with a `clock` fault's change drawn from `spec` (other kinds draw nothing, so adding clock faults
    /// to a plan never reshuffles the rest of a schedule that has none).
    pub fn drawn(mut self, kind: super::ProcessFault, spec: &ClockSpec, rng: &mut impl rand::Rng) -> FaultDetail {
        if kind == super::ProcessFault::Clock {
            self.clock = spec.draw(rng);
        }
        self
    }

    /// Whether it carries nothing (every kind but `stop`, `corrupt` and `clock`).
    pub fn is_empty(&self) -> bool {
        *self == FaultDetail::default()
    }

    /// The grace of a graceful stop ([`DEFAULT_GRACE`] when the plan does not say).
    pub fn grace_duration(&self) -> Duration {
        self.grace.unwrap_or(DEFAULT_GRACE).duration()
    }

    /// Checks the detail against the fault's kind, with a message that names the field and what to write instead.
    pub fn validate(&self, kind: super::ProcessFault) -> Result<(), String> {
        use super::ProcessFault;
        match (kind, self.change) {
            (ProcessFault::Membership, None) => {
                return Err("`kind: membership` needs a `change`: `add`, `remove` or `replace`".into())
            }
            (ProcessFault::Membership, Some(_)) => {}
            (_, Some(_)) => {
                return Err(format!(
                    "`change` belongs to `kind: membership`, not `kind: {}`",
                    kind_name(kind)
                ))
            }
            (_, None) => {}
        }
        let graceful = kind == ProcessFault::Stop || self.stop == Some(StopHow::Graceful);
        match self.grace {
            Some(grace) if grace.0 == 0 => return Err("grace must be > 0 (e.g. `grace: 5s`)".into()),
            Some(_) if !graceful => {
                return Err(format!(
                    "`grace` is for graceful stops: `kind: stop`, or `kind: corrupt` with `stop: graceful`, not \
                     `kind: {}`",
                    kind_name(kind)
                ))
            }
            _ => {}
        }
        if kind != ProcessFault::Corrupt {
            if self.stop.is_some() {
                return Err(format!(
                    "`stop` says how `kind: corrupt` takes its targets down; `kind: {}` has its own way",
                    kind_name(kind)
                ));
            }
            if !self.cuts.is_empty() {
                return Err(format!(
                    "`cuts` belong to `kind: corrupt`, not `kind: {}`",
                    kind_name(kind)
                ));
            }
            return Ok(());
        }
        if self.cuts.is_empty() {
            return Err(
                "`kind: corrupt` needs `cuts`, e.g. `cuts: [{op: truncate-tail, files: wal, max_bytes: 4096}]`".into(),
            );
        }
        for (index, cut) in self.cuts.iter().enumerate() {
            cut.validate().map_err(|e| format!("cuts[{index}]: {e}"))?;
        }
        Ok(())
    }
}

/// A fault kind as plans write it.
pub fn kind_name(kind: super::ProcessFault) -> &'static str {
    use super::ProcessFault;
    match kind {
        ProcessFault::Kill => "kill",
        ProcessFault::Pause => "pause",
        ProcessFault::PowerLoss => "power-loss",
        ProcessFault::Stop => "stop",
        ProcessFault::Corrupt => "corrupt",
        ProcessFault::Clock => "clock",
        ProcessFault::Membership => "membership",
    }
}

/// Whether a cut's `files:` names a file class rather than a glob: a bare word (no `*`, `?`, `[`, `/` or `.`).
pub fn is_file_class(files: &str) -> bool {
    !files.is_empty() && !files.contains(['*', '?', '[', '/', '.'])
}
