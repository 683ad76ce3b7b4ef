"""Write rr's golden outputs: every analysis view in every format, every figure and the report, on the
published sweep and on a sweep with a plugin variant. tests/test_golden.py writes them afresh and compares.

    python tests/golden/update.py              # rewrite tests/golden/outputs/: an output changed on purpose
    python tests/golden/update.py --into DIR   # write them into DIR instead
    python tests/golden/update.py --into DIR --part plugin   # one part only (pub, plugin or curves)

Run it from the repository root when a change of output is meant (a column added, a legend reworded, a
figure restyled), look at `git diff tests/golden/outputs` and name the changed outputs in the commit message.
Nothing else writes these files.

What is written, under the folder:

- ``analyze/SWEEP/CASE.EXT``: a view of `rr_analysis.views.registry.VIEWS`, its frame computed once, rendered
  as `rr analyze` prints it: ``.txt`` text at 100 columns, ``.wide.txt`` text with every column (--wide), ``.md``,
  ``.tex``, ``.csv``, ``.json``; cases with options beside the views' defaults (``forecast``: --at 3B --at 7B;
  ``confirm-design``: --at 3B --tokens-per-param 20).
- ``report/SWEEP.md``: `rr_analysis.report.build_report`'s Markdown.
- ``figures/PART/NAME.json``: what each figure draws (`fingerprint`: its size and layout; per axes the limits,
  scales, labels and the ticks rr places; every line's data, collection, patch, text and legend entry, with
  the colours drawn). PART is a sweep, or ``curves``: `rr plot curves` of three made-up runs. Not the PNG's
  bytes: they change with float noise in the 16th digit of a line's end (one pixel's shade), with the
  versions of matplotlib, numpy and scipy, and with the CPU, where what is drawn does not.

SWEEP is ``pub`` (the published file) or ``plugin``: the published rows plus a variant ``myrule`` registered by
docs/extending/myrule.py (RR_PLUGINS), one row beside each standard row, its loss shifted by 0.0021 plus
0.0013 per seed and its parameters 3% fewer. Two cases read files of their own: reproduction a re-run of the
first six published rows (loss + 0.0004), pool-check-merged the published rows and a seed 9 of each 60M
variant (loss + 0.001).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = Path(__file__).resolve().with_name("outputs")
PLUGIN = ROOT / "docs" / "extending" / "myrule.py"
WIDTH = 100  # the terminal width the text outputs are drawn for
PARTS = ("pub", "plugin", "curves")
EXTENSIONS = {
    "text": ".txt",
    "wide": ".wide.txt",
    "markdown": ".md",
    "latex": ".tex",
    "csv": ".csv",
    "json": ".json",
}
AT = ["3B", "7B"]

# case -> (view, the options given beside the defaults), on both sweeps unless ONLY names one
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "table": ("table", {}),
    "emergence": ("emergence", {}),
    "power": ("power", {}),
    "power-effect": ("power", {"effect": 0.003}),
    "notes": ("notes", {}),
    "equivalence": ("equivalence", {}),
    "claims": ("claims", {}),
    "pool-check": ("pool-check", {}),
    "forecast": ("forecast", {"at": AT}),
    "confirm": ("confirm", {"at": AT}),
    "confirm-design": ("confirm", {"at": ["3B"], "tokens_per_param": 20.0}),
    "fits": ("fits", {}),
    "table-ece": ("table", {"comparison": {"metric": "ece"}}),
    "table-fdr": ("table", {"adjust": "fdr_bh"}),
    "reproduction": ("reproduction", {"data": "repro.csv"}),
    "pool-check-merged": ("pool-check", {"data": "merged.csv"}),
    "table-myrule": ("table", {"comparison": {"reference": "myrule", "baselines": ["standard", "highway"]}}),
    "emergence-myrule": ("emergence", {"comparison": {"reference": "myrule"}}),
    "tuning": ("tuning", {"data": "tune.csv"}),
}
ONLY = {
    "claims": "pub",
    "pool-check-merged": "pub",
    "table-ece": "pub",
    "table-fdr": "pub",
    "confirm-design": "pub",
    "reproduction": "pub",
    "table-myrule": "plugin",
    "emergence-myrule": "plugin",
    "tuning": "pub",
}


def options(**given: Any) -> dict[str, Any]:
    """The options `rr analyze` gives a view when none is on its command line, with `given` instead."""
    from rr_analysis.comparison import POWER, Comparison

    base = dict(
        adjust="holm",
        margin=None,
        effect=None,
        at=[],
        target_power=POWER,
        steps=None,
        ladder=None,
        tokens_per_param=None,
        claims_file=None,
        noise=None,
        against=None,
        data=None,
        card_file=None,
    )
    comparison = Comparison(**given.pop("comparison", {}))  # the fields given, the paper's for the rest
    return {**base, **given, "comparison": comparison}


def sweeps(folder: Path) -> dict[str, Path]:
    """The sweep files: the published one, the plugin sweep and a reproduction of six published rows, written
    into `folder`."""
    from rr_core.sweepfile.dataset import bundled_path

    with open(bundled_path(), newline="") as f:
        rows = list(csv.DictReader(f))
    mine = [
        {
            **r,
            "variant": "myrule",
            "val_loss": f"{float(r['val_loss']) + 0.0013 * (int(r['seed']) - 1) + 0.0021:.4f}",
            "params_M": f"{float(r['params_M']) * 0.97:.2f}",
        }
        for r in rows
        if r["variant"] == "standard"
    ]
    rerun = [{**r, "val_loss": f"{float(r['val_loss']) + 0.0004:.4f}"} for r in rows[:6]]
    seed_9 = [
        {**r, "seed": "9", "val_loss": f"{float(r['val_loss']) + 0.001:.4f}"}
        for r in rows
        if (r["size"], r["seed"]) == ("60M", "0")
    ]
    paths = {name: folder / name for name in ("plugin.csv", "repro.csv", "merged.csv", "tune.csv")}
    paths |= {"pub": bundled_path(), "plugin": paths.pop("plugin.csv")}
    for name, out in (
        ("plugin", rows + mine),
        ("repro.csv", rerun),
        ("merged.csv", rows + seed_9),
        ("tune.csv", tuning_rows(rows)),
    ):
        with open(paths[name], "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(out[0]))
            writer.writeheader()
            writer.writerows(out)
    return paths


def tuning_rows(published: list[dict[str, str]]) -> list[dict[str, str]]:
    """A made-up tuning of 60M (`rr tune --lr 1e-4,2e-4,4e-4,8e-4 --select-seeds 0,1 --seeds 2,3,4`, and the
    comparison seeds at the shared 2e-4 too): each variant's loss a parabola in log2(lr) around its own best
    rate (review_neutral 4e-4, highway 2e-4, standard 8e-4: an edge), plus a seed pattern, so the ranking at
    the shared rate and at the tuned rates differ."""
    import math

    best = {"review_neutral": (4e-4, 1.698), "highway": (2e-4, 1.700), "standard": (8e-4, 1.703)}
    params = {r["variant"]: r["params_M"] for r in published if r["size"] == "60M"}
    out = []

    def row(v: str, seed: int, lr: float, role: str) -> dict[str, str]:
        at, floor = best[v]
        loss = floor + 0.004 * math.log2(lr / at) ** 2 + 0.0013 * ((seed * 7 + len(v)) % 5)
        return {
            "size": "60M",
            "variant": v,
            "seed": str(seed),
            "params_M": params[v],
            "steps": "8000",
            "val_loss": f"{loss:.4f}",
            "ece": "",
            "minutes": "",
            "lr": repr(lr),
            "role": role,
        }

    for v in best:
        out += [row(v, s, lr, "selection") for lr in (1e-4, 2e-4, 4e-4, 8e-4) for s in (0, 1)]
        out += [row(v, s, lr, "comparison") for lr in sorted({best[v][0], 2e-4}) for s in (2, 3, 4)]
    return out


def analyses(sweep: str, paths: dict[str, Path]) -> Iterator[tuple[str, str]]:
    """(file, text) of every case of `sweep`: each view's frame computed once and rendered in every format."""
    from rr_analysis.tables.render import render
    from rr_analysis.views.card_view import card_block
    from rr_core.sweepfile.dataset import load_sweep

    df = load_sweep(paths[sweep])
    for case, (name, given) in CASES.items():
        if ONLY.get(case, sweep) != sweep:
            continue
        from rr_analysis.views.registry import VIEWS

        data = load_sweep(paths[given["data"]]) if "data" in given else df
        opts = options(**{k: v for k, v in given.items() if k != "data"})
        view = VIEWS[name].chosen(opts)
        frame = view.frame(data, opts)
        for fmt, ext in EXTENSIONS.items():
            width = WIDTH if fmt == "text" else None
            yield f"analyze/{sweep}/{case}{ext}", render(frame, view, "text" if fmt == "wide" else fmt, width)
        if case == "table":  # the same frame as the card and with columns chosen (--columns)
            yield f"analyze/{sweep}/card.md", card_block(frame) + "\n"
            for fmt in ("text", "csv"):
                text = render(frame, view, fmt, WIDTH, ["size", "baseline", "gap", "hedges_g"])
                yield f"analyze/{sweep}/table-columns{EXTENSIONS[fmt]}", text


