"""The example notebook runs from top to bottom and finds the incast onset."""

import nbformat
import pytest
from nbclient import NotebookClient


def test_the_incast_onset_notebook_runs_and_plots_the_onset(repo):
    path = repo / "examples" / "incast-onset.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(repo)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    # The onset of the README's sweep: rounds wait for timeouts up to 300 kB (one of the
    # notebook's 100 there, two of the README's 200), none from 400 kB.
    assert "incast up to 300 kB; from 400 kB no round waits for a timeout" in text, text
    assert any("image/png" in o.get("data", {}) for o in outputs), "the figure was drawn"
    assert "verdict: no drops" in text, "two credits take incast away"
