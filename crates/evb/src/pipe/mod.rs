//! `daqnet pipe` for real: DAQPIPE's nodes ([LHCB-DAQPIPE]: Valat et al., IEEE TNS 2017) as
//! processes, each driving one `core` [`PipeNode`] over a [`Mesh`] — TCP ([`tcp`]) or, with
//! the `mpi` feature, MPI.
//!
//! Why a mesh of messages rather than the byte-stream transport of the ATLAS roles: MPI moves
//! messages between ranks, not streams between addresses, and DAQPIPE is written against
//! exactly that (its drivers are MPI, verbs, libfabric, TCP). So a pipe transport sends a
//! [`PipeMsg`] to a node and reports, as events, what arrived, what has been handed over, and
//! which peer is gone.
//!
//! Every fragment and data message is verified: its payload starts and ends with a key mixed
//! from the run, the message's number and its sender, and its length is the one its header
//! announces, so a payload cut short, shifted, misrouted or from another run is counted bad.
//!
//! Node 0 hosts the event manager and writes the report: when its part is over it collects
//! every other live node's [`NodeTally`].

pub mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod mpirun;
pub mod tcp;

use anyhow::{bail, Context};
use daqnet_core::pipe::{NodeTally, PipeMsg, PipeNode, PipeRoles};
use daqnet_core::report::{steady_rate, FaultRecord, LostNode, Measure, NotBuilt, PipeStats, RunReport, Spread, Track};
use daqnet_core::scenario::{Pipe, PipePattern};
use daqnet_core::{EventId, Nanos, NodeId, PuId, Scenario, NS_PER_S};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Bytes of every message's header.
pub const HEAD_BYTES: usize = 32;

/// Bytes of the key at each end of a verified payload.
const KEY_BYTES: usize = 8;

/// The smallest fragment or data message a real run sends: room for both keys.
pub const MIN_PAYLOAD: u64 = 2 * KEY_BYTES as u64;

/// Largest tally body accepted: a bigger one is a broken peer, not an allocation.
const MAX_TALLY: u64 = 1 << 20;

/// What goes over a mesh: a node's message, a node's tally for node 0, or a goodbye.
#[derive(Debug, Clone, PartialEq)]
pub enum Wire {
    /// A dataflow message.
    Msg(PipeMsg),
    /// A node's counts, to node 0, once its part is over.
    Tally(NodeTally),
    /// The last thing a node sends a peer: its connection closing after this is not a fault.
    Bye,
}

/// What a message is, on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Assign = 1,
    Built,
    Pull,
    Fragment,
    Data,
    Extra,
    Stop,
    Tally,
    Bye,
    /// (TCP) Nothing else was sent for `deploy.heartbeat_ms`: the sender is alive.
    Heartbeat,
}

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::Assign,
        Kind::Built,
        Kind::Pull,
        Kind::Fragment,
        Kind::Data,
        Kind::Extra,
        Kind::Stop,
        Kind::Tally,
        Kind::Bye,
        Kind::Heartbeat,
    ];

    fn of(b: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u8 == b)
    }
}

/// A message's header: kind, sender, two fields, and the length of the body after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    kind: Kind,
    /// The node that sent it.
    pub from: u32,
    a: u64,
    b: u64,
    /// Bytes of body after the header.
    pub len: u64,
}

impl Head {
    /// The header of `w` from node `from`, with the body length `pipe` gives it.
    pub fn of(w: &Wire, from: u32, body: u64) -> Head {
        let (kind, a, b) = match w {
            Wire::Msg(m) => match *m {
                PipeMsg::Assign { event } => (Kind::Assign, event.0, 0),
                PipeMsg::Built { event, missing } => (Kind::Built, event.0, missing as u64),
                PipeMsg::Pull { event } => (Kind::Pull, event.0, 0),
                PipeMsg::Fragment { event, bytes } => (Kind::Fragment, event.0, bytes),
                PipeMsg::Data { seq, bytes } => (Kind::Data, seq, bytes),
                PipeMsg::Extra { bytes } => (Kind::Extra, 0, bytes),
                PipeMsg::Stop => (Kind::Stop, 0, 0),
            },
            Wire::Tally(_) => (Kind::Tally, 0, 0),
            Wire::Bye => (Kind::Bye, 0, 0),
        };
        Head { kind, from, a, b, len: body }
    }

