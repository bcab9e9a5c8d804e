"""The factorised query operator of cross-table workloads on a dense slice (§2.3, §4.2).

§ numbers below refer to docs/methods/biadjacency.md; [J] is the bi-adjacency paper (Alimohammadi et al.), [R] its
authors' reference code, as defined there.

A cross-table workload ``w = (S1, S2)`` (:class:`relviz.marginals.Workload`, [J] Def. 2) has ``C1_w * C2_w``
queries, linear in ``vec(B)`` ([J] Lemma 1); on a slice the stacked query matrix factorises through one-hot code
matrices (§2.3):

    Q_w vec(X) = vec(U_w^T X V_w),   (Q_w^T r)[i*n2 + j] = R_w[a_w[i], b_w[j]].

This module provides :class:`SliceOperator`, that operator on a dense slice ``X`` (forward, transpose, normal
products, analytic spectral bounds and a capped power iteration, §2.3 and §4.2) in torch, and the code vectors of
a slice's rows and columns (:func:`slice_codes`). The workloads themselves, the marginals of an edge list and the
evaluation metric (§7.1) are shared with the other relational methods and the evaluation, in
:mod:`relviz.marginals` (numpy only).

Nothing of size ``n1 * n2`` (other than a slice) or a dense/sparse ``Q`` is ever materialised.

Why relviz writes this itself: no well-kept library implements the relational-synthesis algorithms of [J];
the authors' reference code builds a COO ``Q`` with ``s1*s2`` non-zeros per workload, which this factorised
form replaces (O(s1 + s2) memory per workload).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from relviz.marginals import Workload, workload_codes
from relviz.relational.biadjacency.device import resolve_device

__all__ = [
    "PowerIterationResult",
    "SliceOperator",
    "slice_codes",
]


def slice_codes(
    codes1: np.ndarray,
    codes2: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    workloads: Sequence[Workload],
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Code vectors of the slice rows/columns for each workload (the per-slice problem of §3.9).

    Args:
        codes1: ``(n1s, d1)`` codes of synthetic table 1.
        codes2: ``(n2s, d2)`` codes of synthetic table 2.
        rows: ``(s1,)`` slice row ids.
        cols: ``(s2,)`` slice column ids.
        workloads: Workloads (order = order of the stacked target).

    Returns:
        ``(a_list, b_list)``: per workload int64 arrays ``(s1,)`` and ``(s2,)``.
    """
    t1 = np.asarray(codes1)[np.asarray(rows, dtype=np.int64)]
    t2 = np.asarray(codes2)[np.asarray(cols, dtype=np.int64)]
    pairs = [workload_codes(t1, t2, wl) for wl in workloads]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@dataclass(frozen=True)
class PowerIterationResult:
    """Outcome of :meth:`SliceOperator.power_iteration`.

    Attributes:
        sigma_sq: Raw estimate of ``sigma_max(Q)^2``: the Rayleigh quotient ``||Q v||^2`` of the last unit
            iterate (a lower bound that approaches from below).
        upper: Best Collatz-Wielandt upper bound ``max_i (Q^T Q v)_i / v_i`` seen (valid because ``Q^T Q`` is
            entrywise non-negative and ``v > 0``; exact-arithmetic bound, float32 products may perturb it by
            ~1e-5 relative).
        iterations: Number of ``Q^T Q`` products computed.
        converged: Whether the certified relative gap ``(upper - sigma_sq) / sigma_sq`` fell below ``rtol``.
    """

    sigma_sq: float
    upper: float
    iterations: int
    converged: bool


