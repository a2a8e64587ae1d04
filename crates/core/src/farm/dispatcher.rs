//! The sub-farm controller's dispatcher: an event queue, a FIFO token queue, and the rule that
//! picks a worker for each event.

use super::{FarmError, Token, Verdict};
use crate::scenario::Dispatch;
use crate::{EventId, Nanos, WorkerId};
use std::collections::VecDeque;

/// What the dispatcher asks its driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatcherOutput {
    /// Send `event` (`bytes` long) to `worker`.
    Send {
        /// The worker.
        worker: WorkerId,
        /// The event.
        event: EventId,
        /// Its size.
        bytes: u64,
    },
    /// `worker` returned its verdict on an event that reached the SFC at `queued`.
    Verdict {
        /// The worker.
        worker: WorkerId,
        /// The verdict.
        verdict: Verdict,
        /// When the event reached the SFC.
        queued: Nanos,
    },
}

/// Counters of a dispatcher over a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispatcherStats {
    /// Events that reached the SFC when no worker could take them (token queue empty, or the
    /// round-robin worker's connection full): they waited in the event queue ([LHCB-SUBFARM]
    /// §2.3.2.2 counts them for version 1).
    pub waited_for_token: u64,
    /// Most events ever waiting in the event queue.
    pub peak_event_queue: usize,
    /// Most tokens ever waiting in the token queue.
    pub peak_token_queue: usize,
    /// Tokens or verdicts that broke the protocol (unknown worker, event never sent, lost
    /// worker), each also returned as an error.
    pub protocol_errors: u64,
    /// Events and event bytes sent, per worker.
    pub sent: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Default)]
struct Slot {
    lost: bool,
    /// The connection takes another event (`round_robin`, `push`).
    writable: bool,
    /// Events sent and not yet answered, with their arrival at the SFC (`tokens`,
    /// `round_robin`; a pushed event is never answered).
    outstanding: VecDeque<(EventId, Nanos)>,
}

/// The SFC's dispatcher.
///
/// Under `tokens` an event goes to the sender of the first token in the FIFO token queue; a
/// worker's token returns after it has processed its event. Under `round_robin` events go to
/// the workers in a fixed cycle, each waiting (as a blocking send would) until that worker's
/// connection takes it. Under `push` an event goes to the first worker whose connection takes
/// it. Events that find no worker wait in the event queue, in order.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    dispatch: Dispatch,
    /// `Some(n)`: a queue of `n` events (version 1); `None`: no event queue — an event is made
    /// only when a worker can take it (versions 2 and 3).
    capacity: Option<usize>,
    workers: Vec<Slot>,
    events: VecDeque<(EventId, u64, Nanos)>,
    tokens: VecDeque<WorkerId>,
    /// Workers whose connection became writable, in that order (`push`).
    writable: VecDeque<WorkerId>,
    /// The next worker in the round-robin cycle.
    next: usize,
    stats: DispatcherStats,
    out: VecDeque<DispatcherOutput>,
}

impl Dispatcher {
    /// A dispatcher for `workers` workers (none connected yet); `capacity` as in the struct.
    pub fn new(dispatch: Dispatch, workers: u32, capacity: Option<usize>) -> Self {
        Dispatcher {
            dispatch,
            capacity,
            workers: vec![Slot::default(); workers as usize],
            events: VecDeque::new(),
            tokens: VecDeque::new(),
            writable: VecDeque::new(),
            next: 0,
            stats: DispatcherStats { sent: vec![(0, 0); workers as usize], ..Default::default() },
            out: VecDeque::new(),
        }
    }

    /// Whether the driver should offer an event now: there is room in the event queue, or
    /// (without a queue) a worker can take one at once.
    pub fn wants_event(&self) -> bool {
        match self.capacity {
            Some(c) => self.events.len() < c,
            None => self.events.is_empty() && self.ready_worker().is_some(),
        }
    }

