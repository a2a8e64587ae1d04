//! The messages roles exchange, and their fixed little-endian body layouts.

use super::frame::put_header;
use crate::role::{RoleId, RoleKind};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use daqnet_core::{EventId, NodeId, PuId, ReadoutId};
use std::fmt;

/// Codes of the role kinds in a hello.
fn role_code(r: RoleId) -> u8 {
    match r.kind() {
        RoleKind::Supervisor => 0,
        RoleKind::Readout => 1,
        RoleKind::Collector => 2,
        RoleKind::Sfc => 3,
        RoleKind::Worker => 4,
    }
}

fn role_from(code: u8, index: u32) -> Option<RoleId> {
    let kinds = [RoleKind::Supervisor, RoleKind::Readout, RoleKind::Collector, RoleKind::Sfc, RoleKind::Worker];
    let kind = kinds.into_iter().nth(code as usize)?;
    Some(RoleId::new(kind, index))
}

/// The head of a readout unit's response; the fragments follow it in the same frame, each as a
/// [`FragmentHeader`] and its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    /// The event.
    pub event: EventId,
    /// The answering readout unit.
    pub readout: ReadoutId,
    /// The node that asked.
    pub node: NodeId,
    /// Fragments that follow.
    pub fragments: u32,
    /// Payload bytes of those fragments (headers not included).
    pub bytes: u64,
}

/// Bytes of an encoded [`ResponseHead`].
pub const RESPONSE_HEAD_BYTES: usize = 32;

/// The header in front of every fragment's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentHeader {
    /// The event the fragment belongs to.
    pub event: EventId,
    /// The readout unit that holds it.
    pub source: ReadoutId,
    /// Its index among that unit's fragments of the event.
    pub index: u32,
    /// Payload bytes.
    pub size: u32,
}

/// Bytes of an encoded [`FragmentHeader`].
pub const FRAGMENT_HEADER_BYTES: usize = 24;

impl FragmentHeader {
    /// Appends the header.
    pub fn put(&self, out: &mut BytesMut) {
        out.put_slice(&self.to_bytes());
    }

    /// The encoded header.
    pub fn to_bytes(&self) -> [u8; FRAGMENT_HEADER_BYTES] {
        let mut b = [0u8; FRAGMENT_HEADER_BYTES];
        b[..8].copy_from_slice(&self.event.0.to_le_bytes());
        b[8..12].copy_from_slice(&self.source.0.to_le_bytes());
        b[12..16].copy_from_slice(&self.index.to_le_bytes());
        b[16..20].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    /// Reads a header off the front of `b`.
    pub fn take(b: &mut Bytes) -> Result<FragmentHeader, WireError> {
        need(b, FRAGMENT_HEADER_BYTES, "fragment header")?;
        let h = FragmentHeader {
            event: EventId(b.get_u64_le()),
            source: ReadoutId(b.get_u32_le()),
            index: b.get_u32_le(),
            size: b.get_u32_le(),
        };
        reserved(b.get_u32_le(), "fragment header")?;
        Ok(h)
    }
}

/// A message between roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// First message on every connection: who is speaking, in which run, and (readout units)
    /// the address collectors should connect to.
    Hello {
        /// The sender's role.
        role: RoleId,
        /// The run it belongs to (`deploy.run_id`, or the launcher's); a hello for another run
        /// is refused.
        run: u64,
        /// Listen address, empty when the role does not listen.
        listen: String,
    },
    /// Supervisor → collector: the readout units' addresses, in unit order.
    Peers(Vec<String>),
    /// Collector → supervisor: connected to every readout unit.
    Connected,
    /// Supervisor → all: the run starts; events `0..events` will be assigned (`u64::MAX`: until
    /// the supervisor stops).
    Start {
        /// Events in the run, warm-up included.
        events: u64,
    },
    /// Collector → supervisor: processing unit `pu` wants an event.
    Ready(PuId),
    /// Supervisor → collector: `pu` gets `event`.
    Assign {
        /// The event.
        event: EventId,
        /// The processing unit.
        pu: PuId,
    },
    /// Collector → readout unit: a data request.
    Request {
        /// The event.
        event: EventId,
        /// The asking node.
        node: NodeId,
        /// Fragments requested (credits held).
        fragments: u32,
    },
    /// Readout unit → collector: the head of a response and the fragments (headers and payloads).
    Response(ResponseHead, Bytes),
    /// Collector → supervisor: an event's data are all in (or failed verification).
    Built {
        /// The event.
        event: EventId,
        /// The processing unit it was collected for.
        pu: PuId,
        /// Data-collection latency measured by the collector, in ns.
        latency_ns: u64,
        /// From the first request to the last fragment, in ns: the latency, and for an event
        /// collected in steps (`[[system.roi_step]]`) the processing between them too.
        span_ns: u64,
        /// Payload bytes collected.
        bytes: u64,
        /// Fragments that failed verification (0: the event is good).
        corrupt_fragments: u32,
    },
    /// Collector → supervisor: `event` is processed; its fragments may be cleared.
    Done(EventId),
    /// Supervisor → readout unit: delete the fragments of `event`.
    Clear(EventId),
    /// Collector → supervisor: counters, sent periodically and when the run stops.
    Status(CollectorStatus),
    /// Keeps a quiet connection alive.
    Heartbeat,
    /// Any role → supervisor: something went wrong.
    Fault {
        /// The role that failed: the sender itself, or a peer it lost (a collector reporting a
        /// readout unit that went silent names the readout unit).
        culprit: RoleId,
        /// Whether the run cannot go on.
        fatal: bool,
        /// The event it spoiled, if it concerns one.
        event: Option<EventId>,
        /// What happened.
        detail: String,
    },
    /// Supervisor → all: the run is over; send final counters and exit.
    Stop,
    /// Readout unit → supervisor: its data connections' kernel counters (`TCP_INFO`), by node,
    /// sent every second and when the run stops.
    Tcp(Vec<NodeTcp>),
}

