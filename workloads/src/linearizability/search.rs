//! The linearizability search for one partition (one key): Wing & Gong's algorithm with Lowe's memoization.
//!
//! References: J. M. Wing and C. Gong, "Testing and Verifying Concurrent Objects" (JPDC 1993); G. Lowe, "Testing for
//! Linearizability" (Concurrency and Computation 2017), which adds the cache below; A. Horn and D. Kroening, "Faster
//! Linearizability Checking via P-Compositionality" (FORTE 2015), which the caller applies by checking keys apart;
//! Porcupine (A. Athalye), whose structure this follows.
//!
//! **The search.** Every operation has a call entry and, unless its outcome is unknown, a return entry; all entries
//! sit in one doubly linked list in history order. Scanning from the head, a call entry names an operation that may
//! be linearized now (it was invoked before anything still pending returned). The search tries it: if the model
//! accepts it, the operation is *lifted* (both entries unlinked, in O(1)), pushed on a stack with the state before
//! it, and the scan restarts at the head. Reaching a return entry means the operation that returned there was not
//! linearized before its response, so the last choice was wrong: pop it, relink its entries, restore the state and
//! try the next call entry after it. An empty stack at that point means no linearization exists.
//!
//! **Unknown outcomes (`info`).** Such an operation's return is at +infinity: it has no return entry, so it never
//! forces a backtrack, and the search succeeds as soon as every operation *with* a return has been linearized. Info
//! operations still in the list at that point are "never took effect" (equivalently: took effect at the end, which a
//! model must accept for an unknown outcome).
//!
//! **Pruning (Lowe).** Two search paths that have linearized the same *set* of operations and reached the same model
//! state have the same future. Before lifting, the search looks up `(linearized set, state)` in a cache and skips the
//! operation if that pair was already explored; this turns the exponential search into one bounded by the number of
//! distinct (set, state) pairs, which is small on real histories.
//!
//! **Making the cache cheap.**
//! - The linearized set is a bitset hashed incrementally (Zobrist: the XOR of one random word per set bit), so a
//!   lookup costs O(1) hashing, not O(n).
//! - Bits are ordered finite operations first (by call), then info operations. In the finite part, every word below
//!   the first unlinearized operation is all ones and every word past the highest linearized one is zero, so a cache
//!   entry stores only the words in between (bounded by the concurrency, not the history length) plus the info words.
//! - States are the models' compact values (interned ids, content-hashed strings), compared exactly on hash matches.
//!
//! **Bounds.** Every 1024 steps the search checks the wall-clock deadline, the shared memory budget (the bytes held by
//! all searches' caches) and a shared stop flag (another search outgrew the budget, so every search stops); any of
//! them ends the search with [`Outcome::Stopped`] instead of running away. A key found non-linearizable stops
//! nobody: a developer needs to know whether one key went wrong or twenty.

use super::StopReason;
use crate::models::{FxHasher, Model};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// One operation of a partition: the model's op, and when it was called and returned (history positions).
#[derive(Debug)]
pub(crate) struct SearchOp<O> {
    /// The model's operation.
    pub op: O,
    /// Position of the invocation in the history.
    pub call: u64,
    /// Position of the completion, or `None` when the outcome is unknown (returns at +infinity).
    pub ret: Option<u64>,
}

/// Limits shared by all partitions' searches.
pub(crate) struct Limits<'a> {
    /// Wall-clock deadline for the whole check.
    pub deadline: Instant,
    /// Cache bytes all searches together may hold.
    pub memory_budget_bytes: u64,
    /// Cache bytes all searches together hold now.
    pub memory_used_bytes: &'a AtomicU64,
    /// Set when the searches together outgrew the memory budget: every search stops.
    pub stop: &'a AtomicBool,
}

/// How one partition's search ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A linearization exists.
    Linearizable,
    /// None exists; `longest` is the longest partial linearization found (indices into the partition's ops).
    Illegal { longest: Vec<u32> },
    /// The search was stopped before an answer.
    Stopped(StopReason),
}

/// Counters for one search, for results and benchmarks.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SearchStats {
    /// Distinct (linearized set, state) pairs cached.
    pub cache_entries: u64,
}

const HEAD: u32 = 0;
const NONE: u32 = u32::MAX;
/// A power of two: the limits are checked when the step count is a multiple of it.
const CHECK_EVERY_STEPS: u64 = 1024;

