//! A linearizability result for a person at a terminal: the verdict and why, the full explanation of the first failing
//! key (or of the keys asked for), every other failing key in its one line, and the count of keys by verdict.
//!
//! `faultline check --explain-keys` chooses the keys explained in full ([`ExplainKeys`]); a key asked for that has
//! nothing to explain gets a line naming it and the keys that do.

use super::explain::capitalized;
use super::{key_subject, Explanation, KeySummary, LinearizabilityResult};
use crate::verdict::Verdict;
use std::fmt::Write;

/// Failing keys listed in one line each under the full explanations; the rest are counted.
const OTHERS_LISTED_MAX: usize = 20;

/// Failing keys named in a line that says a requested key has nothing to explain.
const FAILING_NAMED_MAX: usize = 8;

/// Which failing keys [`render_text_explaining`] explains in full.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ExplainKeys {
    /// The first failing key, in key order (what [`render_text`] prints).
    #[default]
    First,
    /// Every failing key.
    All,
    /// These keys, in this order.
    Named(Vec<String>),
}

impl ExplainKeys {
    /// The choice `--explain-keys` words make: none is [`ExplainKeys::First`], `all` among them is every key (a key
    /// itself named `all` is explained by it too), otherwise the keys named, each once.
    pub fn from_words(words: &[String]) -> ExplainKeys {
        if words.is_empty() {
            ExplainKeys::First
        } else if words.iter().any(|w| w == "all") {
            ExplainKeys::All
        } else {
            let mut keys: Vec<String> = Vec::with_capacity(words.len());
            for word in words {
                if !keys.contains(word) {
                    keys.push(word.clone());
                }
            }
            ExplainKeys::Named(keys)
        }
    }
}

/// Renders a result as a few plain-English lines for the terminal, explaining the first failing key in full.
pub fn render_text(result: &LinearizabilityResult) -> String {
    render_text_explaining(result, &ExplainKeys::First)
}

/// Renders a result for the terminal, explaining in full the failing keys `which` chooses and listing the other
/// failing keys by their one-line headline.
pub fn render_text_explaining(result: &LinearizabilityResult, which: &ExplainKeys) -> String {
    let mut out = format!("{}: {}\n", result.verdict, result.reason);
    let failing = result.explanations();
    // Each asked-for key in turn: its explanation, or why it has none.
    let asked: Vec<Result<&Explanation, String>> = match which {
        ExplainKeys::First => failing.iter().take(1).map(|e| Ok(*e)).collect(),
        ExplainKeys::All if failing.is_empty() => {
            vec![Err(
                "--explain-keys all: no key is failing, so there is nothing to explain.".to_string(),
            )]
        }
        ExplainKeys::All => failing.iter().map(|e| Ok(*e)).collect(),
        ExplainKeys::Named(keys) => keys
            .iter()
            .map(|key| {
                failing
                    .iter()
                    .find(|e| &e.key == key)
                    .copied()
                    .ok_or_else(|| format!("--explain-keys: {}", nothing_to_explain(result, &failing, key)))
            })
            .collect(),
    };
    for item in &asked {
        match item {
            Ok(e) => e.lines.iter().for_each(|line| {
                let _ = writeln!(out, "  {line}");
            }),
            Err(note) => {
                let _ = writeln!(out, "  {note}");
            }
        }
    }
    let shown: Vec<&str> = asked.iter().flatten().map(|e| e.key.as_str()).collect();
    let others: Vec<&KeySummary> = result
        .keys
        .iter()
        .filter(|k| k.verdict == Verdict::Invalid && !shown.contains(&k.key.as_str()))
        .collect();
    if !others.is_empty() {
        let _ = writeln!(
            out,
            "  {} other failing key(s), each explained in full by `faultline check --explain-keys KEY,...` or `all`:",
            others.len()
        );
        for k in others.iter().take(OTHERS_LISTED_MAX) {
            let line = match failing.iter().find(|e| e.key == k.key) {
                Some(e) => e.headline(),
                None => format!(
                    "{}: not explained in this result (it explains the first {} failing keys).",
                    capitalized(&key_subject(&k.key)),
                    failing.len()
                ),
            };
            let _ = writeln!(out, "    {line}");
        }
        if others.len() > OTHERS_LISTED_MAX {
            let _ = writeln!(out, "    ... and {} more", others.len() - OTHERS_LISTED_MAX);
        }
    }
    let count = |v: Verdict| result.keys.iter().filter(|k| k.verdict == v).count();
    let _ = writeln!(
        out,
        "{} key(s): {} valid, {} invalid, {} unknown; {} operations; {} ms",
        result.keys.len(),
        count(Verdict::Valid),
        count(Verdict::Invalid),
        count(Verdict::Unknown),
        result.ops,
        result.elapsed_ms
    );
    out
}

/// Why `key`, asked for, is not explained: it passed, has no answer or is not in the history; then the failing keys.
fn nothing_to_explain(result: &LinearizabilityResult, failing: &[&Explanation], key: &str) -> String {
    let subject = key_subject(key);
    let why = match result.keys.iter().find(|k| k.key == key) {
        Some(k) if k.verdict == Verdict::Valid => format!("{subject} is linearizable, so there is nothing to explain"),
        Some(k) if k.verdict == Verdict::Unknown => {
            let stopped = k.stopped.map_or_else(String::new, |s| format!(" ({s:?})"));
            format!("{subject} has no answer: its search stopped{stopped}, so there is nothing to explain")
        }
        Some(_) => format!(
            "{subject} is not linearizable, but this result explains only the first {} failing keys",
            failing.len()
        ),
        None if key.is_empty() => "the history names keys, so no operation is on the empty key".to_string(),
        None => format!("the history has no operation on {subject}"),
    };
    if failing.is_empty() {
        return format!("{why}; no key is failing.");
    }
    let named: Vec<String> = failing
        .iter()
        .take(FAILING_NAMED_MAX)
        .map(|e| format!("{:?}", e.key))
        .collect();
    let more = match failing.len().saturating_sub(FAILING_NAMED_MAX) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!("{why}; the failing keys are {}{more}.", named.join(", "))
}
