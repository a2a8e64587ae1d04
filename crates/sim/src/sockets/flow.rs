//! The socket layer's links under flow control (`[network.flow_control]`): every port sends
//! from a [`Gate`] that pause frames can stop, every receiver counts what each link brought in
//! ([`Ingress`]) and pauses the link above XOFF, and a frame's memory is released when its
//! last bit leaves the switch.

use super::{Ev, Flight, Packet, Sockets};
use crate::engine::EventQueue;
use crate::net::flow::{Gate, Held, Ingress, Next, PauseFrame, Sending};
use crate::net::Vertex;
use daqnet_core::report::FlowStats;
use daqnet_core::scenario::FlowControlMode;
use daqnet_core::Nanos;
use daqnet_fabric::network::{NetworkPlan, PausePlan, PortId, PortPlan};
use std::collections::VecDeque;

/// A link event waiting in the event queue, by its place among the pending ones: the queue's
/// events stay as small as they are without flow control (a link event's fields would make
/// every event of the event builder 24 bytes instead of 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSlot(u32);

/// A link event under flow control.
#[derive(Debug, Clone, Copy)]
pub enum LinkEv {
    /// Port `port` has sent the last bit of its frame (or pause frame).
    Sent {
        /// The port.
        port: u32,
    },
    /// A pause frame reaches the sender of port `port`.
    Paused {
        /// The port it pauses.
        port: u32,
        /// The priority.
        class: u8,
        /// Its length in quanta of 512 bit times (0: resume).
        quanta: u16,
    },
    /// Port `port`'s pause may be over.
    Resume {
        /// The port.
        port: u32,
    },
    /// Port `port`'s receiver renews its pause of priority `class`, if it still holds it.
    Refresh {
        /// The paused port.
        port: u32,
        /// The priority.
        class: u8,
    },
    /// Credits for `bytes` of priority `class` reach the sender of credit-based port `port`.
    Credit {
        /// The port.
        port: u32,
        /// The priority (virtual lane).
        class: u8,
        /// The bytes the receiver has room for again.
        bytes: u32,
    },
}

/// A port's flow-control counts.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PortFlow {
    pub(super) pause_sent: u64,
    pub(super) pause_received: u64,
    pub(super) paused_ns: u64,
    pub(super) peak_ingress_bytes: u64,
}

/// The flow-control state of a network: a gate per port, a count per flow-controlled port at
/// its receiver, the bytes held in each shared pool.
pub(super) struct Flow {
    gates: Vec<Gate<Packet>>,
    ingress: Vec<Ingress>,
    pools: Vec<u64>,
    /// Per port that leads to a hop inside its switch (a daqring): whose memory each frame on
    /// its way holds, in order.
    carried: Vec<VecDeque<Held>>,
    /// The priority of every frame.
    class: u8,
    /// Length of a pause.
    quanta: u16,
    /// Links send against credits instead of pausing.
    credit: bool,
    /// Per port whose buffer holds a link's frames: the most it held at once (per priority).
    peak_held: Vec<u64>,
    /// Link events in the event queue, by [`LinkSlot`], and the free slots.
    pending: Vec<LinkEv>,
    free: Vec<u32>,
}

impl Flow {
    /// The flow control of `plan`, if its links run it.
    pub(super) fn of(plan: &NetworkPlan) -> Option<Box<Flow>> {
        let fp = plan.flow?;
        let n = plan.ports.len();
        let credit = fp.mode == FlowControlMode::Credit;
        let gate = |p: &PortPlan| {
            let mut g = Gate::default();
            if let (true, Some(pause)) = (credit, p.pause) {
                g.use_credits(pause.limit_bytes);
            }
            g
        };
        Some(Box::new(Flow {
            gates: plan.ports.iter().map(gate).collect(),
            ingress: vec![Ingress::default(); n],
            pools: vec![0; plan.pools.len()],
            carried: vec![VecDeque::new(); n],
            class: fp.data_priority,
            quanta: fp.quanta,
            credit,
            peak_held: vec![0; n],
            pending: Vec::new(),
            free: Vec::new(),
        }))
    }
}

/// Picoseconds of `quanta` × 512 bit times at `rate_bps`.
fn pause_ps(quanta: u16, rate_bps: u64) -> u64 {
    (quanta as u128 * 512 * 1_000_000_000_000 / rate_bps as u128) as u64
}

