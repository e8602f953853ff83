//! The campaign view at the top of `store/index.html`, drawn from `store/seeds.jsonl` (and, for coverage, each seed's
//! results.json): the newest campaign's failure classes (most severe first; new, known or gone; the seeds that show
//! each with their repro commands, when each was first and last seen, how reruns went, a person's note), its failing
//! seeds (most severe first, then new before known, each with its reproducibility and repro command), its pass/fail
//! counts per plan (failing plans first) and the share of its seeds that reached each named coverage state, the trend
//! of every plan across campaigns, and a line per campaign.

use crate::pages;
use crate::results::{shout, Coverage, Results, Verdict};
use crate::seeds::{campaign_order, classify, FailureClass, SeedRow};
use crate::triage::{self, Class, Severity, Triage};
use maud::{html, Markup};
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::Path;

/// Campaigns the trend table shows (the newest ones).
const TREND_CAMPAIGNS_MAX: usize = 12;
/// Failure rows the view lists (a campaign with more lists the first ones: new classes first).
const FAILURES_SHOWN_MAX: usize = 200;
/// Characters of a first error line shown in a cell (the whole line is its title).
const ERROR_SHOWN_CHARS_MAX: usize = 160;
/// Seeds listed per failure class (with their repro commands); the rest are counted.
const CLASS_SEEDS_SHOWN_MAX: usize = 5;

/// Verdict counts of a set of rows.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    valid: usize,
    invalid: usize,
    unknown: usize,
}

impl Tally {
    fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Valid => self.valid += 1,
            Verdict::Invalid => self.invalid += 1,
            Verdict::Unknown => self.unknown += 1,
        }
    }

    fn runs(&self) -> usize {
        self.valid + self.invalid + self.unknown
    }

    /// The CSS class of a cell: invalid beats unknown beats valid.
    fn class(&self) -> &'static str {
        if self.invalid > 0 {
            "invalid"
        } else if self.unknown > 0 {
            "unknown"
        } else {
            "valid"
        }
    }
}

/// The campaign view, or nothing when the store has no seed database rows.
pub(crate) fn render(rows: &[SeedRow], store_root: &Path) -> Markup {
    let order = campaign_order(rows);
    let Some(newest) = order.last() else {
        return html! {};
    };
    let classes = classify(rows);
    let newest_rows: Vec<(&SeedRow, Option<FailureClass>)> = rows
        .iter()
        .zip(classes.iter().copied())
        .filter(|(row, _)| &row.campaign == newest)
        .collect();
    let (notes, notes_error) = match triage::read_notes(store_root) {
        Ok(notes) => (notes, None),
        Err(e) => (triage::Notes::new(), Some(e.to_string())),
    };
    let triage = triage::triage(rows, Some(newest), &notes).expect("the newest campaign is in the database");
    html! {
        section #campaigns {
            (render_newest(newest, &newest_rows, &triage, store_root))
            @if let Some(error) = notes_error { p.note { (error) } }
            (render_trend(rows, &order))
            (render_campaign_list(rows, &classes, &order))
        }
    }
}

fn render_newest(id: &str, rows: &[(&SeedRow, Option<FailureClass>)], triage: &Triage, store_root: &Path) -> Markup {
    let mut tally = Tally::default();
    for (row, _) in rows {
        tally.add(row.verdict);
    }
    let failures = rows.iter().filter(|(_, c)| c.is_some()).count();
    let new = triage.count(FailureClass::New);
    let mut shards: Vec<&str> = rows.iter().filter_map(|(r, _)| r.shard.as_deref()).collect();
    shards.sort_unstable();
    shards.dedup();
    let mut builds: Vec<String> = rows.iter().map(|(r, _)| r.build.label()).collect();
    builds.sort_unstable();
    builds.dedup();
    html! {
        h2 { "Campaign " code { (id) } }
        p.summary {
            (tally.runs()) " seed(s): " (pages::pill("valid", &format!("{} valid", tally.valid))) " "
            (pages::pill("invalid", &format!("{} invalid", tally.invalid))) " "
            (pages::pill("unknown", &format!("{} unknown", tally.unknown)))
            " · " (failures) " failure(s) in " (new) " new failure class(es) (" (triage.count(FailureClass::Known))
            " known, " (triage.count(FailureClass::Gone)) " gone) · build " (builds.join(", "))
            @if !shards.is_empty() { " · shards " (shards.join(", ")) }
        }
        (render_classes(triage, store_root))
        (render_failures(rows, store_root))
        (render_plan_counts(rows))
        (render_coverage(rows, store_root))
    }
}

