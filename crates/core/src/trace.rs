//! Time series inside a run — what OMNeT++ calls vectors and ns-3 trace sources — as every
//! substrate records them: what to record ([`TraceSpec`]: ports' queues, TCP senders'
//! windows), the samples, and the sink they go to in batches. The simulator samples its model;
//! the testbed samples the real queues.

use crate::Nanos;

/// What to record: `queue=GLOB|GLOB,cwnd=GLOB,every=DURATION` (`daqnet sim --trace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSpec {
    /// Port names (`sw->node0`, `rack0->node*`): queue bytes and drops.
    pub ports: Vec<String>,
    /// TCP senders, named `FROM->TO` by host (`ru5->node0`, `*->node3`): the sending half of
    /// the connection's end on host FROM.
    pub senders: Vec<String>,
    /// Sampling interval in simulated ns.
    pub every_ns: Nanos,
}

/// The interval when `every=` is not given.
pub const DEFAULT_EVERY_NS: Nanos = 100_000;

impl std::str::FromStr for TraceSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<TraceSpec, String> {
        let mut spec = TraceSpec { ports: Vec::new(), senders: Vec::new(), every_ns: DEFAULT_EVERY_NS };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected queue=PORTS, cwnd=SENDERS or every=DURATION"))?;
            let globs = || -> Result<Vec<String>, String> {
                value
                    .split('|')
                    .map(|g| {
                        glob::Pattern::new(g.trim()).map(|_| g.trim().to_string()).map_err(|e| format!("`{g}`: {e}"))
                    })
                    .collect()
            };
            match key.trim() {
                "queue" => spec.ports.extend(globs()?),
                "cwnd" | "tcp" => spec.senders.extend(globs()?),
                "every" => {
                    let d = humantime::parse_duration(value.trim())
                        .map_err(|e| format!("every=`{value}`: {e}; e.g. every=100us or every=1ms"))?;
                    spec.every_ns = (d.as_nanos() as Nanos).max(1);
                }
                k => return Err(format!("`{k}=`: unknown; the keys are queue=, cwnd= and every=")),
            }
        }
        if spec.ports.is_empty() && spec.senders.is_empty() {
            return Err(format!(
                "`{s}` traces nothing: give queue=PORTS and/or cwnd=SENDERS, e.g. queue=sw->node0,cwnd=*->node0"
            ));
        }
        Ok(spec)
    }
}

impl std::fmt::Display for TraceSpec {
    /// The spec as `daqnet role --trace` takes it back (`queue=A|B,cwnd=C,every=100us`).
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.ports.is_empty() {
            parts.push(format!("queue={}", self.ports.join("|")));
        }
        if !self.senders.is_empty() {
            parts.push(format!("cwnd={}", self.senders.join("|")));
        }
        parts.push(format!("every={}", humantime::format_duration(std::time::Duration::from_nanos(self.every_ns))));
        f.write_str(&parts.join(","))
    }
}

/// Linux's congestion states (`enum tcp_ca_state`, `tcpi_ca_state`) by number, as samples name
/// them.
pub const CA_STATES: [&str; 5] = ["open", "disorder", "cwr", "recovery", "loss"];

/// The names a run can trace.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Every port, in fabric order.
    pub ports: Vec<String>,
    /// Every TCP sender, `FROM->TO`: connection `c`'s opener end is `2c`, its acceptor end `2c + 1`.
    pub senders: Vec<String>,
}

impl TraceSpec {
    /// Whether the TCP sender named `name` (`ru3->node0`) is selected.
    pub fn selects_sender(&self, name: &str) -> bool {
        self.senders.iter().any(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches(name)))
    }

    /// The indices of the ports and senders this spec selects among `t`, or an error naming
    /// a pattern that selects nothing (with examples of what exists).
    pub fn resolve(&self, t: &Targets) -> Result<(Vec<u32>, Vec<u32>), String> {
        let pick = |globs: &[String], names: &[String], what: &str| -> Result<Vec<u32>, String> {
            let mut all = Vec::new();
            for g in globs {
                let p = glob::Pattern::new(g).map_err(|e| format!("`{g}`: {e}"))?;
                let hit: Vec<u32> = (0..names.len() as u32).filter(|&i| p.matches(&names[i as usize])).collect();
                if hit.is_empty() {
                    let some: Vec<&str> = names.iter().take(6).map(String::as_str).collect();
                    return Err(format!(
                        "`{g}` matches no {what} of this scenario; they are named like {} ({} in all)",
                        some.join(", "),
                        names.len()
                    ));
                }
                all.extend(hit);
            }
            all.sort_unstable();
            all.dedup();
            Ok(all)
        };
        Ok((pick(&self.ports, &t.ports, "port")?, pick(&self.senders, &t.senders, "TCP sender")?))
    }
}

