//! Parquet beside the CSV files, for pandas and Arrow users: `table.parquet` beside every
//! sweep's `table.csv`, `events.parquet` beside every `events.csv`. Same rows and values; typed
//! columns (integers, floats, booleans, strings); column names that are identifiers
//! (`system.credits_per_node` becomes `system_credits_per_node`, so `df.system_credits_per_node`
//! works), with the dotted scenario path kept in the column's metadata under `daqnet.path`.
//! A run's time series (`--trace`) go to `trace-ports.parquet` and `trace-tcp.parquet`, written
//! batch by batch as the run goes.

use anyhow::Context;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use daqnet_core::report::{EventRecord, RunReport};
use daqnet_core::trace::{PortSample, TcpSample, TraceSink};
use daqnet_core::{NS_PER_MS, NS_PER_S};
use parquet::arrow::ArrowWriter;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The metadata key holding a column's dotted scenario path.
pub const PATH_KEY: &str = "daqnet.path";

/// `name` as an identifier: every character that is not a letter, a digit or `_` becomes `_`.
pub fn identifier(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// Writes `batch` to `path`.
/// Writes `batch` as the Parquet file `path`, whole or not at all
/// ([`daqnet_core::output::write_atomically`]).
fn write(path: &Path, batch: RecordBatch) -> anyhow::Result<()> {
    daqnet_core::output::write_atomically(path, |tmp| encode(std::fs::File::create(tmp)?, batch))
        .with_context(|| format!("cannot write {}", path.display()))
        .context(daqnet_core::output::RunFailed)
}

/// Writes `batch` as a Parquet file into `to`.
fn encode(to: impl std::io::Write + Send, batch: RecordBatch) -> anyhow::Result<()> {
    let mut w = ArrowWriter::try_new(to, batch.schema(), None)?;
    w.write(&batch)?;
    w.close()?;
    Ok(())
}

/// A column of text cells: unsigned integers if every cell is one (`as_int`), else floats
/// if every cell that is not empty parses as one (an empty cell is null), else strings.
fn column(cells: &[&str], as_int: bool) -> (DataType, ArrayRef) {
    if as_int {
        if let Ok(v) = cells.iter().map(|c| c.parse::<u64>()).collect::<Result<Vec<_>, _>>() {
            return (DataType::UInt64, Arc::new(UInt64Array::from(v)));
        }
    }
    let numbers: Result<Vec<Option<f64>>, _> =
        cells.iter().map(|c| if c.is_empty() { Ok(None) } else { c.parse::<f64>().map(Some) }).collect();
    match numbers {
        Ok(v) if v.iter().any(Option::is_some) => (DataType::Float64, Arc::new(Float64Array::from(v))),
        _ => (DataType::Utf8, Arc::new(StringArray::from(cells.to_vec()))),
    }
}

/// `table.parquet` from a table's `header` and text `rows`: the columns `counts` names as
/// unsigned integers, every other column as numbers where all its cells are numbers — an
/// empty cell (a path this row's series does not sweep) is null — else as text.
pub fn write_table(
    path: &Path,
    header: &[String],
    rows: &[Vec<String>],
    counts: &dyn Fn(&str) -> bool,
) -> anyhow::Result<()> {
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (i, name) in header.iter().enumerate() {
        let cells: Vec<&str> = rows.iter().map(|r| r[i].as_str()).collect();
        let (ty, array) = column(&cells, counts(name));
        let meta = HashMap::from([(PATH_KEY.to_string(), name.clone())]);
        fields.push(Field::new(identifier(name), ty, true).with_metadata(meta));
        arrays.push(array);
    }
    write(path, RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// `events.parquet`: the columns of `events.csv`, typed.
pub fn write_events(path: &Path, records: &[EventRecord]) -> anyhow::Result<()> {
    write(path, events_batch(records)?)
}

/// The bytes of the `events.parquet` of `records` (for readers in memory, such as Python's).
pub fn events_parquet(records: &[EventRecord]) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    encode(&mut bytes, events_batch(records)?)?;
    Ok(bytes)
}

fn events_batch(records: &[EventRecord]) -> anyhow::Result<RecordBatch> {
    let u = |f: fn(&EventRecord) -> u64| Arc::new(UInt64Array::from_iter_values(records.iter().map(f))) as ArrayRef;
    let latency = records.iter().map(EventRecord::latency_ms);
    let columns: Vec<(&str, DataType, ArrayRef)> = vec![
        ("event", DataType::UInt64, u(|r| r.event)),
        ("pu", DataType::UInt64, u(|r| r.pu as u64)),
        ("node", DataType::UInt64, u(|r| r.node as u64)),
        ("assigned_ns", DataType::UInt64, u(|r| r.assigned_ns)),
        ("start_ns", DataType::UInt64, u(|r| r.start_ns)),
        ("done_ns", DataType::UInt64, u(|r| r.done_ns)),
        ("latency_ms", DataType::Float64, Arc::new(Float64Array::from_iter_values(latency))),
        ("bytes", DataType::UInt64, u(|r| r.bytes)),
        ("measured", DataType::Boolean, Arc::new(records.iter().map(|r| Some(r.measured)).collect::<BooleanArray>())),
    ];
    let schema = Schema::new(columns.iter().map(|(n, t, _)| Field::new(*n, t.clone(), false)).collect::<Vec<_>>());
    Ok(RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|c| c.2).collect())?)
}

