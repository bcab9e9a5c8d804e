"""relviz.sweep: fit, sample and summarise over a grid of ε."""

from __future__ import annotations

from relviz.database import Database
from relviz.plan import Plan
from relviz.sweep import epsilon_sweep


def test_epsilon_sweep(tiny_pair: tuple[Database, Database]) -> None:
    real, _ = tiny_pair
    plan = Plan.default(real.schema, 1.0, 1e-6, mechanism="independent")
    steps: list[float] = []
    sweep = epsilon_sweep(real, [4.0, 0.5], plan=plan, progress=lambda f, m: steps.append(f))
    assert sweep.epsilons == (0.5, 4.0)
    assert steps[-1] == 1.0 and steps == sorted(steps)
    frame = sweep.frame()
    assert set(frame["Metric"]) == {"Degree similarity", "3-way error", "Mean 2-way TVD"}
    assert set(frame["Epsilon"]) == {0.5, 4.0}
    t = sweep.timings()
    assert list(t["Epsilon"]) == [0.5, 4.0] and (t["total"] > 0).all()
    assert sweep.rho[4.0] > sweep.rho[0.5]
