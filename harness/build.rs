//! Build identity for `faultline --version`: the git revision this binary was built from and its target triple.
//!
//! Outside a git checkout (a packaged crate, a tarball) the revision is `unknown`. Cargo reruns this script when the
//! checkout's HEAD or the branch it points at moves, so the revision never goes stale in an incremental build.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let revision = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=FAULTLINE_GIT_REVISION={revision}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=FAULTLINE_BUILD_TARGET={target}");
    for path in watched_git_files() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// The files whose change means HEAD moved: HEAD itself, the branch ref it names and `packed-refs`. Only files that
/// exist are named: cargo reruns a script on every build while one of its watched paths is missing.
fn watched_git_files() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut watch = |git_path: &str| {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", git_path]) {
            paths.push(PathBuf::from(path));
        }
    };
    watch("HEAD");
    watch("packed-refs");
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&branch);
    }
    paths.retain(|p| p.exists());
    paths
}

/// One line of a git command's output, or `None` when git is missing, fails or prints nothing.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let line = text.trim();
    (!line.is_empty()).then(|| line.to_string())
}
