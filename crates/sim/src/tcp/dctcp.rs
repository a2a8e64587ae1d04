//! DCTCP (RFC 8257), as Linux's `tcp_dctcp.c` has it: the sender keeps α, an estimate of the
//! fraction of its data the network marked, updated once per window of data with gain
//! g = 1/16; an ECN echo reduces the window by α/2 (once per window, in the CWR state the
//! sender shares with classic ECN), a loss halves it. Growth is Reno's. α is a fixed-point
//! number out of 1024 (`DCTCP_MAX_ALPHA`); the receiver's echo is in [`super::ecn`].

/// α = 1 (Linux `DCTCP_MAX_ALPHA`, and `dctcp_alpha_on_init`: a new connection assumes the
/// worst until its first window of data tells).
pub const MAX_ALPHA: u32 = 1024;
/// g = 1/2^4 (Linux `dctcp_shift_g`).
const SHIFT_G: u32 = 4;

/// One sender's DCTCP state (Linux `struct dctcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dctcp {
    /// α, out of [`MAX_ALPHA`].
    alpha: u32,
    /// The window of data being observed ends when `snd_una` reaches this (`next_seq`).
    next_seq: u64,
    /// Delivered segments, and those delivered with an ECN echo, when the window began.
    old_delivered: u32,
    old_delivered_ce: u32,
    /// The window when it was last reduced (`loss_cwnd`): what undo restores.
    loss_cwnd: u32,
}

impl Default for Dctcp {
    /// Linux `dctcp_init` on a new connection.
    fn default() -> Self {
        Dctcp { alpha: MAX_ALPHA, next_seq: 0, old_delivered: 0, old_delivered_ce: 0, loss_cwnd: 0 }
    }
}

impl Dctcp {
    /// α, out of [`MAX_ALPHA`].
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Linux `dctcp_update_alpha` (the `in_ack_event` hook, on every ACK): once `snd_una`
    /// passes the end of the observed window, α ← (1 − g)·α + g·F with F the share of the
    /// window's delivered segments that came with an ECN echo, and the next window begins at
    /// `snd_nxt`. `delivered`, `delivered_ce`: the connection's counts (wrapping).
    pub fn update_alpha(&mut self, snd_una: u64, snd_nxt: u64, delivered: u32, delivered_ce: u32) {
        if snd_una < self.next_seq {
            return;
        }
        let ce = delivered_ce.wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // `min_not_zero(alpha, alpha >> g)`: a small α decays to 0 rather than staying put.
        let decay = alpha >> SHIFT_G;
        alpha -= if decay == 0 { alpha } else { decay };
        if ce > 0 {
            let total = delivered.wrapping_sub(self.old_delivered).max(1);
            alpha = (alpha + (ce << (10 - SHIFT_G)) / total).min(MAX_ALPHA);
        }
        self.alpha = alpha;
        (self.next_seq, self.old_delivered, self.old_delivered_ce) = (snd_nxt, delivered, delivered_ce);
    }

    /// Linux `dctcp_ssthresh` (on an ECN echo, `tcp_init_cwnd_reduction`): cwnd × (1 − α/2),
    /// at least 2.
    pub fn ssthresh(&mut self, cwnd: u32) -> u32 {
        self.loss_cwnd = cwnd;
        cwnd.saturating_sub(((cwnd as u64 * self.alpha as u64) >> 11) as u32).max(2)
    }

    /// Linux `dctcp_react_to_loss` (entering recovery, or a timeout's `CA_EVENT_LOSS`): half
    /// the window, at least 2, whatever α.
    pub fn react_to_loss(&mut self, cwnd: u32) -> u32 {
        self.loss_cwnd = cwnd;
        (cwnd >> 1).max(2)
    }

    /// Linux `dctcp_cwnd_undo`: the window before the last reduction, if larger.
    pub fn undo_cwnd(&self, cwnd: u32) -> u32 {
        cwnd.max(self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_moves_once_per_window_of_data_by_g_times_the_marked_share() {
        let mut d = Dctcp::default();
        // The first ACK ends the (empty) window before any data: α decays from 1 by 1/16.
        d.update_alpha(0, 10, 0, 0);
        assert_eq!(d.alpha(), 1024 - 64);
        // Within the window (snd_una below 10), ACKs do not move α, however marked.
        d.update_alpha(9, 10, 9, 9);
        assert_eq!(d.alpha(), 960);
        // The window ends: 10 delivered, 5 with an echo. α = 960 − 60 + (5 << 6) / 10 = 932.
        d.update_alpha(10, 20, 10, 5);
        assert_eq!(d.alpha(), 932);
        // A window without marks: α × 15/16 (932 − 58).
        d.update_alpha(20, 30, 20, 5);
        assert_eq!(d.alpha(), 874);
        // Every segment marked: α − α/16 + 1/16 (1000 − 62 + 64), and from α = 1, 1 again.
        let mut full = Dctcp { alpha: 1000, ..Dctcp::default() };
        full.update_alpha(0, 10, 10, 10);
        assert_eq!(full.alpha(), 1002);
        let mut one = Dctcp::default();
        one.update_alpha(0, 10, 10, 10);
        assert_eq!(one.alpha(), MAX_ALPHA);
    }

    #[test]
    fn a_small_alpha_without_marks_decays_to_zero_not_to_a_fixed_point() {
        let mut d = Dctcp { alpha: 15, ..Dctcp::default() };
        d.update_alpha(0, 1, 0, 0);
        assert_eq!(d.alpha(), 0, "15 >> 4 is 0: Linux's min_not_zero takes all of α");
        let mut d = Dctcp { alpha: 16, ..Dctcp::default() };
        d.update_alpha(0, 1, 0, 0);
        assert_eq!(d.alpha(), 15);
    }

    #[test]
    fn an_echo_cuts_by_half_of_alpha_a_loss_by_half_and_undo_restores_the_window_before() {
        let mut d = Dctcp { alpha: 512, ..Dctcp::default() };
        assert_eq!(d.ssthresh(100), 75, "α = 1/2: cwnd × (1 − 1/4)");
        assert_eq!(d.undo_cwnd(80), 100);
        d.alpha = 0;
        assert_eq!(d.ssthresh(100), 100, "α = 0: no reduction");
        assert_eq!(d.ssthresh(2), 2);
        d.alpha = MAX_ALPHA;
        assert_eq!(d.ssthresh(3), 2, "never below 2");
        assert_eq!(d.react_to_loss(100), 50, "a loss halves whatever α");
        assert_eq!(d.alpha(), MAX_ALPHA, "and leaves α alone");
        assert_eq!(d.undo_cwnd(50), 100);
    }
}
