"""Run reports: ``report.json`` as Python objects."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from . import _native
from .tables import Trace, read_trace


def wrap(value: Any) -> Any:
    """Dicts as :class:`Record`, lists of them as lists of records, the rest as is."""
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


class Record:
    """A section of a report: its fields as attributes (``r.tcp.timeouts``) and as items
    (``r.tcp["timeouts"]``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return wrap(self.__dict__["_data"][name])
        except KeyError:
            raise AttributeError(
                f"no field {name!r} here; the fields are: {', '.join(self._data)}"
            ) from None

    def __getitem__(self, name: str) -> Any:
        return wrap(self._data[name])

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._data == self._data

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain (deep-copied) dicts and lists, as in ``report.json``."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"Record({self._data!r})"


class Report(Record):
    """A run report — the fields of ``report.json`` as attributes — with the per-event
    records when they were recorded (``per_event=True``).

    ``print(report)`` shows what ``daqnet sim`` prints: the summary and the verdict.
    """

    substrate: str
    scenario: str
    seed: int
    events_built: int
    duration_s: float
    event_rate_hz: float
    goodput_bps: float
    latency_ms: Record
    tcp: Record
    switch: Record

    def __init__(
        self,
        data: dict[str, Any],
        summary: str = "",
        verdict: list[str] | None = None,
        events: pd.DataFrame | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(data)
        self.__dict__["summary"] = summary
        self.__dict__["verdict"] = list(verdict or [])
        self.__dict__["events"] = events
        self.__dict__["trace"] = trace

    summary: str
    """The summary table ``daqnet sim`` prints."""
    verdict: list[str]
    """The verdict lines ``daqnet sim`` prints under it (what the run shows, what to try)."""
    events: pd.DataFrame | None
    """One row per built event (warm-up included, column ``measured``), or ``None`` unless
    the run recorded them: the columns of ``events.parquet``."""
    trace: Trace | None
    """The time series recorded with ``trace=``, or ``None``."""

    @property
    def latency(self) -> pd.Series | None:
        """Data-collection latency of every measured event in ms, indexed by event id (``None``
        unless the run recorded per-event records)."""
        if self.events is None:
            return None
        measured = self.events[self.events["measured"]]
        return measured.set_index("event")["latency_ms"]

    @property
    def latency_histogram(self) -> pd.DataFrame:
        """The report's latency histogram (HDR, 3 significant digits) as rows: ``low_ms``,
        ``high_ms``, ``events`` — only buckets holding events. Always there, also without
        per-event records."""
        rows = _native.latency_buckets(json.dumps(self._data))
        return pd.DataFrame(rows, columns=["low_ms", "high_ms", "events"])

    def __str__(self) -> str:
        return self.summary + "".join(f"{line}\n" for line in self.verdict)

    def __repr__(self) -> str:
        l = self._data.get("latency_ms", {})
        return (
            f"<daqnet Report {self._data.get('substrate', '?')} of {self._data.get('scenario', '?')}: "
            f"{self._data.get('events_built', 0)} events, latency median {l.get('median', 0):.3f} ms, "
            f"p99 {l.get('p99', 0):.3f} ms>"
        )


def read_report(folder: str | os.PathLike[str]) -> Report:
    """The report a command wrote into ``folder`` (``report.json``, with ``events.parquet``
    as :attr:`Report.events` and a ``--trace`` as :attr:`Report.trace` when they are there).
    Summary and verdict are not stored: they are empty."""
    folder = Path(folder)
    path = folder / "report.json"
    if not path.is_file():
        raise FileNotFoundError(2, "no report.json in this folder (written by daqnet sim, run or testbed run)", str(path))
    events = folder / "events.parquet"
    data = json.loads(path.read_text())
    traced = (folder / "trace-ports.parquet").is_file()
    return Report(
        data,
        events=pd.read_parquet(events) if events.is_file() else None,
        trace=read_trace(folder) if traced else None,
    )