    /// The header as 32 little-endian bytes: kind (1), padding (3), from (4), a (8), b (8),
    /// len (8).
    pub fn encode(&self) -> [u8; HEAD_BYTES] {
        let mut h = [0u8; HEAD_BYTES];
        h[0] = self.kind as u8;
        h[4..8].copy_from_slice(&self.from.to_le_bytes());
        h[8..16].copy_from_slice(&self.a.to_le_bytes());
        h[16..24].copy_from_slice(&self.b.to_le_bytes());
        h[24..32].copy_from_slice(&self.len.to_le_bytes());
        h
    }

    /// Decodes a header; an unknown kind is an error.
    pub fn decode(h: &[u8; HEAD_BYTES]) -> io::Result<Head> {
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        let Some(kind) = Kind::of(h[0]) else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unknown message kind {}", h[0])));
        };
        let from = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
        Ok(Head { kind, from, a: u64_at(8), b: u64_at(16), len: u64_at(24) })
    }

    /// The message this header carries, given its body (a tally's JSON); `None` for a tally
    /// whose body does not parse, and for a heartbeat, which carries none.
    pub fn wire(&self, body: &[u8]) -> Option<Wire> {
        let event = EventId(self.a);
        Some(Wire::Msg(match self.kind {
            Kind::Assign => PipeMsg::Assign { event },
            Kind::Built => PipeMsg::Built { event, missing: self.b as u32 },
            Kind::Pull => PipeMsg::Pull { event },
            Kind::Fragment => PipeMsg::Fragment { event, bytes: self.b },
            Kind::Data => PipeMsg::Data { seq: self.a, bytes: self.b },
            Kind::Extra => PipeMsg::Extra { bytes: self.b },
            Kind::Stop => PipeMsg::Stop,
            Kind::Tally => return serde_json::from_slice(body).ok().map(Wire::Tally),
            Kind::Bye => return Some(Wire::Bye),
            Kind::Heartbeat => return None,
        }))
    }

    /// Whether the body may be as long as the header says: a tally is bounded, a payload is
    /// what its message says.
    pub fn len_ok(&self) -> bool {
        match self.kind {
            Kind::Tally => self.len <= MAX_TALLY,
            Kind::Fragment | Kind::Data | Kind::Extra => self.len == self.b,
            _ => self.len <= u32::MAX as u64,
        }
    }

    /// The key a verified payload of this message carries, if it is one (fragment, data).
    pub fn key(&self, run_id: u64) -> Option<[u8; KEY_BYTES]> {
        matches!(self.kind, Kind::Fragment | Kind::Data)
            .then(|| payload_key(run_id, self.kind as u8, self.a, self.from))
    }
}

/// The key of a payload: the run, the message's kind and number, and its sender, mixed.
fn payload_key(run_id: u64, kind: u8, number: u64, from: u32) -> [u8; KEY_BYTES] {
    use daqnet_core::workload::mix;
    mix(run_id ^ mix(number ^ mix(((kind as u64) << 32) | from as u64))).to_le_bytes()
}

/// Whether `body` is a verified payload with key `key`: it starts and ends with it.
pub fn verify(body: &[u8], key: &[u8; KEY_BYTES]) -> bool {
    body.len() >= 2 * KEY_BYTES && body[..KEY_BYTES] == key[..] && body[body.len() - KEY_BYTES..] == key[..]
}

/// The bytes of a message's body after the header: a payload's length, a pull's request size
/// less the header.
fn body_len(w: &Wire, request_bytes: u32) -> u64 {
    match w {
        Wire::Msg(PipeMsg::Pull { .. }) => (request_bytes as u64).saturating_sub(HEAD_BYTES as u64),
        Wire::Msg(PipeMsg::Fragment { bytes, .. } | PipeMsg::Data { bytes, .. } | PipeMsg::Extra { bytes }) => *bytes,
        _ => 0,
    }
}

