//! The SFC process: accepts its workers, runs one of the note's three implementations (each
//! its own code path and threads, see the module above), ends the run with `Stop`/`Bye`, and
//! writes the report.

use super::{payload_key, read_hello, read_msg, since, write_msg, Head, Kind, NO_EVENT};
use crate::net::greet::{accept_greeted, Greeted, Greeter, Refusals};
use crate::net::transport::{tuned_socket, TcpStats};
use crate::role::{Beacon, RoleId, SupervisorLine};
use anyhow::{bail, Context};
use daqnet_core::farm::{Dispatcher, DispatcherOutput, EventSource, FarmError, FarmTally, Token, Verdict};
use daqnet_core::report::{EventRecord, FaultRecord, RunReport, TcpCounters};
use daqnet_core::scenario::{Dispatch, Farm, Implementation};
use daqnet_core::{EventId, Nanos, Scenario, WorkerId, NS_PER_S};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Options of the SFC process.
pub struct SfcOptions {
    /// The scenario's name in the report.
    pub origin: String,
    /// Listen address (default `deploy.supervisor`: the SFC is the run's rendezvous).
    pub listen: Option<String>,
    /// Started by `daqnet run`: say where it listens and how the run goes on stdout.
    pub launched: bool,
    /// Set when the run must stop early (SIGINT, SIGTERM).
    pub stop: &'static AtomicBool,
    /// Keep a row per event (returned beside the report, for events.csv).
    pub per_event: bool,
}

/// One worker's connection: its reading half (one reader thread) and its writing half.
struct Link {
    read: Mutex<Option<TcpStream>>,
    write: Mutex<TcpStream>,
    /// A handle to shut the connection down with, whoever holds the halves.
    sock: TcpStream,
    stats: Option<TcpStats>,
    /// When the SFC last heard from the worker, ns since the run's start.
    heard: AtomicU64,
    /// The worker is lost (set once, by [`Shared::lose`]).
    lost: AtomicBool,
    /// Its reader has ended: with a `Bye`, or with the connection.
    closed: AtomicBool,
}

/// What the SFC's threads share.
struct Shared<'a> {
    farm: &'a Farm,
    source: EventSource,
    run_id: u64,
    total: u64,
    /// `run.time_limit_s`, ns: no event due later is offered.
    limit: Nanos,
    start: Instant,
    links: Vec<Link>,
    sfc: Mutex<Dispatcher>,
    /// Signalled whenever the dispatcher has output or wants an event, and when the run ends.
    cv: Condvar,
    tally: Mutex<FarmTally>,
    generated: AtomicU64,
    /// Events the run makes: `total`, or fewer if the source has events due past the run's
    /// time limit.
    last: AtomicU64,
    done: AtomicBool,
    stop: &'static AtomicBool,
    faults: Mutex<Vec<FaultRecord>>,
    /// Per worker: (events processed, µs spent processing), from its `Bye`.
    byes: Mutex<Vec<Option<(u64, u64)>>>,
}

/// Runs the SFC of `sc` and returns its report, with a row per event if asked for.
pub fn run(sc: &Scenario, opts: SfcOptions) -> anyhow::Result<(RunReport, Vec<EventRecord>)> {
    let farm = sc.farm.as_ref().context("the scenario has no [farm]")?;
    let listen = opts.listen.clone().unwrap_or_else(|| sc.deploy.supervisor.clone());
    let listener = bind(&listen, &sc.deploy.tcp_congestion)?;
    let addr = listener.local_addr()?.to_string();
    if opts.launched {
        println!("{}", SupervisorLine::Listening { addr: addr.clone() }.to_line());
    }
    let beacon = Beacon::start(opts.launched);
    let links = accept_workers(sc, &listener, &beacon)?;
    let n = farm.workers;
    let capacity = (farm.implementation == Implementation::V1).then_some(farm.event_queue_events as usize);
    let total = sc.run.warmup_events + sc.run.events;
    let source = EventSource::of(farm).map_err(anyhow::Error::msg)?;
    let sh = Shared {
        farm,
        source,
        run_id: sc.deploy.run_id,
        total,
        limit: (sc.run.time_limit_s * NS_PER_S as f64) as Nanos,
        start: Instant::now(),
        links,
        sfc: Mutex::new(Dispatcher::new(farm.dispatch, n, capacity)),
        cv: Condvar::new(),
        tally: Mutex::new(FarmTally::new(n, sc.run.warmup_events, total, opts.per_event)),
        generated: AtomicU64::new(0),
        last: AtomicU64::new(total),
        done: AtomicBool::new(false),
        stop: opts.stop,
        faults: Mutex::new(Vec::new()),
        byes: Mutex::new(vec![None; n as usize]),
    };
    if farm.dispatch == Dispatch::RoundRobin {
        // Every connection starts empty.
        (0..n).for_each(|w| sh.lock().on_writable(WorkerId(w)));
    }
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    std::thread::scope(|s| {
        let sh = &sh;
        s.spawn(|| watch_workers(sh, &beacon, Liveness::of(sc)));
        match farm.implementation {
            Implementation::V1 => version_1(sh, s),
            Implementation::V2 | Implementation::V3 => {
                for w in 0..n {
                    s.spawn(move || read_worker(sh, WorkerId(w)));
                }
                if farm.implementation == Implementation::V3 {
                    version_3(sh, s);
                }
            }
        }
        sh.wait_until_over();
        sh.say_stop();
    });
    let (mut r, records) = report(sc, &opts, sh);
    // A launched SFC adopted by another process has lost its launcher: that is why it stopped.
    // SAFETY: as above.
    if opts.launched && r.interrupted && unsafe { libc::getppid() } != parent {
        r.faults.insert(0, crate::launcher::launcher_died(r.wall_s, RoleId::Sfc.to_string()));
    }
    Ok((r, records))
}

