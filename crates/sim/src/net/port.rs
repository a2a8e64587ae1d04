//! Output ports: a FIFO served at line rate, with the switch buffer scheme deciding admission.
//!
//! A port never pauses once it has a frame, so each frame's departure is known when it is
//! admitted. The queue is therefore kept as (departure end, bytes) pairs and drained lazily:
//! bytes leave the buffer when their last bit has been sent.

use super::wire::{serialization_ps, wire_bytes};
use std::collections::VecDeque;

/// How a port's buffer is limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortBuffer {
    /// Never drops (a host's transmit queue: the kernel applies back-pressure instead).
    Unlimited,
    /// Dedicated buffer of this many bytes.
    Dedicated(u64),
    /// Member of shared pool `pool`, holding at most `cap` bytes itself.
    Shared {
        /// Index of the pool.
        pool: u32,
        /// Per-port cap in bytes.
        cap: u64,
    },
}

/// Shared buffer pools of all switches.
#[derive(Debug, Clone, Default)]
pub struct BufferPools {
    pools: Vec<Pool>,
}

#[derive(Debug, Clone)]
struct Pool {
    capacity: u64,
    used: u64,
    peak: u64,
    members: Vec<u32>,
}

impl BufferPools {
    /// Adds a pool of `capacity` bytes and returns its index.
    pub fn add(&mut self, capacity: u64) -> u32 {
        self.pools.push(Pool { capacity, used: 0, peak: 0, members: Vec::new() });
        self.pools.len() as u32 - 1
    }

    /// Makes `port` a member of `pool`.
    pub fn join(&mut self, pool: u32, port: u32) {
        self.pools[pool as usize].members.push(port);
    }

    /// Bytes in use in `pool` (as of the last drain).
    pub fn used(&self, pool: u32) -> u64 {
        self.pools[pool as usize].used
    }

    /// Most bytes ever in use in `pool`.
    pub fn peak(&self, pool: u32) -> u64 {
        self.pools[pool as usize].peak
    }
}

/// One output port of a host or switch.
#[derive(Debug, Clone)]
pub struct Port {
    /// Name for reports, e.g. `rack0->node3`.
    pub name: String,
    /// Line rate in bit/s.
    pub rate_bps: u64,
    /// Delay from the end of transmission to the frame being fully received by the peer, in ns
    /// (propagation, plus the receiving host's stack latency when the peer is a host).
    pub delay_ns: u64,
    /// Buffer scheme.
    pub buffer: PortBuffer,
    /// Whether this port belongs to a switch (and is reported).
    pub on_switch: bool,
    queue: VecDeque<(u64, u32)>,
    queued_bytes: u64,
    busy_until_ps: u64,
    /// Frames dropped.
    pub drops: u64,
    /// Most bytes queued at once.
    pub peak_bytes: u64,
    /// Frames sent.
    pub frames: u64,
    /// The link is down (a failed switch or cable): every frame offered is lost, and counted in
    /// `lost_down`, not in `drops`.
    pub down: bool,
    /// Frames offered while the link was down.
    pub lost_down: u64,
    shaper: Option<Shaper>,
    /// How it marks ECN-capable frames, if it does (boxed: a port is read at every hop, and
    /// most ports never mark).
    marker: Option<Box<Marker>>,
    /// ECN-capable frames it marked Congestion Experienced.
    pub marks: u64,
}

/// A port's ECN marking ([`EcnMarking`](daqnet_core::scenario::EcnMarking)), judged on what a
/// frame finds queued ahead of it when it is admitted.
#[derive(Debug, Clone)]
pub enum Marker {
    /// Mark above this many bytes ahead.
    StepBytes(u64),
    /// Mark above this many frames ahead.
    StepFrames(u32),
    /// RED's ramp from `min` to `max` bytes ahead, with its own random stream.
    Red {
        /// No mark at or below this many bytes.
        min: u64,
        /// Every frame marked from this many bytes.
        max: u64,
        /// Probability just below `max`.
        max_p: f64,
        /// The port's draws.
        rng: rand_xoshiro::Xoshiro256PlusPlus,
    },
}

