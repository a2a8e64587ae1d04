//! Where the SFC's events come from, and when: made on demand, made at a fixed rate, or the
//! recorded output of an event builder (`[farm.from_builder]`). One rule for every substrate,
//! so the simulator, a real run and the testbed offer the same events at the same times.

pub use crate::scenario::farm::Arrival;
use crate::scenario::{Farm, Implementation, Rate};
use crate::{EventId, Nanos, NS_PER_S};

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
            return b.read().map(EventSource::Recorded);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FromBuilder;
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

        let e = from(&path, 7).read().unwrap_err();
        assert!(e.ends_with("has no event built at node 7 (its nodes: 0 ..= 1)"), "{e}");
        std::fs::write(&path, "event,node,done_ns,bytes\n0,0,12,x\n").unwrap();
        let e = from(&path, 0).read().unwrap_err();
        assert!(e.ends_with("events.csv:2: column `bytes`: invalid digit found in string"), "{e}");
        std::fs::write(&path, "event,done_ns,bytes\n0,12,3\n").unwrap();
        let e = from(&path, 0).read().unwrap_err();
        assert!(e.ends_with("events.csv:2: missing field `node`"), "{e}");
        let e = from(&dir.join("none.csv"), 0).read().unwrap_err();
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
