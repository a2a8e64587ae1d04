//! A readout unit: answers data requests after a fixed service delay.

use super::{DataRequest, DataResponse};
use crate::workload::FragmentSizes;
use crate::{Nanos, ReadoutId};
use std::collections::VecDeque;

/// A readout unit (readout system): holds every event's fragments for its share of the
/// detector and answers each [`DataRequest`] `service_ns` after receiving it.
#[derive(Debug, Clone)]
pub struct ReadoutUnit {
    id: ReadoutId,
    sizes: FragmentSizes,
    service_ns: Nanos,
    pending: VecDeque<(Nanos, DataResponse)>,
    answered: u64,
}

impl ReadoutUnit {
    /// Unit `id`, drawing its fragment sizes from `sizes`.
    pub fn new(id: ReadoutId, sizes: FragmentSizes, service_ns: Nanos) -> Self {
        ReadoutUnit {
            id,
            sizes,
            service_ns,
            pending: VecDeque::new(),
            answered: 0,
        }
    }

    /// This unit's id.
    pub fn id(&self) -> ReadoutId {
        self.id
    }

    /// A request arrives at time `now`. Requests must arrive in time order.
    pub fn on_request(&mut self, now: Nanos, req: DataRequest) {
        let response = DataResponse {
            event: req.event,
            readout: self.id,
            node: req.node,
            fragments: req.fragments,
            bytes: self.sizes.unit_bytes(req.event, self.id),
        };
        self.pending.push_back((now + self.service_ns, response));
    }

    /// When the next response is due, if any is pending.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.pending.front().map(|(t, _)| *t)
    }

    /// The next response due at or before `now`.
    pub fn poll_response(&mut self, now: Nanos) -> Option<DataResponse> {
        match self.pending.front() {
            Some((t, _)) if *t <= now => {
                self.answered += 1;
                self.pending.pop_front().map(|(_, r)| r)
            }
            _ => None,
        }
    }

    /// Responses handed out so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }
}
