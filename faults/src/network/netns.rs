//! The netns backend (root): every node in its own network namespace, joined by a bridge inside a harness-owned lab
//! namespace, with partitions and packet loss as nftables rules inside each node's namespace.
//!
//! Layout for run `R` with `n` nodes, subnet `10.251.X.0/24` (X claimed per run, see below):
//!
//! ```text
//! host namespace:  unreachable 10.251.X.0/24 proto 251      <- guard route: host sockets to the lab fail at once
//! fl-R-lab:        br0 10.251.X.1/24, veths v1..vn           <- no default route: nothing can leave
//! fl-R-n1:         eth0 10.251.X.11/24, nft table inet faultline_R
//! ...
//! fl-R-nK:         eth0 10.251.X.(10+K)/24
//! ```
//!
//! **Isolation.** The lab subnet exists only inside the lab and node namespaces, none of which has a default route or
//! any other interface, so no packet to or from a node can leave the machine. The harness opens its client sockets
//! *inside the lab namespace* ([`NetnsLab::lab_runtime`], [`run_in_namespace`]): a socket stays in the namespace it was
//! created in. In the host namespace the guard route makes any socket aimed at the lab fail with "no route to host"
//! instead of going out of the default route (which is what a host without that route does, see
//! `shared/systems/etcd.md`). X is claimed by adding that guard route: `ip route add` fails when another run holds X.
//!
//! **Names and cleanup.** Everything a run creates is named after it: namespaces `fl-<run>-lab` and `fl-<run>-n<k>`
//! (veths and nft tables live inside them and die with them), and the guard route. [`NetnsLab::teardown`] removes them
//! (also on drop), and [`sweep`] removes leftovers of runs that are not live.
//!
//! **Nodes.** [`NetnsLab::wrap_command`] turns `program args` into `ip netns exec fl-<run>-n<k> program args`.
//! `ip netns exec` execs the program (same pid, same process group, parent-death signal kept: `ip` is neither
//! set-uid nor file-capable), so the harness's supervision applies unchanged. It also gives the node a private mount
//! namespace with `/sys` of its network namespace; the filesystem is otherwise the host's.

use super::grudge::{Grudge, Link};
use super::link_fault::{LinkFault, LinkFaultKind};
use crate::process::node_name;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Prefix of every namespace faultline creates.
pub const NAMESPACE_PREFIX: &str = "fl-";
/// What to install when the tools are missing.
pub const INSTALL_HINT: &str =
    "the netns backend needs root and the `ip` and `nft` commands: run as root after `apt-get install -y iproute2 \
     nftables`";
/// Route protocol number that marks faultline's guard routes in the host namespace.
const GUARD_ROUTE_PROTO: &str = "251";
/// Lab subnets are `10.251.X.0/24`.
const SUBNET_OCTETS: [u8; 2] = [10, 251];
/// Node k (1-based) is `10.251.X.(10+k)`.
const NODE_HOST_OFFSET: usize = 10;
/// Most nodes a lab holds (host part must stay below 255).
pub const MAX_NODES: usize = 200;
/// Bound on one `ip`/`nft` command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of the netns backend.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Root or a tool is missing.
    #[error("netns backend unavailable: {reason}; {INSTALL_HINT}")]
    Unavailable {
        /// What is missing.
        reason: String,
    },
    /// A command failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Exit status or timeout.
        status: String,
        /// Its stderr.
        stderr: String,
    },
    /// A request that cannot be honoured (bad run id, too many nodes, fault the backend cannot do).
    #[error("{0}")]
    Invalid(String),
    /// An I/O error around namespaces.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Cause.
        source: io::Error,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetnsError {
    let what = what.into();
    move |source| NetnsError::Io { what, source }
}

