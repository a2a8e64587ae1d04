//! `daqnet pipe --transport mpi --mpirun ARGS`: daqnet starts the MPI job itself
//! (`mpirun -np N ARGS daqnet pipe …`) and watches it, so that whatever ends the job, a report
//! names what ended it.
//!
//! Over MPI a dead rank takes the job with it (Open MPI's `MPI_ERRORS_ARE_FATAL`; see
//! [`super::mpi`]), and nothing inside the job is left to say so. The watcher stands outside:
//! it knows the ranks that run on this machine (`mpirun`'s children, each carrying its rank in
//! `OMPI_COMM_WORLD_RANK`) and hears node 0's progress lines through `mpirun`'s standard
//! output. When a rank ends before the run is over, it asks node 0 to stop the run (SIGTERM:
//! node 0 writes an interrupted report from its own event-manager log, which the watcher
//! completes with the fault), and ends the job if node 0 cannot. When node 0 falls silent, it
//! names the ranks it finds stopped and ends the job. When no node 0 report comes, the watcher
//! writes one: node 0's settled events lost with it, the rest abandoned.

use super::launch::{clean, epoch_at, failed_report, write_report};
use crate::launcher::{hang_after, owned_by_caller, prepare_out, Silence};
use crate::role::SupervisorLine;
use anyhow::Context;
use daqnet_core::pipe::PipeRoles;
use daqnet_core::report::{FaultRecord, RunReport};
use daqnet_core::Scenario;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

/// What `daqnet pipe --mpirun` was asked to do.
pub struct MpiLaunch {
    /// The `daqnet` executable every rank runs (built with the `mpi` feature).
    pub exe: PathBuf,
    /// The scenario's name in the report.
    pub origin: String,
    /// Output folder: report.json and the resolved scenario.
    pub out: PathBuf,
    /// Arguments for `mpirun` besides `-np`, e.g. `--hostfile hosts` or `--oversubscribe`.
    pub mpirun_args: Vec<String>,
    /// Kill the rank `k` (one on this machine) this long after the start.
    pub kill: Option<(u32, Duration)>,
}

/// The line node 0 prints first when watched: its epoch on the monotonic clock, ns.
pub const EPOCH_LINE: &str = "epoch ";

/// What the job's output says.
enum Heard {
    /// Node 0's epoch, ns on the monotonic clock.
    Epoch(u64),
    /// Node 0's count of settled events.
    Progress(u64),
    /// `mpirun` says rank `k` ended abnormally; its words.
    Noticed(u32, String),
}

/// The ranks on this machine: rank → pid, from `mpirun`'s children and their environment.
fn local_ranks(mpirun: u32) -> BTreeMap<u32, i32> {
    let tasks = std::fs::read_dir(format!("/proc/{mpirun}/task")).into_iter().flatten().flatten();
    let children: Vec<String> = tasks.filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok()).collect();
    let pids = children.iter().flat_map(|c| c.split_whitespace()).filter_map(|p| p.parse().ok());
    pids.filter_map(|pid| Some((rank_of(pid)?, pid))).collect()
}

/// The MPI rank of process `pid`, from its environment.
fn rank_of(pid: i32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|v| std::str::from_utf8(v.strip_prefix(b"OMPI_COMM_WORLD_RANK=")?).ok()?.parse().ok())
}

