//! `faultline`: the command line. Thin glue over the harness modules.
//!
//! Exit codes ([`EXIT_CODES`], also in `--help`): 0 valid, 1 invalid, 2 unknown, 130 interrupted, 254 bad input (the
//! arguments, a plan, a suite, a history or a folder that is not what the command needs), 255 harness error (the
//! harness failed at its own work: I/O, a process it could not start).
//! `faultline node ARGS` runs the embedded reference node (`faultline-node ARGS`).
//!
//! With `--json`, stdout carries exactly one JSON object, written at the end (see [`JsonStdout`]); everything a
//! person reads goes to stderr.

use clap::builder::PossibleValue;
use clap::{ArgGroup, CommandFactory, Parser, Subcommand, ValueEnum};
use faultline::plan::{Plan, PlanError, DEFAULT_PLAN_YAML};
use faultline::run::{run, RunOptions};
use faultline_faults::units::Millis;
use faultline_reports::results::{shout, Results};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXIT_BAD_INPUT: u8 = 254;
const EXIT_HARNESS_ERROR: u8 = 255;

/// The exit codes, as `--help` lists them.
const EXIT_CODES: &str = "\
Exit codes:
  0    valid (campaign, certify: every seed valid; matrix: every mutant caught, no false alarm)
  1    invalid: a check failed (matrix: a mutant no plan caught, or the correct node flagged; triage: a new failure class)
  2    unknown: a check could not decide, or nothing ran
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

