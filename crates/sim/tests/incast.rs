//! The incast microbenchmark (scenarios/incast-micro.toml): 32 readout units × 64 KiB → one
//! collector behind a 1 Gb/s switch port.

use daqnet_core::report::RunReport;
use daqnet_core::scenario::load;
use daqnet_core::trace::{PortSample, TcpSample, TraceSink, TraceSpec};
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

/// The TCP samples of a traced run.
#[derive(Default)]
struct Windows(Vec<TcpSample>);

impl TraceSink for Windows {
    fn names(&mut self, _: &[String], _: &[String]) {}
    fn batch(&mut self, _: &[PortSample], tcp: &[TcpSample]) {
        self.0.extend_from_slice(tcp);
    }
}

#[test]
fn cubic_leaves_slow_start_before_any_loss_when_the_shared_queue_raises_the_rtt() {
    // Linux CUBIC's HyStart (hystart_update): 32 senders share the collector's 100 Mb/s port,
    // so a round's RTT rises with the queue (up to 32 × 64 KiB / 100 Mb/s = 168 ms) far past
    // the lowest RTT + 4 ms. Every sender ends slow start without a loss, at a window of at
    // least 16 segments (HyStart acts from there); then the window grows only while it limits
    // the sender: from 46 (the fragment's segments) to 47, and once more because Linux keeps a
    // window counted as limiting until the flight sent under it is acknowledged
    // (`cwnd_usage_seq`), so never beyond 48. Without HyStart slow start went on while the
    // window was below twice the flight (`tcp_is_cwnd_limited`): to 92.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast-micro.toml");
    let sets = [
        "network.tcp.congestion_control=cubic",
        "network.readout_link_bps=100M",
        "network.node_link_bps=100M",
        "network.switch.buffer.port_bytes=4MB",
        "run.events=20",
    ];
    let s = load(&path, &sets.map(String::from)).unwrap();
    let mut sink = Windows::default();
    let spec: TraceSpec = "cwnd=ru*->node0,every=1ms".parse().unwrap();
    let out = simulate(&s, "incast-micro", SimOptions { trace: Some((spec, &mut sink)), ..Default::default() });
    assert_eq!((out.report.switch.drops, out.report.tcp.retransmits), (0, 0), "a lossless run");
    let mut senders = std::collections::BTreeMap::<u32, Vec<&TcpSample>>::new();
    for w in &sink.0 {
        senders.entry(w.sender).or_default().push(w);
    }
    assert_eq!(senders.len(), 32);
    for (sender, w) in senders {
        let ssthresh =
            w.iter().find_map(|w| w.ssthresh).unwrap_or_else(|| panic!("sender {sender} never left slow start"));
        assert!((16..=46).contains(&ssthresh), "sender {sender} left slow start at {ssthresh}");
        let peak = w.iter().map(|w| w.cwnd).max().unwrap();
        assert!(peak <= 48, "sender {sender}'s window reached {peak}");
        assert!(w.iter().all(|w| w.state == "open"));
    }
}
