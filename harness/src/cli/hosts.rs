//! `faultline hosts check` (what each host of a hosts file can do, reached as a run would reach it) and `faultline
//! agent` (what the control runs on each host over SSH).

use super::{Ended, Failed, Outcome, EXIT_BAD_INPUT};
use crate::remote::hosts::read_hosts_file;
use crate::remote::ssh::{connect, SshOptions};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::path::PathBuf;

/// `faultline hosts ...`.
#[derive(Args)]
pub struct HostsArgs {
    #[command(subcommand)]
    pub command: HostsCommand,
}

/// What to do with the hosts.
#[derive(Subcommand)]
pub enum HostsCommand {
    /// Reach every host of a hosts file over SSH, install this build there (skipped when the host has it), start
    /// the agent, and report each host's user, kernel, capabilities (root, FUSE, nft, tc, libfaketime) and clock
    /// offset from this machine (best of several round trips, with its uncertainty). Exit 0 when every host was
    /// reached, 1 when one was not (named, with ssh's words).
    Check(CheckArgs),
}

/// `faultline hosts check`.
#[derive(Args)]
pub struct CheckArgs {
    /// The hosts file: one host per line, `[user@]host[:port] [user=..] [port=..] [identity=..] [workdir=..]`.
    #[arg(long, value_name = "FILE")]
    pub hosts: PathBuf,
    /// An ssh_config file to use instead of ~/.ssh/config (`ssh -F`).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Accept the host key of a host never seen before (fresh test machines); a changed key is still refused.
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// Round trips measured per host for its clock offset.
    #[arg(long, default_value_t = 8)]
    pub samples: usize,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Where a run's nodes live when not on this machine: `--hosts` and its companions (`faultline run`, and passed on
/// to every run of `faultline matrix`).
#[derive(Args, Default, Clone)]
pub struct OnHosts {
    /// Run the nodes on the hosts of this file (one per line, node i on the i-th: `[user@]host[:port]
    /// [workdir=/path] [identity=FILE]`), reached over SSH with faultline installed there (see `faultline hosts
    /// check`). Without it the nodes run on this machine.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// With --hosts: an ssh_config file to use instead of ~/.ssh/config (`ssh -F`).
    #[arg(long, value_name = "FILE", requires = "hosts")]
    pub ssh_config: Option<PathBuf>,
    /// With --hosts: accept the host key of a host never seen before; a changed key is still refused.
    #[arg(long, requires = "hosts")]
    pub accept_new_host_keys: bool,
}

impl OnHosts {
    /// The same options as arguments of a child `faultline run` (empty without --hosts).
    pub(super) fn child_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(file) = &self.hosts {
            args.extend(["--hosts".to_string(), file.display().to_string()]);
            if let Some(config) = &self.ssh_config {
                args.extend(["--ssh-config".to_string(), config.display().to_string()]);
            }
            if self.accept_new_host_keys {
                args.push("--accept-new-host-keys".to_string());
            }
        }
        args
    }

    /// The hosts and how to reach them (`None`: this machine); a bad hosts file is `command`'s bad input.
    pub(super) fn remote(&self, command: &str) -> Result<Option<crate::remote::lab::RemoteOptions>, Failed> {
        let Some(file) = &self.hosts else {
            return Ok(None);
        };
        // The plans this command loads run their nodes' programs on the hosts: looked for there, not here.
        crate::system::exec::node_programs_on_hosts();
        Ok(Some(crate::remote::lab::RemoteOptions {
            hosts: read_hosts_file(file).map_err(|e| Failed::bad_input(format!("{command} --hosts: {e}")))?,
            ssh: SshOptions {
                config: self.ssh_config.clone(),
                accept_new_host_keys: self.accept_new_host_keys,
                executable: None,
            },
        }))
    }

    /// The same as `faultline run` arguments, for child runs (absolute paths: they start elsewhere); the hosts file
    /// is read first, so a bad one is `command`'s bad input, not every run's.
    pub(super) fn run_args(&self, command: &str) -> Result<Vec<String>, Failed> {
        if self.remote(command)?.is_none() {
            return Ok(Vec::new());
        }
        let absolute = |path: &PathBuf| {
            std::path::absolute(path)
                .map(|p| p.display().to_string())
                .map_err(|e| Failed::bad_input(format!("{command}: {}: {e}", path.display())))
        };
        let mut args = Vec::new();
        if let Some(file) = &self.hosts {
            args.extend(["--hosts".to_string(), absolute(file)?]);
        }
        if let Some(config) = &self.ssh_config {
            args.extend(["--ssh-config".to_string(), absolute(config)?]);
        }
        if self.accept_new_host_keys {
            args.push("--accept-new-host-keys".to_string());
        }
        Ok(args)
    }
}

/// `faultline agent`: serves the agent protocol on stdin/stdout (the control starts it over SSH).
#[derive(Args)]
pub struct AgentArgs {
    /// Print this executable's build id and exit (the control checks an uploaded copy with it).
    #[arg(long)]
    pub build_id: bool,
    /// How long the agent keeps its nodes running after its channel closes, waiting for the control to reattach
    /// (`--attach`); 0 ends everything at once.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_millis, default_value = "0s")]
    pub linger: faultline_faults::units::Millis,
    /// Relay stdin and stdout to the agent listening on SOCKET (a control reattaching over a new SSH session).
    #[arg(long, value_name = "SOCKET", conflicts_with_all = ["build_id", "linger"])]
    pub attach: Option<std::path::PathBuf>,
}

