//! The I/O faults a mounted fault filesystem injects on demand: `eio`, `enospc`, `stall`.
//!
//! ```yaml
//! eio:
//!   - {ops: [fsync], files: "wal*", nth: 3}            # the 3rd matching fsync from now fails, once
//!   - {ops: [read, write], files: "**", probability: 0.01}
//! enospc: {quota_bytes: 10000000}                      # writes past 10 MB of file data fail with ENOSPC
//! stall:
//!   - {ops: [fsync], files: "**", delay: 200ms}        # every matching call waits first
//! ```
//!
//! Globs are relative to the mount's root, as for disk surgery (`*` stays within one directory, `**` crosses).
//! `fsync` covers `fsync`/`fdatasync` of files and `fsync` of directories.

use crate::units::Millis;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Longest stall a plan may ask for: a stall is a slow disk, not a hung one.
pub const STALL_MAX: Millis = Millis(60_000);

/// Which calls a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoOp {
    /// `read`.
    Read,
    /// `write` (and `fallocate`, `ftruncate`).
    Write,
    /// `fsync`, `fdatasync`, directory `fsync`.
    Fsync,
}

fn all_files() -> String {
    "**".to_string()
}

/// Fail matching calls with EIO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EioRule {
    /// Calls it applies to.
    pub ops: Vec<IoOp>,
    /// Glob of paths relative to the mount (default `**`, every file).
    #[serde(default = "all_files")]
    pub files: String,
    /// Fail each matching call with this probability (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Fail only the n-th matching call (1-based, counted from when the faults were set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
}

/// Fail writes that would take the apparent size of all files past a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enospc {
    /// Total bytes of file data allowed (measured over the whole backing dir when the faults are set).
    pub quota_bytes: u64,
}

/// Delay matching calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallRule {
    /// Calls it applies to.
    pub ops: Vec<IoOp>,
    /// Glob of paths relative to the mount (default `**`).
    #[serde(default = "all_files")]
    pub files: String,
    /// How long each matching call waits before it runs.
    pub delay: Millis,
    /// Stall only this fraction of matching calls (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
}

/// The faults active on one mount; empty means a faithful (but still power-loss-capable) filesystem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsFaults {
    /// EIO rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub eio: Vec<EioRule>,
    /// A byte quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enospc: Option<Enospc>,
    /// Stall rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stall: Vec<StallRule>,
}

fn check_probability(what: &str, probability: Option<f64>) -> Result<(), String> {
    match probability {
        Some(p) if !(0.0..=1.0).contains(&p) || p.is_nan() => Err(format!("{what}: probability {p} is not in 0..=1")),
        _ => Ok(()),
    }
}

fn compile(what: &str, files: &str) -> Result<glob::Pattern, String> {
    crate::disk::select::compile(files).map_err(|e| format!("{what}: {e}"))
}

impl FsFaults {
    /// Whether nothing is injected.
    pub fn is_empty(&self) -> bool {
        self.eio.is_empty() && self.enospc.is_none() && self.stall.is_empty()
    }

    /// Checks the rules, with a message naming the bad one.
    pub fn validate(&self) -> Result<(), String> {
        for (i, rule) in self.eio.iter().enumerate() {
            let what = format!("eio rule {}", i + 1);
            if rule.ops.is_empty() {
                return Err(format!("{what}: `ops` is empty; list some of read, write, fsync"));
            }
            match (rule.probability, rule.nth) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(format!("{what}: give exactly one of `probability` and `nth`"))
                }
                (_, Some(0)) => return Err(format!("{what}: `nth` counts from 1")),
                _ => {}
            }
            check_probability(&what, rule.probability)?;
            compile(&what, &rule.files)?;
        }
        for (i, rule) in self.stall.iter().enumerate() {
            let what = format!("stall rule {}", i + 1);
            if rule.ops.is_empty() {
                return Err(format!("{what}: `ops` is empty; list some of read, write, fsync"));
            }
            if rule.delay > STALL_MAX {
                return Err(format!("{what}: delay {} is over the {STALL_MAX} bound", rule.delay));
            }
            check_probability(&what, rule.probability)?;
            compile(&what, &rule.files)?;
        }
        Ok(())
    }
}

/// What to do to one call.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub stall: Option<Duration>,
    pub eio: bool,
}

/// Counts of injected faults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct InjectedCounts {
    /// Calls failed with EIO.
    pub eio: u64,
    /// Writes failed with ENOSPC.
    pub enospc: u64,
    /// Calls stalled.
    pub stalls: u64,
}

