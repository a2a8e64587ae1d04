//! `[network.rc]`: the dataflow's connections as reliable-connected queue pairs — the message
//! transport of InfiniBand and of RoCEv2 on Ethernet — instead of TCP.

use crate::units::{de_ns, de_some_bps};
use serde::{Deserialize, Serialize};

/// IPv4 (20), UDP (8), the base transport header (12) and the invariant CRC (4): what RoCEv2
/// adds to a packet's payload inside an Ethernet frame.
pub const ROCE_HEADER_BYTES: u32 = 44;

/// The path MTUs InfiniBand defines: a packet's payload is one of these.
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// The larger path MTUs Omni-Path adds.
pub const OPA_MTUS: [u32; 2] = [8192, 10240];

/// `[network.rc]` (simulator): every connection of the dataflow is a reliable-connected queue
/// pair. A message is cut into packets of the path MTU (the largest InfiniBand MTU the IP MTU
/// holds with RoCEv2's 44 bytes of headers: 1024 at `mtu_bytes = 1500`, 4096 at 4200 or
/// more) and sent at line rate — no congestion window, no slow start — as fast as the links'
/// flow control lets the NIC send; the NIC serves its queue pairs a packet at a time. The
/// responder acknowledges every message's last packet (and every 16th packet of a long one);
/// a packet out of sequence is dropped and answered by one NAK, and the requester goes back to
/// the first packet not received (go-back-N), as after its ACK timeout. Runs on lossless links
/// only: `[network.flow_control]` is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageTransport {
    /// A packet's payload, bytes: 256, 512, 1024, 2048, 4096 (InfiniBand) or 8192, 10240
    /// (Omni-Path), with its 44 bytes of headers within `network.mtu_bytes` (default: the
    /// largest InfiniBand MTU that fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu_bytes: Option<u32>,
    /// A queue pair's sending rate limit, payload bit/s (default: none, line rate).
    #[serde(default, deserialize_with = "de_some_bps", skip_serializing_if = "Option::is_none")]
    pub rate_limit_bps: Option<u64>,
    /// The requester's local ACK timeout, ns: with packets unacknowledged and no ACK for this
    /// long it goes back to the first unacknowledged packet (default 4.096 µs × 2^14 =
    /// 67.1 ms, the InfiniBand timeout attribute 14).
    #[serde(default = "default_ack_timeout_ns", deserialize_with = "de_ns")]
    pub ack_timeout_ns: u64,
}

fn default_ack_timeout_ns() -> u64 {
    4096 << 14
}

impl Default for MessageTransport {
    fn default() -> Self {
        MessageTransport { path_mtu_bytes: None, rate_limit_bps: None, ack_timeout_ns: default_ack_timeout_ns() }
    }
}

/// The largest InfiniBand path MTU that fits a network of IP MTU `mtu_bytes` with RoCEv2's
/// headers (`None`: not even 256 bytes fit).
pub fn path_mtu(mtu_bytes: u32) -> Option<u32> {
    IB_MTUS.into_iter().rev().find(|&m| m + ROCE_HEADER_BYTES <= mtu_bytes)
}

impl MessageTransport {
    /// The payload of a full packet on a network of IP MTU `mtu_bytes`: the one given, or the
    /// largest InfiniBand MTU that fits.
    pub fn path_mtu(&self, mtu_bytes: u32) -> Option<u32> {
        self.path_mtu_bytes.or_else(|| path_mtu(mtu_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_mtu_is_the_largest_infiniband_mtu_the_ip_mtu_holds() {
        assert_eq!(path_mtu(1500), Some(1024));
        assert_eq!(path_mtu(4139), Some(2048));
        assert_eq!(path_mtu(4140), Some(4096));
        assert_eq!(path_mtu(9000), Some(4096));
        assert_eq!(path_mtu(299), None);
        assert_eq!(path_mtu(300), Some(256));
    }
}
