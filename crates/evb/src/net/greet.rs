//! Start-up handshakes for the processes with blocking sockets (the sub-farm, DAQPIPE): every
//! accepted connection reads its hello on its own thread under its own deadline, so a client
//! that connects and says nothing, or half a hello, never holds up the accept loop; strays are
//! refused and logged at most once a second ([`Refusals`]) while the run's own peers join.

use std::collections::HashMap;
use std::fmt::Display;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections at most waiting for their hello at once; more are refused at once (as the
/// event builder's roles refuse beyond `roles::MAX_UNIDENTIFIED_CONNECTIONS`).
pub const MAX_UNGREETED: usize = 64;

/// A log of refused connections that says at most one line a second of each kind, counting
/// the rest: a flood of strays costs a line a second, and every kind of refusal is still said.
pub struct Refusals {
    who: String,
    /// Per kind: when a line was last said, and how many were held back since.
    said: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl Refusals {
    /// A log whose lines start with `who` (`sfc`, `node 3`).
    pub fn new(who: impl Into<String>) -> Refusals {
        Refusals { who: who.into(), said: Mutex::new(HashMap::new()) }
    }

    /// Logs one refusal of `kind`, or counts it if one of that kind was said less than a second
    /// ago.
    pub fn say(&self, kind: &'static str, what: impl Display) {
        let mut said = self.said.lock().expect("a refusal logger panicked");
        let now = Instant::now();
        let held = match said.get_mut(kind) {
            Some((t, held)) if now.duration_since(*t) < Duration::from_secs(1) => {
                *held += 1;
                return;
            }
            Some((_, held)) => std::mem::take(held),
            None => 0,
        };
        said.insert(kind, (now, 0));
        let more = if held > 0 { format!(" ({held} more like it in the second before)") } else { String::new() };
        eprintln!("{}: refused {what}{more}", self.who);
    }
}

/// What the caller makes of a connection's hello.
pub enum Greeted {
    /// Kept; more peers are wanted.
    Kept,
    /// Kept, and it was the last peer wanted.
    Complete,
    /// Refused, for this reason (logged; the connection is closed).
    Refused(String),
}

/// How a start-up accepts its peers.
pub struct Greeter<'a> {
    /// Every peer wanted has joined by then, or the start-up fails.
    pub until: Instant,
    /// A connection's hello arrives within this, or the connection is refused.
    pub per_hello: Duration,
    /// Where refusals are said.
    pub log: &'a Refusals,
    /// Called on every turn of the accept loop: the process is alive.
    pub alive: &'a dyn Fn(),
}

/// A hello read (or not) on its connection's own thread.
type Hello<H> = (TcpStream, String, io::Result<H>);

/// Accepts connections on `listener` until `take` has every peer it wants or `g.until` passes
/// (`Err` then). Each connection's hello is read by `read_hello` within `g.per_hello`, on a
/// thread of its own, at most [`MAX_UNGREETED`] at once; a failed or refused hello is logged
/// through `g.log` and the connection closed.
pub fn accept_greeted<H: Send + 'static>(
    listener: &TcpListener,
    g: &Greeter<'_>,
    read_hello: fn(&mut TcpStream) -> io::Result<H>,
    mut take: impl FnMut(TcpStream, H) -> Greeted,
) -> io::Result<()> {
    let (per_hello, log) = (g.per_hello, g.log);
    listener.set_nonblocking(true)?;
    let (tx, rx) = channel::<Hello<H>>();
    let waiting = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = accept_one(listener, &waiting, per_hello, read_hello, &tx, log)?;
        let mut heard = false;
        while let Ok((s, peer, hello)) = rx.try_recv() {
            heard = true;
            match hello.map(|h| take(s, h)) {
                Ok(Greeted::Complete) => return Ok(()),
                Ok(Greeted::Kept) => {}
                Ok(Greeted::Refused(why)) => log.say("hello", format_args!("the connection from {peer}: {why}")),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    log.say("silent", format_args!("the connection from {peer}: no hello within {per_hello:?}"))
                }
                Err(e) => log.say("broken", format_args!("the connection from {peer}: {e}")),
            }
        }
        (g.alive)();
        if Instant::now() >= g.until {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "start-up deadline passed"));
        }
        if !accepted && !heard {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Accepts one connection if one is waiting and starts reading its hello; whether it did.
fn accept_one<H: Send + 'static>(
    listener: &TcpListener,
    waiting: &Arc<AtomicUsize>,
    per_hello: Duration,
    read_hello: fn(&mut TcpStream) -> io::Result<H>,
    tx: &Sender<Hello<H>>,
    log: &Refusals,
) -> io::Result<bool> {
    let (mut s, peer) = match listener.accept() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => return Ok(false),
        // A connection reset before it was accepted, or out of descriptors for a moment.
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted || e.raw_os_error() == Some(libc::EMFILE) => {
            log.say("accept", format_args!("a connection: accept failed: {e}"));
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    if waiting.load(Ordering::Relaxed) >= MAX_UNGREETED {
        log.say(
            "crowd",
            format_args!("the connection from {peer}: {MAX_UNGREETED} connections already wait for a hello"),
        );
        return Ok(true);
    }
    waiting.fetch_add(1, Ordering::Relaxed);
    let (tx, waiting) = (tx.clone(), waiting.clone());
    std::thread::spawn(move || {
        let hello = s
            .set_nonblocking(false)
            .and_then(|()| s.set_read_timeout(Some(per_hello)))
            .and_then(|()| read_hello(&mut s))
            .and_then(|h| s.set_read_timeout(None).map(|()| h));
        waiting.fetch_sub(1, Ordering::Relaxed);
        let _ = tx.send((s, peer.to_string(), hello));
    });
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn hello(s: &mut TcpStream) -> io::Result<u32> {
        let mut b = [0u8; 4];
        s.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Idle connections, half a hello and a refused hello come first; the two peers wanted
    /// still join at once, long before the strays' hello deadline.
    #[test]
    fn strays_never_hold_up_the_peers_wanted() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        let strays: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(at).unwrap()).collect();
        let mut half = TcpStream::connect(at).unwrap();
        half.write_all(&[1, 0]).unwrap();
        let mut wrong = TcpStream::connect(at).unwrap();
        wrong.write_all(&99u32.to_le_bytes()).unwrap();
        let peers: Vec<TcpStream> = (7..9u32)
            .map(|k| {
                let mut s = TcpStream::connect(at).unwrap();
                s.write_all(&k.to_le_bytes()).unwrap();
                s
            })
            .collect();
        let start = Instant::now();
        let mut got = Vec::new();
        let log = Refusals::new("test");
        let g = Greeter {
            until: start + Duration::from_secs(5),
            per_hello: Duration::from_secs(3),
            log: &log,
            alive: &|| {},
        };
        let r = accept_greeted(&l, &g, hello, |_, k| {
            if k == 99 {
                return Greeted::Refused("not one of ours".into());
            }
            got.push(k);
            if got.len() == 2 {
                Greeted::Complete
            } else {
                Greeted::Kept
            }
        });
        r.unwrap();
        got.sort();
        assert_eq!(got, [7, 8]);
        assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
        drop((strays, peers));
    }

    #[test]
    fn a_peer_missing_at_the_deadline_is_an_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _idle = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let start = Instant::now();
        let log = Refusals::new("test");
        let g = Greeter {
            until: start + Duration::from_millis(300),
            per_hello: Duration::from_millis(100),
            log: &log,
            alive: &|| {},
        };
        let r = accept_greeted(&l, &g, hello, |_, _| Greeted::Complete);
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() < Duration::from_millis(600));
    }
}
