//! A worker node: its collector (with the credit pool) and its processing units, wired together
//! once here so that no driver wires them by hand.

use super::{Collector, CollectorOutput, DataRequest, DataResponse, DataflowError, ProcessingUnit, PuOutput, Step};
use crate::ids::Layout;
use crate::scenario::System;
use crate::{EventId, Nanos, NodeId, PuId, ReadoutId};
use std::collections::VecDeque;

/// What a node is told. Every substrate feeds these, with the current time, to
/// [`Node::handle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeInput {
    /// The supervisor gave `event` to processing unit `pu` of this node.
    Assign {
        /// The processing unit.
        pu: PuId,
        /// The event.
        event: EventId,
    },
    /// A readout unit's response arrived.
    Response(DataResponse),
    /// A processing unit's timer (asked for with [`PuOutput::WakeAt`]) fired.
    Wake(PuId),
}

/// An event whose data are all in: what every substrate records of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltEvent {
    /// The event.
    pub event: EventId,
    /// The processing unit it was collected for.
    pub pu: PuId,
    /// When collection started (the unit asked its collector for the data).
    pub started: Nanos,
    /// When the last fragment arrived.
    pub done: Nanos,
    /// Data-collection latency: the time the unit waited for data (`done - started` when the
    /// event is collected in one step; less with `[[system.roi_step]]`s, whose processing
    /// between the steps does not count).
    pub latency: Nanos,
    /// Payload bytes collected.
    pub bytes: u64,
    /// Fragments collected.
    pub fragments: u64,
}

/// What a node asks its driver to do. Drivers match it exhaustively (and the [`PuOutput`]
/// inside it), so a new kind of output fails to compile in every driver until handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeOutput {
    /// Send this request to readout unit `readout`.
    Request {
        /// Destination readout unit.
        readout: ReadoutId,
        /// The request.
        request: DataRequest,
    },
    /// Every fragment of an event is in (the unit now processes it).
    Built(BuiltEvent),
    /// What processing unit `pu` asks for: work, a timer, or to report an event done.
    Unit(PuId, PuOutput),
}

/// One worker node: a [`Collector`] and the node's [`ProcessingUnit`]s.
#[derive(Debug, Clone)]
pub struct Node {
    id: NodeId,
    first_pu: PuId,
    units: Vec<ProcessingUnit>,
    collector: Collector,
    out: VecDeque<NodeOutput>,
}

impl Node {
    /// Node `id` of a system laid out as `layout`, configured by `system`, with the run's `seed`.
    pub fn new(layout: &Layout, id: NodeId, system: &System, seed: u64) -> Self {
        let roi = system.roi_steps.iter().map(|s| Step {
            fraction: s.collect_fraction,
            processing_ns: s.processing_time_ns,
            reject: s.reject_fraction,
        });
        let last = Step { fraction: system.collect_fraction, processing_ns: system.processing_time_ns, reject: 0.0 };
        let steps: Vec<Step> = roi.chain([last]).collect();
        let units = layout
            .pus_of(id)
            .map(|pu| ProcessingUnit::new(pu, steps.clone(), layout.readout_units(), seed))
            .collect::<Vec<_>>();
        Node {
            id,
            first_pu: units[0].id(),
            units,
            collector: Collector::new(id, system.credits_per_node, system.fragments_per_unit),
            out: VecDeque::new(),
        }
    }

    /// This node.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Something happened at `now`. An error means a peer broke the protocol (an assignment to
    /// another node's unit or to a busy one, a response nobody asked for); the node's state is
    /// unchanged by the input that caused it.
    pub fn handle(&mut self, now: Nanos, input: NodeInput) -> Result<(), DataflowError> {
        match input {
            NodeInput::Assign { pu, event } => {
                let unit = self.unit(pu)?;
                let readouts = unit.on_assign(now, event)?;
                self.collector.on_collect(pu, event, &readouts);
            }
            NodeInput::Response(resp) => self.collector.on_response(&resp)?,
            NodeInput::Wake(pu) => {
                let next = self.unit(pu)?.on_wake(now);
                self.drain_unit(pu);
                if let Some((event, readouts)) = next {
                    self.collector.on_collect(pu, event, &readouts);
                }
            }
        }
        self.drain_collector(now)
    }

    fn unit(&mut self, pu: PuId) -> Result<&mut ProcessingUnit, DataflowError> {
        let i = pu.0.checked_sub(self.first_pu.0).map(|i| i as usize).filter(|&i| i < self.units.len());
        match i {
            Some(i) => Ok(&mut self.units[i]),
            None => Err(DataflowError::NotOurUnit { pu, node: self.id }),
        }
    }

