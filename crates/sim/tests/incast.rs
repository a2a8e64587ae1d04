//! The incast microbenchmark (scenarios/incast-micro.toml): 32 readout units × 64 KiB → one
//! collector behind a 1 Gb/s switch port.

use daqnet_core::report::RunReport;
use daqnet_core::scenario::load;
use daqnet_sim::{simulate, SimOptions, SimOutput};
use std::path::Path;

fn incast(sets: &[&str]) -> SimOutput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast-micro.toml");
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push("run.events=60".into());
    let s = load(&path, &sets).unwrap();
    simulate(&s, "incast-micro", SimOptions { record_events: true, ..Default::default() })
}

fn rounds_ms(out: &SimOutput) -> Vec<f64> {
    out.events.iter().filter(|e| e.measured).map(|e| e.latency_ms()).collect()
}

fn check_counts(r: &RunReport) {
    assert_eq!(r.events_built, 60);
    assert_eq!(r.events_not_built.abandoned, 0);
}

#[test]
fn deep_buffer_every_round_near_ideal_without_drops() {
    let out = incast(&["network.switch.buffer.port_bytes=4MB"]);
    check_counts(&out.report);
    assert_eq!(out.report.switch.drops, 0);
    assert_eq!(out.report.tcp.retransmits, 0);
    for r in rounds_ms(&out) {
        assert!((17.0..=19.0).contains(&r), "round took {r:.3} ms (ideal 16.8 ms of payload)");
    }
}

#[test]
fn shallow_buffer_rounds_hit_the_200ms_timeout() {
    for buffer in ["100kB", "150kB", "200kB"] {
        let out = incast(&[&format!("network.switch.buffer.port_bytes={buffer}")]);
        check_counts(&out.report);
        assert!(out.report.switch.drops > 0, "{buffer}");
        assert!(out.report.tcp.timeouts > 0, "{buffer}");
        let slow = rounds_ms(&out).iter().filter(|&&r| r >= 200.0).count();
        assert!(slow > 0, "{buffer}: no round hit a 200 ms timeout");
    }
}

#[test]
fn a_5ms_minimum_rto_keeps_every_round_under_60ms() {
    for buffer in ["100kB", "150kB", "200kB"] {
        let out = incast(&[&format!("network.switch.buffer.port_bytes={buffer}"), "network.tcp.min_rto_ns=5000000"]);
        check_counts(&out.report);
        assert!(out.report.tcp.timeouts > 0, "{buffer}: still incast, but cheap");
        let worst = rounds_ms(&out).into_iter().fold(0.0, f64::max);
        assert!(worst <= 60.0, "{buffer}: worst round {worst:.3} ms");
    }
}
