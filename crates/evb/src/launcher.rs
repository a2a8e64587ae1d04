//! `daqnet run`: starts every role of a scenario as its own process on this machine (the
//! supervisor first, on a free loopback port unless `deploy.supervisor` says otherwise), waits
//! for the supervisor to finish, and makes sure no role outlives the run.

use anyhow::{anyhow, bail, Context};
use daqnet_core::{EventId, ReadoutId, Scenario};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A role of a run, as the launcher starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleName {
    /// The supervisor.
    Supervisor,
    /// Readout unit `i`.
    Readout(u32),
    /// The collector of node `i`.
    Collector(u32),
}

impl std::fmt::Display for RoleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleName::Supervisor => write!(f, "supervisor"),
            RoleName::Readout(i) => write!(f, "readout {i}"),
            RoleName::Collector(i) => write!(f, "collector {i}"),
        }
    }
}

/// Prepares a role's command before it starts, e.g. to run it inside a network namespace
/// (the testbed). Without one, every role runs where the launcher runs.
pub type Placement = Arc<dyn Fn(RoleName, &mut Command) -> anyhow::Result<()> + Send + Sync>;

/// What `daqnet run` was asked to do.
#[derive(Clone, Default)]
pub struct LaunchOptions {
    /// The `daqnet` executable to start roles with.
    pub exe: PathBuf,
    /// The scenario's name in the report.
    pub origin: String,
    /// Output folder: report, per-event CSV, the resolved scenario, `roles.json`.
    pub out: PathBuf,
    /// Per-event CSV.
    pub per_event: bool,
    /// Prometheus endpoint address.
    pub metrics: Option<String>,
    /// Run for this many seconds instead of a number of events.
    pub duration_s: Option<f64>,
    /// Fault injection: corrupt (readout unit, event).
    pub corrupt: Vec<(ReadoutId, EventId)>,
    /// No progress display.
    pub quiet: bool,
    /// The supervisor prints no summary (the caller prints its own).
    pub no_summary: bool,
    /// Where each role runs (default: here).
    pub place: Option<Placement>,
}

/// A started role.
struct Proc {
    name: String,
    child: Child,
}

/// Runs the scenario with every role as a local process; returns the supervisor's exit code
/// (0: every event built and verified).
pub fn launch(sc: &Scenario, opts: &LaunchOptions) -> anyhow::Result<i32> {
    let dir = &opts.out;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Every role reads the resolved scenario, so `--set` overrides reach all of them.
    let file = dir.join("scenario.toml");
    std::fs::write(&file, sc.to_toml()).with_context(|| format!("cannot write {}", file.display()))?;
    run_processes(sc, opts, &file)
}

fn role(opts: &LaunchOptions, file: &Path, name: RoleName) -> anyhow::Result<Command> {
    let mut c = Command::new(&opts.exe);
    let kind = match name {
        RoleName::Supervisor => "supervisor",
        RoleName::Readout(_) => "readout",
        RoleName::Collector(_) => "collector",
    };
    c.arg("role").arg(kind).arg("--scenario").arg(file);
    if let RoleName::Readout(i) | RoleName::Collector(i) = name {
        c.args(["--index", &i.to_string()]);
    }
    if let Some(place) = &opts.place {
        place(name, &mut c).with_context(|| format!("cannot place {name}"))?;
    }
    Ok(c)
}

fn run_processes(sc: &Scenario, opts: &LaunchOptions, file: &Path) -> anyhow::Result<i32> {
    let mut procs: Vec<Proc> = Vec::new();
    let mut sup = role(opts, file, RoleName::Supervisor)?;
    sup.args(["--announce", "--origin", &opts.origin]).stdout(Stdio::piped());
    sup.arg("--out").arg(&opts.out);
    if opts.per_event {
        sup.arg("--per-event");
    }
    if let Some(m) = &opts.metrics {
        sup.args(["--metrics", m]);
    }
    if let Some(d) = opts.duration_s {
        sup.args(["--duration-s", &d.to_string()]);
    }
    if opts.quiet {
        sup.arg("--quiet");
    }
    if opts.no_summary {
        sup.arg("--no-summary");
    }
    let mut child = sup.spawn().with_context(|| format!("cannot start {}", opts.exe.display()))?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped"));
    procs.push(Proc { name: "supervisor".into(), child });
    let mut first = String::new();
    lines.read_line(&mut first)?;
    let Some(addr) = first.trim().strip_prefix("daqnet supervisor listening on ") else {
        let status = procs[0].child.wait()?;
        bail!("the supervisor did not start ({status}); its error is above");
    };
    let addr = addr.to_string();
    // Forward the rest of the supervisor's output (its summary).
    let forward = std::thread::spawn(move || {
        let mut out = std::io::stdout();
        for line in lines.lines().map_while(Result::ok) {
            let _ = writeln!(out, "{line}");
        }
    });
    let started = (|| -> anyhow::Result<()> {
        for r in 0..sc.system.readout_units {
            let mut c = role(opts, file, RoleName::Readout(r))?;
            c.args(["--supervisor", &addr]);
            for (_, e) in opts.corrupt.iter().filter(|(cr, _)| *cr == r) {
                c.args(["--corrupt-event", &e.to_string()]);
            }
            procs.push(Proc { name: RoleName::Readout(r).to_string(), child: c.spawn()? });
        }
        for n in 0..sc.system.nodes {
            let mut c = role(opts, file, RoleName::Collector(n))?;
            c.args(["--supervisor", &addr]);
            procs.push(Proc { name: RoleName::Collector(n).to_string(), child: c.spawn()? });
        }
        Ok(())
    })();
    let roles: Vec<serde_json::Value> =
        procs.iter().map(|p| serde_json::json!({ "role": p.name, "pid": p.child.id() })).collect();
    let _ = std::fs::write(opts.out.join("roles.json"), serde_json::to_string_pretty(&roles)?);
    let code = match started {
        Ok(()) => wait_for_supervisor(&mut procs),
        Err(e) => Err(anyhow!("cannot start a role: {e}")),
    };
    // No role outlives the run: give them a moment to exit on their own, then kill.
    let grace = Instant::now() + Duration::from_secs(1);
    for p in &mut procs {
        while Instant::now() < grace && matches!(p.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(p.child.try_wait(), Ok(None)) {
            eprintln!("daqnet run: {} did not exit; killing it", p.name);
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
    let _ = forward.join();
    code
}

fn wait_for_supervisor(procs: &mut [Proc]) -> anyhow::Result<i32> {
    loop {
        if let Some(status) = procs[0].child.try_wait()? {
            return Ok(status.code().unwrap_or(1));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
