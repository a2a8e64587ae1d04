use super::*;
use crate::shape::{Plane, Pod, Spine};
use daqnet_core::scenario::{EdgeHost, HostCpu, SwitchKind, Topology};
use daqnet_core::Scenario;

fn names(plan: &NetworkPlan, ports: &[PortId]) -> Vec<String> {
    ports.iter().map(|&p| plan.port(p).name.clone()).collect()
}

fn path_names(plan: &NetworkPlan, src: u32, dst: u32, path: u32) -> Vec<String> {
    names(plan, &plan.path(src, dst, path))
}

fn star(readout_units: u32, nodes: u32, edit: impl FnOnce(&mut Scenario)) -> (Scenario, NetworkPlan) {
    let mut s = Scenario::default();
    s.network.topology = Topology::Star;
    let mut s = s.with_defaults();
    edit(&mut s);
    let plan = NetworkPlan::build(&s.network, readout_units, nodes);
    (s, plan)
}

fn leaf_spine() -> (Scenario, NetworkPlan) {
    let s = daqnet_core::scenario::parse_str(
        r#"
        [system]
        readout_units = 4
        nodes = 4
        pus_per_node = 1
        [network]
        topology = "parallel_leaf_spine"
        [network.fabric]
        pods = 2
        planes = 2
        spines_per_plane = 2
        readout_per_pod = 2
        racks_per_pod = 1
        nodes_per_rack = 2
        rack_uplink_bps = "10G"
        spine_link_bps = "10G"
        "#,
        "t.toml",
        &[],
    )
    .expect("a valid leaf-spine");
    let plan = NetworkPlan::build(&s.network, 4, 4);
    (s, plan)
}

#[test]
fn two_tier_paths_cross_access_core_access() {
    let s = Scenario::default().with_defaults();
    let plan = NetworkPlan::build(&s.network, 160, 39);
    // ru5 -> ro0 -> core1 -> rack0 -> node3 (host 163).
    assert_eq!(path_names(&plan, 5, 163, 1), ["ru5->ro0", "ro0->core1", "core1->rack0", "rack0->node3"]);
    assert_eq!(plan.port(plan.path(5, 163, 1)[3]).buffer, PortBuffer::Dedicated(600_000));
    // 10 readout groups, 1 rack, 2 cores.
    assert_eq!(plan.switches.len(), 13);
    assert_eq!(plan.switches[0].role, SwitchRole::Core(0));
}

#[test]
fn a_host_cpu_is_a_hop_with_a_port_per_core_behind_the_edge_bus() {
    let (s, plan) = star(4, 1, |s| {
        s.network.edge = Some(EdgeHost { bus_bps: 4_000_000_000, nic_buffer_bytes: 64_000, hosts: vec![] });
        s.network.host_cpu = Some(HostCpu { cores: 3, hosts: vec!["node0".into()], ..HostCpu::default() });
    });
    let n = &s.network;
    let path = plan.path(0, 4, 0);
    assert_eq!(names(&plan, &path), ["ru0->sw", "sw->node0", "node0 nic", "node0 core0"]);
    let port = |i: usize| plan.port(path[i]);
    // The host's stack latency moves from the bus to the cores; the bus hands frames on at once.
    assert_eq!((port(1).delay_ns, port(2).delay_ns, port(3).delay_ns), (n.link_delay_ns, 0, n.host_delay_ns));
    assert!(matches!(port(2).peer, Vertex::Switch(s) if plan.switches[s.0 as usize].role == SwitchRole::Cpu));
    assert_eq!(plan.cpus.len(), 1, "only node0");
    let cpu = &plan.cpus[0];
    assert_eq!(cpu.at, Vertex::Host(HostId(4)));
    let cores: Vec<&str> = cpu.cores.iter().map(|&p| plan.port(p).name.as_str()).collect();
    assert_eq!(cores, ["node0 core0", "node0 core1", "node0 core2"]);
    assert!(cpu.cores.iter().all(|&p| plan.port(p).from == Vertex::Switch(cpu.hop) && !plan.port(p).on_switch));
    // Towards a readout unit nothing changes.
    assert_eq!(path_names(&plan, 4, 0, 0), ["node0->sw", "sw->ru0", "ru0 nic"]);
}

#[test]
fn star_has_one_switch() {
    let (_, plan) = star(4, 1, |_| {});
    assert_eq!(path_names(&plan, 0, 4, 0), ["ru0->sw", "sw->node0"]);
    assert_eq!(plan.switches.len(), 1);
    let nic = plan.port(PortId(plan.nic(0, 0)));
    assert_eq!((nic.from, nic.to, nic.on_switch), (Vertex::Host(HostId(0)), Vertex::Switch(SwitchId(0)), false));
}

