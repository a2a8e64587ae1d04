//! `daqnet plot`: figures from a sweep table with plotters — [ATLAS-DC]'s box style (bullet =
//! mean, box = quartiles, whiskers = p1 and p99), lines, and latency histograms from per-event
//! records. PNG, SVG or PDF by the output file's extension; axes named and ticked in the units
//! people write ([`axis`]); the legend beside the data ([`render`]).

pub mod axis;
mod render;
pub mod series;

use crate::table::{number, Table};
use anyhow::{bail, Context};
use daqnet_core::report::RunReport;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What kind of figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Latency per x: bullet = mean, box = quartiles, whiskers = p1 and p99 ([ATLAS-DC] Fig. 5).
    #[default]
    Box,
    /// One column against x, one line per group; with repeats, their mean and a bar from the
    /// lowest to the highest run.
    Line,
    /// Latency distribution of each point, from its events.csv (or its report's HDR histogram).
    Hist,
    /// A run's time series (`--trace`): one line per port or TCP sender over time.
    Series,
}

/// A figure to draw from a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// Figure kind.
    #[serde(default)]
    pub kind: Kind,
    /// Column on the x axis (for `hist`, the column that tells the distributions apart).
    pub x: String,
    /// `latency` (box: the latency statistics; line: the mean latency), or any numeric column.
    #[serde(default = "default_y")]
    pub y: String,
    /// Column whose values make separate series (colours, legend).
    #[serde(default)]
    pub group: Option<String>,
    /// `COLUMN=VALUE` filters (`COLUMN=A|B`: either value); only matching rows are drawn.
    #[serde(default, rename = "where")]
    pub filters: Vec<String>,
    /// Logarithmic x axis.
    #[serde(default)]
    pub log_x: bool,
    /// Logarithmic y axis.
    #[serde(default)]
    pub log_y: bool,
    /// Multiply x values by this before drawing (e.g. 1e-6 to show bytes as MB); the ticks are
    /// then plain numbers, so say the unit in `xlabel`.
    #[serde(default = "one")]
    pub x_scale: f64,
    /// Title above the figure.
    #[serde(default)]
    pub title: Option<String>,
    /// X axis label (default: the column's name and unit).
    #[serde(default)]
    pub xlabel: Option<String>,
    /// Y axis label (default: from `y`).
    #[serde(default)]
    pub ylabel: Option<String>,
    /// Size in pixels at 96 dpi (SVG and PDF are vector: only the proportions matter).
    #[serde(default = "default_size")]
    pub size: (u32, u32),
    /// Resolution of a PNG: 96 draws `size` pixels, 192 twice as many, text and lines alike.
    #[serde(default = "default_dpi")]
    pub dpi: u32,
    /// A source document's values, each drawn as its own marked series beside daqnet's (box
    /// and line figures with a numeric x axis).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<Reference>,
}

/// Values a source document gives for a figure: black open marks (a triangle, then a cross,
/// a square…) named in the legend, so that a reader compares without looking them up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Legend name, citing the source (`"[ATLAS-DC] Fig. 13a"`).
    pub name: String,
    /// `[x, y]` pairs in the table's units (x before `x_scale`; y as the figure's y column,
    /// milliseconds for latency).
    pub points: Vec<[f64; 2]>,
}

fn default_y() -> String {
    "latency".into()
}

fn one() -> f64 {
    1.0
}

fn default_size() -> (u32, u32) {
    (1000, 640)
}

fn default_dpi() -> u32 {
    96
}

/// Box statistics of one point, in ms, averaged over its `runs`.
#[derive(Debug, Clone, Copy)]
struct Stat {
    x: f64,
    mean: f64,
    p1: f64,
    q1: f64,
    median: f64,
    q3: f64,
    p99: f64,
    runs: usize,
}

/// One point of a line: x, the mean y over its runs, and the lowest and highest run.
#[derive(Debug, Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    spread: Option<(f64, f64)>,
}

