//! The run report every substrate writes (`report.json`): its schema here (top-level field
//! names are a contract: add fields, rename none); [`measure`]: the one measurement of the
//! measured part every substrate uses; [`csv`]: the per-event rows; [`render`]: the summary a
//! person reads.

pub mod csv;
pub mod measure;
mod render;

pub use measure::{steady_rate, Measure, Measured, Track};
use serde::{Deserialize, Serialize};

/// Events that were assigned but not built, by reason. Nothing disappears silently.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotBuilt {
    /// Collection exceeded a collection timeout.
    pub timed_out: u64,
    /// Data were lost (a role died, a fragment failed verification).
    pub lost: u64,
    /// Still in progress when the run ended (time limit reached).
    pub abandoned: u64,
}

/// Data-collection latency statistics in milliseconds (first request of an event → its last
/// fragment), with an HDR histogram of the same samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    /// Mean.
    pub mean: f64,
    /// 1st percentile.
    pub p1: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
    /// Share of events that took at least 100 ms (a sign of retransmission timeouts).
    pub share_ge_100ms: f64,
    /// HDR histogram of the latencies in microseconds (3 significant digits), V2 + DEFLATE,
    /// base64: decode with any HdrHistogram library.
    pub hdr_us_base64: String,
}

/// TCP counters summed over every connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// Segments retransmitted (fast retransmit, recovery and after timeouts).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Loss recoveries entered through duplicate ACKs / SACK (fast retransmit).
    #[serde(default)]
    pub fast_recoveries: u64,
    /// Tail-loss probes sent (Linux `TCPLossProbes`). With one segment outstanding a probe waits
    /// 2·SRTT plus the minimum RTO, so a tail loss repaired by a probe stalls about as long as a
    /// timeout without counting as one.
    #[serde(default)]
    pub loss_probes: u64,
    /// Fast recoveries that ended in a retransmission timeout: the first timeout of a series
    /// striking while in recovery (Linux `TCPSackRecoveryFail` + `TCPRenoRecoveryFail`).
    #[serde(default)]
    pub recovery_fails: u64,
    /// Retransmissions found lost again, by RACK or by a timeout (Linux `TCPLostRetransmit`).
    #[serde(default)]
    pub lost_retransmits: u64,
    /// (sim only; Linux has no such counter) Duplicate ACKs sent: pure ACKs repeating the
    /// acknowledgement number of the end's previous segment — what Wireshark flags
    /// `tcp.analysis.duplicate_ack`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dup_acks: u64,
    /// Window reductions undone as unneeded: every retransmission reported as a duplicate
    /// (D-SACK), or a timestamp echo older than the first retransmission (Linux
    /// `TCPFullUndo` + `TCPPartialUndo` + `TCPDSACKUndo` + `TCPLossUndo`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub undos: u64,
    /// Retransmission timeouts that F-RTO found spurious (Linux `TCPSpuriousRTOs`): after the
    /// timeout, new data was sent instead of retransmissions and the ACKs showed that data sent
    /// before the timeout had arrived.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spurious_timeouts: u64,
    /// Data segments that reached their receiver marked Congestion Experienced (Linux
    /// `IpExtInCEPkts`, counted at the receiving hosts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ce_received: u64,
    /// Segments acknowledged or SACKed by ACKs that carried an ECN echo (Linux
    /// `TCPDeliveredCE`): the marks as the senders learned of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delivered_ce: u64,
    /// (sim only; Linux has no such counter) Window reductions an ECN echo started (the CWR
    /// state entered), at most one per window of data.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ecn_reductions: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::ops::AddAssign<&TcpCounters> for TcpCounters {
    fn add_assign(&mut self, o: &TcpCounters) {
        self.retransmits += o.retransmits;
        self.timeouts += o.timeouts;
        self.fast_recoveries += o.fast_recoveries;
        self.loss_probes += o.loss_probes;
        self.recovery_fails += o.recovery_fails;
        self.lost_retransmits += o.lost_retransmits;
        self.dup_acks += o.dup_acks;
        self.undos += o.undos;
        self.spurious_timeouts += o.spurious_timeouts;
        self.ce_received += o.ce_received;
        self.delivered_ce += o.delivered_ce;
        self.ecn_reductions += o.ecn_reductions;
    }
}

