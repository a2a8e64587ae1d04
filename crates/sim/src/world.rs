//! The simulation proper: the `core` dataflow state machines driven over simulated TCP
//! connections, links and switches by the discrete-event engine.

use crate::engine::EventQueue;
use crate::net::fabric::{Fabric, NodeRef};
use crate::net::port::{offer, Admission};
use crate::net::wire::{frame_bytes, sack_option_bytes};
use crate::tcp::{AckUrgency, Endpoint, TcpParams, Transmission};
use daqnet_core::dataflow::{
    startup_order, Collector, CollectorOutput, DataRequest, DataResponse, ProcessingUnit, PuOutput, ReadoutUnit,
    Supervisor,
};
use daqnet_core::report::{EventRecord, LatencyMs, NotBuilt, PortStats, RunReport, SimWork, SwitchStats, TcpCounters};
use daqnet_core::workload::{mix, FragmentSizes};
use daqnet_core::{EventId, Nanos, Scenario, NS_PER_S};
use std::collections::VecDeque;
use std::time::Instant;

/// Drop one data segment on purpose (fault injection for tests and what-if studies): the
/// `data_segment`-th original (not retransmitted) data segment readout unit `readout` sends to
/// node `node`, counted from 0 over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRule {
    /// Sending readout unit.
    pub readout: u32,
    /// Receiving node.
    pub node: u32,
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

#[derive(Debug, Clone, Copy)]
struct Packet {
    conn: u32,
    /// Side that sent it: 0 = collector (node), 1 = readout unit.
    side: u8,
    core: u8,
    nsack: u8,
    frame: u32,
    dst: u32,
    start: u64,
    end: u64,
    ack: u64,
    sack: [(u64, u64); 3],
}

struct Conn {
    ep: [Endpoint; 2],
    /// Messages written by each side, with the sequence number where each ends.
    msgs: [VecDeque<(u64, AppMsg)>; 2],
    core: [u8; 2],
    originals_from_readout: u64,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrive { at: NodeRef, pkt: u32 },
    Tcp { ep: u32 },
    ReadoutWake { readout: u32 },
    PuWake { pu: u32 },
    SupervisorWake,
    Ready { pu: u32 },
    Assign { pu: u32, event: EventId },
    Done { event: EventId },
}

#[derive(Debug, Clone, Copy, Default)]
struct Track {
    assigned: Nanos,
    start: Nanos,
    done: Option<Nanos>,
    pu: u32,
    bytes: u64,
}

struct World<'a> {
    q: EventQueue<Ev>,
    fabric: Fabric,
    pkts: Vec<Packet>,
    free: Vec<u32>,
    conns: Vec<Conn>,
    mss: u32,
    readout_units: u32,
    pus_per_node: u32,
    request_bytes: u64,
    control_delay: Nanos,
    readouts: Vec<ReadoutUnit>,
    collectors: Vec<Collector>,
    pus: Vec<ProcessingUnit>,
    sup: Supervisor,
    tracks: Vec<Track>,
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
    let sys = &scenario.system;
    let net = &scenario.network;
    let seed = scenario.run.seed;
    let total = scenario.run.warmup_events + scenario.run.events;
    let r_units = sys.readout_units;
    let nodes = sys.nodes;
    let fabric = Fabric::build(net, r_units, nodes);
    let mss = net.mss_bytes();
    let params = TcpParams::from_config(&net.tcp, mss);
    let ack_frame = frame_bytes(0, 0);
    let mut conns = Vec::with_capacity((r_units * nodes) as usize);
    for n in 0..nodes {
        for r in 0..r_units {
            let c = (n * r_units + r) as u64;
            let core = [(mix(c * 2) % fabric.cores as u64) as u8, (mix(c * 2 + 1) % fabric.cores as u64) as u8];
            let node_host = r_units + n;
            // Connections are set up before the run; the handshake gives the first RTT sample.
            let rtt = fabric.unloaded_delay_ns(node_host, r, core[0] as u32, ack_frame)
                + fabric.unloaded_delay_ns(r, node_host, core[1] as u32, ack_frame);
            let mut ep = [Endpoint::new(&params), Endpoint::new(&params)];
            ep[0].snd.seed_rtt(rtt);
            ep[1].snd.seed_rtt(rtt);
            conns.push(Conn { ep, msgs: [VecDeque::new(), VecDeque::new()], core, originals_from_readout: 0 });
        }
    }
    let sizes = FragmentSizes::new(sys.fragment_size.clone(), seed, sys.fragments_per_unit);
    let progress_every = (total / 200).max(1);
    let mut w = World {
        q: EventQueue::new(),
        fabric,
        pkts: Vec::with_capacity(1 << 16),
        free: Vec::new(),
        conns,
        mss,
        readout_units: r_units,
        pus_per_node: sys.pus_per_node,
        request_bytes: sys.request_bytes as u64,
        control_delay: sys.supervisor.control_delay_ns,
        readouts: (0..r_units)
            .map(|r| ReadoutUnit::new(r, sizes.clone(), sys.readout_service_ns, sys.readout_service_jitter_ns, seed))
            .collect(),
        collectors: (0..nodes).map(|n| Collector::new(n, sys.credits_per_node, sys.fragments_per_unit)).collect(),
        pus: (0..scenario.total_pus())
            .map(|p| ProcessingUnit::new(p, sys.processing_time_ns, sys.collect_fraction, r_units, seed))
            .collect(),
        sup: Supervisor::new(sys.supervisor.policy, sys.supervisor.rate_hz, nodes, sys.pus_per_node, total, seed),
        tracks: vec![Track::default(); total as usize],
        built: 0,
        total,
        packets: 0,
        txbuf: Vec::new(),
        opts,
        progress_every,
        seed,
    };
    let limit = (scenario.run.time_limit_s * NS_PER_S as f64) as Nanos;
    w.start();
    while w.built < w.total {
        let Some((now, ev)) = w.q.pop() else { break };
        if now > limit {
            break;
        }
        w.dispatch(ev);
    }
    w.report(scenario, origin, wall.elapsed().as_secs_f64())
}

