//! The real event builder end to end on loopback: every role a process, real TCP sockets.

mod common;
use common::{daqnet, out_dir, text};
use daqnet_evb::role::SupervisorLine;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One real run at a time: each starts up to 34 processes, and on a 2-core machine runs in
/// parallel would starve each other's heartbeats.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn report(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).expect("report.json written")).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

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

fn pid_of(dir: &Path, role: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(t) = std::fs::read_to_string(dir.join("roles.json")) {
            if let Ok(v) = serde_json::from_str::<Value>(&t) {
                if let Some(p) = v.as_array().unwrap().iter().find(|p| p["role"] == role) {
                    return u(&p["pid"]) as u32;
                }
            }
        }
        assert!(Instant::now() < deadline, "roles.json never named {role}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
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
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = report(&dir);
    assert_eq!(r["substrate"], "run");
    assert_eq!(u(&r["events_built"]), 200);
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

#[test]
fn a_killed_readout_ends_the_run_with_a_report_naming_the_lost_events() {
    let _one_at_a_time = serial();
    let dir = out_dir("kill");
    let mut run = slow_run(&dir, "3000", &[]);
    let pid = pid_of(&dir, "readout 1");
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, "-KILL");
    let killed = Instant::now();
    let (status, out) = wait_within(&mut run, Duration::from_secs(10));
    let took = killed.elapsed();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(took < Duration::from_secs(2), "the run ended {took:?} after the kill");
    let r = report(&dir);
    let built = u(&r["events_built"]);
    assert!(built > 100 && built < 3000, "built {built} events before the kill");
    let faults = r["faults"].as_array().expect("faults reported");
    let named = faults.iter().find(|f| f["role"] == "readout 1" || f["reason"].as_str().unwrap().contains("readout 1"));
    let f = named.unwrap_or_else(|| panic!("no fault names readout 1: {faults:?}"));
    let lost: Vec<u64> = f["lost_events"].as_array().unwrap().iter().map(u).collect();
    assert!(!lost.is_empty(), "the events in flight are named: {f}");
    assert_eq!(u(&r["events_not_built"]["lost"]), lost.len() as u64);
    assert_eq!(u(&r["events_not_built"]["lost"]) + u(&r["events_not_built"]["abandoned"]) + built, 3000);
}

#[test]
fn a_hung_readout_is_noticed_by_its_silence() {
    let _one_at_a_time = serial();
    let dir = out_dir("hang");
    let mut run = slow_run(&dir, "3000", &[]);
    let pid = pid_of(&dir, "readout 2");
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, "-STOP");
    let stopped = Instant::now();
    let (status, out) = wait_within(&mut run, Duration::from_secs(15));
    // Heartbeats every 200 ms; silence for 1 s means hung. The launcher then kills it.
    let took = stopped.elapsed();
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(took < Duration::from_secs(5), "noticed {took:?} after the hang");
    let r = report(&dir);
    let faults = r["faults"].as_array().unwrap();
    assert!(faults.iter().any(|f| f["reason"].as_str().unwrap().contains("silent for 1000 ms")), "{faults:?}");
}

#[test]
fn a_corrupted_payload_is_detected_and_reported() {
    let _one_at_a_time = serial();
    let dir = out_dir("corrupt");
    let o =
        daqnet(&["run", "scenarios/run/atlas-small.toml", "--corrupt", "2:17", "-q", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
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
            if built.is_some_and(|b| b > 50.0) {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "no metrics with progress at {addr}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    for series in [
        "daqnet_event_rate_hz ",
        "daqnet_goodput_bps ",
        "daqnet_latency_seconds_bucket{le=",
        "daqnet_credits_in_use{node=\"1\"}",
        "daqnet_queued_requests{node=\"0\"}",
        "daqnet_events_in_flight ",
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
