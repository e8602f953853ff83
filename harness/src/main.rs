//! `faultline`: the command line. It parses the arguments and dispatches to [`faultline::cli`], which holds one
//! module per command.
//! `faultline node ARGS` runs the embedded reference node (`faultline-node ARGS`).

use clap::Parser;
use faultline::cli::{Cli, JsonStdout, EXIT_BAD_INPUT, EXIT_HARNESS_ERROR};
use std::process::ExitCode;

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
    faultline::run::logging::install();
    let json = cli.command.wants_json();
    let mut json_stdout = match JsonStdout::take(json) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("faultline: --json: cannot set up stdout: {e}");
            return ExitCode::from(EXIT_HARNESS_ERROR);
        }
    };
    let (code, object) = faultline::cli::dispatch(cli.command);
    if let (Some(out), Some(object)) = (json_stdout.as_mut(), object) {
        if let Err(e) = out.write_object(&object) {
            eprintln!("faultline: --json: cannot write stdout: {e}");
            return ExitCode::from(EXIT_HARNESS_ERROR);
        }
    }
    ExitCode::from(code)
}
