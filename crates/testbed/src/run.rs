//! `daqnet testbed run`: build a testbed, run the real event builder's roles inside its
//! namespaces, sample the switch queues while it runs, and add the kernel's counters to the
//! run report.

use crate::bpf_cc;
use crate::controller::{check_spines, port_drops, FabricControl, PortDrops};
use crate::lifecycle::Owned;
use crate::netns;
use crate::ovs::OvsFabric;
use crate::plan::{simulated_backlog, TestbedPlan, TestbedSwitch};
use crate::qdisc::QdiscReader;
use anyhow::Context;
use daqnet_core::report::{FabricStats, HostStats, PortStats, RunReport, SwitchStats, TcpCounters};
use daqnet_core::trace::{PortSample, TraceSpec};
use daqnet_core::Scenario;
use daqnet_evb::launcher::{launch, LaunchOptions, Placement};
use daqnet_evb::net::tcp_trace::{self, monotonic_ns};
use daqnet_evb::role::RoleId;
use daqnet_fabric::controller::FaultPlan;
use daqnet_fabric::rules::{Bridge, Peer, Ports, LOCAL};
use daqnet_study::columnar::write_trace;
use daqnet_switch::run::SwitchReport;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the switch's queues are sampled for their peak backlog.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(1);

/// What `daqnet testbed run` was asked to do.
#[derive(Clone, Default)]
pub struct TestbedRunOptions {
    /// The `daqnet` executable the roles run.
    pub exe: PathBuf,
    /// The scenario's name in the report.
    pub origin: String,
    /// Output folder: report.json, events.csv, the resolved scenario, roles.json.
    pub out: PathBuf,
    /// Per-event CSV.
    pub per_event: bool,
    /// No progress display.
    pub quiet: bool,
    /// Set on SIGINT/SIGTERM: a testbed still being built is removed without running.
    pub stop: Option<&'static AtomicBool>,
    /// Fabric elements to take down, at times from the launch of the roles (parallel
    /// leaf-spine only).
    pub faults: Vec<FaultPlan>,
    /// Series to record (checked with [`TestbedPlan::trace_targets`]), in wall time from the
    /// launch of the roles: `queue=` of the switch's ports to `out/trace-ports.parquet`, `cwnd=`
    /// of the TCP senders (sampled by the roles themselves) to `out/trace-tcp.parquet`.
    pub trace: Option<TraceSpec>,
}

/// The outcome of a testbed run.
pub struct TestbedRun {
    /// The supervisor's exit code (0: every event built and verified).
    pub exit_code: i32,
    /// The report, kernel counters included (also written to `out/report.json`).
    pub report: RunReport,
    /// Seconds it took to build the testbed.
    pub build_s: f64,
    /// Namespaces it built.
    pub namespaces: usize,
}

/// A unique testbed name for a run by this process.
fn run_id() -> String {
    static RUNS: AtomicU32 = AtomicU32::new(0);
    format!("run{}-{}", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed))
}

/// Runs `sc` in a testbed of its own, removed again afterwards.
pub fn run(sc: &Scenario, opts: &TestbedRunOptions) -> anyhow::Result<TestbedRun> {
    let id = run_id();
    let plan = TestbedPlan::checked(sc, &id, &opts.origin)?;
    // A static window or DCTCP needs daqnet's congestion control in the kernel; a run that had
    // to add it removes it again.
    let added_cc = match bpf_cc::named(&plan.congestion) {
        Some(cc) => cc.ensure()?.then_some(cc),
        None => None,
    };
    let result = run_in(sc, plan, opts);
    if let Some(cc) = added_cc {
        cc.unregister()?;
    }
    result
}

