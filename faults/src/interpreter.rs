//! The timed fault interpreter: one loop that starts and stops every scheduled fault of a run's fault phase, whatever
//! its family.
//!
//! Each family ([`crate::process`], [`crate::network`], [`crate::io`]) says only what its faults do: when each starts
//! and stops ([`TimedFault::windows`]), and how to start, stop and heal one ([`TimedFault::start`],
//! [`TimedFault::stop`], [`TimedFault::heal`]), recording its own history events as it acts. The interpreter merges
//! every family's windows into one list of [`Step`]s, sleeps until each, applies it, and tracks which faults hold
//! something, so that
//!
//! - a stop is applied only to a fault whose start reported that it holds something (a skipped start, such as a kill
//!   of nodes another fault already holds or an `isolate-primary` with no primary, has nothing to stop);
//! - when the stop signal fires, no further step is applied and every fault still active is healed.
//!
//! **Order.** Steps are applied in `(at_ms, edge, family, position)` order, so the history of a schedule is the same
//! on every run: at one instant, every stop comes before every start (a node freed at `t` can be hit again at `t`,
//! and a heal at `t` lands before a new fault at `t`); among the stops, and among the starts, process faults come
//! first, then network faults, then I/O faults ([`Family`]'s order); within a family, faults go by their position in
//! the family's schedule. At the end, the faults still active are healed in `(family, position)` order, which is
//! their step order whenever their scheduled stops share one instant (faults clipped to the end of the phase).
//!
//! Steps are applied one at a time: a slow step (a kill waiting for the process to be reaped, a primary lookup)
//! delays the steps after it, and each event's `time_ns` records when it really happened. What outlasts its step is
//! the family's [`TimedFault::background`], driven while the interpreter waits for the next step: a graceful stop
//! waits out its grace there, so a 10 s grace does not hold a pause due 2 s later.

use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The fault families, in their tie-break order at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Kill, pause and power loss ([`crate::process`]).
    Process,
    /// Partitions and link faults ([`crate::network`]).
    Network,
    /// I/O-fault windows on fault filesystems ([`crate::io`]).
    Io,
}

/// Whether a step starts or stops a fault; stops sort first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Edge {
    /// The fault ends.
    Stop,
    /// The fault begins.
    Start,
}

/// When one fault of a family starts and stops, in ms from the start of the fault phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start offset.
    pub start_ms: u64,
    /// Stop offset (`>= start_ms`).
    pub end_ms: u64,
}

/// One step of the merged schedule. Field order is the sort order (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Step {
    /// When, from the start of the fault phase.
    pub at_ms: u64,
    /// Start or stop.
    pub edge: Edge,
    /// Whose fault.
    pub family: Family,
    /// The fault's position in its family's schedule.
    pub position: usize,
}

/// One family of timed faults: what its faults do. The interpreter decides when.
#[allow(async_fn_in_trait)]
pub trait TimedFault {
    /// Every fault's window, by position in the family's schedule.
    fn windows(&self) -> Vec<Window>;
    /// Starts the fault at `position` and records what it did; returns whether it now holds something to stop.
    async fn start(&mut self, position: usize) -> bool;
    /// Stops, at its scheduled time, a fault whose start returned true, and records what it did.
    async fn stop(&mut self, position: usize);
    /// Stops a fault whose start returned true when the phase ends before its scheduled stop. The same as a
    /// scheduled stop unless the family says otherwise.
    async fn heal(&mut self, position: usize) {
        self.stop(position).await
    }
    /// Work a started fault goes on doing between steps (a graceful stop waiting out its grace): one piece of it,
    /// raced against the wait for the next step; pending forever when there is none (the default).
    async fn background(&mut self) {
        std::future::pending().await
    }
    /// After the last step and the heals: waits until that background work is done (a graceful stop's node is
    /// down and restarted).
    async fn settle(&mut self) {}
}

/// A family without faults: stands in for one a run does not have (a test of one family).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFaults;

impl TimedFault for NoFaults {
    fn windows(&self) -> Vec<Window> {
        Vec::new()
    }
    async fn start(&mut self, _: usize) -> bool {
        unreachable!("a family without windows has no steps")
    }
    async fn stop(&mut self, _: usize) {
        unreachable!("a family without windows has no steps")
    }
}

