//! What sits at each offset, and where each payload sits.
//!
//! One pass over a log's reads in invocation order records, per offset, the first read's claim (a payload, or "no
//! entry" for an offset a read skipped while returning a later one) and the acknowledged append, and compares every
//! later claim with them: a different claim is an inconsistency between reads, or a lost append when the read began
//! after the acknowledgement. Per payload it records the offsets reads showed it at; a second pass then finds
//! duplicates and acknowledged payloads that sit only elsewhere. Memory is one small slot per offset and per payload.

use super::findings::{Cause, Detail, Findings};
use super::parse::{Outcome, GAP, NONE};
use super::{AnomalyKind, LogCtx};
use crate::models::FxBuild;
use std::collections::HashMap;

/// Distinct offsets remembered per payload beyond the first (a duplicate needs two; more only lengthen the report).
const MAX_OFFSETS_PER_PAYLOAD: usize = 16;

/// What one offset is known to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    /// The first read's claim: a payload id or [`GAP`]; [`NONE`] until a read covers the offset.
    claim: u32,
    /// The read that made the first claim.
    claim_read: u32,
    /// The append acknowledged at this offset, or [`NONE`].
    acked: u32,
    /// Two reads' disagreement here was reported (once per offset is enough to point at it).
    read_conflict: bool,
    /// A disagreement between the acknowledgement and a read that began before it was reported.
    ack_conflict: bool,
}

const EMPTY_SLOT: Slot = Slot {
    claim: NONE,
    claim_read: NONE,
    acked: NONE,
    read_conflict: false,
    ack_conflict: false,
};

/// Slots by offset: a vector over the offsets a dense log can have, a map beyond (sparse or bogus offsets).
struct Slots {
    dense: Vec<Slot>,
    sparse: HashMap<u64, Slot, FxBuild>,
    dense_limit: u64,
}

impl Slots {
    fn get_mut(&mut self, offset: u64) -> &mut Slot {
        if offset < self.dense_limit {
            let i = offset as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, EMPTY_SLOT);
            }
            &mut self.dense[i]
        } else {
            self.sparse.entry(offset).or_insert(EMPTY_SLOT)
        }
    }

    fn get(&self, offset: u64) -> Slot {
        let slot = match usize::try_from(offset) {
            Ok(i) if offset < self.dense_limit => self.dense.get(i),
            _ => self.sparse.get(&offset),
        };
        slot.copied().unwrap_or(EMPTY_SLOT)
    }
}

/// Where reads showed one payload.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// The first offset a read showed it at, or `u64::MAX` when no read returned it.
    first_offset: u64,
    first_read: u32,
    last_read: u32,
    /// One read returned it twice.
    in_one_read: bool,
    /// Reported as a phantom already.
    phantom: bool,
}

const UNSEEN: Seen = Seen {
    first_offset: u64::MAX,
    first_read: NONE,
    last_read: NONE,
    in_one_read: false,
    phantom: false,
};

/// What the offset checks leave for the stats.
pub(super) struct OffsetOutcome {
    pub acked_unseen: u64,
    pub gap_offsets_unchecked: u64,
}

struct OffsetCheck<'c, 'a, 'h> {
    ctx: &'c LogCtx<'a, 'h>,
    findings: &'c mut Findings,
    lost: &'c mut [bool],
    slots: Slots,
    seen: Vec<Seen>,
    more_offsets: HashMap<u32, Vec<u64>, FxBuild>,
    /// Gap offsets still to be claimed; bounds the work a read with absurd offsets can cause.
    gap_budget: u64,
    gap_offsets_unchecked: u64,
}

/// Runs the per-offset and per-payload checks of one log; marks lost appends in `lost` (indexed like the appends).
pub(super) fn check(ctx: &LogCtx<'_, '_>, findings: &mut Findings, lost: &mut [bool]) -> OffsetOutcome {
    let log = ctx.log;
    let work = (log.entries.len() + log.appends.len()) as u64;
    let mut check = OffsetCheck {
        ctx,
        findings,
        lost,
        slots: Slots {
            dense: Vec::new(),
            sparse: HashMap::default(),
            dense_limit: 2 * log.appends.len() as u64 + 1024,
        },
        seen: vec![UNSEEN; log.payloads.len()],
        more_offsets: HashMap::default(),
        gap_budget: 4 * work + 1_000_000,
        gap_offsets_unchecked: 0,
    };
    check.register_acks();
    for read in 0..log.reads.len() {
        check.walk_read(read as u32);
    }
    let acked_unseen = check.judge_payloads();
    OffsetOutcome {
        acked_unseen,
        gap_offsets_unchecked: check.gap_offsets_unchecked,
    }
}