impl Marker {
    /// Whether a frame that finds `bytes` in `frames` frames ahead of it is marked.
    fn marks(&mut self, bytes: u64, frames: usize) -> bool {
        match self {
            Marker::StepBytes(k) => bytes > *k,
            Marker::StepFrames(k) => frames > *k as usize,
            Marker::Red { min, max, max_p, rng } => {
                if bytes <= *min {
                    false
                } else if bytes >= *max {
                    true
                } else {
                    let p = *max_p * (bytes - *min) as f64 / (*max - *min) as f64;
                    rand::Rng::random::<f64>(rng) < p
                }
            }
        }
    }
}

/// A software shaper in place of line-rate serialization (Linux tbf): a frame leaves as soon
/// as the bucket holds its serialization time, and leaves at once.
#[derive(Debug, Clone, Copy)]
struct Shaper {
    /// Bucket depth, ps of line-rate time.
    depth_ps: u64,
    /// Tokens at `at_ps`, ps.
    tokens_ps: u64,
    at_ps: u64,
}

/// The result of offering a frame to a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Queued; its last bit reaches the peer at this time (ns).
    Sent {
        /// Arrival time at the peer, ns.
        arrival_ns: u64,
    },
    /// Dropped: it did not fit.
    Dropped,
}

impl Port {
    /// A port sending at `rate_bps` with `delay_ns` to its peer.
    pub fn new(name: String, rate_bps: u64, delay_ns: u64, buffer: PortBuffer, on_switch: bool) -> Self {
        Port {
            name,
            rate_bps,
            delay_ns,
            buffer,
            on_switch,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy_until_ps: 0,
            drops: 0,
            peak_bytes: 0,
            frames: 0,
            down: false,
            lost_down: 0,
            shaper: None,
            marker: None,
            marks: 0,
        }
    }

    /// Marks ECN-capable frames with `marker`.
    pub fn mark_with(&mut self, marker: Marker) {
        self.marker = Some(Box::new(marker));
    }

    /// The ECN-capable frame of `frame_bytes` just admitted ([`offer`] returned `Sent`): is it
    /// marked Congestion Experienced, for what it found queued ahead of it? Counted in `marks`.
    pub fn mark_admitted(&mut self, frame_bytes: u32) -> bool {
        self.mark_behind(frame_bytes, 0)
    }

    /// Flow control: [`Port::mark_admitted`] for a frame just held, behind `waiting` frames
    /// held before it (they are in the queue's bytes, not in its frames).
    pub fn mark_held(&mut self, frame_bytes: u32, waiting: usize) -> bool {
        self.mark_behind(frame_bytes, waiting)
    }

    #[inline]
    fn mark_behind(&mut self, frame_bytes: u32, waiting: usize) -> bool {
        let (ahead, frames) = (self.queued_bytes - frame_bytes as u64, self.queue.len() + waiting - 1);
        let marked = self.marker.as_mut().is_some_and(|m| m.marks(ahead, frames));
        self.marks += u64::from(marked);
        marked
    }

    /// Shapes the port like a token bucket `burst_ns` deep at its rate (full at the start),
    /// instead of serializing each frame at line rate.
    pub fn shape(&mut self, burst_ns: u64) {
        let depth_ps = burst_ns * 1000;
        self.shaper = Some(Shaper { depth_ps, tokens_ps: depth_ps, at_ps: 0 });
    }

    /// Frees the bytes of frames whose transmission has ended by `now_ps`.
    #[inline]
    fn drain(&mut self, now_ps: u64, pools: &mut BufferPools) {
        while let Some(&(end, bytes)) = self.queue.front() {
            if end > now_ps {
                break;
            }
            self.queue.pop_front();
            self.queued_bytes -= bytes as u64;
            if let PortBuffer::Shared { pool, .. } = self.buffer {
                pools.pools[pool as usize].used -= bytes as u64;
            }
        }
    }

