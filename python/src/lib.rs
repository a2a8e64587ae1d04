//! `daqnet._native`: the simulator and sweeps under the `daqnet` Python package.
//!
//! The package's Python layer (`python/daqnet/`) turns these functions' plain results into
//! reports and pandas frames. Each long call runs the simulation on a worker thread while the
//! calling thread waits with the GIL released: other Python threads run meanwhile, progress
//! reaches the caller's callback on the caller's own thread (where tqdm and Jupyter expect it),
//! and Ctrl-C stops the run as it stops `daqnet sim` — the work done so far is kept and
//! `KeyboardInterrupt` is raised.

use daqnet_core::Scenario;
use daqnet_sim::trace::{TraceSink, TraceSpec};
use daqnet_sim::{FaultPlan, SimOptions};
use daqnet_study::columnar::TraceWriter;
use daqnet_study::sweep::{
    claim_folder, execute, pending, read_plan, run_points, ExecOptions, Point, PointOutput, Shard, SweepEvent,
    SweepPlan,
};
use daqnet_study::vary::Axis;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A scenario that cannot run: the file, field and value at fault, and what is allowed."
);
create_exception!(_native, DaqnetError, PyException, "A run or sweep that could not be done.");

/// Loads `path` with `sets` applied, checked, defaults filled in.
fn load(path: &Path, sets: &[String]) -> PyResult<Scenario> {
    daqnet_core::scenario::load(path, sets).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// The scenario at `path` with `sets` applied, resolved: every field, as TOML.
#[pyfunction]
fn resolve(path: PathBuf, sets: Vec<String>) -> PyResult<String> {
    Ok(load(&path, &sets)?.to_toml())
}

/// What the worker thread tells the waiting caller.
enum Note {
    /// A simulation built `done` of `total` events.
    Built(u64, u64),
    /// A sweep found `done` points finished by an earlier run in its folder.
    Resuming(usize),
    /// A sweep is about to run this many points.
    Starting(usize),
    /// A sweep's point finished (or failed).
    Finished,
}

/// Runs `work` on a worker thread; meanwhile waits with the GIL released, hands every
/// [`Note`] to `on_note` on this thread, and on Ctrl-C sets `stop` (the work ends early and
/// returns what it did) and raises `KeyboardInterrupt` once the work is back.
fn run_detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&mpsc::Sender<Note>, &AtomicBool) -> T + Send,
    mut on_note: impl FnMut(Python<'_>, Note) -> PyResult<()>,
) -> PyResult<T> {
    let stop = AtomicBool::new(false);
    let (tx, mut rx) = mpsc::channel();
    let (result, failure) = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let tx = tx;
            work(&tx, &stop)
        });
        let mut failure = None;
        loop {
            // The receiver moves into the GIL-free closure and back: it is not `Sync`.
            let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(100)), rx));
            rx = back;
            match got {
                Ok(note) => {
                    if failure.is_none() {
                        failure = on_note(py, note).err();
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Err(e) = py.check_signals() {
                failure.get_or_insert(e);
            }
            if failure.is_some() {
                // The callback failed or Ctrl-C: the worker stops at its next check.
                stop.store(true, Ordering::Relaxed);
            }
        }
        (worker.join(), failure)
    });
    let result = result.map_err(|_| DaqnetError::new_err("the simulation panicked (a bug: please report it)"))?;
    match failure {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Calls the optional Python `progress(done, total)`.
fn tell(py: Python<'_>, progress: &Option<Py<PyAny>>, done: u64, total: u64) -> PyResult<()> {
    progress.as_ref().map_or(Ok(()), |cb| cb.call1(py, (done, total)).map(drop))
}

/// Simulates the scenario at `path` with `sets`; `faults` as `daqnet sim --fail` takes them.
/// Returns {report (JSON text), summary, verdict (lines), events (the bytes of its
/// `events.parquet`, or None), trace (the bytes of `trace-ports.parquet` and
/// `trace-tcp.parquet`, or None)}.
#[pyfunction]
#[pyo3(signature = (path, sets, per_event=false, faults=Vec::new(), trace=None, progress=None))]
#[allow(clippy::too_many_arguments)] // the keywords of `daqnet.sim`
fn simulate<'py>(
    py: Python<'py>,
    path: PathBuf,
    sets: Vec<String>,
    per_event: bool,
    faults: Vec<String>,
    trace: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let scenario = load(&path, &sets)?;
    let trace = trace
        .map(|t| {
            let spec = t.parse::<TraceSpec>().map_err(|e| ScenarioError::new_err(format!("trace: {e}")))?;
            spec.resolve(&daqnet_sim::trace_targets(&scenario))
                .map_err(|e| ScenarioError::new_err(format!("trace: {e}")))?;
            let writer =
                TraceWriter::new(Vec::new(), Vec::new()).map_err(|e| DaqnetError::new_err(format!("{e:#}")))?;
            Ok::<_, PyErr>((spec, writer))
        })
        .transpose()?;
    let faults = faults
        .iter()
        .map(|f| f.parse::<FaultPlan>().map_err(|e| ScenarioError::new_err(format!("fail: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    FaultPlan::check_all(&scenario, &faults).map_err(|e| ScenarioError::new_err(format!("fail: {e}")))?;
    let origin = path.display().to_string();
    let (out, trace) = run_detached(
        py,
        |tx, stop| {
            let mut trace = trace;
            let mut on_built = |done: u64, total: u64| drop(tx.send(Note::Built(done, total)));
            let opts = SimOptions {
                progress: Some(&mut on_built),
                record_events: per_event,
                stop: Some(stop),
                faults,
                trace: trace.as_mut().map(|(spec, w)| (spec.clone(), w as &mut dyn TraceSink)),
                ..Default::default()
            };
            (daqnet_sim::simulate(&scenario, &origin, opts), trace.map(|(_, w)| w.finish()))
        },
        |py, note| match note {
            Note::Built(done, total) => tell(py, &progress, done, total),
            _ => Ok(()),
        },
    )?;
    let d = PyDict::new(py);
    d.set_item("report", out.report.to_json())?;
    d.set_item("summary", out.report.summary_table())?;
    d.set_item("verdict", daqnet_study::verdict::verdict(&out.report, &scenario, &origin))?;
    let events = per_event.then(|| daqnet_study::columnar::events_parquet(&out.events)).transpose();
    let events = events.map_err(|e| DaqnetError::new_err(format!("{e:#}")))?;
    d.set_item("events", events.map(|b| PyBytes::new(py, &b)))?;
    let trace = trace.transpose().map_err(|e| DaqnetError::new_err(format!("cannot write the trace: {e:#}")))?;
    d.set_item("trace", trace.map(|(ports, tcp, _)| (PyBytes::new(py, &ports), PyBytes::new(py, &tcp))))?;
    Ok(d)
}

/// Runs the sweep `daqnet sweep PATH --set … --vary … --repeat R --jobs J --out OUT` would.
/// Returns {table (path of table.csv), ran, skipped, failures [(point, reason)], resumed
/// (points already done before, or 0)}.
#[pyfunction]
#[pyo3(signature = (path, sets, vary, out, repeat=1, jobs=1, per_event=false, progress=None))]
#[allow(clippy::too_many_arguments)] // the keywords of `daqnet.sweep`
fn sweep<'py>(
    py: Python<'py>,
    path: PathBuf,
    sets: Vec<String>,
    vary: Vec<String>,
    out: PathBuf,
    repeat: u32,
    jobs: usize,
    per_event: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    if jobs == 0 {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    let plan = plan_of(path, sets, &vary, repeat, per_event)?.0;
    let (mut resumed, mut done, mut total) = (0, 0, 0);
    let executed = run_detached(
        py,
        |tx, stop| {
            let observe = |e: SweepEvent| {
                let _ = tx.send(match e {
                    SweepEvent::Resuming { done, .. } => Note::Resuming(done),
                    SweepEvent::Starting { points } => Note::Starting(points),
                    SweepEvent::Finished { .. } => Note::Finished,
                });
            };
            let opts = ExecOptions { jobs, shard: Shard::ALL, observer: Some(&observe), stop: Some(stop) };
            execute(&plan, &out, opts, &point_runner(per_event, Some(stop)))
        },
        |py, note| {
            match note {
                Note::Resuming(d) => resumed = d,
                Note::Starting(points) => total = points as u64,
                Note::Finished => done += 1,
                Note::Built(..) => return Ok(()),
            }
            tell(py, &progress, done, total)
        },
    )?
    .map_err(|e| DaqnetError::new_err(format!("{e:#}")))?;
    let d = PyDict::new(py);
    d.set_item("table", executed.table)?;
    d.set_item("ran", executed.ran)?;
    d.set_item("skipped", executed.skipped)?;
    d.set_item("failures", executed.failures)?;
    d.set_item("resumed", resumed)?;
    Ok(d)
}

/// The plan of a sweep of `path` with `sets`, over the axes `vary` (`PATH=LIST` each), and its
/// points, every point's scenario checked.
fn plan_of(
    path: PathBuf,
    sets: Vec<String>,
    vary: &[String],
    repeat: u32,
    per_event: bool,
) -> PyResult<(SweepPlan, Vec<Point>)> {
    if repeat == 0 {
        return Err(PyValueError::new_err("repeat must be at least 1"));
    }
    let axes = vary
        .iter()
        .map(|v| Axis::parse(v).map_err(|e| ScenarioError::new_err(format!("vary {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let plan = SweepPlan::single(&path, sets, axes, repeat, per_event);
    let points = plan.points().map_err(|e| ScenarioError::new_err(format!("{e:#}")))?;
    Ok((plan, points))
}

/// A sweep point run in the simulator, as `daqnet sweep` runs it.
fn point_runner(
    per_event: bool,
    stop: Option<&AtomicBool>,
) -> impl Fn(&Point) -> anyhow::Result<PointOutput> + Sync + '_ {
    move |p| {
        let opts = SimOptions { record_events: per_event, stop, ..Default::default() };
        let run = daqnet_sim::simulate(&p.scenario, &p.origin, opts);
        Ok(PointOutput { report: run.report, events: run.events, files: Vec::new() })
    }
}

/// Claims `out` for the sweep (its sweep.json, or the same one already there) and returns the
/// indices of the points still to run and the number of points: the first step of a sweep run
/// by an executor, one [`sweep_point`] per task.
#[pyfunction]
#[pyo3(signature = (path, sets, vary, out, repeat=1, per_event=false))]
fn sweep_claim(
    path: PathBuf,
    sets: Vec<String>,
    vary: Vec<String>,
    out: PathBuf,
    repeat: u32,
    per_event: bool,
) -> PyResult<(Vec<usize>, usize)> {
    let (plan, points) = plan_of(path, sets, &vary, repeat, per_event)?;
    let fail = |e: anyhow::Error| DaqnetError::new_err(format!("{e:#}"));
    claim_folder(&plan, &out).map_err(fail)?;
    let todo = pending(&points, &out, Shard::ALL).map_err(fail)?;
    Ok((todo.iter().map(|p| p.meta.index).collect(), points.len()))
}

/// Runs point `index` of the sweep in `out` (its sweep.json) into its folder, unless it is
/// done already; returns whether it ran. Raises `DaqnetError` with the reason when it fails.
/// The GIL is released meanwhile, so thread pools run points in parallel.
#[pyfunction]
fn sweep_point(py: Python<'_>, out: PathBuf, index: usize) -> PyResult<bool> {
    let run = || -> anyhow::Result<bool> {
        let plan = read_plan(&out)?;
        let points = plan.points()?;
        let p =
            points.get(index).ok_or_else(|| anyhow::anyhow!("the sweep in {} has no point {index}", out.display()))?;
        if pending(std::slice::from_ref(p), &out, Shard::ALL)?.is_empty() {
            return Ok(false);
        }
        let runner = point_runner(plan.per_event, None);
        let (_, failures) = run_points(&[p], &out, (1, plan.per_event), None, &runner, &|_| {})?;
        match failures.into_iter().next() {
            Some((_, why)) => anyhow::bail!("{why}"),
            None => Ok(true),
        }
    };
    py.detach(run).map_err(|e| DaqnetError::new_err(format!("point {index}: {e:#}")))
}

/// Writes the table of the sweep in `out` from the points done; returns its path and rows.
#[pyfunction]
fn sweep_table(out: PathBuf) -> PyResult<(PathBuf, usize)> {
    let fail = |e: anyhow::Error| DaqnetError::new_err(format!("{e:#}"));
    let plan = read_plan(&out).map_err(fail)?;
    daqnet_study::table::write(&out, &plan.axis_paths(), plan.len()).map_err(fail)
}

/// The latency histogram of a report (its JSON text) as rows (lowest ms, highest ms, events).
#[pyfunction]
fn latency_buckets(report_json: &str) -> PyResult<Vec<(f64, f64, u64)>> {
    let report = serde_json::from_str(report_json).map_err(|e| PyValueError::new_err(format!("not a report: {e}")))?;
    daqnet_study::columnar::latency_buckets(&report).map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// The daqnet version this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("DaqnetError", m.py().get_type::<DaqnetError>())?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_claim, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_table, m)?)?;
    m.add_function(wrap_pyfunction!(latency_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
