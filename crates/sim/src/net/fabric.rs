//! The fabric: hosts, switches, their output ports and the routes between them, built from a
//! scenario's `[network]` section.
//!
//! Host numbering: readout unit `r` is host `r`; node `n` is host `readout_units + n`.
//!
//! A connection's packets take one of the fabric's *paths*: a core router of a two-tier network,
//! or a (plane, spine) of a parallel leaf-spine (`plane × spines + spine`), numbered so that
//! every switch forwards by destination and path alone.

use super::port::{BufferPools, Port, PortBuffer};
use super::wire::{serialization_ps, wire_bytes};
use daqnet_core::scenario::{BufferConfig, DaqringConfig, EdgeHost, Network, SwitchConfig, SwitchKind, Topology};
use daqnet_core::workload::mix;
use daqnet_core::{NodeId, ReadoutId};
use daqnet_fabric::assign::{place, Element, Failures, Placement, Route};
use daqnet_fabric::links::Links;
use daqnet_fabric::shape::Shape;

/// A vertex of the network graph, where a frame can arrive: a host or a switch. (Not a worker
/// node: those are hosts.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vertex {
    /// A host (readout unit or node).
    Host(u32),
    /// A switch or router.
    Switch(u32),
}

const UPLINK: u32 = u32::MAX;

/// Hosts, switches, ports and routes.
#[derive(Debug, Clone)]
pub struct Fabric {
    /// Every output port, of hosts and switches.
    pub ports: Vec<Port>,
    /// What each port's frames arrive at.
    pub peer: Vec<Vertex>,
    /// Shared buffer pools.
    pub pools: BufferPools,
    /// The transmit port of each host on each path (`host × paths + path`): a readout unit of
    /// a parallel leaf-spine has a link to each plane it reaches.
    host_nic: Vec<u32>,
    /// Per switch, per destination host: the output port, or `UPLINK` (choose by path).
    fwd: Vec<Vec<u32>>,
    /// Per switch: its uplink port for each path (empty for cores, spines and a star switch).
    uplinks: Vec<Vec<u32>>,
    /// Number of paths: core routers, or planes × spines (1 in a star, where it is unused).
    pub paths: u32,
    /// A parallel leaf-spine's plan: the number of readout units (host `r` is readout unit `r`,
    /// host `readout_units + n` node `n`) and where each of their flows goes.
    planned: Option<(u32, Placement)>,
    /// Spines per plane of a parallel leaf-spine (path `plane × spines + spine`, spine 0 within a
    /// pod).
    spines_per_plane: u32,
    /// Switch names.
    pub switch_names: Vec<String>,
    /// Host names (`ru3`, `node0`), by host number.
    pub host_names: Vec<String>,
    /// The edge hosts' receive hops (`[network.edge]`): NIC buffer and bus of each.
    pub edge_ports: Vec<u32>,
}

struct Builder {
    f: Fabric,
}

impl Builder {
    fn switch(&mut self, name: String, hosts: usize) -> u32 {
        self.f.switch_names.push(name);
        self.f.fwd.push(vec![UPLINK; hosts]);
        self.f.uplinks.push(Vec::new());
        self.f.switch_names.len() as u32 - 1
    }

    /// Host `h` (`name`, link `rate`) on switch `s`: the host's NIC and the switch's port towards
    /// it, which reaches the host's stack after its latency. Returns (NIC, switch port).
    fn attach_host(&mut self, net: &Network, h: u32, (name, rate): (&str, u64), s: u32) -> (u32, u32) {
        let sw = self.f.switch_names[s as usize].clone();
        let d = net.link_delay_ns;
        let nic = self.port(format!("{name}->{sw}"), rate, d, PortBuffer::Unlimited, false, Vertex::Switch(s));
        if net.host_burst_ns > 0 {
            self.f.ports[nic as usize].shape(net.host_burst_ns);
        }
        let into_host = d + net.host_delay_ns;
        let p = self.port(format!("{sw}->{name}"), rate, into_host, PortBuffer::Unlimited, true, Vertex::Host(h));
        self.f.fwd[s as usize][h as usize] = p;
        (nic, p)
    }

