//! The cuts of `corrupt` faults on a live cluster: each node has one surgeon for the whole run (seeded from the run
//! seed), so a chunk snapshot taken at one fault can be restored at a later one, and a cut names its files by the
//! adapter's file classes or a glob.

use super::Lab;
use crate::system::resolve_cut;
use faultline_faults::disk::spec::SurgerySpec;
use faultline_faults::process::node_name;
use serde_json::Value;
use std::sync::Mutex;

/// The adapter's file classes and the run's seed (each node's surgeon lives in its hands, made at its first cut).
#[derive(Default)]
pub(super) struct Cuts {
    seed: u64,
    classes: Vec<(String, String)>,
    armed: bool,
    /// Nodes a live cut damaged (or a wipe emptied) that have not caught up since: `Some(durable)`, the durable
    /// number the cluster had reached then, which the node must report again. A refusal of theirs is legitimate,
    /// and they do not count as holding the cluster's data.
    damaged: Vec<Mutex<Option<u64>>>,
    /// The plan wipes a node that refuses to boot after a live cut during the fault phase (`after_refusal: wipe`).
    pub(super) wipes_live_refusals: bool,
}

impl Lab {
    /// Prepares the cuts of `corrupt` faults: the run's seed, the adapter's file classes, and whether the fault phase
    /// wipes a node that refuses to boot after a cut.
    pub fn arm_cuts(&mut self, seed: u64, classes: Vec<(String, String)>, wipes_live_refusals: bool) {
        self.cuts = Cuts {
            seed,
            classes,
            armed: true,
            damaged: (0..self.node_count()).map(|_| Mutex::new(None)).collect(),
            wipes_live_refusals,
        };
    }

    /// Whether a live cut damaged `node` (or a wipe emptied it) and it has not caught up since (see
    /// [`Lab::note_ready`]).
    pub fn damaged_by_cut(&self, node: usize) -> bool {
        self.cuts
            .damaged
            .get(node)
            .is_some_and(|d| d.lock().map(|d| d.is_some()).unwrap_or(false))
    }

    /// The durable number `node` must report again to hold the cluster's data, while a live cut (or a wipe) has it
    /// damaged.
    pub(super) fn damage_needed(&self, node: usize) -> Option<u64> {
        self.cuts.damaged.get(node).and_then(|d| d.lock().ok().and_then(|d| *d))
    }

    /// `node` lost data on purpose (a cut, a wipe): it is damaged until it reports the durable number the cluster
    /// has reached now.
    pub fn mark_damaged(&self, node: usize) {
        let needed = self.cluster_durable();
        if let Some(Ok(mut damaged)) = self.cuts.damaged.get(node).map(|d| d.lock()) {
            *damaged = Some(needed.max(damaged.unwrap_or(0)));
        }
    }

    /// `node` is ready: it is no longer damaged once a status the history recorded since it started shows what the
    /// cluster had when it was damaged (any recorded status, for a system whose statuses carry no durable number).
    /// That is the checks' rule ([`faultline_workloads::checker::damage`]), so the lab never counts a node intact
    /// that the checks count damaged: a node that booted but has reported nothing yet is still damaged.
    pub fn note_ready(&self, node: usize) {
        let Some(needed) = self.damage_needed(node) else {
            return;
        };
        if self.recorded_durable_reaches(node, needed) {
            if let Some(Ok(mut damaged)) = self.cuts.damaged.get(node).map(|d| d.lock()) {
                *damaged = None;
            }
        }
    }

    /// The newest durable number `node` reported since it last started, if any (a vector clock's sum: the measure
    /// its recorded statuses carry).
    fn latest_durable(&self, node: usize) -> Option<u64> {
        let observed = self.observed.get(node)?.lock().ok()?;
        observed.samples.back().map(|(_, durable)| durable.total())
    }

    /// The highest durable number any node reported lately (0 when none does).
    fn cluster_durable(&self) -> u64 {
        (0..self.node_count())
            .filter_map(|node| self.latest_durable(node))
            .max()
            .unwrap_or(0)
    }

    /// Applies `cut` to `node`'s files (the node is down) with its surgeon; returns the surgery record. The node is
    /// damaged from here only if the cut changed bytes a reader reaches (the checks' own test,
    /// [`faultline_workloads::checker::damage::changed_data`]): a cut that failed ("nothing to cut") or changed
    /// nothing leaves the node as intact as it was, and its refusal, if any, is not the harness's doing.
    pub async fn cut_node(&self, node: usize, cut: &SurgerySpec) -> Result<Value, String> {
        let cut = resolve_cut(&self.cuts.classes, cut)?;
        if !self.cuts.armed {
            return Err("cuts are not armed for this run".into());
        }
        // A stream of its own ("disk/n2/live"), kept for the run: the final phase's cuts keep drawing what they
        // always drew, and a snapshot taken at one cut is there for a restore at a later one.
        let stream = format!("{}/live", node_name(node));
        let record = self.hands[node]
            .cut(&self.system.data_dir(node), &cut, (self.cuts.seed, &stream), true)
            .await?;
        if faultline_workloads::checker::damage::changed_data(&record) {
            self.mark_damaged(node);
        }
        Ok(record)
    }
}
