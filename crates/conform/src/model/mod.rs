//! A script against the simulator's TCP endpoint, on a virtual clock: the socket under test
//! opens a connection (passively or actively; the handshake seeds RTT, MSS, SACK and
//! timestamps), the script's writes feed its sender and its reads drain its receiver, injected
//! segments are what it hears, timers fire when they are due, and every segment it sends is
//! compared, MSS by MSS, with the script's `>` lines — sequence range, acknowledgement and
//! time, with packetdrill's tolerance. As packetdrill's sniffer does, a `>` line takes the next
//! segment sent, whenever it was sent; segments no line asks for are not checked.
//! `%{ assert tcpi_… }%` lines are read against the endpoint's state ([`info`]); shell lines
//! and socket options set what the model has ([`settings`]). What the runner does not model
//! makes the script unsupported, named.

mod info;
mod settings;

use crate::packet::{Direction, Ecn, Options, Segment, TcpOption};
use crate::script::{Action, Event, Script, Time};
use daqnet_core::scenario::{CongestionControl, TcpConfig, TickPhase};
use daqnet_core::Nanos;
use daqnet_sim::net::wire::TCP_TIMESTAMPS_BYTES;
use daqnet_sim::tcp::ecn::HeaderBits;
use daqnet_sim::tcp::undo::ts_ms;
use daqnet_sim::tcp::{AckUrgency, Receiver, Sender, TcpParams, Transmission};
use std::collections::VecDeque;
use std::path::Path;

/// packetdrill's default timing tolerance: 4 ms, or 12.5 % of the time since the previous event.
const TOLERANCE_NS: Nanos = 4_000_000;
const TOLERANCE_PERCENT: f64 = 12.5;

/// Timers fired between two events at most (a back-off doubles each; far fewer ever fire).
const MAX_TIMERS: usize = 10_000;

/// How a script ended against the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every segment and assertion as the script says.
    Pass,
    /// The first difference: the script's line and what differed.
    Fail {
        /// The line.
        line: usize,
        /// Expected … got ….
        what: String,
    },
    /// The script needs what the runner or the model lacks.
    Unsupported(String),
}

/// Runs `script` (its shell commands read relative to `dir`) with timers on a tick of `hz`.
pub fn run(script: &Script, dir: &Path, hz: u32) -> Outcome {
    let mut r = Runner::new(hz);
    for e in &script.events {
        if let Err(o) = r.event(e, dir) {
            return o;
        }
    }
    Outcome::Pass
}

/// What the socket under test put on the wire, not yet matched by a `>` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// Its SYN (active open) or SYN-ACK (passive open).
    Syn,
    /// One MSS (or less) of data, `[start, end)` from the first byte.
    Data { start: u64, end: u64 },
    /// Its FIN, at sequence `seq` (from the first byte).
    Fin { seq: u64 },
    /// A segment without data or FIN acknowledging `ack` (from the peer's first byte), with
    /// its SACK blocks.
    Ack { ack: u64, sacks: [(u64, u64); 3], blocks: usize },
}

impl Piece {
    /// An ACK of `ack` without SACK blocks.
    fn bare_ack(ack: u64) -> Piece {
        Piece::Ack { ack, sacks: [(0, 0); 3], blocks: 0 }
    }
}

/// `[start, end)` as the MSS pieces a sender cuts it into (a TSO segment's wire segments).
fn mss_pieces(start: u64, end: u64, mss: u32) -> impl Iterator<Item = Piece> {
    let mss = u64::from(mss.max(1));
    (start..end).step_by(mss as usize).map(move |s| Piece::Data { start: s, end: (s + mss).min(end) })
}

/// The open connection.
struct Conn {
    snd: Sender,
    rcv: Receiver,
    /// The FIN went out after this many bytes; the peer has acknowledged it once its ACK passes.
    fin: Option<u64>,
    /// Payload bytes of the peer's last data segment (a read of less than one MSS is pushed).
    last_len: u32,
}

