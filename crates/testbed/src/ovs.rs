//! A parallel leaf-spine of Open vSwitch bridges, planned without touching the system: every
//! switch of the fabric — and every readout unit's own bridge, its NIC with one port per plane
//! ([LOSSLESS] §V-C: every host of the prototype ran Open vSwitch) — is a bridge of one
//! `ovs-vswitchd` with the userspace datapath (`datapath_type=netdev`: this machine has no
//! Open vSwitch kernel module), running with its `ovsdb-server` inside the testbed's switch
//! namespace. Each link between two bridges is port — veth — wire end — wire end — veth —
//! port: the ports carry the numbers the planner's rules name (`ofport_request`), the wire ends
//! pass frames across (tc `mirred`) and hold each direction's queue (tbf at the tier's rate,
//! with the sending tier's buffer), and an XDP program on them takes every frame off
//! `ovs-vswitchd`'s socket (`ORPHAN_XDP` says why). Nodes hang off their rack's bridge by a
//! veth `fab0`; a readout unit's host interface is its bridge's own port (`LOCAL`), moved into
//! the readout unit's namespace. Hosts have /32 addresses and static neighbours: no ARP, no
//! flooding, `fail_mode=secure` — only the planned rules forward anything.
//!
//! The supervisor's messages do not cross the fabric (the plan's rules carry event data,
//! requests and acknowledgements): every host keeps its `eth0` on the testbed's Linux bridge as
//! a control network, and the data peers are reached by /32 routes through the fabric.
//!
//! Open vSwitch's own queueing is not used: its `linux-htb` QoS sets rates but no queue length
//! in bytes, and a port's buffer is what an incast study varies — so tbf does both, as in the
//! single-switch testbed.

use crate::steps::{ovs_dir, shaper, switch_queue_limit, Step, HOST_QUEUE_BYTES, SWITCH_BURST_NS};
use daqnet_core::ids::{NodeId, ReadoutId};
use daqnet_core::{Nanos, Scenario};
use daqnet_fabric::assign::{place, Placement};
use daqnet_fabric::links::Links;
use daqnet_fabric::network::{HostId, NetworkPlan, PortBuffer, PortPlan, SwitchRole, Vertex};
use daqnet_fabric::rules;
use daqnet_fabric::rules::{node_ip, readout_ip, Bridge, Peer, Ports};
use daqnet_fabric::shape::{Shape, Switch};
use daqnet_fabric::{Element, Failures, PlanError};
use std::net::Ipv4Addr;

/// The database schema Debian's `openvswitch-switch` installs.
const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// The XDP program of the wire ends (`bpf/orphan.bpf.c`): it passes every frame, and so makes
/// the kernel copy each one Open vSwitch sends into a buffer no socket owns. Otherwise a queued
/// frame stays charged to the one packet socket through which `ovs-vswitchd` sends to every
/// port (212,992 bytes, read-only in a namespace), and a send beyond it is dropped uncounted:
/// one 50 Mb/s flow lost 7 of 32,777 frames at a port whose queue never filled.
const ORPHAN_XDP: &str = include_str!("../bpf/orphan.bpf.c");

/// A node's fabric interface.
pub const NODE_DEV: &str = "fab0";

/// The fabric of a testbed.
#[derive(Debug, Clone, PartialEq)]
pub struct OvsFabric {
    /// Sizes, reach and rates.
    pub shape: Shape,
    /// How long the controller gathers port events before it re-plans, in ns.
    pub reaction_ns: Nanos,
    /// The data network the bridges emulate: every port's rate and buffer.
    pub network: NetworkPlan,
    /// The Open vSwitch run directory ([`ovs_dir`]).
    pub dir: String,
    /// Every bridge, in a fixed order: its index names its ports' interfaces.
    pub bridges: Vec<Bridge>,
    /// Where the controller places every flow before anything fails.
    pub placement: Placement,
}

