//! The switch's event loop on Linux: read every port's receive ring, queue frames in the
//! switch state, send what each egress port's pacer allows, and sleep in `ppoll` until a frame
//! arrives or a pacer has room again.

use crate::afpacket::Port;
use crate::config::SwitchConfig;
use crate::ring::RingStats;
use crate::state::SwitchState;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest sleep, so that a stop request is seen promptly.
const MAX_SLEEP: Duration = Duration::from_millis(50);
/// Retry delay after the kernel refused frames (`ENOBUFS`).
const BACKOFF: Duration = Duration::from_micros(20);

/// One queue's statistics, as reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueueReport {
    /// `<port>` for a port's default queue, `<port> daqring <address>` for a collector's.
    pub name: String,
    /// Its counters.
    #[serde(flatten)]
    pub stats: RingStats,
}

/// What the switch did, written as JSON when it stops.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SwitchReport {
    /// Every queue.
    pub queues: Vec<QueueReport>,
    /// Frames for a MAC not in the forwarding table (dropped: no flooding).
    pub unroutable: u64,
    /// Times the kernel pushed back on a send and the frames were kept to retry.
    pub send_retries: u64,
    /// Frames received.
    pub frames_in: u64,
    /// Wall time running, seconds.
    pub wall_s: f64,
}

/// Runs the switch on the interfaces named in `cfg` until `stop` is set; calls `ready` once
/// every port is open; returns its report.
pub fn run(cfg: &SwitchConfig, stop: &AtomicBool, ready: impl FnOnce()) -> anyhow::Result<SwitchReport> {
    let mut state = SwitchState::new(cfg)?;
    let mut ports: Vec<Port> = cfg.ports.iter().map(|p| Port::open(&p.name)).collect::<anyhow::Result<_>>()?;
    ready();
    // Wake-ups a few µs late cost line rate: ask for a 1 µs timer slack (default 50 µs).
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let mut pending: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); ports.len()];
    let mut batch = Vec::new();
    let mut pfds: Vec<libc::pollfd> =
        ports.iter().map(|p| libc::pollfd { fd: p.raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let (mut retries, mut frames_in) = (0u64, 0u64);
    let t0 = Instant::now();
    let now_ns = || t0.elapsed().as_nanos() as u64;
    while !stop.load(Ordering::Relaxed) {
        for port in ports.iter_mut() {
            frames_in += port.receive(|frame| {
                let mut buf = state.buffer();
                buf.extend_from_slice(frame);
                state.receive(buf);
            }) as u64;
        }
        let now = now_ns();
        let mut pushed_back = false;
        for (p, port) in ports.iter().enumerate() {
            let queue = &mut pending[p];
            if queue.is_empty() {
                state.poll(p, now, &mut batch);
                queue.extend(batch.drain(..));
            }
            if queue.is_empty() {
                continue;
            }
            let frames = queue.make_contiguous();
            let sent = port.send(frames).map_err(|e| anyhow::anyhow!("sending on {}: {e}", port.name))?;
            for f in queue.drain(..sent) {
                state.recycle(f);
            }
            if !queue.is_empty() {
                pushed_back = true;
                retries += 1;
            }
        }
        let sleep = if pushed_back {
            BACKOFF
        } else {
            match state.next_ready(now_ns()) {
                Some(t) => Duration::from_nanos(t.saturating_sub(now_ns())).min(MAX_SLEEP),
                None => MAX_SLEEP,
            }
        };
        let ts = libc::timespec { tv_sec: sleep.as_secs() as i64, tv_nsec: sleep.subsec_nanos() as i64 };
        // SAFETY: `pfds` holds `pfds.len()` initialised pollfds and `ts` a valid timeout, both
        // live for the call; a null signal mask keeps the thread's own.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    }
    let queues = state.stats().into_iter().map(|(name, stats)| QueueReport { name, stats }).collect();
    Ok(SwitchReport {
        queues,
        unroutable: state.unroutable,
        send_retries: retries,
        frames_in,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}
