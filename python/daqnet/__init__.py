"""daqnet from Python: simulate DAQ event-building networks, sweep what-if configurations and
read the results as pandas objects.

The same simulator as the ``daqnet`` command, in this process::

    import daqnet
    r = daqnet.sim("scenarios/incast-micro.toml", set={"network.switch.buffer.port_bytes": "150kB"})
    r.latency_ms.median, r.tcp.timeouts, r.verdict
    df = daqnet.sweep("scenarios/incast-micro.toml",
                      vary={"network.switch.buffer.port_bytes": ["100kB", "400kB", "3.2MB"]})

Same scenario and seed give the same report, bit for bit (apart from the wall-clock fields
``wall_s`` and ``sim_events_per_s``). Simulations release the GIL; Ctrl-C stops them.
"""

from ._native import DaqnetError, ScenarioError
from ._native import version as _version
from .report import Record, Report, read_report
from .scenario import Scenario, load_scenario
from .run import sim, sweep
from .tables import Trace, read_events, read_table, read_trace

__version__: str = _version()

__all__ = [
    "DaqnetError",
    "Record",
    "Report",
    "Scenario",
    "Trace",
    "ScenarioError",
    "load_scenario",
    "read_events",
    "read_report",
    "read_table",
    "read_trace",
    "sim",
    "sweep",
]
