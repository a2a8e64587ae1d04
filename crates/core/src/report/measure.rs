//! The measured part of a run: latencies, duration and rates from the events built, the one
//! definition every substrate uses, and the steady-state rate of a run's completions.

use super::{EventRecord, LatencyMs, RunReport};
use crate::{EventId, Nanos, NodeId, PuId, Scenario, NS_PER_MS, NS_PER_S};
use base64::Engine;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The histogram of a report: microseconds, 1 µs to an hour, 3 significant digits.
fn histogram_us() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

fn record_us(h: &mut Histogram<u64>, ns: Nanos) {
    h.saturating_record((ns / 1000).max(1));
}

fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("in-memory serialization");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

fn ms(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

impl LatencyMs {
    /// Statistics of latency samples in nanoseconds. Quantiles are exact order statistics
    /// (nearest rank), so they do not depend on the histogram's resolution.
    pub fn from_ns(samples: &[Nanos]) -> Self {
        if samples.is_empty() {
            return LatencyMs::default();
        }
        let mut v = samples.to_vec();
        v.sort_unstable();
        let q = |p: f64| ms(v[(((p * v.len() as f64).ceil() as usize).max(1) - 1).min(v.len() - 1)]);
        let sum: u128 = v.iter().map(|&x| x as u128).sum();
        let mut h = histogram_us();
        v.iter().for_each(|&x| record_us(&mut h, x));
        LatencyMs {
            mean: sum as f64 / v.len() as f64 / NS_PER_MS as f64,
            p1: q(0.01),
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            p99: q(0.99),
            max: ms(*v.last().expect("non-empty")),
            share_ge_100ms: v.iter().filter(|&&x| x >= 100 * NS_PER_MS).count() as f64 / v.len() as f64,
            hdr_us_base64: encode(&h),
        }
    }

    /// Statistics of a running summary: mean, maximum and share are exact; quantiles come from
    /// the histogram, to 3 significant digits.
    fn from_summary(s: &Summary) -> Self {
        if s.count == 0 {
            return LatencyMs::default();
        }
        let q = |p: f64| s.hist.value_at_quantile(p) as f64 / 1000.0;
        LatencyMs {
            mean: s.sum_ns as f64 / s.count as f64 / NS_PER_MS as f64,
            p1: q(0.01),
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            p99: q(0.99),
            max: ms(s.max_ns),
            share_ge_100ms: s.ge_100ms as f64 / s.count as f64,
            hdr_us_base64: encode(&s.hist),
        }
    }
}

/// Latency samples summarised in fixed memory.
#[derive(Debug, Clone)]
struct Summary {
    hist: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: Nanos,
    ge_100ms: u64,
}

/// How a [`Measure`] keeps latencies.
#[derive(Debug, Clone)]
enum Samples {
    /// Every sample (8 bytes per event): exact quantiles.
    Exact(Vec<Nanos>),
    /// A fixed-size summary: memory stays flat however long the run.
    Bounded(Box<Summary>),
}

/// The rate at which events finished in steady state, per second: the least-squares slope of
/// the count of finished events against time over the middle 80 % of the completion times
/// `done` (sorted here), leaving out the run's start and end, when not every sender is busy.
/// A slope, not a count over a span, because events finish in bursts (every builder's credit
/// comes back at about the same time): a span that starts at a burst's first event counts the
/// whole burst but none of its time, which overstates the rate by up to a burst in the window
/// — above the line rate. `None` when the run has fewer than four rounds of `in_flight`
/// events, or no time passed.
pub fn steady_rate(done: &mut [Nanos], in_flight: usize) -> Option<f64> {
    done.sort_unstable();
    let n = done.len();
    let (a, b) = (n / 10, n * 9 / 10);
    if n < 4 * in_flight.max(1) || done[b - 1] == done[a] {
        return None;
    }
    let window = &done[a..b];
    let t = |x: Nanos| (x - window[0]) as f64 / NS_PER_S as f64;
    let k = window.len() as f64;
    let (mean_t, mean_i) = (window.iter().map(|&x| t(x)).sum::<f64>() / k, (k - 1.0) / 2.0);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, &x) in window.iter().enumerate() {
        let dt = t(x) - mean_t;
        sxy += dt * (i as f64 - mean_i);
        sxx += dt * dt;
    }
    (sxx > 0.0).then(|| sxy / sxx)
}

/// One built event as a substrate saw it; times in ns since the run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Track {
    /// The event.
    pub event: EventId,
    /// The processing unit it was assigned to.
    pub pu: PuId,
    /// That unit's node.
    pub node: NodeId,
    /// When the supervisor assigned it.
    pub assigned: Nanos,
    /// When data collection started.
    pub started: Nanos,
    /// When its last fragment arrived.
    pub done: Nanos,
    /// Data-collection latency: `done - started`, less the processing between the steps of an
    /// event collected in several (`[[system.roi_step]]`).
    pub latency: Nanos,
    /// Payload bytes collected.
    pub bytes: u64,
}

