//! How a run's time series compare between substrates (`daqnet validate --trace`): not sample
//! by sample — a testbed run and a simulation of one scenario start their events at different
//! instants and drift apart by jitter — but as the distribution of each series over the part
//! of the run where it is active. A queue that fills to its buffer and drains in every round
//! has the same mean, 90th percentile and peak in both whether or not the rounds line up.
//!
//! Per port (`trace-ports.parquet`): the queue's mean, 90th percentile and peak bytes between
//! its first and last non-empty sample. Over all traced TCP senders together
//! (`trace-tcp.parquet`), between each sender's first and last sample with segments in flight:
//! the congestion window's median and 90th percentile, the mean segments in flight, the median
//! SRTT, and the share of samples outside the `open` state (loss recovery under way).

use crate::columnar::{TRACE_PORTS, TRACE_TCP};
use crate::plot::series::column_numbers;
use anyhow::Context;
use arrow_array::cast::AsArray;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::Path;

/// One figure of one series: (series, metric) → value.
pub type Profile = BTreeMap<(String, String), f64>;

/// The figures of the traces in run folder `dir` (either file may be missing: nothing from it).
pub fn profile(dir: &Path) -> anyhow::Result<Profile> {
    let mut out = Profile::new();
    let ports = dir.join(TRACE_PORTS);
    if ports.exists() {
        for (port, rows) in by_name(&ports, "port", &["queue_bytes"])? {
            let q = active(rows.iter().map(|r| r[0]).collect(), |v| v > 0.0);
            if q.is_empty() {
                continue;
            }
            let mut put = |metric: &str, v: f64| out.insert((port.clone(), metric.to_string()), v);
            put("queue mean bytes", mean(&q));
            put("queue p90 bytes", quantile(&q, 0.9));
            put("queue peak bytes", q.iter().copied().fold(0.0, f64::max));
        }
    }
    let tcp = dir.join(TRACE_TCP);
    if tcp.exists() {
        let senders = by_name(&tcp, "sender", &["cwnd", "in_flight", "srtt_ms", "open"])?;
        let n = senders.len();
        let rows: Vec<[f64; 4]> = senders.into_values().flat_map(|r| active(r, |r| r[1] > 0.0)).collect();
        if !rows.is_empty() {
            let col = |i: usize| rows.iter().map(|r| r[i]).filter(|v| !v.is_nan()).collect::<Vec<_>>();
            let series = format!("{n} TCP senders");
            let mut put = |metric: &str, v: f64| out.insert((series.clone(), metric.to_string()), v);
            put("cwnd median", quantile(&col(0), 0.5));
            put("cwnd p90", quantile(&col(0), 0.9));
            put("in flight mean", mean(&col(1)));
            put("srtt median ms", quantile(&col(2), 0.5));
            put("share not open", 1.0 - mean(&col(3)));
        }
    }
    Ok(out)
}

/// The mean of each figure over several runs' profiles (repeats of one point); a figure
/// missing from a run is averaged over the runs that have it.
pub fn mean_profile(runs: &[Profile]) -> Profile {
    let mut sum: BTreeMap<(String, String), (f64, u32)> = BTreeMap::new();
    for r in runs {
        for (k, v) in r {
            let e = sum.entry(k.clone()).or_default();
            *e = (e.0 + v, e.1 + 1);
        }
    }
    sum.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
}

/// The samples from the first to the last that is `busy`, in time order.
fn active<T: Copy>(v: Vec<T>, busy: impl Fn(T) -> bool) -> Vec<T> {
    let first = v.iter().position(|&x| busy(x));
    let last = v.iter().rposition(|&x| busy(x));
    match (first, last) {
        (Some(a), Some(b)) => v[a..=b].to_vec(),
        _ => Vec::new(),
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The `q` quantile (nearest rank).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1]
}

/// The rows of the Parquet trace at `path` by the value of `name_col`, in file (time) order:
/// the columns `cols` as numbers (null: NaN; the column `open`: 1 where `state` is `open`).
fn by_name<const N: usize>(
    path: &Path,
    name_col: &str,
    cols: &[&str; N],
) -> anyhow::Result<BTreeMap<String, Vec<[f64; N]>>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let mut out: BTreeMap<String, Vec<[f64; N]>> = BTreeMap::new();
    for batch in reader {
        let batch = batch?;
        let column = |c: &str| batch.column_by_name(c).with_context(|| format!("{}: no column `{c}`", path.display()));
        let names = column(name_col)?.as_string::<i32>().clone();
        let mut values: Vec<Vec<f64>> = Vec::with_capacity(N);
        for &c in cols {
            values.push(if c == "open" {
                let s = column("state")?.as_string::<i32>().clone();
                s.iter().map(|v| if v == Some("open") { 1.0 } else { 0.0 }).collect()
            } else {
                let v =
                    column_numbers(column(c)?.as_ref()).with_context(|| format!("{}: column `{c}`", path.display()))?;
                v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect()
            });
        }
        for (i, name) in names.iter().enumerate() {
            let row = std::array::from_fn(|k| values[k][i]);
            out.entry(name.unwrap_or_default().to_string()).or_default().push(row);
        }
    }
    Ok(out)
}

/// Both sides' figures, joined: (series, metric, reference, model) for every figure either
/// side has (NaN where one lacks it).
pub fn joined(reference: &Profile, model: &Profile) -> Vec<(String, String, f64, f64)> {
    let keys: std::collections::BTreeSet<_> = reference.keys().chain(model.keys()).collect();
    let get = |p: &Profile, k: &(String, String)| p.get(k).copied().unwrap_or(f64::NAN);
    keys.into_iter().map(|k| (k.0.clone(), k.1.clone(), get(reference, k), get(model, k))).collect()
}

