//! Leftovers of dead runs, of every kind, whatever the new plan uses: processes tagged with a dead run's id, fault
//! filesystem mounts of harness processes that are gone, and the network namespaces, guard routes and nft tables of
//! dead runs. Every command that runs nodes sweeps them first (`faultline run`; campaigns, certifications and
//! matrices start runs), and `faultline clean [--dry-run]` does it on demand.
//!
//! A run is dead when nobody holds its lock (`runlock`): a harness killed by SIGKILL, SIGTERM or a panic at any
//! phase leaves its lock unheld, so whatever it left is recognised by the next start. Nothing of a live run, and
//! nothing without faultline's names, is ever touched.

use crate::run::runlock;
use faultline_faults::network::netns;
use std::fmt::Write;

/// What a sweep removed (or, in a dry run, would remove).
#[derive(Debug, Default)]
pub struct Leftovers {
    /// Processes of dead runs (pid, run id).
    pub processes: Vec<(i32, String)>,
    /// Dead runs whose lock files went.
    pub runs: Vec<String>,
    /// Fault filesystem mountpoints.
    pub mounts: Vec<String>,
    /// Network namespaces, guard routes and host nft tables.
    pub network: netns::SweepReport,
    /// Folders of ssh's control sockets of dead controls (their masters closed).
    pub ssh: Vec<String>,
    /// What could not be removed, and why.
    pub errors: Vec<String>,
}

impl Leftovers {
    /// Nothing was left.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
            && self.mounts.is_empty()
            && self.network.namespaces.is_empty()
            && self.network.guard_routes.is_empty()
            && self.network.tables.is_empty()
            && self.ssh.is_empty()
            && self.errors.is_empty()
    }

    /// One line per kind, e.g. `killed 3 processes of dead runs [...]`, for people.
    pub fn describe(&self, dry_run: bool) -> String {
        let mut out = String::new();
        let verb = |done: &str, would: &str| if dry_run { would.to_string() } else { done.to_string() };
        let mut line = |what: String, items: Vec<String>| {
            if !items.is_empty() {
                let _ = writeln!(out, "{what} ({}): {}", items.len(), items.join(", "));
            }
        };
        line(
            verb("killed processes of dead runs", "processes of dead runs to kill"),
            self.processes
                .iter()
                .map(|(pid, run)| format!("{pid} (run {run})"))
                .collect(),
        );
        line(
            verb("unmounted fault filesystems", "fault filesystems to unmount"),
            self.mounts.clone(),
        );
        line(
            verb("deleted network namespaces", "network namespaces to delete"),
            self.network.namespaces.clone(),
        );
        line(
            verb("deleted guard routes", "guard routes to delete"),
            self.network.guard_routes.clone(),
        );
        line(
            verb("deleted nft tables", "nft tables to delete"),
            self.network.tables.clone(),
        );
        line(
            verb(
                "closed ssh connections of dead controls",
                "ssh connections of dead controls to close",
            ),
            self.ssh.clone(),
        );
        line("could not clean".to_string(), self.errors.clone());
        out
    }
}

/// Sweeps (or with `dry_run`, lists) every leftover of dead runs, and the ssh connections of dead controls.
/// Blocking: call it off the async runtime.
pub fn sweep(dry_run: bool) -> Leftovers {
    let mut leftovers = sweep_runs(dry_run);
    leftovers.ssh = crate::remote::ssh::sweep_control_dirs(dry_run)
        .into_iter()
        .map(|dir| dir.display().to_string())
        .collect();
    leftovers
}

/// [`sweep`] but for ssh's connections: what a host's agent sweeps there (a host is no control).
pub fn sweep_runs(dry_run: bool) -> Leftovers {
    let runs_dir = runlock::runs_dir();
    let mut leftovers = Leftovers::default();
    match runlock::sweep_or_list(&runs_dir, dry_run) {
        Ok(sweep) => {
            leftovers.processes = sweep.killed;
            leftovers.runs = sweep.dead_runs;
        }
        Err(e) => leftovers
            .errors
            .push(format!("run locks in {}: {e}", runs_dir.display())),
    }
    // Deepest first, lazily: a dead FUSE mount ("Transport endpoint is not connected") blocks `rm -rf store`.
    let mounts = if dry_run {
        faultline_faults::fusefs::orphans().map(|mounts| mounts.into_iter().map(|m| (m, None)).collect::<Vec<_>>())
    } else {
        faultline_faults::fusefs::sweep_orphans().map(|swept| swept.into_iter().map(|s| (s.mount, s.error)).collect())
    };
    match mounts {
        Ok(mounts) => {
            for (mount, error) in mounts {
                let path = mount.mountpoint.display().to_string();
                match error {
                    Some(e) => leftovers.errors.push(format!("unmounting {path}: {e}")),
                    None => leftovers.mounts.push(path),
                }
            }
        }
        Err(e) => leftovers.errors.push(format!("reading the mount table: {e}")),
    }
    // Namespaces need root, ip and nft: without them no run could have made any.
    if netns::check_tools().is_ok() {
        let is_dead = |run_id: &str| !runlock::is_live(&runs_dir, run_id);
        let network = if dry_run {
            netns::leftovers_where(is_dead)
        } else {
            netns::sweep_where(is_dead)
        };
        match network {
            Ok(report) => leftovers.network = report,
            Err(e) => leftovers.errors.push(format!("network namespaces: {e}")),
        }
    }
    leftovers
}
