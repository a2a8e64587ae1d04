//! The run report every substrate writes (`report.json`), and the
//! statistics that go into it. Top-level field names are a contract: add fields, rename none.

use crate::{EventId, Nanos, NodeId, PuId, Scenario, NS_PER_MS, NS_PER_S};
use base64::Engine;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
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

/// The histogram of a report: microseconds, 1 µs to an hour, 3 significant digits.
fn histogram_us() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

fn record_us(h: &mut Histogram<u64>, ns: Nanos) {
    h.saturating_record((ns / 1000).max(1));
}

fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("in-memory serialization");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

fn ms(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

impl LatencyMs {
    /// Statistics of latency samples in nanoseconds. Quantiles are exact order statistics
    /// (nearest rank), so they do not depend on the histogram's resolution.
    pub fn from_ns(samples: &[Nanos]) -> Self {
        if samples.is_empty() {
            return LatencyMs::default();
        }
        let mut v = samples.to_vec();
        v.sort_unstable();
        let q = |p: f64| ms(v[(((p * v.len() as f64).ceil() as usize).max(1) - 1).min(v.len() - 1)]);
        let sum: u128 = v.iter().map(|&x| x as u128).sum();
        let mut h = histogram_us();
        v.iter().for_each(|&x| record_us(&mut h, x));
        LatencyMs {
            mean: sum as f64 / v.len() as f64 / NS_PER_MS as f64,
            p1: q(0.01),
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            p99: q(0.99),
            max: ms(*v.last().expect("non-empty")),
            share_ge_100ms: v.iter().filter(|&&x| x >= 100 * NS_PER_MS).count() as f64 / v.len() as f64,
            hdr_us_base64: encode(&h),
        }
    }

    /// Statistics of a running summary: mean, maximum and share are exact; quantiles come from
    /// the histogram, to 3 significant digits.
    fn from_summary(s: &Summary) -> Self {
        if s.count == 0 {
            return LatencyMs::default();
        }
        let q = |p: f64| s.hist.value_at_quantile(p) as f64 / 1000.0;
        LatencyMs {
            mean: s.sum_ns as f64 / s.count as f64 / NS_PER_MS as f64,
            p1: q(0.01),
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            p99: q(0.99),
            max: ms(s.max_ns),
            share_ge_100ms: s.ge_100ms as f64 / s.count as f64,
            hdr_us_base64: encode(&s.hist),
        }
    }
}

/// Latency samples summarised in fixed memory.
#[derive(Debug, Clone)]
struct Summary {
    hist: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: Nanos,
    ge_100ms: u64,
}

/// How a [`Measure`] keeps latencies.
#[derive(Debug, Clone)]
enum Samples {
    /// Every sample (8 bytes per event): exact quantiles.
    Exact(Vec<Nanos>),
    /// A fixed-size summary: memory stays flat however long the run.
    Bounded(Box<Summary>),
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
}

/// Switch counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SwitchStats {
    /// Frames dropped in all switches.
    pub drops: u64,
    /// Per output port.
    pub ports: Vec<PortStats>,
}