/// A family a run may lack (the network of a run without network faults): absent, it has no faults.
impl<F: TimedFault> TimedFault for Option<F> {
    fn windows(&self) -> Vec<Window> {
        self.as_ref().map(F::windows).unwrap_or_default()
    }
    async fn start(&mut self, position: usize) -> bool {
        match self {
            Some(family) => family.start(position).await,
            None => unreachable!("an absent family has no steps"),
        }
    }
    async fn stop(&mut self, position: usize) {
        if let Some(family) = self {
            family.stop(position).await
        }
    }
    async fn heal(&mut self, position: usize) {
        if let Some(family) = self {
            family.heal(position).await
        }
    }
    async fn background(&mut self) {
        match self {
            Some(family) => family.background().await,
            None => std::future::pending().await,
        }
    }
    async fn settle(&mut self) {
        if let Some(family) = self {
            family.settle().await
        }
    }
}

/// The fault families of one fault phase.
pub struct Families<P, N, I> {
    /// Process faults.
    pub process: P,
    /// Network faults.
    pub network: N,
    /// I/O faults.
    pub io: I,
}

impl<P: TimedFault, N: TimedFault, I: TimedFault> Families<P, N, I> {
    /// Every family's windows as one sorted list of steps (two per fault).
    pub fn steps(&self) -> Vec<Step> {
        let families = [
            (Family::Process, self.process.windows()),
            (Family::Network, self.network.windows()),
            (Family::Io, self.io.windows()),
        ];
        let mut steps = Vec::new();
        for (family, windows) in families {
            for (position, window) in windows.into_iter().enumerate() {
                assert!(
                    window.end_ms >= window.start_ms,
                    "{family:?} fault {position} ends before it starts"
                );
                steps.push(Step {
                    at_ms: window.start_ms,
                    edge: Edge::Start,
                    family,
                    position,
                });
                steps.push(Step {
                    at_ms: window.end_ms,
                    edge: Edge::Stop,
                    family,
                    position,
                });
            }
        }
        steps.sort_unstable();
        steps
    }

