//! The collector role: one per node. Its state ([`state`]) drives the node's collector (with
//! its credit pool) and processing units; this module is the async loop that keeps one
//! persistent connection to every readout unit and to the supervisor, and verifies every
//! fragment as it arrives ([`verify`]).

pub mod state;
pub mod verify;

use super::{every, ms, wake_at, Setup, SupervisorEvents};
use crate::net::link::LinkWriter;
use crate::role::RoleId;
use crate::wire::Message;
use anyhow::{anyhow, bail};
use daqnet_core::trace::TraceSpec;
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{NodeId, ReadoutId, Scenario};
use state::{CollectorState, Input, Output};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
pub use verify::{verify, Verdict};

/// Options of one collector process.
#[derive(Debug, Clone)]
pub struct CollectorOptions {
    /// Node number.
    pub index: NodeId,
    /// Supervisor address.
    pub supervisor: String,
    /// TCP senders to trace, and the folder their samples go to ([`crate::net::tcp_trace`]).
    pub trace: Option<(TraceSpec, PathBuf)>,
}

enum Ev {
    /// Something the connection tasks or timers turned into a state input.
    In(Input),
    SupervisorLost(String),
}

/// The connections of a running collector.
struct Connections {
    supervisor: LinkWriter,
    readouts: Vec<Option<LinkWriter>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Connections {
    fn send(&self, setup: &Setup, tx: &UnboundedSender<Ev>, o: Output) {
        match o {
            Output::ToSupervisor(m) => {
                self.supervisor.send(&m);
            }
            Output::ToReadout(r, m) => {
                if let Some(l) = &self.readouts[r.index()] {
                    l.send(&m);
                }
            }
            Output::WakeAt(pu, at) => wake_at(setup.epoch, at, tx, Ev::In(Input::Wake(pu))),
        }
    }

    /// Closes every connection, the supervisor's last, and waits a second at most for each.
    async fn close(self) {
        for link in self.readouts.into_iter().flatten() {
            link.close();
        }
        for t in self.tasks {
            let _ = tokio::time::timeout(ms(1000), t).await;
        }
    }
}

/// Runs the collector of one node until the supervisor stops the run.
pub async fn run(sc: &Scenario, opts: CollectorOptions) -> anyhow::Result<()> {
    let node = opts.index;
    let me = RoleId::Collector(node);
    let setup = Setup::new(sc, me).traced(opts.trace.as_ref())?;
    let (tx, mut rx) = unbounded_channel::<Ev>();
    let deadline = Instant::now() + setup.startup;
    let to_events: SupervisorEvents<Ev> = (|m| Ev::In(Input::Supervisor(m)), Ev::SupervisorLost);
    let (sup, sup_task) =
        setup.join_supervisor((&opts.supervisor, String::new()), deadline, tx.clone(), to_events).await?;
    let addrs = peers(sc, me, &mut rx, deadline).await?;
    let outstanding = Arc::new(AtomicU64::new(0));
    let mut links = Connections { supervisor: sup, readouts: Vec::new(), tasks: Vec::new() };
    connect_readouts(&setup, sc, addrs, deadline, &tx, &outstanding, &mut links).await?;
    links.supervisor.send(&Message::Connected);
    let mut state = CollectorState::new(sc, node, outstanding);
    let tick = every(ms(100), &tx, || Ev::In(Input::Tick));
    let result = serve(&setup, &mut state, &mut rx, &tx, &mut links).await;
    tick.abort();
    links.supervisor.send(&Message::Status(state.status()));
    let sup = links.supervisor.clone();
    links.close().await;
    sup.close();
    let _ = tokio::time::timeout(ms(1000), sup_task).await;
    result.map_err(|e| anyhow!("{me}: {e}"))?;
    setup.finish_trace()
}

/// Waits for the readout units' addresses from the supervisor.
async fn peers(
    sc: &Scenario,
    me: RoleId,
    rx: &mut UnboundedReceiver<Ev>,
    deadline: Instant,
) -> anyhow::Result<Vec<String>> {
    let units = sc.system.readout_units as usize;
    match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Ev::In(Input::Supervisor(Message::Peers(a))))) if a.len() == units => Ok(a),
        Ok(Some(Ev::SupervisorLost(e))) => bail!("{me}: supervisor connection lost at start-up: {e}"),
        Ok(Some(Ev::In(Input::Supervisor(Message::Peers(a))))) => {
            bail!("{me}: the supervisor sent {} readout addresses; the scenario has {units} readout units", a.len())
        }
        Ok(_) => bail!("{me}: expected the readout units' addresses from the supervisor first"),
        Err(_) => bail!("{me}: no readout addresses from the supervisor within {} ms", sc.deploy.startup_timeout_ms),
    }
}