/// The plan's role of a fabric switch.
fn role_of(sw: Switch) -> SwitchRole {
    match sw {
        Switch::Leaf(plane, pod) => SwitchRole::Leaf { plane: plane.0, pod: pod.0 },
        Switch::Spine(plane, spine) => SwitchRole::Spine { plane: plane.0, spine: spine.0 },
        Switch::Rack(rack) => SwitchRole::Rack(rack.0),
    }
}

/// A bridge's port: the bridge and its OpenFlow port number.
pub type BridgePort = (Bridge, u32);

/// One end of a link between two bridges, or a bridge's port to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricPort {
    /// The bridge.
    pub bridge: Bridge,
    /// Its OpenFlow port number.
    pub port: u32,
    /// The interface in the switch namespace.
    pub dev: String,
    /// The interface whose queue (tbf) holds what the port sends: the wire end facing the
    /// peer.
    pub queue_dev: String,
    /// What it leads to, as the report names it (`p0-spine1`, `node3`).
    pub peer: String,
}

impl FabricPort {
    /// Its name in the report: `p0-spine1->p0-leaf0`, `rack0->node1`.
    pub fn name(&self) -> String {
        format!("{}->{}", self.bridge, self.peer)
    }
}

impl OvsFabric {
    /// The fabric of `sc` (a valid `parallel_leaf_spine` scenario, whose data network is
    /// `network`) for testbed `id`.
    pub fn new(sc: &Scenario, network: NetworkPlan, id: &str) -> Result<OvsFabric, PlanError> {
        let f = sc.network.fabric.as_ref().expect("a parallel leaf-spine has [network.fabric]");
        let shape = Shape::of(sc)?;
        let bridges: Vec<Bridge> = shape
            .switches()
            .into_iter()
            .map(Bridge::Fabric)
            .chain((0..shape.readout_units()).map(|r| Bridge::Readout(ReadoutId(r))))
            .collect();
        let placement = place(&Links::new(&shape), &Failures::default(), f.assignment)?;
        Ok(OvsFabric {
            placement,
            shape,
            reaction_ns: f.reaction_ns,
            network,
            dir: ovs_dir(id).display().to_string(),
            bridges,
        })
    }

    /// The OpenFlow target of bridge `b` for `ovs-ofctl`: its management socket.
    pub fn target(&self, b: Bridge) -> String {
        format!("unix:{}/{b}.mgmt", self.dir)
    }

    /// `ovs-vsctl` with the testbed's database.
    fn vsctl(&self, args: &[&str]) -> Step {
        let db = format!("--db=unix:{}/db.sock", self.dir);
        run(&[&["ovs-vsctl", &db][..], args].concat())
    }

    /// The interface of port `port` of bridge `b` in the switch namespace (≤ 15 characters).
    pub fn dev(&self, b: Bridge, port: u32) -> String {
        format!("b{}p{port}", self.index(b))
    }

    /// Every bridge port with an interface in the switch namespace: links to other bridges
    /// (both ends) and rack ports to nodes.
    pub fn ports(&self) -> Vec<FabricPort> {
        let ports = Ports::new(&self.shape);
        let mut v = Vec::new();
        for &b in &self.bridges {
            for (port, peer) in ports.of(b) {
                let dev = self.dev(b, port);
                let (peer, queue_dev) = match peer {
                    Peer::Bridge(other, oport) => (other.to_string(), wire(&self.dev(other, oport))),
                    Peer::Node(n) => (n.host(), node_end(&dev)),
                    Peer::ReadoutHost(_) | Peer::Ring(_) => continue,
                };
                v.push(FabricPort { bridge: b, port, dev, queue_dev, peer });
            }
        }
        v
    }

