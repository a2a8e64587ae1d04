//! `--kind series`: time series a run recorded with `--trace` (its `trace-ports.parquet` and
//! `trace-tcp.parquet`), one line per port or TCP sender over time, several runs side by side
//! (a simulation and a testbed run of one scenario).

use super::{axis, render, Data, PlotSpec, Point, XAxis};
use crate::columnar::{TRACE_PORTS, TRACE_TCP};
use anyhow::{bail, Context};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The columns of the port samples that can be drawn; any other `--y` is a TCP column.
const PORT_COLUMNS: &[&str] = &["queue_bytes", "drops", "marks", "paused_ns"];
/// The columns of the TCP samples that can be drawn.
const TCP_COLUMNS: &[&str] = &["cwnd", "ssthresh", "srtt_ms", "in_flight", "dctcp_alpha"];
/// Axis names of the columns.
const NAMES: &[(&str, &str)] = &[
    ("queue_bytes", "queue"),
    ("drops", "drops so far"),
    ("cwnd", "congestion window (segments)"),
    ("ssthresh", "slow-start threshold (segments)"),
    ("srtt_ms", "smoothed RTT (ms)"),
    ("in_flight", "segments in flight"),
    ("marks", "ECN marks so far"),
    ("paused_ns", "time paused so far (ns)"),
    ("dctcp_alpha", "DCTCP α"),
];
/// Points per line beyond which each stretch of the line keeps only its lowest and highest
/// value (an envelope: peaks and drains stay visible, the file stays small).
const MAX_POINTS: usize = 4000;

/// Draws the `--y` column of the traces in `runs` (run folders) into `out`; only the samples
/// from `window.0` to `window.1` ms if given.
pub fn draw(runs: &[PathBuf], spec: &PlotSpec, window: Option<(f64, f64)>, out: &Path) -> anyhow::Result<()> {
    let format = render::Format::of(out)?;
    let y = if spec.y == "latency" { "queue_bytes" } else { spec.y.as_str() };
    let (file, group_col) = if PORT_COLUMNS.contains(&y) {
        (TRACE_PORTS, "port")
    } else if TCP_COLUMNS.contains(&y) {
        (TRACE_TCP, "sender")
    } else {
        bail!("--y {y}: a trace has {} (ports) and {} (TCP senders)", PORT_COLUMNS.join(", "), TCP_COLUMNS.join(", "))
    };
    let mut groups = Vec::new();
    for run in runs {
        let path = if run.is_dir() { run.join(file) } else { run.clone() };
        let label = (runs.len() > 1).then(|| run_label(run));
        let mut found = lines(&path, group_col, y, &spec.filters, label.as_deref())?;
        if let Some((from, to)) = window {
            found.iter_mut().for_each(|(_, pts)| pts.retain(|p| (from..=to).contains(&p.x)));
            found.retain(|(_, pts)| !pts.is_empty());
        }
        groups.extend(found);
    }
    if groups.is_empty() {
        bail!("no samples of `{y}` to draw (check --where and --window, and that the run traced them: --trace)");
    }
    let labels = render::Labels {
        x: spec.xlabel.clone().unwrap_or_else(|| "time (ms)".into()),
        y: spec.ylabel.clone().unwrap_or_else(|| NAMES.iter().find(|(c, _)| *c == y).map_or(y, |n| n.1).into()),
        group: Some(group_col.into()),
    };
    let axis = XAxis { categories: None, unit: axis::Unit::Millis };
    let data = Data::Lines(groups);
    let y_unit = axis::unit_of(y);
    render::figure(format, out, &render::Figure { spec, data: &data, axis: &axis, y_unit, labels })
}

/// A run's name in the legend: its substrate (`sim`, `testbed`) from its report, else its folder.
fn run_label(run: &Path) -> String {
    let dir = if run.is_dir() { run } else { run.parent().unwrap_or(run) };
    let report = std::fs::read_to_string(dir.join("report.json")).ok();
    let substrate = report
        .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
        .and_then(|v| v.get("substrate").and_then(|s| s.as_str()).map(String::from));
    substrate
        .unwrap_or_else(|| dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into()))
}

