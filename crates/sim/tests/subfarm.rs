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

/// Simulates the event builder in front of the sub-farm (`builder.toml` with `sets`) and writes
/// its per-event output where `fed.toml` can read it; returns node 0's (built at, bytes), in
/// the order they were built, and the path.
fn builder_output(name: &str, sets: &[&str]) -> (Vec<(u64, u64)>, std::path::PathBuf) {
    let out = run(&scenario("builder", sets));
    let dir = std::env::temp_dir().join(format!("daqnet-subfarm-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.csv");
    std::fs::write(&path, daqnet_core::report::EventRecord::to_csv(&out.events)).unwrap();
    let mut built: Vec<(u64, u64)> = out.events.iter().filter(|e| e.node == 0).map(|e| (e.done_ns, e.bytes)).collect();
    built.sort_unstable();
    (built, path)
}

#[test]
fn an_sfc_fed_by_the_event_builder_receives_each_event_when_and_as_the_builder_built_it() {
    // The builder makes 32 kB events at 2,800/s (717 Mb/s, below the SFC link's 941): nothing
    // queues long enough to be lost, so every event the builder built at node 0 reaches the
    // SFC's event queue at the very nanosecond it was built, with its size, in that order.
    let (built, path) = builder_output("exact", &["run.events=3000", "run.warmup_events=1000"]);
    assert_eq!(built.len(), 4000);
    let events = format!("farm.from_builder.events={}", path.display());
    let s = scenario("fed", &[&events, "run.events=3000", "run.warmup_events=1000"]);
    let out = run(&s);
    assert_eq!((out.report.events_built, out.report.events_not_built.lost), (3000, 0));
    assert_eq!(out.events.len(), 4000);
    for (k, e) in out.events.iter().enumerate() {
        assert_eq!((e.event, e.assigned_ns, e.bytes), (k as u64, built[k].0, built[k].1), "event {k}");
    }
    // The SFC forwards at the builder's rate, 2,800 events/s: its measured window (1.07 s)
    // only gains the last event's dispatch (32 kB at 100 Mb/s, 2.9 ms), under 0.5 %.
    let rate = out.report.event_rate_hz;
    assert!((2800.0 * 0.995..=2800.0 * 1.001).contains(&rate), "{rate}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn incast_in_the_event_builder_reaches_the_sub_farm_as_bursts() {
    // With 26 kB of port buffer the 32 fragments of an event (32 kB) overflow the SFC's switch
    // port: some fragments wait for a retransmission timeout (≥ 200 ms), and the events behind
    // them are built together when it fires. Arriving at the 2,800/s the builder was asked for,
    // an event finds one of the 20 tokens free (a worker takes 2.7 ms for 32 kB at 100 Mb/s,
    // so the 20 return one every 136 µs, 2.6 times as often as events come) and never waits.
    // A burst brings more events at once than tokens are free: they wait in the queue.
    let (regular, path) = builder_output("regular", &["run.events=2000", "run.warmup_events=500"]);
    let events = format!("farm.from_builder.events={}", path.display());
    let fed = |events: &str| run(&scenario("fed", &[events, "run.events=2000", "run.warmup_events=500"])).report;
    let calm = fed(&events);
    let f = calm.farm.as_ref().unwrap();
    assert_eq!((f.peak_event_queue, f.waited_for_token), (1, 0), "{} regular arrivals", regular.len());

    let sets = ["run.events=2000", "run.warmup_events=500", "network.switch.buffer.port_bytes=26kB"];
    let (bursty, path2) = builder_output("bursty", &sets);
    let gaps = bursty.windows(2).filter(|w| w[1].0 - w[0].0 >= 200_000_000).count();
    assert!(gaps >= 1, "the builder stalls on a retransmission timeout");
    let r = fed(&format!("farm.from_builder.events={}", path2.display()));
    let f = r.farm.as_ref().unwrap();
    assert!(f.peak_event_queue >= 2 && f.waited_for_token > 0, "{f:?}");
    let nb = &r.events_not_built;
    assert_eq!(r.events_built + nb.lost + nb.abandoned, 2000, "nothing disappears");
    for p in [path, path2] {
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }
}