fn bind(listen: &str, congestion: &str) -> anyhow::Result<TcpListener> {
    let at: SocketAddr = listen.to_socket_addrs()?.next().with_context(|| format!("{listen} resolves to nothing"))?;
    let s = tuned_socket(&at, congestion)?;
    s.set_reuse_address(true)?;
    s.bind(&at.into()).with_context(|| format!("cannot listen on {listen}"))?;
    s.listen(1024)?;
    Ok(s.into())
}

/// Accepts every worker's connection and hello within `deploy.startup_timeout_ms`; each hello
/// within `deploy.peer_timeout_ms` of its connection, read beside the others (a stray that
/// connects and says nothing is refused, and holds up nobody). Says it is alive meanwhile.
fn accept_workers(sc: &Scenario, listener: &TcpListener, beacon: &Beacon) -> anyhow::Result<Vec<Link>> {
    let n = sc.farm.as_ref().expect("farm").workers as usize;
    let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let log = Refusals::new("sfc");
    let greeter = Greeter {
        until: Instant::now() + Duration::from_millis(sc.deploy.startup_timeout_ms),
        per_hello: Duration::from_millis(sc.deploy.peer_timeout_ms),
        log: &log,
        alive: &|| beacon.set(0, 0),
    };
    let mut joined = 0;
    let accepted = accept_greeted(listener, &greeter, read_hello, |s, h| {
        let w = h.worker as usize;
        if h.extra != sc.deploy.run_id {
            return Greeted::Refused(format!("worker {w} of run {}, not this run", h.extra));
        }
        match slots.get_mut(w) {
            None => Greeted::Refused(format!("worker {w}: the farm has workers 0..{n}")),
            Some(Some(_)) => Greeted::Refused(format!("a second worker {w}")),
            Some(slot) => {
                *slot = Some(s);
                joined += 1;
                if joined == n {
                    Greeted::Complete
                } else {
                    Greeted::Kept
                }
            }
        }
    });
    if accepted.is_err() {
        let missing: Vec<String> =
            slots.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(w, _)| w.to_string()).collect();
        bail!("workers {} did not connect within deploy.startup_timeout_ms", missing.join(", "));
    }
    slots
        .into_iter()
        .map(|s| {
            let s = s.expect("all connected");
            let stats = TcpStats::of(s.as_fd());
            Ok(Link {
                read: Mutex::new(Some(s.try_clone()?)),
                sock: s.try_clone()?,
                write: Mutex::new(s),
                stats,
                heard: AtomicU64::new(0),
                lost: AtomicBool::new(false),
                closed: AtomicBool::new(false),
            })
        })
        .collect()
}

