//! The `daqnet` command as a user runs it.

mod common;
use common::{daqnet, out_dir, text};

#[test]
fn print_default_is_a_valid_commented_scenario() {
    let o = daqnet(&["scenario", "--print-default"]);
    assert!(o.status.success());
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(t.contains("# readout units"), "commented");
    daqnet_core::scenario::parse_str(&t, "printed", &[]).unwrap();
}

#[test]
fn sim_writes_report_and_per_event_csv() {
    let dir = out_dir("sim");
    let o = daqnet(&[
        "sim",
        "scenarios/incast-micro.toml",
        "--events",
        "20",
        "--per-event",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("latency (ms)"), "summary table printed");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    for key in [
        "substrate",
        "scenario",
        "seed",
        "events_built",
        "events_not_built",
        "duration_s",
        "event_rate_hz",
        "goodput_bps",
        "latency_ms",
        "tcp",
        "switch",
        "wall_s",
        "sim_events_per_s",
    ] {
        assert!(report.get(key).is_some(), "report.json has `{key}`");
    }
    assert_eq!(report["substrate"], "sim");
    assert_eq!(report["events_built"], 20);
    let csv = std::fs::read_to_string(dir.join("events.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 25, "header + 5 warm-up + 20 measured events");
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--set", "system.credits_per_node=lots"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(t.contains("scenarios/incast-micro.toml with --set system.credits_per_node=lots"), "{t}");
    assert!(t.contains("field `system.credits_per_node`"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    let o = daqnet(&["sim", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no/such/file.toml: cannot read"), "{}", text(&o));
}

/// Peak resident memory of a running process (VmHWM), bytes; 0 once it is gone.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok());
    kib.unwrap_or(0) * 1024
}

/// A trillion events asked for, half a simulated second allowed: memory follows the events in
/// flight, not the events requested, and the events never started are reported abandoned.
#[test]
fn sim_of_a_trillion_events_with_a_time_limit_ends_in_seconds_in_bounded_memory() {
    let dir = out_dir("trillion");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["sim", "scenarios/incast-micro.toml", "--events", "1000000000000", "--set", "run.time_limit_s=0.5"])
        .args(["-q", "--out", dir.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let mut peak = 0;
    let status = loop {
        peak = peak.max(peak_rss(child.id()));
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed().as_secs() < 60, "still simulating after a minute");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
    assert!(peak > 0 && peak < 200 << 20, "peak memory {} MiB", peak >> 20);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let built = r["events_built"].as_u64().unwrap();
    assert!(built > 0);
    assert_eq!(r["events_not_built"]["abandoned"].as_u64().unwrap() + built, 1_000_000_000_000);
}

/// A rerun into the same folder leaves no file of the earlier run behind.
#[test]
fn a_rerun_without_per_event_records_removes_the_earlier_ones() {
    let dir = out_dir("rerun");
    let d = dir.to_str().unwrap();
    assert!(daqnet(&["sim", "scenarios/incast-micro.toml", "--events", "5", "--per-event", "-q", "--out", d])
        .status
        .success());
    assert!(dir.join("events.csv").exists());
    assert!(daqnet(&["sim", "scenarios/incast-micro.toml", "--events", "5", "-q", "--out", d]).status.success());
    assert!(!dir.join("events.csv").exists(), "an events.csv of the earlier run");
}

#[test]
fn a_trace_is_written_drawn_and_checked_before_the_run() {
    let dir = out_dir("trace");
    let d = dir.to_str().unwrap();
    let spec = "queue=sw->node0,cwnd=ru0->node0,every=1ms";
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--events", "5", "--trace", spec, "--out", d]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("port samples in"), "{}", text(&o));
    for f in ["trace-ports.parquet", "trace-tcp.parquet"] {
        let bytes = std::fs::read(dir.join(f)).unwrap();
        assert!(bytes.starts_with(b"PAR1") && bytes.len() > 1000, "{f}");
    }
    // Drawn alone and beside another run (the legend names each run by its substrate).
    for (runs, y) in [(vec![d], "queue_bytes"), (vec![d, d], "cwnd")] {
        let png = dir.join(format!("{y}.png"));
        let mut args = vec!["plot"];
        args.extend(&runs);
        args.extend(["--kind", "series", "--y", y, "-o", png.to_str().unwrap()]);
        let o = daqnet(&args);
        assert!(o.status.success(), "{}", text(&o));
        let info = png::Decoder::new(std::fs::File::open(&png).unwrap()).read_info().unwrap();
        assert_eq!((info.info().width, info.info().height), (1000, 640));
    }
    // A selector that matches nothing is refused before anything runs, naming what exists.
    std::fs::remove_file(dir.join("trace-ports.parquet")).unwrap();
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--trace", "cwnd=node3/*", "--out", d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("`node3/*` matches no TCP sender of this scenario; they are named like"), "{}", text(&o));
    assert!(!dir.join("trace-ports.parquet").exists(), "nothing ran");
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--trace", "queue=sw->node0,every=soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("every=`soon`"), "{}", text(&o));
}

/// Runs tshark on `file` and returns the values of `field` of the frames matching `filter`.
fn tshark(file: &std::path::Path, filter: &str, field: &str) -> Vec<String> {
    let o = std::process::Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", field])
        .output()
        .expect("tshark runs");
    assert!(o.status.success(), "tshark -Y {filter}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().lines().map(String::from).collect()
}

/// Wireshark's TCP analysis (tshark) reads a capture of the simulated incast as the report
/// counts it: every retransmitted segment and every duplicate ACK, frame for frame.
#[test]
fn tshark_counts_the_reports_retransmissions_and_duplicate_acks_in_a_capture() {
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let have = std::process::Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        if !common::root("installing tshark (scripts/tshark-deps.sh)") {
            return;
        }
        let deps = std::process::Command::new("scripts/tshark-deps.sh").current_dir(&repo).status();
        assert!(deps.is_ok_and(|s| s.success()), "scripts/tshark-deps.sh failed");
    }
    let dir = out_dir("pcap");
    let d = dir.to_str().unwrap();
    // Every readout unit's NIC and the collector's: each data segment and each ACK of the 32
    // connections once, as the sending host put it on the wire (before the switch drops any).
    let o = daqnet(&[
        "sim",
        "scenarios/incast-micro.toml",
        "--set",
        "network.switch.buffer.port_bytes=150kB",
        "--events",
        "10",
        "--pcap",
        "ru*->sw|node0->sw",
        "--out",
        d,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = common::report(&dir);
    let file = dir.join("capture.pcapng");
    let tcp = &r["tcp"];
    // Wireshark calls a segment sent again below the highest sequence "Out-Of-Order" instead
    // of "Retransmission" when it follows within 3 ms and no handshake told it the RTT. At the
    // sender's NIC nothing is reordered: both are retransmissions.
    let resent = tshark(&file, "tcp.analysis.retransmission || tcp.analysis.out_of_order", "frame.number").len();
    assert_eq!(resent as u64, tcp["retransmits"].as_u64().unwrap(), "{tcp}");
    assert!(resent > 100, "the capture holds an incast: {resent} retransmissions");
    let dups = tshark(&file, "tcp.analysis.duplicate_ack", "frame.number").len();
    assert_eq!(dups as u64, tcp["dup_acks"].as_u64().unwrap(), "{tcp}");
    assert!(dups > 100);
    // Full frames are 1,514 bytes without the FCS (the simulator's 1,518 with it); times are
    // the simulation's; one interface per captured port.
    let lens: Vec<u32> = tshark(&file, "tcp.len > 0", "frame.len").iter().map(|l| l.parse().unwrap()).collect();
    assert_eq!(lens.iter().max(), Some(&1514));
    let last: f64 = tshark(&file, "frame", "frame.time_relative").last().unwrap().parse().unwrap();
    let simulated = r["sim_work"]["simulated_s"].as_f64().unwrap();
    assert!(last <= simulated && last > 0.5 * simulated, "last frame at {last} s of {simulated} s");
    let mut ifaces = tshark(&file, "frame", "frame.interface_id");
    ifaces.sort();
    ifaces.dedup();
    assert_eq!(ifaces.len(), 33);
}

#[test]
fn sim_incast_absurd_sizes_are_refused_by_field_before_memory_runs_out() {
    // Ten million nodes: the estimate (1.6 billion connections) is refused at once, naming the
    // field, without allocating it.
    let started = std::time::Instant::now();
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--set", "system.nodes=10000000"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("field `system.nodes`: is 10000000; the simulation would hold about"), "{t}");
    assert!(t.contains("more than the") && t.contains("this machine has available"), "{t}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "refused before building: {:?}", started.elapsed());
    // A file that never ends is read no further than a scenario can be long.
    let o = daqnet(&["sim", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("/dev/zero: is larger than 4 MiB, not read further"), "{}", text(&o));
    // A 3 MB value gives a message of a line, not of 3 MB.
    let dir = out_dir("absurd");
    std::fs::create_dir_all(&*dir).unwrap();
    let file = dir.join("long-value.toml");
    std::fs::write(&file, format!("[network.tcp]\ncongestion_control = \"{}\"\n", "x".repeat(3 << 20))).unwrap();
    let o = daqnet(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stderr.len() < 4000, "{} bytes of error", o.stderr.len());
    assert!(text(&o).contains("more bytes)"), "the cut is said: {}", &text(&o)[..300.min(text(&o).len())]);
}

#[test]
fn sim_incast_full_disk_fails_with_exit_1_naming_the_file_and_leaves_no_report() {
    // A 64 kB tmpfs the test mounts: the per-event outputs do not fit. The run fails with exit
    // status 1 (the run failed, the input was fine), names the file it could not write, and
    // leaves neither a report.json nor a partial file behind.
    let dir = out_dir("full-disk");
    let Some(disk) = common::SmallDisk::mount(&dir, "64k") else { return };
    let mnt = disk.0.clone();
    let out = mnt.join("run");
    let o = daqnet(&[
        "sim",
        "scenarios/incast-micro.toml",
        "--events",
        "2000",
        "--per-event",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("error: the run failed: cannot write") && t.contains("events."), "{t}");
    assert!(t.contains("No space left on device"), "{t}");
    let left = common::SmallDisk::left(&out);
    assert!(!left.iter().any(|f| f == "report.json" || f.ends_with(".partial")), "left behind: {left:?}");
}
