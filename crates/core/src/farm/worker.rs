//! A sub-farm worker: takes events in arrival order, runs the trigger on each (a reject stops
//! early, an accept runs the whole chain), and answers the SFC.

use super::{accepts, Token, Verdict};
use crate::scenario::{Dispatch, Farm};
use crate::{EventId, Nanos, WorkerId};
use std::collections::VecDeque;

/// What a worker asks its driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerOutput {
    /// Send this token (or verdict) to the SFC.
    Token(Token),
    /// Wake the worker at this time (end of processing).
    WakeAt(Nanos),
    /// The worker has started processing `event` (it took it from its connection).
    Started {
        /// The event.
        event: EventId,
        /// Its size.
        bytes: u64,
    },
    /// The worker has finished `event`.
    Processed {
        /// The verdict.
        verdict: Verdict,
        /// When processing started.
        started: Nanos,
    },
}

#[derive(Debug, Clone, Copy)]
struct Busy {
    verdict: Verdict,
    started: Nanos,
    until: Nanos,
}

/// One worker node.
#[derive(Debug, Clone)]
pub struct Worker {
    id: WorkerId,
    dispatch: Dispatch,
    initial_tokens: u32,
    accept_fraction: f64,
    accept_ns: Nanos,
    reject_ns: Nanos,
    output_bytes: u64,
    seed: u64,
    queue: VecDeque<(EventId, u64)>,
    busy: Option<Busy>,
    busy_ns: Nanos,
    processed: u64,
    out: VecDeque<WorkerOutput>,
}

impl Worker {
    /// Worker `id` of the sub-farm `farm`, deciding from `seed`.
    pub fn new(id: WorkerId, farm: &Farm, seed: u64) -> Self {
        Worker {
            id,
            dispatch: farm.dispatch,
            initial_tokens: farm.initial_tokens,
            accept_fraction: farm.accept_fraction,
            accept_ns: farm.accept_ns,
            reject_ns: farm.reject_ns,
            output_bytes: farm.accept_output_bytes,
            seed,
            queue: VecDeque::new(),
            busy: None,
            busy_ns: 0,
            processed: 0,
            out: VecDeque::new(),
        }
    }

    /// The worker's connection to the SFC is up: under `tokens` it announces itself with its
    /// initial tokens ([LHCB-SUBFARM] §2.3.1.2).
    pub fn on_connected(&mut self) {
        if self.dispatch == Dispatch::Tokens {
            for _ in 0..self.initial_tokens {
                self.out.push_back(WorkerOutput::Token(Token { worker: self.id, verdict: None }));
            }
        }
    }

    /// An event arrives from the SFC at `now`.
    pub fn on_event(&mut self, now: Nanos, event: EventId, bytes: u64) {
        self.queue.push_back((event, bytes));
        self.start_next(now);
    }

    /// The driver's wake-up at `now`: finishes the event in hand if its time has come.
    pub fn on_wake(&mut self, now: Nanos) {
        let Some(b) = self.busy.filter(|b| b.until <= now) else { return };
        self.busy = None;
        self.busy_ns += b.until - b.started;
        self.processed += 1;
        self.out.push_back(WorkerOutput::Processed { verdict: b.verdict, started: b.started });
        if self.dispatch != Dispatch::Push {
            self.out.push_back(WorkerOutput::Token(Token { worker: self.id, verdict: Some(b.verdict) }));
        }
        self.start_next(now);
    }

    fn start_next(&mut self, now: Nanos) {
        if self.busy.is_some() {
            return;
        }
        let Some((event, bytes)) = self.queue.pop_front() else { return };
        let accepted = accepts(self.seed, event, self.accept_fraction);
        let (time, output_bytes) = if accepted { (self.accept_ns, self.output_bytes) } else { (self.reject_ns, 0) };
        let verdict = Verdict { event, accepted, output_bytes };
        self.busy = Some(Busy { verdict, started: now, until: now + time });
        self.out.push_back(WorkerOutput::Started { event, bytes });
        if time == 0 {
            self.on_wake(now);
        } else {
            self.out.push_back(WorkerOutput::WakeAt(now + time));
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<WorkerOutput> {
        self.out.pop_front()
    }

    /// Events waiting behind the one in hand.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Time spent processing, whole events finished so far.
    pub fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }

    /// Events processed.
    pub fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn farm(dispatch: Dispatch) -> Farm {
        Farm { dispatch, accept_fraction: 0.5, accept_ns: 1000, reject_ns: 100, ..Farm::default() }
    }

    fn drain(w: &mut Worker) -> Vec<WorkerOutput> {
        std::iter::from_fn(|| w.poll()).collect()
    }

    #[test]
    fn a_worker_takes_events_in_order_and_returns_a_token_after_each() {
        let mut w = Worker::new(WorkerId(3), &Farm { initial_tokens: 2, ..farm(Dispatch::Tokens) }, 1);
        w.on_connected();
        let hello = Token { worker: WorkerId(3), verdict: None };
        assert_eq!(drain(&mut w), vec![WorkerOutput::Token(hello); 2]);
        w.on_event(0, EventId(0), 32);
        w.on_event(0, EventId(1), 32);
        assert_eq!(w.queued(), 1, "one in hand, one waiting");
        let a0 = accepts(1, EventId(0), 0.5);
        let t0 = if a0 { 1000 } else { 100 };
        assert_eq!(drain(&mut w)[1], WorkerOutput::WakeAt(t0));
        w.on_wake(t0 - 1);
        assert!(drain(&mut w).is_empty(), "too early");
        w.on_wake(t0);
        let out = drain(&mut w);
        let verdict = Verdict { event: EventId(0), accepted: a0, output_bytes: if a0 { 64_000 } else { 0 } };
        assert_eq!(out[0], WorkerOutput::Processed { verdict, started: 0 });
        assert_eq!(out[1], WorkerOutput::Token(Token { worker: WorkerId(3), verdict: Some(verdict) }));
        assert_eq!(out[2], WorkerOutput::Started { event: EventId(1), bytes: 32 });
        assert_eq!((w.processed(), w.busy_ns()), (1, t0));
    }

    #[test]
    fn a_pushed_worker_sends_nothing_back() {
        let mut w = Worker::new(WorkerId(0), &Farm { reject_ns: 0, accept_ns: 0, ..farm(Dispatch::Push) }, 1);
        w.on_connected();
        w.on_event(5, EventId(0), 32);
        let out = drain(&mut w);
        assert!(out.iter().all(|o| !matches!(o, WorkerOutput::Token(_))), "{out:?}");
        assert_eq!(w.processed(), 1);
    }
}
