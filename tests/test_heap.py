"""`cli.heap`: what rr's console script does with the garbage collector, and that figures are unchanged by it."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

from conftest import rr

from cli.heap import frozen_heap
from rr_analysis import figures as plots
from rr_core.sweepfile.dataset import load_sweep


class Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""


def cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_frozen_heap_leaves_older_garbage_to_after_the_block_and_collects_newer_garbage_inside_it():
    gc.collect()
    older = cycle()  # garbage from before the block: frozen inside it
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        newer = cycle()
        gc.collect()
        assert older() is not None and newer() is None
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert older() is None


def test_frozen_heap_unfreezes_when_the_block_raises():
    try:
        with frozen_heap():
            raise KeyError("drawing failed")
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0


def test_plot_seeds_writes_the_same_bytes_as_the_library_without_a_frozen_heap(tmp_path):
    result = rr("plot", "seeds", "--out", tmp_path / "cli.png")
    assert result.exit_code == 0, result.output
    plots.save_figure(plots.seeds_figure(load_sweep()), tmp_path / "library.png", dpi=150)
    assert (tmp_path / "cli.png").read_bytes() == (tmp_path / "library.png").read_bytes()


def test_the_console_script_leaves_its_objects_out_of_the_shutdown_collection():
    # atexit handlers run after cli.main.main returns: the freeze is in place by then, and the command's
    # output and exit status are those of `rr sizes`
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "sys.argv = ['rr', 'sizes']\n"
        "from cli.main import main\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == rr("sizes").output
    assert out.stderr.strip().splitlines()[-1] == "frozen True"