/// The campaign's coverage per plan, read from each seed's results.json (a seed whose run folder is gone or predates
/// coverage is left out of the share).
fn render_coverage(rows: &[(&SeedRow, Option<FailureClass>)], store_root: &Path) -> Markup {
    let coverages: Vec<(&str, Coverage)> = rows
        .iter()
        .filter_map(|(row, _)| {
            let bytes = std::fs::read(store_root.join(row.store_dir.as_deref()?).join("results.json")).ok()?;
            let results: Results = serde_json::from_slice(&bytes).ok()?;
            Some((row.plan.as_str(), results.coverage))
        })
        .collect();
    crate::index::coverage_per_plan(coverages.iter().map(|(plan, coverage)| (*plan, coverage)))
}

fn render_failures(rows: &[(&SeedRow, Option<FailureClass>)], store_root: &Path) -> Markup {
    let mut failures: Vec<&(&SeedRow, Option<FailureClass>)> = rows.iter().filter(|(_, c)| c.is_some()).collect();
    if failures.is_empty() {
        return html! { p { "No failures." } };
    }
    // The most severe first, then new classes, then invalid before unknown, then by plan and seed order.
    failures.sort_by_key(|(row, class)| {
        (
            row_severity(row),
            *class != Some(FailureClass::New),
            row.verdict != Verdict::Invalid,
            row.plan.clone(),
            row.seed_index,
            row.nodes,
        )
    });
    let shown = failures.len().min(FAILURES_SHOWN_MAX);
    html! {
        h3 { "Failures" }
        p.note {
            "Real processes are not deterministic: a seed fixes the workload and the fault schedule, not timing, so a \
             failing seed is rerun. " b { "reproducible" } ": a rerun failed the same check again; " b { "flaky" }
            ": no rerun did. " b { "new" } ": the seed shows a failure class no earlier campaign showed (see above)."
        }
        table.failures {
            thead { tr {
                th { "verdict" } th { "plan" } th { "seed" } th { "check" } th { "class" } th { "reruns" }
                th { "first error" } th { "repro" } th { "report" }
            } }
            tbody { @for (row, class) in &failures[..shown] { (failure_row(row, *class, store_root)) } }
        }
        @if shown < failures.len() {
            p.note { (failures.len() - shown) " more failure(s) not listed; every seed is in seeds.jsonl." }
        }
    }
}

/// The severity of a row's worst class.
fn row_severity(row: &SeedRow) -> Severity {
    row.class_keys()
        .iter()
        .map(triage::ClassKey::severity)
        .min()
        .unwrap_or(Severity::Other)
}

fn failure_row(row: &SeedRow, class: Option<FailureClass>, store_root: &Path) -> Markup {
    let class = class.expect("failures have a class");
    let error = row.first_error.as_deref().unwrap_or("");
    let ids: Vec<String> = row.class_keys().iter().map(triage::ClassKey::id).collect();
    html! {
        tr class=(row.verdict) {
            td { (pages::pill(&row.verdict.to_string(), shout(row.verdict))) }
            td { (row.plan) }
            td { (row.seed) @if let Some(n) = row.nodes { " (" (n) " nodes)" } }
            td { (row.checks_text()) }
            td { span class={ "c " (class) } { (class) } " " small { (ids.join(" ")) } }
            td { (reruns_text(row)) }
            td.reason title=(error) { (clip(error, ERROR_SHOWN_CHARS_MAX)) }
            td { code { (row.repro) } }
            td { (run_link(row.store_dir.as_deref(), store_root)) }
        }
    }
}