struct Runner {
    config: TcpConfig,
    /// What the peer's SYN or SYN-ACK offered.
    mss: u32,
    timestamps: bool,
    sack: bool,
    /// The peer's window scale (its SYN's `wscale`), and the window it last advertised, bytes.
    wscale: Option<u8>,
    peer_window: Option<u64>,
    conn: Option<Conn>,
    /// When our SYN or SYN-ACK left (the handshake's RTT sample starts there).
    syn_at: Option<Nanos>,
    /// Whether this socket opened actively (`connect`).
    active: bool,
    /// The model's timestamp for each `TS val` the script gave a segment the socket sent
    /// (packetdrill maps an inbound `ecr` through the same table, `get_outbound_ts_val_mapping`),
    /// and the first such pair, from which it interpolates an `ecr` it has no entry for.
    ts_vals: std::collections::HashMap<u32, u32>,
    first_ts: Option<(u32, u32)>,
    /// `tcp_timestamps`: whether this end agrees to timestamps the peer offers.
    ts_enabled: bool,
    /// `TCP_NODELAY` set: Nagle's algorithm off.
    nodelay: bool,
    /// The end of the last segment shorter than the MSS sent (Linux `snd_sml`).
    small_end: u64,
    /// A short segment went out while another was unacknowledged, which Nagle's algorithm
    /// (Minshall's variant, `tcp_nagle_check`) would have held back: the line that did it.
    nagle: Option<usize>,
    /// `SO_SNDBUF` as set (the kernel doubles it), if set.
    sndbuf: Option<u64>,
    /// The line of the event being run.
    line: usize,
    /// Names the script's Python blocks gave numbers (`X = 0x7fffffff`).
    names: std::collections::HashMap<String, i64>,
    /// Actual time of the previous event: relative times count from it.
    last: Nanos,
    /// What the socket sent, when, with its ECN bits (codepoint, ECE, CWR).
    sent: VecDeque<(Nanos, Piece, HeaderBits)>,
    /// `tcp_ecn`: 1 asks for ECN and accepts it, 2 (Linux's default) only accepts it, 0 neither.
    ecn_setting: u8,
    /// The peer's SYN or SYN-ACK offered ECN.
    peer_ecn: bool,
}

fn unsupported(what: impl Into<String>) -> Outcome {
    Outcome::Unsupported(what.into())
}

fn fail(line: usize, what: impl Into<String>) -> Outcome {
    Outcome::Fail { line, what: what.into() }
}

fn ns(seconds: f64) -> Nanos {
    (seconds * 1e9).round() as Nanos
}

fn secs(t: Nanos) -> String {
    format!("{:.6}", t as f64 / 1e9)
}

/// The `TS val` and `ecr` of a segment line, if it has them.
fn timestamp(seg: &Segment) -> Option<(u32, u32)> {
    match &seg.options {
        Options::List(o) => o.iter().find_map(|o| match *o {
            TcpOption::Timestamp { val, ecr } => Some((val, ecr)),
            _ => None,
        }),
        _ => None,
    }
}

/// The SACK blocks of a segment line, from the first byte.
fn sack_blocks(seg: &Segment) -> Vec<(u64, u64)> {
    match &seg.options {
        Options::List(o) => o
            .iter()
            .filter_map(|o| match o {
                TcpOption::Sack(b) => Some(b.iter().map(|&(l, r)| (l as u64 - 1, r as u64 - 1))),
                _ => None,
            })
            .flatten()
            .collect(),
        _ => Vec::new(),
    }
}

impl Runner {
    fn new(hz: u32) -> Runner {
        let config = TcpConfig {
            congestion_control: CongestionControl::Cubic,
            timer_hz: hz,
            tick_phase: TickPhase::Shared,
            slow_start_after_idle: false,
            ..TcpConfig::default()
        };
        Runner {
            config,
            mss: 536,
            timestamps: false,
            sack: false,
            wscale: None,
            peer_window: None,
            conn: None,
            syn_at: None,
            active: false,
            ts_vals: Default::default(),
            first_ts: None,
            ts_enabled: true,
            nodelay: false,
            small_end: 0,
            nagle: None,
            sndbuf: None,
            line: 0,
            names: Default::default(),
            last: 0,
            sent: VecDeque::new(),
            ecn_setting: 2,
            peer_ecn: false,
        }
    }

