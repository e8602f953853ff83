//! Clock faults: move one node's view of time, for that process only, through libfaketime.
//!
//! ```yaml
//! nemesis:
//!   process:
//!     interval: 4s
//!     faults:
//!       - {kind: clock, targets: one, duration: 2s..5s, bump: -30s..+30s}        # a step, held for the duration
//!       - {kind: clock, targets: primary, duration: 3s, strobe: {delta: 200ms, period: 10ms}}
//!       - {kind: clock, targets: [n2], duration: 5s, skew: 0.5x..1.5x}           # the clock's rate
//! ```
//!
//! Exactly one of `bump`, `strobe` and `skew` says what a `kind: clock` fault does; its `duration` is how long it
//! lasts (a strobe strobes that long). The value is drawn when the schedule is generated (or when a trigger fires),
//! so `plan --schedule` shows it and a seed always gives the same offsets. When the fault ends (or the fault phase
//! does), the node's clock is real time again.
//!
//! - **bump**: the node's clocks jump by the drawn offset (signed, e.g. `-30s..+30s`; `+` optional) and stay there.
//! - **strobe**: the node's clocks flip between `+delta` and real time every `period`, for the duration (Jepsen's
//!   strobe: time goes back and forth). The harness rewrites the control file at each flip; the history records the
//!   strobe once (its delta and period) and its heal, not every flip.
//! - **skew**: the node's clocks run at the drawn rate (`1.5x`: 1.5 s pass per real second), starting from the
//!   node's current time: no jump when the skew starts, one back to real time at its heal.
//!
//! One clock fault holds a node's clock at a time (a second one aimed at it is skipped, as a kill of a node another
//! fault holds is); clock faults compose with every other fault: a node killed under a bump restarts with its
//! clock still bumped, as a machine keeps its wrong clock across a process restart.
//!
//! How libfaketime is driven, and what it does, is in [`faketime`]; which binaries it can reach, in [`reach`].

pub mod faketime;
pub mod reach;

use crate::units::Millis;
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A signed offset in milliseconds, written in plans as `-30s`, `+250ms` or `5s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub i64);

impl Offset {
    /// Parses `-30s`, `+250ms`, `1m30s`.
    pub fn parse(text: &str) -> Result<Offset, String> {
        let text = text.trim();
        let (sign, rest) = match text.strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, text.strip_prefix('+').unwrap_or(text)),
        };
        let magnitude = Millis::parse(rest)
            .map_err(|_| format!("`{text}` is not a clock offset: write e.g. `-30s`, `+250ms`, `2m`"))?;
        let magnitude = i64::try_from(magnitude.0).map_err(|_| format!("clock offset `{text}` is too large"))?;
        Ok(Offset(sign * magnitude))
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "+" };
        write!(f, "{sign}{}", Millis(self.0.unsigned_abs()))
    }
}

/// An inclusive range of offsets, `-30s..+30s` (or one offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetRange {
    /// Smallest.
    pub min: Offset,
    /// Largest.
    pub max: Offset,
}

impl OffsetRange {
    /// Parses `-30s..+30s` or `5s`.
    pub fn parse(text: &str) -> Result<OffsetRange, String> {
        let (min, max) = match text.split_once("..") {
            Some((a, b)) => (Offset::parse(a)?, Offset::parse(b)?),
            None => {
                let one = Offset::parse(text)?;
                (one, one)
            }
        };
        if min > max {
            return Err(format!(
                "range `{text}` has min > max; write it as `MIN..MAX`, e.g. `-30s..+30s`"
            ));
        }
        Ok(OffsetRange { min, max })
    }
}

/// A clock rate, written `1.5x`, and ranges of them, `0.5x..2x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRange {
    /// Slowest.
    pub min: f64,
    /// Fastest.
    pub max: f64,
}

/// The fastest and slowest rates a plan may ask for: beyond them a node's timers mean nothing at all.
pub const RATE_BOUNDS: (f64, f64) = (0.01, 100.0);

impl RateRange {
    /// Parses `1.5x` or `0.5x..2x`.
    pub fn parse(text: &str) -> Result<RateRange, String> {
        let rate = |part: &str| -> Result<f64, String> {
            let part = part.trim();
            let number = part
                .strip_suffix('x')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|r| r.is_finite() && (RATE_BOUNDS.0..=RATE_BOUNDS.1).contains(r));
            number.ok_or_else(|| {
                format!(
                    "`{part}` is not a clock rate: write e.g. `1.5x` or `0.5x..2x` (between {}x and {}x)",
                    RATE_BOUNDS.0, RATE_BOUNDS.1
                )
            })
        };
        let (min, max) = match text.split_once("..") {
            Some((a, b)) => (rate(a)?, rate(b)?),
            None => {
                let one = rate(text)?;
                (one, one)
            }
        };
        if min > max {
            return Err(format!(
                "range `{text}` has min > max; write it as `MIN..MAX`, e.g. `0.5x..2x`"
            ));
        }
        Ok(RateRange { min, max })
    }
}

macro_rules! text_serde {
    ($type:ty, $display:expr) => {
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let display: fn(&$type) -> String = $display;
                s.serialize_str(&display(self))
            }
        }
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                <$type>::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

