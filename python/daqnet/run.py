"""Simulations and sweeps."""

from __future__ import annotations

import concurrent.futures
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Union

import pandas as pd

from . import _native
from .report import Report
from .scenario import Scenario, Sets, scenario_of, value_text
from .tables import Trace, read_table

#: ``None``: a tqdm bar when tqdm is installed; ``False``: none; ``True``: a tqdm bar (tqdm
#: must be installed); a callable: called as ``progress(done, total)``.
Progress = Union[bool, None, Callable[[int, int], Any]]


@contextmanager
def _progress(progress: Progress, unit: str) -> Iterator[Callable[[int, int], Any] | None]:
    if callable(progress):
        yield progress
        return
    if progress is False:
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install tqdm") from None
        yield None
        return
    bar = tqdm(unit=unit, desc="daqnet", leave=False)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        bar.close()


def sim(
    scenario: str | os.PathLike[str] | Scenario,
    set: Sets = None,  # noqa: A002
    *,
    events: int | None = None,
    seed: int | None = None,
    per_event: bool = False,
    fail: Sequence[str] = (),
    trace: str | None = None,
    progress: Progress = None,
) -> Report:
    """Simulates a scenario packet by packet, as ``daqnet sim`` does.

    Args:
        scenario: a scenario file, or a :class:`Scenario`.
        set: overrides, ``{"network.switch.buffer.port_bytes": "150kB"}``.
        events: measured events (``run.events``).
        seed: the seed (``run.seed``).
        per_event: record every event: :attr:`Report.events` and :attr:`Report.latency`.
        fail: fabric elements to take down, as ``daqnet sim --fail`` takes them
            (``["p0-spine1@20ms"]``; parallel leaf-spine scenarios).
        trace: time series to record, as ``daqnet sim --trace`` takes them:
            ``"queue=sw->node0,cwnd=*->node0,every=100us"`` (ports' queues by port name, TCP
            senders as ``FROM->TO``, globs, ``|`` between several); they come back as
            :attr:`Report.trace`.
        progress: see :data:`Progress`.

    Raises:
        FileNotFoundError: no such scenario file.
        ScenarioError: the scenario cannot run (the message names the field and what is allowed).
        KeyboardInterrupt: Ctrl-C (the simulation stops at once).
    """
    s = scenario_of(scenario, set, events=events, seed=seed)
    with _progress(progress, "event") as tell:
        out = _native.simulate(str(s.path), s.sets, per_event, list(fail), trace, tell)
    ev = out["events"]
    tr = out["trace"]
    return Report(
        json.loads(out["report"]),
        summary=out["summary"],
        verdict=out["verdict"],
        events=pd.read_parquet(io.BytesIO(ev)) if ev is not None else None,
        trace=Trace(pd.read_parquet(io.BytesIO(tr[0])), pd.read_parquet(io.BytesIO(tr[1]))) if tr else None,
    )


def _axis(path: str, values: Any) -> str:
    if isinstance(values, str):
        return f"{path}={values}"
    if isinstance(values, Iterable):
        texts = [value_text(path, v) for v in values]
        if not texts:
            raise ValueError(f"vary {path}: no values")
        return f"{path}={','.join(texts)}"
    raise TypeError(f"vary {path}: give a list of values or a range such as '100kB..1MB:100kB'")