/// One data connection's kernel counters, as a readout unit reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeTcp {
    /// The node at the other end.
    pub node: NodeId,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts (`None`: the kernel does not count them per socket).
    pub timeouts: Option<u64>,
}

/// A collector's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollectorStatus {
    /// Credits held by outstanding requests.
    pub credits_in_use: u32,
    /// Requests waiting for credits.
    pub queued_requests: u32,
    /// Events being collected.
    pub events_in_progress: u32,
    /// Most fragments outstanding at once, counted at the sockets.
    pub peak_outstanding_fragments: u64,
    /// Fragments received and verified.
    pub fragments_verified: u64,
    /// Fragments that failed verification.
    pub fragments_corrupt: u64,
}

/// A frame body that does not match its kind's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

fn need(b: &Bytes, n: usize, what: &str) -> Result<(), WireError> {
    if b.remaining() < n {
        return Err(WireError(format!("{what}: {} bytes left, {n} needed", b.remaining())));
    }
    Ok(())
}

/// Reserved bytes must be zero: a bit flipped there is corruption like any other.
fn reserved(v: u32, what: &str) -> Result<(), WireError> {
    if v != 0 {
        return Err(WireError(format!("{what}: reserved bytes are {v:#x}, must be 0")));
    }
    Ok(())
}

fn put_str(out: &mut BytesMut, s: &str) {
    out.put_u16_le(s.len() as u16);
    out.put_slice(s.as_bytes());
}

fn take_str(b: &mut Bytes, what: &str) -> Result<String, WireError> {
    need(b, 2, what)?;
    let n = b.get_u16_le() as usize;
    need(b, n, what)?;
    String::from_utf8(b.split_to(n).to_vec()).map_err(|_| WireError(format!("{what}: not UTF-8")))
}

fn bool_from(v: u8) -> Result<bool, WireError> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(WireError(format!("flag byte {v} is neither 0 nor 1"))),
    }
}

impl Message {
    /// The frame kind of [`Message::Response`], for writers that build its frame in pieces.
    pub const RESPONSE_KIND: u8 = 8;

