//! The verdict under a report: what it shows in one line, and what to try next — the same
//! lines under `daqnet sim`, `daqnet testbed run` and a Python report.

use daqnet_core::Scenario;

/// The buffer field whose size decides incast at the collectors' ports, and its value: read from
/// the network plan, at the switch port towards the first node, if that switch is a bridge with
/// a buffer of its own (not daqrings, not a shared pool).
fn collector_buffer(sc: &Scenario) -> Option<(String, u64)> {
    use daqnet_core::scenario::SwitchKind;
    use daqnet_fabric::network::{HostId, NetworkPlan, PortBuffer, Vertex};
    let s = &sc.system;
    let plan = NetworkPlan::build(&sc.network, s.readout_units, s.nodes);
    let node0 = Vertex::Host(HostId(s.readout_units));
    let (switch, port) = plan.switch_ports().into_iter().find(|(_, p)| p.to == node0)?;
    let switch = plan.switch(switch);
    match (switch.kind, port.buffer) {
        (SwitchKind::Bridge, PortBuffer::Dedicated(bytes)) => {
            Some((format!("{}.buffer.port_bytes", switch.field), bytes))
        }
        _ => None,
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 10_000_000 => format!("{}MB", b / 1_000_000),
        b if b >= 1_000_000 => format!("{:.1}MB", b as f64 / 1e6),
        b => format!("{}kB", b.div_ceil(1000)),
    }
}

/// What a report shows, in one line, and what to try next — for the simulator and the testbed,
/// which see the switch (`file`: the scenario as the user named it).
pub fn verdict(r: &daqnet_core::report::RunReport, sc: &Scenario, file: &str) -> Vec<String> {
    let l = &r.latency_ms;
    if r.events_built == 0 {
        return vec!["verdict: no event was built (see the events not built and the faults above)".into()];
    }
    if let (Some(f), Some(farm)) = (&r.farm, &sc.farm) {
        return farm_verdict(r, f, farm, sc.network.payload_share(), file);
    }
    if let (Some(p), Some(pipe)) = (&r.pipe, &sc.pipe) {
        let link = pipe.link_bps as f64 * sc.network.payload_share();
        return vec![
            format!(
                "verdict: {} each node receives {:.1} Gb/s of payload = {:.1} % of its link's payload capacity \
                 ({:.1} Gb/s); {} drops, {} timeouts",
                if p.steady_state { "in steady state" } else { "over this short run (under four rounds)" },
                p.steady_recv_bps / 1e9,
                100.0 * p.steady_recv_bps / link,
                link / 1e9,
                r.switch.drops,
                r.transport_timeouts()
            ),
            match pipe.pattern {
                daqnet_core::scenario::PipePattern::EventBuilding => {
                    format!("compare: daqnet sweep {file} --vary pipe.parallel_transfers=1,2,4,8,16,32")
                }
                _ => format!("compare: daqnet sweep {file} --vary pipe.messages_in_flight=1,2,4,8,16"),
            },
        ];
    }
    let worst = r.switch.ports.iter().max_by_key(|p| (p.drops, p.peak_bytes));
    let buffer = collector_buffer(sc);
    let shaping = {
        let fragment = sc.nominal_unit_bytes() / sc.system.fragments_per_unit.max(1) as u64;
        buffer.as_ref().map(|&(_, b)| {
            (b / fragment.max(1)) as u32 / sc.system.fragments_per_unit.max(1) * sc.system.fragments_per_unit
        })
    };
    let mut v = Vec::new();
    let faults = r.fabric.as_ref().map_or(&[][..], |f| &f.faults[..]);
    let lost: u64 = faults.iter().map(|f| f.frames_lost).sum();
    if lost > 0 && r.switch.drops == 0 {
        let costs: Vec<_> = faults.iter().filter_map(|f| f.cost.as_ref()).collect();
        let caught = if costs.is_empty() {
            String::new()
        } else {
            let slowest = costs.iter().map(|c| c.slowest_hit_ms).fold(0.0, f64::max);
            let hit: u64 = costs.iter().map(|c| c.events_hit).sum();
            format!("the {hit} events caught waited up to {slowest:.1} ms; ")
        };
        v.push(format!(
            "verdict: fabric failure — {lost} frames lost on failed links before the controller rerouted; {} \
             retransmission timeouts; {caught}no switch port dropped a frame",
            r.transport_timeouts()
        ));
        v.push(format!(
            "compare: a faster controller (--set network.fabric.reaction_ns=1ms), a shorter minimum RTO (--set \
             network.tcp.min_rto_ns=5ms), or the plan without the element (daqnet plan {file} --fail {})",
            faults[0].element
        ));
        return v;
    }
    if let Some(e) = r.edge.as_ref().filter(|e| e.drops > 0) {
        return edge_verdict(r, e, sc, file);
    }
    if r.transport_timeouts() > 0 && l.share_ge_100ms > 0.0 {
        let at = worst.map_or(String::new(), |p| {
            format!(", most at {} ({} drops, peak {})", p.name, p.drops, size(p.peak_bytes))
        });
        v.push(format!(
            "verdict: incast — {:.1} % of events waited ≥ 100 ms: {} retransmission timeouts after {} drops{at}",
            100.0 * l.share_ge_100ms,
            r.transport_timeouts(),
            r.switch.drops
        ));
        let mut remedies = Vec::new();
        if let Some((field, _)) = &buffer {
            remedies.push(format!("a deeper buffer (--set {field}={})", size(sc.nominal_event_bytes().max(1_000_000))));
        }
        if let Some(c) = shaping.filter(|&c| c >= sc.system.fragments_per_unit) {
            remedies.push(format!("traffic shaping (--set system.credits_per_node={c})"));
        }
        remedies.push("a shorter minimum RTO (--set network.tcp.min_rto_ns=5ms)".into());
        v.push(format!("try: {}", remedies.join(", ")));
    } else if r.switch.drops > 0 {
        v.push(format!(
            "verdict: {} drops but no event waited for a timeout: fast retransmission repaired them (median {:.2} ms)",
            r.switch.drops, l.median
        ));
    } else if let Some(f) = r.flow_control.as_ref().filter(|f| f.mode == "credit") {
        v.push(format!(
            "verdict: lossless — no drops: the links sent only against {}s; {:.1} % of events waited ≥ 100 ms",
            f.mode,
            100.0 * l.share_ge_100ms
        ));
    } else if let Some(f) = r.flow_control.as_ref().filter(|f| f.pause_frames > 0) {
        v.push(format!(
            "verdict: lossless — no drops; {} pause frames held senders back (hosts paused {:.3} s, switch ports \
             {:.3} s, summed), {:.1} % of events waited ≥ 100 ms",
            f.pause_frames,
            f.host_paused_ns as f64 / 1e9,
            r.switch.paused_ns as f64 / 1e9,
            100.0 * l.share_ge_100ms
        ));
    } else {
        let peak = worst.map_or(String::new(), |p| format!(" (peak queue {} at {})", size(p.peak_bytes), p.name));
        v.push(format!("verdict: no drops: below the incast onset{peak}"));
        let f = sc.system.fragments_per_unit.max(1);
        match (sc.system.credits_per_node, &buffer) {
            (daqnet_core::scenario::Credits::Limited(c), _) => {
                let step = (c / 2 / f).max(1) * f;
                v.push(format!(
                    "to find the onset: daqnet sweep {file} --vary system.credits_per_node={c}..{}:{step}",
                    4 * c
                ));
            }
            (_, Some((field, b))) => {
                let range = format!("{}..{}:{}", size(*b / 10), size(*b), size(*b / 10));
                v.push(format!("to find the onset: daqnet sweep {file} --vary {field}={range}"));
            }
            _ => {}
        }
    }
    v
}

