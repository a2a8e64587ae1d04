//! `daqnet plot`: figures from a sweep table with plotters — [ATLAS-DC]'s box style (bullet =
//! mean, box = quartiles, whiskers = p1 and p99), lines, and latency histograms from per-event
//! records. PNG or SVG by the output file's extension.

use crate::table::{number, Table};
use anyhow::{bail, Context};
use daqnet_core::report::RunReport;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Once;

/// What kind of figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Latency per x: bullet = mean, box = quartiles, whiskers = p1 and p99 ([ATLAS-DC] Fig. 5).
    #[default]
    Box,
    /// One column against x, one line per group (repeats averaged).
    Line,
    /// Latency distribution of each point, from its events.csv (or its report's HDR histogram).
    Hist,
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
    /// `COLUMN=VALUE` filters; only matching rows are drawn.
    #[serde(default, rename = "where")]
    pub filters: Vec<String>,
    /// Logarithmic x axis.
    #[serde(default)]
    pub log_x: bool,
    /// Logarithmic y axis.
    #[serde(default)]
    pub log_y: bool,
    /// Multiply x values by this before drawing (e.g. 1e-6 to show bytes as MB).
    #[serde(default = "one")]
    pub x_scale: f64,
    /// Title above the figure.
    #[serde(default)]
    pub title: Option<String>,
    /// X axis label (default: the column name).
    #[serde(default)]
    pub xlabel: Option<String>,
    /// Y axis label (default: from `y`).
    #[serde(default)]
    pub ylabel: Option<String>,
}

fn default_y() -> String {
    "latency".into()
}

