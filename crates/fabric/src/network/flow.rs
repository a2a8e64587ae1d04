//! Flow control in the plan (`[network.flow_control]`): which ports a receiver can pause, over
//! which port its pause frames travel back, its thresholds; and the check for cyclic buffer
//! dependencies, the deadlock risk of a lossless network.

use super::{NetworkPlan, PoolId, PortBuffer, PortId, SwitchRole, Vertex};
use daqnet_core::scenario::{FlowControl, FlowControlMode, Network};
use std::collections::HashSet;

/// The flow control of a plan: how links pause, for how long, and on which priority the
/// dataflow's frames travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowPlan {
    /// 802.3x (the whole link) or PFC (per priority).
    pub mode: FlowControlMode,
    /// Length of a pause, in quanta of 512 bit times.
    pub quanta: u16,
    /// The priority of the dataflow's frames (0 under 802.3x, where there is one class).
    pub data_priority: u8,
}

/// How the receiver of a port's frames pauses it: the port's frames are held at the receiver,
/// counted against `limit_bytes`; above `xoff_bytes` a pause goes back through `back`, and at or
/// below `xon_bytes` the pause is lifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PausePlan {
    /// The port on the far end of the link, back towards this port's sender: it carries the
    /// pause frames.
    pub back: PortId,
    /// Cable delay of the link, each way, in ns.
    pub propagation_ns: u64,
    /// The receiver's port whose buffer holds these frames and whose drops count those that do
    /// not fit: `back` on a switch, the NIC's buffer on an edge host.
    pub held_at: PortId,
    /// The shared pool that buffer draws from, if any.
    pub pool: Option<PoolId>,
    /// Bytes the receiver may hold of this port's frames (per priority): XOFF plus headroom.
    pub limit_bytes: u64,
    /// Above this, the receiver pauses the port.
    pub xoff_bytes: u64,
    /// At or below this, a paused port is resumed.
    pub xon_bytes: u64,
    /// The headroom above XOFF: given, or derived for the link.
    pub headroom_bytes: u64,
}

impl NetworkPlan {
    /// Whether frames sent through `p` reach a hop inside the same switch (a daqring), so that
    /// they still occupy the switch's memory for the port they came in through.
    pub fn stays_in_switch(&self, p: PortId) -> bool {
        match self.port(p).to {
            Vertex::Switch(s) => self.switch(s).role == SwitchRole::Daqrings,
            Vertex::Host(_) => false,
        }
    }

    /// The links that form a cycle of buffer dependencies, if any: a frame held at a receiver
    /// for one flow-controlled port waits for the next port of its path, so a cycle of such
    /// waits can pause every link on it for ever (a PFC deadlock). Checked over every path any
    /// two hosts can take.
    pub fn buffer_dependency_cycle(&self) -> Option<Vec<PortId>> {
        let n = self.ports.len();
        let mut next: Vec<HashSet<u32>> = vec![HashSet::new(); n];
        let hosts = self.hosts.len() as u32;
        for src in 0..hosts {
            for dst in (0..hosts).filter(|&d| d != src) {
                for path in 0..self.paths {
                    let ports: Vec<PortId> =
                        self.path(src, dst, path).into_iter().filter(|&p| self.port(p).pause.is_some()).collect();
                    for w in ports.windows(2) {
                        next[w[0].0 as usize].insert(w[1].0);
                    }
                }
            }
        }
        find_cycle(&next.into_iter().map(|s| s.into_iter().collect()).collect::<Vec<Vec<u32>>>())
    }
}

/// A cycle in the graph `next` (per vertex, its successors), if it has one.
fn find_cycle(next: &[Vec<u32>]) -> Option<Vec<PortId>> {
    // 0: unseen, 1: on the current path, 2: done.
    let mut state = vec![0u8; next.len()];
    for root in 0..next.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(u32, usize)> = vec![(root as u32, 0)];
        state[root] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if let Some(&w) = next[v as usize].get(*i) {
                *i += 1;
                match state[w as usize] {
                    0 => {
                        state[w as usize] = 1;
                        stack.push((w, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(u, _)| u == w).expect("on the path");
                        return Some(stack[from..].iter().map(|&(u, _)| PortId(u)).collect());
                    }
                    _ => {}
                }
            } else {
                state[v as usize] = 2;
                stack.pop();
            }
        }
    }
    None
}

impl super::build::Builder {
    /// `[network.flow_control]` on every link whose receiver holds frames: a switch (a daqring
    /// switch included), or an edge host's NIC. A host's stack never pauses; the hops inside a
    /// daqring switch are not links.
    pub(super) fn flow_control(&mut self, fc: &FlowControl, net: &Network) {
        let frame = net.wire_frame_bytes();
        let data_priority = if fc.mode == FlowControlMode::Pfc { fc.data_priority } else { 0 };
        self.f.flow = Some(FlowPlan { mode: fc.mode, quanta: fc.pause_quanta, data_priority });
        for r in 0..self.f.ports.len() {
            let port = &self.f.ports[r];
            let Vertex::Switch(receiver) = port.peer else { continue };
            if self.f.stays_in_switch(PortId(r as u32)) {
                continue;
            }
            let Some(back) = self.f.link(port.to, port.from) else { continue };
            let held_at = match self.f.switch(receiver).role {
                SwitchRole::Bus => self.f.ports.iter().position(|p| p.from == port.peer).map(|p| PortId(p as u32)),
                _ => Some(back),
            };
            let Some(held_at) = held_at else { continue };
            let (limit_bytes, pool) = match self.f.port(held_at).buffer {
                PortBuffer::Unlimited => (u64::MAX, None),
                PortBuffer::Dedicated(b) => (b, None),
                PortBuffer::Shared { pool, cap } => (cap, Some(pool)),
            };
            let headroom_bytes = fc.headroom(port.rate_bps, net.link_delay_ns, frame);
            let xoff_bytes = limit_bytes.saturating_sub(headroom_bytes);
            self.f.ports[r].pause = Some(PausePlan {
                back,
                propagation_ns: net.link_delay_ns,
                held_at,
                pool,
                limit_bytes,
                xoff_bytes,
                xon_bytes: xoff_bytes.saturating_sub(fc.xon_gap(frame)),
                headroom_bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_found_and_a_chain_is_not() {
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![1]]), Some(vec![PortId(1), PortId(2)]));
        assert_eq!(find_cycle(&[vec![], vec![1]]), Some(vec![PortId(1)]));
    }
}
