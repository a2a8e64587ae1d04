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

    /// The rows of an `events.csv` as far as they are whole: reading stops at the first line
    /// that is not a complete row (a file cut short by a process that died while writing it).
    pub fn from_csv_prefix(text: &str) -> Vec<EventRecord> {
        let mut lines = text.split_inclusive('\n');
        if lines.next().map(str::trim_end) != Some(Self::CSV_HEADER) {
            return Vec::new();
        }
        lines.map_while(|l| l.strip_suffix('\n').and_then(Self::from_csv_row)).collect()
    }

    /// One line as [`EventRecord::csv_row`] writes it.
    fn from_csv_row(line: &str) -> Option<EventRecord> {
        let c: Vec<&str> = line.split(',').collect();
        let [event, pu, node, assigned, start, done, latency_ms, bytes, measured] = c[..] else { return None };
        Some(EventRecord {
            event: event.parse().ok()?,
            pu: pu.parse().ok()?,
            node: node.parse().ok()?,
            assigned_ns: assigned.parse().ok()?,
            start_ns: start.parse().ok()?,
            done_ns: done.parse().ok()?,
            latency_ns: ns_of_ms(latency_ms)?,
            bytes: bytes.parse().ok()?,
            measured: measured.parse().ok()?,
        })
    }

    /// Data-collection latency in ms.
    pub fn latency_ms(&self) -> f64 {
        self.latency_ns as f64 / NS_PER_MS as f64
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

/// The nanoseconds of a `latency_ms` as [`EventRecord::csv_row`] writes it (six decimals: whole
/// nanoseconds).
pub fn ns_of_ms(text: &str) -> Option<u64> {
    let ms: f64 = text.parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| (ms * NS_PER_MS as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_cut_short_gives_its_whole_rows() {
        let r = |event| EventRecord {
            event,
            pu: 1,
            node: 0,
            assigned_ns: 10,
            start_ns: 20,
            done_ns: 2_000_020 + event * 123_456_789_012,
            // Less than done - start, as for an event collected in steps; read back to the ns.
            latency_ns: 1_999_999 + event * 123_456_789_012,
            bytes: 99,
            measured: event > 0,
        };
        let text = EventRecord::to_csv(&[r(0), r(1), r(2)]);
        assert_eq!(EventRecord::from_csv_prefix(&text), vec![r(0), r(1), r(2)]);
        let cut = &text[..text.len() - 5];
        assert_eq!(EventRecord::from_csv_prefix(cut), vec![r(0), r(1)], "the row cut mid-way is not one");
        assert!(EventRecord::from_csv_prefix("not,a,header\n").is_empty());
    }
}