    /// The window `e` may happen in: (earliest, latest, nominal).
    fn window(&self, time: Time) -> (Nanos, Nanos, Nanos) {
        let tol = |d: Nanos| TOLERANCE_NS.max((d as f64 * TOLERANCE_PERCENT / 100.0) as Nanos);
        match time {
            Time::Absolute(t) => {
                let at = ns(t);
                let slack = tol(at.saturating_sub(self.last));
                (at.saturating_sub(slack), at + slack, at)
            }
            Time::Relative(d) => {
                let at = self.last + ns(d);
                (at.saturating_sub(tol(ns(d))), at + tol(ns(d)), at)
            }
            Time::Range { from, to, relative } => {
                // packetdrill's `verify_time`: the tolerance grows with the time from the last
                // event to the range's start.
                let base = if relative { self.last } else { 0 };
                let (start, end) = (base + ns(from), base + ns(to));
                let slack = tol(start.saturating_sub(self.last));
                (start.saturating_sub(slack), end + slack, start)
            }
            Time::Any => (self.last, Nanos::MAX, self.last),
        }
    }

    fn event(&mut self, e: &Event, dir: &Path) -> Result<(), Outcome> {
        match &e.action {
            Action::Segment(s) if s.direction == Direction::Outbound => self.expect(e, s),
            action => {
                self.line = e.line;
                let (_, _, at) = self.window(e.time);
                self.run_timers(at.saturating_sub(1), false);
                self.last = at;
                match action {
                    Action::Shell(cmd) => self.shell(cmd, dir),
                    Action::Syscall { name, args, .. } => self.syscall(e.line, name, args, at),
                    Action::Segment(s) => self.inbound(e.line, s, at),
                    Action::Python(code) => self.python(e.line, code),
                }?;
                self.within_model(e.line)
            }
        }
    }

