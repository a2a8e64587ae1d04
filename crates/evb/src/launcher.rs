//! `daqnet run`: starts every role of a scenario as its own process on this machine (the
//! supervisor first, on a free loopback port unless `deploy.supervisor` says otherwise), watches
//! the supervisor, and always leaves a report.
//!
//! The launcher owns its children: they form one process group, and each dies with the
//! launcher (`PR_SET_PDEATHSIG`: the supervisor then writes an interrupted report). The
//! supervisor tells the launcher where it listens and that it is alive ([`SupervisorLine`]); a
//! supervisor that dies, or stays silent for [`hang_after`], is replaced as the report's author:
//! the launcher writes a report naming it as the failed role. SIGINT and SIGTERM make the
//! supervisor stop the run and write a report marked `interrupted`.

use crate::role::{RoleArgs, RoleId, SupervisorLine};
use anyhow::{anyhow, bail, Context};
use daqnet_core::output::{write_whole, RunFailed};
use daqnet_core::report::{EventRecord, FaultRecord, Measure, NotBuilt, RunReport, Track};
use daqnet_core::workload::mix;
use daqnet_core::{EventId, NodeId, PuId, ReadoutId, Scenario};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Prepares a role's command before it starts, e.g. to run it inside a network namespace
/// (the testbed). Without one, every role runs where the launcher runs.
pub type Placement = Arc<dyn Fn(RoleId, &mut Command) -> anyhow::Result<()> + Send + Sync>;

/// A progress callback: (events finished, events in all — `None` for a timed run).
pub type OnProgress = Box<dyn FnMut(u64, Option<u64>)>;

/// What `daqnet run` was asked to do.
#[derive(Default)]
pub struct LaunchOptions {
    /// The `daqnet` executable to start roles with.
    pub exe: PathBuf,
    /// The scenario's name in the report.
    pub origin: String,
    /// Output folder: report, per-event CSV, the resolved scenario, `roles.json`.
    pub out: PathBuf,
    /// Per-event CSV.
    pub per_event: bool,
    /// Prometheus endpoint address.
    pub metrics: Option<String>,
    /// Run for this many seconds instead of a number of events.
    pub duration_s: Option<f64>,
    /// Fault injection: corrupt (readout unit, event).
    pub corrupt: Vec<(ReadoutId, EventId)>,
    /// Where each role runs (default: here).
    pub place: Option<Placement>,
    /// Called with (events finished, events in all — `None` for a timed run) as the run goes.
    pub progress: Option<OnProgress>,
    /// TCP senders every readout unit and collector samples, into `out/trace-tcp-HOST.csv`
    /// ([`crate::net::tcp_trace`]).
    pub trace: Option<daqnet_core::trace::TraceSpec>,
}

/// A finished launch.
#[derive(Debug)]
pub struct Launched {
    /// The run report (also in `out/report.json`).
    pub report: RunReport,
    /// Where it was written.
    pub path: PathBuf,
    /// 0 when every event was built and verified; 1 otherwise.
    pub code: i32,
}

/// The files a run writes into its output folder; they are removed before it starts, so that
/// none of them can be mistaken for this run's if it fails.
pub const OUTPUT_FILES: [&str; 6] =
    ["report.json", "latency.parquet", "events.csv", "events.parquet", "roles.json", "scenario.toml"];

/// How long a supervisor may stay silent (it reports every 100 ms) before it is declared hung:
/// twice the peer timeout, at least one second.
pub fn hang_after(sc: &Scenario) -> Duration {
    Duration::from_millis((2 * sc.deploy.peer_timeout_ms).max(1000))
}

/// How long a watched role has been silent, counted in the watcher's own running time: a turn
/// of the watcher's loop longer than 100 ms means the watcher itself was stopped (Ctrl-Z) or
/// starved, and the role is not to blame for what the watcher did not read meanwhile.
pub struct Silence {
    silent: Duration,
    turn: Instant,
}

impl Silence {
    /// Nothing unheard yet.
    pub fn new() -> Silence {
        Silence { silent: Duration::ZERO, turn: Instant::now() }
    }

    /// A turn of the watcher's loop: the time since the last one counts, 100 ms at most.
    pub fn turn(&mut self) {
        self.silent += self.turn.elapsed().min(Duration::from_millis(100));
        self.turn = Instant::now();
    }

    /// The silence so far.
    pub fn silent(&self) -> Duration {
        self.silent
    }

    /// The role was heard from.
    pub fn heard(&mut self) {
        self.silent = Duration::ZERO;
    }
}

impl Default for Silence {
    fn default() -> Silence {
        Silence::new()
    }
}

/// The fault of a run whose launcher died, noticed by `noticed_by` (the role its death signal
/// stopped, which wrote the report).
pub fn launcher_died(at_s: f64, noticed_by: String) -> FaultRecord {
    FaultRecord {
        at_s,
        role: "launcher".into(),
        noticed_by,
        reason: "the launcher died: its death signal stopped the run".into(),
        lost_events: Vec::new(),
    }
}

