//! 128-bit checksums (xxh3-128) used by WAL entries, the superblock and network frames.

use xxhash_rust::xxh3::xxh3_128;

/// Returns the xxh3-128 checksum of `bytes`.
pub fn checksum(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// The checksum of the virtual op 0 of a cluster: op 1's `parent`.
///
/// Deriving it from the cluster id means an entry from another cluster never chains into this one.
pub fn root_checksum(cluster_id: u64) -> u128 {
    let mut seed = [0u8; 24];
    seed[..16].copy_from_slice(b"faultline-root\0\0");
    seed[16..].copy_from_slice(&cluster_id.to_le_bytes());
    checksum(&seed)
}

/// Formats a checksum as 32 lowercase hex digits.
pub fn hex(value: u128) -> String {
    format!("{value:032x}")
}