class SliceOperator:
    """Factorised stacked query operator ``Q`` of a set of workloads on a dense ``s1 x s2`` slice (§2.3).

    Only the code vectors ``a_w`` (``s1``), ``b_w`` (``s2``) and ``C1_w, C2_w`` are stored. Products:

    * :meth:`forward`: ``Q vec(X)`` = concatenation over ``w`` of ``vec(U_w^T X V_w)`` (two-stage
      ``index_add``: rows into ``C1_w x s2`` then columns into ``C1_w x C2_w``);
    * :meth:`transpose`: ``Q^T r`` as an ``(s1, s2)`` matrix ``sum_w R_w[a_w][:, b_w]`` (two gathers);
    * :meth:`normal`: ``Q^T Q vec(X)``.

    Args:
        a_codes: Per workload, row codes ``(s1,)`` in ``0..C1_w-1`` (numpy or torch, integer).
        b_codes: Per workload, column codes ``(s2,)`` in ``0..C2_w-1``.
        c1s: ``C1_w`` per workload.
        c2s: ``C2_w`` per workload.
        device: ``"auto"`` (cuda if available), ``"cpu"``, ``"cuda"``, or a ``torch.device``.
        dtype: Floating dtype of the products (float32 default, float64 for exact tests).

    Raises:
        ValueError: on empty or inconsistent inputs or codes outside ``0..C-1``.
    """

    def __init__(
        self,
        a_codes: Sequence[np.ndarray | torch.Tensor],
        b_codes: Sequence[np.ndarray | torch.Tensor],
        c1s: Sequence[int],
        c2s: Sequence[int],
        device: str | torch.device = "auto",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if not (len(a_codes) == len(b_codes) == len(c1s) == len(c2s)) or len(a_codes) == 0:
            raise ValueError("need the same positive number of a-codes, b-codes, C1 and C2")
        self.device = resolve_device(device)
        self.dtype = dtype
        self.c1s = [int(c) for c in c1s]
        self.c2s = [int(c) for c in c2s]
        self.a = [torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a).to(
            device=self.device, dtype=torch.int64) for a in a_codes]
        self.b = [torch.as_tensor(np.asarray(b) if not isinstance(b, torch.Tensor) else b).to(
            device=self.device, dtype=torch.int64) for b in b_codes]
        self.s1 = int(self.a[0].numel())
        self.s2 = int(self.b[0].numel())
        for a, b, c1, c2 in zip(self.a, self.b, self.c1s, self.c2s, strict=True):
            if a.dim() != 1 or b.dim() != 1 or a.numel() != self.s1 or b.numel() != self.s2:
                raise ValueError("all a-codes must have length s1 and all b-codes length s2")
            if (a.numel() and (int(a.min()) < 0 or int(a.max()) >= c1)) or (
                b.numel() and (int(b.min()) < 0 or int(b.max()) >= c2)
            ):
                raise ValueError("codes outside 0..C-1")
        sizes = [c1 * c2 for c1, c2 in zip(self.c1s, self.c2s, strict=True)]
        self.offsets = [0, *itertools.accumulate(sizes)]

    @classmethod
    def from_tables(
        cls,
        codes1: np.ndarray,
        codes2: np.ndarray,
        rows: np.ndarray,
        cols: np.ndarray,
        workloads: Sequence[Workload],
        device: str | torch.device = "auto",
        dtype: torch.dtype = torch.float32,
    ) -> SliceOperator:
        """Build the operator of ``workloads`` on the slice ``rows x cols`` of the synthetic tables.

        Args:
            codes1: ``(n1s, d1)`` codes of synthetic table 1.
            codes2: ``(n2s, d2)`` codes of synthetic table 2.
            rows: ``(s1,)`` slice row ids.
            cols: ``(s2,)`` slice column ids.
            workloads: Workloads (order of the stacked target).
            device: See the class docstring.
            dtype: See the class docstring.

        Returns:
            A :class:`SliceOperator`.
        """
        a_list, b_list = slice_codes(codes1, codes2, rows, cols, workloads)
        return cls(a_list, b_list, [w.C1 for w in workloads], [w.C2 for w in workloads], device, dtype)

    @property
    def n_workloads(self) -> int:
        """Number of stacked workloads ``q``."""
        return len(self.a)

    @property
    def n_queries(self) -> int:
        """Number of rows of ``Q`` (``sum_w C1_w*C2_w``)."""
        return self.offsets[-1]

    @property
    def shape(self) -> tuple[int, int]:
        """Slice shape ``(s1, s2)``."""
        return (self.s1, self.s2)

    def _as_matrix(self, x: np.ndarray | torch.Tensor) -> torch.Tensor:
        t = torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x
        return t.to(device=self.device, dtype=self.dtype).reshape(self.s1, self.s2)

    def forward(self, x: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``Q vec(X)``: stacked, row-major count matrices ``U_w^T X V_w``.

        Args:
            x: Slice values, shape ``(s1, s2)`` or ``(s1*s2,)``.

        Returns:
            ``(n_queries,)`` tensor (operator dtype and device).
        """
        xm = self._as_matrix(x)
        xt = None
        out = torch.empty(self.n_queries, dtype=self.dtype, device=self.device)
        kw = {"dtype": self.dtype, "device": self.device}
        for w, (a, b, c1, c2) in enumerate(zip(self.a, self.b, self.c1s, self.c2s, strict=True)):
            # Reduce the slice's larger side first (smaller intermediate); both scatters run along
            # the contiguous dimension 0 (index_add_ along dim 1 is slow on CPU for wide outputs).
            if c1 * self.s2 <= self.s1 * c2:
                rows = torch.zeros(c1, self.s2, **kw).index_add_(0, a, xm)          # C1 × s2
                cells = torch.zeros(c2, c1, **kw).index_add_(0, b, rows.t().contiguous()).t()
            else:
                if xt is None:
                    xt = xm.t().contiguous()
                cols = torch.zeros(c2, self.s1, **kw).index_add_(0, b, xt)          # C2 × s1
                cells = torch.zeros(c1, c2, **kw).index_add_(0, a, cols.t().contiguous())
            out[self.offsets[w] : self.offsets[w + 1]] = cells.reshape(-1)
        return out

    def transpose(self, r: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``Q^T r`` reshaped to the slice: ``sum_w R_w[a_w][:, b_w]`` (two gathers per workload).

        Args:
            r: ``(n_queries,)`` stacked values.

        Returns:
            ``(s1, s2)`` tensor.
        """
        rt = (torch.as_tensor(r) if not isinstance(r, torch.Tensor) else r).to(device=self.device, dtype=self.dtype)
        if rt.numel() != self.n_queries:
            raise ValueError(f"expected {self.n_queries} stacked values, got {rt.numel()}")
        out = torch.zeros(self.s1, self.s2, dtype=self.dtype, device=self.device)
        for w, (a, b, c1, c2) in enumerate(zip(self.a, self.b, self.c1s, self.c2s, strict=True)):
            rw = rt[self.offsets[w] : self.offsets[w + 1]].reshape(c1, c2)
            # gather the side that shrinks the intermediate first: s1 × C2 or C1 × s2
            if self.s1 * c2 <= c1 * self.s2:
                out += rw.index_select(0, a).index_select(1, b)
            else:
                out += rw.index_select(1, b).index_select(0, a)
        return out

    def normal(self, x: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``Q^T Q vec(X)`` as an ``(s1, s2)`` tensor."""
        return self.transpose(self.forward(x))

    def code_count_maxima(self) -> list[tuple[int, int]]:
        """Per workload ``(max_c1 n1_w(c1), max_c2 n2_w(c2))``: largest code counts on the slice (§2.2)."""
        out = []
        for a, b, c1, c2 in zip(self.a, self.b, self.c1s, self.c2s, strict=True):
            out.append((int(torch.bincount(a, minlength=c1).max()), int(torch.bincount(b, minlength=c2).max())))
        return out

    def spectral_bounds(self) -> tuple[float, float]:
        """Analytic bounds ``lo <= sigma_max(Q)^2 <= hi`` (§2.3).

        ``Q_w Q_w^T`` is diagonal with entries ``n1_w(c1) n2_w(c2)``, so
        ``sigma_max(Q_w)^2 = max n1_w * max n2_w``; ``lo`` is the max over workloads, ``hi`` the sum (triangle
        inequality on ``sum_w Q_w^T Q_w``).

        Returns:
            ``(lo, hi)`` as floats.
        """
        vals = [float(p * q) for p, q in self.code_count_maxima()]
        return max(vals), sum(vals)

    def power_iteration(
        self,
        rng: np.random.Generator,
        max_iter: int = 50,
        rtol: float = 1e-4,
    ) -> PowerIterationResult:
        """Power iteration on ``Q^T Q`` (§4.2): ``v <- Q^T Q v / ||.||``, estimate ``||Q v||^2``.

        The estimate is the Rayleigh quotient ``v^T Q^T Q v = ||Q v||^2`` (``||v|| = 1``), a lower bound of
        ``sigma_max^2``. The start vector has i.i.d. ``|N(0,1)| + 1e-3`` entries drawn from ``rng`` on the host.
        Because ``Q^T Q`` is entrywise non-negative with a positive diagonal, the iterates stay positive and the
        Collatz-Wielandt quotient ``max_i (Q^T Q v)_i / v_i`` is an upper bound of ``sigma_max^2`` at every
        step. Convergence is declared when this *certified* relative gap is ``<= rtol`` (a relviz refinement
        of a plain relative tolerance: a small change of the Rayleigh quotient alone can be a false
        signal when the two top eigenvalues are nearly equal).

        Args:
            rng: Numpy generator (the only source of randomness).
            max_iter: Maximum number of ``Q^T Q`` products (50 in relviz, §10 item 11).
            rtol: Relative tolerance on the certified gap.

        Returns:
            :class:`PowerIterationResult` with the raw (unclamped) estimate and the best upper bound.
        """
        v = torch.from_numpy(np.abs(rng.standard_normal((self.s1, self.s2))) + 1e-3)
        v = v.to(device=self.device, dtype=self.dtype)
        v /= torch.linalg.vector_norm(v)
        tiny = torch.finfo(self.dtype).tiny
        est, upper = 0.0, math.inf
        for it in range(1, max_iter + 1):
            w = self.normal(v)
            est = max(float((w * v).sum(dtype=torch.float64)), 0.0)
            upper = min(upper, float((w / v.clamp_min(tiny)).max()))
            if est == 0.0:
                return PowerIterationResult(0.0, upper, it, False)
            if upper - est <= rtol * est:
                return PowerIterationResult(est, upper, it, True)
            v = w / torch.linalg.vector_norm(w)
        return PowerIterationResult(est, upper, max_iter, False)

    def sigma_max_sq(
        self,
        rng: np.random.Generator | None = None,
        max_iter: int = 50,
        rtol: float = 1e-4,
        safety: float = 1.02,
    ) -> float:
        """Safe estimate of ``sigma_max(Q)^2`` for the PGD step size (§4.2).

        * Converged power iteration: the estimate clamped into the analytic interval of
          :meth:`spectral_bounds`, times ``safety``, capped at the analytic upper bound (always safe).
        * Otherwise (or ``rng is None``, ``max_iter == 0``): the analytic upper bound, tightened by the
          certified Collatz-Wielandt bound of the power iteration when that is smaller (times ``1 + 1e-3`` to
          absorb float32 rounding of the products). Both are valid upper bounds, so ``eta = 1/L`` stays safe.
        * With a single workload the analytic bounds coincide and the exact value is returned directly.

        Args:
            rng: Generator for the power-iteration start vector.
            max_iter: Power-iteration cap.
            rtol: Power-iteration relative tolerance.
            safety: Multiplicative safety factor on a converged estimate.

        Returns:
            ``sigma^2`` to use in ``L = 2 sigma^2 / m_s^2``.
        """
        lo, hi = self.spectral_bounds()
        if lo == hi or rng is None or max_iter <= 0:
            return hi
        res = self.power_iteration(rng, max_iter=max_iter, rtol=rtol)
        if res.converged:
            return min(safety * min(max(res.sigma_sq, lo), hi), hi)
        return min(hi, res.upper * (1.0 + 1e-3))
