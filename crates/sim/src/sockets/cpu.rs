//! The socket layer's servers with finite CPU (`[network.host_cpu]`, `[network.switch.cpu]`): a
//! frame that reaches such a host or software switch waits in the receive ring of the core its
//! connection is steered to, until the NIC interrupts (after `coalesce_ns`, or at
//! `coalesce_frames`), and the core, after the interrupt's cost, works on each frame in turn
//! before TCP sees it or the switch forwards it. The core's time line is the plan's port from
//! the server's hop to it ([`Port::serve`](crate::net::port::Port::serve)).

use super::{Ev, Packet, Sockets};
use crate::engine::EventQueue;
use daqnet_core::report::{CoreStats, HostCpuStats};
use daqnet_core::scenario::{HostCpu, Steering};
use daqnet_core::workload::mix;
use daqnet_core::{ConnId, Nanos, NS_PER_S};
use daqnet_fabric::network::NetworkPlan;
use std::collections::{HashMap, VecDeque};

/// A core of a server: its server, its port, the frames its ring holds that the NIC has not yet
/// announced, and its counts.
struct Core {
    cpu: u32,
    port: u32,
    ring: VecDeque<Packet>,
    /// When the NIC interrupts for the ring's frames (`Nanos::MAX`: none waiting).
    fire_at: Nanos,
    interrupts: u64,
    drops: u64,
    busy_ps: u64,
    peak_frames: u64,
}

/// The servers with finite CPU of a network.
pub(super) struct Cpus {
    /// Per CPU: the costs of its cores.
    cost: Vec<HostCpu>,
    /// Per switch of the plan: the CPU it is (an index into `first`), or `u32::MAX`.
    hop: Vec<u32>,
    /// Per CPU: its first core in `cores`, its number of cores, the next core in turn.
    first: Vec<(u32, u32, u32)>,
    /// Round-robin steering: the core each (CPU, connection) was given.
    given: HashMap<(u32, ConnId), u32>,
    cores: Vec<Core>,
}

impl Cpus {
    /// The CPUs of `plan`, if it has any.
    pub(super) fn of(plan: &NetworkPlan) -> Option<Box<Cpus>> {
        if plan.cpus.is_empty() {
            return None;
        }
        let mut hop = vec![u32::MAX; plan.switches.len()];
        let (mut first, mut cores, mut cost) = (Vec::new(), Vec::new(), Vec::new());
        for (i, c) in plan.cpus.iter().enumerate() {
            hop[c.hop.0 as usize] = i as u32;
            first.push((cores.len() as u32, c.cores.len() as u32, 0));
            cost.push(c.cost.clone());
            cores.extend(c.cores.iter().map(|p| Core {
                cpu: i as u32,
                port: p.0,
                ring: VecDeque::new(),
                fire_at: Nanos::MAX,
                interrupts: 0,
                drops: 0,
                busy_ps: 0,
                peak_frames: 0,
            }));
        }
        Some(Box::new(Cpus { cost, hop, first, given: HashMap::new(), cores }))
    }

    /// The CPU switch `s` is, if it is one.
    #[inline]
    pub(super) fn host_of(&self, s: u32) -> Option<u32> {
        Some(self.hop[s as usize]).filter(|&h| h != u32::MAX)
    }

    /// The core of CPU `h` that connection `c`'s frames go to.
    fn steer(&mut self, h: u32, c: ConnId) -> usize {
        let (first, n, next) = &mut self.first[h as usize];
        let k = match self.cost[h as usize].steering {
            Steering::Hash => (mix(c.0 as u64) % *n as u64) as u32,
            Steering::RoundRobin => *self.given.entry((h, c)).or_insert_with(|| {
                let k = *next;
                *next = (k + 1) % *n;
                k
            }),
        };
        (*first + k) as usize
    }
}

