//! `daqnet sim`: simulate one scenario.

use anyhow::Context;
use clap::Args;
use daqnet_core::report::EventRecord;
use daqnet_core::trace::CaptureSink;
use daqnet_core::Scenario;
use daqnet_sim::trace::{TraceSink, TraceSpec};
use daqnet_sim::{simulate, FaultPlan, SimOptions};
use daqnet_study::capture::{PcapWriter, CAPTURE_FILE};
use daqnet_study::columnar;
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
daqnet sim scenarios/fabric/prototype.toml --fail p0-spine1@20ms\n  \
daqnet sim scenarios/incast-micro.toml --set network.switch.buffer.port_bytes=150kB \\\n    \
--trace 'queue=sw->node0,cwnd=ru0->node0|ru31->node0,every=50us' --events 20")]
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
    /// Record time series to trace-ports.parquet and trace-tcp.parquet: `queue=PORTS` (queue
    /// bytes and drops of ports named like `sw->node0`; globs, `|` between several),
    /// `cwnd=SENDERS` (cwnd, ssthresh, SRTT, in flight and state of TCP senders named
    /// FROM->TO, like `ru5->node0` or `*->node0`), `every=DURATION` (simulated; default 100us).
    /// Draw with `daqnet plot DIR --kind series`.
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(TraceSpec))]
    pub trace: Option<TraceSpec>,
    /// Capture the frames leaving these ports to capture.pcapng (Wireshark, tshark): port names
    /// as in --trace, globs, `|` between several, e.g. `ru*->sw|node0->sw` (every readout
    /// unit's NIC and the collector's: all data and all ACKs of the collector's connections,
    /// each frame once). Headers only (payload cut, original length kept), simulated time.
    #[arg(long, value_name = "PORTS", value_parser = parse_capture)]
    pub pcap: Option<TraceSpec>,
}

/// `--pcap PORTS`: the ports of a trace spec, `queue=PORTS`.
fn parse_capture(ports: &str) -> Result<TraceSpec, String> {
    format!("queue={ports}").parse()
}

/// The scenario, with `--fail` checked against its fabric and `--trace` against its ports and
/// connections.
pub fn check(a: &SimArgs) -> anyhow::Result<Scenario> {
    let scenario = a.scenario.load()?;
    super::check_memory(&scenario, a.per_event)?;
    check_faults(&scenario, &a.fail)?;
    anyhow::ensure!(
        a.pcap.is_none() || scenario.network.rc.is_none(),
        "--pcap: a capture writes TCP segments, and with [network.rc] the connections are queue pairs; \
         trace the ports instead (--trace queue=PORTS)"
    );
    if a.trace.is_some() || a.pcap.is_some() {
        let targets = daqnet_sim::trace_targets(&scenario);
        for (flag, spec) in [("--trace", &a.trace), ("--pcap", &a.pcap)] {
            if let Some(spec) = spec {
                spec.resolve(&targets).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
            }
        }
    }
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
    super::clear_outputs(
        &a.out,
        &[
            "report.json",
            "latency.parquet",
            "events.csv",
            "events.parquet",
            columnar::TRACE_PORTS,
            columnar::TRACE_TCP,
            CAPTURE_FILE,
        ],
    )?;
    if a.trace.is_some() || a.pcap.is_some() {
        // The writers write as the run goes, into the output folder.
        std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    }
    let mut pcap = a.pcap.as_ref().map(|spec| anyhow::Ok((spec, PcapWriter::create(&a.out)?))).transpose()?;
    let mut trace =
        a.trace.as_ref().map(|spec| anyhow::Ok((spec, columnar::TraceWriter::create(&a.out)?))).transpose()?;
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
            trace: trace.as_mut().map(|(spec, w)| ((*spec).clone(), w as &mut dyn TraceSink)),
            capture: pcap.as_mut().map(|(spec, w)| ((*spec).clone(), w as &mut dyn CaptureSink)),
            ..Default::default()
        },
    );
    bar.finish_and_clear();
    let traced =
        trace.map(|(_, w)| w.finish()).transpose().context("cannot write the trace").context(super::RunFailed)?;
    let captured =
        pcap.map(|(_, w)| w.finish()).transpose().context("cannot write the capture").context(super::RunFailed)?;
    // The report last: a folder with a report.json holds every output of the run, whole.
    if a.per_event {
        super::write_file(&a.out, "events.csv", &EventRecord::to_csv(&out.events))?;
        super::write_atomically(&a.out.join("events.parquet"), |f| columnar::write_events(f, &out.events))?;
    }
    super::write_atomically(&a.out.join("latency.parquet"), |f| columnar::write_latency(f, &out.report))?;
    let report_path = super::write_file(&a.out, "report.json", &out.report.to_json())?;
    if !a.quiet {
        if let Some((_, _, (ports, tcp))) = traced {
            println!(
                "trace: {ports} port samples in {}, {tcp} TCP samples in {} (daqnet plot {} --kind series)",
                a.out.join(columnar::TRACE_PORTS).display(),
                a.out.join(columnar::TRACE_TCP).display(),
                a.out.display()
            );
        }
        if let Some(frames) = captured {
            println!("capture: {frames} frames in {}", a.out.join(CAPTURE_FILE).display());
        }
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
