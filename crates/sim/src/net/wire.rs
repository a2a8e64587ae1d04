//! Ethernet/IPv4/TCP framing: what a segment costs on the wire and in a switch buffer.

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
    fn pure_ack_is_padded_to_the_minimum_frame() {
        assert_eq!(frame_bytes(0, 0), 70);
        assert_eq!(frame_bytes(0, 3), 70 + 28);
        assert_eq!(sack_option_bytes(3) + TCP_TIMESTAMPS_BYTES, 40, "TCP options are at most 40 bytes");
    }
}
