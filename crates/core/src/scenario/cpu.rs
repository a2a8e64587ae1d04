//! `[network.host_cpu]`: hosts whose receive path is bound by their processors, not their links.

use crate::units::de_ns;
use serde::{Deserialize, Serialize};

/// `[network.host_cpu]` (simulator): every frame a host receives (data and acknowledgements)
/// waits in its NIC's receive ring until an interrupt hands it to a core, which spends
/// `per_frame_ns` plus `per_byte_ps` per frame byte on it (the protocol stack, the copy to the
/// application) before TCP sees it. The NIC interrupts `coalesce_ns` after the first frame it
/// holds, or as soon as it holds `coalesce_frames` (ethtool's `rx-usecs` and `rx-frames`);
/// each interrupt costs its core `interrupt_ns` before the frames it announces. A frame that
/// finds its core's ring full is dropped (the report's `host_cpu` drops). Each connection's
/// frames go to one core (`steering`). The bus in front of the NIC is `[network.edge]`'s.
///
/// The costs are what a receive path of [LHCB-SUBFARM] §1.1 consists of: a per-packet
/// overhead (headers, checksums when not offloaded), a per-byte one (copies), and a context
/// switch per interrupt; why jumbo frames (fewer frames per byte) and coalescing (fewer
/// interrupts per frame) raise what a host can take. The sending side's processing is not
/// modelled: a host sends at line rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostCpu {
    /// CPU time per received frame, whatever its size, in ns.
    #[serde(deserialize_with = "de_ns")]
    pub per_frame_ns: u64,
    /// CPU time per received frame byte (Ethernet header to FCS), in ps: 1000 is a core that
    /// moves 1 GB/s.
    pub per_byte_ps: u64,
    /// Cores that take received frames, each with its own receive ring (multi-queue NICs).
    pub cores: u32,
    /// Which core a connection's frames go to.
    pub steering: Steering,
    /// CPU time of one interrupt (the switch to the kernel and back), in ns.
    #[serde(deserialize_with = "de_ns")]
    pub interrupt_ns: u64,
    /// The NIC interrupts this long after the first frame it holds unannounced, in ns (0: at
    /// once).
    #[serde(deserialize_with = "de_ns")]
    pub coalesce_ns: u64,
    /// ... or as soon as it holds this many (at least 1).
    pub coalesce_frames: u32,
    /// Frames each core's receive ring holds, waiting for their interrupt or for the core.
    pub ring_frames: u32,
    /// Only these hosts, by name (`node0`, `ru3`, `sfc`). Empty (default): every host.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// How a host with several cores spreads connections over them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steering {
    /// By a hash of the connection, as receive-side scaling does: two connections may share a
    /// core while another idles.
    #[default]
    Hash,
    /// Each new connection to the next core in turn, as threads the scheduler spreads (one
    /// iperf thread per connection, [LHCB-DAQPIPE] Fig. 5).
    RoundRobin,
}

impl Default for HostCpu {
    fn default() -> Self {
        HostCpu {
            per_frame_ns: 0,
            per_byte_ps: 0,
            cores: 1,
            steering: Steering::Hash,
            interrupt_ns: 0,
            coalesce_ns: 0,
            coalesce_frames: 1,
            ring_frames: 256,
            hosts: Vec::new(),
        }
    }
}

impl HostCpu {
    /// CPU time a core spends on a frame of `frame_bytes` (header to FCS), in ps.
    pub fn frame_ps(&self, frame_bytes: u32) -> u64 {
        self.per_frame_ns * 1000 + self.per_byte_ps * frame_bytes as u64
    }
}
