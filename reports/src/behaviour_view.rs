//! The behaviour view of `store/index.html`: for every set of plans campaigns ran, the cumulative distinct behaviours
//! of each campaign over its runs and over wall time (two inline SVG charts, guided campaigns solid, uniform ones
//! dashed), and a table with each campaign's numbers at the run count they all reached, so guided and uniform are
//! compared after the same number of runs. Drawn from the campaigns' behaviour logs ([`crate::explored`]) alone.
//!
//! How to read it: a curve that keeps rising is still finding what no earlier run did; one that flattens has
//! saturated what its search reaches. Two curves are compared at the same x (the table's "at N runs" column does it
//! in numbers): a guided campaign above the uniform ones found more distinct behaviours with the same runs.

use crate::explored::{all_logs, ExploredRun, Mode};
use maud::{html, Markup};
use std::collections::BTreeMap;
use std::path::Path;

/// Chart size, px.
const WIDTH_PX: f64 = 460.0;
const HEIGHT_PX: f64 = 220.0;
/// Margins for the axes' labels, px.
const LEFT_PX: f64 = 54.0;
const BOTTOM_PX: f64 = 28.0;
/// Campaigns drawn per plan set (the newest).
const CAMPAIGNS_PER_CHART_MAX: usize = 12;
/// Line colours, one per campaign in a chart.
const COLOURS: [&str; 6] = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

/// One campaign's curve.
struct Curve<'a> {
    id: &'a str,
    mode: Mode,
    runs: &'a [ExploredRun],
}

impl Curve<'_> {
    /// (runs, cumulative distinct) after each run, in the order runs finished, shards joined.
    fn over_runs(&self) -> Vec<(f64, f64)> {
        let mut seen = std::collections::HashSet::new();
        self.runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                seen.extend(run.new.iter().copied());
                ((i + 1) as f64, seen.len() as f64)
            })
            .collect()
    }

    /// (hours since the campaign started, cumulative distinct) after each run.
    fn over_time(&self) -> Vec<(f64, f64)> {
        self.over_runs()
            .into_iter()
            .zip(self.runs)
            .map(|((_, y), run)| (run.elapsed_ms as f64 / 3_600_000.0, y))
            .collect()
    }

    fn at_runs(&self, n: usize) -> Option<u64> {
        self.over_runs().get(n.checked_sub(1)?).map(|(_, y)| *y as u64)
    }

    /// Distinct behaviours by kind after `n` runs: the sum of the runs' `new_by_kind` (each new behaviour is new to
    /// the campaign once). `None` when a run has no counts by kind (an older log) or the campaign is sharded (a
    /// behaviour new to two shards is one behaviour, which sums of counts cannot tell).
    fn by_kind_at_runs(&self, n: usize) -> Option<BTreeMap<&str, u64>> {
        let runs = self.runs.get(..n)?;
        let counted = |r: &ExploredRun| r.shard.is_none() && r.new_by_kind.values().sum::<u64>() == r.new.len() as u64;
        if !runs.iter().all(counted) {
            return None;
        }
        let mut by_kind = BTreeMap::new();
        for run in runs {
            for (kind, count) in &run.new_by_kind {
                *by_kind.entry(kind.as_str()).or_insert(0) += count;
            }
        }
        Some(by_kind)
    }
}

/// Guided against uniform kind by kind after `common` runs (means over campaigns), e.g. `context-line 1.22x (6728 /
/// 5496)`, when every campaign has counts by kind: shows which behaviours the guide steers toward and which grow
/// alike whatever a campaign runs.
fn kind_ratios(curves: &[Curve], common: usize) -> Vec<String> {
    let mut sums: BTreeMap<(&str, bool), (u64, u64)> = BTreeMap::new();
    let mut campaigns = [0u64; 2];
    for curve in curves {
        let Some(by_kind) = curve.by_kind_at_runs(common) else {
            return Vec::new();
        };
        let guided = curve.mode == Mode::Guided;
        campaigns[usize::from(guided)] += 1;
        for (kind, count) in by_kind {
            sums.entry((kind, guided)).or_default().0 += count;
        }
    }
    if campaigns.contains(&0) {
        return Vec::new();
    }
    let kinds: std::collections::BTreeSet<&str> = sums.keys().map(|(kind, _)| *kind).collect();
    kinds
        .into_iter()
        .filter_map(|kind| {
            let mean = |guided: bool| {
                sums.get(&(kind, guided)).map_or(0, |s| s.0) as f64 / campaigns[usize::from(guided)] as f64
            };
            let (g, u) = (mean(true), mean(false));
            (u > 0.0).then(|| format!("{kind} {:.2}x ({g:.0} / {u:.0})", g / u))
        })
        .collect()
}

