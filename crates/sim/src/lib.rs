//! daqnet-sim: a deterministic packet-level simulator of DAQ event-building networks.
//!
//! * [`engine`]: the event queue (integer nanoseconds, ties in insertion order).
//! * [`net`]: Ethernet framing, output-queued switch ports with dedicated, shared and deep
//!   buffers, and the fabric built from a scenario.
//! * [`tcp`]: the TCP model (Linux as reference).
//! * [`world`]: the `core` dataflow state machines driven over all of that; [`simulate`] runs a
//!   scenario and returns its [`daqnet_core::report::RunReport`].

pub mod engine;
pub mod net;
pub mod tcp;
pub mod world;

pub use world::{simulate, DropRule, SimOptions, SimOutput};
