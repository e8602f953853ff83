//! The guide: a guided campaign (`faultline campaign --guided`) chooses each run's configuration from what earlier
//! runs did, as AFL chooses its next input, instead of drawing it blindly from the seed.
//!
//! # The loop
//!
//! Each run's *behaviours* ([`faultline_workloads::behaviour`]: log templates, abstract cluster transitions and
//! client outcomes in their fault contexts, cross-node template pairs, findings) are compared with everything the
//! campaign has seen. A run that showed something new joins the *corpus* as an entry: its configuration (a
//! [`genome::Genome`]: which of the plans' fault elements it kept, with their factors), its seed, and the behaviours
//! it found first. The next run is an entry, chosen by *energy*, with one to four small changes stacked
//! ([`mutate::havoc`]) and sometimes whole fault families spliced in from a second entry ([`mutate::splice`]), and
//! it gets *shots* of its own ([`aim`]): combinations of the plans' faults started together at offsets of its fault
//! phase, aimed at the fault contexts the campaign has shown least, and faults started right after a node logged
//! a line that marks a state change ([`moments`]). The plans as written are the seed corpus and run first.
//!
//! # Energy, admission and operators (why these rules)
//!
//! Choosing an entry is a bandit problem: each entry is an arm, a run of one of its children a pull, and the reward
//! is what that run found first. These lessons shape the loop:
//! - AFL-Fast (Böhme et al., CCS 2016): spend on inputs that exercise low-frequency paths. The reward of an entry
//!   is the *rarity* of what it and its children found: the sum, over those behaviours, of `1 / hits` (`hits`: how
//!   many runs of the campaign showed the behaviour since). A behaviour later runs keep showing was easy to reach and
//!   stops counting; one nobody reached again keeps its full weight. A plan as written counts only its children's
//!   finds: its own run came first and found everything for that reason alone. And a run's finds weigh against
//!   what runs of its time found ([`Guide::novelty_scale`]): a campaign's novelty decays whatever it runs, and
//!   counted raw, the earliest children's finds outweigh all later ones;
//! - UCB1 (Auer et al., 2002), as Mallory's Q-learning balances a known good action against an untried one: an
//!   entry's value is its mean reward per run plus `UCB_C * mean_reward_of_the_campaign * sqrt(2 ln(runs) / (1 +
//!   picks))`, so an entry tried once is not buried under one that did well early, and one that saturated yields;
//! - admission: in AFL most mutants find nothing and the corpus grows slowly. Here almost every run finds some
//!   behaviour no run showed (fault contexts combine without end), so a child joins the corpus only when it found
//!   at least as much as the median of the last [`ADMISSION_WINDOW`] runs: the corpus keeps the configurations that
//!   did better than usual, and the search climbs instead of walking;
//! - MOpt (Lyu et al., USENIX Security 2019): mutation operators are not equally useful for a given system. Each
//!   operator's weight is learned from what the children it made found ([`mutate::Operator`]; a direction, such as
//!   `faster` against `slower`, is an operator of its own);
//! - what rewards: only behaviours a configuration can steer ([`steers`]). A cross-node `pair` is two log lines within
//!   500 ms, and which lines of two busy nodes fall that close is mostly timing: measured on `etcd-mixed` (runs 20-40
//!   of three seeds each), guided runs found 1.5x uniform's new context lines and outcomes in fault contexts and 1.4x
//!   its transitions but 1.2x its pairs, and pairs were a third of an etcd run's new behaviours (60-95 a run; on
//!   `reference-mixed` about 3), so counted in the reward they blurred what the faults did; they still count in the
//!   campaign's behaviours and its curve.
//!
//! The next entry is the one of highest value (ties broken by a stream of the campaign seed and the run's index);
//! picks count when a run is chosen, so runs in flight at once go to different entries.
//!
//! # Several plans: rounds, as uniform runs them
//!
//! A campaign over several plans goes through them in rounds, as a uniform campaign does: each round every plan
//! once, in an order shuffled by the campaign seed and the round ([`Guide::base_of`]); energy chooses among the
//! entries *of that run's plan* (its plan as written and the children of it), and a splice may still take families
//! from any entry. A plan is its author's fault model, and each plan exposes bugs the others cannot (only the
//! membership plan changes the configuration; only the corruption plan cuts a WAL below its head), so no plan may
//! get fewer runs because others show more behaviours: behaviours say nothing of which plan exposes which bug.
//! Measured with one energy ranking over the seven general plans, a plan's share of 20 runs was whatever energy made
//! it (`reference-membership` ran four times in one campaign, so the other six shared 16), and guided
//! campaigns missed mutants that uniform caught (`rejoin-after-lost-tail`, only the corruption plan's). Within a
//! plan the search is guided; across plans it spends as uniform does, so a bug only one plan can expose gets as many
//! tries of that plan, each a configuration the guide chose.
//!
//! # What a guided run is
//!
//! An ordinary plan plus a seed: the genome renders to a plan ([`genome::Genome::render`]) that is validated like any
//! plan, written to `store/campaigns/<id>/guide/plans/run-<i>.yaml` (its genome beside it) and run by a child
//! `faultline run FILE --seed S`; its run folder keeps the plan as it ran, so `faultline run <run>/plan.yaml --seed S`
//! reruns it alone. `corpus.json` beside the plans lists the entries with their energy.
//!
//! # Resume and shards
//!
//! The campaign's behaviour log ([`faultline_reports::explored`]) is the corpus's source of truth: `--resume`
//! rebuilds the seen behaviours, their hits (from each run's `behaviours.json`) and the entries (from each logged
//! run that found something, and its genome file) and goes on from the next run index. Each shard of a sharded guided
//! campaign keeps its own corpus (`guide-shard<I>of<N>/`, `behaviours-shard<I>of<N>.jsonl`): shards explore apart,
//! and `faultline merge` joins their stores, where the campaign view draws the campaign's curve across shards.

