//! The fabric controller of a testbed run, as a thread of `daqnet testbed run`: it drives the
//! controller state machine of `daqnet-fabric` (the one the simulator drives) with real events.
//! It learns of failures as an SDN controller does — from the switches' OpenFlow port status
//! (`OFPT_PORT_STATUS` with `LINK_DOWN`, read from `ovs-ofctl monitor` on every leaf, rack and
//! readout bridge) — re-plans, and replaces the flow tables of every bridge whose rules changed.
//! It also takes the scenario's elements down at their times (`--fail`), by setting their links
//! down, and checks afterwards with the spines' flow counters that every collector's data
//! crossed the spines the plan gave it.

use crate::ovs::{BridgePort, OvsFabric};
use crate::plan::Step;
use anyhow::{bail, Context};
use daqnet_core::ids::NodeId;
use daqnet_core::report::{FabricFault, SpineCheck};
use daqnet_core::Nanos;
use daqnet_fabric::assign::Placement;
use daqnet_fabric::controller::{Controller, FaultPlan};
use daqnet_fabric::rules::{node_ip, Bridge};
use daqnet_fabric::shape::{Plane, Spine, Switch};
use daqnet_fabric::Element;
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Reads `ovs-ofctl monitor` output: a port status message is a line `OFPT_PORT_STATUS (…):
/// MOD: 3(b0p3): addr:…` followed by indented lines, `state: LINK_DOWN` among them.
#[derive(Debug, Default)]
pub struct PortStatusReader {
    port: Option<u32>,
}

impl PortStatusReader {
    /// The next line; `Some((port, down))` when it completes a port status message.
    pub fn feed(&mut self, line: &str) -> Option<(u32, bool)> {
        if let Some(rest) = line.strip_prefix("OFPT_PORT_STATUS") {
            let after = rest.split_once("): ").map(|(_, a)| a)?;
            let number = after.split_once(": ").map(|(_, n)| n)?.split('(').next()?;
            self.port = number.trim().parse().ok();
            return None;
        }
        if !line.starts_with(' ') {
            self.port = None;
            return None;
        }
        let state = line.trim().strip_prefix("state:")?;
        self.port.take().map(|p| (p, state.contains("LINK_DOWN")))
    }
}

/// A bridge's port status, as the controller thread hears it.
struct PortStatus {
    bridge: Bridge,
    port: u32,
    /// `LINK_DOWN`; a port coming back is heard but not acted on (the controller re-plans only
    /// around failures).
    down: bool,
}

/// The controller of a running testbed fabric.
pub struct FabricControl {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<anyhow::Result<Outcome>>,
    monitors: Vec<Child>,
}

/// What the controller did.
pub struct Outcome {
    /// Each failure with its detection and reroute times.
    pub faults: Vec<FabricFault>,
    /// Every placement the fabric ran with, the first one first.
    pub placements: Vec<Placement>,
    /// The spines' counters just before each re-plan replaced their rules.
    pub snapshots: Vec<SpinePackets>,
}

/// Packets each spine sent towards each node, by its rules' counters.
pub type SpinePackets = BTreeMap<(Plane, Spine, NodeId), u64>;

