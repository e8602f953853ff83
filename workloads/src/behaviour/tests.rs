use super::*;
use crate::history::{EventKind, Lifecycle, Meta, Name, Nemesis, Observation};
use serde_json::{json, Value};

fn at(ms: u64, name: impl Into<Name>, node: Option<&str>, value: Value) -> Event {
    let mut event = Event::named(name, node.map(str::to_string), value);
    event.time_ns = ms * 1_000_000;
    event
}

fn client(ms: u64, kind: EventKind, f: &str, error: Option<&str>) -> Event {
    Event {
        index: 0,
        time_ns: ms * 1_000_000,
        kind,
        process: Some(1),
        worker: Some(1),
        node: Some("n1".into()),
        f: f.into(),
        key: Some("k1".into()),
        value: Value::Null,
        error: error.map(str::to_string),
    }
}

/// A small run: three nodes start (names and views as given), the primary is killed at 2 s and restarted at 3 s,
/// a client write times out meanwhile. The run started at unix 100 s.
fn run(names: [&str; 3], view: u64) -> History {
    let [a, b, c] = names;
    let status = |ms, node, role: &str| at(ms, Observation::Status, Some(node), json!({"role": role, "view": view}));
    let mut events = vec![at(
        0,
        Meta::RunStart,
        None,
        json!({"wall_clock_unix_ns": 100_000_000_000u64}),
    )];
    for node in names {
        events.push(at(10, Lifecycle::Start, Some(node), json!({})));
    }
    events.extend([
        status(500, a, "primary"),
        status(510, b, "backup"),
        status(520, c, "backup"),
        at(1000, Lifecycle::ClusterReady, None, json!({})),
        at(2000, Nemesis::Kill, Some(a), json!({"fault_id": view})),
        client(2500, EventKind::Info, "write", Some("timed out after 1500ms")),
        at(3000, Nemesis::Start, Some(a), json!({"fault_id": view})),
        status(3500, a, "backup"),
    ]);
    for (i, event) in events.iter_mut().enumerate() {
        event.index = i as u64;
    }
    History {
        events,
        ..History::default()
    }
}

fn logs(names: [&str; 3], op: u64) -> BTreeMap<String, String> {
    let [a, b, _] = names;
    BTreeMap::from([
        (
            a.to_string(),
            format!("1970-01-01T00:01:40.600Z  INFO ready client_addr=127.0.0.{op}:2000{op}\n"),
        ),
        (
            b.to_string(),
            format!(
                "1970-01-01T00:01:42.100Z  WARN primary timed out view={op} primary=0\n\
                 1970-01-01T00:01:42.300Z  INFO view change started old_view={op} new_view={} new_primary=1\n",
                op + 1
            ),
        ),
    ])
}

fn texts(found: &RunBehaviours, kind: BehaviourKind) -> Vec<&str> {
    found
        .behaviours
        .iter()
        .filter(|b| b.kind == kind)
        .map(|b| b.text.as_str())
        .collect()
}

#[test]
fn given_two_runs_that_differ_only_in_node_names_and_numbers_when_extracted_should_have_the_same_behaviour_ids() {
    let first = behaviours(&run(["n1", "n2", "n3"], 1), &logs(["n1", "n2", "n3"], 4));
    let second = behaviours(&run(["n3", "n1", "n2"], 7), &logs(["n3", "n1", "n2"], 9));
    let ids = |found: &RunBehaviours| found.ids().collect::<std::collections::BTreeSet<_>>();
    assert!(!first.behaviours.is_empty());
    assert_eq!(
        ids(&first),
        ids(&second),
        "{:#?}\n{:#?}",
        first.behaviours,
        second.behaviours
    );
}

