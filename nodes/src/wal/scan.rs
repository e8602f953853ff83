//! The boot scan: verifies every entry of a WAL file and the parent chain by op number.
//!
//! Decision table:
//! - an incomplete or checksum-failing entry with no valid entry after it is a torn tail (truncate, warn);
//! - a checksum-failing entry followed by any valid entry is interior corruption (refuse);
//! - two present ops N and N+1 where N+1's parent is not N's checksum do not chain (refuse), wherever they sit
//!   in the file (repair appends out of order) and even if N+1 is the last entry;
//! - missing ops (gaps) are fine: the replica repairs them from its peers.

use std::collections::BTreeMap;
use std::fmt;

use crate::wal::entry::{Entry, EntryHeader, HeaderError, BODY_SIZE_MAX_BYTES, HEADER_SIZE_BYTES};
use crate::wal::head::Head;

/// A verified entry and where it sits in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedEntry {
    /// Byte offset of the entry's header in the file.
    pub offset_bytes: u64,
    /// The entry.
    pub entry: Entry,
}

/// An incomplete or checksum-failing last entry, to be truncated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Offset where the torn entry starts: the file is truncated to this length.
    pub offset_bytes: u64,
    /// What was wrong with it.
    pub reason: String,
}

/// The result of a successful scan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Valid entries, one per op, ordered by op.
    pub entries: Vec<ScannedEntry>,
    /// A torn tail, if any.
    pub torn_tail: Option<TornTail>,
}

/// What kind of damage made the scan refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// A header checksum failed with valid entries after it.
    InteriorHeader,
    /// A body checksum failed with data after the entry.
    InteriorBody,
    /// An entry of another cluster.
    WrongCluster,
    /// Two different entries claim the same op.
    DuplicateOp,
    /// An entry's parent is not the checksum of the entry at `op - 1`.
    DoesNotChain,
}

/// Why the scan refuses to boot; displays as the single stderr line the harness looks for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct BootRefusal {
    /// The WAL file.
    pub file: String,
    /// Byte offset of the offending entry.
    pub offset_bytes: u64,
    /// The op(s) involved, as text (e.g. `op 7` or `ops 6..7`), `op unknown` when the header is unreadable.
    pub ops: String,
    /// The checksum that was expected.
    pub expected: u128,
    /// The checksum that was found.
    pub actual: u128,
    /// The kind of damage.
    pub kind: RefusalKind,
}

impl fmt::Display for BootRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            RefusalKind::InteriorHeader => "interior header corruption (header checksum)",
            RefusalKind::InteriorBody => "interior body corruption (body checksum)",
            RefusalKind::WrongCluster => "entry of another cluster (cluster id)",
            RefusalKind::DuplicateOp => "two different entries for one op (checksum)",
            RefusalKind::DoesNotChain => "entry does not chain (parent)",
        };
        write!(
            f,
            "wal {} at offset {} ({}): {}: expected {:032x}, actual {:032x}; refusing to boot",
            self.file, self.offset_bytes, self.ops, what, self.expected, self.actual
        )
    }
}

/// Scans the bytes of one WAL file whose entries sit above `base` (op 0 and the cluster's root checksum until a
/// checkpoint moved it). Entries at or below the base are checksum-verified but not chain-checked or returned: a
/// compaction that a crash interrupted leaves them, and the checkpoint covers them. `file` only names the file in
/// messages.
pub fn scan(bytes: &[u8], cluster: u64, base: Head, file: &str) -> Result<ScanReport, BootRefusal> {
    let (entries, torn_tail) = scan_entries(bytes, cluster, file)?;
    let mut by_op = index_by_op(entries, file)?;
    by_op.retain(|&op, _| op > base.op);
    check_chain(&by_op, base, file)?;
    Ok(ScanReport {
        entries: by_op.into_values().collect(),
        torn_tail,
    })
}

/// Reads the entries of one WAL file by their header fields alone, as the `boot-skips-verification` mutant does:
/// no header or body checksum, cluster or chain check. Entries stop at the first header claiming an impossible
/// size (reported as a torn tail); op 0 and repeated ops are skipped (the first copy wins).
pub fn scan_unverified(bytes: &[u8]) -> ScanReport {
    let mut by_op: BTreeMap<u64, ScannedEntry> = BTreeMap::new();
    let mut offset = 0usize;
    let mut torn_tail = None;
    while offset < bytes.len() {
        let header = match EntryHeader::decode_unverified(&bytes[offset..]) {
            Ok(header) => header,
            Err(error) => {
                let reason = format!("{error}");
                torn_tail = Some(TornTail {
                    offset_bytes: offset as u64,
                    reason,
                });
                break;
            }
        };
        let end = offset + HEADER_SIZE_BYTES + header.size_bytes as usize;
        if header.size_bytes as usize > BODY_SIZE_MAX_BYTES || end > bytes.len() {
            let reason = format!("op {}: body of {} bytes does not fit", header.op, header.size_bytes);
            torn_tail = Some(TornTail {
                offset_bytes: offset as u64,
                reason,
            });
            break;
        }
        if header.op != 0 {
            let body = bytes[offset + HEADER_SIZE_BYTES..end].to_vec();
            by_op.entry(header.op).or_insert(ScannedEntry {
                offset_bytes: offset as u64,
                entry: Entry { header, body },
            });
        }
        offset = end;
    }
    ScanReport {
        entries: by_op.into_values().collect(),
        torn_tail,
    }
}