/// The output of `ovs-ofctl VERB` on bridge `b`.
fn ofctl(fabric: &OvsFabric, verb: &str, b: Bridge) -> anyhow::Result<String> {
    let out = Command::new("ovs-ofctl").args([verb, &fabric.target(b)]).output().context("cannot start ovs-ofctl")?;
    if !out.status.success() {
        bail!("`ovs-ofctl {verb} {b}` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The spines' counters now.
pub fn spine_packets(fabric: &OvsFabric) -> anyhow::Result<SpinePackets> {
    let shape = &fabric.shape;
    let mut m = BTreeMap::new();
    for plane in shape.all_planes() {
        for spine in shape.all_spines() {
            let text = ofctl(fabric, "dump-flows", Bridge::Fabric(Switch::Spine(plane, spine)))?;
            for n in (0..shape.nodes()).map(NodeId) {
                m.insert((plane, spine, n), packets_to(&text, &node_ip(n).to_string()));
            }
        }
    }
    Ok(m)
}

impl FabricControl {
    /// Starts watching the bridges' port status and takes `faults` down at their times from
    /// `t0`. The testbed (and its initial rules) must be up.
    pub fn start(fabric: &OvsFabric, sw: &str, faults: &[FaultPlan], t0: Instant) -> anyhow::Result<FabricControl> {
        let (tx, rx) = channel();
        let mut monitors = Vec::new();
        for b in fabric.watched() {
            match monitor(fabric, b, tx.clone()) {
                Ok(child) => monitors.push(child),
                Err(e) => {
                    for mut m in monitors {
                        let _ = m.kill();
                        let _ = m.wait();
                    }
                    return Err(e);
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (fabric, sw, faults) = (fabric.clone(), sw.to_string(), faults.to_vec());
        let thread = std::thread::spawn(move || control(&fabric, &sw, &faults, t0, &rx, &flag));
        Ok(FabricControl { stop, thread, monitors })
    }

    /// Stops the controller and its monitors.
    pub fn stop(mut self) -> anyhow::Result<Outcome> {
        self.stop.store(true, Ordering::Relaxed);
        for m in &mut self.monitors {
            let _ = m.kill();
            let _ = m.wait();
        }
        self.thread.join().unwrap_or_else(|_| bail!("the fabric controller panicked"))
    }
}

/// `ovs-ofctl monitor` on bridge `b`, its port status messages sent to `tx`. A nonzero
/// miss-len asks Open vSwitch for asynchronous messages (port status among them), which it does
/// not send a monitor otherwise; `stdbuf -oL` makes each message arrive as it is printed.
fn monitor(fabric: &OvsFabric, b: Bridge, tx: Sender<PortStatus>) -> anyhow::Result<Child> {
    let ctl = format!("--unixctl={}/monitor-{b}.ctl", fabric.dir);
    let mut cmd = Command::new("stdbuf");
    cmd.args(["-oL", "-eL", "ovs-ofctl", &ctl, "monitor", &fabric.target(b), "64"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    // It ends with us, however we end.
    daqnet_evb::launcher::owned_by_caller(&mut cmd, 0);
    let mut child =
        cmd.spawn().context("cannot start `ovs-ofctl monitor` (Open vSwitch: scripts/testbed-deps.sh installs it)")?;
    // It prints its messages on one stream or the other depending on the version: read both.
    for stream in [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|s| Box::new(s) as _),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut reader = PortStatusReader::default();
            for line in std::io::BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if let Some((port, down)) = reader.feed(&line) {
                    if tx.send(PortStatus { bridge: b, port, down }).is_err() {
                        break;
                    }
                }
            }
        });
    }
    Ok(child)
}

fn since(t0: Instant) -> Nanos {
    t0.elapsed().as_nanos() as Nanos
}

/// The controller's loop: failures due are injected, port events fed to the state machine, and
/// each re-plan installed.
fn control(
    fabric: &OvsFabric,
    sw: &str,
    plans: &[FaultPlan],
    t0: Instant,
    rx: &Receiver<PortStatus>,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let mut controller = Controller::with_placement(&fabric.shape, fabric.placement.clone(), fabric.reaction_ns);
    let mut faults: Vec<FabricFault> =
        plans.iter().map(|p| FabricFault { element: p.element.to_string(), ..Default::default() }).collect();
    let mut injected = vec![false; plans.len()];
    let mut placements = vec![fabric.placement.clone()];
    let mut snapshots = Vec::new();
    // Until the run ends; no wait is longer than 20 ms.
    while !stop.load(Ordering::Relaxed) {
        let now = since(t0);
        for (i, p) in plans.iter().enumerate() {
            if injected[i] || p.at_ns > now {
                continue;
            }
            injected[i] = true;
            faults[i].at_s = since(t0) as f64 / 1e9;
            for dev in fabric.element_devs(p.element) {
                crate::lifecycle::perform(&Step::Run(
                    ["ip", "-n", sw, "link", "set", &dev, "down"].map(String::from).to_vec(),
                ))?;
            }
        }
        if let Some(result) = controller.poll(since(t0)) {
            let done = match result {
                Ok(moves) => {
                    // The failed spine's rules go with the re-plan, and their counters with them.
                    snapshots.push(spine_packets(fabric)?);
                    let previous = placements.last().expect("the first placement");
                    install(&fabric.install(controller.placement(), Some(previous))?)?;
                    placements.push(controller.placement().clone());
                    Ok(moves.len() as u64)
                }
                Err(e) => Err(e.to_string()),
            };
            let t = since(t0) as f64 / 1e9;
            for f in faults.iter_mut().filter(|f| f.detected_s.is_some() && f.rerouted_s.is_none() && f.error.is_none())
            {
                match &done {
                    Ok(moved) => (f.rerouted_s, f.flows_moved) = (Some(t), *moved),
                    Err(e) => f.error = Some(e.clone()),
                }
            }
        }
        let next = plans
            .iter()
            .zip(&injected)
            .filter(|(_, &done)| !done)
            .map(|(p, _)| p.at_ns)
            .chain(controller.poll_timeout())
            .min()
            .map_or(Duration::from_millis(20), |t| Duration::from_nanos(t.saturating_sub(since(t0))))
            .min(Duration::from_millis(20));
        match rx.recv_timeout(next) {
            Ok(PortStatus { bridge, port, down: true }) => {
                let Some(element) = fabric.element_of_port(bridge, port) else { continue };
                if controller.failures().0.contains(&element) {
                    continue;
                }
                let now = since(t0);
                controller.on_down(now, element);
                // The first report of a failure is its detection.
                for ((f, p), &done) in faults.iter_mut().zip(plans).zip(&injected) {
                    if done && f.detected_s.is_none() && covers(p.element, element) {
                        f.detected_s = Some(now as f64 / 1e9);
                    }
                }
            }
            Ok(PortStatus { down: false, .. }) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(next),
        }
    }
    Ok(Outcome { faults, placements, snapshots })
}

/// Performs the steps of [`OvsFabric::install`]: the flow files, then every bridge's
/// `replace-flows` at once (one after the other, a dozen bridges took 250 ms).
fn install(steps: &[Step]) -> anyhow::Result<()> {
    let mut running = Vec::new();
    for step in steps {
        match step {
            Step::Run(args) => running.push((
                args.join(" "),
                Command::new(&args[0])
                    .args(&args[1..])
                    .stderr(Stdio::piped())
                    .spawn()
                    .context("cannot start ovs-ofctl")?,
            )),
            other => crate::lifecycle::perform(other)?,
        }
    }
    for (what, child) in running {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!("`{what}` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
    }
    Ok(())
}

/// Whether a port event about `seen` can come from `failed` going down.
fn covers(failed: Element, seen: Element) -> bool {
    match (failed, seen) {
        (Element::Plane(p), Element::Plane(q) | Element::Spine(q, _) | Element::LeafUplink(q, _, _)) => p == q,
        (Element::Spine(p, s), Element::LeafUplink(q, _, t)) => (p, s) == (q, t),
        (a, b) => a == b,
    }
}

/// Checks the spines' flow counters (`outcome`'s snapshots and the counters now) against the
/// placements the run used: the packets each spine sent towards each node must have crossed a
/// spine some placement gave a flow to that node, and every spine the first placement used
/// must have carried some.
pub fn check_spines(fabric: &OvsFabric, outcome: &Outcome) -> anyhow::Result<SpineCheck> {
    // (plane, spine, node) of every flow that crosses a spine.
    let crossing = |p: &Placement| -> Vec<(Plane, Spine, NodeId)> {
        p.flows().filter_map(|(_, n, route)| Some((route.plane, route.spine?, n))).collect()
    };
    let planned: BTreeSet<_> = outcome.placements.iter().flat_map(crossing).collect();
    let first: BTreeSet<_> = crossing(&outcome.placements[0]).into_iter().collect();
    let now = spine_packets(fabric)?;
    let mut check = SpineCheck { spines: (fabric.shape.planes * fabric.shape.spines) as u64, ..Default::default() };
    for (&key @ (plane, spine, n), &packets) in &now {
        let carried = outcome.snapshots.iter().filter_map(|s| s.get(&key)).copied().chain([packets]).max().unwrap_or(0);
        check.packets += packets;
        let b = Switch::Spine(plane, spine);
        if carried > 0 && !planned.contains(&key) {
            check.off_plan.push(format!("{b} carried {carried} packets to node {} off its plan", n.0));
        } else if carried == 0 && first.contains(&key) {
            check.off_plan.push(format!("{b} carried nothing to node {}, which the plan sent there", n.0));
        }
    }
    Ok(check)
}

/// The packets of the rules in `dump` (`ovs-ofctl dump-flows` output) that match destination
/// `ip`.
pub fn packets_to(dump: &str, ip: &str) -> u64 {
    dump.lines()
        .filter(|l| l.split([',', ' ']).any(|field| field == format!("nw_dst={ip}")))
        .filter_map(|l| l.split("n_packets=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// (rx, tx) frames dropped by each bridge port.
pub type PortDrops = BTreeMap<BridgePort, (u64, u64)>;

/// Frames each bridge port dropped, received (`rx`) and sent (`tx`), from `ovs-ofctl dump-ports`
/// (live counters; the database's copy lags by seconds): Open vSwitch's own losses, which no
/// qdisc sees — a socket it did not read in time, a send that failed.
pub fn port_drops(fabric: &OvsFabric) -> anyhow::Result<PortDrops> {
    let mut all = BTreeMap::new();
    for &b in &fabric.bridges {
        for (port, drops) in read_port_drops(&ofctl(fabric, "dump-ports", b)?) {
            all.insert((b, port), drops);
        }
    }
    Ok(all)
}

/// (port, (rx drops, tx drops)) of each port in `ovs-ofctl dump-ports` output; `LOCAL` is
/// [`daqnet_fabric::rules::LOCAL`].
pub fn read_port_drops(dump: &str) -> Vec<(u32, (u64, u64))> {
    let drop = |l: &str| l.split("drop=").nth(1).and_then(|t| t.split(',').next()?.trim().parse::<u64>().ok());
    let mut v = Vec::new();
    let mut rx: Option<(u32, u64)> = None;
    for line in dump.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("port") {
            let name = rest.split(':').next().unwrap_or("").trim().trim_matches('"');
            let port = if name == "LOCAL" { Some(daqnet_fabric::rules::LOCAL) } else { name.parse().ok() };
            rx = port.zip(drop(line));
        } else if let (Some((port, r)), Some(t)) = (rx, line.strip_prefix("tx").and_then(drop)) {
            v.push((port, (r, t)));
            rx = None;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from Open vSwitch 3.1 (`ovs-ofctl monitor BRIDGE 64`) while a veth peer went
    /// down and up again.
    const MONITOR: &str = "OFPT_PORT_STATUS (xid=0x0): MOD: 3(x0): addr:86:74:e4:83:7b:49
     config:     0
     state:      LINK_DOWN
     current:    10GB-FD COPPER
     speed: 10000 Mbps now, 0 Mbps max
OFPT_PORT_STATUS (xid=0x0): MOD: 3(x0): addr:86:74:e4:83:7b:49
     config:     0
     state:      0
     current:    10GB-FD COPPER
NXT_PACKET_IN2 (xid=0x0): cookie=0x0 total_len=90 in_port=3 (via no_match) data_len=90 (unbuffered)
icmp6,vlan_tci=0x0000,dl_src=42:37:96:47:35:ee
OFPT_ECHO_REQUEST (xid=0x0): 0 bytes of payload
OFPT_PORT_STATUS (xid=0x0): MOD: 12(b3p12): addr:86:74:e4:83:7b:50
     config:     PORT_DOWN
     state:      LINK_DOWN
";

    #[test]
    fn port_status_messages_are_read_as_port_and_link_state() {
        let mut r = PortStatusReader::default();
        let seen: Vec<(u32, bool)> = MONITOR.lines().filter_map(|l| r.feed(l)).collect();
        assert_eq!(seen, [(3, true), (3, false), (12, true)]);
    }

    #[test]
    fn drops_are_read_per_port() {
        let dump = "OFPST_PORT reply (xid=0x2): 2 ports
  port  3: rx pkts=120, bytes=9000, drop=4, errs=0, frame=0, over=0, crc=0
           tx pkts=7, bytes=900, drop=2, errs=0, coll=0
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=9, errs=0, coll=0";
        assert_eq!(read_port_drops(dump), [(3, (4, 2)), (daqnet_fabric::rules::LOCAL, (0, 9))]);
    }

    #[test]
    fn counters_are_summed_over_the_rules_to_one_destination() {
        let dump = " cookie=0x0, duration=3.1s, table=0, n_packets=120, n_bytes=9000, ip,nw_dst=10.88.8.1 actions=output:1
 cookie=0x0, duration=3.1s, table=0, n_packets=7, n_bytes=900, tcp,nw_src=10.88.16.1,nw_dst=10.88.8.1,tp_src=7100 actions=output:2
 cookie=0x0, duration=3.1s, table=0, n_packets=55, n_bytes=9000, ip,nw_dst=10.88.8.11 actions=output:1";
        assert_eq!(packets_to(dump, "10.88.8.1"), 127);
        assert_eq!(packets_to(dump, "10.88.8.11"), 55);
        assert_eq!(packets_to(dump, "10.88.16.1"), 0, "a source is no destination");
    }
}
