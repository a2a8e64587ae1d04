//! The supervisor: makes events available at a rate (or on demand) and assigns each to a
//! processing unit that asked for work, by one of the policies of [ATLAS-DC] §7.1.

use super::Assignment;
use crate::ids::Layout;
use crate::scenario::{Policy, Rate, StartupOrder};
use crate::workload::{rng_for, Stream};
use crate::{EventId, Nanos, PuId, NS_PER_S};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// Units waiting for work, organised for the policy.
#[derive(Debug, Clone)]
enum Waiting {
    /// Arrival order (FCFS).
    Fifo(VecDeque<PuId>),
    /// Any order (random picks by index).
    Pool(Vec<PuId>),
    /// Per node, in arrival order; `cursor` is the last node chosen.
    PerNode { queues: Vec<VecDeque<PuId>>, cursor: usize, count: usize },
    /// A flag per unit; `cursor` is the last unit chosen.
    PerPu { waiting: Vec<bool>, cursor: usize, count: usize },
}

/// The supervisor (HLT supervisor / event manager).
#[derive(Debug, Clone)]
pub struct Supervisor {
    policy: Policy,
    layout: Layout,
    rate: Rate,
    waiting: Waiting,
    rng: Xoshiro256PlusPlus,
    total_events: u64,
    triggered: u64,
    next_event: EventId,
    start: Option<Nanos>,
    done: u64,
}

/// The order in which the processing units of a fresh system first ask for work: a seeded
/// shuffle (units start up in no particular order) or node by node. Every substrate uses it.
pub fn startup_order(seed: u64, total_pus: u32, order: StartupOrder) -> Vec<PuId> {
    let mut units: Vec<PuId> = (0..total_pus).map(PuId).collect();
    if order == StartupOrder::Shuffled {
        let mut rng = rng_for(seed, Stream::Supervisor, &[u64::MAX]);
        for i in (1..units.len()).rev() {
            let j = rng.random_range(0..=i);
            units.swap(i, j);
        }
    }
    units
}

impl Supervisor {
    /// A supervisor for the units of `layout` that will assign `total_events` events.
    pub fn new(layout: &Layout, policy: Policy, rate: Rate, total_events: u64, seed: u64) -> Self {
        let nodes = layout.nodes();
        let waiting = match policy {
            Policy::Fcfs => Waiting::Fifo(VecDeque::new()),
            Policy::Random => Waiting::Pool(Vec::new()),
            Policy::NodeRoundRobin | Policy::NodeLoadBalance => {
                Waiting::PerNode { queues: vec![VecDeque::new(); nodes as usize], cursor: nodes as usize - 1, count: 0 }
            }
            Policy::PuRoundRobin => {
                let n = layout.total_pus() as usize;
                Waiting::PerPu { waiting: vec![false; n], cursor: n - 1, count: 0 }
            }
        };
        Supervisor {
            policy,
            layout: *layout,
            rate,
            waiting,
            rng: rng_for(seed, Stream::Supervisor, &[]),
            total_events,
            triggered: 0,
            next_event: EventId(0),
            start: None,
            done: 0,
        }
    }

    /// The assignment policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Starts making events available at `now` (the first one immediately).
    pub fn start(&mut self, now: Nanos) {
        self.start = Some(now);
        if self.rate == Rate::Unbounded {
            self.triggered = self.total_events;
        }
    }

    /// Time of the `k`-th trigger (k from 0).
    fn trigger_time(&self, k: u64) -> Option<Nanos> {
        match (self.rate, self.start) {
            (Rate::Hz(hz), Some(t0)) => Some(t0 + ((k as f64) * NS_PER_S as f64 / hz).round() as Nanos),
            _ => None,
        }
    }

