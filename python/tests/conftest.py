"""Fixtures: the repository's scenarios and the `daqnet` command built from the same tree."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def micro() -> str:
    """The incast microbenchmark: 32 readout units answer one collector at once."""
    return str(REPO / "scenarios" / "incast-micro.toml")


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `daqnet` command of this tree ($DAQNET_BIN, or target/release/daqnet, built if
    it is missing)."""
    if "DAQNET_BIN" in os.environ:
        return Path(os.environ["DAQNET_BIN"])
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "daqnet"], cwd=REPO, check=True)
    return REPO / "target" / "release" / "daqnet"
