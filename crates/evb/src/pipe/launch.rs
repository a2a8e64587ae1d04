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
use crate::launcher::{owned_by_caller, prepare_out};
use anyhow::{bail, Context};
use daqnet_core::pipe::PipeRoles;
use daqnet_core::report::RunReport;
use daqnet_core::Scenario;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
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
    };
    let mut mesh = TcpMesh::connect(rank, listener, &addrs, &cfg)?;
    run_node(sc, origin, out, &mut mesh, epoch_at(epoch_ns), progress)
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
    for rank in 0..n {
        let mut c = Command::new(&opts.exe);
        c.args(["pipe", &file.to_string_lossy(), "--out", &opts.out.to_string_lossy(), "--origin", &opts.origin]);
        c.args(["--rank", &rank.to_string(), "--epoch-ns", &epoch_ns.to_string()]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        owned_by_caller(&mut c, nodes.0.first().map_or(0, |c| c.id() as i32));
        let mut child = c.spawn().with_context(|| format!("cannot start node {rank}"))?;
        let out = child.stdout.take().expect("piped");
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening ") {
                    let _ = tx.send((rank, addr.to_string()));
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
    let killed_at = watch(&mut nodes, &sc, opts.kill, epoch_ns)?;
    let code = nodes.0[0].wait()?.code().unwrap_or(1);
    let until = Instant::now() + super::STALL;
    while Instant::now() < until && nodes.0.iter_mut().any(|c| matches!(c.try_wait(), Ok(None))) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(nodes);
    let text = std::fs::read_to_string(&report_path)
        .with_context(|| format!("node 0 exited ({code}) without a report; its error is above"))?;
    let mut report: RunReport = serde_json::from_str(&text).context("node 0's report does not parse")?;
    if let (Some(t), Some((k, _)), Some(p)) = (killed_at, opts.kill, report.pipe.as_mut()) {
        p.lost_nodes.iter_mut().filter(|l| l.node == k).for_each(|l| l.killed_at_s = Some(t));
        std::fs::write(&report_path, report.to_json())?;
    }
    Ok((report, code))
}

/// Waits for node 0 to end (at most the scenario's time limit), killing node `kill` on the way;
/// returns when it was killed, seconds since the epoch.
fn watch(
    nodes: &mut Nodes,
    sc: &Scenario,
    kill: Option<(u32, Duration)>,
    epoch_ns: u64,
) -> anyhow::Result<Option<f64>> {
    let epoch = epoch_at(epoch_ns);
    let limit = Duration::from_secs_f64(sc.run.time_limit_s);
    let mut killed_at = None;
    loop {
        if nodes.0[0].try_wait()?.is_some() {
            return Ok(killed_at);
        }
        if let Some((k, after)) = kill.filter(|_| killed_at.is_none()) {
            if epoch.elapsed() >= after {
                // SAFETY: as in `Nodes::drop`.
                unsafe { libc::kill(nodes.0[k as usize].id() as i32, libc::SIGKILL) };
                killed_at = Some(epoch.elapsed().as_secs_f64());
            }
        }
        if epoch.elapsed() > limit {
            bail!("the run went past run.time_limit_s ({} s); its nodes are killed", sc.run.time_limit_s);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
