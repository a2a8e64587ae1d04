//! The real event builder's benchmark: raw TCP between two local processes as the baseline (its
//! sender writes; a second line has it use `sendfile`, as `daqnet run`'s readout units send long
//! payloads, so the ratio to each is shown), and raw TCP from 16 processes into one (the same
//! incast without any DAQ logic), then `daqnet run` goodput for 16 readout units × 128 KiB
//! fragments into one node with 8 processing units ([LOSSLESS]'s fragment size) with payload
//! verification on and off, then events per second for the small ATLAS-like system (1.1 kB
//! fragments). Everything in one run, so the ratios hold even though absolute speeds on a shared
//! 2-core machine drift from minute to minute.

use super::strings;
use daqnet_evb::launcher::{launch, LaunchOptions};
use daqnet_evb::net::piece::memory_file;
use daqnet_evb::net::transport::tuned_socket;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The raw TCP sender (a child process): 128 KiB writes (or `sendfile` calls, `from_file`)
/// for `seconds`, then close.
pub fn raw_tcp_send(addr: &str, seconds: f64, from_file: bool) -> anyhow::Result<()> {
    if from_file {
        sendfile_for(addr, seconds)
    } else {
        send_for(addr, seconds)
    }
}

/// Connects to `addr` (cubic) and writes 128 KiB blocks for `seconds`, then closes.
pub(super) fn send_for(addr: &str, seconds: f64) -> anyhow::Result<()> {
    let at = addr.parse()?;
    let s = tuned_socket(&at, "cubic")?;
    s.connect(&at.into())?;
    let mut s = TcpStream::from(s);
    let buf = vec![0x5au8; 128 << 10];
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        s.write_all(&buf)?;
    }
    Ok(())
}

