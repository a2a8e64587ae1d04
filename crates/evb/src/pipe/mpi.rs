//! The pipe over MPI (the `mpi` feature; rsmpi over the system's Open MPI): each node an MPI
//! rank, every message one MPI message — the 32-byte header and its body — sent with
//! `MPI_Isend` and received with `MPI_Improbe` + `MPI_Imrecv`, in one thread that polls both,
//! as DAQPIPE's MPI driver does. Nothing blocks: a receive that never completes (its sender
//! died mid-message) leaves the node free to stop the run when asked.
//!
//! A rank that dies takes the job with it: Open MPI's default error handler (`MPI_ERRORS_ARE_FATAL`)
//! and `mpirun` abort every rank when one ends abnormally, and the fault-tolerant interface
//! that would let the others go on (ULFM) is not in the Open MPI that distributions ship. So
//! [`Mesh::next`] never reports a lost node: the watcher of `--mpirun` ([`super::mpirun`])
//! notices it from outside the job and has node 0 stop the run.

use super::{filler, verify, Head, Mesh, MeshEvent, Outgoing, Wire, HEAD_BYTES};
use anyhow::{bail, Context};
use daqnet_core::pipe::PipeRoles;
use daqnet_core::report::RunReport;
use daqnet_core::{NodeId, Scenario};
use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A send in progress: the request, and the buffer MPI reads until it completes.
struct Pending {
    req: Request<'static, [u8], StaticScope>,
    /// The buffer, leaked for the request's `'static` borrow and taken back once it completes.
    buf: *mut [u8],
    to: NodeId,
    msg: Option<daqnet_core::pipe::PipeMsg>,
}

/// Node `me`'s view of the MPI world.
pub struct MpiMesh {
    world: SimpleCommunicator,
    me: NodeId,
    run_id: u64,
    request_bytes: u32,
    fill: Vec<u8>,
    pending: Vec<Pending>,
    /// Buffers of completed sends, for reuse.
    spare: Vec<Box<[u8]>>,
    ready: VecDeque<MeshEvent>,
    /// The receive in progress.
    receiving: Option<Receiving>,
    /// The buffer of the last completed receive, for reuse.
    recv: Box<[u8]>,
}

/// A receive in progress: the request, the buffer MPI writes until it completes, the sender.
struct Receiving {
    req: Request<'static, [u8], StaticScope>,
    /// The buffer, leaked for the request's `'static` borrow and taken back once it completes.
    buf: *mut [u8],
    from: NodeId,
}

/// Initializes MPI, checks that the world has one rank per node of the scenario's pipe, and
/// runs `f` on this rank's mesh with the run's epoch (taken after a barrier, so every rank's
/// clock starts together).
pub fn run(
    sc: &Scenario,
    f: impl FnOnce(&mut dyn Mesh, Instant) -> anyhow::Result<Option<RunReport>>,
) -> anyhow::Result<Option<RunReport>> {
    let pipe = sc.pipe.as_ref().context("the scenario has no [pipe] section")?;
    let universe = mpi::initialize().context("MPI is already initialized")?;
    let world = universe.world();
    let ranks = PipeRoles::of(pipe, true).members();
    if world.size() as u32 != ranks {
        let per = pipe.processes_per_node;
        bail!(
            "the MPI world has {} ranks and the pipe needs {ranks} ({} nodes × {per} processes per node): start it with \
             mpirun -np {ranks} …, or set pipe.nodes to match",
            world.size(),
            pipe.nodes,
        );
    }
    let mut mesh = MpiMesh {
        me: NodeId(world.rank() as u32),
        world,
        run_id: if sc.deploy.run_id == 0 { 1 } else { sc.deploy.run_id },
        request_bytes: pipe.request_bytes,
        fill: filler(pipe),
        pending: Vec::new(),
        spare: Vec::new(),
        ready: VecDeque::new(),
        receiving: None,
        recv: Box::default(),
    };
    mesh.world.barrier();
    let r = f(&mut mesh, Instant::now());
    mesh.finish();
    r
}

impl MpiMesh {
    /// A buffer holding `w`'s header and body: a verified payload as key, filler, key.
    fn encode(&mut self, w: &Wire) -> Box<[u8]> {
        let o = Outgoing::of(w, self.me.0, self.request_bytes, self.run_id);
        let len = o.head.len as usize;
        let size = HEAD_BYTES + len;
        // A spare buffer of the size already holds the filler, which never changes: only the
        // header and the keys are rewritten (a megabyte copied per message otherwise).
        let (mut buf, filled) = match self.spare.iter().position(|b| b.len() == size) {
            Some(i) => (self.spare.swap_remove(i), true),
            None => (vec![0u8; size].into_boxed_slice(), false),
        };
        buf[..HEAD_BYTES].copy_from_slice(&o.head.encode());
        let body = &mut buf[HEAD_BYTES..];
        match o.key {
            Some(k) => {
                if !filled {
                    body[8..len - 8].copy_from_slice(&self.fill[..len - 16]);
                }
                body[..8].copy_from_slice(&k);
                body[len - 8..].copy_from_slice(&k);
            }
            None if !o.tally.is_empty() => body.copy_from_slice(&o.tally),
            None if !filled => body.copy_from_slice(&self.fill[..len]),
            None => {}
        }
        buf
    }