    /// Fires every timer due up to `until`, keeping what the socket sends; with `until_sent`,
    /// only until it sends something: a `>` line's window then ends at the first segment, as
    /// packetdrill's sniffer takes the first one (a `*` line's window is open).
    fn run_timers(&mut self, until: Nanos, until_sent: bool) {
        // A timer that fires re-arms later or not at all; the bound only guards that.
        for _ in 0..MAX_TIMERS {
            if until_sent && !self.sent.is_empty() {
                return;
            }
            let Some(c) = self.conn.as_mut() else { return };
            let due = match (c.snd.poll_timeout(), c.rcv.poll_timeout()) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return,
                },
            };
            if due > until {
                return;
            }
            c.snd.on_timer(due);
            c.rcv.on_timer(due, c.snd.rto());
            self.pump(due);
        }
    }

    /// What the socket sends now: data the sender's window allows (carrying any ACK due), cut
    /// into MSS pieces, else an ACK the receiver owes now.
    fn pump(&mut self, now: Nanos) {
        let Some(c) = self.conn.as_mut() else { return };
        // DCTCP's ACK of what arrived before a change of CE state goes first.
        if let Some((ack, ece)) = c.rcv.take_prior_ack() {
            let bits = HeaderBits::new(c.snd.ect(false), ece, false);
            self.sent.push_back((now, Piece::bare_ack(ack), bits));
        }
        let mut out: Vec<Transmission> = Vec::new();
        c.snd.transmit(now, self.mss, &mut out);
        for t in out.iter().filter(|t| !t.retransmit && t.end - t.start < u64::from(self.mss)) {
            if !self.nodelay && self.small_end > c.snd.snd_una() && self.nagle.is_none() {
                self.nagle = Some(self.line);
            }
            self.small_end = t.end;
        }
        for t in &out {
            // CWR rides on the first segment only (the others of a TSO burst have it cleared).
            let ect = c.snd.ect(!t.retransmit);
            let bits = |i: usize| HeaderBits::new(ect, c.rcv.ece(), t.cwr && i == 0);
            self.sent.extend(mss_pieces(t.start, t.end, self.mss).enumerate().map(|(i, p)| (now, p, bits(i))));
        }
        if !out.is_empty() {
            c.rcv.on_data_sent(now);
            c.rcv.on_ack_sent();
        } else if c.rcv.urgency() == AckUrgency::Now {
            let mut sacks = [(0, 0); 3];
            let (ack, blocks) = c.rcv.ack_fields(&mut sacks);
            c.rcv.on_ack_sent();
            let bits = HeaderBits::new(c.snd.ect(false), c.rcv.ece(), false);
            self.sent.push_back((now, Piece::Ack { ack, sacks, blocks }, bits));
        }
    }

    /// A `>` line: the next piece the socket sent must be this one, in its window.
    fn expect(&mut self, e: &Event, seg: &Segment) -> Result<(), Outcome> {
        if seg.flags.rst {
            return Err(unsupported(format!("line {}: RST is not modelled", e.line)));
        }
        let (earliest, latest, _) = self.window(e.time);
        self.run_timers(latest, true);
        let mut want = self.wanted(e.line, seg)?;
        for (i, piece) in want.iter_mut().enumerate() {
            let Some((t, got, bits)) = self.sent.pop_front() else {
                let what = format!("expected {} by {} s, the model sent nothing", show(piece), secs(latest));
                return Err(fail(e.line, what));
            };
            if let Some(what) = ecn_mismatch(seg, bits, i == 0) {
                return Err(fail(e.line, format!("{}: {what}", show(piece))));
            }
            if got != *piece || t < earliest || t > latest {
                let what = format!(
                    "expected {} at {}..{} s, got {} at {} s",
                    show(piece),
                    secs(earliest),
                    secs(latest),
                    show(&got),
                    secs(t)
                );
                return Err(fail(e.line, what));
            }
            self.last = t;
        }
        if let Some((val, _)) = timestamp(seg) {
            let model = ts_ms(self.last);
            self.ts_vals.insert(val, model);
            self.first_ts.get_or_insert((val, model));
        }
        Ok(())
    }

    /// The pieces a `>` line stands for: its MSS pieces, or its SYN, FIN or ACK.
    fn wanted(&self, line: usize, seg: &Segment) -> Result<Vec<Piece>, Outcome> {
        if seg.flags.syn {
            return Ok(vec![Piece::Syn]);
        }
        let (start, end) = (seg.start as u64 - 1, seg.end as u64 - 1);
        if seg.flags.fin && seg.len == 0 {
            return Ok(vec![Piece::Fin { seq: start }]);
        }
        if seg.flags.fin {
            return Err(unsupported(format!("line {line}: a FIN on data is not modelled")));
        }
        if seg.len == 0 {
            let ack =
                seg.ack.ok_or_else(|| unsupported(format!("line {line}: a segment with neither data nor ACK")))?;
            let mut sacks = [(0, 0); 3];
            let want = sack_blocks(seg);
            let blocks = match &seg.options {
                // Written `<...>` or not at all: the blocks are not checked; take the model's.
                Options::List(_) if want.len() <= 3 => {
                    sacks[..want.len()].copy_from_slice(&want);
                    want.len()
                }
                Options::List(_) => return Err(fail(line, "more than three SACK blocks")),
                _ => match self.sent.front() {
                    Some(&(_, Piece::Ack { sacks: s, blocks: b, .. }, _)) => {
                        sacks = s;
                        b
                    }
                    _ => 0,
                },
            };
            return Ok(vec![Piece::Ack { ack: u64::from(ack) - 1, sacks, blocks }]);
        }
        Ok(mss_pieces(start, end, self.mss).collect())
    }

    fn inbound(&mut self, line: usize, seg: &Segment, at: Nanos) -> Result<(), Outcome> {
        if seg.flags.rst {
            return Err(unsupported(format!("line {line}: RST is not modelled")));
        }
        if seg.flags.syn {
            return self.inbound_syn(line, seg, at);
        }
        if let Some(win) = seg.win {
            // RFC 7323: a window is scaled once both SYNs offered scaling (ours always does).
            self.peer_window = Some(u64::from(win) << self.wscale.unwrap_or(0));
        }
        let Some(c) = self.conn.as_mut() else {
            return self.establish(line, at);
        };
        // Linux `tcp_rcv_established`: the ACK first, then the data.
        let ecr = timestamp(seg).map(|(_, ecr)| match self.ts_vals.get(&ecr) {
            Some(&model) => model,
            None => self.first_ts.map_or(0, |(script, model)| ecr.wrapping_sub(script).wrapping_add(model)),
        });
        if let Some(ack) = seg.ack {
            // The FIN takes one sequence number, which the sender does not count.
            let ack = (u64::from(ack) - 1).min(c.snd.write_seq());
            c.snd.on_ack_ecn(at, ack, &sack_blocks(seg), seg.len > 0, ecr, seg.flags.ece);
        }
        if seg.len > 0 {
            let bits = inbound_ecn(seg);
            c.rcv.on_data(at, seg.start as u64 - 1, seg.end as u64 - 1, bits, c.snd.rtt_bounds());
            c.last_len = seg.len;
        }
        if seg.flags.fin {
            if c.fin.is_none() {
                return Err(unsupported(format!("line {line}: the peer closing first is not modelled")));
            }
            // Linux `tcp_fin` in FIN-WAIT-2: the FIN is acknowledged at once.
            let ack = seg.end as u64;
            let bits = HeaderBits::new(c.snd.ect(false), c.rcv.ece(), false);
            self.sent.push_back((at, Piece::bare_ack(ack), bits));
        }
        self.pump(at);
        Ok(())
    }

    /// What the model's sender does not have, where the script would need it: Nagle's
    /// algorithm, and the peer's receive window (Linux `tcp_snd_wnd_test`, the zero window
    /// probe).
    fn within_model(&self, line: usize) -> Result<(), Outcome> {
        if let Some(at) = self.nagle {
            return Err(unsupported(format!(
                "line {at}: a short segment while another is unacknowledged, which Nagle's algorithm \
                 would hold back (tcp_nagle_check); the model sends at once, as with TCP_NODELAY"
            )));
        }
        let (Some(c), Some(win)) = (&self.conn, self.peer_window) else { return Ok(()) };
        if c.snd.snd_nxt() - c.snd.snd_una() > win {
            return Err(unsupported(format!(
                "line {line}: the peer's window of {win} bytes limits the sender, which the model does not (tcp_snd_wnd_test)"
            )));
        }
        Ok(())
    }

    /// The peer's SYN (passive open: the SYN-ACK goes out at once) or SYN-ACK (active open).
    fn inbound_syn(&mut self, line: usize, seg: &Segment, at: Nanos) -> Result<(), Outcome> {
        // A SYN asks for ECN with ECE and CWR, a SYN-ACK agrees with ECE alone (RFC 3168 §6.1.1).
        self.peer_ecn = if self.active { seg.flags.ece && !seg.flags.cwr } else { seg.flags.ece && seg.flags.cwr };
        if let Options::List(opts) = &seg.options {
            for o in opts {
                match o {
                    TcpOption::Mss(m) => self.mss = u32::from(*m).min(1460),
                    TcpOption::Timestamp { .. } => self.timestamps = true,
                    TcpOption::SackPermitted => self.sack = true,
                    TcpOption::WindowScale(w) => self.wscale = Some(*w),
                    _ => {}
                }
            }
        }
        if self.active {
            self.establish(line, at)?;
            self.sent.push_back((at, Piece::bare_ack(0), HeaderBits::default()));
        } else {
            self.syn_at = Some(at);
            // Linux `tcp_ecn_make_synack`: ECE when it accepts the peer's request.
            let bits = HeaderBits::new(false, self.peer_ecn && self.accepts_ecn(), false);
            self.sent.push_back((at, Piece::Syn, bits));
        }
        Ok(())
    }

    /// The handshake completes at `at`: its RTT seeds the connection.
    fn establish(&mut self, line: usize, at: Nanos) -> Result<(), Outcome> {
        let syn_at = self.syn_at.ok_or_else(|| fail(line, "a segment before the handshake"))?;
        // Linux `tcp_sync_mss`: the timestamps option takes its bytes from every segment.
        self.timestamps &= self.ts_enabled;
        if self.timestamps {
            self.mss -= TCP_TIMESTAMPS_BYTES;
        }
        let ecn = self.peer_ecn && if self.active { self.asks_ecn() } else { self.accepts_ecn() };
        let config = TcpConfig { sack: self.config.sack && self.sack, ecn, ..self.config.clone() };
        let params = TcpParams { timestamps: self.timestamps, ..TcpParams::from_config(&config, self.mss) };
        let mut snd = Sender::new(&params);
        snd.seed_rtt(at - syn_at);
        self.conn = Some(Conn { snd, rcv: Receiver::new(&params), fin: None, last_len: 0 });
        Ok(())
    }

    fn syscall(&mut self, line: usize, name: &str, args: &str, at: Nanos) -> Result<(), Outcome> {
        match name {
            // Blocking or not (fcntl O_NONBLOCK) changes what a call returns, not what TCP does.
            "socket" | "bind" | "listen" | "accept" | "fcntl" => Ok(()),
            "connect" => {
                self.active = true;
                self.syn_at = Some(at);
                // Linux `tcp_ecn_send_syn`: ECE and CWR when it asks for ECN.
                let ask = self.asks_ecn();
                self.sent.push_back((at, Piece::Syn, HeaderBits::new(false, ask, ask)));
                Ok(())
            }
            "setsockopt" => self.setsockopt(line, args),
            "write" | "send" | "sendto" => {
                // write(fd, buf, count), send(fd, buf, len, flags): the third argument.
                let bytes = args
                    .split(',')
                    .nth(2)
                    .and_then(|n| n.trim().parse().ok())
                    .ok_or_else(|| fail(line, format!("{name}({args}): expected a byte count third")))?;
                if let Some(buf) = self.sndbuf.filter(|&b| bytes > 2 * b) {
                    return Err(unsupported(format!(
                        "line {line}: a write of {bytes} bytes beyond SO_SNDBUF's {}",
                        2 * buf
                    )));
                }
                let c = self.conn.as_mut().ok_or_else(|| fail(line, "a write before the connection is established"))?;
                c.snd.write(at, bytes);
                self.pump(at);
                Ok(())
            }
            "read" | "recv" => {
                let c = self.conn.as_mut().ok_or_else(|| fail(line, "a read before the connection is established"))?;
                c.rcv.on_app_read(c.last_len);
                self.pump(at);
                Ok(())
            }
            "close" => self.close(line, at),
            "shutdown" if args.contains("SHUT_WR") || args.contains("SHUT_RDWR") => self.close(line, at),
            other => Err(unsupported(format!("line {line}: the system call {other}"))),
        }
    }

    /// `close`: with everything acknowledged, the FIN goes out alone at once (Linux
    /// `tcp_send_fin`, which sends a FIN beyond the window when nothing is in flight).
    fn close(&mut self, line: usize, at: Nanos) -> Result<(), Outcome> {
        let c = self.conn.as_mut().ok_or_else(|| unsupported(format!("line {line}: close before a connection")))?;
        if c.snd.snd_una() != c.snd.write_seq() {
            return Err(unsupported(format!("line {line}: close with data not yet acknowledged (a FIN on data)")));
        }
        let seq = c.snd.write_seq();
        c.fin = Some(seq);
        self.sent.push_back((at, Piece::Fin { seq }, HeaderBits::new(false, c.rcv.ece(), false)));
        Ok(())
    }

    /// Whether a connect asks for ECN: `tcp_ecn = 1`, or a congestion control that needs it.
    fn asks_ecn(&self) -> bool {
        self.ecn_setting == 1 || self.config.congestion_control == CongestionControl::Dctcp
    }

    /// Whether a listener accepts ECN when asked: `tcp_ecn` 1 or 2, or DCTCP.
    fn accepts_ecn(&self) -> bool {
        self.ecn_setting != 0 || self.config.congestion_control == CongestionControl::Dctcp
    }
}

