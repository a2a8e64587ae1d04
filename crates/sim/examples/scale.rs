//! One case of `daqnet bench --only scale` (all-to-all, N readout units and N nodes), run a few
//! times, for profiling the simulator: it builds in seconds where the `daqnet` binary takes
//! minutes. `daqnet bench` remains the measurement of record (ratios against the bare queue
//! measured in the same run).
//!
//! ```sh
//! cargo run --release -p daqnet-sim --example scale -- 500 3
//! perf record -g target/release/examples/scale 500 1
//! ```

use daqnet_sim::{simulate, SimOptions};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u32| args.get(i).map_or(default, |s| s.parse().expect("a whole number"));
    let (n, repeat) = (arg(1, 500), arg(2, 3));
    // The bench's case: the same bytes at every size (40,000 / N events of N fragments).
    let events = 40_000 / n;
    let sets = [
        format!("system.readout_units={n}"),
        format!("system.nodes={n}"),
        format!("run.events={events}"),
        format!("run.warmup_events={}", events / 8),
    ];
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench/scale.toml");
    let scenario = daqnet_core::scenario::load(&path, &sets).expect("the bench scenario loads");
    for _ in 0..repeat {
        let out = simulate(&scenario, "scale", SimOptions::default());
        let work = out.report.sim_work.expect("the simulator reports its work");
        let wall = out.report.wall_s;
        println!(
            "N = {n}: {wall:.3} s, {} scheduler events, {:.2} M/s",
            work.scheduler_events,
            work.scheduler_events as f64 / wall / 1e6
        );
    }
}
