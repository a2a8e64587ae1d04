//! A plan: the formulas, then for each assignment where every flow goes, the max-min fair rates
//! that follow, and how loaded every link and tier is.

use crate::assign::{self, path, Failures, Placement, Route};
use crate::formula::Formulas;
use crate::links::{LinkId, Links, Tier};
use crate::maxmin::{max_min, Group};
use crate::shape::Shape;
use crate::PlanError;
use daqnet_core::ids::{NodeId, ReadoutId};
use daqnet_core::scenario::{Assignment, Scenario};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything `daqnet plan` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The fabric.
    pub shape: Shape,
    /// Elements taken down before planning (`plane1`, `p0-spine1`, `p0-leaf2:spine0`).
    pub failed: Vec<String>,
    /// Formulas (1)–(4).
    pub formulas: Formulas,
    /// One outcome per assignment asked for.
    pub outcomes: Vec<Outcome>,
}

/// Where one assignment puts the flows and what rates follow, in bit/s of link capacity.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// `controller` or `ecmp`.
    pub assignment: &'static str,
    /// Event building with each collector's flows at one rate (every event needs every readout
    /// unit's fragment), collectors max-min fair: the sum of the collectors' rates.
    pub building_bps: f64,
    /// Event building with every collector at the slowest one's rate (events dealt out in turn,
    /// as a round-robin supervisor does): nodes × slowest.
    pub equal_rate_bps: f64,
    /// The slowest and fastest collector under `building_bps`.
    pub collector_bps: (f64, f64),
    /// Every flow on its own, max-min fair: what the links could carry if flows were independent.
    pub independent_flows_bps: f64,
    /// Load per tier under `building_bps`.
    pub tiers: Vec<TierLoad>,
    /// Every link with flows, under `building_bps`.
    pub links: Vec<LinkLoad>,
    /// The route of each collector: one (plane, spine) for all its flows between pods, or
    /// `mixed` when they differ.
    pub collectors: Vec<CollectorRoute>,
    /// Every flow's route, for rule generation (not serialised: `collectors` says it shortly).
    #[serde(skip)]
    pub placement: Placement,
}

/// Load of one tier's links.
#[derive(Debug, Clone, Serialize)]
pub struct TierLoad {
    /// The tier.
    pub tier: Tier,
    /// Links of the tier that are up.
    pub links: usize,
    /// Flows on the least and the most crowded link, and the mean.
    pub flows_min: u32,
    /// Flows on the most crowded link.
    pub flows_max: u32,
    /// Mean flows per link.
    pub flows_mean: f64,
    /// Utilisation of the busiest link (0–1).
    pub load_max: f64,
    /// Mean utilisation.
    pub load_mean: f64,
}

/// One link's flows and load.
#[derive(Debug, Clone, Serialize)]
pub struct LinkLoad {
    /// `ru3->p0-leaf1`.
    pub name: String,
    /// Its tier.
    pub tier: Tier,
    /// Flows crossing it.
    pub flows: u32,
    /// Capacity, bit/s.
    pub capacity_bps: u64,
    /// Carried under `building_bps`, bit/s.
    pub load_bps: f64,
}

/// One collector's route and rate.
#[derive(Debug, Clone, Serialize)]
pub struct CollectorRoute {
    /// Node number.
    pub node: u32,
    /// `p1-spine0`, `p0` (all flows within the pod), or `mixed`.
    pub route: String,
    /// Its rate under `building_bps`.
    pub rate_bps: f64,
}

/// Plans the fabric of `sc` (valid, `topology = "parallel_leaf_spine"`) with `failures` down,
/// for each of `assignments`.
pub fn plan(sc: &Scenario, failures: &Failures, assignments: &[Assignment]) -> Result<Plan, PlanError> {
    let shape = Shape::of(sc)?;
    let links = Links::new(&shape);
    let outcomes = assignments
        .iter()
        .map(|&a| assign::place(&links, failures, a).map(|p| outcome(&links, failures, p)))
        .collect::<Result<_, _>>()?;
    Ok(Plan {
        formulas: Formulas::of(&shape),
        failed: failures.0.iter().map(ToString::to_string).collect(),
        shape,
        outcomes,
    })
}