/// Runs `faultline agent`.
pub(super) fn agent(args: AgentArgs) -> Outcome {
    if args.build_id {
        let id = crate::remote::agent::build_id().map_err(|e| Failed::harness(format!("faultline agent: {e}")))?;
        println!("{id}");
        return Ok(Ended::ok());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed::harness(format!("faultline agent: cannot start its runtime: {e}")))?;
    if let Some(socket) = &args.attach {
        runtime
            .block_on(crate::remote::session::relay(socket))
            .map_err(|e| Failed::harness(format!("faultline agent --attach {}: {e}", socket.display())))?;
        return Ok(Ended::ok());
    }
    let linger = args.linger.duration();
    let code = runtime.block_on(crate::remote::agent::serve(crate::run::host_sweep::sweep_host, linger));
    Ok(Ended { code, json: None })
}

/// Runs `faultline hosts ...`.
pub(super) fn command(args: HostsArgs) -> Outcome {
    match args.command {
        HostsCommand::Check(args) => check(args),
    }
}

fn check(args: CheckArgs) -> Outcome {
    let hosts = read_hosts_file(&args.hosts).map_err(|e| Failed {
        code: EXIT_BAD_INPUT,
        message: format!("faultline hosts check: {e}"),
    })?;
    let options = SshOptions {
        config: args.ssh_config.clone(),
        accept_new_host_keys: args.accept_new_host_keys,
        executable: None,
    };
    let control_dir = crate::remote::ssh::control_dir().map_err(|e| {
        Failed::harness(format!(
            "faultline hosts check: cannot make a folder for ssh's sockets: {e}"
        ))
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed::harness(format!("faultline hosts check: cannot start its runtime: {e}")))?;
    let reports: Vec<Value> = runtime.block_on(async {
        let checks = hosts
            .iter()
            .map(|host| connect(host, &options, control_dir.path(), args.samples));
        let results = futures::future::join_all(checks).await;
        let mut reports = Vec::new();
        for (host, result) in hosts.iter().zip(results) {
            reports.push(match result {
                Ok(connected) => {
                    let report = json!({
                        "host": host.to_string(),
                        "reached": true,
                        "uploaded": connected.uploaded,
                        "workdir": host.workdir,
                        "hello": connected.hello,
                        "clock": connected.clock,
                    });
                    let _ = connected.agent.call(crate::remote::agent::Request::Shutdown).await;
                    report
                }
                Err(error) => json!({"host": host.to_string(), "reached": false, "error": error}),
            });
        }
        reports
    });
    for report in &reports {
        eprintln!("{}", describe(report));
    }
    let unreached = reports.iter().filter(|r| r["reached"] != true).count();
    let code = u8::from(unreached > 0);
    if unreached > 0 {
        eprintln!(
            "faultline hosts check: {unreached} of {} hosts not reached",
            reports.len()
        );
    }
    if args.json {
        return Ok(Ended::with(code, &json!({"hosts": reports})));
    }
    Ok(Ended { code, json: None })
}

/// One host's line: reached or not, and what it can do.
fn describe(report: &Value) -> String {
    let host = report["host"].as_str().unwrap_or("?");
    if report["reached"] != true {
        return format!("  {host}: NOT REACHED: {}", report["error"].as_str().unwrap_or("?"));
    }
    let hello = &report["hello"];
    let caps = &hello["capabilities"];
    let has = |name: &&str| caps[*name].as_bool() == Some(true) || caps[*name].is_string();
    let can: Vec<&str> = ["fuse", "nft", "tc", "libfaketime"].into_iter().filter(has).collect();
    let lacks: Vec<&str> = ["fuse", "nft", "tc", "libfaketime"]
        .into_iter()
        .filter(|n| !can.contains(n))
        .collect();
    let clock = &report["clock"];
    let ms = |ns: &Value| ns.as_f64().unwrap_or(0.0) / 1e6;
    format!(
        "  {host}: reached ({}); uid {}{}, kernel {}, build {} {}; has {}{}; clock {:+.3} ms ± {:.3} ms (round trip {:.3} ms)",
        hello["hostname"].as_str().unwrap_or("?"),
        hello["uid"],
        if caps["root"] == true { " (root)" } else { "" },
        hello["kernel"].as_str().unwrap_or("?"),
        hello["build"].as_str().unwrap_or("?"),
        if report["uploaded"] == true { "uploaded" } else { "already there" },
        if can.is_empty() { "none of fuse, nft, tc, libfaketime".to_string() } else { can.join(", ") },
        if lacks.is_empty() { String::new() } else { format!(" (lacks {})", lacks.join(", ")) },
        ms(&clock["wall_offset_ns"]),
        ms(&clock["uncertainty_ns"]),
        ms(&clock["rtt_ns"]),
    )
}
