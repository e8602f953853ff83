//! Whether a candidate still fails "as often as the original": a curtailed binomial test against the original's
//! measured reproduction rate.
//!
//! The original plan's replay runs `--baseline` times first; its rate `p0` is estimated by Laplace's rule of
//! succession, `(failed + 1) / (runs + 2)` (8 of 8 is not a certainty, and 0 of 8 is caught before: nothing to
//! shrink). A candidate then runs at most `n` tries and still fails when at least `need` of them fail the same way,
//! where (`n`, `need`) is the smallest `n` that bounds both mistakes:
//!
//! - calling a candidate that fails as often as the original "passes" (keeping a fault that did not matter):
//!   `P(X < need | n, p0) <= ALPHA`;
//! - calling one that fails [`RARER`] times less often "still fails" (dropping a fault that mattered, or a
//!   refinement that made the failure rare): `P(X >= need | n, p0 / RARER) <= BETA`.
//!
//! Every candidate is compared with the *original's* rate, not with the last accepted one's, so the rate cannot drift
//! down step by step. The test stops early (curtailment, exact): once `need` tries failed, or once so many passed
//! that `need` can no longer be reached; the remaining tries could not change the answer. When no `n` up to the
//! `--tries` cap bounds both, the cap is used with the `need` that keeps `ALPHA`, and the report says what `BETA`
//! it reached (a failure of 1 in 4 cannot be told from one of 1 in 12 in a dozen tries).
//!
//! Hand-written: the binomial tail is four lines, and the statistics crates on crates.io (statrs) would add a
//! dependency tree for one sum.

pub use faultline_reports::shrink::Rule;

/// The largest chance of rejecting a candidate that fails as often as the original.
pub const ALPHA: f64 = 0.1;
/// The largest chance of accepting a candidate that fails [`RARER`] times less often than the original.
pub const BETA: f64 = 0.2;
/// How much rarer a failure must be to count as "significantly below the original's".
pub const RARER: f64 = 3.0;

/// The rule-of-succession estimate of a failure rate from `failed` of `runs`.
pub fn estimate(failed: u32, runs: u32) -> f64 {
    (f64::from(failed) + 1.0) / (f64::from(runs) + 2.0)
}

/// `P(X < k)` for `X ~ Binomial(n, p)`.
pub fn below(n: u32, k: u32, p: f64) -> f64 {
    let mut term = (1.0 - p).powi(n as i32); // P(X = 0)
    let mut sum = 0.0;
    for i in 0..k.min(n + 1) {
        sum += term;
        // P(X = i + 1) from P(X = i).
        term *= f64::from(n - i) / f64::from(i + 1) * p / (1.0 - p).max(f64::MIN_POSITIVE);
    }
    sum.min(1.0)
}

/// The test for a failure whose original replay failed `failed` of `runs` times, with at most `max_tries` tries.
pub fn rule(failed: u32, runs: u32, max_tries: u32) -> Rule {
    let p0 = estimate(failed, runs);
    let p1 = p0 / RARER;
    let max_tries = max_tries.max(1);
    // The largest `need` that keeps ALPHA at `n` tries (the larger, the smaller BETA), if one does.
    let need_at = |n: u32| (1..=n).rev().find(|&k| below(n, k, p0) <= ALPHA);
    let make = |n: u32, need: u32| Rule {
        tries: n,
        need,
        rate: p0,
        alpha: below(n, need, p0),
        beta: 1.0 - below(n, need, p1),
    };
    for n in 1..=max_tries {
        if let Some(need) = need_at(n) {
            let rule = make(n, need);
            if rule.beta <= BETA {
                return rule;
            }
        }
    }
    make(max_tries, need_at(max_tries).unwrap_or(1))
}
