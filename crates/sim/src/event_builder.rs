//! The ATLAS event builder simulated: `core`'s supervisor, nodes (collectors, credit pools,
//! processing units) and readout units driven over simulated TCP connections, links and
//! switches by the discrete-event engine, as `farm.rs` drives the sub-farm and `pipe.rs`
//! DAQPIPE.

use crate::engine::EventQueue;
use crate::faults::Faults;
use crate::main_loop::{self, Dataflow, World};
use crate::net::Network;
use crate::options::{SimOptions, SimOutput};
use crate::sockets::{End, Ev, SegmentDrop, Sockets};
use daqnet_core::dataflow::{
    startup_order, BuiltEvent, DataRequest, DataResponse, Node, NodeInput, NodeOutput, PuOutput, ReadoutUnit,
    Supervisor,
};
use daqnet_core::report::{EventRecord, Measure, NotBuilt, RunReport, Track};
use daqnet_core::scenario::StartupOrder;
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{ConnId, EventId, Layout, Nanos, NodeId, PuId, ReadoutId, Scenario, Side};
use daqnet_fabric::network::NetworkPlan;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;

#[derive(Debug, Clone, Copy)]
enum AppMsg {
    Request(DataRequest),
    Response(DataResponse),
}

/// The event builder's own events.
#[derive(Debug, Clone, Copy)]
enum AppEv {
    ReadoutWake {
        readout: ReadoutId,
    },
    PuWake {
        pu: PuId,
    },
    SupervisorWake,
    Ready {
        pu: PuId,
    },
    Assign {
        pu: PuId,
        event: EventId,
    },
    Done {
        event: EventId,
    },
    FabricDown {
        fault: usize,
    },
    ControllerWake,
    /// The oldest message between a collector and its own host's readout unit is delivered.
    Local,
}

struct EventBuilderWorld<'a> {
    q: EventQueue<Ev<AppEv>>,
    /// The connections: collector of node n (opener) to readout unit r (acceptor), numbered
    /// by [`Layout::conn`].
    net: Sockets<AppMsg>,
    layout: Layout,
    /// Readout unit `r` runs on node `r`'s host (`system.readout_on_nodes`).
    readout_on_nodes: bool,
    /// Messages between a collector and its own host's readout unit, in the order sent: they
    /// cross no link.
    local: VecDeque<(ConnId, AppMsg)>,
    request_bytes: u64,
    control_delay: Nanos,
    readouts: Vec<ReadoutUnit>,
    nodes: Vec<Node>,
    sup: Supervisor,
    /// Assignment time of every event assigned and not yet built.
    assigned: HashMap<EventId, Nanos>,
    measure: Measure,
    records: Vec<EventRecord>,
    warmup: u64,
    built: u64,
    total: u64,
    opts: SimOptions<'a>,
    seed: u64,
    startup: StartupOrder,
    faults: Option<Faults>,
}

/// Simulates `scenario` (already validated, defaults filled in). `origin` names it in the report.
pub fn simulate(scenario: &Scenario, origin: &str, opts: SimOptions) -> SimOutput {
    main_loop::simulate::<EventBuilderWorld>(scenario, origin, opts)
}

/// What a trace of `scenario` can select.
pub(crate) fn targets(scenario: &Scenario) -> crate::trace::Targets {
    main_loop::targets::<EventBuilderWorld>(scenario)
}

impl Dataflow for EventBuilderWorld<'_> {
    type Msg = AppMsg;
    type App = AppEv;

    fn parts(&mut self) -> (&mut Sockets<AppMsg>, &mut EventQueue<Ev<AppEv>>) {
        (&mut self.net, &mut self.q)
    }

    fn finished(&self) -> bool {
        self.built >= self.total
    }

    fn on_message(&mut self, c: ConnId, msg: AppMsg) {
        self.handle_message(c, msg);
    }

    fn on_app(&mut self, ev: AppEv) {
        self.on_app_event(ev);
    }
}

