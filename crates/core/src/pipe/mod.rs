//! DAQPIPE's event building ([LHCB-DAQPIPE]: Valat et al., "An Evaluation of 100-Gb/s LAN
//! Networks for the LHCb DAQ Upgrade", IEEE TNS 2017, §VI): every node hosts a readout unit
//! (RU) and a builder unit (BU); an event manager (EM) assigns events to BUs round-robin, each
//! BU holding a few events in flight (its credits); a BU pulls its event's fragment from every
//! RU, with at most `parallel_transfers` pulls outstanding — an all-to-all, full-duplex pattern.
//!
//! Sans-IO state machines, driven like [`crate::dataflow`]'s: the [`EventManager`] and the
//! [`BuilderUnit`]. A readout unit only answers pulls, with the fragment size the workload
//! gives ([`crate::workload::FragmentSizes`]), so it needs no state of its own.

mod builder;
mod manager;
mod node;

pub use builder::{BuilderOutput, BuilderUnit};
pub use manager::EventManager;
pub use node::{ManagerLog, NodeTally, PipeMsg, PipeNode};

use crate::scenario::{Pipe, PipeDirection};
use crate::{EventId, NodeId, ReadoutId};

/// Who hosts what in a pipe run: which member — a host in the simulator, a process in a real
/// run — hosts each readout unit, which host builder units, and which node each member is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeRoles {
    /// The member hosting readout unit `r`, by `r`.
    pub readouts: Vec<NodeId>,
    /// The members hosting a builder unit, in the event manager's round-robin order.
    pub builders: Vec<NodeId>,
    /// Members per node: 1, or 2 for a real run of two processes per node (member `2i` is node
    /// `i`'s readout unit, `2i + 1` its builder unit).
    pub per_node: u32,
}

impl PipeRoles {
    /// The roles of `pipe`'s members: hosts (`processes` false: one per node), or the
    /// processes of a real run (`pipe.processes_per_node` per node).
    pub fn of(pipe: &Pipe, processes: bool) -> PipeRoles {
        let n = pipe.nodes;
        let all = |r: std::ops::Range<u32>| r.map(NodeId).collect::<Vec<_>>();
        match pipe.direction {
            PipeDirection::OneWay => PipeRoles { readouts: all(0..n / 2), builders: all(n / 2..n), per_node: 1 },
            PipeDirection::FullDuplex if processes && pipe.processes_per_node == 2 => PipeRoles {
                readouts: (0..n).map(|i| NodeId(2 * i)).collect(),
                builders: (0..n).map(|i| NodeId(2 * i + 1)).collect(),
                per_node: 2,
            },
            PipeDirection::FullDuplex => PipeRoles { readouts: all(0..n), builders: all(0..n), per_node: 1 },
        }
    }

    /// Members in all.
    pub fn members(&self) -> u32 {
        let last = self.readouts.iter().chain(&self.builders).map(|m| m.0).max().unwrap_or(0);
        last + 1
    }

    /// The readout unit member `m` hosts, if any.
    pub fn readout_at(&self, m: NodeId) -> Option<ReadoutId> {
        self.readouts.iter().position(|&x| x == m).map(|r| ReadoutId(r as u32))
    }

    /// Whether member `m` hosts a builder unit.
    pub fn is_builder(&self, m: NodeId) -> bool {
        self.builders.contains(&m)
    }

    /// The node member `m` is on.
    pub fn node_of(&self, m: NodeId) -> NodeId {
        NodeId(m.0 / self.per_node)
    }

    /// Where builder unit member `b` starts its round of pulls: the readout unit after the one
    /// on its own node (its own node's last), so that at any moment builders pull from
    /// different readout units.
    pub fn pull_start(&self, b: NodeId) -> u32 {
        self.node_of(b).0 % self.readouts.len().max(1) as u32
    }

    /// Fragments of one event that cross the network: every readout unit's but the one on the
    /// builder's own node, if it has one.
    pub fn remote_fragments(&self) -> u32 {
        let r = self.readouts.len() as u32;
        let shared =
            self.builders.first().is_some_and(|&b| self.readouts.iter().any(|&x| self.node_of(x) == self.node_of(b)));
        r - u32::from(shared)
    }

    /// Nodes that receive fragments (host a builder unit).
    pub fn receiving_nodes(&self) -> u32 {
        self.builders.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_of_each_layout() {
        let pipe = |direction, processes_per_node| Pipe { nodes: 4, direction, processes_per_node, ..Pipe::default() };
        let ids = |v: &[u32]| v.iter().map(|&i| NodeId(i)).collect::<Vec<_>>();
        let full = PipeRoles::of(&pipe(PipeDirection::FullDuplex, 1), true);
        assert_eq!(
            (full.readouts.clone(), full.builders.clone(), full.members()),
            (ids(&[0, 1, 2, 3]), ids(&[0, 1, 2, 3]), 4)
        );
        assert_eq!((full.remote_fragments(), full.receiving_nodes(), full.pull_start(NodeId(2))), (3, 4, 2));
        let one_way = PipeRoles::of(&pipe(PipeDirection::OneWay, 1), true);
        assert_eq!((one_way.readouts.clone(), one_way.builders.clone()), (ids(&[0, 1]), ids(&[2, 3])));
        assert_eq!((one_way.remote_fragments(), one_way.receiving_nodes(), one_way.pull_start(NodeId(3))), (2, 2, 1));
        let split = PipeRoles::of(&pipe(PipeDirection::FullDuplex, 2), true);
        assert_eq!(
            (split.readouts.clone(), split.builders.clone(), split.members()),
            (ids(&[0, 2, 4, 6]), ids(&[1, 3, 5, 7]), 8)
        );
        assert_eq!(
            (split.node_of(NodeId(5)), split.readout_at(NodeId(4)), split.pull_start(NodeId(5))),
            (NodeId(2), Some(ReadoutId(2)), 2)
        );
        assert_eq!(split.remote_fragments(), 3, "its own node's fragment crosses no network");
        assert_eq!(
            PipeRoles::of(&pipe(PipeDirection::FullDuplex, 2), false),
            full,
            "the simulator has one host per node"
        );
    }
}

/// Pipe bookkeeping errors: a misbehaving peer, which a driver counts and survives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipeError {
    /// A fragment the builder unit did not ask for (or already has).
    #[error("builder unit {node} got an unrequested fragment of event {event} from readout unit {readout}")]
    Unrequested {
        /// The builder unit's node.
        node: NodeId,
        /// The event.
        event: EventId,
        /// The readout unit that sent it.
        readout: ReadoutId,
    },
    /// An event reported built by a builder unit it was not assigned to.
    #[error("event {event} reported built by node {node}, which it was not assigned to")]
    NotAssigned {
        /// The event.
        event: EventId,
        /// The node that reported it.
        node: NodeId,
    },
}