type Scanned = (Vec<ScannedEntry>, Option<TornTail>);

/// Walks the file front to back, decoding entries until the end or a torn tail.
fn scan_entries(bytes: &[u8], cluster: u64, file: &str) -> Result<Scanned, BootRefusal> {
    let mut entries = Vec::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let header = match EntryHeader::decode(rest) {
            Ok(header) => header,
            Err(HeaderError::Incomplete { available_bytes }) => {
                let reason = format!("incomplete header ({available_bytes} bytes)");
                return Ok((
                    entries,
                    Some(TornTail {
                        offset_bytes: offset as u64,
                        reason,
                    }),
                ));
            }
            Err(error) => {
                if let Some(next) = next_valid_header(bytes, offset + 1) {
                    let (expected, actual) = match error {
                        HeaderError::Checksum { expected, actual } => (expected, actual),
                        _ => (0, 0),
                    };
                    let ops = format!("op unknown, next valid entry at offset {next}");
                    return Err(refusal(
                        file,
                        offset,
                        ops,
                        expected,
                        actual,
                        RefusalKind::InteriorHeader,
                    ));
                }
                let reason = format!("{error}");
                return Ok((
                    entries,
                    Some(TornTail {
                        offset_bytes: offset as u64,
                        reason,
                    }),
                ));
            }
        };
        let end = offset + HEADER_SIZE_BYTES + header.size_bytes as usize;
        if end > bytes.len() {
            let reason = format!(
                "incomplete body of op {} ({} of {} bytes)",
                header.op,
                rest.len(),
                end - offset
            );
            return Ok((
                entries,
                Some(TornTail {
                    offset_bytes: offset as u64,
                    reason,
                }),
            ));
        }
        let entry = match Entry::decode(&bytes[offset..end]) {
            Ok(entry) => entry,
            Err(error) if end == bytes.len() => {
                let reason = format!("op {}: {error}", header.op);
                return Ok((
                    entries,
                    Some(TornTail {
                        offset_bytes: offset as u64,
                        reason,
                    }),
                ));
            }
            Err(_) => {
                let actual = crate::checksum::checksum(&bytes[offset + HEADER_SIZE_BYTES..end]);
                let ops = format!("op {}", header.op);
                let kind = RefusalKind::InteriorBody;
                return Err(refusal(file, offset, ops, header.checksum_body, actual, kind));
            }
        };
        if entry.header.cluster != cluster {
            let ops = format!("op {}", header.op);
            let (expected, actual) = (u128::from(cluster), u128::from(entry.header.cluster));
            return Err(refusal(file, offset, ops, expected, actual, RefusalKind::WrongCluster));
        }
        entries.push(ScannedEntry {
            offset_bytes: offset as u64,
            entry,
        });
        offset = end;
    }
    Ok((entries, None))
}

fn refusal(file: &str, offset: usize, ops: String, expected: u128, actual: u128, kind: RefusalKind) -> BootRefusal {
    BootRefusal {
        file: file.to_string(),
        offset_bytes: offset as u64,
        ops,
        expected,
        actual,
        kind,
    }
}

/// Finds the first offset at or after `start` holding a header whose checksum verifies.
fn next_valid_header(bytes: &[u8], start: usize) -> Option<usize> {
    let last = bytes.len().checked_sub(HEADER_SIZE_BYTES)?;
    (start..=last).find(|&at| EntryHeader::decode(&bytes[at..]).is_ok())
}

fn index_by_op(entries: Vec<ScannedEntry>, file: &str) -> Result<BTreeMap<u64, ScannedEntry>, BootRefusal> {
    let mut by_op: BTreeMap<u64, ScannedEntry> = BTreeMap::new();
    for scanned in entries {
        let op = scanned.entry.header.op;
        if let Some(existing) = by_op.get(&op) {
            if existing.entry.header.checksum == scanned.entry.header.checksum {
                continue;
            }
            return Err(BootRefusal {
                file: file.to_string(),
                offset_bytes: scanned.offset_bytes,
                ops: format!("op {op} (also at offset {})", existing.offset_bytes),
                expected: existing.entry.header.checksum,
                actual: scanned.entry.header.checksum,
                kind: RefusalKind::DuplicateOp,
            });
        }
        by_op.insert(op, scanned);
    }
    Ok(by_op)
}

fn check_chain(by_op: &BTreeMap<u64, ScannedEntry>, base: Head, file: &str) -> Result<(), BootRefusal> {
    for (&op, scanned) in by_op {
        let parent = scanned.entry.header.parent;
        let (expected, previous) = if op == base.op + 1 {
            let what = if base.op == 0 {
                "the root".to_string()
            } else {
                format!("the checkpoint's op {}", base.op)
            };
            (base.checksum, what)
        } else if let Some(previous) = by_op.get(&(op - 1)) {
            (
                previous.entry.header.checksum,
                format!("op {} at offset {}", op - 1, previous.offset_bytes),
            )
        } else {
            continue;
        };
        if parent != expected {
            return Err(BootRefusal {
                file: file.to_string(),
                offset_bytes: scanned.offset_bytes,
                ops: format!("op {op} does not chain to {previous}"),
                expected,
                actual: parent,
                kind: RefusalKind::DoesNotChain,
            });
        }
    }
    Ok(())
}
