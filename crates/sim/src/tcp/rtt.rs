//! Round-trip time estimation and the retransmission timeout (RFC 6298, Linux variant).
//!
//! SRTT and RTTVAR follow RFC 6298 (α = 1/8, β = 1/4). The timeout is computed as Linux does:
//! `RTO = SRTT + max(min_rto, 4·RTTVAR)` (Linux keeps `rttvar ≥ rto_min`), so a sub-millisecond
//! RTT gives an RTO of min_rto + SRTT. Which samples are valid (Karn's rule, timestamps) is the
//! caller's choice. Each timeout doubles the RTO up to `max_rto`; a fresh valid sample clears the
//! back-off, as in Linux.

use daqnet_core::Nanos;

/// RTT estimator and retransmission timeout.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<f64>,
    rttvar: f64,
    min_rto: Nanos,
    max_rto: Nanos,
    base_rto: Nanos,
    backoff: u32,
}

impl RttEstimator {
    /// An estimator with no sample yet (RTO = `initial_rto`).
    pub fn new(initial_rto: Nanos, min_rto: Nanos, max_rto: Nanos) -> Self {
        RttEstimator { srtt: None, rttvar: 0.0, min_rto, max_rto, base_rto: initial_rto, backoff: 0 }
    }

    /// Takes a valid RTT sample (ns).
    pub fn sample(&mut self, rtt: Nanos) {
        let r = rtt as f64;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                self.srtt = Some(0.875 * s + 0.125 * r);
            }
        }
        let s = self.srtt.expect("just set");
        self.base_rto = ((s + (4.0 * self.rttvar).max(self.min_rto as f64)) as Nanos).min(self.max_rto);
        self.backoff = 0;
    }

    /// A retransmission timeout happened: double the timeout.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }

    /// How many times the timer was backed off since the last RTT sample (Linux
    /// `icsk_backoff`, `tcpi_backoff`).
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Whether a timeout has backed the timer off since the last valid sample.
    pub fn backed_off(&self) -> bool {
        self.backoff > 0
    }

    /// The current timeout, back-off included.
    pub fn rto(&self) -> Nanos {
        self.base_rto.saturating_mul(1u64 << self.backoff).min(self.max_rto)
    }

    /// The minimum RTO, ns.
    pub fn min_rto(&self) -> Nanos {
        self.min_rto
    }

    /// Smoothed RTT, if any sample was taken.
    pub fn srtt(&self) -> Option<Nanos> {
        self.srtt.map(|s| s as Nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rto_is_srtt_plus_min_rto_for_short_rtts_and_backs_off() {
        let mut e = RttEstimator::new(1000 * MS, 200 * MS, 120_000 * MS);
        assert_eq!(e.rto(), 1000 * MS);
        e.sample(100_000);
        assert_eq!(e.rto(), 200 * MS + 100_000);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), 4 * (200 * MS + 100_000));
        e.sample(100_000);
        assert_eq!(e.rto(), 200 * MS + 100_000, "a valid sample clears the back-off");
    }

    #[test]
    fn large_variance_dominates_min_rto() {
        let mut e = RttEstimator::new(1000 * MS, MS, 120_000 * MS);
        e.sample(10 * MS);
        // RTTVAR = 5 ms: RTO = 10 + 20 ms.
        assert_eq!(e.rto(), 30 * MS);
        for _ in 0..40 {
            e.back_off();
        }
        assert_eq!(e.rto(), 120_000 * MS, "capped at max_rto");
    }
}
