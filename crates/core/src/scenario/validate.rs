//! Semantic checks of a scenario: each problem names the field, its value and what is allowed.

use super::{
    flow, rc, BufferConfig, Credits, Dispatch, EcnMarking, Farm, FlowControl, FlowControlMode, FragmentSize,
    FromBuilder, HostCpu, Implementation, MessageTransport, Network, ParallelLeafSpine, Pipe, PipeScheduler, Rate,
    Scenario, SwitchConfig, System, Topology,
};

type Problems = Vec<(String, String)>;

fn need(p: &mut Problems, ok: bool, field: &str, message: String) {
    if !ok {
        p.push((field.to_string(), message));
    }
}

fn positive(p: &mut Problems, field: &str, v: u64) {
    need(p, v > 0, field, format!("is {v}; must be at least 1"));
}

/// A switch of a star or of a fabric tier: its buffer, or its daqring queues, hold a frame.
fn switch(p: &mut Problems, field: &str, sw: &SwitchConfig, frame: u64) {
    buffer(p, &format!("{field}.buffer"), &sw.buffer, frame);
    let q = sw.daqring.queue_bytes;
    need(
        p,
        q >= frame,
        &format!("{field}.daqring.queue_bytes"),
        format!("is {q}; must hold at least one full frame ({frame} bytes)"),
    );
    let d = &sw.daqring;
    need(
        p,
        d.poll_cycle_ns == 0 || d.burst_frames > 0,
        &format!("{field}.daqring.poll_cycle_ns"),
        format!("is {} ns, but burst_frames is 0: a cycle limits nothing without a burst", d.poll_cycle_ns),
    );
}

fn buffer(p: &mut Problems, field: &str, b: &BufferConfig, mtu_frame: u64) {
    match *b {
        BufferConfig::Dedicated { port_bytes } | BufferConfig::Deep { port_bytes } => need(
            p,
            port_bytes >= mtu_frame,
            &format!("{field}.port_bytes"),
            format!("is {port_bytes}; must hold at least one full frame ({mtu_frame} bytes)"),
        ),
        BufferConfig::Shared { pool_bytes, ports_per_pool, port_cap_bytes } => {
            positive(p, &format!("{field}.ports_per_pool"), ports_per_pool as u64);
            need(
                p,
                port_cap_bytes >= mtu_frame,
                &format!("{field}.port_cap_bytes"),
                format!("is {port_cap_bytes}; must hold at least one full frame ({mtu_frame} bytes)"),
            );
            need(
                p,
                pool_bytes >= mtu_frame,
                &format!("{field}.pool_bytes"),
                format!("is {pool_bytes}; must hold at least one full frame ({mtu_frame} bytes)"),
            );
        }
    }
}

/// The largest `deploy.max_frame_bytes` accepted: 1 GiB. Each connection may hold one frame
/// this large in memory while it arrives.
const MAX_FRAME_BYTES: u64 = 1 << 30;

