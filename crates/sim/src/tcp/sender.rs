//! The sending half of a TCP endpoint.
//!
//! Segments sent and not yet cumulatively acknowledged sit in the retransmission queue of a
//! [`Scoreboard`], each with Linux's marks (SACKed, lost, retransmitted). From them come the
//! counters Linux uses — `packets_out`, `sacked_out`, `lost_out`, `retrans_out` — and the number
//! of packets in flight, `packets_out − sacked_out − lost_out + retrans_out`, which the window
//! limits. Without SACK, each duplicate ACK counts as one "SACKed" packet (Linux's Reno
//! emulation), which yields limited transmit and NewReno recovery from the same code.
//!
//! With SACK, losses are found as Linux finds them by default: by RACK ([`super::rack`]), and
//! a silent tail is probed (TLP) before the retransmission timer would fire. One timer serves
//! all three purposes, like Linux's `icsk_pending`.

use super::cc::{AckSample, Controller};
use super::rack::Rack;
use super::receiver::RttBounds;
use super::reordering::Reordering;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::tick::TimerTick;
use super::tsq::{self, SmallQueue};
use super::undo::{ts_ms, Undo};
use super::TcpParams;
use daqnet_core::report::TcpCounters;
use daqnet_core::Nanos;

/// Linux `TCP_TIMEOUT_MIN_US`, ns: slack on the probe and reorder timers, added before the
/// timeout is rounded to ticks (Linux ≥ 6.6; older kernels added 2 ticks after rounding).
const TIMER_SLACK_NS: Nanos = 2_000_000;

/// What the sender's timer is armed for (Linux `icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    /// Retransmission timeout.
    Retransmit,
    /// Tail-loss probe.
    LossProbe,
    /// RACK reordering window of a segment not yet declared lost.
    Reorder,
}

/// Congestion state (Linux `tcp_ca_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// No loss suspected.
    Open,
    /// Duplicate ACKs or SACKs seen, below the threshold.
    Disorder,
    /// Reducing the window after an ECN echo (Linux `TCP_CA_CWR`), until data above
    /// `high_seq` is acknowledged.
    Cwr,
    /// Fast recovery after fast retransmit, until `high_seq` is acknowledged.
    Recovery,
    /// After a retransmission timeout, until `high_seq` is acknowledged.
    Loss,
}

impl CaState {
    /// Its name in traces, as `ss -i` and Linux's `tcp_ca_state` call it.
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Cwr => "cwr",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
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
    /// It carries CWR: the first new data after the window was reduced (ECN).
    pub cwr: bool,
}

/// What one pass of [`Sender::fill_window`] did.
#[derive(Debug, Default, Clone, Copy)]
struct Filled {
    /// It stopped because the window was full.
    cwnd_limited: bool,
    /// It sent new data.
    sent_new: bool,
    /// It retransmitted the oldest unacknowledged segment.
    head_resent: bool,
}

/// The most recently sent segment an ACK delivered (Linux `tcp_rate_skb_delivered` keeps its
/// `tx.delivered` as the rate sample's `prior_delivered`).
#[derive(Debug, Clone, Copy)]
struct Newest {
    sent_at: Nanos,
    end: u64,
    delivered: u32,
}

impl Newest {
    /// `cur`, or `seg` if it was sent after it.
    fn of(cur: Option<Newest>, seg: &super::scoreboard::Seg) -> Option<Newest> {
        match cur {
            Some(n) if (n.sent_at, n.end) >= (seg.sent_at, seg.end) => Some(n),
            _ => Some(Newest { sent_at: seg.sent_at, end: seg.end, delivered: seg.delivered }),
        }
    }
}

/// What a cumulative acknowledgement removed from the queue ([`Sender::clean_rtx_queue`]).
#[derive(Debug, Default)]
struct Cleaned {
    /// Segments acknowledged.
    acked: u32,
    /// Of them, those not SACKed before (delivered by this ACK).
    acked_unsacked: u32,
    /// Earliest and latest send time of those sent once and not SACKed (Linux `first_ackt`,
    /// `last_ackt`).
    first_ackt: Option<Nanos>,
    last_ackt: Nanos,
    /// Latest send time of any of them.
    last_sent: Nanos,
    /// One of them had been retransmitted (Karn's rule: no RTT sample from it).
    retrans_acked: bool,
    /// One was sent once, before `high_seq` (Linux `FLAG_ORIG_SACK_ACKED`).
    orig_acked: bool,
    /// The most recently sent segment this ACK delivered, SACK blocks included.
    newest: Option<Newest>,
}

/// What SACK blocks newly acknowledged.
#[derive(Debug, Default)]
struct SackTags {
    /// Segments newly SACKed.
    newly_sacked: u32,
    /// One of them was sent once, before `high_seq` (Linux `FLAG_ORIG_SACK_ACKED`).
    orig_sacked: bool,
    /// The most recently sent of them: when, its end, and what was delivered when it was sent.
    newest: Option<Newest>,
    /// Earliest and latest send time of those sent once (Linux `first_sackt`, `last_sackt`).
    first_sackt: Option<Nanos>,
    last_sackt: Nanos,
}

/// The sending half.
#[derive(Debug, Clone)]
pub struct Sender {
    initial_cwnd: u32,
    sack: bool,
    /// TCP timestamps on the connection: an ACK of a retransmission echoes its time.
    timestamps: bool,
    /// The setting `tcp_reordering`: the duplicate-ACK threshold before any reordering is seen.
    dupthresh: u32,
    /// Segment size, bytes (Linux `mss_cache`): reordering is measured in segments.
    mss: u32,
    reordering: Reordering,
    /// End of the highest segment ever SACKed (Linux `tcp_highest_sack_seq` while any is).
    highest_sack: u64,
    limited_transmit: bool,
    slow_start_after_idle: bool,
    rack_on: bool,
    tlp_on: bool,
    write_seq: u64,
    snd_una: u64,
    snd_nxt: u64,
    sb: Scoreboard,
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
    rack: Rack,
    tick: TimerTick,
    timer: Option<(Nanos, Timer)>,
    /// `snd_nxt` when a loss probe went out, until the probe is resolved.
    tlp_high_seq: Option<u64>,
    /// The outstanding probe resent the last segment (rather than sending new data).
    tlp_retrans: bool,
    /// The probe timer fired: the next `transmit` sends the probe.
    probe_due: bool,
    lsndtime: Nanos,
    /// What happened on this connection, counted as Linux counts it.
    stats: TcpCounters,
    /// The setting `tcp_frto`: F-RTO (RFC 5682) may find a timeout spurious.
    frto_on: bool,
    /// F-RTO runs in this loss episode (Linux `tp->frto`).
    frto: bool,
    /// F-RTO's step 2b: the next transmission sends new data, not retransmissions (Linux
    /// `REXMIT_NEW`).
    frto_send_new: bool,
    /// Timeouts since `snd_una` last advanced (Linux `icsk_retransmits`).
    timeouts_in_row: u32,
    /// Segments delivered, acknowledged or SACKed, over the connection (Linux `tp->delivered`,
    /// wrapping).
    delivered: u32,
    /// Of those, segments delivered by ACKs carrying ECE (Linux `tp->delivered_ce`, wrapping).
    delivered_ce: u32,
    /// ECN negotiated (Linux `TCP_ECN_OK`).
    ecn_ok: bool,
    /// The next new data carries CWR (Linux `TCP_ECN_QUEUE_CWR`).
    queue_cwr: bool,
    undo: Undo,
    /// TCP small queues, where the host's NIC can be paused ([`SmallQueue`]).
    small_queue: Option<SmallQueue>,
}

/// What an ACK did, as the flags Linux's `tcp_ack` passes to `tcp_fastretrans_alert`.
#[derive(Debug, Clone, Copy)]
struct AckFlags {
    /// `snd_una` before the ACK.
    prior_una: u64,
    /// Segments cumulatively acknowledged.
    acked: u32,
    /// Segments delivered: acknowledged or SACKed by this ACK alone (`tcp_newly_delivered`).
    delivered: u32,
    /// `FLAG_SND_UNA_ADVANCED`.
    una_advanced: bool,
    /// `FLAG_DATA_SACKED`.
    data_sacked: bool,
    /// `FLAG_ORIG_SACK_ACKED`: a segment sent once, before `high_seq`, arrived.
    orig_sacked: bool,
    /// Not a duplicate ACK (it acknowledged, carried data, or reported a duplicate).
    not_dup: bool,
    /// The timestamp echo, if the ACK carried one.
    ecr: Option<u32>,
    /// `FLAG_ECE`: it carried an ECN echo, on a connection that negotiated ECN.
    ece: bool,
    /// `tp->lost` before the ACK (new losses make PRR stop slow-starting).
    lost_before: u32,
}