/// A message ready for the wire: its header, the key its payload starts and ends with (a
/// verified payload), or the JSON body of a tally. Any other body is filler, `head.len` long.
pub struct Outgoing {
    /// The header.
    pub head: Head,
    /// A verified payload's key.
    pub key: Option<[u8; KEY_BYTES]>,
    /// A tally's body (empty for anything else).
    pub tally: Vec<u8>,
}

impl Outgoing {
    /// `w` from node `from`, a pull being `request_bytes` long in all.
    pub fn of(w: &Wire, from: u32, request_bytes: u32, run_id: u64) -> Outgoing {
        let tally = match w {
            Wire::Tally(t) => serde_json::to_vec(t).expect("a tally serializes"),
            _ => Vec::new(),
        };
        let len = if tally.is_empty() { body_len(w, request_bytes) } else { tally.len() as u64 };
        let head = Head::of(w, from, len);
        Outgoing { key: head.key(run_id), head, tally }
    }
}

/// The filler of every payload, long enough for the longest a node of `pipe` sends: a
/// fragment, a message of its pattern's cycle, or a pull.
pub fn filler(pipe: &Pipe) -> Vec<u8> {
    let cycle = pipe.pattern.cycle(pipe.message_bytes);
    let max = cycle.into_iter().chain([pipe.fragment_bytes, pipe.request_bytes as u64]).max().unwrap_or(0);
    (0..max).map(|i| (i * 31 % 251) as u8).collect()
}

/// What a mesh reports.
#[derive(Debug, Clone, PartialEq)]
pub enum MeshEvent {
    /// `msg` arrived from `from`; `intact` is false when its payload failed verification.
    Msg {
        /// The sender.
        from: NodeId,
        /// The message.
        msg: PipeMsg,
        /// Its payload verified (or it has none).
        intact: bool,
    },
    /// `msg` to `to` has been handed over: its buffer is free.
    Sent {
        /// The receiver.
        to: NodeId,
        /// The message.
        msg: PipeMsg,
    },
    /// Node `from`'s tally (node 0 only).
    Tally(NodeTally),
    /// Node `0` has gone without a goodbye: its connection broke, or it died.
    Lost(NodeId),
}

/// Nodes connected to each other: how a [`PipeNode`] reaches the others.
pub trait Mesh {
    /// This node.
    fn me(&self) -> NodeId;
    /// Queues `w` to `to`; a message to a lost node is dropped.
    fn send(&mut self, to: NodeId, w: Wire);
    /// The next event, waiting at most `wait`.
    fn next(&mut self, wait: Duration) -> Option<MeshEvent>;
    /// Says goodbye to every peer still there and waits (at most `wait`) until every peer has
    /// said goodbye or gone.
    fn close(&mut self, wait: Duration);
    /// The transport's name in reports (`tcp`, `mpi`).
    fn name(&self) -> &'static str;
}

/// A node that hears nothing for this long while its part is not over gives up: every peer
/// is either slow beyond reason or stuck.
pub const STALL: Duration = Duration::from_secs(10);

