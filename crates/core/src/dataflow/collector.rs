//! The collector (data-collection manager): one per node; gathers all fragments of an event on
//! behalf of the node's processing units, enforcing the node's credit pool.

use super::{CreditPool, DataRequest, DataResponse, DataflowError};
use crate::scenario::Credits;
use crate::{EventId, NodeId, PuId, ReadoutId};
use std::collections::VecDeque;

/// What a collector asks its driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectorOutput {
    /// Send this request to readout unit `readout`.
    Request {
        /// Destination readout unit.
        readout: ReadoutId,
        /// The request.
        request: DataRequest,
    },
    /// Every requested fragment of `event` has arrived; hand it to `pu`.
    Collected {
        /// The processing unit that asked for the event.
        pu: PuId,
        /// The event.
        event: EventId,
        /// Payload bytes collected.
        bytes: u64,
        /// Fragments collected.
        fragments: u64,
    },
}

#[derive(Debug, Clone)]
struct Active {
    event: EventId,
    pu: PuId,
    outstanding: u32,
    bytes: u64,
    fragments: u64,
}

/// The collector of one node with its [`CreditPool`].
///
/// A processing unit's request for an event becomes one [`DataRequest`] per readout unit, each
/// costing `fragments_per_unit` credits. Requests are sent in FIFO order while credits last; the
/// head of the queue waits (and everything behind it) until enough credits come back.
#[derive(Debug, Clone)]
pub struct Collector {
    node: NodeId,
    fragments_per_unit: u32,
    credits: CreditPool,
    waiting: VecDeque<(ReadoutId, EventId)>,
    active: Vec<Active>,
    out: VecDeque<CollectorOutput>,
}

impl Collector {
    /// The collector of `node`.
    pub fn new(node: NodeId, credits: Credits, fragments_per_unit: u32) -> Self {
        Collector {
            node,
            fragments_per_unit,
            credits: CreditPool::new(credits),
            waiting: VecDeque::new(),
            active: Vec::new(),
            out: VecDeque::new(),
        }
    }

    /// Processing unit `pu` asks for all fragments of `event` held by `readouts`.
    pub fn on_collect(&mut self, pu: PuId, event: EventId, readouts: &[ReadoutId]) {
        self.active.push(Active { event, pu, outstanding: readouts.len() as u32, bytes: 0, fragments: 0 });
        if readouts.is_empty() {
            self.finish(self.active.len() - 1);
            return;
        }
        self.waiting.extend(readouts.iter().map(|&r| (r, event)));
        self.issue();
    }

    /// A response arrived: return its credits, account its fragments, send what can be sent.
    pub fn on_response(&mut self, resp: &DataResponse) -> Result<(), DataflowError> {
        let idx = self
            .active
            .iter()
            .position(|a| a.event == resp.event && a.outstanding > 0)
            .ok_or(DataflowError::UnexpectedResponse { event: resp.event, readout: resp.readout })?;
        self.credits.give_back(resp.fragments)?;
        let a = &mut self.active[idx];
        a.outstanding -= 1;
        a.bytes += resp.bytes;
        a.fragments += resp.fragments as u64;
        if a.outstanding == 0 {
            self.finish(idx);
        }
        self.issue();
        Ok(())
    }

    fn finish(&mut self, idx: usize) {
        let a = self.active.swap_remove(idx);
        self.out.push_back(CollectorOutput::Collected {
            pu: a.pu,
            event: a.event,
            bytes: a.bytes,
            fragments: a.fragments,
        });
    }