fn zobrist(bit: usize) -> u64 {
    // splitmix64: a fixed pseudo-random word per bit index.
    let mut z = (bit as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hash_state<S: Hash>(state: &S) -> u64 {
    let mut h = FxHasher::default();
    state.hash(&mut h);
    h.finish().wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The set of linearized operations, with the bookkeeping that keeps hashing and cache entries small.
struct Linearized {
    words: Vec<u64>,
    /// Words `[0, finite_words)` hold finite operations; the rest hold info operations.
    finite_words: usize,
    /// Words `[0, prefix)` are all ones.
    prefix: usize,
    /// Finite words `[end, finite_words)` are all zero.
    end: usize,
    hash: u64,
    keys: Vec<u64>,
}

impl Linearized {
    fn new(finite: usize, info: usize) -> Self {
        let finite_words = finite.div_ceil(64);
        let total_bits = finite_words * 64 + info;
        Linearized {
            words: vec![0; finite_words + info.div_ceil(64)],
            finite_words,
            prefix: 0,
            end: 0,
            hash: 0,
            keys: (0..total_bits).map(zobrist).collect(),
        }
    }

    fn set(&mut self, bit: usize) {
        let w = bit / 64;
        self.words[w] |= 1 << (bit % 64);
        self.hash ^= self.keys[bit];
        if w < self.finite_words {
            self.end = self.end.max(w + 1);
            while self.prefix < self.finite_words && self.words[self.prefix] == u64::MAX {
                self.prefix += 1;
            }
        }
    }

    fn clear(&mut self, bit: usize) {
        let w = bit / 64;
        self.words[w] &= !(1 << (bit % 64));
        self.hash ^= self.keys[bit];
        if w < self.finite_words {
            self.prefix = self.prefix.min(w);
            while self.end > 0 && self.words[self.end - 1] == 0 {
                self.end -= 1;
            }
        }
    }

    fn window(&self) -> &[u64] {
        &self.words[self.prefix..self.end.max(self.prefix)]
    }

    fn info(&self) -> &[u64] {
        &self.words[self.finite_words..]
    }
}

struct CacheEntry<S> {
    hash: u64,
    arena_start: usize,
    prefix: u32,
    window_len: u32,
    state: S,
}

/// Open-addressing hash set of (linearized set, state) pairs; set encodings live in one arena.
struct Cache<S> {
    /// 0 for empty, else `(low 32 bits of the hash) << 32 | (entry index + 1)`: a probe rejects most non-matching
    /// slots without touching the entry (one memory access saved per probe).
    slots: Vec<u64>,
    entries: Vec<CacheEntry<S>>,
    arena: Vec<u64>,
}

impl<S: Eq> Cache<S> {
    fn new() -> Self {
        Cache {
            slots: vec![0; 1024],
            entries: Vec::new(),
            arena: Vec::new(),
        }
    }

    fn bytes(&self) -> u64 {
        (self.slots.capacity() * 8
            + self.entries.capacity() * std::mem::size_of::<CacheEntry<S>>()
            + self.arena.capacity() * 8) as u64
    }

    fn slot_of(hash: u64, mask: usize) -> usize {
        (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
    }

    fn matches(&self, e: &CacheEntry<S>, hash: u64, bits: &Linearized, state: &S) -> bool {
        if e.hash != hash || e.prefix as usize != bits.prefix || e.state != *state {
            return false;
        }
        let window = bits.window();
        let info = bits.info();
        if e.window_len as usize != window.len() {
            return false;
        }
        let stored = &self.arena[e.arena_start..e.arena_start + window.len() + info.len()];
        // Short slices: a plain loop beats a call to memcmp.
        let (stored_window, stored_info) = stored.split_at(window.len());
        stored_window.iter().zip(window).all(|(a, b)| a == b) && stored_info.iter().zip(info).all(|(a, b)| a == b)
    }

    /// Records the pair and returns true, or returns false when it was already recorded.
    fn insert_if_new(&mut self, bits: &Linearized, state: &S, state_hash: u64) -> bool
    where
        S: Clone,
    {
        let hash = bits.hash ^ state_hash;
        let fingerprint = hash << 32;
        let mut mask = self.slots.len() - 1;
        let mut i = Self::slot_of(hash, mask);
        while self.slots[i] != 0 {
            let slot = self.slots[i];
            if slot & 0xffff_ffff_0000_0000 == fingerprint
                && self.matches(&self.entries[(slot as u32) as usize - 1], hash, bits, state)
            {
                return false;
            }
            i = (i + 1) & mask;
        }
        if (self.entries.len() + 1) * 2 > self.slots.len() {
            self.grow();
            mask = self.slots.len() - 1;
            i = Self::slot_of(hash, mask);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
        }
        let arena_start = self.arena.len();
        self.arena.extend_from_slice(bits.window());
        self.arena.extend_from_slice(bits.info());
        self.entries.push(CacheEntry {
            hash,
            arena_start,
            prefix: bits.prefix as u32,
            window_len: bits.window().len() as u32,
            state: state.clone(),
        });
        let index = u32::try_from(self.entries.len()).expect("fewer than 2^32 cache entries");
        self.slots[i] = fingerprint | u64::from(index);
        true
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let mask = size - 1;
        let mut slots = vec![0u64; size];
        for (n, e) in self.entries.iter().enumerate() {
            let mut i = Self::slot_of(e.hash, mask);
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = (e.hash << 32) | (n as u64 + 1);
        }
        self.slots = slots;
    }
}

/// The entry list: calls and finite returns in history order, doubly linked so lifting is O(1).
struct Entries {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Bit (operation) of each entry; `NONE` for the head and tail sentinels.
    bit: Vec<u32>,
    is_call: Vec<bool>,
    call_of: Vec<u32>,
    ret_of: Vec<u32>,
}

impl Entries {
    fn build(times: &[(u64, Option<u64>)]) -> Entries {
        // (time, is_return, bit): at equal times calls come first, making the operations concurrent.
        let mut order: Vec<(u64, bool, u32)> = Vec::with_capacity(times.len() * 2);
        for (bit, &(call, ret)) in times.iter().enumerate() {
            order.push((call, false, bit as u32));
            if let Some(ret) = ret {
                order.push((ret.max(call), true, bit as u32));
            }
        }
        order.sort_unstable();
        let n = order.len() + 2;
        let tail = (n - 1) as u32;
        let mut e = Entries {
            next: (1..=n as u32).collect(),
            prev: (0..n as u32).map(|i| i.wrapping_sub(1)).collect(),
            bit: vec![NONE; n],
            is_call: vec![false; n],
            call_of: vec![NONE; times.len()],
            ret_of: vec![NONE; times.len()],
        };
        e.next[tail as usize] = NONE;
        for (k, &(_, is_ret, bit)) in order.iter().enumerate() {
            let id = k + 1;
            e.bit[id] = bit;
            e.is_call[id] = !is_ret;
            if is_ret {
                e.ret_of[bit as usize] = id as u32;
            } else {
                e.call_of[bit as usize] = id as u32;
            }
        }
        e
    }

    fn unlink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        self.next[p as usize] = n;
        self.prev[n as usize] = p;
    }

    fn relink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        self.next[p as usize] = id;
        self.prev[n as usize] = id;
    }

    fn lift(&mut self, bit: u32) {
        self.unlink(self.call_of[bit as usize]);
        let ret = self.ret_of[bit as usize];
        if ret != NONE {
            self.unlink(ret);
        }
    }

    fn unlift(&mut self, bit: u32) {
        let ret = self.ret_of[bit as usize];
        if ret != NONE {
            self.relink(ret);
        }
        self.relink(self.call_of[bit as usize]);
    }
}

/// The longest partial linearization seen, kept in amortized O(1) per step: `best[..agree]` equals the stack's
/// bottom `agree` frames, so a new record copies only the frames pushed since the paths diverged.
struct Longest {
    best: Vec<u32>,
    agree: usize,
}

impl Longest {
    fn on_push<S>(&mut self, stack: &[Frame<S>]) {
        if stack.len() > self.best.len() {
            self.best.truncate(self.agree);
            self.best.extend(stack[self.agree..].iter().map(|f| f.bit));
            self.agree = stack.len();
        }
    }

    fn on_pop(&mut self, depth: usize) {
        self.agree = self.agree.min(depth);
    }
}

struct Frame<S> {
    bit: u32,
    state_before: S,
}

/// Releases this search's share of the global memory count when the search ends, however it ends.
struct MemoryShare<'a> {
    used: &'a AtomicU64,
    reported: u64,
}

impl MemoryShare<'_> {
    fn report(&mut self, bytes: u64) -> u64 {
        let total = if bytes >= self.reported {
            self.used.fetch_add(bytes - self.reported, Ordering::Relaxed) + (bytes - self.reported)
        } else {
            self.used.fetch_sub(self.reported - bytes, Ordering::Relaxed) - (self.reported - bytes)
        };
        self.reported = bytes;
        total
    }
}