/// Compares the traces of every point of `plan` between the sweep folders `reference` and
/// `model` (each point's runs averaged, [`mean_profile`]): writes `csv` (point, series,
/// metric, both values, model / reference) and returns the comparison as a text table.
pub fn compare(
    plan: &crate::sweep::SweepPlan,
    (reference, model): (&Path, &Path),
    names: (&str, &str),
    csv_path: &Path,
) -> anyhow::Result<String> {
    let repeat = plan.repeat.max(1) as usize;
    let mut rows = Vec::new();
    for first in (0..plan.len()).step_by(repeat) {
        let mut label = String::new();
        let mut side = |dir: &Path| -> anyhow::Result<Profile> {
            let mut runs = Vec::new();
            for i in first..first + repeat {
                let d = crate::points::point_dir(dir, i);
                if let Some((meta, _)) = crate::points::read_point(&d)? {
                    label = meta.values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(" × ");
                    runs.push(profile(&d)?);
                }
            }
            Ok(mean_profile(&runs))
        };
        let (r, m) = (side(reference)?, side(model)?);
        rows.extend(joined(&r, &m).into_iter().map(|(series, metric, a, b)| (label.clone(), series, metric, a, b)));
    }
    let mut w = csv::Writer::from_path(csv_path).with_context(|| format!("cannot write {}", csv_path.display()))?;
    w.write_record(["point", "series", "metric", names.0, names.1, &format!("{}/{}", names.1, names.0)])?;
    let fmt = |v: f64| if v.is_nan() { String::new() } else { format!("{v}") };
    for (point, series, metric, a, b) in &rows {
        w.write_record([point, series, metric, &fmt(*a), &fmt(*b), &fmt(b / a)])?;
    }
    w.flush()?;
    let show = |v: f64| {
        if v.is_nan() {
            "–".to_string()
        } else if v.abs() >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
        }
    };
    let header = ["point", "series", "metric", names.0, names.1, &format!("{}/{}", names.1, names.0)].map(String::from);
    let text: Vec<Vec<String>> = rows
        .iter()
        .map(|(p, s, m, a, b)| vec![p.clone(), s.clone(), m.clone(), show(*a), show(*b), show(b / a)])
        .collect();
    Ok(crate::table::aligned(&header, &text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columnar::TraceWriter;
    use daqnet_core::trace::{PortSample, TcpSample, TraceSink};

    /// A queue that is idle, then fills 0 → 100 kB in steps of 25 kB and drains, then idles:
    /// the idle stretches at either end are not part of its profile.
    #[test]
    fn a_profile_covers_the_active_part_of_each_series() {
        let dir = std::env::temp_dir().join(format!("daqnet-trajectory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = TraceWriter::create(&dir).unwrap();
        w.names(&["sw->node0".into()], &["ru0->node0".into(), "ru1->node0".into()]);
        let kb = [0, 0, 25, 50, 75, 100, 50, 0, 0, 0];
        let ports: Vec<PortSample> = kb
            .iter()
            .enumerate()
            .map(|(i, &k)| PortSample {
                t_ns: i as u64 * 1000,
                port: 0,
                queue_bytes: k * 1000,
                drops: 0,
                marks: 0,
                paused_ns: 0,
            })
            .collect();
        let tcp = |t_ns, sender, cwnd, in_flight, state| TcpSample {
            t_ns,
            sender,
            cwnd,
            ssthresh: None,
            srtt_ns: Some(1_000_000),
            in_flight,
            state,
            dctcp_alpha: None,
        };
        // Sender 0: idle, 10 in flight (open), 4 in flight (recovery), idle. Sender 1: 20 in flight.
        let windows = [
            tcp(0, 0, 10, 0, "open"),
            tcp(1000, 0, 10, 10, "open"),
            tcp(1000, 1, 20, 20, "open"),
            tcp(2000, 0, 5, 4, "recovery"),
            tcp(3000, 0, 5, 0, "open"),
        ];
        w.batch(&ports, &windows);
        w.finish().unwrap();
        let p = profile(&dir).unwrap();
        let get = |s: &str, m: &str| p[&(s.to_string(), m.to_string())];
        // Active: 25, 50, 75, 100, 50 kB.
        assert_eq!(get("sw->node0", "queue mean bytes"), 60_000.0);
        assert_eq!(get("sw->node0", "queue p90 bytes"), 100_000.0);
        assert_eq!(get("sw->node0", "queue peak bytes"), 100_000.0);
        // Active TCP samples: (10, 10 open), (5, 4 recovery), (20, 20 open).
        assert_eq!(get("2 TCP senders", "cwnd median"), 10.0);
        assert_eq!(get("2 TCP senders", "in flight mean"), 34.0 / 3.0);
        assert_eq!(get("2 TCP senders", "srtt median ms"), 1.0);
        assert!((get("2 TCP senders", "share not open") - 1.0 / 3.0).abs() < 1e-12);
        let both = mean_profile(&[p.clone(), Profile::new()]);
        assert_eq!(both, p, "a run without a figure does not dilute the others'");
        let j = joined(&p, &Profile::new());
        assert_eq!(j.len(), p.len());
        assert!(j.iter().all(|r| r.3.is_nan()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
