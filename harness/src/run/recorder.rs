//! The run's history recorder: one append-only JSONL file, every line flushed as it is written, so a crashed run
//! still leaves a readable history. Time is monotonic nanoseconds since the run started.

use faultline_workloads::history::{Event, HistoryWriter, Lifecycle, Meta, Nemesis, Observation};
use serde_json::Value;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Shared handle to the history file.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<HistoryWriter<BufWriter<File>>>>,
    started: Instant,
}

impl Recorder {
    /// Creates `path` (it must not exist yet).
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Recorder {
            inner: Arc::new(Mutex::new(HistoryWriter::new(BufWriter::new(file)))),
            started: Instant::now(),
        })
    }

    /// Nanoseconds since the run started.
    pub fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    /// Appends `event` (its index and time are assigned here) and flushes it. Returns the event's index.
    pub fn record(&self, mut event: Event) -> u64 {
        let mut writer = self.inner.lock().expect("history writer poisoned");
        // Time is taken under the lock, so times never go backwards along the file.
        event.time_ns = self.now_ns();
        let index = writer
            .append(event)
            .unwrap_or_else(|e| panic!("cannot write the history: {e}"));
        writer
            .flush()
            .unwrap_or_else(|e| panic!("cannot flush the history: {e}"));
        index
    }

    /// Records a lifecycle event of a node (or of the cluster, with no node).
    pub fn lifecycle(&self, name: Lifecycle, node: Option<&str>, value: Value) -> u64 {
        self.record(Event::named(name, node.map(str::to_string), value))
    }

    /// Records a nemesis event (on a node, or on the network with no node).
    pub fn nemesis(&self, name: Nemesis, node: Option<&str>, value: Value) -> u64 {
        self.record(Event::named(name, node.map(str::to_string), value))
    }

    /// Records what the harness saw a node report.
    pub fn observation(&self, name: Observation, node: Option<&str>, value: Value) -> u64 {
        self.record(Event::named(name, node.map(str::to_string), value))
    }

    /// Records a meta event.
    pub fn meta(&self, name: Meta, value: Value) -> u64 {
        self.record(Event::named(name, None, value))
    }
}