fn outcome(links: &Links, failures: &Failures, placement: Placement) -> Outcome {
    let s = links.shape();
    let capacity: Vec<f64> = links.all().map(|(_, l)| links.capacity_bps(l) as f64).collect();
    let readouts = s.readout_units() as f64;
    let collector_groups: Vec<Group> = (0..s.nodes())
        .map(|n| {
            let mut per_link: BTreeMap<usize, f64> = BTreeMap::new();
            for r in 0..s.readout_units() {
                let (r, n) = (ReadoutId(r), NodeId(n));
                for l in path(s, r, n, placement.route(r, n)) {
                    *per_link.entry(links.id(l).0 as usize).or_default() += 1.0 / readouts;
                }
            }
            Group { links: per_link.into_iter().collect(), demand: f64::INFINITY }
        })
        .collect();
    let collector = max_min(&capacity, &collector_groups);
    let flow_groups: Vec<Group> = placement
        .flows()
        .map(|(r, n, route)| Group {
            links: path(s, r, n, route).map(|l| (links.id(l).0 as usize, 1.0)).collect(),
            demand: f64::INFINITY,
        })
        .collect();
    let independent = max_min(&capacity, &flow_groups);

    let mut flows = vec![0u32; links.len()];
    for &(l, _) in flow_groups.iter().flat_map(|g| &g.links) {
        flows[l] += 1;
    }
    let mut carried = vec![0.0f64; links.len()];
    for (g, rate) in collector_groups.iter().zip(&collector) {
        for &(l, w) in &g.links {
            carried[l] += w * rate;
        }
    }
    let live: Vec<(LinkId, crate::links::Link)> =
        links.all().filter(|&(_, l)| links.exists(l) && failures.up(l)).collect();
    let tiers = Tier::ALL
        .iter()
        .filter_map(|&tier| {
            let of: Vec<usize> = live.iter().filter(|(_, l)| l.tier() == tier).map(|(id, _)| id.0 as usize).collect();
            (!of.is_empty()).then(|| {
                let load = |i: usize| carried[i] / capacity[i];
                TierLoad {
                    tier,
                    links: of.len(),
                    flows_min: of.iter().map(|&i| flows[i]).min().unwrap_or(0),
                    flows_max: of.iter().map(|&i| flows[i]).max().unwrap_or(0),
                    flows_mean: of.iter().map(|&i| flows[i] as f64).sum::<f64>() / of.len() as f64,
                    load_max: of.iter().map(|&i| load(i)).fold(0.0, f64::max),
                    load_mean: of.iter().map(|&i| load(i)).sum::<f64>() / of.len() as f64,
                }
            })
        })
        .collect();
    let link_loads = live
        .iter()
        .filter(|(id, _)| flows[id.0 as usize] > 0)
        .map(|&(id, l)| LinkLoad {
            name: links.name(l),
            tier: l.tier(),
            flows: flows[id.0 as usize],
            capacity_bps: links.capacity_bps(l),
            load_bps: carried[id.0 as usize],
        })
        .collect();
    let slowest = collector.iter().copied().fold(f64::INFINITY, f64::min);
    Outcome {
        assignment: placement.assignment.name(),
        building_bps: collector.iter().sum(),
        equal_rate_bps: slowest * s.nodes() as f64,
        collector_bps: (slowest, collector.iter().copied().fold(0.0, f64::max)),
        independent_flows_bps: independent.iter().sum(),
        tiers,
        links: link_loads,
        collectors: (0..s.nodes())
            .map(|n| CollectorRoute {
                node: n,
                route: collector_route(s, &placement, NodeId(n)),
                rate_bps: collector[n as usize],
            })
            .collect(),
        placement,
    }
}

/// The one route all of a collector's flows between pods take, or `mixed`.
fn collector_route(s: &Shape, p: &Placement, n: NodeId) -> String {
    let mut routes = (0..s.readout_units()).map(|r| p.route(ReadoutId(r), n)).filter(|r| r.spine.is_some());
    let first: Option<Route> = routes.next();
    match first {
        Some(f) if routes.all(|r| r == f) => format!("p{}-spine{}", f.plane.0, f.spine.expect("filtered").0),
        Some(_) => "mixed".into(),
        None => {
            let mut planes = (0..s.readout_units()).map(|r| p.route(ReadoutId(r), n).plane);
            let first = planes.next().expect("at least one readout unit");
            if planes.all(|q| q == first) {
                format!("p{}", first.0)
            } else {
                "mixed".into()
            }
        }
    }
}

/// What a parallel leaf-spine scenario's plan promises, as its run report states it beside the
/// goodput (with nothing down); `None` for other topologies.
pub fn report_stats(sc: &Scenario) -> Option<daqnet_core::report::FabricStats> {
    let assignment = sc.network.fabric.as_ref()?.assignment;
    let p = plan(sc, &Failures::default(), &[assignment]).ok()?;
    let share = sc.network.payload_share();
    Some(daqnet_core::report::FabricStats {
        assignment: assignment.name().into(),
        bound_goodput_bps: p.formulas.bound_bps * share,
        planned_goodput_bps: p.outcomes[0].building_bps * share,
        faults: Vec::new(),
        spine_check: None,
    })
}
