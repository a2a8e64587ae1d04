//! One node of a real pipe run: its readout unit, its builder unit, the event manager on node
//! 0, or its side of a synthetic pattern — as one state machine that any transport drives
//! (`on_*` with the time, then `poll` for messages to send). The simulator drives the same
//! [`EventManager`] and [`BuilderUnit`]; a node only composes them and keeps the counts a
//! report needs.
//!
//! A node that dies is noticed by its peers' transports, which call [`PipeNode::on_lost`]: the
//! event manager accounts the events it held as lost and assigns it no more, every builder
//! unit gives up its fragments (events are then built without them, counted as incomplete),
//! and synthetic senders and receivers forget it.

use super::{BuilderOutput, BuilderUnit, EventManager, PipeError, PipeRoles};
use crate::scenario::{Pipe, PipePattern};
use crate::{EventId, Nanos, NodeId, ReadoutId};
use std::collections::VecDeque;

/// What nodes tell each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeMsg {
    /// Event manager → builder unit: build `event`.
    Assign {
        /// The event.
        event: EventId,
    },
    /// Builder unit → event manager: `event` is built, lacking `missing` fragments of lost
    /// readout units.
    Built {
        /// The event.
        event: EventId,
        /// Fragments it lacks.
        missing: u32,
    },
    /// Builder unit → readout unit: send your fragment of `event`.
    Pull {
        /// The event.
        event: EventId,
    },
    /// Readout unit → builder unit: its fragment of `event`, `bytes` long.
    Fragment {
        /// The event.
        event: EventId,
        /// Its length.
        bytes: u64,
    },
    /// A synthetic pattern's data message number `seq` (numbered over all senders).
    Data {
        /// Its number.
        seq: u64,
        /// Its length.
        bytes: u64,
    },
    /// A synthetic pattern's command or metadata message, after a data message.
    Extra {
        /// Its length.
        bytes: u64,
    },
    /// Event manager → every node: every event is built or lost; the run is over.
    Stop,
}

/// What one node counted over a run: the input of the report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeTally {
    /// The node.
    pub node: u32,
    /// Measured payload its readout unit (or synthetic sender) sent to other nodes, bytes.
    pub sent_bytes: u64,
    /// Measured payload its builder unit (or synthetic receiver) got from other nodes, bytes.
    pub recv_bytes: u64,
    /// From its first to its last measured transfer (sent or received), ns of its own clock.
    pub span_ns: Nanos,
    /// Events it built (synthetic: data messages received), measured ones.
    pub built: u64,
    /// Of those, events built without the fragments of lost readout units.
    pub incomplete: u64,
    /// Fragments and data messages received whose payload the transport verified, warm-up
    /// included.
    pub verified: u64,
    /// Fragments (or data messages) received with a wrong key or length.
    pub bad: u64,
    /// Peers it noticed lost, with when: ns of its own clock since its start.
    pub lost_peers: Vec<(u32, Nanos)>,
}

/// Event-manager bookkeeping of node 0: when each event was assigned and finished.
#[derive(Debug, Clone, Default)]
pub struct ManagerLog {
    /// (event, builder node, assigned at, built at, fragments missing), for every event built.
    pub built: Vec<(EventId, NodeId, Nanos, Nanos, u32)>,
    /// Events lost with their builder unit.
    pub lost: Vec<EventId>,
}

/// A sending node of a synthetic pattern.
#[derive(Debug, Clone, Default)]
struct PatternSender {
    destinations: Vec<u32>,
    next: usize,
    phase: usize,
    in_flight: u32,
    /// Of those, by destination: a lost destination's never complete.
    in_flight_to: Vec<u32>,
    /// Data messages still to send, and this sender's place among all senders.
    left: u64,
    index: u64,
    senders: u64,
    sent: u64,
}

/// One node of a pipe run.
#[derive(Debug)]
pub struct PipeNode {
    me: NodeId,
    pipe: Pipe,
    warmup: u64,
    manager: Option<(EventManager, Vec<Nanos>, ManagerLog)>,
    builder: BuilderUnit,
    sender: PatternSender,
    cycle: Vec<u64>,
    /// Synthetic: data messages still expected from each node.
    expected: Vec<u64>,
    live: Vec<bool>,
    stopped: bool,
    /// Events the event manager assigned to this node's own builder unit, not yet given it.
    mine: VecDeque<EventId>,
    tally: NodeTally,
    first: Option<Nanos>,
    out: VecDeque<(NodeId, PipeMsg)>,
    roles: PipeRoles,
}

