//! Positions: how far a node got, as the system counts it.
//!
//! Most systems count with one number (the reference node's op, etcd's raft index, ZooKeeper's zxid). A system whose
//! replicas all write counts with a vector clock, one component per writer: Tarantool says `{1: 3181, 2: 5}` (replica
//! 1 wrote 3181 rows, replica 2 five). Two vector clocks are compared per component: a node that kept `{1: 3170,
//! 2: 9}` of `{1: 3181, 2: 5}` forgot 11 rows of replica 1, however far replica 2 went on. A max or a sum of the
//! components would call that a gain (9 > 5 hides 11 < 0 in a sum; a max reads only component 1 when one node
//! writes), which is why a durable position and a recovered one are compared here and nowhere else.
//!
//! In a history a scalar is a JSON number (as it always was) and a map a JSON object of numbers (`{"1": 3181, "2":
//! 5}`); in a log line a map may be written as Tarantool does (`{1: 3181, 2: 5}`), as JSON or anything between.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// How far a node got: one number, or a number per component (a vector clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// One number (an index, an op number, a zxid).
    Scalar(u64),
    /// A number per component, by component name as written (`"1"` for Tarantool's replica 1).
    Map(BTreeMap<String, u64>),
}

/// What a recovered position lacks of a durable one (see [`Position::forgotten`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Forgotten {
    /// Entries forgotten in all: for maps the sum, over the components, of how far each went back.
    pub entries: u64,
    /// For maps, each component that went back and by how much, in component order (empty for scalars).
    pub components: Vec<(String, u64)>,
}

impl Forgotten {
    /// The components that went back, as a person reads them (`component 1 went back by 11, component 3 by 4`);
    /// `None` for scalars and when nothing went back.
    pub fn describe(&self) -> Option<String> {
        let mut parts = self.components.iter();
        let (first, by) = parts.next()?;
        let mut text = format!("component {first} went back by {by}");
        for (component, by) in parts {
            text.push_str(&format!(", component {component} by {by}"));
        }
        Some(text)
    }
}

impl Position {
    /// From a history's or a status's JSON: a number (a scalar) or an object whose every value is a number (a map).
    /// Anything else (a string, a negative or fractional number, an array) is not a position.
    pub fn from_json(value: &Value) -> Option<Position> {
        match value {
            Value::Number(number) => number.as_u64().map(Position::Scalar),
            Value::Object(object) => object
                .iter()
                .map(|(component, n)| Some((component.trim().to_string(), n.as_u64()?)))
                .collect::<Option<BTreeMap<_, _>>>()
                .map(Position::Map),
            _ => None,
        }
    }

    /// From log text right after its marker (leading spaces skipped): a decimal number, a hexadecimal one after `0x`
    /// (ZooKeeper's zxids), or a map in braces, `{1: 3181, 2: 5}`, `{"1": 3181}` or `{1 = 3181}`. What follows the
    /// position is ignored.
    pub fn parse_prefix(text: &str) -> Option<Position> {
        parse(text).map(|(position, _)| position)
    }

    /// From a whole text (`"3181"`, `"0x1f"`, `"{1: 3181}"`, spaces around allowed): `None` when anything else is
    /// left over (`"12abc"`).
    pub fn from_text(text: &str) -> Option<Position> {
        let (position, rest) = parse(text)?;
        rest.trim().is_empty().then_some(position)
    }

    /// As a history records it: a number for a scalar, an object for a map.
    pub fn to_json(&self) -> Value {
        match self {
            Position::Scalar(n) => Value::from(*n),
            Position::Map(map) => Value::Object(map.iter().map(|(c, n)| (c.clone(), Value::from(*n))).collect()),
        }
    }

    /// The number, for a scalar.
    pub fn as_scalar(&self) -> Option<u64> {
        match self {
            Position::Scalar(n) => Some(*n),
            Position::Map(_) => None,
        }
    }

    /// One number that grows whenever the position does: the scalar, or the sum of a map's components (the entries
    /// written in all). For rough comparisons across nodes (lag, catching up), never for durability: see the module
    /// doc.
    pub fn total(&self) -> u64 {
        match self {
            Position::Scalar(n) => *n,
            Position::Map(map) => map.values().fold(0u64, |sum, n| sum.saturating_add(*n)),
        }
    }

