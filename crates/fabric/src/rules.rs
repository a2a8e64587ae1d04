//! OpenFlow rules that make a fabric's switches carry every flow on its planned route, in
//! `ovs-ofctl add-flows` format, as [LOSSLESS] §III-A and §V-C program them: IP-only forwarding
//! (/32 addresses, no ARP, no MAC learning), flows matched on IP addresses and TCP ports.
//!
//! Every readout unit has its own bridge (`ru<R>`), as every host of the paper's prototype ran
//! Open vSwitch, so that the controller chooses its plane. A node hangs off its rack's switch,
//! which chooses the plane of the node's requests and acknowledgements.
//!
//! How the rules are made: each flow is walked along its route in both directions (event data
//! from the readout unit; requests and acknowledgements back), giving every bridge on the way a
//! decision "a packet from A to B leaves by port P". A bridge where every packet to B leaves by
//! the same port gets one rule per destination (`ip,nw_dst=B`); where they differ (ECMP spreads
//! one collector's flows) it gets one rule per flow (`tcp,nw_src=A,nw_dst=B,tp_src=…`).
//!
//! On a daqring tier ([LOSSLESS] §III-A.1), data for a collector first goes to that collector's
//! daqring port, and a higher-priority rule sends what comes out of the ring to the egress: the
//! paper's two rules per collector. The second rule must outrank the first, or packets would
//! circle through the ring forever; [`check`] follows every packet through the finished tables
//! and refuses rules that loop, drop or deliver to the wrong host.

use crate::assign::{Placement, Route};
use crate::shape::{Plane, Pod, Rack, Shape, Spine, Switch};
use crate::PlanError;
use daqnet_core::ids::{NodeId, ReadoutId};
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

/// TCP port every readout unit serves data on (the testbed's readout port).
pub const READOUT_PORT: u16 = 7100;

/// A readout unit's address (/32, as the testbed numbers hosts).
pub fn readout_ip(r: ReadoutId) -> Ipv4Addr {
    host_ip(16, r.0)
}

/// A node's address (/32).
pub fn node_ip(n: NodeId) -> Ipv4Addr {
    host_ip(8, n.0)
}

fn host_ip(third: u32, i: u32) -> Ipv4Addr {
    Ipv4Addr::new(10, 88, (third + i / 250) as u8, (i % 250 + 1) as u8)
}

/// A bridge that gets rules: a fabric switch, or a readout unit's own bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bridge {
    /// A leaf, spine or rack switch.
    Fabric(Switch),
    /// The bridge on readout unit `r`'s host, with one uplink per plane it reaches.
    Readout(ReadoutId),
}

impl fmt::Display for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Bridge::Fabric(s) => s.fmt(f),
            Bridge::Readout(r) => write!(f, "ru{}", r.0),
        }
    }
}

/// What is on the other side of a bridge's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Another bridge, arriving on its port.
    Bridge(Bridge, u32),
    /// The host stack of a readout unit (its bridge's `LOCAL` port).
    ReadoutHost(ReadoutId),
    /// A node.
    Node(NodeId),
    /// The daqring of a collector: what goes in comes back out of the same port.
    Ring(NodeId),
}

/// The OpenFlow port numbers of every bridge, fixed by the fabric's shape so that the testbed
/// can request them (`ofport_request`) and the rules can name them.
pub struct Ports<'a> {
    s: &'a Shape,
}

/// `LOCAL`: a bridge's own interface (the host stack), as OpenFlow numbers it.
pub const LOCAL: u32 = 0xfffe;

