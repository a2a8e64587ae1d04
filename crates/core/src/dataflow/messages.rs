//! Messages exchanged by the dataflow roles.

use crate::{EventId, NodeId, PuId, ReadoutId};

/// A collector asks a readout unit for `fragments` fragments of `event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRequest {
    /// The event.
    pub event: EventId,
    /// The node whose collector asks (where the response goes).
    pub node: NodeId,
    /// Fragments requested; the request holds this many credits until its response arrives.
    pub fragments: u32,
}

/// A readout unit's answer to a [`DataRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataResponse {
    /// The event.
    pub event: EventId,
    /// The readout unit answering.
    pub readout: ReadoutId,
    /// The node the response is for.
    pub node: NodeId,
    /// Fragments carried (equal to the fragments requested).
    pub fragments: u32,
    /// Payload bytes of those fragments.
    pub bytes: u64,
}

/// The supervisor gives `event` to processing unit `pu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assignment {
    /// The event.
    pub event: EventId,
    /// The processing unit.
    pub pu: PuId,
}
