//! Real SSH hosts on one machine, for the remote tests: each host is a network namespace with its own address (a
//! veth pair to a bridge of the fixture's own, which this machine reaches at `.254` and every host reaches every
//! other host through, as machines on one LAN), its own PID namespace, its own mount namespace with
//! a private tmpfs at `/srv` (its workdir: nothing the control writes there is visible from here), and its own
//! sshd (Debian's openssh-server) with a fresh host key. The control reaches it only over SSH, with a generated
//! ssh_config (an alias per host, a client key, a known_hosts file holding the hosts' real keys).
//!
//! Dropping the fixture kills each host's sshd and everything in its namespaces, and deletes the namespaces.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The hosts.
pub struct SshHosts {
    dir: tempfile::TempDir,
    /// A hosts file naming every host by its alias, workdir `/srv/faultline`.
    pub hosts_file: PathBuf,
    /// The ssh_config with the aliases, the key and known_hosts.
    pub ssh_config: PathBuf,
    /// Each host's alias (`fl-h1` ...).
    pub aliases: Vec<String>,
    /// Each host's address.
    pub addresses: Vec<String>,
    namespaces: Vec<String>,
    links: Vec<String>,
    bridge: String,
    sshds: Vec<Option<Child>>,
}

static FIXTURES: AtomicU32 = AtomicU32::new(0);