    /// The ports of the links `element` takes down: those of the failed switches (or of the
    /// spine, for a leaf uplink), each with the port at the other end of its link.
    pub fn element_ports(&self, element: Element) -> Vec<(BridgePort, Option<BridgePort>)> {
        let rules = Ports::new(&self.shape);
        let of_switch = |sw: Switch| {
            let b = Bridge::Fabric(sw);
            rules.of(b).into_iter().map(move |(port, _)| (b, port))
        };
        let failed: Vec<BridgePort> = match element {
            Element::Plane(p) => self
                .shape
                .switches()
                .into_iter()
                .filter(|sw| matches!(sw, Switch::Leaf(q, _) | Switch::Spine(q, _) if *q == p))
                .flat_map(of_switch)
                .collect(),
            Element::Spine(p, s) => of_switch(Switch::Spine(p, s)).collect(),
            Element::LeafUplink(p, pod, s) => {
                let leaf = Bridge::Fabric(Switch::Leaf(p, pod));
                of_switch(Switch::Spine(p, s))
                    .filter(|&(b, port)| matches!(rules.peer(b, port), Some(Peer::Bridge(x, _)) if x == leaf))
                    .collect()
            }
        };
        let far = |(b, port)| match rules.peer(b, port) {
            Some(Peer::Bridge(other, oport)) => Some((other, oport)),
            _ => None,
        };
        failed.into_iter().map(|p| (p, far(p))).collect()
    }

    /// The interfaces to take down to fail `element`: the failed side's ports, and the wire end
    /// facing each neighbour — the neighbour's port loses its carrier (and reports it) but
    /// stays up, so what it still sends is dropped and counted there, as on a real link to a
    /// dead switch.
    pub fn element_devs(&self, element: Element) -> Vec<String> {
        let mut devs = Vec::new();
        for ((b, port), far) in self.element_ports(element) {
            devs.push(self.dev(b, port));
            devs.extend(far.map(|(other, oport)| wire(&self.dev(other, oport))));
        }
        devs.sort();
        devs.dedup();
        devs
    }

    /// What the controller learns from bridge `b` reporting port `port` down: a leaf's or a
    /// spine's link between them is that leaf uplink; a readout unit's or a rack's uplink to a
    /// plane is taken as the plane failing (no finer element leads there: the controller moves
    /// every flow off that plane).
    pub fn element_of_port(&self, b: Bridge, port: u32) -> Option<Element> {
        let peer = Ports::new(&self.shape).peer(b, port)?;
        match (b, peer) {
            (Bridge::Fabric(Switch::Leaf(p, pod)), Peer::Bridge(Bridge::Fabric(Switch::Spine(_, s)), _))
            | (Bridge::Fabric(Switch::Spine(p, s)), Peer::Bridge(Bridge::Fabric(Switch::Leaf(_, pod)), _)) => {
                Some(Element::LeafUplink(p, pod, s))
            }
            (
                Bridge::Readout(_) | Bridge::Fabric(Switch::Rack(_)),
                Peer::Bridge(Bridge::Fabric(Switch::Leaf(p, _)), _),
            ) => Some(Element::Plane(p)),
            _ => None,
        }
    }

    /// The bridges whose port status the controller watches: all but the spines, whose failures
    /// their leaves see.
    pub fn watched(&self) -> Vec<Bridge> {
        self.bridges.iter().copied().filter(|b| !matches!(b, Bridge::Fabric(Switch::Spine(..)))).collect()
    }

    /// The MAC address of a host's fabric interface (`02:01:` and its address), distinct from its
    /// control interface's.
    pub fn mac(ip: Ipv4Addr) -> String {
        crate::steps::mac(1, ip)
    }

    /// The plan's port through which bridge `b` sends to `peer`.
    fn port_plan(&self, b: Bridge, peer: Peer) -> &PortPlan {
        let n = &self.network;
        let vertex = |b: Bridge| match b {
            Bridge::Readout(r) => Vertex::Host(HostId(r.0)),
            Bridge::Fabric(sw) => Vertex::Switch(n.switch_with(role_of(sw)).expect("every bridge is a planned switch")),
        };
        let to = match peer {
            Peer::Bridge(other, _) => vertex(other),
            Peer::Node(node) => Vertex::Host(HostId(self.shape.readout_units() + node.0)),
            Peer::ReadoutHost(_) | Peer::Ring(_) => unreachable!("a bridge's own interface is not a link"),
        };
        n.port(n.link(vertex(b), to).expect("every link of the rules is planned"))
    }

