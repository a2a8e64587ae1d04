//! A readout unit's event buffer: each event's fragments as they will be sent (header and
//! payload), generated ahead of the requests.
//!
//! A fragment is held as two pieces: its own bytes (header and the payload's first word, which
//! names the fragment) and the rest of the payload, a slice of one template shared by every
//! fragment ([`payload::Template`]). The rest depends only on the position, so nothing is
//! copied to make an event, and what the socket takes is one buffer that stays in the cache, as
//! raw TCP's sender's does (long payloads not even copied: TCP sends them from the template's
//! memory file, [`crate::net::piece`]). A real readout unit's data would arrive by DMA; the
//! bench's 16 units each cycling a 16 MiB buffer of their own instead made the senders' copy read
//! from memory: twice the collector's copy per byte, a third of the machine's time.

use crate::net::piece::Piece;
use crate::payload::{self, Template};
use crate::wire::{FragmentHeader, FRAGMENT_HEADER_BYTES};
use bytes::{Bytes, BytesMut};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{EventId, ReadoutId};

/// One fragment as sent: its header and payload, in two pieces.
#[derive(Debug, Clone)]
pub(crate) struct Fragment {
    /// The header and the payload's first word (all of a payload shorter than a word).
    pub(crate) own: Bytes,
    /// The rest of the payload (shared with every other fragment, unless corrupted).
    pub(crate) rest: Piece,
}

impl Fragment {
    /// Its length on the wire.
    pub(crate) fn len(&self) -> usize {
        self.own.len() + self.rest.len()
    }

    /// Header and payload in one buffer (a copy).
    pub(crate) fn to_bytes(&self) -> Bytes {
        [&self.own[..], &self.rest.bytes[..]].concat().into()
    }
}

/// An event's fragments as sent.
pub(crate) struct Held {
    pub(crate) fragments: Vec<Fragment>,
    pub(crate) bytes: u64,
}

/// Generates one event's fragments for unit `me`; `corrupt` flips a bit in the middle of the
/// first fragment's payload (fault injection), which then gets a payload of its own.
pub(crate) fn generate(
    seed: u64,
    sizes: &FragmentSizes,
    me: ReadoutId,
    event: EventId,
    corrupt: bool,
    template: &mut Template,
) -> Held {
    let mut bytes = 0;
    let fragments = sizes
        .fragment_bytes(event, me)
        .into_iter()
        .enumerate()
        .map(|(i, size)| {
            bytes += size;
            let index = i as u32;
            let header = FragmentHeader { event, source: me, index, size: size as u32 };
            let mut own = BytesMut::with_capacity(FRAGMENT_HEADER_BYTES + payload::OWN_BYTES);
            header.put(&mut own);
            let n = (size as usize).min(payload::OWN_BYTES);
            own.extend_from_slice(&payload::own_bytes(seed, event, me, index)[..n]);
            let mut f = Fragment { own: own.freeze(), rest: template.rest(size as usize) };
            if corrupt && i == 0 && size > 0 {
                let mut whole = BytesMut::from(&f.to_bytes()[..]);
                whole[FRAGMENT_HEADER_BYTES + size as usize / 2] ^= 0x10;
                f = Fragment { own: whole.freeze(), rest: Piece::default() };
            }
            f
        })
        .collect();
    Held { fragments, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::FragmentSize;

    #[test]
    fn fragments_share_the_template_and_carry_their_own_header_and_key() {
        let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: 1100 }, 3, 4);
        let mut template = Template::default();
        let r2 = ReadoutId(2);
        let a = generate(3, &sizes, r2, EventId(10), false, &mut template);
        let b = generate(3, &sizes, r2, EventId(11), false, &mut template);
        assert_eq!(a.bytes, 4 * 1100);
        for (i, f) in a.fragments.iter().enumerate() {
            let whole = f.to_bytes();
            assert_eq!(whole.len(), FRAGMENT_HEADER_BYTES + 1100);
            assert_eq!(payload::check(3, EventId(10), r2, i as u32, &whole[FRAGMENT_HEADER_BYTES..]), Ok(()));
            assert_eq!(
                f.rest.bytes.as_ptr(),
                b.fragments[i].rest.bytes.as_ptr(),
                "one template, not a copy per fragment"
            );
            assert_ne!(f.own, b.fragments[i].own);
        }
        // A corrupted fragment has its own payload: the shared template stays right.
        let bad = generate(3, &sizes, r2, EventId(12), true, &mut template);
        let whole = bad.fragments[0].to_bytes();
        assert_eq!(payload::check(3, EventId(12), r2, 0, &whole[FRAGMENT_HEADER_BYTES..]), Err(550));
        let again = generate(3, &sizes, r2, EventId(12), false, &mut template);
        assert_eq!(
            payload::check(3, EventId(12), r2, 0, &again.fragments[0].to_bytes()[FRAGMENT_HEADER_BYTES..]),
            Ok(())
        );
    }

    #[test]
    fn short_payloads_are_all_their_own() {
        let mut template = Template::default();
        for size in [1, 7, 8, 9] {
            let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: size }, 3, 1);
            let h = generate(3, &sizes, ReadoutId(0), EventId(1), false, &mut template);
            let whole = h.fragments[0].to_bytes();
            assert_eq!(whole.len(), FRAGMENT_HEADER_BYTES + size as usize);
            assert_eq!(payload::check(3, EventId(1), ReadoutId(0), 0, &whole[FRAGMENT_HEADER_BYTES..]), Ok(()));
        }
    }
}
