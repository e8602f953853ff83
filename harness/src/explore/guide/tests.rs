use super::genome::{Family, DURATION_X, INTERVAL_X};
use super::*;
use crate::plan::builtin;
use faultline_faults::process::ProcessFault;
use faultline_faults::trigger::Condition;
use faultline_reports::explored::Mode;
use faultline_reports::results::Verdict;
use rand::SeedableRng;

fn vocab(names: &[&str]) -> Vocabulary {
    Vocabulary::new(names.iter().map(|n| builtin::load(n).unwrap()).collect())
}

fn ids(range: std::ops::Range<u64>) -> Vec<BehaviourId> {
    range.map(BehaviourId).collect()
}

#[test]
fn given_a_plan_when_its_seed_genome_is_rendered_should_be_the_plan_as_written_without_swarm() {
    let vocab = vocab(&["reference-mixed", "reference-swarm"]);
    let mixed = vocab.seed_genome(0).render(&vocab);
    assert_eq!(mixed.to_yaml(), vocab.plans[0].to_yaml());
    let swarm = vocab.seed_genome(1).render(&vocab);
    assert!(!swarm.nemesis.swarm, "the guide chooses subsets itself");
    assert_eq!(
        swarm.nemesis.triggers.len(),
        builtin::load("reference-swarm").unwrap().nemesis.triggers.len()
    );
}

#[test]
fn given_many_mutations_when_rendered_should_validate_and_stay_inside_the_swarm_envelope() {
    let vocab = vocab(&["reference-mixed"]);
    let base = vocab.plans[0].clone();
    let base_interval = base.nemesis.process.as_ref().unwrap().value.interval.unwrap().0 as f64;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut genome = vocab.seed_genome(0);
    for step in 0..200 {
        let weights = [1.0; mutate::Operator::ALL.len()];
        let (child, changes, operators) = mutate::havoc(&genome, &vocab, &weights, &mut rng);
        assert_eq!(changes.len(), operators.len());
        assert!(!changes.is_empty(), "step {step}: a havoc changes something");
        assert!(!child.genes.is_empty(), "never no fault at all");
        for gene in &child.genes {
            assert!((DURATION_X.0..=DURATION_X.1).contains(&gene.duration_x), "{gene:?}");
        }
        assert!((INTERVAL_X.0..=INTERVAL_X.1).contains(&child.process_interval_x));
        let plan = child.render(&vocab);
        let reloaded = Plan::parse(&plan.to_yaml(), "mutated.yaml").expect("a mutated plan validates");
        if let Some(process) = &reloaded.nemesis.process {
            if let Some(interval) = process.value.interval {
                let x = interval.0 as f64 / base_interval;
                assert!((0.24..=2.01).contains(&x), "interval x{x}");
            }
            for fault in process.value.faults.iter().filter(|f| f.kind == ProcessFault::Clock) {
                let original = base.nemesis.process.as_ref().unwrap().value.faults.iter().find(|o| {
                    o.kind == ProcessFault::Clock
                        && o.bump == fault.bump
                        && o.strobe == fault.strobe
                        && o.skew == fault.skew
                });
                let original = original.expect("clock faults keep their offsets as written");
                assert!(fault.duration.max.0 as f64 <= original.duration.max.0 as f64 * 1.5 + 1.0);
                assert_eq!(
                    fault.targets.value, original.targets.value,
                    "clock targets never change"
                );
            }
        }
        genome = child;
    }
}

