//! A processing unit: asks for an event, has its collector gather the data, processes it for a
//! fixed time, and asks again (closed loop).

use crate::workload::readout_subset;
use crate::{EventId, Nanos, PuId, ReadoutId};

/// Where a processing unit is in its loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PuState {
    /// Has asked the supervisor for work and waits for an assignment.
    WaitingForWork,
    /// Its collector is gathering `event`.
    Collecting(EventId),
    /// Processing `event` until the given time.
    Processing(EventId, Nanos),
}

/// What a processing unit asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PuOutput {
    /// Tell the supervisor this unit wants an event.
    AskForWork,
    /// Ask the node's collector for the fragments of `event` held by `readouts`.
    Collect {
        /// The event.
        event: EventId,
        /// Readout units to collect from.
        readouts: Vec<ReadoutId>,
    },
    /// Wake this unit at the given time (end of processing).
    WakeAt(Nanos),
    /// `event` is fully processed (the supervisor may clear it).
    Done(EventId),
}

/// One processing unit.
#[derive(Debug, Clone)]
pub struct ProcessingUnit {
    id: PuId,
    state: PuState,
    processing_ns: Nanos,
    collect_fraction: f64,
    readout_units: u32,
    seed: u64,
}

impl ProcessingUnit {
    /// Unit `id`, processing each event for `processing_ns` and collecting `collect_fraction`
    /// of the `readout_units` (chosen per event from `seed`).
    pub fn new(id: PuId, processing_ns: Nanos, collect_fraction: f64, readout_units: u32, seed: u64) -> Self {
        ProcessingUnit { id, state: PuState::WaitingForWork, processing_ns, collect_fraction, readout_units, seed }
    }

    /// This unit's id.
    pub fn id(&self) -> PuId {
        self.id
    }

    /// Current state.
    pub fn state(&self) -> PuState {
        self.state
    }

    /// Start of the loop: ask for work.
    pub fn start(&mut self) -> PuOutput {
        self.state = PuState::WaitingForWork;
        PuOutput::AskForWork
    }

    /// The supervisor assigned `event`: start collecting it.
    pub fn on_assign(&mut self, event: EventId) -> PuOutput {
        debug_assert_eq!(self.state, PuState::WaitingForWork, "PU {} assigned while busy", self.id);
        self.state = PuState::Collecting(event);
        PuOutput::Collect {
            event,
            readouts: readout_subset(self.seed, event, self.collect_fraction, self.readout_units),
        }
    }

    /// The collector has every fragment of the event: process it.
    pub fn on_collected(&mut self, now: Nanos, event: EventId) -> PuOutput {
        debug_assert_eq!(self.state, PuState::Collecting(event));
        let until = now + self.processing_ns;
        self.state = PuState::Processing(event, until);
        PuOutput::WakeAt(until)
    }

    /// Processing time is over: report the event done and ask for the next one.
    /// Returns nothing if the unit is not processing or `now` is too early.
    pub fn on_timeout(&mut self, now: Nanos) -> Option<[PuOutput; 2]> {
        match self.state {
            PuState::Processing(event, until) if now >= until => {
                self.state = PuState::WaitingForWork;
                Some([PuOutput::Done(event), PuOutput::AskForWork])
            }
            _ => None,
        }
    }
}
