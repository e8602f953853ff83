//! The history: the single source of truth of a run.
//!
//! Every client invocation and completion, every nemesis (fault) operation and every node lifecycle event of a run is
//! one [`Event`], written as one JSON object per line (JSONL) to `history.jsonl`, flushed as the run goes, so a run
//! that crashed can still be analysed. Checkers and reports read only this (and node logs); nothing downstream of the
//! history talks to the cluster.
//!
//! Client semantics follow Jepsen: an `invoke` opens an operation for a `process`; its completion is `ok` (it took
//! effect), `fail` (it definitely did not take effect) or `info` (unknown: it may have taken effect at any time after
//! its invocation, or never). A process with an `info` completion is retired; its worker continues under a new process
//! id.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::Path;

/// What kind of history event a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A client operation begins.
    Invoke,
    /// A client operation completed and took effect.
    Ok,
    /// A client operation completed and definitely did not take effect.
    Fail,
    /// A client operation's outcome is unknown.
    Info,
    /// A fault started or stopped (kill, pause, partition, disk surgery ...).
    Nemesis,
    /// A node lifecycle event (start, ready, boot-ok, boot-refused, restart-all ...).
    Lifecycle,
    /// Run metadata (first line: plan digest, seed, versions; last line: run end).
    Meta,
}

impl EventKind {
    /// True for the four client-operation kinds.
    pub fn is_client(self) -> bool {
        matches!(
            self,
            EventKind::Invoke | EventKind::Ok | EventKind::Fail | EventKind::Info
        )
    }
}

/// One line of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Position in the history, 0-based, dense.
    pub index: u64,
    /// Monotonic nanoseconds since the run started (the wall-clock anchor is in the first `meta` event).
    pub time_ns: u64,
    /// Event kind.
    pub kind: EventKind,
    /// Logical client process id (client events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u64>,
    /// Worker slot the process belongs to (client events; retired processes keep their worker's slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u64>,
    /// Node name (`n1..nN`) for lifecycle and single-node nemesis events, and the node a client op was sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Function: `read|write|cas` (register), `get|put|append` (kv), `append|read` (log), or the fault/lifecycle name.
    pub f: String,
    /// Key for keyed client operations (Jepsen's `independent` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Value: the written value, a read's result (`null` = missing key), `[from, to]` for cas, fault details.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub value: Value,
    /// Error text for `fail`/`info` completions and refusals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Event {
    /// The process of a client event, or an error naming the event when it has none.
    pub fn client_process(&self) -> Result<u64, String> {
        self.process.ok_or_else(|| {
            format!(
                "history event {} ({:?} {}) has no process",
                self.index, self.kind, self.f
            )
        })
    }
}

/// Errors reading a history file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file could not be read.
    #[error("cannot read history {path}: {source}")]
    Io {
        /// File path.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A line is not a valid event.
    #[error("{path}:{line}:{column}: not a faultline history event: {message} (the file may be truncated by a crash: only its last line may be cut short)")]
    Parse {
        /// File path.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong.
        message: String,
    },
}

/// A history read back from disk, with a note when its last line was cut short (a crashed run).
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Events in file order.
    pub events: Vec<Event>,
    /// Set when the final line was incomplete and was skipped.
    pub truncated_tail: bool,
}

impl History {
    /// Reads a JSONL history. A final line without a newline that fails to parse is a crash-torn tail and is skipped
    /// (`truncated_tail`); any other bad line is an error naming file, line and column.
    pub fn read_jsonl(path: &Path) -> Result<History, HistoryError> {
        let io_err = |source| HistoryError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let mut reader = std::io::BufReader::new(file);
        let mut history = History::default();
        let mut line = String::new();
        let mut line_no = 0usize;
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(io_err)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let complete = line.ends_with('\n');
            let text = line.trim_end();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<Event>(text) {
                Ok(event) => history.events.push(event),
                Err(_) if !complete => history.truncated_tail = true,
                Err(e) => {
                    return Err(HistoryError::Parse {
                        path: path.display().to_string(),
                        line: line_no,
                        column: e.column(),
                        message: e.to_string(),
                    })
                }
            }
        }
        Ok(history)
    }

    /// Client events only, in order.
    pub fn client_events(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(|e| e.kind.is_client())
    }
}

/// Writes events as JSONL, one line each; the caller decides when to flush.
pub struct HistoryWriter<W: Write> {
    out: W,
    next_index: u64,
}

impl<W: Write> HistoryWriter<W> {
    /// Wraps a writer; indices start at 0.
    pub fn new(out: W) -> Self {
        HistoryWriter { out, next_index: 0 }
    }

    /// Assigns the next index to `event`, writes it as one line, and returns the index.
    pub fn append(&mut self, mut event: Event) -> std::io::Result<u64> {
        event.index = self.next_index;
        let mut line = serde_json::to_vec(&event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.next_index += 1;
        Ok(event.index)
    }

    /// Flushes buffered lines to the underlying writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Returns the underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: EventKind, process: u64, f: &str, value: Value) -> Event {
        Event {
            index: 0,
            time_ns: 1,
            kind,
            process: Some(process),
            worker: Some(process),
            node: Some("n1".into()),
            f: f.into(),
            key: Some("k0".into()),
            value,
            error: None,
        }
    }

    #[test]
    fn given_written_events_when_read_back_should_round_trip_with_dense_indices() {
        let dir = test_dir();
        let path = dir.join("h.jsonl");
        let mut w = HistoryWriter::new(std::fs::File::create(&path).unwrap());
        w.append(op(EventKind::Invoke, 0, "write", Value::from("a"))).unwrap();
        w.append(op(EventKind::Ok, 0, "write", Value::from("a"))).unwrap();
        w.flush().unwrap();
        let h = History::read_jsonl(&path).unwrap();
        assert_eq!(h.events.len(), 2);
        assert_eq!(h.events[1].index, 1);
        assert_eq!(h.events[1].kind, EventKind::Ok);
        assert!(!h.truncated_tail);
    }

    #[test]
    fn given_torn_last_line_when_read_should_skip_it_and_flag_truncation() {
        let dir = test_dir();
        let path = dir.join("h.jsonl");
        std::fs::write(
            &path,
            "{\"index\":0,\"time_ns\":1,\"kind\":\"meta\",\"f\":\"start\"}\n{\"index\":1,\"ti",
        )
        .unwrap();
        let h = History::read_jsonl(&path).unwrap();
        assert_eq!(h.events.len(), 1);
        assert!(h.truncated_tail);
    }

    #[test]
    fn given_bad_interior_line_when_read_should_name_line_and_column() {
        let dir = test_dir();
        let path = dir.join("h.jsonl");
        std::fs::write(
            &path,
            "{\"index\":0,\"time_ns\":1,\"kind\":\"bogus\",\"f\":\"x\"}\n{}\n",
        )
        .unwrap();
        let err = History::read_jsonl(&path).unwrap_err().to_string();
        assert!(err.contains(":1:"), "{err}");
    }

    fn test_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "faultline-history-test-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }
}
