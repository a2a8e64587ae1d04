//! Drawing a prepared figure with plotters: the chart (box, line or step curves, linear or
//! log axes), the legend in a panel beside it (never over the data), and a note under it that
//! says what the boxes mean. PNG and SVG straight from plotters; PDF from the SVG (svg2pdf,
//! with the embedded font).

use super::axis::{self, Unit};
use super::{Data, Kind, PlotSpec, XAxis};
use anyhow::{bail, Context};
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// The embedded font: DejaVu Sans (free licence, see assets/), so figures need no system fonts.
const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

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

/// The output format, by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A bitmap.
    Png,
    /// Vector, for the web.
    Svg,
    /// Vector, for slides and papers.
    Pdf,
}

impl Format {
    /// The format `out` asks for.
    pub fn of(out: &Path) -> anyhow::Result<Format> {
        match out.extension().and_then(|e| e.to_str()) {
            Some("png") => Ok(Format::Png),
            Some("svg") => Ok(Format::Svg),
            Some("pdf") => Ok(Format::Pdf),
            _ => bail!("-o {}: the figure file must end in .png, .svg or .pdf", out.display()),
        }
    }
}

/// Axis labels, and the legend's title.
pub struct Labels {
    /// X axis.
    pub x: String,
    /// Y axis.
    pub y: String,
    /// What the series are (the grouping column's name).
    pub group: Option<String>,
}

/// Everything a figure needs.
pub struct Figure<'a> {
    pub spec: &'a PlotSpec,
    pub data: &'a Data,
    pub axis: &'a XAxis,
    pub y_unit: Unit,
    pub labels: Labels,
}

impl Figure<'_> {
    /// The reference values as drawn: x scaled like the data's.
    fn references(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.spec.reference.iter().flat_map(|r| r.points.iter().map(|[x, y]| (x * self.spec.x_scale, *y)))
    }
}

/// Draws `f` into `out` in `format`.
pub fn figure(format: Format, out: &Path, f: &Figure) -> anyhow::Result<()> {
    register_font();
    let (w, h) = f.spec.size;
    match format {
        Format::Png => {
            let k = f.spec.dpi as f64 / 96.0;
            let size = ((w as f64 * k) as u32, (h as f64 * k) as u32);
            layout(BitMapBackend::new(out, size).into_drawing_area(), f, k)
        }
        Format::Svg => layout(SVGBackend::new(out, (w, h)).into_drawing_area(), f, 1.0),
        Format::Pdf => {
            let mut svg = String::new();
            layout(SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area(), f, 1.0)?;
            std::fs::write(out, pdf(&svg)?).with_context(|| format!("cannot write {}", out.display()))
        }
    }
}

fn pdf(svg: &str) -> anyhow::Result<Vec<u8>> {
    let mut opt = svg2pdf::usvg::Options::default();
    opt.fontdb_mut().load_font_data(FONT.to_vec());
    opt.fontdb_mut().set_sans_serif_family("DejaVu Sans");
    let tree = svg2pdf::usvg::Tree::from_str(svg, &opt).context("the figure's SVG does not parse")?;
    svg2pdf::to_pdf(&tree, svg2pdf::ConversionOptions::default(), svg2pdf::PageOptions::default())
        .map_err(|e| anyhow::anyhow!("cannot convert the figure to PDF: {e}"))
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded font is a valid TrueType font"));
    });
}

/// What the figure's note under the chart says.
fn note(f: &Figure) -> Option<String> {
    match f.spec.kind {
        Kind::Box => {
            let runs = f.data.runs();
            let averaged = if runs > 1 { format!("; each the mean over {runs} runs") } else { String::new() };
            Some(format!("bullet: mean · box: quartiles and median · whiskers: 1st and 99th percentile{averaged}"))
        }
        Kind::Line if matches!(f.data, Data::Lines(ref g) if g.iter().any(|(_, p)| p.iter().any(|p| p.spread.is_some()))) => {
            Some("points: mean over the runs · bars: lowest to highest run".into())
        }
        _ => None,
    }
}