    /// Prefetches the ends of its queue that the next frame offered reads: the oldest frame
    /// (is it gone?) and the newest (the new one goes behind it).
    pub(crate) fn prefetch_queue(&self) {
        if let (Some(front), Some(back)) = (self.queue.front(), self.queue.back()) {
            crate::prefetch::prefetch(front);
            crate::prefetch::prefetch(back);
        }
    }

    /// Bytes queued at `now_ns` (frames whose transmission has not ended).
    pub fn backlog(&mut self, now_ns: u64, pools: &mut BufferPools) -> u64 {
        self.drain(now_ns * 1000, pools);
        self.queued_bytes
    }

    /// Places an admitted frame in the queue and returns when it reaches the peer.
    fn enqueue(&mut self, now_ps: u64, frame_bytes: u32) -> u64 {
        let arrival_ns = self.send(now_ps, frame_bytes);
        self.hold_bytes(frame_bytes);
        arrival_ns
    }

    /// Counts a frame's bytes in the queue (and the peak).
    #[inline(always)]
    fn hold_bytes(&mut self, frame_bytes: u32) {
        self.queued_bytes += frame_bytes as u64;
        self.peak_bytes = self.peak_bytes.max(self.queued_bytes);
    }

    /// Flow control: admits a frame to wait for the transmitter, which [`Port::send_held`]
    /// starts when the port is free and not paused. Drains what has been sent by `now_ns`.
    pub fn hold(&mut self, now_ns: u64, frame_bytes: u32, pools: &mut BufferPools) {
        self.drain(now_ns * 1000, pools);
        self.hold_bytes(frame_bytes);
    }

    /// Flow control: starts sending the oldest held frame, of `frame_bytes`, at `start_ps` (or
    /// when the transmitter is free, if later). Returns when its last bit is sent (ps) and
    /// when it reaches the peer (ns).
    pub fn send_held(&mut self, start_ps: u64, frame_bytes: u32) -> (u64, u64) {
        let arrival_ns = self.send(start_ps, frame_bytes);
        (self.busy_until_ps, arrival_ns)
    }

    /// Flow control: sends a pause frame (a MAC control frame: never shaped, never queued in
    /// the buffer) from `start_ps` or when the transmitter is free. Returns when its last bit
    /// is sent, in ps.
    pub fn send_pause_frame(&mut self, start_ps: u64) -> u64 {
        let wire = daqnet_core::scenario::flow::PAUSE_FRAME_WIRE_BYTES as u32;
        self.busy_until_ps = self.busy_until_ps.max(start_ps) + serialization_ps(wire, self.rate_bps);
        self.busy_until_ps
    }

    /// A host CPU's core ([`crate::sockets`]): frames waiting for it or in its hands at `now_ns`.
    pub fn queued_frames(&mut self, now_ns: u64, pools: &mut BufferPools) -> usize {
        self.drain(now_ns * 1000, pools);
        self.queue.len()
    }

    /// A host CPU's core at `now_ps`: the frames it has not finished, and the work left on them
    /// (ps; they all arrived before `now_ps`, so the core works on them without a gap).
    pub fn unfinished(&self, now_ps: u64) -> (usize, u64) {
        let frames = self.queue.iter().rev().take_while(|&&(end, _)| end > now_ps).count();
        (frames, self.busy_until_ps.saturating_sub(now_ps))
    }

    /// A host CPU's core: busy for `work_ps` from `start_ps` or when it is free, if later (an
    /// interrupt).
    pub fn occupy(&mut self, start_ps: u64, work_ps: u64) {
        self.busy_until_ps = self.busy_until_ps.max(start_ps) + work_ps;
    }

    /// A host CPU's core: takes a frame of `frame_bytes` at `start_ps` or when it is free, if
    /// later, works on it for `work_ps` in place of serializing it, and returns when the host
    /// has it (ns).
    pub fn serve(&mut self, start_ps: u64, work_ps: u64, frame_bytes: u32) -> u64 {
        self.hold_bytes(frame_bytes);
        self.leave_at(self.busy_until_ps.max(start_ps) + work_ps, frame_bytes)
    }

    /// When the transmitter is free (the last bit of what it sends now), in ps.
    pub fn busy_until_ps(&self) -> u64 {
        self.busy_until_ps
    }

