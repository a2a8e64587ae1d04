//! What a column is called on a figure, in what unit its values are, and how its ticks read:
//! `system.credits_per_node` is "traffic-shaping credits per node", a `…_bytes` column's ticks
//! read "600 kB", a share's "10 %".

/// The unit a column's values are in, which decides how its ticks are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes: ticks as 600 kB, 4 MB.
    Bytes,
    /// Nanoseconds: ticks as 40 µs, 200 ms.
    Nanos,
    /// Milliseconds (latencies).
    Millis,
    /// Bits per second: ticks as 1 Gb/s.
    Bps,
    /// Hertz.
    Hz,
    /// A share in [0, 1]: ticks as 10 %.
    Share,
    /// A plain number (a count, a factor).
    Plain,
}

/// Names of the columns people plot, as a figure should say them.
const NAMES: &[(&str, &str)] = &[
    ("system.credits_per_node", "traffic-shaping credits per node"),
    ("system.readout_units", "readout units"),
    ("system.nodes", "nodes"),
    ("system.pus_per_node", "processing units per node"),
    ("system.supervisor.policy", "assignment policy"),
    ("system.supervisor.rate_hz", "event rate asked for"),
    ("system.fragment_size.bytes", "fragment size"),
    ("system.fragments_per_unit", "fragments per readout unit"),
    ("system.processing_time_ns", "processing time"),
    ("network.switch.buffer.port_bytes", "switch buffer per port"),
    ("network.rack_switch.buffer.port_bytes", "top-of-rack buffer per port"),
    ("network.rack_switch.buffer.pool_bytes", "top-of-rack shared buffer"),
    ("network.readout_link_bps", "readout link rate"),
    ("network.node_link_bps", "node link rate"),
    ("network.tcp.min_rto_ns", "minimum RTO"),
    ("network.tcp.congestion_control", "congestion control"),
    ("share_ge_100ms", "share of events ≥ 100 ms"),
    ("goodput_bps", "goodput"),
    ("event_rate_hz", "event rate"),
    ("latency_mean_ms", "mean data-collection latency"),
    ("latency_median_ms", "median data-collection latency"),
    ("latency_p99_ms", "99th percentile of data-collection latency"),
    ("latency_max_ms", "longest data-collection latency"),
    ("timeouts", "retransmission timeouts"),
    ("retransmits", "retransmitted segments"),
    ("drops", "switch drops"),
    ("fast_recoveries", "fast recoveries"),
    ("loss_probes", "tail-loss probes"),
    ("peak_port_bytes", "peak switch port occupancy"),
    ("duration_s", "measured time"),
    ("events_built", "events built"),
];

/// The unit of a column, from its documented name or its suffix.
pub fn unit_of(col: &str) -> Unit {
    if col == "share_ge_100ms" {
        return Unit::Share;
    }
    [("_bytes", Unit::Bytes), ("_ns", Unit::Nanos), ("_ms", Unit::Millis), ("_bps", Unit::Bps), ("_hz", Unit::Hz)]
        .into_iter()
        .find(|(s, _)| col.ends_with(s))
        .map_or(Unit::Plain, |(_, u)| u)
}

/// Names of fields that appear under several paths, by their last segment.
const LAST: &[(&str, &str)] = &[
    ("port_bytes", "buffer per port"),
    ("pool_bytes", "shared buffer pool"),
    ("port_cap_bytes", "buffer cap per port"),
    ("queue_bytes", "queue per collector"),
    ("uplink_bps", "uplink rate"),
];

/// The figure's name for a column: its documented name, or its last path segment in words.
pub fn name_of(col: &str) -> String {
    if let Some((_, n)) = NAMES.iter().find(|(c, _)| *c == col) {
        return n.to_string();
    }
    let last = col.rsplit('.').next().unwrap_or(col);
    if let Some((_, n)) = LAST.iter().find(|(c, _)| *c == last) {
        return n.to_string();
    }
    let last = ["_bytes", "_ns", "_ms", "_bps", "_hz", "_s"].iter().find_map(|s| last.strip_suffix(s)).unwrap_or(last);
    last.replace('_', " ")
}

