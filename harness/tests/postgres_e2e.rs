//! PostgreSQL 15 through the exec adapter (`plans/exec-postgres.yaml`): one server run as the `postgres` user
//! (`system.user`) on the fault filesystem, list-append transactions from a psycopg2 client, checked by the
//! transactional checker. At SERIALIZABLE, under a kill and a power loss, the history must be valid; at REPEATABLE
//! READ (snapshot isolation) with the plan still claiming serializability, the checker must find write skew
//! (G2-item). Also the plan checks of `system.user`.
//!
//! Needs root, /dev/fuse, `postgresql-15` and `python3-psycopg2` (Debian's packages); under `CI=true` their absence
//! fails the tests, elsewhere they skip.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::*;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// Root, /dev/fuse, PostgreSQL 15, the `postgres` user and psycopg2 for Debian's Python?
fn postgres_ready() -> bool {
    if !fuse_ready() {
        return false;
    }
    let postgres = ["initdb", "postgres", "pg_isready", "pg_ctl"]
        .iter()
        .find(|program| !Path::new(PG_BIN).join(program).is_file())
        .map_or(Ok(()), |missing| Err(format!("{PG_BIN}/{missing} is missing")));
    if !prerequisite("PostgreSQL 15 (apt-get install -y postgresql-15)", postgres) {
        return false;
    }
    let user = faultline::supervisor::RunAs::lookup("postgres").map(|_| ());
    if !prerequisite("the postgres user (apt-get install -y postgresql-15)", user) {
        return false;
    }
    let psycopg2 = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import psycopg2"])
        .output()
        .map_err(|e| e.to_string())
        .and_then(|o| {
            o.status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&o.stderr).trim().to_string())
        });
    prerequisite(
        "psycopg2 for /usr/bin/python3 (apt-get install -y python3-psycopg2)",
        psycopg2,
    )
}

/// `plans/exec-postgres.yaml` with its client path made absolute, a fixed seed, a `seconds` fault phase and, in
/// place of its random faults, `nemesis` (YAML of the `nemesis:` section's body; empty: no faults).
fn postgres_plan(seed: u64, seconds: u64, nemesis: &str) -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-postgres.yaml").replace("{plan_dir}", &plans.display().to_string());
    let limit = text
        .lines()
        .find(|l| l.starts_with("time_limit:"))
        .expect("a time limit");
    let text = text.replace(limit, &format!("time_limit: {seconds}s\nseed: {seed}"));
    let (Some(start), Some(end)) = (text.find("\nnemesis:\n"), text.find("\nfinal_phase:\n")) else {
        panic!("exec-postgres.yaml has a nemesis section followed by final_phase");
    };
    let section = if nemesis.is_empty() {
        String::new()
    } else {
        format!("\nnemesis:\n{nemesis}")
    };
    format!("{}{section}{}", &text[..start], &text[end..])
}

/// A store the `postgres` user can reach, whatever the temp dir's mode (a private 0700 one keeps it out).
fn reachable_store() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = dir.path().join("store");
    (dir, store)
}

/// Runs `plan` in `store` with `PG_ISOLATION=isolation`; the run's folder.
fn run_postgres(store: &Path, plan: &str, isolation: &str) -> (std::process::Output, PathBuf) {
    let path = write_plan(store.parent().unwrap(), plan);
    let output = faultline()
        .args(["run", "--quiet", "--store"])
        .arg(store)
        .arg(&path)
        .env("PG_ISOLATION", isolation)
        .output()
        .unwrap();
    (output, latest(store))
}

/// Nemesis events that started a fault of `kind` (`kill`, `power-loss`, ...).
fn faults_of(events: &[Value], kind: &str) -> usize {
    events
        .iter()
        .filter(|e| e["kind"] == "nemesis" && e["f"] == kind)
        .count()
}

/// Committed transactions (an `ok` with at least one append).
fn committed_appends(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["kind"] == "ok" && e["f"] == "txn")
        .filter(|e| {
            e["value"]
                .as_array()
                .is_some_and(|ops| ops.iter().any(|op| op[0] == "append"))
        })
        .count()
}

#[test]
fn given_postgres_at_serializable_when_killed_and_powered_off_should_be_valid() {
    if !postgres_ready() {
        return;
    }
    let _one = one_cluster();
    // A kill (down 1 s) at 4 s and a power loss (kill -9, unsynced writes dropped, down 1 s) at 9 s, then the final
    // phase's own power loss before the restart-all.
    let nemesis = "  process:\n    script:\n      - {at: 4s, kind: kill, targets: one, duration: 1s}\n      \
                   - {at: 9s, kind: power-loss, targets: one, duration: 1s}\n";
    let (_dir, store) = reachable_store();
    let (output, run_dir) = run_postgres(&store, &postgres_plan(1, 15, nemesis), "serializable");
    let events = history(&run_dir);
    let results = results(&run_dir);
    assert_eq!(results["verdict"], "valid", "{}\n{}", explain(&output), results);
    assert!(faults_of(&events, "kill") >= 1, "the script's kill ran");
    assert!(faults_of(&events, "power-loss") >= 1, "the script's power loss ran");
    let committed = committed_appends(&events);
    assert!(committed >= 50, "only {committed} transactions with appends committed");
    assert_eq!(check(&results, "txn")["verdict"], "valid");
}

