//! One readout unit during the run, without IO: the core [`ReadoutUnit`] (service delay), a
//! generator that fills a bounded buffer with the unit's fragments event after event, the
//! collectors connected, and the responses waiting for their event to be generated. The
//! supervisor clears events when they are processed; a full buffer makes the generator wait
//! (back-pressure), never drop.

use super::buffer::{generate, Held};
use crate::net::piece::Piece;
use crate::payload::Template;
use crate::role::RoleId;
use crate::roles::error::RoleError;
use crate::wire::{put_header, put_response_head, Message, ResponseHead, RESPONSE_HEAD_BYTES};
use bytes::BytesMut;
use daqnet_core::dataflow::{DataRequest, DataResponse, ReadoutUnit};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{EventId, Layout, Nanos, NodeId, ReadoutId, Scenario};
use std::collections::{BTreeMap, HashSet, VecDeque};

/// What happens to a readout unit.
#[derive(Debug)]
pub enum Input {
    /// A message from the supervisor.
    Supervisor(Message),
    /// A message from a connected collector.
    Collector(NodeId, Message),
    /// A collector's connection ended (the supervisor hears of it too and ends the run).
    CollectorLost(NodeId),
    /// A response's service time is over.
    Due,
}

/// What a readout unit sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A message to the supervisor.
    ToSupervisor(Message),
    /// A response frame, in pieces (head, then each fragment), to a collector.
    Respond(NodeId, Vec<Piece>),
}

/// One readout unit.
pub struct ReadoutState {
    me: ReadoutId,
    layout: Layout,
    seed: u64,
    sizes: FragmentSizes,
    fragments_per_unit: u32,
    unit: ReadoutUnit,
    buffer: BTreeMap<EventId, Held>,
    held_bytes: u64,
    capacity: u64,
    max_frame_bytes: u64,
    next_event: EventId,
    /// Bytes of the next event to generate (drawn once per event, not once per loop turn).
    next_bytes: u64,
    total: Option<u64>,
    cleared_early: HashSet<EventId>,
    waiting: Vec<DataResponse>,
    collectors: HashSet<NodeId>,
    template: Template,
    corrupt: Vec<EventId>,
    stopped: bool,
    out: VecDeque<Output>,
}

impl ReadoutState {
    /// Readout unit `me`; `corrupt` lists events whose first fragment it corrupts on purpose
    /// (fault injection for tests).
    pub fn new(sc: &Scenario, me: ReadoutId, corrupt: Vec<EventId>) -> Self {
        let sys = &sc.system;
        let seed = sc.run.seed;
        let sizes = FragmentSizes::new(sys.fragment_size.clone(), seed, sys.fragments_per_unit);
        ReadoutState {
            me,
            layout: sc.layout(),
            seed,
            next_bytes: sizes.unit_bytes(EventId(0), me),
            unit: ReadoutUnit::new(me, sizes.clone(), sys.readout_service_ns, sys.readout_service_jitter_ns, seed),
            sizes,
            fragments_per_unit: sys.fragments_per_unit,
            buffer: BTreeMap::new(),
            held_bytes: 0,
            capacity: sc.deploy.readout_buffer_bytes,
            max_frame_bytes: sc.deploy.max_frame_bytes,
            next_event: EventId(0),
            total: None,
            cleared_early: HashSet::new(),
            waiting: Vec::new(),
            collectors: HashSet::new(),
            template: Template::default(),
            corrupt,
            stopped: false,
            out: VecDeque::new(),
        }
    }

    /// Collector `node` said hello. A node not in the scenario, or one already connected (a
    /// second process claiming its place), is refused with the reason.
    pub fn on_joined(&mut self, node: NodeId) -> Result<(), RoleError> {
        if !self.layout.has_node(node) {
            return Err(RoleError::UnknownCollector(node));
        }
        if !self.collectors.insert(node) {
            return Err(RoleError::AlreadyConnected(node));
        }
        Ok(())
    }

    /// Something happened at `now`. An error is fatal: a fault went to the supervisor.
    pub fn handle(&mut self, now: Nanos, input: Input) -> Result<(), RoleError> {
        match input {
            Input::Due => {}
            Input::Supervisor(Message::Start { events }) => self.total = Some(events),
            Input::Supervisor(Message::Clear(event)) => self.clear(event),
            Input::Supervisor(Message::Stop) => self.stopped = true,
            Input::Supervisor(m) => {
                return Err(self.fail(RoleError::Unexpected { from: RoleId::Supervisor, message: format!("{m:?}") }))
            }
            Input::Collector(node, Message::Request { event, node: asked_for, fragments }) => {
                self.on_request(now, node, event, asked_for, fragments)?
            }
            Input::Collector(node, m) => {
                return Err(
                    self.fail(RoleError::Unexpected { from: RoleId::Collector(node), message: format!("{m:?}") })
                )
            }
            Input::CollectorLost(node) => {
                self.collectors.remove(&node);
            }
        }
        self.answer(now)
    }

