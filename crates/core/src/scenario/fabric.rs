//! `[network.fabric]`: the parallel leaf-spine DAQ network of [LOSSLESS] §V-A (Jereczek et al.,
//! "A Lossless Network for Data Acquisition", IEEE TNS 2017): pods of readout units and HLT racks,
//! each pod with one leaf switch in every *plane*, each plane a leaf-spine network joining the
//! pods. Readout units and racks reach one or several planes; planes never meet.

use super::{SwitchConfig, SwitchKind};
use crate::units::{de_bps, de_ns};
use serde::{Deserialize, Serialize};

/// `[network.fabric]` (`topology = "parallel_leaf_spine"`).
///
/// Readout unit `r` is in pod `r / readout_per_pod`; node `n` is in rack `n / nodes_per_rack`,
/// rack `k` in pod `k / racks_per_pod`. Readout units connect straight to their pod's leaf in
/// each plane they reach (`network.readout_link_bps`); a rack is a top-of-rack switch joining its
/// nodes (`network.node_link_bps`) with an uplink to its pod's leaf in each plane it reaches
/// (`rack_uplink_bps`); every leaf has one link to every spine of its plane (`spine_link_bps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParallelLeafSpine {
    /// Pods (`n_pod` in [LOSSLESS] eq. (3)).
    pub pods: u32,
    /// Independent leaf-spine planes (`n_p`, eq. (1)).
    pub planes: u32,
    /// Spine switches in each plane (`n_S`, eq. (3)).
    pub spines_per_plane: u32,
    /// Readout units in each pod (`n_R_pod`); `pods × readout_per_pod` must equal
    /// `system.readout_units`.
    pub readout_per_pod: u32,
    /// HLT racks in each pod (`n_H_pod`).
    pub racks_per_pod: u32,
    /// Nodes (data collectors) in each rack; `pods × racks_per_pod × nodes_per_rack` must equal
    /// `system.nodes`.
    pub nodes_per_rack: u32,
    /// Planes each readout unit reaches (its uplinks). Default: every plane. With fewer, unit
    /// `r` reaches planes `r·u, r·u + 1, …` (mod `planes`), so the units share the planes evenly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readout_uplinks: Option<u32>,
    /// Planes each rack reaches (its top-of-rack switch's uplinks). Default: every plane.
    /// Staggered like `readout_uplinks`; every readout unit must share a plane with every rack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_uplinks: Option<u32>,
    /// Rate of each rack uplink (top-of-rack switch ↔ leaf), in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub rack_uplink_bps: u64,
    /// Rate of each leaf ↔ spine link, in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub spine_link_bps: u64,
    /// How flows are placed on planes and spines: `controller` ([LOSSLESS] §V-B: all flows of
    /// one collector on one plane and one spine, collectors spread evenly, as an SDN controller
    /// programs them) or `ecmp` (each flow hashed onto a plane and a spine, as equal-cost
    /// multipath routing does).
    #[serde(default)]
    pub assignment: Assignment,
    /// Time from an element failing to the controller's new rules in place on every switch
    /// (the port status reaching the controller, the re-plan, the flow-mods), in ns
    /// (default 10 ms).
    #[serde(default = "default_reaction_ns", deserialize_with = "de_ns")]
    pub reaction_ns: u64,
    /// The leaf switches (default: a bridge with 4 MB per port).
    #[serde(default = "super::Network::default_switch")]
    pub leaf: SwitchConfig,
    /// The spine switches (default: a bridge with 4 MB per port).
    #[serde(default = "super::Network::default_switch")]
    pub spine: SwitchConfig,
    /// The racks' top-of-rack switches (default: a bridge with 4 MB per port).
    #[serde(default = "super::Network::default_switch")]
    pub rack: SwitchConfig,
}

fn default_reaction_ns() -> u64 {
    10_000_000
}

/// How the flows of a parallel leaf-spine fabric are placed on planes and spines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Assignment {
    /// [LOSSLESS] §V-B: every flow of one collector on the same plane and spine, the collectors
    /// spread so that no link carries more than it must (a water-filling assignment).
    #[default]
    Controller,
    /// Each readout unit → collector flow hashed onto a plane and a spine (ECMP).
    Ecmp,
}

impl Assignment {
    /// Both assignments, the controller's first.
    pub const ALL: [Assignment; 2] = [Assignment::Controller, Assignment::Ecmp];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Assignment::Controller => "controller",
            Assignment::Ecmp => "ecmp",
        }
    }
}

impl ParallelLeafSpine {
    /// Planes each readout unit reaches.
    pub fn readout_planes(&self) -> u32 {
        self.readout_uplinks.unwrap_or(self.planes)
    }

    /// Planes each rack reaches.
    pub fn rack_planes(&self) -> u32 {
        self.rack_uplinks.unwrap_or(self.planes)
    }

    /// The switch tiers with their names as in the scenario (`leaf`, `spine`, `rack`).
    pub fn tiers(&self) -> [(&'static str, &SwitchConfig); 3] {
        [("leaf", &self.leaf), ("spine", &self.spine), ("rack", &self.rack)]
    }

    /// Whether any tier uses the lossless daqring switch.
    pub fn has_daqrings(&self) -> bool {
        self.tiers().iter().any(|(_, s)| s.kind == SwitchKind::Daqring)
    }
}