/// An axis label: the name, and the unit where the ticks do not carry it.
pub fn label_of(col: &str) -> String {
    match unit_of(col) {
        Unit::Millis => format!("{} (ms)", name_of(col)),
        Unit::Hz => format!("{} (Hz)", name_of(col)),
        _ => name_of(col),
    }
}

/// A tick label in `unit`: `6e5` bytes → `600 kB`, `0.1` share → `10 %`.
pub fn tick(v: f64, unit: Unit) -> String {
    let scaled = |v: f64, steps: &[(f64, &str)]| {
        let (f, u) = steps.iter().rev().find(|(f, _)| v.abs() >= *f).copied().unwrap_or(steps[0]);
        format!("{} {u}", number(v / f))
    };
    match unit {
        Unit::Bytes => scaled(v, &[(1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB")]),
        Unit::Nanos => scaled(v, &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")]),
        Unit::Bps => scaled(v, &[(1.0, "b/s"), (1e3, "kb/s"), (1e6, "Mb/s"), (1e9, "Gb/s")]),
        Unit::Share => format!("{} %", number(100.0 * v)),
        Unit::Millis | Unit::Hz | Unit::Plain => number(v),
    }
}

/// A number without float noise: 0.30000000000000004 → 0.3, 2400.0 → 2400, 2.5e7 → 2.5e7.
pub fn number(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        return format!("{v:.1e}");
    }
    let s = format!("{:.3}", v);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The ticks of a log axis over `lo..hi`: 1, 2 and 5 times each power of ten, or only the
/// powers of ten when that would crowd the axis (over four decades).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    debug_assert!(lo > 0.0 && hi.is_finite(), "a log axis over {lo}..{hi}");
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let steps: &[f64] = if last - first > 4 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    (first..=last)
        .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
        .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
        .collect()
}

/// The largest 1, 2 or 5 times a power of ten at or below `v` (> 0): where a log axis starts
/// so that its first tick is at its start.
pub fn log_floor(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * p).find(|t| *t <= v * (1.0 + 1e-9)).unwrap_or(p)
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v` (> 0): where a log axis ends
/// so that its last tick is at its end.
pub fn log_ceil(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|t| *t >= v * (1.0 - 1e-9)).unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_read_as_people_say_them() {
        assert_eq!(label_of("system.credits_per_node"), "traffic-shaping credits per node");
        assert_eq!(label_of("network.tcp.min_rto_ns"), "minimum RTO");
        assert_eq!(label_of("latency_p99_ms"), "99th percentile of data-collection latency (ms)");
        assert_eq!(label_of("network.core.buffer.port_bytes"), "buffer per port");
        assert_eq!(label_of("system.request_bytes"), "request");
    }

    #[test]
    fn ticks_carry_their_unit() {
        assert_eq!(tick(600_000.0, Unit::Bytes), "600 kB");
        assert_eq!(tick(4e6, Unit::Bytes), "4 MB");
        assert_eq!(tick(2e8, Unit::Nanos), "200 ms");
        assert_eq!(tick(0.1, Unit::Share), "10 %");
        assert_eq!(tick(1e9, Unit::Bps), "1 Gb/s");
        assert_eq!(tick(2400.0, Unit::Plain), "2400");
        assert_eq!(number(0.30000000000000004), "0.3");
    }

    #[test]
    fn log_axes_tick_one_two_five_per_decade() {
        assert_eq!(log_ticks(0.9, 60.0), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(log_ticks(1e3, 2e8), vec![1e3, 1e4, 1e5, 1e6, 1e7, 1e8]);
        assert_eq!(log_floor(430.0), 200.0);
        assert_eq!(log_floor(100.0), 100.0);
        assert_eq!(log_floor(0.07), 0.05);
        assert_eq!(log_ceil(495.0), 500.0);
        assert_eq!(log_ceil(920.0), 1000.0);
        assert_eq!(log_ceil(2.0), 2.0);
    }
}
