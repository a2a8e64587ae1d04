//! One connection at run time: a writer task that sends frames (and a heartbeat when the
//! connection is quiet) and a reader task that decodes frames and hands messages to the role's
//! event loop — or reports the connection lost: closed, failed, silent too long, or malformed.

use super::transport::{BoxRead, BoxWrite, Conn, Transport};
use crate::wire::{FrameDecoder, Message};
use anyhow::anyhow;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, timeout, Instant};

/// What a writer task is asked to send.
#[derive(Debug)]
pub enum Outgoing {
    /// One or more whole frames, written back to back (vectored, no copy).
    Frames(Vec<Bytes>),
    /// Flush and close the sending side.
    Close,
}

/// Handle of a connection's writer task.
#[derive(Clone)]
pub struct Sender {
    tx: UnboundedSender<Outgoing>,
}

impl Sender {
    /// Queues a message. Returns false when the connection is gone.
    pub fn send(&self, m: &Message) -> bool {
        self.tx.send(Outgoing::Frames(vec![m.to_frame()])).is_ok()
    }

    /// Queues pieces that together make frames.
    pub fn send_frames(&self, pieces: Vec<Bytes>) -> bool {
        self.tx.send(Outgoing::Frames(pieces)).is_ok()
    }

    /// Asks the writer to flush what is queued and close.
    pub fn close(&self) {
        let _ = self.tx.send(Outgoing::Close);
    }
}

async fn write_pieces(w: &mut BoxWrite, pieces: &mut VecDeque<Bytes>) -> std::io::Result<()> {
    while !pieces.is_empty() {
        let n = {
            let slices: Vec<IoSlice> = pieces.iter().take(64).map(|b| IoSlice::new(b)).collect();
            w.write_vectored(&slices).await?
        };
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut left = n;
        while left > 0 {
            let front = pieces.front_mut().expect("bytes written come from queued pieces");
            if front.len() <= left {
                left -= front.len();
                pieces.pop_front();
            } else {
                front.advance(left);
                left = 0;
            }
        }
    }
    Ok(())
}

/// Starts the writer task of a connection; it sends a heartbeat whenever nothing was sent for
/// `heartbeat`. It ends on [`Sender::close`], when every [`Sender`] is dropped, or on a write
/// error (the reader side then reports the loss).
pub fn spawn_writer(mut w: BoxWrite, heartbeat: Duration) -> (Sender, JoinHandle<()>) {
    let (tx, mut rx) = unbounded_channel::<Outgoing>();
    let task = tokio::spawn(async move {
        let beat = Message::Heartbeat.to_frame();
        let mut pieces = VecDeque::new();
        let mut last = Instant::now();
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                _ = sleep_until(last + heartbeat) => Some(Outgoing::Frames(vec![beat.clone()])),
            };
            let mut close = false;
            match msg {
                Some(Outgoing::Frames(f)) => pieces.extend(f),
                Some(Outgoing::Close) | None => close = true,
            }
            // Gather whatever else is queued into the same write.
            while !close && pieces.len() < 256 {
                match rx.try_recv() {
                    Ok(Outgoing::Frames(f)) => pieces.extend(f),
                    Ok(Outgoing::Close) => close = true,
                    Err(_) => break,
                }
            }
            if write_pieces(&mut w, &mut pieces).await.is_err() {
                return;
            }
            last = Instant::now();
            if close {
                let _ = w.flush().await;
                let _ = w.shutdown().await;
                return;
            }
        }
    });
    (Sender { tx }, task)
}

/// Starts the reader task of a connection. Every decoded message except heartbeats goes through
/// `map` as `Ok`; the end of the connection goes through it once as `Err(reason)` — closed,
/// failed, silent for `peer_timeout`, or a malformed frame (the connection is then dropped).
/// `pending` holds bytes already read from the connection.
pub fn spawn_reader<E, F>(
    mut r: BoxRead,
    decoder: FrameDecoder,
    peer_timeout: Duration,
    pending: BytesMut,
    events: UnboundedSender<E>,
    mut map: F,
) -> JoinHandle<()>
where
    E: Send + 'static,
    F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = pending;
        let reason = loop {
            loop {
                match decoder.decode(&mut buf) {
                    Ok(Some((kind, body))) => match Message::decode(kind, body) {
                        Ok(Message::Heartbeat) => {}
                        Ok(m) => {
                            if let Some(e) = map(Ok(m)) {
                                if events.send(e).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => {
                            let _ =
                                map(Err(format!("malformed message, connection closed: {e}"))).map(|e| events.send(e));
                            return;
                        }
                    },
                    Ok(None) => break,
                    Err(e) => {
                        let _ = map(Err(format!("malformed frame, connection closed: {e}"))).map(|e| events.send(e));
                        return;
                    }
                }
            }
            // Small reads until a frame header is in: the decoder then reserves room for the
            // whole frame, so a large frame is copied at most a few kB before landing in place.
            if buf.capacity() - buf.len() < 4 << 10 {
                buf.reserve(16 << 10);
            }
            match timeout(peer_timeout, r.read_buf(&mut buf)).await {
                Err(_) => break format!("silent for {} ms (no data, no heartbeat): hung?", peer_timeout.as_millis()),
                Ok(Ok(0)) if buf.is_empty() => break "connection closed".to_string(),
                Ok(Ok(0)) => break format!("connection closed in the middle of a frame ({} bytes pending)", buf.len()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break format!("connection failed: {e}"),
            }
        };
        if let Some(e) = map(Err(reason)) {
            let _ = events.send(e);
        }
    })
}

/// Reads the first message of a fresh connection (a [`Message::Hello`] by protocol), within
/// `limit`. Returns it with any bytes read beyond it.
pub async fn first_message(
    r: &mut BoxRead,
    decoder: &FrameDecoder,
    limit: Duration,
) -> anyhow::Result<(Message, BytesMut)> {
    let mut buf = BytesMut::with_capacity(4096);
    let deadline = Instant::now() + limit;
    loop {
        if let Some((kind, body)) = decoder.decode(&mut buf)? {
            return Ok((Message::decode(kind, body)?, buf));
        }
        match timeout(deadline.saturating_duration_since(Instant::now()), r.read_buf(&mut buf)).await {
            Err(_) => return Err(anyhow!("no hello within {} ms", limit.as_millis())),
            Ok(Ok(0)) => return Err(anyhow!("closed before saying hello")),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.into()),
        }
    }
}

/// Connects to `addr`, retrying every 50 ms until `deadline` (the peer may not be up yet).
pub async fn connect_until(t: &dyn Transport, addr: &str, deadline: Instant, who: &str) -> anyhow::Result<Conn> {
    loop {
        match t.connect(addr).await {
            Ok(c) => return Ok(c),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => return Err(anyhow!("cannot reach {who} at {addr} over {}: {e}", t.name())),
        }
    }
}
