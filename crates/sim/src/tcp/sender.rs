//! The sending half of a TCP endpoint.
//!
//! Segments sent and not yet cumulatively acknowledged sit in a retransmission queue, each with
//! Linux's scoreboard flags (SACKed, lost, retransmitted). From them come the counters Linux
//! uses — `packets_out`, `sacked_out`, `lost_out`, `retrans_out` — and the number of packets
//! in flight, `packets_out − sacked_out − lost_out + retrans_out`, which the congestion window
//! limits. Without SACK, each duplicate ACK counts as one "SACKed" packet (Linux's Reno
//! emulation), which yields limited transmit and NewReno recovery from the same code.

use super::cc::Controller;
use super::rtt::RttEstimator;
use super::TcpParams;
use daqnet_core::Nanos;
use std::collections::VecDeque;

const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;
const EVER_RETRANS: u8 = 8;

#[derive(Debug, Clone, Copy)]
struct Seg {
    start: u64,
    end: u64,
    sent_at: Nanos,
    flags: u8,
}

/// Congestion state (Linux `tcp_ca_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// No loss suspected.
    Open,
    /// Duplicate ACKs or SACKs seen, below the threshold.
    Disorder,
    /// Fast recovery after fast retransmit, until `high_seq` is acknowledged.
    Recovery,
    /// After a retransmission timeout, until `high_seq` is acknowledged.
    Loss,
}

/// A segment to put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    /// First sequence number.
    pub start: u64,
    /// One past the last sequence number.
    pub end: u64,
    /// Whether it is a retransmission.
    pub retransmit: bool,
}

/// The sending half.
#[derive(Debug, Clone)]
pub struct Sender {
    initial_cwnd: u32,
    sack: bool,
    dupthresh: u32,
    limited_transmit: bool,
    slow_start_after_idle: bool,
    write_seq: u64,
    snd_una: u64,
    snd_nxt: u64,
    rtx: VecDeque<Seg>,
    packets_out: u32,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    cwnd: u32,
    ssthresh: u32,
    cwnd_cnt: u32,
    cc: Controller,
    state: CaState,
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    rtt: RttEstimator,
    rto_deadline: Option<Nanos>,
    lsndtime: Nanos,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast recoveries entered.
    pub fast_recoveries: u64,
}

impl Sender {
    /// A sender with nothing written yet.
    pub fn new(p: &TcpParams) -> Self {
        let cc = Controller::new(p.cc, p.static_cwnd);
        let (cwnd, ssthresh) = if cc.is_static() { (p.static_cwnd, p.static_cwnd) } else { (p.initial_cwnd, u32::MAX) };
        Sender {
            initial_cwnd: p.initial_cwnd,
            sack: p.sack,
            dupthresh: p.dupthresh,
            limited_transmit: p.limited_transmit,
            slow_start_after_idle: p.slow_start_after_idle,
            write_seq: 0,
            snd_una: 0,
            snd_nxt: 0,
            rtx: VecDeque::new(),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            cwnd,
            ssthresh,
            cwnd_cnt: 0,
            cc,
            state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            rtt: RttEstimator::new(p.initial_rto_ns, p.min_rto_ns, p.max_rto_ns),
            rto_deadline: None,
            lsndtime: 0,
            retransmits: 0,
            timeouts: 0,
            fast_recoveries: 0,
        }
    }

    /// Feeds the RTT measured by the connection's handshake.
    pub fn seed_rtt(&mut self, rtt: Nanos) {
        self.rtt.sample(rtt);
        self.cc.on_rtt(rtt);
    }

    /// Congestion window, segments.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }

    /// Slow-start threshold, segments (`u32::MAX` before the first loss).
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// Congestion state.
    pub fn state(&self) -> CaState {
        self.state
    }

    /// Current retransmission timeout, ns.
    pub fn rto(&self) -> Nanos {
        self.rtt.rto()
    }

