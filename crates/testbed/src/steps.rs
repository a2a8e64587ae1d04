//! The steps a testbed is built of, and what they share: frame sizes as the kernel counts
//! them, a port's shaper, addresses, and where testbeds keep their state. Nothing here touches
//! the system; `lifecycle` performs the steps.

use std::net::Ipv4Addr;
use std::path::PathBuf;

/// Where testbeds record themselves (and keep their Open vSwitch files).
pub const STATE_DIR: &str = "/run/daqnet/testbed";

/// Where a testbed's Open vSwitch keeps its database, sockets, logs and flow files.
pub fn ovs_dir(id: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{id}.ovs"))
}

/// Wire bytes of a frame beyond what the kernel counts (`skb->len` holds the Ethernet header):
/// preamble and start delimiter 8, FCS 4, inter-frame gap 12. Given to tbf as `overhead`, so a
/// port's rate is its line rate on the wire, as in the simulator.
pub const WIRE_OVERHEAD_BYTES: u32 = 24;

/// Linux `ETH_HLEN`: the Ethernet header, which `skb->len` counts (the FCS it does not).
const ETH_HLEN: u32 = 14;

/// Linux `ETH_FCS_LEN`: the frame check sequence, on the wire but not in `skb->len`.
const ETH_FCS_LEN: u64 = 4;

/// `skb->len` of a full frame at `mtu_bytes`: what a qdisc's byte limit counts.
pub(crate) fn skb_bytes(mtu_bytes: u32) -> u64 {
    (mtu_bytes + ETH_HLEN) as u64
}

/// Token-bucket depth of each switch output port, as time at the port's rate, in ns. It must
/// hold a few frames: tbf sends the next frame from a timer, and with a one-frame bucket every
/// late timer is lost rate (measured here: 1 frame → 0.58 Gb/s of 1 Gb/s; 128 µs → 0.93, the
/// line rate).
pub const SWITCH_BURST_NS: u64 = 128_000;

/// Queue of each host's own egress shaper (its NIC), in bytes: deep, as a host queue is; TCP
/// small queues keep each socket's share of it small.
pub const HOST_QUEUE_BYTES: u64 = 4 << 20;

/// A locally administered MAC address `02:<net>:` and the four bytes of `ip`: a host's address
/// on network `net` (0: its link to the switch, or the control network beside a fabric; 1: its
/// fabric interface).
pub fn mac(net: u8, ip: Ipv4Addr) -> String {
    let o = ip.octets();
    format!("02:{net:02x}:{:02x}:{:02x}:{:02x}:{:02x}", o[0], o[1], o[2], o[3])
}

/// One thing to do to build a testbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run a program (`ip`, `tc`, Open vSwitch's tools) with these arguments.
    Run(Vec<String>),
    /// Turn TSO, GSO, GRO and transmit checksum offload off on interface `dev` of namespace `ns`.
    OffloadsOff {
        /// Namespace.
        ns: String,
        /// Interface.
        dev: String,
    },
    /// Write `text` to the file `path` (an Open vSwitch flow table).
    Write {
        /// File.
        path: String,
        /// Contents.
        text: String,
    },
    /// Write `value` to the sysctl `key` (dotted, e.g. `net.ipv4.tcp_sack`) in namespace `ns`.
    Sysctl {
        /// Namespace.
        ns: String,
        /// Dotted sysctl name.
        key: String,
        /// Value written.
        value: String,
    },
}

/// One line per step, as `daqnet testbed up --dry-run` prints it and a testbed's state file
/// records it: a program with its arguments, or what is written where.
impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Run(args) => write!(f, "{}", args.join(" ")),
            Step::OffloadsOff { ns, dev } => write!(f, "offloads off: {ns} {dev}"),
            Step::Sysctl { ns, key, value } => write!(f, "sysctl {ns}: {key}={value}"),
            Step::Write { path, text } => write!(f, "write {path}: {text}"),
        }
    }
}

pub(crate) fn run(args: &[&str]) -> Step {
    Step::Run(args.iter().map(|s| s.to_string()).collect())
}

/// The tbf `limit` of a switch port that holds the frames the simulator's port of `port_bytes`
/// holds. The simulator counts a frame until its last bit has left (a store-and-forward switch
/// frees the buffer after transmission) and counts it header to FCS; tbf counts only frames
/// waiting for tokens (the one being "sent" is already in the next namespace) and counts
/// `skb->len`, 4 bytes less. Without this a testbed port held one full frame more than the
/// simulated one: 14 against 13 at incast-32's 20 kB, where the testbed then timed out 7 %
/// less (3,108 against 2,883 timeouts at 100 Mb/s).
pub fn switch_queue_limit(port_bytes: u64, mtu_bytes: u32) -> u64 {
    let skb = skb_bytes(mtu_bytes);
    let frame = skb + ETH_FCS_LEN;
    (port_bytes.saturating_sub(frame) * skb / frame).max(skb)
}

/// A switch port's tbf backlog in the simulator's measure (the inverse of
/// [`switch_queue_limit`]): frames counted header to FCS, and one more on the wire while any
/// wait, so that reported peaks and traced queues compare with the simulator's.
pub fn simulated_backlog(backlog_bytes: u64, mtu_bytes: u32) -> u64 {
    let skb = skb_bytes(mtu_bytes);
    let frame = skb + ETH_FCS_LEN;
    if backlog_bytes == 0 {
        0
    } else {
        backlog_bytes * frame / skb + frame
    }
}

/// A tbf (handle `1:`) at `rate_bps` on the wire, with a bucket of `burst_ns` at that rate and a
/// queue of `limit_bytes`, on `dev` in `ns`.
pub fn shaper(ns: &str, dev: &str, rate_bps: u64, burst_ns: u64, limit_bytes: u64, mtu_bytes: u32) -> Step {
    let frame = skb_bytes(mtu_bytes) + WIRE_OVERHEAD_BYTES as u64;
    let burst = (rate_bps as u128 * burst_ns as u128 / 8 / 1_000_000_000) as u64;
    let burst = burst.max(2 * frame);
    run(&[
        "tc",
        "-n",
        ns,
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "handle",
        "1:",
        "tbf",
        "rate",
        &format!("{rate_bps}bit"),
        "burst",
        &burst.to_string(),
        "limit",
        &limit_bytes.to_string(),
        "overhead",
        &WIRE_OVERHEAD_BYTES.to_string(),
    ])
}
