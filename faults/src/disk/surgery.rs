//! The cuts, as pure functions on one file of a stopped node's data dir.
//!
//! Each confines the file to the data dir, acts, fsyncs what it changed (and the directory, for a delete), and
//! returns an exact [`SurgeryRecord`]: offset and length of the bytes it touched and xxh3 digests of those bytes before
//! and after. Random choices come from the caller's seeded stream so a seed replays the same cuts.

use super::spec::Region;
use super::{confine, xxh3_hex, SurgeryError, SurgeryRecord};
use rand::seq::index::sample;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Block size of a latent sector error (`zero-block`) and the alignment of a misdirected write.
pub const BLOCK_BYTES: u64 = 4096;
/// Upper bound on bits one `flip-bits` cut flips.
pub const FLIP_BITS_MAX: u32 = 4096;

/// A chunk of a file saved by [`snapshot_chunk`], to be written back later by [`restore_chunk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSnapshot {
    /// Canonical file path.
    pub file: PathBuf,
    /// Where the chunk was read.
    pub offset: u64,
    /// The saved bytes.
    pub bytes: Vec<u8>,
}

/// A disk's unit of atomic writes.
const SECTOR_BYTES: u64 = 512;

struct Target {
    path: PathBuf,
    file: File,
    size_bytes: u64,
    /// One past the last non-zero byte: where the written data ends. Less than `size_bytes` for a preallocated file
    /// (etcd's 64 MB WAL segments are mostly zeros): regions, tails and misdirected writes land in the data, not the
    /// zeros.
    ///
    /// Why the last non-zero byte and not an adapter's statement of each file's length: it needs no knowledge of the
    /// system's formats, and it is what the systems' own readers go by: a preallocating WAL (etcd, Iggy) reads
    /// records until it meets zeros, so bytes past the last non-zero one are never read, and a change there tests
    /// nothing. A file whose data happens to end in zero bytes looks a little shorter than it is: its cuts land a
    /// little earlier, still inside what a reader reads.
    extent_bytes: u64,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SurgeryError + '_ {
    move |source| SurgeryError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn open_target(data_dir: &Path, path: &Path, write: bool) -> Result<Target, SurgeryError> {
    let path = confine(data_dir, path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .open(&path)
        .map_err(io_err(&path))?;
    let metadata = file.metadata().map_err(io_err(&path))?;
    if !metadata.is_file() {
        return Err(SurgeryError::Refused(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let size_bytes = metadata.len();
    let extent_bytes = written_extent(&file, size_bytes).map_err(io_err(&path))?;
    Ok(Target {
        size_bytes,
        extent_bytes,
        path,
        file,
    })
}

/// One past the last non-zero byte of the file, scanning back from the end in 64 KiB steps: where its written data
/// ends (see `Target::extent_bytes` for why).
pub fn written_extent(file: &File, size_bytes: u64) -> std::io::Result<u64> {
    const STEP_BYTES: u64 = 64 * 1024;
    let mut end = size_bytes;
    let mut buffer = vec![0u8; STEP_BYTES as usize];
    while end > 0 {
        let start = end.saturating_sub(STEP_BYTES);
        let chunk = &mut buffer[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(last) = chunk.iter().rposition(|&b| b != 0) {
            return Ok(start + last as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl Target {
    fn read(&self, offset: u64, length: u64) -> Result<Vec<u8>, SurgeryError> {
        let mut bytes = vec![0u8; length as usize];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(io_err(&self.path))?;
        Ok(bytes)
    }

    fn write_synced(&self, offset: u64, bytes: &[u8]) -> Result<(), SurgeryError> {
        self.file.write_all_at(bytes, offset).map_err(io_err(&self.path))?;
        self.file.sync_all().map_err(io_err(&self.path))
    }

    /// The region's span within the written data.
    fn span(&self, region: &Region) -> Result<(u64, u64), SurgeryError> {
        region.span(self.extent_bytes).ok_or_else(|| SurgeryError::TooSmall {
            path: self.path.display().to_string(),
            size_bytes: self.extent_bytes,
        })
    }

    fn record(&self, op: &str, offset: u64, before: &[u8], after: &[u8], size_after_bytes: u64) -> SurgeryRecord {
        SurgeryRecord {
            op: op.to_string(),
            file: self.path.display().to_string(),
            offset,
            length: before.len().max(after.len()) as u64,
            before_xxh3: xxh3_hex(before),
            after_xxh3: xxh3_hex(after),
            size_before_bytes: self.size_bytes,
            size_after_bytes,
            extent_bytes: if self.extent_bytes < self.size_bytes {
                self.extent_bytes
            } else {
                0
            },
            bits: Vec::new(),
        }
    }
}

/// Cuts a random 1..=`max_cut_bytes` bytes off the end of the written data (a torn write at a crash). A plain file
/// is shortened. A preallocated one (zeros after its data) keeps its size and its data ends at the sector boundary
/// at or below the cut, the rest zeroed: a torn append into preallocated space loses whole sectors, since a disk
/// writes a 512-byte sector atomically (etcd tells a torn tail from corruption by exactly that: an all-zero sector
/// inside the last record). The record's offset is where the data now ends, its length the bytes removed,
/// `before_xxh3` their digest.
///
/// A torn tail never takes the whole file: the file's first bytes (its first sector, when preallocated) were written
/// when it was created, long before the append that tore, and a file with none of its data left is a lost file,
/// which `delete-file` is for. Rounding down to a sector used to erase a small preallocated WAL (under 512 bytes of
/// data, as etcd's is right after a wipe) whole. A file with too little data for that is refused (`TooSmall`).
pub fn truncate_tail(
    data_dir: &Path,
    path: &Path,
    max_cut_bytes: u64,
    rng: &mut ChaCha8Rng,
) -> Result<SurgeryRecord, SurgeryError> {
    let target = open_target(data_dir, path, true)?;
    let preallocated = target.extent_bytes < target.size_bytes;
    // What a torn tail leaves at least: the first sector of a preallocated file, one byte of a plain one.
    let kept_bytes_min = if preallocated { SECTOR_BYTES } else { 1 };
    if target.extent_bytes <= kept_bytes_min || max_cut_bytes == 0 {
        return Err(SurgeryError::TooSmall {
            path: target.path.display().to_string(),
            size_bytes: target.extent_bytes,
        });
    }
    let cut_bytes = rng.gen_range(1..=max_cut_bytes.min(target.extent_bytes - kept_bytes_min));
    let mut new_end = target.extent_bytes - cut_bytes;
    if preallocated {
        new_end -= new_end % SECTOR_BYTES;
    }
    let removed = target.read(new_end, target.extent_bytes - new_end)?;
    if preallocated {
        target.write_synced(new_end, &vec![0u8; removed.len()])?;
        Ok(target.record("truncate-tail", new_end, &removed, &[], target.size_bytes))
    } else {
        target.file.set_len(new_end).map_err(io_err(&target.path))?;
        target.file.sync_all().map_err(io_err(&target.path))?;
        Ok(target.record("truncate-tail", new_end, &removed, &[], new_end))
    }
}

/// Flips `count` distinct random bits in `region` of the file. The record spans the first to the last flipped byte
/// and lists every flipped bit (`byte * 8 + bit`).
pub fn flip_bits(
    data_dir: &Path,
    path: &Path,
    region: &Region,
    count: u32,
    rng: &mut ChaCha8Rng,
) -> Result<SurgeryRecord, SurgeryError> {
    let target = open_target(data_dir, path, true)?;
    let (start, end) = target.span(region)?;
    let span_bits = (end - start) * 8;
    if count == 0 || count > FLIP_BITS_MAX || u64::from(count) > span_bits {
        return Err(SurgeryError::Refused(format!(
            "cannot flip {count} bits in {} bytes of {} (1..={FLIP_BITS_MAX} bits, at most 8 per byte)",
            end - start,
            target.path.display()
        )));
    }
    let mut bits: Vec<u64> = sample(rng, span_bits as usize, count as usize)
        .into_iter()
        .map(|bit| start * 8 + bit as u64)
        .collect();
    bits.sort_unstable();
    let first = bits[0] / 8;
    let last = bits[bits.len() - 1] / 8;
    let before = target.read(first, last - first + 1)?;
    let mut after = before.clone();
    for bit in &bits {
        after[(bit / 8 - first) as usize] ^= 1 << (bit % 8);
    }
    target.write_synced(first, &after)?;
    let mut record = target.record("flip-bits", first, &before, &after, target.size_bytes);
    record.bits = bits;
    Ok(record)
}

/// Zeroes one 4 KiB-aligned block (clipped to the file's end) that overlaps `region`: a latent sector error.
pub fn zero_block(
    data_dir: &Path,
    path: &Path,
    region: &Region,
    rng: &mut ChaCha8Rng,
) -> Result<SurgeryRecord, SurgeryError> {
    let target = open_target(data_dir, path, true)?;
    let (start, end) = target.span(region)?;
    let block = rng.gen_range(start / BLOCK_BYTES..=(end - 1) / BLOCK_BYTES);
    let offset = block * BLOCK_BYTES;
    let length = BLOCK_BYTES.min(target.extent_bytes - offset);
    let before = target.read(offset, length)?;
    let after = vec![0u8; length as usize];
    target.write_synced(offset, &after)?;
    Ok(target.record("zero-block", offset, &before, &after, target.size_bytes))
}

/// Saves up to `length_bytes` bytes at a random offset in `region`, for a later [`restore_chunk`]. Changes nothing;
/// the record (op `snapshot-chunk`, equal digests) says what was saved.
pub fn snapshot_chunk(
    data_dir: &Path,
    path: &Path,
    region: &Region,
    length_bytes: u64,
    rng: &mut ChaCha8Rng,
) -> Result<(ChunkSnapshot, SurgeryRecord), SurgeryError> {
    let target = open_target(data_dir, path, false)?;
    let (start, end) = target.span(region)?;
    if length_bytes == 0 {
        return Err(SurgeryError::Refused("a chunk snapshot needs length_bytes >= 1".into()));
    }
    let offset = rng.gen_range(start..=end.saturating_sub(length_bytes).max(start));
    let length = length_bytes.min(target.extent_bytes - offset);
    let bytes = target.read(offset, length)?;
    let record = target.record("snapshot-chunk", offset, &bytes, &bytes, target.size_bytes);
    let snapshot = ChunkSnapshot {
        file: target.path.clone(),
        offset,
        bytes,
    };
    Ok((snapshot, record))
}

/// Writes a saved chunk back: at its own offset (`misdirect_to: None`, a lost write: whatever the node wrote there
/// since is undone) or at another offset of the same file (a misdirected write). The chunk must fit inside the
/// file's current size: surgery never grows a file.
pub fn restore_chunk(
    data_dir: &Path,
    snapshot: &ChunkSnapshot,
    misdirect_to: Option<u64>,
) -> Result<SurgeryRecord, SurgeryError> {
    let target = open_target(data_dir, &snapshot.file, true)?;
    let offset = misdirect_to.unwrap_or(snapshot.offset);
    let length = snapshot.bytes.len() as u64;
    if offset + length > target.size_bytes {
        return Err(SurgeryError::TooSmall {
            path: target.path.display().to_string(),
            size_bytes: target.size_bytes,
        });
    }
    let before = target.read(offset, length)?;
    target.write_synced(offset, &snapshot.bytes)?;
    let op = if misdirect_to.is_some() {
        "misdirect-chunk"
    } else {
        "restore-chunk"
    };
    Ok(target.record(op, offset, &before, &snapshot.bytes, target.size_bytes))
}

/// A block-aligned offset other than `snapshot.offset` where the chunk fits inside the file's written data (the
/// first `extent_bytes`, see [`written_extent`]), for a misdirected write; `None` if the data has no other such
/// place. Drawn over the whole size of a preallocated file, the chunk landed in zeros its system never reads (etcd's
/// 64 MB segment holding a few KiB), and the cut tested nothing.
pub fn misdirect_offset(snapshot: &ChunkSnapshot, extent_bytes: u64, rng: &mut ChaCha8Rng) -> Option<u64> {
    let length = snapshot.bytes.len() as u64;
    let blocks = extent_bytes.checked_sub(length)? / BLOCK_BYTES + 1;
    let own = (snapshot.offset.is_multiple_of(BLOCK_BYTES) && snapshot.offset / BLOCK_BYTES < blocks)
        .then_some(snapshot.offset / BLOCK_BYTES);
    let choices = blocks - u64::from(own.is_some());
    if choices == 0 {
        return None;
    }
    let mut block = rng.gen_range(0..choices);
    if own.is_some_and(|own| block >= own) {
        block += 1;
    }
    Some(block * BLOCK_BYTES)
}

/// Deletes the file and fsyncs its directory. The record covers the whole former content.
pub fn delete_file(data_dir: &Path, path: &Path) -> Result<SurgeryRecord, SurgeryError> {
    let target = open_target(data_dir, path, false)?;
    let before = target.read(0, target.size_bytes)?;
    std::fs::remove_file(&target.path).map_err(io_err(&target.path))?;
    if let Some(parent) = target.path.parent() {
        File::open(parent)
            .and_then(|dir| dir.sync_all())
            .map_err(io_err(parent))?;
    }
    Ok(target.record("delete-file", 0, &before, &[], 0))
}