impl<'a> Ports<'a> {
    /// The ports of `shape`.
    pub fn new(s: &'a Shape) -> Ports<'a> {
        Ports { s }
    }

    /// Leaf: its pod's readout units, then its racks, then one port per spine.
    fn leaf_readout(&self, r: ReadoutId) -> u32 {
        1 + r.0 % self.s.readout_per_pod
    }
    fn leaf_rack(&self, k: Rack) -> u32 {
        1 + self.s.readout_per_pod + k.0 % self.s.racks_per_pod
    }
    fn leaf_spine(&self, sp: Spine) -> u32 {
        1 + self.s.readout_per_pod + self.s.racks_per_pod + sp.0
    }
    /// Spine: one port per pod's leaf.
    fn spine_leaf(&self, pod: Pod) -> u32 {
        1 + pod.0
    }
    /// Rack: its nodes, then one uplink per plane.
    fn rack_node(&self, n: NodeId) -> u32 {
        1 + n.0 % self.s.nodes_per_rack
    }
    fn rack_uplink(&self, p: Plane) -> u32 {
        1 + self.s.nodes_per_rack + p.0
    }
    /// Readout bridge: one uplink per plane (and `LOCAL`).
    fn readout_uplink(&self, p: Plane) -> u32 {
        1 + p.0
    }

    /// The regular ports of a bridge; its daqring ports (if any) follow them.
    fn regular(&self, b: Bridge) -> u32 {
        let s = self.s;
        match b {
            Bridge::Fabric(Switch::Leaf(..)) => s.readout_per_pod + s.racks_per_pod + s.spines,
            Bridge::Fabric(Switch::Spine(..)) => s.pods,
            Bridge::Fabric(Switch::Rack(_)) => s.nodes_per_rack + s.planes,
            Bridge::Readout(_) => s.planes,
        }
    }

    /// The daqring port of collector `n` on bridge `b` (whose tier has daqrings).
    pub fn ring(&self, b: Bridge, n: NodeId) -> u32 {
        self.regular(b) + 1 + n.0
    }

    /// Whether bridge `b`'s tier keeps a daqring per collector.
    pub fn has_rings(&self, b: Bridge) -> bool {
        let t = self.s.daqring;
        match b {
            Bridge::Fabric(Switch::Leaf(..)) => t.leaf,
            Bridge::Fabric(Switch::Spine(..)) => t.spine,
            Bridge::Fabric(Switch::Rack(_)) => t.rack,
            Bridge::Readout(_) => false,
        }
    }

    /// Every port of a bridge with what it leads to (ports to a plane a host does not reach
    /// are left out).
    pub fn of(&self, b: Bridge) -> Vec<(u32, Peer)> {
        let s = self.s;
        let mut v = Vec::new();
        match b {
            Bridge::Fabric(Switch::Leaf(p, pod)) => {
                for r in (pod.0 * s.readout_per_pod..(pod.0 + 1) * s.readout_per_pod).map(ReadoutId) {
                    if s.readout_reaches(r, p) {
                        v.push((self.leaf_readout(r), Peer::Bridge(Bridge::Readout(r), self.readout_uplink(p))));
                    }
                }
                for k in (pod.0 * s.racks_per_pod..(pod.0 + 1) * s.racks_per_pod).map(Rack) {
                    if s.rack_reaches(k, p) {
                        v.push((self.leaf_rack(k), Peer::Bridge(Bridge::Fabric(Switch::Rack(k)), self.rack_uplink(p))));
                    }
                }
                if s.pods > 1 {
                    for sp in s.all_spines() {
                        let spine = Bridge::Fabric(Switch::Spine(p, sp));
                        v.push((self.leaf_spine(sp), Peer::Bridge(spine, self.spine_leaf(pod))));
                    }
                }
            }
            Bridge::Fabric(Switch::Spine(p, sp)) => {
                for pod in (0..s.pods).map(Pod) {
                    v.push((
                        self.spine_leaf(pod),
                        Peer::Bridge(Bridge::Fabric(Switch::Leaf(p, pod)), self.leaf_spine(sp)),
                    ));
                }
            }
            Bridge::Fabric(Switch::Rack(k)) => {
                for n in (k.0 * s.nodes_per_rack..(k.0 + 1) * s.nodes_per_rack).map(NodeId) {
                    v.push((self.rack_node(n), Peer::Node(n)));
                }
                for p in s.all_planes().filter(|&p| s.rack_reaches(k, p)) {
                    let leaf = Bridge::Fabric(Switch::Leaf(p, s.pod_of_rack(k)));
                    v.push((self.rack_uplink(p), Peer::Bridge(leaf, self.leaf_rack(k))));
                }
            }
            Bridge::Readout(r) => {
                v.push((LOCAL, Peer::ReadoutHost(r)));
                for p in s.all_planes().filter(|&p| s.readout_reaches(r, p)) {
                    let leaf = Bridge::Fabric(Switch::Leaf(p, s.pod_of_readout(r)));
                    v.push((self.readout_uplink(p), Peer::Bridge(leaf, self.leaf_readout(r))));
                }
            }
        }
        if self.has_rings(b) {
            v.extend((0..s.nodes()).map(|n| (self.ring(b, NodeId(n)), Peer::Ring(NodeId(n)))));
        }
        v
    }

    /// Where port `port` of bridge `b` leads.
    pub fn peer(&self, b: Bridge, port: u32) -> Option<Peer> {
        if self.has_rings(b) && port > self.regular(b) && port <= self.regular(b) + self.s.nodes() {
            return Some(Peer::Ring(NodeId(port - self.regular(b) - 1)));
        }
        self.of(b).into_iter().find(|&(p, _)| p == port).map(|(_, peer)| peer)
    }
}

/// A packet of one flow: event data (readout → node) or a request or acknowledgement back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Packet {
    /// The readout unit.
    pub readout: ReadoutId,
    /// The node.
    pub node: NodeId,
    /// Towards the node (event data) or towards the readout unit.
    pub to_node: bool,
}

