//! The simulation proper: the `core` dataflow state machines driven over simulated TCP
//! connections, links and switches by the discrete-event engine.

use crate::engine::{EventQueue, Place};
use crate::net::fabric::{Fabric, Vertex};
use crate::net::port::{offer, Admission};
use crate::net::wire::{frame_bytes, sack_option_bytes};
use crate::tcp::{AckUrgency, Endpoint, TcpParams, Transmission};
use daqnet_core::dataflow::{
    startup_order, BuiltEvent, DataRequest, DataResponse, Node, NodeInput, NodeOutput, PuOutput, ReadoutUnit,
    Supervisor,
};
use daqnet_core::report::{
    EventRecord, Measure, NotBuilt, PortStats, RunReport, SimWork, SwitchStats, TcpCounters, Track,
};
use daqnet_core::workload::{mix, FragmentSizes};
use daqnet_core::{ConnId, EventId, Layout, Nanos, NodeId, PuId, ReadoutId, Scenario, Side, NS_PER_S};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Drop one data segment on purpose (fault injection for tests and what-if studies): the
/// `data_segment`-th original (not retransmitted) data segment readout unit `readout` sends to
/// node `node`, counted from 0 over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRule {
    /// Sending readout unit.
    pub readout: ReadoutId,
    /// Receiving node.
    pub node: NodeId,
    /// Index of the original data segment on that connection.
    pub data_segment: u64,
}

/// Options of one simulation run.
#[derive(Default)]
pub struct SimOptions<'a> {
    /// Called as events are built with (events built, events to build).
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// Segments to drop on purpose.
    pub drops: Vec<DropRule>,
    /// Keep a record per event (for the per-event CSV).
    pub record_events: bool,
    /// Stop early once this is set (Ctrl-C): the report covers what was simulated and says
    /// `interrupted`.
    pub stop: Option<&'a AtomicBool>,
}

/// What a simulation produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// The run report.
    pub report: RunReport,
    /// Per-event records (empty unless requested).
    pub events: Vec<EventRecord>,
}

#[derive(Debug, Clone, Copy)]
enum AppMsg {
    Request(DataRequest),
    Response(DataResponse),
}

/// One end of one connection, packed for the event queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EndpointId(u32);

impl EndpointId {
    fn new(conn: ConnId, side: Side) -> Self {
        EndpointId(conn.0 * 2 + side.index() as u32)
    }

    fn conn(self) -> ConnId {
        ConnId(self.0 / 2)
    }