#[test]
fn given_a_kill_of_the_primary_when_extracted_should_see_lines_transitions_and_outcomes_in_its_context() {
    let found = behaviours(&run(["n1", "n2", "n3"], 1), &logs(["n1", "n2", "n3"], 4));
    assert_eq!(
        texts(&found, BehaviourKind::Template),
        vec![
            "ready client_addr=N.N:N",
            "primary timed out view=N primary=N",
            "view change started old_view=N new_view=N new_primary=N"
        ]
    );
    assert!(
        texts(&found, BehaviourKind::ContextLine)
            .contains(&"kill@primary | up:backup | primary timed out view=N primary=N"),
        "{:#?}",
        found.behaviours
    );
    assert!(texts(&found, BehaviourKind::Transition)
        .contains(&"kill@primary | up:backup up:backup up:primary -> down up:backup up:backup"));
    assert!(texts(&found, BehaviourKind::Transition)
        .contains(&"calm | down up:backup up:backup -> up:backup up:backup up:unknown"));
    assert_eq!(
        texts(&found, BehaviourKind::Outcome),
        vec!["kill@primary | write info: timed out after D"]
    );
    // The two lines of n2 are one node's: no pair; nothing else is within the window.
    assert!(texts(&found, BehaviourKind::Pair).is_empty());
    let summary = found.summary();
    assert_eq!(summary.distinct, found.behaviours.len() as u64);
    assert_eq!(summary.by_kind["template"], 3);
}

#[test]
fn given_lines_on_two_nodes_when_within_the_window_should_pair_in_order_and_not_when_further_apart() {
    let history = run(["n1", "n2", "n3"], 1);
    let logs = BTreeMap::from([
        (
            "n1".to_string(),
            "1970-01-01T00:01:42.000Z INFO a op=1\n1970-01-01T00:01:44.000Z INFO c\n".to_string(),
        ),
        ("n2".to_string(), "1970-01-01T00:01:42.400Z INFO b op=2\n".to_string()),
    ]);
    let found = behaviours(&history, &logs);
    assert_eq!(texts(&found, BehaviourKind::Pair), vec!["a op=N => b op=N"]);
}

#[test]
fn given_more_distinct_templates_than_their_budget_when_extracted_should_keep_the_smallest_ids_from_the_whole_run() {
    let history = run(["n1", "n2", "n3"], 1);
    let count = 2000;
    // One line every 5 ms from the run's start (unix 100 s) to 10 s: before the fault, during it and after.
    let text: String = (0..count)
        .map(|i| {
            let ms = 100_000 + 5 * i;
            format!(
                "1970-01-01T00:{:02}:{:02}.{:03}Z INFO word{}\n",
                ms / 60_000,
                (ms / 1000) % 60,
                ms % 1000,
                to_letters(i)
            )
        })
        .collect();
    let found = behaviours(&history, &BTreeMap::from([("n1".to_string(), text)]));
    let templates: Vec<&Behaviour> = found
        .behaviours
        .iter()
        .filter(|b| b.kind == BehaviourKind::Template)
        .collect();
    assert_eq!(templates.len(), kind_budget(BehaviourKind::Template));
    let mut all: Vec<BehaviourId> = (0..count)
        .map(|i| BehaviourId::of(BehaviourKind::Template, &format!("word{}", to_letters(i))))
        .collect();
    all.sort();
    let mut kept: Vec<BehaviourId> = templates.iter().map(|b| b.id).collect();
    kept.sort();
    assert_eq!(
        kept,
        all[..kind_budget(BehaviourKind::Template)],
        "the bottom-k of the ids"
    );
    let last_ms = templates.iter().map(|b| b.first_ms).max().unwrap();
    assert!(
        last_ms > 5 * 1500,
        "not a prefix of the run: latest kept at {last_ms} ms"
    );
    let contexts = texts(&found, BehaviourKind::ContextLine).len();
    assert_eq!(contexts, kind_budget(BehaviourKind::ContextLine));
    assert_eq!(
        found.dropped,
        (count - kind_budget(BehaviourKind::Template) + count - contexts) as u64
    );
    assert!(
        !texts(&found, BehaviourKind::Transition).is_empty(),
        "other kinds keep their own budget"
    );
    assert!(
        found.behaviours.windows(2).all(|w| w[0].first_ms <= w[1].first_ms),
        "kept in time order"
    );
}

