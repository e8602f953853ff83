//! The verdict, as Elle gives it: what the claims forbid, what was found, which models the findings rule out and
//! which they leave standing.
//!
//! The claims are models (Elle's `:consistency-models`) and anomalies (Elle's `:anomalies`). Through the hierarchy of
//! `lattice.rs` they forbid a set of anomalies: everything the models and the models they imply forbid, the anomalies
//! named, and every anomaly implying one of those. Then, as Elle's `result-map`:
//! - **invalid** when an anomaly found is forbidden;
//! - **unknown** when nothing forbidden was found but something was not checked: the dependency graph has no edge at
//!   all (`empty-transaction-graph`), or a search the claims depend on ran out of budget (`cycle-search-timeout`), or
//!   a class they forbid needs edges that were not inferred;
//! - **valid** otherwise.
//!
//! `anomaly_types` lists, in Elle's spelling, the classes found that the claims forbid or that make a verdict unknown
//! (Elle's reportable set); `not` and `also_not` the models every class found rules out, weakest first (Elle's
//! boundary). faultline adds the models still held: those no class found (or left undecided) rules out.

use super::anomalies::Findings;
use super::lattice::{self, ConsistencyModel};
use super::models::AnomalyClass;
use super::{TxnCheckResult, TxnCheckStats};
use crate::verdict::Verdict;
use std::collections::{BTreeMap, BTreeSet};

/// What a check was asked to hold a history to.
#[derive(Debug, Clone)]
pub(crate) struct Claims {
    /// The models claimed.
    pub models: Vec<ConsistencyModel>,
    /// The anomalies named, as the hierarchy spells them.
    pub anomalies: Vec<&'static str>,
}

impl Claims {
    /// Every anomaly the claims forbid, by Elle name.
    pub fn prohibited(&self) -> BTreeSet<&'static str> {
        let mut prohibited = lattice::prohibited_by(&self.models);
        prohibited.extend(lattice::implying(self.anomalies.iter().copied()));
        prohibited
    }

    /// The classes the claims forbid.
    pub fn forbidden(&self) -> Vec<AnomalyClass> {
        let prohibited = self.prohibited();
        AnomalyClass::ALL
            .into_iter()
            .filter(|class| prohibited.contains(class.elle_name()))
            .collect()
    }

    /// The claims said in a few words, as what forbids: `strict-serializable`, `serializable and the claim of no
    /// G1`, `the claim of no G2`; `nothing claimed` when there are none.
    pub fn phrase(&self) -> String {
        let mut parts: Vec<String> = self.models.iter().map(|m| m.name().to_string()).collect();
        if !self.anomalies.is_empty() {
            parts.push(format!("the claim of no {}", self.anomalies.join(", no ")));
        }
        match parts.as_slice() {
            [] => "nothing claimed".to_string(),
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        }
    }
}

