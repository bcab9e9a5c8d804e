"""Batched M:N slices: ``S`` disjoint slices optimised as one ``(S, s1, s2)`` tensor.

§ numbers below refer to docs/methods/biadjacency.md (batched slices: §8).

To keep an accelerator busy, ``S`` disjoint slices are drawn at once — a random partition of
rows into ``S`` row blocks and of columns into ``S`` column blocks, paired, each seeded with its
own guaranteed edges — and solved together: one batched forward/transpose product per workload
(codes offset by the slice index, so every scatter and gather is a single kernel), per-slice step
sizes (batched power iteration with its certified Collatz–Wielandt bound), per-slice projections
and UBS rounding. Disjointness makes reinsertion conflict-free.

Semantics differ slightly from one-slice-at-a-time (§8): slices of one batch do not see each
other's updates, and the workloads optimised are chosen once per batch. ``batch_slices=1`` is the
reference mode. Many-to-many only (1:N slices have data-dependent shapes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from relviz.marginals import Workload, mixed_radix_codes
from relviz.relational.biadjacency.device import resolve_device
from relviz.relational.biadjacency.projection import project_capped_simplex

__all__ = ["BatchedSliceOperator", "BatchSlices", "choose_batch_mn", "pgd_mn_batched"]


@dataclass(frozen=True)
class BatchSlices:
    """``S`` disjoint equally shaped M:N slices.

    Attributes:
        rows: ``(S, s1)`` global row ids; cols: ``(S, s2)`` global column ids.
        m_s: ``(S,)`` edges of ``E`` inside each slice (a slice with 0 is left unchanged).
        current: per slice, the local flat indices of its current edges.
        inside: ``(|E|,)`` bool mask of the edges inside any slice of the batch.
    """

    rows: np.ndarray
    cols: np.ndarray
    m_s: np.ndarray
    current: tuple[np.ndarray, ...]
    inside: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.rows.shape[0], self.rows.shape[1], self.cols.shape[1])


def choose_batch_mn(e1: np.ndarray, e2: np.ndarray, n1s: int, n2s: int, s1: int, s2: int, S: int,
                    rng: np.random.Generator, guaranteed_frac: float = 0.2) -> BatchSlices:
    """Draw ``S`` disjoint ``s1 × s2`` slices (``S`` is reduced to what the tables allow).

    Each slice is first seeded with up to ``⌊g·min(s1, s2)⌋`` edges of ``E`` whose endpoints no
    other slice has taken, then filled with random unused rows and columns.
    """
    S = max(1, min(S, n1s // s1, n2s // s2))
    row_owner = np.full(n1s, -1, dtype=np.int64)
    col_owner = np.full(n2s, -1, dtype=np.int64)
    rows = [[] for _ in range(S)]
    cols = [[] for _ in range(S)]
    n_g = math.floor(guaranteed_frac * min(s1, s2))
    if n_g and e1.size:
        order = rng.permutation(e1.size)
        counts = np.zeros(S, dtype=np.int64)
        k = 0
        for idx in order[: min(e1.size, 4 * S * n_g)]:  # a bounded scan: seeding is best-effort
            i, j = e1[idx], e2[idx]
            if row_owner[i] >= 0 or col_owner[j] >= 0:
                continue
            while counts[k % S] >= n_g and counts.min() < n_g:
                k += 1
            s = k % S
            if counts[s] >= n_g:
                break
            row_owner[i], col_owner[j] = s, s
            rows[s].append(i)
            cols[s].append(j)
            counts[s] += 1
            k += 1
    free_rows = rng.permutation(np.flatnonzero(row_owner < 0))
    free_cols = rng.permutation(np.flatnonzero(col_owner < 0))
    r_at = c_at = 0
    out_r, out_c = np.empty((S, s1), dtype=np.int64), np.empty((S, s2), dtype=np.int64)
    for s in range(S):
        need_r, need_c = s1 - len(rows[s]), s2 - len(cols[s])
        out_r[s] = np.concatenate([np.asarray(rows[s], dtype=np.int64), free_rows[r_at:r_at + need_r]])
        out_c[s] = np.concatenate([np.asarray(cols[s], dtype=np.int64), free_cols[c_at:c_at + need_c]])
        r_at += need_r
        c_at += need_c
    row_owner[:] = -1
    col_owner[:] = -1
    row_pos = np.full(n1s, -1, dtype=np.int64)
    col_pos = np.full(n2s, -1, dtype=np.int64)
    for s in range(S):
        row_owner[out_r[s]] = s
        col_owner[out_c[s]] = s
        row_pos[out_r[s]] = np.arange(s1)
        col_pos[out_c[s]] = np.arange(s2)
    own_r, own_c = row_owner[e1], col_owner[e2]
    inside = (own_r >= 0) & (own_r == own_c)
    current = tuple((row_pos[e1[inside & (own_r == s)]] * s2 + col_pos[e2[inside & (own_r == s)]])
                    .astype(np.int64) for s in range(S))
    m_s = np.array([c.size for c in current], dtype=np.int64)
    return BatchSlices(out_r, out_c, m_s, current, inside)


class BatchedSliceOperator:
    """The factorised query operator (§2.3) of the same workloads on ``S`` slices at once.

    Args:
        syn1, syn2: ``(n1s, d1)`` / ``(n2s, d2)`` synthetic codes.
        rows, cols: ``(S, s1)`` / ``(S, s2)`` slice ids.
        workloads: The workloads (stacked in this order).
        device, dtype: As :class:`~relviz.relational.biadjacency.workloads.SliceOperator`.
    """

    def __init__(self, syn1: np.ndarray, syn2: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 workloads: Sequence[Workload], device: str | torch.device = "auto",
                 dtype: torch.dtype = torch.float32) -> None:
        self.device = resolve_device(device)
        self.dtype = dtype
        self.S, self.s1 = rows.shape
        self.s2 = cols.shape[1]
        self.c1s = [w.C1 for w in workloads]
        self.c2s = [w.C2 for w in workloads]
        self.a, self.b = [], []
        off_r = np.arange(self.S)[:, None]
        for w in workloads:
            a = mixed_radix_codes(syn1[rows.reshape(-1)], w.S1, w.dims1).reshape(self.S, self.s1)
            b = mixed_radix_codes(syn2[cols.reshape(-1)], w.S2, w.dims2).reshape(self.S, self.s2)
            # offset codes: slice s uses rows s·C1 … (s+1)·C1 − 1 of a stacked (S·C1) space
            self.a.append(torch.as_tensor(a + off_r * w.C1, device=self.device))
            self.b.append(torch.as_tensor(b + off_r * w.C2, device=self.device))
        sizes = [c1 * c2 for c1, c2 in zip(self.c1s, self.c2s)]
        self.offsets = [0, *np.cumsum(sizes).tolist()]

    @property
    def n_queries(self) -> int:
        return int(self.offsets[-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(S, s1, s2)`` → ``(S, n_queries)``: each slice's stacked count matrices."""
        S, s1, s2 = self.S, self.s1, self.s2
        x = x.to(device=self.device, dtype=self.dtype)
        flat = x.reshape(S * s1, s2)
        out = torch.empty(S, self.n_queries, dtype=self.dtype, device=self.device)
        for w, (a, b, c1, c2) in enumerate(zip(self.a, self.b, self.c1s, self.c2s)):
            rows = torch.zeros(S * c1, s2, dtype=self.dtype, device=self.device)
            rows.index_add_(0, a.reshape(-1), flat)                                # (S·C1, s2)
            rt = rows.reshape(S, c1, s2).transpose(1, 2).reshape(S * s2, c1)       # (S·s2, C1)
            cells = torch.zeros(S * c2, c1, dtype=self.dtype, device=self.device)
            cells.index_add_(0, b.reshape(-1), rt.contiguous())                    # (S·C2, C1)
            out[:, self.offsets[w]:self.offsets[w + 1]] = (
                cells.reshape(S, c2, c1).transpose(1, 2).reshape(S, c1 * c2))
        return out

    def transpose(self, r: torch.Tensor) -> torch.Tensor:
        """``(S, n_queries)`` → ``(S, s1, s2)``: ``Σ_w R_w[a_w][:, b_w]`` per slice."""
        S, s1, s2 = self.S, self.s1, self.s2
        r = r.to(device=self.device, dtype=self.dtype)
        out = torch.zeros(S, s1, s2, dtype=self.dtype, device=self.device)
        for w, (a, b, c1, c2) in enumerate(zip(self.a, self.b, self.c1s, self.c2s)):
            rw = r[:, self.offsets[w]:self.offsets[w + 1]].reshape(S * c1, c2)
            g = rw.index_select(0, a.reshape(-1)).reshape(S, s1, c2)               # (S, s1, C2)
            local_b = b - torch.arange(S, device=self.device)[:, None] * c2
            out += torch.gather(g, 2, local_b[:, None, :].expand(S, s1, s2))
        return out

    def sigma_max_sq(self, rng: np.random.Generator, max_iter: int = 50, rtol: float = 1e-4,
                     safety: float = 1.02) -> np.ndarray:
        """Per-slice safe ``σ_max(Q)²`` (§4.2): batched power iteration; a converged estimate
        × ``safety`` within the analytic bounds, else the certified Collatz–Wielandt bound."""
        S = self.S
        his, los = np.zeros(S), np.zeros(S)
        for a, b, c1, c2 in zip(self.a, self.b, self.c1s, self.c2s):
            ca = torch.bincount(a.reshape(-1), minlength=S * c1).reshape(S, c1).max(1).values
            cb = torch.bincount(b.reshape(-1), minlength=S * c2).reshape(S, c2).max(1).values
            prod = (ca * cb).double().cpu().numpy()
            his += prod
            los = np.maximum(los, prod)
        v = torch.as_tensor(np.abs(rng.standard_normal((S, self.s1, self.s2))) + 1e-3,
                            dtype=self.dtype, device=self.device)
        v /= torch.linalg.vector_norm(v.reshape(S, -1), dim=1)[:, None, None]
        est, upper = np.zeros(S), np.full(S, np.inf)
        done = np.zeros(S, dtype=bool)
        for _ in range(max_iter):
            w = self.transpose(self.forward(v))
            est = (w * v).reshape(S, -1).sum(1).double().cpu().numpy()
            cw = (w / v.clamp_min(torch.finfo(self.dtype).tiny)).reshape(S, -1).max(1).values
            upper = np.minimum(upper, cw.double().cpu().numpy())
            done = upper - est <= rtol * np.maximum(est, 1e-300)
            if done.all():
                break
            v = w / torch.linalg.vector_norm(w.reshape(S, -1), dim=1).clamp_min(1e-30)[:, None, None]
        safe = np.where(done, np.minimum(safety * np.clip(est, los, his), his),
                        np.minimum(his, upper * (1 + 1e-3)))
        return np.maximum(safe, 1e-30)


