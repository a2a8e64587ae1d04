//! What the switch is told at start: its ports, where each destination is, which destinations
//! are data collectors, and its limits. The testbed writes it as JSON.

use crate::frame::{parse_mac, Mac};
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// Default byte cap of each daqring: 64 MiB.
pub const DEFAULT_QUEUE_BYTES: u64 = 64 << 20;

/// One port: an interface of the switch namespace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    /// Interface name.
    pub name: String,
    /// Egress line rate, bits per second (0: unpaced, as fast as the interface takes frames).
    pub rate_bps: u64,
}

/// A forwarding-table entry: frames to `mac` leave by port `port` (index into `ports`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Destination MAC, `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
    /// Egress port index.
    pub port: usize,
}

/// The switch's configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// Ports, in index order.
    pub ports: Vec<PortConfig>,
    /// Forwarding table (no flooding: a frame to an unknown MAC is counted and dropped).
    pub routes: Vec<Route>,
    /// IPv4 addresses of the data collectors; each gets its own daqring at the port its MAC
    /// routes to. Other traffic to a port shares that port's default queue.
    pub collectors: Vec<Ipv4Addr>,
    /// MAC of each collector, in the order of `collectors`.
    pub collector_macs: Vec<String>,
    /// Byte cap of every queue, bytes.
    pub queue_bytes: u64,
    /// Frames a queue may send per polling cycle ([LOSSLESS] §III-A.2); `None`: no limit.
    pub burst_frames: Option<u32>,
    /// Largest burst above line rate an egress port may send, bytes (the token bucket).
    pub pacing_bucket_bytes: u64,
}

impl SwitchConfig {
    /// Reads and checks a configuration file.
    pub fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let c: SwitchConfig = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        c.check().with_context(|| format!("in {}", path.display()))?;
        Ok(c)
    }

    /// The forwarding table as (MAC, port), checked.
    pub fn fib(&self) -> anyhow::Result<Vec<(Mac, usize)>> {
        self.routes
            .iter()
            .map(|r| {
                let mac = parse_mac(&r.mac).with_context(|| format!("routes: `{}` is not a MAC address", r.mac))?;
                if r.port >= self.ports.len() {
                    bail!("routes: {} goes to port {}, but there are {} ports", r.mac, r.port, self.ports.len());
                }
                Ok((mac, r.port))
            })
            .collect()
    }

    /// Checks consistency; the error names the field and value.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.ports.is_empty() {
            bail!("ports: empty; a switch needs at least one port");
        }
        self.fib()?;
        if self.collectors.len() != self.collector_macs.len() {
            bail!("collector_macs: {} entries for {} collectors", self.collector_macs.len(), self.collectors.len());
        }
        for m in &self.collector_macs {
            if !self.routes.iter().any(|r| &r.mac == m) {
                bail!("collector_macs: {m} has no route");
            }
        }
        if self.queue_bytes < 1518 {
            bail!("queue_bytes: {} is smaller than one full-size frame (1518 bytes)", self.queue_bytes);
        }
        if self.burst_frames == Some(0) {
            bail!("burst_frames: 0 would never send; give at least 1, or none for no limit");
        }
        Ok(())
    }
}