impl Sender {
    /// Whether a segment it sends now is ECN-capable (Linux `tcp_ecn_send`): new data when ECN
    /// is negotiated; ACKs and retransmissions too under DCTCP.
    pub fn ect(&self, new_data: bool) -> bool {
        self.ecn_ok && (new_data || self.cc.needs_ecn())
    }

    /// DCTCP's α, out of 1024.
    pub fn alpha(&self) -> Option<u32> {
        self.cc.alpha()
    }

    /// What the sender has seen of reordering (`tcpi_reordering`, `tcpi_reord_seen`).
    pub fn reordering(&self) -> Reordering {
        self.reordering
    }

    /// Linux `tcp_highest_sack_seq` (`prior_fack` in `tcp_ack`): the end of the highest
    /// SACKed segment, or `snd_una` when none is SACKed.
    fn fack(&self) -> u64 {
        if self.sb.sacked_out() == 0 {
            self.snd_una
        } else {
            self.highest_sack
        }
    }

    /// Bytes of the scoreboard's allocation.
    pub fn heap_bytes(&self) -> usize {
        self.sb.heap_bytes()
    }

    /// A sender with nothing written yet.
    pub fn new(p: &TcpParams) -> Self {
        let cc = Controller::new(p.cc, p.static_cwnd, p.tick.jiffy_ns(), p.mss);
        let (cwnd, ssthresh) = if cc.is_static() { (p.static_cwnd, p.static_cwnd) } else { (p.initial_cwnd, u32::MAX) };
        Sender {
            initial_cwnd: p.initial_cwnd,
            sack: p.sack,
            timestamps: p.timestamps,
            dupthresh: p.dupthresh,
            mss: p.mss,
            reordering: Reordering::new(p.dupthresh),
            highest_sack: 0,
            limited_transmit: p.limited_transmit,
            slow_start_after_idle: p.slow_start_after_idle,
            rack_on: p.rack,
            tlp_on: p.tail_loss_probe,
            write_seq: 0,
            snd_una: 0,
            snd_nxt: 0,
            sb: Scoreboard::new(p.sack),
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
            rack: Rack::default(),
            tick: p.tick,
            timer: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            probe_due: false,
            lsndtime: 0,
            stats: TcpCounters::default(),
            frto_on: p.frto,
            frto: false,
            frto_send_new: false,
            timeouts_in_row: 0,
            delivered: 0,
            delivered_ce: 0,
            ecn_ok: p.ecn,
            queue_cwr: false,
            undo: Undo::default(),
            small_queue: None,
        }
    }

    /// Limits what the socket keeps in its host's queue as Linux's TCP small queues do (for a
    /// host whose NIC can be paused).
    pub fn use_small_queues(&mut self) {
        self.small_queue = Some(SmallQueue::default());
    }

    /// A data segment of `payload` bytes left the host's NIC (small queues on). Returns whether
    /// the socket had held data back and may now send (Linux `tcp_tsq_handler`).
    pub fn on_host_sent(&mut self, payload: u32) -> bool {
        self.small_queue.as_mut().is_some_and(|q| q.on_sent(payload))
    }

    /// Linux `tcp_small_queue_check` before the next segment: whether the socket must wait for
    /// its host's queue to drain.
    #[cold]
    fn small_queue_full(&mut self, retransmit: bool) -> bool {
        let Some(q) = &mut self.small_queue else { return false };
        let out = self.sb.packets_out();
        let rate = tsq::pacing_rate(self.mss, self.cwnd, out, self.ssthresh, self.rtt.srtt());
        q.must_wait(self.mss, rate, retransmit, out <= 1)
    }

    /// Feeds the RTT measured by the connection's handshake (not to the congestion control,
    /// which Linux initializes only once the connection is established, `tcp_init_transfer`).
    pub fn seed_rtt(&mut self, rtt: Nanos) {
        self.rtt.sample(rtt);
        self.rack.on_rtt(rtt);
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

    /// Back-offs of the retransmission timer since the last RTT sample (`tcpi_backoff`).
    pub fn backoff(&self) -> u32 {
        self.rtt.backoff()
    }

    /// Smoothed RTT, ns.
    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }

    /// Segments delivered over the connection, D-SACKed duplicates included (Linux
    /// `tp->delivered` without the handshake's).
    pub fn delivered(&self) -> u32 {
        self.delivered
    }

    /// Timeouts since `snd_una` last advanced (`tcpi_retransmits`).
    pub fn timeouts_in_row(&self) -> u32 {
        self.timeouts_in_row
    }

    /// Segments the receiver reported as duplicates (`tcpi_dsack_dups`).
    pub fn dsack_dups(&self) -> u64 {
        self.undo.dsack_dups()
    }

    /// Smallest RTT measured, ns (`tcpi_min_rtt`).
    pub fn min_rtt(&self) -> Option<Nanos> {
        self.rack.min_rtt()
    }

    /// The RTT and RTO the receiving half of the same end bounds its delayed ACKs with.
    pub fn rtt_bounds(&self) -> RttBounds {
        RttBounds { srtt: self.rtt.srtt(), rto: self.rtt.rto() }
    }

