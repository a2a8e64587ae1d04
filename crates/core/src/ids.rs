//! Identifiers, the time unit, and the [`Layout`] that owns the arithmetic between them.
//!
//! Every id is a newtype, so a node number cannot be passed where a processing unit is meant;
//! the arithmetic that relates them (which node a unit belongs to, which connection joins a node
//! and a readout unit) lives in one place, [`Layout`], instead of in every driver.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Time in integer nanoseconds (simulated or wall-clock, depending on the substrate).
pub type Nanos = u64;

/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident($int:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $int);

        impl $name {
            /// The number as an index into a per-id table.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id!(
    /// A collision event, numbered from 0 in assignment order.
    EventId(u64)
);
id!(
    /// A readout unit (readout system, ROS), numbered from 0.
    ReadoutId(u32)
);
id!(
    /// A worker node (one collector each), numbered from 0.
    NodeId(u32)
);
id!(
    /// A processing unit, numbered globally from 0; [`Layout`] says which node it belongs to.
    PuId(u32)
);
id!(
    /// A worker node of a sub-farm, numbered from 0 (see the `farm` module).
    WorkerId(u32)
);
id!(
    /// A data connection between one node's collector and one readout unit; [`Layout::conn`].
    ConnId(u32)
);

impl ReadoutId {
    /// The readout unit's host name in every substrate's reports and traces (`ru3`).
    pub fn host(self) -> String {
        format!("ru{}", self.0)
    }
}

impl NodeId {
    /// The node's host name in every substrate's reports and traces (`node0`).
    pub fn host(self) -> String {
        format!("node{}", self.0)
    }
}

impl WorkerId {
    /// The sub-farm worker's host name in every substrate's reports and traces (`worker2`).
    pub fn host(self) -> String {
        format!("worker{}", self.0)
    }
}

impl EventId {
    /// The event after this one.
    pub fn next(self) -> EventId {
        EventId(self.0 + 1)
    }
}

/// The end of a data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The node's collector: sends requests, receives responses.
    Collector,
    /// The readout unit: receives requests, sends responses.
    Readout,
}

impl Side {
    /// Both sides, collector first.
    pub const BOTH: [Side; 2] = [Side::Collector, Side::Readout];

    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::Collector => Side::Readout,
            Side::Readout => Side::Collector,
        }
    }

    /// 0 for the collector, 1 for the readout unit: an index into per-side pairs.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The shape of an event-building system: how many readout units, nodes and processing units
/// per node, and the numbering that follows from it. Units of one node are consecutive: node
/// `n` owns units `n·p .. (n+1)·p` for `p` units per node. There is one data connection per
/// (node, readout unit), numbered node-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    readout_units: u32,
    nodes: u32,
    pus_per_node: u32,
}

impl Layout {
    /// A system of `readout_units`, `nodes` and `pus_per_node` units on each node (all ≥ 1).
    pub fn new(readout_units: u32, nodes: u32, pus_per_node: u32) -> Self {
        assert!(readout_units > 0 && nodes > 0 && pus_per_node > 0, "a layout needs at least one of each");
        Layout { readout_units, nodes, pus_per_node }
    }

    /// Readout units.
    pub fn readout_units(&self) -> u32 {
        self.readout_units
    }

    /// Nodes.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Processing units per node.
    pub fn pus_per_node(&self) -> u32 {
        self.pus_per_node
    }

    /// Processing units in all.
    pub fn total_pus(&self) -> u32 {
        self.nodes * self.pus_per_node
    }

    /// Every readout unit.
    pub fn readouts(&self) -> impl Iterator<Item = ReadoutId> {
        (0..self.readout_units).map(ReadoutId)
    }

    /// Every node.
    pub fn all_nodes(&self) -> impl Iterator<Item = NodeId> {
        (0..self.nodes).map(NodeId)
    }

    /// Every processing unit.
    pub fn all_pus(&self) -> impl Iterator<Item = PuId> {
        (0..self.total_pus()).map(PuId)
    }

    /// The node processing unit `pu` runs on.
    pub fn node_of(&self, pu: PuId) -> NodeId {
        NodeId(pu.0 / self.pus_per_node)
    }

    /// The processing units of `node`.
    pub fn pus_of(&self, node: NodeId) -> impl Iterator<Item = PuId> {
        let first = node.0 * self.pus_per_node;
        (first..first + self.pus_per_node).map(PuId)
    }

    /// Whether `pu` is a unit of this system.
    pub fn has_pu(&self, pu: PuId) -> bool {
        pu.0 < self.total_pus()
    }

    /// Whether `node` is a node of this system.
    pub fn has_node(&self, node: NodeId) -> bool {
        node.0 < self.nodes
    }

    /// Whether `readout` is a readout unit of this system.
    pub fn has_readout(&self, readout: ReadoutId) -> bool {
        readout.0 < self.readout_units
    }

    /// Data connections in all (one per node and readout unit).
    pub fn conns(&self) -> u32 {
        self.nodes * self.readout_units
    }

    /// The connection between `node` and `readout`.
    pub fn conn(&self, node: NodeId, readout: ReadoutId) -> ConnId {
        debug_assert!(self.has_node(node) && self.has_readout(readout));
        ConnId(node.0 * self.readout_units + readout.0)
    }

    /// The node and readout unit a connection joins.
    pub fn ends_of(&self, conn: ConnId) -> (NodeId, ReadoutId) {
        (NodeId(conn.0 / self.readout_units), ReadoutId(conn.0 % self.readout_units))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_of_a_node_are_consecutive_and_belong_to_it() {
        let l = Layout::new(3, 4, 5);
        assert_eq!(l.total_pus(), 20);
        for node in l.all_nodes() {
            let pus: Vec<PuId> = l.pus_of(node).collect();
            assert_eq!(pus.len(), 5);
            assert!(pus.iter().all(|&p| l.node_of(p) == node));
            assert!(pus.windows(2).all(|w| w[1].0 == w[0].0 + 1));
        }
        assert_eq!(l.node_of(PuId(19)), NodeId(3));
        assert!(!l.has_pu(PuId(20)));
    }

    #[test]
    fn connections_number_every_pair_once() {
        let l = Layout::new(3, 4, 1);
        let mut seen = vec![false; l.conns() as usize];
        for n in l.all_nodes() {
            for r in l.readouts() {
                let c = l.conn(n, r);
                assert_eq!(l.ends_of(c), (n, r));
                assert!(!std::mem::replace(&mut seen[c.index()], true), "{c} twice");
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(Side::Collector.peer(), Side::Readout);
    }
}