    /// Smoothed RTT, ns.
    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }

    /// Deadline of the retransmission timer, if armed.
    pub fn rto_deadline(&self) -> Option<Nanos> {
        self.rto_deadline
    }

    /// Oldest unacknowledged sequence number.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// End of the data written by the application.
    pub fn write_seq(&self) -> u64 {
        self.write_seq
    }

    /// Packets in flight as Linux counts them.
    pub fn in_flight(&self) -> u32 {
        let sacked = if !self.limited_transmit && self.state == CaState::Disorder { 0 } else { self.sacked_out };
        self.packets_out - sacked - self.lost_out + self.retrans_out
    }

    /// The application writes `bytes` at `now`.
    pub fn write(&mut self, now: Nanos, bytes: u64) {
        if self.packets_out == 0 && self.snd_nxt == self.write_seq && !self.cc.is_static() {
            let idle = now.saturating_sub(self.lsndtime);
            self.cc.on_idle_restart(idle);
            let rto = self.rtt.rto();
            if self.slow_start_after_idle && idle > rto {
                // Linux tcp_cwnd_restart (RFC 2861): halve per idle RTO, down to the initial window.
                let restart = self.initial_cwnd.min(self.cwnd);
                self.ssthresh = self.ssthresh.max(self.cwnd - self.cwnd / 4);
                let mut delta = idle;
                while delta > rto && self.cwnd > restart {
                    self.cwnd >>= 1;
                    delta -= rto;
                }
                self.cwnd = self.cwnd.max(restart);
                self.cwnd_cnt = 0;
            }
        }
        self.write_seq += bytes;
    }

    /// Everything the window allows now: lost segments first, then new data in segments of at
    /// most `mss_now` bytes. Appends to `out`.
    pub fn transmit(&mut self, now: Nanos, mss_now: u32, out: &mut Vec<Transmission>) {
        let before = out.len();
        let mut cwnd_limited = false;
        loop {
            let has_lost = self.lost_out > self.retrans_out;
            let has_new = self.snd_nxt < self.write_seq;
            if !has_lost && !has_new {
                break;
            }
            if self.in_flight() >= self.cwnd {
                cwnd_limited = true;
                break;
            }
            let tx = if has_lost {
                let seg = self
                    .rtx
                    .iter_mut()
                    .find(|s| s.flags & (LOST | RETRANS) == LOST)
                    .expect("lost_out > retrans_out implies a lost segment not yet retransmitted");
                seg.flags |= RETRANS | EVER_RETRANS;
                seg.sent_at = now;
                self.retrans_out += 1;
                self.retransmits += 1;
                Transmission { start: seg.start, end: seg.end, retransmit: true }
            } else {
                let len = (self.write_seq - self.snd_nxt).min(mss_now as u64);
                let seg = Seg { start: self.snd_nxt, end: self.snd_nxt + len, sent_at: now, flags: 0 };
                self.rtx.push_back(seg);
                self.snd_nxt += len;
                self.packets_out += 1;
                Transmission { start: seg.start, end: seg.end, retransmit: false }
            };
            if self.state == CaState::Recovery {
                self.prr_out += 1;
            }
            self.lsndtime = now;
            if self.rto_deadline.is_none() {
                self.rto_deadline = Some(now + self.rtt.rto());
            }
            out.push(tx);
        }
        if out.len() > before {
            self.cwnd_validate(cwnd_limited);
        }
    }

    /// Linux `tcp_cwnd_validate`: remember whether the window, not the application, limited the
    /// last flight; the window only grows when it did.
    fn cwnd_validate(&mut self, is_limited: bool) {
        if self.snd_una >= self.cwnd_usage_seq
            || is_limited
            || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    fn may_grow(&self) -> bool {
        self.is_cwnd_limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.max_packets_out)
    }

    /// An acknowledgement arrived at `now`: cumulative `ack`, `sacks` blocks, and whether the
    /// segment also carried data (then it is not a duplicate ACK).
    pub fn on_ack(&mut self, now: Nanos, ack: u64, sacks: &[(u64, u64)], carries_data: bool) {
        if ack > self.snd_nxt || ack < self.snd_una {
            return;
        }
        let prior_una = self.snd_una;
        let lost_before = self.lost_out;
        let mut newly_sacked = 0;
        if self.sack {
            for &(s, e) in sacks {
                newly_sacked += self.mark_sacked(s, e);
            }
        }
        let mut acked = 0u32;
        let mut first_sent = None;
        let mut retrans_acked = false;
        while let Some(seg) = self.rtx.front() {
            if seg.end > ack {
                break;
            }
            let seg = self.rtx.pop_front().expect("front exists");
            self.packets_out -= 1;
            if seg.flags & SACKED != 0 && self.sack {
                self.sacked_out -= 1;
            }
            if seg.flags & LOST != 0 {
                self.lost_out -= 1;
            }
            if seg.flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
            if seg.flags & EVER_RETRANS != 0 {
                retrans_acked = true;
            } else if first_sent.is_none() {
                first_sent = Some(seg.sent_at);
            }
            acked += 1;
        }
        self.snd_una = ack;
        let una_advanced = ack > prior_una;
        if !self.sack {
            if una_advanced {
                // Linux tcp_remove_reno_sacks: one of the acknowledged packets is the one the
                // duplicate ACKs were about.
                self.sacked_out = self.sacked_out.saturating_sub(acked.saturating_sub(1));
            } else if !carries_data && self.packets_out > 0 && self.state != CaState::Loss {
                self.sacked_out = (self.sacked_out + 1).min(self.packets_out - self.lost_out);
                newly_sacked = 1;
            }
            self.sacked_out = self.sacked_out.min(self.packets_out - self.lost_out);
        }
        // Karn's rule: no sample when a retransmitted segment is among those acknowledged.
        if let (Some(sent), false) = (first_sent, retrans_acked) {
            let rtt = now - sent;
            self.rtt.sample(rtt);
            self.cc.on_rtt(rtt);
        }
        if una_advanced {
            self.rto_deadline = if self.packets_out > 0 { Some(now + self.rtt.rto()) } else { None };
        }
        self.process_loss_state(now, acked, acked + newly_sacked, una_advanced, lost_before);
    }

    /// Linux `tcp_fastretrans_alert`, simplified to the parts that matter here.
    fn process_loss_state(&mut self, now: Nanos, acked: u32, delivered: u32, una_advanced: bool, lost_before: u32) {
        if matches!(self.state, CaState::Recovery | CaState::Loss) && self.snd_una >= self.high_seq {
            if self.state == CaState::Recovery && !self.cc.is_static() {
                self.cwnd = self.ssthresh.max(1);
                self.cwnd_cnt = 0;
            }
            self.state = CaState::Open;
        }
        match self.state {
            CaState::Open | CaState::Disorder => {
                if self.sack {
                    self.mark_lost_by_sack();
                }
                if self.lost_out > 0 || self.sacked_out >= self.dupthresh {
                    self.enter_recovery();
                    let newly_lost = self.lost_out > lost_before;
                    self.cwnd_reduction(delivered, una_advanced, newly_lost);
                } else {
                    self.state = if self.sacked_out > 0 { CaState::Disorder } else { CaState::Open };
                    if acked > 0 {
                        self.grow(now, acked);
                    }
                }
            }
            CaState::Recovery => {
                if self.sack {
                    self.mark_lost_by_sack();
                } else if una_advanced {
                    // RFC 6582: a partial ACK means the next hole is lost too; retransmit it.
                    self.mark_head_lost();
                }
                let newly_lost = self.lost_out > lost_before;
                self.cwnd_reduction(delivered, una_advanced, newly_lost);
            }
            CaState::Loss => {
                if self.sack {
                    self.mark_lost_by_sack();
                }
                if acked > 0 {
                    self.grow(now, acked);
                }
            }
        }
    }

    fn enter_recovery(&mut self) {
        self.fast_recoveries += 1;
        self.prior_cwnd = self.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
        self.high_seq = self.snd_nxt;
        self.state = CaState::Recovery;
        if self.lost_out == 0 {
            self.mark_head_lost();
        }
    }

    /// Proportional rate reduction (RFC 6937, Linux `tcp_cwnd_reduction`).
    fn cwnd_reduction(&mut self, delivered: u32, una_advanced: bool, newly_lost: bool) {
        if delivered == 0 || self.cc.is_static() {
            return;
        }
        self.prr_delivered += delivered;
        let in_flight = self.in_flight() as i64;
        let delta = self.ssthresh as i64 - in_flight;
        let mut sndcnt = if delta < 0 {
            let dividend = self.ssthresh as i64 * self.prr_delivered as i64 + self.prior_cwnd as i64 - 1;
            dividend / self.prior_cwnd.max(1) as i64 - self.prr_out as i64
        } else {
            let s = (self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64);
            if una_advanced && !newly_lost {
                s.min(delta)
            } else {
                s
            }
        };
        // Force the fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    fn grow(&mut self, now: Nanos, acked: u32) {
        if self.cc.is_static() || !self.may_grow() {
            return;
        }
        let mut acked = acked;
        if self.cwnd < self.ssthresh {
            let inc = acked.min(self.ssthresh - self.cwnd);
            self.cwnd += inc;
            acked -= inc;
            if acked == 0 {
                return;
            }
        }
        (self.cwnd, self.cwnd_cnt) = self.cc.avoid(now, self.cwnd, self.cwnd_cnt, acked);
    }

    fn mark_sacked(&mut self, s: u64, e: u64) -> u32 {
        let mut i = self.rtx.partition_point(|seg| seg.start < s);
        let mut n = 0;
        while i < self.rtx.len() && self.rtx[i].end <= e {
            let seg = &mut self.rtx[i];
            if seg.flags & SACKED == 0 {
                seg.flags |= SACKED;
                self.sacked_out += 1;
                n += 1;
                if seg.flags & LOST != 0 {
                    seg.flags &= !LOST;
                    self.lost_out -= 1;
                }
                if seg.flags & RETRANS != 0 {
                    seg.flags &= !RETRANS;
                    self.retrans_out -= 1;
                }
            }
            i += 1;
        }
        n
    }

    /// RFC 6675 IsLost: a segment with at least `dupthresh` SACKed segments above it is lost.
    fn mark_lost_by_sack(&mut self) {
        let mut sacked_above = self.sacked_out;
        for seg in self.rtx.iter_mut() {
            if sacked_above < self.dupthresh {
                break;
            }
            if seg.flags & SACKED != 0 {
                sacked_above -= 1;
            } else if seg.flags & LOST == 0 {
                seg.flags |= LOST;
                self.lost_out += 1;
            }
        }
    }

    fn mark_head_lost(&mut self) {
        if let Some(seg) = self.rtx.front_mut() {
            if seg.flags & (SACKED | LOST) == 0 {
                seg.flags |= LOST;
                self.lost_out += 1;
            }
        }
    }

    /// The retransmission timer fired at `now`. Returns whether it was a real timeout (then
    /// the caller should transmit: the head is marked lost and the window is one segment).
    pub fn on_rto(&mut self, now: Nanos) -> bool {
        match self.rto_deadline {
            Some(d) if d <= now => {}
            _ => return false,
        }
        self.rto_deadline = None;
        if self.packets_out == 0 {
            return false;
        }
        self.timeouts += 1;
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
        }
        if !self.cc.is_static() {
            self.cwnd = 1;
        }
        self.cwnd_cnt = 0;
        self.state = CaState::Loss;
        self.high_seq = self.snd_nxt;
        if !self.sack {
            self.sacked_out = 0;
        }
        self.lost_out = 0;
        self.retrans_out = 0;
        for seg in self.rtx.iter_mut() {
            seg.flags &= !RETRANS;
            if seg.flags & SACKED == 0 {
                seg.flags |= LOST;
                self.lost_out += 1;
            }
        }
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
        true
    }
}
