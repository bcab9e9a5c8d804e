"""Cross-table k-way marginals of a relation between two tables, and their error (shared by the
relational methods and the evaluation).

A relation between table 1 and table 2 (a foreign key, child → parent, or a many-to-many link
table) is given as an edge list ``(e1, e2)`` of row ids, and each table as an integer code matrix
over its public domains. A cross-table workload ``w = (S1, S2)`` picks ``|S1| >= 1`` attributes of
table 1 and ``|S2| >= 1`` of table 2 with ``|S1| + |S2| = k`` (Alimohammadi, Wang, Gulati, Srivastava
& Azizan, "Differentially Private Synthetic Data Generation for Relational Databases", Def. 2); its
answer is the distribution of the joined pairs over the ``C1_w * C2_w`` cells of those attributes.
docs/methods/biadjacency.md §2 and §7.1 describe the order, the cell codes and the error metric.

This module provides

* the workload enumeration in a fixed order and mixed-radix (C-order) cell codes;
* marginals of an edge list by ``bincount`` (real data, a synthetic relation, selection scores);
* the evaluation metric: the L1 error over all cross-table k-way workloads, one workload at a
  time; a workload with more than :data:`DENSE_CELL_BUDGET` cells (or far more cells than edges)
  is counted sparsely (``np.unique`` over the occupied cells, a group-by count), never as a dense
  array over the product of its domains (docs/evaluation.md §7.1, "Memory").

It needs numpy only (no torch): the private reads (``relviz.privacy.measure``), the evaluation
(``relviz.evaluate.crosstable``) and every relational method import it, as mbi keeps its marginal
loss apart from its mechanisms. The bi-adjacency method's factorised query operator on a slice is
in ``relviz.relational.biadjacency.workloads``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DENSE_CELL_BUDGET",
    "MarginalErrorReport",
    "Workload",
    "all_marginals",
    "cross_marginal_error",
    "distribution_l1",
    "enumerate_workloads",
    "marginal_counts",
    "marginal_from_edges",
    "mixed_radix_codes",
    "pair_cells",
    "use_dense",
    "workload_codes",
]

DENSE_CELL_BUDGET = 20_000_000
"""Most cells a dense count array over a product of domains may have in the evaluation
(2·10⁷ cells: 160 MB as float64; docs/evaluation.md, "Memory"). Above it — and whenever the cells
outnumber the rows more than :data:`SPARSE_ROWS_FACTOR` times — the counts are sparse group-by
counts over the occupied cells only (``np.unique`` on combined codes): O(rows) memory whatever
the domains. Both paths give the same numbers (up to floating-point summation order)."""

SPARSE_ROWS_FACTOR = 8
"""A dense count array is used only while ``cells <= max(SPARSE_ROWS_FACTOR * rows, 2**16)``:
beyond that most cells are empty and the sparse count is both smaller and faster."""

_INT64_SAFE = 1 << 62  # combined codes stay below this (no int64 overflow)


@dataclass(frozen=True)
class Workload:
    """One cross-table workload ``(S1, S2)`` (docs/methods/biadjacency.md §2.1).

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
    """All cross-table k-way workloads in the fixed order of docs/methods/biadjacency.md §2.1.

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
    """Row-major mixed-radix code of the given columns, first listed column most significant
    (docs/methods/biadjacency.md §2.1).

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
    """Code vectors ``a_w`` (rows of table 1) and ``b_w`` (rows of table 2) of a workload
    (docs/methods/biadjacency.md §2.3).

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
    """Count matrix ``M_w`` of an edge list, flattened row-major (docs/methods/biadjacency.md §2.3).

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
    """Answers ``P_w(B)`` of one workload on a relation given as an edge list
    (docs/methods/biadjacency.md §2.2–§2.4).

    Args:
        codes1: ``(n1, d1)`` integer codes of table 1.
        codes2: ``(n2, d2)`` integer codes of table 2.
        e1: ``(m,)`` row ids into table 1.
        e2: ``(m,)`` row ids into table 2.
        wl: Workload.
        normalise_by: Divisor (the edge count ``m`` of docs/methods/biadjacency.md §2.4); ``None`` uses
            ``len(e1)``; pass 1 for counts.

    Returns:
        ``(C1*C2,)`` float64, cell order of :func:`enumerate_workloads`; sums to ``len(e1) / normalise_by``.

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
    """Answers of many workloads on one edge list (real marginals, selection scores;
    docs/methods/biadjacency.md §3.4).

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