    /// A link between switches `a` and `b`: (a's port towards b, b's port towards a).
    fn trunk(&mut self, a: u32, b: u32, rate: u64, delay: u64) -> (u32, u32) {
        let (an, bn) = (self.f.switch_names[a as usize].clone(), self.f.switch_names[b as usize].clone());
        let ab = self.port(format!("{an}->{bn}"), rate, delay, PortBuffer::Unlimited, true, Vertex::Switch(b));
        let ba = self.port(format!("{bn}->{an}"), rate, delay, PortBuffer::Unlimited, true, Vertex::Switch(a));
        (ab, ba)
    }

    /// A host's NIC for every path.
    fn nic_for_all_paths(&mut self, h: u32, nic: u32) {
        let paths = self.f.paths as usize;
        self.f.host_nic[h as usize * paths..(h as usize + 1) * paths].fill(nic);
    }

    fn port(&mut self, name: String, rate: u64, delay: u64, buffer: PortBuffer, on_switch: bool, peer: Vertex) -> u32 {
        self.f.ports.push(Port::new(name, rate, delay, buffer, on_switch));
        self.f.peer.push(peer);
        self.f.ports.len() as u32 - 1
    }

    /// A vertex that sends every frame to one port (created next, see [`Builder::port`]): what
    /// a hop in front of a port or a host needs to be reached by routing.
    fn hop_vertex(&mut self, name: String) -> u32 {
        let hosts = self.f.host_names.len();
        let v = self.switch(name, hosts);
        self.f.fwd[v as usize] = vec![self.f.ports.len() as u32; hosts];
        v
    }

    /// `ports` of a switch configured as `sw`: rate-limited daqrings if it is a daqring switch
    /// with a polling cycle.
    fn rate_limit(&mut self, ports: &[u32], sw: &SwitchConfig, net: &Network) {
        if let Some(bps) = sw.daqring.ring_rate_bps(net.wire_frame_bytes()).filter(|_| sw.kind == SwitchKind::Daqring) {
            self.daqrings(ports, &sw.daqring, bps);
        }
    }

    /// Rate-limited daqrings ([LOSSLESS] §III-A.2, §V-C) in front of each of `ports` that
    /// leads to fixed hosts: a queue per destination host, holding `cfg.queue_bytes` and
    /// releasing at most `burst_frames` frames per polling cycle (a token bucket of one cycle at
    /// the ring's rate), into the port, which serializes them at line rate and keeps its buffer
    /// for what the rings release faster than that.
    fn daqrings(&mut self, ports: &[u32], cfg: &DaqringConfig, ring_bps: u64) {
        let switches = self.f.fwd.len();
        for &p in ports {
            let Some(s) = (0..switches).find(|&s| self.f.fwd[s].contains(&p)) else { continue };
            let dsts: Vec<u32> =
                (0..self.f.host_names.len() as u32).filter(|&h| self.f.fwd[s][h as usize] == p).collect();
            let name = self.f.ports[p as usize].name.clone();
            let v = self.switch(format!("{name} daqrings"), self.f.host_names.len());
            for dst in dsts {
                let ring_name = format!("{name} ring {}", self.f.host_names[dst as usize]);
                let ring =
                    self.port(ring_name, ring_bps, 0, PortBuffer::Dedicated(cfg.queue_bytes), true, Vertex::Switch(v));
                self.f.ports[ring as usize].shape(cfg.poll_cycle_ns);
                self.f.fwd[s][dst as usize] = ring;
                self.f.fwd[v as usize][dst as usize] = p;
            }
        }
    }

