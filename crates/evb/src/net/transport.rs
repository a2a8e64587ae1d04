//! Transports behind one trait, chosen at run time from `deploy.transport`. TCP is the first:
//! `TCP_NODELAY` and the scenario's congestion control on every socket, set before it connects
//! or listens.
//!
//! Why before: a socket that connects (or is accepted) under the system's default congestion
//! control runs that algorithm's set-up, and switching later does not undo all of it. BBR (the
//! default in new network namespaces here) turns on the kernel's internal pacing, and pacing
//! stays on after a switch to cubic: the socket then sends cubic's window spread over an RTT
//! instead of in bursts, which is not how cubic behaves anywhere else.

use super::piece::Piece;
use daqnet_core::scenario::{Deploy, Transport as TransportKind};
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};

/// A future that borrows its transport.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The receiving half of a connection.
pub type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
/// The sending half of a connection.
pub type BoxWrite = Box<dyn SendHalf>;

/// The sending half of a connection: a byte stream that may also send from a file.
pub trait SendHalf: AsyncWrite + Send + Unpin {
    /// Writes `head`, then `tail`; returns how many bytes of the two went out (a short count
    /// as a vectored write may). Sends `tail` from its file when it is in one and the transport
    /// can; this default writes it from memory.
    fn poll_write_then(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        head: &[IoSlice<'_>],
        tail: &Piece,
    ) -> Poll<io::Result<usize>> {
        write_from_memory(self, cx, head, tail)
    }
}

/// Writes `head`, then `tail`'s bytes from memory, in one vectored write.
fn write_from_memory<W: AsyncWrite + ?Sized>(
    w: Pin<&mut W>,
    cx: &mut Context<'_>,
    head: &[IoSlice<'_>],
    tail: &Piece,
) -> Poll<io::Result<usize>> {
    w.poll_write_vectored(cx, &[head, &[IoSlice::new(&tail.bytes)]].concat())
}

/// An established connection, split into halves so reading and writing run as separate tasks.
pub struct Conn {
    /// Receiving half.
    pub read: BoxRead,
    /// Sending half.
    pub write: BoxWrite,
    /// The peer's address, for messages.
    pub peer: String,
    /// The kernel's counters of the connection, where the transport has them (TCP).
    pub stats: Option<TcpStats>,
}

/// What the kernel counted on one TCP connection, as `getsockopt(TCP_INFO)` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpCount {
    /// Segments retransmitted (`tcpi_total_retrans`).
    pub retransmits: u64,
    /// Retransmission timeouts (`tcpi_total_rto`, Linux ≥ 6.7; `None` on older kernels).
    pub timeouts: Option<u64>,
}

/// Reads a TCP connection's counters. Holds its own descriptor of the socket (a `dup`), so it
/// reads the right socket for as long as it lives, however the connection's halves end.
pub struct TcpStats(std::os::fd::OwnedFd);

/// A TCP sender's state now, as `getsockopt(TCP_INFO)` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpWindow {
    /// Congestion window, segments (`tcpi_snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, segments; `None` while still infinite (as `ss` shows it: only
    /// below 0xFFFF).
    pub ssthresh: Option<u32>,
    /// Smoothed RTT, ns (`tcpi_rtt`, µs); `None` before the first RTT sample.
    pub srtt_ns: Option<u64>,
    /// Segments in flight: `tcp_packets_in_flight` = unacked − (sacked + lost) + retrans.
    pub in_flight: u32,
    /// Congestion state (`tcpi_ca_state`), an index into [`daqnet_core::trace::CA_STATES`].
    pub ca_state: u8,
    /// The connection is closed (`tcpi_state` is `TCP_CLOSE`): nothing more to sample.
    pub closed: bool,
}

/// Offsets in Linux's `struct tcp_info` (include/uapi/linux/tcp.h): the u8 `tcpi_state` and
/// `tcpi_ca_state` first; u32 `tcpi_unacked`, `tcpi_sacked`, `tcpi_lost`, `tcpi_retrans`,
/// `tcpi_rtt`, `tcpi_snd_ssthresh`, `tcpi_snd_cwnd` and `tcpi_total_retrans` (all since 2.6);
/// `tcpi_total_rto` (a u16 after `tcpi_rehash`, since 6.7).
const STATE_AT: usize = 0;
const CA_STATE_AT: usize = 1;
const UNACKED_AT: usize = 24;
const SACKED_AT: usize = 28;
const LOST_AT: usize = 32;
const RETRANS_AT: usize = 36;
const RTT_AT: usize = 68;
const SSTHRESH_AT: usize = 76;
const CWND_AT: usize = 80;
const TOTAL_RETRANS_AT: usize = 100;
const TOTAL_RTO_AT: usize = 240;
/// `TCP_CLOSE` in `tcpi_state` (include/net/tcp_states.h).
const TCP_CLOSE: u8 = 7;

