//! Sockets: simulated TCP connections between the network's hosts, each carrying application
//! messages of type `M` in both directions. Every dataflow simulated (the event builder, the
//! sub-farm) drives its state machines over this one layer, so packets, queues and TCP behave
//! the same whatever the dataflow.
//!
//! The layer owns the network, the frames on their way and the connections; the dataflow owns
//! the event queue, whose events are [`Ev`]: the layer's own (a frame arrives, a TCP timer
//! fires) or the dataflow's (`Ev::App`).

use crate::engine::{EventQueue, Place};
use crate::net::port::{offer, Admission};
use crate::net::wire::{frame_bytes, rc_frame_bytes, sack_option_bytes, HeaderBits};
use crate::net::{Network, Vertex};
use crate::prefetch::prefetch;
use crate::rc::RcParams;
use crate::tcp::undo::ts_ms;
use crate::tcp::{AckUrgency, Endpoint, Sender, TcpParams, Transmission};
use daqnet_core::report::{PortStats, RunReport, SimWork, SwitchStats, TcpCounters};
use daqnet_core::trace::{CaptureSink, CapturedFrame, Targets, TraceSpec};
use daqnet_core::{ConnId, Nanos, Side, NS_PER_S};
use std::collections::VecDeque;

mod cpu;
mod flow;
mod rc;
pub use flow::{LinkEv, LinkSlot};

/// An event of a simulation: the socket layer's, or the dataflow's own (`A`).
#[derive(Debug, Clone, Copy)]
pub enum Ev<A> {
    /// The first frame on its way from `port` reaches the port's peer.
    Arrive {
        /// The port.
        port: u32,
    },
    /// A connection end's timer (TCP's, or a queue pair's).
    Timer {
        /// The endpoint.
        ep: EndpointId,
    },
    /// A link event under flow control.
    Link(LinkSlot),
    /// A host's NIC interrupts a core for the frames its ring holds (`[network.host_cpu]`).
    Interrupt {
        /// The core, among all hosts' cores.
        core: u32,
    },
    /// The dataflow's event.
    App(A),
}

/// Captured frames gathered before they go to the sink.
pub(crate) const CAPTURE_BATCH: usize = 8192;

/// The ports being captured, and their frames not yet handed on.
struct Capture {
    /// Per port: its index among the captured ports, or `u32::MAX`.
    index: Vec<u32>,
    frames: Vec<CapturedFrame>,
}

/// An end of a connection: the one that opened it (an event builder's collector, a sub-farm
/// worker) or the one that accepted it (a readout unit, the sub-farm controller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Opened the connection.
    Opener,
    /// Accepted it.
    Acceptor,
}