impl Scenario {
    /// All semantic problems of this scenario as (field, message) pairs; empty when it is valid.
    /// Call after [`Scenario::with_defaults`].
    pub fn validate(&self) -> Vec<(String, String)> {
        let mut p = Problems::new();
        let s = &self.system;
        positive(&mut p, "system.readout_units", s.readout_units as u64);
        positive(&mut p, "system.fragments_per_unit", s.fragments_per_unit as u64);
        positive(&mut p, "system.nodes", s.nodes as u64);
        positive(&mut p, "system.pus_per_node", s.pus_per_node as u64);
        positive(&mut p, "system.request_bytes", s.request_bytes as u64);
        if s.readout_on_nodes {
            need(
                &mut p,
                s.readout_units == s.nodes,
                "system.readout_on_nodes",
                format!(
                    "is true with {} readout units and {} nodes; each node's host runs one readout unit: make \
                     system.readout_units equal system.nodes",
                    s.readout_units, s.nodes
                ),
            );
            need(
                &mut p,
                self.network.topology != Topology::ParallelLeafSpine,
                "system.readout_on_nodes",
                "is true on a parallel_leaf_spine, whose readout units have pods of their own; use star or two_tier"
                    .into(),
            );
        }
        let share = |p: &mut Problems, field: &str, f: f64| {
            need(p, f > 0.0 && f <= 1.0, field, format!("is {f}; must be in (0, 1]"));
        };
        share(&mut p, "system.collect_fraction", s.collect_fraction);
        for (i, r) in s.roi_steps.iter().enumerate() {
            share(&mut p, &format!("system.roi_step[{i}].collect_fraction"), r.collect_fraction);
            let f = r.reject_fraction;
            need(
                &mut p,
                (0.0..1.0).contains(&f),
                &format!("system.roi_step[{i}].reject_fraction"),
                format!(
                    "is {f}; must be in [0, 1) (a step that rejects every event makes the steps after it unreachable)"
                ),
            );
        }
        match s.fragment_size {
            FragmentSize::Fixed { bytes } => positive(&mut p, "system.fragment_size.bytes", bytes as u64),
            FragmentSize::LognormalNormal { base_bytes, event_mu, event_sigma, fragment_sd_bytes, min_bytes } => {
                positive(&mut p, "system.fragment_size.base_bytes", base_bytes as u64);
                positive(&mut p, "system.fragment_size.min_bytes", min_bytes as u64);
                need(
                    &mut p,
                    event_mu.is_finite() && event_mu.abs() < 10.0,
                    "system.fragment_size.event_mu",
                    format!("is {event_mu}; must be finite and within ±10"),
                );
                need(
                    &mut p,
                    event_sigma.is_finite() && (0.0..5.0).contains(&event_sigma),
                    "system.fragment_size.event_sigma",
                    format!("is {event_sigma}; must be in [0, 5)"),
                );
                need(
                    &mut p,
                    fragment_sd_bytes.is_finite() && fragment_sd_bytes >= 0.0,
                    "system.fragment_size.fragment_sd_bytes",
                    format!("is {fragment_sd_bytes}; must be ≥ 0"),
                );
            }
        }
        if let Credits::Limited(c) = s.credits_per_node {
            need(
                &mut p,
                c >= s.fragments_per_unit,
                "system.credits_per_node",
                format!(
                    "is {c}; must be at least system.fragments_per_unit ({}), or a request for one readout \
                     unit's fragments could never be sent (use \"unlimited\" to turn traffic shaping off)",
                    s.fragments_per_unit
                ),
            );
        }
        if let Rate::Hz(r) = s.supervisor.rate_hz {
            need(
                &mut p,
                r.is_finite() && r > 0.0,
                "system.supervisor.rate_hz",
                format!("is {r}; must be > 0 Hz, or \"unbounded\""),
            );
        }

        let n = &self.network;
        need(
            &mut p,
            (128..=65_535).contains(&n.mtu_bytes),
            "network.mtu_bytes",
            format!("is {}; must be in 128 ..= 65535", n.mtu_bytes),
        );
        positive(&mut p, "network.readout_link_bps", n.readout_link_bps);
        positive(&mut p, "network.node_link_bps", n.node_link_bps);
        let frame = n.mtu_bytes as u64 + 18;
        if let Some(e) = &n.edge {
            positive(&mut p, "network.edge.bus_bps", e.bus_bps);
            need(
                &mut p,
                e.nic_buffer_bytes >= frame,
                "network.edge.nic_buffer_bytes",
                format!("is {}; must hold at least one full frame ({frame} bytes)", e.nic_buffer_bytes),
            );
            let names = self.host_names();
            let racks = n.fabric.as_ref().map_or(0, |f| f.pods * f.racks_per_pod);
            for h in &e.hosts {
                let rack = h.strip_prefix("rack").and_then(|k| k.parse::<u32>().ok()).is_some_and(|k| k < racks);
                need(
                    &mut p,
                    rack || names.contains(h),
                    "network.edge.hosts",
                    format!(
                        "names `{h}`, which is not a host here; the hosts are {} … {}{}",
                        names.first().map_or("", String::as_str),
                        names.last().map_or("", String::as_str),
                        if racks > 0 { format!(" and the racks rack0 … rack{}", racks - 1) } else { String::new() }
                    ),
                );
            }
        }
        if let Some(cpu) = &n.host_cpu {
            self.cpu(&mut p, "network.host_cpu", cpu, Some(self.host_names()));
        }
        if let Some(cpu) = n.switch.as_ref().and_then(|s| s.cpu.as_ref()).filter(|_| n.topology == Topology::Star) {
            self.cpu(&mut p, "network.switch.cpu", cpu, None);
        }
        // Each optional section belongs to one topology.
        let sections = [
            ("switch", n.switch.is_some(), Topology::Star),
            ("readout_switch", n.readout_switch.is_some(), Topology::TwoTier),
            ("rack_switch", n.rack_switch.is_some(), Topology::TwoTier),
            ("core", n.core.is_some(), Topology::TwoTier),
            ("fabric", n.fabric.is_some(), Topology::ParallelLeafSpine),
        ];
        for (name, set, owner) in sections {
            need(
                &mut p,
                !set || owner == n.topology,
                &format!("network.{name}"),
                format!(
                    "is set but network.topology = \"{}\" does not use it; [network.{name}] belongs to topology = \"{}\": \
                     remove it or change the topology",
                    n.topology.name(),
                    owner.name()
                ),
            );
        }
        if let Some(sw) = n.switch.as_ref().filter(|_| n.topology == Topology::Star) {
            switch(&mut p, "network.switch", sw, frame);
        }
        if n.topology == Topology::TwoTier {
            for (sw, name) in [(&n.readout_switch, "readout_switch"), (&n.rack_switch, "rack_switch")] {
                if let Some(sw) = sw {
                    positive(&mut p, &format!("network.{name}.hosts"), sw.hosts as u64);
                    positive(&mut p, &format!("network.{name}.uplink_bps"), sw.uplink_bps);
                    buffer(&mut p, &format!("network.{name}.buffer"), &sw.buffer, frame);
                }
            }
            if let Some(core) = &n.core {
                need(
                    &mut p,
                    (1..=64).contains(&core.routers),
                    "network.core.routers",
                    format!("is {}; must be in 1 ..= 64", core.routers),
                );
                buffer(&mut p, "network.core.buffer", &core.buffer, frame);
            }
        }
        if n.topology == Topology::ParallelLeafSpine {
            match &n.fabric {
                Some(f) => validate_fabric(&mut p, f, s, frame),
                None => p.push((
                    "network.fabric".into(),
                    "is missing; topology = \"parallel_leaf_spine\" needs its pods, planes, spines and rates \
                     (docs/fabric.md)"
                        .into(),
                )),
            }
        }
        let t = &n.tcp;
        positive(&mut p, "network.tcp.initial_cwnd_segments", t.initial_cwnd_segments as u64);
        positive(&mut p, "network.tcp.static_cwnd_segments", t.static_cwnd_segments as u64);
        positive(&mut p, "network.tcp.min_rto_ns", t.min_rto_ns);
        positive(&mut p, "network.tcp.dupack_threshold", t.dupack_threshold as u64);
        need(
            &mut p,
            t.max_rto_ns >= t.min_rto_ns,
            "network.tcp.max_rto_ns",
            format!("is {}; must be ≥ network.tcp.min_rto_ns ({})", t.max_rto_ns, t.min_rto_ns),
        );
        need(
            &mut p,
            t.initial_rto_ns >= t.min_rto_ns,
            "network.tcp.initial_rto_ns",
            format!("is {}; must be ≥ network.tcp.min_rto_ns ({})", t.initial_rto_ns, t.min_rto_ns),
        );
        positive(&mut p, "network.tcp.delayed_ack_ns", t.delayed_ack_ns);
        if let Some(m) = &n.ecn {
            validate_marking(&mut p, m);
        }
        if let Some(fc) = &n.flow_control {
            validate_flow_control(&mut p, fc, n);
        }
        if let Some(rc) = &n.rc {
            validate_message_transport(&mut p, rc, n);
        }

        let r = &self.run;
        positive(&mut p, "run.events", r.events);
        need(
            &mut p,
            r.time_limit_s.is_finite() && r.time_limit_s > 0.0,
            "run.time_limit_s",
            format!("is {}; must be > 0 seconds", r.time_limit_s),
        );
        self.validate_deploy(&mut p);
        if let Some(f) = &self.farm {
            validate_farm(&mut p, f, n);
            if let Some(b) = &f.from_builder {
                validate_from_builder(&mut p, f, b, r.warmup_events + r.events);
            }
        }
        if let Some(pipe) = &self.pipe {
            validate_pipe(&mut p, pipe, self);
        }
        p
    }

