//! The planner against hand-computed cases: the formulas of [LOSSLESS] §V-B (Fig. 10's
//! 100 readout units, 28 racks, 10 Gb/s), water-filling where collectors share a spine, ECMP
//! against the controller, failures, partial uplinks, and rules that must not loop.

use daqnet_core::scenario::{parse_str, Assignment, Scenario};
use daqnet_fabric::links::Tier;
use daqnet_fabric::rules::{self, Bridge};
use daqnet_fabric::shape::{Shape, Switch};
use daqnet_fabric::{plan, Element, Failures, Outcome, PlanError};

/// A fabric scenario: `sizes` is (pods, planes, spines, readout per pod, racks per pod, nodes
/// per rack), every link 10 Gb/s unless `extra` says otherwise.
fn fabric(sizes: (u32, u32, u32, u32, u32, u32), extra: &[&str]) -> Scenario {
    let (pods, planes, spines, rpp, hpp, npr) = sizes;
    let text = format!(
        r#"
[system]
readout_units = {}
nodes = {}
fragments_per_unit = 1
fragment_size = {{ law = "fixed", bytes = 1000 }}
[network]
topology = "parallel_leaf_spine"
readout_link_bps = "10G"
node_link_bps = "10G"
[network.fabric]
pods = {pods}
planes = {planes}
spines_per_plane = {spines}
readout_per_pod = {rpp}
racks_per_pod = {hpp}
nodes_per_rack = {npr}
rack_uplink_bps = "10G"
spine_link_bps = "10G"
"#,
        pods * rpp,
        pods * hpp * npr
    );
    let sets: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    parse_str(&text, "test", &sets).unwrap_or_else(|e| panic!("{e}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn outcome(sc: &Scenario, a: Assignment) -> Outcome {
    plan(sc, &Failures::default(), &[a]).unwrap().outcomes.remove(0)
}

/// Fig. 10's system: 100 readout units and 28 racks at 10 Gb/s. With 4 pods and one spine per
/// plane, eq. (3) gives 10 G · 1 / (25 · 7 · 3) = 19.05 Mb/s per flow, below b/n_R = 100 Mb/s
/// and b/n_H = 357 Mb/s, so the spine tier limits and (1) gives 28 · 100 · 19.05 M = 53.3 Gb/s
/// per plane.
#[test]
fn formulas_reproduce_the_papers_example() {
    let f = plan(&fabric((4, 1, 1, 25, 7, 1), &[]), &Failures::default(), &[]).unwrap().formulas;
    assert_eq!((f.n_r, f.n_h), (100, 28));
    assert!(close(f.interpod_bps.unwrap(), 10e9 / 525.0));
    assert!(close(f.rack_link_share_bps, 100e6) && close(f.readout_link_share_bps, 10e9 / 28.0));
    assert!(close(f.daq_bps, 2800.0 * 10e9 / 525.0), "{}", f.daq_bps);
    assert_eq!(f.bottleneck, Tier::LeafToSpine);

    // One pod: nothing crosses a spine; the leaf → rack link (100 flows) limits: 280 Gb/s a plane.
    let one_pod = plan(&fabric((1, 1, 1, 100, 28, 1), &[]), &Failures::default(), &[]).unwrap().formulas;
    assert_eq!(one_pod.interpod_bps, None);
    assert!(close(one_pod.daq_bps, 280e9) && one_pod.bottleneck == Tier::LeafToRack);

    // Six spines lift eq. (3) to 114 Mb/s, above b/n_R: 280 Gb/s per plane again, and two planes
    // double it — but 28 nodes' links (280 Gb/s) then bound the total, a limit (1) leaves out.
    let wide = plan(&fabric((4, 2, 6, 25, 7, 1), &[]), &Failures::default(), &[]).unwrap().formulas;
    assert!(close(wide.flow_bps, 100e6) && close(wide.daq_bps, 560e9));
    assert!(close(wide.bound_bps, 280e9) && wide.bottleneck == Tier::RackToNode);
}

/// Where the assumptions of (1)–(4) hold, the controller's assignment realises the formula:
/// collectors max-min fair with all their flows at one rate reach exactly B_DAQ.
#[test]
fn the_controller_reaches_the_formula_on_a_symmetric_fabric() {
    for sizes in [(4, 1, 1, 25, 7, 1), (2, 2, 1, 50, 14, 1), (4, 2, 2, 25, 8, 2)] {
        let sc = fabric(sizes, &[]);
        let p = plan(&sc, &Failures::default(), &[Assignment::Controller]).unwrap();
        let o = &p.outcomes[0];
        assert!(
            close(o.building_bps, p.formulas.bound_bps),
            "{sizes:?}: {} vs {}",
            o.building_bps,
            p.formulas.bound_bps
        );
        assert!(close(o.equal_rate_bps, o.building_bps), "{sizes:?}: every collector at the same rate");
    }
}

/// Two pods, one readout unit and one rack of three collectors each, two spines of 1 Gb/s.
/// Eq. (3): 1 G · 2 / (1 · 1 · 1) = 2 Gb/s per flow, (1): 2 · 2 · 2 G = 8 Gb/s. Three collectors
/// per rack on two spines: one spine carries two collectors' flows. By hand, per pod, the
/// collectors on the shared spine get 1 Gb/s each (two flows of half their rate on 1 Gb/s),
/// the one alone gets 2 Gb/s: max-min total 8 Gb/s, but at one common rate only 6 × 1 = 6 Gb/s.
#[test]
fn collectors_sharing_a_spine_by_hand() {
    let sc = fabric((2, 1, 2, 1, 1, 3), &["network.fabric.spine_link_bps=1G"]);
    let p = plan(&sc, &Failures::default(), &[Assignment::Controller]).unwrap();
    assert!(close(p.formulas.daq_bps, 8e9));
    let o = &p.outcomes[0];
    assert!(close(o.building_bps, 8e9), "{}", o.building_bps);
    assert!(close(o.equal_rate_bps, 6e9), "{}", o.equal_rate_bps);
    assert!(close(o.collector_bps.0, 1e9) && close(o.collector_bps.1, 2e9));
    let flows = |name: &str| o.links.iter().find(|l| l.name == name).map_or(0, |l| l.flows);
    assert_eq!((flows("p0-leaf0->p0-spine0"), flows("p0-leaf0->p0-spine1")), (2, 1));
    let routes: Vec<&str> = o.collectors.iter().map(|c| c.route.as_str()).collect();
    assert_eq!(routes, ["p0-spine0", "p0-spine1", "p0-spine0", "p0-spine0", "p0-spine1", "p0-spine0"]);
}

/// Hashing ignores load: on every size tried, ECMP's most crowded link carries at least as many
/// flows as the controller's, and event building gets no more bandwidth — also where whole
/// collectors cannot spread evenly (3 per rack on 2 planes; 14 per pod on 4 plane-spines) and
/// the controller splits some of them.
#[test]
fn the_controller_never_loads_a_link_more_than_ecmp() {
    let sizes = [(2, 2, 2, 4, 2, 4), (4, 2, 2, 25, 8, 2), (3, 2, 3, 5, 2, 3), (4, 4, 2, 8, 4, 2), (4, 2, 2, 25, 7, 2)];
    for sizes in sizes {
        let sc = fabric(sizes, &[]);
        let (c, e) = (outcome(&sc, Assignment::Controller), outcome(&sc, Assignment::Ecmp));
        let worst = |o: &Outcome| o.tiers.iter().map(|t| t.flows_max).max().unwrap();
        assert!(worst(&c) <= worst(&e), "{sizes:?}: controller {} flows on a link, ECMP {}", worst(&c), worst(&e));
        assert!(c.building_bps >= e.building_bps * (1.0 - 1e-9), "{sizes:?}");
        assert!(c.equal_rate_bps >= e.equal_rate_bps * (1.0 - 1e-9), "{sizes:?}");
    }
}

/// A failed spine carries nothing after re-planning; a failed plane moves every flow to the
/// others; with the only plane down nothing is routable, and the planner says which flow.
#[test]
fn failures_are_planned_around() {
    let sc = fabric((2, 2, 2, 4, 2, 2), &[]);
    let spine = Failures(vec!["p0-spine0".parse().unwrap()]);
    let p = plan(&sc, &spine, &[Assignment::Controller, Assignment::Ecmp]).unwrap();
    for o in &p.outcomes {
        assert!(o.links.iter().all(|l| !l.name.contains("p0-spine0")), "{}", o.assignment);
        assert!(o.building_bps > 0.0);
    }
    let plane = Failures(vec![Element::Plane(daqnet_fabric::shape::Plane(1))]);
    let o = plan(&sc, &plane, &[Assignment::Controller]).unwrap().outcomes.remove(0);
    assert!(o.placement.flows().all(|(_, _, route)| route.plane.0 == 0));
    let healthy = outcome(&sc, Assignment::Controller).building_bps;
    assert!(close(o.building_bps, healthy / 2.0), "one plane of two left: {} vs {healthy}", o.building_bps);

    let single = fabric((2, 1, 1, 1, 1, 1), &[]);
    let err = plan(&single, &Failures(vec!["plane0".parse().unwrap()]), &[Assignment::Controller]).unwrap_err();
    assert_eq!(err, PlanError::Unroutable { readout: 0, node: 0 });
    let err = plan(&single, &Failures(vec!["p0-spine4".parse().unwrap()]), &[Assignment::Controller]).unwrap_err();
    assert!(matches!(err, PlanError::NoSuchElement(ref e) if e == "p0-spine4"));
}

/// With one uplink each on two planes, readout units alternate between planes and every flow
/// takes a plane its readout unit reaches — the formulas' symmetry no longer holds.
#[test]
fn partial_uplinks_use_only_reachable_planes() {
    let sc = fabric((2, 2, 1, 2, 1, 2), &["network.fabric.readout_uplinks=1"]);
    let p = plan(&sc, &Failures::default(), &[Assignment::Controller, Assignment::Ecmp]).unwrap();
    assert!(!p.formulas.symmetric);
    for o in &p.outcomes {
        for (r, _, route) in o.placement.flows() {
            assert_eq!(route.plane.0, r.0 % 2, "readout unit {} reaches plane {} only", r.0, r.0 % 2);
        }
    }
}

/// Rules for every switch deliver every packet along its route. With daqrings, the controller's
/// per-collector routes need the paper's two rules per collector on a spine; ECMP needs rules
/// per flow where one collector's flows part ways. Ring rules that do not outrank the rest
/// would loop, and are refused.
#[test]
fn rules_deliver_every_packet_and_loops_are_refused() {
    let sc = fabric((2, 2, 2, 2, 1, 2), &["network.fabric.spine.kind=daqring", "network.fabric.leaf.kind=daqring"]);
    let shape = Shape::of(&sc).unwrap();
    let p = plan(&sc, &Failures::default(), &[Assignment::Controller, Assignment::Ecmp]).unwrap();
    let controller = rules::rules(&shape, &p.outcomes[0].placement).unwrap();
    let spine =
        &controller[&Bridge::Fabric(Switch::Spine(daqnet_fabric::shape::Plane(0), daqnet_fabric::shape::Spine(0)))];
    let data: Vec<_> = spine.iter().filter(|r| r.to_string().contains("nw_dst=10.88.8.")).collect();
    let collectors = p.outcomes[0].collectors.iter().filter(|c| c.route == "p0-spine0").count();
    assert_eq!(data.len(), 2 * collectors, "two rules per collector: {data:#?}");
    assert!(spine.iter().all(|r| r.flow.is_none()), "the controller's rules match addresses only");

    let ecmp = rules::rules(&shape, &p.outcomes[1].placement).unwrap();
    assert!(ecmp.values().flatten().any(|r| r.flow.is_some()), "ECMP parts some collector's flows");

    let wrong = daqnet_fabric::rules::tests_support::with_ring_priority(&shape, &p.outcomes[0].placement, 100);
    let err = rules::check(&shape, &p.outcomes[0].placement, &wrong).unwrap_err();
    assert!(matches!(err, PlanError::BadRules { ref problem, .. } if problem.contains("loops")), "{err}");
}
