//! The simulator's cost as the system grows: `scenarios/bench/scale.toml` (256 KiB fragments,
//! 100 Gb/s links, a 16 MB buffer per switch port) at N = 25 … 500 readout units, either
//! all-to-all (N nodes: N² connections) or many-to-few (4 nodes, the shape of an incast). Every
//! size moves the same bytes (40 000 / N events of N fragments), so the columns compare the cost
//! per scheduler event and per packet, and the ratio to the bare event queue measured in the
//! same run shows how far the simulator is from its innermost operation.

use super::{best_queue_baseline, time_case, Case};
use std::path::Path;

/// The sizes of the series.
const SIZES: [u32; 5] = [25, 50, 100, 200, 500];

/// Nodes of the many-to-few shape.
const FEW_NODES: u32 = 4;

#[derive(Clone, Copy)]
enum Shape {
    AllToAll,
    ManyToFew,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::AllToAll => "all-to-all",
            Shape::ManyToFew => "many-to-few",
        }
    }

    fn nodes(self, n: u32) -> u32 {
        match self {
            Shape::AllToAll => n,
            Shape::ManyToFew => FEW_NODES,
        }
    }
}

fn case(shape: Shape, n: u32) -> Case {
    let events = 40_000 / n;
    let sets = [
        format!("system.readout_units={n}"),
        format!("system.nodes={}", shape.nodes(n)),
        format!("run.events={events}"),
        format!("run.warmup_events={}", events / 8),
    ];
    Case::new(format!("scale {} {n}", shape.name()), "bench/scale.toml", &sets)
}

/// Every case of the series, for `--case`.
pub(super) fn cases() -> Vec<Case> {
    [Shape::AllToAll, Shape::ManyToFew].into_iter().flat_map(|s| SIZES.map(|n| case(s, n))).collect()
}

/// Runs the series and prints its table.
pub(super) fn bench_scale(scenarios: &Path, repeat: u32) -> anyhow::Result<()> {
    let baseline = best_queue_baseline(repeat);
    println!("\nscale series (scenarios/bench/scale.toml, one thread); bare queue {:.2} M sched. ev/s", baseline / 1e6);
    println!(
        "{:<12} {:>4} {:>7} {:>7} {:>8} {:>7} {:>12} {:>11} {:>8} {:>8} {:>8} {:>7}",
        "shape",
        "N",
        "conns",
        "used",
        "sim. ms",
        "wall s",
        "sched. ev/s",
        "packets/s",
        "vs queue",
        "vs N=25",
        "peak MiB",
        "B/conn"
    );
    for shape in [Shape::AllToAll, Shape::ManyToFew] {
        let mut first = None;
        for n in SIZES {
            let v = time_case(scenarios, &case(shape, n), repeat)?;
            let get = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            let wall = get("wall_s");
            let rate = get("scheduler_events") / wall;
            let first = *first.get_or_insert(rate);
            println!(
                "{:<12} {n:>4} {:>7.0} {:>7.0} {:>8.1} {wall:>7.2} {rate:>12.0} {:>11.0} {:>7.3}x {:>7.3}x {:>8.0} {:>7.0}",
                shape.name(),
                get("connections"),
                get("connections_open"),
                get("simulated_s") * 1e3,
                get("packets") / wall,
                rate / baseline,
                rate / first,
                get("peak_mib"),
                get("connection_bytes") / get("connections_open"),
            );
        }
    }
    println!(
        "\n'vs N=25': scheduler events per second over the same shape's at N = 25; 'used': connections that\n\
         carried traffic (the simulator makes a connection's state on first use); 'B/conn': bytes of TCP\n\
         state per used connection (structure and queues at their largest), the mean over them."
    );
    Ok(())
}
