//! `faultline agent` spoken to as the control speaks to it over SSH, here through a local pipe: it starts processes
//! in their own groups, signals only its own, reports their exits with its clock, reads files back, and when its
//! channel closes kills everything it started.

use faultline::remote::agent::Request;
use faultline::remote::client::AgentClient;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

fn agent() -> (
    tokio::process::Child,
    AgentClient,
    tokio::sync::mpsc::UnboundedReceiver<Value>,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("agent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (client, events) = AgentClient::new(stdin, stdout);
    (child, client, events)
}

fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        .unwrap_or(false)
}

fn spawn(argv: &[&str], log: &std::path::Path) -> Request {
    Request::Spawn {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: BTreeMap::from([("GREETING".to_string(), "hello from the agent".to_string())]),
        cwd: None,
        log: log.to_path_buf(),
        clock: None,
    }
}

#[tokio::test]
async fn given_an_agent_when_it_starts_signals_and_reads_should_do_it_to_its_own_processes_only() {
    let dir = tempfile::tempdir().unwrap();
    let (_child, agent, mut events) = agent();
    let (hello, _) = agent.call(Request::Hello).await.unwrap();
    assert_eq!(hello["protocol"], 1, "{hello}");
    assert_eq!(hello["build"].as_str().unwrap().len(), 16, "{hello}");
    // A process whose output lands in its log, and whose exit is an event with the agent's clock.
    let log = dir.path().join("n1/node.log");
    let (ok, _) = agent
        .call(spawn(&["sh", "-c", "echo $GREETING; exit 3"], &log))
        .await
        .unwrap();
    let pid = ok["pid"].as_i64().unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (exit["event"].as_str(), exit["pid"].as_i64(), exit["code"].as_i64()),
        (Some("exit"), Some(pid), Some(3))
    );
    assert!(exit["mono_ns"].as_u64().unwrap() >= ok["started_mono_ns"].as_u64().unwrap());
    let (read, _) = agent
        .call(Request::Read {
            path: log.clone(),
            offset: 0,
            max: None,
        })
        .await
        .unwrap();
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD
        .decode(read["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(data).unwrap(), "hello from the agent\n");
    // Pause, resume, kill: the exit says SIGKILL.
    let (ok, _) = agent.call(spawn(&["sleep", "100"], &log)).await.unwrap();
    let sleeper = ok["pid"].as_i64().unwrap();
    for signal in ["SIGSTOP", "SIGCONT", "SIGKILL"] {
        agent
            .call(Request::Signal {
                pid: sleeper as i32,
                signal: signal.into(),
            })
            .await
            .unwrap_or_else(|e| panic!("{signal}: {e}"));
    }
    let exit = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (exit["pid"].as_i64(), exit["signal"].as_str()),
        (Some(sleeper), Some("SIGKILL")),
        "{exit}"
    );
    // A pid it did not start is refused, whatever it is.
    let err = agent
        .call(Request::Signal {
            pid: std::process::id() as i32,
            signal: "SIGKILL".into(),
        })
        .await
        .unwrap_err();
    assert!(err.contains("signals only its own"), "{err}");
    let err = agent.call(spawn(&[], &log)).await.unwrap_err();
    assert!(err.contains("`argv` is empty"), "{err}");
}

/// The control's channel closing (an SSH connection that dropped, a control SIGKILLed) leaves nothing running.
#[tokio::test]
async fn given_an_agent_whose_channel_closes_when_it_ends_should_kill_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, agent, _events) = agent();
    let (ok, _) = agent
        .call(spawn(&["sh", "-c", "sleep 100 & sleep 100"], &dir.path().join("log")))
        .await
        .unwrap();
    let pid = ok["pid"].as_i64().unwrap();
    assert!(alive(pid));
    drop(agent); // its stdin closes
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the agent's process {pid} outlived its channel");
}

#[tokio::test]
async fn given_an_agent_when_its_clock_is_synced_should_bound_the_offset_by_the_round_trip() {
    let (_child, agent, _events) = agent();
    let sync = agent.sync_clock(5).await.unwrap();
    // One machine, one monotonic clock: the true offset is 0, and the estimate is within its uncertainty.
    assert!(
        sync.mono_offset_ns.unsigned_abs() <= sync.uncertainty_ns + 1_000_000,
        "{sync:?}"
    );
    assert!(sync.rtt_ns > 0 && sync.samples == 5, "{sync:?}");
}
