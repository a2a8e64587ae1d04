//! One module per `daqnet` verb.

pub mod bench;
pub mod conform;
pub mod pipe;
pub mod plan;
pub mod plot;
pub mod role;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod slurm;
pub mod study;
pub mod sweep;
pub mod switch;
pub mod testbed;
pub mod validate;

use anyhow::Context;
use clap::Args;
use daqnet_core::Scenario;
use daqnet_study::sweep::SweepEvent;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// The overrides every verb that reads a scenario takes.
#[derive(Args, Debug, Clone)]
pub struct Overrides {
    /// Override a field: dotted.path=value (repeatable), e.g. system.credits_per_node=240.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Measured events (overrides run.events).
    #[arg(long)]
    pub events: Option<u64>,
    /// Seed (overrides run.seed).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl Overrides {
    /// The `--set` overrides with `--events` and `--seed` added.
    pub fn sets(&self) -> Vec<String> {
        let mut sets = self.set.clone();
        sets.extend(self.events.map(|e| format!("run.events={e}")));
        sets.extend(self.seed.map(|s| format!("run.seed={s}")));
        sets
    }
}

/// The scenario and its overrides.
#[derive(Args, Debug, Clone)]
pub struct ScenarioFlags {
    /// Scenario file (TOML). `daqnet scenario --print-default` shows every field.
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
}

impl ScenarioFlags {
    /// The `--set` overrides with `--events` and `--seed` added.
    pub fn sets(&self) -> Vec<String> {
        self.overrides.sets()
    }

    /// The scenario, overrides applied and checked.
    pub fn load(&self) -> anyhow::Result<Scenario> {
        load_scenario(&self.file, &self.sets())
    }

    /// The scenario for a real run (also checks `[deploy]`).
    pub fn load_run(&self) -> anyhow::Result<Scenario> {
        load_run_scenario(&self.file, &self.sets())
    }

    /// The scenario's name in reports: its file.
    pub fn origin(&self) -> String {
        self.file.display().to_string()
    }
}

