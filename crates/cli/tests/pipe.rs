//! DAQPIPE for real (`daqnet pipe`, scenarios/daqpipe/real-tcp.toml): nodes as processes over a
//! TCP mesh on loopback — and over MPI in a build with the `mpi` feature — every fragment
//! verified, every event accounted for, a killed node noticed and survived.

mod common;
use common::{daqnet, out_dir, report, serial, text, u};
use serde_json::Value;

const FILE: &str = "scenarios/daqpipe/real-tcp.toml";

/// Runs `daqnet pipe FILE ARGS -q --out DIR` (with `launcher` in front, e.g. mpirun) and returns
/// its exit code and report.
fn pipe(name: &str, launcher: &[&str], args: &[&str]) -> (Option<i32>, Value, String) {
    let dir = out_dir(name);
    let exe = env!("CARGO_BIN_EXE_daqnet");
    let o = if launcher.is_empty() {
        let mut a = vec!["pipe", FILE];
        a.extend(args);
        a.extend(["-q", "--out", dir.to_str().unwrap()]);
        daqnet(&a)
    } else {
        std::process::Command::new(launcher[0])
            .current_dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(&launcher[1..])
            .args([exe, "pipe", FILE])
            .args(args)
            .args(["-q", "--out", dir.to_str().unwrap()])
            .output()
            .expect("the launcher runs")
    };
    let r = if dir.join("report.json").exists() { report(&dir) } else { Value::Null };
    if o.status.success() {
        assert!(dir.join("latency.parquet").exists(), "latency.parquet beside report.json: {}", text(&o));
    }
    (o.status.code(), r, text(&o))
}

/// Every event built from every node's fragment, and every fragment that crossed the network
/// verified: (warm-up + measured events) × (N − 1) of them, none bad; every node sent and
/// received.
fn assert_complete(r: &Value, nodes: u64, transport: &str, out: &str) {
    let p = &r["pipe"];
    assert_eq!(u(&r["events_built"]), 400, "{out}");
    assert_eq!(p["transport"], transport);
    assert_eq!(u(&p["verified_payloads"]), (40 + 400) * (nodes - 1), "{r}");
    assert_eq!(u(&p["bad_payloads"]), 0);
    assert_eq!(u(&p["incomplete"]), 0);
    assert_complete_per_node(r, nodes);
    assert!(r.get("faults").is_none_or(|f| f.as_array().unwrap().is_empty()), "{r}");
}

/// Every one of `nodes` nodes sent and received.
fn assert_complete_per_node(r: &Value, nodes: u64) {
    let per_node = r["pipe"]["per_node"].as_array().unwrap();
    assert_eq!(per_node.len() as u64, nodes);
    for (i, n) in per_node.iter().enumerate() {
        assert!(n[0].as_f64().unwrap() > 0.0 && n[1].as_f64().unwrap() > 0.0, "node {i} idle: {r}");
    }
}

#[test]
fn event_building_over_tcp_on_4_and_8_nodes_verifies_every_fragment() {
    let _one = serial();
    for n in [4u64, 8] {
        let (code, r, out) = pipe(&format!("pipe-tcp-{n}"), &[], &["--set", &format!("pipe.nodes={n}")]);
        assert_eq!(code, Some(0), "{out}");
        assert_complete(&r, n, "tcp", &out);
    }
}

#[test]
fn synthetic_patterns_deliver_every_data_message_once() {
    // 440 data messages (40 warm-up) dealt over the senders: the measured 400 arrive, each
    // verified; gather_cmd_meta's commands and metadata carry no key and are not counted.
    let _one = serial();
    for (pattern, senders) in [("gather", 4), ("gather_cmd_meta", 4), ("one_to_one", 2), ("many_to_one", 3)] {
        let (code, r, out) = pipe(&format!("pipe-{pattern}"), &[], &["--set", &format!("pipe.pattern={pattern}")]);
        assert_eq!(code, Some(0), "{pattern}: {out}");
        assert_eq!(u(&r["events_built"]), 400, "{pattern}: {r}");
        assert_eq!(u(&r["pipe"]["verified_payloads"]), 440, "{pattern}");
        let sending = r["pipe"]["per_node"].as_array().unwrap().iter().filter(|n| n[0].as_f64().unwrap() > 0.0).count();
        assert_eq!(sending, senders, "{pattern}: {r}");
    }
}

