//! The LHCb sub-farm (scenarios/lhcb-2002; Neufeld and Thannhaeuser, LHCb 2002-049): what the
//! simulated SFC and workers must do, each claim with the bound it follows from.

use daqnet_core::farm::accepts;
use daqnet_core::scenario::load;
use daqnet_core::{EventId, Scenario};
use daqnet_sim::{simulate, SimOptions, SimOutput};
use std::path::Path;

fn scenario(name: &str, sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/lhcb-2002/{name}.toml"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(&path, &sets).unwrap()
}

fn run(s: &Scenario) -> SimOutput {
    simulate(s, "test", SimOptions { record_events: true, ..Default::default() })
}

/// Payload bits per second a link of `bps` carries in full-sized segments.
fn payload_capacity(s: &Scenario, bps: u64) -> f64 {
    bps as f64 * s.network.payload_share()
}

#[test]
fn version_2_fills_the_sfc_link_and_shares_it_evenly() {
    // 20 workers x 100 Mb/s = 2 Gb/s behind a 1 Gb/s SFC link: the SFC link is the bottleneck.
    // One token per worker keeps 20 events of 32 kB (5 Mb) in flight, far above the link's
    // bandwidth-delay product (1 Gb/s x ~0.2 ms), so the link never idles: at least 95 % of its
    // payload capacity, and never more than all of it.
    // Over more than 20 s of simulated time (75 000 events at ~3660 per second).
    let s = scenario("v2", &["run.events=75000"]);
    let out = run(&s);
    let r = &out.report;
    assert!(r.duration_s >= 20.0, "{}", r.duration_s);
    let cap = payload_capacity(&s, 1_000_000_000);
    assert!(r.goodput_bps >= 0.95 * cap && r.goodput_bps <= cap, "{} of {cap}", r.goodput_bps);
    assert_eq!(r.events_built, 75000);
    // Tokens return in the order events finish; every worker's share is within 15 % of the mean.
    let f = r.farm.as_ref().unwrap();
    let w = &f.worker_bps;
    assert!(w.min >= 0.85 * w.mean && w.max <= 1.15 * w.mean, "{w:?}");
    assert_eq!(f.protocol_errors, 0);
    assert_eq!(f.peak_token_queue, 20, "all 20 initial tokens wait before the first event");
}

#[test]
fn version_3_pushes_without_tokens_at_the_same_link_rate() {
    let s = scenario("v3", &["run.events=8000"]);
    let r = run(&s).report;
    let cap = payload_capacity(&s, 1_000_000_000);
    assert!(r.goodput_bps >= 0.95 * cap, "{} of {cap}", r.goodput_bps);
    let f = r.farm.unwrap();
    assert_eq!((f.peak_token_queue, f.waited_for_token), (0, 0), "push has no tokens");
}

/// The workers' processing capacity (events/s) for the verdicts the seed draws on `events`.
fn processing_capacity(s: &Scenario, events: std::ops::Range<u64>) -> f64 {
    let f = s.farm.as_ref().unwrap();
    let n = (events.end - events.start) as f64;
    let total_ns: u64 = events
        .map(|e| if accepts(s.run.seed, EventId(e), f.accept_fraction) { f.accept_ns } else { f.reject_ns })
        .sum();
    f.workers as f64 * n / (total_ns as f64 / 1e9)
}

#[test]
fn tokens_keep_busy_workers_busy_where_round_robin_does_not() {
    // Processing-bound: 20 workers at a mean 38 ms per event process ~526 events/s (135 Mb/s
    // of payload); the SFC link carries 941 Mb/s and each worker link 94 Mb/s, 14 times a
    // worker's 6.7 Mb/s. With two tokens a worker has its next event in hand when it finishes
    // one, so it idles only when a token's round trip (the verdict, up to 64 kB at 100 Mb/s =
    // 5 ms, then 32 kB back = 2.6 ms) outlasts the event in hand (20 ms at least): never in
    // steady state. Round-robin sends the k-th event to the same worker whatever it is doing;
    // a worker stuck on a 200 ms accept with its connection full blocks the cycle while the
    // others idle.
    let s = scenario("bimodal", &["run.events=4000"]);
    let tokens = run(&s).report;
    let cap = processing_capacity(&s, 2000..6000);
    assert!(tokens.event_rate_hz >= 0.95 * cap, "tokens: {} of {cap} events/s", tokens.event_rate_hz);
    let f = tokens.farm.as_ref().unwrap();
    assert!(f.idle_fraction <= 0.05, "tokens: workers idle {}", f.idle_fraction);

    let rr = run(&scenario("bimodal", &["run.events=4000", "farm.dispatch=round_robin"])).report;
    assert!(
        rr.event_rate_hz <= 0.8 * tokens.event_rate_hz || rr.latency_ms.p99 >= 1.2 * tokens.latency_ms.p99,
        "round-robin {} events/s p99 {} ms vs tokens {} events/s p99 {} ms",
        rr.event_rate_hz,
        rr.latency_ms.p99,
        tokens.event_rate_hz,
        tokens.latency_ms.p99
    );
}

#[test]
fn a_fixed_rate_below_capacity_is_carried_and_above_it_the_queue_loses_what_it_cannot_hold() {
    // 1000 events/s of 32 kB = 256 Mb/s, a quarter of the SFC link: every event is carried
    // at the generator's rate and none waits for a token.
    let s = scenario("v1", &["run.events=3000", "farm.source_rate_hz=1000"]);
    let r = run(&s).report;
    assert!((r.event_rate_hz - 1000.0).abs() < 10.0, "{}", r.event_rate_hz);
    assert_eq!(r.events_not_built.lost, 0);
    // 10 000 events/s of 32 kB = 2.56 Gb/s, 2.7 times what the link carries: the queue fills
    // and about 1 - 941/2560 = 63 % of the events are lost, each counted.
    let s = scenario("v1", &["run.events=20000", "farm.source_rate_hz=10000", "run.warmup_events=0"]);
    let r = run(&s).report;
    let nb = &r.events_not_built;
    assert_eq!(r.events_built + nb.lost + nb.abandoned, 20_000, "nothing disappears");
    let lost = nb.lost as f64 / 20_000.0;
    assert!((0.55..0.70).contains(&lost), "lost {lost}");
}

#[test]
fn same_seed_same_report() {
    let s = scenario("bimodal", &["run.events=500"]);
    let (mut a, mut b) = (run(&s).report, run(&s).report);
    for r in [&mut a, &mut b] {
        r.wall_s = 0.0;
        r.sim_events_per_s = None;
    }
    assert_eq!(a, b);
}
