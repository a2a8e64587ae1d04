//! Physics tests of ECN marking and DCTCP: what a step threshold K does to an incast.

use daqnet_core::scenario::parse_str;
use daqnet_core::Scenario;
use daqnet_sim::net::wire::{frame_bytes, serialization_ps, wire_bytes};
use daqnet_sim::{simulate, SimOptions};

/// Readout units each sending a 64 KiB fragment to one collector at once, in a closed loop
/// (1 ms between rounds), through one switch whose port towards the collector holds `buffer`
/// bytes; 1 Gb/s links; every connection starts with a window of 2 segments. `tcp` and `ecn`
/// are more TOML for `[network.tcp]` and the whole `[network.ecn]` line.
fn incast(n: u32, buffer: u64, tcp: &str, ecn: &str) -> Scenario {
    let text = format!(
        r#"
[system]
readout_units = {n}
fragments_per_unit = 1
fragment_size = {{ law = "fixed", bytes = "64KiB" }}
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
readout_link_bps = "1G"
node_link_bps = "1G"
link_delay_ns = 500
host_delay_ns = 20000
{ecn}
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = {buffer} }}
[network.tcp]
initial_cwnd_segments = {W0}
{tcp}
[run]
events = 100
warmup_events = 5
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}

const W0: u64 = 2;
const RATE: u64 = 1_000_000_000;

/// The port towards the collector: (peak bytes, drops, marks).
fn collector_port(s: &Scenario) -> (u64, u64, u64, daqnet_core::report::RunReport) {
    let out = simulate(s, "test", SimOptions::default());
    let p = out.report.switch.ports.iter().find(|p| p.name == "sw->node0").expect("the collector's port").clone();
    (p.peak_bytes, p.drops, p.marks, out.report)
}

/// Bytes the bottleneck sends in one unloaded round trip of a full segment and its ACK: two
/// hops each way (serialization, 500 ns of cable each), the host latency at both ends.
fn bdp_bytes() -> u64 {
    let hop = |frame: u32| serialization_ps(wire_bytes(frame), RATE) / 1000 + 500;
    let rtt_ns = 2 * hop(frame_bytes(1448, 0)) + 2 * hop(frame_bytes(0, 0)) + 2 * 20_000;
    RATE * rtt_ns / 8 / 1_000_000_000
}

/// With a step at K, the queue of an incast of N senders stays below
///   B = 2·max(K, N·W0·f) + BDP + N·f   (f: a full frame)
/// Marks start once the queue exceeds K — or at once, if the first windows (N·W0 frames)
/// already do. A sender learns of its mark one round trip later; until then, in slow start,
/// what it has in flight (queue and pipe) at most doubles, and after that, in congestion
/// avoidance, it grows by at most one segment per round trip before the next mark reaches it.
/// Below a buffer of B, no frame can be dropped, while CUBIC (no ECN) fills it and times out.
#[test]
fn dctcp_holds_an_incast_without_drops_where_cubic_times_out_and_its_queue_within_the_bound_of_k() {
    let (n, k, buffer) = (32u64, 15_000u64, 300_000u64);
    let f = frame_bytes(1448, 0) as u64;
    let bound = 2 * k.max(n * W0 * f) + bdp_bytes() + n * f;
    assert!(bound < buffer, "the test needs the bound ({bound}) inside the buffer");
    let step = format!(r#"ecn = {{ marking = "step", threshold_bytes = {k} }}"#);
    let (peak, drops, _, cubic) = collector_port(&incast(n as u32, buffer, r#"congestion_control = "cubic""#, ""));
    assert!(cubic.tcp.timeouts > 0 && drops > 0, "CUBIC without ECN: {drops} drops, {} timeouts", cubic.tcp.timeouts);
    assert!(peak > buffer - f, "CUBIC fills the buffer to within a frame: {peak}");
    let (peak, drops, marks, dctcp) =
        collector_port(&incast(n as u32, buffer, r#"congestion_control = "dctcp""#, &step));
    assert_eq!((drops, dctcp.tcp.timeouts, dctcp.tcp.retransmits), (0, 0, 0));
    assert!(peak <= bound, "peak {peak} B above the bound {bound} B");
    assert!(marks > 0 && dctcp.tcp.delivered_ce > 0 && dctcp.tcp.ecn_reductions > 0);
    assert_eq!(dctcp.tcp.ce_received, marks, "no marked frame was lost on its way");
    assert!(dctcp.latency_ms.p99 < 20.0, "every round near its ideal 16.8 ms: {}", dctcp.latency_ms.p99);
}

/// The bound holds over the range of K and N: tight where slow start doubles the queue from K
/// (few senders, large K), loose where the senders' floor of two segments each sets it.
#[test]
fn the_queue_bound_of_a_step_holds_for_every_k_and_number_of_senders() {
    let f = frame_bytes(1448, 0) as u64;
    for n in [8u64, 16, 32] {
        for k in [15_000u64, 60_000, 120_000] {
            let step = format!(r#"ecn = {{ marking = "step", threshold_bytes = {k} }}"#);
            let (peak, drops, marks, _) =
                collector_port(&incast(n as u32, 4_000_000, r#"congestion_control = "dctcp""#, &step));
            let bound = 2 * k.max(n * W0 * f) + bdp_bytes() + n * f;
            assert!(peak <= bound, "N = {n}, K = {k}: peak {peak} B above {bound} B");
            assert!(peak > k, "N = {n}, K = {k}: the queue reaches K, or nothing would be marked");
            assert!(drops == 0 && marks > 0);
        }
    }
}

/// Marking acts on ECN-capable frames only: with senders that do not negotiate ECN, a port that
/// marks behaves exactly like one that does not.
#[test]
fn a_marking_port_leaves_frames_that_are_not_ecn_capable_alone() {
    let step = r#"ecn = { marking = "step", threshold_bytes = 15000 }"#;
    let (.., with) = collector_port(&incast(32, 300_000, r#"congestion_control = "cubic""#, step));
    let (.., without) = collector_port(&incast(32, 300_000, r#"congestion_control = "cubic""#, ""));
    assert_eq!(with.switch.marks, 0);
    assert_eq!((with.tcp, with.switch, with.latency_ms), (without.tcp, without.switch, without.latency_ms));
}

/// Classic ECN (RFC 3168) with CUBIC: the same marks keep the same incast from dropping, as each
/// echo shrinks the window once per window of data.
#[test]
fn classic_ecn_with_cubic_turns_drops_into_marks() {
    let step = r#"ecn = { marking = "step", threshold_bytes = 15000 }"#;
    let (_, drops, marks, r) = collector_port(&incast(32, 300_000, "congestion_control = \"cubic\"\necn = true", step));
    assert_eq!((drops, r.tcp.timeouts), (0, 0));
    assert!(marks > 0 && r.tcp.ecn_reductions > 0);
    assert!(r.tcp.delivered_ce >= marks, "the echo holds until CWR, so it covers unmarked segments too");
    assert_eq!(r.dctcp_alpha, None);
}