#[test]
fn a_killed_node_is_noticed_within_a_second_and_the_others_finish() {
    // 8 nodes, 2000 events (seconds of running here); node 3 killed 300 ms in. Its kernel
    // closes its sockets: every other node notices (within 1 s — loopback gives milliseconds),
    // the events its builder unit held are lost, later events are built from 7 fragments, and
    // node 0's report accounts for every event.
    let _one = serial();
    let (code, r, out) = pipe("pipe-kill", &[], &["--set", "pipe.nodes=8", "--events", "2000", "--kill", "3@300ms"]);
    assert_eq!(code, Some(1), "a run with a lost node fails: {out}");
    let p = &r["pipe"];
    let lost = &p["lost_nodes"].as_array().unwrap_or_else(|| panic!("no lost node: {r}"))[..];
    assert_eq!(lost.len(), 1, "{p}");
    assert_eq!(u(&lost[0]["node"]), 3);
    let killed = lost[0]["killed_at_s"].as_f64().unwrap();
    let noticed = lost[0]["noticed"].as_array().unwrap();
    let who: Vec<u64> = noticed.iter().map(|n| u(&n[0])).collect();
    assert_eq!(who, vec![0, 1, 2, 4, 5, 6, 7], "every other node noticed");
    for n in noticed {
        let after = n[1].as_f64().unwrap() - killed;
        assert!((0.0..=1.0).contains(&after), "node {} noticed {after} s after the kill", n[0]);
    }
    let nb = &r["events_not_built"];
    assert_eq!(u(&r["events_built"]) + u(&nb["lost"]), 2000, "{r}");
    assert_eq!(u(&nb["abandoned"]), 0);
    assert!(u(&nb["lost"]) <= 2, "at most its two credits' worth: {nb}");
    assert!(u(&p["incomplete"]) > 0, "later events lack its fragment");
    assert_eq!(r["faults"][0]["role"], "node 3");
}

