//! Physics tests of the TCP and network model: line-rate goodput, loss recovery, timeouts.

use daqnet_core::scenario::parse_str;
use daqnet_core::{NodeId, ReadoutId, Scenario};
use daqnet_sim::net::wire::max_goodput_bps;
use daqnet_sim::{simulate, DropRule, SimOptions, SimOutput};

/// One readout unit sending one message of `bytes` to one node per event, through one switch
/// with a 4 MB buffer; 1 Gb/s links; `extra` is more TOML for `[network.tcp]`.
fn one_flow(bytes: u64, events: u64, extra_tcp: &str, mtu: u32) -> Scenario {
    let text = format!(
        r#"
[system]
readout_units = 1
fragments_per_unit = 1
fragment_size = {{ law = "fixed", bytes = {bytes} }}
nodes = 1
pus_per_node = 1
credits_per_node = "unlimited"
processing_time_ns = 1000000
readout_service_ns = 0
readout_service_jitter_ns = 0
[system.supervisor]
rate_hz = "unbounded"
control_delay_ns = 0
[network]
topology = "star"
mtu_bytes = {mtu}
readout_link_bps = "1G"
node_link_bps = "1G"
link_delay_ns = 1000
host_delay_ns = 20000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = "4MB" }}
[network.tcp]
{extra_tcp}
[run]
events = {events}
warmup_events = 0
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}

fn run(s: &Scenario, drops: Vec<DropRule>) -> SimOutput {
    simulate(s, "test", SimOptions { drops, record_events: true, ..Default::default() })
}

fn latency_ms(out: &SimOutput, event: usize) -> f64 {
    out.events[event].latency_ms()
}

#[test]
fn one_flow_on_a_lossless_path_reaches_line_rate_goodput() {
    let bytes = 10_000_000u64;
    // MTU 1500: per-frame overheads cap goodput at 1448/1538 of line rate; reach 97% of that.
    let out = run(&one_flow(bytes, 3, "", 1500), vec![]);
    assert_eq!(out.report.switch.drops, 0);
    assert_eq!(out.report.tcp.retransmits, 0);
    let cap = max_goodput_bps(1_000_000_000, 1448);
    for e in 0..3 {
        let goodput = bytes as f64 * 8.0 / (latency_ms(&out, e) / 1e3);
        assert!(goodput >= 0.97 * cap, "event {e}: {goodput:.0} b/s < 97% of {cap:.0}");
        assert!(goodput <= cap, "event {e}: faster than the wire allows");
    }
    // Jumbo frames: overheads are under 1%, so goodput reaches 97% of the raw line rate.
    let out = run(&one_flow(bytes, 2, "", 9000), vec![]);
    let goodput = bytes as f64 * 8.0 / (latency_ms(&out, 0) / 1e3);
    assert!(goodput >= 0.97e9, "jumbo: {goodput:.0} b/s");
}

#[test]
fn a_single_drop_in_a_long_flow_is_repaired_by_fast_retransmit() {
    for sack in [true, false] {
        let s = one_flow(2_000_000, 2, &format!("sack = {sack}"), 1500);
        let clean = run(&s, vec![]);
        let out = run(&s, vec![DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment: 300 }]);
        let t = &out.report.tcp;
        assert_eq!(out.report.events_built, 2);
        assert_eq!(t.timeouts, 0, "sack={sack}: no timeout");
        assert_eq!(t.fast_recoveries, 1, "sack={sack}: one fast recovery");
        assert_eq!(t.retransmits, 1, "sack={sack}: exactly the lost segment is resent");
        let extra = latency_ms(&out, 0) - latency_ms(&clean, 0);
        assert!(extra < 3.0, "sack={sack}: recovery cost {extra:.3} ms, not an RTO");
    }
}

#[test]
fn newreno_repairs_several_drops_in_one_window_with_partial_acks() {
    let s = one_flow(2_000_000, 1, "sack = false", 1500);
    let drops = [300, 303, 306].map(|k| DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment: k }).to_vec();
    let out = run(&s, drops);
    assert_eq!(out.report.tcp.timeouts, 0);
    assert_eq!(out.report.tcp.fast_recoveries, 1, "one recovery episode handles all three holes");
    assert_eq!(out.report.tcp.retransmits, 3);
}

#[test]
fn losing_the_last_segment_of_a_message_costs_about_one_minimum_rto() {
    // Without tail-loss probes, (segments, expected extra ms): with an even number of segments
    // before the lost one the receiver ACKs at once and the timer fires one RTO (SRTT + 200 ms)
    // later; with an odd number the last ACK waits for the 40 ms delayed-ACK timer, and since
    // every ACK restarts the retransmission timer (RFC 6298 5.3, Linux tcp_rearm_rto) the
    // timeout comes 40 ms later; that delayed ACK is also an RTT sample, which lifts SRTT (and
    // the RTO) by about 5 ms.
    // With probes (the default), a single segment out is probed after 2·SRTT + 200 ms capped at
    // the RTO, so at the same moment; but while the delayed ACK is pending two segments are
    // out, and Linux probes after 2·SRTT + 2 ms.
    // Exact timers here (timer_hz = 0) keep that arithmetic exact; a kernel tick only adds to it
    // (at 250 Hz the timeout lands on the next 4 ms tick after the 200 ms: 200–208 ms).
    for (tlp, segments, hz, lo, hi) in [
        (false, 21u64, 0, 199.0, 202.0),
        (false, 20, 0, 239.0, 247.0),
        (true, 21, 0, 199.0, 202.0),
        (true, 20, 0, 2.0, 3.0),
        (false, 21, 250, 200.0, 208.0),
        (true, 20, 250, 4.0, 8.5),
    ] {
        let s = one_flow(segments * 1448, 2, &format!("tail_loss_probe = {tlp}\ntimer_hz = {hz}"), 1500);
        let clean = run(&s, vec![]);
        let out = run(&s, vec![DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment: segments - 1 }]);
        let t = &out.report.tcp;
        let what = format!("{segments} segments, tlp={tlp}, {hz} Hz");
        assert_eq!((t.timeouts, t.loss_probes), if tlp { (0, 1) } else { (1, 0) }, "{what}");
        assert_eq!(t.retransmits, 1, "{what}");
        let extra = latency_ms(&out, 0) - latency_ms(&clean, 0);
        assert!((lo..=hi).contains(&extra), "{what}: tail loss cost {extra:.3} ms");
        // The next message on the connection is not delayed by a second timeout.
        assert!(latency_ms(&out, 1) < 3.0 * latency_ms(&clean, 1), "{what}");
    }
}

