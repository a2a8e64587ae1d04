//! `daqnet role`: one role of a real run, alone, for deployment on many hosts.

use anyhow::Context;
use clap::{Args, ValueEnum};
use daqnet_core::report::EventRecord;
use daqnet_evb::block_on;
use daqnet_evb::roles::{collector, readout, supervisor};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The roles.
#[derive(Clone, Copy, ValueEnum)]
pub enum RoleName {
    /// Assigns events, clears them, collects results and writes report.json.
    Supervisor,
    /// A readout unit: generates its fragments and serves data requests.
    Readout,
    /// The collector of one node with its processing units.
    Collector,
}

/// Run one role of a real run (`daqnet run` starts them all on one machine).
///
/// Every role reads the same scenario. The supervisor listens on deploy.supervisor (or
/// --listen); the others connect to it (deploy.supervisor or --supervisor), register, and wait
/// for the run to start. Readout units listen on deploy.readouts[INDEX] (or --listen, or a free
/// loopback port). Start-up waits deploy.startup_timeout_ms for every peer, then names who is
/// missing.
#[derive(Args)]
#[command(
    after_help = "Example, three hosts (deploy.supervisor = \"10.0.0.1:7700\", deploy.readouts = [\"10.0.0.2:7800\", ...]):\n  \
10.0.0.1$ daqnet role supervisor --scenario s.toml --out out/run\n  \
10.0.0.2$ daqnet role readout --scenario s.toml --index 0\n  \
10.0.0.3$ daqnet role collector --scenario s.toml --index 0"
)]
pub struct RoleArgs {
    /// Which role.
    pub role: RoleName,
    /// Scenario file (TOML).
    #[arg(long)]
    pub scenario: PathBuf,
    /// Override a field: dotted.path=value (repeatable). Every role must see the same scenario.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Readout unit or node number (readout, collector).
    #[arg(long, default_value_t = 0)]
    pub index: u32,
    /// Supervisor address (default: deploy.supervisor).
    #[arg(long, value_name = "ADDR")]
    pub supervisor: Option<String>,
    /// Listen address (supervisor, readout).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// (supervisor) Output folder for report.json.
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// (supervisor) Also write events.csv.
    #[arg(long)]
    pub per_event: bool,
    /// (supervisor) Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// (supervisor) Run for this many seconds instead of a number of events.
    #[arg(long, value_name = "SECONDS")]
    pub duration_s: Option<f64>,
    /// (supervisor) Name of the scenario in the report (default: the --scenario path).
    #[arg(long, hide = true)]
    pub origin: Option<String>,
    /// (supervisor) Print "daqnet supervisor listening on ADDR" once bound (used by daqnet run).
    #[arg(long, hide = true)]
    pub announce: bool,
    /// (readout) Testing aid: corrupt one payload byte of this event.
    #[arg(long, value_name = "EVENT")]
    pub corrupt_event: Option<u64>,
    /// (supervisor) No progress display or summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// (supervisor) No summary (the progress display stays); used by `daqnet testbed run`.
    #[arg(long, hide = true)]
    pub no_summary: bool,
}

/// Runs the verb.
pub fn run(a: RoleArgs) -> anyhow::Result<ExitCode> {
    let sc = super::load_run_scenario(&a.scenario, &a.set)?;
    let supervisor_addr = a.supervisor.clone().unwrap_or_else(|| sc.deploy.supervisor.clone());
    match a.role {
        RoleName::Readout => {
            let opts = readout::ReadoutOptions {
                index: a.index,
                supervisor: supervisor_addr,
                listen: a.listen,
                corrupt_event: a.corrupt_event,
            };
            anyhow::ensure!(
                a.index < sc.system.readout_units,
                "--index {}: the scenario has readout units 0..{}",
                a.index,
                sc.system.readout_units
            );
            role_exit(block_on(1, readout::run(&sc, opts))?)
        }
        RoleName::Collector => {
            anyhow::ensure!(
                a.index < sc.system.nodes,
                "--index {}: the scenario has nodes 0..{}",
                a.index,
                sc.system.nodes
            );
            let opts = collector::CollectorOptions { index: a.index, supervisor: supervisor_addr };
            // Two threads: fragments are verified on the connection tasks, in parallel.
            role_exit(block_on(1, collector::run(&sc, opts))?)
        }
        RoleName::Supervisor => {
            let opts = supervisor::SupervisorOptions {
                origin: a.origin.unwrap_or_else(|| a.scenario.display().to_string()),
                listen: a.listen,
                announce: a.announce,
                metrics: a.metrics,
                duration: a.duration_s.map(Duration::from_secs_f64),
                progress: !a.quiet && std::io::stderr().is_terminal(),
                per_event: a.per_event,
            };
            let outcome = block_on(1, supervisor::run(&sc, opts))??;
            let path = super::write_file(&a.out, "report.json", &outcome.report.to_json())?;
            if a.per_event {
                super::write_file(&a.out, "events.csv", &EventRecord::to_csv(&outcome.events))
                    .context("cannot write the per-event records")?;
            }
            if !a.quiet && !a.no_summary {
                print!("{}", outcome.report.summary_table());
                println!("  {:<26} {}", "report", path.display());
            }
            Ok(if outcome.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn role_exit(r: anyhow::Result<()>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(1))
        }
    }
}
