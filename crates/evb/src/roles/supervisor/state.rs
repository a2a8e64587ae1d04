//! The run, without IO: the core [`Supervisor`] (rate and policy) assigning events, the
//! clearing of processed events, faults, metrics and the end of the run. The supervisor's loop
//! feeds it [`Input`]s and sends the [`Output`]s.

use super::tally::{BuiltReport, Fault, RunTally};
use super::Outcome;
use crate::metrics::{Metrics, NodeLabel};
use crate::role::RoleId;
use crate::wire::{Message, NodeTcp};
use daqnet_core::dataflow::{startup_order, Supervisor};
use daqnet_core::report::EventRecord;
use daqnet_core::{Layout, Nanos, NodeId, ReadoutId, Scenario, NS_PER_S};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// What happens to the supervisor during the run.
#[derive(Debug)]
pub enum Input {
    /// A message from a registered role.
    Msg(RoleId, Message),
    /// A role's connection ended: closed, failed, silent or malformed.
    Lost(RoleId, String),
    /// The periodic tick (metrics, stall detection, progress).
    Tick,
    /// The next event's trigger time has come.
    Trigger,
    /// The user asked the run to stop (SIGINT, SIGTERM).
    Interrupt,
    /// The launcher that started this supervisor died (its death signal arrived).
    LauncherLost,
    /// An output of the run could not be written (the reason names the file): the run ends.
    OutputFailed(String),
}

/// What the supervisor sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A message to one role.
    To(RoleId, Message),
    /// A message to every readout unit.
    Readouts(Message),
    /// A built event's row for `events.csv` (with per-event records on).
    Record(EventRecord),
}

/// Where the run stands, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Events finished (built or corrupt), warm-up included.
    pub finished: u64,
    /// Events the run builds in all (`None`: a timed run).
    pub total: Option<u64>,
    /// Events assigned.
    pub assigned: u64,
    /// Events built per second over the last second.
    pub rate_hz: f64,
    /// Payload goodput over the last second, bit/s.
    pub goodput_bps: f64,
    /// Events in flight.
    pub in_flight: usize,
    /// Credits in use over all nodes.
    pub credits_in_use: u64,
    /// Faults so far.
    pub faults: usize,
}

/// The run phase of the supervisor.
pub struct RunState {
    layout: Layout,
    sup: Supervisor,
    tally: RunTally,
    metrics: Arc<Metrics>,
    total: Option<u64>,
    end_at: Option<Nanos>,
    assigning: bool,
    interrupted: bool,
    per_event: bool,
    warmup: u64,
    stall: Nanos,
    window: VecDeque<(Nanos, u64, u64)>,
    /// Events built per second and payload bit/s over the last second (for the progress line).
    rates: (f64, f64),
    out: VecDeque<Output>,
}

impl RunState {
    /// The run starting at `t0`: every role is told to start, and every processing unit is
    /// waiting for work in the start-up order. `duration`: a timed run instead of a number of
    /// events.
    pub fn new(sc: &Scenario, t0: Nanos, duration: Option<Duration>, per_event: bool, metrics: Arc<Metrics>) -> Self {
        let layout = sc.layout();
        let sys = &sc.system;
        let total = duration.is_none().then_some(sc.run.warmup_events + sc.run.events);
        let mut sup = Supervisor::new(
            &layout,
            sys.supervisor.policy,
            sys.supervisor.rate_hz,
            total.unwrap_or(u64::MAX),
            sc.run.seed,
        );
        sup.start(t0);
        for pu in startup_order(sc.run.seed, layout.total_pus(), sys.supervisor.startup) {
            sup.on_ready(pu);
        }
        let events = total.unwrap_or(u64::MAX);
        let mut out = VecDeque::new();
        out.push_back(Output::Readouts(Message::Start { events }));
        out.extend(layout.all_nodes().map(|n| Output::To(RoleId::Collector(n), Message::Start { events })));
        let mut s = RunState {
            layout,
            sup,
            tally: RunTally::new(layout, sc.run.warmup_events, t0),
            metrics,
            total,
            end_at: duration.map(|d| t0 + d.as_nanos() as Nanos),
            assigning: true,
            interrupted: false,
            per_event,
            warmup: sc.run.warmup_events,
            // A stuck run: nothing finished for ten peer timeouts (at least 10 s).
            stall: 10 * sc.deploy.peer_timeout_ms.max(1000) * 1_000_000,
            window: VecDeque::new(),
            rates: (0.0, 0.0),
            out,
        };
        s.assign(t0);
        s
    }

