//! TCP small queues (Linux `tcp_small_queue_check`, with the pacing rate of
//! `tcp_update_pacing_rate`): a socket keeps at most about a millisecond of its pacing rate in
//! its host's qdisc and NIC; beyond that it stops sending and waits for one of its packets to
//! leave the NIC (`tcp_tsq_handler`). It matters where a NIC can be paused (link-level flow
//! control): the data then waits in the socket, not in the NIC, and a timer fires on what the
//! socket has sent.

/// Linux `tcp_limit_output_bytes` (default since 6.6: 4 MiB).
pub const LIMIT_OUTPUT_BYTES: u64 = 4 << 20;
/// Linux `sk_pacing_shift` default: the limit is 2^-10 s (about a millisecond) of the rate.
const PACING_SHIFT: u32 = 10;
/// Bytes an skb carries besides its payload in `sk_wmem_alloc` (its `truesize`): the headroom
/// of `MAX_TCP_HEADER` (320), `struct sk_buff` (256) and `struct skb_shared_info` (320), each
/// cache-aligned.
pub const SKB_OVERHEAD_BYTES: u64 = 896;

/// A socket's bytes in its host's queue (`sk_wmem_alloc`, counted in truesize) and whether it
/// is throttled (`TSQ_THROTTLED`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmallQueue {
    queued: u64,
    throttled: bool,
}

impl SmallQueue {
    /// A segment of `payload` bytes goes to the host's queue.
    pub fn on_queued(&mut self, payload: u32) {
        self.queued += payload as u64 + SKB_OVERHEAD_BYTES;
    }

    /// A segment of `payload` bytes has left the NIC. Returns whether the socket was throttled
    /// (and should now send what it held back, as `tcp_tsq_handler`).
    pub fn on_sent(&mut self, payload: u32) -> bool {
        self.queued -= payload as u64 + SKB_OVERHEAD_BYTES;
        std::mem::take(&mut self.throttled)
    }

    /// Linux `tcp_small_queue_check` before sending a segment of `mss` bytes: whether the
    /// socket must wait, given its pacing rate (bytes/s), whether it is a retransmission
    /// (`factor` 1: twice the limit) and whether at most one segment is out (then it always
    /// sends).
    pub fn must_wait(&mut self, mss: u32, pacing_bytes_per_s: u64, retransmit: bool, single_out: bool) -> bool {
        let truesize = mss as u64 + SKB_OVERHEAD_BYTES;
        let limit = (2 * truesize).max(pacing_bytes_per_s >> PACING_SHIFT).min(LIMIT_OUTPUT_BYTES) << retransmit as u32;
        if self.queued <= limit || single_out {
            return false;
        }
        self.throttled = true;
        true
    }
}

/// Linux `tcp_update_pacing_rate`, in bytes/s: `mss` × max(cwnd, packets out) per smoothed RTT,
/// at 200 % in slow start (cwnd below half of ssthresh) and 120 % after. Unbounded without an
/// RTT sample (Linux: no division).
pub fn pacing_rate(mss: u32, cwnd: u32, packets_out: u32, ssthresh: u32, srtt_ns: Option<u64>) -> u64 {
    let ratio: u128 = if cwnd < ssthresh / 2 { 200 } else { 120 };
    match srtt_ns {
        Some(srtt) if srtt > 0 => {
            let bytes = mss as u128 * cwnd.max(packets_out) as u128 * ratio / 100;
            (bytes * 1_000_000_000 / srtt as u128).min(u64::MAX as u128) as u64
        }
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_a_millisecond_of_the_pacing_rate_at_least_two_segments_at_most_4_mib() {
        // 10 segments of 1448 bytes per 10 ms in congestion avoidance: 1.74 MB/s, 1696 bytes
        // per 2^-10 s, below two segments' truesize (2 × 2344): the floor holds.
        let slow = pacing_rate(1448, 10, 10, 5, Some(10_000_000));
        assert_eq!(slow, 1_737_600);
        let mut q = SmallQueue::default();
        q.on_queued(1448);
        q.on_queued(1448);
        assert!(!q.must_wait(1448, slow, false, false), "4688 bytes queued: at the floor");
        q.on_queued(1);
        assert!(q.must_wait(1448, slow, false, false), "one byte more waits");
        assert!(!q.must_wait(1448, slow, true, false), "a retransmission may queue twice as much");
        assert!(!q.must_wait(1448, slow, false, true), "a lone segment out is always sent");
        assert!(q.on_sent(1), "the throttled socket is woken");
        assert!(!q.on_sent(1448), "once");
        // 64 segments per 20 µs in slow start: 9.3 GB/s, far above 4 MiB per millisecond.
        let fast = pacing_rate(1448, 64, 64, u32::MAX, Some(20_000));
        assert_eq!(fast, 9_267_200_000);
        // One segment is still queued; 1789 of 2344 bytes are 4,193,416, under 4 MiB.
        for _ in 0..1788 {
            q.on_queued(1448);
        }
        assert!(!q.must_wait(1448, fast, false, false), "under 4 MiB");
        q.on_queued(1448);
        assert!(q.must_wait(1448, fast, false, false), "4 MiB is the cap");
    }
}
