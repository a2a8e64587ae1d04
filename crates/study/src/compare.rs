//! Two substrates over the same sweep, side by side (`daqnet validate`): per point the median,
//! p99, share of events that waited ≥ 100 ms, drops and timeouts of each, and the agreement
//! figures of [ATLAS-DC] §6's validation — the incast onset in each, and the ratio of medians
//! where neither side has timeouts — and of goodput .

use crate::points::{point_dir, read_point};
use crate::sweep::SweepPlan;
use anyhow::Context;
use daqnet_core::report::RunReport;
use std::fmt::Write as _;
use std::path::Path;

/// Agreement thresholds (what counts as agreement).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Criteria {
    /// Largest relative difference of medians where neither side has timeouts (0.2 = ±20 %).
    pub median_tolerance: f64,
    /// Largest factor between the shares of events that waited ≥ 100 ms.
    pub share_factor: f64,
    /// Largest relative difference of the incast onsets (0.25 = ±25 %).
    pub onset_tolerance: f64,
    /// A point has incast when at least this share of its events waited ≥ 100 ms.
    pub incast_share: f64,
    /// Largest relative difference of goodput (0.1 = ±10 %).
    pub goodput_tolerance: f64,
    /// Largest factor between the ECN marks of the two sides.
    pub marks_factor: f64,
}

impl Default for Criteria {
    fn default() -> Self {
        Criteria {
            median_tolerance: 0.2,
            share_factor: 2.0,
            onset_tolerance: 0.25,
            incast_share: 0.01,
            goodput_tolerance: 0.1,
            marks_factor: 1.5,
        }
    }
}

/// The runs of one point on one substrate (one per repeat, seeds `run.seed`, `run.seed + 1`, …).
/// Its figures are means over the runs, so that a point where single runs scatter widely is
/// compared by its average behaviour; with one run they are that run's.
#[derive(Debug, Clone, Default)]
pub struct Runs(pub Vec<RunReport>);

impl Runs {
    fn mean(&self, f: impl Fn(&RunReport) -> f64) -> f64 {
        self.0.iter().map(f).sum::<f64>() / self.0.len().max(1) as f64
    }

    /// Mean of the runs' median latencies, ms.
    pub fn median_ms(&self) -> f64 {
        self.mean(|r| r.latency_ms.median)
    }

    /// Mean of the runs' 99th-percentile latencies, ms.
    pub fn p99_ms(&self) -> f64 {
        self.mean(|r| r.latency_ms.p99)
    }

    /// Mean share of events that waited ≥ 100 ms.
    pub fn share(&self) -> f64 {
        self.mean(|r| r.latency_ms.share_ge_100ms)
    }

    /// Lowest and highest share of events that waited ≥ 100 ms over the runs.
    pub fn share_range(&self) -> (f64, f64) {
        let shares = self.0.iter().map(|r| r.latency_ms.share_ge_100ms);
        (shares.clone().fold(f64::INFINITY, f64::min), shares.fold(f64::NEG_INFINITY, f64::max))
    }

    /// Mean switch drops per run.
    pub fn drops(&self) -> f64 {
        self.mean(|r| r.switch.drops as f64)
    }

    /// Mean retransmission timeouts per run.
    pub fn timeouts(&self) -> f64 {
        self.mean(|r| r.tcp.timeouts as f64)
    }

    /// Mean goodput, bit/s.
    pub fn goodput_bps(&self) -> f64 {
        self.mean(|r| r.goodput_bps)
    }

    /// Mean ECN marks at the switches per run.
    pub fn marks(&self) -> f64 {
        self.mean(|r| r.switch.marks as f64)
    }

