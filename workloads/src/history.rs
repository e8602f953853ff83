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
//!
//! # The vocabulary
//!
//! Fault, lifecycle and meta events are named by one typed vocabulary, [`Lifecycle`], [`Nemesis`], [`Meta`] and [`Observation`]: the
//! harness and the fault families write through it and the checkers and reports match through it
//! ([`Event::name`], [`Event::is`]), so a misspelled name is a compile error on both sides. The names, exactly as
//! they appear in `f`:
//!
//! - `lifecycle`: `start`, `boot-ok`, `boot-timeout`, `boot-refused`, `crashed`, `setup-failed`, `cluster-ready`,
//!   `fault-phase-end`, `final-phase`, `recovered`, `recovery-timeout`, `converged`, `convergence-timeout`,
//!   `final-reads`, `restart-all`, `kill`, `verify-ok`, `verify-refused`, `verify-error`, `wipe`, `wipe-skipped`,
//!   `wipe-failed`, `teardown`, `host-link-lost`, `host-link-restored`, `host-link-failed`
//! - `nemesis`: `kill`, `pause`, `resume`, `power-loss`, `start`, `stop`, `corrupt`, `clock`, `clock-heal`,
//!   `partition-start`, `partition-stop`, `link-fault`, `link-heal`, `io-fault-start`, `io-fault-stop`,
//!   `disk-surgery`, `rolling-ready`, `trigger`, `fault-skipped`, `membership`
//! - `meta`: `run-start`, `schedule`, `interrupted`, `run-end`
//! - `observation`: `status`, `last-durable`, `recovered`, `log`, `members`
//!
//! On the wire `f` stays a plain string, and that is a choice, not a leftover. A name means something only together
//! with its kind (`start` and `kill` are both a lifecycle and a nemesis name, with different meanings), so the typed
//! view is the pair, [`Name`], read from `kind` and `f` together; keeping the two fields as they were keeps every
//! `history.jsonl` byte-identical. And a history is evidence: `faultline analyze` must still load one whose `f` this
//! build does not know (written by an older or newer faultline, imported from a Jepsen history whose nemesis `f` is
//! Jepsen's own, or edited by hand), show it as written and judge the rest, not refuse the whole file. Such an event
//! has no [`Name`] and no matcher takes it for a known one. Client operations keep their workload's own `f` (`read`,
//! `write`, `cas`, `append`, `add`): the workload and its model define those, not this vocabulary.

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
    /// What the harness saw a node report (its status, what it knew before it stopped, what it booted with).
    Observation,
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