/// The figure's areas: the chart, the legend panel beside it, the note under it.
fn layout<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, f: &Figure, k: f64) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let px = |v: f64| (v * k).round() as i32;
    let note = note(f);
    let (main, bottom) = root.split_vertically(h as i32 - if note.is_some() { px(26.0) } else { 0 });
    if let Some(n) = &note {
        bottom
            .draw_text(
                n,
                &("sans-serif", px(14.0)).into_text_style(&bottom).color(&BLACK.mix(0.7)),
                (px(18.0), px(4.0)),
            )
            .map_err(err)?;
    }
    // Every series drawn, in order: the data's groups, then the sources' values. An unnamed
    // group (an ungrouped figure) has no legend entry.
    let names: Vec<&str> = f.data.names().into_iter().chain(f.spec.reference.iter().map(|r| r.name.as_str())).collect();
    let named = || names.iter().filter(|n| !n.is_empty());
    let longest = named().map(|n| n.chars().count()).chain(f.labels.group.iter().map(|g| g.chars().count())).max();
    let legend_w = match longest {
        Some(c) if named().next().is_some() => px(40.0 + 8.2 * c.min(40) as f64),
        _ => 0,
    };
    let (chart, legend) = main.split_horizontally(w as i32 - legend_w);
    let styles = chart_area(chart, f, k)?;
    if legend_w > 0 {
        let entries: Vec<(&str, SeriesStyle)> = names.into_iter().zip(styles).filter(|(n, _)| !n.is_empty()).collect();
        draw_legend(&legend, f, &entries, k).map_err(err)?;
    }
    root.present().map_err(err)
}

/// How each series is drawn, for the legend.
struct SeriesStyle {
    color: RGBColor,
    mark: Mark,
}

/// A series' mark in the legend.
#[derive(Clone, Copy)]
enum Mark {
    /// A dense curve.
    Line,
    /// daqnet's points.
    Dot,
    /// The i-th source document's values (`open_mark!`).
    Open(usize),
}

/// Binds `$e` to the i-th reference series' mark at `$at` — an open triangle, cross, square or
/// circle of radius `$r` — and evaluates `$draw` (each shape is its own type).
macro_rules! open_mark {
    ($i:expr, $at:expr, $r:expr, $style:expr, |$e:ident| $draw:expr) => {{
        let (at, r, style) = ($at, $r, $style);
        match $i % 4 {
            0 => {
                let $e = EmptyElement::at(at) + TriangleMarker::new((0, 0), r + r / 3, style);
                $draw
            }
            1 => {
                let $e = EmptyElement::at(at) + Cross::new((0, 0), r, style);
                $draw
            }
            2 => {
                let $e = EmptyElement::at(at) + Rectangle::new([(-r, -r), (r, r)], style);
                $draw
            }
            _ => {
                let $e = EmptyElement::at(at) + Circle::new((0, 0), r, style);
                $draw
            }
        }
    }};
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    f: &Figure,
    entries: &[(&str, SeriesStyle)],
    k: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let px = |v: f64| (v * k).round() as i32;
    let text = ("sans-serif", px(15.0)).into_text_style(area);
    let mut y = px(60.0);
    if let Some(g) = &f.labels.group {
        area.draw_text(g, &("sans-serif", px(15.0)).into_text_style(area).color(&BLACK.mix(0.7)), (px(8.0), y))?;
        y += px(24.0);
    }
    for (name, s) in entries {
        let mid = y + px(8.0);
        match s.mark {
            Mark::Line => area
                .draw(&PathElement::new(vec![(px(8.0), mid), (px(30.0), mid)], s.color.stroke_width(px(2.0) as u32)))?,
            Mark::Dot => area.draw(&Circle::new((px(19.0), mid), px(5.0), s.color.filled()))?,
            Mark::Open(i) => {
                open_mark!(i, (px(19.0), mid), px(5.0), s.color.stroke_width(px(2.0) as u32), |e| area.draw(&e))?
            }
        }
        area.draw_text(name, &text, (px(38.0), y))?;
        y += px(22.0);
    }
    Ok(())
}

/// The x and y ranges of the data and the reference values (finite values only).
fn bounds(f: &Figure) -> ((f64, f64), (f64, f64)) {
    let (mut xs, mut ys): (Vec<f64>, Vec<f64>) = f.references().unzip();
    match f.data {
        Data::Boxes(g) => g.iter().flat_map(|(_, v)| v).for_each(|s| {
            xs.push(s.x);
            ys.extend([s.p1, s.p99, s.mean]);
        }),
        Data::Lines(g) => g.iter().flat_map(|(_, v)| v).for_each(|p| {
            xs.push(p.x);
            ys.push(p.y);
            if let Some((lo, hi)) = p.spread {
                ys.extend([lo, hi]);
            }
        }),
    }
    let range = |v: &[f64]| {
        let v = v.iter().copied().filter(|x| x.is_finite());
        (v.clone().fold(f64::INFINITY, f64::min), v.fold(f64::NEG_INFINITY, f64::max))
    };
    (range(&xs), range(&ys))
}