/// The campaign's failure classes, most severe first.
fn render_classes(triage: &Triage, store_root: &Path) -> Markup {
    if triage.classes.is_empty() {
        return html! {};
    }
    html! {
        h3 { "Failure classes" }
        p.note {
            "A class is what identifies a bug: the system, the check, the kind of finding and a key line (a refusal \
             line, a panic's file:line and message, a matched log line) with numbers, hashes, offsets, paths and node \
             names masked; a seed is in every class it shows. " b { "new" } ": no earlier campaign showed it; "
            b { "gone" } ": an earlier campaign showed it and this one, running a plan that had, did not. Notes come \
             from " code { (triage::NOTES_FILE) } " in the store (" code { "class-id: note" } " lines)."
        }
        table.classes {
            thead { tr {
                th { "severity" } th { "class" } th { "status" } th { "what" } th { "seeds" } th { "plans" }
                th { "first seen" } th { "last seen" } th { "reruns" } th { "note" }
            } }
            tbody { @for class in &triage.classes { (class_row(class, store_root)) } }
        }
    }
}

fn class_row(class: &Class, store_root: &Path) -> Markup {
    let shown = class.seeds.len().min(CLASS_SEEDS_SHOWN_MAX);
    let row_class = match class.status {
        FailureClass::Gone => "valid",
        _ => "invalid",
    };
    html! {
        tr class=(row_class) {
            td { (class.severity.label()) }
            td { code { (class.id) } }
            td { span class={ "c " (class.status) } { (class.status) } }
            td.reason title=(class.example) {
                (clip(&class.title, ERROR_SHOWN_CHARS_MAX))
                @for consequence in &class.follows {
                    br; span.hint title="folded under this class: it follows from it in the same run" {
                        "and so: " (clip(consequence, ERROR_SHOWN_CHARS_MAX))
                    }
                }
            }
            td {
                @if class.status == FailureClass::Gone { "none now; last: " }
                (class.seeds.len()) " seed(s)"
                @for seed in &class.seeds[..shown] {
                    br; code { (seed.repro) } " " (run_link(seed.store_dir.as_deref(), store_root))
                }
                @if shown < class.seeds.len() { br; "+" (class.seeds.len() - shown) " more" }
            }
            td { (class.plans.join(", ")) }
            td title=(class.first_seen.at) { (short(&class.first_seen.campaign)) }
            td title=(class.last_seen.at) { (short(&class.last_seen.campaign)) }
            td { (class.reruns.reproduced) "/" (class.reruns.runs) " reproduced" }
            td { (class.note.as_deref().unwrap_or("")) }
        }
    }
}

/// The first `max` characters of `text`, with `…` when cut (the whole line is the cell's title).
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `reproducible (1/2 reruns failed)`, `flaky (0/2 reruns failed)`, or `not rerun`.
fn reruns_text(row: &SeedRow) -> String {
    let Some(reproducibility) = row.reproducibility else {
        return "not rerun".into();
    };
    let same = row
        .reruns
        .iter()
        .filter(|r| r.verdict == row.verdict && row.failing_checks().any(|c| r.failing_checks.contains(c)))
        .count();
    format!("{reproducibility} ({same}/{} failed the same way)", row.reruns.len())
}

fn run_link(store_dir: Option<&str>, store_root: &Path) -> Markup {
    html! {
        @match store_dir {
            Some(dir) if store_root.join(dir).join("report.html").is_file() => {
                a href={ (crate::index::href(dir)) "/report.html" } { "report" }
                @if let Some(shrink) = crate::shrink::read(&store_root.join(dir)) {
                    br; "shrunk repro: " a href={ (crate::index::href(dir)) "/shrink/shrink.html" } { (shrink.summary()) }
                    " " code { "faultline run " (store_root.join(dir).join("shrink").join("shrunk.yaml").display().to_string()) }
                }
            }
            Some(dir) if store_root.join(dir).is_dir() => a href={ (crate::index::href(dir)) "/" } { "folder" },
            Some(_) => "pruned",
            None => "-",
        }
    }
}

