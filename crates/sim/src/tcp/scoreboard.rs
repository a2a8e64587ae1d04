//! The retransmission queue and its scoreboard, as Linux keeps them: every segment sent and not
//! yet cumulatively acknowledged, with its marks (Linux's `TCPCB_SACKED_ACKED`, `TCPCB_LOST`,
//! `TCPCB_SACKED_RETRANS`, `TCPCB_EVER_RETRANS`), and the counters derived from the marks
//! (`packets_out`, `sacked_out`, `lost_out`, `retrans_out`).
//!
//! This type is the only code that changes a mark or a counter, so the two cannot drift apart;
//! with debug assertions on, every public operation ends by recounting the marks and checking
//! the invariants ([`Scoreboard::check`]).
//!
//! Without SACK there are no SACK marks: `sacked_out` counts duplicate ACKs instead (Linux's
//! Reno emulation, `tcp_add_reno_sack`).

use daqnet_core::Nanos;
use std::collections::VecDeque;

/// The marks of one segment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    /// Selectively acknowledged.
    pub sacked: bool,
    /// Considered lost (to be retransmitted, or retransmitted and in flight again).
    pub lost: bool,
    /// A retransmission of it is in flight.
    pub retrans: bool,
    /// It was retransmitted at some time (RTT samples from it are ambiguous).
    pub ever_retrans: bool,
}

/// A segment in the retransmission queue.
#[derive(Debug, Clone, Copy)]
pub struct Seg {
    /// First sequence number.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// When it was last sent.
    pub sent_at: Nanos,
    /// Segments the connection had delivered when it was last sent (Linux `tx.delivered`, read
    /// by the rate sample's `prior_delivered`).
    pub delivered: u32,
    marks: Marks,
}

impl Seg {
    /// Its marks.
    #[inline]
    pub fn marks(&self) -> Marks {
        self.marks
    }
}

// Half a cache line: the queue is walked on every SACK.
const _: () = assert!(std::mem::size_of::<Seg>() == 32);

/// The retransmission queue with Linux's counters.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    sack: bool,
    rtx: VecDeque<Seg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    ever_retrans_out: u32,
    /// Segments ever marked lost, a lost retransmission again (Linux `tp->lost`, wrapping).
    lost: u32,
}

impl Scoreboard {
    /// Bytes of the retransmission queue's allocation.
    pub fn heap_bytes(&self) -> usize {
        self.rtx.capacity() * std::mem::size_of::<Seg>()
    }

    /// An empty queue; `sack`: whether the connection uses SACK.
    pub fn new(sack: bool) -> Self {
        Scoreboard {
            sack,
            rtx: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            ever_retrans_out: 0,
            lost: 0,
        }
    }

    /// Segments sent and not cumulatively acknowledged (Linux `packets_out`).
    #[inline]
    pub fn packets_out(&self) -> u32 {
        self.rtx.len() as u32
    }

    /// SACKed segments, or duplicate ACKs without SACK (Linux `sacked_out`).
    #[inline]
    pub fn sacked_out(&self) -> u32 {
        self.sacked_out
    }

    /// Segments marked lost (Linux `lost_out`).
    #[inline]
    pub fn lost_out(&self) -> u32 {
        self.lost_out
    }

    /// Retransmissions in flight (Linux `retrans_out`).
    #[inline]
    pub fn retrans_out(&self) -> u32 {
        self.retrans_out
    }

    /// Segments ever marked lost, counting a lost retransmission again (Linux `tp->lost`,
    /// which `tcp_cwnd_reduction` compares before and after an ACK: `rs->losses`). Wraps.
    #[inline]
    pub fn lost(&self) -> u32 {
        self.lost
    }

    /// Segments in the queue that were ever retransmitted.
    #[inline]
    pub fn ever_retrans_out(&self) -> u32 {
        self.ever_retrans_out
    }

    /// Packets in flight as Linux counts them (`tcp_packets_in_flight`); `count_sacked` false
    /// leaves SACKed (or duplicate-ACKed) segments in flight.
    #[inline]
    pub fn in_flight(&self, count_sacked: bool) -> u32 {
        let sacked = if count_sacked { self.sacked_out } else { 0 };
        self.packets_out() + self.retrans_out - sacked - self.lost_out
    }

    /// Whether a lost segment waits to be retransmitted.
    #[inline]
    pub fn has_lost_to_resend(&self) -> bool {
        self.lost_out > self.retrans_out
    }

