//! The links of a fabric in the direction event data flows (readout unit → node), each with an
//! index, a tier and a capacity. Requests and acknowledgements take the reverse links, which
//! event data never load.

use crate::shape::{Plane, Pod, Rack, Shape, Spine, Switch};
use daqnet_core::ids::{NodeId, ReadoutId};
use serde::Serialize;
use std::fmt;

/// A directed link, in the direction of event data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Link {
    /// A readout unit's uplink to its pod's leaf in a plane.
    ReadoutUp(ReadoutId, Plane),
    /// A leaf's link up to a spine of its plane.
    SpineUp(Plane, Pod, Spine),
    /// A spine's link down to a pod's leaf.
    SpineDown(Plane, Spine, Pod),
    /// A leaf's link down to a rack of its pod.
    RackDown(Plane, Rack),
    /// A top-of-rack switch's link to a node.
    NodeDown(NodeId),
}

/// The tiers of links, in the order data crosses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Readout unit → leaf.
    ReadoutUplink,
    /// Leaf → spine.
    LeafToSpine,
    /// Spine → leaf.
    SpineToLeaf,
    /// Leaf → rack.
    LeafToRack,
    /// Rack → node.
    RackToNode,
}

impl Tier {
    /// All tiers, in the order data crosses them.
    pub const ALL: [Tier; 5] =
        [Tier::ReadoutUplink, Tier::LeafToSpine, Tier::SpineToLeaf, Tier::LeafToRack, Tier::RackToNode];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Tier::ReadoutUplink => "readout → leaf",
            Tier::LeafToSpine => "leaf → spine",
            Tier::SpineToLeaf => "spine → leaf",
            Tier::LeafToRack => "leaf → rack",
            Tier::RackToNode => "rack → node",
        }
    }
}

impl Link {
    /// The tier the link belongs to.
    pub fn tier(self) -> Tier {
        match self {
            Link::ReadoutUp(..) => Tier::ReadoutUplink,
            Link::SpineUp(..) => Tier::LeafToSpine,
            Link::SpineDown(..) => Tier::SpineToLeaf,
            Link::RackDown(..) => Tier::LeafToRack,
            Link::NodeDown(..) => Tier::RackToNode,
        }
    }
}

/// Names a link by the switch ports at its ends, as in the simulator: `ru3->p0-leaf1`.
pub struct Named<'a>(pub &'a Shape, pub Link);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let s = self.0;
        match self.1 {
            Link::ReadoutUp(r, p) => write!(f, "ru{}->{}", r.0, Switch::Leaf(p, s.pod_of_readout(r))),
            Link::SpineUp(p, pod, sp) => write!(f, "{}->{}", Switch::Leaf(p, pod), Switch::Spine(p, sp)),
            Link::SpineDown(p, sp, pod) => write!(f, "{}->{}", Switch::Spine(p, sp), Switch::Leaf(p, pod)),
            Link::RackDown(p, k) => write!(f, "{}->{}", Switch::Leaf(p, s.pod_of_rack(k)), Switch::Rack(k)),
            Link::NodeDown(n) => write!(f, "{}->node{}", Switch::Rack(s.rack_of(n)), n.0),
        }
    }
}

/// Index of a link in per-link tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LinkId(pub u32);

/// The index arithmetic between [`Link`] and [`LinkId`] for one shape.
#[derive(Debug, Clone)]
pub struct Links {
    shape: Shape,
    /// First index of each tier, and the end.
    base: [u32; 6],
}

impl Links {
    /// The links of `shape`.
    pub fn new(shape: &Shape) -> Links {
        let s = shape;
        let counts = [
            s.readout_units() * s.planes,
            s.planes * s.pods * s.spines,
            s.planes * s.pods * s.spines,
            s.racks() * s.planes,
            s.nodes(),
        ];
        let mut base = [0; 6];
        for (i, c) in counts.iter().enumerate() {
            base[i + 1] = base[i] + c;
        }
        Links { shape: shape.clone(), base }
    }

    /// The shape these links belong to.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Number of link indices (including links a partial uplink leaves out).
    pub fn len(&self) -> usize {
        self.base[5] as usize
    }