/// The process group of a run's roles, killed as one.
struct Roles {
    procs: Vec<(RoleId, Child)>,
    group: Option<i32>,
}

/// Makes `cmd`'s process get SIGTERM when the thread that starts it ends (with its process,
/// however it dies: `PR_SET_PDEATHSIG`), and join process group `group` (0: a new group led by
/// itself). Start it from a thread that outlives it.
pub fn owned_by_caller(cmd: &mut Command, group: i32) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, group) != 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

impl Roles {
    fn spawn(&mut self, role: RoleId, mut cmd: Command) -> anyhow::Result<&mut Child> {
        owned_by_caller(&mut cmd, self.group.unwrap_or(0));
        let child = cmd.spawn().with_context(|| format!("cannot start {role}"))?;
        self.group.get_or_insert(child.id() as i32);
        self.procs.push((role, child));
        Ok(&mut self.procs.last_mut().expect("just pushed").1)
    }

    fn signal(&self, role: RoleId, sig: i32) {
        if let Some((_, c)) = self.procs.iter().find(|(r, _)| *r == role) {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    /// Gives the roles `grace` to exit on their own, then kills the whole group and reaps it.
    fn end(mut self, grace: Duration) {
        let until = Instant::now() + grace;
        while Instant::now() < until && self.procs.iter_mut().any(|(_, c)| matches!(c.try_wait(), Ok(None))) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for (role, c) in &mut self.procs {
            if matches!(c.try_wait(), Ok(None)) {
                eprintln!("daqnet run: {role} did not exit; killing it");
            }
        }
        if let Some(g) = self.group {
            // SAFETY: as above; a negative pid names the process group.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
        for (_, c) in &mut self.procs {
            let _ = c.wait();
        }
    }
}

impl Drop for Roles {
    fn drop(&mut self) {
        if let Some(g) = self.group.take() {
            // SAFETY: as above. Reached only on an error path: nothing of the run survives it.
            unsafe { libc::kill(-g, libc::SIGKILL) };
            self.procs.iter_mut().for_each(|(_, c)| drop(c.wait()));
        }
    }
}

/// Runs the scenario with every role as a local process and returns its report.
pub fn launch(sc: &Scenario, opts: &mut LaunchOptions) -> anyhow::Result<Launched> {
    let (sc, file) = prepare_out(sc, &opts.out, &OUTPUT_FILES)?;
    let ended = run_roles(&sc, opts, &file, interrupted())?;
    finish(&sc, opts, ended)
}

/// Prepares a run's output folder `out`: creates it, removes the stale `files` of an earlier
/// run, gives the scenario a fresh run id if it has none, and writes it resolved to
/// `out/scenario.toml` — every process reads that file, so `--set` overrides reach them all.
/// Returns the scenario and the file.
pub fn prepare_out(sc: &Scenario, out: &Path, files: &[&str]) -> anyhow::Result<(Scenario, PathBuf)> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for f in files {
        let p = out.join(f);
        std::fs::remove_file(&p)
            .or_else(|e| if p.exists() { Err(e) } else { Ok(()) })
            .with_context(|| format!("cannot remove the stale {}", p.display()))?;
    }
    let mut sc = sc.clone();
    if sc.deploy.run_id == 0 {
        sc.deploy.run_id = fresh_run_id();
    }
    let file = out.join("scenario.toml");
    write_whole(&file, sc.to_toml().as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))
        .context(RunFailed)?;
    Ok((sc, file))
}

/// Set once SIGINT or SIGTERM has arrived. The first call installs the handlers: from then on
/// those signals ask the process to stop (the launcher forwards them to the supervisor, loops
/// over runs stop between runs), and a second SIGINT ends it at once. A second SIGTERM does
/// not: a launcher killed with SIGKILL sends its children's death signal once per thread of its
/// that ends, and the role must live on to write its report.
pub fn interrupted() -> &'static AtomicBool {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        // Registration fails only for forbidden signals; these two are allowed.
        let _ = signal_hook::flag::register_conditional_shutdown(libc::SIGINT, 130, flag.clone());
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
}

/// A run id nobody else is likely to use: the launcher's pid and clock, mixed, in 63 bits (a
/// TOML integer is signed).
fn fresh_run_id() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    (mix(t ^ ((std::process::id() as u64) << 32)) >> 1).max(1)
}

/// The role that is the run's rendezvous and writes its report: the supervisor, or a
/// sub-farm's controller.
pub fn head(sc: &Scenario) -> RoleId {
    if sc.farm.is_some() {
        RoleId::Sfc
    } else {
        RoleId::Supervisor
    }
}