    /// Deadline of the timer (retransmission, loss probe or RACK reordering), if armed.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.timer.map(|(d, _)| d)
    }

    /// Oldest unacknowledged sequence number.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// End of the data written by the application.
    pub fn write_seq(&self) -> u64 {
        self.write_seq
    }

    /// Packets in flight as Linux counts them (without limited transmit, duplicate ACKs below
    /// the threshold do not open the window).
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight(self.limited_transmit || self.state != CaState::Disorder)
    }

    /// The next sequence number to send.
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// The connection's counters (retransmissions, timeouts, recoveries, probes).
    pub fn stats(&self) -> &TcpCounters {
        &self.stats
    }

    /// The retransmission queue and its scoreboard.
    pub fn scoreboard(&self) -> &Scoreboard {
        &self.sb
    }

    /// The application writes `bytes` at `now`.
    pub fn write(&mut self, now: Nanos, bytes: u64) {
        if self.sb.is_empty() && self.snd_nxt == self.write_seq && !self.cc.is_static() {
            let idle = now.saturating_sub(self.lsndtime);
            self.cc.on_idle_restart(now, self.lsndtime);
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
        let prior_packets = self.sb.packets_out();
        let had_new = self.snd_nxt < self.write_seq;
        if std::mem::take(&mut self.probe_due) {
            self.send_loss_probe(now, mss_now, out);
        }
        // Linux tcp_xmit_recovery with REXMIT_NEW (F-RTO step 2b): new data only; if none could
        // go out, F-RTO ends and the lost segments are retransmitted as usual.
        let frto_new = std::mem::take(&mut self.frto_send_new).then(|| self.fill_window(now, mss_now, true, out));
        let Filled { mut cwnd_limited, sent_new, head_resent } = match frto_new {
            Some(f) if f.sent_new => f,
            _ => {
                self.frto &= frto_new.is_none();
                self.fill_window(now, mss_now, false, out)
            }
        };
        // Linux tcp_write_xmit, which runs while data waits to be sent: a flight that fills the
        // window is window-limited even when nothing more waits. Retransmissions alone
        // (tcp_xmit_retransmit_queue) leave the record as it is.
        if had_new {
            cwnd_limited |= self.in_flight() >= self.cwnd;
            if sent_new || cwnd_limited {
                self.cwnd_validate(cwnd_limited);
            }
        }
        // Linux tcp_xmit_retransmit_queue: resending the head restarts the retransmission timer.
        if head_resent && self.timer_kind() != Some(Timer::Reorder) {
            self.rearm_rto(now);
        }
        // Linux tcp_event_new_data_sent, then tcp_schedule_loss_probe.
        if sent_new {
            if prior_packets == 0 || self.timer_kind() == Some(Timer::LossProbe) {
                self.rearm_rto(now);
            }
            self.schedule_loss_probe(now, false);
        }
        if self.timer.is_none() && !self.sb.is_empty() {
            self.rearm_rto(now);
        }
    }

    /// Lost segments first (unless `new_only`), then new data in segments of at most `mss_now`
    /// bytes, while the window allows. Appends to `out`.
    fn fill_window(&mut self, now: Nanos, mss_now: u32, new_only: bool, out: &mut Vec<Transmission>) -> Filled {
        let mut f = Filled::default();
        loop {
            let has_lost = !new_only && self.sb.has_lost_to_resend();
            let has_new = self.snd_nxt < self.write_seq;
            if !has_lost && !has_new {
                break;
            }
            if self.in_flight() >= self.cwnd {
                f.cwnd_limited = true;
                break;
            }
            if self.small_queue.is_some() && self.small_queue_full(has_lost) {
                break;
            }
            let tx = if has_lost {
                let seg = self.sb.retransmit_next_lost(now, self.delivered).expect("a lost segment waits");
                f.head_resent |= seg.start == self.snd_una;
                self.stats.retransmits += 1;
                self.undo.on_retransmit(ts_ms(now));
                Transmission { start: seg.start, end: seg.end, retransmit: true, cwr: false }
            } else {
                f.sent_new = true;
                self.send_new(now, mss_now)
            };
            if self.in_cwnd_reduction() {
                self.prr_out += 1;
            }
            self.lsndtime = now;
            self.put_out(out, tx);
        }
        f
    }

    /// Hands a segment to the host (counted in its small queue, if it keeps one).
    fn put_out(&mut self, out: &mut Vec<Transmission>, tx: Transmission) {
        if let Some(q) = &mut self.small_queue {
            q.on_queued((tx.end - tx.start) as u32);
        }
        out.push(tx);
    }

    /// Puts the next segment of new data (at most `mss_now` bytes) in flight.
    fn send_new(&mut self, now: Nanos, mss_now: u32) -> Transmission {
        let len = (self.write_seq - self.snd_nxt).min(mss_now as u64);
        let (start, end) = (self.snd_nxt, self.snd_nxt + len);
        self.sb.on_sent(start, end, now, self.delivered);
        self.snd_nxt = end;
        Transmission { start, end, retransmit: false, cwr: std::mem::take(&mut self.queue_cwr) }
    }

    fn timer_kind(&self) -> Option<Timer> {
        self.timer.map(|(_, k)| k)
    }

    /// Linux `tcp_rearm_rto`: the retransmission timer from now; when it replaces a probe or
    /// reorder timer, it keeps counting from the head segment's last transmission.
    fn rearm_rto(&mut self, now: Nanos) {
        let rto = self.rtt.rto();
        self.timer = match (self.sb.head(), self.timer_kind()) {
            (None, _) => None,
            (Some(head), Some(Timer::LossProbe | Timer::Reorder)) => {
                Some((self.tick.fires_at(now, (head.sent_at + rto).saturating_sub(now).max(1)), Timer::Retransmit))
            }
            (Some(_), _) => Some((self.tick.fires_at(now, rto), Timer::Retransmit)),
        };
    }

    /// Linux `tcp_schedule_loss_probe`: in the open state, probe after 2·SRTT (+ 200 ms with a
    /// single segment out, else + 2 ms), but never later than the retransmission timer would
    /// fire. `advancing_rto`: the RTO is being restarted now (an ACK advanced `snd_una`).
    fn schedule_loss_probe(&mut self, now: Nanos, advancing_rto: bool) -> bool {
        if !self.tlp_on || self.sb.is_empty() || self.state != CaState::Open {
            return false;
        }
        let rto = self.rtt.rto();
        let mut timeout = match self.rtt.srtt() {
            // With a single segment out a delayed ACK may be all that is missing: wait the
            // minimum RTO more (Linux ≥ 6.6 `tcp_rto_min_us`; older kernels: always 200 ms).
            Some(srtt) => 2 * srtt + if self.sb.packets_out() == 1 { self.rtt.min_rto() } else { TIMER_SLACK_NS },
            None => rto,
        };
        let rto_delta = if advancing_rto {
            rto as i64
        } else {
            let head = self.sb.head().expect("packets out");
            (head.sent_at + rto) as i64 - now as i64
        };
        if rto_delta > 0 {
            timeout = timeout.min(rto_delta as Nanos);
        }
        self.timer = Some((self.tick.fires_at(now, timeout), Timer::LossProbe));
        true
    }

    /// Linux `tcp_send_loss_probe`: one segment of new data if any is waiting (whatever the
    /// window), else the last segment again; then the retransmission timer. At most one probe
    /// is outstanding.
    fn send_loss_probe(&mut self, now: Nanos, mss_now: u32, out: &mut Vec<Transmission>) {
        if self.tlp_high_seq.is_some() || self.sb.is_empty() {
            // No probe: the retransmission timer, counted (as from a probe timer) from the head
            // segment's last transmission.
            self.timer = Some((now, Timer::LossProbe));
            self.rearm_rto(now);
            return;
        }
        if self.snd_nxt < self.write_seq {
            let tx = self.send_new(now, mss_now);
            self.put_out(out, tx);
            self.tlp_retrans = false;
        } else {
            let seg = self.sb.probe_last(now, self.delivered).expect("packets out");
            self.stats.retransmits += 1;
            self.tlp_retrans = true;
            self.put_out(out, Transmission { start: seg.start, end: seg.end, retransmit: true, cwr: false });
        }
        self.tlp_high_seq = Some(self.snd_nxt);
        self.stats.loss_probes += 1;
        self.lsndtime = now;
        self.timer = Some((self.tick.fires_at(now, self.rtt.rto()), Timer::Retransmit));
    }

    /// Linux `tcp_cwnd_validate`: remember whether the window, not the application, limited the
    /// last flight; the window only grows when it did.
    fn cwnd_validate(&mut self, is_limited: bool) {
        if self.snd_una >= self.cwnd_usage_seq
            || is_limited
            || (!self.is_cwnd_limited && self.sb.packets_out() > self.max_packets_out)
        {
            self.is_cwnd_limited = is_limited;
            self.max_packets_out = self.sb.packets_out();
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Prefetches the oldest segment not yet acknowledged and, for a SACK block starting at
    /// `sack_start`, the segment the scoreboard's search will look at first.
    pub(crate) fn prefetch_for_ack(&self, sack_start: Option<u64>) {
        if let Some(seg) = self.sb.head() {
            crate::prefetch::prefetch(seg);
        }
        if let Some(s) = sack_start.filter(|&s| s > self.snd_una && s < self.snd_nxt) {
            self.sb.prefetch_guess(s, self.snd_una, self.snd_nxt);
        }
    }

    fn may_grow(&self) -> bool {
        self.is_cwnd_limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.max_packets_out)
    }

    /// An acknowledgement arrived at `now`: cumulative `ack`, `sacks` blocks (a first block
    /// below `ack` or inside another block is a D-SACK, RFC 2883), whether the segment also
    /// carried data (then it is not a duplicate ACK), and its timestamp echo `ecr` if it had
    /// one. An ACK below `snd_una` (overtaken by a later one) counts only for its SACK blocks,
    /// as Linux's `old_ack` path in `tcp_ack`.
    pub fn on_ack(&mut self, now: Nanos, ack: u64, sacks: &[(u64, u64)], carries_data: bool, ecr: Option<u32>) {
        self.on_ack_ecn(now, ack, sacks, carries_data, ecr, false);
    }

    /// [`Sender::on_ack`] of an ACK that may carry an ECN echo (`ece`), which a connection that
    /// negotiated ECN answers by reducing its window once per window of data (the CWR state).
    pub fn on_ack_ecn(
        &mut self,
        now: Nanos,
        ack: u64,
        sacks: &[(u64, u64)],
        carries_data: bool,
        ecr: Option<u32>,
        ece: bool,
    ) {
        let ece = ece && self.ecn_ok;
        let old = ack < self.snd_una;
        if ack > self.snd_nxt || (old && (!self.sack || sacks.is_empty())) {
            return;
        }
        let ack = ack.max(self.snd_una);
        let prior_una = self.snd_una;
        let prior_fack = self.fack();
        let lost_before = self.sb.lost();
        let dsack = self.sack && self.check_dsack(ack, sacks);
        let SackTags { mut newly_sacked, orig_sacked, newest: newest_sacked, first_sackt, last_sackt } =
            if self.sack { self.sacktag(now, sacks) } else { SackTags::default() };
        let reno_dupacks_before = if self.sack { 0 } else { self.sb.sacked_out() };
        let Cleaned { acked, acked_unsacked, first_ackt, last_ackt, last_sent, retrans_acked, orig_acked, newest } =
            self.clean_rtx_queue(now, ack, prior_fack, newest_sacked);
        let una_advanced = ack > prior_una;
        if una_advanced {
            self.timeouts_in_row = 0;
        }
        if !self.sack && !una_advanced && !carries_data && !self.sb.is_empty() && self.state != CaState::Loss {
            self.sb.reno_dupack();
            newly_sacked = 1;
        }
        // Linux `tcp_newly_delivered`: the window grows, and PRR counts, by the segments
        // delivered by this ACK alone. A segment SACKed earlier was counted then (the SACK
        // branch of `tcp_clean_rtx_queue`); without SACK each duplicate ACK counted one, so a
        // cumulative ACK delivers the rest, at least one (`tcp_remove_reno_sacks`).
        let delivered = if self.sack {
            acked_unsacked + newly_sacked
        } else if acked > 0 {
            acked.saturating_sub(reno_dupacks_before).max(1)
        } else {
            newly_sacked
        };
        self.delivered = self.delivered.wrapping_add(delivered);
        if ece {
            self.delivered_ce = self.delivered_ce.wrapping_add(delivered);
            self.stats.delivered_ce += u64::from(delivered);
        }
        if !old {
            self.cc.on_ack_event(self.snd_una, self.snd_nxt, self.delivered, self.delivered_ce);
        }
        if let Some(n) = newest.filter(|_| self.sack) {
            self.rack.update_reo_wnd(n.delivered, self.delivered);
        }
        // Linux tcp_ack_update_rtt: a sample from segments sent once (Karn's rule), else from
        // newly SACKed ones, else — if timestamps are on — the echo of the segment that made the
        // receiver ACK, which for a retransmission is the retransmission. Without timestamps an
        // ACK of retransmissions only gives no sample, and the back-off stays.
        let sample = match (first_ackt, retrans_acked, first_sackt) {
            _ if old => None,
            (Some(sent), false, _) => Some(now - sent),
            (_, _, Some(sent)) => Some(now - sent),
            _ if una_advanced && self.timestamps => Some(now - last_sent),
            _ => None,
        };
        if let Some(rtt) = sample {
            self.rtt.sample(rtt);
            self.rack.on_rtt(rtt);
        }
        // The congestion control's sample is from the most recently sent segment acknowledged
        // (Linux `ca_rtt_us`), which HyStart reads before the window grows on this ACK.
        let ca_rtt = match (first_ackt, retrans_acked, first_sackt) {
            (_, _, Some(_)) => Some(now - last_sackt),
            (Some(_), false, _) => Some(now - last_ackt),
            _ => sample,
        };
        if acked + newly_sacked > 0 && !old {
            let (cwnd, ssthresh, snd_una, snd_nxt, srtt) =
                (self.cwnd, self.ssthresh, self.snd_una, self.snd_nxt, self.rtt.srtt());
            let a = AckSample { now, rtt: ca_rtt, cwnd, ssthresh, snd_una, snd_nxt, srtt };
            if let Some(ss) = self.cc.on_acked(a) {
                self.ssthresh = ss;
            }
        }
        let not_dup = una_advanced || carries_data || dsack;
        self.process_tlp_ack(ack, dsack, not_dup || newly_sacked > 0);
        let f = AckFlags {
            prior_una,
            acked,
            delivered,
            una_advanced,
            data_sacked: newly_sacked > 0,
            orig_sacked: orig_acked || orig_sacked,
            not_dup,
            ecr: ecr.filter(|_| self.timestamps),
            ece,
            lost_before,
        };
        // Linux tcp_ack_is_dubious: only then tcp_fastretrans_alert; tcp_cong_control always.
        let dubious = !not_dup || newly_sacked > 0 || dsack || ece || self.state != CaState::Open;
        let reorder_armed = dubious && self.fastretrans_alert(now, &f);
        self.cong_control(now, &f);
        // Linux tcp_set_xmit_timer (unless RACK just armed its reorder timer).
        if una_advanced && !reorder_armed && !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_clean_rtx_queue`: removes what `ack` acknowledges cumulatively, tells RACK of
    /// each segment newly delivered, and checks for reordering (the lowest segment sent once
    /// that this ACK delivers below one SACKed before it, `prior_fack`, arrived out of order).
    /// `newest`: the most recently sent segment the SACK blocks delivered.
    fn clean_rtx_queue(&mut self, now: Nanos, ack: u64, prior_fack: u64, newest: Option<Newest>) -> Cleaned {
        let mut c = Cleaned { newest, ..Cleaned::default() };
        let mut reord = u64::MAX;
        let (rack, high_seq) = (&mut self.rack, self.high_seq);
        c.acked = self.sb.ack(ack, |seg| {
            let m = seg.marks();
            if m.ever_retrans {
                c.retrans_acked = true;
            } else if !m.sacked {
                c.first_ackt = c.first_ackt.or(Some(seg.sent_at));
                c.last_ackt = seg.sent_at;
                reord = reord.min(seg.start);
                c.orig_acked |= seg.end <= high_seq;
            }
            if !m.sacked {
                c.acked_unsacked += 1;
                rack.on_delivered(now, seg.sent_at, seg.end, m.ever_retrans);
                c.newest = Newest::of(c.newest, seg);
            }
            c.last_sent = c.last_sent.max(seg.sent_at);
        });
        self.snd_una = ack;
        if self.sack && reord < prior_fack {
            self.reordering.check(reord, self.fack(), self.mss);
        }
        c
    }

    /// Linux `tcp_check_dsack`: whether the first SACK block reports a duplicate (below the
    /// ACK, or inside the second block), and if so its accounting for undo (`tcp_dsack_seen`:
    /// a report of more duplicates than were ever retransmitted is dubious and ignored). The
    /// model counts every segment of an in-queue report as a retransmission reported back,
    /// where Linux counts those marked retransmitted (`tcp_sacktag_one`).
    fn check_dsack(&mut self, ack: u64, sacks: &[(u64, u64)]) -> bool {
        let Some(&(s, e)) = sacks.first() else { return false };
        let dsack = e <= ack || sacks[1..].iter().any(|&(s2, e2)| s2 <= s && e <= e2);
        if dsack && s < e {
            let segs = (e - s).div_ceil(self.mss as u64).max(1) as u32;
            let probe_dup = segs == 1 && e - s <= u64::from(self.mss) && self.tlp_high_seq == Some(e);
            if self.undo.on_dsack(e, segs, self.stats.retransmits) {
                // Linux tcp_dsack_seen: a spurious retransmission is delivered too.
                self.delivered = self.delivered.wrapping_add(segs);
                if self.reordering.seen() > 0 && !probe_dup {
                    self.rack.on_dsack();
                }
            }
        }
        dsack
    }

    /// Linux `tcp_sacktag_write_queue`: marks the segments inside `sacks` SACKed, tells RACK of
    /// each newly delivered one, and checks for reordering (`tcp_sacktag_one`: a segment sent
    /// once, newly SACKed below one SACKed before this ACK, arrived out of order).
    #[inline]
    fn sacktag(&mut self, now: Nanos, sacks: &[(u64, u64)]) -> SackTags {
        let (prior_fack, prior_sacked) = (self.fack(), self.sb.sacked_out() > 0);
        let (mut reord, mut highest) = (u64::MAX, self.highest_sack);
        let mut tags = SackTags::default();
        let rack = &mut self.rack;
        let high_seq = self.high_seq;
        for &(s, e) in sacks {
            tags.newly_sacked += self.sb.sack_block(s, e, |seg| {
                let ever_retrans = seg.marks().ever_retrans;
                highest = highest.max(seg.end);
                if !ever_retrans {
                    if prior_sacked && seg.start < prior_fack {
                        reord = reord.min(seg.start);
                    }
                    tags.first_sackt = Some(tags.first_sackt.map_or(seg.sent_at, |t| t.min(seg.sent_at)));
                    tags.last_sackt = tags.last_sackt.max(seg.sent_at);
                    tags.orig_sacked |= seg.end <= high_seq;
                }
                rack.on_delivered(now, seg.sent_at, seg.end, ever_retrans);
                tags.newest = Newest::of(tags.newest, seg);
            });
        }
        self.highest_sack = highest;
        if reord < u64::MAX {
            // A segment was newly SACKed, so the highest SACKed one is `fack`.
            self.reordering.check(reord, highest, self.mss);
        }
        tags
    }

    /// Linux `tcp_process_tlp_ack`: an ACK at or beyond the probe resolves it. A probe of new
    /// data, or one the receiver reports as a duplicate (D-SACK), found no loss; an ACK beyond
    /// it means the probe repaired a loss, and the window is reduced once (Linux's CWR).
    fn process_tlp_ack(&mut self, ack: u64, dsack: bool, not_dup: bool) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || dsack || !not_dup {
            self.tlp_high_seq = None;
        } else if ack > high {
            if !self.cc.is_static() {
                self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
                self.cwnd = self.ssthresh;
                self.cwnd_cnt = 0;
            }
            self.tlp_high_seq = None;
        }
    }

    /// Linux `tcp_identify_packet_loss` for SACK connections: RACK, or the duplicate-ACK
    /// threshold on SACKed segments. Returns whether the RACK reorder timer was armed.
    fn detect_loss(&mut self, now: Nanos) -> bool {
        if self.rack_on {
            self.rack.take_advanced() && self.rack_mark_lost(now)
        } else {
            self.sb.mark_lost_by_sack(self.reordering.degree());
            false
        }
    }

    /// Linux `tcp_fastretrans_alert`: leaves a recovery or loss episode when `high_seq` is
    /// acknowledged (undoing the reduction if it proves unneeded), finds losses, and enters
    /// recovery. The window itself changes afterwards, in [`Sender::cong_control`]. Returns
    /// whether the RACK reorder timer was armed.
    fn fastretrans_alert(&mut self, now: Nanos, f: &AckFlags) -> bool {
        if self.state == CaState::Open {
            self.undo.clear_stamp();
        } else if self.state == CaState::Cwr && self.snd_una > self.high_seq {
            // Held until data above high_seq is acknowledged, so that the CWR reached the
            // receiver; then tcp_end_cwnd_reduction.
            self.cwnd = self.ssthresh.max(1);
            self.state = CaState::Open;
        } else if self.state == CaState::Recovery && self.snd_una >= self.high_seq {
            let undone = self.try_undo_recovery(f.ecr);
            // Linux tcp_end_cwnd_reduction: the window is ssthresh, unless it was undone.
            if !undone && !self.cc.is_static() {
                self.cwnd = self.ssthresh.max(1);
                self.cwnd_cnt = 0;
            }
        }
        match self.state {
            CaState::Recovery => {
                if f.una_advanced && self.try_undo_partial(f) {
                    return false;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(f.ece);
                }
                let armed = self.identify_loss(now, f.una_advanced);
                if self.state != CaState::Recovery && self.time_to_recover() {
                    self.enter_recovery(f.ece);
                }
                armed
            }
            CaState::Loss => {
                let retrans_before = self.sb.retrans_out();
                self.process_loss(f);
                let armed = self.identify_loss(now, f.una_advanced);
                // Linux tcp_fastretrans_alert, case TCP_CA_Loss: when RACK finds a
                // retransmission lost (FLAG_LOST_RETRANS), the connection falls through to
                // tcp_enter_recovery — ssthresh from the window now, then PRR — instead of
                // slow-starting on in the loss state; so does an undone loss state.
                let lost_retrans = self.sb.retrans_out() < retrans_before;
                if self.state != CaState::Open && !lost_retrans {
                    return armed;
                }
                self.open_or_recover(now, f) || armed
            }
            CaState::Open | CaState::Disorder | CaState::Cwr => self.open_or_recover(now, f),
        }
    }

    /// The default case of Linux `tcp_fastretrans_alert`: undo on D-SACKs, find losses, and
    /// enter recovery if any is found (`tcp_time_to_recover`), else stay open or in disorder.
    fn open_or_recover(&mut self, now: Nanos, f: &AckFlags) -> bool {
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.try_undo_dsack();
        }
        let armed = self.identify_loss(now, f.una_advanced);
        if self.time_to_recover() {
            self.enter_recovery(f.ece);
        } else {
            self.try_to_open(f.ece);
        }
        armed
    }

    /// Linux `tcp_try_undo_dsack`: every retransmission of the episode came back as a
    /// duplicate, so the reduction is undone (and RACK's widened window kept longer).
    fn try_undo_dsack(&mut self) -> bool {
        if !self.undo.all_dsacked() {
            return false;
        }
        self.rack.on_dsack_undo();
        self.undo_cwnd_reduction(false);
        true
    }

    /// Linux `tcp_identify_packet_loss`: RACK or the duplicate-ACK threshold with SACK;
    /// without, NewReno's partial ACK in recovery marks the next hole lost (RFC 6582).
    fn identify_loss(&mut self, now: Nanos, una_advanced: bool) -> bool {
        if self.sack {
            self.detect_loss(now)
        } else {
            if una_advanced && self.state == CaState::Recovery {
                self.sb.mark_head_lost();
            }
            false
        }
    }

    /// Linux `tcp_time_to_recover`: a segment is marked lost, or (without RACK) enough are
    /// SACKed above the head.
    fn time_to_recover(&self) -> bool {
        self.sb.lost_out() > 0 || (!self.rack_on && self.sb.sacked_out() >= self.reordering.degree())
    }

    /// Linux `tcp_try_to_open` and `tcp_try_keep_open`: an ECN echo starts a window reduction
    /// (CWR); otherwise disorder while anything is SACKed, lost or retransmitted, else open; a
    /// new state starts a new `high_seq`.
    fn try_to_open(&mut self, ece: bool) {
        let retrans_done = self.any_retrans_done();
        if !retrans_done {
            self.undo.clear_stamp();
        }
        if ece {
            self.enter_cwr();
        }
        if self.state == CaState::Cwr {
            return;
        }
        let left_out = self.sb.sacked_out() + self.sb.lost_out() > 0;
        let state = if left_out || retrans_done { CaState::Disorder } else { CaState::Open };
        if self.state != state {
            self.state = state;
            self.high_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_any_retrans_done`: a retransmission in flight, or the oldest segment was
    /// retransmitted.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out() > 0 || self.sb.head().is_some_and(|s| s.marks().ever_retrans)
    }

    /// Linux `tcp_process_loss`: in the loss state, undo if the ACK proves the timeout
    /// spurious (timestamps, D-SACKs, or F-RTO: data sent once before the timeout arrived);
    /// F-RTO's step 2b sends new data after the first ACK that advances `snd_una`; the state
    /// ends when `high_seq` is acknowledged.
    fn process_loss(&mut self, f: &AckFlags) {
        let recovered = self.snd_una >= self.high_seq;
        if f.una_advanced && self.try_undo_loss(false, f.ecr) {
            return;
        }
        if self.frto {
            if f.orig_sacked && self.try_undo_loss(true, f.ecr) {
                return;
            }
            if self.snd_nxt > self.high_seq {
                if f.data_sacked || !f.not_dup {
                    self.frto = false; // Step 3a: the loss was real.
                }
            } else if f.una_advanced && !recovered {
                self.high_seq = self.snd_nxt;
                if self.snd_nxt < self.write_seq {
                    self.frto_send_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(f.ecr);
        }
    }

    /// Linux `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, frto_undo: bool, ecr: Option<u32>) -> bool {
        if !frto_undo && !self.undo.may_undo(ecr, self.reno_reopen_held()) {
            return false;
        }
        self.undo_cwnd_reduction(true);
        self.stats.spurious_timeouts += u64::from(frto_undo);
        self.timeouts_in_row = 0;
        if frto_undo || self.sack {
            self.state = CaState::Open;
        }
        true
    }

    /// Linux `tcp_try_undo_recovery`, as `high_seq` is acknowledged: undo if the episode proved
    /// unneeded; the state is open either way. Returns whether it undid.
    fn try_undo_recovery(&mut self, ecr: Option<u32>) -> bool {
        let undone = self.undo.may_undo(ecr, self.reno_reopen_held());
        if undone {
            self.undo_cwnd_reduction(false);
        } else {
            self.rack.on_recovery_kept();
        }
        self.state = CaState::Open;
        undone
    }

    /// Linux `tcp_try_undo_partial`: in recovery, an ACK whose echo predates the first
    /// retransmission filled the hole with an original — reordering, not loss. With
    /// retransmissions still out the episode goes on without marking more lost (returns true:
    /// nothing more to do on this ACK); otherwise the reduction is undone.
    fn try_undo_partial(&mut self, f: &AckFlags) -> bool {
        if !self.undo.pending() || !self.undo.packet_delayed(f.ecr, self.reno_reopen_held()) {
            return false;
        }
        let fack = self.fack();
        if f.prior_una < fack {
            self.reordering.check(f.prior_una, fack, self.mss);
        }
        if self.sb.retrans_out() > 0 {
            return true;
        }
        if !self.any_retrans_done() {
            self.undo.clear_stamp();
        }
        self.undo_cwnd_reduction(true);
        self.try_to_open(f.ece);
        false
    }

    /// The model leaves recovery without SACK as soon as `high_seq` is acknowledged, where Linux
    /// holds it until data above it is (`tcp_is_non_sack_preventing_reopen`); what
    /// `tcp_packet_delayed` reads of that state.
    fn reno_reopen_held(&self) -> bool {
        !self.sack && self.snd_una >= self.high_seq
    }

    /// Linux `tcp_undo_cwnd_reduction`: the window and ssthresh as they were before the
    /// episode (Reno's and CUBIC's `undo_cwnd`: the larger of the window now and before);
    /// `unmark_loss` also forgets which segments were thought lost. Counted in `undos`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        self.stats.undos += 1;
        if unmark_loss {
            self.sb.unmark_lost();
        }
        let prior_ssthresh = self.undo.take();
        if prior_ssthresh > 0 && !self.cc.is_static() {
            self.cwnd = self.cc.undo_cwnd(self.cwnd, self.prior_cwnd);
            self.ssthresh = self.ssthresh.max(prior_ssthresh);
        }
        self.rack.force_advanced();
    }

    /// Linux `tcp_cong_control`: PRR during a reduction (recovery or CWR), else the window
    /// grows if it may.
    fn cong_control(&mut self, now: Nanos, f: &AckFlags) {
        if self.in_cwnd_reduction() {
            let newly_lost = self.sb.lost() != f.lost_before;
            self.cwnd_reduction(f.delivered, f.una_advanced, newly_lost);
        } else if self.may_raise_cwnd(f.acked, f.delivered) {
            self.grow(now, f.delivered);
        }
    }

    /// Linux `tcp_in_cwnd_reduction`: recovery, or CWR after an ECN echo.
    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.state, CaState::Cwr | CaState::Recovery)
    }

    /// Linux `tcp_init_undo` with the `prior_ssthresh` its caller sets: a reduction begins,
    /// with the retransmissions and any probe's already in flight.
    fn init_undo(&mut self, prior_ssthresh: u32) {
        let probe_out = self.tlp_high_seq.is_some() && self.tlp_retrans;
        self.undo.init(self.snd_una, self.sb.retrans_out(), probe_out, prior_ssthresh);
    }

    /// Linux `tcp_init_cwnd_reduction`: the window shrinks towards `ssthresh` by PRR from now
    /// until `high_seq`; the next new data tells an ECN receiver (CWR).
    fn init_cwnd_reduction(&mut self, ssthresh: u32) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.prior_cwnd = self.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.ssthresh = ssthresh;
        self.queue_cwr = self.ecn_ok;
    }

    /// Linux `tcp_enter_cwr`: an ECN echo reduces the window once (never undone), unless a
    /// reduction already runs.
    fn enter_cwr(&mut self) {
        if matches!(self.state, CaState::Open | CaState::Disorder) {
            self.stats.ecn_reductions += 1;
            self.undo.forbid();
            let ssthresh = self.cc.ssthresh_on_ece(self.cwnd);
            self.init_cwnd_reduction(ssthresh);
            self.cwnd_cnt = 0;
            self.state = CaState::Cwr;
        }
    }

    /// Linux `tcp_current_ssthresh`: what undo may restore — ssthresh during a reduction, else
    /// at least three quarters of the window.
    fn current_ssthresh(&self) -> u32 {
        if self.in_cwnd_reduction() {
            self.ssthresh
        } else {
            self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2))
        }
    }

    /// Linux `tcp_enter_recovery`: from the open or the loss state ssthresh is taken from the
    /// window now; from CWR the reduction under way goes on (DCTCP halves the window then, in
    /// its `set_state` hook). `ece`: the ACK also echoed ECN (nothing to undo to).
    fn enter_recovery(&mut self, ece: bool) {
        self.stats.fast_recoveries += 1;
        let prior_ssthresh = if ece || self.in_cwnd_reduction() { 0 } else { self.current_ssthresh() };
        self.init_undo(prior_ssthresh);
        if !self.in_cwnd_reduction() {
            let ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
            self.init_cwnd_reduction(ssthresh);
        } else if self.cc.needs_ecn() {
            self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
        }
        self.state = CaState::Recovery;
        if self.sb.lost_out() == 0 {
            self.sb.mark_head_lost();
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
            // Linux since 5.19 (RFC 6937bis): send as much as was delivered, one more when the
            // ACK advanced snd_una with no new loss (PRR-SSRB: recovery slow-starts back to
            // ssthresh), never beyond ssthresh.
            let s = (self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64);
            let s = if una_advanced && !newly_lost { s + 1 } else { s };
            s.min(delta)
        };
        // Force the fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// Linux `tcp_may_raise_cwnd`: the window grows on an ACK that advances `snd_una` (RFC
    /// 5681); once reordering beyond the setting was seen, on any delivery, SACKs too.
    fn may_raise_cwnd(&self, acked: u32, delivered: u32) -> bool {
        if self.reordering.degree() > self.dupthresh {
            delivered > 0
        } else {
            acked > 0
        }
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

    /// RACK (Linux `tcp_rack_detect_loss`): every segment still missing that was sent before
    /// the most recently sent delivered one is lost once its RTT plus the reordering window has
    /// passed — a retransmission too, which is then due again. For the others the reorder timer
    /// is armed; returns whether it was.
    fn rack_mark_lost(&mut self, now: Nanos) -> bool {
        let in_recovery = matches!(self.state, CaState::Recovery | CaState::Loss);
        let srtt = self.rtt.srtt().unwrap_or(0);
        let seen = self.reordering.seen() > 0;
        let reo_wnd = self.rack.reo_wnd(seen, in_recovery, self.sb.sacked_out(), self.reordering.degree(), srtt);
        let mut wait = 0i64;
        for i in 0..self.sb.len() {
            let seg = *self.sb.seg(i);
            let m = seg.marks();
            if m.sacked || (m.lost && !m.retrans) {
                continue;
            }
            if !self.rack.predates_delivered(seg.sent_at, seg.end) {
                // Segments sent once are in sending order: none further on can predate it.
                if !m.ever_retrans && self.sb.ever_retrans_out() == 0 {
                    break;
                }
                continue;
            }
            let remaining = self.rack.remaining(now, seg.sent_at, reo_wnd);
            if remaining > 0 {
                wait = wait.max(remaining);
            } else if m.retrans && m.lost {
                self.sb.retransmission_lost(i);
                self.stats.lost_retransmits += 1;
            } else {
                self.sb.mark_lost(i);
            }
        }
        if wait > 0 {
            self.timer = Some((self.tick.fires_at(now, wait as Nanos + TIMER_SLACK_NS), Timer::Reorder));
        }
        wait > 0
    }

    /// The timer fired at `now` (the caller then transmits: a retransmission timeout marks
    /// segments lost and shrinks the window to what is in flight plus one; a probe goes out
    /// with the next `transmit`).
    pub fn on_timer(&mut self, now: Nanos) {
        let Some((deadline, kind)) = self.timer else { return };
        if deadline > now {
            return;
        }
        if self.sb.is_empty() {
            self.timer = None;
            return;
        }
        match kind {
            Timer::Retransmit => self.on_rto(now),
            Timer::LossProbe if self.state == CaState::Open => {
                self.timer = None;
                self.probe_due = true;
            }
            Timer::LossProbe => self.rearm_rto(now),
            Timer::Reorder => self.on_reorder_timeout(now),
        }
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window of some segment has passed.
    fn on_reorder_timeout(&mut self, now: Nanos) {
        let lost_before = self.sb.lost();
        self.timer = None;
        self.rack_mark_lost(now);
        let newly_lost = self.sb.lost() != lost_before;
        if newly_lost && matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr) {
            self.enter_recovery(false);
            self.cwnd_reduction(1, false, false);
        }
        if self.timer_kind() != Some(Timer::Reorder) {
            self.timer = Some((now, Timer::Reorder));
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_retransmit_timer` and `tcp_enter_loss`.
    fn on_rto(&mut self, now: Nanos) {
        self.stats.timeouts += 1;
        if matches!(self.state, CaState::Open | CaState::Disorder) && self.sb.sacked_out() >= self.dupthresh {
            self.reordering.on_timeout_after_sacks(self.dupthresh);
        }
        // Linux counts the first timeout of a series by the state it ends.
        if self.state == CaState::Recovery && self.timeouts_in_row == 0 {
            self.stats.recovery_fails += 1;
        }
        // Linux tcp_enter_loss recomputes ssthresh from the window now in the open and
        // disorder states, once a recovery's `high_seq` is acknowledged, and in the loss state
        // when an ACK advanced snd_una since the last timeout (`icsk_retransmits` is 0).
        // Otherwise this window was reduced already.
        let new_recovery = matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr);
        let reduced = match self.state {
            CaState::Open | CaState::Disorder => false,
            CaState::Loss => self.timeouts_in_row > 0 && self.high_seq > self.snd_una,
            CaState::Cwr | CaState::Recovery => self.high_seq > self.snd_una,
        };
        // Linux tcp_timeout_mark_lost: the head and every segment not SACKed is lost, except
        // (with RACK) those sent too recently to tell.
        let (rack_on, rack) = (self.rack_on, &self.rack);
        self.stats.lost_retransmits +=
            self.sb.timeout_mark_lost(|i, seg| rack_on && i > 0 && rack.recently_sent(now, seg.sent_at));
        if !reduced {
            self.init_undo(self.current_ssthresh());
            self.prior_cwnd = self.cwnd;
            self.ssthresh = self.cc.ssthresh_on_loss(self.cwnd);
        }
        self.cc.on_timeout();
        self.cwnd_cnt = 0;
        self.state = CaState::Loss;
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.queue_cwr = self.ecn_ok;
        // F-RTO (RFC 5682 §3.1 step 1) for a timeout outside recovery, or one repeating
        // without progress (§3.2).
        self.frto = self.frto_on && (new_recovery || self.timeouts_in_row > 0);
        self.frto_send_new = false;
        self.timeouts_in_row += 1;
        if !self.cc.is_static() {
            self.cwnd = self.in_flight() + 1;
        }
        self.rtt.back_off();
        self.timer = Some((self.tick.fires_at(now, self.rtt.rto()), Timer::Retransmit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::TcpConfig;

    const US: Nanos = 1_000;
    const MS_NS: Nanos = 1_000_000;

    fn sender(rack: bool) -> Sender {
        let c = TcpConfig { rack, timer_hz: 0, ..Default::default() };
        let mut s = Sender::new(&TcpParams::from_config(&c, 1000));
        s.seed_rtt(100 * US);
        s
    }

    fn send(s: &mut Sender, now: Nanos) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        s.transmit(now, 1000, &mut out);
        out.iter().map(|t| (t.start, t.retransmit)).collect()
    }

    #[test]
    fn rack_finds_a_lost_retransmission_without_a_timeout() {
        let mut s = sender(true);
        s.write(0, 10_000);
        assert_eq!(send(&mut s, 0).len(), 10, "the initial window");
        // Everything but the first segment arrives: it is lost (sent before the SACKed ones).
        s.on_ack(100 * US, 0, &[(1000, 10_000)], false, None);
        assert_eq!(s.state(), CaState::Recovery);
        s.write(100 * US, 2000);
        let tx = send(&mut s, 100 * US);
        assert_eq!(tx[0], (0, true), "fast retransmit first: {tx:?}");
        assert!(tx.contains(&(10_000, false)), "then new data as the window allows: {tx:?}");
        // The retransmission is lost too, and new data sent after it arrives: RACK declares the
        // retransmission lost and it goes out again, long before any timeout.
        s.on_ack(200 * US, 0, &[(1000, 11_000)], false, None);
        assert_eq!(send(&mut s, 200 * US)[0], (0, true));
        assert_eq!((s.stats().retransmits, s.stats().timeouts), (2, 0));
        assert_eq!((s.stats().lost_retransmits, s.stats().recovery_fails), (1, 0), "Linux TCPLostRetransmit");
    }

    #[test]
    fn recovery_slow_starts_back_to_ssthresh_on_acks_that_advance_snd_una() {
        let mut s = sender(true);
        s.write(0, 10_000);
        send(&mut s, 0);
        // Segments 2–8 are lost and 9 arrives: too few SACKs for the duplicate-ACK rule, so
        // RACK's reorder timer marks the hole lost, and recovery starts with one retransmission.
        s.on_ack(100 * US, 2000, &[(9000, 10_000)], false, None);
        let t = s.poll_timeout().expect("the reorder timer");
        s.on_timer(t);
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(send(&mut s, t), [(2000, true)]);
        // An ACK that advances snd_una with no new loss lets PRR send one more than it
        // delivered (Linux ≥ 5.19, RFC 6937bis): two retransmissions, then two more.
        let t = t + 100 * US;
        s.on_ack(t, 3000, &[(9000, 10_000)], false, None);
        assert_eq!(send(&mut s, t), [(3000, true), (4000, true)]);
        s.on_ack(t + 10 * US, 4000, &[(9000, 10_000)], false, None);
        assert_eq!(send(&mut s, t + 10 * US), [(5000, true), (6000, true)]);
        s.on_ack(t + 20 * US, 5000, &[(9000, 10_000)], false, None);
        assert_eq!(send(&mut s, t + 20 * US), [(7000, true), (8000, true)]);
        assert_eq!(s.in_flight(), 4, "the whole hole resent");
    }

    #[test]
    fn without_rack_a_lost_retransmission_waits_for_the_timeout() {
        let mut s = sender(false);
        s.write(0, 10_000);
        send(&mut s, 0);
        s.on_ack(100 * US, 0, &[(1000, 10_000)], false, None);
        s.write(100 * US, 2000);
        assert_eq!(send(&mut s, 100 * US)[0], (0, true));
        s.on_ack(200 * US, 0, &[(1000, 11_000)], false, None);
        assert!(!send(&mut s, 200 * US).contains(&(0, true)), "nothing marks it lost again");
        let rto = s.poll_timeout().expect("the retransmission timer is armed");
        s.on_timer(rto);
        assert_eq!(send(&mut s, rto)[0], (0, true));
        assert_eq!(s.stats().timeouts, 1);
        // As Linux counts them: the recovery failed, and the timeout found its retransmission lost.
        assert_eq!((s.stats().recovery_fails, s.stats().lost_retransmits), (1, 1));
    }

    /// Ten segments out, all lost: the retransmission timer fires and the sender is in the loss
    /// state with a window of one, resending the head. Returns when the timer fired.
    fn all_lost_then_timeout(s: &mut Sender) -> Nanos {
        s.write(0, 10_000);
        send(s, 0);
        let t = s.poll_timeout().expect("probe timer");
        s.on_timer(t);
        send(s, t);
        let rto = s.poll_timeout().expect("retransmission timer");
        s.on_timer(rto);
        assert_eq!((s.state(), s.cwnd()), (CaState::Loss, 1));
        assert_eq!(send(s, rto), [(0, true)]);
        rto
    }

    #[test]
    fn a_lost_retransmission_found_in_the_loss_state_starts_a_recovery() {
        // Linux tcp_fastretrans_alert, TCP_CA_Loss with FLAG_LOST_RETRANS: fall through to
        // tcp_enter_recovery, which (the loss state is no window reduction) recomputes ssthresh
        // from the window and hands the window to PRR.
        let mut s = sender(true);
        let t = all_lost_then_timeout(&mut s);
        let ssthresh_after_timeout = s.ssthresh();
        // The head arrives: slow start, two retransmissions.
        let t = t + 100 * US;
        s.on_ack(t, 1000, &[], false, None);
        assert_eq!((s.state(), s.cwnd()), (CaState::Loss, 2));
        assert_eq!(send(&mut s, t), [(1000, true), (2000, true)]);
        // The first of them is lost, the second arrives: RACK finds the retransmission lost.
        let t = t + 100 * US;
        s.on_ack(t, 1000, &[(2000, 3000)], false, None);
        assert_eq!(s.state(), CaState::Recovery, "a lost retransmission ends the loss state");
        assert_eq!(s.stats().fast_recoveries, 1);
        assert_eq!(s.ssthresh(), 2, "from the window of 2, not the {ssthresh_after_timeout} the timeout left");
        assert_eq!(send(&mut s, t)[0], (1000, true), "resent at once");
        assert_eq!(s.stats().lost_retransmits, 1, "Linux TCPLostRetransmit");
    }

    #[test]
    fn a_timeout_in_the_loss_state_reduces_ssthresh_again_only_after_progress() {
        // Linux tcp_enter_loss: in the loss state ssthresh is recomputed when no timeout has
        // fired since an ACK advanced snd_una (`icsk_retransmits` is 0), and kept otherwise.
        let mut s = sender(true);
        all_lost_then_timeout(&mut s);
        assert_eq!(s.ssthresh(), 5, "NewReno: half the initial window");
        // Nothing comes back: the next timeout keeps it.
        let t2 = s.poll_timeout().unwrap();
        s.on_timer(t2);
        send(&mut s, t2);
        assert_eq!((s.state(), s.ssthresh(), s.stats().timeouts), (CaState::Loss, 5, 2));
        // The head arrives (snd_una advances), the window grows to 2, then both resent
        // segments are lost and the timer fires again: ssthresh from the window now.
        let t3 = t2 + 100 * US;
        s.on_ack(t3, 1000, &[], false, None);
        assert_eq!(send(&mut s, t3).len(), 2);
        let t4 = s.poll_timeout().unwrap();
        s.on_timer(t4);
        assert_eq!((s.state(), s.ssthresh(), s.stats().timeouts), (CaState::Loss, 2, 3));
    }

    #[test]
    fn a_retransmitted_segment_acknowledged_gives_an_rtt_sample_by_timestamp_and_clears_the_back_off() {
        let mut s = sender(true);
        s.write(0, 1000);
        send(&mut s, 0);
        let first = s.rto();
        // One segment out: the probe waits 2·SRTT + 200 ms, capped at the RTO.
        let t = s.poll_timeout().unwrap();
        assert_eq!(t, first);
        s.on_timer(t);
        assert_eq!(send(&mut s, t), [(0, true)]);
        assert_eq!(s.stats().loss_probes, 1);
        // The probe is lost too: the retransmission timer fires and backs off.
        let t2 = s.poll_timeout().unwrap();
        assert_eq!(t2, t + first);
        s.on_timer(t2);
        assert_eq!(send(&mut s, t2), [(0, true)]);
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(s.rto(), 2 * first, "backed off");
        s.on_ack(t2 + 100 * US, 1000, &[], false, None);
        assert_eq!(s.rto(), first, "the timestamp echo of the retransmission is a valid sample");
    }

    #[test]
    fn without_timestamps_karns_rule_takes_no_sample_from_a_retransmission_and_the_back_off_stays() {
        let c = TcpConfig { rack: true, tail_loss_probe: false, timer_hz: 0, ..Default::default() };
        let mut s = Sender::new(&TcpParams { timestamps: false, ..TcpParams::from_config(&c, 1000) });
        s.seed_rtt(100 * US);
        s.write(0, 1000);
        send(&mut s, 0);
        let first = s.rto();
        let t = s.poll_timeout().unwrap();
        s.on_timer(t);
        assert_eq!(send(&mut s, t), [(0, true)]);
        assert_eq!((s.backoff(), s.rto()), (1, 2 * first));
        // Linux tcp_clean_rtx_queue: no RTT from a segment sent twice; tcp_ack_update_rtt then
        // has nothing to clear icsk_backoff with (crates/conform/scripts/rto-backoff.pkt).
        s.on_ack(t + 100 * US, 1000, &[], false, None);
        assert_eq!((s.backoff(), s.rto()), (1, 2 * first), "no sample: the back-off stays");
    }
    fn sender_without_probes() -> Sender {
        let c = TcpConfig { rack: true, tail_loss_probe: false, timer_hz: 0, ..Default::default() };
        let mut s = Sender::new(&TcpParams::from_config(&c, 1000));
        s.seed_rtt(100 * US);
        s
    }

    /// A first flight of ten with ten more segments to send, no ACK: the timeout resends the
    /// head. Returns when it fired.
    fn timeout_with_more_to_send(s: &mut Sender) -> Nanos {
        s.write(0, 20_000);
        assert_eq!(send(s, 0).len(), 10);
        let rto = s.poll_timeout().unwrap();
        s.on_timer(rto);
        assert_eq!(send(s, rto), [(0, true)]);
        rto
    }

    #[test]
    fn frto_sends_new_data_after_a_timeout_and_undoes_it_when_an_original_arrives() {
        // RFC 5682, Linux tcp_process_loss (crates/conform/scripts/frto-spurious-rto.pkt).
        let mut s = sender_without_probes();
        let rto = timeout_with_more_to_send(&mut s);
        let ssthresh_after_timeout = s.ssthresh();
        // The head's ACK could be the retransmission's: new data, not retransmissions.
        s.on_ack(rto + 100 * US, 1000, &[], false, None);
        assert_eq!(send(&mut s, rto + 100 * US), [(10_000, false), (11_000, false)]);
        assert_eq!(s.state(), CaState::Loss);
        // Data sent once before the timeout arrives: the timeout was spurious.
        s.on_ack(rto + 200 * US, 3000, &[], false, None);
        assert_eq!(s.state(), CaState::Open);
        assert!(s.ssthresh() > ssthresh_after_timeout, "ssthresh restored");
        assert!(s.cwnd() >= 10, "the window before the timeout, {}", s.cwnd());
        assert_eq!((s.stats().undos, s.stats().spurious_timeouts), (1, 1));
        assert_eq!(s.scoreboard().lost_out(), 0);
        assert!(send(&mut s, rto + 200 * US).iter().all(|&(_, r)| !r), "nothing resent");
    }

    #[test]
    fn a_timeout_whose_new_data_is_sacked_alone_was_real_and_retransmission_goes_on() {
        let mut s = sender_without_probes();
        let rto = timeout_with_more_to_send(&mut s);
        s.on_ack(rto + 100 * US, 1000, &[], false, None);
        send(&mut s, rto + 100 * US);
        s.on_ack(rto + 200 * US, 1000, &[(10_000, 11_000)], false, None);
        assert_eq!(send(&mut s, rto + 200 * US)[0], (1000, true), "F-RTO step 3a: the loss was real");
        assert_eq!((s.state(), s.stats().undos), (CaState::Loss, 0));
    }

    #[test]
    fn a_dsack_of_every_retransmission_undoes_the_recovery() {
        // Linux tcp_try_undo_dsack (crates/conform/scripts/undo-dsack.pkt).
        let mut s = sender(true);
        s.write(0, 10_000);
        send(&mut s, 0);
        s.on_ack(100 * US, 0, &[(1000, 4000)], false, None);
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(send(&mut s, 100 * US), [(0, true)]);
        s.on_ack(110 * US, 10_000, &[], false, None);
        assert_eq!((s.state(), s.ssthresh()), (CaState::Open, 5), "recovery ended at NewReno's half, not undone");
        s.on_ack(120 * US, 10_000, &[(0, 1000)], false, None);
        assert_eq!((s.cwnd(), s.stats().undos), (10, 1), "the retransmission was a duplicate");
        assert_eq!(s.ssthresh(), u32::MAX);
    }

    #[test]
    fn an_echo_older_than_the_retransmission_undoes_the_recovery_as_it_ends() {
        // Linux tcp_packet_delayed, tcp_try_undo_recovery (crates/conform/scripts/undo-timestamps.pkt).
        // Recovery resends the head at 2 ms; the ACK ending it echoes `ecr`.
        let recovery_ended_by = |ecr: u32| {
            let mut s = sender(true);
            s.write(0, 10_000);
            send(&mut s, 0);
            s.on_ack(100 * US, 0, &[(1000, 4000)], false, Some(ts_ms(0)));
            send(&mut s, 2 * MS_NS);
            s.on_ack(3 * MS_NS, 10_000, &[], false, Some(ecr));
            (s.state(), s.stats().undos, s.ssthresh())
        };
        assert_eq!(recovery_ended_by(ts_ms(0)), (CaState::Open, 1, u32::MAX), "the original's echo");
        assert_eq!(recovery_ended_by(ts_ms(2 * MS_NS)), (CaState::Open, 0, 5), "the retransmission's own echo");
    }
}
