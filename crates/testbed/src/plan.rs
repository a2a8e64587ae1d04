//! What a testbed is made of, derived from a scenario without touching the system: one network
//! namespace per host, a switch namespace with a Linux bridge, one veth link per host, and the
//! shaping of both ends of every link. [`TestbedPlan::steps`] lists the commands that build it.

use crate::marking;
use crate::ovs::{FabricHosts, OvsFabric};
pub use crate::steps::{
    mac, shaper, simulated_backlog, switch_queue_limit, Step, HOST_QUEUE_BYTES, SWITCH_BURST_NS, WIRE_OVERHEAD_BYTES,
};
use crate::steps::{run, skb_bytes};
use daqnet_core::scenario::{CongestionControl, DaqringConfig, EcnMarking, SwitchKind, Topology};
use daqnet_core::Scenario;
use daqnet_core::{NodeId, ReadoutId, WorkerId};
use daqnet_evb::role::{RoleId, RoleKind};
use daqnet_fabric::network::{HostId, NetworkPlan, PortBuffer as NetPortBuffer, SwitchId, SwitchRole, Vertex};
use daqnet_switch::config::{PortConfig, Route};
use daqnet_switch::SwitchConfig;
use std::net::Ipv4Addr;

/// Every namespace a testbed creates is named `daqnet-<id>-<host>`.
pub const PREFIX: &str = "daqnet-";

/// The subnet of every testbed. Each testbed lives in namespaces of its own, so testbeds never
/// see each other's addresses, and nothing outside them sees any.
pub const SUBNET: &str = "10.88.0.0/16";

/// Port the supervisor listens on.
pub const SUPERVISOR_PORT: u16 = 7000;

/// Port each readout unit listens on (in its own namespace).
pub const READOUT_PORT: u16 = 7100;

/// Pacing bucket of the daqring switch's ports, in ns at the port's rate. The switch is one
/// thread on two shared CPUs: every wake-up costs, so it sends up to 500 µs of line rate at once
/// (128 µs made it use 70 % of a CPU at 4 × 200 Mb/s) and holds the rate over longer stretches.
pub const SOFT_SWITCH_BURST_NS: u64 = 500_000;

/// Shaper wake-ups per second the machine serves across all readout hosts, which sets each
/// host's default bucket ([`default_host_burst_ns`]). Measured with incast-32 (32 senders at
/// 1 Gb/s, 4 MB port): 1 ms buckets (32,000 wake-ups/s) keep the round at 18.3 ms; 500 µs
/// slows it to 18.6 ms and 250 µs to 18.8 ms (goodput 0.81 → 0.79 Gb/s), and 128 µs buckets
/// reached only 1.65 Gb/s in all, so the 1 Gb/s port barely queued.
pub const HOST_WAKEUPS_PER_S: u64 = 32_000;

/// Token-bucket depth of each host's own egress (its NIC), in ns at its line rate, unless the
/// scenario sets `network.host_burst_ns`: the smallest bucket that keeps the readout hosts
/// within [`HOST_WAKEUPS_PER_S`], and never below [`HOST_MIN_BURST_NS`] — nor below
/// [`SOFT_SWITCH_HOST_MIN_BURST_NS`] when the daqring switch shares the CPUs (`soft_switch`).
///
/// A real NIC sends at line rate; a tbf with a deep bucket hands a burst to the switch as fast
/// as the CPUs allow, which is burstier than any wire (a 1 ms bucket at 100 Mb/s lets a readout
/// unit put 8 frames of a response into the switch queue at once). So the bucket is as small as
/// the machine can pace: 1 ms for incast-32's 32 senders, 500 µs for atlas-mini's 16.
pub fn default_host_burst_ns(readout_hosts: u32, soft_switch: bool) -> u64 {
    let floor = if soft_switch { SOFT_SWITCH_HOST_MIN_BURST_NS } else { HOST_MIN_BURST_NS };
    (readout_hosts as u64 * 1_000_000_000 / HOST_WAKEUPS_PER_S).max(floor)
}

/// Width of the uniform delay that stands for how late a testbed's readout processes answer
/// when all of them are asked at once ([`reply_spread_ns`]): a part shared by all, and a part
/// per process woken.
pub const REPLY_SPREAD_BASE_NS: u64 = 350_000;
/// See [`REPLY_SPREAD_BASE_NS`].
pub const REPLY_SPREAD_PER_HOST_NS: u64 = 5_000;

/// How much later than the simulator's a testbed's readout hosts answer requests, as the width
/// of a uniform delay, ns, when `answering` of its `readout_hosts` are asked at once: their
/// processes wake on two CPUs shared by every role, one after another. Measured from the
/// request leaving the collector to the reply's first frame at the switch (`dumpcap` on the
/// switch's ports, incast-32 at 100 Mb/s, every readout host asked at once): 36 / 106 / 235 /
/// 419 / 694 µs (p5 / p25 / p50 / p75 / p95, mean 289) with 32 readout hosts, 52 / 104 / 179 /
/// 272 / 467 µs (mean 227) with 8, where the simulator's hosts answer after 30 µs (a
/// serialization and the stack latency). A uniform delay of `350 µs + 5 µs × answering` adds
/// the measured mean (510 µs for 32, 390 µs for 8). Fewer hosts asked at once wait less: the
/// shared part shrinks with the share of hosts answering (atlas-mini at 12 credits asks four of
/// its 16 readout hosts at a time, and its testbed median stays below the simulator's).
pub fn reply_spread_ns(readout_hosts: u32, answering: u32) -> u64 {
    let (n, all) = (answering.min(readout_hosts) as u64, readout_hosts.max(1) as u64);
    REPLY_SPREAD_BASE_NS * n / all + REPLY_SPREAD_PER_HOST_NS * n
}

/// Smallest default host bucket behind the bridge, ns at the host's line rate: slack for late
/// timers on busy CPUs (atlas-mini's 16 senders at 100 Mb/s carry their offered 168 Mb/s with it).
pub const HOST_MIN_BURST_NS: u64 = 500_000;

/// Smallest default host bucket beside the daqring switch, ns at the host's line rate. The
/// switch is a busy process on the same two CPUs: all-to-all's 8 senders streaming at 100 Mb/s
/// through it kept 73 % of line rate with 250 µs buckets in a full test run and once fell
/// behind with 500 µs, where 1 ms keeps ≥ 93 %.
pub const SOFT_SWITCH_HOST_MIN_BURST_NS: u64 = 1_000_000;

/// Most ports a Linux bridge takes.
const MAX_BRIDGE_PORTS: u32 = 1023;

/// One emulated host: a namespace with one interface (`eth0`) linked to the switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The role it runs.
    pub role: RoleId,
    /// Host name in reports and traces, the same as the simulator's (`sup`, `ru12`, `node3`:
    /// [`RoleId::host`]).
    pub name: String,
    /// Short name for the kernel, unique in the testbed (`sup`, `r12`, `c3`): the name of its
    /// port in the switch namespace. Not the host name: a parallel leaf-spine's readout unit
    /// has an Open vSwitch bridge named `ru12` there.
    pub short: String,
    /// Namespace name (`daqnet-<id>-<short>`).
    pub ns: String,
    /// Its address in [`SUBNET`].
    pub ip: Ipv4Addr,
    /// Line rate of its link, both ways, in bit/s.
    pub link_bps: u64,
    /// Buffer of the switch's output port towards it, in bytes as the scenario and the simulator
    /// count them ([`switch_queue_limit`] gives tbf's limit).
    pub port_buffer_bytes: u64,
}