/// One switch output port.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortStats {
    /// Port name, e.g. `rack0->node3`.
    pub name: String,
    /// Frames dropped at this port.
    pub drops: u64,
    /// Most bytes queued at once.
    pub peak_bytes: u64,
    /// Frames sent.
    #[serde(default)]
    pub frames: u64,
    /// ECN-capable frames it marked Congestion Experienced.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub marks: u64,
    /// Pause frames this port sent back over its link (`[network.flow_control]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_sent: u64,
    /// Pause frames that reached this port, stopping or resuming it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_received: u64,
    /// Time it was paused, in ns (summed over its priorities).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paused_ns: u64,
    /// Under flow control, the most bytes this port's buffer held at once of the frames that
    /// came in over its link (one priority): how much of the headroom, or of the credits, was
    /// used.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_ingress_bytes: u64,
}

/// Link-level flow control over a run (`[network.flow_control]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowStats {
    /// `"pause"` (802.3x) or `"pfc"` (802.1Qbb).
    pub mode: String,
    /// Pause frames sent, by switches and edge NICs (XON included).
    pub pause_frames: u64,
    /// Pause frames that reached the hosts' NICs.
    pub host_pause_received: u64,
    /// Time the hosts' NICs were paused, summed over hosts, in ns.
    pub host_paused_ns: u64,
    /// Links on a cycle of buffer dependencies (a PFC deadlock risk), by port name; none when
    /// every path is free of cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_dependency_cycle: Option<Vec<String>>,
}

/// The message transport over a run (`[network.rc]`): what the queue pairs sent and how often
/// they went back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RcCounters {
    /// Data packets sent, retransmissions included.
    pub data_packets: u64,
    /// Data packets sent again after going back.
    pub retransmitted_packets: u64,
    /// ACKs the responders sent.
    pub acks: u64,
    /// NAKs (packet sequence errors) the responders sent.
    pub naks: u64,
    /// Times a requester went back after a NAK.
    pub go_back_n: u64,
    /// Times a requester went back after its ACK timeout.
    pub timeouts: u64,
}

impl std::ops::AddAssign<&RcCounters> for RcCounters {
    fn add_assign(&mut self, o: &RcCounters) {
        self.data_packets += o.data_packets;
        self.retransmitted_packets += o.retransmitted_packets;
        self.acks += o.acks;
        self.naks += o.naks;
        self.go_back_n += o.go_back_n;
        self.timeouts += o.timeouts;
    }
}

/// Switch counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SwitchStats {
    /// Frames dropped in all switches.
    pub drops: u64,
    /// Frames marked Congestion Experienced in all switches (`[network.ecn]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub marks: u64,
    /// Pause frames the switches sent (`[network.flow_control]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_sent: u64,
    /// Time the switches' ports were paused, summed, in ns.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paused_ns: u64,
    /// Per output port.
    pub ports: Vec<PortStats>,
}

/// The hosts' cores (`[network.host_cpu]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpuStats {
    /// Frames dropped at a full receive ring, all cores.
    pub drops: u64,
    /// Interrupts, all cores.
    pub interrupts: u64,
    /// Per core, host by host.
    pub cores: Vec<CoreStats>,
}

/// One core of a host (`node0 core1`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreStats {
    /// `host coreK`.
    pub name: String,
    /// Frames it had processed by the end of the run.
    pub frames: u64,
    /// Frames dropped at its full receive ring.
    pub drops: u64,
    /// Interrupts it took.
    pub interrupts: u64,
    /// Time it had spent on interrupts and frames by the end of the run, s.
    pub busy_s: f64,
    /// Most frames its ring held at once.
    pub peak_frames: u64,
}

