"""examples/rr_from_python.ipynb runs from top to bottom (issue 49.11), executed by nbclient in a fresh
kernel with 16 steps per tiny run (the tiny size's warmup is 15), so the notebook cannot go stale. It takes
about 90 s of one process, so it is a slow check: `pytest -m slow tests/test_notebook.py`."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "rr_from_python.ipynb"


def text_of(cell) -> str:
    """What a code cell showed: its streams and the plain text of its results."""
    return "".join(
        o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])
    )


@pytest.mark.slow
def test_the_notebook_runs_every_cell_and_shows_each_jobs_result(monkeypatch):
    monkeypatch.setenv("RR_NOTEBOOK_STEPS", "16")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    shown = [text_of(c) for c in nb.cells if c.cell_type == "code"]
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
    table = next(s for s in shown if "welch_t" in s)
    # Table 2's Welch t (the paper: 3.3 and 3.7 at 590M, 2.3 and 2.4 at 1B), as the notebook rounds them
    for size, baseline, t in (
        ("590M", "highway", "3.277"),
        ("590M", "standard", "3.669"),
        ("1B", "highway", "2.309"),
        ("1B", "standard", "2.363"),
    ):
        assert re.search(rf"{size}\s+{baseline}\s+0\.\d+\s+{re.escape(t)}", table), (size, baseline, table)
    assert any("Figure" in s for s in shown)  # the emergence figure
    assert any("no (size, variant) cell holds both published and new rows" in s for s in shown)  # pool check
    assert any(re.search(r"tiny\s+highway\s+-?0\.\d+", s) for s in shown)  # the tiny runs' own table
    assert re.search(r"tiny\s+standard\s+-?0\.\d+", shown[-1])  # the plugin rule against Standard
