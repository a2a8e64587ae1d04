//! Reordering detection (Linux `tcp_check_sack_reordering`, `tcp_input.c`).
//!
//! A segment sent once that is SACKed, or cumulatively acknowledged without having been
//! SACKed, while a segment above it was already SACKed arrived out of order: it was not lost.
//! Linux keeps how far out of order, in segments (`tp->reordering`, the duplicate-ACK
//! threshold, reported as `tcpi_reordering`), and how often it happened (`tp->reord_seen`, which
//! makes RACK keep its reordering window even in recovery).

/// Linux `sysctl_tcp_max_reordering`'s default: the degree never grows beyond it.
pub const MAX_REORDERING: u32 = 300;

/// What the sender has seen of reordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reordering {
    /// Segments a delivery may come out of order before a segment counts as lost (Linux
    /// `tp->reordering`; starts at `tcp_reordering`, 3).
    degree: u32,
    /// Times reordering was seen (Linux `tp->reord_seen`).
    seen: u32,
}

impl Reordering {
    /// No reordering seen yet; the threshold is the setting `tcp_reordering`.
    pub fn new(initial: u32) -> Self {
        Reordering { degree: initial, seen: 0 }
    }

    /// The degree in segments (`tcpi_reordering`).
    pub fn degree(&self) -> u32 {
        self.degree
    }

    /// Whether any reordering was seen (`tcpi_reord_seen` > 0).
    pub fn seen(&self) -> u32 {
        self.seen
    }

    /// Linux `tcp_check_sack_reordering`: the lowest segment start `low_seq` delivered out of
    /// order, against `fack`, the end of the highest SACKed segment now (`snd_una` when none is
    /// SACKed), with segments of `mss` bytes. A distance beyond the degree raises it, rounded
    /// up to whole segments, at most [`MAX_REORDERING`].
    pub fn check(&mut self, low_seq: u64, fack: u64, mss: u32) {
        if low_seq >= fack || mss == 0 {
            return;
        }
        let metric = fack - low_seq;
        if metric > u64::from(self.degree) * u64::from(mss) {
            self.degree = metric.div_ceil(u64::from(mss)).min(u64::from(MAX_REORDERING)) as u32;
        }
        self.seen += 1;
    }

    /// Linux `tcp_enter_loss`: a timeout in the open or disorder state after `sacked_out`
    /// SACKs reached the setting `initial` means the degree was over-estimated; it falls back.
    pub fn on_timeout_after_sacks(&mut self, initial: u32) {
        self.degree = self.degree.min(initial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_degree_is_the_distance_to_the_highest_sack_in_whole_segments() {
        let mut r = Reordering::new(3);
        // SACKed 8001:9001 (fack 9000 here, bytes from 0), then 3000 arrives: 6 segments.
        r.check(3000, 9000, 1000);
        assert_eq!((r.degree(), r.seen()), (6, 1));
        // A shorter distance counts as seen but does not lower the degree.
        r.check(7000, 9000, 1000);
        assert_eq!((r.degree(), r.seen()), (6, 2));
        // One byte beyond 6 segments is 7.
        r.check(1999, 9000, 1000);
        assert_eq!(r.degree(), 8, "7001 bytes round up to 8 segments");
    }

    #[test]
    fn nothing_is_reordered_at_or_above_the_highest_sack_and_the_degree_is_capped() {
        let mut r = Reordering::new(3);
        r.check(9000, 9000, 1000);
        assert_eq!((r.degree(), r.seen()), (3, 0));
        r.check(0, 3000, 1000);
        assert_eq!((r.degree(), r.seen()), (3, 1), "exactly 3 segments is not beyond 3");
        r.check(0, 10_000_000, 1000);
        assert_eq!(r.degree(), MAX_REORDERING);
        r.on_timeout_after_sacks(3);
        assert_eq!(r.degree(), 3);
    }
}
