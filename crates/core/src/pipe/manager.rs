//! The event manager: hands events to builder units round-robin, as each has a credit free.

use super::PipeError;
use crate::{EventId, NodeId};
use std::collections::VecDeque;

/// The event manager of a pipe run.
#[derive(Debug, Clone)]
pub struct EventManager {
    /// The builder units' nodes, in round-robin order.
    builders: Vec<NodeId>,
    /// Events each builder unit holds, by its place in `builders`.
    held: Vec<Vec<EventId>>,
    /// Builder units lost: no event goes to them any more.
    lost: Vec<bool>,
    credits: u32,
    /// The builder unit the round-robin considers next.
    next: usize,
    next_event: EventId,
    total: u64,
    out: VecDeque<(NodeId, EventId)>,
}

impl EventManager {
    /// A manager of the builder units on `builders`, each holding at most `credits` events,
    /// for `total` events; every builder's first events are assigned at once.
    pub fn new(builders: &[NodeId], credits: u32, total: u64) -> Self {
        let mut m = EventManager {
            builders: builders.to_vec(),
            held: vec![Vec::new(); builders.len()],
            lost: vec![false; builders.len()],
            credits,
            next: 0,
            next_event: EventId(0),
            total,
            out: VecDeque::new(),
        };
        m.assign();
        m
    }

    /// `node` has built `event`: its credit comes back, and the next events go out.
    pub fn on_built(&mut self, node: NodeId, event: EventId) -> Result<(), PipeError> {
        let at = self.place(node).ok_or(PipeError::NotAssigned { event, node })?;
        let held = &mut self.held[at];
        let i = held.iter().position(|&e| e == event).ok_or(PipeError::NotAssigned { event, node })?;
        held.swap_remove(i);
        self.assign();
        Ok(())
    }

    /// Builder unit `node` is lost (its node died): the events it held are returned, lost
    /// with it, and it gets no more.
    pub fn on_builder_lost(&mut self, node: NodeId) -> Vec<EventId> {
        let Some(at) = self.place(node) else { return Vec::new() };
        self.lost[at] = true;
        let held = std::mem::take(&mut self.held[at]);
        self.assign();
        held
    }

    /// `node`'s place among the builders.
    fn place(&self, node: NodeId) -> Option<usize> {
        self.builders.iter().position(|&b| b == node)
    }

    /// Every event is assigned and none is held: built or lost.
    pub fn all_done(&self) -> bool {
        self.next_event.0 == self.total && self.held.iter().all(Vec::is_empty)
    }

    /// Round-robin over the builder units with a free credit, until none has one or every
    /// event is out.
    fn assign(&mut self) {
        let n = self.held.len();
        while self.next_event.0 < self.total {
            let free = |b: usize| !self.lost[b] && self.held[b].len() < self.credits as usize;
            let Some(k) = (0..n).find(|k| free((self.next + k) % n)) else {
                return;
            };
            let at = (self.next + k) % n;
            self.held[at].push(self.next_event);
            self.out.push_back((self.builders[at], self.next_event));
            self.next_event = self.next_event.next();
            self.next = (at + 1) % n;
        }
    }

    /// The next assignment (builder unit, event), if any.
    pub fn poll(&mut self) -> Option<(NodeId, EventId)> {
        self.out.pop_front()
    }

    /// Events assigned so far.
    pub fn assigned(&self) -> u64 {
        self.next_event.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: u32) -> Vec<NodeId> {
        (0..n).map(NodeId).collect()
    }

    #[test]
    fn builders_are_the_given_nodes() {
        let mut m = EventManager::new(&[NodeId(5), NodeId(7)], 1, 3);
        let first: Vec<_> = std::iter::from_fn(|| m.poll()).map(|(n, e)| (n.0, e.0)).collect();
        assert_eq!(first, vec![(5, 0), (7, 1)]);
        m.on_built(NodeId(7), EventId(1)).unwrap();
        assert_eq!(m.poll(), Some((NodeId(7), EventId(2))));
        assert!(m.on_built(NodeId(0), EventId(0)).is_err(), "node 0 builds nothing");
    }

    #[test]
    fn events_go_round_robin_as_credits_allow() {
        let mut m = EventManager::new(&nodes(3), 2, 10);
        let first: Vec<_> = std::iter::from_fn(|| m.poll()).map(|(n, e)| (n.0, e.0)).collect();
        assert_eq!(first, vec![(0, 0), (1, 1), (2, 2), (0, 3), (1, 4), (2, 5)]);
        m.on_built(NodeId(1), EventId(4)).unwrap();
        assert_eq!(m.poll(), Some((NodeId(1), EventId(6))));
        assert_eq!(
            m.on_built(NodeId(1), EventId(4)),
            Err(PipeError::NotAssigned { event: EventId(4), node: NodeId(1) })
        );
        assert_eq!(
            m.on_built(NodeId(9), EventId(0)),
            Err(PipeError::NotAssigned { event: EventId(0), node: NodeId(9) })
        );
    }

    #[test]
    fn a_lost_builder_takes_its_events_and_gets_no_more() {
        let mut m = EventManager::new(&nodes(3), 1, 6);
        assert_eq!(std::iter::from_fn(|| m.poll()).count(), 3);
        assert_eq!(m.on_builder_lost(NodeId(1)), vec![EventId(1)]);
        m.on_built(NodeId(0), EventId(0)).unwrap();
        m.on_built(NodeId(2), EventId(2)).unwrap();
        let next: Vec<_> = std::iter::from_fn(|| m.poll()).map(|(n, e)| (n.0, e.0)).collect();
        assert_eq!(next, vec![(0, 3), (2, 4)]);
        m.on_built(NodeId(0), EventId(3)).unwrap();
        m.on_built(NodeId(2), EventId(4)).unwrap();
        assert_eq!(m.poll(), Some((NodeId(0), EventId(5))));
        assert!(!m.all_done());
        m.on_built(NodeId(0), EventId(5)).unwrap();
        assert!(m.all_done());
    }

    #[test]
    fn no_event_beyond_the_total() {
        let mut m = EventManager::new(&nodes(2), 4, 3);
        assert_eq!(std::iter::from_fn(|| m.poll()).count(), 3);
        m.on_built(NodeId(0), EventId(0)).unwrap();
        assert_eq!(m.poll(), None);
        assert_eq!(m.assigned(), 3);
    }
}
