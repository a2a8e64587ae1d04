//! The scenario schema: one TOML file describes a DAQ system (`[system]`), its network
//! (`[network]`) and the run (`[run]`). Every substrate reads the same file.
//!
//! Quantities carry their unit in the field name (`_ns`, `_ms`, `_bps`, `_bytes`, `_hz`). Rates and
//! sizes may also be written with suffixes (`"10G"`, `"600kB"`, `"1M"`) and durations with a unit
//! (`"200ms"`, `"5 ms"`), see [`crate::units`].

mod choice;
mod cpu;
mod fabric;
pub mod farm;
pub mod flow;
mod load;
mod pipe;
mod raw;
pub mod rc;
mod validate;

pub use choice::{Credits, Rate};
pub use cpu::{HostCpu, Steering};
pub use fabric::{Assignment, ParallelLeafSpine};
pub use farm::{Dispatch, Farm, FromBuilder, Implementation};
pub use flow::{FlowControl, FlowControlMode};
pub use load::{apply_set, load, parse_str, ScenarioError};
pub use pipe::{Pipe, PipeDirection, PipePattern, PipeScheduler};
pub use rc::MessageTransport;

use crate::units::{de_bps, de_bytes, de_bytes_u32, de_ms, de_ns, de_secs};
use serde::{Deserialize, Serialize};

/// A complete scenario: the DAQ system, its network, and how to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// The dataflow: readout units, nodes, processing units, supervisor, credits.
    pub system: System,
    /// The network: topology, links, switch buffers, TCP.
    pub network: Network,
    /// How long to run and with which seed.
    pub run: Run,
    /// Where and how the roles of a real run (`daqnet run`, `daqnet role`) meet; the simulator
    /// ignores it.
    pub deploy: Deploy,
    /// An LHCb sub-farm in place of the event builder of `[system]`; see [`Farm`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub farm: Option<Farm>,
    /// A DAQPIPE event builder in place of the event builder of `[system]`; see [`Pipe`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipe: Option<Pipe>,
}

/// `[system]`: the event-building dataflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct System {
    /// Number of readout units (readout systems); every event's data are striped over all of them.
    pub readout_units: u32,
    /// Fragments each readout unit holds per event; one data request asks a unit for all of them.
    pub fragments_per_unit: u32,
    /// Fragment size law: `{ law = "fixed", bytes = 1100 }` or the variable law of [ATLAS-DC] §7.2
    /// (`law = "lognormal_normal"`).
    pub fragment_size: FragmentSize,
    /// Worker nodes; each runs one collector (data-collection manager) and `pus_per_node` units.
    pub nodes: u32,
    /// Processing units per node (one per core).
    pub pus_per_node: u32,
    /// Traffic-shaping credits per node: a request for k fragments takes k credits until its
    /// response arrives. `"unlimited"` turns traffic shaping off.
    pub credits_per_node: Credits,
    /// Time a processing unit processes an event after collecting it, in nanoseconds.
    #[serde(deserialize_with = "de_ns")]
    pub processing_time_ns: u64,
    /// Fraction of the readout units a processing unit collects from per event (0 < f ≤ 1); the
    /// units are chosen per event, deterministically from the seed. With `[[system.roi_step]]`s,
    /// the event's last step, which leaves out the units its earlier steps collected.
    pub collect_fraction: f64,
    /// Iterative collection ([ATLAS-DC] §2, §5.2): before the last step (`collect_fraction`,
    /// then `processing_time_ns`), a unit collects and processes an event in these steps, in
    /// order, each asking only readout units no earlier step of the event collected, and may
    /// reject the event after any of them. The event's data-collection latency is then the
    /// time its unit waited for data, summed over the steps it took. Empty (the default): one
    /// step.
    #[serde(rename = "roi_step", skip_serializing_if = "Vec::is_empty")]
    pub roi_steps: Vec<RoiStep>,
    /// Size of one data request message on the wire (application payload), in bytes.
    #[serde(deserialize_with = "de_bytes_u32")]
    pub request_bytes: u32,
    /// Least delay between a readout unit receiving a request and handing its response to TCP,
    /// in ns.
    #[serde(deserialize_with = "de_ns")]
    pub readout_service_ns: u64,
    /// Extra service delay, uniform in `[0, readout_service_jitter_ns)`, drawn per request from
    /// the seed (readout software does not answer in lock-step), in ns.
    #[serde(deserialize_with = "de_ns")]
    pub readout_service_jitter_ns: u64,
    /// Readout unit `r` runs on node `r`'s host: one link carries the unit's responses out and
    /// the node's collected fragments in, and a collector's request to its own host's unit
    /// crosses no link ([LOSSLESS] Fig. 5's set-up). Needs `readout_units = nodes` and a star or
    /// two-tier network (simulator; on the testbed every role has its own host). Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub readout_on_nodes: bool,
    /// The supervisor: assignment rate and policy.
    pub supervisor: SupervisorConfig,
}