impl Host {
    /// Its MAC address, derived from its IP (`02:00:` and the four address bytes), so that the
    /// daqring switch's forwarding table and the hosts' static neighbour entries agree.
    pub fn mac(&self) -> String {
        mac(0, self.ip)
    }
}

/// A testbed: names, addresses, links and the TCP settings every host gets.
#[derive(Debug, Clone, PartialEq)]
pub struct TestbedPlan {
    /// Testbed name; unique among the testbeds on this machine.
    pub id: String,
    /// Namespace of the switch (a Linux bridge `br0`, one port per host).
    pub switch_ns: String,
    /// Every host: the supervisor, then readout units, then collector nodes (a sub-farm: the
    /// SFC, then its workers).
    pub hosts: Vec<Host>,
    /// IP MTU of every link, in bytes.
    pub mtu_bytes: u32,
    /// Minimum retransmission timeout set on every host's route, in ms.
    pub rto_min_ms: u64,
    /// Token-bucket depth of every host's egress shaper, ns at its link rate
    /// (`network.host_burst_ns`, or [`default_host_burst_ns`] when that is 0).
    pub host_burst_ns: u64,
    /// Initial congestion window set on every host's route, in segments.
    pub initcwnd_segments: u32,
    /// Delayed acknowledgements (off: the route's `quickack`).
    pub delayed_ack: bool,
    /// Linux congestion control set on every data socket.
    pub congestion: String,
    /// `net.ipv4.tcp_sack`.
    pub sack: bool,
    /// `net.ipv4.tcp_slow_start_after_idle`.
    pub slow_start_after_idle: bool,
    /// `net.ipv4.tcp_reordering`: duplicate ACKs that mark a loss.
    pub dupack_threshold: u32,
    /// `net.ipv4.tcp_recovery = 1`: RACK loss detection.
    pub rack: bool,
    /// `net.ipv4.tcp_early_retrans = 3` (else 0): tail-loss probes.
    pub tail_loss_probe: bool,
    /// `net.ipv4.tcp_frto = 2` (else 0): F-RTO.
    pub frto: bool,
    /// `net.ipv4.tcp_ecn = 1` (else the kernel's default, 2: accept ECN, never ask for it).
    pub ecn: bool,
    /// ECN marking at every bridge port: the tbf backlog, in bytes, above which a frame is
    /// marked ([`crate::marking`]).
    pub mark_above_bytes: Option<u64>,
    /// CPUs of this machine (receive packet steering spreads flows over all of them).
    pub cpus: u32,
    /// What switches the hosts' traffic.
    pub switch: TestbedSwitch,
}

/// The switching of a testbed.
#[derive(Debug, Clone, PartialEq)]
pub enum TestbedSwitch {
    /// A Linux bridge `br0` with a tbf queue per port.
    Bridge,
    /// `daqnet switch` (daqrings) on the switch namespace's ports, started by `testbed run`.
    Daqring(DaqringConfig),
    /// A parallel leaf-spine of Open vSwitch bridges carrying the event data; `br0` joins the
    /// hosts as a control network.
    Fabric(Box<OvsFabric>),
}

/// A host's short name for the kernel (`sup`, `r12`, `c3`, `w4`): its port in the switch
/// namespace.
fn short_name(role: RoleId) -> String {
    match role {
        RoleId::Readout(r) => format!("r{r}"),
        RoleId::Collector(n) => format!("c{n}"),
        RoleId::Worker(w) => format!("w{w}"),
        RoleId::Supervisor | RoleId::Sfc => role.host(),
    }
}

/// A host's address in [`SUBNET`]: the supervisor or SFC `10.88.0.1`, collectors and workers
/// from `10.88.8.1`, readout units from `10.88.16.1`, 250 to a /24.
fn address(role: RoleId) -> Ipv4Addr {
    let ip = |third: u32, i: u32| Ipv4Addr::new(10, 88, (third + i / 250) as u8, (i % 250 + 1) as u8);
    match role {
        RoleId::Supervisor | RoleId::Sfc => ip(0, 0),
        RoleId::Collector(n) => ip(8, n.0),
        RoleId::Worker(w) => ip(8, w.0),
        RoleId::Readout(r) => ip(16, r.0),
    }
}

/// The buffer of the star's port towards host `h`, in bytes.
fn port_bytes_towards(star: &NetworkPlan, h: usize) -> u64 {
    let port = star.link(Vertex::Switch(SwitchId(0)), Vertex::Host(HostId(h as u32))).expect("a star links every host");
    match star.port(port).buffer {
        NetPortBuffer::Dedicated(bytes) => bytes,
        other => unreachable!("the testbed's check refuses a port buffer of {other:?}"),
    }
}

/// The sysfs CPU mask of CPUs `0..n`: hex, in comma-separated groups of 32 bits.
fn cpu_mask(n: u32) -> String {
    let mut groups = Vec::new();
    let mut left = n.max(1);
    while left > 0 {
        let bits = left.min(32);
        groups.push(format!("{:x}", if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 }));
        left -= bits;
    }
    groups.reverse();
    groups.join(",")
}

/// Whether `id` can name a testbed: 1–24 of `a-z 0-9 -`, starting with a letter or digit.
pub fn valid_id(id: &str) -> bool {
    (1..=24).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
}

/// The testbed id a namespace name belongs to, if it is one of daqnet's.
pub fn id_of_namespace(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(PREFIX)?;
    let (id, _host) = rest.rsplit_once('-')?;
    valid_id(id).then_some(id)
}

/// What stops a scenario from running in a testbed: (field, problem), in the scenario's order.
type Problems = Vec<(String, String)>;

/// The hosts of a testbed, each with the line rate of its link: the supervisor, readout units
/// and collector nodes, or a sub-farm's SFC and workers.
fn host_roles(sc: &Scenario) -> Vec<(RoleId, u64)> {
    let (s, n) = (&sc.system, &sc.network);
    match &sc.farm {
        Some(f) => std::iter::once((RoleId::Sfc, f.sfc_link_bps))
            .chain((0..f.workers).map(|w| (RoleId::Worker(WorkerId(w)), f.worker_link_bps)))
            .collect(),
        None => std::iter::once((RoleId::Supervisor, n.node_link_bps.max(n.readout_link_bps)))
            .chain((0..s.readout_units).map(|r| (RoleId::Readout(ReadoutId(r)), n.readout_link_bps)))
            .chain((0..s.nodes).map(|c| (RoleId::Collector(NodeId(c)), n.node_link_bps)))
            .collect(),
    }
}

