"""Sweep tables and per-event records from disk, as pandas DataFrames."""

from __future__ import annotations

import os
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
