//! `daqnet`: simulate, run, emulate and plan DAQ event-building networks.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// daqnet — event-building networks for data acquisition: simulate them packet by packet,
/// sweep what-if configurations, run the same dataflow for real over TCP, and compare with the
/// source studies.
#[derive(Parser)]
#[command(
    name = "daqnet",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Exit status: 0 when the verb did what was asked (a simulation that shows incast included); 1 when \
a run failed (a role died or hung, a fragment failed verification, points of a sweep failed); 2 for a \
usage or input error; 130 when interrupted (Ctrl-C).\n\n\
Start with (incast, then its remedies: README.md):\n  daqnet sim scenarios/incast-micro.toml"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario packet by packet and write report.json.
    Sim(commands::sim::SimArgs),
    /// Run a scenario over every combination of --vary values (parallel, resumable, shardable).
    Sweep(commands::sweep::SweepArgs),
    /// Draw a figure (box, line, histogram) from a sweep table.
    Plot(commands::plot::PlotArgs),
    /// Run a source document's experiment (sweep + figures) in one command; --list shows them.
    Study(commands::study::StudyArgs),
    /// Run a scenario for real over TCP: every role a process on this machine.
    Run(commands::run::RunArgs),
    /// Run a DAQPIPE all-to-all event builder for real, one process per node (TCP or MPI).
    Pipe(commands::pipe::PipeArgs),
    /// Emulate the scenario's network in Linux namespaces and run the real event builder through it.
    Testbed(commands::testbed::TestbedArgs),
    /// Run one sweep in the testbed and in the simulator and compare them point by point.
    ///
    /// What the testbed has and the simulator's model lacks is made alike: the simulator's hosts
    /// get the token buckets the testbed shapes its hosts with and its readout units answer as
    /// late as the testbed's processes (which wake on two shared CPUs), and the testbed's
    /// heartbeats come at most every half peer timeout unless --set or --vary names
    /// deploy.heartbeat_ms (docs/testbed.md, "What validate makes alike").
    Validate(commands::validate::ValidateArgs),
    /// Run the lossless software switch (a queue per collector) on this namespace's interfaces.
    Switch(commands::switch::SwitchArgs),
    /// Plan a parallel leaf-spine fabric: bandwidth formulas, flow placement, link loads, OpenFlow rules.
    Plan(commands::plan::PlanArgs),
    /// Run one role of a real run (supervisor, readout, collector), for deployment on many hosts.
    #[command(name = daqnet_evb::role::VERB)]
    Role(daqnet_evb::role::RoleArgs),
    /// Print the commented default scenario, or check and resolve a scenario file.
    Scenario(commands::scenario::ScenarioArgs),
    /// Measure simulator speed (collision events per wall second) on reference loads.
    Bench(commands::bench::BenchArgs),
    /// Run packetdrill scripts against the simulator's TCP model: PASS, FAIL or UNSUPPORTED each.
    Conform(commands::conform::ConformArgs),
}

/// With this variable set, `daqnet` checks its command line and the scenarios it names, then
/// exits without running anything: how the documentation's commands are tested where they
/// need other hosts, a testbed or an hour.
const PARSE_ONLY: &str = "DAQNET_PARSE_ONLY";

/// What `DAQNET_PARSE_ONLY` checks beyond the command line: the scenario with its `--set`
/// overrides (and every `--vary` point, and the testbed's plan) where the verb takes one.
fn check(c: &Command) -> anyhow::Result<()> {
    match c {
        Command::Sim(a) => commands::sim::check(a).map(drop),
        Command::Sweep(a) => commands::sweep::check(a),
        Command::Run(a) => commands::run::check(a).map(drop),
        Command::Pipe(a) => commands::pipe::check(a).map(drop),
        Command::Testbed(a) => commands::testbed::check(a),
        Command::Validate(a) => commands::validate::check(a),
        Command::Plan(a) => commands::plan::check(a),
        // A role's scenario file lives on its host; plot and study read outputs of earlier
        // runs; switch, scenario and bench have nothing beyond their flags to check.
        Command::Role(_)
        | Command::Plot(_)
        | Command::Study(_)
        | Command::Switch(_)
        | Command::Scenario(_)
        | Command::Bench(_)
        | Command::Conform(_) => Ok(()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Role(_) | Command::Pipe(_)) {
        // Like any Unix filter, end quietly when the reader of our output goes away
        // (`daqnet … | head`). A role keeps SIGPIPE ignored: it must not die of a closed pipe
        // before its report is written; so does a pipe node, whose peer may die mid-write.
        // SAFETY: setting a signal's disposition to the default has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    if std::env::var_os(PARSE_ONLY).is_some() {
        return match check(&cli.command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let result = match cli.command {
        Command::Sim(a) => commands::sim::run(a),
        Command::Sweep(a) => commands::sweep::run(a),
        Command::Plot(a) => commands::plot::run(a),
        Command::Study(a) => commands::study::run(a),
        Command::Run(a) => commands::run::run(a),
        Command::Pipe(a) => commands::pipe::run(a),
        Command::Testbed(a) => commands::testbed::run(a),
        Command::Validate(a) => commands::validate::run(a),
        Command::Switch(a) => commands::switch::run(a),
        Command::Plan(a) => commands::plan::run(a),
        Command::Role(a) => commands::role::run(a),
        Command::Scenario(a) => commands::scenario::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Conform(a) => commands::conform::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            // 1: the run failed; 2: the command line or its input was wrong.
            ExitCode::from(if e.downcast_ref::<commands::RunFailed>().is_some() { 1 } else { 2 })
        }
    }
}
