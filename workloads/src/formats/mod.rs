//! Reading histories from disk in any supported format into the one [`History`] type, so one checker serves all.
//!
//! Formats: faultline JSONL (what the harness writes), Jepsen EDN (one op map per line or a vector of them; Porcupine's
//! kv logs are of this kind), the same op maps in JSON (what the Elle and Knossos command-line wrappers read), and
//! Jepsen's `jepsen.util` log lines (Porcupine's etcd logs). Every reader ends in the one [`History`] type, so the
//! checkers, `faultline run` and `faultline check FILE` all read the same thing.

pub mod edn;
mod jepsen;
mod json;

use crate::history::{History, HistoryError};
use std::path::Path;

/// A history file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// faultline's JSONL: one [`crate::history::Event`] per line.
    FaultlineJsonl,
    /// Jepsen EDN op maps, e.g. `{:process 0, :type :invoke, :f :write, :value 3}` (also Porcupine's kv logs).
    JepsenEdn,
    /// Jepsen op maps in JSON, one per line or in an array, e.g. `{"process":0,"type":"invoke","f":"write","value":3}`
    /// (the form elle-cli and other wrappers of Elle and Knossos read).
    JepsenJson,
    /// Jepsen log lines, e.g. `INFO  jepsen.util - 0 :invoke :read nil`, tab-separated (Porcupine's etcd logs).
    JepsenLog,
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jsonl" | "faultline" => Ok(Format::FaultlineJsonl),
            "edn" | "jepsen" | "porcupine-kv" => Ok(Format::JepsenEdn),
            "json" | "jepsen-json" | "elle-json" => Ok(Format::JepsenJson),
            "log" | "jepsen-log" | "porcupine-etcd" => Ok(Format::JepsenLog),
            other => Err(format!(
                "unknown history format {other:?}: expected jsonl, edn, json or jepsen-log"
            )),
        }
    }
}

/// Errors loading a history file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read history {path}: {source}")]
    Io {
        /// File path.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file is not a well-formed history of its format.
    #[error("{path}:{line}:{column}: {message}")]
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
    /// The format could not be recognised from the file's first line.
    #[error("{path}:{line}:1: cannot tell the history format from {first:?} (expected faultline JSONL, Jepsen EDN, Jepsen JSON or jepsen.util log lines; pass the format with --format)")]
    UnknownFormat {
        /// File path.
        path: String,
        /// 1-based line of the first non-blank line.
        line: usize,
        /// Its first characters.
        first: String,
    },
    /// A faultline JSONL history failed to load.
    #[error(transparent)]
    Jsonl(#[from] HistoryError),
}

/// Guesses the format from the first non-blank line; `None` for an empty text.
///
/// A JSON object or array is faultline's JSONL when its first object has faultline's `kind` and `time_ns`, Jepsen
/// JSON otherwise (Jepsen's ops have `type`); `{:`, `[{:`, `(`, `#` and `;` start EDN.
pub fn sniff_format(text: &str) -> Option<Result<Format, (usize, String)>> {
    let (n, line) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty())?;
    let trimmed = line.trim_start();
    let compact: String = trimmed.chars().filter(|c| !c.is_whitespace()).take(3).collect();
    Some(if compact.starts_with("{\"") {
        let faultline = serde_json::from_str::<serde_json::Value>(trimmed)
            .is_ok_and(|first| first.get("kind").is_some() && first.get("time_ns").is_some());
        Ok(if faultline {
            Format::FaultlineJsonl
        } else {
            Format::JepsenJson
        })
    } else if compact == "[{\"" || compact == "[" && text.trim_start()[1..].trim_start().starts_with("{\"") {
        Ok(Format::JepsenJson)
    } else if trimmed.contains("jepsen.util - ") {
        Ok(Format::JepsenLog)
    } else if trimmed.starts_with(['{', '[', '(', '#', ';']) {
        Ok(Format::JepsenEdn)
    } else {
        Err((n + 1, trimmed.chars().take(60).collect()))
    })
}

