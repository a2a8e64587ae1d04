//! Lowering `[network]` into a [`NetworkPlan`]: the builder's steps (a switch, a host's link, a
//! trunk, daqrings, edge hops, a tier's buffers) and the star and two-tier topologies; the
//! parallel leaf-spine is in `leaf_spine.rs`.

use super::{
    HostSpec, NetworkPlan, PoolId, PoolPlan, PortBuffer, PortId, PortPlan, SwitchId, SwitchPlan, SwitchRole, Vertex,
    UPLINK,
};
use daqnet_core::scenario::{
    BufferConfig, DaqringConfig, EcnMarking, EdgeHost, HostCpu, Network, SwitchConfig, SwitchKind, Topology,
};

pub(super) struct Builder {
    pub(super) f: NetworkPlan,
}

impl Builder {
    /// A switch `name`, configured by scenario section `field` as `kind`.
    pub(super) fn switch(&mut self, name: String, role: SwitchRole, (field, kind): (&'static str, SwitchKind)) -> u32 {
        self.f.switches.push(SwitchPlan { name, role, kind, field });
        self.f.fwd.push(vec![UPLINK; self.f.hosts.len()]);
        self.f.uplinks.push(Vec::new());
        self.f.switches.len() as u32 - 1
    }

    fn switch_name(&self, s: u32) -> &str {
        &self.f.switches[s as usize].name
    }

    fn vertex_name(&self, v: Vertex) -> String {
        match v {
            Vertex::Host(h) => self.f.hosts[h.0 as usize].name.clone(),
            Vertex::Switch(s) => self.switch_name(s.0).to_string(),
        }
    }

    /// Host `h` on switch `s`: the host's NIC and the switch's port towards it, which reaches
    /// the host's stack after its latency. Returns (NIC, switch port).
    pub(super) fn attach_host(&mut self, net: &Network, h: u32, s: u32) -> (u32, u32) {
        let (host, sw) = (Vertex::Host(super::HostId(h)), Vertex::Switch(SwitchId(s)));
        let name = self.f.hosts[h as usize].name.clone();
        let (rate, swn) = (self.f.hosts[h as usize].link_bps, self.switch_name(s).to_string());
        let d = net.link_delay_ns;
        let nic = self.port(format!("{name}->{swn}"), (host, sw), rate, d, PortBuffer::Unlimited, false);
        if net.host_burst_ns > 0 {
            self.f.ports[nic as usize].shaper_burst_ns = Some(net.host_burst_ns);
        }
        let into_host = d + net.host_delay_ns;
        let p = self.port(format!("{swn}->{name}"), (sw, host), rate, into_host, PortBuffer::Unlimited, true);
        self.f.fwd[s as usize][h as usize] = p;
        (nic, p)
    }

    /// A link between switches `a` and `b`: (a's port towards b, b's port towards a).
    pub(super) fn trunk(&mut self, a: u32, b: u32, rate: u64, delay: u64) -> (u32, u32) {
        let (an, bn) = (self.switch_name(a).to_string(), self.switch_name(b).to_string());
        let (va, vb) = (Vertex::Switch(SwitchId(a)), Vertex::Switch(SwitchId(b)));
        let ab = self.port(format!("{an}->{bn}"), (va, vb), rate, delay, PortBuffer::Unlimited, true);
        let ba = self.port(format!("{bn}->{an}"), (vb, va), rate, delay, PortBuffer::Unlimited, true);
        (ab, ba)
    }

    /// A host's NIC for every path.
    pub(super) fn nic_for_all_paths(&mut self, h: u32, nic: u32) {
        let paths = self.f.paths as usize;
        self.f.host_nic[h as usize * paths..(h as usize + 1) * paths].fill(nic);
    }

    /// A port from `ends.0` whose link leads to `ends.1` (and whose frames arrive there).
    fn port(
        &mut self,
        name: String,
        (from, to): (Vertex, Vertex),
        rate_bps: u64,
        delay_ns: u64,
        buffer: PortBuffer,
        on_switch: bool,
    ) -> u32 {
        let port = PortPlan {
            name,
            from,
            to,
            peer: to,
            rate_bps,
            delay_ns,
            buffer,
            on_switch,
            shaper_burst_ns: None,
            marking: None,
            pause: None,
        };
        self.f.ports.push(port);
        self.f.ports.len() as u32 - 1
    }

    /// A vertex that sends every frame to one port (created next, see [`Builder::port`]): what
    /// a hop in front of a port or a host needs to be reached by routing.
    fn hop_vertex(&mut self, name: String, role: SwitchRole, field: &'static str) -> u32 {
        let hosts = self.f.hosts.len();
        let v = self.switch(name, role, (field, SwitchKind::Bridge));
        self.f.fwd[v as usize] = vec![self.f.ports.len() as u32; hosts];
        v
    }

    /// `ports` of a switch configured as `sw`: rate-limited daqrings if it is a daqring switch
    /// with a polling cycle.
    pub(super) fn rate_limit(&mut self, ports: &[u32], sw: &SwitchConfig, net: &Network) {
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
        let hosts = self.f.hosts.len() as u32;
        for &p in ports {
            let Vertex::Switch(SwitchId(s)) = self.f.ports[p as usize].from else { continue };
            let dsts: Vec<u32> = (0..hosts).filter(|&h| self.f.fwd[s as usize][h as usize] == p).collect();
            if dsts.is_empty() {
                continue;
            }
            let name = self.f.ports[p as usize].name.clone();
            let field = self.f.switches[s as usize].field;
            let v = self.switch(format!("{name} daqrings"), SwitchRole::Daqrings, (field, SwitchKind::Daqring));
            let (owner, rings) = (Vertex::Switch(SwitchId(s)), Vertex::Switch(SwitchId(v)));
            for dst in dsts {
                let ring_name = format!("{name} ring {}", self.f.hosts[dst as usize].name);
                let buffer = PortBuffer::Dedicated(cfg.queue_bytes);
                let ring = self.port(ring_name, (owner, rings), ring_bps, 0, buffer, true);
                self.f.ports[ring as usize].shaper_burst_ns = Some(cfg.poll_cycle_ns);
                self.f.fwd[s as usize][dst as usize] = ring;
                self.f.fwd[v as usize][dst as usize] = p;
            }
        }
    }

    /// The edge hosts' receive path (`[network.edge]`): every switch port whose frames reach
    /// an edge vertex (`is_edge`) now reaches that vertex through one hop per vertex — its NIC's
    /// buffer, drained across the bus — shared by all the vertex's links (a dual-port NIC on
    /// one bus). A host's stack latency moves from the port to the hop.
    pub(super) fn edge_hops(&mut self, edge: &EdgeHost, host_delay_ns: u64, is_edge: impl Fn(Vertex) -> bool) {
        let mut targets: Vec<Vertex> = Vec::new();
        for p in &self.f.ports {
            if p.on_switch && is_edge(p.peer) && !targets.contains(&p.peer) {
                targets.push(p.peer);
            }
        }
        for t in targets {
            if !edge.hosts.is_empty() && !edge.hosts.contains(&self.vertex_name(t)) {
                continue;
            }
            let name = self.vertex_name(t);
            let stack = if matches!(t, Vertex::Host(_)) { host_delay_ns } else { 0 };
            let links: Vec<usize> =
                (0..self.f.ports.len()).filter(|&p| self.f.ports[p].on_switch && self.f.ports[p].peer == t).collect();
            let v = self.hop_vertex(format!("{name} bus"), SwitchRole::Bus, "network.edge");
            let bus = Vertex::Switch(SwitchId(v));
            let buffer = PortBuffer::Dedicated(edge.nic_buffer_bytes);
            let hop = self.port(format!("{name} nic"), (bus, t), edge.bus_bps, stack, buffer, false);
            for p in links {
                self.f.ports[p].peer = bus;
                self.f.ports[p].delay_ns -= stack;
            }
            self.f.edge_ports.push(PortId(hop));
        }
    }

    /// `[network.host_cpu]`: every chosen host reaches its stack through its cores.
    fn host_cpus(&mut self, cpu: &HostCpu, host_delay_ns: u64) {
        for h in 0..self.f.hosts.len() as u32 {
            let name = &self.f.hosts[h as usize].name;
            if cpu.hosts.is_empty() || cpu.hosts.contains(name) {
                self.cpu(Vertex::Host(super::HostId(h)), cpu, host_delay_ns);
            }
        }
    }

    /// Every link into `at` (a switch's port, an edge host's bus, a host's link into the switch)
    /// now reaches it through a hop with a port per core, which carries `stack_ns` (a host's
    /// stack latency) instead of the links.
    pub(super) fn cpu(&mut self, at: Vertex, cpu: &HostCpu, stack_ns: u64) {
        let name = self.vertex_name(at);
        let links: Vec<usize> =
            (0..self.f.ports.len()).filter(|&p| self.f.ports[p].peer == at && self.f.ports[p].from != at).collect();
        let rate = links.iter().map(|&p| self.f.ports[p].rate_bps).max().unwrap_or(1);
        let v = self.hop_vertex(format!("{name} cpu"), SwitchRole::Cpu, cpu_field(at));
        let hop = Vertex::Switch(SwitchId(v));
        let cores = (0..cpu.cores)
            .map(|k| {
                PortId(self.port(format!("{name} core{k}"), (hop, at), rate, stack_ns, PortBuffer::Unlimited, false))
            })
            .collect();
        for p in links {
            self.f.ports[p].peer = hop;
            self.f.ports[p].delay_ns -= stack_ns;
        }
        self.f.cpus.push(super::CpuPlan { at, hop: SwitchId(v), cores, cost: cpu.clone() });
    }

    /// `[network.ecn]` on every switch output port that queues in a finite buffer, except a
    /// daqring switch's (daqnet's software switch has no marking).
    fn mark(&mut self, m: &EcnMarking) {
        for p in &mut self.f.ports {
            let Vertex::Switch(s) = p.from else { continue };
            let bridge = self.f.switches[s.0 as usize].kind == SwitchKind::Bridge;
            if p.on_switch && bridge && p.buffer != PortBuffer::Unlimited {
                p.marking = Some(m.clone());
            }
        }
    }

    /// Gives consecutive ports of one switch their buffer according to its scheme.
    pub(super) fn apply_buffer(&mut self, ports: &[u32], cfg: &BufferConfig) {
        match *cfg {
            BufferConfig::Dedicated { port_bytes } | BufferConfig::Deep { port_bytes } => {
                for &p in ports {
                    self.f.ports[p as usize].buffer = PortBuffer::Dedicated(port_bytes);
                }
            }
            BufferConfig::Shared { pool_bytes, ports_per_pool, port_cap_bytes } => {
                for group in ports.chunks(ports_per_pool as usize) {
                    let pool = PoolId(self.f.pools.len() as u32);
                    let members = group.iter().map(|&p| PortId(p)).collect();
                    self.f.pools.push(PoolPlan { capacity: pool_bytes, members });
                    for &p in group {
                        self.f.ports[p as usize].buffer = PortBuffer::Shared { pool, cap: port_cap_bytes };
                    }
                }
            }
        }
    }
}

/// The scenario section of a CPU at `at`.
fn cpu_field(at: Vertex) -> &'static str {
    match at {
        Vertex::Host(_) => "network.host_cpu",
        Vertex::Switch(_) => "network.switch.cpu",
    }
}

