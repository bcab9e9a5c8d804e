"""Cross-table k-way marginal workloads and their factorised query operator (docs/methods/biadjacency.md §2, §7.1).

§ numbers below refer to docs/methods/biadjacency.md; [J] is the bi-adjacency paper (Alimohammadi et al.), [R] its
authors' reference code, as defined there.

A cross-table workload ``w = (S1, S2)`` picks ``|S1| >= 1`` attributes of table 1 and ``|S2| >= 1`` of table 2
with ``|S1| + |S2| = k`` ([J] Def. 2). Its ``C1_w * C2_w`` queries are linear in ``vec(B)`` ([J] Lemma 1), and
the stacked query matrix factorises through one-hot code matrices (§2.3):

    Q_w vec(X) = vec(U_w^T X V_w),   (Q_w^T r)[i*n2 + j] = R_w[a_w[i], b_w[j]].

This module provides

* the workload enumeration in the fixed order of §2.1 and mixed-radix (C-order) cell codes;
* marginals of an edge list by ``bincount`` (real data, the full synthetic relation, EM scores);
* :class:`SliceOperator`, the factorised operator on a dense slice ``X`` (forward, transpose, normal products,
  analytic spectral bounds and a capped power iteration, §2.3 and §4.2) in torch;
* the evaluation metric of §7.1 (L1 error over all cross-table k-way workloads).

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

from relviz.relational.biadjacency.pgd import resolve_device

__all__ = [
    "MarginalErrorReport",
    "PowerIterationResult",
    "SliceOperator",
    "Workload",
    "all_marginals",
    "cross_marginal_error",
    "enumerate_workloads",
    "marginal_counts",
    "marginal_from_edges",
    "mixed_radix_codes",
    "slice_codes",
    "workload_codes",
]


@dataclass(frozen=True)
class Workload:
    """One cross-table workload ``(S1, S2)`` (§2.1).

    Attributes:
        S1: Column indices of table 1 (schema order, increasing).
        S2: Column indices of table 2.
        dims1: Domain sizes of the columns in ``S1``.
        dims2: Domain sizes of the columns in ``S2``.
    """

    S1: tuple[int, ...]
    S2: tuple[int, ...]
    dims1: tuple[int, ...]
    dims2: tuple[int, ...]

    @property
    def C1(self) -> int:
        """Number of table-1 cells ``prod(dims1)``."""
        return math.prod(self.dims1)

    @property
    def C2(self) -> int:
        """Number of table-2 cells ``prod(dims2)``."""
        return math.prod(self.dims2)

    @property
    def size(self) -> int:
        """Number of queries ``C_w = C1 * C2``."""
        return self.C1 * self.C2


def enumerate_workloads(domains1: Sequence[int], domains2: Sequence[int], k: int = 3) -> list[Workload]:
    """All cross-table k-way workloads in the fixed order of §2.1.

    Order: for ``k1 = 1..k-1``; for ``S1`` in ``combinations(range(d1), k1)``; for ``S2`` in
    ``combinations(range(d2), k - k1)``. For a self-relation pass the same domains twice (the same column may
    appear on both sides). Counts for ``k = 3``: 513 for MovieLens (18 + 3 attributes), 648 for IPUMS (9 + 9).

    Args:
        domains1: Domain size of every attribute of table 1 (schema column order), each ``>= 1``.
        domains2: Same for table 2.
        k: Marginal order, ``>= 2``.

    Returns:
        List of :class:`Workload`.

    Raises:
        ValueError: if ``k < 2`` or a domain size is not a positive integer.
    """
    if k < 2:
        raise ValueError("cross-table workloads need k >= 2")
    d1 = [int(d) for d in domains1]
    d2 = [int(d) for d in domains2]
    if any(d < 1 for d in d1 + d2):
        raise ValueError("domain sizes must be positive integers")
    out: list[Workload] = []
    for k1 in range(1, k):
        for s1 in itertools.combinations(range(len(d1)), k1):
            for s2 in itertools.combinations(range(len(d2)), k - k1):
                out.append(Workload(s1, s2, tuple(d1[j] for j in s1), tuple(d2[j] for j in s2)))
    return out


def mixed_radix_codes(codes: np.ndarray, columns: Sequence[int], dims: Sequence[int]) -> np.ndarray:
    """Row-major mixed-radix code of the given columns (first listed column most significant; §2.1).

    Equals ``np.ravel_multi_index(codes[:, columns].T, dims)`` (C order).

    Args:
        codes: Integer code matrix ``(n, d)``; column ``j`` holds values in ``0..dims_j - 1``.
        columns: Column indices to combine.
        dims: Domain sizes of those columns.

    Returns:
        ``(n,)`` int64 codes in ``0..prod(dims) - 1``.

    Raises:
        ValueError: if a code is outside its domain or ``codes`` is not 2-D.
    """
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError("codes must be a 2-D (n, d) integer matrix")
    out = np.zeros(codes.shape[0], dtype=np.int64)
    for col, dim in zip(columns, dims, strict=True):
        c = codes[:, col].astype(np.int64, copy=False)
        if c.size and (c.min() < 0 or c.max() >= dim):
            raise ValueError(f"codes of column {col} are outside the domain 0..{dim - 1}")
        out = out * int(dim) + c
    return out


def workload_codes(codes1: np.ndarray, codes2: np.ndarray, wl: Workload) -> tuple[np.ndarray, np.ndarray]:
    """Code vectors ``a_w`` (rows of table 1) and ``b_w`` (rows of table 2) of a workload (§2.3).

    Args:
        codes1: ``(n1, d1)`` integer codes of table 1 (or of the slice rows).
        codes2: ``(n2, d2)`` integer codes of table 2 (or of the slice columns).
        wl: The workload.

    Returns:
        ``(a_w, b_w)``, int64 arrays of shapes ``(n1,)`` and ``(n2,)``.

    Raises:
        ValueError: if a code is outside its domain.
    """
    return mixed_radix_codes(codes1, wl.S1, wl.dims1), mixed_radix_codes(codes2, wl.S2, wl.dims2)


def marginal_counts(a: np.ndarray, b: np.ndarray, c1: int, c2: int, e1: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """Count matrix ``M_w`` of an edge list, flattened row-major (§2.3, on an edge list).

    ``M_w = bincount(a[e1] * C2 + b[e2], minlength=C1*C2)``; O(m) time, O(C1*C2) memory.

    Args:
        a: Row codes of table 1, ``(n1,)`` int.
        b: Row codes of table 2, ``(n2,)`` int.
        c1: ``C1_w``.
        c2: ``C2_w``.
        e1: Edge endpoints in table 1, ``(m,)`` int.
        e2: Edge endpoints in table 2, ``(m,)`` int.

    Returns:
        ``(C1*C2,)`` float64 counts.
    """
    cells = a[e1] * c2 + b[e2]
    return np.bincount(cells, minlength=c1 * c2).astype(np.float64)


def _normaliser(m_edges: int, normalise_by: float | None) -> float:
    if normalise_by is None:
        if m_edges == 0:
            raise ValueError("cannot normalise the marginal of an empty edge list; pass normalise_by")
        return float(m_edges)
    if normalise_by <= 0:
        raise ValueError("normalise_by must be positive")
    return float(normalise_by)


def marginal_from_edges(
    codes1: np.ndarray,
    codes2: np.ndarray,
    e1: np.ndarray,
    e2: np.ndarray,
    wl: Workload,
    normalise_by: float | None = None,
) -> np.ndarray:
    """Answers ``P_w(B)`` of one workload on a relation given as an edge list (§2.2–§2.4).

    Args:
        codes1: ``(n1, d1)`` integer codes of table 1.
        codes2: ``(n2, d2)`` integer codes of table 2.
        e1: ``(m,)`` row ids into table 1.
        e2: ``(m,)`` row ids into table 2.
        wl: Workload.
        normalise_by: Divisor (the edge count ``m`` of §2.4); ``None`` uses ``len(e1)``; pass 1 for counts.

    Returns:
        ``(C1*C2,)`` float64, cell order of §2.1; sums to ``len(e1) / normalise_by``.

    Raises:
        ValueError: on codes outside their domain, mismatched edge arrays or an empty edge list without
            ``normalise_by``.
    """
    e1, e2 = _check_edges(e1, e2)
    a, b = workload_codes(codes1, codes2, wl)
    return marginal_counts(a, b, wl.C1, wl.C2, e1, e2) / _normaliser(len(e1), normalise_by)


def _check_edges(e1: np.ndarray, e2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    e1 = np.asarray(e1, dtype=np.int64).reshape(-1)
    e2 = np.asarray(e2, dtype=np.int64).reshape(-1)
    if e1.shape != e2.shape:
        raise ValueError("edge endpoint arrays must have the same length")
    if e1.size and (e1.min() < 0 or e2.min() < 0):
        raise ValueError("edge ids must be non-negative")
    return e1, e2


def all_marginals(
    codes1: np.ndarray,
    codes2: np.ndarray,
    e1: np.ndarray,
    e2: np.ndarray,
    workloads: Sequence[Workload],
    normalise_by: float | None = None,
) -> list[np.ndarray]:
    """Answers of many workloads on one edge list (precomputation of real marginals, EM scoring; §3.4).

    Gathers the endpoint codes once (``codes1[e1]``, ``codes2[e2]``) and caches the side codes per attribute
    subset, so the cost is O(|W| * m) with small constants.

    Args:
        codes1: ``(n1, d1)`` integer codes of table 1.
        codes2: ``(n2, d2)`` integer codes of table 2.
        e1: ``(m,)`` row ids into table 1.
        e2: ``(m,)`` row ids into table 2.
        workloads: Workloads, in the order of the returned list.
        normalise_by: As in :func:`marginal_from_edges`.

    Returns:
        List of ``(C1_w*C2_w,)`` float64 arrays.

    Raises:
        ValueError: as :func:`marginal_from_edges`.
    """
    e1, e2 = _check_edges(e1, e2)
    norm = _normaliser(len(e1), normalise_by)
    t1 = np.asarray(codes1)[e1]
    t2 = np.asarray(codes2)[e2]
    cache1: dict[tuple[int, ...], np.ndarray] = {}
    cache2: dict[tuple[int, ...], np.ndarray] = {}
    out = []
    for wl in workloads:
        if wl.S1 not in cache1:
            cache1[wl.S1] = mixed_radix_codes(t1, wl.S1, wl.dims1)
        if wl.S2 not in cache2:
            cache2[wl.S2] = mixed_radix_codes(t2, wl.S2, wl.dims2)
        cells = cache1[wl.S1] * wl.C2 + cache2[wl.S2]
        out.append(np.bincount(cells, minlength=wl.size).astype(np.float64) / norm)
    return out


@dataclass(frozen=True)
class MarginalErrorReport:
    """Result of :func:`cross_marginal_error` (§7.1).

    Attributes:
        per_workload: ``(|W|,)`` float64 L1 errors ``sum_c |P_w(syn) - P_w(real)|`` (= 2 TV), workload order.
        average: Mean L1 error over all workloads.
        maximum: Max L1 error over all workloads.
        average_pct: ``100 * average``.
        maximum_pct: ``100 * maximum``.
        workloads: The workloads evaluated.
    """

    per_workload: np.ndarray
    average: float
    maximum: float
    average_pct: float
    maximum_pct: float
    workloads: tuple[Workload, ...]


def cross_marginal_error(
    real_codes1: np.ndarray,
    real_codes2: np.ndarray,
    real_e1: np.ndarray,
    real_e2: np.ndarray,
    syn_codes1: np.ndarray,
    syn_codes2: np.ndarray,
    syn_e1: np.ndarray,
    syn_e2: np.ndarray,
    domains1: Sequence[int],
    domains2: Sequence[int],
    k: int = 3,
) -> MarginalErrorReport:
    """Average and max L1 error over **all** cross-table k-way workloads (§7.1).

    ``err_w = sum_c |P_w(B_syn on D_syn) - P_w(B_real on D_real)|``, real marginals normalised by the (clipped)
    real edge count, synthetic ones by the synthetic edge count. For a self-relation pass the same code matrix
    as table 1 and table 2.

    Args:
        real_codes1: ``(n1, d1)`` integer codes of real table 1.
        real_codes2: ``(n2, d2)`` integer codes of real table 2.
        real_e1: Real (clipped) edges, table-1 ids ``(m,)``.
        real_e2: Real edges, table-2 ids ``(m,)``.
        syn_codes1: ``(n1s, d1)`` codes of synthetic table 1.
        syn_codes2: ``(n2s, d2)`` codes of synthetic table 2.
        syn_e1: Synthetic edges, table-1 ids ``(m_syn,)``.
        syn_e2: Synthetic edges, table-2 ids ``(m_syn,)``.
        domains1: Public domain sizes of table 1.
        domains2: Public domain sizes of table 2.
        k: Marginal order (3 in [J]).

    Returns:
        :class:`MarginalErrorReport`.

    Raises:
        ValueError: on empty edge lists or codes outside the domains.
    """
    wls = enumerate_workloads(domains1, domains2, k)
    real = all_marginals(real_codes1, real_codes2, real_e1, real_e2, wls)
    syn = all_marginals(syn_codes1, syn_codes2, syn_e1, syn_e2, wls)
    err = np.array([np.abs(p - q).sum() for p, q in zip(real, syn, strict=True)], dtype=np.float64)
    avg = float(err.mean()) if err.size else 0.0
    mx = float(err.max()) if err.size else 0.0
    return MarginalErrorReport(err, avg, mx, 100.0 * avg, 100.0 * mx, tuple(wls))


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
