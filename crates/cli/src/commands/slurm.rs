//! `daqnet sweep … --slurm`: a sweep as one Slurm array job, one task per shard, every task
//! writing its points into the one sweep folder (a shared file system), which is what makes
//! the table the same as a local sweep's and a dead job resumable: a point's folder is written
//! whole or not at all, and a task runs only the points of its shard that are not done.
//!
//! Planned first without touching Slurm (the batch script, the array of shards with points to
//! run), then submitted with `sbatch`, watched with `squeue`, and judged by the sweep folder.

use daqnet_study::sweep::{self, Point, Shard, SweepPlan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// What `--slurm` was asked to do.
pub struct SlurmArgs {
    /// `sbatch` options, each one `#SBATCH` line, e.g. `--partition=short`.
    pub opts: Vec<String>,
    /// Array tasks (shards); default: one per point, at most [`MAX_TASKS`].
    pub tasks: Option<usize>,
    /// Submit and return.
    pub no_wait: bool,
    /// Print the batch script and submit nothing.
    pub dry_run: bool,
    /// Run again the points a task recorded as failed.
    pub retry_failed: bool,
    /// No progress bar or table; only errors.
    pub quiet: bool,
}

/// Tasks of an array by default, at most: one per point up to this.
pub const MAX_TASKS: usize = 64;

/// The batch job for the points still to run.
#[derive(Debug, PartialEq)]
pub struct BatchJob {
    /// Shards with points to run: the array's task ids.
    pub shards: Vec<usize>,
    /// Shards in all (N of `--shard I/N`).
    pub of: usize,
    /// The `daqnet` executable the tasks run.
    pub exe: PathBuf,
    /// The sweep folder, absolute.
    pub out: PathBuf,
    /// Where the tasks start (relative scenario paths in sweep.json are from here).
    pub cwd: PathBuf,
    /// `#SBATCH` options.
    pub opts: Vec<String>,
}

/// The array's task list in Slurm's form, e.g. `0-3,5,7-8`.
pub fn array_spec(shards: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < shards.len() {
        let start = i;
        while i + 1 < shards.len() && shards[i + 1] == shards[i] + 1 {
            i += 1;
        }
        parts.push(if i == start { shards[i].to_string() } else { format!("{}-{}", shards[start], shards[i]) });
        i += 1;
    }
    parts.join(",")
}

/// Quotes `s` for the shell when it needs it.
fn sh(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl BatchJob {
    /// The folder of the job's script and its tasks' logs.
    pub fn dir(out: &Path) -> PathBuf {
        out.join("slurm")
    }

    /// The batch script: each task runs its shard's pending points into the sweep folder.
    pub fn script(&self) -> String {
        let logs = Self::dir(&self.out);
        let mut s = String::from("#!/bin/bash\n");
        s += "#SBATCH --job-name=daqnet-sweep\n";
        s += &format!("#SBATCH --array={}\n", array_spec(&self.shards));
        s += &format!("#SBATCH --chdir={}\n", sh(&self.cwd.to_string_lossy()));
        s += &format!("#SBATCH --output={}\n", sh(&logs.join("task-%a.out").to_string_lossy()));
        s += &format!("#SBATCH --error={}\n", sh(&logs.join("task-%a.err").to_string_lossy()));
        for o in &self.opts {
            s += &format!("#SBATCH {o}\n");
        }
        s += &format!(
            "# shard $SLURM_ARRAY_TASK_ID of {} of the sweep in {} (its sweep.json): the points not done\n",
            self.of,
            self.out.display()
        );
        s += &format!(
            "exec {} sweep resume {} --shard \"$SLURM_ARRAY_TASK_ID/{}\" --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\" -q\n",
            sh(&self.exe.to_string_lossy()),
            sh(&self.out.to_string_lossy()),
            self.of
        );
        s
    }
}

/// The job id in `sbatch --parsable`'s answer (`ID` or `ID;CLUSTER`).
pub fn job_id(answer: &str) -> anyhow::Result<u64> {
    let id = answer.trim().split(';').next().unwrap_or_default();
    id.parse().map_err(|_| anyhow::anyhow!("sbatch answered `{}`, not a job id", answer.trim()))
}

/// The job of the sweep, as `DIR/slurm/job` records it: its id and its shards in all.
fn read_job(file: &Path) -> Option<(u64, usize)> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut words = text.split_whitespace();
    Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
}

/// The points a task recorded as failed: index → reason (`DIR/failed/pNNNN.txt`).
pub fn failed_points(out: &Path) -> BTreeMap<usize, String> {
    let entries = std::fs::read_dir(out.join("failed")).into_iter().flatten().flatten();
    entries
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let index = name.strip_prefix('p')?.strip_suffix(".txt")?.parse().ok()?;
            Some((index, std::fs::read_to_string(e.path()).unwrap_or_default()))
        })
        .collect()
}