/// Runs node `mesh.me()` of the scenario's pipe to its end. `epoch` is the run's common start
/// (node times are measured from it). Node 0 writes the run's report to `out/report.json` and
/// returns it.
pub fn run_node(
    sc: &Scenario,
    origin: &str,
    out: &Path,
    mesh: &mut dyn Mesh,
    epoch: Instant,
    progress: &mut dyn FnMut(u64, u64),
    stop: Option<&AtomicBool>,
) -> anyhow::Result<Option<RunReport>> {
    let pipe = sc.pipe.as_ref().context("the scenario has no [pipe] section")?;
    let me = mesh.me();
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let mut interrupted = false;
    let now = || epoch.elapsed().as_nanos() as Nanos;
    let mut node = PipeNode::new(me, pipe, sc.run.warmup_events, sc.run.events);
    node.on_start(now())?;
    flush(&mut node, mesh);
    let mut tallies = Vec::new();
    let mut heard = Instant::now();
    let total = sc.run.warmup_events + sc.run.events;
    let tell = |node: &PipeNode, progress: &mut dyn FnMut(u64, u64)| {
        if let Some(log) = node.manager_log() {
            progress((log.built.len() + log.lost.len()) as u64, total);
        }
    };
    while !node.finished() {
        tell(&node, progress);
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            interrupted = true;
            break;
        }
        let Some(ev) = mesh.next(Duration::from_millis(100)) else {
            if heard.elapsed() > STALL {
                bail!("node {me}: nothing heard for {} s while the run is not over", STALL.as_secs());
            }
            continue;
        };
        heard = Instant::now();
        if ev == MeshEvent::Lost(NodeId(0)) && me.0 != 0 {
            bail!("node {me}: node 0 is gone: the event manager, and the run's report with it");
        }
        on_event(&mut node, &mut tallies, ev, now())?;
        flush(&mut node, mesh);
    }
    tell(&node, progress);
    if me.0 != 0 {
        mesh.send(NodeId(0), Wire::Tally(node.tally().clone()));
        mesh.close(STALL);
        return Ok(None);
    }
    let settled = node.manager_log().map_or(0, |log| (log.built.len() + log.lost.len()) as u64);
    if interrupted {
        // The other nodes are stopping too (or gone with the launcher): their tallies are not
        // waited for.
        mesh.close(Duration::from_millis(200));
    } else {
        collect_tallies(&mut node, mesh, &mut tallies, now, &mut || progress(settled, total))?;
        mesh.close(STALL);
    }
    tallies.push(node.tally().clone());
    let mut r = report(sc, origin, &node, tallies, mesh.name());
    r.wall_s = epoch.elapsed().as_secs_f64();
    r.interrupted = interrupted;
    // SAFETY: as above. Adopted by another process: the launcher died, and stopped the run.
    if interrupted && unsafe { libc::getppid() } != parent {
        r.faults.insert(0, crate::launcher::launcher_died(r.wall_s, format!("node {me}")));
    }
    let path = out.join("report.json");
    daqnet_core::output::write_whole(&path, r.to_json().as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
        .context(daqnet_core::output::RunFailed)?;
    Ok(Some(r))
}

fn on_event(node: &mut PipeNode, tallies: &mut Vec<NodeTally>, ev: MeshEvent, now: Nanos) -> anyhow::Result<()> {
    match ev {
        MeshEvent::Msg { from, msg, intact } => node.on_message(from, msg, intact, now)?,
        MeshEvent::Sent { to, msg } => node.on_sent(to, msg, now),
        MeshEvent::Lost(peer) => node.on_lost(peer, now)?,
        MeshEvent::Tally(t) => tallies.push(t),
    }
    Ok(())
}

fn flush(node: &mut PipeNode, mesh: &mut dyn Mesh) {
    while let Some((to, msg)) = node.poll() {
        mesh.send(to, Wire::Msg(msg));
    }
}

/// Node 0, its own part over: waits for the tally of every node still there, calling `alive`
/// on every turn.
fn collect_tallies(
    node: &mut PipeNode,
    mesh: &mut dyn Mesh,
    tallies: &mut Vec<NodeTally>,
    now: impl Fn() -> Nanos,
    alive: &mut dyn FnMut(),
) -> anyhow::Result<()> {
    let until = Instant::now() + STALL;
    loop {
        alive();
        let missing: Vec<u32> =
            node.live().map(|n| n.0).filter(|&n| n != 0 && !tallies.iter().any(|t| t.node == n)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("node 0: no tally from nodes {missing:?} within {} s of the run's end", STALL.as_secs());
        }
        if let Some(ev) = mesh.next(Duration::from_millis(100)) {
            on_event(node, tallies, ev, now())?;
        }
    }
}

