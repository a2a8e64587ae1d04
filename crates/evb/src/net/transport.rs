//! Transports behind one trait, chosen at run time from `deploy.transport`. TCP is the first:
//! `TCP_NODELAY` and the scenario's congestion control on every socket, set before it connects
//! or listens.
//!
//! Why before: a socket that connects (or is accepted) under the system's default congestion
//! control runs that algorithm's set-up, and switching later does not undo all of it. BBR (the
//! default in new network namespaces here) turns on the kernel's internal pacing, and pacing
//! stays on after a switch to cubic: the socket then sends cubic's window spread over an RTT
//! instead of in bursts, which is not how cubic behaves anywhere else.

use daqnet_core::scenario::{Deploy, Transport as TransportKind};
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// A future that borrows its transport.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The receiving half of a connection.
pub type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
/// The sending half of a connection.
pub type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// An established connection, split into halves so reading and writing run as separate tasks.
pub struct Conn {
    /// Receiving half.
    pub read: BoxRead,
    /// Sending half.
    pub write: BoxWrite,
    /// The peer's address, for messages.
    pub peer: String,
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
    let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let (r, w) = s.into_split();
    Conn { read: Box::new(r), write: Box::new(w), peer }
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