    /// Something happened at `now`.
    pub fn handle(&mut self, now: Nanos, input: Input) {
        self.sup.on_timeout(now);
        match input {
            Input::Trigger => {}
            Input::Msg(RoleId::Collector(n), m) => self.on_collector(now, n, m),
            Input::Msg(RoleId::Readout(r), Message::Tcp(counts)) => self.on_tcp(r, &counts),
            Input::Msg(peer, Message::Fault { culprit, fatal, event, detail }) => self.fault(
                now,
                Fault { culprit, noticed_by: peer, reason: detail, events: event.into_iter().collect(), fatal },
            ),
            Input::Msg(peer, m) => self.protocol_fault(now, peer, format!("unexpected message {m:?}")),
            Input::Lost(peer, reason) => self.fault(
                now,
                Fault { culprit: peer, noticed_by: RoleId::Supervisor, reason, events: vec![], fatal: true },
            ),
            Input::Tick => self.on_tick(now),
            Input::Interrupt => {
                self.interrupted = true;
                self.assigning = false;
            }
            Input::LauncherLost => {
                self.tally.on_launcher_lost(now);
                self.interrupted = true;
                self.assigning = false;
            }
            Input::OutputFailed(reason) => self.fault(
                now,
                Fault {
                    culprit: RoleId::Supervisor,
                    noticed_by: RoleId::Supervisor,
                    reason,
                    events: vec![],
                    fatal: true,
                },
            ),
        }
        if self.end_at.is_some_and(|e| now >= e) && self.assigning {
            self.assigning = false;
            self.tally.progressed(now);
        }
        self.assign(now);
    }

    fn on_collector(&mut self, now: Nanos, node: NodeId, m: Message) {
        let me = RoleId::Collector(node);
        match m {
            Message::Ready(pu) if self.layout.has_pu(pu) && self.layout.node_of(pu) == node => self.sup.on_ready(pu),
            Message::Built { event, pu, latency_ns, span_ns, bytes, corrupt_fragments } => {
                let b = BuiltReport { event, pu, latency_ns, span_ns, bytes, corrupt_fragments };
                if let Some(t) = self.tally.on_built(node, b, now) {
                    self.metrics.events_built.inc();
                    self.metrics.payload_bytes.inc_by(t.bytes);
                    self.metrics.latency_seconds.observe(t.latency as f64 / 1e9);
                    if self.per_event {
                        self.out.push_back(Output::Record(t.record(self.warmup)));
                    }
                }
            }
            Message::Done(event) => {
                self.sup.on_done(event);
                self.out.push_back(Output::Readouts(Message::Clear(event)));
            }
            Message::Status(s) => {
                let label = NodeLabel { node: node.0 };
                self.metrics.credits_in_use.get_or_create(&label).set(s.credits_in_use as i64);
                self.metrics.queued_requests.get_or_create(&label).set(s.queued_requests as i64);
                self.tally.on_status(node, s);
            }
            Message::Fault { culprit, fatal, event, detail } => {
                let events = event.into_iter().collect();
                self.fault(now, Fault { culprit, noticed_by: me, reason: detail, events, fatal })
            }
            m => self.protocol_fault(now, me, format!("unexpected message {m:?}")),
        }
    }

