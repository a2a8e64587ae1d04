//! DAQPIPE's event building simulated: the `core` [`EventManager`] and one [`BuilderUnit`] per
//! node driven over the [`Sockets`] layer on a star switch.
//!
//! Node `n` is host `n`, with a readout unit and a builder unit (full duplex). Builder unit `b`
//! opens a connection to every other node's readout unit: connection `b·(N−1) + k` joins it to
//! the `k`-th other node. A pull of the node's own fragment crosses no link. The event manager
//! is off the data network: its messages take `pipe.control_delay_ns`.

use crate::engine::EventQueue;
use crate::main_loop::{self, Dataflow, World};
use crate::net::Network;
use crate::options::{SimOptions, SimOutput};
use crate::sockets::{End, Ev, Sockets};
use daqnet_core::pipe::{BuilderOutput, BuilderUnit, EventManager, PipeRoles};
use daqnet_core::report::{steady_rate, EventRecord, Measure, NotBuilt, PipeStats, RunReport, Spread, Track};
use daqnet_core::scenario::{Pipe, PipePattern};
use daqnet_core::{ConnId, EventId, Nanos, NodeId, PuId, ReadoutId, Scenario};
use daqnet_fabric::network::NetworkPlan;
use std::sync::atomic::AtomicBool;

#[derive(Debug, Clone, Copy)]
enum Msg {
    Pull {
        event: EventId,
    },
    Fragment {
        event: EventId,
        bytes: u64,
    },
    /// A synthetic pattern's message: data (`event` numbers the data messages) or, with no
    /// event, a command or metadata message.
    Synthetic {
        event: Option<EventId>,
        bytes: u64,
        sent: Nanos,
    },
}

/// A sending node of a synthetic pattern.
#[derive(Debug, Clone, Default)]
struct Stream {
    destinations: Vec<u32>,
    /// Position in `destinations` and in the pattern's message cycle.
    next: usize,
    phase: usize,
    in_flight: u32,
}

#[derive(Debug, Clone, Copy)]
enum PipeEv {
    /// The event manager's assignment reaches builder unit `node`.
    Assign { node: NodeId, event: EventId },
    /// Builder unit `node`'s report that `event` is built reaches the event manager.
    Built { node: NodeId, event: EventId },
    /// A builder unit's pull of its own node's fragment.
    Local { node: NodeId, event: EventId },
    /// A readout unit has served a pull on connection `conn`: its fragment leaves.
    Serve { conn: ConnId, event: EventId },
}

struct PipeWorld<'a> {
    q: EventQueue<Ev<PipeEv>>,
    net: Sockets<Msg>,
    pipe: Pipe,
    em: EventManager,
    builders: Vec<BuilderUnit>,
    /// When each event in flight was assigned (indexed by event number).
    assigned: Vec<Nanos>,
    measure: Measure,
    records: Vec<EventRecord>,
    /// Per node: measured fragment bytes its readout unit sent to other nodes, and its
    /// builder unit received from them.
    sent: Vec<u64>,
    received: Vec<u64>,
    /// When each measured event was built.
    done: Vec<Nanos>,
    /// Synthetic patterns: each node's sending side, and the messages of its cycle.
    streams: Vec<Stream>,
    cycle: Vec<u64>,
    /// Synthetic patterns: data messages sent so far.
    generated: u64,
    roles: PipeRoles,
    warmup: u64,
    built: u64,
    total: u64,
    opts: SimOptions<'a>,
}

/// Simulates the DAQPIPE event builder of `scenario` (valid, defaults filled in, with `[pipe]`).
pub fn simulate(scenario: &Scenario, origin: &str, opts: SimOptions) -> SimOutput {
    main_loop::simulate::<PipeWorld>(scenario, origin, opts)
}

/// What a trace of `scenario` can select.
pub(crate) fn targets(scenario: &Scenario) -> crate::trace::Targets {
    main_loop::targets::<PipeWorld>(scenario)
}

