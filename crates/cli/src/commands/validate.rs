//! `daqnet validate`: the same sweep in the testbed and in the simulator, side by side.

use clap::Args;
use daqnet_core::scenario::Credits;
use daqnet_study::columnar::{TRACE_PORTS, TRACE_TCP};
use daqnet_study::compare::{self, Criteria};
use daqnet_study::plot::{draw, Kind, PlotSpec};
use daqnet_study::sweep::{self, ExecOptions, Point, PointOutput, Shard, SweepPlan};
use daqnet_study::table::Table;
use daqnet_study::trajectory;
use daqnet_study::vary::Axis;
use daqnet_testbed::run::TestbedRunOptions;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run one sweep in the testbed (real Linux TCP through emulated switches) and in the simulator,
/// and compare them point by point, as [ATLAS-DC] §6 validated its simulator against the real
/// ATLAS system.
///
/// Writes DIR/testbed/ and DIR/sim/ (ordinary sweep folders: resumable, one report.json per
/// point), DIR/compare.csv (both sides per point), DIR/table.csv (both tables with a
/// `substrate` column, for `daqnet plot`), DIR/latency.png (boxes per point, both substrates)
/// and DIR/slow-events.png (share of events that waited ≥ 100 ms). Prints the comparison and the
/// agreement figures: medians within ±20 % where neither side has timeouts, shares of ≥ 100 ms
/// events within a factor 2, and the incast onset along the first --vary axis within ±25 %
/// (with --repeat, of each side's means over its runs).
/// Testbed points run one at a time (needs root); simulator points in parallel.
///
/// Two properties of the testbed that the simulator's model lacks are made alike: the
/// simulator's hosts get the token buckets the testbed shapes its hosts with
/// (network.host_burst_ns), and the testbed's heartbeats come no more often than half the peer
/// timeout unless deploy.heartbeat_ms is set (the simulator sends none, and they change when
/// Linux acknowledges).
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet validate scenarios/testbed/incast-32.toml \\\n    \
--vary network.switch.buffer.port_bytes=100kB,200kB,400kB,1MB,4MB\n  \
daqnet validate scenarios/testbed/atlas-mini.toml --vary system.credits_per_node=48,96,192,384\n  \
daqnet validate scenarios/testbed/atlas-mini.toml --repeat 5 \\\n    \
--vary system.credits_per_node=96,192,384\n  \
daqnet validate scenarios/testbed/incast-32.toml --set network.node_link_bps=100M \\\n    \
--set network.readout_link_bps=100M --vary network.switch.buffer.port_bytes=50kB,1MB \\\n    \
--trace 'queue=sw->node0,cwnd=ru*->node0,every=1ms'")]
pub struct ValidateArgs {
    /// The scenario; it must be one the testbed can build (star topology, dedicated buffers).
    #[command(flatten)]
    scenario: super::ScenarioFlags,
    /// A swept field: dotted.path=LIST (repeatable). The incast onset is read along the first.
    #[arg(long = "vary", value_name = "PATH=LIST", required = true)]
    vary: Vec<String>,
    /// Runs per point on each side, with seeds run.seed, run.seed + 1, …; the comparison then
    /// uses each side's means and shows the range of the share of slow events. Use it where
    /// single runs scatter (near an incast onset both real TCP and the model are sensitive to
    /// timing: docs/testbed.md).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Output folder (default: out/validate/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A point has incast when at least this share of its events waited ≥ 100 ms.
    #[arg(long, default_value_t = 0.01)]
    incast_share: f64,
    /// Also record time series on both sides (`queue=sw->node0,cwnd=ru*->node0,every=1ms`, as
    /// `daqnet testbed run --trace` takes it) and compare their trajectories: per port the
    /// queue's mean, 90th percentile and peak while it is in use, over the TCP senders the
    /// window's median and 90th percentile, segments in flight, SRTT and the share of time in
    /// loss recovery (DIR/trajectories.csv; each point's traces stay in its folder, for
    /// `daqnet plot DIR/testbed/points/p0000 DIR/sim/points/p0000 --kind series`).
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(daqnet_sim::trace::TraceSpec))]
    trace: Option<daqnet_sim::trace::TraceSpec>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

