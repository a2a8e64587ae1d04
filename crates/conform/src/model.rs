//! A script against the simulator's TCP sender, on a virtual clock: the socket under test
//! accepts a connection (the handshake seeds its RTT and MSS), the script's writes feed the
//! sender, its injected ACKs and SACKs feed `on_ack`, timers fire when they are due, and every
//! segment the sender sends is compared, MSS by MSS, with the script's `>` lines — sequence
//! range and time, with packetdrill's tolerance. `%{ assert tcpi_… }%` lines are read against
//! the sender's state. What the runner does not model yet makes the script unsupported, named.

use crate::packet::{Direction, Segment, TcpOption};
use crate::script::{Action, Event, Script, Time};
use daqnet_core::scenario::{CongestionControl, TcpConfig, TickPhase};
use daqnet_core::Nanos;
use daqnet_sim::tcp::{CaState, Sender, TcpParams, Transmission};
use std::collections::VecDeque;
use std::path::Path;

/// packetdrill's default timing tolerance: 4 ms, or 12.5 % of the time since the previous event.
const TOLERANCE_NS: Nanos = 4_000_000;
const TOLERANCE_PERCENT: f64 = 12.5;

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
    let last_line = script.events.last().map_or(0, |e| e.line);
    match r.check_quiet(r.last, last_line) {
        Ok(()) => Outcome::Pass,
        Err(o) => o,
    }
}

