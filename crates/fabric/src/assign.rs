//! Placing flows on planes and spines: the controller's per-collector assignment of [LOSSLESS]
//! §V-B, and ECMP hashing as the baseline. A flow is one readout unit → node (collector)
//! connection; its route is a plane and, when it leaves its pod, a spine.

use crate::links::{Link, Links};
use crate::shape::{Plane, Pod, Shape, Spine};
use crate::PlanError;
use daqnet_core::ids::{ConnId, Layout, NodeId, ReadoutId};
use daqnet_core::scenario::Assignment;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The way of one flow through the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Route {
    /// The plane it crosses.
    pub plane: Plane,
    /// The spine it crosses; `None` within a pod (leaf → rack directly).
    pub spine: Option<Spine>,
}

/// A fabric element that can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    /// A whole plane (`plane1`).
    Plane(Plane),
    /// A spine switch (`p1-spine0`).
    Spine(Plane, Spine),
    /// The link between a pod's leaf and a spine, both ways (`p1-leaf2:spine0`).
    LeafUplink(Plane, Pod, Spine),
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Element::Plane(p) => write!(f, "plane{}", p.0),
            Element::Spine(p, s) => write!(f, "p{}-spine{}", p.0, s.0),
            Element::LeafUplink(p, pod, s) => write!(f, "p{}-leaf{}:spine{}", p.0, pod.0, s.0),
        }
    }
}

impl FromStr for Element {
    type Err = String;

    fn from_str(text: &str) -> Result<Element, String> {
        let bad =
            || format!("\"{text}\" names no fabric element; use plane<P>, p<P>-spine<S> or p<P>-leaf<POD>:spine<S>");
        let num = |s: &str, prefix: &str| s.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok());
        if let Some(p) = num(text, "plane") {
            return Ok(Element::Plane(Plane(p)));
        }
        let (plane, rest) = text.strip_prefix('p').and_then(|t| t.split_once('-')).ok_or_else(bad)?;
        let plane = Plane(plane.parse().map_err(|_| bad())?);
        if let Some(s) = num(rest, "spine") {
            return Ok(Element::Spine(plane, Spine(s)));
        }
        let (leaf, spine) = rest.split_once(':').ok_or_else(bad)?;
        match (num(leaf, "leaf"), num(spine, "spine")) {
            (Some(pod), Some(s)) => Ok(Element::LeafUplink(plane, Pod(pod), Spine(s))),
            _ => Err(bad()),
        }
    }
}

/// The elements that are down.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failures(pub Vec<Element>);

impl Failures {
    /// Checks that every element exists in `shape`.
    pub fn check(&self, shape: &Shape) -> Result<(), PlanError> {
        for &e in &self.0 {
            let (p, s, pod) = match e {
                Element::Plane(p) => (p, Spine(0), Pod(0)),
                Element::Spine(p, s) => (p, s, Pod(0)),
                Element::LeafUplink(p, pod, s) => (p, s, pod),
            };
            if p.0 >= shape.planes || s.0 >= shape.spines || pod.0 >= shape.pods {
                return Err(PlanError::NoSuchElement(e.to_string()));
            }
        }
        Ok(())
    }

    /// Whether a link still carries traffic.
    pub fn up(&self, l: Link) -> bool {
        let (plane, spine_link) = match l {
            Link::ReadoutUp(_, p) | Link::RackDown(p, _) => (p, None),
            Link::SpineUp(p, pod, s) | Link::SpineDown(p, s, pod) => (p, Some((pod, s))),
            Link::NodeDown(_) => return true,
        };
        !self.0.iter().any(|&e| match e {
            Element::Plane(p) => p == plane,
            Element::Spine(p, s) => p == plane && spine_link.is_some_and(|(_, sl)| sl == s),
            Element::LeafUplink(p, pod, s) => p == plane && spine_link == Some((pod, s)),
        })
    }
}

/// Flows that move: (readout unit, node, new route).
pub type Moves = Vec<(ReadoutId, NodeId, Route)>;

/// One collector's flows with their routes.
type Routed = Vec<(ReadoutId, Route)>;

/// Where every flow goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// How the routes were chosen.
    pub assignment: Assignment,
    layout: Layout,
    routes: Vec<Route>,
}

impl Placement {
    /// The route of the flow from `r` to `n`.
    pub fn route(&self, r: ReadoutId, n: NodeId) -> Route {
        self.routes[self.layout.conn(n, r).index()]
    }