/// The network a testbed emulates, if it can: every host on one switch (a star), or a parallel
/// leaf-spine's data network between the readout units and nodes (its hosts also share a
/// control bridge, which is the testbed's own).
fn emulated_network(sc: &Scenario, roles: &[(RoleId, u64)]) -> Result<NetworkPlan, (String, String)> {
    let n = &sc.network;
    match n.topology {
        Topology::Star => Ok(NetworkPlan::of_hosts(n, roles.iter().map(|&(role, bps)| (role.host(), bps)).collect())),
        Topology::ParallelLeafSpine if sc.farm.is_none() && sc.pipe.is_none() => {
            Ok(NetworkPlan::build(n, sc.system.readout_units, sc.system.nodes))
        }
        other => Err((
            "network.topology".into(),
            format!(
                "is {}; the testbed builds one switch (topology = \"star\") or a parallel leaf-spine of Open \
                 vSwitch bridges (the simulator runs every topology)",
                other.name()
            ),
        )),
    }
}

/// What of `network` a testbed cannot emulate, naming the scenario field of each: shared buffer
/// pools, daqrings in a fabric, a daqring switch's polling cycle, edge hosts' buses, ports that
/// hold less than a frame.
fn unsupported_ports(network: &NetworkPlan, mtu_bytes: u32) -> Problems {
    let mut problems: Problems = Vec::new();
    let mut bad = |field: String, m: String| {
        if !problems.iter().any(|(f, _)| *f == field) {
            problems.push((field, m));
        }
    };
    let frame = skb_bytes(mtu_bytes);
    for (sw, port) in network.switch_ports() {
        let sw = network.switch(sw);
        let ring = matches!(port.to, Vertex::Switch(t) if network.switch(t).role == SwitchRole::Daqrings);
        match (sw.role, sw.kind, port.buffer) {
            (SwitchRole::Leaf { .. } | SwitchRole::Spine { .. } | SwitchRole::Rack(_), SwitchKind::Daqring, _) => bad(
                format!("{}.kind", sw.field),
                "is daqring; the testbed's Open vSwitch bridges have no daqrings: use bridge (the simulator models \
                 daqring fabrics)"
                    .into(),
            ),
            _ if ring => bad(
                format!("{}.daqring.poll_cycle_ns", sw.field),
                format!(
                    "is {} ns; the testbed's daqring switch polls as fast as it can: set 0 (burst_frames still \
                     applies)",
                    port.shaper_burst_ns.unwrap_or(0)
                ),
            ),
            (_, _, NetPortBuffer::Shared { .. }) => bad(
                format!("{}.buffer.scheme", sw.field),
                "is shared; a Linux port queue (tbf) is per port: use dedicated (the simulator models shared pools)"
                    .into(),
            ),
            (_, kind, NetPortBuffer::Dedicated(bytes)) if bytes < frame => bad(
                match kind {
                    SwitchKind::Bridge => format!("{}.buffer.port_bytes", sw.field),
                    SwitchKind::Daqring => format!("{}.daqring.queue_bytes", sw.field),
                },
                format!("is {bytes}; a port must hold at least one frame ({frame} bytes at this MTU)"),
            ),
            _ => {}
        }
        if port.marking.is_some() && sw.role != SwitchRole::Star {
            bad(
                "network.ecn".into(),
                "is set; the testbed marks only at the ports of a star's bridge (the simulator marks everywhere)"
                    .into(),
            );
        }
    }
    if let Some(f) = network.flow {
        bad(
            "network.flow_control".into(),
            format!(
                "is set (mode = \"{}\"); veth links carry no pause frames or credits and the testbed's port \
                 queues (tbf) drop when full, so it cannot emulate lossless links (the simulator models them)",
                f.mode.name()
            ),
        );
    }
    for cpu in &network.cpus {
        bad(
            network.switch(cpu.hop).field.into(),
            "is set; the testbed's hosts and switch run on this machine's cores, whatever their cost (the \
             simulator models finite CPU)"
                .into(),
        );
    }
    if !network.edge_ports.is_empty() {
        bad(
            "network.edge".into(),
            "is set; the testbed's hosts take frames as fast as their links bring them (the simulator models a \
             slower bus)"
                .into(),
        );
    }
    problems
}

/// What a testbed cannot do with `sc` beside its network: its name, the MTU, the minimum RTO,
/// more hosts than a bridge takes.
fn unsupported_settings(sc: &Scenario, id: &str, hosts: u32) -> (Problems, Problems) {
    let (mut early, mut late): (Problems, Problems) = (Vec::new(), Vec::new());
    if !valid_id(id) {
        early.push(("(testbed name)".into(), format!("`{id}`: use 1–24 of a-z, 0-9 and '-', not starting with '-'")));
    }
    let n = &sc.network;
    if sc.system.readout_on_nodes && sc.farm.is_none() && sc.pipe.is_none() {
        late.push((
            "system.readout_on_nodes".into(),
            "is true; the testbed gives every readout unit and node a namespace of its own (the simulator \
             puts a readout unit on a node's host)"
                .into(),
        ));
    }
    if n.rc.is_some() {
        late.push((
            "network.rc".into(),
            "is set; the testbed's roles talk over TCP sockets and its links are lossy (the simulator runs \
             queue pairs on lossless links)"
                .into(),
        ));
    }
    if !(576..=9000).contains(&n.mtu_bytes) {
        late.push(("network.mtu_bytes".into(), format!("is {}; veth links take 576 to 9000", n.mtu_bytes)));
    }
    if !n.tcp.min_rto_ns.is_multiple_of(1_000_000) || n.tcp.min_rto_ns < 1_000_000 {
        late.push((
            "network.tcp.min_rto_ns".into(),
            format!("is {}; a route's rto_min is a whole number of ms (at least 1 ms)", n.tcp.min_rto_ns),
        ));
    }
    match &n.ecn {
        Some(EcnMarking::Red { .. }) => late.push((
            "network.ecn.marking".into(),
            "is red; the testbed marks with a step (marking = \"step\", threshold_bytes; the simulator models red)"
                .into(),
        )),
        Some(EcnMarking::Step { threshold_packets: Some(_), .. }) => late.push((
            "network.ecn.threshold_packets".into(),
            "is set; the testbed's marking reads the queue in bytes: give threshold_bytes".into(),
        )),
        _ => {}
    }
    if hosts > MAX_BRIDGE_PORTS {
        let s = &sc.system;
        late.push(match &sc.farm {
            Some(f) => (
                "farm.workers".into(),
                format!("is {}; a Linux bridge takes at most {MAX_BRIDGE_PORTS} hosts", f.workers),
            ),
            None => (
                "system.readout_units".into(),
                format!(
                    "{} readout units + {} nodes + the supervisor = {hosts} hosts; a Linux bridge takes at most \
                     {MAX_BRIDGE_PORTS}",
                    s.readout_units, s.nodes
                ),
            ),
        });
    }
    (early, late)
}

