//! The `faultline-node` binary: `format`, `run`, `verify` and `dump` (see [`faultline_node::cli`]).

fn main() -> std::process::ExitCode {
    faultline_node::cli::main_from_args(std::env::args_os())
}