    /// Every flow with its route.
    pub fn flows(&self) -> impl Iterator<Item = (ReadoutId, NodeId, Route)> + '_ {
        self.routes.iter().enumerate().map(|(c, &route)| {
            let (n, r) = self.layout.ends_of(ConnId(c as u32));
            (r, n, route)
        })
    }

    /// The flow layout (readout units × nodes).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// The links a flow from `r` to `n` crosses on `route`, in order.
pub fn path(shape: &Shape, r: ReadoutId, n: NodeId, route: Route) -> impl Iterator<Item = Link> {
    let (from, to) = (shape.pod_of_readout(r), shape.pod_of_node(n));
    let p = route.plane;
    let spine = route.spine.filter(|_| from != to);
    [
        Some(Link::ReadoutUp(r, p)),
        spine.map(|s| Link::SpineUp(p, from, s)),
        spine.map(|s| Link::SpineDown(p, s, to)),
        Some(Link::RackDown(p, shape.rack_of(n))),
        Some(Link::NodeDown(n)),
    ]
    .into_iter()
    .flatten()
}

/// The routes a flow may take: planes both ends reach and that are up; spines whose links from
/// the source pod and to the destination pod are both up (none within a pod).
fn candidates(links: &Links, failures: &Failures, r: ReadoutId, n: NodeId) -> Vec<Route> {
    let s = links.shape();
    let (from, to) = (s.pod_of_readout(r), s.pod_of_node(n));
    let usable = |route: Route| path(s, r, n, route).all(|l| links.exists(l) && failures.up(l));
    let mut v = Vec::new();
    for plane in s.all_planes() {
        if from == to {
            v.extend(Some(Route { plane, spine: None }).filter(|&rt| usable(rt)));
        } else {
            v.extend(s.all_spines().map(|sp| Route { plane, spine: Some(sp) }).filter(|&rt| usable(rt)));
        }
    }
    v
}

/// Places every flow by `assignment`, avoiding `failures`.
pub fn place(links: &Links, failures: &Failures, assignment: Assignment) -> Result<Placement, PlanError> {
    failures.check(links.shape())?;
    match assignment {
        Assignment::Controller => controller(links, failures),
        Assignment::Ecmp => ecmp(links, failures),
    }
}

fn layout(s: &Shape) -> Layout {
    Layout::new(s.readout_units(), s.nodes(), 1)
}

fn unroutable(r: ReadoutId, n: NodeId) -> PlanError {
    PlanError::Unroutable { readout: r.0, node: n.0 }
}

/// [LOSSLESS] §V-B: one plane and one spine for all flows of a collector, collectors spread so
/// the traffic is equally distributed — "an example of the water-filling algorithm". Collectors
/// are taken one at a time, one of each rack in turn (so a rack's collectors land on different
/// paths), and each gets the (plane, spine) that leaves the most-loaded link of its flows least
/// loaded (relative to capacity), ties to the lower total, then the lower plane and spine. A
/// flow its collector's choice cannot carry (a readout unit without that plane, a failed spine
/// link) takes its own least-loaded route: where the closed formulas no longer apply.
///
/// Whole collectors are lumpy where the sizes do not divide (3 collectors of a rack on 2 planes
/// put 2 on one rack uplink; 14 collectors of a pod on 4 spines put 4 behind one spine link), and
/// then hashing single flows can crowd the busiest link less. So [`balance`] then moves single
/// flows off the busiest links while that lowers them: a collector is split only where its
/// fabric cannot be evenly loaded otherwise.
fn controller(links: &Links, failures: &Failures) -> Result<Placement, PlanError> {
    let s = links.shape();
    let mut load = vec![0.0f64; links.len()];
    let mut routes = vec![None; (s.readout_units() * s.nodes()) as usize];
    let layout = layout(s);
    let order = (0..s.nodes_per_rack).flat_map(|k| (0..s.racks()).map(move |rack| NodeId(rack * s.nodes_per_rack + k)));
    let readouts: Vec<ReadoutId> = (0..s.readout_units()).map(ReadoutId).collect();
    for n in order {
        for (r, route) in place_collector(links, failures, &load, n, &readouts)? {
            add(links, &mut load, r, n, route);
            routes[layout.conn(n, r).index()] = Some(route);
        }
    }
    let mut routes: Vec<Route> = routes.into_iter().map(|r| r.expect("every node placed")).collect();
    balance(links, failures, &layout, &mut routes, &mut load);
    Ok(Placement { assignment: Assignment::Controller, layout, routes })
}

