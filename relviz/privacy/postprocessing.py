"""Post-processing of noisy counts (free: it reads only released values).

Why relviz writes this itself: the Euclidean projection onto a scaled simplex is a few numpy lines
(Held, Wolfe & Crowder 1974; Duchi et al., "Efficient projections onto the l1-ball", ICML 2008,
Fig. 1), shared by the single-table and degree mechanisms.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_counts", "project_counts_moment", "project_monotone"]


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
