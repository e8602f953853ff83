//! Cross-field checks of a parsed plan: against itself, and against what its system's adapter can do.

use super::{AfterRefusal, NetworkBackend, Plan, PlanError, WorkloadKind};
use faultline_faults::disk::spec::SurgerySpec;
use faultline_faults::process::{check_rolling_kind, is_file_class, parse_node_name, ProcessFault, StopHow, Target};
use faultline_faults::trigger::TriggerCapabilities;

impl Plan {
    /// Cross-field checks, with the location of the offending field.
    pub fn validate(&self, origin: &str) -> Result<(), PlanError> {
        let node_count = self.system.nodes();
        let at = |loc: serde_saphyr::Location, message: String| PlanError {
            origin: origin.to_string(),
            line: loc.line(),
            column: loc.column(),
            message,
        };
        let mix = &self.workload.mix;
        let m = &mix.value;
        match self.workload.kind {
            WorkloadKind::Set if m.write + m.cas + m.append > 0 => {
                return Err(at(mix.referenced, "the set workload mixes add and read".into()))
            }
            WorkloadKind::Set if m.add == 0 => {
                return Err(at(mix.referenced, "the set workload needs `add` > 0 in its mix".into()))
            }
            WorkloadKind::Txn => self.validate_txn(origin)?,
            WorkloadKind::Bank if m.write + m.cas + m.append + m.add > 0 || m.transfer == 0 => {
                return Err(at(
                    mix.referenced,
                    "the bank workload mixes read and transfer (give transfer a weight > 0)".into(),
                ))
            }
            WorkloadKind::LongFork if m.cas + m.append + m.add + m.transfer > 0 || m.read == 0 || m.write == 0 => {
                return Err(at(
                    mix.referenced,
                    "the long-fork workload mixes read (of a group of keys) and write (an insert of a fresh key), both > 0"
                        .into(),
                ))
            }
            _ if m.transfer > 0 && self.workload.kind != WorkloadKind::Bank => {
                return Err(at(mix.referenced, "`transfer` is for the bank workload".into()))
            }
            WorkloadKind::Register | WorkloadKind::Log if m.add > 0 => {
                return Err(at(mix.referenced, "`add` is for the set workload".into()))
            }
            WorkloadKind::Register if m.append > 0 => {
                return Err(at(
                    mix.referenced,
                    "`append` is for the log workload; the register workload mixes read, write, cas".into(),
                ))
            }
            WorkloadKind::Register if m.read + m.write + m.cas == 0 => {
                return Err(at(
                    mix.referenced,
                    "the operation mix is empty: give read, write or cas a weight > 0".into(),
                ))
            }
            WorkloadKind::Log if m.write + m.cas > 0 => {
                return Err(at(
                    mix.referenced,
                    "the log workload mixes append and read (no write or cas)".into(),
                ))
            }
            WorkloadKind::Log if m.append == 0 => {
                return Err(at(
                    mix.referenced,
                    "the log workload needs `append` > 0 in its mix".into(),
                ))
            }
            _ => {}
        }
        if let Some(bank) = self
            .workload
            .bank
            .as_ref()
            .filter(|_| self.workload.kind != WorkloadKind::Bank)
        {
            return Err(at(bank.referenced, "`bank` is for the bank workload".into()));
        }
        if self.workload.group_size.is_some() && self.workload.kind != WorkloadKind::LongFork {
            return Err(at(mix.referenced, "`group_size` is for the long-fork workload".into()));
        }
        if self.workload.kind != WorkloadKind::Txn {
            if let Some(model) = &self.workload.model {
                return Err(at(model.referenced, "`model` is for the txn workload".into()));
            }
            if self.workload.consistency.is_some() || self.workload.txn_length.is_some() {
                return Err(at(
                    mix.referenced,
                    "`consistency` and `txn_length` are for the txn workload".into(),
                ));
            }
        }
        self.validate_against_adapter(origin)?;
        if let Some(process) = &self.nemesis.process {
            if !process.value.faults.is_empty() && process.value.interval.is_none_or(|i| i.0 == 0) {
                return Err(at(
                    process.referenced,
                    "nemesis.process has faults but no `interval` (e.g. `interval: 5s`)".into(),
                ));
            }
            let targets = process
                .value
                .faults
                .iter()
                .map(|f| &f.targets)
                .chain(process.value.script.iter().map(|f| &f.targets));
            for target in targets {
                let names = match &target.value {
                    Target::Nodes(names) => Some(names),
                    Target::Except { except, .. } => Some(except),
                    _ => None,
                };
                if let Some(names) = names {
                    for name in names {
                        if parse_node_name(name).is_none_or(|i| i >= node_count) {
                            return Err(at(
                                target.referenced,
                                format!("target `{name}` is not a node of this {node_count}-node cluster (n1..n{node_count})"),
                            ));
                        }
                    }
                }
            }
            if let Some(cap) = process.value.max_down {
                if cap == 0 || cap > node_count {
                    return Err(at(
                        process.referenced,
                        format!(
                            "nemesis.process.max_down is {cap}: it caps how many of the {node_count} nodes may be down                              or paused at once, so it must be 1..={node_count} (to allow any number, leave it out)"
                        ),
                    ));
                }
                let faults = process.value.faults.iter().map(|f| (f.kind, &f.targets));
                for (kind, targets) in faults.chain(process.value.script.iter().map(|f| (f.kind, &f.targets))) {
                    let size = targets.value.size(node_count);
                    let takes_down = !matches!(kind, ProcessFault::Clock | ProcessFault::Membership);
                    if takes_down && size > cap {
                        return Err(at(
                            targets.referenced,
                            format!(
                                "`targets: {}` takes {size} nodes down at once, more than `max_down: {cap}` allows:                                  it would always be skipped (target fewer nodes, or raise max_down)",
                                targets.value
                            ),
                        ));
                    }
                }
            }
            if let Some(flaps) = &process.value.flaps {
                if flaps.mean_up.0 == 0 || flaps.mean_down.0 == 0 {
                    return Err(at(process.referenced, "flaps need mean_up and mean_down > 0".into()));
                }
            }
        }
        if let Some(network) = &self.nemesis.network {
            for &kind in self.network.backend.candidate_kinds() {
                network
                    .value
                    .validate(node_count, kind)
                    .map_err(|message| at(network.referenced, message))?;
            }
        }
        let classes = self.system.adapter().file_classes();
        let mut snapshots = Vec::new();
        let mut restores = Vec::new();
        if let Some(process) = &self.nemesis.process {
            let faults = process
                .value
                .faults
                .iter()
                .map(|f| (f.kind, &f.targets, f.detail(), f.duration.max.0))
                .chain(
                    process
                        .value
                        .script
                        .iter()
                        .map(|f| (f.kind, &f.targets, f.detail(), f.duration.0)),
                );
            for (kind, targets, detail, duration_ms) in faults {
                let replace = detail.change == Some(faultline_faults::process::MembershipChange::Replace);
                if duration_ms == 0 && (kind != ProcessFault::Membership || replace) {
                    return Err(at(
                        targets.referenced,
                        format!(
                            "`kind: {}` needs a `duration` > 0 (e.g. `duration: 1s..3s`; for a membership `replace`, \
                             how long the node stays out)",
                            faultline_faults::process::kind_name(kind)
                        ),
                    ));
                }
                let power_loss = kind == ProcessFault::PowerLoss
                    || (kind == ProcessFault::Corrupt && detail.stop == Some(StopHow::PowerLoss));
                if power_loss && !self.disk.fault_fs {
                    return Err(at(
                        targets.referenced,
                        "power-loss needs the fault filesystem: add `disk: {fault_fs: true}`".into(),
                    ));
                }
                detail
                    .validate(kind)
                    .map_err(|message| at(targets.referenced, message))?;
                if targets.value == Target::Each {
                    check_rolling_kind(kind).map_err(|message| at(targets.referenced, message))?;
                }
                check_cut_files(&classes, &detail.cuts).map_err(|message| at(targets.referenced, message))?;
                note_chunks(&detail.cuts, targets.referenced, &mut snapshots, &mut restores);
            }
        }
        for (index, trigger) in self.nemesis.triggers.iter().enumerate() {
            let cuts = &trigger.value.action.cuts;
            check_cut_files(&classes, cuts)
                .map_err(|message| at(trigger.referenced, format!("nemesis.triggers[{index}]: {message}")))?;
            note_chunks(cuts, trigger.referenced, &mut snapshots, &mut restores);
        }
        if let Some((name, location)) = restores.iter().find(|(name, _)| !snapshots.contains(name)) {
            return Err(at(
                *location,
                format!(
                    "restore-chunk `{name}`: no cut of the plan takes a snapshot-chunk named `{name}`; add one \
                     (`{{op: snapshot-chunk, files: wal, region: tail, length_bytes: 4096, name: {name}}}`) to an \
                     earlier corrupt fault"
                ),
            ));
        }
        for surgery in &self.final_phase.surgery {
            check_cut_files(&classes, std::slice::from_ref(&surgery.cut))
                .map_err(|message| at(surgery.node.referenced, message))?;
        }
        if let Some(damage) = &self.disk.minority_damage {
            if node_count < 3 {
                return Err(at(
                    damage.referenced,
                    format!(
                        "minority_damage speaks of a minority the cluster can lose and still serve: a {node_count}-node \
                         cluster has none (use 3 nodes or more, or leave it out)"
                    ),
                ));
            }
        }
        if !self.nemesis.triggers.is_empty() {
            let capabilities = self.system.adapter().capabilities();
            let caps = TriggerCapabilities {
                node_count,
                backends: self.network.backend.candidate_kinds(),
                fault_fs: self.disk.fault_fs,
                primary_probe: capabilities.primary_probe,
                durable_progress: capabilities.durable_progress,
                repairing_pattern: capabilities.repairing_pattern,
                repaired_pattern: capabilities.repaired_pattern,
            };
            for (index, trigger) in self.nemesis.triggers.iter().enumerate() {
                trigger
                    .value
                    .validate(&caps)
                    .map_err(|message| at(trigger.referenced, format!("nemesis.triggers[{index}]: {message}")))?;
            }
        }
        for window in &self.nemesis.io {
            if parse_node_name(&window.node.value).is_none_or(|i| i >= node_count) {
                return Err(at(
                    window.node.referenced,
                    format!("`{}` is not a node (n1..n{node_count})", window.node.value),
                ));
            }
            if !self.disk.fault_fs {
                return Err(at(
                    window.node.referenced,
                    "I/O faults need the fault filesystem: add `disk: {fault_fs: true}`".into(),
                ));
            }
            window.faults.validate().map_err(|e| at(window.node.referenced, e))?;
        }
        for surgery in &self.final_phase.surgery {
            if parse_node_name(&surgery.node.value).is_none_or(|i| i >= node_count) {
                return Err(at(
                    surgery.node.referenced,
                    format!("`{}` is not a node (n1..n{node_count})", surgery.node.value),
                ));
            }
            surgery
                .cut
                .validate()
                .map_err(|e| at(surgery.node.referenced, e.to_string()))?;
        }
        if self.final_phase.power_loss && !self.disk.fault_fs {
            return Err(PlanError {
                origin: origin.into(),
                line: 0,
                column: 0,
                message: "final_phase.power_loss needs the fault filesystem: add `disk: {fault_fs: true}`".into(),
            });
        }
        if let Some(corrupt) = &self.final_phase.test_only_corrupt_wal {
            if parse_node_name(&corrupt.node.value).is_none_or(|i| i >= node_count) {
                return Err(at(
                    corrupt.node.referenced,
                    format!("`{}` is not a node (n1..n{node_count})", corrupt.node.value),
                ));
            }
            if !self.final_phase.restart_all {
                return Err(at(
                    corrupt.node.referenced,
                    "test_only_corrupt_wal needs final_phase.restart_all: true".into(),
                ));
            }
        }
        if self.time_limit.0 == 0 {
            return Err(PlanError {
                origin: origin.into(),
                line: 0,
                column: 0,
                message: "time_limit must be > 0".into(),
            });
        }
        Ok(())
    }

