//! `daqnet sweep --slurm` against a real Slurm: a single-node cluster (slurmctld, slurmd and
//! munged on 127.0.0.1, scripts/slurm-cluster.sh) started by the test and gone after it, also
//! when the test is killed (the script ends when its standard input closes).

mod common;
use common::out_dir;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A cluster of one node, up while this lives.
struct Cluster {
    script: Child,
    conf: PathBuf,
}

impl Cluster {
    /// Installs Slurm if needed and starts the cluster; None (and why, on stderr) where it
    /// cannot run.
    fn start(dir: &Path) -> Option<Cluster> {
        if !common::root("a Slurm cluster of the test's own (scripts/slurm-deps.sh, slurmd)") {
            return None;
        }
        let deps = Command::new("scripts/slurm-deps.sh").current_dir(repo()).status();
        if !deps.is_ok_and(|s| s.success()) {
            eprintln!("skipped: Slurm cannot be installed here (scripts/slurm-deps.sh failed)");
            return None;
        }
        let port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut script = Command::new("scripts/slurm-cluster.sh")
            .current_dir(repo())
            .args([dir.to_str().unwrap(), &port().to_string(), &port().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(script.stdout.take().unwrap()).lines();
        // The script gives up after 30 s of waiting for the node, and says why.
        let ready = lines.next().is_some_and(|l| l.is_ok_and(|l| l == "ready"));
        assert!(ready, "the single-node Slurm cluster did not start (its error is above)");
        Some(Cluster { script, conf: dir.join("slurm.conf") })
    }

    /// `daqnet ARGS` as a client of this cluster.
    fn daqnet(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_daqnet"));
        c.current_dir(repo()).env("SLURM_CONF", &self.conf).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.daqnet(args).output().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        drop(self.script.stdin.take());
        common::wait_exit(&mut self.script, Duration::from_secs(60));
    }
}

/// The names of the Slurm and MUNGE daemons running on this machine.
fn daemons() -> Vec<String> {
    let comms = std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| {
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        let state = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // A zombie holds nothing.
        (!state.rsplit_once(')')?.1.trim_start().starts_with('Z')).then(|| comm.trim().to_string())
    });
    comms.filter(|c| ["slurmctld", "slurmd", "munged", "slurmstepd"].contains(&c.as_str())).collect()
}

const SWEEP: [&str; 8] = [
    "scenarios/incast-micro.toml",
    "--vary",
    "network.tcp.min_rto_ns=1000000,200000000",
    "--vary",
    "system.credits_per_node=2,4,8,16",
    "--events",
    "5000",
    "-q",
];

fn sweep_args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep"];
    a.extend(SWEEP);
    a.extend(["--out", out]);
    a.extend(extra);
    a
}

fn same_tables(a: &Path, b: &Path) {
    for t in ["table.csv", "table.parquet"] {
        assert_eq!(std::fs::read(a.join(t)).unwrap(), std::fs::read(b.join(t)).unwrap(), "{t} differs");
    }
}

/// 8 points over 4 array tasks give the local sweep's table byte for byte; a task cancelled
/// mid-run leaves a sweep that the same command resumes, running only that task's points not
/// done; nothing of the cluster is left afterwards.
#[test]
fn a_slurm_sweep_is_the_local_sweep_and_resumes_after_scancel() {
    let dir = out_dir("slurm");
    let Some(cluster) = Cluster::start(&dir.join("cluster")) else { return };
    let local = dir.join("local");
    let o = cluster.run(&sweep_args(local.to_str().unwrap(), &[]));
    assert!(o.status.success(), "{}", common::text(&o));

    let whole = dir.join("whole");
    let o = cluster.run(&sweep_args(whole.to_str().unwrap(), &["--slurm", "--tasks", "4"]));
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(common::text(&o).contains("4 tasks of 4 shards, 8 points"), "{}", common::text(&o));
    same_tables(&local, &whole);

    // Task 2 runs points 2 and 6; cancel it once point 2 is written.
    let cut = dir.join("cut");
    let mut job = cluster
        .daqnet(&sweep_args(cut.to_str().unwrap(), &["--slurm", "--tasks", "4"]))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while !cut.join("points/p0002/report.json").exists() {
        assert!(Instant::now() < until, "point 2 never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    // DIR/slurm/job: the job id, then its shards in all.
    let job_file = std::fs::read_to_string(cut.join("slurm/job")).unwrap();
    let id = job_file.split_whitespace().next().unwrap();
    assert_eq!(job_file, format!("{id} 4\n"));
    let scancel = Command::new("scancel").env("SLURM_CONF", &cluster.conf).arg(format!("{id}_2")).status();
    assert!(scancel.is_ok_and(|s| s.success()));
    let status = common::wait_exit(&mut job, Duration::from_secs(120));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut job.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("error: task 2 of job") && err.contains("points not done ([6])"), "{err}");
    assert!(!cut.join("points/p0006").exists());

    // Resumed: only shard 2 is submitted, finished points are kept as they are.
    std::fs::write(cut.join("points/p0000/kept"), "").unwrap();
    let o = cluster.run(&sweep_args(cut.to_str().unwrap(), &["--slurm", "--tasks", "4"]));
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(common::text(&o).contains("1 tasks of 4 shards, 1 points"), "{}", common::text(&o));
    assert!(std::fs::read_to_string(cut.join("slurm/sweep.sbatch")).unwrap().contains("#SBATCH --array=2\n"));
    assert!(cut.join("points/p0000/kept").exists());
    same_tables(&local, &cut);

    drop(cluster);
    assert!(daemons().is_empty(), "left running: {:?}", daemons());
    assert!(!dir.join("cluster").exists());
}

/// --dry-run prints the script and submits nothing (no Slurm needed); the options that need
/// --slurm say so.
#[test]
fn a_dry_run_prints_the_batch_script() {
    let dir = out_dir("slurm-dry");
    let out = dir.to_str().unwrap();
    let o = common::daqnet(&sweep_args(out, &["--slurm", "--dry-run", "--slurm-opt=--partition=short"]));
    let text = common::text(&o);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("#SBATCH --array=0-7\n") && text.contains("#SBATCH --partition=short\n"), "{text}");
    assert!(text.contains("sweep resume") && text.contains("--shard \"$SLURM_ARRAY_TASK_ID/8\""), "{text}");
    assert!(!dir.exists(), "a dry run writes nothing");
    let o = common::daqnet(&sweep_args(out, &["--tasks", "4"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(common::text(&o).contains("--slurm"), "{}", common::text(&o));
    let o = common::daqnet(&sweep_args(out, &["--slurm", "--shard", "1/2"]));
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(common::text(&o).contains("drop --shard"), "{}", common::text(&o));
    let o = common::daqnet(&sweep_args(out, &["--slurm", "--jobs", "2"]));
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(common::text(&o).contains("--cpus-per-task"), "{}", common::text(&o));
}
