//! A daqring: the queue of one data collector (or of a port's other traffic), bounded in bytes.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What a daqring did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingStats {
    /// Frames forwarded.
    pub frames: u64,
    /// Bytes forwarded (frames as the kernel hands them over: no FCS).
    pub bytes: u64,
    /// Largest number of bytes queued at once.
    pub peak_bytes: u64,
    /// Frames dropped because the byte cap was reached.
    pub drops: u64,
}

/// A FIFO of frames holding at most `cap_bytes`.
#[derive(Debug)]
pub struct DaqRing {
    frames: VecDeque<Vec<u8>>,
    bytes: u64,
    cap_bytes: u64,
    /// Its statistics.
    pub stats: RingStats,
}

impl DaqRing {
    /// An empty ring holding at most `cap_bytes`.
    pub fn new(cap_bytes: u64) -> Self {
        DaqRing { frames: VecDeque::new(), bytes: 0, cap_bytes, stats: RingStats::default() }
    }

    /// Queues `frame`; gives it back if the cap would be exceeded (counted as a drop).
    pub fn push(&mut self, frame: Vec<u8>) -> Result<(), Vec<u8>> {
        let len = frame.len() as u64;
        if self.bytes + len > self.cap_bytes {
            self.stats.drops += 1;
            return Err(frame);
        }
        self.bytes += len;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.bytes);
        self.frames.push_back(frame);
        Ok(())
    }

    /// Length of the frame at the head, if any.
    pub fn head_len(&self) -> Option<usize> {
        self.frames.front().map(Vec::len)
    }

    /// Takes the frame at the head (counted as forwarded).
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let f = self.frames.pop_front()?;
        self.bytes -= f.len() as u64;
        self.stats.frames += 1;
        self.stats.bytes += f.len() as u64;
        Some(f)
    }

    /// Bytes queued.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_cap_is_enforced_and_counted() {
        let mut r = DaqRing::new(3000);
        assert!(r.push(vec![0; 1500]).is_ok());
        assert!(r.push(vec![0; 1500]).is_ok());
        assert_eq!(r.push(vec![0; 1]).unwrap_err().len(), 1, "3001 bytes > cap: given back");
        assert_eq!(r.stats.drops, 1);
        assert_eq!(r.stats.peak_bytes, 3000);
        assert_eq!(r.pop().map(|f| f.len()), Some(1500));
        assert!(r.push(vec![0; 1000]).is_ok(), "room again");
        assert_eq!((r.bytes(), r.stats.frames, r.stats.bytes), (2500, 1, 1500));
    }
}