impl SwitchStats {
    /// The summary's words: all drops, and the port with the most (then the fullest), if any.
    fn summary(&self) -> Option<String> {
        let p = self.ports.iter().max_by_key(|p| (p.drops, p.peak_bytes))?;
        Some(format!("{} (most at {}: {} drops, peak {} B)", self.drops, p.name, p.drops, p.peak_bytes))
    }
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
    /// (sim, with `[network.edge]`) The edge hosts' receive path: drops in their NICs' buffers
    /// and their occupancy, per host (`node3 nic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<SwitchStats>,
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

/// The rate at which events finished in steady state, per second: the least-squares slope of
/// the count of finished events against time over the middle 80 % of the completion times
/// `done` (sorted here), leaving out the run's start and end, when not every sender is busy.
/// A slope, not a count over a span, because events finish in bursts (every builder's credit
/// comes back at about the same time): a span that starts at a burst's first event counts the
/// whole burst but none of its time, which overstates the rate by up to a burst in the window
/// — above the line rate. `None` when the run has fewer than four rounds of `in_flight`
/// events, or no time passed.
pub fn steady_rate(done: &mut [Nanos], in_flight: usize) -> Option<f64> {
    done.sort_unstable();
    let n = done.len();
    let (a, b) = (n / 10, n * 9 / 10);
    if n < 4 * in_flight.max(1) || done[b - 1] == done[a] {
        return None;
    }
    let window = &done[a..b];
    let t = |x: Nanos| (x - window[0]) as f64 / NS_PER_S as f64;
    let k = window.len() as f64;
    let (mean_t, mean_i) = (window.iter().map(|&x| t(x)).sum::<f64>() / k, (k - 1.0) / 2.0);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, &x) in window.iter().enumerate() {
        let dt = t(x) - mean_t;
        sxy += dt * (i as f64 - mean_i);
        sxx += dt * dt;
    }
    (sxx > 0.0).then(|| sxy / sxx)
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
    /// Payload bytes collected.
    pub bytes: u64,
    /// Whether it counts in the measured part (false during warm-up).
    pub measured: bool,
}

impl EventRecord {
    /// CSV header matching [`EventRecord::csv_row`].
    pub const CSV_HEADER: &'static str = "event,pu,node,assigned_ns,start_ns,done_ns,latency_ms,bytes,measured";

    /// A CSV file of `records`, with header.
    pub fn to_csv(records: &[EventRecord]) -> String {
        let mut csv = String::from(Self::CSV_HEADER);
        csv.push('\n');
        for r in records {
            csv.push_str(&r.csv_row());
            csv.push('\n');
        }
        csv
    }

    /// Data-collection latency in ms (first request → last fragment).
    pub fn latency_ms(&self) -> f64 {
        (self.done_ns - self.start_ns) as f64 / NS_PER_MS as f64
    }

    /// One CSV line (no newline).
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{:.6},{},{}",
            self.event,
            self.pu,
            self.node,
            self.assigned_ns,
            self.start_ns,
            self.done_ns,
            self.latency_ms(),
            self.bytes,
            self.measured
        )
    }
}

/// One built event as a substrate saw it; times in ns since the run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Track {
    /// The event.
    pub event: EventId,
    /// The processing unit it was assigned to.
    pub pu: PuId,
    /// That unit's node.
    pub node: NodeId,
    /// When the supervisor assigned it.
    pub assigned: Nanos,
    /// When data collection started.
    pub started: Nanos,
    /// When its last fragment arrived.
    pub done: Nanos,
    /// Payload bytes collected.
    pub bytes: u64,
}

impl Track {
    /// Data-collection latency.
    pub fn latency(&self) -> Nanos {
        self.done - self.started
    }

    /// Its row in `events.csv`; events before `warmup` are not measured.
    pub fn record(&self, warmup: u64) -> EventRecord {
        EventRecord {
            event: self.event.0,
            pu: self.pu.0,
            node: self.node.0,
            assigned_ns: self.assigned,
            start_ns: self.started,
            done_ns: self.done,
            bytes: self.bytes,
            measured: self.event.0 >= warmup,
        }
    }
}

/// The measured part of a run, accumulated event by event: the one definition of latency,
/// duration and rates that every substrate uses. Events numbered below the warm-up are left
/// out; the order in which events are recorded does not matter.
#[derive(Debug, Clone)]
pub struct Measure {
    warmup: u64,
    samples: Samples,
    first_assigned: Option<Nanos>,
    last_done: Nanos,
    bytes: u64,
}

/// What [`Measure`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Measured events built.
    pub events_built: u64,
    /// From the first measured event's assignment to the last one's completion, seconds.
    pub duration_s: f64,
    /// Measured events built per second.
    pub event_rate_hz: f64,
    /// Payload bits per second.
    pub goodput_bps: f64,
    /// Data-collection latency.
    pub latency_ms: LatencyMs,
}