/// Records that point `index` failed, for the submitter (written whole).
pub fn record_failure(out: &Path, index: usize, reason: &str) -> anyhow::Result<()> {
    let dir = out.join("failed");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("p{index:04}.txt"));
    daqnet_core::output::write_whole(&path, reason.as_bytes()).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Shard → its points not done (and not recorded failed), for shards that have any.
fn pending_by_shard(
    points: &[Point],
    out: &Path,
    of: usize,
    failed: &BTreeMap<usize, String>,
) -> anyhow::Result<BTreeMap<usize, Vec<usize>>> {
    let mut by = BTreeMap::<usize, Vec<usize>>::new();
    for p in sweep::pending(points, out, Shard::ALL)? {
        if !failed.contains_key(&p.meta.index) {
            by.entry(p.meta.index % of).or_default().push(p.meta.index);
        }
    }
    Ok(by)
}

/// Whether Slurm still has tasks of job `id` (pending or running).
fn active(id: u64) -> anyhow::Result<bool> {
    let o = Command::new("squeue")
        .args(["-h", "-j", &id.to_string(), "-o", "%T"])
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run squeue: {e} (is Slurm's client installed?)"))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        // A job Slurm has forgotten is over.
        if err.contains("Invalid job id") {
            return Ok(false);
        }
        anyhow::bail!("squeue failed: {}", err.trim());
    }
    Ok(!String::from_utf8_lossy(&o.stdout).trim().is_empty())
}

/// The last `n` lines of a file, or why not.
fn tail(path: &Path, n: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(t) => {
            let lines: Vec<&str> = t.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("({}: {e})", path.display()),
    }
}

