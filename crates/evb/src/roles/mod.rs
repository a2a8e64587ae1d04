//! The three roles of a real run, each a state machine without IO driven by a thin async loop
//! that only moves bytes and timers: [`readout`], [`collector`] and [`supervisor`]. The state
//! machines drive the unchanged `core` dataflow ([`daqnet_core::dataflow`]).
//!
//! Every role's loop has the same shape: connection tasks (see [`crate::net::link`]) and timer
//! tasks turn bytes and deadlines into events on one channel; the loop feeds each event to the
//! role's state, then carries out what the state asks (messages to peers, timers to arm).

pub mod collector;
pub mod error;
pub mod readout;
pub mod supervisor;

use crate::net::greet::Refusals;
use crate::net::link::{connect_until, first_message, spawn_link, LinkWriter};
use crate::net::tcp_trace::TcpTrace;
use crate::net::transport::{from_deploy, Conn, Listener, Transport};
use crate::role::RoleId;
use crate::wire::{FrameDecoder, Message};
use bytes::BytesMut;
use daqnet_core::{Nanos, Scenario};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Connections that have not said hello yet, at most (more are closed at once): a local
/// process cannot tie up a role's memory or descriptors by opening connections and waiting.
pub const MAX_UNIDENTIFIED_CONNECTIONS: usize = 64;

/// Largest first frame (a hello) read from a connection that has not identified itself.
pub const MAX_HELLO_FRAME_BYTES: u64 = 4096;

/// Sleeps until `until` to within tens of microseconds. Tokio's timers round up to whole
/// milliseconds, which would turn a 50 µs service time or a 200 µs processing time into 1 ms;
/// the last 2 ms are therefore slept on a blocking-pool thread.
async fn sleep_precisely(until: Instant) {
    if until.saturating_duration_since(Instant::now()) > ms(3) {
        tokio::time::sleep_until(until - ms(2)).await;
    }
    let left = until.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(left)).await;
    }
}

/// Sends `ev` on `tx` at `at_ns` on the role's clock (now, if that has passed).
fn wake_at<E: Send + 'static>(epoch: Instant, at_ns: Nanos, tx: &UnboundedSender<E>, ev: E) {
    let tx = tx.clone();
    tokio::spawn(async move {
        sleep_precisely(epoch + Duration::from_nanos(at_ns)).await;
        let _ = tx.send(ev);
    });
}

/// Sends `ev()` on `tx` every `period` until the receiver is gone.
fn every<E: Send + 'static>(period: Duration, tx: &UnboundedSender<E>, ev: fn() -> E) -> JoinHandle<()> {
    let tx = tx.clone();
    tokio::spawn(async move {
        let mut t = tokio::time::interval(period);
        loop {
            t.tick().await;
            if tx.send(ev()).is_err() {
                return;
            }
        }
    })
}

/// How a role's loop hears from the supervisor: its messages, and the end of the connection.
pub(crate) type SupervisorEvents<E> = (fn(Message) -> E, fn(String) -> E);

/// A connection that said hello.
pub(crate) struct Joined {
    /// Who it says it is.
    pub role: RoleId,
    /// The address it listens on (readout units).
    pub listen: String,
    /// The connection.
    pub conn: Conn,
    /// Bytes read beyond the hello.
    pub rest: BytesMut,
}

/// What every role takes from `[deploy]`, and its clock.
#[derive(Clone)]
pub(crate) struct Setup {
    transport: Arc<dyn Transport>,
    decoder: FrameDecoder,
    heartbeat: Duration,
    peer_timeout: Duration,
    startup: Duration,
    epoch: Instant,
    run_id: u64,
    me: RoleId,
    /// The TCP senders being traced (`daqnet role --trace`).
    trace: Option<Arc<TcpTrace>>,
}

impl Setup {
    fn new(sc: &Scenario, me: RoleId) -> Self {
        let d = &sc.deploy;
        Setup {
            transport: from_deploy(d),
            decoder: FrameDecoder::new(d.max_frame_bytes),
            heartbeat: ms(d.heartbeat_ms),
            peer_timeout: ms(d.peer_timeout_ms),
            startup: ms(d.startup_timeout_ms),
            epoch: Instant::now(),
            run_id: d.run_id,
            me,
            trace: None,
        }
    }

    /// Samples the connections of [`Setup::dial`] and [`Setup::watch`] that `trace` selects
    /// (`OUT/trace-tcp-HOST.csv`); [`Setup::finish_trace`] ends it.
    fn traced(mut self, trace: Option<&(daqnet_core::trace::TraceSpec, std::path::PathBuf)>) -> anyhow::Result<Self> {
        if let Some((spec, out)) = trace.filter(|t| !t.0.senders.is_empty()) {
            self.trace = Some(Arc::new(TcpTrace::start(spec.clone(), self.me, out)?));
        }
        Ok(self)
    }

    /// Traces this role's sending half of `c` towards `peer`, if the trace selects it.
    fn watch(&self, peer: RoleId, c: &Conn) {
        if let Some(t) = &self.trace {
            t.watch(peer, c.stats.as_ref());
        }
    }

    /// Ends the trace and writes what is left (the role's last act).
    fn finish_trace(&self) -> anyhow::Result<()> {
        self.trace.as_ref().map_or(Ok(()), |t| t.finish())
    }

