//! `daqnet plan` as a user runs it: tables, JSON, failures, rule files, and bad input named.

mod common;
use common::{daqnet, out_dir, text};

const PROTOTYPE: &str = "scenarios/fabric/prototype.toml";

#[test]
fn plan_prints_formulas_and_both_placements() {
    let o = daqnet(&["plan", PROTOTYPE]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    // 6 readout units × 2 planes × 10 Gb/s: eq. (1) gives 120 Gb/s with every uplink full.
    assert!(t.contains("B_DAQ = n_p · n_H · n_R · B_RH") && t.contains("120.000 Gb/s"), "{t}");
    assert!(t.contains("controller") && t.contains("ecmp"), "{t}");
}

#[test]
fn plan_json_has_every_collectors_route() {
    let o = daqnet(&["plan", PROTOTYPE, "--json", "--assignment", "controller"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let outcome = &v["outcomes"][0];
    assert_eq!(outcome["assignment"], "controller");
    assert_eq!(outcome["collectors"].as_array().unwrap().len(), 48);
    assert!((v["formulas"]["daq_bps"].as_f64().unwrap() - 120e9).abs() < 1.0);
}

/// A failed spine: the plan says so, no loaded link touches it, and the rule files written for
/// the re-plan never send anything to it.
#[test]
fn plan_around_a_failed_spine_and_write_rules() {
    let dir = out_dir("plan-rules");
    let rules = dir.join("rules");
    let o = daqnet(&["plan", PROTOTYPE, "--fail", "p0-spine1", "--links", "--rules", rules.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("down: p0-spine1") && !t.contains("p0-spine1->") && !t.contains("->p0-spine1"), "{t}");
    let bridges = std::fs::read_to_string(rules.join("bridges.txt")).unwrap();
    // 4 leaves, 3 spines left, 6 racks, 6 readout bridges.
    assert_eq!(bridges.lines().count(), 19, "{bridges}");
    assert!(!rules.join("p0-spine1.flows").exists());
    let leaf = std::fs::read_to_string(rules.join("p0-leaf0.flows")).unwrap();
    assert!(leaf.starts_with("# OpenFlow rules of bridge p0-leaf0"));
    // Leaf port 8 leads to p0-spine1 (3 readout units, 3 racks, then spines 0 and 1).
    assert!(leaf.contains(" 8=p0-spine1"), "{leaf}");
    assert!(leaf.lines().filter(|l| !l.starts_with('#')).all(|l| !l.ends_with("output:8")), "{leaf}");
    assert!(leaf.lines().any(|l| l.starts_with("priority=") && l.contains(",actions=output:")));
}

#[test]
fn bad_fabric_input_names_the_field_or_element() {
    let o = daqnet(&["plan", PROTOTYPE, "--set", "network.fabric.readout_per_pod=4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("network.fabric.readout_per_pod"), "{}", text(&o));
    let o = daqnet(&["plan", PROTOTYPE, "--set", "network.fabric.readout_uplinks=3"]);
    assert!(
        text(&o).contains("network.fabric.readout_uplinks`: is 3; must be in 1 ..= network.fabric.planes (2)"),
        "{}",
        text(&o)
    );
    let o = daqnet(&["plan", PROTOTYPE, "--fail", "p5-spine0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("p5-spine0 is not in this fabric"), "{}", text(&o));
    let o = daqnet(&["plan", PROTOTYPE, "--fail", "spine0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("names no fabric element"), "{}", text(&o));
    let o = daqnet(&["plan", PROTOTYPE, "--set", "network.fabric.planes=1", "--fail", "plane0"]);
    assert!(text(&o).contains("no route from readout unit 0 to node 0"), "{}", text(&o));
    let o = daqnet(&["plan", "scenarios/incast-micro.toml"]);
    assert!(text(&o).contains("daqnet plan plans topology = \"parallel_leaf_spine\""), "{}", text(&o));
}
