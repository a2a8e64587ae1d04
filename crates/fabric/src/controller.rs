//! The fabric controller as a state machine (sans-IO, like the dataflows of `daqnet-core`): told
//! that an element went down (a switch's OpenFlow port status), it waits its reaction time —
//! the port status reaching it, the re-plan, the flow-mods reaching the switches — then re-plans
//! ([`repair`]) and says which flows move where. It reads no clock and touches no switch: the
//! simulator drives it in simulated time, the testbed with real port events and `ovs-ofctl`.

pub use crate::assign::Moves;
use crate::assign::{place, repair, Element, Failures, Placement};
use crate::links::Links;
use crate::shape::Shape;
use crate::PlanError;
use daqnet_core::scenario::Assignment;
use daqnet_core::Nanos;

/// An element to take down during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// What fails.
    pub element: Element,
    /// When, in ns from the start of the run (simulated, or wall-clock in the testbed).
    pub at_ns: Nanos,
}

impl std::str::FromStr for FaultPlan {
    type Err = String;

    /// `ELEMENT@TIME`: `plane1@50ms`, `p0-spine1@20ms`, `p0-leaf2:spine1@1.5s`.
    fn from_str(s: &str) -> Result<FaultPlan, String> {
        let (e, t) = s.split_once('@').ok_or_else(|| format!("`{s}`: expected ELEMENT@TIME, e.g. p0-spine1@20ms"))?;
        let element = e.trim().parse()?;
        let t = humantime::parse_duration(t.trim()).map_err(|e| format!("`{t}`: {e}; e.g. 20ms or 1.5s"))?;
        Ok(FaultPlan { element, at_ns: t.as_nanos() as u64 })
    }
}

impl FaultPlan {
    /// Checks that `faults` can happen in `scenario`: the event builder of a parallel
    /// leaf-spine, and every element one of its fabric's.
    pub fn check_all(scenario: &daqnet_core::Scenario, faults: &[FaultPlan]) -> Result<(), String> {
        if faults.is_empty() {
            return Ok(());
        }
        let shape =
            crate::shape::Shape::of(scenario).map_err(|e| format!("a fault takes down a fabric element, but {e}"))?;
        Failures(faults.iter().map(|f| f.element).collect()).check(&shape).map_err(|e| e.to_string())?;
        if scenario.farm.is_some() || scenario.pipe.is_some() {
            return Err("fabric faults work on the event builder of [system], not on a [farm] or [pipe]".into());
        }
        Ok(())
    }
}

/// The controller of one fabric.
#[derive(Debug, Clone)]
pub struct Controller {
    links: Links,
    failures: Failures,
    placement: Placement,
    reaction_ns: Nanos,
    due: Option<Nanos>,
}

impl Controller {
    /// A controller that has placed every flow of `shape` by `assignment` and reacts to a
    /// failure `reaction_ns` after it is reported.
    pub fn new(shape: &Shape, assignment: Assignment, reaction_ns: Nanos) -> Result<Controller, PlanError> {
        let placement = place(&Links::new(shape), &Failures::default(), assignment)?;
        Ok(Controller::with_placement(shape, placement, reaction_ns))
    }

    /// A controller whose flows are already placed (by [`place`] on `shape` with nothing down).
    pub fn with_placement(shape: &Shape, placement: Placement, reaction_ns: Nanos) -> Controller {
        Controller { links: Links::new(shape), failures: Failures::default(), placement, reaction_ns, due: None }
    }

    /// Where every flow goes now.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The elements known to be down.
    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    /// A switch reported `element` down at `now`. Reports that arrive before the re-plan is due
    /// join it: one re-plan answers a burst of port events (a spine's failure is seen by every
    /// leaf).
    pub fn on_down(&mut self, now: Nanos, element: Element) {
        if !self.failures.0.contains(&element) {
            self.failures.0.push(element);
        }
        self.due.get_or_insert(now + self.reaction_ns);
    }

    /// When [`Controller::poll`] has something to do.
    pub fn poll_timeout(&self) -> Option<Nanos> {
        self.due
    }

    /// At or after [`Controller::poll_timeout`]: the re-plan — the flows that move — or why no
    /// route is left. `None` when nothing is due.
    pub fn poll(&mut self, now: Nanos) -> Option<Result<Moves, PlanError>> {
        if self.due? > now {
            return None;
        }
        self.due = None;
        Some(repair(&self.links, &self.failures, &self.placement).map(|(next, moved)| {
            self.placement = next;
            moved
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assign::path;
    use crate::links::tests::shape;
    use crate::shape::{Plane, Pod, Spine};
    use proptest::prelude::*;

    fn element() -> impl Strategy<Value = Element> {
        prop_oneof![
            (0..2u32, 0..2u32).prop_map(|(p, s)| Element::Spine(Plane(p), Spine(s))),
            (0..2u32, 0..3u32, 0..2u32).prop_map(|(p, pod, s)| Element::LeafUplink(Plane(p), Pod(pod), Spine(s))),
        ]
    }

    proptest! {
        /// Whatever fails, in whatever order: nothing moves before the reaction time; then no
        /// flow crosses a failed element, and a flow that did not cross one has not moved.
        #[test]
        fn a_replan_moves_exactly_the_broken_flows(down in proptest::collection::vec((element(), 0..5u64), 1..4)) {
            for assignment in Assignment::ALL {
                let s = shape();
                let mut c = Controller::new(&s, assignment, 10).unwrap();
                let mut now = 0;
                for (e, gap) in &down {
                    now += gap;
                    let before = c.placement().clone();
                    c.on_down(now, *e);
                    let wake = c.poll_timeout().unwrap();
                    prop_assert!(wake <= now + 10);
                    prop_assert!(c.poll(wake - 1).is_none());
                    let Some(result) = c.poll(wake) else { continue };
                    let Ok(moved) = result else { continue };
                    now = wake;
                    for (r, n, route) in c.placement().flows() {
                        prop_assert!(path(&s, r, n, route).all(|l| c.failures().up(l)), "{r} → {n} crosses a failed element");
                        let old = before.route(r, n);
                        let was_broken = path(&s, r, n, old).any(|l| !c.failures().up(l));
                        prop_assert_eq!(was_broken, moved.iter().any(|&(mr, mn, _)| (mr, mn) == (r, n)));
                        if !was_broken {
                            prop_assert_eq!(old, route);
                        }
                    }
                }
            }
        }
    }
}
