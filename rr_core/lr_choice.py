"""How a tuning sweep picks each variant's learning rate: one rule, read both by `rr tune`
(`rr_model.sweep.tuning_runs`, which trains the comparison seeds at the rate it picks) and by `rr analyze tuning`
(`rr_analysis.stats.tuning`, which reports the pick), so the two can never pick differently.

The rule: on the selection seeds only, the rate with the lowest mean metric (lower is better) among the rates
every selection seed finished; a rate some seed lacks (a run that diverged, crashed or has not run yet) is not
eligible, since a mean over the seeds that survived would favour an unstable rate. A best rate at either end
of a grid of two or more rates is flagged: the optimum may lie past it, so the grid should be extended before
the comparison is trusted. Ties go to the smaller rate (the more conservative step). Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

__all__ = ["ROLES", "RateChoice", "choose_rate"]

ROLES: tuple[str, ...] = ("selection", "comparison")  # a tuning run picks a rate, or is compared at one


@dataclass(frozen=True)
class RateChoice:
    """A variant's chosen learning rate on its selection seeds.

    `lr` the rate chosen; `grid` every rate tried, ascending; `means` the mean metric of each eligible rate;
    `incomplete` the rates some selection seed lacks (not eligible); `edge` "lowest" or "highest" when `lr`
    is that end of the grid (None inside it, or for a grid of one rate).
    """

    lr: float
    grid: tuple[float, ...]
    means: Mapping[float, float]
    incomplete: tuple[float, ...]
    edge: str | None

    @property
    def advice(self) -> str:
        """What to do about an edge choice, in one sentence ("" when there is none)."""
        if self.edge is None:
            return ""
        beyond, past = ("below", self.lr / 2) if self.edge == "lowest" else ("above", self.lr * 2)
        return (
            f"the best rate {self.lr:g} is the grid's {self.edge}: the optimum may lie {beyond} it; extend the "
            f"grid (e.g. add {past:g} to --lr) before trusting the comparison"
        )


def choose_rate(losses: Mapping[float, Sequence[float]], seeds: int | None = None) -> RateChoice | None:
    """The rate a variant's selection runs pick (see the module); None when no rate is eligible.

    Parameters
    ----------
    losses
        {lr: the metric of each selection run at that rate}.
    seeds
        The number of selection seeds; default the most runs any rate has. A rate with fewer is incomplete.

    Example
    -------
    >>> c = choose_rate({1e-4: [3.2, 3.3], 2e-4: [3.0, 3.1], 4e-4: [3.05, 3.1], 8e-4: [2.9]})
    >>> c.lr, c.edge, c.incomplete
    (0.0002, None, (0.0008,))
    >>> choose_rate({1e-4: [3.2, 3.3], 2e-4: [3.0, 3.1]}).edge
    'highest'
    """
    grid = tuple(sorted(losses))
    need = max((len(v) for v in losses.values()), default=0) if seeds is None else seeds
    means = {lr: fmean(losses[lr]) for lr in grid if need and len(losses[lr]) >= need}
    if not means:
        return None
    best = min(means, key=lambda lr: (means[lr], lr))
    edge = None if len(grid) < 2 else "lowest" if best == grid[0] else "highest" if best == grid[-1] else None
    incomplete = tuple(lr for lr in grid if lr not in means)
    return RateChoice(best, grid, means, incomplete, edge)
