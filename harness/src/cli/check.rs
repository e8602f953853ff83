//! `faultline check`: a history file checked for linearizability against a model.

use super::{parse_millis, Ended, Failed, Outcome};
use clap::ValueEnum;
use faultline_faults::units::Millis;
use std::path::{Path, PathBuf};

/// `faultline check` arguments.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// History file.
    pub file: PathBuf,
    /// Model to check against.
    #[arg(long, value_enum, default_value_t = ModelArg::CasRegister)]
    pub model: ModelArg,
    /// History format (default: recognised from the file's first line).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Wall-time budget; past it the verdict is unknown.
    #[arg(long, value_parser = parse_millis, default_value = "30s")]
    pub timeout: Millis,
    /// Print the linearizability result (as results.json holds it) on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

/// `faultline check`.
pub(super) fn command(args: CheckArgs) -> Outcome {
    check_command(&args.file, args.model, args.format, args.timeout)
}

/// `faultline check --model`: the linearizability models (see `faultline_workloads::ModelKind`).
#[derive(Clone, Copy, ValueEnum)]
pub enum ModelArg {
    /// A register per key: read, write, cas.
    #[value(alias = "register", alias = "cas")]
    CasRegister,
    /// Porcupine's key-value store: get, put, append.
    Kv,
    /// An append-only log per key: append returns the offset, read returns entries.
    #[value(alias = "log")]
    AppendLog,
}

impl From<ModelArg> for faultline_workloads::ModelKind {
    fn from(model: ModelArg) -> Self {
        match model {
            ModelArg::CasRegister => faultline_workloads::ModelKind::CasRegister,
            ModelArg::Kv => faultline_workloads::ModelKind::Kv,
            ModelArg::AppendLog => faultline_workloads::ModelKind::AppendLog,
        }
    }
}

/// `faultline check --format`: the history formats (see `faultline_workloads::Format`).
#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// faultline's JSONL history (what `faultline run` writes).
    #[value(alias = "faultline")]
    Jsonl,
    /// Jepsen EDN op maps, one per line or in a vector (also Porcupine's kv logs).
    #[value(alias = "jepsen", alias = "porcupine-kv")]
    Edn,
    /// Jepsen's jepsen.util log lines (also Porcupine's etcd logs).
    #[value(alias = "log", alias = "porcupine-etcd")]
    JepsenLog,
}

impl From<FormatArg> for faultline_workloads::Format {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Jsonl => faultline_workloads::Format::FaultlineJsonl,
            FormatArg::Edn => faultline_workloads::Format::JepsenEdn,
            FormatArg::JepsenLog => faultline_workloads::Format::JepsenLog,
        }
    }
}

fn check_command(file: &Path, model: ModelArg, format: Option<FormatArg>, timeout: Millis) -> Outcome {
    use faultline_workloads::{HistoryError, LoadError};
    if !file.is_file() {
        return Err(Failed::bad_input(format!(
            "faultline check: no history file {}",
            file.display()
        )));
    }
    let history = faultline_workloads::load_history_file(file, format.map(Into::into)).map_err(|e| {
        let io = matches!(e, LoadError::Io { .. } | LoadError::Jsonl(HistoryError::Io { .. }));
        let message = format!("faultline check: {e}");
        if io {
            Failed::harness(message)
        } else {
            Failed::bad_input(message)
        }
    })?;
    let options = faultline_workloads::CheckOptions {
        timeout: timeout.duration(),
        ..Default::default()
    };
    let result = faultline_workloads::check_history(&history, model.into(), &options);
    print!("{}", faultline_workloads::render_text(&result));
    Ok(Ended::with(result.verdict.exit_code() as u8, &result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_model_choice_when_parsed_by_the_workloads_crate_should_name_the_same_model() {
        for model in ModelArg::value_variants() {
            let name = model
                .to_possible_value()
                .expect("no hidden models")
                .get_name()
                .to_string();
            let kind: faultline_workloads::ModelKind = name.parse().expect("workloads knows every CLI model name");
            assert_eq!(kind, faultline_workloads::ModelKind::from(*model), "{name}");
            assert_eq!(kind.name(), name, "the CLI spells the model as results do");
        }
    }

    #[test]
    fn given_every_format_choice_when_parsed_by_the_workloads_crate_should_name_the_same_format() {
        for format in FormatArg::value_variants() {
            let value = format.to_possible_value().expect("no hidden formats");
            for name in value.get_name_and_aliases() {
                let parsed: faultline_workloads::Format = name.parse().expect("workloads knows every CLI format name");
                assert_eq!(parsed, faultline_workloads::Format::from(*format), "{name}");
            }
        }
    }
}
