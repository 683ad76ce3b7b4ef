"""An analysis view as one object: its name on the command line, the library function that computes its frame
from a sweep and the options it reads, and what every format shows of that frame (its `View`: title, columns,
legend, notes). `rr analyze NAME` looks the view up in `rr_analysis.views.registry` and asks it for its output.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from rr_analysis.cells import cell_size, of_sizes, sizes_left_out
from rr_analysis.comparison import Comparison, one_rate
from rr_analysis.stats.pooling import cell_provenance, provenance_notes
from rr_analysis.tables.columns import View
from rr_analysis.tables.render import render
from rr_core.errors import InputError

__all__ = ["AnalysisView"]


@dataclass(frozen=True, kw_only=True)
class AnalysisView(View):
    """A `View` that knows how its frame is computed: what `rr analyze NAME` shows, in one place.

    The options a view reads are the keyword-only parameters of its `compute` (and of its `show`), by the names
    `rr analyze` gives them: ``comparison`` (the `rr_analysis.comparison.Comparison` every analysis function
    takes), ``adjust``, ``margin``, ``effect``, ``at``,
    ``target_power``, ``steps``, ``tokens_per_param``, ``ladder``, ``claims_file``, ``noise``, ``against``,
    ``data`` and ``card_file``, each None when not given (``at``: empty).

    Example
    -------
    >>> from rr_analysis.views.registry import VIEWS
    >>> VIEWS["forecast"].reads
    ('at', 'ladder', 'tokens_per_param', 'comparison')
    """

    compute: Callable[..., pd.DataFrame]  # compute(df, *, OPTION, ...): the view's frame from a loaded sweep
    summary: str = ""  # what `rr analyze --help` says of it after its name ("" says nothing more)
    paper_only: bool = False  # about the paper's own comparison: any other is refused
    reruns: bool = False  # its file holds re-runs, whose rows differ from the published ones on purpose
    rates: bool = False  # it reads a tuning file, whose runs repeat a (size, variant, seed) at several lr
    switches: Mapping[str, AnalysisView] = field(
        default_factory=dict
    )  # option given -> the view shown instead
    show: Callable[..., str] | None = (
        None  # show(frame, *, OPTION, ...): what it prints instead of a rendering
    )

    @property
    def reads(self) -> tuple[str, ...]:
        """The options `compute` reads, in the order of its parameters."""
        return _keywords(self.compute)

    def chosen(self, options: Mapping[str, Any]) -> AnalysisView:
        """The view these options show: another one where an option of `switches` is given (``power
        --effect``: the seed plan). InputError when the view is about the paper's comparison and the options
        choose another (its sizes aside: the paper's comparison on some of its sizes is still the paper's)."""
        view = next((v for name, v in self.switches.items() if options.get(name) is not None), self)
        if view.paper_only and not replace(options.get("comparison", Comparison()), sizes=None).published:
            raise InputError(
                f"the {view.name} view is about the paper's own comparison (review_neutral against highway and "
                "standard, val_loss); --reference, --baselines, --metric and --higher-is-better do not apply "
                "to it: use the table, emergence or equivalence view for another comparison"
            )
        return view

    def frame(self, df: pd.DataFrame, options: Mapping[str, Any]) -> pd.DataFrame:
        """The view's frame of the sweep `df`: `compute` called with the options it reads, on the rows of the
        comparison's sizes (`of_sizes`: for the views that take no comparison too). A view that pairs runs by
        seed refuses a file holding one seed at several learning rates (`rates`: the tuning view's)."""
        df = of_sizes(df, options.get("comparison", Comparison()))
        if not self.rates:
            one_rate(df, f"the {self.name} view")
        return self.compute(df, **_picked(self, self.compute, options))

    def output(
        self,
        df: pd.DataFrame,
        options: Mapping[str, Any],
        fmt: str,
        width: int | None = None,
        columns: list[str] | None = None,
    ) -> str:
        """What `rr analyze` prints for the sweep `df`: the frame rendered in `fmt`
        (`rr_analysis.tables.render.render`, with its `width` and `columns`), or what `show` makes of it.

        Where the comparison leaves sizes out (`sizes_left_out`), or the cells read hold runs that differ from
        the published ones (`cell_provenance`: corpus, recipe, schedule, precision, hardware), every format says
        so: a note (per size and difference, for the cells) in text, Markdown and LaTeX (after `show`'s text
        too), and in csv and json a column ``provenance`` listing the cells' notes of each row's size (of every
        size read, for a frame without one). The published file has neither, and its outputs are as they were."""
        frame = self.frame(df, options)
        c = options.get("comparison", Comparison())
        cells = cell_provenance(df, comparison=c)
        provenance = provenance_notes(cells)
        notes = [n for n in [sizes_left_out(df, c)] if n] + provenance
        if self.show is not None:
            shown = self.show(frame, **_picked(self, self.show, options))
            return shown + "".join(f"note: {n}\n" for n in notes)
        view: AnalysisView = self
        if fmt in ("csv", "json"):  # the rows' sizes say what was read; the provenance is a column
            if provenance:
                frame = frame.assign(provenance=_by_row(frame, cells, provenance))
                view = replace(self, machine=(*self.machine, "provenance")) if self.machine else self
        elif notes:
            view = replace(self, notes=lambda t: [*self.notes(t), *notes])
        return render(frame, view, fmt, width, columns)


def _by_row(frame: pd.DataFrame, cells: pd.DataFrame, notes: list[str]) -> list[list[str]]:
    """The provenance notes each row of `frame` answers to: those of its size, or all where it has none."""
    if "size" not in frame:
        return [notes] * len(frame)
    return [provenance_notes(cells[cells["size"] == cell_size(str(size))]) for size in frame["size"]]


def _keywords(function: Callable) -> tuple[str, ...]:
    parameters = inspect.signature(function).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _picked(view: AnalysisView, function: Callable, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options `function` reads, from `options`; a TypeError (a bug of the view) naming one not given."""
    wanted = _keywords(function)
    unknown = [name for name in wanted if name not in options]
    if unknown:
        raise TypeError(
            f"the {view.name} view reads the option(s) {', '.join(unknown)}, which are not among those given: "
            + ", ".join(options)
        )
    return {name: options[name] for name in wanted}
