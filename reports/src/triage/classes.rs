//! Failure classes across seeds and nights: every finding of every failing seed of the seed database, grouped by
//! class, as of one campaign (the latest by default).
//!
//! A class is `new` when the campaign shows it and no earlier campaign did, `known` when an earlier one did too, and
//! `gone` when an earlier campaign showed it, this one does not, and this one ran a plan that had shown it (a class
//! of a plan the campaign did not run has not gone anywhere, and is left out). A seed contributes to every class it
//! shows, not only to its first failing check's.
//!
//! Rows recorded before findings existed have none: their class is their legacy [`FailureKey`] (plan, check, first
//! error line normalized), so an old store keeps its classes. A legacy class is never `gone`: the campaign may have
//! recorded the same failure under its signature.

use super::finding::{class_id, Severity, Signature};
use super::notes::Notes;
use crate::results::Verdict;
use crate::seeds::{campaign_order, FailureClass, FailureKey, Rerun, SeedRow};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A class's identity: a signature, or for a row recorded before findings its legacy key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClassKey {
    /// What the findings of a row say.
    Signature(Signature),
    /// A row without findings: plan, failing check, normalized first error line.
    Legacy(FailureKey),
}

impl ClassKey {
    /// The class id: `c` and 8 hex digits (see [`Signature::id`]).
    pub fn id(&self) -> String {
        match self {
            ClassKey::Signature(signature) => signature.id(),
            ClassKey::Legacy(key) => class_id(&format!(
                "legacy\u{1f}{}\u{1f}{}\u{1f}{}",
                key.plan, key.check, key.line
            )),
        }
    }

    /// How bad it is. A legacy key knows only its check, so it takes that check's usual worst.
    pub fn severity(&self) -> Severity {
        match self {
            ClassKey::Signature(signature) => signature.kind.severity(),
            ClassKey::Legacy(key) => match key.check.as_str() {
                "boot" if key.line.contains("refused to boot on a disk nothing corrupted") => {
                    Severity::RefusedCleanDisk
                }
                "durability" => Severity::DataLoss,
                "set" | "log" | "linearizability" | "txn" => Severity::Consistency,
                "boot" | "liveness" => Severity::NoRecovery,
                "convergence" => Severity::NoConvergence,
                "log-patterns" => Severity::LogPattern,
                _ => Severity::Other,
            },
        }
    }

    /// One line saying what it is.
    pub fn title(&self) -> String {
        match self {
            ClassKey::Signature(signature) => signature.title(),
            ClassKey::Legacy(key) => format!("{} (plan {}): {}", key.check, key.plan, key.line),
        }
    }
}

/// When a class was seen: the campaign and the time of its first row that showed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    /// Campaign id.
    pub campaign: String,
    /// RFC 3339 UTC.
    pub at: String,
}

/// A seed that shows a class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassSeed {
    /// Its campaign.
    pub campaign: String,
    /// Plan name.
    pub plan: String,
    /// Run seed.
    pub seed: u64,
    /// Node-count override, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// The run's verdict.
    pub verdict: Verdict,
    /// A command that runs it again.
    pub repro: String,
    /// Its run folder, relative to the store root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_dir: Option<String>,
}

/// How reruns of the class's seeds went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reruns {
    /// Reruns of seeds that showed the class.
    pub runs: u64,
    /// Those that showed it again.
    pub reproduced: u64,
}