#[test]
fn a_tail_loss_probe_repairs_a_lost_tail_of_several_segments_in_a_few_rtts() {
    // The last three segments of a 100-segment message are lost. Without a probe only the
    // retransmission timer can repair them (≥ 200 ms); with one, the probe (the last segment
    // again, 2·SRTT + 2 ms after the last ACK) is SACKed, RACK marks the two before it lost, and
    // fast recovery resends them (Linux, RFC 8985).
    for tlp in [false, true] {
        let s = one_flow(100 * 1448, 1, &format!("tail_loss_probe = {tlp}"), 1500);
        let clean = run(&s, vec![]);
        let drops = [97, 98, 99].map(|k| DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment: k }).to_vec();
        let out = run(&s, drops);
        let t = &out.report.tcp;
        let extra = latency_ms(&out, 0) - latency_ms(&clean, 0);
        if tlp {
            assert_eq!((t.timeouts, t.loss_probes, t.fast_recoveries, t.retransmits), (0, 1, 1, 3), "{t:?}");
            assert!(extra < 10.0, "probe and recovery cost {extra:.3} ms");
        } else {
            assert_eq!((t.timeouts, t.loss_probes), (1, 0), "{t:?}");
            assert!(extra >= 199.0, "a timeout: {extra:.3} ms");
        }
    }
}

#[test]
fn delayed_acks_never_fire_a_timeout_on_a_lossless_path() {
    // Messages of an odd number of full segments end without a short segment, so their last
    // ACK is delayed; with a 5 ms minimum RTO this is where a spurious timeout would come from.
    for bytes in [1448u64, 3 * 1448, 7 * 1448, 1000, 64 * 1024] {
        let s = one_flow(bytes, 100, "min_rto_ns = 5000000", 1500);
        let out = run(&s, vec![]);
        assert_eq!(out.report.tcp.timeouts, 0, "{bytes} B messages");
        assert_eq!(out.report.tcp.retransmits, 0, "{bytes} B messages");
    }
}

#[test]
fn window_state_persists_across_events_on_a_connection() {
    // After an RTO the window restarts at 1 segment; the next message on the same connection
    // starts from the reduced window, so it takes longer than on a fresh connection.
    let s = one_flow(100 * 1448, 2, "tail_loss_probe = false", 1500);
    let clean = run(&s, vec![]);
    let out = run(&s, vec![DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment: 99 }]);
    assert_eq!(out.report.tcp.timeouts, 1);
    assert!(latency_ms(&out, 1) > latency_ms(&clean, 1) + 0.05, "second message should feel the smaller window");
}

#[test]
fn a_fragment_from_the_collectors_own_host_crosses_no_link() {
    // Claim: with the readout units on the nodes' hosts, a collector's request to its own
    // host's readout unit and the fragment back cross no link. One host alone builds every
    // event with no frame on the network, each in the readout unit's service time (1 ms) plus
    // the processing (1 ms) it waits behind, no more. With two hosts every event has one
    // fragment from the collecting host and one from the other: the links into the hosts carry
    // the remote ones — events × ⌈1 MB / 1448⌉ data segments — and the ACKs of the data the
    // hosts send (one per two segments at most, delayed ACKs): at most 3/2 of the data
    // segments and a few requests, where the local fragments would double it.
    let s = one_flow(1_000_000, 20, "", 1500);
    let colocated = |hosts: u32| {
        let sets = [
            format!("system.readout_units={hosts}"),
            format!("system.nodes={hosts}"),
            "system.readout_on_nodes=true".into(),
            "system.readout_service_ns=1ms".into(),
        ];
        let text = s.to_toml();
        simulate(
            &parse_str(&text, "test", &sets).unwrap(),
            "test",
            SimOptions { record_events: true, ..Default::default() },
        )
    };
    let alone = colocated(1);
    assert_eq!(alone.report.events_built, 20);
    assert_eq!(alone.report.sim_work.as_ref().unwrap().packets, 0, "nothing on the network");
    for e in alone.events.iter().filter(|e| e.measured) {
        assert!((1.0..=2.0 + 1e-6).contains(&e.latency_ms()), "{} ms", e.latency_ms());
    }
    let pair = colocated(2);
    assert_eq!(pair.report.events_built, 20);
    let events = 20 + s.run.warmup_events;
    let into_hosts: u64 =
        pair.report.switch.ports.iter().filter(|p| p.name.starts_with("sw->node")).map(|p| p.frames).sum();
    let data = events * 1_000_000_u64.div_ceil(1448);
    assert!(
        into_hosts >= data && into_hosts <= data * 3 / 2 + 10 * events,
        "{into_hosts} frames, {data} data segments"
    );
}