impl TestbedPlan {
    /// The testbed for `sc`, named `id`, or the list of (field, problem) that stop the
    /// scenario from running in a testbed: one check of the network it would emulate and of its
    /// settings, before anything is built.
    pub fn new(sc: &Scenario, id: &str) -> Result<TestbedPlan, Problems> {
        let roles = host_roles(sc);
        let (mut problems, late) = unsupported_settings(sc, id, roles.len() as u32);
        // A bridge's worth of hosts is what the check may plan; more is refused unplanned.
        let network = if roles.len() as u32 > MAX_BRIDGE_PORTS {
            None
        } else {
            emulated_network(sc, &roles).map_err(|p| problems.push(p)).ok()
        };
        if let Some(network) = &network {
            problems.extend(unsupported_ports(network, sc.network.mtu_bytes));
        }
        problems.extend(late);
        match network {
            Some(network) if problems.is_empty() => Ok(Self::build(sc, id, &roles, network)),
            _ => Err(problems),
        }
    }

    /// The testbed of `sc` emulating `network` (checked by [`TestbedPlan::new`]).
    fn build(sc: &Scenario, id: &str, roles: &[(RoleId, u64)], network: NetworkPlan) -> TestbedPlan {
        let n = &sc.network;
        let ns = |short: &str| format!("{PREFIX}{id}-{short}");
        let (switch, control) = match n.topology {
            Topology::ParallelLeafSpine => {
                let fabric = OvsFabric::new(sc, network, id).expect("a valid parallel leaf-spine places its flows");
                (TestbedSwitch::Fabric(Box::new(fabric)), None)
            }
            _ if network.switches[0].kind == SwitchKind::Daqring => {
                let daqring = n.switch.as_ref().expect("a star has [network.switch]").daqring.clone();
                (TestbedSwitch::Daqring(daqring), Some(network))
            }
            _ => (TestbedSwitch::Bridge, Some(network)),
        };
        let hosts = roles
            .iter()
            .enumerate()
            .map(|(i, &(role, link_bps))| {
                let short = short_name(role);
                // The switch's port towards the host: a star's, or the control bridge's (deep, as
                // nothing but control messages cross it).
                let port_buffer_bytes = control.as_ref().map_or(HOST_QUEUE_BYTES, |star| port_bytes_towards(star, i));
                Host { role, ns: ns(&short), name: role.host(), short, ip: address(role), link_bps, port_buffer_bytes }
            })
            .collect();
        let soft_switch = matches!(switch, TestbedSwitch::Daqring(_));
        // The hosts that send the bulk of the traffic share the machine's shaper wake-ups.
        let senders = sc.farm.as_ref().map_or(sc.system.readout_units, |f| f.workers);
        let congestion = match n.tcp.congestion_control {
            CongestionControl::Newreno => "reno",
            CongestionControl::Cubic => "cubic",
            // Linux has none: daqnet's own, a BPF program holding the window at initcwnd.
            CongestionControl::Static => crate::bpf_cc::STATIC.name,
            CongestionControl::Dctcp => crate::bpf_cc::DCTCP.name,
        };
        TestbedPlan {
            id: id.to_string(),
            switch_ns: ns("sw"),
            hosts,
            mtu_bytes: n.mtu_bytes,
            rto_min_ms: n.tcp.min_rto_ns / 1_000_000,
            host_burst_ns: if n.host_burst_ns > 0 {
                n.host_burst_ns
            } else {
                default_host_burst_ns(senders, soft_switch)
            },
            initcwnd_segments: match n.tcp.congestion_control {
                CongestionControl::Static => n.tcp.static_cwnd_segments,
                _ => n.tcp.initial_cwnd_segments,
            },
            delayed_ack: n.tcp.delayed_ack,
            congestion: congestion.into(),
            sack: n.tcp.sack,
            slow_start_after_idle: n.tcp.slow_start_after_idle,
            dupack_threshold: n.tcp.dupack_threshold,
            rack: n.tcp.rack,
            tail_loss_probe: n.tcp.tail_loss_probe,
            frto: n.tcp.frto,
            ecn: n.tcp.uses_ecn(),
            mark_above_bytes: match n.ecn {
                Some(EcnMarking::Step { threshold_bytes: Some(k), .. }) => Some(marking::threshold(k, n.mtu_bytes)),
                _ => None,
            },
            cpus: std::thread::available_parallelism().map_or(1, |c| c.get() as u32),
            switch,
        }
    }

    /// [`TestbedPlan::new`] with the problems as one error, a line per field, naming `origin`
    /// (the scenario file).
    pub fn checked(sc: &Scenario, id: &str, origin: &str) -> anyhow::Result<TestbedPlan> {
        TestbedPlan::new(sc, id).map_err(|problems| {
            let lines: Vec<String> =
                problems.iter().map(|(field, m)| format!("{origin}: field `{field}`: {m}")).collect();
            anyhow::anyhow!("{}", lines.join("\n"))
        })
    }

