//! `faultline`: the command line. Thin glue over the harness modules.
//!
//! Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or plan, 255 harness error.
//! `faultline node ARGS` runs the embedded reference node (`faultline-node ARGS`).

use clap::{Parser, Subcommand};
use faultline::plan::{Plan, PlanError, DEFAULT_PLAN_YAML};
use faultline::run::{run, RunOptions};
use faultline_faults::units::Millis;
use faultline_reports::results::{shout, Results};
use std::path::PathBuf;
use std::process::ExitCode;

const EXIT_BAD_INPUT: u8 = 254;
const EXIT_HARNESS_ERROR: u8 = 255;

#[derive(Parser)]
#[command(
    name = "faultline",
    version,
    about = "Jepsen-style fault injection for replicated storage and streaming systems"
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
        #[arg(long = "mutant")]
        mutants: Vec<String>,
        /// Store folder.
        #[arg(long, default_value = "store")]
        store: PathBuf,
    },
    /// Show plans.
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
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Re-run every check on a run's store folder (works on crashed runs too).
    Analyze {
        /// The run's store folder (e.g. store/latest).
        dir: PathBuf,
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
        /// Model.
        #[arg(long, default_value = "cas-register")]
        model: String,
        /// Wall-time budget; past it the verdict is unknown.
        #[arg(long, value_parser = parse_millis, default_value = "30s")]
        timeout: Millis,
    },
    /// Remove what dead runs left behind (processes, fault filesystem mounts, network namespaces, guard routes, nft
    /// tables); every `faultline run` does this first. Live runs are never touched.
    Clean {
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
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
}

fn parse_shard(text: &str) -> Result<faultline::campaign::space::Shard, String> {
    text.parse()
}

fn parse_millis(text: &str) -> Result<Millis, String> {
    Millis::parse(text)
}

fn main() -> ExitCode {
    // `faultline node ...` is the embedded reference node (see harness/src/system/reference.rs): hand over before
    // the harness installs anything of its own.
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
    match cli.command {
        Command::Run {
            plan,
            time_limit,
            seed,
            nodes,
            store,
            quiet,
        } => run_command(
            plan,
            RunOverrides {
                time_limit,
                seed,
                nodes,
            },
            store,
            quiet,
        ),
        Command::Campaign(args) => campaign_command(args),
        Command::Certify {
            suite,
            parallel,
            git_rev,
            store,
            quiet,
        } => certify_command(faultline::certify::CertifyOptions {
            suite,
            store_root: store,
            parallel: parallel.unwrap_or_else(faultline::campaign::default_parallel),
            git_rev,
            quiet,
        }),
        Command::Merge { stores, store } => merge_command(&store, &stores),
        Command::Plan {
            print_default,
            check,
            schedule: Some(path),
            seed,
        } => {
            let _ = (print_default, check);
            schedule_command(&path, seed)
        }
        Command::Plan {
            print_default,
            check,
            schedule: None,
            ..
        } => plan_command(print_default, check),
        Command::Analyze { dir } => analyze_command(&dir),
        Command::Matrix {
            seeds,
            time_limit,
            first_seed,
            mutants,
            store,
        } => {
            let options = faultline::matrix::MatrixOptions {
                seeds,
                time_limit,
                store_root: store,
                only: mutants,
                first_seed,
            };
            matrix_command(&options)
        }
        Command::Report { dir } => report_command(&dir),
        Command::Check { file, model, timeout } => check_command(&file, &model, timeout),
        Command::Clean { dry_run } => clean_command(dry_run),
    }
}

fn clean_command(dry_run: bool) -> ExitCode {
    let leftovers = faultline::cleanup::sweep(dry_run);
    if leftovers.is_empty() {
        println!("faultline clean: nothing left by dead runs");
    } else {
        print!("{}", leftovers.describe(dry_run));
    }
    if leftovers.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_HARNESS_ERROR)
    }
}

