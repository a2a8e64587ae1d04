//! Why a role's state ends a run, or refuses a peer: typed, each naming the role at fault, so
//! a loop (and a test) can tell a protocol violation from a bad request without reading text.

use crate::role::RoleId;
use daqnet_core::dataflow::DataflowError;
use daqnet_core::{EventId, NodeId};

/// What went wrong in a role's state. The run-ending ones were also sent to the supervisor as
/// a fatal fault with the same words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    /// A peer sent a message its role never sends to this one.
    #[error("unexpected message from {}: {message}", peer(*from))]
    Unexpected {
        /// Who sent it.
        from: RoleId,
        /// The message, as debug text.
        message: String,
    },
    /// The dataflow state machine refused an input that `from` caused.
    #[error("{from}: {error}")]
    Refused {
        /// Whose input it was.
        from: RoleId,
        /// Why the state machine refused it.
        error: DataflowError,
    },
    /// A collector's request does not match the scenario.
    #[error(
        "collector {node} sent a request for node {asked_for}, {fragments} fragments (expected node {node}, \
         {expected} fragments)"
    )]
    BadRequest {
        /// The collector that sent it.
        node: NodeId,
        /// The node it asked for.
        asked_for: NodeId,
        /// Fragments it asked for.
        fragments: u32,
        /// Fragments a request must ask for.
        expected: u32,
    },
    /// A collector asked for an event the supervisor had already cleared.
    #[error("collector {node} asked for event {event}, which was already cleared")]
    AlreadyCleared {
        /// The collector.
        node: NodeId,
        /// The event.
        event: EventId,
    },
    /// An event was cleared while a response to it was still due.
    #[error("event {event} was cleared before its response to node {node} was sent")]
    ClearedBeforeResponse {
        /// The event.
        event: EventId,
        /// The collector still owed the response.
        node: NodeId,
    },
    /// A response is due to a collector that is not connected.
    #[error("response for node {node} but that collector is not connected")]
    NotConnected {
        /// The collector.
        node: NodeId,
    },
    /// A response would exceed the largest frame peers accept.
    #[error("event {event}: a response of {bytes} bytes exceeds deploy.max_frame_bytes ({max})")]
    ResponseTooLarge {
        /// The event.
        event: EventId,
        /// The response's body.
        bytes: usize,
        /// `deploy.max_frame_bytes`.
        max: u64,
    },
    /// A collector that is not in the scenario said hello (refused; the run goes on).
    #[error("collector {0} is not in this scenario")]
    UnknownCollector(NodeId),
    /// A second process claimed a collector's place (refused; the run goes on).
    #[error("collector {0} is already connected")]
    AlreadyConnected(NodeId),
}

/// A peer as the messages name it: "the supervisor", "readout 3", "collector 1".
fn peer(r: RoleId) -> String {
    match r {
        RoleId::Supervisor => "the supervisor".into(),
        other => other.to_string(),
    }
}
