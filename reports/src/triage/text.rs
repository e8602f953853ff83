//! The class table on a terminal (`faultline triage`, the end of `faultline campaign`): one row per class, most
//! severe first, then what it is, the commands that rerun its seeds and the note a person left for it.

use super::classes::{Class, Triage};
use crate::seeds::FailureClass;
use std::fmt::Write;

/// Repro commands listed per class (the JSON output and the store index list every seed).
const REPRO_SHOWN_MAX: usize = 3;

/// The whole table under a headline line.
pub fn render_text(triage: &Triage) -> String {
    let mut out = format!(
        "faultline triage: campaign {}: {} seed(s), {} failing; {} class(es): {} new, {} known, {} gone\n",
        triage.campaign,
        triage.seeds,
        triage.failing,
        triage.classes.len(),
        triage.count(FailureClass::New),
        triage.count(FailureClass::Known),
        triage.count(FailureClass::Gone),
    );
    if triage.classes.is_empty() {
        out.push_str("  no failure classes\n");
        return out;
    }
    let width =
        |f: &dyn Fn(&Class) -> usize, header: &str| triage.classes.iter().map(f).max().unwrap_or(0).max(header.len());
    let first_w = width(&|c| c.first_seen.campaign.len(), "first seen");
    let last_w = width(&|c| c.last_seen.campaign.len(), "last seen");
    let row = |cells: [&str; 7]| {
        let [status, severity, id, seeds, reruns, first, last] = cells;
        let line =
            format!("  {status:<6} {severity:<21} {id:<9} {seeds:>5} {reruns:>7} {first:<first_w$} {last:<last_w$}");
        format!("{}\n", line.trim_end())
    };
    out.push_str(&row([
        "status",
        "severity",
        "class",
        "seeds",
        "reruns",
        "first seen",
        "last seen",
    ]));
    for class in &triage.classes {
        let reruns = match class.reruns.runs {
            0 => "-".to_string(),
            runs => format!("{}/{runs}", class.reruns.reproduced),
        };
        out.push_str(&row([
            &class.status.to_string(),
            class.severity.label(),
            &class.id,
            &seeds_cell(class),
            &reruns,
            &class.first_seen.campaign,
            &class.last_seen.campaign,
        ]));
        let _ = writeln!(out, "         {}", class.title);
        for consequence in &class.follows {
            let _ = writeln!(out, "         and what followed: {consequence}");
        }
        let shown = class.seeds.len().min(REPRO_SHOWN_MAX);
        for seed in &class.seeds[..shown] {
            let _ = writeln!(out, "         repro: {}", seed.repro);
        }
        if shown < class.seeds.len() {
            let _ = writeln!(out, "         ({} more seed(s))", class.seeds.len() - shown);
        }
        if let Some(note) = &class.note {
            let _ = writeln!(out, "         note: {note}");
        }
    }
    out
}

/// Seeds of the campaign that show it; `-` for a gone class (its repro lines are the last campaign's seeds).
fn seeds_cell(class: &Class) -> String {
    match class.status {
        FailureClass::Gone => "-".to_string(),
        _ => class.seeds.len().to_string(),
    }
}
