//! Reaching a host: one multiplexed OpenSSH connection per host (the `openssh` crate drives the system's `ssh` as a
//! control master), faultline uploaded into the host's workdir when the host lacks this build, and `faultline
//! agent` started over the connection.
//!
//! Security: host keys are checked (`StrictHostKeyChecking=yes`; `--accept-new-host-keys` takes a new host's key on
//! first contact, as `accept-new` does, and still refuses a changed one); no password is ever asked for
//! (`BatchMode`: keys, the ssh agent, ssh_config); every argument of a remote command is quoted by `openssh` for the
//! remote shell, so no value can inject shell.

use super::agent::Request;
use super::client::{AgentClient, ClockSync, Resume};
use super::hosts::HostSpec;
use openssh::{KnownHosts, Session, SessionBuilder, Stdio};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

/// How long connecting to a host may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an agent keeps its nodes running after its SSH channel drops, waiting for the control to reattach.
pub const AGENT_LINGER: Duration = Duration::from_secs(20);
/// How long the control tries to reattach (less than the linger: an attempt in flight must still find the agent).
pub const REATTACH_WINDOW: Duration = Duration::from_secs(15);

/// How the control reaches hosts.
#[derive(Debug, Clone, Default)]
pub struct SshOptions {
    /// An ssh_config file to use instead of the user's (`ssh -F`).
    pub config: Option<PathBuf>,
    /// Take a host key never seen before (a fresh test machine); a changed key is still refused.
    pub accept_new_host_keys: bool,
    /// The faultline executable to install on the hosts (default: this one).
    pub executable: Option<PathBuf>,
}

/// A host reached over SSH, with its agent running.
pub struct Connected {
    /// The host as the hosts file names it.
    pub host: HostSpec,
    /// The connection (its control master lives as long as this does).
    pub session: Arc<Session>,
    /// The agent.
    pub agent: Arc<AgentClient>,
    /// What the agent sends unasked (process exits), until its channel closes.
    pub events: mpsc::UnboundedReceiver<Value>,
    /// Its `hello`: build, uid, kernel, capabilities.
    pub hello: Value,
    /// Whether faultline was uploaded now (else the host had this build).
    pub uploaded: bool,
    /// This build of faultline on the host.
    pub executable: PathBuf,
    /// The clocks, as measured at connect.
    pub clock: ClockSync,
    /// The agent's process on the host, kept so the channel stays open.
    _child: openssh::Child<Arc<Session>>,
}