    /// The one place that checks a plan against what its system can do (the adapter's [`crate::system::Capabilities`]), then the
    /// adapter's own checks of its section.
    /// The txn workload's own fields: a model, and a mix of reads and writes (appends) only.
    fn validate_txn(&self, origin: &str) -> Result<(), PlanError> {
        use faultline_workloads::txn_check::TxnModel;
        let mix = &self.workload.mix;
        let m = &mix.value;
        let at = |loc: serde_saphyr::Location, message: &str| PlanError {
            origin: origin.to_string(),
            line: loc.line(),
            column: loc.column(),
            message: message.to_string(),
        };
        let Some(model) = &self.workload.model else {
            return Err(at(
                mix.referenced,
                "the txn workload needs a `model`: `list-append` or `rw-register`",
            ));
        };
        if m.cas + m.add > 0 {
            return Err(at(
                mix.referenced,
                "the txn workload mixes read and write micro-ops (no cas or add)",
            ));
        }
        if model.value == TxnModel::RwRegister && m.append > 0 {
            return Err(at(
                mix.referenced,
                "`append` is a list-append micro-op; rw-register mixes read and write",
            ));
        }
        if m.read + m.write + m.append == 0 {
            return Err(at(
                mix.referenced,
                "the micro-op mix is empty: give read or write a weight > 0",
            ));
        }
        Ok(())
    }

