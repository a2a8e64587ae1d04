//! daqnet-sim: a deterministic packet-level simulator of DAQ event-building networks.
//!
//! * [`engine`]: the event queue (integer nanoseconds, ties in insertion order).
//! * [`net`]: Ethernet framing, output-queued switch ports with dedicated, shared and deep
//!   buffers, live from the scenario's network plan (`daqnet_fabric::network`).
//! * [`tcp`]: the TCP model (Linux as reference).
//! * [`sockets`]: TCP connections between the network's hosts carrying application messages,
//!   the one layer every simulated dataflow runs over.
//! * [`main_loop`]: the run loop every dataflow shares (pop, trace, dispatch), and the
//!   [`main_loop::Dataflow`] trait a dataflow implements for it.
//! * [`farm`]: the LHCb sub-farm (`core`'s dispatcher and workers) over the same layers.
//! * [`pipe`]: DAQPIPE's event building (event manager, builder units) over the same layers.
//! * [`trace`]: time series of chosen ports and TCP senders during a run.
//! * [`faults`]: fabric elements failing mid-run, and the fabric controller's answer.
//! * [`event_builder`]: the ATLAS event builder (`core`'s dataflow state machines) driven over
//!   all of that; [`options`]: what a simulation is asked and gives back; [`simulate`] runs a
//!   scenario (event builder, sub-farm or DAQPIPE) and returns its
//!   [`daqnet_core::report::RunReport`].

pub mod engine;
pub mod event_builder;
pub mod farm;
pub mod faults;
pub mod main_loop;
mod memory;
pub mod net;
pub mod options;
pub mod pipe;
mod prefetch;
pub mod rc;
pub mod sockets;
pub mod tcp;
pub mod trace;

pub use faults::FaultPlan;
pub use memory::{memory_estimate, MemoryEstimate};
pub use options::{DropRule, SimOptions, SimOutput};

use daqnet_core::Scenario;

/// The ports and TCP senders a trace of `scenario` can select (as [`simulate`] will build
/// them); check a [`trace::TraceSpec`] against them with [`trace::TraceSpec::resolve`] before
/// the run.
pub fn trace_targets(scenario: &Scenario) -> trace::Targets {
    if scenario.farm.is_some() {
        farm::targets(scenario)
    } else if scenario.pipe.is_some() {
        pipe::targets(scenario)
    } else {
        event_builder::targets(scenario)
    }
}

/// Simulates `scenario` (already validated, defaults filled in): the sub-farm of its `[farm]`
/// section or the DAQPIPE builder of its `[pipe]` section if it has one, otherwise the event
/// builder of `[system]`. `origin` names it in the
/// report.
pub fn simulate(scenario: &Scenario, origin: &str, opts: SimOptions) -> SimOutput {
    if scenario.farm.is_some() {
        farm::simulate(scenario, origin, opts)
    } else if scenario.pipe.is_some() {
        pipe::simulate(scenario, origin, opts)
    } else {
        let mut out = event_builder::simulate(scenario, origin, opts);
        if let Some(plan) = daqnet_fabric::report_stats(scenario) {
            let faults = out.report.fabric.take().map(|f| f.faults).unwrap_or_default();
            out.report.fabric = Some(daqnet_core::report::FabricStats { faults, ..plan });
        }
        out
    }
}
