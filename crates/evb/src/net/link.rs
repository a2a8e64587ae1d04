//! One connection at run time: a writer task that sends frames (and a heartbeat when the
//! connection is quiet) and a reader task that decodes frames and hands messages to the role's
//! event loop — or reports the connection lost: closed, failed, silent too long, malformed, or
//! a peer that stopped reading (a write that cannot progress, or a full send queue).
//!
//! Nothing here grows without bound: the send queue holds at most [`SEND_QUEUE`] messages (a
//! role's loop never waits on it: a full queue ends the link), a write that makes no progress
//! for the peer timeout ends the link, and a connection attempt gives up at its deadline.

use super::piece::Piece;
use super::transport::{BoxRead, BoxWrite, Conn, Transport};
use crate::wire::{FrameDecoder, Message};
use anyhow::anyhow;
use bytes::BytesMut;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{channel, Receiver, UnboundedSender};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, timeout, Instant};

/// Messages a link's send queue holds at most. The protocol bounds what is outstanding on
/// every link (requests by credits, assignments by processing units, responses by requests);
/// a peer that lets this many pile up is not reading, and the link ends.
pub const SEND_QUEUE: usize = 65_536;

/// What a writer task is asked to send.
#[derive(Debug)]
enum Outgoing {
    /// One or more whole frames, written back to back (vectored, no copy).
    Frames(Vec<Piece>),
    /// Flush and close the sending side.
    Close,
}

/// How a link ended on the writing side (the first reason wins), told to both tasks: the
/// writer stops, the reader reports it.
struct Ending(watch::Sender<Option<String>>);

impl Ending {
    fn new() -> Self {
        Ending(watch::channel(None).0)
    }

    fn end(&self, reason: String) {
        self.0.send_if_modified(|r| r.is_none() && r.replace(reason).is_none());
    }

    /// Resolves once the link has been ended, with the reason.
    async fn wait(mut rx: watch::Receiver<Option<String>>) -> String {
        let ended = rx.wait_for(Option::is_some).await.map(|r| r.clone().unwrap_or_default());
        match ended {
            Ok(reason) => reason,
            // The sender is gone only when the link is: wait forever (the other branch ends).
            Err(_) => std::future::pending().await,
        }
    }
}

/// Handle of a connection's writer task.
#[derive(Clone)]
pub struct LinkWriter {
    tx: tokio::sync::mpsc::Sender<Outgoing>,
    ending: Arc<Ending>,
}

impl LinkWriter {
    /// Queues a message. Returns false when the connection is gone (or was just ended because
    /// its queue is full).
    pub fn send(&self, m: &Message) -> bool {
        self.send_frames(vec![m.to_frame().into()])
    }

