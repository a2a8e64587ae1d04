//! Sans-IO state machines of the event-building dataflow (the ATLAS data-collection model of
//! [ATLAS-DC] §2–3; see `docs/architecture.md`).
//!
//! None of them does I/O or reads a clock. A driver (the simulator, the real runtime, the
//! testbed) feeds them inputs — with the current time where a delay is involved — and carries
//! out what they ask, read with `poll`: send a message, set a timer. The same code therefore
//! runs under simulated and real time, which is what makes a simulated result comparable with a
//! measured one.
//!
//! Drivers talk to a worker node as a whole ([`Node`]: one input enum, one output enum), to the
//! [`Supervisor`] and to each [`ReadoutUnit`].

mod collector;
mod credit;
mod messages;
mod node;
mod processing;
mod readout;
mod supervisor;

pub use collector::{Collector, CollectorOutput};
pub use credit::{CreditError, CreditPool};
pub use messages::{Assignment, DataRequest, DataResponse};
pub use node::{BuiltEvent, Node, NodeInput, NodeOutput};
pub use processing::{Collected, ProcessingUnit, PuOutput, PuState, Step};
pub use readout::ReadoutUnit;
pub use supervisor::{startup_order, Supervisor};

use crate::{EventId, NodeId, PuId, ReadoutId};

/// An input a dataflow state machine cannot accept: a peer broke the protocol, or (in the
/// simulator) a bookkeeping bug. The state machine is unchanged by the input that caused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataflowError {
    /// A response for an event this collector is not collecting, or from a unit not asked.
    #[error("unexpected response for event {event} from readout unit {readout}")]
    UnexpectedResponse {
        /// The event of the response.
        event: EventId,
        /// The readout unit that sent it.
        readout: ReadoutId,
    },
    /// Credit bookkeeping failed (a duplicated response).
    #[error("credit error: {0}")]
    Credits(#[from] CreditError),
    /// An input for a processing unit of another node.
    #[error("processing unit {pu} is not on node {node}")]
    NotOurUnit {
        /// The unit named.
        pu: PuId,
        /// This node.
        node: NodeId,
    },
    /// An event assigned to a unit that is not waiting for work.
    #[error("event {event} assigned to processing unit {pu}, which is busy ({state:?})")]
    UnitBusy {
        /// The unit.
        pu: PuId,
        /// The event assigned.
        event: EventId,
        /// What the unit is doing.
        state: PuState,
    },
    /// Data collected for a unit that is not collecting that event.
    #[error("event {event} collected for processing unit {pu}, which is not collecting it")]
    NotCollecting {
        /// The unit.
        pu: PuId,
        /// The event.
        event: EventId,
    },
}