    fn clear(&mut self, event: EventId) {
        match self.buffer.remove(&event) {
            Some(h) => self.held_bytes -= h.bytes,
            None if event >= self.next_event => {
                self.cleared_early.insert(event);
            }
            None => {}
        }
    }

    fn on_request(
        &mut self,
        now: Nanos,
        node: NodeId,
        event: EventId,
        asked_for: NodeId,
        fragments: u32,
    ) -> Result<(), RoleError> {
        if asked_for != node || fragments != self.fragments_per_unit {
            let expected = self.fragments_per_unit;
            return Err(self.fail(RoleError::BadRequest { node, asked_for, fragments, expected }));
        }
        if event < self.next_event && !self.buffer.contains_key(&event) {
            return Err(self.fail(RoleError::AlreadyCleared { node, event }));
        }
        self.unit.on_request(now, DataRequest { event, node, fragments });
        Ok(())
    }

    /// Whether the generator may make the next event: the run has started, events remain and
    /// the buffer has room for it.
    pub fn has_room(&self) -> bool {
        self.total.is_some_and(|t| self.next_event.0 < t) && self.held_bytes + self.next_bytes <= self.capacity
    }

    /// Generates the next event's fragments (unless it was already cleared).
    pub fn generate_next(&mut self) {
        let event = self.next_event;
        self.next_event = event.next();
        self.next_bytes = self.sizes.unit_bytes(self.next_event, self.me);
        if !self.cleared_early.remove(&event) {
            let corrupt = self.corrupt.contains(&event);
            let h = generate(self.seed, &self.sizes, self.me, event, corrupt, &mut self.template);
            self.held_bytes += h.bytes;
            self.buffer.insert(event, h);
        }
    }

    /// Sends every response that is due at `now` and whose event is generated.
    pub fn answer(&mut self, now: Nanos) -> Result<(), RoleError> {
        while let Some(resp) = self.unit.poll_response(now) {
            self.waiting.push(resp);
        }
        let mut i = 0;
        while i < self.waiting.len() {
            let r = self.waiting[i];
            let Some(held) = self.buffer.get(&r.event) else {
                if r.event < self.next_event {
                    return Err(self.fail(RoleError::ClearedBeforeResponse { event: r.event, node: r.node }));
                }
                i += 1;
                continue;
            };
            if !self.collectors.contains(&r.node) {
                // The collector went away with a response owed to it: its fault, noticed here
                // (the supervisor may not have heard of it yet).
                let lost = RoleError::NotConnected { node: r.node };
                return Err(self.fail_blaming(RoleId::Collector(r.node), lost));
            }
            let body = RESPONSE_HEAD_BYTES + held.fragments.iter().map(|f| f.len()).sum::<usize>();
            if body as u64 > self.max_frame_bytes {
                let max = self.max_frame_bytes;
                return Err(self.fail(RoleError::ResponseTooLarge { event: r.event, bytes: body, max }));
            }
            let frame = response_frame(&r, self.me, body, held);
            self.out.push_back(Output::Respond(r.node, frame));
            self.waiting.swap_remove(i);
        }
        Ok(())
    }

    /// `e` ends the run: a fatal fault naming this readout unit goes to the supervisor first.
    fn fail(&mut self, e: RoleError) -> RoleError {
        self.fail_blaming(RoleId::Readout(self.me), e)
    }

    /// `e`, caused by `culprit`, ends the run: a fatal fault naming it goes to the supervisor.
    fn fail_blaming(&mut self, culprit: RoleId, e: RoleError) -> RoleError {
        let fault = Message::Fault { culprit, fatal: true, event: None, detail: e.to_string() };
        self.out.push_back(Output::ToSupervisor(fault));
        e
    }

    /// When the next response is due.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.unit.poll_timeout()
    }

    /// The next thing to send.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Whether the supervisor stopped the run.
    pub fn stopped(&self) -> bool {
        self.stopped
    }
}

