//! The supervisor role: the rendezvous of a run (every role registers with it), the core
//! [`Supervisor`] state machine (rate and policy), the clearing of processed events, fault
//! handling, metrics, and the run report.

use super::{ms, wake_at, Setup};
use crate::metrics::{Metrics, NodeLabel};
use crate::net::link::{spawn_writer, Sender};
use crate::net::transport::Conn;
use crate::wire::{CollectorStatus, Message, Role};
use anyhow::{anyhow, Context};
use bytes::BytesMut;
use daqnet_core::dataflow::{startup_order, Supervisor};
use daqnet_core::report::{EventRecord, FaultRecord, LatencyMs, NodeStats, NotBuilt, RunReport};
use daqnet_core::scenario::Credits;
use daqnet_core::{EventId, Nanos, PuId, Scenario, NS_PER_S};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Write;
use std::time::Duration;
use tokio::sync::mpsc::unbounded_channel;
use tokio::time::Instant;

/// Options of the supervisor process.
#[derive(Debug, Clone, Default)]
pub struct SupervisorOptions {
    /// The scenario's name in the report (its file).
    pub origin: String,
    /// Listen address (default `deploy.supervisor`).
    pub listen: Option<String>,
    /// Print `daqnet supervisor listening on ADDR` on stdout once bound (for the launcher).
    pub announce: bool,
    /// Serve Prometheus metrics on this address.
    pub metrics: Option<String>,
    /// Run for this long instead of a number of events.
    pub duration: Option<Duration>,
    /// Show a one-line progress display on stderr.
    pub progress: bool,
    /// Keep per-event records.
    pub per_event: bool,
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run report.
    pub report: RunReport,
    /// Per-event records (empty unless asked for).
    pub events: Vec<EventRecord>,
}

impl Outcome {
    /// Every event built and verified, no fault.
    pub fn ok(&self) -> bool {
        let nb = &self.report.events_not_built;
        self.report.faults.is_empty() && nb.lost == 0 && nb.abandoned == 0 && nb.timed_out == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Peer {
    Readout(u32),
    Collector(u32),
    /// The supervisor itself (a fault it detects, such as a stalled run).
    Supervisor,
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Peer::Readout(i) => write!(f, "readout {i}"),
            Peer::Collector(i) => write!(f, "collector {i}"),
            Peer::Supervisor => write!(f, "supervisor"),
        }
    }
}

enum Ev {
    Joined(Role, u32, String, Conn, BytesMut),
    Msg(Peer, Message),
    Lost(Peer, String),
    Tick,
    /// The next event's trigger time has come.
    Trigger,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    pu: PuId,
    assigned: Nanos,
}

#[derive(Debug, Clone, Copy)]
struct Built {
    event: EventId,
    pu: PuId,
    assigned: Nanos,
    received: Nanos,
    latency: Nanos,
    bytes: u64,
}

