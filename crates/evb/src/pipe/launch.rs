//! `daqnet pipe` over TCP on this machine: the launcher starts one process per node, tells
//! every node where the others listen, can kill one mid-run (`--kill`), and hands back node
//! 0's report.
//!
//! Every node listens on a free loopback port and prints it (`listening ADDR`); once all have,
//! the launcher writes the list of addresses to every node's standard input, and they connect.
//! Times are measured from one epoch, the launcher's start on the monotonic clock, which every
//! process on the machine shares: so a kill and its detection are on one time line.

use super::run_node;
use super::tcp::{listen, MeshConfig, TcpMesh};
use crate::launcher::{hang_after, owned_by_caller, prepare_out, Silence};
use crate::role::{Beacon, SupervisorLine};
use anyhow::{bail, Context};
use daqnet_core::pipe::PipeRoles;
use daqnet_core::report::{FaultRecord, Measure, NotBuilt, RunReport};
use daqnet_core::Scenario;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// What `daqnet pipe` was asked to do.
pub struct PipeLaunch {
    /// The `daqnet` executable to start nodes with.
    pub exe: PathBuf,
    /// The scenario's name in the report.
    pub origin: String,
    /// Output folder: report.json and the resolved scenario.
    pub out: PathBuf,
    /// Kill node `k` this long after the start.
    pub kill: Option<(u32, Duration)>,
}

/// The monotonic clock, ns: the same in every process of the machine.
pub fn mono_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The instant of monotonic time `epoch_ns`.
pub fn epoch_at(epoch_ns: u64) -> Instant {
    let ago = Duration::from_nanos(mono_ns().saturating_sub(epoch_ns));
    Instant::now().checked_sub(ago).unwrap_or_else(Instant::now)
}

/// Whether a report says every event was built whole and every payload verified.
pub fn clean(r: &RunReport) -> bool {
    let nb = &r.events_not_built;
    let p = r.pipe.as_ref();
    nb.lost + nb.timed_out + nb.abandoned == 0
        && r.faults.is_empty()
        && p.is_some_and(|p| p.incomplete == 0 && p.bad_payloads == 0)
}

/// A node's side of the start: says where `listener` listens (`listening ADDR` on stdout) and
/// reads every node's address from stdin (one line, comma-separated, in node order).
pub fn rendezvous(listener: &TcpListener) -> anyhow::Result<Vec<SocketAddr>> {
    println!("listening {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    line.trim().split(',').map(|a| a.parse().with_context(|| format!("`{a}` is not a node address"))).collect()
}

/// A node started by the launcher: listens, says where, learns the others' addresses on its
/// standard input, connects, and runs.
pub fn tcp_node(
    sc: &Scenario,
    origin: &str,
    out: &Path,
    rank: u32,
    epoch_ns: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<Option<RunReport>> {
    let pipe = sc.pipe.as_ref().context("the scenario has no [pipe] section")?;
    let listener = listen("127.0.0.1:0".parse().expect("an address"), &sc.deploy.tcp_congestion)?;
    let addrs = rendezvous(&listener).with_context(|| format!("node {rank}"))?;
    let members = PipeRoles::of(pipe, true).members();
    anyhow::ensure!(addrs.len() == members as usize, "node {rank}: {} addresses for {members} processes", addrs.len());
    let cfg = MeshConfig {
        run_id: sc.deploy.run_id,
        congestion: sc.deploy.tcp_congestion.clone(),
        request_bytes: pipe.request_bytes,
        fill: super::filler(pipe).into(),
        startup: Duration::from_millis(sc.deploy.startup_timeout_ms),
        heartbeat: Duration::from_millis(sc.deploy.heartbeat_ms),
        peer_timeout: Duration::from_millis(sc.deploy.peer_timeout_ms),
    };
    let mut mesh = TcpMesh::connect(rank, listener, &addrs, &cfg)?;
    // Node 0 tells the launcher how the run goes, never blocking on it.
    let beacon = Beacon::start(rank == 0);
    let mut tell = |done: u64, total: u64| {
        beacon.set(done, done);
        progress(done, total);
    };
    // Node 0 stops the run on SIGINT or SIGTERM (the launcher's death signal among them) and
    // writes an interrupted report; the other nodes just end.
    let stop = (rank == 0).then(crate::launcher::interrupted);
    run_node(sc, origin, out, &mut mesh, epoch_at(epoch_ns), &mut tell, stop)
}

/// The node processes of a run, killed as one group if the launcher gives up.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        if let Some(c) = self.0.first() {
            // SAFETY: kill has no memory-safety preconditions; a negative pid is the group.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
        }
        self.0.iter_mut().for_each(|c| drop(c.wait()));
    }
}