/// The ECN bits of an inbound segment: its codepoint (ECT(0), ECT(1) or either is ECN-capable)
/// and its CWR flag.
fn inbound_ecn(seg: &Segment) -> HeaderBits {
    let bits =
        HeaderBits::new(matches!(seg.ecn, Some(Ecn::Ect0 | Ecn::Ect1 | Ecn::Ect01 | Ecn::Ce)), false, seg.flags.cwr);
    if seg.ecn == Some(Ecn::Ce) {
        bits.marked()
    } else {
        bits
    }
}

/// How the socket's ECN bits differ from what a `>` line expects of one of its MSS pieces, if
/// they do: its E and W flags always (W on the `first` piece only: Linux clears CWR on the
/// other segments of a TSO burst), its codepoint when the line gives one.
fn ecn_mismatch(seg: &Segment, bits: HeaderBits, first: bool) -> Option<String> {
    let flag = |on: bool, f: &str| if on { f.to_string() } else { format!("no {f}") };
    let cwr = seg.flags.cwr && first;
    if seg.flags.ece != bits.ece() || cwr != bits.cwr() {
        return Some(format!(
            "expected {} and {}, the model sent {} and {}",
            flag(seg.flags.ece, "ECE"),
            flag(cwr, "CWR"),
            flag(bits.ece(), "ECE"),
            flag(bits.cwr(), "CWR")
        ));
    }
    let ect = match seg.ecn? {
        Ecn::NotEct => false,
        Ecn::Ect0 | Ecn::Ect01 => true,
        Ecn::Ect1 | Ecn::Ce => return Some("ECT(1) or CE expected; the model sends ECT(0) or nothing".into()),
    };
    (ect != bits.ect()).then(|| {
        format!(
            "expected {}, the model sent {}",
            if ect { "ECT(0)" } else { "no ECT" },
            if bits.ect() { "ECT(0)" } else { "no ECT" }
        )
    })
}