fn run_in(sc: &Scenario, plan: TestbedPlan, opts: &TestbedRunOptions) -> anyhow::Result<TestbedRun> {
    let testbed = Owned::up(plan, &opts.origin)?;
    if opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
        anyhow::bail!("interrupted while the testbed was being built; it has been removed");
    }
    let plan = &testbed.plan;
    let sw = plan.switch_ns.clone();
    let (mut soft, mut sampler, mut control) = (None, None, None);
    // The traces' time zero, on the clock every role process shares.
    let launched_at = Arc::new(std::sync::OnceLock::new());
    let trace = opts.trace.as_ref().map(|spec| {
        let picked = spec.resolve(&plan.trace_targets()).map(|(p, _)| p).unwrap_or_default();
        let every = Duration::from_nanos(spec.every_ns);
        Tracing { ports: picked.into_iter().map(|i| i as usize).collect(), every, launched_at: launched_at.clone() }
    });
    match &plan.switch {
        TestbedSwitch::Daqring(_) => soft = Some(SoftSwitch::start(plan, opts)?),
        TestbedSwitch::Bridge => sampler = Some(Sampler::start(sw, plan.sampled_ports(), plan.mtu_bytes, trace)),
        TestbedSwitch::Fabric(f) => {
            sampler = Some(Sampler::start(sw.clone(), plan.sampled_ports(), plan.mtu_bytes, trace));
            control = Some((f, FabricControl::start(f, &sw, &opts.faults, Instant::now())?));
        }
    }
    let hosts = plan.hosts.clone();
    let place: Placement = Arc::new(move |role: RoleId, cmd: &mut std::process::Command| {
        let host = hosts.iter().find(|h| h.role == role).expect("every role has a host");
        netns::place(cmd, &host.ns)
    });
    let mut launch_opts = LaunchOptions {
        exe: opts.exe.clone(),
        origin: opts.origin.clone(),
        out: opts.out.clone(),
        per_event: opts.per_event,
        place: Some(place),
        trace: opts.trace.clone(),
        ..Default::default()
    };
    if opts.trace.is_some() {
        tcp_trace::remove_stale(&opts.out)?;
    }
    let _ = launched_at.set(monotonic_ns());
    let launched = launch(&plan.deployed(sc), &mut launch_opts);
    let (ports, queues) = match (sampler, soft) {
        (Some(s), _) => s.stop().map_or_else(|e| (Err(e), None), |(ports, queues)| (Ok(ports), queues)),
        (None, Some(d)) => (d.stop(), None),
        (None, None) => unreachable!("one of them runs"),
    };
    if let (Some(_), Some(&zero)) = (&opts.trace, launched_at.get()) {
        let (senders, windows) = tcp_trace::collect(&opts.out, zero)?;
        let (ports, samples) = queues.unwrap_or_default();
        write_trace(&opts.out, (&ports, &samples), (&senders, &windows))?;
    }
    let (fabric, ovs_drops) = match control {
        Some((f, c)) => fabric_outcome(sc, f, c, &opts.faults)?,
        None => (None, BTreeMap::new()),
    };
    let launched = launched?;
    let (exit_code, path, mut report) = (launched.code, launched.path, launched.report);
    report.substrate = "testbed".into();
    report.resolved_scenario = sc.to_toml();
    let (egress, hosts) = host_stats(plan)?;
    let mut ports = ports?;
    if let TestbedSwitch::Fabric(f) = &plan.switch {
        add_ovs_drops(f, &mut ports, &ovs_drops);
    }
    ports.extend(egress.into_iter().flatten());
    if plan.mark_above_bytes.is_some() {
        // A bridge port's frames all reach one host, and nothing else marks: the CE-marked
        // packets that host received (IpExtInCEPkts) are the port's marks.
        for h in &hosts {
            if let Some(p) = ports.iter_mut().find(|p| p.name == format!("sw->{}", h.host)) {
                p.marks = h.tcp.ce_received;
            }
        }
    }
    let (drops, marks) = (ports.iter().map(|p| p.drops).sum(), ports.iter().map(|p| p.marks).sum());
    report.switch = SwitchStats { drops, marks, ports, ..Default::default() };
    report.hosts = hosts;
    report.tcp = TcpCounters::default();
    for h in &report.hosts {
        report.tcp += &h.tcp;
    }
    report.tcp_source = "nstat".into();
    report.fabric = fabric;
    daqnet_core::output::write_whole(&path, report.to_json().as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
        .context(daqnet_core::output::RunFailed)?;
    Ok(TestbedRun { exit_code, report, build_s: testbed.build_s, namespaces: testbed.plan.namespaces().len() })
}