/// The controller's routes for collector `n`'s flows from `readouts`, given the load so far:
/// the (plane, spine) that leaves the most-loaded link of these flows least loaded.
fn place_collector(
    links: &Links,
    failures: &Failures,
    load: &[f64],
    n: NodeId,
    readouts: &[ReadoutId],
) -> Result<Routed, PlanError> {
    let s = links.shape();
    let per_readout: Vec<Vec<Route>> = readouts.iter().map(|&r| candidates(links, failures, r, n)).collect();
    if let Some(i) = per_readout.iter().position(Vec::is_empty) {
        return Err(unroutable(readouts[i], n));
    }
    let choices = s.all_planes().flat_map(|plane| s.all_spines().map(move |sp| Route { plane, spine: Some(sp) }));
    let mut best: Option<((f64, f64), Routed)> = None;
    for choice in choices {
        let mut trial = load.to_vec();
        let mut picked = Vec::with_capacity(readouts.len());
        for (&r, cands) in readouts.iter().zip(&per_readout) {
            let wanted = Route { spine: choice.spine.filter(|_| s.pod_of_readout(r) != s.pod_of_node(n)), ..choice };
            let route = if cands.contains(&wanted) { wanted } else { least_loaded(links, &trial, r, n, cands) };
            add(links, &mut trial, r, n, route);
            picked.push((r, route));
        }
        let cost = cost(links, &trial, n, &picked);
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, picked));
        }
    }
    Ok(best.expect("a fabric has at least one plane and spine").1)
}

/// Re-plans after `failures`: the flows whose route crosses a failed element move — by the
/// controller, a broken collector's flows together on the least-loaded (plane, spine) left; by
/// ECMP, each rehashed over the routes left — and every other flow stays where it is, so traffic
/// that was not hit is not disturbed. Returns the new placement and the flows that moved.
pub fn repair(links: &Links, failures: &Failures, placement: &Placement) -> Result<(Placement, Moves), PlanError> {
    failures.check(links.shape())?;
    let s = links.shape();
    let broken = |r: ReadoutId, n: NodeId, route: Route| path(s, r, n, route).any(|l| !failures.up(l));
    let mut load = vec![0.0f64; links.len()];
    let mut hit: Vec<Vec<ReadoutId>> = vec![Vec::new(); s.nodes() as usize];
    for (r, n, route) in placement.flows() {
        if broken(r, n, route) {
            hit[n.index()].push(r);
        } else {
            add(links, &mut load, r, n, route);
        }
    }
    let mut next = placement.clone();
    let mut moved = Vec::new();
    for (n, readouts) in hit.iter().enumerate().filter(|(_, v)| !v.is_empty()) {
        let n = NodeId(n as u32);
        let routes: Routed = match placement.assignment {
            Assignment::Controller => place_collector(links, failures, &load, n, readouts)?,
            Assignment::Ecmp => readouts
                .iter()
                .map(|&r| {
                    let cands = candidates(links, failures, r, n);
                    let h = flow_hash(r.0, n.0) % cands.len().max(1) as u64;
                    cands.get(h as usize).map(|&route| (r, route)).ok_or_else(|| unroutable(r, n))
                })
                .collect::<Result<_, _>>()?,
        };
        for (r, route) in routes {
            add(links, &mut load, r, n, route);
            next.routes[next.layout.conn(n, r).index()] = route;
            moved.push((r, n, route));
        }
    }
    Ok((next, moved))
}

/// Moves single flows off the most loaded links (relative to capacity) while a move lowers such
/// a link without raising any other to its level. Each move lowers the number of links at the
/// top level or the level itself, so it ends; the bound on moves is a guard.
fn balance(links: &Links, failures: &Failures, layout: &Layout, routes: &mut [Route], load: &mut [f64]) {
    let s = links.shape();
    let id = |l: Link| links.id(l).0 as usize;
    let share = |l: Link| 1.0 / links.capacity_bps(l) as f64;
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); links.len()];
    for (c, &route) in routes.iter().enumerate() {
        let (n, r) = layout.ends_of(ConnId(c as u32));
        for l in path(s, r, n, route) {
            on[id(l)].push(c as u32);
        }
    }
    for _ in 0..routes.len() {
        let top = load.iter().copied().fold(0.0f64, f64::max);
        let at_top = (0..load.len()).filter(|&l| load[l] >= top * (1.0 - 1e-9));
        let mut found = None;
        'search: for l in at_top {
            for &c in &on[l] {
                let (n, r) = layout.ends_of(ConnId(c));
                let now: Vec<Link> = path(s, r, n, routes[c as usize]).collect();
                for q in candidates(links, failures, r, n) {
                    let fits = path(s, r, n, q)
                        .filter(|x| !now.contains(x))
                        .all(|x| load[id(x)] + share(x) < top * (1.0 - 1e-9));
                    if q != routes[c as usize] && fits {
                        found = Some((c, now, q));
                        break 'search;
                    }
                }
            }
        }
        let Some((c, now, q)) = found else { return };
        let (n, r) = layout.ends_of(ConnId(c));
        for l in now {
            load[id(l)] -= share(l);
            on[id(l)].retain(|&x| x != c);
        }
        for l in path(s, r, n, q) {
            load[id(l)] += share(l);
            on[id(l)].push(c);
        }
        routes[c as usize] = q;
    }
}

