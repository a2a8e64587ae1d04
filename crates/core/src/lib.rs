//! daqnet-core: the part of daqnet that every substrate shares.
//!
//! * [`scenario`]: the TOML scenario schema (`[system]`, `[network]`, `[run]`), loading with
//!   `--set` overrides, and validation with errors that name the file, the field and the value.
//! * [`dataflow`]: the sans-IO state machines of an event-building system ([`dataflow::ReadoutUnit`],
//!   [`dataflow::Collector`] with its [`dataflow::CreditPool`], [`dataflow::ProcessingUnit`],
//!   [`dataflow::Supervisor`] and its assignment policies). They do no I/O and read no clock:
//!   a driver feeds them inputs (with the current time where it matters) and carries out their outputs.
//! * [`workload`]: fragment-size laws and the deterministic per-event choices that every substrate
//!   must make identically.
//! * [`report`]: the run report every substrate writes (`report.json`) and its statistics.

pub mod dataflow;
pub mod ids;
pub mod report;
pub mod scenario;
pub mod units;
pub mod workload;

pub use ids::{EventId, Nanos, NodeId, PuId, ReadoutId, NS_PER_MS, NS_PER_S};
pub use scenario::Scenario;