/// Runs the sweep `plan` into `out` as a Slurm array job (or attaches to the one still running).
pub fn run(plan: &SweepPlan, out: &Path, a: &SlurmArgs) -> anyhow::Result<ExitCode> {
    let points = plan.points()?;
    let out = std::path::absolute(out)?;
    let logs = BatchJob::dir(&out);
    let job_file = logs.join("job");
    if !a.dry_run {
        sweep::claim_folder(plan, &out)?;
        if let Some((id, of)) = read_job(&job_file) {
            if active(id)? {
                eprintln!("job {id} of this sweep is still in Slurm's queue: waiting for it (scancel {id} stops it)");
                return wait(plan, &points, &out, (id, of), a);
            }
        }
    }
    if a.retry_failed {
        let _ = std::fs::remove_dir_all(out.join("failed"));
    }
    let failed = failed_points(&out);
    let of = a.tasks.unwrap_or(points.len().min(MAX_TASKS)).clamp(1, points.len().max(1));
    let by_shard = pending_by_shard(&points, &out, of, &failed)?;
    if by_shard.is_empty() && !a.dry_run {
        eprintln!("every point is done (or recorded failed): nothing to submit");
        return finish(plan, &points, &out, (None, of), a);
    }
    let job = BatchJob {
        shards: by_shard.keys().copied().collect(),
        of,
        exe: std::env::current_exe()?,
        out: out.clone(),
        cwd: std::env::current_dir()?,
        opts: a.opts.clone(),
    };
    let script = job.script();
    if a.dry_run {
        print!("{script}");
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&logs)?;
    let file = logs.join("sweep.sbatch");
    daqnet_core::output::write_whole(&file, script.as_bytes())?;
    let o = Command::new("sbatch")
        .arg("--parsable")
        .arg(&file)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run sbatch: {e} (is Slurm's client installed?)"))?;
    anyhow::ensure!(o.status.success(), "sbatch refused the job: {}", String::from_utf8_lossy(&o.stderr).trim());
    let id = job_id(&String::from_utf8_lossy(&o.stdout))?;
    daqnet_core::output::write_whole(&job_file, format!("{id} {of}\n").as_bytes())?;
    let todo: usize = by_shard.values().map(Vec::len).sum();
    eprintln!(
        "submitted job {id}: {} tasks of {of} shards, {todo} points; script {}, logs {}/task-*.err",
        job.shards.len(),
        file.display(),
        logs.display()
    );
    if a.no_wait {
        eprintln!("run this command again to wait for the job and write the table (or to resume it once it ended)");
        return Ok(ExitCode::SUCCESS);
    }
    wait(plan, &points, &out, (id, of), a)
}

/// Waits for job `id` (of `of` shards) to leave Slurm's queue, showing the points done and
/// rewriting the table as they come; then judges the job by the folder.
fn wait(
    plan: &SweepPlan,
    points: &[Point],
    out: &Path,
    (id, of): (u64, usize),
    a: &SlurmArgs,
) -> anyhow::Result<ExitCode> {
    let (bar, _) = super::sweep_progress(a.quiet);
    bar.set_length(points.len() as u64);
    let interrupted = daqnet_evb::launcher::interrupted();
    // Points not done yet, checked once in full; then a point is done once its report is there
    // (a point's folder is renamed into place whole).
    let mut left: Vec<usize> = sweep::pending(points, out, Shard::ALL)?.iter().map(|p| p.meta.index).collect();
    let mut failing_since = None::<Instant>;
    let mut changed = true;
    loop {
        let before = left.len();
        left.retain(|&i| !sweep::point_dir(out, i).join("report.json").exists());
        if changed || left.len() != before {
            changed = false;
            bar.set_position((points.len() - left.len()) as u64);
            daqnet_study::table::write(out, &plan.axis_paths(), plan.len())?;
        }
        match active(id) {
            Ok(false) => break,
            Ok(true) => failing_since = None,
            // The controller may be restarting: give it five minutes.
            Err(e) if failing_since.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(300) => {
                return Err(e.context(format!("Slurm has not answered for 5 minutes; job {id} may still run")));
            }
            Err(_) => {}
        }
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            bar.finish_and_clear();
            eprintln!(
                "stopped waiting; job {id} goes on (scancel {id} stops it): run this command again to wait for it"
            );
            return Ok(ExitCode::from(130));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    bar.finish_and_clear();
    finish(plan, points, out, (Some(id), of), a)
}

/// Writes the table and says what is not done: the points tasks recorded as failed (with
/// their reasons) and the shards whose task ended before its points (with its log's end).
fn finish(
    plan: &SweepPlan,
    points: &[Point],
    out: &Path,
    (id, of): (Option<u64>, usize),
    a: &SlurmArgs,
) -> anyhow::Result<ExitCode> {
    let (table, rows) = daqnet_study::table::write(out, &plan.axis_paths(), plan.len())?;
    let failed = failed_points(out);
    let unrun = pending_by_shard(points, out, of, &failed)?;
    if !a.quiet {
        print!("{}", super::sweep::overview(&daqnet_study::table::Table::read(&table)?));
        println!("{rows} of {} points in {}", plan.len(), table.display());
    }
    for (i, why) in &failed {
        eprintln!("error: point {i} failed: {} (--retry-failed runs it again)", why.trim());
    }
    let logs = BatchJob::dir(out);
    for (shard, idx) in &unrun {
        let job = id.map_or(String::new(), |id| format!(" of job {id}"));
        let log = logs.join(format!("task-{shard}.err"));
        eprintln!(
            "error: task {shard}{job} ended with {} points not done ({idx:?}); {} ends:\n{}",
            idx.len(),
            log.display(),
            tail(&log, 5)
        );
    }
    if !unrun.is_empty() {
        eprintln!("run this command again to run the points not done (finished points are kept)");
    }
    Ok(if failed.is_empty() && unrun.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_is_written_in_ranges() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 5, 7, 8]), "0,2-3,5,7-8");
        assert_eq!(array_spec(&[4]), "4");
    }

    #[test]
    fn sbatch_answers_a_job_id() {
        assert_eq!(job_id("4242\n").unwrap(), 4242);
        assert_eq!(job_id("17;cluster2").unwrap(), 17);
        assert!(job_id("Submitted batch job 3").unwrap_err().to_string().contains("not a job id"));
    }

    /// The exact script: each task runs its shard's points of the sweep folder, logs per task,
    /// each --slurm-opt its own #SBATCH line, paths quoted where the shell needs it.
    #[test]
    fn the_batch_script_runs_one_shard_per_task() {
        let job = BatchJob {
            shards: vec![0, 1, 3],
            of: 4,
            exe: "/opt/daqnet/bin/daqnet".into(),
            out: "/data/my sweep".into(),
            cwd: "/home/u/daqnet".into(),
            opts: vec!["--partition=short".into(), "--time=00:10:00".into()],
        };
        assert_eq!(
            job.script(),
            "#!/bin/bash\n\
             #SBATCH --job-name=daqnet-sweep\n\
             #SBATCH --array=0-1,3\n\
             #SBATCH --chdir=/home/u/daqnet\n\
             #SBATCH --output='/data/my sweep/slurm/task-%a.out'\n\
             #SBATCH --error='/data/my sweep/slurm/task-%a.err'\n\
             #SBATCH --partition=short\n\
             #SBATCH --time=00:10:00\n\
             # shard $SLURM_ARRAY_TASK_ID of 4 of the sweep in /data/my sweep (its sweep.json): the points not done\n\
             exec /opt/daqnet/bin/daqnet sweep resume '/data/my sweep' --shard \"$SLURM_ARRAY_TASK_ID/4\" \
             --jobs \"${SLURM_CPUS_PER_TASK:-1}\" -q\n"
        );
    }

    #[test]
    fn failures_are_recorded_per_point() {
        let dir = std::env::temp_dir().join(format!("daqnet-slurm-failed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        record_failure(&dir, 7, "boom").unwrap();
        record_failure(&dir, 12, "bang").unwrap();
        std::fs::write(dir.join("failed").join("notes.txt"), "not a point").unwrap();
        assert_eq!(failed_points(&dir), BTreeMap::from([(7, "boom".into()), (12, "bang".into())]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