impl Measure {
    /// Nothing measured yet; events `0..warmup` will not count. Every latency is kept, so the
    /// quantiles are exact order statistics (8 bytes per event measured).
    pub fn new(warmup: u64) -> Self {
        Measure { warmup, samples: Samples::Exact(Vec::new()), first_assigned: None, last_done: 0, bytes: 0 }
    }

    /// As [`Measure::new`], in fixed memory: latencies go into the report's histogram (3
    /// significant digits), from which the quantiles are read; mean, maximum and the share of
    /// slow events stay exact. For runs bounded by time rather than by events.
    pub fn bounded(warmup: u64) -> Self {
        let summary = Summary { hist: histogram_us(), count: 0, sum_ns: 0, max_ns: 0, ge_100ms: 0 };
        Measure { samples: Samples::Bounded(Box::new(summary)), ..Measure::new(warmup) }
    }

    /// A built event.
    pub fn record(&mut self, t: &Track) {
        if t.event.0 < self.warmup {
            return;
        }
        match &mut self.samples {
            Samples::Exact(v) => v.push(t.latency()),
            Samples::Bounded(s) => {
                let l = t.latency();
                record_us(&mut s.hist, l);
                s.count += 1;
                s.sum_ns += l as u128;
                s.max_ns = s.max_ns.max(l);
                s.ge_100ms += (l >= 100 * NS_PER_MS) as u64;
            }
        }
        self.first_assigned = Some(self.first_assigned.map_or(t.assigned, |f| f.min(t.assigned)));
        self.last_done = self.last_done.max(t.done);
        self.bytes += t.bytes;
    }

    /// Measured events built so far.
    pub fn events_built(&self) -> u64 {
        match &self.samples {
            Samples::Exact(v) => v.len() as u64,
            Samples::Bounded(s) => s.count,
        }
    }

    /// The statistics (zero rates when nothing was built).
    pub fn finish(self) -> Measured {
        let duration_s = self.first_assigned.map_or(0, |f| self.last_done.saturating_sub(f)) as f64 / NS_PER_S as f64;
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        Measured {
            events_built: self.events_built(),
            duration_s,
            event_rate_hz: per_s(self.events_built() as f64),
            goodput_bps: per_s(self.bytes as f64 * 8.0),
            latency_ms: match &self.samples {
                Samples::Exact(v) => LatencyMs::from_ns(v),
                Samples::Bounded(s) => LatencyMs::from_summary(s),
            },
        }
    }
}

impl Measured {
    /// The statistics of `tracks` (events before `warmup` left out).
    pub fn from<'a>(tracks: impl IntoIterator<Item = &'a Track>, warmup: u64) -> Self {
        let mut m = Measure::new(warmup);
        tracks.into_iter().for_each(|t| m.record(t));
        m.finish()
    }
}

