//! Identifiers and the time unit shared by all substrates.

/// Time in integer nanoseconds (simulated or wall-clock, depending on the substrate).
pub type Nanos = u64;

/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

/// A collision event, numbered from 0 in assignment order.
pub type EventId = u64;

/// A readout unit (readout system, ROS), numbered from 0.
pub type ReadoutId = u32;

/// A worker node (one collector each), numbered from 0.
pub type NodeId = u32;

/// A processing unit, numbered globally from 0; the units of node `n` are
/// `n * pus_per_node .. (n + 1) * pus_per_node` (units of one node are consecutive).
pub type PuId = u32;