impl PipeNode {
    /// Member `me` (a process: see [`PipeRoles`]) of `pipe`, for `warmup + events` events
    /// (synthetic: data messages over all senders); member 0 hosts the event manager.
    pub fn new(me: NodeId, pipe: &Pipe, warmup: u64, events: u64) -> Self {
        let n = pipe.nodes;
        let roles = PipeRoles::of(pipe, true);
        let members = roles.members();
        let total = warmup + events;
        let building = pipe.pattern == PipePattern::EventBuilding;
        let manager = (building && me.0 == 0).then(|| {
            (EventManager::new(&roles.builders, pipe.credits_per_builder, total), Vec::new(), ManagerLog::default())
        });
        let senders: Vec<u32> = (0..n).filter(|&s| !pipe.pattern.destinations(s, n).is_empty()).collect();
        let share = |s: u32| {
            let k = senders.len() as u64;
            senders.iter().position(|&x| x == s).map_or(0, |i| total / k + u64::from((i as u64) < total % k))
        };
        let expected =
            (0..members).map(|s| if pipe.pattern.destinations(s, n).contains(&me.0) { 0 } else { u64::MAX }).collect();
        let readouts = roles.readouts.len() as u32;
        let mut node = PipeNode {
            me,
            warmup,
            manager,
            builder: BuilderUnit::new(me, roles.pull_start(me), readouts, pipe.parallel()),
            sender: PatternSender {
                destinations: pipe.pattern.destinations(me.0, n),
                left: share(me.0),
                index: senders.iter().position(|&x| x == me.0).unwrap_or(0) as u64,
                senders: senders.len() as u64,
                in_flight_to: vec![0; members as usize],
                ..PatternSender::default()
            },
            cycle: pipe.pattern.cycle(pipe.message_bytes),
            expected,
            live: vec![true; members as usize],
            stopped: false,
            mine: VecDeque::new(),
            tally: NodeTally { node: me.0, ..NodeTally::default() },
            first: None,
            out: VecDeque::new(),
            pipe: pipe.clone(),
            roles,
        };
        if !building {
            node.expect_synthetic(&senders, share);
        }
        node
    }

    /// Synthetic: how many data messages each sender sends this node — its share, dealt
    /// round-robin over its destinations (with its message cycle, a destination gets one data
    /// message per visit).
    fn expect_synthetic(&mut self, senders: &[u32], share: impl Fn(u32) -> u64) {
        let n = self.pipe.nodes;
        for &s in senders {
            let d = self.pipe.pattern.destinations(s, n);
            let Some(pos) = d.iter().position(|&x| x == self.me.0) else { continue };
            let (k, q) = (d.len() as u64, share(s));
            self.expected[s as usize] = q / k + u64::from((pos as u64) < q % k);
        }
    }

    /// The run starts at `now`: the event manager's first assignments, a sender's first
    /// messages.
    pub fn on_start(&mut self, now: Nanos) -> Result<(), PipeError> {
        self.first = None;
        self.assign(now);
        self.stream();
        self.check_stop();
        self.settle(now)
    }

    /// Gives this node's builder unit the events assigned to it, and what follows.
    fn settle(&mut self, now: Nanos) -> Result<(), PipeError> {
        while let Some(event) = self.mine.pop_front() {
            self.builder.on_assign(event);
            self.drain_builder(now)?;
        }
        Ok(())
    }

    /// `msg` has arrived from `from`, at `now`; `intact` is false when the transport found its
    /// payload wrong (key or length): it is counted bad, and otherwise taken as arrived so
    /// the run goes on.
    pub fn on_message(&mut self, from: NodeId, msg: PipeMsg, intact: bool, now: Nanos) -> Result<(), PipeError> {
        if !intact {
            self.tally.bad += 1;
        } else if matches!(msg, PipeMsg::Fragment { .. } | PipeMsg::Data { .. }) {
            self.tally.verified += 1;
        }
        match msg {
            PipeMsg::Assign { event } => {
                self.builder.on_assign(event);
                self.drain_builder(now)?;
            }
            PipeMsg::Built { event, missing } => self.on_built(from, event, missing, now)?,
            PipeMsg::Pull { event } => {
                let bytes = self.pipe.fragment_bytes;
                self.out.push_back((from, PipeMsg::Fragment { event, bytes }));
            }
            PipeMsg::Fragment { event, bytes } => {
                let readout = self.roles.readout_at(from).ok_or(PipeError::Unrequested {
                    node: self.me,
                    event,
                    readout: ReadoutId(u32::MAX),
                })?;
                self.builder.on_fragment(event, readout, bytes)?;
                if event.0 >= self.warmup && self.crosses_nodes(from) {
                    self.count(now, 0, bytes);
                }
                self.drain_builder(now)?;
            }
            PipeMsg::Data { seq, bytes } => {
                let e = &mut self.expected[from.index()];
                *e = e.saturating_sub(1);
                if seq >= self.warmup {
                    self.count(now, 0, bytes);
                    self.tally.built += 1;
                }
            }
            PipeMsg::Extra { .. } => {}
            PipeMsg::Stop => self.stopped = true,
        }
        self.settle(now)
    }