def sweep(
    scenario: str | os.PathLike[str] | Scenario,
    vary: Mapping[str, Any],
    set: Sets = None,  # noqa: A002
    *,
    events: int | None = None,
    seed: int | None = None,
    repeat: int = 1,
    jobs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    per_event: bool = False,
    progress: Progress = None,
    executor: concurrent.futures.Executor | None = None,
) -> pd.DataFrame:
    """Runs a scenario over every combination of the ``vary`` values, in parallel, as
    ``daqnet sweep`` does, and returns its table (the rows of ``table.csv``).

    Args:
        scenario: a scenario file, or a :class:`Scenario`.
        vary: ``{dotted.path: values}``; values a list (``["100kB", "400kB"]``, ``[1, 2, 4]``)
            or a range as the command line takes it (``"100kB..1MB:100kB"``). The sweep is
            their Cartesian product, the first path slowest.
        set: overrides applied before the swept values.
        events: measured events per point (``run.events``).
        seed: the seed of repeat 0 (``run.seed``).
        repeat: runs per point; repeat ``k`` uses seed ``run.seed + k``.
        jobs: points run at once (default: one per CPU core).
        out: the sweep's folder (``table.csv``, ``table.parquet``, one ``report.json`` per
            point). Default: a new temporary folder. A folder holding this same sweep is
            resumed (a warning says so); one holding another sweep is refused.
        per_event: also write each point's ``events.parquet``.
        progress: see :data:`Progress` (counted in points).
        executor: run the points as tasks of this :class:`concurrent.futures.Executor`, one
            point per task, instead of daqnet's own threads: a ``dask.distributed.Client``'s
            ``get_executor()``, Ray's, loky's, mpi4py's, or a ``ProcessPoolExecutor``. Each
            task runs a point into ``out`` and nothing else, so the workers need daqnet
            installed and ``out`` and the scenario file at the same paths (a shared file
            system; relative paths from the worker's folder). The table is the one of a local
            sweep, row for row, and the folder resumes whatever ran it. ``jobs`` does not apply.

    The frame's ``attrs`` hold ``out`` (the folder), ``paths`` (column → dotted scenario
    path) and ``failures`` (point → reason; each also warned about).
    """
    if not vary:
        raise ValueError("vary: give at least one {dotted.path: values}")
    s = scenario_of(scenario, set, events=events, seed=seed)
    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="daqnet-sweep-"))
    axes = [_axis(p, v) for p, v in vary.items()]
    if executor is not None:
        if jobs is not None:
            raise ValueError("jobs: the executor decides how many points run at once; give one or the other")
        done = _sweep_on(executor, (str(s.path), s.sets, axes, str(folder), repeat, per_event), progress)
    else:
        with _progress(progress, "point") as tell:
            done = _native.sweep(
                str(s.path), s.sets, axes, str(folder), repeat, jobs or os.cpu_count() or 1, per_event, tell
            )
    if done["resumed"]:
        warnings.warn(
            f"resumed: {done['resumed']} points were already done in {folder} "
            "(remove the folder to measure them again)",
            stacklevel=2,
        )
    for point, reason in done["failures"]:
        warnings.warn(f"point {point} failed: {reason}", stacklevel=2)
    df = read_table(folder)
    df.attrs["failures"] = dict(done["failures"])
    return df


def _sweep_point(out: str, index: int) -> bool:
    """One task of a sweep on an executor: runs point ``index`` of the sweep in ``out``."""
    return _native.sweep_point(out, index)


def _sweep_on(executor: concurrent.futures.Executor, plan: tuple[Any, ...], progress: Progress) -> dict[str, Any]:
    """Claims the folder, runs every point not done as a task of ``executor``, and writes the
    table; returns what :func:`_native.sweep` returns."""
    out = plan[3]
    todo, total = _native.sweep_claim(*plan)
    failures = []
    with _progress(progress, "point") as tell:
        futures = {executor.submit(_sweep_point, out, i): i for i in todo}
        try:
            for n, f in enumerate(concurrent.futures.as_completed(futures), 1):
                try:
                    f.result()
                except Exception as e:  # noqa: BLE001 - a failed point is reported, the others go on
                    failures.append((futures[f], str(e)))
                if tell:
                    tell(n, len(todo))
        except KeyboardInterrupt:
            for f in futures:
                f.cancel()
            raise
    _native.sweep_table(out)
    failures.sort()
    return {"resumed": total - len(todo), "failures": failures}