fn one() -> f64 {
    1.0
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Box statistics of one point, in ms.
#[derive(Debug, Clone, Copy)]
struct Stat {
    x: f64,
    mean: f64,
    p1: f64,
    q1: f64,
    median: f64,
    q3: f64,
    p99: f64,
}

/// Named curves of (x, y) points.
type Curves = Vec<(String, Vec<(f64, f64)>)>;

enum Data {
    Boxes(Vec<(String, Vec<Stat>)>),
    Lines(Curves),
}

/// The x axis: numbers, or categories placed at 1, 2, 3… with their names as tick labels.
struct XAxis {
    categories: Option<Vec<String>>,
}

impl XAxis {
    fn of(cells: &[&str]) -> XAxis {
        if cells.iter().all(|c| number(c).is_some()) {
            return XAxis { categories: None };
        }
        let mut cats: Vec<String> = Vec::new();
        for c in cells {
            if !cats.iter().any(|k| k == c) {
                cats.push(c.to_string());
            }
        }
        XAxis { categories: Some(cats) }
    }

    fn value(&self, cell: &str, scale: f64) -> f64 {
        match &self.categories {
            None => number(cell).expect("checked numeric") * scale,
            Some(c) => (c.iter().position(|k| k == cell).expect("seen category") + 1) as f64,
        }
    }
}

/// Draws `spec` from `table` into `out` (`.png` or `.svg`).
pub fn draw(table: &Table, spec: &PlotSpec, out: &Path) -> anyhow::Result<()> {
    let t = table.filter(&spec.filters)?;
    let xc = t.column(&spec.x)?;
    let group = spec.group.as_deref().map(|g| t.column(g)).transpose()?;
    let cells: Vec<&str> = t.rows.iter().map(|r| r[xc].as_str()).collect();
    let axis = XAxis::of(&cells);
    if spec.log_x && axis.categories.is_some() {
        bail!("--log-x needs a numeric x column; `{}` has values like `{}`", spec.x, cells[0]);
    }
    let data =
        match spec.kind {
            Kind::Box => {
                if spec.y != "latency" {
                    bail!("box plots show the latency statistics (--y latency); use --kind line for `{}`", spec.y);
                }
                let mut cols = Vec::new();
                for s in ["mean", "p1", "q1", "median", "q3", "p99"] {
                    cols.push(t.column(&format!("latency_{s}_ms")).context("box plots need a sweep's table.csv")?);
                }
                let [mean, p1, q1, median, q3, p99] = cols[..] else { unreachable!("six columns pushed") };
                Data::Boxes(
                    t.groups(group)
                        .into_iter()
                        .map(|(g, rows)| {
                            let pts = average_by_x(
                                &rows,
                                |r| axis.value(&r[xc], spec.x_scale),
                                &[mean, p1, q1, median, q3, p99],
                            )
                            .into_iter()
                            .map(|(x, v)| Stat { x, mean: v[0], p1: v[1], q1: v[2], median: v[3], q3: v[4], p99: v[5] })
                            .collect();
                            (g, pts)
                        })
                        .collect(),
                )
            }
            Kind::Line => {
                let yc = t.column(if spec.y == "latency" { "latency_mean_ms" } else { &spec.y })?;
                if let Some(bad) = t.rows.iter().find(|r| number(&r[yc]).is_none()) {
                    bail!("column `{}` is not numeric (value `{}`)", t.columns[yc], bad[yc]);
                }
                Data::Lines(
                    t.groups(group)
                        .into_iter()
                        .map(|(g, rows)| {
                            let pts = average_by_x(&rows, |r| axis.value(&r[xc], spec.x_scale), &[yc]);
                            (g, pts.into_iter().map(|(x, v)| (x, v[0])).collect())
                        })
                        .collect(),
                )
            }
            Kind::Hist => Data::Lines(histograms(&t, xc, group, spec)?),
        };
    let (xlabel, ylabel) = labels(spec, &t.columns[xc]);
    register_font();
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let size = (1000, 640);
    match out.extension().and_then(|e| e.to_str()) {
        Some("png") => {
            frame(BitMapBackend::new(out, size).into_drawing_area(), spec, &data, &axis, (&xlabel, &ylabel))?
        }
        Some("svg") => frame(SVGBackend::new(out, size).into_drawing_area(), spec, &data, &axis, (&xlabel, &ylabel))?,
        _ => bail!("-o {}: the figure file must end in .png or .svg", out.display()),
    }
    Ok(())
}

fn labels(spec: &PlotSpec, xcol: &str) -> (String, String) {
    let x = match spec.kind {
        Kind::Hist => "data-collection latency (ms)".to_string(),
        _ => spec.xlabel.clone().unwrap_or_else(|| with_unit(xcol, spec.x_scale)),
    };
    let y = spec.ylabel.clone().unwrap_or_else(|| match (spec.kind, spec.y.as_str()) {
        (Kind::Hist, _) => "share of events per bin".into(),
        (Kind::Box, _) => "data-collection latency (ms)".into(),
        (Kind::Line, "latency") => "mean data-collection latency (ms)".into(),
        (Kind::Line, y) => with_unit(y, 1.0),
    });
    (x, y)
}

/// An axis label from a column name and its unit suffix, scaled: `…port_bytes` with scale
/// 1e-6 → `port_bytes (MB)`; `goodput_bps` → `goodput_bps (b/s)`.
fn with_unit(col: &str, scale: f64) -> String {
    let units: &[(&str, &[(f64, &str)])] = &[
        ("_bytes", &[(1.0, "bytes"), (1e-3, "kB"), (1e-6, "MB"), (1e-9, "GB")]),
        ("_bps", &[(1.0, "b/s"), (1e-6, "Mb/s"), (1e-9, "Gb/s")]),
        ("_ns", &[(1.0, "ns"), (1e-3, "µs"), (1e-6, "ms"), (1e-9, "s")]),
        ("_ms", &[(1.0, "ms"), (1e-3, "s")]),
        ("_hz", &[(1.0, "Hz"), (1e-3, "kHz")]),
        ("_s", &[(1.0, "s"), (1e3, "ms")]),
    ];
    let unit = units.iter().find(|(suffix, _)| col.ends_with(suffix)).and_then(|(_, scales)| {
        scales.iter().find(|(f, _)| (f / scale - 1.0).abs() < 1e-9).map(|(_, u)| u.to_string())
    });
    match unit {
        Some(u) => format!("{col} ({u})"),
        None if scale != 1.0 => format!("{col} (× {scale})"),
        None => col.to_string(),
    }
}

/// Mean of each column over the rows that share an x (repeats), sorted by x.
fn average_by_x(rows: &[&Vec<String>], x: impl Fn(&Vec<String>) -> f64, cols: &[usize]) -> Vec<(f64, Vec<f64>)> {
    let mut acc: Vec<(f64, Vec<f64>, usize)> = Vec::new();
    for r in rows {
        let xv = x(r);
        let vals: Vec<f64> = cols.iter().map(|&c| number(&r[c]).unwrap_or(f64::NAN)).collect();
        match acc.iter_mut().find(|(ax, _, _)| *ax == xv) {
            Some((_, sum, n)) => {
                sum.iter_mut().zip(&vals).for_each(|(s, v)| *s += v);
                *n += 1;
            }
            None => acc.push((xv, vals, 1)),
        }
    }
    acc.sort_by(|a, b| a.0.total_cmp(&b.0));
    acc.into_iter().map(|(x, s, n)| (x, s.into_iter().map(|v| v / n as f64).collect())).collect()
}

/// One latency distribution per (group, x): step curves of the share of events per bin.
fn histograms(t: &Table, xc: usize, group: Option<usize>, spec: &PlotSpec) -> anyhow::Result<Curves> {
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
            let name = if g.is_empty() { format!("{} = {x}", t.columns[xc]) } else { format!("{g}, {x}") };
            dists.push((name, v));
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
            let mut pts = Vec::with_capacity(2 * bins);
            for (i, c) in count.iter().enumerate() {
                let share = *c as f64 / n;
                pts.push((edges[i], share));
                pts.push((edges[i + 1], share));
            }
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
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD.decode(&report.latency_ms.hdr_us_base64)?;
    let h: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
    Ok(h.iter_recorded()
        .flat_map(|v| std::iter::repeat_n(v.value_iterated_to() as f64 / 1000.0, v.count_at_value() as usize))
        .collect())
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu Sans (free licence, see assets/), embedded so plots need no system fonts.
        plotters::style::register_font("sans-serif", FontStyle::Normal, include_bytes!("../assets/DejaVuSans.ttf"))
            .unwrap_or_else(|_| panic!("the embedded font is a valid TrueType font"));
    });
}

