//! Fabric failures during a simulation: an element of a parallel leaf-spine goes down at a set
//! time; the fabric controller (`daqnet-fabric`'s state machine, the one the testbed drives)
//! hears of it, re-plans after its reaction time, and the connections it moves take their new
//! paths. What each failure cost is recorded for the report.

use crate::sockets::Sockets;
use daqnet_core::report::FabricFault;
use daqnet_core::{Layout, Nanos, Scenario, NS_PER_S};
use daqnet_fabric::assign::Placement;
use daqnet_fabric::controller::Controller;
pub use daqnet_fabric::controller::FaultPlan;
use daqnet_fabric::shape::Shape;

/// The faults of one run, the controller, and what happened.
pub(crate) struct Faults {
    controller: Controller,
    plans: Vec<FaultPlan>,
    records: Vec<FabricFault>,
    /// Failure and reroute time of each fault so far (reroute `Nanos::MAX` until done).
    times: Vec<(Nanos, Nanos)>,
    /// The ports each fault took down.
    ports: Vec<Vec<u32>>,
    layout: Layout,
}

impl Faults {
    /// The faults of `scenario` (a parallel leaf-spine whose flows the fabric placed as
    /// `placement`), or `None` when there are none.
    pub fn new(scenario: &Scenario, placement: Option<&Placement>, plans: &[FaultPlan]) -> Option<Faults> {
        let f = scenario.network.fabric.as_ref().filter(|_| !plans.is_empty())?;
        let shape = Shape::of(scenario).expect("a valid parallel leaf-spine");
        let placement = placement.expect("a parallel leaf-spine's fabric places its flows").clone();
        let controller = Controller::with_placement(&shape, placement, f.reaction_ns);
        Some(Faults {
            controller,
            records: plans
                .iter()
                .map(|p| FabricFault {
                    element: p.element.to_string(),
                    at_s: p.at_ns as f64 / NS_PER_S as f64,
                    ..Default::default()
                })
                .collect(),
            times: vec![(Nanos::MAX, Nanos::MAX); plans.len()],
            ports: vec![Vec::new(); plans.len()],
            plans: plans.to_vec(),
            layout: scenario.layout(),
        })
    }

    /// (time, fault index) of every failure to schedule.
    pub fn schedule(&self) -> impl Iterator<Item = (Nanos, usize)> + '_ {
        self.plans.iter().enumerate().map(|(i, p)| (p.at_ns, i))
    }

    /// Fault `i` happens now: its links go down and the controller hears of it. Returns when
    /// the controller wants to be polled.
    pub fn on_down<M: Copy>(&mut self, now: Nanos, i: usize, net: &mut Sockets<M>) -> Nanos {
        let element = self.plans[i].element;
        self.ports[i] = net.network().plan.element_ports(&element).into_iter().map(|p| p.0).collect();
        net.take_down(&self.ports[i]);
        self.times[i].0 = now;
        self.controller.on_down(now, element);
        self.controller.poll_timeout().expect("a re-plan is due after a failure")
    }

    /// The controller's re-plan, if due: the moved connections take their new paths.
    pub fn on_wake<M: Copy>(&mut self, now: Nanos, net: &mut Sockets<M>) {
        let Some(result) = self.controller.poll(now) else { return };
        let pending = (0..self.plans.len()).filter(|&i| self.times[i].0 <= now && self.times[i].1 == Nanos::MAX);
        let pending: Vec<usize> = pending.collect();
        match result {
            Ok(moves) => {
                for &(r, n, route) in &moves {
                    let path = net.network().plan.path_of(route);
                    net.set_path(self.layout.conn(n, r), path);
                }
                for &i in &pending {
                    self.times[i].1 = now;
                    self.records[i].rerouted_s = Some(now as f64 / NS_PER_S as f64);
                    self.records[i].flows_moved = moves.len() as u64;
                }
            }
            Err(e) => {
                for &i in &pending {
                    self.records[i].error = Some(e.to_string());
                }
            }
        }
    }

    /// An event assigned at `assigned` was built at `done`.
    pub fn on_built(&mut self, assigned: Nanos, done: Nanos) {
        for (i, &(down, rerouted)) in self.times.iter().enumerate() {
            if done >= down && assigned < rerouted {
                let r = self.records[i].cost.get_or_insert_with(Default::default);
                r.events_hit += 1;
                r.slowest_hit_ms = r.slowest_hit_ms.max((done - assigned) as f64 / 1e6);
                r.recovered_after_ms = r.recovered_after_ms.max((done - down) as f64 / 1e6);
            }
        }
    }

    /// The records, with the frames each failure lost.
    pub fn finish<M: Copy>(mut self, net: &Sockets<M>) -> Vec<FabricFault> {
        for (r, ports) in self.records.iter_mut().zip(&self.ports) {
            r.frames_lost = ports.iter().map(|&p| net.network().ports[p as usize].lost_down).sum();
            r.cost.get_or_insert_with(Default::default);
        }
        self.records
    }
}
