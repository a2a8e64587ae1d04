//! DAQPIPE's event building (scenarios/daqpipe; Valat et al., IEEE TNS 2017): what the
//! simulated event manager and builder units must do, each claim with its bound.

use daqnet_core::scenario::load;
use daqnet_core::Scenario;
use daqnet_sim::{simulate, SimOptions};
use std::path::Path;

fn scenario(sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/daqpipe/edr.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(&path, &sets).unwrap()
}

fn recv_gbps(sets: &[&str]) -> f64 {
    let r = simulate(&scenario(sets), "test", SimOptions::default()).report;
    assert_eq!(r.switch.drops, 0, "16 MB ports hold every burst of 2 events x 1 MB");
    r.pipe.unwrap().steady_recv_bps / 1e9
}

#[test]
fn every_event_is_built_from_every_node_once_and_links_run_near_line_rate() {
    // 14 nodes x 100 Gb/s, 28 pulls outstanding: a builder's link carries at most 99.2 % of
    // 100 Gb/s as payload (MTU 9000); the pulls keep it busy, so each node receives at least
    // 85 % of that from the other 13, and never more than all of it.
    let s = scenario(&["run.events=200"]);
    let r = simulate(&s, "test", SimOptions::default()).report;
    assert_eq!(r.events_built, 200);
    let p = r.pipe.unwrap();
    let cap = 100e9 * s.network.payload_share();
    assert!(p.recv_bps.mean >= 0.85 * cap && p.recv_bps.max <= cap, "{:?} of {cap}", p.recv_bps);
    // Round-robin assignment over equal nodes: every node sends and receives alike.
    assert!(p.send_bps.min >= 0.95 * p.send_bps.mean, "{:?}", p.send_bps);
}

#[test]
fn bandwidth_rises_with_parallel_transfers_and_saturates() {
    // One pull at a time leaves the link idle for a round trip after each 1 MB fragment; more
    // pulls in flight fill those gaps, until the link is full and more add nothing.
    let k = |k: u32| recv_gbps(&["run.events=150", &format!("pipe.parallel_transfers={k}")]);
    let (k1, k4, k16, k64) = (k(1), k(4), k(16), k(64));
    assert!(k1 < k4 && k4 <= k16 * 1.001, "{k1} {k4} {k16}");
    assert!((k64 - k16).abs() / k16 < 0.01, "saturated: {k16} vs {k64}");
}

#[test]
fn a_non_blocking_star_scales() {
    // Per-node bandwidth at 14 nodes over that at 2 ([LHCB-DAQPIPE] Fig. 8's ratio), in steady
    // state: a single non-blocking switch with deep ports adds no bottleneck as nodes are
    // added, so ≥ 0.95.
    let (two, fourteen) = (recv_gbps(&["run.events=400", "pipe.nodes=2"]), recv_gbps(&["run.events=400"]));
    assert!(fourteen / two >= 0.95, "{fourteen} / {two}");
}

#[test]
fn one_way_uses_each_link_in_one_direction_at_line_rate() {
    // 16 nodes one way: nodes 0-7 only send, 8-15 only receive. Each event brings 8 fragments
    // to one of 8 builders, so every receiving link carries fragments at up to its payload
    // capacity and every sending link likewise; the other directions carry only pulls.
    let s = scenario(&["run.events=300", "pipe.nodes=16", "pipe.direction=one_way"]);
    let r = simulate(&s, "test", SimOptions::default()).report;
    let p = r.pipe.unwrap();
    let cap = 100e9 * s.network.payload_share();
    assert!(p.steady_recv_bps >= 0.95 * cap && p.steady_recv_bps <= cap, "{} of {cap}", p.steady_recv_bps);
    for (i, &(send, recv)) in p.per_node.iter().enumerate() {
        let (sends, receives) = (i < 8, i >= 8);
        assert_eq!((send > 0.0, recv > 0.0), (sends, receives), "node {i}: {send} {recv}");
    }
}

fn leaf_spine(sets: &[&str]) -> f64 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/daqpipe/leaf-spine.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = load(&path, &sets).unwrap();
    simulate(&s, "test", SimOptions::default()).report.pipe.unwrap().steady_recv_bps / 1e9
}

#[test]
fn an_oversubscribed_leaf_spine_caps_each_node_at_its_share_of_the_uplinks() {
    // 16 nodes in racks of 4 under 4 spines. Non-blocking (4 x 100 Gb/s up per leaf): per-flow
    // ECMP hashing puts unequal loads on the spines, yet each node still receives ≥ 80 % of
    // its link's 99.2 Gb/s of payload. At 2:1 (4 x 50 Gb/s up), 12 of a node's 15 remote
    // fragments cross the uplinks, which carry 200 Gb/s for the rack's 4 nodes: at most
    // 50 / (12/15) = 62.5 Gb/s each (99.2 % of it payload) — and ECMP collisions keep it
    // well below; at least 60 % of that bound is reached.
    let full = leaf_spine(&["run.events=600"]);
    assert!(full >= 0.80 * 99.2, "non-blocking: {full} Gb/s");
    let half = leaf_spine(&["run.events=600", "network.rack_switch.uplink_bps=50G"]);
    let bound = 62.5 * 0.992;
    assert!(half <= bound && half >= 0.6 * bound, "2:1: {half} Gb/s of at most {bound}");
}

#[test]
fn synthetic_patterns_fill_the_receivers_links() {
    // [LHCB-DAQPIPE] §V: without synchronisation, each pattern keeps every receiver's link
    // busy (the document measured ≥ 87 Gb/s on 100 Gb/s links in every case). Here every
    // receiver's steady share is within 90–100.5 % of the 99.2 Gb/s of payload a link carries
    // (the steady estimate is a rate read from message completions: over 6000 messages it
    // reads within 0.1 % of the link's capacity where the link is full; at 1500 it still
    // carried the start's transient — gather read 101.6 %), whether its
    // data comes from one sender (one-to-one), from all at once through an overflowing port
    // (many-to-one: drops, repaired without a timeout) or in turn (gather, with commands and
    // metadata mixed in).
    for p in ["one_to_one", "many_to_one", "gather", "gather_cmd_meta"] {
        let sets = ["run.events=6000".to_string(), format!("pipe.pattern={p}")];
        let s = scenario(&sets.iter().map(String::as_str).collect::<Vec<_>>());
        let r = simulate(&s, "test", SimOptions::default()).report;
        assert_eq!(r.events_built, 6000, "{p}");
        let pipe = r.pipe.unwrap();
        assert!(pipe.steady_state, "{p}: 6000 messages are many rounds of 8 per sender");
        let share = pipe.steady_recv_bps / (100e9 * s.network.payload_share());
        assert!((0.90..=1.005).contains(&share), "{p}: {share}");
        assert_eq!(r.tcp.timeouts, 0, "{p}");
    }
}
