//! The TCP model, with Linux as the reference.
//!
//! * [`Sender`]: the sending half, over a [`scoreboard::Scoreboard`] in the style of Linux (`packets_out`, `sacked_out`,
//!   `lost_out`, `retrans_out`), slow start from the initial window with per-packet counting,
//!   congestion avoidance ([`cc`]: Reno, CUBIC or a static window), fast retransmit on the
//!   duplicate-ACK threshold with NewReno partial-ACK recovery (RFC 6582) or, with SACK, RACK
//!   loss detection ([`rack`], RFC 8985; RFC 6675's threshold when RACK is off), tail-loss
//!   probes (RFC 8985), proportional rate reduction during recovery (RFC 6937, as Linux),
//!   limited transmit (RFC 3042), and the retransmission timer of RFC 6298 ([`rtt`]) with
//!   exponential back-off. RTT samples follow Linux with timestamps on: Karn's rule for ACK
//!   timing, the timestamp echo when retransmitted data is acknowledged.
//! * [`Receiver`]: cumulative ACKs, SACK blocks (most recent first) and D-SACK (RFC 2883),
//!   delayed ACKs (every second full segment or a timer), immediate ACKs for out-of-order data
//!   and for filled holes, and Linux's quick-ACK mode.
//!
//! Both halves are plain state machines: they take the time as an argument and never schedule
//! anything themselves; the simulator asks them for their next deadline.

pub mod cc;
pub mod dctcp;
pub mod ecn;
pub mod rack;
mod receiver;
pub mod reordering;
pub mod rtt;
pub mod scoreboard;
mod sender;
pub mod tick;
pub mod tsq;
pub mod undo;

pub use receiver::{AckUrgency, Receiver, RttBounds};
pub use sender::{CaState, Sender, Transmission};

use daqnet_core::scenario::{CongestionControl, TcpConfig, TickPhase};
use daqnet_core::Nanos;

/// TCP parameters shared by every connection of a run.
#[derive(Debug, Clone)]
pub struct TcpParams {
    /// Maximum segment size, bytes.
    pub mss: u32,
    /// Initial congestion window, segments.
    pub initial_cwnd: u32,
    /// Congestion control.
    pub cc: CongestionControl,
    /// Window for `CongestionControl::Static`, segments.
    pub static_cwnd: u32,
    /// SACK in use.
    pub sack: bool,
    /// TCP timestamps negotiated (Linux's default, and the simulator's; a packetdrill script's
    /// handshake may leave them out).
    pub timestamps: bool,
    /// Minimum RTO, ns.
    pub min_rto_ns: Nanos,
    /// Maximum RTO, ns.
    pub max_rto_ns: Nanos,
    /// RTO before any RTT sample, ns.
    pub initial_rto_ns: Nanos,
    /// Duplicate-ACK threshold.
    pub dupthresh: u32,
    /// Delayed ACKs on.
    pub delayed_ack: bool,
    /// Delayed-ACK timeout, ns (already capped at `min_rto_ns / 2`).
    pub delayed_ack_ns: Nanos,
    /// Quick-ACK budget, segments.
    pub quickack: u32,
    /// Interactive (ping-pong) mode of delayed ACKs on.
    pub pingpong: bool,
    /// Limited transmit on.
    pub limited_transmit: bool,
    /// Slow start after idle on.
    pub slow_start_after_idle: bool,
    /// RACK loss detection on (only with SACK).
    pub rack: bool,
    /// Tail-loss probes on (only with SACK).
    pub tail_loss_probe: bool,
    /// F-RTO on: after a timeout, new data tests whether it was spurious (RFC 5682).
    pub frto: bool,
    /// ECN negotiated on every connection (RFC 3168; always with DCTCP).
    pub ecn: bool,
    /// The tick the timers run on.
    pub tick: tick::TimerTick,
    /// Whether each host ticks at its own phase ([`TcpParams::on_host`]).
    pub tick_phase: TickPhase,
}

impl TcpParams {
    /// Parameters from a scenario's `[network.tcp]` and MSS.
    pub fn from_config(c: &TcpConfig, mss: u32) -> Self {
        TcpParams {
            mss,
            initial_cwnd: c.initial_cwnd_segments,
            cc: c.congestion_control,
            static_cwnd: c.static_cwnd_segments,
            sack: c.sack,
            timestamps: true,
            min_rto_ns: c.min_rto_ns,
            max_rto_ns: c.max_rto_ns,
            initial_rto_ns: c.initial_rto_ns,
            dupthresh: c.dupack_threshold,
            delayed_ack: c.delayed_ack,
            delayed_ack_ns: c.delayed_ack_ns.min(c.min_rto_ns / 2).max(1),
            quickack: c.quickack_segments,
            pingpong: c.pingpong,
            limited_transmit: c.limited_transmit,
            slow_start_after_idle: c.slow_start_after_idle,
            rack: c.rack && c.sack,
            tail_loss_probe: c.tail_loss_probe && c.sack,
            frto: c.frto,
            ecn: c.uses_ecn(),
            tick: tick::TimerTick::new(c.timer_hz),
            tick_phase: c.tick_phase,
        }
    }

    /// The parameters of host `host`'s endpoints: its own tick phase with `tick_phase =
    /// "per_host"`.
    pub fn on_host(&self, seed: u64, host: u32) -> TcpParams {
        let mut p = self.clone();
        if self.tick_phase == TickPhase::PerHost {
            p.tick = self.tick.on_host(seed, host);
        }
        p
    }
}

/// One end of a TCP connection: the sending half for data it writes and the receiving half
/// for data it reads.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Sending half.
    pub snd: Sender,
    /// Receiving half.
    pub rcv: Receiver,
}

impl Endpoint {
    /// A fresh endpoint.
    pub fn new(p: &TcpParams) -> Self {
        Endpoint { snd: Sender::new(p), rcv: Receiver::new(p) }
    }

    /// Bytes this endpoint holds on the heap (its queues' capacity, which never shrinks, so at
    /// the end of a run this is the most it ever held).
    pub fn heap_bytes(&self) -> usize {
        self.snd.heap_bytes() + self.rcv.heap_bytes()
    }

    /// The earliest pending deadline (sender timer or delayed-ACK timer).
    pub fn poll_timeout(&self) -> Option<Nanos> {
        match (self.snd.poll_timeout(), self.rcv.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests;