#[test]
fn given_two_genomes_when_spliced_should_take_whole_families_from_the_other() {
    let vocab = vocab(&["reference-partition", "reference-crash-points"]);
    let (partition, crash) = (vocab.seed_genome(0), vocab.seed_genome(1));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut took_triggers = false;
    for _ in 0..20 {
        let (child, what) = mutate::splice(&partition, &crash, &vocab, &mut rng).expect("the plans differ");
        assert!(what[0].starts_with("spliced "));
        for family in [
            Family::Process,
            Family::Flaps,
            Family::Partition,
            Family::Link,
            Family::Trigger,
        ] {
            let of = |g: &Genome| -> Vec<usize> {
                g.genes
                    .iter()
                    .filter(|x| vocab.elements[x.element].family == family)
                    .map(|x| x.element)
                    .collect()
            };
            assert!(
                of(&child) == of(&partition) || of(&child) == of(&crash),
                "{family:?} is one parent's"
            );
        }
        took_triggers |= child
            .genes
            .iter()
            .any(|g| vocab.elements[g.element].family == Family::Trigger && vocab.elements[g.element].plan == 1);
    }
    assert!(took_triggers, "over 20 splices, the crash-point triggers came across");
}

/// The behaviour log's line of a finished guided run of `default` that showed `new`.
fn logged(run: u64, chosen: Chosen, store_dir: Option<String>, new: Vec<BehaviourId>, cumulative: u64) -> ExploredRun {
    ExploredRun {
        campaign: "test".into(),
        shard: None,
        run,
        mode: Mode::Guided,
        plan: "default".into(),
        plan_source: chosen.plan_file.display().to_string(),
        seed: chosen.seed,
        store_dir,
        verdict: Verdict::Valid,
        complete: true,
        distinct: new.len() as u64,
        new,
        new_by_kind: Default::default(),
        cumulative,
        elapsed_ms: 0,
        wall_ms: 0,
        cpu_ms: None,
        choice: Some(chosen.choice),
        finished_at: String::new(),
    }
}

/// The genome the guide in `dir` wrote for run `run`.
fn genome_of(dir: &std::path::Path, run: u64) -> Genome {
    serde_json::from_slice(&std::fs::read(Guide::genome_path(dir, run)).unwrap()).unwrap()
}

fn guide_in(dir: &std::path::Path) -> Guide {
    let plans = vec![
        builtin::load("default").unwrap(),
        builtin::load("reference-partition").unwrap(),
    ];
    Guide::new(plans, dir.to_path_buf(), "test", 5)
}

#[test]
fn given_a_fresh_guide_when_choosing_should_run_each_plan_as_written_first_then_mutate_and_write_plans() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    let first = guide.choose(0).unwrap();
    let second = guide.choose(1).unwrap();
    let mut bases = vec![first.base, second.base];
    bases.sort_unstable();
    assert_eq!(bases, vec![0, 1], "each plan as written once");
    assert!(first.choice.as_written.is_some() && second.choice.as_written.is_some());
    guide.observe(0, &ids(0..100), &ids(0..100), true);
    guide.observe(1, &ids(50..150), &ids(100..150), true);
    let third = guide.choose(2).unwrap();
    assert!(third.choice.as_written.is_none());
    assert!(third.choice.mutations[0].ends_with("as written"), "{:?}", third.choice);
    let plan = Plan::load(&third.plan_file).expect("the written plan loads");
    assert!(plan.origin.unwrap().starts_with("guided campaign test run 2: from "));
    assert!(dir.path().join("plans/run-2.genome.json").is_file());
}

#[test]
fn given_an_entry_that_found_rare_behaviours_when_energies_are_compared_should_outrank_one_whose_finds_are_common() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    for run in 0..2 {
        guide.choose(run).unwrap();
    }
    guide.observe(0, &ids(0..50), &ids(0..50), true);
    guide.observe(1, &ids(0..60), &ids(50..60), true);
    // Two children; each finds 20 new behaviours. Run 3's are seen again by a later run, run 2's never.
    for run in 2..4 {
        guide.choose(run).unwrap();
    }
    guide.observe(2, &ids(100..120), &ids(100..120), true);
    guide.observe(3, &ids(200..220), &ids(200..220), true);
    for run in 4..8 {
        guide.pending.remove(&run);
        guide.count_hits(&ids(200..220));
    }
    let energy = |run: u64| {
        let at = guide.corpus.iter().position(|e| e.origin == Origin::Run(run)).unwrap();
        guide.energies()[at]
    };
    assert!(energy(2) > energy(3), "rare finds: {} vs {}", energy(2), energy(3));
}

