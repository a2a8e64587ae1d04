//! Live metrics of a real run, served by the supervisor (`--metrics ADDR`, loopback unless told
//! otherwise) at `GET /metrics`: counters and a latency histogram, from which Prometheus
//! computes rates (`rate(daqnet_events_built_total[10s])`) and quantiles
//! (`histogram_quantile(0.99, rate(daqnet_latency_seconds_bucket[30s]))`).
//!
//! The body is OpenMetrics 1.0 when the scraper accepts it (Prometheus asks for it first), and
//! the classic Prometheus text format 0.0.4 otherwise, each with its own content type, so that
//! counter and histogram types reach the scraper intact.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
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
    /// Data-collection latency, seconds.
    pub latency_seconds: Histogram,
    /// Events assigned and not yet built.
    pub events_in_flight: Gauge,
    /// Credits held by outstanding requests, per node.
    pub credits_in_use: Family<NodeLabel, Gauge>,
    /// Requests waiting for credits, per node.
    pub queued_requests: Family<NodeLabel, Gauge>,
    /// Segments retransmitted towards each node (the readout units' sockets, `TCP_INFO`).
    pub tcp_retransmits: Family<NodeLabel, Counter>,
    /// Retransmission timeouts on the connections towards each node (`TCP_INFO`, Linux ≥ 6.7).
    pub tcp_timeouts: Family<NodeLabel, Counter>,
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
            // 50 µs .. ~1.6 s.
            latency_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 16)),
            events_in_flight: Gauge::default(),
            credits_in_use: Family::default(),
            queued_requests: Family::default(),
            tcp_retransmits: Family::default(),
            tcp_timeouts: Family::default(),
            faults: Counter::default(),
            registry: Registry::default(),
        };
        let version = vec![("version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
        registry.register("build", "The daqnet build that serves these metrics", Info::new(version));
        registry.register("events_built", "Events built", m.events_built.clone());
        registry.register("payload_bytes", "Event payload bytes collected", m.payload_bytes.clone());
        registry.register(
            "latency_seconds",
            "Data-collection latency: first request of an event to its last fragment",
            m.latency_seconds.clone(),
        );
        registry.register("events_in_flight", "Events assigned and not yet built", m.events_in_flight.clone());
        registry.register("credits_in_use", "Credits held by outstanding requests", m.credits_in_use.clone());
        registry.register("queued_requests", "Data requests waiting for credits", m.queued_requests.clone());
        registry.register(
            "tcp_retransmits",
            "Segments retransmitted towards the node (TCP_INFO of the readout units' sockets)",
            m.tcp_retransmits.clone(),
        );
        registry.register(
            "tcp_timeouts",
            "Retransmission timeouts on the connections towards the node (TCP_INFO)",
            m.tcp_timeouts.clone(),
        );
        registry.register("faults", "Faults reported (roles lost, fragments failing verification)", m.faults.clone());
        Arc::new(Metrics { registry, ..m })
    }

    /// The current values in the OpenMetrics 1.0 text format.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry).expect("writing to a String");
        s
    }

    /// The body and content type for a scraper whose `Accept` header is `accept`.
    pub fn negotiate(&self, accept: &str) -> (String, &'static str) {
        if accept.contains("application/openmetrics-text") {
            (self.encode(), "application/openmetrics-text; version=1.0.0; charset=utf-8")
        } else {
            (classic(&self.encode()), "text/plain; version=0.0.4; charset=utf-8")
        }
    }
}

/// OpenMetrics text as the classic Prometheus format 0.0.4: a counter's metadata names its
/// samples' `_total` series, an info metric becomes a gauge `_info`, and the `# UNIT` and
/// `# EOF` lines (not part of 0.0.4) go.
fn classic(open: &str) -> String {
    let mut kinds = std::collections::HashMap::new();
    for l in open.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            if let Some((name, kind)) = rest.split_once(' ') {
                kinds.insert(name.to_string(), kind.to_string());
            }
        }
    }
    let mut out = String::new();
    for l in open.lines() {
        if l.starts_with("# UNIT ") || l == "# EOF" {
            continue;
        }
        let meta = ["# TYPE ", "# HELP "].iter().find_map(|p| l.strip_prefix(p).map(|r| (*p, r)));
        let line = match meta.and_then(|(p, r)| r.split_once(' ').map(|(n, rest)| (p, n, rest))) {
            Some((p, name, rest)) => match kinds.get(name).map(String::as_str) {
                Some("counter") => format!("{p}{name}_total {}", if p == "# TYPE " { "counter" } else { rest }),
                Some("info") => format!("{p}{name}_info {}", if p == "# TYPE " { "gauge" } else { rest }),
                _ => l.to_string(),
            },
            None => l.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Scrapes served at once; connections beyond are closed at once (and logged, once a second).
pub const MAX_SCRAPES: usize = 64;

/// How long one scrape may take, request and answer: a client that holds a connection open
/// longer is cut off.
pub const SCRAPE_DEADLINE: Duration = Duration::from_secs(2);

/// Serves `GET /metrics` on `listener` until the process ends. Any other path is a 404. At most
/// [`MAX_SCRAPES`] connections at once, each for [`SCRAPE_DEADLINE`] at most; a failed accept
/// (out of descriptors) is logged and retried after a pause that doubles up to a second, and a
/// listener that keeps failing is bound again at its address.
pub async fn serve(mut listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_SCRAPES));
    let refusals = crate::net::greet::Refusals::new("metrics");
    let (mut pause, mut failures) = (Duration::from_millis(10), 0);
    loop {
        let s = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                failures += 1;
                refusals.say(
                    "accept",
                    format_args!("a connection: accept failed ({e}); retrying in {} ms", pause.as_millis()),
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
                if failures >= 10 {
                    listener = rebind(listener).await;
                    failures = 0;
                }
                continue;
            }
        };
        (pause, failures) = (Duration::from_millis(10), 0);
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            refusals.say("crowd", format_args!("a scrape: {MAX_SCRAPES} are being served"));
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(SCRAPE_DEADLINE, answer(s, &metrics)).await;
        });
    }
}

