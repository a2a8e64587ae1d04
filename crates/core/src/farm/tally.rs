//! What every substrate measures of a sub-farm run, in one place: dispatch latency, per-worker
//! shares, queue depths, and the report's `farm` section.

use super::DispatcherStats;
use crate::report::{EventRecord, FarmStats, Measure, NotBuilt, RunReport, Spread, WorkerStats};
use crate::scenario::Farm;
use crate::{EventId, Nanos, NodeId, PuId, Scenario, WorkerId, NS_PER_S};

/// A sub-farm run's measurements as they accumulate.
#[derive(Debug, Clone)]
pub struct FarmTally {
    measure: Measure,
    warmup: u64,
    total: u64,
    per_worker: Vec<(u64, u64)>,
    depth_sum: (u64, u64),
    arrivals: u64,
    samples: Vec<(f64, u64, u64)>,
    built: u64,
    lost: u64,
    /// Lost events past the warm-up: the report's `lost`.
    lost_measured: u64,
    records: Option<Vec<EventRecord>>,
}

impl FarmTally {
    /// Nothing measured yet: `workers` workers, events `0..warmup` not measured, `total`
    /// events in all (warm-up included); `records`: keep a row per event.
    pub fn new(workers: u32, warmup: u64, total: u64, records: bool) -> Self {
        FarmTally {
            measure: Measure::new(warmup),
            warmup,
            total,
            per_worker: vec![(0, 0); workers as usize],
            depth_sum: (0, 0),
            arrivals: 0,
            samples: Vec::new(),
            built: 0,
            lost: 0,
            lost_measured: 0,
            records: records.then(Vec::new),
        }
    }

    /// `event` reaches the SFC at `now` and finds `(events, tokens)` queued; about 100 of them
    /// are kept as the queue-depth series.
    pub fn on_arrival(&mut self, now: Nanos, event: EventId, (events, tokens): (usize, usize)) {
        self.arrivals += 1;
        self.depth_sum.0 += events as u64;
        self.depth_sum.1 += tokens as u64;
        if event.0.is_multiple_of((self.total / 100).max(1)) {
            self.samples.push((now as f64 / NS_PER_S as f64, events as u64, tokens as u64));
        }
    }

    /// `worker` is done with `event` (`bytes`), which reached the SFC at `queued`, at `now`.
    pub fn on_done(&mut self, worker: WorkerId, event: EventId, bytes: u64, queued: Nanos, now: Nanos) {
        // In a sub-farm the processing unit is the worker and the node the SFC.
        let track = crate::report::Track::one_step(event, PuId(worker.0), NodeId(0), queued, queued, now, bytes);
        self.measure.record(&track);
        if let Some(r) = &mut self.records {
            r.push(track.record(self.warmup));
        }
        if event.0 >= self.warmup {
            let p = &mut self.per_worker[worker.index()];
            p.0 += 1;
            p.1 += bytes;
        }
        self.built += 1;
    }

    /// `event` is lost (a full queue, a lost worker).
    pub fn on_lost(&mut self, event: EventId) {
        self.lost += 1;
        self.lost_measured += u64::from(event.0 >= self.warmup);
    }

    /// Events done so far (warm-up included).
    pub fn built(&self) -> u64 {
        self.built
    }

    /// Events offered to the SFC so far.
    pub fn arrivals(&self) -> u64 {
        self.arrivals
    }

    /// Every event is done or lost.
    pub fn finished(&self) -> bool {
        self.settled() >= self.total
    }

    /// Events done or lost so far (warm-up included).
    pub fn settled(&self) -> u64 {
        self.built + self.lost
    }

    /// The report of `substrate` running `scenario` (`origin`): common fields and the `farm`
    /// section; `busy_ns` per worker over a run of `run_ns`. Returns the per-event rows too.
    pub fn report(
        self,
        (substrate, origin, scenario): (&str, &str, &Scenario),
        farm: &Farm,
        stats: &DispatcherStats,
        busy_ns: &[Nanos],
        run_ns: Nanos,
    ) -> (RunReport, Vec<EventRecord>) {
        let measured = self.measure.finish();
        let duration = measured.duration_s;
        let built = measured.events_built;
        let mut report = RunReport::measured(substrate, origin, scenario, measured);
        let lost = self.lost_measured;
        report.events_not_built =
            NotBuilt { timed_out: 0, lost, abandoned: scenario.run.events.saturating_sub(built + lost) };
        let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
        let workers: Vec<WorkerStats> = self
            .per_worker
            .iter()
            .enumerate()
            .map(|(i, &(events, bytes))| WorkerStats {
                worker: i as u32,
                events,
                throughput_bps: per_s(bytes as f64 * 8.0),
                idle_fraction: 1.0 - busy_ns.get(i).copied().unwrap_or(0) as f64 / run_ns.max(1) as f64,
            })
            .collect();
        let arrivals = self.arrivals.max(1) as f64;
        report.farm = Some(FarmStats {
            implementation: farm.implementation.name().into(),
            dispatch: farm.dispatch.name().into(),
            waited_for_token: stats.waited_for_token,
            peak_event_queue: stats.peak_event_queue as u64,
            mean_event_queue: self.depth_sum.0 as f64 / arrivals,
            peak_token_queue: stats.peak_token_queue as u64,
            mean_token_queue: self.depth_sum.1 as f64 / arrivals,
            queue_depth: self.samples,
            protocol_errors: stats.protocol_errors,
            worker_bps: Spread::of(&workers.iter().map(|w| w.throughput_bps).collect::<Vec<_>>()),
            idle_fraction: workers.iter().map(|w| w.idle_fraction).sum::<f64>() / workers.len().max(1) as f64,
            workers,
        });
        let mut records = self.records.unwrap_or_default();
        records.sort_unstable_by_key(|r| r.event);
        (report, records)
    }
}
