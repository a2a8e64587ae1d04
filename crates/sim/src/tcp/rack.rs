//! RACK: time-based loss detection (RFC 8985, as Linux's `tcp_recovery.c`).
//!
//! RACK remembers the most recently *sent* segment that has been delivered (cumulatively
//! acknowledged or SACKed). A segment sent before it that is still missing once its own RTT
//! plus a reordering window has passed is lost. Unlike the duplicate-ACK rule this also finds
//! a lost retransmission, which under incast is what otherwise ends in a timeout.

use daqnet_core::Nanos;

/// RACK state of one sender.
#[derive(Debug, Clone)]
pub struct Rack {
    /// Send time of the most recently sent delivered segment, ns.
    xmit_ts: Nanos,
    /// Its end sequence number (orders segments sent at the same instant).
    end_seq: u64,
    /// RTT measured on the latest delivered segment, ns.
    rtt: Nanos,
    /// A delivery moved the state since loss detection last ran.
    advanced: bool,
    /// Smallest RTT seen on the connection, ns (`Nanos::MAX`: none yet).
    min_rtt: Nanos,
}

impl Default for Rack {
    fn default() -> Self {
        Rack { xmit_ts: 0, end_seq: 0, rtt: 0, advanced: false, min_rtt: Nanos::MAX }
    }
}

/// Whether a segment sent at `t1` ending at `s1` was sent after one sent at `t2` ending at `s2`.
fn sent_after(t1: Nanos, s1: u64, t2: Nanos, s2: u64) -> bool {
    t1 > t2 || (t1 == t2 && s1 > s2)
}

impl Rack {
    /// An RTT sample (ns) from any source: keeps the connection's minimum.
    pub fn on_rtt(&mut self, rtt: Nanos) {
        self.min_rtt = self.min_rtt.min(rtt);
    }

    /// Smallest RTT seen, ns, if any.
    pub fn min_rtt(&self) -> Option<Nanos> {
        (self.min_rtt != Nanos::MAX).then_some(self.min_rtt)
    }

    /// A segment last sent at `sent_at` and ending at `end_seq` was delivered at `now`. A
    /// retransmitted segment delivered sooner than the minimum RTT is skipped: the ACK was
    /// probably for the original (Linux `tcp_rack_advance`).
    pub fn on_delivered(&mut self, now: Nanos, sent_at: Nanos, end_seq: u64, retransmitted: bool) {
        let rtt = now.saturating_sub(sent_at);
        if retransmitted && rtt < self.min_rtt {
            return;
        }
        self.rtt = rtt;
        self.advanced = true;
        if sent_after(sent_at, end_seq, self.xmit_ts, self.end_seq) {
            self.xmit_ts = sent_at;
            self.end_seq = end_seq;
        }
    }

    /// Makes the next loss detection run (Linux sets `rack.advanced` when it undoes a window
    /// reduction, to re-examine the segments it no longer thinks lost).
    pub fn force_advanced(&mut self) {
        self.advanced = true;
    }

    /// Whether a delivery happened since the last call (then loss detection should run).
    pub fn take_advanced(&mut self) -> bool {
        std::mem::take(&mut self.advanced)
    }

    /// The reordering window, ns (Linux `tcp_rack_reo_wnd`). With no reordering seen: zero
    /// during recovery or once `reordering` segments are SACKed (be as quick as the
    /// duplicate-ACK rule). Otherwise a quarter of the minimum RTT, at most the smoothed RTT.
    pub fn reo_wnd(&self, reord_seen: bool, in_recovery: bool, sacked_out: u32, reordering: u32, srtt: Nanos) -> Nanos {
        if !reord_seen && (in_recovery || sacked_out >= reordering) {
            return 0;
        }
        self.min_rtt().map_or(0, |m| (m / 4).min(srtt))
    }

    /// Whether a segment sent at `sent_at` ending at `end_seq` was sent before the most recently
    /// sent delivered one (only those can be declared lost).
    pub fn predates_delivered(&self, sent_at: Nanos, end_seq: u64) -> bool {
        sent_after(self.xmit_ts, self.end_seq, sent_at, end_seq)
    }

    /// Time left before a segment sent at `sent_at` counts as lost, ns; zero or less: lost now.
    pub fn remaining(&self, now: Nanos, sent_at: Nanos, reo_wnd: Nanos) -> i64 {
        (sent_at + self.rtt + reo_wnd) as i64 - now as i64
    }

    /// Whether a segment sent at `sent_at` is too recent to be declared lost by a timeout
    /// (Linux `tcp_timeout_mark_lost` spares those still inside their RACK window).
    pub fn recently_sent(&self, now: Nanos, sent_at: Nanos) -> bool {
        self.remaining(now, sent_at, 0) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_its_rtt_plus_the_window() {
        let mut r = Rack::default();
        r.on_rtt(100);
        // Segment A ends at 1000, sent at t=0; B ends at 2000, sent at t=10, delivered at t=110.
        r.on_delivered(110, 10, 2000, false);
        assert!(r.take_advanced());
        assert!(!r.take_advanced(), "taken");
        assert!(r.predates_delivered(0, 1000));
        assert!(!r.predates_delivered(10, 2000), "not before itself");
        assert!(!r.predates_delivered(20, 3000));
        let wnd = r.reo_wnd(false, false, 1, 3, 100);
        assert_eq!(wnd, 25, "a quarter of the minimum RTT");
        assert_eq!(r.remaining(110, 0, wnd), 15, "sent at 0, RTT 100, window 25, now 110");
        assert_eq!(r.remaining(110, 0, r.reo_wnd(false, false, 3, 3, 100)), -10, "dupthresh SACKs: no window");
        assert_eq!(r.reo_wnd(false, true, 0, 3, 100), 0, "none in recovery");
        assert_eq!(r.reo_wnd(true, true, 3, 3, 100), 25, "once reordering was seen, always the window");
    }

    #[test]
    fn a_retransmission_delivered_faster_than_the_minimum_rtt_does_not_count() {
        let mut r = Rack::default();
        r.on_rtt(100);
        r.on_delivered(150, 100, 1000, true);
        assert!(!r.take_advanced(), "50 ns < min RTT: the ACK was for the original");
        r.on_delivered(250, 100, 1000, true);
        assert!(r.take_advanced());
        assert!(r.recently_sent(250, 200));
        assert!(!r.recently_sent(250, 100));
    }
}