    /// Every namespace of the testbed, the switch last.
    pub fn namespaces(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.ns.clone()).chain([self.switch_ns.clone()]).collect()
    }

    /// The host of `role`.
    pub fn host(&self, role: RoleId) -> &Host {
        self.hosts.iter().find(|h| h.role == role).expect("every role has a host")
    }

    /// `sc` with `[deploy]` pointing at the testbed's addresses and the congestion control of
    /// `[network.tcp]` (the testbed emulates `[network]`, so it decides).
    pub fn deployed(&self, sc: &Scenario) -> Scenario {
        let mut sc = sc.clone();
        sc.deploy.supervisor = format!("{}:{SUPERVISOR_PORT}", self.hosts[0].ip);
        if sc.farm.is_none() {
            sc.deploy.readouts = (0..sc.system.readout_units)
                .map(|r| format!("{}:{READOUT_PORT}", self.host(RoleId::Readout(ReadoutId(r))).ip))
                .collect();
        }
        sc.deploy.tcp_congestion = self.congestion.clone();
        sc
    }

    /// The supervisor's address when its frames go first at every switch port: on the one
    /// bridge that carries everything (a fabric's control network carries nothing else, and a
    /// sub-farm's first host sends event data).
    fn control_first(&self) -> Option<Ipv4Addr> {
        let first = &self.hosts[0];
        (self.switch == TestbedSwitch::Bridge && first.role == RoleId::Supervisor).then_some(first.ip)
    }

    /// The steps that build the testbed from nothing, in order.
    pub fn steps(&self) -> Vec<Step> {
        let mut v: Vec<Step> = self.namespaces().iter().flat_map(|ns| self.namespace_steps(ns)).collect();
        // The bridge switches everything, or only the control messages beside a fabric.
        if self.has_bridge() {
            let sw = self.switch_ns.as_str();
            #[rustfmt::skip]
            v.push(run(&["ip", "-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay",
                "0"]));
            v.push(run(&["ip", "-n", sw, "link", "set", "br0", "up"]));
        }
        for h in &self.hosts {
            v.extend(self.host_steps(h));
        }
        if let TestbedSwitch::Fabric(f) = &self.switch {
            let of = |kind: fn(&RoleId) -> bool| -> Vec<&str> {
                self.hosts.iter().filter(|h| kind(&h.role)).map(|h| h.ns.as_str()).collect()
            };
            v.extend(f.steps(&FabricHosts {
                sw: &self.switch_ns,
                readouts: of(|r| matches!(r, RoleId::Readout(_))),
                nodes: of(|r| matches!(r, RoleId::Collector(_))),
                mtu_bytes: self.mtu_bytes,
                host_burst_ns: self.host_burst_ns,
                route_options: self.route_options(),
            }));
        }
        v
    }

    /// Whether a Linux bridge `br0` joins the hosts: every testbed's but the daqring switch's.
    fn has_bridge(&self) -> bool {
        !matches!(self.switch, TestbedSwitch::Daqring(_))
    }

    /// Namespace `ns` and its settings.
    fn namespace_steps(&self, ns: &str) -> Vec<Step> {
        let sysctl = |key: &str, value: String| Step::Sysctl { ns: ns.into(), key: key.into(), value };
        vec![
            run(&["ip", "netns", "add", ns]),
            // No IPv6: no router solicitations or duplicate-address probes on the links.
            sysctl("net.ipv6.conf.all.disable_ipv6", "1".into()),
            sysctl("net.ipv6.conf.default.disable_ipv6", "1".into()),
            // A veth hands each frame to the backlog of the CPU that sent it, and a shaper sends
            // from whichever CPU its timer fires on: frames of one flow would overtake each
            // other. Receive packet steering by flow hash keeps every flow on one CPU, in order.
            sysctl("net.core.rps_default_mask", cpu_mask(self.cpus)),
        ]
    }

    /// Host `h`: its TCP settings, its link to the switch, its address and route, and the
    /// shaping of both ends of its link.
    fn host_steps(&self, h: &Host) -> Vec<Step> {
        let (ns, sw) = (h.ns.as_str(), self.switch_ns.as_str());
        let mut v = self.tcp_settings(ns);
        let mtu = self.mtu_bytes.to_string();
        #[rustfmt::skip]
        v.push(run(&["ip", "link", "add", "eth0", "netns", ns, "address", &h.mac(), "mtu", &mtu, "type", "veth",
            "peer", "name", &h.short, "netns", sw, "mtu", &mtu]));
        v.push(Step::OffloadsOff { ns: ns.into(), dev: "eth0".into() });
        v.push(Step::OffloadsOff { ns: sw.into(), dev: h.short.clone() });
        if self.has_bridge() {
            v.push(run(&["ip", "-n", sw, "link", "set", &h.short, "master", "br0", "up"]));
        } else {
            v.push(run(&["ip", "-n", sw, "link", "set", &h.short, "up"]));
            // The daqring switch does not flood: every host knows its peers' MACs.
            for peer in self.peers(h) {
                #[rustfmt::skip]
                v.push(run(&["ip", "-n", ns, "neigh", "replace", &peer.ip.to_string(), "lladdr", &peer.mac(),
                    "dev", "eth0", "nud", "permanent"]));
            }
        }
        v.push(run(&["ip", "-n", ns, "addr", "add", &format!("{}/16", h.ip), "dev", "eth0"]));
        v.push(run(&["ip", "-n", ns, "link", "set", "lo", "up"]));
        v.push(run(&["ip", "-n", ns, "link", "set", "eth0", "up"]));
        let mut route: Vec<String> =
            ["ip", "-n", ns, "route", "replace", SUBNET, "dev", "eth0"].iter().map(|s| s.to_string()).collect();
        route.extend(["proto", "kernel", "scope", "link", "src"].map(String::from));
        route.push(h.ip.to_string());
        route.extend(self.route_options());
        v.push(Step::Run(route));
        v.push(shaper(ns, "eth0", h.link_bps, self.host_burst_ns, HOST_QUEUE_BYTES, self.mtu_bytes));
        if self.has_bridge() {
            let limit = switch_queue_limit(h.port_buffer_bytes, self.mtu_bytes);
            v.push(shaper(sw, &h.short, h.link_bps, SWITCH_BURST_NS, limit, self.mtu_bytes));
            if let Some(supervisor) = self.control_first().filter(|&ip| ip != h.ip) {
                v.extend(control_band(sw, &h.short, limit, self.mtu_bytes, supervisor));
            }
            if self.mark_above_bytes.is_some() {
                let object = marking::object(&self.id).display().to_string();
                v.push(run(&["tc", "-n", sw, "qdisc", "add", "dev", &h.short, "clsact"]));
                #[rustfmt::skip]
                v.push(run(&["tc", "-n", sw, "filter", "add", "dev", &h.short, "egress", "bpf", "direct-action",
                    "obj", &object, "sec", "tc"]));
            }
        }
        v
    }

    /// The TCP sysctls every host of the testbed gets, in namespace `ns`.
    fn tcp_settings(&self, ns: &str) -> Vec<Step> {
        let tcp = [
            ("net.ipv4.tcp_sack", u8::from(self.sack).to_string()),
            ("net.ipv4.tcp_slow_start_after_idle", u8::from(self.slow_start_after_idle).to_string()),
            ("net.ipv4.tcp_reordering", self.dupack_threshold.to_string()),
            ("net.ipv4.tcp_recovery", u8::from(self.rack).to_string()),
            ("net.ipv4.tcp_early_retrans", if self.tail_loss_probe { "3" } else { "0" }.into()),
            ("net.ipv4.tcp_frto", if self.frto { "2" } else { "0" }.into()),
            // Every run starts cold: no RTT or window remembered from an earlier connection.
            ("net.ipv4.tcp_no_metrics_save", "1".into()),
        ];
        let ecn = self.ecn.then(|| ("net.ipv4.tcp_ecn", "1".to_string()));
        tcp.into_iter().chain(ecn).map(|(key, value)| Step::Sysctl { ns: ns.into(), key: key.into(), value }).collect()
    }

    /// The switch's ports whose queues are sampled during a run: (interface in the switch
    /// namespace, name in the report, like `sw->node0`). None for the daqring switch, which
    /// reports its own queues.
    pub fn sampled_ports(&self) -> Vec<(String, String)> {
        match &self.switch {
            TestbedSwitch::Bridge => self.hosts.iter().map(|h| (h.short.clone(), format!("sw->{}", h.name))).collect(),
            TestbedSwitch::Fabric(f) => f.ports().into_iter().map(|p| (p.queue_dev.clone(), p.name())).collect(),
            TestbedSwitch::Daqring(_) => Vec::new(),
        }
    }

    /// What a trace of this testbed can select: the sampled ports, and the data connections'
    /// senders as the simulator names them (`node0->ru3` requests, `ru3->node0` responses;
    /// a sub-farm's are not traced).
    pub fn trace_targets(&self) -> daqnet_core::trace::Targets {
        let of = |kind: RoleKind| self.hosts.iter().filter(move |h| h.role.kind() == kind).map(|h| h.name.as_str());
        let senders = of(RoleKind::Collector)
            .flat_map(|node| {
                of(RoleKind::Readout).flat_map(move |ru| [format!("{node}->{ru}"), format!("{ru}->{node}")])
            })
            .collect();
        daqnet_core::trace::Targets { ports: self.sampled_ports().into_iter().map(|p| p.1).collect(), senders }
    }

    /// Whether `spec` selects only what this testbed records: ports whose queues are sampled
    /// (not the daqring switch's, which reports its own peaks) and the data senders of
    /// [`TestbedPlan::trace_targets`].
    pub fn check_trace(&self, spec: &daqnet_core::trace::TraceSpec) -> Result<(), String> {
        if !spec.ports.is_empty() && self.daqring().is_some() {
            return Err(
                "the daqring switch's queues are not sampled during the run (its report has their peaks)".into()
            );
        }
        if !spec.senders.is_empty() && self.hosts[0].role == RoleId::Sfc {
            return Err(
                "a sub-farm's TCP senders are not traced in the testbed (cwnd= is for the event builder)".into()
            );
        }
        spec.resolve(&self.trace_targets()).map(drop)
    }

    /// The interface that carries a host's event data out, and its name in the report (`ru3->sw`),
    /// if it is the host's own: a readout unit's in a fabric are its bridge's uplinks, reported
    /// among the switch ports.
    pub fn data_egress(&self, h: &Host) -> Option<(String, String)> {
        match (&self.switch, h.role) {
            (TestbedSwitch::Fabric(_), RoleId::Collector(_)) => {
                Some((crate::ovs::NODE_DEV.into(), format!("{}->fabric", h.name)))
            }
            (TestbedSwitch::Fabric(_), RoleId::Readout(_)) => None,
            _ => Some(("eth0".into(), format!("{}->sw", h.name))),
        }
    }

    /// What every route of every host carries: the scenario's minimum RTO and initial window,
    /// and quick ACKs when delayed ACKs are off.
    fn route_options(&self) -> Vec<String> {
        let mut v = vec!["rto_min".into(), format!("{}ms", self.rto_min_ms), "initcwnd".into()];
        v.push(self.initcwnd_segments.to_string());
        if !self.delayed_ack {
            v.extend(["quickack".into(), "1".into()]);
        }
        v
    }

    /// The daqring switch's settings, if the testbed has one.
    pub fn daqring(&self) -> Option<&DaqringConfig> {
        match &self.switch {
            TestbedSwitch::Daqring(d) => Some(d),
            _ => None,
        }
    }

    /// The hosts `h` exchanges traffic with: the first host (the supervisor, or a sub-farm's
    /// SFC) talks to everyone; collectors and readout units to it and to each other, workers
    /// to it alone.
    fn peers<'a>(&'a self, h: &'a Host) -> impl Iterator<Item = &'a Host> + 'a {
        let head = self.hosts[0].role;
        let kind = |r: RoleId| r.kind();
        self.hosts
            .iter()
            .filter(move |p| p.ip != h.ip && (h.role == head || p.role == head || kind(p.role) != kind(h.role)))
    }

    /// The daqring switch's configuration: a port per host (the switch-side veth, paced at the
    /// host's line rate), a route per host MAC, a daqring per collector node.
    pub fn switch_config(&self) -> SwitchConfig {
        let daqring = self.daqring().cloned().unwrap_or_default();
        let ports = self.hosts.iter().map(|h| PortConfig { name: h.short.clone(), rate_bps: h.link_bps }).collect();
        let routes = self.hosts.iter().enumerate().map(|(i, h)| Route { mac: h.mac(), port: i }).collect();
        let collectors: Vec<&Host> = self.hosts.iter().filter(|h| matches!(h.role, RoleId::Collector(_))).collect();
        let bucket = |h: &Host| (h.link_bps as u128 * SOFT_SWITCH_BURST_NS as u128 / 8 / 1_000_000_000) as u64;
        let frame = skb_bytes(self.mtu_bytes) + WIRE_OVERHEAD_BYTES as u64;
        SwitchConfig {
            ports,
            routes,
            collectors: collectors.iter().map(|h| h.ip).collect(),
            collector_macs: collectors.iter().map(|h| h.mac()).collect(),
            queue_bytes: daqring.queue_bytes,
            burst_frames: (daqring.burst_frames > 0).then_some(daqring.burst_frames),
            pacing_bucket_bytes: self.hosts.iter().map(bucket).min().unwrap_or(0).max(2 * frame),
        }
    }
}

