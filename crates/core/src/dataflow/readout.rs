//! A readout unit: answers data requests after a fixed service delay.

use super::{DataRequest, DataResponse};
use crate::workload::{service_delay, FragmentSizes};
use crate::{Nanos, ReadoutId};

/// A readout unit (readout system): holds every event's fragments for its share of the
/// detector and answers each [`DataRequest`] after `service_ns` plus a jitter in
/// `[0, jitter_ns)` drawn from the seed for that (event, unit).
#[derive(Debug, Clone)]
pub struct ReadoutUnit {
    id: ReadoutId,
    sizes: FragmentSizes,
    service_ns: Nanos,
    jitter_ns: Nanos,
    seed: u64,
    /// Pending responses, latest due first (so the next one due is at the end).
    pending: Vec<(Nanos, DataResponse)>,
    answered: u64,
}

impl ReadoutUnit {
    /// Unit `id`, drawing its fragment sizes from `sizes`.
    pub fn new(id: ReadoutId, sizes: FragmentSizes, service_ns: Nanos, jitter_ns: Nanos, seed: u64) -> Self {
        ReadoutUnit { id, sizes, service_ns, jitter_ns, seed, pending: Vec::new(), answered: 0 }
    }

    /// This unit's id.
    pub fn id(&self) -> ReadoutId {
        self.id
    }

    /// A request arrives at time `now`; returns when its response is due.
    pub fn on_request(&mut self, now: Nanos, req: DataRequest) -> Nanos {
        let response = DataResponse {
            event: req.event,
            readout: self.id,
            node: req.node,
            fragments: req.fragments,
            bytes: self.sizes.unit_bytes(req.event, self.id),
        };
        let due = now + service_delay(self.seed, req.event, self.id, self.service_ns, self.jitter_ns);
        // Keep the order stable for equal due times: earlier requests are answered first.
        let i = self.pending.partition_point(|(t, _)| *t > due);
        self.pending.insert(i, (due, response));
        due
    }

    /// When the next response is due, if any is pending.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.pending.last().map(|(t, _)| *t)
    }

    /// The next response due at or before `now`.
    pub fn poll_response(&mut self, now: Nanos) -> Option<DataResponse> {
        match self.pending.last() {
            Some((t, _)) if *t <= now => {
                self.answered += 1;
                self.pending.pop().map(|(_, r)| r)
            }
            _ => None,
        }
    }

    /// Responses handed out so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FragmentSize;
    use crate::{EventId, NodeId};

    #[test]
    fn responses_come_out_in_due_order_with_jitter() {
        let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: 100 }, 1, 2);
        let mut ru = ReadoutUnit::new(ReadoutId(3), sizes, 1000, 5000, 9);
        let mut due: Vec<Nanos> = (0..20)
            .map(|e| ru.on_request(e, DataRequest { event: EventId(e), node: NodeId(0), fragments: 2 }))
            .collect();
        assert!(due.iter().enumerate().all(|(e, &d)| d >= e as u64 + 1000 && d < e as u64 + 6000));
        due.sort_unstable();
        let mut got = Vec::new();
        while let Some(t) = ru.poll_timeout() {
            let r = ru.poll_response(t).expect("due");
            assert_eq!((r.readout, r.bytes), (ReadoutId(3), 200));
            got.push(t);
        }
        assert_eq!(got, due);
        assert_eq!(ru.answered(), 20);
    }
}
