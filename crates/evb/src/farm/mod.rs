//! The LHCb sub-farm for real ([LHCB-SUBFARM]: Neufeld and Thannhaeuser, LHCb 2002-049): the SFC
//! ([`sfc`]) and its workers ([`worker`]) as processes over TCP, driving the `core` farm state
//! machines.
//!
//! The three SFC implementations of the note are three code paths, with the note's threads:
//! version 1 has an event-generator thread, a token thread that waits on every worker's
//! connection at once and a forwarding thread, sharing the dispatcher (event queue and token
//! queue) under one mutex; version 2 has one thread per worker that sends a new event whenever
//! its worker's token arrives; version 3 has one thread per worker streaming events with no
//! tokens. Sockets are blocking, as the note's were: a send that does not fit the socket's
//! buffers blocks its thread, which is the back-pressure round-robin dispatch depends on.
//!
//! On the wire every message starts with a 28-byte head ([`Head`]); the note's token is exactly
//! that head, and an accepted event's output follows it.
//!
//! Liveness, as the event builder's roles have it (the note has none): each side sends a
//! heartbeat head every `deploy.heartbeat_ms`, from a thread of its own, so a worker asleep in
//! an event still beats; a side that hears nothing from the other for `deploy.peer_timeout_ms`
//! declares it hung. The SFC then loses the worker (its events are lost, the run goes on with
//! the others, the report names it); a worker ends with an error.

pub mod sfc;
pub mod worker;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// Bytes of a message head, and of a token without output ([LHCB-SUBFARM] §2.3.2.1: 28 bytes).
pub const HEAD_BYTES: usize = 28;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Worker -> SFC, first: `worker` names it, `extra` is the run id.
    Hello = 1,
    /// SFC -> worker: an event of `len` bytes.
    Event = 2,
    /// Worker -> SFC: ready for another event; the verdict on `event` (`u64::MAX`: none) and
    /// `len` bytes of accepted output follow.
    Token = 3,
    /// SFC -> worker: the run is over; answer with `Bye` once every event sent is processed.
    Stop = 4,
    /// Worker -> SFC, last: `event` is the number of events processed, `extra` the time spent
    /// processing them in µs.
    Bye = 5,
    /// Either way, when nothing else was sent for `deploy.heartbeat_ms`: the sender is alive.
    Heartbeat = 6,
}

/// The head of every message, 28 bytes little-endian: kind (1), accepted (1), padding (2),
/// worker (4), event (8), len (4), extra (8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// What the message is.
    pub kind: Kind,
    /// (token) The event was accepted.
    pub accepted: bool,
    /// The worker it comes from or goes to.
    pub worker: u32,
    /// The event (or a count, see [`Kind`]).
    pub event: u64,
    /// Bytes following the head.
    pub len: u32,
    /// Kind-specific (see [`Kind`]).
    pub extra: u64,
}

/// A token's `event` when it carries no verdict.
pub const NO_EVENT: u64 = u64::MAX;

impl Head {
    /// A head of `kind` with every other field zero.
    pub fn new(kind: Kind) -> Head {
        Head { kind, accepted: false, worker: 0, event: 0, len: 0, extra: 0 }
    }

    fn encode(&self) -> [u8; HEAD_BYTES] {
        let mut b = [0u8; HEAD_BYTES];
        b[0] = self.kind as u8;
        b[1] = self.accepted as u8;
        b[4..8].copy_from_slice(&self.worker.to_le_bytes());
        b[8..16].copy_from_slice(&self.event.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b[20..28].copy_from_slice(&self.extra.to_le_bytes());
        b
    }

    fn decode(b: &[u8; HEAD_BYTES]) -> io::Result<Head> {
        let kind = match b[0] {
            1 => Kind::Hello,
            2 => Kind::Event,
            3 => Kind::Token,
            4 => Kind::Stop,
            5 => Kind::Bye,
            6 => Kind::Heartbeat,
            k => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unknown message kind {k}"))),
        };
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Ok(Head { kind, accepted: b[1] != 0, worker: u32_at(4), event: u64_at(8), len: u32_at(16), extra: u64_at(20) })
    }
}

/// Largest body accepted after a head: a bigger `len` is a broken peer, not an allocation.
pub const MAX_BODY: u32 = 64 << 20;

/// Reads one message: its head, and its body into `body` (resized to `len`).
pub fn read_msg(s: &mut TcpStream, body: &mut Vec<u8>) -> io::Result<Head> {
    let mut b = [0u8; HEAD_BYTES];
    s.read_exact(&mut b)?;
    let head = Head::decode(&b)?;
    if head.len > MAX_BODY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a {}-byte message body", head.len)));
    }
    body.resize(head.len as usize, 0);
    s.read_exact(body)?;
    Ok(head)
}

/// Reads a worker's hello: a head of kind `Hello` with no body (a stray announcing a body is
/// refused before any of it is read).
pub fn read_hello(s: &mut TcpStream) -> io::Result<Head> {
    let mut b = [0u8; HEAD_BYTES];
    s.read_exact(&mut b)?;
    let head = Head::decode(&b)?;
    if head.kind != Kind::Hello || head.len != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("it opened with {head:?}, not a hello")));
    }
    Ok(head)
}

/// Writes one message: `head` (its `len` set to the body's) and `body`.
pub fn write_msg(s: &mut TcpStream, mut head: Head, body: &[u8]) -> io::Result<()> {
    head.len = body.len() as u32;
    s.write_all(&head.encode())?;
    s.write_all(body)
}

/// The key an event's payload starts with: the event number mixed with the run id, so a
/// worker can tell an event's payload from another event's or another run's.
pub fn payload_key(run_id: u64, event: u64) -> u64 {
    daqnet_core::workload::mix(run_id ^ daqnet_core::workload::mix(event))
}

/// Nanoseconds since `start`.
fn since(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_28_bytes_and_decodes_to_itself() {
        let h = Head { kind: Kind::Token, accepted: true, worker: 7, event: 1 << 40, len: 64_000, extra: 9 };
        assert_eq!(h.encode().len(), 28);
        assert_eq!(Head::decode(&h.encode()).unwrap(), h);
        let mut bad = h.encode();
        bad[0] = 9;
        assert!(Head::decode(&bad).is_err());
    }
}
