//! daqnet's lossless software switch ([LOSSLESS] §III): DRAM as packet buffer, a dedicated queue
//! — a *daqring* — per data collector, round-robin polling of the daqrings behind each egress
//! port for fairness, an optional per-poll burst limit, and egress pacing at the port's line
//! rate. Frames are dropped only when a daqring's byte cap is reached, and then counted.
//!
//! * [`config`]: what the switch is told: ports, forwarding table, collectors, limits.
//! * [`frame`]: the few header fields the switch reads (Ethernet destination, IPv4 destination).
//! * [`ring`]: one daqring, a FIFO bounded in bytes, with its statistics.
//! * [`pacer`]: a token bucket at the port's line rate.
//! * [`state`]: the sans-IO switch ([`SwitchState`]): frames in, frames out per port, no sockets, no clock.
//! * [`afpacket`] and [`run`]: the Linux side — one AF_PACKET socket per port with a
//!   TPACKET_V3 receive ring, batched sends, sleeping in `ppoll` when idle.

pub mod afpacket;
pub mod config;
pub mod frame;
pub mod pacer;
pub mod ring;
pub mod run;
pub mod state;

pub use config::SwitchConfig;
pub use state::SwitchState;