def figures(sweep: str, paths: dict[str, Path]) -> Iterator[tuple[str, Any]]:
    """(name, Figure) of every figure of `sweep` as `rr plot` and `rr report` draw it, and the report's
    Markdown as ("report", text)."""
    from rr_analysis.figures.forecast_gaps import forecast_figure
    from rr_analysis.figures.gaps import emergence_figure
    from rr_analysis.report import build_report
    from rr_analysis.stats.forecast import forecast, meta_line
    from rr_analysis.stats.gap_tests import gap_table
    from rr_core.sweepfile.dataset import load_sweep

    df = load_sweep(paths[sweep])
    report = build_report(df, source=paths[sweep].name)
    yield "report", report.markdown
    for name, fig in report.figures.items():
        yield f"report_{name.removesuffix('.png')}", fig
    table = gap_table(df)
    yield "emergence", emergence_figure(table, line=meta_line(df))
    yield "emergence_welch", emergence_figure(gap_table(df, "none"), stat="welch")
    yield "forecast", forecast_figure(table, meta_line(df, ["3B"]), forecast(df, ["3B"]))
    if sweep == "pub":
        from rr_analysis.figures.tuning_curves import tuning_figure
        from rr_analysis.stats.tuning import tuning_table

        yield "tuning", tuning_figure(tuning_table(load_sweep(paths["tune.csv"])))