impl<'a> World<'a> for EventBuilderWorld<'a> {
    fn new(scenario: &Scenario, opts: SimOptions<'a>) -> Self {
        let sys = &scenario.system;
        let net = &scenario.network;
        let seed = scenario.run.seed;
        let total = scenario.run.warmup_events + scenario.run.events;
        let layout = scenario.layout();
        let plan = if sys.readout_on_nodes {
            NetworkPlan::of_hosts(net, scenario.host_names().into_iter().map(|h| (h, net.node_link_bps)).collect())
        } else {
            NetworkPlan::build(net, layout.readout_units(), layout.nodes())
        };
        let network = Network::new(plan, seed);
        // Readout unit r is host r; node n follows the readout units' hosts, or is host n.
        let first_node = if sys.readout_on_nodes { 0 } else { layout.readout_units() };
        // Node-major, as Layout::conn numbers them.
        let pairs = layout.all_nodes().flat_map(|n| layout.readouts().map(move |r| (first_node + n.0, r.0)));
        let mut sockets = Sockets::of_scenario(network, net, seed, pairs);
        let faults = Faults::new(scenario, sockets.network().plan.placement(), &opts.faults);
        let drops = opts.drops.iter().map(|d| SegmentDrop {
            conn: layout.conn(d.node, d.readout),
            end: End::Acceptor,
            index: d.data_segment,
        });
        sockets.drop_segments(drops.collect());
        let sizes = FragmentSizes::new(sys.fragment_size.clone(), seed, sys.fragments_per_unit);
        let (service, jitter) = (sys.readout_service_ns, sys.readout_service_jitter_ns);
        EventBuilderWorld {
            q: EventQueue::new(),
            net: sockets,
            layout,
            readout_on_nodes: sys.readout_on_nodes,
            local: VecDeque::new(),
            request_bytes: sys.request_bytes as u64,
            control_delay: sys.supervisor.control_delay_ns,
            readouts: layout.readouts().map(|r| ReadoutUnit::new(r, sizes.clone(), service, jitter, seed)).collect(),
            nodes: layout.all_nodes().map(|n| Node::new(&layout, n, sys, seed)).collect(),
            sup: Supervisor::new(&layout, sys.supervisor.policy, sys.supervisor.rate_hz, total, seed),
            assigned: HashMap::new(),
            measure: Measure::new(scenario.run.warmup_events),
            records: Vec::new(),
            warmup: scenario.run.warmup_events,
            built: 0,
            total,
            faults,
            opts,
            seed,
            startup: sys.supervisor.startup,
        }
    }

    fn start(&mut self) {
        self.sup.start(0);
        if let Some(t) = self.sup.poll_timeout() {
            self.q.schedule(t, Ev::App(AppEv::SupervisorWake));
        }
        // Every unit starts waiting for work; the supervisor hears of them after the control delay.
        for pu in startup_order(self.seed, self.layout.total_pus(), self.startup) {
            self.q.schedule(self.control_delay, Ev::App(AppEv::Ready { pu }));
        }
        for (at, fault) in self.faults.iter().flat_map(Faults::schedule) {
            self.q.schedule(at, Ev::App(AppEv::FabricDown { fault }));
        }
    }

    fn stop_flag(&self) -> Option<&'a AtomicBool> {
        self.opts.stop
    }

    fn report(mut self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput {
        let measured = self.measure.finish();
        let built = measured.events_built;
        let mut report = RunReport::measured("sim", origin, scenario, measured);
        report.events_not_built = NotBuilt { timed_out: 0, lost: 0, abandoned: scenario.run.events - built };
        self.net.add_to_report(&mut report, &self.q, self.built, wall_s);
        if let Some(f) = self.faults.take() {
            report.fabric =
                Some(daqnet_core::report::FabricStats { faults: f.finish(&self.net), ..Default::default() });
        }
        self.records.sort_unstable_by_key(|r| r.event);
        SimOutput { report, events: self.records }
    }
}

impl<'a> EventBuilderWorld<'a> {
    fn on_app_event(&mut self, ev: AppEv) {
        match ev {
            AppEv::ReadoutWake { readout } => self.drain_readout(readout),
            AppEv::PuWake { pu } => self.feed_node(self.layout.node_of(pu), NodeInput::Wake(pu)),
            AppEv::SupervisorWake => {
                let now = self.q.now();
                self.sup.on_timeout(now);
                self.drain_supervisor();
                if let Some(t) = self.sup.poll_timeout() {
                    self.q.schedule(t.max(now), Ev::App(AppEv::SupervisorWake));
                }
            }
            AppEv::Ready { pu } => {
                self.sup.on_ready(pu);
                self.drain_supervisor();
            }
            AppEv::Assign { pu, event } => self.feed_node(self.layout.node_of(pu), NodeInput::Assign { pu, event }),
            AppEv::Done { event } => self.sup.on_done(event),
            AppEv::FabricDown { fault } => {
                let faults = self.faults.as_mut().expect("scheduled by start");
                let wake = faults.on_down(self.q.now(), fault, &mut self.net);
                self.q.schedule(wake, Ev::App(AppEv::ControllerWake));
            }
            AppEv::ControllerWake => {
                let now = self.q.now();
                self.faults.as_mut().expect("scheduled by a failure").on_wake(now, &mut self.net);
            }
            AppEv::Local => {
                let (c, msg) = self.local.pop_front().expect("a local delivery was scheduled for it");
                self.handle_message(c, msg);
            }
        }
    }