def pgd_mn_batched(op: BatchedSliceOperator, targets: np.ndarray, m_s: np.ndarray, *,
                   rng: np.random.Generator, iters: int = 100) -> np.ndarray:
    """Batched PGD (§4.1–§4.4) on ``S`` slices: per-slice ``η = 1/L``, projection and
    random feasible start. Slices with ``m_s = 0`` stay 0.

    Args:
        op: The batched operator.
        targets: ``(S, n_queries)`` per-slice targets.
        m_s: ``(S,)`` edges per slice.

    Returns:
        ``(S, s1, s2)`` float64 feasible iterates.
    """
    S, s1, s2 = op.S, op.s1, op.s2
    active = m_s > 0
    x = np.zeros((S, s1 * s2))
    for s in np.flatnonzero(active):
        x[s, rng.choice(s1 * s2, size=int(m_s[s]), replace=False)] = 1.0
    sig = op.sigma_max_sq(rng)
    ms = np.maximum(m_s, 1).astype(float)
    step = (ms**2 / (2 * sig)) * (2 / ms)  # η · 2/m_s with η = 1/L, L = 2σ²/m_s²
    tgt = torch.as_tensor(targets, dtype=op.dtype, device=op.device)
    msf = torch.as_tensor(ms, dtype=op.dtype, device=op.device)[:, None]
    roots: list[list[float]] = [[] for _ in range(S)]
    for _ in range(iters):
        xt = torch.as_tensor(x.reshape(S, s1, s2), dtype=op.dtype, device=op.device)
        r = op.forward(xt) / msf - tgt
        g = op.transpose(r).double().cpu().numpy().reshape(S, -1)
        v = x - step[:, None] * g
        for s in np.flatnonzero(active):
            x[s] = project_capped_simplex(v[s], float(m_s[s]), y0=roots[s][0] if roots[s] else None,
                                          root=roots[s])
    return x.reshape(S, s1, s2)