    /// An event reaches the SFC at `now`. It is dispatched at once if a worker can take it,
    /// otherwise it waits; a full queue refuses it.
    pub fn on_event(&mut self, now: Nanos, event: EventId, bytes: u64) -> Result<(), FarmError> {
        let capacity = self.capacity.unwrap_or(1);
        if self.events.len() >= capacity {
            return Err(FarmError::QueueFull { event, capacity });
        }
        if self.ready_worker().is_none() {
            self.stats.waited_for_token += 1;
        }
        self.events.push_back((event, bytes, now));
        self.stats.peak_event_queue = self.stats.peak_event_queue.max(self.events.len());
        self.dispatch_all();
        Ok(())
    }

    /// A token (or, under `round_robin`, a verdict) from `token.worker` arrives at `now`.
    pub fn on_token(&mut self, _now: Nanos, token: Token) -> Result<(), FarmError> {
        let w = token.worker;
        let result = self.check_token(&token);
        if result.is_err() {
            self.stats.protocol_errors += 1;
            return result;
        }
        if let Some(verdict) = token.verdict {
            let slot = &mut self.workers[w.index()];
            let i = slot.outstanding.iter().position(|&(e, _)| e == verdict.event).expect("checked");
            let (_, queued) = slot.outstanding.remove(i).expect("in range");
            self.out.push_back(DispatcherOutput::Verdict { worker: w, verdict, queued });
        }
        if self.dispatch == Dispatch::Tokens {
            self.tokens.push_back(w);
            self.stats.peak_token_queue = self.stats.peak_token_queue.max(self.tokens.len());
        }
        self.dispatch_all();
        Ok(())
    }

    fn check_token(&self, token: &Token) -> Result<(), FarmError> {
        let w = token.worker;
        let slot = self.workers.get(w.index()).ok_or(FarmError::UnknownWorker { worker: w })?;
        if slot.lost {
            return Err(FarmError::LostWorker { worker: w });
        }
        match token.verdict {
            Some(v) if !slot.outstanding.iter().any(|&(e, _)| e == v.event) => {
                Err(FarmError::EventNotSent { worker: w, event: v.event })
            }
            _ => Ok(()),
        }
    }

    /// `worker`'s connection takes another event (`round_robin`, `push`); the driver says so
    /// once per change, from not writable to writable.
    pub fn on_writable(&mut self, worker: WorkerId) {
        let slot = &mut self.workers[worker.index()];
        if slot.lost || slot.writable {
            return;
        }
        slot.writable = true;
        if self.dispatch == Dispatch::Push {
            self.writable.push_back(worker);
        }
        self.dispatch_all();
    }

    /// `worker` is gone: its tokens leave the queue, it gets no more events, and the events
    /// it held and had not answered are returned (lost: the SFC does not re-dispatch them,
    /// since a worker may have died of the event itself).
    pub fn on_worker_lost(&mut self, worker: WorkerId) -> Vec<EventId> {
        let slot = &mut self.workers[worker.index()];
        slot.lost = true;
        slot.writable = false;
        let lost = slot.outstanding.drain(..).map(|(e, _)| e).collect();
        self.tokens.retain(|&w| w != worker);
        self.writable.retain(|&w| w != worker);
        self.dispatch_all();
        lost
    }

    /// The worker the head event would go to now, if any.
    fn ready_worker(&self) -> Option<WorkerId> {
        match self.dispatch {
            Dispatch::Tokens => self.tokens.front().copied(),
            Dispatch::Push => self.writable.front().copied(),
            Dispatch::RoundRobin => {
                let live = self.workers.iter().any(|s| !s.lost);
                let w = self.round_robin_next();
                (live && self.workers[w].writable).then_some(WorkerId(w as u32))
            }
        }
    }

    /// The next live worker of the cycle from `self.next` (`self.next` itself if all are lost).
    fn round_robin_next(&self) -> usize {
        let n = self.workers.len();
        (0..n).map(|k| (self.next + k) % n).find(|&w| !self.workers[w].lost).unwrap_or(self.next)
    }