impl Track {
    /// An event collected in one step, from `started` to `done`.
    pub fn one_step(
        event: EventId,
        pu: PuId,
        node: NodeId,
        assigned: Nanos,
        started: Nanos,
        done: Nanos,
        bytes: u64,
    ) -> Self {
        Track { event, pu, node, assigned, started, done, latency: done - started, bytes }
    }

    /// Its row in `events.csv`; events before `warmup` are not measured.
    pub fn record(&self, warmup: u64) -> EventRecord {
        EventRecord {
            event: self.event.0,
            pu: self.pu.0,
            node: self.node.0,
            assigned_ns: self.assigned,
            start_ns: self.started,
            done_ns: self.done,
            latency_ns: self.latency,
            bytes: self.bytes,
            measured: self.event.0 >= warmup,
        }
    }
}

/// The measured part of a run, accumulated event by event: the one definition of latency,
/// duration and rates that every substrate uses. Events numbered below the warm-up are left
/// out; the order in which events are recorded does not matter.
#[derive(Debug, Clone)]
pub struct Measure {
    warmup: u64,
    samples: Samples,
    first_assigned: Option<Nanos>,
    last_done: Nanos,
    bytes: u64,
}

/// What [`Measure`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Measured events built.
    pub events_built: u64,
    /// From the first measured event's assignment to the last one's completion, seconds.
    pub duration_s: f64,
    /// Measured events built per second.
    pub event_rate_hz: f64,
    /// Payload bits per second.
    pub goodput_bps: f64,
    /// Data-collection latency.
    pub latency_ms: LatencyMs,
}

impl Measure {
    /// Nothing measured yet; events `0..warmup` will not count. Every latency is kept, so the
    /// quantiles are exact order statistics (8 bytes per event measured).
    pub fn new(warmup: u64) -> Self {
        Measure { warmup, samples: Samples::Exact(Vec::new()), first_assigned: None, last_done: 0, bytes: 0 }
    }

    /// As [`Measure::new`], in fixed memory: latencies go into the report's histogram (3
    /// significant digits), from which the quantiles are read; mean, maximum and the share of
    /// slow events stay exact. For runs bounded by time rather than by events.
    pub fn bounded(warmup: u64) -> Self {
        let summary = Summary { hist: histogram_us(), count: 0, sum_ns: 0, max_ns: 0, ge_100ms: 0 };
        Measure { samples: Samples::Bounded(Box::new(summary)), ..Measure::new(warmup) }
    }

    /// A built event.
    pub fn record(&mut self, t: &Track) {
        if t.event.0 < self.warmup {
            return;
        }
        match &mut self.samples {
            Samples::Exact(v) => v.push(t.latency),
            Samples::Bounded(s) => {
                let l = t.latency;
                record_us(&mut s.hist, l);
                s.count += 1;
                s.sum_ns += l as u128;
                s.max_ns = s.max_ns.max(l);
                s.ge_100ms += (l >= 100 * NS_PER_MS) as u64;
            }
        }
        self.first_assigned = Some(self.first_assigned.map_or(t.assigned, |f| f.min(t.assigned)));
        self.last_done = self.last_done.max(t.done);
        self.bytes += t.bytes;
    }

    /// Measured events built so far.
    pub fn events_built(&self) -> u64 {
        match &self.samples {
            Samples::Exact(v) => v.len() as u64,
            Samples::Bounded(s) => s.count,
        }
    }

    /// The statistics (zero rates when nothing was built).
    pub fn finish(self) -> Measured {
        let duration_s = self.first_assigned.map_or(0, |f| self.last_done.saturating_sub(f)) as f64 / NS_PER_S as f64;
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        Measured {
            events_built: self.events_built(),
            duration_s,
            event_rate_hz: per_s(self.events_built() as f64),
            goodput_bps: per_s(self.bytes as f64 * 8.0),
            latency_ms: match &self.samples {
                Samples::Exact(v) => LatencyMs::from_ns(v),
                Samples::Bounded(s) => LatencyMs::from_summary(s),
            },
        }
    }
}

impl Measured {
    /// The statistics of `tracks` (events before `warmup` left out).
    pub fn from<'a>(tracks: impl IntoIterator<Item = &'a Track>, warmup: u64) -> Self {
        let mut m = Measure::new(warmup);
        tracks.into_iter().for_each(|t| m.record(t));
        m.finish()
    }
}