fn render_plan_counts(rows: &[(&SeedRow, Option<FailureClass>)]) -> Markup {
    let mut plans: BTreeMap<&str, Tally> = BTreeMap::new();
    for (row, _) in rows {
        plans.entry(&row.plan).or_default().add(row.verdict);
    }
    let mut plans: Vec<(&str, Tally)> = plans.into_iter().collect();
    plans.sort_by_key(|(name, t)| (Reverse(t.invalid), Reverse(t.unknown), *name));
    html! {
        h3 { "Per plan" }
        table.plans {
            thead { tr {
                th { "plan" } th { "seeds" } th { "valid" } th { "invalid" } th { "unknown" } th { "pass rate" }
            } }
            tbody {
                @for (name, t) in plans {
                    tr class=(t.class()) {
                        td { (name) } td { (t.runs()) } td { (t.valid) } td { (t.invalid) } td { (t.unknown) }
                        td { (format!("{:.0}%", 100.0 * t.valid as f64 / t.runs().max(1) as f64)) }
                    }
                }
            }
        }
    }
}

fn render_trend(rows: &[SeedRow], order: &[String]) -> Markup {
    let shown = &order[order.len().saturating_sub(TREND_CAMPAIGNS_MAX)..];
    let mut cells: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    for row in rows {
        cells.entry((&row.plan, &row.campaign)).or_default().add(row.verdict);
    }
    let mut plans: Vec<&str> = rows.iter().map(|r| r.plan.as_str()).collect();
    plans.sort_unstable();
    plans.dedup();
    html! {
        h3 { "Trend per plan" }
        p.note { "valid/seeds per campaign, oldest to newest (the last " (shown.len()) " campaigns)." }
        table.trend {
            thead { tr { th { "plan" } @for id in shown { th title=(id) { (short(id)) } } } }
            tbody {
                @for plan in plans {
                    tr {
                        td { (plan) }
                        @for id in shown {
                            @match cells.get(&(plan, id.as_str())) {
                                Some(t) => td class={ "t " (t.class()) } { (t.valid) "/" (t.runs()) },
                                None => td.t.none { "·" },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A campaign id in at most 20 characters: whole when it fits, else its start and its end around `…` (a name such as
/// `nightly-reference-mixed-2026-12-07` keeps what it is and which one; the full id is the cell's title).
fn short(id: &str) -> String {
    const SHOWN_MAX: usize = 20;
    let chars: Vec<char> = id.chars().collect();
    if chars.len() <= SHOWN_MAX {
        return id.to_string();
    }
    let (head, tail) = (11, SHOWN_MAX - 12);
    let start: String = chars[..head].iter().collect();
    let end: String = chars[chars.len() - tail..].iter().collect();
    format!("{start}…{end}")
}

fn render_campaign_list(rows: &[SeedRow], classes: &[Option<FailureClass>], order: &[String]) -> Markup {
    html! {
        h3 { "Campaigns" }
        table.campaign-list {
            thead { tr {
                th { "campaign" } th { "kind" } th { "first result (UTC)" } th { "seeds" } th { "valid" }
                th { "invalid" } th { "unknown" } th { "new failures" }
            } }
            tbody { @for id in order.iter().rev() { (campaign_row(rows, classes, id)) } }
        }
    }
}

fn campaign_row(rows: &[SeedRow], classes: &[Option<FailureClass>], id: &str) -> Markup {
    let mut tally = Tally::default();
    let mut new = 0;
    let mut first = None;
    let mut kind = None;
    for (row, class) in rows.iter().zip(classes) {
        if row.campaign != id {
            continue;
        }
        tally.add(row.verdict);
        new += usize::from(*class == Some(FailureClass::New));
        first = Some(first.map_or(row.finished_at.as_str(), |f: &str| f.min(&row.finished_at)));
        kind = Some(row.kind);
    }
    let kind = match kind {
        Some(crate::seeds::CampaignKind::Certify) => "certify",
        _ => "campaign",
    };
    html! {
        tr class=(tally.class()) {
            td { code { (id) } } td { (kind) } td { (first.unwrap_or("")) } td { (tally.runs()) }
            td { (tally.valid) } td { (tally.invalid) } td { (tally.unknown) } td { (new) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeds::tests::row;
    use crate::seeds::{Reproducibility, Rerun};

    #[test]
    fn given_two_campaigns_when_rendered_should_show_the_newest_failures_first_classified_with_trend() {
        let dir = tempfile::tempdir().unwrap();
        let boot = Some(("boot", "n2 booted on a WAL refused at offset 4517"));
        let mut reproducible = row(
            "c2",
            "2026-01-02T00:00:03Z",
            "canary",
            1,
            Some(("boot", "n3 booted on a WAL refused at offset 77")),
        );
        reproducible.reproducibility = Some(Reproducibility::Reproducible);
        reproducible.reruns = vec![Rerun {
            verdict: Verdict::Invalid,
            failing_checks: vec!["linearizability".into(), "boot".into()],
            duration_ms: 1,
            store_dir: None,
            classes: Vec::new(),
        }];
        let rows = vec![
            row("c1", "2026-01-01T00:00:01Z", "canary", 0, boot),
            row("c1", "2026-01-01T00:00:02Z", "default", 0, None),
            row("c2", "2026-01-02T00:00:01Z", "default", 0, None),
            row(
                "c2",
                "2026-01-02T00:00:02Z",
                "default",
                1,
                Some(("liveness", "no write within 30000 ms")),
            ),
            reproducible,
        ];
        std::fs::create_dir_all(dir.path().join("canary/20260101T000000Z-seed1001")).unwrap();
        let page = render(&rows, dir.path()).into_string();
        assert!(
            page.contains("Campaign <code>c2</code>"),
            "the newest campaign in detail"
        );
        let (new, known) = (
            page.find("no write within 30000 ms").expect("the new liveness failure"),
            page.find("n3 booted on a WAL").expect("the known boot failure"),
        );
        assert!(new < known, "new failure classes first");
        assert!(page.contains("<span class=\"c known\">known</span>"));
        assert!(
            page.contains("2 failure(s) in 1 new failure class(es)"),
            "classes, not rows"
        );
        assert!(page.contains("reproducible (1/1 failed the same way)"));
        assert!(page.contains("<code>faultline run canary --seed 1001</code>"));
        assert!(page.contains("<a href=\"canary/20260101T000000Z-seed1001/\">folder</a>"));
        assert!(page.contains("pruned"), "a row whose run folder is gone");
        let per_plan = &page[page.find("<h3>Per plan</h3>").unwrap()..page.find("<h3>Trend").unwrap()];
        assert!(
            per_plan.find("canary").unwrap() < per_plan.find("default").unwrap(),
            "failing plans first (canary 1 invalid, default 1 invalid of 2: more invalid first, then name)"
        );
        let trend = &page[page.find("<h3>Trend").unwrap()..page.find("<h3>Campaigns").unwrap()];
        assert!(
            trend.contains("<td class=\"t valid\">1/1</td><td class=\"t invalid\">1/2</td>"),
            "{trend}"
        );
        assert!(
            trend.contains("<td class=\"t invalid\">0/1</td><td class=\"t invalid\">0/1</td>"),
            "{trend}"
        );
        assert!(
            render(&[], dir.path()).into_string().is_empty(),
            "no seed database, no view"
        );
    }

    #[test]
    fn given_findings_over_two_campaigns_and_a_note_when_rendered_should_list_classes_most_severe_first() {
        use crate::triage::finding::tests::{iggy_panic_check, iggy_refusal_check, results, set_check};
        let dir = tempfile::tempdir().unwrap();
        let seed = |campaign: &str, at: &str, index: u64, checks: Vec<crate::results::CheckResult>| {
            let run = results("iggy", checks);
            let (check, line) = crate::seeds::failure_of(&run).unwrap();
            let mut row = row(campaign, at, "iggy-mixed", index, Some((&check, &line)));
            row.findings = triage::findings(&run);
            row
        };
        let rows = vec![
            seed("c1", "2026-01-01T00:00:01Z", 0, vec![iggy_panic_check("n1", 3, 5)]),
            seed(
                "c2",
                "2026-01-02T00:00:01Z",
                0,
                vec![set_check(&["e1"], &[]), iggy_refusal_check(77)],
            ),
            seed("c2", "2026-01-02T00:00:02Z", 1, vec![set_check(&["e2"], &[])]),
        ];
        let refusal_id = rows[1].findings[0].signature.id();
        std::fs::write(
            dir.path().join(triage::NOTES_FILE),
            format!("{refusal_id}: \"upstream <issue> 12\"\n"),
        )
        .unwrap();
        let page = render(&rows, dir.path()).into_string();
        let classes = &page
            [page.find("<h3>Failure classes</h3>").expect("a class table")..page.find("<h3>Failures</h3>").unwrap()];
        let at = |needle: &str| classes.find(needle).unwrap_or_else(|| panic!("{needle} in {classes}"));
        assert!(
            at("refused to boot on a clean disk") < at("stale reads"),
            "severity first"
        );
        assert!(at("stale reads") < at("log pattern"), "{classes}");
        assert!(
            classes.contains("upstream &lt;issue&gt; 12"),
            "the note, escaped: {classes}"
        );
        assert!(
            classes.contains("<span class=\"c gone\">gone</span>"),
            "the panic is gone: {classes}"
        );
        assert!(
            classes.contains("2 seed(s)"),
            "both stale seeds in one class: {classes}"
        );
        assert!(
            page.contains("2 failure(s) in 2 new failure class(es) (0 known, 1 gone)"),
            "classes, not rows: {page}"
        );
    }

    #[test]
    fn given_a_long_error_line_when_clipped_should_keep_whole_characters() {
        assert_eq!(clip("ab…cd", 3), "ab……");
        assert_eq!(clip("short", 10), "short");
    }

    #[test]
    fn given_seeds_whose_runs_have_coverage_when_rendered_should_show_each_plans_share_per_state() {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<SeedRow> = (0..4)
            .map(|i| row("c1", "2026-01-01T00:00:01Z", "lagging", i, None))
            .collect();
        for (i, row) in rows.iter().enumerate() {
            let mut coverage = faultline_workloads::coverage::coverage(&Default::default());
            coverage.states[0].reached = i < 3;
            let results = serde_json::json!({"schema_version": 1, "faultline_version": "t", "verdict": "valid",
                "reason": "", "plan": "lagging", "system": "s", "seed": i, "started_at": "", "duration_ms": 0,
                "store_dir": "", "repro": "", "checks": [], "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0,
                "open": 0, "nemesis": 0, "lifecycle": 0}, "coverage": coverage});
            let run_dir = dir.path().join(row.store_dir.as_deref().unwrap());
            std::fs::create_dir_all(&run_dir).unwrap();
            std::fs::write(run_dir.join("results.json"), results.to_string()).unwrap();
        }
        let page = render(&rows, dir.path()).into_string();
        assert!(
            page.contains("title=\"primary-killed-while-backup-lagged 3/4\">3/4</td>"),
            "{page}"
        );
        assert!(page.contains("title=\"majority-down 0/4\">0/4</td>"), "{page}");
    }

    #[test]
    fn given_a_long_campaign_id_when_shortened_should_keep_its_start_and_its_end() {
        assert_eq!(short("s6401"), "s6401");
        let shown = short("nightly-reference-mixed-2026-12-07");
        assert!(
            shown.starts_with("nightly-ref") && shown.ends_with("26-12-07"),
            "{shown}"
        );
        assert_eq!(shown.chars().count(), 20);
    }
}