impl Drop for MemoryShare<'_> {
    fn drop(&mut self) {
        self.used.fetch_sub(self.reported, Ordering::Relaxed);
    }
}

/// A search that can be paused after a number of steps and resumed, so that one worker can give every key a fair
/// share of time (a hard valid key must not starve an easy illegal one that would end the whole check).
pub(crate) struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [SearchOp<M::Op>],
    /// Bits: finite operations by call order, then info operations; maps a bit back to `ops`.
    op_of_bit: Vec<u32>,
    finite: usize,
    entries: Entries,
    bits: Linearized,
    cache: Cache<M::State>,
    stack: Vec<Frame<M::State>>,
    longest: Longest,
    memory: MemoryShare<'a>,
    state: M::State,
    remaining_finite: usize,
    entry: u32,
    steps: u64,
}

impl<'a, M: Model> Search<'a, M> {
    /// A search of `ops` under `model`, charging its cache to `limits`' memory count.
    pub(crate) fn new(model: &'a M, ops: &'a [SearchOp<M::Op>], limits: &Limits<'a>) -> Self {
        let mut op_of_bit: Vec<u32> = (0..ops.len() as u32).collect();
        op_of_bit.sort_by_key(|&i| (ops[i as usize].ret.is_none(), ops[i as usize].call));
        let finite = ops.iter().filter(|o| o.ret.is_some()).count();
        let times: Vec<(u64, Option<u64>)> = op_of_bit
            .iter()
            .map(|&i| (ops[i as usize].call, ops[i as usize].ret))
            .collect();
        let entries = Entries::build(&times);
        let entry = entries.next[HEAD as usize];
        Search {
            model,
            ops,
            op_of_bit,
            finite,
            entries,
            bits: Linearized::new(finite, ops.len() - finite),
            cache: Cache::new(),
            stack: Vec::new(),
            longest: Longest {
                best: Vec::new(),
                agree: 0,
            },
            memory: MemoryShare {
                used: limits.memory_used_bytes,
                reported: 0,
            },
            state: model.init(),
            remaining_finite: finite,
            entry,
            steps: 0,
        }
    }

