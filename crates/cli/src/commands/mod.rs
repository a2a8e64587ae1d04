//! One module per `daqnet` verb.

pub mod bench;
pub mod scenario;
pub mod sim;

use anyhow::Context;
use daqnet_core::Scenario;
use std::path::Path;

/// Loads a scenario with `--set` overrides, turning its errors into one readable message.
pub fn load_scenario(path: &Path, sets: &[String]) -> anyhow::Result<Scenario> {
    daqnet_core::scenario::load(path, sets).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Writes `text` to `dir/name`, creating `dir`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create output folder {}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
