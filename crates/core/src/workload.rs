//! Workload: fragment sizes and the per-event choices every substrate must make identically.
//!
//! Every draw is a pure function of (seed, event, readout unit, fragment), so the simulator, a
//! real run and the testbed see the same sizes whatever the order in which they ask.

use crate::scenario::FragmentSize;
use crate::{EventId, ReadoutId};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Stream tags: independent pseudo-random streams derived from the run seed.
#[derive(Debug, Clone, Copy)]
#[repr(u64)]
pub enum Stream {
    /// Per-event scale of variable fragment sizes.
    EventSize = 1,
    /// Per-fragment component of variable fragment sizes.
    FragmentSize = 2,
    /// Which readout units a processing unit collects from.
    Subset = 3,
    /// The supervisor's random policy and initial order of requests for work.
    Supervisor = 4,
    /// Readout units' service-time jitter.
    Service = 5,
    /// A sub-farm worker's trigger decision.
    Verdict = 6,
    /// Where a host's kernel ticks fall (the simulator's TCP timers, `tick_phase = "per_host"`).
    TickPhase = 7,
    /// A switch port's RED marking draws (`[network.ecn]`, `marking = "red"`).
    Marking = 8,
    /// Which readout units a region-of-interest step collects from (`[[system.roi_step]]`).
    RoiSubset = 9,
    /// Whether a processing unit rejects an event after a region-of-interest step.
    RoiVerdict = 10,
}

/// SplitMix64 finaliser: a bijective 64-bit mixer (also used to hash connections onto paths).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A PRNG for one purpose and one key, derived from the run seed.
pub fn rng_for(seed: u64, stream: Stream, key: &[u64]) -> Xoshiro256PlusPlus {
    let mut h = mix(seed ^ mix(stream as u64 + 0x9e37_79b9_7f4a_7c15));
    for k in key {
        h = mix(h ^ mix(*k).rotate_left(17));
    }
    Xoshiro256PlusPlus::seed_from_u64(h)
}

/// Draws fragment sizes from a [`FragmentSize`] law.
#[derive(Debug, Clone)]
pub struct FragmentSizes {
    law: FragmentSize,
    seed: u64,
    fragments_per_unit: u32,
}

impl FragmentSizes {
    /// Sizes for a run with this seed; `fragments_per_unit` fragments per readout unit.
    pub fn new(law: FragmentSize, seed: u64, fragments_per_unit: u32) -> Self {
        FragmentSizes { law, seed, fragments_per_unit }
    }

    /// The per-event scale factor (1 for fixed sizes).
    fn event_scale(&self, event: EventId) -> f64 {
        match self.law {
            FragmentSize::Fixed { .. } => 1.0,
            FragmentSize::LognormalNormal { event_mu, event_sigma, .. } => {
                let d = LogNormal::new(event_mu, event_sigma).expect("validated sigma");
                d.sample(&mut rng_for(self.seed, Stream::EventSize, &[event.0]))
            }
        }
    }

    /// Bytes of all fragments one readout unit holds for one event.
    pub fn unit_bytes(&self, event: EventId, readout: ReadoutId) -> u64 {
        match self.law {
            FragmentSize::Fixed { bytes } => bytes as u64 * self.fragments_per_unit as u64,
            FragmentSize::LognormalNormal { .. } => self.fragment_bytes(event, readout).iter().sum(),
        }
    }

    /// Fragments per readout unit and event.
    pub fn fragments_per_unit(&self) -> u32 {
        self.fragments_per_unit
    }

    /// The size of each fragment one readout unit holds for one event, in bytes; they add up to
    /// [`FragmentSizes::unit_bytes`].
    pub fn fragment_bytes(&self, event: EventId, readout: ReadoutId) -> Vec<u64> {
        match self.law {
            FragmentSize::Fixed { bytes } => vec![bytes as u64; self.fragments_per_unit as usize],
            FragmentSize::LognormalNormal { base_bytes, fragment_sd_bytes, min_bytes, .. } => {
                let scale = self.event_scale(event) * base_bytes as f64;
                let mut rng = rng_for(self.seed, Stream::FragmentSize, &[event.0, readout.0 as u64]);
                let noise = Normal::new(0.0, fragment_sd_bytes).expect("validated sd");
                (0..self.fragments_per_unit)
                    .map(|_| (scale + noise.sample(&mut rng)).round().max(min_bytes as f64) as u64)
                    .collect()
            }
        }
    }
}

/// Service delay of readout unit `readout` answering a request for `event`:
/// `base_ns` plus a uniform draw in `[0, jitter_ns)`.
pub fn service_delay(seed: u64, event: EventId, readout: ReadoutId, base_ns: u64, jitter_ns: u64) -> u64 {
    if jitter_ns == 0 {
        return base_ns;
    }
    base_ns + rng_for(seed, Stream::Service, &[event.0, readout.0 as u64]).random_range(0..jitter_ns)
}

/// The readout units a processing unit collects from for `event`: all of them when
/// `fraction >= 1`, otherwise `ceil(fraction × units)` of them chosen uniformly, in ascending order.
pub fn readout_subset(seed: u64, event: EventId, fraction: f64, units: u32) -> Vec<ReadoutId> {
    sample(rng_for(seed, Stream::Subset, &[event.0]), fraction, units)
}