    fn side(self) -> Side {
        if self.0.is_multiple_of(2) {
            Side::Collector
        } else {
            Side::Readout
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Packet {
    conn: ConnId,
    /// The end that sent it.
    from: Side,
    core: u8,
    nsack: u8,
    frame: u32,
    dst: u32,
    start: u64,
    end: u64,
    ack: u64,
    sack: [(u64, u64); 3],
}

/// A connection's two TCP endpoints, indexed by [`Side::index`], and what the simulator keeps
/// beside them.
struct Conn {
    ep: [Endpoint; 2],
    /// Earliest time a timer event of each endpoint is already in the queue (`Nanos::MAX`: none).
    wakeup: [Nanos; 2],
    /// Messages written by each side, with the sequence number where each ends.
    msgs: [VecDeque<(u64, AppMsg)>; 2],
    /// The core router each side's packets take (two-tier fabrics).
    core: [u8; 2],
    originals_from_readout: u64,
}

impl Conn {
    /// Bytes of this connection's state, its structure and its queues' allocations.
    fn bytes(&self) -> usize {
        let msgs: usize = self.msgs.iter().map(|m| m.capacity() * std::mem::size_of::<(u64, AppMsg)>()).sum();
        std::mem::size_of::<Conn>() + msgs + self.ep.iter().map(Endpoint::heap_bytes).sum::<usize>()
    }
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// The first frame on its way from `port` reaches the port's peer.
    Arrive {
        port: u32,
    },
    Tcp {
        ep: EndpointId,
    },
    ReadoutWake {
        readout: ReadoutId,
    },
    PuWake {
        pu: PuId,
    },
    SupervisorWake,
    Ready {
        pu: PuId,
    },
    Assign {
        pu: PuId,
        event: EventId,
    },
    Done {
        event: EventId,
    },
}

/// A frame admitted to a port and not yet received by the port's peer. The packet travels in
/// its port's FIFO rather than in a pool indexed by id: the FIFO is read and written in order,
/// where a pool is touched at random once a deep buffer has evicted the packet from the cache
/// (at 200 x 200 all-to-all the FIFO took the run from 4.97 to 4.12 s).
#[derive(Debug, Clone, Copy)]
struct Flight {
    arrival: Nanos,
    place: Place,
    pkt: Packet,
}

struct World<'a> {
    q: EventQueue<Ev>,
    fabric: Fabric,
    /// Per port, its frames on their way, in order of arrival: only the first is in the event
    /// queue (a port is a FIFO with a fixed delay, so arrivals are in admission order).
    flights: Vec<VecDeque<Flight>>,
    layout: Layout,
    conns: Vec<Conn>,
    mss: u32,
    request_bytes: u64,
    control_delay: Nanos,
    readouts: Vec<ReadoutUnit>,
    nodes: Vec<Node>,
    sup: Supervisor,
    /// Assignment time of every event assigned and not yet built.
    assigned: HashMap<EventId, Nanos>,
    measure: Measure,
    records: Vec<EventRecord>,
    warmup: u64,
    built: u64,
    total: u64,
    packets: u64,
    txbuf: Vec<Transmission>,
    opts: SimOptions<'a>,
    progress_every: u64,
    seed: u64,
}

/// Simulates `scenario` (already validated, defaults filled in). `origin` names it in the report.
pub fn simulate(scenario: &Scenario, origin: &str, opts: SimOptions) -> SimOutput {
    let wall = Instant::now();
    let mut w = World::new(scenario, opts);
    let limit = (scenario.run.time_limit_s * NS_PER_S as f64) as Nanos;
    let stop = w.opts.stop;
    let mut interrupted = false;
    w.start();
    while w.built < w.total {
        // A relaxed load every 2^16 scheduler events costs nothing measurable.
        if w.q.popped().is_multiple_of(1 << 16) && stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            interrupted = true;
            break;
        }
        let Some((now, ev)) = w.q.pop() else { break };
        if now > limit {
            break;
        }
        w.dispatch(ev);
    }
    let mut out = w.report(scenario, origin, wall.elapsed().as_secs_f64());
    out.report.interrupted = interrupted;
    out
}

/// The connections, set up before the run: the handshake gives each endpoint its first RTT
/// sample.
fn connections(layout: &Layout, fabric: &Fabric, params: &TcpParams) -> Vec<Conn> {
    let ack_frame = frame_bytes(0, 0);
    let mut conns = Vec::with_capacity(layout.conns() as usize);
    for n in layout.all_nodes() {
        for r in layout.readouts() {
            let c = layout.conn(n, r).0 as u64;
            let core = [(mix(c * 2) % fabric.cores as u64) as u8, (mix(c * 2 + 1) % fabric.cores as u64) as u8];
            let node_host = layout.readout_units() + n.0;
            let rtt = fabric.unloaded_delay_ns(node_host, r.0, core[0] as u32, ack_frame)
                + fabric.unloaded_delay_ns(r.0, node_host, core[1] as u32, ack_frame);
            let mut ep = [Endpoint::new(params), Endpoint::new(params)];
            ep[0].snd.seed_rtt(rtt);
            ep[1].snd.seed_rtt(rtt);
            conns.push(Conn {
                ep,
                wakeup: [Nanos::MAX; 2],
                msgs: [VecDeque::new(), VecDeque::new()],
                core,
                originals_from_readout: 0,
            });
        }
    }
    conns
}

impl<'a> World<'a> {
    fn new(scenario: &Scenario, opts: SimOptions<'a>) -> Self {
        let sys = &scenario.system;
        let net = &scenario.network;
        let seed = scenario.run.seed;
        let total = scenario.run.warmup_events + scenario.run.events;
        let layout = scenario.layout();
        let fabric = Fabric::build(net, layout.readout_units(), layout.nodes());
        let mss = net.mss_bytes();
        let conns = connections(&layout, &fabric, &TcpParams::from_config(&net.tcp, mss));
        let sizes = FragmentSizes::new(sys.fragment_size.clone(), seed, sys.fragments_per_unit);
        let (service, jitter) = (sys.readout_service_ns, sys.readout_service_jitter_ns);
        World {
            q: EventQueue::new(),
            flights: vec![VecDeque::new(); fabric.ports.len()],
            fabric,
            layout,
            conns,
            mss,
            request_bytes: sys.request_bytes as u64,
            control_delay: sys.supervisor.control_delay_ns,
            readouts: layout.readouts().map(|r| ReadoutUnit::new(r, sizes.clone(), service, jitter, seed)).collect(),
            nodes: layout.all_nodes().map(|n| Node::new(&layout, n, sys, seed)).collect(),
            sup: Supervisor::new(&layout, sys.supervisor.policy, sys.supervisor.rate_hz, total, seed),
            assigned: HashMap::new(),
            measure: Measure::new(scenario.run.warmup_events),
            records: Vec::new(),
            warmup: scenario.run.warmup_events,
            built: 0,
            total,
            packets: 0,
            txbuf: Vec::new(),
            progress_every: (total / 200).max(1),
            opts,
            seed,
        }
    }

