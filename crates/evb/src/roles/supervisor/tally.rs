//! What the supervisor knows of a run, without IO: the events in flight, those built and
//! their measurement, corrupt events, faults, the collectors' counters, and whether the run has
//! stalled. It turns into the run report at the end.

use super::Outcome;
use crate::role::RoleId;
use crate::wire::{CollectorStatus, NodeTcp};
use daqnet_core::report::{FaultRecord, Measure, NodeStats, NotBuilt, RunReport, Track};
use daqnet_core::scenario::Credits;
use daqnet_core::{EventId, Layout, Nanos, NodeId, PuId, ReadoutId, Scenario, NS_PER_S};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy)]
struct InFlight {
    pu: PuId,
    assigned: Nanos,
}

/// A collector's report that an event's collection is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltReport {
    /// The event.
    pub event: EventId,
    /// The unit it was collected for.
    pub pu: PuId,
    /// Data-collection latency measured by the collector.
    pub latency_ns: Nanos,
    /// From the first request to the last fragment, measured by the collector.
    pub span_ns: Nanos,
    /// Payload bytes.
    pub bytes: u64,
    /// Fragments that failed verification (0: the event is good).
    pub corrupt_fragments: u32,
}

/// A fault as the supervisor records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The role that failed.
    pub culprit: RoleId,
    /// The role that noticed.
    pub noticed_by: RoleId,
    /// What happened.
    pub reason: String,
    /// Events it spoiled, if it names them.
    pub events: Vec<EventId>,
    /// Whether the run cannot go on.
    pub fatal: bool,
}

/// The run's bookkeeping. Times are the supervisor's clock; `t0` is when the run started.
#[derive(Debug)]
pub struct RunTally {
    layout: Layout,
    warmup: u64,
    t0: Nanos,
    in_flight: BTreeMap<EventId, InFlight>,
    measure: Measure,
    corrupt: u64,
    faults: Vec<FaultRecord>,
    fatal: Option<usize>,
    statuses: Vec<CollectorStatus>,
    /// The latest kernel counters of every data connection, by (readout unit, node).
    tcp: BTreeMap<(ReadoutId, NodeId), NodeTcp>,
    finished: u64,
    built: u64,
    bytes: u64,
    last_progress: Nanos,
}

impl RunTally {
    /// Nothing yet; the run started at `t0`. Memory stays bounded by the events in flight,
    /// however long the run: built events are summarised as they come ([`Measure::bounded`]).
    pub fn new(layout: Layout, warmup: u64, t0: Nanos) -> Self {
        RunTally {
            layout,
            warmup,
            t0,
            in_flight: BTreeMap::new(),
            measure: Measure::bounded(warmup),
            corrupt: 0,
            faults: Vec::new(),
            fatal: None,
            statuses: vec![CollectorStatus::default(); layout.nodes() as usize],
            tcp: BTreeMap::new(),
            finished: 0,
            built: 0,
            bytes: 0,
            last_progress: t0,
        }
    }

    /// `event` went to `pu` at `now`.
    pub fn on_assigned(&mut self, event: EventId, pu: PuId, now: Nanos) {
        self.in_flight.insert(event, InFlight { pu, assigned: now });
    }

    /// Collector `node` reports an event's collection over at `now`. Returns the track of a
    /// good event; a report for an event that node was not collecting is a fatal fault.
    pub fn on_built(&mut self, node: NodeId, b: BuiltReport, now: Nanos) -> Option<Track> {
        let of_node = self.layout.node_of(b.pu) == node;
        let f = match self.in_flight.get(&b.event) {
            Some(f) if f.pu == b.pu && of_node => *f,
            _ => {
                let me = RoleId::Collector(node);
                let reason = format!("reported event {} built for unit {}, which was not collecting it", b.event, b.pu);
                self.on_fault(
                    Fault { culprit: me, noticed_by: RoleId::Supervisor, reason, events: vec![], fatal: true },
                    now,
                );
                return None;
            }
        };
        self.in_flight.remove(&b.event);
        self.finished += 1;
        self.last_progress = now;
        if b.corrupt_fragments > 0 {
            self.corrupt += (b.event.0 >= self.warmup) as u64;
            return None;
        }
        let (rel, done) = (|t: Nanos| t.saturating_sub(self.t0), now.saturating_sub(self.t0));
        let track = Track {
            event: b.event,
            pu: b.pu,
            node,
            assigned: rel(f.assigned),
            started: done.saturating_sub(b.span_ns),
            done,
            latency: b.latency_ns,
            bytes: b.bytes,
        };
        self.measure.record(&track);
        self.built += 1;
        self.bytes += b.bytes;
        Some(track)
    }