    /// The transport has handed `msg` to `to` over (it is on its way): a readout unit's or
    /// sender's payload counts as sent, and a synthetic sender has room for another message.
    pub fn on_sent(&mut self, to: NodeId, msg: PipeMsg, now: Nanos) {
        if !self.live[to.index()] {
            // Already given up with its receiver in `on_lost`.
            return;
        }
        match msg {
            PipeMsg::Fragment { event, bytes } if event.0 >= self.warmup && self.crosses_nodes(to) => {
                self.count(now, bytes, 0)
            }
            PipeMsg::Data { seq, bytes } if seq >= self.warmup => self.count(now, bytes, 0),
            _ => {}
        }
        if matches!(msg, PipeMsg::Data { .. } | PipeMsg::Extra { .. }) {
            self.sender.in_flight -= 1;
            self.sender.in_flight_to[to.index()] -= 1;
            self.stream();
        }
    }

    /// Node `peer` is lost (its connection broke without a goodbye), noticed at `now`.
    pub fn on_lost(&mut self, peer: NodeId, now: Nanos) -> Result<(), PipeError> {
        let Some(live) = self.live.get_mut(peer.index()).filter(|l| **l) else { return Ok(()) };
        *live = false;
        self.tally.lost_peers.push((peer.0, now));
        self.expected[peer.index()] = 0;
        self.sender.destinations.retain(|&d| d != peer.0);
        self.sender.in_flight -= std::mem::take(&mut self.sender.in_flight_to[peer.index()]);
        self.sender.next = self.sender.next.min(self.sender.destinations.len().saturating_sub(1));
        if self.sender.destinations.is_empty() {
            // Nobody left to send to.
            self.sender.left = 0;
        }
        if let Some(r) = self.roles.readout_at(peer) {
            self.builder.on_readout_lost(r);
        }
        if let Some((em, _, log)) = &mut self.manager {
            log.lost.extend(em.on_builder_lost(peer));
            self.assign(now);
        }
        self.drain_builder(now)?;
        self.stream();
        self.check_stop();
        self.settle(now)
    }

    /// The next message to send: (to, message).
    pub fn poll(&mut self) -> Option<(NodeId, PipeMsg)> {
        self.out.pop_front()
    }

    /// This node's part of the run is over: told to stop (event building), or every data
    /// message sent and every expected one received (synthetic).
    pub fn finished(&self) -> bool {
        match self.pipe.pattern {
            PipePattern::EventBuilding => self.stopped,
            _ => {
                self.sender.left == 0
                    && self.sender.in_flight == 0
                    && self.expected.iter().all(|&e| e == 0 || e == u64::MAX)
            }
        }
    }

    /// Nodes not noticed lost.
    pub fn live(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.live.iter().enumerate().filter(|(_, l)| **l).map(|(i, _)| NodeId(i as u32))
    }

    /// What this node counted.
    pub fn tally(&self) -> &NodeTally {
        &self.tally
    }

    /// Node 0's event-manager log (`None` on other nodes, and in synthetic patterns).
    pub fn manager_log(&self) -> Option<&ManagerLog> {
        self.manager.as_ref().map(|m| &m.2)
    }

    /// Whether a transfer between this member and `peer` leaves the node (two processes of
    /// one node talk through its memory, not its network link).
    fn crosses_nodes(&self, peer: NodeId) -> bool {
        self.roles.node_of(peer) != self.roles.node_of(self.me)
    }

