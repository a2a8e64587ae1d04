"""Scenarios: a TOML file plus overrides, as ``daqnet sim FILE --set path=value`` takes them."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Union

from . import _native

#: Overrides: ``{"system.credits_per_node": 2, "network.tcp.min_rto_ns": "5ms"}``, or the
#: command line's ``["system.credits_per_node=2"]``.
Sets = Union[Mapping[str, Any], Iterable[str], None]


def value_text(path: str, value: Any) -> str:
    """A Python value as the command line writes it after ``--set path=``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(
        f"{path}: {value!r} is a {type(value).__name__}; give a bool, a number or a string "
        f"such as '150kB', '5ms' or 'unlimited'"
    )


def set_list(sets: Sets) -> list[str]:
    """``sets`` as ``path=value`` strings, in order."""
    if sets is None:
        return []
    if isinstance(sets, Mapping):
        return [f"{p}={value_text(p, v)}" for p, v in sets.items()]
    if isinstance(sets, str):
        raise TypeError(f"set={sets!r}: give a dict {{path: value}} or a list of 'path=value' strings")
    out = list(sets)
    for s in out:
        if not isinstance(s, str) or "=" not in s:
            raise TypeError(f"set entry {s!r}: expected 'dotted.path=value'")
    return out


class Scenario:
    """A scenario file and the overrides applied to it, in order.

    Nothing is read until it is used: :func:`load_scenario` checks it at once.
    """

    def __init__(self, path: str | os.PathLike[str], set: Sets = None) -> None:  # noqa: A002
        self.path = Path(path)
        self.sets: list[str] = set_list(set)

    def with_set(self, set: Sets) -> Scenario:  # noqa: A002
        """A copy with more overrides, applied after these."""
        return Scenario(self.path, self.sets + set_list(set))

    def to_toml(self) -> str:
        """Every field resolved (defaults filled in, overrides applied), as TOML — what
        ``daqnet scenario FILE --set …`` prints. Raises :class:`ScenarioError` if it cannot run."""
        if not self.path.is_file():
            raise FileNotFoundError(2, "no such scenario file", str(self.path))
        return _native.resolve(str(self.path), self.sets)

    def resolve(self) -> dict[str, Any]:
        """Every field resolved, as nested dicts (``s.resolve()["system"]["nodes"]``)."""
        return tomllib.loads(self.to_toml())

    def __repr__(self) -> str:
        sets = f", set={self.sets!r}" if self.sets else ""
        return f"Scenario({str(self.path)!r}{sets})"


def load_scenario(path: str | os.PathLike[str] | Scenario, set: Sets = None) -> Scenario:  # noqa: A002
    """The scenario at ``path`` with overrides ``set``, checked now: raises
    :class:`FileNotFoundError`, or :class:`ScenarioError` naming the file, the field, the value
    and what is allowed."""
    s = path.with_set(set) if isinstance(path, Scenario) else Scenario(path, set)
    s.to_toml()
    return s


def scenario_of(scenario: str | os.PathLike[str] | Scenario, set: Sets, **fields: Any) -> Scenario:
    """``scenario`` with ``set`` and the keyword shortcuts (``events=`` → ``run.events``) applied."""
    s = scenario.with_set(set) if isinstance(scenario, Scenario) else Scenario(scenario, set)
    extra = {f"run.{k}": v for k, v in fields.items() if v is not None}
    s = s.with_set(extra)
    if not s.path.is_file():
        raise FileNotFoundError(2, "no such scenario file", str(s.path))
    return s