impl End {
    /// The other end.
    pub fn peer(self) -> End {
        match self {
            End::Opener => End::Acceptor,
            End::Acceptor => End::Opener,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl From<Side> for End {
    /// The collector opens its connections to the readout units.
    fn from(s: Side) -> End {
        match s {
            Side::Collector => End::Opener,
            Side::Readout => End::Acceptor,
        }
    }
}

/// One end of one open connection, packed for the event queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointId(u32);

impl EndpointId {
    fn new(slot: Slot, end: End) -> Self {
        EndpointId(slot.0 * 2 + end.index() as u32)
    }

    fn slot(self) -> Slot {
        Slot(self.0 / 2)
    }

    fn end(self) -> End {
        if self.0.is_multiple_of(2) {
            End::Opener
        } else {
            End::Acceptor
        }
    }
}

/// Drop one data segment on purpose: the `index`-th original (not retransmitted) data segment
/// that `end` of `conn` sends, counted from 0 over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentDrop {
    /// The connection.
    pub conn: ConnId,
    /// The sending end.
    pub end: End,
    /// Index of the original data segment.
    pub index: u64,
}

/// Connections' state beyond which arrivals prefetch: twice a core's level-2 cache here (1 MiB).
const PREFETCH_ABOVE_BYTES: usize = 2 << 20;

/// A segment on the wire, 64 bytes: a packet is copied at every hop, so its size is paid per
/// hop (the ATLAS bench moved 104-byte flights before; 80 now).
#[derive(Debug, Clone, Copy)]
struct Packet {
    slot: Slot,
    /// TCP timestamp option: when it was sent, and the peer's timestamp it echoes.
    tsval: u32,
    tsecr: u32,
    dst: u32,
    /// Payload bytes from `start` (0: a pure ACK).
    len: u32,
    start: u64,
    ack: u64,
    /// SACK blocks as offsets from `ack` ([`SackOffsets`]).
    sack: SackOffsets,
    /// The end that sent it.
    from: End,
    core: u8,
    nsack: u8,
    /// ECN's codepoint and the transport's flags.
    bits: HeaderBits,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64, "a packet is copied at every hop");

impl Packet {
    fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    /// Its frame's bytes, header to FCS.
    #[inline(always)]
    fn frame_bytes(&self) -> u32 {
        if self.bits.queue_pair() {
            rc_frame_bytes(self.len)
        } else {
            frame_bytes(self.len, self.nsack as usize)
        }
    }

    fn sack_blocks(&self) -> [(u64, u64); 3] {
        self.sack.blocks(self.ack)
    }
}

/// Up to three SACK blocks as signed offsets from the acknowledgement number they travel with:
/// a block lies within a receive window of it (above it, or just below for a D-SACK), far inside
/// ±2 GiB. At 500 x 500 all-to-all the 24 bytes saved per waiting flight took the run from
/// 3.60 to 3.52 s and its peak from 752 to 713 MB (four runs each, alternated).
#[derive(Debug, Clone, Copy)]
struct SackOffsets([(i32, i32); 3]);

impl SackOffsets {
    fn new(ack: u64, blocks: &[(u64, u64)]) -> Self {
        let off = |s: u64| {
            let d = s.wrapping_sub(ack) as i64;
            debug_assert!(i32::try_from(d).is_ok(), "a SACK edge {s} lies within a window of the ACK {ack}");
            d as i32
        };
        let mut offsets = [(0, 0); 3];
        for (o, &(a, b)) in offsets.iter_mut().zip(blocks) {
            *o = (off(a), off(b));
        }
        SackOffsets(offsets)
    }

    fn blocks(&self, ack: u64) -> [(u64, u64); 3] {
        let edge = |o: i32| ack.wrapping_add_signed(o as i64);
        self.0.map(|(a, b)| (edge(a), edge(b)))
    }
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

/// A connection's place among the open ones ([`Sockets::open`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot(u32);

impl Slot {
    /// Not open yet.
    const CLOSED: Slot = Slot(u32::MAX);

    fn index(self) -> usize {
        self.0 as usize
    }
}

/// A connection as the dataflow declared it: its hosts, the path each end's packets take (a
/// core router, or a plane and spine; see [`NetworkPlan::conn_paths`](daqnet_fabric::network::NetworkPlan::conn_paths)) and, once open, its slot.
#[derive(Debug, Clone, Copy)]
struct Planned {
    hosts: [u32; 2],
    core: [u8; 2],
    slot: Slot,
}

/// A connection's two TCP endpoints, indexed by [`End`], and what the layer keeps beside them.
struct Conn<M> {
    id: ConnId,
    ep: [Endpoint; 2],
    /// Earliest time a timer event of each endpoint is already in the queue (`Nanos::MAX`: none).
    wakeup: [Nanos; 2],
    /// Messages written by each end, with the sequence number where each ends.
    msgs: [VecDeque<(u64, M)>; 2],
    /// The path each end's packets take ([`Planned::core`]).
    core: [u8; 2],
    /// The host of each end.
    hosts: [u32; 2],
    /// Original data segments each end has sent.
    originals: [u64; 2],
    /// The acknowledgement number of each end's last segment (`u64::MAX`: none yet).
    last_ack: [u64; 2],
}

impl<M> Conn<M> {
    /// Bytes of this connection's state, its structure and its queues' allocations.
    fn bytes(&self) -> usize {
        let msgs: usize = self.msgs.iter().map(|m| m.capacity() * std::mem::size_of::<(u64, M)>()).sum();
        std::mem::size_of::<Conn<M>>() + msgs + self.ep.iter().map(Endpoint::heap_bytes).sum::<usize>()
    }
}

/// A packet that reached its host: TCP has taken it; the receiving end's complete messages
/// wait for [`Sockets::next_message`], then the end answers.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// The connection.
    pub conn: ConnId,
    /// The receiving end.
    pub end: End,
    slot: Slot,
    len: u32,
}

/// The connections, the network they cross and the frames on their way.
pub struct Sockets<M> {
    net: Network,
    /// Per port, its frames on their way, in order of arrival: only the first is in the event
    /// queue (a port is a FIFO with a fixed delay, so arrivals are in admission order).
    flights: Vec<VecDeque<Flight>>,
    /// Every connection declared, by [`ConnId`].
    planned: Vec<Planned>,
    /// The open connections, in the order they opened: a connection's state is made when it is
    /// first used. At 500 x 500 all-to-all a run of 80 events uses 40,000 of the 250,000
    /// connections; making them all took 10 % of the run (page faults on 350 MB).
    conns: Vec<Conn<M>>,
    /// Each host's TCP parameters ([`TcpParams::on_host`]).
    on_host: Vec<TcpParams>,
    /// Whether arrivals fetch ahead what the next ones read ([`Sockets::prefetch_for`]): only
    /// when the connections outgrow the caches; below that the fetches cost more than they
    /// save (the DAQ-like bench load, 100 connections, ran 10 % slower with them).
    prefetch: bool,
    mss: u32,
    packets: u64,
    txbuf: Vec<Transmission>,
    drops: Vec<SegmentDrop>,
    capture: Option<Capture>,
    /// Pure ACKs that repeated their end's previous acknowledgement number.
    dup_acks: u64,
    /// Data segments that reached their host marked CE.
    ce_received: u64,
    /// Link-level flow control, if the links run it.
    flow: Option<Box<flow::Flow>>,
    /// The connections when they are queue pairs (`[network.rc]`) instead of TCP's.
    rc: Option<Box<rc::QueuePairs<M>>>,
    /// The hosts whose cores process what they receive (`[network.host_cpu]`).
    cpu: Option<Box<cpu::Cpus>>,
}

impl<M: Copy> Sockets<M> {
    /// Connections between the `(opener, acceptor)` host pairs, numbered in order. Each is set
    /// up when first used ([`Sockets::open`]) as if before the run: the handshake gives each
    /// endpoint its first RTT sample. Each end's packets take the path [`NetworkPlan::conn_paths`](daqnet_fabric::network::NetworkPlan::conn_paths)
    /// gives them; each end's timers tick as its host's ([`TcpParams::on_host`], from `seed`).
    pub fn new(net: Network, params: &TcpParams, seed: u64, pairs: impl IntoIterator<Item = (u32, u32)>) -> Self {
        // Once per host, not per connection end (250,000 connections at 500 x 500).
        let on_host = (0..net.plan.hosts.len() as u32).map(|h| params.on_host(seed, h)).collect();
        let planned: Vec<Planned> = pairs
            .into_iter()
            .enumerate()
            .map(|(c, hosts)| Planned {
                hosts: [hosts.0, hosts.1],
                core: net.plan.conn_paths(c as u64, hosts),
                slot: Slot::CLOSED,
            })
            .collect();
        Sockets {
            flow: flow::Flow::of(&net.plan),
            cpu: cpu::Cpus::of(&net.plan),
            flights: vec![VecDeque::new(); net.ports.len()],
            prefetch: planned.len() * std::mem::size_of::<Conn<M>>() > PREFETCH_ABOVE_BYTES,
            net,
            planned,
            conns: Vec::new(),
            on_host,
            mss: params.mss,
            packets: 0,
            txbuf: Vec::new(),
            drops: Vec::new(),
            capture: None,
            dup_acks: 0,
            ce_received: 0,
            rc: None,
        }
    }

    /// The sockets of a scenario's `network` over `net`: TCP connections as
    /// [`Sockets::new`] makes them, or queue pairs with `[network.rc]`.
    pub fn of_scenario(
        net: Network,
        network: &daqnet_core::scenario::Network,
        seed: u64,
        pairs: impl IntoIterator<Item = (u32, u32)>,
    ) -> Self {
        let params = TcpParams::from_config(&network.tcp, network.mss_bytes());
        let mut s = Sockets::new(net, &params, seed, pairs);
        if let Some(rc) = &network.rc {
            debug_assert!(s.flow.is_some(), "a validated scenario runs queue pairs on lossless links");
            let mtu = rc.path_mtu(network.mtu_bytes).expect("a validated scenario has a path MTU");
            s.rc = Some(rc::QueuePairs::new(RcParams {
                mtu,
                rate_limit_bps: rc.rate_limit_bps,
                ack_timeout_ns: rc.ack_timeout_ns,
            }));
            s.prefetch = false;
        }
        s
    }

    /// Connection `c`'s slot, opening it on first use: its endpoints as the handshake leaves
    /// them, each with the unloaded round trip as its first RTT sample.
    fn open(&mut self, c: ConnId) -> Slot {
        let plan = &mut self.planned[c.index()];
        if plan.slot != Slot::CLOSED {
            return plan.slot;
        }
        plan.slot = Slot(self.conns.len() as u32);
        let ([a, b], core) = (plan.hosts, plan.core);
        let ack_frame = frame_bytes(0, 0);
        let rtt = self.net.unloaded_delay_ns(a, b, core[0] as u32, ack_frame)
            + self.net.unloaded_delay_ns(b, a, core[1] as u32, ack_frame);
        let mut ep = [Endpoint::new(&self.on_host[a as usize]), Endpoint::new(&self.on_host[b as usize])];
        ep[0].snd.seed_rtt(rtt);
        ep[1].snd.seed_rtt(rtt);
        if self.flow.is_some() {
            // A paused NIC holds a socket's packets: TCP small queues keep the rest in the socket.
            ep.iter_mut().for_each(|e| e.snd.use_small_queues());
        }
        self.conns.push(Conn {
            id: c,
            ep,
            wakeup: [Nanos::MAX; 2],
            msgs: [VecDeque::new(), VecDeque::new()],
            core,
            hosts: [a, b],
            originals: [0; 2],
            last_ack: [u64::MAX; 2],
        });
        plan.slot
    }

    /// Takes these ports' links down: what is offered to them from now on is lost.
    pub fn take_down(&mut self, ports: &[u32]) {
        for &p in ports {
            self.net.ports[p as usize].down = true;
        }
    }

    /// Moves connection `c`'s packets, both ways, onto `path` (a re-plan of the fabric).
    pub fn set_path(&mut self, c: ConnId, path: u8) {
        let plan = &mut self.planned[c.index()];
        plan.core = [path, path];
        match plan.slot {
            Slot::CLOSED => {}
            slot if self.rc.is_some() => self.rc_set_path(slot, path),
            slot => self.conns[slot.index()].core = [path, path],
        }
    }

    /// The network.
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// What a trace can select: every port, and every TCP sender as `FROM->TO` (connection
    /// `c`'s opener end at `2c`, its acceptor end at `2c + 1`; none when the connections are
    /// queue pairs).
    pub fn targets(&self) -> Targets {
        let host = |h: u32| self.net.host_name(h);
        let tcp = if self.rc.is_some() { &[][..] } else { &self.planned[..] };
        Targets {
            ports: self.net.ports.iter().map(|p| p.name.clone()).collect(),
            senders: tcp
                .iter()
                .flat_map(|c| [(c.hosts[0], c.hosts[1]), (c.hosts[1], c.hosts[0])])
                .map(|(from, to)| format!("{}->{}", host(from), host(to)))
                .collect(),
        }
    }

    /// Starts capturing the ports `spec` selects (checked by the caller), telling `sink` their
    /// names and the hosts'.
    pub(crate) fn start_capture(&mut self, spec: &TraceSpec, sink: &mut dyn CaptureSink) {
        let targets = self.targets();
        let (ports, _) = spec.resolve(&targets).unwrap_or_default();
        let mut index = vec![u32::MAX; self.net.ports.len()];
        for (i, &p) in ports.iter().enumerate() {
            index[p as usize] = i as u32;
        }
        let names: Vec<String> = ports.iter().map(|&p| targets.ports[p as usize].clone()).collect();
        let hosts: Vec<String> = self.net.plan.hosts.iter().map(|h| h.name.clone()).collect();
        sink.names(&names, &hosts);
        self.capture = Some(Capture { index, frames: Vec::with_capacity(CAPTURE_BATCH) });
    }

    /// Hands the captured frames to `sink` once at least `at_least` are gathered.
    pub(crate) fn flush_capture(&mut self, sink: &mut dyn CaptureSink, at_least: usize) {
        if let Some(c) = self.capture.as_mut().filter(|c| c.frames.len() >= at_least) {
            sink.frames(&c.frames);
            c.frames.clear();
        }
    }

    /// Port `p`'s queued bytes at `now`, and its drops, marks and paused time (ns) so far.
    pub fn port_backlog(&mut self, p: u32, now: Nanos) -> (u64, u64, u64, u64) {
        let paused_ns = self.port_flow(p as usize, now).paused_ns;
        let f = &mut self.net;
        let bytes = f.ports[p as usize].backlog(now, &mut f.pools);
        (bytes, f.ports[p as usize].drops, f.ports[p as usize].marks, paused_ns)
    }

    /// TCP sender `s` of [`Sockets::targets`] (opening its connection: a trace samples it).
    pub fn sender(&mut self, s: u32) -> &Sender {
        let slot = self.open(ConnId(s / 2));
        &self.conns[slot.index()].ep[s as usize % 2].snd
    }

    /// Drops these data segments on purpose.
    pub fn drop_segments(&mut self, drops: Vec<SegmentDrop>) {
        self.drops = drops;
    }

    /// `end` of connection `c` writes a message of `bytes`, delivered whole to the other end.
    pub fn send<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: ConnId, end: End, bytes: u64, msg: M) {
        if self.rc.is_some() {
            return self.rc_send(q, c, end, bytes, msg);
        }
        let now = q.now();
        let slot = self.open(c);
        let conn = &mut self.conns[slot.index()];
        let ep = &mut conn.ep[end.index()];
        ep.snd.write(now, bytes);
        conn.msgs[end.index()].push_back((ep.snd.write_seq(), msg));
        self.pump(q, slot, end);
    }

    /// A connection end's timer event.
    pub fn on_timer<A>(&mut self, q: &mut EventQueue<Ev<A>>, ep: EndpointId) {
        if self.rc.is_some() {
            return self.rc_on_timer(q, ep);
        }
        let now = q.now();
        let (c, end) = (ep.slot(), ep.end());
        let conn = &mut self.conns[c.index()];
        if conn.wakeup[end.index()] == now {
            conn.wakeup[end.index()] = Nanos::MAX;
        }
        let e = &mut conn.ep[end.index()];
        e.rcv.on_timer(now, e.snd.rto());
        e.snd.on_timer(now);
        self.pump(q, c, end);
    }

    /// The first frame on its way from `port` arrives; the next one takes its place in the
    /// queue before anything the arrival causes is scheduled. At a switch it is forwarded; at
    /// a host TCP takes it, and the caller reads the messages it completed
    /// ([`Sockets::next_message`]) and then lets the end answer.
    #[inline]
    pub fn arrive<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32) -> Option<Received> {
        let flights = &mut self.flights[port as usize];
        let f = flights.pop_front().expect("an arrival event stands for a frame on its way");
        if let Some(next) = flights.front() {
            q.schedule_at(next.arrival, next.place, Ev::Arrive { port });
            if let Some(f) = flights.get(2) {
                prefetch(f);
            }
            if self.prefetch {
                self.prefetch_for(port);
            }
        }
        match self.net.peer[port as usize] {
            Vertex::Switch(s) => {
                if let Some(h) = self.cpu.as_deref().and_then(|c| c.host_of(s.0)) {
                    self.cpu_arrive(q, h, f.pkt);
                    return None;
                }
                let out = self.net.route(s.0, f.pkt.dst, f.pkt.core as u32);
                if self.flow.is_some() {
                    self.flow_arrive(q, port, out, f.pkt);
                } else {
                    self.forward(q, out, f.pkt);
                }
                None
            }
            Vertex::Host(_) => Some(self.receive(q.now(), f.pkt)),
        }
    }