/// `[[system.roi_step]]`: one region-of-interest step of an event's iterative collection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoiStep {
    /// Fraction of the readout units this step asks (0 < f ≤ 1), chosen per event and step
    /// from the seed; those an earlier step of the event collected are not asked again.
    pub collect_fraction: f64,
    /// Time the unit processes what this step collected before its next step, in ns.
    #[serde(deserialize_with = "de_ns")]
    pub processing_time_ns: u64,
    /// Share of the events reaching this step that the unit rejects after processing it
    /// ([0, 1), drawn per event from the seed): their collection ends here. Default 0.
    #[serde(default)]
    pub reject_fraction: f64,
}

/// `[system.supervisor]`: assigns events to processing units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SupervisorConfig {
    /// Events made available per second (the Level-1 accept rate seen by the farm), or
    /// `"unbounded"`: an event is assigned whenever a processing unit asks for one.
    pub rate_hz: Rate,
    /// Assignment policy ([ATLAS-DC] §7.1): `fcfs`, `random`, `node_round_robin`,
    /// `node_load_balance` or `pu_round_robin`.
    pub policy: Policy,
    /// One-way latency of supervisor ↔ processing-unit messages (assignments, requests for
    /// work), in ns. They are tiny and are not put on the simulated data network.
    #[serde(deserialize_with = "de_ns")]
    pub control_delay_ns: u64,
    /// The order in which the processing units of a fresh system first ask for work:
    /// `shuffled` (default) or `by_node`.
    #[serde(skip_serializing_if = "StartupOrder::is_shuffled")]
    pub startup: StartupOrder,
}

/// The order of the processing units' first requests for work. The FCFS queue keeps it for as
/// long as the units' cycles (collection + processing) stay alike, so it shapes how often two
/// events land on one node in a short interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartupOrder {
    /// A seeded shuffle: the units come up in no particular order.
    #[default]
    Shuffled,
    /// Node by node, the units of a node consecutive: every node's units come up together, as
    /// when each node's data-collection manager starts its units at once.
    ByNode,
}

impl StartupOrder {
    /// The default (left out of written scenarios, so reports without it stay as they were).
    pub fn is_shuffled(&self) -> bool {
        *self == StartupOrder::Shuffled
    }
}

/// Event assignment policies of [ATLAS-DC] §7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// First come, first served: units in the order their requests for work arrived.
    Fcfs,
    /// A uniformly random unit among those waiting for work.
    Random,
    /// A unit on the next node, in a fixed node sequence, that has a unit waiting.
    NodeRoundRobin,
    /// A unit on the node with the most units waiting (ties: the lowest node number).
    NodeLoadBalance,
    /// The next waiting unit in a fixed unit sequence (units of a node consecutive).
    PuRoundRobin,
}

impl Policy {
    /// All policies, in the order of [ATLAS-DC] §7.1.
    pub const ALL: [Policy; 5] =
        [Policy::Fcfs, Policy::Random, Policy::NodeRoundRobin, Policy::NodeLoadBalance, Policy::PuRoundRobin];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Random => "random",
            Policy::NodeRoundRobin => "node_round_robin",
            Policy::NodeLoadBalance => "node_load_balance",
            Policy::PuRoundRobin => "pu_round_robin",
        }
    }
}

/// Fragment size law.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "law", rename_all = "snake_case", try_from = "raw::RawFragmentSize")]
pub enum FragmentSize {
    /// Every fragment has the same size.
    Fixed {
        /// Fragment size in bytes.
        bytes: u32,
    },
    /// [ATLAS-DC] §7.2: `size = base_bytes × X_event + N_fragment`, with `X_event` log-normal
    /// (drawn once per event) and `N_fragment` normal with mean 0 (drawn per fragment),
    /// rounded and clamped to at least `min_bytes`.
    LognormalNormal {
        /// Scale of the per-event component, in bytes (the size when `X_event = 1`).
        base_bytes: u32,
        /// Location parameter μ of the per-event log-normal (seed: 0).
        event_mu: f64,
        /// Scale parameter σ of the per-event log-normal (seed: 0.25).
        event_sigma: f64,
        /// Standard deviation of the per-fragment normal component, in bytes.
        fragment_sd_bytes: f64,
        /// Smallest fragment size, in bytes.
        min_bytes: u32,
    },
}

/// Network topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Every host on one switch, described by `[network.switch]`.
    Star,
    /// Readout units on group switches (`[network.readout_switch]`), nodes on top-of-rack
    /// switches (`[network.rack_switch]`), every access switch with one uplink to each core
    /// router (`[network.core]`).
    TwoTier,
    /// [LOSSLESS] §V-A's parallel leaf-spine: pods joined by independent leaf-spine planes,
    /// described by `[network.fabric]` (planned by `daqnet plan`).
    ParallelLeafSpine,
}

