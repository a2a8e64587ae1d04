//! Sweeps: the Cartesian product of `--vary` axes over one or more scenario series, run in
//! parallel, resumable, and shardable across machines.
//!
//! On disk a sweep is a folder:
//!
//! ```text
//! DIR/sweep.json                 the plan (series, axes, repeats): a rerun must match it
//! DIR/points/p0007/point.json    which series, values and repeat point 7 is
//! DIR/points/p0007/report.json   its run report (written last: its presence means "done")
//! DIR/points/p0007/events.csv    per-event records, with per_event
//! DIR/table.csv                  one row per finished point, built from the point folders
//! ```
//!
//! Points are numbered series-major, then by axis values (first axis slowest), then repeat.
//! A point's folder is written under a temporary name and renamed when complete, so an
//! interrupted sweep leaves no half-written point behind.

pub use crate::points::{point_dir, read_point, PointMeta};
use crate::vary::Axis;
use anyhow::{bail, Context};
use daqnet_core::report::{EventRecord, RunReport};
use daqnet_core::Scenario;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One scenario the axes are applied to, e.g. "switch 1".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Name shown in the table's `series` column and in plot legends.
    pub name: String,
    /// Scenario file.
    pub file: PathBuf,
    /// `--set` overrides applied before the axes.
    #[serde(default)]
    pub sets: Vec<String>,
    /// Swept fields (series may sweep different fields, e.g. a dedicated buffer's
    /// `port_bytes` and a shared one's `pool_bytes`).
    pub axes: Vec<AxisSpec>,
}

/// What a sweep runs: every series × every combination of its axis values × every repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// Scenario series.
    pub series: Vec<Series>,
    /// Runs per combination; repeat `k` uses seed `run.seed + k`.
    pub repeat: u32,
    /// Whether each point also writes `events.csv`.
    pub per_event: bool,
}

/// An axis as stored in `sweep.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AxisSpec {
    /// Dotted scenario path.
    pub path: String,
    /// Its values.
    pub values: Vec<String>,
}

impl From<Axis> for AxisSpec {
    fn from(a: Axis) -> Self {
        AxisSpec { path: a.path, values: a.values }
    }
}

/// One resolved point of a plan.
#[derive(Debug, Clone)]
pub struct Point {
    /// What it is.
    pub meta: PointMeta,
    /// The scenario with the series' sets, the axis values and the repeat's seed applied.
    pub scenario: Scenario,
    /// The scenario file plus what was set, for reports (`file --set a=1 --set b=2`).
    pub origin: String,
}

/// A report (and per-event records when asked) from running one point.
pub struct PointOutput {
    /// The run report.
    pub report: RunReport,
    /// Per-event records (empty unless asked for).
    pub events: Vec<EventRecord>,
    /// Files the runner wrote elsewhere (a trace), moved into the point's folder under their
    /// own names.
    pub files: Vec<PathBuf>,
}

/// Which points this process runs: every `count`-th point starting at `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based shard number.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` with 0 ≤ I < N (e.g. `$SLURM_ARRAY_TASK_ID/8` with `--array=0-7`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let err = || format!("--shard `{text}`: expected I/N with 0 <= I < N, e.g. 0/4 (shards are numbered from 0)");
        let (i, n) = text.split_once('/').ok_or_else(err)?;
        let (index, count): (usize, usize) =
            (i.trim().parse().map_err(|_| err())?, n.trim().parse().map_err(|_| err())?);
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }

    /// Whether this shard runs point `i`.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

impl SweepPlan {
    /// A plan over one scenario file with `sets` applied and the given axes.
    pub fn single(file: &Path, sets: Vec<String>, axes: Vec<Axis>, repeat: u32, per_event: bool) -> SweepPlan {
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let axes = axes.into_iter().map(AxisSpec::from).collect();
        SweepPlan { series: vec![Series { name, file: file.to_path_buf(), sets, axes }], repeat, per_event }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        let per_series = |s: &Series| s.axes.iter().map(|a| a.values.len()).product::<usize>();
        self.series.iter().map(per_series).sum::<usize>() * self.repeat as usize
    }

