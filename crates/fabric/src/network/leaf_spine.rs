//! [LOSSLESS] §V-A's parallel leaf-spine as a [`super::NetworkPlan`]: a leaf per pod in every
//! plane, every leaf linked to every spine of its plane; readout units on their pod's leaf in
//! each plane they reach; racks (a top-of-rack switch and its nodes) with an uplink to their
//! pod's leaf in each plane they reach. Every flow's path comes from the placement of
//! [`crate::assign`] (the scenario's `assignment`), the same one `daqnet plan` prints and turns
//! into OpenFlow rules.

use super::build::Builder;
use super::SwitchRole;
use crate::assign::{place, Failures};
use crate::links::Links;
use crate::shape::{Plane, Rack, Shape};
use daqnet_core::scenario::{BufferConfig, Network, SwitchConfig, SwitchKind};
use daqnet_core::{NodeId, ReadoutId};

/// The switches of a parallel leaf-spine, by index in the plan.
struct Switches {
    /// `plane × pods + pod`.
    leaves: Vec<u32>,
    /// `plane × spines + spine`.
    spines: Vec<u32>,
    /// By rack.
    racks: Vec<u32>,
}

/// Ports of each tier, for their buffers and daqrings.
#[derive(Default)]
struct TierPorts {
    leaf: Vec<u32>,
    spine: Vec<u32>,
    rack: Vec<u32>,
}

/// Builds the parallel leaf-spine of `net` into `b`, whose first `readout_units` hosts are
/// readout units and the rest nodes. Returns the racks' switches (edge vertices when
/// `[network.edge]` is set).
pub(super) fn build(b: &mut Builder, net: &Network, readout_units: u32) -> Vec<u32> {
    let f = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]");
    let shape = Shape::of_network(net).expect("a valid parallel leaf-spine");
    let sw = switches(b, net, &shape);
    let mut tiers = TierPorts::default();
    readout_units_on_leaves(b, net, &shape, &sw, &mut tiers);
    racks(b, net, &shape, &sw, readout_units, &mut tiers);
    leaves_to_spines(b, net, &shape, &sw, readout_units, &mut tiers);
    for (ports, config) in [(&tiers.leaf, &f.leaf), (&tiers.spine, &f.spine), (&tiers.rack, &f.rack)] {
        b.apply_buffer(ports, &tier_buffer(config, shape.nodes()));
        b.rate_limit(ports, config, net);
    }
    let placement =
        place(&Links::new(&shape), &Failures::default(), f.assignment).expect("a valid fabric routes every flow");
    b.f.planned = Some((readout_units, placement));
    sw.racks
}

fn switches(b: &mut Builder, net: &Network, shape: &Shape) -> Switches {
    let f = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]");
    let (pods, spines) = (shape.pods, shape.spines);
    let leaves = (0..shape.planes * pods)
        .map(|i| {
            let (plane, pod) = (i / pods, i % pods);
            b.switch(
                format!("p{plane}-leaf{pod}"),
                SwitchRole::Leaf { plane, pod },
                ("network.fabric.leaf", f.leaf.kind),
            )
        })
        .collect();
    let spines = (0..shape.planes * spines)
        .map(|i| {
            let (plane, spine) = (i / spines, i % spines);
            let role = SwitchRole::Spine { plane, spine };
            b.switch(format!("p{plane}-spine{spine}"), role, ("network.fabric.spine", f.spine.kind))
        })
        .collect();
    let racks = (0..shape.racks())
        .map(|k| b.switch(format!("rack{k}"), SwitchRole::Rack(k), ("network.fabric.rack", f.rack.kind)))
        .collect();
    Switches { leaves, spines, racks }
}