/// The view, or nothing when no campaign recorded behaviours.
pub(crate) fn render(store_root: &Path) -> Markup {
    let logs = all_logs(store_root);
    // Plan set -> campaigns, oldest first (by their first run).
    let mut groups: BTreeMap<String, Vec<Curve>> = BTreeMap::new();
    for (id, runs) in &logs {
        let Some(first) = runs.first() else { continue };
        let mut plans: Vec<&str> = runs.iter().map(|r| r.plan.as_str()).collect();
        plans.sort_unstable();
        plans.dedup();
        groups.entry(plans.join(" + ")).or_default().push(Curve {
            id,
            mode: first.mode,
            runs,
        });
    }
    if groups.is_empty() {
        return html! {};
    }
    html! {
        section #behaviours {
            h2 { "Behaviours found" }
            p.note { "Cumulative distinct behaviours of each campaign (what no earlier run of it had shown: log "
                "templates, cluster transitions and client outcomes in their fault contexts, cross-node template pairs, "
                "findings), over runs and over wall time. Guided campaigns are solid, uniform ones dashed; compare curves "
                "at the same x. A rising curve still finds new behaviours; a flat one has saturated what its search reaches." }
            @for (plans, curves) in &mut groups {
                (render_group(plans, curves))
            }
        }
    }
}

fn render_group(plans: &str, curves: &mut Vec<Curve>) -> Markup {
    curves.sort_by(|a, b| a.runs[0].finished_at.cmp(&b.runs[0].finished_at));
    let skip = curves.len().saturating_sub(CAMPAIGNS_PER_CHART_MAX);
    let curves = &curves[skip..];
    let common = curves.iter().map(|c| c.runs.len()).min().unwrap_or(0);
    let mean_at = |mode: Mode| -> Option<f64> {
        let values: Vec<u64> = curves
            .iter()
            .filter(|c| c.mode == mode)
            .filter_map(|c| c.at_runs(common))
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<u64>() as f64 / values.len() as f64)
    };
    let ratio = match (mean_at(Mode::Guided), mean_at(Mode::Uniform)) {
        (Some(g), Some(u)) if u > 0.0 => Some(g / u),
        _ => None,
    };
    let by_kind = kind_ratios(curves, common);
    let over_runs: Vec<Vec<(f64, f64)>> = curves.iter().map(Curve::over_runs).collect();
    let over_time: Vec<Vec<(f64, f64)>> = curves.iter().map(Curve::over_time).collect();
    html! {
        h3 { (plans) }
        div.charts {
            (chart(curves, &over_runs, "runs"))
            (chart(curves, &over_time, "hours"))
        }
        table {
            tr { th { "campaign" } th { "mode" } th { "runs" } th { "distinct" } th { (format!("at {common} runs")) }
                 th { "per hour" } }
            @for (i, curve) in curves.iter().enumerate() {
                @let last = curve.runs.last().expect("a curve has runs");
                @let total = over_runs[i].last().map_or(0.0, |p| p.1);
                @let hours = last.elapsed_ms as f64 / 3_600_000.0;
                tr {
                    td { span style=(format!("color:{}", COLOURS[i % COLOURS.len()])) { "■ " } code { (curve.id) } }
                    td { (curve.mode.as_str()) }
                    td { (curve.runs.len()) }
                    td { (total) }
                    td { (curve.at_runs(common).map_or("-".to_string(), |n| n.to_string())) }
                    td { (if hours > 0.0 { format!("{:.0}", total / hours) } else { "-".to_string() }) }
                }
            }
        }
        @if let Some(ratio) = ratio {
            p { "After " (common) " runs, guided campaigns found " b { (format!("{ratio:.2}x")) }
                " the distinct behaviours of uniform ones (means over campaigns)." }
        }
        @if ratio.is_some() && !by_kind.is_empty() {
            p.note { "By kind, guided against uniform at " (common) " runs (means): " (by_kind.join(", "))
                ". A kind near 1x grows alike whatever the campaign runs." }
        }
    }
}

