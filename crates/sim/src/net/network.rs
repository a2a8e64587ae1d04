//! The simulated network: the ports of a [`NetworkPlan`] with their queues, and the plan's
//! forwarding and paths.

use super::port::{BufferPools, Marker, Port, PortBuffer};
use super::wire::{serialization_ps, wire_bytes};
use daqnet_core::scenario::EcnMarking;
use daqnet_core::workload::{rng_for, Stream};
use daqnet_fabric::network::{self, NetworkPlan, Vertex};

/// A network's live ports, their shared pools, and the plan they were built from.
#[derive(Debug, Clone)]
pub struct Network {
    /// Every output port, of hosts and switches, by [`PortId`].
    pub ports: Vec<Port>,
    /// What each port's frames arrive at (the plan's `peer`, kept beside the ports for the
    /// forwarding loop).
    pub peer: Vec<Vertex>,
    /// Shared buffer pools.
    pub pools: BufferPools,
    /// The plan: hosts, switches, forwarding, paths, elements.
    pub plan: NetworkPlan,
}

impl Network {
    /// The live ports of `plan`: each with its rate, delay, buffer, shaping and marking (a RED
    /// port draws from its own stream of `seed`); the pools with their members in the plan's
    /// order.
    pub fn new(plan: NetworkPlan, seed: u64) -> Network {
        let mut pools = BufferPools::default();
        for pool in &plan.pools {
            let id = pools.add(pool.capacity);
            for m in &pool.members {
                pools.join(id, m.0);
            }
        }
        let mut ports: Vec<Port> = plan.ports.iter().enumerate().map(|(i, p)| live_port(p, seed, i as u64)).collect();
        if plan.flow.is_some() {
            // Under flow control a switch's memory is counted by the port a frame came in
            // through (`PausePlan`), not by the port it leaves through.
            for p in &mut ports {
                p.buffer = PortBuffer::Unlimited;
            }
        }
        let peer = plan.ports.iter().map(|p| p.peer).collect();
        Network { ports, peer, pools, plan }
    }

    /// Host names (`ru3`, `node0`), by host number.
    pub fn host_name(&self, h: u32) -> &str {
        &self.plan.hosts[h as usize].name
    }

    /// The port host `h` sends a packet on `path` through.
    #[inline]
    pub fn nic(&self, h: u32, path: u32) -> u32 {
        self.plan.nic(h, path)
    }

    /// The output port switch `s` uses for a frame to host `dst` travelling on path `path`.
    #[inline]
    pub fn route(&self, s: u32, dst: u32, path: u32) -> u32 {
        self.plan.route(s, dst, path)
    }

    /// One-way time of a frame of `frame_bytes` from `src` to `dst` through empty queues, in ns.
    pub fn unloaded_delay_ns(&self, src: u32, dst: u32, path: u32, frame_bytes: u32) -> u64 {
        self.plan
            .path(src, dst, path)
            .iter()
            .map(|&p| {
                let port = &self.ports[p.0 as usize];
                serialization_ps(wire_bytes(frame_bytes), port.rate_bps).div_ceil(1000) + port.delay_ns
            })
            .sum()
    }
}

/// Port `index` of the plan, empty.
fn live_port(p: &network::PortPlan, seed: u64, index: u64) -> Port {
    let buffer = match p.buffer {
        network::PortBuffer::Unlimited => PortBuffer::Unlimited,
        network::PortBuffer::Dedicated(bytes) => PortBuffer::Dedicated(bytes),
        network::PortBuffer::Shared { pool, cap } => PortBuffer::Shared { pool: pool.0, cap },
    };
    let mut port = Port::new(p.name.clone(), p.rate_bps, p.delay_ns, buffer, p.on_switch);
    if let Some(burst_ns) = p.shaper_burst_ns {
        port.shape(burst_ns);
    }
    if let Some(m) = &p.marking {
        port.mark_with(marker(m, seed, index));
    }
    port
}

/// The marker of a port with `buffer` marking by `m`; a RED port draws from its own stream.
fn marker(m: &EcnMarking, seed: u64, index: u64) -> Marker {
    match *m {
        EcnMarking::Step { threshold_bytes: Some(k), .. } => Marker::StepBytes(k),
        EcnMarking::Step { threshold_packets, .. } => Marker::StepFrames(threshold_packets.unwrap_or(0)),
        EcnMarking::Red { min_bytes, max_bytes, max_probability } => Marker::Red {
            min: min_bytes,
            max: max_bytes,
            max_p: max_probability,
            rng: rng_for(seed, Stream::Marking, &[index]),
        },
    }
}