enum Data {
    Boxes(Vec<(String, Vec<Stat>)>),
    Lines(Vec<(String, Vec<Point>)>),
}

impl Data {
    /// Each group's name, in drawing order (empty for the one group of an ungrouped figure).
    fn names(&self) -> Vec<&str> {
        match self {
            Data::Boxes(g) => g.iter().map(|(n, _)| n.as_str()).collect(),
            Data::Lines(g) => g.iter().map(|(n, _)| n.as_str()).collect(),
        }
    }

    /// Most runs averaged into one box (1: no averaging).
    fn runs(&self) -> usize {
        match self {
            Data::Boxes(g) => g.iter().flat_map(|(_, v)| v).map(|s| s.runs).max().unwrap_or(1),
            Data::Lines(_) => 1,
        }
    }
}

/// The x axis: numbers, or categories placed at 1, 2, 3… with their names as tick labels.
struct XAxis {
    categories: Option<Vec<String>>,
    unit: axis::Unit,
}

impl XAxis {
    fn of(cells: &[&str], col: &str, scale: f64) -> XAxis {
        let unit = if scale == 1.0 { axis::unit_of(col) } else { axis::Unit::Plain };
        if cells.iter().all(|c| number(c).is_some()) {
            return XAxis { categories: None, unit };
        }
        let mut cats: Vec<String> = Vec::new();
        for c in cells {
            if !cats.iter().any(|k| k == c) {
                cats.push(c.to_string());
            }
        }
        XAxis { categories: Some(cats), unit }
    }

    fn value(&self, cell: &str, scale: f64) -> f64 {
        match &self.categories {
            None => number(cell).expect("checked numeric") * scale,
            Some(c) => (c.iter().position(|k| k == cell).expect("seen category") + 1) as f64,
        }
    }
}

/// Draws `spec` from `table` into `out` (`.png`, `.svg` or `.pdf`).
pub fn draw(table: &Table, spec: &PlotSpec, out: &Path) -> anyhow::Result<()> {
    let format = render::Format::of(out)?;
    let mut t = table.filter(&spec.filters)?;
    let xc = t.column(&spec.x)?;
    // A row without an x value comes from a series that does not sweep x: not on this figure.
    t.rows.retain(|r| !r[xc].is_empty());
    if t.rows.is_empty() {
        bail!("{}: no row has a value of `{}`", table.path.display(), spec.x);
    }
    let group = spec.group.as_deref().map(|g| t.column(g)).transpose()?;
    let cells: Vec<&str> = t.rows.iter().map(|r| r[xc].as_str()).collect();
    let axis = match spec.kind {
        Kind::Hist => XAxis { categories: None, unit: axis::Unit::Millis },
        _ => XAxis::of(&cells, &t.columns[xc], spec.x_scale),
    };
    if spec.log_x && axis.categories.is_some() {
        bail!("--log-x needs a numeric x column; `{}` has values like `{}`", spec.x, cells[0]);
    }
    if !spec.reference.is_empty() {
        if matches!(spec.kind, Kind::Hist | Kind::Series) {
            bail!("reference values go on box and line figures, not on `{:?}`", spec.kind);
        }
        if axis.categories.is_some() {
            bail!("reference values need a numeric x column; `{}` has values like `{}`", spec.x, cells[0]);
        }
        if let Some(r) = spec.reference.iter().find(|r| r.points.is_empty()) {
            bail!("reference `{}` has no points", r.name);
        }
    }
    let data = match spec.kind {
        Kind::Series => bail!("--kind series draws a run's trace: give the run's folder (daqnet sim … --trace …)"),
        Kind::Box => boxes(&t, xc, group, &axis, spec)?,
        Kind::Line => lines(&t, xc, group, &axis, spec)?,
        Kind::Hist => Data::Lines(histograms(&t, xc, group, spec)?),
    };
    let y_unit = match spec.kind {
        Kind::Line if spec.y != "latency" => axis::unit_of(&t.columns[t.column(&spec.y)?]),
        _ => axis::Unit::Plain,
    };
    let labels = labels(spec, &t.columns[xc], group.map(|g| t.columns[g].as_str()), &t);
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    render::figure(format, out, &render::Figure { spec, data: &data, axis: &axis, y_unit, labels })
}

