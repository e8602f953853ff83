//! `faultline check FILE` for every model and format: a valid and an invalid history of each model, exit codes as a
//! run's (0 valid, 1 invalid, 2 unknown, 254 bad input with line and column); every format read into the same
//! verdict; `--report DIR` writes a run-like folder whose report.html loads in headless Chromium without a script
//! error and draws the cycle of an invalid list-append history.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::{explain, faultline};

/// `faultline check --json FILE --model MODEL [extra]`: the exit code and the printed result object.
fn check(file: &Path, model: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let output = faultline()
        .args(["check", "--json", "--model", model])
        .args(extra)
        .arg(file)
        .output()
        .unwrap();
    let json =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("one JSON object: {}", explain(&output)));
    (output.status.code(), json)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// An op map per line, EDN.
fn edn(ops: &[&str]) -> String {
    ops.iter().map(|op| format!("{op}\n")).collect()
}

/// (model, extra arguments, a valid history, an invalid one), each history a few Jepsen op maps.
fn fixtures() -> Vec<(&'static str, Vec<&'static str>, String, String)> {
    let write_skew = edn(&[
        "{:process 0 :type :invoke :f :txn :value [[:r :x nil] [:append :y 1]]}",
        "{:process 1 :type :invoke :f :txn :value [[:r :y nil] [:append :x 1]]}",
        "{:process 0 :type :ok :f :txn :value [[:r :x []] [:append :y 1]]}",
        "{:process 1 :type :ok :f :txn :value [[:r :y []] [:append :x 1]]}",
        "{:process 2 :type :invoke :f :txn :value [[:r :x nil] [:r :y nil]]}",
        "{:process 2 :type :ok :f :txn :value [[:r :x [1]] [:r :y [1]]]}",
    ]);
    let serial_appends = edn(&[
        "{:process 0 :type :invoke :f :txn :value [[:append :x 1]]}",
        "{:process 0 :type :ok :f :txn :value [[:append :x 1]]}",
        "{:process 1 :type :invoke :f :txn :value [[:r :x nil] [:append :x 2]]}",
        "{:process 1 :type :ok :f :txn :value [[:r :x [1]] [:append :x 2]]}",
        "{:process 0 :type :invoke :f :txn :value [[:r :x nil]]}",
        "{:process 0 :type :ok :f :txn :value [[:r :x [1 2]]]}",
    ]);
    let registers = |second_read: u32| {
        edn(&[
            "{:process 0 :type :invoke :f :txn :value [[:w :x 1]]}",
            "{:process 0 :type :ok :f :txn :value [[:w :x 1]]}",
            "{:process 1 :type :invoke :f :txn :value [[:r :x nil] [:w :y 2]]}",
            "{:process 1 :type :ok :f :txn :value [[:r :x 1] [:w :y 2]]}",
            &format!("{{:process 0 :type :invoke :f :txn :value [[:r :y nil]]}}\n{{:process 0 :type :ok :f :txn :value [[:r :y {second_read}]]}}"),
        ])
    };
    let lock = |second: &str| {
        edn(&[
            "{:process 0 :type :invoke :f :acquire}",
            "{:process 0 :type :ok :f :acquire}",
            &format!("{{:process 1 :type :invoke :f :{second}}}\n{{:process 1 :type :ok :f :{second}}}"),
        ])
    };
    let set = |read: &str| {
        edn(&[
            "{:process 0 :type :invoke :f :add :value 1}",
            "{:process 0 :type :ok :f :add :value 1}",
            "{:process 1 :type :invoke :f :add :value 2}",
            "{:process 1 :type :ok :f :add :value 2}",
            &format!(
                "{{:process 2 :type :invoke :f :read :value nil}}\n{{:process 2 :type :ok :f :read :value {read}}}"
            ),
        ])
    };
    let counter = |read: u32| {
        edn(&[
            "{:process 0 :type :invoke :f :add :value 2}",
            "{:process 0 :type :ok :f :add :value 2}",
            &format!("{{:process 1 :type :invoke :f :read}}\n{{:process 1 :type :ok :f :read :value {read}}}"),
        ])
    };
    let bank = |second: &str| {
        edn(&[
            "{:process 0 :type :invoke :f :read}",
            "{:process 0 :type :ok :f :read :value {0 10 1 0}}",
            "{:process 1 :type :invoke :f :transfer :value {:from 0 :to 1 :amount 3}}",
            "{:process 1 :type :ok :f :transfer :value {:from 0 :to 1 :amount 3}}",
            &format!("{{:process 0 :type :invoke :f :read}}\n{{:process 0 :type :ok :f :read :value {second}}}"),
        ])
    };
    let long_fork = |second: &str| {
        edn(&[
            "{:process 0 :type :invoke :f :txn :value [[:w 0 1]]}",
            "{:process 0 :type :ok :f :txn :value [[:w 0 1]]}",
            "{:process 1 :type :invoke :f :txn :value [[:w 1 1]]}",
            "{:process 1 :type :ok :f :txn :value [[:w 1 1]]}",
            "{:process 2 :type :invoke :f :txn :value [[:r 0 nil] [:r 1 nil]]}",
            "{:process 2 :type :ok :f :txn :value [[:r 0 1] [:r 1 nil]]}",
            &format!("{{:process 3 :type :invoke :f :txn :value [[:r 0 nil] [:r 1 nil]]}}\n{{:process 3 :type :ok :f :txn :value {second}}}"),
        ])
    };
    let cas = |read: u32| {
        edn(&[
            "{:process 0 :type :invoke :f :write :value 1}",
            "{:process 0 :type :ok :f :write :value 1}",
            &format!(
                "{{:process 1 :type :invoke :f :read :value nil}}\n{{:process 1 :type :ok :f :read :value {read}}}"
            ),
        ])
    };
    vec![
        ("cas-register", vec![], cas(1), cas(2)),
        ("mutex", vec![], lock("release"), lock("acquire")),
        ("list-append", vec![], serial_appends, write_skew),
        ("rw-register", vec![], registers(2), registers(3)),
        ("set", vec![], set("#{1 2}"), set("#{2 9}")),
        ("set-full", vec![], set("[1 2]"), set("[2]")),
        ("counter", vec![], counter(2), counter(3)),
        ("bank", vec![], bank("{0 7 1 3}"), bank("{0 7 1 0}")),
        (
            "long-fork",
            vec!["--group-size", "2"],
            long_fork("[[:r 0 1] [:r 1 1]]"),
            long_fork("[[:r 0 nil] [:r 1 1]]"),
        ),
    ]
}

