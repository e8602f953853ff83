//! Aim: the part of a guided run chosen toward fault contexts no run of the campaign has shown yet, as directed
//! greybox fuzzing (AFLGo, Böhme et al., CCS 2017) spends on the targets coverage has not reached.
//!
//! # Why
//!
//! Most of what a run can show that no run showed is a log line, a state change or a client outcome *in a fault
//! context* ([`faultline_workloads::behaviour`]: the faults in force, each `KIND@ROLE` or `partition:SHAPE`). A
//! context is reached only when its faults overlap, and the random nemesis overlaps them by chance: measured on
//! `etcd-mixed` (40 runs of 20 s, three campaigns each mode), uniform campaigns showed 118-131 distinct contexts,
//! guided ones 123-198, while the plan's own faults and roles make 174 combinations of one to three of them (four
//! process fault kinds on the primary and on a backup, six partition shapes). A context a run shows for the first
//! time brings about 16 new behaviours (two faults) or 11 (three) in that run alone, and more in the runs that show
//! it again. Mutation and splicing move the chances; they cannot say "this combination never happened".
//!
//! # What it does
//!
//! Each mutated run gets up to [`SHOTS_PER_RUN_MAX`] *shots*: a combination of faults from the run's plans (a kill,
//! pause, graceful stop, power loss or clock fault of the primary and/or of a backup, a partition of one shape; a
//! clock fault only where and as the base plan does them, [`clock_atoms`]), started together
//! at an offset of the fault phase by `at` triggers (`when: {at: 4200ms}`), for [`SHOT_DURATION_MS`] (a combination
//! exists only while all its faults hold, so they share one length). The combinations are the ones the campaign has
//! shown least, those it never showed first, ties broken by the run's stream of the campaign seed; the offsets are
//! spread over the fault phase outside its stable windows. The shots are part of the run's plan (its triggers), so the
//! stored plan reruns them, and a replay replays their faults at their offsets like any timed fault. A shot aims; the
//! cluster decides: a fault whose target another fault already holds is skipped, a random fault may add itself to
//! the context, and the primary may move between the two starts. The guide counts, for each run, how many of its
//! shots' contexts the run then showed (`corpus.json`, `aim`).
//!
//! The plans as written run unaimed (they are the seed corpus, run as written); uniform campaigns never aim (they are
//! the blind baseline).

use super::genome::{Genome, Vocabulary, SHAPES};
use super::moments::ShotMode;
use crate::plan::Plan;
use faultline_faults::process::{kind_name, ProcessFault, Target, TargetedFaultSpec};
use faultline_faults::trigger::{Condition, LogCondition, NodeFilter, TriggerSpec, TriggeredFaultSpec, TriggeredKind};
use faultline_faults::units::{Millis, MillisRange};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Shots a run gets at most.
pub const SHOTS_PER_RUN_MAX: usize = 4;
/// How long a shot's faults hold (all the same: the context exists while they all do).
pub const SHOT_DURATION_MS: (u64, u64) = (2_000, 3_000);
/// Offsets between two shots' starts, at least: the first shot's faults have ended (or nearly) when the next starts.
const SHOT_GAP_MS: u64 = 3_500;
/// No shot before this offset: the cluster has just booted and the nemesis's first observations are coming in.
const FIRST_SHOT_MS: u64 = 500;
/// Random delay added to a shot's slot, so shots of different runs do not all start on the same offsets.
const JITTER_MS: u64 = 500;

/// A combination of faults started together (see the module docs), or one fault started right after a node logged
/// a template ([`super::moments`]: an anchored shot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shot {
    /// Offset of the fault phase they start at; an anchored shot's: from when it watches for its line.
    pub at_ms: u64,
    /// The fault context it aims at, as behaviours write it (`kill@backup+partition:one-way`); an anchored shot's
    /// `TEMPLATE => FAULT@ROLE`.
    pub context: String,
    /// Its faults, as triggers do them.
    pub faults: Vec<TriggeredFaultSpec>,
    /// The line an anchored shot follows; none for a timed shot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<ShotAnchor>,
}

