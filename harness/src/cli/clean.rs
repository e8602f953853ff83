//! `faultline clean`: what dead runs left behind, removed; with `--hosts`, what dead agents left on those hosts.

use super::{Ended, Failed, Outcome};
use serde_json::Value;

/// `faultline clean` arguments.
#[derive(clap::Args)]
pub struct CleanArgs {
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Also sweep these hosts (reached as a run reaches them): what agents that were themselves killed left there
    /// (their nodes' processes, nft tables and fault filesystems), and the hosts' other faultline leftovers.
    #[command(flatten)]
    pub on_hosts: super::hosts::OnHosts,
}

/// `faultline clean`.
pub(super) fn command(args: CleanArgs) -> Outcome {
    let remote = args.on_hosts.remote("faultline clean")?;
    let local = clean_command(args.dry_run);
    match remote {
        // Every host is swept even when this machine's sweep failed; the first failure is the outcome.
        Some(remote) => {
            let hosts = clean_hosts(&remote, args.dry_run);
            local.and(hosts)
        }
        None => local,
    }
}

fn clean_command(dry_run: bool) -> Outcome {
    let leftovers = crate::run::cleanup::sweep(dry_run);
    if leftovers.is_empty() {
        println!("faultline clean: nothing left by dead runs");
    } else {
        print!("{}", leftovers.describe(dry_run));
    }
    if leftovers.errors.is_empty() {
        Ok(Ended::ok())
    } else {
        Err(Failed::harness(format!(
            "faultline clean: {} thing(s) could not be removed",
            leftovers.errors.len()
        )))
    }
}

/// Sweeps every host through its agent; one paragraph per host.
fn clean_hosts(remote: &crate::remote::lab::RemoteOptions, dry_run: bool) -> Outcome {
    use crate::remote::agent::Request;
    let control_dir = crate::remote::ssh::control_dir()
        .map_err(|e| Failed::harness(format!("faultline clean: cannot make a folder for ssh's sockets: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed::harness(format!("faultline clean: cannot start its runtime: {e}")))?;
    let results: Vec<Result<Value, String>> = runtime.block_on(async {
        let sweeps = remote.hosts.iter().map(|host| async {
            let connected = crate::remote::ssh::connect(host, &remote.ssh, control_dir.path(), 1).await?;
            let (swept, _) = connected.agent.call(Request::Sweep { dry_run }).await?;
            let _ = connected.agent.call(Request::Shutdown).await;
            Ok(swept)
        });
        futures::future::join_all(sweeps).await
    });
    let mut failed = Vec::new();
    for (host, result) in remote.hosts.iter().zip(results) {
        match result {
            Ok(swept) => println!("{host}: {}", describe(&swept, dry_run)),
            Err(e) => {
                println!("{host}: not swept: {e}");
                failed.push(host.to_string());
            }
        }
    }
    match failed.as_slice() {
        [] => Ok(Ended::ok()),
        _ => Err(Failed::harness(format!(
            "faultline clean: {} host(s) could not be swept: {}",
            failed.len(),
            failed.join(", ")
        ))),
    }
}

/// What an agent's sweep did, in one line.
fn describe(swept: &Value, dry_run: bool) -> String {
    let list = |field: &str| -> Vec<String> {
        swept[field]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other if other["pid"].is_number() => {
                    format!("pid {} (agent {})", other["pid"], other["agent"])
                }
                other => other.to_string(),
            })
            .collect()
    };
    let (processes, tables, mounts, errors) = (list("processes"), list("tables"), list("mounts"), list("errors"));
    let mut parts = Vec::new();
    let verb = |done: &'static str, would: &'static str| if dry_run { would } else { done };
    if !processes.is_empty() {
        parts.push(format!("{} {}", verb("killed", "would kill"), processes.join(", ")));
    }
    if !tables.is_empty() {
        parts.push(format!(
            "{} nft tables {}",
            verb("deleted", "would delete"),
            tables.join(", ")
        ));
    }
    if !mounts.is_empty() {
        parts.push(format!("{} {}", verb("unmounted", "would unmount"), mounts.join(", ")));
    }
    parts.extend(list("swept").into_iter().filter(|line| !line.is_empty()));
    if !errors.is_empty() {
        parts.push(format!("could not clean: {}", errors.join("; ")));
    }
    match parts.is_empty() {
        true => "nothing left by dead agents".to_string(),
        false => parts.join("; "),
    }
}