/// Runs a command with a bounded wait; returns its stdout.
fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, NetnsError> {
    let command_line = std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let failed = |status: String, stderr: String| NetnsError::Command {
        command: command_line.clone(),
        status,
        stderr: stderr.trim().to_string(),
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed("not started".into(), e.to_string()))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .map_err(|e| failed("stdin".into(), e.to_string()))?;
    } // the pipe closes here, so the command sees EOF
      // Collect output on a helper thread (a full pipe must not stall the command), waiting at most COMMAND_TIMEOUT.
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let output = match rx.recv_timeout(COMMAND_TIMEOUT) {
        Ok(output) => output.map_err(|e| failed("wait".into(), e.to_string()))?,
        Err(_) => {
            // SAFETY: our own child, not yet reaped (the helper thread reaps it once it dies).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(failed(format!("timed out after {COMMAND_TIMEOUT:?}"), String::new()));
        }
    };
    let status = output.status;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !status.success() {
        return Err(failed(status.to_string(), stderr));
    }
    Ok(stdout)
}

fn ip(args: &[&str]) -> Result<String, NetnsError> {
    run("ip", args, None)
}

fn command_works(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Checks root and the `ip` and `nft` commands, without creating anything. The error says what to install.
pub fn check_tools() -> Result<(), NetnsError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(NetnsError::Unavailable {
            reason: "not running as root".into(),
        });
    }
    let missing: Vec<&str> = [("ip", "-V"), ("nft", "--version")]
        .into_iter()
        .filter(|(program, arg)| !command_works(program, arg))
        .map(|(program, _)| program)
        .collect();
    if !missing.is_empty() {
        return Err(NetnsError::Unavailable {
            reason: format!("`{}` not found or not working", missing.join("`, `")),
        });
    }
    Ok(())
}

/// [`check_tools`], then proves namespaces can be created here (creates and deletes `fl-probe<pid>-lab`). For
/// `network: auto`.
pub fn preflight() -> Result<(), NetnsError> {
    check_tools()?;
    let name = format!("{NAMESPACE_PREFIX}{PROBE_PREFIX}{}-lab", std::process::id());
    ip(&["netns", "add", &name]).map_err(|e| NetnsError::Unavailable {
        reason: format!("cannot create a network namespace ({e})"),
    })?;
    ip(&["netns", "del", &name])?;
    Ok(())
}

/// The run-id part of a preflight probe namespace, before its process id (`fl-probe<pid>-lab`).
const PROBE_PREFIX: &str = "probe";

/// The process a preflight probe namespace belongs to, from its run id (`probe<pid>`): a probe has no run lock, so
/// whether it is a leftover is whether that process still lives. Judged by the lock alone, a probe lived for the
/// moment between its `add` and `del` as a dead run's leftover, and a concurrent run's start-up sweep deleted it
/// under it (`ip netns del fl-probe826-lab` failed: a harness error, seen once with six `etcd-mixed` campaigns at once).
fn probe_owner(run_id: &str) -> Option<u32> {
    run_id.strip_prefix(PROBE_PREFIX)?.parse().ok()
}

/// A run id usable in names: 1-40 ASCII letters, digits and `-`, starting with a letter or digit.
fn validate_run_id(run_id: &str) -> Result<(), NetnsError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= 40
        && run_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !run_id.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(NetnsError::Invalid(format!(
            "run id `{run_id}` cannot name namespaces: use 1-40 ASCII letters, digits and `-`"
        )))
    }
}

/// The nft table of a run (nft names take no `-`).
fn table_name(run_id: &str) -> String {
    format!("faultline_{}", run_id.replace('-', "_"))
}

/// The run id of a namespace faultline created (`fl-<run>-lab`, `fl-<run>-n<k>`), or `None` for anything else.
pub fn run_id_of_namespace(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(NAMESPACE_PREFIX)?;
    let (run_id, suffix) = rest.rsplit_once('-')?;
    let ours = suffix == "lab"
        || suffix
            .strip_prefix('n')
            .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()));
    (ours && validate_run_id(run_id).is_ok()).then_some(run_id)
}