fn boxes(t: &Table, xc: usize, group: Option<usize>, axis: &XAxis, spec: &PlotSpec) -> anyhow::Result<Data> {
    if spec.y != "latency" {
        bail!("box plots show the latency statistics (--y latency); use --kind line for `{}`", spec.y);
    }
    let mut cols = Vec::new();
    for s in ["mean", "p1", "q1", "median", "q3", "p99"] {
        cols.push(t.column(&format!("latency_{s}_ms")).context("box plots need a sweep's table.csv")?);
    }
    let stat = |x: f64, v: &[f64], runs: usize| Stat {
        x,
        mean: v[0],
        p1: v[1],
        q1: v[2],
        median: v[3],
        q3: v[4],
        p99: v[5],
        runs,
    };
    Ok(Data::Boxes(
        t.groups(group)
            .into_iter()
            .map(|(g, rows)| {
                let by_x = by_x(&rows, |r| axis.value(&r[xc], spec.x_scale), &cols);
                (g, by_x.into_iter().map(|(x, runs)| stat(x, &mean_of(&runs), runs.len())).collect())
            })
            .collect(),
    ))
}

fn lines(t: &Table, xc: usize, group: Option<usize>, axis: &XAxis, spec: &PlotSpec) -> anyhow::Result<Data> {
    let yc = t.column(if spec.y == "latency" { "latency_mean_ms" } else { &spec.y })?;
    if let Some(bad) = t.rows.iter().find(|r| number(&r[yc]).is_none()) {
        bail!("column `{}` is not numeric (value `{}`)", t.columns[yc], bad[yc]);
    }
    Ok(Data::Lines(
        t.groups(group)
            .into_iter()
            .map(|(g, rows)| {
                let pts = by_x(&rows, |r| axis.value(&r[xc], spec.x_scale), &[yc])
                    .into_iter()
                    .map(|(x, runs)| {
                        let ys: Vec<f64> = runs.iter().map(|v| v[0]).collect();
                        let (lo, hi) = (
                            ys.iter().copied().fold(f64::INFINITY, f64::min),
                            ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        );
                        Point {
                            x,
                            y: ys.iter().sum::<f64>() / ys.len() as f64,
                            spread: (ys.len() > 1).then_some((lo, hi)),
                        }
                    })
                    .collect();
                (g, pts)
            })
            .collect(),
    ))
}

/// The rows' values of `cols`, gathered by x (repeats together), sorted by x.
fn by_x(rows: &[&Vec<String>], x: impl Fn(&Vec<String>) -> f64, cols: &[usize]) -> Vec<(f64, Vec<Vec<f64>>)> {
    let mut acc: Vec<(f64, Vec<Vec<f64>>)> = Vec::new();
    for r in rows {
        let xv = x(r);
        let vals: Vec<f64> = cols.iter().map(|&c| number(&r[c]).unwrap_or(f64::NAN)).collect();
        match acc.iter_mut().find(|(ax, _)| *ax == xv) {
            Some((_, runs)) => runs.push(vals),
            None => acc.push((xv, vec![vals])),
        }
    }
    acc.sort_by(|a, b| a.0.total_cmp(&b.0));
    acc
}

fn mean_of(runs: &[Vec<f64>]) -> Vec<f64> {
    let n = runs.len() as f64;
    (0..runs[0].len()).map(|i| runs.iter().map(|r| r[i]).sum::<f64>() / n).collect()
}