impl Packet {
    fn src(self) -> Ipv4Addr {
        if self.to_node {
            readout_ip(self.readout)
        } else {
            node_ip(self.node)
        }
    }
    fn dst(self) -> Ipv4Addr {
        if self.to_node {
            node_ip(self.node)
        } else {
            readout_ip(self.readout)
        }
    }
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let (r, n) = (self.readout.0, self.node.0);
        if self.to_node {
            write!(f, "event data ru{r} → node{n}")
        } else {
            write!(f, "a request ru{r} ← node{n}")
        }
    }
}

/// One OpenFlow rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    /// Higher wins.
    pub priority: u16,
    /// Only packets arriving on this port (a daqring's output).
    pub in_port: Option<u32>,
    /// Only this flow (source address and TCP ports); `None`: every packet to `dst`.
    pub flow: Option<Packet>,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Output port.
    pub output: u32,
}

/// Priorities: a flow's own rule outranks its destination's, and a daqring's output rule
/// outranks both (else a packet leaving the ring would be sent back into it).
const BY_DESTINATION: u16 = 200;
const BY_FLOW: u16 = 300;
const FROM_RING: u16 = 400;

impl Rule {
    fn matches(&self, in_port: u32, pk: Packet) -> bool {
        self.in_port.is_none_or(|p| p == in_port) && self.dst == pk.dst() && self.flow.is_none_or(|f| f == pk)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "priority={}", self.priority)?;
        if let Some(p) = self.in_port {
            write!(f, ",in_port={p}")?;
        }
        match self.flow {
            Some(pk) if pk.to_node => write!(f, ",tcp,nw_src={},nw_dst={},tp_src={READOUT_PORT}", pk.src(), pk.dst())?,
            Some(pk) => write!(f, ",tcp,nw_src={},nw_dst={},tp_dst={READOUT_PORT}", pk.src(), pk.dst())?,
            None => write!(f, ",ip,nw_dst={}", self.dst)?,
        }
        let out = if self.output == LOCAL { "LOCAL".to_string() } else { self.output.to_string() };
        write!(f, ",actions=output:{out}")
    }
}