    /// Problems that matter only to a real run (`daqnet run`, `daqnet role`, the testbed): the
    /// frame size and readout buffer limits against the event size. The simulator, which holds
    /// no fragments, does not ask.
    pub fn run_problems(&self) -> Vec<(String, String)> {
        let mut p = Problems::new();
        if let Some(f) = &self.farm {
            // An event's payload starts with an 8-byte key; a message body is at most 64 MiB.
            let mut sizes = vec![("farm.accept_output_bytes", f.accept_output_bytes, 0)];
            match f.from_builder.as_ref().map(FromBuilder::read) {
                // Every recorded size is checked: the smallest and the largest.
                Some(Ok(a)) => sizes.extend(
                    [a.iter().map(|a| a.bytes).min(), a.iter().map(|a| a.bytes).max()]
                        .map(|b| ("farm.from_builder.events", b.unwrap_or(0), 8)),
                ),
                _ => sizes.push(("farm.event_bytes", f.event_bytes, 8)),
            }
            for (field, v, min) in sizes {
                need(
                    &mut p,
                    (min..=64 << 20).contains(&v),
                    field,
                    format!("is {v}; a real run needs {min} ..= 64 MiB"),
                );
            }
            return p;
        }
        if let Some(pp) = &self.pipe {
            // A verified payload starts and ends with an 8-byte key; a node holds one message
            // of each size in memory.
            let sizes = [("pipe.fragment_bytes", pp.fragment_bytes), ("pipe.message_bytes", pp.message_bytes)];
            for (field, v) in sizes {
                need(&mut p, (16..=1 << 30).contains(&v), field, format!("is {v}; a real run needs 16 B ..= 1 GiB"));
            }
            need(
                &mut p,
                (2..=1024).contains(&pp.nodes),
                "pipe.nodes",
                format!("is {}; a real run on one machine takes 2 ..= 1024 nodes", pp.nodes),
            );
            return p;
        }
        let d = &self.deploy;
        let unit = self.nominal_unit_bytes();
        // A response carries one unit's fragments with a 24-byte header each, plus 40 bytes.
        let frame = unit + 24 * self.system.fragments_per_unit as u64 + 40;
        need(
            &mut p,
            (4096..=MAX_FRAME_BYTES).contains(&d.max_frame_bytes) && d.max_frame_bytes >= frame,
            "deploy.max_frame_bytes",
            format!(
                "is {}; must be in 4 KiB ..= 1 GiB and hold one readout unit's response ({frame} bytes at nominal \
                 sizes). The cap: a connection may hold one frame of this size in memory while it arrives",
                d.max_frame_bytes
            ),
        );
        let in_flight = (self.total_pus() as u64 + 1) * unit;
        need(
            &mut p,
            d.readout_buffer_bytes >= in_flight,
            "deploy.readout_buffer_bytes",
            format!(
                "is {}; must hold the fragments of one event per processing unit plus one ({in_flight} bytes), or \
                 the readout units' generators could wait for events that can never be cleared",
                d.readout_buffer_bytes
            ),
        );
        p
    }