fn labels(spec: &PlotSpec, xcol: &str, group: Option<&str>, t: &Table) -> render::Labels {
    let x = match spec.kind {
        Kind::Hist => "data-collection latency (ms)".to_string(),
        _ => spec.xlabel.clone().unwrap_or_else(|| axis::label_of(xcol)),
    };
    let y = spec.ylabel.clone().unwrap_or_else(|| match (spec.kind, spec.y.as_str()) {
        (Kind::Hist, _) => "share of events per bin".into(),
        (Kind::Box, _) => "data-collection latency (ms)".into(),
        (Kind::Line, "latency") => "mean data-collection latency (ms)".into(),
        (Kind::Line | Kind::Series, y) => t.column(y).map_or_else(|_| y.to_string(), |c| axis::label_of(&t.columns[c])),
    });
    let group = match spec.kind {
        Kind::Hist => Some(axis::name_of(xcol)),
        _ => group.map(axis::name_of),
    };
    render::Labels { x, y, group }
}

/// One latency distribution per (group, x): step curves of the share of events per bin. A bin
/// without events is drawn at zero (on a log axis, at its floor).
fn histograms(
    t: &Table,
    xc: usize,
    group: Option<usize>,
    spec: &PlotSpec,
) -> anyhow::Result<Vec<(String, Vec<Point>)>> {
    let dc = t.column("dir")?;
    let base = t.path.parent().unwrap_or(Path::new("."));
    let mut dists: Vec<(String, Vec<f64>)> = Vec::new();
    for (g, rows) in t.groups(group) {
        let mut by_x: Vec<(String, Vec<f64>)> = Vec::new();
        for r in rows {
            let samples = latencies_ms(&base.join(&r[dc]))?;
            match by_x.iter_mut().find(|(x, _)| *x == r[xc]) {
                Some((_, v)) => v.extend(samples),
                None => by_x.push((r[xc].clone(), samples)),
            }
        }
        for (x, v) in by_x {
            let value = number(&x).map_or(x.clone(), |n| axis::tick(n, axis::unit_of(&t.columns[xc])));
            dists.push((if g.is_empty() { value } else { format!("{g}, {value}") }, v));
        }
    }
    let all = || dists.iter().flat_map(|(_, v)| v.iter().copied());
    let (lo, hi) = (all().fold(f64::INFINITY, f64::min), all().fold(0.0, f64::max));
    if !hi.is_finite() || hi <= 0.0 {
        bail!("no latency samples to draw");
    }
    let bins = 60;
    let edges: Vec<f64> = if spec.log_x {
        let (a, b) = (lo.max(1e-3).ln(), (hi * 1.0001).ln());
        (0..=bins).map(|i| (a + (b - a) * i as f64 / bins as f64).exp()).collect()
    } else {
        (0..=bins).map(|i| hi * 1.0001 * i as f64 / bins as f64).collect()
    };
    Ok(dists
        .into_iter()
        .map(|(name, v)| {
            let mut count = vec![0usize; bins];
            for s in &v {
                let i = edges.partition_point(|e| e <= s).saturating_sub(1).min(bins - 1);
                count[i] += 1;
            }
            let n = v.len().max(1) as f64;
            let step = |x: f64, c: usize| Point { x, y: c as f64 / n, spread: None };
            let pts = count.iter().enumerate().flat_map(|(i, &c)| [step(edges[i], c), step(edges[i + 1], c)]).collect();
            (name, pts)
        })
        .collect())
}