/// The latency histogram of `report` as rows: (lowest, highest latency of the bucket in ms,
/// events in it), for every bucket holding any — the report's HDR histogram (microseconds, 3
/// significant digits) decoded.
pub fn latency_buckets(report: &RunReport) -> anyhow::Result<Vec<(f64, f64, u64)>> {
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    if report.latency_ms.hdr_us_base64.is_empty() {
        return Ok(Vec::new());
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(&report.latency_ms.hdr_us_base64)?;
    let h: hdrhistogram::Histogram<u64> =
        Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(h.iter_recorded()
        .map(|v| {
            let high = v.value_iterated_to();
            (h.lowest_equivalent(high) as f64 / 1000.0, high as f64 / 1000.0, v.count_at_value())
        })
        .collect())
}

/// `latency.parquet`: [`latency_buckets`] of `report`, columns `low_ms`, `high_ms`, `count`.
pub fn write_latency(path: &Path, report: &RunReport) -> anyhow::Result<()> {
    let rows = latency_buckets(report)?;
    let f = |g: fn(&(f64, f64, u64)) -> f64| Arc::new(Float64Array::from_iter_values(rows.iter().map(g))) as ArrayRef;
    let schema = Schema::new(vec![
        Field::new("low_ms", DataType::Float64, false),
        Field::new("high_ms", DataType::Float64, false),
        Field::new("count", DataType::UInt64, false),
    ]);
    let count = Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))) as ArrayRef;
    write(path, RecordBatch::try_new(Arc::new(schema), vec![f(|r| r.0), f(|r| r.1), count])?)
}

/// `events.parquet` from an `events.csv` a real run wrote (its supervisor or SFC writes the
/// CSV as events are built).
pub fn events_from_csv(csv_path: &Path, parquet_path: &Path) -> anyhow::Result<()> {
    let mut r = csv::Reader::from_path(csv_path).with_context(|| format!("cannot read {}", csv_path.display()))?;
    let mut records = Vec::new();
    for row in r.records() {
        let row = row?;
        let n = |i: usize| -> anyhow::Result<u64> {
            row.get(i).unwrap_or("").parse().with_context(|| format!("{}: row {row:?}", csv_path.display()))
        };
        records.push(EventRecord {
            event: n(0)?,
            pu: n(1)? as u32,
            node: n(2)? as u32,
            assigned_ns: n(3)?,
            start_ns: n(4)?,
            done_ns: n(5)?,
            latency_ns: row
                .get(6)
                .and_then(daqnet_core::report::csv::ns_of_ms)
                .with_context(|| format!("{}: latency_ms of row {row:?}", csv_path.display()))?,
            bytes: n(7)?,
            measured: row.get(8) == Some("true"),
        });
    }
    write_events(parquet_path, &records)
}

/// The file of a trace's port samples, beside `report.json`.
pub const TRACE_PORTS: &str = "trace-ports.parquet";
/// The file of a trace's TCP samples.
pub const TRACE_TCP: &str = "trace-tcp.parquet";