/// A progress bar for a sweep (hidden when `quiet` or stderr is not a terminal), and the
/// observer that drives it. A sweep that resumes from an earlier run says so even when quiet:
/// results of another build must not pass for new ones unannounced.
pub fn sweep_progress(quiet: bool) -> (ProgressBar, impl Fn(SweepEvent) + Sync) {
    let bar = if quiet || !std::io::stderr().is_terminal() { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} sweep [{bar:40}] {pos}/{len} points  {elapsed} elapsed, eta {eta}  {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let b = bar.clone();
    let observe = move |e: SweepEvent| match e {
        SweepEvent::Resuming { done, of, folder } => {
            let note = format!(
                "resuming: {done} of {of} points already done in {} (remove it to measure them again)",
                folder.display()
            );
            if b.is_hidden() {
                eprintln!("{note}");
            } else {
                b.println(note);
            }
        }
        SweepEvent::Starting { points } => b.set_length(points as u64),
        SweepEvent::Finished { index } => {
            b.set_message(format!("last: p{index:04}"));
            b.inc(1);
        }
    };
    (bar, observe)
}

/// Loads a scenario with `--set` overrides, turning its errors into one readable message.
pub fn load_scenario(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    daqnet_core::scenario::load(path, sets).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Loads a scenario for a real run: [`load_scenario`] plus the checks only a real run needs.
pub fn load_run_scenario(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    daqnet_evb::load_run_scenario(path, sets)
}

/// What a quiet (`-q`) real or testbed run still says when it fails (exit status `code` ≠ 0):
/// its faults, or where its report is, on standard error — a quiet run prints only errors, but
/// never fails in silence.
pub fn say_failure(quiet: bool, code: i32, report: &daqnet_core::report::RunReport, path: &Path) {
    if !quiet || code == 0 {
        return;
    }
    let faults = report.fault_lines();
    if faults.is_empty() {
        eprintln!("error: the run ended with exit status {code}; its report: {}", path.display());
    }
    for f in faults {
        eprintln!("error: fault {f}");
    }
}

/// Prints `text` on stdout; a closed stdout (the reader went away) is not an error worth dying
/// of, so it is ignored.
pub fn print_lines(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Removes the files a verb writes into `dir` (those that exist), so that a run that fails or
/// is interrupted cannot leave an earlier run's file looking like its own.
pub fn clear_outputs(dir: &Path, names: &[&str]) -> anyhow::Result<()> {
    for n in names {
        let p = dir.join(n);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove the earlier {}", p.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

pub use daqnet_core::output::RunFailed;

/// Writes `text` to `dir/name` ([`write_atomically`]).
pub fn write_file(dir: &Path, name: &str, text: &str) -> anyhow::Result<std::path::PathBuf> {
    use std::io::Write;
    let path = dir.join(name);
    write_atomically(&path, |tmp| Ok(std::fs::File::create(tmp)?.write_all(text.as_bytes())?))?;
    Ok(path)
}

/// Writes `path` through `write`, which fills a temporary file beside it (creating the folder);
/// the file is synced and renamed into place, so a file by that name is always whole. On
/// failure the temporary file is removed and the error, naming `path`, is a [`RunFailed`].
pub fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    daqnet_core::output::write_atomically(path, write)
        .with_context(|| format!("cannot write {}", path.display()))
        .context(RunFailed)
}

/// Refuses a simulation of `scenario` that would not fit in this machine's available memory,
/// before anything is allocated, naming the field that sizes it and the estimate.
pub fn check_memory(scenario: &Scenario, per_event: bool) -> anyhow::Result<()> {
    let Some(available) = available_memory_bytes() else { return Ok(()) };
    let need = daqnet_sim::memory_estimate(scenario, per_event);
    anyhow::ensure!(
        need.bytes <= available,
        "field `{}`: is {}; the simulation would hold about {:.1} GB ({}), more than the {:.1} GB this \
         machine has available; make it smaller",
        need.field,
        need.value,
        need.bytes as f64 / 1e9,
        need.what,
        available as f64 / 1e9
    );
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in bytes (`None` where there is none).
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
}

/// Worker threads by default: one per CPU core.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A sweep runner that simulates each point; with `trace` (a spec, a scratch folder) each
/// point also records its trace.
pub fn sim_point(
    per_event: bool,
    trace: Option<(daqnet_sim::trace::TraceSpec, PathBuf)>,
) -> impl Fn(&daqnet_study::sweep::Point) -> anyhow::Result<daqnet_study::sweep::PointOutput> + Sync {
    move |p| {
        check_memory(&p.scenario, per_event)?;
        let stop = Some(daqnet_evb::launcher::interrupted());
        let mut opts = daqnet_sim::SimOptions { record_events: per_event, stop, ..Default::default() };
        // A trace goes to a scratch folder of its own; the sweep moves it into the point's.
        let mut writer = None;
        if let Some((spec, scratch)) = &trace {
            let dir = scratch.join(format!("p{:04}", p.meta.index));
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            writer = Some((spec, dir.clone(), daqnet_study::columnar::TraceWriter::create(&dir)?));
        }
        opts.trace = writer.as_mut().map(|(spec, _, w)| ((*spec).clone(), w as &mut dyn daqnet_sim::trace::TraceSink));
        let out = daqnet_sim::simulate(&p.scenario, &p.origin, opts);
        let mut files = Vec::new();
        if let Some((_, dir, w)) = writer {
            w.finish().context("cannot write the trace")?;
            let names = [daqnet_study::columnar::TRACE_PORTS, daqnet_study::columnar::TRACE_TCP];
            files.extend(names.map(|n| dir.join(n)));
        }
        Ok(daqnet_study::sweep::PointOutput { report: out.report, events: out.events, files })
    }
}
