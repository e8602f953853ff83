//! The plan's words for disk surgery, and the [`Surgeon`] that carries them out with seeded choices.
//!
//! ```yaml
//! - {op: truncate-tail, files: "wal*", max_bytes: 200}
//! - {op: flip-bits, files: "member/wal/*.wal", pick: last, region: interior, bits: 3}
//! - {op: zero-block, files: "wal*", region: "4096..65536"}
//! - {op: snapshot-chunk, files: "wal*", region: tail, length_bytes: 4096, name: before-writes}
//! - {op: restore-chunk, name: before-writes}             # later: a lost write
//! - {op: restore-chunk, name: before-writes, misdirect: true}
//! - {op: delete-file, files: "member/snap/*.snap", pick: last}
//! ```

use super::select::{pick_file, Pick};
use super::surgery::{self, ChunkSnapshot};
use super::{SurgeryError, SurgeryRecord};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Upper bound on chunk snapshots a surgeon holds at once.
const SNAPSHOTS_MAX: usize = 64;
/// Upper bound on one chunk snapshot.
pub const SNAPSHOT_BYTES_MAX: u64 = 1 << 20;

/// Where in a file a cut lands. Written in plans as `tail`, `interior`, `any` or a byte range `START..END` (end
/// exclusive, clipped to the file's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Region {
    /// The last eighth of the file, at most 4 KiB and at least one byte: where a crash tears a write.
    Tail,
    /// The middle, an eighth away from either end: a correct log cannot mistake damage here for a torn tail.
    #[default]
    Interior,
    /// Anywhere in the file.
    Any,
    /// Bytes `start..end`.
    Bytes {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
}

impl Region {
    /// The non-empty byte span `(start, end)` this region covers in a file of `size_bytes`, if any.
    pub fn span(&self, size_bytes: u64) -> Option<(u64, u64)> {
        let (start, end) = match *self {
            Region::Tail => {
                let length = (size_bytes / 8).clamp(1, 4096);
                (size_bytes.saturating_sub(length), size_bytes)
            }
            Region::Interior => (size_bytes / 8, size_bytes - size_bytes / 8),
            Region::Any => (0, size_bytes),
            Region::Bytes { start, end } => (start, end.min(size_bytes)),
        };
        (start < end).then_some((start, end))
    }

    /// Parses `tail`, `interior`, `any` or `START..END`.
    pub fn parse(text: &str) -> Result<Region, String> {
        match text.trim() {
            "tail" => Ok(Region::Tail),
            "interior" => Ok(Region::Interior),
            "any" => Ok(Region::Any),
            other => {
                let bad = || format!("region `{other}`: write `tail`, `interior`, `any` or a byte range `START..END`");
                let (start, end) = other.split_once("..").ok_or_else(bad)?;
                let start: u64 = start.trim().parse().map_err(|_| bad())?;
                let end: u64 = end.trim().parse().map_err(|_| bad())?;
                if start >= end {
                    return Err(format!("region `{other}` is empty: START must be < END"));
                }
                Ok(Region::Bytes { start, end })
            }
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Region::Tail => write!(f, "tail"),
            Region::Interior => write!(f, "interior"),
            Region::Any => write!(f, "any"),
            Region::Bytes { start, end } => write!(f, "{start}..{end}"),
        }
    }
}

impl Serialize for Region {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Region {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Region::parse(&text).map_err(serde::de::Error::custom)
    }
}

fn one() -> u32 {
    1
}

/// One disk-surgery step of a plan, on a stopped node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SurgerySpec {
    /// Cut 1..=`max_bytes` bytes off the end of a file (torn write).
    TruncateTail {
        /// Glob relative to the data dir.
        files: String,
        /// Which match.
        #[serde(default)]
        pick: Pick,
        /// Longest cut.
        max_bytes: u64,
    },
    /// Flip `bits` random bits in a region.
    FlipBits {
        /// Glob relative to the data dir.
        files: String,
        /// Which match.
        #[serde(default)]
        pick: Pick,
        /// Where.
        #[serde(default)]
        region: Region,
        /// How many bits (default 1).
        #[serde(default = "one")]
        bits: u32,
    },
    /// Zero one aligned 4 KiB block overlapping a region (latent sector error).
    ZeroBlock {
        /// Glob relative to the data dir.
        files: String,
        /// Which match.
        #[serde(default)]
        pick: Pick,
        /// Where.
        #[serde(default)]
        region: Region,
    },
    /// Save a chunk under `name` for a later `restore-chunk`.
    SnapshotChunk {
        /// Glob relative to the data dir.
        files: String,
        /// Which match.
        #[serde(default)]
        pick: Pick,
        /// Where.
        #[serde(default)]
        region: Region,
        /// Chunk length (at most 1 MiB).
        length_bytes: u64,
        /// Name the restore refers to.
        name: String,
    },
    /// Write a saved chunk back: at its place (lost write) or, with `misdirect`, at another aligned offset.
    RestoreChunk {
        /// The snapshot's name.
        name: String,
        /// Write it somewhere else in the same file.
        #[serde(default)]
        misdirect: bool,
    },
    /// Delete a file (e.g. the newest snapshot).
    DeleteFile {
        /// Glob relative to the data dir.
        files: String,
        /// Which match.
        #[serde(default)]
        pick: Pick,
    },
}