impl Topology {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Topology::Star => "star",
            Topology::TwoTier => "two_tier",
            Topology::ParallelLeafSpine => "parallel_leaf_spine",
        }
    }
}

/// `[network]`: topology, links, switches and TCP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    /// `star`, `two_tier` or `parallel_leaf_spine`.
    pub topology: Topology,
    /// IP MTU in bytes; the TCP MSS is `mtu_bytes - 52` (IPv4 + TCP + timestamps option).
    #[serde(deserialize_with = "de_bytes_u32")]
    pub mtu_bytes: u32,
    /// Line rate of each readout unit's link, in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub readout_link_bps: u64,
    /// Line rate of each node's link (the collector port), in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub node_link_bps: u64,
    /// Propagation delay of every link, in ns.
    #[serde(deserialize_with = "de_ns")]
    pub link_delay_ns: u64,
    /// Latency a host's network stack adds to every received packet (interrupt moderation,
    /// softirq, socket wake-up), in ns. Together with the links it sets the base RTT.
    #[serde(deserialize_with = "de_ns")]
    pub host_delay_ns: u64,
    /// Token bucket of each host's transmit side, in ns at its link rate; 0 (default): a real
    /// NIC, whose frames leave back to back at line rate. Above 0 a host sends like a software
    /// shaper (Linux tbf) with a bucket this deep: a burst of up to this much line-rate time
    /// leaves at once, and the link rate holds over anything longer. The testbed shapes every
    /// host this way (1 ms unless set here); there the burst leaves as fast as the CPUs allow,
    /// not at once, so the simulator with the same bucket overstates it (`docs/testbed.md`).
    #[serde(deserialize_with = "de_ns")]
    pub host_burst_ns: u64,
    /// The edge hosts' receive path when it is slower than their links (simulator only);
    /// see [`EdgeHost`]. Default: none, hosts take frames at line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeHost>,
    /// Hosts whose processors bound what they receive (simulator only); see [`HostCpu`].
    /// Default: none, a host takes every frame after `host_delay_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
    /// ECN marking at every switch output port (simulator; see [`EcnMarking`]). Default: none,
    /// a full buffer drops and nothing is marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnMarking>,
    /// Link-level flow control on every link (simulator; see [`FlowControl`]): pause frames
    /// (IEEE 802.3x) or priority flow control (802.1Qbb). Default: none, a full buffer drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowControl>,
    /// The dataflow's transport when not TCP (simulator; see [`MessageTransport`]):
    /// reliable-connected queue pairs (InfiniBand RC, RoCEv2), on lossless links. Default:
    /// none, TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rc: Option<MessageTransport>,
    /// `star` only: the single switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<SwitchConfig>,
    /// `two_tier` only: the switch of each readout group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readout_switch: Option<AccessSwitch>,
    /// `two_tier` only: the top-of-rack switch of each rack of nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack_switch: Option<AccessSwitch>,
    /// `two_tier` only: the core routers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<CoreConfig>,
    /// `parallel_leaf_spine` only: pods, planes, spines, rates and switches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<ParallelLeafSpine>,
    /// TCP model settings.
    pub tcp: TcpConfig,
}

/// `[network.switch]` (star topology): the one switch every host is attached to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// What switch: `"bridge"` (default), a hardware-like output-queued switch whose ports hold
    /// `buffer` (in the testbed, a Linux bridge with a tbf queue per port); or `"daqring"`,
    /// daqnet's lossless software switch ([LOSSLESS] §III): a queue of `daqring.queue_bytes` per
    /// data collector, served round-robin at line rate (in the testbed, `daqnet switch` on
    /// AF_PACKET sockets in place of the bridge).
    #[serde(default)]
    pub kind: SwitchKind,
    /// Output buffer scheme of the switch (`kind = "bridge"`; default: 4 MB per port).
    #[serde(default = "default_switch_buffer")]
    pub buffer: BufferConfig,
    /// Settings of the `daqring` switch.
    #[serde(default)]
    pub daqring: DaqringConfig,
    /// The software switch's cores (simulator only; see [`HostCpu`], without `hosts`): every
    /// frame entering the switch waits for one of them, as in a server forwarding in software
    /// ([LOSSLESS] Fig. 4). Default: none, the switch forwards at line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<HostCpu>,
}

fn default_switch_buffer() -> BufferConfig {
    BufferConfig::Dedicated { port_bytes: 4_000_000 }
}

/// Kind of the star topology's switch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchKind {
    /// Output-queued, with the `buffer` scheme (a commodity switch; a Linux bridge in the testbed).
    #[default]
    Bridge,
    /// daqnet's lossless software switch: a byte-capped queue per collector, round-robin.
    Daqring,
}

