//! Human-friendly quantities in scenario files: rates in bit/s and sizes in bytes may be written
//! as plain numbers (`1000000000`, `1e9`) or with a suffix (`"1G"`, `"10 Gb/s"`, `"600kB"`, `"4MiB"`).
//! They are always stored and printed as plain integers.

use serde::{de, Deserializer};
use std::fmt;

/// Parses a rate in bit/s: a number, or a number with a decimal suffix `k`, `M`, `G`, `T`
/// optionally followed by `b/s`, `bps` or `bit/s` (`"10G"`, `"10 Gb/s"`, `"40Gbps"`).
pub fn parse_bps(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = ["bit/s", "b/s", "bps"].iter().find_map(|s| t.strip_suffix(s)).unwrap_or(t).trim_end();
    let (num, mult) = split_suffix(t, &[("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)]);
    let value: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a rate: write e.g. 1000000000, 1e9, \"1G\" or \"10 Gb/s\""))?;
    to_integer(value * mult, text)
}

/// Parses a size in bytes: a number, or a number with a suffix `B`, `kB`/`MB`/`GB` (powers of
/// 1000) or `KiB`/`MiB`/`GiB` (powers of 1024): `"600kB"`, `"4MiB"`, `"1.5GB"`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = split_suffix(
        t,
        &[
            ("KiB", 1024.0),
            ("MiB", 1024.0 * 1024.0),
            ("GiB", 1024.0 * 1024.0 * 1024.0),
            ("kB", 1e3),
            ("KB", 1e3),
            ("MB", 1e6),
            ("GB", 1e9),
            ("B", 1.0),
        ],
    );
    let value: f64 =
        num.trim().parse().map_err(|_| format!("`{text}` is not a size: write e.g. 600000, \"600kB\" or \"4MiB\""))?;
    to_integer(value * mult, text)
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

/// Serde helper: a size in bytes (see [`parse_bytes`]).
pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(QuantityVisitor {
        what: "a size in bytes (e.g. 600000, \"600kB\" or \"4MiB\")",
        parse: parse_bytes,
    })
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