/// The bridges a packet crosses on `route`, each with the port it leaves by.
fn hops(s: &Shape, ports: &Ports, pk: Packet, route: Route) -> Vec<(Bridge, u32)> {
    let (r, n, p) = (pk.readout, pk.node, route.plane);
    let (rpod, npod, rack) = (s.pod_of_readout(r), s.pod_of_node(n), s.rack_of(n));
    let spine = route.spine.filter(|_| rpod != npod);
    let leaf = |pod| Bridge::Fabric(Switch::Leaf(p, pod));
    let mut v = Vec::new();
    if pk.to_node {
        v.push((Bridge::Readout(r), ports.readout_uplink(p)));
        if let Some(sp) = spine {
            v.push((leaf(rpod), ports.leaf_spine(sp)));
            v.push((Bridge::Fabric(Switch::Spine(p, sp)), ports.spine_leaf(npod)));
        }
        v.push((leaf(npod), ports.leaf_rack(rack)));
        v.push((Bridge::Fabric(Switch::Rack(rack)), ports.rack_node(n)));
    } else {
        v.push((Bridge::Fabric(Switch::Rack(rack)), ports.rack_uplink(p)));
        if let Some(sp) = spine {
            v.push((leaf(npod), ports.leaf_spine(sp)));
            v.push((Bridge::Fabric(Switch::Spine(p, sp)), ports.spine_leaf(rpod)));
        }
        v.push((leaf(rpod), ports.leaf_readout(r)));
        v.push((Bridge::Readout(r), LOCAL));
    }
    v
}

/// The rules of every bridge, checked.
pub fn rules(s: &Shape, placement: &Placement) -> Result<BTreeMap<Bridge, Vec<Rule>>, PlanError> {
    let tables = build(s, placement, FROM_RING);
    check(s, placement, &tables)?;
    Ok(tables)
}

fn build(s: &Shape, placement: &Placement, from_ring: u16) -> BTreeMap<Bridge, Vec<Rule>> {
    let ports = Ports::new(s);
    // Per bridge, per destination address: the egress of each packet.
    let mut decisions: BTreeMap<Bridge, BTreeMap<Ipv4Addr, Vec<(Packet, u32)>>> = BTreeMap::new();
    for (readout, node, route) in placement.flows() {
        for to_node in [true, false] {
            let pk = Packet { readout, node, to_node };
            for (b, out) in hops(s, &ports, pk, route) {
                decisions.entry(b).or_default().entry(pk.dst()).or_default().push((pk, out));
            }
        }
    }
    let mut tables = BTreeMap::new();
    for (b, by_dst) in decisions {
        let mut v = Vec::new();
        for (dst, packets) in by_dst {
            let first = packets[0].1;
            let shared = packets.iter().all(|&(_, out)| out == first);
            let pending: Vec<(Option<Packet>, u32, Packet)> = if shared {
                vec![(None, first, packets[0].0)]
            } else {
                packets.iter().map(|&(pk, out)| (Some(pk), out, pk)).collect()
            };
            let priority = if shared { BY_DESTINATION } else { BY_FLOW };
            for (flow, output, pk) in pending {
                // Event data into a daqring tier: into the collector's ring, then out of it.
                if pk.to_node && ports.has_rings(b) {
                    let ring = ports.ring(b, pk.node);
                    v.push(Rule { priority, in_port: None, flow, dst, output: ring });
                    v.push(Rule { priority: from_ring, in_port: Some(ring), flow, dst, output });
                } else {
                    v.push(Rule { priority, in_port: None, flow, dst, output });
                }
            }
        }
        tables.insert(b, v);
    }
    tables
}

/// Follows every packet of every flow through `tables`: each must reach its host along its
/// planned route, without a loop or a miss.
pub fn check(s: &Shape, placement: &Placement, tables: &BTreeMap<Bridge, Vec<Rule>>) -> Result<(), PlanError> {
    let ports = Ports::new(s);
    for (readout, node, route) in placement.flows() {
        for to_node in [true, false] {
            follow(s, &ports, tables, Packet { readout, node, to_node }, route)?;
        }
    }
    Ok(())
}