fn namespace_path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Moves the calling thread into the network namespace open as `namespace`.
fn enter(namespace: &File) -> io::Result<()> {
    // SAFETY: setns on a valid fd; it only changes the calling thread's network namespace.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `f` on a fresh thread inside network namespace `namespace` and returns its result. Sockets and listeners `f`
/// creates stay in that namespace for their whole life, whichever thread uses them afterwards.
pub fn run_in_namespace<T: Send + 'static>(
    namespace: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NetnsError> {
    let path = namespace_path(namespace);
    let file = File::open(&path).map_err(io_error(format!("opening {}", path.display())))?;
    let thread = std::thread::Builder::new()
        .name(format!("faultline-in-{namespace}"))
        .spawn(move || enter(&file).map(|()| f()))
        .map_err(io_error("spawning a namespace thread"))?;
    let entered = thread
        .join()
        .map_err(|_| NetnsError::Invalid(format!("a thread in {namespace} panicked")))?;
    entered.map_err(io_error(format!("setns into {namespace}")))
}

/// The network namespace inode of the calling thread (equal to the inode of `/run/netns/<name>` inside it).
pub fn current_namespace_inode() -> io::Result<u64> {
    Ok(std::fs::metadata("/proc/thread-self/ns/net")?.ino())
}

/// What a lab holds beyond its namespaces: the grudge and link faults in force, and the last rules applied per node.
struct Rules {
    grudge: Grudge,
    faults: BTreeMap<Link, BTreeMap<LinkFaultKind, LinkFault>>,
    applied: Vec<Option<String>>,
}

/// A run's network lab. Dropping it tears everything down.
pub struct NetnsLab {
    run_id: String,
    node_count: usize,
    subnet_octet: u8,
    rules: Mutex<Rules>,
    torn_down: Mutex<bool>,
}

impl std::fmt::Debug for NetnsLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NetnsLab({}, {} nodes, {}/24)",
            self.run_id,
            self.node_count,
            self.subnet()
        )
    }
}

impl NetnsLab {
    /// Builds the lab for `node_count` nodes of run `run_id`: claims a subnet, creates the lab and node namespaces,
    /// the bridge, the veths and an empty nft table per node. On failure, removes what it created.
    pub fn create(run_id: &str, node_count: usize) -> Result<NetnsLab, NetnsError> {
        validate_run_id(run_id)?;
        if node_count == 0 || node_count > MAX_NODES {
            return Err(NetnsError::Invalid(format!(
                "a netns lab holds 1..={MAX_NODES} nodes, not {node_count}"
            )));
        }
        check_tools()?;
        let subnet_octet = claim_subnet(run_id)?;
        // From here on, dropping `lab` (also through `?`) removes what exists.
        let lab = NetnsLab {
            run_id: run_id.to_string(),
            node_count,
            subnet_octet,
            rules: Mutex::new(Rules {
                grudge: Grudge::none(node_count),
                faults: BTreeMap::new(),
                applied: vec![None; node_count],
            }),
            torn_down: Mutex::new(false),
        };
        lab.build()?;
        Ok(lab)
    }

