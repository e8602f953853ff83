//! `faultline check`'s arguments: the file, its model and format, and each model's options, named as Elle, Knossos
//! and Jepsen's wrappers name them.

use crate::cli::parse_millis;
use clap::ValueEnum;
use faultline_faults::units::Millis;
use faultline_workloads::bank_check::BankCheckOptions;
use faultline_workloads::checker::{HistoryModel, ModelOptions};
use faultline_workloads::linearizability::ExplainKeys;
use faultline_workloads::txn_check::ConsistencyModel;
use std::path::PathBuf;

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
    /// Linearizability models: wall-time budget; past it the verdict is unknown.
    #[arg(long, value_parser = parse_millis, default_value = "30s")]
    pub timeout: Millis,
    /// list-append, rw-register: the models the history must satisfy, comma-separated, by Elle's names
    /// (strict-serializable, serializable, snapshot-isolation, repeatable-read, read-committed,
    /// strong-session-serializable, ...; `none` for only --anomalies). Default: strict-serializable.
    #[arg(long, value_delimiter = ',')]
    pub consistency_models: Vec<String>,
    /// list-append, rw-register: anomalies to look for beside the models, comma-separated, by Elle's names (G0, G1,
    /// G1c, G-single, G2, G2-item, lost-update, internal, G1c-realtime, ...).
    #[arg(long, value_delimiter = ',')]
    pub anomalies: Vec<String>,
    /// rw-register: assume a transaction's write of a key follows its read of it (Elle's wfr-keys), which orders
    /// the versions further.
    #[arg(long)]
    pub wfr_keys: bool,
    /// rw-register: take a read of a value no transaction in the history wrote as the key's value from before the
    /// history, as Elle's rw-register does (Elle's verdict). By default faultline reports it as a garbage read.
    #[arg(long)]
    pub unwritten_reads_initial: bool,
    /// set-full: the set is linearizable, so a read that misses an element it should have seen is invalid (stale).
    #[arg(long)]
    pub linearizable: bool,
    /// bank: the total every read must sum to (default: announced by the history's reads, else the first read's).
    #[arg(long)]
    pub total: Option<i64>,
    /// bank: the accounts, comma-separated (default: announced by the history's reads, else the first read's).
    #[arg(long, value_delimiter = ',')]
    pub accounts: Vec<String>,
    /// bank: balances may go negative.
    #[arg(long)]
    pub negative_balances: bool,
    /// long-fork: the number of keys each read reads (every read must read that many).
    #[arg(long)]
    pub group_size: Option<usize>,
    /// Linearizability models: print the full explanation of each of these failing keys, comma-separated, or of
    /// every failing key with `all` (by default the first is explained and the others get one line each). With it,
    /// every failing key is explained in results.json too, not only the first 50.
    #[arg(long, value_delimiter = ',', value_name = "KEYS")]
    pub explain_keys: Vec<String>,
    /// Write the history (as faultline JSONL), results.json and report.html into this folder, as a run's store
    /// folder holds them.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Print the check's result object on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

/// `faultline check --model`: every model (see `faultline_workloads::checker::HistoryModel`).
#[derive(Clone, Copy, ValueEnum)]
pub enum ModelArg {
    /// Knossos's cas-register, one per key: read, write, cas (linearizability).
    #[value(alias = "register", alias = "cas")]
    CasRegister,
    /// Porcupine's key-value store: get, put, append (linearizability).
    Kv,
    /// An append-only log per key: append returns the offset, read returns entries (linearizability).
    #[value(alias = "log")]
    AppendLog,
    /// Knossos's mutex: acquire, release (linearizability).
    #[value(alias = "lock")]
    Mutex,
    /// Elle's list-append transactions: isolation anomalies and the models they rule out.
    ListAppend,
    /// Elle's rw-register transactions: isolation anomalies and the models they rule out.
    RwRegister,
    /// Jepsen's set: adds against the final read (lost, unexpected, recovered).
    Set,
    /// Jepsen's set-full: adds against every read (lost, stale, never read, latencies).
    SetFull,
    /// Jepsen's counter: reads within what was certainly and possibly added.
    Counter,
    /// Jepsen's bank: every read sums to the total, no negative balance.
    Bank,
    /// Jepsen's long fork: inserts seen in one order by every reader.
    LongFork,
}

impl From<ModelArg> for HistoryModel {
    fn from(model: ModelArg) -> Self {
        match model {
            ModelArg::CasRegister => HistoryModel::CasRegister,
            ModelArg::Kv => HistoryModel::Kv,
            ModelArg::AppendLog => HistoryModel::AppendLog,
            ModelArg::Mutex => HistoryModel::Mutex,
            ModelArg::ListAppend => HistoryModel::ListAppend,
            ModelArg::RwRegister => HistoryModel::RwRegister,
            ModelArg::Set => HistoryModel::Set,
            ModelArg::SetFull => HistoryModel::SetFull,
            ModelArg::Counter => HistoryModel::Counter,
            ModelArg::Bank => HistoryModel::Bank,
            ModelArg::LongFork => HistoryModel::LongFork,
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
    /// Jepsen op maps in JSON, one per line or in an array (what elle-cli and other wrappers read).
    #[value(alias = "jepsen-json", alias = "elle-json")]
    Json,
    /// Jepsen's jepsen.util log lines (also Porcupine's etcd logs).
    #[value(alias = "log", alias = "porcupine-etcd")]
    JepsenLog,
}

impl From<FormatArg> for faultline_workloads::Format {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Jsonl => faultline_workloads::Format::FaultlineJsonl,
            FormatArg::Edn => faultline_workloads::Format::JepsenEdn,
            FormatArg::Json => faultline_workloads::Format::JepsenJson,
            FormatArg::JepsenLog => faultline_workloads::Format::JepsenLog,
        }
    }
}

