//! `daqnet study`: run one of the source documents' experiments and draw its figures.

use clap::Args;
use daqnet_study::study::{self, Study};
use daqnet_study::sweep::{self, ExecOptions, Shard};
use daqnet_study::table::Table;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run a study — a source document's experiment as a sweep plus its figures — in one command.
///
/// Writes the sweep (table.csv, points/) to --out and the figures to --figures. Resumable like
/// `daqnet sweep`: rerunning skips finished points and redraws the figures.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  daqnet study --list\n  daqnet study fig5 --quick\n  daqnet study fig11 --figures docs/figures"
)]
pub struct StudyArgs {
    /// Study name (a file NAME.toml in --studies) or a path to a study file.
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List the studies with what they reproduce.
    #[arg(long)]
    pub list: bool,
    /// The reduced version (fewer points and events; under a minute).
    #[arg(long)]
    pub quick: bool,
    /// Folder of study files.
    #[arg(long, default_value = "studies")]
    pub studies: PathBuf,
    /// Sweep output folder (default: out/study/NAME, or NAME-quick).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the figures go (default: the --out folder).
    #[arg(long)]
    pub figures: Option<PathBuf>,
    /// Points run at once (default: one per CPU core).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// No progress bar or summary; only errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs the verb.
pub fn run(a: StudyArgs) -> anyhow::Result<ExitCode> {
    if a.list {
        for (name, path) in study::list(&a.studies)? {
            let s = Study::load(&path)?;
            println!("{name:<8} {}\n         reproduces {}", s.title, s.reproduces);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = a.name.expect("clap requires NAME without --list");
    let path = study::find(&name, &a.studies)?;
    let s = Study::load(&path)?;
    let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let out =
        a.out.unwrap_or_else(|| Path::new("out/study").join(if a.quick { format!("{stem}-quick") } else { stem }));
    let figures = a.figures.unwrap_or_else(|| out.clone());
    let plan = s.plan(path.parent().unwrap_or(Path::new(".")), a.quick)?;
    if !a.quiet {
        println!("{}: {} ({} points{})", name, s.title, plan.len(), if a.quick { ", quick" } else { "" });
    }
    let (bar, observe) = super::sweep_progress(a.quiet);
    let opts = ExecOptions {
        jobs: a.jobs.unwrap_or_else(super::cores),
        shard: Shard::ALL,
        observer: Some(&observe),
        stop: Some(daqnet_evb::launcher::interrupted()),
    };
    let t0 = std::time::Instant::now();
    let done = sweep::execute(&plan, &out, opts, &super::sim_point(plan.per_event, None))?;
    bar.finish_and_clear();
    let code = super::sweep::finish(&done, &out, a.quiet)?;
    let table = Table::read(&done.table)?;
    for (file, spec) in &s.plot {
        let target = figures.join(file);
        daqnet_study::plot::draw(&table, spec, &target)
            .map_err(|e| anyhow::anyhow!("{}: [plot.\"{file}\"]: {e:#}", path.display()))?;
        if !a.quiet {
            println!("figure {}", target.display());
        }
    }
    if !a.quiet {
        println!("study {name} took {:.1} s", t0.elapsed().as_secs_f64());
    }
    Ok(code)
}
