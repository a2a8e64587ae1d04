//! The network plan: a scenario's `[network]` lowered once, without any substrate, into hosts,
//! switches and their output ports (typed ids; each port's rate, delay, buffer and shaping),
//! the forwarding that joins them, the paths a connection can take, and which ports each
//! fabric element owns. The simulator builds its ports from it, the testbed its `ip`/`tc`
//! steps; a port feature is added here once.
//!
//! Host numbering: the hosts in the order given; [`NetworkPlan::build`] makes readout unit `r`
//! host `r` and node `n` host `readout_units + n`.
//!
//! A connection's packets take one of the plan's *paths*: a core router of a two-tier network,
//! or a (plane, spine) of a parallel leaf-spine (`plane × spines + spine`), numbered so that
//! every switch forwards by destination and path alone.

mod build;
mod flow;
mod leaf_spine;

pub use flow::{FlowPlan, PausePlan};

use crate::assign::{Element, Placement, Route};
use daqnet_core::scenario::{EcnMarking, HostCpu, Network, SwitchKind};
use daqnet_core::workload::mix;
use daqnet_core::{NodeId, ReadoutId};

/// A host of the plan (a readout unit, a node, a sub-farm's SFC or worker, a DAQPIPE node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub u32);

/// A switch of the plan, or a hop that routes like one (daqrings, an edge host's bus).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SwitchId(pub u32);

/// An output port of a host or a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortId(pub u32);

/// A buffer pool shared by some ports of one switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PoolId(pub u32);

/// A vertex of the network graph, where a frame can arrive: a host or a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vertex {
    /// A host.
    Host(HostId),
    /// A switch, router or hop.
    Switch(SwitchId),
}

/// What a switch of the plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchRole {
    /// The one switch of a star.
    Star,
    /// A core router of a two-tier network.
    Core(u32),
    /// A readout or rack access switch of a two-tier network.
    Access,
    /// A leaf of a parallel leaf-spine.
    Leaf {
        /// Its plane.
        plane: u32,
        /// Its pod.
        pod: u32,
    },
    /// A spine of a parallel leaf-spine.
    Spine {
        /// Its plane.
        plane: u32,
        /// Its number within the plane.
        spine: u32,
    },
    /// A parallel leaf-spine's rack: a top-of-rack switch and its nodes, one server.
    Rack(u32),
    /// The daqrings in front of a switch port: a queue per destination host.
    Daqrings,
    /// An edge host's receive path: its NIC's buffer, drained across its bus.
    Bus,
    /// A server's receive processing (`[network.host_cpu]`, `[network.switch.cpu]`): its NIC's
    /// rings, one per core.
    Cpu,
}

/// A switch of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchPlan {
    /// Name for reports (`sw`, `core1`, `p0-leaf2`, `rack0`).
    pub name: String,
    /// What it is.
    pub role: SwitchRole,
    /// How it queues: a bridge (a FIFO per port) or daqrings (a queue per destination).
    pub kind: SwitchKind,
    /// The scenario section that configures it (`network.switch`, `network.fabric.leaf`,
    /// `network.edge`): what a message about it names.
    pub field: &'static str,
}

/// A host of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPlan {
    /// Name for reports (`ru3`, `node0`).
    pub name: String,
    /// Line rate of its link(s), bit/s.
    pub link_bps: u64,
}

/// How a port's buffer is limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortBuffer {
    /// Never drops (a host's transmit queue: the kernel applies back-pressure instead).
    Unlimited,
    /// Dedicated buffer of this many bytes.
    Dedicated(u64),
    /// Member of a shared pool, holding at most `cap` bytes itself.
    Shared {
        /// The pool.
        pool: PoolId,
        /// Per-port cap in bytes.
        cap: u64,
    },
}

/// An output port: a queue served at a rate onto a link.
#[derive(Debug, Clone, PartialEq)]
pub struct PortPlan {
    /// Name for reports, e.g. `rack0->node3`.
    pub name: String,
    /// The vertex that sends through it.
    pub from: Vertex,
    /// The vertex at the other end of its link as built (the daqrings or the switch in front of
    /// an edge host's bus included): what a failed element's links are found by.
    pub to: Vertex,
    /// Where its frames arrive: `to`, or the bus of an edge host behind it.
    pub peer: Vertex,
    /// Line rate in bit/s.
    pub rate_bps: u64,
    /// Delay from the end of transmission to the frame being fully received by the peer, in ns
    /// (propagation, plus the receiving host's stack latency when the peer is a host).
    pub delay_ns: u64,
    /// Buffer scheme.
    pub buffer: PortBuffer,
    /// Whether this port belongs to a switch (and is reported).
    pub on_switch: bool,
    /// Whether it sends as a token bucket of this depth (ns at its rate) instead of at line
    /// rate: a host's shaped NIC, a daqring's polling cycle.
    pub shaper_burst_ns: Option<u64>,
    /// How it marks ECN-capable frames (`[network.ecn]`), if it does: every output port of a
    /// bridge-like switch with a finite buffer; never a host's, a daqring's or an edge bus's.
    pub marking: Option<EcnMarking>,
    /// How the receiver of its frames pauses it (`[network.flow_control]`), if it can: every
    /// link into a switch or an edge host's NIC.
    pub pause: Option<PausePlan>,
}

