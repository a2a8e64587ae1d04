//! A sub-farm worker process: connects to the SFC, announces itself (under `tokens` with its
//! initial tokens), then takes events one by one, runs the `core` [`Worker`] on each — its
//! processing time is spent asleep, as a trigger would spend it busy — and answers with a
//! token carrying the verdict and any accepted output. Under `push` it answers nothing until
//! the SFC says the run is over. A thread beats every `deploy.heartbeat_ms` meanwhile; an SFC
//! silent for `deploy.peer_timeout_ms` ends the worker with an error.

use super::{payload_key, read_msg, since, write_msg, Head, Kind, NO_EVENT};
use crate::net::transport::tuned_socket;
use anyhow::{bail, Context};
use daqnet_core::farm::{Token, Worker, WorkerOutput};
use daqnet_core::scenario::Farm;
use daqnet_core::{Scenario, WorkerId};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Runs worker `id` of `sc`'s sub-farm against the SFC at `sfc`.
pub fn run(sc: &Scenario, id: WorkerId, sfc: &str) -> anyhow::Result<()> {
    let farm = sc.farm.as_ref().context("the scenario has no [farm]")?;
    let mut s = connect(sc, sfc)?;
    let peer_timeout = Duration::from_millis(sc.deploy.peer_timeout_ms);
    // A write that waits this long for room is to an SFC that stopped reading: hung.
    s.set_write_timeout(Some(peer_timeout))?;
    s.set_read_timeout(Some(peer_timeout))?;
    let writer = Mutex::new(s.try_clone()?);
    let hello = Head { worker: id.0, extra: sc.deploy.run_id, ..Head::new(Kind::Hello) };
    write_msg(&mut writer.lock().expect("writer"), hello, &[])?;
    let over = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| beat(id, &writer, &over, Duration::from_millis(sc.deploy.heartbeat_ms)));
        let r = work(sc, farm, id, &mut s, &writer);
        over.store(true, Ordering::Relaxed);
        r
    })
}

/// Sends a heartbeat every `every` until the work is over or the connection fails.
fn beat(id: WorkerId, writer: &Mutex<TcpStream>, over: &AtomicBool, every: Duration) {
    let mut last = Instant::now();
    while !over.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10).min(every));
        if last.elapsed() < every {
            continue;
        }
        last = Instant::now();
        let beat = Head { worker: id.0, ..Head::new(Kind::Heartbeat) };
        if write_msg(&mut writer.lock().expect("writer"), beat, &[]).is_err() {
            return;
        }
    }
}

/// Takes events until the SFC says stop.
fn work(sc: &Scenario, farm: &Farm, id: WorkerId, s: &mut TcpStream, writer: &Mutex<TcpStream>) -> anyhow::Result<()> {
    let run_id = sc.deploy.run_id;
    let start = Instant::now();
    let mut w = Worker::new(id, farm, sc.run.seed);
    // The note's token is the 28-byte head; a larger farm.token_bytes pads it. Output and
    // padding are zeros: one buffer serves every token.
    let pad = (farm.token_bytes as usize).saturating_sub(super::HEAD_BYTES);
    let output = vec![0u8; farm.accept_output_bytes as usize + pad];
    let mut body = Vec::new();
    let drive = |w: &mut Worker| -> anyhow::Result<()> {
        while let Some(o) = w.poll() {
            match o {
                WorkerOutput::Token(t) => send_token(&mut writer.lock().expect("writer"), &t, &output, pad)
                    .context("sending a token to the SFC")?,
                WorkerOutput::WakeAt(t) => {
                    std::thread::sleep(Duration::from_nanos(t.saturating_sub(since(start))));
                    w.on_wake(since(start).max(t));
                }
                WorkerOutput::Started { .. } | WorkerOutput::Processed { .. } => {}
            }
        }
        Ok(())
    };
    w.on_connected();
    drive(&mut w)?;
    loop {
        let head = read_msg(s, &mut body).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => anyhow::anyhow!(
                "the SFC was silent for {} ms (deploy.peer_timeout_ms): stopped or hung",
                sc.deploy.peer_timeout_ms
            ),
            _ => anyhow::Error::new(e).context("reading from the SFC"),
        })?;
        match head.kind {
            Kind::Event => {
                let key = body.get(..8).map(|k| u64::from_le_bytes(k.try_into().expect("8 bytes")));
                if key != Some(payload_key(run_id, head.event)) {
                    bail!("event {}: its payload is not that event's (a misplaced or corrupt event)", head.event);
                }
                w.on_event(since(start), daqnet_core::EventId(head.event), head.len as u64);
                drive(&mut w)?;
            }
            Kind::Heartbeat => {}
            Kind::Stop => {
                let bye =
                    Head { worker: id.0, event: w.processed(), extra: w.busy_ns() / 1000, ..Head::new(Kind::Bye) };
                write_msg(&mut writer.lock().expect("writer"), bye, &[])?;
                return Ok(());
            }
            k => bail!("unexpected {k:?} from the SFC"),
        }
    }
}

/// Sends token `t`: its head, then `pad` bytes beyond its accepted output, from `zeros`.
fn send_token(s: &mut TcpStream, t: &Token, zeros: &[u8], pad: usize) -> std::io::Result<()> {
    let v = t.verdict;
    let head = Head {
        worker: t.worker.0,
        event: v.map_or(NO_EVENT, |v| v.event.0),
        accepted: v.is_some_and(|v| v.accepted),
        ..Head::new(Kind::Token)
    };
    let out = v.map_or(0, |v| v.output_bytes as usize);
    write_msg(s, head, &zeros[..out + pad])
}

/// Connects to the SFC, retrying until `deploy.startup_timeout_ms` (it may not listen yet).
fn connect(sc: &Scenario, sfc: &str) -> anyhow::Result<TcpStream> {
    let addr: SocketAddr =
        sfc.to_socket_addrs()?.next().with_context(|| format!("the SFC address {sfc} resolves to nothing"))?;
    let deadline = Instant::now() + Duration::from_millis(sc.deploy.startup_timeout_ms);
    loop {
        let s = tuned_socket(&addr, &sc.deploy.tcp_congestion)?;
        match s.connect_timeout(&addr.into(), Duration::from_millis(500)) {
            Ok(()) => return Ok(s.into()),
            Err(e) if Instant::now() >= deadline => {
                bail!("cannot reach the SFC at {sfc} within deploy.startup_timeout_ms: {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
