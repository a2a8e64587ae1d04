//! `daqnet bench`: simulator speed on its reference loads, the parallel sweep, and
//! the real event builder against raw TCP ([`run`]).
//!
//! Each case runs in a child process so its peak memory can be read on its own. Speed is
//! reported in absolute terms and as a ratio to a baseline measured in the same run: the raw
//! throughput of the simulator's event queue (schedule + pop of small events), which tracks how
//! fast this machine is at the simulator's innermost operation.

mod pipe;
mod run;
mod scale;
mod switch;

use clap::Args;
use daqnet_sim::engine::EventQueue;
use daqnet_sim::trace::{TraceSink, TraceSpec};
use daqnet_sim::{simulate, SimOptions};
use daqnet_study::columnar::TraceWriter;
use daqnet_study::sweep::{self, ExecOptions, Shard, SweepPlan};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Measure simulator speed: collision events, packets and scheduler events per wall second,
/// and peak memory, on the ATLAS 2015 set-up (Switch 1, 400 credits) and a DAQ-like load;
/// then the parallel speed-up of an 8-point sweep (--jobs 2 against --jobs 1); then the real
/// event builder (`daqnet run`) against raw TCP between two processes on loopback; then DAQPIPE:
/// 500 nodes in the simulator, and its gather (`daqnet pipe`) against raw all-to-all TCP (and, in a build with MPI, against
/// `MPI_Alltoall`); then one TCP stream through the testbed's daqring switch against the kernel
/// bridge (root only).
#[derive(Args)]
#[command(after_help = "Example:\n  cargo run --release -- bench")]
pub struct BenchArgs {
    /// Folder holding the scenarios (the repository's `scenarios/`).
    #[arg(long, default_value = "scenarios")]
    scenarios: PathBuf,
    /// Repetitions per case; the fastest is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Run only one part: `sim` (simulator speed), `scale` (the simulator's cost as the system
    /// grows from 25 to 500 nodes), `sweep` (parallel sweep speed-up), `run`
    /// (real event builder goodput against raw TCP), `pipe` (DAQPIPE: 500 nodes simulated, and
    /// its gather against raw all-to-all TCP, and MPI in an MPI build) or `switch` (one TCP stream through the
    /// daqring switch against the kernel bridge; needs root).
    #[arg(long, value_parser = ["sim", "scale", "sweep", "run", "pipe", "switch"])]
    only: Option<String>,
    /// Internal: be node RANK of the raw all-to-all for --seconds.
    #[arg(long, hide = true, value_name = "RANK")]
    raw_node: Option<u32>,
    /// Internal: be a rank of the raw MPI all-to-all (under mpirun).
    #[arg(long, hide = true)]
    raw_mpi: bool,
    /// Internal: send raw TCP to this address for --seconds (the raw TCP baseline's sender).
    #[arg(long, hide = true, value_name = "ADDR")]
    raw_tcp_send: Option<String>,
    /// Internal: the raw TCP sender sends with `sendfile` from a memory file.
    #[arg(long, hide = true)]
    from_file: bool,
    /// Internal: how long the raw TCP sender sends.
    #[arg(long, hide = true, default_value_t = 3.0)]
    seconds: f64,
    /// Internal: run one case in this process and print its figures as JSON.
    #[arg(long, hide = true)]
    case: Option<String>,
}

/// One simulation the bench times, in a child process of its own.
pub(super) struct Case {
    name: String,
    file: &'static str,
    sets: Vec<String>,
    /// A `--trace` to record (into Parquet in memory).
    trace: Option<&'static str>,
}

impl Case {
    fn new(name: impl Into<String>, file: &'static str, sets: &[String]) -> Self {
        Case { name: name.into(), file, sets: sets.to_vec(), trace: None }
    }
}

/// The DAQ-like load's collector port and all 100 senders into it, every 10 µs: a dense trace.
const DAQ_LIKE_TRACE: &str = "queue=sw->node0,cwnd=*->node0,every=10us";

