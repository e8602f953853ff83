//! Moments: shots anchored to what a node just logged, not to an offset of the fault phase.
//!
//! # Why
//!
//! Some bugs need a fault at a *moment*: a cut in the milliseconds after a replica adopted a view's log, a crash
//! between a decision and its persistence, a partition right as a configuration change commits. A timed shot
//! ([`super::aim`]) reaches such a moment only by luck. CrashTuner (Lu et al., SOSP 2019) injects crashes at the
//! points where a node changes its view of the cluster, found from its logs, and reports bugs random injection never
//! reached; Mallory (CCS 2023) steers by observed events. faultline sees every node's log live (the trigger engine
//! follows it every 5 ms), and the behaviours of earlier runs name the templates the nodes log.
//!
//! # What an anchored shot is
//!
//! "Within 0-50 ms after a node logs template T, fault F on role R": one `template` trigger
//! (`when: {template: T}`, `after: 0ms..50ms`, `max_fires: 1`, armed from its slot on, `not_before`), whose fault
//! hits the node that logged the line (`subject`), the primary, or a backup other than it (`other-backup`); or cuts
//! the network (`isolate-subject`, or a shape); or, where the plan damages disks, corrupts the node the plan names
//! (the line must then be that node's), with the plan's own cuts; or changes the membership as the plan does. It is
//! a trigger of the run's plan, so the stored plan reruns it, and a replay fires its fault after the same template on
//! the same node (`explore::replay`).
//!
//! # Which (T, F, R)
//!
//! The campaign counts, for every template its runs logged, its lines and its *marks*: the lines that came at most
//! 300 ms before the node that logged them changed its abstract status ([`faultline_workloads::behaviour::TemplateUse`]).
//! A template's weight is `(marks + 1) / (lines + 2)`: a line that begins or ends a transition (`view change started`,
//! `adopted log`) weighs near 1, a line logged on every operation near 0, a line seen once 1/3. A template's score is
//! its weight over `1 +` the runs that already anchored a shot to it, so the campaign goes through the templates in
//! proportion to their weights (measured with the weight alone: two templates took every anchored shot of
//! `reference-corruption` in a matrix, and the line its `mark-ignores-adopted-log` mutant needs a cut after was
//! never tried); for a template, the fault tried least with it. A run's anchored shots take the families of faults
//! the plan has in turn (crash and pause, clock, partition, corruption, membership), each the best pair of its
//! family, one per template, ties in a random order. `--shots random` draws pairs uniformly instead (the ablation's blind arm).

use super::aim::{self, Atom, Shot};
use super::genome::{Genome, Vocabulary};
use crate::plan::Plan;
use faultline_faults::process::{kind_name, ProcessFault, Target};
use faultline_faults::trigger::TriggeredFaultSpec;
use faultline_workloads::behaviour::TemplateUse;
use faultline_workloads::history::{Event, EventKind, History};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// An anchored shot's fault comes this long after its line (drawn per firing).
pub const AFTER_LINE_MS: (u64, u64) = (0, 50);
/// A firing whose fault started at most this long after its line counts as on time in the aim statistics: the
/// window plus the engine's reading of the log (every 5 ms) and the fault's own start.
pub const ON_TIME_MS: u64 = 100;

/// How far after a fault's start a line's stamp may be and still be the line that fired it (see [`moments_of`]).
const CLOCK_SLACK_NS: u64 = 2_000_000;

/// Which shots a guided campaign's runs get (`--shots`): the default and the arms of its ablations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ShotMode {
    /// Timed shots aimed at the least shown contexts and shots anchored to the best (template, fault, role) pairs,
    /// alternating over the run's slots.
    #[default]
    Both,
    /// Only timed shots (the build before anchored shots).
    Timed,
    /// Only anchored shots.
    Anchored,
    /// Both kinds, each chosen at random instead of aimed.
    Random,
    /// No shots at all: mutation and splicing only.
    None,
}

