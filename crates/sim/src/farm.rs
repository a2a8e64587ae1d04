//! The LHCb sub-farm simulated: the `core` [`Dispatcher`] (the SFC) and [`Worker`]s driven
//! over the [`Sockets`] layer, one TCP connection per worker, on a star switch.
//!
//! Host 0 is the SFC (`farm.sfc_link_bps`); worker `w` is host `w + 1`
//! (`farm.worker_link_bps`). Connection `w` joins worker `w` (it opened the connection) to the
//! SFC. The note's two switches (the SFC's Gigabit switch with a Gigabit uplink to the workers'
//! Fast Ethernet switch, [LHCB-SUBFARM] §2.1) become one switch whose port towards the SFC runs at
//! the SFC's rate: the uplink ran at that rate too, so it added no bottleneck.

use crate::engine::EventQueue;
use crate::main_loop::{self, Dataflow, World};
use crate::net::Network;
use crate::options::{SimOptions, SimOutput};
use crate::sockets::{End, Ev, Sockets};
use daqnet_core::farm::{Dispatcher, DispatcherOutput, EventSource, FarmError, FarmTally, Token, Worker, WorkerOutput};
use daqnet_core::scenario::{Dispatch, Farm, Implementation};
use daqnet_core::{ConnId, EventId, Nanos, Scenario, WorkerId};
use daqnet_fabric::network::NetworkPlan;
use std::sync::atomic::AtomicBool;

#[derive(Debug, Clone, Copy)]
enum Msg {
    Event { event: EventId, bytes: u64 },
    Token(Token),
}

#[derive(Debug, Clone, Copy)]
enum FarmEv {
    /// The next event reaches the SFC at its own time (`v1` at a fixed rate, or the event
    /// builder's output).
    Generate,
    WorkerWake(WorkerId),
}

struct FarmWorld<'a> {
    q: EventQueue<Ev<FarmEv>>,
    net: Sockets<Msg>,
    farm: Farm,
    source: EventSource,
    sfc: Dispatcher,
    workers: Vec<Worker>,
    /// Per worker: event bytes sent to it, and taken by it (started); their difference is
    /// what sits in the connection.
    sent: Vec<u64>,
    taken: Vec<u64>,
    /// Arrival at the SFC of events pushed (`push` has no verdicts to carry it back).
    pushed_at: std::collections::HashMap<EventId, Nanos>,
    generated: u64,
    total: u64,
    tally: FarmTally,
    opts: SimOptions<'a>,
}

/// Simulates the sub-farm of `scenario` (valid, defaults filled in, with `[farm]`).
pub fn simulate(scenario: &Scenario, origin: &str, opts: SimOptions) -> SimOutput {
    main_loop::simulate::<FarmWorld>(scenario, origin, opts)
}

/// What a trace of `scenario` can select.
pub(crate) fn targets(scenario: &Scenario) -> crate::trace::Targets {
    main_loop::targets::<FarmWorld>(scenario)
}

impl Dataflow for FarmWorld<'_> {
    type Msg = Msg;
    type App = FarmEv;

    fn parts(&mut self) -> (&mut Sockets<Msg>, &mut EventQueue<Ev<FarmEv>>) {
        (&mut self.net, &mut self.q)
    }

    fn finished(&self) -> bool {
        self.tally.finished()
    }

    fn on_message(&mut self, c: ConnId, msg: Msg) {
        self.handle_message(c, msg);
    }

    fn on_app(&mut self, ev: FarmEv) {
        match ev {
            FarmEv::Generate => self.generate(),
            FarmEv::WorkerWake(w) => {
                self.workers[w.index()].on_wake(self.q.now());
                self.drain_worker(w);
            }
        }
    }
}

impl<'a> World<'a> for FarmWorld<'a> {
    fn new(scenario: &Scenario, opts: SimOptions<'a>) -> Self {
        let farm = scenario.farm.clone().expect("a sub-farm scenario has [farm]");
        let net = &scenario.network;
        let n = farm.workers;
        let rate = |h: usize| if h == 0 { farm.sfc_link_bps } else { farm.worker_link_bps };
        let hosts = scenario.host_names().into_iter().enumerate().map(|(h, name)| (name, rate(h))).collect();
        let network = Network::new(NetworkPlan::of_hosts(net, hosts), scenario.run.seed);
        let sockets = Sockets::of_scenario(network, net, scenario.run.seed, (0..n).map(|w| (w + 1, 0)));
        let capacity = (farm.implementation == Implementation::V1).then_some(farm.event_queue_events as usize);
        let seed = scenario.run.seed;
        let total = scenario.run.warmup_events + scenario.run.events;
        FarmWorld {
            q: EventQueue::new(),
            net: sockets,
            sfc: Dispatcher::new(farm.dispatch, n, capacity),
            workers: (0..n).map(|w| Worker::new(WorkerId(w), &farm, seed)).collect(),
            sent: vec![0; n as usize],
            taken: vec![0; n as usize],
            pushed_at: Default::default(),
            generated: 0,
            total,
            tally: FarmTally::new(n, scenario.run.warmup_events, total, opts.record_events),
            source: EventSource::of(&farm).expect("a valid scenario's source reads"),
            farm,
            opts,
        }
    }

    /// Every worker connects at time 0; the generator starts.
    fn start(&mut self) {
        for w in 0..self.workers.len() as u32 {
            self.workers[w as usize].on_connected();
            self.drain_worker(WorkerId(w));
            if self.farm.dispatch != Dispatch::Tokens {
                self.sfc.on_writable(WorkerId(w));
            }
        }
        match self.source.due(EventId(0)) {
            Some(at) => self.q.schedule(at, Ev::App(FarmEv::Generate)),
            None => self.feed(),
        }
        self.drain_sfc();
    }

    fn stop_flag(&self) -> Option<&'a AtomicBool> {
        self.opts.stop
    }

    fn report(self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput {
        let simulated = self.q.now();
        let busy: Vec<Nanos> = self.workers.iter().map(Worker::busy_ns).collect();
        let built = self.tally.built();
        let (mut report, events) =
            self.tally.report(("sim", origin, scenario), &self.farm, self.sfc.stats(), &busy, simulated);
        self.net.add_to_report(&mut report, &self.q, built, wall_s);
        SimOutput { report, events }
    }
}

