//! faultline-node: see the crate docs in lib.rs.
fn main() {}
