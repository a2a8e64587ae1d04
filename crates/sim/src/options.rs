//! What a simulation is asked to do beside its scenario, and what it gives back: shared by the
//! event builder, the sub-farm and DAQPIPE.

use crate::faults::FaultPlan;
use daqnet_core::report::{EventRecord, RunReport};
use daqnet_core::{NodeId, ReadoutId};
use std::sync::atomic::AtomicBool;

/// Drop one data segment on purpose (fault injection for tests and what-if studies): the
/// `data_segment`-th original (not retransmitted) data segment readout unit `readout` sends to
/// node `node`, counted from 0 over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRule {
    /// Sending readout unit.
    pub readout: ReadoutId,
    /// Receiving node.
    pub node: NodeId,
    /// Index of the original data segment on that connection.
    pub data_segment: u64,
}

/// Options of one simulation run.
#[derive(Default)]
pub struct SimOptions<'a> {
    /// Called as events are built with (events built, events to build).
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// Segments to drop on purpose.
    pub drops: Vec<DropRule>,
    /// Keep a record per event (for the per-event CSV).
    pub record_events: bool,
    /// Stop early once this is set (Ctrl-C): the report covers what was simulated and says
    /// `interrupted`.
    pub stop: Option<&'a AtomicBool>,
    /// Fabric elements to take down during the run (parallel leaf-spine scenarios only; the
    /// caller checks the topology and the elements).
    pub faults: Vec<FaultPlan>,
    /// Time series to record, and where they go (checked by the caller with
    /// [`crate::trace_targets`]).
    pub trace: Option<crate::main_loop::Tracing<'a>>,
    /// Ports whose frames to capture, and where they go (checked like `trace`).
    pub capture: Option<crate::main_loop::Capturing<'a>>,
}

impl SimOptions<'_> {
    /// `built` of `total` events are built: tells the progress callback, at about every
    /// 200th of the run and at its end.
    pub(crate) fn on_built(&mut self, built: u64, total: u64) {
        if built.is_multiple_of((total / 200).max(1)) || built == total {
            if let Some(p) = self.progress.as_mut() {
                p(built, total);
            }
        }
    }
}

/// What a simulation produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// The run report.
    pub report: RunReport,
    /// Per-event records (empty unless requested).
    pub events: Vec<EventRecord>,
}
