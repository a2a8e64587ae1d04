//! One module per `daqnet` verb.

pub mod bench;
pub mod plot;
pub mod role;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod study;
pub mod sweep;
pub mod switch;
pub mod testbed;
pub mod validate;

use anyhow::Context;
use daqnet_core::Scenario;
use std::path::Path;

/// Loads a scenario with `--set` overrides, turning its errors into one readable message.
pub fn load_scenario(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    daqnet_core::scenario::load(path, sets).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Loads a scenario for a real run: [`load_scenario`] plus the checks only a real run needs.
pub fn load_run_scenario(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    let sc = load_scenario(path, sets)?;
    let problems = sc.run_problems();
    if !problems.is_empty() {
        let lines: Vec<String> =
            problems.iter().map(|(field, m)| format!("{}: field `{field}`: {m}", path.display())).collect();
        anyhow::bail!("{}", lines.join("\n"));
    }
    Ok(sc)
}

/// Writes `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create output folder {}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Worker threads by default: one per CPU core.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A sweep runner that simulates each point.
pub fn sim_point(
    per_event: bool,
) -> impl Fn(&daqnet_study::sweep::Point) -> anyhow::Result<daqnet_study::sweep::PointOutput> + Sync {
    move |p| {
        let out = daqnet_sim::simulate(
            &p.scenario,
            &p.origin,
            daqnet_sim::SimOptions { record_events: per_event, ..Default::default() },
        );
        Ok(daqnet_study::sweep::PointOutput { report: out.report, events: out.events })
    }
}