/// The readout units region-of-interest step `step` of `event` asks (before it leaves out those
/// earlier steps collected): `fraction` of the `units`, drawn from a stream of its own so that
/// a scenario without such steps keeps its subsets.
pub fn roi_subset(seed: u64, event: EventId, step: u32, fraction: f64, units: u32) -> Vec<ReadoutId> {
    sample(rng_for(seed, Stream::RoiSubset, &[event.0, step as u64]), fraction, units)
}

/// The steps of `event` a unit takes when it rejects after step `k` a share `reject[k]` of the
/// events that reach it (drawn per event and step from the seed): `reject.len() + 1` when the
/// event is kept to the last step.
pub fn steps_taken(seed: u64, event: EventId, reject: impl IntoIterator<Item = f64>) -> usize {
    let mut taken = 1;
    for (k, share) in reject.into_iter().enumerate() {
        if share > 0.0 && rng_for(seed, Stream::RoiVerdict, &[event.0, k as u64]).random::<f64>() < share {
            return taken;
        }
        taken += 1;
    }
    taken
}

/// `ceil(fraction × units)` (at least one) of the units `0..units`, sorted, drawn with `rng`;
/// all of them, without a draw, when `fraction` is 1.
fn sample(mut rng: Xoshiro256PlusPlus, fraction: f64, units: u32) -> Vec<ReadoutId> {
    let all: Vec<ReadoutId> = (0..units).map(ReadoutId).collect();
    if fraction >= 1.0 {
        return all;
    }
    let k = ((fraction * units as f64).ceil() as usize).clamp(1, units as usize);
    let mut pool = all;
    // Partial Fisher–Yates: the first k entries become a uniform sample.
    for i in 0..k {
        let j = rng.random_range(i..pool.len());
        pool.swap(i, j);
    }
    let mut chosen = pool[..k].to_vec();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    const E10: EventId = EventId(10);
    const R3: ReadoutId = ReadoutId(3);

    #[test]
    fn fixed_sizes_are_exact() {
        let s = FragmentSizes::new(FragmentSize::Fixed { bytes: 1100 }, 7, 12);
        assert_eq!(s.unit_bytes(EventId(3), ReadoutId(5)), 13_200);
    }

    #[test]
    fn variable_sizes_are_deterministic_and_follow_the_law() {
        let law = FragmentSize::LognormalNormal {
            base_bytes: 1100,
            event_mu: 0.0,
            event_sigma: 0.25,
            fragment_sd_bytes: 110.0,
            min_bytes: 1,
        };
        let s = FragmentSizes::new(law.clone(), 7, 12);
        let again = FragmentSizes::new(law, 7, 12);
        assert_eq!(s.unit_bytes(E10, R3), again.unit_bytes(E10, R3));
        let each = s.fragment_bytes(E10, R3);
        assert_eq!(each.len(), 12);
        assert_eq!(each.iter().sum::<u64>(), s.unit_bytes(E10, R3));
        assert!(each.windows(2).any(|w| w[0] != w[1]), "fragments of a unit differ: {each:?}");
        // Mean of LogNormal(0, 0.25) is exp(0.03125) ≈ 1.0317: over many events the mean fragment
        // is ≈ 1135 bytes; events differ from each other much more than units within an event.
        let n = 4000u64;
        let mean: f64 = (0..n).map(|e| s.unit_bytes(EventId(e), ReadoutId(0)) as f64 / 12.0).sum::<f64>() / n as f64;
        assert!((mean - 1134.9).abs() < 15.0, "mean fragment {mean}");
        let within: Vec<f64> = (0..50).map(|r| s.unit_bytes(EventId(1), ReadoutId(r)) as f64).collect();
        let spread = within.iter().cloned().fold(f64::MIN, f64::max) - within.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread < 0.2 * 13_200.0, "units of one event differ by {spread} bytes");
    }

    #[test]
    fn subsets_have_the_right_size_and_are_deterministic() {
        let a = readout_subset(1, EventId(42), 0.1, 160);
        assert_eq!(a.len(), 16);
        assert_eq!(a, readout_subset(1, EventId(42), 0.1, 160));
        assert_ne!(a, readout_subset(1, EventId(43), 0.1, 160));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(readout_subset(1, EventId(42), 1.0, 5), (0..5).map(ReadoutId).collect::<Vec<_>>());
    }

    #[test]
    fn a_step_rejects_its_share_of_the_events_that_reach_it() {
        let taken = |reject: &[f64]| -> Vec<usize> {
            (0..10_000).map(|e| steps_taken(1, EventId(e), reject.iter().copied())).collect()
        };
        assert!(taken(&[0.0, 0.0]).iter().all(|&t| t == 3), "no rejection: every step");
        // Half rejected after the first step, half of the rest after the second: 5,000, 2,500
        // and 2,500 events take 1, 2 and 3 steps; binomial sd ≤ 50, allowed 4 sd.
        let t = taken(&[0.5, 0.5]);
        for (steps, expect) in [(1, 5000.0), (2, 2500.0), (3, 2500.0)] {
            let n = t.iter().filter(|&&x| x == steps).count() as f64;
            assert!((n - expect).abs() < 200.0, "{n} events took {steps} steps, expected {expect}");
        }
        assert_eq!(t, taken(&[0.5, 0.5]), "a pure function of seed and event");
    }
}