    /// A host's or the software switch's cores (`field`): cores, coalescing and ring within
    /// reason, the hosts named among `names` (`None`: a switch's cores, which take no `hosts`),
    /// and neither lossless links
    /// (a full ring would pause its link, which is not modelled) nor queue pairs (RDMA bypasses
    /// the host's stack).
    fn cpu(&self, p: &mut Problems, f: &str, cpu: &HostCpu, names: Option<Vec<String>>) {
        need(
            p,
            (1..=1024).contains(&cpu.cores),
            &format!("{f}.cores"),
            format!("is {}; must be 1 ..= 1024", cpu.cores),
        );
        positive(p, &format!("{f}.coalesce_frames"), cpu.coalesce_frames as u64);
        positive(p, &format!("{f}.ring_frames"), cpu.ring_frames as u64);
        for h in &cpu.hosts {
            need(
                p,
                names.as_ref().is_some_and(|n| n.contains(h)),
                &format!("{f}.hosts"),
                match &names {
                    None => format!("names `{h}`; the switch's cores are its own: remove `hosts`"),
                    Some(names) => format!(
                        "names `{h}`, which is not a host here; the hosts are {} … {}",
                        names.first().map_or("", String::as_str),
                        names.last().map_or("", String::as_str)
                    ),
                },
            );
        }
        let n = &self.network;
        for (other, set) in [("network.flow_control", n.flow_control.is_some()), ("network.rc", n.rc.is_some())] {
            need(
                p,
                !set,
                f,
                format!(
                    "is set with [{other}]; CPUs are modelled on lossy links with TCP only (a full ring drops; \
                     queue pairs bypass the host's stack): remove one of them"
                ),
            );
        }
    }