/// Connects to every readout unit at once; each response is verified on its connection's task
/// as it arrives. A unit that cannot be reached is reported to the supervisor as its fault.
async fn connect_readouts(
    setup: &Setup,
    sc: &Scenario,
    addrs: Vec<String>,
    deadline: Instant,
    tx: &UnboundedSender<Ev>,
    outstanding: &Arc<AtomicU64>,
    links: &mut Connections,
) -> anyhow::Result<()> {
    let RoleId::Collector(node) = setup.me else { unreachable!("a collector's setup") };
    let sizes = FragmentSizes::new(sc.system.fragment_size.clone(), sc.run.seed, sc.system.fragments_per_unit);
    let mut dials = JoinSet::new();
    for (r, addr) in addrs.into_iter().enumerate() {
        let (setup, tx, r) = (setup.clone(), tx.clone(), ReadoutId(r as u32));
        let (seed, sizes, outstanding, check) =
            (sc.run.seed, sizes.clone(), outstanding.clone(), sc.deploy.verify_payload);
        let to_events = move |m: Result<Message, String>| {
            Some(Ev::In(match m {
                Ok(Message::Response(head, body)) => {
                    // Counted at the socket, before the credit pool hears of it.
                    let _ = outstanding.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| {
                        Some(o.saturating_sub(head.fragments as u64))
                    });
                    Input::Response(r, head, verify(seed, &sizes, node, r, &head, body, check))
                }
                Ok(m) => Input::ReadoutMessage(r, m),
                Err(e) => Input::ReadoutLost(r, e),
            }))
        };
        dials.spawn(async move {
            (r, setup.dial((&addr, RoleId::Readout(r)), deadline, String::new(), tx, to_events).await)
        });
    }
    links.readouts = vec![None; sc.system.readout_units as usize];
    while let Some(j) = dials.join_next().await {
        let (r, dialed) = j.map_err(|e| anyhow!("{e}"))?;
        let (w, task) = dialed.map_err(|e| {
            let detail = e.to_string();
            let fault =
                Message::Fault { culprit: RoleId::Readout(r), fatal: true, event: None, detail: detail.clone() };
            links.supervisor.send(&fault);
            anyhow!(detail)
        })?;
        links.readouts[r.index()] = Some(w);
        links.tasks.push(task);
    }
    Ok(())
}

/// The run: feeds events to the state and carries out what it asks, until the supervisor says
/// stop. A fatal error ends it (the supervisor has been told).
async fn serve(
    setup: &Setup,
    state: &mut CollectorState,
    rx: &mut UnboundedReceiver<Ev>,
    tx: &UnboundedSender<Ev>,
    links: &mut Connections,
) -> anyhow::Result<()> {
    while !state.stopped() {
        let input = match rx.recv().await.expect("the loop holds a sender") {
            Ev::SupervisorLost(e) => bail!("supervisor connection lost: {e}"),
            Ev::In(Input::ReadoutLost(r, e)) => {
                links.readouts[r.index()] = None;
                Input::ReadoutLost(r, e)
            }
            Ev::In(input) => input,
        };
        let result = state.handle(setup.now(), input);
        while let Some(o) = state.poll() {
            links.send(setup, tx, o);
        }
        result.map_err(anyhow::Error::msg)?;
    }
    Ok(())
}