/// The run report (`report.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// `"sim"`, `"run"` or `"testbed"`.
    pub substrate: String,
    /// The scenario file that ran.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Events built in the measured part.
    pub events_built: u64,
    /// Events assigned in the measured part but not built, by reason.
    pub events_not_built: NotBuilt,
    /// Simulated (sim) or wall (run, testbed) seconds of the measured part: from the first
    /// measured event's assignment to the last measured event's completion.
    pub duration_s: f64,
    /// Measured events built per second.
    pub event_rate_hz: f64,
    /// Event payload bytes collected per second, as bits per second (no protocol overheads).
    pub goodput_bps: f64,
    /// Data-collection latency.
    pub latency_ms: LatencyMs,
    /// TCP counters (whole run, warm-up included).
    pub tcp: TcpCounters,
    /// Where the TCP counters come from: `"model"` (the simulator's), `"nstat"` (the testbed's
    /// hosts, all counters), `"tcp_info"` (a real run: retransmissions and timeouts of the
    /// readout units' data sockets only, or a sub-farm SFC's; the other counters are not
    /// measured); empty: none
    /// measured.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tcp_source: String,
    /// Switch drops and occupancy (whole run, warm-up included).
    pub switch: SwitchStats,
    /// (sim, DCTCP) The senders' α at the end of the run, mean over those that sent data: the
    /// share of their data the network marked lately, as they estimate it (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dctcp_alpha: Option<f64>,
    /// (sim, with `[network.flow_control]`) Pause frames, hosts paused, and any cycle of buffer
    /// dependencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowStats>,
    /// (sim, with `[network.rc]`) The queue pairs' packets, ACKs, NAKs and returns; `tcp` is
    /// then all zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rc: Option<RcCounters>,
    /// (sim, with `[network.edge]`) The edge hosts' receive path: drops in their NICs' buffers
    /// and their occupancy, per host (`node3 nic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<SwitchStats>,
    /// (sim, with `[network.host_cpu]`) The hosts' cores: frames, ring drops, interrupts, busy
    /// time, per core (`node3 core0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpuStats>,
    /// Wall-clock seconds of the whole run.
    pub wall_s: f64,
    /// (sim only) Collision events simulated per wall second, warm-up included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_events_per_s: Option<f64>,
    /// daqnet version that wrote the report.
    #[serde(default)]
    pub daqnet_version: String,
    /// (sim only) Simulator work: scheduler events and packets handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_work: Option<SimWork>,
    /// (run, testbed) Per node: credits, the most fragments ever outstanding, verification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeStats>,
    /// (run, testbed) What went wrong: a role lost, a fragment that failed verification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultRecord>,
    /// (run, testbed) The run was stopped early (SIGINT or SIGTERM): the report covers what was
    /// done until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// (testbed) Kernel TCP counters of every host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostStats>,
    /// (sub-farm scenarios) The SFC's queues and each worker's share; in such a report an
    /// event is "built" when its verdict is back at the SFC (under `push`, none comes back:
    /// when the worker has processed it), the latency is the dispatch latency (event at the
    /// SFC -> verdict back), and the goodput is the event payload sent to workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm: Option<FarmStats>,
    /// (DAQPIPE scenarios) Per-node send and receive bandwidth; in such a report an event is
    /// built when its builder unit has every fragment, the latency is from its assignment to
    /// then, and the goodput is the fragment payload received by all builder units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe: Option<PipeStats>,
    /// (parallel leaf-spine scenarios) What the fabric's plan promised, to set beside the goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricStats>,
    /// The scenario as run, every field resolved (TOML).
    #[serde(default)]
    pub resolved_scenario: String,
}

/// What a sub-farm run measured beyond the common fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FarmStats {
    /// `v1`, `v2` or `v3`.
    pub implementation: String,
    /// `tokens`, `round_robin` or `push`.
    pub dispatch: String,
    /// Events that reached the SFC when no worker could take them at once.
    pub waited_for_token: u64,
    /// Most events waiting in the SFC's event queue.
    pub peak_event_queue: u64,
    /// Mean depth of the event queue as seen by arriving events.
    pub mean_event_queue: f64,
    /// Most tokens waiting in the token queue.
    pub peak_token_queue: u64,
    /// Mean depth of the token queue as seen by arriving events.
    pub mean_token_queue: f64,
    /// Event and token queue depths over the run: (seconds, events, tokens), about 100 samples.
    pub queue_depth: Vec<(f64, u64, u64)>,
    /// Tokens or verdicts that broke the protocol (unknown worker, event never sent).
    pub protocol_errors: u64,
    /// Per-worker payload throughput over the measured part, bit/s: spread over workers.
    pub worker_bps: Spread,
    /// Mean over workers of the share of the run a worker spent not processing.
    pub idle_fraction: f64,
    /// Per worker.
    pub workers: Vec<WorkerStats>,
}

/// A parallel leaf-spine's plan (`daqnet plan`), as goodput: link bandwidth times the payload
/// share of a full frame.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FabricStats {
    /// `controller` or `ecmp`: how flows were placed.
    pub assignment: String,
    /// [LOSSLESS] eq. (1), bounded by the nodes' links.
    pub bound_goodput_bps: f64,
    /// This placement's event building, collectors max-min fair.
    pub planned_goodput_bps: f64,
    /// Elements taken down during the run, and what each cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FabricFault>,
    /// (testbed) The spines' flow counters against the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spine_check: Option<SpineCheck>,
}