#[test]
fn one_way_and_two_processes_per_node_over_tcp() {
    // One way: nodes 0 and 1 only send, 2 and 3 only receive, each event's 2 fragments crossing.
    // Two processes per node: 8 processes, node i's builder pulls its own node's fragment from
    // its readout-unit process too (verified, but not counted as crossing the node's link).
    let _one = serial();
    let (code, r, out) = pipe("pipe-one-way", &[], &["--set", "pipe.direction=one_way"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(u(&r["pipe"]["verified_payloads"]), 440 * 2);
    let roles: Vec<(bool, bool)> = r["pipe"]["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n[0].as_f64().unwrap() > 0.0, n[1].as_f64().unwrap() > 0.0))
        .collect();
    assert_eq!(roles, vec![(true, false), (true, false), (false, true), (false, true)]);
    let (code, r, out) = pipe("pipe-2ppn", &[], &["--set", "pipe.processes_per_node=2"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(u(&r["pipe"]["verified_payloads"]), 440 * 4);
    assert_complete_per_node(&r, 4);
}

#[test]
fn bad_requests_say_what_is_allowed() {
    for (args, says) in [
        (vec!["--kill", "0@1s"], "process 0 hosts the event manager"),
        (vec!["--kill", "9@1s"], "must be 1..4"),
        (vec!["--kill", "2"], "expected NODE@TIME"),
        (vec!["--set", "pipe.fragment_bytes=8"], "pipe.fragment_bytes"),
        (vec!["--set", "pipe.processes_per_node=3"], "must be 1 or 2"),
        (vec!["--set", "pipe.direction=one_way", "--set", "pipe.pattern=gather"], "pipe.direction"),
        (vec!["--mpirun=--oversubscribe"], "--mpirun starts an MPI job: add --transport mpi"),
        (vec!["--transport", "mpi", "--kill", "2@1s"], "or with --transport mpi started by --mpirun"),
    ] {
        let (code, _, out) = pipe("pipe-bad", &[], &args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(out.contains(says), "{args:?}: {out}");
    }
    let o = daqnet(&["pipe", "scenarios/incast-micro.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no [pipe] section"), "{}", text(&o));
    #[cfg(not(feature = "mpi"))]
    {
        for args in [&["--transport", "mpi"][..], &["--transport", "mpi", "--mpirun"]] {
            let (code, _, out) = pipe("pipe-nompi", &[], args);
            assert_eq!(code, Some(2), "{args:?}");
            assert!(out.contains("--features mpi"), "{args:?}: {out}");
        }
    }
}

/// `mpirun` as root on a 2-core machine: root needs leave, and 8 ranks oversubscribe.
#[cfg(feature = "mpi")]
const MPIRUN: [&str; 5] = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "8"];

#[cfg(feature = "mpi")]
#[test]
fn mpi_event_building_on_8_ranks_verifies_every_fragment() {
    let _one = serial();
    let (code, r, out) = pipe("pipe-mpi", &MPIRUN, &["--transport", "mpi", "--set", "pipe.nodes=8"]);
    assert_eq!(code, Some(0), "{out}");
    assert_complete(&r, 8, "mpi", &out);
    let (code, r, out) = pipe(
        "pipe-mpi-gather",
        &MPIRUN,
        &["--transport", "mpi", "--set", "pipe.nodes=8", "--set", "pipe.pattern=gather"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(u(&r["pipe"]["verified_payloads"]), 440);
    // The same job started and watched by daqnet (--mpirun): the same whole report, exit 0.
    let watched = ["--transport", "mpi", "--mpirun=--allow-run-as-root --oversubscribe", "--set", "pipe.nodes=8"];
    let (code, r, out) = pipe("pipe-mpi-watched", &[], &watched);
    assert_eq!(code, Some(0), "{out}");
    assert_complete(&r, 8, "mpi", &out);
}

#[cfg(feature = "mpi")]
#[test]
fn mpi_needs_one_rank_per_process() {
    let _one = serial();
    let (code, r, out) = pipe("pipe-mpi-size", &MPIRUN, &["--transport", "mpi"]);
    assert_ne!(code, Some(0));
    assert!(r.is_null());
    assert!(out.contains("the MPI world has 8 ranks and the pipe needs 4"), "{out}");
    let (code, r, out) = pipe("pipe-mpi-2ppn", &MPIRUN, &["--transport", "mpi", "--set", "pipe.processes_per_node=2"]);
    assert_eq!(code, Some(0), "two processes per node for 4 nodes are 8 ranks: {out}");
    assert_eq!(u(&r["pipe"]["verified_payloads"]), 440 * 4);
}

/// `daqnet pipe FILE --transport mpi --mpirun=…` on 8 ranks with `args`, its output discarded.
#[cfg(feature = "mpi")]
fn spawn_watched_mpi(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["pipe", FILE, "--transport", "mpi", "--mpirun=--allow-run-as-root --oversubscribe"])
        .args(["--set", "pipe.nodes=8", "--events", "20000", "-q", "--out", dir.to_str().unwrap()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The pid of MPI rank `rank`, a child of the `mpirun` that `watcher` started, once all 8 run
/// (each rank carries its number in OMPI_COMM_WORLD_RANK).
#[cfg(feature = "mpi")]
fn rank_pid(watcher: u32, rank: u32) -> i32 {
    use std::time::{Duration, Instant};
    let children = |pid: u32| -> Vec<i32> {
        let f = format!("/proc/{pid}/task/{pid}/children");
        std::fs::read_to_string(f).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
    };
    let has_rank = |pid: i32| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        env.split(|&b| b == 0).any(|v| v == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
    };
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let ranks: Vec<i32> = children(watcher).into_iter().flat_map(|m| children(m as u32)).collect();
        if let (8, Some(&pid)) = (ranks.len(), ranks.iter().find(|&&p| has_rank(p))) {
            return pid;
        }
        assert!(Instant::now() < until, "mpirun never started 8 ranks: {ranks:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Over MPI a dead rank takes the job with it (Open MPI's MPI_ERRORS_ARE_FATAL); the watcher
/// started by --mpirun notices it, has node 0 stop the run and write its report, and names the
/// rank in it: within 3 s, every event accounted for, no process left.
#[cfg(feature = "mpi")]
#[test]
fn pipe_8ranks_mpi_kill_rank() {
    let _one = serial();
    // --kill counts from mpirun's start: a later kill when node 0 had not begun building.
    let killed = |after: &str| {
        let dir = out_dir("pipe-mpi-kill");
        let mut job = spawn_watched_mpi(&dir, &["--kill", &format!("3@{after}")]);
        let code = wait_bounded(&mut job, std::time::Duration::from_secs(30));
        let r = report(&dir);
        assert_eq!(code, Some(1), "{r}");
        r
    };
    let r = built_within(["1s", "3s", "6s"], killed);
    let f = &r["faults"][0];
    assert_eq!((f["role"].as_str(), f["noticed_by"].as_str()), (Some("node 3"), Some("launcher")), "{r}");
    assert!(f["reason"].as_str().unwrap().contains("ended before the run was over"), "{r}");
    // Node 0's own report: its log survived, and the events it had built are counted.
    assert!(u(&r["events_built"]) > 0 && r["interrupted"] == true, "{r}");
    assert!(r["wall_s"].as_f64().unwrap() - f["at_s"].as_f64().unwrap() < 3.0, "{r}");
    common::accounted(&r, 20000);
    assert_no_ranks_left();
    // Ctrl-C of the watcher: node 0 stops the run and writes an interrupted report, no fault.
    let r = once_building("pipe-mpi-int", 0, |job, _| {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(job.id() as i32, libc::SIGINT) };
        std::time::Instant::now()
    });
    assert!(r["interrupted"] == true, "{r}");
    assert!(r.get("faults").is_none_or(|f| f.as_array().unwrap().is_empty()), "{r}");
    common::accounted(&r, 20000);
    assert_no_ranks_left();
}

/// A rank stopped (kill -STOP) for deploy.peer_timeout_ms is named and the run ended within
/// 3 s of the stop, node 0's report counting what it built; the same for node 0 itself, whose
/// report the watcher writes (its settled events lost with it).
#[cfg(feature = "mpi")]
#[test]
fn pipe_8ranks_mpi_stop_rank_and_node0() {
    let _one = serial();
    let stop = |_: &std::process::Child, pid| {
        // SAFETY: kill has no memory-safety preconditions; `pid` is a rank of our job.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::time::Instant::now()
    };
    for (rank, built) in [(3, true), (0, false)] {
        let name = format!("pipe-mpi-stop-{rank}");
        let r = if built { once_building(&name, rank, stop) } else { faulted(&name, rank, 500, stop) };
        let f = &r["faults"][0];
        assert_eq!(f["role"], format!("node {rank}"), "{r}");
        assert!(f["reason"].as_str().unwrap().starts_with("stopped for 1.0 s"), "{r}");
        assert_eq!(u(&r["events_built"]) > 0, built, "{r}");
        common::accounted(&r, 20000);
        assert_no_ranks_left();
    }
}

/// Starts a watched 8-rank job in a fresh folder `name`, lets it run `wait_ms` after rank `rank`
/// appears, then does `fault` to it (given the job and the rank's pid; it returns when): the
/// report, written within 3 s of the fault, of a job that ended with exit code 1.
#[cfg(feature = "mpi")]
fn faulted(
    name: &str,
    rank: u32,
    wait_ms: u64,
    fault: impl Fn(&std::process::Child, i32) -> std::time::Instant,
) -> serde_json::Value {
    let dir = out_dir(name);
    let mut job = spawn_watched_mpi(&dir, &[]);
    let pid = rank_pid(job.id(), rank);
    std::thread::sleep(std::time::Duration::from_millis(wait_ms));
    let at = fault(&job, pid);
    let r = common::report_within(&dir, at, std::time::Duration::from_secs(3));
    assert_eq!(wait_bounded(&mut job, std::time::Duration::from_secs(30)), Some(1), "{r}");
    r
}

/// [`faulted`] once node 0 has built events, waiting 0.5 s, then 2 s, then 5 s (see
/// [`built_within`]).
#[cfg(feature = "mpi")]
fn once_building(
    name: &str,
    rank: u32,
    fault: impl Fn(&std::process::Child, i32) -> std::time::Instant,
) -> serde_json::Value {
    built_within([500, 2000, 5000], |wait_ms| faulted(name, rank, wait_ms, &fault))
}

/// The report of the first of `tries` whose run had node 0 build events: 8 ranks starting MPI
/// on 2 loaded cores can outlast a fault's delay (a CI run's node 0 had run 47 ms when the
/// fault came), so a run without a built event is run again with the next, longer delay.
#[cfg(feature = "mpi")]
fn built_within<T>(tries: [T; 3], run: impl Fn(T) -> serde_json::Value) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    for t in tries {
        last = run(t);
        if u(&last["events_built"]) > 0 {
            return last;
        }
        eprintln!("node 0 had built nothing when the fault came: the MPI start fell behind; once more");
        assert_no_ranks_left();
    }
    panic!("node 0 built nothing before the last fault: {last}");
}

/// The exit code of `job`, killed if it runs past `limit`.
#[cfg(feature = "mpi")]
fn wait_bounded(job: &mut std::process::Child, limit: std::time::Duration) -> Option<i32> {
    let until = std::time::Instant::now() + limit;
    loop {
        if let Some(s) = job.try_wait().unwrap() {
            return s.code();
        }
        if std::time::Instant::now() > until {
            let _ = job.kill();
            panic!("daqnet pipe --mpirun still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// No `mpirun` and no rank of a test's job is left.
#[cfg(feature = "mpi")]
fn assert_no_ranks_left() {
    let ours = |pid: &str| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        env.windows(21).any(|w| w == b"OMPI_COMM_WORLD_RANK=") || cmd.starts_with(b"mpirun\0")
    };
    let me = std::process::id().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|p| p.parse::<u32>().is_ok() && *p != me && ours(p))
        .collect();
    assert!(left.is_empty(), "processes of the MPI job left: {left:?}");
}

/// `daqnet pipe FILE` on 8 nodes over TCP with `args`, its output discarded.
fn spawn_pipe(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["pipe", FILE, "--set", "pipe.nodes=8", "-q", "--out", dir.to_str().unwrap()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The pid of node `rank`, a child of the launcher `launcher`, once it runs.
fn node_pid(launcher: u32, rank: u32) -> u32 {
    use std::time::{Duration, Instant};
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let children =
            std::fs::read_to_string(format!("/proc/{launcher}/task/{launcher}/children")).unwrap_or_default();
        for pid in children.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
            let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&str> = cmd.split('\0').collect();
            if args.windows(2).any(|w| w[0] == "--rank" && w[1] == rank.to_string()) {
                return pid;
            }
        }
        assert!(Instant::now() < until, "node {rank} never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 8 nodes, node `rank` hit with `sig` 1 s in; returns the report, the exit code, and how long
/// after the signal the run ended.
fn pipe_fault(name: &str, rank: u32, sig: i32, events: &str) -> (Value, Option<i32>, f64, f64) {
    use std::time::{Duration, Instant};
    let _one = serial();
    let dir = out_dir(name);
    let spawned = Instant::now();
    let mut run = spawn_pipe(&dir, &["--events", events]);
    let pid = node_pid(run.id(), rank);
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: kill has no memory-safety preconditions; `pid` is our grandchild.
    unsafe { libc::kill(pid as i32, sig) };
    let (hit, at) = (Instant::now(), spawned.elapsed().as_secs_f64());
    let status = common::wait_exit(&mut run, Duration::from_secs(60));
    (report(&dir), status.code(), hit.elapsed().as_secs_f64(), at)
}

/// Node 3 stopped (SIGSTOP): its heartbeats stop, every other node gives it up after
/// deploy.peer_timeout_ms (1 s) of silence — within twice that of the stop — and the run
/// finishes without it, as with a killed node. (A stopped node was noticed only after 20 s.)
#[test]
fn pipe_8nodes_stop_node() {
    let (r, code, _, stopped_at) = pipe_fault("pipe-stop-node", 3, libc::SIGSTOP, "3000");
    assert_eq!(code, Some(1), "{r}");
    common::accounted(&r, 3000);
    let lost = &r["pipe"]["lost_nodes"][0];
    assert_eq!(u(&lost["node"]), 3, "{r}");
    let noticed = lost["noticed"].as_array().unwrap();
    assert_eq!(noticed.len(), 7, "every other node gave it up: {lost}");
    for n in noticed {
        // Measured from the launcher's epoch, a few ms after this test spawned it.
        let after = n[1].as_f64().unwrap() - stopped_at;
        assert!((0.7..2.0).contains(&after), "node {} gave node 3 up {after:.2} s after the stop", n[0]);
    }
    assert_eq!(r["faults"][0]["role"], "node 3");
}

/// Node 0 killed: it hosted the event manager and wrote the report, so the launcher writes one
/// naming it, with every event accounted for; the other nodes end at once. (No report was
/// written, 10 s later.)
#[test]
fn pipe_8nodes_kill_node0() {
    let (r, code, took, _) = pipe_fault("pipe-kill-node0", 0, libc::SIGKILL, "3000");
    assert_eq!(code, Some(1), "{r}");
    assert!(took < 3.0, "the run ended {took:.2} s after node 0 died");
    common::accounted(&r, 3000);
    let f = &r["faults"][0];
    assert_eq!((&f["role"], &f["noticed_by"]), (&Value::from("node 0"), &Value::from("launcher")), "{f}");
    assert!(f["reason"].as_str().unwrap().contains("SIGKILL"), "{f}");
}

/// Node 0 stopped: no progress line reaches the launcher, which kills it as hung after
/// 2 × deploy.peer_timeout_ms and writes the report.
#[test]
fn pipe_8nodes_stop_node0() {
    let (r, code, took, _) = pipe_fault("pipe-stop-node0", 0, libc::SIGSTOP, "3000");
    assert_eq!(code, Some(1), "{r}");
    assert!(took < 3.0, "the run ended {took:.2} s after node 0 stopped");
    let f = &r["faults"][0];
    assert_eq!(f["role"], "node 0", "{f}");
    assert!(f["reason"].as_str().unwrap().contains("no sign of life"), "{f}");
}

/// The launcher paused (Ctrl-Z) for 4 s in the middle of a run, then continued: node 0's
/// progress lines never wait for it and it counts silence in its own running time, so the run
/// finishes whole (3,000 events, ~10 s here).
#[test]
fn pipe_8nodes_pause_launcher() {
    use std::time::Duration;
    let _one = serial();
    let dir = out_dir("pipe-pause-launcher");
    let mut run = spawn_pipe(&dir, &["--events", "3000"]);
    node_pid(run.id(), 7);
    std::thread::sleep(Duration::from_millis(1000));
    common::signal(run.id(), "-STOP");
    std::thread::sleep(Duration::from_millis(4000));
    common::signal(run.id(), "-CONT");
    let status = common::wait_exit(&mut run, Duration::from_secs(120));
    assert!(status.success());
    let r = report(&dir);
    assert_eq!(r["events_built"], 3000, "{r}");
    assert!(r.get("faults").is_none() && r.get("interrupted").is_none(), "{r}");
}

/// The launcher killed (SIGKILL): every node gets its death signal; node 0 stops the run and
/// writes a report that names the launcher and accounts for every event; no node survives.
#[test]
fn pipe_8nodes_kill_launcher() {
    use std::time::{Duration, Instant};
    let _one = serial();
    let dir = out_dir("pipe-kill-launcher");
    let mut run = spawn_pipe(&dir, &["--events", "1000000"]);
    let nodes: Vec<u32> = (0..8).map(|k| node_pid(run.id(), k)).collect();
    std::thread::sleep(Duration::from_millis(1500));
    run.kill().unwrap();
    run.wait().unwrap();
    let killed = Instant::now();
    let r = common::report_within(&dir, killed, Duration::from_secs(3));
    common::accounted(&r, 1_000_000);
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(r["faults"][0]["role"], "launcher", "{r}");
    while nodes.iter().any(|p| std::path::Path::new(&format!("/proc/{p}")).exists()) {
        assert!(killed.elapsed() < Duration::from_secs(5), "nodes outlived the launcher");
        std::thread::sleep(Duration::from_millis(20));
    }
}