/// Declares one kind's names: the enum, its exact strings (`as_str`, and `ALL` in declaration order) and its serde
/// form. Serde derives kebab-case from the variant names independently of the literals here; the tests check that
/// both agree with each other and with the module doc.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every name of this kind, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name exactly as it appears in a history's `f`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The name whose string is `text`, if there is one.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl From<$name> for Name {
            fn from(name: $name) -> Name {
                Name::$name(name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names! {
    /// Names of `lifecycle` events: what the harness did to a node or the cluster, and what it saw them do.
    Lifecycle {
        /// A node was started (details: pid, or the error).
        Start => "start",
        /// A started node became ready.
        BootOk => "boot-ok",
        /// A started node was not ready within the boot timeout.
        BootTimeout => "boot-timeout",
        /// A node exited before it was ready with the system's boot-refusal line in its log.
        BootRefused => "boot-refused",
        /// A node exited on its own.
        Crashed => "crashed",
        /// The cluster never became ready, or the client could not work at all (value `{reason: "client", error}`,
        /// the fault phase stopped early); nothing after it was run.
        SetupFailed => "setup-failed",
        /// Every node booted and (when the system has one) a primary is known.
        ClusterReady => "cluster-ready",
        /// The fault phase ended and every fault was healed.
        FaultPhaseEnd => "fault-phase-end",
        /// The final phase began.
        FinalPhase => "final-phase",
        /// A recovery probe write was acknowledged.
        Recovered => "recovered",
        /// No recovery probe write was acknowledged within the bound.
        RecoveryTimeout => "recovery-timeout",
        /// Every live node reported the same commit point.
        Converged => "converged",
        /// The live nodes did not agree on a commit point within the bound.
        ConvergenceTimeout => "convergence-timeout",
        /// The final reads (labelled `after-heal` or `after-restart-all`) began.
        FinalReads => "final-reads",
        /// The final phase's restart of every node began.
        RestartAll => "restart-all",
        /// A node was kill -9ed by the restart-all (a fault-phase kill is a nemesis event).
        Kill => "kill",
        /// The system's offline WAL verification accepted a stopped node's data.
        VerifyOk => "verify-ok",
        /// The offline verification refused a stopped node's data.
        VerifyRefused => "verify-refused",
        /// The offline verification could not run or timed out.
        VerifyError => "verify-error",
        /// A node that refused to boot was wiped, to recover from its peers.
        Wipe => "wipe",
        /// A refused node was not wiped: too few nodes booted on their own data.
        WipeSkipped => "wipe-skipped",
        /// Wiping a refused node failed.
        WipeFailed => "wipe-failed",
        /// Every node was stopped at the end of the run.
        Teardown => "teardown",
        /// The SSH connection to a node's host dropped; its agent keeps the node running while faultline reattaches.
        HostLinkLost => "host-link-lost",
        /// A dropped connection to a node's host was reattached (value: `after_ms`, `attempts`, `resent`).
        HostLinkRestored => "host-link-restored",
        /// A dropped connection to a node's host could not be reattached in time: the host is lost (value: `error`).
        HostLinkFailed => "host-link-failed",
    }
}

names! {
    /// Names of `nemesis` events: a fault started or stopped, with its exact details.
    Nemesis {
        /// A process fault SIGKILLed a node.
        Kill => "kill",
        /// A process fault SIGSTOPped a node.
        Pause => "pause",
        /// A paused node was SIGCONTed.
        Resume => "resume",
        /// A node was killed and lost what it had not fsynced.
        PowerLoss => "power-loss",
        /// A killed node was started again when its fault ended.
        Start => "start",
        /// A node was asked to stop (SIGTERM or its adapter's stop command) and ended, on its own within the grace
        /// or killed after it. Value: `{signal | command, ended: "exited 0 after 1.2 s" | "killed after the grace
        /// (10 s)", exit, after_ms, killed}`.
        Stop => "stop",
        /// A live node was taken down (`stop`: kill, power-loss or graceful) for its files to be cut while the
        /// others go on; the cuts follow as `disk-surgery` events with the same `fault_id`.
        Corrupt => "corrupt",
        /// A clock fault moved a node's clock (libfaketime). Value: `{fault_id, target, source, clock: {kind: bump |
        /// strobe | skew, offset_ms | delta_ms, period_ms | rate}, file}`; a strobe is recorded once, not per flip.
        Clock => "clock",
        /// A clock fault ended: the node's clock is real time again. Value: `{fault_id, clock: "real",
        /// offset_ms_before?, rate_before?}`.
        ClockHeal => "clock-heal",
        /// A network partition (a grudge) was applied.
        PartitionStart => "partition-start",
        /// The partition was healed.
        PartitionStop => "partition-stop",
        /// A link fault (delay, loss, corruption ...) was set on some links.
        LinkFault => "link-fault",
        /// A link fault was cleared.
        LinkHeal => "link-heal",
        /// A window of injected I/O errors opened on a node's fault filesystem.
        IoFaultStart => "io-fault-start",
        /// The I/O fault window closed.
        IoFaultStop => "io-fault-stop",
        /// A stopped node's files were cut (the exact bytes before and after are in the value).
        DiskSurgery => "disk-surgery",
        /// A rolling fault (`targets: each`) waited for the node it restarted to be ready again before the next
        /// goes down. Value: `{fault_id, rolling: {step, of, down_ms}, waited_ms, booted_ms?, caught_up?}`, or an
        /// `error` saying why the node was not ready within the bound (the fault went on).
        RollingReady => "rolling-ready",
        /// A plan trigger's condition held and it acted (or declined). Node: the condition's subject, if any. Value:
        /// `{trigger, condition, subject?, action, delay_ms, latency_ms?, fault_id?, skipped?}`; `latency_ms` is the
        /// time from the observation that fired it to the fault, less the drawn `delay_ms`.
        Trigger => "trigger",
        /// A scheduled fault (random or scripted) did nothing: its target did not resolve (`targets: primary` with no
        /// primary known), its nodes were held by other faults, or another partition was in force. Node: none.
        /// Value: `{fault_id, family: process | network, reason, kind? | shape?, target?, source?}`. A trigger's skips
        /// are in its `trigger` event instead.
        FaultSkipped => "fault-skipped",
        /// A membership change (`kind: membership`) added or removed the node (a `replace` is a `remove` step, then
        /// an `add` step of the same `fault_id`). Value: `{fault_id, target, source, change: add | remove | replace,
        /// step: add | remove, outcome: ok | fail | info | skipped, error?, duration_ms, members, members_before}`
        /// (`members`: the member names after the step, as the adapter lists them).
        Membership => "membership",
    }
}

names! {
    /// Names of `observation` events: what the harness saw a node report, recorded so that triggers, coverage and the
    /// durability check can be explained and re-checked from the store alone.
    Observation {
        /// A node's status changed (role, view, primary), or its progress moved and the last record is a second old.
        /// Value: `{role, primary?, view?, durable?, progress{...}}` (numbers the adapter reads from the status).
        Status => "status",
        /// A node stopped (killed, lost power, crashed): the durable progress it had last reported, settled as its
        /// adapter says. Value: `{durable, age_ms, cause, pid}` (`pid`: the stopped process; `cause`: `kill`,
        /// `power-loss`, `restart-all`, `crashed`, `refused`).
        LastDurable => "last-durable",
        /// A restarted node said what it booted with (its own boot log line). Value: `{recovered, line, pid}`
        /// (`pid`: the booted process; the durability check pairs it with the stop of the process before it).
        Recovered => "recovered",
        /// A node's log had a line matching a pattern its adapter names (`repairing`, `view-change`). Value:
        /// `{pattern, line}`.
        Log => "log",
        /// Who the members of the cluster are: at the start (`source: plan`) and after every membership change
        /// (`source: list`, as the adapter lists them). Value: `{members, source}`; the checks read the member set
        /// at each moment from these.
        Members => "members",
    }
}

names! {
    /// Names of `meta` events: facts about the run itself.
    Meta {
        /// The first line: plan digest, seed, binaries, versions, the wall-clock anchor.
        RunStart => "run-start",
        /// The generated fault schedules of the fault phase, recorded as the phase starts: the zero of the phase
        /// clock ([`History::phase_start_ns`]).
        Schedule => "schedule",
        /// The harness was stopped by SIGINT/SIGTERM.
        Interrupted => "interrupted",
        /// The last line: the run finished (possibly interrupted).
        RunEnd => "run-end",
    }
}

/// A vocabulary name together with its kind: the typed view of a fault, lifecycle or meta event's `kind` and `f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Name {
    /// A `lifecycle` event.
    Lifecycle(Lifecycle),
    /// A `nemesis` event.
    Nemesis(Nemesis),
    /// A `meta` event.
    Meta(Meta),
    /// An `observation` event.
    Observation(Observation),
}

impl Name {
    /// The event kind this name belongs to.
    pub fn kind(self) -> EventKind {
        match self {
            Name::Lifecycle(_) => EventKind::Lifecycle,
            Name::Nemesis(_) => EventKind::Nemesis,
            Name::Meta(_) => EventKind::Meta,
            Name::Observation(_) => EventKind::Observation,
        }
    }

    /// The name exactly as it appears in `f`.
    pub fn as_str(self) -> &'static str {
        match self {
            Name::Lifecycle(name) => name.as_str(),
            Name::Nemesis(name) => name.as_str(),
            Name::Meta(name) => name.as_str(),
            Name::Observation(name) => name.as_str(),
        }
    }

    /// The name of kind `kind` spelled `f`; `None` for client kinds and unknown names.
    pub fn parse(kind: EventKind, f: &str) -> Option<Name> {
        match kind {
            EventKind::Lifecycle => Lifecycle::parse(f).map(Name::Lifecycle),
            EventKind::Nemesis => Nemesis::parse(f).map(Name::Nemesis),
            EventKind::Meta => Meta::parse(f).map(Name::Meta),
            EventKind::Observation => Observation::parse(f).map(Name::Observation),
            EventKind::Invoke | EventKind::Ok | EventKind::Fail | EventKind::Info => None,
        }
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
    /// A fault, lifecycle or meta event named `name` (index and time are assigned when it is recorded).
    pub fn named(name: impl Into<Name>, node: Option<String>, value: Value) -> Event {
        let name = name.into();
        Event {
            index: 0,
            time_ns: 0,
            kind: name.kind(),
            process: None,
            worker: None,
            node,
            f: name.as_str().to_string(),
            key: None,
            value,
            error: None,
        }
    }

    /// The vocabulary name of a fault, lifecycle or meta event; `None` for client events and for names this build does
    /// not know.
    pub fn name(&self) -> Option<Name> {
        Name::parse(self.kind, &self.f)
    }

    /// True when this event is `name`: its kind and its `f` both match.
    pub fn is(&self, name: impl Into<Name>) -> bool {
        let name = name.into();
        self.kind == name.kind() && self.f == name.as_str()
    }

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

/// `time_ns` on the phase clock that starts at `phase_start_ns` (see [`History::phase_start_ns`]): `17.00 s`.
pub fn phase_time(time_ns: u64, phase_start_ns: u64) -> String {
    let seconds = (i128::from(time_ns) - i128::from(phase_start_ns)) as f64 / 1e9;
    format!("{seconds:.2} s")
}

impl History {
    /// When the fault phase began (ns since the run started): the zero of the clock a plan's `at:` and `faultline plan
    /// --schedule` count on. Every time a check or the report shows a person is on this clock, so a cut a plan puts
    /// `at: 17s` reads as at 17 s; events of the set-up before it read as negative. 0 for a history without a fault
    /// phase (an imported one): its times read from its start.
    pub fn phase_start_ns(&self) -> u64 {
        self.events
            .iter()
            .find(|e| e.is(Meta::Schedule))
            .map_or(0, |e| e.time_ns)
    }

    /// `time_ns` on the phase clock ([`History::phase_start_ns`]), as a person reads it: `17.00 s`, `-1.25 s`.
    pub fn phase_time(&self, time_ns: u64) -> String {
        phase_time(time_ns, self.phase_start_ns())
    }

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

    /// The names the module doc lists for `kind` (its `- `kind`: ...` item, which may wrap).
    fn documented(kind: &str) -> Vec<String> {
        let doc: Vec<&str> = include_str!("history.rs")
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| l.trim_start_matches("//!").trim())
            .collect();
        let head = format!("- `{kind}`:");
        let start = doc
            .iter()
            .position(|l| l.starts_with(&head))
            .expect("the doc lists the kind");
        let mut text = doc[start][head.len()..].to_string();
        for line in &doc[start + 1..] {
            if line.is_empty() || line.starts_with("- ") {
                break;
            }
            text.push_str(line);
        }
        text.split(',')
            .map(|n| n.trim().trim_matches('`').to_string())
            .collect()
    }

    fn check_names<N: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + Copy>(
        kind: &str,
        all: &[N],
        as_str: fn(N) -> &'static str,
        parse: fn(&str) -> Option<N>,
    ) {
        let mut strings = Vec::new();
        for &name in all {
            let text = as_str(name);
            assert_eq!(serde_json::to_string(&name).unwrap(), format!("\"{text}\""), "{name:?}");
            assert_eq!(serde_json::from_str::<N>(&format!("\"{text}\"")).unwrap(), name);
            assert_eq!(parse(text), Some(name));
            strings.push(text.to_string());
        }
        assert_eq!(strings, documented(kind), "the {kind} names and the module doc differ");
    }

    #[test]
    fn given_every_vocabulary_name_when_serialized_should_be_the_exact_string_the_module_doc_lists() {
        check_names("lifecycle", Lifecycle::ALL, Lifecycle::as_str, Lifecycle::parse);
        check_names("nemesis", Nemesis::ALL, Nemesis::as_str, Nemesis::parse);
        check_names("meta", Meta::ALL, Meta::as_str, Meta::parse);
        check_names("observation", Observation::ALL, Observation::as_str, Observation::parse);
    }

    #[test]
    fn given_a_named_event_when_written_should_be_the_line_it_always_was_and_read_back_by_kind_and_name() {
        let event = Event::named(Lifecycle::BootOk, Some("n2".into()), serde_json::json!({"pid": 7}));
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"index":0,"time_ns":0,"kind":"lifecycle","node":"n2","f":"boot-ok","value":{"pid":7}}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back.name(), Some(Name::Lifecycle(Lifecycle::BootOk)));
        assert!(back.is(Lifecycle::BootOk));
        assert!(!back.is(Nemesis::Kill));
        // The same spelling under another kind is another name.
        let kill = Event::named(Nemesis::Kill, None, Value::Null);
        assert!(kill.is(Nemesis::Kill) && !kill.is(Lifecycle::Kill));
    }

    #[test]
    fn given_a_name_this_build_does_not_know_when_read_should_load_with_no_name() {
        let line = r#"{"index":0,"time_ns":1,"kind":"lifecycle","f":"some-future-event"}"#;
        let event: Event = serde_json::from_str(line).unwrap();
        assert_eq!(event.f, "some-future-event");
        assert_eq!(event.name(), None);
        let client: Event =
            serde_json::from_str(r#"{"index":1,"time_ns":2,"kind":"ok","process":0,"f":"start"}"#).unwrap();
        assert_eq!(
            client.name(),
            None,
            "a client op's f is the workload's, not the vocabulary's"
        );
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
