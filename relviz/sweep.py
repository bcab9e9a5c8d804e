"""``epsilon_sweep``: fit, sample and summarise a database's synthetic copies over a grid of ε.

What privacy costs, in utility: for each ε of a grid, a :class:`~relviz.synthesizer.RelationalSynthesizer`
is fitted with the template plan at that ε, a synthetic copy is sampled, and
:func:`~relviz.comparison.utility_summary` compares it with the real database (a curator view:
it reads the real data). Like :mod:`relviz.run` (one synthesis in a background thread), this
module runs syntheses; the stakeholder demo notebook draws its result.

>>> sweep = epsilon_sweep(db, [0.5, 1, 4], random_state=0)   # doctest: +SKIP
>>> sweep.frame()                                            # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from relviz.comparison import utility_summary
from relviz.database import Database
from relviz.plan import Plan
from relviz.progress import Progress
from relviz.synthesizer import RelationalSynthesizer

__all__ = ["EpsilonSweep", "epsilon_sweep"]


@dataclass
class EpsilonSweep:
    """Utility of one database's synthetic copies over a grid of ε (curator view).

    Attributes:
        epsilons: The grid, ascending.
        delta: δ of every run.
        summaries: ``{ε: utility_summary(...)}``.
        seconds: ``{ε: {"fit", "sample", "evaluate"}}`` wall times.
        rho: ``{ε: total ρ of the plan}``.
        total_seconds: Wall time of the whole sweep.
    """

    epsilons: tuple[float, ...]
    delta: float
    summaries: dict[float, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[float, dict[str, float]] = field(default_factory=dict)
    rho: dict[float, float] = field(default_factory=dict)
    total_seconds: float = 0.0

    def frame(self) -> pd.DataFrame:
        """Tidy ``Epsilon, Metric, Item, Value`` (metrics ``Degree similarity``, ``3-way error``,
        ``Mean 2-way TVD``; items are FK names or ``all``)."""
        rows = []
        for eps in self.epsilons:
            s = self.summaries[eps]
            rows += [{"Epsilon": eps, "Metric": "Degree similarity", "Item": k, "Value": v}
                     for k, v in s["degree_similarity"].items()]
            rows += [{"Epsilon": eps, "Metric": "3-way error", "Item": k, "Value": v}
                     for k, v in s["cross_table_error"].items()]
            rows.append({"Epsilon": eps, "Metric": "Mean 2-way TVD", "Item": "all", "Value": s["mean_two_way_tvd"]})
        return pd.DataFrame(rows, columns=["Epsilon", "Metric", "Item", "Value"])

    def timings(self) -> pd.DataFrame:
        """``Epsilon, rho, fit, sample, evaluate, total`` in seconds."""
        return pd.DataFrame([{"Epsilon": e, "rho": self.rho[e], **self.seconds[e],
                              "total": sum(self.seconds[e].values())} for e in self.epsilons])


def epsilon_sweep(db: Database, epsilons: Sequence[float], *, delta: float = 1e-6, plan: Plan | None = None,
                  random_state: int | None = 0, k: int = 3, progress: Progress | None = None,
                  allow_inferred: bool = False) -> EpsilonSweep:
    """Fit, sample and summarise utility (:func:`utility_summary`) at every ε of a grid.

    Args:
        db: The real database.
        epsilons: The grid (sorted ascending in the result).
        delta: δ of every run.
        plan: Template plan (its shares and methods are kept, its ε replaced); default
            ``Plan.default(db.schema)``.
        random_state: Seed of every run (a seeded sweep is for study, not for release).
        k: Order of the cross-table marginals.
        progress: ``progress(fraction, message)`` after each step.
        allow_inferred: Passed to :class:`~relviz.synthesizer.RelationalSynthesizer` (domains
            read from the data: the runs are then not differentially private).

    Returns:
        :class:`EpsilonSweep`.
    """
    grid = tuple(sorted(float(e) for e in epsilons))
    base = plan if plan is not None else Plan.default(db.schema, grid[0], delta)
    out = EpsilonSweep(grid, delta)
    t_all = time.perf_counter()
    for i, eps in enumerate(grid):
        p = base.with_budget(epsilon=eps, delta=delta)
        if progress is not None:
            progress(i / len(grid), f"ε = {eps:g}: fitting ({i + 1}/{len(grid)})")
        t0 = time.perf_counter()
        synth = RelationalSynthesizer(p, random_state=random_state, allow_inferred=allow_inferred).fit(db)
        t1 = time.perf_counter()
        fake = synth.sample()
        t2 = time.perf_counter()
        if progress is not None:
            progress((i + 0.8) / len(grid), f"ε = {eps:g}: evaluating ({i + 1}/{len(grid)})")
        out.summaries[eps] = utility_summary(db, fake, k=k)
        t3 = time.perf_counter()
        out.seconds[eps] = {"fit": t1 - t0, "sample": t2 - t1, "evaluate": t3 - t2}
        out.rho[eps] = float(p.rho_total)
    out.total_seconds = time.perf_counter() - t_all
    if progress is not None:
        progress(1.0, f"{len(grid)} runs in {out.total_seconds:.0f} s")
    return out
