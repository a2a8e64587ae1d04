"""The native module (Rust, PyO3) under the ``daqnet`` package; use the package's functions."""

from collections.abc import Callable
from typing import Any

class ScenarioError(ValueError):
    """A scenario that cannot run: the file, field and value at fault, and what is allowed."""

class DaqnetError(Exception):
    """A run or sweep that could not be done."""

def resolve(path: str, sets: list[str]) -> str: ...
def simulate(
    path: str,
    sets: list[str],
    per_event: bool = False,
    faults: list[str] = ...,
    trace: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, Any]: ...
def sweep(
    path: str,
    sets: list[str],
    vary: list[str],
    out: str,
    repeat: int = 1,
    jobs: int = 1,
    per_event: bool = False,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, Any]: ...
def sweep_claim(
    path: str, sets: list[str], vary: list[str], out: str, repeat: int = 1, per_event: bool = False
) -> tuple[list[int], int]: ...
def sweep_point(out: str, index: int) -> bool: ...
def sweep_table(out: str) -> tuple[str, int]: ...
def latency_buckets(report_json: str) -> list[tuple[float, float, int]]: ...
def version() -> str: ...