    /// Fetches ahead what the next arrivals through `port` will read, in a pipeline whose every
    /// stage reads only what the stage before fetched: the flight after the next two; at a
    /// host, the connection of the one after next, and the next one's queue heads (its
    /// receiving end's oldest segment and the one its first SACK block starts at, the messages
    /// its sender wrote). At 500 x 500 all-to-all the connections' state (250 000 of them,
    /// 400 MB) and the flights waiting in deep ports miss every cache.
    #[inline(never)]
    fn prefetch_for(&self, port: u32) {
        let flights = &self.flights[port as usize];
        let Vertex::Host(_) = self.net.peer[port as usize] else {
            self.prefetch_route(port, flights);
            return;
        };
        if let Some(f) = flights.get(1) {
            prefetch(&self.conns[f.pkt.slot.index()]);
        }
        let next = &flights[0].pkt;
        let conn = &self.conns[next.slot.index()];
        let sack_start = (next.nsack > 0).then(|| next.sack_blocks()[0].0);
        conn.ep[next.from.peer().index()].snd.prefetch_for_ack(sack_start);
        if let Some(m) = conn.msgs[next.from.index()].front() {
            prefetch(m);
        }
    }

    /// At a switch: the output port of the one after next, and the next one's port's queue ends.
    fn prefetch_route(&self, port: u32, flights: &VecDeque<Flight>) {
        let Vertex::Switch(s) = self.net.peer[port as usize] else { return };
        let out = |f: &Flight| self.net.route(s.0, f.pkt.dst, f.pkt.core as u32) as usize;
        if let Some(f) = flights.get(1) {
            prefetch(&self.net.ports[out(f)]);
        }
        let out = out(&flights[0]);
        self.net.ports[out].prefetch_queue();
        if let Some(f) = self.flights[out].back() {
            prefetch(f);
        }
    }

