//! `table.csv` (and the same as `table.parquet`): one row per finished point and repeat — the
//! varied values, then the report's summary. Built from the point folders, so a resumed or merged sweep gets the same table as
//! one that ran in a single go. Wall-clock figures stay in each point's report.json: the
//! table of a sweep is deterministic.

use crate::points::{point_dir, read_point, PointMeta};
use anyhow::Context;
use daqnet_core::report::RunReport;
use std::path::{Path, PathBuf};

/// A summary column: its name and how it is read from a report.
type Column = (&'static str, fn(&RunReport) -> f64);

/// Columns after the varied ones.
const SUMMARY: &[Column] = &[
    ("events_built", |r| r.events_built as f64),
    ("not_built_timed_out", |r| r.events_not_built.timed_out as f64),
    ("not_built_lost", |r| r.events_not_built.lost as f64),
    ("not_built_abandoned", |r| r.events_not_built.abandoned as f64),
    ("duration_s", |r| r.duration_s),
    ("event_rate_hz", |r| r.event_rate_hz),
    ("goodput_bps", |r| r.goodput_bps),
    ("latency_mean_ms", |r| r.latency_ms.mean),
    ("latency_p1_ms", |r| r.latency_ms.p1),
    ("latency_q1_ms", |r| r.latency_ms.q1),
    ("latency_median_ms", |r| r.latency_ms.median),
    ("latency_q3_ms", |r| r.latency_ms.q3),
    ("latency_p99_ms", |r| r.latency_ms.p99),
    ("latency_max_ms", |r| r.latency_ms.max),
    ("share_ge_100ms", |r| r.latency_ms.share_ge_100ms),
    ("retransmits", |r| r.retransmitted() as f64),
    ("timeouts", |r| r.transport_timeouts() as f64),
    ("fast_recoveries", |r| r.tcp.fast_recoveries as f64),
    ("loss_probes", |r| r.tcp.loss_probes as f64),
    ("drops", |r| r.switch.drops as f64),
    ("peak_port_bytes", |r| r.switch.ports.iter().map(|p| p.peak_bytes).max().unwrap_or(0) as f64),
];

/// The columns that count things (events, segments, bytes, points): integers in
/// `table.parquet`.
const COUNTS: &[&str] = &[
    "point",
    "repeat",
    "seed",
    "events_built",
    "not_built_timed_out",
    "not_built_lost",
    "not_built_abandoned",
    "retransmits",
    "timeouts",
    "fast_recoveries",
    "loss_probes",
    "drops",
    "peak_port_bytes",
    "waited_for_token",
    "peak_event_queue",
    "peak_token_queue",
    "edge_drops",
    "edge_peak_bytes",
    "cpu_drops",
    "cpu_interrupts",
    "marks",
    "delivered_ce",
    "ecn_reductions",
    "pause_frames",
];

/// Columns of a sub-farm's sweep (reports with a `farm` section), after the summary.
const FARM: &[Column] = &[
    ("worker_idle_fraction", |r| r.farm.as_ref().map_or(0.0, |f| f.idle_fraction)),
    ("worker_bps_min", |r| r.farm.as_ref().map_or(0.0, |f| f.worker_bps.min)),
    ("worker_bps_max", |r| r.farm.as_ref().map_or(0.0, |f| f.worker_bps.max)),
    ("worker_bps_cv", |r| r.farm.as_ref().map_or(0.0, |f| f.worker_bps.cv)),
    ("waited_for_token", |r| r.farm.as_ref().map_or(0.0, |f| f.waited_for_token as f64)),
    ("peak_event_queue", |r| r.farm.as_ref().map_or(0.0, |f| f.peak_event_queue as f64)),
    ("mean_event_queue", |r| r.farm.as_ref().map_or(0.0, |f| f.mean_event_queue)),
    ("peak_token_queue", |r| r.farm.as_ref().map_or(0.0, |f| f.peak_token_queue as f64)),
    ("mean_token_queue", |r| r.farm.as_ref().map_or(0.0, |f| f.mean_token_queue)),
];

/// Columns of a parallel leaf-spine's sweep (reports with a `fabric` section): its plan's
/// bandwidth as goodput, beside the simulated.
const FABRIC: &[Column] = &[
    ("fabric_bound_bps", |r| r.fabric.as_ref().map_or(0.0, |f| f.bound_goodput_bps)),
    ("fabric_planned_bps", |r| r.fabric.as_ref().map_or(0.0, |f| f.planned_goodput_bps)),
];

/// Columns of a sweep whose edge hosts have a slower bus (reports with an `edge` section): what
/// their NICs dropped and held.
const EDGE: &[Column] = &[
    ("edge_drops", |r| r.edge.as_ref().map_or(0.0, |e| e.drops as f64)),
    ("edge_peak_bytes", |r| {
        r.edge.as_ref().map_or(0.0, |e| e.ports.iter().map(|p| p.peak_bytes).max().unwrap_or(0) as f64)
    }),
];

/// Columns of a sweep whose hosts have finite CPU (reports with a `host_cpu` section): frames
/// their rings dropped, interrupts, and frames per interrupt.
const HOST_CPU: &[Column] = &[
    ("cpu_drops", |r| r.host_cpu.as_ref().map_or(0.0, |c| c.drops as f64)),
    ("cpu_interrupts", |r| r.host_cpu.as_ref().map_or(0.0, |c| c.interrupts as f64)),
    ("cpu_frames_per_interrupt", |r| {
        r.host_cpu.as_ref().map_or(0.0, |c| {
            let frames: u64 = c.cores.iter().map(|k| k.frames).sum();
            if c.interrupts > 0 {
                frames as f64 / c.interrupts as f64
            } else {
                0.0
            }
        })
    }),
];

/// Columns of a sweep with ECN (reports with marks or echoes): the switches' marks, the
/// echoes the senders got, their window reductions, and DCTCP's α (0 without DCTCP).
const ECN: &[Column] = &[
    ("marks", |r| r.switch.marks as f64),
    ("delivered_ce", |r| r.tcp.delivered_ce as f64),
    ("ecn_reductions", |r| r.tcp.ecn_reductions as f64),
    ("dctcp_alpha", |r| r.dctcp_alpha.unwrap_or(0.0)),
];

/// Columns of a sweep with link-level flow control (reports with a `flow_control` section):
/// pause frames, and the seconds the hosts' NICs and the switches' ports spent paused (summed
/// over them).
const FLOW: &[Column] = &[
    ("pause_frames", |r| r.flow_control.as_ref().map_or(0.0, |f| f.pause_frames as f64)),
    ("hosts_paused_s", |r| r.flow_control.as_ref().map_or(0.0, |f| f.host_paused_ns as f64 / 1e9)),
    ("switch_ports_paused_s", |r| r.switch.paused_ns as f64 / 1e9),
];

/// Columns of a DAQPIPE sweep (reports with a `pipe` section), after the summary.
const PIPE: &[Column] = &[
    ("steady_recv_bps", |r| r.pipe.as_ref().map_or(0.0, |p| p.steady_recv_bps)),
    ("steady_state", |r| r.pipe.as_ref().map_or(0.0, |p| p.steady_state as u8 as f64)),
    ("recv_mean_bps", |r| r.pipe.as_ref().map_or(0.0, |p| p.recv_bps.mean)),
    ("recv_min_bps", |r| r.pipe.as_ref().map_or(0.0, |p| p.recv_bps.min)),
    ("recv_cv", |r| r.pipe.as_ref().map_or(0.0, |p| p.recv_bps.cv)),
    ("send_mean_bps", |r| r.pipe.as_ref().map_or(0.0, |p| p.send_bps.mean)),
];

/// Writes `out/table.csv` from the finished points among the sweep's `points` in `out`, with a
/// column per swept path in `axes`; returns its path and the number of rows.
pub fn write(out: &Path, axes: &[String], points: usize) -> anyhow::Result<(PathBuf, usize)> {
    let path = out.join("table.csv");
    let mut finished = Vec::new();
    for index in 0..points {
        let dir = point_dir(out, index);
        if let Some((meta, report)) = read_point(&dir)? {
            finished.push((dir, meta, report));
        }
    }
    let has = |f: fn(&RunReport) -> bool| finished.iter().any(|(_, _, r)| f(r));
    let columns: Vec<&Column> = SUMMARY
        .iter()
        .chain(if has(|r| r.farm.is_some()) { FARM } else { &[] })
        .chain(if has(|r| r.pipe.is_some()) { PIPE } else { &[] })
        .chain(if has(|r| r.fabric.is_some()) { FABRIC } else { &[] })
        .chain(if has(|r| r.edge.is_some()) { EDGE } else { &[] })
        .chain(if has(|r| r.host_cpu.is_some()) { HOST_CPU } else { &[] })
        .chain(if has(|r| r.switch.marks > 0 || r.tcp.delivered_ce > 0) { ECN } else { &[] })
        .chain(if has(|r| r.flow_control.is_some()) { FLOW } else { &[] })
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["point", "series", "repeat", "seed"].map(String::from).to_vec();
    header.extend(axes.iter().cloned());
    header.extend(columns.iter().map(|(c, _)| c.to_string()));
    header.push("dir".into());
    w.write_record(&header)?;
    let rows: Vec<Vec<String>> =
        finished.iter().map(|(dir, meta, report)| row(meta, report, axes, &columns, (dir, out))).collect();
    for r in &rows {
        w.write_record(r)?;
    }
    // Whole or not at all: the tasks of a sweep on a cluster and its submitter rewrite it at once.
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    daqnet_core::output::write_whole(&path, &csv).with_context(|| format!("cannot write {}", path.display()))?;
    crate::columnar::write_table(&out.join("table.parquet"), &header, &rows, &|c| COUNTS.contains(&c))?;
    Ok((path, finished.len()))
}

/// One row; a path this point's series does not sweep gets an empty cell.
fn row(
    meta: &PointMeta,
    report: &RunReport,
    axes: &[String],
    columns: &[&Column],
    (dir, out): (&Path, &Path),
) -> Vec<String> {
    let mut r = vec![meta.index.to_string(), meta.series.clone(), meta.repeat.to_string(), meta.seed.to_string()];
    r.extend(axes.iter().map(|a| meta.values.iter().find(|(p, _)| p == a).map(|(_, v)| v.clone()).unwrap_or_default()));
    r.extend(columns.iter().map(|(_, f)| format!("{}", f(report))));
    r.push(dir.strip_prefix(out).unwrap_or(dir).display().to_string());
    r
}

/// Rows of text as an aligned plain-text table: a header line, then one line per row, numbers
/// right-aligned, columns two spaces apart, no borders (so it pastes into notes and mails).
pub fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    use comfy_table::{presets::NOTHING, CellAlignment, Table as Text};
    let mut t = Text::new();
    t.load_preset(NOTHING).set_header(header.to_vec());
    for r in rows {
        t.add_row(r.clone());
    }
    let last = header.len().saturating_sub(1);
    for (i, col) in t.column_iter_mut().enumerate() {
        // Quantities (they start with a digit: 17.9, 100kB, 12 %) line up on the right.
        let quantity =
            rows.iter().all(|r| r.get(i).is_none_or(|c| c.is_empty() || c.starts_with(|ch: char| ch.is_ascii_digit())));
        col.set_cell_alignment(if quantity { CellAlignment::Right } else { CellAlignment::Left });
        col.set_padding((0, if i == last { 0 } else { 2 }));
    }
    t.to_string().lines().map(|l| l.trim_end().to_string() + "\n").collect()
}