    fn on_tcp(&mut self, readout: ReadoutId, counts: &[NodeTcp]) {
        self.tally.on_tcp(readout, counts);
        for node in counts.iter().map(|c| c.node).filter(|&n| self.layout.has_node(n)) {
            let (retransmits, timeouts) = self.tally.tcp_of(node);
            let label = NodeLabel { node: node.0 };
            advance(&self.metrics.tcp_retransmits.get_or_create(&label), retransmits);
            if let Some(t) = timeouts {
                advance(&self.metrics.tcp_timeouts.get_or_create(&label), t);
            }
        }
    }

    fn fault(&mut self, now: Nanos, f: Fault) {
        self.metrics.faults.inc();
        self.tally.on_fault(f, now);
    }

    fn protocol_fault(&mut self, now: Nanos, peer: RoleId, reason: String) {
        self.fault(now, Fault { culprit: peer, noticed_by: RoleId::Supervisor, reason, events: vec![], fatal: true });
    }

    fn on_tick(&mut self, now: Nanos) {
        let (built, bytes) = self.tally.built();
        self.window.push_back((now, built, bytes));
        while self.window.len() > 11 {
            self.window.pop_front();
        }
        let (t, b, y) = self.window[0];
        let dt = (now - t) as f64 / NS_PER_S as f64;
        if dt > 0.0 {
            self.rates = ((built - b) as f64 / dt, (bytes - y) as f64 * 8.0 / dt);
        }
        self.metrics.events_in_flight.set(self.tally.in_flight() as i64);
        if self.tally.stalled(now, self.stall) {
            let reason = format!(
                "no event built for {} s while {} are in flight: the run is stuck",
                self.stall / NS_PER_S,
                self.tally.in_flight()
            );
            self.protocol_fault(now, RoleId::Supervisor, reason);
        }
    }

    fn assign(&mut self, now: Nanos) {
        while self.assigning && !self.tally.is_fatal() {
            let Some(a) = self.sup.poll_assignment() else { break };
            self.tally.on_assigned(a.event, a.pu, now);
            let to = RoleId::Collector(self.layout.node_of(a.pu));
            self.out.push_back(Output::To(to, Message::Assign { event: a.event, pu: a.pu }));
        }
    }

    /// The next message to send.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// When the next event becomes available, while events are being assigned.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.sup.poll_timeout().filter(|_| self.assigning)
    }

    /// Whether the run is over: every event built, the time is up and nothing is in flight, a
    /// fatal fault, or an interruption.
    pub fn over(&self) -> bool {
        let all_built = self.total.is_some_and(|t| self.tally.finished() >= t);
        let drained = !self.assigning && self.tally.in_flight() == 0;
        all_built || drained || self.tally.is_fatal() || self.interrupted
    }

    /// Whether a fault ended the run.
    pub fn failed(&self) -> bool {
        self.tally.is_fatal()
    }

    /// Where the run stands.
    pub fn progress(&self) -> Progress {
        Progress {
            finished: self.tally.finished(),
            total: self.total,
            assigned: self.sup.events_assigned(),
            rate_hz: self.rates.0,
            goodput_bps: self.rates.1,
            in_flight: self.tally.in_flight(),
            credits_in_use: self.tally.credits_in_use(),
            faults: self.tally.faults(),
        }
    }

    /// A final message from a role after the run (its last counters).
    pub fn on_final(&mut self, from: RoleId, m: Message) {
        match (from, m) {
            (RoleId::Collector(node), Message::Status(s)) => self.tally.on_status(node, s),
            (RoleId::Readout(r), Message::Tcp(counts)) => self.on_tcp(r, &counts),
            _ => {}
        }
    }

    /// The report.
    pub fn finish(self, sc: &Scenario, origin: &str, wall_s: f64) -> Outcome {
        let target = self.total.map(|_| sc.run.events);
        let mut o = self.tally.finish(sc, origin, self.sup.events_assigned(), target, wall_s);
        o.report.interrupted = self.interrupted;
        o
    }
}

