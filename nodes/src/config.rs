//! Replica configurations: which replicas of the pool are the members of an epoch, and the WAL entry that starts the
//! next epoch (`replica::reconfiguration` has the protocol).
//!
//! The pool is every replica id the cluster may ever use (`format --replica-count`, at most [`POOL_SIZE_MAX`]); a
//! configuration is a subset of it. A reconfiguration is an ordinary WAL entry (it chains, checksums and is verified
//! at boot like any other) whose body starts with [`RECONFIGURATION_TAG`], a byte no client operation uses, so the
//! state machine never sees one: the replica executes it itself.

use std::fmt;

/// Most replica ids a pool may hold (the member set is a 16-bit mask).
pub const POOL_SIZE_MAX: u8 = 16;
/// First byte of a reconfiguration entry's body (client operations use tags 1..=6).
pub const RECONFIGURATION_TAG: u8 = 0xE0;
const RECONFIGURATION_BODY_SIZE_BYTES: usize = 1 + 8 + 2 + 8;

/// A set of replica ids (below [`POOL_SIZE_MAX`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Members(u16);

/// How one configuration differs from another when it differs by exactly one replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The replica joins.
    Add(u8),
    /// The replica leaves.
    Remove(u8),
}

impl Members {
    /// No member: the configuration of a replica that has not learned one yet (a joiner).
    pub const NONE: Members = Members(0);

    /// Every id below `count`.
    pub fn first(count: u8) -> Members {
        assert!(count <= POOL_SIZE_MAX, "a pool holds at most {POOL_SIZE_MAX} replicas");
        Members(((1u32 << count) - 1) as u16)
    }

    /// The set of `ids`, or why it cannot be one.
    pub fn from_ids(ids: impl IntoIterator<Item = u8>) -> Result<Members, String> {
        let mut bits = 0u16;
        for id in ids {
            if id >= POOL_SIZE_MAX {
                return Err(format!("replica id {id} is not below {POOL_SIZE_MAX}"));
            }
            bits |= 1 << id;
        }
        Ok(Members(bits))
    }

    /// The set encoded as a bit mask (bit i: replica i).
    pub fn from_bits(bits: u16) -> Members {
        Members(bits)
    }

    /// The bit mask (bit i: replica i).
    pub fn bits(self) -> u16 {
        self.0
    }

    /// Whether `id` is a member.
    pub fn contains(self, id: u8) -> bool {
        id < POOL_SIZE_MAX && self.0 & (1 << id) != 0
    }

    /// How many members.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether there is no member.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The members in id order.
    pub fn ids(self) -> impl Iterator<Item = u8> {
        (0..POOL_SIZE_MAX).filter(move |&id| self.contains(id))
    }

    /// The `index`-th member in id order, wrapping around: the primary of view `v` is `nth(v)`.
    pub fn nth(self, index: u64) -> u8 {
        assert!(!self.is_empty(), "an empty configuration has no primary");
        let position = (index % self.len() as u64) as usize;
        self.ids().nth(position).expect("position is below the member count")
    }

    /// Where `id` stands among the members in id order.
    pub fn position(self, id: u8) -> Option<u64> {
        self.ids().position(|member| member == id).map(|p| p as u64)
    }

    /// Replicas needed for a quorum of this configuration (a majority).
    pub fn quorum(self) -> usize {
        self.len() / 2 + 1
    }

    /// The one replica `to` adds or removes, if the two sets differ by exactly one replica.
    pub fn single_change(self, to: Members) -> Option<Change> {
        let differ = self.0 ^ to.0;
        if differ.count_ones() != 1 {
            return None;
        }
        let id = differ.trailing_zeros() as u8;
        Some(if to.contains(id) {
            Change::Add(id)
        } else {
            Change::Remove(id)
        })
    }
}

impl fmt::Display for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.ids().map(|id| id.to_string()).collect();
        write!(f, "[{}]", ids.join(","))
    }
}