/// One port's state at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortSample {
    /// Simulated time, ns.
    pub t_ns: Nanos,
    /// Index into the sink's port names.
    pub port: u32,
    /// Bytes queued (frames admitted whose transmission has not ended).
    pub queue_bytes: u64,
    /// Frames dropped so far.
    pub drops: u64,
    /// Frames marked Congestion Experienced so far (ECN).
    pub marks: u64,
    /// Time the port has been paused so far, ns (link-level flow control).
    pub paused_ns: u64,
}

/// One TCP sender's state at one instant, as Linux's `tcp_info` has it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpSample {
    /// Simulated time, ns.
    pub t_ns: Nanos,
    /// Index into the sink's sender names.
    pub sender: u32,
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, segments; `None` while infinite (`tcpi_snd_ssthresh` absent).
    pub ssthresh: Option<u32>,
    /// Smoothed RTT, ns; `None` before the first sample.
    pub srtt_ns: Option<Nanos>,
    /// Segments in flight (`tcp_packets_in_flight`).
    pub in_flight: u32,
    /// Congestion state (`tcpi_ca_state`): `open`, `disorder`, `cwr`, `recovery` or `loss`.
    pub state: &'static str,
    /// DCTCP's α (0 to 1), for a DCTCP sender (Linux `dctcp_alpha`, out of 1024).
    pub dctcp_alpha: Option<f64>,
}

/// Where samples go, in batches.
pub trait TraceSink {
    /// Before the first batch: the names that samples' indices refer to.
    fn names(&mut self, ports: &[String], senders: &[String]);
    /// A batch of samples, in time order within each kind.
    fn batch(&mut self, ports: &[PortSample], tcp: &[TcpSample]);
}

/// A frame that left a captured port (`daqnet sim --pcap`): what its headers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapturedFrame {
    /// When its transmission ended, simulated ns.
    pub t_ns: Nanos,
    /// Index into the sink's port names.
    pub port: u32,
    /// Sending and receiving host.
    pub hosts: (u32, u32),
    /// Connection number.
    pub conn: u32,
    /// Sent by the end that opened the connection.
    pub from_opener: bool,
    /// Sequence number of its first payload byte, counted from 0 on each direction.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgement (next byte expected from the other end).
    pub ack: u64,
    /// SACK blocks, `nsack` of them.
    pub sack: [(u64, u64); 3],
    /// SACK blocks carried.
    pub nsack: u8,
}

/// Where captured frames go, in batches.
pub trait CaptureSink {
    /// Before the first batch: the captured ports' names and every host's name.
    fn names(&mut self, ports: &[String], hosts: &[String]);
    /// Frames in the order they were captured.
    fn frames(&mut self, frames: &[CapturedFrame]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Targets {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Targets {
            ports: s(&["ru0->sw", "sw->ru0", "sw->node0", "sw->node1"]),
            senders: s(&["node0->ru0", "ru0->node0", "node1->ru0", "ru0->node1"]),
        }
    }

    #[test]
    fn a_spec_reads_its_keys_and_defaults_to_100us() {
        let s: TraceSpec = "queue=sw->node0|sw->node1, cwnd=*->node0".parse().unwrap();
        assert_eq!(s.ports, ["sw->node0", "sw->node1"]);
        assert_eq!(s.senders, ["*->node0"]);
        assert_eq!(s.every_ns, DEFAULT_EVERY_NS);
        assert_eq!("queue=sw->node0,every=1.5ms".parse::<TraceSpec>().unwrap().every_ns, 1_500_000);
    }

    #[test]
    fn a_spec_prints_as_it_parses() {
        for text in ["queue=sw->node0|sw->node1,cwnd=*->node0,every=1ms", "cwnd=ru*->node3,every=100us"] {
            let s: TraceSpec = text.parse().unwrap();
            assert_eq!(s.to_string(), text);
            assert_eq!(s.to_string().parse::<TraceSpec>().unwrap(), s);
        }
        let s: TraceSpec = "cwnd=ru*->node0".parse().unwrap();
        assert!(s.selects_sender("ru12->node0") && !s.selects_sender("node0->ru12"));
    }

    #[test]
    fn bad_specs_say_what_is_allowed() {
        let err = |s: &str| s.parse::<TraceSpec>().unwrap_err();
        assert!(err("every=1ms").contains("traces nothing"), "{}", err("every=1ms"));
        assert!(err("queue=sw->node0,every=soon").contains("every=`soon`"));
        assert!(err("window=3").contains("the keys are queue=, cwnd= and every="));
        assert!(err("sw->node0").contains("expected queue=PORTS"));
        assert!(err("queue=[").contains("`[`"));
    }

    #[test]
    fn globs_select_by_name_and_a_glob_that_selects_nothing_is_an_error() {
        let t = targets();
        let s: TraceSpec = "queue=sw->node*,cwnd=*->node0|ru0->node*".parse().unwrap();
        assert_eq!(s.resolve(&t).unwrap(), (vec![2, 3], vec![1, 3]));
        let e = "cwnd=node3/*".parse::<TraceSpec>().unwrap().resolve(&t).unwrap_err();
        assert!(e.contains("`node3/*` matches no TCP sender") && e.contains("node0->ru0, ru0->node0"), "{e}");
    }
}
