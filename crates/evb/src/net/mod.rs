//! Connections between roles: the transports and the per-connection tasks.

pub mod greet;
pub mod link;
pub mod piece;
pub mod tcp_trace;
pub mod transport;