/// Compiled rules with their counters and the seeded stream.
#[derive(Debug)]
pub(crate) struct Injector {
    eio: Vec<(EioRule, glob::Pattern, u64)>,
    stall: Vec<(StallRule, glob::Pattern)>,
    rng: ChaCha8Rng,
    pub counts: InjectedCounts,
}

const MATCH: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

impl Injector {
    /// Compiles validated faults.
    pub fn new(faults: &FsFaults, rng: ChaCha8Rng, counts: InjectedCounts) -> Result<Injector, String> {
        faults.validate()?;
        let eio = faults
            .eio
            .iter()
            .map(|rule| Ok((rule.clone(), compile("eio", &rule.files)?, 0)))
            .collect::<Result<_, String>>()?;
        let stall = faults
            .stall
            .iter()
            .map(|rule| Ok((rule.clone(), compile("stall", &rule.files)?)))
            .collect::<Result<_, String>>()?;
        Ok(Injector {
            eio,
            stall,
            rng,
            counts,
        })
    }

    /// Whether any per-call rule is active (the quota is checked where sizes are known).
    pub fn has_rules(&self) -> bool {
        !self.eio.is_empty() || !self.stall.is_empty()
    }

    /// Decides the fate of one call on `path` (relative to the mount).
    pub fn decide(&mut self, op: IoOp, path: &str) -> Verdict {
        let mut verdict = Verdict::default();
        for (rule, pattern) in &self.stall {
            if rule.ops.contains(&op) && pattern.matches_with(path, MATCH) {
                let hit = rule.probability.is_none_or(|p| self.rng.gen_bool(p));
                if hit {
                    let delay = verdict.stall.unwrap_or_default() + rule.delay.duration();
                    verdict.stall = Some(delay);
                }
            }
        }
        for (rule, pattern, seen) in &mut self.eio {
            if !rule.ops.contains(&op) || !pattern.matches_with(path, MATCH) {
                continue;
            }
            *seen += 1;
            let hit = match (rule.nth, rule.probability) {
                (Some(nth), _) => *seen == nth,
                (None, Some(p)) => self.rng.gen_bool(p),
                (None, None) => false,
            };
            verdict.eio |= hit;
        }
        if verdict.stall.is_some() {
            self.counts.stalls += 1;
        }
        if verdict.eio {
            self.counts.eio += 1;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injector(yaml: &str) -> Injector {
        let faults: FsFaults = serde_saphyr::from_str(yaml).unwrap();
        Injector::new(&faults, crate::rng::stream(1, "t"), InjectedCounts::default()).unwrap()
    }

    #[test]
    fn given_an_nth_rule_when_calls_match_should_fail_only_the_nth() {
        let mut inj = injector("eio: [{ops: [fsync], files: 'wal*', nth: 2}]");
        assert!(!inj.decide(IoOp::Fsync, "wal").eio);
        assert!(!inj.decide(IoOp::Write, "wal").eio);
        assert!(!inj.decide(IoOp::Fsync, "superblock").eio);
        assert!(inj.decide(IoOp::Fsync, "wal.1").eio);
        assert!(!inj.decide(IoOp::Fsync, "wal").eio);
        assert_eq!(inj.counts.eio, 1);
    }

    #[test]
    fn given_a_stall_rule_when_matched_should_delay_and_default_to_every_file() {
        let mut inj = injector("stall: [{ops: [read], delay: 150ms}]");
        assert_eq!(inj.decide(IoOp::Read, "a/b/c").stall, Some(Duration::from_millis(150)));
        assert_eq!(inj.decide(IoOp::Write, "a").stall, None);
    }

    #[test]
    fn given_bad_rules_when_validated_should_name_the_problem() {
        let bad = |yaml: &str| {
            serde_saphyr::from_str::<FsFaults>(yaml)
                .unwrap()
                .validate()
                .unwrap_err()
        };
        assert!(bad("eio: [{ops: [read]}]").contains("exactly one"));
        assert!(bad("eio: [{ops: [read], probability: 1.5}]").contains("probability"));
        assert!(bad("eio: [{ops: [read], nth: 1, files: '../x'}]").contains("glob"));
        assert!(bad("stall: [{ops: [read], delay: 2m}]").contains("bound"));
        assert!(serde_saphyr::from_str::<FsFaults>("eio: [{ops: [read], nht: 1}]").is_err());
    }
}