text_serde!(Offset, |o| o.to_string());
text_serde!(OffsetRange, |r| if r.min == r.max {
    r.min.to_string()
} else {
    format!("{}..{}", r.min, r.max)
});
text_serde!(RateRange, |r| if r.min == r.max {
    format!("{}x", r.min)
} else {
    format!("{}x..{}x", r.min, r.max)
});

/// A strobe: flip between `+delta` and real time every `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrobeSpec {
    /// How far the clock jumps at each flip (signed).
    pub delta: Offset,
    /// How long each of the two states lasts.
    pub period: Millis,
}

/// The shortest strobe period: each flip rewrites a file the node re-reads at every clock call.
pub const MIN_STROBE_PERIOD: Millis = Millis(1);

/// What a plan's `kind: clock` fault says it does, before the draw: the fields `bump`, `strobe`, `skew`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClockSpec {
    /// A step, drawn from this range.
    pub bump: Option<OffsetRange>,
    /// A strobe.
    pub strobe: Option<StrobeSpec>,
    /// A rate, drawn from this range.
    pub skew: Option<RateRange>,
}

impl ClockSpec {
    /// Whether the plan wrote none of the three fields.
    pub fn is_empty(&self) -> bool {
        self.bump.is_none() && self.strobe.is_none() && self.skew.is_none()
    }

    /// Checks the fields against the fault's kind: `kind: clock` needs exactly one; other kinds none.
    pub fn validate(&self, is_clock: bool, kind: &str) -> Result<(), String> {
        let given = [self.bump.is_some(), self.strobe.is_some(), self.skew.is_some()];
        let count = given.iter().filter(|g| **g).count();
        if !is_clock {
            return match count {
                0 => Ok(()),
                _ => Err(format!(
                    "`bump`, `strobe` and `skew` belong to `kind: clock`, not `kind: {kind}`"
                )),
            };
        }
        if count != 1 {
            return Err(
                "`kind: clock` needs exactly one of `bump: -30s..+30s`, `strobe: {delta: 200ms, period: 10ms}` or \
                 `skew: 1.5x`"
                    .into(),
            );
        }
        if let Some(strobe) = self.strobe {
            if strobe.period < MIN_STROBE_PERIOD {
                return Err(format!(
                    "strobe period must be >= {MIN_STROBE_PERIOD} (e.g. `period: 10ms`)"
                ));
            }
            if strobe.delta.0 == 0 {
                return Err("a strobe with `delta: 0s` moves nothing; give it a delta such as `200ms`".into());
            }
        }
        Ok(())
    }

    /// Draws the fault's change from `rng` (only called for `kind: clock`, so other plans' schedules do not move).
    pub fn draw(&self, rng: &mut impl Rng) -> Option<ClockShift> {
        if let Some(bump) = self.bump {
            return Some(ClockShift::Bump {
                offset_ms: rng.gen_range(bump.min.0..=bump.max.0),
            });
        }
        if let Some(strobe) = self.strobe {
            return Some(ClockShift::Strobe {
                delta_ms: strobe.delta.0,
                period_ms: strobe.period.0.max(MIN_STROBE_PERIOD.0),
            });
        }
        let skew = self.skew?;
        let rate = if skew.min == skew.max {
            skew.min
        } else {
            rng.gen_range(skew.min..=skew.max)
        };
        // Three decimals: the control file and the history carry what a person reads.
        Some(ClockShift::Skew {
            rate: (rate * 1000.0).round() / 1000.0,
        })
    }
}

/// What one clock fault does to a node's clock, drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum ClockShift {
    /// The clock jumps by `offset_ms` and stays there.
    Bump {
        /// Signed offset from real time.
        offset_ms: i64,
    },
    /// The clock flips between `+delta_ms` and real time every `period_ms`.
    Strobe {
        /// Signed offset of the strobe's far state.
        delta_ms: i64,
        /// How long each state lasts.
        period_ms: u64,
    },
    /// The clock runs at `rate` from its current time.
    Skew {
        /// Faked seconds per real second.
        rate: f64,
    },
}

// A drawn rate is finite (RATE_BOUNDS), so equality is total on what a schedule holds.
impl Eq for ClockShift {}

impl ClockShift {
    /// The plan fields that draw exactly this change again (a replay's script).
    pub fn as_spec(&self) -> ClockSpec {
        match *self {
            ClockShift::Bump { offset_ms } => ClockSpec {
                bump: Some(OffsetRange {
                    min: Offset(offset_ms),
                    max: Offset(offset_ms),
                }),
                ..ClockSpec::default()
            },
            ClockShift::Strobe { delta_ms, period_ms } => ClockSpec {
                strobe: Some(StrobeSpec {
                    delta: Offset(delta_ms),
                    period: Millis(period_ms),
                }),
                ..ClockSpec::default()
            },
            ClockShift::Skew { rate } => ClockSpec {
                skew: Some(RateRange { min: rate, max: rate }),
                ..ClockSpec::default()
            },
        }
    }

    /// Its kind, as the history and plans name it.
    pub fn kind(&self) -> &'static str {
        match self {
            ClockShift::Bump { .. } => "bump",
            ClockShift::Strobe { .. } => "strobe",
            ClockShift::Skew { .. } => "skew",
        }
    }
}

#[cfg(test)]
mod tests;