    fn count(&mut self, now: Nanos, sent: u64, received: u64) {
        let first = *self.first.get_or_insert(now);
        self.tally.span_ns = now - first;
        self.tally.sent_bytes += sent;
        self.tally.recv_bytes += received;
    }

    fn assign(&mut self, now: Nanos) {
        let Some((em, at, _)) = &mut self.manager else { return };
        while let Some((node, event)) = em.poll() {
            if at.len() <= event.index() {
                at.resize(event.index() + 1, 0);
            }
            at[event.index()] = now;
            if node == self.me {
                self.mine.push_back(event);
            } else {
                self.out.push_back((node, PipeMsg::Assign { event }));
            }
        }
    }

    fn on_built(&mut self, from: NodeId, event: EventId, missing: u32, now: Nanos) -> Result<(), PipeError> {
        let Some((em, at, log)) = &mut self.manager else {
            return Err(PipeError::NotAssigned { event, node: from });
        };
        em.on_built(from, event)?;
        log.built.push((event, from, at[event.index()], now, missing));
        self.assign(now);
        self.check_stop();
        Ok(())
    }

    /// Node 0, once every event is built or lost: tells every live node the run is over.
    fn check_stop(&mut self) {
        let Some((em, _, _)) = &self.manager else { return };
        if em.all_done() && !self.stopped {
            self.stopped = true;
            let others: Vec<NodeId> = self.live().filter(|&n| n != self.me).collect();
            self.out.extend(others.into_iter().map(|n| (n, PipeMsg::Stop)));
        }
    }

    fn drain_builder(&mut self, now: Nanos) -> Result<(), PipeError> {
        while let Some(o) = self.builder.poll() {
            match o {
                // A readout unit in this very process: its fragment crosses nothing, and is not
                // counted.
                BuilderOutput::Pull { readout, event } if self.roles.readouts[readout.index()] == self.me => {
                    self.builder.on_fragment(event, readout, self.pipe.fragment_bytes)?;
                }
                BuilderOutput::Pull { readout, event } => {
                    self.out.push_back((self.roles.readouts[readout.index()], PipeMsg::Pull { event }))
                }
                BuilderOutput::Built { event, missing, .. } => {
                    if event.0 >= self.warmup {
                        self.tally.built += 1;
                        self.tally.incomplete += u64::from(missing > 0);
                    }
                    if self.manager.is_some() {
                        self.on_built(self.me, event, missing, now)?;
                    } else {
                        self.out.push_back((NodeId(0), PipeMsg::Built { event, missing }));
                    }
                }
            }
        }
        Ok(())
    }

