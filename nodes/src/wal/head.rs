//! The replica's head: the highest op of its contiguous, chained log and that entry's checksum.
//!
//! This is the one place where the head moves when an entry is stored. A repair backfill that lands at or
//! below the head leaves both halves of the pair untouched; an insert at `head.op + 1` (a normal append, or a
//! backfill that closes a gap) walks up over the entries already stored above the gap and takes the checksum of
//! the highest one reached.

/// The pair (sequencer op, checksum of the entry at that op); the next prepare's parent is `checksum`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Highest op such that every op in `1..=op` is stored and chains.
    pub op: u64,
    /// Checksum of the entry at `op` (the root checksum when `op == 0`).
    pub checksum: u128,
}

/// Returns the head after the entry at `inserted_op` was stored.
///
/// `stored_checksum(op)` returns the checksum of a stored entry, or `None` when that op is missing. Entries above
/// a gap were chain-checked against their stored neighbours when they were inserted, so walking up over
/// contiguous stored ops stays on one chain.
pub fn head_after_insert(head: Head, inserted_op: u64, stored_checksum: impl Fn(u64) -> Option<u128>) -> Head {
    if inserted_op <= head.op {
        // A backfill below the head never moves it: the sequencer and its parent checksum stay as they were.
        return head;
    }
    if inserted_op > head.op + 1 {
        // Stored above a gap: the head moves only once the gap closes.
        return head;
    }
    let mut op = inserted_op;
    let mut checksum = stored_checksum(op).expect("the inserted entry is stored");
    while let Some(next_checksum) = stored_checksum(op + 1) {
        op += 1;
        checksum = next_checksum;
    }
    Head { op, checksum }
}

/// The head after an insert as the `repair-rewinds-parent` mutant computes it (see nodes/README.md, "Mutants").
///
/// Models a VSR replica whose repair backfilled a missed op below its head and overwrote the checksum the next
/// prepare uses as its parent. Here a backfill lands below the head when it closes a gap under entries that
/// were already stored above it (prepares that arrived while the gap was being repaired).
pub fn head_after_insert_rewinding_parent(
    head: Head,
    inserted_op: u64,
    stored_checksum: impl Fn(u64) -> Option<u128>,
) -> Head {
    let correct = head_after_insert(head, inserted_op, &stored_checksum);
    if inserted_op < correct.op {
        // MUTANT(repair-rewinds-parent): the sequencer stays at the head, but the head checksum (the next prepare's
        // parent) is taken from the backfilled entry instead of the entry at the head.
        let checksum = stored_checksum(inserted_op).expect("the inserted entry is stored");
        return Head {
            op: correct.op,
            checksum,
        };
    }
    correct
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn stored(ops: &[u64]) -> BTreeMap<u64, u128> {
        ops.iter().map(|&op| (op, 1000 + u128::from(op))).collect()
    }

    #[test]
    fn given_a_head_when_repair_backfills_below_it_should_keep_head_op_and_checksum() {
        let log = stored(&[1, 2, 3, 4, 5, 6]);
        let head = Head { op: 6, checksum: 1006 };
        let after = head_after_insert(head, 3, |op| log.get(&op).copied());
        assert_eq!(after, head);
    }

    #[test]
    fn given_a_gap_when_backfill_closes_it_should_adopt_the_checksum_of_the_highest_contiguous_op() {
        let log = stored(&[1, 2, 3, 4, 5, 6, 8]);
        let head = Head { op: 3, checksum: 1003 };
        let after = head_after_insert(head, 4, |op| log.get(&op).copied());
        assert_eq!(after, Head { op: 6, checksum: 1006 });
    }

    #[test]
    fn given_a_gap_when_an_entry_is_stored_above_it_should_not_move_the_head() {
        let log = stored(&[1, 2, 5]);
        let head = Head { op: 2, checksum: 1002 };
        assert_eq!(head_after_insert(head, 5, |op| log.get(&op).copied()), head);
    }

    #[test]
    fn given_the_rewind_mutant_when_a_backfill_closes_a_gap_below_stored_entries_should_keep_the_backfilled_checksum() {
        let log = stored(&[1, 2, 3, 4, 5, 6]);
        let head = Head { op: 3, checksum: 1003 };
        let after = head_after_insert_rewinding_parent(head, 4, |op| log.get(&op).copied());
        assert_eq!(
            after,
            Head { op: 6, checksum: 1004 },
            "the head parents past ops 5 and 6"
        );
        let append = head_after_insert_rewinding_parent(Head { op: 5, checksum: 1005 }, 6, |op| log.get(&op).copied());
        assert_eq!(append, Head { op: 6, checksum: 1006 }, "a plain append is unaffected");
    }

    #[test]
    fn given_a_contiguous_log_when_appending_the_next_op_should_advance_by_one() {
        let log = stored(&[1, 2, 3]);
        let head = Head { op: 2, checksum: 1002 };
        assert_eq!(
            head_after_insert(head, 3, |op| log.get(&op).copied()),
            Head { op: 3, checksum: 1003 }
        );
    }
}
