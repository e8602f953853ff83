//! faultline reports.