/// What an anchored shot waits for: a line of `template`, on `node` (any node when none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShotAnchor {
    /// The masked line.
    pub template: String,
    /// Whose line (a corruption of a node the plan names follows that node's lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Shot {
    /// Its faults as triggers of a plan: `at` triggers, or an anchored shot's `template` triggers.
    pub fn triggers(&self) -> Vec<TriggerSpec> {
        self.faults
            .iter()
            .map(|fault| match &self.anchor {
                None => TriggerSpec {
                    when: Condition::At(Millis(self.at_ms)),
                    after: None,
                    probability: None,
                    max_fires: Some(1),
                    cooldown: None,
                    not_before: None,
                    not_after: None,
                    otherwise: None,
                    action: fault.clone(),
                    shot: Some(self.context.clone()),
                },
                Some(anchor) => {
                    let node = anchor
                        .node
                        .as_deref()
                        .and_then(faultline_faults::process::parse_node_name)
                        .map_or(NodeFilter::Any, NodeFilter::Node);
                    let (lo, hi) = super::moments::AFTER_LINE_MS;
                    TriggerSpec {
                        when: Condition::Template(LogCondition {
                            pattern: anchor.template.clone(),
                            node,
                        }),
                        after: Some(MillisRange {
                            min: Millis(lo),
                            max: Millis(hi),
                        }),
                        probability: None,
                        max_fires: Some(1),
                        cooldown: None,
                        not_before: Some(Millis(self.at_ms)),
                        not_after: None,
                        otherwise: None,
                        action: fault.clone(),
                        shot: Some(self.context.clone()),
                    }
                }
            })
            .collect()
    }
}

/// How the shots of a campaign's runs did ([`super::aim`], [`super::moments`]).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AimStats {
    /// Timed shots in runs that finished.
    pub shots: u32,
    /// Of them, those whose context the run showed.
    pub shown: u32,
    /// Of those, the ones whose context no earlier run had shown.
    pub first: u32,
    /// Anchored shots in runs that finished.
    pub anchored: u32,
    /// Of them, those that applied their fault (their line came after they armed, their target was free).
    pub fired: u32,
    /// Of those, the ones whose fault started at most [`super::moments::ON_TIME_MS`] after the line.
    pub on_time: u32,
    /// From line to fault over the firings whose line was found: the median and the 99th percentile.
    pub line_to_fault_p50_ms: Option<u64>,
    /// See `line_to_fault_p50_ms`.
    pub line_to_fault_p99_ms: Option<u64>,
}

/// One fault a shot may combine: its context token and the fault.
#[derive(Debug, Clone)]
pub(super) struct Atom {
    pub(super) token: String,
    pub(super) fault: TriggeredFaultSpec,
    /// `primary` or `backup` for a process fault, none for a partition.
    pub(super) role: Option<&'static str>,
}

/// The faults shots may combine on plan `base`: each process fault kind a retargetable element of the base's system
/// has (kill, pause, stop, power loss), on the primary and on a backup; the base plan's clock faults on the roles it
/// allows them ([`clock_atoms`]); each partition shape, when the base plan partitions.
pub(super) fn atoms(vocab: &Vocabulary, base: usize) -> Vec<Atom> {
    // Each kind once, with the grace of its first element (a graceful stop's).
    let mut kinds: BTreeMap<&str, Option<Millis>> = BTreeMap::new();
    for e in (0..vocab.elements.len()).filter(|&e| vocab.fits(e, base) && vocab.retargetable(e)) {
        if let Some(fault) = vocab.process_fault(e) {
            kinds.entry(kind_name(fault.kind)).or_insert(fault.grace);
        }
    }
    let duration = format!("{}ms..{}ms", SHOT_DURATION_MS.0, SHOT_DURATION_MS.1);
    let mut atoms = Vec::new();
    for (kind, grace) in &kinds {
        for role in ["primary", "backup"] {
            let mut spec = serde_json::json!({"kind": kind, "targets": role, "duration": duration});
            if let Some(grace) = grace {
                spec["grace"] = serde_json::json!(grace.to_string());
            }
            atoms.push(Atom {
                token: format!("{kind}@{role}"),
                fault: fault_of(spec),
                role: Some(role),
            });
        }
    }
    atoms.extend(clock_atoms(vocab, base));
    let partitions = vocab.plans[base]
        .nemesis
        .network
        .as_ref()
        .is_some_and(|n| !n.value.partitions.is_empty());
    if partitions {
        for shape in SHAPES {
            // A takeover: a shot's partition replaces one the random nemesis has in force, else the shot would
            // show that one's context (seen: a shot's partition skipped for a one-way cut in force).
            let spec = serde_json::json!({"kind": "partition", "shape": shape, "duration": duration, "takeover": true});
            atoms.push(Atom {
                token: format!("partition:{shape}"),
                fault: fault_of(spec),
                role: None,
            });
        }
    }
    atoms
}

