"""Sweep tables and per-event records from disk, as pandas DataFrames."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

#: Column metadata key holding a table column's dotted scenario path.
PATH_KEY = b"daqnet.path"


def _parquet(path: Path, what: str) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(2, f"no {path.name} here ({what})", str(path))
    return pd.read_parquet(path)


def read_table(folder: str | os.PathLike[str]) -> pd.DataFrame:
    """A sweep's table (``table.parquet``, the rows of ``table.csv`` with typed columns).

    Column names are identifiers (``system_credits_per_node``); ``df.attrs["paths"]`` maps
    each back to its dotted scenario path (``system.credits_per_node``)."""
    path = Path(folder) / "table.parquet"
    df = _parquet(path, "written by daqnet sweep, study and validate")
    schema = pq.read_schema(path)
    df.attrs["paths"] = {
        f.name: (f.metadata or {}).get(PATH_KEY, f.name.encode()).decode() for f in schema
    }
    df.attrs["out"] = str(Path(folder))
    return df


def read_events(folder: str | os.PathLike[str]) -> pd.DataFrame:
    """Per-event records (``events.parquet``, written with ``--per-event``): one row per built
    event, latency in ``latency_ms``, warm-up rows with ``measured`` false."""
    return _parquet(Path(folder) / "events.parquet", "written with --per-event")


@dataclass
class Trace:
    """A run's time series, recorded with ``trace=`` (``--trace`` on the command line), one
    row per sample.

    ``ports``: ``t_ns``, ``t_s``, ``port``, ``queue_bytes``, ``drops`` (so far).
    ``tcp``: ``t_ns``, ``t_s``, ``sender`` (``FROM->TO``), ``cwnd`` and ``ssthresh``
    (segments; ssthresh NaN while infinite), ``srtt_ms``, ``in_flight`` (segments), ``state``
    (``open``, ``disorder``, ``recovery``, ``loss``).

    ``trace.ports.pivot(index="t_s", columns="port", values="queue_bytes")`` gives one column
    per port.
    """

    ports: pd.DataFrame
    tcp: pd.DataFrame


def read_trace(folder: str | os.PathLike[str]) -> Trace:
    """The time series a run wrote into ``folder`` (``trace-ports.parquet``,
    ``trace-tcp.parquet``: ``daqnet sim … --trace …``)."""
    folder = Path(folder)
    what = "written by daqnet sim with --trace"
    return Trace(
        ports=_parquet(folder / "trace-ports.parquet", what),
        tcp=_parquet(folder / "trace-tcp.parquet", what),
    )
