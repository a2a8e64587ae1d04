//! Max-min fair rates by progressive filling (water-filling): every rate rises together until a
//! link fills or a demand is met; what crosses a full link, or has what it asked for, stops; the
//! rest keep rising. The result is the one allocation where no rate can grow without shrinking a
//! smaller one (Bertsekas and Gallager, *Data Networks*, §6.5.2).
//!
//! A *group* is what shares one rate: a single flow, or a collector whose flows must all move at
//! the same speed because every event needs a fragment from every readout unit. A group puts
//! `weight × rate` on each of its links.

/// Something that shares one rate: its load on each link per unit of rate, and how much it wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// (link index, load per unit of the group's rate); a link may appear once.
    pub links: Vec<(usize, f64)>,
    /// The most the group takes, in the unit of the capacities; `f64::INFINITY`: as much as the
    /// network gives.
    pub demand: f64,
}

/// Relative slack under which a link counts as full (floating-point sums of many shares).
const FULL: f64 = 1e-9;

/// The max-min fair rate of every group on links of the given capacities.
pub fn max_min(capacity: &[f64], groups: &[Group]) -> Vec<f64> {
    let mut rate = vec![0.0; groups.len()];
    let mut left = capacity.to_vec();
    let mut active: Vec<usize> = (0..groups.len()).filter(|&g| groups[g].demand > 0.0).collect();
    // Every round freezes at least one group (on the link that filled, or whose demand was met),
    // so there are at most as many rounds as groups.
    while !active.is_empty() {
        let mut weight = vec![0.0; capacity.len()];
        for &g in &active {
            for &(l, w) in &groups[g].links {
                weight[l] += w;
            }
        }
        let to_fill = (0..capacity.len()).filter(|&l| weight[l] > 0.0).map(|l| left[l].max(0.0) / weight[l]);
        let to_demand = active.iter().map(|&g| groups[g].demand - rate[g]);
        let step = to_fill.chain(to_demand).fold(f64::INFINITY, f64::min);
        assert!(step.is_finite(), "a group with unbounded demand crosses no link");
        for &g in &active {
            rate[g] += step;
        }
        for l in 0..capacity.len() {
            left[l] -= step * weight[l];
        }
        let full = |l: usize| weight[l] > 0.0 && left[l] <= FULL * capacity[l];
        active.retain(|&g| rate[g] < groups[g].demand * (1.0 - FULL) && !groups[g].links.iter().any(|&(l, _)| full(l)));
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(links: &[usize]) -> Group {
        Group { links: links.iter().map(|&l| (l, 1.0)).collect(), demand: f64::INFINITY }
    }

    #[test]
    fn the_textbook_case() {
        // Link 0 (capacity 1) carries flows A, B; link 1 (capacity 2) carries B, C. Fair share:
        // A = B = 0.5 on link 0; C takes the rest of link 1, 1.5.
        let r = max_min(&[1.0, 2.0], &[group(&[0]), group(&[0, 1]), group(&[1])]);
        assert_eq!(r, vec![0.5, 0.5, 1.5]);
    }

    #[test]
    fn a_demand_caps_a_flow_and_frees_the_rest() {
        // Three flows on one link of 9; one wants only 1: the others share 8.
        let mut g = vec![group(&[0]), group(&[0]), group(&[0])];
        g[0].demand = 1.0;
        assert_eq!(max_min(&[9.0], &g), vec![1.0, 4.0, 4.0]);
    }

    #[test]
    fn weights_scale_a_groups_load() {
        // A collector with 4 flows on link 0 (each a quarter of its rate) and one flow alone.
        let collector = Group { links: vec![(0, 1.0)], demand: f64::INFINITY };
        let r = max_min(&[10.0, 10.0], &[collector, Group { links: vec![(0, 0.25), (1, 1.0)], demand: f64::INFINITY }]);
        // Both rise together until link 0 holds 1.25·x = 10: x = 8.
        assert_eq!(r, vec![8.0, 8.0]);
    }
}