    /// Every swept path, in order of first appearance (the table's varied columns).
    pub fn axis_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        for a in self.series.iter().flat_map(|s| &s.axes) {
            if !paths.contains(&a.path) {
                paths.push(a.path.clone());
            }
        }
        paths
    }

    /// Whether the plan has no points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves every point's scenario, checking each axis value on its own first so that a
    /// bad value is reported as such (`--vary system.credits_per_node: value `x`: …`).
    pub fn points(&self) -> anyhow::Result<Vec<Point>> {
        if self.repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        let mut points = Vec::with_capacity(self.len());
        for series in &self.series {
            let load = |extra: &[String]| {
                let sets: Vec<String> = series.sets.iter().chain(extra).cloned().collect();
                daqnet_core::scenario::load(&series.file, &sets).map_err(|e| anyhow::anyhow!("{e}"))
            };
            load(&[])?;
            for axis in &series.axes {
                for v in &axis.values {
                    load(&[format!("{}={v}", axis.path)])
                        .with_context(|| format!("--vary {}: value `{v}` is not allowed", axis.path))?;
                }
            }
            for combo in combinations(&series.axes) {
                let sets: Vec<String> =
                    series.axes.iter().zip(&combo).map(|(a, &i)| format!("{}={}", a.path, a.values[i])).collect();
                let base = load(&sets).with_context(|| format!("the sweep point {}", sets.join(" ")))?;
                for repeat in 0..self.repeat {
                    let mut scenario = base.clone();
                    scenario.run.seed = base.run.seed.wrapping_add(repeat as u64);
                    let origin = std::iter::once(series.file.display().to_string())
                        .chain(series.sets.iter().chain(&sets).map(|s| format!("--set {s}")))
                        .collect::<Vec<_>>()
                        .join(" ");
                    let meta = PointMeta {
                        index: points.len(),
                        series: series.name.clone(),
                        repeat,
                        seed: scenario.run.seed,
                        values: series
                            .axes
                            .iter()
                            .zip(&combo)
                            .map(|(a, &i)| (a.path.clone(), a.values[i].clone()))
                            .collect(),
                    };
                    points.push(Point { meta, scenario, origin });
                }
            }
        }
        Ok(points)
    }
}

/// Every combination of value indices, first axis slowest.
fn combinations(axes: &[AxisSpec]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for a in axes {
        out = out.into_iter().flat_map(|c| (0..a.values.len()).map(move |i| [c.clone(), vec![i]].concat())).collect();
    }
    out
}

