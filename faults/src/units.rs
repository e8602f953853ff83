//! Durations as plans write them (`500ms`, `3s`, `2m`) and ranges of them (`1s..4s`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A non-negative duration in milliseconds, written in plans as `250ms`, `3s`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub u64);

impl Millis {
    /// As a std duration.
    pub fn duration(self) -> Duration {
        Duration::from_millis(self.0)
    }

    /// Parses `250ms`, `3s`, `2m`, `1h`, and sums like `1m30s`. Rejects negatives and bare numbers.
    pub fn parse(text: &str) -> Result<Millis, String> {
        let text = text.trim();
        if text.starts_with('-') {
            return Err(format!(
                "negative duration `{text}`: durations must be >= 0, e.g. `500ms`, `3s`, `2m`"
            ));
        }
        let parsed = humantime::parse_duration(text)
            .map_err(|e| format!("`{text}` is not a duration ({e}); write e.g. `500ms`, `3s`, `2m`"))?;
        Ok(Millis(parsed.as_millis() as u64))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        if ms == 0 {
            write!(f, "0s")
        } else if ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Millis::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An inclusive range of durations, `1s..4s` (or a single duration meaning exactly that); `0ms` when a plan leaves it
/// out where it may (a membership change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MillisRange {
    /// Shortest.
    pub min: Millis,
    /// Longest.
    pub max: Millis,
}

impl MillisRange {
    /// Whether it is `0ms` (left out).
    pub fn is_zero(&self) -> bool {
        self.max.0 == 0
    }

    /// Parses `1s..4s` or `2s`.
    pub fn parse(text: &str) -> Result<MillisRange, String> {
        let (min, max) = match text.split_once("..") {
            Some((a, b)) => (Millis::parse(a)?, Millis::parse(b)?),
            None => {
                let d = Millis::parse(text)?;
                (d, d)
            }
        };
        if min > max {
            return Err(format!(
                "range `{text}` has min > max; write it as `MIN..MAX`, e.g. `1s..4s`"
            ));
        }
        Ok(MillisRange { min, max })
    }
}

impl fmt::Display for MillisRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}..{}", self.min, self.max)
        }
    }
}

impl Serialize for MillisRange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MillisRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        MillisRange::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_plan_durations_when_parsed_should_give_millis() {
        assert_eq!(Millis::parse("500ms").unwrap(), Millis(500));
        assert_eq!(Millis::parse("3s").unwrap(), Millis(3000));
        assert_eq!(Millis::parse("1m30s").unwrap(), Millis(90_000));
        assert!(Millis::parse("-1s").unwrap_err().contains("negative"));
        assert!(Millis::parse("3").is_err());
        assert_eq!(
            MillisRange::parse("1s..4s").unwrap(),
            MillisRange {
                min: Millis(1000),
                max: Millis(4000)
            }
        );
        assert!(MillisRange::parse("4s..1s").is_err());
        assert_eq!(Millis(90_000).to_string(), "90s");
    }
}

/// A fault's relative frequency among its kind's faults, written `2` or `0.5` (only the ratios matter).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Weight(f64);

/// Decimal places a weight keeps (`0.3333333` draws as `0.333333`).
const WEIGHT_PLACES: i32 = 6;

impl Weight {
    /// The weight `w`; `None` unless it is a finite number ≥ 0.
    pub fn new(w: f64) -> Option<Weight> {
        (w.is_finite() && w >= 0.0).then_some(Weight(w))
    }

    /// As a number.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Picks an index of `weights` by weight, or `None` when they are all 0. Integer weights draw exactly as they
    /// always have (one `gen_range` over their sum), so a plan's seeds keep their schedules; decimals are scaled by
    /// the smallest power of ten that makes every weight whole, so `0.5` against `1` is `1` against `2`.
    pub fn choose(weights: &[Weight], rng: &mut impl rand::Rng) -> Option<usize> {
        let scale = (0..=WEIGHT_PLACES)
            .map(|places| 10f64.powi(places))
            .find(|scale| {
                weights
                    .iter()
                    .all(|w| (w.0 * scale - (w.0 * scale).round()).abs() < 1e-9)
            })
            .unwrap_or(10f64.powi(WEIGHT_PLACES));
        let whole: Vec<u64> = weights.iter().map(|w| (w.0 * scale).round() as u64).collect();
        let total: u64 = whole.iter().sum();
        if total == 0 {
            return None;
        }
        let mut pick = rng.gen_range(0..total);
        for (index, &w) in whole.iter().enumerate() {
            if pick < w {
                return Some(index);
            }
            pick -= w;
        }
        unreachable!("pick < total")
    }
}

impl Default for Weight {
    fn default() -> Weight {
        Weight(1.0)
    }
}

impl From<u32> for Weight {
    fn from(w: u32) -> Weight {
        Weight(f64::from(w))
    }
}

impl fmt::Display for Weight {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Weight {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Whole weights stay integers in stored plans, as they were written.
        if self.0.fract() == 0.0 && self.0 < u64::MAX as f64 {
            s.serialize_u64(self.0 as u64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Weight {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Weight, D::Error> {
        let w = f64::deserialize(d)?;
        Weight::new(w).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "weight {w} is not a relative frequency: write a number ≥ 0, such as 2 or 0.5 (only the ratios between \
                 a kind's weights matter)"
            ))
        })
    }
}

#[cfg(test)]
mod weight_tests {
    use super::Weight;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Whole weights draw exactly as the integer draw they replaced (so seeds keep their schedules), and `0.5`
    /// against `1` is drawn as `1` against `2`.
    #[test]
    fn given_whole_or_decimal_weights_when_chosen_should_keep_integer_draws_and_honour_the_ratios() {
        let whole = [Weight::from(2), Weight::from(1), Weight::from(3)];
        let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(7), ChaCha8Rng::seed_from_u64(7));
        for _ in 0..1000 {
            let mut pick = b.gen_range(0..6u64);
            let expected = [2u64, 1, 3]
                .iter()
                .position(|&w| {
                    let hit = pick < w;
                    pick = pick.saturating_sub(w);
                    hit
                })
                .unwrap();
            assert_eq!(Weight::choose(&whole, &mut a), Some(expected));
        }
        let decimal = [Weight::new(0.5).unwrap(), Weight::from(1)];
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let firsts = (0..30_000)
            .filter(|_| Weight::choose(&decimal, &mut rng) == Some(0))
            .count();
        assert!(
            (9_000..11_000).contains(&firsts),
            "0.5 against 1 drew the first {firsts} times in 30000"
        );
        assert_eq!(Weight::choose(&[Weight::from(0)], &mut rng), None);
    }

    #[test]
    fn given_weights_in_yaml_when_read_should_take_decimals_and_refuse_negatives() {
        let w: Weight = serde_saphyr::from_str("0.5").unwrap();
        assert_eq!(w.get(), 0.5);
        assert_eq!(serde_json::to_string(&Weight::from(2)).unwrap(), "2");
        assert_eq!(serde_json::to_string(&w).unwrap(), "0.5");
        let err = serde_saphyr::from_str::<Weight>("-1").unwrap_err().to_string();
        assert!(err.contains("number ≥ 0"), "{err}");
    }
}