    /// Completes the sends MPI has finished with: their buffers come back, and each message
    /// is reported handed over.
    fn reap(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            match p.req.test() {
                Ok(_) => {
                    // SAFETY: `buf` came from `Box::leak` in `send`, and the request that
                    // borrowed it has completed and been consumed: nothing refers to it now.
                    let buf = unsafe { Box::from_raw(p.buf) };
                    // Only a message's buffer holds the filler a spare must hold.
                    if let Some(msg) = p.msg {
                        self.spare.push(buf);
                        self.ready.push_back(MeshEvent::Sent { to: p.to, msg });
                    }
                }
                Err(req) => self.pending.push(Pending { req, ..p }),
            }
        }
    }

    /// Receives one message if one has arrived: starts its receive, and takes it when MPI has
    /// completed it (true then).
    fn receive(&mut self) -> anyhow::Result<bool> {
        if self.receiving.is_none() {
            let Some((msg, status)) = self.world.any_process().immediate_matched_probe() else { return Ok(false) };
            let count = status.count(u8::equivalent_datatype()) as usize;
            let mut buf = std::mem::take(&mut self.recv);
            if buf.len() != count {
                buf = vec![0u8; count].into_boxed_slice();
            }
            let buf: &'static mut [u8] = Box::leak(buf);
            let ptr: *mut [u8] = buf;
            let req = msg.immediate_matched_receive_into(StaticScope, buf);
            self.receiving = Some(Receiving { req, buf: ptr, from: NodeId(status.source_rank() as u32) });
        }
        let r = self.receiving.take().expect("a receive in progress");
        match r.req.test() {
            Ok(_) => {
                // SAFETY: `buf` came from `Box::leak` above, and the request that borrowed it
                // has completed and been consumed: nothing refers to it now.
                self.recv = unsafe { Box::from_raw(r.buf) };
                self.take(r.from)?;
                Ok(true)
            }
            Err(req) => {
                self.receiving = Some(Receiving { req, ..r });
                Ok(false)
            }
        }
    }

    /// Takes the message `from` sent, now in `self.recv`.
    fn take(&mut self, from: NodeId) -> anyhow::Result<()> {
        let count = self.recv.len();
        if count < HEAD_BYTES {
            bail!("node {from} sent a message of {count} bytes, shorter than a header");
        }
        let h: &[u8; HEAD_BYTES] = self.recv[..HEAD_BYTES].try_into().expect("32 bytes");
        let head = Head::decode(h).with_context(|| format!("node {from} sent a broken message"))?;
        let body = &self.recv[HEAD_BYTES..];
        if !head.len_ok() || head.len as usize != body.len() || head.from != from.0 {
            bail!("node {from} sent a message whose header does not match it");
        }
        match head.wire(body) {
            Some(Wire::Msg(m)) => {
                let intact = head.key(self.run_id).is_none_or(|k| verify(body, &k));
                self.ready.push_back(MeshEvent::Msg { from, msg: m, intact });
            }
            Some(Wire::Tally(t)) => self.ready.push_back(MeshEvent::Tally(t)),
            Some(Wire::Bye) => {}
            None => bail!("node {from} sent a tally that does not parse"),
        }
        Ok(())
    }

    /// Waits for every send and receive to complete, then for every rank at a barrier.
    fn finish(&mut self) {
        while !self.pending.is_empty() || self.receiving.is_some() {
            self.reap();
            let _ = self.receive();
        }
        self.world.barrier();
    }
}

impl Mesh for MpiMesh {
    fn me(&self) -> NodeId {
        self.me
    }

    fn send(&mut self, to: NodeId, w: Wire) {
        let msg = match &w {
            Wire::Msg(m) => Some(*m),
            _ => None,
        };
        let buf: &'static mut [u8] = Box::leak(self.encode(&w));
        let ptr: *mut [u8] = buf;
        // SAFETY: `ptr` is the leaked buffer; the shared borrow lives in the request only,
        // and `reap` takes the buffer back after the request completes.
        let shared: &'static [u8] = unsafe { &*ptr };
        let req = self.world.process_at_rank(to.0 as i32).immediate_send(StaticScope, shared);
        self.pending.push(Pending { req, buf: ptr, to, msg });
    }

    fn next(&mut self, wait: Duration) -> Option<MeshEvent> {
        let until = Instant::now() + wait;
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Some(ev);
            }
            self.reap();
            match self.receive() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    eprintln!("node {}: {e:#}", self.me);
                    self.world.abort(2);
                }
            }
            if self.ready.is_empty() {
                if Instant::now() >= until {
                    return None;
                }
                // Several ranks may share a core: give the others a turn.
                std::thread::yield_now();
            }
        }
    }

    fn close(&mut self, _wait: Duration) {
        // MPI has no connection to close: `run` completes every send and meets the other
        // ranks at a barrier once this node's part is over.
    }

    fn name(&self) -> &'static str {
        "mpi"
    }
}