    /// Whether the fabric has no links (never, for a valid shape).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of a link.
    pub fn id(&self, l: Link) -> LinkId {
        let s = &self.shape;
        let (tier, i) = match l {
            Link::ReadoutUp(r, p) => (0, r.0 * s.planes + p.0),
            Link::SpineUp(p, pod, sp) => (1, (p.0 * s.pods + pod.0) * s.spines + sp.0),
            Link::SpineDown(p, sp, pod) => (2, (p.0 * s.pods + pod.0) * s.spines + sp.0),
            Link::RackDown(p, k) => (3, k.0 * s.planes + p.0),
            Link::NodeDown(n) => (4, n.0),
        };
        LinkId(self.base[tier] + i)
    }

    /// The link of an index.
    pub fn link(&self, id: LinkId) -> Link {
        let s = &self.shape;
        let tier = (0..5).rev().find(|&t| id.0 >= self.base[t]).expect("index 0 is in tier 0");
        let i = id.0 - self.base[tier];
        let spine = |i: u32| (Plane(i / s.spines / s.pods), Pod(i / s.spines % s.pods), Spine(i % s.spines));
        match tier {
            0 => Link::ReadoutUp(ReadoutId(i / s.planes), Plane(i % s.planes)),
            1 => {
                let (p, pod, sp) = spine(i);
                Link::SpineUp(p, pod, sp)
            }
            2 => {
                let (p, pod, sp) = spine(i);
                Link::SpineDown(p, sp, pod)
            }
            3 => Link::RackDown(Plane(i % s.planes), Rack(i / s.planes)),
            _ => Link::NodeDown(NodeId(i)),
        }
    }

    /// Whether the fabric has this link: partial uplinks leave some out.
    pub fn exists(&self, l: Link) -> bool {
        match l {
            Link::ReadoutUp(r, p) => self.shape.readout_reaches(r, p),
            Link::RackDown(p, k) => self.shape.rack_reaches(k, p),
            Link::SpineUp(..) | Link::SpineDown(..) => self.shape.pods > 1,
            Link::NodeDown(_) => true,
        }
    }

    /// Capacity of a link, in bit/s.
    pub fn capacity_bps(&self, l: Link) -> u64 {
        let s = &self.shape;
        match l.tier() {
            Tier::ReadoutUplink => s.readout_bps,
            Tier::LeafToSpine | Tier::SpineToLeaf => s.spine_bps,
            Tier::LeafToRack => s.rack_uplink_bps,
            Tier::RackToNode => s.node_bps,
        }
    }

    /// Every link index with its link.
    pub fn all(&self) -> impl Iterator<Item = (LinkId, Link)> + '_ {
        (0..self.len() as u32).map(move |i| (LinkId(i), self.link(LinkId(i))))
    }

    /// The link's name (`ru3->p0-leaf1`).
    pub fn name(&self, l: Link) -> String {
        Named(&self.shape, l).to_string()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::shape::Tiers;

    /// A small fabric for tests: 3 pods, 2 planes × 2 spines, racks on one plane each.
    pub(crate) fn shape() -> Shape {
        Shape {
            pods: 3,
            planes: 2,
            spines: 2,
            readout_per_pod: 2,
            racks_per_pod: 2,
            nodes_per_rack: 3,
            readout_uplinks: 2,
            rack_uplinks: 1,
            readout_bps: 10,
            rack_uplink_bps: 20,
            spine_bps: 30,
            node_bps: 40,
            daqring: Tiers::default(),
        }
    }

    #[test]
    fn ids_and_links_are_inverse() {
        let links = Links::new(&shape());
        // 6 readout × 2 planes + 2 × (2 planes × 3 pods × 2 spines) + 6 racks × 2 planes + 18 nodes.
        assert_eq!(links.len(), 12 + 24 + 12 + 18);
        for (id, l) in links.all() {
            assert_eq!(links.id(l), id, "{}", links.name(l));
        }
        assert_eq!(links.name(Link::SpineDown(Plane(1), Spine(0), Pod(2))), "p1-spine0->p1-leaf2");
        assert_eq!(links.name(Link::NodeDown(NodeId(7))), "rack2->node7");
        // Rack 1 has one uplink: to plane 1 only.
        assert!(!links.exists(Link::RackDown(Plane(0), Rack(1))) && links.exists(Link::RackDown(Plane(1), Rack(1))));
    }
}
