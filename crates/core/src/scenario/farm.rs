//! `[farm]`: an LHCb sub-farm ([LHCB-SUBFARM], Neufeld and Thannhaeuser, LHCb 2002-049): a sub-farm
//! controller (SFC) hands each event to one of its worker nodes.

use super::Rate;
use crate::units::{de_bps, de_bytes, de_bytes_u32, de_ns};
use crate::Nanos;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[farm]`: when present, the scenario is a sub-farm — one SFC and its workers on the star
/// switch of `[network.switch]` — instead of the event builder of `[system]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Farm {
    /// Worker nodes behind the SFC ([LHCB-SUBFARM] §2.1: 20).
    pub workers: u32,
    /// Which of the note's implementations ([LHCB-SUBFARM] §2.3.2.1): `v1` (an event generator
    /// feeds the SFC's event queue; a token thread and a forwarding thread share the token
    /// queue), `v2` (one sender per worker, which sends a new event when that worker's token
    /// arrives; no event queue) or `v3` (one sender per worker streaming events as fast as TCP
    /// takes them; no tokens).
    pub implementation: Implementation,
    /// How the SFC chooses a worker: `tokens` (the first of a FIFO queue of tokens workers send
    /// when ready, [LHCB-SUBFARM] §2.3.1.2; `v1`, `v2`), `round_robin` (the worker that has waited
    /// longest, ready or not, §2.3.1.1; `v1`) or `push` (every worker whose connection takes
    /// more; `v3`).
    pub dispatch: Dispatch,
    /// Tokens each worker sends when it connects (`tokens`): 1 in the note's tests; 2 keeps an
    /// event buffered at each worker (§2.3.1.2).
    pub initial_tokens: u32,
    /// Size of every event, in bytes ([LHCB-SUBFARM] §2.3.2.1: 32 KB).
    #[serde(deserialize_with = "de_bytes")]
    pub event_bytes: u64,
    /// Size of a token, and of the verdict a worker returns under `round_robin`, in bytes
    /// (§2.3.2.1: 28).
    #[serde(deserialize_with = "de_bytes_u32")]
    pub token_bytes: u32,
    /// Fraction of events a worker accepts (§2.3.2.1: on average every 200th token carries
    /// output, 0.005). Drawn per event from the seed, the same on every substrate.
    pub accept_fraction: f64,
    /// Output of an accepted event, carried back with its token, in bytes (§2.3.2.1: 64 KB).
    #[serde(deserialize_with = "de_bytes")]
    pub accept_output_bytes: u64,
    /// Processing time of a rejected event, in ns: the trigger chain stops at the first failed
    /// test (§2.3.1.1). The note's tests did no processing (0).
    #[serde(deserialize_with = "de_ns")]
    pub reject_ns: u64,
    /// Processing time of an accepted event (the full chain), in ns.
    #[serde(deserialize_with = "de_ns")]
    pub accept_ns: u64,
    /// `v1`: events the generator offers per second, or `"unbounded"`: the generator keeps
    /// the SFC's event queue full (it is back-pressured, as by its TCP connection in the note).
    pub source_rate_hz: Rate,
    /// `v1`: feed the SFC's event queue with what an event builder built at one of its nodes,
    /// when it built it and as big as it was, instead of the generator (`source_rate_hz` must
    /// then stay `"unbounded"`). The builder is not slowed by a full queue (LHCb's readout
    /// pushes): an event that finds the queue full is lost and counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_builder: Option<FromBuilder>,
    /// `v1`: events the SFC's event queue holds (default 40: two per worker of the note's 20);
    /// a generated event that finds it full is lost and counted (`events_not_built.lost`). A
    /// back-pressured generator keeps it full, so every event waits behind this many: its
    /// dispatch latency includes that wait.
    pub event_queue_events: u32,
    /// `round_robin`, `push`: event bytes the SFC may have on a worker's connection (sent and
    /// not yet taken by the worker: the socket buffers of both ends) before a send to it blocks.
    #[serde(deserialize_with = "de_bytes")]
    pub pipe_bytes: u64,
    /// Line rate of the SFC's link, in bit/s ([LHCB-SUBFARM]: Gigabit Ethernet).
    #[serde(deserialize_with = "de_bps")]
    pub sfc_link_bps: u64,
    /// Line rate of each worker's link, in bit/s ([LHCB-SUBFARM]: Fast Ethernet, 100 Mb/s).
    #[serde(deserialize_with = "de_bps")]
    pub worker_link_bps: u64,
}

/// `[farm.from_builder]`: the event builder's output that feeds the SFC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromBuilder {
    /// The builder run's `events.csv` (`daqnet sim|run|testbed run … --per-event`; relative to
    /// the working directory): each row an event, built at `node` at `done_ns`, `bytes` long.
    pub events: PathBuf,
    /// The builder's node whose output this SFC receives (default 0).
    #[serde(default)]
    pub node: u32,
}

