//! The supervisor role: the rendezvous of a run (every role registers with it, [`registry`]),
//! the run itself ([`state`]: the core supervisor, clearing, faults, metrics) and its
//! bookkeeping ([`tally`]), and the run report. This module is the thin async loop around them.

pub mod registry;
pub mod state;
pub mod tally;

use super::{every, ms, wake_at, Joined, Setup};
use crate::metrics::Metrics;
use crate::net::link::LinkWriter;
use crate::role::{Beacon, RoleId, SupervisorLine};
use crate::wire::Message;
use anyhow::Context;
use daqnet_core::report::{EventRecord, RunReport};
use daqnet_core::Scenario;
use registry::Registry;
use state::{Input, Output, Progress, RunState};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tally::{Fault, RunTally};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

/// A progress callback, told where the run stands every 100 ms.
pub type OnProgress = Box<dyn FnMut(&Progress) + Send>;

/// Options of the supervisor process.
#[derive(Default)]
pub struct SupervisorOptions {
    /// The scenario's name in the report (its file).
    pub origin: String,
    /// Listen address (default `deploy.supervisor`).
    pub listen: Option<String>,
    /// Started by `daqnet run`: tell the launcher on stdout where it listens and that it is
    /// alive ([`SupervisorLine`]).
    pub launched: bool,
    /// Serve Prometheus metrics on this address.
    pub metrics: Option<String>,
    /// Run for this long instead of a number of events.
    pub duration: Option<Duration>,
    /// Write a row per built event to this CSV file as events are built.
    pub per_event: Option<PathBuf>,
    /// Called every 100 ms with where the run stands (a progress display).
    pub progress: Option<OnProgress>,
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run report.
    pub report: RunReport,
}

impl Outcome {
    /// Every event built and verified, no fault, not interrupted.
    pub fn ok(&self) -> bool {
        let nb = &self.report.events_not_built;
        let r = &self.report;
        r.faults.is_empty() && !r.interrupted && nb.lost == 0 && nb.abandoned == 0 && nb.timed_out == 0
    }
}

enum Ev {
    Joined(Joined),
    Msg(RoleId, Message),
    Lost(RoleId, String),
    Tick,
    Trigger,
    Interrupt,
}

type Connections = HashMap<RoleId, LinkWriter>;

/// Rows of `events.csv`, written as events are built into `.events.csv.partial` beside it, and
/// renamed into place when the run is over: an `events.csv` is always whole. A failed write
/// stops the rows, removes the partial file and is kept, to end the run with.
struct Rows {
    out: Option<(std::io::BufWriter<std::fs::File>, PathBuf)>,
    failed: Option<String>,
}

impl Rows {
    fn open(path: Option<&PathBuf>) -> anyhow::Result<Rows> {
        let Some(path) = path else { return Ok(Rows { out: None, failed: None }) };
        let tmp = daqnet_core::output::partial_name(path);
        let f = std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", path.display()))?;
        let mut rows = Rows { out: Some((std::io::BufWriter::new(f), path.clone())), failed: None };
        rows.put(EventRecord::CSV_HEADER);
        Ok(rows)
    }

    fn write(&mut self, r: &EventRecord) {
        self.put(&r.csv_row());
    }

    fn put(&mut self, line: &str) {
        if let Some((w, path)) = &mut self.out {
            if let Err(e) = writeln!(w, "{line}") {
                let path = path.clone();
                self.fail(&path, e);
            }
        }
    }

    fn fail(&mut self, path: &Path, e: std::io::Error) {
        self.out = None;
        let _ = std::fs::remove_file(daqnet_core::output::partial_name(path));
        self.failed = Some(format!("cannot write {}: {e}", path.display()));
    }

    /// A write that failed and has not been said yet.
    fn take_failure(&mut self) -> Option<String> {
        self.failed.take()
    }

    /// Flushes, syncs and renames the rows into place; a failure as [`Rows::take_failure`].
    fn finish(&mut self) -> Option<String> {
        if let Some((w, path)) = self.out.take() {
            let tmp = daqnet_core::output::partial_name(&path);
            let done = w.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all());
            match done.and_then(|()| std::fs::rename(&tmp, &path)) {
                Ok(()) => {}
                Err(e) => self.fail(&path, e),
            }
        }
        self.take_failure()
    }
}

fn to(links: &Connections, role: RoleId, m: &Message) {
    if let Some(l) = links.get(&role) {
        l.send(m);
    }
}

fn send(links: &Connections, rows: &mut Rows, o: Output) {
    match o {
        Output::Record(r) => rows.write(&r),
        Output::To(role, m) => to(links, role, &m),
        Output::Readouts(m) => links.iter().filter(|(r, _)| matches!(r, RoleId::Readout(_))).for_each(|(_, l)| {
            l.send(&m);
        }),
    }
}

fn say(line: SupervisorLine) {
    let mut out = std::io::stdout();
    // The launcher may be gone; a supervisor does not die of a closed stdout.
    let _ = writeln!(out, "{}", line.to_line()).and_then(|_| out.flush());
}