/// (testbed) What the spines' OpenFlow counters say of the placement: every packet a spine sent
/// towards a node crossed a spine that some placement of the run gave one of that node's flows,
/// and every spine the first placement used for a node carried some of its data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpineCheck {
    /// Spines read.
    pub spines: u64,
    /// Packets they sent towards nodes.
    pub packets: u64,
    /// What disagrees with the plan (empty: the counters confirm it).
    pub off_plan: Vec<String>,
}

/// One fabric element failing during a run, and the controller's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FabricFault {
    /// `plane1`, `p0-spine1` or `p0-leaf2:spine1`.
    pub element: String,
    /// When it failed, in seconds from the start of the run.
    pub at_s: f64,
    /// (testbed) When the controller first heard of it from a switch's port status, in seconds
    /// from the start; the simulator's controller hears at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_s: Option<f64>,
    /// When the controller's new rules were in place, in seconds from the start; `None` if no
    /// route was left for some flow (`error` says which).
    pub rerouted_s: Option<f64>,
    /// Flows the controller moved.
    pub flows_moved: u64,
    /// Frames sent into the failed element's links after it failed (lost).
    pub frames_lost: u64,
    /// (sim) What the failure cost the event builder; a testbed shows it in the timeouts and
    /// the latency, not per failure (its events are not timed against the failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<FaultCost>,
    /// Why the controller could not re-plan, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What one fabric failure cost, as the simulator sees every frame and event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultCost {
    /// Events caught by the failure: built after it, assigned before the new rules were in place.
    pub events_hit: u64,
    /// Data-collection latency of the slowest of them, in ms.
    pub slowest_hit_ms: f64,
    /// From the failure until the last event caught by it was built, in ms: after that the
    /// system runs on the new plan alone.
    pub recovered_after_ms: f64,
}

/// What a DAQPIPE run measured beyond the common fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PipeStats {
    /// Nodes.
    pub nodes: u32,
    /// `event_building` or a synthetic pattern.
    #[serde(default)]
    pub pattern: String,
    /// `round_robin` or `simple`.
    pub scheduler: String,
    /// Pulls a builder unit keeps outstanding (`round_robin`).
    pub parallel_transfers: u32,
    /// Fragment payload each node's readout unit sent to other nodes, bit/s over the measured
    /// part: spread over nodes (its own builder unit's fragment crosses no link and is left out).
    pub send_bps: Spread,
    /// Fragment payload each node's builder unit received from other nodes, bit/s: spread over
    /// nodes.
    pub recv_bps: Spread,
    /// Per node: (send, receive) bit/s.
    pub per_node: Vec<(f64, f64)>,
    /// Fragment payload a node receives from the others in steady state, bit/s: from the
    /// rate at which the middle 80 % of the measured events were built (the slope of events
    /// built against time) (the run's start and
    /// end, when not every builder pulls, left out); in a synthetic pattern, data received
    /// per receiving node — the figure to compare across sizes
    /// ([LHCB-DAQPIPE] Fig. 8's scalability ratio). A run of fewer than four rounds (events
    /// in flight) has no steady state: then the mean of `per_node`'s receive bandwidths.
    pub steady_recv_bps: f64,
    /// Whether `steady_recv_bps` is the steady-state figure (else the run was too short).
    pub steady_state: bool,
    /// How the nodes talked: `sim`, or a real run's `tcp` or `mpi`.
    #[serde(default)]
    pub transport: String,
    /// Measured events built without the fragments of lost nodes.
    #[serde(default)]
    pub incomplete: u64,
    /// Real runs: fragments and data messages received whose payload was verified (key at both
    /// ends and length), warm-up included: every one that crossed the network.
    #[serde(default)]
    pub verified_payloads: u64,
    /// Fragments or data messages whose payload failed verification (key or length).
    #[serde(default)]
    pub bad_payloads: u64,
    /// Nodes lost during the run, with who noticed and when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_nodes: Vec<LostNode>,
}

