//! faultline nemeses.