pub(super) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The reference loads.
fn reference_cases() -> Vec<Case> {
    vec![
        Case::new(
            "atlas-2015 switch 1, 400 credits",
            "atlas-2015/switch1.toml",
            &strings(&["system.credits_per_node=400", "run.events=2000", "run.warmup_events=0"]),
        ),
        Case::new("DAQ-like: 100 RU x 22 kB, 1 kHz, 10G/40G", "bench/daq-like.toml", &[]),
        Case {
            trace: Some(DAQ_LIKE_TRACE),
            ..Case::new("DAQ-like, traced (101 series, 10 us)", "bench/daq-like.toml", &[])
        },
    ]
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn run_case(dir: &Path, case: &Case) -> anyhow::Result<()> {
    let s = super::load_scenario(&dir.join(case.file), &case.sets)?;
    let mut writer = case.trace.map(|_| TraceWriter::new(Vec::new(), Vec::new())).transpose()?;
    let trace = case.trace.map(|t| t.parse::<TraceSpec>().map_err(anyhow::Error::msg)).transpose()?;
    let t = Instant::now();
    let opts = SimOptions {
        trace: trace.zip(writer.as_mut()).map(|(spec, w)| (spec, w as &mut dyn TraceSink)),
        ..Default::default()
    };
    let out = simulate(&s, case.file, opts);
    let samples = writer.map(TraceWriter::finish).transpose()?.map_or(0, |(_, _, (p, t))| p + t);
    let wall = t.elapsed().as_secs_f64();
    let w = out.report.sim_work.expect("sim reports its work");
    let events = (s.run.events + s.run.warmup_events) as f64;
    println!(
        "{}",
        serde_json::json!({
            "wall_s": wall,
            "events": events,
            "packets": w.packets,
            "scheduler_events": w.scheduler_events,
            "simulated_s": w.simulated_s,
            "connections": w.connections,
            "connections_open": w.connections_open,
            "connection_bytes": w.connection_bytes,
            "peak_mib": peak_rss_mib(),
            "mean_latency_ms": out.report.latency_ms.mean,
            "trace_samples": samples,
        })
    );
    Ok(())
}

/// The bare event queue's best rate over `repeat` measurements ([`queue_baseline`]).
pub(super) fn best_queue_baseline(repeat: u32) -> f64 {
    (0..repeat).map(|_| queue_baseline()).fold(0.0, f64::max)
}

/// Scheduler events per second of the bare event queue, with a standing population like a
/// simulation's (many packets in flight).
fn queue_baseline() -> f64 {
    let mut q: EventQueue<(u32, u32)> = EventQueue::new();
    let mut x: u64 = 0x9e37_79b9;
    for i in 0..20_000u32 {
        q.schedule(i as u64 * 7, (i, i));
    }
    let n = 5_000_000u64;
    let t = Instant::now();
    for _ in 0..n {
        let (now, e) = q.pop().expect("standing population");
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        q.schedule(now + 1 + (x % 100_000), e);
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// Runs the verb.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &a.case {
        let all = reference_cases().into_iter().chain(scale::cases()).chain([pipe::gather_500()]);
        let case =
            all.into_iter().find(|c| &c.name == name).ok_or_else(|| anyhow::anyhow!("no bench case `{name}`"))?;
        run_case(&a.scenarios, &case)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(addr) = &a.raw_tcp_send {
        run::raw_tcp_send(addr, a.seconds, a.from_file)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(rank) = a.raw_node {
        pipe::raw_node(rank, a.seconds)?;
        return Ok(ExitCode::SUCCESS);
    }
    if a.raw_mpi {
        #[cfg(feature = "mpi")]
        pipe::raw_mpi_rank()?;
        return Ok(ExitCode::SUCCESS);
    }
    let part = |p: &str| a.only.as_deref().is_none_or(|o| o == p);
    if part("sim") {
        bench_sim(&a)?;
    }
    if part("scale") {
        scale::bench_scale(&a.scenarios, a.repeat)?;
    }
    if part("sweep") {
        bench_sweep(&a)?;
    }
    if part("run") {
        run::bench_run(&a.scenarios, a.repeat)?;
    }
    if part("pipe") {
        pipe::bench_pipe(&a.scenarios, a.repeat)?;
    }
    if part("switch") {
        switch::bench_switch(&a.scenarios, a.repeat)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An 8-point sweep (atlas-2015 switch 1, 8 credit settings in the shaped region so the points
/// cost about the same, 400 events each) run with one worker and with two, in this process,
/// fresh output folders each time; best of --repeat.
fn bench_sweep(a: &BenchArgs) -> anyhow::Result<()> {
    let file = a.scenarios.join("atlas-2015/switch1.toml");
    let axes = vec![daqnet_study::vary::Axis::parse("system.credits_per_node=120,160,200,240,280,320,360,400")
        .map_err(anyhow::Error::msg)?];
    let sets = vec!["run.events=300".to_string(), "run.warmup_events=100".to_string()];
    let plan = SweepPlan::single(&file, sets, axes, 1, false);
    let time = |jobs: usize| -> anyhow::Result<f64> {
        let out = std::env::temp_dir().join(format!("daqnet-bench-sweep-{}-{jobs}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let opts = ExecOptions { jobs, shard: Shard::ALL, observer: None, stop: None };
        let t = Instant::now();
        let done = sweep::execute(&plan, &out, opts, &super::sim_point(false, None))?;
        let wall = t.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&out).ok();
        anyhow::ensure!(done.ran == 8, "the bench sweep ran {} of 8 points", done.ran);
        Ok(wall)
    };
    let best = |jobs: usize| -> anyhow::Result<f64> {
        (0..a.repeat).map(|_| time(jobs)).try_fold(f64::INFINITY, |m, t| t.map(|t| m.min(t)))
    };
    let (one, two) = (best(1)?, best(2)?);
    println!("\nsweep of 8 points (atlas-2015 switch 1, 400 events each), {} CPU cores:", super::cores());
    println!("  --jobs 1  {one:>7.2} s");
    println!("  --jobs 2  {two:>7.2} s   ratio {:.3} (goal <= 0.65)", two / one);
    Ok(())
}

/// Runs `case` in a child process `repeat` times; the figures of the fastest run.
pub(super) fn time_case(scenarios: &Path, case: &Case, repeat: u32) -> anyhow::Result<serde_json::Value> {
    let exe = std::env::current_exe()?;
    let mut best: Option<serde_json::Value> = None;
    for _ in 0..repeat {
        let out =
            Command::new(&exe).args(["bench", "--scenarios"]).arg(scenarios).args(["--case", &case.name]).output()?;
        if !out.status.success() {
            anyhow::bail!("bench case `{}` failed: {}", case.name, String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        if best.as_ref().is_none_or(|b| v["wall_s"].as_f64() < b["wall_s"].as_f64()) {
            best = Some(v);
        }
    }
    best.ok_or_else(|| anyhow::anyhow!("repeat >= 1"))
}

fn bench_sim(a: &BenchArgs) -> anyhow::Result<()> {
    let baseline = best_queue_baseline(a.repeat);
    println!("baseline: bare event queue {:.2} M scheduler events/s (one thread)\n", baseline / 1e6);
    println!(
        "{:<42} {:>12} {:>12} {:>14} {:>10} {:>9}",
        "case (one thread)", "events/s", "packets/s", "sched. ev/s", "vs queue", "peak MiB"
    );
    let mut untraced = f64::NAN;
    for case in &reference_cases() {
        let v = time_case(&a.scenarios, case, a.repeat)?;
        let wall = v["wall_s"].as_f64().unwrap_or(f64::NAN);
        if case.trace.is_some() {
            let samples = v["trace_samples"].as_f64().unwrap_or(f64::NAN);
            println!(
                "{:<42} {:>11.2}x wall time of the untraced run, {samples:.0} samples ({:.0} ns each)",
                "  tracing's cost",
                wall / untraced,
                (wall - untraced) / samples * 1e9
            );
            continue;
        }
        untraced = wall;
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN) / wall;
        println!(
            "{:<42} {:>12.0} {:>12.0} {:>14.0} {:>9.3}x {:>9.1}",
            case.name,
            f("events"),
            f("packets"),
            f("scheduler_events"),
            f("scheduler_events") / baseline,
            v["peak_mib"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!(
        "\n'vs queue': simulator scheduler events per second over the bare queue's, same run. The traced case \
         records {DAQ_LIKE_TRACE} to Parquet (in memory): its wall time over the untraced one's is tracing's cost."
    );
    Ok(())
}
