//! Verification of a readout unit's response: every fragment's event, source, index, size and
//! (unless switched off) every payload byte.

use crate::payload;
use crate::wire::{FragmentHeader, ResponseHead};
use bytes::{Buf, Bytes};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{NodeId, ReadoutId};

/// The outcome of verifying one response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Fragments that passed.
    pub good: u32,
    /// Fragments that failed.
    pub bad: u32,
    /// The first problem found.
    pub problem: Option<String>,
}

/// Verifies the fragments of a response from readout unit `from` to node `node` against
/// what the workload says they must be. With `check_payload` false only the headers are
/// checked (to measure what the payload check costs).
pub fn verify(
    seed: u64,
    sizes: &FragmentSizes,
    node: NodeId,
    from: ReadoutId,
    head: &ResponseHead,
    mut body: Bytes,
    check_payload: bool,
) -> Verdict {
    let mut v = Verdict::default();
    let expected = sizes.fragment_bytes(head.event, from);
    let fail = |v: &mut Verdict, n: u32, what: String| {
        v.bad += n;
        v.problem.get_or_insert(what);
    };
    if head.readout != from || head.node != node {
        fail(&mut v, head.fragments, format!("response names readout {} and node {}", head.readout, head.node));
        return v;
    }
    if head.fragments as usize != expected.len() || head.bytes != expected.iter().sum::<u64>() {
        fail(
            &mut v,
            expected.len() as u32,
            format!(
                "response announces {} fragments, {} bytes; expected {}, {}",
                head.fragments,
                head.bytes,
                expected.len(),
                expected.iter().sum::<u64>()
            ),
        );
        return v;
    }
    for (i, &size) in expected.iter().enumerate() {
        let h = match FragmentHeader::take(&mut body) {
            Ok(h) => h,
            Err(e) => {
                fail(&mut v, (expected.len() - i) as u32, format!("fragment {i}: {e}"));
                return v;
            }
        };
        if h.event != head.event || h.source != from || h.index != i as u32 || h.size as u64 != size {
            fail(
                &mut v,
                (expected.len() - i) as u32,
                format!(
                    "fragment {i}: header says event {}, source {}, index {}, size {}; expected event {}, source {from}, index {i}, size {size}",
                    h.event, h.source, h.index, h.size, head.event
                ),
            );
            return v;
        }
        if body.remaining() < size as usize {
            fail(
                &mut v,
                (expected.len() - i) as u32,
                format!("fragment {i}: truncated ({} of {size} bytes)", body.remaining()),
            );
            return v;
        }
        let data = body.split_to(size as usize);
        if !check_payload {
            v.good += 1;
            continue;
        }
        match payload::check(seed, head.event, from, i as u32, &data) {
            Ok(()) => v.good += 1,
            Err(at) => fail(
                &mut v,
                1,
                format!("fragment {i}: payload differs from the expected pattern at byte {at} of {size}"),
            ),
        }
    }
    if body.has_remaining() {
        fail(&mut v, 0, format!("{} bytes after the last fragment", body.remaining()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const N1: NodeId = NodeId(1);
    const R3: ReadoutId = ReadoutId(3);
    use crate::roles::readout::generate;
    use bytes::BytesMut;
    use daqnet_core::scenario::FragmentSize;
    use daqnet_core::EventId;

    fn response(event: u64, corrupt: bool) -> (ResponseHead, Bytes, FragmentSizes) {
        let sizes = FragmentSizes::new(
            FragmentSize::LognormalNormal {
                base_bytes: 1100,
                event_mu: 0.0,
                event_sigma: 0.25,
                fragment_sd_bytes: 110.0,
                min_bytes: 1,
            },
            9,
            12,
        );
        let event = EventId(event);
        let held = generate(9, &sizes, ReadoutId(3), event, corrupt, &mut Default::default());
        let mut body = BytesMut::new();
        for f in &held.fragments {
            body.extend_from_slice(&f.to_bytes());
        }
        let head = ResponseHead { event, readout: ReadoutId(3), node: NodeId(1), fragments: 12, bytes: held.bytes };
        (head, body.freeze(), sizes)
    }

    proptest::proptest! {
        /// Whatever happens to a response on the way — a bit flipped anywhere in its fragments,
        /// a cut anywhere, another event's data, bytes from nowhere — verification never panics
        /// and never counts every fragment good.
        #[test]
        fn no_corruption_passes_verification(
            event in 0u64..500,
            at in proptest::prelude::any::<proptest::sample::Index>(),
            bit in 0u8..8,
            garbage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        ) {
            let (head, body, sizes) = response(event, false);
            let all_good = |v: &Verdict| v.good == 12 && v.bad == 0 && v.problem.is_none();
            proptest::prop_assert!(all_good(&verify(9, &sizes, N1, R3, &head, body.clone(), true)));
            let mut flipped = body.to_vec();
            flipped[at.index(body.len())] ^= 1 << bit;
            proptest::prop_assert!(!all_good(&verify(9, &sizes, N1, R3, &head, Bytes::from(flipped), true)));
            let cut = body.slice(..at.index(body.len()));
            proptest::prop_assert!(!all_good(&verify(9, &sizes, N1, R3, &head, cut, true)));
            let (_, other, _) = response(event + 1, false);
            proptest::prop_assert!(!all_good(&verify(9, &sizes, N1, R3, &head, other, true)));
            proptest::prop_assert!(!all_good(&verify(9, &sizes, N1, R3, &head, Bytes::from(garbage), true)));
        }
    }

    /// The fragments of a response of unit 3 for `event`, four of 4 kB each (one size, so a
    /// mix-up is visible only in headers and payloads).
    fn fixed(event: u64) -> (Vec<Bytes>, FragmentSizes) {
        let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: 4000 }, 9, 4);
        let held = generate(9, &sizes, R3, EventId(event), false, &mut Default::default());
        (held.fragments.iter().map(|f| f.to_bytes()).collect(), sizes)
    }

    fn verify_fixed(event: u64, fragments: &[Bytes], sizes: &FragmentSizes) -> Verdict {
        let mut body = BytesMut::new();
        fragments.iter().for_each(|f| body.extend_from_slice(f));
        let bytes = (body.len() - fragments.len() * crate::wire::FRAGMENT_HEADER_BYTES) as u64;
        let head = ResponseHead { event: EventId(event), readout: R3, node: N1, fragments: 4, bytes };
        verify(9, sizes, N1, R3, &head, body.freeze(), true)
    }

    /// Each kind of corruption the payload check is there for is caught, with the fragment named.
    #[test]
    fn each_kind_of_corruption_is_caught() {
        let (good, sizes) = fixed(40);
        assert_eq!(verify_fixed(40, &good, &sizes).bad, 0);
        let problem = |frags: Vec<Bytes>| verify_fixed(40, &frags, &sizes).problem.expect("caught");
        let hdr = crate::wire::FRAGMENT_HEADER_BYTES;
        // A flipped bit: in the key word, and deep in the template.
        for at in [hdr, hdr + 3999] {
            let mut f = good.clone();
            let mut b = f[2].to_vec();
            b[at] ^= 0x01;
            f[2] = Bytes::from(b);
            assert!(problem(f).starts_with("fragment 2: payload differs"), "bit at {at}");
        }
        // Two fragments swapped, and one sent twice.
        let mut swapped = good.clone();
        swapped.swap(1, 2);
        assert!(problem(swapped).contains("header says event 40, source 3, index 2"));
        let mut twice = good.clone();
        twice[1] = good[0].clone();
        assert!(problem(twice).contains("fragment 1: header says event 40, source 3, index 0"));
        // Another event's fragment, whole or only its payload under the right header.
        let (other, _) = fixed(41);
        let mut foreign = good.clone();
        foreign[3] = other[3].clone();
        assert!(problem(foreign).contains("fragment 3: header says event 41"));
        let mut payload_only = good.clone();
        let mut b = good[3][..hdr].to_vec();
        b.extend_from_slice(&other[3][hdr..]);
        payload_only[3] = Bytes::from(b);
        assert!(problem(payload_only).starts_with("fragment 3: payload differs from the expected pattern at byte 0"));
        // Bytes moved within a fragment: its two halves exchanged.
        let mut moved = good.clone();
        let mut b = good[0][..hdr].to_vec();
        b.extend_from_slice(&good[0][hdr + 2000..]);
        b.extend_from_slice(&good[0][hdr..hdr + 2000]);
        moved[0] = Bytes::from(b);
        assert!(problem(moved).starts_with("fragment 0: payload differs"));
    }

    #[test]
    fn a_generated_response_verifies() {
        let (head, body, sizes) = response(40, false);
        assert_eq!(verify(9, &sizes, N1, R3, &head, body, true), Verdict { good: 12, bad: 0, problem: None });
    }

    #[test]
    fn corruption_and_mix_ups_are_caught() {
        let (head, body, sizes) = response(40, true);
        let v = verify(9, &sizes, N1, R3, &head, body, true);
        assert_eq!((v.good, v.bad), (11, 1));
        assert!(v.problem.unwrap().starts_with("fragment 0: payload differs"));
        // Another event's data under this event's head: sizes differ (variable law) or payloads do.
        let (_, other, sizes) = response(41, false);
        let (head, ..) = response(40, false);
        assert!(verify(9, &sizes, N1, R3, &head, other, true).bad > 0);
        // From the wrong unit, for the wrong node, truncated.
        let (head, body, sizes) = response(40, false);
        assert!(verify(9, &sizes, N1, ReadoutId(4), &head, body.clone(), true)
            .problem
            .unwrap()
            .contains("names readout 3"));
        assert!(verify(9, &sizes, NodeId(2), R3, &head, body.clone(), true).bad == 12);
        let v = verify(9, &sizes, N1, R3, &head, body.slice(..body.len() - 10), true);
        assert!(v.problem.unwrap().contains("truncated"), "truncation found");
    }
}
