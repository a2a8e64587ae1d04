//! Study files (`studies/*.toml`): a named experiment of a source document as a sweep over
//! one or more scenario series plus the figures drawn from its table, with a reduced `quick`
//! variant for tests and a first look.

use crate::plot::PlotSpec;
use crate::sweep::{AxisSpec, Series, SweepPlan};
use crate::vary::Axis;
use anyhow::{bail, Context};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// A study file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// One-line title.
    pub title: String,
    /// Which figure or result of which source document it reproduces.
    pub reproduces: String,
    /// What the source reports, to compare with.
    #[serde(default)]
    pub expect: String,
    /// Scenario series; scenario paths are relative to the study file.
    pub series: Vec<StudySeries>,
    /// `--vary` specs of the full study (series may replace them).
    #[serde(default)]
    pub vary: Vec<String>,
    /// `--set` overrides for every series.
    #[serde(default)]
    pub set: Vec<String>,
    /// Runs per point (seeds `run.seed + k`).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Keep per-event records (needed by `hist` figures for exact distributions).
    #[serde(default)]
    pub per_event: bool,
    /// The reduced variant run by `--quick`.
    pub quick: Quick,
    /// Figures by output file name (`fig5a.png`).
    pub plot: BTreeMap<String, PlotSpec>,
}

fn one() -> u32 {
    1
}

/// One scenario series of a study.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySeries {
    /// Legend name.
    pub name: String,
    /// Scenario file, relative to the study file.
    pub scenario: PathBuf,
    /// `--set` overrides for this series only.
    #[serde(default)]
    pub set: Vec<String>,
    /// Replaces the study's `vary` for this series.
    #[serde(default)]
    pub vary: Option<Vec<String>>,
    /// Replaces the quick variant's `vary` for this series.
    #[serde(default)]
    pub quick_vary: Option<Vec<String>>,
    /// Added after `set` in the quick variant, for this series only (a smaller system).
    #[serde(default)]
    pub quick_set: Vec<String>,
}

/// The `--quick` variant: fewer points and events.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Replaces `vary` when given.
    #[serde(default)]
    pub vary: Option<Vec<String>>,
    /// Added after `set`.
    #[serde(default)]
    pub set: Vec<String>,
}

impl Study {
    /// Reads and checks a study file.
    pub fn load(path: &Path) -> anyhow::Result<Study> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read study {}", path.display()))?;
        let study: Study = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if study.series.is_empty() {
            bail!("{}: a study needs at least one [[series]]", path.display());
        }
        if let Some(bad) = study.plot.keys().find(|f| !(f.ends_with(".png") || f.ends_with(".svg"))) {
            bail!("{}: [plot.\"{bad}\"]: figure names end in .png or .svg", path.display());
        }
        Ok(study)
    }

    /// The sweep of this study (quick or full); scenario paths resolved against `dir`, the
    /// study file's folder.
    pub fn plan(&self, dir: &Path, quick: bool) -> anyhow::Result<SweepPlan> {
        let axes = |s: &StudySeries| {
            let full = s.vary.as_ref().unwrap_or(&self.vary);
            let vary = if quick { s.quick_vary.as_ref().or(self.quick.vary.as_ref()).unwrap_or(full) } else { full };
            vary.iter()
                .map(|v| {
                    Axis::parse(v).map(AxisSpec::from).map_err(|e| anyhow::anyhow!("series `{}`: vary {e}", s.name))
                })
                .collect::<anyhow::Result<Vec<_>>>()
        };
        let mut common = self.set.clone();
        if quick {
            common.extend(self.quick.set.iter().cloned());
        }
        let series = self
            .series
            .iter()
            .map(|s| {
                Ok(Series {
                    name: s.name.clone(),
                    file: normalize(&dir.join(&s.scenario)),
                    sets: common
                        .iter()
                        .chain(&s.set)
                        .chain(quick.then_some(&s.quick_set).into_iter().flatten())
                        .cloned()
                        .collect(),
                    axes: axes(s)?,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(SweepPlan { series, repeat: self.repeat, per_event: self.per_event })
    }
}

/// Finds a study by name in `dir` (`fig5` → `dir/fig5.toml`), or takes a path to a file.
pub fn find(name: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    let as_path = Path::new(name);
    if as_path.extension().is_some_and(|e| e == "toml") && as_path.exists() {
        return Ok(as_path.to_path_buf());
    }
    let path = dir.join(format!("{name}.toml"));
    if path.exists() {
        return Ok(path);
    }
    let names: Vec<String> = list(dir)?.into_iter().map(|(n, _)| n).collect();
    bail!("no study `{name}` in {}; studies: {}", dir.display(), names.join(", "))
}

/// Every study in `dir`: (name, path), by name.
pub fn list(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read the studies folder {}", dir.display()))? {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "toml") {
            let name = path.file_stem().expect("has a stem").to_string_lossy().into_owned();
            out.push((name, path));
        }
    }
    out.sort();
    Ok(out)
}

/// `studies/../scenarios/a.toml` → `scenarios/a.toml` (lexically; no file system access).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_removes_dot_segments() {
        assert_eq!(normalize(Path::new("studies/../scenarios/a.toml")), Path::new("scenarios/a.toml"));
        assert_eq!(normalize(Path::new("./x/./y")), Path::new("x/y"));
        assert_eq!(normalize(Path::new("../x")), Path::new("../x"));
    }
}