    /// The edge hosts' receive path (`[network.edge]`): every switch port whose frames reach
    /// an edge vertex (`is_edge`) now reaches that vertex through one hop per vertex — its NIC's
    /// buffer, drained across the bus — shared by all the vertex's links (a dual-port NIC on
    /// one bus). A host's stack latency moves from the port to the hop.
    fn edge_hops(&mut self, edge: &EdgeHost, host_delay_ns: u64, is_edge: impl Fn(Vertex) -> bool) {
        let mut targets: Vec<Vertex> = Vec::new();
        for p in 0..self.f.ports.len() {
            let t = self.f.peer[p];
            if self.f.ports[p].on_switch && is_edge(t) && !targets.contains(&t) {
                targets.push(t);
            }
        }
        for t in targets {
            let (name, stack) = match t {
                Vertex::Host(h) => (self.f.host_names[h as usize].clone(), host_delay_ns),
                Vertex::Switch(s) => (self.f.switch_names[s as usize].clone(), 0),
            };
            let links: Vec<usize> =
                (0..self.f.ports.len()).filter(|&p| self.f.ports[p].on_switch && self.f.peer[p] == t).collect();
            let v = self.hop_vertex(format!("{name} bus"));
            let hop = self.port(
                format!("{name} nic"),
                edge.bus_bps,
                stack,
                PortBuffer::Dedicated(edge.nic_buffer_bytes),
                false,
                t,
            );
            for p in links {
                self.f.peer[p] = Vertex::Switch(v);
                self.f.ports[p].delay_ns -= stack;
            }
            self.f.edge_ports.push(hop);
        }
    }

    /// Gives consecutive ports of one switch their buffer according to its scheme.
    fn apply_buffer(&mut self, ports: &[u32], cfg: &BufferConfig) {
        match *cfg {
            BufferConfig::Dedicated { port_bytes } | BufferConfig::Deep { port_bytes } => {
                for &p in ports {
                    self.f.ports[p as usize].buffer = PortBuffer::Dedicated(port_bytes);
                }
            }
            BufferConfig::Shared { pool_bytes, ports_per_pool, port_cap_bytes } => {
                for group in ports.chunks(ports_per_pool as usize) {
                    let pool = self.f.pools.add(pool_bytes);
                    for &p in group {
                        self.f.pools.join(pool, p);
                        self.f.ports[p as usize].buffer = PortBuffer::Shared { pool, cap: port_cap_bytes };
                    }
                }
            }
        }
    }
}

/// Host name for reports.
fn host_name(h: u32, readout_units: u32) -> String {
    if h < readout_units {
        ReadoutId(h).host()
    } else {
        NodeId(h - readout_units).host()
    }
}

impl Fabric {
    /// Builds the fabric of `net` for `readout_units` readout units and `nodes` nodes.
    /// `net` must have had [`daqnet_core::Scenario::with_defaults`] applied and be valid.
    pub fn build(net: &Network, readout_units: u32, nodes: u32) -> Fabric {
        let rate = |h: u32| if h < readout_units { net.readout_link_bps } else { net.node_link_bps };
        let hosts = (0..readout_units + nodes).map(|h| (host_name(h, readout_units), rate(h))).collect();
        Self::assemble(net, hosts, readout_units)
    }

    /// The fabric of `net` joining `hosts`, given as (name, link rate in bit/s) and numbered
    /// in order: on a star, one switch; on a two-tier network, racks of `rack_switch.hosts`
    /// consecutive hosts under the core routers (a leaf-spine).
    pub fn of_hosts(net: &Network, hosts: Vec<(String, u64)>) -> Fabric {
        Self::assemble(net, hosts, 0)
    }

