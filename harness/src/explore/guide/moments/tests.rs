use super::*;
use crate::plan::builtin;
use faultline_faults::trigger::{Condition, TriggerTarget};
use faultline_faults::units::Millis;
use faultline_workloads::history::{Lifecycle, Meta, Name, Nemesis};
use rand::SeedableRng;
use serde_json::json;

fn vocab_of(name: &str) -> Vocabulary {
    let mut plan = builtin::load(name).unwrap();
    plan.time_limit = Millis(20_000);
    Vocabulary::new(vec![plan])
}

fn used(lines: u64, marks: u64) -> TemplateUse {
    TemplateUse { lines, marks }
}

#[test]
fn given_the_plans_faults_when_anchorable_should_aim_at_subject_primary_and_another_backup_and_keep_plan_promises() {
    let mixed = vocab_of("reference-mixed");
    let tokens: Vec<String> = anchorables(&mixed, 0).into_iter().map(|a| a.token).collect();
    for token in [
        "kill@subject",
        "kill@primary",
        "kill@other-backup",
        "power-loss@subject",
        "partition:isolate-subject",
        "partition:bridge",
        "clock-bump@primary",
        "clock-strobe@primary",
    ] {
        assert!(tokens.contains(&token.to_string()), "{token} not in {tokens:?}");
    }
    // reference-mixed strobes only its primary's clock: no strobe of a backup.
    assert!(!tokens.contains(&"clock-strobe@other-backup".to_string()));
    // reference-corruption damages n3 only: its corruptions follow n3's lines and hit n3, with the plan's cuts.
    let corruption = vocab_of("reference-corruption");
    let all = anchorables(&corruption, 0);
    let cut = all
        .iter()
        .find(|a| a.token == "corrupt:truncate-tail@n3")
        .expect("the plan's tail cut");
    assert_eq!(cut.node.as_deref(), Some("n3"));
    assert_eq!(cut.fault.targets, Some(TriggerTarget::Subject));
    assert!(!cut.fault.cuts.is_empty());
    assert!(all.iter().any(|a| a.token == "corrupt:flip-bits@n3"));
    assert!(
        all.iter().all(|a| !a.token.contains("restore-chunk")),
        "a restore has no snapshot of its own"
    );
    assert!(all
        .iter()
        .all(|a| a.token.ends_with("@n3") || !a.token.starts_with("corrupt")));
}

