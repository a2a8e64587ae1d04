//! The parallel leaf-spine fabric of [LOSSLESS] §V in the simulator: packets follow the plan of
//! `daqnet-fabric`, and the plan's bound is what event building reaches.

use daqnet_core::scenario::{load, Assignment};
use daqnet_core::Scenario;
use daqnet_fabric::{plan, Failures};
use daqnet_sim::net::wire::max_goodput_bps;
use daqnet_sim::{simulate, SimOptions, SimOutput};
use std::path::Path;

fn prototype(sets: &[&str]) -> Scenario {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fabric/prototype.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(&file, &sets).unwrap_or_else(|e| panic!("{e}"))
}

fn run(sc: &Scenario) -> SimOutput {
    simulate(sc, "test", SimOptions::default())
}

/// The planned bound as goodput: link bandwidth times the share of a full frame that is payload.
fn bound_goodput_bps(sc: &Scenario) -> f64 {
    let p = plan(sc, &Failures::default(), &[]).unwrap();
    p.formulas.bound_bps * max_goodput_bps(1_000_000_000, sc.network.mss_bytes()) / 1e9
}

/// The prototype's 2 planes × 2 spines of daqring switches, every readout unit and rack on both
/// planes: nothing is oversubscribed above the readout uplinks, which (1) makes the bound
/// (6 units × 2 planes × 10 Gb/s = 120 Gb/s). Lossless switches with a queue per collector
/// absorb every incast, so the event builder keeps every uplink busy: goodput within 5 % of
/// the bound, no drop, no timeout.
#[test]
fn a_daqring_fabric_reaches_the_planned_bound() {
    for planes_spines in [
        ["network.fabric.planes=2", "network.fabric.spines_per_plane=2"],
        ["network.fabric.planes=1", "network.fabric.spines_per_plane=1"],
    ] {
        let sc = prototype(&[planes_spines[0], planes_spines[1], "run.events=2000", "run.warmup_events=200"]);
        let bound = bound_goodput_bps(&sc);
        let r = run(&sc).report;
        assert_eq!((r.switch.drops, r.tcp.timeouts), (0, 0), "{planes_spines:?}");
        assert!(
            r.goodput_bps >= 0.95 * bound,
            "{planes_spines:?}: {:.2} Gb/s of {:.2}",
            r.goodput_bps / 1e9,
            bound / 1e9
        );
        assert!(r.goodput_bps <= bound * 1.001, "{planes_spines:?}: above the bound");
    }
}

/// Busiest port of the spine tier (leaf ↔ spine, both ways), in frames sent.
fn busiest_spine_port(out: &SimOutput) -> u64 {
    out.report.switch.ports.iter().filter(|p| p.name.contains("spine")).map(|p| p.frames).max().unwrap()
}

/// Hashing flows onto planes and spines piles some onto the same links while others idle; the
/// controller spreads collectors so every link carries its share. Same events, same bytes: the
/// controller's busiest spine link sends no more frames than ECMP's, and event building is no
/// slower, on every size tried — sizes where collectors divide evenly over racks' planes and
/// pods' spines, the paper's assumption. (Where they do not, the plan still balances flow counts
/// (`daqnet-fabric`'s tests), but which collector builds more events is decided as the run goes:
/// a first-come supervisor gives more to collectors on emptier paths.)
#[test]
fn the_controller_loads_the_spines_no_more_than_ecmp() {
    let sizes: [&[&str]; 3] = [
        &[],
        &[
            "network.fabric.readout_per_pod=4",
            "system.readout_units=8",
            "network.fabric.nodes_per_rack=4",
            "system.nodes=24",
        ],
        &["network.fabric.spines_per_plane=3", "network.fabric.nodes_per_rack=6", "system.nodes=36"],
    ];
    for size in sizes {
        let mut sets = vec!["run.events=400", "run.warmup_events=40"];
        sets.extend_from_slice(size);
        let mut outs = Assignment::ALL.iter().map(|a| {
            let assignment = format!("network.fabric.assignment={}", a.name());
            let mut s = sets.clone();
            s.push(&assignment);
            run(&prototype(&s))
        });
        let (c, e) = (outs.next().unwrap(), outs.next().unwrap());
        assert!(
            busiest_spine_port(&c) <= busiest_spine_port(&e),
            "{size:?}: controller {} frames on its busiest spine link, ECMP {}",
            busiest_spine_port(&c),
            busiest_spine_port(&e)
        );
        assert!(c.report.goodput_bps >= 0.99 * e.report.goodput_bps, "{size:?}");
    }
}