impl ShotMode {
    /// Whether its runs get timed shots, anchored shots.
    pub fn kinds(self) -> (bool, bool) {
        match self {
            ShotMode::Both | ShotMode::Random => (true, true),
            ShotMode::Timed => (true, false),
            ShotMode::Anchored => (false, true),
            ShotMode::None => (false, false),
        }
    }
}

/// One fault an anchored shot may start: its token, the fault, and the node whose line it must follow (a corruption
/// of the node the plan names follows that node's lines).
#[derive(Debug, Clone)]
pub(super) struct Anchorable {
    token: String,
    fault: TriggeredFaultSpec,
    node: Option<String>,
}

/// The faults anchored shots may start on plan `base`: each process fault kind of the timed shots' atoms (kill,
/// pause, stop, power loss) on the subject, the primary and another backup; the plan's clock faults on the roles it
/// allows them (a backup's as `other-backup`); `isolate-subject` and every shape where the plan partitions; the
/// plan's own corruptions (their cuts and way down as written) on the node they name, and its membership changes.
pub(super) fn anchorables(vocab: &Vocabulary, base: usize) -> Vec<Anchorable> {
    let mut out = Vec::new();
    let mut seen_kinds = Vec::new();
    for atom in aim::atoms(vocab, base) {
        let Atom { token, fault, role } = atom;
        let kind = fault.kind.name();
        match (kind, role) {
            ("partition", _) => out.push(Anchorable {
                token,
                fault,
                node: None,
            }),
            ("clock", Some(role)) => {
                let role = if role == "primary" { "primary" } else { "other-backup" };
                out.push(retargeted(&token, &fault, role));
            }
            (_, Some(_)) if !seen_kinds.contains(&kind) => {
                seen_kinds.push(kind);
                for role in ["subject", "primary", "other-backup"] {
                    out.push(retargeted(&token, &fault, role));
                }
            }
            _ => {}
        }
    }
    if out.iter().any(|a| a.fault.kind.name() == "partition") {
        let spec = serde_json::json!({"kind": "partition", "shape": "isolate-subject",
            "duration": format!("{}ms..{}ms", aim::SHOT_DURATION_MS.0, aim::SHOT_DURATION_MS.1), "takeover": true});
        out.push(Anchorable {
            token: "partition:isolate-subject".into(),
            fault: aim::fault_of(spec),
            node: None,
        });
    }
    out.extend(plan_faults(&vocab.plans[base]));
    out
}

/// A timed shot's atom (`token`: `KIND@ROLE`, `clock-bump@primary`) aimed at `role` instead.
fn retargeted(token: &str, fault: &TriggeredFaultSpec, role: &str) -> Anchorable {
    let mut spec = serde_json::to_value(fault).expect("a triggered fault serializes");
    spec["targets"] = serde_json::json!(role);
    let kind = token.split_once('@').map_or(token, |(kind, _)| kind);
    Anchorable {
        token: format!("{kind}@{role}"),
        fault: aim::fault_of(spec),
        node: None,
    }
}

