//! The behaviours section: how many distinct behaviours the run showed, by kind (see
//! `faultline_workloads::behaviour` for what a behaviour is), and, for a run of a campaign that records them, how
//! many no earlier run of the campaign had shown, with the new log line templates as text.

use super::escape::Shown;
use faultline_workloads::behaviour::{BehaviourKind, BehaviourSummary};
use maud::{html, Markup};

/// The section's body.
pub fn render(summary: &BehaviourSummary) -> Markup {
    html! {
        @if summary.distinct == 0 {
            p class="hint" { "No behaviours recorded: this run's results.json predates them (run `faultline analyze` on it)." }
        } @else {
            p class="hint" {
                (summary.distinct) " distinct behaviours"
                @if summary.dropped > 0 { " (and " (summary.dropped) " more past their kind's budget, not kept)" }
                "; the list is in behaviours.json."
                @if let Some(novelty) = &summary.novelty {
                    " " b { (novelty.new) " new" } " to campaign " code { (Shown(&novelty.campaign)) }
                    " (run " (novelty.run) ")."
                }
            }
            table class="inner behaviours" {
                thead { tr { th { "kind" } th { "distinct" } @if summary.novelty.is_some() { th { "new to the campaign" } } } }
                tbody {
                    @for kind in BehaviourKind::ALL {
                        @let name = kind.as_str();
                        tr {
                            td { code { (name) } }
                            td { (summary.by_kind.get(name).copied().unwrap_or(0)) }
                            @if let Some(novelty) = &summary.novelty {
                                td { (novelty.new_by_kind.get(name).copied().unwrap_or(0)) }
                            }
                        }
                    }
                }
            }
            @if let Some(novelty) = summary.novelty.as_ref().filter(|n| !n.new_templates.is_empty()) {
                p { "Log line templates no earlier run of the campaign logged:" }
                ul class="templates" { @for template in &novelty.new_templates { li { code { (Shown(template)) } } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::behaviour::Novelty;
    use std::collections::BTreeMap;

    #[test]
    fn given_a_run_of_a_campaign_when_rendered_should_count_kinds_and_list_the_new_templates_as_text() {
        let summary = BehaviourSummary {
            distinct: 12,
            by_kind: BTreeMap::from([("template".to_string(), 5), ("pair".to_string(), 7)]),
            dropped: 0,
            novelty: Some(Novelty {
                campaign: "s7".into(),
                run: 3,
                new: 4,
                new_by_kind: BTreeMap::from([("template".to_string(), 1), ("pair".to_string(), 3)]),
                new_templates: vec!["sync source sent an entry off its announced chain <op=N>".into()],
            }),
        };
        let page = render(&summary).into_string();
        assert!(page.contains("12 distinct behaviours"), "{page}");
        assert!(
            page.contains("<b>4 new</b> to campaign <code>s7</code> (run 3)"),
            "{page}"
        );
        assert!(
            page.contains("<code>sync source sent an entry off its announced chain &lt;op=N&gt;</code>"),
            "{page}"
        );
        let old = render(&BehaviourSummary::default()).into_string();
        assert!(old.contains("predates them"), "{old}");
    }
}