/// A response frame in pieces: the frame header and response head, then each fragment as held.
fn response_frame(r: &DataResponse, me: ReadoutId, body: usize, held: &Held) -> Vec<Piece> {
    debug_assert_eq!(r.bytes, held.bytes);
    let mut head = BytesMut::with_capacity(8 + RESPONSE_HEAD_BYTES);
    put_header(&mut head, Message::RESPONSE_KIND, body);
    let rh = ResponseHead { event: r.event, readout: me, node: r.node, fragments: r.fragments, bytes: r.bytes };
    put_response_head(&mut head, &rh);
    let mut pieces = Vec::with_capacity(1 + 2 * held.fragments.len());
    pieces.push(head.freeze().into());
    for f in &held.fragments {
        pieces.push(f.own.clone().into());
        if !f.rest.is_empty() {
            pieces.push(f.rest.clone());
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ReadoutState {
        let mut sc = Scenario::default();
        sc.system.readout_units = 2;
        sc.system.nodes = 2;
        sc.system.fragments_per_unit = 2;
        sc.system.readout_service_ns = 100;
        sc.system.readout_service_jitter_ns = 0;
        sc.deploy.readout_buffer_bytes = 2 * 2 * 1100;
        ReadoutState::new(&sc, ReadoutId(1), vec![])
    }

    fn request(event: u64, node: u32) -> Input {
        Input::Collector(NodeId(node), Message::Request { event: EventId(event), node: NodeId(node), fragments: 2 })
    }

    #[test]
    fn the_generator_waits_for_room_and_responses_wait_for_their_event_and_service_time() {
        let mut s = state();
        assert!(!s.has_room(), "not before the run starts");
        s.handle(0, Input::Supervisor(Message::Start { events: 10 })).unwrap();
        s.on_joined(NodeId(0)).unwrap();
        s.generate_next();
        s.generate_next();
        assert!(!s.has_room(), "two events fill the buffer");
        s.handle(10, request(2, 0)).unwrap();
        assert_eq!(s.poll_timeout(), Some(110));
        s.handle(110, Input::Due).unwrap();
        assert_eq!(s.poll(), None, "event 2 is not generated yet");
        s.handle(120, Input::Supervisor(Message::Clear(EventId(0)))).unwrap();
        assert!(s.has_room());
        s.generate_next();
        s.answer(130).unwrap();
        let Some(Output::Respond(NodeId(0), pieces)) = s.poll() else { panic!("a response") };
        assert_eq!(pieces.len(), 5, "head, then each fragment's own bytes and the shared rest");
        assert_eq!(pieces.iter().map(|p| p.len()).sum::<usize>(), 8 + RESPONSE_HEAD_BYTES + 2 * (24 + 1100));
    }

    #[test]
    fn a_second_claim_to_a_collectors_place_is_refused() {
        let mut s = state();
        s.on_joined(NodeId(1)).unwrap();
        assert_eq!(s.on_joined(NodeId(1)), Err(RoleError::AlreadyConnected(NodeId(1))));
        assert_eq!(s.on_joined(NodeId(7)), Err(RoleError::UnknownCollector(NodeId(7))));
        assert_eq!(RoleError::UnknownCollector(NodeId(7)).to_string(), "collector 7 is not in this scenario");
    }

    #[test]
    fn a_response_owed_to_a_collector_that_went_away_is_the_collectors_fault() {
        // A killed collector: its connection closes here before the supervisor hears of it;
        // the fault this unit reports names the collector, not itself.
        let mut s = state();
        s.handle(0, Input::Supervisor(Message::Start { events: 10 })).unwrap();
        s.on_joined(NodeId(1)).unwrap();
        s.generate_next();
        s.handle(10, request(0, 1)).unwrap();
        s.handle(20, Input::CollectorLost(NodeId(1))).unwrap();
        assert_eq!(s.handle(110, Input::Due), Err(RoleError::NotConnected { node: NodeId(1) }));
        assert!(matches!(
            s.poll(),
            Some(Output::ToSupervisor(Message::Fault { culprit: RoleId::Collector(NodeId(1)), fatal: true, .. }))
        ));
    }

    #[test]
    fn requests_that_break_the_protocol_are_fatal_faults_of_this_unit() {
        let mut s = state();
        let bad = Input::Collector(NodeId(0), Message::Request { event: EventId(0), node: NodeId(1), fragments: 2 });
        assert!(s.handle(0, bad).is_err());
        assert!(matches!(
            s.poll(),
            Some(Output::ToSupervisor(Message::Fault { culprit: RoleId::Readout(ReadoutId(1)), .. }))
        ));
    }
}