/// The run's report, from node 0's event-manager log and every node's tally.
fn report(sc: &Scenario, origin: &str, node: &PipeNode, mut tallies: Vec<NodeTally>, transport: &str) -> RunReport {
    let pipe = sc.pipe.as_ref().expect("checked");
    let n = pipe.nodes;
    let roles = PipeRoles::of(pipe, true);
    tallies.sort_by_key(|t| t.node);
    let warmup = sc.run.warmup_events;
    let mut measure = Measure::new(warmup);
    let mut lost = 0;
    let mut done = Vec::new();
    let frag = pipe.fragment_bytes as f64;
    let mut steady_bytes = roles.remote_fragments() as f64 * frag / roles.receiving_nodes() as f64;
    let mut in_flight = roles.builders.len() * pipe.credits_per_builder as usize;
    if let Some(log) = node.manager_log() {
        for &(event, b, assigned, at, missing) in &log.built {
            let bytes = (roles.readouts.len() as u32 - missing) as u64 * pipe.fragment_bytes;
            let track = Track::one_step(event, PuId(b.0), b, assigned, assigned, at, bytes);
            measure.record(&track);
            if event.0 >= warmup {
                done.push(at);
            }
        }
        lost = log.lost.iter().filter(|e| e.0 >= warmup).count() as u64;
    } else {
        // Synthetic: data messages received; no latency (a one-way time needs a common clock).
        in_flight = usize::MAX;
        steady_bytes = 0.0;
    }
    let bps =
        |bytes: u64, t: &NodeTally| if t.span_ns > 0 { bytes as f64 * 8.0 / (t.span_ns as f64 / 1e9) } else { 0.0 };
    // A node's bandwidth is its members' (one process, or its two), each over its own span.
    let mut per_node = vec![(0.0, 0.0); n as usize];
    let mut reported = vec![false; n as usize];
    for t in &tallies {
        let k = roles.node_of(NodeId(t.node)).index();
        per_node[k].0 += bps(t.sent_bytes, t);
        per_node[k].1 += bps(t.recv_bytes, t);
        reported[k] = true;
    }
    let nodes_reporting: Vec<&(f64, f64)> =
        per_node.iter().zip(&reported).filter(|(_, r)| **r).map(|(p, _)| p).collect();
    let reporting = |f: fn(&(f64, f64)) -> f64| Spread::of(&nodes_reporting.iter().map(|p| f(p)).collect::<Vec<_>>());
    let recv = reporting(|p| p.1);
    let receivers: Vec<f64> = nodes_reporting.iter().map(|p| p.1).filter(|&r| r > 0.0).collect();
    let steady = steady_rate(&mut done, in_flight).map(|r| r * steady_bytes * 8.0);
    let mut measured = measure.finish();
    if pipe.pattern != PipePattern::EventBuilding {
        measured.events_built = tallies.iter().map(|t| t.built).sum();
        measured.duration_s = tallies.iter().map(|t| t.span_ns).max().unwrap_or(0) as f64 / NS_PER_S as f64;
        let d = measured.duration_s;
        measured.event_rate_hz = if d > 0.0 { measured.events_built as f64 / d } else { 0.0 };
        measured.goodput_bps =
            if d > 0.0 { tallies.iter().map(|t| t.recv_bytes).sum::<u64>() as f64 * 8.0 / d } else { 0.0 };
    }
    let built = measured.events_built;
    let mut r = RunReport::measured("run", origin, sc, measured);
    r.events_not_built = NotBuilt { timed_out: 0, lost, abandoned: sc.run.events.saturating_sub(built + lost) };
    r.tcp_source = String::new();
    let lost_nodes = lost_nodes(roles.members(), &tallies);
    r.faults = lost_nodes.iter().map(|l| fault(l, node, &roles)).collect();
    r.pipe = Some(PipeStats {
        nodes: n,
        pattern: pipe.pattern.name().into(),
        scheduler: pipe.scheduler.name().into(),
        parallel_transfers: pipe.parallel_transfers,
        send_bps: reporting(|p| p.0),
        steady_recv_bps: steady.unwrap_or_else(|| Spread::of(&receivers).mean),
        steady_state: steady.is_some(),
        recv_bps: recv,
        per_node,
        transport: transport.into(),
        incomplete: tallies.iter().map(|t| t.incomplete).sum(),
        verified_payloads: tallies.iter().map(|t| t.verified).sum(),
        bad_payloads: tallies.iter().map(|t| t.bad).sum(),
        lost_nodes,
    });
    r
}

