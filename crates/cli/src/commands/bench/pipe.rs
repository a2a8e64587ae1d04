//! DAQPIPE's benchmark against the raw transport: `daqnet pipe` with the gather pattern (every
//! node sends 1 MB messages to all the others in turn) against N processes that only stream
//! bytes all-to-all over TCP — the same connections without any DAQ logic, header or payload
//! check — measured per node in the same run. In a build with MPI, the same over MPI against
//! `MPI_Alltoall`, each started by `mpirun`.

use daqnet_evb::pipe::launch::{launch, rendezvous, PipeLaunch};
use daqnet_evb::pipe::tcp::listen;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The node counts of the bench.
const NODES: [u32; 2] = [4, 8];

/// Seconds each raw all-to-all streams.
const RAW_SECONDS: f64 = 2.0;

/// Bytes of a write, and of a gather message.
const BLOCK: usize = 1 << 20;

/// One raw all-to-all node (a child process): listens, prints `listening ADDR`, reads every
/// node's address from stdin, connects to the nodes below and accepts those above, then writes
/// 1 MiB blocks to every peer for `seconds` while draining what they send. Prints the bytes it
/// received and the seconds from the first to the last, as JSON.
pub fn raw_node(rank: u32, seconds: f64) -> anyhow::Result<()> {
    let l = listen("127.0.0.1:0".parse()?, "cubic")?;
    let addrs = rendezvous(&l)?;
    let mut peers = Vec::new();
    for a in &addrs[..rank as usize] {
        let s = daqnet_evb::net::transport::tuned_socket(a, "cubic")?;
        s.connect(&(*a).into())?;
        peers.push(TcpStream::from(s));
    }
    peers.extend(accept(&l, addrs.len() - 1 - rank as usize)?);
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut threads = Vec::new();
    for p in &peers {
        let mut w = p.try_clone()?;
        threads.push(std::thread::spawn(move || {
            let buf = vec![0x5au8; BLOCK];
            while Instant::now() < until && w.write_all(&buf).is_ok() {}
            let _ = w.shutdown(std::net::Shutdown::Write);
            (None, None, 0)
        }));
        let r = p.try_clone()?;
        threads.push(std::thread::spawn(move || match super::run::drain(r) {
            Ok((first, last, bytes)) => (Some(first), Some(last), bytes),
            Err(_) => (None, None, 0),
        }));
    }
    let spans: Vec<_> = threads.into_iter().map(|t| t.join().expect("no panic")).collect();
    let first = spans.iter().filter_map(|s| s.0).min().expect("peers");
    let last = spans.iter().filter_map(|s| s.1).max().expect("peers");
    let bytes: u64 = spans.iter().map(|s| s.2).sum();
    println!("{}", serde_json::json!({ "bytes": bytes, "seconds": (last - first).as_secs_f64() }));
    Ok(())
}

fn accept(l: &TcpListener, n: usize) -> anyhow::Result<Vec<TcpStream>> {
    (0..n).map(|_| Ok(l.accept()?.0)).collect()
}

