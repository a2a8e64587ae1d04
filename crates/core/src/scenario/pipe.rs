//! `[pipe]`: DAQPIPE's event building ([LHCB-DAQPIPE] §VI): every node a readout unit and a
//! builder unit, an event manager, and pulls with a bounded number of parallel transfers.

use crate::units::{de_bps, de_bytes, de_bytes_u32, de_ns};
use serde::{Deserialize, Serialize};

/// `[pipe]`: when present, the scenario is a DAQPIPE event builder instead of the event
/// builder of `[system]`: on the star switch of `[network.switch]`, or on a leaf-spine
/// (`topology = "two_tier"`: racks of `[network.rack_switch] hosts` nodes, each leaf with one
/// uplink to every spine of `[network.core]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pipe {
    /// Nodes, each hosting a readout unit and a builder unit ([LHCB-DAQPIPE]: 500 planned,
    /// 14 measured).
    pub nodes: u32,
    /// What the nodes exchange: `event_building` (DAQPIPE proper), or one of the synthetic
    /// patterns without synchronisation of [LHCB-DAQPIPE] §V: `one_to_one` (each odd node
    /// sends to the even node before it), `many_to_one` (every node sends to node 0),
    /// `gather` (every node sends to all the others in turn), `gather_cmd` (gather's messages
    /// each followed by a 64-byte command), `gather_cmd_meta` (and a 10 kB metadata message).
    /// In a synthetic pattern an "event" is one data message delivered.
    pub pattern: PipePattern,
    /// Synthetic patterns: bytes of a data message (§V: 1 MB).
    #[serde(deserialize_with = "de_bytes")]
    pub message_bytes: u64,
    /// Synthetic patterns: messages each sending node keeps in flight (sent, not yet received).
    pub messages_in_flight: u32,
    /// Each readout unit's fragment of one event, in bytes.
    #[serde(deserialize_with = "de_bytes")]
    pub fragment_bytes: u64,
    /// Event building: `full_duplex` (every node a readout unit and a builder unit, both
    /// directions of every link busy: DAQPIPE's default) or `one_way` (the first half of the
    /// nodes readout units only, the rest builder units only: each link used in one direction,
    /// as the document's one-way runs).
    pub direction: PipeDirection,
    /// Real runs of full-duplex event building: processes per node, 1 (one process is the
    /// node's readout unit and builder unit) or 2 (a process for each: DAQPIPE's "2 PPN"; node
    /// `i` is processes `2i`, its readout unit, and `2i + 1`, its builder unit). The simulator
    /// models no application CPU and ignores it.
    pub processes_per_node: u32,
    /// How a builder unit sends its pulls: `round_robin` (DAQPIPE's default: at most
    /// `parallel_transfers` outstanding) or `simple` (every pull of an event at once; the
    /// network schedules them).
    pub scheduler: PipeScheduler,
    /// `round_robin`: pulls a builder unit keeps outstanding ([LHCB-DAQPIPE] Fig. 9 sweeps it;
    /// ≥ 28 needed on 16 nodes).
    pub parallel_transfers: u32,
    /// Events each builder unit holds at once (the event manager's credits per builder).
    pub credits_per_builder: u32,
    /// Size of a pull request (DAQPIPE's command message), in bytes.
    #[serde(deserialize_with = "de_bytes_u32")]
    pub request_bytes: u32,
    /// Line rate of every node's link, in bit/s.
    #[serde(deserialize_with = "de_bps")]
    pub link_bps: u64,
    /// Software time a readout unit spends on each pull before its fragment leaves, in ns
    /// ([LHCB-DAQPIPE] §VI: "some internal operations are required between two
    /// communications", which parallel transfers exist to hide). 0: none.
    #[serde(deserialize_with = "de_ns")]
    pub readout_service_ns: u64,
    /// One-way latency of event-manager messages (assignments, built events), which are tiny
    /// and not put on the data network, in ns.
    #[serde(deserialize_with = "de_ns")]
    pub control_delay_ns: u64,
}

/// What the nodes of a pipe exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipePattern {
    /// DAQPIPE's event building: an event manager, builder units pulling from readout units.
    EventBuilding,
    /// Each odd node sends to the even node before it.
    OneToOne,
    /// Every node sends to node 0.
    ManyToOne,
    /// Every node sends to all the others in turn.
    Gather,
    /// Gather, each data message followed by a 64-byte command.
    GatherCmd,
    /// Gather, each data message followed by a 64-byte command and a 10 kB metadata message.
    GatherCmdMeta,
}

impl PipePattern {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            PipePattern::EventBuilding => "event_building",
            PipePattern::OneToOne => "one_to_one",
            PipePattern::ManyToOne => "many_to_one",
            PipePattern::Gather => "gather",
            PipePattern::GatherCmd => "gather_cmd",
            PipePattern::GatherCmdMeta => "gather_cmd_meta",
        }
    }

    /// The messages a sending node sends to each destination in turn, in bytes: the data
    /// message (`data`), then a command and metadata where the pattern has them.
    pub fn cycle(self, data: u64) -> Vec<u64> {
        match self {
            PipePattern::GatherCmd => vec![data, 64],
            PipePattern::GatherCmdMeta => vec![data, 64, 10_000],
            _ => vec![data],
        }
    }

    /// The nodes `node` sends to (of `nodes`), in its round-robin order.
    pub fn destinations(self, node: u32, nodes: u32) -> Vec<u32> {
        match self {
            PipePattern::EventBuilding => Vec::new(),
            PipePattern::OneToOne if node % 2 == 1 => vec![node - 1],
            PipePattern::OneToOne => Vec::new(),
            PipePattern::ManyToOne if node != 0 => vec![0],
            PipePattern::ManyToOne => Vec::new(),
            _ => (1..nodes).map(|k| (node + k) % nodes).collect(),
        }
    }
}

/// Which nodes host which units in event building.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipeDirection {
    /// Every node a readout unit and a builder unit.
    FullDuplex,
    /// The first half of the nodes readout units, the rest builder units.
    OneWay,
}

impl PipeDirection {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            PipeDirection::FullDuplex => "full_duplex",
            PipeDirection::OneWay => "one_way",
        }
    }
}

/// A builder unit's pull scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipeScheduler {
    /// At most `parallel_transfers` pulls outstanding, readout units visited round-robin.
    RoundRobin,
    /// Every pull of an event as soon as it is assigned.
    Simple,
}

impl PipeScheduler {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            PipeScheduler::RoundRobin => "round_robin",
            PipeScheduler::Simple => "simple",
        }
    }
}

impl Pipe {
    /// The builder units' limit on outstanding pulls (`None`: the simple scheduler).
    pub fn parallel(&self) -> Option<u32> {
        (self.scheduler == PipeScheduler::RoundRobin).then_some(self.parallel_transfers)
    }
}

impl Default for Pipe {
    /// The 14-node InfiniBand EDR cluster of [LHCB-DAQPIPE] §VI scaled to a first look: 4 nodes
    /// at 100 Gb/s, 1 MB fragments, 28 parallel transfers, two events per builder.
    fn default() -> Self {
        Pipe {
            nodes: 4,
            pattern: PipePattern::EventBuilding,
            message_bytes: 1_000_000,
            messages_in_flight: 8,
            fragment_bytes: 1_000_000,
            direction: PipeDirection::FullDuplex,
            processes_per_node: 1,
            scheduler: PipeScheduler::RoundRobin,
            parallel_transfers: 28,
            credits_per_builder: 2,
            request_bytes: 64,
            link_bps: 100_000_000_000,
            readout_service_ns: 0,
            control_delay_ns: 10_000,
        }
    }
}