#[test]
fn given_a_late_child_that_found_more_than_its_time_when_energies_are_compared_should_outrank_an_early_one_that_found_more_in_number(
) {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    for run in 0..4 {
        guide.choose(run).unwrap();
    }
    guide.observe(0, &ids(0..1000), &ids(0..1000), true);
    guide.observe(1, &ids(0..1000), &ids(1000..2000), true);
    // Run 2, the first child, finds 600 new behaviours when a run finds 1000 (the plans as written did).
    guide.observe(2, &ids(2000..2600), &ids(2000..2600), true);
    // Twenty runs later a run finds 100; run 3 finds 300 then.
    guide.recent = std::iter::repeat_n(100, ADMISSION_WINDOW).collect();
    guide.observe(3, &ids(3000..3300), &ids(3000..3300), true);
    let energy = |run: u64| {
        let at = guide.corpus.iter().position(|e| e.origin == Origin::Run(run)).unwrap();
        guide.energies()[at]
    };
    assert!(
        energy(3) > energy(2),
        "3x its time's finds against 0.6x: {} vs {}",
        energy(3),
        energy(2)
    );
    let weights = guide.operator_weights();
    assert!(weights.iter().all(|w| w.is_finite()), "{weights:?}");
}

#[test]
fn given_a_logged_campaign_when_resumed_should_rebuild_the_corpus_and_not_rerun_the_plans_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    let mut lines = Vec::new();
    for run in 0..3 {
        let chosen = guide.choose(run).unwrap();
        lines.push(logged(run, chosen, None, ids(run * 10..run * 10 + 10), (run + 1) * 10));
    }
    let mut resumed = guide_in(dir.path());
    resumed.resume(&lines, dir.path());
    assert!(resumed.unrun_seeds.is_empty(), "both plans ran as written");
    assert_eq!(
        resumed.corpus.len(),
        3,
        "two plans and the one mutation that found something"
    );
    assert_eq!(resumed.hits.len(), 30);
    assert!(resumed.choose(3).unwrap().choice.as_written.is_none());
}

#[test]
fn given_several_plans_when_guided_past_the_plans_as_written_should_run_every_plan_once_a_round() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    for run in 0..2 {
        guide.choose(run).unwrap();
    }
    // Plan 0's run finds far more than plan 1's: energy alone would send every child to plan 0.
    guide.observe(0, &ids(0..1000), &ids(0..1000), true);
    guide.observe(1, &ids(0..10), &ids(0..0), true);
    let mut orders = std::collections::HashSet::new();
    for round in 1..9u64 {
        let mut bases = Vec::new();
        for run in 2 * round..2 * round + 2 {
            let chosen = guide.choose(run).unwrap();
            assert_eq!(chosen.base, guide.base_of(run));
            let plan = Plan::load(&chosen.plan_file).unwrap();
            let expected = ["default", "reference-partition"][chosen.base];
            assert!(
                plan.name.0.starts_with(expected),
                "run {run}: {} on base {expected}",
                plan.name
            );
            guide.observe(
                run,
                &ids(run * 1000..run * 1000 + 5),
                &ids(run * 1000..run * 1000 + 5),
                true,
            );
            bases.push(chosen.base);
        }
        orders.insert(bases.clone());
        bases.sort_unstable();
        assert_eq!(bases, vec![0, 1], "round {round}: each plan once");
    }
    assert_eq!(orders.len(), 2, "the order within a round is shuffled: {orders:?}");
}

fn behaviours_in(contexts: &[&str]) -> RunBehaviours {
    use faultline_workloads::behaviour::Behaviour;
    let behaviours = contexts
        .iter()
        .enumerate()
        .map(|(i, context)| Behaviour {
            id: BehaviourId(1_000 + i as u64),
            kind: BehaviourKind::Transition,
            text: format!("{context} | up:backup up:backup up:primary -> down up:backup up:primary"),
            first_ms: 0,
        })
        .collect();
    RunBehaviours {
        version: faultline_workloads::behaviour::BEHAVIOURS_VERSION,
        behaviours,
        dropped: 0,
        template_uses: Default::default(),
    }
}

