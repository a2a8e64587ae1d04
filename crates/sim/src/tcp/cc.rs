//! Congestion control: how the window grows and how much it shrinks on loss. Windows are in
//! segments, as in Linux.

use daqnet_core::scenario::CongestionControl;
use daqnet_core::Nanos;

/// CUBIC parameters (RFC 9438; Linux `tcp_cubic`): β = 0.7, C = 0.4, fast convergence and the
/// Reno-friendly region on. HyStart is not modelled.
const CUBIC_BETA: f64 = 0.7;
const CUBIC_C: f64 = 0.4;

/// CUBIC state.
#[derive(Debug, Clone, Default)]
pub struct Cubic {
    last_max_cwnd: f64,
    epoch_start: Option<Nanos>,
    origin_point: f64,
    k_s: f64,
    ack_cnt: f64,
    tcp_cwnd: f64,
    min_rtt_ns: Option<Nanos>,
}

/// The congestion controller of one sender.
#[derive(Debug, Clone)]
pub enum Controller {
    /// Reno AIMD.
    Reno,
    /// CUBIC.
    Cubic(Cubic),
    /// Fixed window.
    Static(u32),
}

impl Controller {
    /// The controller for `cc`.
    pub fn new(cc: CongestionControl, static_cwnd: u32) -> Self {
        match cc {
            CongestionControl::Newreno => Controller::Reno,
            CongestionControl::Cubic => Controller::Cubic(Cubic::default()),
            CongestionControl::Static => Controller::Static(static_cwnd),
        }
    }

    /// Whether the window never changes.
    pub fn is_static(&self) -> bool {
        matches!(self, Controller::Static(_))
    }

    /// Slow-start threshold after a loss with window `cwnd` (also records the loss).
    pub fn ssthresh_on_loss(&mut self, cwnd: u32) -> u32 {
        match self {
            Controller::Reno => (cwnd / 2).max(2),
            Controller::Static(w) => *w,
            Controller::Cubic(c) => {
                let w = cwnd as f64;
                c.epoch_start = None;
                c.last_max_cwnd = if w < c.last_max_cwnd { w * (1.0 + CUBIC_BETA) / 2.0 } else { w };
                ((w * CUBIC_BETA) as u32).max(2)
            }
        }
    }

    /// An RTT sample (CUBIC uses the minimum).
    pub fn on_rtt(&mut self, rtt: Nanos) {
        if let Controller::Cubic(c) = self {
            c.min_rtt_ns = Some(c.min_rtt_ns.map_or(rtt, |m| m.min(rtt)));
        }
    }

    /// Transmission restarts after the connection was idle for `idle_ns` (CUBIC shifts its epoch
    /// so the idle time does not count as growth time, like Linux `CA_EVENT_TX_START`).
    pub fn on_idle_restart(&mut self, idle_ns: Nanos) {
        if let Controller::Cubic(c) = self {
            if let Some(e) = c.epoch_start.as_mut() {
                *e += idle_ns;
            }
        }
    }

    /// Congestion avoidance: `acked` segments were newly acknowledged at `now` with the window
    /// `cwnd` at or above `ssthresh` and the flow window-limited. Returns the new window and
    /// the updated additive-increase counter.
    pub fn avoid(&mut self, now: Nanos, cwnd: u32, cwnd_cnt: u32, acked: u32) -> (u32, u32) {
        let w = match self {
            Controller::Static(_) => return (cwnd, 0),
            Controller::Reno => cwnd,
            Controller::Cubic(c) => c.count(now, cwnd, acked),
        };
        // Linux tcp_cong_avoid_ai: one segment per `w` acknowledged segments.
        let (mut cwnd, mut cnt) = (cwnd, cwnd_cnt);
        if cnt >= w {
            cnt = 0;
            cwnd += 1;
        }
        cnt += acked;
        if cnt >= w {
            let delta = cnt / w;
            cnt -= delta * w;
            cwnd += delta;
        }
        (cwnd, cnt)
    }
}

impl Cubic {
    /// Linux `bictcp_update`: acknowledged segments needed per window increment.
    fn count(&mut self, now: Nanos, cwnd: u32, acked: u32) -> u32 {
        let w = cwnd as f64;
        self.ack_cnt += acked as f64;
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked as f64;
                self.tcp_cwnd = w;
                if self.last_max_cwnd <= w {
                    self.k_s = 0.0;
                    self.origin_point = w;
                } else {
                    self.k_s = ((self.last_max_cwnd - w) / CUBIC_C).cbrt();
                    self.origin_point = self.last_max_cwnd;
                }
                now
            }
        };
        let t = (now - epoch + self.min_rtt_ns.unwrap_or(0)) as f64 / 1e9;
        let target = self.origin_point + CUBIC_C * (t - self.k_s).powi(3);
        let mut cnt = if target > w { w / (target - w) } else { 100.0 * w };
        // Reno-friendly region: never grow slower than an AIMD flow with the same mean
        // (one segment per cwnd·(1+β)/(3(1−β)) ACKs, Linux `tcp_cwnd` estimate).
        let delta = w * (1.0 + CUBIC_BETA) / (3.0 * (1.0 - CUBIC_BETA));
        while self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1.0;
        }
        if self.tcp_cwnd > w {
            cnt = cnt.min(w / (self.tcp_cwnd - w));
        }
        cnt.max(2.0) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reno_grows_one_segment_per_window() {
        let mut c = Controller::new(CongestionControl::Newreno, 2);
        let (mut w, mut cnt) = (10, 0);
        for _ in 0..10 {
            (w, cnt) = c.avoid(0, w, cnt, 1);
        }
        assert_eq!(w, 11);
        assert_eq!(c.ssthresh_on_loss(11), 5);
    }

    #[test]
    fn cubic_backs_off_to_seventy_percent_and_regrows_toward_wmax() {
        // A long RTT (100 ms), where the cubic curve rather than the Reno-friendly estimate rules.
        let mut c = Controller::new(CongestionControl::Cubic, 2);
        c.on_rtt(100_000_000);
        assert_eq!(c.ssthresh_on_loss(100), 70);
        // Growing from 70 towards W_max = 100: after K = cbrt(30 / 0.4) ≈ 4.2 s it is back at 100.
        let (mut w, mut cnt) = (70u32, 0u32);
        let mut t = 0;
        let mut at_half_k = 0;
        while t < 4_200_000_000 {
            (w, cnt) = c.avoid(t, w, cnt, w);
            t += 100_000_000;
            if t == 2_100_000_000 {
                at_half_k = w;
            }
        }
        assert!((97..=103).contains(&w), "cwnd {w} after K");
        // Concave approach: most of the way back after half of K (70 + 30·(1 − 1/8) ≈ 96).
        assert!((92..=99).contains(&at_half_k), "cwnd {at_half_k} at K/2");
    }

    #[test]
    fn static_window_never_changes() {
        let mut c = Controller::new(CongestionControl::Static, 2);
        assert_eq!(c.avoid(0, 2, 0, 50), (2, 0));
        assert_eq!(c.ssthresh_on_loss(2), 2);
    }
}