/// The members (nodes, or processes of nodes) some tally names lost, with who noticed when.
fn lost_nodes(n: u32, tallies: &[NodeTally]) -> Vec<LostNode> {
    (0..n)
        .filter_map(|k| {
            let noticed: Vec<(u32, f64)> = tallies
                .iter()
                .filter_map(|t| t.lost_peers.iter().find(|p| p.0 == k).map(|p| (t.node, p.1 as f64 / NS_PER_S as f64)))
                .collect();
            (!noticed.is_empty()).then_some(LostNode { node: k, killed_at_s: None, noticed })
        })
        .collect()
}

fn fault(l: &LostNode, node: &PipeNode, roles: &PipeRoles) -> FaultRecord {
    let first = l.noticed.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let lost_events: Vec<u64> = node.manager_log().map_or(Vec::new(), |log| log.lost.iter().map(|e| e.0).collect());
    let by: Vec<String> = l.noticed.iter().map(|(k, _)| format!("node {k}")).collect();
    FaultRecord {
        at_s: first,
        role: match roles.per_node {
            1 => format!("node {}", l.node),
            _ => {
                let unit = if roles.is_builder(NodeId(l.node)) { "builder" } else { "readout" };
                format!("process {} (node {}'s {unit} unit)", l.node, roles.node_of(NodeId(l.node)))
            }
        },
        noticed_by: by.join(", "),
        reason: "its connections closed without a goodbye (the process died), or it was silent for \
                 deploy.peer_timeout_ms (stopped or hung); the events its builder unit held are lost, and the others \
                 built later events without its fragments"
            .into(),
        lost_events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_decodes_to_the_message_it_encodes() {
        let msgs = [
            PipeMsg::Assign { event: EventId(3) },
            PipeMsg::Built { event: EventId(4), missing: 2 },
            PipeMsg::Pull { event: EventId(5) },
            PipeMsg::Fragment { event: EventId(6), bytes: 1 << 20 },
            PipeMsg::Data { seq: 7, bytes: 100 },
            PipeMsg::Extra { bytes: 64 },
            PipeMsg::Stop,
        ];
        for m in msgs {
            let w = Wire::Msg(m);
            let h = Outgoing::of(&w, 9, 64, 1).head;
            let back = Head::decode(&h.encode()).unwrap();
            assert_eq!(back, h);
            assert!(back.len_ok());
            assert_eq!(back.wire(&[]), Some(w));
        }
        let t = NodeTally { node: 3, sent_bytes: 5, ..NodeTally::default() };
        let body = serde_json::to_vec(&t).unwrap();
        let h = Head::of(&Wire::Tally(t.clone()), 3, body.len() as u64);
        assert_eq!(Head::decode(&h.encode()).unwrap().wire(&body), Some(Wire::Tally(t)));
        let mut bad = h.encode();
        bad[0] = 42;
        assert!(Head::decode(&bad).is_err());
    }

    #[test]
    fn a_payload_verifies_only_with_its_own_key() {
        let h = Head::of(&Wire::Msg(PipeMsg::Fragment { event: EventId(1), bytes: 32 }), 2, 32);
        let key = h.key(77).unwrap();
        let mut body = vec![0u8; 32];
        body[..8].copy_from_slice(&key);
        body[24..].copy_from_slice(&key);
        assert!(verify(&body, &key));
        assert!(!verify(&body, &h.key(78).unwrap()), "another run");
        let other = Head::of(&Wire::Msg(PipeMsg::Fragment { event: EventId(2), bytes: 32 }), 2, 32);
        assert!(!verify(&body, &other.key(77).unwrap()), "another event");
        assert!(!verify(&body[..31], &key), "cut short");
        assert!(Head::of(&Wire::Msg(PipeMsg::Pull { event: EventId(1) }), 2, 0).key(77).is_none());
    }
}
