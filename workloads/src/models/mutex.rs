//! Knossos's mutex: one lock, `acquire` and `release` (Jepsen's lock tests, e.g. etcd's and Hazelcast's).
//!
//! History shape: client ops `f: acquire` or `f: release`, values ignored (Jepsen writes `nil`). An `ok` acquire
//! took the lock, which must have been free; an `ok` release freed it, which must have been held. A `fail` (Jepsen's
//! `:not-held` on a release, a refused acquire) did nothing and constrains nothing. An `info` may have taken effect at
//! any point after its invocation, or never: at a point where it could not have succeeded (an acquire of a held
//! lock), it did nothing. Like Knossos's model, the lock has no owner: a release by another process than the one that
//! acquired is not, by itself, an error.

use super::{completion_name, Completion, Model};
use crate::history::Event;

/// The mutex model. A state is whether the lock is held.
#[derive(Debug, Default)]
pub struct Mutex;

/// One lock operation with what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockOp {
    /// `acquire` (true) or `release` (false).
    pub acquire: bool,
    /// Completed `ok` (it took effect) rather than unknown.
    pub known: bool,
}

impl Model for Mutex {
    type State = bool;
    type Op = LockOp;

    fn init(&self) -> bool {
        false
    }

    fn step(&self, held: &bool, op: &LockOp) -> Option<bool> {
        match (op.acquire, *held, op.known) {
            (true, false, _) => Some(true),
            (false, true, _) => Some(false),
            // It cannot have succeeded here: an unknown one did nothing, a known one is illegal.
            (_, held, false) => Some(held),
            (_, _, true) => None,
        }
    }

    fn describe_op(&self, op: &LockOp) -> String {
        let f = if op.acquire { "acquire" } else { "release" };
        let result = if op.known { "ok" } else { "unknown" };
        format!("{f}() -> {result}")
    }

    fn describe_state(&self, held: &bool) -> String {
        if *held { "held" } else { "free" }.to_string()
    }

    fn op_from_history(&mut self, invoke: &Event, completion: Completion<'_>) -> Result<Option<LockOp>, String> {
        let acquire = match invoke.f.as_str() {
            "acquire" => true,
            "release" => false,
            other => {
                return Err(format!(
                    "the mutex model knows acquire and release, not {other:?} ({} op of process {})",
                    completion_name(&completion),
                    invoke.process.unwrap_or_default()
                ))
            }
        };
        Ok(match completion {
            Completion::Ok(_) => Some(LockOp { acquire, known: true }),
            Completion::Fail(_) => None,
            Completion::Unknown(_) => Some(LockOp { acquire, known: false }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACQUIRE: LockOp = LockOp {
        acquire: true,
        known: true,
    };
    const RELEASE: LockOp = LockOp {
        acquire: false,
        known: true,
    };

    #[test]
    fn given_a_free_lock_when_acquired_twice_should_refuse_the_second_and_allow_it_after_a_release() {
        let m = Mutex;
        let held = m.step(&m.init(), &ACQUIRE).unwrap();
        assert_eq!(m.step(&held, &ACQUIRE), None);
        let free = m.step(&held, &RELEASE).unwrap();
        assert_eq!(m.step(&free, &RELEASE), None, "releasing a free lock");
        assert_eq!(m.step(&free, &ACQUIRE), Some(true));
    }

    #[test]
    fn given_an_unknown_acquire_when_the_lock_is_held_should_be_legal_and_change_nothing() {
        let m = Mutex;
        let unknown = LockOp {
            acquire: true,
            known: false,
        };
        assert_eq!(m.step(&true, &unknown), Some(true));
        assert_eq!(m.step(&false, &unknown), Some(true));
    }
}
