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
    /// The reordering window in quarters of the minimum RTT (Linux `reo_wnd_steps`), widened by
    /// one for each round in which D-SACKs showed a recovery was spurious.
    reo_wnd_steps: u32,
    /// A D-SACK arrived since the window was last adapted (Linux `rack.dsack_seen`).
    dsack_seen: bool,
    /// Segments delivered when the window was last widened (Linux `rack.last_delivered`).
    last_delivered: u32,
    /// Recoveries left before the window falls back to one step (Linux `reo_wnd_persist`).
    reo_wnd_persist: u32,
}

/// Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a widened window persists for.
const RECOVERY_THRESH: u32 = 16;

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit_ts: 0,
            end_seq: 0,
            rtt: 0,
            advanced: false,
            min_rtt: Nanos::MAX,
            reo_wnd_steps: 1,
            dsack_seen: false,
            last_delivered: 0,
            reo_wnd_persist: 0,
        }
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
    /// duplicate-ACK rule). Otherwise a quarter of the minimum RTT per step, at most the
    /// smoothed RTT.
    pub fn reo_wnd(&self, reord_seen: bool, in_recovery: bool, sacked_out: u32, reordering: u32, srtt: Nanos) -> Nanos {
        if !reord_seen && (in_recovery || sacked_out >= reordering) {
            return 0;
        }
        self.min_rtt().map_or(0, |m| (m / 4 * Nanos::from(self.reo_wnd_steps)).min(srtt))
    }

    /// A D-SACK reported a spurious retransmission after reordering was seen (Linux
    /// `tcp_dsack_seen`; not for a probe's duplicate, which no reordering caused).
    pub fn on_dsack(&mut self) {
        self.dsack_seen = true;
    }

    /// Linux `tcp_rack_update_reo_wnd`, once per ACK with a rate sample: `prior_delivered`, what
    /// the connection had delivered when the newest segment this ACK delivered was sent, and
    /// `delivered` now. A D-SACK widens the window by a step, at most once a round trip; the
    /// window returns to one step once `RECOVERY_THRESH` recoveries have passed without one.
    pub fn update_reo_wnd(&mut self, prior_delivered: u32, delivered: u32) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if std::mem::take(&mut self.dsack_seen) {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xff);
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// A recovery ended without being undone (Linux `tcp_try_undo_recovery`).
    pub fn on_recovery_kept(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// D-SACKs undid a recovery (Linux `tcp_try_undo_dsack`).
    pub fn on_dsack_undo(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(RECOVERY_THRESH);
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
    #[test]
    fn a_dsack_widens_the_window_by_a_step_once_a_round_and_for_sixteen_recoveries() {
        let mut r = Rack::default();
        r.on_rtt(100);
        assert_eq!(r.reo_wnd(true, false, 1, 3, 1000), 25);
        r.on_dsack();
        r.update_reo_wnd(0, 10);
        assert_eq!(r.reo_wnd(true, false, 1, 3, 1000), 25, "no rate sample: not yet");
        r.update_reo_wnd(5, 10);
        assert_eq!(r.reo_wnd(true, false, 1, 3, 1000), 50, "two steps");
        r.on_dsack();
        r.update_reo_wnd(8, 12);
        assert_eq!(r.reo_wnd(true, false, 1, 3, 1000), 50, "sent before the last widening: a round has not passed");
        assert_eq!(r.reo_wnd(true, false, 1, 3, 40), 40, "at most the smoothed RTT");
        for _ in 0..RECOVERY_THRESH {
            r.on_recovery_kept();
        }
        r.update_reo_wnd(20, 30);
        assert_eq!(r.reo_wnd(true, false, 1, 3, 1000), 25, "sixteen recoveries without one: back to one step");
    }
}
