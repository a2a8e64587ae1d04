//! Fragment payloads: a deterministic pattern per (seed, event, readout unit, fragment), so the
//! collector can verify every byte it receives without the readout unit sending a reference.
//!
//! Word `i` (8 bytes, little-endian) of a payload is `key + i × φ` (wrapping), where `key` hashes
//! the fragment's identity and φ is the 64-bit golden ratio; a tail shorter than a word carries
//! the first bytes of the next word. Generation and checking are one streaming pass each, about
//! the cost of a memory copy. The check compares every byte, so it catches anything a checksum
//! would (flipped bits, truncation, a fragment of another event or unit) and more.

use daqnet_core::workload::mix;
use daqnet_core::{EventId, ReadoutId};

const PHI: u64 = 0x9e37_79b9_7f4a_7c15;

fn key(seed: u64, event: EventId, source: ReadoutId, index: u32) -> u64 {
    mix(mix(seed ^ 0x5041_594c_4f41_4400) ^ mix(event).rotate_left(13) ^ (((source as u64) << 32) | index as u64))
}

/// Fills `out` with the payload of fragment `index` of readout unit `source` for `event`.
pub fn fill(seed: u64, event: EventId, source: ReadoutId, index: u32, out: &mut [u8]) {
    let k = key(seed, event, source, index);
    let mut words = out.chunks_exact_mut(8);
    let mut i = 0u64;
    for w in &mut words {
        w.copy_from_slice(&k.wrapping_add(i.wrapping_mul(PHI)).to_le_bytes());
        i += 1;
    }
    let tail = words.into_remainder();
    let last = k.wrapping_add(i.wrapping_mul(PHI)).to_le_bytes();
    tail.copy_from_slice(&last[..tail.len()]);
}

/// Checks a received payload; on a mismatch returns the offset of the first wrong byte.
pub fn check(seed: u64, event: EventId, source: ReadoutId, index: u32, payload: &[u8]) -> Result<(), usize> {
    let k = key(seed, event, source, index);
    let mut words = payload.chunks_exact(8);
    let mut diff = 0u64;
    let mut i = 0u64;
    for w in &mut words {
        diff |= u64::from_le_bytes(w.try_into().expect("8 bytes")) ^ k.wrapping_add(i.wrapping_mul(PHI));
        i += 1;
    }
    let tail = words.remainder();
    let last = k.wrapping_add(i.wrapping_mul(PHI)).to_le_bytes();
    if diff == 0 && tail == &last[..tail.len()] {
        return Ok(());
    }
    // Rare path: find where it went wrong.
    let mut expected = vec![0u8; payload.len()];
    fill(seed, event, source, index, &mut expected);
    Err(payload.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_filled_payload_checks_and_any_flipped_bit_is_found(
            seed in any::<u64>(), event in any::<u64>(), source in any::<u32>(), index in 0u32..100,
            len in 0usize..3000, flip in any::<prop::sample::Index>(), bit in 0u8..8,
        ) {
            let mut p = vec![0u8; len];
            fill(seed, event, source, index, &mut p);
            prop_assert_eq!(check(seed, event, source, index, &p), Ok(()));
            if len > 0 {
                let at = flip.index(len);
                p[at] ^= 1 << bit;
                prop_assert_eq!(check(seed, event, source, index, &p), Err(at));
            }
        }
    }

    #[test]
    fn another_fragments_payload_does_not_check() {
        let mut p = vec![0u8; 1100];
        fill(1, 10, 3, 0, &mut p);
        assert!(check(1, 11, 3, 0, &p).is_err(), "other event");
        assert!(check(1, 10, 4, 0, &p).is_err(), "other unit");
        assert!(check(1, 10, 3, 1, &p).is_err(), "other fragment");
        assert!(check(2, 10, 3, 0, &p).is_err(), "other seed");
    }
}