impl Dataflow for PipeWorld<'_> {
    type Msg = Msg;
    type App = PipeEv;

    fn parts(&mut self) -> (&mut Sockets<Msg>, &mut EventQueue<Ev<PipeEv>>) {
        (&mut self.net, &mut self.q)
    }

    fn finished(&self) -> bool {
        self.built >= self.total
    }

    fn on_message(&mut self, c: ConnId, msg: Msg) {
        self.handle_message(c, msg);
    }

    fn on_app(&mut self, ev: PipeEv) {
        match ev {
            PipeEv::Assign { node, event } => {
                self.builders[node.index()].on_assign(event);
                self.drain_builder(node);
            }
            PipeEv::Local { node, event } => {
                // Not counted in the node's bandwidth: it crosses no link.
                self.on_fragment(node, ReadoutId(node.0), event, self.pipe.fragment_bytes);
            }
            PipeEv::Serve { conn, event } => self.serve(conn, event),
            PipeEv::Built { node, event } => {
                if let Err(e) = self.em.on_built(node, event) {
                    panic!("simulator bookkeeping error: {e}");
                }
                self.assign();
            }
        }
    }
}

impl<'a> World<'a> for PipeWorld<'a> {
    fn new(scenario: &Scenario, opts: SimOptions<'a>) -> Self {
        let pipe = scenario.pipe.clone().expect("a pipe scenario has [pipe]");
        let n = pipe.nodes;
        let hosts = scenario.host_names().into_iter().map(|name| (name, pipe.link_bps)).collect();
        let network = Network::new(NetworkPlan::of_hosts(&scenario.network, hosts), scenario.run.seed);
        let pairs = (0..n).flat_map(move |b| (0..n).filter(move |&r| r != b).map(move |r| (b, r)));
        let total = scenario.run.warmup_events + scenario.run.events;
        // One host per node: readout unit `r` is on host `r`.
        let roles = PipeRoles::of(&pipe, false);
        let readouts = roles.readouts.len() as u32;
        PipeWorld {
            q: EventQueue::new(),
            net: Sockets::of_scenario(network, &scenario.network, scenario.run.seed, pairs),
            em: EventManager::new(&roles.builders, pipe.credits_per_builder, total),
            builders: (0..n)
                .map(|b| BuilderUnit::new(NodeId(b), roles.pull_start(NodeId(b)), readouts, pipe.parallel()))
                .collect(),
            assigned: Vec::new(),
            measure: Measure::new(scenario.run.warmup_events),
            records: Vec::new(),
            sent: vec![0; n as usize],
            received: vec![0; n as usize],
            done: Vec::new(),
            streams: (0..n)
                .map(|i| Stream { destinations: pipe.pattern.destinations(i, n), ..Default::default() })
                .collect(),
            cycle: pipe.pattern.cycle(pipe.message_bytes),
            generated: 0,
            roles,
            warmup: scenario.run.warmup_events,
            built: 0,
            total,
            pipe,
            opts,
        }
    }

    /// Every builder unit asks for its first events, or every node starts its stream.
    fn start(&mut self) {
        if self.pipe.pattern == PipePattern::EventBuilding {
            self.assign();
        } else {
            (0..self.pipe.nodes).for_each(|s| self.stream(s));
        }
    }

    fn stop_flag(&self) -> Option<&'a AtomicBool> {
        self.opts.stop
    }

    fn report(mut self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput {
        let steady = self.steady_recv_bps();
        let measured = self.measure.finish();
        let duration = measured.duration_s;
        let built = measured.events_built;
        let mut report = RunReport::measured("sim", origin, scenario, measured);
        report.events_not_built = NotBuilt { timed_out: 0, lost: 0, abandoned: scenario.run.events - built };
        self.net.add_to_report(&mut report, &self.q, self.built, wall_s);
        let bps = |b: u64| if duration > 0.0 { b as f64 * 8.0 / duration } else { 0.0 };
        let per_node: Vec<(f64, f64)> = self.sent.iter().zip(&self.received).map(|(&s, &r)| (bps(s), bps(r))).collect();
        let recv = Spread::of(&per_node.iter().map(|p| p.1).collect::<Vec<_>>());
        report.pipe = Some(PipeStats {
            nodes: self.pipe.nodes,
            pattern: self.pipe.pattern.name().into(),
            scheduler: self.pipe.scheduler.name().into(),
            parallel_transfers: self.pipe.parallel_transfers,
            send_bps: Spread::of(&per_node.iter().map(|p| p.0).collect::<Vec<_>>()),
            steady_recv_bps: steady.unwrap_or(recv.mean),
            steady_state: steady.is_some(),
            recv_bps: recv,
            per_node,
            transport: "sim".into(),
            ..PipeStats::default()
        });
        self.records.sort_unstable_by_key(|r| r.event);
        SimOutput { report, events: self.records }
    }
}

