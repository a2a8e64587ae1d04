//! daqnet-conform: the simulator's TCP model held to Linux's own packetdrill scripts.
//!
//! packetdrill (GPL-2.0, read from `../shared/packetdrill` or `PACKETDRILL_DIR`, never copied
//! here) scripts a single TCP connection: system calls on the socket under test, segments
//! injected into it (`<`) and segments it must send (`>`), each at a time with a tolerance, and
//! Python assertions on its `tcp_info`. This crate reads such scripts:
//!
//! - [`script`]: a script as its options and timed events, each with its line;
//! - [`packet`]: a TCP segment line (`< . 1:1(0) ack 1001 win 257 <sack 1001:2001,nop,nop>`).
//!
//! Nothing here runs a script yet: the runner against the model and the live-kernel test come
//! next (`daqnet conform`).

pub mod packet;
pub mod script;

pub use packet::{Direction, Segment, TcpOption};
pub use script::{Action, Event, Script, Time};

/// A script line that cannot be read: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ParseError {
    /// 1-based line of the script.
    pub line: usize,
    /// What is wrong, and what was expected.
    pub what: String,
}