/// Runs the supervisor: waits for every role, runs the events, stops everyone, and returns the
/// report. Start-up problems (a role missing after `deploy.startup_timeout_ms`) are errors.
pub async fn run(sc: &Scenario, opts: SupervisorOptions) -> anyhow::Result<Outcome> {
    let setup = Setup::new(sc);
    let sys = &sc.system;
    let listen = opts.listen.clone().unwrap_or_else(|| sc.deploy.supervisor.clone());
    let listener =
        setup.transport.listen(&listen).await.with_context(|| format!("supervisor: cannot listen on {listen}"))?;
    if opts.announce {
        println!("daqnet supervisor listening on {}", listener.local_addr());
        std::io::stdout().flush()?;
    }
    let metrics = Metrics::new();
    if let Some(addr) = &opts.metrics {
        let l = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot serve metrics on {addr}"))?;
        tokio::spawn(crate::metrics::serve(l, metrics.clone()));
    }
    let (tx, mut rx) = unbounded_channel::<Ev>();
    setup.accept_hellos(listener, "supervisor", tx.clone(), |m, c, rest| match m {
        Message::Hello { role, index, listen } => Ok(Ev::Joined(role, index, listen, c, rest)),
        m => Err(m),
    });
    {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(ms(100));
            while tx.send(Ev::Tick).is_ok() {
                every.tick().await;
            }
        });
    }

    // Start-up: everyone registers; collectors connect to every readout unit.
    let (nr, nn) = (sys.readout_units as usize, sys.nodes as usize);
    let mut links: HashMap<Peer, Sender> = HashMap::new();
    let mut readout_addrs = vec![String::new(); nr];
    let mut connected = vec![false; nn];
    let deadline = Instant::now() + setup.startup;
    let missing = |links: &HashMap<Peer, Sender>, connected: &[bool]| -> Vec<String> {
        let mut m: Vec<String> =
            (0..nr as u32).map(Peer::Readout).filter(|p| !links.contains_key(p)).map(|p| p.to_string()).collect();
        m.extend((0..nn as u32).map(Peer::Collector).filter(|p| !links.contains_key(p)).map(|p| p.to_string()));
        if m.is_empty() {
            m.extend(
                (0..nn)
                    .filter(|&n| !connected[n])
                    .map(|n| format!("collector {n} (not yet connected to every readout unit)")),
            );
        }
        m
    };
    let stop_all = |links: &HashMap<Peer, Sender>| {
        for l in links.values() {
            l.send(&Message::Stop);
            l.close();
        }
    };
    while connected.iter().any(|c| !c) {
        let ev = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(ev) => ev.expect("the loop holds a sender"),
            Err(_) => {
                let m = missing(&links, &connected);
                stop_all(&links);
                return Err(anyhow!(
                    "supervisor: start-up timed out after {} ms (deploy.startup_timeout_ms) waiting for {}: {}",
                    setup.startup.as_millis(),
                    if m.len() == 1 { "one role" } else { "roles" },
                    m.join(", ")
                ));
            }
        };
        match ev {
            Ev::Joined(role, index, addr, c, rest) => {
                let peer = match role {
                    Role::Readout if (index as usize) < nr => Peer::Readout(index),
                    Role::Collector if (index as usize) < nn => Peer::Collector(index),
                    _ => {
                        eprintln!("supervisor: rejected {} {index} from {}: not in this scenario", role.name(), c.peer);
                        continue;
                    }
                };
                if links.contains_key(&peer) {
                    eprintln!("supervisor: rejected a second {peer} from {}", c.peer);
                    continue;
                }
                let (w, _) = spawn_writer(c.write, setup.heartbeat);
                setup.reader(c.read, rest, tx.clone(), move |m| {
                    Some(match m {
                        Ok(m) => Ev::Msg(peer, m),
                        Err(e) => Ev::Lost(peer, e),
                    })
                });
                if let Peer::Readout(r) = peer {
                    readout_addrs[r as usize] = addr;
                }
                links.insert(peer, w);
                if links.len() == nr + nn {
                    for n in 0..nn as u32 {
                        links[&Peer::Collector(n)].send(&Message::Peers(readout_addrs.clone()));
                    }
                }
            }
            Ev::Msg(Peer::Collector(n), Message::Connected) => connected[n as usize] = true,
            Ev::Msg(p, Message::Fault { detail, .. }) => {
                stop_all(&links);
                return Err(anyhow!("supervisor: start-up failed at {p}: {detail}"));
            }
            // A connected collector's periodic status: nothing to record before the run.
            Ev::Msg(_, Message::Status(_)) => {}
            Ev::Msg(p, m) => eprintln!("supervisor: ignored {m:?} from {p} during start-up"),
            Ev::Lost(p, e) => {
                stop_all(&links);
                return Err(anyhow!("supervisor: {p} left during start-up: {e}"));
            }
            Ev::Tick | Ev::Trigger => {}
        }
    }

    // The run.
    let warmup = sc.run.warmup_events;
    let total = if opts.duration.is_some() { u64::MAX } else { warmup + sc.run.events };
    for l in links.values() {
        l.send(&Message::Start { events: total });
    }
    let t0 = setup.now();
    let mut sup =
        Supervisor::new(sys.supervisor.policy, sys.supervisor.rate_hz, sys.nodes, sys.pus_per_node, total, sc.run.seed);
    sup.start(t0);
    for pu in startup_order(sc.run.seed, sc.total_pus()) {
        sup.on_ready(pu);
    }
    let bar = progress_bar(opts.progress, opts.duration.is_none().then_some(total));
    let mut in_flight: BTreeMap<EventId, InFlight> = BTreeMap::new();
    let mut built: Vec<Built> = Vec::new();
    let mut corrupt: Vec<EventId> = Vec::new();
    let mut faults: Vec<FaultRecord> = Vec::new();
    let mut statuses = vec![CollectorStatus::default(); nn];
    let mut finished = 0u64;
    let mut assigning = true;
    let end_at = opts.duration.map(|d| t0 + d.as_nanos() as Nanos);
    let stall = Duration::from_millis(10 * sc.deploy.peer_timeout_ms.max(1000));
    let mut last_progress = Instant::now();
    let mut window: std::collections::VecDeque<(Nanos, u64, u64)> = Default::default();
    let (mut n_built, mut n_bytes) = (0u64, 0u64);
    let at_s = |t: Nanos| t.saturating_sub(t0) as f64 / NS_PER_S as f64;
    let mut fatal: Option<usize> = None;
    let mut armed: Option<Nanos> = None;

    while fatal.is_none() {
        if let Some(next) = sup.poll_timeout().filter(|_| assigning) {
            if armed.is_none_or(|a| next < a) {
                armed = Some(next);
                wake_at(setup.epoch, next, &tx, Ev::Trigger);
            }
        }
        let ev = rx.recv().await.expect("the loop holds a sender");
        let now = setup.now();
        sup.on_timeout(now);
        match ev {
            Ev::Trigger => armed = None,
            Ev::Msg(peer @ Peer::Collector(n), m) => match m {
                Message::Ready(pu) if pu / sys.pus_per_node == n => sup.on_ready(pu),
                Message::Built { event, pu, latency_ns, bytes, corrupt_fragments } => match in_flight.remove(&event) {
                    Some(f) if f.pu == pu => {
                        finished += 1;
                        last_progress = Instant::now();
                        if corrupt_fragments > 0 {
                            corrupt.push(event);
                        } else {
                            built.push(Built {
                                event,
                                pu,
                                assigned: f.assigned,
                                received: now,
                                latency: latency_ns,
                                bytes,
                            });
                            n_built += 1;
                            n_bytes += bytes;
                            metrics.events_built.inc();
                            metrics.payload_bytes.inc_by(bytes);
                            metrics.latency_seconds.observe(latency_ns as f64 / 1e9);
                        }
                        bar.inc(1);
                    }
                    _ => {
                        fatal = Some(push_fault(
                            &mut faults,
                            at_s(now),
                            peer,
                            format!("reported event {event} built for unit {pu}, which was not collecting it"),
                            vec![],
                        ))
                    }
                },
                Message::Done(event) => {
                    sup.on_done(event);
                    for r in 0..nr as u32 {
                        if let Some(l) = links.get(&Peer::Readout(r)) {
                            l.send(&Message::Clear(event));
                        }
                    }
                }
                Message::Status(s) => {
                    statuses[n as usize] = s;
                    let label = NodeLabel { node: n };
                    metrics.credits_in_use.get_or_create(&label).set(s.credits_in_use as i64);
                    metrics.queued_requests.get_or_create(&label).set(s.queued_requests as i64);
                }
                Message::Fault { fatal: is_fatal, event, detail } => {
                    metrics.faults.inc();
                    let i = push_fault(&mut faults, at_s(now), peer, detail, event.into_iter().collect());
                    if is_fatal {
                        fatal = Some(i);
                    }
                }
                m => {
                    fatal = Some(push_fault(&mut faults, at_s(now), peer, format!("unexpected message {m:?}"), vec![]))
                }
            },
            Ev::Msg(peer, Message::Fault { detail, .. }) => {
                metrics.faults.inc();
                fatal = Some(push_fault(&mut faults, at_s(now), peer, detail, vec![]));
            }
            Ev::Msg(peer, m) => {
                fatal = Some(push_fault(&mut faults, at_s(now), peer, format!("unexpected message {m:?}"), vec![]))
            }
            Ev::Lost(peer, reason) => {
                metrics.faults.inc();
                links.remove(&peer);
                fatal = Some(push_fault(&mut faults, at_s(now), peer, reason, vec![]));
            }
            Ev::Joined(role, index, _, c, _) => {
                eprintln!("supervisor: rejected {} {index} from {} during the run", role.name(), c.peer)
            }
            Ev::Tick => {
                window.push_back((now, n_built, n_bytes));
                while window.len() > 11 {
                    window.pop_front();
                }
                let (t, b, y) = window[0];
                let dt = (now - t) as f64 / NS_PER_S as f64;
                if dt > 0.0 {
                    metrics.event_rate_hz.set((n_built - b) as f64 / dt);
                    metrics.goodput_bps.set((n_bytes - y) as f64 * 8.0 / dt);
                }
                metrics.events_in_flight.set(in_flight.len() as i64);
                let credits: u32 = statuses.iter().map(|s| s.credits_in_use).sum();
                bar.set_message(format!(
                    "{:.0} Hz  {:.2} Gb/s  {} in flight  {} credits in use{}",
                    metrics.event_rate_hz.get(),
                    metrics.goodput_bps.get() / 1e9,
                    in_flight.len(),
                    credits,
                    if faults.is_empty() { String::new() } else { format!("  {} faults", faults.len()) }
                ));
                if !in_flight.is_empty() && last_progress.elapsed() > stall {
                    fatal = Some(push_fault(
                        &mut faults,
                        at_s(now),
                        Peer::Supervisor,
                        format!(
                            "no event built for {} s while {} are in flight: the run is stuck",
                            stall.as_secs(),
                            in_flight.len()
                        ),
                        vec![],
                    ));
                }
            }
        }
        if end_at.is_some_and(|e| now >= e) && assigning {
            assigning = false;
            last_progress = Instant::now();
        }
        while assigning && fatal.is_none() {
            let Some(a) = sup.poll_assignment() else { break };
            in_flight.insert(a.event, InFlight { pu: a.pu, assigned: setup.now() });
            links[&Peer::Collector(a.pu / sys.pus_per_node)].send(&Message::Assign { event: a.event, pu: a.pu });
        }
        if (opts.duration.is_none() && finished >= total) || (!assigning && in_flight.is_empty()) {
            break;
        }
    }
    bar.finish_and_clear();
    let end = setup.now();
    if let Some(i) = fatal {
        faults[i].lost_events.extend(in_flight.keys().copied());
    }

    // Stop everyone; collectors answer with their final counters and close.
    for l in links.values() {
        l.send(&Message::Stop);
        l.close();
    }
    let mut open = links.len();
    let until = Instant::now() + ms(1500);
    while open > 0 {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(Ev::Msg(Peer::Collector(n), Message::Status(s)))) => statuses[n as usize] = s,
            Ok(Some(Ev::Lost(..))) => open -= 1,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }

    let wall_s = setup.epoch.elapsed().as_secs_f64();
    Ok(report(
        sc,
        &opts,
        Tally { built, corrupt, in_flight, faults, statuses, assigned: sup.events_assigned(), t0, end, wall_s },
    ))
}

