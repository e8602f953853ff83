//! What dead agents left on a host, found and removed by `faultline clean --hosts` (the agent's `sweep`): an agent
//! cleans up after itself whenever its channel closes, so leftovers mean an agent that was itself killed (`kill -9`,
//! the OOM killer) or a host rebooted mid-cleanup. Everything an agent makes carries its pid: its processes
//! `FAULTLINE_RUN_ID=agent-<pid>`, its nft table `faultline_agent_<pid>`, its fault filesystems the fsname tag
//! `agent-p<pid>`. Only those of agents no longer alive are touched, and the host's other faultline leftovers (a
//! local run's, if the host also runs faultline itself) go through the same sweep as `faultline clean` there.

use super::runlock::processes_tagged;
use serde_json::{json, Value};

/// Whether process `pid` is a live faultline agent.
fn agent_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| cmdline.split('\0').any(|arg| arg == "agent"))
        .unwrap_or(false)
}

/// The agent pids named by this host's processes' `FAULTLINE_RUN_ID=agent-<pid>` tags.
fn tagged_agents() -> Vec<u32> {
    let mut agents = std::collections::BTreeSet::new();
    let Ok(proc_dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in proc_dir.flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let prefix = format!("{}=agent-", crate::supervisor::RUN_ID_ENV);
        for var in environ.split(|&b| b == 0) {
            if let Some(pid) = var
                .strip_prefix(prefix.as_bytes())
                .and_then(|p| std::str::from_utf8(p).ok())
                .and_then(|p| p.parse().ok())
            {
                agents.insert(pid);
            }
        }
    }
    agents.into_iter().collect()
}

/// The nft tables of agents (`faultline_agent_<pid>`), by pid.
fn agent_tables() -> Result<Vec<(String, u32)>, String> {
    let output = std::process::Command::new("nft")
        .args(["list", "tables"])
        .output()
        .map_err(|e| format!("cannot run nft: {e}"))?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let name = line.split_whitespace().last()?;
            let pid = name.strip_prefix("faultline_agent_")?.parse().ok()?;
            Some((name.to_string(), pid))
        })
        .collect())
}

/// Sweeps (or with `dry_run`, lists) what dead agents left on this host, and the host's other faultline leftovers.
/// Blocking.
pub fn sweep_host(dry_run: bool) -> Value {
    let mut processes = Vec::new();
    let mut tables = Vec::new();
    let mut errors = Vec::new();
    for agent in tagged_agents().into_iter().filter(|&pid| !agent_alive(pid)) {
        for pid in processes_tagged(&format!("agent-{agent}")) {
            if !dry_run {
                // Tagged by one of ours that died: its own process group.
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            processes.push(json!({"pid": pid, "agent": agent}));
        }
    }
    // (No nft: no agent could have made a table.)
    let dead_tables = agent_tables()
        .unwrap_or_default()
        .into_iter()
        .filter(|&(_, pid)| !agent_alive(pid));
    for (table, _) in dead_tables {
        if !dry_run {
            let deleted = std::process::Command::new("nft")
                .args(["delete", "table", "inet", &table])
                .output();
            if let Err(e) = deleted {
                errors.push(format!("deleting nft table {table}: {e}"));
                continue;
            }
        }
        tables.push(table);
    }
    // Dead agents' fault filesystems (their tags name a dead pid), and any other faultline leftovers here.
    let local = super::cleanup::sweep_runs(dry_run);
    errors.extend(local.errors.iter().cloned());
    json!({
        "processes": processes,
        "tables": tables,
        "mounts": local.mounts,
        // What the host's own sweep did besides (a local run's leftovers there), one line per kind.
        "swept": local.describe(dry_run).lines().filter(|l| !l.contains("fault filesystems")).collect::<Vec<_>>(),
        "errors": errors,
    })
}
