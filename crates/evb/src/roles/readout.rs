//! The readout role: a [`ReadoutUnit`] state machine with a generator that fills a bounded
//! buffer with the unit's fragments, event after event, and serves collectors' data requests
//! from it. The supervisor clears events when they are processed; a full buffer makes the
//! generator wait (back-pressure), never drop.

use super::{ms, wake_at, Setup};
use crate::net::link::{spawn_writer, Sender};
use crate::payload;
use crate::wire::{
    put_header, put_response_head, FragmentHeader, Message, ResponseHead, Role, FRAGMENT_HEADER_BYTES,
    RESPONSE_HEAD_BYTES,
};
use anyhow::{anyhow, bail, Context};
use bytes::{Bytes, BytesMut};
use daqnet_core::dataflow::{DataRequest, DataResponse, ReadoutUnit};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{EventId, NodeId, ReadoutId, Scenario};
use std::collections::{BTreeMap, HashMap, HashSet};
use tokio::sync::mpsc::unbounded_channel;
use tokio::task::JoinHandle;

/// Options of one readout process.
#[derive(Debug, Clone)]
pub struct ReadoutOptions {
    /// Readout unit number.
    pub index: ReadoutId,
    /// Supervisor address.
    pub supervisor: String,
    /// Listen address (default: `deploy.readouts[index]`, else loopback with a free port).
    pub listen: Option<String>,
    /// Fault injection for tests: flip one payload bit of this event's first fragment.
    pub corrupt_event: Option<EventId>,
}

enum Ev {
    Due,
    Supervisor(Message),
    SupervisorLost(String),
    Joined(NodeId, crate::net::transport::Conn, BytesMut),
    Request(NodeId, Message),
    CollectorLost(NodeId),
}

/// An event's fragments as sent: each one its header followed by its payload.
pub(crate) struct Held {
    pub(crate) fragments: Vec<Bytes>,
    pub(crate) bytes: u64,
    /// Corrupted on purpose: its buffers are not reused.
    corrupt: bool,
}

