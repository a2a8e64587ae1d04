//! A builder unit: pulls each assigned event's fragment from every readout unit, at most
//! `parallel_transfers` pulls outstanding, and reports the event built when all have arrived.

use super::PipeError;
use crate::{EventId, NodeId, ReadoutId};
use std::collections::VecDeque;

/// What a builder unit asks its driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuilderOutput {
    /// Ask readout unit `readout` for its fragment of `event`.
    Pull {
        /// The readout unit (node `readout` hosts it).
        readout: ReadoutId,
        /// The event.
        event: EventId,
    },
    /// Every fragment of `event` has arrived: `bytes` of payload — or every fragment that
    /// will ever come: `missing` of them were on readout units lost on the way.
    Built {
        /// The event.
        event: EventId,
        /// Its payload.
        bytes: u64,
        /// Fragments it lacks, their readout units lost (0: complete).
        missing: u32,
    },
}

#[derive(Debug, Clone)]
struct Building {
    event: EventId,
    /// Readout units whose fragment has not arrived, as a bitmap over the unit numbers.
    missing: Vec<u64>,
    /// Readout units asked for this event's fragment so far, likewise.
    pulled: Vec<u64>,
    left: u32,
    bytes: u64,
    /// Fragments given up with their lost readout units.
    lost: u32,
}

/// The builder unit of one node.
///
/// Pulls go out in FIFO order: an event's pulls in the order its readout units are visited,
/// starting with the unit after this node's own and wrapping round (so that at any moment the
/// builder units pull from different readout units: DAQPIPE's round-robin scheduler), events
/// in the order assigned. With a limit of `parallel` pulls outstanding, the next pull leaves as
/// a fragment arrives; without one (`None`, DAQPIPE's "simple" scheduler) every pull of an
/// event leaves when it is assigned and the network sorts them out.
#[derive(Debug, Clone)]
pub struct BuilderUnit {
    node: NodeId,
    start: u32,
    readouts: u32,
    parallel: Option<u32>,
    waiting: VecDeque<(ReadoutId, EventId)>,
    outstanding: u32,
    building: Vec<Building>,
    /// Readout units lost, as a bitmap: no pull goes to them any more.
    gone: Vec<u64>,
    out: VecDeque<BuilderOutput>,
}

impl BuilderUnit {
    /// The builder unit of `node`, pulling from `readouts` readout units, each event's round
    /// starting after readout unit `start` (and ending with it), with at most `parallel` pulls
    /// outstanding (`None`: no limit).
    pub fn new(node: NodeId, start: u32, readouts: u32, parallel: Option<u32>) -> Self {
        BuilderUnit {
            node,
            start,
            readouts,
            parallel,
            waiting: VecDeque::new(),
            outstanding: 0,
            building: Vec::new(),
            gone: vec![0; readouts.div_ceil(64) as usize],
            out: VecDeque::new(),
        }
    }

    fn is_gone(&self, r: ReadoutId) -> bool {
        self.gone[r.index() / 64] & (1 << (r.index() % 64)) != 0
    }

    /// The event manager assigns `event` to this builder unit.
    pub fn on_assign(&mut self, event: EventId) {
        let n = self.readouts;
        let missing = self.gone.iter().map(|g| !g).collect();
        let live: Vec<ReadoutId> =
            (1..=n).map(|k| ReadoutId((self.start + k) % n)).filter(|&r| !self.is_gone(r)).collect();
        let left = live.len() as u32;
        let lost = n - left;
        self.building.push(Building { event, missing, pulled: vec![0; self.gone.len()], left, bytes: 0, lost });
        self.waiting.extend(live.into_iter().map(|r| (r, event)));
        self.complete_where_nothing_left();
        self.issue();
    }

