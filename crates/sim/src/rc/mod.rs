//! A reliable-connected queue pair (InfiniBand RC, RoCEv2): the message transport of lossless
//! fabrics, sans IO. Each end is a requester for the messages it posts and a responder for
//! the peer's. Inputs go in through [`QueuePair::handle`] with the time; what the end sends
//! comes out of [`QueuePair::poll`]; [`QueuePair::poll_timeout`] says when to call again.
//!
//! Sequence numbers are byte offsets in the stream of posted messages (a packet's PSN is its
//! first byte's offset): a message is cut into packets of the path MTU, none crossing into the
//! next message. The requester sends at line rate — no window — as fast as the NIC takes its
//! packets ([`NIC_PACKETS`] waiting at a time, so the NIC serves its queue pairs in turn) or
//! its rate limit allows. The responder takes packets in order only (InfiniBand Architecture
//! Specification, vol. 1, §9.7: an out-of-sequence request is dropped and answered by one NAK,
//! "PSN sequence error"); the requester then sends again from the PSN the NAK names
//! (go-back-N), or from its oldest unacknowledged packet after the local ACK timeout (§9.7.6.1).
//! ACKs are coalesced: the responder acknowledges what the requester asks it to — a message's
//! last packet, and every [`ACK_REQ_EVERY`]th packet — and every duplicate so asked.

use daqnet_core::report::RcCounters;
use daqnet_core::Nanos;
use std::collections::VecDeque;

#[cfg(test)]
mod tests;

/// Packets of one queue pair waiting in its host's NIC at most: the NIC takes the next packet
/// of a queue pair when one has left, serving the pairs in turn.
pub const NIC_PACKETS: u32 = 2;

/// The requester asks for an ACK at least this often, in packets, within a long message.
pub const ACK_REQ_EVERY: u32 = 16;

/// A queue pair's fixed parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcParams {
    /// Payload of a full packet (the path MTU).
    pub mtu: u32,
    /// The sending rate limit, payload bit/s (`None`: line rate).
    pub rate_limit_bps: Option<u64>,
    /// The local ACK timeout.
    pub ack_timeout_ns: Nanos,
}

/// What reaches a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The application posts a message of `bytes` to send.
    Post {
        /// Its length.
        bytes: u64,
    },
    /// A data packet of the peer's: bytes `[start, end)`, with or without the AckReq bit.
    Data {
        /// Its PSN.
        start: u64,
        /// Where it ends.
        end: u64,
        /// The requester asks for an ACK.
        ack_req: bool,
    },
    /// An ACK (`nak` false) — everything below `upto` was received — or a NAK: the peer
    /// received everything below `upto` and expects `upto` next.
    Ack {
        /// The PSN the peer expects.
        upto: u64,
        /// A sequence-error NAK.
        nak: bool,
    },
    /// One of this end's data packets left its host's NIC.
    LeftNic,
    /// The time [`QueuePair::poll_timeout`] gave has come.
    Timer,
}

/// A packet the queue pair sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Data `[start, end)`.
    Data {
        /// Its PSN.
        start: u64,
        /// Where it ends.
        end: u64,
        /// Asks the responder for an ACK.
        ack_req: bool,
        /// Sent before (after going back).
        retransmit: bool,
    },
    /// An ACK or a NAK of `upto` ([`Input::Ack`]).
    Ack {
        /// The PSN expected next.
        upto: u64,
        /// A sequence-error NAK.
        nak: bool,
    },
}

/// The requester: the messages this end posted and how far they are sent and acknowledged.
#[derive(Debug, Clone)]
struct Requester {
    /// End of the posted messages.
    posted: u64,
    /// Where each message not yet acknowledged ends.
    ends: VecDeque<u64>,
    una: u64,
    nxt: u64,
    /// The highest PSN ever sent up to: below it a packet is sent again.
    high: u64,
    /// Packets since the last one that asked for an ACK.
    since_ack_req: u32,
    at_nic: u32,
    /// Under a rate limit: when the next packet may go.
    next_send: Nanos,
    /// When an ACK last acknowledged something new (or the first packet went).
    progress: Nanos,
}

/// The responder: what this end has received of the peer's messages.
#[derive(Debug, Clone, Default)]
struct Responder {
    /// The PSN expected next: everything below was received in order.
    expected: u64,
    /// A NAK went for the current gap; no other until the gap is filled.
    nak_sent: bool,
    /// The answer due, if any.
    due: Option<Output>,
}

/// One end of a reliable connection.
#[derive(Debug, Clone)]
pub struct QueuePair {
    p: RcParams,
    req: Requester,
    resp: Responder,
    counters: RcCounters,
}