/// Measured events' latencies of one point: from events.csv when the sweep kept per-event
/// records, otherwise from the HDR histogram in report.json.
fn latencies_ms(dir: &Path) -> anyhow::Result<Vec<f64>> {
    let events = dir.join("events.csv");
    if events.exists() {
        let mut r = csv::Reader::from_path(&events).with_context(|| format!("cannot read {}", events.display()))?;
        let h = r.headers()?.clone();
        let col =
            |name: &str| h.iter().position(|c| c == name).with_context(|| format!("{}: no `{name}`", events.display()));
        let (lat, measured) = (col("latency_ms")?, col("measured")?);
        let mut v = Vec::new();
        for rec in r.records() {
            let rec = rec.with_context(|| format!("{} is damaged", events.display()))?;
            if &rec[measured] == "true" {
                v.push(rec[lat].parse::<f64>().with_context(|| format!("{}: bad latency", events.display()))?);
            }
        }
        return Ok(v);
    }
    let path = dir.join("report.json");
    let report: RunReport = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("cannot read {} (or events.csv)", path.display()))?,
    )
    .with_context(|| format!("{} is damaged", path.display()))?;
    let buckets = crate::columnar::latency_buckets(&report).with_context(|| format!("{}", path.display()))?;
    Ok(buckets.into_iter().flat_map(|(_, high, n)| std::iter::repeat_n(high, n as usize)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep table of one series over x = 1, 2, 4 in a fresh folder.
    fn table(name: &str) -> (std::path::PathBuf, Table) {
        let dir = std::env::temp_dir().join(format!("daqnet-plot-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = "point,series,repeat,seed,spines,goodput_bps\n0,a,0,1,1,5e9\n1,a,0,1,2,9e9\n2,a,0,1,4,17e9\n";
        std::fs::write(dir.join("table.csv"), csv).unwrap();
        let t = Table::read(&dir.join("table.csv")).unwrap();
        (dir, t)
    }

    fn spec(extra: &str) -> PlotSpec {
        toml::from_str(&format!("kind = \"line\"\nx = \"spines\"\ny = \"goodput_bps\"\n{extra}")).unwrap()
    }

    #[test]
    fn a_sources_values_are_their_own_marked_series() {
        let (dir, t) = table("reference");
        let triangles = |svg: &str| svg.matches("<polygon").count();
        draw(&t, &spec(""), &dir.join("plain.svg")).unwrap();
        let plain = std::fs::read_to_string(dir.join("plain.svg")).unwrap();
        let refs = r#"reference = [{ name = "[SRC] Fig. 1", points = [[1, 6e9], [4, 16e9]] }, { name = "[SRC] Fig. 2", points = [[2, 8e9]] }]"#;
        draw(&t, &spec(refs), &dir.join("refs.svg")).unwrap();
        let with = std::fs::read_to_string(dir.join("refs.svg")).unwrap();
        assert!(with.contains("[SRC] Fig. 1") && with.contains("[SRC] Fig. 2"), "both named in the legend");
        // Two triangles on the chart and one in the legend; the second source is drawn as crosses.
        assert_eq!(triangles(&with), triangles(&plain) + 3);
        // The ungrouped data has no legend entry: its three dots and no more.
        let dots = |svg: &str| svg.matches("<circle").count();
        assert_eq!((dots(&plain), dots(&with)), (3, 3));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn reference_values_that_cannot_be_drawn_are_refused() {
        let (dir, t) = table("bad-reference");
        let out = dir.join("x.svg");
        let none = r#"reference = [{ name = "[SRC]", points = [] }]"#;
        let e = draw(&t, &spec(none), &out).unwrap_err().to_string();
        assert!(e.contains("reference `[SRC]` has no points"), "{e}");
        let on_hist = r#"kind = "hist""#.to_string() + "\n" + r#"reference = [{ name = "[SRC]", points = [[1, 2]] }]"#;
        let hist: PlotSpec = toml::from_str(&format!("x = \"spines\"\n{on_hist}")).unwrap();
        let e = draw(&t, &hist, &out).unwrap_err().to_string();
        assert!(e.contains("reference values go on box and line figures"), "{e}");
        let by_series = spec(r#"reference = [{ name = "[SRC]", points = [[1, 2]] }]"#);
        let e = draw(&t, &PlotSpec { x: "series".into(), ..by_series }, &out).unwrap_err().to_string();
        assert!(e.contains("need a numeric x column"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