/// Runs the supervisor: waits for every role, runs the events, stops everyone, and returns the
/// report — also when start-up fails (a role missing after `deploy.startup_timeout_ms`), a role
/// fails, or the process is interrupted (SIGINT, SIGTERM). Errors are only for what prevents a
/// run at all (the listen address, the metrics address).
pub async fn run(sc: &Scenario, mut opts: SupervisorOptions) -> anyhow::Result<Outcome> {
    let setup = Setup::new(sc, RoleId::Supervisor);
    let listen = opts.listen.clone().unwrap_or_else(|| sc.deploy.supervisor.clone());
    let listener =
        setup.transport.listen(&listen).await.with_context(|| format!("supervisor: cannot listen on {listen}"))?;
    let metrics = Metrics::new();
    if let Some(addr) = &opts.metrics {
        let l = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot serve metrics on {addr}"))?;
        tokio::spawn(crate::metrics::serve(l, metrics.clone()));
    }
    if opts.launched {
        say(SupervisorLine::Listening { addr: listener.local_addr() });
    }
    let beacon = Beacon::start(opts.launched);
    let (tx, mut rx) = unbounded_channel::<Ev>();
    setup.accept_hellos(listener, tx.clone(), Ev::Joined);
    every(ms(100), &tx, || Ev::Tick);
    spawn_interrupts(&tx);
    let mut links = Connections::new();
    let mut rows = Rows::open(opts.per_event.as_ref())?;
    if let Err(f) = startup(&setup, sc, &mut rx, (&tx, &beacon), &mut links).await {
        stop_all(&links);
        let mut tally = RunTally::new(sc.layout(), sc.run.warmup_events, setup.now());
        let interrupted = f.is_none();
        f.into_iter().for_each(|f| tally.on_fault(f, setup.now()));
        if let Some(reason) = rows.finish() {
            let culprit = RoleId::Supervisor;
            tally.on_fault(Fault { culprit, noticed_by: culprit, reason, events: vec![], fatal: true }, setup.now());
        }
        let mut o = tally.finish(sc, &opts.origin, 0, Some(sc.run.events), setup.epoch.elapsed().as_secs_f64());
        o.report.interrupted = interrupted;
        return Ok(o);
    }
    let mut state = conduct(&setup, (sc, &mut opts, &beacon), &mut rx, &tx, (&mut links, &mut rows), metrics).await;
    shutdown(&mut state, &mut rx, &links).await;
    if let Some(reason) = rows.finish() {
        state.handle(setup.now(), Input::OutputFailed(reason));
    }
    Ok(state.finish(sc, &opts.origin, setup.epoch.elapsed().as_secs_f64()))
}

/// Turns SIGINT and SIGTERM into [`Ev::Interrupt`].
fn spawn_interrupts(tx: &UnboundedSender<Ev>) {
    use tokio::signal::unix::{signal, SignalKind};
    for kind in [SignalKind::interrupt(), SignalKind::terminate()] {
        let tx = tx.clone();
        if let Ok(mut s) = signal(kind) {
            tokio::spawn(async move { while s.recv().await.is_some() && tx.send(Ev::Interrupt).is_ok() {} });
        }
    }
}

fn stop_all(links: &Connections) {
    for l in links.values() {
        l.send(&Message::Stop);
        l.close();
    }
}

/// Registers every role, sends the collectors the readout units' addresses, and waits until
/// every collector has reached every readout unit. A failure is returned as the fault that
/// ends the run; an interruption as none.
async fn startup(
    setup: &Setup,
    sc: &Scenario,
    rx: &mut UnboundedReceiver<Ev>,
    (tx, beacon): (&UnboundedSender<Ev>, &Beacon),
    links: &mut Connections,
) -> Result<(), Option<Fault>> {
    let mut reg = Registry::new(sc.layout());
    let deadline = Instant::now() + setup.startup;
    let failed = |culprit: RoleId, noticed_by: RoleId, reason: String| {
        Some(Fault { culprit, noticed_by, reason: format!("start-up {reason}"), events: vec![], fatal: true })
    };
    while !reg.complete() {
        let Ok(ev) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            let m = reg.missing();
            let ms = setup.startup.as_millis();
            let reason = format!("timed out after {ms} ms (deploy.startup_timeout_ms) waiting for {}", m.join(", "));
            return Err(failed(RoleId::Supervisor, RoleId::Supervisor, reason));
        };
        match ev.expect("the loop holds a sender") {
            Ev::Joined(j) => match reg.on_hello(j.role, &j.listen) {
                Ok(()) => {
                    links.insert(j.role, connect(setup, j, tx));
                    if let Some(peers) = reg.take_peers() {
                        let to_collectors = sc.layout().all_nodes().map(RoleId::Collector);
                        to_collectors.for_each(|c| to(links, c, &Message::Peers(peers.clone())));
                    }
                }
                Err(refusal) => eprintln!("supervisor: refused the connection from {}: {refusal}", j.conn.peer),
            },
            Ev::Msg(RoleId::Collector(n), Message::Connected) => reg.on_connected(n),
            Ev::Msg(p, Message::Fault { culprit, detail, .. }) => {
                return Err(failed(culprit, p, format!("failed: {detail}")))
            }
            // A connected collector's periodic status: nothing to record before the run.
            Ev::Msg(_, Message::Status(_)) => {}
            Ev::Msg(p, m) => eprintln!("supervisor: ignored {m:?} from {p} during start-up"),
            Ev::Lost(p, e) => return Err(failed(p, RoleId::Supervisor, format!("failed: {p} left: {e}"))),
            Ev::Interrupt => return Err(None),
            Ev::Tick => beacon.set(0, 0),
            Ev::Trigger => {}
        }
    }
    Ok(())
}

