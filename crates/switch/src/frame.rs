//! The header fields the switch reads.

/// An Ethernet (MAC) address.
pub type Mac = [u8; 6];

/// Ethernet header length, bytes.
const ETH_HEADER: usize = 14;
/// EtherType of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;

/// Destination MAC of an Ethernet frame, if it is long enough to have one.
pub fn dst_mac(frame: &[u8]) -> Option<Mac> {
    frame.get(..6).map(|b| b.try_into().expect("6 bytes"))
}

/// Destination IPv4 address of an Ethernet frame carrying IPv4 (no VLAN tag).
pub fn dst_ipv4(frame: &[u8]) -> Option<[u8; 4]> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    if ethertype != ETHERTYPE_IPV4 {
        return None;
    }
    frame.get(ETH_HEADER + 16..ETH_HEADER + 20).map(|b| b.try_into().expect("4 bytes"))
}

/// Bytes a frame of `len` bytes (as handed over by the kernel: header and payload, no FCS)
/// occupies on the wire: padded to the 60-byte minimum, plus FCS (4), preamble and start
/// delimiter (8) and the inter-frame gap (12) — as `tc … overhead 24` counts it.
pub fn wire_bytes(len: usize) -> u64 {
    len.max(60) as u64 + 24
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<Mac> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Formats a MAC as `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(m: &Mac) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An IPv4 frame from `src` to `dst` MAC, for `ip` destination, `len` bytes in all.
    pub fn ipv4_frame(dst: Mac, ip: [u8; 4], len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len.max(34)];
        f[..6].copy_from_slice(&dst);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[30..34].copy_from_slice(&ip);
        f
    }

    #[test]
    fn header_fields_and_wire_size() {
        let f = ipv4_frame([2, 0, 0, 0, 0, 7], [10, 88, 8, 1], 1514);
        assert_eq!(dst_mac(&f), Some([2, 0, 0, 0, 0, 7]));
        assert_eq!(dst_ipv4(&f), Some([10, 88, 8, 1]));
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(dst_ipv4(&arp), None);
        assert_eq!(dst_ipv4(&f[..20]), None, "too short");
        assert_eq!(wire_bytes(1514), 1538);
        assert_eq!(wire_bytes(42), 84, "padded to the minimum frame");
        assert_eq!(parse_mac("02:00:0a:58:08:01"), Some([2, 0, 10, 88, 8, 1]));
        assert_eq!(parse_mac("02:00:0a:58:08"), None);
        assert_eq!(format_mac(&[2, 0, 10, 88, 8, 1]), "02:00:0a:58:08:01");
    }
}
