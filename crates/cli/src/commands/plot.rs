//! `daqnet plot`: draw a figure from a sweep table.

use clap::Args;
use daqnet_study::plot::{draw, Kind, PlotSpec};
use daqnet_study::table::Table;
use std::path::PathBuf;
use std::process::ExitCode;

/// Draw a figure (PNG or SVG) from a sweep's table.csv.
///
/// box: [ATLAS-DC]'s style — bullet = mean latency, box = quartiles, whiskers = p1 and p99.
/// line: one column against x, one line per --group value (repeats averaged).
/// hist: the latency distribution of each point, from its events.csv (sweep --per-event),
/// else from the HDR histogram in its report.json.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet plot out/fig5/table.csv --x credits_per_node --group series --log-y -o fig5.png\n  \
daqnet plot out/policies --x credits_per_node --y share_ge_100ms --group policy --kind line -o share.svg\n  \
daqnet plot out/fig10 --kind hist --x credits_per_node --log-y --where series=switch1 -o fig10.png")]
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
    /// Output file: .png or .svg.
    #[arg(short, long)]
    pub output: PathBuf,
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
    };
    draw(&table, &spec, &a.output)?;
    println!("wrote {}", a.output.display());
    Ok(ExitCode::SUCCESS)
}
