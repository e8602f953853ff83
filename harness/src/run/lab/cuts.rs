//! The cuts of `corrupt` faults on a live cluster: each node has one surgeon for the whole run (seeded from the run
//! seed), so a chunk snapshot taken at one fault can be restored at a later one, and a cut names its files by the
//! adapter's file classes or a glob.

use super::Lab;
use crate::system::resolve_cut;
use faultline_faults::disk::spec::SurgerySpec;
use faultline_faults::disk::Surgeon;
use faultline_faults::process::node_name;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The adapter's file classes and each node's surgeon (made at its first cut).
#[derive(Default)]
pub(super) struct Cuts {
    seed: u64,
    classes: Vec<(String, String)>,
    surgeons: Vec<Arc<Mutex<Option<Surgeon>>>>,
    /// Nodes a live cut damaged that have not been seen ready since: a refusal of theirs is legitimate.
    damaged: Vec<AtomicBool>,
}

impl Lab {
    /// Prepares the cuts of `corrupt` faults: the run's seed and the adapter's file classes.
    pub fn arm_cuts(&mut self, seed: u64, classes: Vec<(String, String)>) {
        self.cuts = Cuts {
            seed,
            classes,
            surgeons: (0..self.node_count()).map(|_| Arc::default()).collect(),
            damaged: (0..self.node_count()).map(|_| AtomicBool::new(false)).collect(),
        };
    }

    /// Whether a live cut damaged `node` since it was last seen ready (see [`Lab::seen_ready`]).
    pub fn damaged_by_cut(&self, node: usize) -> bool {
        self.cuts.damaged.get(node).is_some_and(|d| d.load(Ordering::Relaxed))
    }

    /// `node` was seen ready, or wiped: whatever a cut did to it before is behind it.
    pub fn seen_ready(&self, node: usize) {
        if let Some(damaged) = self.cuts.damaged.get(node) {
            damaged.store(false, Ordering::Relaxed);
        }
    }

    /// Applies `cut` to `node`'s files (the node is down) with its surgeon; returns the surgery record.
    pub async fn cut_node(&self, node: usize, cut: &SurgerySpec) -> Result<Value, String> {
        let cut = resolve_cut(&self.cuts.classes, cut)?;
        let surgeon = self
            .cuts
            .surgeons
            .get(node)
            .cloned()
            .ok_or("cuts are not armed for this run")?;
        if let Some(damaged) = self.cuts.damaged.get(node) {
            damaged.store(true, Ordering::Relaxed);
        }
        let seed = self.cuts.seed;
        let data_dir = self.system.data_dir(node);
        tokio::task::spawn_blocking(move || {
            let mut surgeon = surgeon.lock().map_err(|_| "surgeon lock poisoned".to_string())?;
            // A stream of its own ("disk/n2/live"): the final phase's cuts keep drawing what they always drew.
            let surgeon = surgeon.get_or_insert_with(|| Surgeon::new(seed, &format!("{}/live", node_name(node))));
            let record = surgeon.apply(&data_dir, &cut).map_err(|e| e.to_string())?;
            serde_json::to_value(record).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}
