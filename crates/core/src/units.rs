//! Human-friendly quantities in scenario files and `--set`: rates in bit/s and sizes in bytes may
//! be written as plain numbers (`1000000000`, `1e9`) or with one family of suffixes — `k`, `M`,
//! `G`, `T` (powers of 1000) and `Ki`, `Mi`, `Gi`, `Ti` (powers of 1024), then `B` for sizes or
//! `b/s`, `bps`, `bit/s` for rates, all optional: `"1G"`, `"10 Gb/s"`, `"600kB"`, `"4MiB"`,
//! `"1M"`. Durations may be written as integers in the field's unit (`_ns` or `_ms`) or with a
//! unit, as the `humantime` crate reads them: `"200ms"`, `"5 ms"`, `"40us"`, `"1s 500ms"`.
//! They are always stored and printed as plain integers.

use serde::{de, Deserializer};
use std::fmt;

/// Multipliers of the suffix family, longest first so that `Ki` wins over `K`.
const MULTIPLIERS: [(&str, f64); 9] = [
    ("Ki", 1024.0),
    ("Mi", 1048576.0),
    ("Gi", 1073741824.0),
    ("Ti", 1099511627776.0),
    ("k", 1e3),
    ("K", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
];

/// A number with an optional multiplier after stripping one of `units` (e.g. `B`).
fn parse_quantity(text: &str, units: &[&str], what: &str, example: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = units.iter().find_map(|u| t.strip_suffix(u)).unwrap_or(t).trim_end();
    let (num, mult) = split_suffix(t, &MULTIPLIERS);
    let value: f64 = num.trim().parse().map_err(|_| format!("`{text}` is not {what}: write e.g. {example}"))?;
    to_integer(value * mult, text)
}

/// Parses a rate in bit/s (`"10G"`, `"10 Gb/s"`, `"40Gbps"`, `"100M"`, `1e9`).
pub fn parse_bps(text: &str) -> Result<u64, String> {
    parse_quantity(text, &["bit/s", "b/s", "bps"], "a rate", "1000000000, 1e9, \"1G\" or \"10 Gb/s\"")
}

/// Parses a size in bytes (`"600kB"`, `"4MiB"`, `"1.5GB"`, `"1M"`, `1100`).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_quantity(text, &["B"], "a size", "600000, \"600kB\", \"1M\" or \"4MiB\"")
}

/// Parses a duration into nanoseconds: an integer (already ns) or a duration with a unit
/// (`"200ms"`, `"5 ms"`, `"40us"`, `"1s 500ms"`).
pub fn parse_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| format!("`{text}` is not a duration ({e}): write e.g. 200000000, \"200ms\" or \"5 ms\""))?;
    u64::try_from(d.as_nanos()).map_err(|_| format!("`{text}` is too long"))
}

fn split_suffix<'a>(t: &'a str, suffixes: &[(&str, f64)]) -> (&'a str, f64) {
    for (s, m) in suffixes {
        if let Some(n) = t.strip_suffix(s) {
            return (n, *m);
        }
    }
    (t, 1.0)
}

fn to_integer(v: f64, text: &str) -> Result<u64, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{text}` must be a non-negative finite quantity"));
    }
    let r = v.round();
    if (v - r).abs() > 1e-6 * v.max(1.0) {
        return Err(format!("`{text}` is not a whole number"));
    }
    if r > u64::MAX as f64 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(r as u64)
}

struct QuantityVisitor {
    what: &'static str,
    parse: fn(&str) -> Result<u64, String>,
}

impl<'de> de::Visitor<'de> for QuantityVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative; expected {}", self.what)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        to_integer(v, &v.to_string()).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        (self.parse)(v).map_err(E::custom)
    }
}

/// Serde helper: a rate in bit/s (see [`parse_bps`]).
pub fn de_bps<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QuantityVisitor { what: "a rate in bit/s (e.g. 1000000000, 1e9 or \"1G\")", parse: parse_bps })
}

/// Serde helper: a rate in bit/s that may be left out (`Option`, with `#[serde(default)]`).
pub fn de_some_bps<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_bps(d).map(Some)
}

