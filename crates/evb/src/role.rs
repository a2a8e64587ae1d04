//! Who is who in a real run, and how one process asks another to play a role.
//!
//! * [`RoleId`]: the one name of a role — in hellos on the wire, in fault records, in the
//!   launcher's process table and in the testbed's host plan.
//! * [`RoleArgs`]: the command line of `daqnet role`, owned here so that the launcher builds it
//!   ([`RoleArgs::to_args`]) from the same type the CLI parses: a flag renamed on one side fails
//!   to compile (or the round-trip test) on the other.
//! * [`SupervisorLine`]: what a supervisor started by the launcher tells it on stdout, one JSON
//!   object per line, written and read through this one type.

use clap::{Args, ValueEnum};
use daqnet_core::{NodeId, ReadoutId, WorkerId};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The `daqnet` verb that runs one role ([`RoleArgs`] follow it).
pub const VERB: &str = "role";

/// A role of a real run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RoleId {
    /// The supervisor (assigns events, clears them, writes the report).
    Supervisor,
    /// A readout unit.
    Readout(ReadoutId),
    /// The collector of one node, with the node's processing units.
    Collector(NodeId),
    /// A sub-farm's controller (hands events to workers, writes the report).
    Sfc,
    /// A sub-farm worker.
    Worker(WorkerId),
}

impl fmt::Display for RoleId {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RoleId::Supervisor => write!(f, "supervisor"),
            RoleId::Readout(r) => write!(f, "readout {r}"),
            RoleId::Collector(n) => write!(f, "collector {n}"),
            RoleId::Sfc => write!(f, "sfc"),
            RoleId::Worker(w) => write!(f, "worker {w}"),
        }
    }
}

impl RoleId {
    /// Which kind of role.
    pub fn kind(self) -> RoleKind {
        match self {
            RoleId::Supervisor => RoleKind::Supervisor,
            RoleId::Readout(_) => RoleKind::Readout,
            RoleId::Collector(_) => RoleKind::Collector,
            RoleId::Sfc => RoleKind::Sfc,
            RoleId::Worker(_) => RoleKind::Worker,
        }
    }

    /// The readout unit, node or worker number (0 for the supervisor and the SFC).
    pub fn index(self) -> u32 {
        match self {
            RoleId::Supervisor | RoleId::Sfc => 0,
            RoleId::Readout(r) => r.0,
            RoleId::Collector(n) => n.0,
            RoleId::Worker(w) => w.0,
        }
    }

    /// The name of the role's host, as the simulator names it in reports and traces (`ru3`,
    /// `node0`, `worker2`, `sfc`; the supervisor, which the simulator does not model, `sup`).
    pub fn host(self) -> String {
        match self {
            RoleId::Supervisor => "sup".into(),
            RoleId::Readout(r) => r.host(),
            RoleId::Collector(n) => n.host(),
            RoleId::Sfc => "sfc".into(),
            RoleId::Worker(w) => w.host(),
        }
    }

    /// The role of `kind` with number `index`.
    pub fn new(kind: RoleKind, index: u32) -> RoleId {
        match kind {
            RoleKind::Supervisor => RoleId::Supervisor,
            RoleKind::Readout => RoleId::Readout(ReadoutId(index)),
            RoleKind::Collector => RoleId::Collector(NodeId(index)),
            RoleKind::Sfc => RoleId::Sfc,
            RoleKind::Worker => RoleId::Worker(WorkerId(index)),
        }
    }
}

/// The kinds of role, as `daqnet role KIND` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum RoleKind {
    /// Assigns events, clears them, collects results and writes report.json.
    Supervisor,
    /// A readout unit: generates its fragments and serves data requests.
    Readout,
    /// The collector of one node with its processing units.
    Collector,
    /// A sub-farm controller: hands events to its workers and writes report.json.
    Sfc,
    /// A sub-farm worker: processes the events the SFC sends and answers with tokens.
    Worker,
}

