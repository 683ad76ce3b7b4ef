"""The whole analysis of a sweep in one Markdown file, its figures as PNG files beside it.

Format: `report.md` plus one PNG per figure in the same folder, linked by relative paths, so the folder
reads on GitHub, in any Markdown viewer, and converts with pandoc (``pandoc report.md -o report.html
--embed-resources --standalone`` gives a single HTML file). Keep the folder together. Given a `.md` path
instead of a folder, the report is that file and its figures a folder beside it (`x.md`, its figures in
`x_files/BUILD/`, BUILD named after the report's text, so that renaming `x.md` into place publishes the new
report and its figures in one step). Tables are the
statistics library's own Markdown renderings (the views of `rr_analysis.views`); nothing here computes a
statistic.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.cells import of_sizes, sizes_left_out
from rr_analysis.comparison import PRIMARY_TEST, Comparison, asked
from rr_analysis.figures.estimates import test_name
from rr_analysis.figures.gaps import emergence_plot
from rr_analysis.figures.output import save_figure, write_atomic
from rr_analysis.figures.raw import calibration_figure, scaling_figure, seeds_figure
from rr_analysis.stats.emergence import emergence
from rr_analysis.stats.gap_tests import gap_table
from rr_analysis.stats.notes import recipe_notes
from rr_analysis.stats.pooling import cell_provenance, provenance_notes
from rr_analysis.stats.power import power_table
from rr_analysis.stats.summary import describe
from rr_analysis.tables.render import render
from rr_analysis.views.registry import VIEWS
from rr_core.errors import PlotError
from rr_core.files.locks import pid_alive
from rr_core.files.reading import read_regular
from rr_core.files.replacing import atomic_dir
from rr_core.sweepfile.integrity import check_integrity
from rr_core.variants import label

__all__ = ["REPORT_NAME", "Report", "build_report", "write_report"]

REPORT_NAME = "report.md"

# (file, heading, caption, `emergence_plot`'s options): the emergence figures in reading order, each drawn as
# `rr plot emergence` draws it with those options, so a file name is one figure in the report and out of it.
_EMERGENCE = (
    (
        "emergence.png",
        f"Primary: {test_name(PRIMARY_TEST)}, with the size-level line",
        "The primary analysis, as `rr plot emergence` draws it: the seed-matched paired t-test's gaps, 95% CIs, "
        "stars Holm-adjusted; the line is the primary size-level model's fit with its 95% CI band.",
        {},
    ),
    (
        "emergence_welch.png",
        f"The paper's Figure 2: {test_name('welch')}",
        "The paper's Figure 2 (`rr plot emergence --stat welch --adjust none --no-fit`): Welch "
        "t-test, stars unadjusted; its bars are 95% CIs where the paper drew ±1 SE, as every interval rr draws.",
        {"stat": "welch", "adjust": "none", "fit": False},
    ),
    (
        "emergence_mixed.png",
        test_name("mixed"),
        "The same gaps as seen by the per-size mixed model (`rr plot emergence --stat mixed --no-fit`), 95% CIs, "
        "stars Holm-adjusted.",
        {"stat": "mixed", "fit": False},
    ),
)
_RAW = (
    (
        "scaling.png",
        "Scaling",
        "Validation loss against parameters: every run a point, the seed mean a line.",
    ),
    (
        "seeds.png",
        "Seeds",
        "Per size: every run, each variant's mean with its 95% t interval, and a line per seed (the pairing).",
    ),
    ("calibration.png", "Calibration", "Expected calibration error by size and variant, where measured."),
)


_DRAWN = {"scaling.png": scaling_figure, "seeds.png": seeds_figure, "calibration.png": calibration_figure}
_FORMER = (
    "emergence_paired.png",
)  # written by earlier versions: a folder holding it is still rr's to replace
_FILES = (  # all rr writes into a report folder
    REPORT_NAME,
    *(name for name, *_ in _EMERGENCE),
    *(name for name, _, _ in _RAW),
    *_FORMER,
)
_MARK = "Written by `rr report`"  # a Markdown file holding this is a report rr wrote, which it may replace
# A report file's figures live in NAME_files/BUILD/: BUILD is the first 16 hex digits of the SHA-256 of the report's
# text, written before its own name is filled in (`_BUILD` stands for it), so a new text is a new folder.
_BUILD = "\0build\0"
_BUILD_NAME = re.compile(r"[0-9a-f]{16}")
_LEFTOVER = re.compile(
    r"\.([0-9a-f]{16})\.(\d+)\.rr-tmp"
)  # a build folder a killed writer left (`temp_name`)


@dataclass
class Report:
    """A report held in memory: the Markdown text and the figures it links, by file name."""

    markdown: str
    figures: dict[str, Figure] = field(default_factory=dict)
    omitted: dict[str, str] = field(default_factory=dict)  # file name -> why the figure is not drawn


def _figure(report: Report, name: str, caption: str, draw, folder: str) -> list[str]:
    """Draw one figure into `report`; the Markdown that shows it (from `folder`, "" beside the report), or says
    why it could not be drawn."""
    try:
        report.figures[name] = draw()
    except PlotError as e:
        report.omitted[name] = str(e)
        return [f"*Not drawn: {e}.*", ""]
    return [f"![{caption}]({folder}{'/' if folder else ''}{name})", "", f"*{caption}*", ""]


def _code(text: str) -> str:
    """`text` as a Markdown code span that nothing in it can close: fenced by one backtick more than its
    longest run of backticks (CommonMark 6.1), line breaks shown as \\n so the span stays on one line."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def build_report(
    df: pd.DataFrame,
    source: str = "the published sweep",
    figure_dir: str = "",
    *,
    comparison: Comparison | None = None,
) -> Report:
    """Compute every table and figure of the analysis of `df` and assemble the report in memory.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`).
    source
        How the report names the data (a path).
    figure_dir
        The folder, relative to the report, its figures are linked from ("": beside it).
    comparison
        The comparison every table and figure shows (`rr_analysis.comparison.Comparison`; the calibration
        figure reads the variants only, its metric is ECE). Default: the paper's.

    Returns
    -------
    Report: ``markdown`` (links the figures by file name), ``figures`` (file name -> Figure) and
    ``omitted`` (file name -> reason, for figures the data cannot support, e.g. one size or no ECE).
    Sections: data, the per-size table (Welch, paired, mixed, Holm), the emergence figures (the primary one
    as `rr plot emergence` draws it, the paper's Welch figure, the mixed model's; `emergence_plot`) and
    model, the recipe notes, the power table, the raw-data figures. Only the comparison's sizes are read
    (`of_sizes`). Where its cells hold runs that differ from the published ones (`cell_provenance`), the data
    section lists them and every figure carries them as a footnote (`with_provenance`).
    """
    from importlib.metadata import version

    c = asked(comparison)
    left_out, df = sizes_left_out(df, c), of_sizes(df, c)
    table = gap_table(df, comparison=c)
    provenance = provenance_notes(cell_provenance(df, comparison=c))
    report = Report("")
    where = f"in {_code(figure_dir + '/')}" if figure_dir else "beside this file"
    md = [
        "# Review Residuals sweep: analysis report",
        "",
        f"Data: {_code(source)}{f' ({left_out})' if left_out else ''}: {describe(df)}; "
        f"{check_integrity(df).summary()}.",
        "",
        *(f"- {n}" for n in provenance),
        *([""] if provenance else []),
        f"{_MARK} (rr-toolkit {version('rr-toolkit')}). The figures are the PNG files {where}, "
        "linked by relative paths: keep the folder together.",
        "",
        f"## 1. {label(c.reference)} against each baseline, per size",
        "",
        render(table, VIEWS["table"], "markdown"),
        f"## 2. Does {label(c.reference)}'s advantage grow with size?",
        "",
    ]
    for name, heading, caption, how in _EMERGENCE:
        md += [f"### {heading}", ""]
        md += _figure(report, name, caption, partial(emergence_plot, df, **how, comparison=c), figure_dir)
    md += ["### Emergence model", "", render(emergence(df, c), VIEWS["emergence"], "markdown")]
    md += ["## 3. Recipe notes", "", render(recipe_notes(df, c), VIEWS["notes"], "markdown")]
    md += [
        "## 4. Power: how many seeds?",
        "",
        render(power_table(df, comparison=c), VIEWS["power"], "markdown"),
    ]
    md += ["## 5. The raw data", ""]
    for name, heading, caption in _RAW:
        draw = partial(_DRAWN[name], df, comparison=c)
        md += [f"### {heading}", "", *_figure(report, name, caption, draw, figure_dir)]
    report.markdown = "\n".join(md).rstrip() + "\n"
    return report