#[test]
fn given_a_valid_and_an_invalid_history_of_every_model_when_checked_should_exit_0_and_1_with_the_models_result() {
    let dir = tempfile::tempdir().unwrap();
    for (model, extra, valid, invalid) in fixtures() {
        let (code, json) = check(&write(dir.path(), &format!("{model}-valid.edn"), &valid), model, &extra);
        assert_eq!(code, Some(0), "{model} valid: {json:#}");
        assert_eq!(
            (json["verdict"].as_str(), json["model"].as_str()),
            (Some("valid"), Some(model))
        );
        let (code, json) = check(
            &write(dir.path(), &format!("{model}-invalid.edn"), &invalid),
            model,
            &extra,
        );
        assert_eq!(code, Some(1), "{model} invalid: {json:#}");
        assert_eq!(json["verdict"], "invalid", "{model}");
    }
}

#[test]
fn given_one_history_in_every_format_when_checked_should_read_the_same_verdict_and_anomalies() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, _, write_skew) = fixtures().into_iter().find(|f| f.0 == "list-append").unwrap();
    let edn_lines = write(dir.path(), "skew.edn", &format!("; a comment\n{write_skew}"));
    let ops: Vec<&str> = write_skew.lines().collect();
    let edn_vector = write(dir.path(), "skew-vector.edn", &format!("[{}]", ops.join(",\n ")));
    // The same six ops as elle-cli's JSON writes them.
    let json_ops = [
        r#"{"process":0,"type":"invoke","f":"txn","value":[["r","x",null],["append","y",1]]}"#,
        r#"{"process":1,"type":"invoke","f":"txn","value":[["r","y",null],["append","x",1]]}"#,
        r#"{"process":0,"type":"ok","f":"txn","value":[["r","x",[]],["append","y",1]]}"#,
        r#"{"process":1,"type":"ok","f":"txn","value":[["r","y",[]],["append","x",1]]}"#,
        r#"{"process":2,"type":"invoke","f":"txn","value":[["r","x",null],["r","y",null]]}"#,
        r#"{"process":2,"type":"ok","f":"txn","value":[["r","x",[1]],["r","y",[1]]]}"#,
    ];
    let json_lines = write(dir.path(), "skew-lines.json", &json_ops.join("\n"));
    let json_array = write(dir.path(), "skew.json", &format!("[{}]", json_ops.join(",\n")));
    let report = dir.path().join("report");
    let (code, _) = check(&edn_lines, "list-append", &["--report", report.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    let jsonl = report.join("history.jsonl");
    for (file, format) in [
        (&edn_lines, None),
        (&edn_vector, Some("edn")),
        (&json_lines, None),
        (&json_array, Some("json")),
        (&jsonl, Some("jsonl")),
    ] {
        let format_args: Vec<&str> = format.map(|f| vec!["--format", f]).unwrap_or_default();
        let (code, json) = check(file, "list-append", &format_args);
        assert_eq!(code, Some(1), "{}: {json:#}", file.display());
        assert_eq!(
            json["anomaly_types"],
            serde_json::json!(["G2-item"]),
            "{}",
            file.display()
        );
        assert_eq!(
            json["not"],
            serde_json::json!(["repeatable-read"]),
            "{}",
            file.display()
        );
    }
}

#[test]
fn given_bad_input_when_checked_should_exit_254_naming_file_line_and_column_or_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let torn = write(
        dir.path(),
        "torn.edn",
        "{:process 0 :type :invoke :f :txn :value [[:r :x nil]]}\n{:process 0 :type :ok :value [[:r :x [1}\n",
    );
    let not_json = write(
        dir.path(),
        "bad.json",
        "[{\"type\":\"invoke\",\"process\":0},\n {\"type\" \"ok\"}]",
    );
    let no_type = write(dir.path(), "no-type.edn", "{:process 0 :f :read}\n");
    let cases: Vec<(PathBuf, Vec<&str>, String)> = vec![
        (torn.clone(), vec![], format!("{}:2:", torn.display())),
        (not_json.clone(), vec![], format!("{}:2:", not_json.display())),
        (
            no_type.clone(),
            vec![],
            format!("{}:1:1: op map without :type", no_type.display()),
        ),
        (
            torn.clone(),
            vec!["--consistency-models", "serialisable"],
            "unknown consistency model \"serialisable\"".into(),
        ),
        (torn.clone(), vec!["--anomalies", "G3"], "unknown anomaly \"G3\"".into()),
        (
            torn,
            vec!["--explain-keys", "all"],
            "--explain-keys explains the keys a linearizability check found failing".into(),
        ),
    ];
    for (file, extra, expected) in cases {
        let output = faultline()
            .args(["check", "--model", "list-append"])
            .args(&extra)
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(254), "{extra:?}: {}", explain(&output));
        assert!(
            stderr.contains(&expected),
            "{extra:?}: expected {expected:?} in:\n{stderr}"
        );
    }
}