/// The number of paths of `net`'s topology.
fn paths(net: &Network) -> u32 {
    match net.topology {
        Topology::Star => 1,
        Topology::TwoTier => net.core.as_ref().expect("two_tier has [network.core]").routers,
        Topology::ParallelLeafSpine => {
            let f = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]");
            f.planes * f.spines_per_plane
        }
    }
}

/// The plan of `net` for `host_specs`; in a two-tier network or a parallel leaf-spine the first
/// `readout_units` are readout units, the rest nodes.
pub(super) fn assemble(net: &Network, host_specs: Vec<HostSpec>, readout_units: u32) -> NetworkPlan {
    let paths = paths(net);
    let mut b = Builder {
        f: NetworkPlan {
            host_nic: vec![0; host_specs.len() * paths as usize],
            hosts: host_specs.into_iter().map(|(name, link_bps)| super::HostPlan { name, link_bps }).collect(),
            switches: Vec::new(),
            ports: Vec::new(),
            pools: Vec::new(),
            edge_ports: Vec::new(),
            paths,
            fwd: Vec::new(),
            uplinks: Vec::new(),
            planned: None,
            spines_per_plane: net.fabric.as_ref().map_or(1, |f| f.spines_per_plane),
            flow: None,
            cpus: Vec::new(),
        },
    };
    let mut rack_servers = Vec::new();
    match net.topology {
        Topology::Star => star(&mut b, net),
        Topology::TwoTier => two_tier(&mut b, net, readout_units),
        Topology::ParallelLeafSpine => rack_servers = super::leaf_spine::build(&mut b, net, readout_units),
    }
    if let Some(edge) = &net.edge {
        b.edge_hops(edge, net.host_delay_ns, |v| match v {
            Vertex::Host(h) => net.topology != Topology::ParallelLeafSpine || h.0 < readout_units,
            Vertex::Switch(s) => rack_servers.contains(&s.0),
        });
    }
    if let Some(cpu) = &net.host_cpu {
        b.host_cpus(cpu, net.host_delay_ns);
    }
    if let Some(m) = &net.ecn {
        b.mark(m);
    }
    if let Some(fc) = &net.flow_control {
        b.flow_control(fc, net);
    }
    b.f
}