    /// When the next event becomes available, if that is in the future and events remain.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        if self.triggered >= self.total_events {
            return None;
        }
        self.trigger_time(self.triggered)
    }

    /// Time passes: make available every event whose trigger time has come.
    pub fn on_timeout(&mut self, now: Nanos) {
        while self.triggered < self.total_events && self.trigger_time(self.triggered).is_some_and(|t| t <= now) {
            self.triggered += 1;
        }
    }

    /// Unit `pu` asks for work.
    pub fn on_ready(&mut self, pu: PuId) {
        let node = self.layout.node_of(pu).index();
        match &mut self.waiting {
            Waiting::Fifo(q) => q.push_back(pu),
            Waiting::Pool(v) => v.push(pu),
            Waiting::PerNode { queues, count, .. } => {
                queues[node].push_back(pu);
                *count += 1;
            }
            Waiting::PerPu { waiting, count, .. } => {
                debug_assert!(!waiting[pu.index()]);
                waiting[pu.index()] = true;
                *count += 1;
            }
        }
    }

    /// Unit `pu` finished processing `event` (the event can be cleared from the readout units).
    pub fn on_done(&mut self, _event: EventId) {
        self.done += 1;
    }

    /// Events reported done.
    pub fn events_done(&self) -> u64 {
        self.done
    }

    /// Events assigned so far.
    pub fn events_assigned(&self) -> u64 {
        self.next_event.0
    }

    /// Units waiting for work.
    pub fn waiting_units(&self) -> usize {
        match &self.waiting {
            Waiting::Fifo(q) => q.len(),
            Waiting::Pool(v) => v.len(),
            Waiting::PerNode { count, .. } | Waiting::PerPu { count, .. } => *count,
        }
    }

    /// The next assignment, if an event is available and a unit is waiting.
    pub fn poll_assignment(&mut self) -> Option<Assignment> {
        if self.next_event.0 >= self.triggered || self.waiting_units() == 0 {
            return None;
        }
        let pu = self.choose();
        let event = self.next_event;
        self.next_event = event.next();
        Some(Assignment { event, pu })
    }

    fn choose(&mut self) -> PuId {
        let policy = self.policy;
        match &mut self.waiting {
            Waiting::Fifo(q) => q.pop_front().expect("non-empty"),
            Waiting::Pool(v) => {
                let i = self.rng.random_range(0..v.len());
                v.swap_remove(i)
            }
            Waiting::PerNode { queues, cursor, count } => {
                let n = queues.len();
                let node = if policy == Policy::NodeRoundRobin {
                    (1..=n).map(|d| (*cursor + d) % n).find(|&i| !queues[i].is_empty())
                } else {
                    // Most waiting units; ties go to the lowest node number, a plain arg-max as
                    // [ATLAS-DC] §7.1 states the policy. (Breaking ties round-robin instead makes
                    // it behave like node_round_robin, which [ATLAS-DC]'s results rule out.)
                    let mut best: Option<usize> = None;
                    for i in 0..n {
                        if !queues[i].is_empty() && best.is_none_or(|b| queues[i].len() > queues[b].len()) {
                            best = Some(i);
                        }
                    }
                    best
                }
                .expect("non-empty");
                *cursor = node;
                *count -= 1;
                queues[node].pop_front().expect("non-empty")
            }
            Waiting::PerPu { waiting, cursor, count } => {
                let n = waiting.len();
                let pu = (1..=n).map(|d| (*cursor + d) % n).find(|&i| waiting[i]).expect("non-empty");
                waiting[pu] = false;
                *cursor = pu;
                *count -= 1;
                PuId(pu as u32)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assign_all(s: &mut Supervisor) -> Vec<u32> {
        std::iter::from_fn(|| s.poll_assignment()).map(|a| a.pu.0).collect()
    }

    fn sup(policy: Policy) -> Supervisor {
        let mut s = Supervisor::new(&Layout::new(1, 3, 2), policy, Rate::Unbounded, 100, 1);
        s.start(0);
        s
    }

    #[test]
    fn fcfs_follows_arrival_order() {
        let mut s = sup(Policy::Fcfs);
        for pu in [4, 1, 5, 0] {
            s.on_ready(PuId(pu));
        }
        assert_eq!(assign_all(&mut s), vec![4, 1, 5, 0]);
    }

    #[test]
    fn node_round_robin_never_repeats_a_node_while_others_wait() {
        let mut s = sup(Policy::NodeRoundRobin);
        for pu in [0, 1, 2, 3, 4, 5] {
            s.on_ready(PuId(pu));
        }
        // Nodes 0,1,2,0,1,2 (units 0,2,4,1,3,5).
        assert_eq!(assign_all(&mut s), vec![0, 2, 4, 1, 3, 5]);
    }

    #[test]
    fn node_load_balance_picks_the_node_with_most_waiting() {
        let mut s = sup(Policy::NodeLoadBalance);
        for pu in [2, 4, 0, 1] {
            s.on_ready(PuId(pu));
        }
        // Node 0 has two waiting units: it goes first. Then all three nodes tie at one each and
        // the tie goes to the lowest node number — node 0 again, unlike node_round_robin.
        assert_eq!(assign_all(&mut s), vec![0, 1, 2, 4]);
    }

    #[test]
    fn pu_round_robin_walks_units_in_sequence() {
        let mut s = sup(Policy::PuRoundRobin);
        for pu in [5, 3, 0, 1] {
            s.on_ready(PuId(pu));
        }
        assert_eq!(assign_all(&mut s), vec![0, 1, 3, 5]);
    }

    #[test]
    fn random_picks_each_waiting_unit_once() {
        let mut s = sup(Policy::Random);
        for pu in 0..6 {
            s.on_ready(PuId(pu));
        }
        let mut got = assign_all(&mut s);
        assert_ne!(got, vec![0, 1, 2, 3, 4, 5], "a seeded shuffle of 6 is not the identity for this seed");
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn units_start_shuffled_or_node_by_node() {
        let by_node = startup_order(7, 48, StartupOrder::ByNode);
        assert_eq!(by_node, (0..48).map(PuId).collect::<Vec<_>>());
        let mut shuffled = startup_order(7, 48, StartupOrder::Shuffled);
        assert_ne!(shuffled, by_node);
        assert_eq!(shuffled, startup_order(7, 48, StartupOrder::Shuffled), "seeded");
        shuffled.sort_unstable();
        assert_eq!(shuffled, by_node, "a permutation of every unit");
    }

    #[test]
    fn rate_limits_assignments() {
        let mut s = Supervisor::new(&Layout::new(1, 1, 4), Policy::Fcfs, Rate::Hz(1000.0), 3, 1);
        for pu in 0..4 {
            s.on_ready(PuId(pu));
        }
        s.start(10);
        assert_eq!(s.poll_timeout(), Some(10));
        s.on_timeout(10);
        assert_eq!(s.poll_assignment().map(|a| (a.event, a.pu)), Some((EventId(0), PuId(0))));
        assert_eq!(s.poll_assignment(), None);
        assert_eq!(s.poll_timeout(), Some(1_000_010));
        s.on_timeout(2_000_010);
        assert_eq!(assign_all(&mut s), vec![1, 2]);
        assert_eq!(s.poll_timeout(), None, "all 3 events triggered");
    }
}
