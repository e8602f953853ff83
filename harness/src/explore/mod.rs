//! Many runs: each command here drives child `faultline run`s and reads what they stored.

pub mod campaign;
pub mod certify;
pub mod matrix;
pub mod merge;
pub mod replay;
pub mod shrink;