    /// Readout unit `readout`'s fragment of `event` (`bytes`) has arrived.
    pub fn on_fragment(&mut self, event: EventId, readout: ReadoutId, bytes: u64) -> Result<(), PipeError> {
        let unrequested = PipeError::Unrequested { node: self.node, event, readout };
        let i = self.building.iter().position(|b| b.event == event).ok_or(unrequested.clone())?;
        let b = &mut self.building[i];
        let (word, bit) = (readout.index() / 64, 1u64 << (readout.index() % 64));
        if readout.0 >= self.readouts || b.missing[word] & bit == 0 || b.pulled[word] & bit == 0 {
            return Err(unrequested);
        }
        b.missing[word] &= !bit;
        b.left -= 1;
        b.bytes += bytes;
        self.outstanding -= 1;
        self.complete_where_nothing_left();
        self.issue();
        Ok(())
    }

    /// Readout unit `readout` is lost (its node died): its fragments are given up — pulls
    /// outstanding to it no longer count, waiting ones are dropped, later events do not ask
    /// it — and events that lacked only its fragment are built without it.
    pub fn on_readout_lost(&mut self, readout: ReadoutId) {
        if readout.0 >= self.readouts || self.is_gone(readout) {
            return;
        }
        let (word, bit) = (readout.index() / 64, 1u64 << (readout.index() % 64));
        self.gone[word] |= bit;
        self.waiting.retain(|&(r, _)| r != readout);
        for b in &mut self.building {
            if b.missing[word] & bit != 0 {
                b.missing[word] &= !bit;
                b.left -= 1;
                b.lost += 1;
                if b.pulled[word] & bit != 0 {
                    self.outstanding -= 1;
                }
            }
        }
        self.complete_where_nothing_left();
        self.issue();
    }

    /// Reports every event with no fragment left to come as built, in assignment order.
    fn complete_where_nothing_left(&mut self) {
        let (done, building) = std::mem::take(&mut self.building).into_iter().partition(|b| b.left == 0);
        self.building = building;
        let done: Vec<Building> = done;
        self.out.extend(done.into_iter().map(|b| BuilderOutput::Built {
            event: b.event,
            bytes: b.bytes,
            missing: b.lost,
        }));
    }

