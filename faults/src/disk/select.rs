//! Which files a cut hits: a glob relative to the node's data dir, and a seeded pick among the matches.
//!
//! Globs are matched against the path relative to the data dir with `/` as separator, and `*` never crosses a `/`
//! (use `**` for any depth): `wal*` matches only top-level files, `member/wal/*.wal` etcd's WAL segments. Only
//! regular files match (a symlink counts if it points at one; [`super::confine`] then refuses it if it leads out).

use super::SurgeryError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// Upper bound on directory entries walked while matching a glob: a data dir is small; a runaway walk is a bug.
const WALK_ENTRIES_MAX: usize = 200_000;
/// Upper bound on directory depth walked.
const WALK_DEPTH_MAX: usize = 32;

/// Which of the matching files (sorted by relative path) a cut takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pick {
    /// The first by name (the oldest WAL segment or snapshot, for names that sort by age).
    First,
    /// The last by name (the newest segment or snapshot).
    #[default]
    Last,
    /// A seeded random one.
    Random,
}

/// Files under `data_dir` whose path relative to it matches `pattern`, sorted by that relative path.
pub fn select_files(data_dir: &Path, pattern: &str) -> Result<Vec<PathBuf>, SurgeryError> {
    let glob = compile(pattern)?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let mut matches = Vec::new();
    let mut pending = vec![(data_dir.to_path_buf(), 0usize)];
    let mut walked = 0usize;
    while let Some((dir, depth)) = pending.pop() {
        let io = |source| SurgeryError::Io {
            path: dir.display().to_string(),
            source,
        };
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            walked += 1;
            if walked > WALK_ENTRIES_MAX {
                return Err(SurgeryError::Refused(format!(
                    "{} has more than {WALK_ENTRIES_MAX} entries: not a node data dir?",
                    data_dir.display()
                )));
            }
            let entry = entry.map_err(io)?;
            let path = entry.path();
            let relative = path.strip_prefix(data_dir).expect("walk stays under the data dir");
            if relative.as_os_str() == crate::fusefs::HIDDEN_DIR_NAME {
                continue;
            }
            let file_type = entry.file_type().map_err(io)?;
            if file_type.is_dir() {
                if depth + 1 < WALK_DEPTH_MAX {
                    pending.push((path.clone(), depth + 1));
                }
                continue;
            }
            let is_file = file_type.is_file() || (file_type.is_symlink() && path.is_file());
            if is_file && glob.matches_with(&relative.to_string_lossy(), options) {
                matches.push(path);
            }
        }
    }
    matches.sort();
    Ok(matches)
}

/// Selects the matching files and picks one; `NoFile` if nothing matches.
pub fn pick_file(data_dir: &Path, pattern: &str, pick: Pick, rng: &mut ChaCha8Rng) -> Result<PathBuf, SurgeryError> {
    let mut files = select_files(data_dir, pattern)?;
    if files.is_empty() {
        return Err(SurgeryError::NoFile {
            pattern: pattern.to_string(),
            data_dir: data_dir.display().to_string(),
        });
    }
    let index = match pick {
        Pick::First => 0,
        Pick::Last => files.len() - 1,
        Pick::Random => rng.gen_range(0..files.len()),
    };
    Ok(files.swap_remove(index))
}

/// Compiles a relative glob; absolute paths and `..` are refused so a glob can never reach out of the data dir.
pub fn compile(pattern: &str) -> Result<glob::Pattern, SurgeryError> {
    let refuse = |reason: &str| SurgeryError::Pattern {
        pattern: pattern.to_string(),
        reason: reason.to_string(),
    };
    if pattern.is_empty() {
        return Err(refuse("empty; write e.g. `wal*` or `member/wal/*.wal`"));
    }
    let path = Path::new(pattern);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refuse(
            "globs are relative to the node's data dir and may not contain `..`",
        ));
    }
    glob::Pattern::new(pattern).map_err(|e| refuse(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, relative: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    #[test]
    fn given_nested_files_when_globbed_should_match_relative_paths_without_crossing_separators() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "wal",
            "wal.1",
            "superblock",
            "member/wal/0.wal",
            "member/wal/1.wal",
            "member/snap/a.snap",
        ] {
            touch(dir.path(), name);
        }
        let names = |pattern| {
            select_files(dir.path(), pattern)
                .unwrap()
                .iter()
                .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("wal*"), ["wal", "wal.1"]);
        assert_eq!(names("member/wal/*.wal"), ["member/wal/0.wal", "member/wal/1.wal"]);
        assert_eq!(names("**/*.snap"), ["member/snap/a.snap"]);
        assert!(names("nothing*").is_empty());
    }

    #[test]
    fn given_a_glob_reaching_out_when_compiled_should_refuse() {
        assert!(matches!(compile("../x"), Err(SurgeryError::Pattern { .. })));
        assert!(matches!(compile("/etc/*"), Err(SurgeryError::Pattern { .. })));
        assert!(matches!(compile(""), Err(SurgeryError::Pattern { .. })));
    }
}
