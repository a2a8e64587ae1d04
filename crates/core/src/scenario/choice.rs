//! Fields that take either a number or a keyword: credits (`480` or `"unlimited"`) and the
//! supervisor rate (`750.0` or `"unbounded"`).

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Traffic-shaping credits per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credits {
    /// At most this many fragments requested and not yet received per node.
    Limited(u32),
    /// No traffic shaping.
    Unlimited,
}

/// Supervisor assignment rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Events made available per second.
    Hz(f64),
    /// An event is available whenever a processing unit asks.
    Unbounded,
}

impl Serialize for Credits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Credits::Limited(n) => s.serialize_u32(*n),
            Credits::Unlimited => s.serialize_str("unlimited"),
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::Hz(r) => s.serialize_f64(*r),
            Rate::Unbounded => s.serialize_str("unbounded"),
        }
    }
}

impl<'de> Deserialize<'de> for Credits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Credits;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of credits (an integer of at least system.fragments_per_unit) or \"unlimited\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Credits, E> {
                u32::try_from(v).map(Credits::Limited).map_err(|_| {
                    E::custom(format!(
                        "{v} credits: credits are a whole number from system.fragments_per_unit (a request's \
                         fragments) to 4294967295, or \"unlimited\""
                    ))
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Credits, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Credits, E> {
                match v {
                    "unlimited" => Ok(Credits::Unlimited),
                    _ => Err(E::custom(format!("`{v}` is not a credit count: use an integer or \"unlimited\""))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a rate in Hz (> 0) or \"unbounded\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
                Ok(Rate::Hz(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
                Ok(Rate::Hz(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
                Ok(Rate::Hz(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                match v {
                    "unbounded" => Ok(Rate::Unbounded),
                    _ => Err(E::custom(format!("`{v}` is not a rate: use a number of Hz or \"unbounded\""))),
                }
            }
        }
        d.deserialize_any(V)
    }
}
