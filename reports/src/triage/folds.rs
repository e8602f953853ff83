//! Consequences folded into their cause: within one run, a finding that follows from another is shown under it,
//! and is no failure class of its own.
//!
//! One bug often fails several checks. A node that refuses to boot on a clean disk never comes back: with it, the
//! cluster may lack a quorum (liveness fails) and its log cannot match the others' (convergence fails). A write lost
//! by the cluster is missing on every node that should hold it (the durability check sees nodes boot with less than
//! they applied) and the nodes disagree on their commit points. Counted apart, one bug looks like three classes
//! every night. The rules below say which finding follows from which, and when; each has a test beside it. A rule
//! applies only inside one run, where both findings are present; a consequence with no cause in its run is a class
//! of its own, as it may well be another bug.
//!
//! A chain (a lost write, the forgotten entries it shows as, the convergence failure after both) folds to its root:
//! the cause that nothing in the run explains.

use super::finding::{Finding, FindingKind, Signature};
use crate::results::Results;
use serde::{Deserialize, Serialize};

/// When a rule applies, beyond both findings being in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Whenever both are there.
    Always,
    /// The nodes the boot check found down (refusing to boot, legitimately or not, or exited on their own) leave no
    /// majority: the cluster had no quorum.
    NoQuorumLeft,
    /// A node that exited on its own logged a panic that the log-patterns check matched: the panic is why it exited.
    PanicOfCrashedNode,
}

/// One rule: a finding of kind `consequence` (of check `check`, when named) follows from one of kind `cause`.
#[derive(Debug, Clone, Copy)]
pub struct Fold {
    /// What follows.
    pub consequence: FindingKind,
    /// The consequence's check, when the rule is about one check's finding of that kind.
    pub check: Option<&'static str>,
    /// What it follows from.
    pub cause: FindingKind,
    /// When.
    pub when: When,
    /// Why, in words a person reads under the cause.
    pub because: &'static str,
}

/// The rules, in the order they are tried.
pub const FOLDS: &[Fold] = &[
    Fold {
        consequence: FindingKind::Crashed,
        check: Some("boot"),
        cause: FindingKind::LogPattern,
        when: When::PanicOfCrashedNode,
        because: "the node exited because it panicked",
    },
    Fold {
        consequence: FindingKind::NoRecovery,
        check: Some("liveness"),
        cause: FindingKind::RefusedCleanDisk,
        when: When::NoQuorumLeft,
        because: "with the nodes that refused to boot down, no majority was left: no write could be accepted",
    },
    Fold {
        consequence: FindingKind::NoRecovery,
        check: Some("boot"),
        cause: FindingKind::RefusedCleanDisk,
        when: When::Always,
        because: "a node that refuses to boot does not come back",
    },
    Fold {
        consequence: FindingKind::NoConvergence,
        check: None,
        cause: FindingKind::RefusedCleanDisk,
        when: When::Always,
        because: "a node that refused to boot cannot reach the others' commit point",
    },
    Fold {
        consequence: FindingKind::NoRecovery,
        check: Some("liveness"),
        cause: FindingKind::Crashed,
        when: When::NoQuorumLeft,
        because: "with the nodes that exited on their own down, no majority was left: no write could be accepted",
    },
    Fold {
        consequence: FindingKind::NoConvergence,
        check: None,
        cause: FindingKind::Crashed,
        when: When::Always,
        because: "a node that exited on its own cannot reach the others' commit point",
    },
    Fold {
        consequence: FindingKind::BootedOnDamage,
        check: Some("durability"),
        cause: FindingKind::BootedOnDamage,
        when: When::Always,
        because: "the durability check sees the same boot on damage the boot check found",
    },
    Fold {
        consequence: FindingKind::NotLinearizable,
        check: None,
        cause: FindingKind::BootedOnDamage,
        when: When::Always,
        because: "a node that booted on damage served what the damage left of its log",
    },
    Fold {
        consequence: FindingKind::NoConvergence,
        check: None,
        cause: FindingKind::BootedOnDamage,
        when: When::Always,
        because: "a node that booted on damage holds another log than the others",
    },
    Fold {
        consequence: FindingKind::Forgotten,
        check: None,
        cause: FindingKind::Lost,
        when: When::Always,
        because: "the lost write is what the nodes forgot: they booted with less than they had applied",
    },
    Fold {
        consequence: FindingKind::NoConvergence,
        check: None,
        cause: FindingKind::Lost,
        when: When::Always,
        because: "the nodes disagree where the lost write was",
    },
    Fold {
        consequence: FindingKind::NoConvergence,
        check: None,
        cause: FindingKind::Forgotten,
        when: When::Always,
        because: "a node that forgot applied entries disagrees with the others where they were",
    },
];