    fn validate_deploy(&self, p: &mut Problems) {
        let d = &self.deploy;
        let addr = |p: &mut Problems, field: &str, a: &str| {
            need(
                p,
                a.parse::<std::net::SocketAddr>().is_ok(),
                field,
                format!("is {a:?}; must be an IP address and port, e.g. \"10.0.0.1:7700\" or \"127.0.0.1:0\""),
            )
        };
        addr(p, "deploy.supervisor", &d.supervisor);
        need(
            p,
            d.readouts.is_empty() || d.readouts.len() == self.system.readout_units as usize,
            "deploy.readouts",
            format!(
                "has {} addresses; must be empty (loopback, free ports) or one per readout unit ({})",
                d.readouts.len(),
                self.system.readout_units
            ),
        );
        for (i, a) in d.readouts.iter().enumerate() {
            addr(p, &format!("deploy.readouts[{i}]"), a);
        }
        need(
            p,
            !d.tcp_congestion.is_empty()
                && d.tcp_congestion.len() < 16
                && d.tcp_congestion.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "deploy.tcp_congestion",
            format!("is {:?}; must name a Linux congestion control, e.g. \"cubic\" or \"reno\"", d.tcp_congestion),
        );
        positive(p, "deploy.startup_timeout_ms", d.startup_timeout_ms);
        positive(p, "deploy.heartbeat_ms", d.heartbeat_ms);
        need(
            p,
            d.peer_timeout_ms >= 2 * d.heartbeat_ms,
            "deploy.peer_timeout_ms",
            format!("is {}; must be at least twice deploy.heartbeat_ms ({})", d.peer_timeout_ms, d.heartbeat_ms),
        );
    }
}

/// `[farm]`: sizes, fractions, and an implementation that can run the chosen dispatch.
fn validate_farm(p: &mut Problems, f: &Farm, n: &Network) {
    need(p, (1..=4096).contains(&f.workers), "farm.workers", format!("is {}; must be in 1 ..= 4096", f.workers));
    let allowed = f.implementation.dispatches();
    need(
        p,
        allowed.contains(&f.dispatch),
        "farm.dispatch",
        format!(
            "is \"{}\", which farm.implementation = \"{}\" cannot run; it runs {}",
            f.dispatch.name(),
            f.implementation.name(),
            allowed.iter().map(|d| format!("\"{}\"", d.name())).collect::<Vec<_>>().join(" or ")
        ),
    );
    if f.dispatch == Dispatch::Tokens {
        positive(p, "farm.initial_tokens", f.initial_tokens as u64);
    }
    positive(p, "farm.event_bytes", f.event_bytes);
    positive(p, "farm.token_bytes", f.token_bytes as u64);
    need(
        p,
        (0.0..=1.0).contains(&f.accept_fraction),
        "farm.accept_fraction",
        format!("is {}; must be in [0, 1]", f.accept_fraction),
    );
    if let Rate::Hz(r) = f.source_rate_hz {
        need(p, r.is_finite() && r > 0.0, "farm.source_rate_hz", format!("is {r}; must be > 0 Hz, or \"unbounded\""));
    }
    positive(p, "farm.event_queue_events", f.event_queue_events as u64);
    positive(p, "farm.pipe_bytes", f.pipe_bytes);
    positive(p, "farm.sfc_link_bps", f.sfc_link_bps);
    positive(p, "farm.worker_link_bps", f.worker_link_bps);
    need(
        p,
        n.topology == Topology::Star,
        "network.topology",
        format!("is \"{}\"; a sub-farm ([farm]) sits on one switch: set topology = \"star\"", n.topology.name()),
    );
}

