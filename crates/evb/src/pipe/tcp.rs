//! The pipe's TCP mesh: one connection between every two nodes, each with a reader thread and
//! a writer thread, so that a node sending a megabyte to a peer never stops it reading what
//! that peer sends back (full duplex: every node is a readout unit and a builder unit at
//! once). Sockets are blocking and tuned as every daqnet TCP socket is
//! ([`tuned_socket`]: `TCP_NODELAY`, the scenario's congestion control).
//!
//! Node `i` connects to every node below it and accepts every node above it; each connection
//! opens with the connecting node's number and the run id, so a stray or stale peer is refused.
//! Hellos are read beside the accept loop, each within `deploy.peer_timeout_ms`
//! ([`crate::net::greet`]): a client that connects and says nothing, or half a hello, holds up
//! nobody.
//!
//! A peer whose connection ends before its goodbye is lost: on loopback or a LAN a killed
//! process's sockets are closed by its kernel at once, so peers notice within milliseconds. A
//! stopped or hung peer is lost too: every writer sends a heartbeat when it has had nothing to
//! send for `deploy.heartbeat_ms`, and a reader that hears nothing for `deploy.peer_timeout_ms`
//! gives its peer up and shuts the connection (which frees a writer blocked on it).

use super::{verify, Head, Kind, Mesh, MeshEvent, Outgoing, Wire, HEAD_BYTES};
use crate::net::greet::{accept_greeted, Greeted, Greeter, Refusals};
use crate::net::transport::tuned_socket;
use anyhow::{bail, Context};
use daqnet_core::NodeId;
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the threads tell the node's loop.
enum Inner {
    Event(MeshEvent),
    /// A reader ended: with its peer's goodbye, or not (the peer is lost).
    Gone {
        peer: NodeId,
        bye: bool,
    },
}

/// Node `me`'s connections to every other node.
pub struct TcpMesh {
    me: NodeId,
    rx: Receiver<Inner>,
    writers: Vec<Option<Sender<Wire>>>,
    readers: usize,
}

/// What every connection of a run shares.
#[derive(Clone)]
pub struct MeshConfig {
    /// The run id: a peer of another run is refused, a payload of another run fails its key.
    pub run_id: u64,
    /// The congestion control of every socket (`deploy.tcp_congestion`).
    pub congestion: String,
    /// Bytes of a pull request on the wire (`pipe.request_bytes`).
    pub request_bytes: u32,
    /// The filler of every payload ([`super::filler`]).
    pub fill: Arc<[u8]>,
    /// How long to wait for every peer to connect.
    pub startup: Duration,
    /// A writer with nothing to send sends a heartbeat this often (`deploy.heartbeat_ms`).
    pub heartbeat: Duration,
    /// A peer silent this long is lost (`deploy.peer_timeout_ms`); also a hello's deadline.
    pub peer_timeout: Duration,
}

/// A listening socket for a node, tuned before it listens, on `at` (port 0: a free one).
pub fn listen(at: SocketAddr, congestion: &str) -> anyhow::Result<TcpListener> {
    let s = tuned_socket(&at, congestion)?;
    s.set_reuse_address(true)?;
    s.bind(&at.into()).with_context(|| format!("cannot listen on {at}"))?;
    // Every node above this one connects at once.
    s.listen(1024)?;
    Ok(s.into())
}

impl TcpMesh {
    /// Connects node `me` to every node of `addrs` (node `k` listens at `addrs[k]`; this
    /// node's `listener` is at `addrs[me]`).
    pub fn connect(me: u32, listener: TcpListener, addrs: &[SocketAddr], cfg: &MeshConfig) -> anyhow::Result<TcpMesh> {
        let n = addrs.len();
        let mut streams: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        for (k, addr) in addrs.iter().enumerate().take(me as usize) {
            let s = tuned_socket(addr, &cfg.congestion)?;
            s.connect_timeout(&(*addr).into(), cfg.startup)
                .with_context(|| format!("node {me}: cannot reach node {k} at {addr}"))?;
            let mut s: TcpStream = s.into();
            let mut hello = [0u8; 12];
            hello[..4].copy_from_slice(&me.to_le_bytes());
            hello[4..].copy_from_slice(&cfg.run_id.to_le_bytes());
            s.write_all(&hello)?;
            streams[k] = Some(s);
        }
        accept_higher(me, &listener, &mut streams, cfg)?;
        let (tx, rx) = channel();
        let mut writers = Vec::with_capacity(n);
        let mut readers = 0;
        for (k, s) in streams.into_iter().enumerate() {
            let Some(s) = s else {
                writers.push(None);
                continue;
            };
            let peer = NodeId(k as u32);
            let (wtx, wrx) = channel();
            let w =
                Writer { me, peer, stream: s.try_clone()?, tx: tx.clone(), fill: cfg.fill.clone(), cfg: cfg.clone() };
            std::thread::Builder::new().name(format!("pipe-w{k}")).spawn(move || w.run(wrx))?;
            let (tx, cfg) = (tx.clone(), cfg.clone());
            std::thread::Builder::new().name(format!("pipe-r{k}")).spawn(move || read_peer(peer, s, &cfg, &tx))?;
            writers.push(Some(wtx));
            readers += 1;
        }
        Ok(TcpMesh { me: NodeId(me), rx, writers, readers })
    }
}