    /// The steps that build the fabric, after the namespaces and the control network exist, in
    /// the namespaces and with the host settings of `p`.
    pub fn steps(&self, p: &FabricHosts) -> Vec<Step> {
        let mut v = self.daemon_steps(p.sw);
        for &b in &self.bridges {
            let name = b.to_string();
            let mut set = vec!["--", "set", "bridge", &name, "datapath_type=netdev", "fail_mode=secure"];
            let hw;
            if let Bridge::Readout(r) = b {
                hw = format!("other-config:hwaddr=\"{}\"", Self::mac(readout_ip(r)));
                set.push(&hw);
            }
            v.push(self.vsctl(&[&["add-br", &name][..], &set].concat()));
        }
        let ports = Ports::new(&self.shape);
        for &b in &self.bridges {
            for (port, peer) in ports.of(b) {
                v.extend(self.port_steps(p, (b, port), peer));
            }
        }
        v.extend(self.neighbours(p));
        v.extend(self.install(&self.placement, None).expect("the planner's rules for a valid fabric pass their check"));
        v
    }

    /// Open vSwitch's database and daemon in switch namespace `sw`, and the wire ends' XDP
    /// program (see `join`).
    fn daemon_steps(&self, sw: &str) -> Vec<Step> {
        let d = &self.dir;
        let file = |name: &str| format!("{d}/{name}");
        let daemon = |name: &str| {
            [format!("--pidfile={d}/{name}.pid"), format!("--unixctl={d}/{name}.ctl")].into_iter().chain([
                format!("--log-file={d}/{name}.log"),
                "--detach".into(),
                "--no-chdir".into(),
            ])
        };
        let mut v = vec![
            run(&["mkdir", "-p", d]),
            run(&["ovsdb-tool", "create", &file("conf.db"), SCHEMA]),
            Step::Write { path: file("orphan.bpf.c"), text: ORPHAN_XDP.into() },
            run(&["clang", "-O2", "-target", "bpf", "-c", &file("orphan.bpf.c"), "-o", &file("orphan.o")]),
        ];
        let mut db: Vec<String> = ["ip", "netns", "exec", sw, "ovsdb-server"].map(String::from).into();
        db.extend([file("conf.db"), format!("--remote=punix:{d}/db.sock")]);
        db.extend(daemon("ovsdb-server"));
        v.push(Step::Run(db));
        v.push(self.vsctl(&["--no-wait", "init"]));
        // OVS_RUNDIR: where it puts the bridges' management sockets (`<bridge>.mgmt`).
        let mut switchd: Vec<String> = ["ip", "netns", "exec", sw, "env"].map(String::from).into();
        switchd.extend([format!("OVS_RUNDIR={d}"), "ovs-vswitchd".into(), format!("unix:{d}/db.sock")]);
        switchd.extend(daemon("ovs-vswitchd"));
        v.push(Step::Run(switchd));
        v
    }