def use_dense(n_cells: int, n_rows: int, dense_budget: int | None = None) -> bool:
    """Whether a count over ``n_cells`` cells of ``n_rows`` rows may be a dense array.

    True when ``n_cells <= dense_budget`` (default :data:`DENSE_CELL_BUDGET`) and
    ``n_cells <= max(SPARSE_ROWS_FACTOR * n_rows, 2**16)`` (docs/evaluation.md, "Memory").
    """
    budget = DENSE_CELL_BUDGET if dense_budget is None else int(dense_budget)
    return n_cells <= budget and n_cells <= max(SPARSE_ROWS_FACTOR * int(n_rows), 1 << 16)


def _compress(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Re-code two code vectors over the values that occur in either (``np.unique``): ``(a', b', n)``."""
    uniq, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    inv = inv.astype(np.int64, copy=False).reshape(-1)
    return inv[: a.size], inv[a.size:], int(uniq.size)


def pair_cells(a_a: np.ndarray, b_a: np.ndarray, a_b: np.ndarray, b_b: np.ndarray,
               n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Joint cell codes ``a * n_b + b`` of two samples, without int64 overflow.

    Args:
        a_a: ``(m_1,)`` first-factor codes of sample 1 (in ``0 … n_a − 1``).
        b_a: ``(m_1,)`` second-factor codes of sample 1 (in ``0 … n_b − 1``).
        a_b: ``(m_2,)`` first-factor codes of sample 2.
        b_b: ``(m_2,)`` second-factor codes of sample 2.
        n_a: Number of first-factor codes.
        n_b: Number of second-factor codes.

    Returns:
        ``(cells_1, cells_2, n_cells)``: int64 codes and the size of their code space. When
        ``n_a * n_b`` would reach 2⁶², each factor is first re-coded over its occurring values
        (then ``n_cells`` is the product of the occurring counts, at most ``(m_1 + m_2)²``).
    """
    if n_a * n_b >= _INT64_SAFE:
        a_a, a_b, n_a = _compress(a_a, a_b)
        b_a, b_b, n_b = _compress(b_a, b_b)
    a_a, b_a = a_a.astype(np.int64, copy=False), b_a.astype(np.int64, copy=False)
    a_b, b_b = a_b.astype(np.int64, copy=False), b_b.astype(np.int64, copy=False)
    return a_a * n_b + b_a, a_b * n_b + b_b, n_a * n_b


def distribution_l1(cells_a: np.ndarray, cells_b: np.ndarray, n_cells: int, *,
                    dense_budget: int | None = None) -> tuple[float, bool]:
    """L1 distance ``Σ_c |p_a(c) − p_b(c)|`` of two samples of cell codes, each normalised by its
    own size (twice the TVD; docs/evaluation.md §7.1 and §7.3).

    Dense (one ``bincount`` of ``n_cells`` per side) when :func:`use_dense` allows it, else sparse:
    ``np.unique`` over the occupied cells of both samples and a ``bincount`` over those, so memory
    is O(``len(cells_a) + len(cells_b)``) whatever ``n_cells``. Cells empty on both sides add 0
    either way, so both paths give the same value (up to summation order, ~1e-16).

    Args:
        cells_a: ``(m_a,)`` non-negative int codes in ``0 … n_cells − 1``.
        cells_b: ``(m_b,)`` codes of the second sample.
        n_cells: Size of the cell space (the product of the domains).
        dense_budget: Largest dense array (cells); default :data:`DENSE_CELL_BUDGET`.

    Returns:
        ``(l1, sparse)``: the distance in [0, 2] and whether the sparse path was taken.

    Raises:
        ValueError: if either sample is empty.
    """
    m_a, m_b = int(cells_a.size), int(cells_b.size)
    if m_a == 0 or m_b == 0:
        raise ValueError("the L1 distance of two distributions needs two non-empty samples")
    if use_dense(n_cells, m_a + m_b, dense_budget):
        pa = np.bincount(cells_a, minlength=n_cells).astype(np.float64) / m_a
        pb = np.bincount(cells_b, minlength=n_cells).astype(np.float64) / m_b
        return float(np.abs(pa - pb).sum()), False
    ia, ib, n = _compress(cells_a, cells_b)
    pa = np.bincount(ia, minlength=n).astype(np.float64) / m_a
    pb = np.bincount(ib, minlength=n).astype(np.float64) / m_b
    return float(np.abs(pa - pb).sum()), True


@dataclass(frozen=True)
class MarginalErrorReport:
    """Result of :func:`cross_marginal_error` (docs/methods/biadjacency.md §7.1).

    Attributes:
        per_workload: ``(|W|,)`` float64 L1 errors ``sum_c |P_w(syn) - P_w(real)|`` (= 2 TV), workload order.
        average: Mean L1 error over all workloads.
        maximum: Max L1 error over all workloads.
        average_pct: ``100 * average``.
        maximum_pct: ``100 * maximum``.
        workloads: The workloads evaluated.
        sparse: ``(|W|,)`` bool: which workloads were counted sparsely (more cells than the dense
            budget allows, see :func:`use_dense`).
    """

    per_workload: np.ndarray
    average: float
    maximum: float
    average_pct: float
    maximum_pct: float
    workloads: tuple[Workload, ...]
    sparse: np.ndarray | None = None


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
    *,
    dense_budget: int | None = None,
) -> MarginalErrorReport:
    """Average and max L1 error over **all** cross-table k-way workloads
    (docs/methods/biadjacency.md §7.1).

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
        k: Marginal order (3 in the bi-adjacency paper).
        dense_budget: Largest dense count array per workload (cells); default
            :data:`DENSE_CELL_BUDGET`. Workloads beyond it (or with far more cells than edges, see
            :func:`use_dense`) are counted sparsely; the numbers are the same.

    Memory: O(m · number of attribute subsets) for the cached side codes plus one workload's
    counts at a time (at most ``dense_budget`` cells), never the sum over workloads of
    ``C1_w · C2_w``, which exceeds 10⁹ cells on TPC-H with day-resolution dates.

    Returns:
        :class:`MarginalErrorReport`.

    Raises:
        ValueError: on empty edge lists or codes outside the domains.
    """
    wls = enumerate_workloads(domains1, domains2, k)
    e1r, e2r = _check_edges(real_e1, real_e2)
    e1s, e2s = _check_edges(syn_e1, syn_e2)
    _normaliser(len(e1r), None)
    _normaliser(len(e1s), None)
    # endpoint codes gathered once; side codes cached per attribute subset (as all_marginals)
    t1r, t2r = np.asarray(real_codes1)[e1r], np.asarray(real_codes2)[e2r]
    t1s, t2s = np.asarray(syn_codes1)[e1s], np.asarray(syn_codes2)[e2s]
    cache1: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
    cache2: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
    err = np.empty(len(wls), dtype=np.float64)
    sparse = np.zeros(len(wls), dtype=bool)
    for i, wl in enumerate(wls):  # one workload at a time: never all marginals in memory
        if wl.S1 not in cache1:
            cache1[wl.S1] = (mixed_radix_codes(t1r, wl.S1, wl.dims1), mixed_radix_codes(t1s, wl.S1, wl.dims1))
        if wl.S2 not in cache2:
            cache2[wl.S2] = (mixed_radix_codes(t2r, wl.S2, wl.dims2), mixed_radix_codes(t2s, wl.S2, wl.dims2))
        (ar, as_), (br, bs) = cache1[wl.S1], cache2[wl.S2]
        cr, cs, n_cells = pair_cells(ar, br, as_, bs, wl.C1, wl.C2)
        err[i], sparse[i] = distribution_l1(cr, cs, n_cells, dense_budget=dense_budget)
    avg = float(err.mean()) if err.size else 0.0
    mx = float(err.max()) if err.size else 0.0
    return MarginalErrorReport(err, avg, mx, 100.0 * avg, 100.0 * mx, tuple(wls), sparse)