/// Whether this machine can make SSH hosts (root, `ip`, `unshare`, `sshd`, `ssh`, `ssh-keygen`); under CI=true a
/// missing one fails the test.
pub fn ssh_hosts_ready() -> bool {
    let missing = [
        "/usr/sbin/sshd",
        "/usr/bin/ssh",
        "/usr/bin/ssh-keygen",
        "/usr/bin/unshare",
    ]
    .into_iter()
    .find(|p| !Path::new(p).exists())
    .map_or(Ok(()), |p| {
        Err(format!(
            "{p} is missing (apt-get install -y openssh-server openssh-client)"
        ))
    });
    super::netns_ready() && super::prerequisite("SSH test hosts", missing)
}

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl SshHosts {
    /// `count` hosts, each with its sshd listening.
    pub fn start(count: usize) -> SshHosts {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // This process's own subnet: 10.78.X.0/24 (tests in one binary take turns by the counter).
        let fixture = FIXTURES.fetch_add(1, Ordering::Relaxed);
        let net = (std::process::id() + 7 * fixture) % 250 + 1;
        let tag = format!("{}{}", std::process::id() % 10_000, fixture % 10);
        run(
            "ssh-keygen",
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                &d.join("id").display().to_string(),
            ],
        );
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut hosts = SshHosts {
            hosts_file: d.join("hosts"),
            ssh_config: d.join("ssh_config"),
            aliases: Vec::new(),
            addresses: Vec::new(),
            namespaces: Vec::new(),
            links: Vec::new(),
            bridge: format!("flh{tag}br"),
            sshds: Vec::new(),
            dir,
        };
        run("ip", &["link", "add", &hosts.bridge, "type", "bridge"]);
        run(
            "ip",
            &["addr", "add", &format!("10.78.{net}.254/24"), "dev", &hosts.bridge],
        );
        run("ip", &["link", "set", &hosts.bridge, "up"]);
        let (mut config, mut known, mut hosts_file) = (String::new(), String::new(), String::new());
        for i in 0..count {
            let d = hosts.dir.path().to_path_buf();
            let (ns, link, peer) = (
                format!("flh{tag}-{i}"),
                format!("flh{tag}{i}c"),
                format!("flh{tag}{i}h"),
            );
            let far = format!("10.78.{net}.{}", i + 1);
            run("ip", &["netns", "add", &ns]);
            hosts.namespaces.push(ns.clone());
            run("ip", &["link", "add", &link, "type", "veth", "peer", "name", &peer]);
            hosts.links.push(link.clone());
            run("ip", &["link", "set", &peer, "netns", &ns]);
            run("ip", &["link", "set", &link, "master", &hosts.bridge]);
            run("ip", &["link", "set", &link, "up"]);
            let address = format!("{far}/24");
            run(
                "ip",
                &["netns", "exec", &ns, "ip", "addr", "add", &address, "dev", &peer],
            );
            run("ip", &["netns", "exec", &ns, "ip", "link", "set", &peer, "up"]);
            run("ip", &["netns", "exec", &ns, "ip", "link", "set", "lo", "up"]);
            let key = d.join(format!("host_key{i}"));
            run(
                "ssh-keygen",
                &["-q", "-t", "ed25519", "-N", "", "-f", &key.display().to_string()],
            );
            let sshd_config = d.join(format!("sshd_config{i}"));
            std::fs::write(
                &sshd_config,
                format!(
                    "Port 22\nListenAddress {far}\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin \
                     prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                     PidFile none\nStrictModes no\nSubsystem sftp internal-sftp\n",
                    key.display(),
                    d.join("authorized_keys").display()
                ),
            )
            .unwrap();
            let script = format!(
                "mount -t tmpfs tmpfs /srv && exec /usr/sbin/sshd -D -e -f {}",
                sshd_config.display()
            );
            let log = std::fs::File::create(d.join(format!("sshd{i}.log"))).unwrap();
            let sshd = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &ns,
                    "unshare",
                    "--mount",
                    "--pid",
                    "--fork",
                    "--kill-child",
                ])
                .args(["--mount-proc", "--propagation", "private", "sh", "-c", &script])
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            hosts.sshds.push(Some(sshd));
            let alias = format!("fl-h{}", i + 1);
            config.push_str(&format!(
                "Host {alias}\n  HostName {far}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  BatchMode yes\n",
                d.join("id").display(),
                d.join("known_hosts").display()
            ));
            let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
            let public: Vec<&str> = public.split_whitespace().take(2).collect();
            known.push_str(&format!("{far} {}\n", public.join(" ")));
            hosts_file.push_str(&format!("{alias} workdir=/srv/faultline\n"));
            hosts.aliases.push(alias);
            hosts.addresses.push(far);
        }
        std::fs::write(&hosts.ssh_config, config).unwrap();
        std::fs::write(hosts.dir.path().join("known_hosts"), known).unwrap();
        std::fs::write(&hosts.hosts_file, hosts_file).unwrap();
        for (i, address) in hosts.addresses.iter().enumerate() {
            let deadline = Instant::now() + Duration::from_secs(15);
            while TcpStream::connect_timeout(&format!("{address}:22").parse().unwrap(), Duration::from_millis(200))
                .is_err()
            {
                assert!(
                    Instant::now() < deadline,
                    "host {i}'s sshd never listened: {}",
                    hosts.sshd_log(i)
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        hosts
    }

    /// `faultline ARGS --hosts FILE --ssh-config FILE`: a command that reaches these hosts.
    pub fn faultline(&self, args: &[&str]) -> Command {
        let mut command = super::faultline();
        command
            .args(args)
            .arg("--hosts")
            .arg(&self.hosts_file)
            .arg("--ssh-config")
            .arg(&self.ssh_config);
        command
    }

    /// `faultline run PLAN --quiet --seed SEED --time-limit LIMIT --store STORE` on these hosts.
    pub fn run(&self, plan: &str, seed: &str, time_limit: &str, store: &Path) -> Command {
        let mut command = super::run_command(plan, seed, time_limit, store);
        command
            .arg("--hosts")
            .arg(&self.hosts_file)
            .arg("--ssh-config")
            .arg(&self.ssh_config);
        command
    }

    /// The first host reached as a run reaches it (this build uploaded, its agent running), and hands on a node
    /// there whose log on the host is `node_log`; the connection and the folder of ssh's sockets must live while
    /// the agent is used.
    pub async fn first_hands(
        &self,
        node_log: &str,
    ) -> (
        faultline::remote::ssh::Connected,
        std::sync::Arc<faultline::remote::hands::RemoteHands>,
        tempfile::TempDir,
    ) {
        use faultline::remote::ssh::{connect, SshOptions};
        let host = faultline::remote::hosts::read_hosts_file(&self.hosts_file)
            .unwrap()
            .remove(0);
        let options = SshOptions {
            config: Some(self.ssh_config.clone()),
            accept_new_host_keys: false,
            executable: Some(env!("CARGO_BIN_EXE_faultline").into()),
        };
        let control = tempfile::tempdir().unwrap();
        let mut connected = connect(&host, &options, control.path(), 3)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, events) = tokio::sync::mpsc::unbounded_channel();
        let events = std::mem::replace(&mut connected.events, events);
        let hands = faultline::remote::hands::RemoteHands::new(connected.agent.clone(), events, node_log.into());
        (connected, hands, control)
    }

    /// Host `i`'s sshd log.
    pub fn sshd_log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("sshd{i}.log"))).unwrap_or_default()
    }

    /// What `command` prints on host `i`, run there over SSH (as a person would check a host).
    pub fn run_on(&self, i: usize, command: &str) -> String {
        let output = Command::new("ssh")
            .arg("-F")
            .arg(&self.ssh_config)
            .args([self.aliases[i].as_str(), command])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).to_string()
    }

    /// Waits until every host runs a reference node (`faultline node run`), at most `within`.
    pub fn wait_for_nodes(&self, within: Duration) {
        let running = |i: usize| {
            self.run_on(i, "ps -e -o args=")
                .lines()
                .any(|l| l.contains(" node run "))
        };
        let deadline = Instant::now() + within;
        while !(0..self.aliases.len()).all(running) {
            assert!(Instant::now() < deadline, "the nodes never started on the hosts");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The fixture's folder (keys, configs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops host `i`'s sshd and everything in its namespaces (the host is gone, as a machine that died).
    pub fn kill_host(&mut self, i: usize) {
        if let Some(mut sshd) = self.sshds[i].take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        kill_namespace(&self.namespaces[i]);
    }
}

/// SIGKILLs every process in network namespace `ns` (the fixture's own).
fn kill_namespace(ns: &str) {
    if let Ok(output) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&output.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                // SAFETY: kill(2) on a pid of the fixture's own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

impl Drop for SshHosts {
    fn drop(&mut self) {
        for i in 0..self.namespaces.len() {
            self.kill_host(i);
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        for link in self.links.iter().chain([&self.bridge]) {
            let _ = Command::new("ip")
                .args(["link", "del", link])
                .stderr(Stdio::null())
                .status();
        }
    }
}
