//! A readout unit's event buffer: each event's fragments as they will be sent (header and
//! payload), generated ahead of the requests, and the buffers of cleared events kept for reuse.

use crate::payload;
use crate::wire::{FragmentHeader, FRAGMENT_HEADER_BYTES};
use bytes::{Bytes, BytesMut};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{EventId, ReadoutId};
use std::collections::HashMap;

/// An event's fragments as sent: each one its header followed by its payload.
pub(crate) struct Held {
    pub(crate) fragments: Vec<Bytes>,
    pub(crate) bytes: u64,
    /// Corrupted on purpose: its buffers are not reused.
    pub(crate) corrupt: bool,
}

/// Cleared fragments' buffers, by length, for reuse: their template bytes are already right,
/// only the header and the stamped words change ([`payload::restamp`]).
#[derive(Default)]
pub(crate) struct Recycler {
    free: HashMap<usize, Vec<BytesMut>>,
    bytes: u64,
}

impl Recycler {
    pub(crate) fn take(&mut self, len: usize) -> Option<BytesMut> {
        let b = self.free.get_mut(&len)?.pop()?;
        self.bytes -= len as u64;
        Some(b)
    }

    /// Keeps the buffers of a cleared event that nobody else holds, up to `limit` bytes.
    pub(crate) fn give(&mut self, held: Held, limit: u64) {
        if held.corrupt {
            return;
        }
        for f in held.fragments {
            if self.bytes + f.len() as u64 > limit {
                return;
            }
            if let Ok(m) = f.try_into_mut() {
                self.bytes += m.len() as u64;
                self.free.entry(m.len()).or_default().push(m);
            }
        }
    }
}

/// Generates one event's fragments for unit `me`, reusing cleared buffers where it can.
pub(crate) fn generate(
    seed: u64,
    sizes: &FragmentSizes,
    me: ReadoutId,
    event: EventId,
    corrupt: bool,
    pool: &mut Recycler,
) -> Held {
    let mut bytes = 0;
    let fragments = sizes
        .fragment_bytes(event, me)
        .into_iter()
        .enumerate()
        .map(|(i, size)| {
            bytes += size;
            let header = FragmentHeader { event, source: me, index: i as u32, size: size as u32 };
            let len = FRAGMENT_HEADER_BYTES + size as usize;
            let mut f = match pool.take(len) {
                Some(mut f) => {
                    f[..FRAGMENT_HEADER_BYTES].copy_from_slice(&header.to_bytes());
                    payload::restamp(seed, event, me, i as u32, &mut f[FRAGMENT_HEADER_BYTES..]);
                    f
                }
                None => {
                    let mut f = BytesMut::with_capacity(len);
                    header.put(&mut f);
                    payload::append(seed, event, me, i as u32, size as usize, &mut f);
                    f
                }
            };
            if corrupt && i == 0 && size > 0 {
                f[FRAGMENT_HEADER_BYTES + size as usize / 2] ^= 0x10;
            }
            f.freeze()
        })
        .collect();
    Held { fragments, bytes, corrupt }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::FragmentSize;

    #[test]
    fn recycled_buffers_give_the_same_fragments_as_fresh_ones() {
        let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: 1100 }, 3, 4);
        let mut pool = Recycler::default();
        let r2 = ReadoutId(2);
        let first = generate(3, &sizes, r2, EventId(10), false, &mut pool);
        pool.give(first, 1 << 20);
        assert_eq!(pool.bytes, 4 * (1100 + FRAGMENT_HEADER_BYTES as u64));
        let reused = generate(3, &sizes, r2, EventId(11), false, &mut pool);
        assert_eq!(pool.bytes, 0, "every buffer reused");
        let fresh = generate(3, &sizes, r2, EventId(11), false, &mut Recycler::default());
        assert_eq!(reused.fragments, fresh.fragments);
        // A corrupted event's buffers are never reused, and a buffer still shared is not taken.
        let bad = generate(3, &sizes, r2, EventId(12), true, &mut pool);
        pool.give(bad, 1 << 20);
        let shared = fresh.fragments[0].clone();
        pool.give(fresh, 1 << 20);
        assert_eq!(pool.bytes, 3 * (1100 + FRAGMENT_HEADER_BYTES as u64));
        drop(shared);
    }
}
