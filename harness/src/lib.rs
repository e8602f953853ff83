//! faultline's harness: plans, the run lifecycle, node supervision, system adapters and the store. It wires the
//! `faults`, `workloads` and `reports` crates together and holds no fault, checker or report logic of its own.

pub mod analyze;
pub mod builtin;
pub mod campaign;
pub mod certify;
pub mod cleanup;
pub mod final_phase;
pub mod lab;
pub mod logging;
pub mod matrix;
pub mod merge;
pub mod plan;
pub mod progress;
pub mod recorder;
pub mod replay;
pub mod run;
pub mod runlock;
pub mod shrink;
pub mod store;
pub mod supervisor;
pub mod swarm;
pub mod system;
pub mod workload;