    fn bit_index(&self, bit: u32) -> usize {
        let b = bit as usize;
        if b < self.finite {
            b
        } else {
            self.bits.finite_words * 64 + (b - self.finite)
        }
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> SearchStats {
        SearchStats {
            cache_entries: self.cache.entries.len() as u64,
        }
    }

    /// Runs about `max_steps` more steps; `None` when the search is paused without an answer.
    pub(crate) fn run(&mut self, limits: &Limits<'_>, max_steps: u64) -> Option<Outcome> {
        let pause_at = self.steps.saturating_add(max_steps);
        loop {
            if self.remaining_finite == 0 {
                return Some(Outcome::Linearizable);
            }
            self.steps += 1;
            if self.steps & (CHECK_EVERY_STEPS - 1) == 0 {
                if let Some(reason) = over_limit(limits, &mut self.memory, self.cache.bytes()) {
                    return Some(Outcome::Stopped(reason));
                }
                if self.steps >= pause_at {
                    return None;
                }
            }
            let entry = self.entry;
            if entry != NONE && self.entries.is_call[entry as usize] {
                if !self.try_lift(self.entries.bit[entry as usize]) {
                    self.entry = self.entries.next[entry as usize];
                }
            } else if let Some(outcome) = self.backtrack() {
                return Some(outcome);
            }
        }
    }

    /// Linearizes the operation of `bit` next if the model accepts it and the resulting (set, state) is new.
    fn try_lift(&mut self, bit: u32) -> bool {
        let Some(next) = self
            .model
            .step(&self.state, &self.ops[self.op_of_bit[bit as usize] as usize].op)
        else {
            return false;
        };
        let index = self.bit_index(bit);
        self.bits.set(index);
        if !self.cache.insert_if_new(&self.bits, &next, hash_state(&next)) {
            self.bits.clear(index);
            return false;
        }
        let before = std::mem::replace(&mut self.state, next);
        self.stack.push(Frame {
            bit,
            state_before: before,
        });
        self.longest.on_push(&self.stack);
        self.entries.lift(bit);
        if (bit as usize) < self.finite {
            self.remaining_finite -= 1;
        }
        self.entry = self.entries.next[HEAD as usize];
        true
    }

    /// At a return (or the end): the operation returning here was not linearized in time, so undo the last choice.
    /// With nothing to undo, no linearization exists.
    fn backtrack(&mut self) -> Option<Outcome> {
        let Some(frame) = self.stack.pop() else {
            let longest = self.longest.best.iter().map(|&b| self.op_of_bit[b as usize]).collect();
            return Some(Outcome::Illegal { longest });
        };
        self.longest.on_pop(self.stack.len());
        self.entries.unlift(frame.bit);
        let index = self.bit_index(frame.bit);
        self.bits.clear(index);
        if (frame.bit as usize) < self.finite {
            self.remaining_finite += 1;
        }
        self.state = frame.state_before;
        self.entry = self.entries.next[self.entries.call_of[frame.bit as usize] as usize];
        None
    }
}

/// Searches `ops` under `model` to the end (or a limit).
#[cfg(test)]
pub(crate) fn search<M: Model>(model: &M, ops: &[SearchOp<M::Op>], limits: &Limits<'_>) -> (Outcome, SearchStats) {
    let mut search = Search::new(model, ops, limits);
    loop {
        if let Some(outcome) = search.run(limits, u64::MAX) {
            return (outcome, search.stats());
        }
    }
}

fn over_limit(limits: &Limits<'_>, memory: &mut MemoryShare<'_>, cache_bytes: u64) -> Option<StopReason> {
    if limits.stop.load(Ordering::Relaxed) {
        return Some(StopReason::MemoryBudget);
    }
    if memory.report(cache_bytes) > limits.memory_budget_bytes {
        limits.stop.store(true, Ordering::Relaxed);
        return Some(StopReason::MemoryBudget);
    }
    if Instant::now() >= limits.deadline {
        return Some(StopReason::Timeout);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::cas_register::{CasRegister, RegisterOp};
    use serde_json::Value;
    use std::time::Duration;

    fn run(model: &CasRegister, ops: &[SearchOp<RegisterOp>]) -> Outcome {
        let used = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let limits = Limits {
            deadline: Instant::now() + Duration::from_secs(10),
            memory_budget_bytes: 1 << 30,
            memory_used_bytes: &used,
            stop: &stop,
        };
        let outcome = search(model, ops, &limits).0;
        assert_eq!(
            used.load(Ordering::Relaxed),
            0,
            "a finished search releases its memory share"
        );
        outcome
    }

    #[test]
    fn given_read_overlapping_write_when_searched_should_be_linearizable() {
        let mut m = CasRegister::new();
        let a = m.intern(&Value::from("a"));
        let ops = vec![
            SearchOp {
                op: RegisterOp::Write { value: a },
                call: 0,
                ret: Some(3),
            },
            SearchOp {
                op: RegisterOp::Read { value: a },
                call: 1,
                ret: Some(2),
            },
        ];
        assert!(matches!(run(&m, &ops), Outcome::Linearizable));
    }

    #[test]
    fn given_stale_read_after_completed_write_when_searched_should_be_illegal_with_longest_prefix() {
        let mut m = CasRegister::new();
        let a = m.intern(&Value::from("a"));
        let ops = vec![
            SearchOp {
                op: RegisterOp::Write { value: a },
                call: 0,
                ret: Some(1),
            },
            SearchOp {
                op: RegisterOp::Read { value: 0 },
                call: 2,
                ret: Some(3),
            },
        ];
        match run(&m, &ops) {
            Outcome::Illegal { longest } => assert_eq!(longest, vec![0]),
            other => panic!("expected illegal, got {other:?}"),
        }
    }

    #[test]
    fn given_info_write_never_observed_when_searched_should_be_linearizable() {
        let mut m = CasRegister::new();
        let a = m.intern(&Value::from("a"));
        let ops = vec![
            SearchOp {
                op: RegisterOp::Write { value: a },
                call: 0,
                ret: None,
            },
            SearchOp {
                op: RegisterOp::Read { value: 0 },
                call: 1,
                ret: Some(2),
            },
            SearchOp {
                op: RegisterOp::Read { value: a },
                call: 3,
                ret: Some(4),
            },
        ];
        assert!(matches!(run(&m, &ops), Outcome::Linearizable));
    }
}