    fn build(&self) -> Result<(), NetnsError> {
        let lab = self.lab_namespace();
        let bridge_addr = format!("{}/24", self.lab_addr());
        ip(&["netns", "add", &lab])?;
        ip(&["-n", &lab, "link", "set", "lo", "up"])?;
        ip(&["-n", &lab, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &lab, "addr", "add", &bridge_addr, "dev", "br0"])?;
        ip(&["-n", &lab, "link", "set", "br0", "up"])?;
        for node in 0..self.node_count {
            let ns = self.node_namespace(node);
            let veth = format!("v{}", node + 1);
            let addr = format!("{}/24", self.node_addr(node));
            ip(&["netns", "add", &ns])?;
            // Created inside the lab with its peer born in the node's namespace: nothing ever appears in the host.
            ip(&[
                "-n", &lab, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ])?;
            ip(&["-n", &lab, "link", "set", &veth, "master", "br0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        self.apply_rules(&mut self.rules.lock().expect("netns rules poisoned"))?;
        // A concurrent sweep may have taken the guard route in the instant before the bridge had its address.
        if !guard_routes()?.contains(&self.subnet_octet) {
            add_guard_route(self.subnet_octet)?;
        }
        Ok(())
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// The lab namespace, where the harness's client sockets must be created.
    pub fn lab_namespace(&self) -> String {
        format!("{NAMESPACE_PREFIX}{}-lab", self.run_id)
    }

    /// Node `node`'s namespace (`fl-<run>-n<k>`, k 1-based like node names).
    pub fn node_namespace(&self, node: usize) -> String {
        assert!(node < self.node_count, "node {node} of {}", self.node_count);
        format!("{NAMESPACE_PREFIX}{}-{}", self.run_id, node_name(node))
    }

    /// The lab subnet's network address (`10.251.X.0`, prefix 24).
    pub fn subnet(&self) -> Ipv4Addr {
        Ipv4Addr::new(SUBNET_OCTETS[0], SUBNET_OCTETS[1], self.subnet_octet, 0)
    }

    /// The harness's own address on the bridge (`10.251.X.1`), inside the lab namespace.
    pub fn lab_addr(&self) -> Ipv4Addr {
        Ipv4Addr::new(SUBNET_OCTETS[0], SUBNET_OCTETS[1], self.subnet_octet, 1)
    }

    /// Node `node`'s address (`10.251.X.(11+node)`): the node binds it, peers and clients dial it.
    pub fn node_addr(&self, node: usize) -> Ipv4Addr {
        assert!(node < self.node_count, "node {node} of {}", self.node_count);
        Ipv4Addr::new(
            SUBNET_OCTETS[0],
            SUBNET_OCTETS[1],
            self.subnet_octet,
            (NODE_HOST_OFFSET + node + 1) as u8,
        )
    }

    /// `program args` run inside node `node`'s namespace: `(/path/to/ip, [netns, exec, fl-<run>-n<k>, program,
    /// args...])`. The program replaces `ip` (same pid), so process groups and PDEATHSIG set before exec still hold.
    pub fn wrap_command(&self, node: usize, program: &std::path::Path, args: &[String]) -> (PathBuf, Vec<String>) {
        let ip_path = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("ip"));
        let mut wrapped = vec!["netns".to_string(), "exec".to_string(), self.node_namespace(node)];
        wrapped.push(program.display().to_string());
        wrapped.extend(args.iter().cloned());
        (ip_path, wrapped)
    }

    /// Runs `f` on a fresh thread inside the lab namespace (see [`run_in_namespace`]).
    pub fn run_in_lab<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, NetnsError> {
        run_in_namespace(&self.lab_namespace(), f)
    }

    /// A tokio runtime every thread of which (workers and blocking pool) lives in the lab namespace, for the
    /// harness's clients: anything *spawned* on it (`runtime.spawn`, `handle.spawn`, and `tokio::spawn` from those
    /// tasks) opens its sockets there. Not `block_on`: that polls on the calling thread, in the caller's namespace
    /// (where the guard route makes lab addresses fail with "no route to host"). Drop it outside async code, or call
    /// `shutdown_background`. If a thread ever fails to enter the namespace, the process aborts rather than open a
    /// socket in the host namespace.
    pub fn lab_runtime(&self, worker_threads: usize) -> Result<tokio::runtime::Runtime, NetnsError> {
        let path = namespace_path(&self.lab_namespace());
        let namespace = File::open(&path).map_err(io_error(format!("opening {}", path.display())))?;
        let expected_inode = namespace
            .metadata()
            .map_err(io_error("stat of the lab namespace"))?
            .ino();
        let name = self.lab_namespace();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads.max(1))
            .thread_name(format!("faultline-{name}"))
            .enable_all()
            .on_thread_start(move || {
                if let Err(error) = enter(&namespace) {
                    eprintln!(
                        "faultline: a lab runtime thread cannot enter {name} ({error}); aborting rather than \
                               let it open sockets in the host namespace"
                    );
                    std::process::abort();
                }
            })
            .build()
            .map_err(io_error("building the lab runtime"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let _ = tx.send(current_namespace_inode());
        });
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(inode)) if inode == expected_inode => Ok(runtime),
            other => {
                runtime.shutdown_background();
                Err(NetnsError::Invalid(format!(
                    "lab runtime threads are not in the lab namespace (expected inode {expected_inode}, got {other:?})"
                )))
            }
        }
    }