    /// The frame kind.
    pub fn kind(&self) -> u8 {
        match self {
            Message::Hello { .. } => 1,
            Message::Peers(_) => 2,
            Message::Connected => 3,
            Message::Start { .. } => 4,
            Message::Ready(_) => 5,
            Message::Assign { .. } => 6,
            Message::Request { .. } => 7,
            Message::Response(..) => Self::RESPONSE_KIND,
            Message::Built { .. } => 9,
            Message::Done(_) => 10,
            Message::Clear(_) => 11,
            Message::Status(_) => 12,
            Message::Heartbeat => 13,
            Message::Fault { .. } => 14,
            Message::Stop => 15,
            Message::Tcp(_) => 16,
        }
    }

    /// The whole frame (header and body).
    pub fn to_frame(&self) -> Bytes {
        let mut body = BytesMut::with_capacity(64);
        match self {
            Message::Hello { role, run, listen } => {
                body.put_u8(role_code(*role));
                body.put_u32_le(role.index());
                body.put_u64_le(*run);
                put_str(&mut body, listen);
            }
            Message::Peers(addrs) => {
                body.put_u32_le(addrs.len() as u32);
                for a in addrs {
                    put_str(&mut body, a);
                }
            }
            Message::Connected | Message::Heartbeat | Message::Stop => {}
            Message::Start { events } => body.put_u64_le(*events),
            Message::Ready(pu) => body.put_u32_le(pu.0),
            Message::Assign { event, pu } => {
                body.put_u64_le(event.0);
                body.put_u32_le(pu.0);
            }
            Message::Request { event, node, fragments } => {
                body.put_u64_le(event.0);
                body.put_u32_le(node.0);
                body.put_u32_le(*fragments);
            }
            Message::Response(head, fragments) => {
                put_response_head(&mut body, head);
                body.put_slice(fragments);
            }
            Message::Built { event, pu, latency_ns, span_ns, bytes, corrupt_fragments } => {
                body.put_u64_le(event.0);
                body.put_u32_le(pu.0);
                body.put_u64_le(*latency_ns);
                body.put_u64_le(*span_ns);
                body.put_u64_le(*bytes);
                body.put_u32_le(*corrupt_fragments);
            }
            Message::Done(event) | Message::Clear(event) => body.put_u64_le(event.0),
            Message::Status(s) => {
                body.put_u32_le(s.credits_in_use);
                body.put_u32_le(s.queued_requests);
                body.put_u32_le(s.events_in_progress);
                body.put_u64_le(s.peak_outstanding_fragments);
                body.put_u64_le(s.fragments_verified);
                body.put_u64_le(s.fragments_corrupt);
            }
            Message::Tcp(counts) => {
                body.put_u32_le(counts.len() as u32);
                for c in counts {
                    body.put_u32_le(c.node.0);
                    body.put_u64_le(c.retransmits);
                    body.put_u64_le(c.timeouts.unwrap_or(u64::MAX));
                }
            }
            Message::Fault { culprit, fatal, event, detail } => {
                body.put_u8(role_code(*culprit));
                body.put_u32_le(culprit.index());
                body.put_u8(*fatal as u8);
                body.put_u8(event.is_some() as u8);
                body.put_u64_le(event.map_or(0, |e| e.0));
                put_str(&mut body, &detail[..detail.len().min(4000)]);
            }
        }
        let mut out = BytesMut::with_capacity(body.len() + 8);
        put_header(&mut out, self.kind(), body.len());
        out.put_slice(&body);
        out.freeze()
    }

