//! The durability check's evidence: per node, each stop and the boot after it, with what the node had durably reached
//! before the stop, what it booted with, and the check's judgement of the difference. Read here once, drawn twice:
//! as a table in the checks section and as drops on the timeline's observation lanes (see [`super::observations`]).

use super::escape::Shown;
use faultline_workloads::position::Position;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;

/// Restarts listed per node in the table; every restart is still drawn on the timeline.
const RESTARTS_SHOWN_PER_NODE: usize = 50;

/// One stop of a node and the boot after it, as the durability check judged it.
#[derive(Debug, Clone, Deserialize)]
pub struct Restart {
    /// When the node was stopped, ns since the run started.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// `kill`, `power-loss`, `restart-all`, `crashed`, `refused`.
    #[serde(default)]
    pub cause: String,
    /// The durable progress the node had reached before the stop (a number, or a vector clock).
    #[serde(default)]
    pub durable: Option<Position>,
    /// When the node booted, ns since the run started.
    #[serde(default)]
    pub boot_ns: Option<u64>,
    /// The progress the node booted with.
    #[serde(default)]
    pub recovered: Option<Position>,
    /// `durable - recovered` when the node booted behind what it had persisted.
    #[serde(default)]
    pub forgotten: Option<u64>,
    /// `forgotten`, `ok`, `truncated-after-surgery`, `booted-on-damage`, `damage-truncated`, `power-loss-allowed`,
    /// `wiped`.
    #[serde(default)]
    pub judgement: String,
    /// The disk surgery recorded on the node between the stop and the boot, if any.
    #[serde(default)]
    pub surgery: Value,
    /// The check's sentence about this restart.
    #[serde(default)]
    pub text: String,
}

impl Restart {
    /// `bad`, `warn` or `info`: how the report marks this restart's judgement.
    pub fn severity(&self) -> &'static str {
        match self.judgement.as_str() {
            "forgotten" | "booted-on-damage" => "bad",
            "damage-truncated" => "warn",
            "ok" => "ok",
            _ => "info",
        }
    }
}