/// Runs the scenario's pipe with every node a process on this machine, over TCP on loopback.
/// Returns node 0's report (also in `out/report.json`) and its exit code.
pub fn launch(sc: &Scenario, opts: &PipeLaunch) -> anyhow::Result<(RunReport, i32)> {
    let n = PipeRoles::of(sc.pipe.as_ref().context("the scenario has no [pipe] section")?, true).members();
    let (sc, file) = prepare_out(sc, &opts.out, &["report.json", "latency.parquet", "scenario.toml"])?;
    let report_path = opts.out.join("report.json");
    let epoch_ns = mono_ns();
    let mut nodes = Nodes(Vec::new());
    let (tx, rx) = channel();
    let (lines_tx, lines) = channel();
    for rank in 0..n {
        let mut c = Command::new(&opts.exe);
        c.args(["pipe", &file.to_string_lossy(), "--out", &opts.out.to_string_lossy(), "--origin", &opts.origin]);
        c.args(["--rank", &rank.to_string(), "--epoch-ns", &epoch_ns.to_string()]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        owned_by_caller(&mut c, nodes.0.first().map_or(0, |c| c.id() as i32));
        let mut child = c.spawn().with_context(|| format!("cannot start node {rank}"))?;
        let out = child.stdout.take().expect("piped");
        let (tx, lines) = (tx.clone(), lines_tx.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening ") {
                    let _ = tx.send((rank, addr.to_string()));
                } else if let Some(SupervisorLine::Progress { finished, .. }) = SupervisorLine::parse(&line) {
                    let _ = lines.send(finished);
                } else {
                    println!("{line}");
                }
            }
        });
        nodes.0.push(child);
    }
    let mut addrs = vec![String::new(); n as usize];
    let until = Instant::now() + Duration::from_millis(sc.deploy.startup_timeout_ms);
    for _ in 0..n {
        let Ok((rank, addr)) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) else {
            bail!("not every node started within deploy.startup_timeout_ms; their errors are above");
        };
        addrs[rank as usize] = addr;
    }
    let list = addrs.join(",") + "\n";
    for c in &mut nodes.0 {
        c.stdin.take().expect("piped").write_all(list.as_bytes()).context("cannot tell a node the addresses")?;
    }
    let watched = watch(&mut nodes, &sc, opts.kill, epoch_ns, &lines)?;
    let status = nodes.0[0].wait()?;
    let code = status.code().unwrap_or(1);
    let until = Instant::now() + super::STALL;
    while Instant::now() < until && nodes.0.iter_mut().any(|c| matches!(c.try_wait(), Ok(None))) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(nodes);
    let killed_at = watched.killed_at;
    if !report_path.exists() {
        let reason = match watched.hung {
            Some(silent) => format!("no sign of life for {:.1} s: stopped or hung; killed", silent.as_secs_f64()),
            None if killed_at.is_some() && opts.kill.is_some_and(|(k, _)| k == 0) => "killed (--kill)".to_string(),
            None => format!("ended ({status}) without a report; its error, if any, is above"),
        };
        let fault = FaultRecord {
            at_s: watched.at_s,
            role: "node 0".into(),
            noticed_by: "launcher".into(),
            reason,
            lost_events: Vec::new(),
        };
        let r = failed_report(&sc, &opts.origin, fault, watched.finished);
        write_report(&report_path, &r)?;
        return Ok((r, 1));
    }
    let text =
        std::fs::read_to_string(&report_path).with_context(|| format!("cannot read {}", report_path.display()))?;
    let mut report: RunReport = serde_json::from_str(&text).context("node 0's report does not parse")?;
    if let (Some(t), Some((k, _)), Some(p)) = (killed_at, opts.kill, report.pipe.as_mut()) {
        p.lost_nodes.iter_mut().filter(|l| l.node == k).for_each(|l| l.killed_at_s = Some(t));
        write_report(&report_path, &report)?;
    }
    Ok((report, code))
}