#[test]
fn given_two_nodes_chattering_past_the_pair_budget_when_extracted_should_keep_every_other_kind() {
    let history = run(["n1", "n2", "n3"], 1);
    let line = |i: usize| format!("1970-01-01T00:01:42.{:03}Z INFO word{}\n", i, to_letters(i));
    let (one, two): (String, String) = (0..100).map(|i| (line(2 * i), line(2 * i + 1))).unzip();
    let found = behaviours(
        &history,
        &BTreeMap::from([("n1".to_string(), one), ("n2".to_string(), two)]),
    );
    assert_eq!(
        texts(&found, BehaviourKind::Pair).len(),
        kind_budget(BehaviourKind::Pair)
    );
    assert!(found.dropped > 0);
    assert_eq!(texts(&found, BehaviourKind::Template).len(), 200);
    assert_eq!(texts(&found, BehaviourKind::ContextLine).len(), 200);
}

/// `i` as letters (a template masks digits).
fn to_letters(mut i: usize) -> String {
    let mut out = String::new();
    loop {
        out.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
        if i == 0 {
            return out;
        }
    }
}

#[test]
fn given_behaviours_when_written_and_read_back_should_round_trip_and_add_a_finding_once() {
    let mut found = behaviours(&run(["n1", "n2", "n3"], 1), &logs(["n1", "n2", "n3"], 4));
    found.add_finding("reference linearizability: lost", 9_000_000_000);
    found.add_finding("reference linearizability: lost", 9_500_000_000);
    assert_eq!(texts(&found, BehaviourKind::Finding).len(), 1);
    let json = serde_json::to_string(&found).unwrap();
    let back: RunBehaviours = serde_json::from_str(&json).unwrap();
    assert_eq!(back, found);
    assert!(
        json.contains(&format!("\"{}\"", found.behaviours[0].id)),
        "ids as 16 hex digits"
    );
}

#[test]
fn given_a_line_right_before_its_nodes_status_changed_when_extracted_should_count_it_a_mark_and_chatter_not() {
    let mut history = run(["n1", "n2", "n3"], 1);
    // n2 becomes primary 200 ms after its `view change started` (2.3 s), 400 ms after `primary timed out`.
    let mut became = at(
        2500,
        Observation::Status,
        Some("n2"),
        json!({"role": "primary", "view": 2}),
    );
    became.index = history.events.len() as u64;
    let position = history.events.iter().position(|e| e.time_ns > 2_500_000_000).unwrap();
    history.events.insert(position, became);
    let mut logs = logs(["n1", "n2", "n3"], 4);
    let chatter: String = (0..20)
        .map(|i| {
            format!(
                "1970-01-01T00:01:4{}.{:03}Z  INFO commit op={i}\n",
                1 + i / 10,
                (i % 10) * 100
            )
        })
        .collect();
    logs.insert("n3".to_string(), chatter);
    let found = behaviours(&history, &logs);
    let uses = &found.template_uses;
    let started = uses["view change started old_view=N new_view=N new_primary=N"];
    assert_eq!((started.lines, started.marks), (1, 1));
    let timed_out = uses["primary timed out view=N primary=N"];
    assert_eq!(
        (timed_out.lines, timed_out.marks),
        (1, 0),
        "400 ms before: outside the window"
    );
    // n3's commits come on, its status never changes after its first: no marks.
    assert_eq!((uses["commit op=N"].lines, uses["commit op=N"].marks), (20, 0));
    let text = serde_json::to_string(&found).unwrap();
    let back: RunBehaviours = serde_json::from_str(&text).unwrap();
    assert_eq!(back, found);
    let old: RunBehaviours = serde_json::from_str(r#"{"version":1,"behaviours":[],"dropped":0}"#).unwrap();
    assert!(
        old.template_uses.is_empty(),
        "a file of an older build reads without them"
    );
}
