//! The planner's OpenFlow rules in real Open vSwitch (userspace datapath, daemons of the test's
//! own): a parallel leaf-spine of 2 pods × 2 planes × 2 spines — 8 leaves and spines, 2 rack
//! switches, a bridge on each of 4 readout hosts — with 4 readout hosts and 4 nodes in network
//! namespaces, /32 addresses and no ARP, as [LOSSLESS] §V-C built its prototype. Every node
//! pulls data from every readout unit over TCP; the spines' flow counters show that each
//! collector's traffic took the spine the controller planned. Then a spine fails: the controller
//! re-plans, the new rules replace the old within a second, and every node again receives from
//! every readout unit. Then the real event builder (`daqnet role` processes in the namespaces,
//! the supervisor's messages on a control network of their own) runs through the fabric, a
//! spine fails in the middle of the run, and no event is lost.
//!
//! Needs root and Open vSwitch (`scripts/testbed-deps.sh` installs it); without root it says so
//! and passes. Everything it creates is named `dqf…` and removed at the end — and at the start,
//! in case a killed run left it behind.

mod common;

use common::{out_dir, report, wait_exit};
use daqnet_core::scenario::parse_str;
use daqnet_core::{NodeId, ReadoutId};
use daqnet_fabric::controller::Controller;
use daqnet_fabric::rules::{self, node_ip, readout_ip, Bridge, Peer, Ports, READOUT_PORT};
use daqnet_fabric::shape::{Plane, Shape, Spine, Switch};
use daqnet_fabric::Element;
use daqnet_testbed::netns;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const RUN_DIR: &str = "/run/daqnet/ovs-fabric-test";
const BYTES: usize = 256 * 1024;

const SCENARIO: &str = r#"
[system]
readout_units = 4
nodes = 4
fragments_per_unit = 1
fragment_size = { law = "fixed", bytes = "256KiB" }
pus_per_node = 2
credits_per_node = "unlimited"
processing_time_ns = 0
readout_service_ns = 0
readout_service_jitter_ns = 0
[system.supervisor]
rate_hz = "unbounded"
control_delay_ns = 0
[network]
topology = "parallel_leaf_spine"
readout_link_bps = "1G"
node_link_bps = "1G"
[network.fabric]
pods = 2
planes = 2
spines_per_plane = 2
readout_per_pod = 2
racks_per_pod = 1
nodes_per_rack = 2
rack_uplink_bps = "1G"
spine_link_bps = "1G"
[run]
events = 600
warmup_events = 20
[deploy]
supervisor = "10.89.0.1:7000"
readouts = ["10.88.16.1:7100", "10.88.16.2:7100", "10.88.16.3:7100", "10.88.16.4:7100"]
# A connection that loses a segment on the failing spine waits out one retransmission timeout.
peer_timeout_ms = 5000
"#;

