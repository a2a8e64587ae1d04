//! `daqnet pipe`: DAQPIPE's all-to-all event building for real, one process per node.

use clap::{Args, ValueEnum};
use daqnet_core::report::RunReport;
use daqnet_core::Scenario;
use daqnet_evb::pipe::launch::{clean, launch, tcp_node, PipeLaunch};
use daqnet_evb::pipe::mpirun::MpiLaunch;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Run a DAQPIPE event builder for real ([pipe] of the scenario): every node a readout unit and
/// a builder unit, one process per node, node 0 also the event manager.
///
/// Over TCP (the default) daqnet starts the nodes itself on this machine, on loopback. Over MPI
/// (a build with `--features mpi`) the MPI launcher starts them — one rank per node, on one
/// machine or across a cluster: `mpirun -np N daqnet pipe FILE --transport mpi`, with N the
/// scenario's pipe.nodes. Or let daqnet start mpirun itself and watch the job, so that a dead
/// or stopped rank still ends in a report naming it: `daqnet pipe FILE --transport mpi
/// --mpirun="--hostfile hosts"`.
///
/// Every fragment (and synthetic data message) is verified: its length, and a key at both
/// ends naming the run, the event and the sender. The report (report.json, written by node 0)
/// has the common fields plus `pipe`: per-node send and receive bandwidth, the steady-state
/// receive bandwidth per node (the figure to compare across sizes), events built without a lost
/// node's fragments, payloads that failed verification, and the nodes lost, with when each
/// other node noticed. Exit status: 0 when every event was built whole and verified, 1 when
/// not (a node died, a payload failed), 2 on a usage or scenario error.
#[derive(Args)]
#[command(after_help = "Examples:\n  daqnet pipe scenarios/daqpipe/real-tcp.toml\n  \
daqnet pipe scenarios/daqpipe/real-tcp.toml --set pipe.nodes=8 --set pipe.pattern=gather\n  \
daqnet pipe scenarios/daqpipe/real-tcp.toml --kill 2@300ms        # a node dies mid-run\n  \
mpirun -np 4 daqnet pipe scenarios/daqpipe/real-tcp.toml --transport mpi\n  \
daqnet pipe scenarios/daqpipe/real-tcp.toml --transport mpi --mpirun --kill 3@1s  # watched\n\
See docs/daqpipe.md.")]
pub struct PipeArgs {
    #[command(flatten)]
    pub scenario: super::ScenarioFlags,
    /// How the nodes talk: tcp (daqnet starts them on loopback) or mpi (started by mpirun).
    #[arg(long, value_enum, default_value_t = PipeTransport::Tcp)]
    pub transport: PipeTransport,
    /// Output folder for report.json and the resolved scenario.
    #[arg(long, default_value = "out/pipe")]
    pub out: PathBuf,
    /// (mpi) daqnet starts the job itself, `mpirun -np N ARGS daqnet pipe …` (N from the
    /// scenario), and watches it: a rank that dies or stops, and Ctrl-C, end the run with a
    /// report naming what ended it (a bare mpirun leaves none). ARGS are mpirun's own options,
    /// split at spaces, e.g. --mpirun="--hostfile hosts" (root also needs --allow-run-as-root).
    #[arg(long, value_name = "ARGS", num_args = 0..=1, default_missing_value = "", require_equals = true)]
    pub mpirun: Option<String>,
    /// Fault injection (tcp, or mpi with --mpirun: a rank on this machine): kill node K (1 ≤ K < nodes; node 0 is the event manager; with two
    /// processes per node, process K) this long after the start, e.g. 2@300ms. The others should notice within milliseconds, account the
    /// events its builder unit held as lost, and go on without its fragments.
    #[arg(long, value_name = "K@TIME", value_parser = parse_kill)]
    pub kill: Option<(u32, Duration)>,
    /// No progress display and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// (set by the launcher) This process is node R of a tcp run.
    #[arg(long, hide = true)]
    pub rank: Option<u32>,
    /// (set by the launcher) The run's epoch on the monotonic clock, ns.
    #[arg(long, hide = true, default_value_t = 0)]
    pub epoch_ns: u64,
    /// (set by --mpirun) Node 0 prints its epoch and progress lines for the watcher, and stops
    /// the run on SIGTERM.
    #[arg(long, hide = true)]
    pub watched: bool,
    /// (set by the launcher) The scenario's name in the report.
    #[arg(long, hide = true)]
    pub origin: Option<String>,
}

/// How the nodes of a pipe talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PipeTransport {
    /// Kernel TCP, one connection between every two nodes, on loopback.
    Tcp,
    /// MPI point-to-point messages (the `mpi` build feature; start under mpirun).
    Mpi,
}

fn parse_kill(s: &str) -> Result<(u32, Duration), String> {
    let (k, t) = s.split_once('@').ok_or_else(|| format!("`{s}`: expected NODE@TIME, e.g. 2@300ms"))?;
    let k = k.trim().parse().map_err(|_| format!("`{k}` is not a node number"))?;
    let t = humantime::parse_duration(t.trim()).map_err(|e| format!("`{t}`: {e}; e.g. 300ms or 1.5s"))?;
    Ok((k, t))
}

