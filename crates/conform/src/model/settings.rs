//! A script's settings: its shell lines (a settings file beside it, `sysctl`, packetdrill's
//! `set_sysctls.py`, `tc`/`ip` set-up) and its socket options become the model's settings where
//! they matter to it; one that asks for a behaviour the model lacks makes the script
//! unsupported, named.

use super::{fail, unsupported, Outcome, Runner};
use daqnet_core::scenario::CongestionControl;
use std::path::Path;

impl Runner {
    /// A shell command: a settings file beside the script, or sysctls.
    pub(super) fn shell(&mut self, cmd: &str, dir: &Path) -> Result<(), Outcome> {
        let joined = cmd.replace("\\\n", " ");
        for line in joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [file] if file.ends_with(".sh") && !file.starts_with("/tmp/") => {
                    let text =
                        std::fs::read_to_string(dir.join(file)).map_err(|e| unsupported(format!("{file}: {e}")))?;
                    self.shell(&text, dir)?;
                }
                // packetdrill's restore script, written by set_sysctls.py: the next script starts
                // from a fresh model anyway.
                [file] if file.starts_with("/tmp/sysctl_restore_") => {}
                [file, settings @ ..] if file.ends_with("set_sysctls.py") => {
                    for kv in settings {
                        let (path, value) = kv.split_once('=').unwrap_or((kv, ""));
                        let key = path.trim_start_matches("/proc/sys/").replace('/', ".");
                        self.sysctl(&key, value.trim_matches('"'))?;
                    }
                }
                // The model remembers nothing between connections, and its host queue is a FIFO.
                ["ip", "tcp_metrics", "flush", ..] => {}
                // Linux's default, ACK train and delay, which the model's HyStart has.
                ["echo", "3", ">", "/sys/module/tcp_cubic/parameters/hystart_detect"] => {}
                ["tc", "qdisc", "add" | "replace", "dev", "tun0", "root", "pfifo"] => {}
                ["sysctl", rest @ ..] => {
                    for kv in rest.iter().filter(|w| w.contains('=')) {
                        let (k, v) = kv.split_once('=').unwrap_or_default();
                        self.sysctl(&k.replace('/', "."), v.trim_matches('"'))?;
                    }
                }
                _ => return Err(unsupported(format!("the shell command `{line}`"))),
            }
        }
        Ok(())
    }

    fn sysctl(&mut self, key: &str, value: &str) -> Result<(), Outcome> {
        let on = value != "0";
        if key.ends_with("tcp_timestamps") {
            self.ts_enabled = on;
            return Ok(());
        }
        let c = &mut self.config;
        match key.trim_start_matches("net.ipv4.") {
            "tcp_frto" => c.frto = on,
            "tcp_sack" => c.sack = on,
            // Linux 6.18 finds losses with RACK whatever its bit 0 says (rack-recovery-off.pkt); the
            // other bits (a static reordering window, no duplicate-ACK threshold) are not modelled.
            "tcp_recovery" => match value.parse::<u32>() {
                Ok(v) if v & !1 == 0 => c.rack = true,
                _ => return Err(unsupported(format!("the setting {key}={value} (only bit 0, RACK, is modelled)"))),
            },
            "tcp_early_retrans" => c.tail_loss_probe = matches!(value, "3" | "4"),
            "tcp_slow_start_after_idle" => c.slow_start_after_idle = on,
            "tcp_reordering" => {
                c.dupack_threshold = value.parse().map_err(|_| unsupported(format!("{key}={value}")))?
            }
            "tcp_congestion_control" => c.congestion_control = congestion_control(value)?,
            // Linux ≥ 6.11: the floor of the RTO's variance term and of the probe's wait.
            "tcp_rto_min_us" => {
                let us: u64 = value.parse().map_err(|_| unsupported(format!("{key}={value}")))?;
                c.min_rto_ns = us * 1000;
            }
            // RFC 3168 ECN: 0 off, 1 asked for and accepted, 2 (the default) accepted only;
            // AccECN (3 to 5) is not modelled.
            "tcp_ecn" => match value.parse::<u8>() {
                Ok(v @ 0..=2) => self.ecn_setting = v,
                _ => return Err(unsupported(format!("the setting {key}={value} (AccECN is not modelled)"))),
            },
            // AccECN's option, which RFC 3168 ECN never sends.
            "tcp_ecn_option" => {}
            // Read, and what the model does is the same either way: the handshake's retries,
            // cookies and Fast Open, buffer sizes, pacing (the model's senders are not paced),
            // FACK (gone from Linux), TSO sizing (the model sends whole segments, compared MSS
            // by MSS).
            "tcp_dsack"
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

    /// `setsockopt(fd, level, name, value, len)`.
    pub(super) fn setsockopt(&mut self, line: usize, args: &str) -> Result<(), Outcome> {
        let parts: Vec<&str> = args.split(',').map(str::trim).collect();
        let name = parts.get(2).copied().unwrap_or_default();
        match name {
            "TCP_CONGESTION" => {
                let value = parts.get(3).copied().unwrap_or_default().trim_matches('"');
                self.config.congestion_control = congestion_control(value)?;
            }
            // Reusing the address, the path MTU and the IP header's type of service leave the
            // model's TCP as it is (a type of service refreshes Linux's route, not the queue).
            "SO_REUSEADDR" | "IP_MTU_DISCOVER" | "IP_TOS" => {}
            "TCP_NODELAY" => self.nodelay = !parts.get(3).is_some_and(|v| v.contains("[0]")),
            // The model's send buffer is unbounded: a write that fits the kernel's (twice the
            // value) behaves the same; one that does not is refused at the write.
            "SO_SNDBUF" => {
                let value = parts.get(3).map(|v| v.trim_matches(|c| c == '[' || c == ']'));
                self.sndbuf = Some(
                    value
                        .and_then(last_number)
                        .ok_or_else(|| fail(line, format!("SO_SNDBUF in `{args}`: expected [bytes]")))?,
                );
            }
            other => return Err(unsupported(format!("line {line}: the socket option {other}"))),
        }
        Ok(())
    }
}

/// The number after the last comma of a socket option's value (`[200000]`).
fn last_number(args: &str) -> Option<u64> {
    args.rsplit(',').next().and_then(|n| n.trim().parse().ok())
}

fn congestion_control(name: &str) -> Result<CongestionControl, Outcome> {
    match name {
        "cubic" => Ok(CongestionControl::Cubic),
        "reno" => Ok(CongestionControl::Newreno),
        // daqnet's BPF DCTCP (the testbed registers it), after Linux's tcp_dctcp.
        "dctcp" | "daqnet_dctcp" => Ok(CongestionControl::Dctcp),
        other => Err(unsupported(format!("the congestion control {other}"))),
    }
}
