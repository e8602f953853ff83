//! `faultline`'s command line: thin glue over the harness modules.
//!
//! Exit codes ([`EXIT_CODES`], also in `--help`): 0 valid, 1 invalid, 2 unknown, 130 interrupted, 254 bad input (the
//! arguments, a plan, a suite, a history or a folder that is not what the command needs), 255 harness error (the
//! harness failed at its own work: I/O, a process it could not start).
//!
//! With `--json`, stdout carries exactly one JSON object, written at the end (see [`JsonStdout`]); everything a
//! person reads goes to stderr.
//!
//! One module per command: its arguments (a clap `Args` struct) and its body; this module holds what they share
//! (the exit codes, how a command ends, `--json`'s stdout) and the dispatch.

pub mod analyze;
pub mod campaign;
pub mod certify;
pub mod check;
pub mod clean;
pub mod docs;
pub mod hosts;
pub mod matrix;
pub mod merge;
pub mod plan;
pub mod report;
pub mod run;
pub mod shrink;
pub mod triage;

use crate::plan::PlanError;
use clap::{Parser, Subcommand};
use faultline_faults::units::Millis;
use faultline_reports::results::Results;
use serde_json::json;
use std::io::Write;

/// Bad input: the arguments, a plan, a suite, a history or a folder that is not what the command needs.
pub const EXIT_BAD_INPUT: u8 = 254;
/// The harness failed at its own work (I/O, a process it could not start).
pub const EXIT_HARNESS_ERROR: u8 = 255;

/// The exit codes, as `--help` lists them.
const EXIT_CODES: &str = "\
Exit codes:
  0    valid (campaign, certify: every seed valid; matrix: every mutant caught, no false alarm)
  1    invalid: a check failed (matrix: a mutant no plan caught, or the correct node flagged; triage: a new failure class)
  2    unknown: a check could not decide, or nothing ran (shrink: the replay of the run did not fail)
  130  interrupted (campaign, certify, shrink, matrix)
  254  bad input: arguments, plan, suite, history file, or a folder that is not a run or store
  255  harness error: the harness failed at its own work (I/O, a process it could not start)

Logging: warnings go to stderr and to each run's faultline.log; FAULTLINE_LOG (or RUST_LOG) sets the filter, e.g.
FAULTLINE_LOG=info or FAULTLINE_LOG=warn,faultline_faults=debug.";

/// `faultline --version`: the crate version, the git revision built from and the target triple.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FAULTLINE_GIT_REVISION"),
    ", ",
    env!("FAULTLINE_BUILD_TARGET"),
    ")"
);

/// The command line.
#[derive(Parser)]
#[command(
    name = "faultline",
    version = VERSION,
    about = "Jepsen-style fault injection for replicated storage and streaming systems",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands, each with its module's arguments.
