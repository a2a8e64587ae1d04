//! daqnet-fabric: planning a parallel leaf-spine DAQ network ([LOSSLESS] §V: Jereczek, Lehmann
//! Miotto, Malone, Walukiewicz, "A Lossless Network for Data Acquisition", IEEE Trans. Nucl.
//! Sci., 2017).
//!
//! - [`formula`]: the paper's bandwidth formulas (1)–(4);
//! - [`assign`]: where each readout unit → collector flow goes — the controller's per-collector
//!   (plane, spine) assignment, or ECMP hashing — with failed elements avoided;
//! - [`maxmin`]: max-min fair (water-filling) rates for any assignment, where the closed formulas
//!   no longer apply (partial uplinks, failures, uneven spreads);
//! - [`network`]: any `[network]` (star, two-tier, parallel leaf-spine) lowered once into
//!   hosts, switches, ports, forwarding and paths, which every substrate builds from;
//! - [`plan()`]: all of it for one scenario, as `daqnet plan` prints it;
//! - [`controller`]: the controller as a state machine that re-plans when elements fail;
//! - [`rules`]: OpenFlow rules per switch, checked for loops and black holes before they are
//!   written.
//!
//! Everything here is pure computation: no I/O, no clock.

pub mod assign;
pub mod controller;
pub mod formula;
pub mod links;
pub mod maxmin;
pub mod network;
mod plan;
pub mod rules;
pub mod shape;

pub use assign::{Element, Failures, Route};
pub use plan::{plan, report_stats, CollectorRoute, LinkLoad, Outcome, Plan, TierLoad};

/// Why a fabric cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The scenario has another topology.
    #[error("network.topology is \"{0}\"; daqnet plan plans topology = \"parallel_leaf_spine\" ([network.fabric])")]
    NotAFabric(&'static str),
    /// A failure names an element the fabric does not have.
    #[error("{0} is not in this fabric (check network.fabric.planes, spines_per_plane and pods)")]
    NoSuchElement(String),
    /// A flow has no route left.
    #[error("no route from readout unit {readout} to node {node}: every plane and spine between them is down")]
    Unroutable {
        /// Readout unit.
        readout: u32,
        /// Node.
        node: u32,
    },
    /// Generated rules would not deliver a packet (a bug in the rule generator, refused).
    #[error("the rules would not deliver {packet}: {problem}")]
    BadRules {
        /// The packet followed.
        packet: String,
        /// A loop, a black hole or a wrong destination, with the switches crossed.
        problem: String,
    },
}