impl OffsetCheck<'_, '_, '_> {
    fn report(&mut self, kind: AnomalyKind, cause: Cause, detail: impl FnOnce(&LogCtx<'_, '_>) -> Detail) {
        let ctx = self.ctx;
        self.findings.report(kind, ctx.log.name, cause, || detail(ctx));
    }

    /// Records each acknowledged offset; two appends acknowledged at one offset cannot both be there.
    fn register_acks(&mut self) {
        for (a, append) in self.ctx.log.appends.iter().enumerate() {
            let Some((offset, _)) = append.acked() else { continue };
            let slot = self.slots.get_mut(offset);
            if slot.acked == NONE {
                slot.acked = a as u32;
                continue;
            }
            let first = slot.acked;
            self.report(AnomalyKind::Inconsistent, Cause::MaybeLoss, |ctx| {
                let (p, q) = (ctx.log.appends[first as usize].payload, append.payload);
                Detail {
                    offsets: vec![offset],
                    payloads: vec![ctx.payload(p), ctx.payload(q)],
                    ops: vec![ctx.append_ref(first), ctx.append_ref(a as u32)],
                    reason: format!(
                        "appends of {} (event {}) and {} (event {}) were both acknowledged at offset {offset}",
                        ctx.show(p),
                        ctx.append_index(first),
                        ctx.show(q),
                        ctx.append_index(a as u32)
                    ),
                }
            });
        }
    }

    fn walk_read(&mut self, read: u32) {
        let ctx = self.ctx;
        let ordered = self.check_shape(read);
        let mut next = ctx.log.reads[read as usize].from;
        for &(offset, payload) in ctx.log.entries_of(read) {
            if ordered {
                self.claim_gap(read, next, offset);
                next = offset + 1;
            }
            self.see_payload(read, offset, payload);
            self.claim(read, offset, payload);
        }
    }

    /// Reports a read whose offsets do not increase or fall outside `[from, end)`; true when its offsets increase.
    fn check_shape(&mut self, read: u32) -> bool {
        let ctx = self.ctx;
        let r = &ctx.log.reads[read as usize];
        let entries = ctx.log.entries_of(read);
        let ordered = entries.windows(2).all(|w| w[0].0 < w[1].0);
        let misplaced = entries.iter().position(|&(o, _)| o < r.from || o >= r.end);
        let (offsets, what) = match (ordered, misplaced) {
            (true, None) => return true,
            (false, _) => {
                let i = entries
                    .windows(2)
                    .position(|w| w[0].0 >= w[1].0)
                    .expect("a pair out of order")
                    + 1;
                let (before, after) = (entries[i - 1].0, entries[i].0);
                (
                    vec![before, after],
                    format!("offset {after} after offset {before}: a read's offsets must increase"),
                )
            }
            (true, Some(i)) => {
                let o = entries[i].0;
                (
                    vec![o],
                    format!("offset {o}, outside the range [{}, {}) it reported", r.from, r.end),
                )
            }
        };
        self.report(AnomalyKind::Inconsistent, Cause::Never, |ctx| Detail {
            payloads: offsets
                .iter()
                .filter_map(|o| entries.iter().find(|e| e.0 == *o))
                .map(|e| ctx.payload(e.1))
                .collect(),
            offsets,
            ops: vec![ctx.read_ref(read)],
            reason: format!("read (event {}) returned {what}", ctx.read_index(read)),
        });
        ordered
    }

    /// Claims "no entry" for the offsets a read skipped between `from` and `to`, within the gap budget.
    fn claim_gap(&mut self, read: u32, from: u64, to: u64) {
        let width = to.saturating_sub(from);
        let checked = width.min(self.gap_budget);
        self.gap_budget -= checked;
        self.gap_offsets_unchecked += width - checked;
        for offset in from..from + checked {
            self.claim(read, offset, GAP);
        }
    }

    /// Compares a read's claim about `offset` with the first read's claim and with the acknowledgement.
    fn claim(&mut self, read: u32, offset: u64, claim: u32) {
        let slot = *self.slots.get_mut(offset);
        if slot.claim == claim && (slot.acked == NONE || self.ctx.log.appends[slot.acked as usize].payload == claim) {
            return;
        }
        let mut updated = slot;
        if slot.claim == NONE {
            updated.claim = claim;
            updated.claim_read = read;
        } else if slot.claim != claim && !slot.read_conflict {
            updated.read_conflict = true;
            self.report_read_conflict(offset, slot, read, claim);
        }
        if slot.acked != NONE {
            let append = &self.ctx.log.appends[slot.acked as usize];
            let (_, ack_pos) = append.acked().expect("a slot's append was acknowledged");
            if append.payload == claim {
                // Agrees with the acknowledgement.
            } else if self.ctx.log.reads[read as usize].invoke_pos > ack_pos {
                self.report_lost_at(offset, slot.acked, read, claim);
            } else if !slot.ack_conflict {
                updated.ack_conflict = true;
                self.report_early_conflict(offset, slot.acked, read, claim);
            }
        }
        if updated != slot {
            *self.slots.get_mut(offset) = updated;
        }
    }

    fn report_read_conflict(&mut self, offset: u64, slot: Slot, read: u32, claim: u32) {
        self.report(AnomalyKind::Inconsistent, Cause::MaybeLoss, |ctx| Detail {
            offsets: vec![offset],
            payloads: vec![ctx.payload(slot.claim), ctx.payload(claim)],
            ops: vec![ctx.read_ref(slot.claim_read), ctx.read_ref(read)],
            reason: format!(
                "reads disagree on offset {offset}: read (event {}) returned {}, read (event {}) returned {}",
                ctx.read_index(slot.claim_read),
                ctx.show(slot.claim),
                ctx.read_index(read),
                ctx.show(claim)
            ),
        });
    }

    /// An acknowledged append is not at its offset in a read that began after the acknowledgement.
    fn report_lost_at(&mut self, offset: u64, append: u32, read: u32, claim: u32) {
        if std::mem::replace(&mut self.lost[append as usize], true) {
            return;
        }
        self.report(AnomalyKind::Lost, Cause::MaybeLoss, |ctx| {
            let payload = ctx.log.appends[append as usize].payload;
            Detail {
                offsets: vec![offset],
                payloads: vec![ctx.payload(payload), ctx.payload(claim)],
                ops: vec![ctx.append_ref(append), ctx.read_ref(read)],
                reason: format!(
                    "{} was acknowledged at offset {offset} (append event {}), but read (event {}), which began after \
                     the acknowledgement, has {} there",
                    ctx.show(payload),
                    ctx.append_index(append),
                    ctx.read_index(read),
                    ctx.show(claim)
                ),
            }
        });
    }

    /// A read that began before an acknowledgement shows something else at the acknowledged offset.
    fn report_early_conflict(&mut self, offset: u64, append: u32, read: u32, claim: u32) {
        self.report(AnomalyKind::Inconsistent, Cause::MaybeLoss, |ctx| {
            let payload = ctx.log.appends[append as usize].payload;
            Detail {
                offsets: vec![offset],
                payloads: vec![ctx.payload(payload), ctx.payload(claim)],
                ops: vec![ctx.append_ref(append), ctx.read_ref(read)],
                reason: format!(
                    "read (event {}) returned {} at offset {offset}, where {} was acknowledged (append event {})",
                    ctx.read_index(read),
                    ctx.show(claim),
                    ctx.show(payload),
                    ctx.append_index(append)
                ),
            }
        });
    }

    /// Records where a read showed a payload, and reports it if nobody (successfully) appended it before.
    fn see_payload(&mut self, read: u32, offset: u64, payload: u32) {
        self.check_phantom(read, offset, payload);
        let seen = &mut self.seen[payload as usize];
        if seen.first_offset == u64::MAX {
            seen.first_offset = offset;
            seen.first_read = read;
        } else if seen.first_offset != offset || seen.last_read == read {
            seen.in_one_read |= seen.last_read == read;
            let more = self.more_offsets.entry(payload).or_default();
            if offset != seen.first_offset && !more.contains(&offset) && more.len() < MAX_OFFSETS_PER_PAYLOAD {
                more.push(offset);
            }
        }
        seen.last_read = read;
    }

    fn check_phantom(&mut self, read: u32, offset: u64, payload: u32) {
        if self.seen[payload as usize].phantom {
            return;
        }
        let log = self.ctx.log;
        let append = log.appended_by[payload as usize];
        let why = match log.appends.get(append as usize) {
            None => "no append of it was invoked on this log".to_string(),
            Some(a) if a.outcome == Outcome::Failed => {
                format!("its append (event {}) failed", self.ctx.append_index(append))
            }
            Some(a) if log.reads[read as usize].complete_pos < a.invoke_pos => {
                format!(
                    "the read completed before its append (event {}) was invoked",
                    self.ctx.append_index(append)
                )
            }
            Some(_) => return,
        };
        self.seen[payload as usize].phantom = true;
        self.report(AnomalyKind::Phantom, Cause::Never, |ctx| {
            let mut ops = vec![ctx.read_ref(read)];
            ops.extend((append != NONE).then(|| ctx.append_ref(append)));
            Detail {
                offsets: vec![offset],
                payloads: vec![ctx.payload(payload)],
                ops,
                reason: format!(
                    "read (event {}) returned {} at offset {offset}, but {why}",
                    ctx.read_index(read),
                    ctx.show(payload)
                ),
            }
        });
    }

    /// All offsets reads showed a payload at, first one first.
    fn offsets_of(&self, payload: u32) -> Vec<u64> {
        let mut offsets = vec![self.seen[payload as usize].first_offset];
        offsets.extend(self.more_offsets.get(&payload).into_iter().flatten());
        offsets
    }

    /// Finds acknowledged payloads that reads show only elsewhere, and duplicates; returns the acknowledged
    /// payloads no read returned.
    fn judge_payloads(&mut self) -> u64 {
        let mut unseen = 0;
        for (a, append) in self.ctx.log.appends.iter().enumerate() {
            let Some((offset, _)) = append.acked() else { continue };
            if self.seen[append.payload as usize].first_offset == u64::MAX {
                unseen += 1;
                continue;
            }
            let elsewhere = self.offsets_of(append.payload);
            if self.lost[a] || elsewhere.contains(&offset) {
                continue;
            }
            self.lost[a] = true;
            let first_read = self.seen[append.payload as usize].first_read;
            self.report(AnomalyKind::Lost, Cause::MaybeLoss, |ctx| Detail {
                offsets: std::iter::once(offset).chain(elsewhere.iter().copied()).collect(),
                payloads: vec![ctx.payload(append.payload)],
                // The first read that showed it elsewhere is where the loss became visible (the evidence time).
                ops: vec![ctx.append_ref(a as u32), ctx.read_ref(first_read)],
                reason: format!(
                    "{} was acknowledged at offset {offset} (append event {}), but reads returned it only at \
                     offset(s) {elsewhere:?}",
                    ctx.show(append.payload),
                    ctx.append_index(a as u32)
                ),
            });
        }
        let mut repeated: Vec<u32> = self.more_offsets.keys().copied().collect();
        repeated.sort_unstable();
        for payload in repeated {
            self.judge_duplicate(payload);
        }
        unseen
    }

    /// A payload at two offsets is a duplicate when one read shows both, or when no read disagrees about either offset
    /// (if one does, the payload moved between reads: reordering, already reported as an inconsistency).
    fn judge_duplicate(&mut self, payload: u32) {
        let offsets = self.offsets_of(payload);
        let seen = self.seen[payload as usize];
        let reordered = offsets.iter().any(|&o| self.slots.get(o).read_conflict);
        if offsets.len() < 2 || (reordered && !seen.in_one_read) {
            return;
        }
        let append = self.ctx.log.appended_by[payload as usize];
        self.report(AnomalyKind::Duplicated, Cause::Never, |ctx| {
            let mut ops: Vec<_> = (append != NONE).then(|| ctx.append_ref(append)).into_iter().collect();
            ops.push(ctx.read_ref(seen.first_read));
            if seen.last_read != seen.first_read {
                ops.push(ctx.read_ref(seen.last_read));
            }
            let where_ = if seen.in_one_read { " (twice in one read)" } else { "" };
            Detail {
                reason: format!(
                    "{} appears at offsets {offsets:?}{where_}, but a payload is appended at most once",
                    ctx.show(payload)
                ),
                offsets,
                payloads: vec![ctx.payload(payload)],
                ops,
            }
        });
    }
}
