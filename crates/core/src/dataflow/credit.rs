//! The traffic-shaping credit pool of one node ([ATLAS-DC] §3.3).

use crate::scenario::Credits;

/// Credits of one node: each outstanding requested fragment holds one.
#[derive(Debug, Clone)]
pub struct CreditPool {
    capacity: Option<u32>,
    in_use: u32,
    peak_in_use: u32,
}

/// Returning more credits than are in use: a bookkeeping bug or a duplicated response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{returned} credits returned but only {in_use} in use")]
pub struct CreditError {
    /// Credits being returned.
    pub returned: u32,
    /// Credits that were in use.
    pub in_use: u32,
}

impl CreditPool {
    /// A pool with the given number of credits.
    pub fn new(credits: Credits) -> Self {
        let capacity = match credits {
            Credits::Limited(n) => Some(n),
            Credits::Unlimited => None,
        };
        CreditPool { capacity, in_use: 0, peak_in_use: 0 }
    }

    /// Takes `n` credits if that many are free; returns whether it did.
    pub fn try_take(&mut self, n: u32) -> bool {
        match self.capacity {
            Some(cap) if self.in_use + n > cap => false,
            _ => {
                self.in_use += n;
                self.peak_in_use = self.peak_in_use.max(self.in_use);
                true
            }
        }
    }

    /// Returns `n` credits.
    pub fn give_back(&mut self, n: u32) -> Result<(), CreditError> {
        if n > self.in_use {
            return Err(CreditError { returned: n, in_use: self.in_use });
        }
        self.in_use -= n;
        Ok(())
    }

    /// Credits currently held by outstanding requests.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Most credits ever held at once.
    pub fn peak_in_use(&self) -> u32 {
        self.peak_in_use
    }

    /// Total credits, `None` when unlimited.
    pub fn capacity(&self) -> Option<u32> {
        self.capacity
    }
}
