//! The switch without I/O: frames in, frames out per egress port. Time is an argument.
//!
//! Every egress port has a default queue (traffic to hosts that are not collectors: requests,
//! ACKs, control) and one daqring per collector behind it. A polling cycle of a port visits its
//! queues once each, round-robin, starting one queue further each cycle; a queue sends at most
//! `burst_frames` frames per visit, and the port's pacer holds the line rate.

use crate::config::SwitchConfig;
use crate::frame::{dst_ipv4, dst_mac, wire_bytes, Mac};
use crate::pacer::Pacer;
use crate::ring::{DaqRing, RingStats};
use std::collections::HashMap;

/// Buffers kept for reuse (frames are copied out of the receive ring into one of these).
const SPARE_BUFFERS: usize = 8192;

struct Egress {
    /// Queue indices; the first is the port's default queue.
    rings: Vec<usize>,
    /// Queue the next cycle starts with (position in `rings`).
    next: usize,
    pacer: Pacer,
}

/// What became of a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Queued for this egress port.
    Queued(usize),
    /// Dropped: the queue's byte cap was reached (counted in its statistics).
    Full(usize),
    /// Dropped: no route for its destination MAC (counted in `unroutable`).
    Unroutable,
}

/// The sans-IO switch.
pub struct SwitchState {
    fib: HashMap<Mac, usize>,
    ring_of_ip: HashMap<[u8; 4], usize>,
    rings: Vec<DaqRing>,
    names: Vec<String>,
    ports: Vec<Egress>,
    burst: Option<u32>,
    spare: Vec<Vec<u8>>,
    /// Frames to a MAC not in the forwarding table.
    pub unroutable: u64,
}

impl SwitchState {
    /// A switch as `cfg` describes it (checked first).
    pub fn new(cfg: &SwitchConfig) -> anyhow::Result<Self> {
        cfg.check()?;
        let fib: HashMap<Mac, usize> = cfg.fib()?.into_iter().collect();
        let mut rings = Vec::new();
        let mut names = Vec::new();
        let mut ports: Vec<Egress> = cfg
            .ports
            .iter()
            .map(|p| {
                rings.push(DaqRing::new(cfg.queue_bytes));
                names.push(p.name.clone());
                Egress { rings: vec![rings.len() - 1], next: 0, pacer: Pacer::new(p.rate_bps, cfg.pacing_bucket_bytes) }
            })
            .collect();
        let mut ring_of_ip = HashMap::new();
        for (ip, mac) in cfg.collectors.iter().zip(&cfg.collector_macs) {
            let mac = crate::frame::parse_mac(mac).expect("checked");
            let port = fib[&mac];
            rings.push(DaqRing::new(cfg.queue_bytes));
            names.push(format!("{} daqring {ip}", cfg.ports[port].name));
            ports[port].rings.push(rings.len() - 1);
            ring_of_ip.insert(ip.octets(), rings.len() - 1);
        }
        Ok(SwitchState {
            fib,
            ring_of_ip,
            rings,
            names,
            ports,
            burst: cfg.burst_frames,
            spare: Vec::new(),
            unroutable: 0,
        })
    }