impl<M: Copy> Sockets<M> {
    /// A frame reaches CPU `h`: into the ring of its connection's core, dropped if the ring
    /// is full; the NIC interrupts at once if the ring now holds `coalesce_frames`, or
    /// `coalesce_ns` after the first frame it holds.
    pub(super) fn cpu_arrive<A>(&mut self, q: &mut EventQueue<Ev<A>>, h: u32, pkt: Packet) {
        let now = q.now();
        let conn = self.conns[pkt.slot.index()].id;
        let cpu = self.cpu.as_deref_mut().expect("a CPU's hop exists only with its section");
        let k = cpu.steer(h, conn);
        let cost = &cpu.cost[h as usize];
        let (ring_frames, coalesce_frames, coalesce_ns) =
            (cost.ring_frames as usize, cost.coalesce_frames as usize, cost.coalesce_ns);
        let c = &mut cpu.cores[k];
        let held = c.ring.len() + self.net.ports[c.port as usize].queued_frames(now, &mut self.net.pools);
        if held >= ring_frames {
            c.drops += 1;
            return;
        }
        c.peak_frames = c.peak_frames.max(held as u64 + 1);
        c.ring.push_back(pkt);
        if coalesce_ns == 0 || c.ring.len() >= coalesce_frames {
            self.interrupt(q, k);
        } else if c.ring.len() == 1 {
            c.fire_at = now + coalesce_ns;
            q.schedule(c.fire_at, Ev::Interrupt { core: k as u32 });
        }
    }

    /// The coalescing delay of core `k`'s ring is over: the NIC interrupts, unless it already
    /// did for these frames (their count reached `coalesce_frames`).
    pub fn on_interrupt<A>(&mut self, q: &mut EventQueue<Ev<A>>, k: u32) {
        let cpu = self.cpu.as_deref().expect("interrupts come only with a CPU");
        if cpu.cores[k as usize].fire_at == q.now() {
            self.interrupt(q, k as usize);
        }
    }

    /// The NIC interrupts core `k`: the core spends `interrupt_ns`, then works on each frame
    /// of its ring in turn; each reaches the host when the core is done with it.
    fn interrupt<A>(&mut self, q: &mut EventQueue<Ev<A>>, k: usize) {
        let now_ps = q.now() * 1000;
        let cpu = self.cpu.as_deref_mut().expect("interrupts come only with a CPU");
        let c = &mut cpu.cores[k];
        let (port, irq_ps) = (c.port, cpu.cost[c.cpu as usize].interrupt_ns * 1000);
        let mut ring = std::mem::take(&mut c.ring);
        c.fire_at = Nanos::MAX;
        c.interrupts += 1;
        c.busy_ps += irq_ps;
        self.net.ports[port as usize].occupy(now_ps, irq_ps);
        for pkt in ring.drain(..) {
            let frame = pkt.frame_bytes();
            let cpu = self.cpu.as_deref_mut().expect("checked above");
            let work = cpu.cost[cpu.cores[k].cpu as usize].frame_ps(frame);
            cpu.cores[k].busy_ps += work;
            let arrival = self.net.ports[port as usize].serve(now_ps, work, frame);
            self.fly(q, port, arrival, pkt);
        }
        self.cpu.as_deref_mut().expect("checked above").cores[k].ring = ring;
    }

    /// The cores' counts at `now` (frames finished, busy time until then), if any host or
    /// switch has finite CPU.
    pub(super) fn cpu_stats(&self, now: Nanos) -> Option<HostCpuStats> {
        let cpu = self.cpu.as_deref()?;
        let cores: Vec<CoreStats> = cpu
            .cores
            .iter()
            .map(|c| {
                let port = &self.net.ports[c.port as usize];
                let (frames_left, work_left_ps) = port.unfinished(now * 1000);
                CoreStats {
                    name: port.name.clone(),
                    frames: port.frames - frames_left as u64,
                    drops: c.drops,
                    interrupts: c.interrupts,
                    busy_s: c.busy_ps.saturating_sub(work_left_ps) as f64 / (1000 * NS_PER_S) as f64,
                    peak_frames: c.peak_frames,
                }
            })
            .collect();
        Some(HostCpuStats {
            drops: cores.iter().map(|c| c.drops).sum(),
            interrupts: cores.iter().map(|c| c.interrupts).sum(),
            cores,
        })
    }
}