/// `[farm.from_builder]`: `v1` without a rate of its own, and a recording that holds the run.
fn validate_from_builder(p: &mut Problems, f: &Farm, b: &FromBuilder, total: u64) {
    let field = "farm.from_builder";
    need(
        p,
        f.implementation == Implementation::V1,
        field,
        format!(
            "feeds the SFC's event queue, which only farm.implementation = \"v1\" has (it is \"{}\")",
            f.implementation.name()
        ),
    );
    if let Rate::Hz(r) = f.source_rate_hz {
        p.push((
            "farm.source_rate_hz".into(),
            format!("is {r} Hz, but farm.from_builder sets when events arrive: leave it \"unbounded\""),
        ));
    }
    match b.read() {
        Err(e) => p.push((format!("{field}.events"), e)),
        Ok(a) => need(
            p,
            a.len() as u64 >= total,
            &format!("{field}.events"),
            format!(
                "holds {} events built at node {}, but the run needs {total} (run.warmup_events + run.events): \
                 lower run.events, or record a longer builder run",
                a.len(),
                b.node
            ),
        ),
    }
}

/// `[network.fabric]`: sizes that divide the system's, uplinks within the planes, every readout
/// unit sharing a plane with every rack.
fn validate_fabric(p: &mut Problems, f: &ParallelLeafSpine, s: &System, frame: u64) {
    let sizes = [
        ("pods", f.pods),
        ("planes", f.planes),
        ("spines_per_plane", f.spines_per_plane),
        ("readout_per_pod", f.readout_per_pod),
        ("racks_per_pod", f.racks_per_pod),
        ("nodes_per_rack", f.nodes_per_rack),
    ];
    for (name, v) in sizes {
        need(p, (1..=4096).contains(&v), &format!("network.fabric.{name}"), format!("is {v}; must be in 1 ..= 4096"));
    }
    let readouts = f.pods as u64 * f.readout_per_pod as u64;
    need(
        p,
        readouts == s.readout_units as u64,
        "network.fabric.readout_per_pod",
        format!(
            "is {}: {} pods × {} = {readouts} readout units, but system.readout_units is {}; \
             pods × readout_per_pod must equal it",
            f.readout_per_pod, f.pods, f.readout_per_pod, s.readout_units
        ),
    );
    let nodes = f.pods as u64 * f.racks_per_pod as u64 * f.nodes_per_rack as u64;
    need(
        p,
        nodes == s.nodes as u64,
        "network.fabric.nodes_per_rack",
        format!(
            "is {}: {} pods × {} racks × {} = {nodes} nodes, but system.nodes is {}; \
             pods × racks_per_pod × nodes_per_rack must equal it",
            f.nodes_per_rack, f.pods, f.racks_per_pod, f.nodes_per_rack, s.nodes
        ),
    );
    for (name, u) in [("readout_uplinks", f.readout_uplinks), ("rack_uplinks", f.rack_uplinks)] {
        if let Some(u) = u {
            need(
                p,
                (1..=f.planes).contains(&u),
                &format!("network.fabric.{name}"),
                format!("is {u}; must be in 1 ..= network.fabric.planes ({}): an uplink reaches one plane", f.planes),
            );
        }
    }
    // Uplinks are staggered arcs of the plane ring (see `ParallelLeafSpine::readout_uplinks`):
    // two arcs always meet when their lengths add up to more than the ring.
    need(
        p,
        f.readout_planes() + f.rack_planes() > f.planes,
        "network.fabric.rack_uplinks",
        format!(
            "is {} with readout_uplinks {} on {} planes: some readout units and racks would share no plane, \
             and their events could never be built; readout_uplinks + rack_uplinks must exceed planes",
            f.rack_planes(),
            f.readout_planes(),
            f.planes
        ),
    );
    let paths = f.planes as u64 * f.spines_per_plane as u64;
    need(
        p,
        paths <= 256,
        "network.fabric.spines_per_plane",
        format!("is {}: {} planes × {} = {paths} paths; at most 256", f.spines_per_plane, f.planes, f.spines_per_plane),
    );
    positive(p, "network.fabric.rack_uplink_bps", f.rack_uplink_bps);
    positive(p, "network.fabric.spine_link_bps", f.spine_link_bps);
    for (name, sw) in f.tiers() {
        switch(p, &format!("network.fabric.{name}"), sw, frame);
    }
}