    fn start(&mut self) {
        self.sup.start(0);
        if let Some(t) = self.sup.poll_timeout() {
            self.q.schedule(t, Ev::SupervisorWake);
        }
        // Every unit starts waiting for work; the supervisor hears of them after the control delay.
        for pu in startup_order(self.seed, self.layout.total_pus()) {
            self.q.schedule(self.control_delay, Ev::Ready { pu });
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive { port } => self.arrive(port),
            Ev::Tcp { ep } => self.on_tcp_timer(ep),
            Ev::ReadoutWake { readout } => self.drain_readout(readout),
            Ev::PuWake { pu } => self.feed_node(self.layout.node_of(pu), NodeInput::Wake(pu)),
            Ev::SupervisorWake => {
                let now = self.q.now();
                self.sup.on_timeout(now);
                self.drain_supervisor();
                if let Some(t) = self.sup.poll_timeout() {
                    self.q.schedule(t.max(now), Ev::SupervisorWake);
                }
            }
            Ev::Ready { pu } => {
                self.sup.on_ready(pu);
                self.drain_supervisor();
            }
            Ev::Assign { pu, event } => self.feed_node(self.layout.node_of(pu), NodeInput::Assign { pu, event }),
            Ev::Done { event } => self.sup.on_done(event),
        }
    }

    /// The first frame on its way from `port` arrives; the next one takes its place in the
    /// queue before anything the arrival causes is scheduled.
    fn arrive(&mut self, port: u32) {
        let flights = &mut self.flights[port as usize];
        let f = flights.pop_front().expect("an arrival event stands for a frame on its way");
        if let Some(next) = flights.front() {
            self.q.schedule_at(next.arrival, next.place, Ev::Arrive { port });
        }
        match self.fabric.peer[port as usize] {
            Vertex::Switch(s) => {
                let out = self.fabric.route(s, f.pkt.dst, f.pkt.core as u32);
                self.forward(out, f.pkt);
            }
            Vertex::Host(_) => self.deliver(f.pkt),
        }
    }

    fn on_tcp_timer(&mut self, ep: EndpointId) {
        let now = self.q.now();
        let (c, side) = (ep.conn(), ep.side());
        let conn = &mut self.conns[c.index()];
        if conn.wakeup[side.index()] == now {
            conn.wakeup[side.index()] = Nanos::MAX;
        }
        let e = &mut conn.ep[side.index()];
        e.rcv.on_timer(now);
        e.snd.on_timer(now);
        self.pump(c, side);
    }

    fn drain_supervisor(&mut self) {
        let now = self.q.now();
        while let Some(a) = self.sup.poll_assignment() {
            self.assigned.insert(a.event, now);
            self.q.schedule(now + self.control_delay, Ev::Assign { pu: a.pu, event: a.event });
        }
    }

