//! The receiving half of a TCP endpoint: cumulative and selective acknowledgements, delayed
//! ACKs, and Linux's quick-ACK mode.

use super::TcpParams;
use daqnet_core::Nanos;

/// Whether the receiver needs an ACK sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckUrgency {
    /// Nothing to acknowledge.
    None,
    /// Acknowledge by the delayed-ACK deadline (or earlier, piggybacked on data).
    Delayed,
    /// Acknowledge now.
    Now,
}

/// The receiving half.
#[derive(Debug, Clone)]
pub struct Receiver {
    rcv_nxt: u64,
    /// Out-of-order ranges above `rcv_nxt`, sorted and disjoint.
    ooo: Vec<(u64, u64)>,
    /// SACK blocks to report, most recently changed first (RFC 2018).
    recent: Vec<(u64, u64)>,
    /// A duplicate segment to report in the next ACK's first block (D-SACK, RFC 2883).
    dsack: Option<(u64, u64)>,
    /// `rcv_nxt` when the last ACK was sent.
    rcv_wup: u64,
    urgency: AckUrgency,
    delack_deadline: Option<Nanos>,
    quick: u32,
    mss: u32,
    sack: bool,
    delayed_ack: bool,
    delack_ns: Nanos,
    tick: super::tick::TimerTick,
    quickack: u32,
}

impl Receiver {
    /// Bytes of the out-of-order and recent-block lists' allocations.
    pub fn heap_bytes(&self) -> usize {
        (self.ooo.capacity() + self.recent.capacity()) * std::mem::size_of::<(u64, u64)>()
    }

