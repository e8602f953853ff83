//! The seed space of a campaign: seed `i` derives from the campaign seed alone, and `--shard I/N` takes the indices
//! `i` with `i mod N = I - 1`. So every machine of a sharded campaign computes the same seeds, shards never overlap,
//! the union of all shards is the unsharded campaign, and a rerun or a resumed campaign runs exactly the same seeds.

use std::fmt;
use std::str::FromStr;

/// Derived seeds stay below 2^32: short enough to read and type in a repro command, and the space run seeds already
/// use (a random run seed is a u32 too). Two indices may, rarely, derive the same seed; both still run.
const SEED_BITS: u32 = 32;

/// The run seed at `index` of a campaign seeded with `campaign_seed` (splitmix64 of the pair).
pub fn seed_at(campaign_seed: u64, index: u64) -> u64 {
    let mixed = splitmix64(campaign_seed ^ splitmix64(index.wrapping_add(0x5eed)));
    mixed >> (64 - SEED_BITS)
}

/// splitmix64's finalizer: a bijective 64-bit mix with good avalanche.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One shard of N: `I/N`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// 1..=count.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole space.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Whether seed index `i` belongs to this shard.
    pub fn owns(&self, i: u64) -> bool {
        i % self.count == self.index - 1
    }

    /// The seed indices of this shard below `limit` (or without end), in order.
    pub fn indices(self, limit: Option<u64>) -> impl Iterator<Item = u64> {
        let start = self.index - 1;
        let step = self.count as usize;
        (start..limit.unwrap_or(u64::MAX)).step_by(step)
    }

    /// True for `1/1`.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not a shard: write I/N with 1 <= I <= N, e.g. `--shard 2/8`");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn given_a_campaign_seed_when_deriving_twice_should_give_the_same_seeds_and_another_seed_other_seeds() {
        let a: Vec<u64> = (0..50).map(|i| seed_at(42, i)).collect();
        let b: Vec<u64> = (0..50).map(|i| seed_at(42, i)).collect();
        let c: Vec<u64> = (0..50).map(|i| seed_at(43, i)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|&s| s < 1 << 32), "seeds stay typeable");
        assert_eq!(
            a.iter().collect::<BTreeSet<_>>().len(),
            50,
            "no collisions among the first 50"
        );
    }

    #[test]
    fn given_n_shards_when_split_should_cover_the_unsharded_indices_exactly_once() {
        for count in 1..=7u64 {
            for limit in [0u64, 1, 6, 13, 100] {
                let mut covered = Vec::new();
                for index in 1..=count {
                    let shard = Shard { index, count };
                    for i in shard.indices(Some(limit)) {
                        assert!(shard.owns(i));
                        covered.push(i);
                    }
                }
                covered.sort_unstable();
                let whole: Vec<u64> = Shard::ALL.indices(Some(limit)).collect();
                assert_eq!(covered, whole, "{count} shards of {limit} seeds: no gap, no overlap");
            }
        }
        let unbounded: Vec<u64> = Shard { index: 2, count: 3 }.indices(None).take(3).collect();
        assert_eq!(
            unbounded,
            vec![1, 4, 7],
            "a budget campaign walks its shard without end"
        );
    }

    #[test]
    fn given_shard_texts_when_parsed_should_accept_i_of_n_and_refuse_the_rest() {
        assert_eq!("2/8".parse::<Shard>(), Ok(Shard { index: 2, count: 8 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 1, count: 2 }.to_string(), "1/2");
    }
}