/// Queue of a switch port's control band, in bytes: deep, as only the supervisor's messages
/// enter it.
const CONTROL_QUEUE_BYTES: u64 = 1 << 20;

/// A strict-priority band for the supervisor's frames under a switch port's tbf (handle `1:`),
/// its data keeping what the port's queue of `limit_bytes` held (below). The simulator keeps the supervisor's
/// messages off the data network (`system.supervisor.control_delay_ns`); on one bridge they
/// waited behind the port's data, and at a collector's full port that decides when an event
/// starts. Measured at atlas-mini's 192 credits (100 Mb/s, seed 6): assignments reached the
/// collector 2.4 ms after they were sent (median; 90th percentile 4.5 ms, at most 21.5 ms),
/// with the band 0.28 ms (at most 18.7 ms). A frame already taken from the queue for its tokens
/// still goes first, so a control frame waits at most one frame time.
fn control_band(sw: &str, dev: &str, limit_bytes: u64, mtu_bytes: u32, supervisor: Ipv4Addr) -> Vec<Step> {
    // tbf takes its next frame out of htb to wait for tokens (htb peeks by dequeuing, where a
    // bare bfifo keeps the frame counted), so the data queue holds one full frame less and the
    // port as much as before (a trace of the port peaked one frame above its limit without it).
    let skb = skb_bytes(mtu_bytes);
    let data_limit = limit_bytes.saturating_sub(skb).max(skb);
    let (limit, control, source) =
        (data_limit.to_string(), CONTROL_QUEUE_BYTES.to_string(), format!("{supervisor}/32"));
    let tc = |args: &[&str]| run(&[&["tc", "-n", sw], args].concat());
    // htb's own rate stays far above the port's: the tbf above it shapes.
    let class = |id: &str, prio: &str| {
        tc(&[
            "class", "add", "dev", dev, "parent", "10:", "classid", id, "htb", "rate", "100gbit", "quantum", "1514",
            "prio", prio,
        ])
    };
    vec![
        tc(&["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "htb", "default", "2"]),
        class("10:1", "0"),
        class("10:2", "1"),
        tc(&["qdisc", "add", "dev", dev, "parent", "10:1", "bfifo", "limit", &control]),
        tc(&["qdisc", "add", "dev", dev, "parent", "10:2", "bfifo", "limit", &limit]),
        tc(&[
            "filter", "add", "dev", dev, "parent", "10:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "src",
            &source, "flowid", "10:1",
        ]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::scenario::BufferConfig;

    /// The programs `p` runs, each as one line.
    fn commands(p: &TestbedPlan) -> Vec<String> {
        p.steps()
            .iter()
            .filter_map(|s| match s {
                Step::Run(a) => Some(a.join(" ")),
                _ => None,
            })
            .collect()
    }

    fn incast() -> Scenario {
        daqnet_core::scenario::parse_str(
            r#"
            [system]
            readout_units = 3
            nodes = 2
            pus_per_node = 1
            [network]
            topology = "star"
            [network.switch]
            buffer = { scheme = "dedicated", port_bytes = "200kB" }
            [network.tcp]
            congestion_control = "cubic"
            min_rto_ns = 5000000
            "#,
            "t.toml",
            &[],
        )
        .unwrap()
    }

    #[test]
    fn hosts_addresses_and_deploy() {
        let p = TestbedPlan::new(&incast(), "t1").unwrap();
        let names: Vec<&str> = p.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["sup", "ru0", "ru1", "ru2", "node0", "node1"]);
        assert_eq!(p.host(RoleId::Readout(ReadoutId(2))).ip, Ipv4Addr::new(10, 88, 16, 3));
        assert_eq!(p.host(RoleId::Collector(NodeId(1))).ns, "daqnet-t1-c1");
        assert_eq!(p.switch_ns, "daqnet-t1-sw");
        assert!(p.hosts.iter().all(|h| h.port_buffer_bytes == 200_000));
        let d = p.deployed(&incast());
        assert_eq!(d.deploy.supervisor, "10.88.0.1:7000");
        assert_eq!(d.deploy.readouts, ["10.88.16.1:7100", "10.88.16.2:7100", "10.88.16.3:7100"]);
        assert_eq!(d.deploy.tcp_congestion, "cubic");
        assert_eq!(p.rto_min_ms, 5);
        assert_eq!(id_of_namespace("daqnet-t1-c1"), Some("t1"));
        assert_eq!(id_of_namespace("daqnet-run-42-sw"), Some("run-42"));
        assert_eq!(id_of_namespace("other-t1-c1"), None);
    }

    #[test]
    fn a_switch_port_holds_as_many_full_frames_as_the_simulated_one() {
        // The simulator admits a frame while the frames queued, the one on the wire included,
        // fit: ⌊port / 1518⌋ frames at MTU 1500. tbf must then hold one fewer waiting frames
        // of 1514 bytes (its `skb->len`).
        for port in [20_000, 50_000, 200_000, 4_000_000, 1518, 3036] {
            let simulated = port / 1518;
            let waiting = switch_queue_limit(port, 1500) / 1514;
            assert_eq!(waiting, (simulated - 1).max(1), "port of {port} bytes");
        }
        assert_eq!(switch_queue_limit(20_000, 1500) / 1514, 12, "incast-32's 20 kB: 13 frames in all");
        // A full port reads as full in the simulator's measure: 12 waiting + 1 on the wire.
        assert_eq!(simulated_backlog(12 * 1514, 1500), 13 * 1518);
        assert_eq!(simulated_backlog(0, 1500), 0);
    }

    #[test]
    fn steps_shape_both_ends_at_line_rate_with_the_scenario_buffer() {
        let p = TestbedPlan::new(&incast(), "t1").unwrap();
        let steps = p.steps();
        let cmd = |s: &Step| match s {
            Step::Run(a) => a.join(" "),
            _ => String::new(),
        };
        let all: Vec<String> = steps.iter().map(cmd).collect();
        assert!(all.contains(
            &"tc -n daqnet-t1-sw qdisc replace dev c0 root handle 1: tbf rate 1000000000bit burst 16000 limit 197958 overhead 24"
                .to_string()
        ));
        assert!(all.contains(
            &"tc -n daqnet-t1-r0 qdisc replace dev eth0 root handle 1: tbf rate 1000000000bit burst 62500 limit 4194304 overhead 24"
                .to_string()
        ), "three readout hosts: the 500 µs floor");
        assert!(all
            .iter()
            .any(|c| c.starts_with("ip -n daqnet-t1-c1 route replace 10.88.0.0/16")
                && c.contains("rto_min 5ms initcwnd 10")));
        let offloads = steps.iter().filter(|s| matches!(s, Step::OffloadsOff { .. })).count();
        assert_eq!(offloads, 2 * p.hosts.len());
        // The default bucket grows with the readout hosts: 1 ms for 32, 500 µs for 16.
        assert_eq!((default_host_burst_ns(32, false), default_host_burst_ns(16, false)), (1_000_000, 500_000));
        assert_eq!(default_host_burst_ns(8, true), 1_000_000, "the daqring switch shares the CPUs");
        // A scenario's host bucket replaces the default: 250 µs at 1 Gb/s is 31,250 bytes.
        let mut shallow = incast();
        shallow.network.host_burst_ns = 250_000;
        let s = TestbedPlan::new(&shallow, "t1").unwrap().steps();
        assert!(s.iter().map(cmd).any(|c| c
            == "tc -n daqnet-t1-r0 qdisc replace dev eth0 root handle 1: tbf rate 1000000000bit burst 31250 limit 4194304 overhead 24"));
        // Namespaces exist before anything is put in them.
        let first_link = all.iter().position(|c| c.contains("type veth")).unwrap();
        let last_add = all.iter().rposition(|c| c.starts_with("ip netns add")).unwrap();
        assert!(last_add < first_link);
    }

    #[test]
    fn the_supervisors_frames_go_first_at_every_switch_port_but_its_own() {
        let all = commands(&TestbedPlan::new(&incast(), "t1").unwrap());
        let at = |dev: &str| -> Vec<&str> {
            all.iter()
                .filter(|c| c.starts_with("tc -n daqnet-t1-sw ") && c.contains(&format!(" dev {dev} ")))
                .map(String::as_str)
                .collect()
        };
        assert_eq!(
            at("c0"),
            [
                "tc -n daqnet-t1-sw qdisc replace dev c0 root handle 1: tbf rate 1000000000bit burst 16000 limit 197958 overhead 24",
                "tc -n daqnet-t1-sw qdisc add dev c0 parent 1:1 handle 10: htb default 2",
                "tc -n daqnet-t1-sw class add dev c0 parent 10: classid 10:1 htb rate 100gbit quantum 1514 prio 0",
                "tc -n daqnet-t1-sw class add dev c0 parent 10: classid 10:2 htb rate 100gbit quantum 1514 prio 1",
                "tc -n daqnet-t1-sw qdisc add dev c0 parent 10:1 bfifo limit 1048576",
                "tc -n daqnet-t1-sw qdisc add dev c0 parent 10:2 bfifo limit 196444",
                "tc -n daqnet-t1-sw filter add dev c0 parent 10: protocol ip prio 1 u32 match ip src 10.88.0.1/32 flowid 10:1",
            ],
            "the data keep the port's queue; the supervisor's frames skip it"
        );
        assert_eq!(at("r2").len(), 7, "readout ports too (the supervisor's clears)");
        assert_eq!(at("sup").len(), 1, "the supervisor's own port: nothing of its own to put first");
    }

    #[test]
    fn the_daqring_switch_replaces_the_bridge_with_static_neighbours_and_its_own_table() {
        let mut sc = incast();
        sc.network.switch.as_mut().unwrap().kind = SwitchKind::Daqring;
        let p = TestbedPlan::new(&sc, "t1").unwrap();
        assert!(p.daqring().is_some());
        let all = commands(&p);
        assert!(!all.iter().any(|c| c.contains("br0")), "no bridge");
        assert!(!all.iter().any(|c| c.starts_with("tc -n daqnet-t1-sw")), "the switch paces itself");
        let neigh = |ns: &str, ip: &str| {
            all.iter().any(|c| c.starts_with(&format!("ip -n daqnet-t1-{ns} neigh replace {ip} lladdr 02:00:0a:58:")))
        };
        assert!(neigh("r0", "10.88.8.1") && neigh("c0", "10.88.16.1"), "readout units and collectors know each other");
        assert!(neigh("r0", "10.88.0.1") && neigh("sup", "10.88.16.2"), "and the supervisor");
        assert!(!neigh("r0", "10.88.16.2"), "readout units never talk to each other");
        let c = p.switch_config();
        c.check().unwrap();
        assert_eq!(c.ports.len(), p.hosts.len());
        assert_eq!(c.collectors, [Ipv4Addr::new(10, 88, 8, 1), Ipv4Addr::new(10, 88, 8, 2)]);
        assert_eq!(c.collector_macs, ["02:00:0a:58:08:01", "02:00:0a:58:08:02"]);
        assert_eq!(c.queue_bytes, 64 << 20);
        assert_eq!(c.pacing_bucket_bytes, 62_500, "500 µs at 1 Gb/s");
    }

    #[test]
    fn a_static_window_is_daqnets_congestion_control_started_at_the_window() {
        let mut sc = incast();
        sc.network.tcp.congestion_control = CongestionControl::Static;
        sc.network.tcp.static_cwnd_segments = 24;
        let p = TestbedPlan::new(&sc, "t1").unwrap();
        assert_eq!(p.congestion, "daqnet_static");
        assert_eq!(p.deployed(&sc).deploy.tcp_congestion, "daqnet_static");
        assert_eq!(p.initcwnd_segments, 24, "the BPF program keeps the window it starts with");
    }

    #[test]
    fn dctcp_and_a_step_mark_every_bridge_port_against_its_tbf_backlog() {
        let mut sc = incast();
        sc.network.tcp.congestion_control = CongestionControl::Dctcp;
        sc.network.ecn = Some(EcnMarking::Step { threshold_bytes: Some(30_000), threshold_packets: None });
        let p = TestbedPlan::new(&sc, "t1").unwrap();
        assert_eq!(p.deployed(&sc).deploy.tcp_congestion, "daqnet_dctcp");
        // 30 kB of simulated frames (header to FCS, the one on the wire included) are what waits
        // in tbf in skb->len: (30,000 − a 1518-byte frame) × 1514 / 1518 = 28,406 bytes.
        assert_eq!(p.mark_above_bytes, Some(28_406));
        let steps: Vec<String> = p.steps().iter().map(|s| s.to_string()).collect();
        let at = |needle: &str| steps.iter().position(|s| s == needle).unwrap_or_else(|| panic!("{needle}"));
        let tbf = steps.iter().position(|s| s.starts_with("tc -n daqnet-t1-sw qdisc replace dev c0 root")).unwrap();
        let clsact = at("tc -n daqnet-t1-sw qdisc add dev c0 clsact");
        let filter = at("tc -n daqnet-t1-sw filter add dev c0 egress bpf direct-action obj \
                         /run/daqnet/testbed/t1.mark/mark.bpf.o sec tc");
        assert!(tbf < clsact && clsact < filter, "the port's queue, then its hook, then the program");
        let hooked = steps.iter().filter(|s| s.ends_with(" clsact")).count();
        assert_eq!(hooked, p.hosts.len(), "every bridge port marks");
        assert!(steps.contains(&"sysctl daqnet-t1-r0: net.ipv4.tcp_ecn=1".to_string()));
        // Without ECN the steps are those of before: no hook, no sysctl.
        let plain: Vec<String> =
            TestbedPlan::new(&incast(), "t1").unwrap().steps().iter().map(|s| s.to_string()).collect();
        assert!(!plain.iter().any(|s| s.contains("clsact") || s.contains("tcp_ecn")));
        // What the testbed's marking cannot do is named.
        sc.network.ecn = Some(EcnMarking::Step { threshold_bytes: None, threshold_packets: Some(20) });
        let fields: Vec<String> = TestbedPlan::new(&sc, "t1").unwrap_err().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["network.ecn.threshold_packets"]);
        sc.network.ecn = Some(EcnMarking::Red { min_bytes: 1, max_bytes: 2, max_probability: 0.1 });
        let fields: Vec<String> = TestbedPlan::new(&sc, "t1").unwrap_err().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["network.ecn.marking"]);
    }

    #[test]
    fn cpu_masks() {
        assert_eq!(cpu_mask(2), "3");
        assert_eq!(cpu_mask(32), "ffffffff");
        assert_eq!(cpu_mask(40), "ff,ffffffff");
    }

    #[test]
    fn what_a_testbed_cannot_emulate_is_named() {
        let mut sc = incast();
        sc.network.switch.as_mut().unwrap().buffer =
            BufferConfig::Shared { pool_bytes: 1, ports_per_pool: 2, port_cap_bytes: 1 };
        sc.network.tcp.min_rto_ns = 1_500_000;
        sc.network.edge = Some(daqnet_core::scenario::EdgeHost { bus_bps: 1, nic_buffer_bytes: 1, hosts: vec![] });
        sc.network.flow_control = Some(daqnet_core::scenario::FlowControl {
            mode: daqnet_core::scenario::FlowControlMode::Pfc,
            headroom_bytes: None,
            xon_gap_bytes: None,
            pause_quanta: 1,
            data_priority: 3,
        });
        sc.network.rc = Some(daqnet_core::scenario::MessageTransport::default());
        sc.network.host_cpu = Some(daqnet_core::scenario::HostCpu::default());
        sc.system.readout_on_nodes = true;
        let fields: Vec<String> = TestbedPlan::new(&sc, "UP").unwrap_err().into_iter().map(|(f, _)| f).collect();
        let expected = [
            "(testbed name)",
            "network.switch.buffer.scheme",
            "network.flow_control",
            "network.host_cpu",
            "network.edge",
            "system.readout_on_nodes",
            "network.rc",
            "network.tcp.min_rto_ns",
        ];
        assert_eq!(fields, expected);
        // A daqring switch whose polling cycle limits its rate (2 frames per 100 µs, below 1 Gb/s)
        // has rate-limited rings, which the testbed's switch has not; on a bridge the daqring
        // settings are unused, as in the simulator.
        let mut sc = incast();
        let sw = sc.network.switch.as_mut().unwrap();
        (sw.daqring.poll_cycle_ns, sw.daqring.burst_frames) = (100_000, 2);
        assert!(TestbedPlan::new(&sc, "t1").is_ok());
        sc.network.switch.as_mut().unwrap().kind = SwitchKind::Daqring;
        let fields: Vec<String> = TestbedPlan::new(&sc, "t1").unwrap_err().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["network.switch.daqring.poll_cycle_ns"]);
        // Ports too small for a frame, named by what sizes them.
        let mut sc = incast();
        sc.network.switch.as_mut().unwrap().buffer = BufferConfig::Dedicated { port_bytes: 1000 };
        let problems = TestbedPlan::new(&sc, "t1").unwrap_err();
        assert_eq!(problems[0].0, "network.switch.buffer.port_bytes");
        assert!(problems[0].1.contains("1514 bytes"), "{}", problems[0].1);
    }
}