    /// Feeds `input` to `node` and carries out what it asks.
    fn feed_node(&mut self, node: NodeId, input: NodeInput) {
        let now = self.q.now();
        if let Err(e) = self.nodes[node.index()].handle(now, input) {
            panic!("simulator bookkeeping error at node {node}: {e}");
        }
        while let Some(out) = self.nodes[node.index()].poll() {
            match out {
                NodeOutput::Request { readout, request } => {
                    let c = self.layout.conn(node, readout);
                    self.send_msg(c, Side::Collector, self.request_bytes, AppMsg::Request(request));
                }
                NodeOutput::Built(b) => self.on_built(node, b),
                NodeOutput::Unit(pu, PuOutput::WakeAt(at)) => self.q.schedule(at, Ev::PuWake { pu }),
                NodeOutput::Unit(_, PuOutput::Done(event)) => {
                    self.q.schedule(now + self.control_delay, Ev::Done { event })
                }
                NodeOutput::Unit(pu, PuOutput::AskForWork) => {
                    self.q.schedule(now + self.control_delay, Ev::Ready { pu })
                }
            }
        }
    }

    fn on_built(&mut self, node: NodeId, b: BuiltEvent) {
        let assigned = self.assigned.remove(&b.event).expect("a built event was assigned");
        let track =
            Track { event: b.event, pu: b.pu, node, assigned, started: b.started, done: b.done, bytes: b.bytes };
        self.measure.record(&track);
        if self.opts.record_events {
            self.records.push(track.record(self.warmup));
        }
        self.built += 1;
        if self.built.is_multiple_of(self.progress_every) || self.built == self.total {
            if let Some(p) = self.opts.progress.as_mut() {
                p(self.built, self.total);
            }
        }
    }

    fn drain_readout(&mut self, readout: ReadoutId) {
        let now = self.q.now();
        while let Some(resp) = self.readouts[readout.index()].poll_response(now) {
            let c = self.layout.conn(resp.node, readout);
            self.send_msg(c, Side::Readout, resp.bytes, AppMsg::Response(resp));
        }
    }

    fn on_message(&mut self, c: ConnId, msg: AppMsg) {
        let now = self.q.now();
        match msg {
            AppMsg::Request(req) => {
                let (_, r) = self.layout.ends_of(c);
                let due = self.readouts[r.index()].on_request(now, req);
                if due == now {
                    self.drain_readout(r);
                } else {
                    self.q.schedule(due, Ev::ReadoutWake { readout: r });
                }
            }
            AppMsg::Response(resp) => self.feed_node(resp.node, NodeInput::Response(resp)),
        }
    }

    fn send_msg(&mut self, c: ConnId, side: Side, bytes: u64, msg: AppMsg) {
        let now = self.q.now();
        let conn = &mut self.conns[c.index()];
        let ep = &mut conn.ep[side.index()];
        ep.snd.write(now, bytes);
        conn.msgs[side.index()].push_back((ep.snd.write_seq(), msg));
        self.pump(c, side);
    }

    /// Sends whatever endpoint (c, side) may send now, an ACK if one is due, and re-arms its timer.
    fn pump(&mut self, c: ConnId, side: Side) {
        let now = self.q.now();
        let mut txbuf = std::mem::take(&mut self.txbuf);
        txbuf.clear();
        {
            let ep = &mut self.conns[c.index()].ep[side.index()];
            let mss_now = self.mss - sack_option_bytes(ep.rcv.sack_blocks());
            ep.snd.transmit(now, mss_now, &mut txbuf);
        }
        for tx in &txbuf {
            self.emit(c, side, tx.start, tx.end, tx.retransmit);
        }
        self.txbuf = txbuf;
        if self.conns[c.index()].ep[side.index()].rcv.urgency() == AckUrgency::Now {
            self.emit(c, side, 0, 0, false);
        }
        let conn = &mut self.conns[c.index()];
        if let Some(d) = conn.ep[side.index()].next_deadline() {
            if d < conn.wakeup[side.index()] {
                conn.wakeup[side.index()] = d;
                self.q.schedule_timer(d.max(now), Ev::Tcp { ep: EndpointId::new(c, side) });
            }
        }
    }