/// `[network.switch.daqring]`: the lossless software switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaqringConfig {
    /// Byte cap of each queue (a daqring per collector; one more per port for other traffic),
    /// in bytes (default 64 MiB). Frames beyond it are dropped and counted.
    #[serde(deserialize_with = "de_bytes")]
    pub queue_bytes: u64,
    /// Frames one queue may send per polling cycle ([LOSSLESS] §III-A.2); 0: no limit.
    pub burst_frames: u32,
    /// The simulator's polling cycle, in ns. With `burst_frames`, each daqring sends at most
    /// `burst_frames` frames per cycle: a rate limit of `burst_frames` × frame / cycle per
    /// collector, which keeps edge hosts with a slow bus from being overrun ([LOSSLESS] §V-C,
    /// Fig. 11(d)). 0 (default): no cycle; the queues share the line rate. The testbed's switch
    /// polls as fast as it can and takes no cycle.
    #[serde(deserialize_with = "de_ns")]
    pub poll_cycle_ns: u64,
}

impl Default for DaqringConfig {
    fn default() -> Self {
        DaqringConfig { queue_bytes: 64 << 20, burst_frames: 0, poll_cycle_ns: 0 }
    }
}

impl DaqringConfig {
    /// The simulator's rate limit of each daqring, in bit/s on the wire for frames of
    /// `wire_frame_bytes` (preamble and gap included), if the switch sets one.
    pub fn ring_rate_bps(&self, wire_frame_bytes: u64) -> Option<u64> {
        (self.burst_frames > 0 && self.poll_cycle_ns > 0).then(|| {
            (self.burst_frames as u128 * wire_frame_bytes as u128 * 8 * 1_000_000_000 / self.poll_cycle_ns as u128)
                as u64
        })
    }
}

/// `[network.edge]`: the edge hosts' receive path, where it is slower than their links
/// ([LOSSLESS] §V-C: PCIe gen1 buses behind dual-port 10GbE NICs with small on-chip buffers).
/// A frame reaching an edge host waits in its NIC's buffer and crosses the bus at `bus_bps`;
/// one that finds the buffer full is dropped (the report's `edge` drops). Edge hosts: every
/// host of a star or a two-tier network; on a parallel leaf-spine the readout units and the
/// racks, each rack one server whose switch joins its nodes (the document's prototype), so the
/// limit sits on the rack's uplinks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeHost {
    /// Rate frames cross the bus into the host, in bit/s (as on the wire).
    #[serde(deserialize_with = "de_bps")]
    pub bus_bps: u64,
    /// The NIC's receive buffer, in bytes.
    #[serde(deserialize_with = "de_bytes")]
    pub nic_buffer_bytes: u64,
    /// Only these edge hosts, by name (`node0`; a rack, `rack0`, on a parallel leaf-spine): one
    /// slow collector among fast ones. Empty (default): every edge host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// An access switch (readout group switch or top-of-rack switch) in a two-tier network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSwitch {
    /// Hosts attached to each such switch (the last switch may have fewer).
    pub hosts: u32,
    /// Rate of each uplink (one per core router), in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub uplink_bps: u64,
    /// Output buffer scheme.
    pub buffer: BufferConfig,
}

/// `[network.core]`: the core routers of a two-tier network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// Number of core routers; every access switch has one uplink to each, and each TCP
    /// connection is hashed onto one of them (per-flow ECMP).
    pub routers: u32,
    /// Output buffer scheme of each router.
    pub buffer: BufferConfig,
}

/// A deep-buffered router's buffer per port when the scenario does not say: 1.5 GB.
pub const DEEP_PORT_BYTES: u64 = 1_500_000_000;

/// Output buffer scheme of a switch ([ATLAS-DC] §5.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case", try_from = "raw::RawBuffer")]
pub enum BufferConfig {
    /// Each output port has its own buffer: a frame is dropped when it does not fit.
    Dedicated {
        /// Buffer per output port, in bytes (Ethernet frames, header to FCS).
        port_bytes: u64,
    },
    /// Groups of `ports_per_pool` consecutive output ports share a pool; each port may also
    /// hold at most `port_cap_bytes`.
    Shared {
        /// Size of each shared pool, in bytes.
        pool_bytes: u64,
        /// Output ports sharing one pool.
        ports_per_pool: u32,
        /// Most any one port may hold, in bytes; at or above `pool_bytes` the memory is fully
        /// shared (only the pool limits a port).
        port_cap_bytes: u64,
    },
    /// A deep-buffered router ([ATLAS-DC]: 1.5 GB per line-card module): per-port buffers of
    /// `port_bytes`, large enough that drops are not expected.
    Deep {
        /// Buffer per output port, in bytes.
        port_bytes: u64,
    },
}