    /// Replaces the grudge (an empty one heals every partition).
    pub fn apply(&self, grudge: &Grudge) -> Result<(), NetnsError> {
        if grudge.node_count() != self.node_count {
            return Err(NetnsError::Invalid(format!(
                "grudge `{grudge}` is for {} nodes, the lab has {}",
                grudge.node_count(),
                self.node_count
            )));
        }
        let mut rules = self.rules.lock().expect("netns rules poisoned");
        rules.grudge = grudge.clone();
        self.apply_rules(&mut rules)
    }

    /// Heals every partition (link faults stay).
    pub fn heal(&self) -> Result<(), NetnsError> {
        self.apply(&Grudge::none(self.node_count))
    }

    /// Adds a loss or reset fault on `link` (replacing one of the same kind). Delay, rate and corrupt are refused.
    pub fn set_link_fault(&self, link: Link, fault: LinkFault) -> Result<(), NetnsError> {
        fault.validate().map_err(NetnsError::Invalid)?;
        super::link_fault::BackendKind::Netns
            .check(fault.kind())
            .map_err(NetnsError::Invalid)?;
        if link.from >= self.node_count || link.to >= self.node_count || link.from == link.to {
            return Err(NetnsError::Invalid(format!(
                "link {link} is not in a lab of {} nodes",
                self.node_count
            )));
        }
        let mut rules = self.rules.lock().expect("netns rules poisoned");
        rules.faults.entry(link).or_default().insert(fault.kind(), fault);
        self.apply_rules(&mut rules)
    }

    /// Removes the fault of `kind` from `link`, if any.
    pub fn clear_link_fault(&self, link: Link, kind: LinkFaultKind) -> Result<(), NetnsError> {
        let mut rules = self.rules.lock().expect("netns rules poisoned");
        if let Some(faults) = rules.faults.get_mut(&link) {
            faults.remove(&kind);
        }
        rules.faults.retain(|_, faults| !faults.is_empty());
        self.apply_rules(&mut rules)
    }

    /// Removes every link fault.
    pub fn clear_link_faults(&self) -> Result<(), NetnsError> {
        let mut rules = self.rules.lock().expect("netns rules poisoned");
        rules.faults.clear();
        self.apply_rules(&mut rules)
    }

    /// Loads each node's rules with one atomic `nft -f -` transaction, skipping nodes whose rules did not change.
    fn apply_rules(&self, rules: &mut Rules) -> Result<(), NetnsError> {
        for node in 0..self.node_count {
            let script = self.render_rules(rules, node);
            if rules.applied[node].as_deref() == Some(script.as_str()) {
                continue;
            }
            rules.applied[node] = None; // unknown until nft succeeds
            let ns = self.node_namespace(node);
            run("ip", &["netns", "exec", &ns, "nft", "-f", "-"], Some(&script))?;
            rules.applied[node] = Some(script);
        }
        Ok(())
    }

