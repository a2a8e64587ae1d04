//! What a simulation holds in memory, estimated from its scenario before anything is built, so
//! that a scenario too large for the machine is refused by the field that sizes it rather than
//! killed when memory runs out.

use daqnet_core::Scenario;

/// A connection's state once open: its two TCP ends with their queues and what the socket layer
/// keeps beside them (measured: 1.6 kB at 500 × 500 all-to-all, `sim_work.connection_bytes`).
const CONNECTION_BYTES: u64 = 1700;
/// A host: its link's ports both ways, their queues of frames on the way, its place in the plan.
const HOST_BYTES: u64 = 2048;
/// A processing unit (or a sub-farm worker's, a DAQPIPE builder's) state.
const UNIT_BYTES: u64 = 512;
/// One built event kept for the per-event outputs.
const EVENT_RECORD_BYTES: u64 = 96;

/// The estimate, and the scenario field that contributes most to it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEstimate {
    /// Bytes, roughly (within a factor of two of what runs of the shipped scenarios hold).
    pub bytes: u64,
    /// The field that sizes the largest part (`system.nodes`).
    pub field: &'static str,
    /// That field's value, as the scenario has it.
    pub value: String,
    /// What the bytes are: connections, hosts, units, events kept.
    pub what: String,
}

/// What simulating `scenario` holds at most, roughly, keeping every event's record if
/// `per_event`.
pub fn memory_estimate(scenario: &Scenario, per_event: bool) -> MemoryEstimate {
    let (connections, hosts, units, sized_by) = if let Some(f) = &scenario.farm {
        let w = f.workers as u64;
        (w, w + 1, w, ("farm.workers", w))
    } else if let Some(p) = &scenario.pipe {
        let n = p.nodes as u64;
        (n * n.saturating_sub(1), n, n, ("pipe.nodes", n))
    } else {
        let s = &scenario.system;
        let (r, n) = (s.readout_units as u64, s.nodes as u64);
        let field = if n >= r { ("system.nodes", n) } else { ("system.readout_units", r) };
        (r * n, r + n, n * s.pus_per_node as u64, field)
    };
    let events = if per_event { scenario.run.warmup_events + scenario.run.events } else { 0 };
    let parts = [
        (connections.saturating_mul(CONNECTION_BYTES), sized_by),
        (hosts.saturating_mul(HOST_BYTES), sized_by),
        (units.saturating_mul(UNIT_BYTES), sized_by),
        (events.saturating_mul(EVENT_RECORD_BYTES), ("run.events", scenario.run.events)),
    ];
    let bytes = parts.iter().fold(0u64, |sum, p| sum.saturating_add(p.0));
    let (_, (field, value)) = parts.iter().max_by_key(|p| p.0).copied().expect("four parts");
    MemoryEstimate {
        bytes,
        field,
        value: value.to_string(),
        what: format!("{connections} connections, {hosts} hosts, {units} units, {events} events kept"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::parse_str;

    #[test]
    fn the_largest_part_names_the_field() {
        let sets = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let huge = parse_str("", "t", &sets(&["system.nodes=10000000"])).unwrap();
        let e = memory_estimate(&huge, false);
        assert_eq!((e.field, e.value.as_str()), ("system.nodes", "10000000"));
        assert!(e.bytes > 1_000_000_000_000, "{} bytes", e.bytes);
        let pipe = parse_str("[pipe]\nnodes = 500\n", "t", &[]).unwrap();
        let e = memory_estimate(&pipe, false);
        assert_eq!(e.field, "pipe.nodes");
        assert_eq!(e.bytes, 500 * 499 * CONNECTION_BYTES + 500 * (HOST_BYTES + UNIT_BYTES));
        let many_events = parse_str("", "t", &sets(&["run.events=100000000000"])).unwrap();
        assert_eq!(memory_estimate(&many_events, true).field, "run.events");
        assert_eq!(memory_estimate(&many_events, false).field, "system.readout_units");
    }
}
