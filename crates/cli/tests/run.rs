//! The real event builder end to end on loopback: every role a process, real TCP sockets.

mod common;
use common::{accounted, daqnet, out_dir, pid_of, report, serial, signal, text, u, window_trace};
use daqnet_evb::role::SupervisorLine;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("daqnet starts")
}

/// Waits for `child` at most `limit`; kills it and fails if it is still running.
fn wait_within(child: &mut Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut s = String::new();
            child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
            child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
            return (status, s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn incast_micro_builds_and_verifies_200_events() {
    let _one_at_a_time = serial();
    let dir = out_dir("incast");
    let o = daqnet(&[
        "run",
        "scenarios/incast-micro.toml",
        "--events",
        "200",
        "-q",
        "--per-event",
        "--out",
        dir.to_str().unwrap(),
        "--trace",
        "cwnd=ru*->node0|node0->ru0,every=1ms",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = report(&dir);
    assert_eq!(r["substrate"], "run");
    assert_eq!(u(&r["events_built"]), 200);
    // Every chosen sender sampled from its own role's socket, under the simulator's names:
    // the 32 readout units' responses and node 0's requests to readout unit 0.
    let tcp = window_trace(&dir);
    let mut senders: Vec<&str> = tcp.iter().map(|w| w.sender.as_str()).collect();
    senders.sort();
    senders.dedup();
    assert_eq!(senders.len(), 33, "{senders:?}");
    assert!(senders.contains(&"node0->ru0") && senders.contains(&"ru31->node0"), "{senders:?}");
    assert!(tcp.iter().all(|w| w.cwnd >= 1 && w.srtt_ms.is_none_or(|r| r > 0.0)));
    let left: Vec<String> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("trace-tcp-"))
        .collect();
    assert!(left.is_empty(), "the roles' sample files were gathered and removed: {left:?}");
    assert_eq!(r["events_not_built"], serde_json::json!({"timed_out": 0, "lost": 0, "abandoned": 0}));
    // 205 events (5 warm-up) × 32 readout units × 1 fragment, every one verified.
    assert_eq!(u(&r["nodes"][0]["fragments_verified"]), 205 * 32);
    assert_eq!(u(&r["nodes"][0]["fragments_corrupt"]), 0);
    assert!(r["goodput_bps"].as_f64().unwrap() > 1e8, "goodput {}", r["goodput_bps"]);
    let csv = std::fs::read_to_string(dir.join("events.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 205);
}

/// All five policies on the small ATLAS-like system, and the credit check: fragments outstanding
/// per node, counted at the sockets, reach the node's 48 credits and never exceed them.
#[test]
fn atlas_small_runs_every_policy_within_credits() {
    let _one_at_a_time = serial();
    for policy in ["fcfs", "random", "node_round_robin", "node_load_balance", "pu_round_robin"] {
        let dir = out_dir(policy);
        let set = format!("system.supervisor.policy={policy}");
        let o = daqnet(&["run", "scenarios/run/atlas-small.toml", "--set", &set, "-q", "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{policy}: {}", text(&o));
        let r = report(&dir);
        assert_eq!(u(&r["events_built"]), 200, "{policy}");
        let nodes = r["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 2);
        let verified: u64 = nodes.iter().map(|n| u(&n["fragments_verified"])).sum();
        assert_eq!(verified, 210 * 8 * 12, "{policy}: every fragment of every event verified");
        for n in nodes {
            assert_eq!(u(&n["credits"]), 48);
            let peak = u(&n["peak_outstanding_fragments"]);
            assert!(peak <= 48, "{policy}: node {} had {peak} fragments outstanding with 48 credits", n["node"]);
            assert!(peak >= 36, "{policy}: node {} peaked at {peak}: credits never became the limit", n["node"]);
            assert!(u(&n["fragments_verified"]) > 0, "{policy}: node {} got work", n["node"]);
        }
    }
}

/// Region-of-interest steps in a real run: a quarter of the readout units first, 2 ms of
/// processing, half the events rejected, then the rest. Which events a unit rejects and which
/// units each step asks are drawn from the seed, so every event collects the bytes the
/// simulator's does; an event built in two steps reports the 2 ms it processed between them
/// outside its latency, and every fragment asked is verified.
#[test]
fn a_real_run_collects_in_steps_what_the_simulator_does() {
    let _one_at_a_time = serial();
    let steps = r#"system.roi_step=[{ collect_fraction = 0.25, processing_time_ns = "2ms", reject_fraction = 0.5 }]"#;
    let rows = |dir: &Path| -> Vec<(u64, u64, u64)> {
        let text = std::fs::read_to_string(dir.join("events.csv")).unwrap();
        let col = |l: &str, c: usize| l.split(',').nth(c).unwrap().parse::<f64>().unwrap();
        let mut v: Vec<(u64, u64, u64)> = text
            .lines()
            .skip(1)
            .map(|l| (col(l, 0) as u64, col(l, 7) as u64, (col(l, 5) - col(l, 4) - col(l, 6) * 1e6).round() as u64))
            .collect();
        v.sort_unstable();
        v
    };
    let (run, sim) = (out_dir("roi-run"), out_dir("roi-sim"));
    for (cmd, dir) in [("run", &run), ("sim", &sim)] {
        #[rustfmt::skip]
        let o = daqnet(&[cmd, "scenarios/run/atlas-small.toml", "--set", steps, "--per-event", "-q",
            "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
    }
    let (real, simulated) = (rows(&run), rows(&sim));
    assert_eq!(real.len(), 210);
    let bytes = |v: &[(u64, u64, u64)]| v.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>();
    assert_eq!(bytes(&real), bytes(&simulated), "the same events rejected, the same units asked");
    let two_steps: Vec<_> = real.iter().filter(|r| r.1 == 8 * 13_200).collect();
    // 210 events, half rejected after the first step: 105 ± 29 (4 standard deviations).
    assert!((two_steps.len() as f64 - 105.0).abs() <= 29.0, "{} of 210 built in two steps", two_steps.len());
    assert!(real.iter().all(|r| r.1 == 8 * 13_200 || r.1 == 2 * 13_200), "two units or all eight");
    for r in &two_steps {
        assert!(r.2 >= 2_000_000, "event {}: {} ns between the steps, less than its 2 ms of processing", r.0, r.2);
    }
    let r = report(&run);
    let verified: u64 = r["nodes"].as_array().unwrap().iter().map(|n| u(&n["fragments_verified"])).sum();
    assert_eq!(verified, real.iter().map(|r| r.1 / 1100).sum::<u64>(), "every fragment asked was verified");
}

/// A slow run (500 Hz) so that a role can be hit in the middle of it; readout units answer
/// after 3 ms, so at any moment at least one event is being collected.
fn slow_run(dir: &Path, events: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "run",
        "scenarios/run/atlas-small.toml",
        "--events",
        events,
        "--set",
        "system.supervisor.rate_hz=500",
        "--set",
        "system.readout_service_ns=3000000",
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    spawn(&args)
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
}

/// Every role's pid from roles.json.
fn role_pids(dir: &Path) -> Vec<(String, u32)> {
    let t = std::fs::read_to_string(dir.join("roles.json")).expect("roles.json");
    let v: Value = serde_json::from_str(&t).unwrap();
    v.as_array().unwrap().iter().map(|p| (p["role"].as_str().unwrap().to_string(), u(&p["pid"]) as u32)).collect()
}

/// atlas-small (8 readout units, 2 collectors) at 500 Hz: `sig` hits `role` 1.5 s in. The run
/// must end within 3 s of the fault with a report that accounts for every event and names
/// the failed role, and leave no role process behind.
fn fault_8ro_2coll(name: &str, role: &str, sig: &str) -> Value {
    let _one_at_a_time = serial();
    let dir = out_dir(name);
    let mut run = slow_run(&dir, "3000", &[]);
    let pid = pid_of(&dir, role);
    std::thread::sleep(Duration::from_millis(1500));
    let pids = role_pids(&dir);
    signal(pid, sig);
    let hit = Instant::now();
    let (status, out) = wait_within(&mut run, Duration::from_secs(15));
    let took = hit.elapsed();
    println!("{name}: the run ended {:.2} s after {sig} to {role}", took.as_secs_f64());
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(took < Duration::from_secs(3), "the run ended {took:?} after {sig} to {role}: {out}");
    let r = report(&dir);
    accounted(&r, 3000);
    let faults = r["faults"].as_array().unwrap_or_else(|| panic!("no faults in {r}"));
    assert_eq!(faults[0]["role"], role, "the failed role is named first: {faults:?}");
    assert!(out.contains("error: fault at") && out.contains(role), "quiet, yet it says why it failed: {out}");
    for (role, pid) in pids {
        assert!(gone(pid), "{role} (pid {pid}) survived the run");
    }
    r
}

#[test]
fn run_8ro_2coll_kill_readout() {
    let r = fault_8ro_2coll("kill-readout", "readout 1", "-KILL");
    let f = &r["faults"][0];
    // Whoever saw its connection close first: the supervisor or a collector.
    assert_ne!(f["noticed_by"], "readout 1", "{f}");
    let lost: Vec<u64> = f["lost_events"].as_array().unwrap().iter().map(u).collect();
    assert!(!lost.is_empty(), "the events in flight are named: {f}");
    assert_eq!(u(&r["events_not_built"]["lost"]), lost.len() as u64);
}

#[test]
fn run_8ro_2coll_stop_readout() {
    let r = fault_8ro_2coll("stop-readout", "readout 2", "-STOP");
    // Heartbeats every 200 ms; silence for 1 s means hung.
    assert!(r["faults"][0]["reason"].as_str().unwrap().contains("silent for 1000 ms"), "{}", r["faults"]);
}

#[test]
fn run_8ro_2coll_kill_collector() {
    let r = fault_8ro_2coll("kill-collector", "collector 1", "-KILL");
    // Whoever saw its connection close first: the supervisor or a readout sending to it (a CI
    // run had readout 5 first).
    let by = r["faults"][0]["noticed_by"].as_str().unwrap();
    assert!(by == "supervisor" || by.starts_with("readout "), "{}", r["faults"]);
}

#[test]
fn run_8ro_2coll_stop_collector() {
    fault_8ro_2coll("stop-collector", "collector 0", "-STOP");
}

#[test]
fn run_8ro_2coll_kill_supervisor() {
    let r = fault_8ro_2coll("kill-supervisor", "supervisor", "-KILL");
    assert_eq!(r["faults"][0]["noticed_by"], "launcher");
}

#[test]
fn run_8ro_2coll_stop_supervisor() {
    let r = fault_8ro_2coll("stop-supervisor", "supervisor", "-STOP");
    assert!(r["faults"][0]["reason"].as_str().unwrap().contains("no sign of life"), "{}", r["faults"]);
}

/// The supervisor killed in a run with per-event rows: the launcher's report counts the events
/// in the rows the supervisor had written as built (events.csv holds exactly those), the other
/// assigned ones as lost, and accounts for every event. (It said built 0 while events.csv held
/// tens of thousands.)
#[test]
fn run_8ro_2coll_kill_supervisor_per_event() {
    let _one_at_a_time = serial();
    let dir = out_dir("kill-supervisor-rows");
    let mut run = slow_run(&dir, "3000", &["--per-event"]);
    let pid = pid_of(&dir, "supervisor");
    std::thread::sleep(Duration::from_millis(2000));
    signal(pid, "-KILL");
    let (status, out) = wait_within(&mut run, Duration::from_secs(15));
    assert_eq!(status.code(), Some(1), "{out}");
    let r = report(&dir);
    accounted(&r, 3000);
    let built = u(&r["events_built"]);
    let csv = std::fs::read_to_string(dir.join("events.csv")).expect("the rows it wrote, as events.csv");
    let measured = csv.lines().skip(1).filter(|l| l.ends_with(",true")).count() as u64;
    assert!(built > 0 && built == measured, "built {built}, rows measured {measured}: {r}");
    assert!(r["latency_ms"]["median"].as_f64().unwrap_or(0.0) > 0.0, "latencies from the rows: {r}");
    assert!(!dir.join(".events.csv.partial").exists());
}

/// The launcher killed: every role gets its parent-death signal; the supervisor stops the run
/// and writes a report naming the launcher; nothing survives.
#[test]
fn run_8ro_2coll_kill_launcher() {
    let _one_at_a_time = serial();
    let dir = out_dir("kill-launcher");
    let mut run = slow_run(&dir, "3000", &[]);
    pid_of(&dir, "collector 1");
    std::thread::sleep(Duration::from_millis(1500));
    let pids = role_pids(&dir);
    run.kill().unwrap();
    run.wait().unwrap();
    let killed = Instant::now();
    while pids.iter().any(|&(_, p)| !gone(p)) {
        assert!(killed.elapsed() < Duration::from_secs(3), "roles alive 3 s after the launcher died: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = report(&dir);
    accounted(&r, 3000);
    assert_eq!(r["interrupted"], true, "{r}");
    let faults = r["faults"].as_array().unwrap();
    assert!(faults.iter().any(|f| f["role"] == "launcher"), "{faults:?}");
}

/// The launcher stopped: nothing depends on it while the run goes on, so the run finishes and
/// reports; the launcher, continued, picks the report up.
#[test]
fn run_8ro_2coll_stop_launcher() {
    let _one_at_a_time = serial();
    let dir = out_dir("stop-launcher");
    let mut run = slow_run(&dir, "1000", &[]);
    pid_of(&dir, "supervisor");
    signal(run.id(), "-STOP");
    let stopped = Instant::now();
    while !dir.join("report.json").exists() {
        assert!(stopped.elapsed() < Duration::from_secs(10), "no report while the launcher is stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(run.id(), "-CONT");
    let (status, out) = wait_within(&mut run, Duration::from_secs(10));
    assert!(status.success(), "{out}");
    assert_eq!(u(&report(&dir)["events_built"]), 1000);
}

/// The launcher paused (Ctrl-Z) for 4 s in the middle of a run, then continued: the
/// supervisor's progress lines go out from a thread of their own, so the run never waits on
/// them, and the launcher counts silence in its own running time, so the 4 s it did not read
/// are not the supervisor's: the run finishes whole. (The launcher once killed a healthy
/// supervisor as hung on waking up.)
#[test]
fn run_8ro_2coll_pause_launcher() {
    let _one_at_a_time = serial();
    let dir = out_dir("pause-launcher");
    let mut run = slow_run(&dir, "3000", &["--per-event"]);
    pid_of(&dir, "collector 1");
    std::thread::sleep(Duration::from_millis(1000));
    signal(run.id(), "-STOP");
    std::thread::sleep(Duration::from_millis(4000));
    signal(run.id(), "-CONT");
    let (status, out) = wait_within(&mut run, Duration::from_secs(30));
    assert!(status.success(), "{out}");
    let r = report(&dir);
    assert_eq!(u(&r["events_built"]), 3000, "{r}");
    let rows = std::fs::read_to_string(dir.join("events.csv")).unwrap().lines().count();
    assert_eq!(rows, 1 + 3010, "every event's row");
}

/// A full disk (a 64 kB tmpfs the test mounts) under a run with per-event rows: the
/// supervisor's events.csv stops fitting mid-run; the run ends at once with exit status 1 and
/// a message naming the file, and leaves nothing that looks complete — no events.csv, no
/// partial file, and a report.json only if it names the failed write. (It left a 0-byte
/// report.json, which looked complete.)
#[test]
fn run_8ro_2coll_full_disk() {
    let _one_at_a_time = serial();
    let dir = out_dir("run-full-disk");
    let Some(disk) = common::SmallDisk::mount(&dir, "64k") else { return };
    let out = disk.0.join("run");
    let o = daqnet(&[
        "run",
        "scenarios/run/atlas-small.toml",
        "--events",
        "20000",
        "--per-event",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("cannot write") && t.contains("events.csv") && t.contains("No space left on device"), "{t}");
    let left = common::SmallDisk::left(&out);
    assert!(!left.iter().any(|f| f.starts_with("events.") || f.ends_with(".partial")), "left behind: {left:?}");
    if left.iter().any(|f| f == "report.json") {
        let r = report(&out);
        let f = &r["faults"][0];
        assert!(f["reason"].as_str().unwrap().contains("events.csv"), "the report names the failed write: {r}");
    }
}

/// Resident memory of process `pid`, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok());
    kib.unwrap_or(0) * 1024
}

/// The TCP port process `pid` listens on (`ss`), e.g. a readout unit's.
fn listening_port(pid: u32) -> u16 {
    let out = Command::new("ss").args(["-Hltnp"]).output().expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains(&format!("pid={pid},")))
        .unwrap_or_else(|| panic!("{pid} listens nowhere: {text}"));
    let local = line.split_whitespace().nth(3).unwrap();
    local.rsplit(':').next().unwrap().parse().unwrap()
}

/// A local process that knows where the roles listen — even the run's id — and tries
/// everything: a second collector 0 at a readout unit, a late readout at the supervisor, 100
/// idle connections, a frame announcing 64 MiB trickled slowly, random bytes. The run is not
/// disturbed, and no role's memory grows by 64 MiB.
#[test]
fn run_8ro_2coll_hostile_local_client() {
    use daqnet_core::{NodeId, ReadoutId};
    use daqnet_evb::role::RoleId;
    use daqnet_evb::wire::{Message, VERSION};
    use std::net::TcpStream;
    let _one_at_a_time = serial();
    let dir = out_dir("hostile");
    let mut run = slow_run(&dir, "3000", &[]);
    let readout = pid_of(&dir, "readout 0");
    std::thread::sleep(Duration::from_millis(1000));
    let pids: Vec<u32> = role_pids(&dir).into_iter().map(|(_, p)| p).collect();
    let before: Vec<u64> = pids.iter().map(|&p| rss(p)).collect();
    let scenario = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    let run_id: u64 = scenario.lines().find_map(|l| l.strip_prefix("run_id = ")).unwrap().parse().unwrap();
    let cmdline = std::fs::read_to_string(format!("/proc/{readout}/cmdline")).unwrap();
    let args: Vec<&str> = cmdline.split('\0').collect();
    let sup = args[args.iter().position(|a| *a == "--supervisor").unwrap() + 1].to_string();
    let ro = format!("127.0.0.1:{}", listening_port(readout));
    let send = |addr: &str, bytes: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        let _ = s.write_all(bytes);
        s
    };
    let hello = |role, run| Message::Hello { role, run, listen: "127.0.0.1:1".into() }.to_frame();
    let mut held = vec![
        send(&ro, &hello(RoleId::Collector(NodeId(0)), run_id)),
        send(&ro, &hello(RoleId::Collector(NodeId(1)), run_id ^ 1)),
        send(&sup, &hello(RoleId::Readout(ReadoutId(0)), run_id)),
        send(&sup, &[0x5a; 4096]),
        send(&ro, &[0xa5; 4096]),
    ];
    for i in 0..100 {
        held.push(TcpStream::connect(if i % 2 == 0 { &sup } else { &ro }).unwrap());
    }
    // A frame announcing 64 MiB, then its body a kilobyte at a time.
    let mut trickle = TcpStream::connect(&ro).unwrap();
    let mut head = vec![b'D', b'Q', VERSION, 1];
    head.extend_from_slice(&(64u32 << 20).to_le_bytes());
    let _ = trickle.write_all(&head);
    for _ in 0..20 {
        let _ = trickle.write_all(&[7; 1024]);
        std::thread::sleep(Duration::from_millis(50));
    }
    let during: Vec<u64> = pids.iter().map(|&p| rss(p)).collect();
    let (status, out) = wait_within(&mut run, Duration::from_secs(30));
    drop(held);
    assert!(status.success(), "the run was disturbed: {out}");
    assert_eq!(u(&report(&dir)["events_built"]), 3000);
    for ((p, b), d) in pids.iter().zip(&before).zip(&during) {
        assert!(d.saturating_sub(*b) < 64 << 20, "pid {p} grew from {b} to {d} bytes");
    }
    for refused in [
        "collector 0 is already connected",
        "belongs to run",
        "the run has started",
        "bad frame magic",
        "exceeds the maximum of 4096",
    ] {
        assert!(out.contains(refused), "not refused and logged: {refused}\n{out}");
    }
}

#[test]
fn a_corrupted_payload_is_detected_and_reported() {
    let _one_at_a_time = serial();
    let dir = out_dir("corrupt");
    let o =
        daqnet(&["run", "scenarios/run/atlas-small.toml", "--corrupt", "2:17", "-q", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("error: fault") && text(&o).contains("payload differs"), "{}", text(&o));
    let r = report(&dir);
    assert_eq!(u(&r["events_built"]), 199);
    assert_eq!(u(&r["events_not_built"]["lost"]), 1);
    let f = &r["faults"][0];
    assert_eq!(f["lost_events"], serde_json::json!([17]));
    let reason = f["reason"].as_str().unwrap();
    assert!(reason.contains("event 17 from readout 2") && reason.contains("payload differs"), "{reason}");
    let corrupt: u64 = r["nodes"].as_array().unwrap().iter().map(|n| u(&n["fragments_corrupt"])).sum();
    assert_eq!(corrupt, 1);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn http_get(addr: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

#[test]
fn metrics_are_served_while_running() {
    let _one_at_a_time = serial();
    let dir = out_dir("metrics");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut run = slow_run(&dir, "1000", &["--metrics", &addr]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let page = loop {
        if let Some(p) = http_get(&addr) {
            let built = p
                .lines()
                .find_map(|l| l.strip_prefix("daqnet_events_built_total "))
                .and_then(|v| v.trim().parse::<f64>().ok());
            // The readout units report their sockets' counters every second.
            if built.is_some_and(|b| b > 50.0) && p.contains("daqnet_tcp_retransmits_total{node=") {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "no metrics with progress at {addr}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    for series in [
        "# TYPE daqnet_events_built_total counter",
        "daqnet_payload_bytes_total ",
        "daqnet_build_info{version=",
        "daqnet_latency_seconds_bucket{le=",
        "daqnet_credits_in_use{node=\"1\"}",
        "daqnet_queued_requests{node=\"0\"}",
        "daqnet_events_in_flight ",
        "daqnet_tcp_retransmits_total{node=\"0\"}",
    ] {
        assert!(page.contains(series), "{series} missing from\n{page}");
    }
    let (status, out) = wait_within(&mut run, Duration::from_secs(30));
    assert!(status.success(), "{out}");
}

/// A supervisor alone: garbage and oversized frames close their connections (the supervisor
/// lives on), and start-up gives up naming every role that never came.
#[test]
fn bad_frames_are_refused_and_missing_roles_are_named() {
    let _one_at_a_time = serial();
    let out = out_dir("alone");
    let mut sup = Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["role", "supervisor", "--scenario", "scenarios/run/atlas-small.toml", "--launched"])
        .args(["--set", "deploy.startup_timeout_ms=2000", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(sup.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let Some(SupervisorLine::Listening { addr }) = SupervisorLine::parse(&line) else { panic!("announced: {line}") };
    let closed = |bytes: &[u8]| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        s.write_all(bytes).unwrap();
        let mut b = [0u8; 16];
        matches!(s.read(&mut b), Ok(0) | Err(_))
    };
    assert!(closed(b"GET / HTTP/1.1\r\n\r\n"), "garbage closes the connection");
    // A frame announcing 3 GiB (beyond deploy.max_frame_bytes).
    assert!(
        closed(&[b'D', b'Q', daqnet_evb::wire::VERSION, 1, 0, 0, 0, 0xc0]),
        "an oversized frame closes the connection"
    );
    let (status, out) = wait_within(&mut sup, Duration::from_secs(10));
    assert!(!status.success());
    assert!(out.contains("bad frame magic") && out.contains("exceeds the maximum"), "reasons logged: {out}");
    assert!(
        out.contains("start-up timed out") && out.contains("readout 0, readout 1") && out.contains("collector 1"),
        "missing roles named: {out}"
    );
}

#[test]
fn limits_of_a_real_run_are_named_before_anything_starts() {
    let _one_at_a_time = serial();
    let o = daqnet(&["run", "scenarios/run/atlas-small.toml", "--set", "deploy.readout_buffer_bytes=10kB"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(t.contains("scenarios/run/atlas-small.toml: field `deploy.readout_buffer_bytes`: is 10000"), "{t}");
    let o = daqnet(&["role", "readout", "--scenario", "scenarios/run/atlas-small.toml", "--index", "8"]);
    assert!(text(&o).contains("--index 8: the scenario has readout units 0..8"), "{}", text(&o));
}

/// A timed run's supervisor keeps what is in flight, not what was built: its memory at 10 s
/// and at 60 s of a 60 s run differ by less than 5 MB (atlas-small builds thousands of events a
/// second on loopback).
#[test]
fn run_8ro_2coll_supervisor_memory_stays_flat_over_a_minute() {
    let _one_at_a_time = serial();
    let dir = out_dir("flat");
    let mut run =
        spawn(&["run", "scenarios/run/atlas-small.toml", "--duration-s", "60", "-q", "--out", dir.to_str().unwrap()]);
    let sup = pid_of(&dir, "supervisor");
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(10).saturating_sub(started.elapsed()));
    let at10 = rss(sup);
    std::thread::sleep(Duration::from_secs(59).saturating_sub(started.elapsed()));
    let at60 = rss(sup);
    let (status, out) = wait_within(&mut run, Duration::from_secs(30));
    assert!(status.success(), "{out}");
    let built = u(&report(&dir)["events_built"]);
    assert!(
        at10 > 0 && at60.saturating_sub(at10) < 5 << 20,
        "supervisor RSS {at10} B at 10 s, {at60} B at 60 s ({built} events built)"
    );
}

/// A process the test started, killed when the test ends (and, through `PR_SET_PDEATHSIG`,
/// when the test process dies).
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` over HTTP/1.0 (no chunking; the server closes), the body.
fn http_body(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).ok()?;
    let mut page = String::new();
    s.read_to_string(&mut page).ok()?;
    page.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The value of a PromQL instant query with one result, if it has one yet.
fn promql(prometheus: &str, query: &str) -> Option<f64> {
    let q: String = query
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    let body = http_body(prometheus, &format!("/api/v1/query?query={q}"))?;
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array()?.first()?["value"][1].as_str()?.parse().ok()
}

/// A real Prometheus scrapes a live run: the rate of built events and a latency quantile are
/// computed from what `--metrics` serves, and every query of `dashboards/daqnet.json` has a
/// value.
#[test]
fn prometheus_scrapes_a_live_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 && Command::new("prometheus").arg("--version").output().is_err() {
        eprintln!("skipped: Prometheus is not installed and installing it (scripts/prometheus-deps.sh) needs root");
        return;
    }
    if unsafe { libc::geteuid() } == 0 {
        let deps = Command::new("scripts/prometheus-deps.sh").current_dir(&root).status();
        assert!(deps.is_ok_and(|s| s.success()), "scripts/prometheus-deps.sh failed");
    }
    let _one_at_a_time = serial();
    let dir = out_dir("prometheus");
    std::fs::create_dir_all(&*dir).unwrap();
    let (metrics, web) = (format!("127.0.0.1:{}", free_port()), format!("127.0.0.1:{}", free_port()));
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: daqnet\n    static_configs:\n      - targets: ['{metrics}']\n"
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address={web}"))
        .args(["--log.level=warn"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    daqnet_evb::launcher::owned_by_caller(&mut cmd, 0);
    let _prometheus = Owned(cmd.spawn().expect("prometheus starts"));
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("dashboards/daqnet.json")).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let mut queries: Vec<(String, bool)> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| (t["expr"].as_str().unwrap().replace("$__rate_interval", "5s"), false))
        .collect();
    assert!(queries.len() >= 10, "the dashboard's queries: {queries:?}");
    let mut run = Owned(slow_run(&dir.join("run"), "6000", &["--metrics", &metrics]));
    // Sample what Prometheus computes while the run lasts (about 20 s on this machine): ramp
    // up as the 5 s window fills, a plateau, ramp down after the end.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut rates, mut p99s, mut up, mut info) = (Vec::new(), Vec::new(), false, false);
    while run.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run did not end within 60 s");
        std::thread::sleep(Duration::from_millis(500));
        rates.extend(promql(&web, "rate(daqnet_events_built_total[5s])"));
        p99s.extend(promql(&web, "histogram_quantile(0.99, rate(daqnet_latency_seconds_bucket[5s]))"));
        up |= promql(&web, "up{job=\"daqnet\"}") == Some(1.0);
        info |= promql(&web, "count(daqnet_build_info)") == Some(1.0);
        for (q, answered) in queries.iter_mut().filter(|(_, a)| !*a) {
            *answered = promql(&web, q).is_some_and(f64::is_finite);
        }
    }
    let unanswered: Vec<&String> = queries.iter().filter(|(_, a)| !a).map(|(q, _)| q).collect();
    assert!(unanswered.is_empty(), "dashboard queries that never had a value: {unanswered:#?}");
    assert!(up && info, "the target was up ({up}) and its build info scraped ({info})");
    let (status, out) = wait_within(&mut run.0, Duration::from_secs(5));
    assert!(status.success(), "{out}");
    let r = report(&dir.join("run"));
    let median = |v: &mut Vec<f64>| {
        assert!(v.len() >= 5, "Prometheus computed only {v:?} from {metrics}");
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    // The plateau is the run's own rate (events over its measured time) within 15 %.
    let (rate, own) = (median(&mut rates), r["event_rate_hz"].as_f64().unwrap());
    assert!((rate / own - 1.0).abs() < 0.15, "Prometheus: {rate} events/s; the run's report: {own}");
    // Buckets double in width, so a quantile read from them is within a factor 2.
    let (p99, own) = (median(&mut p99s) * 1e3, r["latency_ms"]["p99"].as_f64().unwrap());
    assert!((0.5..2.0).contains(&(p99 / own)), "Prometheus: p99 {p99} ms; the run's report: {own} ms");
}
