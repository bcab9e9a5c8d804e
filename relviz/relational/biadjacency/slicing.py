"""Random slicing of the synthetic bi-adjacency matrix ([J] §6, App. B) and edge-list bookkeeping.

§ numbers below refer to docs/methods/biadjacency.md (§3.6, §3.7); [J] and [R] as defined there.

The synthetic relation is stored as an edge list (M:N) or a parent array (1:N); a dense matrix is only built
for a slice ``rows x cols``. This module provides

* the ``m_syn`` rule and the initial random relation in O(m_syn) memory (§3.6);
* slice sizes from a cell budget (§3.7);
* M:N slice selection seeded with guaranteed edges (§3.7) and 1:N slice construction (children, their
  current parents, random extra parents; §3.7, [R]);
* reinsertion of the rounded slice with the invariants of §3.7 checked: ``|E| = m_syn``, no
  duplicates, ids in range, masked cells (self-relation diagonal) absent, one parent per child.

Why relviz writes this itself: no well-kept library implements the relational-synthesis algorithms of [J].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "Slice",
    "choose_slice_mn",
    "choose_slice_otm",
    "initial_edges_mn",
    "initial_parents_otm",
    "m_syn_rule",
    "reinsert",
    "reinsert_otm",
    "slice_shape_mn",
    "slice_shape_otm",
]


def m_syn_rule(m: int, n1: int, n2: int, n1s: int, n2s: int, relation: Literal["mn", "otm"] = "mn") -> int:
    """Synthetic edge count (§3.6): ``floor(m sqrt(n1s n2s / (n1 n2)))`` for M:N, ``n1s`` for 1:N.

    Computed exactly in integers (``isqrt(m^2 n1s n2s // (n1 n2))``), so perfect squares do not round down.
    MovieLens (m = 10075, 3883 x 6040 -> 3880 x 6040) gives 10071.

    Args:
        m: Real (clipped) edge count.
        n1: Real table-1 size.
        n2: Real table-2 size.
        n1s: Synthetic table-1 size.
        n2s: Synthetic table-2 size.
        relation: ``"mn"`` or ``"otm"`` (one-to-many; table 1 = children).

    Returns:
        ``m_syn``.

    Raises:
        ValueError: on non-positive sizes or ``m_syn >= n1s * n2s`` (M:N).
    """
    if min(n1, n2, n1s, n2s) <= 0 or m < 0:
        raise ValueError("sizes must be positive and m non-negative")
    if relation == "otm":
        return int(n1s)
    if relation != "mn":
        raise ValueError(f"unknown relation type {relation!r}")
    m_syn = math.isqrt((m * m * n1s * n2s) // (n1 * n2))
    if m_syn >= n1s * n2s:
        raise ValueError(f"m_syn={m_syn} must be smaller than n1s*n2s={n1s * n2s}")
    return m_syn


def slice_shape_mn(n1s: int, n2s: int, slice_cells: int) -> tuple[int, int]:
    """M:N slice shape from a cell budget (§3.7): ``tau = sqrt(cells/(n1s n2s))``, ``s = int(clip(tau n))``.

    Args:
        n1s: Synthetic table-1 size.
        n2s: Synthetic table-2 size.
        slice_cells: Cell budget (10^6 default in relviz).

    Returns:
        ``(s1, s2)``; e.g. ``(801, 1247)`` for 3880 x 6040 and 10^6 cells.
    """
    tau = math.sqrt(slice_cells / (n1s * n2s))
    return int(min(max(tau * n1s, 1), n1s)), int(min(max(tau * n2s, 1), n2s))


def slice_shape_otm(n1s: int, n2s: int, slice_cells: int, expansion: float = 2.0) -> tuple[int, int]:
    """1:N slice shape (§3.7, [R]): ``s1 = floor(sqrt(cells/gamma))``, ``s2 = floor(gamma sqrt(cells/gamma))``.

    Both are clipped to the table sizes; e.g. 10^6 cells and ``gamma = 2`` give ``(707, 1414)``.

    Args:
        n1s: Number of synthetic children.
        n2s: Number of synthetic parents.
        slice_cells: Cell budget.
        expansion: Parent-to-child ratio ``gamma >= 1``.

    Returns:
        ``(s1, s2)``.

    Raises:
        ValueError: if ``expansion < 1``.
    """
    if expansion < 1:
        raise ValueError("the expansion ratio must be >= 1")
    root = math.sqrt(slice_cells / expansion)
    return max(1, min(int(root), n1s)), max(1, min(int(expansion * root), n2s))


def initial_edges_mn(
    n1s: int, n2s: int, m_syn: int, rng: np.random.Generator, mask_diagonal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``m_syn`` distinct uniformly random cells of ``[n1s] x [n2s]`` in O(m_syn) memory (§3.6).

    Uses ``Generator.choice(..., replace=False)`` over the allowed cells (Floyd-type sampling when
    ``m_syn`` is small relative to the population, so no ``n1s*n2s`` array is allocated). With
    ``mask_diagonal`` (self-relation, ``n1s == n2s``) the off-diagonal cells are enumerated as
    ``k -> (i, j' + [j' >= i])`` with ``i = k // (n-1)``, ``j' = k % (n-1)``.

    Args:
        n1s: Rows.
        n2s: Columns.
        m_syn: Number of edges.
        rng: Numpy generator.
        mask_diagonal: Exclude ``(i, i)``.

    Returns:
        ``(e1, e2)`` int64, sorted by ``(e1, e2)``.

    Raises:
        ValueError: if ``m_syn`` exceeds the number of allowed cells, or the diagonal is masked on a
            non-square matrix.
    """
    if mask_diagonal:
        if n1s != n2s:
            raise ValueError("mask_diagonal needs n1s == n2s (self-relation)")
        n_cells = n1s * (n1s - 1)
    else:
        n_cells = n1s * n2s
    if not 0 <= m_syn <= n_cells:
        raise ValueError(f"m_syn={m_syn} must be in [0, {n_cells}]")
    flat = np.sort(rng.choice(n_cells, size=m_syn, replace=False).astype(np.int64))
    if mask_diagonal:
        e1 = flat // (n1s - 1)
        jp = flat % (n1s - 1)
        return e1, jp + (jp >= e1)
    return flat // n2s, flat % n2s


def initial_parents_otm(n1s: int, n2s: int, rng: np.random.Generator, mask_diagonal: bool = False) -> np.ndarray:
    """Initial 1:N relation: every child gets a uniformly random parent (§3.6).

    Args:
        n1s: Number of children.
        n2s: Number of parents.
        rng: Numpy generator.
        mask_diagonal: Children and parents are rows of the same table; a child may not be its own parent.

    Returns:
        ``(n1s,)`` int64 parent id per child (the edge list is ``(arange(n1s), parent)``).

    Raises:
        ValueError: if there is no valid parent.
    """
    if mask_diagonal:
        if n2s < 2 or n1s > n2s:
            raise ValueError("mask_diagonal needs a shared table with at least 2 rows")
        jp = rng.integers(0, n2s - 1, size=n1s)
        return (jp + (jp >= np.arange(n1s))).astype(np.int64)
    if n2s < 1:
        raise ValueError("need at least one parent")
    return rng.integers(0, n2s, size=n1s).astype(np.int64)


@dataclass(frozen=True)
class Slice:
    """A slice ``rows x cols`` of the synthetic relation (§3.7).

    Attributes:
        rows: ``(s1,)`` int64 global row ids (slice order).
        cols: ``(s2,)`` int64 global column ids.
        m_s: Number of current edges inside the slice (M:N; 0 means "skip") or ``s1`` (1:N).
        current_local: ``(m_s,)`` int64 local flat indices ``i*s2 + j`` of the current edges inside.
        forbidden_local: int64 local flat indices of masked cells (self-relation diagonal); may be empty.
        inside: M:N only: ``(|E|,)`` bool mask of the edges of ``E`` inside the slice; ``None`` for 1:N.
    """

    rows: np.ndarray
    cols: np.ndarray
    m_s: int
    current_local: np.ndarray
    forbidden_local: np.ndarray
    inside: np.ndarray | None

    @property
    def shape(self) -> tuple[int, int]:
        """``(s1, s2)``."""
        return (self.rows.size, self.cols.size)

    def forbidden_mask(self) -> np.ndarray | None:
        """``(s1, s2)`` bool mask of masked cells, or ``None`` if the slice has none."""
        if self.forbidden_local.size == 0:
            return None
        mask = np.zeros(self.rows.size * self.cols.size, dtype=bool)
        mask[self.forbidden_local] = True
        return mask.reshape(self.shape)

    def current_matrix(self) -> np.ndarray:
        """``(s1, s2)`` float64 0/1 matrix of the current edges (a feasible warm start, §4.4)."""
        x = np.zeros(self.rows.size * self.cols.size, dtype=np.float64)
        x[self.current_local] = 1.0
        return x.reshape(self.shape)


def _positions(ids: np.ndarray, n: int) -> np.ndarray:
    pos = np.full(n, -1, dtype=np.int64)
    pos[ids] = np.arange(ids.size)
    return pos


def _fill(seed_ids: np.ndarray, n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``seed_ids`` followed by the first ``size - len(seed_ids)`` entries of a random permutation of the rest."""
    taken = np.zeros(n, dtype=bool)
    taken[seed_ids] = True
    perm = rng.permutation(n)
    rest = perm[~taken[perm]][: size - seed_ids.size]
    return np.concatenate([seed_ids, rest]).astype(np.int64)


def _forbidden_local(rows: np.ndarray, col_pos: np.ndarray, s2: int) -> np.ndarray:
    j = col_pos[rows]
    i = np.flatnonzero(j >= 0)
    return (i * s2 + j[i]).astype(np.int64)


def choose_slice_mn(
    e1: np.ndarray,
    e2: np.ndarray,
    n1s: int,
    n2s: int,
    s1: int,
    s2: int,
    rng: np.random.Generator,
    guaranteed_frac: float = 0.2,
    mask_diagonal: bool = False,
) -> Slice:
    """Choose an M:N slice seeded with guaranteed edges (§3.7).

    ``n_g = floor(g min(s1, s2))`` edges of ``E`` are sampled without replacement; their distinct endpoints come
    first, then random other rows/columns fill the slice. ``m_s`` counts all edges of ``E`` inside; if it is 0
    the caller skips the slice. Cost O(|E| + n1s + n2s).

    Args:
        e1: ``(m_syn,)`` current edge rows.
        e2: ``(m_syn,)`` current edge columns.
        n1s: Synthetic table-1 size.
        n2s: Synthetic table-2 size.
        s1: Slice rows.
        s2: Slice columns.
        rng: Numpy generator.
        guaranteed_frac: ``g`` (0.2 relviz default, 0.08 IPUMS-ref, 0 MovieLens-ref).
        mask_diagonal: Self-relation: cells ``(i, i)`` are masked.

    Returns:
        :class:`Slice`.

    Raises:
        ValueError: on bad sizes or ``n_g >= s1`` or ``n_g >= s2``.
    """
    e1 = np.asarray(e1, dtype=np.int64)
    e2 = np.asarray(e2, dtype=np.int64)
    if not (1 <= s1 <= n1s and 1 <= s2 <= n2s):
        raise ValueError("slice sizes must be within the table sizes")
    n_g = math.floor(guaranteed_frac * min(s1, s2))
    if n_g >= s1 or n_g >= s2 or n_g < 0:
        raise ValueError("need 0 <= n_g < s1 and n_g < s2 (guaranteed_frac must be in [0, 1))")
    n_g = min(n_g, e1.size)
    seed = rng.choice(e1.size, size=n_g, replace=False) if n_g else np.zeros(0, dtype=np.int64)
    rows = _fill(np.unique(e1[seed]), n1s, s1, rng)
    cols = _fill(np.unique(e2[seed]), n2s, s2, rng)
    row_pos = _positions(rows, n1s)
    col_pos = _positions(cols, n2s)
    lr, lc = row_pos[e1], col_pos[e2]
    inside = (lr >= 0) & (lc >= 0)
    current = lr[inside] * s2 + lc[inside]
    forbidden = _forbidden_local(rows, col_pos, s2) if mask_diagonal else np.zeros(0, dtype=np.int64)
    return Slice(rows, cols, int(current.size), current, forbidden, inside)


def choose_slice_otm(
    parent: np.ndarray,
    n2s: int,
    s1: int,
    s2: int,
    rng: np.random.Generator,
    mask_diagonal: bool = False,
) -> Slice:
    """Choose a 1:N slice (§3.7, [R]): ``s1`` random children, their current parents, then random parents.

    Every child of the slice keeps its current parent inside the slice, so ``m_s = s1``.

    Args:
        parent: ``(n1s,)`` current parent id of every child.
        n2s: Number of synthetic parents.
        s1: Children per slice.
        s2: Parents per slice (``>=`` the number of distinct current parents of the chosen children).
        rng: Numpy generator.
        mask_diagonal: Children and parents are the same table; a child may not be its own parent.

    Returns:
        :class:`Slice` (``inside`` is ``None``).

    Raises:
        ValueError: on bad sizes or too few parent columns.
    """
    parent = np.asarray(parent, dtype=np.int64)
    n1s = parent.size
    if not (1 <= s1 <= n1s and 1 <= s2 <= n2s):
        raise ValueError("slice sizes must be within the table sizes")
    rows = np.sort(rng.choice(n1s, size=s1, replace=False)).astype(np.int64)
    cur = np.unique(parent[rows])
    if cur.size > s2:
        raise ValueError(f"s2={s2} is smaller than the {cur.size} current parents of the chosen children")
    cols = _fill(cur, n2s, s2, rng)
    col_pos = _positions(cols, n2s)
    current = np.arange(s1, dtype=np.int64) * s2 + col_pos[parent[rows]]
    forbidden = _forbidden_local(rows, col_pos, s2) if mask_diagonal else np.zeros(0, dtype=np.int64)
    return Slice(rows, cols, s1, current, forbidden, None)


def reinsert(e1: np.ndarray, e2: np.ndarray, sl: Slice, picked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace the edges inside an M:N slice by the rounded ones (reinsertion, §3.7).

    Edges outside the slice are kept (in order), followed by the ``m_s`` new edges. Because kept edges lie
    outside ``rows x cols`` and new edges inside, duplicates can only come from ``picked`` itself, which is
    checked, so the O(|E|) update needs no global de-duplication.

    Args:
        e1: ``(m_syn,)`` edge rows (the list the slice was chosen from).
        e2: ``(m_syn,)`` edge columns.
        sl: The slice.
        picked: ``(m_s,)`` distinct local flat indices (UBS output).

    Returns:
        New ``(e1, e2)`` with exactly ``m_syn`` edges.

    Raises:
        ValueError: if ``picked`` has the wrong size, duplicates, out-of-range or masked cells, or ``sl`` does
            not belong to this edge list.
        AssertionError: if ``|E|`` changed.
    """
    e1 = np.asarray(e1, dtype=np.int64)
    e2 = np.asarray(e2, dtype=np.int64)
    if sl.inside is None or sl.inside.size != e1.size:
        raise ValueError("the slice was not chosen from this M:N edge list")
    picked = _check_picked(picked, sl, sl.m_s)
    s2 = sl.cols.size
    keep = ~sl.inside
    n1 = np.concatenate([e1[keep], sl.rows[picked // s2]])
    n2 = np.concatenate([e2[keep], sl.cols[picked % s2]])
    if n1.size != e1.size:
        raise AssertionError(f"|E| changed from {e1.size} to {n1.size}")
    return n1, n2


def _check_picked(picked: np.ndarray, sl: Slice, expected: int) -> np.ndarray:
    picked = np.asarray(picked, dtype=np.int64).reshape(-1)
    s1, s2 = sl.shape
    if picked.size != expected:
        raise ValueError(f"expected {expected} picked cells, got {picked.size}")
    if picked.size and (picked.min() < 0 or picked.max() >= s1 * s2):
        raise ValueError("picked cells out of range")
    if np.unique(picked).size != picked.size:
        raise ValueError("picked cells contain duplicates")
    if sl.forbidden_local.size and np.isin(picked, sl.forbidden_local).any():
        raise ValueError("a masked cell was picked")
    return picked


def reinsert_otm(parent: np.ndarray, sl: Slice, choice: np.ndarray) -> np.ndarray:
    """Set the parents of the slice's children from the rounded slice (§3.7, §4.5).

    Args:
        parent: ``(n1s,)`` current parents.
        sl: The 1:N slice.
        choice: ``(s1,)`` chosen local column per slice row (categorical rounding output).

    Returns:
        New ``(n1s,)`` parent array (every child still has exactly one parent).

    Raises:
        ValueError: on wrong sizes, out-of-range or masked choices.
    """
    choice = np.asarray(choice, dtype=np.int64).reshape(-1)
    s1, s2 = sl.shape
    if choice.size != s1:
        raise ValueError(f"expected one choice per slice row ({s1}), got {choice.size}")
    local = np.arange(s1, dtype=np.int64) * s2 + choice
    if choice.size and (choice.min() < 0 or choice.max() >= s2):
        raise ValueError("choices out of range")
    if sl.forbidden_local.size and np.isin(local, sl.forbidden_local).any():
        raise ValueError("a masked cell was chosen")
    out = np.asarray(parent, dtype=np.int64).copy()
    out[sl.rows] = sl.cols[choice]
    return out