    /// A receiver that starts in quick-ACK mode, like a freshly established Linux socket.
    pub fn new(p: &TcpParams) -> Self {
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            dsack: None,
            rcv_wup: 0,
            urgency: AckUrgency::None,
            delack_deadline: None,
            quick: p.quickack,
            mss: p.mss,
            sack: p.sack,
            delayed_ack: p.delayed_ack,
            delack_ns: p.delayed_ack_ns,
            tick: p.tick,
            quickack: p.quickack,
        }
    }

    /// Next byte expected.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// What the ACK must carry: the cumulative ACK, and up to three SACK blocks (a D-SACK
    /// block first) in `blocks`, of which it returns how many are used.
    pub fn ack_fields(&self, blocks: &mut [(u64, u64); 3]) -> (u64, usize) {
        if !self.sack {
            return (self.rcv_nxt, 0);
        }
        let mut n = 0;
        for &b in self.dsack.iter().chain(&self.recent).take(3) {
            blocks[n] = b;
            n += 1;
        }
        (self.rcv_nxt, n)
    }

    /// SACK blocks the next segment will carry.
    pub fn sack_blocks(&self) -> usize {
        if self.sack {
            (usize::from(self.dsack.is_some()) + self.recent.len()).min(3)
        } else {
            0
        }
    }

    /// How urgently an ACK is needed.
    pub fn urgency(&self) -> AckUrgency {
        self.urgency
    }

    /// Deadline of the delayed-ACK timer, if armed.
    pub fn delack_deadline(&self) -> Option<Nanos> {
        self.delack_deadline
    }

    /// A segment carrying `[start, end)` arrived at `now`.
    pub fn on_segment(&mut self, now: Nanos, start: u64, end: u64) {
        if end <= self.rcv_nxt || self.ooo.iter().any(|&(s, e)| s <= start && end <= e) {
            // A retransmission of data we have: acknowledge at once (Linux forces an ACK) and
            // report the duplicate.
            self.dsack = Some((start, end));
            self.ack_now_quick();
            return;
        }
        if start > self.rcv_nxt {
            self.insert_ooo(start, end);
            self.ack_now_quick();
            return;
        }
        let had_hole = !self.ooo.is_empty();
        self.rcv_nxt = end;
        // Pull in out-of-order data that is now contiguous.
        let mut consumed = 0;
        for &(s, e) in &self.ooo {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            consumed += 1;
        }
        self.ooo.drain(..consumed);
        let nxt = self.rcv_nxt;
        self.recent.retain(|&(_, e)| e > nxt);
        if had_hole {
            // RFC 5681 §4.2: ACK at once when a segment fills (part of) a gap.
            self.urgency = AckUrgency::Now;
        } else if !self.delayed_ack || self.rcv_nxt - self.rcv_wup > self.mss as u64 {
            // More than one full segment unacknowledged: every second segment is ACKed.
            self.urgency = AckUrgency::Now;
        } else if self.quick > 0 {
            self.quick -= 1;
            self.urgency = AckUrgency::Now;
        } else if self.urgency == AckUrgency::None {
            self.urgency = AckUrgency::Delayed;
            self.delack_deadline = Some(self.tick.deadline(now, self.delack_ns));
        }
    }

    /// The application read a complete message whose last segment was `last_len` bytes: like
    /// Linux's `tcp_cleanup_rbuf`, ACK at once if more than a segment is unacknowledged or the
    /// message ended with a short (pushed) segment.
    pub fn on_app_read(&mut self, last_len: u32) {
        if self.urgency == AckUrgency::Delayed && (self.rcv_nxt - self.rcv_wup > self.mss as u64 || last_len < self.mss)
        {
            self.urgency = AckUrgency::Now;
        }
    }

    /// The delayed-ACK timer fired at `now`.
    pub fn on_timer(&mut self, now: Nanos) {
        if self.delack_deadline.is_some_and(|d| d <= now) {
            self.delack_deadline = None;
            if self.urgency == AckUrgency::Delayed {
                self.urgency = AckUrgency::Now;
            }
        }
    }

    /// An ACK (pure or on a data segment) carrying [`Receiver::ack_fields`] was sent.
    pub fn on_ack_sent(&mut self) {
        self.rcv_wup = self.rcv_nxt;
        self.dsack = None;
        self.urgency = AckUrgency::None;
        self.delack_deadline = None;
    }

    fn ack_now_quick(&mut self) {
        self.urgency = AckUrgency::Now;
        self.quick = self.quickack;
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        let (mut s, mut e) = (start, end);
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            s = s.min(self.ooo[j].0);
            e = e.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, [(s, e)]);
        // The block holding the newest data goes first; blocks it swallowed disappear.
        self.recent.retain(|&(rs, re)| re < s || rs > e);
        self.recent.insert(0, (s, e));
        self.recent.truncate(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::TcpConfig;

    fn fields(r: &Receiver) -> (u64, Vec<(u64, u64)>) {
        let mut b = [(0, 0); 3];
        let (ack, n) = r.ack_fields(&mut b);
        assert_eq!(n, r.sack_blocks());
        (ack, b[..n].to_vec())
    }

    #[test]
    fn a_duplicate_segment_is_reported_first_as_a_dsack_once() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000);
        r.on_segment(1, 2000, 3000);
        r.on_ack_sent();
        r.on_segment(2, 0, 1000);
        assert_eq!(r.urgency(), AckUrgency::Now);
        assert_eq!(fields(&r), (1000, vec![(0, 1000), (2000, 3000)]), "below the ACK: a D-SACK");
        r.on_ack_sent();
        assert_eq!(fields(&r), (1000, vec![(2000, 3000)]), "reported once");
        r.on_segment(3, 2000, 3000);
        assert_eq!(fields(&r), (1000, vec![(2000, 3000), (2000, 3000)]), "inside a SACK block: a D-SACK");
    }

    fn rx(quick: u32) -> Receiver {
        let c = TcpConfig { quickack_segments: quick, timer_hz: 0, ..Default::default() };
        Receiver::new(&TcpParams::from_config(&c, 1000))
    }

    #[test]
    fn every_second_full_segment_is_acked_at_once() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        assert_eq!(r.delack_deadline(), Some(40_000_000));
        r.on_segment(10, 1000, 2000);
        assert_eq!(r.urgency(), AckUrgency::Now);
        r.on_ack_sent();
        assert_eq!(r.delack_deadline(), None);
    }

    #[test]
    fn delayed_ack_timer_is_capped_below_min_rto() {
        let c = TcpConfig { min_rto_ns: 5_000_000, quickack_segments: 0, timer_hz: 0, ..Default::default() };
        let mut r = Receiver::new(&TcpParams::from_config(&c, 1000));
        r.on_segment(0, 0, 1000);
        assert_eq!(r.delack_deadline(), Some(2_500_000));
    }

    #[test]
    fn out_of_order_data_is_sacked_most_recent_first_and_acked_now() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000);
        r.on_ack_sent();
        r.on_segment(1, 2000, 3000);
        assert_eq!(r.urgency(), AckUrgency::Now);
        assert_eq!(fields(&r), (1000, vec![(2000, 3000)]));
        r.on_ack_sent();
        r.on_segment(2, 4000, 5000);
        r.on_segment(3, 3000, 4000);
        assert_eq!(fields(&r), (1000, vec![(2000, 5000)]), "adjacent blocks merge");
        r.on_segment(4, 6000, 7000);
        assert_eq!(fields(&r), (1000, vec![(6000, 7000), (2000, 5000)]));
        r.on_ack_sent();
        r.on_segment(5, 1000, 2000);
        assert_eq!(r.urgency(), AckUrgency::Now, "filling the hole is acknowledged at once");
        assert_eq!(fields(&r), (5000, vec![(6000, 7000)]));
    }

    #[test]
    fn short_last_segment_of_a_message_is_acked_when_read() {
        let mut r = rx(0);
        r.on_segment(0, 0, 300);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        r.on_app_read(300);
        assert_eq!(r.urgency(), AckUrgency::Now);
    }
}
