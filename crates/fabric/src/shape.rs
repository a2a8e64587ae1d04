//! The shape of a parallel leaf-spine fabric: who sits in which pod and rack, which planes each
//! readout unit and rack reaches, and the names of its switches.

use crate::PlanError;
use daqnet_core::ids::{NodeId, ReadoutId};
use daqnet_core::scenario::{Network, Scenario, SwitchKind, Topology};
use serde::Serialize;
use std::fmt;

/// A pod: a group of readout units and racks with one leaf switch in every plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Pod(pub u32);

/// An independent leaf-spine plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Plane(pub u32);

/// An HLT rack: a top-of-rack switch and its nodes, numbered globally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Rack(pub u32);

/// A spine switch: its index within its plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Spine(pub u32);

/// A switch of the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Switch {
    /// A pod's leaf in one plane.
    Leaf(Plane, Pod),
    /// A spine of one plane.
    Spine(Plane, Spine),
    /// A rack's top-of-rack switch.
    Rack(Rack),
}

impl fmt::Display for Switch {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Switch::Leaf(p, pod) => write!(f, "p{}-leaf{}", p.0, pod.0),
            Switch::Spine(p, s) => write!(f, "p{}-spine{}", p.0, s.0),
            Switch::Rack(r) => write!(f, "rack{}", r.0),
        }
    }
}

/// Sizes, reach and link rates of a parallel leaf-spine fabric, from a valid scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shape {
    /// Pods.
    pub pods: u32,
    /// Planes.
    pub planes: u32,
    /// Spines per plane.
    pub spines: u32,
    /// Readout units per pod.
    pub readout_per_pod: u32,
    /// Racks per pod.
    pub racks_per_pod: u32,
    /// Nodes (collectors) per rack.
    pub nodes_per_rack: u32,
    /// Planes each readout unit reaches.
    pub readout_uplinks: u32,
    /// Planes each rack reaches.
    pub rack_uplinks: u32,
    /// Readout unit ↔ leaf, in bit/s.
    pub readout_bps: u64,
    /// Rack ↔ leaf, in bit/s.
    pub rack_uplink_bps: u64,
    /// Leaf ↔ spine, in bit/s.
    pub spine_bps: u64,
    /// Rack switch ↔ node, in bit/s.
    pub node_bps: u64,
    /// Leaf, spine and rack switches are daqrings (a queue per collector).
    pub daqring: Tiers,
}

/// A flag per switch tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tiers {
    /// The leaves.
    pub leaf: bool,
    /// The spines.
    pub spine: bool,
    /// The top-of-rack switches.
    pub rack: bool,
}

impl Shape {
    /// The fabric of a scenario with `topology = "parallel_leaf_spine"`; the scenario must have
    /// passed [`Scenario::validate`].
    pub fn of(sc: &Scenario) -> Result<Shape, PlanError> {
        Shape::of_network(&sc.network)
    }

    /// The fabric of a valid `[network]` with `topology = "parallel_leaf_spine"`.
    pub fn of_network(n: &Network) -> Result<Shape, PlanError> {
        let f = match (&n.fabric, n.topology) {
            (Some(f), Topology::ParallelLeafSpine) => f,
            _ => return Err(PlanError::NotAFabric(n.topology.name())),
        };
        Ok(Shape {
            pods: f.pods,
            planes: f.planes,
            spines: f.spines_per_plane,
            readout_per_pod: f.readout_per_pod,
            racks_per_pod: f.racks_per_pod,
            nodes_per_rack: f.nodes_per_rack,
            readout_uplinks: f.readout_planes(),
            rack_uplinks: f.rack_planes(),
            readout_bps: n.readout_link_bps,
            rack_uplink_bps: f.rack_uplink_bps,
            spine_bps: f.spine_link_bps,
            node_bps: n.node_link_bps,
            daqring: Tiers {
                leaf: f.leaf.kind == SwitchKind::Daqring,
                spine: f.spine.kind == SwitchKind::Daqring,
                rack: f.rack.kind == SwitchKind::Daqring,
            },
        })
    }

    /// Readout units in all (`n_R`, [LOSSLESS] eq. (4)).
    pub fn readout_units(&self) -> u32 {
        self.pods * self.readout_per_pod
    }

    /// Racks in all (`n_H`, eq. (4)).
    pub fn racks(&self) -> u32 {
        self.pods * self.racks_per_pod
    }

    /// Nodes (collectors) in all.
    pub fn nodes(&self) -> u32 {
        self.racks() * self.nodes_per_rack
    }

    /// The pod of a readout unit.
    pub fn pod_of_readout(&self, r: ReadoutId) -> Pod {
        Pod(r.0 / self.readout_per_pod)
    }

    /// The rack of a node.
    pub fn rack_of(&self, n: NodeId) -> Rack {
        Rack(n.0 / self.nodes_per_rack)
    }

    /// The pod of a rack.
    pub fn pod_of_rack(&self, k: Rack) -> Pod {
        Pod(k.0 / self.racks_per_pod)
    }

    /// The pod of a node.
    pub fn pod_of_node(&self, n: NodeId) -> Pod {
        self.pod_of_rack(self.rack_of(n))
    }

    /// Whether readout unit `r` has an uplink to plane `p`.
    pub fn readout_reaches(&self, r: ReadoutId, p: Plane) -> bool {
        reaches(r.0, self.readout_uplinks, self.planes, p)
    }

    /// Whether rack `k` has an uplink to plane `p`.
    pub fn rack_reaches(&self, k: Rack, p: Plane) -> bool {
        reaches(k.0, self.rack_uplinks, self.planes, p)
    }

    /// Every plane.
    pub fn all_planes(&self) -> impl Iterator<Item = Plane> {
        (0..self.planes).map(Plane)
    }

    /// Every spine of a plane.
    pub fn all_spines(&self) -> impl Iterator<Item = Spine> {
        (0..self.spines).map(Spine)
    }

    /// Every switch: leaves, spines, then racks.
    pub fn switches(&self) -> Vec<Switch> {
        let mut v = Vec::new();
        for p in self.all_planes() {
            v.extend((0..self.pods).map(|pod| Switch::Leaf(p, Pod(pod))));
        }
        for p in self.all_planes() {
            v.extend(self.all_spines().map(|s| Switch::Spine(p, s)));
        }
        v.extend((0..self.racks()).map(|k| Switch::Rack(Rack(k))));
        v
    }
}

/// Host `i` with `u` uplinks reaches the arc of planes starting at `i·u` (mod `planes`): hosts
/// with one uplink alternate between planes, so partial uplinks still load every plane alike.
fn reaches(i: u32, u: u32, planes: u32, p: Plane) -> bool {
    let first = (i as u64 * u as u64 % planes as u64) as u32;
    (p.0 + planes - first) % planes < u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staggered_uplinks_cover_the_planes_evenly() {
        // One uplink each on 2 planes: even hosts on plane 0, odd on plane 1.
        assert!(reaches(0, 1, 2, Plane(0)) && !reaches(0, 1, 2, Plane(1)));
        assert!(reaches(1, 1, 2, Plane(1)) && !reaches(1, 1, 2, Plane(0)));
        // Two uplinks of three planes: every plane reached by two of three hosts.
        for p in 0..3 {
            assert_eq!((0..3).filter(|&i| reaches(i, 2, 3, Plane(p))).count(), 2);
        }
        // All uplinks: every plane.
        assert!((0..4).all(|p| reaches(7, 4, 4, Plane(p))));
    }
}
