"""daqnet.sim: the report of the command line, in Python objects."""

import json
import os
import signal
import subprocess
import threading
import time

import pandas as pd
import pytest

import daqnet

# Wall-clock fields: the only ones two runs of one scenario and seed may differ in.
WALL = {"wall_s", "sim_events_per_s"}


def without_wall(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in WALL}


def test_a_report_is_the_command_lines_report(micro, cli, tmp_path):
    sets = {"network.switch.buffer.port_bytes": "150kB", "run.events": 50}
    subprocess.run(
        [cli, "sim", micro, "-q", "--out", tmp_path, *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]],
        check=True,
    )
    from_cli = json.loads((tmp_path / "report.json").read_text())
    r = daqnet.sim(micro, set=sets, progress=False)
    assert without_wall(r.to_dict()) == without_wall(from_cli)
    # Attributes reach every section of report.json.
    assert r.tcp.timeouts == from_cli["tcp"]["timeouts"] > 0
    assert r.switch.ports[0].name == from_cli["switch"]["ports"][0]["name"]
    assert r.latency_ms["median"] == from_cli["latency_ms"]["median"]
    assert "incast" in r.verdict[0] and "verdict" in str(r)
    with pytest.raises(AttributeError, match="the fields are"):
        r.tcp.no_such_counter


def test_the_same_seed_gives_the_same_report(micro):
    sets = {"network.switch.buffer.port_bytes": "200kB"}
    a = daqnet.sim(micro, set=sets, events=40, seed=3, progress=False)
    b = daqnet.sim(micro, set=sets, events=40, seed=3, progress=False)
    assert without_wall(a.to_dict()) == without_wall(b.to_dict())
    assert a.seed == 3


def test_per_event_latency_is_a_series_that_agrees_with_the_report(micro):
    r = daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "200kB"}, events=60, per_event=True, progress=False)
    lat = r.latency
    assert isinstance(lat, pd.Series) and lat.name == "latency_ms"
    # One value per measured event; warm-up events are in r.events but not in the series.
    assert len(lat) == r.events_built == 60 and lat.index.is_unique
    warmup = daqnet.load_scenario(micro).resolve()["run"]["warmup_events"]
    assert len(r.events) == 60 + warmup and (~r.events.measured).sum() == warmup
    # The report's statistics are exact order statistics of the same samples (ns → ms).
    assert lat.max() == pytest.approx(r.latency_ms.max, abs=1e-6)
    assert lat.mean() == pytest.approx(r.latency_ms.mean, rel=1e-9)
    assert r.events.dtypes["measured"] == bool and r.events.dtypes["event"] == "uint64"
    # Without per-event records there is no series, but the histogram is always there.
    plain = daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "200kB"}, events=60, progress=False)
    assert plain.latency is None and plain.events is None
    h = plain.latency_histogram
    assert list(h.columns) == ["low_ms", "high_ms", "events"] and h.events.sum() == 60
    assert (h.low_ms <= h.high_ms).all() and h.high_ms.max() >= plain.latency_ms.max * 0.999


def test_progress_is_reported_up_to_the_last_event(micro):
    seen = []
    daqnet.sim(micro, events=30, progress=lambda done, total: seen.append((done, total)))
    assert seen, "the callback was called"
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert seen[-1][0] == seen[-1][1] == 30 + daqnet.load_scenario(micro).resolve()["run"]["warmup_events"]


def test_other_python_threads_run_while_it_simulates(micro):
    """The GIL is released: a counting thread advances during the simulation."""
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = time.monotonic()
    daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "150kB"}, events=400, progress=False)
    end = time.monotonic()
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    # The simulation takes a few hundred ms; a thread starved of the GIL would tick about
    # once (when the call returns). Bound: at least a tick per 20 ms of it.
    assert end - start > 0.1, "the load is long enough to tell"
    assert len(during) >= (end - start) / 0.02, (len(during), end - start)


def test_ctrl_c_stops_a_long_simulation_at_once(micro):
    # 100,000 events of incast at 150 kB: minutes of work. SIGINT after 0.3 s must end it
    # within about a second (the waiting thread checks for signals every 100 ms).
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "150kB"}, events=100_000, progress=False)
    assert time.monotonic() - start < 2.0