    /// The nft script for node `node`: drop IPv6 from the bridge, drop what it must not hear, then loss and reset rules
    /// per sender.
    fn render_rules(&self, rules: &Rules, node: usize) -> String {
        let table = table_name(&self.run_id);
        let mut script = format!(
            "add table inet {table}\nadd chain inet {table} input {{ type filter hook input priority 0; policy \
             accept; }}\nflush chain inet {table} input\n"
        );
        // Nodes have IPv4 addresses only; IPv6 link-local traffic over the bridge would bypass `ip saddr` rules.
        script += &format!("add rule inet {table} input iifname \"eth0\" meta nfproto ipv6 drop\n");
        let deaf = rules.grudge.deaf_to(node);
        if !deaf.is_empty() {
            let senders: Vec<String> = deaf.iter().map(|&from| self.node_addr(from).to_string()).collect();
            script += &format!(
                "add rule inet {table} input ip saddr {{ {} }} drop\n",
                senders.join(", ")
            );
        }
        for (link, faults) in rules.faults.iter().filter(|(link, _)| link.to == node) {
            let sender = self.node_addr(link.from);
            for fault in faults.values() {
                match fault {
                    // `numgen random mod 100` is 0..=99: a loss of 100 % is a plain drop (nft refuses `< 100`).
                    LinkFault::Loss { percent: 100.. } => {
                        script += &format!("add rule inet {table} input ip saddr {sender} drop\n")
                    }
                    LinkFault::Loss { percent } => {
                        script += &format!(
                            "add rule inet {table} input ip saddr {sender} numgen random mod 100 < {percent} drop\n"
                        )
                    }
                    LinkFault::Reset => {
                        script += &format!(
                            "add rule inet {table} input ip saddr {sender} meta l4proto tcp reject with tcp reset\n"
                        )
                    }
                    other => unreachable!("{other:?} was refused by set_link_fault"),
                }
            }
        }
        script
    }

    /// Removes the run's namespaces (with their veths and nft tables) and its guard route. Idempotent; stop the
    /// nodes first (a namespace lives on while a process is in it).
    pub fn teardown(&self) -> Result<(), NetnsError> {
        let mut torn_down = self.torn_down.lock().expect("netns teardown poisoned");
        if *torn_down {
            return Ok(());
        }
        let mut first_error = None;
        let names = std::iter::once(self.lab_namespace()).chain((0..self.node_count).map(|n| self.node_namespace(n)));
        for name in names {
            if namespace_path(&name).exists() {
                if let Err(error) = ip(&["netns", "del", &name]) {
                    first_error.get_or_insert(error);
                }
            }
        }
        if let Err(error) = delete_guard_route(self.subnet_octet) {
            first_error.get_or_insert(error);
        }
        *torn_down = true;
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for NetnsLab {
    fn drop(&mut self) {
        if let Err(error) = self.teardown() {
            tracing::error!(run_id = %self.run_id, %error, "netns teardown failed; the next run's sweep retries");
        }
    }
}

/// Third octets of faultline's guard routes in the host namespace.
fn guard_routes() -> Result<BTreeSet<u8>, NetnsError> {
    let json = ip(&["-j", "-4", "route", "show", "proto", GUARD_ROUTE_PROTO])?;
    let routes: serde_json::Value = serde_json::from_str(if json.trim().is_empty() { "[]" } else { &json })
        .map_err(|e| NetnsError::Invalid(format!("cannot read `ip -j route`: {e}")))?;
    Ok(routes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|route| route["dst"].as_str())
        .filter_map(|dst| {
            let (addr, len) = dst.split_once('/')?;
            let addr: Ipv4Addr = addr.parse().ok()?;
            let [a, b, x, _] = addr.octets();
            ([a, b] == SUBNET_OCTETS && len == "24").then_some(x)
        })
        .collect())
}

fn guard_route_dst(octet: u8) -> String {
    format!("{}.{}.{octet}.0/24", SUBNET_OCTETS[0], SUBNET_OCTETS[1])
}

fn add_guard_route(octet: u8) -> Result<(), NetnsError> {
    let dst = guard_route_dst(octet);
    ip(&["route", "add", "unreachable", &dst, "proto", GUARD_ROUTE_PROTO]).map(|_| ())
}

fn delete_guard_route(octet: u8) -> Result<(), NetnsError> {
    if !guard_routes()?.contains(&octet) {
        return Ok(());
    }
    let dst = guard_route_dst(octet);
    ip(&["route", "del", "unreachable", &dst, "proto", GUARD_ROUTE_PROTO]).map(|_| ())
}

/// IPv4 destinations (network, prefix length) routed in the host namespace, default routes excluded.
fn host_routes() -> Result<Vec<(Ipv4Addr, u8)>, NetnsError> {
    let json = ip(&["-j", "-4", "route", "show", "table", "all"])?;
    let routes: serde_json::Value = serde_json::from_str(if json.trim().is_empty() { "[]" } else { &json })
        .map_err(|e| NetnsError::Invalid(format!("cannot read `ip -j route`: {e}")))?;
    Ok(routes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|route| route["dst"].as_str())
        .filter(|dst| *dst != "default")
        .filter_map(|dst| {
            let (addr, len) = dst.split_once('/').unwrap_or((dst, "32"));
            Some((addr.parse().ok()?, len.parse().ok()?))
        })
        .collect())
}

