//! The campaign view at the top of `store/index.html`, drawn from `store/seeds.jsonl` alone: the newest campaign's
//! failures (new before known, each with its reproducibility and repro command), its pass/fail counts per plan
//! (failing plans first), the trend of every plan across campaigns, and a line per campaign.

use crate::html::escape_html as html;
use crate::results::{shout, Verdict};
use crate::seeds::{campaign_order, classify, FailureClass, FailureKey, SeedRow};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// Campaigns the trend table shows (the newest ones).
const TREND_CAMPAIGNS_MAX: usize = 12;
/// Failure rows the view lists (a campaign with more lists the first ones: new classes first).
const FAILURES_SHOWN_MAX: usize = 200;
/// Characters of a first error line shown in a cell (the whole line is its title).
const ERROR_SHOWN_CHARS_MAX: usize = 160;

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
pub(crate) fn render(rows: &[SeedRow], store_root: &Path) -> String {
    let order = campaign_order(rows);
    let Some(newest) = order.last() else {
        return String::new();
    };
    let classes = classify(rows);
    let mut out = String::from("<section id=\"campaigns\">");
    let newest_rows: Vec<(&SeedRow, Option<FailureClass>)> = rows
        .iter()
        .zip(classes.iter().copied())
        .filter(|(row, _)| &row.campaign == newest)
        .collect();
    render_newest(&mut out, newest, &newest_rows, store_root);
    render_trend(&mut out, rows, &order);
    render_campaign_list(&mut out, rows, &classes, &order);
    out.push_str("</section>");
    out
}

fn render_newest(out: &mut String, id: &str, rows: &[(&SeedRow, Option<FailureClass>)], store_root: &Path) {
    let mut tally = Tally::default();
    for (row, _) in rows {
        tally.add(row.verdict);
    }
    let failures = rows.iter().filter(|(_, c)| c.is_some()).count();
    let new_classes: BTreeSet<FailureKey> = rows
        .iter()
        .filter(|(_, c)| *c == Some(FailureClass::New))
        .filter_map(|(r, _)| r.failure_key())
        .collect();
    let new = new_classes.len();
    let mut shards: Vec<&str> = rows.iter().filter_map(|(r, _)| r.shard.as_deref()).collect();
    shards.sort_unstable();
    shards.dedup();
    let mut builds: Vec<String> = rows.iter().map(|(r, _)| r.build.label()).collect();
    builds.sort_unstable();
    builds.dedup();
    let _ = write!(
        out,
        "<h2>Campaign <code>{}</code></h2><p class=\"summary\">{} seed(s): <span class=\"v valid\">{} valid</span> \
         <span class=\"v invalid\">{} invalid</span> <span class=\"v unknown\">{} unknown</span> · {failures} \
         failure(s) in {new} new failure class(es) · build {}{}</p>",
        html(id),
        tally.runs(),
        tally.valid,
        tally.invalid,
        tally.unknown,
        html(&builds.join(", ")),
        if shards.is_empty() {
            String::new()
        } else {
            format!(" · shards {}", html(&shards.join(", ")))
        }
    );
    render_failures(out, rows, store_root);
    render_plan_counts(out, rows);
}