/// A piece as a script would write it (sequence numbers from 1).
fn show(p: &Piece) -> String {
    match *p {
        Piece::Syn => "the SYN".into(),
        Piece::Data { start, end } => format!("{}:{}({})", start + 1, end + 1, end - start),
        Piece::Fin { seq } => format!("F. {}:{}(0)", seq + 1, seq + 1),
        Piece::Ack { ack, sacks, blocks } => {
            let mut s = format!(". ack {}", ack + 1);
            if blocks > 0 {
                s += " <sack";
                for (l, r) in &sacks[..blocks] {
                    s += &format!(" {}:{}", l + 1, r + 1);
                }
                s += ">";
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: &str = "
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 1000
   +0 accept(3, ..., ...) = 4
";

    fn outcome(rest: &str) -> Outcome {
        let script = Script::parse(&format!("{OPEN}{rest}")).expect("parses");
        run(&script, Path::new("."), 1000)
    }

    #[test]
    fn a_flight_and_its_rto_pass_and_a_wrong_expectation_fails_at_its_line() {
        let flight = "   +0 write(4, ..., 3000) = 3000\n   +0 > P. 1:3001(3000) ack 1\n";
        assert_eq!(outcome(flight), Outcome::Pass);
        // Line 11 expects the third segment again at once: the model sends nothing then.
        let wrong = format!("{flight}   +0 > P. 2001:3001(1000) ack 1\n");
        match outcome(&wrong) {
            Outcome::Fail { line, what } => {
                assert_eq!(line, 11);
                assert!(what.contains("expected 2001:3001(1000)"), "{what}");
            }
            other => panic!("{other:?}"),
        }
        // The probe comes 2 x SRTT + 2 ms later, not 100 ms later.
        let early = format!("{flight}  +.1 > P. 2001:3001(1000) ack 1\n");
        assert!(matches!(outcome(&early), Outcome::Fail { line: 11, .. }), "{:?}", outcome(&early));
        let probe = format!("{flight}+.202 > P. 2001:3001(1000) ack 1\n   +0 %{{ assert tcpi_snd_cwnd == 10 }}%\n");
        assert_eq!(outcome(&probe), Outcome::Pass);
    }

    #[test]
    fn what_the_model_lacks_is_unsupported_and_named() {
        let ecn = Script::parse(&format!("`sysctl -q net.ipv4.tcp_ecn=3`\n{OPEN}")).expect("parses");
        assert_eq!(
            run(&ecn, Path::new("."), 1000),
            Outcome::Unsupported("the setting net.ipv4.tcp_ecn=3 (AccECN is not modelled)".into())
        );
        // A peer window of 2000 bytes (16 << 7 = 2048) would hold back a flight of 3000.
        match outcome("  +.1 < . 1:1(0) ack 1 win 16\n   +0 write(4, ..., 3000) = 3000\n") {
            Outcome::Unsupported(what) => assert!(what.contains("peer's window of 2048 bytes"), "{what}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(outcome("   +0 close(4) = 0\n   +0 > F. 1:1(0) ack 1\n"), Outcome::Pass));
        // A second short segment while the first is unacknowledged: Nagle would hold it.
        let short = "   +0 write(4, ..., 500) = 500\n   +0 write(4, ..., 500) = 500\n";
        match outcome(short) {
            Outcome::Unsupported(what) => assert!(what.contains("line 10: a short segment"), "{what}"),
            other => panic!("{other:?}"),
        }
        let nodelay = "   +0 setsockopt(4, SOL_TCP, TCP_NODELAY, [1], 4) = 0\n";
        assert_eq!(outcome(&format!("{nodelay}{short}")), Outcome::Pass);
        match outcome("   +0 write(4, ..., 1000) = 1000\n   +0 close(4) = 0\n") {
            Outcome::Unsupported(what) => assert!(what.contains("FIN on data"), "{what}"),
            other => panic!("{other:?}"),
        }
    }
}