/// One line per value of `group_col` in the Parquet file at `path`: (`t_s` in ms, `y`), the
/// rows passing `filters` (`COLUMN=A|B` on the group column) only.
fn lines(
    path: &Path,
    group_col: &str,
    y: &str,
    filters: &[String],
    prefix: Option<&str>,
) -> anyhow::Result<Vec<(String, Vec<Point>)>> {
    let file = std::fs::File::open(path).with_context(|| {
        format!("cannot read {}: record it with --trace (daqnet sim … --trace 'queue=…,cwnd=…')", path.display())
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut keep: Vec<(&str, Vec<&str>)> = Vec::new();
    for f in filters {
        let (c, v) = f.split_once('=').with_context(|| format!("--where {f}: expected COLUMN=VALUE"))?;
        if c != group_col {
            bail!("--where {f}: a series is filtered on `{group_col}` (e.g. --where '{group_col}=…|…')");
        }
        keep.push((c, v.split('|').collect()));
    }
    let mut out: Vec<(String, Vec<Point>)> = Vec::new();
    // A trace holds a row per series per sample: find each row's line by name, not by scan.
    let mut line_of: HashMap<String, usize> = HashMap::new();
    for batch in reader {
        let batch = batch?;
        let names = batch.column_by_name(group_col).context("no group column")?.as_string::<i32>().clone();
        let t = batch.column_by_name("t_s").context("no t_s column")?.as_primitive::<Float64Type>().clone();
        let values = numbers(&batch, y)?;
        for (i, v) in values.into_iter().enumerate() {
            let name = names.value(i);
            let Some(v) = v else { continue };
            if !keep.iter().all(|(_, vs)| vs.contains(&name)) {
                continue;
            }
            let at = match line_of.get(name) {
                Some(&at) => at,
                None => {
                    let label = prefix.map_or_else(|| name.to_string(), |p| format!("{p}: {name}"));
                    out.push((label, Vec::new()));
                    line_of.insert(name.to_string(), out.len() - 1);
                    out.len() - 1
                }
            };
            out[at].1.push(Point { x: t.value(i) * 1e3, y: v, spread: None });
        }
    }
    Ok(out.into_iter().map(|(n, pts)| (n, envelope(pts))).collect())
}

/// Column `y` of `batch` as numbers (`None` where null).
fn numbers(batch: &RecordBatch, y: &str) -> anyhow::Result<Vec<Option<f64>>> {
    let c = batch.column_by_name(y).with_context(|| format!("no column `{y}` in this trace"))?;
    column_numbers(c.as_ref()).with_context(|| format!("column `{y}`"))
}

/// A numeric column (u64, u32 or f64) as numbers, `None` where null.
pub(crate) fn column_numbers(c: &dyn Array) -> anyhow::Result<Vec<Option<f64>>> {
    let get = |i: usize| !c.is_null(i);
    Ok(match c.data_type() {
        arrow_schema::DataType::UInt64 => {
            let a = c.as_primitive::<UInt64Type>();
            (0..a.len()).map(|i| get(i).then(|| a.value(i) as f64)).collect()
        }
        arrow_schema::DataType::UInt32 => {
            let a = c.as_primitive::<UInt32Type>();
            (0..a.len()).map(|i| get(i).then(|| a.value(i) as f64)).collect()
        }
        arrow_schema::DataType::Float64 => {
            let a = c.as_primitive::<Float64Type>();
            (0..a.len()).map(|i| get(i).then(|| a.value(i))).collect()
        }
        t => bail!("is {t}, not a number"),
    })
}

/// At most about [`MAX_POINTS`] points: each stretch of consecutive points keeps its lowest
/// and its highest, in time order.
fn envelope(pts: Vec<Point>) -> Vec<Point> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    let stretch = pts.len().div_ceil(MAX_POINTS / 2);
    let mut out = Vec::with_capacity(MAX_POINTS + 2);
    for chunk in pts.chunks(stretch) {
        let lo = chunk.iter().min_by(|a, b| a.y.total_cmp(&b.y)).expect("non-empty");
        let hi = chunk.iter().max_by(|a, b| a.y.total_cmp(&b.y)).expect("non-empty");
        let (first, second) = if lo.x <= hi.x { (lo, hi) } else { (hi, lo) };
        out.push(*first);
        if second.x != first.x || second.y != first.y {
            out.push(*second);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_keeps_every_peak_and_trough() {
        let pts: Vec<Point> = (0..100_000)
            .map(|i| Point { x: i as f64, y: if i % 1000 == 500 { 9.0 } else { (i % 7) as f64 }, spread: None })
            .collect();
        let e = envelope(pts);
        assert!(e.len() <= MAX_POINTS + 2, "{}", e.len());
        assert_eq!(e.iter().filter(|p| p.y == 9.0).count(), 100, "all 100 spikes stay");
        assert!(e.windows(2).all(|w| w[0].x <= w[1].x), "in time order");
    }
}
