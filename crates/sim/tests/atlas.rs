//! The ATLAS 2015 set-up of [ATLAS-DC] §4.1 (scenarios/atlas-2015): what the model reproduces.
//! Reduced run lengths keep this test short; `docs/sim.md` has the full sweep.

use daqnet_core::report::RunReport;
use daqnet_core::scenario::load;
use daqnet_sim::net::wire::{frame_bytes, serialization_ps, wire_bytes};
use daqnet_sim::{simulate, SimOptions};
use std::path::Path;

fn atlas(switch: &str, credits: u32) -> RunReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/atlas-2015/{switch}.toml"));
    let sets = [format!("system.credits_per_node={credits}"), "run.events=500".into(), "run.warmup_events=200".into()];
    let s = load(&path, &sets).unwrap();
    simulate(&s, switch, SimOptions::default()).report
}

/// Time to put one full event (160 responses of 12 × 1100 bytes) on a GbE link, in ms.
fn event_serialization_ms() -> f64 {
    let response = 12 * 1100u32;
    let full = response / 1448;
    let last = response - full * 1448;
    let wire = full * wire_bytes(frame_bytes(1448, 0)) + wire_bytes(frame_bytes(last, 0));
    160.0 * serialization_ps(wire, 1_000_000_000) as f64 / 1e9
}

#[test]
fn switch1_shaping_region_floor_and_incast() {
    let floor = event_serialization_ms();
    assert!((17.5..18.5).contains(&floor), "≈ 18 ms ([ATLAS-DC] §4.2): {floor}");
    let shaped: Vec<RunReport> = [240, 480].iter().map(|&c| atlas("switch1", c)).collect();
    for r in &shaped {
        assert_eq!(r.switch.drops, 0);
        assert!(r.latency_ms.p1 >= floor, "no event faster than one event's serialization time");
        assert!(r.latency_ms.mean < 25.0, "shaped region mean {}", r.latency_ms.mean);
        // The measured window spans 500 assignment intervals plus one collection, so a sustained
        // 750 Hz shows as 500 / (500 / 750 Hz + ~20 ms) ≈ 728 Hz.
        let sustained = 500.0 / (500.0 / 750.0 + r.latency_ms.mean / 1e3);
        assert!((r.event_rate_hz - sustained).abs() < 0.02 * sustained, "rate {} vs {sustained}", r.event_rate_hz);
    }
    let best = shaped.iter().map(|r| r.latency_ms.mean).fold(f64::MAX, f64::min);
    let incast = atlas("switch1", 2400);
    assert!(incast.latency_ms.mean >= 200.0 && incast.latency_ms.mean >= 3.0 * best, "{}", incast.latency_ms.mean);
    assert!(incast.latency_ms.share_ge_100ms > 0.9, "almost every event suffers a timeout ([ATLAS-DC] Fig. 10b)");
    assert!(incast.tcp.timeouts > 0);
    let peak = incast.switch.ports.iter().filter(|p| p.name.starts_with("rack0->node")).map(|p| p.peak_bytes).max();
    assert!(peak.unwrap() <= 600_000, "drops happen at the 600 kB node ports");
}

#[test]
fn switch2_onset_comes_later_than_switch1() {
    let s1 = atlas("switch1", 800);
    let s2 = atlas("switch2", 800);
    assert!(
        s1.latency_ms.mean > 3.0 * s2.latency_ms.mean,
        "switch 1 {} vs switch 2 {}",
        s1.latency_ms.mean,
        s2.latency_ms.mean
    );
    assert!(s2.latency_ms.mean < 30.0, "switch 2 still shaped at 800 credits: {}", s2.latency_ms.mean);
    assert!(atlas("switch2", 2400).latency_ms.mean >= 200.0, "but it too collapses at 2400 credits");
}