/// Accepts a connection from every node above `me`, each announcing itself with its number
/// and the run id.
fn accept_higher(
    me: u32,
    listener: &TcpListener,
    streams: &mut [Option<TcpStream>],
    cfg: &MeshConfig,
) -> anyhow::Result<()> {
    let n = streams.len() as u32;
    let mut missing = n - 1 - me;
    if missing == 0 {
        return Ok(());
    }
    let log = Refusals::new(format!("node {me}"));
    let greeter =
        Greeter { until: Instant::now() + cfg.startup, per_hello: cfg.peer_timeout, log: &log, alive: &|| {} };
    let r = accept_greeted(listener, &greeter, read_hello, |s, (k, run)| {
        if run != cfg.run_id {
            return Greeted::Refused(format!("node {k} of run {run}, not this run"));
        }
        if k <= me || k >= n || streams[k as usize].is_some() {
            return Greeted::Refused(format!("a connection announcing node {k}, which does not connect here now"));
        }
        streams[k as usize] = Some(s);
        missing -= 1;
        if missing == 0 {
            Greeted::Complete
        } else {
            Greeted::Kept
        }
    });
    if r.is_err() {
        bail!("node {me}: {missing} nodes above it did not connect within {:?}", cfg.startup);
    }
    Ok(())
}

/// A connecting node's hello: its number and the run id, 12 bytes.
fn read_hello(s: &mut TcpStream) -> io::Result<(u32, u64)> {
    let mut hello = [0u8; 12];
    s.read_exact(&mut hello)?;
    Ok((
        u32::from_le_bytes(hello[..4].try_into().expect("4 bytes")),
        u64::from_le_bytes(hello[4..].try_into().expect("8 bytes")),
    ))
}

