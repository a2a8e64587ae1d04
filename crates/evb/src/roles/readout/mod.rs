//! The readout role: its state ([`state`]) serves collectors' data requests from a buffer of
//! generated fragments ([`buffer`]); this module is the async loop that accepts collectors,
//! runs the generator while there is room, and sends what the state asks.

mod buffer;
pub mod state;

#[cfg(test)]
pub(crate) use buffer::generate;

use super::{every, ms, wake_at, Joined, Setup, SupervisorEvents};
use crate::net::link::LinkWriter;
use crate::net::transport::TcpStats;
use crate::role::RoleId;
use crate::wire::{Message, NodeTcp};
use anyhow::{anyhow, bail, Context};
use daqnet_core::trace::TraceSpec;
use daqnet_core::{EventId, Nanos, NodeId, ReadoutId, Scenario};
use state::{Input, Output, ReadoutState};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Options of one readout process.
#[derive(Debug, Clone)]
pub struct ReadoutOptions {
    /// Readout unit number.
    pub index: ReadoutId,
    /// Supervisor address.
    pub supervisor: String,
    /// Listen address (default: `deploy.readouts[index]`, else loopback with a free port).
    pub listen: Option<String>,
    /// Fault injection for tests: flip one payload bit of these events' first fragment.
    pub corrupt_events: Vec<EventId>,
    /// TCP senders to trace, and the folder their samples go to ([`crate::net::tcp_trace`]).
    pub trace: Option<(TraceSpec, PathBuf)>,
}

enum Ev {
    In(Input),
    Joined(Joined),
    SupervisorLost(String),
    /// Time to report the data connections' kernel counters.
    Tick,
}

/// The connections of a running readout unit.
struct Connections {
    supervisor: LinkWriter,
    collectors: HashMap<NodeId, (LinkWriter, JoinHandle<()>)>,
    /// Every collector connection's kernel counters, kept after the connection ends.
    stats: BTreeMap<NodeId, TcpStats>,
}

impl Connections {
    /// Tells the supervisor what the kernel counted on every data connection.
    fn report_tcp(&self) {
        let counts: Vec<NodeTcp> = self
            .stats
            .iter()
            .filter_map(|(&node, s)| {
                s.read().map(|c| NodeTcp { node, retransmits: c.retransmits, timeouts: c.timeouts })
            })
            .collect();
        if !counts.is_empty() {
            self.supervisor.send(&Message::Tcp(counts));
        }
    }
}

/// Runs one readout unit until the supervisor stops the run.
pub async fn run(sc: &Scenario, opts: ReadoutOptions) -> anyhow::Result<()> {
    let me = RoleId::Readout(opts.index);
    let setup = Setup::new(sc, me).traced(opts.trace.as_ref())?;
    let listen = opts.listen.clone().or_else(|| sc.deploy.readouts.get(opts.index.index()).cloned());
    let listen = listen.as_deref().unwrap_or("127.0.0.1:0");
    let listener = setup.transport.listen(listen).await.with_context(|| format!("{me}: cannot listen on {listen}"))?;
    let (tx, mut rx) = unbounded_channel::<Ev>();
    let deadline = Instant::now() + setup.startup;
    let to_events: SupervisorEvents<Ev> = (|m| Ev::In(Input::Supervisor(m)), Ev::SupervisorLost);
    let (sup, sup_task) =
        setup.join_supervisor((&opts.supervisor, listener.local_addr()), deadline, tx.clone(), to_events).await?;
    // Collectors connect and say which node they are.
    setup.accept_hellos(listener, tx.clone(), Ev::Joined);
    let mut state = ReadoutState::new(sc, opts.index, opts.corrupt_events.clone());
    let mut links = Connections { supervisor: sup, collectors: HashMap::new(), stats: BTreeMap::new() };
    let tick = every(ms(1000), &tx, || Ev::Tick);
    let result = serve(&setup, &mut state, &mut rx, &tx, &mut links).await;
    tick.abort();
    links.report_tcp();
    for (link, task) in links.collectors.into_values() {
        link.close();
        let _ = tokio::time::timeout(ms(1000), task).await;
    }
    links.supervisor.close();
    let _ = tokio::time::timeout(ms(1000), sup_task).await;
    result.map_err(|e| anyhow!("{me}: {e}"))?;
    setup.finish_trace()
}

/// The run: events from the connections go to the state; between them the generator fills
/// the buffer while there is room. Ends when the supervisor says stop, or on a fatal error
/// (the supervisor has been told).
async fn serve(
    setup: &Setup,
    state: &mut ReadoutState,
    rx: &mut UnboundedReceiver<Ev>,
    tx: &UnboundedSender<Ev>,
    links: &mut Connections,
) -> anyhow::Result<()> {
    let mut armed: Option<Nanos> = None;
    while !state.stopped() {
        let room = state.has_room();
        tokio::select! {
            biased;
            ev = rx.recv() => {
                let input = match ev.expect("the loop holds a sender") {
                    Ev::SupervisorLost(reason) => bail!("supervisor connection lost: {reason}"),
                    Ev::Tick => {
                        links.report_tcp();
                        continue;
                    }
                    Ev::Joined(j) => {
                        join(setup, state, links, tx, j);
                        continue;
                    }
                    Ev::In(Input::Due) => {
                        armed = None;
                        Input::Due
                    }
                    Ev::In(Input::CollectorLost(n)) => {
                        links.collectors.remove(&n);
                        Input::CollectorLost(n)
                    }
                    Ev::In(input) => input,
                };
                let result = state.handle(setup.now(), input);
                flush(state, links);
                result.map_err(anyhow::Error::msg)?;
            }
            _ = std::future::ready(()), if room => {
                state.generate_next();
                // Let the connection tasks (responses, heartbeats) run between events.
                tokio::task::yield_now().await;
            }
        }
        let result = state.answer(setup.now());
        flush(state, links);
        result.map_err(anyhow::Error::msg)?;
        if let Some(due) = state.poll_timeout().filter(|&d| armed.is_none_or(|a| d < a)) {
            armed = Some(due);
            wake_at(setup.epoch, due, tx, Ev::In(Input::Due));
        }
    }
    Ok(())
}

/// A collector said hello: connect it, unless the state refuses it (logged).
fn join(setup: &Setup, state: &mut ReadoutState, links: &mut Connections, tx: &UnboundedSender<Ev>, j: Joined) {
    let me = setup.me;
    let RoleId::Collector(node) = j.role else {
        eprintln!("{me}: refused {} from {}: only collectors connect to a readout unit", j.role, j.conn.peer);
        return;
    };
    if let Err(why) = state.on_joined(node) {
        eprintln!("{me}: refused the connection from {}: {why}", j.conn.peer);
        return;
    }
    let mut conn = j.conn;
    setup.watch(j.role, &conn);
    if let Some(s) = conn.stats.take() {
        links.stats.insert(node, s);
    }
    let (sender, task) = setup.link(conn, j.rest, tx.clone(), move |m| {
        Some(Ev::In(match m {
            Ok(m) => Input::Collector(node, m),
            Err(_) => Input::CollectorLost(node),
        }))
    });
    links.collectors.insert(node, (sender, task));
}

fn flush(state: &mut ReadoutState, links: &Connections) {
    while let Some(o) = state.poll() {
        match o {
            Output::ToSupervisor(m) => {
                links.supervisor.send(&m);
            }
            Output::Respond(node, pieces) => {
                if let Some((l, _)) = links.collectors.get(&node) {
                    l.send_frames(pieces);
                }
            }
        }
    }
}
