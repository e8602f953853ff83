//! What the checker benchmarks share.

/// This process's peak resident set (VmHWM), MiB; NaN where /proc does not say.
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}