    /// (sub-farm runs) Per-worker throughput over the runs: lowest, highest and mean
    /// coefficient of variation, as shares of the mean; `None` for other runs.
    pub fn worker_spread(&self) -> Option<(f64, f64, f64)> {
        let spreads: Vec<_> = self.0.iter().filter_map(|r| r.farm.as_ref().map(|f| f.worker_bps.clone())).collect();
        if spreads.is_empty() {
            return None;
        }
        let rel = |x: f64, mean: f64| if mean > 0.0 { x / mean } else { 0.0 };
        let lo = spreads.iter().map(|w| rel(w.min, w.mean)).fold(f64::INFINITY, f64::min);
        let hi = spreads.iter().map(|w| rel(w.max, w.mean)).fold(f64::NEG_INFINITY, f64::max);
        Some((lo, hi, spreads.iter().map(|w| w.cv).sum::<f64>() / spreads.len() as f64))
    }
}

/// One point run on both substrates.
#[derive(Debug, Clone)]
pub struct Pair {
    /// (axis path, value) of the point.
    pub values: Vec<(String, String)>,
    /// Reference (the testbed).
    pub reference: Runs,
    /// Model (the simulator).
    pub model: Runs,
}

impl Pair {
    /// No run on either side had a retransmission timeout.
    pub fn no_timeouts(&self) -> bool {
        self.reference.timeouts() == 0.0 && self.model.timeouts() == 0.0
    }

    /// Model median / reference median.
    pub fn median_ratio(&self) -> f64 {
        self.model.median_ms() / self.reference.median_ms()
    }

    /// Model goodput / reference goodput.
    pub fn goodput_ratio(&self) -> f64 {
        self.model.goodput_bps() / self.reference.goodput_bps()
    }
}

/// Whether two shares of slow events agree: both below the incast threshold, or within `factor`.
fn shares_agree(a: f64, b: f64, c: &Criteria) -> bool {
    (a < c.incast_share && b < c.incast_share) || (a.min(b) > 0.0 && a.max(b) / a.min(b) <= c.share_factor)
}

/// The first value of the first axis (in sweep order) whose incast state differs from the first
/// value's: where incast starts (or stops, for a growing buffer). `None`: no change in range.
pub fn onset(pairs: &[&Pair], side: impl Fn(&Pair) -> &Runs, c: &Criteria) -> Option<String> {
    let incast = |p: &Pair| side(p).share() >= c.incast_share;
    let first = incast(pairs.first()?);
    pairs.iter().find(|p| incast(p) != first).map(|p| p.values.first().map(|(_, v)| v.clone()).unwrap_or_default())
}

/// The agreement figures of a comparison.
#[derive(Debug, Clone)]
pub struct Agreement {
    /// Points whose medians are within tolerance, of the points where neither side had timeouts.
    pub medians: (usize, usize),
    /// Points whose shares of ≥ 100 ms events agree, of all points.
    pub shares: (usize, usize),
    /// Incast onset along the first axis: reference, model.
    pub onsets: (Option<String>, Option<String>),
    /// Whether the onsets agree (both absent, or within tolerance).
    pub onset_agrees: bool,
    /// Points whose goodputs are within tolerance, of all points.
    pub goodputs: (usize, usize),
    /// With ECN: points whose marks are within a factor of each other, of the points where
    /// either side marked.
    pub marks: (usize, usize),
    /// Points where both sides dropped, or neither did, of all points.
    pub drops_alike: (usize, usize),
}

/// Reads both sweeps' points into pairs, the repeats of each combination of axis values
/// together (points missing on either side are left out of their side's runs; a combination
/// with no run on one side is skipped).
pub fn pairs(plan: &SweepPlan, reference: &Path, model: &Path) -> anyhow::Result<Vec<Pair>> {
    let repeat = plan.repeat.max(1) as usize;
    let mut v: Vec<Pair> = Vec::new();
    for first in (0..plan.len()).step_by(repeat) {
        let mut pair = Pair { values: Vec::new(), reference: Runs::default(), model: Runs::default() };
        for i in first..first + repeat {
            for (dir, runs) in [(reference, &mut pair.reference), (model, &mut pair.model)] {
                if let Some((meta, report)) = read_point(&point_dir(dir, i))? {
                    pair.values = meta.values;
                    runs.0.push(report);
                }
            }
        }
        if !pair.reference.0.is_empty() && !pair.model.0.is_empty() {
            v.push(pair);
        }
    }
    Ok(v)
}

