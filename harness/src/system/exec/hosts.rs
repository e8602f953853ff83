//! The exec adapter with its nodes on hosts. A node's own commands (`start`, `prepare`, `wipe`, `verify`, `stop`,
//! `restart_all.position`, the membership hooks) run on its host through its hands, and its config files are
//! written there; the probes (`ready`, `status`) and the clients run here, on the control, and reach the node over
//! the network at `{host}`, as Jepsen's clients do. So on a host, `{faultline}` in a node's command is the faultline
//! installed there, and a file of the plan's folder that such a command names (a start script, a membership hook)
//! is copied to the host before the run (`WORKDIR/runs/RUN_ID/plan/...`, removed with the run's folder), the
//! command naming the copy.

use crate::remote::hands::Hands;
use crate::remote::workbench::FileWrite;
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most bytes of the plan's folder copied to each host (scripts and small files; a system's own binaries are
/// installed on its hosts, as on any machine it runs on).
const COPY_MAX_BYTES: u64 = 64 << 20;
/// Bytes per `write` request of a copy.
const CHUNK_BYTES: usize = 1 << 20;

/// What a node's commands name on its host instead of here.
pub(super) struct OnHosts {
    /// faultline on each node's host (`{faultline}` in a node's own commands).
    pub executables: Vec<PathBuf>,
    /// The plan's folder here (what `{plan_dir}` became at load), if the plan was loaded from one.
    pub plan_folder: Option<PathBuf>,
    /// Its copy on every host: `WORKDIR/runs/RUN_ID/plan`.
    pub plan_copy: PathBuf,
}

impl OnHosts {
    /// `command` (a node's own, expanded) as it runs on the host: what it names in the plan's folder, at the copy.
    pub fn rewrite(&self, mut command: LaunchCommand) -> LaunchCommand {
        let Some(folder) = &self.plan_folder else {
            return command;
        };
        let (from, to) = (
            format!("{}/", folder.display()),
            format!("{}/", self.plan_copy.display()),
        );
        let map = |word: &str| word.replace(&from, &to);
        command.program = PathBuf::from(map(&command.program.display().to_string()));
        command.args = command.args.iter().map(|a| map(a)).collect();
        command.env = command.env.iter().map(|(k, v)| (k.clone(), map(v))).collect();
        command
    }

    /// The files of the plan's folder that `texts` (a node's command words, environment values and config files)
    /// name, each with its path relative to the folder; a named folder stands for every file in it.
    pub fn named_files<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> anyhow::Result<Vec<(PathBuf, PathBuf)>> {
        let Some(folder) = &self.plan_folder else {
            return Ok(Vec::new());
        };
        let prefix = format!("{}/", folder.display());
        let mut named = std::collections::BTreeSet::new();
        for text in texts {
            for (at, _) in text.match_indices(&prefix) {
                let rest = &text[at + prefix.len()..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || "'\",;:={}".contains(c))
                    .unwrap_or(rest.len());
                let relative = rest[..end].trim_end_matches('/');
                if !relative.is_empty() && !relative.split('/').any(|part| part == "..") {
                    named.insert(PathBuf::from(relative));
                }
            }
        }
        let mut files = Vec::new();
        for relative in named {
            collect(folder, &relative, &mut files)?;
        }
        files.sort();
        files.dedup();
        let total: u64 = files
            .iter()
            .filter_map(|(local, _)| local.metadata().ok())
            .map(|m| m.len())
            .sum();
        anyhow::ensure!(
            total <= COPY_MAX_BYTES,
            "the node commands name {total} bytes of the plan's folder {} ({} files), more than the {COPY_MAX_BYTES} \
             a run copies to each host: install those files on the hosts and name them by their path there",
            folder.display(),
            files.len()
        );
        Ok(files)
    }