impl Shared<'_> {
    fn now(&self) -> Nanos {
        since(self.start)
    }

    fn over(&self) -> bool {
        self.done.load(Ordering::Relaxed) || self.stop.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Dispatcher> {
        self.sfc.lock().expect("a dispatcher holder panicked")
    }

    /// Offers the next event to the dispatcher; `None` once every event has been made.
    fn offer(&self, d: &mut Dispatcher) -> Option<Result<(), FarmError>> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let e = self.generated.fetch_add(1, Ordering::Relaxed);
        if e >= self.total {
            return None;
        }
        let now = self.now();
        self.tally.lock().expect("tally").on_arrival(now, EventId(e), (d.queued_events(), d.queued_tokens()));
        Some(d.on_event(now, EventId(e), self.source.bytes(EventId(e))))
    }

    /// Offers events while the dispatcher wants them (a back-pressured generator, or versions
    /// 2 and 3 making an event when a worker can take it), unless events come at their own
    /// times (the generator thread offers those).
    fn offer_while_wanted(&self, d: &mut Dispatcher) {
        while self.source.on_demand() && d.wants_event() && self.offer(d).is_some() {}
    }

    /// A buffer for the largest event's payload.
    fn payload(&self) -> Vec<u8> {
        vec![0u8; self.source.max_bytes() as usize]
    }

    fn on_done(&self, worker: WorkerId, event: EventId, queued: Nanos) {
        let mut t = self.tally.lock().expect("tally");
        t.on_done(worker, event, self.source.bytes(event), queued, self.now());
        self.end_if_finished(&t);
    }

    /// The source has no more events within the run's time limit: `event`, due at `due`, and
    /// the rest are abandoned (as the simulator abandons them), and the run ends with the
    /// events already offered.
    fn end_source(&self, event: EventId, due: Nanos) {
        let (at, limit) = (due as f64 / NS_PER_S as f64, self.limit as f64 / NS_PER_S as f64);
        let after = self.total.saturating_sub(event.0 + 1);
        eprintln!("sfc: event {event} is due at {at:.3} s, past run.time_limit_s ({limit} s): it and the {after} after it are abandoned");
        self.last.store(event.0, Ordering::Relaxed);
        self.end_if_finished(&self.tally.lock().expect("tally"));
    }

    fn end_if_finished(&self, t: &FarmTally) {
        if t.settled() >= self.last.load(Ordering::Relaxed) {
            self.done.store(true, Ordering::Relaxed);
            self.cv.notify_all();
        }
    }

    /// Writes `event` to `worker`, its payload keyed to it; a failed write loses the worker.
    /// Whether the connection took it.
    fn send_event(&self, worker: WorkerId, event: EventId, payload: &mut [u8]) -> bool {
        payload[..8].copy_from_slice(&payload_key(self.run_id, event.0).to_le_bytes());
        let head = Head { worker: worker.0, event: event.0, ..Head::new(Kind::Event) };
        let r = write_msg(&mut self.links[worker.index()].write.lock().expect("writer"), head, payload);
        if let Err(e) = &r {
            self.lose(worker, format!("sending event {event} failed: {e}"));
        }
        r.is_ok()
    }

    /// A message read from `worker`: it is alive.
    fn heard(&self, worker: WorkerId) {
        self.links[worker.index()].heard.store(self.now(), Ordering::Relaxed);
    }

    /// A `Bye` from `worker`: its processing counts.
    fn on_bye(&self, worker: WorkerId, h: &Head) {
        self.byes.lock().expect("byes")[worker.index()] = Some((h.event, h.extra));
    }

    /// Carries out the dispatcher's outputs: sends, and verdicts to measure.
    fn carry_out(&self, outputs: Vec<DispatcherOutput>, payload: &mut [u8]) {
        for o in outputs {
            match o {
                DispatcherOutput::Send { worker, event, bytes } => {
                    self.send_event(worker, event, &mut payload[..bytes as usize]);
                    if self.farm.dispatch == Dispatch::RoundRobin {
                        // The blocking send returned: the connection took the event.
                        self.lock().on_writable(worker);
                        self.cv.notify_all();
                    }
                }
                DispatcherOutput::Verdict { worker, verdict, queued } => self.on_done(worker, verdict.event, queued),
            }
        }
    }

    /// A token (or verdict) from `worker` into the dispatcher, and new events for whoever can
    /// take them; the dispatcher's outputs wait for whoever carries them out.
    fn take_token(&self, worker: WorkerId, head: &Head, d: &mut Dispatcher) {
        let output_bytes = if head.accepted { self.farm.accept_output_bytes } else { 0 };
        let verdict = Verdict { event: EventId(head.event), accepted: head.accepted, output_bytes };
        let verdict = (head.event != NO_EVENT).then_some(verdict);
        // A protocol error is counted by the dispatcher; the run goes on.
        let _ = d.on_token(self.now(), Token { worker, verdict });
        self.offer_while_wanted(d);
        self.cv.notify_all();
    }

    /// `worker` is gone: its connection is shut (whoever waits on it returns), its events are
    /// lost, and the report names it. Once per worker; after the run, only the shutting.
    fn lose(&self, worker: WorkerId, reason: String) {
        let link = &self.links[worker.index()];
        if link.lost.swap(true, Ordering::Relaxed) {
            return;
        }
        let _ = link.sock.shutdown(std::net::Shutdown::Both);
        if self.over() {
            return;
        }
        let events = self.lock().on_worker_lost(worker);
        let mut t = self.tally.lock().expect("tally");
        events.iter().for_each(|&e| t.on_lost(e));
        self.faults.lock().expect("faults").push(FaultRecord {
            at_s: self.now() as f64 / NS_PER_S as f64,
            role: RoleId::Worker(worker).to_string(),
            noticed_by: RoleId::Sfc.to_string(),
            reason,
            lost_events: events.iter().map(|e| e.0).collect(),
        });
        self.end_if_finished(&t);
        self.cv.notify_all();
    }

    fn wait_until_over(&self) {
        let mut d = self.lock();
        while !self.over() {
            d = self.cv.wait_timeout(d, Duration::from_millis(50)).expect("dispatcher").0;
        }
    }

    /// Tells every worker the run is over.
    fn say_stop(&self) {
        self.cv.notify_all();
        for (w, l) in self.links.iter().enumerate() {
            if let Ok(mut s) = l.write.lock() {
                let _ = write_msg(&mut s, Head { worker: w as u32, ..Head::new(Kind::Stop) }, &[]);
            }
        }
    }
}