    fn drain_unit(&mut self, pu: PuId) {
        let i = (pu.0 - self.first_pu.0) as usize;
        while let Some(o) = self.units[i].poll() {
            self.out.push_back(NodeOutput::Unit(pu, o));
        }
    }

    /// Turns the collector's outputs into the node's, in order: a collected event is handed
    /// to its unit at once, before the requests its returned credits released.
    fn drain_collector(&mut self, now: Nanos) -> Result<(), DataflowError> {
        while let Some(o) = self.collector.poll() {
            match o {
                CollectorOutput::Request { readout, request } => {
                    self.out.push_back(NodeOutput::Request { readout, request })
                }
                CollectorOutput::Collected { pu, event, bytes, fragments } => {
                    if let Some(c) = self.unit(pu)?.on_collected(now, event, bytes, fragments)? {
                        let (started, latency) = (c.started, c.latency);
                        let (bytes, fragments) = (c.bytes, c.fragments);
                        let built = BuiltEvent { event, pu, started, done: now, latency, bytes, fragments };
                        self.out.push_back(NodeOutput::Built(built));
                    }
                    self.drain_unit(pu);
                }
            }
        }
        Ok(())
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<NodeOutput> {
        self.out.pop_front()
    }

    /// The node's collector (credits, queued requests, events in progress).
    pub fn collector(&self) -> &Collector {
        &self.collector
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Credits, RoiStep};
    use crate::Scenario;
    use proptest::prelude::*;

    fn node(credits: u32, processing_ns: Nanos) -> (Layout, Node) {
        let mut sc = Scenario::default();
        sc.system.readout_units = 3;
        sc.system.nodes = 2;
        sc.system.pus_per_node = 2;
        sc.system.fragments_per_unit = 1;
        sc.system.credits_per_node = Credits::Limited(credits);
        sc.system.processing_time_ns = processing_ns;
        sc.system.collect_fraction = 1.0;
        let layout = sc.layout();
        (layout, Node::new(&layout, NodeId(1), &sc.system, 1))
    }

    fn drain(n: &mut Node) -> Vec<NodeOutput> {
        std::iter::from_fn(|| n.poll()).collect()
    }

    fn response(event: u64, readout: u32) -> NodeInput {
        NodeInput::Response(DataResponse {
            event: EventId(event),
            readout: ReadoutId(readout),
            node: NodeId(1),
            fragments: 1,
            bytes: 100,
        })
    }

    fn response_from(event: u64, readout: ReadoutId) -> NodeInput {
        NodeInput::Response(DataResponse { event: EventId(event), readout, node: NodeId(0), fragments: 1, bytes: 100 })
    }

    #[test]
    fn an_event_goes_from_assignment_to_done_through_the_collector() {
        let (_, mut n) = node(2, 1000);
        n.handle(5, NodeInput::Assign { pu: PuId(2), event: EventId(9) }).unwrap();
        let requests = drain(&mut n);
        assert_eq!(requests.len(), 2, "two credits: two of three requests go out: {requests:?}");
        n.handle(10, response(9, 0)).unwrap();
        n.handle(11, response(9, 1)).unwrap();
        assert!(matches!(drain(&mut n)[..], [NodeOutput::Request { readout: ReadoutId(2), .. }]));
        n.handle(20, response(9, 2)).unwrap();
        let built =
            BuiltEvent { event: EventId(9), pu: PuId(2), started: 5, done: 20, latency: 15, bytes: 300, fragments: 3 };
        assert_eq!(drain(&mut n), [NodeOutput::Built(built), NodeOutput::Unit(PuId(2), PuOutput::WakeAt(1020))]);
        n.handle(1020, NodeInput::Wake(PuId(2))).unwrap();
        assert_eq!(
            drain(&mut n),
            [NodeOutput::Unit(PuId(2), PuOutput::Done(EventId(9))), NodeOutput::Unit(PuId(2), PuOutput::AskForWork)]
        );
    }

    #[test]
    fn protocol_errors_are_typed_and_change_nothing() {
        let (_, mut n) = node(10, 0);
        assert_eq!(
            n.handle(0, NodeInput::Assign { pu: PuId(0), event: EventId(1) }),
            Err(DataflowError::NotOurUnit { pu: PuId(0), node: NodeId(1) })
        );
        assert!(matches!(n.handle(0, response(4, 0)), Err(DataflowError::UnexpectedResponse { .. })));
        n.handle(0, NodeInput::Assign { pu: PuId(3), event: EventId(1) }).unwrap();
        let before = drain(&mut n).len();
        assert!(matches!(
            n.handle(1, NodeInput::Assign { pu: PuId(3), event: EventId(2) }),
            Err(DataflowError::UnitBusy { .. })
        ));
        assert_eq!((before, n.collector().events_in_progress()), (3, 1));
    }

    proptest! {
        /// Whatever the steps, their rejections and the order of the responses, an event
        /// collected in steps takes the steps its draws give, asks each readout unit at most
        /// once and every unit those steps drew; it is built once, after its last step, with
        /// every byte, and its latency is the time spent waiting for data: its span less the
        /// processing between the steps.
        #[test]
        fn an_event_in_steps_asks_each_unit_once_and_waits_only_for_data(
            readout_units in 1u32..40,
            steps in proptest::collection::vec((0.01f64..=1.0, 0u64..1000, prop_oneof![Just(0.0), 0.0f64..0.9]), 0..4),
            last in 0.01f64..=1.0,
            event in 0u64..1000,
            delays in proptest::collection::vec(0u64..500, 64),
        ) {
            let mut sc = Scenario::default();
            sc.system.readout_units = readout_units;
            (sc.system.nodes, sc.system.pus_per_node, sc.system.fragments_per_unit) = (1, 1, 1);
            sc.system.credits_per_node = Credits::Unlimited;
            sc.system.collect_fraction = last;
            sc.system.roi_steps = steps
                .iter()
                .map(|&(f, p, r)| RoiStep { collect_fraction: f, processing_time_ns: p, reject_fraction: r })
                .collect();
            let taken = crate::workload::steps_taken(7, EventId(event), steps.iter().map(|s| s.2));
            let layout = sc.layout();
            let mut n = Node::new(&layout, NodeId(0), &sc.system, 7);
            let (mut now, mut asked, mut built, mut processing, mut rounds) = (0, Vec::new(), None, Vec::new(), 0);
            let mut delays = delays.into_iter().cycle();
            n.handle(now, NodeInput::Assign { pu: PuId(0), event: EventId(event) }).unwrap();
            let done = loop {
                let mut out: Vec<NodeOutput> = std::iter::from_fn(|| n.poll()).collect();
                if out.iter().any(|o| matches!(o, NodeOutput::Unit(_, PuOutput::Done(_)))) {
                    break out;
                }
                prop_assert!(rounds <= steps.len(), "more steps than there are");
                rounds += 1;
                let requests: Vec<ReadoutId> =
                    out.iter().filter_map(|o| if let NodeOutput::Request { readout, .. } = o { Some(*readout) } else { None }).collect();
                asked.extend(requests.iter().copied());
                for r in requests {
                    now += delays.next().unwrap();
                    n.handle(now, response_from(event, r)).unwrap();
                    out.extend(std::iter::from_fn(|| n.poll()));
                }
                let mut wake = None;
                for o in out {
                    match o {
                        NodeOutput::Built(b) => built = Some(b),
                        NodeOutput::Unit(_, PuOutput::WakeAt(t)) => wake = Some(t),
                        NodeOutput::Request { .. } => {}
                        o => prop_assert!(false, "{o:?} before the last wake"),
                    }
                }
                let t = wake.expect("every step ends in processing");
                processing.push(t - now);
                now = t;
                n.handle(now, NodeInput::Wake(PuId(0))).unwrap();
            };
            prop_assert_eq!(&done[..], &[NodeOutput::Unit(PuId(0), PuOutput::Done(EventId(event))), NodeOutput::Unit(PuId(0), PuOutput::AskForWork)]);
            prop_assert_eq!(rounds, taken);
            let mut unique = asked.clone();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(unique.len(), asked.len(), "a unit asked twice: {:?}", asked);
            let b = built.expect("built after the last step");
            prop_assert_eq!((b.bytes, b.fragments), (100 * asked.len() as u64, asked.len() as u64));
            let between: u64 = processing[..taken - 1].iter().sum();
            prop_assert_eq!(b.latency, (b.done - b.started) - between);
            let mut drawn: Vec<ReadoutId> = (0..taken)
                .flat_map(|k| match steps.get(k) {
                    Some(s) => crate::workload::roi_subset(7, EventId(event), k as u32, s.0, readout_units),
                    None => crate::workload::readout_subset(7, EventId(event), last, readout_units),
                })
                .collect();
            drawn.sort_unstable();
            drawn.dedup();
            prop_assert_eq!(unique, drawn);
        }
    }
}
