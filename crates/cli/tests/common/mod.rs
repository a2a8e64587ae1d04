//! Running the `daqnet` binary from the repository root, as a user does.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `daqnet ARGS` in the repository root.
#[allow(dead_code)] // not every test binary runs the binary this way
pub fn daqnet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("daqnet runs")
}

/// Standard output and error together, after the exit status when it was not success: a run
/// killed by a signal, or quiet (`-q`) and failing early, may print nothing at all.
#[allow(dead_code)]
pub fn text(o: &Output) -> String {
    let status = if o.status.success() { String::new() } else { format!("[{}]\n", o.status) };
    format!("{status}{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A test's output folder: removed when the test passes, kept for a look when it fails.
pub struct OutDir(PathBuf);

impl std::ops::Deref for OutDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh, empty output folder `daqnet-test-PID-NAME` in the temporary folder.
pub fn out_dir(name: &str) -> OutDir {
    let d = std::env::temp_dir().join(format!("daqnet-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    OutDir(d)
}

/// The pid of `role` from the run folder's `roles.json`, waiting up to 20 s for it to appear.
#[allow(dead_code)] // not every test binary kills a role
pub fn pid_of(dir: &std::path::Path, role: &str) -> u32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Ok(t) = std::fs::read_to_string(dir.join("roles.json")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) {
                if let Some(p) = v.as_array().unwrap().iter().find(|p| p["role"] == role) {
                    return p["pid"].as_u64().expect("a pid") as u32;
                }
            }
        }
        assert!(std::time::Instant::now() < deadline, "roles.json never named {role}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One run at a time in this test binary: each run starts tens of processes, and on a 2-core
/// machine runs in parallel would starve each other's heartbeats.
#[allow(dead_code)]
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The report a run wrote into `dir`.
#[allow(dead_code)]
pub fn report(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).expect("report.json written")).unwrap()
}

/// A report's count.
#[allow(dead_code)]
pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Whether the tests run as root; if not, says that `what` needs it (the test then passes
/// without running: CI runs as root).
#[allow(dead_code)]
pub fn root(what: &str) -> bool {
    let uid = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.is_ok_and(|u| u == "0") {
        return true;
    }
    eprintln!("skipped: {what} needs root");
    false
}

/// Waits for `child` to exit, failing the test if it runs longer than `limit`.
#[allow(dead_code)]
pub fn wait_exit(child: &mut std::process::Child, limit: std::time::Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(start.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs a measurement whose bound depends on the emulation keeping pace, up to four times more
/// while a run misses `ok`, and returns the run to check. The testbed shares two CPUs with
/// whatever else the machine does: in full test runs single runs came out at 66–92 % of the line
/// rate that the same test gives alone (95–99 %), a deep-buffer incast round 2 ms slower, and
/// once three tests fell behind twice in a row that passed alone right after; on one machine two
/// full test runs in a row each had two tests fall behind three times, different ones each time,
/// that had passed in the other. A slowed run says nothing about the system under test; five in
/// a row fail the test.
#[allow(dead_code)] // only the testbed tests measure what needs the machine to keep pace
pub fn paced<T>(mut run: impl FnMut() -> T, ok: impl Fn(&T) -> bool) -> T {
    for _ in 0..4 {
        let r = run();
        if ok(&r) {
            return r;
        }
        eprintln!("the emulation fell behind its pace; running once more");
    }
    run()
}

/// One row of a run's `trace-tcp.parquet`.
#[allow(dead_code)] // not every test binary reads a TCP trace
pub struct Window {
    pub sender: String,
    pub cwnd: u32,
    pub ssthresh: Option<u32>,
    pub srtt_ms: Option<f64>,
    pub in_flight: u32,
    pub state: String,
}

/// The rows of a run's `trace-tcp.parquet`.
#[allow(dead_code)]
pub fn window_trace(dir: &std::path::Path) -> Vec<Window> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt32Type};
    use arrow_array::Array;
    let file = std::fs::File::open(dir.join("trace-tcp.parquet")).expect("the run wrote its TCP trace");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let mut rows = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let (sender, state) = (col("sender"), col("state"));
        let (sender, state) = (sender.as_string::<i32>(), state.as_string::<i32>());
        let (cwnd, ss, srtt, fl) = (col("cwnd"), col("ssthresh"), col("srtt_ms"), col("in_flight"));
        let (cwnd, ss) = (cwnd.as_primitive::<UInt32Type>(), ss.as_primitive::<UInt32Type>());
        let (srtt, fl) = (srtt.as_primitive::<Float64Type>(), fl.as_primitive::<UInt32Type>());
        rows.extend((0..b.num_rows()).map(|i| Window {
            sender: sender.value(i).to_string(),
            cwnd: cwnd.value(i),
            ssthresh: (!ss.is_null(i)).then(|| ss.value(i)),
            srtt_ms: (!srtt.is_null(i)).then(|| srtt.value(i)),
            in_flight: fl.value(i),
            state: state.value(i).to_string(),
        }));
    }
    rows
}

/// A tmpfs of `size` (e.g. `64k`) mounted on `dir/mnt` for a full-disk test, unmounted when
/// dropped; `None` (with a message) where mounting needs a root this test does not have.
#[allow(dead_code)]
pub struct SmallDisk(pub std::path::PathBuf);

#[allow(dead_code)]
impl SmallDisk {
    pub fn mount(dir: &std::path::Path, size: &str) -> Option<SmallDisk> {
        if !root("mounting a tmpfs") {
            return None;
        }
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let opt = format!("size={size}");
        let mount = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", &opt, "tmpfs"]).arg(&mnt).status();
        assert!(mount.is_ok_and(|s| s.success()), "mount a tmpfs on {}", mnt.display());
        Some(SmallDisk(mnt))
    }

    /// The names left in `dir` (none if it does not exist).
    pub fn left(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .map_or(Vec::new(), |d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Sends `sig` (e.g. `-STOP`) to process `pid` with kill(1).
#[allow(dead_code)]
pub fn signal(pid: u32, sig: &str) {
    assert!(std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
}

/// Built and not built add up to the events the run was to build.
#[allow(dead_code)]
pub fn accounted(r: &serde_json::Value, events: u64) {
    let nb = &r["events_not_built"];
    let sum = u(&r["events_built"]) + u(&nb["timed_out"]) + u(&nb["lost"]) + u(&nb["abandoned"]);
    assert_eq!(sum, events, "built + not built: {r}");
}

/// The report in `dir` once it appears, at most `limit` after `since` (a fault, e.g. a launcher killed:
/// the role its death signal stopped writes it).
#[allow(dead_code)]
pub fn report_within(
    dir: &std::path::Path,
    since: std::time::Instant,
    limit: std::time::Duration,
) -> serde_json::Value {
    while !dir.join("report.json").exists() {
        assert!(since.elapsed() < limit, "no report within {limit:?} of the fault");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    report(dir)
}
