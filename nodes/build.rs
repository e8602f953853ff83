//! The node's source identity: an xxh3 of every file under `src/` (by relative path and content) and of its
//! Cargo.toml, as `FAULTLINE_NODE_SOURCE`. `faultline-node --version` prints it and the harness compares it with
//! the node compiled into itself, so a `faultline-node` binary built from other sources (an old build left in
//! `target/`, or copied beside `faultline` with a fresh modification time) is never mistaken for the node under
//! test. A hash of the sources, not the git revision: uncommitted edits change the node too.

use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    files.push(root.join("Cargo.toml"));
    files.sort();
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file);
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update(&[0]);
        hasher.update(&std::fs::read(file).unwrap_or_default());
        hasher.update(&[0]);
    }
    println!("cargo:rustc-env=FAULTLINE_NODE_SOURCE={:016x}", hasher.digest());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