/// Jepsen `independent` register ops: key 1 reads nil after a write, key 2 applies a cas from a value it never held,
/// key 3 is fine.
fn two_keys_failing_two_ways() -> String {
    edn(&[
        "{:process 0 :type :invoke :f :write :value [1 1]}",
        "{:process 0 :type :ok :f :write :value [1 1]}",
        "{:process 1 :type :invoke :f :read :value [1 nil]}",
        "{:process 1 :type :ok :f :read :value [1 nil]}",
        "{:process 2 :type :invoke :f :write :value [2 7]}",
        "{:process 2 :type :ok :f :write :value [2 7]}",
        "{:process 3 :type :invoke :f :cas :value [2 [5 6]]}",
        "{:process 3 :type :ok :f :cas :value [2 [5 6]]}",
        "{:process 4 :type :invoke :f :write :value [3 9]}",
        "{:process 4 :type :ok :f :write :value [3 9]}",
    ])
}

/// `faultline check FILE [extra]` without `--json`: the exit code and what it printed for a person (stderr).
fn check_text(file: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let output = faultline().arg("check").args(extra).arg(file).output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn given_two_keys_failing_two_ways_when_checked_with_explain_keys_should_explain_each_asked_key_and_name_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "two.edn", &two_keys_failing_two_ways());
    let (code, text) = check_text(&file, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("\n  Key \"1\": no order of its 2 operations"),
        "the first in full:\n{text}"
    );
    assert!(
        text.contains("\n    Key \"2\": cas(5, 6) -> ok (process 3, history events 6..7) cannot be placed"),
        "the second in one line:\n{text}"
    );
    assert!(
        text.contains("by `faultline check --explain-keys all`"),
        "the reason says where:\n{text}"
    );

    let report = dir.path().join("report");
    let (code, text) = check_text(
        &file,
        &["--explain-keys", "2,3,9", "--report", report.to_str().unwrap()],
    );
    assert_eq!(code, Some(1), "the verdict's exit code, whatever was asked:\n{text}");
    assert!(
        text.contains("\n  Next must come cas(5, 6) -> ok (process 3, history events 6..7)"),
        "key 2 in full:\n{text}"
    );
    assert!(
        !text.contains("\n  Key \"1\": no order"),
        "key 1 was not asked for:\n{text}"
    );
    assert!(
        text.contains("--explain-keys: key \"3\" is linearizable, so there is nothing to explain; the failing keys are \"1\", \"2\"."),
        "{text}"
    );
    assert!(
        text.contains("--explain-keys: the history has no operation on key \"9\"; the failing keys are \"1\", \"2\"."),
        "{text}"
    );

    let results: Value = serde_json::from_slice(&std::fs::read(report.join("results.json")).unwrap()).unwrap();
    let keys = &results["checks"][0]["details"]["keys"];
    assert_eq!(keys[0]["explanation"]["op"]["description"], "read() -> nil", "{keys:#}");
    assert_eq!(
        keys[1]["explanation"]["op"]["description"], "cas(5, 6) -> ok",
        "{keys:#}"
    );
    assert!(keys[2].get("explanation").is_none(), "{keys:#}");
    let page = std::fs::read_to_string(report.join("report.html")).unwrap();
    let second = page
        .find("<details class=\"lin-key\" id=\"lin-key-1\"><summary>Key &quot;2&quot;: cas(5, 6) -&gt; ok")
        .expect("key 2 folded under its headline");
    let first = page.find("<div class=\"lin\" id=\"lin-view\">").expect("key 1 open");
    assert!(first < second);
    assert!(
        page[first..second].contains("read() -&gt; nil"),
        "key 1's view names its op"
    );
    assert!(
        page[second..].contains("state <code>7</code>: illegal in this state"),
        "key 2's steps table"
    );
}