    /// Nanoseconds since this role started: the time the state machines see.
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// This role's hello.
    fn hello(&self, listen: String) -> Message {
        Message::Hello { role: self.me, run: self.run_id, listen }
    }

    /// Connects to `addr` (retrying while it refuses, until the start-up deadline), starts the
    /// link ([`Setup::link`]) and says hello, giving the address this role listens on (empty
    /// if none).
    async fn dial<E, F>(
        &self,
        (addr, peer): (&str, RoleId),
        deadline: Instant,
        listen: String,
        events: UnboundedSender<E>,
        map: F,
    ) -> anyhow::Result<(LinkWriter, JoinHandle<()>)>
    where
        E: Send + 'static,
        F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
    {
        let c = connect_until(&*self.transport, addr, deadline, &peer.to_string()).await?;
        self.watch(peer, &c);
        let (w, task) = self.link(c, BytesMut::new(), events, map);
        w.send(&self.hello(listen));
        Ok((w, task))
    }

    /// Dials the supervisor at `addr` and says hello ([`Setup::dial`]); its messages reach the
    /// role's loop as `msg(m)`, the end of the connection as `lost(reason)`.
    async fn join_supervisor<E: Send + 'static>(
        &self,
        (addr, listen): (&str, String),
        deadline: Instant,
        events: UnboundedSender<E>,
        (msg, lost): SupervisorEvents<E>,
    ) -> anyhow::Result<(LinkWriter, JoinHandle<()>)> {
        let to_events = move |m: Result<Message, String>| Some(m.map_or_else(lost, msg));
        let me = self.me;
        self.dial((addr, RoleId::Supervisor), deadline, listen, events, to_events)
            .await
            .map_err(|e| anyhow::anyhow!("{me}: {e}"))
    }

    /// Starts a connection's writer and reader ([`spawn_link`]): what the peer says goes
    /// through `map` to the role's loop, and so does the end of the connection.
    fn link<E, F>(&self, c: Conn, pending: BytesMut, events: UnboundedSender<E>, map: F) -> (LinkWriter, JoinHandle<()>)
    where
        E: Send + 'static,
        F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
    {
        spawn_link(c, pending, self.decoder.clone(), (self.heartbeat, self.peer_timeout), events, map)
    }

    /// Accepts connections on `listener` until the process ends. Each must open with a hello of
    /// this run within the start-up limit; it then goes to the role's loop through `joined`.
    /// Connections are refused (and logged) that say something else, belong to another run,
    /// or exceed [`MAX_UNIDENTIFIED_CONNECTIONS`] waiting for their hello. A failed accept
    /// (out of descriptors, say) is logged and retried with back-off.
    fn accept_hellos<E, F>(&self, listener: Box<dyn Listener>, tx: UnboundedSender<E>, joined: F)
    where
        E: Send + 'static,
        F: Fn(Joined) -> E + Send + Sync + 'static,
    {
        let (me, run, limit) = (self.me, self.run_id, self.startup);
        let decoder = FrameDecoder::for_hello(MAX_HELLO_FRAME_BYTES);
        let slots = Arc::new(Semaphore::new(MAX_UNIDENTIFIED_CONNECTIONS));
        let joined = Arc::new(joined);
        // Strays are said at most once a second, however many there are.
        let refusals = Arc::new(Refusals::new(me.to_string()));
        tokio::spawn(accept_loop(listener, me, move |mut c: Conn| {
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                refusals.say(
                    "crowd",
                    format_args!("the connection from {}: too many connections waiting for a hello", c.peer),
                );
                return;
            };
            let (tx, decoder, joined, refusals) = (tx.clone(), decoder.clone(), joined.clone(), refusals.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let peer = c.peer.clone();
                match first_message(&mut c.read, &decoder, limit).await {
                    Ok((Message::Hello { role, run: r, listen }, rest)) if r == run => {
                        let _ = tx.send(joined(Joined { role, listen, conn: c, rest }));
                    }
                    Ok((Message::Hello { role, run: r, .. }, _)) => refusals
                        .say("run", format_args!("{role} from {peer}: it belongs to run {r}, this is run {run}")),
                    Ok((m, _)) => {
                        refusals.say("hello", format_args!("the connection from {peer}, which opened with {m:?}"))
                    }
                    Err(e) => refusals.say(refusal_kind(&e), format_args!("the connection from {peer}: {e}")),
                }
            });
        }));
    }
}

/// The kind of a failed hello, for [`Refusals`]: each kind of frame error is said on its own.
fn refusal_kind(e: &anyhow::Error) -> &'static str {
    match e.downcast_ref::<crate::wire::FrameError>() {
        Some(crate::wire::FrameError::BadMagic(_)) => "magic",
        Some(crate::wire::FrameError::Version(_)) => "version",
        Some(crate::wire::FrameError::TooLarge { .. }) => "size",
        None => "broken",
    }
}

/// Accepts until the listener is closed for good; errors are logged and retried after a pause
/// that doubles up to a second.
async fn accept_loop(mut listener: Box<dyn Listener>, me: RoleId, mut on_conn: impl FnMut(Conn)) {
    let mut pause = ms(10);
    loop {
        match listener.accept().await {
            Ok(c) => {
                pause = ms(10);
                on_conn(c);
            }
            Err(e) => {
                eprintln!("{me}: accept failed ({e}); retrying in {} ms", pause.as_millis());
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(ms(1000));
            }
        }
    }
}
