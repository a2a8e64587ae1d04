//! daqnet-study: sweeps over scenario fields (`--vary`), their result tables, plots, and the
//! study files that turn the source documents' figures into one command each.
//!
//! Substrate-agnostic: a sweep runs points through a runner closure, so the simulator, the real
//! event builder and the testbed all sweep the same way.

pub mod capture;
pub mod columnar;
pub mod compare;
pub mod plot;
pub mod points;
pub mod study;
pub mod sweep;
pub mod table;
pub mod trajectory;
pub mod vary;
pub mod verdict;