/// One packet from its host to its destination through the tables.
fn follow(
    s: &Shape,
    ports: &Ports,
    tables: &BTreeMap<Bridge, Vec<Rule>>,
    pk: Packet,
    route: Route,
) -> Result<(), PlanError> {
    let planned: Vec<Bridge> = hops(s, ports, pk, route).into_iter().map(|(b, _)| b).collect();
    let bad = |problem: String| PlanError::BadRules { packet: pk.to_string(), problem };
    let (mut at, mut in_port) = if pk.to_node {
        (Bridge::Readout(pk.readout), LOCAL)
    } else {
        (Bridge::Fabric(Switch::Rack(s.rack_of(pk.node))), ports.rack_node(pk.node))
    };
    let mut crossed = vec![at];
    // A route crosses at most 5 bridges, each once or twice (through its ring).
    for _ in 0..=2 * planned.len() {
        let rule = tables
            .get(&at)
            .into_iter()
            .flatten()
            .filter(|r| r.matches(in_port, pk))
            .max_by_key(|r| r.priority)
            .ok_or_else(|| bad(format!("no rule matches it on {at} (port {in_port})")))?;
        match ports.peer(at, rule.output) {
            Some(Peer::Bridge(next, port)) => {
                (at, in_port) = (next, port);
                crossed.push(at);
            }
            Some(Peer::Ring(_)) => in_port = rule.output,
            Some(Peer::Node(n)) if pk.to_node && n == pk.node => return ok_route(&crossed, &planned, bad),
            Some(Peer::ReadoutHost(r)) if !pk.to_node && r == pk.readout => return ok_route(&crossed, &planned, bad),
            other => return Err(bad(format!("{at} sends it to port {} ({other:?})", rule.output))),
        }
    }
    Err(bad(format!("it loops: {}", names(&crossed))))
}

fn ok_route(crossed: &[Bridge], planned: &[Bridge], bad: impl Fn(String) -> PlanError) -> Result<(), PlanError> {
    if crossed == planned {
        Ok(())
    } else {
        Err(bad(format!("it crosses {} instead of the planned {}", names(crossed), names(planned))))
    }
}

fn names(bridges: &[Bridge]) -> String {
    bridges.iter().map(ToString::to_string).collect::<Vec<_>>().join(" → ")
}

/// One bridge's rules as an `ovs-ofctl add-flows` file, with its ports in a header.
pub fn flows_file(s: &Shape, b: Bridge, rules: &[Rule]) -> String {
    let ports = Ports::new(s);
    let mut text =
        format!("# OpenFlow rules of bridge {b}, written by daqnet plan: ovs-ofctl add-flows {b} FILE\n# ports:");
    for (port, peer) in ports.of(b) {
        let name = match peer {
            Peer::Bridge(other, _) => other.to_string(),
            Peer::ReadoutHost(r) => format!("ru{} host", r.0),
            Peer::Node(n) => format!("node{}", n.0),
            Peer::Ring(n) => format!("daqring node{}", n.0),
        };
        let port = if port == LOCAL { "LOCAL".into() } else { port.to_string() };
        text.push_str(&format!(" {port}={name}"));
    }
    text.push('\n');
    for r in rules {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    text
}

/// For tests of [`check`]: rules whose daqring output rules have another priority.
#[doc(hidden)]
pub mod tests_support {
    use super::*;

    /// The rules of [`rules`] with `from_ring` as the daqring output rules' priority, unchecked.
    pub fn with_ring_priority(s: &Shape, p: &Placement, from_ring: u16) -> BTreeMap<Bridge, Vec<Rule>> {
        build(s, p, from_ring)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_print_as_ovs_ofctl_reads_them() {
        let pk = Packet { readout: ReadoutId(2), node: NodeId(3), to_node: true };
        let r = Rule { priority: BY_FLOW, in_port: None, flow: Some(pk), dst: node_ip(NodeId(3)), output: 4 };
        assert_eq!(r.to_string(), "priority=300,tcp,nw_src=10.88.16.3,nw_dst=10.88.8.4,tp_src=7100,actions=output:4");
        let back = Packet { to_node: false, ..pk };
        let r = Rule { priority: FROM_RING, in_port: Some(9), flow: None, dst: back.dst(), output: LOCAL };
        assert_eq!(r.to_string(), "priority=400,in_port=9,ip,nw_dst=10.88.16.3,actions=output:LOCAL");
    }
}