/// How the supervisor ended.
enum Ended {
    /// It exited with this code (its report, if any, is in the output folder).
    Exited(i32),
    /// It died of a signal or was killed as hung: the launcher writes the report.
    Failed { reason: String, at_s: f64, assigned: u64, finished: u64 },
}

fn role_command(opts: &LaunchOptions, file: &Path, role: RoleId) -> anyhow::Result<Command> {
    let mut c = Command::new(&opts.exe);
    let mut a = RoleArgs::new(role, file.to_path_buf());
    a.out = opts.out.clone();
    if matches!(role, RoleId::Supervisor | RoleId::Sfc) {
        a.launched = true;
        a.quiet = true;
        a.origin = Some(opts.origin.clone());
        a.per_event = opts.per_event;
        a.metrics = opts.metrics.clone();
        a.duration_s = opts.duration_s;
    }
    if matches!(role, RoleId::Readout(_) | RoleId::Collector(_)) {
        a.trace = opts.trace.clone().filter(|t| !t.senders.is_empty());
    }
    if let RoleId::Readout(r) = role {
        a.corrupt_event = opts.corrupt.iter().filter(|(cr, _)| *cr == r).map(|(_, e)| e.0).collect();
    }
    c.arg(crate::role::VERB).args(a.to_args());
    if let Some(place) = &opts.place {
        place(role, &mut c).with_context(|| format!("cannot place {role}"))?;
    }
    Ok(c)
}

fn run_roles(sc: &Scenario, opts: &mut LaunchOptions, file: &Path, interrupted: &AtomicBool) -> anyhow::Result<Ended> {
    let mut roles = Roles { procs: Vec::new(), group: None };
    let mut cmd = role_command(opts, file, head(sc))?;
    cmd.stdout(Stdio::piped());
    let sup = roles.spawn(head(sc), cmd)?;
    let lines = read_lines(sup.stdout.take().expect("piped"));
    let deadline = Instant::now() + Duration::from_millis(sc.deploy.startup_timeout_ms);
    let addr = loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(SupervisorLine::Listening { addr }) => break addr,
            Ok(_) => continue,
            Err(_) => bail!("the supervisor did not start; its error is above"),
        }
    };
    let layout_roles: Vec<RoleId> = match &sc.farm {
        Some(f) => (0..f.workers).map(|w| RoleId::Worker(daqnet_core::WorkerId(w))).collect(),
        None => {
            sc.layout().readouts().map(RoleId::Readout).chain(sc.layout().all_nodes().map(RoleId::Collector)).collect()
        }
    };
    for role in layout_roles {
        let mut c = role_command(opts, file, role)?;
        c.args(["--supervisor", &addr]);
        roles.spawn(role, c)?;
    }
    let table: Vec<serde_json::Value> =
        roles.procs.iter().map(|(r, c)| serde_json::json!({ "role": r.to_string(), "pid": c.id() })).collect();
    let _ = write_whole(&opts.out.join("roles.json"), serde_json::to_string_pretty(&table)?.as_bytes());
    let ended = watch(sc, opts, &mut roles, &lines, interrupted);
    roles.end(Duration::from_secs(1));
    Ok(ended)
}

/// Reads the supervisor's stdout on a thread: its lines for the launcher go to the channel;
/// anything else is passed through.
fn read_lines(out: std::process::ChildStdout) -> Receiver<SupervisorLine> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            match SupervisorLine::parse(&line) {
                Some(l) => {
                    if tx.send(l).is_err() {
                        return;
                    }
                }
                None => println!("{line}"),
            }
        }
    });
    rx
}

/// Watches the supervisor until it exits or is declared hung; forwards an interruption to it.
fn watch(
    sc: &Scenario,
    opts: &mut LaunchOptions,
    roles: &mut Roles,
    lines: &Receiver<SupervisorLine>,
    interrupted: &AtomicBool,
) -> Ended {
    let total = opts.duration_s.is_none().then_some(sc.run.warmup_events + sc.run.events);
    let (mut assigned, mut finished) = (0, 0);
    let start = Instant::now();
    let mut silence = Silence::new();
    let mut forwarded = false;
    loop {
        silence.turn();
        match lines.recv_timeout(Duration::from_millis(10)) {
            Ok(SupervisorLine::Progress { assigned: a, finished: f }) => {
                (assigned, finished) = (a, f);
                silence.heard();
                if let Some(p) = &mut opts.progress {
                    p(f, total);
                }
            }
            Ok(SupervisorLine::Listening { .. }) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => silence.heard(),
        }
        if let Some(status) = roles.procs[0].1.try_wait().ok().flatten() {
            return match status.code() {
                Some(code) => Ended::Exited(code),
                None => {
                    let reason = format!("the {} died ({status})", head(sc));
                    Ended::Failed { reason, at_s: start.elapsed().as_secs_f64(), assigned, finished }
                }
            };
        }
        if interrupted.load(Ordering::Relaxed) && !forwarded {
            forwarded = true;
            silence.heard();
            roles.signal(head(sc), libc::SIGTERM);
        }
        let silent = silence.silent();
        if silent > hang_after(sc) {
            roles.signal(head(sc), libc::SIGKILL);
            let reason = format!(
                "no sign of life from the {} for {:.1} s: stopped or hung; killed",
                head(sc),
                silent.as_secs_f64()
            );
            return Ended::Failed { reason, at_s: start.elapsed().as_secs_f64(), assigned, finished };
        }
    }
}

