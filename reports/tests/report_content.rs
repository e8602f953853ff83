//! report.html content for a valid run, a non-linearizable run and a boot-refusal run, built as synthetic store folders.

mod support;

use faultline_reports::write_report;
use support::*;

fn render(dir: &std::path::Path) -> String {
    let path = write_report(dir).expect("the report is written");
    assert_eq!(path, dir.join("report.html"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn given_a_valid_run_when_reported_should_show_the_verdict_repro_and_fault_bands() {
    let tmp = temp_dir("valid");
    let page = render(&valid_run(tmp.path()));
    assert!(page.contains("<div class=\"verdict\">VALID</div>"), "verdict banner");
    assert!(page.contains("every check passed"));
    assert!(page.contains(&repro("default", 42)), "the exact repro command");
    assert!(page.contains(">kill n2</a>"), "the kill window is listed");
    assert!(page.contains(">pause n1</a>"), "the pause window is listed");
    let data = embedded_data(&page);
    let faults = data["faults"].as_array().unwrap();
    let kill = faults
        .iter()
        .find(|f| f["label"] == "kill n2")
        .expect("a kill band for n2");
    assert_eq!((kill["t0"].as_f64(), kill["t1"].as_f64()), (Some(900.0), Some(1500.0)));
    assert!(faults
        .iter()
        .any(|f| f["label"] == "pause n1" && f["t1"].as_f64() == Some(1900.0)));
    assert_eq!(data["ops"]["n"], 240);
    assert_eq!(data["lanes"].as_array().unwrap().len(), 4, "one lane per worker");
    assert!(!page.contains("id=\"lin-view\""), "no failing key on a valid run");
}

#[test]
fn given_a_non_linearizable_run_when_reported_should_show_the_failing_key_and_the_op_that_cannot_be_placed() {
    let tmp = temp_dir("invalid");
    let page = render(&invalid_linearizability_run(tmp.path()));
    assert!(page.contains("<div class=\"verdict\">INVALID</div>"));
    assert!(page.contains(&repro("default", 7)));
    assert!(page.contains("id=\"lin-view\""), "the Porcupine-style view");
    assert!(
        page.contains(&format!("Key <code>{BAD_KEY}</code>")),
        "names the failing key"
    );
    assert!(page.contains("class=\"op stuck"), "marks the op that cannot be placed");
    assert!(page.contains("class=\"op step"), "draws the partial linearization");
    assert!(page.contains("state after:"), "model states on hover");
    assert!(page.contains("What went wrong"));
}

#[test]
fn given_a_read_that_misses_acknowledged_writes_when_reported_should_name_those_writes() {
    let tmp = temp_dir("unseen");
    let page = render(&invalid_linearizability_run(tmp.path()));
    // read() -> "a" at 1070 ms: write("b") was acknowledged (1020..1060 ms) after write("a") completed at 1010 ms.
    assert!(
        page.contains("id=\"lin-unseen\""),
        "the list of unseen acknowledged writes"
    );
    assert!(page.contains("1 acknowledged write(s) the read does not see"));
    assert!(
        page.contains("<code>write(&quot;b&quot;)</code>"),
        "names the write: {}",
        excerpt(&page, "lin-unseen")
    );
}

#[test]
fn given_a_final_read_that_misses_acknowledged_writes_when_reported_should_name_them_per_key() {
    let tmp = temp_dir("lost");
    let page = render(&lost_write_run(tmp.path()));
    assert!(page.contains("id=\"lin-lost\""), "the final reads' summary");
    assert!(
        page.contains("1 acknowledged write(s) the final reads do not see, on 1 of 1 non-linearizable key(s)"),
        "{}",
        excerpt(&page, "lin-lost")
    );
    assert!(page.contains("<code>write(&quot;b&quot;)</code> p60, acknowledged by"));
}

#[test]
fn given_a_run_without_final_reads_when_reported_should_not_claim_lost_writes() {
    let tmp = temp_dir("no-final");
    let page = render(&invalid_linearizability_run(tmp.path()));
    assert!(!page.contains("id=\"lin-lost\""));
}

fn excerpt(page: &str, id: &str) -> String {
    page[page.find(id).unwrap_or(0)..].chars().take(1500).collect()
}

#[test]
fn given_a_boot_refusal_when_reported_should_show_the_refusal_line_and_the_log_before_it() {
    let tmp = temp_dir("refusal");
    let page = render(&boot_refusal_run(tmp.path()));
    assert!(page.contains("<div class=\"verdict\">INVALID</div>"));
    let escaped_line = maud::html! { (REFUSAL_LINE) }.into_string();
    assert!(page.contains(&escaped_line), "the refusal line");
    assert!(
        page.contains("class=\"ln hit\""),
        "the refusal line is highlighted in the log excerpt"
    );
    assert!(
        page.contains("before boot-refused at 2.330 s"),
        "the excerpt is tied to the event"
    );
    assert!(
        page.contains("INFO opening wal-000001"),
        "the lines before it, from the same start of the node"
    );
    assert!(
        !page.contains("view change started</span>\n<span class=\"ln hit\""),
        "not lines of an earlier start"
    );
    let data = embedded_data(&page);
    assert!(data["markers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["f"] == "boot-refused" && m["node"] == "n2"));
    assert!(data["faults"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["label"] == "n2 refused to boot"));
}

#[test]
fn given_etcd_json_and_iggy_coloured_log_lines_when_reported_should_show_their_excerpts_with_run_times() {
    let tmp = temp_dir("etcd-iggy-logs");
    let page = render(&etcd_and_iggy_logs_run(tmp.path()));
    assert!(
        !page.contains('\u{1b}') && !page.contains("\\x1b"),
        "no escape codes, raw or shown"
    );
    let n1 = &page[page.find("id=\"node-n1\"").unwrap()..page.find("id=\"node-n2\"").unwrap()];
    let n2 = &page[page.find("id=\"node-n2\"").unwrap()..];
    assert!(n1.contains("before crashed at 3.000 s"), "{n1}");
    for (at, text) in [("2.900s", "published local member"), ("2.950s", "slow fdatasync")] {
        assert!(
            n1.lines()
                .any(|l| l.contains(&format!("<span class=\"t\">{at:>10}</span>")) && l.contains(text)),
            "the etcd line `{text}` is placed at {at}: {n1}"
        );
    }
    assert!(n1.contains("class=\"ln wrn\""), "etcd's JSON warn level is a warning");
    assert!(n2.contains("before boot-refused at 4.000 s"), "{n2}");
    let refusal = n2
        .lines()
        .find(|l| l.starts_with("<span class=\"ln") && l.contains(IGGY_REFUSAL))
        .expect("the Iggy refusal line in the excerpt");
    assert!(refusal.contains("<span class=\"t\">    3.950s</span>"), "{refusal}");
    assert!(
        refusal.contains("ERROR journal: interior WAL"),
        "stripped to the text a terminal shows: {refusal}"
    );
    assert!(n2.contains("<span class=\"t\">    3.900s</span>"), "{n2}");
    assert!(
        n2.contains("class=\"zoom-link\" data-t0=\"3800.000\" data-t1=\"4000.000\""),
        "the excerpt links to its span on the timeline: {n2}"
    );
}

#[test]
fn given_hostile_log_lines_when_reported_should_escape_them_everywhere() {
    let tmp = temp_dir("hostile");
    // The refusal run logs the hostile line just before n2 refuses, so the log excerpt shows it; put it into the
    // embedded data too, through an error text.
    let dir = boot_refusal_run(tmp.path());
    let mut history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    history = history.replace(
        "\"error\":\"not primary\"",
        &format!("\"error\":{}", serde_json::json!(HOSTILE_LINE)),
    );
    std::fs::write(dir.join("history.jsonl"), history).unwrap();
    let page = render(&dir);
    assert!(!page.contains("<script>window.pwned"), "no injected script");
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "only the page's own two scripts close"
    );
    let script_start = page.find("id=\"report-data\"").unwrap();
    assert!(
        !page[script_start..].contains('\u{2028}'),
        "U+2028 is escaped inside scripts"
    );
    assert!(
        page.contains("peer said &lt;/script&gt;&lt;script&gt;window.pwned=1"),
        "shown, escaped, in the excerpt"
    );
    let data = embedded_data(&page);
    assert!(
        data["errors"].as_array().unwrap().iter().any(|e| e == HOSTILE_LINE),
        "the text survives intact"
    );
}

#[test]
fn given_a_folder_without_results_when_reported_should_say_which_file_is_missing() {
    let tmp = temp_dir("missing");
    let err = write_report(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("results.json") && err.contains("faultline analyze"),
        "{err}"
    );
}

#[test]
fn given_hostile_check_names_and_reasons_when_reported_should_escape_them_in_the_banner_problems_and_checks() {
    let tmp = temp_dir("hostile-results");
    let dir = boot_refusal_run(tmp.path());
    let path = dir.join("results.json");
    let mut results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    results["reason"] = HOSTILE_LINE.into();
    results["repro"] = HOSTILE_LINE.into();
    for check in results["checks"].as_array_mut().unwrap() {
        check["name"] = format!("{}<i>", check["name"].as_str().unwrap()).into();
        check["reason"] = HOSTILE_LINE.into();
    }
    std::fs::write(&path, results.to_string()).unwrap();
    let page = render(&dir);
    assert!(
        !page.contains("<script>window.pwned") && !page.contains("<i>"),
        "no injected markup"
    );
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "only the page's own two scripts close"
    );
    assert!(page.contains("id=\"check-boot&lt;i&gt;\""), "escaped in attributes too");
    assert!(
        page.contains("<b>boot&lt;i&gt;</b>: WARN peer said &lt;/script&gt;"),
        "the problems list"
    );
}

#[test]
fn given_any_run_when_reported_should_use_the_base_stylesheet_of_every_page_then_its_own() {
    let tmp = temp_dir("stylesheet");
    let page = render(&valid_run(tmp.path()));
    let base = page
        .find("The one base stylesheet of every faultline page")
        .expect("pages.css is embedded");
    let own = page
        .find("report.html's additions to the base stylesheet")
        .expect("report.css is embedded");
    assert!(base < own, "the report's rules come after the base ones");
}

#[test]
fn given_an_invalid_txn_run_when_reported_should_show_the_transactions_section_linked_from_the_problems_and_toc() {
    let tmp = temp_dir("txn");
    let page = render(&invalid_txn_run(tmp.path()));
    assert!(page.contains("<div class=\"verdict\">INVALID</div>"));
    assert!(
        page.contains("<a href=\"#transactions\">Transactions</a>"),
        "the table of contents"
    );
    let problems = excerpt(&page, "What went wrong");
    assert!(
        problems.contains("href=\"#transactions\""),
        "the evidence link: {problems}"
    );
    assert!(
        page.contains("G2-item: write skew — each transaction's read missed the other's write"),
        "the class said in one sentence"
    );
    assert!(page.contains("id=\"txn-G2-item-1\"") && page.contains("<svg class=\"txn-cycle\""));
    assert!(!page.contains(HOSTILE_KEY), "the key named as markup is escaped");
    assert!(page.contains("&lt;/script&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;"));
    let data = embedded_data(&page);
    let marks: Vec<&str> = data["txns"]
        .as_array()
        .expect("the anomaly's transactions, for the timeline")
        .iter()
        .map(|m| m["a"].as_str().unwrap())
        .collect();
    assert_eq!(marks, ["txn-G2-item-1", "txn-G2-item-1"]);
    let valid = temp_dir("valid-no-txn");
    let other = render(&valid_run(valid.path()));
    assert!(!other.contains("id=\"transactions\"") && embedded_data(&other).get("txns").is_none());
    assert!(!page.contains("No anomaly of any class was found"));
}