impl TcpStats {
    /// Counters of the socket `fd` (its own duplicate of the descriptor).
    pub fn of(fd: std::os::fd::BorrowedFd<'_>) -> Option<TcpStats> {
        fd.try_clone_to_owned().ok().map(TcpStats)
    }

    /// Another handle on the same socket (a second `dup`).
    pub fn try_clone(&self) -> Option<TcpStats> {
        self.0.try_clone().ok().map(TcpStats)
    }

    /// `struct tcp_info` as the kernel fills it, and how many bytes it filled; `None` if it
    /// does not say or says too little for [`TOTAL_RETRANS_AT`].
    fn tcp_info(&self) -> Option<([u8; 512], usize)> {
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 512];
        let mut len = buf.len() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `buf` and sets `len`.
        let rc = unsafe {
            libc::getsockopt(self.0.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len)
        };
        (rc == 0 && len as usize >= TOTAL_RETRANS_AT + 4).then_some((buf, len as usize))
    }

    /// The counters now, or `None` if the kernel does not say.
    pub fn read(&self) -> Option<TcpCount> {
        let (buf, len) = self.tcp_info()?;
        let u32_at = |i: usize| u32_at(&buf, i) as u64;
        let u16_at = |i: usize| u16::from_ne_bytes(buf[i..i + 2].try_into().expect("2 bytes")) as u64;
        Some(TcpCount {
            retransmits: u32_at(TOTAL_RETRANS_AT),
            timeouts: (len >= TOTAL_RTO_AT + 2).then(|| u16_at(TOTAL_RTO_AT)),
        })
    }

    /// The sender's window and state now, or `None` if the kernel does not say.
    pub fn window(&self) -> Option<TcpWindow> {
        let (buf, _) = self.tcp_info()?;
        let at = |i: usize| u32_at(&buf, i);
        let in_flight = (at(UNACKED_AT) + at(RETRANS_AT)).saturating_sub(at(SACKED_AT) + at(LOST_AT));
        Some(TcpWindow {
            cwnd: at(CWND_AT),
            ssthresh: Some(at(SSTHRESH_AT)).filter(|&t| t < 0xFFFF),
            srtt_ns: Some(at(RTT_AT) as u64 * 1000).filter(|&t| t > 0),
            in_flight,
            ca_state: buf[CA_STATE_AT],
            closed: buf[STATE_AT] == TCP_CLOSE,
        })
    }
}

fn u32_at(buf: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes(buf[i..i + 4].try_into().expect("4 bytes"))
}

/// Accepts connections.
pub trait Listener: Send {
    /// The bound address, as peers should dial it.
    fn local_addr(&self) -> String;
    /// The next incoming connection.
    fn accept(&mut self) -> BoxFuture<'_, io::Result<Conn>>;
}

/// A way for roles to reach each other.
pub trait Transport: Send + Sync {
    /// Its name in `deploy.transport`.
    fn name(&self) -> &'static str;
    /// Listens on `addr` (port 0: any free port).
    fn listen<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Listener>>>;
    /// Connects to `addr`.
    fn connect<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Conn>>;
}

/// The transport a scenario asks for.
pub fn from_deploy(d: &Deploy) -> Arc<dyn Transport> {
    match d.transport {
        TransportKind::Tcp => Arc::new(Tcp { congestion: d.tcp_congestion.clone() }),
    }
}

/// TCP: one stream per connection, `TCP_NODELAY`, congestion control per socket.
pub struct Tcp {
    congestion: String,
}

/// Sets `TCP_NODELAY` and the congestion control `congestion` on a TCP socket; the error
/// names the setting and lists what the kernel offers. Call it before the socket connects or
/// listens (see the module doc).
fn tune_tcp(s: SockRef<'_>, congestion: &str) -> io::Result<()> {
    s.set_nodelay(true)?;
    s.set_tcp_congestion(congestion.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot set congestion control {congestion:?} (deploy.tcp_congestion): {e}; available: {}",
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default()
                    .trim()
            ),
        )
    })
}

/// A TCP socket for `addr`'s address family, tuned by [`tune_tcp`] before it connects or listens.
pub fn tuned_socket(addr: &SocketAddr, congestion: &str) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP))?;
    tune_tcp(SockRef::from(&s), congestion)?;
    Ok(s)
}

/// The first address `addr` (`host:port`) resolves to.
async fn resolve(addr: &str) -> io::Result<SocketAddr> {
    tokio::net::lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{addr} resolves to no address")))
}