/// A server whose cores process what it receives: a host (`[network.host_cpu]`) or the star's
/// software switch (`[network.switch.cpu]`). Frames reach it through one port per core, which
/// the simulator serves at the cores' cost per frame.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuPlan {
    /// The host or switch.
    pub at: Vertex,
    /// The hop its incoming links now lead to.
    pub hop: SwitchId,
    /// The port of each core, from the hop to it, in core order.
    pub cores: Vec<PortId>,
    /// The cores' costs, coalescing, ring and steering.
    pub cost: HostCpu,
}

/// A shared buffer pool: its size and member ports, in the order they joined.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolPlan {
    /// Bytes.
    pub capacity: u64,
    /// Its ports.
    pub members: Vec<PortId>,
}

/// The forwarding entry of a switch towards a destination: a fixed port, or the uplink of the
/// packet's path.
const UPLINK: u32 = u32::MAX;

/// A network: hosts, switches, ports, pools, forwarding and paths.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkPlan {
    /// Every host, by [`HostId`].
    pub hosts: Vec<HostPlan>,
    /// Every switch and hop, by [`SwitchId`].
    pub switches: Vec<SwitchPlan>,
    /// Every output port, of hosts and switches, by [`PortId`].
    pub ports: Vec<PortPlan>,
    /// Shared buffer pools, by [`PoolId`].
    pub pools: Vec<PoolPlan>,
    /// The edge hosts' receive hops (`[network.edge]`): NIC buffer and bus of each.
    pub edge_ports: Vec<PortId>,
    /// Number of paths: core routers, or planes × spines (1 in a star, where it is unused).
    pub paths: u32,
    /// The transmit port of each host on each path (`host × paths + path`): a readout unit of a
    /// parallel leaf-spine has a link to each plane it reaches.
    host_nic: Vec<u32>,
    /// Per switch, per destination host: the output port, or `UPLINK` (choose by path).
    fwd: Vec<Vec<u32>>,
    /// Per switch: its uplink port for each path (empty for cores, spines and a star switch).
    uplinks: Vec<Vec<u32>>,
    /// A parallel leaf-spine's plan: the number of readout units (host `r` is readout unit `r`,
    /// host `readout_units + n` node `n`) and where each of their flows goes.
    planned: Option<(u32, Placement)>,
    /// Spines per plane of a parallel leaf-spine (path `plane × spines + spine`).
    spines_per_plane: u32,
    /// Link-level flow control, if the links run it.
    pub flow: Option<FlowPlan>,
    /// The hosts (and software switch) whose cores process what they receive.
    pub cpus: Vec<CpuPlan>,
}

/// A host to plan: its name and the line rate of its link(s), bit/s.
pub type HostSpec = (String, u64);

/// Host name for reports.
fn host_name(h: u32, readout_units: u32) -> String {
    if h < readout_units {
        ReadoutId(h).host()
    } else {
        NodeId(h - readout_units).host()
    }
}

impl NetworkPlan {
    /// The plan of `net` for `readout_units` readout units and `nodes` nodes.
    /// `net` must have had [`daqnet_core::Scenario::with_defaults`] applied and be valid.
    pub fn build(net: &Network, readout_units: u32, nodes: u32) -> NetworkPlan {
        let rate = |h: u32| if h < readout_units { net.readout_link_bps } else { net.node_link_bps };
        let hosts = (0..readout_units + nodes).map(|h| (host_name(h, readout_units), rate(h))).collect();
        build::assemble(net, hosts, readout_units)
    }

    /// The plan of `net` joining `hosts`, numbered in order: on a star, one switch; on a
    /// two-tier network, racks of `rack_switch.hosts` consecutive hosts under the core routers.
    pub fn of_hosts(net: &Network, hosts: Vec<HostSpec>) -> NetworkPlan {
        build::assemble(net, hosts, 0)
    }

    /// The port with id `p`.
    pub fn port(&self, p: PortId) -> &PortPlan {
        &self.ports[p.0 as usize]
    }

    /// The switch with id `s`.
    pub fn switch(&self, s: SwitchId) -> &SwitchPlan {
        &self.switches[s.0 as usize]
    }

    /// The switch that is `role` (a leaf, a spine, a rack), if the plan has it.
    pub fn switch_with(&self, role: SwitchRole) -> Option<SwitchId> {
        self.switches.iter().position(|s| s.role == role).map(|s| SwitchId(s as u32))
    }

