//! Physics tests of link-level flow control (`[network.flow_control]`): headroom, pauses that
//! spread hop by hop, and the victims of a slow receiver.

use daqnet_core::report::RunReport;
use daqnet_core::scenario::flow::headroom_bytes;
use daqnet_core::scenario::parse_str;
use daqnet_core::Scenario;
use daqnet_sim::{simulate, SimOptions, SimOutput};

use crate::common;
use common::{collectors, credit_link};

/// [LOSSLESS] §IV's all-to-all incast, scaled: 8 readout units and 4 collector hosts (2
/// collectors each, 128 KiB fragments, no processing) on one 10 Gb/s switch whose ports hold
/// `buffer`; 2 µs of cable per link; a fixed window of 64 segments (congestion control off, as
/// in the paper's pause-frame runs); pause frames on every link.
fn all_to_all(buffer: &str) -> Scenario {
    let system = collectors(8, "128KiB", 4, 2);
    let text = format!(
        r#"
{system}
[network]
topology = "star"
readout_link_bps = "10G"
node_link_bps = "10G"
link_delay_ns = 2000
host_delay_ns = 10000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = "{buffer}" }}
[network.flow_control]
mode = "pause"
[network.tcp]
congestion_control = "static"
static_cwnd_segments = 64
[run]
events = 100
warmup_events = 10
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}

fn run(s: &Scenario) -> SimOutput {
    simulate(s, "test", SimOptions { record_events: true, ..Default::default() })
}

/// Events built and not built add up to what the run asked for.
fn accounted(r: &RunReport, asked: u64) {
    let n = &r.events_not_built;
    assert_eq!(r.events_built + n.timed_out + n.lost + n.abandoned, asked);
}

#[test]
fn with_the_derived_headroom_no_frame_is_dropped_at_any_buffer() {
    // Claim: after a receiver decides to pause a link, at most 2 × cable × rate + 3 frames +
    // the pause frame more arrive (`headroom_bytes`); a buffer that keeps that much above
    // XOFF never drops, however small XOFF is. 10 Gb/s, 2 µs: 5000 + 3 × 1538 + 84 = 9698
    // bytes; the smallest buffer validation accepts holds that and a frame below XOFF.
    let derived = headroom_bytes(10_000_000_000, 2000, 1538);
    assert_eq!(derived, 9698);
    for buffer in ["11.3kB", "20kB", "60kB", "200kB", "1MB"] {
        let out = run(&all_to_all(buffer));
        let r = &out.report;
        accounted(r, 100);
        assert_eq!(r.switch.drops, 0, "{buffer}: no drop with the derived headroom");
        assert_eq!((r.tcp.timeouts, r.tcp.fast_recoveries), (0, 0), "{buffer}: no loss, no recovery");
        assert_eq!(r.events_built, 100);
        let f = r.flow_control.as_ref().expect("a flow-control section");
        if buffer != "1MB" {
            // Below the 8 × 64-segment windows a collector port can be offered, the switch
            // has to pause the readout units.
            assert!(f.pause_frames > 0 && f.host_paused_ns > 0, "{buffer}: {f:?}");
        }
    }
}

#[test]
fn with_headroom_below_the_derived_value_drops_appear_and_are_counted() {
    // Claim: the headroom is needed. With one frame of it (a fifth of the 9698 bytes derived)
    // the frames in flight when a pause is decided overflow the receiver, and each dropped
    // frame is counted at the port whose buffer it did not fit; TCP repairs them.
    let mut s = all_to_all("20kB");
    s.network.flow_control.as_mut().unwrap().headroom_bytes = Some(1538);
    let out = run(&s);
    let r = &out.report;
    accounted(r, 100);
    assert!(r.switch.drops > 0, "drops with a short headroom");
    assert_eq!(r.switch.drops, r.switch.ports.iter().map(|p| p.drops).sum::<u64>());
    // Every drop is at a port facing a readout unit (the senders' links), none at a
    // collector's port: the memory is counted by the link a frame came in through.
    assert!(r.switch.ports.iter().filter(|p| p.name.starts_with("sw->node")).all(|p| p.drops == 0));
    // Nearly every drop is a data frame TCP sends again (52,141 retransmissions for 52,143
    // drops); every event is built.
    assert!(r.tcp.retransmits as f64 >= 0.99 * r.switch.drops as f64, "{} drops, {:?}", r.switch.drops, r.tcp);
    assert_eq!(r.events_built, 100);
}