def write_report(
    df: pd.DataFrame,
    out_dir: str | os.PathLike,
    *,
    source: str = "the published sweep",
    dpi: int = 120,
    comparison: Comparison | None = None,
) -> Path:
    """Write `report.md` and its PNG figures into the folder `out_dir`; return the report's path.

    Everything is computed before anything is written, so bad data leave the folder untouched. The folder
    is built beside `out_dir` and swapped into place (`rr_core.files.replacing.atomic_dir`): a reader sees the old
    report or the new one whole, and a figure the data cannot support does not survive from an earlier run.
    A missing folder is created (and its parents). Only files rr writes there are ever deleted: a folder that
    holds others is refused before the build, and checked again at the swap (a file saved into it while the
    report was built), when it is left as it was (`rr_core.files.replacing.Foreign`).

    An `out_dir` ending in `.md` is the report file itself, its figures in a folder of the folder beside it
    named after it (`x.md` -> `x_files/BUILD/`), and it is published in one step: the figures go to a new
    BUILD folder, named after the report's text, which the old `x.md` does not link; then the Markdown
    replaces `x.md` whole in one rename, which publishes the new report with its figures; only then are the
    figures of earlier reports removed. A kill at any point leaves `x.md`, old or new, beside the figures it
    links, and the rerun succeeds and removes what the killed run left (an existing `x.md` must be an
    earlier rr report). Raises PlotError (a ValueError) when `out_dir` is a file
    (a folder for `.md`), holds files rr does not write there, or cannot be written. `comparison`
    chooses the comparison, as in `build_report`.
    """
    c = asked(comparison)
    out = Path(out_dir)
    if out.suffix.lower() == ".md":
        return _write_report_file(df, out, source, dpi, c)
    if out.exists() and not out.is_dir():
        raise PlotError(
            f"cannot write the report into {out}: it is a file, not a folder (a path ending in .md is written "
            "as the report itself)"
        )
    _check_folder(out)
    report = build_report(df, source, comparison=c)
    _write_figures(report, out, dpi, extra={REPORT_NAME: report.markdown})
    return out / REPORT_NAME