    /// Decodes the body of a frame of `kind`. A response's fragments are not inspected here:
    /// the collector verifies them.
    pub fn decode(kind: u8, mut b: Bytes) -> Result<Message, WireError> {
        let b = &mut b;
        let fixed = |b: &Bytes, n: usize, what: &str| -> Result<(), WireError> {
            if b.remaining() != n {
                return Err(WireError(format!("{what} body of {} bytes, expected {n}", b.remaining())));
            }
            Ok(())
        };
        let m = match kind {
            1 => {
                need(b, 13, "hello")?;
                let code = b.get_u8();
                let role =
                    role_from(code, b.get_u32_le()).ok_or_else(|| WireError(format!("hello: unknown role {code}")))?;
                Message::Hello { role, run: b.get_u64_le(), listen: take_str(b, "hello listen address")? }
            }
            2 => {
                need(b, 4, "peers")?;
                let n = b.get_u32_le() as usize;
                // Each address takes at least 2 bytes: a count beyond that is a lie.
                if n > b.remaining() / 2 {
                    return Err(WireError(format!("peers: {n} addresses announced in {} bytes", b.remaining())));
                }
                Message::Peers((0..n).map(|_| take_str(b, "peer address")).collect::<Result<_, _>>()?)
            }
            3 | 13 | 15 => {
                fixed(b, 0, "empty message")?;
                match kind {
                    3 => Message::Connected,
                    13 => Message::Heartbeat,
                    _ => Message::Stop,
                }
            }
            4 => {
                fixed(b, 8, "start")?;
                Message::Start { events: b.get_u64_le() }
            }
            5 => {
                fixed(b, 4, "ready")?;
                Message::Ready(PuId(b.get_u32_le()))
            }
            6 => {
                fixed(b, 12, "assign")?;
                Message::Assign { event: EventId(b.get_u64_le()), pu: PuId(b.get_u32_le()) }
            }
            7 => {
                fixed(b, 16, "request")?;
                Message::Request {
                    event: EventId(b.get_u64_le()),
                    node: NodeId(b.get_u32_le()),
                    fragments: b.get_u32_le(),
                }
            }
            8 => {
                need(b, RESPONSE_HEAD_BYTES, "response head")?;
                let head = ResponseHead {
                    event: EventId(b.get_u64_le()),
                    readout: ReadoutId(b.get_u32_le()),
                    node: NodeId(b.get_u32_le()),
                    fragments: b.get_u32_le(),
                    bytes: {
                        reserved(b.get_u32_le(), "response head")?;
                        b.get_u64_le()
                    },
                };
                Message::Response(head, std::mem::take(b))
            }
            9 => {
                fixed(b, 40, "built")?;
                Message::Built {
                    event: EventId(b.get_u64_le()),
                    pu: PuId(b.get_u32_le()),
                    latency_ns: b.get_u64_le(),
                    span_ns: b.get_u64_le(),
                    bytes: b.get_u64_le(),
                    corrupt_fragments: b.get_u32_le(),
                }
            }
            10 | 11 => {
                fixed(b, 8, "done/clear")?;
                let e = EventId(b.get_u64_le());
                if kind == 10 {
                    Message::Done(e)
                } else {
                    Message::Clear(e)
                }
            }
            12 => {
                fixed(b, 36, "status")?;
                Message::Status(CollectorStatus {
                    credits_in_use: b.get_u32_le(),
                    queued_requests: b.get_u32_le(),
                    events_in_progress: b.get_u32_le(),
                    peak_outstanding_fragments: b.get_u64_le(),
                    fragments_verified: b.get_u64_le(),
                    fragments_corrupt: b.get_u64_le(),
                })
            }
            14 => {
                need(b, 15, "fault")?;
                let code = b.get_u8();
                let culprit =
                    role_from(code, b.get_u32_le()).ok_or_else(|| WireError(format!("fault: unknown role {code}")))?;
                let fatal = bool_from(b.get_u8())?;
                let has_event = bool_from(b.get_u8())?;
                let event = EventId(b.get_u64_le());
                Message::Fault {
                    culprit,
                    fatal,
                    event: has_event.then_some(event),
                    detail: take_str(b, "fault detail")?,
                }
            }
            16 => {
                need(b, 4, "tcp")?;
                let n = b.get_u32_le() as usize;
                if b.remaining() != n * 20 {
                    return Err(WireError(format!("tcp: {n} counts in {} bytes", b.remaining())));
                }
                let count = |b: &mut Bytes| NodeTcp {
                    node: NodeId(b.get_u32_le()),
                    retransmits: b.get_u64_le(),
                    timeouts: Some(b.get_u64_le()).filter(|&t| t != u64::MAX),
                };
                Message::Tcp((0..n).map(|_| count(b)).collect())
            }
            k => return Err(WireError(format!("unknown message kind {k}"))),
        };
        if b.has_remaining() {
            return Err(WireError(format!("{} trailing bytes after message kind {kind}", b.remaining())));
        }
        Ok(m)
    }
}

