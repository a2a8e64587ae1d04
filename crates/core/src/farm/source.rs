//! Where the SFC's events come from, and when: made on demand, made at a fixed rate, or the
//! recorded output of an event builder (`[farm.from_builder]`). One rule for every substrate,
//! so the simulator, a real run and the testbed offer the same events at the same times.

use crate::scenario::{Farm, FromBuilder, Implementation, Rate};
use crate::{EventId, Nanos, NS_PER_S};

/// One event an event builder delivered to the SFC: when it was built, and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Time the builder finished it, ns since its run started.
    pub at: Nanos,
    /// Its payload bytes.
    pub bytes: u64,
}

/// The SFC's source of events.
#[derive(Debug, Clone, PartialEq)]
pub enum EventSource {
    /// An event whenever the SFC wants one: `v1`'s back-pressured generator, and `v2` and
    /// `v3`, which make an event when a worker can take it. All `bytes` long.
    OnDemand {
        /// Size of every event.
        bytes: u64,
    },
    /// `v1`'s generator at a fixed rate: event `k` at `k · period`.
    Periodic {
        /// Time between events, ns.
        period_ns: f64,
        /// Size of every event.
        bytes: u64,
    },
    /// An event builder's output (`v1` with `[farm.from_builder]`), in the order it was built.
    Recorded(Vec<Arrival>),
}

impl EventSource {
    /// The source `farm` asks for; reads the builder's events file if it names one.
    pub fn of(farm: &Farm) -> Result<Self, String> {
        let bytes = farm.event_bytes;
        if farm.implementation != Implementation::V1 {
            return Ok(EventSource::OnDemand { bytes });
        }
        if let Some(b) = &farm.from_builder {
            return read_builder_output(b).map(EventSource::Recorded);
        }
        Ok(match farm.source_rate_hz {
            Rate::Unbounded => EventSource::OnDemand { bytes },
            Rate::Hz(hz) => EventSource::Periodic { period_ns: NS_PER_S as f64 / hz, bytes },
        })
    }

    /// When `event` reaches the SFC; `None`: whenever the SFC wants it, or past the end of a
    /// recording.
    pub fn due(&self, event: EventId) -> Option<Nanos> {
        match self {
            EventSource::OnDemand { .. } => None,
            EventSource::Periodic { period_ns, .. } => Some((event.0 as f64 * period_ns).round() as Nanos),
            EventSource::Recorded(a) => a.get(event.0 as usize).map(|a| a.at),
        }
    }

    /// Whether events come when the SFC wants them rather than at their own times.
    pub fn on_demand(&self) -> bool {
        matches!(self, EventSource::OnDemand { .. })
    }

    /// The size of `event`.
    pub fn bytes(&self, event: EventId) -> u64 {
        match self {
            EventSource::OnDemand { bytes } | EventSource::Periodic { bytes, .. } => *bytes,
            EventSource::Recorded(a) => a.get(event.0 as usize).map_or(0, |a| a.bytes),
        }
    }

    /// The largest event (a real SFC sizes its send buffer by it).
    pub fn max_bytes(&self) -> u64 {
        match self {
            EventSource::OnDemand { bytes } | EventSource::Periodic { bytes, .. } => *bytes,
            EventSource::Recorded(a) => a.iter().map(|a| a.bytes).max().unwrap_or(0),
        }
    }
}

/// One row of an `events.csv`, the columns this needs (the others are ignored).
#[derive(serde::Deserialize)]
struct Row {
    node: u32,
    done_ns: u64,
    bytes: u64,
}

/// The events `b.node` built, in the order they were built; an error names the file, the row
/// and what is wrong.
pub fn read_builder_output(b: &FromBuilder) -> Result<Vec<Arrival>, String> {
    let path = b.events.as_path();
    let shown = path.display();
    if path.extension().is_some_and(|e| e == "parquet") {
        return Err(format!("{shown}: give the events.csv written beside it (the same rows)"));
    }
    let mut reader = csv::Reader::from_path(path).map_err(|e| {
        format!("cannot read {shown}: {} (an event builder writes it: daqnet sim FILE --per-event)", reason(&e, None))
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
            (Some(lo), Some(hi)) => format!("{shown} has no event built at node {} (its nodes: {lo} ..= {hi})", b.node),
            _ => format!("{shown} has no events: write one with `daqnet sim BUILDER.toml --per-event --out DIR`"),
        });
    }
    arrivals.sort_by_key(|a| a.at);
    Ok(arrivals)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Writes to `path` the csv of `rows` (node, done_ns, bytes) under the real header.
    fn write_events(path: &Path, rows: &[(u32, u64, u64)]) {
        let mut text = String::from(crate::report::EventRecord::CSV_HEADER);
        for (k, (node, done, bytes)) in rows.iter().enumerate() {
            text.push_str(&format!("\n{k},0,{node},0,0,{done},0.1,{bytes},true"));
        }
        std::fs::write(path, text).unwrap();
    }

    fn from(path: &Path, node: u32) -> FromBuilder {
        FromBuilder { events: path.to_path_buf(), node }
    }

    #[test]
    fn a_recording_gives_one_nodes_events_in_the_order_they_were_built() {
        let dir = std::env::temp_dir().join(format!("daqnet-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.csv");
        write_events(&path, &[(0, 500, 10), (1, 100, 20), (0, 300, 30), (1, 50, 40)]);
        let farm = Farm { implementation: Implementation::V1, from_builder: Some(from(&path, 0)), ..Farm::default() };
        let s = EventSource::of(&farm).unwrap();
        assert_eq!((s.due(EventId(0)), s.bytes(EventId(0))), (Some(300), 30));
        assert_eq!((s.due(EventId(1)), s.bytes(EventId(1))), (Some(500), 10));
        assert_eq!((s.due(EventId(2)), s.max_bytes(), s.on_demand()), (None, 30, false));

        let e = read_builder_output(&from(&path, 7)).unwrap_err();
        assert!(e.ends_with("has no event built at node 7 (its nodes: 0 ..= 1)"), "{e}");
        std::fs::write(&path, "event,node,done_ns,bytes\n0,0,12,x\n").unwrap();
        let e = read_builder_output(&from(&path, 0)).unwrap_err();
        assert!(e.ends_with("events.csv:2: column `bytes`: invalid digit found in string"), "{e}");
        std::fs::write(&path, "event,done_ns,bytes\n0,12,3\n").unwrap();
        let e = read_builder_output(&from(&path, 0)).unwrap_err();
        assert!(e.ends_with("events.csv:2: missing field `node`"), "{e}");
        let e = read_builder_output(&from(&dir.join("none.csv"), 0)).unwrap_err();
        assert!(e.starts_with("cannot read ") && e.contains("No such file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_generator_at_a_rate_offers_event_k_at_k_periods_and_only_v1_has_one() {
        let v1 = Farm { implementation: Implementation::V1, source_rate_hz: Rate::Hz(3000.0), ..Farm::default() };
        let s = EventSource::of(&v1).unwrap();
        assert_eq!((s.due(EventId(0)), s.due(EventId(3)), s.bytes(EventId(9))), (Some(0), Some(1_000_000), 32_000));
        let v2 = Farm { source_rate_hz: Rate::Hz(3000.0), ..Farm::default() };
        assert_eq!(EventSource::of(&v2).unwrap(), EventSource::OnDemand { bytes: 32_000 });
    }
}