/// Pads a data range; on a log axis keeps it positive, and starts and ends it at a tick when
/// the axis is ticked at 1, 2 and 5 times the powers of ten (`decades`).
fn pad((lo, hi): (f64, f64), log: bool, decades: bool, min_positive: f64) -> (f64, f64) {
    if log {
        let lo = if lo > 0.0 { lo } else { min_positive };
        let hi = hi.max(lo * 1.01);
        match decades {
            true => (axis::log_floor(lo / 1.05), axis::log_ceil(hi * 1.05)),
            false => (lo / 1.15, hi * 1.15),
        }
    } else {
        let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
        (if lo >= 0.0 && lo - 0.05 * span < 0.0 { 0.0 } else { lo - 0.05 * span }, hi + 0.05 * span)
    }
}

/// The x values a figure's data sits at, when they are few enough to tick each (a sweep's
/// buffer sizes: 100 kB, 200 kB, 400 kB…); None for a histogram or a dense axis. A value
/// closer to the previous tick than a twenty-fifth of the axis (14 beside 16 on a log axis from 2
/// to 128) gets no tick of its own, so that labels never run together.
fn x_keys(data: &Data, kind: Kind, log: bool) -> Option<Vec<f64>> {
    let mut xs: Vec<f64> = match data {
        Data::Boxes(g) => g.iter().flat_map(|(_, v)| v.iter().map(|s| s.x)).collect(),
        Data::Lines(_) if matches!(kind, Kind::Hist | Kind::Series) => return None,
        Data::Lines(g) => g.iter().flat_map(|(_, v)| v.iter().map(|p| p.x)).collect(),
    };
    xs.retain(|x| *x > 0.0);
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() > 12 {
        return None;
    }
    let at = |x: f64| if log { x.ln() } else { x };
    let span = at(*xs.last()?) - at(xs[0]);
    let mut keys: Vec<f64> = Vec::with_capacity(xs.len());
    for x in xs {
        if keys.last().is_none_or(|&k| at(x) - at(k) >= span / 25.0) {
            keys.push(x);
        }
    }
    Some(keys)
}

fn min_positive(data: &Data, of_x: bool) -> f64 {
    let v: Vec<f64> = match data {
        Data::Boxes(g) => g.iter().flat_map(|(_, v)| v).map(|s| if of_x { s.x } else { s.p1 }).collect(),
        Data::Lines(g) => g.iter().flat_map(|(_, v)| v).map(|p| if of_x { p.x } else { p.y }).collect(),
    };
    v.into_iter().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min).min(1.0)
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

/// The chart proper; returns how each series was drawn.
fn chart_area<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, f: &Figure, k: f64) -> anyhow::Result<Vec<SeriesStyle>>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
    let spec = f.spec;
    let (xr, yr) = bounds(f);
    let width = match f.data {
        Data::Boxes(g) => box_width(&g.iter().flat_map(|(_, v)| v.iter().map(|s| s.x)).collect::<Vec<_>>(), spec.log_x),
        Data::Lines(_) => 0.0,
    };
    let keys = x_keys(f.data, spec.kind, spec.log_x);
    let (x0, x1) = match &f.axis.categories {
        Some(c) => (0.5, c.len() as f64 + 0.5),
        None if width > 0.0 && spec.log_x => (xr.0 * (-0.6 * width).exp(), xr.1 * (0.6 * width).exp()),
        None if width > 0.0 => (xr.0 - 0.6 * width, xr.1 + 0.6 * width),
        None => pad(xr, spec.log_x, keys.is_none(), min_positive(f.data, true)),
    };
    let (y0, y1) = pad(yr, spec.log_y, true, min_positive(f.data, false));
    let x_ticks = || keys.clone().unwrap_or_else(|| axis::log_ticks(x0, x1));
    let px = |v: f64| (v * k).round() as u32;
    let mut b = ChartBuilder::on(&area);
    b.margin(px(18.0)).x_label_area_size(px(55.0)).y_label_area_size(px(92.0));
    if let Some(t) = &spec.title {
        b.caption(t, ("sans-serif", px(22.0) as i32));
    }
    let c = Chart { spec, f, width, k };
    match (spec.log_x, spec.log_y) {
        (false, false) => c.draw(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?),
        (true, false) => c.draw(b.build_cartesian_2d(log(x0, x1, x_ticks()), y0..y1).map_err(err)?),
        (false, true) => c.draw(b.build_cartesian_2d(x0..x1, log(y0, y1, axis::log_ticks(y0, y1))).map_err(err)?),
        (true, true) => {
            c.draw(b.build_cartesian_2d(log(x0, x1, x_ticks()), log(y0, y1, axis::log_ticks(y0, y1))).map_err(err)?)
        }
    }
}