    /// Port `port` of bridge `b`, leading to `peer`: a link to another bridge (made once, from
    /// the bridge that comes first), a node's link, or a readout unit's host interface.
    fn port_steps(&self, p: &FabricHosts, (b, port): BridgePort, peer: Peer) -> Vec<Step> {
        let sw = p.sw;
        let mtu = p.mtu_bytes.to_string();
        let dev = self.dev(b, port);
        let mut v = Vec::new();
        match peer {
            Peer::Bridge(other, oport) if self.index(other) > self.index(b) => {
                let there = self.dev(other, oport);
                for ovs in [&dev, &there] {
                    #[rustfmt::skip]
                    v.push(run(&["ip", "-n", sw, "link", "add", ovs, "mtu", &mtu, "type", "veth", "peer", "name",
                        &wire(ovs), "mtu", &mtu]));
                }
                v.extend(self.attach(sw, b, &dev, port));
                v.extend(self.attach(sw, other, &there, oport));
                v.extend(self.join(sw, &wire(&dev), &wire(&there)));
                // Each way's queue waits at the wire end facing the receiving bridge.
                v.push(self.port_shaper(sw, (b, peer), &wire(&there), p));
                v.push(self.port_shaper(sw, (other, Peer::Bridge(b, port)), &wire(&dev), p));
            }
            Peer::Node(n) => {
                let host = p.node(n);
                let node_end = node_end(&dev);
                #[rustfmt::skip]
                v.push(run(&["ip", "link", "add", NODE_DEV, "netns", host, "address", &Self::mac(node_ip(n)),
                    "mtu", &mtu, "type", "veth", "peer", "name", &node_end, "netns", sw, "mtu", &mtu]));
                #[rustfmt::skip]
                v.push(run(&["ip", "-n", sw, "link", "add", &dev, "mtu", &mtu, "type", "veth", "peer", "name",
                    &wire(&dev), "mtu", &mtu]));
                // Offloads go off before the wire end's XDP program fixes the pair's features.
                v.extend(p.host_interface(host, NODE_DEV, node_ip(n)));
                let rate = self.port_plan(b, peer).rate_bps;
                v.push(shaper(host, NODE_DEV, rate, p.host_burst_ns, HOST_QUEUE_BYTES, p.mtu_bytes));
                v.extend(self.attach(sw, b, &dev, port));
                v.extend(self.join(sw, &wire(&dev), &node_end));
                v.push(self.port_shaper(sw, (b, peer), &node_end, p));
            }
            Peer::ReadoutHost(r) => {
                // The bridge's own interface becomes the readout unit's.
                let host = p.readout(r);
                let tap = b.to_string();
                v.push(run(&["ip", "-n", sw, "link", "set", &tap, "netns", host]));
                v.push(run(&["ip", "-n", host, "link", "set", &tap, "mtu", &mtu]));
                v.extend(p.host_interface(host, &tap, readout_ip(r)));
            }
            _ => {}
        }
        v
    }

    /// The steps that make every bridge's flow table the rules of `placement`: a flow file per
    /// bridge, then `ovs-ofctl replace-flows` (which leaves unchanged rules and their counters
    /// alone). With the `previous` placement, only the bridges whose rules differ.
    pub fn install(&self, placement: &Placement, previous: Option<&Placement>) -> Result<Vec<Step>, PlanError> {
        let tables = rules::rules(&self.shape, placement)?;
        let before = previous.map(|p| rules::rules(&self.shape, p)).transpose()?;
        let mut v = Vec::new();
        for &b in &self.bridges {
            let table = tables.get(&b).map_or(&[][..], |t| &t[..]);
            if before.as_ref().is_some_and(|t| t.get(&b).map_or(&[][..], |t| &t[..]) == table) {
                continue;
            }
            let path = self.flows_path(b);
            v.push(Step::Write { path: path.clone(), text: rules::flows_file(&self.shape, b, table) });
            v.push(run(&["ovs-ofctl", "replace-flows", &self.target(b), &path]));
        }
        Ok(v)
    }

    /// The flow file of bridge `b`.
    pub fn flows_path(&self, b: Bridge) -> String {
        format!("{}/{b}.flows", self.dir)
    }

    fn index(&self, b: Bridge) -> usize {
        self.bridges.iter().position(|&x| x == b).expect("a bridge of this fabric")
    }

