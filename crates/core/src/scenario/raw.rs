//! The tagged sections (`law = …`, `scheme = …`) as plain structs with every field optional, so
//! that a bad value is reported at its own field (`network.switch.buffer.port_bytes`), not at
//! the section, and a field the chosen variant does not take is named with what it does take.

use super::{BufferConfig, EcnMarking, FragmentSize};
use crate::units::{de_bytes, de_bytes_u32};
use serde::{Deserialize, Deserializer};

fn some_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de_bytes(d).map(Some)
}

fn some_bytes_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    de_bytes_u32(d).map(Some)
}

/// Fails naming the fields given that `what` does not take, and the ones it does.
fn only(what: &str, given: &[(&str, bool)], allowed: &[&str]) -> Result<(), String> {
    let extra: Vec<&str> = given.iter().filter(|(f, set)| *set && !allowed.contains(f)).map(|(f, _)| *f).collect();
    if extra.is_empty() {
        return Ok(());
    }
    Err(format!("{what} does not take `{}`; it takes {}", extra.join("`, `"), allowed.join(", ")))
}

fn need<T>(v: Option<T>, what: &str, field: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{what} needs `{field}`"))
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Scheme {
    Dedicated,
    Shared,
    Deep,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBuffer {
    scheme: Scheme,
    #[serde(default, deserialize_with = "some_bytes")]
    port_bytes: Option<u64>,
    #[serde(default, deserialize_with = "some_bytes")]
    pool_bytes: Option<u64>,
    #[serde(default)]
    ports_per_pool: Option<u32>,
    #[serde(default, deserialize_with = "some_bytes")]
    port_cap_bytes: Option<u64>,
}

impl TryFrom<RawBuffer> for BufferConfig {
    type Error = String;

    fn try_from(r: RawBuffer) -> Result<Self, String> {
        let given = [
            ("port_bytes", r.port_bytes.is_some()),
            ("pool_bytes", r.pool_bytes.is_some()),
            ("ports_per_pool", r.ports_per_pool.is_some()),
            ("port_cap_bytes", r.port_cap_bytes.is_some()),
        ];
        Ok(match r.scheme {
            Scheme::Dedicated => {
                only("scheme = \"dedicated\"", &given, &["port_bytes"])?;
                BufferConfig::Dedicated { port_bytes: need(r.port_bytes, "scheme = \"dedicated\"", "port_bytes")? }
            }
            Scheme::Deep => {
                only("scheme = \"deep\"", &given, &["port_bytes"])?;
                BufferConfig::Deep { port_bytes: r.port_bytes.unwrap_or(super::DEEP_PORT_BYTES) }
            }
            Scheme::Shared => {
                let w = "scheme = \"shared\"";
                only(w, &given, &["pool_bytes", "ports_per_pool", "port_cap_bytes"])?;
                BufferConfig::Shared {
                    pool_bytes: need(r.pool_bytes, w, "pool_bytes")?,
                    ports_per_pool: need(r.ports_per_pool, w, "ports_per_pool")?,
                    port_cap_bytes: need(r.port_cap_bytes, w, "port_cap_bytes")?,
                }
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Law {
    Fixed,
    LognormalNormal,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFragmentSize {
    law: Law,
    #[serde(default, deserialize_with = "some_bytes_u32")]
    bytes: Option<u32>,
    #[serde(default, deserialize_with = "some_bytes_u32")]
    base_bytes: Option<u32>,
    #[serde(default)]
    event_mu: Option<f64>,
    #[serde(default)]
    event_sigma: Option<f64>,
    #[serde(default)]
    fragment_sd_bytes: Option<f64>,
    #[serde(default, deserialize_with = "some_bytes_u32")]
    min_bytes: Option<u32>,
}

impl TryFrom<RawFragmentSize> for FragmentSize {
    type Error = String;

    fn try_from(r: RawFragmentSize) -> Result<Self, String> {
        let given = [
            ("bytes", r.bytes.is_some()),
            ("base_bytes", r.base_bytes.is_some()),
            ("event_mu", r.event_mu.is_some()),
            ("event_sigma", r.event_sigma.is_some()),
            ("fragment_sd_bytes", r.fragment_sd_bytes.is_some()),
            ("min_bytes", r.min_bytes.is_some()),
        ];
        Ok(match r.law {
            Law::Fixed => {
                only("law = \"fixed\"", &given, &["bytes"])?;
                FragmentSize::Fixed { bytes: need(r.bytes, "law = \"fixed\"", "bytes")? }
            }
            Law::LognormalNormal => {
                let w = "law = \"lognormal_normal\"";
                only(w, &given, &["base_bytes", "event_mu", "event_sigma", "fragment_sd_bytes", "min_bytes"])?;
                FragmentSize::LognormalNormal {
                    base_bytes: need(r.base_bytes, w, "base_bytes")?,
                    event_mu: r.event_mu.unwrap_or(0.0),
                    event_sigma: need(r.event_sigma, w, "event_sigma")?,
                    fragment_sd_bytes: need(r.fragment_sd_bytes, w, "fragment_sd_bytes")?,
                    min_bytes: r.min_bytes.unwrap_or(1),
                }
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Marking {
    Step,
    Red,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEcn {
    marking: Marking,
    #[serde(default, deserialize_with = "some_bytes")]
    threshold_bytes: Option<u64>,
    #[serde(default)]
    threshold_packets: Option<u32>,
    #[serde(default, deserialize_with = "some_bytes")]
    min_bytes: Option<u64>,
    #[serde(default, deserialize_with = "some_bytes")]
    max_bytes: Option<u64>,
    #[serde(default)]
    max_probability: Option<f64>,
}

impl TryFrom<RawEcn> for EcnMarking {
    type Error = String;

    fn try_from(r: RawEcn) -> Result<Self, String> {
        let given = [
            ("threshold_bytes", r.threshold_bytes.is_some()),
            ("threshold_packets", r.threshold_packets.is_some()),
            ("min_bytes", r.min_bytes.is_some()),
            ("max_bytes", r.max_bytes.is_some()),
            ("max_probability", r.max_probability.is_some()),
        ];
        Ok(match r.marking {
            Marking::Step => {
                let w = "marking = \"step\"";
                only(w, &given, &["threshold_bytes", "threshold_packets"])?;
                if r.threshold_bytes.is_some() == r.threshold_packets.is_some() {
                    return Err(format!("{w} needs one of `threshold_bytes` and `threshold_packets` (DCTCP's K)"));
                }
                EcnMarking::Step { threshold_bytes: r.threshold_bytes, threshold_packets: r.threshold_packets }
            }
            Marking::Red => {
                let w = "marking = \"red\"";
                only(w, &given, &["min_bytes", "max_bytes", "max_probability"])?;
                EcnMarking::Red {
                    min_bytes: need(r.min_bytes, w, "min_bytes")?,
                    max_bytes: need(r.max_bytes, w, "max_bytes")?,
                    max_probability: need(r.max_probability, w, "max_probability")?,
                }
            }
        })
    }
}
