//! Congestion control: how the window grows and how much it shrinks on loss. Windows are in
//! segments, as in Linux.

use super::dctcp::Dctcp;
use daqnet_core::scenario::CongestionControl;
use daqnet_core::Nanos;

/// CUBIC parameters as Linux `tcp_cubic` has them: β = 717/1024, C = 410/1024 (`bic_scale`
/// 41 × 10), fast convergence, the Reno-friendly region and HyStart on.
const BETA_SCALE: u32 = 1024;
const BETA: u32 = 717;
const CUBIC_C: f64 = 410.0 / 1024.0;
/// Segments acknowledged per segment of the Reno-friendly window, ×8 (Linux `beta_scale`:
/// 8·(1024 + 717)/3/(1024 − 717) = 15, so one segment per 15/8 windows).
const FRIENDLY_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// Until the first loss sets a W_max, the window grows by at least 5 % per RTT (Linux caps
/// `cnt` at 20).
const FIRST_EPOCH_CNT: u32 = 20;

/// HyStart's parameters as Linux `tcp_cubic` has them (`hystart_detect` = ACK train | delay):
/// it acts from a window of 16 segments; an ACK train is ACKs at most 2 ms apart; the delay
/// test takes the lowest of the first 8 RTT samples of a round and ends slow start when it
/// exceeds the lowest RTT ever seen by an eighth of it, at least 4 ms and at most 16 ms.
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA_NS: Nanos = 2_000_000;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_NS: (Nanos, Nanos) = (4_000_000, 16_000_000);
/// `sk_gso_max_size` (64 KiB): with TSO and GSO off on the device TCP still segments in
/// software, and HyStart allows an ACK train the time to send four of these at the pacing rate.
const GSO_MAX_BYTES: u64 = 65_536;

/// Linux CUBIC's HyStart (`hystart_update`): ends slow start before the first loss, when the
/// ACKs of one round come back as a long train or when a round's RTT rises over the lowest seen.
#[derive(Debug, Clone, Default)]
struct HyStart {
    /// Slow start has been ended (until a timeout).
    found: bool,
    /// When the current round started, and when its last ACK of the train came.
    round_start: Nanos,
    last_ack: Nanos,
    /// The round ends when this sequence number is acknowledged (`snd_nxt` at its start).
    end_seq: u64,
    /// The lowest RTT sample of the round so far, and how many samples it had.
    curr_rtt: Option<Nanos>,
    sample_cnt: u32,
}

/// What HyStart needs to know about an ACK (Linux's `pkts_acked` hook and the socket).
#[derive(Debug, Clone, Copy)]
pub struct AckSample {
    /// When it arrived.
    pub now: Nanos,
    /// RTT from the most recently sent segment it newly acknowledged (Linux `ca_rtt_us`);
    /// `None` without a valid sample.
    pub rtt: Option<Nanos>,
    /// The sender's window, threshold, `snd_una` after the ACK, `snd_nxt` and smoothed RTT.
    pub cwnd: u32,
    pub ssthresh: u32,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub srtt: Option<Nanos>,
}

/// CUBIC state. Time is counted in jiffies, the kernel's clock ticks, as Linux does: the growth
/// rate is recomputed at most once per jiffy, and while the window stays the same at most every
/// `HZ/32` jiffies (≈ 31 ms). Short transfers on a fast network thus grow in steps: the window
/// holds for ~32 ms while the acknowledged segments pile up, then catches up with the
/// Reno-friendly estimate at one segment per two ACKed.
#[derive(Debug, Clone)]
pub struct Cubic {
    /// One jiffy, ns.
    jiffy_ns: Nanos,
    /// `HZ / 32`: jiffies the rate is kept while the window does not change.
    hold_jiffies: u64,
    last_max_cwnd: u32,
    /// Start of the growth epoch, jiffies (none after a loss).
    epoch_start: Option<u64>,
    origin_point: u32,
    /// Time to regrow to W_max, s.
    k_s: f64,
    ack_cnt: u32,
    /// The Reno-friendly window estimate, segments.
    tcp_cwnd: u32,
    /// The window and jiffy at which `cnt` was last computed.
    last_cwnd: u32,
    last_time: u64,
    /// Acknowledged segments per window increment.
    cnt: u32,
    /// The lowest RTT sample since the connection began or the last timeout (`delay_min`).
    min_rtt_ns: Option<Nanos>,
    hystart: HyStart,
    /// Segment size, bytes (for the pacing rate HyStart reads).
    mss: u32,
}