impl SurgerySpec {
    /// Checks what can be checked before a run (globs, bounds), with a message naming the problem.
    pub fn validate(&self) -> Result<(), SurgeryError> {
        let refuse = |reason: String| Err(SurgeryError::Refused(reason));
        match self {
            SurgerySpec::TruncateTail { max_bytes: 0, .. } => refuse("truncate-tail needs max_bytes >= 1".into()),
            SurgerySpec::FlipBits { bits, .. } if *bits == 0 || *bits > surgery::FLIP_BITS_MAX => refuse(format!(
                "flip-bits needs 1..={} bits, got {bits}",
                surgery::FLIP_BITS_MAX
            )),
            SurgerySpec::SnapshotChunk { length_bytes, .. }
                if *length_bytes == 0 || *length_bytes > SNAPSHOT_BYTES_MAX =>
            {
                refuse(format!(
                    "snapshot-chunk needs 1..={SNAPSHOT_BYTES_MAX} length_bytes, got {length_bytes}"
                ))
            }
            _ => match self.files() {
                Some(files) => super::select::compile(files).map(|_| ()),
                None => Ok(()),
            },
        }
    }

    /// The file glob, to change (a file class resolved to its glob).
    pub fn files_mut(&mut self) -> Option<&mut String> {
        match self {
            SurgerySpec::TruncateTail { files, .. }
            | SurgerySpec::FlipBits { files, .. }
            | SurgerySpec::ZeroBlock { files, .. }
            | SurgerySpec::SnapshotChunk { files, .. }
            | SurgerySpec::DeleteFile { files, .. } => Some(files),
            SurgerySpec::RestoreChunk { .. } => None,
        }
    }

    /// The file glob, for the steps that select a file.
    pub fn files(&self) -> Option<&str> {
        match self {
            SurgerySpec::TruncateTail { files, .. }
            | SurgerySpec::FlipBits { files, .. }
            | SurgerySpec::ZeroBlock { files, .. }
            | SurgerySpec::SnapshotChunk { files, .. }
            | SurgerySpec::DeleteFile { files, .. } => Some(files),
            SurgerySpec::RestoreChunk { .. } => None,
        }
    }
}

/// Carries out [`SurgerySpec`] steps on one node's data dir with a seeded stream, holding chunk snapshots between a
/// `snapshot-chunk` and its `restore-chunk`. One surgeon per node, so snapshot names are per node.
#[derive(Debug)]
pub struct Surgeon {
    rng: ChaCha8Rng,
    snapshots: BTreeMap<String, ChunkSnapshot>,
}

impl Surgeon {
    /// A surgeon whose choices come from the run seed's `disk/<node>` stream.
    pub fn new(seed: u64, node: &str) -> Surgeon {
        Surgeon {
            rng: crate::rng::stream(seed, &format!("disk/{node}")),
            snapshots: BTreeMap::new(),
        }
    }

    /// Applies one step to `data_dir` (the node must be stopped) and returns its record for the history.
    pub fn apply(&mut self, data_dir: &Path, spec: &SurgerySpec) -> Result<SurgeryRecord, SurgeryError> {
        spec.validate()?;
        let rng = &mut self.rng;
        match spec {
            SurgerySpec::TruncateTail { files, pick, max_bytes } => {
                let file = pick_file(data_dir, files, *pick, rng)?;
                surgery::truncate_tail(data_dir, &file, *max_bytes, rng)
            }
            SurgerySpec::FlipBits {
                files,
                pick,
                region,
                bits,
            } => {
                let file = pick_file(data_dir, files, *pick, rng)?;
                surgery::flip_bits(data_dir, &file, region, *bits, rng)
            }
            SurgerySpec::ZeroBlock { files, pick, region } => {
                let file = pick_file(data_dir, files, *pick, rng)?;
                surgery::zero_block(data_dir, &file, region, rng)
            }
            SurgerySpec::SnapshotChunk {
                files,
                pick,
                region,
                length_bytes,
                name,
            } => {
                if self.snapshots.len() >= SNAPSHOTS_MAX && !self.snapshots.contains_key(name) {
                    return Err(SurgeryError::Refused(format!(
                        "already holding {SNAPSHOTS_MAX} chunk snapshots; restore some first"
                    )));
                }
                let file = pick_file(data_dir, files, *pick, rng)?;
                let (snapshot, record) = surgery::snapshot_chunk(data_dir, &file, region, *length_bytes, rng)?;
                self.snapshots.insert(name.clone(), snapshot);
                Ok(record)
            }
            SurgerySpec::RestoreChunk { name, misdirect } => {
                let snapshot = self.snapshots.remove(name).ok_or_else(|| {
                    SurgeryError::Refused(format!(
                        "no chunk snapshot named `{name}` (snapshot-chunk must come first)"
                    ))
                })?;
                let target = if *misdirect {
                    let io = |source| SurgeryError::Io {
                        path: snapshot.file.display().to_string(),
                        source,
                    };
                    let file = std::fs::File::open(&snapshot.file).map_err(io)?;
                    let size_bytes = file.metadata().map_err(io)?.len();
                    let extent_bytes = surgery::written_extent(&file, size_bytes).map_err(io)?;
                    let offset = surgery::misdirect_offset(&snapshot, extent_bytes, rng).ok_or_else(|| {
                        SurgeryError::Refused(format!(
                            "{} has no other aligned place for a {}-byte chunk in its {extent_bytes} bytes of data",
                            snapshot.file.display(),
                            snapshot.bytes.len()
                        ))
                    })?;
                    Some(offset)
                } else {
                    None
                };
                surgery::restore_chunk(data_dir, &snapshot, target)
            }
            SurgerySpec::DeleteFile { files, pick } => {
                let file = pick_file(data_dir, files, *pick, rng)?;
                surgery::delete_file(data_dir, &file)
            }
        }
    }
}
