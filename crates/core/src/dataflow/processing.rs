//! A processing unit: asks for an event, has its node's collector gather the data, processes it
//! for a fixed time, and asks again (closed loop). With region-of-interest steps it collects and
//! processes an event in several steps ([ATLAS-DC] §2, §5.2).

use super::DataflowError;
use crate::workload::{readout_subset, roi_subset, steps_taken};
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
        /// When this step's collection started (the unit asked its collector for the data).
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

/// One step of an event's collection: the share of the readout units it asks, then the time
/// the unit processes what it collected, after which it may reject the event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Fraction of the readout units asked, (0, 1].
    pub fraction: f64,
    /// Processing after the data are in.
    pub processing_ns: Nanos,
    /// Share of the events reaching this step rejected after it, [0, 1) (0 for the last step).
    pub reject: f64,
}

/// An event's data, all steps so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collected {
    /// When its first step's collection started.
    pub started: Nanos,
    /// Time the unit waited for data, summed over the steps: its data-collection latency.
    pub latency: Nanos,
    /// Payload bytes.
    pub bytes: u64,
    /// Fragments.
    pub fragments: u64,
}

/// The event a unit works on: its step and what its steps collected.
#[derive(Debug, Clone, Default)]
struct Progress {
    step: usize,
    /// The steps it takes: all of them unless a step rejects it.
    taken: usize,
    collected: Option<Collected>,
    /// Readout units asked so far, sorted.
    asked: Vec<ReadoutId>,
}

/// One processing unit. Units start waiting for work: the supervisor hears of them in
/// [`super::startup_order`].
#[derive(Debug, Clone)]
pub struct ProcessingUnit {
    id: PuId,
    state: PuState,
    /// The steps of every event, the last one collecting `collect_fraction`.
    steps: Vec<Step>,
    readout_units: u32,
    seed: u64,
    progress: Progress,
    out: VecDeque<PuOutput>,
}

