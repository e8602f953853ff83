//! faultline workloads: the one history type, models, generators, clients' traits and checkers.

pub mod history;
