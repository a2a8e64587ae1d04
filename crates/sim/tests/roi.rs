//! Iterative region-of-interest collection ([ATLAS-DC] §2, §5.2): a processing unit collects an
//! event in steps, processing between them, and may reject it after any step.

use daqnet_core::scenario::parse_str;
use daqnet_core::Scenario;
use daqnet_sim::net::wire::max_goodput_bps;
use daqnet_sim::{simulate, SimOptions, SimOutput};

/// One processing unit collecting 100 kB from each of 8 readout units through one switch with
/// a 4 MB buffer, 1 Gb/s links, in a first step asking a quarter of the units (then 2 ms of
/// processing, rejecting `reject` of the events) and a last step asking the rest.
fn two_steps(reject: f64, events: u64) -> Scenario {
    let text = format!(
        r#"
[system]
readout_units = 8
fragments_per_unit = 1
fragment_size = {{ law = "fixed", bytes = 100000 }}
nodes = 1
pus_per_node = 1
credits_per_node = "unlimited"
processing_time_ns = "1ms"
readout_service_ns = 0
readout_service_jitter_ns = 0
[[system.roi_step]]
collect_fraction = 0.25
processing_time_ns = "2ms"
reject_fraction = {reject}
[system.supervisor]
rate_hz = "unbounded"
control_delay_ns = 0
[network]
topology = "star"
readout_link_bps = "1G"
node_link_bps = "1G"
link_delay_ns = 1000
host_delay_ns = 20000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = "4MB" }}
[run]
events = {events}
warmup_events = 0
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}

fn run(s: &Scenario) -> SimOutput {
    simulate(s, "test", SimOptions { record_events: true, ..Default::default() })
}

/// No step can collect faster than the node's link carries its bytes, and on an idle network
/// none takes much longer: the event's latency is the two steps' wire time (800 kB at the
/// 1 Gb/s goodput of 1448-byte segments, 6.81 ms) plus each step's slow start and round trips
/// (under 0.5 ms each here); the 2 ms of processing between the steps is not latency, so the
/// event's span (first request to last fragment) exceeds its latency by exactly that.
#[test]
fn an_event_in_two_steps_waits_for_its_bytes_on_the_wire_and_not_for_its_processing() {
    let out = run(&two_steps(0.0, 20));
    assert_eq!((out.report.events_built, out.report.tcp.timeouts), (20, 0));
    let wire_ms = 800e3 * 8.0 / max_goodput_bps(1_000_000_000, 1448) * 1e3;
    for e in &out.events {
        assert_eq!(e.bytes, 800_000, "every unit once: {e:?}");
        assert_eq!(e.done_ns - e.start_ns - e.latency_ns, 2_000_000, "the processing between the steps: {e:?}");
        let l = e.latency_ms();
        assert!(
            l >= wire_ms && l <= wire_ms + 2.0 * 0.5,
            "event {}: {l:.3} ms against {wire_ms:.3} ms on the wire",
            e.event
        );
    }
}

/// A step that rejects half the events ends their collection: those events carry the first
/// step's 200 kB and take the 2 ms of its processing only, the others all 800 kB. Of 400
/// events, 200 ± 40 (4 binomial standard deviations) are rejected.
#[test]
fn a_rejected_event_is_collected_only_up_to_the_step_that_rejects_it() {
    let out = run(&two_steps(0.5, 400));
    assert_eq!(out.report.events_built, 400);
    let rejected: Vec<_> = out.events.iter().filter(|e| e.bytes == 200_000).collect();
    assert!((rejected.len() as f64 - 200.0).abs() <= 40.0, "{} of 400 rejected", rejected.len());
    assert!(out.events.iter().all(|e| e.bytes == 200_000 || e.bytes == 800_000));
    for e in rejected {
        assert_eq!(e.latency_ns, e.done_ns - e.start_ns, "one step: no processing between steps");
    }
    let bytes: u64 = out.events.iter().map(|e| e.bytes).sum();
    let goodput = bytes as f64 * 8.0 / out.report.duration_s;
    assert!((goodput - out.report.goodput_bps).abs() <= 1e-6 * goodput, "the report counts every step's bytes");
}

/// A first step asking every unit leaves the last step nothing to ask: the event is built when
/// the first step's processing ends, having waited only for the first step's data.
#[test]
fn a_first_step_asking_every_unit_leaves_the_last_step_nothing_to_collect() {
    let mut s = two_steps(0.0, 10);
    s.system.roi_steps[0].collect_fraction = 1.0;
    let out = run(&s);
    for e in &out.events {
        assert_eq!(e.bytes, 800_000);
        assert_eq!(e.done_ns - e.start_ns - e.latency_ns, 2_000_000, "{e:?}");
    }
}