impl<'a> PipeWorld<'a> {
    /// The connection from builder unit `b` to readout unit `r` (`r ≠ b`).
    fn conn(&self, b: NodeId, r: ReadoutId) -> ConnId {
        let k = if r.0 < b.0 { r.0 } else { r.0 - 1 };
        ConnId(b.0 * (self.pipe.nodes - 1) + k)
    }

    /// The (builder, readout) ends of connection `c`.
    fn ends(&self, c: ConnId) -> (NodeId, ReadoutId) {
        let (b, k) = (c.0 / (self.pipe.nodes - 1), c.0 % (self.pipe.nodes - 1));
        (NodeId(b), ReadoutId(if k < b { k } else { k + 1 }))
    }

    /// Sends the event manager's assignments on their way.
    fn assign(&mut self) {
        let at = self.q.now() + self.pipe.control_delay_ns;
        while let Some((node, event)) = self.em.poll() {
            if self.assigned.len() <= event.index() {
                self.assigned.resize(event.index() + 1, 0);
            }
            self.assigned[event.index()] = self.q.now();
            self.q.schedule(at, Ev::App(PipeEv::Assign { node, event }));
        }
    }

    fn handle_message(&mut self, c: ConnId, msg: Msg) {
        let (b, r) = self.ends(c);
        match msg {
            // A readout unit always has its fragments: it answers a pull after its service time.
            Msg::Pull { event } if self.pipe.readout_service_ns > 0 => {
                let at = self.q.now() + self.pipe.readout_service_ns;
                self.q.schedule(at, Ev::App(PipeEv::Serve { conn: c, event }));
            }
            Msg::Pull { event } => self.serve(c, event),
            Msg::Fragment { event, bytes } => self.on_fragment(b, r, event, bytes),
            // A synthetic message from node r (on its readout side) to node b.
            Msg::Synthetic { event, bytes, sent } => {
                self.streams[r.index()].in_flight -= 1;
                if let Some(event) = event {
                    self.count(b, r, event, bytes);
                    self.on_built(b, event, bytes, sent, self.q.now());
                }
                self.stream(r.0);
            }
        }
    }

    /// Synthetic patterns: node `s` sends the next messages of its cycle while it has room in
    /// flight and data messages remain to be sent.
    fn stream(&mut self, s: u32) {
        let m = self.pipe.messages_in_flight;
        loop {
            let st = &self.streams[s as usize];
            let Some(&dest) = st.destinations.get(st.next) else { return };
            let (phase, in_flight) = (st.phase, st.in_flight);
            if in_flight >= m || (phase == 0 && self.generated >= self.total) {
                return;
            }
            let event = (phase == 0).then(|| {
                self.generated += 1;
                EventId(self.generated - 1)
            });
            let bytes = self.cycle[phase];
            let st = &mut self.streams[s as usize];
            st.in_flight += 1;
            st.phase = (phase + 1) % self.cycle.len();
            if st.phase == 0 {
                st.next = (st.next + 1) % st.destinations.len();
            }
            let c = self.conn(NodeId(dest), ReadoutId(s));
            let sent = self.q.now();
            self.net.send(&mut self.q, c, End::Acceptor, bytes, Msg::Synthetic { event, bytes, sent });
        }
    }