    /// The fabric of `net` for `hosts` (name, link rate); in a two-tier network the first
    /// `readout_units` are readout units, the rest nodes.
    fn assemble(net: &Network, host_specs: Vec<(String, u64)>, readout_units: u32) -> Fabric {
        let nodes = host_specs.len() as u32 - readout_units;
        let hosts = host_specs.len();
        let mut b = Builder {
            f: Fabric {
                ports: Vec::new(),
                peer: Vec::new(),
                pools: BufferPools::default(),
                host_nic: Vec::new(),
                fwd: Vec::new(),
                uplinks: Vec::new(),
                paths: match net.topology {
                    Topology::Star => 1,
                    Topology::TwoTier => net.core.as_ref().expect("two_tier has [network.core]").routers,
                    Topology::ParallelLeafSpine => {
                        let f = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]");
                        f.planes * f.spines_per_plane
                    }
                },
                planned: None,
                spines_per_plane: net.fabric.as_ref().map_or(1, |f| f.spines_per_plane),
                switch_names: Vec::new(),
                host_names: host_specs.iter().map(|(n, _)| n.clone()).collect(),
                edge_ports: Vec::new(),
            },
        };
        b.f.host_nic = vec![0; hosts * b.f.paths as usize];
        let d = net.link_delay_ns;
        // Attaches host h to switch s: the host's NIC and the switch's port towards it.
        let attach = |b: &mut Builder, s: u32, h: u32| -> u32 {
            let (nic, p) = b.attach_host(net, h, (&host_specs[h as usize].0, host_specs[h as usize].1), s);
            b.nic_for_all_paths(h, nic);
            p
        };
        // A parallel leaf-spine's rack is one server: its switch joins its nodes inside it.
        let mut rack_servers = Vec::new();
        match net.topology {
            Topology::Star => {
                let cfg = net.switch.as_ref().expect("star has [network.switch]");
                let s = b.switch("sw".into(), hosts);
                let ports: Vec<u32> = (0..hosts as u32).map(|h| attach(&mut b, s, h)).collect();
                // The daqring switch keeps a byte-capped queue per destination, served at line
                // rate. On a star every port leads to one host, so that is one queue per port
                // (round-robin between daqrings and the burst limit only act where several
                // collectors share a port, which this topology never has).
                let daqring = BufferConfig::Dedicated { port_bytes: cfg.daqring.queue_bytes };
                b.apply_buffer(&ports, if cfg.kind == SwitchKind::Daqring { &daqring } else { &cfg.buffer });
                b.rate_limit(&ports, cfg, net);
            }
            Topology::TwoTier => {
                let ro = net.readout_switch.as_ref().expect("two_tier has [network.readout_switch]");
                let rack = net.rack_switch.as_ref().expect("two_tier has [network.rack_switch]");
                let core = net.core.as_ref().expect("two_tier has [network.core]");
                let cores: Vec<u32> = (0..core.routers).map(|c| b.switch(format!("core{c}"), hosts)).collect();
                let mut core_ports: Vec<Vec<u32>> = vec![Vec::new(); cores.len()];
                let groups = [("ro", 0..readout_units, ro), ("rack", readout_units..readout_units + nodes, rack)];
                for (prefix, range, cfg) in groups {
                    let members: Vec<u32> = range.collect();
                    for (i, chunk) in members.chunks(cfg.hosts as usize).enumerate() {
                        let s = b.switch(format!("{prefix}{i}"), hosts);
                        let mut ports: Vec<u32> = chunk.iter().map(|&h| attach(&mut b, s, h)).collect();
                        for (c, &cs) in cores.iter().enumerate() {
                            let (up, down) = b.trunk(s, cs, cfg.uplink_bps, d);
                            b.f.uplinks[s as usize].push(up);
                            ports.push(up);
                            core_ports[c].push(down);
                            for &h in chunk {
                                b.f.fwd[cs as usize][h as usize] = down;
                            }
                        }
                        b.apply_buffer(&ports, &cfg.buffer);
                    }
                }
                for ports in &core_ports {
                    b.apply_buffer(ports, &core.buffer);
                }
            }
            Topology::ParallelLeafSpine => {
                rack_servers = parallel_leaf_spine(&mut b, net, &host_specs, readout_units);
            }
        }
        if let Some(edge) = &net.edge {
            b.edge_hops(edge, net.host_delay_ns, |v| match v {
                Vertex::Host(h) => net.topology != Topology::ParallelLeafSpine || h < readout_units,
                Vertex::Switch(s) => rack_servers.contains(&s),
            });
        }
        b.f
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