impl Cubic {
    /// CUBIC with a clock that ticks every `jiffy_ns`, for segments of `mss` bytes.
    pub fn new(jiffy_ns: Nanos, mss: u32) -> Self {
        let hz = (1_000_000_000 / jiffy_ns.max(1)).max(1);
        Cubic {
            jiffy_ns: jiffy_ns.max(1),
            mss,
            hystart: HyStart::default(),
            hold_jiffies: hz / 32,
            last_max_cwnd: 0,
            epoch_start: None,
            origin_point: 0,
            k_s: 0.0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            cnt: 0,
            min_rtt_ns: None,
        }
    }
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
    /// DCTCP: Reno's growth, α's reductions.
    Dctcp(Dctcp),
}

impl Controller {
    /// The controller for `cc`; CUBIC's clock ticks every `jiffy_ns`; segments of `mss` bytes.
    pub fn new(cc: CongestionControl, static_cwnd: u32, jiffy_ns: Nanos, mss: u32) -> Self {
        match cc {
            CongestionControl::Newreno => Controller::Reno,
            CongestionControl::Cubic => Controller::Cubic(Cubic::new(jiffy_ns, mss)),
            CongestionControl::Static => Controller::Static(static_cwnd),
            CongestionControl::Dctcp => Controller::Dctcp(Dctcp::default()),
        }
    }

    /// Whether it needs ECN on every segment it sends, ACKs and retransmissions included
    /// (Linux `TCP_CONG_NEEDS_ECN`: DCTCP).
    pub fn needs_ecn(&self) -> bool {
        matches!(self, Controller::Dctcp(_))
    }

    /// DCTCP's α, out of 1024.
    pub fn alpha(&self) -> Option<u32> {
        match self {
            Controller::Dctcp(d) => Some(d.alpha()),
            _ => None,
        }
    }

    /// Linux's `in_ack_event` hook, on every ACK not older than `snd_una`: DCTCP updates α.
    pub fn on_ack_event(&mut self, snd_una: u64, snd_nxt: u64, delivered: u32, delivered_ce: u32) {
        if let Controller::Dctcp(d) = self {
            d.update_alpha(snd_una, snd_nxt, delivered, delivered_ce);
        }
    }

    /// Slow-start threshold when an ECN echo reduces window `cwnd` (the `ssthresh` hook that
    /// `tcp_init_cwnd_reduction` calls): as for a loss, except DCTCP's cwnd × (1 − α/2).
    pub fn ssthresh_on_ece(&mut self, cwnd: u32) -> u32 {
        match self {
            Controller::Dctcp(d) => d.ssthresh(cwnd),
            _ => self.ssthresh_on_loss(cwnd),
        }
    }

    /// The window an undo restores (the `undo_cwnd` hook): the larger of `cwnd` and the window
    /// before the reduction, `prior_cwnd` (DCTCP: its own record of it).
    pub fn undo_cwnd(&self, cwnd: u32, prior_cwnd: u32) -> u32 {
        match self {
            Controller::Dctcp(d) => d.undo_cwnd(cwnd),
            _ => cwnd.max(prior_cwnd),
        }
    }

    /// Whether the window never changes.
    pub fn is_static(&self) -> bool {
        matches!(self, Controller::Static(_))
    }