#[test]
fn a_rate_limited_daqring_and_a_slow_edge_bus_are_hops_on_the_path() {
    let (s, plan) = star(4, 1, |s| {
        s.network.edge = Some(EdgeHost { bus_bps: 4_000_000_000, nic_buffer_bytes: 64_000, hosts: vec![] });
        let sw = s.network.switch.as_mut().expect("a star has a switch");
        sw.kind = SwitchKind::Daqring;
        sw.daqring.burst_frames = 2;
        sw.daqring.poll_cycle_ns = 10_000;
    });
    let n = &s.network;
    let path = plan.path(0, 4, 0);
    assert_eq!(names(&plan, &path), ["ru0->sw", "sw->node0 ring node0", "sw->node0", "node0 nic"]);
    let port = |i: usize| plan.port(path[i]);
    // Two frames of 1538 wire bytes per 10 µs: 2 × 12,304 bits / 10 µs.
    assert_eq!(port(1).rate_bps, 2_460_800_000);
    assert_eq!(port(1).shaper_burst_ns, Some(10_000));
    let queue = s.network.switch.as_ref().expect("a star has a switch").daqring.queue_bytes;
    assert_eq!(port(1).buffer, PortBuffer::Dedicated(queue));
    // The host's stack latency moves from the switch port to the NIC's hop.
    assert_eq!((port(2).delay_ns, port(3).delay_ns), (n.link_delay_ns, n.host_delay_ns));
    assert_eq!((port(3).rate_bps, port(3).buffer), (4_000_000_000, PortBuffer::Dedicated(64_000)));
    assert_eq!(plan.edge_ports.len(), 5, "every host of a star is an edge host");
    // The switch port's link still leads to the host; its frames arrive at the bus.
    assert_eq!(port(2).to, Vertex::Host(HostId(4)));
    assert!(matches!(port(2).peer, Vertex::Switch(s) if plan.switches[s.0 as usize].role == SwitchRole::Bus));
    // Towards a readout unit: its own ring and NIC.
    assert_eq!(path_names(&plan, 4, 0, 0), ["node0->sw", "sw->ru0 ring ru0", "sw->ru0", "ru0 nic"]);
}

#[test]
fn shared_pools_take_consecutive_ports_in_order() {
    let (_, plan) = star(5, 1, |s| {
        s.network.switch.as_mut().expect("a star has a switch").buffer =
            daqnet_core::scenario::BufferConfig::Shared { pool_bytes: 9_000, ports_per_pool: 4, port_cap_bytes: 5_000 };
    });
    assert_eq!(plan.pools.len(), 2, "six switch ports, four to a pool");
    assert_eq!(plan.pools[0].capacity, 9_000);
    assert_eq!(names(&plan, &plan.pools[1].members), ["sw->ru4", "sw->node0"]);
    assert_eq!(plan.port(plan.pools[1].members[0]).buffer, PortBuffer::Shared { pool: PoolId(1), cap: 5_000 });
}

#[test]
fn leaf_spine_paths_follow_the_placement() {
    let (_, plan) = leaf_spine();
    let placement = plan.placement().expect("a parallel leaf-spine places its flows");
    // ru0 (pod 0) to node2 (rack 1, pod 1): the planned plane and spine.
    let route = placement.route(ReadoutId(0), NodeId(2));
    let path = plan.path_of(route) as u32;
    let p = route.plane.0;
    let spine = route.spine.expect("across pods").0;
    assert_eq!(
        path_names(&plan, 0, 6, path),
        [
            format!("ru0->p{p}-leaf0"),
            format!("p{p}-leaf0->p{p}-spine{spine}"),
            format!("p{p}-spine{spine}->p{p}-leaf1"),
            format!("p{p}-leaf1->rack1"),
            "rack1->node2".to_string(),
        ]
    );
    assert_eq!(plan.conn_paths(0, (6, 0)), [path as u8; 2], "both ends take the flow's path");
}

#[test]
fn a_failed_element_owns_the_links_that_touch_it() {
    let (_, plan) = leaf_spine();
    let mut spine = names(&plan, &plan.element_ports(&Element::Spine(Plane(1), Spine(0))));
    spine.sort();
    assert_eq!(spine, ["p1-leaf0->p1-spine0", "p1-leaf1->p1-spine0", "p1-spine0->p1-leaf0", "p1-spine0->p1-leaf1"]);
    let uplink = names(&plan, &plan.element_ports(&Element::LeafUplink(Plane(0), Pod(1), Spine(1))));
    assert_eq!(uplink, ["p0-leaf1->p0-spine1", "p0-spine1->p0-leaf1"]);
    // A plane: its leaves' and spines' links, both directions, hosts' and racks' links to it.
    let plane = names(&plan, &plan.element_ports(&Element::Plane(Plane(0))));
    assert!(plane.iter().all(|n| n.contains("p0-")), "{plane:?}");
    // 4 readout links, 2 rack uplinks, 4 leaf-spine links: each both ways.
    assert_eq!(plane.len(), 2 * (4 + 2 + 4));
    assert!(plane.contains(&"rack0->p0-leaf0".to_string()) && plane.contains(&"p0-leaf0->ru0".to_string()));
}

#[test]
fn daqrings_go_down_with_their_switch_but_not_with_a_leaf_uplink() {
    let (mut s, _) = leaf_spine();
    let spine = &mut s.network.fabric.as_mut().expect("a fabric").spine;
    spine.kind = SwitchKind::Daqring;
    spine.daqring.poll_cycle_ns = 20_000;
    spine.daqring.burst_frames = 4;
    let plan = NetworkPlan::build(&s.network, 4, 4);
    let spine = names(&plan, &plan.element_ports(&Element::Spine(Plane(0), Spine(0))));
    assert!(spine.contains(&"p0-spine0->p0-leaf1 ring node2".to_string()), "{spine:?}");
    let uplink = names(&plan, &plan.element_ports(&Element::LeafUplink(Plane(0), Pod(1), Spine(0))));
    assert_eq!(uplink, ["p0-leaf1->p0-spine0", "p0-spine0->p0-leaf1"]);
}

#[test]
fn a_hosts_ports_are_its_nics_and_the_ports_towards_it() {
    let (_, plan) = leaf_spine();
    let mut ru0 = names(&plan, &plan.host_ports(HostId(0)));
    ru0.sort();
    assert_eq!(ru0, ["p0-leaf0->ru0", "p1-leaf0->ru0", "ru0->p0-leaf0", "ru0->p1-leaf0"]);
    let (_, star) = star(2, 1, |_| {});
    assert_eq!(names(&star, &star.host_ports(HostId(2))), ["node0->sw", "sw->node0"]);
}