/// Moves a counter up to `total` (the kernel's totals only grow; a lower value is ignored).
fn advance(c: &prometheus_client::metrics::counter::Counter, total: u64) {
    let now = c.get();
    if total > now {
        c.inc_by(total - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::{EventId, PuId};

    fn scenario() -> Scenario {
        let mut sc = Scenario::default();
        sc.system.readout_units = 2;
        sc.system.nodes = 2;
        sc.system.pus_per_node = 1;
        sc.system.supervisor.rate_hz = daqnet_core::scenario::Rate::Unbounded;
        sc.run.warmup_events = 0;
        sc.run.events = 3;
        sc
    }

    fn drain(s: &mut RunState) -> Vec<Output> {
        std::iter::from_fn(|| s.poll()).collect()
    }

    fn built(event: u64, pu: u32) -> Message {
        Message::Built {
            event: EventId(event),
            pu: PuId(pu),
            latency_ns: 1000,
            span_ns: 1000,
            bytes: 10,
            corrupt_fragments: 0,
        }
    }

    #[test]
    fn a_run_starts_everyone_assigns_clears_and_ends_when_every_event_is_built() {
        let sc = scenario();
        let mut s = RunState::new(&sc, 0, None, false, Metrics::new());
        let out = drain(&mut s);
        assert_eq!(out[0], Output::Readouts(Message::Start { events: 3 }));
        let assigns: Vec<&Output> = out.iter().filter(|o| matches!(o, Output::To(_, Message::Assign { .. }))).collect();
        assert_eq!(assigns.len(), 2, "one event per waiting unit: {out:?}");
        let Output::To(RoleId::Collector(n), Message::Assign { event, pu }) = assigns[0].clone() else {
            unreachable!()
        };
        s.handle(10, Input::Msg(RoleId::Collector(n), built(event.0, pu.0)));
        s.handle(11, Input::Msg(RoleId::Collector(n), Message::Done(event)));
        s.handle(12, Input::Msg(RoleId::Collector(n), Message::Ready(pu)));
        let out = drain(&mut s);
        assert!(out.contains(&Output::Readouts(Message::Clear(event))));
        assert!(out.contains(&Output::To(RoleId::Collector(n), Message::Assign { event: EventId(2), pu })));
        for (e, pu) in [(1, 1 - pu.0), (2, pu.0)] {
            assert!(!s.over());
            s.handle(20, Input::Msg(RoleId::Collector(NodeId(pu)), built(e, pu)));
        }
        assert!(s.over());
        let o = s.finish(&sc, "s", 1.0);
        assert_eq!((o.report.events_built, o.report.interrupted), (3, false));
    }

    #[test]
    fn a_lost_role_ends_the_run_naming_it_and_an_interruption_is_marked() {
        let sc = scenario();
        let mut s = RunState::new(&sc, 0, None, false, Metrics::new());
        s.handle(5, Input::Lost(RoleId::Readout(daqnet_core::ReadoutId(1)), "connection closed".into()));
        assert!(s.over());
        let o = s.finish(&sc, "s", 1.0);
        assert_eq!((o.report.faults[0].role.as_str(), o.report.events_not_built.lost), ("readout 1", 2));
        let mut s = RunState::new(&sc, 0, None, false, Metrics::new());
        s.handle(5, Input::Interrupt);
        assert!(s.over());
        let o = s.finish(&sc, "s", 1.0);
        assert!(o.report.interrupted);
        assert_eq!(o.report.events_not_built.abandoned, 3);
    }

    #[test]
    fn a_ready_for_another_nodes_unit_is_a_protocol_fault() {
        let sc = scenario();
        let mut s = RunState::new(&sc, 0, None, false, Metrics::new());
        s.handle(5, Input::Msg(RoleId::Collector(NodeId(0)), Message::Ready(PuId(1))));
        assert!(s.over());
    }
}