/// The verdict for the claims, the boundary of the models the findings rule out, and every model left standing.
pub(crate) fn judge(claims: &Claims, findings: Findings, undecided: BTreeMap<AnomalyClass, String>) -> TxnCheckResult {
    let forbidden = claims.forbidden();
    let found: BTreeSet<AnomalyClass> = findings.counts.keys().copied().collect();
    let found_names: BTreeSet<&'static str> = found.iter().map(|c| c.elle_name()).collect();
    // A class that could not be decided may be there: no model forbidding it is held.
    let maybe: BTreeSet<&'static str> = found_names
        .iter()
        .copied()
        .chain(undecided.keys().map(|c| c.elle_name()))
        .collect();
    let models_satisfied = lattice::held(&maybe);
    let strongest = lattice::strongest(&models_satisfied.iter().copied().collect());
    let ruled_out = lattice::impossible(found_names.iter().copied());
    let not = lattice::weakest(&ruled_out);
    let in_order = |set: &BTreeSet<ConsistencyModel>| -> Vec<ConsistencyModel> {
        ConsistencyModel::ALL.into_iter().filter(|m| set.contains(m)).collect()
    };
    let also_not: BTreeSet<ConsistencyModel> = ruled_out.difference(&not).copied().collect();
    let anomaly_types: Vec<String> = found
        .iter()
        .filter(|class| forbidden.contains(class) || class.is_unknown())
        .map(|class| class.elle_name().to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Classes a search gave up on (not those whose edges the claims did not need inferred): the models held if they
    // are absent, beyond `models_satisfied`, are left open by them.
    let searched: BTreeMap<AnomalyClass, String> = undecided
        .iter()
        .filter(|(_, why)| !why.contains("were not inferred"))
        .map(|(class, why)| (*class, why.clone()))
        .collect();
    let maybe_unsearched: BTreeSet<&'static str> = maybe
        .iter()
        .copied()
        .filter(|name| !searched.keys().any(|c| c.elle_name() == *name))
        .collect();
    let open: Vec<ConsistencyModel> = lattice::held(&maybe_unsearched)
        .into_iter()
        .filter(|m| !models_satisfied.contains(m))
        .collect();
    let still = standing(&models_satisfied, &open, &searched);
    let (verdict, reason) = verdict_and_reason(claims, &forbidden, &findings, &undecided, &still);
    TxnCheckResult {
        verdict,
        claimed: claims.models.clone(),
        anomalies_claimed: claims.anomalies.iter().map(|a| a.to_string()).collect(),
        forbidden,
        reason,
        anomalies: findings.kept,
        anomaly_counts: findings.counts,
        anomaly_types,
        not: in_order(&not),
        also_not: in_order(&also_not),
        undecided,
        strongest_model: models_satisfied.first().copied(),
        strongest_models: in_order(&strongest),
        models_satisfied,
        stats: TxnCheckStats::default(),
    }
}

/// Which models the history still holds, in words: the strongest certainly held, and when a search left classes
/// undecided (`undecided`: those only), which they are and the strongest models they leave open.
fn standing(
    held: &[ConsistencyModel],
    open: &[ConsistencyModel],
    undecided: &BTreeMap<AnomalyClass, String>,
) -> String {
    let certain = match held.first() {
        Some(model) if undecided.is_empty() => format!("the strongest model it is still consistent with is {model}"),
        Some(model) => format!("the strongest model it is certainly consistent with is {model}"),
        None => "it is consistent with none of the models faultline knows".to_string(),
    };
    if undecided.is_empty() {
        return certain;
    }
    let classes: Vec<&str> = undecided.keys().map(|c| c.name()).collect();
    let strongest_open = lattice::strongest(&open.iter().copied().collect());
    let open_names: Vec<&str> = ConsistencyModel::ALL
        .into_iter()
        .filter(|m| strongest_open.contains(m))
        .map(|m| m.name())
        .collect();
    match open_names.as_slice() {
        [] => format!("{certain} (undecided: {})", classes.join(", ")),
        names => format!(
            "{certain}, and the undecided classes ({}) leave open whether it is {}",
            classes.join(", "),
            names.join(" or ")
        ),
    }
}

fn verdict_and_reason(
    claims: &Claims,
    forbidden: &[AnomalyClass],
    findings: &Findings,
    undecided: &BTreeMap<AnomalyClass, String>,
    still: &str,
) -> (Verdict, String) {
    let claimed = claims.phrase();
    if claims.models.is_empty() && claims.anomalies.is_empty() {
        let reason = format!("nothing was claimed (no model, no anomaly), so nothing is forbidden; {still}");
        return (Verdict::Valid, reason);
    }
    let shown: Vec<String> = forbidden
        .iter()
        .filter(|class| !class.is_unknown())
        .filter_map(|class| findings.counts.get(class).map(|n| format!("{class} ({n})")))
        .collect();
    if !shown.is_empty() {
        let reason = format!(
            "the history shows {}, forbidden by {claimed}; {still}",
            shown.join(", ")
        );
        return (Verdict::Invalid, reason);
    }
    let mut open: Vec<String> = forbidden
        .iter()
        .filter(|class| undecided.contains_key(class))
        .map(|class| class.name().to_string())
        .collect();
    if findings.counts.contains_key(&AnomalyClass::EmptyTransactionGraph) {
        open.insert(
            0,
            "every class (no dependency between transactions could be inferred)".to_string(),
        );
    }
    if !open.is_empty() {
        let reason = format!(
            "no anomaly forbidden by {claimed} was found, but {} could not be decided; {still}",
            open.join(", ")
        );
        return (Verdict::Unknown, reason);
    }
    (
        Verdict::Valid,
        format!("no anomaly forbidden by {claimed} was found; {still}"),
    )
}
