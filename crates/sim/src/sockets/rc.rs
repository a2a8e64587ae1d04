//! The socket layer's connections as queue pairs (`[network.rc]`): the same messages, hosts and
//! links as TCP's connections, carried by [`QueuePair`]s. Frames cross the network exactly as
//! TCP's do; only the ends differ.

use super::{End, EndpointId, Ev, Packet, Received, SackOffsets, SegmentDrop, Slot, Sockets};
use crate::engine::EventQueue;
use crate::net::flow::Held;
use crate::net::wire::HeaderBits;
use crate::rc::{Input, Output, QueuePair, RcParams};
use daqnet_core::report::RcCounters;
use daqnet_core::{ConnId, Nanos};
use std::collections::VecDeque;

/// A connection's two queue pairs, indexed by [`End`], and what the layer keeps beside them.
struct RcConn<M> {
    id: ConnId,
    qp: [QueuePair; 2],
    /// Earliest time a timer event of each end is already in the queue (`Nanos::MAX`: none).
    wakeup: [Nanos; 2],
    /// Messages posted by each end, with the PSN where each ends.
    msgs: [VecDeque<(u64, M)>; 2],
    core: [u8; 2],
    hosts: [u32; 2],
    /// Original data packets each end has sent.
    originals: [u64; 2],
}

/// The open connections when they are queue pairs.
pub(super) struct QueuePairs<M> {
    params: RcParams,
    conns: Vec<RcConn<M>>,
}

impl<M> QueuePairs<M> {
    pub(super) fn new(params: RcParams) -> Box<Self> {
        Box::new(QueuePairs { params, conns: Vec::new() })
    }
}

impl<M: Copy> Sockets<M> {
    fn qps(&mut self) -> &mut QueuePairs<M> {
        self.rc.as_deref_mut().expect("the connections are queue pairs")
    }

    /// Connection `c`'s slot among the queue pairs, opening it on first use.
    fn rc_open(&mut self, c: ConnId) -> Slot {
        let plan = self.planned[c.index()];
        if plan.slot != Slot::CLOSED {
            return plan.slot;
        }
        let qps = self.rc.as_deref_mut().expect("the connections are queue pairs");
        let slot = Slot(qps.conns.len() as u32);
        qps.conns.push(RcConn {
            id: c,
            qp: [QueuePair::new(qps.params), QueuePair::new(qps.params)],
            wakeup: [Nanos::MAX; 2],
            msgs: [VecDeque::new(), VecDeque::new()],
            core: plan.core,
            hosts: plan.hosts,
            originals: [0; 2],
        });
        self.planned[c.index()].slot = slot;
        slot
    }