    /// An empty buffer to receive a frame into.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_else(|| Vec::with_capacity(2048))
    }

    /// Gives a buffer back for reuse.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            buf.clear();
            self.spare.push(buf);
        }
    }

    /// A frame arrived (on any port: the switch never sends a frame back where it came from
    /// only because hosts do not address themselves).
    pub fn receive(&mut self, frame: Vec<u8>) -> Verdict {
        let Some(port) = dst_mac(&frame).and_then(|m| self.fib.get(&m).copied()) else {
            self.unroutable += 1;
            self.recycle(frame);
            return Verdict::Unroutable;
        };
        let ring = match dst_ipv4(&frame).and_then(|ip| self.ring_of_ip.get(&ip)) {
            Some(&r) => r,
            None => self.ports[port].rings[0],
        };
        match self.rings[ring].push(frame) {
            Ok(()) => Verdict::Queued(port),
            Err(frame) => {
                self.recycle(frame);
                Verdict::Full(port)
            }
        }
    }

    /// One polling cycle of egress port `port` at `now_ns`: appends the frames that may go now
    /// to `out`, in order.
    pub fn poll(&mut self, port: usize, now_ns: u64, out: &mut Vec<Vec<u8>>) {
        let e = &mut self.ports[port];
        let n = e.rings.len();
        let start = e.next;
        e.next = (start + 1) % n;
        for k in 0..n {
            let pos = (start + k) % n;
            let ring = &mut self.rings[e.rings[pos]];
            let mut taken = 0u32;
            while self.burst.is_none_or(|b| taken < b) {
                let Some(len) = ring.head_len() else { break };
                if !e.pacer.ready(now_ns) {
                    // Out of line rate: the next cycle resumes after the last queue served.
                    e.next = if taken > 0 { (pos + 1) % n } else { pos };
                    return;
                }
                e.pacer.take(wire_bytes(len));
                out.push(ring.pop().expect("head exists"));
                taken += 1;
            }
        }
    }

    /// Whether egress port `port` has frames queued.
    pub fn has_queued(&self, port: usize) -> bool {
        self.ports[port].rings.iter().any(|&r| !self.rings[r].is_empty())
    }

    /// The earliest time a port with queued frames may send again (`now_ns` if one may now);
    /// `None` when nothing is queued.
    pub fn next_ready(&self, now_ns: u64) -> Option<u64> {
        (0..self.ports.len()).filter(|&p| self.has_queued(p)).map(|p| self.ports[p].pacer.ready_at(now_ns)).min()
    }

    /// Number of egress ports.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// Every queue's name and statistics: each port's default queue (named as the port), then
    /// the daqrings (`<port> daqring <collector address>`).
    pub fn stats(&self) -> Vec<(String, RingStats)> {
        self.names.iter().cloned().zip(self.rings.iter().map(|r| r.stats.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PortConfig, Route, DEFAULT_QUEUE_BYTES};
    use crate::frame::format_mac;
    use crate::frame::tests::ipv4_frame;
    use std::net::Ipv4Addr;

    const HOST: Mac = [2, 0, 0, 0, 0, 1];
    const COLLECTORS: [([u8; 4], Mac); 3] =
        [([10, 0, 0, 1], [2, 0, 0, 0, 1, 1]), ([10, 0, 0, 2], [2, 0, 0, 0, 1, 1]), ([10, 0, 0, 3], [2, 0, 0, 0, 2, 1])];

    /// Port 0 leads to a plain host; port 1 to a node running collectors 1 and 2 (one MAC, two
    /// addresses); port 2 to collector 3.
    fn config(rate_bps: u64, burst: Option<u32>, queue_bytes: u64) -> SwitchConfig {
        let port = |n: &str| PortConfig { name: n.into(), rate_bps };
        let mut routes = vec![Route { mac: format_mac(&HOST), port: 0 }];
        routes.push(Route { mac: format_mac(&COLLECTORS[0].1), port: 1 });
        routes.push(Route { mac: format_mac(&COLLECTORS[2].1), port: 2 });
        SwitchConfig {
            ports: vec![port("p0"), port("p1"), port("p2")],
            routes,
            collectors: COLLECTORS.iter().map(|(ip, _)| Ipv4Addr::from(*ip)).collect(),
            collector_macs: COLLECTORS.iter().map(|(_, m)| format_mac(m)).collect(),
            queue_bytes,
            burst_frames: burst,
            pacing_bucket_bytes: 3000,
        }
    }

    fn frame(c: usize, seq: u32) -> Vec<u8> {
        let (ip, mac) = COLLECTORS[c];
        let mut f = ipv4_frame(mac, ip, 1514);
        f[40..44].copy_from_slice(&seq.to_be_bytes());
        f
    }

    fn collector_of(f: &[u8]) -> usize {
        COLLECTORS.iter().position(|(ip, _)| Some(*ip) == dst_ipv4(f)).unwrap()
    }

    #[test]
    fn two_collectors_behind_one_port_get_equal_shares() {
        // 1 Gb/s port, both daqrings backlogged with 2000 frames: the first 2000 frames out
        // are split evenly.
        let mut s = SwitchState::new(&config(1_000_000_000, None, DEFAULT_QUEUE_BYTES)).unwrap();
        for seq in 0..2000 {
            assert_eq!(s.receive(frame(0, seq)), Verdict::Queued(1));
            assert_eq!(s.receive(frame(1, seq)), Verdict::Queued(1));
        }
        let (mut now, mut out) = (0, Vec::new());
        while out.len() < 2000 {
            s.poll(1, now, &mut out);
            now = s.next_ready(now).unwrap().max(now + 1000);
        }
        let share0 = out[..2000].iter().filter(|f| collector_of(f) == 0).count();
        assert!((900..=1100).contains(&share0), "collector 1 got {share0} of 2000");
        assert!(now >= (1998 * 1538 - 3000) * 8, "paced at line rate: {now} ns");
    }

    #[test]
    fn a_burst_limit_caps_frames_per_queue_per_cycle() {
        let mut s = SwitchState::new(&config(0, Some(4), DEFAULT_QUEUE_BYTES)).unwrap();
        for seq in 0..10 {
            s.receive(frame(0, seq));
            s.receive(frame(1, seq));
        }
        let mut out = Vec::new();
        s.poll(1, 0, &mut out);
        let per: Vec<usize> = out.iter().map(|f| collector_of(f)).collect();
        assert_eq!(per, [0, 0, 0, 0, 1, 1, 1, 1], "4 from each daqring, round-robin");
        for (cycle, first) in [(2, 0), (3, 1)] {
            out.clear();
            s.poll(1, 0, &mut out);
            assert_eq!(collector_of(&out[0]), first, "cycle {cycle} starts one queue further");
        }
        assert_eq!(out.len(), 4, "the last 2 of each");
    }

    #[test]
    fn a_full_daqring_drops_and_counts_only_its_own_frames() {
        let mut s = SwitchState::new(&config(0, None, 3 * 1514)).unwrap();
        let verdicts: Vec<Verdict> = (0..5).map(|q| s.receive(frame(2, q))).collect();
        assert_eq!(verdicts[..3], [Verdict::Queued(2); 3]);
        assert_eq!(verdicts[3..], [Verdict::Full(2); 2]);
        assert_eq!(s.receive(frame(0, 0)), Verdict::Queued(1), "other daqrings unaffected");
        let stats = s.stats();
        let ring = stats.iter().find(|(n, _)| n == "p2 daqring 10.0.0.3").unwrap();
        assert_eq!((ring.1.drops, ring.1.peak_bytes), (2, 3 * 1514));
        assert_eq!(s.receive(ipv4_frame([2, 9, 9, 9, 9, 9], [10, 0, 0, 9], 100)), Verdict::Unroutable);
        assert_eq!(s.unroutable, 1);
        let mut plain = ipv4_frame(HOST, [10, 0, 0, 9], 100);
        plain[0..6].copy_from_slice(&HOST);
        assert_eq!(s.receive(plain), Verdict::Queued(0), "a host that is no collector: the default queue");
    }

    #[test]
    fn no_frame_is_lost_duplicated_or_reordered_over_100k_frames() {
        let mut s = SwitchState::new(&config(10_000_000_000, Some(8), DEFAULT_QUEUE_BYTES)).unwrap();
        let mut x = 0x9e3779b97f4a7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut sent = [0u32; 3];
        let mut got: [Vec<u32>; 3] = Default::default();
        let (mut now, mut out) = (0u64, Vec::new());
        let drain = |out: &mut Vec<Vec<u8>>, got: &mut [Vec<u32>; 3]| {
            for f in out.drain(..) {
                got[collector_of(&f)].push(u32::from_be_bytes(f[40..44].try_into().unwrap()));
            }
        };
        for _ in 0..100_000 {
            let c = (rnd() % 3) as usize;
            assert!(matches!(s.receive(frame(c, sent[c])), Verdict::Queued(_)));
            sent[c] += 1;
            now += rnd() % 2000;
            if rnd() % 3 == 0 {
                s.poll(1 + (rnd() % 2) as usize, now, &mut out);
                drain(&mut out, &mut got);
            }
        }
        while let Some(t) = s.next_ready(now) {
            now = t.max(now + 1);
            for p in 0..s.ports() {
                s.poll(p, now, &mut out);
            }
            drain(&mut out, &mut got);
        }
        for c in 0..3 {
            assert_eq!(got[c], (0..sent[c]).collect::<Vec<_>>(), "collector {c}: every frame once, in order");
        }
        assert_eq!(sent.iter().sum::<u32>(), 100_000);
        assert!(s.stats().iter().all(|(_, st)| st.drops == 0));
    }
}
