//! daqnet-conform: the simulator's TCP model held to Linux's own packetdrill scripts.
//!
//! packetdrill (GPL-2.0, read from `../shared/packetdrill` or `PACKETDRILL_DIR`, never copied
//! here) scripts a single TCP connection: system calls on the socket under test, segments
//! injected into it (`<`) and segments it must send (`>`), each at a time with a tolerance, and
//! Python assertions on its `tcp_info`. This crate reads such scripts:
//!
//! - [`script`]: a script as its options and timed events, each with its line;
//! - [`packet`]: a TCP segment line (`< . 1:1(0) ack 1001 win 257 <sack 1001:2001,nop,nop>`);
//! - [`kernel`]: packetdrill built from its sources and run on the live kernel, one network
//!   namespace per run;
//! - [`model`]: a script against the simulator's TCP endpoint on a virtual clock (passive or
//!   active open, writes and reads, injected ACKs, SACKs and data, timers, FIN after the data
//!   is acknowledged, `tcp_info`).
//!
//! The project's own scripts are in `crates/conform/scripts/`, each naming the kernel function
//! it pins; `tests/kernel.rs` proves every one on this kernel, five runs out of five, and
//! `tests/public_scripts.rs` holds the model to each, and to the public scripts as
//! `public-outcomes.txt` lists them. Not modelled: RST, a FIN on data, the peer closing first,
//! the peer's receive window, ECN.

pub mod kernel;
pub mod model;
pub mod packet;
pub mod script;

pub use packet::{Direction, Segment, TcpOption};
pub use script::{Action, Event, Script, Time};

/// The packetdrill scripts (`*.pkt`) in `dir`, sorted by name.
pub fn scripts_in(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut v = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "pkt") {
            v.push(path);
        }
    }
    v.sort();
    Ok(v)
}

/// A script line that cannot be read: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ParseError {
    /// 1-based line of the script.
    pub line: usize,
    /// What is wrong, and what was expected.
    pub what: String,
}
