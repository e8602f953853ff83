//! The lab as the fault interpreters drive it: the process, network and I/O nemeses' views of [`Lab`].

use super::{BootState, Lab};
use faultline_faults::fusefs::FsFaults;
use faultline_faults::process::node_name;
use faultline_workloads::history::{Lifecycle, Nemesis};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

impl faultline_faults::process::Lab for Lab {
    fn node_count(&self) -> usize {
        Lab::node_count(self)
    }

    async fn primary(&self) -> Option<usize> {
        self.find_primary().await
    }

    async fn next_primary(&self) -> Option<usize> {
        let primary = self.find_primary().await?;
        self.system.next_primary(primary)
    }

    async fn kill(&self, node: usize) -> Result<Value, String> {
        self.kill_node(node).await
    }

    async fn start(&self, node: usize) -> Result<Value, String> {
        self.start_node(node).await
    }

    async fn pause(&self, node: usize) -> Result<Value, String> {
        self.signal_node(node, Signal::SIGSTOP).await
    }

    async fn resume(&self, node: usize) -> Result<Value, String> {
        self.signal_node(node, Signal::SIGCONT).await
    }

    async fn lose_unsynced(&self, node: usize) -> Result<Value, String> {
        self.lose_unsynced_node(node).await
    }

    async fn stop(&self, node: usize, grace: std::time::Duration) -> Result<Value, String> {
        self.stop_node(node, grace).await
    }

    async fn cut(&self, node: usize, cut: &faultline_faults::disk::spec::SurgerySpec) -> Result<Value, String> {
        self.cut_node(node, cut).await
    }

    async fn ready_again(&self, node: usize) -> Result<Value, String> {
        Lab::ready_again(self, node).await
    }

    async fn clock(&self, node: usize, shift: Option<faultline_faults::clock::ClockShift>) -> Result<Value, String> {
        self.set_clock(node, shift).await
    }

    fn members(&self) -> Vec<usize> {
        Lab::members(self)
    }

    async fn change_membership(
        &self,
        step: faultline_faults::process::MembershipStep,
        node: usize,
    ) -> Result<Value, String> {
        use faultline_faults::process::MembershipStep;
        Ok(match step {
            MembershipStep::Add => self.add_member(node).await,
            MembershipStep::Remove => self.remove_member(node).await,
        })
    }

    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.recorder.nemesis(name, Some(&node_name(node)), value);
    }

    fn record_cluster(&self, name: Nemesis, value: Value) {
        self.recorder.nemesis(name, None, value);
    }
}

impl faultline_faults::network::schedule::NetworkLab for Lab {
    async fn primary(&self) -> Option<usize> {
        self.find_primary().await
    }

    async fn members_now(&self, _node_count: usize) -> Vec<usize> {
        Lab::members(self)
    }

    fn record(&self, name: Nemesis, value: Value) {
        self.recorder.nemesis(name, None, value);
    }
}

impl faultline_faults::io::IoLab for Lab {
    async fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String> {
        Lab::set_io_faults(self, node, faults).await
    }

    fn crashed(&self, node: usize) -> bool {
        matches!(self.boot_state(node), BootState::Crashed(_))
    }

    async fn restart(&self, node: usize) {
        let details = self.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
        self.recorder
            .lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
    }

    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.recorder.nemesis(name, Some(&node_name(node)), value);
    }
}
