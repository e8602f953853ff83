//! Many runs: each command here drives child `faultline run`s and reads what they stored. A campaign records what
//! every run explored (its behaviours, new or not); the guide chooses a guided campaign's runs from that.

pub mod campaign;
pub mod certify;
pub mod compare;
pub mod guide;
pub mod matrix;
pub mod merge;
pub mod replay;
pub mod shrink;