#[test]
fn given_a_mutated_run_when_chosen_should_aim_at_triggers_that_validate_and_count_the_contexts_its_run_showed() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    for run in 0..2 {
        let chosen = guide.choose(run).unwrap();
        let plan = Plan::load(&chosen.plan_file).unwrap();
        assert!(
            !plan
                .nemesis
                .triggers
                .iter()
                .any(|t| matches!(t.value.when, Condition::At(_))),
            "a plan as written runs unaimed"
        );
        guide.saw(run, &behaviours_in(&["calm", "kill@primary"]), None);
        guide.observe(run, &ids(run * 10..run * 10 + 10), &ids(run * 10..run * 10 + 10), true);
    }
    let chosen = guide.choose(2).unwrap();
    let genome = genome_of(dir.path(), 2);
    assert!(!genome.shots.is_empty(), "{:?}", chosen.choice);
    assert!(
        genome.shots.iter().all(|s| s.context != "kill@primary"),
        "shown by both runs: not aimed at first"
    );
    let plan = Plan::load(&chosen.plan_file).expect("the aimed plan validates");
    let at: Vec<u64> = plan
        .nemesis
        .triggers
        .iter()
        .filter_map(|t| match t.value.when {
            Condition::At(at) => Some(at.0),
            _ => None,
        })
        .collect();
    let faults: usize = genome.shots.iter().map(|s| s.faults.len()).sum();
    assert_eq!(at.len(), faults, "every shot's fault is an `at` trigger of the plan");
    assert!(genome.shots.iter().all(|s| at.contains(&s.at_ms)));
    let said = chosen.choice.mutations.last().unwrap();
    assert!(
        said.starts_with("aimed at ") && said.contains("(never shown)"),
        "{said}"
    );
    // Its run showed the first shot's context, and nothing else it aimed at.
    let first = genome.shots[0].context.clone();
    guide.saw(2, &behaviours_in(&["calm", &first]), None);
    assert_eq!(guide.aimed.shots as usize, genome.shots.len());
    assert_eq!((guide.aimed.shown, guide.aimed.first), (1, 1));
    assert_eq!(guide.shown[&first], 1);
    assert_eq!(guide.shown["calm"], 3);
}

#[test]
fn given_a_logged_campaign_with_behaviours_when_resumed_should_count_the_contexts_its_runs_showed_and_their_aim() {
    let dir = tempfile::tempdir().unwrap();
    let mut guide = guide_in(dir.path());
    let mut lines = Vec::new();
    for run in 0..3 {
        let chosen = guide.choose(run).unwrap();
        let folder = format!("runs/{run}");
        std::fs::create_dir_all(dir.path().join(&folder)).unwrap();
        let genome = genome_of(dir.path(), run);
        // Every run showed `calm`; the aimed one also the context of its first shot.
        let mut contexts = vec!["calm".to_string()];
        contexts.extend(genome.shots.first().map(|s| s.context.clone()));
        let contexts: Vec<&str> = contexts.iter().map(String::as_str).collect();
        let behaviours = behaviours_in(&contexts);
        std::fs::write(
            dir.path().join(&folder).join(crate::run::analyze::BEHAVIOURS_FILE),
            serde_json::to_vec(&behaviours).unwrap(),
        )
        .unwrap();
        let new = behaviours.behaviours.iter().map(|b| b.id).collect();
        lines.push(logged(run, chosen, Some(folder), new, 0));
    }
    let shots = genome_of(dir.path(), 2).shots;
    assert!(!shots.is_empty(), "run 2 is a mutation, aimed");
    let mut resumed = guide_in(dir.path());
    resumed.resume(&lines, dir.path());
    assert_eq!(resumed.shown["calm"], 3);
    assert_eq!(resumed.shown[&shots[0].context], 1);
    assert_eq!(resumed.aimed.shots as usize, shots.len());
    assert_eq!((resumed.aimed.shown, resumed.aimed.first), (1, 1));
}
