"""Post-processing of noisy counts (free: it reads only released values).

Why relviz writes this itself: the Euclidean projection onto a scaled simplex is a few numpy lines
(Held, Wolfe & Crowder 1974; Duchi et al., "Efficient projections onto the l1-ball", ICML 2008,
Fig. 1), shared by the single-table and degree mechanisms. :func:`reconcile_sizes` is relviz's
glue between independently released totals (a bounded least-squares problem handed to SciPy).
:func:`fit_margins` is iterative proportional fitting, a loop of two numpy scalings, shared by
PrivLava's group-size post-processing and PrivPetal's ``size_raking``; :func:`fit_group_margins`
the same with many grouped margins (PrivPetal's ``size_calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["SizeFact", "fit_group_margins", "fit_margins", "project_counts", "project_counts_moment", "project_monotone",
           "reconcile_sizes"]


def project_counts(y: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of noisy counts onto ``{p ≥ 0, Σp = total}`` (sort-based).

    Args:
        y: ``(k,)`` noisy counts.
        total: The sum to keep (≤ 0 gives zeros).

    Returns:
        ``(k,)`` float64.
    """
    y = np.asarray(y, dtype=np.float64)
    if total <= 0:
        return np.zeros_like(y)
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, len(u) + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(y - css[rho] / (rho + 1), 0)


