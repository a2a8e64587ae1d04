//! `--vary path=LIST`: one swept scenario field and the values it takes.

use daqnet_core::units::parse_bytes;

/// Most values one axis may take (a typo like `1..1e9:1` should not plan a billion runs).
pub const MAX_VALUES: usize = 10_000;

/// One swept field: a dotted scenario path and its values, each as it is given to `--set`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// Dotted scenario path, e.g. `system.credits_per_node`.
    pub path: String,
    /// Values in sweep order, as TOML-ish text (`480`, `fcfs`, `"600kB"`, `{ scheme = … }`).
    pub values: Vec<String>,
}

impl Axis {
    /// Parses `path=LIST`, where LIST is `a,b,c` (commas inside `{}`, `[]` or quotes do not
    /// split) or an inclusive range `start..end[:step]` of numbers (`100..2400:100`, `0.5..2:0.5`)
    /// or byte sizes (`1MB..10MB:1MB`).
    pub fn parse(spec: &str) -> Result<Axis, String> {
        let (path, list) = spec
            .split_once('=')
            .ok_or_else(|| format!("`{spec}`: expected path=LIST, e.g. system.credits_per_node=100..2400:100"))?;
        let path = path.trim();
        if path.is_empty() || path.split('.').any(|k| k.trim().is_empty() || k.contains(char::is_whitespace)) {
            return Err(format!("`{spec}`: `{path}` is not a dotted field path (e.g. system.credits_per_node)"));
        }
        let list = list.trim();
        let values =
            if is_range(list) { range(list) } else { split_list(list) }.map_err(|e| format!("`{spec}`: {e}"))?;
        Ok(Axis { path: path.to_string(), values })
    }

    /// The `--set` argument that gives this axis its `i`-th value.
    pub fn set(&self, i: usize) -> String {
        format!("{}={}", self.path, self.values[i])
    }
}

/// A range has `..` outside quotes and braces (a float list `0.5,1.5` has none).
fn is_range(list: &str) -> bool {
    !list.starts_with(['{', '[', '"', '\'']) && list.contains("..")
}

fn split_list(list: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let (mut depth, mut quote, mut cur) = (0i32, None::<char>, String::new());
    for c in list.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') => depth -= 1,
            (None, ',') if depth == 0 => {
                values.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    values.push(cur);
    let values: Vec<String> = values.into_iter().map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err("empty value in the list (write a,b,c or start..end:step)".into());
    }
    if values.len() > MAX_VALUES {
        return Err(format!("{} values; at most {MAX_VALUES} per axis", values.len()));
    }
    Ok(values)
}

fn range(list: &str) -> Result<Vec<String>, String> {
    let (bounds, step) = match list.split_once(':') {
        Some((b, s)) => (b, Some(s.trim())),
        None => (list, None),
    };
    let (start, end) = bounds.split_once("..").ok_or("a range is start..end:step")?;
    let (start, end) = (start.trim(), end.trim());
    let texts = [start, end, step.unwrap_or("1")];
    // Integers stay integers; sizes with units become integer bytes; else floats.
    if let Ok([a, b, s]) = parse_all(texts, |t| t.parse::<i64>().map_err(|_| ())) {
        return steps(a as f64, b as f64, s as f64).map(|v| v.iter().map(|x| format!("{}", *x as i64)).collect());
    }
    if let Ok([a, b, s]) = parse_all(texts, |t| t.parse::<f64>().map_err(|_| ())) {
        return steps(a, b, s).map(|v| v.iter().map(|x| format_float(*x)).collect());
    }
    if step.is_some() {
        if let Ok([a, b, s]) = parse_all(texts, |t| parse_bytes(t).map_err(|_| ())) {
            return steps(a as f64, b as f64, s as f64)
                .map(|v| v.iter().map(|x| format!("{}", x.round() as u64)).collect());
        }
    }
    Err(format!(
        "`{list}` is not a range: start, end and step must all be numbers (100..2400:100, 0.5..2:0.25) or all sizes (1MB..8MB:500kB)"
    ))
}

fn parse_all<T: Copy + Default>(texts: [&str; 3], f: impl Fn(&str) -> Result<T, ()>) -> Result<[T; 3], ()> {
    let mut out = [T::default(); 3];
    for (o, t) in out.iter_mut().zip(texts) {
        *o = f(t)?;
    }
    Ok(out)
}

fn steps(start: f64, end: f64, step: f64) -> Result<Vec<f64>, String> {
    if step.is_nan() || step <= 0.0 || !step.is_finite() {
        return Err(format!("step must be positive, got {step}"));
    }
    if end < start {
        return Err(format!("end ({end}) is below start ({start})"));
    }
    let n = ((end - start) / step + 1e-9).floor() as usize + 1;
    if n > MAX_VALUES {
        return Err(format!("{n} values; at most {MAX_VALUES} per axis"));
    }
    Ok((0..n).map(|i| start + i as f64 * step).collect())
}

/// Shortest text for a float computed by repeated steps (0.30000000000000004 → 0.3).
fn format_float(x: f64) -> String {
    let r = (x * 1e9).round() / 1e9;
    format!("{r}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(spec: &str) -> Vec<String> {
        Axis::parse(spec).unwrap().values
    }

    #[test]
    fn lists_split_at_top_level_commas_only() {
        assert_eq!(values("system.supervisor.policy=fcfs, random"), ["fcfs", "random"]);
        assert_eq!(
            values(
                r#"network.rack_switch.buffer={ scheme = "shared", pool_bytes = "10MB", port_cap_bytes = "8MB" },{ scheme = "deep" }"#
            ),
            [r#"{ scheme = "shared", pool_bytes = "10MB", port_cap_bytes = "8MB" }"#, r#"{ scheme = "deep" }"#]
        );
        assert_eq!(values(r#"a.b="x,y",z"#), [r#""x,y""#, "z"]);
    }

    #[test]
    fn ranges_are_inclusive_and_typed() {
        assert_eq!(values("system.credits_per_node=100..500:100"), ["100", "200", "300", "400", "500"]);
        assert_eq!(values("x.y=1..3"), ["1", "2", "3"]);
        assert_eq!(values("x.y=0.1..0.5:0.1"), ["0.1", "0.2", "0.3", "0.4", "0.5"]);
        assert_eq!(values("x.y=1MB..2MB:500kB"), ["1000000", "1500000", "2000000"]);
        assert_eq!(values("x.y=100..350:100"), ["100", "200", "300"]);
    }

    #[test]
    fn mistakes_are_explained() {
        for (spec, want) in [
            ("system.credits_per_node", "expected path=LIST"),
            ("=1,2", "not a dotted field path"),
            ("a..b=1", "not a dotted field path"),
            ("x.y=1,,2", "empty value"),
            ("x.y=5..1:1", "below start"),
            ("x.y=1..5:0", "step must be positive"),
            ("x.y=1..5:-1", "step must be positive"),
            ("x.y=a..b:1", "is not a range"),
            ("x.y=1..1e9:1", "at most"),
        ] {
            let e = Axis::parse(spec).unwrap_err();
            assert!(e.contains(want), "`{spec}` gave `{e}`, wanted `{want}`");
        }
    }
}