    fn receive(&mut self, now: Nanos, p: Packet) -> Received {
        if self.rc.is_some() {
            return self.rc_receive(now, p);
        }
        let end = p.from.peer();
        let has_data = p.len > 0;
        let conn = &mut self.conns[p.slot.index()];
        let ep = &mut conn.ep[end.index()];
        ep.rcv.on_timestamp(p.start, p.tsval);
        let sacks = &p.sack_blocks()[..p.nsack as usize];
        ep.snd.on_ack_ecn(now, p.ack, sacks, has_data, Some(p.tsecr), p.bits.ece());
        if has_data {
            self.ce_received += u64::from(p.bits.ce());
            ep.rcv.on_data(now, p.start, p.end(), p.bits, ep.snd.rtt_bounds());
        }
        Received { conn: conn.id, end, slot: p.slot, len: p.len }
    }

    /// The next message complete at the receiving end of `rx`, if any.
    pub fn next_message(&mut self, rx: &Received) -> Option<M> {
        if rx.len == 0 {
            return None;
        }
        if self.rc.is_some() {
            return self.rc_next_message(rx);
        }
        let conn = &mut self.conns[rx.slot.index()];
        let rcv = &mut conn.ep[rx.end.index()].rcv;
        let msgs = &mut conn.msgs[rx.end.peer().index()];
        match msgs.front() {
            Some(&(end, msg)) if end <= rcv.rcv_nxt() => {
                msgs.pop_front();
                rcv.on_app_read(rx.len);
                Some(msg)
            }
            _ => None,
        }
    }