/// One chart: a polyline per curve, axes from 0 to the largest value.
fn chart(curves: &[Curve], points: &[Vec<(f64, f64)>], x_label: &str) -> Markup {
    let x_max = points.iter().flatten().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let y_max = points.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0);
    let plot_w = WIDTH_PX - LEFT_PX - 10.0;
    let plot_h = HEIGHT_PX - BOTTOM_PX - 10.0;
    let at = |(x, y): (f64, f64)| (LEFT_PX + x / x_max * plot_w, 10.0 + plot_h - y / y_max * plot_h);
    let x_text = if x_label == "hours" {
        format!("{x_max:.2}")
    } else {
        format!("{x_max:.0}")
    };
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(WIDTH_PX) height=(HEIGHT_PX) role="img"
            aria-label=(format!("cumulative distinct behaviours over {x_label}")) {
            line x1=(LEFT_PX) y1=(10) x2=(LEFT_PX) y2=(10.0 + plot_h) stroke="#9ca3af" {}
            line x1=(LEFT_PX) y1=(10.0 + plot_h) x2=(LEFT_PX + plot_w) y2=(10.0 + plot_h) stroke="#9ca3af" {}
            text x=(LEFT_PX - 4.0) y=(14) text-anchor="end" font-size="10" { (y_max) }
            text x=(LEFT_PX - 4.0) y=(10.0 + plot_h) text-anchor="end" font-size="10" { "0" }
            text x=(LEFT_PX + plot_w) y=(HEIGHT_PX - 12.0) text-anchor="end" font-size="10" { (x_text) }
            text x=(LEFT_PX + plot_w / 2.0) y=(HEIGHT_PX - 4.0) text-anchor="middle" font-size="11" { (x_label) }
            @for (i, (curve, pts)) in curves.iter().zip(points).enumerate() {
                @let path: Vec<String> = std::iter::once((0.0, 0.0)).chain(pts.iter().copied())
                    .map(|p| { let (x, y) = at(p); format!("{x:.1},{y:.1}") }).collect();
                polyline fill="none" stroke=(COLOURS[i % COLOURS.len()]) stroke-width="1.6"
                    stroke-dasharray=[(curve.mode == Mode::Uniform).then_some("5,3")] points=(path.join(" ")) {
                    title { (curve.id) " (" (curve.mode.as_str()) ")" }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explored::{append, log_path};
    use crate::results::Verdict;
    use faultline_workloads::behaviour::BehaviourId;

    fn run(campaign: &str, mode: Mode, run: u64, new: std::ops::Range<u64>) -> ExploredRun {
        ExploredRun {
            campaign: campaign.into(),
            shard: None,
            run,
            mode,
            plan: "reference-mixed".into(),
            plan_source: "reference-mixed".into(),
            seed: run,
            store_dir: None,
            verdict: Verdict::Valid,
            complete: true,
            distinct: 0,
            new_by_kind: [("template".to_string(), new.end - new.start)].into_iter().collect(),
            new: new.map(BehaviourId).collect(),
            cumulative: 0,
            elapsed_ms: (run + 1) * 1_800_000,
            wall_ms: 0,
            cpu_ms: None,
            choice: None,
            finished_at: format!(
                "2026-12-01T00:00:{:02}Z",
                run + if mode == Mode::Guided { 30 } else { 0 }
            ),
        }
    }

    #[test]
    fn given_a_guided_and_a_uniform_campaign_when_drawn_should_plot_both_and_compare_them_at_the_common_run_count() {
        let dir = tempfile::tempdir().unwrap();
        for (i, new) in [0..100, 100..150, 150..160].into_iter().enumerate() {
            append(
                &log_path(dir.path(), "u1", None),
                &run("u1", Mode::Uniform, i as u64, new),
            )
            .unwrap();
        }
        for (i, new) in [1000..1100, 1100..1200].into_iter().enumerate() {
            append(
                &log_path(dir.path(), "g1", None),
                &run("g1", Mode::Guided, i as u64, new),
            )
            .unwrap();
        }
        let page = render(dir.path()).into_string();
        assert_eq!(page.matches("<polyline").count(), 4, "two campaigns, two charts");
        assert_eq!(page.matches("stroke-dasharray=\"5,3\"").count(), 2, "uniform is dashed");
        assert!(page.contains("at 2 runs"), "{page}");
        // At 2 runs: guided 200, uniform 150.
        assert!(page.contains("<b>1.33x</b>"), "{page}");
        assert!(page.contains("<td>160</td>"), "uniform's total after 3 runs");
        assert!(page.contains("template 1.33x (200 / 150)"), "{page}");
        assert!(render(&dir.path().join("nothing")).into_string().is_empty());
    }
}