/// A table read back for plotting: column names and rows of text cells.
#[derive(Debug, Clone)]
pub struct Table {
    /// Where it was read from (for error messages and relative `dir` cells).
    pub path: PathBuf,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, one cell per column.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads a CSV table with a header row.
    pub fn read(path: &Path) -> anyhow::Result<Table> {
        let mut r = csv::Reader::from_path(path).with_context(|| format!("cannot read table {}", path.display()))?;
        let columns = r.headers()?.iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|r| r.iter().map(String::from).collect()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("{} is not a valid CSV table", path.display()))?;
        Ok(Table { path: path.to_path_buf(), columns, rows })
    }

    /// Index of a column by exact name, or by a unique suffix after a dot
    /// (`credits_per_node` finds `system.credits_per_node`).
    pub fn column(&self, name: &str) -> anyhow::Result<usize> {
        if let Some(i) = self.columns.iter().position(|c| c == name) {
            return Ok(i);
        }
        let hits: Vec<usize> =
            (0..self.columns.len()).filter(|&i| self.columns[i].ends_with(&format!(".{name}"))).collect();
        match hits.as_slice() {
            [i] => Ok(*i),
            _ => anyhow::bail!(
                "{}: no column `{name}`{}; columns are: {}",
                self.path.display(),
                if hits.is_empty() { "" } else { " (ambiguous)" },
                self.columns.join(", ")
            ),
        }
    }

    /// Keeps the rows where every `COL=VALUE` filter matches.
    pub fn filter(&self, filters: &[String]) -> anyhow::Result<Table> {
        let mut keep = self.clone();
        for f in filters {
            let (col, value) = f.split_once('=').with_context(|| format!("--where `{f}`: expected COLUMN=VALUE"))?;
            let c = self.column(col.trim())?;
            keep.rows.retain(|r| value.split('|').any(|v| r[c] == v.trim()));
            if keep.rows.is_empty() {
                let seen: std::collections::BTreeSet<&str> = self.rows.iter().map(|r| r[c].as_str()).collect();
                anyhow::bail!(
                    "--where `{f}` keeps no row of {}; `{col}` takes: {}",
                    self.path.display(),
                    seen.into_iter().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(keep)
    }

    /// Rows grouped by the value of `group` (all rows in one unnamed group if `None`), groups
    /// in order of first appearance.
    pub fn groups(&self, group: Option<usize>) -> Vec<(String, Vec<&Vec<String>>)> {
        let mut groups: Vec<(String, Vec<&Vec<String>>)> = Vec::new();
        for r in &self.rows {
            let key = group.map(|g| r[g].clone()).unwrap_or_default();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, rows)) => rows.push(r),
                None => groups.push((key, vec![r])),
            }
        }
        groups
    }
}

/// A cell as a number: plain numbers, or sizes and rates with units (`600kB`, `10G`).
pub fn number(cell: &str) -> Option<f64> {
    let c = cell.trim().trim_matches('"');
    c.parse::<f64>()
        .ok()
        .or_else(|| daqnet_core::units::parse_bytes(c).ok().map(|b| b as f64))
        .or_else(|| daqnet_core::units::parse_bps(c).ok().map(|b| b as f64))
}