/// Readout units: a link to their pod's leaf in each plane they reach.
fn readout_units_on_leaves(b: &mut Builder, net: &Network, shape: &Shape, sw: &Switches, tiers: &mut TierPorts) {
    let (planes, spines, paths) = (shape.planes, shape.spines, b.f.paths);
    for r in 0..shape.readout_units() {
        let pod = shape.pod_of_readout(ReadoutId(r)).0;
        let reached: Vec<u32> = (0..planes).filter(|&p| shape.readout_reaches(ReadoutId(r), Plane(p))).collect();
        let mut nic_of_plane = vec![u32::MAX; planes as usize];
        for &p in &reached {
            let (nic, down) = b.attach_host(net, r, sw.leaves[(p * shape.pods + pod) as usize]);
            nic_of_plane[p as usize] = nic;
            tiers.leaf.push(down);
        }
        // A path on a plane the unit does not reach is never planned for it; its first NIC
        // stands in so the table is total.
        for path in 0..paths {
            let nic = nic_of_plane[(path / spines) as usize];
            b.f.host_nic[(r * paths + path) as usize] =
                if nic == u32::MAX { nic_of_plane[reached[0] as usize] } else { nic };
        }
    }
}

/// Racks: their nodes, and an uplink to their pod's leaf in each plane they reach.
fn racks(b: &mut Builder, net: &Network, shape: &Shape, sw: &Switches, readout_units: u32, tiers: &mut TierPorts) {
    let (spines, paths) = (shape.spines, b.f.paths);
    let uplink_bps = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]").rack_uplink_bps;
    for (k, &rack) in sw.racks.iter().enumerate() {
        let k = k as u32;
        let hosts: Vec<u32> =
            (k * shape.nodes_per_rack..(k + 1) * shape.nodes_per_rack).map(|n| readout_units + n).collect();
        for &h in &hosts {
            let (nic, down) = b.attach_host(net, h, rack);
            b.nic_for_all_paths(h, nic);
            tiers.rack.push(down);
        }
        b.f.uplinks[rack as usize] = vec![u32::MAX; paths as usize];
        let pod = shape.pod_of_rack(Rack(k)).0;
        for p in (0..shape.planes).filter(|&p| shape.rack_reaches(Rack(k), Plane(p))) {
            let leaf = sw.leaves[(p * shape.pods + pod) as usize];
            let (up, down) = b.trunk(rack, leaf, uplink_bps, net.link_delay_ns);
            tiers.rack.push(up);
            b.f.uplinks[rack as usize][(p * spines) as usize..((p + 1) * spines) as usize].fill(up);
            tiers.leaf.push(down);
            for &h in &hosts {
                b.f.fwd[leaf as usize][h as usize] = down;
            }
        }
    }
}

/// Leaf ↔ spine, within each plane; a spine forwards every host of a pod to its leaf.
fn leaves_to_spines(
    b: &mut Builder,
    net: &Network,
    shape: &Shape,
    sw: &Switches,
    readout_units: u32,
    tiers: &mut TierPorts,
) {
    let (spines, paths, hosts) = (shape.spines, b.f.paths, b.f.hosts.len() as u32);
    let spine_bps = net.fabric.as_ref().expect("parallel_leaf_spine has [network.fabric]").spine_link_bps;
    let pod_of = |h: u32| {
        if h < readout_units {
            shape.pod_of_readout(ReadoutId(h)).0
        } else {
            shape.pod_of_node(NodeId(h - readout_units)).0
        }
    };
    for p in 0..shape.planes {
        for pod in 0..shape.pods {
            let leaf = sw.leaves[(p * shape.pods + pod) as usize];
            b.f.uplinks[leaf as usize] = vec![u32::MAX; paths as usize];
            let members: Vec<u32> = (0..hosts).filter(|&h| pod_of(h) == pod).collect();
            for s in 0..spines {
                let spine = sw.spines[(p * spines + s) as usize];
                let (up, down) = b.trunk(leaf, spine, spine_bps, net.link_delay_ns);
                b.f.uplinks[leaf as usize][(p * spines + s) as usize] = up;
                tiers.leaf.push(up);
                tiers.spine.push(down);
                for &h in &members {
                    b.f.fwd[spine as usize][h as usize] = down;
                }
            }
        }
    }
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