/// What a folded finding follows from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// The root cause's signature (a finding of the same run that nothing explains).
    pub signature: Signature,
    /// Why it follows (the rule's words; the first link of a chain).
    pub because: String,
}

/// Whether `when` holds in `results` (without them, only what needs no details).
fn holds(when: When, results: Option<&Results>) -> bool {
    match when {
        When::Always => true,
        When::NoQuorumLeft => results.is_some_and(no_quorum_left),
        When::PanicOfCrashedNode => results.is_some_and(panic_of_crashed_node),
    }
}

/// The boot check's per-node details.
fn boot_nodes(results: &Results) -> Option<&serde_json::Map<String, serde_json::Value>> {
    results
        .checks
        .iter()
        .find(|c| c.name == "boot")
        .and_then(|c| c.details.as_object())
}

/// Whether the boot check says `node` exited on its own.
fn crashed(node: &serde_json::Value) -> bool {
    node["problems"].as_array().is_some_and(|p| {
        p.iter()
            .filter_map(|p| p.as_str())
            .any(|p| p.contains("exited on its own"))
    })
}

/// Whether a node the boot check found exited on its own has a `panicked` line among the log-patterns hits.
fn panic_of_crashed_node(results: &Results) -> bool {
    let Some(nodes) = boot_nodes(results) else {
        return false;
    };
    let hits = results
        .checks
        .iter()
        .filter(|c| c.name == "log-patterns")
        .flat_map(|c| c.details.as_array().into_iter().flatten());
    hits.into_iter().any(|hit| {
        hit["line"].as_str().is_some_and(|line| line.contains("panicked"))
            && hit["node"]
                .as_str()
                .and_then(|node| nodes.get(node))
                .is_some_and(crashed)
    })
}

/// The boot check's nodes: whether those down (a refusal to boot, legitimate or not, or an exit of their own) leave
/// no majority. A legitimate refusal counts: the plan's damage took that node down, and with the node the rule's
/// cause took down, no quorum was left.
fn no_quorum_left(results: &Results) -> bool {
    let Some(nodes) = boot_nodes(results) else {
        return false;
    };
    let down = nodes
        .values()
        .filter(|node| node["refusals"].as_array().is_some_and(|r| !r.is_empty()) || crashed(node))
        .count();
    let total = nodes.len();
    total > 0 && total - down < total / 2 + 1
}

/// The rule that folds `consequence` under `cause` in `results`, if one does.
pub fn rule_for(consequence: &Signature, cause: &Signature, results: Option<&Results>) -> Option<&'static Fold> {
    FOLDS.iter().find(|rule| {
        rule.consequence == consequence.kind
            && rule.check.is_none_or(|check| check == consequence.check)
            && rule.cause == cause.kind
            && consequence != cause
            && holds(rule.when, results)
    })
}