    /// Joins two wire ends: what arrives on one leaves by the other (tc `mirred` redirect), so
    /// that a link is bridge port — veth — wire end — wire end — veth — bridge port, and its
    /// queues (tbf) sit on the wire ends. The XDP program on each end takes the frames
    /// Open vSwitch sends off its socket's account ([`ORPHAN_XDP`]).
    fn join(&self, sw: &str, a: &str, b: &str) -> Vec<Step> {
        let obj = format!("{}/orphan.o", self.dir);
        let mut v = Vec::new();
        for (from, to) in [(a, b), (b, a)] {
            v.push(run(&["ip", "-n", sw, "link", "set", from, "up"]));
            v.push(Step::OffloadsOff { ns: sw.into(), dev: from.into() });
            v.push(run(&["ip", "-n", sw, "link", "set", "dev", from, "xdp", "obj", &obj, "sec", "xdp"]));
            v.push(run(&["tc", "-n", sw, "qdisc", "add", "dev", from, "clsact"]));
            #[rustfmt::skip]
            v.push(run(&["tc", "-n", sw, "filter", "add", "dev", from, "ingress", "protocol", "all", "u32", "match",
                "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", to]));
        }
        v
    }

    /// Adds interface `dev` to bridge `b` as port `port`, up, offloads off.
    fn attach(&self, sw: &str, b: Bridge, dev: &str, port: u32) -> Vec<Step> {
        let req = format!("ofport_request={port}");
        vec![
            self.vsctl(&["add-port", &b.to_string(), dev, "--", "set", "interface", dev, &req]),
            run(&["ip", "-n", sw, "link", "set", dev, "up"]),
            Step::OffloadsOff { ns: sw.into(), dev: dev.into() },
        ]
    }

    /// The queue of bridge `b`'s port towards `peer`: the plan's rate and buffer; a readout
    /// unit's uplinks are its NICs, paced as hosts are.
    fn port_shaper(&self, sw: &str, (b, peer): (Bridge, Peer), dev: &str, p: &FabricHosts) -> Step {
        let port = self.port_plan(b, peer);
        // A readout unit's bridge is its NIC: a host's queue.
        let bytes = match port.buffer {
            PortBuffer::Unlimited => HOST_QUEUE_BYTES,
            PortBuffer::Dedicated(bytes) => bytes,
            PortBuffer::Shared { .. } => unreachable!("the testbed's check refuses shared pools"),
        };
        let (burst, limit) = match b {
            Bridge::Readout(_) => (p.host_burst_ns, bytes),
            _ => (SWITCH_BURST_NS, switch_queue_limit(bytes, p.mtu_bytes)),
        };
        shaper(sw, dev, port.rate_bps, burst, limit, p.mtu_bytes)
    }

    /// /32 routes and permanent neighbours between every readout unit and every node, through
    /// the fabric.
    fn neighbours(&self, p: &FabricHosts) -> Vec<Step> {
        let mut v = Vec::new();
        for r in (0..self.shape.readout_units()).map(ReadoutId) {
            for n in (0..self.shape.nodes()).map(NodeId) {
                let tap = Bridge::Readout(r).to_string();
                for (ns, dev, here, there) in [
                    (p.readout(r), tap.as_str(), readout_ip(r), node_ip(n)),
                    (p.node(n), NODE_DEV, node_ip(n), readout_ip(r)),
                ] {
                    let mut route: Vec<String> = ["ip", "-n", ns, "route", "replace"].map(String::from).into();
                    route.extend([format!("{there}/32"), "dev".into(), dev.into(), "src".into(), here.to_string()]);
                    route.extend(p.route_options.iter().cloned());
                    v.push(Step::Run(route));
                    #[rustfmt::skip]
                    v.push(run(&["ip", "-n", ns, "neigh", "replace", &there.to_string(), "lladdr", &Self::mac(there),
                        "dev", dev, "nud", "permanent"]));
                }
            }
        }
        v
    }
}

/// What the fabric's steps need of the rest of the testbed.
pub struct FabricHosts<'a> {
    /// The switch namespace (where `ovs-vswitchd` runs).
    pub sw: &'a str,
    /// Namespace of each readout unit, by index.
    pub readouts: Vec<&'a str>,
    /// Namespace of each node, by index.
    pub nodes: Vec<&'a str>,
    /// IP MTU.
    pub mtu_bytes: u32,
    /// Host egress bucket, ns at line rate.
    pub host_burst_ns: u64,
    /// Options of every data route (`rto_min 200ms initcwnd 10 …`).
    pub route_options: Vec<String>,
}

