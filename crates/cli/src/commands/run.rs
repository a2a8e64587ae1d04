//! `daqnet run`: the real event builder, every role a process on this machine.

use clap::Args;
use daqnet_evb::launcher::{launch, LaunchOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a scenario for real: the same dataflow as `daqnet sim`, over real TCP sockets.
///
/// Starts the supervisor, one process per readout unit and one collector process per node on
/// loopback (free ports), builds the events, verifies every fragment (event, source, size and
/// every payload byte), and writes the same report.json as `daqnet sim` with substrate = "run".
/// Reads [system], [run] and [deploy]; [network] describes a simulated network and is not used.
/// Exit status: 0 when every event was built and verified, 1 when the run failed (a role died or
/// hung, a fragment failed verification), 2 on a usage or scenario error.
#[derive(Args)]
#[command(after_help = "Examples:\n  daqnet run scenarios/incast-micro.toml --events 200\n  \
daqnet run scenarios/run/atlas-mini.toml --set system.supervisor.policy=node_round_robin --metrics 127.0.0.1:9464\n  \
daqnet run scenarios/run/atlas-mini.toml --duration-s 30 --out out/run30\n\
To run on several hosts, start each role with `daqnet role` (see docs/run.md).")]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub file: PathBuf,
    /// Override a field: dotted.path=value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Measured events (overrides run.events).
    #[arg(long)]
    pub events: Option<u64>,
    /// Run for this many wall seconds instead of a number of events.
    #[arg(long, value_name = "SECONDS")]
    pub duration_s: Option<f64>,
    /// Seed (overrides run.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output folder for report.json, events.csv, roles.json (role → pid) and the resolved scenario.
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// Also write events.csv with one row per built event.
    #[arg(long)]
    pub per_event: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while running (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Testing aid: readout unit R corrupts one payload byte of event E (repeatable).
    #[arg(long, value_name = "R:E", value_parser = parse_corrupt)]
    pub corrupt: Vec<(u32, u64)>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_corrupt(s: &str) -> Result<(u32, u64), String> {
    let (r, e) = s.split_once(':').ok_or_else(|| format!("`{s}`: expected READOUT:EVENT, e.g. 2:10"))?;
    Ok((
        r.trim().parse().map_err(|_| format!("`{r}` is not a readout unit number"))?,
        e.trim().parse().map_err(|_| format!("`{e}` is not an event number"))?,
    ))
}

/// Runs the verb.
pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let mut sets = a.set.clone();
    if let Some(e) = a.events {
        sets.push(format!("run.events={e}"));
    }
    if let Some(s) = a.seed {
        sets.push(format!("run.seed={s}"));
    }
    let scenario = super::load_run_scenario(&a.file, &sets)?;
    if let Some(d) = a.duration_s {
        anyhow::ensure!(d.is_finite() && d > 0.0, "--duration-s {d}: must be a positive number of seconds");
    }
    for &(r, _) in &a.corrupt {
        anyhow::ensure!(
            r < scenario.system.readout_units,
            "--corrupt {r}:…: the scenario has readout units 0..{}",
            scenario.system.readout_units
        );
    }
    let opts = LaunchOptions {
        exe: std::env::current_exe()?,
        origin: a.file.display().to_string(),
        out: a.out,
        per_event: a.per_event,
        metrics: a.metrics,
        duration_s: a.duration_s,
        corrupt: a.corrupt,
        quiet: a.quiet,
        no_summary: false,
        place: None,
    };
    let code = launch(&scenario, &opts)?;
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