/// The plan's corruptions and membership changes (random and scripted) as anchored faults, each once: a corruption
/// of named nodes follows a line of the first of them and hits it; one of a role (`one`, `minority`) hits the node
/// that logged the line. Their cuts, way down, change and length are the plan's.
fn plan_faults(plan: &Plan) -> Vec<Anchorable> {
    let Some(process) = &plan.nemesis.process else {
        return Vec::new();
    };
    // A random fault's and a scripted one's fields, as a triggered fault writes them.
    let fields = |duration: String, detail: faultline_faults::process::FaultDetail| serde_json::json!({"duration": duration, "stop": detail.stop, "cuts": detail.cuts, "change": detail.change});
    let written = (process.value.faults.iter()).map(|f| {
        (
            f.kind,
            f.targets.value.clone(),
            fields(f.duration.to_string(), f.detail()),
        )
    });
    let scripted = (process.value.script.iter()).map(|f| {
        (
            f.kind,
            f.targets.value.clone(),
            fields(f.duration.to_string(), f.detail()),
        )
    });
    let mut out: Vec<Anchorable> = Vec::new();
    for (kind, target, mut spec) in written.chain(scripted) {
        if !matches!(kind, ProcessFault::Corrupt | ProcessFault::Membership) {
            continue;
        }
        // A restore needs the snapshot its plan took earlier in the run; alone it has nothing to restore.
        if spec["cuts"].to_string().contains("restore-chunk") {
            continue;
        }
        let (targets, node) = match &target {
            Target::Nodes(names) => match names.first() {
                Some(first) => ("subject".to_string(), Some(first.clone())),
                None => continue,
            },
            Target::One | Target::Minority => ("subject".to_string(), None),
            other if kind == ProcessFault::Membership => (other.to_string(), None),
            _ => continue,
        };
        spec["kind"] = serde_json::json!(kind_name(kind));
        spec["targets"] = serde_json::json!(targets);
        let spec = strip_nulls(spec);
        let fault = aim::fault_of(spec);
        let what = match kind {
            ProcessFault::Corrupt => fault
                .cuts
                .first()
                .map_or("corrupt".to_string(), |c| format!("corrupt:{}", cut_name(c))),
            _ => format!(
                "membership:{}",
                fault
                    .change
                    .map_or("change".into(), |c| format!("{c:?}").to_lowercase())
            ),
        };
        let token = format!("{what}@{}", node.as_deref().unwrap_or("subject"));
        if !out.iter().any(|a| a.token == token) {
            out.push(Anchorable { token, fault, node });
        }
    }
    out
}

/// A cut's op as the plan writes it (`truncate-tail`).
fn cut_name(cut: &faultline_faults::disk::spec::SurgerySpec) -> String {
    serde_json::to_value(cut)
        .ok()
        .and_then(|v| v["op"].as_str().map(str::to_string))
        .unwrap_or_else(|| "cut".to_string())
}

fn strip_nulls(mut value: serde_json::Value) -> serde_json::Value {
    if let Some(map) = value.as_object_mut() {
        map.retain(|_, v| !v.is_null() && v != &serde_json::json!([]));
    }
    value
}

/// The family an anchored fault belongs to: `process` (kill, pause, stop, power loss), `clock`, `partition`,
/// `corrupt`, `membership`.
fn family(fault: &Anchorable) -> &'static str {
    match fault.fault.kind.name() {
        "kill" | "pause" | "stop" | "power-loss" => "process",
        other => other,
    }
}

/// A template's weight as an anchor (see the module docs).
pub fn weight(used: &TemplateUse) -> f64 {
    (used.marks as f64 + 1.0) / (used.lines as f64 + 2.0)
}

/// What an anchored shot aims at, as `corpus.json` and the run's changes say it: `TEMPLATE => TOKEN`.
pub fn label(template: &str, token: &str) -> String {
    format!("{template} => {token}")
}