fn plan_error(e: PlanError) -> ExitCode {
    eprintln!("faultline: bad plan: {e}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// `faultline run` overrides of the plan.
struct RunOverrides {
    time_limit: Option<Millis>,
    seed: Option<u64>,
    nodes: Option<u64>,
}

fn run_command(plan_path: Option<PathBuf>, overrides: RunOverrides, store: PathBuf, quiet: bool) -> ExitCode {
    let RunOverrides {
        time_limit,
        seed,
        nodes,
    } = overrides;
    let loaded = match &plan_path {
        Some(path) if path.exists() => Plan::load(path),
        // Not a file: a built-in plan's name (`faultline run canary`).
        Some(path) => faultline::builtin::load(&path.display().to_string()),
        None => Ok(Plan::default_plan()),
    };
    let mut plan = match loaded {
        Ok(plan) => plan,
        Err(e) => return plan_error(e),
    };
    if let Some(limit) = time_limit {
        if limit.0 == 0 {
            eprintln!("faultline: --time-limit must be > 0");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        plan.time_limit = limit;
    }
    if seed.is_some() {
        plan.seed = seed;
    }
    if let Some(nodes) = nodes {
        plan.system.set_nodes(nodes as usize);
        let origin = format!("{} with --nodes {nodes}", plan.name);
        if let Err(e) = plan.validate(&origin) {
            return plan_error(e);
        }
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
            ExitCode::from(outcome.results.verdict.exit_code() as u8)
        }
        Err(e) => {
            faultline::supervisor::kill_all_spawned();
            eprintln!("faultline: harness error: {e:#}");
            ExitCode::from(EXIT_HARNESS_ERROR)
        }
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

fn plan_command(print_default: bool, check: Option<PathBuf>) -> ExitCode {
    if let Some(path) = check {
        return match Plan::load(&path) {
            Ok(plan) => {
                print!("{}", plan.to_yaml());
                ExitCode::SUCCESS
            }
            Err(e) => plan_error(e),
        };
    }
    if print_default {
        print!("{DEFAULT_PLAN_YAML}");
        return ExitCode::SUCCESS;
    }
    eprintln!("faultline plan: say --print-default or --check FILE");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn schedule_command(path: &std::path::Path, seed: Option<u64>) -> ExitCode {
    let plan = if path == std::path::Path::new("default") {
        Ok(Plan::default_plan())
    } else {
        Plan::load(path)
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => return plan_error(e),
    };
    let Some(seed) = seed.or(plan.seed) else {
        eprintln!("faultline plan --schedule: the plan has no seed; pass --seed N");
        return ExitCode::from(EXIT_BAD_INPUT);
    };
    for fault in faultline::run::fault_schedule(&plan, seed) {
        println!("{}", serde_json::to_string(&fault).expect("a schedule serializes"));
    }
    ExitCode::SUCCESS
}

fn analyze_command(dir: &std::path::Path) -> ExitCode {
    match faultline::analyze::analyze_and_write(dir) {
        Ok(results) => {
            print_checks(&results);
            println!(
                "faultline: {} — {} — {}",
                shout(results.verdict),
                results.reason,
                dir.display()
            );
            ExitCode::from(results.verdict.exit_code() as u8)
        }
        Err(e) => {
            eprintln!("faultline: cannot analyze {}: {e:#}", dir.display());
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn matrix_command(options: &faultline::matrix::MatrixOptions) -> ExitCode {
    let unknown: Vec<&String> = options
        .only
        .iter()
        .filter(|m| !faultline::matrix::MUTANTS.iter().any(|(name, _)| name == m))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = faultline::matrix::MUTANTS.iter().map(|(name, _)| *name).collect();
        eprintln!(
            "faultline matrix: unknown mutant(s) {unknown:?}; known: {}",
            known.join(", ")
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    match runtime.block_on(faultline::matrix::run_matrix(options)) {
        Ok((cells, dir)) => {
            print!("{}", faultline::matrix::render_table(&cells));
            println!("faultline matrix: {}", dir.join("matrix.html").display());
            let missed = cells.iter().any(|c| c.mutant != "correct" && c.detected == 0);
            let false_alarm = cells.iter().any(|c| c.mutant == "correct" && c.detected > 0);
            ExitCode::from(if missed || false_alarm { 1 } else { 0 })
        }
        Err(e) => {
            faultline::supervisor::kill_all_spawned();
            eprintln!("faultline matrix: harness error: {e:#}");
            ExitCode::from(EXIT_HARNESS_ERROR)
        }
    }
}

fn report_command(dir: &std::path::Path) -> ExitCode {
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
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("faultline report: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn check_command(file: &std::path::Path, model: &str, timeout: Millis) -> ExitCode {
    let model = match model.parse::<faultline_workloads::ModelKind>() {
        Ok(model) => model,
        Err(e) => {
            eprintln!("faultline check: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let history = match faultline_workloads::load_history_file(file, None) {
        Ok(history) => history,
        Err(e) => {
            eprintln!("faultline check: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let options = faultline_workloads::CheckOptions {
        timeout: timeout.duration(),
        ..Default::default()
    };
    let result = faultline_workloads::check_history(&history, model, &options);
    print!("{}", faultline_workloads::render_text(&result));
    ExitCode::from(result.verdict.exit_code() as u8)
}

fn campaign_error(command: &str, e: faultline::campaign::CampaignError) -> ExitCode {
    use faultline::campaign::CampaignError;
    match e {
        CampaignError::Input(message) => {
            eprintln!("faultline {command}: {message}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        CampaignError::Harness(e) => {
            eprintln!("faultline {command}: harness error: {e:#}");
            ExitCode::from(EXIT_HARNESS_ERROR)
        }
    }
}

fn campaign_command(args: CampaignArgs) -> ExitCode {
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
        return match faultline::campaign::plan_runs(&options) {
            Ok(runs) => {
                for run in runs {
                    println!("{}\t{}\t{}\t{}", run.plan, run.seed_index, run.seed, run.command);
                }
                ExitCode::SUCCESS
            }
            Err(e) => campaign_error("campaign", e),
        };
    }
    match faultline::campaign::run_campaign(&options) {
        Ok(outcome) => {
            print!("{}", outcome.render_summary());
            ExitCode::from(outcome.exit_code())
        }
        Err(e) => campaign_error("campaign", e),
    }
}

fn certify_command(options: faultline::certify::CertifyOptions) -> ExitCode {
    match faultline::certify::certify(&options) {
        Ok(outcome) => {
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
            ExitCode::from(outcome.exit_code())
        }
        Err(e) => campaign_error("certify", e),
    }
}

fn merge_command(into: &std::path::Path, stores: &[PathBuf]) -> ExitCode {
    match faultline::merge::merge(into, stores) {
        Ok(report) => {
            println!(
                "faultline merge: {} run(s) copied, {} already present, {} seed row(s) — {}",
                report.runs_copied,
                report.runs_present,
                report.rows,
                report.index.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("faultline merge: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
