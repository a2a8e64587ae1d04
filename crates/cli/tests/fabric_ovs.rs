//! The parallel leaf-spine testbed, as a user runs it: `daqnet testbed run` builds 2 pods × 2
//! planes × 2 spines of Open vSwitch bridges (userspace datapath, daemons in the testbed's switch
//! namespace) with 4 readout hosts and 4 nodes at 50 Mb/s (`scenarios/fabric/testbed.toml`), installs the
//! planner's OpenFlow rules, runs the real event builder through it and takes a spine down in
//! the middle of the run. The controller hears of it from the bridges' port status, re-plans
//! and replaces the rules; the spines' flow counters confirm the placement; no event is lost.
//! Then `testbed up` and `testbed down`: down removes every bridge, port, daemon and file.
//!
//! Needs root and Open vSwitch (`scripts/testbed-deps.sh` installs it); without root it says so
//! and passes. A killed run leaves a testbed whose owner is dead: the next `up`, `run` or
//! `down` removes it.

mod common;

use common::{daqnet, out_dir, paced, report, text};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SCENARIO: &str = "scenarios/fabric/testbed.toml";

/// Whether the test can run (root), with Open vSwitch and clang installed if it can.
fn ready() -> bool {
    if !common::root("Open vSwitch bridges in network namespaces") {
        return false;
    }
    let root = env!("CARGO_MANIFEST_DIR").to_owned() + "/../..";
    let deps = Command::new("scripts/testbed-deps.sh").current_dir(root).status();
    assert!(deps.is_ok_and(|s| s.success()), "scripts/testbed-deps.sh failed");
    true
}

#[test]
fn the_event_builder_runs_through_open_vswitch_and_survives_a_spine_failure() {
    if !ready() {
        return;
    }
    let _g = common::serial();
    let out = out_dir("fabric-ovs");
    let d = out.display().to_string();
    // Every link at 12.5 Mb/s, a quarter of the scenario's: ovs-vswitchd forwards every bridge
    // in one thread, and its cost per frame differs from machine to machine: at 50 Mb/s the
    // planned 188 Mb/s reached 184–185 (98 %) on one machine and 158–171 (84–91 %) on another;
    // on a third, 25 Mb/s reached 79.6 of 94 planned (85 %) with ovs-vswitchd at 88 % of a CPU,
    // and 12.5 Mb/s reached 46.3 of 47.1 (98 %). A run below 90 % of the plan fell behind.
    let r = paced(
        || {
            let o = daqnet(&[
                "testbed",
                "run",
                SCENARIO,
                "--out",
                &d,
                "--set",
                "run.events=400",
                "--set",
                "network.readout_link_bps=12500k",
                "--set",
                "network.node_link_bps=12500k",
                "--set",
                "network.fabric.rack_uplink_bps=12500k",
                "--set",
                "network.fabric.spine_link_bps=12500k",
                "--fail",
                "p0-spine0@1.5s",
            ]);
            assert!(o.status.success(), "{}", text(&o));
            report(&out)
        },
        |r| r["goodput_bps"].as_f64().unwrap() > 0.9 * r["fabric"]["planned_goodput_bps"].as_f64().unwrap(),
    );
    assert!(r["goodput_bps"].as_f64().unwrap() > 0.9 * r["fabric"]["planned_goodput_bps"].as_f64().unwrap(), "{r}");
    assert_eq!(r["events_built"], 400, "{r}");
    let not_built = &r["events_not_built"];
    assert_eq!((not_built["timed_out"].as_u64(), not_built["lost"].as_u64()), (Some(0), Some(0)), "{r}");
    let fabric = &r["fabric"];
    let check = &fabric["spine_check"];
    assert_eq!(check["spines"], 4);
    assert!(check["packets"].as_u64().unwrap() > 1000, "{check}");
    assert!(check["off_plan"].as_array().unwrap().is_empty(), "the counters disagree with the plan: {check}");
    let fault = &fabric["faults"][0];
    let at = fault["at_s"].as_f64().unwrap();
    let heard = fault["detected_s"].as_f64().expect("the controller heard of it from the port status");
    let rerouted = fault["rerouted_s"].as_f64().expect("rerouted");
    assert!((1.5..2.5).contains(&at), "{fault}");
    assert!(heard >= at && rerouted - at < 1.0, "rerouted {:.0} ms after the failure: {fault}", (rerouted - at) * 1e3);
    assert!(fault["flows_moved"].as_u64().unwrap() > 0, "{fault}");
    assert!(fault["frames_lost"].as_u64().unwrap() > 0, "frames sent to the dead spine are counted: {fault}");
    assert_eq!(r["switch"]["drops"], 0, "no port dropped a frame for want of buffer: {r}");
    eprintln!(
        "event builder through Open vSwitch: {:.0} Mb/s of {:.0} planned, p99 {:.1} ms, {} retransmissions, {} timeouts; \
         port status after {:.1} ms, rerouted after {:.1} ms",
        r["goodput_bps"].as_f64().unwrap() / 1e6,
        fabric["planned_goodput_bps"].as_f64().unwrap() / 1e6,
        r["latency_ms"]["p99"].as_f64().unwrap(),
        r["tcp"]["retransmits"],
        r["tcp"]["timeouts"],
        (heard - at) * 1e3,
        (rerouted - at) * 1e3
    );
}

#[test]
fn testbed_down_removes_every_bridge_daemon_and_file_that_up_created() {
    if !ready() {
        return;
    }
    let _g = common::serial();
    let name = "fabric-updown";
    let dir = format!("/run/daqnet/testbed/{name}.ovs");
    let o = daqnet(&["testbed", "up", SCENARIO, "--name", name]);
    assert!(o.status.success(), "{}", text(&o));
    let daemons: Vec<u32> = ["ovsdb-server", "ovs-vswitchd"]
        .iter()
        .map(|d| std::fs::read_to_string(format!("{dir}/{d}.pid")).unwrap().trim().parse().unwrap())
        .collect();
    assert!(daemons.iter().all(|p| Path::new(&format!("/proc/{p}")).exists()), "{daemons:?}");
    let bridges = Command::new("ovs-vsctl").args([&format!("--db=unix:{dir}/db.sock"), "list-br"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&bridges.stdout).lines().count(), 14, "4 leaves, 4 spines, 2 racks, 4 readout");
    // The rules are in place: a spine forwards towards the nodes its plan gives it.
    let flows = Command::new("ovs-ofctl").args(["dump-flows", &format!("unix:{dir}/p0-spine0.mgmt")]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&flows.stdout).contains("nw_dst=10.88.8."),
        "{}",
        String::from_utf8_lossy(&flows.stdout)
    );

    let o = daqnet(&["testbed", "down", "--name", name]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("removed 10 namespaces"), "{}", text(&o));
    let t0 = Instant::now();
    while daemons.iter().any(|p| Path::new(&format!("/proc/{p}")).exists()) {
        assert!(t0.elapsed() < Duration::from_secs(5), "Open vSwitch still runs after down: {daemons:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!Path::new(&dir).exists(), "{dir} is left behind");
    let left: Vec<String> =
        daqnet_testbed::netns::list().into_iter().filter(|n| n.starts_with(&format!("daqnet-{name}-"))).collect();
    assert!(left.is_empty(), "{left:?}");
    let links = Command::new("ip").args(["-o", "link", "show"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&links.stdout).contains("p0-leaf0"), "a bridge's interface is left in the host");
}
