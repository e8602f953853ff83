//! `faultline completions` and `faultline man`: the command line described for shells and for man.

use super::{Cli, Ended, Failed, Outcome};
use clap::CommandFactory;
use std::path::{Path, PathBuf};

/// `faultline completions` arguments.
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// `faultline man` arguments.
#[derive(clap::Args)]
pub struct ManArgs {
    /// Folder for faultline.1 and the subcommands' pages (created if needed).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// `faultline completions`.
pub(super) fn completions(args: CompletionsArgs) -> Outcome {
    clap_complete::generate(args.shell, &mut Cli::command(), "faultline", &mut std::io::stdout());
    Ok(Ended::ok())
}

/// `faultline man`.
pub(super) fn man(args: ManArgs) -> Outcome {
    man_command(args.out_dir.as_deref())
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