def curves() -> Any:
    """The training-curves figure of two made-up runs of 40 logged steps (loss falling, the published lr
    schedule's shape), smoothed as `rr plot curves` smooths by default (by step distance)."""
    import numpy as np
    import pandas as pd

    from rr_analysis.figures.curves import curves_figure
    from rr_analysis.stats.smoothing import smooth_curves

    steps = np.arange(1, 41) * 25
    runs = [
        pd.DataFrame(
            {
                "size": "tiny",
                "variant": variant,
                "seed": seed,
                "step": steps,
                "loss": 10.8 * np.exp(-steps / (300 + 40 * k)) + 2.1 + 0.05 * np.sin(steps / (50 + k)),
                "lr": 6e-4 * np.minimum(1, steps / 100) * (0.55 + 0.45 * np.cos(np.pi * steps / 1000)),
                "source": f"{variant}_{seed}.jsonl",
            }
        )
        for k, (variant, seed) in enumerate([("review_neutral", 0), ("standard", 0), ("standard", 1)])
    ]
    return curves_figure(smooth_curves(pd.concat(runs, ignore_index=True)))


def fingerprint(fig: Any) -> list[dict[str, Any]]:
    """What `fig` draws: its size and layout, then for each axes its limits, scales, labels and the ticks rr
    places (a fixed locator's; matplotlib's own ticks follow the limits), and for the figure and each axes
    every line's data, style and the colours drawn, every collection's offsets, paths and colours, every
    patch's outline and colours, every text with its place, size and colour, each legend's entries. Spines,
    backgrounds and positions are matplotlib's layout, which moves by a pixel between its versions."""
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.spines import Spine

    def kept(owner: Any, a: Any) -> bool:
        return a.get_visible() and not isinstance(a, Axes | Axis | Spine) and a is not owner.patch

    engine = fig.get_layout_engine()
    shape = {"size": _num(fig.get_size_inches()), "layout": engine and type(engine).__name__}
    return [
        {
            "owner": _axes(owner) if isinstance(owner, Axes) else shape,
            "artists": [_artist(a) for a in owner.get_children() if kept(owner, a)],
        }
        for owner in (fig, *fig.axes)
    ]


def _axes(ax: Any) -> dict[str, Any]:
    from matplotlib.ticker import FixedLocator

    placed = {}
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        if isinstance(axis.get_major_locator(), FixedLocator):
            labels = [t.get_text() for t in axis.get_majorticklabels()]
            placed[f"{name}ticks"] = [
                list(t) for t in zip(_num(axis.get_majorticklocs()), labels, strict=True)
            ]
    return {
        "xlim": _num(ax.get_xlim()),
        "ylim": _num(ax.get_ylim()),
        "xscale": ax.get_xscale(),
        "yscale": ax.get_yscale(),
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
    } | placed


def _colour(c: Any, alpha: float | None = None) -> str:
    from matplotlib.colors import to_hex, to_rgba

    return to_hex(to_rgba(c, alpha), keep_alpha=True)


def _colours(values: Any) -> list[str]:
    """One colour or an array of them (a collection's), each as #rrggbbaa."""
    from matplotlib.colors import to_rgba_array

    return [_colour(c) for c in to_rgba_array(values)]


# An artist's kind, as the most specific of these classes it is: matplotlib 3.10 made fill_between's
# PolyCollection a FillBetweenPolyCollection and 3.9 axvspan's Polygon a Rectangle, drawing the same.
KINDS = (
    "Legend",
    "Line2D",
    "Text",
    "PathCollection",
    "PolyCollection",
    "LineCollection",
    "Collection",
    "Patch",
)


NONE = ("None", "none", "", " ")  # a line style or marker that draws nothing