impl QueuePair {
    /// A queue pair with nothing posted or received.
    pub fn new(p: RcParams) -> Self {
        let req = Requester {
            posted: 0,
            ends: VecDeque::new(),
            una: 0,
            nxt: 0,
            high: 0,
            since_ack_req: 0,
            at_nic: 0,
            next_send: 0,
            progress: 0,
        };
        QueuePair { p, req, resp: Responder::default(), counters: RcCounters::default() }
    }

    /// Takes `input`, which arrives at `now`.
    pub fn handle(&mut self, now: Nanos, input: Input) {
        match input {
            Input::Post { bytes } => {
                self.req.posted += bytes;
                self.req.ends.push_back(self.req.posted);
            }
            Input::Data { start, end, ack_req } => self.on_data(start, end, ack_req),
            Input::Ack { upto, nak } => self.on_ack(now, upto, nak),
            Input::LeftNic => self.req.at_nic -= 1,
            Input::Timer => self.on_timer(now),
        }
    }

    /// The next packet to send at `now`: an ACK or NAK due, else the next data packet if the
    /// NIC and the rate limit take it.
    pub fn poll(&mut self, now: Nanos) -> Option<Output> {
        if let Some(ack) = self.resp.due.take() {
            match ack {
                Output::Ack { nak: true, .. } => self.counters.naks += 1,
                _ => self.counters.acks += 1,
            }
            return Some(ack);
        }
        let r = &mut self.req;
        if r.nxt == r.posted || r.at_nic >= NIC_PACKETS || now < r.next_send {
            return None;
        }
        let message_end = *r.ends.iter().find(|&&e| e > r.nxt).expect("unsent bytes belong to a posted message");
        let (start, end) = (r.nxt, message_end.min(r.nxt + self.p.mtu as u64));
        r.since_ack_req += 1;
        let ack_req = end == message_end || r.since_ack_req >= ACK_REQ_EVERY;
        if ack_req {
            r.since_ack_req = 0;
        }
        if r.una == r.nxt {
            r.progress = now;
        }
        let retransmit = start < r.high;
        r.nxt = end;
        r.high = r.high.max(end);
        r.at_nic += 1;
        if let Some(bps) = self.p.rate_limit_bps {
            r.next_send = now + ((end - start) * 8 * 1_000_000_000).div_ceil(bps);
        }
        self.counters.data_packets += 1;
        self.counters.retransmitted_packets += u64::from(retransmit);
        Some(Output::Data { start, end, ack_req, retransmit })
    }

    /// When to call [`QueuePair::handle`] with [`Input::Timer`]: at the ACK timeout while
    /// packets are unacknowledged, or when the rate limit lets the next packet go.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let r = &self.req;
        let ack = (r.una < r.nxt).then(|| r.progress + self.p.ack_timeout_ns);
        let paced =
            (r.nxt < r.posted && r.at_nic < NIC_PACKETS && self.p.rate_limit_bps.is_some()).then_some(r.next_send);
        match (ack, paced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The PSN this end expects next from its peer: the peer's messages below it are complete.
    pub fn received(&self) -> u64 {
        self.resp.expected
    }

    /// Bytes posted, and acknowledged by the peer.
    pub fn posted_and_acknowledged(&self) -> (u64, u64) {
        (self.req.posted, self.req.una)
    }

    /// What this end did.
    pub fn counters(&self) -> &RcCounters {
        &self.counters
    }

    /// Bytes of its queue of message ends on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.req.ends.capacity() * std::mem::size_of::<u64>()
    }

    fn on_data(&mut self, start: u64, end: u64, ack_req: bool) {
        let s = &mut self.resp;
        if start > s.expected {
            if !s.nak_sent {
                s.nak_sent = true;
                s.due = Some(Output::Ack { upto: s.expected, nak: true });
            }
            return;
        }
        if end > s.expected {
            s.expected = end;
            s.nak_sent = false;
        }
        if ack_req {
            s.due = Some(Output::Ack { upto: s.expected, nak: false });
        }
    }

    fn on_ack(&mut self, now: Nanos, upto: u64, nak: bool) {
        let r = &mut self.req;
        if upto > r.una {
            r.una = upto;
            r.nxt = r.nxt.max(upto);
            r.progress = now;
            while r.ends.front().is_some_and(|&e| e <= upto) {
                r.ends.pop_front();
            }
        }
        if nak && upto >= r.una && upto < r.nxt {
            r.nxt = upto;
            r.since_ack_req = 0;
            self.counters.go_back_n += 1;
        }
    }

    fn on_timer(&mut self, now: Nanos) {
        let r = &mut self.req;
        if r.una < r.nxt && now >= r.progress + self.p.ack_timeout_ns {
            r.nxt = r.una;
            r.since_ack_req = 0;
            r.progress = now;
            self.counters.timeouts += 1;
        }
    }
}
