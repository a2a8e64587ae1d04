//! Reading a scenario file, applying `--set dotted.path=value` overrides, and turning every
//! mistake into a [`ScenarioError`] that names the file, the field and the value.

use super::{Scenario, Topology};
use std::fmt;
use std::path::Path;

/// A scenario that could not be loaded: where (file, field), what value, and what is allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file (or `--set`) the problem comes from.
    pub origin: String,
    /// The line of the file that sets the field, when the file does.
    pub line: Option<usize>,
    /// Dotted path of the field, empty when the problem is the file itself.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// The most of a scenario file read: scenario files are a few kB of TOML.
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// The most characters of an origin or a message shown (a value can be megabytes long).
const MAX_SHOWN_CHARS: usize = 400;

/// `text`, cut to [`MAX_SHOWN_CHARS`] characters with what was left out counted.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_SHOWN_CHARS) {
        None => text.into(),
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut).into(),
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", shown(&self.origin))?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", shown(&self.message))
        } else {
            write!(f, ": field `{}`: {}", shown(&self.field), shown(&self.message))
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A list of problems found in one scenario, shown one per line.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioErrors(pub Vec<ScenarioError>);

impl fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioErrors {}

/// Loads a scenario file, applies `sets` (`dotted.path=value`, in order), fills in the defaults
/// of its topology and validates it.
pub fn load(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioErrors> {
    let origin = path.display().to_string();
    let file_error = |message: String| {
        ScenarioErrors(vec![ScenarioError { origin: origin.clone(), line: None, field: String::new(), message }])
    };
    let text = read_bounded(path).map_err(file_error)?;
    parse_str(&text, &origin, sets)
}

/// The text of `path`, at most [`MAX_SCENARIO_BYTES`] of it (so `/dev/zero` is refused, not
/// read until memory runs out).
fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(format!(
            "is larger than {} MiB, not read further: a scenario is a few kB of TOML",
            MAX_SCENARIO_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("not valid TOML: not UTF-8 text ({e})"))
}

/// Like [`load`], from text; `origin` names the text in errors.
pub fn parse_str(text: &str, origin: &str, sets: &[String]) -> Result<Scenario, ScenarioErrors> {
    let one = |field: &str, message: String| {
        ScenarioErrors(vec![ScenarioError {
            origin: origin.to_string(),
            line: None,
            field: field.to_string(),
            message,
        }])
    };
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| one("", format!("not valid TOML: {e}")))?;
    let mut set_paths = Vec::new();
    for set in sets {
        let path = apply_set(&mut table, set).map_err(|m| {
            ScenarioErrors(vec![ScenarioError {
                origin: format!("--set {set}"),
                line: None,
                field: String::new(),
                message: m,
            }])
        })?;
        set_paths.push((path, set.clone()));
    }
    // Where a field's value came from: the last --set that covers it, else the file's line.
    let locate = |field: String, message: String| {
        let covers = |p: &str| field == p || field.starts_with(&format!("{p}.")) || p.starts_with(&format!("{field}."));
        match set_paths.iter().rev().find(|(p, _)| covers(p)) {
            Some((_, s)) => ScenarioError { origin: format!("{origin} with --set {s}"), line: None, field, message },
            None => ScenarioError { origin: origin.to_string(), line: line_of(text, &field), field, message },
        }
    };
    let table = merge(defaults_for(&table), table);
    let scenario: Scenario = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        // toml appends "in `path`" lines; the path is reported separately.
        let message = e.inner().to_string().lines().filter(|l| !l.starts_with("in `")).collect::<Vec<_>>().join(" ");
        ScenarioErrors(vec![locate(e.path().to_string(), message.trim().to_string())])
    })?;
    let scenario = scenario.with_defaults();
    let errors = scenario.validate();
    if errors.is_empty() {
        Ok(scenario)
    } else {
        Err(ScenarioErrors(errors.into_iter().map(|(field, message)| locate(field, message)).collect()))
    }
}

/// The line (from 1) of `text` that sets dotted `field`, or a table or inline table holding it.
fn line_of(text: &str, field: &str) -> Option<usize> {
    let mut table = String::new();
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = h.trim().to_string();
            if field == table || field.starts_with(&format!("{table}.")) && found.is_none() {
                found = Some(i + 1);
            }
            continue;
        }
        let Some((key, _)) = l.split_once('=') else { continue };
        let key = key.trim().trim_matches('"');
        let path = if table.is_empty() { key.to_string() } else { format!("{table}.{key}") };
        if field == path || field.starts_with(&format!("{path}.")) {
            return Some(i + 1);
        }
    }
    found
}

/// The default scenario for the topology the user's table asks for, as a TOML table.
fn defaults_for(user: &toml::Table) -> toml::Table {
    let mut base = Scenario::default();
    let topology = user.get("network").and_then(|n| n.get("topology")).and_then(|t| t.as_str());
    if let Some(t) = [Topology::Star, Topology::ParallelLeafSpine].into_iter().find(|t| topology == Some(t.name())) {
        base.network.topology = t;
    }
    toml::Table::try_from(base.with_defaults()).expect("the default scenario serializes to a table")
}

/// Deep-merges `over` onto `base`: tables merge key by key, anything else replaces. A tagged
/// table (`scheme = ...`, `law = ...`) whose tag differs from the base's replaces it whole, so a
/// shared buffer set over a default dedicated one does not inherit `port_bytes`.
fn merge(mut base: toml::Table, over: toml::Table) -> toml::Table {
    for (k, v) in over {
        match (base.remove(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) if same_tag(&b, &o) => {
                base.insert(k, toml::Value::Table(merge(b, o)));
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
    base
}

fn same_tag(base: &toml::Table, over: &toml::Table) -> bool {
    ["scheme", "law"].iter().all(|tag| match (base.get(*tag), over.get(*tag)) {
        (Some(b), Some(o)) => b == o,
        _ => true,
    })
}

/// Applies one `dotted.path=value` override to a TOML table and returns the path. The value is
/// read as a TOML value (`480`, `1e9`, `true`, `"fcfs"`, `{ scheme = "dedicated", port_bytes = 1 }`);
/// anything that is not valid TOML is taken as a plain string (`fcfs`, `10G`).
pub fn apply_set(table: &mut toml::Table, set: &str) -> Result<String, String> {
    let (path, raw) = set
        .split_once('=')
        .ok_or_else(|| "expected dotted.path=value, e.g. system.credits_per_node=480".to_string())?;
    let path = path.trim();
    let raw = raw.trim();
    if path.is_empty() || path.split('.').any(|k| k.is_empty()) {
        return Err(format!("`{path}` is not a dotted field path (e.g. network.tcp.min_rto_ns)"));
    }
    let value = match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let keys: Vec<&str> = path.split('.').collect();
    let mut cur = table;
    for (i, key) in keys[..keys.len() - 1].iter().enumerate() {
        let entry = cur.entry(key.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{}` is a value, not a table, so `{path}` cannot be set", keys[..=i].join(".")))?;
    }
    cur.insert(keys[keys.len() - 1].to_string(), value);
    Ok(path.to_string())
}