fn render_failures(out: &mut String, rows: &[(&SeedRow, Option<FailureClass>)], store_root: &Path) {
    let mut failures: Vec<&(&SeedRow, Option<FailureClass>)> = rows.iter().filter(|(_, c)| c.is_some()).collect();
    if failures.is_empty() {
        out.push_str("<p>No failures.</p>");
        return;
    }
    // New classes first, then invalid before unknown, then by plan and seed order.
    failures.sort_by_key(|(row, class)| {
        (
            *class != Some(FailureClass::New),
            row.verdict != Verdict::Invalid,
            row.plan.clone(),
            row.seed_index,
            row.nodes,
        )
    });
    out.push_str(
        "<h3>Failures</h3><p class=\"note\">Real processes are not deterministic: a seed fixes the workload and the \
         fault schedule, not timing, so a failing seed is rerun. <b>reproducible</b>: a rerun failed the same check \
         again; <b>flaky</b>: no rerun did. <b>new</b>: no earlier campaign failed this plan's check with the same \
         first error line (numbers, hex and paths ignored).</p><table class=\"failures\"><thead><tr><th>verdict</th>\
         <th>plan</th><th>seed</th><th>check</th><th>class</th><th>reruns</th><th>first error</th><th>repro</th>\
         <th>report</th></tr></thead><tbody>",
    );
    let shown = failures.len().min(FAILURES_SHOWN_MAX);
    for (row, class) in &failures[..shown] {
        let class = class.expect("failures have a class");
        let error = row.first_error.as_deref().unwrap_or("");
        let _ = write!(
            out,
            "<tr class=\"{v}\"><td><span class=\"v {v}\">{}</span></td><td>{}</td><td>{}{}</td><td>{}</td>\
             <td><span class=\"c {class}\">{class}</span></td><td>{}</td><td class=\"reason\" title=\"{}\">{}</td>\
             <td><code>{}</code></td><td>{}</td></tr>",
            shout(row.verdict),
            html(&row.plan),
            row.seed,
            row.nodes.map(|n| format!(" ({n} nodes)")).unwrap_or_default(),
            html(&row.checks_text()),
            html(&reruns_text(row)),
            html(error),
            html(&clip(error, ERROR_SHOWN_CHARS_MAX)),
            html(&row.repro),
            run_link(row.store_dir.as_deref(), store_root),
            v = row.verdict,
        );
    }
    out.push_str("</tbody></table>");
    if shown < failures.len() {
        let _ = write!(
            out,
            "<p class=\"note\">{} more failure(s) not listed; every seed is in seeds.jsonl.</p>",
            failures.len() - shown
        );
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

fn run_link(store_dir: Option<&str>, store_root: &Path) -> String {
    match store_dir {
        Some(dir) if store_root.join(dir).join("report.html").is_file() => {
            format!("<a href=\"{}/report.html\">report</a>", crate::index::href(dir))
        }
        Some(dir) if store_root.join(dir).is_dir() => format!("<a href=\"{}/\">folder</a>", crate::index::href(dir)),
        Some(_) => "pruned".into(),
        None => "-".into(),
    }
}

fn render_plan_counts(out: &mut String, rows: &[(&SeedRow, Option<FailureClass>)]) {
    let mut plans: BTreeMap<&str, Tally> = BTreeMap::new();
    for (row, _) in rows {
        plans.entry(&row.plan).or_default().add(row.verdict);
    }
    let mut plans: Vec<(&str, Tally)> = plans.into_iter().collect();
    plans.sort_by_key(|(name, t)| (Reverse(t.invalid), Reverse(t.unknown), *name));
    out.push_str(
        "<h3>Per plan</h3><table class=\"plans\"><thead><tr><th>plan</th><th>seeds</th><th>valid</th><th>invalid</th>\
         <th>unknown</th><th>pass rate</th></tr></thead><tbody>",
    );
    for (name, t) in plans {
        let _ = write!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td></tr>",
            t.class(),
            html(name),
            t.runs(),
            t.valid,
            t.invalid,
            t.unknown,
            100.0 * t.valid as f64 / t.runs().max(1) as f64
        );
    }
    out.push_str("</tbody></table>");
}

fn render_trend(out: &mut String, rows: &[SeedRow], order: &[String]) {
    let shown = &order[order.len().saturating_sub(TREND_CAMPAIGNS_MAX)..];
    let mut cells: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    for row in rows {
        cells.entry((&row.plan, &row.campaign)).or_default().add(row.verdict);
    }
    let mut plans: Vec<&str> = rows.iter().map(|r| r.plan.as_str()).collect();
    plans.sort_unstable();
    plans.dedup();
    let _ = write!(
        out,
        "<h3>Trend per plan</h3><p class=\"note\">valid/seeds per campaign, oldest to newest (the last {} \
         campaigns).</p><table class=\"trend\"><thead><tr><th>plan</th>",
        shown.len()
    );
    for id in shown {
        let _ = write!(out, "<th title=\"{}\">{}</th>", html(id), html(&short(id)));
    }
    out.push_str("</tr></thead><tbody>");
    for plan in plans {
        let _ = write!(out, "<tr><td>{}</td>", html(plan));
        for id in shown {
            match cells.get(&(plan, id.as_str())) {
                Some(t) => {
                    let _ = write!(out, "<td class=\"t {}\">{}/{}</td>", t.class(), t.valid, t.runs());
                }
                None => out.push_str("<td class=\"t none\">·</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

/// The last 14 characters of a campaign id (trend headers stay narrow; the full id is the title).
fn short(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    chars[chars.len().saturating_sub(14)..].iter().collect()
}

fn render_campaign_list(out: &mut String, rows: &[SeedRow], classes: &[Option<FailureClass>], order: &[String]) {
    out.push_str(
        "<h3>Campaigns</h3><table class=\"campaign-list\"><thead><tr><th>campaign</th><th>kind</th><th>first result \
         (UTC)</th><th>seeds</th><th>valid</th><th>invalid</th><th>unknown</th><th>new failures</th></tr></thead>\
         <tbody>",
    );
    for id in order.iter().rev() {
        let mut tally = Tally::default();
        let mut new = 0;
        let mut first = None;
        let mut kind = None;
        for (row, class) in rows.iter().zip(classes) {
            if &row.campaign != id {
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
        let _ = write!(
            out,
            "<tr class=\"{}\"><td><code>{}</code></td><td>{kind}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{new}</td></tr>",
            tally.class(),
            html(id),
            html(first.unwrap_or("")),
            tally.runs(),
            tally.valid,
            tally.invalid,
            tally.unknown,
        );
    }
    out.push_str("</tbody></table>");
}

/// Styles of the campaign view (appended to the index's).
pub(crate) const CAMPAIGN_CSS: &str = "#campaigns{padding:4px 24px 16px;background:#fff;border-bottom:2px solid \
#e5e7eb}#campaigns h2{font-size:17px;margin:14px 0 4px}#campaigns h3{font-size:14px;margin:14px 0 6px}\
#campaigns table{width:auto;min-width:50%}.note{color:#6b7280;font-size:12px;max-width:900px}\
.c{display:inline-block;padding:0 7px;border-radius:9px;font-size:11px;font-weight:700}.c.new{background:#fde68a}\
.c.known{background:#e5e7eb}td.t{text-align:center;font-variant-numeric:tabular-nums}td.t.valid{background:#dcfce7}\
td.t.invalid{background:#fee2e2;font-weight:700}td.t.unknown{background:#fef3c7}td.t.none{color:#9ca3af}\
table.failures code{font-size:12px;white-space:nowrap}table.trend th{text-transform:none}";

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
        let page = render(&rows, dir.path());
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
        assert!(render(&[], dir.path()).is_empty(), "no seed database, no view");
    }

    #[test]
    fn given_a_long_error_line_when_clipped_should_keep_whole_characters() {
        assert_eq!(clip("ab…cd", 3), "ab……");
        assert_eq!(clip("short", 10), "short");
    }
}
