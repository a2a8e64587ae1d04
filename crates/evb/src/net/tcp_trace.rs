//! The TCP senders' windows over a real run (`daqnet testbed run --trace cwnd=…`), as the
//! simulator records them: each role samples `TCP_INFO` of its chosen connections on a thread
//! of its own and writes one line per sample to `OUT/trace-tcp-HOST.csv`; [`collect`] gathers
//! every role's file into the simulator's samples afterwards.
//!
//! Times are `CLOCK_MONOTONIC` ([`monotonic_ns`]), one clock for every process on the machine
//! whatever its network namespace, so the caller puts all roles on one time axis by
//! subtracting its own reading at launch.

use crate::net::transport::TcpStats;
use crate::role::RoleId;
use anyhow::Context;
use daqnet_core::trace::{TcpSample, TraceSpec, CA_STATES};
use daqnet_core::Nanos;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock every process here shares.
pub fn monotonic_ns() -> Nanos {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as Nanos * 1_000_000_000 + t.tv_nsec as Nanos
}

/// The file a role's samples go to.
pub fn file_of(out: &Path, me: RoleId) -> PathBuf {
    out.join(format!("trace-tcp-{}.csv", me.host()))
}

/// Connections being sampled: sender name and a handle on the socket.
type Watched = Arc<Mutex<Vec<(String, TcpStats)>>>;

/// One role's sampler of its chosen TCP senders.
pub struct TcpTrace {
    spec: TraceSpec,
    me: RoleId,
    watched: Watched,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<anyhow::Result<()>>>>,
}

impl TcpTrace {
    /// Starts sampling, every `spec.every_ns`, the connections [`TcpTrace::watch`] is given, into
    /// [`file_of`]`(out, me)`.
    pub fn start(spec: TraceSpec, me: RoleId, out: &Path) -> anyhow::Result<TcpTrace> {
        let path = file_of(out, me);
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        let file = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
        let (watched, stop) = (Watched::default(), Arc::new(AtomicBool::new(false)));
        let every = Duration::from_nanos(spec.every_ns);
        let (w, s) = (watched.clone(), stop.clone());
        let thread = std::thread::Builder::new().name("tcp-trace".into()).spawn(move || {
            sample(std::io::BufWriter::new(file), &w, &s, every).with_context(|| path.display().to_string())
        })?;
        Ok(TcpTrace { spec, me, watched, stop, thread: Mutex::new(Some(thread)) })
    }

    /// Samples this role's sending half towards `peer`, if the spec selects it
    /// (`ru3->node0`: [`RoleId::host`] of this role, then of the peer).
    pub fn watch(&self, peer: RoleId, stats: Option<&TcpStats>) {
        let name = format!("{}->{}", self.me.host(), peer.host());
        if let Some(s) = stats.filter(|_| self.spec.selects_sender(&name)).and_then(TcpStats::try_clone) {
            self.watched.lock().expect("the sampler never panics holding it").push((name, s));
        }
    }

    /// Stops sampling and writes what is left (once; later calls do nothing).
    pub fn finish(&self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.lock().expect("finish never panics holding it").take();
        thread.map_or(Ok(()), |t| t.join().map_err(|_| anyhow::anyhow!("the TCP sampler panicked"))?)
    }
}

impl Drop for TcpTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Until `stop`: one line per open watched connection every `every`
/// (`t_ns,sender,cwnd,ssthresh,srtt_ns,in_flight,ca_state`, empty fields for `None`).
fn sample(mut w: impl Write, watched: &Watched, stop: &AtomicBool, every: Duration) -> anyhow::Result<()> {
    let mut next = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let t = monotonic_ns();
        for (name, s) in watched.lock().expect("watch never panics holding it").iter() {
            let Some(x) = s.window().filter(|x| !x.closed) else { continue };
            let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            let ss = opt(x.ssthresh.map(u64::from));
            writeln!(w, "{t},{name},{},{ss},{},{},{}", x.cwnd, opt(x.srtt_ns), x.in_flight, x.ca_state)?;
        }
        next += every;
        std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
    }
    w.flush()?;
    Ok(())
}