/// Loads a history file, in `format` or else the format its first line shows. An empty file is an empty history.
///
/// Jepsen `:fail :cas` operations read from log lines are marked as cas mismatches
/// ([`crate::models::cas_register::CAS_MISMATCH_ERROR`]), the reading Porcupine gives Jepsen's etcd logs; in EDN
/// and JSONL histories a failed operation is one that did not take effect.
pub fn load_history_file(path: &Path, format: Option<Format>) -> Result<History, LoadError> {
    let shown = path.display().to_string();
    if format == Some(Format::FaultlineJsonl) {
        return Ok(History::read_jsonl(path)?);
    }
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: shown.clone(),
        source,
    })?;
    let format = match format {
        Some(f) => f,
        None => match sniff_format(&text) {
            None => return Ok(History::default()),
            Some(Ok(f)) => f,
            Some(Err((line, first))) => {
                return Err(LoadError::UnknownFormat {
                    path: shown,
                    line,
                    first,
                })
            }
        },
    };
    let parsed = match format {
        Format::FaultlineJsonl => {
            // Read again line by line: the text was only for telling the format.
            drop(text);
            return Ok(History::read_jsonl(path)?);
        }
        Format::JepsenEdn => jepsen::read_edn_history(&text),
        Format::JepsenJson => json::read_json_ops(&text).and_then(|ops| jepsen::to_events(ops, false)),
        Format::JepsenLog => jepsen::read_log_ops(&text).and_then(|ops| jepsen::to_events(ops, true)),
    };
    parsed
        .map(|events| History {
            events,
            truncated_tail: false,
        })
        .map_err(|e| LoadError::Parse {
            path: shown,
            line: e.line,
            column: e.column,
            message: e.message,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventKind;

    fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("faultline-formats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write temp file");
        path
    }

    #[test]
    fn given_jepsen_log_lines_when_loaded_should_pair_kinds_and_mark_failed_cas() {
        let path = write_temp(
            "etcd.log",
            "INFO  jepsen.util - 0\t:invoke\t:cas\t[1 2]\nnoise\nINFO  jepsen.util - 0\t:fail\t:cas\t[1 2]\n",
        );
        let h = load_history_file(&path, None).unwrap();
        assert_eq!(h.events.len(), 2);
        assert_eq!(h.events[0].value, serde_json::json!([1, 2]));
        assert_eq!(h.events[1].kind, EventKind::Fail);
        assert_eq!(h.events[1].error.as_deref(), Some("cas-mismatch"));
    }

    #[test]
    fn given_independent_edn_tuples_when_loaded_should_split_key_and_value() {
        let path = write_temp(
            "indep.edn",
            "{:process 0, :type :invoke, :f :cas, :value [3 [1 2]]}\n{:process 0, :type :ok, :f :cas, :value [3 [1 2]]}\n{:process :nemesis, :type :info, :f :start, :value nil}\n",
        );
        let h = load_history_file(&path, None).unwrap();
        assert_eq!(h.events[0].key.as_deref(), Some("3"));
        assert_eq!(h.events[1].value, serde_json::json!([1, 2]));
        assert_eq!(h.events[2].kind, EventKind::Nemesis);
    }

    #[test]
    fn given_malformed_edn_when_loaded_should_name_file_line_and_column() {
        let path = write_temp(
            "bad.edn",
            "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 1, :type :invoke, :f :read, :value [1 2}\n",
        );
        let err = load_history_file(&path, None).unwrap_err().to_string();
        assert!(err.contains("bad.edn:2:"), "{err}");
    }

    #[test]
    fn given_empty_file_when_loaded_should_be_empty_history() {
        let path = write_temp("empty.log", "");
        assert!(load_history_file(&path, None).unwrap().events.is_empty());
    }

    /// Every field of the wrong type is bad input, named at its line and column with what was expected: never an op
    /// dropped and a verdict given on what is left.
    #[test]
    fn given_a_field_of_the_wrong_type_when_loaded_should_refuse_it_where_it_is() {
        let ok = r#"{"type":"invoke","f":"read","process":0,"time":1,"value":null}"#;
        for (name, bad, expected) in [
            (
                "process-object",
                r#"{"type":"ok","f":"read","process":{"id":0},"time":2}"#,
                "a :process must be",
            ),
            (
                "process-text",
                r#"{"type":"ok","f":"read","process":"0","time":2}"#,
                "a :process of \"0\" is text",
            ),
            (
                "time-text",
                r#"{"type":"ok","f":"read","process":0,"time":"2"}"#,
                "a :time must be a whole number",
            ),
            (
                "time-negative",
                r#"{"type":"ok","f":"read","process":0,"time":-2}"#,
                "a :time must be a whole number",
            ),
            (
                "txn-text",
                r#"{"type":"invoke","f":"txn","process":1,"time":2,"value":"r x"}"#,
                "a :txn op's :value",
            ),
            (
                "type-number",
                r#"{"type":3,"f":"read","process":0,"time":2}"#,
                "a :type must be :invoke",
            ),
            (
                "f-map",
                r#"{"type":"ok","f":{"x":1},"process":0,"time":2}"#,
                "an :f must be a name",
            ),
            (
                "index-text",
                r#"{"type":"ok","f":"read","process":0,"time":2,"index":"1"}"#,
                "an :index must be",
            ),
        ] {
            let path = write_temp(&format!("{name}.json"), &format!("{ok}\n{bad}\n"));
            let err = load_history_file(&path, None)
                .map(|h| h.events.len())
                .expect_err(name)
                .to_string();
            assert!(err.contains(&format!("{name}.json:2:1: ")), "{name}: {err}");
            assert!(err.contains(expected), "{name}: {err}");
        }
        // A named process is a fault's, as Jepsen writes it.
        let path = write_temp(
            "nemesis.json",
            &format!(
                "{ok}\n{}\n",
                r#"{"type":"info","f":"start","process":"nemesis","time":2}"#
            ),
        );
        let history = load_history_file(&path, None).expect("a nemesis op is good input");
        assert_eq!(history.events[1].kind, EventKind::Nemesis);
    }
}