    /// Records a fault at `now`; a fatal one ends the run.
    pub fn on_fault(&mut self, f: Fault, now: Nanos) {
        self.faults.push(FaultRecord {
            at_s: now.saturating_sub(self.t0) as f64 / NS_PER_S as f64,
            role: f.culprit.to_string(),
            noticed_by: f.noticed_by.to_string(),
            reason: f.reason,
            lost_events: f.events.iter().map(|e| e.0).collect(),
        });
        if f.fatal && self.fatal.is_none() {
            self.fatal = Some(self.faults.len() - 1);
        }
    }

    /// The launcher that owns the run died at `now`: the supervisor stops the run.
    pub fn on_launcher_lost(&mut self, now: Nanos) {
        self.faults.push(FaultRecord {
            at_s: now.saturating_sub(self.t0) as f64 / NS_PER_S as f64,
            role: "launcher".into(),
            noticed_by: RoleId::Supervisor.to_string(),
            reason: "died (the supervisor got its death signal, PR_SET_PDEATHSIG); the run was stopped".into(),
            lost_events: Vec::new(),
        });
    }

    /// A readout unit's data connections' kernel counters (totals so far, so the latest wins).
    pub fn on_tcp(&mut self, readout: ReadoutId, counts: &[NodeTcp]) {
        for c in counts.iter().filter(|c| self.layout.has_node(c.node)) {
            self.tcp.insert((readout, c.node), *c);
        }
    }

    /// Retransmissions and timeouts on the connections into `node`, as last reported (timeouts
    /// `None` unless every connection's are known).
    pub fn tcp_of(&self, node: NodeId) -> (u64, Option<u64>) {
        let into = self.tcp.iter().filter(|((_, n), _)| *n == node).map(|(_, c)| c);
        sum_tcp(into)
    }

    /// A collector's counters.
    pub fn on_status(&mut self, node: NodeId, s: CollectorStatus) {
        self.statuses[node.index()] = s;
    }

    /// Whether events are in flight and none was finished for `stall` ns before `now`.
    pub fn stalled(&self, now: Nanos, stall: Nanos) -> bool {
        !self.in_flight.is_empty() && now.saturating_sub(self.last_progress) > stall
    }

    /// The run continues from `now` even without events in flight (the stall clock restarts).
    pub fn progressed(&mut self, now: Nanos) {
        self.last_progress = now;
    }

    /// Events assigned and not finished.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Events whose collection ended (built or corrupt).
    pub fn finished(&self) -> u64 {
        self.finished
    }

    /// Good events built and their payload bytes (warm-up included).
    pub fn built(&self) -> (u64, u64) {
        (self.built, self.bytes)
    }

    /// Whether a fatal fault ended the run.
    pub fn is_fatal(&self) -> bool {
        self.fatal.is_some()
    }

    /// Faults recorded.
    pub fn faults(&self) -> usize {
        self.faults.len()
    }

    /// Credits in use over all nodes, by the latest statuses.
    pub fn credits_in_use(&self) -> u64 {
        self.statuses.iter().map(|s| s.credits_in_use as u64).sum()
    }

    /// The report. `assigned`: events the supervisor assigned; `target`: measured events the
    /// run was to build (`None`: a timed run, whose target is what it assigned).
    pub fn finish(mut self, sc: &Scenario, origin: &str, assigned: u64, target: Option<u64>, wall_s: f64) -> Outcome {
        let warmup = self.warmup;
        // Events still in flight when a fatal fault ended the run were lost with it.
        let stranded: Vec<EventId> = self.in_flight.keys().copied().collect();
        if let Some(i) = self.fatal {
            self.faults[i].lost_events.extend(stranded.iter().map(|e| e.0));
        }
        let measured = |e: &&EventId| e.0 >= warmup;
        let lost_in_flight = if self.faults.is_empty() { 0 } else { stranded.iter().filter(measured).count() };
        let lost = lost_in_flight as u64 + self.corrupt;
        let m = self.measure.finish();
        let target = target.unwrap_or(assigned.saturating_sub(warmup));
        let abandoned = target.saturating_sub(m.events_built + lost);
        let mut report = RunReport::measured("run", origin, sc, m);
        report.events_not_built = NotBuilt { timed_out: 0, lost, abandoned };
        report.wall_s = wall_s;
        report.nodes = node_stats(&self.statuses, sc.system.credits_per_node);
        if !self.tcp.is_empty() {
            let (retransmits, timeouts) = sum_tcp(self.tcp.values());
            report.tcp.retransmits = retransmits;
            report.tcp.timeouts = timeouts.unwrap_or(0);
            report.tcp_source = if timeouts.is_some() { "tcp_info".into() } else { "tcp_info without timeouts".into() };
        }
        report.faults = self.faults;
        Outcome { report }
    }
}

