//! CLI contract tests: format, run on an unformatted dir, verify and dump.

mod common;

use std::process::Command;

use common::NODE_BIN;

#[test]
fn given_the_binary_when_asked_its_version_should_print_the_source_identity_of_the_library() {
    let output = Command::new(NODE_BIN).arg("--version").output().expect("--version");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(faultline_node::SOURCE_ID.len(), 16, "16 hex digits");
    assert_eq!(
        text.trim(),
        format!(
            "faultline-node {} (source {})",
            env!("CARGO_PKG_VERSION"),
            faultline_node::SOURCE_ID
        )
    );
}

#[test]
fn given_an_unformatted_dir_when_running_should_exit_1_telling_to_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(NODE_BIN)
        .args(["run", "--id", "0", "--data-dir"])
        .arg(dir.path())
        .args(["--client-addr", "127.0.0.1:1", "--peer-addr", "127.0.0.1:1"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("faultline-node format"));
}

#[test]
fn given_a_formatted_dir_when_formatting_again_should_refuse_unless_forced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let format = |force: bool| {
        let mut command = Command::new(NODE_BIN);
        command.args(["format", "--data-dir"]).arg(dir.path().join("d"));
        command.args(["--cluster-id", "1", "--id", "0", "--replica-count", "3"]);
        if force {
            command.arg("--force");
        }
        command.output().expect("format").status.code()
    };
    assert_eq!(format(false), Some(0));
    assert_eq!(format(false), Some(1));
    assert_eq!(format(true), Some(0));
    let verify = Command::new(NODE_BIN)
        .arg("verify")
        .arg(dir.path().join("d"))
        .output()
        .expect("verify");
    assert_eq!(verify.status.code(), Some(0));
}

#[test]
fn given_a_wal_that_does_not_chain_when_verifying_should_exit_1_and_leave_it_untouched() {
    use faultline_node::checksum::root_checksum;
    use faultline_node::wal::entry::{Entry, RequestIdentity};
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("d");
    let status = Command::new(NODE_BIN)
        .args(["format", "--data-dir"])
        .arg(&data)
        .args(["--cluster-id", "9", "--id", "0", "--replica-count", "1"])
        .status()
        .expect("format");
    assert!(status.success());
    let first = Entry::new(9, 1, 0, root_checksum(9), RequestIdentity::default(), b"a".to_vec());
    let second = Entry::new(
        9,
        2,
        0,
        first.header.checksum,
        RequestIdentity::default(),
        b"b".to_vec(),
    );
    let broken = Entry::new(
        9,
        3,
        0,
        first.header.checksum,
        RequestIdentity::default(),
        b"c".to_vec(),
    );
    let bytes: Vec<u8> = [first, second, broken].iter().flat_map(Entry::encode).collect();
    std::fs::write(data.join("wal"), &bytes).expect("write wal");
    let verify = Command::new(NODE_BIN)
        .arg("verify")
        .arg(&data)
        .output()
        .expect("verify");
    assert_eq!(verify.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&verify.stdout);
    assert!(
        stdout.contains("does not chain") && stdout.contains("refusing to boot"),
        "{stdout}"
    );
    let run = Command::new(NODE_BIN)
        .args(["run", "--id", "0", "--data-dir"])
        .arg(&data)
        .args(["--client-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0"])
        .output()
        .expect("run");
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    let refusals: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("refusing to boot"))
        .collect();
    assert_eq!(refusals.len(), 1, "{stderr}");
    assert!(refusals[0].contains("wal") && refusals[0].contains("offset") && refusals[0].contains("op 3"));
    assert_eq!(std::fs::read(data.join("wal")).expect("read"), bytes);
    let dump = Command::new(NODE_BIN).arg("dump").arg(&data).output().expect("dump");
    assert_eq!(String::from_utf8_lossy(&dump.stdout).lines().count(), 3);
}