#[derive(Subcommand)]
pub enum Command {
    /// Run a test plan (the built-in default plan when none is given).
    Run(run::RunArgs),
    /// Shrink a failing run to the smallest scripted plan that still fails the same way (delta debugging over its
    /// recorded faults, then their durations, the workload and the phase length); writes RUN_DIR/shrink/shrunk.yaml,
    /// shrink.json and shrink.html. Ctrl-C keeps the best plan found so far.
    Shrink(shrink::ShrinkArgs),
    /// Run plans x seeds (a seed count or a wall-clock budget), K at once, rerun failing seeds, record every seed in
    /// store/seeds.jsonl and print a summary; store/index.html shows the campaign view.
    Campaign(campaign::CampaignArgs),
    /// Run a fixed certification matrix (plans x node counts x seeds) that must be fully valid; writes
    /// store/certify/<name>-<time>/certification.html, certification.json and junit.xml.
    Certify(certify::CertifyArgs),
    /// Print the failure classes of the store's latest campaign, most severe first: each new, known or gone, with the
    /// seeds that show it and their repro commands, when it was first and last seen, how reruns went and its note
    /// (from STORE/triage-notes.yaml). Exit 1 when a class is new.
    Triage(triage::TriageArgs),
    /// Merge stores (e.g. the shards of a campaign) into one and regenerate its index.
    Merge(merge::MergeArgs),
    /// Run every mutant of the reference node against the plans that should expose it, and the correct node against
    /// the same plans; print the detection matrix (also store/matrix/<time>/matrix.json and matrix.html).
    Matrix(matrix::MatrixArgs),
    /// Show plans: one of --print-default, --check or --schedule.
    Plan(plan::PlanArgs),
    /// Re-run every check on a run's store folder (works on crashed runs too).
    Analyze(analyze::AnalyzeArgs),
    /// Re-render a run's report.html (and the store's index.html) from its store folder.
    Report(report::ReportArgs),
    /// Check a history file offline against a Jepsen, Elle or Knossos model (faultline JSONL, Jepsen EDN, JSON or log
    /// lines, Porcupine kv logs).
    Check(check::CheckArgs),
    /// Remove what dead runs left behind (processes, fault filesystem mounts, network namespaces, guard routes, nft
    /// tables); every `faultline run` does this first. Live runs are never touched.
    Clean(clean::CleanArgs),
    /// Check the hosts of a hosts file as a run reaches them: SSH, this build installed, the agent, what each host
    /// can do and how far its clock is from this machine's.
    Hosts(hosts::HostsArgs),
    /// Serve faultline's agent protocol on stdin/stdout (JSON lines, plans/exec/AGENT.md): what the control runs on
    /// each host over SSH. Not for people.
    Agent(hosts::AgentArgs),
    /// Print a shell completion script, e.g. `faultline completions bash > /etc/bash_completion.d/faultline`.
    Completions(docs::CompletionsArgs),
    /// Print the man page faultline(1) as roff, e.g. `faultline man | man -l -`; with --out-dir, write it and one
    /// page per subcommand (faultline-run.1, ...) there.
    Man(docs::ManArgs),
}

pub(crate) fn parse_millis(text: &str) -> Result<Millis, String> {
    Millis::parse(text)
}

/// Runs `command`: its exit code and, with `--json`, the one JSON object for stdout (on a failure, the error and
/// its code; the message has gone to stderr).
pub fn dispatch(command: Command) -> (u8, Option<String>) {
    let outcome = match command {
        Command::Run(args) => run::command(args),
        Command::Shrink(args) => shrink::command(args),
        Command::Campaign(args) => campaign::command(args),
        Command::Certify(args) => certify::command(args),
        Command::Merge(args) => merge::command(args),
        Command::Triage(args) => triage::command(args),
        Command::Plan(args) => plan::command(args),
        Command::Analyze(args) => analyze::command(args),
        Command::Matrix(args) => matrix::command(args),
        Command::Report(args) => report::command(args),
        Command::Check(args) => check::command(args),
        Command::Clean(args) => clean::command(args),
        Command::Hosts(args) => hosts::command(args),
        Command::Agent(args) => hosts::agent(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    };
    match outcome {
        Ok(Ended { code, json }) => (code, json),
        Err(Failed { code, message }) => {
            eprintln!("{message}");
            (code, Some(json!({"error": message, "exit_code": code}).to_string()))
        }
    }
}

/// How a command ended: its exit code and, for `--json`, its object (serialized, so fields keep their order).
struct Ended {
    code: u8,
    json: Option<String>,
}

impl Ended {
    /// Ended with `code` and the JSON form of `value`.
    fn with(code: u8, value: &impl serde::Serialize) -> Ended {
        let json = serde_json::to_string(value).expect("results serialize to JSON");
        Ended { code, json: Some(json) }
    }

    /// Success with nothing for `--json` (the command has no such flag).
    fn ok() -> Ended {
        Ended { code: 0, json: None }
    }
}

/// A command that could not do its work: the exit code (254 or 255) and the line to print.
struct Failed {
    code: u8,
    message: String,
}

impl Failed {
    /// The input was wrong (exit 254).
    fn bad_input(message: impl Into<String>) -> Failed {
        Failed {
            code: EXIT_BAD_INPUT,
            message: message.into(),
        }
    }

    /// The harness failed at its own work (exit 255).
    fn harness(message: impl Into<String>) -> Failed {
        Failed {
            code: EXIT_HARNESS_ERROR,
            message: message.into(),
        }
    }
}

type Outcome = Result<Ended, Failed>;

/// With `--json`, the process's original stdout, kept for the one JSON object; fd 1 itself is pointed at stderr for
/// the whole command, so nothing else can reach stdout: neither this binary's human output, nor a library's
/// `println!`, nor a child process that inherits stdout.
pub struct JsonStdout(std::fs::File);

impl JsonStdout {
    /// `None` without `--json`.
    pub fn take(json: bool) -> std::io::Result<Option<JsonStdout>> {
        use std::os::fd::AsFd;
        if !json {
            return Ok(None);
        }
        std::io::stdout().flush()?;
        let original = std::io::stdout().as_fd().try_clone_to_owned()?;
        // SAFETY: dup2 on two descriptors this process owns for its whole life (0..=2); no memory is involved.
        if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Some(JsonStdout(std::fs::File::from(original))))
    }

    /// Writes `object` (one line of JSON) and a newline.
    pub fn write_object(&mut self, object: &str) -> std::io::Result<()> {
        std::io::stdout().flush()?;
        writeln!(self.0, "{object}")?;
        self.0.flush()
    }
}

