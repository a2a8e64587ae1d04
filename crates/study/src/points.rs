//! A sweep folder on disk, point by point: where each point's files live, what `point.json`
//! says, and reading a finished point back. Shared by the sweep that writes points and the
//! table and comparison that read them.

use anyhow::Context;
use daqnet_core::report::RunReport;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Identity of one point, stored as `point.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointMeta {
    /// Index in the plan.
    pub index: usize,
    /// Series name.
    pub series: String,
    /// Repeat number, from 0.
    pub repeat: u32,
    /// Seed it ran with.
    pub seed: u64,
    /// (axis path, value) in axis order.
    pub values: Vec<(String, String)>,
}

/// Folder of point `index` inside a sweep folder.
pub fn point_dir(out: &Path, index: usize) -> PathBuf {
    out.join("points").join(format!("p{index:04}"))
}

/// Reads a finished point (point.json + report.json); `None` if it is not finished.
pub fn read_point(dir: &Path) -> anyhow::Result<Option<(PointMeta, RunReport)>> {
    let report_path = dir.join("report.json");
    if !report_path.exists() {
        return Ok(None);
    }
    let read = |p: &Path| std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()));
    let meta: PointMeta = serde_json::from_str(&read(&dir.join("point.json"))?)
        .with_context(|| format!("{} is damaged; delete that folder to rerun the point", dir.display()))?;
    let report: RunReport = serde_json::from_str(&read(&report_path)?)
        .with_context(|| format!("{} is damaged; delete that folder to rerun the point", report_path.display()))?;
    Ok(Some((meta, report)))
}