/// One event an event builder delivered to the SFC: when it was built, and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Time the builder finished it, ns since its run started.
    pub at: Nanos,
    /// Its payload bytes.
    pub bytes: u64,
}

impl FromBuilder {
    /// The events `node` built, read from `events`, in the order they were built; an error names
    /// the file, the row and what is wrong.
    pub fn read(&self) -> Result<Vec<Arrival>, String> {
        let b = self;
        let path = b.events.as_path();
        let shown = path.display();
        if path.extension().is_some_and(|e| e == "parquet") {
            return Err(format!("{shown}: give the events.csv written beside it (the same rows)"));
        }
        let mut reader = csv::Reader::from_path(path).map_err(|e| {
            format!(
                "cannot read {shown}: {} (an event builder writes it: daqnet sim FILE --per-event)",
                reason(&e, None)
            )
        })?;
        let headers = reader.headers().map_err(|e| format!("{shown}:1: {}", reason(&e, None)))?.clone();
        let mut arrivals = Vec::new();
        let mut nodes = std::collections::BTreeSet::new();
        for (i, row) in reader.deserialize::<Row>().enumerate() {
            // Line 1 is the header.
            let row = row.map_err(|e| format!("{shown}:{}: {}", i + 2, reason(&e, Some(&headers))))?;
            nodes.insert(row.node);
            if row.node == b.node {
                arrivals.push(Arrival { at: row.done_ns, bytes: row.bytes });
            }
        }
        if arrivals.is_empty() {
            return Err(match (nodes.first(), nodes.last()) {
                (Some(lo), Some(hi)) => {
                    format!("{shown} has no event built at node {} (its nodes: {lo} ..= {hi})", b.node)
                }
                _ => format!("{shown} has no events: write one with `daqnet sim BUILDER.toml --per-event --out DIR`"),
            });
        }
        arrivals.sort_by_key(|a| a.at);
        Ok(arrivals)
    }
}

/// One row of an `events.csv`, the columns this needs (the others are ignored).
#[derive(serde::Deserialize)]
struct Row {
    node: u32,
    done_ns: u64,
    bytes: u64,
}

/// A csv error in words, its column named from `headers` (the caller names the row).
fn reason(e: &csv::Error, headers: Option<&csv::StringRecord>) -> String {
    match e.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        csv::ErrorKind::Deserialize { err, .. } => {
            let column = err.field().and_then(|i| headers?.get(i as usize));
            match (column, err.kind()) {
                (Some(c), kind) => format!("column `{c}`: {kind}"),
                (None, csv::DeserializeErrorKind::Message(m)) => m.clone(),
                (None, kind) => kind.to_string(),
            }
        }
        _ => e.to_string(),
    }
}

/// The note's three implementations of the SFC ([LHCB-SUBFARM] §2.3.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Implementation {
    /// Event generator → event queue; token thread and forwarding thread share the token queue.
    V1,
    /// A sender per worker, sending a new event whenever that worker's token arrives.
    V2,
    /// A sender per worker, streaming events as fast as TCP takes them; no tokens.
    V3,
}

/// How the SFC chooses the worker for an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dispatch {
    /// The sender of the first token in a FIFO queue of tokens ([LHCB-SUBFARM] §2.3.1.2).
    Tokens,
    /// The worker that has waited longest since its last event, ready or not (§2.3.1.1).
    RoundRobin,
    /// Any worker whose connection takes another event (version 3).
    Push,
}

impl Implementation {
    /// The dispatch policies this implementation can run.
    pub fn dispatches(self) -> &'static [Dispatch] {
        match self {
            Implementation::V1 => &[Dispatch::Tokens, Dispatch::RoundRobin],
            Implementation::V2 => &[Dispatch::Tokens],
            Implementation::V3 => &[Dispatch::Push],
        }
    }

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::V1 => "v1",
            Implementation::V2 => "v2",
            Implementation::V3 => "v3",
        }
    }
}

impl Dispatch {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Dispatch::Tokens => "tokens",
            Dispatch::RoundRobin => "round_robin",
            Dispatch::Push => "push",
        }
    }
}

impl Default for Farm {
    /// The note's test set-up ([LHCB-SUBFARM] §2.1, §2.3.2.1) with version 2.
    fn default() -> Self {
        Farm {
            workers: 20,
            implementation: Implementation::V2,
            dispatch: Dispatch::Tokens,
            initial_tokens: 1,
            event_bytes: 32_000,
            token_bytes: 28,
            accept_fraction: 0.005,
            accept_output_bytes: 64_000,
            reject_ns: 0,
            accept_ns: 0,
            source_rate_hz: Rate::Unbounded,
            from_builder: None,
            event_queue_events: 40,
            pipe_bytes: 128 << 10,
            sfc_link_bps: 1_000_000_000,
            worker_link_bps: 100_000_000,
        }
    }
}