    /// The ports (both directions) of a fabric element: every link touching a plane's switches,
    /// a spine's links, or the two directions of a leaf's link to a spine. Empty on other
    /// topologies.
    pub fn element_ports(&self, e: &Element) -> Vec<u32> {
        let touches = |end: &str| match e {
            Element::Plane(p) => end.starts_with(&format!("p{}-", p.0)),
            Element::Spine(p, s) => end == format!("p{}-spine{}", p.0, s.0),
            Element::LeafUplink(..) => false,
        };
        let pair = |from: &str, to: &str| match e {
            Element::LeafUplink(p, pod, s) => {
                let (leaf, spine) = (format!("p{}-leaf{}", p.0, pod.0), format!("p{}-spine{}", p.0, s.0));
                (from, to) == (leaf.as_str(), spine.as_str()) || (from, to) == (spine.as_str(), leaf.as_str())
            }
            _ => touches(from) || touches(to),
        };
        (0..self.ports.len() as u32)
            .filter(|&i| self.ports[i as usize].name.split_once("->").is_some_and(|(from, to)| pair(from, to)))
            .collect()
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

    /// The ports a frame from host `src` to host `dst` via core `core` leaves through, in order.
    pub fn path(&self, src: u32, dst: u32, core: u32) -> Vec<u32> {
        let mut path = vec![self.nic(src, core)];
        while let Vertex::Switch(s) = self.peer[*path.last().expect("non-empty") as usize] {
            path.push(self.route(s, dst, core));
            assert!(path.len() < 16, "routing loop from host {src} to {dst}");
        }
        path
    }

    /// One-way time of a frame of `frame_bytes` from `src` to `dst` through empty queues, in ns.
    pub fn unloaded_delay_ns(&self, src: u32, dst: u32, core: u32, frame_bytes: u32) -> u64 {
        self.path(src, dst, core)
            .iter()
            .map(|&p| {
                let port = &self.ports[p as usize];
                serialization_ps(wire_bytes(frame_bytes), port.rate_bps).div_ceil(1000) + port.delay_ns
            })
            .sum()
    }
}

/// [LOSSLESS] §V-A's parallel leaf-spine: a leaf per pod in every plane, every leaf linked to
/// every spine of its plane; readout units on their pod's leaf in each plane they reach; racks
/// (a top-of-rack switch and its nodes) with an uplink to their pod's leaf in each plane they
/// reach. Every flow's path comes from the plan of `daqnet-fabric` (the scenario's
/// `assignment`), the same plan `daqnet plan` prints and turns into OpenFlow rules.
/// Returns the racks' switches.
fn parallel_leaf_spine(b: &mut Builder, net: &Network, host_specs: &[(String, u64)], readout_units: u32) -> Vec<u32> {
    let f = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]");
    let shape = Shape::of_network(net).expect("a valid parallel leaf-spine");
    let hosts = host_specs.len();
    let (planes, spines, paths) = (f.planes, f.spines_per_plane, b.f.paths);
    let d = net.link_delay_ns;
    let node_host = |n: u32| readout_units + n;
    let leaf_of = |p: u32, pod: u32| p * shape.pods + pod;
    let leaves: Vec<u32> = (0..planes * shape.pods)
        .map(|i| b.switch(format!("p{}-leaf{}", i / shape.pods, i % shape.pods), hosts))
        .collect();
    let spine_sw: Vec<u32> =
        (0..planes * spines).map(|i| b.switch(format!("p{}-spine{}", i / spines, i % spines), hosts)).collect();
    let racks: Vec<u32> = (0..shape.racks()).map(|k| b.switch(format!("rack{k}"), hosts)).collect();
    let mut tier_ports: [Vec<u32>; 3] = Default::default(); // leaf, spine, rack