/// An established stream as a [`Conn`].
fn conn(s: tokio::net::TcpStream) -> Conn {
    use std::os::fd::AsFd;
    let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let stats = TcpStats::of(s.as_fd());
    let (r, w) = s.into_split();
    Conn { read: Box::new(r), write: Box::new(TcpSend(w)), peer, stats }
}

/// TCP's sending half: pieces in a file go out with `sendfile`, which on loopback hands the
/// file's pages to the socket instead of copying them (see [`super::piece`]).
struct TcpSend(tokio::net::tcp::OwnedWriteHalf);

impl AsyncWrite for TcpSend {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl SendHalf for TcpSend {
    fn poll_write_then(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        head: &[IoSlice<'_>],
        tail: &Piece,
    ) -> Poll<io::Result<usize>> {
        let Some(in_file) = &tail.in_file else {
            return write_from_memory(self, cx, head, tail);
        };
        let s: &tokio::net::TcpStream = self.0.as_ref();
        loop {
            std::task::ready!(s.poll_write_ready(cx))?;
            match s.try_io(tokio::io::Interest::WRITABLE, || send_then_sendfile(s, head, in_file, tail.len())) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return Poll::Ready(done),
            }
        }
    }
}

/// `sendmsg(head, MSG_MORE)`, then `sendfile(len bytes of in_file)`; the bytes sent. `MSG_MORE`
/// keeps a short head (a fragment's header) from leaving as a segment of its own under
/// `TCP_NODELAY`: `tcp_push` corks for that call only. Would-block only if nothing went out.
fn send_then_sendfile(
    s: &tokio::net::TcpStream,
    head: &[IoSlice<'_>],
    in_file: &super::piece::InFile,
    len: usize,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let head_len: usize = head.iter().map(|h| h.len()).sum();
    let mut sent = 0;
    if head_len > 0 {
        sent = SockRef::from(s).send_vectored_with_flags(head, libc::MSG_MORE)?;
        if sent < head_len {
            return Ok(sent);
        }
    }
    let mut offset = in_file.offset as libc::off_t;
    // SAFETY: both descriptors are open for the call; `offset` is a valid place to write.
    let n = unsafe { libc::sendfile(s.as_raw_fd(), in_file.file.as_raw_fd(), &mut offset, len) };
    match n {
        n if n >= 0 => Ok(sent + n as usize),
        _ if sent > 0 => Ok(sent),
        _ => Err(io::Error::last_os_error()),
    }
}

struct TcpListener {
    inner: tokio::net::TcpListener,
}

impl Listener for TcpListener {
    fn local_addr(&self) -> String {
        self.inner.local_addr().map(|a| a.to_string()).unwrap_or_default()
    }

    fn accept(&mut self) -> BoxFuture<'_, io::Result<Conn>> {
        // An accepted socket inherits the listener's options and congestion control.
        Box::pin(async move { Ok(conn(self.inner.accept().await?.0)) })
    }
}

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn listen<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Listener>>> {
        Box::pin(async move {
            let at = resolve(addr).await?;
            let s = tuned_socket(&at, &self.congestion)?;
            s.set_reuse_address(true)?;
            s.bind(&at.into())?;
            s.listen(1024)?;
            s.set_nonblocking(true)?;
            let inner = tokio::net::TcpListener::from_std(s.into())?;
            Ok(Box::new(TcpListener { inner }) as Box<dyn Listener>)
        })
    }

    fn connect<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Conn>> {
        Box::pin(async move {
            let at = resolve(addr).await?;
            let s = tuned_socket(&at, &self.congestion)?;
            s.set_nonblocking(true)?;
            let socket = tokio::net::TcpSocket::from_std_stream(s.into());
            Ok(conn(socket.connect(at).await?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh loopback connection has its counters readable, at zero.
    #[test]
    fn tcp_info_of_a_fresh_connection_reads_zero() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let t = Tcp { congestion: "cubic".into() };
            let mut l = t.listen("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr();
            let (c, a) = tokio::join!(t.connect(&addr), l.accept());
            let (c, _a) = (c.unwrap(), a.unwrap());
            let stats = c.stats.as_ref().expect("TCP has counters");
            let n = stats.read().expect("the kernel reports them");
            assert_eq!(n.retransmits, 0);
            assert!(n.timeouts.is_none_or(|t| t == 0));
            // Nothing sent yet: the route's initial window (10 segments by default,
            // RFC 6928), nothing in flight, state open, slow start not yet ended.
            let w = stats.window().expect("the kernel reports the window");
            assert_eq!((w.cwnd, w.in_flight, w.ca_state, w.ssthresh, w.closed), (10, 0, 0, None, false));
        });
    }
}
