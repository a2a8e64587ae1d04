//! The simulator's main loop, shared by every dataflow: pop the next event, sample a trace if
//! one is due, hand the event to the socket layer or the dataflow, until the dataflow is done.
//! A dataflow (the event builder's, the sub-farm's, DAQPIPE's world) says what it needs of
//! the loop by implementing [`Dataflow`].

use crate::engine::EventQueue;
use crate::options::{SimOptions, SimOutput};
use crate::sockets::{Ev, Sockets, CAPTURE_BATCH};
use crate::trace::{Targets, TraceSink, TraceSpec, Tracer};
use daqnet_core::trace::CaptureSink;
use daqnet_core::{ConnId, Nanos, Scenario, NS_PER_S};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A dataflow the simulator runs from a scenario: made from it, started, run by [`run`], and
/// turned into a report. The event builder, the sub-farm and DAQPIPE are one each.
pub(crate) trait World<'a>: Dataflow + Sized {
    /// The world of `scenario`: its hosts, connections and state machines, nothing scheduled.
    fn new(scenario: &Scenario, opts: SimOptions<'a>) -> Self;
    /// Schedules what happens first.
    fn start(&mut self);
    /// The flag that stops the run early (Ctrl-C), if it was given one.
    fn stop_flag(&self) -> Option<&'a AtomicBool>;
    /// The report of the run, which took `wall_s` seconds of wall time.
    fn report(self, scenario: &Scenario, origin: &str, wall_s: f64) -> SimOutput;
}

/// Simulates `scenario` (named `origin` in the report) as world `W`: made, started, run until
/// it is done, its queue runs dry, `run.time_limit_s` passes or it is stopped.
pub(crate) fn simulate<'a, W: World<'a>>(scenario: &Scenario, origin: &str, mut opts: SimOptions<'a>) -> SimOutput {
    let wall = Instant::now();
    let (trace, capture) = (opts.trace.take(), opts.capture.take());
    let mut w = W::new(scenario, opts);
    w.start();
    let stop = w.stop_flag();
    let interrupted = run(&mut w, scenario.run.time_limit_s, stop, (trace, capture));
    let mut out = w.report(scenario, origin, wall.elapsed().as_secs_f64());
    out.report.interrupted = interrupted;
    out
}

/// What a trace of `scenario`, simulated as world `W`, can select.
pub(crate) fn targets<W: World<'static>>(scenario: &Scenario) -> Targets {
    W::new(scenario, SimOptions::default()).parts().0.targets()
}

/// A simulated dataflow over the socket layer: what the shared run loop ([`run`]) needs of it.
pub trait Dataflow {
    /// What its connections carry.
    type Msg: Copy;
    /// Its own events.
    type App: Copy;
    /// Its sockets and its event queue.
    fn parts(&mut self) -> (&mut Sockets<Self::Msg>, &mut EventQueue<Ev<Self::App>>);
    /// Every event it was to build is done (or lost).
    fn finished(&self) -> bool;
    /// A message arrived whole on connection `c` (at the end that did not send it).
    fn on_message(&mut self, c: ConnId, msg: Self::Msg);
    /// One of its own events is due.
    fn on_app(&mut self, ev: Self::App);

    /// Handles one event: a frame arriving (a host's messages go to [`Dataflow::on_message`],
    /// then the receiving end answers), a connection end's timer, or its own.
    #[inline(always)]
    fn dispatch(&mut self, ev: Ev<Self::App>) {
        match ev {
            Ev::Arrive { port } => {
                let (net, q) = self.parts();
                let Some(rx) = net.arrive(q, port) else { return };
                while let Some(msg) = self.parts().0.next_message(&rx) {
                    self.on_message(rx.conn, msg);
                }
                let (net, q) = self.parts();
                net.answer(q, &rx);
            }
            Ev::Timer { ep } => {
                let (net, q) = self.parts();
                net.on_timer(q, ep);
            }
            Ev::Link(l) => {
                let (net, q) = self.parts();
                net.on_link(q, l);
            }
            Ev::Interrupt { core } => {
                let (net, q) = self.parts();
                net.on_interrupt(q, core);
            }
            Ev::App(a) => self.on_app(a),
        }
    }
}

/// A trace to record during a run: what, and where the samples go.
pub type Tracing<'a> = (TraceSpec, &'a mut dyn TraceSink);
/// Ports to capture during a run (the `ports` of a spec), and where their frames go.
pub type Capturing<'a> = (TraceSpec, &'a mut dyn CaptureSink);

/// Runs `flow` until it is finished, its queue runs dry or passes `limit_s` simulated
/// seconds, or `stop` is set, sampling `trace` on the way; returns whether `stop` ended it.
pub fn run<D: Dataflow>(
    flow: &mut D,
    limit_s: f64,
    stop: Option<&AtomicBool>,
    (trace, mut capture): (Option<Tracing>, Option<Capturing>),
) -> bool {
    let limit = (limit_s * NS_PER_S as f64) as Nanos;
    let mut tracer = trace.map(|(spec, sink)| Tracer::new(&spec, flow.parts().0, sink));
    if let Some((spec, sink)) = capture.as_mut() {
        flow.parts().0.start_capture(spec, &mut **sink);
    }
    // Without a trace, one comparison per event.
    let mut next_sample = tracer.as_ref().map_or(Nanos::MAX, Tracer::next);
    let mut interrupted = false;
    while !flow.finished() {
        let q = flow.parts().1;
        // A relaxed load every 2^16 scheduler events costs nothing measurable.
        if q.popped().is_multiple_of(1 << 16) && stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            interrupted = true;
            break;
        }
        let Some((now, ev)) = q.pop() else { break };
        if now > limit {
            break;
        }
        if now >= next_sample {
            if let Some(t) = tracer.as_mut() {
                t.sample_until(now, flow.parts().0);
                next_sample = t.next();
            }
        }
        flow.dispatch(ev);
        if let Some((_, sink)) = capture.as_mut() {
            flow.parts().0.flush_capture(&mut **sink, CAPTURE_BATCH);
        }
    }
    if let Some(t) = tracer.as_mut() {
        t.flush();
    }
    if let Some((_, sink)) = capture.as_mut() {
        flow.parts().0.flush_capture(&mut **sink, 1);
    }
    interrupted
}
