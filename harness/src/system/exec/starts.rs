//! Whether the client can start at all. A client whose processes exit before their first answer, again and again,
//! while none has ever answered, is a broken set-up (a `python3` without the client's module, a wrong path, a
//! syntax error): not a system that fails every operation. The run stops early on it and says so with the client's
//! own stderr, instead of judging the system on operations nobody sent (873 processes died that way in one
//! ZooKeeper run, which then ended INVALID by liveness).
//!
//! Once any client process has answered any operation, the set-up works and this account stops counting: later
//! failures are the workload's (the `workload-health` check) or the system's.

use std::sync::Mutex;

/// Client processes that exited before their first answer, with none answered yet, after which the set-up is broken.
pub const STILLBORN_MAX: u32 = 5;
/// Lines of the last such process's stderr quoted.
pub const STDERR_LINES_QUOTED: usize = 12;

/// The run-wide account of client processes that never answered (shared by every client of a run).
#[derive(Debug, Default)]
pub struct ClientStarts {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    answered: bool,
    stillborn: u32,
    broken: Option<String>,
}

impl ClientStarts {
    /// A client process answered an operation: the set-up works.
    pub fn answered(&self) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.answered = true;
    }

    /// A client process ended before its first answer: `who` (`client p4 (`python3 zk_client.py`)`), `how` it
    /// ended (`exited (exit status: 1)`, `could not start: ...`), and the end of its stderr.
    pub fn stillborn(&self, who: &str, how: &str, stderr: &[String]) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.answered || state.broken.is_some() {
            return;
        }
        state.stillborn += 1;
        if state.stillborn < STILLBORN_MAX {
            return;
        }
        let tail = &stderr[stderr.len().saturating_sub(STDERR_LINES_QUOTED)..];
        let quoted = if tail.is_empty() {
            "it wrote nothing on stderr".to_string()
        } else {
            format!("its stderr ends:\n    {}", tail.join("\n    "))
        };
        state.broken = Some(format!(
            "the client cannot start: {} client processes ended before answering their first operation and none \
             has answered yet; the last, {who}, {how}; {quoted}\n  (fix the client's set-up: run its command by \
             hand and send it one operation line, see plans/exec/PROTOCOL.md)",
            state.stillborn
        ));
    }

    /// Why the client's set-up is broken, once it is.
    pub fn broken(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .broken
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_processes_that_die_before_answering_when_none_ever_answered_should_be_broken_with_their_stderr() {
        let starts = ClientStarts::default();
        let stderr = vec![
            "Traceback (most recent call last):".into(),
            "ModuleNotFoundError: No module named 'kazoo'".into(),
        ];
        for _ in 1..STILLBORN_MAX {
            starts.stillborn("client p1 (`python3 zk_client.py`)", "exited (exit status: 1)", &stderr);
            assert_eq!(starts.broken(), None);
        }
        starts.stillborn("client p9 (`python3 zk_client.py`)", "exited (exit status: 1)", &stderr);
        let why = starts.broken().expect("broken after STILLBORN_MAX");
        assert!(
            why.contains("client p9") && why.contains("No module named 'kazoo'") && why.contains("5 client processes"),
            "{why}"
        );
    }

    #[test]
    fn given_a_client_that_answered_once_when_processes_later_die_should_not_be_a_broken_set_up() {
        let starts = ClientStarts::default();
        starts.answered();
        for _ in 0..STILLBORN_MAX * 2 {
            starts.stillborn("client p1 (`python3 c.py`)", "exited (exit status: 1)", &[]);
        }
        assert_eq!(starts.broken(), None);
    }
}