/// The body of a reconfiguration entry: the configuration of the epoch it starts, and the view that epoch starts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconfiguration {
    /// The epoch it starts (the epoch it was prepared in, plus one).
    pub epoch: u64,
    /// The members of that epoch.
    pub members: Members,
    /// The view the epoch starts in: chosen by the primary that prepared it, so its primary holds the log.
    pub start_view: u64,
}

impl Reconfiguration {
    /// The configuration that follows `members` in `epoch` when `to` is asked for by the primary `primary`: the new
    /// epoch starts in the view whose primary is `primary` if it stays a member, else the next member after it in id
    /// order (every member of a one-replica change but a joiner holds the log).
    pub fn next(epoch: u64, primary: u8, to: Members) -> Reconfiguration {
        assert!(!to.is_empty(), "a configuration keeps at least one member");
        let leader = (0..POOL_SIZE_MAX)
            .map(|step| (primary + step) % POOL_SIZE_MAX)
            .find(|&id| to.contains(id))
            .expect("a non-empty configuration has a member");
        Reconfiguration {
            epoch: epoch + 1,
            members: to,
            start_view: to.position(leader).expect("the leader is a member"),
        }
    }

    /// The entry body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECONFIGURATION_BODY_SIZE_BYTES);
        out.push(RECONFIGURATION_TAG);
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&self.members.bits().to_le_bytes());
        out.extend_from_slice(&self.start_view.to_le_bytes());
        out
    }

    /// The reconfiguration an entry body holds; `None` for any other body (a client operation).
    pub fn decode(body: &[u8]) -> Option<Reconfiguration> {
        if body.len() != RECONFIGURATION_BODY_SIZE_BYTES || body[0] != RECONFIGURATION_TAG {
            return None;
        }
        let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
        Some(Reconfiguration {
            epoch: u64_at(1),
            members: Members::from_bits(u16::from_le_bytes(body[9..11].try_into().expect("2 bytes"))),
            start_view: u64_at(11),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_member_sets_when_compared_should_name_the_one_replica_added_or_removed() {
        let three = Members::first(3);
        let four = Members::from_ids([0, 1, 2, 3]).unwrap();
        assert_eq!(three.single_change(four), Some(Change::Add(3)));
        assert_eq!(four.single_change(three), Some(Change::Remove(3)));
        assert_eq!(
            three.single_change(Members::from_ids([0, 1, 3]).unwrap()),
            None,
            "two changes"
        );
        assert_eq!(three.single_change(three), None);
        assert_eq!((three.quorum(), four.quorum()), (2, 3));
        assert_eq!(four.to_string(), "[0,1,2,3]");
        assert!(Members::from_ids([16]).is_err());
    }

    #[test]
    fn given_views_when_asked_for_their_primary_should_rotate_over_the_members_in_id_order() {
        let members = Members::from_ids([1, 3, 4]).unwrap();
        let primaries: Vec<u8> = (0..4).map(|view| members.nth(view)).collect();
        assert_eq!(primaries, vec![1, 3, 4, 1]);
        assert_eq!(members.position(4), Some(2));
        assert_eq!(members.position(0), None);
    }

    #[test]
    fn given_a_reconfiguration_when_encoded_should_decode_to_itself_and_never_as_a_client_body() {
        // The primary (2) is removed: the next member after it in id order (3) leads the new epoch.
        let next = Reconfiguration::next(4, 2, Members::from_ids([0, 1, 3]).unwrap());
        assert_eq!((next.epoch, next.start_view), (5, 2));
        assert_eq!(next.members.nth(next.start_view), 3);
        assert_eq!(Reconfiguration::decode(&next.encode()), Some(next));
        assert!(crate::state_machine::Operation::decode(&next.encode()).is_err());
        let put = crate::state_machine::Operation::Put {
            key: "k".into(),
            value: "v".into(),
        };
        assert_eq!(Reconfiguration::decode(&put.encode()), None);
        // The primary stays: it leads the new epoch too.
        let grow = Reconfiguration::next(1, 1, Members::first(4));
        assert_eq!(grow.members.nth(grow.start_view), 1);
    }
}