/// Stops the fabric's controller and gathers what it did: the faults, with the frames their
/// links could not send (the failure's loss, not a full buffer's), the counter check, and Open
/// vSwitch's other drops by port.
fn fabric_outcome(
    sc: &Scenario,
    f: &OvsFabric,
    control: FabricControl,
    plans: &[FaultPlan],
) -> anyhow::Result<(Option<FabricStats>, PortDrops)> {
    let mut drops = port_drops(f)?;
    let mut outcome = control.stop()?;
    let check = check_spines(f, &outcome)?;
    for (fault, plan) in outcome.faults.iter_mut().zip(plans) {
        for (near, far) in f.element_ports(plan.element) {
            for port in std::iter::once(near).chain(far) {
                fault.frames_lost += drops.remove(&port).map_or(0, |(_, tx)| tx);
            }
        }
    }
    let stats = daqnet_fabric::report_stats(sc).map(|plan| FabricStats {
        faults: outcome.faults,
        spine_check: Some(check),
        ..plan
    });
    Ok((stats, drops))
}

/// Adds Open vSwitch's own drops to the fabric's ports: a frame a bridge could not send out of
/// a port, or that the bridge at the other end could not take in, is lost on that link; frames
/// a readout unit's bridge could not take from its host count on its first uplink.
fn add_ovs_drops(f: &OvsFabric, ports: &mut [PortStats], drops: &PortDrops) {
    let rules = Ports::new(&f.shape);
    let mut credited = Vec::new();
    for p in f.ports() {
        let tx = drops.get(&(p.bridge, p.port)).map_or(0, |d| d.1);
        let rx = match rules.peer(p.bridge, p.port) {
            Some(Peer::Bridge(other, oport)) => drops.get(&(other, oport)).map_or(0, |d| d.0),
            _ => 0,
        };
        let host = match p.bridge {
            Bridge::Readout(_) if !credited.contains(&p.bridge) => {
                credited.push(p.bridge);
                drops.get(&(p.bridge, LOCAL)).map_or(0, |d| d.0)
            }
            _ => 0,
        };
        if let Some(s) = ports.iter_mut().find(|s| s.name == p.name()) {
            s.drops += tx + rx + host;
        }
    }
}

/// `daqnet switch` running in the switch namespace in place of the bridge.
pub struct SoftSwitch {
    child: std::process::Child,
    stats: PathBuf,
    /// (interface, host name) of every port: the switch names its queues by interface.
    names: Vec<(String, String)>,
}

impl SoftSwitch {
    /// Writes the switch's configuration into `opts.out`, starts `opts.exe switch` in the
    /// switch namespace, and waits until its ports are open.
    pub fn start(plan: &TestbedPlan, opts: &TestbedRunOptions) -> anyhow::Result<SoftSwitch> {
        std::fs::create_dir_all(&opts.out).with_context(|| format!("cannot create {}", opts.out.display()))?;
        let config = opts.out.join("switch.json");
        let stats = opts.out.join("switch-stats.json");
        let _ = std::fs::remove_file(&stats);
        let text = serde_json::to_string_pretty(&plan.switch_config())?;
        std::fs::write(&config, text).with_context(|| format!("cannot write {}", config.display()))?;
        let mut cmd = std::process::Command::new(&opts.exe);
        cmd.arg("switch").arg(&config).arg("--report").arg(&stats);
        cmd.stdout(std::process::Stdio::piped());
        netns::place(&mut cmd, &plan.switch_ns)?;
        daqnet_evb::launcher::owned_by_caller(&mut cmd, 0);
        let mut child = cmd.spawn().with_context(|| format!("cannot start {} switch", opts.exe.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) if line.contains("ready") => {
                let names = plan.hosts.iter().map(|h| (h.short.clone(), h.name.clone())).collect();
                Ok(SoftSwitch { child, stats, names })
            }
            other => {
                let _ = child.kill();
                let status = child.wait().ok();
                anyhow::bail!("the daqring switch did not start ({other:?}, exit {status:?}); see its errors above")
            }
        }
    }

