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

use crate::{EventId, NodeId, ReadoutId};

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