struct Runner {
    config: TcpConfig,
    /// Whether the handshake negotiated timestamps (the SYN carried TS).
    timestamps: bool,
    sender: Option<Sender>,
    mss: u32,
    /// When the SYN-ACK left (the handshake's RTT sample starts there).
    synack_at: Option<Nanos>,
    /// Actual time of the previous event: relative times count from it.
    last: Nanos,
    /// Segments the sender sent, MSS by MSS, not yet matched: (time, start, end).
    sent: VecDeque<(Nanos, u64, u64)>,
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

impl Runner {
    fn new(hz: u32) -> Runner {
        let config = TcpConfig {
            congestion_control: CongestionControl::Cubic,
            timer_hz: hz,
            tick_phase: TickPhase::Shared,
            slow_start_after_idle: false,
            ..TcpConfig::default()
        };
        Runner { config, timestamps: false, sender: None, mss: 536, synack_at: None, last: 0, sent: VecDeque::new() }
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
                let base = if relative { self.last } else { 0 };
                ((base + ns(from)).saturating_sub(TOLERANCE_NS), base + ns(to) + TOLERANCE_NS, base + ns(from))
            }
            Time::Any => (self.last, Nanos::MAX, self.last),
        }
    }

    fn event(&mut self, e: &Event, dir: &Path) -> Result<(), Outcome> {
        match &e.action {
            Action::Segment(s) if s.direction == Direction::Outbound => self.expect(e, s),
            action => {
                let (_, _, at) = self.window(e.time);
                self.run_timers(at.saturating_sub(1));
                self.check_quiet(at, e.line)?;
                self.last = at;
                match action {
                    Action::Shell(cmd) => self.shell(cmd, dir),
                    Action::Syscall { name, args, .. } => self.syscall(e.line, name, args, at),
                    Action::Segment(s) => self.inbound(e.line, s, at),
                    Action::Python(code) => self.python(e.line, code),
                }
            }
        }
    }

    /// Fires every timer due up to `until`, keeping what the sender sends, until it sends
    /// something the script has not matched yet (which the next event checks): a `*` line's
    /// open window then ends at the first segment, not with the sender's last timer.
    fn run_timers(&mut self, until: Nanos) {
        while self.sent.is_empty() {
            let Some(due) = self.sender.as_ref().and_then(Sender::poll_timeout).filter(|&d| d <= until) else { break };
            let s = self.sender.as_mut().expect("a timer belongs to a sender");
            s.on_timer(due);
            self.pump(due);
        }
    }

    /// What the sender sends now, cut into MSS pieces.
    fn pump(&mut self, now: Nanos) {
        let Some(s) = self.sender.as_mut() else { return };
        let mut out: Vec<Transmission> = Vec::new();
        s.transmit(now, self.mss, &mut out);
        for t in out {
            let mut start = t.start;
            while start < t.end {
                let end = (start + self.mss as u64).min(t.end);
                self.sent.push_back((now, start, end));
                start = end;
            }
        }
    }

    /// Fails if the sender sent something the script did not expect before `at`, when the
    /// script's `line` comes.
    fn check_quiet(&self, at: Nanos, line: usize) -> Result<(), Outcome> {
        match self.sent.front() {
            Some(&(t, s, e)) if t < at => Err(fail(
                line,
                format!(
                    "the model sent {}:{}({}) at {:.6} s, which the script does not expect",
                    s + 1,
                    e + 1,
                    e - s,
                    t as f64 / 1e9
                ),
            )),
            _ => Ok(()),
        }
    }

    fn expect(&mut self, e: &Event, seg: &Segment) -> Result<(), Outcome> {
        if seg.flags.syn {
            // The SYN-ACK: the handshake is not modelled, only its time kept.
            let (_, _, at) = self.window(e.time);
            self.synack_at = Some(at);
            self.last = at;
            return Ok(());
        }
        if seg.flags.fin || seg.flags.rst {
            return Err(unsupported(format!("line {}: FIN and RST are not modelled", e.line)));
        }
        if seg.len == 0 {
            return Err(unsupported(format!(
                "line {}: pure ACKs from the socket under test (the receiver) are not run yet",
                e.line
            )));
        }
        let (earliest, latest, _) = self.window(e.time);
        self.run_timers(latest);
        let mut start = seg.start as u64 - 1;
        let end = seg.end as u64 - 1;
        while start < end {
            let piece_end = (start + self.mss as u64).min(end);
            let Some((t, s, pe)) = self.sent.pop_front() else {
                let what = format!(
                    "expected {}:{}({}) by {:.6} s, the model sent nothing",
                    start + 1,
                    piece_end + 1,
                    piece_end - start,
                    latest as f64 / 1e9
                );
                return Err(fail(e.line, what));
            };
            if (s, pe) != (start, piece_end) || t < earliest || t > latest {
                let what = format!(
                    "expected {}:{}({}) at {:.6}..{:.6} s, got {}:{}({}) at {:.6} s",
                    start + 1,
                    piece_end + 1,
                    piece_end - start,
                    earliest as f64 / 1e9,
                    latest as f64 / 1e9,
                    s + 1,
                    pe + 1,
                    pe - s,
                    t as f64 / 1e9
                );
                return Err(fail(e.line, what));
            }
            self.last = t;
            start = piece_end;
        }
        Ok(())
    }

    fn inbound(&mut self, line: usize, seg: &Segment, at: Nanos) -> Result<(), Outcome> {
        if seg.flags.syn {
            if let crate::packet::Options::List(opts) = &seg.options {
                for o in opts {
                    if let TcpOption::Mss(m) = o {
                        self.mss = u32::from(*m).min(1460);
                    }
                    if let TcpOption::Timestamp { .. } = o {
                        self.timestamps = true;
                    }
                }
            }
            return Ok(());
        }
        if seg.len > 0 {
            return Err(unsupported(format!(
                "line {line}: data to the socket under test (the receiver) is not run yet"
            )));
        }
        let Some(ack) = seg.ack else { return Ok(()) };
        let sender = match self.sender.as_mut() {
            Some(s) => s,
            None => {
                // The handshake's last ACK: the connection is established.
                let synack = self.synack_at.ok_or_else(|| fail(line, "an ACK before the SYN-ACK"))?;
                let params =
                    TcpParams { timestamps: self.timestamps, ..TcpParams::from_config(&self.config, self.mss) };
                let mut s = Sender::new(&params);
                s.seed_rtt(at - synack);
                self.sender = Some(s);
                return Ok(());
            }
        };
        let sacks: Vec<(u64, u64)> = match &seg.options {
            crate::packet::Options::List(o) => o
                .iter()
                .filter_map(|o| match o {
                    TcpOption::Sack(b) => {
                        Some(b.iter().map(|&(l, r)| (l as u64 - 1, r as u64 - 1)).collect::<Vec<_>>())
                    }
                    _ => None,
                })
                .flatten()
                .collect(),
            _ => Vec::new(),
        };
        sender.on_ack(at, ack as u64 - 1, &sacks, false);
        self.pump(at);
        Ok(())
    }

    fn syscall(&mut self, line: usize, name: &str, args: &str, at: Nanos) -> Result<(), Outcome> {
        match name {
            "socket" | "bind" | "listen" | "accept" => Ok(()),
            "setsockopt" if args.contains("TCP_CONGESTION") => {
                self.config.congestion_control = match () {
                    _ if args.contains("\"cubic\"") => CongestionControl::Cubic,
                    _ if args.contains("\"reno\"") => CongestionControl::Newreno,
                    _ => return Err(unsupported(format!("line {line}: congestion control in `{args}`"))),
                };
                Ok(())
            }
            "setsockopt" if args.contains("SO_REUSEADDR") => Ok(()),
            "write" => {
                let bytes: u64 = args
                    .rsplit(',')
                    .next()
                    .and_then(|n| n.trim().parse().ok())
                    .ok_or_else(|| fail(line, format!("write({args}): expected a byte count last")))?;
                let s =
                    self.sender.as_mut().ok_or_else(|| fail(line, "a write before the connection is established"))?;
                s.write(at, bytes);
                self.pump(at);
                Ok(())
            }
            other => Err(unsupported(format!("line {line}: the system call {other}"))),
        }
    }

    /// A shell command: a settings file beside the script, or sysctls.
    fn shell(&mut self, cmd: &str, dir: &Path) -> Result<(), Outcome> {
        for line in cmd.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if line.ends_with(".sh") && !line.contains(' ') {
                let text = std::fs::read_to_string(dir.join(line)).map_err(|e| unsupported(format!("{line}: {e}")))?;
                let joined = text.replace("\\\n", " ");
                self.shell(&joined, dir)?;
            } else if line.starts_with("ip tcp_metrics flush") || line.starts_with("tc qdisc add dev tun0 root pfifo") {
                // The model remembers nothing between connections, and its host queue is a FIFO.
            } else if let Some(rest) = line.strip_prefix("sysctl") {
                for kv in rest.split_whitespace().filter(|w| w.contains('=')) {
                    let (k, v) = kv.split_once('=').unwrap_or_default();
                    self.sysctl(k, v.trim_matches('"'))?;
                }
            } else {
                return Err(unsupported(format!("the shell command `{line}`")));
            }
        }
        Ok(())
    }

    fn sysctl(&mut self, key: &str, value: &str) -> Result<(), Outcome> {
        let on = value != "0";
        let c = &mut self.config;
        match key.trim_start_matches("net.ipv4.") {
            "tcp_sack" => c.sack = on,
            "tcp_recovery" => c.rack = on,
            "tcp_early_retrans" => c.tail_loss_probe = matches!(value, "3" | "4"),
            "tcp_slow_start_after_idle" => c.slow_start_after_idle = on,
            "tcp_reordering" => {
                c.dupack_threshold = value.parse().map_err(|_| unsupported(format!("{key}={value}")))?
            }
            "tcp_congestion_control" => {
                c.congestion_control = match value {
                    "cubic" => CongestionControl::Cubic,
                    "reno" => CongestionControl::Newreno,
                    other => return Err(unsupported(format!("the congestion control {other}"))),
                }
            }
            // ECN: the model has none yet; off is what it does.
            "tcp_ecn" if value == "0" => {}
            // The ECN option only counts once ECN is negotiated, which the model never does.
            "tcp_ecn_option" => {}
            // Read, and what the model does is the same either way: the handshake's retries,
            // cookies and Fast Open, buffer sizes, pacing (the model's senders are not paced),
            // FACK (gone from Linux), timestamps (the handshake decides), TSO sizing.
            "tcp_timestamps"
            | "tcp_dsack"
            | "tcp_frto"
            | "tcp_no_metrics_save"
            | "tcp_rmem"
            | "tcp_wmem"
            | "tcp_min_tso_segs"
            | "tcp_syn_retries"
            | "tcp_synack_retries"
            | "tcp_syncookies"
            | "tcp_fack"
            | "tcp_fastopen"
            | "tcp_fastopen_key"
            | "tcp_notsent_lowat"
            | "tcp_pacing_ca_ratio"
            | "tcp_pacing_ss_ratio"
            | "tcp_tso_win_divisor" => {}
            other => return Err(unsupported(format!("the setting {other}={value}"))),
        }
        Ok(())
    }

    /// `assert tcpi_X == V` lines; `print` lines are read and ignored.
    fn python(&mut self, line: usize, code: &str) -> Result<(), Outcome> {
        for stmt in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if stmt.starts_with("print") {
                continue;
            }
            let Some(cond) = stmt.strip_prefix("assert ") else {
                return Err(unsupported(format!("line {line}: the Python `{stmt}`")));
            };
            let cond = cond.split(',').next().unwrap_or_default();
            let (field, value) = cond.split_once("==").ok_or_else(|| unsupported(format!("line {line}: `{cond}`")))?;
            let (field, value) = (field.trim(), value.trim());
            let expected = ca_state(value)
                .or_else(|| value.parse().ok())
                .ok_or_else(|| unsupported(format!("line {line}: the value `{value}`")))?;
            let got = self.tcp_info(field).ok_or_else(|| unsupported(format!("line {line}: {field}")))?;
            if got != expected {
                return Err(fail(line, format!("expected {field} == {expected}, got {got}")));
            }
        }
        Ok(())
    }

    /// A `tcp_info` field of the sender, as Linux reports it.
    fn tcp_info(&self, field: &str) -> Option<i64> {
        let s = self.sender.as_ref()?;
        let sb = s.scoreboard();
        Some(match field {
            "tcpi_ca_state" => match s.state() {
                CaState::Open => 0,
                CaState::Disorder => 1,
                CaState::Recovery => 3,
                CaState::Loss => 4,
            },
            "tcpi_snd_cwnd" => i64::from(s.cwnd()),
            "tcpi_snd_ssthresh" => i64::from(s.ssthresh().min(0x7fff_ffff)),
            "tcpi_backoff" => i64::from(s.backoff()),
            "tcpi_lost" => i64::from(sb.lost_out()),
            "tcpi_unacked" => i64::from(sb.packets_out()),
            "tcpi_sacked" => i64::from(sb.sacked_out()),
            "tcpi_retrans" => i64::from(sb.retrans_out()),
            "tcpi_reordering" => i64::from(self.config.dupack_threshold),
            _ => return None,
        })
    }
}

/// `TCP_CA_Open` … as the numbers Linux reports.
fn ca_state(name: &str) -> Option<i64> {
    Some(match name {
        "TCP_CA_Open" => 0,
        "TCP_CA_Disorder" => 1,
        "TCP_CA_CWR" => 2,
        "TCP_CA_Recovery" => 3,
        "TCP_CA_Loss" => 4,
        _ => return None,
    })
}