/// A [`TraceSink`] writing Parquet as the samples come, one row group per batch: port samples
/// (`t_ns`, `t_s`, `port`, `queue_bytes`, `drops`, `marks`, `paused_ns`) to one output, TCP samples (`t_ns`,
/// `t_s`, `sender`, `cwnd`, `ssthresh` — null while infinite, `srtt_ms` — null before the first
/// sample, `in_flight`, `state`, `dctcp_alpha` — null but for DCTCP) to the other.
pub struct TraceWriter<W: std::io::Write + Send> {
    ports: ArrowWriter<W>,
    tcp: ArrowWriter<W>,
    schemas: (Arc<Schema>, Arc<Schema>),
    port_names: Vec<String>,
    sender_names: Vec<String>,
    rows: (u64, u64),
    error: Option<anyhow::Error>,
}

/// Writes a trace recorded as a whole (a real run's) into `dir`: the ports' (names, samples) to
/// [`TRACE_PORTS`] and the TCP senders' to [`TRACE_TCP`], in the simulator's format.
pub fn write_trace(
    dir: &Path,
    (ports, queues): (&[String], &[PortSample]),
    (senders, windows): (&[String], &[TcpSample]),
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut w = TraceWriter::create(dir)?;
    w.names(ports, senders);
    w.batch(queues, windows);
    w.finish().map(drop)
}

impl TraceWriter<std::fs::File> {
    /// Writes [`TRACE_PORTS`] and [`TRACE_TCP`] into `dir`.
    pub fn create(dir: &Path) -> anyhow::Result<Self> {
        let file = |name: &str| {
            let path = dir.join(name);
            std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))
        };
        TraceWriter::new(file(TRACE_PORTS)?, file(TRACE_TCP)?)
    }
}

impl<W: std::io::Write + Send> TraceWriter<W> {
    /// Writes port samples to `ports`, TCP samples to `tcp`.
    pub fn new(ports: W, tcp: W) -> anyhow::Result<Self> {
        let time = [Field::new("t_ns", DataType::UInt64, false), Field::new("t_s", DataType::Float64, false)];
        let schema = |rest: Vec<Field>| Arc::new(Schema::new(time.iter().cloned().chain(rest).collect::<Vec<_>>()));
        let port_schema = schema(vec![
            Field::new("port", DataType::Utf8, false),
            Field::new("queue_bytes", DataType::UInt64, false),
            Field::new("drops", DataType::UInt64, false),
            Field::new("marks", DataType::UInt64, false),
            Field::new("paused_ns", DataType::UInt64, false),
        ]);
        let tcp_schema = schema(vec![
            Field::new("sender", DataType::Utf8, false),
            Field::new("cwnd", DataType::UInt32, false),
            Field::new("ssthresh", DataType::UInt32, true),
            Field::new("srtt_ms", DataType::Float64, true),
            Field::new("in_flight", DataType::UInt32, false),
            Field::new("state", DataType::Utf8, false),
            Field::new("dctcp_alpha", DataType::Float64, true),
        ]);
        let schemas = (port_schema, tcp_schema);
        Ok(TraceWriter {
            ports: ArrowWriter::try_new(ports, schemas.0.clone(), None)?,
            tcp: ArrowWriter::try_new(tcp, schemas.1.clone(), None)?,
            schemas,
            port_names: Vec::new(),
            sender_names: Vec::new(),
            rows: (0, 0),
            error: None,
        })
    }

