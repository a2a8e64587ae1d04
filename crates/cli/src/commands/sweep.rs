//! `daqnet sweep`: run a scenario over the Cartesian product of `--vary` axes, and
//! `daqnet sweep merge`: join the shards of one sweep.

use clap::{Args, Subcommand};
use daqnet_study::sweep::{self, ExecOptions, Executed, Shard, SweepPlan};
use daqnet_study::table::Table;
use daqnet_study::vary::Axis;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run a scenario over every combination of `--vary` values, in parallel, resumably.
///
/// Writes DIR/table.csv (one row per point and repeat: the varied values, then the report
/// summary) and DIR/points/pNNNN/report.json for each point. Rerunning with the same --out
/// skips the points already done, so an interrupted sweep resumes where it stopped.
#[derive(Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "LIST is a,b,c (commas inside {} [] or quotes do not split) or an inclusive range\n\
start..end:step of numbers or sizes (100..2400:100, 0.5..2:0.5, 1MB..8MB:1MB).\n\n\
Examples:\n  \
daqnet sweep scenarios/atlas-2015/switch1.toml --vary system.credits_per_node=100..2400:100 \\\n    \
--out out/fig5\n  \
daqnet sweep scenarios/atlas-2015/switch1.toml \\\n    \
--vary system.supervisor.policy=fcfs,random,node_round_robin \\\n    \
--vary system.credits_per_node=80,240,480,800 --repeat 3 --out out/policies\n\n\
On Slurm, one array job, one task per shard, the table as the points finish:\n  \
daqnet sweep FILE --vary ... --slurm --slurm-opt=--partition=short --out out/big\n\
On another batch system (HTCondor: $(Process)), shard I of N per job, all into one folder:\n  \
daqnet sweep FILE --vary ... --shard I/N --out out/big\n  \
daqnet sweep resume out/big      # afterwards: runs what is missing, writes the table\n\
or into a folder per shard, then merge:\n  \
daqnet sweep merge out/s0 out/s1 ... out/s7 --out out/all"
)]
pub struct SweepArgs {
    #[command(subcommand)]
    command: Option<SweepCommand>,
    /// Scenario file (TOML). `daqnet scenario --print-default` shows every field.
    #[arg(required = true)]
    file: Option<PathBuf>,
    #[command(flatten)]
    overrides: super::Overrides,
    /// A swept field: dotted.path=LIST (repeatable; the sweep is the Cartesian product).
    #[arg(long = "vary", value_name = "PATH=LIST", required = true)]
    vary: Vec<String>,
    /// Runs per point; repeat k uses seed run.seed + k.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Points run at once (default: one per CPU core).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Output folder (default: out/sweep/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only every N-th point starting at I (0 <= I < N), for batch systems.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Also write each point's events.csv and events.parquet (needed for exact `daqnet plot --kind hist`).
    #[arg(long)]
    per_event: bool,
    /// Also record each point's time series, as `daqnet sim --trace` does
    /// (`queue=sw->node0,cwnd=*->node0,every=1ms`), into its folder: `daqnet plot
    /// DIR/points/p0000 DIR/points/p0003 --kind series` draws points side by side.
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(daqnet_sim::trace::TraceSpec))]
    trace: Option<daqnet_sim::trace::TraceSpec>,
    /// Submit the sweep to Slurm as one array job (`sbatch --array`), one task per shard, every
    /// task writing into the sweep folder (which must be on a file system the nodes share, as
    /// must daqnet and the scenario); wait with a progress bar, rewriting the table as points
    /// finish. Run the same command again to wait for a job still queued, or to resume one that
    /// died: finished points are not rerun.
    #[arg(long)]
    slurm: bool,
    /// (--slurm) An sbatch option for the job, one #SBATCH line each, e.g.
    /// --slurm-opt=--partition=short --slurm-opt=--time=01:00:00 (repeatable).
    #[arg(long, value_name = "OPT", requires = "slurm", allow_hyphen_values = true)]
    slurm_opt: Vec<String>,
    /// (--slurm) Array tasks, i.e. shards (default: one per point, at most 64).
    #[arg(long, value_name = "N", requires = "slurm", value_parser = clap::value_parser!(u32).range(1..))]
    tasks: Option<u32>,
    /// (--slurm) Submit and return; run the command again later to wait and write the table.
    #[arg(long, requires = "slurm")]
    no_wait: bool,
    /// (--slurm) Print the batch script that would be submitted, and submit nothing.
    #[arg(long, requires = "slurm")]
    dry_run: bool,
    /// (--slurm) Run again the points a task recorded as failed (otherwise a rerun leaves them).
    #[arg(long, requires = "slurm")]
    retry_failed: bool,
    /// No progress bar or summary; only errors.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand)]