    /// Slow-start threshold after a loss with window `cwnd` (also records the loss; DCTCP's
    /// `dctcp_react_to_loss` halves whatever α).
    pub fn ssthresh_on_loss(&mut self, cwnd: u32) -> u32 {
        match self {
            Controller::Reno => (cwnd / 2).max(2),
            Controller::Dctcp(d) => d.react_to_loss(cwnd),
            Controller::Static(w) => *w,
            Controller::Cubic(c) => {
                c.epoch_start = None;
                c.last_max_cwnd =
                    if cwnd < c.last_max_cwnd { cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) } else { cwnd };
                (cwnd * BETA / BETA_SCALE).max(2)
            }
        }
    }

    /// A retransmission timeout: Linux's CUBIC forgets everything on entering the Loss state
    /// (`bictcp_reset`, `bictcp_hystart_reset`), so growth restarts as on a new connection
    /// (W_max and the lowest RTT unknown, HyStart armed again).
    pub fn on_timeout(&mut self) {
        if let Controller::Cubic(c) = self {
            *c = Cubic::new(c.jiffy_ns, c.mss);
        }
    }

    /// An ACK that acknowledged something (Linux `cubictcp_acked`): CUBIC keeps the lowest RTT,
    /// and in slow start HyStart may end it. Returns the new slow-start threshold if it does.
    pub fn on_acked(&mut self, a: AckSample) -> Option<u32> {
        let Controller::Cubic(c) = self else { return None };
        let rtt = a.rtt?;
        // Samples right after a loss episode's growth epoch began are discarded (one second).
        let hz = 1_000_000_000 / c.jiffy_ns;
        if c.epoch_start.is_some_and(|e| a.now / c.jiffy_ns < e + hz) {
            return None;
        }
        let delay = rtt.max(1);
        let delay_min = *c.min_rtt_ns.insert(c.min_rtt_ns.map_or(delay, |m| m.min(delay)));
        if c.hystart.found || a.cwnd >= a.ssthresh {
            return None;
        }
        let ack_delay = c.ack_train_delay(a);
        c.hystart.update(a, delay, delay_min, ack_delay).then_some(a.cwnd)
    }

    /// Transmission restarts at `now` after the connection was idle since `last_send`: CUBIC
    /// shifts its epoch so the idle time does not count as growth time (Linux
    /// `CA_EVENT_TX_START`, in whole jiffies, never past `now`).
    pub fn on_idle_restart(&mut self, now: Nanos, last_send: Nanos) {
        if let Controller::Cubic(c) = self {
            let now_j = now / c.jiffy_ns;
            if let Some(e) = c.epoch_start.as_mut() {
                *e = (*e + now_j.saturating_sub(last_send / c.jiffy_ns)).min(now_j);
            }
        }
    }

    /// Congestion avoidance: `acked` segments were newly acknowledged at `now` with the window
    /// `cwnd` at or above `ssthresh` and the flow window-limited. Returns the new window and
    /// the updated additive-increase counter.
    pub fn avoid(&mut self, now: Nanos, cwnd: u32, cwnd_cnt: u32, acked: u32) -> (u32, u32) {
        let w = match self {
            Controller::Static(_) => return (cwnd, 0),
            Controller::Reno | Controller::Dctcp(_) => cwnd,
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

impl HyStart {
    /// Linux `hystart_update` with an RTT sample `delay`: whether slow start ends now.
    fn update(&mut self, a: AckSample, delay: Nanos, delay_min: Nanos, ack_delay: Nanos) -> bool {
        if a.snd_una > self.end_seq {
            // A new round (`bictcp_hystart_reset`).
            (self.round_start, self.last_ack, self.end_seq) = (a.now, a.now, a.snd_nxt);
            (self.curr_rtt, self.sample_cnt) = (None, 0);
        }
        if a.cwnd < HYSTART_LOW_WINDOW {
            return false;
        }
        // ACK train: ACKs close together for longer than half the lowest RTT (plus the time
        // pacing may have spread them; the sockets here are not paced).
        if a.now - self.last_ack <= HYSTART_ACK_DELTA_NS {
            self.last_ack = a.now;
            if a.now - self.round_start > (delay_min + ack_delay) / 2 {
                self.found = true;
            }
        }
        // Delay: the round's lowest RTT over its first samples against the lowest ever.
        let curr = *self.curr_rtt.insert(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if curr > delay_min + (delay_min / 8).clamp(HYSTART_DELAY_NS.0, HYSTART_DELAY_NS.1) {
            self.found = true;
        }
        self.found
    }
}

impl Cubic {
    /// Linux `hystart_ack_delay`: the time to send four GSO-sized bursts at the socket's pacing
    /// rate (2 × cwnd × mss / SRTT in slow start, `tcp_update_pacing_rate`), at most 1 ms.
    fn ack_train_delay(&self, a: AckSample) -> Nanos {
        let Some(srtt) = a.srtt.filter(|&s| s > 0) else { return 0 };
        let ratio = if a.cwnd < a.ssthresh / 2 { 200 } else { 120 };
        let rate_bps = self.mss as u128 * a.cwnd as u128 * ratio * 1_000_000_000 / (100 * srtt as u128);
        if rate_bps == 0 {
            return 0;
        }
        ((GSO_MAX_BYTES as u128 * 4 * 1_000_000_000 / rate_bps) as Nanos).min(1_000_000)
    }

    /// Linux `bictcp_update`: acknowledged segments needed per window increment.
    fn count(&mut self, now: Nanos, cwnd: u32, acked: u32) -> u32 {
        let jiffies = now / self.jiffy_ns;
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && jiffies - self.last_time <= self.hold_jiffies {
            return self.cnt;
        }
        // The cubic curve is evaluated at most once per jiffy.
        if self.epoch_start.is_none() || jiffies != self.last_time {
            self.last_cwnd = cwnd;
            self.last_time = jiffies;
            let epoch = *self.epoch_start.get_or_insert_with(|| {
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k_s = 0.0;
                    self.origin_point = cwnd;
                } else {
                    self.k_s = ((self.last_max_cwnd - cwnd) as f64 / CUBIC_C).cbrt();
                    self.origin_point = self.last_max_cwnd;
                }
                jiffies
            });
            let delay_min_j = self.min_rtt_ns.unwrap_or(0).div_ceil(self.jiffy_ns);
            let t = (jiffies - epoch + delay_min_j) as f64 * self.jiffy_ns as f64 / 1e9;
            let offset = (CUBIC_C * (t - self.k_s).abs().powi(3)) as u32;
            let target =
                if t < self.k_s { self.origin_point.saturating_sub(offset) } else { self.origin_point + offset };
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            if self.last_max_cwnd == 0 {
                self.cnt = self.cnt.min(FIRST_EPOCH_CNT);
            }
        }
        // Reno-friendly region: never grow slower than an AIMD flow with the same mean.
        let delta = (cwnd * FRIENDLY_SCALE) >> 3;
        if delta > 0 && self.ack_cnt > delta {
            let n = (self.ack_cnt - 1) / delta;
            self.ack_cnt -= n * delta;
            self.tcp_cwnd += n;
        }
        if self.tcp_cwnd > cwnd {
            self.cnt = self.cnt.min(cwnd / (self.tcp_cwnd - cwnd));
        }
        self.cnt = self.cnt.max(2);
        self.cnt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ACK outside slow start with an RTT sample of `rtt` (CUBIC keeps the lowest).
    fn rtt_sample(now: Nanos, rtt: Nanos, cwnd: u32) -> AckSample {
        AckSample { now, rtt: Some(rtt), cwnd, ssthresh: 2, snd_una: 0, snd_nxt: 0, srtt: Some(rtt) }
    }

    trait Sample {
        fn on_rtt(&mut self, rtt: Nanos);
    }

    impl Sample for Controller {
        fn on_rtt(&mut self, rtt: Nanos) {
            assert_eq!(self.on_acked(rtt_sample(0, rtt, 100)), None, "not in slow start");
        }
    }

    #[test]
    fn reno_grows_one_segment_per_window() {
        let mut c = Controller::new(CongestionControl::Newreno, 2, 1_000_000, 1448);
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
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
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
    fn cubic_holds_its_window_for_hz_over_32_then_catches_up_with_reno() {
        // As traced on Linux 6.18 at 250 Hz (tcp_probe): after a loss at a window of 5, ACKs of
        // two segments every 0.5 ms leave the window at 5 for ~32 ms (8 jiffies), then it grows
        // by one segment per ACK up to the Reno-friendly estimate.
        let mut c = Controller::new(CongestionControl::Cubic, 2, 4_000_000, 1448);
        c.on_rtt(40_000);
        assert_eq!(c.ssthresh_on_loss(5), 3);
        let (mut w, mut cnt) = (5u32, 0u32);
        let mut first_growth = None;
        for i in 0..80u64 {
            let now = i * 500_000;
            let before = w;
            (w, cnt) = c.avoid(now, w, cnt, 2);
            if w > before && first_growth.is_none() {
                first_growth = Some(now);
            }
        }
        let t = first_growth.expect("the window grows");
        assert!((28_000_000..=33_000_000).contains(&t), "first growth at {t} ns");
        // 160 segments acknowledged at ~1.9 windows per Reno-friendly step: about 5 + 16.
        assert!((17..=23).contains(&w), "window {w} after 40 ms");
        // With exact timers the clock is 1 kHz: the hold is 31 jiffies, so growth starts at 32 ms too.
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        c.ssthresh_on_loss(5);
        let (mut w, mut cnt) = (5u32, 0u32);
        for i in 0..63u64 {
            (w, cnt) = c.avoid(i * 500_000, w, cnt, 2);
        }
        assert_eq!(w, 5);
        (w, _) = c.avoid(32_000_000, w, cnt, 2);
        assert!(w > 5);
    }

    #[test]
    fn a_timeout_makes_cubic_forget_its_wmax() {
        // Linux bictcp_reset on entering Loss: regrowth from 70 no longer levels off at W_max =
        // 100 but grows by 5 % per RTT (the first epoch's cap, 70 · 1.05^21 ≈ 195).
        let regrow = |timeout: bool| {
            let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
            c.on_rtt(100_000_000);
            c.ssthresh_on_loss(100);
            if timeout {
                c.on_timeout();
                c.on_rtt(100_000_000);
            }
            let (mut w, mut cnt) = (70u32, 0u32);
            for i in 0..21u64 {
                (w, cnt) = c.avoid(i * 100_000_000, w, cnt, w);
            }
            w
        };
        let (kept, forgot) = (regrow(false), regrow(true));
        assert!((92..=103).contains(&kept), "with W_max: {kept}");
        assert!((180..=200).contains(&forgot), "after a timeout: {forgot}");
    }

    /// ACKs of a slow-starting sender (window `cwnd`, threshold infinite): `(now, rtt, snd_una)`,
    /// each round's data being 100 sequence numbers (`snd_nxt` at the round's end); the first
    /// ACK that makes HyStart end slow start, if any.
    fn hystart_ends(
        c: &mut Controller,
        cwnd: u32,
        acks: impl IntoIterator<Item = (Nanos, Nanos, u64)>,
    ) -> Option<usize> {
        acks.into_iter().position(|(now, rtt, una)| {
            let a = AckSample {
                now,
                rtt: Some(rtt),
                cwnd,
                ssthresh: u32::MAX,
                snd_una: una,
                snd_nxt: (una / 100 + 1) * 100,
                srtt: Some(rtt),
            };
            c.on_acked(a).inspect(|&ss| assert_eq!(ss, cwnd, "ssthresh becomes the window")).is_some()
        })
    }

    /// Rounds of 10 ACKs 3 ms apart (no ACK train), round `r` with RTT `rtt(r)`.
    fn rounds(rtts: &[Nanos]) -> Vec<(Nanos, Nanos, u64)> {
        let mut v = Vec::new();
        for (r, &rtt) in rtts.iter().enumerate() {
            for i in 0..10u64 {
                v.push(((r as u64 * 10 + i) * 3_000_000, rtt, r as u64 * 100 + i + 1));
            }
        }
        v
    }

    #[test]
    fn hystart_ends_slow_start_when_a_rounds_rtt_rises_4ms_over_the_lowest() {
        // Linux hystart_update, HYSTART_DELAY: the lowest of a round's first 8 samples against
        // delay_min + clamp(delay_min / 8, 4 ms, 16 ms); decided on the 9th sample.
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 20, rounds(&[1_000_000, 4_900_000])), None, "below 1 + 4 ms");
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 20, rounds(&[1_000_000, 5_100_000])), Some(18), "round 2's 9th ACK");
        // A 200 ms path: the threshold is an eighth of it, 25 ms, capped at 16 ms.
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 20, rounds(&[200_000_000, 215_000_000])), None);
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 20, rounds(&[200_000_000, 217_000_000])), Some(18));
        // Below 16 segments HyStart does nothing (hystart_low_window).
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 15, rounds(&[1_000_000, 50_000_000])), None);
        // Reno has no HyStart.
        let mut c = Controller::new(CongestionControl::Newreno, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 20, rounds(&[1_000_000, 50_000_000])), None);
    }

    #[test]
    fn hystart_ends_slow_start_on_an_ack_train_longer_than_half_the_lowest_rtt() {
        // HYSTART_ACK_TRAIN: ACKs at most 2 ms apart since the round began, for longer than
        // (delay_min + ack delay) / 2. Lowest RTT 1 ms; the ack delay (four 64 KiB bursts at
        // 2 × 16 × 1448 B / 1 ms) is capped at 1 ms: the train must outlast 1 ms.
        let train = |gap: Nanos| (0..30u64).map(move |i| (i * gap, 1_000_000, i + 1));
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 16, train(100_000)), Some(11), "the ACK 1.1 ms into the round");
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        assert_eq!(hystart_ends(&mut c, 16, train(2_100_000)), None, "ACKs too far apart are no train");
    }

    #[test]
    fn hystart_acts_once_until_a_timeout_arms_it_again() {
        let mut c = Controller::new(CongestionControl::Cubic, 2, 1_000_000, 1448);
        let acks = rounds(&[1_000_000, 6_000_000, 1_000_000, 6_000_000]);
        assert_eq!(hystart_ends(&mut c, 20, acks[..20].to_vec()), Some(18));
        assert_eq!(hystart_ends(&mut c, 20, acks[20..].to_vec()), None, "found stays set");
        c.on_timeout();
        assert_eq!(hystart_ends(&mut c, 20, acks.clone()), Some(18), "bictcp_reset re-arms it");
    }

    #[test]
    fn static_window_never_changes() {
        let mut c = Controller::new(CongestionControl::Static, 2, 1_000_000, 1448);
        assert_eq!(c.avoid(0, 2, 0, 50), (2, 0));
        assert_eq!(c.ssthresh_on_loss(2), 2);
    }
}