    /// Copies `files` (from [`OnHosts::named_files`]) to every node's host, modes kept.
    pub async fn copy(&self, hands: &[Arc<dyn Hands>], files: &[(PathBuf, PathBuf)]) -> anyhow::Result<()> {
        for (local, relative) in files {
            let bytes =
                std::fs::read(local).with_context(|| format!("reading {} to copy it to the hosts", local.display()))?;
            let mode = std::os::unix::fs::PermissionsExt::mode(&local.metadata()?.permissions()) & 0o7777;
            let target = self.plan_copy.join(relative);
            let copies = hands.iter().enumerate().map(|(node, hands)| {
                let (bytes, target) = (&bytes, &target);
                async move {
                    let mut chunks = bytes.chunks(CHUNK_BYTES);
                    let first = chunks.next().unwrap_or_default();
                    let mut done = hands
                        .write_file(target, first, FileWrite::Durable { mode: Some(mode) })
                        .await;
                    for chunk in chunks {
                        if done.is_ok() {
                            done = hands.write_file(target, chunk, FileWrite::Append).await;
                        }
                    }
                    done.map_err(|e| {
                        anyhow::anyhow!(
                            "copying {} to {}'s host ({}): {e}",
                            local.display(),
                            faultline_faults::process::node_name(node),
                            target.display()
                        )
                    })
                }
            });
            for copied in futures::future::join_all(copies).await {
                copied?;
            }
        }
        Ok(())
    }
}

/// Every file at `relative` in `folder` (the file itself, or every file under the folder it names), with its path
/// relative to `folder`. A name that does not exist here is left to the command (it fails on the host, saying so).
fn collect(folder: &Path, relative: &Path, files: &mut Vec<(PathBuf, PathBuf)>) -> anyhow::Result<()> {
    let local = folder.join(relative);
    let Ok(metadata) = std::fs::metadata(&local) else {
        return Ok(());
    };
    if metadata.is_file() {
        files.push((local, relative.to_path_buf()));
    } else if metadata.is_dir() {
        for entry in std::fs::read_dir(&local).with_context(|| format!("reading {}", local.display()))? {
            collect(folder, &relative.join(entry?.file_name()), files)?;
        }
    }
    Ok(())
}

