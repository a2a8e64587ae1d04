//! Time series during a simulation ([`daqnet_core::trace`]): the run loop samples chosen
//! ports and TCP senders every `every` of simulated time.
//!
//! Sampling happens between events: the state at instant `t` is the state after every event
//! before `t`, so no event enters the queue for it and a run without a trace pays one
//! comparison per event. Samples reach the [`TraceSink`] in batches.

use crate::sockets::Sockets;
pub use daqnet_core::trace::{PortSample, Targets, TcpSample, TraceSink, TraceSpec};
use daqnet_core::Nanos;

/// Samples per kind gathered before they go to the sink.
const BATCH: usize = 8192;

/// A run's tracer: what it samples, when next, and the samples not yet handed on.
pub(crate) struct Tracer<'a> {
    ports: Vec<u32>,
    senders: Vec<u32>,
    every: Nanos,
    next: Nanos,
    sink: &'a mut dyn TraceSink,
    port_buf: Vec<PortSample>,
    tcp_buf: Vec<TcpSample>,
}

impl<'a> Tracer<'a> {
    /// A tracer of `spec` over `net`'s ports and senders. The caller has checked the spec with
    /// [`crate::trace_targets`]; a pattern that matches nothing here records nothing.
    pub fn new<M: Copy>(spec: &TraceSpec, net: &Sockets<M>, sink: &'a mut dyn TraceSink) -> Tracer<'a> {
        let targets = net.targets();
        let (ports, senders) = spec.resolve(&targets).unwrap_or_default();
        let name = |names: &[String], ix: &[u32]| ix.iter().map(|&i| names[i as usize].clone()).collect::<Vec<_>>();
        sink.names(&name(&targets.ports, &ports), &name(&targets.senders, &senders));
        Tracer {
            ports,
            senders,
            every: spec.every_ns,
            next: 0,
            sink,
            port_buf: Vec::with_capacity(BATCH),
            tcp_buf: Vec::with_capacity(BATCH),
        }
    }

    /// The next instant to sample.
    pub fn next(&self) -> Nanos {
        self.next
    }

    /// Samples every due instant up to and including `now` (before the events at `now`).
    pub fn sample_until<M: Copy>(&mut self, now: Nanos, net: &mut Sockets<M>) {
        while self.next <= now {
            let t = self.next;
            for (i, &p) in self.ports.iter().enumerate() {
                let (queue_bytes, drops, marks, paused_ns) = net.port_backlog(p, t);
                self.port_buf.push(PortSample { t_ns: t, port: i as u32, queue_bytes, drops, marks, paused_ns });
            }
            for (i, &s) in self.senders.iter().enumerate() {
                let snd = net.sender(s);
                self.tcp_buf.push(TcpSample {
                    t_ns: t,
                    sender: i as u32,
                    cwnd: snd.cwnd(),
                    ssthresh: Some(snd.ssthresh()).filter(|&s| s != u32::MAX),
                    srtt_ns: snd.srtt(),
                    in_flight: snd.in_flight(),
                    state: snd.state().name(),
                    dctcp_alpha: snd.alpha().map(|a| a as f64 / 1024.0),
                });
            }
            if self.port_buf.len() >= BATCH || self.tcp_buf.len() >= BATCH {
                self.flush();
            }
            self.next = t + self.every;
        }
    }

    /// Hands what is gathered to the sink.
    pub fn flush(&mut self) {
        if !self.port_buf.is_empty() || !self.tcp_buf.is_empty() {
            self.sink.batch(&self.port_buf, &self.tcp_buf);
            self.port_buf.clear();
            self.tcp_buf.clear();
        }
    }
}