    /// Stops the switch (SIGTERM) and reads its queues as the report's switch ports.
    pub fn stop(mut self) -> anyhow::Result<Vec<PortStats>> {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().context("waiting for the daqring switch")?;
        if !status.success() {
            anyhow::bail!("the daqring switch failed ({status})");
        }
        let text = std::fs::read_to_string(&self.stats)
            .with_context(|| format!("the daqring switch wrote no statistics ({})", self.stats.display()))?;
        let report: SwitchReport = serde_json::from_str(&text)
            .with_context(|| format!("{} is not the switch's statistics", self.stats.display()))?;
        Ok(report
            .queues
            .into_iter()
            .map(|q| PortStats {
                name: format!("sw->{}", self.host_named(&q.name)),
                drops: q.stats.drops,
                peak_bytes: q.stats.peak_bytes,
                frames: q.stats.frames,
                ..Default::default()
            })
            .collect())
    }
}

impl SoftSwitch {
    /// A queue's name with its interface (`c0 daqring 10.88.8.1`) replaced by the host's name
    /// (`node0 daqring 10.88.8.1`).
    fn host_named(&self, queue: &str) -> String {
        let (dev, rest) = queue.split_once(' ').unwrap_or((queue, ""));
        let host = self.names.iter().find(|(d, _)| d == dev).map_or(dev, |(_, h)| h.as_str());
        if rest.is_empty() {
            host.to_string()
        } else {
            format!("{host} {rest}")
        }
    }
}

/// Which sampled ports a run traces, how often, and from when.
struct Tracing {
    /// Indices into the sampled ports.
    ports: Vec<usize>,
    every: Duration,
    /// Set when the roles are launched: the trace's time zero ([`monotonic_ns`]).
    launched_at: Arc<std::sync::OnceLock<u64>>,
}

/// What the sampler returns: the ports' statistics, and the traced ports' names and samples.
type Sampling = (Vec<PortStats>, Option<(Vec<String>, Vec<PortSample>)>);

/// The switch's output ports, sampled on a thread inside the switch namespace: drops and frames
/// at the end, peak backlog every [`SAMPLE_INTERVAL`] (or the trace's interval, if shorter),
/// and the traced ports' backlog and drops at each sample.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<anyhow::Result<Sampling>>,
}

impl Sampler {
    /// Starts sampling the switch ports `ports`: (interface, name in the report); backlogs are
    /// reported in the simulator's measure at `mtu_bytes`.
    fn start(switch_ns: String, ports: Vec<(String, String)>, mtu_bytes: u32, trace: Option<Tracing>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let interval = trace.as_ref().map_or(SAMPLE_INTERVAL, |t| t.every.min(SAMPLE_INTERVAL));
        let thread = std::thread::spawn(move || {
            netns::within(&switch_ns, || {
                let index: Vec<u32> = ports.iter().map(|(dev, _)| ifindex(dev)).collect();
                let mut reader = QdiscReader::open().context("cannot open rtnetlink")?;
                let _ = ready_tx.send(());
                let mut peak = vec![0u64; ports.len()];
                let mut samples = Vec::new();
                let mut next_trace = Instant::now();
                loop {
                    let done = flag.load(Ordering::Relaxed);
                    let at = Instant::now();
                    let now = reader.root_qdiscs().context("cannot read the switch's qdiscs")?;
                    let of = |ix: u32| {
                        let mut q = now.iter().find(|q| q.ifindex == ix).cloned().unwrap_or_default();
                        q.backlog_bytes = simulated_backlog(q.backlog_bytes, mtu_bytes);
                        q
                    };
                    for (p, &ix) in peak.iter_mut().zip(&index) {
                        *p = (*p).max(of(ix).backlog_bytes);
                    }
                    let launched = trace.as_ref().and_then(|t| Some((t, *t.launched_at.get()?)));
                    if let Some((t, start)) = launched.filter(|_| at >= next_trace) {
                        let t_ns = monotonic_ns().saturating_sub(start);
                        for (i, &p) in t.ports.iter().enumerate() {
                            let q = of(index[p]);
                            samples.push(PortSample {
                                t_ns,
                                port: i as u32,
                                queue_bytes: q.backlog_bytes,
                                drops: q.drops,
                                marks: 0,
                                paused_ns: 0,
                            });
                        }
                        next_trace = at + t.every;
                    }
                    if done {
                        let stats = ports
                            .iter()
                            .zip(&index)
                            .zip(&peak)
                            .map(|(((_, name), &ix), &peak_bytes)| {
                                let q = of(ix);
                                PortStats {
                                    name: name.clone(),
                                    drops: q.drops,
                                    peak_bytes,
                                    frames: q.packets,
                                    ..Default::default()
                                }
                            })
                            .collect();
                        let traced = trace.map(|t| (t.ports.iter().map(|&p| ports[p].1.clone()).collect(), samples));
                        return Ok((stats, traced));
                    }
                    std::thread::sleep(interval);
                }
            })
        });
        let _ = ready_rx.recv_timeout(Duration::from_secs(5));
        Sampler { stop, thread }
    }