/// One failure class as of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Class {
    /// A short stable id (`c3fa81c02`): what a note in `triage-notes.yaml` names.
    pub id: String,
    /// New, known or gone in the campaign.
    pub status: FailureClass,
    /// How bad it is: its own severity, or the worst of what followed from it, if worse.
    pub severity: Severity,
    /// One line saying what it is.
    pub title: String,
    /// The signature (none for a legacy class).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
    /// The raw evidence of its most recent seed.
    pub example: String,
    /// Plans that showed it.
    pub plans: Vec<String>,
    /// The campaign's seeds that show it (for a gone class: those of the last campaign that showed it).
    pub seeds: Vec<ClassSeed>,
    /// Seeds that showed it, in every campaign up to this one.
    pub seeds_total: usize,
    /// Campaigns that showed it.
    pub campaigns: usize,
    /// The first campaign that showed it.
    pub first_seen: Seen,
    /// The last campaign that showed it.
    pub last_seen: Seen,
    /// Reruns of its seeds.
    pub reruns: Reruns,
    /// The note a person left for it in `triage-notes.yaml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What followed from it in its seeds' runs, folded under it ([`super::folds`]): each consequence's title and
    /// why it follows, once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub follows: Vec<String>,
}

/// The classes of a campaign, most severe first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Triage {
    /// The campaign they are as of.
    pub campaign: String,
    /// Its seeds.
    pub seeds: usize,
    /// Its seeds that did not pass.
    pub failing: usize,
    /// Ordered by severity, then new before known before gone, then by how many seeds show it.
    pub classes: Vec<Class>,
}

impl Triage {
    /// Classes with `status`.
    pub fn count(&self, status: FailureClass) -> usize {
        self.classes.iter().filter(|c| c.status == status).count()
    }
}

/// Everything gathered about one class while walking the rows.
struct Gathered<'a> {
    key: ClassKey,
    ranks: BTreeSet<usize>,
    rows: Vec<(usize, &'a SeedRow)>,
}

