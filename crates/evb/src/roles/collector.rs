//! The collector role: one per node. It drives the node's [`Collector`] (with its credit pool)
//! and [`ProcessingUnit`]s, keeps one persistent connection to every readout unit, and verifies
//! every fragment it receives: event, source, index, size and every payload byte.

use super::{ms, wake_at, Setup};
use crate::net::link::{connect_until, spawn_writer, Sender};
use crate::payload;
use crate::wire::{CollectorStatus, FragmentHeader, Message, ResponseHead, Role};
use anyhow::{anyhow, bail};
use bytes::{Buf, Bytes, BytesMut};
use daqnet_core::dataflow::{Collector, CollectorOutput, DataResponse, ProcessingUnit, PuOutput};
use daqnet_core::workload::FragmentSizes;
use daqnet_core::{EventId, Nanos, NodeId, PuId, ReadoutId, Scenario};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::unbounded_channel;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Options of one collector process.
#[derive(Debug, Clone)]
pub struct CollectorOptions {
    /// Node number.
    pub index: NodeId,
    /// Supervisor address.
    pub supervisor: String,
}

/// The outcome of verifying one response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Fragments that passed.
    pub good: u32,
    /// Fragments that failed.
    pub bad: u32,
    /// The first problem found.
    pub problem: Option<String>,
}

/// Verifies the fragments of a response from readout unit `from` to node `node` against
/// what the workload says they must be. With `check_payload` false only the headers are
/// checked (to measure what the payload check costs).
pub fn verify(
    seed: u64,
    sizes: &FragmentSizes,
    node: NodeId,
    from: ReadoutId,
    head: &ResponseHead,
    mut body: Bytes,
    check_payload: bool,
) -> Verdict {
    let mut v = Verdict::default();
    let expected = sizes.fragment_bytes(head.event, from);
    let fail = |v: &mut Verdict, n: u32, what: String| {
        v.bad += n;
        v.problem.get_or_insert(what);
    };
    if head.readout != from || head.node != node {
        fail(&mut v, head.fragments, format!("response names readout {} and node {}", head.readout, head.node));
        return v;
    }
    if head.fragments as usize != expected.len() || head.bytes != expected.iter().sum::<u64>() {
        fail(
            &mut v,
            expected.len() as u32,
            format!(
                "response announces {} fragments, {} bytes; expected {}, {}",
                head.fragments,
                head.bytes,
                expected.len(),
                expected.iter().sum::<u64>()
            ),
        );
        return v;
    }
    for (i, &size) in expected.iter().enumerate() {
        let h = match FragmentHeader::take(&mut body) {
            Ok(h) => h,
            Err(e) => {
                fail(&mut v, (expected.len() - i) as u32, format!("fragment {i}: {e}"));
                return v;
            }
        };
        if h.event != head.event || h.source != from || h.index != i as u32 || h.size as u64 != size {
            fail(
                &mut v,
                (expected.len() - i) as u32,
                format!(
                    "fragment {i}: header says event {}, source {}, index {}, size {}; expected event {}, source {from}, index {i}, size {size}",
                    h.event, h.source, h.index, h.size, head.event
                ),
            );
            return v;
        }
        if body.remaining() < size as usize {
            fail(
                &mut v,
                (expected.len() - i) as u32,
                format!("fragment {i}: truncated ({} of {size} bytes)", body.remaining()),
            );
            return v;
        }
        let data = body.split_to(size as usize);
        if !check_payload {
            v.good += 1;
            continue;
        }
        match payload::check(seed, head.event, from, i as u32, &data) {
            Ok(()) => v.good += 1,
            Err(at) => fail(
                &mut v,
                1,
                format!("fragment {i}: payload differs from the expected pattern at byte {at} of {size}"),
            ),
        }
    }
    if body.has_remaining() {
        fail(&mut v, 0, format!("{} bytes after the last fragment", body.remaining()));
    }
    v
}

enum Ev {
    Supervisor(Message),
    SupervisorLost(String),
    Response(ReadoutId, ResponseHead, Verdict),
    ReadoutMessage(ReadoutId, Message),
    ReadoutLost(ReadoutId, String),
    Wake(PuId),
    Tick,
}

