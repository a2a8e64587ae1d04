//! One node's collector during the run, without IO: the core [`Node`] (collector, credits,
//! processing units) plus what a real run adds — verification results, corrupt events, the
//! counters the supervisor hears, and faults.

use super::verify::Verdict;
use crate::role::RoleId;
use crate::roles::error::RoleError;
use crate::wire::{CollectorStatus, Message, ResponseHead};
use daqnet_core::dataflow::{DataResponse, Node, NodeInput, NodeOutput, PuOutput};
use daqnet_core::{EventId, Nanos, NodeId, PuId, ReadoutId, Scenario};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What happens to a collector.
#[derive(Debug)]
pub enum Input {
    /// A message from the supervisor.
    Supervisor(Message),
    /// A readout unit's response, verified.
    Response(ReadoutId, ResponseHead, Verdict),
    /// Anything else a readout unit sent.
    ReadoutMessage(ReadoutId, Message),
    /// A readout unit's connection ended.
    ReadoutLost(ReadoutId, String),
    /// A processing unit's timer fired.
    Wake(PuId),
    /// The periodic tick: report the counters.
    Tick,
}

/// What a collector sends or asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A message to the supervisor.
    ToSupervisor(Message),
    /// A message to a readout unit.
    ToReadout(ReadoutId, Message),
    /// Wake processing unit `pu` at the given time.
    WakeAt(PuId, Nanos),
}

/// The collector of one node.
pub struct CollectorState {
    me: NodeId,
    node: Node,
    status: CollectorStatus,
    corrupt: HashMap<EventId, u32>,
    /// Fragments requested and not yet received, counted at the sockets (the readers decrement
    /// it as responses arrive), independently of the credit pool.
    outstanding: Arc<AtomicU64>,
    stopped: bool,
    out: VecDeque<Output>,
}

impl CollectorState {
    /// The collector of node `me`; `outstanding` is shared with the connection readers.
    pub fn new(sc: &Scenario, me: NodeId, outstanding: Arc<AtomicU64>) -> Self {
        let node = Node::new(&sc.layout(), me, &sc.system, sc.run.seed);
        CollectorState {
            me,
            node,
            status: CollectorStatus::default(),
            corrupt: HashMap::new(),
            outstanding,
            stopped: false,
            out: VecDeque::new(),
        }
    }

    /// Something happened at `now`. An error is fatal: the reason is returned after a fault
    /// naming the culprit went to the supervisor.
    pub fn handle(&mut self, now: Nanos, input: Input) -> Result<(), RoleError> {
        match input {
            Input::Supervisor(Message::Start { .. }) => {}
            Input::Supervisor(Message::Assign { event, pu }) => {
                self.feed_node(now, NodeInput::Assign { pu, event }, RoleId::Supervisor)?;
            }
            Input::Supervisor(Message::Stop) => self.stopped = true,
            Input::Supervisor(m) => {
                let e = RoleError::Unexpected { from: RoleId::Supervisor, message: format!("{m:?}") };
                return Err(self.fail(RoleId::Supervisor, e));
            }
            Input::Response(r, head, verdict) => self.on_response(now, r, head, verdict)?,
            Input::ReadoutMessage(r, m) => {
                let e = RoleError::Unexpected { from: RoleId::Readout(r), message: format!("{m:?}") };
                return Err(self.fail(RoleId::Readout(r), e));
            }
            // The supervisor ends the run; keep serving it until it says stop.
            Input::ReadoutLost(r, e) => self.fault(RoleId::Readout(r), true, None, format!("readout {r}: {e}")),
            Input::Wake(pu) => self.feed_node(now, NodeInput::Wake(pu), RoleId::Supervisor)?,
            Input::Tick => self.out.push_back(Output::ToSupervisor(Message::Status(self.status()))),
        }
        Ok(())
    }

    fn on_response(&mut self, now: Nanos, r: ReadoutId, head: ResponseHead, verdict: Verdict) -> Result<(), RoleError> {
        self.status.fragments_verified += verdict.good as u64;
        if verdict.bad > 0 {
            self.status.fragments_corrupt += verdict.bad as u64;
            *self.corrupt.entry(head.event).or_default() += verdict.bad;
            let problem = verdict.problem.unwrap_or_default();
            let detail = format!("event {} from readout {r} failed verification: {problem}", head.event);
            self.fault(RoleId::Readout(r), false, Some(head.event), detail);
        }
        let resp =
            DataResponse { event: head.event, readout: r, node: self.me, fragments: head.fragments, bytes: head.bytes };
        self.feed_node(now, NodeInput::Response(resp), RoleId::Readout(r))
    }

    /// Feeds the node; a refusal is the fault of `source`, who sent the input.
    fn feed_node(&mut self, now: Nanos, input: NodeInput, source: RoleId) -> Result<(), RoleError> {
        if let Err(e) = self.node.handle(now, input) {
            return Err(self.fail(source, RoleError::Refused { from: source, error: e }));
        }
        while let Some(o) = self.node.poll() {
            let out = match o {
                NodeOutput::Request { readout, request } => {
                    let n = request.fragments as u64;
                    let o = self.outstanding.fetch_add(n, Ordering::AcqRel) + n;
                    self.status.peak_outstanding_fragments = self.status.peak_outstanding_fragments.max(o);
                    let m = Message::Request { event: request.event, node: self.me, fragments: request.fragments };
                    Output::ToReadout(readout, m)
                }
                NodeOutput::Built(b) => Output::ToSupervisor(Message::Built {
                    event: b.event,
                    pu: b.pu,
                    latency_ns: b.latency,
                    span_ns: b.done - b.started,
                    bytes: b.bytes,
                    corrupt_fragments: self.corrupt.remove(&b.event).unwrap_or(0),
                }),
                NodeOutput::Unit(pu, PuOutput::WakeAt(at)) => Output::WakeAt(pu, at),
                NodeOutput::Unit(_, PuOutput::Done(event)) => Output::ToSupervisor(Message::Done(event)),
                NodeOutput::Unit(pu, PuOutput::AskForWork) => Output::ToSupervisor(Message::Ready(pu)),
            };
            self.out.push_back(out);
        }
        Ok(())
    }