pub mod aim;
pub mod genome;
pub mod moments;
pub mod mutate;

use crate::plan::Plan;
use anyhow::Context;
use faultline_faults::rng::stream;
use faultline_reports::explored::{Choice, ExploredRun};
use faultline_workloads::behaviour::{BehaviourId, BehaviourKind, RunBehaviours};
use genome::{Genome, Vocabulary};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// Whether behaviours of `kind` reward the guide: every kind but `pair`, whose novelty is which lines of two nodes
/// happened to fall within the pair window, not which faults the run chose (module docs, "what rewards").
pub fn steers(kind: BehaviourKind) -> bool {
    kind != BehaviourKind::Pair
}

/// What of a run rewards the guide ([`steers`]): the ids of its behaviours of a steering kind, and those of them
/// among `new` (what no earlier run of the campaign showed), in `new`'s order.
pub fn steering(behaviours: &RunBehaviours, new: &[BehaviourId]) -> (Vec<BehaviourId>, Vec<BehaviourId>) {
    let all: Vec<BehaviourId> = behaviours
        .behaviours
        .iter()
        .filter(|b| steers(b.kind))
        .map(|b| b.id)
        .collect();
    let of_kind: std::collections::HashSet<BehaviourId> = all.iter().copied().collect();
    let new = new.iter().copied().filter(|id| of_kind.contains(id)).collect();
    (all, new)
}

/// Chance that a child is spliced with a second entry first (AFL splices once its queue has cycled; here a fixed
/// share keeps families meeting from the start).
pub const SPLICE_PROBABILITY: f64 = 0.2;
/// Chance that a child keeps its parent's seed: the same schedule streams with one change (a local step); else a
/// fresh seed.
pub const KEEP_SEED_PROBABILITY: f64 = 0.25;
/// Renders a mutation may take before the child falls back to its parent's configuration with a fresh seed (a
/// mutation whose plan does not validate, e.g. a power loss spliced into a plan without the fault filesystem).
const RENDER_TRIES_MAX: u32 = 8;
/// Entries the corpus keeps; past it the entry with the least energy that is not a seed plan goes.
pub const CORPUS_ENTRIES_MAX: usize = 512;
/// Runs whose new behaviours set the bar a child must reach to join the corpus (their median).
pub const ADMISSION_WINDOW: usize = 20;
/// Weight of the exploration bonus against the mean reward.
pub const UCB_C: f64 = 0.5;
/// Uses of an operator before its weight is learned rather than the default 1.
const OPERATOR_USES_MIN: u32 = 2;
/// Bounds of a learned operator weight.
const OPERATOR_WEIGHT: (f64, f64) = (0.25, 4.0);