enum SweepCommand {
    /// Join the folders of a sharded sweep into one (points copied, table.csv rebuilt).
    Merge {
        /// Shard folders (each written by `daqnet sweep … --shard I/N --out DIR`).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Folder of the merged sweep.
        #[arg(long, required = true)]
        out: PathBuf,
    },
    /// Run the points not done of the sweep in DIR (its sweep.json), or of shard I/N of it, and
    /// rewrite its table: what each task of a batch job runs. Relative scenario paths are read
    /// from the current folder, as when the sweep was started.
    Resume {
        /// The sweep folder.
        dir: PathBuf,
        /// Run only every N-th point starting at I (0 <= I < N).
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Points run at once (default: one per CPU core).
        #[arg(long, short)]
        jobs: Option<usize>,
        /// No progress bar or summary; only errors.
        #[arg(long, short)]
        quiet: bool,
    },
}

/// Runs the verb.
pub fn run(a: SweepArgs) -> anyhow::Result<ExitCode> {
    if let Some(SweepCommand::Merge { dirs, out }) = a.command {
        let plan = sweep::merge(&dirs, &out)?;
        let (table, rows) = daqnet_study::table::write(&out, &plan.axis_paths(), plan.len())?;
        println!("merged {} folders: {rows} of {} points in {}", dirs.len(), plan.len(), table.display());
        if rows < plan.len() {
            eprintln!("warning: {} points are missing (shards not run yet, or failed)", plan.len() - rows);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(SweepCommand::Resume { dir, shard, jobs, quiet }) = a.command {
        return resume(&dir, shard.as_deref(), jobs, quiet);
    }
    let (plan, shard) = plan(&a)?;
    check_trace(&plan, a.trace.as_ref())?;
    let file = a.file.clone().expect("clap requires FILE");
    let out = a.out.clone().unwrap_or_else(|| Path::new("out/sweep").join(file.file_stem().unwrap_or_default()));
    if a.slurm {
        anyhow::ensure!(a.shard.is_none(), "--slurm makes the shards itself: drop --shard (--tasks sets how many)");
        anyhow::ensure!(a.trace.is_none(), "--trace does not go with --slurm yet: trace the points you need locally");
        anyhow::ensure!(
            a.jobs.is_none(),
            "--jobs with --slurm: each task runs as many points at once as the CPUs Slurm gives it \
             (--slurm-opt=--cpus-per-task=N)"
        );
        let s = super::slurm::SlurmArgs {
            opts: a.slurm_opt.clone(),
            tasks: a.tasks.map(|t| t as usize),
            no_wait: a.no_wait,
            dry_run: a.dry_run,
            retry_failed: a.retry_failed,
            quiet: a.quiet,
        };
        return super::slurm::run(&plan, &out, &s);
    }
    let (bar, observe) = super::sweep_progress(a.quiet);
    let opts = ExecOptions {
        jobs: a.jobs.unwrap_or_else(super::cores),
        shard,
        observer: Some(&observe),
        stop: Some(daqnet_evb::launcher::interrupted()),
    };
    let scratch = out.join(".trace-scratch");
    let traced = a.trace.clone().map(|t| (t, scratch.clone()));
    let done = sweep::execute(&plan, &out, opts, &super::sim_point(plan.per_event, traced))?;
    let _ = std::fs::remove_dir_all(&scratch);
    bar.finish_and_clear();
    finish(&done, &out, a.quiet)
}

/// `daqnet sweep resume`: the points not done of the sweep in `dir` (of one shard), each
/// failure recorded for the submitter of a batch job.
fn resume(dir: &Path, shard: Option<&str>, jobs: Option<usize>, quiet: bool) -> anyhow::Result<ExitCode> {
    let plan = sweep::read_plan(dir)?;
    let shard = shard.map(Shard::parse).transpose().map_err(anyhow::Error::msg)?.unwrap_or(Shard::ALL);
    let (bar, observe) = super::sweep_progress(quiet);
    let opts = ExecOptions {
        jobs: jobs.unwrap_or_else(super::cores),
        shard,
        observer: Some(&observe),
        stop: Some(daqnet_evb::launcher::interrupted()),
    };
    let done = sweep::execute(&plan, dir, opts, &super::sim_point(plan.per_event, None))?;
    bar.finish_and_clear();
    for (i, e) in &done.failures {
        super::slurm::record_failure(dir, *i, e)?;
    }
    finish(&done, dir, quiet)
}

/// The sweep and the shard of it to run.
fn plan(a: &SweepArgs) -> anyhow::Result<(SweepPlan, Shard)> {
    let file = a.file.as_ref().expect("clap requires FILE");
    let axes = a
        .vary
        .iter()
        .map(|v| Axis::parse(v).map_err(|e| anyhow::anyhow!("--vary {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let shard = a.shard.as_deref().map(Shard::parse).transpose().map_err(anyhow::Error::msg)?.unwrap_or(Shard::ALL);
    Ok((SweepPlan::single(file, a.overrides.sets(), axes, a.repeat, a.per_event), shard))
}

/// Checks the command line and every point's scenario without running anything.
pub fn check(a: &SweepArgs) -> anyhow::Result<()> {
    if a.command.is_some() {
        return Ok(());
    }
    let plan = plan(a)?.0;
    plan.points()?;
    check_trace(&plan, a.trace.as_ref())
}

/// Checks that `--trace` selects ports and senders in every point (a varied field can rename
/// or remove them).
fn check_trace(plan: &SweepPlan, trace: Option<&daqnet_sim::trace::TraceSpec>) -> anyhow::Result<()> {
    let Some(spec) = trace else { return Ok(()) };
    for p in plan.points()? {
        let targets = daqnet_sim::trace_targets(&p.scenario);
        spec.resolve(&targets).map_err(|e| anyhow::anyhow!("--trace, point {}: {e}", p.meta.index))?;
    }
    Ok(())
}

/// Prints what a sweep did and a compact view of its table; non-zero exit if points failed or
/// the sweep was interrupted.
pub fn finish(done: &Executed, out: &Path, quiet: bool) -> anyhow::Result<ExitCode> {
    if done.interrupted {
        eprintln!(
            "interrupted: {} points finished now, {} rows in {}; run the same command again to resume",
            done.ran,
            done.rows,
            done.table.display()
        );
        return Ok(ExitCode::from(130));
    }
    if !quiet {
        print!("{}", overview(&Table::read(&done.table)?));
        println!(
            "{} points run, {} already done; {} rows in {}",
            done.ran,
            done.skipped,
            done.rows,
            done.table.display()
        );
    }
    for (i, e) in &done.failures {
        eprintln!("error: point {i} ({}) failed: {e}", sweep::point_dir(out, *i).display());
    }
    Ok(if done.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The table's identifying and headline columns, aligned.
pub(super) fn overview(t: &Table) -> String {
    let first = t.columns.iter().position(|c| c == "events_built").unwrap_or(t.columns.len());
    let wanted: &[&str] = if t.columns.iter().any(|c| c == "steady_recv_bps") {
        &["steady_recv_bps", "recv_mean_bps", "latency_p99_ms", "timeouts", "drops"]
    } else {
        &["latency_mean_ms", "latency_median_ms", "latency_p99_ms", "share_ge_100ms", "timeouts", "drops"]
    };
    // Identifying columns that are the same on every row (one series, one repeat) say nothing.
    let varies = |i: usize| t.rows.iter().any(|r| r[i] != t.rows[0][i]);
    let cols: Vec<usize> = (1..first)
        .filter(|&i| t.columns[i] != "seed" && (varies(i) || t.columns[i].contains('.')))
        .chain(wanted.iter().filter_map(|w| t.columns.iter().position(|c| c == *w)))
        .collect();
    // Bandwidths in Gb/s: a column `x_bps` is shown as `x_gbps`.
    let short = |c: &str| c.rsplit('.').next().unwrap_or(c).replace("latency_", "").replace("_bps", "_gbps");
    let cell = |r: &Vec<String>, i: usize| match r[i].parse::<f64>() {
        Ok(v) if t.columns[i].ends_with("_bps") => format!("{:.1}", v / 1e9),
        Ok(v) if r[i].contains('.') => format!("{v:.3}"),
        _ => r[i].clone(),
    };
    let header: Vec<String> = cols.iter().map(|&i| short(&t.columns[i])).collect();
    let rows: Vec<Vec<String>> = t.rows.iter().map(|r| cols.iter().map(|&i| cell(r, i)).collect()).collect();
    daqnet_study::table::aligned(&header, &rows)
}