/// Adds one flow's share (one flow per link, relative to the link's capacity) to `load`.
fn add(links: &Links, load: &mut [f64], r: ReadoutId, n: NodeId, route: Route) {
    for l in path(links.shape(), r, n, route) {
        load[links.id(l).0 as usize] += 1.0 / links.capacity_bps(l) as f64;
    }
}

/// (most-loaded link, total load) over the links of a node's flows.
fn cost(links: &Links, load: &[f64], n: NodeId, routes: &[(ReadoutId, Route)]) -> (f64, f64) {
    let mut max = 0.0f64;
    let mut sum = 0.0;
    for &(r, route) in routes {
        for l in path(links.shape(), r, n, route) {
            let v = load[links.id(l).0 as usize];
            max = max.max(v);
            sum += v;
        }
    }
    (max, sum)
}

fn least_loaded(links: &Links, load: &[f64], r: ReadoutId, n: NodeId, cands: &[Route]) -> Route {
    let worst = |route: Route| {
        path(links.shape(), r, n, route)
            .map(|l| load[links.id(l).0 as usize] + 1.0 / links.capacity_bps(l) as f64)
            .fold(0.0f64, f64::max)
    };
    *cands.iter().min_by(|a, b| worst(**a).total_cmp(&worst(**b))).expect("candidates are not empty")
}

/// Equal-cost multipath: each flow hashed onto one of its routes, as a switch hashes a TCP
/// connection's addresses and ports, without regard to load.
fn ecmp(links: &Links, failures: &Failures) -> Result<Placement, PlanError> {
    let s = links.shape();
    let layout = layout(s);
    let mut routes = Vec::with_capacity(layout.conns() as usize);
    for c in 0..layout.conns() {
        let (n, r) = layout.ends_of(ConnId(c));
        let cands = candidates(links, failures, r, n);
        if cands.is_empty() {
            return Err(unroutable(r, n));
        }
        let h = flow_hash(r.0, n.0);
        routes.push(cands[(h % cands.len() as u64) as usize]);
    }
    Ok(Placement { assignment: Assignment::Ecmp, layout, routes })
}

/// A 64-bit mix (SplitMix64's finaliser) of the flow's ends: what a switch's ECMP hash does with
/// a connection's 5-tuple. Fixed, like a switch's hash function: not drawn from the run's seed.
fn flow_hash(r: u32, n: u32) -> u64 {
    let mut z = ((r as u64) << 32 | n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_parse_and_print_alike() {
        for text in ["plane1", "p0-spine3", "p1-leaf2:spine0"] {
            assert_eq!(text.parse::<Element>().unwrap().to_string(), text);
        }
        for bad in ["plane", "p1-spine", "p1-leaf2", "spine0", "p1-leaf:spine0", "px-spine0"] {
            assert!(bad.parse::<Element>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_failed_spine_takes_its_links_down_and_nothing_else() {
        let f = Failures(vec![Element::Spine(Plane(1), Spine(0))]);
        assert!(!f.up(Link::SpineUp(Plane(1), Pod(2), Spine(0))));
        assert!(!f.up(Link::SpineDown(Plane(1), Spine(0), Pod(0))));
        assert!(f.up(Link::SpineUp(Plane(1), Pod(2), Spine(1))));
        assert!(f.up(Link::SpineUp(Plane(0), Pod(2), Spine(0))));
        assert!(f.up(Link::ReadoutUp(ReadoutId(0), Plane(1))));
        let leaf = Failures(vec![Element::LeafUplink(Plane(0), Pod(1), Spine(1))]);
        assert!(
            !leaf.up(Link::SpineUp(Plane(0), Pod(1), Spine(1)))
                && !leaf.up(Link::SpineDown(Plane(0), Spine(1), Pod(1)))
        );
        assert!(leaf.up(Link::SpineDown(Plane(0), Spine(1), Pod(0))));
        let plane = Failures(vec![Element::Plane(Plane(0))]);
        assert!(!plane.up(Link::RackDown(Plane(0), crate::shape::Rack(3))) && plane.up(Link::NodeDown(NodeId(0))));
    }
}