/// Runs one readout unit until the supervisor stops the run.
pub async fn run(sc: &Scenario, opts: ReadoutOptions) -> anyhow::Result<()> {
    let setup = Setup::new(sc);
    let me = opts.index;
    let listen = opts.listen.clone().or_else(|| sc.deploy.readouts.get(me as usize).cloned());
    let listener =
        setup.transport.listen(listen.as_deref().unwrap_or("127.0.0.1:0")).await.with_context(|| {
            format!("readout {me}: cannot listen on {}", listen.as_deref().unwrap_or("127.0.0.1:0"))
        })?;
    let (tx, mut rx) = unbounded_channel::<Ev>();
    let sup = setup.connect_supervisor(&opts.supervisor, &format!("readout {me}")).await?;
    let (sup_tx, sup_task) = spawn_writer(sup.write, setup.heartbeat);
    sup_tx.send(&Message::Hello { role: Role::Readout, index: me, listen: listener.local_addr() });
    setup.reader(sup.read, BytesMut::new(), tx.clone(), |m| {
        Some(match m {
            Ok(m) => Ev::Supervisor(m),
            Err(e) => Ev::SupervisorLost(e),
        })
    });
    // Collectors connect and say which node they are.
    setup.accept_hellos(listener, "readout", tx.clone(), |m, c, rest| match m {
        Message::Hello { role: Role::Collector, index, .. } => Ok(Ev::Joined(index, c, rest)),
        m => Err(m),
    });

    let sys = &sc.system;
    let seed = sc.run.seed;
    let sizes = FragmentSizes::new(sys.fragment_size.clone(), seed, sys.fragments_per_unit);
    let mut unit = ReadoutUnit::new(me, sizes.clone(), sys.readout_service_ns, sys.readout_service_jitter_ns, seed);
    let mut collectors: HashMap<NodeId, (Sender, JoinHandle<()>)> = HashMap::new();
    let mut buffer: BTreeMap<EventId, Held> = BTreeMap::new();
    let mut held_bytes = 0u64;
    let mut next_event: EventId = 0;
    // Bytes of the next event to generate (drawn once per event, not once per loop turn).
    let mut next_bytes = sizes.unit_bytes(0, me);
    let mut total: Option<u64> = None;
    let mut cleared_early: HashSet<EventId> = HashSet::new();
    let mut waiting: Vec<DataResponse> = Vec::new();
    let capacity = sc.deploy.readout_buffer_bytes;
    let mut armed: Option<u64> = None;
    let mut pool = Recycler::default();
    let fatal = |detail: String| {
        sup_tx.send(&Message::Fault { fatal: true, event: None, detail: detail.clone() });
        anyhow!("readout {me}: {detail}")
    };

    loop {
        let room = total.is_some_and(|t| next_event < t) && held_bytes + next_bytes <= capacity;
        let now = setup.now();
        tokio::select! {
            biased;
            ev = rx.recv() => match ev.expect("the loop holds a sender") {
                Ev::Due => armed = None,
                Ev::Supervisor(Message::Start { events }) => total = Some(events),
                Ev::Supervisor(Message::Clear(event)) => match buffer.remove(&event) {
                    Some(h) => {
                        held_bytes -= h.bytes;
                        pool.give(h, capacity);
                    }
                    None if event >= next_event => {
                        cleared_early.insert(event);
                    }
                    None => {}
                },
                Ev::Supervisor(Message::Stop) => break,
                Ev::Supervisor(m) => return Err(fatal(format!("unexpected message from the supervisor: {m:?}"))),
                Ev::SupervisorLost(reason) => bail!("readout {me}: supervisor connection lost: {reason}"),
                Ev::Joined(node, c, rest) => {
                    let (sender, task) = spawn_writer(c.write, setup.heartbeat);
                    setup.reader(c.read, rest, tx.clone(), move |m| Some(match m {
                        Ok(m) => Ev::Request(node, m),
                        Err(_) => Ev::CollectorLost(node),
                    }));
                    collectors.insert(node, (sender, task));
                }
                Ev::Request(node, Message::Request { event, node: asked_for, fragments }) => {
                    if asked_for != node || fragments != sys.fragments_per_unit {
                        return Err(fatal(format!(
                            "collector {node} sent a request for node {asked_for}, {fragments} fragments (expected node {node}, {} fragments)",
                            sys.fragments_per_unit
                        )));
                    }
                    if event < next_event && !buffer.contains_key(&event) {
                        return Err(fatal(format!("collector {node} asked for event {event}, which was already cleared")));
                    }
                    unit.on_request(now, DataRequest { event, node, fragments });
                }
                Ev::Request(node, m) => return Err(fatal(format!("unexpected message from collector {node}: {m:?}"))),
                // A collector that goes away is the supervisor's business (it hears of it too).
                Ev::CollectorLost(node) => {
                    collectors.remove(&node);
                }
            },
            _ = std::future::ready(()), if room => {
                let event = next_event;
                next_event += 1;
                next_bytes = sizes.unit_bytes(next_event, me);
                if !cleared_early.remove(&event) {
                    let h = generate(seed, &sizes, me, event, opts.corrupt_event == Some(event), &mut pool);
                    held_bytes += h.bytes;
                    buffer.insert(event, h);
                }
                // Let the connection tasks (responses, heartbeats) run between events.
                tokio::task::yield_now().await;
            }
        }
        // Answer what is due and generated; wake up for what is due later.
        while let Some(resp) = unit.poll_response(setup.now()) {
            waiting.push(resp);
        }
        if let Some(due) = unit.poll_timeout() {
            if armed.is_none_or(|a| due < a) {
                armed = Some(due);
                wake_at(setup.epoch, due, &tx, Ev::Due);
            }
        }
        let mut i = 0;
        while i < waiting.len() {
            let r = waiting[i];
            let Some(held) = buffer.get(&r.event) else {
                if r.event < next_event {
                    return Err(fatal(format!(
                        "event {} was cleared before its response to node {} was sent",
                        r.event, r.node
                    )));
                }
                i += 1;
                continue;
            };
            let Some((link, _)) = collectors.get(&r.node) else {
                return Err(fatal(format!("response for node {} but that collector is not connected", r.node)));
            };
            debug_assert_eq!(r.bytes, held.bytes);
            let body = RESPONSE_HEAD_BYTES + held.fragments.iter().map(|f| f.len()).sum::<usize>();
            if body as u64 > sc.deploy.max_frame_bytes {
                return Err(fatal(format!(
                    "event {}: a response of {body} bytes exceeds deploy.max_frame_bytes ({})",
                    r.event, sc.deploy.max_frame_bytes
                )));
            }
            let mut head = BytesMut::with_capacity(8 + RESPONSE_HEAD_BYTES);
            put_header(&mut head, Message::RESPONSE_KIND, body);
            put_response_head(&mut head, &response_head(&r, me));
            let mut pieces = Vec::with_capacity(1 + held.fragments.len());
            pieces.push(head.freeze());
            pieces.extend(held.fragments.iter().cloned());
            link.send_frames(pieces);
            waiting.swap_remove(i);
        }
    }
    for (link, task) in collectors.into_values() {
        link.close();
        let _ = tokio::time::timeout(ms(1000), task).await;
    }
    sup_tx.close();
    let _ = tokio::time::timeout(ms(1000), sup_task).await;
    Ok(())
}