/// As [`send_for`], but each 128 KiB block goes out with `sendfile` from a memory file, as
/// `daqnet run`'s readout units send their long fragments' payloads.
fn sendfile_for(addr: &str, seconds: f64) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    let at = addr.parse()?;
    let s = tuned_socket(&at, "cubic")?;
    s.connect(&at.into())?;
    let block = 128usize << 10;
    let file = memory_file(&vec![0x5au8; block]).ok_or_else(|| anyhow::anyhow!("no memory file"))?;
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        let mut offset: libc::off_t = 0;
        while (offset as usize) < block {
            // SAFETY: both descriptors are open; `offset` is a valid place to write.
            let n = unsafe { libc::sendfile(s.as_raw_fd(), file.as_raw_fd(), &mut offset, block - offset as usize) };
            anyhow::ensure!(n > 0, "sendfile: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Reads `s` until the peer closes: (time of the first byte, time of the end, bytes).
pub(super) fn drain(mut s: TcpStream) -> std::io::Result<(Instant, Instant, u64)> {
    let mut buf = vec![0u8; 256 << 10];
    let mut bytes = s.read(&mut buf)? as u64;
    let first = Instant::now();
    loop {
        match s.read(&mut buf)? {
            0 => return Ok((first, Instant::now(), bytes)),
            n => bytes += n as u64,
        }
    }
}

/// Raw TCP from `streams` child processes into this one (a thread per stream), in Gb/s:
/// total bytes over the time from the first byte to the last. The senders write, or use
/// `sendfile` (`from_file`).
fn raw_tcp(streams: usize, seconds: f64, from_file: bool) -> anyhow::Result<f64> {
    let at = "127.0.0.1:0".parse()?;
    let l = tuned_socket(&at, "cubic")?;
    l.bind(&at.into())?;
    l.listen(1024)?;
    let l = TcpListener::from(l);
    let addr = l.local_addr()?.to_string();
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for _ in 0..streams {
        children.push(
            Command::new(&exe)
                .args(["bench", "--raw-tcp-send", &addr, "--seconds", &seconds.to_string()])
                .args(from_file.then_some("--from-file"))
                .stdout(Stdio::null())
                .spawn()?,
        );
    }
    let mut readers = Vec::new();
    for _ in 0..streams {
        let (s, _) = l.accept()?;
        readers.push(std::thread::spawn(move || drain(s)));
    }
    let mut spans = Vec::new();
    for r in readers {
        spans.push(r.join().map_err(|_| anyhow::anyhow!("a raw TCP reader panicked"))??);
    }
    for mut c in children {
        c.wait()?;
    }
    let start = spans.iter().map(|s| s.0).min().expect("streams >= 1");
    let end = spans.iter().map(|s| s.1).max().expect("streams >= 1");
    let bytes: u64 = spans.iter().map(|s| s.2).sum();
    Ok(bytes as f64 * 8.0 / (end - start).as_secs_f64() / 1e9)
}

/// One `daqnet run`; returns its report.
fn run_once(scenarios: &Path, file: &str, sets: &[String]) -> anyhow::Result<daqnet_core::report::RunReport> {
    let sc = super::super::load_run_scenario(&scenarios.join(file), sets)?;
    let out = std::env::temp_dir().join(format!("daqnet-bench-run-{}", std::process::id()));
    let mut opts =
        LaunchOptions { exe: std::env::current_exe()?, origin: file.into(), out: out.clone(), ..Default::default() };
    let run = launch(&sc, &mut opts)?;
    let _ = std::fs::remove_dir_all(&out);
    anyhow::ensure!(run.code == 0, "daqnet run {file} {sets:?} failed (exit {})", run.code);
    Ok(run.report)
}

/// Runs the benchmark and prints its table.
pub fn bench_run(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
    let bulk = |verify: bool| {
        strings(&[
            "system.readout_units=16",
            "system.fragment_size.bytes=128KiB",
            "system.pus_per_node=8",
            "system.processing_time_ns=0",
            "run.events=4000",
            "run.warmup_events=100",
            if verify { "deploy.verify_payload=true" } else { "deploy.verify_payload=false" },
        ])
    };
    let atlas = strings(&["system.processing_time_ns=0", "run.events=20000", "run.warmup_events=500"]);
    let (mut raw, mut raw_file, mut raw16, mut on, mut off, mut events) = (0f64, 0f64, 0f64, 0f64, 0f64, 0f64);
    for _ in 0..repeat {
        // Interleaved, so a slow minute of the machine hits every figure alike.
        raw = raw.max(raw_tcp(1, 3.0, false)?);
        raw_file = raw_file.max(raw_tcp(1, 3.0, true)?);
        raw16 = raw16.max(raw_tcp(16, 3.0, false)?);
        on = on.max(run_once(scenarios, "incast-micro.toml", &bulk(true))?.goodput_bps / 1e9);
        off = off.max(run_once(scenarios, "incast-micro.toml", &bulk(false))?.goodput_bps / 1e9);
        events = events.max(run_once(scenarios, "run/atlas-small.toml", &atlas)?.event_rate_hz);
    }
    println!("\nreal event builder on loopback ({} CPU cores), best of {repeat}:", super::super::cores());
    println!("  raw TCP, one stream between two processes      {raw:>7.2} Gb/s");
    println!(
        "  the same, sent with sendfile from memory file  {raw_file:>7.2} Gb/s   {:.2} of one stream",
        raw_file / raw
    );
    println!("  raw TCP, 16 processes -> 1 (incast, no DAQ)     {raw16:>7.2} Gb/s   {:.2} of one stream", raw16 / raw);
    println!(
        "  daqnet run, 16 RU x 128 KiB -> 1 node, verify   {on:>7.2} Gb/s   {:.2} of one stream (goal >= 0.80), {:.2} of 16 -> 1, {:.2} of sendfile",
        on / raw,
        on / raw16,
        on / raw_file
    );
    println!("  the same, payload check off                     {off:>7.2} Gb/s   {:.2} of one stream", off / raw);
    println!("  verification cost                               {:>7.1} % of goodput", 100.0 * (1.0 - on / off));
    println!("  daqnet run, atlas-small (8 RU x 12 x 1.1 kB)    {events:>7.0} events/s");
    Ok(())
}