/// Attaches host `h` to switch `s` on every path: the switch's port towards it.
fn attach(b: &mut Builder, net: &Network, s: u32, h: u32) -> u32 {
    let (nic, p) = b.attach_host(net, h, s);
    b.nic_for_all_paths(h, nic);
    p
}

/// One switch joining every host. The daqring switch keeps a byte-capped queue per
/// destination, served at line rate. On a star every port leads to one host, so that is one
/// queue per port (round-robin between daqrings and the burst limit only act where several
/// collectors share a port, which this topology never has).
fn star(b: &mut Builder, net: &Network) {
    let cfg = net.switch.as_ref().expect("star has [network.switch]");
    let s = b.switch("sw".into(), SwitchRole::Star, ("network.switch", cfg.kind));
    let ports: Vec<u32> = (0..b.f.hosts.len() as u32).map(|h| attach(b, net, s, h)).collect();
    let daqring = BufferConfig::Dedicated { port_bytes: cfg.daqring.queue_bytes };
    b.apply_buffer(&ports, if cfg.kind == SwitchKind::Daqring { &daqring } else { &cfg.buffer });
    b.rate_limit(&ports, cfg, net);
    if let Some(cpu) = &cfg.cpu {
        b.cpu(Vertex::Switch(SwitchId(s)), cpu, 0);
    }
}

