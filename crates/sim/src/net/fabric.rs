//! The fabric: hosts, switches, their output ports and the routes between them, built from a
//! scenario's `[network]` section.
//!
//! Host numbering: readout unit `r` is host `r`; node `n` is host `readout_units + n`.

use super::port::{BufferPools, Port, PortBuffer};
use super::wire::{serialization_ps, wire_bytes};
use daqnet_core::scenario::{BufferConfig, Network, SwitchKind, Topology};

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
    /// The transmit port of each host.
    pub host_nic: Vec<u32>,
    /// Per switch, per destination host: the output port, or `UPLINK` (choose by core).
    fwd: Vec<Vec<u32>>,
    /// Per switch: its uplink port to each core router (empty for cores and a star switch).
    uplinks: Vec<Vec<u32>>,
    /// Number of core routers (1 in a star, where it is unused).
    pub cores: u32,
    /// Switch names.
    pub switch_names: Vec<String>,
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

    fn port(&mut self, name: String, rate: u64, delay: u64, buffer: PortBuffer, on_switch: bool, peer: Vertex) -> u32 {
        self.f.ports.push(Port::new(name, rate, delay, buffer, on_switch));
        self.f.peer.push(peer);
        self.f.ports.len() as u32 - 1
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
        format!("ru{h}")
    } else {
        format!("node{}", h - readout_units)
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
                host_nic: vec![0; hosts],
                fwd: Vec::new(),
                uplinks: Vec::new(),
                cores: 1,
                switch_names: Vec::new(),
            },
        };
        let d = net.link_delay_ns;
        let into_host = net.link_delay_ns + net.host_delay_ns;
        let host_rate = |h: u32| host_specs[h as usize].1;
        // Attaches host h to switch s: the host's NIC and the switch's port towards it.
        let attach = |b: &mut Builder, s: u32, h: u32| -> u32 {
            let sw = b.f.switch_names[s as usize].clone();
            let hn = &host_specs[h as usize].0;
            let nic = b.port(format!("{hn}->{sw}"), host_rate(h), d, PortBuffer::Unlimited, false, Vertex::Switch(s));
            if net.host_burst_ns > 0 {
                b.f.ports[nic as usize].shape(net.host_burst_ns);
            }
            b.f.host_nic[h as usize] = nic;
            let p =
                b.port(format!("{sw}->{hn}"), host_rate(h), into_host, PortBuffer::Unlimited, true, Vertex::Host(h));
            b.f.fwd[s as usize][h as usize] = p;
            p
        };
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
            }
            Topology::TwoTier => {
                let ro = net.readout_switch.as_ref().expect("two_tier has [network.readout_switch]");
                let rack = net.rack_switch.as_ref().expect("two_tier has [network.rack_switch]");
                let core = net.core.as_ref().expect("two_tier has [network.core]");
                b.f.cores = core.routers;
                let cores: Vec<u32> = (0..core.routers).map(|c| b.switch(format!("core{c}"), hosts)).collect();
                let mut core_ports: Vec<Vec<u32>> = vec![Vec::new(); cores.len()];
                let groups = [("ro", 0..readout_units, ro), ("rack", readout_units..readout_units + nodes, rack)];
                for (prefix, range, cfg) in groups {
                    let members: Vec<u32> = range.collect();
                    for (i, chunk) in members.chunks(cfg.hosts as usize).enumerate() {
                        let s = b.switch(format!("{prefix}{i}"), hosts);
                        let mut ports: Vec<u32> = chunk.iter().map(|&h| attach(&mut b, s, h)).collect();
                        let sw = b.f.switch_names[s as usize].clone();
                        for (c, &cs) in cores.iter().enumerate() {
                            let cn = b.f.switch_names[cs as usize].clone();
                            let up = b.port(
                                format!("{sw}->{cn}"),
                                cfg.uplink_bps,
                                d,
                                PortBuffer::Unlimited,
                                true,
                                Vertex::Switch(cs),
                            );
                            b.f.uplinks[s as usize].push(up);
                            ports.push(up);
                            let down = b.port(
                                format!("{cn}->{sw}"),
                                cfg.uplink_bps,
                                d,
                                PortBuffer::Unlimited,
                                true,
                                Vertex::Switch(s),
                            );
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
        }
        b.f
    }

    /// The output port switch `s` uses for a frame to host `dst` travelling via core `core`.
    #[inline]
    pub fn route(&self, s: u32, dst: u32, core: u32) -> u32 {
        let p = self.fwd[s as usize][dst as usize];
        if p == UPLINK {
            self.uplinks[s as usize][core as usize]
        } else {
            p
        }
    }

    /// The ports a frame from host `src` to host `dst` via core `core` leaves through, in order.
    pub fn path(&self, src: u32, dst: u32, core: u32) -> Vec<u32> {
        let mut path = vec![self.host_nic[src as usize]];
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
}
