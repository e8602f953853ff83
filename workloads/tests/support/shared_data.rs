//! Test data kept outside the repository (other projects' histories under their own licences), in a folder of
//! `shared/` beside the checkout: found, or skipped with a line saying where it goes, or, under `CI=true` where every
//! test of the suite must run, a failure.

use std::path::{Path, PathBuf};

/// `shared/NAME` beside the checkout when it holds `expected-verdicts.tsv`; `None` (said on stderr) outside CI.
/// `what` names the data and `how` says how to put it there. Panics under `CI=true` when it is missing.
pub fn shared_data(name: &str, what: &str, how: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(name);
    // `.ci/run` names here the data sets the machine it runs on was not given (FAULTLINE_OPTIONAL_SHARED_DATA,
    // comma-separated), after saying so in its own output: CI cannot fetch other projects' repositories, and a
    // suite that no clone can pass lands nothing.
    let optional =
        std::env::var("FAULTLINE_OPTIONAL_SHARED_DATA").is_ok_and(|names| names.split(',').any(|n| n.trim() == name));
    let ci = std::env::var("CI").as_deref() == Ok("true") && !optional;
    match found(&dir, ci, what, how) {
        Ok(found) => found,
        Err(missing) => panic!("{missing}"),
    }
}

/// `dir` when it holds the data; when it does not, a skip (`None`, said on stderr) outside CI and an error under
/// `CI=true`.
pub fn found(dir: &Path, ci: bool, what: &str, how: &str) -> Result<Option<PathBuf>, String> {
    if dir.join("expected-verdicts.tsv").is_file() {
        return Ok(Some(dir.to_path_buf()));
    }
    let missing = format!(
        "{what} is missing: expected {}/expected-verdicts.tsv. {how}",
        dir.display()
    );
    if ci {
        return Err(format!("CI=true: {missing}"));
    }
    eprintln!("skipping: {missing}");
    Ok(None)
}
