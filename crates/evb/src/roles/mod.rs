//! The three roles of a real run, each driving the unchanged `core` state machines over real
//! connections: [`readout`], [`collector`] and [`supervisor`].

pub mod collector;
pub mod readout;
pub mod supervisor;

use crate::net::link::{connect_until, first_message, spawn_reader};
use crate::net::transport::{from_deploy, BoxRead, Conn, Listener, Transport};
use crate::wire::{FrameDecoder, Message};
use bytes::BytesMut;
use daqnet_core::{Nanos, Scenario};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

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

/// What every role takes from `[deploy]`, and its clock.
struct Setup {
    transport: Arc<dyn Transport>,
    decoder: FrameDecoder,
    heartbeat: Duration,
    peer_timeout: Duration,
    startup: Duration,
    epoch: Instant,
}

impl Setup {
    fn new(sc: &Scenario) -> Self {
        let d = &sc.deploy;
        Setup {
            transport: from_deploy(d),
            decoder: FrameDecoder::new(d.max_frame_bytes),
            heartbeat: ms(d.heartbeat_ms),
            peer_timeout: ms(d.peer_timeout_ms),
            startup: ms(d.startup_timeout_ms),
            epoch: Instant::now(),
        }
    }

    /// Nanoseconds since this role started: the time the state machines see.
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    async fn connect_supervisor(&self, addr: &str, me: &str) -> anyhow::Result<Conn> {
        connect_until(&*self.transport, addr, Instant::now() + self.startup, "the supervisor")
            .await
            .map_err(|e| anyhow::anyhow!("{me}: {e}"))
    }

    /// Accepts connections on `listener` until the process ends. Each must open with a hello
    /// within the start-up limit; `joined` turns it into an event for the role's loop, or hands
    /// the message back to refuse the connection (logged, as is a missing or malformed hello).
    fn accept_hellos<E, F>(&self, mut listener: Box<dyn Listener>, me: &'static str, tx: UnboundedSender<E>, joined: F)
    where
        E: Send + 'static,
        F: Fn(Message, Conn, BytesMut) -> Result<E, Message> + Send + Sync + 'static,
    {
        let (decoder, limit, joined) = (self.decoder.clone(), self.startup, Arc::new(joined));
        tokio::spawn(async move {
            while let Ok(mut c) = listener.accept().await {
                let (tx, decoder, joined) = (tx.clone(), decoder.clone(), joined.clone());
                tokio::spawn(async move {
                    let peer = c.peer.clone();
                    match first_message(&mut c.read, &decoder, limit).await {
                        Ok((m, rest)) => match joined(m, c, rest) {
                            Ok(e) => {
                                let _ = tx.send(e);
                            }
                            Err(m) => eprintln!("{me}: refused the connection from {peer}, which opened with {m:?}"),
                        },
                        Err(e) => eprintln!("{me}: connection from {peer}: {e}"),
                    }
                });
            }
        });
    }

    fn reader<E, F>(&self, r: BoxRead, pending: BytesMut, events: UnboundedSender<E>, map: F)
    where
        E: Send + 'static,
        F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
    {
        spawn_reader(r, self.decoder.clone(), self.peer_timeout, pending, events, map);
    }
}
