//! The coverage section: which named states the run reached (see `faultline_workloads::coverage` for their
//! definitions), when the plan had triggers, what each one did, and the scheduled faults that did nothing.

use super::escape::Shown;
use faultline_workloads::coverage::{Coverage, SkippedFault, StateCoverage, TriggerCoverage};
use maud::{html, Markup};

/// The section's body. `recomputed` says the coverage was computed from the history here because the run's
/// results.json predates coverage.
/// Times are shown on the phase clock that starts at `phase_start_ms` (ms since the run started), as plans count.
pub fn render(coverage: &Coverage, recomputed: bool, phase_start_ms: f64) -> Markup {
    let reached = coverage.states.iter().filter(|s| s.reached).count();
    html! {
        p class="hint" {
            (reached) " of " (coverage.states.len()) " named states reached"
            @if recomputed { " (computed from the history: this run's results.json predates coverage)" }
            "."
        }
        table class="inner coverage" {
            thead { tr { th { "state" } th { "reached" } th { "times" } th { "first at" } } }
            tbody { @for state in &coverage.states { (state_row(state, phase_start_ms)) } }
        }
        @if !coverage.triggers.is_empty() {
            table class="inner triggers" {
                thead { tr {
                    th { "trigger" } th { "condition → action" } th { "fired" } th { "declined" } th { "skipped" }
                } }
                tbody { @for trigger in &coverage.triggers { (trigger_row(trigger)) } }
            }
        }
        @if !coverage.skipped.is_empty() {
            p class="hint" {
                (coverage.skipped.len()) " scheduled fault(s) did nothing: the run did not test what the plan says there."
            }
            table class="inner skipped" {
                thead { tr { th { "fault" } th { "due at" } th { "skipped because" } } }
                tbody { @for skipped in &coverage.skipped { (skipped_row(skipped, phase_start_ms)) } }
            }
        }
    }
}

fn skipped_row(skipped: &SkippedFault, phase_start_ms: f64) -> Markup {
    html! {
        tr {
            td {
                (Shown(&skipped.fault))
                @if let Some(id) = skipped.fault_id { " (fault " (id) ")" }
            }
            td { (format!("{:.1} s", (skipped.at_ms as f64 - phase_start_ms) / 1000.0)) }
            td { (Shown(&skipped.reason)) }
        }
    }
}

fn state_row(state: &StateCoverage, phase_start_ms: f64) -> Markup {
    html! {
        tr {
            td title=(Shown(&state.description)) { code { (Shown(&state.name)) } }
            td {
                @if state.reached { span class="tag ok" { "✓ reached" } } @else { span class="tag" { "not reached" } }
            }
            td { (state.count) }
            td {
                @match state.first_ms {
                    Some(ms) => (format!("{:.1} s", (ms as f64 - phase_start_ms) / 1000.0)),
                    None => "–",
                }
            }
        }
    }
}

fn trigger_row(trigger: &TriggerCoverage) -> Markup {
    html! {
        tr {
            td { "#" (trigger.trigger) }
            td { (Shown(&trigger.condition)) " → " (Shown(&trigger.action)) }
            td { (trigger.fired) }
            td { (trigger.declined) }
            td { (trigger.skipped) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coverage() -> Coverage {
        Coverage {
            states: vec![
                StateCoverage {
                    name: "majority-down".into(),
                    description: "a majority of the nodes were down".into(),
                    reached: true,
                    count: 2,
                    first_ms: Some(1500),
                },
                StateCoverage {
                    name: "all-lost-power".into(),
                    description: "every node lost power".into(),
                    reached: false,
                    count: 0,
                    first_ms: None,
                },
            ],
            triggers: vec![TriggerCoverage {
                trigger: 0,
                condition: "<lagging>".into(),
                action: "kill".into(),
                fired: 3,
                declined: 1,
                skipped: 2,
            }],
            skipped: vec![SkippedFault {
                fault_id: Some(4),
                fault: "partition isolate-primary".into(),
                at_ms: 7300,
                reason: "isolate-primary: no primary known".into(),
            }],
        }
    }

    #[test]
    fn given_a_coverage_when_rendered_should_show_each_state_and_trigger_escaped() {
        let html = render(&coverage(), false, 0.0).into_string();
        assert!(html.contains("1 of 2 named states reached."), "{html}");
        assert!(html.contains("<code>majority-down</code>"));
        assert!(html.contains("✓ reached") && html.contains("not reached"));
        assert!(html.contains("1.5 s"));
        assert!(html.contains("&lt;lagging&gt; → kill"), "{html}");
        assert!(!html.contains("<lagging>"));
        assert!(html.contains("<td>3</td><td>1</td><td>2</td>"), "{html}");
    }

    #[test]
    fn given_a_skipped_fault_when_rendered_should_list_it_with_when_and_why() {
        let html = render(&coverage(), false, 0.0).into_string();
        assert!(html.contains("1 scheduled fault(s) did nothing"), "{html}");
        assert!(
            html.contains(
                "<td>partition isolate-primary (fault 4)</td><td>7.3 s</td><td>isolate-primary: no primary known</td>"
            ),
            "{html}"
        );
        let mut none = coverage();
        none.skipped.clear();
        assert!(!render(&none, false, 0.0).into_string().contains("did nothing"));
    }

    #[test]
    fn given_no_triggers_when_rendered_should_draw_no_trigger_table() {
        let mut without = coverage();
        without.triggers.clear();
        assert!(!render(&without, true, 0.0).into_string().contains("triggers"));
        assert!(render(&without, true, 0.0).into_string().contains("predates coverage"));
    }
}
