//! `store/triage-notes.yaml`: what a person wants the next triage to show beside a class, by class id.
//!
//! ```yaml
//! # class id: note
//! c3fa81c02: "upstream: https://github.com/apache/iggy/issues/1234"
//! c0b7d21e4: fixed in abc123, waiting for the next nightly build
//! ```
//!
//! The file is the person's: faultline reads it and never writes it. An absent file is no notes.

use crate::error::ReportError;
use std::collections::BTreeMap;
use std::path::Path;

/// The notes file's name under the store root.
pub const NOTES_FILE: &str = "triage-notes.yaml";

/// Class id -> note.
pub type Notes = BTreeMap<String, String>;

/// Reads `store_root/triage-notes.yaml` (absent or empty: no notes).
pub fn read_notes(store_root: &Path) -> Result<Notes, ReportError> {
    let path = store_root.join(NOTES_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Notes::new()),
        Err(e) => return Err(ReportError::io("read", &path)(e)),
    };
    parse_notes(&text).map_err(|message| ReportError::Notes { path, message })
}

/// Parses the notes file's text: a mapping of class ids to notes.
pub fn parse_notes(text: &str) -> Result<Notes, String> {
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Ok(Notes::new());
    }
    let notes: Notes = serde_saphyr::from_str(text)
        .map_err(|e| format!("{e} (expected `class-id: note` lines, e.g. `c3fa81c02: upstream issue 1234`)"))?;
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_notes_file_when_read_should_map_ids_to_notes_and_an_absent_or_bad_file_should_say_so() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_notes(dir.path()).unwrap().is_empty(), "no file, no notes");
        std::fs::write(
            dir.path().join(NOTES_FILE),
            "# triage\nc3fa81c02: \"upstream: https://github.com/apache/iggy/issues/1\"\nc0000beef: fixed in abc\n",
        )
        .unwrap();
        let notes = read_notes(dir.path()).unwrap();
        assert_eq!(notes["c3fa81c02"], "upstream: https://github.com/apache/iggy/issues/1");
        assert_eq!(notes["c0000beef"], "fixed in abc");
        std::fs::write(dir.path().join(NOTES_FILE), "- a list\n- not a mapping\n").unwrap();
        let error = read_notes(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("triage-notes.yaml") && error.contains("class-id: note"),
            "{error}"
        );
    }
}
