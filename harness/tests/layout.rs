//! The harness's layout keeps its architecture: modules on floors, and no path from a lower floor to a higher one.
//!
//! From the top: `main.rs` parses and dispatches to `cli` (one module per command); `explore` drives many runs
//! (shrink, matrix, compare and certify above campaign, the guide, replay and merge, which they use); `run` is one
//! run end to end; `plan` and `system` say what a run tests and how each system is driven (one floor: an adapter
//! owns its plan section, and the plan checks itself against the adapters' capabilities), beside `remote`, the hands
//! that act on a node's processes here or on its host; `supervisor` owns the processes.
//! A module may name modules on its own floor or below, in code and in doc links alike (a doc link up a floor is a
//! reader's path up it).
//!
//! Also kept here: no source file over 800 lines (tests apart) and a `main.rs` that stays glue.

use std::path::{Path, PathBuf};

/// Each module and its floor (higher is closer to the user); a module takes the floor of its longest prefix here.
const FLOORS: &[(&str, u8)] = &[
    ("main", 6),
    ("cli", 5),
    ("explore::shrink", 4),
    ("explore::matrix", 4),
    ("explore::compare", 4),
    ("explore::certify", 4),
    ("explore", 3),
    ("run", 2),
    ("plan", 1),
    ("system", 1),
    ("remote", 1),
    ("supervisor", 0),
];

/// A source file over this many lines holds more than one idea (test files apart).
const FILE_LINES_MAX: usize = 800;
/// `main.rs` only parses and dispatches.
const MAIN_LINES_MAX: usize = 150;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The module path of a source file: `explore/shrink/mod.rs` is `explore::shrink`, `run/store.rs` is `run::store`.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The floor of a module path, by its longest prefix in [`FLOORS`]; `None` for the crate root.
fn floor_of(module: &[String]) -> Option<u8> {
    let joined = module.join("::");
    FLOORS
        .iter()
        .filter(|(prefix, _)| joined == *prefix || joined.starts_with(&format!("{prefix}::")))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, floor)| *floor)
}

/// Every module path `text` names, resolved from `module` (the file's module): `crate::a::b` (in the binary,
/// `faultline::a::b`) and `super::...` (from inside an inline `mod tests`, `super` is the file's own module).
fn named_paths(module: &[String], text: &str, crate_name: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut in_inline_tests = false;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with("mod tests {") {
            in_inline_tests = true;
        }
        let mut base: Vec<String> = module.to_vec();
        if in_inline_tests {
            base.push("tests".into());
        }
        let mut rest = line;
        while let Some(at) = next_path(rest, crate_name) {
            let tail = &rest[at..];
            let segments: Vec<&str> = tail
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap()
                .split("::")
                .filter(|s| !s.is_empty())
                .collect();
            let mut path: Vec<String> = Vec::new();
            let mut segments = segments.into_iter().peekable();
            if segments.peek().is_some_and(|s| *s == "crate" || *s == crate_name) {
                segments.next();
            } else {
                path = base.clone();
                while segments.peek() == Some(&"super") {
                    segments.next();
                    path.pop();
                }
            }
            path.extend(segments.map(str::to_string));
            found.push((number + 1, path));
            rest = &tail[1..];
        }
    }
    found
}

/// Where the next `crate::`, `faultline::` or `super::` path starts in `line` (not inside a longer identifier).
fn next_path(line: &str, crate_name: &str) -> Option<usize> {
    let starts = ["crate::".to_string(), format!("{crate_name}::"), "super::".to_string()];
    starts
        .iter()
        .filter_map(|start| {
            let mut from = 0;
            while let Some(at) = line[from..].find(start.as_str()) {
                let at = from + at;
                let before = line[..at].chars().next_back();
                if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                    return Some(at);
                }
                from = at + 1;
            }
            None
        })
        .min()
}

/// Every path in `text` (the file of `module`) that names a module on a higher floor, as `line: a::b -> c::d`.
fn upward_paths(module: &[String], text: &str) -> Vec<String> {
    let Some(own) = floor_of(module) else {
        return Vec::new();
    };
    named_paths(module, text, "faultline")
        .into_iter()
        .filter_map(|(line, path)| {
            let floor = floor_of(&path)?;
            (floor > own).then(|| {
                format!(
                    "{line}: {} (floor {own}) names {} (floor {floor})",
                    module.join("::"),
                    path.join("::")
                )
            })
        })
        .collect()
}

#[test]
fn given_the_harness_sources_when_their_paths_are_read_should_find_none_from_a_lower_floor_to_a_higher_one() {
    let mut upward = Vec::new();
    for file in sources(&src()) {
        let text = std::fs::read_to_string(&file).unwrap();
        for found in upward_paths(&module_of(&file), &text) {
            upward.push(format!("{}:{found}", file.display()));
        }
    }
    assert!(upward.is_empty(), "paths up a floor:\n{}", upward.join("\n"));
}

#[test]
fn given_every_top_level_module_of_the_harness_when_placed_should_have_a_floor() {
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        assert!(
            floor_of(std::slice::from_ref(&name)).is_some(),
            "harness/src/{name} has no floor in tests/layout.rs: place it"
        );
    }
}

#[test]
fn given_paths_up_and_down_when_checked_should_flag_only_the_ones_up_a_floor() {
    let module = |path: &str| -> Vec<String> { path.split("::").map(str::to_string).collect() };
    let run = "use crate::plan::Plan;\n/// See [`crate::explore::shrink`].\nfn f() { super::lab::Lab::new(); }\n";
    let flagged = upward_paths(&module("run::store"), run);
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(
        flagged[0].starts_with("2: run::store (floor 2) names explore::shrink (floor 4)"),
        "{flagged:?}"
    );
    // Inside explore: campaign is below shrink, so shrink may name campaign and not the other way.
    assert!(upward_paths(
        &module("explore::shrink::tries"),
        "use crate::explore::campaign::child;"
    )
    .is_empty());
    let campaign = upward_paths(&module("explore::campaign"), "crate::explore::shrink::shrink(options)");
    assert_eq!(campaign.len(), 1, "{campaign:?}");
    // `super::super` from a file climbs out of its folder; an inline test module's `super` is its file.
    let escaped = upward_paths(&module("plan::swarm"), "use super::super::cli::Outcome;");
    assert_eq!(escaped.len(), 1, "{escaped:?}");
    let inline = "fn f() {}\nmod tests {\n    use super::f;\n}\n";
    assert!(upward_paths(&module("supervisor"), inline).is_empty());
    // In the binary, the library is `faultline::`; `faultline_reports::` is another crate.
    assert!(upward_paths(&module("run"), "faultline_reports::write_index(x)").is_empty());
}

#[test]
fn given_the_harness_sources_when_measured_should_keep_every_file_under_the_bound_and_main_as_glue() {
    let mut long = Vec::new();
    for file in sources(&src()) {
        let is_test = file.file_name().is_some_and(|n| n == "tests.rs");
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if !is_test && lines > FILE_LINES_MAX {
            long.push(format!("{}: {lines} lines", file.display()));
        }
    }
    assert!(
        long.is_empty(),
        "over {FILE_LINES_MAX} lines (split by meaning):\n{}",
        long.join("\n")
    );
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap().lines().count();
    assert!(
        main < MAIN_LINES_MAX,
        "main.rs has {main} lines: it parses and dispatches (commands live in cli/)"
    );
}
