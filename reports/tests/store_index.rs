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