/// Where a corpus entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A plan of the campaign as written (index): in the corpus from the start, for good.
    Plan(usize),
    /// The run (index) that found it.
    Run(u64),
}

/// A corpus entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Where it comes from.
    pub origin: Origin,
    /// Its configuration.
    pub genome: Genome,
    /// Its run seed (none for a plan as written that has not run yet).
    pub seed: Option<u64>,
    /// The behaviours it showed first.
    pub found: Vec<BehaviourId>,
    /// What a find of its run was worth when it ran ([`Guide::novelty_scale`]).
    pub found_scale: f64,
    /// Times it was chosen as a parent.
    pub picks: u32,
    /// What its children found first, each child apart (their rarity, at the scale of their time, is its reward).
    pub children: Vec<Find>,
}

/// What one run found first, and what a find was worth when it ran: `1 / the new behaviours of a typical run of
/// that time` ([`Guide::novelty_scale`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Find {
    /// The behaviours no earlier run had shown.
    pub found: Vec<BehaviourId>,
    /// Their worth per behaviour, before rarity.
    pub scale: f64,
}

/// A run the guide chose and has not heard back from.
#[derive(Debug, Clone)]
struct Pending {
    genome: Genome,
    seed: u64,
    parent: Origin,
    choice: Choice,
    operators: Vec<mutate::Operator>,
}

/// What the children an operator helped make found.
#[derive(Debug, Clone, Copy, Default)]
struct OperatorStats {
    uses: u32,
    reward: f64,
}

/// What the guide chose for a run.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The plan it rendered, written to `plan_file`.
    pub plan_file: PathBuf,
    /// Index of the campaign plan it is based on.
    pub base: usize,
    /// The run seed.
    pub seed: u64,
    /// Where it came from.
    pub choice: Choice,
}

/// The corpus and its bookkeeping (see the module docs).
pub struct Guide {
    vocab: Vocabulary,
    corpus: Vec<Entry>,
    hits: HashMap<BehaviourId, u32>,
    pending: HashMap<u64, Pending>,
    unrun_seeds: VecDeque<usize>,
    dir: PathBuf,
    campaign: String,
    campaign_seed: u64,
    operators: [OperatorStats; mutate::Operator::ALL.len()],
    /// New behaviours of the last [`ADMISSION_WINDOW`] runs.
    recent: VecDeque<usize>,
    /// New behaviours of the last plan as written that ran (the baseline before any child has run).
    as_written_found: usize,
    /// Each fault context the campaign's runs showed, with how many runs showed it ([`aim`]).
    shown: HashMap<String, u32>,
    /// Shots aimed, and how many of their contexts their runs then showed.
    aimed: aim::AimStats,
    /// Which shots runs get (`--shots`).
    shot_mode: moments::ShotMode,
    /// The templates the campaign's runs logged and the anchored shots it tried.
    moments: moments::Moments,
}