    /// Serializes a frame whose bytes are counted in the queue from `now_ps` or when the
    /// transmitter is free, and returns when it reaches the peer.
    #[inline(always)]
    fn send(&mut self, now_ps: u64, frame_bytes: u32) -> u64 {
        let start = self.busy_until_ps.max(now_ps);
        let ser = serialization_ps(wire_bytes(frame_bytes), self.rate_bps);
        let end = match &mut self.shaper {
            None => start + ser,
            Some(b) => {
                // A frame larger than the bucket still goes once the bucket is full.
                let need = ser.min(b.depth_ps);
                let tokens = (b.tokens_ps + (start - b.at_ps)).min(b.depth_ps);
                let leave = start + need.saturating_sub(tokens);
                b.tokens_ps = (tokens + (leave - start)).min(b.depth_ps) - need;
                b.at_ps = leave;
                leave
            }
        };
        self.leave_at(end, frame_bytes)
    }

    /// The transmitter (or core) is done with a frame of `frame_bytes` at `end_ps`: returns
    /// when the peer has it (ns).
    #[inline(always)]
    fn leave_at(&mut self, end_ps: u64, frame_bytes: u32) -> u64 {
        self.busy_until_ps = end_ps;
        self.queue.push_back((end_ps, frame_bytes));
        self.frames += 1;
        end_ps.div_ceil(1000) + self.delay_ns
    }
}

