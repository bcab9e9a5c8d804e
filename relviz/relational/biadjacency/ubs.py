"""Unbiased dependent rounding: UBS ([J] §5, Alg. 3) and categorical rounding ([J] Alg. 7).

§ numbers below refer to docs/methods/biadjacency.md (UBS: §5; categorical rounding: §4.5); [J] and [R] as
defined there.

``ubs(x, m)`` returns exactly ``m`` distinct indices with ``P(i selected) = x_i`` for ``x in [0,1]^N``,
``sum(x) = m``. The recursion of [J] Alg. 3 (merge into groups of sum <= 1, choose the ``L - m`` groups to
*exclude* by UBS on the complements, pick one index per kept group) is run iteratively in float64 following the
implementation rules of §5.4:

* input repair (clamp into ``[0, u]``; re-project onto the exact integer sum if it is off by more than
  ``1e-9 max(1, m)``), carried out once on the input and checked again at every level;
* merge via float64 prefix sums and ``searchsorted`` (one call per group; the corrected merge of §10 item 3:
  the index that overflows a group *opens* the next group);
* within-group draws vectorised with one ``searchsorted`` over all groups;
* optional uniformly random shuffle before the first merge (default on);
* invariants asserted: the target strictly decreases between levels, exactly ``m`` distinct indices are
  returned, and no index with ``x_i = 0`` (or ``u_i = 0``) is returned.

Entries equal to 1 are selected and entries equal to 0 excluded *structurally* (they are set aside before the
first merge, which leaves the distribution unchanged); a repair only moves the fractional entries when that is
feasible. :func:`ubs_many` draws many independent samples of the same input at once (batched over rows; used by
the statistical tests and by diagnostics) with exactly the same algorithm: :func:`ubs` is ``ubs_many`` with one
draw.

Why relviz writes this itself: no well-kept library implements the relational-synthesis algorithms of [J]
(UBS is specific to that paper; the sampling routines of numpy/torch are either independent (random count) or
biased for fixed-size unequal-probability sampling, see §5.1).
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from relviz.relational.biadjacency.projection import (
    project_capped_simplex,
    sum_tolerance,
)

__all__ = ["categorical_rounding", "merge_groups", "ubs", "ubs_many"]

_EPS = np.finfo(np.float64).eps
_MERGE_TOL = 1e-12  # §5.4


def _check(cond: bool, msg: str) -> None:
    """Invariant check that survives ``python -O`` (the invariants of §5.4)."""
    if not cond:
        raise AssertionError(msg)


def _to_numpy_f64(x: np.ndarray | torch.Tensor) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _prepare(
    x: np.ndarray | torch.Tensor, m: int, upper: np.ndarray | torch.Tensor | None
) -> tuple[np.ndarray, np.ndarray]:
    """Validate and repair the level-0 input; return ``(x, u)`` flat float64 with ``0 <= x <= u``, ``sum x ~ m``."""
    xv = _to_numpy_f64(x).reshape(-1)
    if not np.isfinite(xv).all():
        raise ValueError("x contains NaN or infinite values")
    n = xv.size
    if upper is None:
        u = np.ones(n)
    else:
        u = _to_numpy_f64(upper).reshape(-1)
        if u.shape != xv.shape or not np.isfinite(u).all() or (u < 0).any() or (u > 1).any():
            raise ValueError("upper must have the shape of x with entries in [0, 1]")
    if not 0 <= m <= n:
        raise ValueError(f"m={m} must be in [0, N={n}]")
    if m > u.sum() + sum_tolerance(m):
        raise ValueError(f"m={m} exceeds the total upper bound {u.sum()}")
    xv = np.clip(xv, 0.0, u)
    if abs(xv.sum() - m) > sum_tolerance(m):
        # Repair: prefer moving only the fractional entries (keeps exact 0/1 entries structural).
        frac = (xv > 0) & (xv < 1)
        target = m - int(np.count_nonzero(xv >= 1))
        if frac.any() and 0 <= target <= u[frac].sum():
            xv = xv.copy()
            xv[frac] = project_capped_simplex(xv[frac], float(target), u[frac])
        else:
            xv = project_capped_simplex(xv, float(m), u)
    return xv, u


def _rowwise_searchsorted(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``searchsorted(c[r], v[r], side='right')`` for every row ``r`` (c: ``(k, n)``, v: ``(k, j)``)."""
    if c.shape[0] == 1:
        return np.searchsorted(c[0], v[0], side="right")[None, :]
    return torch.searchsorted(
        torch.from_numpy(np.ascontiguousarray(c)), torch.from_numpy(np.ascontiguousarray(v)), right=True
    ).numpy()