impl<M: Copy> Sockets<M> {
    fn flow(&mut self) -> &mut Flow {
        self.flow.as_deref_mut().expect("flow control is on")
    }

    fn pause_plan(&self, port: u32) -> Option<PausePlan> {
        self.net.plan.ports[port as usize].pause
    }

    /// A frame has arrived at a switch through `port` and goes on through `out`: counted at
    /// the receiver (dropped if it has no room even in the headroom; the receiver pauses the
    /// link above XOFF), or still holding the memory it took when it came into this switch.
    #[inline(never)]
    pub(super) fn flow_arrive<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, out: u32, pkt: Packet) {
        let held = if self.net.plan.stays_in_switch(PortId(port)) {
            self.flow().carried[port as usize].pop_front().expect("a frame through a hop carries its memory")
        } else {
            match self.pause_plan(port) {
                Some(plan) => match self.admit(q, port, &plan, &pkt) {
                    Some(held) => held,
                    None => return,
                },
                None => Held::NONE,
            }
        };
        self.flow_forward(q, out, pkt, held);
    }

    /// Counts `pkt` at the receiver of `port`, if it fits within the port's limit (and its
    /// pool); pauses the port above XOFF.
    fn admit<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, plan: &PausePlan, pkt: &Packet) -> Option<Held> {
        let bytes = pkt.frame_bytes();
        let f = self.flow.as_deref_mut().expect("flow control is on");
        let class = f.class;
        let ing = &mut f.ingress[port as usize];
        let pool_full = plan
            .pool
            .is_some_and(|pl| f.pools[pl.0 as usize] + bytes as u64 > self.net.plan.pools[pl.0 as usize].capacity);
        if ing.held[class as usize] + bytes as u64 > plan.limit_bytes || pool_full {
            self.net.ports[plan.held_at.0 as usize].drops += 1;
            return None;
        }
        ing.held[class as usize] += bytes as u64;
        let peak = &mut f.peak_held[plan.held_at.0 as usize];
        *peak = (*peak).max(ing.held[class as usize]);
        if let Some(pl) = plan.pool {
            f.pools[pl.0 as usize] += bytes as u64;
        }
        if !f.credit && ing.held[class as usize] > plan.xoff_bytes && !ing.paused[class as usize] {
            ing.paused[class as usize] = true;
            self.pause(q, port, class);
        }
        Some(Held { port, class, bytes })
    }

    /// The receiver of `port` pauses (or renews its pause of) priority `class`, and schedules
    /// the renewal at half the pause.
    fn pause<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, class: u8) {
        let quanta = self.flow().quanta;
        let half_ns = pause_ps(quanta, self.net.ports[port as usize].rate_bps) / 2000;
        let at = q.now() + half_ns.max(1);
        self.flow().ingress[port as usize].refresh_ns[class as usize] = at;
        self.schedule_link(q, at, LinkEv::Refresh { port, class });
        self.send_pause_frame(q, port, class, quanta);
    }

    /// Queues a pause frame for `port` on the port back towards its sender.
    fn send_pause_frame<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, class: u8, quanta: u16) {
        let back = self.pause_plan(port).expect("a paused port has a pause plan").back.0;
        self.flow().gates[back as usize].push_pause(PauseFrame { to: port, class, quanta });
        self.flow_try_send(q, back, q.now() * 1000);
    }

    /// Queues `pkt`, holding `held`, at output port `port` (marking it if the port marks) and
    /// starts it if the transmitter is free.
    #[inline(never)]
    pub(super) fn flow_forward<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, mut pkt: Packet, held: Held) {
        let p = &mut self.net.ports[port as usize];
        if p.down {
            p.lost_down += 1;
            self.release(q, held);
            return;
        }
        let frame = pkt.frame_bytes();
        p.hold(q.now(), frame, &mut self.net.pools);
        let waiting = self.flow.as_deref().expect("flow control is on").gates[port as usize].waiting();
        let p = &mut self.net.ports[port as usize];
        if pkt.bits.ect() && p.mark_held(frame, waiting) {
            pkt.bits = pkt.bits.marked();
        }
        let f = self.flow();
        f.gates[port as usize].push(pkt, Held { class: f.class, bytes: frame, ..held });
        self.flow_try_send(q, port, q.now() * 1000);
    }

    /// Starts the next frame of `port` at `start_ps` if its transmitter is free: a pause frame,
    /// or a data frame of a priority that is not paused; if every waiting priority is paused,
    /// schedules a retry for when the first pause ends.
    fn flow_try_send<A>(&mut self, q: &mut EventQueue<Ev<A>>, port: u32, start_ps: u64) {
        let gate = &mut self.flow().gates[port as usize];
        if gate.busy() {
            return;
        }
        let (end_ps, sending) = match gate.next(start_ps) {
            Next::Idle => return,
            Next::WaitUntil(ps) => {
                let at = ps.div_ceil(1000);
                if at < gate.wake_ns || gate.wake_ns < q.now() {
                    gate.wake_ns = at;
                    self.schedule_link(q, at, LinkEv::Resume { port });
                }
                return;
            }
            Next::Pause(frame) => {
                gate.pause_sent += 1;
                (self.net.ports[port as usize].send_pause_frame(start_ps), Sending::Pause(frame))
            }
            Next::Frame(pkt, held) => {
                let frame = pkt.frame_bytes();
                let (end_ps, arrival) = self.net.ports[port as usize].send_held(start_ps, frame);
                if self.net.plan.stays_in_switch(PortId(port)) {
                    self.flow().carried[port as usize].push_back(held);
                }
                self.capture(port, arrival, &pkt);
                let place = q.take_place();
                let flights = &mut self.flights[port as usize];
                if flights.is_empty() {
                    q.schedule_at(arrival, place, Ev::Arrive { port });
                }
                flights.push_back(Flight { arrival, place, pkt });
                (end_ps, Sending::Frame(pkt, held))
            }
        };
        self.flow().gates[port as usize].sending = sending;
        self.schedule_link(q, end_ps.div_ceil(1000), LinkEv::Sent { port });
    }

    /// Releases the memory a frame held at the receiver of the port it came in through; below
    /// XON that port's pause is lifted; a credit-based port gets the bytes back as credits
    /// one cable delay later.
    fn release<A>(&mut self, q: &mut EventQueue<Ev<A>>, held: Held) {
        if !held.counted() {
            return;
        }
        let plan = self.pause_plan(held.port).expect("a counted frame came in through a paused port");
        if self.flow().credit {
            let (port, class, bytes) = (held.port, held.class, held.bytes);
            self.schedule_link(q, q.now() + plan.propagation_ns, LinkEv::Credit { port, class, bytes });
        }
        let f = self.flow();
        let c = held.class as usize;
        let ing = &mut f.ingress[held.port as usize];
        ing.held[c] -= held.bytes as u64;
        let resume = ing.paused[c] && ing.held[c] <= plan.xon_bytes;
        ing.paused[c] &= !resume;
        if let Some(pl) = plan.pool {
            f.pools[pl.0 as usize] -= held.bytes as u64;
        }
        if resume {
            self.send_pause_frame(q, held.port, held.class, 0);
        }
    }

    /// A data segment has left its host's NIC: TCP small queues may let its socket send more (or
    /// the NIC take its queue pair's next packet).
    fn left_host<A>(&mut self, q: &mut EventQueue<Ev<A>>, pkt: &Packet) {
        if self.rc.is_some() {
            return self.rc_left_host(q, pkt);
        }
        let snd = &mut self.conns[pkt.slot.index()].ep[pkt.from.index()].snd;
        if snd.on_host_sent(pkt.len) {
            self.pump(q, pkt.slot, pkt.from);
        }
    }

    /// Schedules link event `ev` at `at`.
    fn schedule_link<A>(&mut self, q: &mut EventQueue<Ev<A>>, at: Nanos, ev: LinkEv) {
        let f = self.flow();
        let slot = match f.free.pop() {
            Some(i) => {
                f.pending[i as usize] = ev;
                i
            }
            None => {
                f.pending.push(ev);
                f.pending.len() as u32 - 1
            }
        };
        q.schedule(at, Ev::Link(LinkSlot(slot)));
    }

    /// Handles the link event in `slot`.
    #[inline(never)]
    pub(crate) fn on_link<A>(&mut self, q: &mut EventQueue<Ev<A>>, slot: LinkSlot) {
        let f = self.flow();
        f.free.push(slot.0);
        let ev = f.pending[slot.0 as usize];
        let now = q.now();
        match ev {
            LinkEv::Sent { port } => {
                let sent = std::mem::replace(&mut self.flow().gates[port as usize].sending, Sending::Nothing);
                match sent {
                    Sending::Frame(pkt, held) => {
                        if !self.net.plan.stays_in_switch(PortId(port)) {
                            self.release(q, held);
                        }
                        if pkt.len > 0 && matches!(self.net.plan.ports[port as usize].from, Vertex::Host(_)) {
                            self.left_host(q, &pkt);
                        }
                    }
                    Sending::Pause(frame) => {
                        let arrival = now + self.pause_plan(frame.to).expect("paused port").propagation_ns;
                        let (port, class, quanta) = (frame.to, frame.class, frame.quanta);
                        self.schedule_link(q, arrival, LinkEv::Paused { port, class, quanta });
                    }
                    _ => {}
                }
                let start = self.net.ports[port as usize].busy_until_ps();
                self.flow_try_send(q, port, start);
            }
            LinkEv::Paused { port, class, quanta } => {
                let until = now * 1000 + pause_ps(quanta, self.net.ports[port as usize].rate_bps);
                self.flow().gates[port as usize].pause(class, now * 1000, until);
                if quanta == 0 {
                    self.flow_try_send(q, port, now * 1000);
                }
            }
            LinkEv::Resume { port } => {
                let gate = &mut self.flow().gates[port as usize];
                if gate.wake_ns == now {
                    gate.wake_ns = u64::MAX;
                }
                self.flow_try_send(q, port, now * 1000);
            }
            LinkEv::Credit { port, class, bytes } => {
                self.flow().gates[port as usize].credit(class, bytes);
                self.flow_try_send(q, port, now * 1000);
            }
            LinkEv::Refresh { port, class } => {
                let ing = &self.flow().ingress[port as usize];
                if ing.paused[class as usize] && ing.refresh_ns[class as usize] == now {
                    self.pause(q, port, class);
                }
            }
        }
    }

    /// Port `p`'s flow-control counts by `now`: pause frames it sent and received, the time it
    /// was paused and the most bytes it held at once of frames from one link.
    pub(super) fn port_flow(&self, p: usize, now: Nanos) -> PortFlow {
        self.flow.as_deref().map_or(PortFlow::default(), |f| {
            let g = &f.gates[p];
            PortFlow {
                pause_sent: g.pause_sent,
                pause_received: g.pause_received,
                paused_ns: g.paused_ps(now * 1000) / 1000,
                peak_ingress_bytes: f.peak_held[p],
            }
        })
    }

    /// The report's flow-control section: pause frames, and what the hosts spent paused.
    pub(super) fn flow_stats(&self, now: Nanos) -> Option<FlowStats> {
        let fp = self.net.plan.flow?;
        let mut s = FlowStats { mode: fp.mode.name().to_string(), ..Default::default() };
        for (i, p) in self.net.plan.ports.iter().enumerate() {
            let pf = self.port_flow(i, now);
            s.pause_frames += pf.pause_sent;
            if matches!(p.from, Vertex::Host(_)) {
                s.host_pause_received += pf.pause_received;
                s.host_paused_ns += pf.paused_ns;
            }
        }
        s.buffer_dependency_cycle = self
            .net
            .plan
            .buffer_dependency_cycle()
            .map(|c| c.iter().map(|p| self.net.plan.port(*p).name.clone()).collect());
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::main_loop::{self, Dataflow};
    use crate::net::Network;
    use crate::sockets::End;
    use crate::tcp::TcpParams;
    use daqnet_core::scenario::parse_str;
    use daqnet_core::trace::{CaptureSink, CapturedFrame, TraceSpec};
    use daqnet_core::ConnId;

    /// One connection carrying one long message; nothing else happens.
    struct OneMessage {
        net: Sockets<()>,
        q: EventQueue<Ev<()>>,
    }

    impl Dataflow for OneMessage {
        type Msg = ();
        type App = ();
        fn parts(&mut self) -> (&mut Sockets<()>, &mut EventQueue<Ev<()>>) {
            (&mut self.net, &mut self.q)
        }
        fn finished(&self) -> bool {
            false
        }
        fn on_message(&mut self, _: ConnId, _: ()) {}
        fn on_app(&mut self, _: ()) {}
    }

    #[derive(Default)]
    struct Frames(Vec<CapturedFrame>);

    impl CaptureSink for Frames {
        fn names(&mut self, _: &[String], _: &[String]) {}
        fn frames(&mut self, frames: &[CapturedFrame]) {
            self.0.extend_from_slice(frames);
        }
    }

    /// A readout unit sending 20 MB to a node at 10 Gb/s through one switch, a fixed window
    /// of 400 segments keeping its NIC busy, pause frames on: (the world, the NIC's port).
    fn one_sender(quanta: u16) -> (OneMessage, u32) {
        let text = format!(
            r#"
[system]
readout_units = 1
nodes = 1
[network]
topology = "star"
readout_link_bps = "10G"
node_link_bps = "10G"
link_delay_ns = 1000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = "1MB" }}
[network.flow_control]
mode = "pause"
pause_quanta = {quanta}
[network.tcp]
congestion_control = "static"
static_cwnd_segments = 400
"#
        );
        let sc = parse_str(&text, "test", &[]).unwrap();
        let plan = NetworkPlan::build(&sc.network, 1, 1);
        let nic = plan.nic(0, 0);
        let params = TcpParams::from_config(&sc.network.tcp, sc.network.mss_bytes());
        let mut w = OneMessage { net: Sockets::new(Network::new(plan, 1), &params, 1, [(1, 0)]), q: EventQueue::new() };
        w.net.send(&mut w.q, ConnId(0), End::Acceptor, 20_000_000, ());
        (w, nic)
    }

    /// When the NIC's frames end their transmission, ns.
    fn nic_frames(w: &mut OneMessage, until_s: f64) -> Vec<u64> {
        let mut frames = Frames::default();
        let spec = TraceSpec { ports: vec!["ru0->sw".into()], senders: vec![], every_ns: 1000 };
        main_loop::run(w, until_s, None, (None, Some((spec, &mut frames))));
        frames.0.iter().map(|f| f.t_ns).collect()
    }

    #[test]
    fn a_paused_port_sends_nothing_for_the_pause_time_give_or_take_a_frame() {
        // 1000 quanta at 10 Gb/s: 1000 × 512 bits = 51.2 µs. A full frame (1538 bytes on the
        // wire) takes 1.2304 µs.
        let (pause_ns, frame_ns) = (51_200, 1231);
        let (mut w, nic) = one_sender(1000);
        let at = 500_000;
        w.net.schedule_link(&mut w.q, at, LinkEv::Paused { port: nic, class: 0, quanta: 1000 });
        let ends = nic_frames(&mut w, 0.001);
        // Busy before and after: frames back to back.
        assert!(ends.iter().filter(|&&t| t > at - 20 * frame_ns && t <= at).count() >= 19, "{ends:?}");
        // The frame being sent when the pause arrives finishes; nothing else ends until the
        // pause is over, and the next frame ends one frame time after it.
        let during: Vec<u64> = ends.iter().copied().filter(|&t| t > at && t < at + pause_ns).collect();
        assert!(during.len() <= 1 && during.iter().all(|&t| t <= at + frame_ns), "{during:?}");
        let next = ends.iter().copied().find(|&t| t >= at + pause_ns).unwrap();
        assert!(next <= at + pause_ns + frame_ns, "resumed at {next}");
        // TCP above the paused NIC waits: nothing lost, nothing sent twice.
        assert_eq!(w.net.sender(1).stats().retransmits, 0);
        // An XON ends the pause early.
        let (mut w, nic) = one_sender(1000);
        w.net.schedule_link(&mut w.q, at, LinkEv::Paused { port: nic, class: 0, quanta: 1000 });
        w.net.schedule_link(&mut w.q, at + 10_000, LinkEv::Paused { port: nic, class: 0, quanta: 0 });
        let ends = nic_frames(&mut w, 0.001);
        let next = ends.iter().copied().find(|&t| t > at + frame_ns).unwrap();
        assert!((at + 10_000..=at + 10_000 + frame_ns).contains(&next), "resumed at {next}");
    }
}