    /// The port through which `from` sends on its link to `to`, if they are linked.
    pub fn link(&self, from: Vertex, to: Vertex) -> Option<PortId> {
        self.ports.iter().position(|p| p.from == from && p.to == to).map(|p| PortId(p as u32))
    }

    /// The switch ports, with the switch each belongs to, switch by switch.
    pub fn switch_ports(&self) -> Vec<(SwitchId, &PortPlan)> {
        let mut ports: Vec<(SwitchId, &PortPlan)> = self
            .ports
            .iter()
            .filter_map(|p| match p.from {
                Vertex::Switch(s) if p.on_switch => Some((s, p)),
                _ => None,
            })
            .collect();
        ports.sort_by_key(|&(s, _)| s);
        ports
    }

    /// The paths of each end of connection number `c` between `hosts` (opener, acceptor): on a
    /// parallel leaf-spine both ends take the flow's planned (plane, spine); elsewhere each end's
    /// packets are hashed onto a core router (per-flow ECMP, each direction on its own).
    pub fn conn_paths(&self, c: u64, hosts: (u32, u32)) -> [u8; 2] {
        match &self.planned {
            Some((readout_units, placement)) => {
                let (node, readout) = if hosts.0 >= *readout_units { hosts } else { (hosts.1, hosts.0) };
                let path = self.path_of(placement.route(ReadoutId(readout), NodeId(node - readout_units)));
                [path, path]
            }
            None => {
                let n = self.paths as u64;
                [(mix(c * 2) % n) as u8, (mix(c * 2 + 1) % n) as u8]
            }
        }
    }

    /// A parallel leaf-spine's placement of every flow, the one its connections take.
    pub fn placement(&self) -> Option<&Placement> {
        self.planned.as_ref().map(|(_, p)| p)
    }

    /// The path number of a planned route on a parallel leaf-spine.
    pub fn path_of(&self, route: Route) -> u8 {
        (route.plane.0 * self.spines_per_plane + route.spine.map_or(0, |s| s.0)) as u8
    }

    /// The port host `h` sends a packet on `path` through.
    #[inline]
    pub fn nic(&self, h: u32, path: u32) -> u32 {
        self.host_nic[(h * self.paths + path) as usize]
    }

    /// The output port switch `s` uses for a frame to host `dst` travelling on path `path`.
    #[inline]
    pub fn route(&self, s: u32, dst: u32, path: u32) -> u32 {
        let p = self.fwd[s as usize][dst as usize];
        if p == UPLINK {
            self.uplinks[s as usize][path as usize]
        } else {
            p
        }
    }

    /// The ports a frame from host `src` to host `dst` on path `path` leaves through, in order.
    pub fn path(&self, src: u32, dst: u32, path: u32) -> Vec<PortId> {
        let mut ports = vec![PortId(self.nic(src, path))];
        while let Vertex::Switch(s) = self.port(*ports.last().expect("non-empty")).peer {
            ports.push(PortId(self.route(s.0, dst, path)));
            assert!(ports.len() < 16, "routing loop from host {src} to {dst}");
        }
        ports
    }

    /// The ports (both directions) of a fabric element: every link touching a plane's leaves
    /// and spines, a spine's links, or the two directions of a leaf's link to a spine (the
    /// daqrings in front of a leaf's port to a spine stay up: they lead on into the port).
    /// Empty on other topologies.
    pub fn element_ports(&self, e: &Element) -> Vec<PortId> {
        let role = |v: Vertex| match v {
            Vertex::Switch(s) => Some(self.switches[s.0 as usize].role),
            Vertex::Host(_) => None,
        };
        let touches = |v: Vertex| match (e, role(v)) {
            (Element::Plane(p), Some(SwitchRole::Leaf { plane, .. } | SwitchRole::Spine { plane, .. })) => plane == p.0,
            (Element::Spine(p, s), Some(SwitchRole::Spine { plane, spine })) => (plane, spine) == (p.0, s.0),
            _ => false,
        };
        let takes = |port: &PortPlan| match e {
            Element::LeafUplink(p, pod, s) => {
                let leaf = Some(SwitchRole::Leaf { plane: p.0, pod: pod.0 });
                let spine = Some(SwitchRole::Spine { plane: p.0, spine: s.0 });
                let ends = (role(port.from), role(port.to));
                ends == (leaf, spine) || ends == (spine, leaf)
            }
            _ => touches(port.from) || touches(port.to),
        };
        (0..self.ports.len() as u32).map(PortId).filter(|&p| takes(self.port(p))).collect()
    }

    /// The ports of host `h`: its NICs and the switch ports whose link leads to it.
    pub fn host_ports(&self, h: HostId) -> Vec<PortId> {
        let at = Vertex::Host(h);
        (0..self.ports.len() as u32).map(PortId).filter(|&p| self.port(p).from == at || self.port(p).to == at).collect()
    }
}

#[cfg(test)]
mod tests;