#[test]
fn given_templates_when_anchored_should_take_markers_before_chatter_one_per_template_and_render_valid_triggers() {
    let vocab = vocab_of("reference-mixed");
    let genome = vocab.seed_genome(0);
    let templates = HashMap::from([
        (
            "view change started old_view=N new_view=N new_primary=N".to_string(),
            used(10, 9),
        ),
        ("adopted log of view N ops N..N".to_string(), used(4, 3)),
        ("commit op=N".to_string(), used(5000, 40)),
    ]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let shots = anchored(
        &genome,
        &vocab,
        &[4_000, 11_000],
        &templates,
        &HashMap::new(),
        false,
        &mut rng,
    );
    let anchors: Vec<&str> = shots
        .iter()
        .map(|s| s.anchor.as_ref().unwrap().template.as_str())
        .collect();
    assert_eq!(
        anchors,
        [
            "view change started old_view=N new_view=N new_primary=N",
            "adopted log of view N ops N..N"
        ],
        "the markers, one shot each, the chatter not"
    );
    assert_eq!((shots[0].at_ms, shots[1].at_ms), (4_000, 11_000));
    // Two slots, two families of faults (their turn), e.g. a crash after one line and a clock fault after the other.
    let families: Vec<&str> = shots.iter().map(|s| s.faults[0].kind.name()).collect();
    let crash = |k: &str| ["kill", "pause", "stop", "power-loss"].contains(&k);
    assert!(
        !(crash(families[0]) && crash(families[1])) && families[0] != families[1],
        "{families:?}"
    );
    // The first template anchored 50 runs already: the second marker comes first now.
    let tried = HashMap::from([(shots[0].context.clone(), 50)]);
    let again = anchored(&genome, &vocab, &[4_000], &templates, &tried, false, &mut rng);
    assert_eq!(again[0].anchor.as_ref().unwrap().template, anchors[1]);
    // As triggers: the template, 0-50 ms after, once, armed from the slot, the shot's label kept.
    let triggers = shots[0].triggers();
    assert_eq!(triggers.len(), 1);
    let trigger = &triggers[0];
    assert!(matches!(&trigger.when, Condition::Template(t) if t.pattern == anchors[0]));
    assert_eq!(trigger.after.map(|a| (a.min.0, a.max.0)), Some(AFTER_LINE_MS));
    assert_eq!((trigger.max_fires, trigger.not_before), (Some(1), Some(Millis(4_000))));
    assert_eq!(trigger.shot.as_deref(), Some(shots[0].context.as_str()));
    // The run's plan with them validates.
    let mut aimed = genome.clone();
    aimed.shots = shots;
    let plan = aimed.render(&vocab);
    let text = plan.to_yaml();
    Plan::parse(&text, "guided").unwrap_or_else(|e| panic!("{e}\n{text}"));
}

#[test]
fn given_no_template_known_yet_when_aimed_should_give_every_slot_to_timed_shots() {
    let vocab = vocab_of("reference-mixed");
    let genome = vocab.seed_genome(0);
    let plan = genome.render(&vocab);
    let (shown, templates, tried) = (HashMap::new(), HashMap::new(), HashMap::new());
    let known = aim::Known {
        shown: &shown,
        templates: &templates,
        tried: &tried,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let shots = aim::aim(&genome, &vocab, &plan, known, ShotMode::Both, &mut rng);
    assert_eq!(shots.len(), aim::SHOTS_PER_RUN_MAX);
    assert!(shots.iter().all(|s| s.anchor.is_none()));
    assert!(aim::aim(&genome, &vocab, &plan, known, ShotMode::None, &mut rng).is_empty());
    assert!(aim::aim(&genome, &vocab, &plan, known, ShotMode::Anchored, &mut rng).is_empty());
    let templates = HashMap::from([("view change started".to_string(), used(3, 3))]);
    let known = aim::Known {
        templates: &templates,
        ..known
    };
    let both = aim::aim(&genome, &vocab, &plan, known, ShotMode::Both, &mut rng);
    let kinds: Vec<bool> = both.iter().map(|s| s.anchor.is_some()).collect();
    assert_eq!(
        kinds.iter().filter(|a| **a).count(),
        1,
        "one template: one anchored shot"
    );
    assert_eq!(both.len(), aim::SHOTS_PER_RUN_MAX, "the rest timed");
}

fn at(ms: u64, name: impl Into<Name>, node: Option<&str>, value: serde_json::Value) -> Event {
    let mut event = Event::named(name, node.map(str::to_string), value);
    event.time_ns = ms * 1_000_000;
    event
}

#[test]
fn given_a_run_with_an_anchored_shot_when_its_moments_are_read_should_time_the_fault_from_its_line() {
    let mut plan = builtin::load("default").unwrap();
    let shot: Vec<faultline_faults::trigger::TriggerSpec> = serde_saphyr::from_str(
        "- {when: {template: 'view change started old_view=N'}, after: 0ms..50ms, max_fires: 1, \
            shot: 'view change started old_view=N => pause@subject', do: {kind: pause, duration: 2s}}",
    )
    .unwrap();
    let unknown = serde_saphyr::Location::UNKNOWN;
    plan.nemesis.triggers = shot
        .into_iter()
        .map(|t| serde_saphyr::Spanned::new(t, unknown, unknown))
        .collect();
    // The run started at unix 100 s; n2 logged the line at 102.300 s (history 2.3 s), the pause came at 2.332 s.
    let events = vec![
        at(
            0,
            Meta::RunStart,
            None,
            json!({"wall_clock_unix_ns": 100_000_000_000u64}),
        ),
        at(10, Lifecycle::Start, Some("n2"), json!({})),
        at(
            2332,
            Nemesis::Pause,
            Some("n2"),
            json!({"fault_id": 1_000_000, "trigger": 0}),
        ),
        at(
            2333,
            Nemesis::Trigger,
            Some("n2"),
            json!({"trigger": 0, "condition": "template", "subject": "n2", "fault_id": 1_000_000, "delay_ms": 25}),
        ),
    ];
    let history = History {
        events,
        ..History::default()
    };
    let logs = BTreeMap::from([(
        "n2".to_string(),
        "1970-01-01T00:01:41.000Z  INFO view change started old_view=1\n\
         1970-01-01T00:01:42.300Z  INFO view change started old_view=2\n\
         1970-01-01T00:01:42.400Z  INFO view change started old_view=3\n"
            .to_string(),
    )]);
    let moments = moments_of(&plan, &history, &logs);
    assert_eq!(moments.armed, 1);
    assert_eq!(moments.fired.len(), 1);
    assert_eq!(
        moments.fired[0].line_to_fault_ms,
        Some(32),
        "from the latest line before the pause"
    );
    assert_eq!(
        moments.fired[0].label,
        "view change started old_view=N => pause@subject"
    );
}
