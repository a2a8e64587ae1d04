//! The bandwidth formulas (1)–(4) of [LOSSLESS] §V-B for a parallel leaf-spine fabric whose
//! collectors are spread evenly over planes and spines. A *flow* here is the paper's ROS-to-HLT
//! flow: everything one readout unit sends to one rack through one plane.
//!
//! ```text
//! (1)  B_DAQ = n_p · n_H · n_R · B_RH
//! (2)  B_RH  = min(b / n_R, b / n_H, B_RH,interpod)
//! (3)  B_RH,interpod = b · n_S / (n_R,pod · n_H,pod · (n_pod − 1))
//! (4)  n_R = n_R,pod · n_pod,   n_H = n_H,pod · n_pod
//! ```
//!
//! The paper has one link rate `b`; here each term takes the rate of its own tier (`b / n_R`
//! the leaf → rack link, shared by the flows of every readout unit; `b / n_H` a readout unit's
//! uplink, shared by its flows to every rack; (3) the leaf ↔ spine links), so that equal rates
//! give the paper's numbers. One limit the paper leaves out is added: the nodes' own links
//! (`nodes × node rate`), which bound the total when racks hold few nodes.

use crate::links::Tier;
use crate::shape::Shape;
use serde::Serialize;

/// The formulas' terms and result, in bit/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Formulas {
    /// (4): readout units in all.
    pub n_r: u32,
    /// (4): racks in all.
    pub n_h: u32,
    /// `b / n_R`: a flow's share of a leaf → rack link.
    pub rack_link_share_bps: f64,
    /// `b / n_H`: a flow's share of a readout unit's uplink.
    pub readout_link_share_bps: f64,
    /// (3): a flow's share of the leaf ↔ spine links; `None` with one pod (no flow leaves it).
    pub interpod_bps: Option<f64>,
    /// (2): the bandwidth of one flow.
    pub flow_bps: f64,
    /// (1): the DAQ bandwidth of the fabric.
    pub daq_bps: f64,
    /// The tier whose term is the smallest in (2).
    pub bottleneck: Tier,
    /// The nodes' links in all: a bound (1) does not include.
    pub node_links_bps: f64,
    /// min((1), node links): what event building can reach on this fabric.
    pub bound_bps: f64,
    /// Whether the formulas' assumption holds: every readout unit and rack on every plane (the
    /// paper's "all the nodes are symmetrically connected to every plane").
    pub symmetric: bool,
}

impl Formulas {
    /// The formulas for `shape`.
    pub fn of(s: &Shape) -> Formulas {
        let n_r = s.readout_units();
        let n_h = s.racks();
        let rack_link_share_bps = s.rack_uplink_bps as f64 / n_r as f64;
        let readout_link_share_bps = s.readout_bps as f64 / n_h as f64;
        let interpod_bps = (s.pods > 1).then(|| {
            s.spine_bps as f64 * s.spines as f64
                / (s.readout_per_pod as f64 * s.racks_per_pod as f64 * (s.pods - 1) as f64)
        });
        let terms = [
            (readout_link_share_bps, Tier::ReadoutUplink),
            (rack_link_share_bps, Tier::LeafToRack),
            (interpod_bps.unwrap_or(f64::INFINITY), Tier::LeafToSpine),
        ];
        let (flow_bps, bottleneck) =
            terms.into_iter().fold((f64::INFINITY, Tier::ReadoutUplink), |best, t| if t.0 < best.0 { t } else { best });
        let daq_bps = s.planes as f64 * n_h as f64 * n_r as f64 * flow_bps;
        let node_links_bps = s.nodes() as f64 * s.node_bps as f64;
        let (bound_bps, bottleneck) =
            if node_links_bps < daq_bps { (node_links_bps, Tier::RackToNode) } else { (daq_bps, bottleneck) };
        Formulas {
            n_r,
            n_h,
            rack_link_share_bps,
            readout_link_share_bps,
            interpod_bps,
            flow_bps,
            daq_bps,
            bottleneck,
            node_links_bps,
            bound_bps,
            symmetric: s.readout_uplinks == s.planes && s.rack_uplinks == s.planes,
        }
    }
}