/// The agreement figures over `pairs` (onset: along the first axis, at the other axes' first values).
pub fn agreement(pairs: &[Pair], c: &Criteria) -> Agreement {
    let quiet: Vec<&Pair> = pairs.iter().filter(|p| p.no_timeouts()).collect();
    let close = quiet.iter().filter(|p| (p.median_ratio() - 1.0).abs() <= c.median_tolerance).count();
    let shares = pairs.iter().filter(|p| shares_agree(p.reference.share(), p.model.share(), c)).count();
    let line = onset_line(pairs);
    let onsets = (onset(&line, |p| &p.reference, c), onset(&line, |p| &p.model, c));
    let onset_agrees = match &onsets {
        (None, None) => true,
        (Some(a), Some(b)) => match (crate::table::number(a), crate::table::number(b)) {
            (Some(a), Some(b)) => (b - a).abs() <= c.onset_tolerance * a.abs(),
            _ => a == b,
        },
        _ => false,
    };
    let goodputs = pairs.iter().filter(|p| (p.goodput_ratio() - 1.0).abs() <= c.goodput_tolerance).count();
    let marking: Vec<&Pair> = pairs.iter().filter(|p| p.reference.marks() > 0.0 || p.model.marks() > 0.0).collect();
    let within = |p: &&&Pair| {
        let (a, b) = (p.reference.marks(), p.model.marks());
        a.min(b) > 0.0 && a.max(b) / a.min(b) <= c.marks_factor
    };
    let alike = pairs.iter().filter(|p| (p.reference.drops() > 0.0) == (p.model.drops() > 0.0)).count();
    Agreement {
        marks: (marking.iter().filter(within).count(), marking.len()),
        drops_alike: (alike, pairs.len()),
        medians: (close, quiet.len()),
        shares: (shares, pairs.len()),
        onsets,
        onset_agrees,
        goodputs: (goodputs, pairs.len()),
    }
}

/// Writes `compare.csv`: one row per point, the reference's and the model's figures side by
/// side (means over each side's runs, with the range of the share of slow events).
pub fn write_csv(pairs: &[Pair], path: &Path, names: (&str, &str)) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut head: Vec<String> =
        pairs.first().map(|p| p.values.iter().map(|(a, _)| a.clone()).collect()).unwrap_or_default();
    for side in [names.0, names.1] {
        for col in [
            "runs",
            "median_ms",
            "p99_ms",
            "share_ge_100ms",
            "share_min",
            "share_max",
            "drops",
            "timeouts",
            "goodput_bps",
            "marks",
        ] {
            head.push(format!("{side}_{col}"));
        }
    }
    head.extend(["median_ratio".into(), "goodput_ratio".into()]);
    w.write_record(&head)?;
    for p in pairs {
        let mut row: Vec<String> = p.values.iter().map(|(_, v)| v.clone()).collect();
        for r in [&p.reference, &p.model] {
            let (lo, hi) = r.share_range();
            row.push(r.0.len().to_string());
            row.extend(
                [r.median_ms(), r.p99_ms(), r.share(), lo, hi, r.drops(), r.timeouts(), r.goodput_bps(), r.marks()]
                    .map(|x| format!("{x}")),
            );
        }
        row.extend([p.median_ratio(), p.goodput_ratio()].map(|x| format!("{x}")));
        w.write_record(&row)?;
    }
    w.flush()?;
    Ok(())
}