/// The scenario, with the command line checked against it.
pub fn check(a: &PipeArgs) -> anyhow::Result<Scenario> {
    let sc = a.scenario.load_run()?;
    let Some(p) = &sc.pipe else {
        anyhow::bail!("{}: the scenario has no [pipe] section (see docs/daqpipe.md)", a.scenario.file.display());
    };
    if let Some((k, _)) = a.kill {
        let members = daqnet_core::pipe::PipeRoles::of(p, true).members();
        anyhow::ensure!(
            (1..members).contains(&k),
            "--kill {k}@…: the process to kill must be 1..{members} (process 0 hosts the event manager and writes the \
             report; with pipe.processes_per_node = 2, process 2i is node i's readout unit and 2i + 1 its builder unit)",
        );
        anyhow::ensure!(
            a.transport == PipeTransport::Tcp || a.mpirun.is_some(),
            "--kill works with --transport tcp, or with --transport mpi started by --mpirun"
        );
    }
    anyhow::ensure!(
        a.mpirun.is_none() || a.transport == PipeTransport::Mpi,
        "--mpirun starts an MPI job: add --transport mpi"
    );
    Ok(sc)
}

/// Runs the verb.
pub fn run(a: PipeArgs) -> anyhow::Result<ExitCode> {
    let sc = check(&a)?;
    let origin = a.origin.clone().unwrap_or_else(|| a.scenario.origin());
    let bar = super::run::progress_bar(!a.quiet && std::io::stderr().is_terminal());
    let mut progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = match (a.transport, a.rank) {
        (PipeTransport::Tcp, Some(rank)) => {
            // A node started by the launcher: the launcher prints the summary.
            let r = tcp_node(&sc, &origin, &a.out, rank, a.epoch_ns, &mut progress)?;
            bar.finish_and_clear();
            return Ok(exit(r.as_ref().is_none_or(clean)));
        }
        (PipeTransport::Tcp, None) => {
            let opts = PipeLaunch { exe: std::env::current_exe()?, origin, out: a.out.clone(), kill: a.kill };
            Some(launch(&sc, &opts)?.0)
        }
        (PipeTransport::Mpi, _) if a.mpirun.is_some() => {
            anyhow::ensure!(cfg!(feature = "mpi"), "{NO_MPI}");
            let opts = MpiLaunch {
                exe: std::env::current_exe()?,
                origin,
                out: a.out.clone(),
                mpirun_args: a.mpirun.iter().flat_map(|m| m.split_whitespace()).map(String::from).collect(),
                kill: a.kill,
            };
            Some(daqnet_evb::pipe::mpirun::launch(&sc, &opts)?.0)
        }
        (PipeTransport::Mpi, _) => mpi_node(&sc, &origin, &a, &mut progress)?,
    };
    bar.finish_and_clear();
    let Some(report) = report else { return Ok(ExitCode::SUCCESS) };
    daqnet_study::columnar::write_latency(&a.out.join("latency.parquet"), &report)?;
    print_summary(&report, &a);
    Ok(exit(clean(&report)))
}

fn exit(clean: bool) -> ExitCode {
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_summary(r: &RunReport, a: &PipeArgs) {
    if !a.quiet {
        let path = a.out.join("report.json");
        super::print_lines(&format!("{}  {:<26} {}\n", r.summary_table(), "report", path.display()));
    }
}

#[cfg(feature = "mpi")]
fn mpi_node(
    sc: &Scenario,
    origin: &str,
    a: &PipeArgs,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<Option<RunReport>> {
    std::fs::create_dir_all(&a.out)?;
    super::clear_outputs(&a.out, &["latency.parquet"])?;
    daqnet_evb::pipe::mpi::run(sc, |mesh, epoch| {
        // Watched by `--mpirun`: node 0 says when its run started and how it goes, never
        // blocking on it, and stops the run on SIGTERM.
        let watched = a.watched && mesh.me().0 == 0;
        if watched {
            let ns = daqnet_evb::pipe::launch::mono_ns() - epoch.elapsed().as_nanos() as u64;
            println!("{}{ns}", daqnet_evb::pipe::mpirun::EPOCH_LINE);
        }
        let beacon = daqnet_evb::role::Beacon::start(watched);
        let mut tell = |done: u64, total: u64| {
            beacon.set(done, done);
            progress(done, total);
        };
        let stop = watched.then(daqnet_evb::launcher::interrupted);
        daqnet_evb::pipe::run_node(sc, origin, &a.out, mesh, epoch, &mut tell, stop)
    })
}

#[cfg(not(feature = "mpi"))]
fn mpi_node(_: &Scenario, _: &str, _: &PipeArgs, _: &mut dyn FnMut(u64, u64)) -> anyhow::Result<Option<RunReport>> {
    anyhow::bail!("{NO_MPI}")
}

const NO_MPI: &str = "--transport mpi: this daqnet was built without MPI; build it with `cargo build --release \
                      --features mpi` (needs Open MPI: scripts/mpi-deps.sh installs it)";
