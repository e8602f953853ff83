//! When unsynced changes become durable without an fsync, as a real machine makes them.
//!
//! A kernel does not keep dirty data forever: its flusher writes back every inode whose pages have been dirty longer
//! than `vm.dirty_expire_centisecs` (3000: 30 s, checked every `dirty_writeback_centisecs`, 5 s), the whole inode at
//! once, and a journaling file system commits its running transaction of metadata (directory entries, sizes set by
//! truncate) every few seconds (ext4: `commit=5`; XFS pushes its log within `fs.xfs.xfssyncd_centisecs`, 30 s). So
//! files a database wrote at set-up survive a power cut an hour later, synced or not. A [`Writeback`] says after
//! which ages the fault filesystem does the same; [`Writeback::NEVER`] keeps POSIX's bare promise (only an fsync makes
//! anything durable), as LazyFS does.
//!
//! The model is exact for the kernel's rule, not for its timer: data dirtied at `t` is durable from `t + data_after`
//! (the kernel gets there between then and one flusher period later), a metadata transaction opened at `t` commits at
//! `t + metadata_after`, and a write to an inode written back starts a fresh dirty period, as in the kernel.

use crate::units::Millis;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Instant;

/// How old unsynced data and metadata must be to become durable on their own. Plans write it
/// `writeback: {data_after: 30s, metadata_after: 5s}` (`never` for either: only an fsync makes it durable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Writeback {
    /// A file's unsynced writes (and the size they grew it to) once its oldest is this old: the kernel's flusher
    /// writes the whole inode back.
    #[serde(default = "WritebackAge::never")]
    pub data_after: WritebackAge,
    /// Directory changes and truncations once the oldest not yet committed is this old: a journal's commit.
    #[serde(default = "WritebackAge::never")]
    pub metadata_after: WritebackAge,
}

impl Writeback {
    /// Nothing becomes durable without an fsync (POSIX's promise and no more).
    pub const NEVER: Writeback = Writeback {
        data_after: WritebackAge::Never,
        metadata_after: WritebackAge::Never,
    };

    /// Linux's defaults on ext4: data written back after 30 s (`vm.dirty_expire_centisecs = 3000`), the journal
    /// committed every 5 s (`commit=5`).
    pub const LINUX_EXT4: Writeback = Writeback {
        data_after: WritebackAge::After(Millis(30_000)),
        metadata_after: WritebackAge::After(Millis(5_000)),
    };
}

impl Default for Writeback {
    fn default() -> Self {
        Writeback::NEVER
    }
}

/// An age past which unsynced changes are durable, or `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritebackAge {
    /// Only an fsync makes them durable.
    Never,
    /// Durable once this old.
    After(Millis),
}

impl WritebackAge {
    /// `never` (a serde default).
    pub fn never() -> WritebackAge {
        WritebackAge::Never
    }

    /// Whether a change made at `since_ms` is durable at `now_ms`.
    pub fn expired(self, since_ms: u64, now_ms: u64) -> bool {
        match self {
            WritebackAge::Never => false,
            WritebackAge::After(age) => now_ms.saturating_sub(since_ms) >= age.0,
        }
    }

    /// Parses `never` or a duration (`30s`).
    pub fn parse(text: &str) -> Result<WritebackAge, String> {
        match text.trim() {
            "never" => Ok(WritebackAge::Never),
            duration => Millis::parse(duration)
                .map(WritebackAge::After)
                .map_err(|e| format!("{e}, or `never` (only an fsync makes it durable)")),
        }
    }
}

impl fmt::Display for WritebackAge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WritebackAge::Never => f.write_str("never"),
            WritebackAge::After(age) => age.fmt(f),
        }
    }
}

impl Serialize for WritebackAge {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WritebackAge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        WritebackAge::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Milliseconds since the filesystem was mounted: the ages above are measured on it. Tests move it forward by hand.
#[derive(Debug)]
pub(crate) struct Clock {
    epoch: Instant,
    advanced_ms: u64,
}

impl Clock {
    /// A clock that starts now.
    pub fn start() -> Clock {
        Clock {
            epoch: Instant::now(),
            advanced_ms: 0,
        }
    }

    /// Now, in ms since the start.
    pub fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + self.advanced_ms
    }

    /// Moves the clock forward (tests of the model, which must not sleep for 30 s).
    #[cfg(test)]
    pub fn advance(&mut self, ms: u64) {
        self.advanced_ms += ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_plan_ages_when_parsed_should_take_durations_and_never_and_name_mistakes() {
        assert_eq!(WritebackAge::parse("30s").unwrap(), WritebackAge::After(Millis(30_000)));
        assert_eq!(WritebackAge::parse("never").unwrap(), WritebackAge::Never);
        let err = WritebackAge::parse("soon").unwrap_err();
        assert!(err.contains("`never`"), "{err}");
        assert!(WritebackAge::After(Millis(5_000)).expired(1_000, 6_000));
        assert!(!WritebackAge::After(Millis(5_000)).expired(1_000, 5_999));
        assert!(!WritebackAge::Never.expired(0, u64::MAX));
    }
}