/// Appends a response head.
pub fn put_response_head(out: &mut BytesMut, head: &ResponseHead) {
    out.put_u64_le(head.event.0);
    out.put_u32_le(head.readout.0);
    out.put_u32_le(head.node.0);
    out.put_u32_le(head.fragments);
    out.put_u32_le(0);
    out.put_u64_le(head.bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::FrameDecoder;
    use proptest::prelude::*;

    fn samples() -> Vec<Message> {
        vec![
            Message::Hello { role: RoleId::Readout(ReadoutId(7)), run: 0xdead_beef, listen: "127.0.0.1:4000".into() },
            Message::Hello { role: RoleId::Supervisor, run: 1, listen: String::new() },
            Message::Peers(vec!["10.0.0.1:1".into(), "[::1]:2".into()]),
            Message::Connected,
            Message::Start { events: 205 },
            Message::Ready(PuId(3)),
            Message::Assign { event: EventId(1 << 40), pu: PuId(9) },
            Message::Request { event: EventId(5), node: NodeId(2), fragments: 12 },
            Message::Response(
                ResponseHead { event: EventId(5), readout: ReadoutId(1), node: NodeId(2), fragments: 1, bytes: 3 },
                Bytes::from_static(&[1, 2, 3]),
            ),
            Message::Built {
                event: EventId(5),
                pu: PuId(9),
                latency_ns: 123,
                span_ns: 200,
                bytes: 456,
                corrupt_fragments: 1,
            },
            Message::Done(EventId(5)),
            Message::Clear(EventId(5)),
            Message::Status(CollectorStatus {
                credits_in_use: 1,
                queued_requests: 2,
                events_in_progress: 3,
                peak_outstanding_fragments: 4,
                fragments_verified: 5,
                fragments_corrupt: 6,
            }),
            Message::Heartbeat,
            Message::Fault {
                culprit: RoleId::Readout(ReadoutId(3)),
                fatal: true,
                event: None,
                detail: "readout 3 lost".into(),
            },
            Message::Fault {
                culprit: RoleId::Collector(NodeId(1)),
                fatal: false,
                event: Some(EventId(7)),
                detail: "bad payload".into(),
            },
            Message::Stop,
            Message::Tcp(vec![
                NodeTcp { node: NodeId(0), retransmits: 5, timeouts: Some(2) },
                NodeTcp { node: NodeId(3), retransmits: 0, timeouts: None },
            ]),
        ]
    }

    #[test]
    fn every_message_round_trips() {
        let d = FrameDecoder::new(1 << 20);
        for m in samples() {
            let mut buf = BytesMut::from(&m.to_frame()[..]);
            let (kind, body) = d.decode(&mut buf).unwrap().expect("a whole frame");
            assert_eq!(Message::decode(kind, body).unwrap(), m);
        }
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert!(Message::decode(5, Bytes::from_static(&[1, 2])).unwrap_err().0.contains("ready body of 2 bytes"));
        assert!(Message::decode(99, Bytes::new()).unwrap_err().0.contains("unknown message kind 99"));
        assert!(Message::decode(3, Bytes::from_static(&[0])).is_err());
        assert!(Message::decode(2, Bytes::from_static(&[255, 255, 255, 255])).unwrap_err().0.contains("announced"));
        assert!(Message::decode(14, Bytes::from_static(&[1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])).is_err());
        assert!(Message::decode(14, Bytes::from_static(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])).is_err());
    }

    proptest! {
        /// Any body for any kind decodes to a message or an error, never a panic.
        #[test]
        fn arbitrary_bodies_never_panic(kind in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Message::decode(kind, Bytes::from(body));
        }
    }
}