fn bounds(data: &Data) -> ((f64, f64), (f64, f64)) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    match data {
        Data::Boxes(g) => g.iter().flat_map(|(_, v)| v).for_each(|s| {
            xs.push(s.x);
            ys.extend([s.p1, s.p99, s.mean]);
        }),
        Data::Lines(g) => g.iter().flat_map(|(_, v)| v).for_each(|&(x, y)| {
            xs.push(x);
            ys.push(y);
        }),
    }
    let range = |v: &[f64]| {
        let v = v.iter().copied().filter(|x| x.is_finite());
        (v.clone().fold(f64::INFINITY, f64::min), v.fold(f64::NEG_INFINITY, f64::max))
    };
    (range(&xs), range(&ys))
}

/// Pads a data range; on a log axis keeps it positive.
fn pad((lo, hi): (f64, f64), log: bool, min_positive: f64) -> (f64, f64) {
    if log {
        let lo = if lo > 0.0 { lo } else { min_positive };
        let hi = hi.max(lo * 1.01);
        // Start at a power of ten: plotters puts log ticks only from the first one upwards.
        (10f64.powf((lo / 1.15).log10().floor()), hi * 1.15)
    } else {
        let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
        (if lo >= 0.0 && lo - 0.05 * span < 0.0 { 0.0 } else { lo - 0.05 * span }, hi + 0.05 * span)
    }
}

fn min_positive(data: &Data, of_x: bool) -> f64 {
    let v: Vec<f64> = match data {
        Data::Boxes(g) => g.iter().flat_map(|(_, v)| v).map(|s| if of_x { s.x } else { s.p1 }).collect(),
        Data::Lines(g) => g.iter().flat_map(|(_, v)| v).map(|&(x, y)| if of_x { x } else { y }).collect(),
    };
    v.into_iter().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min).min(1.0)
}