    /// Sends whatever `end` of `c` may send now, an ACK if one is due, and re-arms its timer.
    /// The end that received `rx` answers: it acknowledges and sends what its window allows.
    #[inline]
    pub(crate) fn answer<A>(&mut self, q: &mut EventQueue<Ev<A>>, rx: &Received) {
        if self.rc.is_some() {
            return self.rc_pump(q, rx.slot, rx.end);
        }
        self.pump(q, rx.slot, rx.end);
    }

    fn pump<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: Slot, end: End) {
        let now = q.now();
        let mut txbuf = std::mem::take(&mut self.txbuf);
        txbuf.clear();
        if let Some((ack, ece)) = self.conns[c.index()].ep[end.index()].rcv.take_prior_ack() {
            self.emit_prior_ack(q, c, end, ack, ece);
        }
        {
            let ep = &mut self.conns[c.index()].ep[end.index()];
            let mss_now = self.mss - sack_option_bytes(ep.rcv.sack_blocks());
            ep.snd.transmit(now, mss_now, &mut txbuf);
        }
        for tx in &txbuf {
            self.emit(q, c, end, tx);
        }
        self.txbuf = txbuf;
        let ep = &self.conns[c.index()].ep[end.index()];
        if ep.rcv.urgency() == AckUrgency::Now {
            // A pure ACK carries the next sequence number, as on the wire (captures show it).
            let nxt = ep.snd.snd_nxt();
            self.emit(q, c, end, &Transmission { start: nxt, end: nxt, retransmit: false, cwr: false });
        }
        let conn = &mut self.conns[c.index()];
        if let Some(d) = conn.ep[end.index()].poll_timeout() {
            if d < conn.wakeup[end.index()] {
                conn.wakeup[end.index()] = d;
                q.schedule_timer(d.max(now), Ev::Timer { ep: EndpointId::new(c, end) });
            }
        }
    }

    /// Puts one segment of `end` of `c` on its host's link: the data of `tx` (empty for a pure
    /// ACK), carrying the endpoint's current acknowledgement and ECN bits (Linux
    /// `tcp_ecn_send`).
    fn emit<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: Slot, from: End, tx: &Transmission) {
        let (start, end, retransmit) = (tx.start, tx.end, tx.retransmit);
        let conn = &mut self.conns[c.index()];
        let ep = &mut conn.ep[from.index()];
        let mut sack = [(0u64, 0u64); 3];
        let (ack, nsack) = ep.rcv.ack_fields(&mut sack);
        let ecn = HeaderBits::new(ep.snd.ect(end > start && !retransmit), ep.rcv.ece(), tx.cwr);
        ep.rcv.on_ack_sent();
        if end == start && conn.last_ack[from.index()] == ack {
            self.dup_acks += 1;
        }
        conn.last_ack[from.index()] = ack;
        if end > start {
            ep.rcv.on_data_sent(q.now());
        }
        if end > start && !retransmit {
            let index = conn.originals[from.index()];
            conn.originals[from.index()] += 1;
            if self.drops.contains(&SegmentDrop { conn: conn.id, end: from, index }) {
                // It never reaches the NIC (small queues, if on, count it gone).
                ep.snd.on_host_sent(tx.end as u32 - tx.start as u32);
                return;
            }
        }
        self.put_on_link(q, c, from, (start, end), (ack, &sack[..nsack]), ecn);
    }

    /// DCTCP's ACK of what arrived before a change of CE state (`ack`, with that state's
    /// `ece`), sent before the ACK of the segment that changed it; the receiver's delayed-ACK
    /// state is left as it is.
    fn emit_prior_ack<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: Slot, from: End, ack: u64, ece: bool) {
        let conn = &mut self.conns[c.index()];
        let ep = &conn.ep[from.index()];
        let mut sack = [(0u64, 0u64); 3];
        let (_, nsack) = ep.rcv.ack_fields(&mut sack);
        let (nxt, ecn) = (ep.snd.snd_nxt(), HeaderBits::new(ep.snd.ect(false), ece, false));
        if conn.last_ack[from.index()] == ack {
            self.dup_acks += 1;
        }
        conn.last_ack[from.index()] = ack;
        self.put_on_link(q, c, from, (nxt, nxt), (ack, &sack[..nsack]), ecn);
    }

    /// Puts the segment `from` sends on connection `c` on its host's link: data `[start, end)`
    /// (empty for a pure ACK), acknowledging `ack` with these SACK blocks, echoing the end's
    /// last timestamp, with these ECN bits.
    #[inline(always)]
    fn put_on_link<A>(
        &mut self,
        q: &mut EventQueue<Ev<A>>,
        c: Slot,
        from: End,
        (start, end): (u64, u64),
        (ack, sack): (u64, &[(u64, u64)]),
        ecn: HeaderBits,
    ) {
        let conn = &self.conns[c.index()];
        let pkt = Packet {
            slot: c,
            from,
            core: conn.core[from.index()],
            nsack: sack.len() as u8,
            tsval: ts_ms(q.now()),
            tsecr: conn.ep[from.index()].rcv.ts_recent(),
            dst: conn.hosts[from.peer().index()],
            len: (end - start) as u32,
            start,
            ack,
            sack: SackOffsets::new(ack, sack),
            bits: ecn,
        };
        let nic = self.net.nic(conn.hosts[from.index()], pkt.core as u32);
        self.packets += 1;
        if self.flow.is_some() {
            self.flow_forward(q, nic, pkt, crate::net::flow::Held::NONE);
        } else {
            self.forward(q, nic, pkt);
        }
    }

    fn forward<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, mut pkt: Packet) {
        let now = q.now();
        let frame = frame_bytes(pkt.len, pkt.nsack as usize);
        match offer(&mut self.net.ports, &mut self.net.pools, port, now, frame) {
            Admission::Sent { arrival_ns } => {
                if pkt.bits.ect() && self.net.ports[port as usize].mark_admitted(frame) {
                    pkt.bits = pkt.bits.marked();
                }
                self.fly(q, port, arrival_ns, pkt);
            }
            Admission::Dropped => {}
        }
    }

    /// `pkt`, admitted to `port`, is on its way to the port's peer, where it arrives at
    /// `arrival_ns`: behind the port's earlier frames, the first of them in the event queue.
    #[inline(always)]
    fn fly<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, arrival_ns: Nanos, pkt: Packet) {
        self.capture(port, arrival_ns, &pkt);
        let place = q.take_place();
        let flights = &mut self.flights[port as usize];
        debug_assert!(flights.back().is_none_or(|b| b.arrival <= arrival_ns), "a port delivers in order");
        if flights.is_empty() {
            q.schedule_at(arrival_ns, place, Ev::Arrive { port });
        }
        flights.push_back(Flight { arrival: arrival_ns, place, pkt });
    }

    /// Records `pkt`, which reaches the peer of `port` at `arrival_ns`, if `port` is captured.
    #[inline(always)]
    fn capture(&mut self, port: u32, arrival_ns: Nanos, pkt: &Packet) {
        if self.capture.is_some() {
            self.capture_frame(port, arrival_ns, pkt);
        }
    }

    #[inline(never)]
    fn capture_frame(&mut self, port: u32, arrival_ns: Nanos, pkt: &Packet) {
        let (id, hosts) = match self.rc {
            Some(_) => self.rc_conn_hosts(pkt.slot),
            None => (self.conns[pkt.slot.index()].id, self.conns[pkt.slot.index()].hosts),
        };
        let Some(c) = self.capture.as_mut().filter(|c| c.index[port as usize] != u32::MAX) else { return };
        c.frames.push(CapturedFrame {
            // A tap on the link sees the frame when its transmission ends.
            t_ns: arrival_ns - self.net.ports[port as usize].delay_ns,
            port: c.index[port as usize],
            hosts: (hosts[pkt.from.index()], pkt.dst),
            conn: id.0,
            from_opener: pkt.from == End::Opener,
            seq: pkt.start,
            len: pkt.len,
            ack: pkt.ack,
            sack: pkt.sack_blocks(),
            nsack: pkt.nsack,
        });
    }

    /// Fills the fields of `report` the simulator owns, whatever the dataflow: the TCP model's
    /// counters, the switch ports, the wall time (`built` events in `wall_s`) and the work of
    /// `q` and these sockets.
    pub fn add_to_report<A>(&self, report: &mut RunReport, q: &EventQueue<Ev<A>>, built: u64, wall_s: f64) {
        let mut tcp = TcpCounters::default();
        for ep in self.conns.iter().flat_map(|c| &c.ep) {
            tcp += ep.snd.stats();
        }
        tcp.dup_acks = self.dup_acks;
        tcp.ce_received = self.ce_received;
        report.dctcp_alpha = self.mean_alpha();
        report.tcp = tcp;
        report.tcp_source = "model".into();
        let now = q.now();
        let stats = |ports: Vec<usize>| {
            let ports: Vec<PortStats> = ports
                .into_iter()
                .map(|i| {
                    let p = &self.net.ports[i];
                    let pf = self.port_flow(i, now);
                    PortStats {
                        name: p.name.clone(),
                        drops: p.drops,
                        peak_bytes: p.peak_bytes,
                        frames: p.frames,
                        marks: p.marks,
                        pause_sent: pf.pause_sent,
                        pause_received: pf.pause_received,
                        paused_ns: pf.paused_ns,
                        peak_ingress_bytes: pf.peak_ingress_bytes,
                    }
                })
                .collect();
            SwitchStats {
                drops: ports.iter().map(|p| p.drops).sum(),
                marks: ports.iter().map(|p| p.marks).sum(),
                pause_sent: ports.iter().map(|p| p.pause_sent).sum(),
                paused_ns: ports.iter().map(|p| p.paused_ns).sum(),
                ports,
            }
        };
        let f = &self.net;
        report.switch = stats((0..f.ports.len()).filter(|&i| f.ports[i].on_switch).collect());
        let edge = &f.plan.edge_ports;
        report.edge = (!edge.is_empty()).then(|| stats(edge.iter().map(|&p| p.0 as usize).collect()));
        report.host_cpu = self.cpu_stats(now);
        report.flow_control = self.flow_stats(now);
        report.rc = self.rc_totals().map(|(c, _, _)| c);
        report.wall_s = wall_s;
        report.sim_events_per_s = Some(if wall_s > 0.0 { built as f64 / wall_s } else { 0.0 });
        report.sim_work = Some(self.work(q));
    }

    /// DCTCP's α at the end, averaged over the senders weighted by the bytes each sent: the
    /// data senders' estimate, not that of the ends that only sent requests.
    fn mean_alpha(&self) -> Option<f64> {
        let (mut sum, mut bytes) = (0.0, 0u64);
        for snd in self.conns.iter().flat_map(|c| &c.ep).map(|e| &e.snd) {
            if let Some(a) = snd.alpha() {
                sum += a as f64 / 1024.0 * snd.snd_nxt() as f64;
                bytes += snd.snd_nxt();
            }
        }
        (bytes > 0).then(|| sum / bytes as f64)
    }

    /// The simulator's work: scheduler events of `q`, packets created, simulated time,
    /// connections and the bytes of their state.
    fn work<A>(&self, q: &EventQueue<Ev<A>>) -> SimWork {
        let tcp = (self.conns.len() as u64, self.conns.iter().map(Conn::bytes).sum::<usize>() as u64);
        let (open, bytes) = self.rc_totals().map_or(tcp, |(_, open, bytes)| (open, bytes));
        SimWork {
            scheduler_events: q.popped(),
            packets: self.packets,
            simulated_s: q.now() as f64 / NS_PER_S as f64,
            connections: self.planned.len() as u64,
            connections_open: open,
            connection_bytes: bytes,
        }
    }
}