impl Guide {
    /// A guide over `plans` (the campaign's, as written) that keeps its files in `dir`.
    pub fn new(plans: Vec<Plan>, dir: PathBuf, campaign: &str, campaign_seed: u64) -> Guide {
        // The plans as written run first, in an order of the campaign seed's (so no plan is always first).
        let mut order: Vec<usize> = (0..plans.len()).collect();
        rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut stream(campaign_seed, "guide-seed-plans"));
        let unrun_seeds = order.into_iter().collect();
        let vocab = Vocabulary::new(plans);
        let corpus = (0..vocab.plans.len())
            .map(|p| Entry {
                origin: Origin::Plan(p),
                genome: vocab.seed_genome(p),
                seed: None,
                found: Vec::new(),
                found_scale: 1.0,
                picks: 0,
                children: Vec::new(),
            })
            .collect();
        Guide {
            vocab,
            corpus,
            hits: HashMap::new(),
            pending: HashMap::new(),
            unrun_seeds,
            dir,
            campaign: campaign.to_string(),
            campaign_seed,
            operators: [OperatorStats::default(); mutate::Operator::ALL.len()],
            recent: VecDeque::new(),
            as_written_found: 0,
            shown: HashMap::new(),
            aimed: aim::AimStats::default(),
            shot_mode: moments::ShotMode::default(),
            moments: moments::Moments::default(),
        }
    }

    /// The guide with its runs' shots as `mode` says (`--shots`; the default aims both kinds).
    pub fn with_shots(mut self, mode: moments::ShotMode) -> Guide {
        self.shot_mode = mode;
        self
    }

    /// The folder of a guided campaign's plans and corpus.
    pub fn dir_of(store_root: &Path, campaign: &str, shard: Option<(u64, u64)>) -> PathBuf {
        let name = match shard {
            Some((index, count)) if count > 1 => format!("guide-shard{index}of{count}"),
            _ => "guide".to_string(),
        };
        store_root.join("campaigns").join(campaign).join(name)
    }

    /// Rebuilds the corpus of a resumed campaign from its behaviour log (and each logged run's `behaviours.json`
    /// and genome file): hits, entries, and which seed plans already ran.
    pub fn resume(&mut self, runs: &[ExploredRun], store_root: &Path) {
        for run in runs {
            let behaviours = run
                .store_dir
                .as_ref()
                .and_then(|dir| std::fs::read(store_root.join(dir).join(crate::run::analyze::BEHAVIOURS_FILE)).ok())
                .and_then(|bytes| serde_json::from_slice::<RunBehaviours>(&bytes).ok());
            // Without the run's behaviours.json its kinds are unknown: its logged new behaviours count whole.
            let (all, new) = match &behaviours {
                Some(behaviours) => steering(behaviours, &run.new),
                None => (run.new.clone(), run.new.clone()),
            };
            let genome = std::fs::read(self.genome_file(run.run))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Genome>(&bytes).ok());
            let Some(genome) = genome else {
                tracing::warn!(
                    "guided campaign {}: run {} has no genome file in {}; its behaviours count, it is no corpus entry",
                    self.campaign,
                    run.run,
                    self.dir.display()
                );
                self.count_hits(&all);
                continue;
            };
            let choice = run.choice.clone().unwrap_or_default();
            if choice.as_written.is_some() {
                self.unrun_seeds.retain(|&p| p != genome.base);
            }
            let parent = choice.parent.map_or(Origin::Plan(genome.base), Origin::Run);
            let operators = choice
                .operators
                .iter()
                .filter_map(|o| serde_json::from_value(serde_json::json!(o)).ok())
                .collect();
            self.pending.insert(
                run.run,
                Pending {
                    genome,
                    seed: run.seed,
                    parent,
                    choice,
                    operators,
                },
            );
            if let Some(behaviours) = &behaviours {
                let dir = run.store_dir.as_ref().map(|dir| store_root.join(dir));
                self.saw(run.run, behaviours, dir.as_deref());
            }
            self.observe(run.run, &all, &new, run.complete);
        }
    }

    /// Takes the fault contexts of run `run`'s behaviours into account (before [`Guide::observe`]): how many runs
    /// showed each, whether the run showed what its timed shots aimed at, the templates it logged, and (from its
    /// folder `run_dir`) how its anchored shots fired.
    pub fn saw(&mut self, run: u64, behaviours: &RunBehaviours, run_dir: Option<&Path>) {
        let contexts: std::collections::BTreeSet<&str> =
            behaviours.behaviours.iter().filter_map(|b| b.context()).collect();
        self.moments.learn(behaviours);
        if let Some(pending) = self.pending.get(&run) {
            let anchored: Vec<&aim::Shot> = pending.genome.shots.iter().filter(|s| s.anchor.is_some()).collect();
            self.moments.saw_shots(&anchored, run_dir, &mut self.aimed);
            for shot in pending.genome.shots.iter().filter(|s| s.anchor.is_none()) {
                self.aimed.shots += 1;
                if contexts.contains(shot.context.as_str()) {
                    self.aimed.shown += 1;
                    if !self.shown.contains_key(&shot.context) {
                        self.aimed.first += 1;
                    }
                }
            }
        }
        for context in contexts {
            *self.shown.entry(context.to_string()).or_insert(0) += 1;
        }
    }

    fn count_hits(&mut self, all: &[BehaviourId]) {
        for id in all {
            *self.hits.entry(*id).or_insert(0) += 1;
        }
    }

    /// Takes a finished run into account: its behaviours' hits, and an entry when it found something new. A run
    /// that did not complete (a harness error, an interrupted run) adds no entry.
    pub fn observe(&mut self, run: u64, all: &[BehaviourId], new: &[BehaviourId], complete: bool) {
        self.count_hits(all);
        let Some(pending) = self.pending.remove(&run) else {
            return;
        };
        let as_written = pending.choice.as_written.is_some();
        let scale = self.novelty_scale();
        if let Some(parent) = self.corpus.iter_mut().find(|e| e.origin == pending.parent) {
            if as_written && complete {
                // The plan's own entry: what its first run found is what the plan as written finds.
                parent.found.extend_from_slice(new);
                parent.seed = Some(pending.seed);
            } else {
                parent.children.push(Find {
                    found: new.to_vec(),
                    scale,
                });
            }
        }
        if as_written && complete {
            self.as_written_found = new.len();
        }
        let bar = median(&self.recent);
        // The plans as written find the most (a campaign's first runs find everything new): they set no bar.
        if complete && !as_written {
            self.recent.push_back(new.len());
            if self.recent.len() > ADMISSION_WINDOW {
                self.recent.pop_front();
            }
            for operator in &pending.operators {
                let at = mutate::Operator::ALL
                    .iter()
                    .position(|o| o == operator)
                    .expect("a known operator");
                self.operators[at].uses += 1;
                self.operators[at].reward += new.len() as f64 * scale;
            }
        }
        if complete && !as_written && !new.is_empty() && new.len() >= bar {
            self.corpus.push(Entry {
                origin: Origin::Run(run),
                genome: pending.genome,
                seed: Some(pending.seed),
                found: new.to_vec(),
                found_scale: scale,
                picks: 0,
                children: Vec::new(),
            });
            self.evict();
        }
    }

    /// Past [`CORPUS_ENTRIES_MAX`], drops the non-seed entry with the least energy.
    fn evict(&mut self) {
        if self.corpus.len() <= CORPUS_ENTRIES_MAX {
            return;
        }
        let energies = self.energies();
        let weakest = (0..self.corpus.len())
            .filter(|&i| matches!(self.corpus[i].origin, Origin::Run(_)))
            .min_by(|&a, &b| energies[a].total_cmp(&energies[b]));
        if let Some(i) = weakest {
            self.corpus.remove(i);
        }
    }

    /// What one new behaviour is worth now, before its rarity: `1 / the new behaviours of a typical run` (the
    /// median of the last [`ADMISSION_WINDOW`] runs, or before any child ran, the last plan as written's run).
    ///
    /// A campaign's novelty decays: its second run finds a third of what the first did, its thirtieth a twentieth,
    /// whatever their configurations. Counted raw, the finds of the earliest children outweigh everything after
    /// them, and the entries that happened to run first stay the parents of every run (measured on `etcd-mixed`:
    /// runs 2-29 all children of runs 1 and 13, configurations with every fault half as frequent, until the corpus
    /// reached faster ones at run 30, whose children then found twice as much as uniform's runs of that time). So a
    /// run's finds are weighed against what runs of its time found, as a bandit with a drifting reward compares
    /// arms at the same moment; rarity (`1 / hits`) still decays each behaviour as later runs show it again.
    fn novelty_scale(&self) -> f64 {
        let typical = if self.recent.is_empty() {
            self.as_written_found
        } else {
            median(&self.recent)
        };
        1.0 / typical.max(1) as f64
    }

    /// The rarity of `found`: the sum of `1 / hits` over its behaviours (see the module docs).
    fn rarity(&self, found: &[BehaviourId]) -> f64 {
        found
            .iter()
            .map(|id| 1.0 / f64::from(self.hits.get(id).copied().unwrap_or(1).max(1)))
            .sum()
    }

    /// The runs an entry's mean reward is over: its children's, and its own when it is a run's (a plan as written
    /// ran first, so its own run found everything by coming first: no sample of what the plan is worth).
    fn samples(entry: &Entry) -> f64 {
        f64::from(entry.picks)
            + match entry.origin {
                Origin::Run(_) => 1.0,
                Origin::Plan(_) => 0.0,
            }
    }

    /// Chooses run `run` ([`Guide::choose`]) as a cell of the campaign scheduler: its plan file, its seed, the index
    /// of the campaign plan it is based on.
    pub fn cell(&mut self, run: u64) -> anyhow::Result<crate::explore::campaign::schedule::Cell> {
        let chosen = self.choose(run)?;
        Ok(crate::explore::campaign::schedule::Cell {
            plan: chosen.base,
            seed_index: run,
            seed: chosen.seed,
            nodes: None,
            plan_file: Some(chosen.plan_file),
        })
    }

    /// An entry's mean reward: the rarity of what its children (and a run's entry itself) found, each at the scale
    /// of its time ([`Guide::novelty_scale`]), per run; a plan as written not picked yet is worth what a typical run
    /// finds (1 at that scale).
    pub fn mean_reward(&self, entry: &Entry) -> f64 {
        let own = match entry.origin {
            Origin::Run(_) => self.rarity(&entry.found) * entry.found_scale,
            Origin::Plan(_) => 0.0,
        };
        let runs = Guide::samples(entry);
        if runs < 1.0 {
            return 1.0;
        }
        let children: f64 = entry
            .children
            .iter()
            .map(|child| self.rarity(&child.found) * child.scale)
            .sum();
        (own + children) / runs
    }

    /// Every entry's energy, in corpus order: its mean reward plus the exploration bonus (see the module docs).
    pub fn energies(&self) -> Vec<f64> {
        let runs_of = Guide::samples;
        let runs: f64 = self.corpus.iter().map(runs_of).sum::<f64>().max(1.0);
        let means: Vec<f64> = self.corpus.iter().map(|e| self.mean_reward(e)).collect();
        let rewards: f64 = self
            .corpus
            .iter()
            .zip(&means)
            .map(|(e, mean)| mean * runs_of(e).max(1.0))
            .sum();
        let scale = rewards / runs;
        self.corpus
            .iter()
            .zip(means)
            .map(|(e, mean)| mean + UCB_C * scale * (2.0 * runs.ln() / (1.0 + f64::from(e.picks))).sqrt())
            .collect()
    }

    /// The operators' weights, in [`mutate::Operator::ALL`] order: 1 until an operator was used
    /// `OPERATOR_USES_MIN` times, then its children's mean new behaviours (each at the scale of its time,
    /// [`Guide::novelty_scale`]) against every operator's.
    pub fn operator_weights(&self) -> [f64; mutate::Operator::ALL.len()] {
        let (uses, reward) = self
            .operators
            .iter()
            .fold((0u32, 0.0), |(u, r), s| (u + s.uses, r + s.reward));
        let overall = reward / f64::from(uses.max(1));
        let mut weights = [1.0; mutate::Operator::ALL.len()];
        for (weight, stats) in weights.iter_mut().zip(&self.operators) {
            if stats.uses >= OPERATOR_USES_MIN && overall > 0.0 {
                let mean = stats.reward / f64::from(stats.uses);
                *weight = (mean / overall).clamp(OPERATOR_WEIGHT.0, OPERATOR_WEIGHT.1);
            }
        }
        weights
    }

    /// Chooses run `run`'s configuration and writes its plan (see the module docs).
    pub fn choose(&mut self, run: u64) -> anyhow::Result<Chosen> {
        let mut rng = stream(self.campaign_seed ^ run.wrapping_mul(0x9e37_79b9_7f4a_7c15), "guide");
        let fresh_seed = u64::from(rng.gen::<u32>());
        let (genome, seed, parent, choice, operators) = match self.unrun_seeds.pop_front() {
            Some(p) => (
                self.vocab.seed_genome(p),
                fresh_seed,
                Origin::Plan(p),
                Choice {
                    as_written: Some(self.vocab.plans[p].name.0.clone()),
                    ..Choice::default()
                },
                Vec::new(),
            ),
            None => {
                let base = self.base_of(run);
                self.mutant(base, &mut rng, fresh_seed)
            }
        };
        let plan = self.render(&genome, run, &choice)?;
        let plan_file = self.plan_file(run);
        std::fs::create_dir_all(plan_file.parent().expect("a plan file has a folder"))
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        std::fs::write(&plan_file, plan.to_yaml()).with_context(|| format!("cannot write {}", plan_file.display()))?;
        std::fs::write(self.genome_file(run), serde_json::to_vec_pretty(&genome)?)
            .with_context(|| format!("cannot write {}", self.genome_file(run).display()))?;
        let base = genome.base;
        self.pending.insert(
            run,
            Pending {
                genome,
                seed,
                parent,
                choice: choice.clone(),
                operators,
            },
        );
        Ok(Chosen {
            plan_file,
            base,
            seed,
            choice,
        })
    }

    /// The plan run `run` is based on, once the plans as written have run: rounds of every plan once, each round in
    /// an order shuffled by the campaign seed and the round (see the module docs).
    pub fn base_of(&self, run: u64) -> usize {
        let plans = self.vocab.plans.len().max(1) as u64;
        let round = run / plans;
        let mut order: Vec<usize> = (0..plans as usize).collect();
        rand::seq::SliceRandom::shuffle(
            order.as_mut_slice(),
            &mut stream(
                self.campaign_seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                "guide-round",
            ),
        );
        order[(run % plans) as usize]
    }

    /// A child of an entry of plan `base` drawn by energy: mutated (and maybe spliced) until its plan validates,
    /// else the entry's own configuration with a fresh seed.
    fn mutant(
        &mut self,
        base: usize,
        rng: &mut impl Rng,
        fresh_seed: u64,
    ) -> (Genome, u64, Origin, Choice, Vec<mutate::Operator>) {
        let parent = self
            .draw(base, rng)
            .expect("the corpus holds the campaign's plans as written for good");
        self.corpus[parent].picks += 1;
        let entry = self.corpus[parent].clone();
        let parent_run = match entry.origin {
            Origin::Run(run) => Some(run),
            Origin::Plan(_) => None,
        };
        let mut mutations = vec![match entry.origin {
            Origin::Plan(p) => format!("from {} as written", self.vocab.plans[p].name),
            Origin::Run(run) => format!("from run {run}"),
        }];
        let seed = match entry.seed {
            Some(seed) if rng.gen_bool(KEEP_SEED_PROBABILITY) => {
                mutations.push("kept its seed".into());
                seed
            }
            _ => fresh_seed,
        };
        for _ in 0..RENDER_TRIES_MAX {
            let mut changes = mutations.clone();
            let mut genome = entry.genome.clone();
            let mut splice_with = None;
            if self.corpus.len() > 1 && rng.gen_bool(SPLICE_PROBABILITY) {
                let other = rng.gen_range(0..self.corpus.len());
                if other != parent {
                    if let Some((spliced, what)) = mutate::splice(&genome, &self.corpus[other].genome, &self.vocab, rng)
                    {
                        genome = spliced;
                        changes.extend(what);
                        splice_with = match self.corpus[other].origin {
                            Origin::Run(run) => Some(run),
                            Origin::Plan(_) => None,
                        };
                    }
                }
            }
            let (child, havoc, operators) = mutate::havoc(&genome, &self.vocab, &self.operator_weights(), rng);
            changes.extend(havoc);
            if self.validates(&child) {
                let child = self.aimed(child, rng, &mut changes);
                let choice = Choice {
                    as_written: None,
                    parent: parent_run,
                    splice: splice_with,
                    mutations: changes,
                    operators: operators.iter().map(name_of).collect(),
                };
                return (child, seed, entry.origin, choice, operators);
            }
        }
        mutations.push("its configuration, with a fresh seed (no mutation validated)".into());
        let genome = self.aimed(entry.genome, rng, &mut mutations);
        let choice = Choice {
            as_written: None,
            parent: parent_run,
            splice: None,
            mutations,
            operators: Vec::new(),
        };
        (genome, fresh_seed, entry.origin, choice, Vec::new())
    }

    /// `genome` with shots of its own ([`aim`]; a parent's shots aimed at what was rare then), said in `changes`;
    /// without any when none fit its plan or its plan with them does not validate.
    fn aimed(&self, mut genome: Genome, rng: &mut impl Rng, changes: &mut Vec<String>) -> Genome {
        genome.shots.clear();
        let plan = genome.render(&self.vocab);
        let known = aim::Known {
            shown: &self.shown,
            templates: &self.moments.templates,
            tried: &self.moments.tried,
        };
        let shots = aim::aim(&genome, &self.vocab, &plan, known, self.shot_mode, rng);
        if shots.is_empty() {
            return genome;
        }
        let mut aimed = genome.clone();
        aimed.shots = shots;
        if self.validates(&aimed) {
            changes.push(aim::describe(&aimed.shots, &self.shown));
            aimed
        } else {
            genome
        }
    }

    /// The entry of plan `base` of highest energy, ties broken at random.
    fn draw(&self, base: usize, rng: &mut impl Rng) -> Option<usize> {
        let energies = self.energies();
        let of_base: Vec<usize> = (0..energies.len())
            .filter(|&i| self.corpus[i].genome.base == base)
            .collect();
        let best = of_base.iter().map(|&i| energies[i]).fold(f64::NEG_INFINITY, f64::max);
        let ties: Vec<usize> = of_base.into_iter().filter(|&i| energies[i] >= best - 1e-9).collect();
        rand::seq::SliceRandom::choose(ties.as_slice(), rng).copied()
    }

    fn validates(&self, genome: &Genome) -> bool {
        let plan = genome.render(&self.vocab);
        Plan::parse_in(&plan.to_yaml(), "guided plan", &self.dir).is_ok()
    }

    /// The genome's plan, with its origin, validated.
    fn render(&self, genome: &Genome, run: u64, choice: &Choice) -> anyhow::Result<Plan> {
        let mut plan = genome.render(&self.vocab);
        let what = match &choice.as_written {
            Some(name) => format!("{name} as written"),
            None => choice.mutations.join("; "),
        };
        plan.origin = Some(format!("guided campaign {} run {run}: {what}", self.campaign));
        let text = plan.to_yaml();
        Plan::parse_in(&text, &self.plan_file(run).display().to_string(), &self.dir)
            .map_err(|e| anyhow::anyhow!("the guide wrote a plan that does not validate: {e}"))
    }

    fn plan_file(&self, run: u64) -> PathBuf {
        self.dir.join("plans").join(format!("run-{run}.yaml"))
    }

    fn genome_file(&self, run: u64) -> PathBuf {
        Guide::genome_path(&self.dir, run)
    }

    /// Where the guide whose folder is `dir` writes run `run`'s genome.
    pub fn genome_path(dir: &Path, run: u64) -> PathBuf {
        dir.join("plans").join(format!("run-{run}.genome.json"))
    }

    /// The choice behind run `run`, while it is pending.
    pub fn choice_of(&self, run: u64) -> Option<Choice> {
        self.pending.get(&run).map(|p| p.choice.clone())
    }

    /// Writes `corpus.json`: every entry with its energy, strongest first.
    pub fn save_corpus(&self) -> anyhow::Result<()> {
        let mut entries: Vec<(f64, &Entry)> = self.energies().into_iter().zip(&self.corpus).collect();
        entries.sort_by(|a, b| b.0.total_cmp(&a.0));
        let listed: Vec<serde_json::Value> = entries
            .iter()
            .map(|(energy, e)| {
                let plan = match e.origin {
                    Origin::Run(run) => format!("plans/run-{run}.yaml"),
                    Origin::Plan(p) => self.vocab.plans[p].name.0.clone(),
                };
                serde_json::json!({
                    "origin": e.origin, "energy": (energy * 1000.0).round() / 1000.0, "seed": e.seed,
                    "found": e.found.len(), "rarity": (self.rarity(&e.found) * 10.0).round() / 10.0,
                    "picks": e.picks, "children_found": e.children.iter().map(|c| c.found.len()).sum::<usize>(),
                    "mean_reward": (self.mean_reward(e) * 1000.0).round() / 1000.0, "plan": plan,
                    "genome": e.genome,
                })
            })
            .collect();
        let path = self.dir.join("corpus.json");
        std::fs::create_dir_all(&self.dir)?;
        let weights: serde_json::Map<String, serde_json::Value> = mutate::Operator::ALL
            .iter()
            .zip(self.operator_weights())
            .map(|(o, w)| (name_of(o), serde_json::json!((w * 100.0).round() / 100.0)))
            .collect();
        let doc = serde_json::json!({"campaign": self.campaign, "behaviours_seen": self.hits.len(),
            "contexts_shown": self.shown.len(), "shots": self.shot_mode, "templates_known": self.moments.templates.len(),
            "aim": self.aimed,
            "admission_bar": median(&self.recent), "operator_weights": weights, "entries": listed});
        faultline_reports::write_atomic(&path, &serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// The median of `values` (0 when there are none: the first children are all admitted).
fn median(values: &VecDeque<usize>) -> usize {
    let mut sorted: Vec<usize> = values.iter().copied().collect();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

/// An operator's name as the log writes it.
fn name_of(operator: &mutate::Operator) -> String {
    serde_json::to_value(operator)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
