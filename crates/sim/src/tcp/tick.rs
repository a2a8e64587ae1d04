//! When a Linux TCP timer fires: timers are armed in whole kernel ticks (jiffies, `CONFIG_HZ`)
//! and Linux's timer wheel fires them on a later tick, never early.
//!
//! A timeout is first rounded up to whole ticks (`usecs_to_jiffies`); the timer wheel then files
//! it in a level by its distance — level 0 holds the next 63 ticks one tick apart, each further
//! level 8× coarser — and rounds the expiry up to the next granule of that level
//! (`calc_index`). So at 250 Hz a 2.6 ms timer fires 4–8 ms after it is armed, a 200 ms one
//! 200–204 ms after, and a 400 ms one up to 32 ms late (at 1000 Hz: 200–208 ms).
//!
//! Each machine's ticks follow its own timer interrupt, so two hosts' ticks fall at unrelated
//! instants; [`TimerTick::on_host`] gives a host its own phase.

use daqnet_core::workload::{rng_for, Stream};
use daqnet_core::Nanos;
use rand::Rng;

/// Ticks a level of the wheel covers before the next, coarser one (Linux `LVL_START(1)`).
const LEVEL0_TICKS: u64 = 63;
/// Each level is 2^3 times coarser than the one below (Linux `LVL_CLK_SHIFT`).
const LEVEL_SHIFT: u32 = 3;
/// Levels of the wheel (Linux `LVL_DEPTH` for HZ > 100).
const LEVELS: u32 = 8;

/// The kernel tick that TCP timers run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerTick {
    tick_ns: Nanos,
    /// Where this host's ticks fall: at `phase_ns` + k · `tick_ns`.
    phase_ns: Nanos,
}

impl TimerTick {
    /// Timers that tick at `hz` (0: exact timers).
    pub fn new(hz: u32) -> Self {
        TimerTick { tick_ns: if hz == 0 { 0 } else { 1_000_000_000 / hz as Nanos }, phase_ns: 0 }
    }

    /// The same tick at host `host`'s own phase, drawn from the run seed.
    pub fn on_host(self, seed: u64, host: u32) -> Self {
        if self.tick_ns == 0 {
            return self;
        }
        let phase_ns = rng_for(seed, Stream::TickPhase, &[host as u64]).random_range(0..self.tick_ns);
        TimerTick { phase_ns, ..self }
    }

    /// One jiffy, the kernel clock's tick, ns: the timer tick, or 1 ms (`HZ` = 1000, Linux's
    /// default) when timers are exact. CUBIC counts its time in jiffies.
    pub fn jiffy_ns(&self) -> Nanos {
        if self.tick_ns == 0 {
            1_000_000
        } else {
            self.tick_ns
        }
    }

    /// The host's tick count at `now` (Linux `jiffies`; 1 ms ticks for exact timers).
    pub fn jiffies(&self, now: Nanos) -> u64 {
        let t = self.jiffy_ns();
        (now + (t - self.phase_ns) % t) / t
    }

    /// When a timer armed at `now` for `timeout` ns fires.
    #[inline]
    pub fn fires_at(&self, now: Nanos, timeout: Nanos) -> Nanos {
        let t = self.tick_ns;
        if t == 0 {
            return now + timeout;
        }
        // In this host's own time, where its ticks fall on multiples of the tick.
        let shift = (t - self.phase_ns) % t;
        let now = now + shift;
        let delay = timeout.div_ceil(t);
        let expires = now / t + delay;
        let mut level = 0;
        let mut level_end = LEVEL0_TICKS;
        while delay >= level_end && level < LEVEL_SHIFT * (LEVELS - 1) {
            level += LEVEL_SHIFT;
            level_end <<= LEVEL_SHIFT;
        }
        (((expires >> level) + 1) << level) * t - shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// Separate machines tick at unrelated instants: a host's timers fire on its own ticks
    /// (phase + k · 4 ms at 250 Hz), never early and at most two ticks late for a short timer,
    /// and two hosts' timers armed at the same instant fire at different ones.
    #[test]
    fn a_host_ticks_at_its_own_phase() {
        let shared = TimerTick::new(250);
        let (a, b) = (shared.on_host(1, 0), shared.on_host(1, 1));
        assert_ne!(a.phase_ns, b.phase_ns);
        assert_eq!(a, shared.on_host(1, 0), "the phase depends on the seed and the host only");
        assert_ne!(a.fires_at(10 * MS, 2_600_000), b.fires_at(10 * MS, 2_600_000));
        for h in [shared, a, b] {
            for now in (0..8 * MS).step_by(333_333) {
                let d = h.fires_at(now, 2_600_000);
                assert!(d >= now + 2_600_000 && d <= now + 2_600_000 + 2 * 4 * MS, "{h:?} {now} {d}");
                assert_eq!((d + 4 * MS - h.phase_ns) % (4 * MS), 0, "on the host's own tick: {h:?} {d}");
            }
        }
    }

    #[test]
    fn exact_without_a_tick() {
        assert_eq!(TimerTick::new(0).fires_at(123, 2 * MS), 123 + 2 * MS);
    }

    #[test]
    fn short_timers_fire_one_to_two_ticks_late_at_250_hz() {
        let w = TimerTick::new(250);
        // Armed just after a tick: 2.6 ms rounds up to one tick, the wheel adds one: 8 ms.
        assert_eq!(w.fires_at(4 * MS + 1, 2_600_000), 12 * MS);
        // Armed just before a tick: fires a little over 4 ms later.
        assert_eq!(w.fires_at(8 * MS - 1, 2_600_000), 12 * MS);
        // Never early, for any phase.
        for phase in (0..4 * MS).step_by(250_000) {
            let now = 1000 * MS + phase;
            let d = w.fires_at(now, 2_600_000);
            assert!((now + 2_600_000..=now + 8 * MS).contains(&d), "{phase}: {}", d - now);
        }
    }

    #[test]
    fn long_timers_land_on_coarser_granules() {
        let w = TimerTick::new(250);
        // 200 ms = 50 ticks: level 0, one tick of slack.
        let d = w.fires_at(0, 200 * MS);
        assert_eq!(d, 204 * MS);
        // 400 ms = 100 ticks: level 1, granules of 8 ticks (32 ms).
        let d = w.fires_at(0, 400 * MS);
        assert_eq!(d, 416 * MS);
        assert_eq!(d % (32 * MS), 0);
        let d = w.fires_at(4 * MS, 400 * MS);
        assert!((404 * MS..=436 * MS).contains(&d), "{d}");
    }

    #[test]
    fn a_thousand_hz_is_close_to_exact() {
        let w = TimerTick::new(1000);
        assert_eq!(w.fires_at(500_000, 2_600_000), 4 * MS);
        // 200 ticks is beyond level 0: granules of 8 ms.
        assert_eq!(w.fires_at(0, 200 * MS), 208 * MS);
    }
}