/// Racks of access switches under the core routers: readout units in groups of
/// `readout_switch.hosts`, nodes in groups of `rack_switch.hosts`, every access switch with an
/// uplink to every core router.
fn two_tier(b: &mut Builder, net: &Network, readout_units: u32) {
    let ro = net.readout_switch.as_ref().expect("two_tier has [network.readout_switch]");
    let rack = net.rack_switch.as_ref().expect("two_tier has [network.rack_switch]");
    let core = net.core.as_ref().expect("two_tier has [network.core]");
    let hosts = b.f.hosts.len() as u32;
    let cores: Vec<u32> = (0..core.routers)
        .map(|c| b.switch(format!("core{c}"), SwitchRole::Core(c), ("network.core", SwitchKind::Bridge)))
        .collect();
    let mut core_ports: Vec<Vec<u32>> = vec![Vec::new(); cores.len()];
    let groups = [
        ("ro", 0..readout_units, ro, "network.readout_switch"),
        ("rack", readout_units..hosts, rack, "network.rack_switch"),
    ];
    for (prefix, range, cfg, field) in groups {
        let members: Vec<u32> = range.collect();
        for (i, chunk) in members.chunks(cfg.hosts as usize).enumerate() {
            let s = b.switch(format!("{prefix}{i}"), SwitchRole::Access, (field, SwitchKind::Bridge));
            let mut ports: Vec<u32> = chunk.iter().map(|&h| attach(b, net, s, h)).collect();
            for (c, &cs) in cores.iter().enumerate() {
                let (up, down) = b.trunk(s, cs, cfg.uplink_bps, net.link_delay_ns);
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