def _kind(a: Any) -> str:
    return next((c.__name__ for c in type(a).__mro__ if c.__name__ in KINDS), type(a).__name__)


def _artist(a: Any) -> dict[str, Any] | None:
    """One artist's data, texts and colours; a legend's entries (their labels, colours and styles)."""
    from matplotlib.collections import Collection
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    out: dict[str, Any] = {"type": _kind(a), "gid": a.get_gid(), "label": str(a.get_label())}
    if isinstance(a, Legend):
        handles = getattr(a, "legend_handles", None) or a.legendHandles
        return out | {
            "title": a.get_title().get_text(),
            "texts": [t.get_text() for t in a.get_texts()],
            "handles": [_style(h) for h in handles],
        }
    if isinstance(a, Line2D):
        return out | {"xy": _num(a.get_xydata())} | _style(a)
    if isinstance(a, Text):
        return out | {
            "text": a.get_text(),
            "xy": _num(a.get_position()),
            "size": _num(a.get_fontsize()),
            "colour": _colour(a.get_color(), a.get_alpha()),
        }
    if isinstance(a, Collection):
        return out | {
            "offsets": _num(a.get_offsets()),
            "paths": [_num(p.vertices) for p in a.get_paths()],
            "face": _colours(a.get_facecolor()),
            "edge": _colours(a.get_edgecolor()),
            "sizes": _num(getattr(a, "get_sizes", list)()),
            "widths": _num(a.get_linewidths()),
        }
    if isinstance(a, Patch):  # its corners, in any order: a Rectangle and a closed Polygon draw one shape
        corners = sorted({tuple(v) for v in _num(a.get_patch_transform().transform(a.get_path().vertices))})
        return out | {
            "outline": [list(v) for v in corners],
            "face": _colour(a.get_facecolor()),
            "edge": _colour(a.get_edgecolor()),
        }
    return out


def _style(a: Any) -> dict[str, Any]:
    """How a line or a legend handle looks: the line's colour, style and width where a line is drawn, the
    marker's shape, size and colours where one is; a patch's colours."""
    from matplotlib.lines import Line2D
    from matplotlib.markers import MarkerStyle

    if not isinstance(a, Line2D):
        return {"type": _kind(a), "face": _colours(a.get_facecolor()), "edge": _colours(a.get_edgecolor())}
    alpha, line, marker = a.get_alpha(), None, None
    if a.get_linestyle() not in NONE and a.get_linewidth() > 0:
        line = [a.get_linestyle(), _num(a.get_linewidth()), _colour(a.get_color(), alpha)]
    if str(a.get_marker()) not in NONE:
        # a face only where the marker has one: a cap ("_") is all edge (matplotlib 3.11 gives it the colour
        # cycle's face, which nothing draws)
        filled = MarkerStyle(a.get_marker()).is_filled()
        face = _colour(a.get_markerfacecolor(), alpha) if filled else None
        marker = [
            str(a.get_marker()),
            _num(a.get_markersize()),
            face,
            _colour(a.get_markeredgecolor(), alpha),
        ]
    return {"line": line, "marker": marker}


def _num(values: Any) -> Any:
    """Numbers as JSON holds them: arrays as nested lists, NaN as None, 12 significant digits."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    if array.ndim == 0:
        return None if np.isnan(array) else float(f"{array:.12g}")
    return [_num(v) for v in array]


def write(into: Path, parts: tuple[str, ...] = PARTS) -> None:
    """Write the outputs of `parts` into the folder `into` (see the module's docstring)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    if "plugin" in parts:
        from rr_core.plugins import ENV, load_plugins

        os.environ[ENV] = str(PLUGIN)
        load_plugins()
    with tempfile.TemporaryDirectory() as tmp:
        paths = sweeps(Path(tmp))
        for part in parts:
            drawn = figures(part, paths) if part != "curves" else [("curves", curves())]
            for name, text in analyses(part, paths) if part != "curves" else []:
                _put(into / name, text)
            for name, fig in drawn:
                if name == "report":
                    _put(into / "report" / f"{part}.md", fig)
                    continue
                _put(into / "figures" / part / f"{name}.json", _json(fingerprint(fig)))
                pyplot.close(fig)


def _json(value: Any) -> str:
    return json.dumps(value, indent=0, sort_keys=True) + "\n"


def _put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--into", type=Path, default=OUTPUTS, help="the folder to write (default: %(default)s)"
    )
    parser.add_argument(
        "--part", choices=PARTS, action="append", help="only these parts (repeat); default all"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # this checkout's rr, whichever one is installed
    if not args.part:  # the whole set: nothing of an earlier one stays
        for folder in ("analyze", "figures", "report"):
            shutil.rmtree(args.into / folder, ignore_errors=True)
    write(args.into, tuple(args.part or PARTS))


if __name__ == "__main__":
    main()