    fn fault(&mut self, culprit: RoleId, fatal: bool, event: Option<EventId>, detail: String) {
        self.out.push_back(Output::ToSupervisor(Message::Fault { culprit, fatal, event, detail }));
    }

    /// `e` ends the run: a fatal fault blaming `culprit` goes to the supervisor first.
    fn fail(&mut self, culprit: RoleId, e: RoleError) -> RoleError {
        self.fault(culprit, true, None, e.to_string());
        e
    }

    /// The next thing to send or arm.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Whether the supervisor stopped the run.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The counters as the supervisor hears them.
    pub fn status(&self) -> CollectorStatus {
        let c = self.node.collector();
        CollectorStatus {
            credits_in_use: c.credits().in_use(),
            queued_requests: c.queued_requests() as u32,
            events_in_progress: c.events_in_progress() as u32,
            ..self.status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> CollectorState {
        let mut sc = Scenario::default();
        sc.system.readout_units = 2;
        sc.system.nodes = 2;
        sc.system.pus_per_node = 1;
        sc.system.fragments_per_unit = 1;
        sc.system.processing_time_ns = 100;
        CollectorState::new(&sc, NodeId(1), Arc::new(AtomicU64::new(0)))
    }

    fn drain(s: &mut CollectorState) -> Vec<Output> {
        std::iter::from_fn(|| s.poll()).collect()
    }

    fn head(event: u64, r: u32) -> ResponseHead {
        ResponseHead { event: EventId(event), readout: ReadoutId(r), node: NodeId(1), fragments: 1, bytes: 10 }
    }

    fn good() -> Verdict {
        Verdict { good: 1, bad: 0, problem: None }
    }

    #[test]
    fn an_assigned_event_is_requested_built_reported_and_processed() {
        let mut s = state();
        s.handle(0, Input::Supervisor(Message::Assign { event: EventId(4), pu: PuId(1) })).unwrap();
        let out = drain(&mut s);
        assert_eq!(out.len(), 2, "a request to each readout unit: {out:?}");
        assert_eq!(s.status().peak_outstanding_fragments, 2);
        s.handle(5, Input::Response(ReadoutId(0), head(4, 0), good())).unwrap();
        s.handle(9, Input::Response(ReadoutId(1), head(4, 1), good())).unwrap();
        let built = Message::Built {
            event: EventId(4),
            pu: PuId(1),
            latency_ns: 9,
            span_ns: 9,
            bytes: 20,
            corrupt_fragments: 0,
        };
        assert_eq!(drain(&mut s), [Output::ToSupervisor(built), Output::WakeAt(PuId(1), 109)]);
        s.handle(109, Input::Wake(PuId(1))).unwrap();
        assert_eq!(
            drain(&mut s),
            [Output::ToSupervisor(Message::Done(EventId(4))), Output::ToSupervisor(Message::Ready(PuId(1)))]
        );
        assert_eq!(s.status().fragments_verified, 2);
    }

    #[test]
    fn corruption_is_reported_against_the_readout_unit_and_the_event_marked() {
        let mut s = state();
        s.handle(0, Input::Supervisor(Message::Assign { event: EventId(4), pu: PuId(1) })).unwrap();
        drain(&mut s);
        let bad = Verdict { good: 0, bad: 1, problem: Some("payload differs".into()) };
        s.handle(5, Input::Response(ReadoutId(0), head(4, 0), bad)).unwrap();
        s.handle(6, Input::Response(ReadoutId(1), head(4, 1), good())).unwrap();
        let out = drain(&mut s);
        assert!(matches!(
            &out[0],
            Output::ToSupervisor(Message::Fault { culprit: RoleId::Readout(ReadoutId(0)), fatal: false, .. })
        ));
        assert!(matches!(&out[1], Output::ToSupervisor(Message::Built { corrupt_fragments: 1, .. })));
    }

    #[test]
    fn protocol_errors_are_fatal_and_blame_the_sender() {
        let mut s = state();
        let e = s.handle(0, Input::Supervisor(Message::Assign { event: EventId(4), pu: PuId(0) })).unwrap_err();
        assert!(matches!(e, RoleError::Refused { from: RoleId::Supervisor, .. }), "{e:?}");
        assert!(e.to_string().contains("not on node 1"), "{e}");
        assert!(matches!(
            drain(&mut s)[..],
            [Output::ToSupervisor(Message::Fault { culprit: RoleId::Supervisor, fatal: true, .. })]
        ));
        assert!(s.handle(0, Input::Response(ReadoutId(1), head(9, 1), good())).is_err(), "a response nobody asked for");
        assert!(matches!(
            drain(&mut s)[..],
            [Output::ToSupervisor(Message::Fault { culprit: RoleId::Readout(ReadoutId(1)), .. })]
        ));
        s.handle(0, Input::ReadoutLost(ReadoutId(0), "connection closed".into())).unwrap();
        assert!(matches!(
            drain(&mut s)[..],
            [Output::ToSupervisor(Message::Fault { culprit: RoleId::Readout(ReadoutId(0)), fatal: true, .. })]
        ));
    }
}