    /// `end` of `c` posts a message of `bytes`.
    pub(super) fn rc_send<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: ConnId, end: End, bytes: u64, msg: M) {
        let slot = self.rc_open(c);
        let conn = &mut self.qps().conns[slot.index()];
        conn.qp[end.index()].handle(q.now(), Input::Post { bytes });
        let (posted, _) = conn.qp[end.index()].posted_and_acknowledged();
        conn.msgs[end.index()].push_back((posted, msg));
        self.rc_pump(q, slot, end);
    }

    /// A queue pair's timer.
    pub(super) fn rc_on_timer<A>(&mut self, q: &mut EventQueue<Ev<A>>, ep: EndpointId) {
        let (now, slot, end) = (q.now(), ep.slot(), ep.end());
        let conn = &mut self.qps().conns[slot.index()];
        if conn.wakeup[end.index()] == now {
            conn.wakeup[end.index()] = Nanos::MAX;
        }
        conn.qp[end.index()].handle(now, Input::Timer);
        self.rc_pump(q, slot, end);
    }

    /// A queue pair's packet reaches its host.
    pub(super) fn rc_receive(&mut self, now: Nanos, p: Packet) -> Received {
        let end = p.from.peer();
        let conn = &mut self.qps().conns[p.slot.index()];
        let input = if p.len > 0 {
            Input::Data { start: p.start, end: p.end(), ack_req: p.bits.ack_req() }
        } else {
            Input::Ack { upto: p.ack, nak: p.bits.nak() }
        };
        conn.qp[end.index()].handle(now, input);
        Received { conn: conn.id, end, slot: p.slot, len: p.len }
    }

    /// The next message complete at the receiving end of `rx`, if any.
    pub(super) fn rc_next_message(&mut self, rx: &Received) -> Option<M> {
        let conn = &mut self.qps().conns[rx.slot.index()];
        let received = conn.qp[rx.end.index()].received();
        let msgs = &mut conn.msgs[rx.end.peer().index()];
        match msgs.front() {
            Some(&(end, msg)) if end <= received => {
                msgs.pop_front();
                Some(msg)
            }
            _ => None,
        }
    }

    /// A data packet of `pkt`'s end left its host's NIC.
    pub(super) fn rc_left_host<A>(&mut self, q: &mut EventQueue<Ev<A>>, pkt: &Packet) {
        let now = q.now();
        self.qps().conns[pkt.slot.index()].qp[pkt.from.index()].handle(now, Input::LeftNic);
        self.rc_pump(q, pkt.slot, pkt.from);
    }

    /// Sends what `end` of `c` has to send now, and re-arms its timer.
    pub(super) fn rc_pump<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: Slot, end: End) {
        let now = q.now();
        while let Some(out) = self.qps().conns[c.index()].qp[end.index()].poll(now) {
            self.rc_emit(q, c, end, out);
        }
        let conn = &mut self.qps().conns[c.index()];
        if let Some(d) = conn.qp[end.index()].poll_timeout() {
            if d < conn.wakeup[end.index()] {
                conn.wakeup[end.index()] = d;
                q.schedule_timer(d.max(now), Ev::Timer { ep: EndpointId::new(c, end) });
            }
        }
    }

    /// Puts `out` on the host link of `from`'s end of `c` (unless it is a data packet to drop
    /// on purpose, which never reaches the NIC).
    fn rc_emit<A>(&mut self, q: &mut EventQueue<Ev<A>>, c: Slot, from: End, out: Output) {
        let conn = &mut self.qps().conns[c.index()];
        let (start, len, ack, bits) = match out {
            Output::Data { start, end, ack_req, retransmit } => {
                if !retransmit {
                    let index = conn.originals[from.index()];
                    conn.originals[from.index()] += 1;
                    let id = conn.id;
                    if self.drops.contains(&SegmentDrop { conn: id, end: from, index }) {
                        self.qps().conns[c.index()].qp[from.index()].handle(q.now(), Input::LeftNic);
                        return;
                    }
                }
                (start, (end - start) as u32, 0, HeaderBits::rc(ack_req, false))
            }
            Output::Ack { upto, nak } => (0, 0, upto, HeaderBits::rc(false, nak)),
        };
        let conn = &self.rc.as_deref().expect("the connections are queue pairs").conns[c.index()];
        let pkt = Packet {
            slot: c,
            from,
            core: conn.core[from.index()],
            nsack: 0,
            tsval: 0,
            tsecr: 0,
            dst: conn.hosts[from.peer().index()],
            len,
            start,
            ack,
            sack: SackOffsets([(0, 0); 3]),
            bits,
        };
        let nic = self.net.nic(conn.hosts[from.index()], pkt.core as u32);
        self.packets += 1;
        if self.flow.is_some() {
            self.flow_forward(q, nic, pkt, Held::NONE);
        } else {
            self.forward(q, nic, pkt);
        }
    }

    /// Connection `slot`'s id and hosts.
    pub(super) fn rc_conn_hosts(&self, slot: Slot) -> (ConnId, [u32; 2]) {
        let conn = &self.rc.as_deref().expect("the connections are queue pairs").conns[slot.index()];
        (conn.id, conn.hosts)
    }

    /// Moves connection `slot` onto `path`.
    pub(super) fn rc_set_path(&mut self, slot: Slot, path: u8) {
        self.qps().conns[slot.index()].core = [path, path];
    }

    /// The queue pairs' counters, summed; open connections and the bytes of their state.
    pub(super) fn rc_totals(&self) -> Option<(RcCounters, u64, u64)> {
        let qps = self.rc.as_deref()?;
        let mut c = RcCounters::default();
        let mut bytes = 0;
        for conn in &qps.conns {
            bytes += std::mem::size_of::<RcConn<M>>();
            for (qp, msgs) in conn.qp.iter().zip(&conn.msgs) {
                c += qp.counters();
                bytes += qp.heap_bytes() + msgs.capacity() * std::mem::size_of::<(u64, M)>();
            }
        }
        Some((c, qps.conns.len() as u64, bytes as u64))
    }
}
