//! The deployment examples (`deploy/kubernetes/nightly-job.yaml`, `deploy/ci/github-nightly.yml`) are parsed, their
//! key fields checked, and their shard commands run for every shard against the real CLI (a stand-in `faultline` on
//! PATH adds `--dry-run`, so nothing starts): the shards must be accepted and together cover the seed space once.

mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn documents(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join(path)).unwrap();
    serde_saphyr::from_multiple::<Value>(&text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
}

/// A folder with stand-ins: `faultline` runs the real binary with `--dry-run --seeds <seeds>`, `sudo` runs its
/// arguments.
fn stand_ins(seeds: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let faultline = format!(
        "#!/bin/sh\nexec '{}' \"$@\" --dry-run --seeds {seeds}\n",
        env!("CARGO_BIN_EXE_faultline")
    );
    for (name, text) in [("faultline", faultline.as_str()), ("sudo", "#!/bin/sh\nexec \"$@\"\n")] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    dir
}

/// Runs a shard script with the stand-ins first on PATH; returns the (plan, seed index) pairs it would run.
fn dry_run(shell: &[&str], script: &str, env: &[(String, String)], bin: &Path) -> Vec<(String, u64)> {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new(shell[0])
        .args(&shell[1..])
        .arg(script)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("PATH", path)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the shard script failed: {}",
        support::explain(&output)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 4, "a dry-run line: {line}");
            (fields[0].to_string(), fields[1].parse().unwrap())
        })
        .collect()
}

/// Every shard's runs together: each (plan, seed index) of `plans` x `0..shards` exactly once.
fn assert_covers_once(per_shard: Vec<Vec<(String, u64)>>, plans: &[&str], shards: u64) {
    let mut all = Vec::new();
    for runs in &per_shard {
        assert!(!runs.is_empty(), "a shard with nothing to do: {per_shard:?}");
        all.extend(runs.iter().cloned());
    }
    let unique: BTreeSet<(String, u64)> = all.iter().cloned().collect();
    assert_eq!(unique.len(), all.len(), "shards overlap: {per_shard:?}");
    let expected: BTreeSet<(String, u64)> = plans
        .iter()
        .flat_map(|p| (0..shards).map(move |i| (p.to_string(), i)))
        .collect();
    assert_eq!(unique, expected);
}

#[test]
fn given_the_kubernetes_nightly_job_when_parsed_should_be_an_indexed_privileged_job_whose_pods_cover_every_shard() {
    let docs = documents("deploy/kubernetes/nightly-job.yaml");
    let claim = docs
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .expect("a PVC document");
    let job = docs.iter().find(|d| d["kind"] == "Job").expect("a Job document");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().expect("completions");
    assert!(spec["parallelism"].as_u64().unwrap() <= completions);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    assert_eq!(
        container["securityContext"]["privileged"], true,
        "netns, nftables and FUSE need it"
    );
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["persistentVolumeClaim"].is_object())
        .unwrap();
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"]);
    let mount = &container["volumeMounts"][0];
    assert_eq!(
        (&mount["name"], &mount["mountPath"]),
        (&volume["name"], &Value::from("/results"))
    );

    let mut env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["value"].as_str()?.to_string())))
        .collect();
    let shards: u64 = env
        .iter()
        .find(|(k, _)| k == "SHARDS")
        .expect("SHARDS")
        .1
        .parse()
        .unwrap();
    assert_eq!(shards, completions, "one shard per completion index");
    let plans: Vec<String> = env
        .iter()
        .find(|(k, _)| k == "PLANS")
        .unwrap()
        .1
        .split_whitespace()
        .map(String::from)
        .collect();
    let command: Vec<&str> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let script = command.last().unwrap();
    assert!(
        script.contains("--shard") && script.contains("JOB_COMPLETION_INDEX + 1"),
        "{script}"
    );
    assert!(
        script.contains("--store \"${store}\"") && script.contains("/results/"),
        "{script}"
    );
    let bin = stand_ins(shards);
    env.push(("JOB_NAME".into(), "faultline-nightly-x7k2p".into()));
    let per_shard = (0..completions)
        .map(|index| {
            let mut env = env.clone();
            env.push(("JOB_COMPLETION_INDEX".into(), index.to_string()));
            dry_run(&command[..command.len() - 1], script, &env, bin.path())
        })
        .collect();
    let plans: Vec<&str> = plans.iter().map(String::as_str).collect();
    assert_covers_once(per_shard, &plans, shards);
}

/// `${{ matrix.shard }}`, `${{ github.* }}` and `${{ env.* }}` replaced as GitHub would.
fn expand(script: &str, shard: u64) -> String {
    script
        .replace("${{ matrix.shard }}", &shard.to_string())
        .replace("${{ github.run_id }}", "4242")
        .replace("${{ github.sha }}", "0123abcd")
}

#[test]
fn given_the_github_nightly_workflow_when_parsed_should_run_one_job_per_shard_and_merge_their_stores() {
    let workflow = documents("deploy/ci/github-nightly.yml").remove(0);
    assert!(
        workflow["on"]["schedule"][0]["cron"].is_string(),
        "a nightly schedule: {:#}",
        workflow["on"]
    );
    let env: Vec<(String, String)> = workflow["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map(String::from).unwrap_or_else(|| v.to_string())))
        .collect();
    let shards: u64 = env.iter().find(|(k, _)| k == "SHARDS").unwrap().1.parse().unwrap();
    let jobs = &workflow["jobs"];
    let matrix: Vec<u64> = jobs["shards"]["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        matrix,
        (1..=shards).collect::<Vec<_>>(),
        "the matrix lists shards 1..SHARDS"
    );
    let steps = jobs["shards"]["steps"].as_array().unwrap();
    let script = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|run| run.contains("faultline campaign"))
        .expect("a campaign step");
    assert!(script.contains("--shard \"${{ matrix.shard }}/${SHARDS}\""), "{script}");
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(upload["if"], "always()", "a shard's store is kept when it fails");
    assert_eq!(upload["with"]["name"], "store-${{ matrix.shard }}");

    let merge = &jobs["merge"];
    assert_eq!(merge["needs"], "shards");
    assert_eq!(merge["if"], "always()");
    let merge_steps = merge["steps"].as_array().unwrap();
    assert!(
        merge_steps.iter().any(|s| s["with"]["pattern"] == "store-*"),
        "downloads every shard's store"
    );
    assert!(merge_steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .any(|run| run.contains("faultline merge --store store shards/store-*")));

    let bin = stand_ins(shards);
    let per_shard = matrix
        .iter()
        .map(|&shard| {
            dry_run(
                &["bash", "-eo", "pipefail", "-c"],
                &expand(script, shard),
                &env,
                bin.path(),
            )
        })
        .collect();
    let plans = ["reference-mixed", "reference-log", "reference-power-loss", "default"];
    let listed = env
        .iter()
        .find(|(k, _)| k == "PLANS")
        .unwrap()
        .1
        .split_whitespace()
        .count();
    assert_eq!(listed, plans.len(), "PLANS lists these plans");
    assert_covers_once(per_shard, &plans, shards);
}