def project_counts_moment(y: np.ndarray, total: float, values: np.ndarray, moment: float,
                          iters: int = 100) -> np.ndarray:
    """Euclidean projection of noisy counts onto ``{p ≥ 0, Σp = total, Σ p·v = moment}``.

    The KKT conditions give ``p = max(y − λ − μ·v, 0)``; for each μ the λ matching ``total`` is
    found by bisection (``Σp`` falls with λ), and μ by an outer bisection (the matched ``Σ p·v``
    falls with μ). When ``moment`` is outside ``[total·min v, total·max v]`` it is clipped there.

    Args:
        y: ``(k,)`` noisy counts. total: ``Σp``. values: ``(k,)`` value of each cell (e.g. a
            degree bin's mean degree). moment: ``Σ p·v`` to match.

    Returns:
        ``(k,)`` float64.
    """
    y = np.asarray(y, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if total <= 0:
        return np.zeros_like(y)
    moment = float(np.clip(moment, total * v.min(), total * v.max()))
    span = float(np.abs(y).max() + total + 1.0)

    def at(mu: float) -> np.ndarray:
        z = y - mu * v
        lo, hi = z.min() - total - 1.0, z.max()
        for _ in range(iters):
            lam = 0.5 * (lo + hi)
            if np.maximum(z - lam, 0).sum() > total:
                lo = lam
            else:
                hi = lam
        return np.maximum(z - 0.5 * (lo + hi), 0)

    scale = span / max(float(np.abs(v).max()), 1e-12)
    lo_mu, hi_mu = -scale, scale
    for _ in range(iters):
        mu = 0.5 * (lo_mu + hi_mu)
        if float(at(mu) @ v) > moment:
            lo_mu = mu
        else:
            hi_mu = mu
    return at(0.5 * (lo_mu + hi_mu))


def fit_margins(joint: np.ndarray, rows: np.ndarray, cols: np.ndarray, iters: int = 200,
                tol: float = 0.0) -> np.ndarray:
    """Iterative proportional fitting (Deming & Stephan, "On a least squares adjustment of a
    sampled frequency table when the expected marginal totals are known", Ann. Math. Statist.
    1940) of a non-negative 2-D table to row sums ``rows`` and column sums ``cols``: each round
    scales the rows, then the columns; rows and columns with no mass stay empty.

    Args:
        joint: ``(r, c)`` non-negative table (not modified).
        rows: ``(r,)`` target row sums.
        cols: ``(c,)`` target column sums (the same total as ``rows`` for an exact fit).
        iters: Most rounds.
        tol: Stop early once every row sum is within ``tol × Σ cols`` of its target (after a
            round's column scaling the column sums are exact); 0: run every round.

    Returns:
        A new ``(r, c)`` float64 table.
    """
    joint = np.array(joint, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.float64)
    bound = tol * float(cols.sum())
    for _ in range(iters):
        row = joint.sum(axis=1)
        joint *= np.divide(rows, row, out=np.zeros_like(rows), where=row > 0)[:, None]
        col = joint.sum(axis=0)
        joint *= np.divide(cols, col, out=np.zeros_like(cols), where=col > 0)[None, :]
        if bound > 0 and np.max(np.abs(joint.sum(axis=1) - rows), initial=0.0) <= bound:
            break
    return joint


#: Most flat cell indices :func:`fit_group_margins` keeps between rounds (8 bytes each).
_FLAT_INDEX_CELLS = 25_000_000


def fit_group_margins(table: np.ndarray, rows: np.ndarray,
                      margins: Sequence[tuple[np.ndarray, np.ndarray]], iters: int = 100,
                      tol: float = 0.0) -> np.ndarray:
    """Iterative proportional fitting (Deming & Stephan 1940, as :func:`fit_margins`) of a
    non-negative ``(n, k)`` table to its row sums and to grouped column margins: for each
    ``(group, target)`` of ``margins``, the sums of the table's rows in each group,
    ``Σ_{i: group_i = g} table[i, :]``, are to be ``target[g, :]``. Each round scales every
    margin in turn (one factor per group and column), then the rows; cells whose current sum
    is 0 stay 0.

    Args:
        table: ``(n, k)`` non-negative (not modified).
        rows: ``(n,)`` target row sums.
        margins: ``(group, target)`` pairs: ``group`` ``(n,)`` int in ``[0, G)``, ``target``
            ``(G, k)`` non-negative (the same total as ``rows`` for an exact fit).
        iters: Most rounds.
        tol: Stop after a round in which every margin cell was within ``tol × Σ rows`` of its
            target before its scaling; 0: run every round.

    Returns:
        A new ``(n, k)`` float64 table.
    """
    t = np.array(table, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    marg = [(np.asarray(g, dtype=np.int64), np.asarray(m, dtype=np.float64)) for g, m in margins]
    bound = tol * float(rows.sum())
    k = t.shape[1]
    # one bincount per margin over the flattened table (cell (g, j) at g·k + j): the same sums,
    # in the same order, as one bincount per column; measured on 10⁵ × 12 cells with six
    # margins (one core): the sums 3.4× faster, a whole fit 1.55× (1.24 → 0.80 s for 30 rounds),
    # results bit-identical. The flat indices are kept when they fit in _FLAT_INDEX_CELLS, else
    # rebuilt each round
    keep = t.size * len(marg) <= _FLAT_INDEX_CELLS
    flat = [(g[:, None] * k + np.arange(k)).ravel() if keep else None for g, _ in marg]
    for _ in range(iters):
        worst = 0.0
        for (g, target), idx in zip(marg, flat):
            if idx is None:
                idx = (g[:, None] * k + np.arange(k)).ravel()
            cur = np.bincount(idx, weights=t.ravel(), minlength=target.size).reshape(target.shape)
            worst = max(worst, float(np.max(np.abs(cur - target), initial=0.0)))
            t *= np.divide(target, cur, out=np.zeros_like(target), where=cur > 0)[g]
        row = t.sum(axis=1)
        t *= np.divide(rows, row, out=np.zeros_like(rows), where=row > 0)[:, None]
        if bound > 0 and worst <= bound:
            break
    return t


def project_monotone(y: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Euclidean projection of ``y`` onto ``{lower ≤ x_1 ≤ x_2 ≤ … ≤ x_k ≤ upper}``.

    The isotonic regression of ``y`` (pool-adjacent-violators: neighbouring blocks that decrease
    are merged into their mean until none does; Ayer et al., Ann. Math. Statist. 26, 1955),
    then clipped to ``[lower, upper]``: clipping a non-decreasing vector keeps it non-decreasing,
    and it is the projection onto the box-bounded cone because the bounds only ever bind on a
    prefix and a suffix of the blocks (Barlow, Bartholomew, Bremner & Brunk 1972, §1.4). With
    Gaussian noise of equal variance on every cell this is the maximum-likelihood estimate under
    the constraints (a noisy cumulative count curve is estimated by the non-decreasing curve
    between 0 and the number of parents closest to it).

    Args:
        y: ``(k,)`` noisy values. lower, upper: Bounds (``lower ≤ upper``).

    Returns:
        ``(k,)`` float64, non-decreasing.
    """
    y = np.asarray(y, dtype=np.float64)
    means: list[float] = []
    sizes: list[int] = []
    for v in y.tolist():
        m, s = v, 1
        while means and means[-1] > m:  # merge the violating block into the new one
            pm, ps = means.pop(), sizes.pop()
            m, s = (pm * ps + m * s) / (ps + s), ps + s
        means.append(m)
        sizes.append(s)
    out = np.repeat(np.asarray(means, dtype=np.float64), np.asarray(sizes, dtype=np.int64))
    return np.clip(out, lower, upper)


@dataclass(frozen=True)
class SizeFact:
    """One linear fact about the sizes ``n_t`` of private tables: ``Σ_t coef[t]·n_t`` against
    ``value``.

    Attributes:
        coef: ``{table: coefficient}``.
        value: The right-hand side (a noisy count, or 0 for a tie).
        kind: ``"estimate"`` (a noisy release of ``Σ coef·n``, standard deviation ``sd``),
            ``"tie"`` (``Σ coef·n = value``, met as far as the other ties allow: e.g. children =
            mean degree × parents) or ``"at_least"`` (``Σ coef·n ≥ value``: e.g. a public
            degree cap, ``τ·parents − children ≥ 0``).
        sd: Standard deviation of an estimate (``inf``: no information); unused otherwise.
        label: Where the fact comes from (shown in the run's notes).
    """

    coef: Mapping[str, float]
    value: float
    kind: Literal["estimate", "tie", "at_least"] = "estimate"
    sd: float = math.inf
    label: str = ""


TIE_WEIGHT = 1e4
"""Weight of a tie or bound row relative to the most precise estimate (its residual is met to
≈ 10⁻⁴ of that estimate's standard deviation)."""


def reconcile_sizes(facts: Sequence[SizeFact], start: Mapping[str, float]) -> dict[str, float]:
    """Table sizes closest to the noisy estimates (generalised least squares) that meet the ties
    and bounds, every size ≥ 1.

    Free post-processing of released values: the single-table mechanisms release each table's
    total, the degree method the number of parents and the mean degree of every FK with a
    private parent, and the degree caps τ are public; left alone these disagree (a child table
    larger than τ × its parent table cannot be linked without breaking the cap). The solution
    minimises ``Σ_estimates ((Σ coef·n − value)/sd)²`` with every tie and ``at_least`` bound as
    a heavily weighted row (weight :data:`TIE_WEIGHT` over the smallest ``sd``; an ``at_least``
    row gets a non-negative slack), solved by bounded-variable least squares
    (``scipy.optimize.lsq_linear``). A vague prior at ``start`` (standard deviation 10⁶ times the
    largest) settles a table that no estimate or tie reaches: it keeps ``start``.

    Args:
        facts: The facts (tables not in ``start`` are ignored with their facts).
        start: ``{table: size}``, the mechanisms' own totals (the fall-back, ≥ 1 after
            clipping).

    Returns:
        ``{table: size}`` (float ≥ 1) for every table of ``start``.
    """
    from scipy.optimize import lsq_linear

    tables = list(start)
    col = {t: i for i, t in enumerate(tables)}
    facts = [f for f in facts if f.coef and all(t in col for t in f.coef)]
    est = [f for f in facts if f.kind == "estimate" and math.isfinite(f.sd) and f.sd > 0]
    hard = [f for f in facts if f.kind in ("tie", "at_least")]
    if not est:
        return {t: max(1.0, float(v)) for t, v in start.items()}
    sd_min = min(f.sd for f in est)
    # rows scaled so that an estimate's residual is in units of its sd; a vague prior at the
    # start (sd 10⁶ × the largest) settles what nothing else reaches (and any rank deficiency)
    vague = 1e6 * max(max(f.sd for f in est), *(abs(float(v)) + 1.0 for v in start.values()))
    est = est + [SizeFact({t: 1.0}, float(start[t]), sd=vague, label="start") for t in tables]
    n_slack = sum(f.kind == "at_least" for f in hard)
    k = len(tables)
    a = np.zeros((len(est) + len(hard), k + n_slack))
    b = np.zeros(len(est) + len(hard))
    for i, f in enumerate(est):
        for t, c in f.coef.items():
            a[i, col[t]] = c / f.sd
        b[i] = f.value / f.sd
    j = k
    for i, f in enumerate(hard, start=len(est)):
        w = TIE_WEIGHT / sd_min
        for t, c in f.coef.items():
            a[i, col[t]] = c * w
        if f.kind == "at_least":  # Σ coef·n − s = value, s ≥ 0
            a[i, j] = -w
            j += 1
        b[i] = f.value * w
    lower = np.concatenate([np.ones(k), np.zeros(n_slack)])
    x = lsq_linear(a, b, bounds=(lower, np.inf), method="bvls").x
    return {t: float(max(1.0, x[col[t]])) for t in tables}