/// `[network.ecn]`: how a switch output port marks ECN-capable frames with Congestion
/// Experienced (RFC 3168) instead of waiting for its buffer to overflow. The queue a frame finds
/// on arrival decides (the instantaneous queue, as DCTCP's switches; RFC 8257 §3.1); frames that
/// are not ECN-capable pass unmarked, and are dropped only when the buffer is full, as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "marking", rename_all = "snake_case", try_from = "raw::RawEcn")]
pub enum EcnMarking {
    /// DCTCP's step: mark every frame that finds more than a threshold K queued ahead of it.
    Step {
        /// K in bytes (frames, header to FCS), or
        #[serde(skip_serializing_if = "Option::is_none")]
        threshold_bytes: Option<u64>,
        /// K in frames: exactly one of the two.
        #[serde(skip_serializing_if = "Option::is_none")]
        threshold_packets: Option<u32>,
    },
    /// RED's ramp on the instantaneous queue: no mark below `min_bytes`, a mark with probability
    /// rising linearly to `max_probability` at `max_bytes`, every frame above it.
    Red {
        /// Below this many bytes queued, no mark.
        min_bytes: u64,
        /// At and above this many bytes queued, every frame is marked.
        max_bytes: u64,
        /// Probability of a mark just below `max_bytes`, in (0, 1].
        max_probability: f64,
    },
}

/// Congestion control algorithm of the simulated TCP senders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CongestionControl {
    /// Reno AIMD (slow start, congestion avoidance, halving on loss); with `sack = false` loss
    /// recovery is NewReno (RFC 6582), as in the [ATLAS-DC] simulation model.
    Newreno,
    /// CUBIC (RFC 9438, as in Linux; what the measured ATLAS system ran).
    Cubic,
    /// A fixed congestion window of `static_cwnd_segments`, never changed ([DAQ-NETS]'s remedy).
    Static,
    /// DCTCP (RFC 8257, as Linux `tcp_dctcp`): Reno's growth; on ECN echoes the window shrinks
    /// once per window by α/2, α the fraction of marked data (g = 1/16); on loss it halves.
    /// It negotiates ECN whatever `ecn` says, and its receivers echo every CE change at once.
    Dctcp,
}

/// Where each host's kernel ticks fall, for TCP timers that tick (`timer_hz` > 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TickPhase {
    /// Every host ticks at the same instants: timers armed alike on different hosts fire at
    /// the same nanosecond.
    Shared,
    /// Each host ticks at its own phase, drawn from the run seed, as separate machines do (each
    /// kernel's tick follows its own timer interrupt): timers armed alike on different hosts
    /// fire up to one tick apart.
    PerHost,
}