/// The comparison as an aligned text table plus the agreement figures.
pub fn render(pairs: &[Pair], a: &Agreement, c: &Criteria, names: (&str, &str)) -> String {
    let axis = pairs.first().map(|p| p.values.iter().map(|(a, _)| short(a)).collect::<Vec<_>>().join(" × "));
    let mut header = vec![axis.unwrap_or_default()];
    for side in [names.0, names.1] {
        header.extend(["median ms", "p99 ms", "≥100ms", "drops", "RTOs", "Gb/s"].map(|h| format!("{side} {h}")));
    }
    header.extend(["median sim/tb".to_string(), "goodput sim/tb".to_string()]);
    let side = |r: &Runs| {
        vec![
            format!("{:.2}", r.median_ms()),
            format!("{:.2}", r.p99_ms()),
            format!("{:.1} %", 100.0 * r.share()),
            format!("{:.0}", r.drops()),
            format!("{:.0}", r.timeouts()),
            format!("{:.3}", r.goodput_bps() / 1e9),
        ]
    };
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|p| {
            let mut row = vec![p.values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(" × ")];
            row.extend(side(&p.reference));
            row.extend(side(&p.model));
            row.push(format!("{:.2}{}", p.median_ratio(), if p.no_timeouts() { "" } else { " (RTOs)" }));
            row.push(format!("{:.2}", p.goodput_ratio()));
            row
        })
        .collect();
    let mut s = crate::table::aligned(&header, &rows);
    if pairs.iter().any(|p| p.reference.0.len() > 1 || p.model.0.len() > 1) {
        let _ = writeln!(s, "several runs per point: the figures above are means; share ≥ 100 ms, lowest–highest run:");
        let range = |r: &Runs| match r.share_range() {
            (lo, _) if r.0.len() == 1 => format!("{:.1} % (1 run)", 100.0 * lo),
            (lo, hi) => format!("{:.1}–{:.1} % ({} runs)", 100.0 * lo, 100.0 * hi, r.0.len()),
        };
        for p in pairs {
            let v = p.values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(" × ");
            let _ = writeln!(s, "  {v:<20} | {} {} | {} {}", names.0, range(&p.reference), names.1, range(&p.model));
        }
    }
    let verdict = |ok: bool| if ok { "agrees" } else { "MISSES" };
    let mut count = |what: &str, (ok, of): (usize, usize), within: String| {
        let _ = writeln!(s, "{what}: {ok} of {of} {within} — {}", verdict(ok == of));
    };
    count("medians where neither side has timeouts", a.medians, format!("within ±{:.0} %", 100.0 * c.median_tolerance));
    count(
        "share of events ≥ 100 ms",
        a.shares,
        format!("points within a factor {} (or both < {:.0} %)", c.share_factor, 100.0 * c.incast_share),
    );
    count("goodput", a.goodputs, format!("points within ±{:.0} %", 100.0 * c.goodput_tolerance));
    if a.marks.1 > 0 {
        count("ECN marks", a.marks, format!("points where either side marked within a factor {}", c.marks_factor));
        count("drops", a.drops_alike, "points where both sides drop or neither does".into());
        let _ = writeln!(s, "ECN marks per run, {} / {}:", names.0, names.1);
        for p in pairs {
            let v = p.values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(" × ");
            let _ = writeln!(s, "  {v:<20} | {:.0} / {:.0}", p.reference.marks(), p.model.marks());
        }
    }
    if pairs.iter().any(|p| p.reference.worker_spread().is_some()) {
        let _ = writeln!(s, "per-worker throughput, lowest and highest over the mean (cv):");
        let spread = |r: &Runs| match r.worker_spread() {
            Some((lo, hi, cv)) => format!("{lo:.2}–{hi:.2} (cv {:.1} %)", 100.0 * cv),
            None => "—".into(),
        };
        for p in pairs {
            let v = p.values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(" × ");
            let _ = writeln!(s, "  {v:<20} | {} {} | {} {}", names.0, spread(&p.reference), names.1, spread(&p.model));
        }
    }
    let line = onset_line(pairs);
    let _ = writeln!(
        s,
        "incast onset along {} (≥ {:.0} % of events wait ≥ 100 ms): {}; {} — {}",
        pairs.first().and_then(|p| p.values.first()).map_or(String::new(), |(a, _)| short(a)),
        100.0 * c.incast_share,
        states(&line, |p| &p.reference, names.0, c),
        states(&line, |p| &p.model, names.1, c),
        verdict(a.onset_agrees)
    );
    s
}

