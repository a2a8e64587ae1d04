//! The receiving half of a TCP endpoint: cumulative and selective acknowledgements, delayed
//! ACKs, and Linux's quick-ACK mode.

use super::ecn::{Echo, EchoAction, EchoMode, HeaderBits};
use super::TcpParams;
use daqnet_core::scenario::CongestionControl;
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

/// Linux `TCP_DELACK_MAX`, ns: the longest a delayed ACK waits once its timeout has grown.
const DELACK_MAX_NS: Nanos = 200_000_000;

/// Linux's `max_ato` in `tcp_send_delayed_ack` for a connection that is neither interactive nor
/// sent a short segment (`HZ / 2`), ns.
const DELACK_BULK_MAX_NS: Nanos = 500_000_000;

/// What the delayed-ACK timeout reads of the connection's sending half: its smoothed RTT, if
/// measured, and its retransmission timeout.
#[derive(Debug, Clone, Copy)]
pub struct RttBounds {
    /// Smoothed RTT, ns.
    pub srtt: Option<Nanos>,
    /// Retransmission timeout, ns.
    pub rto: Nanos,
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
    /// The timestamp the next ACK echoes (Linux `ts_recent`).
    ts_recent: u32,
    urgency: AckUrgency,
    delack_at: Option<Nanos>,
    /// The delayed-ACK timeout (Linux `icsk_ack.ato`): it starts at the setting (Linux
    /// `TCP_ATO_MIN`), doubles when a delayed ACK's timer fires, and follows the gaps between
    /// segments (`tcp_event_data_recv`); an RTT below the setting keeps what it adds unused.
    ato: Nanos,
    quick: u32,
    mss: u32,
    sack: bool,
    delayed_ack: bool,
    delack_ns: Nanos,
    tick: super::tick::TimerTick,
    quickack: u32,
    /// Interactive mode may start ([`TcpParams::pingpong`]).
    pingpong: bool,
    /// Interactive (Linux `inet_csk_in_pingpong_mode`).
    interactive: bool,
    /// Jiffy of the last in-order data received (Linux `icsk_ack.lrcvtime`).
    lrcvtime: Option<u64>,
    /// Short segments received since the last ACK, at most 2 (Linux `ICSK_ACK_PUSHED`,
    /// `ICSK_ACK_PUSHED2`).
    pushed: u8,
    /// How CE marks are echoed, when ECN is negotiated (boxed: a connection's state is read
    /// at every arrival, and most runs have no ECN).
    echo: Option<Box<Echo>>,
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
            ts_recent: 0,
            urgency: AckUrgency::None,
            delack_at: None,
            ato: p.delayed_ack_ns,
            quick: p.quickack,
            mss: p.mss,
            sack: p.sack,
            delayed_ack: p.delayed_ack,
            delack_ns: p.delayed_ack_ns,
            tick: p.tick,
            quickack: p.quickack,
            pingpong: p.pingpong,
            interactive: false,
            lrcvtime: None,
            pushed: 0,
            echo: p.ecn.then(|| {
                Box::new(Echo::new(if p.cc == CongestionControl::Dctcp { EchoMode::Dctcp } else { EchoMode::Classic }))
            }),
        }
    }

    /// Whether the segments it sends now carry ECE.
    pub fn ece(&self) -> bool {
        self.echo.as_ref().is_some_and(|e| e.ece())
    }

    /// The ACK DCTCP's echo asks to send before anything else, if any: (acknowledgement
    /// number, ECE). Unlike other ACKs it leaves the delayed-ACK state alone
    /// (`tcp_event_ack_sent` skips an ACK below `rcv_nxt`).
    pub fn take_prior_ack(&mut self) -> Option<(u64, bool)> {
        self.echo.as_mut().and_then(|e| e.prior_ack.take())
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
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.delack_at
    }

    /// The timestamp the next ACK echoes.
    pub fn ts_recent(&self) -> u32 {
        self.ts_recent
    }

    /// A segment starting at `start` carried timestamp `tsval` (Linux `tcp_replace_ts_recent`):
    /// it becomes the one to echo if it starts at or below what the last ACK acknowledged, so
    /// that an ACK echoes the segment that made it due, not later out-of-order ones (RFC 7323
    /// §4.3), and the echo never goes back in time (PAWS).
    pub fn on_timestamp(&mut self, start: u64, tsval: u32) {
        if start <= self.rcv_wup && (tsval.wrapping_sub(self.ts_recent) as i32) >= 0 {
            self.ts_recent = tsval;
        }
    }

    /// A segment carrying `[start, end)` arrived at `now`; `rtt`: the connection's RTT as its
    /// sending half measures it.
    pub fn on_segment(&mut self, now: Nanos, start: u64, end: u64, rtt: RttBounds) {
        self.on_data(now, start, end, HeaderBits::default(), rtt);
    }

    /// [`Receiver::on_segment`] with the segment's ECN bits: CWR ends a classic echo (and is
    /// ACKed at once), and the codepoint of new data feeds the echo (Linux `tcp_data_queue`'s
    /// `tcp_ecn_accept_cwr`, then `tcp_ecn_check_ce` on new data).
    pub fn on_data(&mut self, now: Nanos, start: u64, end: u64, bits: HeaderBits, rtt: RttBounds) {
        let Some(echo) = self.echo.as_mut() else {
            self.take_segment(now, start, end, rtt);
            return;
        };
        let cwr = echo.accept_cwr(bits.cwr());
        let ack_delayed = self.delack_at.is_some();
        if !self.take_segment(now, start, end, rtt) {
            return;
        }
        let echo = self.echo.as_mut().expect("checked above");
        match echo.check_ce(bits.codepoint(), self.rcv_nxt, ack_delayed) {
            EchoAction::None => {}
            EchoAction::QuickAck => {
                // `tcp_enter_quickack_mode(sk, 2)`: this segment's ACK goes now and takes one.
                self.quick = self.quick.max(1);
                self.interactive = false;
                self.ato = self.delack_ns;
                self.urgency = AckUrgency::Now;
            }
            EchoAction::StateChanged { prior } => {
                echo.prior_ack = prior;
                self.urgency = AckUrgency::Now;
            }
        }
        if cwr {
            self.urgency = AckUrgency::Now;
        }
    }

    /// The data of a segment; returns false for a duplicate (nothing new).
    fn take_segment(&mut self, now: Nanos, start: u64, end: u64, rtt: RttBounds) -> bool {
        if end <= self.rcv_nxt || self.ooo.iter().any(|&(s, e)| s <= start && end <= e) {
            // A retransmission of data we have: acknowledge at once (Linux forces an ACK) and
            // report the duplicate.
            self.dsack = Some((start, end));
            // `tcp_enter_quickack_mode` also ends interactive mode.
            self.interactive = false;
            self.ack_now_quick();
            return false;
        }
        if start > self.rcv_nxt {
            self.insert_ooo(start, end);
            // Linux before 4.18 entered quick-ACK mode here too; 6.x ACKs at once without it and
            // compresses SACKs after three (`__tcp_ack_snd_check`). Kept on purpose: made like
            // 6.x, the simulator moves further from the testbed (docs/sim.md, "Receiver").
            self.ack_now_quick();
            return true;
        }
        if start < self.rcv_nxt {
            // Linux `tcp_data_queue`, a partial packet (seq < rcv_nxt < end_seq): the part
            // already received is reported as a duplicate.
            self.dsack = Some((start, self.rcv_nxt));
        }
        let had_hole = !self.ooo.is_empty();
        // `tcp_event_data_recv` and its `tcp_measure_rcv_mss`.
        let jiffies = self.tick.jiffies(now);
        if let Some(last) = self.lrcvtime {
            self.follow_gap((jiffies - last) * self.tick.jiffy_ns(), rtt.rto);
        }
        self.lrcvtime = Some(jiffies);
        if end - start < self.mss as u64 {
            self.pushed = (self.pushed + 1).min(2);
        }
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
        } else if self.quick > 0 && !self.interactive {
            // `tcp_in_quickack_mode`: never while interactive.
            self.quick -= 1;
            self.urgency = AckUrgency::Now;
        } else if self.urgency == AckUrgency::None {
            self.urgency = AckUrgency::Delayed;
            self.delack_at = Some(self.tick.fires_at(now, self.delack_timeout(rtt.srtt)));
        }
        true
    }

    /// The application read a complete message whose last segment was `last_len` bytes: like
    /// Linux's `__tcp_cleanup_rbuf`, ACK at once if more than a segment is unacknowledged or the
    /// message ended with a short (pushed) segment; while interactive, only if two short
    /// segments arrived since the last ACK (`ICSK_ACK_PUSHED2`).
    pub fn on_app_read(&mut self, last_len: u32) {
        let pushed = if self.interactive { self.pushed >= 2 } else { last_len < self.mss };
        if self.urgency == AckUrgency::Delayed && (self.rcv_nxt - self.rcv_wup > self.mss as u64 || pushed) {
            self.urgency = AckUrgency::Now;
        }
    }

    /// This end sent data at `now` (Linux `tcp_event_data_sent`): within the delayed-ACK time
    /// of the data it last received, it turns interactive.
    pub fn on_data_sent(&mut self, now: Nanos) {
        let ato = self.delack_ns.div_ceil(self.tick.jiffy_ns());
        if self.pingpong && self.lrcvtime.is_some_and(|t| self.tick.jiffies(now) - t < ato) {
            self.interactive = true;
        }
    }

    /// The delayed-ACK timer fired at `now`; `rto`: the connection's retransmission timeout.
    pub fn on_timer(&mut self, now: Nanos, rto: Nanos) {
        if self.delack_at.is_some_and(|d| d <= now) {
            self.delack_at = None;
            if self.urgency == AckUrgency::Delayed {
                self.urgency = AckUrgency::Now;
                // `tcp_delack_timer_handler`: a delayed ACK missed ends interactive mode and
                // resets the timeout; otherwise the timeout doubles, up to the RTO.
                if self.interactive {
                    self.interactive = false;
                    self.ato = self.delack_ns;
                } else {
                    self.ato = (2 * self.ato).min(rto).max(self.delack_ns);
                }
            }
        }
    }

    /// Linux `tcp_event_data_recv`: segments `gap` ns apart pull the delayed-ACK timeout
    /// towards the gap (close ones back to the minimum), never above the RTO.
    fn follow_gap(&mut self, gap: Nanos, rto: Nanos) {
        if gap <= self.delack_ns / 2 {
            self.ato = self.ato / 2 + self.delack_ns / 2;
        } else if gap < self.ato {
            self.ato = (self.ato / 2 + gap).min(rto).max(self.delack_ns);
        }
    }

    /// Linux `tcp_send_delayed_ack`: the timeout, once grown, is bounded by the RTT (at least
    /// the minimum), by 200 ms when interactive or after a short segment and 500 ms otherwise,
    /// and by `TCP_DELACK_MAX`.
    fn delack_timeout(&self, srtt: Option<Nanos>) -> Nanos {
        if self.ato <= self.delack_ns {
            return self.delack_ns;
        }
        let mut max_ato = if self.interactive || self.pushed > 0 { DELACK_MAX_NS } else { DELACK_BULK_MAX_NS };
        if let Some(srtt) = srtt {
            max_ato = max_ato.min(srtt.max(self.delack_ns));
        }
        self.ato.min(max_ato).min(DELACK_MAX_NS.max(self.delack_ns))
    }

    /// An ACK (pure or on a data segment) carrying [`Receiver::ack_fields`] was sent.
    pub fn on_ack_sent(&mut self) {
        self.rcv_wup = self.rcv_nxt;
        self.pushed = 0;
        self.dsack = None;
        self.urgency = AckUrgency::None;
        self.delack_at = None;
    }

    /// Linux `tcp_enter_quickack_mode`: ACK now, the next segments too, and the delayed-ACK
    /// timeout back to its minimum.
    fn ack_now_quick(&mut self) {
        self.urgency = AckUrgency::Now;
        self.ato = self.delack_ns;
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

    /// A receiver that has sent nothing yet: no RTT, the initial RTO.
    const NO_RTT: RttBounds = RttBounds { srtt: None, rto: SEC };
    const SEC: Nanos = 1_000_000_000;

    fn fields(r: &Receiver) -> (u64, Vec<(u64, u64)>) {
        let mut b = [(0, 0); 3];
        let (ack, n) = r.ack_fields(&mut b);
        assert_eq!(n, r.sack_blocks());
        (ack, b[..n].to_vec())
    }

    #[test]
    fn a_duplicate_segment_is_reported_first_as_a_dsack_once() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000, NO_RTT);
        r.on_segment(1, 2000, 3000, NO_RTT);
        r.on_ack_sent();
        r.on_segment(2, 0, 1000, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now);
        assert_eq!(fields(&r), (1000, vec![(0, 1000), (2000, 3000)]), "below the ACK: a D-SACK");
        r.on_ack_sent();
        assert_eq!(fields(&r), (1000, vec![(2000, 3000)]), "reported once");
        r.on_segment(3, 2000, 3000, NO_RTT);
        assert_eq!(fields(&r), (1000, vec![(2000, 3000), (2000, 3000)]), "inside a SACK block: a D-SACK");
    }

    #[test]
    fn a_partly_duplicate_segment_reports_its_old_part_and_delivers_the_rest() {
        let mut r = rx(1);
        r.on_segment(0, 0, 2000, NO_RTT);
        r.on_ack_sent();
        r.on_segment(1, 1000, 3000, NO_RTT);
        assert_eq!(fields(&r), (3000, vec![(1000, 2000)]), "tcp_data_queue's partial packet");
        r.on_ack_sent();
        assert_eq!(fields(&r), (3000, vec![]));
    }

    fn ecn_rx(cc: CongestionControl) -> Receiver {
        let c =
            TcpConfig { quickack_segments: 0, timer_hz: 0, ecn: true, congestion_control: cc, ..Default::default() };
        Receiver::new(&TcpParams::from_config(&c, 1000))
    }

    const ECT: HeaderBits = HeaderBits::new(true, false, false);

    #[test]
    fn dctcp_acks_a_change_of_ce_state_at_once_after_flushing_the_delayed_ack_with_the_old_state() {
        let mut r = ecn_rx(CongestionControl::Dctcp);
        r.on_data(0, 0, 1000, ECT, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Delayed, "one segment: the ACK waits");
        // A marked segment: the ACK of [0, 1000) goes first, without ECE; then this one's, with.
        r.on_data(1, 1000, 2000, ECT.marked(), NO_RTT);
        assert_eq!(r.take_prior_ack(), Some((1000, false)));
        assert_eq!((r.urgency(), r.ece()), (AckUrgency::Now, true));
        r.on_ack_sent();
        // Marked segments while the state is 1: ACKs are delayed as usual, and carry ECE.
        r.on_data(2, 2000, 3000, ECT.marked(), NO_RTT);
        assert_eq!((r.urgency(), r.ece(), r.take_prior_ack()), (AckUrgency::Delayed, true, None));
        // Unmarked again: the delayed ACK (up to 3000) goes with ECE, then this one's without.
        r.on_data(3, 3000, 4000, ECT, NO_RTT);
        assert_eq!(r.take_prior_ack(), Some((3000, true)));
        assert_eq!((r.urgency(), r.ece()), (AckUrgency::Now, false));
    }

    #[test]
    fn classic_ecn_echoes_until_cwr_and_acks_the_first_mark_and_the_cwr_at_once() {
        let mut r = ecn_rx(CongestionControl::Cubic);
        r.on_data(0, 0, 1000, ECT, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        r.on_data(1, 1000, 2000, ECT.marked(), NO_RTT);
        assert_eq!((r.urgency(), r.ece(), r.take_prior_ack()), (AckUrgency::Now, true, None));
        r.on_ack_sent();
        r.on_data(2, 2000, 3000, ECT, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now, "quick-ACK mode: the next segment too");
        assert!(r.ece(), "until CWR");
        r.on_ack_sent();
        r.on_data(3, 3000, 4000, HeaderBits::new(true, false, true), NO_RTT);
        assert_eq!((r.urgency(), r.ece()), (AckUrgency::Now, false), "CWR: ACKed at once, the echo ends");
        // A duplicate is not read for its codepoint (Linux checks CE on new data only).
        r.on_ack_sent();
        r.on_data(4, 0, 1000, ECT.marked(), NO_RTT);
        assert!(!r.ece());
    }

    fn rx(quick: u32) -> Receiver {
        let c = TcpConfig { quickack_segments: quick, timer_hz: 0, ..Default::default() };
        Receiver::new(&TcpParams::from_config(&c, 1000))
    }

    #[test]
    fn every_second_full_segment_is_acked_at_once() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        assert_eq!(r.poll_timeout(), Some(40_000_000));
        r.on_segment(10, 1000, 2000, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now);
        r.on_ack_sent();
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn delayed_ack_timer_is_capped_below_min_rto() {
        let c = TcpConfig { min_rto_ns: 5_000_000, quickack_segments: 0, timer_hz: 0, ..Default::default() };
        let mut r = Receiver::new(&TcpParams::from_config(&c, 1000));
        r.on_segment(0, 0, 1000, NO_RTT);
        assert_eq!(r.poll_timeout(), Some(2_500_000));
    }

    #[test]
    fn out_of_order_data_is_sacked_most_recent_first_and_acked_now() {
        let mut r = rx(0);
        r.on_segment(0, 0, 1000, NO_RTT);
        r.on_ack_sent();
        r.on_segment(1, 2000, 3000, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now);
        assert_eq!(fields(&r), (1000, vec![(2000, 3000)]));
        r.on_ack_sent();
        r.on_segment(2, 4000, 5000, NO_RTT);
        r.on_segment(3, 3000, 4000, NO_RTT);
        assert_eq!(fields(&r), (1000, vec![(2000, 5000)]), "adjacent blocks merge");
        r.on_segment(4, 6000, 7000, NO_RTT);
        assert_eq!(fields(&r), (1000, vec![(6000, 7000), (2000, 5000)]));
        r.on_ack_sent();
        r.on_segment(5, 1000, 2000, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now, "filling the hole is acknowledged at once");
        assert_eq!(fields(&r), (5000, vec![(6000, 7000)]));
    }

    const MS: Nanos = 1_000_000;

    /// A receiver (with ping-pong mode or not) that got a short segment at 0, sent data at
    /// `reply_at` and has just sent its ACK.
    fn after_a_reply(pingpong: bool, reply_at: Nanos) -> Receiver {
        let c = TcpConfig { pingpong, timer_hz: 0, ..Default::default() };
        let mut r = Receiver::new(&TcpParams::from_config(&c, 1000));
        r.on_segment(0, 0, 300, NO_RTT);
        r.on_data_sent(reply_at);
        r.on_ack_sent();
        r
    }

    /// `tcp_event_data_sent`: data sent within the delayed-ACK time (`ato`, 40 ms) of the last
    /// data received turns the end interactive; then `__tcp_cleanup_rbuf` does not acknowledge
    /// a short segment when it is read: the ACK waits for the next data or the timer.
    #[test]
    fn a_reply_within_the_delayed_ack_time_makes_the_end_hold_a_short_segments_ack() {
        let mut r = after_a_reply(true, 39 * MS);
        r.on_segment(50 * MS, 300, 600, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Delayed, "no quick ACK while interactive");
        r.on_app_read(300);
        assert_eq!(r.urgency(), AckUrgency::Delayed, "held for the next data or the timer");
        assert_eq!(r.poll_timeout(), Some(90 * MS));
    }

    #[test]
    fn a_reply_after_the_delayed_ack_time_leaves_the_end_as_it_was() {
        let mut r = after_a_reply(true, 41 * MS);
        r.on_segment(50 * MS, 300, 600, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Now, "still in quick-ACK mode");
        let mut off = after_a_reply(false, MS);
        off.quick = 0;
        off.on_segment(50 * MS, 300, 600, NO_RTT);
        off.on_app_read(300);
        assert_eq!(off.urgency(), AckUrgency::Now, "without ping-pong mode: acknowledged when read");
    }

    /// `tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED2` on a second short segment before an ACK, and
    /// `__tcp_cleanup_rbuf` acknowledges it when read, interactive or not.
    #[test]
    fn two_short_segments_since_the_last_ack_are_acknowledged_when_read() {
        let mut r = after_a_reply(true, MS);
        r.on_segment(2 * MS, 300, 600, NO_RTT);
        r.on_app_read(300);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        r.on_segment(3 * MS, 600, 900, NO_RTT);
        r.on_app_read(300);
        assert_eq!(r.urgency(), AckUrgency::Now);
    }

    /// `tcp_delack_timer_handler`: a delayed ACK the timer had to send ends interactive mode,
    /// and `tcp_enter_quickack_mode` (a duplicate segment) does too.
    #[test]
    fn the_delayed_ack_timer_or_a_duplicate_segment_ends_interactive_mode() {
        for end_it in ["timer", "duplicate"] {
            let mut r = after_a_reply(true, MS);
            r.on_segment(2 * MS, 300, 600, NO_RTT);
            match end_it {
                "timer" => r.on_timer(42 * MS, SEC),
                _ => r.on_segment(43 * MS, 0, 300, NO_RTT),
            }
            assert_eq!(r.urgency(), AckUrgency::Now, "{end_it}");
            r.on_ack_sent();
            r.quick = 0;
            r.on_segment(44 * MS, 600, 900, NO_RTT);
            r.on_app_read(300);
            assert_eq!(r.urgency(), AckUrgency::Now, "{end_it}: no longer interactive");
        }
    }

    #[test]
    fn short_last_segment_of_a_message_is_acked_when_read() {
        let mut r = rx(0);
        r.on_segment(0, 0, 300, NO_RTT);
        assert_eq!(r.urgency(), AckUrgency::Delayed);
        r.on_app_read(300);
        assert_eq!(r.urgency(), AckUrgency::Now);
    }
    #[test]
    fn a_missed_delayed_ack_doubles_the_timeout_up_to_the_rtt_bound() {
        // Linux tcp_delack_timer_handler and tcp_send_delayed_ack: segments 100 ms apart on a
        // path with a 100 ms RTT (crates/conform/scripts/delayed-ack-ato-grows.pkt).
        let mut r = rx(0);
        let path = RttBounds { srtt: Some(100 * MS), rto: 300 * MS };
        r.on_segment(0, 0, 1000, path);
        assert_eq!(r.poll_timeout(), Some(40 * MS), "the minimum first");
        r.on_timer(40 * MS, path.rto);
        r.on_ack_sent();
        r.on_segment(100 * MS, 1000, 2000, path);
        assert_eq!(r.poll_timeout(), Some(180 * MS), "doubled: 80 ms");
        r.on_timer(180 * MS, path.rto);
        r.on_ack_sent();
        r.on_segment(300 * MS, 2000, 3000, path);
        assert_eq!(r.poll_timeout(), Some(400 * MS), "160 ms, held to the RTT");
        r.on_ack_sent();
        // Segments close together pull it back towards the minimum.
        r.on_segment(305 * MS, 3000, 4000, path);
        r.on_ack_sent();
        r.on_segment(310 * MS, 4000, 5000, path);
        assert_eq!(r.poll_timeout(), Some(380 * MS), "5 ms gaps: 160 / 2 + 20 = 100, then 70");
    }
}
