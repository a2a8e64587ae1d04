//! `daqnet bench`: simulator speed on the reference loads of issue 2.
//!
//! Each case runs in a child process so its peak memory can be read on its own. Speed is
//! reported in absolute terms and as a ratio to a baseline measured in the same run: the raw
//! throughput of the simulator's event queue (schedule + pop of small events), which tracks how
//! fast this machine is at the simulator's innermost operation.

use clap::Args;
use daqnet_sim::engine::EventQueue;
use daqnet_sim::{simulate, SimOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Measure simulator speed: collision events, packets and scheduler events per wall second,
/// and peak memory, on the ATLAS 2015 set-up (Switch 1, 400 credits) and a DAQ-like load.
#[derive(Args)]
#[command(after_help = "Example:\n  cargo run --release -- bench")]
pub struct BenchArgs {
    /// Folder holding the scenarios (the repository's `scenarios/`).
    #[arg(long, default_value = "scenarios")]
    scenarios: PathBuf,
    /// Repetitions per case; the fastest is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Internal: run one case in this process and print its figures as JSON.
    #[arg(long, hide = true)]
    case: Option<String>,
}

struct Case {
    name: &'static str,
    file: &'static str,
    sets: &'static [&'static str],
}

const CASES: [Case; 2] = [
    Case {
        name: "atlas-2015 switch 1, 400 credits",
        file: "atlas-2015/switch1.toml",
        sets: &["system.credits_per_node=400", "run.events=2000", "run.warmup_events=0"],
    },
    Case { name: "DAQ-like: 100 RU x 22 kB, 1 kHz, 10G/40G", file: "bench/daq-like.toml", sets: &[] },
];

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn run_case(dir: &Path, case: &Case) -> anyhow::Result<()> {
    let sets: Vec<String> = case.sets.iter().map(|s| s.to_string()).collect();
    let s = super::load_scenario(&dir.join(case.file), &sets)?;
    let t = Instant::now();
    let out = simulate(&s, case.file, SimOptions::default());
    let wall = t.elapsed().as_secs_f64();
    let w = out.report.sim_work.expect("sim reports its work");
    let events = (s.run.events + s.run.warmup_events) as f64;
    println!(
        "{{\"wall_s\":{wall},\"events\":{events},\"packets\":{},\"scheduler_events\":{},\"peak_mib\":{},\"mean_latency_ms\":{}}}",
        w.packets,
        w.scheduler_events,
        peak_rss_mib(),
        out.report.latency_ms.mean
    );
    Ok(())
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
        let case = CASES.iter().find(|c| c.name == name).ok_or_else(|| anyhow::anyhow!("no bench case `{name}`"))?;
        run_case(&a.scenarios, case)?;
        return Ok(ExitCode::SUCCESS);
    }
    let exe = std::env::current_exe()?;
    let baseline = (0..a.repeat).map(|_| queue_baseline()).fold(0.0, f64::max);
    println!("baseline: bare event queue {:.2} M scheduler events/s (one thread)\n", baseline / 1e6);
    println!(
        "{:<42} {:>12} {:>12} {:>14} {:>10} {:>9}",
        "case (one thread)", "events/s", "packets/s", "sched. ev/s", "vs queue", "peak MiB"
    );
    for case in &CASES {
        let mut best: Option<serde_json::Value> = None;
        for _ in 0..a.repeat {
            let out = Command::new(&exe)
                .args(["bench", "--scenarios"])
                .arg(&a.scenarios)
                .args(["--case", case.name])
                .output()?;
            if !out.status.success() {
                anyhow::bail!("bench case `{}` failed: {}", case.name, String::from_utf8_lossy(&out.stderr));
            }
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
            if best.as_ref().is_none_or(|b| v["wall_s"].as_f64() < b["wall_s"].as_f64()) {
                best = Some(v);
            }
        }
        let v = best.expect("repeat >= 1");
        let wall = v["wall_s"].as_f64().unwrap_or(f64::NAN);
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
    println!("\n'vs queue': simulator scheduler events per second over the bare queue's, same run.");
    Ok(ExitCode::SUCCESS)
}