/// Run one role of a real run (`daqnet run` starts them all on one machine).
///
/// Every role reads the same scenario. The supervisor listens on deploy.supervisor (or
/// --listen); the others connect to it (deploy.supervisor or --supervisor), register, and wait
/// for the run to start. Readout units listen on deploy.readouts[INDEX] (or --listen, or a free
/// loopback port). Start-up waits deploy.startup_timeout_ms for every peer, then names who is
/// missing.
#[derive(Args, Debug, Clone, PartialEq)]
#[command(
    after_help = "Example, three hosts (deploy.supervisor = \"10.0.0.1:7700\", deploy.readouts = [\"10.0.0.2:7800\", ...]):\n  \
10.0.0.1$ daqnet role supervisor --scenario s.toml --out out/run\n  \
10.0.0.2$ daqnet role readout --scenario s.toml --index 0\n  \
10.0.0.3$ daqnet role collector --scenario s.toml --index 0"
)]
pub struct RoleArgs {
    /// Which role.
    pub role: RoleKind,
    /// Scenario file (TOML).
    #[arg(long)]
    pub scenario: PathBuf,
    /// Override a field: dotted.path=value (repeatable). Every role must see the same scenario.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Readout unit or node number (readout, collector).
    #[arg(long, default_value_t = 0)]
    pub index: u32,
    /// Supervisor address (default: deploy.supervisor).
    #[arg(long, value_name = "ADDR")]
    pub supervisor: Option<String>,
    /// Listen address (supervisor, readout).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// (supervisor, sfc) Output folder for report.json.
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// (supervisor) Also write events.csv.
    #[arg(long)]
    pub per_event: bool,
    /// (supervisor) Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// (supervisor) Run for this many seconds instead of a number of events.
    #[arg(long, value_name = "SECONDS")]
    pub duration_s: Option<f64>,
    /// (supervisor) Name of the scenario in the report (default: the --scenario path).
    #[arg(long, hide = true)]
    pub origin: Option<String>,
    /// (supervisor) Tell the launcher on stdout, one JSON line at a time, where it listens and
    /// how the run goes (used by `daqnet run`).
    #[arg(long, hide = true)]
    pub launched: bool,
    /// (readout, collector) Sample the TCP senders of SPEC (`cwnd=ru*->node0,every=1ms`: this
    /// host's sending half towards a peer, named as the simulator names them) into
    /// OUT/trace-tcp-HOST.csv: time (CLOCK_MONOTONIC ns), sender, cwnd, ssthresh, SRTT ns,
    /// segments in flight, congestion state (Linux's number).
    #[arg(long, value_name = "SPEC")]
    pub trace: Option<daqnet_core::trace::TraceSpec>,
    /// (readout) Testing aid: corrupt one payload byte of this event.
    #[arg(long, value_name = "EVENT")]
    pub corrupt_event: Vec<u64>,
    /// (supervisor) No progress display or summary.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RoleArgs {
    /// Arguments for `role` with everything else at its default.
    pub fn new(role: RoleId, scenario: PathBuf) -> Self {
        RoleArgs {
            role: role.kind(),
            scenario,
            set: Vec::new(),
            index: role.index(),
            supervisor: None,
            listen: None,
            out: PathBuf::from("out/run"),
            per_event: false,
            metrics: None,
            duration_s: None,
            origin: None,
            launched: false,
            trace: None,
            corrupt_event: Vec::new(),
            quiet: false,
        }
    }

    /// The role these arguments name.
    pub fn role_id(&self) -> RoleId {
        RoleId::new(self.role, self.index)
    }

    /// The command line (after the verb) that parses back to these arguments.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![self.role.to_possible_value().expect("no skipped kind").get_name().into()];
        let mut opt = |flag: &str, v: OsString| a.extend([OsString::from(flag), v]);
        opt("--scenario", self.scenario.clone().into());
        self.set.iter().for_each(|s| opt("--set", s.into()));
        opt("--index", self.index.to_string().into());
        self.supervisor.iter().for_each(|s| opt("--supervisor", s.into()));
        self.listen.iter().for_each(|s| opt("--listen", s.into()));
        opt("--out", self.out.clone().into());
        self.metrics.iter().for_each(|s| opt("--metrics", s.into()));
        self.duration_s.iter().for_each(|d| opt("--duration-s", d.to_string().into()));
        self.origin.iter().for_each(|s| opt("--origin", s.into()));
        self.trace.iter().for_each(|t| opt("--trace", t.to_string().into()));
        self.corrupt_event.iter().for_each(|e| opt("--corrupt-event", e.to_string().into()));
        let flags = [("--per-event", self.per_event), ("--launched", self.launched), ("--quiet", self.quiet)];
        a.extend(flags.into_iter().filter(|f| f.1).map(|f| OsString::from(f.0)));
        a
    }
}

/// A line a launched supervisor writes on stdout for its launcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SupervisorLine {
    /// Bound: roles connect here.
    Listening {
        /// The address.
        addr: String,
    },
    /// Alive; sent every 100 ms while the run goes on.
    Progress {
        /// Events assigned so far.
        assigned: u64,
        /// Events built so far (warm-up included).
        finished: u64,
    },
}

impl SupervisorLine {
    /// The line to write (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a supervisor line serializes")
    }

    /// A line read from a supervisor, if it is one.
    pub fn parse(line: &str) -> Option<SupervisorLine> {
        serde_json::from_str(line.trim()).ok()
    }
}

/// A head role's progress lines to the launcher ([`SupervisorLine::Progress`]), written by a
/// thread of their own every 100 ms, so that a launcher that stops reading (Ctrl-Z, a debugger)
/// blocks that thread alone, never the run: the run's loop only [`set`](Beacon::set)s the
/// latest counts, and a line goes out only when they were set since the last one, so a loop
/// that stops still falls silent.
#[derive(Clone)]
pub struct Beacon(Option<Arc<BeaconState>>);

struct BeaconState {
    assigned: AtomicU64,
    finished: AtomicU64,
    fresh: AtomicBool,
}