    /// What `recovered` lacks of `self` (a durable position): for scalars how far it is below; for maps, per
    /// component, how far `recovered`'s is below `self`'s (a component `recovered` lacks counts as 0; one only
    /// `recovered` has is a gain and counts for nothing). `None` when one is a scalar and the other a map: they
    /// count different things.
    pub fn forgotten(&self, recovered: &Position) -> Option<Forgotten> {
        match (self, recovered) {
            (Position::Scalar(durable), Position::Scalar(recovered)) => Some(Forgotten {
                entries: durable.saturating_sub(*recovered),
                components: Vec::new(),
            }),
            (Position::Map(durable), Position::Map(recovered)) => {
                let mut components: Vec<(String, u64)> = durable
                    .iter()
                    .map(|(c, n)| (c.clone(), n.saturating_sub(recovered.get(c).copied().unwrap_or(0))))
                    .filter(|(_, by)| *by > 0)
                    .collect();
                components.sort_by(|(a, _), (b, _)| component_order(a, b));
                let entries = components.iter().fold(0u64, |sum, (_, by)| sum.saturating_add(*by));
                Some(Forgotten { entries, components })
            }
            _ => None,
        }
    }
}

/// Components in the order a person expects: numbers by value (2 before 10), then names.
fn component_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// A position at the start of `text` (after spaces), and what follows it.
fn parse(text: &str) -> Option<(Position, &str)> {
    let text = text.trim_start();
    match text.strip_prefix('{') {
        Some(inside) => {
            let (body, rest) = inside.split_once('}')?;
            let mut map = BTreeMap::new();
            for entry in body.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
                let (component, n) = entry.split_once([':', '='])?;
                let component = component.trim().trim_matches(|c| c == '"' || c == '\'').trim();
                let (n, left) = number(n.trim())?;
                if component.is_empty() || !left.trim().is_empty() {
                    return None;
                }
                map.insert(component.to_string(), n);
            }
            Some((Position::Map(map), rest))
        }
        None => number(text).map(|(n, rest)| (Position::Scalar(n), rest)),
    }
}

/// A decimal number at the start of `text`, or a hexadecimal one after `0x`, and what follows it.
fn number(text: &str) -> Option<(u64, &str)> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let n = u64::from_str_radix(&digits[..end], radix).ok()?;
    Some((n, &digits[end..]))
}

impl From<u64> for Position {
    fn from(n: u64) -> Position {
        Position::Scalar(n)
    }
}

/// A scalar equals its number (what adapters' tests of one-number systems compare with).
impl PartialEq<u64> for Position {
    fn eq(&self, other: &u64) -> bool {
        self.as_scalar() == Some(*other)
    }
}

/// A scalar as its number; a map as Tarantool writes a vector clock, `{1: 3181, 2: 5}`.
impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Scalar(n) => write!(f, "{n}"),
            Position::Map(map) => {
                let mut components: Vec<(&String, &u64)> = map.iter().collect();
                components.sort_by(|(a, _), (b, _)| component_order(a, b));
                let parts: Vec<String> = components.iter().map(|(c, n)| format!("{c}: {n}")).collect();
                write!(f, "{{{}}}", parts.join(", "))
            }
        }
    }
}

impl Serialize for Position {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Position, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Position::from_json(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "a position is a number or an object of numbers (a vector clock), not {value}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(components: &[(&str, u64)]) -> Position {
        Position::Map(components.iter().map(|(c, n)| (c.to_string(), *n)).collect())
    }

