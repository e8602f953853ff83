//! report.html in headless Chromium: the charts draw without a script error and the timeline is not empty.
//! Screenshots of the three reports, and the reports themselves, go to `$FAULTLINE_SCREENSHOTS` (default: the system
//! temp folder) as `faultline-report-<name>.png` and `.html`.

mod support;

use support::*;

/// Loads the report of the run `build` writes; returns its DOM after the scripts ran (none without Chromium).
fn load(name: &str, build: fn(&std::path::Path) -> std::path::PathBuf) -> Option<String> {
    let chromium = chromium()?;
    let tmp = temp_dir(name);
    let page = faultline_reports::write_report(&build(tmp.path())).unwrap();
    let (dom, elapsed) = dump_dom(&chromium, &page);
    let status = element_text(&dom, "render-status").unwrap_or("(no status element)");
    assert!(status.starts_with("ok:"), "{name}: the page reports: {status}");
    let errors = element_text(&dom, "render-errors").unwrap_or("");
    assert!(errors.is_empty(), "{name}: script errors: {errors}");
    assert!(!status.contains(" 0 ops drawn"), "{name}: empty timeline: {status}");
    assert!(
        !dom.contains("window.pwned=1</script>"),
        "{name}: injected markup reached the DOM"
    );
    let dir = std::env::var_os("FAULTLINE_SCREENSHOTS").map_or_else(std::env::temp_dir, Into::into);
    let png = dir.join(format!("faultline-report-{name}.png"));
    screenshot(&chromium, &page, &png);
    std::fs::copy(&page, png.with_extension("html")).unwrap();
    assert!(
        std::fs::metadata(&png).map(|m| m.len() > 10_000).unwrap_or(false),
        "{name}: no screenshot"
    );
    eprintln!("{name}: {status}; loaded in {elapsed:?}; screenshot {}", png.display());
    Some(dom)
}

#[test]
fn given_a_valid_run_when_loaded_in_chromium_should_draw_the_timeline_without_errors() {
    load("valid", valid_run);
}

#[test]
fn given_a_non_linearizable_run_when_loaded_in_chromium_should_draw_the_timeline_without_errors() {
    load("invalid", invalid_linearizability_run);
}

#[test]
fn given_a_boot_refusal_run_when_loaded_in_chromium_should_draw_the_timeline_without_errors() {
    load("refusal", boot_refusal_run);
}

#[test]
fn given_a_run_with_etcd_and_iggy_log_lines_when_loaded_in_chromium_should_draw_the_timeline_without_errors() {
    load("etcd-iggy", etcd_and_iggy_logs_run);
}

#[test]
fn given_an_invalid_txn_run_when_loaded_in_chromium_should_draw_the_cycle_and_mark_its_transactions_without_errors() {
    let Some(dom) = load("txn", invalid_txn_run) else {
        return;
    };
    let status = element_text(&dom, "render-status").unwrap_or("");
    assert!(
        status.contains(", 2 anomaly transactions marked"),
        "the write skew's two transactions on the timeline: {status}"
    );
    assert!(
        dom.contains("<section class=\"card\" id=\"transactions\">"),
        "the section"
    );
    assert!(dom.contains("<svg class=\"txn-cycle\""), "the cycle graph");
    assert!(dom.contains("id=\"txn-G2-item-1\""), "the G2-item anomaly");
    assert!(dom.contains(">rw k9</text>"), "an edge label");
}
