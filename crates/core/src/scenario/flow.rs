//! `[network.flow_control]`: link-level flow control (IEEE 802.3x pause frames, 802.1Qbb
//! priority flow control) on every link, and the headroom a link needs to be lossless.

use super::{BufferConfig, Network, SwitchConfig, SwitchKind, Topology};
use crate::units::de_bytes;
use serde::{Deserialize, Deserializer, Serialize};

/// Bytes a pause frame takes on the wire: a minimum frame (64) with preamble and gap (20).
pub const PAUSE_FRAME_WIRE_BYTES: u64 = 84;

/// How a link's receiver stops its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowControlMode {
    /// IEEE 802.3x: a pause frame stops the whole link.
    Pause,
    /// IEEE 802.1Qbb priority flow control: a pause frame stops one priority of the link;
    /// frames of the other priorities pass (each output port keeps a queue per priority and
    /// serves the highest first).
    Pfc,
    /// InfiniBand-like credits: a link's receiver advertises its buffer for the link as
    /// credits; the sender sends a frame only against credits and gets them back when the
    /// receiver has passed the frame on (one cable delay later). Lossless by construction: no
    /// XOFF, no headroom.
    Credit,
}

impl FlowControlMode {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FlowControlMode::Pause => "pause",
            FlowControlMode::Pfc => "pfc",
            FlowControlMode::Credit => "credit",
        }
    }
}

/// `[network.flow_control]` (simulator): every link's receiver — a switch, or an edge host's NIC
/// (`[network.edge]`) — counts the bytes it holds of the frames each link brought in (per
/// priority with PFC). Above XOFF it sends a pause frame back over the link; the sender
/// finishes the frame it is sending and sends nothing more (of that priority) until the pause
/// expires or an XON (a pause of zero quanta) arrives at or below XON. A pause lasts
/// `pause_quanta` × 512 bit times and is refreshed at half that while the receiver is above
/// XON. Hosts can be paused; they never pause a switch (their stacks keep up). With flow
/// control the switch buffers are accounted by the port a frame came in through (its buffer:
/// `port_bytes`, or `port_cap_bytes` of a shared pool, or a daqring switch's `queue_bytes`), not
/// by the port it leaves through: XOFF is that buffer less the headroom, and a frame that finds
/// no room even in the headroom is dropped and counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowControl {
    /// `"pause"` (802.3x, the whole link), `"pfc"` (802.1Qbb, per priority) or `"credit"`
    /// (InfiniBand-like credits).
    pub mode: FlowControlMode,
    /// Bytes a receiver keeps above XOFF for what arrives after it decides to pause: by default
    /// derived per link ([`headroom_bytes`]); a value below a link's derived one is refused.
    #[serde(default, deserialize_with = "some_bytes", skip_serializing_if = "Option::is_none")]
    pub headroom_bytes: Option<u64>,
    /// XON is this far below XOFF, in bytes (default: two full frames), so that a link is not
    /// paused and resumed frame by frame.
    #[serde(default, deserialize_with = "some_bytes", skip_serializing_if = "Option::is_none")]
    pub xon_gap_bytes: Option<u64>,
    /// Length of each pause, in quanta of 512 bit times at the link's rate (1 to 65535; default
    /// 65535: 3.36 ms at 10 Gb/s).
    #[serde(default = "default_quanta")]
    pub pause_quanta: u16,
    /// `"pfc"`: the priority (0–7) of the dataflow's connections (default 3, the usual lossless
    /// class). The event manager's and supervisor's control messages are off the data network
    /// in the simulator, as on their own priority.
    #[serde(default = "default_data_priority")]
    pub data_priority: u8,
}

fn default_quanta() -> u16 {
    u16::MAX
}

fn default_data_priority() -> u8 {
    3
}

fn some_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_bytes(d).map(Some)
}

impl FlowControl {
    /// XON's distance below XOFF on a network whose full frames take `wire_frame_bytes`.
    pub fn xon_gap(&self, wire_frame_bytes: u64) -> u64 {
        self.xon_gap_bytes.unwrap_or(2 * wire_frame_bytes)
    }

    /// The headroom a link of `rate_bps` with `propagation_ns` of cable needs: what it gives, or
    /// the derived value.
    pub fn headroom(&self, rate_bps: u64, propagation_ns: u64, wire_frame_bytes: u64) -> u64 {
        match self.mode {
            FlowControlMode::Credit => 0,
            _ => self.headroom_bytes.unwrap_or_else(|| headroom_bytes(rate_bps, propagation_ns, wire_frame_bytes)),
        }
    }
}

