//! Sans-IO state machines of the event-building dataflow (seed 003 §2–3, DESIGN.md).
//!
//! None of them does I/O or reads a clock. A driver (the simulator, the real runtime, the
//! testbed) feeds them inputs — with the current time where a delay is involved — and carries
//! out what they ask: send a message, set a timer. The same code therefore runs under simulated
//! and real time, which is what makes a simulated result comparable with a measured one.

mod collector;
mod credit;
mod messages;
mod processing;
mod readout;
mod supervisor;

pub use collector::{Collector, CollectorError, CollectorOutput};
pub use credit::{CreditError, CreditPool};
pub use messages::{Assignment, DataRequest, DataResponse};
pub use processing::{ProcessingUnit, PuOutput, PuState};
pub use readout::ReadoutUnit;
pub use supervisor::{startup_order, Supervisor};