    /// Puts one segment of endpoint (c, side) on its host's link: data `[start, end)` (empty for a
    /// pure ACK), carrying the endpoint's current acknowledgement.
    fn emit(&mut self, c: ConnId, side: Side, start: u64, end: u64, retransmit: bool) {
        let (node, readout) = self.layout.ends_of(c);
        let conn = &mut self.conns[c.index()];
        let ep = &mut conn.ep[side.index()];
        let mut sack = [(0u64, 0u64); 3];
        let (ack, nsack) = ep.rcv.ack_fields(&mut sack);
        ep.rcv.on_ack_sent();
        let node_host = self.layout.readout_units() + node.0;
        let (src, dst) = match side {
            Side::Collector => (node_host, readout.0),
            Side::Readout => (readout.0, node_host),
        };
        if side == Side::Readout && end > start && !retransmit {
            let k = conn.originals_from_readout;
            conn.originals_from_readout += 1;
            if self.opts.drops.iter().any(|d| d.readout == readout && d.node == node && d.data_segment == k) {
                return;
            }
        }
        let pkt = Packet {
            conn: c,
            from: side,
            core: conn.core[side.index()],
            nsack: nsack as u8,
            frame: frame_bytes((end - start) as u32, nsack),
            dst,
            start,
            end,
            ack,
            sack,
        };
        self.packets += 1;
        self.forward(self.fabric.host_nic[src as usize], pkt);
    }

    fn forward(&mut self, port: u32, pkt: Packet) {
        let now = self.q.now();
        let frame = pkt.frame;
        match offer(&mut self.fabric.ports, &mut self.fabric.pools, port, now, frame) {
            Admission::Sent { arrival_ns } => {
                let place = self.q.take_place();
                let flights = &mut self.flights[port as usize];
                debug_assert!(flights.back().is_none_or(|b| b.arrival <= arrival_ns), "a port delivers in order");
                if flights.is_empty() {
                    self.q.schedule_at(arrival_ns, place, Ev::Arrive { port });
                }
                flights.push_back(Flight { arrival: arrival_ns, place, pkt });
            }
            Admission::Dropped => {}
        }
    }

    fn deliver(&mut self, p: Packet) {
        let now = self.q.now();
        let c = p.conn;
        let side = p.from.peer();
        let has_data = p.end > p.start;
        {
            let ep = &mut self.conns[c.index()].ep[side.index()];
            ep.snd.on_ack(now, p.ack, &p.sack[..p.nsack as usize], has_data);
            if has_data {
                ep.rcv.on_segment(now, p.start, p.end);
            }
        }
        if has_data {
            loop {
                let conn = &mut self.conns[c.index()];
                let rcv_nxt = conn.ep[side.index()].rcv.rcv_nxt();
                match conn.msgs[p.from.index()].front() {
                    Some(&(end, msg)) if end <= rcv_nxt => {
                        conn.msgs[p.from.index()].pop_front();
                        conn.ep[side.index()].rcv.on_app_read((p.end - p.start) as u32);
                        self.on_message(c, msg);
                    }
                    _ => break,
                }
            }
        }
        self.pump(c, side);
    }

    fn report(mut self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput {
        let mut tcp = TcpCounters::default();
        for ep in self.conns.iter().flat_map(|c| &c.ep) {
            tcp += ep.snd.stats();
        }
        let ports: Vec<PortStats> = self
            .fabric
            .ports
            .iter()
            .filter(|p| p.on_switch)
            .map(|p| PortStats { name: p.name.clone(), drops: p.drops, peak_bytes: p.peak_bytes, frames: p.frames })
            .collect();
        let measured = self.measure.finish();
        let built = measured.events_built;
        let mut report = RunReport::measured("sim", origin, scenario, measured);
        report.events_not_built = NotBuilt { timed_out: 0, lost: 0, abandoned: scenario.run.events - built };
        report.tcp = tcp;
        report.tcp_source = "model".into();
        report.switch = SwitchStats { drops: ports.iter().map(|p| p.drops).sum(), ports };
        report.wall_s = wall_s;
        report.sim_events_per_s = Some(if wall_s > 0.0 { self.built as f64 / wall_s } else { 0.0 });
        report.sim_work = Some(SimWork {
            scheduler_events: self.q.popped(),
            packets: self.packets,
            simulated_s: self.q.now() as f64 / NS_PER_S as f64,
            connections: self.conns.len() as u64,
            connection_bytes: self.conns.iter().map(Conn::bytes).sum::<usize>() as u64,
        });
        self.records.sort_unstable_by_key(|r| r.event);
        SimOutput { report, events: self.records }
    }
}