/// The DOM of `page` after its scripts ran in headless Chromium; `None` (skipped) where Chromium is not installed,
/// which under `CI=true` is a failure.
fn chromium_dom(page: &Path) -> Option<String> {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but /usr/bin/chromium is missing"
        );
        eprintln!("skipping the Chromium part: /usr/bin/chromium is not installed");
        return None;
    }
    let profile = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The text of the element `id` in a DOM.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    &dom[start..start + dom[start..].find('<').unwrap()]
}

#[test]
fn given_an_invalid_list_append_history_when_checked_with_a_report_should_draw_its_cycle_in_chromium_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, _, write_skew) = fixtures().into_iter().find(|f| f.0 == "list-append").unwrap();
    let file = write(dir.path(), "skew.edn", &write_skew);
    let report = dir.path().join("report");
    let (code, _) = check(&file, "list-append", &["--report", report.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    for written in ["history.jsonl", "results.json", "report.html"] {
        assert!(report.join(written).is_file(), "{written} written");
    }
    let results: Value = serde_json::from_slice(&std::fs::read(report.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        (results["verdict"].as_str(), results["system"].as_str()),
        (Some("invalid"), Some("history"))
    );
    let page = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(
        page.contains("<svg class=\"txn-cycle\"") && page.contains("id=\"txn-G2-item-1\""),
        "the cycle drawn"
    );
    assert!(
        !page.contains("faultline shrink"),
        "a checked history has no run to shrink"
    );
    let Some(dom) = chromium_dom(&report.join("report.html")) else {
        return;
    };
    assert!(
        text_of(&dom, "render-status").starts_with("ok:"),
        "{}",
        text_of(&dom, "render-status")
    );
    assert_eq!(text_of(&dom, "render-errors"), "", "no script error");
    assert!(dom.contains("<svg class=\"txn-cycle\""), "the cycle in the loaded page");
}