fn frame<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    spec: &PlotSpec,
    data: &Data,
    axis: &XAxis,
    labels: (&str, &str),
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let (xr, yr) = bounds(data);
    let width = match data {
        Data::Boxes(g) => box_width(&g.iter().flat_map(|(_, v)| v.iter().map(|s| s.x)).collect::<Vec<_>>(), spec.log_x),
        Data::Lines(_) => 0.0,
    };
    let (x0, x1) = match &axis.categories {
        Some(c) => (0.5, c.len() as f64 + 0.5),
        None if width > 0.0 && spec.log_x => (xr.0 * (-0.6 * width).exp(), xr.1 * (0.6 * width).exp()),
        None if width > 0.0 => (xr.0 - 0.6 * width, xr.1 + 0.6 * width),
        None => pad(xr, spec.log_x, min_positive(data, true)),
    };
    let (y0, y1) = pad(yr, spec.log_y, min_positive(data, false));
    let mut b = ChartBuilder::on(&root);
    b.margin(18).x_label_area_size(55).y_label_area_size(75);
    if let Some(t) = &spec.title {
        b.caption(t, ("sans-serif", 22));
    }
    match (spec.log_x, spec.log_y) {
        (false, false) => chart(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?, spec, data, axis, width, labels),
        (true, false) => {
            chart(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(err)?, spec, data, axis, width, labels)
        }
        (false, true) => {
            chart(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(err)?, spec, data, axis, width, labels)
        }
        (true, true) => chart(
            b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale()).map_err(err)?,
            spec,
            data,
            axis,
            width,
            labels,
        ),
    }?;
    root.present().map_err(err)
}