    fn dispatch_all(&mut self) {
        while !self.events.is_empty() {
            let Some(worker) = self.ready_worker() else { break };
            let (event, bytes, queued) = self.events.pop_front().expect("not empty");
            match self.dispatch {
                Dispatch::Tokens => {
                    self.tokens.pop_front();
                }
                Dispatch::Push => {
                    self.writable.pop_front();
                }
                Dispatch::RoundRobin => self.next = (worker.index() + 1) % self.workers.len(),
            }
            let slot = &mut self.workers[worker.index()];
            if self.dispatch != Dispatch::Tokens {
                // A send fills the connection until the driver says it takes more.
                slot.writable = false;
            }
            if self.dispatch != Dispatch::Push {
                slot.outstanding.push_back((event, queued));
            }
            let sent = &mut self.stats.sent[worker.index()];
            sent.0 += 1;
            sent.1 += bytes;
            self.out.push_back(DispatcherOutput::Send { worker, event, bytes });
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<DispatcherOutput> {
        self.out.pop_front()
    }

    /// Events waiting in the event queue.
    pub fn queued_events(&self) -> usize {
        self.events.len()
    }

    /// Tokens waiting in the token queue.
    pub fn queued_tokens(&self) -> usize {
        self.tokens.len()
    }

    /// Counters so far.
    pub fn stats(&self) -> &DispatcherStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sends(d: &mut Dispatcher) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        while let Some(o) = d.poll() {
            if let DispatcherOutput::Send { worker, event, .. } = o {
                v.push((worker.0, event.0));
            }
        }
        v
    }

    fn token(w: u32, event: Option<u64>) -> Token {
        let verdict = event.map(|e| Verdict { event: EventId(e), accepted: false, output_bytes: 0 });
        Token { worker: WorkerId(w), verdict }
    }

    #[test]
    fn events_wait_for_tokens_and_go_to_the_first_token() {
        let mut d = Dispatcher::new(Dispatch::Tokens, 3, Some(10));
        d.on_event(0, EventId(0), 100).unwrap();
        assert_eq!(d.stats().waited_for_token, 1);
        assert!(sends(&mut d).is_empty());
        d.on_token(1, token(2, None)).unwrap();
        d.on_token(2, token(0, None)).unwrap();
        assert_eq!(sends(&mut d), vec![(2, 0)]);
        d.on_event(3, EventId(1), 100).unwrap();
        assert_eq!(sends(&mut d), vec![(0, 1)]);
        d.on_token(4, token(0, Some(1))).unwrap();
        let out: Vec<_> = std::iter::from_fn(|| d.poll()).collect();
        assert!(matches!(out[..], [DispatcherOutput::Verdict { queued: 3, .. }]), "{out:?}");
    }

    #[test]
    fn round_robin_waits_for_the_next_worker_even_if_another_is_ready() {
        let mut d = Dispatcher::new(Dispatch::RoundRobin, 3, Some(10));
        for w in 0..3 {
            d.on_writable(WorkerId(w));
        }
        for e in 0..4 {
            d.on_event(0, EventId(e), 1).unwrap();
        }
        assert_eq!(sends(&mut d), vec![(0, 0), (1, 1), (2, 2)]);
        // Worker 2 frees first, but event 3 is worker 0's turn.
        d.on_writable(WorkerId(2));
        assert!(sends(&mut d).is_empty());
        d.on_writable(WorkerId(0));
        assert_eq!(sends(&mut d), vec![(0, 3)]);
    }

    #[test]
    fn push_serves_connections_in_the_order_they_free() {
        let mut d = Dispatcher::new(Dispatch::Push, 3, None);
        assert!(!d.wants_event(), "no worker can take an event yet");
        d.on_writable(WorkerId(1));
        d.on_writable(WorkerId(1));
        d.on_writable(WorkerId(0));
        assert!(d.wants_event());
        d.on_event(0, EventId(0), 1).unwrap();
        d.on_event(0, EventId(1), 1).unwrap();
        assert_eq!(sends(&mut d), vec![(1, 0), (0, 1)]);
        assert!(!d.wants_event());
    }

    #[test]
    fn bad_tokens_are_counted_errors() {
        let mut d = Dispatcher::new(Dispatch::Tokens, 2, Some(4));
        assert_eq!(d.on_token(0, token(7, None)), Err(FarmError::UnknownWorker { worker: WorkerId(7) }));
        assert_eq!(
            d.on_token(0, token(1, Some(5))),
            Err(FarmError::EventNotSent { worker: WorkerId(1), event: EventId(5) })
        );
        assert_eq!(d.stats().protocol_errors, 2);
        assert_eq!(d.queued_tokens(), 0, "a bad token is not queued");
    }

    #[test]
    fn a_lost_worker_loses_its_tokens_and_events() {
        let mut d = Dispatcher::new(Dispatch::Tokens, 2, Some(4));
        d.on_token(0, token(0, None)).unwrap();
        d.on_token(0, token(0, None)).unwrap();
        d.on_token(0, token(1, None)).unwrap();
        d.on_event(0, EventId(0), 1).unwrap();
        assert_eq!(sends(&mut d), vec![(0, 0)]);
        assert_eq!(d.on_worker_lost(WorkerId(0)), vec![EventId(0)]);
        d.on_event(0, EventId(1), 1).unwrap();
        d.on_event(0, EventId(2), 1).unwrap();
        assert_eq!(sends(&mut d), vec![(1, 1)], "worker 0's second token left with it");
        assert_eq!(d.on_token(0, token(0, Some(0))), Err(FarmError::LostWorker { worker: WorkerId(0) }));
    }

    #[test]
    fn a_full_queue_refuses() {
        let mut d = Dispatcher::new(Dispatch::Tokens, 1, Some(1));
        d.on_event(0, EventId(0), 1).unwrap();
        assert!(!d.wants_event());
        assert_eq!(d.on_event(0, EventId(1), 1), Err(FarmError::QueueFull { event: EventId(1), capacity: 1 }));
    }

    #[derive(Debug, Clone)]
    enum Step {
        Event,
        /// A token from worker (index), answering its oldest event if it has one.
        Token(prop::sample::Index),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![Just(Step::Event), any::<prop::sample::Index>().prop_map(Step::Token)]
    }

    proptest! {
        /// Under `tokens`: every event is dispatched exactly once, in arrival order, never to a
        /// worker without a token, and to workers in the order their tokens arrived.
        #[test]
        fn tokens_dispatch_each_event_once_in_fifo_order(
            workers in 1u32..6,
            initial in 1u32..3,
            steps in proptest::collection::vec(step(), 0..300),
        ) {
            let mut d = Dispatcher::new(Dispatch::Tokens, workers, Some(1000));
            let mut model_tokens: VecDeque<u32> = VecDeque::new();
            let mut held: Vec<VecDeque<u64>> = vec![VecDeque::new(); workers as usize];
            let mut sent: Vec<u64> = Vec::new();
            let mut next_event = 0u64;
            for _ in 0..initial {
                for w in 0..workers {
                    d.on_token(0, token(w, None)).unwrap();
                    model_tokens.push_back(w);
                }
            }
            let check = |d: &mut Dispatcher, model: &mut VecDeque<u32>, held: &mut Vec<VecDeque<u64>>,
                             sent: &mut Vec<u64>| -> Result<(), TestCaseError> {
                for (w, e) in sends(d) {
                    prop_assert_eq!(model.pop_front(), Some(w), "not the first token's worker");
                    held[w as usize].push_back(e);
                    sent.push(e);
                }
                prop_assert_eq!(d.queued_tokens(), model.len());
                Ok(())
            };
            for s in steps {
                match s {
                    Step::Event => {
                        d.on_event(0, EventId(next_event), 1).unwrap();
                        next_event += 1;
                    }
                    Step::Token(i) => {
                        let w = i.index(workers as usize);
                        let Some(e) = held[w].pop_front() else { continue };
                        d.on_token(0, token(w as u32, Some(e))).unwrap();
                        model_tokens.push_back(w as u32);
                    }
                }
                check(&mut d, &mut model_tokens, &mut held, &mut sent)?;
            }
            // Enough tokens for whatever still waits: everything goes out.
            for k in 0..d.queued_events() {
                let w = (k % workers as usize) as u32;
                d.on_token(0, token(w, None)).unwrap();
                model_tokens.push_back(w);
                check(&mut d, &mut model_tokens, &mut held, &mut sent)?;
            }
            prop_assert_eq!(sent, (0..next_event).collect::<Vec<_>>(), "each event once, in order");
            prop_assert_eq!(d.stats().protocol_errors, 0);
        }
    }
}