/// Every role's samples in `out` ([`file_of`]), on one time axis from `zero_ns` (a
/// [`monotonic_ns`] reading), with the senders' names, sorted by time; the files are removed.
/// Samples from before `zero_ns` (connections set up before the launch) are dropped.
pub fn collect(out: &Path, zero_ns: Nanos) -> anyhow::Result<(Vec<String>, Vec<TcpSample>)> {
    let (mut names, mut samples) = (Vec::<String>::new(), Vec::new());
    for path in files(out)? {
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let bad = || anyhow::anyhow!("{}:{}: not a TCP sample: {line}", path.display(), i + 1);
            let f: Vec<&str> = line.split(',').collect();
            let [t, name, cwnd, ss, srtt, in_flight, ca] = f[..] else { return Err(bad()) };
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
            let opt = |s: &str| if s.is_empty() { Ok(None) } else { num(s).map(Some) };
            let Some(t_ns) = num(t)?.checked_sub(zero_ns) else { continue };
            let sender = match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    names.push(name.to_string());
                    names.len() - 1
                }
            } as u32;
            samples.push(TcpSample {
                t_ns,
                sender,
                cwnd: num(cwnd)? as u32,
                ssthresh: opt(ss)?.map(|v| v as u32),
                srtt_ns: opt(srtt)?,
                in_flight: num(in_flight)? as u32,
                state: CA_STATES.get(num(ca)? as usize).copied().ok_or_else(bad)?,
                // tcp_info has no α (INET_DIAG_DCTCPINFO has; not read).
                dctcp_alpha: None,
            });
        }
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    samples.sort_by_key(|s| (s.t_ns, s.sender));
    Ok((names, samples))
}

/// Removes the role files an earlier run left in `out` (one killed before [`collect`]), so
/// that none passes for this run's.
pub fn remove_stale(out: &Path) -> anyhow::Result<()> {
    for path in files(out)? {
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// The role files in `out` ([`file_of`]), in name order; none if `out` does not exist yet.
fn files(out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let Ok(dir) = std::fs::read_dir(out) else { return Ok(Vec::new()) };
    let is_role_file = |p: &PathBuf| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("trace-tcp-") && n.ends_with(".csv"))
    };
    let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).filter(is_role_file).collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::{NodeId, ReadoutId};

    /// A readout unit tracing `ru0->*` samples its connection to node 0 while it is open, and
    /// the samples come back on the caller's time axis with the sender's name.
    #[test]
    fn a_watched_connection_is_sampled_until_finished_and_collected() {
        let dir = std::env::temp_dir().join(format!("daqnet-tcp-trace-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let zero = monotonic_ns();
        let me = RoleId::Readout(ReadoutId(0));
        let trace = TcpTrace::start("cwnd=ru0->*,every=1ms".parse().unwrap(), me, &dir).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (c, _a) = rt.block_on(async {
            let t = crate::net::transport::from_deploy(&daqnet_core::scenario::Deploy::default());
            let mut l = t.listen("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr();
            let (c, a) = tokio::join!(t.connect(&addr), l.accept());
            (c.unwrap(), a.unwrap())
        });
        trace.watch(RoleId::Collector(NodeId(0)), c.stats.as_ref());
        trace.watch(RoleId::Supervisor, c.stats.as_ref());
        std::thread::sleep(Duration::from_millis(30));
        trace.finish().unwrap();
        let (names, samples) = collect(&dir, zero).unwrap();
        assert_eq!(names, ["ru0->node0", "ru0->sup"]);
        let of = |i| samples.iter().filter(|s| s.sender == i).count();
        // 30 ms at 1 ms: the sampler's thread may be late on a busy machine, never early.
        assert!((5..=32).contains(&of(0)) && of(0) == of(1), "{} and {} samples", of(0), of(1));
        assert!(samples.iter().all(|s| s.cwnd == 10 && s.in_flight == 0 && s.state == "open"));
        assert!(samples.windows(2).all(|w| w[0].t_ns <= w[1].t_ns) && samples[0].t_ns < 30_000_000);
        assert!(!file_of(&dir, me).exists(), "collect removes what it gathered");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
