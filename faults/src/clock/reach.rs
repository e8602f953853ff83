//! Which node binaries libfaketime can reach, decided before a run starts.
//!
//! libfaketime works through `LD_PRELOAD`: the dynamic loader maps it ahead of libc, and its `clock_gettime`,
//! `gettimeofday` and `time` replace libc's. It cannot reach a process that
//!
//! - is **statically linked**: the ELF has no `PT_INTERP` program header, so no dynamic loader runs and
//!   `LD_PRELOAD` is never read;
//! - is a **Go** binary (a `.go.buildinfo` section, or a `.note.go.buildid` note): Go's runtime reads the clocks
//!   through the vDSO itself, never through libc, even when the binary is dynamically linked (cgo). etcd is Go.
//!
//! A clock fault on such a node would do nothing while the history claimed a clock had moved, so the plan is
//! refused instead, naming the binary and why.
//!
//! **What is looked at.** The program a node's start command runs (the adapter resolves it: `faultline-node`, etcd's
//! binary, an exec plan's `start[0]` through `PATH`). A script (`#!`) is judged by its interpreter, and `sh -c
//! 'exec ./db ...'` / `bash -c ...` by the first word of its command when that is a plain program path, or a name
//! on `PATH` that is not a shell builtin (after an optional `exec`), since those are the wrappers plans use. A wrapper
//! that starts with a builtin (`cd "$1" && ...`, `echo $$ > pid && exec "$@"`) or an expansion is judged by its shell
//! alone: what it starts cannot be seen without running it, and is the plan's responsibility (the node's `/status`
//! clock, if it has one, or its log timestamps show whether time moved). `plans/exec-etcd.yaml` is such a case: its
//! script runs etcd, which no clock fault can reach.
//!
//! ELF parsing uses the `object` crate.

use object::elf::PT_INTERP;
use object::read::elf::{ElfFile64, ProgramHeader};
use object::Object;
use std::path::{Path, PathBuf};

/// Why libfaketime cannot reach a binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    /// The binary looked at.
    pub binary: PathBuf,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "clock faults cannot reach {}: {}; aim clock faults only at systems whose nodes run dynamically \
             linked, non-Go programs",
            self.binary.display(),
            self.reason
        )
    }
}

/// The shells whose `-c` command is looked through.
const SHELLS: &[&str] = &["sh", "bash", "dash"];

/// Checks the program a node runs, `program` with `args` (its start command; `program` resolved through `PATH` when
/// it has no `/`). `Ok` names the binary that was judged reachable.
pub fn check_command(program: &Path, args: &[String]) -> Result<PathBuf, Unreachable> {
    let resolved = resolve(program)?;
    let is_shell = program
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|name| SHELLS.contains(&name));
    if is_shell && args.first().map(String::as_str) == Some("-c") {
        if let Some(inner) = args.get(1).and_then(|command| first_program(command)) {
            return check_command(Path::new(&inner), &[]);
        }
    }
    check_binary(&resolved)
}