#[derive(Parser)]
#[command(
    name = "faultline",
    version = VERSION,
    about = "Jepsen-style fault injection for replicated storage and streaming systems",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a test plan (the built-in default plan when none is given).
    Run {
        /// Plan file (YAML). Omit for the built-in default: 3 reference nodes, register workload, process faults.
        plan: Option<PathBuf>,
        /// Override the plan's fault-phase length, e.g. 30s.
        #[arg(long, value_parser = parse_millis)]
        time_limit: Option<Millis>,
        /// Override the plan's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the plan's cluster size (1..=9); the plan is validated again for it.
        #[arg(long)]
        nodes: Option<u64>,
        /// Store folder.
        #[arg(long, default_value = "store")]
        store: PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Print the run's results.json on stdout at the end (human output goes to stderr).
        #[arg(long)]
        json: bool,
        /// Rerun exactly the faults recorded in this run's history (not regenerated from the seed): timed faults at
        /// their recorded offsets, triggered ones after the observation that fired them.
        #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["plan", "nodes"])]
        replay: Option<PathBuf>,
    },
    /// Shrink a failing run to the smallest scripted plan that still fails the same way (delta debugging over its
    /// recorded faults, then their durations, the workload and the phase length); writes RUN_DIR/shrink/shrunk.yaml,
    /// shrink.json and shrink.html. Ctrl-C keeps the best plan found so far.
    Shrink {
        /// The failing run's folder (e.g. store/default/<time>-seed<N>).
        run_dir: PathBuf,
        /// Wall-clock budget, confirmation runs included, e.g. 30m.
        #[arg(long, default_value = "30m", value_parser = parse_millis)]
        budget: Millis,
        /// Runs per candidate before it counts as passing (real processes are not deterministic): dropping faults
        /// needs one failing try (a majority once the best plan failed in most of its tries), a shorter phase,
        /// duration or workload a majority.
        #[arg(long, default_value_t = 5)]
        tries: u32,
        /// Failing tries a candidate needs at every stage, for a failure that shows in few runs (e.g. --tries 4
        /// --need 2); default: one to drop faults (a majority once the best plan failed in most of its tries), a
        /// majority of --tries for the refinements.
        #[arg(long)]
        need: Option<u32>,
        /// Runs at once (the tries of a candidate run in parallel).
        #[arg(long, default_value_t = 1)]
        parallel: usize,
        /// Fresh runs of the shrunk plan that measure how often it reproduces.
        #[arg(long, default_value_t = 10)]
        confirm: u32,
        /// Store for the candidates' runs (default: the run's own store).
        #[arg(long)]
        store: Option<PathBuf>,
        /// Keep failing with this failure class (its id, e.g. c3fa81c02, as `faultline triage` shows it) instead of
        /// the run's most severe finding.
        #[arg(long)]
        class: Option<String>,
        /// No progress line.
        #[arg(long)]
        quiet: bool,
        /// Print shrink.json on stdout at the end (human output goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// Run plans x seeds (a seed count or a wall-clock budget), K at once, rerun failing seeds, record every seed in
    /// store/seeds.jsonl and print a summary; store/index.html shows the campaign view.
    Campaign(CampaignArgs),
    /// Run a fixed certification matrix (plans x node counts x seeds) that must be fully valid; writes
    /// store/certify/<name>-<time>/certification.html, certification.json and junit.xml.
    Certify {
        /// The suite file (YAML): name, plans, seeds or seed_count, nodes, time_limit.
        #[arg(long)]
        suite: PathBuf,
        /// Concurrent runs (default: half the cores, at least 1).
        #[arg(long)]
        parallel: Option<usize>,
        /// The system's git revision, recorded with every cell.
        #[arg(long)]
        git_rev: Option<String>,
        /// Store folder.
        #[arg(long, default_value = "store")]
        store: PathBuf,
        /// No progress view.
        #[arg(long)]
        quiet: bool,
        /// Print the certification (certification.json) on stdout at the end (human output goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// Print the failure classes of the store's latest campaign, most severe first: each new, known or gone, with the
    /// seeds that show it and their repro commands, when it was first and last seen, how reruns went and its note
    /// (from STORE/triage-notes.yaml). Exit 1 when a class is new.
    Triage {
        /// The store (the folder that holds seeds.jsonl).
        #[arg(default_value = "store")]
        store: PathBuf,
        /// As of this campaign instead of the latest.
        #[arg(long)]
        campaign: Option<String>,
        /// Print the classes as one JSON object on stdout (human output goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// Merge stores (e.g. the shards of a campaign) into one and regenerate its index.
    Merge {
        /// Stores to merge in.
        #[arg(required = true)]
        stores: Vec<PathBuf>,
        /// The store to merge into (created if needed).
        #[arg(long, default_value = "store")]
        store: PathBuf,
    },
    /// Run every mutant of the reference node against the plans that should expose it, and the correct node against
    /// the same plans; print the detection matrix (also store/matrix/<time>/matrix.json and matrix.html).
    Matrix {
        /// Seeds per cell.
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Upper bound on each run's fault phase.
        #[arg(long, value_parser = parse_millis, default_value = "60s")]
        time_limit: Millis,
        /// First seed.
        #[arg(long, default_value_t = 1)]
        first_seed: u64,
        /// Only these mutants (repeatable).
        #[arg(long = "mutant", value_parser = mutant_names())]
        mutants: Vec<String>,
        /// Run every mutant (and the correct node) against the general plans (default, reference-mixed,
        /// reference-swarm, reference-partition, reference-crash-points: nothing scripted for a bug) instead of the
        /// plans written to expose each.
        #[arg(long)]
        general: bool,
        /// Only this plan of the matrix (repeatable), e.g. a general plan just added.
        #[arg(long = "plan", value_name = "PLAN")]
        plans: Vec<String>,
        /// Runs at once (each run is a child `faultline run`; a reference cluster at the general plans' rates keeps
        /// well under one core busy).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
        parallel: u64,
        /// Store folder.
        #[arg(long, default_value = "store")]
        store: PathBuf,
        /// No progress view.
        #[arg(long)]
        quiet: bool,
        /// Print the detection matrix (matrix.json: per mutant and per cell) on stdout at the end (human output goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// Show plans: one of --print-default, --check or --schedule.
    #[command(group(ArgGroup::new("what").required(true).args(["print_default", "check", "schedule"])))]
    Plan {
        /// Print the built-in default plan as commented YAML.
        #[arg(long)]
        print_default: bool,
        /// Check a plan file and print it resolved.
        #[arg(long)]
        check: Option<PathBuf>,
        /// Print the process-fault schedule a plan file (or `default`) gives with its seed (or --seed), one fault per
        /// line, without running anything: the same seed always gives the same schedule.
        #[arg(long)]
        schedule: Option<PathBuf>,
        /// Seed for --schedule.
        #[arg(long, requires = "schedule")]
        seed: Option<u64>,
    },
    /// Re-run every check on a run's store folder (works on crashed runs too).
    Analyze {
        /// The run's store folder (e.g. store/latest).
        dir: PathBuf,
        /// Print the new results.json on stdout at the end (human output goes to stderr).
        #[arg(long)]
        json: bool,
    },
    /// Re-render a run's report.html (and the store's index.html) from its store folder.
    Report {
        /// The run's store folder (e.g. store/latest).
        dir: PathBuf,
    },
    /// Check a history file for linearizability (faultline JSONL, Jepsen EDN or log lines, Porcupine kv logs).
    Check {
        /// History file.
        file: PathBuf,
        /// Model to check against.
        #[arg(long, value_enum, default_value_t = ModelArg::CasRegister)]
        model: ModelArg,
        /// History format (default: recognised from the file's first line).
        #[arg(long, value_enum)]
        format: Option<FormatArg>,
        /// Wall-time budget; past it the verdict is unknown.
        #[arg(long, value_parser = parse_millis, default_value = "30s")]
        timeout: Millis,
        /// Print the linearizability result (as results.json holds it) on stdout at the end.
        #[arg(long)]
        json: bool,
    },
    /// Remove what dead runs left behind (processes, fault filesystem mounts, network namespaces, guard routes, nft
    /// tables); every `faultline run` does this first. Live runs are never touched.
    Clean {
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print a shell completion script, e.g. `faultline completions bash > /etc/bash_completion.d/faultline`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page faultline(1) as roff, e.g. `faultline man | man -l -`; with --out-dir, write it and one
    /// page per subcommand (faultline-run.1, ...) there.
    Man {
        /// Folder for faultline.1 and the subcommands' pages (created if needed).
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
}

/// `faultline check --model`: the linearizability models (see `faultline_workloads::ModelKind`).
#[derive(Clone, Copy, ValueEnum)]
enum ModelArg {
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
enum FormatArg {
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

/// `faultline matrix --mutant`: the mutants of the reference node, each with the plans that should expose it.
fn mutant_names() -> clap::builder::PossibleValuesParser {
    let values = faultline::matrix::MUTANTS
        .iter()
        .map(|(name, plans)| PossibleValue::new(*name).help(format!("exposed by {}", plans.join(", "))));
    clap::builder::PossibleValuesParser::new(values)
}

/// `faultline campaign` arguments.
#[derive(clap::Args)]
struct CampaignArgs {
    /// Plan files or built-in plan names.
    plans: Vec<String>,
    /// Seeds per plan (default 10 when there is no --budget).
    #[arg(long)]
    seeds: Option<u64>,
    /// Wall-clock budget, e.g. 2h: no run is started that would not end within it.
    #[arg(long, value_parser = parse_millis)]
    budget: Option<Millis>,
    /// Concurrent runs (default: half the cores, at least 1).
    #[arg(long)]
    parallel: Option<usize>,
    /// Stop starting new seeds after the first failure.
    #[arg(long)]
    stop_on_fail: bool,
    /// Rerun a failing seed up to M times: reproducible when a rerun fails the same check again, else flaky.
    #[arg(long, default_value_t = 1)]
    retry_failed: u64,
    /// Run only shard I of N of the seed space (needs --campaign-seed, the same on every shard).
    #[arg(long, value_parser = parse_shard)]
    shard: Option<faultline::campaign::space::Shard>,
    /// Campaign seed every run seed derives from: a number, or any text (hashed), e.g. a CI run id.
    #[arg(long)]
    campaign_seed: Option<String>,
    /// Campaign id (default: s<campaign seed>).
    #[arg(long)]
    id: Option<String>,
    /// Override every plan's fault-phase length, e.g. 30s.
    #[arg(long, value_parser = parse_millis)]
    time_limit: Option<Millis>,
    /// The system's git revision, recorded with every seed.
    #[arg(long)]
    git_rev: Option<String>,
    /// Retention: keep the newest N passing runs per plan, prune older passing runs (never failing ones).
    #[arg(long)]
    keep_passing: Option<u64>,
    /// After the campaign, shrink one seed of each new failure class to a minimal repro (`faultline shrink`), all
    /// within --shrink-budget; the campaign view lists each shrunk repro beside its seed's.
    #[arg(long)]
    shrink_failures: bool,
    /// Total wall-clock budget of --shrink-failures, shared by the new classes.
    #[arg(long, default_value = "1h", value_parser = parse_millis)]
    shrink_budget: Millis,
    /// Continue a stopped campaign (the latest unfinished one, or ID).
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "ID")]
    resume: Option<String>,
    /// Print the runs (plan, seed, repro command) and stop.
    #[arg(long)]
    dry_run: bool,
    /// Store folder.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// No progress view and no per-run lines.
    #[arg(long)]
    quiet: bool,
    /// Print the campaign summary (or with --dry-run the planned runs) on stdout at the end.
    #[arg(long)]
    json: bool,
}

fn parse_shard(text: &str) -> Result<faultline::campaign::space::Shard, String> {
    text.parse()
}

fn parse_millis(text: &str) -> Result<Millis, String> {
    Millis::parse(text)
}

fn main() -> ExitCode {
    // `faultline node ...` is the embedded reference node (see harness/src/system/reference.rs): hand over before
    // the harness installs anything of its own (the node sets up its own logging).
    if std::env::args_os().nth(1).is_some_and(|a| a == "node") {
        return faultline_node::cli::main_from_args(std::env::args_os().skip(1));
    }
    faultline::supervisor::install_panic_cleanup();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            let code = if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
            return ExitCode::from(code);
        }
    };
    faultline::logging::install();
    let json = cli.command.wants_json();
    let mut json_stdout = match JsonStdout::take(json) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("faultline: --json: cannot set up stdout: {e}");
            return ExitCode::from(EXIT_HARNESS_ERROR);
        }
    };
    let (code, object) = match dispatch(cli.command) {
        Ok(Ended { code, json }) => (code, json),
        Err(Failed { code, message }) => {
            eprintln!("{message}");
            (code, Some(json!({"error": message, "exit_code": code}).to_string()))
        }
    };
    if let (Some(out), Some(object)) = (json_stdout.as_mut(), object) {
        if let Err(e) = out.write_object(&object) {
            eprintln!("faultline: --json: cannot write stdout: {e}");
            return ExitCode::from(EXIT_HARNESS_ERROR);
        }
    }
    ExitCode::from(code)
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
struct JsonStdout(std::fs::File);

impl JsonStdout {
    /// `None` without `--json`.
    fn take(json: bool) -> std::io::Result<Option<JsonStdout>> {
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
    fn write_object(&mut self, object: &str) -> std::io::Result<()> {
        std::io::stdout().flush()?;
        writeln!(self.0, "{object}")?;
        self.0.flush()
    }
}

impl Command {
    /// `--json` was given.
    fn wants_json(&self) -> bool {
        match self {
            Command::Run { json, .. }
            | Command::Certify { json, .. }
            | Command::Matrix { json, .. }
            | Command::Analyze { json, .. }
            | Command::Triage { json, .. }
            | Command::Shrink { json, .. }
            | Command::Check { json, .. } => *json,
            Command::Campaign(args) => args.json,
            Command::Merge { .. }
            | Command::Plan { .. }
            | Command::Report { .. }
            | Command::Clean { .. }
            | Command::Completions { .. }
            | Command::Man { .. } => false,
        }
    }
}

fn dispatch(command: Command) -> Outcome {
    match command {
        Command::Run {
            plan,
            time_limit,
            seed,
            nodes,
            store,
            quiet,
            json: _,
            replay,
        } => run_command(
            plan,
            RunOverrides {
                time_limit,
                seed,
                nodes,
                replay,
            },
            store,
            quiet,
        ),
        Command::Shrink {
            run_dir,
            budget,
            tries,
            need,
            parallel,
            confirm,
            store,
            class,
            quiet,
            json: _,
        } => shrink_command(faultline::shrink::ShrinkOptions {
            class,
            store_root: store.unwrap_or_else(|| {
                run_dir
                    .parent()
                    .and_then(Path::parent)
                    .map_or_else(|| PathBuf::from("store"), Path::to_path_buf)
            }),
            run_dir,
            budget: budget.duration(),
            tries: tries.max(1),
            need,
            parallel: parallel.max(1),
            confirm,
            quiet,
        }),
        Command::Campaign(args) => campaign_command(args),
        Command::Certify {
            suite,
            parallel,
            git_rev,
            store,
            quiet,
            json: _,
        } => certify_command(faultline::certify::CertifyOptions {
            suite,
            store_root: store,
            parallel: parallel.unwrap_or_else(faultline::campaign::default_parallel),
            git_rev,
            quiet,
        }),
        Command::Merge { stores, store } => merge_command(&store, &stores),
        Command::Triage {
            store,
            campaign,
            json: _,
        } => triage_command(&store, campaign.as_deref()),
        Command::Plan {
            print_default,
            check,
            schedule,
            seed,
        } => match (schedule, check) {
            (Some(path), _) => schedule_command(&path, seed),
            (None, Some(path)) => check_plan_command(&path),
            (None, None) => {
                debug_assert!(
                    print_default,
                    "clap requires one of --print-default, --check, --schedule"
                );
                print!("{DEFAULT_PLAN_YAML}");
                Ok(Ended::ok())
            }
        },
        Command::Analyze { dir, json: _ } => analyze_command(&dir),
        Command::Matrix {
            seeds,
            time_limit,
            first_seed,
            mutants,
            general,
            plans,
            parallel,
            store,
            quiet,
            json: _,
        } => matrix_command(&faultline::matrix::MatrixOptions {
            seeds,
            time_limit,
            store_root: store,
            only: mutants,
            first_seed,
            general,
            plans,
            parallel: parallel as usize,
            quiet,
        }),
        Command::Report { dir } => report_command(&dir),
        Command::Check {
            file,
            model,
            format,
            timeout,
            json: _,
        } => check_command(&file, model, format, timeout),
        Command::Clean { dry_run } => clean_command(dry_run),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "faultline", &mut std::io::stdout());
            Ok(Ended::ok())
        }
        Command::Man { out_dir } => man_command(out_dir.as_deref()),
    }
}

fn man_command(out_dir: Option<&Path>) -> Outcome {
    let command = Cli::command();
    let written = match out_dir {
        None => clap_mangen::Man::new(command).render(&mut std::io::stdout()),
        Some(dir) => std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(command, dir)),
    };
    match (written, out_dir) {
        (Ok(()), Some(dir)) => {
            println!("faultline man: pages written to {}", dir.display());
            Ok(Ended::ok())
        }
        (Ok(()), None) => Ok(Ended::ok()),
        (Err(e), _) => Err(Failed::harness(format!("faultline man: {e}"))),
    }
}