    fn drain_supervisor(&mut self) {
        let now = self.q.now();
        while let Some(a) = self.sup.poll_assignment() {
            self.assigned.insert(a.event, now);
            self.q.schedule(now + self.control_delay, Ev::App(AppEv::Assign { pu: a.pu, event: a.event }));
        }
    }

    /// Feeds `input` to `node` and carries out what it asks.
    fn feed_node(&mut self, node: NodeId, input: NodeInput) {
        let now = self.q.now();
        if let Err(e) = self.nodes[node.index()].handle(now, input) {
            panic!("simulator bookkeeping error at node {node}: {e}");
        }
        while let Some(out) = self.nodes[node.index()].poll() {
            match out {
                NodeOutput::Request { readout, request } => {
                    let c = self.layout.conn(node, readout);
                    self.send_msg(c, Side::Collector, self.request_bytes, AppMsg::Request(request));
                }
                NodeOutput::Built(b) => self.on_built(node, b),
                NodeOutput::Unit(pu, PuOutput::WakeAt(at)) => self.q.schedule(at, Ev::App(AppEv::PuWake { pu })),
                NodeOutput::Unit(_, PuOutput::Done(event)) => {
                    self.q.schedule(now + self.control_delay, Ev::App(AppEv::Done { event }))
                }
                NodeOutput::Unit(pu, PuOutput::AskForWork) => {
                    self.q.schedule(now + self.control_delay, Ev::App(AppEv::Ready { pu }))
                }
            }
        }
    }

    fn on_built(&mut self, node: NodeId, b: BuiltEvent) {
        let assigned = self.assigned.remove(&b.event).expect("a built event was assigned");
        let (started, done, latency, bytes) = (b.started, b.done, b.latency, b.bytes);
        let track = Track { event: b.event, pu: b.pu, node, assigned, started, done, latency, bytes };
        self.measure.record(&track);
        if let Some(f) = self.faults.as_mut() {
            f.on_built(assigned, b.done);
        }
        if self.opts.record_events {
            self.records.push(track.record(self.warmup));
        }
        self.built += 1;
        self.opts.on_built(self.built, self.total);
    }

    fn drain_readout(&mut self, readout: ReadoutId) {
        let now = self.q.now();
        while let Some(resp) = self.readouts[readout.index()].poll_response(now) {
            let c = self.layout.conn(resp.node, readout);
            self.send_msg(c, Side::Readout, resp.bytes, AppMsg::Response(resp));
        }
    }

    fn handle_message(&mut self, c: ConnId, msg: AppMsg) {
        let now = self.q.now();
        match msg {
            AppMsg::Request(req) => {
                let (_, r) = self.layout.ends_of(c);
                let due = self.readouts[r.index()].on_request(now, req);
                if due == now {
                    self.drain_readout(r);
                } else {
                    self.q.schedule(due, Ev::App(AppEv::ReadoutWake { readout: r }));
                }
            }
            AppMsg::Response(resp) => self.feed_node(resp.node, NodeInput::Response(resp)),
        }
    }

    /// Connection `c` joins a collector and its own host's readout unit.
    fn on_one_host(&self, c: ConnId) -> bool {
        let (n, r) = self.layout.ends_of(c);
        n.0 == r.0
    }

    fn send_msg(&mut self, c: ConnId, side: Side, bytes: u64, msg: AppMsg) {
        if self.readout_on_nodes && self.on_one_host(c) {
            self.local.push_back((c, msg));
            self.q.schedule(self.q.now(), Ev::App(AppEv::Local));
            return;
        }
        self.net.send(&mut self.q, c, side.into(), bytes, msg);
    }
}
