//! The plan checks of membership: spare nodes (`members:` below `nodes:`) and `kind: membership` faults, each refused
//! at its line when the system cannot change membership, when a change takes no single node, when an `add` has no
//! spare node to take, or when the scripted changes would leave fewer members than the quorum of the configuration
//! they change (a removal commits in the old configuration, without the node it removes).

use super::{Plan, PlanError};
use faultline_faults::process::membership::removal_keeps_quorum;
use faultline_faults::process::{parse_node_name, MembershipChange, ProcessFault, Target};
use faultline_faults::trigger::{TriggerTarget, TriggeredKind};
use serde_saphyr::Location;

/// One membership fault of a plan, wherever it is written.
struct Change<'a> {
    change: Option<MembershipChange>,
    target: &'a Target,
    at: Location,
}

impl Plan {
    /// The membership checks (see the module doc).
    pub(super) fn validate_membership(&self, origin: &str) -> Result<(), PlanError> {
        let error = |at: Location, message: String| PlanError {
            origin: origin.to_string(),
            line: at.line(),
            column: at.column(),
            message,
        };
        let kind = self.system.kind();
        let nodes = self.system.nodes();
        let members = self.system.initial_members();
        let capable = self.system.adapter().capabilities().membership;
        if let Some(declared) = self.system.adapter().members() {
            if members > nodes {
                return Err(error(
                    declared.referenced,
                    format!(
                        "members: {members} of nodes: {nodes}: the members are some of the nodes (at most {nodes})"
                    ),
                ));
            }
            if members < nodes && !capable {
                return Err(error(
                    declared.referenced,
                    format!(
                        "members: {members} of nodes: {nodes} keeps spare nodes for membership changes, but the {kind} \
                         adapter cannot change membership; leave `members` out"
                    ),
                ));
            }
        }
        let changes = self.membership_changes();
        if let (Some(first), false) = (changes.first(), capable) {
            return Err(error(
                first.at,
                format!(
                    "`kind: membership`: the {kind} adapter cannot change membership (it has no add/remove hooks{})",
                    if kind == "exec" {
                        ": give the system `membership: {add, remove, list}`"
                    } else {
                        ""
                    }
                ),
            ));
        }
        for change in &changes {
            check_target(change).map_err(|message| error(change.at, message))?;
        }
        self.simulate_script(members, nodes)
            .map_err(|(at, message)| error(at, message))?;
        let adds = changes.iter().any(|c| c.change == Some(MembershipChange::Add));
        let removes = changes.iter().any(|c| c.change != Some(MembershipChange::Add));
        if let Some(add) = changes.iter().find(|c| c.change == Some(MembershipChange::Add)) {
            if members == nodes && !removes {
                return Err(error(
                    add.at,
                    format!(
                        "`change: add` has no spare node: all {nodes} nodes are members and nothing removes one; \
                         keep spares with `system.members` below `nodes` (e.g. `members: {}`)",
                        nodes.saturating_sub(1).max(1)
                    ),
                ));
            }
        }
        if let Some(remove) = changes.iter().find(|c| c.change != Some(MembershipChange::Add)) {
            if !removal_keeps_quorum(members) && !adds {
                return Err(error(
                    remove.at,
                    format!(
                        "removing one of {members} members would leave fewer members than the quorum of their \
                         configuration (the removal commits without the removed node): start with 3 members or more"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every membership fault of the plan: timed, scripted and triggered.
    fn membership_changes(&self) -> Vec<Change<'_>> {
        let mut changes = Vec::new();
        if let Some(process) = &self.nemesis.process {
            let faults = process.value.faults.iter().map(|f| (f.kind, f.change, &f.targets));
            let script = process.value.script.iter().map(|f| (f.kind, f.change, &f.targets));
            for (kind, change, targets) in faults.chain(script) {
                if kind == ProcessFault::Membership {
                    changes.push(Change {
                        change,
                        target: &targets.value,
                        at: targets.referenced,
                    });
                }
            }
        }
        for trigger in &self.nemesis.triggers {
            let action = &trigger.value.action;
            if action.kind != TriggeredKind::Membership {
                continue;
            }
            let target = match &action.targets {
                Some(TriggerTarget::Target(target)) => target,
                _ => &Target::One,
            };
            changes.push(Change {
                change: action.change,
                target,
                at: trigger.referenced,
            });
        }
        changes
    }

    /// Plays the scripted membership changes in time order from `members` of `nodes`: an `add` needs a spare node, a
    /// removal must keep the quorum of the configuration it changes.
    fn simulate_script(&self, members: usize, nodes: usize) -> Result<(), (Location, String)> {
        let Some(process) = &self.nemesis.process else {
            return Ok(());
        };
        // (when, +1 joins / -1 leaves, where)
        let mut steps: Vec<(u64, i64, Location)> = Vec::new();
        for fault in process
            .value
            .script
            .iter()
            .filter(|f| f.kind == ProcessFault::Membership)
        {
            let at = fault.targets.referenced;
            match fault.change {
                Some(MembershipChange::Add) => steps.push((fault.at.0, 1, at)),
                Some(MembershipChange::Remove) => steps.push((fault.at.0, -1, at)),
                Some(MembershipChange::Replace) => {
                    steps.push((fault.at.0, -1, at));
                    steps.push((fault.at.0 + fault.duration.0, 1, at));
                }
                None => {}
            }
        }
        steps.sort_by_key(|(when, delta, _)| (*when, *delta));
        let mut now = members;
        for (when, delta, at) in steps {
            if delta > 0 {
                if now >= nodes {
                    return Err((
                        at,
                        format!(
                            "`change: add` at {when} ms has no spare node: the script has all {nodes} nodes members \
                             by then"
                        ),
                    ));
                }
                now += 1;
            } else {
                if !removal_keeps_quorum(now) {
                    return Err((
                        at,
                        format!(
                            "the change at {when} ms removes one of {now} members, which would leave fewer members \
                             than the quorum of their configuration (the removal commits without the removed node)"
                        ),
                    ));
                }
                now -= 1;
            }
        }
        Ok(())
    }
}

/// A membership change takes one node: a spare for `add` (`one` or named), a member for the others (`one`,
/// `primary`, `backup` or named).
fn check_target(change: &Change<'_>) -> Result<(), String> {
    let Some(what) = change.change else {
        return Ok(()); // the fault's own check names the missing `change`
    };
    let one_node = match change.target {
        Target::One => true,
        Target::Nodes(names) => names.len() == 1 && names.iter().all(|name| parse_node_name(name).is_some()),
        Target::Primary | Target::Backup => what != MembershipChange::Add,
        _ => false,
    };
    if one_node {
        return Ok(());
    }
    Err(match what {
        MembershipChange::Add => format!(
            "`change: add` takes one spare node: `targets: one` (drawn among the spares) or one named node, not \
             `{}`",
            change.target
        ),
        _ => format!(
            "a membership change takes one member: `targets: one`, `primary`, `backup` or one named node, not `{}`",
            change.target
        ),
    })
}