/// The state letter of process `pid` (`T` stopped, `Z` ended and not yet reaped), if it exists.
fn state_of(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `mpirun`'s line naming a rank that ended abnormally, e.g. "mpirun noticed that process rank
/// 3 with PID 0 on node vm exited on signal 9 (Killed)."
fn noticed(line: &str) -> Option<(u32, String)> {
    let rest = line.split_once("process rank ")?.1;
    let rank = rest.split_whitespace().next()?.parse().ok()?;
    let what = rest.split_once(" exited ").map_or(rest, |(_, w)| w).trim_end_matches('.');
    Some((rank, format!("exited {what} (mpirun)")))
}

/// The name of pipe process `k` in a report: `node K`, or `process K` with two processes per node.
fn member(sc: &Scenario, k: u32) -> String {
    match sc.pipe.as_ref().map_or(1, |p| p.processes_per_node) {
        1 => format!("node {k}"),
        _ => format!("process {k}"),
    }
}

/// The job: `mpirun` (leader of its own process group) and the ranks seen on this machine
/// (each in a group of its own), all killed if the watcher gives up.
struct Job {
    mpirun: Child,
    ranks: BTreeMap<u32, i32>,
}

impl Job {
    fn signal_mpirun(&self, sig: i32) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(self.mpirun.id() as i32, sig) };
    }

    /// Signals rank `k` if its pid still is that rank (not reused since it ended).
    fn signal_rank(&self, k: u32, sig: i32) -> bool {
        let ours = |pid: i32| rank_of(pid) == Some(k);
        // SAFETY: as above.
        self.ranks.get(&k).is_some_and(|&pid| ours(pid) && unsafe { libc::kill(pid, sig) } == 0)
    }

    fn kill_ranks(&self) {
        for &k in self.ranks.keys() {
            self.signal_rank(k, libc::SIGKILL);
        }
    }

    /// Kills the ranks and `mpirun` (not yet reaped: its pid is still its own).
    fn kill_all(&self) {
        self.kill_ranks();
        self.signal_mpirun(libc::SIGKILL);
    }
}

impl Drop for Job {
    /// Kills what is left of the job on this machine, and waits (2 s at most) for its ranks to
    /// be gone.
    fn drop(&mut self) {
        if matches!(self.mpirun.try_wait(), Ok(None)) {
            self.kill_all();
        }
        drop(self.mpirun.wait());
        // Still this job's rank: the pid has not been reused.
        let ours = |k: u32, pid: i32| rank_of(pid) == Some(k) && state_of(pid) != Some('Z');
        let until = Instant::now() + Duration::from_secs(2);
        while self.ranks.iter().any(|(&k, &pid)| ours(k, pid)) && Instant::now() < until {
            self.ranks.retain(|&k, &mut pid| ours(k, pid));
            self.kill_ranks();
            std::thread::sleep(Duration::from_millis(10));
        }
        // Ranks orphaned by mpirun's end were given to this process (a subreaper): reap them
        // until it has no child left.
        while Instant::now() < until {
            // SAFETY: waitpid with a null status pointer and WNOHANG only reaps ended children.
            match unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } {
                -1 => break,
                0 => std::thread::sleep(Duration::from_millis(10)),
                _ => {}
            }
        }
    }
}

