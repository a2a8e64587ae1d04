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
daqnet plot out/fig5 --x credits_per_node --log-y -o fig5.pdf")]
pub struct PlotArgs {
    /// A sweep's table.csv, or its folder.
    pub table: PathBuf,
    /// Column on the x axis (a unique suffix is enough: credits_per_node).
    #[arg(long)]
    pub x: String,
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

/// `--kind` values.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    /// Box and whiskers of latency.
    Box,
    /// Lines.
    Line,
    /// Latency histograms.
    Hist,
}

/// Runs the verb.
pub fn run(a: PlotArgs) -> anyhow::Result<ExitCode> {
    let path = if a.table.is_dir() { a.table.join("table.csv") } else { a.table.clone() };
    let table = Table::read(&path)?;
    let spec = PlotSpec {
        kind: match a.kind {
            KindArg::Box => Kind::Box,
            KindArg::Line => Kind::Line,
            KindArg::Hist => Kind::Hist,
        },
        x: a.x,
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
    };
    draw(&table, &spec, &a.output)?;
    println!("wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}
