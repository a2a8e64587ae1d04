//! daqnet-core: the part of daqnet that every substrate shares.
//!
//! * [`scenario`]: the TOML scenario schema (`[system]`, `[network]`, `[run]`), loading with
//!   `--set` overrides, and validation with errors that name the file, the field and the value.
//! * [`ids`]: newtype identifiers and the [`Layout`] that owns the arithmetic between them.
//! * [`dataflow`]: the sans-IO state machines of an event-building system ([`dataflow::ReadoutUnit`],
//!   [`dataflow::Node`] — a [`dataflow::Collector`] with its [`dataflow::CreditPool`] and the
//!   node's [`dataflow::ProcessingUnit`]s — and the [`dataflow::Supervisor`] with its assignment
//!   policies). They do no I/O and read no clock: a driver feeds them inputs (with the current
//!   time where it matters) and carries out their outputs.
//! * [`farm`]: the sans-IO state machines of an LHCb sub-farm: the [`farm::Dispatcher`] (the
//!   sub-farm controller with its event queue and token queue) and the [`farm::Worker`].
//! * [`pipe`]: DAQPIPE's event building: the [`pipe::EventManager`] and the
//!   [`pipe::BuilderUnit`] with its bounded number of parallel pulls.
//! * [`workload`]: fragment-size laws and the deterministic per-event choices that every substrate
//!   must make identically.
//! * [`report`]: the run report every substrate writes (`report.json`), and [`report::Measure`],
//!   the one definition of latency, rates and per-event rows every substrate uses.

pub mod dataflow;
pub mod farm;
pub mod ids;
pub mod output;
pub mod pipe;
pub mod report;
pub mod scenario;
pub mod trace;
pub mod units;
pub mod workload;

pub use ids::{ConnId, EventId, Layout, Nanos, NodeId, PuId, ReadoutId, Side, WorkerId, NS_PER_MS, NS_PER_S};
pub use scenario::Scenario;