/// `[pipe]`: sizes and limits, one dataflow per scenario, a star.
fn validate_pipe(p: &mut Problems, pipe: &Pipe, sc: &Scenario) {
    need(p, (2..=4096).contains(&pipe.nodes), "pipe.nodes", format!("is {}; must be in 2 ..= 4096", pipe.nodes));
    positive(p, "pipe.fragment_bytes", pipe.fragment_bytes);
    positive(p, "pipe.credits_per_builder", pipe.credits_per_builder as u64);
    positive(p, "pipe.request_bytes", pipe.request_bytes as u64);
    positive(p, "pipe.link_bps", pipe.link_bps);
    if pipe.scheduler == PipeScheduler::RoundRobin {
        positive(p, "pipe.parallel_transfers", pipe.parallel_transfers as u64);
    }
    need(p, sc.farm.is_none(), "pipe", "and [farm] are both set; a scenario runs one of them".to_string());
    need(
        p,
        sc.network.topology != super::Topology::ParallelLeafSpine,
        "network.topology",
        "is \"parallel_leaf_spine\", which carries the event builder of [system]; a pipe runs on \"star\" or \"two_tier\""
            .to_string(),
    );
    if pipe.pattern != super::PipePattern::EventBuilding {
        positive(p, "pipe.message_bytes", pipe.message_bytes);
        positive(p, "pipe.messages_in_flight", pipe.messages_in_flight as u64);
    }
    let building = pipe.pattern == super::PipePattern::EventBuilding;
    let one_way = pipe.direction == super::pipe::PipeDirection::OneWay;
    need(
        p,
        building || !one_way,
        "pipe.direction",
        format!("is one_way, which is for event building; pattern {} decides its own directions", pipe.pattern.name()),
    );
    need(
        p,
        (1..=2).contains(&pipe.processes_per_node),
        "pipe.processes_per_node",
        format!("is {}; must be 1 or 2", pipe.processes_per_node),
    );
    need(
        p,
        pipe.processes_per_node == 1 || (building && !one_way),
        "pipe.processes_per_node",
        "is 2, which splits a full-duplex event-building node's two units; here each node has one kind of work"
            .to_string(),
    );
}

fn validate_marking(p: &mut Problems, m: &EcnMarking) {
    match *m {
        EcnMarking::Step { threshold_bytes, threshold_packets } => {
            if let Some(k) = threshold_bytes {
                positive(p, "network.ecn.threshold_bytes", k);
            }
            if let Some(k) = threshold_packets {
                positive(p, "network.ecn.threshold_packets", k as u64);
            }
        }
        EcnMarking::Red { min_bytes, max_bytes, max_probability } => {
            need(
                p,
                min_bytes < max_bytes,
                "network.ecn.max_bytes",
                format!("is {max_bytes}; must be above network.ecn.min_bytes ({min_bytes})"),
            );
            need(
                p,
                max_probability > 0.0 && max_probability <= 1.0,
                "network.ecn.max_probability",
                format!("is {max_probability}; must be in (0, 1]"),
            );
        }
    }
}

