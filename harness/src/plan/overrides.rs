//! `faultline run PLAN --set PATH=VALUE`: plan values changed for one run without a plan file each (a database's
//! isolation level claimed per run: `--set workload.consistency=repeatable-read`, its client switched with
//! `--set client.env.PG_ISOLATION=repeatable-read`).
//!
//! PATH is the plan's own field names joined by dots (`workload.consistency`, `system.client.env.X`; a number picks
//! a list's item: `nemesis.faults.0.weight`); VALUE is YAML (`3`, `true`, `30s`, `[a, b]`, `{x: 1}`), read as the plan
//! file would read it. The plan is turned into its YAML tree, each setting is applied in order, and the result is
//! read and validated as a plan again, so a typo in PATH or a VALUE of the wrong kind is refused as a plan error that
//! names the setting (the original plan was valid, so whatever is wrong now is the settings'; places in the file are
//! not given). The stored `plan.yaml` holds the values as run and lists the settings under `overrides:`; its repro
//! command reruns them.

use super::{Plan, PlanError};
use serde_json::{Map, Value};

/// Applies every `PATH=VALUE` of `sets`, in order, to `plan`; the plan records them in `overrides`.
pub fn apply(plan: &Plan, sets: &[String]) -> Result<Plan, PlanError> {
    if sets.is_empty() {
        return Ok(plan.clone());
    }
    let refused = |set: &str, message: String| PlanError {
        origin: format!("{} with --set {set}", plan.name),
        line: 0,
        column: 0,
        message,
    };
    let mut tree: Value = serde_saphyr::from_str(&plan.to_yaml())
        .map_err(|e| refused(&sets[0], format!("the plan does not read back as YAML: {e}")))?;
    for set in sets {
        let (path, text) = set.split_once('=').ok_or_else(|| {
            refused(
                set,
                "expected PATH=VALUE, e.g. workload.consistency=serializable".into(),
            )
        })?;
        let value: Value = if text.trim().is_empty() {
            Value::String(String::new())
        } else {
            serde_saphyr::from_str(text).map_err(|e| refused(set, format!("the value is not YAML: {e}")))?
        };
        put(&mut tree, path, value).map_err(|message| refused(set, message))?;
    }
    let origin = format!("{} with --set {}", plan.name, sets.join(" --set "));
    let text = serde_saphyr::to_string(&KindFirst(&tree)).map_err(|e| PlanError {
        origin: origin.clone(),
        line: 0,
        column: 0,
        message: format!("cannot write the changed plan as YAML: {e}"),
    })?;
    // Read and validated as a plan file is; a place in that generated text would mean nothing to the person who
    // typed the settings, so errors name the settings instead.
    let mut changed = Plan::parse(&text, &origin).map_err(|e| PlanError {
        line: 0,
        column: 0,
        ..e
    })?;
    changed.overrides = plan.overrides.iter().chain(sets).cloned().collect();
    Ok(changed)
}

/// A YAML tree written with each map's `kind` first: sections that say what they are by `kind` (the system, a
/// fault) must start with it, and the tree's maps are otherwise sorted by key.
struct KindFirst<'a>(&'a Value);

impl serde::Serialize for KindFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                if let Some(kind) = map.get("kind") {
                    out.serialize_entry("kind", &KindFirst(kind))?;
                }
                for (key, value) in map.iter().filter(|(key, _)| key.as_str() != "kind") {
                    out.serialize_entry(key, &KindFirst(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&KindFirst(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Sets `path` (dot-separated) in `tree` to `value`, making missing maps on the way.
fn put(tree: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let keys: Vec<&str> = path.split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!(
            "`{path}` is no path: name fields joined by dots, e.g. workload.consistency"
        ));
    }
    let mut at = tree;
    for (depth, key) in keys.iter().enumerate() {
        let last = depth + 1 == keys.len();
        let walked = keys[..depth].join(".");
        if at.is_null() {
            *at = Value::Object(Map::new()); // an absent section (`client:` left out) becomes one
        }
        at = match at {
            Value::Object(map) => {
                if last {
                    map.insert(key.to_string(), value);
                    return Ok(());
                }
                map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()))
            }
            Value::Array(items) => {
                let index: usize = key
                    .parse()
                    .map_err(|_| format!("`{walked}` is a list: pick an item by its number, not `{key}`"))?;
                let len = items.len();
                let item = items
                    .get_mut(index)
                    .ok_or_else(|| format!("`{walked}` has {len} items: there is no item {index}"))?;
                if last {
                    *item = value;
                    return Ok(());
                }
                item
            }
            other => {
                return Err(format!(
                    "`{walked}` is {other}, not a map: `{key}` cannot be set inside it"
                ))
            }
        };
    }
    Err(format!("`{path}` names nothing to set"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_with(sets: &[&str]) -> Result<Plan, PlanError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        apply(&Plan::default_plan(), &sets)
    }

    #[test]
    fn given_settings_when_applied_should_change_those_values_validate_and_record_them() {
        let plan = default_with(&["time_limit=7s", "workload.concurrency=2", "seed=42"]).expect("valid settings");
        assert_eq!(plan.time_limit.0, 7_000);
        assert_eq!(plan.seed, Some(42));
        assert_eq!(plan.overrides, ["time_limit=7s", "workload.concurrency=2", "seed=42"]);
        let yaml = plan.to_yaml();
        assert!(
            yaml.contains("overrides:") && yaml.contains("workload.concurrency=2"),
            "{yaml}"
        );
        let again = Plan::parse(&yaml, "stored").expect("the stored plan reads back");
        assert_eq!(again.to_yaml(), yaml, "the stored plan is the plan as run");
    }

    #[test]
    fn given_a_typo_or_a_value_of_the_wrong_kind_when_applied_should_refuse_naming_the_setting() {
        let typo = default_with(&["workload.concurrenzy=2"]).expect_err("unknown field");
        assert!(typo.to_string().contains("--set workload.concurrenzy=2"), "{typo}");
        assert!(typo.to_string().contains("concurrenzy"), "{typo}");
        let kind = default_with(&["time_limit=[1, 2]"]).expect_err("a list is no duration");
        assert!(kind.to_string().contains("--set time_limit=[1, 2]"), "{kind}");
        let shape = default_with(&["time_limit"]).expect_err("no value");
        assert!(shape.message.contains("expected PATH=VALUE"), "{shape}");
        let inside = default_with(&["time_limit.x=1"]).expect_err("a scalar has no fields");
        assert!(inside.message.contains("not a map"), "{inside}");
    }

    /// A section the plan leaves out is made: the exec client's own environment, as the README's PostgreSQL example
    /// switches its isolation level.
    #[test]
    fn given_a_setting_inside_an_absent_map_when_applied_should_make_the_map() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans/exec-reference.yaml");
        let plan = Plan::load(&path).expect("the exec example loads");
        let sets = vec!["system.client.env.PG_ISOLATION=repeatable-read".to_string()];
        let changed = apply(&plan, &sets).expect("a new key in the client's environment");
        let yaml = changed.to_yaml();
        assert!(yaml.contains("PG_ISOLATION: repeatable-read"), "{yaml}");
    }
}