/// Version 1: a generator thread fills the event queue, a token thread reads every worker's
/// tokens, and this thread forwards events; they share the dispatcher under one mutex.
fn version_1<'s>(sh: &'s Shared<'_>, s: &'s std::thread::Scope<'s, '_>) {
    s.spawn(|| generator(sh));
    s.spawn(|| token_thread(sh));
    s.spawn(|| {
        let mut payload = sh.payload();
        loop {
            let outputs: Vec<DispatcherOutput> = {
                let mut d = sh.lock();
                loop {
                    let out: Vec<_> = std::iter::from_fn(|| d.poll()).collect();
                    if !out.is_empty() || sh.over() {
                        break out;
                    }
                    d = sh.cv.wait_timeout(d, Duration::from_millis(50)).expect("dispatcher").0;
                }
            };
            if outputs.is_empty() {
                return;
            }
            sh.carry_out(outputs, &mut payload);
        }
    });
}

/// Version 1's event generator: back-pressured (keeps the queue full), or each event at its
/// own time (a fixed rate, or the event builder's output), losing what a full queue cannot take.
fn generator(sh: &Shared<'_>) {
    match sh.source.due(EventId(0)) {
        None => loop {
            let mut d = sh.lock();
            while !d.wants_event() && !sh.over() {
                d = sh.cv.wait_timeout(d, Duration::from_millis(50)).expect("dispatcher").0;
            }
            if sh.over() || sh.offer(&mut d).is_none() {
                return;
            }
            sh.cv.notify_all();
        },
        Some(_) => {
            for k in 0.. {
                let Some(due) = sh.source.due(EventId(k)) else { return };
                if due > sh.limit {
                    return sh.end_source(EventId(k), due);
                }
                wait_until(sh, due);
                let mut d = sh.lock();
                match sh.offer(&mut d) {
                    None => return,
                    Some(Ok(())) => {}
                    Some(Err(e)) => {
                        let mut t = sh.tally.lock().expect("tally");
                        if let FarmError::QueueFull { event, .. } = e {
                            t.on_lost(event);
                        }
                        sh.end_if_finished(&t);
                    }
                }
                sh.cv.notify_all();
            }
        }
    }
}

/// Sleeps until the run's clock reaches `due` (or the run is over), 50 ms at most at a time.
/// The clock is read once per turn: read twice, it could pass `due` between the test and the
/// subtraction, which then wrapped to a 50 ms sleep — events of a builder-fed run arrived 50 ms
/// late, and a bounded queue lost some.
fn wait_until(sh: &Shared<'_>, due: Nanos) {
    loop {
        let now = sh.now();
        if now >= due || sh.over() {
            return;
        }
        std::thread::sleep(Duration::from_nanos(due - now).min(Duration::from_millis(50)));
    }
}

