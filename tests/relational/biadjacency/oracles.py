"""Test oracles of the bi-adjacency kernels: slow or direct reference computations that the tests
compare the fast ones with, and invariant checks of their outputs. Not part of relviz.

* :func:`project_capped_simplex_exact`: the capped-simplex projection by sorting every breakpoint
  (``relviz.relational.biadjacency.projection.project_capped_simplex`` finds the same root by a
  safeguarded Newton iteration);
* :func:`slice_objective`: the PGD objective of a slice, straight from the operator;
* :func:`check_edge_list`: every invariant of a many-to-many synthetic edge list.
"""

from __future__ import annotations

import numpy as np
import torch

from relviz.relational.biadjacency.projection import sum_tolerance
from relviz.relational.biadjacency.workloads import SliceOperator

__all__ = ["check_edge_list", "project_capped_simplex_exact", "slice_objective"]


def project_capped_simplex_exact(v: np.ndarray, m: float, u: np.ndarray | float | None = None) -> np.ndarray:
    """Reference projection onto ``{0 <= x <= u, sum(x) = m}`` by sorting all breakpoints
    (docs/methods/biadjacency.md §4.3).

    ``S(y)`` is linear between consecutive breakpoints ``{-v_i} U {u_i - v_i}``; the root is located on the
    sorted breakpoints and found by linear interpolation. Cost O(N^2) memory/time: meant for ``N <= ~1000``.

    Args:
        v: Point, shape ``(N,)``.
        m: Target sum, ``0 <= m <= sum(u)``.
        u: Upper bounds (scalar or ``(N,)``), default 1.

    Returns:
        Float64 array ``(N,)``.

    Raises:
        ValueError: if ``m`` is infeasible.
    """
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    uu = np.broadcast_to(np.asarray(1.0 if u is None else u, dtype=np.float64), v.shape)
    if m < 0 or m > uu.sum() + sum_tolerance(m):
        raise ValueError("infeasible target sum")
    bps = np.unique(np.concatenate([-v, uu - v]))
    s_vals = np.clip(v[None, :] + bps[:, None], 0.0, uu[None, :]).sum(axis=1)
    k = int(np.searchsorted(s_vals, m, side="left"))
    if k == 0:
        y = bps[0]
    elif k >= len(bps):
        y = bps[-1]
    else:
        s0, s1 = s_vals[k - 1], s_vals[k]
        y = bps[k] if s1 == s0 else bps[k - 1] + (m - s0) * (bps[k] - bps[k - 1]) / (s1 - s0)
    return np.clip(v + y, 0.0, uu)


def slice_objective(op: SliceOperator, x: np.ndarray | torch.Tensor, target: np.ndarray | torch.Tensor,
                    m_s: float) -> float:
    """``f(x) = ||(1/m_s) Q x - a_hat||^2`` (docs/methods/biadjacency.md §4.1), computed directly.

    Args:
        op: Slice operator.
        x: ``(s1, s2)`` slice values.
        target: ``(op.n_queries,)`` stacked (noisy) answers.
        m_s: Edge count of the slice (children count for 1:N).

    Returns:
        The objective as a Python float (accumulated in float64).
    """
    tgt = torch.as_tensor(np.asarray(target) if not isinstance(target, torch.Tensor) else target)
    r = op.forward(x) / m_s - tgt.to(device=op.device, dtype=op.dtype)
    return float((r.to(torch.float64) ** 2).sum())


def check_edge_list(
    e1: np.ndarray,
    e2: np.ndarray,
    n1s: int,
    n2s: int,
    m_syn: int | None = None,
    mask_diagonal: bool = False,
) -> None:
    """Full invariant check of an M:N synthetic edge list (docs/methods/biadjacency.md §3.7);
    O(m log m).

    Args:
        e1: Edge rows.
        e2: Edge columns.
        n1s: Table-1 size.
        n2s: Table-2 size.
        m_syn: Expected number of edges (optional).
        mask_diagonal: Whether ``(i, i)`` edges are forbidden.

    Raises:
        AssertionError: if an invariant is violated.
    """
    e1 = np.asarray(e1, dtype=np.int64)
    e2 = np.asarray(e2, dtype=np.int64)
    if e1.shape != e2.shape:
        raise AssertionError("edge arrays differ in length")
    if m_syn is not None and e1.size != m_syn:
        raise AssertionError(f"|E| = {e1.size} != m_syn = {m_syn}")
    if e1.size and (e1.min() < 0 or e1.max() >= n1s or e2.min() < 0 or e2.max() >= n2s):
        raise AssertionError("edge ids out of range")
    if np.unique(e1 * n2s + e2).size != e1.size:
        raise AssertionError("duplicate edges")
    if mask_diagonal and (e1 == e2).any():
        raise AssertionError("self-loop on a masked diagonal")