fn chart<'a, DB, X, Y>(
    mut c: ChartContext<'a, DB, Cartesian2d<X, Y>>,
    spec: &PlotSpec,
    data: &Data,
    axis: &XAxis,
    width: f64,
    (xlabel, ylabel): (&str, &str),
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
    let category = |v: &f64| match &axis.categories {
        Some(c) if (v - v.round()).abs() < 1e-6 && v.round() >= 1.0 => {
            c.get(v.round() as usize - 1).cloned().unwrap_or_default()
        }
        Some(_) => String::new(),
        None => format_tick(*v),
    };
    let mut mesh = c.configure_mesh();
    mesh.x_desc(xlabel).y_desc(ylabel).label_style(("sans-serif", 15)).axis_desc_style(("sans-serif", 17));
    mesh.x_label_formatter(&category).y_label_formatter(&|v| format_tick(*v)).light_line_style(WHITE.mix(0.0));
    if let Some(cats) = &axis.categories {
        mesh.x_labels(cats.len() * 2 + 1);
    }
    if spec.log_y {
        mesh.y_labels(20);
    }
    if spec.log_x {
        mesh.x_labels(20);
    }
    mesh.draw().map_err(err)?;
    let named = match data {
        Data::Boxes(g) => g.iter().any(|(n, _)| !n.is_empty()),
        Data::Lines(g) => g.iter().any(|(n, _)| !n.is_empty()),
    };
    match data {
        Data::Boxes(groups) => {
            let n = groups.len() as f64;
            for (k, (name, stats)) in groups.iter().enumerate() {
                let color = COLORS[k % COLORS.len()];
                // Position of group k's box at x, and its half width: additive on a linear
                // axis, multiplicative on a log axis.
                let at = |x: f64, d: f64| {
                    let o = (k as f64 + 0.5 - n / 2.0) * width / n + d * width / n * 0.4;
                    if spec.log_x {
                        x * o.exp()
                    } else {
                        x + o
                    }
                };
                c.draw_series(
                    stats.iter().map(|s| {
                        Rectangle::new([(at(s.x, -1.0), s.q1), (at(s.x, 1.0), s.q3)], color.mix(0.25).filled())
                    }),
                )
                .map_err(err)?;
                c.draw_series(
                    stats
                        .iter()
                        .map(|s| Rectangle::new([(at(s.x, -1.0), s.q1), (at(s.x, 1.0), s.q3)], color.stroke_width(1))),
                )
                .map_err(err)?;
                c.draw_series(stats.iter().flat_map(|s| {
                    let (l, m, r) = (at(s.x, -1.0), at(s.x, 0.0), at(s.x, 1.0));
                    let (wl, wr) = (at(s.x, -0.5), at(s.x, 0.5));
                    [
                        vec![(l, s.median), (r, s.median)],
                        vec![(m, s.p1), (m, s.q1)],
                        vec![(m, s.q3), (m, s.p99)],
                        vec![(wl, s.p1), (wr, s.p1)],
                        vec![(wl, s.p99), (wr, s.p99)],
                    ]
                    .map(|p| PathElement::new(p, color.stroke_width(1)))
                }))
                .map_err(err)?;
                c.draw_series(LineSeries::new(stats.iter().map(|s| (at(s.x, 0.0), s.mean)), color.mix(0.5)))
                    .map_err(err)?;
                let legend = c
                    .draw_series(stats.iter().map(|s| Circle::new((at(s.x, 0.0), s.mean), 4, color.filled())))
                    .map_err(err)?;
                if named {
                    legend.label(name.as_str()).legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
                }
            }
        }
        Data::Lines(groups) => {
            let markers = spec.kind != Kind::Hist;
            let floor = c.y_range().start;
            for (k, (name, pts)) in groups.iter().enumerate() {
                let color = COLORS[k % COLORS.len()];
                // A point a log axis cannot show breaks the line rather than being bridged by a
                // misleading slope; an empty histogram bin drops to the floor of the axis.
                let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for &(x, y) in pts {
                    let y = if spec.kind == Kind::Hist && spec.log_y && y <= 0.0 { floor } else { y };
                    if (!spec.log_x || x > 0.0) && (!spec.log_y || y > 0.0) {
                        runs.last_mut().expect("non-empty").push((x, y));
                    } else if !runs.last().expect("non-empty").is_empty() {
                        runs.push(Vec::new());
                    }
                }
                let line = c
                    .draw_series(runs.iter().map(|r| PathElement::new(r.clone(), color.stroke_width(2))))
                    .map_err(err)?;
                if named {
                    line.label(name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
                }
                let visible = runs.concat();
                if markers {
                    c.draw_series(visible.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
                }
            }
        }
    }
    if named {
        c.configure_series_labels()
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .position(if spec.kind == Kind::Hist {
                SeriesLabelPosition::UpperRight
            } else {
                SeriesLabelPosition::UpperLeft
            })
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// Width available for all groups' boxes at one x: 70% of the smallest gap between x values
/// (in log space on a log axis), and at most 8% of the whole x span.
fn box_width(xs: &[f64], log: bool) -> f64 {
    let mut v: Vec<f64> = xs.iter().map(|&x| if log { x.ln() } else { x }).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    let gap = v.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
    let span = v.last().zip(v.first()).map_or(0.0, |(a, b)| a - b);
    if gap.is_finite() {
        (0.7 * gap).min(0.08 * span)
    } else if log {
        0.2
    } else {
        v.first().map_or(1.0, |x| x.abs().max(1.0)) * 0.2
    }
}

/// Tick labels without float noise: 0.30000000000000004 → 0.3, 2400.0 → 2400.
fn format_tick(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        return format!("{v:.1e}");
    }
    let s = format!("{:.3}", v);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_carry_units() {
        assert_eq!(
            with_unit("network.rack_switch.buffer.port_bytes", 1e-6),
            "network.rack_switch.buffer.port_bytes (MB)"
        );
        assert_eq!(with_unit("goodput_bps", 1e-9), "goodput_bps (Gb/s)");
        assert_eq!(with_unit("latency_p99_ms", 1.0), "latency_p99_ms (ms)");
        assert_eq!(with_unit("system.credits_per_node", 1.0), "system.credits_per_node");
        assert_eq!(with_unit("system.credits_per_node", 0.5), "system.credits_per_node (× 0.5)");
    }

    #[test]
    fn ticks_have_no_float_noise() {
        assert_eq!(format_tick(0.30000000000000004), "0.3");
        assert_eq!(format_tick(2400.0), "2400");
        assert_eq!(format_tick(2.5e7), "2.5e7");
    }
}