/// A spine fails 50 ms into the run. Its four 10 Gb/s links lose what is offered to them until
/// the controller, `reaction_ns` (10 ms) later, has moved exactly the flows that crossed it —
/// at most 4 links × 10 ms × 10 Gb/s / 9038-byte frames = 5,532 frames lost. TCP repairs the
/// loss: every event is built; those caught wait at most a retransmission timeout or two
/// (200 ms minimum RTO). A faster controller loses fewer frames and catches fewer events.
#[test]
fn a_failed_spine_is_routed_around_and_no_event_is_lost() {
    use daqnet_fabric::shape::{Plane, Spine};
    use daqnet_fabric::Element;
    use daqnet_sim::FaultPlan;
    let spine = Element::Spine(Plane(0), Spine(1));
    let fault = |reaction: &str| {
        let sc = prototype(&["run.events=2000", &format!("network.fabric.reaction_ns={reaction}")]);
        let opts = SimOptions { faults: vec![FaultPlan { element: spine, at_ns: 50_000_000 }], ..Default::default() };
        let r = simulate(&sc, "test", opts).report;
        assert_eq!(r.events_built, 2000, "no event lost");
        assert_eq!(r.switch.drops, 0, "daqrings drop nothing");
        r.fabric.unwrap().faults.remove(0)
    };
    let plan = plan(&prototype(&[]), &Failures::default(), &[Assignment::Controller]).unwrap();
    let crossing = plan.outcomes[0]
        .placement
        .flows()
        .filter(|&(r, n, route)| route.spine == Some(Spine(1)) && route.plane == Plane(0) && r.0 / 3 != n.0 / 24)
        .count() as u64;
    let slow_fault = fault("10ms");
    assert_eq!(slow_fault.rerouted_s, Some(0.060));
    assert_eq!(slow_fault.flows_moved, crossing);
    assert!(slow_fault.frames_lost > 0 && slow_fault.frames_lost <= 5532, "{}", slow_fault.frames_lost);
    let slow = slow_fault.cost.expect("the simulator measures every failure's cost");
    assert!(slow.events_hit > 0 && slow.slowest_hit_ms < 450.0, "{slow:?}");
    let fast_fault = fault("100us");
    let fast = fast_fault.cost.unwrap();
    assert!(
        fast_fault.frames_lost < slow_fault.frames_lost && fast.events_hit < slow.events_hit,
        "{fast:?} vs {slow:?}"
    );
}

fn prototype_pcie(sets: &[&str]) -> Scenario {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fabric/prototype-pcie.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(&file, &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// [LOSSLESS] §V-C on the prototype's edge hosts: 6.4 Gb/s buses behind 10 Gb/s links and
/// 128 kB NIC buffers. A daqring that releases one 9000-byte frame (9,038 bytes on the wire,
/// 72,304 bits) per 181 µs runs at 400 Mb/s, and the 16 rings that can feed one HLT host (8
/// collectors × 2 planes) at most 6.4 Gb/s together: the bus keeps up. The NIC then holds at
/// most the 16 frames the rings release at once, 8 down each plane's 10 Gb/s link (57.8 µs),
/// less what the bus drains meanwhile: 144.6 kB − 46.3 kB = 98.3 kB of its 128 kB. So no drop
/// and no timeout.
/// Each collector's flows take one plane (the controller's placement), so one ring: every
/// collector receives at 400 Mb/s and the 48 together at 19.2 Gb/s, goodput 19.2 × 8948/9038.
/// Without the limit the leaves send each 128 KiB fragment at 10 Gb/s into the 6.4 Gb/s bus;
/// a 128 kB buffer fills within 128 kB / 3.6 Gb/s = 284 µs of such a burst: the NICs drop,
/// TCP times out, and goodput falls below the limited fabric's.
#[test]
fn daqrings_rate_limited_to_the_edge_bus_keep_slow_hosts_lossless() {
    let sets = ["network.fabric.leaf.daqring.poll_cycle_ns=180760ns", "run.events=2000", "run.warmup_events=200"];
    let r = run(&prototype_pcie(&sets)).report;
    let edge = r.edge.as_ref().expect("the edge hosts are reported");
    assert_eq!((edge.drops, r.switch.drops, r.tcp.timeouts), (0, 0, 0));
    let peak = edge.ports.iter().map(|p| p.peak_bytes).max().unwrap();
    assert!(peak <= 98_300, "a NIC held {peak} B");
    let ring = 72_304.0 * 1e9 / 180_760.0;
    let bound = 48.0 * ring * 8948.0 / 9038.0;
    assert!((r.goodput_bps - bound).abs() <= 0.05 * bound, "goodput {} of {bound}", r.goodput_bps);

    let unlimited = ["network.fabric.leaf.daqring.burst_frames=0", "network.fabric.leaf.daqring.poll_cycle_ns=0"];
    let u = run(&prototype_pcie(&[unlimited[0], unlimited[1], sets[1], sets[2]])).report;
    let edge = u.edge.as_ref().unwrap();
    assert!(edge.drops > 0 && u.tcp.timeouts > 0, "{} NIC drops, {} timeouts", edge.drops, u.tcp.timeouts);
    assert_eq!(u.switch.drops, 0, "the daqrings themselves drop nothing");
    assert!(u.goodput_bps < r.goodput_bps, "unlimited {} vs limited {}", u.goodput_bps, r.goodput_bps);
}
