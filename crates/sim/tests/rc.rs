//! Physics tests of the message transport (`[network.rc]`): reliable-connected queue pairs on
//! lossless links — line rate without a window, go-back-N when a packet is lost anyway — under
//! the event builder and DAQPIPE.

use daqnet_core::scenario::load;
use daqnet_core::{NodeId, ReadoutId, Scenario};
use daqnet_sim::net::wire::{rc_frame_bytes, wire_bytes};
use daqnet_sim::{simulate, DropRule, SimOptions, SimOutput};
use std::path::Path;

use crate::common;
use common::credit_link;

/// [`credit_link`] with queue pairs of 4096-byte packets (IP MTU 9000) whose ACK timeout is
/// 1 ms.
fn one_flow(buffer: u64) -> Scenario {
    credit_link(buffer, 9000, "[network.rc]\nack_timeout_ns = \"1ms\"")
}

fn run(s: &Scenario, drops: Vec<DropRule>) -> SimOutput {
    simulate(s, "test", SimOptions { record_events: true, drops, ..Default::default() })
}

/// Packets of a 2 MB message at a 4096-byte path MTU.
const PACKETS: u64 = 2_000_000_u64.div_ceil(4096);

#[test]
fn queue_pairs_send_against_credits_at_up_to_one_buffer_per_credit_loop_without_a_window() {
    // Claim: a queue pair has no window; what limits it is the link's credits. A credit comes
    // back one credit loop after its packet left: serialization and 20 µs of cable to the
    // switch, serialization on to the collector, 20 µs back — 2 × 20 µs + 2 × 4178 × 8 bit /
    // 10 Gb/s = 46.68 µs. With room for k = ⌊B / 4158⌋ packets the link carries at most k ×
    // 4096 payload bytes per loop, and about that below the path's BDP; above it, line rate.
    // The event builder runs over the queue pairs unchanged; TCP sends nothing.
    let wire = wire_bytes(rc_frame_bytes(4096)) as f64;
    assert_eq!(wire, 4178.0);
    let loop_s = (2.0 * 20_000.0 + 2.0 * wire * 8.0 / 10.0) / 1e9;
    let line = 10e9 * 4096.0 / wire;
    for buffer in [20_000u64, 60_000, 200_000] {
        let out = run(&one_flow(buffer), Vec::new());
        let r = &out.report;
        assert_eq!(r.events_built, 5, "{buffer}");
        assert_eq!(r.switch.drops, 0, "{buffer}: lossless");
        assert_eq!(r.tcp, Default::default(), "{buffer}: no TCP");
        let rc = r.rc.as_ref().unwrap();
        assert_eq!((rc.retransmitted_packets, rc.naks, rc.timeouts), (0, 0, 0), "{buffer}");
        assert_eq!(rc.data_packets, 6 * (PACKETS + 1), "{buffer}: a fragment and its one-packet request per event");
        let port = r.switch.ports.iter().find(|p| p.name == "sw->ru0").unwrap();
        assert!(port.peak_ingress_bytes <= buffer, "{buffer}: held {}", port.peak_ingress_bytes);
        let bound = ((buffer / 4158) * 4096 * 8) as f64 / loop_s;
        for e in out.events.iter().filter(|e| e.measured) {
            let goodput = 2e6 * 8.0 / (e.latency_ms() / 1e3);
            assert!(goodput <= bound.min(line) * 1.001, "{buffer}: {goodput:.3e} b/s above {bound:.3e}");
            assert!(goodput >= 0.9 * bound.min(line), "{buffer}: {goodput:.3e} b/s, bound {bound:.3e}");
        }
    }
}

#[test]
fn a_lost_packet_is_sent_again_from_the_nak_and_a_lost_last_packet_after_the_ack_timeout() {
    // Claim: the responder drops what follows a lost packet and NAKs once; the requester goes
    // back to the lost packet and sends it and everything after it again — at most what was
    // sent in one round trip behind it: the credits (200 kB, 48 packets), the two the NIC
    // holds, and what the cable holds both ways at 10 Gb/s (2 × 20 µs: 12 packets) — no
    // timeout. A lost last packet has nothing behind it to show the gap: the requester waits
    // for its ACK timeout (1 ms), then goes back to its oldest unacknowledged packet — the
    // one after the last that asked for an ACK (every 16th) — and sends the 489 % 16 = 9
    // packets from there again.
    let lose = |data_segment| vec![DropRule { readout: ReadoutId(0), node: NodeId(0), data_segment }];
    let out = run(&one_flow(200_000), lose(PACKETS + 10));
    let r = &out.report;
    assert_eq!(r.events_built, 5);
    let rc = r.rc.as_ref().unwrap();
    assert_eq!((rc.naks, rc.go_back_n, rc.timeouts), (1, 1, 0));
    assert!((1..=48 + 2 + 12).contains(&rc.retransmitted_packets), "{} again", rc.retransmitted_packets);

    let out = run(&one_flow(200_000), lose(2 * PACKETS - 1));
    let r = &out.report;
    assert_eq!(r.events_built, 5);
    let rc = r.rc.as_ref().unwrap();
    assert_eq!((rc.naks, rc.go_back_n, rc.timeouts, rc.retransmitted_packets), (0, 0, 1, PACKETS % 16));
    let slow = out.events.iter().max_by(|a, b| a.latency_ms().total_cmp(&b.latency_ms())).unwrap();
    assert!(slow.latency_ms() >= 1.0, "the lost last packet's event waits the timeout: {} ms", slow.latency_ms());
}

fn daqpipe(sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/daqpipe/edr.toml");
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.extend(
        ["network.flow_control={mode=\"credit\"}", "network.rc={}", "network.mtu_bytes=4200"].map(String::from),
    );
    load(&path, &sets).unwrap()
}

#[test]
fn daqpipe_over_queue_pairs_on_credit_links_fills_every_link_without_a_drop() {
    // Claim: with enough parallel pulls a non-blocking star of credit-based links carries
    // every node's line rate: 16 nodes each receive at least 97 % of a 100 Gb/s link's
    // payload capacity at the 4096-byte path MTU (4096 / 4178 of the rate), with no drop and
    // no packet sent twice.
    let s = daqpipe(&["pipe.nodes=16", "run.events=300", "run.warmup_events=30"]);
    let r = simulate(&s, "test", SimOptions::default()).report;
    assert_eq!(r.switch.drops, 0);
    let rc = r.rc.as_ref().unwrap();
    assert_eq!(rc.retransmitted_packets, 0);
    let cap = 100e9 * s.network.payload_share();
    assert!((cap - 100e9 * 4096.0 / 4178.0).abs() < 1.0, "payload share {cap}");
    let recv = r.pipe.unwrap().steady_recv_bps;
    assert!(recv >= 0.97 * cap, "{:.2} Gb/s of {:.2}", recv / 1e9, cap / 1e9);
}
