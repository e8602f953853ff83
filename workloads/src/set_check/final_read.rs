//! Jepsen's `set` checker: adds, then one final read, which must show every acknowledged add and nothing nobody tried
//! to add.
//!
//! The final read is the last `ok` read of the history. Against it: *lost* elements were acknowledged (`ok` add)
//! and are missing; *unexpected* ones were never attempted; *recovered* ones are present though their add failed or
//! its outcome was unknown (not an error: an `info` add may have happened, and Jepsen counts a failed one the same
//! way). Invalid when anything is lost or unexpected; unknown when the set was never read.

use super::{anomaly_base, element_text, SetAnomaly, SetCheckResult, SetCheckStats, MAX_ANOMALIES_PER_KIND};
use crate::history::{EventKind, History};
use crate::verdict::Verdict;
use std::collections::{BTreeSet, HashMap};

/// Checks adds against the final read (see the module docs).
pub fn check_set_final(history: &History) -> SetCheckResult {
    let mut open: HashMap<u64, (&str, Option<String>)> = HashMap::new();
    let mut attempts: BTreeSet<String> = BTreeSet::new();
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut stats = SetCheckStats::default();
    let mut final_read: Option<(u64, u64, BTreeSet<String>)> = None;
    for event in history.client_events() {
        let Some(process) = event.process else { continue };
        if event.kind == EventKind::Invoke {
            let element = (event.f == "add").then(|| element_text(&event.value)).flatten();
            if let Some(element) = &element {
                stats.adds += 1;
                attempts.insert(element.clone());
            }
            open.insert(process, (event.f.as_str(), element));
            continue;
        }
        let Some((f, element)) = open.remove(&process) else {
            continue;
        };
        match (f, event.kind, element) {
            ("add", EventKind::Ok, Some(element)) => {
                stats.acked += 1;
                acked.insert(element);
            }
            ("add", EventKind::Fail, Some(_)) => stats.failed += 1,
            ("add", _, Some(_)) => stats.unknown += 1,
            ("read", EventKind::Ok, _) => {
                stats.reads += 1;
                let elements = event
                    .value
                    .as_array()
                    .map(|items| items.iter().filter_map(element_text).collect());
                final_read = Some((event.time_ns, event.index, elements.unwrap_or_default()));
            }
            _ => {}
        }
    }
    let Some((read_ns, read_index, read)) = final_read else {
        return SetCheckResult {
            verdict: Verdict::Unknown,
            reason: format!(
                "the set was never read: {} adds and no ok read to check them against",
                stats.adds
            ),
            stats,
            anomalies: Vec::new(),
        };
    };
    let mut anomalies = Vec::new();
    let mut note = |stats: &mut SetCheckStats, kind: &str, element: &str, description: String| {
        let count = stats.anomalies.entry(kind.to_string()).or_default();
        *count += 1;
        if *count as usize <= MAX_ANOMALIES_PER_KIND {
            let mut anomaly: SetAnomaly = anomaly_base(element, None);
            anomaly.kind = kind.to_string();
            anomaly.add_outcome = if acked.contains(element) { "ok" } else { "none" }.to_string();
            anomaly.first_missing_index = Some(read_index);
            anomaly.first_missing_ns = Some(read_ns);
            anomaly.description = description;
            anomalies.push(anomaly);
        }
    };
    for element in acked.difference(&read) {
        let sentence = format!("`{element}` was acknowledged, but the final read (event {read_index}) lacks it: lost");
        note(&mut stats, "lost", element, sentence);
    }
    for element in read.difference(&attempts) {
        let sentence = format!("`{element}` is in the final read (event {read_index}), but no client tried to add it");
        note(&mut stats, "unexpected", element, sentence);
    }
    stats.recovered = read.intersection(&attempts).filter(|e| !acked.contains(*e)).count() as u64;
    stats.stable = read.intersection(&acked).count() as u64;
    let (verdict, reason) = if anomalies.is_empty() {
        let reason = format!(
            "the final read (event {read_index}) shows all {} acknowledged adds and {} of unknown or failed outcome, \
             and nothing nobody added",
            stats.acked, stats.recovered
        );
        (Verdict::Valid, reason)
    } else {
        let counts: Vec<String> = stats.anomalies.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let reason = format!("{}; first: {}", counts.join(", "), anomalies[0].description);
        (Verdict::Invalid, reason)
    };
    SetCheckResult {
        verdict,
        reason,
        stats,
        anomalies,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use serde_json::{json, Value};

    use crate::checker::tests::client_op as op;

    #[test]
    fn given_a_final_read_missing_an_acknowledged_add_and_holding_a_stranger_should_report_both() {
        use EventKind::*;
        let h = history(vec![
            op(Invoke, 0, "add", json!(1)),
            op(Ok, 0, "add", json!(1)),
            op(Invoke, 1, "add", json!(2)),
            op(Info, 1, "add", json!(2)),
            op(Invoke, 2, "read", Value::Null),
            op(Ok, 2, "read", json!([2, 9])),
        ]);
        let result = check_set_final(&h);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
        let kinds: Vec<(&str, &str)> = result
            .anomalies
            .iter()
            .map(|a| (a.kind.as_str(), a.element.as_str()))
            .collect();
        assert_eq!(kinds, vec![("lost", "1"), ("unexpected", "9")]);
        assert_eq!(result.stats.recovered, 1, "2's add was unknown, and it is there");
    }

    #[test]
    fn given_no_read_when_checked_should_be_unknown_and_a_complete_read_valid() {
        use EventKind::*;
        let adds = vec![op(Invoke, 0, "add", json!("a")), op(Ok, 0, "add", json!("a"))];
        assert_eq!(check_set_final(&history(adds.clone())).verdict, Verdict::Unknown);
        let mut complete = adds;
        complete.push(op(Invoke, 1, "read", Value::Null));
        complete.push(op(Ok, 1, "read", json!(["a"])));
        assert_eq!(check_set_final(&history(complete)).verdict, Verdict::Valid);
    }
}
