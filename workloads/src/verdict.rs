//! Checker verdicts and how they combine: invalid beats unknown beats valid (as in Jepsen).

use serde::{Deserialize, Serialize};

/// The answer of a checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The property holds.
    Valid,
    /// The property is violated.
    Invalid,
    /// No answer within the budget, or the input could not be checked.
    Unknown,
}

impl Verdict {
    /// The worse of two verdicts: invalid beats unknown beats valid.
    pub fn combine(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Invalid, _) | (_, Verdict::Invalid) => Verdict::Invalid,
            (Verdict::Unknown, _) | (_, Verdict::Unknown) => Verdict::Unknown,
            _ => Verdict::Valid,
        }
    }

    /// The worst of many verdicts; valid when there are none.
    pub fn combine_all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        verdicts.into_iter().fold(Verdict::Valid, Verdict::combine)
    }

    /// The process exit code for a `check` command: 0 valid, 1 invalid, 2 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Valid => 0,
            Verdict::Invalid => 1,
            Verdict::Unknown => 2,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict::*;
    use super::*;

    #[test]
    fn given_mixed_verdicts_when_combined_should_prefer_invalid_then_unknown() {
        assert_eq!(Valid.combine(Unknown), Unknown);
        assert_eq!(Unknown.combine(Invalid), Invalid);
        assert_eq!(Invalid.combine(Valid), Invalid);
        assert_eq!(Verdict::combine_all([Valid, Valid]), Valid);
        assert_eq!(Verdict::combine_all([]), Valid);
        assert_eq!(serde_json::to_string(&Unknown).unwrap(), "\"unknown\"");
    }
}