/// Offers a frame of `frame_bytes` (header to FCS) to port `id` at time `now_ns`. It is admitted
/// exactly when it fits: queued bytes plus the frame within the port's buffer (and, for a shared
/// buffer, within the pool).
pub fn offer(ports: &mut [Port], pools: &mut BufferPools, id: u32, now_ns: u64, frame_bytes: u32) -> Admission {
    if ports[id as usize].down {
        ports[id as usize].lost_down += 1;
        return Admission::Dropped;
    }
    let now_ps = now_ns * 1000;
    let buffer = ports[id as usize].buffer;
    let fits = match buffer {
        PortBuffer::Unlimited => {
            ports[id as usize].drain(now_ps, pools);
            true
        }
        PortBuffer::Dedicated(cap) => {
            let p = &mut ports[id as usize];
            p.drain(now_ps, pools);
            p.queued_bytes + frame_bytes as u64 <= cap
        }
        PortBuffer::Shared { pool, cap } => {
            // Every member's finished frames must leave the pool before it is judged.
            for i in 0..pools.pools[pool as usize].members.len() {
                let m = pools.pools[pool as usize].members[i];
                ports[m as usize].drain(now_ps, pools);
            }
            let p = &ports[id as usize];
            let pl = &pools.pools[pool as usize];
            p.queued_bytes + frame_bytes as u64 <= cap && pl.used + frame_bytes as u64 <= pl.capacity
        }
    };
    let p = &mut ports[id as usize];
    if !fits {
        p.drops += 1;
        return Admission::Dropped;
    }
    if let PortBuffer::Shared { pool, .. } = buffer {
        let pl = &mut pools.pools[pool as usize];
        pl.used += frame_bytes as u64;
        pl.peak = pl.peak.max(pl.used);
    }
    Admission::Sent { arrival_ns: p.enqueue(now_ps, frame_bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBE: u64 = 1_000_000_000;

    #[test]
    fn dedicated_buffer_drops_exactly_when_a_frame_would_not_fit() {
        let mut pools = BufferPools::default();
        // Room for exactly 3 frames of 1000 bytes, plus 999 bytes.
        let mut ports = vec![Port::new("p".into(), GBE, 0, PortBuffer::Dedicated(3999), true)];
        for _ in 0..3 {
            assert!(matches!(offer(&mut ports, &mut pools, 0, 0, 1000), Admission::Sent { .. }));
        }
        assert_eq!(offer(&mut ports, &mut pools, 0, 0, 1000), Admission::Dropped);
        assert!(matches!(offer(&mut ports, &mut pools, 0, 0, 999), Admission::Sent { .. }), "999 bytes fit exactly");
        assert_eq!(offer(&mut ports, &mut pools, 0, 0, 1), Admission::Dropped, "the buffer is exactly full");
        assert_eq!(ports[0].drops, 2);
        assert_eq!(ports[0].peak_bytes, 3999);
        // The first frame (1020 wire bytes at 1 Gb/s = 8160 ns) leaves at 8160 ns, not before.
        assert_eq!(offer(&mut ports, &mut pools, 0, 8159, 1000), Admission::Dropped);
        assert!(matches!(offer(&mut ports, &mut pools, 0, 8160, 1000), Admission::Sent { .. }));
    }

    #[test]
    fn a_host_transmit_queue_forgets_the_frames_it_has_sent() {
        // Unlimited, yet it holds only what is still being sent: at the ATLAS bench load the
        // host queues had kept every frame ever sent (120 MiB peak memory, 30 without).
        let mut pools = BufferPools::default();
        let mut ports = vec![Port::new("p".into(), GBE, 0, PortBuffer::Unlimited, false)];
        for i in 0..1000 {
            // One 1000-byte frame (8160 ns on the wire) every 10 us: never more than one queued.
            assert!(matches!(offer(&mut ports, &mut pools, 0, i * 10_000, 1000), Admission::Sent { .. }));
        }
        assert_eq!(ports[0].queue.len(), 1);
        assert_eq!(ports[0].peak_bytes, 1000);
    }

    #[test]
    fn a_core_serves_frames_back_to_back_at_its_cost_and_knows_what_is_left() {
        let mut pools = BufferPools::default();
        let mut core = Port::new("node0 core0".into(), GBE, 20_000, PortBuffer::Unlimited, false);
        core.occupy(1_000_000, 8_000_000); // an 8 us interrupt at 1 us
        assert_eq!(core.serve(1_000_000, 3_000_000, 1518), 9_000 + 3_000 + 20_000, "after the interrupt");
        assert_eq!(core.serve(2_000_000, 3_000_000, 1518), 15_000 + 20_000, "behind the first frame");
        // At 14 us the first frame is done (12 us) and the second has 1 us left.
        assert_eq!(core.unfinished(14_000_000), (1, 1_000_000));
        assert_eq!(core.queued_frames(14_000, &mut pools), 1);
        assert_eq!(core.serve(20_000_000, 3_000_000, 64), 23_000 + 20_000, "an idle core starts at once");
        assert_eq!(core.unfinished(23_000_000), (0, 0));
        assert_eq!(core.frames, 3);
    }

    #[test]
    fn frames_leave_back_to_back_at_line_rate() {
        let mut pools = BufferPools::default();
        let mut ports = vec![Port::new("p".into(), GBE, 500, PortBuffer::Unlimited, false)];
        let a = offer(&mut ports, &mut pools, 0, 0, 1518);
        let b = offer(&mut ports, &mut pools, 0, 0, 1518);
        assert_eq!(a, Admission::Sent { arrival_ns: 12_304 + 500 });
        assert_eq!(b, Admission::Sent { arrival_ns: 2 * 12_304 + 500 });
    }

    #[test]
    fn a_shaped_port_sends_its_bucket_at_once_then_at_line_rate() {
        let mut pools = BufferPools::default();
        // 100 Mb/s: a 1518-byte frame (1538 on the wire) is 123.04 µs; the bucket holds 2.5.
        let mut ports = vec![Port::new("p".into(), GBE / 10, 0, PortBuffer::Unlimited, false)];
        ports[0].shape(307_600);
        let at = |a| match a {
            Admission::Sent { arrival_ns } => arrival_ns,
            Admission::Dropped => panic!("dropped"),
        };
        let sent: Vec<u64> = (0..5).map(|_| at(offer(&mut ports, &mut pools, 0, 1_000_000, 1518))).collect();
        // Two frames leave at once, the third waits for the half frame of tokens it lacks,
        // then one per serialization time.
        assert_eq!(sent, [1_000_000, 1_000_000, 1_061_520, 1_184_560, 1_307_600]);
        // Idle for a millisecond refills the bucket (never beyond its depth).
        let later: Vec<u64> = (0..3).map(|_| at(offer(&mut ports, &mut pools, 0, 3_000_000, 1518))).collect();
        assert_eq!(later, [3_000_000, 3_000_000, 3_061_520]);
    }

    #[test]
    fn a_step_marks_exactly_the_frames_that_find_more_than_k_bytes_ahead() {
        let mut pools = BufferPools::default();
        let mut ports = vec![Port::new("p".into(), GBE, 0, PortBuffer::Dedicated(100_000), true)];
        ports[0].mark_with(Marker::StepBytes(3000));
        let mut offer_marked = |now, bytes| {
            assert!(matches!(offer(&mut ports, &mut pools, 0, now, bytes), Admission::Sent { .. }));
            ports[0].mark_admitted(bytes)
        };
        // 0, 1000, 2000 and 3000 bytes ahead: not above K.
        assert_eq!([0; 4].map(|_| offer_marked(0, 1000)), [false; 4]);
        // 4000 ahead: marked; so is a 1-byte frame behind it (5000 ahead).
        assert!(offer_marked(0, 1000));
        assert!(offer_marked(0, 1));
        // Once the first frame has left (8160 ns), 4001 bytes are ahead: still marked; after the
        // second (16 320 ns), 3002: marked; after the third, 2003: not.
        assert!(offer_marked(8160, 1));
        assert!(offer_marked(16_320, 1));
        assert!(!offer_marked(24_480, 1));
        assert_eq!(ports[0].marks, 4);
    }

    #[test]
    fn a_step_in_frames_counts_the_frames_ahead_and_red_ramps_between_its_bounds() {
        let mut pools = BufferPools::default();
        let mut ports = vec![Port::new("p".into(), GBE, 0, PortBuffer::Unlimited, true)];
        ports[0].mark_with(Marker::StepFrames(2));
        let marked: Vec<bool> = (0..4)
            .map(|_| {
                offer(&mut ports, &mut pools, 0, 0, 64);
                ports[0].mark_admitted(64)
            })
            .collect();
        assert_eq!(marked, [false, false, false, true], "the fourth finds 3 > K = 2 frames ahead");
        use rand::SeedableRng;
        let rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut red = Marker::Red { min: 1000, max: 3000, max_p: 0.5, rng };
        assert!(!red.marks(1000, 1), "at min: never");
        assert!(red.marks(3000, 3), "at max: always");
        // Halfway up the ramp, p = 0.25: 10 000 draws within 4 standard deviations (0.0173).
        let n = (0..10_000).filter(|_| red.marks(2000, 2)).count() as f64 / 10_000.0;
        assert!((n - 0.25).abs() < 0.0173, "{n}");
    }

    #[test]
    fn shared_pool_limits_the_sum_and_the_port_cap_limits_each_port() {
        let mut pools = BufferPools::default();
        let pool = pools.add(3000);
        let mut ports: Vec<Port> =
            (0..2).map(|i| Port::new(format!("p{i}"), GBE, 0, PortBuffer::Shared { pool, cap: 2000 }, true)).collect();
        pools.join(pool, 0);
        pools.join(pool, 1);
        assert!(matches!(offer(&mut ports, &mut pools, 0, 0, 1000), Admission::Sent { .. }));
        assert!(matches!(offer(&mut ports, &mut pools, 0, 0, 1000), Admission::Sent { .. }));
        assert_eq!(offer(&mut ports, &mut pools, 0, 0, 1), Admission::Dropped, "port cap 2000 reached");
        assert!(matches!(offer(&mut ports, &mut pools, 1, 0, 1000), Admission::Sent { .. }));
        assert_eq!(offer(&mut ports, &mut pools, 1, 0, 1), Admission::Dropped, "pool 3000 full");
        assert_eq!(pools.used(pool), 3000);
        // At 8160 ns the first frame of each port has been sent: 2000 bytes leave the pool.
        assert!(matches!(offer(&mut ports, &mut pools, 1, 8160, 1000), Admission::Sent { .. }));
        assert_eq!(pools.used(pool), 2000);
        assert_eq!(pools.peak(pool), 3000);
    }
}