/// Checks one file: an ELF executable, or a script judged by its interpreter.
pub fn check_binary(path: &Path) -> Result<PathBuf, Unreachable> {
    let unreachable = |reason: String| Unreachable {
        binary: path.to_path_buf(),
        reason,
    };
    let data = std::fs::read(path).map_err(|e| unreachable(format!("it cannot be read ({e})")))?;
    if let Some(line) = data.strip_prefix(b"#!") {
        let line = String::from_utf8_lossy(line.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
        let mut words = line.split_whitespace();
        let interpreter = words.next().unwrap_or_default();
        return match (interpreter.rsplit('/').next(), words.next()) {
            (Some("env"), Some(program)) => check_command(Path::new(program), &[]),
            _ if interpreter.is_empty() => Err(unreachable("its `#!` line names no interpreter".into())),
            _ => check_binary(Path::new(interpreter)),
        };
    }
    let elf = ElfFile64::<object::Endianness>::parse(&*data)
        .map_err(|e| unreachable(format!("it is not a 64-bit ELF executable or script ({e})")))?;
    if elf.section_by_name(".go.buildinfo").is_some() || elf.section_by_name(".note.go.buildid").is_some() {
        return Err(unreachable(
            "it is a Go binary (it has a .go.buildinfo section): Go's runtime reads the clocks through the vDSO \
             itself, past libfaketime's LD_PRELOAD"
                .into(),
        ));
    }
    let endian = elf.endian();
    let dynamic = elf
        .elf_program_headers()
        .iter()
        .any(|header| header.p_type(endian) == PT_INTERP);
    if !dynamic {
        return Err(unreachable(
            "it is statically linked (no PT_INTERP program header): no dynamic loader runs, so libfaketime's \
             LD_PRELOAD is never read"
                .into(),
        ));
    }
    Ok(path.to_path_buf())
}

/// `program` as a file: itself if it has a `/`, else the first match on `PATH`.
fn resolve(program: &Path) -> Result<PathBuf, Unreachable> {
    if program.components().count() > 1 || program.is_absolute() {
        return Ok(program.to_path_buf());
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| Unreachable {
            binary: program.to_path_buf(),
            reason: "it is not on PATH, so it cannot be looked at".into(),
        })
}

/// Shell builtins and keywords a wrapper's command may start with: what follows them is not seen.
const SHELL_WORDS: &[&str] = &[
    "cd", "echo", "printf", "set", "export", "test", "[", "if", "for", "while", "case", "true", ":", "ulimit", "umask",
    "trap", "eval", "read", "source", ".", "{", "(",
];

/// The program a shell's `-c` command starts first: its first word (after `exec`), when that is a plain path, or a
/// plain name found on `PATH` that is not a shell builtin (no quoting, expansion or template to resolve).
fn first_program(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    let mut first = words.next()?;
    if first == "exec" {
        first = words.next()?;
    }
    let plain = first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+'));
    let path_like = first.contains('/');
    let known = path_like || (!SHELL_WORDS.contains(&first) && resolve(Path::new(first)).is_ok());
    (plain && known).then(|| first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_dynamically_linked_c_binary_when_checked_should_be_reachable() {
        let sh = resolve(Path::new("sh")).expect("sh is on PATH");
        assert!(check_binary(&sh).is_ok(), "{:?}", check_binary(&sh));
    }

    /// Debian's `ldconfig` is static-pie (libc-bin, on every Debian system); etcd (`etcd-server`) is Go.
    #[test]
    fn given_a_static_binary_or_a_go_binary_when_checked_should_refuse_naming_it_and_why() {
        let refused = check_binary(Path::new("/sbin/ldconfig")).unwrap_err();
        assert_eq!(refused.binary, PathBuf::from("/sbin/ldconfig"));
        assert!(refused.reason.contains("statically linked"), "{refused}");
        let etcd = Path::new("/usr/bin/etcd");
        if !etcd.is_file() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI needs etcd-server installed"
            );
            eprintln!("skipping the Go half: /usr/bin/etcd is not installed (apt-get install -y etcd-server)");
            return;
        }
        let refused = check_binary(etcd).unwrap_err();
        assert!(refused.reason.contains("Go binary"), "{refused}");
        assert!(refused.to_string().contains("/usr/bin/etcd"), "{refused}");
    }

    #[test]
    fn given_a_script_when_checked_should_judge_its_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 1\n").unwrap();
        assert_eq!(check_binary(&script), Ok(PathBuf::from("/bin/sh")));
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "hello").unwrap();
        let refused = check_binary(&text).unwrap_err();
        assert!(refused.reason.contains("not a 64-bit ELF"), "{refused}");
    }

    #[test]
    fn given_a_shell_wrapper_when_checked_should_look_at_what_it_execs() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("db");
        std::fs::write(&fake, "not an elf").unwrap();
        let command = format!("exec {} --port 1", fake.display());
        let refused = check_command(Path::new("sh"), &["-c".into(), command]).unwrap_err();
        assert_eq!(refused.binary, fake);
        for opaque in [
            "\"$DB\" serve",
            "cd \"$1\" && exec ./db",
            "echo $$ > pid && exec \"$@\"",
        ] {
            let judged = check_command(Path::new("sh"), &["-c".into(), opaque.into()]);
            assert!(
                judged.is_ok(),
                "an opaque wrapper is judged by its shell: {opaque}: {judged:?}"
            );
        }
    }
}