/// The listener bound again at its own address (logged); the old one if that fails.
async fn rebind(listener: tokio::net::TcpListener) -> tokio::net::TcpListener {
    let Ok(addr) = listener.local_addr() else { return listener };
    drop(listener);
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                eprintln!("metrics: listening again on {addr}");
                return l;
            }
            Err(e) => {
                eprintln!("metrics: cannot listen again on {addr} ({e}); retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Reads one request head (at most 8 kB) and answers it.
async fn answer(mut s: tokio::net::TcpStream, metrics: &Metrics) {
    let mut req = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        match s.read(&mut chunk).await {
            Ok(n) if n > 0 => req.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&req);
    let accept = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("accept")).map(|(_, v)| v))
        .unwrap_or("");
    let (status, kind, body) = if head.starts_with("GET /metrics ") || head.starts_with("GET / ") {
        let (body, kind) = metrics.negotiate(accept);
        ("200 OK", kind, body)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300 clients connect and say nothing: at most 64 are held (each for 2 s at most), the
    /// rest are closed at once, and a real scrape is answered within the deadline; the server
    /// never holds more than its 64 connections' descriptors.
    #[test]
    fn idle_clients_cannot_exhaust_the_metrics_server() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let at = l.local_addr().unwrap();
            tokio::spawn(serve(l, Metrics::new()));
            // Established connections whose local end is the server's port and that have a
            // socket (inode ≠ 0): those the server has accepted and holds. One still in the
            // listen backlog has no socket yet (a loaded machine may not have drained it).
            let held = || {
                let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
                let port = format!(":{:04X}", at.port());
                tcp.lines()
                    .map(|l| l.split_whitespace().collect::<Vec<_>>())
                    .filter(|f| f.len() > 9 && f[1].ends_with(&port) && f[3] == "01" && f[9] != "0")
                    .count()
            };
            let mut idle = Vec::new();
            for _ in 0..300 {
                idle.push(tokio::net::TcpStream::connect(at).await.unwrap());
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let held = held();
            assert!((1..=MAX_SCRAPES).contains(&held), "the server holds {held} connections");
            let start = std::time::Instant::now();
            let body = loop {
                let mut s = tokio::net::TcpStream::connect(at).await.unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").await.unwrap();
                let mut body = String::new();
                let _ = s.read_to_string(&mut body).await;
                if !body.is_empty() {
                    break body;
                }
                assert!(start.elapsed() < SCRAPE_DEADLINE * 2, "no scrape answered in {:?}", start.elapsed());
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
        });
    }

    #[test]
    fn each_scraper_gets_the_format_it_accepts() {
        let m = Metrics::new();
        m.events_built.inc_by(3);
        m.latency_seconds.observe(0.001);
        let (open, kind) = m.negotiate("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5");
        assert!(kind.starts_with("application/openmetrics-text"));
        assert!(open.contains("# TYPE daqnet_events_built counter") && open.contains("daqnet_events_built_total 3"));
        assert!(open.contains("daqnet_build_info{version="), "{open}");
        assert!(open.trim_end().ends_with("# EOF"));
        let (classic, kind) = m.negotiate("text/plain");
        assert!(kind.starts_with("text/plain; version=0.0.4"));
        assert!(classic.contains("# TYPE daqnet_events_built_total counter\ndaqnet_events_built_total 3"), "{classic}");
        assert!(classic.contains("# TYPE daqnet_build_info gauge"), "{classic}");
        assert!(classic.contains("# TYPE daqnet_latency_seconds histogram") && !classic.contains("# EOF"));
    }
}
