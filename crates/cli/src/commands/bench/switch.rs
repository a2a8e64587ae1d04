//! The software switch's benchmark: one TCP stream through a two-host testbed, once through the
//! kernel bridge and once through the daqring switch, in the same run (goal: ≥ 1.5 Gb/s).
//! Links are 40 Gb/s, so the hosts' shapers do not limit; offloads are off, as in every testbed.

use daqnet_testbed::lifecycle::{check_prerequisites, Owned};
use daqnet_testbed::netns;
use daqnet_testbed::plan::TestbedPlan;
use daqnet_testbed::run::{SoftSwitch, TestbedRunOptions};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

/// One stream for `seconds` from the readout host to the collector host, in Gb/s (bytes over
/// the time from the first byte read to the last).
fn stream(plan: &TestbedPlan, seconds: f64) -> anyhow::Result<f64> {
    let host = |short: &str| plan.hosts.iter().find(|h| h.name == short).expect("host exists").clone();
    let (tx, rx) = (host("ru0"), host("node0"));
    let addr = format!("{}:5201", rx.ip);
    let listen = addr.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let ns = rx.ns.clone();
    let reader = std::thread::spawn(move || {
        netns::within(&ns, || {
            let l = TcpListener::bind(&listen)?;
            let _ = ready_tx.send(());
            let (first, last, bytes) = super::run::drain(l.accept()?.0)?;
            Ok(bytes as f64 * 8.0 / (last - first).as_secs_f64() / 1e9)
        })
    });
    ready_rx.recv_timeout(Duration::from_secs(5))?;
    netns::within(&tx.ns, || super::run::send_for(&addr, seconds))?;
    reader.join().map_err(|_| anyhow::anyhow!("the stream's reader panicked"))?
}

/// Throughput of one stream through `kind` (`bridge` or `daqring`), best of `repeat`.
fn through(scenarios: &Path, kind: &str, repeat: u32) -> anyhow::Result<f64> {
    let sets: Vec<String> = [
        "system.readout_units=1",
        "network.readout_link_bps=40G",
        "network.node_link_bps=40G",
        "network.switch.buffer.port_bytes=4MB",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("network.switch.kind={kind}")])
    .collect();
    let file = scenarios.join("testbed/incast-32.toml");
    let sc = super::super::load_run_scenario(&file, &sets)?;
    let plan = TestbedPlan::checked(&sc, &format!("bench{}-{kind}", std::process::id()), "bench")?;
    let testbed = Owned::up(plan, "bench")?;
    let opts = TestbedRunOptions {
        exe: std::env::current_exe()?,
        out: std::env::temp_dir().join(format!("daqnet-bench-switch-{}", std::process::id())),
        ..Default::default()
    };
    let switch = if kind == "daqring" { Some(SoftSwitch::start(&testbed.plan, &opts)?) } else { None };
    let mut best = 0f64;
    for _ in 0..repeat {
        best = best.max(stream(&testbed.plan, 3.0)?);
    }
    if let Some(s) = switch {
        let queues = s.stop()?;
        anyhow::ensure!(queues.iter().all(|q| q.drops == 0), "the daqring switch dropped frames: {queues:?}");
    }
    let _ = std::fs::remove_dir_all(&opts.out);
    Ok(best)
}

/// Runs the benchmark and prints its table (skipped, with a note, without root).
pub fn bench_switch(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
    println!("\none TCP stream through the testbed's switch (offloads off, cubic), best of {repeat}:");
    if let Err(e) = check_prerequisites() {
        println!("  skipped: {e}");
        return Ok(());
    }
    let bridge = through(scenarios, "bridge", repeat)?;
    let daqring = through(scenarios, "daqring", repeat)?;
    println!("  kernel bridge                {bridge:>7.2} Gb/s");
    println!(
        "  daqnet switch (daqring)      {daqring:>7.2} Gb/s   {:.2} of the bridge (goal >= 1.5 Gb/s)",
        daqring / bridge
    );
    Ok(())
}