/// Anchored shots for `genome`'s run at `slots` (their arming offsets): the best (template, fault, role) pairs by
/// the templates the campaign's runs logged (`templates`) and the pairs it tried (`tried`), one per template, each
/// slot's fault of the next family in turn (process, clock, partition, corruption, membership: those the plan has);
/// at random with `random`.
pub fn anchored(
    genome: &Genome,
    vocab: &Vocabulary,
    slots: &[u64],
    templates: &HashMap<String, TemplateUse>,
    tried: &HashMap<String, u32>,
    random: bool,
    rng: &mut impl Rng,
) -> Vec<Shot> {
    let faults = anchorables(vocab, genome.base);
    if faults.is_empty() || templates.is_empty() || slots.is_empty() {
        return Vec::new();
    }
    // Runs that had each template, whatever the fault.
    let mut template_tries: HashMap<&str, u32> = HashMap::new();
    for (shot, runs) in tried {
        if let Some((template, _)) = shot.rsplit_once(" => ") {
            *template_tries.entry(template).or_insert(0) += runs;
        }
    }
    let mut pairs: Vec<(f64, u32, &str, &Anchorable)> = templates
        .iter()
        .flat_map(|(template, used)| faults.iter().map(move |f| (template, used, f)))
        .map(|(template, used, fault)| {
            let runs = template_tries.get(template.as_str()).copied().unwrap_or(0);
            let tries = tried.get(&label(template, &fault.token)).copied().unwrap_or(0);
            (weight(used) / (1.0 + f64::from(runs)), tries, template.as_str(), fault)
        })
        .collect();
    pairs.sort_by(|a, b| a.2.cmp(b.2).then(a.3.token.cmp(&b.3.token))); // a fixed order before the seeded shuffle
    pairs.shuffle(rng);
    if !random {
        pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    // Each slot takes one family of faults in turn, from a random one on: each family its share, however many faults
    // it has (`reference-mixed` has 12 crash and pause faults on three roles, 5 clock faults, 7 partitions).
    let mut families: Vec<&'static str> = Vec::new();
    for fault in &faults {
        if !families.contains(&family(fault)) {
            families.push(family(fault));
        }
    }
    let first = rng.gen_range(0..families.len());
    let mut shots = Vec::new();
    let mut used_templates: Vec<&str> = Vec::new();
    for (i, &slot) in slots.iter().enumerate() {
        let want = families[(first + i) % families.len()];
        let pick = pairs
            .iter()
            .find(|(_, _, template, fault)| family(fault) == want && !used_templates.contains(template))
            .or_else(|| {
                pairs
                    .iter()
                    .find(|(_, _, template, _)| !used_templates.contains(template))
            });
        let Some(&(_, _, template, fault)) = pick else {
            break;
        };
        used_templates.push(template);
        shots.push(Shot {
            at_ms: slot,
            context: label(template, &fault.token),
            faults: vec![fault.fault.clone()],
            anchor: Some(aim::ShotAnchor {
                template: template.to_string(),
                node: fault.node.clone(),
            }),
        });
    }
    shots
}

/// What a campaign knows about templates and anchored shots ([`super::Guide`] keeps one).
#[derive(Debug, Clone, Default)]
pub struct Moments {
    /// Each template the campaign's runs logged: lines and marks over all of them.
    pub templates: HashMap<String, TemplateUse>,
    /// Each anchored shot (`TEMPLATE => FAULT@ROLE`) with the runs that had it.
    pub tried: HashMap<String, u32>,
    /// From line to fault, of every anchored firing whose line was found.
    latencies_ms: Vec<u64>,
}

impl Moments {
    /// Adds a run's template uses.
    pub fn learn(&mut self, behaviours: &faultline_workloads::behaviour::RunBehaviours) {
        for (template, used) in &behaviours.template_uses {
            let known = self.templates.entry(template.clone()).or_default();
            known.lines += used.lines;
            known.marks += used.marks;
        }
    }

    /// Counts a finished run's anchored shots as tried, and how they fired (from its folder `run_dir`) in `stats`.
    pub fn saw_shots(&mut self, anchored: &[&Shot], run_dir: Option<&Path>, stats: &mut aim::AimStats) {
        if anchored.is_empty() {
            return;
        }
        for shot in anchored {
            *self.tried.entry(shot.context.clone()).or_insert(0) += 1;
        }
        stats.anchored += anchored.len() as u32;
        let moments = run_dir.map(run_moments).transpose().unwrap_or_else(|e| {
            tracing::warn!("its anchored shots are not counted: {e:#}");
            None
        });
        for firing in moments.map(|m| m.fired).unwrap_or_default() {
            stats.fired += 1;
            if let Some(ms) = firing.line_to_fault_ms {
                stats.on_time += u32::from(ms <= ON_TIME_MS);
                self.latencies_ms.push(ms);
            }
        }
        self.latencies_ms.sort_unstable();
        let sorted = &self.latencies_ms;
        let at = |q: f64| sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied();
        stats.line_to_fault_p50_ms = at(0.5);
        stats.line_to_fault_p99_ms = at(0.99);
    }
}

/// One firing of an anchored shot in a run, as its history and node logs tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firing {
    /// The plan's trigger.
    pub trigger: u64,
    /// What the shot aimed at.
    pub label: String,
    /// From the line to the fault's start, when the line was found in the subject's log.
    pub line_to_fault_ms: Option<u64>,
}