/// The report: the supervisor's, or — when it failed — one the launcher writes.
fn finish(sc: &Scenario, opts: &LaunchOptions, ended: Ended) -> anyhow::Result<Launched> {
    let path = opts.out.join("report.json");
    let (code, report) = match ended {
        Ended::Exited(code) if path.exists() => {
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            (code, serde_json::from_str(&text).with_context(|| format!("{} is not a run report", path.display()))?)
        }
        Ended::Exited(code) => {
            return Err(
                anyhow!("the {} exited ({code}) without a report; its error is above", head(sc)).context(RunFailed)
            )
        }
        Ended::Failed { reason, at_s, assigned, finished } => {
            let rows = if opts.per_event { recover_rows(&opts.out) } else { None };
            let r = launcher_report(sc, opts, (reason, at_s), (assigned, finished), rows.as_deref());
            write_whole(&path, r.to_json().as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))
                .context(RunFailed)?;
            (1, r)
        }
    };
    Ok(Launched { report, path, code: code.clamp(0, 255) })
}

/// The whole rows of the `events.csv` a failed head role was writing (its partial file), now
/// `events.csv` itself; `None` if there is none.
fn recover_rows(out: &Path) -> Option<Vec<EventRecord>> {
    let csv = out.join("events.csv");
    let partial = daqnet_core::output::partial_name(&csv);
    let rows = EventRecord::from_csv_prefix(&std::fs::read_to_string(&partial).ok()?);
    let _ = std::fs::remove_file(&partial);
    match write_whole(&csv, EventRecord::to_csv(&rows).as_bytes()) {
        Ok(()) => Some(rows),
        Err(e) => {
            eprintln!("daqnet run: cannot write {} ({e}): the events built are not counted", csv.display());
            None
        }
    }
}

/// The report of a run whose supervisor failed. The events in the rows it wrote (`rows`, with
/// per-event records) count as built, with their latencies; the other measured events it had
/// assigned are lost with it, and the rest abandoned; the supervisor is the failed role.
fn launcher_report(
    sc: &Scenario,
    opts: &LaunchOptions,
    (reason, at_s): (String, f64),
    (assigned, finished): (u64, u64),
    rows: Option<&[EventRecord]>,
) -> RunReport {
    let measured_assigned = assigned.saturating_sub(sc.run.warmup_events);
    let target = if opts.duration_s.is_some() { measured_assigned } else { sc.run.events };
    let mut measure = Measure::new(sc.run.warmup_events);
    for r in rows.unwrap_or_default() {
        let (pu, node) = (PuId(r.pu), NodeId(r.node));
        let t = Track {
            event: EventId(r.event),
            pu,
            node,
            assigned: r.assigned_ns,
            started: r.start_ns,
            done: r.done_ns,
            latency: r.latency_ns,
            bytes: r.bytes,
        };
        measure.record(&t);
    }
    let measured = measure.finish();
    let built = measured.events_built.min(target);
    let lost = measured_assigned.min(target).saturating_sub(built);
    let counted = match rows {
        Some(_) => {
            format!("the {built} measured in events.csv are counted, the results of the others are lost with it")
        }
        None => "their results are lost with it".into(),
    };
    let fault = FaultRecord {
        at_s,
        role: head(sc).to_string(),
        noticed_by: "launcher".into(),
        reason: format!("{reason} ({finished} events had finished; {counted})"),
        lost_events: Vec::new(),
    };
    let mut r = RunReport::measured("run", &opts.origin, sc, measured);
    r.events_not_built = NotBuilt { timed_out: 0, lost, abandoned: target - built - lost };
    r.faults = vec![fault];
    r
}

/// Rejects a `duration` that no run can have: not finite, not positive, or beyond
/// [`MAX_DURATION_S`].
pub fn check_duration(flag: &str, d: f64) -> anyhow::Result<()> {
    if !(d.is_finite() && d > 0.0 && d <= MAX_DURATION_S) {
        return Err(anyhow!("{flag} {d}: must be a number of seconds above 0 and at most {MAX_DURATION_S} (30 days)"));
    }
    Ok(())
}

/// The longest timed run, seconds (30 days).
pub const MAX_DURATION_S: f64 = 30.0 * 86_400.0;
