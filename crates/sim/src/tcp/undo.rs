//! Undoing a window reduction that was not needed (Linux `tcp_input.c`, "Undo procedures").
//!
//! When a recovery or a timeout reduces the window, Linux remembers where the episode began
//! (`undo_marker`), the slow-start threshold before it (`prior_ssthresh`), when it first
//! retransmitted (`retrans_stamp`, a timestamp) and how many of its retransmissions the receiver
//! has not yet reported as duplicates (`undo_retrans`). The reduction is undone when every
//! retransmission came back as a D-SACK — the originals had arrived — or when an ACK's
//! timestamp echo predates the first retransmission — the original, not the retransmission,
//! filled the hole (`tcp_packet_delayed`).
//!
//! Timestamps here are Linux's TCP timestamp clock: milliseconds, compared modulo 2³².

use daqnet_core::Nanos;

/// The TCP timestamp value of time `now` (Linux `tcp_time_stamp_ms`: a millisecond clock). It
/// starts at 1: an echo of 0 means "none" to Linux.
pub fn ts_ms(now: Nanos) -> u32 {
    (now / 1_000_000) as u32 + 1
}

/// `a` is earlier than `b`, modulo 2³² (Linux `before()` on timestamps).
fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// What is needed to undo the current window reduction.
#[derive(Debug, Clone, Default)]
pub struct Undo {
    /// `snd_una` when the reduction began (Linux `undo_marker`); none: nothing to undo.
    marker: Option<u64>,
    /// Retransmissions not yet reported as duplicates (Linux `undo_retrans`; −1: none sent yet,
    /// so that 0 means "all reported").
    retrans: i32,
    /// The slow-start threshold before the reduction (Linux `prior_ssthresh`; 0: none, as after
    /// a congestion signal that must not be undone).
    prior_ssthresh: u32,
    /// Timestamp of the episode's first retransmission (Linux `retrans_stamp`).
    retrans_stamp: Option<u32>,
    /// Segments the receiver reported as duplicates, ever (Linux `dsack_dups`).
    dsack_dups: u64,
}

impl Undo {
    /// Linux `tcp_init_undo`: a reduction begins at `snd_una` with `retrans_out`
    /// retransmissions (and maybe a probe's) already in flight; `prior_ssthresh` is what undo
    /// restores (0: nothing).
    pub fn init(&mut self, snd_una: u64, retrans_out: u32, probe_retrans_out: bool, prior_ssthresh: u32) {
        self.marker = Some(snd_una);
        let retrans = retrans_out as i32 + i32::from(probe_retrans_out);
        self.retrans = if retrans == 0 { -1 } else { retrans };
        self.prior_ssthresh = prior_ssthresh;
    }

    /// Linux `tcp_retransmit_skb`: a segment was retransmitted at timestamp `ts`.
    pub fn on_retransmit(&mut self, ts: u32) {
        self.retrans_stamp.get_or_insert(ts);
        self.retrans = self.retrans.max(0) + 1;
    }

    /// No retransmission of the episode is left (Linux clears `retrans_stamp` in the open state
    /// and when `tcp_any_retrans_done` is false).
    pub fn clear_stamp(&mut self) {
        self.retrans_stamp = None;
    }

    /// Linux `tcp_check_dsack` and `tcp_sacktag_one`: the receiver reported `segs` duplicate
    /// segments ending at `end`, when `total_retrans` retransmissions were ever sent. Returns
    /// false for a dubious report (more duplicates than retransmissions), which Linux ignores.
    pub fn on_dsack(&mut self, end: u64, segs: u32, total_retrans: u64) -> bool {
        self.dsack_dups += u64::from(segs);
        if self.dsack_dups > total_retrans {
            return false;
        }
        if self.marker.is_some_and(|m| end > m) && self.retrans > 0 {
            self.retrans = (self.retrans - segs as i32).max(0);
        }
        true
    }

    /// Segments the receiver reported as duplicates, ever (Linux `dsack_dups`).
    pub fn dsack_dups(&self) -> u64 {
        self.dsack_dups
    }

    /// Linux `tcp_packet_delayed`: the ACK's timestamp echo `ecr` predates the first
    /// retransmission, so the original segment arrived. Without a retransmission stamp nothing
    /// was resent (Linux: `true`, except without SACK once `high_seq` is acknowledged —
    /// `sack_reopen_held`).
    pub fn packet_delayed(&self, ecr: Option<u32>, sack_reopen_held: bool) -> bool {
        match self.retrans_stamp {
            Some(stamp) => ecr.is_some_and(|e| e != 0 && ts_before(e, stamp)),
            None => !sack_reopen_held,
        }
    }

    /// Linux `tcp_may_undo`.
    pub fn may_undo(&self, ecr: Option<u32>, sack_reopen_held: bool) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(ecr, sack_reopen_held))
    }

    /// Every retransmission was reported as a duplicate (the test of `tcp_try_undo_dsack`).
    pub fn all_dsacked(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// Whether a reduction can still be undone (Linux `undo_marker != 0`).
    pub fn pending(&self) -> bool {
        self.marker.is_some()
    }

    /// Linux `tcp_enter_cwr`: a reduction an ECN echo asked for is never undone — nor, once it
    /// runs, the episode before it.
    pub fn forbid(&mut self) {
        self.marker = None;
        self.prior_ssthresh = 0;
    }

    /// The reduction was undone, or must not be: forget it. Returns `prior_ssthresh`.
    pub fn take(&mut self) -> u32 {
        self.marker = None;
        std::mem::take(&mut self.prior_ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_compare_modulo_two_to_the_32() {
        assert!(ts_before(1, 2));
        assert!(!ts_before(2, 2));
        assert!(ts_before(u32::MAX, 0), "across the wrap");
        assert_eq!(ts_ms(1_999_999), 2);
    }

    #[test]
    fn an_echo_older_than_the_first_retransmission_shows_the_original_arrived() {
        let mut u = Undo::default();
        u.init(1000, 0, false, 20);
        assert!(u.packet_delayed(None, false), "nothing resent yet");
        u.on_retransmit(100);
        u.on_retransmit(150);
        assert!(u.packet_delayed(Some(99), false));
        assert!(!u.packet_delayed(Some(100), false), "the retransmission's own echo");
        assert!(!u.packet_delayed(None, false), "no echo, no evidence");
        assert!(u.may_undo(Some(99), false));
        assert_eq!(u.take(), 20);
        assert!(!u.may_undo(Some(99), false), "undone once");
    }

    #[test]
    fn undo_waits_for_a_dsack_of_every_retransmission() {
        let mut u = Undo::default();
        u.init(1000, 0, false, 20);
        u.on_retransmit(100);
        u.on_retransmit(100);
        assert!(u.on_dsack(2000, 1, 2));
        assert!(!u.all_dsacked());
        assert!(!u.on_dsack(3000, 2, 2), "more duplicates than retransmissions: dubious");
        u.dsack_dups = 1;
        assert!(u.on_dsack(3000, 1, 2));
        assert!(u.all_dsacked());
        let mut u = Undo::default();
        u.init(1000, 0, false, 20);
        u.on_retransmit(100);
        assert!(u.on_dsack(900, 1, 9));
        assert!(!u.all_dsacked(), "a duplicate below the episode's start is not one of its retransmissions");
    }
}