    /// Synthetic: sends the next messages of the cycle while there is room in flight and data
    /// left to send.
    fn stream(&mut self) {
        let s = &mut self.sender;
        while s.in_flight < self.pipe.messages_in_flight {
            let Some(&dest) = s.destinations.get(s.next) else { return };
            if s.phase == 0 && s.left == 0 {
                return;
            }
            let bytes = self.cycle[s.phase];
            let msg = if s.phase == 0 {
                s.left -= 1;
                s.sent += 1;
                PipeMsg::Data { seq: (s.sent - 1) * s.senders + s.index, bytes }
            } else {
                PipeMsg::Extra { bytes }
            };
            s.in_flight += 1;
            s.in_flight_to[dest as usize] += 1;
            s.phase = (s.phase + 1) % self.cycle.len();
            if s.phase == 0 {
                s.next = (s.next + 1) % s.destinations.len();
            }
            self.out.push_back((NodeId(dest), msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::PipeDirection;
    use proptest::prelude::*;

    /// Delivers every message between `nodes` until none is left, in an order `picks` chooses;
    /// node `dead` (if any) dies after `after` deliveries. Returns the nodes.
    fn run(pipe: &Pipe, events: u64, picks: &[usize], dead: Option<(u32, usize)>) -> Vec<PipeNode> {
        let n = PipeRoles::of(pipe, true).members();
        let mut nodes: Vec<PipeNode> = (0..n).map(|i| PipeNode::new(NodeId(i), pipe, 0, events)).collect();
        let mut wire: Vec<(NodeId, NodeId, PipeMsg)> = Vec::new();
        let mut t = 0;
        nodes.iter_mut().for_each(|x| x.on_start(0).unwrap());
        let mut picks = picks.iter().cycle();
        let mut died = None;
        for step in 0..100_000 {
            for (i, x) in nodes.iter_mut().enumerate().filter(|(i, _)| died != Some(*i as u32)) {
                while let Some((to, m)) = x.poll() {
                    assert_ne!(to.index(), i, "a node sends itself nothing");
                    wire.push((NodeId(i as u32), to, m));
                }
            }
            if let Some((d, after)) = dead {
                if step == after {
                    died = Some(d);
                    wire.retain(|(f, to, _)| f.0 != d && to.0 != d);
                    for x in nodes.iter_mut().filter(|x| x.me.0 != d) {
                        x.on_lost(NodeId(d), t).unwrap();
                    }
                    continue;
                }
            }
            if wire.is_empty() {
                break;
            }
            let i = picks.next().map_or(0, |p| p % wire.len());
            let (from, to, m) = wire.remove(i);
            t += 1;
            nodes[from.index()].on_sent(to, m, t);
            nodes[to.index()].on_message(from, m, true, t).unwrap();
        }
        nodes
    }

    fn pipe(nodes: u32, pattern: PipePattern) -> Pipe {
        Pipe {
            nodes,
            pattern,
            parallel_transfers: 2,
            messages_in_flight: 2,
            fragment_bytes: 10,
            message_bytes: 10,
            ..Pipe::default()
        }
    }

    proptest! {
        /// Event building in each layout (full duplex, one way, two processes per node), in any
        /// delivery order: every event built once with every fragment, every member stopped,
        /// and each builder received the fragments from other nodes of each event it built.
        #[test]
        fn every_event_built_and_every_node_stopped(n in 2u32..7, layout in 0usize..3, events in 1u64..30, picks in proptest::collection::vec(any::<usize>(), 1..50)) {
            let mut p = pipe(n, PipePattern::EventBuilding);
            (p.direction, p.processes_per_node) = [(PipeDirection::FullDuplex, 1), (PipeDirection::OneWay, 1), (PipeDirection::FullDuplex, 2)][layout];
            let roles = PipeRoles::of(&p, true);
            let nodes = run(&p, events, &picks, None);
            prop_assert!(nodes.iter().all(PipeNode::finished));
            let log = nodes[0].manager_log().unwrap();
            let mut built: Vec<u64> = log.built.iter().map(|b| b.0 .0).collect();
            built.sort_unstable();
            prop_assert_eq!(built, (0..events).collect::<Vec<_>>());
            prop_assert!(log.built.iter().all(|b| b.4 == 0 && roles.is_builder(b.1)));
            let remote = roles.remote_fragments() as u64;
            for x in &nodes {
                prop_assert_eq!(x.tally().recv_bytes, x.tally().built * remote * 10);
            }
            let sent: u64 = nodes.iter().map(|x| x.tally().sent_bytes).sum();
            prop_assert_eq!(sent, events * remote * 10);
        }

        /// Synthetic patterns, in any delivery order: each data message is received once, and
        /// every node finishes.
        #[test]
        fn every_data_message_received_once(n in 2u32..7, events in 0u64..40, k in 0usize..5, picks in proptest::collection::vec(any::<usize>(), 1..50)) {
            let pattern = [PipePattern::OneToOne, PipePattern::ManyToOne, PipePattern::Gather, PipePattern::GatherCmd, PipePattern::GatherCmdMeta][k];
            let nodes = run(&pipe(n, pattern), events, &picks, None);
            prop_assert!(nodes.iter().all(PipeNode::finished));
            let got: u64 = nodes.iter().map(|x| x.tally().built).sum();
            let senders = (0..n).filter(|&s| !pattern.destinations(s, n).is_empty()).count();
            prop_assert_eq!(got, if senders == 0 { 0 } else { events });
        }

        /// A node dying at any moment: the run still ends, every event is built or lost, and
        /// the lost ones are events its builder unit held.
        #[test]
        fn a_dead_node_does_not_stop_the_run(n in 3u32..7, events in 1u64..30, dead in 1u32..7, after in 0usize..200, picks in proptest::collection::vec(any::<usize>(), 1..50)) {
            let dead = dead % (n - 1) + 1;
            let nodes = run(&pipe(n, PipePattern::EventBuilding), events, &picks, Some((dead, after)));
            prop_assert!(nodes.iter().filter(|x| x.me.0 != dead).all(PipeNode::finished));
            let log = nodes[0].manager_log().unwrap();
            let mut all: Vec<u64> = log.built.iter().map(|b| b.0 .0).chain(log.lost.iter().map(|e| e.0)).collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..events).collect::<Vec<_>>());
        }
    }
}