/// Set once a command runs its plans on hosts (`--hosts`): the plan check then leaves a node's own programs to the
/// hosts, where they run ([`super::ExecSystem::check_programs_on_hosts`]). A process-wide switch because the plan
/// is checked as it is loaded, before anything knows where its nodes will be.
static NODE_PROGRAMS_ELSEWHERE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This process's plans run their nodes on hosts.
pub fn node_programs_on_hosts() {
    NODE_PROGRAMS_ELSEWHERE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process's plans run their nodes on hosts.
pub(super) fn node_programs_elsewhere() -> bool {
    NODE_PROGRAMS_ELSEWHERE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether the command of plan field `field` runs on the node's machine (the probes and the client run here).
pub(super) fn runs_on_node_machine(field: &str) -> bool {
    !matches!(
        field,
        "system.client.command" | "system.ready.command" | "system.status.command"
    )
}

/// The programs of `commands` (each with its plan field) that the host behind `hands` lacks: `command -v` there.
pub(super) async fn missing_programs(
    hands: &Arc<dyn Hands>,
    programs: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let mut args = vec![
        "-c".to_string(),
        "for p in \"$@\"; do command -v \"$p\" >/dev/null 2>&1 || echo \"$p\"; done".to_string(),
        "sh".to_string(),
    ];
    args.extend(programs.iter().map(|(_, program)| program.clone()));
    let command = LaunchCommand {
        program: PathBuf::from("sh"),
        args,
        env: Vec::new(),
        env_clear: false,
        user: None,
    };
    let output = hands.output(&command, std::time::Duration::from_secs(30)).await?;
    let missing: std::collections::BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    Ok(programs
        .iter()
        .filter(|(_, program)| missing.contains(program))
        .cloned()
        .collect())
}

/// The words of every command of a node's own (those that run on its host).
pub(super) fn node_command_words(config: &super::ExecConfig) -> Vec<&str> {
    let words = config
        .commands()
        .into_iter()
        .filter(|(field, _, _)| runs_on_node_machine(field))
        .flat_map(|(_, command, _)| command.iter().map(|word| word.value.as_str()));
    let env = config.env.values().map(|value| value.value.as_str());
    let files = config.config_files.values().map(|content| content.value.as_str());
    words.chain(env).chain(files).collect()
}

impl super::ExecSystem {
    /// Checks that every node's host has the programs of its node's own commands (as they run there: `{faultline}`
    /// the host's, files of the plan's folder their copies), all hosts at once; what one lacks is named with its
    /// plan field, so the run stops before any node starts.
    pub(super) async fn check_programs_on_hosts(&self) -> anyhow::Result<()> {
        let checks = (0..self.node_ips.len()).map(|node| async move {
            let vars = self.host_vars(node);
            let programs: Vec<(String, String)> = self
                .config
                .commands()
                .into_iter()
                .filter(|(field, _, _)| runs_on_node_machine(field))
                .map(|(field, spec, _)| {
                    (
                        field.to_string(),
                        self.node_command(spec, &vars).program.display().to_string(),
                    )
                })
                .collect();
            let hands = self.hands.get(node)?;
            Some((node, missing_programs(hands, &programs).await))
        });
        let mut lacking = Vec::new();
        for (node, missing) in futures::future::join_all(checks).await.into_iter().flatten() {
            let name = faultline_faults::process::node_name(node);
            match missing {
                Ok(missing) => lacking.extend(
                    missing
                        .into_iter()
                        .map(|(field, program)| format!("{name}'s host has no `{program}` ({field})")),
                ),
                Err(e) => lacking.push(format!("{name}'s host: cannot look for its programs: {e}")),
            }
        }
        anyhow::ensure!(
            lacking.is_empty(),
            "{}: a node's own commands run on its host; install what they name there, or name it by its path there",
            lacking.join("; ")
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_hosts(folder: &Path) -> OnHosts {
        OnHosts {
            executables: vec![PathBuf::from("/srv/fl/bin/faultline")],
            plan_folder: Some(folder.to_path_buf()),
            plan_copy: PathBuf::from("/srv/fl/runs/r1/plan"),
        }
    }

    #[test]
    fn given_commands_naming_the_plan_folder_when_scanned_should_copy_exactly_the_named_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("exec/lib")).unwrap();
        for file in ["exec/a.py", "exec/lib/b.py", "exec/lib/c.txt", "other.yaml"] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let folder = dir.path().display().to_string();
        let a = format!("{folder}/exec/a.py");
        let lib = format!("--lib={folder}/exec/lib/");
        let missing = format!("{folder}/exec/missing.sh");
        let escape = format!("{folder}/../etc/passwd");
        let texts = [
            a.as_str(),
            lib.as_str(),
            missing.as_str(),
            escape.as_str(),
            "/usr/bin/java",
            "{id}",
        ];
        let files = on_hosts(dir.path()).named_files(texts).unwrap();
        let relative: Vec<&Path> = files.iter().map(|(_, r)| r.as_path()).collect();
        assert_eq!(
            relative,
            [
                Path::new("exec/a.py"),
                Path::new("exec/lib/b.py"),
                Path::new("exec/lib/c.txt")
            ]
        );
    }

    #[test]
    fn given_a_node_command_when_rewritten_should_name_the_hosts_copy_and_leave_other_paths() {
        let hosts = on_hosts(Path::new("/home/me/plans"));
        let command = LaunchCommand {
            program: PathBuf::from("/home/me/plans/exec/start.sh"),
            args: vec!["--conf=/home/me/plans/exec/n.conf".into(), "/home/me/plansX/y".into()],
            env: vec![("HOOK".into(), "/home/me/plans/h.py".into())],
            env_clear: false,
            user: None,
        };
        let on_host = hosts.rewrite(command);
        assert_eq!(on_host.program, PathBuf::from("/srv/fl/runs/r1/plan/exec/start.sh"));
        assert_eq!(
            on_host.args,
            ["--conf=/srv/fl/runs/r1/plan/exec/n.conf", "/home/me/plansX/y"]
        );
        assert_eq!(
            on_host.env,
            [("HOOK".to_string(), "/srv/fl/runs/r1/plan/h.py".to_string())]
        );
    }
}