    fn issue(&mut self) {
        while let Some(&(readout, event)) = self.waiting.front() {
            if !self.credits.try_take(self.fragments_per_unit) {
                break;
            }
            self.waiting.pop_front();
            let request = DataRequest { event, node: self.node, fragments: self.fragments_per_unit };
            self.out.push_back(CollectorOutput::Request { readout, request });
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<CollectorOutput> {
        self.out.pop_front()
    }

    /// The node's credit pool.
    pub fn credits(&self) -> &CreditPool {
        &self.credits
    }

    /// Requests waiting for credits.
    pub fn queued_requests(&self) -> usize {
        self.waiting.len()
    }

    /// Events being collected.
    pub fn events_in_progress(&self) -> usize {
        self.active.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn response(event: u64, readout: u32, fragments: u32, bytes: u64) -> DataResponse {
        DataResponse { event: EventId(event), readout: ReadoutId(readout), node: NodeId(0), fragments, bytes }
    }

    fn requests(c: &mut Collector) -> Vec<(ReadoutId, DataRequest)> {
        let mut v = Vec::new();
        while let Some(o) = c.poll() {
            if let CollectorOutput::Request { readout, request } = o {
                v.push((readout, request));
            }
        }
        v
    }

    #[test]
    fn requests_wait_fifo_for_credits() {
        let mut c = Collector::new(NodeId(0), Credits::Limited(24), 12);
        c.on_collect(PuId(5), EventId(100), &[ReadoutId(0), ReadoutId(1), ReadoutId(2)]);
        let first = requests(&mut c);
        assert_eq!(first.iter().map(|r| r.0 .0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(c.credits().in_use(), 24);
        assert_eq!(c.queued_requests(), 1);
        c.on_collect(PuId(6), EventId(101), &[ReadoutId(0)]);
        assert!(requests(&mut c).is_empty());
        c.on_response(&response(100, 1, 12, 13_200)).unwrap();
        // FIFO: event 100's unit 2 goes before event 101's unit 0.
        assert_eq!(
            requests(&mut c).iter().map(|r| (r.0, r.1.event)).collect::<Vec<_>>(),
            vec![(ReadoutId(2), EventId(100))]
        );
    }

    #[test]
    fn unexpected_response_is_an_error_not_a_panic() {
        let mut c = Collector::new(NodeId(0), Credits::Limited(24), 12);
        let err = c.on_response(&response(9, 1, 12, 1)).unwrap_err();
        assert_eq!(err, DataflowError::UnexpectedResponse { event: EventId(9), readout: ReadoutId(1) });
    }

    proptest! {
        /// Whatever the order in which responses come back, the pool never goes negative, never
        /// exceeds its capacity, every event completes once, and every credit comes back.
        #[test]
        fn credits_never_negative_and_all_come_back(
            credits in 12u32..200,
            events in proptest::collection::vec(1usize..20, 1..12),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..400),
        ) {
            let mut c = Collector::new(NodeId(0), Credits::Limited(credits), 12);
            let mut outstanding: Vec<(ReadoutId, DataRequest)> = Vec::new();
            for (e, &units) in events.iter().enumerate() {
                let readouts: Vec<ReadoutId> = (0..units as u32).map(ReadoutId).collect();
                c.on_collect(PuId(e as u32), EventId(e as u64), &readouts);
            }
            let mut collected = Vec::new();
            let mut picks = picks.into_iter();
            loop {
                while let Some(o) = c.poll() {
                    match o {
                        CollectorOutput::Request { readout, request } => outstanding.push((readout, request)),
                        CollectorOutput::Collected { event, fragments, .. } => collected.push((event, fragments)),
                    }
                }
                prop_assert!(c.credits().in_use() <= credits);
                prop_assert_eq!(c.credits().in_use() as usize, outstanding.len() * 12);
                if outstanding.is_empty() { break; }
                let i = picks.next().map(|p| p.index(outstanding.len())).unwrap_or(0);
                let (readout, req) = outstanding.swap_remove(i);
                c.on_response(&DataResponse { event: req.event, readout, node: NodeId(0), fragments: req.fragments, bytes: 1100 * 12 }).unwrap();
            }
            prop_assert_eq!(c.credits().in_use(), 0);
            prop_assert_eq!(c.queued_requests(), 0);
            collected.sort_unstable();
            let expect: Vec<(EventId, u64)> = events.iter().enumerate().map(|(e, &u)| (EventId(e as u64), 12 * u as u64)).collect();
            prop_assert_eq!(collected, expect);
        }
    }
}