/// The clock faults shots may combine on plan `base`: each mode of clock fault (bump, strobe, skew) the base plan
/// itself has (another plan's clock faults were sized for the clock bound of its own nodes' arguments), with the first
/// such element's change, on each role its target as written covers (`one` and `minority` cover
/// both, `primary` the primary, `backup` a backup): a plan keeps a node's clock for its own script by aiming its
/// random clock faults elsewhere (`reference-clock`'s backups), and a shot keeps that promise. Its length is the
/// shot's, cut to the element's longest: the change a skew makes grows with its length, and the plan sized it (its
/// lease bound) for the lengths it wrote.
fn clock_atoms(vocab: &Vocabulary, base: usize) -> Vec<Atom> {
    let mut first: BTreeMap<(&'static str, &'static str), &TargetedFaultSpec> = BTreeMap::new();
    for e in (0..vocab.elements.len()).filter(|&e| vocab.elements[e].plan == base) {
        let Some(fault) = vocab.process_fault(e).filter(|f| f.kind == ProcessFault::Clock) else {
            continue;
        };
        let mode = match (fault.bump, fault.strobe, fault.skew) {
            (Some(_), _, _) => "bump",
            (_, Some(_), _) => "strobe",
            (_, _, Some(_)) => "skew",
            _ => continue,
        };
        let roles: &[&'static str] = match fault.targets.value {
            Target::One | Target::Minority => &["primary", "backup"],
            Target::Primary | Target::NextPrimary => &["primary"],
            Target::Backup => &["backup"],
            _ => &[],
        };
        for role in roles {
            first.entry((mode, role)).or_insert(fault);
        }
    }
    first
        .into_iter()
        .map(|((mode, role), element)| {
            let longest = element.duration.max.0.max(1);
            let (lo, hi) = (SHOT_DURATION_MS.0.min(longest), SHOT_DURATION_MS.1.min(longest));
            let spec = serde_json::json!({"kind": "clock", "targets": role, "duration": format!("{lo}ms..{hi}ms")});
            let mut fault = fault_of(spec);
            fault.bump = element.bump;
            fault.strobe = element.strobe;
            fault.skew = element.skew;
            Atom {
                token: format!("clock-{mode}@{role}"),
                fault,
                role: Some(role),
            }
        })
        .collect()
}

/// A triggered fault from its plan syntax: the few fields a shot sets, the rest as a plan that leaves them out has
/// them (the struct has a field for every kind of fault and no default).
pub(super) fn fault_of(spec: serde_json::Value) -> TriggeredFaultSpec {
    serde_json::from_value(spec.clone()).unwrap_or_else(|e| panic!("a shot's fault {spec} does not parse: {e}"))
}

/// Every combination of one to three atoms a shot may start: at most one fault on the primary, one on a backup and
/// one partition (a node holds one down or pause fault at a time; one partition is in force at a time), each with
/// its context.
fn combinations(atoms: &[Atom]) -> Vec<(String, Vec<usize>)> {
    let of = |role: Option<&str>| -> Vec<Option<usize>> {
        std::iter::once(None)
            .chain((0..atoms.len()).filter(|&i| atoms[i].role == role).map(Some))
            .collect()
    };
    let mut combos = Vec::new();
    for primary in of(Some("primary")) {
        for backup in of(Some("backup")) {
            for partition in of(None) {
                // The partition first: it applies at once, and `isolate-primary` needs the primary still up. A
                // graceful stop last: the trigger engine applies one fault at a time, and a stop takes until its
                // node exits, up to its grace (seen: an etcd leader stopped under a partition took the whole 10 s,
                // and the shot's other faults came after it, inside the stable window, where they were skipped).
                let mut chosen: Vec<usize> = [partition, primary, backup].into_iter().flatten().collect();
                chosen.sort_by_key(|&i| atoms[i].fault.kind == TriggeredKind::Stop);
                if chosen.is_empty() {
                    continue;
                }
                let tokens: BTreeSet<&str> = chosen.iter().map(|&i| atoms[i].token.as_str()).collect();
                let context = tokens.into_iter().collect::<Vec<_>>().join("+");
                combos.push((context, chosen));
            }
        }
    }
    combos
}

