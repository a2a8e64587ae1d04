//! Fragment payloads: a deterministic pattern per (seed, event, readout unit, fragment), so the
//! collector can verify every byte it receives without the readout unit sending a reference.
//!
//! Word `i` (8 bytes, little-endian) of a payload is `i × φ` (wrapping; φ the 64-bit golden
//! ratio), except word 0, which is `key`, a hash of the fragment's identity; a tail shorter than
//! a word carries the first bytes of the next word. The check compares every byte, so it
//! catches with certainty what a checksum catches with high probability: any flipped bit, a
//! truncation, bytes moved within the fragment (the template depends on the position), and a
//! fragment of another event, unit or index (the key differs; the headers are checked too).
//! The template depends only on the position, so a readout unit sends a fragment as its own
//! first word ([`own_bytes`]) followed by a slice of one shared [`Template`]. Stamping a word in
//! every 64-byte line instead, as this module once did, made the readout units touch every cache
//! line of every fragment: 14 % of the machine's CPU time in the loopback bench, more than the
//! collector's check (6 %).

use crate::net::piece::{memory_file, InFile, Piece, FROM_FILE_MIN_BYTES};
use daqnet_core::workload::mix;
use daqnet_core::{EventId, ReadoutId};
use std::fs::File;
use std::sync::Arc;

const PHI: u64 = 0x9e37_79b9_7f4a_7c15;

/// Words compared per step of the check (one 64-byte cache line), so it vectorises.
const LINE_WORDS: u64 = 8;

#[inline]
fn word(k: u64, i: u64) -> u64 {
    if i == 0 {
        k
    } else {
        i.wrapping_mul(PHI)
    }
}

fn key(seed: u64, event: EventId, source: ReadoutId, index: u32) -> u64 {
    mix(mix(seed ^ 0x5041_594c_4f41_4400) ^ mix(event.0).rotate_left(13) ^ (((source.0 as u64) << 32) | index as u64))
}

/// Fills `out` with the payload of fragment `index` of readout unit `source` for `event`.
pub fn fill(seed: u64, event: EventId, source: ReadoutId, index: u32, out: &mut [u8]) {
    let k = key(seed, event, source, index);
    let mut words = out.chunks_exact_mut(8);
    let mut i = 0u64;
    for w in &mut words {
        w.copy_from_slice(&word(k, i).to_le_bytes());
        i += 1;
    }
    let tail = words.into_remainder();
    let last = word(k, i).to_le_bytes();
    tail.copy_from_slice(&last[..tail.len()]);
}

/// Bytes of a payload that name its fragment: the first word.
pub const OWN_BYTES: usize = 8;

/// The first word of the payload of fragment `index` of unit `source` for `event`: the part
/// that is not the shared template's (a payload shorter than a word has its first bytes).
pub fn own_bytes(seed: u64, event: EventId, source: ReadoutId, index: u32) -> [u8; OWN_BYTES] {
    key(seed, event, source, index).to_le_bytes()
}

/// The payload bytes every fragment shares, from the second word on; grown as longer
/// fragments ask for it. Held in memory and, where the system has memory files, also in one,
/// so TCP sends long slices of it without copying (see [`crate::net::piece`]).
#[derive(Debug, Default)]
pub struct Template {
    bytes: bytes::Bytes,
    file: Option<Arc<File>>,
}

impl Template {
    /// Bytes `8..len` of any payload `len` bytes long (empty when `len <= 8`).
    pub fn rest(&mut self, len: usize) -> Piece {
        if len <= OWN_BYTES {
            return Piece::default();
        }
        if self.bytes.len() < len {
            let mut t = vec![0u8; len.next_power_of_two()];
            fill(0, EventId(0), ReadoutId(0), 0, &mut t);
            self.file = memory_file(&t).map(Arc::new);
            self.bytes = t.into();
        }
        let long = len - OWN_BYTES >= FROM_FILE_MIN_BYTES;
        let in_file = self.file.clone().filter(|_| long).map(|file| InFile { file, offset: OWN_BYTES as u64 });
        Piece { bytes: self.bytes.slice(OWN_BYTES..len), in_file }
    }
}