impl RunReport {
    /// A report of `substrate` running `scenario` (named `origin`), with the measured part
    /// filled in; the substrate adds its own counters.
    pub fn measured(substrate: &str, origin: &str, scenario: &Scenario, m: Measured) -> Self {
        RunReport {
            substrate: substrate.into(),
            scenario: origin.into(),
            seed: scenario.run.seed,
            events_built: m.events_built,
            duration_s: m.duration_s,
            event_rate_hz: m.event_rate_hz,
            goodput_bps: m.goodput_bps,
            latency_ms: m.latency_ms,
            daqnet_version: env!("CARGO_PKG_VERSION").into(),
            resolved_scenario: scenario.to_toml(),
            ..Default::default()
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The TCP line of the summary: only what was measured.
    fn tcp_row(&self) -> String {
        let t = &self.tcp;
        match self.tcp_source.as_str() {
            "" => "not measured".into(),
            "tcp_info" => format!(
                "{} retransmits, {} timeouts (TCP_INFO of the {} data sockets; recoveries and probes not measured)",
                t.retransmits,
                t.timeouts,
                if self.farm.is_some() { "SFC's" } else { "readout units'" }
            ),
            _ => format!(
                "{} retransmits, {} timeouts, {} fast recoveries ({} failed), {} lost retransmissions{}",
                t.retransmits,
                t.timeouts,
                t.fast_recoveries,
                t.recovery_fails,
                t.lost_retransmits,
                if t.loss_probes > 0 { format!(", {} tail-loss probes", t.loss_probes) } else { String::new() }
            ),
        }
    }

    /// Each fault on one line: when, which role (and who noticed), why, the events it lost.
    pub fn fault_lines(&self) -> Vec<String> {
        let line = |f: &FaultRecord| {
            let lost = match f.lost_events.len() {
                0 => String::new(),
                n if n <= 8 => format!("; lost events {:?}", f.lost_events),
                n => format!("; {n} lost events, first {:?}", &f.lost_events[..8]),
            };
            let by = if f.noticed_by.is_empty() || f.noticed_by == f.role {
                String::new()
            } else {
                format!(" (noticed by {})", f.noticed_by)
            };
            format!("at {:.3} s, {}{by}: {}{lost}", f.at_s, f.role, f.reason)
        };
        self.faults.iter().map(line).collect()
    }

    /// A human-readable summary table.
    pub fn summary_table(&self) -> String {
        let l = &self.latency_ms;
        let nb = &self.events_not_built;
        let mut s = String::new();
        let mut row = |k: &str, v: String| s.push_str(&format!("  {k:<26} {v}\n"));
        row("substrate", self.substrate.clone());
        row("scenario", format!("{} (seed {})", self.scenario, self.seed));
        row("events built", format!("{}", self.events_built));
        row("events not built", format!("{} timed out, {} lost, {} abandoned", nb.timed_out, nb.lost, nb.abandoned));
        let clock = if self.substrate == "sim" { "simulated" } else { "of wall-clock time" };
        row("measured part", format!("{:.3} s {clock}", self.duration_s));
        row("event rate", format!("{:.1} Hz", self.event_rate_hz));
        row("goodput", format!("{:.3} Gb/s", self.goodput_bps / 1e9));
        if let Some(f) = &self.fabric {
            row(
                "fabric plan (goodput)",
                format!(
                    "bound {:.3} Gb/s (eq. (1)), {} placement {:.3} Gb/s: {:.1} % reached",
                    f.bound_goodput_bps / 1e9,
                    f.assignment,
                    f.planned_goodput_bps / 1e9,
                    100.0 * self.goodput_bps / f.planned_goodput_bps
                ),
            );
            for fault in &f.faults {
                let rerouted = match (fault.rerouted_s, &fault.error) {
                    (Some(t), _) => {
                        format!("rerouted {:.1} ms later ({} flows moved)", (t - fault.at_s) * 1e3, fault.flows_moved)
                    }
                    (None, Some(e)) => format!("not rerouted: {e}"),
                    (None, None) => "not rerouted before the run ended".into(),
                };
                let heard = fault
                    .detected_s
                    .map_or(String::new(), |t| format!("port status after {:.1} ms, ", (t - fault.at_s) * 1e3));
                let cost = fault.cost.as_ref().map_or(String::new(), |c| {
                    format!(
                        "; {} events hit (slowest {:.1} ms), all built {:.1} ms after",
                        c.events_hit, c.slowest_hit_ms, c.recovered_after_ms
                    )
                });
                row(
                    &format!("{} down", fault.element),
                    format!("at {:.3} s, {heard}{rerouted}; {} frames lost{cost}", fault.at_s, fault.frames_lost),
                );
            }
        }
        row(
            "latency (ms)",
            format!(
                "mean {:.2}  p1 {:.2}  q1 {:.2}  median {:.2}  q3 {:.2}  p99 {:.2}  max {:.2}",
                l.mean, l.p1, l.q1, l.median, l.q3, l.p99, l.max
            ),
        );
        row("events ≥ 100 ms", format!("{:.1} %", 100.0 * l.share_ge_100ms));
        row("tcp", self.tcp_row());
        row(
            "switch drops",
            match self.switch.summary() {
                _ if self.substrate == "run" => {
                    "none measured (a run on one host has no switch between its roles)".into()
                }
                Some(s) if self.switch.drops > 0 => s,
                _ => "0".to_string(),
            },
        );
        if let Some(e) = &self.edge {
            // Shown with no drops too: the fullest NIC says how close the bus came.
            row("edge NIC drops", e.summary().unwrap_or_else(|| "0".into()));
        }
        if let Some(f) = &self.farm {
            let w = &f.worker_bps;
            row("sub-farm", format!("{} with {} dispatch, {} workers", f.implementation, f.dispatch, f.workers.len()));
            row(
                "per worker",
                format!(
                    "{:.1} .. {:.1} Mb/s (mean {:.1}, cv {:.1} %), idle {:.1} %",
                    w.min / 1e6,
                    w.max / 1e6,
                    w.mean / 1e6,
                    100.0 * w.cv,
                    100.0 * f.idle_fraction
                ),
            );
            row(
                "SFC queues",
                format!(
                    "events peak {} mean {:.1}, tokens peak {} mean {:.1}; {} events waited for a worker",
                    f.peak_event_queue, f.mean_event_queue, f.peak_token_queue, f.mean_token_queue, f.waited_for_token
                ),
            );
            if f.protocol_errors > 0 {
                row(
                    "protocol errors",
                    format!("{} (tokens from unknown workers or for events not sent)", f.protocol_errors),
                );
            }
        }
        if let Some(p) = &self.pipe {
            let k = if p.scheduler == "simple" {
                "all at once".to_string()
            } else {
                format!("{} parallel", p.parallel_transfers)
            };
            let over = if p.transport.is_empty() || p.transport == "sim" {
                String::new()
            } else {
                format!(", over {}", p.transport)
            };
            if p.pattern.is_empty() || p.pattern == "event_building" {
                row("pipe", format!("{} nodes, pulls {k}{over}", p.nodes));
            } else {
                row("pipe", format!("{} nodes, {}{over}", p.nodes, p.pattern));
            }
            row(
                "per node",
                format!(
                    "send {:.1} .. {:.1} Gb/s, receive {:.1} .. {:.1} Gb/s (mean {:.1})",
                    p.send_bps.min / 1e9,
                    p.send_bps.max / 1e9,
                    p.recv_bps.min / 1e9,
                    p.recv_bps.max / 1e9,
                    p.recv_bps.mean / 1e9
                ),
            );
            let steady =
                if p.steady_state { "steady state" } else { "mean over the run: too short for a steady state" };
            row("receive per node", format!("{:.1} Gb/s ({steady})", p.steady_recv_bps / 1e9));
            if p.incomplete > 0 {
                row("incomplete events", format!("{} built without the fragments of lost nodes", p.incomplete));
            }
            if p.verified_payloads + p.bad_payloads > 0 {
                let what = "fragments or messages verified (key at both ends, length)";
                row("payloads", format!("{} {what}, {} bad", p.verified_payloads, p.bad_payloads));
            }
            for l in &p.lost_nodes {
                let first = l.noticed.iter().map(|n| n.1).fold(f64::INFINITY, f64::min);
                let last = l.noticed.iter().map(|n| n.1).fold(0.0, f64::max);
                let detail = match l.killed_at_s {
                    Some(k) => format!(
                        "killed at {k:.3} s; noticed by {} nodes {:.1} .. {:.1} ms later",
                        l.noticed.len(),
                        (first - k) * 1e3,
                        (last - k) * 1e3
                    ),
                    None => format!("noticed by {} nodes at {first:.3} .. {last:.3} s", l.noticed.len()),
                };
                row("lost", format!("process {}: {detail}", l.node));
            }
        }
        if let Some(w) = &self.sim_work {
            row(
                "simulator",
                format!(
                    "{:.2} s simulated, {} packets, {} scheduler events",
                    w.simulated_s, w.packets, w.scheduler_events
                ),
            );
        }
        for f in self.fault_lines() {
            row("fault", f);
        }
        let speed = self.sim_events_per_s.map(|e| format!(" ({e:.0} events/s)")).unwrap_or_default();
        row("wall time", format!("{:.2} s{speed}", self.wall_s));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_rate_of_bursts_is_their_average_rate() {
        // 30 bursts of 8 events, one burst per millisecond (each burst's events 1 µs apart):
        // 8000 events/s. A count over the span from a burst's first event would say ~8200.
        let mut done: Vec<Nanos> = (0..30).flat_map(|b| (0..8).map(move |e| b * 1_000_000 + e * 1000)).collect();
        let r = steady_rate(&mut done, 8).unwrap();
        assert!((r - 8000.0).abs() / 8000.0 < 0.005, "{r}");
        assert_eq!(steady_rate(&mut done[..20], 8), None, "under four rounds");
    }

    #[test]
    fn quantiles_are_order_statistics() {
        let v: Vec<Nanos> = (1..=100).map(|i| i * NS_PER_MS).collect();
        let l = LatencyMs::from_ns(&v);
        assert_eq!((l.p1, l.q1, l.median, l.q3, l.p99, l.max), (1.0, 25.0, 50.0, 75.0, 99.0, 100.0));
        assert!((l.mean - 50.5).abs() < 1e-9);
        assert!((l.share_ge_100ms - 0.01).abs() < 1e-12);
        assert!(!l.hdr_us_base64.is_empty());
    }

    #[test]
    fn empty_latencies_are_zero() {
        assert_eq!(LatencyMs::from_ns(&[]).mean, 0.0);
    }

    fn track(event: u64, assigned: Nanos, started: Nanos, done: Nanos) -> Track {
        Track { event: EventId(event), pu: PuId(0), node: NodeId(0), assigned, started, done, bytes: 1000 }
    }

    #[test]
    fn the_measured_part_runs_from_the_first_assignment_to_the_last_completion_after_warm_up() {
        let tracks = [
            track(0, 0, 0, 9 * NS_PER_S), // warm-up: left out even though it ends last
            track(2, NS_PER_S, NS_PER_S + 10, 3 * NS_PER_S),
            track(1, 2 * NS_PER_S, 2 * NS_PER_S, 5 * NS_PER_S),
        ];
        let m = Measured::from(&tracks, 1);
        assert_eq!(m.events_built, 2);
        assert_eq!(m.duration_s, 4.0);
        assert_eq!(m.event_rate_hz, 0.5);
        assert_eq!(m.goodput_bps, 2.0 * 8000.0 / 4.0);
        assert_eq!(m.latency_ms.max, 3000.0);
        let reversed: Vec<Track> = tracks.iter().rev().copied().collect();
        assert_eq!(Measured::from(&reversed, 1), m, "order does not matter");
        assert_eq!(Measured::from(&tracks[..1], 1).event_rate_hz, 0.0, "nothing measured: no rate");
        assert!(!tracks[0].record(1).measured && tracks[1].record(1).measured);
    }

    #[test]
    fn a_bounded_measure_agrees_with_the_exact_one_to_three_significant_digits() {
        let tracks: Vec<Track> =
            (0..20_000u64).map(|e| track(e, e * 1000, e * 1000, e * 1000 + (e % 997 + 1) * 211_000)).collect();
        let (mut exact, mut bounded) = (Measure::new(100), Measure::bounded(100));
        for t in &tracks {
            exact.record(t);
            bounded.record(t);
        }
        let (a, b) = (exact.finish(), bounded.finish());
        assert_eq!((a.events_built, a.duration_s, a.goodput_bps), (b.events_built, b.duration_s, b.goodput_bps));
        let (x, y) = (&a.latency_ms, &b.latency_ms);
        assert_eq!((x.max, x.share_ge_100ms), (y.max, y.share_ge_100ms), "exact in both");
        assert!((x.mean - y.mean).abs() < 1e-9 * x.mean);
        for (p, q) in [(x.p1, y.p1), (x.q1, y.q1), (x.median, y.median), (x.q3, y.q3), (x.p99, y.p99)] {
            assert!((p - q).abs() <= 1e-3 * p, "{p} vs {q}");
        }
        assert_eq!(x.hdr_us_base64, y.hdr_us_base64, "the same histogram");
    }
}