/// `[network.tcp]`: the TCP model (Linux is the reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// `newreno`, `cubic` or `static`.
    pub congestion_control: CongestionControl,
    /// Congestion window, in segments, when `congestion_control = "static"`.
    pub static_cwnd_segments: u32,
    /// Initial congestion window, in segments (Linux: 10).
    pub initial_cwnd_segments: u32,
    /// Selective acknowledgements and SACK-based loss recovery (on by default, like Linux).
    pub sack: bool,
    /// Minimum retransmission timeout, in ns (Linux: 200 ms).
    #[serde(deserialize_with = "de_ns")]
    pub min_rto_ns: u64,
    /// Maximum retransmission timeout after back-off, in ns (Linux: 120 s).
    #[serde(deserialize_with = "de_ns")]
    pub max_rto_ns: u64,
    /// Retransmission timeout before any RTT sample, in ns (RFC 6298: 1 s).
    #[serde(deserialize_with = "de_ns")]
    pub initial_rto_ns: u64,
    /// Duplicate ACKs (or SACKed segments above a hole) that mark a segment lost.
    pub dupack_threshold: u32,
    /// Delayed acknowledgements: ACK every second full segment, or when the timer expires.
    pub delayed_ack: bool,
    /// Delayed-ACK timer, in ns (Linux: 40 ms). It is capped at half of `min_rto_ns` so that on a
    /// lossless path the delayed-ACK timer can never be what fires a retransmission timeout —
    /// unless `min_rto_ns` is within two `timer_hz` ticks, where both timers land on the same
    /// tick (as in Linux: 5 ms at 250 Hz).
    #[serde(deserialize_with = "de_ns")]
    pub delayed_ack_ns: u64,
    /// Segments acknowledged at once after a connection starts or sees out-of-order data
    /// (Linux quick-ACK mode: 16).
    pub quickack_segments: u32,
    /// Linux's interactive ("ping-pong") mode of delayed ACKs: an end that sends data within
    /// the delayed-ACK time of the data it last received (a collector's next request after a
    /// response) turns interactive (`tcp_event_data_sent`, `tcp_pingpong_thresh` = 1). Then it
    /// takes no quick ACKs, and a short segment it reads is not acknowledged at once but by its
    /// next data or the delayed-ACK timer (`__tcp_cleanup_rbuf`); the timer firing, or a
    /// duplicate segment, ends the mode. Off by default: against the testbed it fixes some
    /// heavy-loss points and misses others (docs/testbed-validation.md, "Heavy loss: where the simulator
    /// stands against Linux"); near an incast onset, run both settings.
    pub pingpong: bool,
    /// Limited transmit (RFC 3042): send new data on the first two duplicate ACKs.
    pub limited_transmit: bool,
    /// Restart from at most the initial window after an idle period longer than the RTO
    /// (Linux `tcp_slow_start_after_idle`, default on).
    pub slow_start_after_idle: bool,
    /// RACK loss detection (RFC 8985, Linux `tcp_recovery = 1`, default on): a segment is lost
    /// once a segment sent after it has been delivered and a reordering window has passed; it
    /// also detects lost retransmissions. Off, or with `sack = false` (as in Linux), segments are
    /// marked lost by the duplicate-ACK threshold.
    pub rack: bool,
    /// Tail-loss probe (RFC 8985, Linux `tcp_early_retrans = 3`, default on): with no ACK for
    /// 2·SRTT + 2 ms (2·SRTT + `min_rto_ns` when a single segment is out, as Linux ≥ 6.6), but
    /// never later than the RTO, send new data or resend the last segment so that a lost tail is
    /// repaired by SACK recovery instead of a timeout. Ignored with `sack = false`, as in Linux.
    pub tail_loss_probe: bool,
    /// F-RTO (RFC 5682, Linux `tcp_frto`, default on): after a retransmission timeout outside
    /// recovery, the first ACK that advances sends new data instead of more retransmissions;
    /// if the next ACK shows data sent before the timeout arrived, the timeout was spurious and
    /// the window reduction is undone (`tcp_process_loss`).
    pub frto: bool,
    /// ECN (RFC 3168, Linux `tcp_ecn = 1` at both ends): new data is sent ECN-capable; a
    /// receiver that gets a CE mark sets ECE on its ACKs until a segment with CWR arrives; the
    /// sender then reduces its window once per window of data, as for a loss but without
    /// retransmitting (the CWR state). Off by default; `congestion_control = "dctcp"` uses ECN
    /// whatever this says. Marks come from `[network.ecn]`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
    /// Tick rate of the senders' and receivers' TCP timers, in Hz (Linux `CONFIG_HZ`: 1000 on
    /// Red Hat-like kernels, 250 on Debian and Ubuntu). Linux arms the retransmission, probe,
    /// reordering and delayed-ACK timers in whole ticks and fires them on a later tick (its
    /// timer wheel never fires early), so at 250 Hz a "2 ms" probe or reordering timer fires
    /// 4–8 ms later. 0: exact timers.
    pub timer_hz: u32,
    /// `shared` or `per_host`: whether the hosts' ticks fall at the same instants. With a shared
    /// phase, senders that lose their tails in the same round all probe and retransmit at the
    /// same nanosecond and meet a full switch queue together; separate machines do not
    /// (docs/testbed-validation.md, "Timers in step").
    pub tick_phase: TickPhase,
}

/// `[run]`: what to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Run {
    /// Events measured (after warm-up).
    pub events: u64,
    /// Events assigned before measurement starts; they run but are not counted.
    pub warmup_events: u64,
    /// Seed of every pseudo-random choice (policy, sizes, fractions). Same seed, same result.
    pub seed: u64,
    /// Stop after this much simulated (sim) or wall (run, testbed) time, in seconds; events not
    /// built by then are reported as abandoned.
    #[serde(deserialize_with = "de_secs")]
    pub time_limit_s: f64,
}

/// `[deploy]`: addresses, transport and limits of a real run. The simulator ignores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deploy {
    /// Transport between roles: `"tcp"` (one persistent connection per collector–readout pair).
    pub transport: Transport,
    /// Address the supervisor listens on and every other role connects to. Port 0 (the default,
    /// on loopback) lets `daqnet run` pick a free port; give a real address for several hosts.
    pub supervisor: String,
    /// Listen address of each readout unit, one per unit in order; empty (the default) means
    /// loopback with a free port. Collectors learn the addresses from the supervisor.
    pub readouts: Vec<String>,
    /// Linux congestion control set on every data socket (`TCP_CONGESTION`), e.g. `"cubic"` or
    /// `"reno"`. Set per socket because new network namespaces here default to bbr.
    pub tcp_congestion: String,
    /// How long a role waits for its peers at start-up before giving up and naming who is
    /// missing, in ms.
    #[serde(deserialize_with = "de_ms")]
    pub startup_timeout_ms: u64,
    /// Every connection carries a heartbeat frame at least this often, in ms.
    #[serde(deserialize_with = "de_ms")]
    pub heartbeat_ms: u64,
    /// A peer silent for this long (no data, no heartbeat) is declared hung, in ms. Under heavy
    /// incast, TCP back-off alone can silence a connection for seconds: raise it for such runs.
    #[serde(deserialize_with = "de_ms")]
    pub peer_timeout_ms: u64,
    /// Largest frame accepted on any connection, in bytes; a bigger one closes the connection.
    #[serde(deserialize_with = "de_bytes")]
    pub max_frame_bytes: u64,
    /// Bytes of generated fragments each readout unit may hold; when full, its generator waits
    /// for the supervisor to clear events (back-pressure, never a drop).
    #[serde(deserialize_with = "de_bytes")]
    pub readout_buffer_bytes: u64,
    /// Check every payload byte of every fragment against its expected pattern (headers —
    /// event, source, index, size — are always checked). Off only to measure what it costs.
    pub verify_payload: bool,
    /// Identifies the run in every role's hello, so that a process of another run (or any other
    /// local process) cannot take a role's place. `daqnet run` draws a random one; on several
    /// hosts give every role the same value. 0: none.
    pub run_id: u64,
}