/// Checks a received payload; on a mismatch returns the offset of the first wrong byte.
pub fn check(seed: u64, event: EventId, source: ReadoutId, index: u32, payload: &[u8]) -> Result<(), usize> {
    let k = key(seed, event, source, index);
    let line = 8 * LINE_WORDS as usize;
    // The first line holds the key and is compared word by word; every further full line
    // against the template a line at a time, which the compiler vectorises.
    let first = payload.len().min(line);
    let mut diff = differs(&payload[..first], 0, k);
    // Lane j holds word j of the line: expected and accumulated as arrays, so each step is a
    // few vector instructions (35 GB/s in L2 as one scalar sum per word, 53 as lanes). AVX2
    // (tried) checks 128 KiB at 65 GB/s instead of 46, but moves the loopback bench no more than
    // its scatter: the collector's thread is not what sets the pace.
    let step = LINE_WORDS.wrapping_mul(PHI);
    let mut expected: [u64; LINE_WORDS as usize] = std::array::from_fn(|j| (j as u64 + LINE_WORDS).wrapping_mul(PHI));
    let mut lanes = [0u64; LINE_WORDS as usize];
    let mut lines = payload[first..].chunks_exact(line);
    for l in &mut lines {
        for j in 0..LINE_WORDS as usize {
            let w = u64::from_le_bytes(l[8 * j..8 * j + 8].try_into().expect("8 bytes"));
            lanes[j] |= w ^ expected[j];
            expected[j] = expected[j].wrapping_add(step);
        }
    }
    diff |= lanes.iter().fold(0, |a, l| a | l);
    let rest = lines.remainder();
    diff |= differs(rest, (payload.len() - rest.len()) as u64 / 8, k);
    if diff == 0 {
        return Ok(());
    }
    // Rare path: find where it went wrong.
    let mut expected = vec![0u8; payload.len()];
    fill(seed, event, source, index, &mut expected);
    Err(payload.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(0))
}

/// Non-zero when `bytes`, which start at word `first` of a payload with key `k`, differ from
/// the pattern.
fn differs(bytes: &[u8], first: u64, k: u64) -> u64 {
    let mut diff = 0;
    let mut i = first;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        diff |= u64::from_le_bytes(w.try_into().expect("8 bytes")) ^ word(k, i);
        i += 1;
    }
    let tail = words.remainder();
    diff | u64::from(tail != &word(k, i).to_le_bytes()[..tail.len()])
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
            let (event, source) = (EventId(event), ReadoutId(source));
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
    fn own_bytes_and_the_template_make_the_payload() {
        let mut t = Template::default();
        let long = OWN_BYTES + FROM_FILE_MIN_BYTES;
        for len in [0, 1, 7, 8, 9, 511, 4099, long - 1, long, 131072, 100] {
            let mut a = vec![0u8; len];
            fill(5, EventId(6), ReadoutId(7), 8, &mut a);
            let mut b = own_bytes(5, EventId(6), ReadoutId(7), 8)[..len.min(OWN_BYTES)].to_vec();
            let rest = t.rest(len);
            b.extend_from_slice(&rest.bytes);
            assert_eq!(b, a, "len {len}");
            // What TCP sends from the file is what is in memory.
            match rest.in_file {
                Some(f) => {
                    assert!(len >= long, "len {len}: short slices are sent from memory");
                    let mut from_file = vec![0u8; rest.bytes.len()];
                    std::os::unix::fs::FileExt::read_exact_at(&*f.file, &mut from_file, f.offset).unwrap();
                    assert_eq!(from_file, rest.bytes, "len {len}");
                }
                None => assert!(len < long, "len {len}: long slices are in the memory file"),
            }
        }
    }

    #[test]
    fn another_fragments_payload_does_not_check() {
        let mut p = vec![0u8; 1100];
        fill(1, EventId(10), ReadoutId(3), 0, &mut p);
        assert!(check(1, EventId(11), ReadoutId(3), 0, &p).is_err(), "other event");
        assert!(check(1, EventId(10), ReadoutId(4), 0, &p).is_err(), "other unit");
        assert!(check(1, EventId(10), ReadoutId(3), 1, &p).is_err(), "other fragment");
        assert!(check(2, EventId(10), ReadoutId(3), 0, &p).is_err(), "other seed");
    }
}