fn clean_command(dry_run: bool) -> Outcome {
    let leftovers = faultline::cleanup::sweep(dry_run);
    if leftovers.is_empty() {
        println!("faultline clean: nothing left by dead runs");
    } else {
        print!("{}", leftovers.describe(dry_run));
    }
    if leftovers.errors.is_empty() {
        Ok(Ended::ok())
    } else {
        Err(Failed::harness(format!(
            "faultline clean: {} thing(s) could not be removed",
            leftovers.errors.len()
        )))
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

/// `faultline run` overrides of the plan.
struct RunOverrides {
    time_limit: Option<Millis>,
    seed: Option<u64>,
    nodes: Option<u64>,
    replay: Option<PathBuf>,
}

fn run_command(plan_path: Option<PathBuf>, overrides: RunOverrides, store: PathBuf, quiet: bool) -> Outcome {
    let RunOverrides {
        time_limit,
        seed,
        nodes,
        replay,
    } = overrides;
    let loaded = match (&replay, &plan_path) {
        (Some(run_dir), _) => {
            return replay_plan(run_dir).and_then(|plan| finish_run_command(plan, time_limit, seed, None, store, quiet))
        }
        (None, plan_path) => match plan_path {
            Some(path) if path.exists() => Plan::load(path),
            // Not a file: a built-in plan's name (`faultline run canary`).
            Some(path) => faultline::builtin::load(&path.display().to_string()),
            None => Ok(Plan::default_plan()),
        },
    };
    let plan = loaded.map_err(plan_error)?;
    finish_run_command(plan, time_limit, seed, nodes, store, quiet)
}

/// The scripted plan that replays `run_dir`'s recorded faults.
fn replay_plan(run_dir: &Path) -> Result<Plan, Failed> {
    let (base, recorded) =
        faultline::replay::load(run_dir).map_err(|e| Failed::bad_input(format!("faultline run --replay: {e:#}")))?;
    let anchored = recorded.faults.iter().filter(|f| f.anchor.is_some()).count();
    eprintln!(
        "faultline: replaying the {} faults recorded in {} ({anchored} anchored to what the cluster did, the rest at \
         their recorded offsets), seed {}",
        recorded.faults.len(),
        run_dir.display(),
        recorded.seed
    );
    let origin = format!("replay of {}", run_dir.display());
    let plan = faultline::replay::scripted_plan(&base, &recorded.faults, recorded.seed, origin);
    // What runs must be a plan the harness accepts, exactly as it is stored.
    Plan::parse(&plan.to_yaml(), &format!("the replay of {}", run_dir.display())).map_err(plan_error)?;
    Ok(plan)
}

fn finish_run_command(
    mut plan: Plan,
    time_limit: Option<Millis>,
    seed: Option<u64>,
    nodes: Option<u64>,
    store: PathBuf,
    quiet: bool,
) -> Outcome {
    if let Some(limit) = time_limit {
        if limit.0 == 0 {
            return Err(Failed::bad_input("faultline: --time-limit must be > 0"));
        }
        plan.time_limit = limit;
    }
    if seed.is_some() {
        plan.seed = seed;
    }
    if let Some(nodes) = nodes {
        plan.system.set_nodes(nodes as usize);
        let origin = format!("{} with --nodes {nodes}", plan.name);
        plan.validate(&origin).map_err(plan_error)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    let quiet = quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    match runtime.block_on(run(RunOptions {
        plan,
        store_root: store,
        quiet,
    })) {
        Ok(outcome) => {
            print_checks(&outcome.results);
            println!("  report: {}", outcome.store_dir.join("report.html").display());
            println!(
                "faultline: {} — {} — {}",
                shout(outcome.results.verdict),
                outcome.results.reason,
                outcome.store_dir.display()
            );
            Ok(Ended::with(outcome.results.verdict.exit_code() as u8, &outcome.results))
        }
        Err(e) => {
            faultline::supervisor::kill_all_spawned();
            Err(Failed::harness(format!("faultline: harness error: {e:#}")))
        }
    }
}

fn shrink_command(options: faultline::shrink::ShrinkOptions) -> Outcome {
    if let Some(need) = options.need.filter(|need| !(1..=options.tries).contains(need)) {
        return Err(Failed::bad_input(format!(
            "faultline shrink: --need {need} is not between 1 and --tries {}: a candidate runs at most {} times",
            options.tries, options.tries
        )));
    }
    match faultline::shrink::shrink(options) {
        Ok(report) => {
            let dir = Path::new(&report.source).join("shrink");
            println!("faultline shrink: {}", report.summary());
            for fault in &report.shrunk {
                println!("  {fault}");
            }
            println!("  plan: {}", dir.join("shrunk.yaml").display());
            println!("  steps: {}", dir.join("shrink.html").display());
            let code = match report.stopped.as_deref() {
                Some("interrupted") => 130,
                _ => 0,
            };
            Ok(Ended::with(code, &report))
        }
        Err(e) if e.is::<faultline::shrink::BadInput>() => Err(Failed::bad_input(format!("faultline shrink: {e:#}"))),
        Err(e) => Err(Failed::harness(format!("faultline shrink: {e:#}"))),
    }
}

fn print_checks(results: &Results) {
    for check in &results.checks {
        println!("  {:<16} {:<8} {}", check.name, check.verdict.to_string(), check.reason);
    }
    println!(
        "  ops: {} ok, {} fail, {} info; {} nemesis events; seed {}",
        results.counts.ok, results.counts.fail, results.counts.info, results.counts.nemesis, results.seed
    );
}

fn check_plan_command(path: &Path) -> Outcome {
    let plan = Plan::load(path).map_err(plan_error)?;
    print!("{}", plan.to_yaml());
    Ok(Ended::ok())
}

fn schedule_command(path: &Path, seed: Option<u64>) -> Outcome {
    let plan = if path == Path::new("default") {
        Plan::default_plan()
    } else {
        Plan::load(path).map_err(plan_error)?
    };
    let Some(seed) = seed.or(plan.seed) else {
        return Err(Failed::bad_input(
            "faultline plan --schedule: the plan has no seed; pass --seed N",
        ));
    };
    for fault in faultline::run::fault_schedule(&plan, seed) {
        println!("{}", serde_json::to_string(&fault).expect("a schedule serializes"));
    }
    Ok(Ended::ok())
}

fn analyze_command(dir: &Path) -> Outcome {
    if !dir.join("history.jsonl").is_file() {
        return Err(Failed::bad_input(format!(
            "faultline: cannot analyze {}: not a run folder (it has no history.jsonl)",
            dir.display()
        )));
    }
    match faultline::analyze::analyze_and_write(dir) {
        Ok(results) => {
            print_checks(&results);
            println!(
                "faultline: {} — {} — {}",
                shout(results.verdict),
                results.reason,
                dir.display()
            );
            Ok(Ended::with(results.verdict.exit_code() as u8, &results))
        }
        Err(e) => Err(Failed {
            code: input_or_harness(&e),
            message: format!("faultline: cannot analyze {}: {e:#}", dir.display()),
        }),
    }
}

fn matrix_command(options: &faultline::matrix::MatrixOptions) -> Outcome {
    if faultline::matrix::pairs(options).is_empty() {
        let why = faultline::matrix::nothing_to_run(options);
        return Err(Failed::bad_input(format!("faultline matrix: {why}")));
    }
    match faultline::matrix::run_matrix(options) {
        Ok(outcome) => {
            let cells = &outcome.cells;
            print!("{}", faultline::matrix::render_table(cells));
            println!("faultline matrix: {}", outcome.dir.join("matrix.html").display());
            // Per mutant: caught when some plan caught it (a plan without partitions may miss a quorum bug).
            let lines = faultline_reports::matrix::mutant_lines(cells);
            let missed = lines.iter().any(|l| l.mutant != "correct" && !l.is_good());
            let false_alarm = lines.iter().any(|l| l.mutant == "correct" && !l.is_good());
            let summary = json!({
                "dir": outcome.dir.display().to_string(),
                "interrupted": outcome.interrupted,
                "missed": missed,
                "false_alarm": false_alarm,
                "mutants": lines,
                "cells": cells,
            });
            if outcome.interrupted {
                eprintln!("faultline matrix: interrupted; the matrix holds the runs that finished");
                return Ok(Ended::with(130, &summary));
            }
            Ok(Ended::with(u8::from(missed || false_alarm), &summary))
        }
        Err(e) => Err(Failed::harness(format!("faultline matrix: harness error: {e:#}"))),
    }
}

fn report_command(dir: &Path) -> Outcome {
    if !dir.is_dir() {
        return Err(Failed::bad_input(format!(
            "faultline report: {} is not a run folder",
            dir.display()
        )));
    }
    match faultline_reports::write_report(dir) {
        Ok(path) => {
            let store_root = dir
                .canonicalize()
                .ok()
                .and_then(|d| Some(d.parent()?.parent()?.to_path_buf()));
            if let Some(root) = store_root {
                if let Err(e) = faultline_reports::write_index(&root) {
                    eprintln!("faultline report: index not updated: {e}");
                }
            }
            println!("{}", path.display());
            Ok(Ended::ok())
        }
        Err(e) => {
            let message = format!("faultline report: {e}");
            Err(Failed {
                code: input_or_harness(&anyhow::Error::from(e)),
                message,
            })
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

fn campaign_error(command: &str, e: faultline::campaign::CampaignError) -> Failed {
    use faultline::campaign::CampaignError;
    match e {
        CampaignError::Input(message) => Failed::bad_input(format!("faultline {command}: {message}")),
        CampaignError::Harness(e) => Failed::harness(format!("faultline {command}: harness error: {e:#}")),
    }
}

fn campaign_command(args: CampaignArgs) -> Outcome {
    let options = faultline::campaign::CampaignOptions {
        plans: args.plans,
        seeds: args.seeds,
        budget: args.budget,
        parallel: args.parallel,
        stop_on_fail: args.stop_on_fail,
        retry_failed: args.retry_failed,
        shard: args.shard,
        campaign_seed: args.campaign_seed,
        id: args.id,
        time_limit: args.time_limit,
        git_rev: args.git_rev,
        keep_passing: args.keep_passing,
        resume: args.resume.map(|id| Some(id).filter(|id| !id.is_empty())),
        dry_run: args.dry_run,
        store_root: args.store,
        quiet: args.quiet,
    };
    if options.dry_run {
        let runs = faultline::campaign::plan_runs(&options).map_err(|e| campaign_error("campaign", e))?;
        for run in &runs {
            println!("{}\t{}\t{}\t{}", run.plan, run.seed_index, run.seed, run.command);
        }
        let planned: Vec<Value> = runs
            .iter()
            .map(|run| json!({"plan": run.plan, "seed_index": run.seed_index, "seed": run.seed, "repro": run.command}))
            .collect();
        return Ok(Ended::with(0, &json!({ "runs": planned })));
    }
    let outcome = faultline::campaign::run_campaign(&options).map_err(|e| campaign_error("campaign", e))?;
    print!("{}", outcome.render_summary());
    if args.shrink_failures && outcome.ending != faultline::campaign::schedule::Ending::Interrupted {
        let parallel = options.parallel.unwrap_or_else(faultline::campaign::default_parallel);
        for (class, result) in faultline::campaign::shrink_new_classes(
            &outcome,
            &options.store_root,
            args.shrink_budget.duration(),
            parallel,
        ) {
            match result {
                Ok(report) => println!(
                    "faultline campaign: class {class} shrunk: {} — {}/shrink/shrunk.yaml",
                    report.summary(),
                    report.source
                ),
                Err(e) => println!("faultline campaign: class {class} not shrunk: {e:#}"),
            }
        }
    }
    let code = outcome.exit_code();
    Ok(Ended::with(code, &campaign_summary(&outcome, code)))
}

/// `faultline campaign --json`: what the printed summary says, as data.
fn campaign_summary(outcome: &faultline::campaign::Outcome, code: u8) -> Value {
    use faultline::campaign::schedule::Ending;
    use faultline_reports::results::Verdict;
    let ending = match outcome.ending {
        Ending::Finished => "finished",
        Ending::Interrupted => "interrupted",
        Ending::StoppedOnFail => "stopped-on-fail",
        Ending::BudgetSpent => "budget-spent",
    };
    let count = |verdict: Verdict| outcome.rows.iter().filter(|(row, _)| row.verdict == verdict).count();
    let seeds: Vec<Value> = outcome
        .rows
        .iter()
        .map(|(row, class)| {
            let mut value = serde_json::to_value(row).expect("a seed row serializes");
            value["class"] = serde_json::to_value(class).expect("a failure class serializes");
            value
        })
        .collect();
    json!({
        "campaign": outcome.state,
        "ending": ending,
        "exit_code": code,
        "elapsed_ms": outcome.elapsed.as_millis() as u64,
        "counts": {"valid": count(Verdict::Valid), "invalid": count(Verdict::Invalid), "unknown": count(Verdict::Unknown)},
        "pruned": outcome.pruned,
        "index": outcome.index.display().to_string(),
        "seeds": seeds,
        "classes": outcome.triage,
    })
}

fn certify_command(options: faultline::certify::CertifyOptions) -> Outcome {
    let outcome = faultline::certify::certify(&options).map_err(|e| campaign_error("certify", e))?;
    let cert = &outcome.certification;
    for cell in &cert.cells {
        let verdict = cell.verdict.map_or("NOT RUN", shout);
        println!(
            "  {verdict:<8} {:<28} {:>2} nodes  seed {:<10}  {}",
            cell.plan, cell.nodes, cell.seed, cell.reason
        );
    }
    let (valid, invalid, unknown, not_run) = cert.counts();
    println!(
        "faultline certify: {} — {} cells: {valid} valid, {invalid} invalid, {unknown} unknown, {not_run} not \
         run — {}",
        if cert.certified { "CERTIFIED" } else { "NOT CERTIFIED" },
        cert.cells.len(),
        outcome.dir.join("certification.html").display()
    );
    let summary = WithDir {
        inner: cert,
        dir: outcome.dir.display().to_string(),
    };
    Ok(Ended::with(outcome.exit_code(), &summary))
}

/// A result document with the folder it was written to (`certify --json`).
#[derive(serde::Serialize)]
struct WithDir<'a, T> {
    #[serde(flatten)]
    inner: &'a T,
    dir: String,
}

/// `faultline triage`: the class table (stdout, or stderr with `--json`), exit 1 when a class is new.
fn triage_command(store: &Path, campaign: Option<&str>) -> Outcome {
    use faultline_reports::seeds::{read_seeds, FailureClass, SEEDS_FILE};
    use faultline_reports::triage;
    if !store.join(SEEDS_FILE).is_file() {
        return Err(Failed::bad_input(format!(
            "faultline triage: {} has no {SEEDS_FILE}: not a store a campaign has recorded seeds in (run `faultline \
             campaign PLAN... --store {}` first)",
            store.display(),
            store.display()
        )));
    }
    let file = read_seeds(store).map_err(|e| Failed::harness(format!("faultline triage: {e}")))?;
    if !file.bad_lines.is_empty() {
        eprintln!(
            "faultline triage: skipped {} line(s) of {SEEDS_FILE} that are not seed rows (first: line {}: {})",
            file.bad_lines.len(),
            file.bad_lines[0].0,
            file.bad_lines[0].1
        );
    }
    let notes = triage::read_notes(store).map_err(|e| match e {
        faultline_reports::ReportError::Notes { .. } => Failed::bad_input(format!("faultline triage: {e}")),
        e => Failed::harness(format!("faultline triage: {e}")),
    })?;
    let Some(classes) = triage::triage(&file.rows, campaign, &notes) else {
        return Err(Failed::bad_input(match campaign {
            Some(id) => format!("faultline triage: {SEEDS_FILE} has no campaign `{id}`"),
            None => format!("faultline triage: {SEEDS_FILE} has no seed rows yet"),
        }));
    };
    print!("{}", triage::render_text(&classes));
    let code = u8::from(classes.count(FailureClass::New) > 0);
    Ok(Ended::with(code, &classes))
}

fn merge_command(into: &Path, stores: &[PathBuf]) -> Outcome {
    if let Some(missing) = stores.iter().find(|store| !store.is_dir()) {
        return Err(Failed::bad_input(format!(
            "faultline merge: no store at {}",
            missing.display()
        )));
    }
    let report = faultline::merge::merge(into, stores).map_err(|e| Failed {
        code: input_or_harness(&e),
        message: format!("faultline merge: {e:#}"),
    })?;
    println!(
        "faultline merge: {} run(s) copied, {} already present, {} seed row(s) — {}",
        report.runs_copied,
        report.runs_present,
        report.rows,
        report.index.display()
    );
    Ok(Ended::ok())
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