    /// The oldest segment.
    #[inline]
    pub fn head(&self) -> Option<&Seg> {
        self.rtx.front()
    }

    /// The segment at position `i` from the head.
    #[inline]
    pub fn seg(&self, i: usize) -> &Seg {
        &self.rtx[i]
    }

    /// Segments in the queue (same as [`Scoreboard::packets_out`]).
    #[inline]
    pub fn len(&self) -> usize {
        self.rtx.len()
    }

    /// Whether nothing is outstanding.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rtx.is_empty()
    }

    /// New data `[start, end)` went out at `now`, `delivered` segments having been delivered.
    #[inline]
    pub fn on_sent(&mut self, start: u64, end: u64, now: Nanos, delivered: u32) {
        debug_assert!(self.rtx.back().is_none_or(|b| b.end == start), "segments are contiguous");
        self.rtx.push_back(Seg { start, end, sent_at: now, delivered, marks: Marks::default() });
        self.check();
    }

    /// Retransmits the first lost segment whose retransmission is not in flight (Linux
    /// `tcp_xmit_retransmit_queue`), at `now`. Returns it.
    #[inline]
    pub fn retransmit_next_lost(&mut self, now: Nanos, delivered: u32) -> Option<Seg> {
        let seg = self.rtx.iter_mut().find(|s| s.marks.lost && !s.marks.retrans)?;
        if !seg.marks.ever_retrans {
            self.ever_retrans_out += 1;
        }
        seg.marks.retrans = true;
        seg.marks.ever_retrans = true;
        seg.sent_at = now;
        seg.delivered = delivered;
        self.retrans_out += 1;
        let seg = *seg;
        self.check();
        Some(seg)
    }

    /// A tail-loss probe sends the last segment again at `now` (no retransmission is counted in
    /// flight for it). Returns it.
    pub fn probe_last(&mut self, now: Nanos, delivered: u32) -> Option<Seg> {
        let seg = self.rtx.back_mut()?;
        if !seg.marks.ever_retrans {
            self.ever_retrans_out += 1;
        }
        seg.marks.ever_retrans = true;
        seg.sent_at = now;
        seg.delivered = delivered;
        let seg = *seg;
        self.check();
        Some(seg)
    }

    /// A cumulative ACK of everything below `ack`: removes those segments, calling `acked` on
    /// each (marks as they were). Returns how many. Without SACK, one of them is the segment
    /// the duplicate ACKs were about; the others leave the duplicate-ACK count (Linux
    /// `tcp_remove_reno_sacks`).
    #[inline]
    pub fn ack(&mut self, ack: u64, mut acked: impl FnMut(&Seg)) -> u32 {
        let mut n = 0;
        while self.rtx.front().is_some_and(|s| s.end <= ack) {
            let seg = self.rtx.pop_front().expect("front exists");
            if seg.marks.sacked {
                self.sacked_out -= 1;
            }
            if seg.marks.lost {
                self.lost_out -= 1;
            }
            if seg.marks.retrans {
                self.retrans_out -= 1;
            }
            if seg.marks.ever_retrans {
                self.ever_retrans_out -= 1;
            }
            acked(&seg);
            n += 1;
        }
        if !self.sack && n > 0 {
            self.sacked_out = self.sacked_out.saturating_sub(n - 1);
            self.clamp_reno();
        }
        self.check();
        n
    }

    /// The index of the first segment that starts at or above `s` (the queue's length if none).
    /// Nearly every segment is one MSS, so the index is interpolated and then walked a step or
    /// two: a binary search touches a cache line per probe, and at 500 x 500 all-to-all the
    /// queues are cold (it took 6 % of the run).
    #[inline]
    fn first_starting_at(&self, s: u64) -> usize {
        let (Some(first), Some(last)) = (self.rtx.front(), self.rtx.back()) else { return 0 };
        if s <= first.start {
            return 0;
        }
        if s > last.start {
            return self.rtx.len();
        }
        // first.start < s <= last.start < last.end, so the guess is below the length, and the
        // answer lies in 1..len.
        let mut i = self.interpolated(s, first.start, last.end);
        for _ in 0..4 {
            if self.rtx[i].start < s {
                i += 1;
            } else if self.rtx[i - 1].start >= s {
                i -= 1;
            } else {
                return i;
            }
        }
        self.rtx.partition_point(|seg| seg.start < s)
    }

    /// The index `s` would have if every segment between `start` and `end` (`start` < `end`)
    /// were the same size: where [`Scoreboard::first_starting_at`] starts its walk.
    #[inline]
    fn interpolated(&self, s: u64, start: u64, end: u64) -> usize {
        ((s - start) as u128 * self.rtx.len() as u128 / (end - start) as u128) as usize
    }

    /// Prefetches the segment the search for `s` will look at first, found from the sender's
    /// `snd_una` and `snd_nxt` (the queue's ends) without reading the queue itself.
    pub(crate) fn prefetch_guess(&self, s: u64, snd_una: u64, snd_nxt: u64) {
        if let Some(seg) = self.rtx.get(self.interpolated(s, snd_una, snd_nxt)) {
            crate::prefetch::prefetch(seg);
        }
    }

    /// SACK block `[s, e)`: marks the segments inside it SACKed (no longer lost, no
    /// retransmission in flight), calling `newly` on each that was not SACKed before. Returns
    /// how many were new.
    #[inline]
    pub fn sack_block(&mut self, s: u64, e: u64, mut newly: impl FnMut(&Seg)) -> u32 {
        debug_assert!(self.sack, "SACK blocks on a connection without SACK");
        let mut i = self.first_starting_at(s);
        let mut n = 0;
        while i < self.rtx.len() && self.rtx[i].end <= e {
            let seg = &mut self.rtx[i];
            if !seg.marks.sacked {
                seg.marks.sacked = true;
                self.sacked_out += 1;
                if std::mem::take(&mut seg.marks.lost) {
                    self.lost_out -= 1;
                }
                if std::mem::take(&mut seg.marks.retrans) {
                    self.retrans_out -= 1;
                }
                newly(seg);
                n += 1;
            }
            i += 1;
        }
        self.check();
        n
    }

    /// Without SACK, a duplicate ACK: one more segment has left the network (Linux
    /// `tcp_add_reno_sack`).
    pub fn reno_dupack(&mut self) {
        self.sacked_out += 1;
        self.clamp_reno();
        self.check();
    }

    /// Linux `tcp_check_reno_reordering`: no more duplicate ACKs than segments left in flight.
    fn clamp_reno(&mut self) {
        self.sacked_out = self.sacked_out.min(self.packets_out() - self.lost_out);
    }

    /// Marks segment `i` lost (RACK, RFC 6675, NewReno); `false` if it already was.
    #[inline]
    pub fn mark_lost(&mut self, i: usize) -> bool {
        let seg = &mut self.rtx[i];
        debug_assert!(!seg.marks.sacked, "a SACKed segment is not lost");
        if seg.marks.lost {
            return false;
        }
        seg.marks.lost = true;
        self.lost_out += 1;
        self.lost = self.lost.wrapping_add(1);
        self.check();
        true
    }

    /// The retransmission of segment `i` is lost too: it is due again (Linux
    /// `tcp_mark_skb_lost` on a retransmitted segment).
    pub fn retransmission_lost(&mut self, i: usize) {
        let seg = &mut self.rtx[i];
        debug_assert!(seg.marks.retrans && seg.marks.lost);
        seg.marks.retrans = false;
        self.retrans_out -= 1;
        self.lost = self.lost.wrapping_add(1);
        self.check();
    }

    /// Linux `tcp_undo_cwnd_reduction` with `unmark_loss`: no segment is lost any more; a
    /// retransmission in flight stays in flight (and counts in flight twice, as in Linux).
    pub fn unmark_lost(&mut self) {
        for seg in self.rtx.iter_mut() {
            seg.marks.lost = false;
        }
        self.lost_out = 0;
        self.check();
    }

    /// Marks the head lost unless it is SACKed or already lost (Linux `tcp_mark_head_lost`).
    pub fn mark_head_lost(&mut self) {
        if self.rtx.front().is_some_and(|s| !s.marks.sacked && !s.marks.lost) {
            self.mark_lost(0);
        }
    }

    /// RFC 6675 IsLost: every segment with at least `dupthresh` SACKed segments above it.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u32) {
        let mut sacked_above = self.sacked_out;
        for seg in self.rtx.iter_mut() {
            if sacked_above < dupthresh {
                break;
            }
            if seg.marks.sacked {
                sacked_above -= 1;
            } else if !seg.marks.lost {
                seg.marks.lost = true;
                self.lost_out += 1;
                self.lost = self.lost.wrapping_add(1);
            }
        }
        self.check();
    }

    /// Linux `tcp_timeout_mark_lost`: after a retransmission timeout no retransmission is in
    /// flight, and every segment not SACKed is lost except those `spared(i, seg)` (sent too
    /// recently to tell, with RACK). Without SACK the duplicate-ACK count is reset. Returns how
    /// many retransmissions were in flight and are now found lost (Linux `TCPLostRetransmit`).
    pub fn timeout_mark_lost(&mut self, mut spared: impl FnMut(usize, &Seg) -> bool) -> u64 {
        if !self.sack {
            self.sacked_out = 0;
        }
        let mut lost_retransmits = 0;
        self.lost_out = 0;
        self.retrans_out = 0;
        for (i, seg) in self.rtx.iter_mut().enumerate() {
            let spare = spared(i, seg);
            let m = &mut seg.marks;
            if !spare && m.lost && m.retrans && !m.sacked {
                lost_retransmits += 1;
            }
            m.retrans = false;
            if spare {
                m.lost = false;
            } else if !m.sacked {
                m.lost = true;
                self.lost_out += 1;
            }
        }
        self.check();
        lost_retransmits
    }

    /// Checks the invariants when debug assertions are on (after every operation).
    #[inline]
    fn check(&self) {
        debug_assert_eq!(self.violation(), None, "scoreboard invariant broken: {self:?}");
    }

    /// The first invariant that does not hold, if any: the counters equal the marks; SACKed
    /// segments are neither lost nor retransmitted; the queue is contiguous; in flight is never negative.
    pub fn violation(&self) -> Option<&'static str> {
        let count = |f: fn(&Marks) -> bool| self.rtx.iter().filter(|s| f(&s.marks)).count() as u32;
        let sacked_marks = if self.sack { self.sacked_out } else { 0 };
        let contiguous = self.rtx.iter().zip(self.rtx.iter().skip(1)).all(|(a, b)| a.end == b.start);
        [
            (self.lost_out != count(|m| m.lost), "lost_out differs from the lost marks"),
            (self.retrans_out != count(|m| m.retrans), "retrans_out differs from the retransmission marks"),
            (self.ever_retrans_out != count(|m| m.ever_retrans), "ever_retrans_out differs from its marks"),
            (sacked_marks != count(|m| m.sacked), "sacked_out differs from the SACK marks"),
            (self.rtx.iter().any(|s| s.marks.sacked && (s.marks.lost || s.marks.retrans)), "a SACKed segment is lost"),
            (!contiguous || self.rtx.iter().any(|s| s.start >= s.end), "the queue is not contiguous"),
            (self.sacked_out + self.lost_out > self.packets_out() + self.retrans_out, "in flight is negative"),
        ]
        .into_iter()
        .find_map(|(broken, what)| broken.then_some(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new(true);
        for i in 0..n {
            b.on_sent(i * 10, i * 10 + 10, i, 0);
        }
        b
    }

    #[test]
    fn a_sacked_retransmission_leaves_flight_and_the_lost_count() {
        let mut b = board(4);
        b.mark_lost(1);
        assert!(b.has_lost_to_resend());
        let r = b.retransmit_next_lost(100, 0).unwrap();
        assert_eq!((r.start, r.sent_at), (10, 100));
        assert_eq!((b.lost_out(), b.retrans_out(), b.in_flight(true)), (1, 1, 4));
        assert_eq!(b.sack_block(10, 20, |_| {}), 1);
        assert_eq!((b.lost_out(), b.retrans_out(), b.sacked_out(), b.in_flight(true)), (0, 0, 1, 3));
        assert_eq!(b.ack(20, |_| {}), 2);
        assert_eq!((b.packets_out(), b.sacked_out(), b.ever_retrans_out()), (2, 0, 0));
    }

    #[test]
    fn a_timeout_finds_lost_retransmissions_and_spares_what_it_is_told() {
        let mut b = board(4);
        b.mark_lost(0);
        b.retransmit_next_lost(50, 0);
        b.sack_block(20, 30, |_| {});
        let found = b.timeout_mark_lost(|i, _| i == 3);
        assert_eq!(found, 1, "the head's retransmission was in flight");
        assert_eq!((b.lost_out(), b.retrans_out(), b.in_flight(true)), (2, 0, 1));
    }

    #[test]
    fn reno_counts_duplicate_acks_but_never_more_than_are_in_flight() {
        let mut b = Scoreboard::new(false);
        for i in 0..3 {
            b.on_sent(i * 10, i * 10 + 10, 0, 0);
        }
        b.reno_dupack();
        b.reno_dupack();
        b.mark_head_lost();
        assert_eq!((b.sacked_out(), b.lost_out(), b.in_flight(true)), (2, 1, 0));
        b.reno_dupack();
        assert_eq!(b.sacked_out(), 2, "no more than packets_out - lost_out");
        assert_eq!(b.ack(10, |_| {}), 1);
        assert_eq!((b.packets_out(), b.sacked_out(), b.lost_out()), (2, 2, 0), "the one ACKed was the lost one");
        assert_eq!(b.ack(30, |_| {}), 2);
        assert_eq!(b.sacked_out(), 0, "all duplicate ACKs were about segments now acknowledged");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Send,
        Ack(u8),
        Sack(u8, u8),
        MarkLost(u8),
        Retransmit,
        RetransmissionLost(u8),
        Probe,
        Timeout(u8),
        LostBySack(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Send),
            2 => any::<u8>().prop_map(Op::Ack),
            3 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Op::Sack(a, b)),
            2 => any::<u8>().prop_map(Op::MarkLost),
            2 => Just(Op::Retransmit),
            1 => any::<u8>().prop_map(Op::RetransmissionLost),
            1 => Just(Op::Probe),
            1 => any::<u8>().prop_map(Op::Timeout),
            1 => (1u8..4).prop_map(Op::LostBySack),
        ]
    }

    proptest! {
        /// The interpolated search finds what a binary search finds, whatever the segments'
        /// sizes (MSS-sized ones with short ends of messages between, or anything else).
        #[test]
        fn the_interpolated_search_agrees_with_a_binary_search(
            sizes in proptest::collection::vec(prop_oneof![3 => Just(9000u64), 1 => 1u64..9000], 1..80),
            head in 0u64..20_000,
            probes in proptest::collection::vec((any::<prop::sample::Index>(), -1i64..=1, 0u64..800_000), 1..20),
        ) {
            let mut b = Scoreboard::new(true);
            let mut next = head;
            for len in sizes {
                b.on_sent(next, next + len, 0, 0);
                next += len;
            }
            // A segment's start, a byte either side of it, and anywhere.
            let at = |(k, d, anywhere): &(prop::sample::Index, i64, u64)| {
                [b.seg(k.index(b.len())).start.saturating_add_signed(*d), *anywhere]
            };
            for s in probes.iter().flat_map(at) {
                prop_assert_eq!(b.first_starting_at(s), b.rtx.partition_point(|seg| seg.start < s), "s = {}", s);
            }
        }

        /// Whatever happens to a SACK connection's segments, the counters equal the marks and
        /// in flight stays within [0, packets_out + retrans_out] (`check` runs after every
        /// operation; this drives it through arbitrary sequences).
        #[test]
        fn counters_follow_the_marks(ops in proptest::collection::vec(op(), 1..200)) {
            let mut b = Scoreboard::new(true);
            let (mut next, mut now) = (0u64, 0u64);
            for op in ops {
                now += 1;
                let n = b.len();
                let pick = |k: u8| k as usize % n.max(1);
                match op {
                    Op::Send => { b.on_sent(next, next + 10, now, 0); next += 10; }
                    Op::Ack(k) if n > 0 => { let end = b.seg(pick(k)).end; b.ack(end, |_| {}); }
                    Op::Sack(a, c) if n > 0 => {
                        let (i, j) = (pick(a).min(pick(c)), pick(a).max(pick(c)));
                        b.sack_block(b.seg(i).start, b.seg(j).end, |_| {});
                    }
                    Op::MarkLost(k) if n > 0 && !b.seg(pick(k)).marks().sacked => { b.mark_lost(pick(k)); }
                    Op::Retransmit => { b.retransmit_next_lost(now, 0); }
                    Op::RetransmissionLost(k) if n > 0 && b.seg(pick(k)).marks().retrans => b.retransmission_lost(pick(k)),
                    Op::Probe => { b.probe_last(now, 0); }
                    Op::Timeout(k) => { b.timeout_mark_lost(|i, _| i > 0 && i % 3 == k as usize % 3); }
                    Op::LostBySack(t) => b.mark_lost_by_sack(t as u32),
                    _ => {}
                }
                prop_assert_eq!(b.violation(), None);
                prop_assert!(b.in_flight(true) <= b.packets_out() + b.retrans_out());
                prop_assert!(b.retrans_out() <= b.lost_out());
            }
        }
    }
}