/// The classes as of `campaign` (the latest when `None`), or `None` when the database has no such campaign. Only
/// campaigns up to it count, so a triage of last week's campaign reads as it did then.
pub fn triage(rows: &[SeedRow], campaign: Option<&str>, notes: &Notes) -> Option<Triage> {
    let order = campaign_order(rows);
    let current = match campaign {
        Some(id) => order.iter().position(|c| c == id)?,
        None => order.len().checked_sub(1)?,
    };
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let mut gathered: BTreeMap<ClassKey, Gathered> = BTreeMap::new();
    let mut current_plans = BTreeSet::new();
    let (mut seeds, mut failing) = (0, 0);
    for row in rows {
        let r = rank[row.campaign.as_str()];
        if r > current {
            continue;
        }
        if r == current {
            seeds += 1;
            failing += usize::from(row.verdict != Verdict::Valid);
            current_plans.insert(row.plan.as_str());
        }
        for key in row.class_keys() {
            let entry = gathered.entry(key.clone()).or_insert_with(|| Gathered {
                key,
                ranks: BTreeSet::new(),
                rows: Vec::new(),
            });
            entry.ranks.insert(r);
            entry.rows.push((r, row));
        }
    }
    let mut classes: Vec<Class> = gathered
        .into_values()
        .filter_map(|g| class_of(g, current, &order, &current_plans, notes))
        .collect();
    classes.sort_by(|a, b| {
        let key = |c: &Class| {
            (
                c.severity,
                status_rank(c.status),
                std::cmp::Reverse(c.seeds.len()),
                c.id.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    Some(Triage {
        campaign: order[current].clone(),
        seeds,
        failing,
        classes,
    })
}

fn status_rank(status: FailureClass) -> u8 {
    match status {
        FailureClass::New => 0,
        FailureClass::Known => 1,
        FailureClass::Gone => 2,
    }
}

/// The class of what was gathered, or `None` when it is neither in the campaign nor gone from it.
fn class_of(
    g: Gathered,
    current: usize,
    order: &[String],
    current_plans: &BTreeSet<&str>,
    notes: &Notes,
) -> Option<Class> {
    let first = *g.ranks.first().expect("a gathered class has a row");
    let last = *g.ranks.last().expect("a gathered class has a row");
    let plans: BTreeSet<&str> = g.rows.iter().map(|(_, row)| row.plan.as_str()).collect();
    let status = if last == current {
        if first == current {
            FailureClass::New
        } else {
            FailureClass::Known
        }
    } else if matches!(g.key, ClassKey::Signature(_)) && plans.iter().any(|p| current_plans.contains(p)) {
        FailureClass::Gone
    } else {
        return None;
    };
    let id = g.key.id();
    let seen = |rank: usize| Seen {
        campaign: order[rank].clone(),
        at: g
            .rows
            .iter()
            .filter(|(r, _)| *r == rank)
            .map(|(_, row)| row.finished_at.as_str())
            .min()
            .unwrap_or("")
            .to_string(),
    };
    let shown: Vec<&SeedRow> = g.rows.iter().filter(|(r, _)| *r == last).map(|(_, row)| *row).collect();
    let newest = shown
        .iter()
        .max_by(|a, b| a.finished_at.cmp(&b.finished_at))
        .expect("the last campaign has a row");
    // What followed from it: each consequence once, and the worst of their severities (a panic that took the
    // quorum down is as bad as the lost liveness it caused).
    let consequences: Vec<&super::finding::Finding> = match &g.key {
        ClassKey::Signature(signature) => g
            .rows
            .iter()
            .flat_map(|(_, row)| &row.findings)
            .filter(|f| f.cause.as_ref().is_some_and(|c| &c.signature == signature))
            .collect(),
        ClassKey::Legacy(_) => Vec::new(),
    };
    let follows: BTreeSet<String> = consequences
        .iter()
        .filter_map(|f| Some(format!("{} ({})", f.signature.title(), f.cause.as_ref()?.because)))
        .collect();
    let severity = consequences
        .iter()
        .map(|f| f.severity())
        .fold(g.key.severity(), std::cmp::min);
    let mut reruns = Reruns::default();
    for (_, row) in &g.rows {
        reruns.runs += row.reruns.len() as u64;
        reruns.reproduced += reproduced_reruns(row, &g.key, &id);
    }
    Some(Class {
        status,
        severity,
        title: g.key.title(),
        signature: match &g.key {
            ClassKey::Signature(signature) => Some(signature.clone()),
            ClassKey::Legacy(_) => None,
        },
        example: example_of(newest, &g.key),
        plans: plans.iter().map(|p| p.to_string()).collect(),
        seeds: shown.iter().map(|row| class_seed(row)).collect(),
        seeds_total: g.rows.len(),
        campaigns: g.ranks.len(),
        first_seen: seen(first),
        last_seen: seen(last),
        reruns,
        note: notes.get(&id).cloned(),
        follows: follows.into_iter().collect(),
        id,
    })
}

fn class_seed(row: &SeedRow) -> ClassSeed {
    ClassSeed {
        campaign: row.campaign.clone(),
        plan: row.plan.clone(),
        seed: row.seed,
        nodes: row.nodes,
        verdict: row.verdict,
        repro: row.repro.clone(),
        store_dir: row.store_dir.clone(),
    }
}

/// The evidence a row holds for a class: its finding's example, or a legacy row's first error line.
fn example_of(row: &SeedRow, key: &ClassKey) -> String {
    match key {
        ClassKey::Signature(signature) => row
            .findings
            .iter()
            .find(|f| &f.signature == signature)
            .map(|f| f.example.clone())
            .unwrap_or_default(),
        ClassKey::Legacy(_) => row.first_error.clone().unwrap_or_default(),
    }
}

/// How many of a row's reruns showed the class again: by class id for a row with findings, else (a legacy row) when
/// the rerun failed a check the first run failed, with the same verdict.
fn reproduced_reruns(row: &SeedRow, key: &ClassKey, id: &str) -> u64 {
    let again = |rerun: &&Rerun| match key {
        ClassKey::Signature(_) => rerun.classes.iter().any(|c| c == id),
        ClassKey::Legacy(_) => {
            rerun.verdict == row.verdict && row.failing_checks().any(|c| rerun.failing_checks.contains(c))
        }
    };
    row.reruns.iter().filter(again).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CheckResult;
    use crate::seeds::tests::row;
    use crate::seeds::Rerun;
    use crate::triage::finding::tests::{iggy_panic_check, iggy_refusal_check, results, set_check};
    use crate::triage::finding::{findings, FindingKind};

    /// What an Iggy seed showed: stale elements, lost elements, a refusal of op N, a panic with these numbers.
    #[derive(Default, Clone, Copy)]
    struct Shows {
        stale: Option<&'static str>,
        lost: Option<&'static str>,
        refusal_op: Option<u64>,
        panic: Option<(u64, u64)>,
    }

    /// A row of `campaign` for `plan` and seed `index`, with the findings of a run that showed `shows`.
    fn iggy_row(campaign: &str, day: u32, plan: &str, index: u64, shows: Shows) -> SeedRow {
        let mut checks: Vec<CheckResult> = Vec::new();
        let (stale, lost): (Vec<&str>, Vec<&str>) =
            (shows.stale.into_iter().collect(), shows.lost.into_iter().collect());
        if !stale.is_empty() || !lost.is_empty() {
            checks.push(set_check(&stale, &lost));
        }
        if let Some(op) = shows.refusal_op {
            checks.push(iggy_refusal_check(op));
        }
        if let Some((expected, got)) = shows.panic {
            checks.push(iggy_panic_check("n2", expected, got));
        }
        let at = format!("2026-12-{day:02}T02:00:{index:02}Z");
        if checks.is_empty() {
            return row(campaign, &at, plan, index, None);
        }
        let run = results("iggy", checks);
        let (check, line) = crate::seeds::failure_of(&run).expect("a failing run");
        let mut seed = row(campaign, &at, plan, index, Some((&check, &line)));
        seed.findings = findings(&run);
        seed
    }

    fn stale(element: &'static str) -> Shows {
        Shows {
            stale: Some(element),
            ..Shows::default()
        }
    }

    /// The first night: 8 seeds of iggy-kill and iggy-mixed on the pre-fix build, three bugs.
    fn first_night() -> Vec<SeedRow> {
        let all_three = Shows {
            stale: Some("e334"),
            refusal_op: Some(1234),
            panic: Some((42, 44)),
            ..Shows::default()
        };
        let mut rows = vec![
            iggy_row("c1", 1, "iggy-kill", 0, stale("e47")),
            iggy_row(
                "c1",
                1,
                "iggy-kill",
                1,
                Shows {
                    panic: Some((1730, 1733)),
                    ..stale("e9")
                },
            ),
            iggy_row("c1", 1, "iggy-kill", 2, stale("e1001")),
            iggy_row("c1", 1, "iggy-kill", 3, Shows::default()),
            iggy_row("c1", 1, "iggy-mixed", 0, all_three),
            iggy_row(
                "c1",
                1,
                "iggy-mixed",
                1,
                Shows {
                    refusal_op: Some(9),
                    ..stale("e2")
                },
            ),
            iggy_row("c1", 1, "iggy-mixed", 2, stale("e77")),
            iggy_row("c1", 1, "iggy-mixed", 3, Shows::default()),
        ];
        rows[4].reruns = vec![Rerun {
            verdict: Verdict::Invalid,
            failing_checks: vec!["set".into(), "boot".into()],
            duration_ms: 1,
            store_dir: None,
            classes: rows[5].findings.iter().map(|f| f.signature.id()).collect(),
        }];
        rows
    }

    fn kind_of(class: &Class) -> FindingKind {
        class.signature.as_ref().expect("a signature class").kind
    }

    #[test]
    fn given_a_night_of_three_bugs_over_eight_seeds_when_triaged_should_be_three_classes_refusal_first() {
        let rows = first_night();
        let triage = triage(&rows, None, &Notes::new()).expect("a campaign");
        assert_eq!((triage.campaign.as_str(), triage.seeds, triage.failing), ("c1", 8, 6));
        let kinds: Vec<FindingKind> = triage.classes.iter().map(kind_of).collect();
        assert_eq!(
            kinds,
            vec![
                FindingKind::RefusedCleanDisk,
                FindingKind::Stale,
                FindingKind::LogPattern
            ],
            "one class per bug, whatever the numbers in their lines; the refusal first"
        );
        assert!(triage.classes.iter().all(|c| c.status == FailureClass::New));
        let seeds_of = |i: usize| -> Vec<(String, u64)> {
            triage.classes[i]
                .seeds
                .iter()
                .map(|s| (s.plan.clone(), s.seed))
                .collect()
        };
        let all_three = ("iggy-mixed".to_string(), 1000);
        for i in 0..3 {
            assert!(
                seeds_of(i).contains(&all_three),
                "the seed that shows all three is in class {i}"
            );
        }
        assert_eq!(seeds_of(0).len(), 2, "both refusing seeds, under one class");
        assert_eq!(seeds_of(1).len(), 6, "every stale seed of both plans");
        assert_eq!(triage.classes[1].plans, vec!["iggy-kill", "iggy-mixed"]);
        assert_eq!(seeds_of(2).len(), 2);
        let refusal = &triage.classes[0];
        assert_eq!(
            refusal.reruns,
            Reruns { runs: 1, reproduced: 1 },
            "the rerun showed the refusal again"
        );
        assert_eq!(
            triage.classes[2].reruns,
            Reruns { runs: 1, reproduced: 0 },
            "but not the panic"
        );
        assert!(
            refusal
                .example
                .starts_with("iggy refused to boot: interior WAL corruption"),
            "{}",
            refusal.example
        );
        assert_eq!(refusal.seeds[0].repro, "faultline run iggy-mixed --seed 1000");
    }

    #[test]
    fn given_a_second_night_when_triaged_should_mark_classes_known_new_and_gone_and_show_notes() {
        let mut rows = first_night();
        rows.push(iggy_row("c1", 1, "etcd-kill", 0, Shows::default()));
        let etcd_only = {
            let mut r = iggy_row("c1", 1, "etcd-kill", 1, stale("k"));
            r.findings[0].signature.system = "etcd".into();
            r
        };
        rows.push(etcd_only);
        rows.extend([
            iggy_row("c2", 2, "iggy-kill", 0, stale("e5")),
            iggy_row("c2", 2, "iggy-kill", 1, Shows::default()),
            iggy_row(
                "c2",
                2,
                "iggy-mixed",
                0,
                Shows {
                    refusal_op: Some(555),
                    ..stale("e6")
                },
            ),
            iggy_row(
                "c2",
                2,
                "iggy-mixed",
                1,
                Shows {
                    lost: Some("e8"),
                    ..Shows::default()
                },
            ),
        ]);
        let first = triage(&rows, Some("c1"), &Notes::new()).expect("c1");
        let refusal_id = first.classes[0].id.clone();
        let notes = Notes::from([(refusal_id.clone(), "upstream: apache/iggy#1234".to_string())]);
        let second = triage(&rows, None, &notes).expect("c2");
        assert_eq!(second.campaign, "c2");
        let statuses: Vec<(FindingKind, FailureClass)> =
            second.classes.iter().map(|c| (kind_of(c), c.status)).collect();
        assert_eq!(
            statuses,
            vec![
                (FindingKind::RefusedCleanDisk, FailureClass::Known),
                (FindingKind::Lost, FailureClass::New),
                (FindingKind::Stale, FailureClass::Known),
                (FindingKind::LogPattern, FailureClass::Gone),
            ],
            "the etcd class is not gone: c2 ran no etcd plan"
        );
        let refusal = &second.classes[0];
        assert_eq!(refusal.id, refusal_id, "the id is stable across nights");
        assert_eq!(refusal.note.as_deref(), Some("upstream: apache/iggy#1234"));
        assert_eq!(
            (
                refusal.first_seen.campaign.as_str(),
                refusal.last_seen.campaign.as_str()
            ),
            ("c1", "c2")
        );
        assert_eq!((refusal.seeds.len(), refusal.seeds_total, refusal.campaigns), (1, 3, 2));
        let gone = &second.classes[3];
        assert_eq!(gone.last_seen.campaign, "c1");
        assert_eq!(
            gone.seeds.len(),
            2,
            "a gone class lists the seeds of the last campaign that showed it"
        );
        assert_eq!(second.count(FailureClass::New), 1);
        let text = crate::triage::render_text(&second);
        assert!(
            text.starts_with(
                "faultline triage: campaign c2: 4 seed(s), 3 failing; 4 class(es): 1 new, 2 known, 1 gone\n"
            ),
            "{text}"
        );
        assert!(text.contains("note: upstream: apache/iggy#1234"), "{text}");
        let order: Vec<usize> = ["refused to boot", "lost acknowledged", "stale reads", "log pattern"]
            .iter()
            .map(|needle| text.find(needle).unwrap_or_else(|| panic!("{needle} in {text}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "severity order: {text}");
    }

    #[test]
    fn given_rows_recorded_before_findings_when_triaged_should_keep_their_old_classes_and_never_call_them_gone() {
        fn boot(line: &str) -> Option<(&str, &str)> {
            Some(("boot", line))
        }
        let rows = vec![
            row(
                "c0",
                "2026-11-01T00:00:00Z",
                "default",
                0,
                boot("n2 booted on a WAL refused at offset 4517"),
            ),
            row(
                "c1",
                "2026-11-02T00:00:00Z",
                "default",
                0,
                boot("n3 booted on a WAL refused at offset 9"),
            ),
            row(
                "c1",
                "2026-11-02T00:00:01Z",
                "default",
                1,
                Some(("liveness", "no write within 30000 ms")),
            ),
            row("c2", "2026-11-03T00:00:00Z", "default", 0, None),
        ];
        let at_c1 = triage(&rows, Some("c1"), &Notes::new()).expect("c1");
        let statuses: Vec<(&str, FailureClass)> = at_c1.classes.iter().map(|c| (c.title.as_str(), c.status)).collect();
        assert_eq!(
            statuses,
            vec![
                ("liveness (plan default): no write within N ms", FailureClass::New),
                (
                    "boot (plan default): nN booted on a WAL refused at offset N",
                    FailureClass::Known
                ),
            ],
            "one severity (a legacy boot failure is taken for no recovery): new first"
        );
        assert!(at_c1.classes.iter().all(|c| c.signature.is_none()));
        let at_c2 = triage(&rows, None, &Notes::new()).expect("c2");
        assert!(
            at_c2.classes.is_empty(),
            "legacy classes are not marked gone: {:?}",
            at_c2.classes
        );
        assert!(triage(&rows, Some("c9"), &Notes::new()).is_none());
        assert!(triage(&[], None, &Notes::new()).is_none());
    }

    #[test]
    fn given_a_seeds_jsonl_row_written_before_findings_when_read_should_load_and_classify_by_its_old_key() {
        let old = r#"{"campaign":"c1","plan":"canary","plan_source":"canary","seed":7,"seed_index":0,"verdict":"invalid","failing_check":"boot","first_error":"n2 booted at 2.4s on a WAL refused","duration_ms":1,"repro":"faultline run canary --seed 7","finished_at":"2026-01-01T00:00:00Z","reruns":[{"verdict":"invalid","failing_checks":["boot"],"duration_ms":1}]}"#;
        let row: SeedRow = serde_json::from_str(old).expect("an old row loads");
        assert!(row.findings.is_empty() && row.reruns[0].classes.is_empty());
        assert!(matches!(row.class_keys().as_slice(), [ClassKey::Legacy(key)] if key.check == "boot"));
        let triage = triage(&[row], None, &Notes::new()).expect("c1");
        assert_eq!(
            triage.classes[0].reruns,
            Reruns { runs: 1, reproduced: 1 },
            "an old rerun counts by its checks"
        );
    }
}
