//! Which program a node's start command runs, for the run's record (`node_binary` and its digest in the report).
//!
//! Plans often start a node through a shell that then becomes it: `[sh, -c, 'echo $$ > "$0" && exec "$@"', PIDFILE,
//! PROGRAM, ARGS...]` or `[sh, -c, 'exec nats-server -c conf']`. The process is the program after `exec`, not `sh`,
//! and a report that names `sh` (with no digest: `sh` is no path) says nothing about what was tested. A full shell
//! parser is not needed for that word: the script is split on whitespace and the word after the last `exec` (past
//! its options and any `NAME=value`) is unquoted; `"$@"` and `$1`..`$9` stand for the command's own arguments after
//! the script (`$0` is the first). A program named by any other variable cannot be known before the shell runs: the
//! shell is reported then.

use std::path::{Path, PathBuf};

/// Shells whose `-c SCRIPT` form is looked into.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// The program `start` (a node's expanded start command) runs, resolved on `PATH` when it is a bare name.
pub fn launched_program(start: &[String]) -> PathBuf {
    let program = exec_target(start).unwrap_or_else(|| start.first().cloned().unwrap_or_default());
    resolve(&program)
}

/// The program a shell's `-c` script `exec`s, if `start` is such a command and the script says which.
fn exec_target(start: &[String]) -> Option<String> {
    let shell = Path::new(start.first()?).file_name()?.to_str()?;
    if !SHELLS.contains(&shell) || start.get(1).map(String::as_str) != Some("-c") {
        return None;
    }
    let script = start.get(2)?;
    let words: Vec<&str> = script.split_whitespace().collect();
    let Some(after_exec) = words.iter().rposition(|w| *w == "exec").map(|at| at + 1) else {
        return last_command(script);
    };
    let word = words[after_exec..]
        .iter()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .find(|w| !w.starts_with('-') && !w.contains('='))?;
    // `$0` is the first argument after the script (`start[3]`), so `$n` (and `"$@"`, from `$1` on) is `start[3 + n]`.
    let positional = match word {
        "$@" | "$*" => Some(1),
        _ => word.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()),
    };
    match positional {
        Some(n) => start.get(3 + n).cloned(),
        None if word.starts_with('$') || word.is_empty() => None,
        None => Some(word.to_string()),
    }
}

/// Shell builtins a script's last command may be instead of the program (then the shell is reported).
const BUILTINS: &[&str] = &[
    "cd", "echo", "exit", "export", "set", "trap", "wait", "true", "false", ":", ".",
];

/// A script without `exec` (`cd /srv && tarantool init.lua`): the shell stays the parent, and the program is the
/// first word of its last simple command (after `&&`, `||`, `;` or a newline), unless that is a builtin or a
/// variable.
fn last_command(script: &str) -> Option<String> {
    let last = script
        .split(['\n', ';'])
        .flat_map(|part| part.split("&&"))
        .flat_map(|part| part.split("||"))
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .last()?;
    let word = last
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .find(|w| !w.contains('='))?;
    let known = !word.is_empty() && !word.starts_with(['$', '-', '(', '{']) && !BUILTINS.contains(&word);
    known.then(|| word.to_string())
}

/// `program` as a path: itself when it names one, else the first match on `PATH` (itself when none matches).
fn resolve(program: &str) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}

/// A program that exists: a path to a file, a template (checked when it runs), or a name found on `PATH`.
pub(super) fn check_program(program: &str) -> Result<(), String> {
    if program.contains('{') {
        return Ok(());
    }
    let path = Path::new(program);
    if program.contains('/') {
        return match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => Ok(()),
            Ok(_) => Err(format!("`{program}` is not a file")),
            Err(e) => Err(format!("`{program}` cannot be run: {e} (build it, or fix the path)")),
        };
    }
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .any(|dir| dir.join(program).is_file());
    if found {
        Ok(())
    } else {
        Err(format!(
            "`{program}` is not on PATH (install it, or give a path such as `./{program}`, relative to the plan)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<String> {
        text.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn given_a_shell_that_execs_its_arguments_when_named_should_name_the_program_it_becomes() {
        let start = words(&[
            "sh",
            "-c",
            r#"echo $$ > "$0" && exec "$@""#,
            "/s/nodes/n1/node.pid",
            "/opt/faultline/bin/faultline",
            "node",
            "run",
        ]);
        assert_eq!(launched_program(&start), PathBuf::from("/opt/faultline/bin/faultline"));
    }

    #[test]
    fn given_a_shell_script_that_execs_a_program_by_name_when_named_should_find_it_on_path() {
        let start = words(&["/bin/sh", "-c", "ulimit -n 4096; exec env GODEBUG=x=1 sh -c true"]);
        // `env` is the program `exec` runs here; it is on PATH on every machine that has a shell.
        let found = launched_program(&start);
        assert!(found.is_absolute() && found.ends_with("env"), "{found:?}");
        let nats = words(&["sh", "-c", "exec /usr/sbin/nats-server -c /s/n1.conf"]);
        assert_eq!(launched_program(&nats), PathBuf::from("/usr/sbin/nats-server"));
        let positional = words(&["bash", "-c", "exec $1 --data-dir x", "bash", "/usr/bin/redis-server"]);
        assert_eq!(launched_program(&positional), PathBuf::from("/usr/bin/redis-server"));
    }

    #[test]
    fn given_a_program_in_a_variable_or_no_shell_when_named_should_keep_the_command_itself() {
        let variable = words(&["sh", "-c", "exec ${NATS_SERVER:-nats-server} -c x"]);
        assert!(launched_program(&variable).ends_with("sh"), "the shell, not a guess");
        let direct = words(&["/usr/bin/java", "-cp", "zookeeper.jar"]);
        assert_eq!(launched_program(&direct), PathBuf::from("/usr/bin/java"));
    }

    /// A script that runs the program without `exec` names the program, not `/usr/bin/sh`; one whose last command
    /// is a builtin or a variable still names the shell.
    #[test]
    fn given_a_shell_script_without_exec_when_named_should_name_its_last_commands_program() {
        let start = words(&["sh", "-c", "cd /srv/n1 && ulimit -n 4096; tarantool init.lua"]);
        assert_eq!(
            launched_program(&start).file_name().and_then(|n| n.to_str()),
            Some("tarantool")
        );
        let start = words(&["sh", "-c", "LD_LIBRARY_PATH=/x /opt/db/bin/db --port 1"]);
        assert_eq!(launched_program(&start), PathBuf::from("/opt/db/bin/db"));
        let start = words(&["sh", "-c", "$SERVER --port 1"]);
        assert_eq!(
            launched_program(&start).file_name().and_then(|n| n.to_str()),
            Some("sh")
        );
        let start = words(&["sh", "-c", "db --port 1 &\nwait"]);
        assert_eq!(
            launched_program(&start).file_name().and_then(|n| n.to_str()),
            Some("sh")
        );
    }
}