    /// Closes both outputs: the samples written (ports, TCP), or the first error met.
    pub fn finish(self) -> anyhow::Result<(W, W, (u64, u64))> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok((self.ports.into_inner()?, self.tcp.into_inner()?, self.rows))
    }

    fn write(&mut self, ports: &[PortSample], tcp: &[TcpSample]) -> anyhow::Result<()> {
        let secs = |t: u64| t as f64 / NS_PER_S as f64;
        if !ports.is_empty() {
            let name = |s: &PortSample| self.port_names[s.port as usize].as_str();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from_iter_values(ports.iter().map(|s| s.t_ns))),
                Arc::new(Float64Array::from_iter_values(ports.iter().map(|s| secs(s.t_ns)))),
                Arc::new(StringArray::from_iter_values(ports.iter().map(name))),
                Arc::new(UInt64Array::from_iter_values(ports.iter().map(|s| s.queue_bytes))),
                Arc::new(UInt64Array::from_iter_values(ports.iter().map(|s| s.drops))),
                Arc::new(UInt64Array::from_iter_values(ports.iter().map(|s| s.marks))),
                Arc::new(UInt64Array::from_iter_values(ports.iter().map(|s| s.paused_ns))),
            ];
            self.ports.write(&RecordBatch::try_new(self.schemas.0.clone(), columns)?)?;
            self.ports.flush()?;
        }
        if !tcp.is_empty() {
            let name = |s: &TcpSample| self.sender_names[s.sender as usize].as_str();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from_iter_values(tcp.iter().map(|s| s.t_ns))),
                Arc::new(Float64Array::from_iter_values(tcp.iter().map(|s| secs(s.t_ns)))),
                Arc::new(StringArray::from_iter_values(tcp.iter().map(name))),
                Arc::new(UInt32Array::from_iter_values(tcp.iter().map(|s| s.cwnd))),
                Arc::new(tcp.iter().map(|s| s.ssthresh).collect::<UInt32Array>()),
                Arc::new(tcp.iter().map(|s| s.srtt_ns.map(|r| r as f64 / NS_PER_MS as f64)).collect::<Float64Array>()),
                Arc::new(UInt32Array::from_iter_values(tcp.iter().map(|s| s.in_flight))),
                Arc::new(StringArray::from_iter_values(tcp.iter().map(|s| s.state))),
                Arc::new(tcp.iter().map(|s| s.dctcp_alpha).collect::<Float64Array>()),
            ];
            self.tcp.write(&RecordBatch::try_new(self.schemas.1.clone(), columns)?)?;
            self.tcp.flush()?;
        }
        self.rows.0 += ports.len() as u64;
        self.rows.1 += tcp.len() as u64;
        Ok(())
    }
}

impl<W: std::io::Write + Send> TraceSink for TraceWriter<W> {
    fn names(&mut self, ports: &[String], senders: &[String]) {
        self.port_names = ports.to_vec();
        self.sender_names = senders.to_vec();
    }

    fn batch(&mut self, ports: &[PortSample], tcp: &[TcpSample]) {
        if self.error.is_none() {
            self.error = self.write(ports, tcp).err();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn the_latency_histogram_decodes_to_its_events() {
        let lat = daqnet_core::report::LatencyMs::from_ns(&[1_000_000, 1_000_000, 250_000_000]);
        let r = RunReport { latency_ms: lat, ..RunReport::default() };
        let b = latency_buckets(&r).unwrap();
        assert_eq!(b.iter().map(|x| x.2).sum::<u64>(), 3);
        assert_eq!(b.len(), 2);
        assert!(b[0].0 <= 1.0 && 1.0 <= b[0].1 && b[0].2 == 2, "{b:?}");
        assert!(b[1].0 <= 250.0 && 250.0 <= b[1].1 && b[1].1 - b[1].0 < 0.25, "3 significant digits: {b:?}");
    }

    #[test]
    fn names_become_identifiers() {
        assert_eq!(identifier("system.credits_per_node"), "system_credits_per_node");
        assert_eq!(identifier("network.switch.buffer.port_bytes"), "network_switch_buffer_port_bytes");
    }

    #[test]
    fn a_table_keeps_its_rows_types_and_paths() {
        let dir = std::env::temp_dir().join(format!("daqnet-columnar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("table.parquet");
        let header: Vec<String> =
            ["point", "series", "system.credits_per_node", "goodput_bps", "drops"].map(String::from).to_vec();
        let rows = vec![
            vec!["0".into(), "a".into(), "40".into(), "1.5e9".into(), "0".into()],
            vec!["1".into(), "a".into(), "".into(), "2e9".into(), "7".into()],
        ];
        write_table(&path, &header, &rows, &|c| matches!(c, "point" | "drops")).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 2);
        let schema = parquet::arrow::parquet_to_arrow_schema(
            reader.metadata().file_metadata().schema_descr(),
            reader.metadata().file_metadata().key_value_metadata(),
        )
        .unwrap();
        let types: Vec<(String, DataType)> =
            schema.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
        assert_eq!(
            types,
            vec![
                ("point".into(), DataType::UInt64),
                ("series".into(), DataType::Utf8),
                ("system_credits_per_node".into(), DataType::Float64),
                ("goodput_bps".into(), DataType::Float64),
                ("drops".into(), DataType::UInt64)
            ]
        );
        assert_eq!(schema.field(2).metadata().get(PATH_KEY).map(String::as_str), Some("system.credits_per_node"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
