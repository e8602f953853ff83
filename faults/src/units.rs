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