    fn validate_against_adapter(&self, origin: &str) -> Result<(), PlanError> {
        let adapter = self.system.adapter();
        let capabilities = adapter.capabilities();
        let kind = self.system.kind();
        let at = |loc: serde_saphyr::Location, message: String| PlanError {
            origin: origin.to_string(),
            line: loc.line(),
            column: loc.column(),
            message,
        };
        if !capabilities.workloads.contains(&self.workload.kind) {
            let offered: Vec<String> = capabilities.workloads.iter().map(|w| format!("`{w}`")).collect();
            return Err(at(
                self.workload.mix.referenced,
                format!(
                    "the {kind} adapter offers the {} workload{}, not `{}`",
                    if offered.is_empty() {
                        "no".to_string()
                    } else {
                        offered.join(" and ")
                    },
                    if offered.len() > 1 { "s" } else { "" },
                    self.workload.kind
                ),
            ));
        }
        if self.nemesis.has_network_faults() {
            let referenced = match &self.nemesis.network {
                Some(network) if !network.value.is_empty() => network.referenced,
                _ => self
                    .nemesis
                    .triggers
                    .first()
                    .map_or(serde_saphyr::Location::UNKNOWN, |t| t.referenced),
            };
            if self.network.backend == NetworkBackend::Proxy && !capabilities.proxy_partitions {
                return Err(at(
                    referenced,
                    format!(
                        "the {kind} adapter's nodes dial each other on connections the proxy mesh cannot cut, so \
                         partitions need `network: {{backend: netns}}` (root, iproute2 and nftables)"
                    ),
                ));
            }
        }
        if !capabilities.primary_probe {
            if let Some(process) = &self.nemesis.process {
                let targets = process.value.faults.iter().map(|f| &f.targets);
                let targets = targets.chain(process.value.script.iter().map(|f| &f.targets));
                for target in targets {
                    if matches!(
                        target.value.role(),
                        Target::Primary | Target::Backup | Target::NextPrimary
                    ) {
                        return Err(at(
                            target.referenced,
                            format!(
                                "this {kind} system cannot tell who the primary is, so role targets (primary, \
                                 backup, next-primary) cannot be resolved: give the system a status probe with a \
                                 `role` pointer, or target `one`, `minority`, `majority`, `all` or named nodes"
                            ),
                        ));
                    }
                }
            }
        }
        if let (false, Some(network)) = (capabilities.primary_probe, &self.nemesis.network) {
            let isolates_primary = network
                .value
                .partitions
                .iter()
                .any(|p| p.shape == faultline_faults::network::shape::Shape::IsolatePrimary);
            if isolates_primary {
                return Err(at(
                    network.referenced,
                    format!(
                        "this {kind} system cannot tell who the primary is, so the `isolate-primary` partition cannot \
                         be aimed: give the system a status probe with a `role` pointer, or use `isolate-one`"
                    ),
                ));
            }
        }
        if !capabilities.status_probe {
            if let Some(timeout) = self
                .final_phase
                .convergence_timeout
                .as_ref()
                .filter(|_| self.final_phase.enabled)
            {
                return Err(at(
                    timeout.referenced,
                    format!(
                        "final_phase.convergence_timeout: this {kind} system has no status probe, so faultline sees no \
                         commit point and cannot check that the nodes converge; remove the line (the run checks \
                         everything else), or give the system a `status` (http or command) with a `commit_point`"
                    ),
                ));
            }
        }
        if self.final_phase.after_refusal == AfterRefusal::Wipe && !capabilities.wipe {
            return Err(PlanError {
                origin: origin.into(),
                line: 0,
                column: 0,
                message: format!(
                    "final_phase.after_refusal is `wipe`, but this {kind} system has no way to wipe a node and let \
                     it rejoin (exec systems: add `wipe: {{command: [...]}}`); use `leave-down`"
                ),
            });
        }
        self.validate_clock_reach(origin)?;
        self.validate_membership(origin)?;
        adapter.validate(self, origin)
    }