impl Command {
    /// `--json` was given.
    pub fn wants_json(&self) -> bool {
        match self {
            Command::Run(args) => args.json,
            Command::Certify(args) => args.json,
            Command::Matrix(args) => args.json,
            Command::Analyze(args) => args.json,
            Command::Triage(args) => args.json,
            Command::Shrink(args) => args.json,
            Command::Check(args) => args.json,
            Command::Campaign(args) => args.json,
            Command::Hosts(hosts::HostsArgs {
                command: hosts::HostsCommand::Check(args),
            }) => args.json,
            Command::Merge(_)
            | Command::Plan(_)
            | Command::Report(_)
            | Command::Clean(_)
            | Command::Agent(_)
            | Command::Completions(_)
            | Command::Man(_) => false,
        }
    }
}

fn plan_error(e: PlanError) -> Failed {
    Failed::bad_input(format!("faultline: bad plan: {e}"))
}

/// Exit code for an error of `analyze`, `report` or `merge`: 254 when it says the input is wrong (a plan, history
/// or results.json that does not parse), else 255 (the harness could not read or write: I/O on its own store).
fn input_or_harness(error: &anyhow::Error) -> u8 {
    use faultline_reports::ReportError;
    use faultline_workloads::HistoryError;
    let bad_input = error.chain().any(|cause| {
        cause.is::<PlanError>()
            || matches!(cause.downcast_ref::<HistoryError>(), Some(HistoryError::Parse { .. }))
            || matches!(cause.downcast_ref::<ReportError>(), Some(ReportError::Results { .. }))
    });
    if bad_input {
        EXIT_BAD_INPUT
    } else {
        EXIT_HARNESS_ERROR
    }
}

fn print_checks(results: &Results) {
    for check in &results.checks {
        let reason = check.reason.strip_prefix("not checked: ").unwrap_or(&check.reason);
        println!("  {:<16} {:<11} {reason}", check.name, check.status());
    }
    println!(
        "  ops: {} ok, {} fail, {} info; {} nemesis events; seed {}",
        results.counts.ok, results.counts.fail, results.counts.info, results.counts.nemesis, results.seed
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn given_the_cli_when_clap_checks_its_definition_should_find_no_conflict() {
        Cli::command().debug_assert();
    }

    #[test]
    fn given_plan_with_schedule_and_check_when_parsed_should_be_refused() {
        let parsed = Cli::try_parse_from(["faultline", "plan", "--schedule", "default", "--check", "x.yaml"]);
        assert!(
            parsed.is_err(),
            "--schedule and --check together are refused, not one silently ignored"
        );
    }
}