impl FabricHosts<'_> {
    fn readout(&self, r: ReadoutId) -> &str {
        self.readouts[r.0 as usize]
    }
    fn node(&self, n: NodeId) -> &str {
        self.nodes[n.0 as usize]
    }

    /// Address and link state of a host's fabric interface.
    fn host_interface(&self, ns: &str, dev: &str, ip: Ipv4Addr) -> Vec<Step> {
        vec![
            run(&["ip", "-n", ns, "addr", "add", &format!("{ip}/32"), "dev", dev]),
            run(&["ip", "-n", ns, "link", "set", dev, "up"]),
            Step::OffloadsOff { ns: ns.into(), dev: dev.into() },
        ]
    }
}

/// The wire end of a bridge port's interface (`b3p2` → `w3p2`).
fn wire(dev: &str) -> String {
    format!("w{}", &dev[1..])
}

/// The node's end of a rack port's link, in the switch namespace (`b3p2` → `n3p2`): the peer of
/// the node's `fab0`.
fn node_end(dev: &str) -> String {
    format!("n{}", &dev[1..])
}

fn run(args: &[&str]) -> Step {
    Step::Run(args.iter().map(|s| s.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use crate::plan::{Step, TestbedPlan, TestbedSwitch};
    use daqnet_fabric::rules::Bridge;
    use daqnet_fabric::shape::{Plane, Pod, Spine, Switch};
    use daqnet_fabric::Element;

    fn plan() -> TestbedPlan {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/fabric/testbed.toml"))
            .unwrap();
        let sc = daqnet_core::scenario::parse_str(&text, "testbed.toml", &[]).unwrap();
        TestbedPlan::new(&sc, "t1").unwrap()
    }

    fn commands(steps: &[Step]) -> Vec<String> {
        steps.iter().filter_map(|s| if let Step::Run(a) = s { Some(a.join(" ")) } else { None }).collect()
    }

    #[test]
    fn open_vswitch_runs_in_the_switch_namespace_with_the_planned_ports_rates_and_rules() {
        let p = plan();
        let TestbedSwitch::Fabric(f) = &p.switch else { panic!("a fabric") };
        let all = commands(&p.steps());
        let has = |c: &str| assert!(all.iter().any(|x| x == c), "missing `{c}`");
        let d = "/run/daqnet/testbed/t1.ovs";
        has(&format!(
            "ip netns exec daqnet-t1-sw env OVS_RUNDIR={d} ovs-vswitchd unix:{d}/db.sock --pidfile={d}/ovs-vswitchd.pid \
             --unixctl={d}/ovs-vswitchd.ctl --log-file={d}/ovs-vswitchd.log --detach --no-chdir"
        ));
        let bridges = all.iter().filter(|c| c.contains(" add-br ")).count();
        assert_eq!(bridges, 14, "4 leaves, 4 spines, 2 racks, 4 readout units");
        has(&format!(
            "ovs-vsctl --db=unix:{d}/db.sock add-br ru0 -- set bridge ru0 datapath_type=netdev fail_mode=secure \
             other-config:hwaddr=\"02:01:0a:58:10:01\""
        ));
        // A spine's port to leaf 0: 50 Mb/s, the spine tier's 512 kB (as tbf counts it,
        // `switch_queue_limit`), queued at the wire end facing the leaf; a readout unit's uplink
        // is its NIC, with a host's queue.
        let ports = f.ports();
        let port = |b: Bridge, peer: &str| ports.iter().find(|p| p.bridge == b && p.peer == peer).unwrap().clone();
        let spine = port(Bridge::Fabric(Switch::Spine(Plane(0), Spine(0))), "p0-leaf0");
        let leaf_end = f.dev(Bridge::Fabric(Switch::Leaf(Plane(0), Pod(0))), 4);
        assert_eq!(spine.dev, f.dev(spine.bridge, 1));
        assert_eq!(spine.queue_dev, format!("w{}", &leaf_end[1..]));
        let q = &spine.queue_dev;
        has(&format!(
            "tc -n daqnet-t1-sw qdisc replace dev {q} root handle 1: tbf rate 50000000bit burst 3076 limit 509136 overhead 24"
        ));
        let uplink = port(Bridge::Readout(daqnet_core::ReadoutId(0)), "p0-leaf0").queue_dev;
        let nic = format!("dev {uplink} root handle 1: tbf rate 50000000bit");
        assert!(all.iter().any(|c| c.contains(&nic) && c.contains("limit 4194304")), "{nic}");
        // The wire ends pass frames across and take them off Open vSwitch's socket.
        let across = format!("w{}", &spine.dev[1..]);
        has(&format!(
            "tc -n daqnet-t1-sw filter add dev {q} ingress protocol all u32 match u32 0 0 action mirred egress redirect dev {across}"
        ));
        has(&format!("ip -n daqnet-t1-sw link set dev {q} xdp obj {d}/orphan.o sec xdp"));
        has("ip -n daqnet-t1-r0 route replace 10.88.8.1/32 dev ru0 src 10.88.16.1 rto_min 200ms initcwnd 10");
        has("ip -n daqnet-t1-c0 neigh replace 10.88.16.1 lladdr 02:01:0a:58:10:01 dev fab0 nud permanent");
        // The ports exist before rules name them, and every bridge gets its table.
        let last_port = all.iter().rposition(|c| c.contains("add-port")).unwrap();
        let first_rules = all.iter().position(|c| c.starts_with("ovs-ofctl replace-flows")).unwrap();
        assert!(last_port < first_rules);
        assert_eq!(all.iter().filter(|c| c.starts_with("ovs-ofctl replace-flows")).count(), 14);
        assert!(f.install(&f.placement, Some(&f.placement)).unwrap().is_empty(), "nothing changed, nothing installed");
    }

    #[test]
    fn failures_map_to_links_and_port_status_back_to_elements() {
        let p = plan();
        let TestbedSwitch::Fabric(f) = &p.switch else { panic!("a fabric") };
        let spine = Bridge::Fabric(Switch::Spine(Plane(0), Spine(1)));
        // Leaf ports: 2 readout units, 1 rack, then spine 0 and spine 1.
        let leaf_end = |pod| format!("w{}", &f.dev(Bridge::Fabric(Switch::Leaf(Plane(0), Pod(pod))), 5)[1..]);
        let mut both = vec![f.dev(spine, 1), f.dev(spine, 2), leaf_end(0), leaf_end(1)];
        both.sort();
        assert_eq!(
            f.element_devs(Element::Spine(Plane(0), Spine(1))),
            both,
            "the spine's ports, the leaves' wire ends"
        );
        assert_eq!(f.element_devs(Element::LeafUplink(Plane(0), Pod(1), Spine(1))), [f.dev(spine, 2), leaf_end(1)]);
        // A plane: every link of its 2 leaves (2 readout units, a rack, 2 spines each) and its
        // 2 spines; a leaf-spine link is down from both sides.
        assert_eq!(f.element_ports(Element::Plane(Plane(1))).len(), 2 * 5 + 2 * 2);
        let leaf = Bridge::Fabric(Switch::Leaf(Plane(0), Pod(1)));
        assert_eq!(f.element_of_port(leaf, 5), Some(Element::LeafUplink(Plane(0), Pod(1), Spine(1))));
        assert_eq!(f.element_of_port(Bridge::Readout(daqnet_core::ReadoutId(2)), 2), Some(Element::Plane(Plane(1))));
        assert_eq!(f.element_of_port(leaf, 1), None, "a leaf's port to a readout unit is no fabric element");
        assert!(!f.watched().iter().any(|b| matches!(b, Bridge::Fabric(Switch::Spine(..)))));
    }
}
