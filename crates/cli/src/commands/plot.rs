//! `daqnet plot`: draw a figure from a sweep table.

use clap::Args;
use daqnet_study::plot::{draw, Kind, PlotSpec};
use daqnet_study::table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

/// Draw a figure (PNG, SVG or PDF) from a sweep's table.csv.
///
/// box: [ATLAS-DC]'s style — bullet = mean latency, box = quartiles, whiskers = p1 and p99
/// (each the mean over a point's runs with --repeat; the figure says so).
/// line: one column against x, one line per --group value; with repeats, the mean and a bar
/// from the lowest to the highest run.
/// hist: the latency distribution of each point, from its events.csv (sweep --per-event),
/// else from the HDR histogram in its report.json.
/// series: the time series a run recorded with --trace (daqnet sim … --trace …): --y
/// queue_bytes (the default), drops, marks, cwnd, ssthresh, srtt_ms, in_flight or dctcp_alpha over time, one line
/// per port or TCP sender; give several run folders to draw them side by side (a simulation
/// and a testbed run of one scenario).
/// Axes are named after the columns' meaning and ticked in their units (600 kB, 200 ms, 10 %);
/// the legend sits beside the chart.
#[derive(Args)]
#[command(after_help = "Examples (from the sweeps of `daqnet sweep --help`):\n  \
daqnet plot out/fig5/table.csv --x credits_per_node --log-y -o fig5.png\n  \
daqnet plot out/policies --x credits_per_node --group policy --log-y -o policies.png\n  \
daqnet plot out/policies --kind line --x credits_per_node --y share_ge_100ms \\\n    \
--group policy -o share.svg\n  \
daqnet plot out/policies --kind hist --x policy --where credits_per_node=240 --log-y -o hist.png\n  \
daqnet plot out/fig5 --x credits_per_node --log-y --size 1600x900 --dpi 192 -o slide.png\n  \
daqnet plot out/fig5 --x credits_per_node --log-y -o fig5.pdf\n  \
daqnet plot out/sim --kind series -o queue.png\n  \
daqnet plot out/sim out/testbed --kind series --window 0..1s -o queues.svg\n  \
daqnet plot out/sim --kind series --y cwnd --where 'sender=ru0->node0|ru1->node0' -o cwnd.svg")]
pub struct PlotArgs {
    /// A sweep's table.csv, or its folder (--kind series: one or more run folders).
    #[arg(required = true, num_args = 1..)]
    pub table: Vec<PathBuf>,
    /// Column on the x axis (a unique suffix is enough: credits_per_node); not for series,
    /// whose x is time.
    #[arg(long)]
    pub x: Option<String>,
    /// `latency`, or any numeric column (with --kind line).
    #[arg(long, default_value = "latency")]
    pub y: String,
    /// Column whose values make separate, coloured series.
    #[arg(long)]
    pub group: Option<String>,
    /// Figure kind.
    #[arg(long, value_enum, default_value = "box")]
    pub kind: KindArg,
    /// Only rows where COLUMN=VALUE (repeatable).
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    pub filters: Vec<String>,
    /// Logarithmic x axis.
    #[arg(long)]
    pub log_x: bool,
    /// Logarithmic y axis.
    #[arg(long)]
    pub log_y: bool,
    /// Multiply x by this (1e-6 shows bytes as MB; say so in --xlabel).
    #[arg(long, default_value_t = 1.0)]
    pub x_scale: f64,
    /// Figure title.
    #[arg(long)]
    pub title: Option<String>,
    /// X axis label (default: the column name).
    #[arg(long)]
    pub xlabel: Option<String>,
    /// Y axis label.
    #[arg(long)]
    pub ylabel: Option<String>,
    /// Size in pixels at 96 dpi, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1000x640", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Resolution of a PNG: 192 draws twice the pixels, text and lines alike (for slides).
    #[arg(long, default_value_t = 96, value_parser = clap::value_parser!(u32).range(24..=600))]
    pub dpi: u32,
    /// Series only: the stretch of time to draw, FROM..TO (`0..500ms`, `1s..1.2s`).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window)]
    pub window: Option<(f64, f64)>,
    /// Output file: .png, .svg or .pdf.
    #[arg(short, long)]
    pub output: PathBuf,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("`{s}`: expected WIDTHxHEIGHT in pixels, e.g. 1600x900 (each 200 to 8000)");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(err)?;
    let (w, h): (u32, u32) = (w.trim().parse().map_err(|_| err())?, h.trim().parse().map_err(|_| err())?);
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(err());
    }
    Ok((w, h))
}

/// `FROM..TO` as ms.
fn parse_window(s: &str) -> Result<(f64, f64), String> {
    let err = |e: String| format!("`{s}`: {e}; expected FROM..TO, e.g. 0..500ms or 1s..1.2s");
    let (a, b) = s.split_once("..").ok_or_else(|| err("no `..`".into()))?;
    let ms = |t: &str| {
        humantime::parse_duration(t.trim()).map(|d| d.as_secs_f64() * 1e3).map_err(|e| err(format!("`{t}`: {e}")))
    };
    let (from, to) = (ms(a)?, ms(b)?);
    if from >= to {
        return Err(err("FROM must come before TO".into()));
    }
    Ok((from, to))
}

/// `--kind` values.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    /// Box and whiskers of latency.
    Box,
    /// Lines.
    Line,
    /// Latency histograms.
    Hist,
    /// Time series of a run's trace.
    Series,
}

/// Runs the verb.
pub fn run(a: PlotArgs) -> anyhow::Result<ExitCode> {
    let kind = match a.kind {
        KindArg::Box => Kind::Box,
        KindArg::Line => Kind::Line,
        KindArg::Hist => Kind::Hist,
        KindArg::Series => Kind::Series,
    };
    let spec = PlotSpec {
        kind,
        x: a.x.clone().unwrap_or_else(|| "t_s".into()),
        y: a.y,
        group: a.group,
        filters: a.filters,
        log_x: a.log_x,
        log_y: a.log_y,
        x_scale: a.x_scale,
        title: a.title,
        xlabel: a.xlabel,
        ylabel: a.ylabel,
        size: a.size,
        dpi: a.dpi,
        reference: Vec::new(),
    };
    if kind == Kind::Series {
        daqnet_study::plot::series::draw(&a.table, &spec, a.window, &a.output)?;
    } else {
        anyhow::ensure!(a.x.is_some(), "--x is required: the column on the x axis");
        anyhow::ensure!(a.window.is_none(), "--window is for --kind series");
        let [table] = &a.table[..] else {
            anyhow::bail!("one table at a time: several folders are for --kind series");
        };
        let path = if table.is_dir() { table.join("table.csv") } else { table.clone() };
        draw(&Table::read(&path)?, &spec, &a.output)?;
    }
    println!("wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}