/// The offsets shots of `plan` may start at: from [`FIRST_SHOT_MS`], [`SHOT_GAP_MS`] apart, each with room for its
/// shortest length before the phase ends and before the next stable window (where no fault may start or hold).
pub fn slots(plan: &Plan) -> Vec<u64> {
    let phase = plan.time_limit.0;
    let stable = plan
        .nemesis
        .process
        .as_ref()
        .and_then(|p| p.value.stable.clone())
        .filter(|s| s.every.0 > 0 && s.duration.0 > 0 && s.duration.0 < s.every.0);
    // The stable window a fault holding [start, end) would run into, as [from, to).
    let window_hit = |start: u64, end: u64| -> Option<(u64, u64)> {
        let stable = stable.as_ref()?;
        let period = start / stable.every.0 * stable.every.0;
        let from = period + stable.every.0 - stable.duration.0;
        (end > from).then_some((from, period + stable.every.0))
    };
    let mut slots = Vec::new();
    let mut at = FIRST_SHOT_MS;
    while at + SHOT_DURATION_MS.0 <= phase {
        match window_hit(at, at + SHOT_DURATION_MS.0) {
            Some((_, to)) => at = to.max(at + 1),
            None => {
                slots.push(at);
                at += SHOT_GAP_MS;
            }
        }
    }
    slots
}

/// What the campaign knows that shots aim by: the contexts its runs showed (context -> runs that showed it), the
/// templates they logged ([`super::moments`]) and the anchored shots it tried (label -> runs).
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    /// Runs that showed each fault context.
    pub shown: &'a HashMap<String, u32>,
    /// Each template's lines and marks over the campaign's runs.
    pub templates: &'a HashMap<String, faultline_workloads::behaviour::TemplateUse>,
    /// Runs that had each anchored shot.
    pub tried: &'a HashMap<String, u32>,
}

/// Shots for a run of `genome` (its base plan's slots and faults) as `mode` says: timed shots aimed at the contexts
/// `known.shown` counts least, anchored shots at the best (template, fault, role) pairs ([`super::moments`]),
/// alternating over the run's slots (a slot an anchored shot cannot take, before any template is known, goes to a
/// timed one); each chosen at random with [`ShotMode::Random`].
pub fn aim(
    genome: &Genome,
    vocab: &Vocabulary,
    plan: &Plan,
    known: Known<'_>,
    mode: ShotMode,
    rng: &mut impl Rng,
) -> Vec<Shot> {
    let (timed, anchored) = mode.kinds();
    let mut slots = slots(plan);
    if slots.len() > SHOTS_PER_RUN_MAX {
        slots.shuffle(rng);
        slots.truncate(SHOTS_PER_RUN_MAX);
        slots.sort_unstable();
    }
    let random = mode == ShotMode::Random;
    let anchored_slots: Vec<u64> = match (timed, anchored) {
        (_, false) => Vec::new(),
        (false, true) => slots.clone(),
        (true, true) => slots.iter().skip(1).step_by(2).copied().collect(),
    };
    let mut shots = super::moments::anchored(
        genome,
        vocab,
        &anchored_slots,
        known.templates,
        known.tried,
        random,
        rng,
    );
    if timed {
        let taken: Vec<u64> = shots.iter().map(|s| s.at_ms).collect();
        let free: Vec<u64> = slots.into_iter().filter(|s| !taken.contains(s)).collect();
        shots.extend(timed_shots(genome, vocab, free, known.shown, random, rng));
    }
    shots.sort_by_key(|s| s.at_ms);
    shots
}