fn response_head(r: &DataResponse, me: ReadoutId) -> ResponseHead {
    ResponseHead { event: r.event, readout: me, node: r.node, fragments: r.fragments, bytes: r.bytes }
}

/// Cleared fragments' buffers, by length, for reuse: their template bytes are already right,
/// only the header and the stamped words change ([`payload::restamp`]).
#[derive(Default)]
pub(crate) struct Recycler {
    free: HashMap<usize, Vec<BytesMut>>,
    bytes: u64,
}

impl Recycler {
    fn take(&mut self, len: usize) -> Option<BytesMut> {
        let b = self.free.get_mut(&len)?.pop()?;
        self.bytes -= len as u64;
        Some(b)
    }

    /// Keeps the buffers of a cleared event that nobody else holds, up to `limit` bytes.
    fn give(&mut self, held: Held, limit: u64) {
        if held.corrupt {
            return;
        }
        for f in held.fragments {
            if self.bytes + f.len() as u64 > limit {
                return;
            }
            if let Ok(m) = f.try_into_mut() {
                self.bytes += m.len() as u64;
                self.free.entry(m.len()).or_default().push(m);
            }
        }
    }
}

/// Generates one event's fragments for unit `me`, reusing cleared buffers where it can.
pub(crate) fn generate(
    seed: u64,
    sizes: &FragmentSizes,
    me: ReadoutId,
    event: EventId,
    corrupt: bool,
    pool: &mut Recycler,
) -> Held {
    let mut bytes = 0;
    let fragments = sizes
        .fragment_bytes(event, me)
        .into_iter()
        .enumerate()
        .map(|(i, size)| {
            bytes += size;
            let header = FragmentHeader { event, source: me, index: i as u32, size: size as u32 };
            let len = FRAGMENT_HEADER_BYTES + size as usize;
            let mut f = match pool.take(len) {
                Some(mut f) => {
                    f[..FRAGMENT_HEADER_BYTES].copy_from_slice(&header.to_bytes());
                    payload::restamp(seed, event, me, i as u32, &mut f[FRAGMENT_HEADER_BYTES..]);
                    f
                }
                None => {
                    let mut f = BytesMut::with_capacity(len);
                    header.put(&mut f);
                    payload::append(seed, event, me, i as u32, size as usize, &mut f);
                    f
                }
            };
            if corrupt && i == 0 && size > 0 {
                f[FRAGMENT_HEADER_BYTES + size as usize / 2] ^= 0x10;
            }
            f.freeze()
        })
        .collect();
    Held { fragments, bytes, corrupt }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::FragmentSize;

    #[test]
    fn recycled_buffers_give_the_same_fragments_as_fresh_ones() {
        let sizes = FragmentSizes::new(FragmentSize::Fixed { bytes: 1100 }, 3, 4);
        let mut pool = Recycler::default();
        let first = generate(3, &sizes, 2, 10, false, &mut pool);
        pool.give(first, 1 << 20);
        assert_eq!(pool.bytes, 4 * (1100 + FRAGMENT_HEADER_BYTES as u64));
        let reused = generate(3, &sizes, 2, 11, false, &mut pool);
        assert_eq!(pool.bytes, 0, "every buffer reused");
        let fresh = generate(3, &sizes, 2, 11, false, &mut Recycler::default());
        assert_eq!(reused.fragments, fresh.fragments);
        // A corrupted event's buffers are never reused, and a buffer still shared is not taken.
        let bad = generate(3, &sizes, 2, 12, true, &mut pool);
        pool.give(bad, 1 << 20);
        let shared = fresh.fragments[0].clone();
        pool.give(fresh, 1 << 20);
        assert_eq!(pool.bytes, 3 * (1100 + FRAGMENT_HEADER_BYTES as u64));
        drop(shared);
    }
}