/// What the launcher saw of node 0.
struct Watched {
    /// When node `--kill` was killed, seconds since the epoch.
    killed_at: Option<f64>,
    /// Node 0 was killed as hung after this long without a progress line.
    hung: Option<Duration>,
    /// When node 0 ended (or was killed), seconds since the epoch.
    at_s: f64,
    /// Events node 0 last said were built or lost (warm-up included).
    finished: u64,
}

/// Waits for node 0 to end (at most the scenario's time limit), killing node `kill` on the way,
/// passing SIGINT and SIGTERM on to node 0, and killing node 0 itself if it stays silent for [`crate::launcher::hang_after`] (counted in the
/// launcher's own running time, as `daqnet run` counts it).
fn watch(
    nodes: &mut Nodes,
    sc: &Scenario,
    kill: Option<(u32, Duration)>,
    epoch_ns: u64,
    lines: &Receiver<u64>,
) -> anyhow::Result<Watched> {
    let epoch = epoch_at(epoch_ns);
    let limit = Duration::from_secs_f64(sc.run.time_limit_s);
    let mut w = Watched { killed_at: None, hung: None, at_s: 0.0, finished: 0 };
    let mut silence = Silence::new();
    let (interrupted, mut forwarded) = (crate::launcher::interrupted(), false);
    loop {
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) && !forwarded {
            // Node 0 stops the run and writes its report, marked interrupted.
            forwarded = true;
            // SAFETY: as in `Nodes::drop`.
            unsafe { libc::kill(nodes.0[0].id() as i32, libc::SIGTERM) };
        }
        w.at_s = epoch.elapsed().as_secs_f64();
        if nodes.0[0].try_wait()?.is_some() {
            return Ok(w);
        }
        silence.turn();
        while let Ok(f) = lines.try_recv() {
            w.finished = f;
            silence.heard();
        }
        let silent = silence.silent();
        if silent > hang_after(sc) {
            // SAFETY: as in `Nodes::drop`.
            unsafe { libc::kill(nodes.0[0].id() as i32, libc::SIGKILL) };
            w.hung = Some(silent);
            return Ok(w);
        }
        if let Some((k, after)) = kill.filter(|_| w.killed_at.is_none()) {
            if epoch.elapsed() >= after {
                // SAFETY: as in `Nodes::drop`.
                unsafe { libc::kill(nodes.0[k as usize].id() as i32, libc::SIGKILL) };
                w.killed_at = Some(epoch.elapsed().as_secs_f64());
            }
        }
        if epoch.elapsed() > limit {
            return Err(anyhow::anyhow!(
                "the run went past run.time_limit_s ({} s); its nodes are killed",
                sc.run.time_limit_s
            )
            .context(daqnet_core::output::RunFailed));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Writes the launcher's `report.json` whole; a failure to is a failed run.
pub(crate) fn write_report(path: &Path, r: &RunReport) -> anyhow::Result<()> {
    daqnet_core::output::write_whole(path, r.to_json().as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
        .context(daqnet_core::output::RunFailed)
}

/// The report of a run that ended with `fault` and without node 0's report: the event
/// manager's log went with node 0, so the measured events it had settled (`finished`, warm-up
/// included) are lost and the rest abandoned.
pub(crate) fn failed_report(sc: &Scenario, origin: &str, mut fault: FaultRecord, finished: u64) -> RunReport {
    let lost = finished.saturating_sub(sc.run.warmup_events).min(sc.run.events);
    fault.reason = format!("{} ({finished} events had settled; their results are lost with node 0)", fault.reason);
    let mut r = RunReport::measured("run", origin, sc, Measure::new(0).finish());
    r.wall_s = fault.at_s;
    r.events_not_built = NotBuilt { timed_out: 0, lost, abandoned: sc.run.events - lost };
    r.faults = vec![fault];
    r
}
