//! Clock faults as process faults: they move a node's clock through the lab ([`Lab::clock`]) without touching its
//! process, hold its clock (one clock fault per node at a time, apart from what holds its process), and heal it to
//! real time.

use super::{fault_value, merge, Lab, ProcessFault, ProcessFaults, ScheduledFault};
use faultline_workloads::history::Nemesis;
use serde_json::{json, Value};

impl<L: Lab> ProcessFaults<'_, L> {
    /// Moves the clocks of `candidates` no other clock fault holds (whether their processes run or not), and records
    /// each change: `clock` with the fault's id, target, source and the change (`clock: {kind, offset_ms | delta_ms,
    /// period_ms | rate}`).
    pub(super) async fn start_clock(&mut self, fault: &ScheduledFault, candidates: Vec<usize>) -> Result<(), String> {
        let Some(shift) = fault.detail.clock else {
            debug_assert!(false, "a clock fault without its drawn change: {fault:?}");
            return Err("a clock fault without its drawn change".into());
        };
        let free: Vec<usize> = {
            let mut clocks = self.states.clocks();
            let free: Vec<usize> = candidates
                .into_iter()
                .filter(|&node| clocks.get(node) == Some(&None))
                .collect();
            for &node in &free {
                clocks[node] = Some(fault.id);
            }
            free
        };
        if free.is_empty() {
            return Err(format!(
                "{}: every target's clock is held by another clock fault",
                fault.target
            ));
        }
        let mut affected = Vec::new();
        for node in free {
            let mut value = fault_value(fault);
            match self.lab.clock(node, Some(shift)).await {
                Ok(details) => {
                    merge(&mut value, details);
                    affected.push(node);
                }
                Err(error) => {
                    self.states.clocks()[node] = None;
                    value["error"] = Value::from(error);
                }
            }
            self.lab.record(Nemesis::Clock, node, value);
        }
        if !affected.is_empty() {
            self.holding.insert(fault.id, (ProcessFault::Clock, affected));
        }
        Ok(())
    }

    /// Returns the clocks of `nodes` to real time and records each heal (`clock-heal`).
    pub(super) async fn heal_clocks(&mut self, fault_id: u64, nodes: Vec<usize>) {
        for node in nodes {
            let mut value = json!({"fault_id": fault_id});
            match self.lab.clock(node, None).await {
                Ok(details) => merge(&mut value, details),
                Err(error) => value["error"] = Value::from(error),
            }
            self.states.clocks()[node] = None;
            self.lab.record(Nemesis::ClockHeal, node, value);
        }
    }
}