/// Reads `peer`'s messages until its goodbye, the connection's end, or `cfg.peer_timeout` of
/// silence, verifying every payload.
fn read_peer(peer: NodeId, s: TcpStream, cfg: &MeshConfig, tx: &Sender<Inner>) {
    let shut = s.try_clone();
    if s.set_read_timeout(Some(cfg.peer_timeout)).is_err() {
        let _ = tx.send(Inner::Gone { peer, bye: false });
        return;
    }
    let mut r = BufReader::with_capacity(256 << 10, s);
    let mut body = Vec::new();
    let silent = |e: &io::Error| matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut);
    let bye = loop {
        let mut h = [0u8; HEAD_BYTES];
        if let Err(e) = r.read_exact(&mut h).and_then(|()| {
            let head = Head::decode(&h)?;
            if !(head.len_ok() && head.from == peer.0) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a broken message header"));
            }
            body.resize(head.len as usize, 0);
            r.read_exact(&mut body)
        }) {
            if silent(&e) {
                eprintln!(
                    "node {peer} was silent for {} ms (deploy.peer_timeout_ms): given up",
                    cfg.peer_timeout.as_millis()
                );
            } else if e.kind() == io::ErrorKind::InvalidData {
                eprintln!("node {peer} sent a broken message header; dropping its connection");
            }
            break false;
        }
        let head = Head::decode(&h).expect("decoded above");
        if head.kind == Kind::Heartbeat {
            continue;
        }
        let ev = match head.wire(&body) {
            Some(Wire::Bye) => break true,
            Some(Wire::Tally(t)) => MeshEvent::Tally(t),
            Some(Wire::Msg(msg)) => {
                MeshEvent::Msg { from: peer, msg, intact: head.key(cfg.run_id).is_none_or(|k| verify(&body, &k)) }
            }
            None => break false,
        };
        if tx.send(Inner::Event(ev)).is_err() {
            return;
        }
    };
    if !bye {
        // A writer blocked on a peer that stopped reading returns.
        if let Ok(s) = shut {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
    let _ = tx.send(Inner::Gone { peer, bye });
}

/// Writes the messages queued for one peer.
struct Writer {
    me: u32,
    peer: NodeId,
    stream: TcpStream,
    tx: Sender<Inner>,
    fill: Arc<[u8]>,
    cfg: MeshConfig,
}

impl Writer {
    fn run(mut self, rx: Receiver<Wire>) {
        loop {
            let w = match rx.recv_timeout(self.cfg.heartbeat) {
                Ok(w) => w,
                Err(RecvTimeoutError::Timeout) => {
                    let beat = Head { kind: Kind::Heartbeat, from: self.me, a: 0, b: 0, len: 0 };
                    if self.stream.write_all(&beat.encode()).is_err() {
                        return;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if self.write(&w).is_err() {
                // The reader of this connection notices the peer gone.
                return;
            }
            match w {
                Wire::Msg(msg) => {
                    let _ = self.tx.send(Inner::Event(MeshEvent::Sent { to: self.peer, msg }));
                }
                Wire::Bye => {
                    let _ = self.stream.shutdown(Shutdown::Write);
                    return;
                }
                Wire::Tally(_) => {}
            }
        }
    }

    /// One message: its header, then its body — a verified payload as key, filler, key.
    fn write(&mut self, w: &Wire) -> io::Result<()> {
        let o = Outgoing::of(w, self.me, self.cfg.request_bytes, self.cfg.run_id);
        let h = o.head.encode();
        let len = o.head.len as usize;
        let mut parts: Vec<IoSlice> = vec![IoSlice::new(&h)];
        match &o.key {
            Some(k) => parts.extend([IoSlice::new(k), IoSlice::new(&self.fill[..len - 2 * k.len()]), IoSlice::new(k)]),
            None if !o.tally.is_empty() => parts.push(IoSlice::new(&o.tally)),
            None => parts.push(IoSlice::new(&self.fill[..len])),
        }
        write_all_vectored(&mut self.stream, &mut parts)
    }
}

fn write_all_vectored(s: &mut TcpStream, mut parts: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match s.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Mesh for TcpMesh {
    fn me(&self) -> NodeId {
        self.me
    }

    fn send(&mut self, to: NodeId, w: Wire) {
        if let Some(Some(tx)) = self.writers.get(to.index()) {
            // A writer that ended has lost its peer: the reader says so.
            let _ = tx.send(w);
        }
    }

    fn next(&mut self, wait: Duration) -> Option<MeshEvent> {
        let until = Instant::now() + wait;
        loop {
            match self.rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Inner::Event(ev)) => return Some(ev),
                Ok(Inner::Gone { peer, bye }) => {
                    self.readers -= 1;
                    // A peer that said goodbye still gets ours, when this node closes.
                    if !bye {
                        self.writers[peer.index()] = None;
                        return Some(MeshEvent::Lost(peer));
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    fn close(&mut self, wait: Duration) {
        for tx in self.writers.iter_mut().filter_map(Option::take) {
            let _ = tx.send(Wire::Bye);
        }
        let until = Instant::now() + wait;
        while self.readers > 0 && Instant::now() < until {
            if let Ok(Inner::Gone { .. }) = self.rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                self.readers -= 1;
            }
        }
    }

    fn name(&self) -> &'static str {
        "tcp"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::pipe::PipeMsg;
    use daqnet_core::EventId;

    /// Node 0 of two, with node 1 played by hand (`write`): what node 0's loop hears.
    fn node0_hears(write: impl FnOnce(&mut TcpStream) + Send + 'static) -> Vec<MeshEvent> {
        node0_hears_after(|_| Vec::new(), write, Duration::from_millis(500))
    }

    /// As [`node0_hears`], with `strays` connecting to node 0 before node 1 (kept open while
    /// node 1 joins), until nothing is heard for `quiet`.
    fn node0_hears_after(
        strays: impl FnOnce(SocketAddr) -> Vec<TcpStream>,
        write: impl FnOnce(&mut TcpStream) + Send + 'static,
        quiet: Duration,
    ) -> Vec<MeshEvent> {
        let cfg = MeshConfig {
            run_id: 77,
            congestion: "reno".into(),
            request_bytes: 64,
            fill: vec![7u8; 64].into(),
            startup: Duration::from_secs(5),
            heartbeat: Duration::from_millis(200),
            peer_timeout: Duration::from_secs(1),
        };
        let l = listen("127.0.0.1:0".parse().unwrap(), &cfg.congestion).unwrap();
        let at = l.local_addr().unwrap();
        let held = strays(at);
        let peer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(at).unwrap();
            let mut hello = [0u8; 12];
            hello[..4].copy_from_slice(&1u32.to_le_bytes());
            hello[4..].copy_from_slice(&77u64.to_le_bytes());
            s.write_all(&hello).unwrap();
            write(&mut s);
        });
        let mut mesh = TcpMesh::connect(0, l, &[at, at], &cfg).unwrap();
        peer.join().unwrap();
        drop(held);
        std::iter::from_fn(|| mesh.next(quiet)).collect()
    }

    fn fragment(s: &mut TcpStream, event: u64, key_run: u64) {
        let w = Wire::Msg(PipeMsg::Fragment { event: EventId(event), bytes: 32 });
        let head = Head::of(&w, 1, 32);
        let key = Head::of(&w, 1, 32).key(key_run).unwrap();
        let mut body = vec![9u8; 32];
        body[..8].copy_from_slice(&key);
        body[24..].copy_from_slice(&key);
        s.write_all(&head.encode()).unwrap();
        s.write_all(&body).unwrap();
    }

    #[test]
    fn every_payload_is_verified_and_a_goodbye_is_not_a_loss() {
        let heard = node0_hears(|s| {
            fragment(s, 5, 77);
            fragment(s, 6, 78); // another run's key
            s.write_all(&Head::of(&Wire::Bye, 1, 0).encode()).unwrap();
        });
        let msg = |event, intact| MeshEvent::Msg {
            from: NodeId(1),
            msg: PipeMsg::Fragment { event: EventId(event), bytes: 32 },
            intact,
        };
        assert_eq!(heard, vec![msg(5, true), msg(6, false)]);
    }

    /// Start-up strays — a connection that closes at once, one that sends 5 bytes, one that
    /// idles, another run's hello — are refused while node 1 joins: node 0 starts within its
    /// hello deadline (1 s), not at the start-up deadline, and hears node 1.
    #[test]
    fn strays_at_start_up_are_refused_and_the_mesh_forms() {
        let start = Instant::now();
        let heard = node0_hears_after(
            |at| {
                drop(TcpStream::connect(at).unwrap());
                let mut five = TcpStream::connect(at).unwrap();
                five.write_all(&[1, 2, 3, 4, 5]).unwrap();
                let idle = TcpStream::connect(at).unwrap();
                let mut other = TcpStream::connect(at).unwrap();
                let mut hello = [0u8; 12];
                hello[..4].copy_from_slice(&1u32.to_le_bytes());
                hello[4..].copy_from_slice(&78u64.to_le_bytes());
                other.write_all(&hello).unwrap();
                vec![five, idle, other]
            },
            |s| {
                fragment(s, 5, 77);
                s.write_all(&Head::of(&Wire::Bye, 1, 0).encode()).unwrap();
            },
            Duration::from_millis(500),
        );
        let msg =
            MeshEvent::Msg { from: NodeId(1), msg: PipeMsg::Fragment { event: EventId(5), bytes: 32 }, intact: true };
        assert_eq!(heard, vec![msg]);
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    }

    /// A peer that joins and then falls silent (stopped) is lost after the peer timeout.
    #[test]
    fn a_silent_peer_is_lost_after_the_peer_timeout() {
        let start = Instant::now();
        let heard = node0_hears_after(
            |_| Vec::new(),
            |s| {
                fragment(s, 5, 77);
                // Keep the connection open for good and say nothing, as a stopped process would.
                std::mem::forget(s.try_clone().unwrap());
            },
            Duration::from_secs(2),
        );
        assert_eq!(heard.last(), Some(&MeshEvent::Lost(NodeId(1))), "{heard:?}");
        let took = start.elapsed();
        assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(3), "{took:?}");
    }

    #[test]
    fn a_connection_that_ends_without_a_goodbye_is_a_lost_node() {
        let heard = node0_hears(|s| {
            fragment(s, 5, 77);
            // A header announcing more body than comes, then the end: the process died.
            let w = Wire::Msg(PipeMsg::Fragment { event: EventId(6), bytes: 32 });
            s.write_all(&Head::of(&w, 1, 32).encode()).unwrap();
        });
        assert_eq!(heard.len(), 2, "{heard:?}");
        assert_eq!(heard[1], MeshEvent::Lost(NodeId(1)));
    }
}