impl ProcessingUnit {
    /// Unit `id`, collecting and processing every event in `steps` (at least one); a step's
    /// readout units are chosen per event from `seed` among the `readout_units`.
    pub fn new(id: PuId, steps: Vec<Step>, readout_units: u32, seed: u64) -> Self {
        assert!(!steps.is_empty(), "a processing unit collects every event in at least one step");
        ProcessingUnit {
            id,
            state: PuState::WaitingForWork,
            steps,
            readout_units,
            seed,
            progress: Progress::default(),
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
    /// units to collect from in its first step.
    pub fn on_assign(&mut self, now: Nanos, event: EventId) -> Result<Vec<ReadoutId>, DataflowError> {
        if self.state != PuState::WaitingForWork {
            return Err(DataflowError::UnitBusy { pu: self.id, event, state: self.state });
        }
        let reject = self.steps[..self.steps.len() - 1].iter().map(|s| s.reject);
        self.progress = Progress { taken: steps_taken(self.seed, event, reject), ..Progress::default() };
        Ok(self.collect(now, event))
    }

    /// Starts the current step of `event`: the readout units it asks.
    fn collect(&mut self, now: Nanos, event: EventId) -> Vec<ReadoutId> {
        self.state = PuState::Collecting { event, since: now };
        let p = &mut self.progress;
        let step = self.steps[p.step];
        let last = p.step + 1 == self.steps.len();
        let mut readouts = if last {
            readout_subset(self.seed, event, step.fraction, self.readout_units)
        } else {
            roi_subset(self.seed, event, p.step as u32, step.fraction, self.readout_units)
        };
        readouts.retain(|r| p.asked.binary_search(r).is_err());
        if p.step + 1 < p.taken {
            // Steps follow: they must not ask these again (an event in one step keeps no list).
            p.asked.extend_from_slice(&readouts);
            p.asked.sort_unstable();
        }
        readouts
    }

    /// The collector has every fragment of this step of `event` (`bytes` in `fragments`):
    /// process it. Returns the event's data after the last step it takes (the last of all, or
    /// one that rejects it), `None` after an earlier one.
    pub fn on_collected(
        &mut self,
        now: Nanos,
        event: EventId,
        bytes: u64,
        fragments: u64,
    ) -> Result<Option<Collected>, DataflowError> {
        let PuState::Collecting { event: e, since } = self.state else {
            return Err(DataflowError::NotCollecting { pu: self.id, event });
        };
        if e != event {
            return Err(DataflowError::NotCollecting { pu: self.id, event });
        }
        let p = &mut self.progress;
        let c = p.collected.get_or_insert(Collected { started: since, latency: 0, bytes: 0, fragments: 0 });
        c.latency += now - since;
        c.bytes += bytes;
        c.fragments += fragments;
        let until = now + self.steps[p.step].processing_ns;
        self.state = PuState::Processing { event, until };
        self.out.push_back(PuOutput::WakeAt(until));
        Ok((p.step + 1 == p.taken).then_some(*c))
    }

    /// The unit's timer fired at `now`: at the end of the processing of the last step the
    /// event takes, report it done and ask for the next one; at the end of an earlier step's,
    /// start the next step, returning the event and the readout units it asks; too early, ask
    /// to be woken again.
    pub fn on_wake(&mut self, now: Nanos) -> Option<(EventId, Vec<ReadoutId>)> {
        match self.state {
            PuState::Processing { event, until } if now >= until => {
                if self.progress.step + 1 < self.progress.taken {
                    self.progress.step += 1;
                    return Some((event, self.collect(now, event)));
                }
                self.state = PuState::WaitingForWork;
                self.out.push_back(PuOutput::Done(event));
                self.out.push_back(PuOutput::AskForWork);
            }
            PuState::Processing { until, .. } => self.out.push_back(PuOutput::WakeAt(until)),
            // A stale timer: nothing to do.
            PuState::WaitingForWork | PuState::Collecting { .. } => {}
        }
        None
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

    fn one_step(processing_ns: Nanos) -> Vec<Step> {
        vec![Step { fraction: 1.0, processing_ns, reject: 0.0 }]
    }

    #[test]
    fn the_loop_collects_processes_and_asks_again() {
        let mut u = ProcessingUnit::new(PuId(3), one_step(1000), 4, 1);
        let readouts = u.on_assign(10, EventId(7)).unwrap();
        assert_eq!(readouts.len(), 4);
        let c = Collected { started: 10, latency: 40, bytes: 400, fragments: 4 };
        assert_eq!(u.on_collected(50, EventId(7), 400, 4), Ok(Some(c)), "collection started at assignment");
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(1050)]);
        u.on_wake(1049);
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(1050)], "too early: wake again");
        u.on_wake(1050);
        assert_eq!(drain(&mut u), [PuOutput::Done(EventId(7)), PuOutput::AskForWork]);
        assert_eq!(u.state(), PuState::WaitingForWork);
    }

    #[test]
    fn an_assignment_to_a_busy_unit_is_an_error() {
        let mut u = ProcessingUnit::new(PuId(0), one_step(1000), 4, 1);
        u.on_assign(0, EventId(1)).unwrap();
        assert!(matches!(u.on_assign(1, EventId(2)), Err(DataflowError::UnitBusy { .. })));
        assert!(matches!(u.on_collected(2, EventId(2), 1, 1), Err(DataflowError::NotCollecting { .. })));
    }

    #[test]
    fn an_event_is_collected_in_its_steps_asking_each_readout_unit_once() {
        let steps = vec![
            Step { fraction: 0.25, processing_ns: 100, reject: 0.0 },
            Step { fraction: 0.5, processing_ns: 200, reject: 0.0 },
            Step { fraction: 1.0, processing_ns: 1000, reject: 0.0 },
        ];
        let mut u = ProcessingUnit::new(PuId(0), steps, 8, 1);
        let first = u.on_assign(0, EventId(3)).unwrap();
        assert_eq!(first.len(), 2, "a quarter of 8");
        assert_eq!(u.on_collected(10, EventId(3), 20, 2), Ok(None), "not the last step");
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(110)]);
        assert_eq!(u.on_wake(109), None);
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(110)], "too early: wake again");
        let (event, second) = u.on_wake(110).expect("the second step starts");
        assert_eq!(event, EventId(3));
        assert!(second.len() <= 4 && second.iter().all(|r| !first.contains(r)), "{first:?} then {second:?}");
        assert_eq!(u.on_collected(150, EventId(3), 10 * second.len() as u64, second.len() as u64), Ok(None));
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(350)]);
        let (_, last) = u.on_wake(350).expect("the last step starts");
        let mut all: Vec<ReadoutId> = first.iter().chain(&second).chain(&last).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..8).map(ReadoutId).collect::<Vec<_>>(), "the last step asks the units left");
        let c = u.on_collected(400, EventId(3), 10 * last.len() as u64, last.len() as u64).unwrap();
        // Waited 10 + 40 + 50 ns; the 300 ns of processing between the steps is not latency.
        assert_eq!(c, Some(Collected { started: 0, latency: 100, bytes: 80, fragments: 8 }));
        assert_eq!(drain(&mut u), [PuOutput::WakeAt(1400)]);
        assert_eq!(u.on_wake(1400), None);
        assert_eq!(drain(&mut u), [PuOutput::Done(EventId(3)), PuOutput::AskForWork]);
        let again = u.on_assign(2000, EventId(4)).unwrap();
        assert_eq!(again.len(), 2, "the next event starts from its first step");
    }
}
