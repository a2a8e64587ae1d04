//! A processing unit: asks for an event, has its node's collector gather the data, processes it
//! for a fixed time, and asks again (closed loop).

use super::DataflowError;
use crate::workload::readout_subset;
use crate::{EventId, Nanos, PuId, ReadoutId};
use std::collections::VecDeque;

/// Where a processing unit is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PuState {
    /// Has asked the supervisor for work and waits for an assignment.
    WaitingForWork,
    /// Its collector is gathering `event`, since the given time.
    Collecting {
        /// The event.
        event: EventId,
        /// When collection started (the unit asked its collector for the data).
        since: Nanos,
    },
    /// Processing `event` until the given time.
    Processing {
        /// The event.
        event: EventId,
        /// End of processing.
        until: Nanos,
    },
}

/// What a processing unit asks its driver to do. Every driver matches this exhaustively, so a
/// new kind of output cannot be dropped silently by one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PuOutput {
    /// Tell the supervisor this unit wants an event.
    AskForWork,
    /// Wake this unit at the given time (end of processing).
    WakeAt(Nanos),
    /// `event` is fully processed (the supervisor may clear it).
    Done(EventId),
}

/// One processing unit. Units start waiting for work: the supervisor hears of them in
/// [`super::startup_order`].
#[derive(Debug, Clone)]
pub struct ProcessingUnit {
    id: PuId,
    state: PuState,
    processing_ns: Nanos,
    collect_fraction: f64,
    readout_units: u32,
    seed: u64,
    out: VecDeque<PuOutput>,
}

impl ProcessingUnit {
    /// Unit `id`, processing each event for `processing_ns` and collecting `collect_fraction`
    /// of the `readout_units` (chosen per event from `seed`).
    pub fn new(id: PuId, processing_ns: Nanos, collect_fraction: f64, readout_units: u32, seed: u64) -> Self {
        ProcessingUnit {
            id,
            state: PuState::WaitingForWork,
            processing_ns,
            collect_fraction,
            readout_units,
            seed,
            out: VecDeque::new(),
        }
    }

    /// This unit's id.
    pub fn id(&self) -> PuId {
        self.id
    }

    /// Current state.
    pub fn state(&self) -> PuState {
        self.state
    }

    /// The supervisor assigned `event` at `now`: start collecting it. Returns the readout
    /// units to collect from.
    pub fn on_assign(&mut self, now: Nanos, event: EventId) -> Result<Vec<ReadoutId>, DataflowError> {
        if self.state != PuState::WaitingForWork {
            return Err(DataflowError::UnitBusy { pu: self.id, event, state: self.state });
        }
        self.state = PuState::Collecting { event, since: now };
        Ok(readout_subset(self.seed, event, self.collect_fraction, self.readout_units))
    }

    /// The collector has every fragment of `event`: process it. Returns when collection
    /// started.
    pub fn on_collected(&mut self, now: Nanos, event: EventId) -> Result<Nanos, DataflowError> {
        let PuState::Collecting { event: e, since } = self.state else {
            return Err(DataflowError::NotCollecting { pu: self.id, event });
        };
        if e != event {
            return Err(DataflowError::NotCollecting { pu: self.id, event });
        }
        let until = now + self.processing_ns;
        self.state = PuState::Processing { event, until };
        self.out.push_back(PuOutput::WakeAt(until));
        Ok(since)
    }

    /// The unit's timer fired at `now`: at the end of processing, report the event done and
    /// ask for the next one; too early, ask to be woken again.
    pub fn on_wake(&mut self, now: Nanos) {
        match self.state {
            PuState::Processing { event, until } if now >= until => {
                self.state = PuState::WaitingForWork;
                self.out.push_back(PuOutput::Done(event));
                self.out.push_back(PuOutput::AskForWork);
            }
            PuState::Processing { until, .. } => self.out.push_back(PuOutput::WakeAt(until)),
            // A stale timer: nothing to do.
            PuState::WaitingForWork | PuState::Collecting { .. } => {}
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<PuOutput> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(u: &mut ProcessingUnit) -> Vec<PuOutput> {
        std::iter::from_fn(|| u.poll()).collect()
    }

    #[test]
    fn the_loop_collects_processes_and_asks_again() {
        let mut u = ProcessingUnit::new(PuId(3), 1000, 1.0, 4, 1);
        let readouts = u.on_assign(10, EventId(7)).unwrap();
        assert_eq!(readouts.len(), 4);
        assert_eq!(u.on_collected(50, EventId(7)), Ok(10), "collection started at assignment");
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(1050)]);
        u.on_wake(1049);
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(1050)], "too early: wake again");
        u.on_wake(1050);
        assert_eq!(drain(&mut u), [PuOutput::Done(EventId(7)), PuOutput::AskForWork]);
        assert_eq!(u.state(), PuState::WaitingForWork);
    }

    #[test]
    fn an_assignment_to_a_busy_unit_is_an_error() {
        let mut u = ProcessingUnit::new(PuId(0), 1000, 1.0, 4, 1);
        u.on_assign(0, EventId(1)).unwrap();
        assert!(matches!(u.on_assign(1, EventId(2)), Err(DataflowError::UnitBusy { .. })));
        assert!(matches!(u.on_collected(2, EventId(2)), Err(DataflowError::NotCollecting { .. })));
    }
}