def _check_folder(out: Path, builds: bool = False) -> None:
    """PlotError when `out` holds files rr does not write there (with `builds`, a report file's figures
    folder: BUILD folders, and what a killed build left, are rr's too)."""
    if not out.is_dir():
        return
    names = {p.name for p in out.iterdir()} - set(_FILES)
    if builds:
        names = {n for n in names if not (_BUILD_NAME.fullmatch(n) or _LEFTOVER.fullmatch(n))}
    if foreign := sorted(names):
        raise PlotError(
            f"cannot write the report into {out}: it holds files rr does not write there "
            f"({', '.join(foreign[:5])}), and the whole folder would be replaced; choose a new folder"
        )


def _write_figures(report: Report, out: Path, dpi: int, extra: dict[str, str]) -> None:
    """Swap a folder holding `report`'s figures (and the `extra` text files) in at `out`."""

    def build(folder: Path) -> None:
        for name, fig in report.figures.items():
            save_figure(fig, folder / name, dpi=dpi)
        for name, text in extra.items():
            write_atomic(folder / name, lambda f, text=text: f.write(text.encode("utf-8")))

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_dir(out, build, owned=_FILES)
    except OSError as e:
        raise PlotError(f"cannot write the report into {out}: {e.strerror or e}") from None


def _write_report_file(df: pd.DataFrame, md: Path, source: str, dpi: int, comparison: Comparison) -> Path:
    """The report as the file `md`, its figures in `md`'s `_files` folder beside it (`comparison`:
    `build_report`'s)."""
    folder = md.with_name(f"{md.stem}_files")
    if md.is_dir():
        raise PlotError(f"cannot write the report to {md}: it is a folder; give a new .md file name")
    if md.exists() and _MARK.encode() not in read_regular(md):
        raise PlotError(f"cannot write the report to {md}: it exists and is not a report rr wrote")
    _check_folder(folder, builds=True)
    report = build_report(df, source, figure_dir=f"{folder.name}/{_BUILD}", comparison=comparison)
    build = hashlib.sha256(report.markdown.encode("utf-8")).hexdigest()[:16]
    text = report.markdown.replace(_BUILD, build).encode("utf-8")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PlotError(f"cannot write the report into {folder}: {e.strerror or e}") from None
    # The same text is the same BUILD: its figures are swapped in whole under an x.md that reads alike.
    _write_figures(report, folder / build, dpi, extra={})
    write_atomic(md, lambda f: f.write(text))  # the one step that publishes the new report
    _prune(folder, keep=build)
    return md


def _prune(folder: Path, keep: str) -> None:
    """Remove from a report file's figures folder what no report links any more: earlier BUILD folders, the
    figures an earlier version wrote into the folder itself, and build folders of killed writers (their pid no
    longer runs). Only rr's own names are deleted; a folder holding anything else stays."""
    for p in folder.iterdir():
        leftover = _LEFTOVER.fullmatch(p.name)
        if p.name == keep or (leftover and pid_alive(int(leftover[2]))):
            continue
        with contextlib.suppress(OSError):
            if p.is_dir() and (_BUILD_NAME.fullmatch(p.name) or leftover):
                if all(q.name in _FILES or q.name.endswith(".rr-tmp") for q in p.iterdir()):
                    shutil.rmtree(p)
            elif p.name in _FILES:
                p.unlink()
