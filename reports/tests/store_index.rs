//! store/index.html: every run of the store, newest first, written atomically.

mod support;

use support::*;

#[test]
fn given_a_store_with_runs_when_indexed_should_list_each_with_verdict_and_link() {
    let tmp = temp_dir("index");
    let root = tmp.path();
    valid_run(&root.join("default/20260101T000000Z-seed42"));
    boot_refusal_run(&root.join("default/20260102T000000Z-seed99"));
    let crashed = root.join("other plan/20260103T000000Z-seed5");
    std::fs::create_dir_all(&crashed).unwrap();
    std::fs::write(crashed.join("history.jsonl"), "").unwrap();
    faultline_reports::write_report(&root.join("default/20260101T000000Z-seed42")).unwrap();
    std::os::unix::fs::symlink("default/20260101T000000Z-seed42", root.join("latest")).unwrap();

    let path = faultline_reports::write_index(root).unwrap();
    assert_eq!(path, root.join("index.html"));
    let page = std::fs::read_to_string(&path).unwrap();
    assert!(page.contains("3 run(s)"), "latest is not listed twice");
    assert!(page.contains("<a href=\"default/20260101T000000Z-seed42/report.html\">report</a>"));
    assert!(
        page.contains("<a href=\"default/20260102T000000Z-seed99/\">folder</a>"),
        "no report yet: the folder"
    );
    assert!(page.contains("<a href=\"other%20plan/20260103T000000Z-seed5/\">folder</a>"));
    let (newest, valid) = (page.find("seed5").unwrap(), page.find("seed42").unwrap());
    assert!(newest < valid, "newest first");
    assert!(
        page.contains("<span class=\"v invalid\">INVALID</span>")
            && page.contains("<span class=\"v valid\">VALID</span>")
    );
    assert!(page.contains("INCOMPLETE"));
    let leftovers: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "no temp files left: {leftovers:?}");
}

#[test]
fn given_a_store_with_a_seed_database_when_indexed_should_put_the_campaign_view_before_the_runs() {
    use faultline_reports::results::Verdict;
    use faultline_reports::seeds::{append_seed, BuildIdentity, CampaignKind, Reproducibility, SeedRow};
    let tmp = temp_dir("index-campaign");
    let root = tmp.path();
    boot_refusal_run(&root.join("default/20260102T000000Z-seed99"));
    let row = SeedRow {
        campaign: "nightly-1".into(),
        kind: CampaignKind::Campaign,
        plan: "default".into(),
        plan_source: "plans/default.yaml".into(),
        seed: 99,
        seed_index: 0,
        nodes: None,
        shard: Some("1/2".into()),
        verdict: Verdict::Invalid,
        failing_check: Some("boot".into()),
        also_failing: vec!["linearizability".into()],
        findings: Vec::new(),
        first_error: Some(REFUSAL_LINE.into()),
        duration_ms: 5000,
        cpu_ms: None,
        store_dir: Some("default/20260102T000000Z-seed99".into()),
        repro: "faultline run plans/default.yaml --seed 99".into(),
        build: BuildIdentity::default(),
        reproducibility: Some(Reproducibility::Flaky),
        reruns: Vec::new(),
        finished_at: "2026-01-02T00:01:00.000Z".into(),
    };
    append_seed(root, &row).unwrap();
    let page = std::fs::read_to_string(faultline_reports::write_index(root).unwrap()).unwrap();
    let (view, runs) = (
        page.find("id=\"campaigns\"").unwrap(),
        page.find("id=\"runs\"").unwrap(),
    );
    assert!(view < runs, "the campaign view comes first");
    let failures = &page[page.find("<h3>Failures</h3>").unwrap()..page.find("<h3>Per plan</h3>").unwrap()];
    assert!(
        failures.contains("faultline run plans/default.yaml --seed 99"),
        "{failures}"
    );
    assert!(failures.contains("flaky"));
    assert!(
        failures.contains("<td>boot +linearizability</td>"),
        "every failing check is listed, the first one first: {failures}"
    );
    assert!(failures.contains("<a href=\"default/20260102T000000Z-seed99/\">folder</a>"));
    assert!(page.contains("shards 1/2"));
    assert!(
        page.contains("querySelectorAll('#runs tbody tr')"),
        "the filter filters runs only"
    );
}