/// A node of a pipe run that died: when it was killed (when the launcher killed it) and when
/// each other node noticed, seconds since the run's start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LostNode {
    /// The node.
    pub node: u32,
    /// When it was killed, if daqnet killed it (`daqnet pipe --kill`).
    pub killed_at_s: Option<f64>,
    /// (node, when it noticed), for every node that reported.
    pub noticed: Vec<(u32, f64)>,
}

/// Minimum, maximum, mean and coefficient of variation of a quantity over workers (or nodes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation over the mean (0 when the mean is 0).
    pub cv: f64,
}

impl Spread {
    /// The spread of `xs` (all zero when empty).
    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread::default();
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Spread {
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        }
    }
}

/// One sub-farm worker over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// The worker.
    pub worker: u32,
    /// Measured events it finished.
    pub events: u64,
    /// Their payload, as bit/s over the measured part.
    pub throughput_bps: f64,
    /// Share of the run it spent not processing.
    pub idle_fraction: f64,
}

/// Kernel TCP counters of one testbed host (its namespace's `nstat -asz`), whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostStats {
    /// Host, e.g. `r3` (readout unit 3), `c0` (collector node 0), `sup`.
    pub host: String,
    /// Retransmissions (`RetransSegs`), retransmission timeouts (`TCPTimeouts`, every one), fast
    /// recoveries (SACK and Reno) and tail-loss probes of the host's sockets.
    pub tcp: TcpCounters,
    /// Every non-zero `Tcp*` and `TcpExt*` counter, by `nstat` name.
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// Counters of one node's collector in a real run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStats {
    /// The node.
    pub node: u32,
    /// Its credits (`None`: unlimited).
    pub credits: Option<u32>,
    /// Most fragments requested and not yet received at once, counted at the sockets
    /// (independently of the credit pool): never above `credits`.
    pub peak_outstanding_fragments: u64,
    /// Fragments received and verified (event, source, size and payload).
    pub fragments_verified: u64,
    /// Fragments that failed verification.
    pub fragments_corrupt: u64,
}

/// Something that went wrong in a real run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// Seconds since the run started.
    pub at_s: f64,
    /// The role that failed, e.g. `readout 3` or `collector 0`.
    pub role: String,
    /// The role that noticed it (the same as `role` when a role reports its own fault).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub noticed_by: String,
    /// What happened.
    pub reason: String,
    /// Events not built because of it.
    pub lost_events: Vec<u64>,
}

/// Simulator work counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimWork {
    /// Scheduler events processed.
    pub scheduler_events: u64,
    /// Packets created (data segments, ACKs, requests).
    pub packets: u64,
    /// Simulated seconds in all (warm-up included).
    pub simulated_s: f64,
    /// TCP connections declared.
    #[serde(default)]
    pub connections: u64,
    /// Of those, the ones used, whose state was made (the simulator makes it on first use).
    #[serde(default)]
    pub connections_open: u64,
    /// Bytes of the open connections' state: the structures and what their queues allocated,
    /// at most (queues never shrink).
    #[serde(default)]
    pub connection_bytes: u64,
}

/// One built event, for the per-event CSV.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Event id.
    pub event: u64,
    /// Processing unit it was assigned to.
    pub pu: u32,
    /// Node of that unit.
    pub node: u32,
    /// Time of assignment by the supervisor, ns since the run started.
    pub assigned_ns: u64,
    /// Time the unit asked its collector for the data (start of data collection), ns.
    pub start_ns: u64,
    /// Time the last fragment arrived, ns.
    pub done_ns: u64,
    /// Data-collection latency, ns: `done_ns - start_ns`, less the processing between the steps
    /// of an event collected in several (`[[system.roi_step]]`). The CSV's `latency_ms`.
    pub latency_ns: u64,
    /// Payload bytes collected.
    pub bytes: u64,
    /// Whether it counts in the measured part (false during warm-up).
    pub measured: bool,
}

impl RunReport {
    /// Packets the transport sent again: TCP's retransmitted segments, or the queue pairs'
    /// (`[network.rc]`).
    pub fn retransmitted(&self) -> u64 {
        self.rc.as_ref().map_or(self.tcp.retransmits, |rc| rc.retransmitted_packets)
    }

    /// Times the transport's timer sent again: TCP's retransmission timeouts, or the queue
    /// pairs' ACK timeouts.
    pub fn transport_timeouts(&self) -> u64 {
        self.rc.as_ref().map_or(self.tcp.timeouts, |rc| rc.timeouts)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }
}