fn push_fault(
    faults: &mut Vec<FaultRecord>,
    at_s: f64,
    peer: Peer,
    reason: String,
    lost_events: Vec<EventId>,
) -> usize {
    faults.push(FaultRecord { at_s, role: peer.to_string(), reason, lost_events });
    faults.len() - 1
}

fn progress_bar(show: bool, total: Option<u64>) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => ProgressBar::new(t).with_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} events  {elapsed}  {msg}").expect("valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {pos} events  {elapsed}  {msg}").expect("valid template"),
        ),
    };
    bar.enable_steady_tick(ms(200));
    bar
}

struct Tally {
    built: Vec<Built>,
    corrupt: Vec<EventId>,
    in_flight: BTreeMap<EventId, InFlight>,
    faults: Vec<FaultRecord>,
    statuses: Vec<CollectorStatus>,
    assigned: u64,
    t0: Nanos,
    end: Nanos,
    wall_s: f64,
}

fn report(sc: &Scenario, opts: &SupervisorOptions, t: Tally) -> Outcome {
    let warmup = sc.run.warmup_events;
    let measured: Vec<&Built> = t.built.iter().filter(|b| b.event >= warmup).collect();
    let latencies: Vec<Nanos> = measured.iter().map(|b| b.latency).collect();
    let events_built = measured.len() as u64;
    let lost_in_flight =
        if t.faults.is_empty() { 0 } else { t.in_flight.keys().filter(|&&e| e >= warmup).count() as u64 };
    let lost = lost_in_flight + t.corrupt.iter().filter(|&&e| e >= warmup).count() as u64;
    let target = if opts.duration.is_some() { t.assigned.saturating_sub(warmup) } else { sc.run.events };
    let first = measured.iter().map(|b| b.assigned).min().unwrap_or(t.t0);
    let last = measured.iter().map(|b| b.received).max().unwrap_or(t.end);
    let duration_s = last.saturating_sub(first) as f64 / NS_PER_S as f64;
    let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
    let bytes: u64 = measured.iter().map(|b| b.bytes).sum();
    let credits = match sc.system.credits_per_node {
        Credits::Limited(c) => Some(c),
        Credits::Unlimited => None,
    };
    let report = RunReport {
        substrate: "run".into(),
        scenario: opts.origin.clone(),
        seed: sc.run.seed,
        events_built,
        events_not_built: NotBuilt { timed_out: 0, lost, abandoned: target.saturating_sub(events_built + lost) },
        duration_s,
        event_rate_hz: per_s(events_built as f64),
        goodput_bps: per_s(bytes as f64 * 8.0),
        latency_ms: LatencyMs::from_ns(&latencies),
        wall_s: t.wall_s,
        daqnet_version: env!("CARGO_PKG_VERSION").into(),
        nodes: t
            .statuses
            .iter()
            .enumerate()
            .map(|(n, s)| NodeStats {
                node: n as u32,
                credits,
                peak_outstanding_fragments: s.peak_outstanding_fragments,
                fragments_verified: s.fragments_verified,
                fragments_corrupt: s.fragments_corrupt,
            })
            .collect(),
        faults: t.faults,
        resolved_scenario: sc.to_toml(),
        ..Default::default()
    };
    let events = if opts.per_event {
        let mut v: Vec<EventRecord> = t
            .built
            .iter()
            .map(|b| EventRecord {
                event: b.event,
                pu: b.pu,
                node: b.pu / sc.system.pus_per_node,
                assigned_ns: b.assigned - t.t0,
                start_ns: (b.received - t.t0).saturating_sub(b.latency),
                done_ns: b.received - t.t0,
                bytes: b.bytes,
                measured: b.event >= warmup,
            })
            .collect();
        v.sort_by_key(|r| r.event);
        v
    } else {
        Vec::new()
    };
    Outcome { report, events }
}
