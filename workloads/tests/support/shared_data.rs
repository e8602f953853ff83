//! Test data kept outside the repository (other projects' histories under their own licences), in a folder of
//! `shared/` beside the checkout: found, or skipped with a line saying where it goes, or, under `CI=true` where every
//! test of the suite must run, a failure.
// Each test binary that includes this module uses some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `shared/NAME` beside the checkout.
fn shared_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(name)
}

/// Whether the suite runs as CI runs it (`CI=true`): every test must run.
fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// `shared/NAME` beside the checkout when it holds `expected-verdicts.tsv`; `None` (said on stderr) outside CI.
/// `what` names the data and `how` says how to put it there. Panics under `CI=true` when it is missing, unless
/// `FAULTLINE_OPTIONAL_SHARED_DATA` names it.
pub fn shared_data(name: &str, what: &str, how: &str) -> Option<PathBuf> {
    // `.ci/run` names here the data sets the machine it runs on was not given (FAULTLINE_OPTIONAL_SHARED_DATA,
    // comma-separated), after saying so in its own output: CI cannot fetch other projects' repositories, and a
    // suite that no clone can pass lands nothing.
    let optional =
        std::env::var("FAULTLINE_OPTIONAL_SHARED_DATA").is_ok_and(|names| names.split(',').any(|n| n.trim() == name));
    match found(&shared_dir(name), in_ci() && !optional, what, how) {
        Ok(found) => found,
        Err(missing) => panic!("{missing}"),
    }
}

/// `shared/NAME` beside the checkout when it holds `marker` (a file every copy of the data has); `None` (said on
/// stderr) outside CI. Under `CI=true` a missing folder is a failure, whatever `FAULTLINE_OPTIONAL_SHARED_DATA` says:
/// the data is part of what CI must check.
pub fn required_shared_data(name: &str, marker: &str, what: &str, how: &str) -> Option<PathBuf> {
    match found_marker(&shared_dir(name), marker, in_ci(), what, how) {
        Ok(found) => found,
        Err(missing) => panic!("{missing}"),
    }
}

/// `dir` when it holds the data (its `expected-verdicts.tsv`); when it does not, a skip (`None`, said on stderr)
/// outside CI and an error under `CI=true`.
pub fn found(dir: &Path, ci: bool, what: &str, how: &str) -> Result<Option<PathBuf>, String> {
    found_marker(dir, "expected-verdicts.tsv", ci, what, how)
}

/// `dir` when it holds `marker`; when it does not, a skip (`None`, said on stderr) outside CI and an error under
/// `CI=true`.
pub fn found_marker(dir: &Path, marker: &str, ci: bool, what: &str, how: &str) -> Result<Option<PathBuf>, String> {
    if dir.join(marker).is_file() {
        return Ok(Some(dir.to_path_buf()));
    }
    let missing = format!("{what} is missing: expected {}/{marker}. {how}", dir.display());
    if ci {
        return Err(format!("CI=true: {missing}"));
    }
    eprintln!("skipping: {missing}");
    Ok(None)
}