/// The headroom a receiver needs above XOFF on a link of `rate_bps` whose cable takes
/// `propagation_ns` each way, with full frames of `wire_frame_bytes` on the wire (F), so that
/// nothing the sender sends before the pause takes effect is dropped. After the frame that
/// crosses XOFF has arrived (up to F of it above XOFF):
/// - the pause frame waits for the frame the receiver is sending the other way (F at the
///   rate), then takes its own 84 bytes' time;
/// - it crosses the cable (propagation), while the sender keeps sending;
/// - the sender finishes the frame it has started (F), and what is on the cable then arrives
///   (propagation).
///
/// In all 2 × propagation × rate + 3 F + 84 bytes, rounded up (wire bytes: a conservative bound
/// of the frame bytes a buffer holds).
pub fn headroom_bytes(rate_bps: u64, propagation_ns: u64, wire_frame_bytes: u64) -> u64 {
    let cable = (2 * propagation_ns as u128 * rate_bps as u128).div_ceil(8_000_000_000) as u64;
    cable + 3 * wire_frame_bytes + PAUSE_FRAME_WIRE_BYTES
}

/// A buffer a flow-controlled port receives into: the field that sets it, the bytes one port
/// may hold, and the fastest link such a port serves.
#[derive(Debug, Clone, PartialEq)]
pub struct IngressBuffer {
    /// The scenario field (`network.switch.buffer.port_bytes`).
    pub field: String,
    /// Bytes of one port's ingress.
    pub bytes: u64,
    /// The fastest link into such a port, bit/s.
    pub fastest_bps: u64,
}

/// The ingress buffers of `net`'s switches and edge NICs, each with the fastest link it serves.
pub fn ingress_buffers(net: &Network) -> Vec<IngressBuffer> {
    let hosts = net.readout_link_bps.max(net.node_link_bps);
    let mut out = Vec::new();
    let mut push = |section: &str, sw_buffer: (&str, u64), fastest_bps: u64| {
        out.push(IngressBuffer { field: format!("{section}.{}", sw_buffer.0), bytes: sw_buffer.1, fastest_bps });
    };
    match net.topology {
        Topology::Star => {
            if let Some(sw) = &net.switch {
                push("network.switch", switch_buffer(sw), hosts);
            }
        }
        Topology::TwoTier => {
            let (ro, rack) = (net.readout_switch.as_ref(), net.rack_switch.as_ref());
            if let Some(ro) = ro {
                push("network.readout_switch", buffer(&ro.buffer), net.readout_link_bps.max(ro.uplink_bps));
            }
            if let Some(rack) = rack {
                push("network.rack_switch", buffer(&rack.buffer), net.node_link_bps.max(rack.uplink_bps));
            }
            if let Some(core) = &net.core {
                let up = ro.map_or(0, |r| r.uplink_bps).max(rack.map_or(0, |r| r.uplink_bps));
                push("network.core", buffer(&core.buffer), up);
            }
        }
        Topology::ParallelLeafSpine => {
            if let Some(f) = &net.fabric {
                let leaf = net.readout_link_bps.max(f.rack_uplink_bps).max(f.spine_link_bps);
                push("network.fabric.leaf", switch_buffer(&f.leaf), leaf);
                push("network.fabric.spine", switch_buffer(&f.spine), f.spine_link_bps);
                push("network.fabric.rack", switch_buffer(&f.rack), net.node_link_bps.max(f.rack_uplink_bps));
            }
        }
    }
    if let Some(edge) = &net.edge {
        let rack = net.fabric.as_ref().map_or(0, |f| f.rack_uplink_bps);
        out.push(IngressBuffer {
            field: "network.edge.nic_buffer_bytes".into(),
            bytes: edge.nic_buffer_bytes,
            fastest_bps: hosts.max(rack),
        });
    }
    out
}

/// The field and bytes of one port's buffer of a switch configured as `sw`.
fn switch_buffer(sw: &SwitchConfig) -> (&'static str, u64) {
    match sw.kind {
        SwitchKind::Bridge => buffer(&sw.buffer),
        SwitchKind::Daqring => ("daqring.queue_bytes", sw.daqring.queue_bytes),
    }
}

/// The field and bytes of one port's share of `b`.
fn buffer(b: &BufferConfig) -> (&'static str, u64) {
    match *b {
        BufferConfig::Dedicated { port_bytes } | BufferConfig::Deep { port_bytes } => ("buffer.port_bytes", port_bytes),
        BufferConfig::Shared { pool_bytes, port_cap_bytes, .. } => {
            ("buffer.port_cap_bytes", port_cap_bytes.min(pool_bytes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_is_two_cable_delays_at_line_rate_three_frames_and_a_pause_frame() {
        // 10 Gb/s, 1 µs of cable: 2 × 1250 bytes on the cable, 3 × 1538 + 84.
        assert_eq!(headroom_bytes(10_000_000_000, 1000, 1538), 2500 + 4614 + 84);
        // A cable too short to hold a byte still needs the frames.
        assert_eq!(headroom_bytes(1_000_000_000, 0, 1538), 4614 + 84);
        // Rounded up: 2 × 1 ns at 1 Gb/s is a quarter byte.
        assert_eq!(headroom_bytes(1_000_000_000, 1, 1538), 1 + 4614 + 84);
    }
}