    fn issue(&mut self) {
        while self.parallel.is_none_or(|k| self.outstanding < k) {
            let Some((readout, event)) = self.waiting.pop_front() else { return };
            let b = self.building.iter_mut().find(|b| b.event == event).expect("a waiting pull's event is building");
            b.pulled[readout.index() / 64] |= 1 << (readout.index() % 64);
            self.outstanding += 1;
            self.out.push_back(BuilderOutput::Pull { readout, event });
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<BuilderOutput> {
        self.out.pop_front()
    }

    /// Pulls outstanding.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(b: &mut BuilderUnit) -> Vec<BuilderOutput> {
        std::iter::from_fn(|| b.poll()).collect()
    }

    #[test]
    fn pulls_start_after_the_own_unit_and_wait_for_a_free_slot() {
        let mut b = BuilderUnit::new(NodeId(1), 1, 4, Some(2));
        b.on_assign(EventId(7));
        let pull = |r| BuilderOutput::Pull { readout: ReadoutId(r), event: EventId(7) };
        assert_eq!(drain(&mut b), vec![pull(2), pull(3)]);
        b.on_fragment(EventId(7), ReadoutId(3), 10).unwrap();
        assert_eq!(drain(&mut b), vec![pull(0)]);
        assert!(b.on_fragment(EventId(7), ReadoutId(3), 10).is_err(), "a duplicate");
        assert!(b.on_fragment(EventId(7), ReadoutId(1), 10).is_err(), "not pulled yet");
        b.on_fragment(EventId(7), ReadoutId(2), 10).unwrap();
        b.on_fragment(EventId(7), ReadoutId(0), 10).unwrap();
        assert_eq!(drain(&mut b), vec![pull(1)]);
        b.on_fragment(EventId(7), ReadoutId(1), 10).unwrap();
        assert_eq!(drain(&mut b), vec![BuilderOutput::Built { event: EventId(7), bytes: 40, missing: 0 }]);
    }

    #[test]
    fn the_simple_scheduler_sends_every_pull_at_once() {
        let mut b = BuilderUnit::new(NodeId(0), 0, 3, None);
        b.on_assign(EventId(0));
        b.on_assign(EventId(1));
        assert_eq!(drain(&mut b).len(), 6);
        assert_eq!(b.outstanding(), 6);
    }

    #[test]
    fn a_lost_readout_unit_is_given_up_and_its_events_built_without_it() {
        let mut b = BuilderUnit::new(NodeId(0), 0, 4, Some(2));
        b.on_assign(EventId(0));
        let pull = |r, e| BuilderOutput::Pull { readout: ReadoutId(r), event: EventId(e) };
        assert_eq!(drain(&mut b), vec![pull(1, 0), pull(2, 0)]);
        b.on_fragment(EventId(0), ReadoutId(1), 10).unwrap();
        assert_eq!(drain(&mut b), vec![pull(3, 0)]);
        b.on_readout_lost(ReadoutId(2));
        assert_eq!(drain(&mut b), vec![pull(0, 0)], "the pull to the lost unit no longer counts");
        assert_eq!(b.outstanding(), 2);
        b.on_fragment(EventId(0), ReadoutId(3), 10).unwrap();
        b.on_fragment(EventId(0), ReadoutId(0), 10).unwrap();
        assert_eq!(drain(&mut b), vec![BuilderOutput::Built { event: EventId(0), bytes: 30, missing: 1 }]);
        assert!(b.on_fragment(EventId(0), ReadoutId(2), 10).is_err(), "too late: given up");
        b.on_assign(EventId(1));
        assert_eq!(drain(&mut b), vec![pull(1, 1), pull(3, 1)], "the lost unit is not asked again");
        b.on_readout_lost(ReadoutId(1));
        b.on_readout_lost(ReadoutId(3));
        assert_eq!(drain(&mut b), vec![pull(0, 1)]);
        b.on_fragment(EventId(1), ReadoutId(0), 10).unwrap();
        assert_eq!(drain(&mut b), vec![BuilderOutput::Built { event: EventId(1), bytes: 10, missing: 3 }]);
    }

    proptest! {
        /// Whatever order fragments come back in: never more than `parallel` pulls
        /// outstanding, every (event, readout unit) pulled exactly once, every event built once
        /// with all its bytes.
        #[test]
        fn each_fragment_pulled_once_within_the_limit(
            readouts in 1u32..70,
            parallel in 1u32..12,
            events in 1u64..5,
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..600),
        ) {
            let mut b = BuilderUnit::new(NodeId(0), 0, readouts, Some(parallel));
            (0..events).for_each(|e| b.on_assign(EventId(e)));
            let mut outstanding: Vec<(ReadoutId, EventId)> = Vec::new();
            let mut pulled = std::collections::HashSet::new();
            let mut built = Vec::new();
            let mut picks = picks.into_iter();
            loop {
                for o in drain(&mut b) {
                    match o {
                        BuilderOutput::Pull { readout, event } => {
                            prop_assert!(pulled.insert((readout, event)), "pulled twice");
                            outstanding.push((readout, event));
                        }
                        BuilderOutput::Built { event, bytes, .. } => built.push((event, bytes)),
                    }
                }
                prop_assert!(outstanding.len() as u32 <= parallel);
                if outstanding.is_empty() { break; }
                let i = picks.next().map(|p| p.index(outstanding.len())).unwrap_or(0);
                let (r, e) = outstanding.swap_remove(i);
                b.on_fragment(e, r, 1 + r.0 as u64).unwrap();
            }
            prop_assert_eq!(pulled.len() as u64, readouts as u64 * events);
            built.sort();
            let bytes: u64 = (0..readouts as u64).map(|r| 1 + r).sum();
            prop_assert_eq!(built, (0..events).map(|e| (EventId(e), bytes)).collect::<Vec<_>>());
        }
    }
}
