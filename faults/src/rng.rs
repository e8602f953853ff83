//! Seeded randomness split into independent streams per concern.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// An independent random stream for `concern` derived from the run seed: changing how one concern draws numbers
/// never reshuffles another's (workload, nemesis, disk ...).
pub fn stream(seed: u64, concern: &str) -> ChaCha8Rng {
    let concern_hash = xxhash_rust::xxh3::xxh3_64(concern.as_bytes());
    ChaCha8Rng::seed_from_u64(seed ^ concern_hash.rotate_left(17))
}