/// Runs a command with the test's Open vSwitch run directory; panics with its stderr on failure.
fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .env("OVS_RUNDIR", RUN_DIR)
        .env("OVS_LOGDIR", RUN_DIR)
        .env("OVS_DBDIR", RUN_DIR)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", args[0]));
    assert!(out.status.success(), "`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Removes everything the test creates: daemons a killed run left (by their pid files), the
/// namespaces, the root-side links.
fn clean() {
    for daemon in ["ovs-vswitchd", "ovsdb-server"] {
        if let Ok(pid) = std::fs::read_to_string(format!("{RUN_DIR}/{daemon}.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).stderr(std::process::Stdio::null()).status();
        }
    }
    for ns in netns::list().into_iter().filter(|n| n.starts_with("dqf-")) {
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
    }
    let links = Command::new("ip").args(["-o", "link", "show"]).output().unwrap();
    for line in String::from_utf8_lossy(&links.stdout).lines() {
        if let Some(name) = line.split(": ").nth(1).map(|n| n.split('@').next().unwrap_or(n)) {
            if name.starts_with("dqf") {
                let _ = Command::new("ip").args(["link", "del", name]).stderr(std::process::Stdio::null()).status();
            }
        }
    }
    let _ = std::fs::remove_dir_all(RUN_DIR);
}

/// Stops the daemons it started (and reaps them), then removes the rest.
#[derive(Default)]
struct Cleanup {
    daemons: Vec<std::process::Child>,
    roles: Vec<std::process::Child>,
}
impl Drop for Cleanup {
    fn drop(&mut self) {
        for d in self.roles.iter_mut().chain(&mut self.daemons) {
            let _ = d.kill();
            let _ = d.wait();
        }
        clean();
    }
}

fn ns_readout(r: u32) -> String {
    format!("dqf-r{r}")
}
fn ns_node(n: u32) -> String {
    format!("dqf-c{n}")
}

/// Starts private ovsdb-server and ovs-vswitchd (userspace datapath: no kernel module here) as
/// children of the test, so that it can stop and reap them.
fn start_ovs(guard: &mut Cleanup) {
    std::fs::create_dir_all(RUN_DIR).unwrap();
    let db = format!("{RUN_DIR}/conf.db");
    sh(&["ovsdb-tool", "create", &db, "/usr/share/openvswitch/vswitch.ovsschema"]);
    let remote = format!("--remote=punix:{RUN_DIR}/db.sock");
    guard.daemons.push(daemon(&["ovsdb-server", &db, &remote, "--pidfile"]));
    wait_for(&format!("{RUN_DIR}/db.sock"));
    sh(&["ovs-vsctl", "--no-wait", "init"]);
    guard.daemons.push(daemon(&["ovs-vswitchd", "--pidfile"]));
    wait_for(&format!("{RUN_DIR}/ovs-vswitchd.pid"));
}

fn daemon(args: &[&str]) -> std::process::Child {
    Command::new(args[0])
        .args(&args[1..])
        .env("OVS_RUNDIR", RUN_DIR)
        .env("OVS_LOGDIR", RUN_DIR)
        .env("OVS_DBDIR", RUN_DIR)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", args[0]))
}

fn wait_for(path: &str) {
    let t0 = Instant::now();
    while !Path::new(path).exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{path} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The interface name of port `port` of bridge number `b` (15 characters at most).
fn ifname(b: usize, port: u32) -> String {
    format!("dqf{b}p{port}")
}

/// Builds every bridge with its planned port numbers, the links between them and the hosts.
fn build(shape: &Shape) -> Vec<Bridge> {
    let ports = Ports::new(shape);
    let mut bridges: Vec<Bridge> = shape.switches().into_iter().map(Bridge::Fabric).collect();
    bridges.extend((0..shape.readout_units()).map(|r| Bridge::Readout(ReadoutId(r))));
    let index = |b: Bridge| bridges.iter().position(|&x| x == b).unwrap();
    for b in &bridges {
        let name = b.to_string();
        sh(&["ovs-vsctl", "add-br", &name, "--", "set", "bridge", &name, "datapath_type=netdev", "fail_mode=secure"]);
    }
    for (bi, &b) in bridges.iter().enumerate() {
        for (port, peer) in ports.of(b) {
            let here = ifname(bi, port);
            match peer {
                Peer::Bridge(other, oport) if index(other) > bi => {
                    let there = ifname(index(other), oport);
                    sh(&["ip", "link", "add", &here, "type", "veth", "peer", "name", &there]);
                    for (br, dev, p) in [(b, &here, port), (other, &there, oport)] {
                        attach(&br.to_string(), dev, p);
                    }
                }
                Peer::Node(n) => {
                    let ns = ns_node(n.0);
                    sh(&["ip", "netns", "add", &ns]);
                    sh(&["ip", "link", "add", &here, "type", "veth", "peer", "name", "eth0", "netns", &ns]);
                    attach(&b.to_string(), &here, port);
                    host(&ns, "eth0", node_ip(n));
                }
                Peer::ReadoutHost(r) => {
                    // The bridge's own interface is the readout host's: moved into its namespace.
                    let ns = ns_readout(r.0);
                    sh(&["ip", "netns", "add", &ns]);
                    let tap = b.to_string();
                    wait_for_link(&tap);
                    sh(&["ip", "link", "set", &tap, "netns", &ns]);
                    host(&ns, &tap, readout_ip(r));
                }
                _ => {}
            }
        }
    }
    bridges
}

fn attach(bridge: &str, dev: &str, port: u32) {
    let req = format!("ofport_request={port}");
    sh(&["ovs-vsctl", "add-port", bridge, dev, "--", "set", "interface", dev, &req]);
    sh(&["ip", "link", "set", dev, "up"]);
    netns::offloads_off(dev).unwrap();
}

fn wait_for_link(dev: &str) {
    wait_for(&format!("/sys/class/net/{dev}"));
}

fn host(ns: &str, dev: &str, ip: std::net::Ipv4Addr) {
    sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
    sh(&["ip", "-n", ns, "addr", "add", &format!("{ip}/32"), "dev", dev]);
    let (ns2, dev2) = (ns.to_string(), dev.to_string());
    netns::within(&ns2, move || netns::offloads_off(&dev2)).unwrap();
}

/// /32 routes and static neighbours: every node knows every readout unit's MAC and back.
fn neighbours(shape: &Shape) {
    let mac = |ns: &str, dev: &str| {
        let out = sh(&["ip", "-n", ns, "-br", "link", "show", dev]);
        out.split_whitespace().nth(2).unwrap().to_string()
    };
    for r in 0..shape.readout_units() {
        for n in 0..shape.nodes() {
            let (rns, nns, rdev) = (ns_readout(r), ns_node(n), format!("ru{r}"));
            let (rip, nip) = (readout_ip(ReadoutId(r)).to_string(), node_ip(NodeId(n)).to_string());
            sh(&["ip", "-n", &rns, "route", "replace", &format!("{nip}/32"), "dev", &rdev]);
            sh(&[
                "ip",
                "-n",
                &rns,
                "neigh",
                "replace",
                &nip,
                "lladdr",
                &mac(&nns, "eth0"),
                "dev",
                &rdev,
                "nud",
                "permanent",
            ]);
            sh(&["ip", "-n", &nns, "route", "replace", &format!("{rip}/32"), "dev", "eth0"]);
            sh(&[
                "ip",
                "-n",
                &nns,
                "neigh",
                "replace",
                &rip,
                "lladdr",
                &mac(&rns, &rdev),
                "dev",
                "eth0",
                "nud",
                "permanent",
            ]);
        }
    }
}

/// Writes every bridge's rules and makes them its whole flow table.
fn install(shape: &Shape, tables: &BTreeMap<Bridge, Vec<rules::Rule>>, bridges: &[Bridge]) {
    for b in bridges {
        let file = PathBuf::from(RUN_DIR).join(format!("{b}.flows"));
        let empty = Vec::new();
        std::fs::write(&file, rules::flows_file(shape, *b, tables.get(b).unwrap_or(&empty))).unwrap();
        sh(&["ovs-ofctl", "replace-flows", &b.to_string(), file.to_str().unwrap()]);
    }
}

/// A control network beside the fabric for the supervisor's messages, which the plan's rules do
/// not carry (a DAQ's control traffic has a network of its own): a Linux bridge joining every
/// host's `ctl0`, 10.89.0.0/24, the supervisor at 10.89.0.1 in namespace `dqf-sup`.
fn control_network(shape: &Shape) {
    sh(&["ip", "netns", "add", "dqf-sup"]);
    sh(&["ip", "link", "add", "dqfctl", "type", "bridge"]);
    sh(&["ip", "link", "set", "dqfctl", "up"]);
    let hosts = std::iter::once(("dqf-sup".to_string(), 1))
        .chain((0..shape.readout_units()).map(|r| (ns_readout(r), 10 + r)))
        .chain((0..shape.nodes()).map(|n| (ns_node(n), 100 + n)));
    for (i, (ns, last)) in hosts.enumerate() {
        let root_end = format!("dqfk{i}");
        sh(&["ip", "link", "add", &root_end, "type", "veth", "peer", "name", "ctl0", "netns", &ns]);
        sh(&["ip", "link", "set", &root_end, "master", "dqfctl", "up"]);
        sh(&["ip", "-n", &ns, "addr", "add", &format!("10.89.0.{last}/24"), "dev", "ctl0"]);
        sh(&["ip", "-n", &ns, "link", "set", "ctl0", "up"]);
        sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
    }
}

/// Starts `daqnet role ROLE --scenario FILE ARGS` inside namespace `ns`.
fn role(guard: &mut Cleanup, ns: &str, role: &str, file: &Path, args: &[&str]) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_daqnet"));
    cmd.args(["role", role, "--scenario", file.to_str().unwrap()]).args(args);
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    netns::place(&mut cmd, ns).unwrap();
    guard.roles.push(cmd.spawn().unwrap());
}

/// Every node fetches `BYTES` from every readout unit (the node connects, as a collector does;
/// the readout unit answers from port 7100). Returns the bytes each node received from each.
fn exchange(shape: &Shape) -> Vec<Vec<usize>> {
    let (readouts, nodes) = (shape.readout_units(), shape.nodes());
    let servers: Vec<_> = (0..readouts)
        .map(|r| {
            std::thread::spawn(move || {
                netns::within(&ns_readout(r), move || {
                    let l = TcpListener::bind((readout_ip(ReadoutId(r)), READOUT_PORT))?;
                    l.set_nonblocking(true)?;
                    let deadline = Instant::now() + Duration::from_secs(20);
                    for _ in 0..nodes {
                        let mut c = loop {
                            match l.accept() {
                                Ok((c, _)) => break c,
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                                    std::thread::sleep(Duration::from_millis(10))
                                }
                                Err(e) => return Err(e.into()),
                            }
                        };
                        c.set_nonblocking(false)?;
                        c.set_write_timeout(Some(Duration::from_secs(10)))?;
                        c.write_all(&vec![7u8; BYTES])?;
                    }
                    Ok(())
                })
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let got: Vec<Vec<usize>> = (0..nodes)
        .map(|n| {
            netns::within(&ns_node(n), move || {
                let mut per = Vec::new();
                for r in 0..readouts {
                    let to = SocketAddr::from((readout_ip(ReadoutId(r)), READOUT_PORT));
                    let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
                    c.set_read_timeout(Some(Duration::from_secs(10)))?;
                    let mut buf = Vec::new();
                    c.read_to_end(&mut buf)?;
                    per.push(buf.len());
                }
                Ok(per)
            })
            .unwrap()
        })
        .collect();
    for s in servers {
        s.join().unwrap().unwrap();
    }
    got
}

/// Packets each spine sent towards each node (its `nw_dst=<node>` rules' counters).
fn spine_packets(shape: &Shape) -> BTreeMap<(u32, u32, u32), u64> {
    let mut m = BTreeMap::new();
    for p in 0..shape.planes {
        for s in 0..shape.spines {
            let br = Switch::Spine(Plane(p), Spine(s)).to_string();
            for line in sh(&["ovs-ofctl", "dump-flows", &br]).lines() {
                let packets = line.split("n_packets=").nth(1).and_then(|t| t.split(',').next()?.parse::<u64>().ok());
                for n in 0..shape.nodes() {
                    if line.contains(&format!("nw_dst={},", node_ip(NodeId(n))))
                        || line.contains(&format!("nw_dst={} ", node_ip(NodeId(n))))
                    {
                        *m.entry((p, s, n)).or_default() += packets.unwrap_or(0);
                    }
                }
            }
        }
    }
    m
}

#[test]
fn planned_rules_carry_every_flow_and_the_event_builder_survives_a_spine_failure() {
    if !common::root("Open vSwitch bridges in network namespaces") {
        return;
    }
    let deps =
        Command::new("scripts/testbed-deps.sh").current_dir(env!("CARGO_MANIFEST_DIR").to_owned() + "/../..").status();
    assert!(deps.is_ok_and(|s| s.success()), "scripts/testbed-deps.sh failed");
    clean();
    let mut cleanup = Cleanup::default();
    let sc = parse_str(SCENARIO, "ovs", &[]).unwrap();
    let shape = Shape::of(&sc).unwrap();
    let mut controller = Controller::new(&shape, daqnet_core::scenario::Assignment::Controller, 0).unwrap();
    start_ovs(&mut cleanup);
    let bridges = build(&shape);
    neighbours(&shape);
    install(&shape, &rules::rules(&shape, controller.placement()).unwrap(), &bridges);

    let got = exchange(&shape);
    assert!(got.iter().flatten().all(|&b| b == BYTES), "every node got everything from every readout unit: {got:?}");
    // 4 collectors on 4 (plane, spine) pairs: each spine carries one collector's traffic from
    // the other pod, and no other collector's.
    on_planned_spines(&shape, controller.placement());

    // The real event builder through the fabric: the supervisor on the control network, the
    // collectors pulling fragments from the readout units across the planes and spines.
    control_network(&shape);
    let out = out_dir("fabric-ovs");
    std::fs::create_dir_all(&*out).unwrap();
    let file = out.join("scenario.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let report_dir = out.join("run");
    let base: u64 = spine_packets(&shape).values().sum();
    role(&mut cleanup, "dqf-sup", "supervisor", &file, &["--out", report_dir.to_str().unwrap()]);
    for r in 0..shape.readout_units() {
        role(&mut cleanup, &ns_readout(r), "readout", &file, &["--index", &r.to_string()]);
    }
    for n in 0..shape.nodes() {
        role(&mut cleanup, &ns_node(n), "collector", &file, &["--index", &n.to_string()]);
    }
    // Once events flow, the spine carrying node 0's traffic fails: its links go down; the
    // controller hears of it, re-plans, and the new rules replace the old on every bridge.
    let t0 = Instant::now();
    while spine_packets(&shape).values().sum::<u64>() < base + 20_000 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the event builder never got going");
        std::thread::sleep(Duration::from_millis(50));
    }
    let route = planned_route(&shape, controller.placement(), 0);
    let (plane, spine) = (route.plane, route.spine.expect("node 0 has readout units in the other pod"));
    let dead = Bridge::Fabric(Switch::Spine(plane, spine));
    let t_fail = Instant::now();
    let spine_index = bridges.iter().position(|&b| b == dead).unwrap();
    for (port, _) in Ports::new(&shape).of(dead) {
        sh(&["ip", "link", "set", &ifname(spine_index, port), "down"]);
    }
    // The controller learns of it as an SDN controller does: from the switches' port status
    // (here read with `ovs-ofctl dump-ports-desc`), not from the test.
    let mut down = Vec::new();
    while down.len() < shape.pods as usize {
        assert!(t_fail.elapsed() < Duration::from_secs(5), "Open vSwitch never reported the ports down: {down:?}");
        down = leaf_uplinks_down(&shape, &bridges);
    }
    assert!(down.iter().all(|e| matches!(e, Element::LeafUplink(p, _, s) if (*p, *s) == (plane, spine))), "{down:?}");
    for e in down {
        controller.on_down(0, e);
    }
    let moved = controller.poll(0).expect("due at once").unwrap();
    assert!(!moved.is_empty());
    install(&shape, &rules::rules(&shape, controller.placement()).unwrap(), &bridges);
    let rerouted = t_fail.elapsed();
    assert!(rerouted < Duration::from_secs(1), "rerouted in {rerouted:?}");

    let status = wait_exit(&mut cleanup.roles[0], Duration::from_secs(120));
    assert!(status.success(), "the supervisor failed: {status}");
    let report = report(&report_dir);
    assert_eq!(report["events_built"], 600, "{report}");
    let not_built = &report["events_not_built"];
    assert_eq!((not_built["timed_out"].as_u64(), not_built["lost"].as_u64()), (Some(0), Some(0)), "{report}");
    assert!(report.get("faults").is_none_or(|f| f.as_array().unwrap().is_empty()), "{report}");
    on_planned_spines(&shape, controller.placement());
    eprintln!(
        "event builder through Open vSwitch: {} events, {:.0} Mb/s, p99 {:.1} ms, {} timeouts; {} flows rerouted in {rerouted:?}",
        report["events_built"],
        report["goodput_bps"].as_f64().unwrap() / 1e6,
        report["latency_ms"]["p99"].as_f64().unwrap(),
        report["tcp"]["timeouts"],
        moved.len()
    );
}

/// The leaves' links to spines that Open vSwitch reports down (`LINK_DOWN`), as elements.
fn leaf_uplinks_down(shape: &Shape, bridges: &[Bridge]) -> Vec<Element> {
    let ports = Ports::new(shape);
    let mut down = Vec::new();
    for &b in bridges {
        let Bridge::Fabric(Switch::Leaf(plane, pod)) = b else { continue };
        let desc = sh(&["ovs-ofctl", "dump-ports-desc", &b.to_string()]);
        // Each port is a line ` N(name): addr:…` followed by indented details, `state:` among them.
        let mut port = None;
        for line in desc.lines() {
            if !line.starts_with("  ") {
                port = line.trim().split('(').next().and_then(|n| n.parse::<u32>().ok());
            } else if line.contains("state:") && line.contains("LINK_DOWN") {
                if let Some(Peer::Bridge(Bridge::Fabric(Switch::Spine(_, s)), _)) = port.and_then(|n| ports.peer(b, n))
                {
                    down.push(Element::LeafUplink(plane, pod, s));
                }
            }
        }
    }
    down
}

/// The route of node `n`'s flows from the other pod.
fn planned_route(shape: &Shape, placement: &daqnet_fabric::assign::Placement, n: u32) -> daqnet_fabric::Route {
    let (_, _, route) = placement
        .flows()
        .find(|&(r, node, _)| node.0 == n && shape.pod_of_readout(r) != shape.pod_of_node(node))
        .unwrap();
    route
}

/// Every collector's traffic from the other pod crossed its planned spine, and no other.
fn on_planned_spines(shape: &Shape, placement: &daqnet_fabric::assign::Placement) {
    let seen = spine_packets(shape);
    for n in 0..shape.nodes() {
        let route = planned_route(shape, placement, n);
        for p in 0..shape.planes {
            for s in 0..shape.spines {
                let on = seen.get(&(p, s, n)).copied().unwrap_or(0);
                let here = route.plane.0 == p && route.spine == Some(Spine(s));
                assert_eq!(on > 0, here, "node {n}: {on} packets on p{p}-spine{s}, planned {route:?}: {seen:?}");
            }
        }
    }
}