/// The sweep both sides run, every point checked to be one the testbed can build before
/// anything runs.
fn plan(a: &ValidateArgs, sets: Vec<String>) -> anyhow::Result<SweepPlan> {
    let axes = a
        .vary
        .iter()
        .map(|v| Axis::parse(v).map_err(|e| anyhow::anyhow!("--vary {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    anyhow::ensure!(
        (0.0..=1.0).contains(&a.incast_share),
        "--incast-share {}: a share between 0 and 1",
        a.incast_share
    );
    let plan = SweepPlan::single(&a.scenario.file, sets, axes, a.repeat, false);
    for p in plan.points()? {
        let testbed = daqnet_testbed::plan::TestbedPlan::checked(&p.scenario, "check", &p.origin)?;
        if let Some(spec) = &a.trace {
            testbed.check_trace(spec).map_err(|e| anyhow::anyhow!("--trace (testbed): {e}"))?;
            let sim = daqnet_sim::trace_targets(&p.scenario);
            spec.resolve(&sim).map_err(|e| anyhow::anyhow!("--trace (simulator): {e}"))?;
        }
    }
    Ok(plan)
}

/// Checks the command line and every point's scenario without running anything.
pub fn check(a: &ValidateArgs) -> anyhow::Result<()> {
    plan(a, a.scenario.sets()).map(drop)
}

/// What the testbed has and the simulator's model has not, made alike on both sides
/// (docs/testbed.md, "What `validate` makes alike").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Alike {
    /// The testbed's heartbeats are as rare as the hang detector allows: true unless the
    /// command line sets or varies `deploy.heartbeat_ms`.
    rare_heartbeats: bool,
}

impl Alike {
    fn new(sets: &[String], vary: &[String]) -> Alike {
        let named = |s: &String| s.starts_with("deploy.heartbeat_ms=");
        Alike { rare_heartbeats: !sets.iter().chain(vary).any(named) }
    }

    /// The point as the simulator runs it:
    /// - every host shaped by the token bucket the testbed gives it (the scenario's
    ///   `network.host_burst_ns`, or the testbed's default). A tbf hands a response's frames to
    ///   the switch as a clump, which decides whether a recovery survives (8 senders at 20 kB:
    ///   226 failed recoveries at line rate, 11 with the bucket, Linux 7);
    /// - the readout units answer as late as the testbed's processes, which wake one after
    ///   another on two CPUs ([`daqnet_testbed::plan::reply_spread_ns`], added to
    ///   `system.readout_service_jitter_ns`). The order in which the responses meet the switch's
    ///   queue decides who loses: answering in request order, the simulator's first five of 32
    ///   readout units never lost a frame of their 6.5 kB responses at 40 kB.
    fn sim(self, p: &Point) -> anyhow::Result<Point> {
        let mut p = p.clone();
        p.scenario.network.host_burst_ns =
            daqnet_testbed::plan::TestbedPlan::checked(&p.scenario, "check", &p.origin)?.host_burst_ns;
        p.scenario.system.readout_service_jitter_ns += Self::reply_spread_ns(&p.scenario);
        Ok(p)
    }

    /// The readout hosts asked at once: every one, unless the nodes' credits cover fewer
    /// requests (a request takes `fragments_per_unit` credits).
    fn reply_spread_ns(sc: &daqnet_core::scenario::Scenario) -> u64 {
        let sys = &sc.system;
        let asked = match sys.credits_per_node {
            Credits::Unlimited => sys.readout_units,
            Credits::Limited(c) => (c / sys.fragments_per_unit.max(1)).max(1).saturating_mul(sys.nodes),
        };
        daqnet_testbed::plan::reply_spread_ns(sys.readout_units, asked)
    }

    /// The point as the testbed runs it: daqnet's heartbeats, which the simulator does not send,
    /// no more often than half the peer timeout. A heartbeat crossing the collector's makes its
    /// socket interactive, which delays its ACKs and so changes Linux's loss recovery
    /// (incast-32, 20 kB, 100 Mb/s: 3,078 timeouts with heartbeats every 200 ms, 3,895 without).
    fn testbed(self, p: &Point) -> Point {
        let mut p = p.clone();
        p.scenario.deploy.heartbeat_ms = self.heartbeat_ms(&p.scenario.deploy);
        p
    }

    /// The testbed's heartbeat interval: half the peer timeout when heartbeats are made rare
    /// (never more often than the scenario asks), else the scenario's.
    fn heartbeat_ms(self, d: &daqnet_core::scenario::Deploy) -> u64 {
        if self.rare_heartbeats {
            (d.peer_timeout_ms / 2).max(d.heartbeat_ms)
        } else {
            d.heartbeat_ms
        }
    }

    fn describe(self, sc: &daqnet_core::scenario::Scenario) -> Vec<String> {
        let us = Self::reply_spread_ns(sc) / 1000;
        let mut lines = vec![
            "the simulator's hosts get the testbed's token buckets (network.host_burst_ns)".to_string(),
            format!(
                "the simulator's readout units answer up to {us} µs later, as the testbed's processes wake on shared CPUs (system.readout_service_jitter_ns)"
            ),
        ];
        if self.rare_heartbeats {
            let ms = self.heartbeat_ms(&sc.deploy);
            lines.push(format!(
                "the testbed's heartbeats come at most every {ms} ms (deploy.heartbeat_ms; the simulator sends none)"
            ));
        }
        lines
    }
}

/// A sweep runner that runs each point in a testbed of its own, recording `trace` if given.
fn testbed_point(
    scratch: PathBuf,
    trace: Option<daqnet_sim::trace::TraceSpec>,
    alike: Alike,
) -> impl Fn(&Point) -> anyhow::Result<PointOutput> + Sync {
    move |p| {
        let p = &alike.testbed(p);
        let out = scratch.join(format!("p{:04}", p.meta.index));
        let opts = TestbedRunOptions {
            exe: std::env::current_exe()?,
            origin: p.origin.clone(),
            out: out.clone(),
            per_event: false,
            quiet: true,
            stop: Some(daqnet_evb::launcher::interrupted()),
            faults: Vec::new(),
            trace: trace.clone(),
        };
        let done = daqnet_testbed::run::run(&p.scenario, &opts)?;
        // The trace stays until the sweep has moved it into the point's folder.
        let files = [TRACE_PORTS, TRACE_TCP].map(|f| out.join(f));
        if trace.is_none() {
            let _ = std::fs::remove_dir_all(&out);
        }
        anyhow::ensure!(
            done.exit_code == 0,
            "the testbed run failed (exit {}): {:?}",
            done.exit_code,
            done.report.faults
        );
        Ok(PointOutput {
            report: done.report,
            events: Vec::new(),
            files: trace.as_ref().map_or(Vec::new(), |_| files.into()),
        })
    }
}

/// Both sweep tables in one, with a `substrate` column first.
fn joined_table(out: &Path, sides: [(&str, &Path); 2]) -> anyhow::Result<PathBuf> {
    let path = out.join("table.csv");
    let mut w = csv::Writer::from_path(&path)?;
    for (i, (name, table)) in sides.iter().enumerate() {
        let t = Table::read(table)?;
        if i == 0 {
            w.write_record(std::iter::once("substrate").chain(t.columns.iter().map(String::as_str)))?;
        }
        for r in &t.rows {
            w.write_record(std::iter::once(*name).chain(r.iter().map(String::as_str)))?;
        }
    }
    w.flush()?;
    Ok(path)
}

/// Runs the verb.
pub fn run(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    let mut sets = a.scenario.sets();
    daqnet_testbed::lifecycle::check_prerequisites()?;
    // The simulator's TCP timers tick as the kernel under test does, unless told otherwise.
    if !a.scenario.overrides.set.iter().any(|s| s.starts_with("network.tcp.timer_hz=")) {
        let hz = daqnet_testbed::kernel_hz::measure()?;
        if !a.quiet {
            eprintln!("this kernel ticks at {hz} Hz: the simulator's TCP timers do too (network.tcp.timer_hz={hz})");
        }
        sets.push(format!("network.tcp.timer_hz={hz}"));
    }
    let base = a.scenario.load()?;
    let alike = Alike::new(&sets, &a.vary);
    if !a.quiet {
        for line in alike.describe(&base) {
            eprintln!("{line}");
        }
    }
    let plan = plan(&a, sets)?;
    let first_axis = plan.axis_paths()[0].clone();
    let file = &a.scenario.file;
    let out = a.out.clone().unwrap_or_else(|| Path::new("out/validate").join(file.file_stem().unwrap_or_default()));
    let (tb_dir, sim_dir) = (out.join("testbed"), out.join("sim"));
    let (bar, observe) = super::sweep_progress(a.quiet);
    let stop = Some(daqnet_evb::launcher::interrupted());
    let one = ExecOptions { jobs: 1, shard: Shard::ALL, observer: Some(&observe), stop };
    if !a.quiet {
        eprintln!("testbed: {} runs, one at a time", plan.len());
    }
    let tb = sweep::execute(&plan, &tb_dir, one, &testbed_point(out.join("scratch"), a.trace.clone(), alike))?;
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(out.join("scratch"));
    let (bar, observe) = super::sweep_progress(a.quiet);
    let all = ExecOptions { jobs: super::cores(), shard: Shard::ALL, observer: Some(&observe), stop };
    let traced = a.trace.clone().map(|t| (t, out.join("scratch")));
    let sim_run = super::sim_point(false, traced);
    let sim = sweep::execute(&plan, &sim_dir, all, &|p: &Point| sim_run(&alike.sim(p)?))?;
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(out.join("scratch"));
    for (side, done, dir) in [("testbed", &tb, &tb_dir), ("sim", &sim, &sim_dir)] {
        for (i, e) in &done.failures {
            eprintln!("error: {side} point {i} ({}) failed: {e}", sweep::point_dir(dir, *i).display());
        }
    }
    let names = ("testbed", "sim");
    let pairs = compare::pairs(&plan, &tb_dir, &sim_dir)?;
    anyhow::ensure!(!pairs.is_empty(), "no point finished on both substrates");
    let criteria = Criteria { incast_share: a.incast_share, ..Criteria::default() };
    let agreement = compare::agreement(&pairs, &criteria);
    compare::write_csv(&pairs, &out.join("compare.csv"), names)?;
    let table = Table::read(&joined_table(&out, [("testbed", &tb.table), ("sim", &sim.table)])?)?;
    let spec = |kind, y: &str, ylabel: &str| PlotSpec {
        kind,
        x: first_axis.clone(),
        y: y.into(),
        group: Some("substrate".into()),
        filters: Vec::new(),
        log_x: false,
        log_y: false,
        x_scale: 1.0,
        title: Some(format!("{}: testbed vs simulator", file.display())),
        xlabel: None,
        ylabel: Some(ylabel.into()),
        size: (1000, 640),
        dpi: 96,
        reference: Vec::new(),
    };
    draw(&table, &spec(Kind::Box, "latency", "data-collection latency (ms)"), &out.join("latency.png"))?;
    draw(&table, &spec(Kind::Line, "share_ge_100ms", "share of events ≥ 100 ms"), &out.join("slow-events.png"))?;
    print!("{}", compare::render(&pairs, &agreement, &criteria, names));
    let mut written = "compare.csv, table.csv, latency.png, slow-events.png".to_string();
    if a.trace.is_some() {
        let text = trajectory::compare(&plan, (&tb_dir, &sim_dir), names, &out.join("trajectories.csv"))?;
        println!("trajectories (while each series is active; runs of a point averaged):\n{text}");
        written += ", trajectories.csv";
    }
    println!("written: {}/{written}", out.display());
    let failed = tb.failures.len() + sim.failures.len();
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// incast-32 (32 readout hosts, `deploy.peer_timeout_ms` = 10 s) with `sets`.
    fn incast_point(sets: &[&str]) -> Point {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/testbed/incast-32.toml");
        SweepPlan::single(&file, words(sets), Vec::new(), 1, false).points().unwrap().remove(0)
    }

    #[test]
    fn the_simulator_gets_the_testbeds_host_bucket_and_the_testbed_rare_heartbeats() {
        let alike =
            Alike::new(&words(&["network.tcp.timer_hz=250"]), &words(&["network.switch.buffer.port_bytes=20kB"]));
        let p = incast_point(&[]);
        let sim = alike.sim(&p).unwrap().scenario;
        assert_eq!(sim.network.host_burst_ns, 1_000_000, "32 hosts: 1 ms");
        assert_eq!(sim.system.readout_service_jitter_ns, 510_000, "32 hosts answer up to 510 µs late");
        assert_eq!(alike.testbed(&p).scenario.deploy.heartbeat_ms, 5_000, "half the 10 s peer timeout");
        let own = incast_point(&["network.host_burst_ns=250000"]);
        assert_eq!(alike.sim(&own).unwrap().scenario.network.host_burst_ns, 250_000, "the scenario's own bucket");
        let own = incast_point(&["system.readout_service_jitter_ns=100000"]);
        let jitter = alike.sim(&own).unwrap().scenario.system.readout_service_jitter_ns;
        assert_eq!(jitter, 610_000, "the scenario's own jitter, and the testbed's on top");
        // Credits for 8 requests at a time: 8 of the 32 answer at once, 350 × 8/32 + 5 × 8 µs.
        let shaped = incast_point(&["system.credits_per_node=8"]);
        let jitter = alike.sim(&shaped).unwrap().scenario.system.readout_service_jitter_ns;
        assert_eq!(jitter, 127_500, "fewer hosts asked at once wait less");
    }

    #[test]
    fn heartbeats_named_on_the_command_line_are_left_alone() {
        for (sets, vary) in [(&["deploy.heartbeat_ms=1s"][..], &[][..]), (&[], &["deploy.heartbeat_ms=200ms,1s"])] {
            let alike = Alike::new(&words(sets), &words(vary));
            let p = incast_point(&["deploy.heartbeat_ms=1s"]);
            assert_eq!(alike.testbed(&p).scenario.deploy.heartbeat_ms, 1_000, "{sets:?} {vary:?}");
        }
    }
}