/// Transport of a real run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// TCP with `TCP_NODELAY` and length-prefixed frames.
    Tcp,
}

impl Default for Deploy {
    fn default() -> Self {
        Deploy {
            transport: Transport::Tcp,
            supervisor: "127.0.0.1:0".into(),
            readouts: Vec::new(),
            tcp_congestion: "cubic".into(),
            startup_timeout_ms: 10_000,
            heartbeat_ms: 200,
            peer_timeout_ms: 1_000,
            max_frame_bytes: 64 << 20,
            readout_buffer_bytes: 16 << 20,
            verify_payload: true,
            run_id: 0,
        }
    }
}

impl Default for System {
    fn default() -> Self {
        System {
            readout_units: 160,
            fragments_per_unit: 12,
            fragment_size: FragmentSize::Fixed { bytes: 1100 },
            nodes: 39,
            pus_per_node: 24,
            credits_per_node: Credits::Limited(480),
            processing_time_ns: 100_000_000,
            collect_fraction: 1.0,
            roi_steps: Vec::new(),
            request_bytes: 64,
            readout_service_ns: 50_000,
            readout_service_jitter_ns: 400_000,
            readout_on_nodes: false,
            supervisor: SupervisorConfig::default(),
        }
    }
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            rate_hz: Rate::Hz(750.0),
            policy: Policy::Fcfs,
            control_delay_ns: 50_000,
            startup: StartupOrder::Shuffled,
        }
    }
}

impl Default for Network {
    fn default() -> Self {
        Network {
            topology: Topology::TwoTier,
            mtu_bytes: 1500,
            readout_link_bps: 1_000_000_000,
            node_link_bps: 1_000_000_000,
            link_delay_ns: 500,
            host_delay_ns: 40_000,
            host_burst_ns: 0,
            edge: None,
            host_cpu: None,
            ecn: None,
            flow_control: None,
            rc: None,
            switch: None,
            readout_switch: None,
            rack_switch: None,
            core: None,
            fabric: None,
            tcp: TcpConfig::default(),
        }
    }
}

impl Network {
    /// Default star switch: a 4 MB dedicated buffer per port.
    pub fn default_switch() -> SwitchConfig {
        SwitchConfig {
            kind: SwitchKind::Bridge,
            buffer: default_switch_buffer(),
            daqring: DaqringConfig::default(),
            cpu: None,
        }
    }

    /// Default readout group switch ([ATLAS-DC] §4.1): 16 hosts, 10GbE uplinks, under-subscribed,
    /// with generous dedicated buffers.
    pub fn default_readout_switch() -> AccessSwitch {
        AccessSwitch {
            hosts: 16,
            uplink_bps: 10_000_000_000,
            buffer: BufferConfig::Dedicated { port_bytes: 4_000_000 },
        }
    }

    /// Default top-of-rack switch: [ATLAS-DC] "Switch 1", 600 kB dedicated per port.
    pub fn default_rack_switch() -> AccessSwitch {
        AccessSwitch { hosts: 40, uplink_bps: 10_000_000_000, buffer: BufferConfig::Dedicated { port_bytes: 600_000 } }
    }

    /// Default core: two deep-buffered routers.
    pub fn default_core() -> CoreConfig {
        CoreConfig { routers: 2, buffer: BufferConfig::Deep { port_bytes: DEEP_PORT_BYTES } }
    }

    /// TCP maximum segment size in bytes for this MTU (IPv4 20 + TCP 20 + timestamps 12).
    pub fn mss_bytes(&self) -> u32 {
        self.mtu_bytes.saturating_sub(52)
    }

    /// Bytes a full-sized frame takes on the wire: the MTU plus Ethernet's header, FCS,
    /// preamble and inter-frame gap (38 bytes).
    pub fn wire_frame_bytes(&self) -> u64 {
        self.mtu_bytes as u64 + 38
    }

