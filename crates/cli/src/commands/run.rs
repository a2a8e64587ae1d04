//! `daqnet run`: the real event builder, every role a process on this machine.

use clap::Args;
use daqnet_core::report::RunReport;
use daqnet_core::{EventId, ReadoutId};
use daqnet_evb::launcher::{check_duration, launch, LaunchOptions};
use daqnet_evb::net::tcp_trace;
use daqnet_study::columnar::{TRACE_PORTS, TRACE_TCP};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a scenario for real: the same dataflow as `daqnet sim`, over real TCP sockets.
///
/// Starts the supervisor, one process per readout unit and one collector process per node on
/// loopback (free ports), builds the events, verifies every fragment (event, source, size and
/// every payload byte), and writes the same report.json as `daqnet sim` with substrate = "run".
/// Reads [system], [run] and [deploy]; [network] describes a simulated network and is not used.
/// Every outcome leaves a report.json: a role that dies or hangs is named in its faults, with
/// the events not built; Ctrl-C stops the run and the report says `"interrupted": true`.
/// Exit status: 0 when every event was built and verified, 1 when the run failed (a role died or
/// hung, a fragment failed verification, interrupted), 2 on a usage or scenario error.
#[derive(Args)]
#[command(after_help = "Examples:\n  daqnet run scenarios/incast-micro.toml --events 200\n  \
daqnet run scenarios/run/atlas-small.toml --set system.supervisor.policy=node_round_robin \\\n    \
--metrics 127.0.0.1:9464\n  \
daqnet run scenarios/run/atlas-small.toml --duration-s 30 --out out/run30\n\
To run on several hosts, start each role with `daqnet role` (see docs/run.md).")]
pub struct RunArgs {
    #[command(flatten)]
    pub scenario: super::ScenarioFlags,
    /// Run for this many wall seconds instead of a number of events.
    #[arg(long, value_name = "SECONDS")]
    pub duration_s: Option<f64>,
    /// Output folder for report.json, events.csv (and events.parquet), roles.json (role → pid) and
    /// the resolved scenario.
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// Also write events.csv and events.parquet with one row per built event.
    #[arg(long)]
    pub per_event: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while running (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Record the TCP senders' windows, as `daqnet sim --trace` does, to trace-tcp.parquet:
    /// `cwnd=SENDERS,every=DURATION` with the simulator's names (`ru3->node0` responses,
    /// `node0->ru3` requests); each role reads getsockopt(TCP_INFO) of its sockets. On loopback
    /// there is no switch: no `queue=` (the testbed has one: `daqnet testbed run --trace`).
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(daqnet_sim::trace::TraceSpec))]
    pub trace: Option<daqnet_sim::trace::TraceSpec>,
    /// Testing aid: readout unit R corrupts one payload byte of event E (repeatable).
    #[arg(long, value_name = "R:E", value_parser = parse_corrupt)]
    pub corrupt: Vec<(ReadoutId, EventId)>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_corrupt(s: &str) -> Result<(ReadoutId, EventId), String> {
    let (r, e) = s.split_once(':').ok_or_else(|| format!("`{s}`: expected READOUT:EVENT, e.g. 2:10"))?;
    Ok((
        ReadoutId(r.trim().parse().map_err(|_| format!("`{r}` is not a readout unit number"))?),
        EventId(e.trim().parse().map_err(|_| format!("`{e}` is not an event number"))?),
    ))
}

/// The scenario, with the command line checked against it.
pub fn check(a: &RunArgs) -> anyhow::Result<daqnet_core::Scenario> {
    let scenario = a.scenario.load_run()?;
    anyhow::ensure!(
        scenario.network.rc.is_none(),
        "field network.rc: is set; a real run's roles talk over TCP sockets (a queue pair needs RDMA \
         hardware); the simulator runs queue pairs (`daqnet sim`)"
    );
    if let Some(d) = a.duration_s {
        check_duration("--duration-s", d)?;
    }
    if let Some(addr) = &a.metrics {
        use std::net::ToSocketAddrs;
        addr.to_socket_addrs()
            .map_err(|e| anyhow::anyhow!("--metrics {addr}: {e}; give HOST:PORT, e.g. 127.0.0.1:9464"))?;
    }
    if let Some(spec) = &a.trace {
        anyhow::ensure!(
            spec.ports.is_empty(),
            "--trace: a run on loopback has no switch queues (queue=); the testbed has"
        );
        anyhow::ensure!(scenario.farm.is_none(), "--trace: a sub-farm's TCP senders are not traced in real runs");
        let senders = daqnet_sim::trace_targets(&scenario).senders;
        let targets = daqnet_sim::trace::Targets { ports: Vec::new(), senders };
        spec.resolve(&targets).map_err(|e| anyhow::anyhow!("--trace: {e}"))?;
    }
    for &(r, _) in &a.corrupt {
        anyhow::ensure!(
            scenario.layout().has_readout(r),
            "--corrupt {r}:…: the scenario has readout units 0..{}",
            scenario.system.readout_units
        );
    }
    Ok(scenario)
}

/// Runs the verb.
pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let scenario = check(&a)?;
    let bar = progress_bar(!a.quiet && std::io::stderr().is_terminal());
    let mut opts = LaunchOptions {
        exe: std::env::current_exe()?,
        origin: a.scenario.origin(),
        out: a.out.clone(),
        per_event: a.per_event,
        metrics: a.metrics,
        duration_s: a.duration_s,
        corrupt: a.corrupt,
        place: None,
        trace: a.trace.clone(),
        progress: Some(Box::new({
            let bar = bar.clone();
            move |done, total| {
                if let Some(t) = total {
                    bar.set_length(t);
                }
                bar.set_position(done);
            }
        })),
    };
    if a.trace.is_some() {
        tcp_trace::remove_stale(&a.out)?;
        super::clear_outputs(&a.out, &[TRACE_PORTS, TRACE_TCP])?;
    }
    let zero = tcp_trace::monotonic_ns();
    let run = launch(&scenario, &mut opts)?;
    bar.finish_and_clear();
    parquet_outputs(&a.out, &run.report, a.per_event)?;
    if a.trace.is_some() {
        let (senders, windows) = tcp_trace::collect(&a.out, zero)?;
        daqnet_study::columnar::write_trace(&a.out, (&[], &[]), (&senders, &windows))?;
    }
    if !a.quiet {
        super::print_lines(&format!("{}  {:<26} {}\n", run.report.summary_table(), "report", run.path.display()));
    }
    super::say_failure(a.quiet, run.code, &run.report, &run.path);
    Ok(ExitCode::from(run.code as u8))
}

/// A real run's Parquet files in `out`: `latency.parquet` from its report, and with
/// `per_event` `events.parquet` beside the `events.csv` its head role wrote (none if it wrote
/// none: a run that failed early).
pub fn parquet_outputs(out: &std::path::Path, report: &RunReport, per_event: bool) -> anyhow::Result<()> {
    daqnet_study::columnar::write_latency(&out.join("latency.parquet"), report)?;
    let csv = out.join("events.csv");
    if per_event && csv.exists() {
        daqnet_study::columnar::events_from_csv(&csv, &out.join("events.parquet"))?;
    }
    Ok(())
}

/// Events finished out of all (or a count, for a timed run), on stderr.
pub fn progress_bar(show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0)
        .with_style(ProgressStyle::with_template("{bar:30} {pos}/{len} events  {elapsed}").expect("valid template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}