    fn serve(&mut self, c: ConnId, event: EventId) {
        let (b, r) = self.ends(c);
        let bytes = self.pipe.fragment_bytes;
        self.count(b, r, event, bytes);
        self.net.send(&mut self.q, c, End::Acceptor, bytes, Msg::Fragment { event, bytes });
    }

    /// Counts a measured fragment of `event` from readout unit `r` to builder unit `b`.
    fn count(&mut self, b: NodeId, r: ReadoutId, event: EventId, bytes: u64) {
        if event.0 >= self.warmup {
            self.sent[r.index()] += bytes;
            self.received[b.index()] += bytes;
        }
    }

    fn on_fragment(&mut self, b: NodeId, r: ReadoutId, event: EventId, bytes: u64) {
        if let Err(e) = self.builders[b.index()].on_fragment(event, r, bytes) {
            panic!("simulator bookkeeping error: {e}");
        }
        self.drain_builder(b);
    }

    fn drain_builder(&mut self, b: NodeId) {
        let now = self.q.now();
        while let Some(o) = self.builders[b.index()].poll() {
            match o {
                BuilderOutput::Pull { readout, event } if readout.0 == b.0 => {
                    self.q.schedule(now, Ev::App(PipeEv::Local { node: b, event }))
                }
                BuilderOutput::Pull { readout, event } => {
                    let c = self.conn(b, readout);
                    let bytes = self.pipe.request_bytes as u64;
                    self.net.send(&mut self.q, c, End::Opener, bytes, Msg::Pull { event });
                }
                BuilderOutput::Built { event, bytes, .. } => {
                    let assigned = self.assigned[event.index()];
                    self.q.schedule(now + self.pipe.control_delay_ns, Ev::App(PipeEv::Built { node: b, event }));
                    self.on_built(b, event, bytes, assigned, now);
                }
            }
        }
    }

    /// `event` (assigned, or for a synthetic message sent, at `assigned`) is complete at `node`.
    fn on_built(&mut self, node: NodeId, event: EventId, bytes: u64, assigned: Nanos, now: Nanos) {
        let track = Track::one_step(event, PuId(node.0), node, assigned, assigned, now, bytes);
        self.measure.record(&track);
        if event.0 >= self.warmup {
            self.done.push(now);
        }
        if self.opts.record_events {
            self.records.push(track.record(self.warmup));
        }
        self.built += 1;
        self.opts.on_built(self.built, self.total);
    }

    /// A node's steady-state receive bandwidth: each event brings N − 1 remote fragments to
    /// one of N nodes, at the rate the middle 80 % of the measured events were built. Only
    /// a run of several rounds (at least four times the events in flight) has a steady state:
    /// `None` otherwise.
    fn steady_recv_bps(&mut self) -> Option<f64> {
        let senders = self.streams.iter().filter(|s| !s.destinations.is_empty()).count();
        let in_flight = match self.pipe.pattern {
            PipePattern::EventBuilding => self.roles.builders.len() * self.pipe.credits_per_builder as usize,
            _ => senders * self.pipe.messages_in_flight as usize,
        };
        let rate = steady_rate(&mut self.done, in_flight)?;
        Some(match self.pipe.pattern {
            PipePattern::EventBuilding => {
                let (remote, receivers) = (self.roles.remote_fragments() as f64, self.roles.receiving_nodes() as f64);
                rate * remote * self.pipe.fragment_bytes as f64 * 8.0 / receivers
            }
            // Spread over the nodes that receive.
            _ => {
                let receivers: std::collections::BTreeSet<u32> =
                    self.streams.iter().flat_map(|s| s.destinations.iter().copied()).collect();
                rate * self.pipe.message_bytes as f64 * 8.0 / receivers.len().max(1) as f64
            }
        })
    }
}