/// Timed shots at `slots`: the combinations `shown` counts least (at random with `random`), each at its slot plus a
/// jitter.
fn timed_shots(
    genome: &Genome,
    vocab: &Vocabulary,
    slots: Vec<u64>,
    shown: &HashMap<String, u32>,
    random: bool,
    rng: &mut impl Rng,
) -> Vec<Shot> {
    let atoms = atoms(vocab, genome.base);
    let mut combos = combinations(&atoms);
    if combos.is_empty() || slots.is_empty() {
        return Vec::new();
    }
    // Least shown first, ties in a random order.
    combos.shuffle(rng);
    if !random {
        combos.sort_by_key(|(context, _)| shown.get(context).copied().unwrap_or(0));
    }
    slots
        .into_iter()
        .zip(combos)
        .map(|(slot, (context, chosen))| Shot {
            at_ms: slot + rng.gen_range(0..JITTER_MS),
            context,
            faults: chosen.iter().map(|&i| atoms[i].fault.clone()).collect(),
            anchor: None,
        })
        .collect()
}

/// What a run's shots aimed at, for its list of changes: `aimed at kill@backup+partition:one-way (never shown) at
/// 4.2 s, ...`.
pub fn describe(shots: &[Shot], shown: &HashMap<String, u32>) -> String {
    let each: Vec<String> = shots
        .iter()
        .map(|shot| {
            let at = shot.at_ms as f64 / 1000.0;
            if shot.anchor.is_some() {
                return format!("{} from {at:.1} s", shot.context);
            }
            let how = match shown.get(&shot.context).copied().unwrap_or(0) {
                0 => "never shown".to_string(),
                1 => "shown by 1 run".to_string(),
                n => format!("shown by {n} runs"),
            };
            format!("{} ({how}) at {at:.1} s", shot.context)
        })
        .collect();
    format!("aimed at {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::builtin;
    use faultline_faults::process::StableSpec;
    use rand::SeedableRng;

    fn mixed() -> (Vocabulary, Plan) {
        let mut plan = builtin::load("reference-mixed").unwrap();
        plan.time_limit = Millis(20_000);
        let vocab = Vocabulary::new(vec![plan.clone()]);
        (vocab, plan)
    }

    #[test]
    fn given_a_plan_with_stable_windows_when_slotted_should_start_shots_outside_them_with_room_before_them_and_the_end()
    {
        let (_, mut plan) = mixed();
        let stable = StableSpec {
            every: Millis(15_000),
            duration: Millis(4_000),
        };
        plan.nemesis.process.as_mut().unwrap().value.stable = Some(stable);
        // 11-15 s is stable: a shot at 11 s would run into it, so the next starts when it ends; none at 18.5 s, whose
        // shortest length would outlast the 20 s phase.
        assert_eq!(slots(&plan), [500, 4_000, 7_500, 15_000]);
        plan.nemesis.process.as_mut().unwrap().value.stable = None;
        assert_eq!(slots(&plan), [500, 4_000, 7_500, 11_000, 14_500, 18_000]);
        plan.time_limit = Millis(2_000);
        assert!(slots(&plan).is_empty(), "no room for a shot's shortest length");
    }

    #[test]
    fn given_the_plans_faults_when_combined_should_put_at_most_one_on_each_role_and_one_partition() {
        let (vocab, _) = mixed();
        let atoms = atoms(&vocab, 0);
        let tokens: Vec<&str> = atoms.iter().map(|a| a.token.as_str()).collect();
        // reference-mixed's retargetable kinds (its clock faults and the power loss of all are not), on each role,
        // and every shape.
        for token in [
            "kill@primary",
            "pause@backup",
            "power-loss@primary",
            "stop@backup",
            "partition:bridge",
        ] {
            assert!(tokens.contains(&token), "{tokens:?}");
        }
        // Its clock faults where it aims them: bumps and skews at `one` (either role), strobes at the primary only.
        let clocks: Vec<&str> = tokens.iter().copied().filter(|t| t.starts_with("clock")).collect();
        assert_eq!(
            clocks,
            [
                "clock-bump@backup",
                "clock-bump@primary",
                "clock-skew@backup",
                "clock-skew@primary",
                "clock-strobe@primary"
            ]
        );
        let combos = combinations(&atoms);
        // (1 + 4 + 3 clock on the primary) x (1 + 4 + 2 on a backup) x (1 + 6 shapes) - the empty one.
        assert_eq!(combos.len(), 8 * 7 * 7 - 1);
        for (context, chosen) in &combos {
            let roles: Vec<Option<&str>> = chosen.iter().map(|&i| atoms[i].role).collect();
            for role in [Some("primary"), Some("backup"), None] {
                assert!(roles.iter().filter(|r| **r == role).count() <= 1, "{context}");
            }
            assert_eq!(context.split('+').count(), chosen.len(), "{context}");
        }
    }

    #[test]
    fn given_clock_faults_when_made_shots_should_keep_the_plans_change_length_and_roles() {
        let (mixed, _) = mixed();
        let mut clock = builtin::load("reference-clock").unwrap();
        clock.time_limit = Millis(20_000);
        // A campaign of both: reference-mixed's nodes lease with J = 100 ms, reference-clock's with J = 1.3 s.
        let vocab = Vocabulary::new(vec![mixed.plans[0].clone(), clock]);
        let on_mixed = clock_atoms(&vocab, 0);
        let bump = on_mixed.iter().find(|a| a.token == "clock-bump@primary").unwrap();
        assert_eq!(bump.fault.kind, TriggeredKind::Clock);
        let faults = &vocab.plans[0].nemesis.process.as_ref().unwrap().value.faults;
        let written = faults.iter().find_map(|f| f.bump).unwrap();
        assert_eq!(
            format!("{:?}", bump.fault.bump),
            format!("{:?}", Some(written)),
            "reference-mixed's own bump (-100ms..-20ms), never reference-clock's -1300ms"
        );
        // The skew is 1s..2s in the plan: a shot's skew holds at most that long, so its offset stays in the bound.
        let skew = on_mixed.iter().find(|a| a.token == "clock-skew@backup").unwrap();
        assert!(skew.fault.skew.is_some());
        assert_eq!((skew.fault.duration.min.0, skew.fault.duration.max.0), (2_000, 2_000));
        assert_eq!(bump.fault.duration.max.0, SHOT_DURATION_MS.1);
        // reference-clock aims its random clock faults at backups only (the primary's clock is its script's).
        let on_clock: Vec<String> = clock_atoms(&vocab, 1).into_iter().map(|a| a.token).collect();
        assert_eq!(
            on_clock,
            ["clock-bump@backup", "clock-skew@backup", "clock-strobe@backup"]
        );
    }

    #[test]
    fn given_contexts_the_campaign_showed_when_aimed_should_take_never_shown_ones_first_then_the_least_shown() {
        let (vocab, plan) = mixed();
        let genome = vocab.seed_genome(0);
        let all = combinations(&atoms(&vocab, 0));
        let never = ["kill@backup+partition:bridge", "pause@backup+stop@primary"];
        let mut shown: HashMap<String, u32> = all
            .iter()
            .filter(|(c, _)| !never.contains(&c.as_str()))
            .map(|(c, _)| (c.clone(), 3))
            .collect();
        shown.insert("kill@primary".into(), 1);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let (templates, tried) = (HashMap::new(), HashMap::new());
        let known = Known {
            shown: &shown,
            templates: &templates,
            tried: &tried,
        };
        let shots = aim(&genome, &vocab, &plan, known, ShotMode::Timed, &mut rng);
        assert_eq!(shots.len(), SHOTS_PER_RUN_MAX);
        let mut aimed: Vec<&str> = shots.iter().map(|s| s.context.as_str()).collect();
        aimed[..2].sort_unstable();
        assert_eq!(
            aimed[..3],
            [
                "kill@backup+partition:bridge",
                "pause@backup+stop@primary",
                "kill@primary"
            ]
        );
        assert!(shots.windows(2).all(|w| w[0].at_ms < w[1].at_ms), "in time order");
        let bridge = shots.iter().find(|s| s.context.contains("bridge")).unwrap();
        let kinds: Vec<&str> = bridge.faults.iter().map(|f| f.kind.name()).collect();
        assert_eq!(kinds, ["partition", "kill"], "the partition first");
        assert!(bridge.faults[0].takeover);
        let stop = shots.iter().find(|s| s.context.contains("stop")).unwrap();
        let kinds: Vec<&str> = stop.faults.iter().map(|f| f.kind.name()).collect();
        assert_eq!(kinds, ["pause", "stop"], "a graceful stop last");
        assert!(describe(&shots, &shown).contains("kill@primary (shown by 1 run) at "));
    }
}