/// Sets each finding's [`Cause`] where a rule folds it under another finding of the same run (the root of its
/// chain). Findings are one per signature. Without the run's `results` (a seed row whose run folder is gone), the
/// rules that need its details do not apply.
pub fn fold(results: Option<&Results>, found: &mut [Finding]) {
    // Each finding's direct cause: the first finding a rule folds it under.
    let direct: Vec<Option<(usize, &'static str)>> = found
        .iter()
        .map(|f| {
            found
                .iter()
                .enumerate()
                .find_map(|(j, c)| rule_for(&f.signature, &c.signature, results).map(|rule| (j, rule.because)))
        })
        .collect();
    for i in 0..found.len() {
        let Some((mut root, because)) = direct[i] else {
            continue;
        };
        // Up the chain to a finding nothing explains (the rules have no cycle; the bound is a guard).
        for _ in 0..found.len() {
            match direct[root] {
                Some((up, _)) if up != i => root = up,
                _ => break,
            }
        }
        found[i].cause = Some(Cause {
            signature: found[root].signature.clone(),
            because: because.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CheckResult, Verdict};
    use serde_json::json;

    fn check(name: &str, details: serde_json::Value) -> CheckResult {
        serde_json::from_value(
            json!({"name": name, "verdict": "invalid", "reason": format!("{name} failed"),
            "details": details}),
        )
        .expect("a check result")
    }

    fn results(checks: Vec<CheckResult>) -> Results {
        serde_json::from_value(
            json!({"schema_version": 1, "faultline_version": "t", "verdict": "invalid",
            "reason": "", "plan": "p", "system": "reference", "seed": 1, "started_at": "", "duration_ms": 0,
            "store_dir": "", "repro": "", "checks": checks,
            "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}}),
        )
        .expect("a results.json")
    }

    /// A boot check where `refusing` nodes of `n1..n3` refused on a clean disk.
    fn boot(refusing: &[&str]) -> CheckResult {
        let mut nodes = serde_json::Map::new();
        for node in ["n1", "n2", "n3"] {
            let refusals = if refusing.contains(&node) {
                json!([{"legitimate": false,
                        "line": format!("{node} refused: interior WAL corruption at op 42: does not chain")}])
            } else {
                json!([])
            };
            nodes.insert(node.into(), json!({"refusals": refusals, "problems": []}));
        }
        check("boot", serde_json::Value::Object(nodes))
    }

    fn liveness() -> CheckResult {
        check("liveness", json!({"timeout": {"after": "heal"}}))
    }

    fn convergence() -> CheckResult {
        check("convergence", json!({}))
    }

    fn set_lost() -> CheckResult {
        check(
            "set",
            json!({"stats": {"anomalies": {"lost": 2}}, "anomalies": {"lost": [{"description": "e7 lost"}]}}),
        )
    }

    fn durability_forgotten() -> CheckResult {
        check(
            "durability",
            json!({"nodes": {"n2": {"restarts": [{"judgement": "forgotten", "cause": "kill",
                "text": "n2 applied 40 before the kill -9 at 3.1 s and booted at 31"}]}}}),
        )
    }

    /// Each finding's kind and its root cause's kind.
    fn folded(results: &Results) -> Vec<(FindingKind, Option<FindingKind>)> {
        super::super::findings(results)
            .iter()
            .map(|f| (f.signature.kind, f.cause.as_ref().map(|c| c.signature.kind)))
            .collect()
    }

    #[test]
    fn given_two_refusals_of_three_and_a_liveness_failure_when_folded_should_show_liveness_under_the_refusal() {
        let run = results(vec![boot(&["n1", "n2"]), liveness(), convergence()]);
        assert_eq!(
            folded(&run),
            [
                (FindingKind::RefusedCleanDisk, None),
                (FindingKind::NoRecovery, Some(FindingKind::RefusedCleanDisk)),
                (FindingKind::NoConvergence, Some(FindingKind::RefusedCleanDisk)),
            ]
        );
    }

    #[test]
    fn given_one_refusal_of_three_and_a_liveness_failure_when_folded_should_keep_liveness_its_own_class() {
        // Two nodes were up: a quorum. That no write was accepted is not the refusal's doing.
        let run = results(vec![boot(&["n3"]), liveness()]);
        assert_eq!(
            folded(&run),
            [(FindingKind::RefusedCleanDisk, None), (FindingKind::NoRecovery, None)]
        );
    }

    #[test]
    fn given_a_crash_that_left_no_quorum_when_folded_should_fold_liveness_and_convergence_under_it() {
        let mut nodes = serde_json::Map::new();
        for node in ["n1", "n2", "n3"] {
            let problems = if node == "n3" {
                json!([])
            } else {
                json!([format!(
                    "{node} exited on its own (exit code 101) after the restart-all"
                )])
            };
            nodes.insert(node.into(), json!({"refusals": [], "problems": problems}));
        }
        let run = results(vec![
            check("boot", serde_json::Value::Object(nodes)),
            liveness(),
            convergence(),
        ]);
        let kinds = folded(&run);
        assert!(kinds.contains(&(FindingKind::Crashed, None)), "{kinds:?}");
        assert!(
            kinds.contains(&(FindingKind::NoRecovery, Some(FindingKind::Crashed))),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(FindingKind::NoConvergence, Some(FindingKind::Crashed))),
            "{kinds:?}"
        );
    }

    #[test]
    fn given_a_panic_that_crashed_a_node_while_another_was_legitimately_down_when_folded_should_fold_to_the_panic() {
        // Measured (rejoin-after-lost-tail, reference-corruption): n2 panicked and exited, n3 refused legitimately
        // (its checkpoint was deleted by the plan), n1 alone could not accept a write.
        let boot = check(
            "boot",
            json!({
                "n1": {"refusals": [], "problems": []},
                "n2": {"refusals": [], "problems": [
                    "n2 exited on its own (exit code 101) at 13.66 s; its log: \"thread 'replica' panicked at x.rs:1:9:\""]},
                "n3": {"refusals": [{"legitimate": true, "line": "checkpoint missing; refusing to boot"}], "problems": []}
            }),
        );
        let panic = check(
            "log-patterns",
            json!([{"node": "n2", "line": "thread 'replica' (4169) panicked at nodes/src/replica/mod.rs:1026:9:",
                    "next": "never truncate executed ops (op 233, commit 252)"}]),
        );
        let kinds = folded(&results(vec![boot, liveness(), panic]));
        assert!(kinds.contains(&(FindingKind::LogPattern, None)), "{kinds:?}");
        assert!(
            kinds.contains(&(FindingKind::Crashed, Some(FindingKind::LogPattern))),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(FindingKind::NoRecovery, Some(FindingKind::LogPattern))),
            "the crash and the legitimate refusal left n1 alone; the chain's root is the panic: {kinds:?}"
        );
    }

    #[test]
    fn given_a_panic_on_a_node_that_did_not_exit_when_folded_should_not_explain_another_nodes_crash() {
        let boot = check(
            "boot",
            json!({"n1": {"refusals": [], "problems": ["n1 exited on its own (signal 9) at 3 s"]},
                   "n2": {"refusals": [], "problems": []}, "n3": {"refusals": [], "problems": []}}),
        );
        let panic = check(
            "log-patterns",
            json!([{"node": "n2", "line": "thread 'io' panicked at y.rs:2:1:"}]),
        );
        let kinds = folded(&results(vec![boot, panic]));
        assert!(kinds.iter().all(|(_, cause)| cause.is_none()), "{kinds:?}");
    }

    #[test]
    fn given_a_lost_write_forgotten_entries_and_no_convergence_when_folded_should_fold_the_chain_to_the_loss() {
        let run = results(vec![set_lost(), durability_forgotten(), convergence()]);
        let kinds = folded(&run);
        assert!(kinds.contains(&(FindingKind::Lost, None)), "{kinds:?}");
        assert!(
            kinds.contains(&(FindingKind::Forgotten, Some(FindingKind::Lost))),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(FindingKind::NoConvergence, Some(FindingKind::Lost))),
            "the root of the chain, not its middle: {kinds:?}"
        );
    }

    #[test]
    fn given_a_boot_on_damage_seen_by_boot_and_durability_and_a_bad_read_when_folded_should_be_one_cause() {
        // Measured (canary: the boot-skips-verification mutant boots on a WAL its verifier refuses).
        let mut nodes = serde_json::Map::new();
        for node in ["n1", "n2", "n3"] {
            let problems = if node == "n3" {
                json!(["n3 booted on a WAL that its own offline verification refused (interior corruption at op 7)"])
            } else {
                json!([])
            };
            nodes.insert(node.into(), json!({"refusals": [], "problems": problems}));
        }
        let durability = check(
            "durability",
            json!({"nodes": {"n3": {"restarts": [{"judgement": "booted-on-damage", "cause": "kill",
                "text": "n3 booted after flip-bits of its wal"}]}}}),
        );
        let linearizability = check("linearizability", json!({"model": "cas-register"}));
        let run = results(vec![
            check("boot", serde_json::Value::Object(nodes)),
            durability,
            linearizability,
        ]);
        let found = super::super::findings(&run);
        let roots: Vec<_> = found
            .iter()
            .filter(|f| f.cause.is_none())
            .map(|f| f.signature.check.as_str())
            .collect();
        assert_eq!(roots, ["boot"], "{found:#?}");
        assert_eq!(found.len(), 3, "{found:#?}");
    }

    #[test]
    fn given_a_consequence_alone_when_folded_should_stay_a_class_of_its_own() {
        for run in [
            results(vec![convergence()]),
            results(vec![liveness()]),
            results(vec![durability_forgotten()]),
        ] {
            assert!(
                folded(&run).iter().all(|(_, cause)| cause.is_none()),
                "{:?}",
                folded(&run)
            );
        }
    }

    #[test]
    fn given_the_rules_when_followed_should_never_come_back_to_a_kind() {
        // A cycle would fold two findings under each other and leave no class: the rules must form a DAG.
        fn reaches(from: FindingKind, to: FindingKind, depth: usize) -> bool {
            depth < FOLDS.len()
                && FOLDS
                    .iter()
                    .filter(|r| r.consequence == from && r.cause != r.consequence)
                    .any(|r| r.cause == to || reaches(r.cause, to, depth + 1))
        }
        for rule in FOLDS {
            assert!(!rule.because.is_empty());
            if rule.cause == rule.consequence {
                // Two checks' findings of one event (a boot on damage the boot and durability checks both see): the
                // rule names the consequence's check, and a finding never folds under itself.
                assert!(rule.check.is_some(), "{rule:?}");
                continue;
            }
            assert!(!reaches(rule.cause, rule.consequence, 0), "{rule:?}");
        }
        let _ = Verdict::Invalid;
    }
}