    /// Queues pieces that together make frames.
    pub fn send_frames(&self, pieces: Vec<Piece>) -> bool {
        match self.tx.try_send(Outgoing::Frames(pieces)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.ending.end(format!("{SEND_QUEUE} messages queued for it: the peer is not reading"));
                false
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Asks the writer to flush what is queued and close.
    pub fn close(&self) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(Outgoing::Close) {
            self.ending.end("closed with its send queue full".into());
        }
    }
}

/// Pieces a write gathers at most.
const WRITE_PIECES: usize = 64;

/// Writes `pieces` in order: those in memory gathered into one vectored write, each piece that
/// is also in a file sent from the file together with the memory pieces before it.
async fn write_pieces(w: &mut BoxWrite, pieces: &mut VecDeque<Piece>) -> std::io::Result<()> {
    while !pieces.is_empty() {
        let n = {
            let batch = pieces.iter().take(WRITE_PIECES);
            let in_memory = batch.clone().take_while(|p| p.in_file.is_none()).count();
            let slices: Vec<IoSlice> = batch.clone().take(in_memory).map(|p| IoSlice::new(&p.bytes)).collect();
            match pieces.get(in_memory).filter(|_| in_memory < WRITE_PIECES) {
                Some(from_file) => {
                    std::future::poll_fn(|cx| Pin::new(&mut **w).poll_write_then(cx, &slices, from_file)).await?
                }
                None => w.write_vectored(&slices).await?,
            }
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

/// Starts a connection's two tasks. The writer sends a heartbeat whenever nothing was sent for
/// `heartbeat`; it ends on [`LinkWriter::close`], when every [`LinkWriter`] is dropped, or on a failed
/// or stuck write, which the reader then reports. Every decoded message except heartbeats goes
/// through `map` as `Ok`; the end of the connection goes through it once as `Err(reason)`.
/// `pending` holds bytes already read from the connection. Returns the sender and the writer's
/// task (awaiting it waits for the queued frames to go out).
pub fn spawn_link<E, F>(
    conn: Conn,
    pending: BytesMut,
    decoder: FrameDecoder,
    timing: (Duration, Duration),
    events: UnboundedSender<E>,
    map: F,
) -> (LinkWriter, JoinHandle<()>)
where
    E: Send + 'static,
    F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
{
    let (heartbeat, peer_timeout) = timing;
    let (tx, rx) = channel::<Outgoing>(SEND_QUEUE);
    let ending = Arc::new(Ending::new());
    let writer = tokio::spawn(write_loop(conn.write, rx, heartbeat, peer_timeout, ending.clone()));
    tokio::spawn(read_loop(conn.read, decoder, peer_timeout, pending, events, map, ending.0.subscribe()));
    (LinkWriter { tx, ending }, writer)
}

async fn write_loop(
    mut w: BoxWrite,
    mut rx: Receiver<Outgoing>,
    heartbeat: Duration,
    stall: Duration,
    ending: Arc<Ending>,
) {
    let beat = Message::Heartbeat.to_frame();
    let mut pieces = VecDeque::new();
    let mut last = Instant::now();
    let ended = Ending::wait(ending.0.subscribe());
    tokio::pin!(ended);
    loop {
        let msg = tokio::select! {
            m = rx.recv() => m,
            _ = sleep_until(last + heartbeat) => Some(Outgoing::Frames(vec![beat.clone().into()])),
            _ = &mut ended => return,
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
        match timeout(stall, write_pieces(&mut w, &mut pieces)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return ending.end(format!("connection failed while sending: {e}")),
            Err(_) => {
                return ending
                    .end(format!("no byte could be sent for {} ms: the peer is not reading", stall.as_millis()))
            }
        }
        last = Instant::now();
        if close {
            let _ = timeout(stall, w.flush()).await;
            let _ = timeout(stall, w.shutdown()).await;
            return;
        }
    }
}

async fn read_loop<E, F>(
    mut r: BoxRead,
    decoder: FrameDecoder,
    peer_timeout: Duration,
    mut buf: BytesMut,
    events: UnboundedSender<E>,
    mut map: F,
    ending: watch::Receiver<Option<String>>,
) where
    E: Send + 'static,
    F: FnMut(Result<Message, String>) -> Option<E> + Send + 'static,
{
    let ended = Ending::wait(ending);
    tokio::pin!(ended);
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
                        let _ = map(Err(format!("malformed message, connection closed: {e}"))).map(|e| events.send(e));
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
        tokio::select! {
            read = timeout(peer_timeout, r.read_buf(&mut buf)) => match read {
                Err(_) => break format!("silent for {} ms (no data, no heartbeat): hung?", peer_timeout.as_millis()),
                Ok(Ok(0)) if buf.is_empty() => break "connection closed".to_string(),
                Ok(Ok(0)) => break format!("connection closed in the middle of a frame ({} bytes pending)", buf.len()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break format!("connection failed: {e}"),
            },
            reason = &mut ended => break reason,
        }
    };
    if let Some(e) = map(Err(reason)) {
        let _ = events.send(e);
    }
}

/// Reads the first message of a fresh connection (a [`Message::Hello`] by protocol), within
/// `limit`. Returns it with any bytes read beyond it.
pub async fn first_message(
    r: &mut BoxRead,
    decoder: &FrameDecoder,
    limit: Duration,
) -> anyhow::Result<(Message, BytesMut)> {
    let mut buf = BytesMut::with_capacity(256);
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

/// Connects to `addr`, retrying every 50 ms while it refuses, until `deadline`; an attempt
/// that hangs (a peer that does not answer at all) also ends at the deadline.
pub async fn connect_until(t: &dyn Transport, addr: &str, deadline: Instant, who: &str) -> anyhow::Result<Conn> {
    let timed_out =
        || anyhow!("cannot reach {who} at {addr} over {}: no answer before the start-up deadline", t.name());
    loop {
        match tokio::time::timeout_at(deadline, t.connect(addr)).await {
            Err(_) => return Err(timed_out()),
            Ok(Ok(c)) => return Ok(c),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Ok(Err(e)) => return Err(anyhow!("cannot reach {who} at {addr} over {}: {e}", t.name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::piece::{memory_file, InFile, FROM_FILE_MIN_BYTES};
    use crate::net::transport::from_deploy;
    use bytes::Bytes;

    /// A piece whose memory holds `in_memory` and whose file holds `in_file`, each repeated
    /// `len` times: what arrives tells which of the two was sent.
    fn two_faced(len: usize, in_memory: u8, in_file: u8) -> Piece {
        // The piece starts at an offset in its file, as the template's do.
        let f = memory_file(&[&[0u8; 3][..], &vec![in_file; len]].concat()).expect("Linux has memory files");
        Piece { bytes: Bytes::from(vec![in_memory; len]), in_file: Some(InFile { file: Arc::new(f), offset: 3 }) }
    }

    /// Over TCP, pieces in a file go from the file, in order with the memory pieces around
    /// them, also when the socket takes them a part at a time.
    #[test]
    fn tcp_sends_pieces_in_a_file_from_the_file_in_order() {
        let long = FROM_FILE_MIN_BYTES * 16; // several times the socket's first send buffer
        let pieces = [
            Piece::from(Bytes::from_static(b"head")),
            two_faced(long, b'm', b'F'),
            two_faced(100, b's', b'X'),
            Piece::from(Bytes::from_static(b"mid")),
            two_faced(long + 1, b'm', b'G'),
        ];
        let expected: Vec<u8> = [&b"head"[..], &vec![b'F'; long], &[b'X'; 100], b"mid", &vec![b'G'; long + 1]].concat();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got = rt.block_on(async {
            let t = from_deploy(&daqnet_core::scenario::Deploy::default());
            let mut l = t.listen("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr();
            let (c, a) = tokio::join!(t.connect(&addr), l.accept());
            let (mut c, mut a) = (c.unwrap(), a.unwrap());
            let send = async move {
                write_pieces(&mut c.write, &mut pieces.into_iter().collect()).await.unwrap();
                c.write.shutdown().await.unwrap();
            };
            let mut got = Vec::new();
            let recv = timeout(Duration::from_secs(10), a.read.read_to_end(&mut got));
            let (_, r) = tokio::join!(send, recv);
            r.expect("within 10 s").unwrap();
            got
        });
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "the bytes arrive in order, file pieces from the file");
    }
}