/// Serde helper: a size in bytes (see [`parse_bytes`]).
pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QuantityVisitor {
        what: "a size in bytes (e.g. 600000, \"600kB\" or \"4MiB\")",
        parse: parse_bytes,
    })
}

/// Serde helper: a duration in ns (see [`parse_ns`]).
pub fn de_ns<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QuantityVisitor { what: "a duration (e.g. 200000000 ns or \"200ms\")", parse: parse_ns })
}

/// Serde helper: a duration in ms: an integer of milliseconds, or a duration with a unit that is
/// a whole number of milliseconds (`"10s"`).
pub fn de_ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    fn parse_ms(text: &str) -> Result<u64, String> {
        if let Ok(n) = text.trim().parse::<u64>() {
            return Ok(n);
        }
        let ns = parse_ns(text)?;
        if ns % 1_000_000 != 0 {
            return Err(format!("`{text}` is not a whole number of milliseconds"));
        }
        Ok(ns / 1_000_000)
    }
    d.deserialize_any(QuantityVisitor { what: "a duration (e.g. 1000 ms or \"1s\")", parse: parse_ms })
}

/// Serde helper: a duration in seconds as a float: a number, or a duration with a unit
/// (`"600s"`, `"10min"`, `"500ms"`).
pub fn de_secs<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    struct V;
    impl<'de> de::Visitor<'de> for V {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a duration in seconds (e.g. 600.0 or \"10min\")")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v.trim().parse::<f64>() {
                Ok(x) => Ok(x),
                Err(_) => parse_ns(v).map(|ns| ns as f64 / 1e9).map_err(E::custom),
            }
        }
    }
    d.deserialize_any(V)
}

/// Serde helper: a size in bytes that must fit 32 bits (fragment and message sizes).
pub fn de_bytes_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = de_bytes(d)?;
    u32::try_from(v).map_err(|_| de::Error::custom(format!("{v} bytes is too large (at most 4294967295)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_with_suffixes() {
        assert_eq!(parse_bps("1G").unwrap(), 1_000_000_000);
        assert_eq!(parse_bps("10 Gb/s").unwrap(), 10_000_000_000);
        assert_eq!(parse_bps("40Gbps").unwrap(), 40_000_000_000);
        assert_eq!(parse_bps("2.5M").unwrap(), 2_500_000);
        assert!(parse_bps("fast").is_err());
        assert!(parse_bps("-1G").is_err());
    }

    #[test]
    fn durations_with_units_or_in_the_fields_unit() {
        assert_eq!(parse_ns("200ms").unwrap(), 200_000_000);
        assert_eq!(parse_ns("5 ms").unwrap(), 5_000_000);
        assert_eq!(parse_ns("40us").unwrap(), 40_000);
        assert_eq!(parse_ns("1s 500ms").unwrap(), 1_500_000_000);
        assert_eq!(parse_ns("50000").unwrap(), 50_000);
        assert!(parse_ns("soon").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn sizes_and_rates_share_one_suffix_family() {
        assert_eq!(parse_bytes("1M").unwrap(), 1_000_000);
        assert_eq!(parse_bps("1M").unwrap(), 1_000_000);
        assert_eq!(parse_bytes("4Mi").unwrap(), parse_bytes("4MiB").unwrap());
        assert_eq!(parse_bps("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("10k").unwrap(), 10_000);
    }

    #[test]
    fn sizes_with_suffixes() {
        assert_eq!(parse_bytes("600kB").unwrap(), 600_000);
        assert_eq!(parse_bytes("4MiB").unwrap(), 4 * 1024 * 1024);
        assert_eq!(parse_bytes("1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_bytes("64 KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("1100").unwrap(), 1100);
        assert!(parse_bytes("1.5B").is_err());
        assert!(parse_bytes("lots").is_err());
    }
}
