//! The long-fork workload's ops, as Jepsen's generator makes them: a worker inserts a fresh key (`[["w", k, 1]]`),
//! then reads the group of keys it belongs to (`group_size` consecutive keys, in a shuffled order), hoping to see
//! its insert before the others have; a worker with nothing of its own to read reads the group of another recent
//! insert, or inserts.

use super::PlannedOp;
use faultline_workloads::checker::TXN_F;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// Recent inserts remembered for other workers to read.
const RECENT_MAX: usize = 64;

/// The long-fork generator's state.
pub struct LongFork {
    group_size: u64,
    next_key: u64,
    /// Each process's insert not yet read back.
    pending: HashMap<u64, u64>,
    recent: VecDeque<u64>,
}

/// The name of key number `n`.
pub fn key_name(n: u64) -> String {
    format!("lf{n}")
}

impl LongFork {
    /// A generator of groups of `group_size` keys.
    pub fn new(group_size: u64) -> LongFork {
        LongFork {
            group_size,
            next_key: 0,
            pending: HashMap::new(),
            recent: VecDeque::new(),
        }
    }

    /// The read of the group of key `n`, in a shuffled order.
    fn group_read(&self, n: u64, rng: &mut ChaCha8Rng) -> PlannedOp {
        let first = n - n % self.group_size;
        let mut keys: Vec<u64> = (first..first + self.group_size).collect();
        keys.shuffle(rng);
        PlannedOp {
            f: TXN_F,
            key: String::new(),
            value: Value::Array(keys.into_iter().map(|k| json!(["r", key_name(k), null])).collect()),
        }
    }

    /// The next op of `process`: a read of its own pending insert's group; else, when `read` (the mix said so) and
    /// there is a recent insert, a read of its group; else an insert of a fresh key.
    pub fn next_op(&mut self, process: u64, read: bool, rng: &mut ChaCha8Rng) -> PlannedOp {
        if let Some(n) = self.pending.remove(&process) {
            return self.group_read(n, rng);
        }
        if read && !self.recent.is_empty() {
            let n = self.recent[rng.gen_range(0..self.recent.len())];
            return self.group_read(n, rng);
        }
        let n = self.next_key;
        self.next_key += 1;
        self.pending.insert(process, n);
        self.recent.push_back(n);
        if self.recent.len() > RECENT_MAX {
            self.recent.pop_front();
        }
        PlannedOp {
            f: TXN_F,
            key: String::new(),
            value: json!([["w", key_name(n), 1]]),
        }
    }

    /// Reads of the last `groups_max` groups with an insert, for the final phase.
    pub fn final_reads(&self, groups_max: u64, rng: &mut ChaCha8Rng) -> Vec<PlannedOp> {
        let groups = self.next_key.div_ceil(self.group_size);
        (groups.saturating_sub(groups_max)..groups)
            .map(|g| self.group_read(g * self.group_size, rng))
            .collect()
    }
}
