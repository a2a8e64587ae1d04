//! Transports behind one trait, chosen at run time from `deploy.transport`. TCP is the first:
//! `TCP_NODELAY` and the scenario's congestion control on every socket.

use daqnet_core::scenario::{Deploy, Transport as TransportKind};
use std::future::Future;
use std::io;
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
/// names the setting and lists what the kernel offers.
pub fn tune_tcp(s: socket2::SockRef<'_>, congestion: &str) -> io::Result<()> {
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

impl Tcp {
    fn conn(&self, s: tokio::net::TcpStream) -> io::Result<Conn> {
        tune_tcp(socket2::SockRef::from(&s), &self.congestion)?;
        let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        let (r, w) = s.into_split();
        Ok(Conn { read: Box::new(r), write: Box::new(w), peer })
    }
}

struct TcpListener {
    inner: tokio::net::TcpListener,
    tcp: Tcp,
}

impl Listener for TcpListener {
    fn local_addr(&self) -> String {
        self.inner.local_addr().map(|a| a.to_string()).unwrap_or_default()
    }

    fn accept(&mut self) -> BoxFuture<'_, io::Result<Conn>> {
        Box::pin(async move {
            let (s, _) = self.inner.accept().await?;
            self.tcp.conn(s)
        })
    }
}

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn listen<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Listener>>> {
        Box::pin(async move {
            let inner = tokio::net::TcpListener::bind(addr).await?;
            Ok(Box::new(TcpListener { inner, tcp: Tcp { congestion: self.congestion.clone() } }) as Box<dyn Listener>)
        })
    }

    fn connect<'a>(&'a self, addr: &'a str) -> BoxFuture<'a, io::Result<Conn>> {
        Box::pin(async move { self.conn(tokio::net::TcpStream::connect(addr).await?) })
    }
}
