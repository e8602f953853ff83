//! End-to-end campaigns: `faultline campaign` running real clusters as child runs. Short runs (2-4 s fault phases);
//! one cluster at a time (`--parallel 1` and `support::one_cluster`).

mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::{explain, faultline, one_cluster, tagged_processes};

/// `faultline campaign ARGS --store STORE --quiet`.
fn campaign(store: &Path, args: &[&str]) -> Output {
    faultline()
        .arg("campaign")
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--quiet")
        .output()
        .unwrap()
}

fn rows(store: &Path) -> Vec<Value> {
    std::fs::read_to_string(store.join("seeds.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (plan, seed index, seed) of every run `--dry-run` lists.
fn dry_run(args: &[&str]) -> Vec<(String, u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let output = campaign(&dir.path().join("store"), &[args, &["--dry-run"]].concat());
    assert!(output.status.success(), "{}", explain(&output));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn given_the_canary_and_a_passing_plan_when_campaigned_should_exit_1_with_the_canary_first_and_reproducible() {
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let args = [
        "default",
        "canary",
        "--seeds",
        "1",
        "--parallel",
        "1",
        "--retry-failed",
        "1",
        "--time-limit",
        "3s",
        "--campaign-seed",
        "11",
    ];
    let output = campaign(&store, &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("verdict"))
        .collect();
    let first = table
        .get(1)
        .copied()
        .unwrap_or_else(|| panic!("no seed rows: {stdout}"));
    let seed = dry_run(&["canary", "--seeds", "1", "--campaign-seed", "11"])[0].2;
    let repro = format!("faultline run canary --seed {seed} --time-limit 3s");
    assert!(
        first.contains("INVALID")
            && first.contains("canary")
            && first.contains("reproducible")
            && first.ends_with(&repro),
        "the canary failure comes first with its class and repro command: {first}\n{stdout}"
    );
    assert!(table[2].contains("VALID") && table[2].contains("default"), "{stdout}");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("faultline campaign: INVALID — 1 of 2 seed(s) failed (1 reproducible"),
        "{stdout}"
    );

    let rows = rows(&store);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let canary = rows.iter().find(|r| r["plan"] == "canary").unwrap();
    assert_eq!(
        (&canary["verdict"], &canary["reproducibility"]),
        (&Value::from("invalid"), &Value::from("reproducible"))
    );
    // The canary's mutant boots on a corrupted WAL, so boot fails; whether linearizability fails too (and is listed
    // first) depends on timing in a real-process run, so the row must show boot among its failing checks.
    let failing: Vec<&Value> = std::iter::once(&canary["failing_check"])
        .chain(canary["also_failing"].as_array().into_iter().flatten())
        .collect();
    assert!(
        failing.contains(&&Value::from("boot")),
        "boot is among the failing checks: {canary:#}"
    );
    assert_eq!(canary["reruns"].as_array().unwrap().len(), 1);
    assert_eq!(canary["repro"], repro.as_str());
    assert!(
        canary["build"]["node_xxh3"].as_str().is_some_and(|h| h.len() == 32),
        "{canary:#}"
    );
    assert!(store
        .join(canary["store_dir"].as_str().unwrap())
        .join("report.html")
        .is_file());
    let default = rows.iter().find(|r| r["plan"] == "default").unwrap();
    assert_eq!(default["verdict"], "valid", "{default:#}");
    assert_eq!(default["seed"], seed);

    let index = std::fs::read_to_string(store.join("index.html")).unwrap();
    let failures = &index[index.find("<h3>Failures</h3>").unwrap()..index.find("<h3>Per plan</h3>").unwrap()];
    assert!(
        failures.contains(&repro) && failures.contains("<span class=\"c new\">new</span>"),
        "{failures}"
    );
    assert!(
        failures.contains("reproducible (1/1 failed the same way)"),
        "{failures}"
    );

    // The repro command reproduces it.
    let words: Vec<&str> = repro.split(' ').skip(1).collect();
    let again = faultline()
        .args(&words)
        .arg("--quiet")
        .arg("--store")
        .arg(dir.path().join("repro"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", explain(&again));
}

/// The run folder of `plan` in `store` whose cluster is up, other than `except`: (folder, run id).
fn running_cluster(store: &Path, plan: &str, except: &str) -> Option<(std::path::PathBuf, String)> {
    for entry in std::fs::read_dir(store.join(plan)).ok()?.flatten() {
        if entry.file_name().to_string_lossy() == except.rsplit('/').next().unwrap() {
            continue;
        }
        let history = std::fs::read_to_string(entry.path().join("history.jsonl")).unwrap_or_default();
        if history.contains("\"cluster-ready\"") {
            let first: Value = serde_json::from_str(history.lines().next()?).ok()?;
            return Some((entry.path(), first["value"]["run_id"].as_str()?.to_string()));
        }
    }
    None
}

/// Kills the campaign if the test fails before it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn given_a_campaign_interrupted_mid_run_should_keep_finished_seeds_stop_the_cluster_and_resume_the_rest() {
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let args = [
        "default",
        "--seeds",
        "2",
        "--parallel",
        "1",
        "--time-limit",
        "4s",
        "--campaign-seed",
        "5",
    ];
    let child = faultline()
        .arg("campaign")
        .args(args)
        .arg("--store")
        .arg(&store)
        .arg("--quiet")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let started = Instant::now();
    let (first_dir, (interrupted_dir, run_id)) = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the campaign never got to its second seed"
        );
        std::thread::sleep(Duration::from_millis(100));
        let done = rows(&store);
        let Some(first) = done.first() else { continue };
        let first_dir = first["store_dir"].as_str().unwrap().to_string();
        if let Some(running) = running_cluster(&store, "default", &first_dir) {
            break (first_dir, running);
        }
    };
    // The default plan's nemesis may already have killed a node (its first fault comes at a random time, and a
    // busy machine polls late): some node of the second seed runs, so the stop below has something to stop.
    let before_stop = tagged_processes(&run_id);
    assert!(!before_stop.is_empty(), "the second seed's cluster runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the campaign did not stop after SIGINT"
        );
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130), "an interrupted campaign exits 130");
    assert_eq!(
        tagged_processes(&run_id),
        Vec::<i32>::new(),
        "the running cluster was stopped"
    );
    let after_stop = rows(&store);
    assert_eq!(
        after_stop.len(),
        1,
        "only the finished seed is recorded: {after_stop:#?}"
    );
    assert!(
        store.join(&first_dir).join("results.json").is_file(),
        "the finished run is intact"
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(interrupted_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        results["verdict"], "unknown",
        "the interrupted run says so: {results:#}"
    );
    let state_path = std::fs::read_dir(store.join("campaigns"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(state_path.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(state["status"], "interrupted");

    let resumed = campaign(&store, &["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", explain(&resumed));
    let done = rows(&store);
    assert_eq!(done[0], after_stop[0], "the finished seed is not run again");
    let seeds: Vec<(u64, u64)> = done
        .iter()
        .map(|r| (r["seed_index"].as_u64().unwrap(), r["seed"].as_u64().unwrap()))
        .collect();
    let planned: Vec<(u64, u64)> = dry_run(&args).into_iter().map(|(_, i, s)| (i, s)).collect();
    assert_eq!(seeds, planned, "the campaign's seeds, each once");
}

/// (plan, seed, verdict) of every row of a store index's runs table.
fn index_entries(store: &Path) -> BTreeSet<(String, String, String)> {
    let page = std::fs::read_to_string(store.join("index.html")).unwrap();
    let runs = &page[page.find("<table id=\"runs\">").unwrap()..];
    runs.split("<tr class=\"")
        .skip(1)
        .map(|row| {
            let cells: Vec<&str> = row
                .split("<td>")
                .skip(1)
                .map(|c| c.split('<').next().unwrap_or(""))
                .collect();
            let verdict = row.split('"').next().unwrap().to_string();
            (cells[1].to_string(), cells[3].to_string(), verdict)
        })
        .collect()
}

#[test]
fn given_two_shards_when_run_and_merged_should_cover_the_unsharded_seeds_once_with_the_same_index_entries() {
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "canary",
        "--seeds",
        "2",
        "--time-limit",
        "2s",
        "--campaign-seed",
        "nightly-42",
    ];
    let unsharded = dry_run(&common);
    assert_eq!(unsharded.len(), 2);
    let mut shard_stores = Vec::new();
    let mut union = BTreeSet::new();
    for shard in ["1/2", "2/2"] {
        let store = dir.path().join(format!("store-{}", &shard[..1]));
        let args = [
            &common[..],
            &["--shard", shard, "--retry-failed", "0", "--parallel", "1"],
        ]
        .concat();
        let planned = dry_run(&args);
        assert_eq!(planned.len(), 1, "{shard}: {planned:?}");
        let output = campaign(&store, &args);
        assert_eq!(output.status.code(), Some(1), "the canary fails: {}", explain(&output));
        union.extend(index_entries(&store));
        shard_stores.push((store, planned));
    }
    let covered: Vec<(String, u64, u64)> = shard_stores.iter().flat_map(|(_, p)| p.clone()).collect();
    assert_eq!(covered, unsharded, "the shards cover the unsharded seeds, no overlap");

    let merged = dir.path().join("merged");
    let output = faultline()
        .args(["merge", "--store"])
        .arg(&merged)
        .args(shard_stores.iter().map(|(s, _)| s))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", explain(&output));
    assert_eq!(
        index_entries(&merged),
        union,
        "the merged index lists every shard's runs"
    );
    let seeds: BTreeSet<u64> = rows(&merged).iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(
        seeds,
        unsharded.iter().map(|(_, _, s)| *s).collect(),
        "one row per unsharded seed"
    );
    assert_eq!(union.len(), 2);
    let index = std::fs::read_to_string(merged.join("index.html")).unwrap();
    assert!(index.contains("shards 1/2, 2/2"), "the campaign view shows both shards");
    let id = rows(&merged)[0]["campaign"].as_str().unwrap().to_string();
    assert!(merged
        .join("campaigns")
        .join(&id)
        .join("campaign-shard1of2.json")
        .is_file());
    assert!(merged
        .join("campaigns")
        .join(&id)
        .join("campaign-shard2of2.json")
        .is_file());
    for shard in ["1of2", "2of2"] {
        let log = merged
            .join("campaigns")
            .join(&id)
            .join(format!("behaviours-shard{shard}.jsonl"));
        assert!(log.is_file(), "each shard's behaviour log is merged: {}", log.display());
    }
    assert!(
        index.contains("Behaviours found") && index.contains(&format!("<code>{id}</code>")),
        "the behaviour view draws the campaign's shards as one curve"
    );
}

/// The lines of a campaign's behaviour log.
fn behaviour_log(store: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(store.join("campaigns").join(id).join("behaviours.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn given_a_guided_campaign_interrupted_mid_run_should_keep_its_corpus_and_resume_with_the_next_choices() {
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let args = [
        "default",
        "--guided",
        "--seeds",
        "2",
        "--parallel",
        "1",
        "--retry-failed",
        "0",
        "--time-limit",
        "3s",
        "--campaign-seed",
        "7",
    ];
    let child = faultline()
        .arg("campaign")
        .args(args)
        .arg("--store")
        .arg(&store)
        .arg("--quiet")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let started = Instant::now();
    let run_id = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the campaign never got to its second run"
        );
        std::thread::sleep(Duration::from_millis(100));
        let Some(first) = behaviour_log(&store, "s7").first().cloned() else {
            continue;
        };
        let first_dir = first["store_dir"].as_str().unwrap().to_string();
        if let Some((_, run_id)) = running_cluster(&store, "default", &first_dir) {
            break run_id;
        }
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the campaign did not stop after SIGINT"
        );
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130), "an interrupted campaign exits 130");
    assert_eq!(
        tagged_processes(&run_id),
        Vec::<i32>::new(),
        "the running cluster was stopped"
    );
    let before = behaviour_log(&store, "s7");
    assert_eq!(before.len(), 1, "only the finished run is logged: {before:#?}");
    assert_eq!(
        before[0]["choice"]["as_written"], "default",
        "the plan as written runs first"
    );
    let guide = store.join("campaigns/s7/guide");
    assert!(guide.join("corpus.json").is_file() && guide.join("plans/run-1.yaml").is_file());

    let resumed = campaign(&store, &["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", explain(&resumed));
    let after = behaviour_log(&store, "s7");
    assert_eq!(
        after.len(),
        2,
        "the interrupted run is chosen and run again: {after:#?}"
    );
    assert_eq!(after[0], before[0], "the finished run is not run again");
    let second = &after[1];
    assert_eq!(second["run"], 1);
    assert!(second["choice"]["mutations"][0]
        .as_str()
        .unwrap()
        .starts_with("from default as written"));
    assert!(second["cumulative"].as_u64().unwrap() >= before[0]["cumulative"].as_u64().unwrap());
    // The guided run is an ordinary plan plus a seed: its folder keeps the plan it ran, with its origin, and its
    // results say what it showed first.
    let run_dir = store.join(second["store_dir"].as_str().unwrap());
    let plan = std::fs::read_to_string(run_dir.join("plan.yaml")).unwrap();
    assert!(
        plan.contains("origin: \"guided campaign s7 run 1: from default as written"),
        "{plan}"
    );
    let results: Value = serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["behaviours"]["novelty"]["campaign"], "s7", "{results:#}");
    assert_eq!(
        results["behaviours"]["novelty"]["new"],
        second["new"].as_array().unwrap().len()
    );
    // A mutated run is aimed: its plan starts a shot by `at` triggers (one fits the 3 s phase), and the run's
    // history records each firing of them, applied or skipped (its target held), at its offset.
    let aimed = second["choice"]["mutations"].as_array().unwrap();
    assert!(
        aimed.iter().any(|m| m.as_str().unwrap().starts_with("aimed at ")),
        "{aimed:?}"
    );
    assert!(plan.contains("when:\n      at: "), "{plan}");
    let history = std::fs::read_to_string(run_dir.join("history.jsonl")).unwrap();
    let fired: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["f"] == "trigger" && e["value"]["condition"] == "at")
        .collect();
    assert!(!fired.is_empty(), "no shot fired:\n{history}");
    assert!(fired.iter().all(|e| e["value"]["subject"].is_null()), "{fired:?}");
    let check = faultline()
        .args(["plan", "--check"])
        .arg(run_dir.join("plan.yaml"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", explain(&check));
}

#[test]
fn given_bad_campaign_arguments_should_exit_254_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let cases: [(&[&str], &str); 4] = [
        (&["no-such-plan", "--seeds", "1"], "no-such-plan"),
        (&["canary", "--shard", "1/2"], "--campaign-seed"),
        (&["canary", "--shard", "3/2", "--campaign-seed", "1"], "not a shard"),
        (&["--resume"], "no unfinished campaign"),
    ];
    for (args, message) in cases {
        let output = campaign(&store, args);
        assert_eq!(output.status.code(), Some(254), "{args:?}: {}", explain(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(message),
            "{args:?}: {}",
            explain(&output)
        );
        assert!(!store.join("seeds.jsonl").exists(), "{args:?} ran something");
    }
}