    /// Share of a link's rate that full-sized packets carry as payload: the MSS over a full
    /// frame on the wire, or with `[network.rc]` the path MTU over its RoCEv2 frame.
    pub fn payload_share(&self) -> f64 {
        match self.rc.as_ref().and_then(|rc| rc.path_mtu(self.mtu_bytes)) {
            Some(mtu) => mtu as f64 / (mtu + rc::ROCE_HEADER_BYTES + 38) as f64,
            None => self.mss_bytes() as f64 / self.wire_frame_bytes() as f64,
        }
    }
}

impl TcpConfig {
    /// Whether connections negotiate ECN: `ecn`, or DCTCP (which always does).
    pub fn uses_ecn(&self) -> bool {
        self.ecn || self.congestion_control == CongestionControl::Dctcp
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            congestion_control: CongestionControl::Newreno,
            static_cwnd_segments: 2,
            initial_cwnd_segments: 10,
            sack: true,
            min_rto_ns: 200_000_000,
            max_rto_ns: 120_000_000_000,
            initial_rto_ns: 1_000_000_000,
            dupack_threshold: 3,
            delayed_ack: true,
            delayed_ack_ns: 40_000_000,
            quickack_segments: 16,
            pingpong: false,
            limited_transmit: true,
            slow_start_after_idle: true,
            rack: true,
            tail_loss_probe: true,
            frto: true,
            ecn: false,
            timer_hz: 1000,
            tick_phase: TickPhase::PerHost,
        }
    }
}

impl Default for Run {
    fn default() -> Self {
        Run { events: 2000, warmup_events: 500, seed: 1, time_limit_s: 600.0 }
    }
}

impl Scenario {
    /// Fills in the default sections the topology needs but the file left out
    /// (`switch` for a star; `readout_switch`, `rack_switch` and `core` for two tiers).
    /// Sections that do not belong to the topology are left for [`Scenario::validate`] to report.
    pub fn with_defaults(mut self) -> Self {
        let n = &mut self.network;
        match n.topology {
            Topology::Star => {
                n.switch.get_or_insert_with(Network::default_switch);
            }
            Topology::TwoTier => {
                n.readout_switch.get_or_insert_with(Network::default_readout_switch);
                n.rack_switch.get_or_insert_with(Network::default_rack_switch);
                n.core.get_or_insert_with(Network::default_core);
            }
            // Its sizes must match [system]'s: no default could.
            Topology::ParallelLeafSpine => {}
        }
        // A role of a real run may start in another directory; the path names the same file.
        if let Some(b) = self.farm.as_mut().and_then(|f| f.from_builder.as_mut()) {
            b.events = std::path::absolute(&b.events).unwrap_or_else(|_| b.events.clone());
        }
        self
    }

    /// Total processing units.
    pub fn total_pus(&self) -> u32 {
        self.system.nodes * self.system.pus_per_node
    }

    /// The names of the hosts the network joins, in their order: the SFC and workers of a
    /// sub-farm, DAQPIPE's nodes, or the readout units and nodes.
    pub fn host_names(&self) -> Vec<String> {
        use crate::ids::{NodeId, ReadoutId, WorkerId};
        if let Some(f) = &self.farm {
            std::iter::once("sfc".to_string()).chain((0..f.workers).map(|w| WorkerId(w).host())).collect()
        } else if let Some(p) = &self.pipe {
            (0..p.nodes).map(|n| NodeId(n).host()).collect()
        } else {
            let s = &self.system;
            let readout_hosts = if s.readout_on_nodes { 0 } else { s.readout_units };
            (0..readout_hosts).map(|r| ReadoutId(r).host()).chain((0..s.nodes).map(|n| NodeId(n).host())).collect()
        }
    }

    /// The system's readout units, nodes and processing units, and their numbering. The
    /// scenario must be valid (at least one of each).
    pub fn layout(&self) -> crate::ids::Layout {
        crate::ids::Layout::new(self.system.readout_units, self.system.nodes, self.system.pus_per_node)
    }

    /// Payload bytes one readout unit holds per event when every fragment has its nominal size.
    pub fn nominal_unit_bytes(&self) -> u64 {
        let per_fragment = match self.system.fragment_size {
            FragmentSize::Fixed { bytes } => bytes as u64,
            FragmentSize::LognormalNormal { base_bytes, .. } => base_bytes as u64,
        };
        per_fragment * self.system.fragments_per_unit as u64
    }

    /// Payload bytes of a full event when every fragment has its nominal size.
    pub fn nominal_event_bytes(&self) -> u64 {
        self.nominal_unit_bytes() * self.system.readout_units as u64
    }

    /// The scenario as TOML text (all fields, defaults filled in).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a scenario always serializes")
    }
}

pub use default_text::DEFAULT_SCENARIO_TOML;
mod default_text;
