"""daqnet.sweep and the tables on disk: the command line's numbers, typed for pandas."""

import csv
import shutil
import subprocess

import pandas as pd
import pytest

import daqnet

BUFFERS = ["100kB", "200kB", "400kB", "3.2MB"]
VARY = {"network.switch.buffer.port_bytes": BUFFERS}


def test_a_sweep_returns_the_numbers_of_the_command_lines_table(micro, cli, tmp_path):
    subprocess.run(
        [cli, "sweep", micro, "-q", "--events", "50", "--vary", "network.switch.buffer.port_bytes=" + ",".join(BUFFERS),
         "--out", tmp_path / "cli"],
        check=True,
    )
    with open(tmp_path / "cli" / "table.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    df = daqnet.sweep(micro, VARY, events=50, jobs=2, out=tmp_path / "py", progress=False)
    assert len(df) == len(rows) == 4
    paths = df.attrs["paths"]
    for (_, got), want in zip(df.iterrows(), rows):
        for column, dotted in paths.items():
            cell = want[dotted]
            if isinstance(got[column], str):
                assert got[column] == cell, column
            else:
                # CSV holds the shortest text that reads back as the same f64: equal, not close.
                assert float(got[column]) == float(cell), (column, got[column], cell)
    # The incast onset of the README: timeouts at 100 and 200 kB, none from 400 kB.
    assert list(df.timeouts > 0) == [True, True, False, False]


def test_table_columns_are_identifiers_with_the_expected_types(micro, tmp_path):
    df = daqnet.sweep(
        micro, {"system.credits_per_node": [2, 4]}, set={"network.switch.buffer.port_bytes": "150kB"},
        events=20, out=tmp_path, progress=False,
    )
    assert all(c.isidentifier() for c in df.columns)
    assert df.attrs["paths"]["system_credits_per_node"] == "system.credits_per_node"
    for count in ["point", "repeat", "seed", "events_built", "timeouts", "drops", "retransmits", "peak_port_bytes"]:
        assert df.dtypes[count] == "uint64", count
    for measure in ["latency_median_ms", "goodput_bps", "share_ge_100ms", "system_credits_per_node"]:
        assert df.dtypes[measure] == "float64", measure
    assert pd.api.types.is_string_dtype(df.dtypes["series"]) and pd.api.types.is_string_dtype(df.dtypes["dir"])
    assert list(df.system_credits_per_node) == [2.0, 4.0]
    # The same file read back later, and the events of a point swept with per_event.
    assert daqnet.read_table(tmp_path).equals(df)


def test_per_event_records_of_each_point(micro, tmp_path):
    df = daqnet.sweep(micro, {"run.seed": [1, 2]}, events=15, out=tmp_path, per_event=True, progress=False)
    ev = daqnet.read_events(tmp_path / df.dir[0])
    assert ev.measured.sum() == 15 and ev.dtypes["latency_ms"] == "float64"
    r = daqnet.read_report(tmp_path / df.dir[1])
    assert r.seed == 2 and r.latency is not None and len(r.latency) == 15


def test_a_rerun_resumes_and_says_so_and_another_sweep_is_refused(micro, tmp_path):
    first = daqnet.sweep(micro, VARY, events=20, out=tmp_path, progress=False)
    with pytest.warns(UserWarning, match="resumed: 4 points were already done"):
        again = daqnet.sweep(micro, VARY, events=20, out=tmp_path, progress=False)
    assert again.equals(first)
    with pytest.raises(daqnet.DaqnetError, match="sweep"):
        daqnet.sweep(micro, {"system.credits_per_node": [2]}, events=20, out=tmp_path, progress=False)


def test_progress_counts_points(micro, tmp_path):
    seen = []
    daqnet.sweep(micro, VARY, events=10, out=tmp_path, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (4, 4) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_bad_axes_are_refused_before_anything_runs(micro, tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        daqnet.sweep(micro, {}, out=tmp_path)
    with pytest.raises(ValueError, match="no values"):
        daqnet.sweep(micro, {"system.credits_per_node": []}, out=tmp_path)
    with pytest.raises(TypeError, match="list of values or a range"):
        daqnet.sweep(micro, {"system.credits_per_node": 3}, out=tmp_path)
    with pytest.raises(daqnet.ScenarioError, match="network.switch.buffer.port_bytes"):
        daqnet.sweep(micro, {"network.switch.buffer.port_bytes": ["1MB", "lots"]}, out=tmp_path)
    assert not (tmp_path / "table.csv").exists(), "nothing ran"
    # A range as the command line takes it.
    df = daqnet.sweep(micro, {"system.credits_per_node": "2..6:2"}, events=10, out=tmp_path / "r", progress=False)
    assert list(df.system_credits_per_node) == [2.0, 4.0, 6.0]


def _same_sweep(a, b) -> None:
    """Row for row the same table: the frames, and the files byte for byte."""
    da, db = daqnet.read_table(a), daqnet.read_table(b)
    pd.testing.assert_frame_equal(da, db)
    for name in ["table.csv", "table.parquet"]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


EXECUTOR_VARY = {"network.switch.buffer.port_bytes": ["100kB", "3.2MB"], "system.readout_units": [8, 16, 32]}


def test_a_sweep_on_a_process_pool_is_the_local_sweep_and_resumes(micro, tmp_path):
    import concurrent.futures

    local = daqnet.sweep(micro, EXECUTOR_VARY, events=30, out=tmp_path / "local", progress=False)
    seen = []
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        df = daqnet.sweep(
            micro, EXECUTOR_VARY, events=30, out=tmp_path / "pool", executor=pool,
            progress=lambda done, total: seen.append((done, total)),
        )
        pd.testing.assert_frame_equal(df.drop(columns="dir"), local.drop(columns="dir"))
        _same_sweep(tmp_path / "local", tmp_path / "pool")
        assert seen[-1] == (6, 6)
        # A point lost (its task died): the next sweep on the executor runs it alone.
        kept = (tmp_path / "pool" / "points" / "p0000" / "report.json").read_bytes()
        shutil.rmtree(tmp_path / "pool" / "points" / "p0003")
        with pytest.warns(UserWarning, match="resumed: 5 points were already done"):
            daqnet.sweep(micro, EXECUTOR_VARY, events=30, out=tmp_path / "pool", executor=pool, progress=False)
        assert (tmp_path / "pool" / "points" / "p0000" / "report.json").read_bytes() == kept
        _same_sweep(tmp_path / "local", tmp_path / "pool")
        with pytest.raises(ValueError, match="give one or the other"):
            daqnet.sweep(micro, EXECUTOR_VARY, out=tmp_path / "x", executor=pool, jobs=2)


def test_a_sweep_on_a_dask_cluster_is_the_local_sweep(micro, tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install 'dask[distributed]')"
    )
    daqnet.sweep(micro, EXECUTOR_VARY, events=30, out=tmp_path / "local", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            df = daqnet.sweep(
                micro, EXECUTOR_VARY, events=30, out=tmp_path / "dask", executor=client.get_executor(), progress=False
            )
            workers = len(client.scheduler_info()["workers"])
    assert workers == 2 and len(df) == 6
    _same_sweep(tmp_path / "local", tmp_path / "dask")
    # The cluster's worker processes are gone with it.
    import multiprocessing

    assert not multiprocessing.active_children()