/// Runs the scenario's pipe as an MPI job started by `mpirun`; returns the report (also in
/// `out/report.json`) and the exit code.
pub fn launch(sc: &Scenario, opts: &MpiLaunch) -> anyhow::Result<(RunReport, i32)> {
    let n = PipeRoles::of(sc.pipe.as_ref().context("the scenario has no [pipe] section")?, true).members();
    let (sc, file) = prepare_out(sc, &opts.out, &["report.json", "latency.parquet", "scenario.toml"])?;
    let report_path = opts.out.join("report.json");
    // Node 0 writes its report here; the watcher completes it (the fault it saw) into `out`, so
    // that nothing complete-looking is in `out` before it is.
    let stage = opts.out.join(STAGE);
    clear_stage(&stage)?;
    std::fs::create_dir_all(&stage).with_context(|| format!("cannot create {}", stage.display()))?;
    let node0_report = stage.join("report.json");
    let mut c = Command::new("mpirun");
    c.args(["-np", &n.to_string()]).args(&opts.mpirun_args).arg(&opts.exe);
    c.args(["pipe", &file.to_string_lossy(), "--transport", "mpi", "--watched", "-q"]);
    c.args(["--out", &stage.to_string_lossy(), "--origin", &opts.origin]);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    owned_by_caller(&mut c, 0);
    // Ranks orphaned when mpirun ends become this process's children, reaped when it is done.
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let mut mpirun =
        c.spawn().context("cannot start mpirun: is Open MPI installed? (scripts/mpi-deps.sh installs it)")?;
    let (tx, heard) = channel();
    listen(mpirun.stdout.take().expect("piped"), tx.clone(), false);
    listen(mpirun.stderr.take().expect("piped"), tx, true);
    let mut job = Job { mpirun, ranks: BTreeMap::new() };
    let w = watch(&mut job, &sc, opts.kill, &heard, &node0_report);
    drop(job);
    let w = w.inspect_err(|_| drop(clear_stage(&stage)))?;
    let fault = w.fault.or_else(|| {
        heard.try_iter().find_map(|h| match h {
            Heard::Noticed(k, why) => Some(fault(&sc, k, "mpirun", why, w.at_s)),
            _ => None,
        })
    });
    let report = match std::fs::read_to_string(&node0_report) {
        Ok(text) => {
            let mut r: RunReport = serde_json::from_str(&text).context("node 0's report does not parse")?;
            if let Some(f) = fault.filter(|f| !r.faults.iter().any(|g| g.role == f.role)) {
                r.faults.insert(0, f);
            }
            r
        }
        Err(_) => {
            let fault = fault.unwrap_or_else(|| {
                let why = format!("mpirun ended ({}) without a report; the ranks' errors, if any, are above", w.status);
                self::fault(&sc, 0, "launcher", why, w.at_s)
            });
            let mut r = failed_report(&sc, &opts.origin, fault, w.finished);
            r.interrupted = w.interrupted;
            r
        }
    };
    write_report(&report_path, &report)?;
    clear_stage(&stage)?;
    let code = if clean(&report) && w.status.success() { 0 } else { 1 };
    Ok((report, code))
}

/// Node 0's folder inside the output folder.
const STAGE: &str = ".node0";

fn clear_stage(stage: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(stage) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", stage.display()))
        }
        _ => Ok(()),
    }
}

fn fault(sc: &Scenario, k: u32, noticed_by: &str, reason: String, at_s: f64) -> FaultRecord {
    FaultRecord { at_s, role: member(sc, k), noticed_by: noticed_by.into(), reason, lost_events: Vec::new() }
}

/// Passes the lines of `mpirun`'s output on (standard error to standard error), keeping what
/// the watcher needs.
fn listen(from: impl std::io::Read + Send + 'static, tx: Sender<Heard>, stderr: bool) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            let h = if stderr {
                noticed(&line).map(|(k, why)| Heard::Noticed(k, why))
            } else if let Some(ns) = line.strip_prefix(EPOCH_LINE) {
                ns.trim().parse().ok().map(Heard::Epoch)
            } else {
                match SupervisorLine::parse(&line) {
                    Some(SupervisorLine::Progress { finished, .. }) => Some(Heard::Progress(finished)),
                    _ => None,
                }
            };
            let pass = !matches!(h, Some(Heard::Epoch(_) | Heard::Progress(_)));
            if pass && stderr {
                eprintln!("{line}");
            } else if pass {
                println!("{line}");
            }
            if h.is_some_and(|h| tx.send(h).is_err()) {
                return;
            }
        }
    });
}

/// What the watcher saw of the job.
struct Watched {
    /// What ended the run early, as far as the watcher knows.
    fault: Option<FaultRecord>,
    /// Events node 0 last said were settled (warm-up included).
    finished: u64,
    /// When the job ended, seconds since node 0's epoch (or since `mpirun` started).
    at_s: f64,
    /// The run was stopped by SIGINT or SIGTERM.
    interrupted: bool,
    status: ExitStatus,
}

/// How the watcher is ending the job.
#[derive(Clone, Copy)]
enum Ending {
    /// Node 0 has been asked to stop the run and write its report.
    AskedNode0(Instant),
    /// Waiting for `mpirun` to end the job on its own, as it does when a rank dies (a SIGTERM
    /// then can crash it).
    Waiting(Instant),
    /// `mpirun` has been asked to end the job.
    AskedMpirun(Instant),
}

