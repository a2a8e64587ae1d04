//! `daqnet sim`: simulate one scenario.

use clap::Args;
use daqnet_core::report::EventRecord;
use daqnet_core::Scenario;
use daqnet_sim::{simulate, FaultPlan, SimOptions};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Simulate a scenario packet by packet.
///
/// Prints a summary table and writes report.json (and events.csv with --per-event) to the
/// output folder. Same scenario and seed give the same report, bit for bit, apart from the
/// wall-clock fields (wall_s, sim_events_per_s).
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet sim scenarios/incast-micro.toml\n  \
daqnet sim scenarios/atlas-2015/switch1.toml --set system.credits_per_node=240 --events 2000\n  \
daqnet sim scenarios/incast-micro.toml --set network.tcp.min_rto_ns=5ms --per-event\n  \
daqnet sim scenarios/fabric/prototype.toml --fail p0-spine1@20ms")]
pub struct SimArgs {
    #[command(flatten)]
    pub scenario: super::ScenarioFlags,
    /// Output folder for report.json and events.csv.
    #[arg(long, default_value = "out/sim")]
    pub out: PathBuf,
    /// Also write events.csv and events.parquet with one row per built event.
    #[arg(long)]
    pub per_event: bool,
    /// No progress bar or summary; only errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Take a fabric element down at a simulated time (repeatable; parallel leaf-spine only):
    /// `plane1@50ms`, `p0-spine1@20ms` (plane 0's spine 1), `p0-leaf2:spine1@1s` (a leaf's link
    /// to a spine). The fabric controller re-plans `network.fabric.reaction_ns` later; the
    /// report's `fabric.faults` says what each failure cost.
    #[arg(long, value_name = "ELEMENT@TIME", value_parser = clap::value_parser!(FaultPlan))]
    pub fail: Vec<FaultPlan>,
}

/// The scenario, with `--fail` checked against its fabric.
pub fn check(a: &SimArgs) -> anyhow::Result<Scenario> {
    let scenario = a.scenario.load()?;
    check_faults(&scenario, &a.fail)?;
    Ok(scenario)
}

/// Checks that every `--fail` names an element of the scenario's fabric.
pub fn check_faults(scenario: &Scenario, faults: &[FaultPlan]) -> anyhow::Result<()> {
    FaultPlan::check_all(scenario, faults).map_err(|e| anyhow::anyhow!("--fail: {e}"))
}

/// Runs the verb.
pub fn run(a: SimArgs) -> anyhow::Result<ExitCode> {
    let scenario = check(&a)?;
    // Nothing of an earlier run may pass for this one's, even if this one is interrupted.
    super::clear_outputs(&a.out, &["report.json", "latency.parquet", "events.csv", "events.parquet"])?;
    let stop = daqnet_evb::launcher::interrupted();
    let total = scenario.run.warmup_events + scenario.run.events;
    let bar = if a.quiet || !std::io::stderr().is_terminal() { ProgressBar::hidden() } else { ProgressBar::new(total) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} simulating [{bar:40}] {pos}/{len} events  {per_sec}  eta {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut progress = |built: u64, _total: u64| bar.set_position(built);
    let out = simulate(
        &scenario,
        &a.scenario.origin(),
        SimOptions {
            progress: Some(&mut progress),
            record_events: a.per_event,
            stop: Some(stop),
            faults: a.fail.clone(),
            ..Default::default()
        },
    );
    bar.finish_and_clear();
    let report_path = super::write_file(&a.out, "report.json", &out.report.to_json())?;
    daqnet_study::columnar::write_latency(&a.out.join("latency.parquet"), &out.report)?;
    if a.per_event {
        super::write_file(&a.out, "events.csv", &EventRecord::to_csv(&out.events))?;
        daqnet_study::columnar::write_events(&a.out.join("events.parquet"), &out.events)?;
    }
    if !a.quiet {
        let verdict: String = daqnet_study::verdict::verdict(&out.report, &scenario, &a.scenario.origin())
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        super::print_lines(&format!(
            "{}  {:<26} {}\n{verdict}",
            out.report.summary_table(),
            "report",
            report_path.display()
        ));
    }
    if out.report.interrupted {
        eprintln!(
            "interrupted: the report covers the {:.3} simulated seconds run so far",
            out.report.sim_work.as_ref().map_or(0.0, |w| w.simulated_s)
        );
        return Ok(ExitCode::from(130));
    }
    if out.report.events_not_built.abandoned > 0 {
        eprintln!(
            "warning: {} events were not built before run.time_limit_s = {} s",
            out.report.events_not_built.abandoned, scenario.run.time_limit_s
        );
    }
    Ok(ExitCode::SUCCESS)
}