/// A log axis ticked at `ticks` (plotters' own log ticks repeat labels once rounded to a
/// unit: two "100 kB" on one axis).
fn log(lo: f64, hi: f64, ticks: Vec<f64>) -> WithKeyPoints<LogCoord<f64>> {
    (lo..hi).log_scale().with_key_points(ticks)
}

struct Chart<'a> {
    spec: &'a PlotSpec,
    f: &'a Figure<'a>,
    width: f64,
    k: f64,
}

impl Chart<'_> {
    fn draw<'c, DB, X, Y>(&self, mut c: ChartContext<'c, DB, Cartesian2d<X, Y>>) -> anyhow::Result<Vec<SeriesStyle>>
    where
        DB: DrawingBackend + 'c,
        DB::ErrorType: 'static,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing failed: {e:?}");
        let (spec, f) = (self.spec, self.f);
        let xtick = |v: &f64| match &f.axis.categories {
            Some(c) if (v - v.round()).abs() < 1e-6 && v.round() >= 1.0 => {
                c.get(v.round() as usize - 1).cloned().unwrap_or_default()
            }
            Some(_) => String::new(),
            None => axis::tick(*v, f.axis.unit),
        };
        let ytick = |v: &f64| axis::tick(*v, f.y_unit);
        let font = |s: f64| ("sans-serif", (s * self.k).round() as i32);
        let mut mesh = c.configure_mesh();
        mesh.x_desc(&f.labels.x).y_desc(&f.labels.y).label_style(font(15.0)).axis_desc_style(font(17.0));
        mesh.x_label_formatter(&xtick).y_label_formatter(&ytick).light_line_style(WHITE.mix(0.0));
        mesh.x_labels(match (&f.axis.categories, spec.log_x) {
            (Some(cats), _) => cats.len() * 2 + 1,
            (None, true) => 30,
            (None, false) => 10,
        });
        mesh.y_labels(if spec.log_y { 30 } else { 10 });
        mesh.draw().map_err(err)?;
        let mut styles = match f.data {
            Data::Boxes(groups) => self.boxes(&mut c, groups).map_err(err)?,
            Data::Lines(groups) => self.lines(&mut c, groups).map_err(err)?,
        };
        let (r, stroke) = ((5.0 * self.k).round() as i32, ((2.0 * self.k).round() as u32).max(1));
        for (i, reference) in spec.reference.iter().enumerate() {
            let scaled = reference.points.iter().map(|[x, y]| (x * spec.x_scale, *y));
            let shown = scaled.filter(|&(x, y)| (!spec.log_x || x > 0.0) && (!spec.log_y || y > 0.0));
            for p in shown {
                open_mark!(i, p, r, BLACK.stroke_width(stroke), |e| c.draw_series(std::iter::once(e)).map_err(err))?;
            }
            styles.push(SeriesStyle { color: BLACK, mark: Mark::Open(i) });
        }
        Ok(styles)
    }

    fn boxes<'c, DB, X, Y>(
        &self,
        c: &mut ChartContext<'c, DB, Cartesian2d<X, Y>>,
        groups: &[(String, Vec<super::Stat>)],
    ) -> Result<Vec<SeriesStyle>, DrawingAreaErrorKind<DB::ErrorType>>
    where
        DB: DrawingBackend + 'c,
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        let (n, width, log_x) = (groups.len() as f64, self.width, self.spec.log_x);
        let stroke = ((self.k).round() as u32).max(1);
        let mut styles = Vec::new();
        for (g, (_, stats)) in groups.iter().enumerate() {
            let color = COLORS[g % COLORS.len()];
            // Group g's box at x, and its half width: additive on a linear axis, multiplicative
            // on a log axis.
            let at = |x: f64, d: f64| {
                let o = (g as f64 + 0.5 - n / 2.0) * width / n + d * width / n * 0.4;
                if log_x {
                    x * o.exp()
                } else {
                    x + o
                }
            };
            c.draw_series(
                stats
                    .iter()
                    .map(|s| Rectangle::new([(at(s.x, -1.0), s.q1), (at(s.x, 1.0), s.q3)], color.mix(0.25).filled())),
            )?;
            c.draw_series(
                stats
                    .iter()
                    .map(|s| Rectangle::new([(at(s.x, -1.0), s.q1), (at(s.x, 1.0), s.q3)], color.stroke_width(stroke))),
            )?;
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
                .map(|p| PathElement::new(p, color.stroke_width(stroke)))
            }))?;
            c.draw_series(LineSeries::new(
                stats.iter().map(|s| (at(s.x, 0.0), s.mean)),
                color.mix(0.5).stroke_width(stroke),
            ))?;
            let r = (4.0 * self.k).round() as i32;
            c.draw_series(stats.iter().map(|s| Circle::new((at(s.x, 0.0), s.mean), r, color.filled())))?;
            styles.push(SeriesStyle { color, mark: Mark::Dot });
        }
        Ok(styles)
    }

    fn lines<'c, DB, X, Y>(
        &self,
        c: &mut ChartContext<'c, DB, Cartesian2d<X, Y>>,
        groups: &[(String, Vec<super::Point>)],
    ) -> Result<Vec<SeriesStyle>, DrawingAreaErrorKind<DB::ErrorType>>
    where
        DB: DrawingBackend + 'c,
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        let spec = self.spec;
        let hist = spec.kind == Kind::Hist;
        // Dense curves (histograms, time series) without a marker per point.
        let curve = hist || spec.kind == Kind::Series;
        let floor = c.y_range().start;
        let stroke = ((2.0 * self.k).round() as u32).max(1);
        let mut styles = Vec::new();
        for (g, (_, pts)) in groups.iter().enumerate() {
            let color = COLORS[g % COLORS.len()];
            // A point a log axis cannot show breaks the line rather than being bridged by a
            // misleading slope; an empty histogram bin on a log axis sits on its floor.
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for p in pts {
                let y = if hist && spec.log_y && p.y <= 0.0 { floor } else { p.y };
                if (!spec.log_x || p.x > 0.0) && (!spec.log_y || y > 0.0) {
                    runs.last_mut().expect("non-empty").push((p.x, y));
                } else if !runs.last().expect("non-empty").is_empty() {
                    runs.push(Vec::new());
                }
            }
            if spec.kind == Kind::Series {
                // A time series turns back sharply (a queue fills, then drains): plotters joins
                // a wide polyline's segments with unbounded miters, which shoot spikes across
                // the figure at such turns. Each segment alone has no join.
                let segments = runs.iter().flat_map(|r| r.windows(2).map(|w| vec![w[0], w[1]]));
                c.draw_series(segments.map(|s| PathElement::new(s, color.stroke_width(stroke))))?;
            } else {
                c.draw_series(runs.iter().map(|r| PathElement::new(r.clone(), color.stroke_width(stroke))))?;
            }
            let spread = pts.iter().filter_map(|p| p.spread.map(|(lo, hi)| (p.x, lo, hi)));
            c.draw_series(
                spread.map(|(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(stroke / 2 + 1))),
            )?;
            if !curve {
                let r = (3.5 * self.k).round() as i32;
                c.draw_series(runs.concat().into_iter().map(|p| Circle::new(p, r, color.filled())))?;
            }
            styles.push(SeriesStyle { color, mark: if curve { Mark::Line } else { Mark::Dot } });
        }
        Ok(styles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Point;

    #[test]
    fn ticks_at_the_sweeps_values_never_run_together() {
        let at = |xs: &[f64]| {
            let pts = xs.iter().map(|&x| Point { x, y: 1.0, spread: None }).collect();
            Data::Lines(vec![(String::new(), pts)])
        };
        let nodes = at(&[2.0, 3.0, 4.0, 8.0, 14.0, 16.0, 32.0, 64.0, 128.0]);
        // On a log axis from 2 to 128, 16 is a ninth of a decade from 14: no tick of its own.
        assert_eq!(x_keys(&nodes, Kind::Line, true), Some(vec![2.0, 3.0, 4.0, 8.0, 14.0, 32.0, 64.0, 128.0]));
        // On a linear axis the small values crowd instead.
        assert_eq!(x_keys(&nodes, Kind::Line, false), Some(vec![2.0, 8.0, 14.0, 32.0, 64.0, 128.0]));
        assert_eq!(x_keys(&at(&[1.0, 2.0, 4.0]), Kind::Line, false), Some(vec![1.0, 2.0, 4.0]));
    }
}