    // Readout units: a link to their pod's leaf in each plane they reach.
    for r in 0..readout_units {
        let pod = shape.pod_of_readout(ReadoutId(r)).0;
        let (hn, rate) = (&host_specs[r as usize].0, host_specs[r as usize].1);
        let reached: Vec<u32> =
            (0..planes).filter(|&p| shape.readout_reaches(ReadoutId(r), daqnet_fabric::shape::Plane(p))).collect();
        let mut nic_of_plane = vec![u32::MAX; planes as usize];
        for &p in &reached {
            let (nic, down) = b.attach_host(net, r, (hn, rate), leaves[leaf_of(p, pod) as usize]);
            nic_of_plane[p as usize] = nic;
            tier_ports[0].push(down);
        }
        // A path on a plane the unit does not reach is never planned for it; its first NIC
        // stands in so the table is total.
        for path in 0..paths {
            let nic = nic_of_plane[(path / spines) as usize];
            b.f.host_nic[(r * paths + path) as usize] =
                if nic == u32::MAX { nic_of_plane[reached[0] as usize] } else { nic };
        }
    }
    // Racks: their nodes, and an uplink to their pod's leaf in each plane they reach.
    for (k, &rack) in racks.iter().enumerate() {
        let k = k as u32;
        let nodes: Vec<u32> = (k * shape.nodes_per_rack..(k + 1) * shape.nodes_per_rack).collect();
        for &n in &nodes {
            let h = node_host(n);
            let (nic, down) = b.attach_host(net, h, (&host_specs[h as usize].0, host_specs[h as usize].1), rack);
            b.nic_for_all_paths(h, nic);
            tier_ports[2].push(down);
        }
        b.f.uplinks[rack as usize] = vec![u32::MAX; paths as usize];
        let pod = shape.pod_of_rack(daqnet_fabric::shape::Rack(k)).0;
        for p in
            (0..planes).filter(|&p| shape.rack_reaches(daqnet_fabric::shape::Rack(k), daqnet_fabric::shape::Plane(p)))
        {
            let leaf = leaves[leaf_of(p, pod) as usize];
            let (up, down) = b.trunk(rack, leaf, f.rack_uplink_bps, d);
            tier_ports[2].push(up);
            b.f.uplinks[rack as usize][(p * spines) as usize..((p + 1) * spines) as usize].fill(up);
            tier_ports[0].push(down);
            for &n in &nodes {
                b.f.fwd[leaf as usize][node_host(n) as usize] = down;
            }
        }
    }
    // Leaf <-> spine, within each plane; a spine forwards every host of a pod to its leaf.
    for p in 0..planes {
        for pod in 0..shape.pods {
            let leaf = leaves[leaf_of(p, pod) as usize];
            b.f.uplinks[leaf as usize] = vec![u32::MAX; paths as usize];
            let members: Vec<u32> = (0..hosts as u32)
                .filter(|&h| {
                    if h < readout_units {
                        shape.pod_of_readout(ReadoutId(h)).0 == pod
                    } else {
                        shape.pod_of_node(NodeId(h - readout_units)).0 == pod
                    }
                })
                .collect();
            for sp in 0..spines {
                let spine = spine_sw[(p * spines + sp) as usize];
                let (up, down) = b.trunk(leaf, spine, f.spine_link_bps, d);
                b.f.uplinks[leaf as usize][(p * spines + sp) as usize] = up;
                tier_ports[0].push(up);
                tier_ports[1].push(down);
                for &h in &members {
                    b.f.fwd[spine as usize][h as usize] = down;
                }
            }
        }
    }
    for (ports, sw) in tier_ports.iter().zip([&f.leaf, &f.spine, &f.rack]) {
        let buffer = tier_buffer(sw, shape.nodes());
        b.apply_buffer(ports, &buffer);
        b.rate_limit(ports, sw, net);
    }
    let links = Links::new(&shape);
    let placement = place(&links, &Failures::default(), f.assignment).expect("a valid fabric routes every flow");
    b.f.planned = Some((readout_units, placement));
    racks
}

