//! The summary of a report as a person reads it (`daqnet sim`, `run`, `testbed run`): only
//! what the report measured.

use super::{FaultRecord, RunReport, SwitchStats};

impl SwitchStats {
    /// The summary's words: all drops, and the port with the most (then the fullest), if any.
    fn summary(&self) -> Option<String> {
        let p = self.ports.iter().max_by_key(|p| (p.drops, p.peak_bytes))?;
        Some(format!("{} (most at {}: {} drops, peak {} B)", self.drops, p.name, p.drops, p.peak_bytes))
    }
}

impl RunReport {
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
                "{} retransmits, {} timeouts, {} fast recoveries ({} failed), {} lost retransmissions{}{}",
                t.retransmits,
                t.timeouts,
                t.fast_recoveries,
                t.recovery_fails,
                t.lost_retransmits,
                if t.loss_probes > 0 { format!(", {} tail-loss probes", t.loss_probes) } else { String::new() },
                match (t.undos, t.spurious_timeouts) {
                    (0, _) => String::new(),
                    (u, 0) => format!(", {u} reductions undone"),
                    (u, s) => format!(", {u} reductions undone ({s} spurious timeouts)"),
                }
            ),
        }
    }

    /// The ECN line of the summary: marks at the switches, as the receivers got them and as
    /// the senders learned of them, the reductions they made, and DCTCP's α.
    fn ecn_row(&self) -> String {
        let t = &self.tcp;
        let mut s = format!(
            "{} marks at switches, {} CE segments received, {} segments echoed",
            self.switch.marks, t.ce_received, t.delivered_ce
        );
        if t.ecn_reductions > 0 {
            s += &format!(", {} window reductions", t.ecn_reductions);
        }
        if let Some(a) = self.dctcp_alpha {
            s += &format!(", DCTCP α {a:.3}");
        }
        s
    }

    /// The flow-control line of the summary: pause frames, the time hosts and switch ports
    /// spent paused (summed over them), and any cycle of buffer dependencies.
    fn flow_row(&self, f: &super::FlowStats) -> String {
        let mode = match f.mode.as_str() {
            "pfc" => "PFC (802.1Qbb)",
            "credit" => "credit-based links",
            _ => "pause (802.3x)",
        };
        let secs = |ns: u64| ns as f64 / 1e9;
        let mut s = format!(
            "{mode}: {} pause frames; hosts paused {:.3} s, switch ports {:.3} s (summed)",
            f.pause_frames,
            secs(f.host_paused_ns),
            secs(self.switch.paused_ns)
        );
        s += &match &f.buffer_dependency_cycle {
            None => "; no cycle of buffer dependencies".to_string(),
            Some(c) => format!("; DEADLOCK RISK, a cycle of buffer dependencies: {}", c.join(" -> ")),
        };
        s
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

    /// Whether the report's times are simulated (a simulator's report says how much work the
    /// simulation was) rather than wall-clock time.
    pub fn simulated(&self) -> bool {
        self.sim_work.is_some()
    }

    /// A human-readable summary table: what the report measured, a row each.
    pub fn summary_table(&self) -> String {
        let mut t = Table::default();
        self.head_rows(&mut t);
        if let Some(f) = &self.fabric {
            fabric_rows(&mut t, f, self.goodput_bps);
        }
        self.network_rows(&mut t);
        if let Some(f) = &self.farm {
            farm_rows(&mut t, f);
        }
        if let Some(p) = &self.pipe {
            pipe_rows(&mut t, p);
        }
        if let Some(w) = &self.sim_work {
            let work = format!(
                "{:.2} s simulated, {} packets, {} scheduler events",
                w.simulated_s, w.packets, w.scheduler_events
            );
            t.row("simulator", work);
        }
        for f in self.fault_lines() {
            t.row("fault", f);
        }
        let speed = self.sim_events_per_s.map(|e| format!(" ({e:.0} events/s)")).unwrap_or_default();
        t.row("wall time", format!("{:.2} s{speed}", self.wall_s));
        t.0
    }

    /// What ran, and what it built how fast.
    fn head_rows(&self, t: &mut Table) {
        let nb = &self.events_not_built;
        t.row("substrate", self.substrate.clone());
        t.row("scenario", format!("{} (seed {})", self.scenario, self.seed));
        t.row("events built", format!("{}", self.events_built));
        t.row("events not built", format!("{} timed out, {} lost, {} abandoned", nb.timed_out, nb.lost, nb.abandoned));
        let clock = if self.simulated() { "simulated" } else { "of wall-clock time" };
        t.row("measured part", format!("{:.3} s {clock}", self.duration_s));
        t.row("event rate", format!("{:.1} Hz", self.event_rate_hz));
        t.row("goodput", format!("{:.3} Gb/s", self.goodput_bps / 1e9));
    }

    /// Latency, TCP and the switch (and edge hosts' NICs, when modelled).
    fn network_rows(&self, t: &mut Table) {
        let l = &self.latency_ms;
        t.row(
            "latency (ms)",
            format!(
                "mean {:.2}  p1 {:.2}  q1 {:.2}  median {:.2}  q3 {:.2}  p99 {:.2}  max {:.2}",
                l.mean, l.p1, l.q1, l.median, l.q3, l.p99, l.max
            ),
        );
        t.row("events ≥ 100 ms", format!("{:.1} %", 100.0 * l.share_ge_100ms));
        match &self.rc {
            Some(rc) => t.row(
                "rc",
                format!(
                    "{} data packets ({} again), {} ACKs, {} NAKs; went back {} times on a NAK, {} on a timeout",
                    rc.data_packets, rc.retransmitted_packets, rc.acks, rc.naks, rc.go_back_n, rc.timeouts
                ),
            ),
            None => t.row("tcp", self.tcp_row()),
        }
        let switch = match self.switch.summary() {
            // No port measured: the roles ran on one host, with no switch between them.
            None => "none measured (a run on one host has no switch between its roles)".into(),
            Some(s) if self.switch.drops > 0 => s,
            Some(_) => "0".to_string(),
        };
        t.row("switch drops", switch);
        if self.switch.marks > 0 || self.tcp.delivered_ce > 0 {
            t.row("ecn", self.ecn_row());
        }
        if let Some(f) = &self.flow_control {
            t.row("flow control", self.flow_row(f));
        }
        if let Some(e) = &self.edge {
            // Shown with no drops too: the fullest NIC says how close the bus came.
            t.row("edge NIC drops", e.summary().unwrap_or_else(|| "0".into()));
        }
    }
}