impl RunReport {
    /// A report of `substrate` running `scenario` (named `origin`), with the measured part
    /// filled in; the substrate adds its own counters.
    pub fn measured(substrate: &str, origin: &str, scenario: &Scenario, m: Measured) -> Self {
        RunReport {
            substrate: substrate.into(),
            scenario: origin.into(),
            seed: scenario.run.seed,
            events_built: m.events_built,
            duration_s: m.duration_s,
            event_rate_hz: m.event_rate_hz,
            goodput_bps: m.goodput_bps,
            latency_ms: m.latency_ms,
            daqnet_version: env!("CARGO_PKG_VERSION").into(),
            resolved_scenario: scenario.to_toml(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_rate_of_bursts_is_their_average_rate() {
        // 30 bursts of 8 events, one burst per millisecond (each burst's events 1 µs apart):
        // 8000 events/s. A count over the span from a burst's first event would say ~8200.
        let mut done: Vec<Nanos> = (0..30).flat_map(|b| (0..8).map(move |e| b * 1_000_000 + e * 1000)).collect();
        let r = steady_rate(&mut done, 8).unwrap();
        assert!((r - 8000.0).abs() / 8000.0 < 0.005, "{r}");
        assert_eq!(steady_rate(&mut done[..20], 8), None, "under four rounds");
    }

    #[test]
    fn quantiles_are_order_statistics() {
        let v: Vec<Nanos> = (1..=100).map(|i| i * NS_PER_MS).collect();
        let l = LatencyMs::from_ns(&v);
        assert_eq!((l.p1, l.q1, l.median, l.q3, l.p99, l.max), (1.0, 25.0, 50.0, 75.0, 99.0, 100.0));
        assert!((l.mean - 50.5).abs() < 1e-9);
        assert!((l.share_ge_100ms - 0.01).abs() < 1e-12);
        assert!(!l.hdr_us_base64.is_empty());
    }

    #[test]
    fn empty_latencies_are_zero() {
        assert_eq!(LatencyMs::from_ns(&[]).mean, 0.0);
    }

    fn track(event: u64, assigned: Nanos, started: Nanos, done: Nanos) -> Track {
        Track::one_step(EventId(event), PuId(0), NodeId(0), assigned, started, done, 1000)
    }

    #[test]
    fn the_measured_part_runs_from_the_first_assignment_to_the_last_completion_after_warm_up() {
        let tracks = [
            track(0, 0, 0, 9 * NS_PER_S), // warm-up: left out even though it ends last
            track(2, NS_PER_S, NS_PER_S + 10, 3 * NS_PER_S),
            track(1, 2 * NS_PER_S, 2 * NS_PER_S, 5 * NS_PER_S),
        ];
        let m = Measured::from(&tracks, 1);
        assert_eq!(m.events_built, 2);
        assert_eq!(m.duration_s, 4.0);
        assert_eq!(m.event_rate_hz, 0.5);
        assert_eq!(m.goodput_bps, 2.0 * 8000.0 / 4.0);
        assert_eq!(m.latency_ms.max, 3000.0);
        let reversed: Vec<Track> = tracks.iter().rev().copied().collect();
        assert_eq!(Measured::from(&reversed, 1), m, "order does not matter");
        assert_eq!(Measured::from(&tracks[..1], 1).event_rate_hz, 0.0, "nothing measured: no rate");
        assert!(!tracks[0].record(1).measured && tracks[1].record(1).measured);
    }

    #[test]
    fn a_bounded_measure_agrees_with_the_exact_one_to_three_significant_digits() {
        let tracks: Vec<Track> =
            (0..20_000u64).map(|e| track(e, e * 1000, e * 1000, e * 1000 + (e % 997 + 1) * 211_000)).collect();
        let (mut exact, mut bounded) = (Measure::new(100), Measure::bounded(100));
        for t in &tracks {
            exact.record(t);
            bounded.record(t);
        }
        let (a, b) = (exact.finish(), bounded.finish());
        assert_eq!((a.events_built, a.duration_s, a.goodput_bps), (b.events_built, b.duration_s, b.goodput_bps));
        let (x, y) = (&a.latency_ms, &b.latency_ms);
        assert_eq!((x.max, x.share_ge_100ms), (y.max, y.share_ge_100ms), "exact in both");
        assert!((x.mean - y.mean).abs() < 1e-9 * x.mean);
        for (p, q) in [(x.p1, y.p1), (x.q1, y.q1), (x.median, y.median), (x.q3, y.q3), (x.p99, y.p99)] {
            assert!((p - q).abs() <= 1e-3 * p, "{p} vs {q}");
        }
        assert_eq!(x.hdr_us_base64, y.hdr_us_base64, "the same histogram");
    }
}