    /// Applies the steps from `phase_start` until they are done or `stop` fires (or its sender is gone); then heals
    /// every fault still active.
    pub async fn run(&mut self, phase_start: Instant, mut stop: watch::Receiver<bool>) {
        let mut active: BTreeSet<(Family, usize)> = BTreeSet::new();
        'steps: for step in self.steps() {
            let at = phase_start + Duration::from_millis(step.at_ms);
            loop {
                tokio::select! {
                    // Once stopped, apply nothing more, even a step that is also due.
                    biased;
                    _ = stop.wait_for(|stopped| *stopped) => break 'steps,
                    _ = tokio::time::sleep_until(at) => break,
                    // What started faults go on doing meanwhile (a graceful stop's grace).
                    _ = self.background() => {}
                }
            }
            let fault = (step.family, step.position);
            match step.edge {
                Edge::Start => {
                    if self.start(fault).await {
                        active.insert(fault);
                    }
                }
                Edge::Stop => {
                    if active.remove(&fault) {
                        self.stop(fault).await;
                    }
                }
            }
        }
        for fault in active {
            self.heal(fault).await;
        }
        self.process.settle().await;
        self.network.settle().await;
        self.io.settle().await;
    }

    async fn background(&mut self) {
        tokio::select! {
            _ = self.process.background() => {}
            _ = self.network.background() => {}
            _ = self.io.background() => {}
        }
    }

    async fn start(&mut self, (family, position): (Family, usize)) -> bool {
        match family {
            Family::Process => self.process.start(position).await,
            Family::Network => self.network.start(position).await,
            Family::Io => self.io.start(position).await,
        }
    }

    async fn stop(&mut self, (family, position): (Family, usize)) {
        match family {
            Family::Process => self.process.stop(position).await,
            Family::Network => self.network.stop(position).await,
            Family::Io => self.io.stop(position).await,
        }
    }

    async fn heal(&mut self, (family, position): (Family, usize)) {
        match family {
            Family::Process => self.process.heal(position).await,
            Family::Network => self.network.heal(position).await,
            Family::Io => self.io.heal(position).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What a fake family was asked to do, and when (ms since the phase start, on tokio's paused clock).
    type Log = Arc<Mutex<Vec<(u64, &'static str, &'static str, usize)>>>;

    /// A family whose faults are `windows`; the starts at `skipped` positions hold nothing.
    struct FakeFamily {
        name: &'static str,
        windows: Vec<(u64, u64)>,
        skipped: Vec<usize>,
        log: Log,
        phase_start: Instant,
    }

    impl FakeFamily {
        fn note(&self, what: &'static str, position: usize) {
            let ms = self.phase_start.elapsed().as_millis() as u64;
            self.log.lock().unwrap().push((ms, self.name, what, position));
        }
    }

    impl TimedFault for FakeFamily {
        fn windows(&self) -> Vec<Window> {
            let window = |&(start_ms, end_ms)| Window { start_ms, end_ms };
            self.windows.iter().map(window).collect()
        }
        async fn start(&mut self, position: usize) -> bool {
            self.note("start", position);
            // Applying takes time; later steps that are due run late, never out of order.
            tokio::time::sleep(Duration::from_millis(1)).await;
            !self.skipped.contains(&position)
        }
        async fn stop(&mut self, position: usize) {
            self.note("stop", position);
        }
        async fn heal(&mut self, position: usize) {
            self.note("heal", position);
        }
    }

    fn families(
        process: Vec<(u64, u64)>,
        network: Vec<(u64, u64)>,
        io: Vec<(u64, u64)>,
    ) -> (Families<FakeFamily, FakeFamily, FakeFamily>, Log, Instant) {
        let log = Log::default();
        let phase_start = Instant::now();
        let family = |name, windows| FakeFamily {
            name,
            windows,
            skipped: Vec::new(),
            log: log.clone(),
            phase_start,
        };
        let families = Families {
            process: family("process", process),
            network: family("network", network),
            io: family("io", io),
        };
        (families, log, phase_start)
    }

    fn calls(log: &Log) -> Vec<(&'static str, &'static str, usize)> {
        log.lock()
            .unwrap()
            .iter()
            .map(|&(_, f, what, p)| (f, what, p))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn given_faults_of_every_family_at_equal_times_when_run_should_stop_before_starting_in_family_order() {
        let (mut families, log, phase_start) = families(
            vec![(10, 20), (20, 30)],
            vec![(10, 20), (20, 30)],
            vec![(20, 30), (10, 20)],
        );
        let (_tx, rx) = watch::channel(false);
        families.run(phase_start, rx).await;
        let expected = [
            ("process", "start", 0),
            ("network", "start", 0),
            ("io", "start", 1),
            ("process", "stop", 0),
            ("network", "stop", 0),
            ("io", "stop", 1),
            ("process", "start", 1),
            ("network", "start", 1),
            ("io", "start", 0),
            ("process", "stop", 1),
            ("network", "stop", 1),
            ("io", "stop", 0),
        ];
        assert_eq!(calls(&log), expected);
        let first_stop_ms = log.lock().unwrap()[3].0;
        assert!(first_stop_ms >= 20, "no step runs before its time: {first_stop_ms}");
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_stop_signal_mid_phase_when_run_should_start_nothing_more_and_heal_everything_active() {
        let (mut families, log, phase_start) = families(
            vec![(10, 1000), (20, 30)],
            vec![(15, 2000), (100, 200)],
            vec![(5, 3000)],
        );
        let (tx, rx) = watch::channel(false);
        let stopper = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send(true).unwrap();
        };
        tokio::join!(families.run(phase_start, rx), stopper);
        let expected = [
            ("io", "start", 0),
            ("process", "start", 0),
            ("network", "start", 0),
            ("process", "start", 1),
            ("process", "stop", 1),
            ("process", "heal", 0),
            ("network", "heal", 0),
            ("io", "heal", 0),
        ];
        assert_eq!(calls(&log), expected);
        let heal_ms: Vec<u64> = log.lock().unwrap()[5..].iter().map(|e| e.0).collect();
        assert!(
            heal_ms.iter().all(|&ms| ms >= 50),
            "healed on the stop signal: {heal_ms:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_start_that_held_nothing_when_its_stop_is_due_or_the_phase_stops_should_skip_it() {
        let (mut families, log, phase_start) = families(vec![(10, 20), (10, 5000)], vec![(30, 40)], vec![]);
        families.process.skipped = vec![0, 1];
        families.network.skipped = vec![0];
        let (tx, rx) = watch::channel(false);
        let stopper = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tx.send(true).unwrap();
        };
        tokio::join!(families.run(phase_start, rx), stopper);
        let expected = [
            ("process", "start", 0),
            ("process", "start", 1),
            ("network", "start", 0),
        ];
        assert_eq!(calls(&log), expected);
    }

    #[tokio::test(start_paused = true)]
    async fn given_an_absent_family_when_run_should_apply_the_others() {
        let (families, log, phase_start) = families(vec![(10, 20)], vec![], vec![(10, 20)]);
        let mut families = Families {
            process: families.process,
            network: None::<FakeFamily>,
            io: families.io,
        };
        let (_tx, rx) = watch::channel(false);
        families.run(phase_start, rx).await;
        let expected = [
            ("process", "start", 0),
            ("io", "start", 0),
            ("process", "stop", 0),
            ("io", "stop", 0),
        ];
        assert_eq!(calls(&log), expected);
    }
}