    #[test]
    fn given_log_text_after_a_marker_should_read_a_number_a_hex_number_or_a_map_in_any_of_its_notations() {
        assert_eq!(Position::parse_prefix(" 656 commit=647"), Some(Position::Scalar(656)));
        assert_eq!(
            Position::parse_prefix("0x900000115"),
            Some(Position::Scalar(0x9_0000_0115))
        );
        let vclock = map(&[("1", 3181), ("2", 5)]);
        for text in [
            "{1: 3181, 2: 5}",
            " {1:3181,2:5} and more",
            r#"{"1": 3181, "2": 5}"#,
            "{ 1 = 3181 , 2 = 0x5, }",
            "{'1': 3181, '2': 5}",
        ] {
            assert_eq!(Position::parse_prefix(text), Some(vclock.clone()), "{text}");
        }
        assert_eq!(
            Position::parse_prefix("{}"),
            Some(map(&[])),
            "a fresh instance's empty vclock"
        );
        for bad in ["x", "", "{1: 3181", "{1 3181}", "{: 3}", "{1: x}", "{1: 3 4}", "-3"] {
            assert_eq!(Position::parse_prefix(bad), None, "{bad}");
        }
        assert_eq!(Position::from_text(" {1: 3} "), Some(map(&[("1", 3)])));
        assert_eq!(Position::from_text("12abc"), None, "a whole text or nothing");
    }

    #[test]
    fn given_json_should_read_numbers_as_scalars_and_objects_of_numbers_as_maps_and_write_them_back_so() {
        assert_eq!(Position::from_json(&json!(717)), Some(Position::Scalar(717)));
        assert_eq!(Position::from_json(&json!(717)).unwrap().to_json(), json!(717));
        let vclock = Position::from_json(&json!({"1": 3181, "2": 5})).unwrap();
        assert_eq!(vclock, map(&[("1", 3181), ("2", 5)]));
        assert_eq!(vclock.to_json(), json!({"1": 3181, "2": 5}));
        for bad in [
            json!("717"),
            json!(-1),
            json!(1.5),
            json!([1, 2]),
            json!({"1": "x"}),
            json!(null),
        ] {
            assert_eq!(Position::from_json(&bad), None, "{bad}");
        }
        let parsed: Position = serde_json::from_value(json!({"1": 3})).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), json!({"1": 3}));
        assert!(serde_json::from_value::<Position>(json!("3")).is_err());
    }

    #[test]
    fn given_maps_should_display_components_in_numeric_order_as_a_vector_clock() {
        assert_eq!(
            map(&[("10", 1), ("2", 5), ("1", 3181)]).to_string(),
            "{1: 3181, 2: 5, 10: 1}"
        );
        assert_eq!(Position::Scalar(42).to_string(), "42");
        assert_eq!(map(&[]).to_string(), "{}");
    }

    #[test]
    fn given_a_recovered_position_should_count_per_component_what_went_back_and_ignore_what_advanced() {
        let durable = map(&[("1", 3181), ("2", 5)]);
        let back = durable.forgotten(&map(&[("1", 3170), ("2", 5)])).unwrap();
        assert_eq!(back.entries, 11);
        assert_eq!(back.describe().as_deref(), Some("component 1 went back by 11"));
        // Another writer advanced while the first held: nothing forgotten (a sum would see a gain, a max nothing).
        let advanced = durable.forgotten(&map(&[("1", 3181), ("2", 9)])).unwrap();
        assert_eq!(advanced, Forgotten::default());
        // One went back while another advanced more: still forgotten (a sum would call it a gain of 1).
        let hidden = durable.forgotten(&map(&[("1", 3178), ("2", 9)])).unwrap();
        assert_eq!(hidden.entries, 3);
        // A component the boot does not mention counts from 0.
        let missing = durable.forgotten(&map(&[("1", 3181)])).unwrap();
        assert_eq!(missing.describe().as_deref(), Some("component 2 went back by 5"));
        let two = map(&[("1", 10), ("3", 8)])
            .forgotten(&map(&[("1", 2), ("3", 4)]))
            .unwrap();
        assert_eq!(
            two.describe().as_deref(),
            Some("component 1 went back by 8, component 3 by 4")
        );
        assert_eq!(
            Position::Scalar(717).forgotten(&Position::Scalar(519)).unwrap().entries,
            198
        );
        assert_eq!(Position::Scalar(5).forgotten(&Position::Scalar(9)).unwrap().entries, 0);
        assert_eq!(
            Position::Scalar(5).forgotten(&durable),
            None,
            "a number and a map count different things"
        );
    }
}
