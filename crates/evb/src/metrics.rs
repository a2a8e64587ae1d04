//! Live metrics of a real run in the Prometheus text format, served by the supervisor
//! (`--metrics ADDR`, loopback unless told otherwise) at `GET /metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Label of per-node series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabel {
    /// Node number.
    pub node: u32,
}

/// Every series the supervisor exports.
pub struct Metrics {
    registry: Registry,
    /// Events built (measured and warm-up).
    pub events_built: Counter,
    /// Event payload bytes collected.
    pub payload_bytes: Counter,
    /// Events built per second over the last second.
    pub event_rate_hz: Gauge<f64, AtomicU64>,
    /// Payload goodput over the last second, bit/s.
    pub goodput_bps: Gauge<f64, AtomicU64>,
    /// Data-collection latency, seconds.
    pub latency_seconds: Histogram,
    /// Events assigned and not yet built.
    pub events_in_flight: Gauge,
    /// Credits held by outstanding requests, per node.
    pub credits_in_use: Family<NodeLabel, Gauge>,
    /// Requests waiting for credits, per node.
    pub queued_requests: Family<NodeLabel, Gauge>,
    /// Faults reported.
    pub faults: Counter,
}

impl Metrics {
    /// A fresh set of series.
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("daqnet");
        let m = Metrics {
            events_built: Counter::default(),
            payload_bytes: Counter::default(),
            event_rate_hz: Gauge::default(),
            goodput_bps: Gauge::default(),
            // 50 µs .. ~1.6 s.
            latency_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 16)),
            events_in_flight: Gauge::default(),
            credits_in_use: Family::default(),
            queued_requests: Family::default(),
            faults: Counter::default(),
            registry: Registry::default(),
        };
        registry.register("events_built", "Events built", m.events_built.clone());
        registry.register("payload_bytes", "Event payload bytes collected", m.payload_bytes.clone());
        registry.register("event_rate_hz", "Events built per second over the last second", m.event_rate_hz.clone());
        registry.register("goodput_bps", "Payload goodput over the last second, bit/s", m.goodput_bps.clone());
        registry.register(
            "latency_seconds",
            "Data-collection latency: first request of an event to its last fragment",
            m.latency_seconds.clone(),
        );
        registry.register("events_in_flight", "Events assigned and not yet built", m.events_in_flight.clone());
        registry.register("credits_in_use", "Credits held by outstanding requests", m.credits_in_use.clone());
        registry.register("queued_requests", "Data requests waiting for credits", m.queued_requests.clone());
        registry.register("faults", "Faults reported (roles lost, fragments failing verification)", m.faults.clone());
        Arc::new(Metrics { registry, ..m })
    }

    /// The current values in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry).expect("writing to a String");
        s
    }
}

/// Serves `GET /metrics` on `listener` until the process ends. Any other path is a 404.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    while let Ok((mut s, _)) = listener.accept().await {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut req = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            // Read the request head (bounded in size and time).
            while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
                match tokio::time::timeout(Duration::from_secs(2), s.read(&mut chunk)).await {
                    Ok(Ok(n)) if n > 0 => req.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
            }
            let line = String::from_utf8_lossy(&req);
            let (status, kind, body) = if line.starts_with("GET /metrics ") || line.starts_with("GET / ") {
                ("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics.encode())
            } else {
                ("404 Not Found", "text/plain", "try GET /metrics\n".to_string())
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
            let _ = s.shutdown().await;
        });
    }
}