/// Runs the collector of one node until the supervisor stops the run.
pub async fn run(sc: &Scenario, opts: CollectorOptions) -> anyhow::Result<()> {
    let setup = Setup::new(sc);
    let node = opts.index;
    let me = format!("collector {node}");
    let sys = &sc.system;
    let (tx, mut rx) = unbounded_channel::<Ev>();
    let sup = setup.connect_supervisor(&opts.supervisor, &me).await?;
    let (sup_tx, sup_task) = spawn_writer(sup.write, setup.heartbeat);
    sup_tx.send(&Message::Hello { role: Role::Collector, index: node, listen: String::new() });
    setup.reader(sup.read, BytesMut::new(), tx.clone(), |m| {
        Some(match m {
            Ok(m) => Ev::Supervisor(m),
            Err(e) => Ev::SupervisorLost(e),
        })
    });
    let fatal = |detail: String| {
        sup_tx.send(&Message::Fault { fatal: true, event: None, detail: detail.clone() });
        anyhow!("{me}: {detail}")
    };

    // Start-up: learn the readout units' addresses, connect to every one of them.
    let deadline = Instant::now() + setup.startup;
    let addrs = match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Ev::Supervisor(Message::Peers(a)))) if a.len() == sys.readout_units as usize => a,
        Ok(Some(Ev::SupervisorLost(e))) => bail!("{me}: supervisor connection lost at start-up: {e}"),
        Ok(Some(Ev::Supervisor(Message::Peers(a)))) => {
            bail!(
                "{me}: the supervisor sent {} readout addresses; the scenario has {} readout units",
                a.len(),
                sys.readout_units
            )
        }
        Ok(_) => bail!("{me}: expected the readout units' addresses from the supervisor first"),
        Err(_) => bail!("{me}: no readout addresses from the supervisor within {} ms", setup.startup.as_millis()),
    };
    let outstanding = Arc::new(AtomicU64::new(0));
    let sizes = FragmentSizes::new(sys.fragment_size.clone(), sc.run.seed, sys.fragments_per_unit);
    let mut joins = JoinSet::new();
    for (r, addr) in addrs.into_iter().enumerate() {
        let t = setup.transport.clone();
        joins.spawn(async move {
            let c = connect_until(&*t, &addr, deadline, &format!("readout {r}")).await;
            (r as ReadoutId, c)
        });
    }
    let mut links: Vec<Option<Sender>> = vec![None; sys.readout_units as usize];
    let mut tasks = Vec::new();
    while let Some(j) = joins.join_next().await {
        let (r, c) = j.map_err(|e| anyhow!("{me}: {e}"))?;
        let c = c.map_err(|e| fatal(e.to_string()))?;
        let (w, task) = spawn_writer(c.write, setup.heartbeat);
        w.send(&Message::Hello { role: Role::Collector, index: node, listen: String::new() });
        let (seed, sizes, outstanding, check) =
            (sc.run.seed, sizes.clone(), outstanding.clone(), sc.deploy.verify_payload);
        setup.reader(c.read, BytesMut::new(), tx.clone(), move |m| {
            Some(match m {
                Ok(Message::Response(head, body)) => {
                    // Counted at the socket, before the credit pool hears of it.
                    let _ = outstanding.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| {
                        Some(o.saturating_sub(head.fragments as u64))
                    });
                    Ev::Response(r, head, verify(seed, &sizes, node, r, &head, body, check))
                }
                Ok(m) => Ev::ReadoutMessage(r, m),
                Err(e) => Ev::ReadoutLost(r, e),
            })
        });
        links[r as usize] = Some(w);
        tasks.push(task);
    }
    sup_tx.send(&Message::Connected);

    let first_pu = node * sys.pus_per_node;
    let mut pus: Vec<ProcessingUnit> = (0..sys.pus_per_node)
        .map(|i| {
            ProcessingUnit::new(
                first_pu + i,
                sys.processing_time_ns,
                sys.collect_fraction,
                sys.readout_units,
                sc.run.seed,
            )
        })
        .collect();
    let mut collector = Collector::new(node, sys.credits_per_node, sys.fragments_per_unit);
    let mut started: HashMap<EventId, Nanos> = HashMap::new();
    let mut corrupt: HashMap<EventId, u32> = HashMap::new();
    let mut status = CollectorStatus::default();
    let tick = {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(ms(100));
            loop {
                every.tick().await;
                if tx.send(Ev::Tick).is_err() {
                    return;
                }
            }
        })
    };
    let fill_status = |status: &mut CollectorStatus, c: &Collector| {
        status.credits_in_use = c.credits().in_use();
        status.queued_requests = c.queued_requests() as u32;
        status.events_in_progress = c.events_in_progress() as u32;
    };

    while let Some(ev) = rx.recv().await {
        let now = setup.now();
        match ev {
            Ev::Supervisor(Message::Start { .. }) => {}
            Ev::Supervisor(Message::Assign { event, pu }) => {
                let Some(unit) = pu.checked_sub(first_pu).and_then(|i| pus.get_mut(i as usize)) else {
                    return Err(fatal(format!("assigned event {event} to unit {pu}, which is not on this node")));
                };
                if let PuOutput::Collect { event, readouts } = unit.on_assign(event) {
                    started.insert(event, now);
                    collector.on_collect(pu, event, &readouts);
                }
            }
            Ev::Supervisor(Message::Stop) => break,
            Ev::Supervisor(m) => return Err(fatal(format!("unexpected message from the supervisor: {m:?}"))),
            Ev::SupervisorLost(e) => bail!("{me}: supervisor connection lost: {e}"),
            Ev::Response(r, head, verdict) => {
                status.fragments_verified += verdict.good as u64;
                if verdict.bad > 0 {
                    status.fragments_corrupt += verdict.bad as u64;
                    *corrupt.entry(head.event).or_default() += verdict.bad;
                    let problem = verdict.problem.unwrap_or_default();
                    sup_tx.send(&Message::Fault {
                        fatal: false,
                        event: Some(head.event),
                        detail: format!("event {} from readout {r} failed verification: {problem}", head.event),
                    });
                }
                let resp =
                    DataResponse { event: head.event, readout: r, node, fragments: head.fragments, bytes: head.bytes };
                collector.on_response(&resp).map_err(|e| fatal(format!("readout {r}: {e}")))?;
            }
            Ev::ReadoutMessage(r, m) => return Err(fatal(format!("unexpected message from readout {r}: {m:?}"))),
            Ev::ReadoutLost(r, e) => {
                // The supervisor ends the run; keep serving it until it says stop.
                sup_tx.send(&Message::Fault { fatal: true, event: None, detail: format!("readout {r}: {e}") });
                links[r as usize] = None;
            }
            Ev::Wake(pu) => {
                if let Some([PuOutput::Done(event), PuOutput::AskForWork]) =
                    pus[(pu - first_pu) as usize].on_timeout(now)
                {
                    sup_tx.send(&Message::Done(event));
                    sup_tx.send(&Message::Ready(pu));
                }
            }
            Ev::Tick => {
                fill_status(&mut status, &collector);
                sup_tx.send(&Message::Status(status));
            }
        }
        while let Some(out) = collector.poll() {
            match out {
                CollectorOutput::Request { readout, request } => {
                    let o =
                        outstanding.fetch_add(request.fragments as u64, Ordering::AcqRel) + request.fragments as u64;
                    status.peak_outstanding_fragments = status.peak_outstanding_fragments.max(o);
                    if let Some(link) = &links[readout as usize] {
                        link.send(&Message::Request { event: request.event, node, fragments: request.fragments });
                    }
                }
                CollectorOutput::Collected { pu, event, bytes, .. } => {
                    let now = setup.now();
                    let latency_ns = now - started.remove(&event).unwrap_or(now);
                    let corrupt_fragments = corrupt.remove(&event).unwrap_or(0);
                    sup_tx.send(&Message::Built { event, pu, latency_ns, bytes, corrupt_fragments });
                    let unit = &mut pus[(pu - first_pu) as usize];
                    if let PuOutput::WakeAt(at) = unit.on_collected(now, event) {
                        wake_at(setup.epoch, at, &tx, Ev::Wake(pu));
                    }
                }
            }
        }
    }
    tick.abort();
    fill_status(&mut status, &collector);
    sup_tx.send(&Message::Status(status));
    for link in links.into_iter().flatten() {
        link.close();
    }
    for t in tasks {
        let _ = tokio::time::timeout(ms(1000), t).await;
    }
    sup_tx.close();
    let _ = tokio::time::timeout(ms(1000), sup_task).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::readout::generate;
    use daqnet_core::scenario::FragmentSize;

    fn response(event: EventId, corrupt: bool) -> (ResponseHead, Bytes, FragmentSizes) {
        let sizes = FragmentSizes::new(
            FragmentSize::LognormalNormal {
                base_bytes: 1100,
                event_mu: 0.0,
                event_sigma: 0.25,
                fragment_sd_bytes: 110.0,
                min_bytes: 1,
            },
            9,
            12,
        );
        let held = generate(9, &sizes, 3, event, corrupt, &mut Default::default());
        let mut body = BytesMut::new();
        for f in &held.fragments {
            body.extend_from_slice(f);
        }
        (ResponseHead { event, readout: 3, node: 1, fragments: 12, bytes: held.bytes }, body.freeze(), sizes)
    }

    #[test]
    fn a_generated_response_verifies() {
        let (head, body, sizes) = response(40, false);
        assert_eq!(verify(9, &sizes, 1, 3, &head, body, true), Verdict { good: 12, bad: 0, problem: None });
    }

    #[test]
    fn corruption_and_mix_ups_are_caught() {
        let (head, body, sizes) = response(40, true);
        let v = verify(9, &sizes, 1, 3, &head, body, true);
        assert_eq!((v.good, v.bad), (11, 1));
        assert!(v.problem.unwrap().starts_with("fragment 0: payload differs"));
        // Another event's data under this event's head: sizes differ (variable law) or payloads do.
        let (_, other, sizes) = response(41, false);
        let (head, ..) = response(40, false);
        assert!(verify(9, &sizes, 1, 3, &head, other, true).bad > 0);
        // From the wrong unit, for the wrong node, truncated.
        let (head, body, sizes) = response(40, false);
        assert!(verify(9, &sizes, 1, 4, &head, body.clone(), true).problem.unwrap().contains("names readout 3"));
        assert!(verify(9, &sizes, 2, 3, &head, body.clone(), true).bad == 12);
        let v = verify(9, &sizes, 1, 3, &head, body.slice(..body.len() - 10), true);
        assert!(v.problem.unwrap().contains("truncated"), "truncation found");
    }
}