/// The message transport: on lossless links, with a path MTU, without ECN (its senders do
/// not react to marks), a rate limit and an ACK timeout above zero.
fn validate_message_transport(p: &mut Problems, rc: &MessageTransport, n: &Network) {
    need(
        p,
        n.flow_control.is_some(),
        "network.rc",
        "is set without [network.flow_control]: a queue pair has no congestion control and sends at line rate, \
         so it runs on lossless links (InfiniBand credits, or PFC under RoCE); add [network.flow_control]"
            .into(),
    );
    match rc.path_mtu_bytes {
        None => need(
            p,
            rc::path_mtu(n.mtu_bytes).is_some(),
            "network.mtu_bytes",
            format!(
                "is {}; a queue pair's packets carry at least 256 bytes and {} of headers: at least {}",
                n.mtu_bytes,
                rc::ROCE_HEADER_BYTES,
                256 + rc::ROCE_HEADER_BYTES
            ),
        ),
        Some(m) if !rc::IB_MTUS.contains(&m) && !rc::OPA_MTUS.contains(&m) => need(
            p,
            false,
            "network.rc.path_mtu_bytes",
            format!("is {m}; allowed: 256, 512, 1024, 2048, 4096 (InfiniBand), 8192, 10240 (Omni-Path)"),
        ),
        Some(m) => need(
            p,
            m + rc::ROCE_HEADER_BYTES <= n.mtu_bytes,
            "network.rc.path_mtu_bytes",
            format!(
                "is {m}; with its {} bytes of headers a packet exceeds network.mtu_bytes ({}): at most {} \
                 there, or raise network.mtu_bytes to {}",
                rc::ROCE_HEADER_BYTES,
                n.mtu_bytes,
                n.mtu_bytes.saturating_sub(rc::ROCE_HEADER_BYTES),
                m + rc::ROCE_HEADER_BYTES
            ),
        ),
    }
    need(
        p,
        n.ecn.is_none(),
        "network.ecn",
        "is set with [network.rc]: queue pairs send at line rate and do not react to marks; remove one".into(),
    );
    if let Some(bps) = rc.rate_limit_bps {
        positive(p, "network.rc.rate_limit_bps", bps);
    }
    positive(p, "network.rc.ack_timeout_ns", rc.ack_timeout_ns);
}

/// Flow control: quanta and priority in range; every ingress buffer holds its links' headroom
/// and a full frame below XOFF; a headroom given covers every link's derived one.
fn validate_flow_control(p: &mut Problems, fc: &FlowControl, n: &Network) {
    positive(p, "network.flow_control.pause_quanta", fc.pause_quanta as u64);
    need(
        p,
        fc.data_priority <= 7,
        "network.flow_control.data_priority",
        format!("is {}; an 802.1Q priority is 0 to 7", fc.data_priority),
    );
    let (frame, delay) = (n.wire_frame_bytes(), n.link_delay_ns);
    if fc.mode == FlowControlMode::Credit {
        for (field, given) in
            [("headroom_bytes", fc.headroom_bytes.is_some()), ("xon_gap_bytes", fc.xon_gap_bytes.is_some())]
        {
            need(
                p,
                !given,
                &format!("network.flow_control.{field}"),
                "is set, but mode = \"credit\" has no XOFF or headroom: a sender sends only what the receiver \
                 has room for; remove it"
                    .into(),
            );
        }
    }
    let buffers = flow::ingress_buffers(n);
    if let (Some(given), Some(fastest)) = (fc.headroom_bytes, buffers.iter().map(|b| b.fastest_bps).max()) {
        let derived = flow::headroom_bytes(fastest, delay, frame);
        need(
            p,
            given >= derived,
            "network.flow_control.headroom_bytes",
            format!(
                "is {given}; a {fastest} bit/s link with {delay} ns of cable needs at least {derived} \
                 (2 × cable delay at line rate, three {frame}-byte frames, an 84-byte pause frame); \
                 leave it unset to derive it per link"
            ),
        );
    }
    for b in buffers {
        let headroom = fc.headroom(b.fastest_bps, delay, frame);
        let least = headroom + frame;
        need(
            p,
            b.bytes >= least,
            &b.field,
            format!(
                "is {}; with [network.flow_control] a port's buffer holds its headroom ({headroom} bytes for a \
                 {} bit/s link) and at least a full frame below XOFF: at least {least}",
                b.bytes, b.fastest_bps
            ),
        );
    }
}