fn sum_tcp<'a>(counts: impl Iterator<Item = &'a NodeTcp>) -> (u64, Option<u64>) {
    counts.fold((0, Some(0)), |(r, t), c| (r + c.retransmits, t.zip(c.timeouts).map(|(a, b)| a + b)))
}

fn node_stats(statuses: &[CollectorStatus], credits: Credits) -> Vec<NodeStats> {
    let credits = match credits {
        Credits::Limited(c) => Some(c),
        Credits::Unlimited => None,
    };
    statuses
        .iter()
        .enumerate()
        .map(|(n, s)| NodeStats {
            node: n as u32,
            credits,
            peak_outstanding_fragments: s.peak_outstanding_fragments,
            fragments_verified: s.fragments_verified,
            fragments_corrupt: s.fragments_corrupt,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::NS_PER_MS;

    fn tally() -> RunTally {
        RunTally::new(Layout::new(2, 2, 2), 1, 1000)
    }

    fn built(event: u64, pu: u32) -> BuiltReport {
        BuiltReport {
            event: EventId(event),
            pu: PuId(pu),
            latency_ns: 5 * NS_PER_MS,
            span_ns: 5 * NS_PER_MS,
            bytes: 100,
            corrupt_fragments: 0,
        }
    }

    fn scenario() -> Scenario {
        let mut sc = Scenario::default();
        sc.run.warmup_events = 1;
        sc.run.events = 3;
        sc
    }

    #[test]
    fn built_and_not_built_add_up_to_what_was_assigned() {
        let mut t = tally();
        for (e, pu) in [(0, 0), (1, 1), (2, 2), (3, 3)] {
            t.on_assigned(EventId(e), PuId(pu), 1000 + e * NS_PER_MS);
        }
        assert!(t.on_built(NodeId(0), built(0, 0), 20 * NS_PER_MS).is_some());
        let track = t.on_built(NodeId(0), built(1, 1), 30 * NS_PER_MS).expect("a good event");
        assert_eq!((track.assigned, track.done - track.started), (NS_PER_MS, 5 * NS_PER_MS));
        let corrupt = BuiltReport { corrupt_fragments: 2, ..built(2, 2) };
        assert!(t.on_built(NodeId(1), corrupt, 40 * NS_PER_MS).is_none());
        assert_eq!((t.in_flight(), t.finished(), t.built()), (1, 3, (2, 200)));
        let o = t.finish(&scenario(), "s", 4, Some(3), 1.0);
        let nb = &o.report.events_not_built;
        assert_eq!((o.report.events_built, nb.lost, nb.abandoned), (1, 1, 1), "event 3 never finished");
        assert_eq!(o.report.events_built + nb.lost + nb.abandoned, 3);
    }

    #[test]
    fn a_fatal_fault_loses_what_is_in_flight_and_names_who_failed_and_who_noticed() {
        let mut t = tally();
        t.on_assigned(EventId(1), PuId(0), 2000);
        t.on_assigned(EventId(2), PuId(2), 2000);
        let reason = "connection closed".to_string();
        let f = Fault {
            culprit: RoleId::Readout(daqnet_core::ReadoutId(1)),
            noticed_by: RoleId::Collector(NodeId(0)),
            reason,
            events: vec![],
            fatal: true,
        };
        t.on_fault(f, NS_PER_S + 1000);
        assert!(t.is_fatal());
        let o = t.finish(&scenario(), "s", 3, Some(3), 1.0);
        let f = &o.report.faults[0];
        assert_eq!((f.role.as_str(), f.noticed_by.as_str(), f.at_s), ("readout 1", "collector 0", 1.0));
        assert_eq!(f.lost_events, vec![1, 2]);
        assert_eq!((o.report.events_not_built.lost, o.report.events_not_built.abandoned), (2, 1));
    }

    #[test]
    fn a_report_for_an_event_not_in_flight_or_of_another_node_is_a_fatal_fault() {
        let mut t = tally();
        t.on_assigned(EventId(1), PuId(0), 0);
        assert!(t.on_built(NodeId(1), built(1, 0), 10).is_none(), "unit 0 is on node 0");
        assert!(t.is_fatal());
        assert!(t.on_built(NodeId(0), built(7, 0), 10).is_none());
        assert_eq!(t.faults(), 2);
    }

    #[test]
    fn a_run_stalls_only_with_events_in_flight() {
        let mut t = tally();
        assert!(!t.stalled(10 * NS_PER_S, NS_PER_S));
        t.on_assigned(EventId(0), PuId(0), 0);
        assert!(!t.stalled(NS_PER_S, NS_PER_S));
        assert!(t.stalled(3 * NS_PER_S, NS_PER_S));
        t.progressed(3 * NS_PER_S);
        assert!(!t.stalled(3 * NS_PER_S, NS_PER_S));
    }
}