def test_bad_input_names_the_file_field_and_what_is_allowed(micro, tmp_path):
    with pytest.raises(daqnet.ScenarioError, match=r"network\.switch\.buffer\.port_bytes.*not a size.*600kB"):
        daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "lots"})
    with pytest.raises(daqnet.ScenarioError) as e:
        daqnet.sim(micro, set={"system.no_such_field": 3})
    assert "system.no_such_field" in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(FileNotFoundError, match="no such scenario file"):
        daqnet.sim(tmp_path / "missing.toml")
    with pytest.raises(TypeError, match="give a bool, a number or a string"):
        daqnet.sim(micro, set={"run.events": [1, 2]})
    with pytest.raises(daqnet.ScenarioError, match="fail: .*parallel_leaf_spine"):
        daqnet.sim(micro, fail=["p0-spine0@1ms"])


def test_a_fabric_failure_is_in_the_report(repo):
    r = daqnet.sim(repo / "scenarios" / "fabric" / "prototype.toml", events=20, fail=["p0-spine1@2ms"], progress=False)
    (fault,) = r.fabric.faults
    assert fault.element == "p0-spine1" and fault.at_s == pytest.approx(0.002)
    assert fault.flows_moved > 0


def test_scenarios_resolve_and_stack_overrides(micro):
    s = daqnet.load_scenario(micro, set={"system.credits_per_node": 2})
    t = s.with_set(["network.tcp.min_rto_ns=5ms"])
    resolved = t.resolve()
    assert resolved["system"]["credits_per_node"] == 2
    assert resolved["network"]["tcp"]["min_rto_ns"] == 5_000_000
    assert "credits_per_node = 2" in t.to_toml()
    assert s.sets == ["system.credits_per_node=2"], "with_set leaves the original alone"
    # The overrides reach the run: two credits take incast at 150 kB away (README).
    r = daqnet.sim(t, set={"network.switch.buffer.port_bytes": "150kB"}, events=20, progress=False)
    assert r.switch.drops == 0 and r.tcp.timeouts == 0


def test_a_trace_shows_the_collector_port_filling_to_its_buffer_and_draining(micro, cli, tmp_path):
    """Physical claim: in incast at a 150 kB port, the rounds fill the collector's port to
    within a frame of 150 kB (the drops happen there), and between rounds it drains to zero."""
    spec = "queue=sw->node0,cwnd=ru0->node0|ru31->node0,every=50us"
    r = daqnet.sim(micro, set={"network.switch.buffer.port_bytes": "150kB"}, events=20, trace=spec, progress=False)
    q = r.trace.ports
    assert set(q.port) == {"sw->node0"} and q.t_ns.is_monotonic_increasing
    assert (q.t_ns.diff().dropna() == 50_000).all(), "one sample every 50 µs"
    # MTU 1500: a full-size frame is 1518 bytes, so a port that refused one holds > 148,482.
    assert 150_000 - 1518 < q.queue_bytes.max() <= 150_000, "fills to its buffer, within one frame"
    assert (q.queue_bytes == 0).mean() > 0.5, "empty most of the time: drained between rounds"
    assert q.drops.is_monotonic_increasing and q.drops.iloc[-1] == r.switch.drops
    tcp = r.trace.tcp
    assert set(tcp.sender) == {"ru0->node0", "ru31->node0"}
    assert {"open", "recovery"} <= set(tcp.state) and (tcp.cwnd >= 1).all()
    # The command line writes the same samples to Parquet; read_trace reads them back.
    subprocess.run(
        [cli, "sim", micro, "-q", "--out", tmp_path, "--set", "network.switch.buffer.port_bytes=150kB",
         "--events", "20", "--trace", spec],
        check=True,
    )
    disk = daqnet.read_trace(tmp_path)
    pd.testing.assert_frame_equal(disk.ports, q)
    pd.testing.assert_frame_equal(disk.tcp, tcp)
    assert daqnet.read_report(tmp_path).trace is not None
    with pytest.raises(daqnet.ScenarioError, match="matches no TCP sender.*ru0->node0"):
        daqnet.sim(micro, trace="cwnd=node3/*")