/// The plan of the sweep in `out` (its `sweep.json`).
pub fn read_plan(out: &Path) -> anyhow::Result<SweepPlan> {
    let path = out.join("sweep.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}: not a sweep folder (it has no sweep.json)", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{} is damaged: {e}", path.display()))
}

/// Records the plan in `out/sweep.json`, or checks that the one already there is the same.
pub fn claim_folder(plan: &SweepPlan, out: &Path) -> anyhow::Result<()> {
    let path = out.join("sweep.json");
    let text = serde_json::to_string_pretty(plan).expect("a plan serializes");
    if let Ok(old) = std::fs::read_to_string(&path) {
        let same = serde_json::from_str::<SweepPlan>(&old).is_ok_and(|p| p == *plan);
        if !same {
            bail!(
                "{} holds a different sweep (see its sweep.json): choose another --out, or delete the folder to start over",
                out.display()
            );
        }
        return Ok(());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    daqnet_core::output::write_whole(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
        .context(daqnet_core::output::RunFailed)
}

/// The points of `shard` that still have to run. A point is done when its folder holds a
/// report of the same resolved scenario; a report of a different one (the scenario file was
/// edited since) is stale and the point runs again.
pub fn pending<'p>(points: &'p [Point], out: &Path, shard: Shard) -> anyhow::Result<Vec<&'p Point>> {
    let mut todo = Vec::new();
    for p in points.iter().filter(|p| shard.owns(p.meta.index)) {
        match read_point(&point_dir(out, p.meta.index))? {
            Some((meta, report)) if meta == p.meta && report.resolved_scenario == p.scenario.to_toml() => {}
            _ => todo.push(p),
        }
    }
    Ok(todo)
}

/// Runs `todo` on `jobs` threads, writing each point's folder as it finishes, and calls
/// `done` after each. A point that fails is reported in the result; the others still run.
/// Once `stop` is set no further point starts, and a point whose run was interrupted is not
/// written (it runs again when the sweep resumes).
pub fn run_points(
    todo: &[&Point],
    out: &Path,
    (jobs, per_event): (usize, bool),
    stop: Option<&AtomicBool>,
    runner: &(dyn Fn(&Point) -> anyhow::Result<PointOutput> + Sync),
    done: &(dyn Fn(&Point) + Sync),
) -> anyhow::Result<(usize, Vec<(usize, String)>)> {
    let pool =
        rayon::ThreadPoolBuilder::new().num_threads(jobs.max(1)).build().context("cannot start worker threads")?;
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let written = AtomicUsize::new(0);
    let failures: Vec<(usize, String)> = pool.install(|| {
        todo.par_iter()
            .with_max_len(1)
            .filter_map(|p| {
                if stopped() {
                    return None;
                }
                let r = runner(p).and_then(|o| {
                    anyhow::ensure!(!o.report.interrupted, "interrupted");
                    write_point(out, p, &o, per_event)?;
                    written.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                });
                done(p);
                r.err().filter(|_| !stopped()).map(|e| (p.meta.index, format!("{e:#}")))
            })
            .collect()
    });
    Ok((written.into_inner(), failures))
}

fn write_point(out: &Path, p: &Point, o: &PointOutput, per_event: bool) -> anyhow::Result<()> {
    let dir = point_dir(out, p.meta.index);
    let tmp = out.join("points").join(format!(".p{:04}.tmp{}", p.meta.index, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let write = |name: &str, text: &str| {
        let path = tmp.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write("point.json", &serde_json::to_string_pretty(&p.meta).expect("meta serializes"))?;
    if per_event {
        write("events.csv", &EventRecord::to_csv(&o.events))?;
        crate::columnar::write_events(&tmp.join("events.parquet"), &o.events)?;
    }
    for f in &o.files {
        let to = tmp.join(f.file_name().with_context(|| format!("{} names no file", f.display()))?);
        // A rename cannot cross file systems; a copy can.
        if std::fs::rename(f, &to).is_err() {
            std::fs::copy(f, &to).with_context(|| format!("cannot move {} to {}", f.display(), to.display()))?;
            let _ = std::fs::remove_file(f);
        }
    }
    write("report.json", &o.report.to_json())?;
    crate::columnar::write_latency(&tmp.join("latency.parquet"), &o.report)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot replace stale {}", dir.display()))?;
    }
    std::fs::rename(&tmp, &dir).with_context(|| format!("cannot move {} to {}", tmp.display(), dir.display()))
}

/// What a sweep reports as it goes, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepEvent<'a> {
    /// Before anything runs: `done` of this shard's `of` points are already finished in
    /// `folder` (an earlier run, perhaps of another build: say so even when quiet).
    Resuming {
        /// Points already done.
        done: usize,
        /// Points of this shard.
        of: usize,
        /// The sweep folder.
        folder: &'a Path,
    },
    /// `points` points are about to run.
    Starting {
        /// How many.
        points: usize,
    },
    /// Point `index` finished (or failed).
    Finished {
        /// Its index.
        index: usize,
    },
}

/// How to execute a plan.
#[derive(Clone, Copy)]
pub struct ExecOptions<'a> {
    /// Worker threads (points run in parallel, one point per thread).
    pub jobs: usize,
    /// Which points this process runs.
    pub shard: Shard,
    /// Told what happens, from any worker thread.
    pub observer: Option<&'a (dyn Fn(SweepEvent) + Sync)>,
    /// Once set (Ctrl-C), no further point starts.
    pub stop: Option<&'a AtomicBool>,
}

/// What [`execute`] did.
#[derive(Debug)]
pub struct Executed {
    /// Points run now.
    pub ran: usize,
    /// Points of this shard already done before (resumed).
    pub skipped: usize,
    /// Points that failed: (index, reason).
    pub failures: Vec<(usize, String)>,
    /// The table written.
    pub table: PathBuf,
    /// Rows in it (finished points of every shard found in the folder).
    pub rows: usize,
    /// Stopped early (`ExecOptions::stop`): rerun the same sweep to resume.
    pub interrupted: bool,
}

/// Runs a plan into `out`: claims the folder, skips finished points, runs the rest in
/// parallel (telling `opts.observer` as it goes), and writes `table.csv`.
pub fn execute(
    plan: &SweepPlan,
    out: &Path,
    opts: ExecOptions,
    runner: &(dyn Fn(&Point) -> anyhow::Result<PointOutput> + Sync),
) -> anyhow::Result<Executed> {
    let points = plan.points()?;
    claim_folder(plan, out)?;
    let todo = pending(&points, out, opts.shard)?;
    let mine = points.iter().filter(|p| opts.shard.owns(p.meta.index)).count();
    let tell = |e: SweepEvent| {
        if let Some(o) = opts.observer {
            o(e)
        }
    };
    if mine > todo.len() {
        tell(SweepEvent::Resuming { done: mine - todo.len(), of: mine, folder: out });
    }
    tell(SweepEvent::Starting { points: todo.len() });
    let done = |p: &Point| tell(SweepEvent::Finished { index: p.meta.index });
    let (ran, failures) = run_points(&todo, out, (opts.jobs, plan.per_event), opts.stop, runner, &done)?;
    let (table, rows) = crate::table::write(out, &plan.axis_paths(), plan.len())?;
    let interrupted = opts.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    Ok(Executed { ran, skipped: mine - todo.len(), failures, table, rows, interrupted })
}

/// Joins shard folders of one sweep into `out`: checks they ran the same plan, copies every
/// finished point, and returns the plan. The same point finished in two folders must have
/// the same report (apart from wall-clock fields).
pub fn merge(inputs: &[PathBuf], out: &Path) -> anyhow::Result<SweepPlan> {
    let mut plan: Option<(SweepPlan, &Path)> = None;
    for dir in inputs {
        let path = dir.join("sweep.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("{} is not a sweep folder (no readable sweep.json)", dir.display()))?;
        let p: SweepPlan = serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?;
        match &plan {
            Some((first, from)) if *first != p => {
                bail!(
                    "{} and {} hold different sweeps; only shards of one sweep can be merged",
                    from.display(),
                    dir.display()
                )
            }
            Some(_) => {}
            None => plan = Some((p, dir)),
        }
    }
    let (plan, _) = plan.context("name at least one sweep folder to merge")?;
    claim_folder(&plan, out)?;
    for dir in inputs {
        if std::fs::canonicalize(dir).ok() == std::fs::canonicalize(out).ok() {
            continue;
        }
        for index in 0..plan.len() {
            let from = point_dir(dir, index);
            let Some((_, report)) = read_point(&from)? else { continue };
            let to = point_dir(out, index);
            if let Some((_, have)) = read_point(&to)? {
                if !same_result(&have, &report) {
                    bail!("point {index} has different results in {} and {}", from.display(), to.display());
                }
                continue;
            }
            copy_dir(&from, &to)?;
        }
    }
    Ok(plan)
}

/// Equal reports apart from the wall-clock fields.
fn same_result(a: &RunReport, b: &RunReport) -> bool {
    let strip = |r: &RunReport| RunReport { wall_s: 0.0, sim_events_per_s: None, ..r.clone() };
    strip(a) == strip(b)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))
            .with_context(|| format!("cannot copy {}", entry.path().display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_points() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard::parse(&format!("{i}/3")).unwrap()).collect();
        for i in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1);
        }
        for bad in ["3/3", "1/0", "a/2", "1", "-1/2"] {
            assert!(Shard::parse(bad).unwrap_err().contains("0 <= I < N"), "{bad}");
        }
    }

    #[test]
    fn combinations_run_first_axis_slowest() {
        let axes = vec![
            AxisSpec { path: "a".into(), values: vec!["1".into(), "2".into()] },
            AxisSpec { path: "b".into(), values: vec!["x".into(), "y".into(), "z".into()] },
        ];
        assert_eq!(combinations(&axes), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
        assert_eq!(combinations(&[]), [Vec::<usize>::new()]);
    }
}
