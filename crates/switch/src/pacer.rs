//! Egress pacing: a token bucket filled at the port's line rate.

/// A token bucket counting wire bytes. A frame may go when the bucket is not in debt; it then
/// takes its wire size, possibly going into debt, which later time pays back.
#[derive(Debug, Clone)]
pub struct Pacer {
    rate_bps: u64,
    bucket_bytes: f64,
    tokens: f64,
    last_ns: u64,
}

impl Pacer {
    /// A bucket filling at `rate_bps` bits per second, holding at most `bucket_bytes` (the
    /// largest burst at more than line rate). `rate_bps = 0` means unpaced.
    pub fn new(rate_bps: u64, bucket_bytes: u64) -> Self {
        Pacer { rate_bps, bucket_bytes: bucket_bytes as f64, tokens: bucket_bytes as f64, last_ns: 0 }
    }

    fn refill(&mut self, now_ns: u64) {
        if now_ns > self.last_ns {
            let earned = (now_ns - self.last_ns) as f64 * self.rate_bps as f64 / 8e9;
            self.tokens = (self.tokens + earned).min(self.bucket_bytes);
            self.last_ns = now_ns;
        }
    }

    /// Whether a frame may go at `now_ns`.
    pub fn ready(&mut self, now_ns: u64) -> bool {
        if self.rate_bps == 0 {
            return true;
        }
        self.refill(now_ns);
        self.tokens >= 0.0
    }

    /// A frame of `wire_bytes` went.
    pub fn take(&mut self, wire_bytes: u64) {
        if self.rate_bps > 0 {
            self.tokens -= wire_bytes as f64;
        }
    }

    /// When the bucket is out of debt again (`now_ns` if it is already).
    pub fn ready_at(&self, now_ns: u64) -> u64 {
        if self.rate_bps == 0 || self.tokens >= 0.0 {
            return now_ns;
        }
        let wait = (-self.tokens * 8e9 / self.rate_bps as f64).ceil() as u64;
        self.last_ns + wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_line_rate_over_time() {
        // 1 Gb/s, a bucket of one frame: the bucket and the one frame of debt let two frames go
        // at once, then one every 12.3 µs: 1000 frames of 1538 wire bytes by 998 × 12.3 µs.
        let mut p = Pacer::new(1_000_000_000, 1538);
        let (mut now, mut sent) = (0u64, 0u64);
        while sent < 1000 {
            if p.ready(now) {
                p.take(1538);
                sent += 1;
            } else {
                now = p.ready_at(now);
            }
        }
        let ideal = 998 * 1538 * 8;
        assert!(now >= ideal && now <= ideal + 10, "{now} ns for 1000 frames, ideal {ideal}");
        let mut free = Pacer::new(0, 0);
        assert!((0..100).all(|_| {
            free.take(1538);
            free.ready(0)
        }));
    }
}
