//! Ethernet/IPv4/TCP framing (and RoCEv2's, for queue pairs): what a packet costs on the wire
//! and in a switch buffer, and the header bits the ends and switches read.

use daqnet_core::scenario::rc::ROCE_HEADER_BYTES;

/// Preamble + start-of-frame delimiter (8) and the minimum inter-frame gap (12), in bytes.
pub const PREAMBLE_IFG_BYTES: u32 = 20;
/// Ethernet header (14) and frame check sequence (4).
pub const ETH_HEADER_FCS_BYTES: u32 = 18;
/// Minimum Ethernet frame, header to FCS.
pub const ETH_MIN_FRAME_BYTES: u32 = 64;
/// IPv4 header without options.
pub const IPV4_HEADER_BYTES: u32 = 20;
/// TCP header without options.
pub const TCP_HEADER_BYTES: u32 = 20;
/// TCP timestamps option as Linux sends it (NOP, NOP, kind, length, 2 × 4 bytes).
pub const TCP_TIMESTAMPS_BYTES: u32 = 12;
/// Headers of every segment: IPv4 + TCP + timestamps.
pub const SEGMENT_HEADER_BYTES: u32 = IPV4_HEADER_BYTES + TCP_HEADER_BYTES + TCP_TIMESTAMPS_BYTES;

/// Bytes of the SACK option carrying `blocks` blocks (NOP, NOP, kind, length, 8 per block).
pub fn sack_option_bytes(blocks: usize) -> u32 {
    if blocks == 0 {
        0
    } else {
        4 + 8 * blocks as u32
    }
}

/// Ethernet frame bytes (header to FCS, padded to the minimum) of a segment with `payload`
/// bytes and `sack_blocks` SACK blocks. This is what a switch buffer holds.
pub fn frame_bytes(payload: u32, sack_blocks: usize) -> u32 {
    (ETH_HEADER_FCS_BYTES + SEGMENT_HEADER_BYTES + sack_option_bytes(sack_blocks) + payload).max(ETH_MIN_FRAME_BYTES)
}

/// Ethernet frame bytes of a queue pair's packet with `payload` bytes (0: an ACK, which adds
/// the 4-byte ACK extended transport header): RoCEv2's IPv4, UDP, base transport header and
/// invariant CRC ([`ROCE_HEADER_BYTES`]), padded to the minimum frame.
pub fn rc_frame_bytes(payload: u32) -> u32 {
    let aeth = if payload == 0 { 4 } else { 0 };
    (ETH_HEADER_FCS_BYTES + ROCE_HEADER_BYTES + aeth + payload).max(ETH_MIN_FRAME_BYTES)
}

/// Bytes a frame occupies on the wire, preamble and inter-frame gap included.
pub fn wire_bytes(frame_bytes: u32) -> u32 {
    frame_bytes + PREAMBLE_IFG_BYTES
}

/// Picoseconds to serialize `wire_bytes` at `rate_bps`.
pub fn serialization_ps(wire_bytes: u32, rate_bps: u64) -> u64 {
    (wire_bytes as u64 * 8_000_000_000_000) / rate_bps
}

/// The largest goodput a link of `rate_bps` can carry with full segments of `mss` bytes, in bit/s.
pub fn max_goodput_bps(rate_bps: u64, mss: u32) -> f64 {
    rate_bps as f64 * mss as f64 / wire_bytes(frame_bytes(mss, 0)) as f64
}

/// The header bits of a packet that its ends and the switches read, in one byte: the IP
/// header's ECN codepoint (ECN-capable, CE), and the transport's flags — TCP's ECE and CWR,
/// or a queue pair's AckReq (base transport header) and NAK (ACK extended transport header's
/// syndrome, [`crate::rc`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderBits(u8);

impl HeaderBits {
    const ECT: u8 = 1;
    const CE: u8 = 2;
    const ECE: u8 = 4;
    const CWR: u8 = 8;
    const ACK_REQ: u8 = 16;
    const NAK: u8 = 32;
    const QUEUE_PAIR: u8 = 64;

    /// A segment sent ECN-capable or not, with ECE and CWR set or not.
    pub const fn new(ect: bool, ece: bool, cwr: bool) -> Self {
        HeaderBits((ect as u8 * Self::ECT) | (ece as u8 * Self::ECE) | (cwr as u8 * Self::CWR))
    }

    /// ECN-capable transport: a switch may mark it instead of dropping it.
    pub fn ect(self) -> bool {
        self.0 & Self::ECT != 0
    }

    /// Marked Congestion Experienced on the way.
    pub fn ce(self) -> bool {
        self.0 & Self::CE != 0
    }

    /// The TCP ECN-Echo flag.
    pub fn ece(self) -> bool {
        self.0 & Self::ECE != 0
    }

    /// The TCP Congestion Window Reduced flag.
    pub fn cwr(self) -> bool {
        self.0 & Self::CWR != 0
    }

    /// A queue pair's packet: data asking for an ACK or not, or an ACK that is a NAK or not.
    pub const fn rc(ack_req: bool, nak: bool) -> Self {
        HeaderBits(Self::QUEUE_PAIR | (ack_req as u8 * Self::ACK_REQ) | (nak as u8 * Self::NAK))
    }

    /// A queue pair's packet (RoCEv2 headers), not a TCP segment.
    pub fn queue_pair(self) -> bool {
        self.0 & Self::QUEUE_PAIR != 0
    }

    /// A queue pair's data packet asks for an ACK.
    pub fn ack_req(self) -> bool {
        self.0 & Self::ACK_REQ != 0
    }

    /// A queue pair's ACK is a NAK (PSN sequence error).
    pub fn nak(self) -> bool {
        self.0 & Self::NAK != 0
    }

    /// The same segment marked Congestion Experienced (ECT becomes CE).
    pub const fn marked(self) -> Self {
        HeaderBits(self.0 | Self::CE)
    }

    /// The codepoint it arrived with.
    pub fn codepoint(self) -> crate::tcp::ecn::Codepoint {
        use crate::tcp::ecn::Codepoint;
        match (self.ect(), self.ce()) {
            (_, true) => Codepoint::Ce,
            (true, false) => Codepoint::Ect,
            (false, false) => Codepoint::NotEct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_costs_1538_bytes_on_the_wire() {
        assert_eq!(frame_bytes(1448, 0), 1518);
        assert_eq!(wire_bytes(frame_bytes(1448, 0)), 1538);
        assert_eq!(serialization_ps(1538, 1_000_000_000), 12_304_000);
        assert_eq!(serialization_ps(1538, 10_000_000_000), 1_230_400);
    }

    #[test]
    fn a_queue_pairs_packet_carries_roce_headers() {
        assert_eq!(rc_frame_bytes(4096), 4096 + 18 + 20 + 8 + 12 + 4);
        assert_eq!(rc_frame_bytes(0), 66, "an ACK: 62 bytes of headers and the AETH");
        assert_eq!(rc_frame_bytes(1), 64, "padded to the minimum frame");
    }

    #[test]
    fn pure_ack_is_padded_to_the_minimum_frame() {
        assert_eq!(frame_bytes(0, 0), 70);
        assert_eq!(frame_bytes(0, 3), 70 + 28);
        assert_eq!(sack_option_bytes(3) + TCP_TIMESTAMPS_BYTES, 40, "TCP options are at most 40 bytes");
    }
}