#[test]
fn given_postgres_at_repeatable_read_claimed_serializable_should_find_write_skew() {
    if !postgres_ready() {
        return;
    }
    let _one = one_cluster();
    // No faults: write skew is an isolation anomaly, and a server that stays up commits the most transactions.
    let (_dir, store) = reachable_store();
    let (output, run_dir) = run_postgres(&store, &postgres_plan(1, 15, ""), "repeatable-read");
    let results = results(&run_dir);
    let txn = check(&results, "txn");
    assert_eq!(txn["verdict"], "invalid", "{}\n{}", explain(&output), txn);
    let text = txn.to_string();
    assert!(text.contains("G2-item"), "snapshot isolation allows write skew: {text}");
    // The anomalies found, not the classes the claim forbids (which name G0, G1c and lost too).
    let found = txn["details"]["anomaly_types"]
        .as_array()
        .expect("the txn check's anomaly types");
    assert!(
        found
            .iter()
            .filter_map(Value::as_str)
            .all(|t| !t.starts_with("G1c") && !t.starts_with("G0") && !t.starts_with("lost")),
        "snapshot isolation forbids G0, G1c and lost appends: {text}"
    );
}

/// `exec-postgres.yaml` with `user: postgres` replaced.
fn plan_with_user(user: &str) -> String {
    let text = postgres_plan(1, 10, "");
    assert!(
        text.contains("\n  user: postgres\n"),
        "exec-postgres.yaml runs as postgres"
    );
    text.replace("\n  user: postgres\n", &format!("\n  user: {user}\n"))
}

/// The line of `text` that contains `needle`, 1-based.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn given_a_user_that_does_not_exist_when_checked_should_name_its_line_and_column() {
    if !postgres_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = plan_with_user("no-such-user-xyz");
    let path = write_plan(dir.path(), &text);
    let output = faultline().args(["plan", "--check"]).arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(254), "{}", explain(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = line_of(&text, "user: no-such-user-xyz");
    assert!(stderr.contains(&format!("{}:{line}:9:", path.display())), "{stderr}");
    assert!(stderr.contains("there is no user `no-such-user-xyz`"), "{stderr}");
}

/// `system.user` with the netns backend: `ip netns exec` enters the node's namespace as root and `setpriv` becomes
/// the user inside it (PostgreSQL refuses to run as root, so a server that serves at all runs as `postgres`).
#[test]
fn given_a_user_and_the_netns_backend_when_run_should_run_the_server_as_the_user_inside_its_namespace() {
    if !postgres_ready() || !netns_ready() {
        return;
    }
    let _one = one_cluster();
    let nemesis = "  process:\n    script:\n      - {at: 3s, kind: kill, targets: one, duration: 1s}\n";
    // Clients reach a namespaced server from the lab's address, which initdb's pg_hba.conf (loopback) does not let in.
    let text = postgres_plan(2, 8, nemesis)
        .replacen(
            "  user: postgres\n",
            "  user: postgres\n  config_files: {hba.conf: \"host all all 0.0.0.0/0 trust\\nlocal all all trust\\n\"}\n",
            1,
        )
        .replacen(
            "-c, \"unix_socket_directories={node_dir}\",",
            "-c, \"unix_socket_directories={node_dir}\", -c, \"hba_file={node_dir}/hba.conf\",",
            1,
        );
    assert!(
        text.contains("hba_file"),
        "exec-postgres.yaml's start sets the socket directory"
    );
    let text = format!("{text}\nnetwork: {{backend: netns}}\n");
    let (_dir, store) = reachable_store();
    let (output, run_dir) = run_postgres(&store, &text, "serializable");
    let results = results(&run_dir);
    assert_eq!(results["verdict"], "valid", "{}\n{}", explain(&output), results);
    let events = history(&run_dir);
    assert!(faults_of(&events, "kill") >= 1, "the script's kill ran");
    assert!(committed_appends(&events) >= 10, "the server served transactions");
}

/// Only root may start a process as another user: a faultline that is not root refuses `user` at load. Run as
/// `nobody` when the test runs as root.
#[test]
fn given_a_user_when_faultline_is_not_root_should_refuse_it_at_its_line() {
    if !postgres_ready() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = plan_with_user("postgres");
    let path = write_plan(dir.path(), &text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = faultline()
        .args(["plan", "--check"])
        .arg(&path)
        .current_dir("/")
        .uid(65_534)
        .gid(65_534)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(254), "{}", explain(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = line_of(&text, "user: postgres");
    assert!(stderr.contains(&format!("{}:{line}:9:", path.display())), "{stderr}");
    assert!(stderr.contains("needs faultline to run as root"), "{stderr}");
}