/// The watcher's state between turns.
struct Watcher<'a> {
    sc: &'a Scenario,
    report: &'a std::path::Path,
    w: Watched,
    start: Instant,
    /// Node 0's epoch: the time line of the report.
    epoch: Instant,
    epoch_ns: Option<u64>,
    silence: Silence,
    /// Node 0 has said how the run goes.
    started: bool,
    /// A rank died: `mpirun` ends the job on its own.
    died: bool,
    /// Since when each rank has been seen stopped.
    stopped: BTreeMap<u32, Instant>,
    ending: Option<Ending>,
}

/// Waits for `mpirun` to end (at most the scenario's time limit), watching the ranks on this
/// machine and node 0's progress, killing rank `kill` on the way.
fn watch(
    job: &mut Job,
    sc: &Scenario,
    kill: Option<(u32, Duration)>,
    heard: &Receiver<Heard>,
    report: &std::path::Path,
) -> anyhow::Result<Watched> {
    let start = Instant::now();
    let w = Watched { fault: None, finished: 0, at_s: 0.0, interrupted: false, status: ExitStatus::default() };
    let mut me = Watcher {
        sc,
        report,
        w,
        start,
        epoch: start,
        epoch_ns: None,
        silence: Silence::new(),
        started: false,
        died: false,
        stopped: BTreeMap::new(),
        ending: None,
    };
    let (mut scanned, mut kill) = (start, kill);
    let interrupted = crate::launcher::interrupted();
    loop {
        if let Some(s) = job.mpirun.try_wait()? {
            me.w.status = s;
            me.w.at_s = me.epoch.elapsed().as_secs_f64();
            return Ok(me.w);
        }
        me.hear(heard);
        if scanned.elapsed() >= Duration::from_millis(20) {
            scanned = Instant::now();
            me.scan(job);
        }
        if let Some((k, after)) = kill {
            if start.elapsed() >= after && job.signal_rank(k, libc::SIGKILL) {
                kill = None;
            }
        }
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) && !me.w.interrupted {
            me.w.interrupted = true;
            me.ending.get_or_insert_with(|| ask_node0(job));
        }
        me.check_silence(job);
        me.end(job);
        if start.elapsed() > Duration::from_secs_f64(sc.run.time_limit_s) {
            return Err(anyhow::anyhow!(
                "the run went past run.time_limit_s ({} s); the MPI job is killed",
                sc.run.time_limit_s
            )
            .context(daqnet_core::output::RunFailed));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Watcher<'_> {
    fn at_s(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Takes in what the job's output said.
    fn hear(&mut self, heard: &Receiver<Heard>) {
        self.silence.turn();
        while let Ok(h) = heard.try_recv() {
            match h {
                Heard::Epoch(ns) => self.epoch_ns = Some(ns),
                Heard::Progress(f) => (self.w.finished, self.started) = (f, true),
                Heard::Noticed(k, why) => {
                    let f = fault(self.sc, k, "mpirun", why, self.at_s());
                    self.w.fault.get_or_insert(f);
                    continue;
                }
            }
            self.silence.heard();
        }
    }

    /// Looks at the ranks on this machine: one that ended before node 0's report, or that
    /// has been stopped for `deploy.peer_timeout_ms`, ends the run.
    fn scan(&mut self, job: &mut Job) {
        let seen = local_ranks(job.mpirun.id());
        job.ranks.extend(seen.iter().map(|(&k, &pid)| (k, pid)));
        if let (Some(ns), true) = (self.epoch_ns, job.ranks.contains_key(&0)) {
            // Node 0 runs here: its monotonic clock is this machine's.
            (self.epoch, self.epoch_ns) = (epoch_at(ns), None);
        }
        if self.ending.is_some() || self.report.exists() {
            return;
        }
        let state = |k: &u32, pid: i32| if seen.contains_key(k) { state_of(pid) } else { Some('Z') };
        let states: Vec<(u32, i32, Option<char>)> =
            job.ranks.iter().map(|(k, &pid)| (*k, pid, state(k, pid))).collect();
        self.stopped.retain(|k, _| states.iter().any(|&(j, _, st)| j == *k && st == Some('T')));
        let timeout = Duration::from_millis(self.sc.deploy.peer_timeout_ms);
        for (k, pid, st) in states {
            let why = match st {
                Some('Z') | None => {
                    self.died = true;
                    format!("ended before the run was over (pid {pid}; its status goes to mpirun)")
                }
                Some('T') if self.stopped.entry(k).or_insert_with(Instant::now).elapsed() > timeout => {
                    format!("stopped for {:.1} s (pid {pid}; kill -STOP or a debugger)", timeout.as_secs_f64())
                }
                _ => continue,
            };
            self.w.fault = Some(fault(self.sc, k, "launcher", why, self.at_s()));
            self.ending = Some(if k == 0 && !self.died { kill_now(job) } else { ask_node0(job) });
            return;
        }
    }

    /// Node 0 silent for [`hang_after`] (or not started within `deploy.startup_timeout_ms`):
    /// its loop is stuck, and the job is killed.
    fn check_silence(&mut self, job: &Job) {
        let silent = self.silence.silent();
        let startup = Duration::from_millis(self.sc.deploy.startup_timeout_ms);
        let stuck = if self.started { silent > hang_after(self.sc) } else { self.start.elapsed() > startup };
        if self.ending.is_none() && stuck {
            let what = if self.started {
                format!("no progress from node 0 for {:.1} s", silent.as_secs_f64())
            } else {
                format!("no progress within deploy.startup_timeout_ms ({} ms)", self.sc.deploy.startup_timeout_ms)
            };
            let why = format!("{what}: stopped or hung; the job is killed");
            self.w.fault = Some(fault(self.sc, 0, "launcher", why, self.at_s()));
            self.ending = Some(kill_now(job));
        }
    }

    /// Moves the job's end on: node 0's report written (or not within [`hang_after`]),
    /// `mpirun` is asked to end the job, and the job killed if it has not within as long.
    fn end(&mut self, job: &Job) {
        let grace = hang_after(self.sc);
        let written = self.report.exists();
        self.ending = match self.ending {
            Some(Ending::AskedNode0(at)) if self.died && (written || at.elapsed() > grace) => {
                Some(Ending::Waiting(Instant::now()))
            }
            Some(Ending::AskedNode0(at)) if written || at.elapsed() > grace => Some(end_mpirun(job)),
            Some(Ending::Waiting(at)) if at.elapsed() > grace => Some(end_mpirun(job)),
            Some(Ending::AskedMpirun(at)) if at.elapsed() > grace => Some(kill_now(job)),
            e => e,
        };
    }
}

/// Asks node 0 to stop the run and write its report; straight to `mpirun` when node 0 is not
/// on this machine.
fn ask_node0(job: &Job) -> Ending {
    if job.signal_rank(0, libc::SIGTERM) {
        Ending::AskedNode0(Instant::now())
    } else {
        end_mpirun(job)
    }
}

/// Asks `mpirun` to end the job (it sends every rank SIGTERM, then SIGKILL).
fn end_mpirun(job: &Job) -> Ending {
    job.signal_mpirun(libc::SIGTERM);
    Ending::AskedMpirun(Instant::now())
}

/// Kills the job's processes on this machine and `mpirun`.
fn kill_now(job: &Job) -> Ending {
    job.kill_all();
    Ending::AskedMpirun(Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpiruns_words_name_the_rank() {
        let line = "mpirun noticed that process rank 3 with PID 0 on node vm exited on signal 9 (Killed).";
        assert_eq!(noticed(line), Some((3, "exited on signal 9 (Killed) (mpirun)".into())));
        assert_eq!(noticed("Primary job  terminated normally, but 1 process returned"), None);
        assert_eq!(noticed("process rank x"), None);
    }

    #[test]
    fn a_process_state_is_read_from_proc() {
        // SAFETY: gettid has no preconditions. This thread, reading, runs.
        assert_eq!(state_of(unsafe { libc::gettid() }), Some('R'));
        assert_eq!(state_of(-1), None);
        // This process is no MPI rank, and has no children that are.
        assert_eq!(rank_of(std::process::id() as i32), None);
        assert!(local_ranks(std::process::id()).is_empty());
    }
}