impl World<'_> {
    fn start(&mut self) {
        self.sup.start(0);
        if let Some(t) = self.sup.poll_timeout() {
            self.q.schedule(t, Ev::SupervisorWake);
        }
        for pu in startup_order(self.seed, self.pus.len() as u32) {
            if self.pus[pu as usize].start() == PuOutput::AskForWork {
                self.q.schedule(self.control_delay, Ev::Ready { pu });
            }
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive { at: NodeRef::Switch(s), pkt } => {
                let p = &self.pkts[pkt as usize];
                let port = self.fabric.route(s, p.dst, p.core as u32);
                self.forward(port, pkt);
            }
            Ev::Arrive { at: NodeRef::Host(_), pkt } => self.deliver(pkt),
            Ev::Tcp { ep } => {
                let now = self.q.now();
                let (c, s) = ((ep / 2) as usize, (ep % 2) as usize);
                let e = &mut self.conns[c].ep[s];
                if e.wakeup == now {
                    e.wakeup = Nanos::MAX;
                }
                e.rcv.on_timer(now);
                e.snd.on_timer(now);
                self.pump(c, s);
            }
            Ev::ReadoutWake { readout } => self.drain_readout(readout),
            Ev::PuWake { pu } => {
                let now = self.q.now();
                if let Some([PuOutput::Done(event), PuOutput::AskForWork]) = self.pus[pu as usize].on_timeout(now) {
                    self.q.schedule(now + self.control_delay, Ev::Done { event });
                    self.q.schedule(now + self.control_delay, Ev::Ready { pu });
                }
            }
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
            Ev::Assign { pu, event } => {
                let now = self.q.now();
                if let PuOutput::Collect { event, readouts } = self.pus[pu as usize].on_assign(event) {
                    self.tracks[event as usize].start = now;
                    let node = pu / self.pus_per_node;
                    self.collectors[node as usize].on_collect(pu, event, &readouts);
                    self.drain_collector(node);
                }
            }
            Ev::Done { event } => self.sup.on_done(event),
        }
    }

    fn drain_supervisor(&mut self) {
        let now = self.q.now();
        while let Some(a) = self.sup.poll_assignment() {
            let t = &mut self.tracks[a.event as usize];
            t.assigned = now;
            t.pu = a.pu;
            self.q.schedule(now + self.control_delay, Ev::Assign { pu: a.pu, event: a.event });
        }
    }

    fn drain_collector(&mut self, node: u32) {
        let now = self.q.now();
        while let Some(out) = self.collectors[node as usize].poll() {
            match out {
                CollectorOutput::Request { readout, request } => {
                    let c = (node * self.readout_units + readout) as usize;
                    self.send_msg(c, 0, self.request_bytes, AppMsg::Request(request));
                }
                CollectorOutput::Collected { pu, event, bytes, .. } => {
                    let t = &mut self.tracks[event as usize];
                    t.done = Some(now);
                    t.bytes = bytes;
                    self.built += 1;
                    if let PuOutput::WakeAt(at) = self.pus[pu as usize].on_collected(now, event) {
                        self.q.schedule(at, Ev::PuWake { pu });
                    }
                    if self.built.is_multiple_of(self.progress_every) || self.built == self.total {
                        if let Some(p) = self.opts.progress.as_mut() {
                            p(self.built, self.total);
                        }
                    }
                }
            }
        }
    }

    fn drain_readout(&mut self, readout: u32) {
        let now = self.q.now();
        while let Some(resp) = self.readouts[readout as usize].poll_response(now) {
            let c = (resp.node * self.readout_units + readout) as usize;
            self.send_msg(c, 1, resp.bytes, AppMsg::Response(resp));
        }
    }

    fn on_message(&mut self, c: usize, msg: AppMsg) {
        let now = self.q.now();
        match msg {
            AppMsg::Request(req) => {
                let r = c as u32 % self.readout_units;
                let due = self.readouts[r as usize].on_request(now, req);
                if due == now {
                    self.drain_readout(r);
                } else {
                    self.q.schedule(due, Ev::ReadoutWake { readout: r });
                }
            }
            AppMsg::Response(resp) => {
                let node = resp.node;
                if let Err(e) = self.collectors[node as usize].on_response(&resp) {
                    panic!("simulator bookkeeping error at node {node}: {e}");
                }
                self.drain_collector(node);
            }
        }
    }

    fn send_msg(&mut self, c: usize, side: usize, bytes: u64, msg: AppMsg) {
        let now = self.q.now();
        let conn = &mut self.conns[c];
        conn.ep[side].snd.write(now, bytes);
        let end = conn.ep[side].snd.write_seq();
        conn.msgs[side].push_back((end, msg));
        self.pump(c, side);
    }

    /// Sends whatever endpoint (c, side) may send now, an ACK if one is due, and re-arms its timer.
    fn pump(&mut self, c: usize, side: usize) {
        let now = self.q.now();
        let mut txbuf = std::mem::take(&mut self.txbuf);
        txbuf.clear();
        {
            let ep = &mut self.conns[c].ep[side];
            let mss_now = self.mss - sack_option_bytes(ep.rcv.sack_blocks());
            ep.snd.transmit(now, mss_now, &mut txbuf);
        }
        for tx in &txbuf {
            self.emit(c, side, tx.start, tx.end, tx.retransmit);
        }
        self.txbuf = txbuf;
        if self.conns[c].ep[side].rcv.urgency() == AckUrgency::Now {
            self.emit(c, side, 0, 0, false);
        }
        let ep = &mut self.conns[c].ep[side];
        if let Some(d) = ep.next_deadline() {
            if d < ep.wakeup {
                ep.wakeup = d;
                self.q.schedule(d.max(now), Ev::Tcp { ep: (c * 2 + side) as u32 });
            }
        }
    }

    /// Puts one segment of endpoint (c, side) on its host's link: data `[start, end)` (empty for a
    /// pure ACK), carrying the endpoint's current acknowledgement.
    fn emit(&mut self, c: usize, side: usize, start: u64, end: u64, retransmit: bool) {
        let conn = &mut self.conns[c];
        let ep = &mut conn.ep[side];
        let mut sack = [(0u64, 0u64); 3];
        let (ack, nsack) = ep.rcv.ack_fields(&mut sack);
        ep.rcv.on_ack_sent();
        let node = c as u32 / self.readout_units;
        let readout = c as u32 % self.readout_units;
        let node_host = self.readout_units + node;
        let (src, dst) = if side == 0 { (node_host, readout) } else { (readout, node_host) };
        if side == 1 && end > start && !retransmit {
            let k = conn.originals_from_readout;
            conn.originals_from_readout += 1;
            if self.opts.drops.iter().any(|d| d.readout == readout && d.node == node && d.data_segment == k) {
                return;
            }
        }
        let pkt = Packet {
            conn: c as u32,
            side: side as u8,
            core: conn.core[side],
            nsack: nsack as u8,
            frame: frame_bytes((end - start) as u32, nsack),
            dst,
            start,
            end,
            ack,
            sack,
        };
        self.packets += 1;
        let id = match self.free.pop() {
            Some(id) => {
                self.pkts[id as usize] = pkt;
                id
            }
            None => {
                self.pkts.push(pkt);
                self.pkts.len() as u32 - 1
            }
        };
        let port = self.fabric.host_nic[src as usize];
        self.forward(port, id);
    }

    fn forward(&mut self, port: u32, pkt: u32) {
        let now = self.q.now();
        let frame = self.pkts[pkt as usize].frame;
        match offer(&mut self.fabric.ports, &mut self.fabric.pools, port, now, frame) {
            Admission::Sent { arrival_ns } => {
                self.q.schedule(arrival_ns, Ev::Arrive { at: self.fabric.peer[port as usize], pkt })
            }
            Admission::Dropped => self.free.push(pkt),
        }
    }

    fn deliver(&mut self, id: u32) {
        let now = self.q.now();
        let p = self.pkts[id as usize];
        self.free.push(id);
        let c = p.conn as usize;
        let side = 1 - p.side as usize;
        let has_data = p.end > p.start;
        {
            let ep = &mut self.conns[c].ep[side];
            ep.snd.on_ack(now, p.ack, &p.sack[..p.nsack as usize], has_data);
            if has_data {
                ep.rcv.on_segment(now, p.start, p.end);
            }
        }
        if has_data {
            loop {
                let conn = &mut self.conns[c];
                let rcv_nxt = conn.ep[side].rcv.rcv_nxt();
                match conn.msgs[p.side as usize].front() {
                    Some(&(end, msg)) if end <= rcv_nxt => {
                        conn.msgs[p.side as usize].pop_front();
                        conn.ep[side].rcv.on_app_read((p.end - p.start) as u32);
                        self.on_message(c, msg);
                    }
                    _ => break,
                }
            }
        }
        self.pump(c, side);
    }

    fn report(self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput {
        let warmup = scenario.run.warmup_events;
        let measured = &self.tracks[warmup as usize..];
        let latencies: Vec<Nanos> = measured.iter().filter_map(|t| t.done.map(|d| d - t.start)).collect();
        let built = latencies.len() as u64;
        let first = measured.iter().filter(|t| t.done.is_some()).map(|t| t.assigned).min().unwrap_or(0);
        let last = measured.iter().filter_map(|t| t.done).max().unwrap_or(0);
        let duration_s = last.saturating_sub(first) as f64 / NS_PER_S as f64;
        let bytes: u64 = measured.iter().filter(|t| t.done.is_some()).map(|t| t.bytes).sum();
        let per_s = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let mut tcp = TcpCounters::default();
        for conn in &self.conns {
            for ep in &conn.ep {
                tcp.retransmits += ep.snd.retransmits;
                tcp.timeouts += ep.snd.timeouts;
                tcp.fast_recoveries += ep.snd.fast_recoveries;
                tcp.loss_probes += ep.snd.loss_probes;
                tcp.recovery_fails += ep.snd.recovery_fails;
                tcp.lost_retransmits += ep.snd.lost_retransmits;
            }
        }
        let ports: Vec<PortStats> = self
            .fabric
            .ports
            .iter()
            .filter(|p| p.on_switch)
            .map(|p| PortStats { name: p.name.clone(), drops: p.drops, peak_bytes: p.peak_bytes, frames: p.frames })
            .collect();
        let events = if self.opts.record_events {
            self.tracks
                .iter()
                .enumerate()
                .filter_map(|(e, t)| {
                    t.done.map(|done| EventRecord {
                        event: e as u64,
                        pu: t.pu,
                        node: t.pu / self.pus_per_node,
                        assigned_ns: t.assigned,
                        start_ns: t.start,
                        done_ns: done,
                        bytes: t.bytes,
                        measured: e as u64 >= warmup,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let report = RunReport {
            substrate: "sim".into(),
            scenario: origin.into(),
            seed: scenario.run.seed,
            events_built: built,
            events_not_built: NotBuilt { timed_out: 0, lost: 0, abandoned: scenario.run.events - built },
            duration_s,
            event_rate_hz: per_s(built as f64),
            goodput_bps: per_s(bytes as f64 * 8.0),
            latency_ms: LatencyMs::from_ns(&latencies),
            tcp,
            switch: SwitchStats { drops: ports.iter().map(|p| p.drops).sum(), ports },
            wall_s,
            sim_events_per_s: Some(if wall_s > 0.0 { self.built as f64 / wall_s } else { 0.0 }),
            daqnet_version: env!("CARGO_PKG_VERSION").into(),
            sim_work: Some(SimWork {
                scheduler_events: self.q.popped(),
                packets: self.packets,
                simulated_s: self.q.now() as f64 / NS_PER_S as f64,
            }),
            nodes: Vec::new(),
            faults: Vec::new(),
            hosts: Vec::new(),
            resolved_scenario: scenario.to_toml(),
        };
        SimOutput { report, events }
    }
}
