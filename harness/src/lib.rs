//! faultline's harness: plans, the run lifecycle, node supervision, system adapters and the store. It wires the
//! `faults`, `workloads` and `reports` crates together and holds no fault, checker or report logic of its own.
//!
//! The modules stand on floors; each names only its own floor and those below (`tests/layout.rs` keeps it so):
//!
//! | floor | module | what it is |
//! |---|---|---|
//! | command line | `main.rs`, [`cli`] | `main.rs` parses and dispatches; `cli/` has one module per command (its arguments and body), the exit codes and `--json` |
//! | many runs | [`explore`] | commands that drive child `faultline run`s: `shrink`, `matrix` (and its strategy `compare`) and `certify` on top of `campaign` (plans x seeds, child runs, the seed database, what each run explored) and the `guide` (a guided campaign's corpus, mutations and energy), `replay` (a run's recorded faults as a scripted plan) and `merge` (stores into one) |
//! | one run | [`run`] | one run end to end: the lifecycle (`run/mod.rs`), the `lab` (the running cluster), the `workload`, the `final_phase`, the `recorder` (the history), `analyze` (every check, results and report), the `store`, the `runlock`, `cleanup` of dead runs' leftovers, `logging` and `progress` |
//! | what is tested | [`plan`], [`system`] | the plan format (with `builtin` plans and `swarm`), and one adapter per system (`reference`, `etcd`, `iggy`, `exec`): its plan section, capabilities, launch and clients. One floor: an adapter owns its plan section, and a plan checks itself against the adapters' capabilities |
//! | processes | [`supervisor`] | the harness owns every process it starts: process groups, parent-death signals, the registry Ctrl-C and panics kill |

pub mod cli;
pub mod explore;
pub mod plan;
pub mod remote;
pub mod run;
pub mod supervisor;
pub mod system;