    /// A plan with clock faults needs libfaketime, and a node binary it can reach (not static, not Go): refused at
    /// the first clock fault's line, naming the binary and why, instead of a run whose clock faults do nothing.
    fn validate_clock_reach(&self, origin: &str) -> Result<(), PlanError> {
        let Some(loc) = self.nemesis.first_clock_fault() else {
            return Ok(());
        };
        let at = |message: String| PlanError {
            origin: origin.to_string(),
            line: loc.line(),
            column: loc.column(),
            message,
        };
        let kind = self.system.kind();
        let (program, args) = self
            .system
            .adapter()
            .node_command()
            .map_err(|e| at(format!("clock faults: the {kind} node binary cannot be looked at: {e}")))?;
        faultline_faults::clock::reach::check_command(&program, &args).map_err(|refusal| at(refusal.to_string()))?;
        faultline_faults::clock::faketime::library().map_err(at)?;
        Ok(())
    }
}

/// Every cut's `files:` that names a file class must name one of the adapter's `classes`.
fn check_cut_files(classes: &[(String, String)], cuts: &[SurgerySpec]) -> Result<(), String> {
    for cut in cuts {
        let Some(files) = cut.files() else { continue };
        if is_file_class(files) && !classes.iter().any(|(name, _)| name == files) {
            let names: Vec<&str> = classes.iter().map(|(name, _)| name.as_str()).collect();
            return Err(format!(
                "`files: {files}` is no file class of this system ({}); name one, or write a glob relative to the data \
                 dir (anything with `*`, `/` or `.`, e.g. `wal*`)",
                if names.is_empty() {
                    "it declares none: `system.files` names them".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
    }
    Ok(())
}

/// Notes the chunk snapshots `cuts` take and restore, with where in the plan.
fn note_chunks(
    cuts: &[SurgerySpec],
    location: serde_saphyr::Location,
    snapshots: &mut Vec<String>,
    restores: &mut Vec<(String, serde_saphyr::Location)>,
) {
    for cut in cuts {
        match cut {
            SurgerySpec::SnapshotChunk { name, .. } => snapshots.push(name.clone()),
            SurgerySpec::RestoreChunk { name, .. } => restores.push((name.clone(), location)),
            _ => {}
        }
    }
}
