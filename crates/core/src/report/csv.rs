//! The per-event rows of a run (`events.csv`).

use super::EventRecord;
use crate::NS_PER_MS;

impl EventRecord {
    /// CSV header matching [`EventRecord::csv_row`].
    pub const CSV_HEADER: &'static str = "event,pu,node,assigned_ns,start_ns,done_ns,latency_ms,bytes,measured";

    /// A CSV file of `records`, with header.
    pub fn to_csv(records: &[EventRecord]) -> String {
        let mut csv = String::from(Self::CSV_HEADER);
        csv.push('\n');
        for r in records {
            csv.push_str(&r.csv_row());
            csv.push('\n');
        }
        csv
    }

    /// Data-collection latency in ms (first request → last fragment).
    pub fn latency_ms(&self) -> f64 {
        (self.done_ns - self.start_ns) as f64 / NS_PER_MS as f64
    }

    /// One CSV line (no newline).
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{:.6},{},{}",
            self.event,
            self.pu,
            self.node,
            self.assigned_ns,
            self.start_ns,
            self.done_ns,
            self.latency_ms(),
            self.bytes,
            self.measured
        )
    }
}