    fn stop(self) -> anyhow::Result<Sampling> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_else(|_| anyhow::bail!("the queue sampler panicked"))
    }
}

/// Index of interface `name` in the calling thread's namespace (0 if there is none).
fn ifindex(name: &str) -> u32 {
    let Ok(c) = std::ffi::CString::new(name) else { return 0 };
    // SAFETY: a valid NUL-terminated name.
    unsafe { libc::if_nametoindex(c.as_ptr()) }
}

/// Every host's own egress port (`ru3->sw`: drops and frames; its backlog is not sampled) and
/// TCP counters, read in one visit to its namespace.
fn host_stats(plan: &TestbedPlan) -> anyhow::Result<(Vec<Option<PortStats>>, Vec<HostStats>)> {
    plan.hosts
        .iter()
        .map(|h| {
            let egress = plan.data_egress(h);
            let (q, c) = netns::within(&h.ns, || {
                let ix = egress.as_ref().map_or(0, |(dev, _)| ifindex(dev));
                let q = QdiscReader::open()?.root_qdiscs()?.into_iter().find(|q| q.ifindex == ix).unwrap_or_default();
                Ok((q, netns::counters()?))
            })?;
            let port =
                egress.map(|(_, name)| PortStats { name, drops: q.drops, frames: q.packets, ..Default::default() });
            let get = |k: &str| c.get(k).copied().unwrap_or(0);
            // Linux counts every retransmission timeout in TCPTimeouts (TCPSackRecoveryFail,
            // TCPLossFailures and the like break the same timeouts down by connection state).
            let timeouts = get("TcpExtTCPTimeouts");
            let stats = HostStats {
                host: h.name.clone(),
                tcp: TcpCounters {
                    retransmits: get("TcpRetransSegs"),
                    timeouts,
                    fast_recoveries: get("TcpExtTCPSackRecovery") + get("TcpExtTCPRenoRecovery"),
                    loss_probes: get("TcpExtTCPLossProbes"),
                    recovery_fails: get("TcpExtTCPSackRecoveryFail") + get("TcpExtTCPRenoRecoveryFail"),
                    lost_retransmits: get("TcpExtTCPLostRetransmit"),
                    // Linux counts no duplicate ACKs sent.
                    dup_acks: 0,
                    undos: ["TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo"]
                        .iter()
                        .map(|k| get(&format!("TcpExt{k}")))
                        .sum(),
                    spurious_timeouts: get("TcpExtTCPSpuriousRTOs"),
                    ce_received: get("IpExtInCEPkts"),
                    delivered_ce: get("TcpExtTCPDeliveredCE"),
                    // Linux counts no window reductions for ECN.
                    ecn_reductions: 0,
                },
                counters: c.into_iter().filter(|(k, v)| *v > 0 && k.starts_with("Tcp")).collect(),
            };
            Ok((port, stats))
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .map(|v| v.into_iter().unzip())
}