/// Version 1's token thread: waits on every worker's connection at once (`poll(2)`), reads a
/// whole token from each that has one, and hands it to the dispatcher.
fn token_thread(sh: &Shared<'_>) {
    use std::os::fd::AsRawFd;
    let mut readers: Vec<(WorkerId, TcpStream)> = (0..sh.links.len())
        .filter_map(|w| sh.links[w].read.lock().expect("reader").take().map(|s| (WorkerId(w as u32), s)))
        .collect();
    let mut body = Vec::new();
    while !readers.is_empty() {
        let mut fds: Vec<libc::pollfd> =
            readers.iter().map(|(_, s)| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if n <= 0 {
            continue;
        }
        let mut gone = Vec::new();
        for i in (0..fds.len()).filter(|&i| fds[i].revents != 0) {
            let (w, s) = &mut readers[i];
            let msg = read_msg(s, &mut body);
            if msg.is_ok() {
                sh.heard(*w);
            }
            match msg {
                // Into the token queue; the forwarding thread sends what it makes possible.
                Ok(h) if h.kind == Kind::Token => sh.take_token(*w, &h, &mut sh.lock()),
                Ok(h) if h.kind == Kind::Heartbeat => {}
                Ok(h) if h.kind == Kind::Bye => {
                    sh.on_bye(*w, &h);
                    gone.push(i);
                }
                Ok(h) => {
                    sh.lose(*w, format!("unexpected {:?}", h.kind));
                    gone.push(i);
                }
                Err(e) => {
                    sh.lose(*w, format!("its connection failed: {e}"));
                    gone.push(i);
                }
            }
        }
        for i in gone.into_iter().rev() {
            sh.links[readers.remove(i).0.index()].closed.store(true, Ordering::Relaxed);
        }
    }
}

/// Reads one worker's messages until its `Bye` or its connection's end. Under version 2 each
/// token makes the next event go out from this thread; version 3's workers send only heartbeats
/// and their `Bye`.
fn read_worker(sh: &Shared<'_>, w: WorkerId) {
    let link = &sh.links[w.index()];
    let Some(mut conn) = link.read.lock().expect("reader").take() else { return };
    let (mut body, mut payload) = (Vec::new(), Vec::new());
    loop {
        let msg = read_msg(&mut conn, &mut body);
        if msg.is_ok() {
            sh.heard(w);
        }
        match msg {
            Ok(h) if h.kind == Kind::Token && sh.farm.implementation == Implementation::V2 => {
                let out: Vec<_> = {
                    let mut d = sh.lock();
                    sh.take_token(w, &h, &mut d);
                    std::iter::from_fn(|| d.poll()).collect()
                };
                if payload.is_empty() {
                    payload = sh.payload();
                }
                sh.carry_out(out, &mut payload);
            }
            Ok(h) if h.kind == Kind::Heartbeat => {}
            Ok(h) if h.kind == Kind::Bye => {
                sh.on_bye(w, &h);
                break;
            }
            Ok(h) => {
                sh.lose(w, format!("unexpected {:?}", h.kind));
                break;
            }
            Err(e) => {
                sh.lose(w, format!("its connection failed: {e}"));
                break;
            }
        }
    }
    link.closed.store(true, Ordering::Relaxed);
}

/// Version 3: one thread per worker streams events as fast as its connection takes them; no
/// tokens. An event counts as done when its send returns (nothing comes back to say more); the
/// one whose send failed is lost with its worker.
fn version_3<'s>(sh: &'s Shared<'_>, s: &'s std::thread::Scope<'s, '_>) {
    for w in 0..sh.links.len() as u32 {
        s.spawn(move || {
            let w = WorkerId(w);
            let mut payload = sh.payload();
            loop {
                let e = sh.generated.fetch_add(1, Ordering::Relaxed);
                if e >= sh.total || sh.over() {
                    return;
                }
                let queued = sh.now();
                sh.tally.lock().expect("tally").on_arrival(queued, EventId(e), (0, 0));
                if !sh.send_event(w, EventId(e), &mut payload) {
                    let mut t = sh.tally.lock().expect("tally");
                    t.on_lost(EventId(e));
                    sh.end_if_finished(&t);
                    return;
                }
                sh.on_done(w, EventId(e), queued);
            }
        });
    }
}

/// How the SFC and its workers keep each other's liveness (`deploy.heartbeat_ms`,
/// `deploy.peer_timeout_ms`).
#[derive(Clone, Copy)]
struct Liveness {
    heartbeat: Nanos,
    peer_timeout: Nanos,
}

