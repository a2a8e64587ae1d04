//! The real event builder's benchmark: raw TCP between two local processes as the baseline,
//! then `daqnet run` goodput for 16 readout units × 128 KiB fragments into one node (seed
//! 000's fragment size) with payload verification on and off, then events per second for the
//! small ATLAS-like system (1.1 kB fragments). Everything in one run, so the ratios hold even
//! though absolute speeds on a shared 2-core machine drift from minute to minute.

use daqnet_evb::launcher::{launch, LaunchOptions};
use daqnet_evb::net::transport::tune_tcp;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The raw TCP sender (a child process): 128 KiB writes for `seconds`, then close.
pub fn raw_tcp_send(addr: &str, seconds: f64) -> anyhow::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    tune_tcp(socket2::SockRef::from(&s), "cubic")?;
    let buf = vec![0x5au8; 128 << 10];
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        s.write_all(&buf)?;
    }
    Ok(())
}

/// Raw single-stream TCP from a child process to this one, in Gb/s.
fn raw_tcp(seconds: f64) -> anyhow::Result<f64> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?.to_string();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["bench", "--raw-tcp-send", &addr, "--seconds", &seconds.to_string()])
        .stdout(Stdio::null())
        .spawn()?;
    let (mut s, _) = l.accept()?;
    tune_tcp(socket2::SockRef::from(&s), "cubic")?;
    let mut buf = vec![0u8; 256 << 10];
    let n = s.read(&mut buf)?;
    let start = Instant::now();
    let mut bytes = n as u64;
    loop {
        match s.read(&mut buf)? {
            0 => break,
            n => bytes += n as u64,
        }
    }
    let secs = start.elapsed().as_secs_f64();
    child.wait()?;
    Ok(bytes as f64 * 8.0 / secs / 1e9)
}

/// One `daqnet run`; returns its report.
fn run_once(scenarios: &Path, file: &str, sets: &[String]) -> anyhow::Result<daqnet_core::report::RunReport> {
    let sc = super::super::load_scenario(&scenarios.join(file), sets)?;
    let out = std::env::temp_dir().join(format!("daqnet-bench-run-{}", std::process::id()));
    let opts = LaunchOptions {
        exe: std::env::current_exe()?,
        origin: file.into(),
        out: Some(out.clone()),
        quiet: true,
        ..Default::default()
    };
    let code = launch(&sc, &opts)?;
    let report = serde_json::from_str(&std::fs::read_to_string(out.join("report.json"))?)?;
    let _ = std::fs::remove_dir_all(&out);
    anyhow::ensure!(code == 0, "daqnet run {file} {sets:?} failed (exit {code})");
    Ok(report)
}

fn sets(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Runs the benchmark and prints its table.
pub fn bench_run(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
    let bulk = |verify: bool| {
        sets(&[
            "system.readout_units=16",
            "system.fragment_size.bytes=128KiB",
            "system.pus_per_node=4",
            "system.processing_time_ns=0",
            "run.events=4000",
            "run.warmup_events=100",
            if verify { "deploy.verify_payload=true" } else { "deploy.verify_payload=false" },
        ])
    };
    let atlas = sets(&["system.processing_time_ns=0", "run.events=20000", "run.warmup_events=500"]);
    let (mut raw, mut on, mut off, mut events) = (0f64, 0f64, 0f64, 0f64);
    for _ in 0..repeat {
        // Interleaved, so a slow minute of the machine hits every figure alike.
        raw = raw.max(raw_tcp(3.0)?);
        on = on.max(run_once(scenarios, "incast-micro.toml", &bulk(true))?.goodput_bps / 1e9);
        off = off.max(run_once(scenarios, "incast-micro.toml", &bulk(false))?.goodput_bps / 1e9);
        events = events.max(run_once(scenarios, "run/atlas-small.toml", &atlas)?.event_rate_hz);
    }
    println!("\nreal event builder on loopback ({} CPU cores), best of {repeat}:", super::super::cores());
    println!("  raw TCP, one stream between two processes      {raw:>7.2} Gb/s");
    println!(
        "  daqnet run, 16 RU x 128 KiB -> 1 node, verify   {on:>7.2} Gb/s   {:.2} of raw TCP (goal >= 0.70)",
        on / raw
    );
    println!("  the same, payload check off                     {off:>7.2} Gb/s   {:.2} of raw TCP", off / raw);
    println!("  verification cost                               {:>7.1} % of goodput", 100.0 * (1.0 - on / off));
    println!("  daqnet run, atlas-small (8 RU x 12 x 1.1 kB)    {events:>7.0} events/s");
    Ok(())
}