impl CheckArgs {
    /// The model options the arguments give; an unknown consistency model is bad input, named with the known ones.
    pub fn options(&self) -> Result<ModelOptions, String> {
        let mut options = ModelOptions {
            timeout: self.timeout.duration(),
            anomalies: self.anomalies.clone(),
            writes_follow_reads: self.wfr_keys,
            unwritten_reads_initial: self.unwritten_reads_initial,
            linearizable_set: self.linearizable,
            bank: BankCheckOptions {
                total: self.total,
                accounts: (!self.accounts.is_empty()).then(|| self.accounts.iter().cloned().collect()),
                negative_balances: self.negative_balances,
            },
            group_size: self.group_size,
            ..ModelOptions::default()
        };
        if !self.consistency_models.is_empty() {
            options.consistency_models = self
                .consistency_models
                .iter()
                .filter(|name| name.as_str() != "none")
                .map(|name| {
                    name.parse::<ConsistencyModel>()
                        .map_err(|e| format!("faultline check: --consistency-models: {e}"))
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(options)
    }

    /// The keys `--explain-keys` asks to explain; bad input for a model that is not a linearizability one.
    pub fn explain_keys(&self) -> Result<ExplainKeys, String> {
        let model = HistoryModel::from(self.model);
        if !self.explain_keys.is_empty() && model.linearizable().is_none() {
            return Err(format!(
                "faultline check: --explain-keys explains the keys a linearizability check found failing (--model \
                 cas-register, kv, append-log or mutex), not {}",
                model.name()
            ));
        }
        Ok(ExplainKeys::from_words(&self.explain_keys))
    }

    /// The command that checks the file again.
    pub fn repro(&self) -> String {
        let model = HistoryModel::from(self.model).name();
        let mut words = vec![format!("faultline check {} --model {model}", self.file.display())];
        if let Some(format) = self.format.and_then(|f| f.to_possible_value()) {
            words.push(format!("--format {}", format.get_name()));
        }
        if self.timeout.duration() != std::time::Duration::from_secs(30) {
            words.push(format!("--timeout {}ms", self.timeout.duration().as_millis()));
        }
        if !self.consistency_models.is_empty() {
            words.push(format!("--consistency-models {}", self.consistency_models.join(",")));
        }
        if !self.anomalies.is_empty() {
            words.push(format!("--anomalies {}", self.anomalies.join(",")));
        }
        for (set, flag) in [
            (self.wfr_keys, "--wfr-keys"),
            (self.unwritten_reads_initial, "--unwritten-reads-initial"),
            (self.linearizable, "--linearizable"),
            (self.negative_balances, "--negative-balances"),
        ] {
            if set {
                words.push(flag.to_string());
            }
        }
        if let Some(total) = self.total {
            words.push(format!("--total {total}"));
        }
        if !self.accounts.is_empty() {
            words.push(format!("--accounts {}", self.accounts.join(",")));
        }
        if let Some(n) = self.group_size {
            words.push(format!("--group-size {n}"));
        }
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_model_choice_when_parsed_by_the_workloads_crate_should_name_the_same_model() {
        for model in ModelArg::value_variants() {
            let value = model.to_possible_value().expect("no hidden models");
            for name in value.get_name_and_aliases() {
                let parsed: HistoryModel = name.parse().expect("workloads knows every CLI model name");
                assert_eq!(parsed, HistoryModel::from(*model), "{name}");
            }
            assert_eq!(
                value.get_name(),
                HistoryModel::from(*model).name(),
                "the CLI spells it as results do"
            );
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

    /// The repro line gives back every option that changes the verdict: parsed again, it is the same command.
    #[test]
    fn given_every_option_when_made_a_repro_line_should_parse_back_to_the_same_options() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            check: CheckArgs,
        }
        let line = "faultline h.edn --model bank --format edn --timeout 5s --accounts a,b,c --total 30 \
                    --negative-balances";
        let args = Cli::try_parse_from(line.split_whitespace()).expect("parses").check;
        let repro = args.repro();
        for word in [
            "--format edn",
            "--timeout 5000ms",
            "--accounts a,b,c",
            "--total 30",
            "--negative-balances",
        ] {
            assert!(repro.contains(word), "{word} missing from {repro}");
        }
        let again = Cli::try_parse_from(repro.split_whitespace().skip(1))
            .expect("the repro parses")
            .check;
        assert_eq!(again.options(), args.options());
        let rw = Cli::try_parse_from(
            "faultline h.edn --model rw-register --unwritten-reads-initial --wfr-keys".split_whitespace(),
        )
        .expect("parses")
        .check;
        assert!(
            rw.repro().ends_with("--wfr-keys --unwritten-reads-initial"),
            "{}",
            rw.repro()
        );
    }
}