/// A sub-farm's verdict: how close the payload came to the SFC link's capacity, or to the
/// workers' processing capacity, and what to compare next.
fn farm_verdict(
    r: &daqnet_core::report::RunReport,
    f: &daqnet_core::report::FarmStats,
    farm: &daqnet_core::scenario::Farm,
    payload_share: f64,
    file: &str,
) -> Vec<String> {
    let link = farm.sfc_link_bps as f64 * payload_share;
    let mut v = vec![format!(
        "verdict: {:.0} Mb/s of event payload = {:.1} % of the SFC link's payload capacity ({:.0} Mb/s); workers \
         idle {:.1} % of the time",
        r.goodput_bps / 1e6,
        100.0 * r.goodput_bps / link,
        link / 1e6,
        100.0 * f.idle_fraction
    )];
    v.push(format!(
        "compare: daqnet sweep {file} --vary farm.initial_tokens=1,2,4 (or --set farm.implementation=v1 --vary \
         farm.dispatch=tokens,round_robin)"
    ));
    v
}

/// The edge hosts' NICs dropped frames their bus could not take: say where, and the daqring
/// rate limit that would spare them ([LOSSLESS] §V-C), as a sweep of the polling cycle from
/// the cycle at which every ring of one host together matches its bus.
fn edge_verdict(
    r: &daqnet_core::report::RunReport,
    e: &daqnet_core::report::SwitchStats,
    sc: &Scenario,
    file: &str,
) -> Vec<String> {
    use daqnet_core::scenario::Topology;
    let worst = e.ports.iter().max_by_key(|p| p.drops).expect("drops come from a port");
    let n = &sc.network;
    let mut v = vec![format!(
        "verdict: the edge hosts' bus — {} frames dropped in their NICs (most at {}: {}), {} retransmission \
         timeouts; the switches dropped {}",
        e.drops,
        worst.name,
        worst.drops,
        r.transport_timeouts(),
        r.switch.drops
    )];
    let (tier, rings) = match (n.topology, n.fabric.as_ref()) {
        (Topology::Star, _) => ("switch", 1),
        (Topology::ParallelLeafSpine, Some(f)) => ("fabric.leaf", f.nodes_per_rack * f.rack_planes()),
        _ => return v,
    };
    let bus = n.edge.as_ref().map_or(1, |e| e.bus_bps.max(1));
    let frame_bits = n.wire_frame_bytes() * 8;
    let safe_ns = frame_bits as u128 * rings as u128 * 1_000_000_000 / bus as u128;
    let cycles: Vec<String> = [1, 2, 4, 8].iter().map(|d| format!("{}ns", safe_ns / d)).collect();
    v.push(format!(
        "try: rate-limited daqrings, one frame per polling cycle: daqnet sweep {file} --set \
         network.{tier}.kind=daqring --set network.{tier}.daqring.burst_frames=1 --vary \
         network.{tier}.daqring.poll_cycle_ns={}",
        cycles.join(",")
    ));
    v
}