/// Raw all-to-all over TCP between `n` processes: each node's receive bandwidth, mean over the
/// nodes, Gb/s.
fn raw_tcp(n: u32) -> anyhow::Result<f64> {
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    let mut outs = Vec::new();
    for rank in 0..n {
        let mut c = Command::new(&exe)
            .args(["bench", "--raw-node", &rank.to_string(), "--seconds", &RAW_SECONDS.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        outs.push(BufReader::new(c.stdout.take().expect("piped")));
        children.push(c);
    }
    let mut addrs = Vec::new();
    for o in &mut outs {
        let mut line = String::new();
        o.read_line(&mut line)?;
        let addr = line.trim().strip_prefix("listening ").ok_or_else(|| anyhow::anyhow!("a raw node said `{line}`"))?;
        addrs.push(addr.to_string());
    }
    let list = addrs.join(",") + "\n";
    for c in &mut children {
        c.stdin.take().expect("piped").write_all(list.as_bytes())?;
    }
    let mut per_node = Vec::new();
    for (mut c, mut o) in children.into_iter().zip(outs) {
        let mut text = String::new();
        o.read_to_string(&mut text)?;
        anyhow::ensure!(c.wait()?.success(), "a raw all-to-all node failed");
        let v: serde_json::Value = serde_json::from_str(text.trim())?;
        per_node.push(v["bytes"].as_f64().unwrap_or(0.0) * 8.0 / v["seconds"].as_f64().unwrap_or(f64::NAN) / 1e9);
    }
    Ok(per_node.iter().sum::<f64>() / per_node.len() as f64)
}

/// `daqnet pipe` gather on `n` nodes over TCP: the mean receive bandwidth per node, Gb/s.
fn pipe_gather(scenarios: &Path, n: u32) -> anyhow::Result<f64> {
    let file = scenarios.join("daqpipe/real-tcp.toml");
    // About as many bytes as the raw run moves, a few seconds here.
    let events = 1200 * n as u64;
    let sets = [
        format!("pipe.nodes={n}"),
        "pipe.pattern=gather".into(),
        format!("pipe.message_bytes={BLOCK}"),
        in_flight(n),
        format!("run.events={events}"),
        "run.warmup_events=0".into(),
    ];
    let sc = super::super::load_run_scenario(&file, &sets)?;
    let out = std::env::temp_dir().join(format!("daqnet-bench-pipe-{}", std::process::id()));
    let opts = PipeLaunch { exe: std::env::current_exe()?, origin: "bench".into(), out: out.clone(), kill: None };
    let (r, code) = launch(&sc, &opts)?;
    let _ = std::fs::remove_dir_all(&out);
    anyhow::ensure!(code == 0, "daqnet pipe gather on {n} nodes failed (exit {code})");
    Ok(r.pipe.map_or(0.0, |p| p.recv_bps.mean / 1e9))
}

/// Two messages in flight per destination: the raw all-to-all keeps every connection busy all
/// the time, and so must the gather (one per destination leaves a connection idle while a
/// node turns a message round).
fn in_flight(n: u32) -> String {
    format!("pipe.messages_in_flight={}", 2 * (n - 1))
}

/// The simulator at DAQPIPE's planned size: 500 nodes on a leaf-spine, gather, 10 ms of traffic.
pub fn gather_500() -> super::Case {
    super::Case::new("daqpipe: 500 nodes, gather, 10 ms", "daqpipe/gather-500.toml", &[])
}

/// Runs the benchmark and prints its table.
pub fn bench_pipe(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
    let v = super::time_case(scenarios, &gather_500(), 1)?;
    println!(
        "\nsimulator, 500 nodes x 100 Gb/s on a leaf-spine, gather: {:.1} ms of traffic in {:.1} s on one core, peak {:.2} GiB \
         (goal <= 600 s, <= 8 GiB)",
        v["simulated_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
        v["wall_s"].as_f64().unwrap_or(f64::NAN),
        v["peak_mib"].as_f64().unwrap_or(f64::NAN) / 1024.0
    );
    println!(
        "\nDAQPIPE gather against raw all-to-all on loopback ({} CPU cores), receive per node, best of {repeat}:",
        super::super::cores()
    );
    compare("tcp, raw all-to-all", repeat, raw_tcp, |n| pipe_gather(scenarios, n))?;
    mpi::bench(scenarios, repeat)
}

/// For each node count, the best of `repeat` runs of the raw transport and of the gather,
/// interleaved so that a slow minute of the machine hits both alike; printed with their ratio.
fn compare(
    raw_name: &str,
    repeat: u32,
    raw: impl Fn(u32) -> anyhow::Result<f64>,
    gather: impl Fn(u32) -> anyhow::Result<f64>,
) -> anyhow::Result<()> {
    for n in NODES {
        let (mut r, mut g) = (0f64, 0f64);
        for _ in 0..repeat {
            r = r.max(raw(n)?);
            g = g.max(gather(n)?);
        }
        println!(
            "  {n} nodes, {raw_name:<20} {r:>6.2} Gb/s, daqnet pipe gather {g:>6.2} Gb/s   ratio {:.2} (goal >= 0.70)",
            g / r
        );
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
mod mpi {
    pub fn bench(_: &std::path::Path, _: u32) -> anyhow::Result<()> {
        println!("  mpi: not in this build (cargo build --release --features mpi)");
        Ok(())
    }
}

#[cfg(feature = "mpi")]
mod mpi {
    //! Over MPI: each case its own `mpirun`.
    use super::BLOCK;

    use std::path::Path;
    use std::process::Command;

    /// Rounds of the raw `MPI_Alltoall`.
    const ROUNDS: u32 = 200;

    fn mpirun(n: u32) -> Command {
        let mut c = Command::new("mpirun");
        c.args(["--allow-run-as-root", "--oversubscribe", "-np", &n.to_string()]);
        c
    }

    /// One rank of the raw all-to-all (under mpirun): `ROUNDS` rounds of `MPI_Alltoall` with
    /// 1 MiB per peer; rank 0 prints its receive bandwidth, Gb/s.
    pub fn raw_rank() -> anyhow::Result<()> {
        use mpi::traits::*;
        let universe = mpi::initialize().ok_or_else(|| anyhow::anyhow!("MPI is already initialized"))?;
        let world = universe.world();
        let n = world.size() as usize;
        let send = vec![0x5au8; BLOCK * n];
        let mut recv = vec![0u8; BLOCK * n];
        world.barrier();
        let t = std::time::Instant::now();
        for _ in 0..ROUNDS {
            world.all_to_all_into(&send[..], &mut recv[..]);
        }
        world.barrier();
        let s = t.elapsed().as_secs_f64();
        if world.rank() == 0 {
            // Its own block does not cross the network.
            println!("{}", ((n - 1) * BLOCK) as f64 * ROUNDS as f64 * 8.0 / s / 1e9);
        }
        Ok(())
    }

    fn raw(n: u32) -> anyhow::Result<f64> {
        let exe = std::env::current_exe()?;
        let o = mpirun(n).arg(&exe).args(["bench", "--raw-mpi"]).output()?;
        anyhow::ensure!(o.status.success(), "raw MPI all-to-all failed: {}", String::from_utf8_lossy(&o.stderr));
        Ok(String::from_utf8_lossy(&o.stdout).trim().parse()?)
    }

    fn gather(scenarios: &Path, n: u32) -> anyhow::Result<f64> {
        let exe = std::env::current_exe()?;
        let out = std::env::temp_dir().join(format!("daqnet-bench-pipe-mpi-{}", std::process::id()));
        let o = mpirun(n)
            .arg(&exe)
            .arg("pipe")
            .arg(scenarios.join("daqpipe/real-tcp.toml"))
            .args(["--transport", "mpi", "-q", "--out"])
            .arg(&out)
            .args(["--set", &format!("pipe.nodes={n}"), "--set", "pipe.pattern=gather"])
            .args(["--set", &format!("pipe.message_bytes={BLOCK}"), "--set", "run.warmup_events=0"])
            .args(["--set", &super::in_flight(n)])
            .args(["--events", &(1200 * n).to_string()])
            .output()?;
        anyhow::ensure!(o.status.success(), "daqnet pipe over MPI failed: {}", String::from_utf8_lossy(&o.stderr));
        let r: daqnet_core::report::RunReport =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json"))?)?;
        let _ = std::fs::remove_dir_all(&out);
        Ok(r.pipe.map_or(0.0, |p| p.recv_bps.mean / 1e9))
    }

    pub fn bench(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
        super::compare("mpi, MPI_Alltoall", repeat, raw, |n| gather(scenarios, n))
    }
}

#[cfg(feature = "mpi")]
pub use mpi::raw_rank as raw_mpi_rank;