impl Beacon {
    /// A beacon writing to standard output when `launched`; otherwise one that says nothing.
    pub fn start(launched: bool) -> Beacon {
        if !launched {
            return Beacon(None);
        }
        // Its own descriptor for standard output: blocked in a write, it holds no lock another
        // thread's print could wait on.
        // SAFETY: dup returns a new descriptor (or -1, checked) that the File alone owns.
        let fd = unsafe { libc::dup(1) };
        if fd < 0 {
            return Beacon(None);
        }
        use std::os::fd::FromRawFd;
        // SAFETY: as above.
        Beacon::start_on(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    /// A beacon writing to `out`.
    pub fn start_on(mut out: std::fs::File) -> Beacon {
        let state = Arc::new(BeaconState {
            assigned: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            fresh: AtomicBool::new(false),
        });
        let st = state.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if !st.fresh.swap(false, Ordering::Relaxed) {
                continue;
            }
            let line = SupervisorLine::Progress {
                assigned: st.assigned.load(Ordering::Relaxed),
                finished: st.finished.load(Ordering::Relaxed),
            };
            if writeln!(out, "{}", line.to_line()).is_err() {
                // The launcher is gone.
                return;
            }
        });
        Beacon(Some(state))
    }

    /// The latest counts: events assigned and finished (warm-up included).
    pub fn set(&self, assigned: u64, finished: u64) {
        if let Some(s) = &self.0 {
            s.assigned.store(assigned, Ordering::Relaxed);
            s.finished.store(finished, Ordering::Relaxed);
            s.fresh.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// A launcher that never reads: the pipe fills, the beacon's thread blocks, and the run's
    /// loop setting the counts a million times is never held up; the lines that did go out are
    /// whole progress lines.
    #[test]
    fn a_beacon_never_blocks_the_run_on_a_full_pipe() {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into `fds`; each File below owns one.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: as above; fds[1] is a valid pipe descriptor. The smallest pipe: one page.
        unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 4096) };
        // SAFETY: each descriptor is owned by exactly one File from here on.
        let (mut read, write) = unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) };
        let beacon = Beacon::start_on(write);
        let start = std::time::Instant::now();
        let mut slowest = std::time::Duration::ZERO;
        let mut k = 0u64;
        // 4 kB of 45-byte lines at 10 a second fill in about 9 s; go on past that.
        while start.elapsed() < std::time::Duration::from_secs(11) {
            let t = std::time::Instant::now();
            beacon.set(k, k / 2);
            slowest = slowest.max(t.elapsed());
            k += 1;
            if k.is_multiple_of(1000) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert!(slowest < std::time::Duration::from_millis(50), "a set took {slowest:?}");
        let mut buf = vec![0u8; 8192];
        let n = read.read(&mut buf).unwrap();
        assert!(n > 3000, "the pipe filled: {n} bytes");
        let text = String::from_utf8_lossy(&buf[..n]);
        let first = text.lines().next().unwrap();
        assert!(matches!(SupervisorLine::parse(first), Some(SupervisorLine::Progress { .. })), "{first}");
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        role: RoleArgs,
    }

    fn round_trip(a: &RoleArgs) -> RoleArgs {
        let argv = std::iter::once(OsString::from("role")).chain(a.to_args());
        Cli::try_parse_from(argv).expect("the launcher's command line parses").role
    }

    #[test]
    fn the_launchers_command_line_parses_back_to_the_same_arguments() {
        let mut a = RoleArgs::new(RoleId::Readout(ReadoutId(3)), "s.toml".into());
        assert_eq!(round_trip(&a), a);
        a = RoleArgs::new(RoleId::Supervisor, "dir/s t.toml".into());
        a.set = vec!["run.events=5".into(), "system.nodes=2".into()];
        a.supervisor = Some("127.0.0.1:9".into());
        a.listen = Some("127.0.0.1:0".into());
        a.out = "out/x".into();
        a.per_event = true;
        a.metrics = Some("127.0.0.1:9464".into());
        a.duration_s = Some(2.5);
        a.origin = Some("scenarios/x.toml".into());
        a.launched = true;
        a.corrupt_event = vec![4, 9];
        a.trace = Some("cwnd=ru*->node0|node1->ru2,every=250us".parse().unwrap());
        a.quiet = true;
        assert_eq!(round_trip(&a), a);
        assert_eq!(a.role_id(), RoleId::Supervisor);
        assert_eq!(RoleArgs::new(RoleId::Collector(NodeId(2)), "s".into()).role_id(), RoleId::Collector(NodeId(2)));
    }

    #[test]
    fn supervisor_lines_round_trip_and_other_output_is_not_one() {
        for l in [
            SupervisorLine::Listening { addr: "127.0.0.1:5".into() },
            SupervisorLine::Progress { assigned: 3, finished: 1 },
        ] {
            assert_eq!(SupervisorLine::parse(&l.to_line()), Some(l));
        }
        assert_eq!(SupervisorLine::parse("  substrate  run"), None);
    }
}