/// Connects to `host`: the SSH connection, this build of faultline in its workdir, the agent, its hello and the
/// clock sync (`samples` round trips). The error says which step failed and ssh's own words.
pub async fn connect(
    host: &HostSpec,
    options: &SshOptions,
    control_dir: &Path,
    samples: usize,
) -> Result<Connected, String> {
    let session = open_session(host, options, control_dir).await?;
    let executable = options
        .executable
        .clone()
        .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
    let (path, uploaded) = install(&session, host, &executable).await?;
    let linger = format!("{}ms", AGENT_LINGER.as_millis());
    let mut child = session
        .clone()
        .arc_command(path.display().to_string())
        .args(["agent", "--linger", linger.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .await
        .map_err(|e| format!("{host}: cannot start the agent: {}", ssh_error(&e)))?;
    let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
        return Err(format!("{host}: the agent's channel has no stdin or stdout"));
    };
    let (agent, events) = AgentClient::new(stdin, stdout);
    let agent = Arc::new(agent);
    let (hello, _) = agent
        .call(Request::Hello)
        .await
        .map_err(|e| format!("{host}: the agent did not say hello: {e}"))?;
    if hello["protocol"].as_u64() != Some(u64::from(super::agent::PROTOCOL)) {
        return Err(format!(
            "{host}: the agent speaks protocol {} and this faultline {}",
            hello["protocol"],
            super::agent::PROTOCOL
        ));
    }
    if let (Some(socket), Some(token)) = (hello["resume"]["socket"].as_str(), hello["resume"]["token"].as_str()) {
        let relink = Relinker {
            host: host.clone(),
            options: options.clone(),
            control_dir: control_dir.to_path_buf(),
            session: Arc::new(tokio::sync::Mutex::new(session.clone())),
            executable: path.clone(),
            socket: PathBuf::from(socket),
            link: Arc::default(),
        };
        agent.resume_with(Resume {
            relink: Arc::new(move || Box::pin(relink.clone().link())),
            token: token.to_string(),
            window: REATTACH_WINDOW,
        });
    }
    let clock = agent
        .sync_clock(samples)
        .await
        .map_err(|e| format!("{host}: cannot measure its clock: {e}"))?;
    Ok(Connected {
        host: host.clone(),
        session,
        agent,
        events,
        hello,
        uploaded,
        executable: path,
        clock,
        _child: child,
    })
}

/// Opens a new link to an agent whose channel dropped: `faultline agent --attach SOCKET` over the host's SSH
/// connection, or over a new one when that connection is gone too.
#[derive(Clone)]
struct Relinker {
    host: HostSpec,
    options: SshOptions,
    control_dir: PathBuf,
    session: Arc<tokio::sync::Mutex<Arc<Session>>>,
    executable: PathBuf,
    socket: PathBuf,
    /// The relay's channel, kept open while it serves (a new one replaces the dead one).
    link: Arc<std::sync::Mutex<Option<openssh::Child<Arc<Session>>>>>,
}

impl Relinker {
    async fn link(self) -> Result<(Box<dyn AsyncWrite + Send + Unpin>, Box<dyn AsyncRead + Send + Unpin>), String> {
        let mut session = self.session.lock().await;
        let mut child = match self.relay(session.clone()).await {
            Ok(child) => child,
            Err(_) => {
                // The connection itself is gone (a restarted sshd, a network that dropped it): a new one.
                *session = open_session(&self.host, &self.options, &self.control_dir).await?;
                self.relay(session.clone()).await?
            }
        };
        let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
            return Err("the relay's channel has no stdin or stdout".into());
        };
        *self.link.lock().expect("link lock") = Some(child);
        Ok((Box::new(stdin), Box::new(stdout)))
    }

    async fn relay(&self, session: Arc<Session>) -> Result<openssh::Child<Arc<Session>>, String> {
        session
            .arc_command(self.executable.display().to_string())
            .arg("agent")
            .arg("--attach")
            .arg(self.socket.display().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .await
            .map_err(|e| format!("{}: cannot start the relay: {}", self.host, ssh_error(&e)))
    }
}

/// A multiplexed SSH connection to `host`.
async fn open_session(host: &HostSpec, options: &SshOptions, control_dir: &Path) -> Result<Arc<Session>, String> {
    let mut builder = SessionBuilder::default();
    builder
        .known_hosts_check(if options.accept_new_host_keys {
            KnownHosts::Add
        } else {
            KnownHosts::Strict
        })
        .connect_timeout(CONNECT_TIMEOUT)
        .server_alive_interval(Duration::from_secs(5))
        .control_directory(control_dir);
    if let Some(config) = &options.config {
        builder.config_file(config);
    }
    if let Some(user) = &host.user {
        builder.user(user.clone());
    }
    if let Some(port) = host.port {
        builder.port(port);
    }
    if let Some(identity) = &host.identity {
        builder.keyfile(identity);
    }
    let session = builder
        .connect_mux(&host.host)
        .await
        .map_err(|e| format!("{host}: cannot connect over ssh: {}", ssh_error(&e)))?;
    Ok(Arc::new(session))
}

/// ssh's own message, not the crate's wrapper around it.
fn ssh_error(error: &openssh::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.trim().to_string()
}

/// `executable` (this build of faultline) on `host`: `WORKDIR/faultline-BUILD`, uploaded unless a copy there already
/// reports this build id (a copy that is torn or another build is replaced). Returns its path and whether it was
/// uploaded.
async fn install(session: &Session, host: &HostSpec, executable: &Path) -> Result<(PathBuf, bool), String> {
    let build = super::agent::build_id_of(executable)
        .map_err(|e| format!("cannot read the faultline executable {}: {e}", executable.display()))?;
    let path = host.workdir.join(format!("faultline-{build}"));
    if remote_build(session, &path).await.as_deref() == Some(build.as_str()) {
        return Ok((path, false));
    }
    let script = r#"set -e; mkdir -p "$1"; cat > "$2.part"; chmod 755 "$2.part"; mv -f "$2.part" "$2""#;
    let mut child = session
        .command("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(host.workdir.display().to_string())
        .arg(path.display().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .await
        .map_err(|e| format!("{host}: cannot start the upload: {}", ssh_error(&e)))?;
    let mut stdin = child.stdin().take().ok_or("the upload has no stdin")?;
    let mut exe = tokio::fs::File::open(executable)
        .await
        .map_err(|e| format!("cannot read the faultline executable {}: {e}", executable.display()))?;
    let copied = tokio::io::copy(&mut exe, &mut stdin).await;
    drop(stdin);
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("{host}: the upload failed: {}", ssh_error(&e)))?;
    if let Err(e) = copied {
        return Err(format!("{host}: the upload to {} broke off: {e}", path.display()));
    }
    if !output.status.success() {
        return Err(format!(
            "{host}: cannot write {} ({}): {}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    match remote_build(session, &path).await {
        Some(uploaded) if uploaded == build => Ok((path, true)),
        Some(other) => Err(format!(
            "{host}: the uploaded {} reports build {other}, not {build}: the copy is not whole",
            path.display()
        )),
        None => Err(format!(
            "{host}: the uploaded {} does not run there (another architecture or C library?)",
            path.display()
        )),
    }
}

/// The build id the faultline at `path` on the host reports, if it runs there.
async fn remote_build(session: &Session, path: &Path) -> Option<String> {
    let output = session
        .command(path.display().to_string())
        .arg("agent")
        .arg("--build-id")
        .output()
        .await
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The prefix of the folders holding ssh's control sockets (one per control process).
const CONTROL_DIR_PREFIX: &str = "faultline-ssh-";

/// A folder for ssh's control sockets of this process, in the temporary directory, naming this process in its
/// `control.pid`: ssh's masters run detached, so a control that is SIGKILLed leaves them (and their connections to
/// the hosts) behind, and [`sweep_control_dirs`] closes them by that pid.
pub fn control_dir() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(CONTROL_DIR_PREFIX).tempdir()?;
    std::fs::write(dir.path().join("control.pid"), std::process::id().to_string())?;
    Ok(dir)
}

/// Closes the ssh masters of controls that are gone (`ssh -O exit` on each control socket: ssh ends its own
/// master, no pid is signalled) and removes their folders; with `dry_run` only lists them. The folders of live
/// controls, and folders without a `control.pid`, are left alone. Blocking.
pub fn sweep_control_dirs(dry_run: bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    let mut swept = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let named = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(CONTROL_DIR_PREFIX));
        let pid = std::fs::read_to_string(dir.join("control.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        let Some(pid) = pid.filter(|_| named) else { continue };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
            && std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("faultline"));
        if alive {
            continue;
        }
        if !dry_run {
            for socket in control_sockets(&dir) {
                let _ = std::process::Command::new("ssh")
                    .arg("-S")
                    .arg(&socket)
                    .args(["-O", "exit", "faultline-sweep"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        swept.push(dir);
    }
    swept
}

/// The control sockets under a control folder (`.ssh-connection*/master`, as the openssh crate lays them out).
fn control_sockets(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("master"))
        .filter(|socket| socket.exists())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_control_folders_when_swept_should_remove_only_those_of_dead_controls() {
        // A control that is gone: a child that exited (and was reaped), so its pid names nobody.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let gone = control_dir().unwrap().keep();
        std::fs::write(gone.join("control.pid"), dead.to_string()).unwrap();
        let mine = control_dir().unwrap();
        let listed = sweep_control_dirs(true);
        assert!(
            listed.contains(&gone) && gone.exists(),
            "listed, not removed: {listed:?}"
        );
        let swept = sweep_control_dirs(false);
        assert!(swept.contains(&gone) && !gone.exists(), "{swept:?}");
        assert!(
            !swept.iter().any(|d| d == mine.path()) && mine.path().exists(),
            "a live control's stays"
        );
    }
}