impl<'a> FarmWorld<'a> {
    fn conn(w: WorkerId) -> ConnId {
        ConnId(w.0)
    }

    fn handle_message(&mut self, c: ConnId, msg: Msg) {
        let now = self.q.now();
        let w = WorkerId(c.0);
        match msg {
            Msg::Event { event, bytes } => {
                self.workers[w.index()].on_event(now, event, bytes);
                self.drain_worker(w);
            }
            Msg::Token(t) => {
                // A protocol error is counted by the dispatcher; the run goes on.
                let _ = self.sfc.on_token(now, t);
                self.feed();
                self.drain_sfc();
            }
        }
    }

    /// An event at its own time: offered now, the next one scheduled; a full queue loses it.
    fn generate(&mut self) {
        if let Err(FarmError::QueueFull { event, .. }) = self.offer_event() {
            self.tally.on_lost(event);
        }
        if self.generated < self.total {
            let at = self.source.due(EventId(self.generated)).expect("a scheduled source times every event");
            self.q.schedule(at.max(self.q.now()), Ev::App(FarmEv::Generate));
        }
        self.drain_sfc();
    }

    /// Offers events while the SFC wants them (a back-pressured generator, or an event made
    /// when a worker can take it), unless events come at their own times.
    fn feed(&mut self) {
        if !self.source.on_demand() {
            return;
        }
        while self.generated < self.total && self.sfc.wants_event() {
            self.offer_event().expect("the dispatcher wants it");
        }
    }

    fn offer_event(&mut self) -> Result<(), FarmError> {
        let now = self.q.now();
        let event = EventId(self.generated);
        self.generated += 1;
        self.tally.on_arrival(now, event, (self.sfc.queued_events(), self.sfc.queued_tokens()));
        if self.farm.dispatch == Dispatch::Push {
            self.pushed_at.insert(event, now);
        }
        self.sfc.on_event(now, event, self.source.bytes(event))
    }

    fn drain_sfc(&mut self) {
        let now = self.q.now();
        while let Some(out) = self.sfc.poll() {
            match out {
                DispatcherOutput::Send { worker, event, bytes } => {
                    self.sent[worker.index()] += bytes;
                    self.net.send(&mut self.q, Self::conn(worker), End::Acceptor, bytes, Msg::Event { event, bytes });
                    self.maybe_writable(worker);
                }
                DispatcherOutput::Verdict { worker, verdict, queued } => {
                    self.on_done(worker, verdict.event, queued, now);
                }
            }
            self.feed();
        }
    }

    fn drain_worker(&mut self, w: WorkerId) {
        let now = self.q.now();
        while let Some(out) = self.workers[w.index()].poll() {
            match out {
                WorkerOutput::Token(t) => {
                    let bytes = t.wire_bytes(self.farm.token_bytes);
                    self.net.send(&mut self.q, Self::conn(w), End::Opener, bytes, Msg::Token(t));
                }
                WorkerOutput::WakeAt(t) => self.q.schedule(t, Ev::App(FarmEv::WorkerWake(w))),
                WorkerOutput::Started { bytes, .. } => {
                    self.taken[w.index()] += bytes;
                    self.maybe_writable(w);
                    self.feed();
                    self.drain_sfc();
                }
                WorkerOutput::Processed { verdict, .. } => {
                    if let Some(queued) = self.pushed_at.remove(&verdict.event) {
                        self.on_done(w, verdict.event, queued, now);
                    }
                }
            }
        }
    }

    /// Under `round_robin` and `push`, tells the SFC when worker `w`'s connection takes more.
    fn maybe_writable(&mut self, w: WorkerId) {
        if self.farm.dispatch != Dispatch::Tokens && self.sent[w.index()] - self.taken[w.index()] < self.farm.pipe_bytes
        {
            self.sfc.on_writable(w);
        }
    }

    fn on_done(&mut self, w: WorkerId, event: EventId, queued: Nanos, now: Nanos) {
        self.tally.on_done(w, event, self.source.bytes(event), queued, now);
        self.opts.on_built(self.tally.built(), self.total);
    }
}