/// The last part of a dotted path: what a table column or figure calls it.
fn short(path: &str) -> String {
    path.rsplit('.').next().unwrap_or(path).to_string()
}

/// The points along the first axis, the other axes at the first point's values.
fn onset_line(pairs: &[Pair]) -> Vec<&Pair> {
    let rest = |p: &Pair| p.values.iter().skip(1).cloned().collect::<Vec<_>>();
    pairs.iter().filter(|p| pairs.first().is_some_and(|f| rest(f) == rest(p))).collect()
}

/// Where one side has incast along the line: "sim: incast at 100kB, 200kB; none at 400kB, 4MB".
fn states(line: &[&Pair], side: impl Fn(&Pair) -> &Runs, name: &str, c: &Criteria) -> String {
    let value = |p: &Pair| p.values.first().map(|(_, v)| v.clone()).unwrap_or_default();
    let (yes, no): (Vec<&Pair>, Vec<&Pair>) = line.iter().copied().partition(|p| side(p).share() >= c.incast_share);
    let list = |v: &[&Pair]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|p| value(p)).collect::<Vec<_>>().join(", ")
        }
    };
    format!("{name} has it at {}, not at {}", list(&yes), list(&no))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(median: f64, share: f64, timeouts: u64) -> RunReport {
        let mut r = RunReport::default();
        r.latency_ms.median = median;
        r.latency_ms.share_ge_100ms = share;
        r.tcp.timeouts = timeouts;
        // A closed loop: goodput falls as latency grows.
        r.goodput_bps = 1e9 / median;
        r
    }

    fn pair(v: &str, tb: (f64, f64, u64), sim: (f64, f64, u64)) -> Pair {
        Pair {
            values: vec![("network.switch.buffer.port_bytes".into(), v.into())],
            reference: Runs(vec![report(tb.0, tb.1, tb.2)]),
            model: Runs(vec![report(sim.0, sim.1, sim.2)]),
        }
    }

    #[test]
    fn agreement_figures() {
        let c = Criteria::default();
        let pairs = vec![
            pair("100kB", (30.0, 0.10, 9), (210.0, 1.0, 90)),
            pair("200kB", (20.0, 0.04, 3), (25.0, 0.05, 2)),
            pair("400kB", (18.0, 0.0, 0), (17.5, 0.0, 0)),
            pair("4MB", (18.0, 0.0, 0), (25.0, 0.0, 0)),
        ];
        let a = agreement(&pairs, &c);
        // Two quiet points; 25/18 is 39 % off.
        assert_eq!(a.medians, (1, 2));
        // 1.0 vs 0.10 is a factor 10; 0.05 vs 0.04 agrees; both zero agree.
        assert_eq!(a.shares, (3, 4));
        assert_eq!(a.onsets, (Some("400kB".into()), Some("400kB".into())));
        assert!(a.onset_agrees);
        // Goodput within ±10 % only at 400 kB (18 vs 17.5 ms: 2.9 %).
        assert_eq!(a.goodputs, (1, 4));
        let text = render(&pairs, &a, &c, ("testbed", "sim"));
        assert!(text.contains("1 of 2 within ±20 % — MISSES"), "{text}");
        let onset = "incast onset along port_bytes (≥ 1 % of events wait ≥ 100 ms): testbed has it at 100kB, 200kB, \
                     not at 400kB, 4MB; sim has it at 100kB, 200kB, not at 400kB, 4MB — agrees";
        assert!(text.contains(onset), "{text}");
    }

    #[test]
    fn several_runs_compare_by_their_means() {
        let c = Criteria::default();
        let runs = |v: &[(f64, f64, u64)]| Runs(v.iter().map(|&(m, s, t)| report(m, s, t)).collect());
        // One testbed run at 30 %; simulator runs at 22 % and 78 %: either alone could agree or
        // miss, their mean (50 %) is within a factor 2.
        let p = Pair {
            values: vec![("system.credits_per_node".into(), "192".into())],
            reference: runs(&[(60.0, 0.30, 40)]),
            model: runs(&[(40.0, 0.22, 30), (200.0, 0.78, 80)]),
        };
        assert_eq!(p.model.share(), 0.5);
        assert_eq!(p.model.share_range(), (0.22, 0.78));
        assert_eq!((p.model.median_ms(), p.model.timeouts()), (120.0, 55.0));
        assert_eq!(p.median_ratio(), 2.0);
        let pairs = vec![p];
        let a = agreement(&pairs, &c);
        assert_eq!(a.shares, (1, 1));
        let text = render(&pairs, &a, &c, ("testbed", "sim"));
        assert!(text.contains("testbed 30.0 % (1 run) | sim 22.0–78.0 % (2 runs)"), "{text}");
        // A point is quiet only if no run on either side timed out.
        let quiet = Pair {
            values: Vec::new(),
            reference: runs(&[(18.0, 0.0, 0)]),
            model: runs(&[(18.0, 0.0, 0), (19.0, 0.0, 1)]),
        };
        assert!(!quiet.no_timeouts());
    }

    #[test]
    fn sub_farm_runs_show_each_sides_per_worker_spread() {
        let farm = |min: f64, max: f64| {
            let mut r = report(5.0, 0.0, 0);
            let worker_bps = daqnet_core::report::Spread { min, max, mean: 100.0, cv: 0.05 };
            r.farm = Some(daqnet_core::report::FarmStats { worker_bps, ..Default::default() });
            r
        };
        let pairs = vec![Pair {
            values: vec![("farm.initial_tokens".into(), "1".into())],
            reference: Runs(vec![farm(90.0, 110.0)]),
            model: Runs(vec![farm(95.0, 104.0), farm(97.0, 106.0)]),
        }];
        assert_eq!(pairs[0].model.worker_spread(), Some((0.95, 1.06, 0.05)));
        let text = render(&pairs, &agreement(&pairs, &Criteria::default()), &Criteria::default(), ("testbed", "sim"));
        assert!(text.contains("testbed 0.90–1.10 (cv 5.0 %) | sim 0.95–1.06 (cv 5.0 %)"), "{text}");
    }

    #[test]
    fn onsets_compare_numerically_within_tolerance() {
        let c = Criteria::default();
        let credits = |v: &str, share: f64, sim_share: f64| Pair {
            values: vec![("system.credits_per_node".into(), v.into())],
            reference: Runs(vec![report(20.0, share, 0)]),
            model: Runs(vec![report(20.0, sim_share, 0)]),
        };
        let pairs = vec![
            credits("200", 0.0, 0.0),
            credits("400", 0.0, 0.0),
            credits("480", 0.3, 0.0),
            credits("560", 0.9, 0.5),
        ];
        let a = agreement(&pairs, &c);
        assert_eq!(a.onsets, (Some("480".into()), Some("560".into())));
        assert!(a.onset_agrees, "560 is within 25 % of 480");
        let late = vec![credits("200", 0.0, 0.0), credits("480", 0.3, 0.0), credits("800", 0.9, 0.5)];
        assert!(!agreement(&late, &c).onset_agrees, "800 is 67 % above 480");
        let one_sided = vec![credits("200", 0.0, 0.0), credits("480", 0.3, 0.0)];
        assert!(!agreement(&one_sided, &c).onset_agrees);
    }
}