/// Whether `a/a_len` and `b/b_len` share any address.
fn overlaps((a, a_len): (Ipv4Addr, u8), (b, b_len): (Ipv4Addr, u8)) -> bool {
    let len = a_len.min(b_len).min(32);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(a) & mask == u32::from(b) & mask
}

/// Claims a `10.251.X.0/24` that nothing on the host routes, by adding its guard route (which fails if another run
/// holds it). The search starts at a hash of the run id and tries each X once.
fn claim_subnet(run_id: &str) -> Result<u8, NetnsError> {
    let routes = host_routes()?;
    let start = xxhash_rust::xxh3::xxh3_64(run_id.as_bytes()) as usize;
    for k in 0..256 {
        let octet = ((start + k) % 256) as u8;
        let candidate = (Ipv4Addr::new(SUBNET_OCTETS[0], SUBNET_OCTETS[1], octet, 0), 24);
        if routes.iter().any(|&route| overlaps(route, candidate)) {
            continue;
        }
        match add_guard_route(octet) {
            Ok(()) => return Ok(octet),
            Err(NetnsError::Command { stderr, .. }) if stderr.contains("File exists") => continue,
            Err(error) => return Err(error),
        }
    }
    Err(NetnsError::Invalid(
        "no free 10.251.X.0/24 subnet: every one is routed on this host or held by another run".into(),
    ))
}

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// Guard routes deleted (`10.251.X.0/24`).
    pub guard_routes: Vec<String>,
    /// Host-namespace nft tables deleted (`inet faultline_<run>`; faultline never makes these, but removes them).
    pub tables: Vec<String>,
}

/// Removes leftovers of every run whose id is not in `live_run_ids`: its namespaces (veths and nft tables inside them
/// go too), guard routes no remaining lab uses, and stray host nft tables. Nothing without faultline's names is
/// touched.
pub fn sweep(live_run_ids: &[&str]) -> Result<SweepReport, NetnsError> {
    sweep_where(|run_id| !live_run_ids.contains(&run_id))
}

/// [`sweep`] with a predicate: removes the leftovers of runs for which `is_dead(run_id)` holds.
pub fn sweep_where(is_dead: impl Fn(&str) -> bool) -> Result<SweepReport, NetnsError> {
    let (report, octets) = leftovers(&is_dead)?;
    for name in &report.namespaces {
        ip(&["netns", "del", name])?;
    }
    for &octet in &octets {
        delete_guard_route(octet)?;
    }
    for table in &report.tables {
        run("nft", &["delete", "table", "inet", table], None)?;
    }
    Ok(report)
}

/// What [`sweep_where`] would remove, removing nothing (`faultline clean --dry-run`).
pub fn leftovers_where(is_dead: impl Fn(&str) -> bool) -> Result<SweepReport, NetnsError> {
    Ok(leftovers(&is_dead)?.0)
}