/// The restarts of a durability check's details, as `(node, restart)` in node order; empty when the details do not
/// have the expected shape (an older or newer check), so the report falls back to showing them raw.
pub fn restarts(details: &Value) -> Vec<(String, Restart)> {
    let Some(nodes) = details["nodes"].as_object() else {
        return Vec::new();
    };
    let names = super::nodes::sorted_nodes(nodes.keys());
    let mut out = Vec::new();
    for node in names {
        let entries = nodes[&node]["restarts"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for entry in entries {
            // A restart this build cannot read is skipped rather than failing the whole table.
            if let Ok(restart) = serde_json::from_value::<Restart>(entry.clone()) {
                out.push((node.clone(), restart));
            }
        }
    }
    out
}

/// The durability check's table: one row per restart, grouped by node.
/// Times are shown on the phase clock that starts at `phase_start_ms` (see [`super::timeline::shown`]).
pub fn render(details: &Value, phase_start_ms: f64) -> Markup {
    let restarts = restarts(details);
    let mut per_node = std::collections::BTreeMap::<&str, usize>::new();
    let (shown, elided): (Vec<_>, Vec<_>) = restarts.iter().partition(|(node, _)| {
        let count = per_node.entry(node.as_str()).or_default();
        *count += 1;
        *count <= RESTARTS_SHOWN_PER_NODE
    });
    if restarts.is_empty() {
        return html! { div class="detail" { "no restarts observed" } };
    }
    html! {
        table class="inner durability" {
            thead {
                tr {
                    th { "node" } th { "cause" } th { "stopped at (s)" } th { "durable before" } th { "recovered" }
                    th { "forgotten" } th { "judgement" } th { "surgery" } th { "what happened" }
                }
            }
            tbody {
                @for (node, restart) in shown { (row(node, restart, phase_start_ms)) }
                @if !elided.is_empty() {
                    tr class="elided" {
                        td colspan="9" {
                            "… and " (elided.len()) " more restarts (all drawn on the timeline; see results.json)"
                        }
                    }
                }
            }
        }
    }
}

fn row(node: &str, r: &Restart, phase_start_ms: f64) -> Markup {
    let number = |n: Option<u64>| n.map_or("–".to_string(), |n| n.to_string());
    let shown = |p: Option<&Position>| p.map_or("–".to_string(), Position::to_string);
    let secs = |ns: Option<u64>| {
        ns.map_or("–".to_string(), |ns| {
            format!("{:.3}", (super::timeline::ms(ns) - phase_start_ms) / 1000.0)
        })
    };
    html! {
        tr class={ "restart " (r.severity()) } {
            td { a href={ "#node-" (Shown(node)) } { (Shown(node)) } }
            td { (Shown(&r.cause)) }
            td class="num" title={ "booted again at " (secs(r.boot_ns)) " s" } { (secs(r.stop_ns)) }
            td class="num" { (shown(r.durable.as_ref())) }
            td class="num" { (shown(r.recovered.as_ref())) }
            td class="num" { (number(r.forgotten)) }
            td { span class={ "tag " (r.severity()) } { (Shown(&r.judgement)) } }
            td { (surgery(&r.surgery)) }
            td { (Shown(&r.text)) }
        }
    }
}

/// `zero-block member/wal/0.wal @12288 +4096`, or `none`.
fn surgery(surgery: &Value) -> Markup {
    if surgery.is_null() {
        return html! { "none" };
    }
    let text = |k: &str| surgery[k].as_str().map(str::to_string).unwrap_or_default();
    let at = match (surgery["offset"].as_u64(), surgery["length"].as_u64()) {
        (Some(offset), Some(length)) => format!(" @{offset} +{length}"),
        (Some(offset), None) => format!(" @{offset}"),
        _ => String::new(),
    };
    html! { code { (Shown(&text("op"))) " " (Shown(&text("file"))) (at) } }
}

#[cfg(test)]
/// A durability check's details with one forgotten restart on n2 and one clean one on n1.
pub(crate) fn details_with_a_forgotten_restart() -> Value {
    serde_json::json!({"nodes": {
        "n2": {"restarts": [{"stop_index": 812, "stop_ns": 31_200_000_000u64, "cause": "kill", "durable": 717,
            "boot_index": 830, "boot_ns": 33_000_000_000u64, "recovered": 519, "forgotten": 198,
            "judgement": "forgotten", "surgery": null,
            "text": "n2 applied 717 before the kill -9 at 31.2 s and booted at 519: 198 applied entries forgotten, \
                     no surgery recorded"}]},
        "n1": {"restarts": [{"stop_index": 100, "stop_ns": 5_000_000_000u64, "cause": "power-loss", "durable": 40,
            "boot_index": 120, "boot_ns": 6_000_000_000u64, "recovered": 40, "forgotten": 0, "judgement": "ok",
            "surgery": {"op": "zero-block", "file": "member/wal/0.wal", "offset": 12288, "length": 4096},
            "text": "n1 booted at 40, all it had"}]}
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A restart whose positions are vector clocks keeps its row (it was dropped: the positions were read as numbers).
    #[test]
    fn given_a_restart_with_vector_clocks_when_rendered_should_show_each_clock_whole() {
        let details = json!({"nodes": {"n2": {"restarts": [{"stop_ns": 3_000_000_000u64, "cause": "kill",
            "durable": {"1": 3181, "2": 5}, "boot_ns": 4_000_000_000u64, "recovered": {"1": 3170, "2": 30},
            "forgotten": 11, "judgement": "forgotten", "surgery": null,
            "text": "n2 had applied {1: 3181, 2: 5} before the kill -9 and booted with {1: 3170, 2: 30}"}]}}});
        let html = render(&details, 0.0).into_string();
        let row = &html[html.find("<tr class=\"restart bad\">").expect("the row is kept")..];
        assert!(
            row.contains(">{1: 3181, 2: 5}<") && row.contains(">{1: 3170, 2: 30}<"),
            "{row}"
        );
    }

    #[test]
    fn given_a_forgotten_restart_when_rendered_should_show_its_numbers_and_a_bad_mark() {
        let html = render(&details_with_a_forgotten_restart(), 0.0).into_string();
        let row = &html[html.find("<tr class=\"restart bad\">").expect("a bad row")..];
        let row = &row[..row.find("</tr>").unwrap()];
        for cell in [
            ">n2</a>",
            "<td>kill</td>",
            "<td class=\"num\" title=\"booted again at 33.000 s\">31.200</td>",
            ">717<",
            ">519<",
            ">198<",
        ] {
            assert!(row.contains(cell), "{cell} in {row}");
        }
        assert!(row.contains("<span class=\"tag bad\">forgotten</span>"), "{row}");
        assert!(row.contains("198 applied entries forgotten"), "{row}");
        assert!(
            html.contains("<code>zero-block member/wal/0.wal @12288 +4096</code>"),
            "{html}"
        );
        assert!(
            html.find(">n1</a>").unwrap() < html.find(">n2</a>").unwrap(),
            "nodes in order"
        );
    }

    #[test]
    fn given_hostile_text_when_rendered_should_escape_it() {
        let details = json!({"nodes": {"n<b>1": {"restarts": [{"cause": "kill", "judgement": "<i>forgotten",
            "text": "</td><script>alert(1)</script>", "surgery": {"op": "<x>", "file": "\"a&b\""}}]}}});
        let html = render(&details, 0.0).into_string();
        assert!(!html.contains("<script>") && !html.contains("<i>") && !html.contains("<x>") && !html.contains("<b>"));
        assert!(
            html.contains("&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn given_details_of_another_shape_when_read_should_find_no_restarts() {
        assert!(restarts(&json!(null)).is_empty());
        assert!(restarts(&json!({"nodes": {"n1": {"restarts": "?"}}})).is_empty());
        assert!(render(&json!({"nodes": {}}), 0.0)
            .into_string()
            .contains("no restarts observed"));
    }
}