/// A tier's port buffers. A daqring switch keeps a byte-capped queue per collector: a port is
/// modelled as one queue holding what all of them may hold (`queue_bytes` × collectors), so it
/// drops only where the daqrings would; the round-robin order between collectors is not modelled.
fn tier_buffer(sw: &SwitchConfig, collectors: u32) -> BufferConfig {
    match sw.kind {
        SwitchKind::Bridge => sw.buffer.clone(),
        SwitchKind::Daqring => {
            BufferConfig::Dedicated { port_bytes: sw.daqring.queue_bytes.saturating_mul(collectors as u64) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::Scenario;

    #[test]
    fn two_tier_paths_cross_access_core_access() {
        let s = Scenario::default().with_defaults();
        let f = Fabric::build(&s.network, 160, 39);
        // ru5 -> ro0 -> core1 -> rack0 -> node3 (host 163).
        let names: Vec<&str> = f.path(5, 163, 1).iter().map(|&p| f.ports[p as usize].name.as_str()).collect();
        assert_eq!(names, vec!["ru5->ro0", "ro0->core1", "core1->rack0", "rack0->node3"]);
        assert_eq!(f.ports[f.path(5, 163, 1)[3] as usize].buffer, PortBuffer::Dedicated(600_000));
        // 10 readout groups, 1 rack, 2 cores.
        assert_eq!(f.switch_names.len(), 13);
    }

    #[test]
    fn star_has_one_switch() {
        let mut s = Scenario::default();
        s.network.topology = Topology::Star;
        let s = s.with_defaults();
        let f = Fabric::build(&s.network, 4, 1);
        let names: Vec<&str> = f.path(0, 4, 0).iter().map(|&p| f.ports[p as usize].name.as_str()).collect();
        assert_eq!(names, vec!["ru0->sw", "sw->node0"]);
    }

    #[test]
    fn a_rate_limited_daqring_and_a_slow_edge_bus_are_hops_on_the_path() {
        let mut s = Scenario::default();
        s.network.topology = Topology::Star;
        s.network.edge = Some(EdgeHost { bus_bps: 4_000_000_000, nic_buffer_bytes: 64_000 });
        let mut s = s.with_defaults();
        let sw = s.network.switch.as_mut().unwrap();
        sw.kind = SwitchKind::Daqring;
        sw.daqring.burst_frames = 2;
        sw.daqring.poll_cycle_ns = 10_000;
        let n = &s.network;
        let f = Fabric::build(n, 4, 1);
        let path = f.path(0, 4, 0);
        let names: Vec<&str> = path.iter().map(|&p| f.ports[p as usize].name.as_str()).collect();
        assert_eq!(names, vec!["ru0->sw", "sw->node0 ring node0", "sw->node0", "node0 nic"]);
        let port = |i: usize| &f.ports[path[i] as usize];
        // Two frames of 1538 wire bytes per 10 µs: 2 × 12,304 bits / 10 µs.
        assert_eq!(port(1).rate_bps, 2_460_800_000);
        assert_eq!(port(1).buffer, PortBuffer::Dedicated(s.network.switch.as_ref().unwrap().daqring.queue_bytes));
        // The host's stack latency moves from the switch port to the NIC's hop.
        assert_eq!((port(2).delay_ns, port(3).delay_ns), (n.link_delay_ns, n.host_delay_ns));
        assert_eq!((port(3).rate_bps, port(3).buffer), (4_000_000_000, PortBuffer::Dedicated(64_000)));
        assert_eq!(f.edge_ports.len(), 5, "every host of a star is an edge host");
        // Towards a readout unit: its own ring and NIC.
        let back: Vec<&str> = f.path(4, 0, 0).iter().map(|&p| f.ports[p as usize].name.as_str()).collect();
        assert_eq!(back, vec!["node0->sw", "sw->ru0 ring ru0", "sw->ru0", "ru0 nic"]);
    }
}
