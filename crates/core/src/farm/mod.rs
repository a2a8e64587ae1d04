//! The LHCb sub-farm ([LHCB-SUBFARM]: Neufeld and Thannhaeuser, "Load balancing and Gigabit
//! Ethernet Performance Studies for LHCb DAQ sub-farms", LHCb 2002-049): a sub-farm controller
//! (SFC) receives events and hands each to one of its worker nodes; the workers run the
//! trigger and send their verdict back.
//!
//! Two sans-IO state machines, driven like [`crate::dataflow`]'s: the [`Dispatcher`] (the SFC,
//! with its event queue and its FIFO token queue) and the [`Worker`]. The scenario's `[farm]`
//! section ([`crate::scenario::Farm`]) configures both.

mod dispatcher;
mod source;
mod tally;
mod worker;

pub use dispatcher::{Dispatcher, DispatcherOutput, DispatcherStats};
pub use source::{Arrival, EventSource};
pub use tally::FarmTally;
pub use worker::{Worker, WorkerOutput};

use crate::workload::{rng_for, Stream};
use crate::{EventId, WorkerId};
use rand::Rng;

/// A worker's trigger decision on one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The event.
    pub event: EventId,
    /// Accepted (its output goes to storage) or rejected.
    pub accepted: bool,
    /// Output bytes carried back (0 for a rejected event).
    pub output_bytes: u64,
}

/// A control token: the worker is ready for another event. It carries the verdict on the
/// worker's last event, except for the tokens a worker sends when it connects ([LHCB-SUBFARM]
/// §2.3.1.2). Under round-robin dispatch the same message carries the verdict alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// The worker that sent it.
    pub worker: WorkerId,
    /// The verdict on its last event, if any.
    pub verdict: Option<Verdict>,
}

impl Token {
    /// Size on the wire: `token_bytes` plus any accepted event's output.
    pub fn wire_bytes(&self, token_bytes: u32) -> u64 {
        token_bytes as u64 + self.verdict.map_or(0, |v| v.output_bytes)
    }
}

/// Whether a worker accepts `event`: a pure function of (seed, event), so every substrate and
/// every dispatch policy sees the same decisions.
pub fn accepts(seed: u64, event: EventId, accept_fraction: f64) -> bool {
    accept_fraction > 0.0 && rng_for(seed, Stream::Verdict, &[event.0]).random::<f64>() < accept_fraction
}

/// Sub-farm bookkeeping errors: a misbehaving peer, which a driver counts and survives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FarmError {
    /// A token from a worker the SFC does not know.
    #[error("token from unknown worker {worker}")]
    UnknownWorker {
        /// The worker named in the token.
        worker: WorkerId,
    },
    /// A verdict on an event the SFC did not send to that worker (or already heard about).
    #[error("worker {worker} returned a verdict on event {event}, which it was not sent")]
    EventNotSent {
        /// The worker.
        worker: WorkerId,
        /// The event.
        event: EventId,
    },
    /// A token from a worker declared lost.
    #[error("token from worker {worker}, which was declared lost")]
    LostWorker {
        /// The worker.
        worker: WorkerId,
    },
    /// An event offered to a full event queue.
    #[error("the SFC's event queue is full ({capacity} events); event {event} is lost")]
    QueueFull {
        /// The event.
        event: EventId,
        /// The queue's capacity.
        capacity: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptance_follows_the_fraction() {
        // 20 000 draws at p = 0.005: mean 100, sd 10; 60..140 is four standard deviations.
        let n = (0..20_000).filter(|&e| accepts(1, EventId(e), 0.005)).count();
        assert!((60..140).contains(&n), "{n} accepted of 20 000 at 0.005");
        assert!(!(0..1000).any(|e| accepts(1, EventId(e), 0.0)));
        assert!((0..1000).all(|e| accepts(1, EventId(e), 1.0)));
    }
}