impl Liveness {
    fn of(sc: &Scenario) -> Liveness {
        Liveness { heartbeat: sc.deploy.heartbeat_ms * 1_000_000, peer_timeout: sc.deploy.peer_timeout_ms * 1_000_000 }
    }
}

/// How long the workers have to say goodbye once told the run is over (a version 3 worker
/// first processes what its connection still holds).
const BYE_WITHIN: Nanos = 5 * NS_PER_S;

/// The SFC's watch over its workers, until every connection is closed: a heartbeat to each
/// every `heartbeat` (never waiting: skipped while a send holds the connection or it is full,
/// when the worker has events to read anyway), a worker silent for `peer_timeout` lost, a
/// worker that has not said goodbye [`BYE_WITHIN`] after the run's end cut off, and the
/// launcher told every 100 ms how the run goes.
fn watch_workers(sh: &Shared<'_>, beacon: &Beacon, l: Liveness) {
    let (mut beat_at, mut told_at, mut over_at) = (0, 0, None);
    while sh.links.iter().any(|k| !k.closed.load(Ordering::Relaxed)) {
        std::thread::sleep(Duration::from_millis(10));
        let now = sh.now();
        if now >= told_at + 100_000_000 {
            told_at = now;
            beacon.set(sh.generated.load(Ordering::Relaxed).min(sh.total), sh.tally.lock().expect("tally").built());
        }
        if sh.over() && over_at.is_none() {
            over_at = Some(now);
        }
        let bye_late = over_at.is_some_and(|t| now > t + BYE_WITHIN);
        for (w, k) in sh.links.iter().enumerate().filter(|(_, k)| !k.closed.load(Ordering::Relaxed)) {
            let silent = now.saturating_sub(k.heard.load(Ordering::Relaxed));
            if silent > l.peer_timeout || bye_late {
                let ms = silent / 1_000_000;
                sh.lose(WorkerId(w as u32), format!("silent for {ms} ms (deploy.peer_timeout_ms): stopped or hung"));
            } else if now >= beat_at + l.heartbeat {
                heartbeat(k, w as u32);
            }
        }
        if now >= beat_at + l.heartbeat {
            beat_at = now;
        }
    }
}

/// Sends worker `w` a heartbeat if its connection is free and has room now.
fn heartbeat(k: &Link, w: u32) {
    use std::os::fd::AsRawFd;
    let Ok(mut s) = k.write.try_lock() else { return };
    let mut p = libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd; a zero timeout only asks.
    if unsafe { libc::poll(&mut p, 1, 0) } == 1 && p.revents & libc::POLLOUT != 0 {
        let _ = write_msg(&mut s, Head { worker: w, ..Head::new(Kind::Heartbeat) }, &[]);
    }
}

fn report(sc: &Scenario, opts: &SfcOptions, sh: Shared<'_>) -> (RunReport, Vec<EventRecord>) {
    let run_ns = sh.now();
    let byes = sh.byes.into_inner().expect("byes");
    let busy: Vec<Nanos> = byes.iter().map(|b| b.map_or(0, |(_, us)| us * 1000)).collect();
    let d = sh.sfc.into_inner().expect("dispatcher");
    let tally = sh.tally.into_inner().expect("tally");
    let (mut r, records) = tally.report(("run", &opts.origin, sc), sh.farm, d.stats(), &busy, run_ns);
    let mut tcp = TcpCounters::default();
    for l in &sh.links {
        if let Some(c) = l.stats.as_ref().and_then(TcpStats::read) {
            tcp.retransmits += c.retransmits;
            tcp.timeouts += c.timeouts.unwrap_or(0);
        }
    }
    r.tcp = tcp;
    r.tcp_source = "tcp_info".into();
    r.faults = sh.faults.into_inner().expect("faults");
    for (w, b) in byes.iter().enumerate() {
        if b.is_none() && !r.faults.iter().any(|f| f.role == RoleId::Worker(WorkerId(w as u32)).to_string()) {
            r.faults.push(FaultRecord {
                at_s: run_ns as f64 / NS_PER_S as f64,
                role: RoleId::Worker(WorkerId(w as u32)).to_string(),
                noticed_by: RoleId::Sfc.to_string(),
                reason: "did not say goodbye: its busy time is unknown".into(),
                lost_events: Vec::new(),
            });
        }
    }
    r.interrupted = sh.stop.load(Ordering::Relaxed);
    r.wall_s = run_ns as f64 / NS_PER_S as f64;
    (r, records)
}
