"""Degree clipping of a real edge list before private learning (docs/methods/biadjacency.md §1.5).

The privacy analysis of [J] (Alimohammadi et al., defined in docs/methods/biadjacency.md) assumes every record
has at most ``d_max`` relationships ([J] §2.1). Clipping, as in [J] §8 and
the reference code: scan the link table in a deterministic, data-independent order; pass 1 keeps an edge only if
it is among the first ``d_max`` edges of its table-1 id; pass 2 (on the survivors) keeps an edge only if it is
among the first ``d_max`` edges of its table-2 id. Afterwards both sides have degree ``<= d_max``; clipping is
idempotent.

Privacy caveat (docs/methods/biadjacency.md §1.5): the DP guarantee holds w.r.t. the *clipped* database; clipping is not a stable
transformation, and the number of dropped edges is private information (show it to the data owner only).

Why relviz writes this itself: no well-kept library implements the relational-synthesis preprocessing of [J];
it is a few vectorised lines (stable sort + within-group rank).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from relviz.privacy.ranking import rank_within_groups

__all__ = ["clip_degrees", "degree_clip_mask"]


def degree_clip_mask(
    e1: np.ndarray,
    e2: np.ndarray,
    d_max: int | tuple[int, int],
) -> np.ndarray:
    """Boolean mask of the edges kept by the two-pass clipping, in the given (stored) order ([J] §8).

    Args:
        e1: ``(m,)`` table-1 ids.
        e2: ``(m,)`` table-2 ids.
        d_max: Degree bound, or ``(d1, d2)`` bounds for side 1 (pass 1) and side 2 (pass 2) (e.g.
            ``(d_child, d_parent)`` for a self-relation).

    Returns:
        ``(m,)`` bool mask.

    Raises:
        ValueError: if the edge arrays differ in length or a bound is negative.
    """
    e1 = np.asarray(e1).reshape(-1)
    e2 = np.asarray(e2).reshape(-1)
    if e1.shape != e2.shape:
        raise ValueError("edge endpoint arrays must have the same length")
    d1, d2 = (d_max, d_max) if isinstance(d_max, int | np.integer) else d_max
    if d1 < 0 or d2 < 0:
        raise ValueError("degree bounds must be non-negative")
    keep = rank_within_groups(e1) < d1
    survivors = np.flatnonzero(keep)
    keep2 = rank_within_groups(e2[survivors]) < d2
    mask = np.zeros(e1.size, dtype=bool)
    mask[survivors[keep2]] = True
    return mask


def clip_degrees(
    e1: np.ndarray,
    e2: np.ndarray,
    d_max: int | tuple[int, int],
    *,
    order: Literal["stored", "sorted"] = "stored",
    seed: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Clip an edge list so that every id has degree ``<= d_max`` on both sides ([J] §8).

    Args:
        e1: ``(m,)`` table-1 ids.
        e2: ``(m,)`` table-2 ids.
        d_max: Degree bound, or ``(d1, d2)``.
        order: ``"stored"`` scans the link table in the given order ([R]/[J]; MovieLens file order gives
            10,075 edges for ``d_max = 10``); ``"sorted"`` first sorts by ``(id_1, id_2)``.
        seed: If given, scan in a *public* random permutation (``numpy.random.default_rng(seed)``) of the
            chosen order instead. Never derive the seed from private data.

    Returns:
        ``(e1_kept, e2_kept)`` int64, in scan order. ``m_clipped = len(e1_kept)``.

    Raises:
        ValueError: as :func:`degree_clip_mask`, or for an unknown ``order``.
    """
    e1 = np.asarray(e1, dtype=np.int64).reshape(-1)
    e2 = np.asarray(e2, dtype=np.int64).reshape(-1)
    if e1.shape != e2.shape:
        raise ValueError("edge endpoint arrays must have the same length")
    if order == "sorted":
        idx = np.lexsort((e2, e1))
    elif order == "stored":
        idx = np.arange(e1.size)
    else:
        raise ValueError(f"unknown order {order!r}")
    if seed is not None:
        idx = idx[np.random.default_rng(seed).permutation(idx.size)]
    e1, e2 = e1[idx], e2[idx]
    mask = degree_clip_mask(e1, e2, d_max)
    return e1[mask], e2[mask]