/// The link to a role that joined: its writer, and a reader that turns what it says into events.
fn connect(setup: &Setup, j: Joined, tx: &UnboundedSender<Ev>) -> LinkWriter {
    let role = j.role;
    let (w, _) = setup.link(j.conn, j.rest, tx.clone(), move |m| {
        Some(match m {
            Ok(m) => Ev::Msg(role, m),
            Err(e) => Ev::Lost(role, e),
        })
    });
    w
}

/// The run: feeds events to the [`RunState`] and sends what it asks, until it is over.
async fn conduct(
    setup: &Setup,
    (sc, opts, beacon): (&Scenario, &mut SupervisorOptions, &Beacon),
    rx: &mut UnboundedReceiver<Ev>,
    tx: &UnboundedSender<Ev>,
    (links, rows): (&mut Connections, &mut Rows),
    metrics: Arc<Metrics>,
) -> RunState {
    let mut state = RunState::new(sc, setup.now(), opts.duration, opts.per_event.is_some(), metrics);
    let mut armed = None;
    // A launched supervisor reparented since it started has lost its launcher: its death
    // signal, and the other roles' (their connections close), are on their way.
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let launched = opts.launched;
    let orphaned = || launched && unsafe { libc::getppid() } != parent;
    let mut launcher_lost = false;
    loop {
        while let Some(o) = state.poll() {
            send(links, rows, o);
        }
        if let Some(reason) = rows.take_failure() {
            state.handle(setup.now(), Input::OutputFailed(reason));
            continue;
        }
        if state.over() {
            // A role lost as the launcher died (its death signal reached that role first) is
            // the launcher's doing: say so.
            if launched && !launcher_lost && state.failed() && launcher_died(parent).await {
                state.handle(setup.now(), Input::LauncherLost);
            }
            return state;
        }
        if let Some(next) = state.poll_timeout().filter(|&n| armed.is_none_or(|a| n < a)) {
            armed = Some(next);
            wake_at(setup.epoch, next, tx, Ev::Trigger);
        }
        let input = match rx.recv().await.expect("the loop holds a sender") {
            Ev::Trigger => {
                armed = None;
                Input::Trigger
            }
            Ev::Msg(p, m) => Input::Msg(p, m),
            Ev::Lost(p, e) => {
                links.remove(&p);
                if !launcher_lost && orphaned() {
                    launcher_lost = true;
                    Input::LauncherLost
                } else {
                    Input::Lost(p, e)
                }
            }
            Ev::Tick => {
                tell_progress(opts, beacon, &state.progress());
                Input::Tick
            }
            Ev::Interrupt if launched && !launcher_lost && launcher_died(parent).await => {
                launcher_lost = true;
                Input::LauncherLost
            }
            Ev::Interrupt => Input::Interrupt,
            Ev::Joined(j) => {
                eprintln!("supervisor: refused {} from {}: the run has started", j.role, j.conn.peer);
                continue;
            }
        };
        state.handle(setup.now(), input);
    }
}

/// Whether the launcher (`parent`) died, for a launched supervisor that got SIGTERM or lost a
/// role. The death signal (`PR_SET_PDEATHSIG`) fires when the launcher's thread that started
/// us exits; under a SIGKILL its other threads can still be alive and adopt us for a moment, so
/// the reparenting to init that tells the launcher's death from a plain SIGTERM or a role's own
/// failure can come just after (in about one of 40 runs of `run_8ro_2coll_kill_launcher` the
/// report named only a collector, or only an interruption). Waits for it up to 200 ms.
async fn launcher_died(parent: libc::pid_t) -> bool {
    for _ in 0..40 {
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            return true;
        }
        tokio::time::sleep(ms(5)).await;
    }
    false
}

fn tell_progress(opts: &mut SupervisorOptions, beacon: &Beacon, p: &Progress) {
    beacon.set(p.assigned, p.finished);
    if let Some(f) = &mut opts.progress {
        f(p);
    }
}

/// Stops every role; collectors answer with their final counters and close (1.5 s at most).
async fn shutdown(state: &mut RunState, rx: &mut UnboundedReceiver<Ev>, links: &Connections) {
    stop_all(links);
    let mut open = links.len();
    let until = Instant::now() + ms(1500);
    while open > 0 {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(Ev::Msg(role, m))) => state.on_final(role, m),
            Ok(Some(Ev::Lost(..))) => open -= 1,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
}