def _merge_starts(c: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Greedy group starts from prefix sums ``c`` (``(k, n+1)``); padded with ``n`` (the merge of §5.2, §5.4).

    A group starting at ``s`` ends at ``e = max(s + 1, searchsorted(c, c[s] + 1 + tol, 'right') - 1)``; the
    next group starts at ``e``.
    """
    k, n1 = c.shape
    n = n1 - 1
    if k == 1:  # scalar fast path of the same rule
        c0 = c[0]
        t = float(tol[0])
        starts = []
        s = 0
        while s < n:
            starts.append(s)
            e = int(np.searchsorted(c0, c0[s] + 1.0 + t, side="right")) - 1
            s = min(max(e, s + 1), n)
        return np.asarray(starts, dtype=np.int64)[None, :]
    rows = np.arange(k)
    s = np.zeros(k, dtype=np.int64)
    cols = []
    while True:
        done = s >= n
        if done.all():
            break
        cols.append(np.where(done, n, s))
        e = _rowwise_searchsorted(c, (c[rows, s] + 1.0 + tol)[:, None])[:, 0] - 1
        s = np.where(done, n, np.minimum(np.maximum(e, s + 1), n))
    return np.stack(cols, axis=1)


def merge_groups(x: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """First-level UBS merge of ``x`` in the given order (diagnostics and the Figure 1 test, §5.3).

    Args:
        x: ``(N,)`` values in ``[0, 1]`` (clamped).

    Returns:
        ``(starts, sums)``: int64 group start positions and float64 group sums ``p_g`` (clamped to ``[0, 1]``).
        For [J] Figure 1, ``x = [0.1, 0.2, 0.5, 0.7, 0.6, 0.9]`` gives starts ``[0, 3, 4, 5]`` and sums
        ``[0.8, 0.7, 0.6, 0.9]``.
    """
    xv = np.clip(_to_numpy_f64(x).reshape(-1), 0.0, 1.0)
    c = np.zeros((1, xv.size + 1))
    np.cumsum(xv, out=c[0, 1:])
    tol = np.array([_MERGE_TOL + 4.0 * _EPS * max(1.0, float(c[0, -1]))])
    starts = _merge_starts(c, tol)[0]
    ends = np.append(starts[1:], xv.size)
    return starts, np.clip(c[0, ends] - c[0, starts], 0.0, 1.0)


def _level(
    x: np.ndarray, t: np.ndarray, n_valid: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One UBS level on ``k`` independent rows.

    Args:
        x: ``(k, n)`` float64 vectors; row ``r`` has ``n_valid[r]`` real entries followed by zero padding (zeros
            are inert: they join the last group and are never picked).
        t: ``(k,)`` integer targets, all ``>= 1``.
        n_valid: ``(k,)`` number of real entries per row.
        rng: Generator.

    Returns:
        ``(valid, cand, complement, t_next)``: ``(k, G)`` mask of real groups, ``(k, G)`` index picked inside
        each group (position in the row), ``(k, G)`` complements ``1 - p_g`` (0 on padding) and the next
        targets ``L - t``.
    """
    k, n = x.shape
    rows = np.arange(k)
    # Input repair at this level (§5.4): clamp, then re-project rows whose sum is off.
    x = np.clip(x, 0.0, 1.0)
    sums = x.sum(axis=1)
    tf = t.astype(np.float64)
    bad = np.flatnonzero(np.abs(sums - tf) > 1e-9 * np.maximum(1.0, tf))
    for r in bad:  # rare: only pathological rounding makes deeper levels drift; padding stays 0
        x[r, : n_valid[r]] = project_capped_simplex(x[r, : n_valid[r]], float(t[r]))
    c = np.zeros((k, n + 1))
    np.cumsum(x, axis=1, out=c[:, 1:])
    # Guard: the computed total must not exceed the target, otherwise L <= 2t - 1 (and hence strict progress)
    # can fail by rounding. Scaling by a factor 1 - O(1e-13) changes the marginals negligibly.
    for _ in range(10):
        over = np.flatnonzero(c[:, -1] > tf)
        if over.size == 0:
            break
        x[over] *= (tf[over] / c[over, -1] * (1.0 - 2.0**-45))[:, None]
        c[over, 1:] = np.cumsum(x[over], axis=1)
    _check(bool((c[:, -1] <= tf).all()), "UBS: could not bring the prefix-sum total under the target")
    tol = _MERGE_TOL + 4.0 * _EPS * np.maximum(1.0, tf)  # >= 2 ulp of the prefix sums
    starts = _merge_starts(c, tol)
    g = starts.shape[1]
    valid = starts < n
    ends = np.concatenate([starts[:, 1:], np.full((k, 1), n)], axis=1)
    ends = np.where(valid, ends, n)
    c_start = c[rows[:, None], starts]
    p = c[rows[:, None], ends] - c_start
    big_l = valid.sum(axis=1)
    t_next = big_l - t
    _check(bool((t_next >= 0).all() and (t_next < t).all()), "UBS: target did not strictly decrease")
    # Within-group draw: u ~ U(0, p_g), index = last position with prefix sum <= c[s] + u, clamped to the group.
    u = rng.random((k, g)) * p
    pos = _rowwise_searchsorted(c, c_start + u) - 1
    pos = np.minimum(np.maximum(pos, starts), ends - 1)
    pos = np.where(valid, pos, 0)
    ar = np.arange(n)
    positive = x > 0
    last_pos = np.maximum.accumulate(np.where(positive, ar, -1), axis=1)
    cand = last_pos[rows[:, None], pos]
    early = valid & (cand < starts)
    if early.any():  # nothing positive before pos inside the group (u = 0 exactly): first positive entry
        next_pos = np.minimum.accumulate(np.where(positive, ar, n)[:, ::-1], axis=1)[:, ::-1]
        cand = np.where(early, next_pos[rows[:, None], np.minimum(starts, n - 1)], cand)
    complement = np.where(valid, 1.0 - np.clip(p, 0.0, 1.0), 0.0)
    return valid, cand, complement, t_next


def _ubs_rows(xf: np.ndarray, t: int, k: int, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
    """``k`` independent UBS draws of ``t`` positions of the fractional vector ``xf``; ``(k, t)`` int64."""
    n = xf.size
    if shuffle:
        perm = rng.permutation(n)[None, :] if k == 1 else rng.permuted(np.tile(np.arange(n), (k, 1)), axis=1)
        x0 = xf[perm]
    else:
        perm = None
        x0 = np.tile(xf, (k, 1))
    levels = []
    xs, ts = x0, np.full(k, t, dtype=np.int64)
    n_valid = np.full(k, n, dtype=np.int64)
    while True:
        valid, cand, comp, t_next = _level(xs, ts, n_valid, rng)
        keep = t_next > 0
        levels.append((valid, cand, keep, xs.shape[1]))
        if not keep.any():
            break
        n_valid = valid[keep].sum(axis=1)
        xs, ts = comp[keep, : int(n_valid.max())], t_next[keep]
    # Unwind: at each level keep the groups that the next level did not select for exclusion; the items of
    # level l+1 are the groups of level l. Selections are small boolean masks except at level 0.
    sel_next: np.ndarray | None = None
    kept = np.zeros((0, 0), dtype=bool)
    for depth, (valid, cand, keep, n_items) in enumerate(reversed(levels)):
        kr, g = valid.shape
        excluded = np.zeros((kr, g), dtype=bool)
        if sel_next is not None:
            excluded[keep, : sel_next.shape[1]] = sel_next
        kept = valid & ~excluded
        if depth == len(levels) - 1:
            break
        sel = np.zeros((kr, n_items), dtype=bool)
        rr, gg = np.nonzero(kept)
        sel[rr, cand[rr, gg]] = True
        _check(bool((kept.sum(axis=1) == sel.sum(axis=1)).all()), "UBS: two kept groups picked the same index")
        sel_next = sel
    # Level 0: exactly t kept groups per row, one position each (row-major nonzero keeps rows together).
    _check(bool((kept.sum(axis=1) == t).all()), "UBS: wrong number of kept groups")
    rr, gg = np.nonzero(kept)
    pos = cand[rr, gg].reshape(k, t)
    if perm is not None:
        pos = np.take_along_axis(perm, pos, axis=1)
    pos.sort(axis=1)
    _check(bool((np.diff(pos, axis=1) > 0).all()), "UBS: two kept groups picked the same index")
    return pos


def ubs_many(
    x: np.ndarray | torch.Tensor,
    m: int,
    n_draws: int,
    rng: np.random.Generator,
    *,
    shuffle: bool = True,
    upper: np.ndarray | torch.Tensor | None = None,
    max_batch_cells: int = 2**24,
) -> np.ndarray:
    """``n_draws`` independent UBS samples of the same input (§5.2–§5.4), batched over rows.

    Args:
        x: Inclusion probabilities, shape ``(N,)`` (or any shape, flattened row-major), entries ~``[0, 1]``,
            ``sum ~ m``; float32/float64 numpy array or torch tensor.
        m: Integer number of indices to select, ``0 <= m <= N``.
        n_draws: Number of independent draws.
        rng: Numpy generator (all randomness).
        shuffle: Apply a uniformly random permutation before the first merge (default True, §5.4).
        upper: Optional per-entry upper bounds in ``[0, 1]`` (0 = masked cell, never selected).
        max_batch_cells: Memory cap: draws are processed in chunks of about ``max_batch_cells / N`` rows.

    Returns:
        ``(n_draws, m)`` int64, each row the sorted selected flat indices.

    Raises:
        ValueError: NaN/inf input, ``m`` not an integer in ``[0, N]``, or ``m > sum(upper)``.
        AssertionError: if an internal invariant fails (should not happen).
    """
    m = operator.index(m)
    xv, u = _prepare(x, m, upper)
    ones = np.flatnonzero(xv >= 1.0)
    frac_idx = np.flatnonzero((xv > 0) & (xv < 1.0))
    t = m - ones.size
    _check(0 <= t <= frac_idx.size, "UBS: repaired input inconsistent with the target")
    out = np.empty((n_draws, m), dtype=np.int64)
    if t == 0:
        out[:] = ones
        return out
    xf = xv[frac_idx]
    chunk = max(1, int(max_batch_cells // max(1, xf.size)))
    for lo in range(0, n_draws, chunk):
        k = min(chunk, n_draws - lo)
        picked = frac_idx[_ubs_rows(xf, t, k, rng, shuffle)]
        out[lo : lo + k] = np.sort(np.concatenate([np.broadcast_to(ones, (k, ones.size)), picked], axis=1), axis=1)
    _check(bool((xv[out] > 0).all() and (u[out] > 0).all()), "UBS: selected an index with x = 0 or u = 0")
    return out


def ubs(
    x: np.ndarray | torch.Tensor,
    m: int,
    rng: np.random.Generator,
    *,
    shuffle: bool = True,
    upper: np.ndarray | torch.Tensor | None = None,
) -> np.ndarray:
    """Unbiased sampling of exactly ``m`` distinct indices with ``P(i) = x_i`` ([J] Alg. 3, §5).

    Args:
        x: Inclusion probabilities (``(N,)`` or a slice matrix, flattened row-major), float32/float64 numpy array
            or torch tensor; repaired if slightly outside ``[0, 1]`` or ``sum != m``.
        m: Integer target, ``0 <= m <= N``.
        rng: Numpy generator.
        shuffle: Random permutation before merging (default True; ``False`` reproduces [J] Figure 1).
        upper: Optional per-entry upper bounds in ``[0, 1]`` (0 = masked, never selected).

    Returns:
        ``(m,)`` int64 sorted distinct flat indices.

    Raises:
        ValueError: NaN/inf input, ``m`` not an integer in ``[0, N]``, or ``m > sum(upper)``.
        AssertionError: if an internal invariant fails (should not happen).
    """
    out = ubs_many(x, m, 1, rng, shuffle=shuffle, upper=upper)[0]
    _check(np.unique(out).size == out.size, "UBS: duplicate indices")
    return out


def categorical_rounding(
    p: np.ndarray | torch.Tensor,
    rng: np.random.Generator,
    forbidden: np.ndarray | torch.Tensor | None = None,
) -> np.ndarray:
    """One-to-many rounding: one column per row drawn with probability ``p[i, j]`` ([J] Alg. 7, §4.5).

    Batched inverse-CDF sampling: ``u_i ~ U(0, sum_j p_ij)``; the pick is the first column whose running sum
    exceeds ``u_i``, moved back to the last positive entry if rounding lands on a zero. Unbiased and every row
    gets exactly one column.

    Args:
        p: ``(n_rows, n_cols)`` non-negative row probabilities (rows are normalised implicitly).
        rng: Numpy generator (one uniform per row).
        forbidden: Optional bool mask of cells that must never be chosen (their probability is ignored).

    Returns:
        ``(n_rows,)`` int64 chosen column per row.

    Raises:
        ValueError: NaN/inf or negative entries (below ``-1e-12``), not 2-D, or a row with no positive mass.
    """
    pm = _to_numpy_f64(p)
    if pm.ndim != 2:
        raise ValueError("p must be a 2-D matrix")
    if not np.isfinite(pm).all():
        raise ValueError("p contains NaN or infinite values")
    if (pm < -1e-12).any():
        raise ValueError("p has negative entries")
    pm = np.clip(pm, 0.0, None)
    if forbidden is not None:
        pm = np.where(_to_numpy_f64(forbidden).astype(bool).reshape(pm.shape), 0.0, pm)
    n_rows, n_cols = pm.shape
    c = np.cumsum(pm, axis=1)
    total = c[:, -1] if n_cols else np.zeros(n_rows)
    if (total <= 0).any():
        raise ValueError("a row has no positive probability mass")
    draw = rng.random(n_rows) * total
    idx = np.minimum(np.count_nonzero(c <= draw[:, None], axis=1), n_cols - 1)
    rows = np.arange(n_rows)
    bad = np.flatnonzero(pm[rows, idx] <= 0)
    if bad.size:
        pos = pm[bad] > 0
        before = pos & (np.arange(n_cols)[None, :] <= idx[bad, None])
        last_before = n_cols - 1 - np.argmax(before[:, ::-1], axis=1)
        idx[bad] = np.where(before.any(axis=1), last_before, np.argmax(pos, axis=1))
    _check(bool((pm[rows, idx] > 0).all()), "categorical rounding picked a zero-probability cell")
    return idx.astype(np.int64)


def degree_preserving_rounding(
    p: np.ndarray | torch.Tensor,
    targets: np.ndarray,
    rng: np.random.Generator,
    forbidden: np.ndarray | torch.Tensor | None = None,
    *,
    exact_limit: int = 1500,
) -> np.ndarray:
    """One-to-many rounding that keeps every column's count (relviz extension to [J] §4.5).

    :func:`categorical_rounding` picks one column per row; then the rows in excess of an over-full
    column's target — those with the smallest probability for it — move to the under-full columns.
    The moved rows are matched to the free slots by maximum total probability (the linear
    assignment problem, ``scipy.optimize.linear_sum_assignment``) when there are at most
    ``exact_limit`` of them, otherwise in random order. Forbidden cells are never chosen: when the
    moves cannot avoid one, the plain categorical rounding is returned (counts not kept).

    Args:
        p: ``(n_rows, n_cols)`` non-negative row probabilities.
        targets: ``(n_cols,)`` non-negative integers summing to ``n_rows``.
        rng: Numpy generator.
        forbidden: Optional bool mask of cells that must never be chosen.

    Returns:
        ``(n_rows,)`` int64 column per row, with ``bincount == targets`` (unless only a masked
        cell could take a moved row).

    Raises:
        ValueError: if ``targets`` do not sum to the number of rows.
    """
    from scipy.optimize import linear_sum_assignment

    from relviz.privacy.ranking import rank_within_groups

    pm = np.clip(_to_numpy_f64(p), 0.0, None)
    n, k = pm.shape
    targets = np.asarray(targets, dtype=np.int64)
    if targets.shape != (k,) or targets.sum() != n or (targets < 0).any():
        raise ValueError("targets must be k non-negative integers summing to the number of rows")
    picks = categorical_rounding(pm, rng, forbidden)
    excess = np.bincount(picks, minlength=k) - targets
    if not (excess > 0).any():
        return picks
    # the excess rows of each over-full column: those least likely to belong there
    order = np.lexsort((pm[np.arange(n), picks], picks))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = rank_within_groups(picks[order])
    movers = np.flatnonzero(rank < np.maximum(excess, 0)[picks])
    slots = np.repeat(np.arange(k), np.maximum(-excess, 0))
    before = picks.copy()
    if movers.size <= exact_limit:
        cost = -pm[np.ix_(movers, slots)]
        if forbidden is not None:
            cost[_to_numpy_f64(forbidden).astype(bool)[np.ix_(movers, slots)]] = 1e6
        r, c = linear_sum_assignment(cost)
        picks[movers[r]] = slots[c]
    else:
        picks[movers] = slots[rng.permutation(slots.size)]
    if forbidden is not None and _to_numpy_f64(forbidden).astype(bool)[np.arange(n), picks].any():
        return before  # no assignment avoids a masked cell: keep the plain rounding this time
    return picks