/// The leftovers of dead runs, and the third octets of the guard routes among them.
fn leftovers(is_dead: &dyn Fn(&str) -> bool) -> Result<(SweepReport, Vec<u8>), NetnsError> {
    check_tools()?;
    let mut report = SweepReport::default();
    let mut in_use = BTreeSet::new();
    let mut lab_without_address = false;
    for name in list_namespaces()? {
        let Some(run_id) = run_id_of_namespace(&name) else {
            continue;
        };
        let dead = match probe_owner(run_id) {
            Some(pid) => !Path::new("/proc").join(pid.to_string()).exists(),
            None => is_dead(run_id),
        };
        if dead {
            report.namespaces.push(name);
        } else if name.ends_with("-lab") {
            // A lab being built may not have its address yet; a lab without one keeps every guard (conservative).
            match lab_subnet_octet(&name) {
                Some(octet) => {
                    in_use.insert(octet);
                }
                None => lab_without_address = true,
            }
        }
    }
    let mut octets = Vec::new();
    for octet in guard_routes()? {
        if !lab_without_address && !in_use.contains(&octet) {
            octets.push(octet);
            report.guard_routes.push(guard_route_dst(octet));
        }
    }
    for table in list_host_tables()? {
        let Some(run_part) = table.strip_prefix("faultline_") else {
            continue;
        };
        // A host's agent's table (`faultline_agent_<pid>`) is no run's: its agent removes it, and a sweep of the
        // host (`faultline clean --hosts`) removes a dead agent's.
        if run_part.starts_with("agent_") {
            continue;
        }
        // Table names spell the run id's `-` as `_` (run ids never contain `_`).
        if is_dead(&run_part.replace('_', "-")) {
            report.tables.push(table);
        }
    }
    Ok((report, octets))
}

fn list_namespaces() -> Result<Vec<String>, NetnsError> {
    Ok(ip(&["netns", "list"])?
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

fn lab_subnet_octet(namespace: &str) -> Option<u8> {
    let json = ip(&["-n", namespace, "-j", "-4", "addr", "show", "dev", "br0"]).ok()?;
    let links: serde_json::Value = serde_json::from_str(&json).ok()?;
    links.as_array()?.iter().find_map(|link| {
        link["addr_info"].as_array()?.iter().find_map(|info| {
            let addr: Ipv4Addr = info["local"].as_str()?.parse().ok()?;
            let [a, b, x, _] = addr.octets();
            ([a, b] == SUBNET_OCTETS).then_some(x)
        })
    })
}

fn list_host_tables() -> Result<Vec<String>, NetnsError> {
    Ok(run("nft", &["list", "tables", "inet"], None)?
        .lines()
        .filter_map(|line| line.strip_prefix("table inet "))
        .map(|name| name.trim().to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_namespace_names_when_parsed_should_recognise_only_faultlines() {
        assert_eq!(run_id_of_namespace("fl-123-abc-lab"), Some("123-abc"));
        assert_eq!(run_id_of_namespace("fl-123-abc-n12"), Some("123-abc"));
        assert_eq!(run_id_of_namespace("fl-123-abc-n"), None);
        assert_eq!(run_id_of_namespace("fl-123-abc-x1"), None);
        assert_eq!(run_id_of_namespace("docker-123-lab"), None);
        assert_eq!(run_id_of_namespace("fl--lab"), None);
        let probe = format!("fl-probe{}-lab", std::process::id());
        let owner = run_id_of_namespace(&probe).and_then(probe_owner);
        assert_eq!(owner, Some(std::process::id()), "a probe is its process's");
        assert_eq!(run_id_of_namespace("fl-123-abc-lab").and_then(probe_owner), None);
    }

    #[test]
    fn given_run_ids_when_validated_should_refuse_names_that_could_escape() {
        assert!(validate_run_id("4242-deadbeef").is_ok());
        assert!(validate_run_id("../x").is_err());
        assert!(validate_run_id("a b").is_err());
        assert!(validate_run_id("").is_err());
        assert_eq!(table_name("42-ab"), "faultline_42_ab");
    }

    #[test]
    fn given_routes_when_checked_for_overlap_should_compare_prefixes() {
        let net = |s: &str, l| (s.parse::<Ipv4Addr>().unwrap(), l);
        assert!(overlaps(net("10.0.0.0", 8), net("10.251.3.0", 24)));
        assert!(overlaps(net("10.251.3.7", 32), net("10.251.3.0", 24)));
        assert!(!overlaps(net("10.251.4.0", 24), net("10.251.3.0", 24)));
        assert!(!overlaps(net("192.0.2.0", 24), net("10.251.3.0", 24)));
    }
}