/// How a run's anchored shots went: the shots armed, and the firings that applied a fault.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMoments {
    /// Anchored shots in the run's plan.
    pub armed: u32,
    /// Those that applied their fault.
    pub fired: Vec<Firing>,
}

/// The anchored shots of the run in `run_dir` (its `plan.yaml`, `history.jsonl`, node logs): for each firing that
/// applied a fault, the time from the line (the latest of its template in its subject's log at or before the fault
/// started) to the fault's start.
pub fn run_moments(run_dir: &Path) -> anyhow::Result<RunMoments> {
    let plan = Plan::load(&run_dir.join("plan.yaml"))?;
    let history = History::read_jsonl(&run_dir.join("history.jsonl"))?;
    let logs = crate::run::analyze::read_node_logs(run_dir);
    Ok(moments_of(&plan, &history, &logs))
}

/// [`run_moments`] of a plan, its history and its node logs.
pub fn moments_of(plan: &Plan, history: &History, logs: &BTreeMap<String, String>) -> RunMoments {
    use faultline_faults::trigger::Condition;
    let anchored: BTreeMap<u64, (String, String)> = plan
        .nemesis
        .triggers
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match (&t.value.when, &t.value.shot) {
            (Condition::Template(template), Some(shot)) => Some((i as u64, (template.pattern.clone(), shot.clone()))),
            _ => None,
        })
        .collect();
    let mut moments = RunMoments {
        armed: anchored.len() as u32,
        fired: Vec::new(),
    };
    if anchored.is_empty() {
        return moments;
    }
    let offset = faultline_workloads::nodelog::anchor_offset_ns(history);
    let lines = faultline_workloads::behaviour::lines::timed_lines(logs, offset);
    let is_trigger = |e: &Event| e.kind == EventKind::Nemesis && e.f == "trigger";
    // When each fault started: its first nemesis event other than the trigger's record.
    let mut started: HashMap<u64, u64> = HashMap::new();
    for event in history
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Nemesis && !is_trigger(e))
    {
        if let Some(id) = event.value["fault_id"].as_u64() {
            started.entry(id).or_insert(event.time_ns);
        }
    }
    for event in history.events.iter().filter(|e| is_trigger(e)) {
        let (Some(trigger), Some(fault_id)) = (event.value["trigger"].as_u64(), event.value["fault_id"].as_u64())
        else {
            continue;
        };
        let Some((template, label)) = anchored.get(&trigger) else {
            continue;
        };
        let subject = event.value["subject"].as_str().unwrap_or_default();
        let started_ns = started.get(&fault_id).copied().unwrap_or(event.time_ns);
        // A line's place on the history's clock is its node's stamp through the run-start anchor, good to about a
        // millisecond: a line stamped up to [`CLOCK_SLACK_NS`] after the fault is the one that fired it.
        let line_ns = lines
            .iter()
            .take_while(|l| l.time_ns <= started_ns + CLOCK_SLACK_NS)
            .filter(|l| l.node == subject && &l.template == template)
            .last()
            .map(|l| l.time_ns);
        moments.fired.push(Firing {
            trigger,
            label: label.clone(),
            line_to_fault_ms: line_ns.map(|at| started_ns.saturating_sub(at) / 1_000_000),
        });
    }
    moments
}

#[cfg(test)]
mod tests;