/// Rows of `  name  value`, the names in a column.
#[derive(Default)]
struct Table(String);

impl Table {
    fn row(&mut self, k: &str, v: String) {
        self.0.push_str(&format!("  {k:<26} {v}\n"));
    }
}

/// A parallel leaf-spine's plan against the goodput reached, and each element that failed.
fn fabric_rows(t: &mut Table, f: &super::FabricStats, goodput_bps: f64) {
    t.row(
        "fabric plan (goodput)",
        format!(
            "bound {:.3} Gb/s (eq. (1)), {} placement {:.3} Gb/s: {:.1} % reached",
            f.bound_goodput_bps / 1e9,
            f.assignment,
            f.planned_goodput_bps / 1e9,
            100.0 * goodput_bps / f.planned_goodput_bps
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
        let heard =
            fault.detected_s.map_or(String::new(), |t| format!("port status after {:.1} ms, ", (t - fault.at_s) * 1e3));
        let cost = fault.cost.as_ref().map_or(String::new(), |c| {
            format!(
                "; {} events hit (slowest {:.1} ms), all built {:.1} ms after",
                c.events_hit, c.slowest_hit_ms, c.recovered_after_ms
            )
        });
        t.row(
            &format!("{} down", fault.element),
            format!("at {:.3} s, {heard}{rerouted}; {} frames lost{cost}", fault.at_s, fault.frames_lost),
        );
    }
}

/// A sub-farm's dispatch, its workers' throughput and the SFC's queues.
fn farm_rows(t: &mut Table, f: &super::FarmStats) {
    let w = &f.worker_bps;
    t.row("sub-farm", format!("{} with {} dispatch, {} workers", f.implementation, f.dispatch, f.workers.len()));
    t.row(
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
    t.row(
        "SFC queues",
        format!(
            "events peak {} mean {:.1}, tokens peak {} mean {:.1}; {} events waited for a worker",
            f.peak_event_queue, f.mean_event_queue, f.peak_token_queue, f.mean_token_queue, f.waited_for_token
        ),
    );
    if f.protocol_errors > 0 {
        t.row("protocol errors", format!("{} (tokens from unknown workers or for events not sent)", f.protocol_errors));
    }
}

/// DAQPIPE: what ran over what, each node's rates, and what was lost.
fn pipe_rows(t: &mut Table, p: &super::PipeStats) {
    let k =
        if p.scheduler == "simple" { "all at once".to_string() } else { format!("{} parallel", p.parallel_transfers) };
    let over =
        if p.transport.is_empty() || p.transport == "sim" { String::new() } else { format!(", over {}", p.transport) };
    if p.pattern.is_empty() || p.pattern == "event_building" {
        t.row("pipe", format!("{} nodes, pulls {k}{over}", p.nodes));
    } else {
        t.row("pipe", format!("{} nodes, {}{over}", p.nodes, p.pattern));
    }
    t.row(
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
    let steady = if p.steady_state { "steady state" } else { "mean over the run: too short for a steady state" };
    t.row("receive per node", format!("{:.1} Gb/s ({steady})", p.steady_recv_bps / 1e9));
    if p.incomplete > 0 {
        t.row("incomplete events", format!("{} built without the fragments of lost nodes", p.incomplete));
    }
    if p.verified_payloads + p.bad_payloads > 0 {
        let what = "fragments or messages verified (key at both ends, length)";
        t.row("payloads", format!("{} {what}, {} bad", p.verified_payloads, p.bad_payloads));
    }
    for l in &p.lost_nodes {
        t.row("lost", format!("process {}: {}", l.node, lost_node(l)));
    }
}

/// When a lost DAQPIPE node was killed and when the others noticed.
fn lost_node(l: &super::LostNode) -> String {
    let first = l.noticed.iter().map(|n| n.1).fold(f64::INFINITY, f64::min);
    let last = l.noticed.iter().map(|n| n.1).fold(0.0, f64::max);
    match l.killed_at_s {
        Some(k) => format!(
            "killed at {k:.3} s; noticed by {} nodes {:.1} .. {:.1} ms later",
            l.noticed.len(),
            (first - k) * 1e3,
            (last - k) * 1e3
        ),
        None => format!("noticed by {} nodes at {first:.3} .. {last:.3} s", l.noticed.len()),
    }
}