/// [`all_to_all`] on two tiers with one slow collector: 8 readout units on one readout switch
/// (40 Gb/s uplink), two collectors each on its own rack switch (40 Gb/s uplinks), one core;
/// every switch port holds 100 kB; collector `node0` is an edge host whose bus takes 2.5 Gb/s
/// of its 10 Gb/s link into a 64 kB NIC buffer (unless `slow` is false). One processing unit
/// per collector, 64 KiB fragments, fixed windows larger than a fragment.
fn slow_collector(slow: bool) -> Scenario {
    let edge_hosts = if slow { "node0" } else { "ru0" };
    let system = collectors(8, "64KiB", 2, 1);
    let text = format!(
        r#"
{system}
[network]
topology = "two_tier"
readout_link_bps = "10G"
node_link_bps = "10G"
link_delay_ns = 1000
host_delay_ns = 10000
edge = {{ bus_bps = "2.5G", nic_buffer_bytes = "64kB", hosts = ["{edge_hosts}"] }}
[network.readout_switch]
hosts = 8
uplink_bps = "40G"
buffer = {{ scheme = "dedicated", port_bytes = "100kB" }}
[network.rack_switch]
hosts = 1
uplink_bps = "40G"
buffer = {{ scheme = "dedicated", port_bytes = "100kB" }}
[network.core]
routers = 1
buffer = {{ scheme = "dedicated", port_bytes = "100kB" }}
[network.flow_control]
mode = "pause"
[network.tcp]
congestion_control = "static"
static_cwnd_segments = 64
[run]
events = 400
warmup_events = 20
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}

/// Measured events built by each collector.
fn built_by_node(out: &SimOutput) -> [u64; 2] {
    let mut n = [0; 2];
    for e in out.events.iter().filter(|e| e.measured) {
        n[e.node as usize] += 1;
    }
    n
}

fn paused_ns(r: &RunReport, port: &str) -> u64 {
    r.switch.ports.iter().find(|p| p.name == port).map_or(0, |p| p.paused_ns)
}

#[test]
fn a_slow_collector_pauses_upstream_hop_by_hop_and_slows_a_victim_on_another_rack() {
    // Claim: node0's NIC, filling at 10 Gb/s and draining at 2.5, pauses its rack switch's port;
    // the rack switch's memory for its uplink fills with node0's frames and pauses the core's
    // port; the core's memory for the readout switch's uplink fills and pauses it; the readout
    // switch pauses the readout units. node1, alone on another rack whose links are free,
    // is the victim: its fragments wait behind node0's in the readout units' NICs and the
    // readout switch's uplink, which are one FIFO each.
    //
    // Bound: readout units answer requests in order, so node1's event requested while node0's
    // is in flight completes only once node0's fragments have entered the core; node1's
    // following events pass freely while node0's tail drains from the core and its rack —
    // at most the core's and the rack's memory for their uplinks (100 kB each) and the NIC's
    // 64 kB, 264 kB at 2.5 Gb/s: 845 µs. An event of node1 alone takes 8 × 64 KiB at
    // 10 Gb/s of 1448-byte payloads in 1538-byte frames: 445 µs. So node1 builds at most
    // 1 + ⌈845 / 445⌉ = 3 events per event of node0, where alone each builds as many.
    let out = run(&slow_collector(true));
    let r = &out.report;
    accounted(r, 400);
    assert_eq!((r.switch.drops, r.tcp.retransmits), (0, 0), "lossless");
    for port in ["rack0->node0", "core0->rack0", "ro0->core0"] {
        assert!(paused_ns(r, port) > 0, "{port} is paused");
    }
    assert!(r.flow_control.as_ref().unwrap().host_paused_ns > 0, "the readout units are paused");
    assert_eq!(paused_ns(r, "rack1->node1"), 0, "the victim's own port is never paused");
    let [slow, victim] = built_by_node(&out);
    assert!(victim <= 3 * slow + 1, "node1 built {victim}, node0 {slow}");
    // Without the slow collector the two share alike, and node1 builds more per second.
    let alone = run(&slow_collector(false));
    let [a0, a1] = built_by_node(&alone);
    assert!(a0.abs_diff(a1) <= 1, "{a0} {a1}");
    let rate = |o: &SimOutput, n: u64| n as f64 / o.report.duration_s;
    let (slowed, free) = (rate(&out, victim), rate(&alone, a1));
    assert!(slowed < 0.8 * free, "the victim builds {slowed:.0}/s, alone {free:.0}/s");
}

#[test]
fn a_credit_link_holds_no_more_than_its_credits_and_carries_them_once_per_credit_loop() {
    // Claim: the readout unit sends a frame only against credits, so the switch never holds
    // more of its frames than its buffer and never drops. A credit comes back one credit loop
    // after its frame left: the frame's serialization and cable delay to the switch, its
    // serialization on to the node, the cable delay back — 2 × 20 µs + 2 × 1.2304 µs =
    // 42.46 µs. With room for k = ⌊B / 1518⌋ full frames the link carries at most k × 1448
    // payload bytes per loop; below the BDP it carries about that.
    let loop_s = (2.0 * 20_000.0 + 2.0 * 1230.4) / 1e9;
    for buffer in [20_000u64, 60_000, 200_000] {
        let tcp = "[network.tcp]\ncongestion_control = \"static\"\nstatic_cwnd_segments = 4000";
        let out = run(&credit_link(buffer, 1500, tcp));
        let r = &out.report;
        accounted(r, 5);
        assert_eq!((r.switch.drops, r.tcp.retransmits), (0, 0), "{buffer}: lossless");
        let port = r.switch.ports.iter().find(|p| p.name == "sw->ru0").unwrap();
        assert!(port.peak_ingress_bytes <= buffer, "{buffer}: held {}", port.peak_ingress_bytes);
        let bound = ((buffer / 1518) * 1448 * 8) as f64 / loop_s;
        let line = daqnet_sim::net::wire::max_goodput_bps(10_000_000_000, 1448);
        for e in out.events.iter().filter(|e| e.measured) {
            let goodput = 2e6 * 8.0 / (e.latency_ms() / 1e3);
            assert!(goodput <= bound.min(line) * 1.001, "{buffer}: {goodput:.3e} b/s above {bound:.3e}");
            assert!(goodput >= 0.9 * bound.min(line), "{buffer}: {goodput:.3e} b/s, bound {bound:.3e}");
        }
    }
}
