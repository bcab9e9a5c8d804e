"""Projected gradient descent on one slice of the bi-adjacency matrix ([J] §4, Alg. 2 and Alg. 7).

§ numbers below refer to docs/methods/biadjacency.md (mainly §4); [J] and [R] as defined there.

Problem (§3.9; [J] Eq. 5-6 on a slice): ``min_x f(x) = ||(1/m_s) Q x - a_hat||^2`` over a dense ``s1 x s2``
slice, where ``Q`` is the factorised stacked query operator
(:class:`~relviz.relational.biadjacency.workloads.SliceOperator`), subject to

* many-to-many: ``0 <= x <= u`` and ``sum(x) = m_s`` (capped-simplex projection, §4.3, [J] Thm 2);
* one-to-many: every row (child) on the probability simplex (row-wise simplex projection, §4.5, [J] App. C).

Step size ``eta = 1/L`` with ``L = 2 sigma_max(Q)^2 / m_s^2`` ([J] Thm 3), so ``f`` is non-increasing. Products
run in the operator's dtype (float32 by default), the iterate and the projection in float64.

Why relviz writes this itself: no well-kept library implements the relational-synthesis algorithms of [J]; a
generic solver would need ``Q`` explicitly (``s1*s2`` non-zeros per workload) and would not give the exact
feasibility that the rounding step (UBS) needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from relviz.relational.biadjacency.projection import (
    project_capped_simplex,
    project_rows_simplex,
    sum_tolerance,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from relviz.relational.biadjacency.workloads import SliceOperator

__all__ = [
    "PGDResult",
    "pgd_mn",
    "pgd_otm",
    "random_start_mn",
    "random_start_otm",
]


@dataclass(frozen=True)
class PGDResult:
    """Result of :func:`pgd_mn` / :func:`pgd_otm`.

    Attributes:
        x: Final feasible iterate, ``(s1, s2)`` float64 numpy array.
        objective: ``f(x_0), f(x_1), ..., f(x_T)``, float64 numpy array of length ``iterations + 1``.
        eta: Step size used (``1/L``).
        lipschitz: ``L = 2 sigma^2 / m_s^2`` actually used.
        sigma_max_sq: ``sigma^2`` used (safe estimate, §4.2).
        iterations: Number of PGD steps performed.
        stopped_early: Whether the optional early stop fired.
    """

    x: np.ndarray
    objective: np.ndarray
    eta: float
    lipschitz: float
    sigma_max_sq: float
    iterations: int
    stopped_early: bool


def _forbidden_tensor(forbidden: np.ndarray | torch.Tensor | None, shape: tuple[int, int],
                      device: torch.device) -> torch.Tensor | None:
    if forbidden is None:
        return None
    fb = forbidden if isinstance(forbidden, torch.Tensor) else torch.from_numpy(np.asarray(forbidden, dtype=bool))
    fb = fb.to(device=device, dtype=torch.bool).reshape(shape)
    return fb if bool(fb.any()) else None


def random_start_mn(s1: int, s2: int, m_s: int, rng: np.random.Generator,
                    forbidden: np.ndarray | None = None) -> np.ndarray:
    """Random feasible M:N start: indicator of ``m_s`` uniformly random allowed cells (§4.4, [R]).

    Args:
        s1: Slice rows.
        s2: Slice columns.
        m_s: Number of ones.
        rng: Numpy generator.
        forbidden: Optional ``(s1, s2)`` bool mask of cells fixed to 0.

    Returns:
        ``(s1, s2)`` float64 0/1 matrix with exactly ``m_s`` ones, none on a forbidden cell.

    Raises:
        ValueError: if fewer than ``m_s`` cells are allowed.
    """
    allowed = np.arange(s1 * s2) if forbidden is None else np.flatnonzero(~np.asarray(forbidden, bool).reshape(-1))
    if not 0 <= m_s <= allowed.size:
        raise ValueError(f"cannot place {m_s} ones in {allowed.size} allowed cells")
    x = np.zeros(s1 * s2, dtype=np.float64)
    x[allowed[rng.choice(allowed.size, size=m_s, replace=False)]] = 1.0
    return x.reshape(s1, s2)


def random_start_otm(s1: int, s2: int, rng: np.random.Generator,
                     forbidden: np.ndarray | None = None) -> np.ndarray:
    """Random feasible 1:N start: every row a uniformly random allowed one-hot vector (§4.5, [R]).

    Args:
        s1: Slice rows (children).
        s2: Slice columns (parents).
        rng: Numpy generator.
        forbidden: Optional ``(s1, s2)`` bool mask of cells fixed to 0.

    Returns:
        ``(s1, s2)`` float64 matrix, one 1 per row.

    Raises:
        ValueError: if a row has no allowed cell.
    """
    keys = rng.random((s1, s2))
    if forbidden is not None:
        fb = np.asarray(forbidden, dtype=bool).reshape(s1, s2)
        if fb.all(axis=1).any():
            raise ValueError("a row has every cell forbidden")
        keys[fb] = -1.0
    x = np.zeros((s1, s2), dtype=np.float64)
    x[np.arange(s1), np.argmax(keys, axis=1)] = 1.0
    return x


def _numpy_float64_side(device: torch.device) -> bool:
    """Whether the float64 part of a PGD step (axpy + projection) runs in numpy (CPU) rather than torch."""
    return device.type == "cpu"


def _run_pgd(
    op: SliceOperator,
    target: np.ndarray | torch.Tensor,
    m_s: float,
    x0: torch.Tensor,
    project: Callable[[Any], Any],
    iters: int,
    sigma_sq: float,
    early_stop: bool,
) -> PGDResult:
    if sigma_sq <= 0:
        raise ValueError("sigma_max^2 must be positive (no cell of the slice is covered by any query?)")
    tgt = torch.as_tensor(np.asarray(target) if not isinstance(target, torch.Tensor) else target)
    tgt = tgt.to(device=op.device, dtype=op.dtype).reshape(-1)
    if tgt.numel() != op.n_queries:
        raise ValueError(f"target has {tgt.numel()} entries, operator has {op.n_queries} queries")
    lip = 2.0 * sigma_sq / float(m_s) ** 2
    eta = 1.0 / lip
    step_scale = eta * 2.0 / m_s
    on_cpu = _numpy_float64_side(op.device)
    trace = torch.zeros(iters + 1, dtype=torch.float64, device=op.device)
    x = x0
    done = 0
    stopped = False
    for t in range(iters + 1):
        r = op.forward(x) / m_s - tgt
        trace[t] = (r.to(torch.float64) ** 2).sum()
        if t == iters:
            break
        if early_stop and t >= 10:
            f_old, f_new = trace[t - 10].item(), trace[t].item()
            if f_old - f_new < 1e-6 * f_old:
                stopped = True
                break
        g = op.transpose(r)  # grad f = (2/m_s) Q^T r, products in the operator dtype
        if on_cpu:  # float64 side in numpy: large fresh float64 torch allocations are slow on CPU
            v = np.multiply(g.numpy(), -step_scale, dtype=np.float64)
            v += x.numpy()
            x = torch.from_numpy(np.asarray(project(v)))
        else:
            x = project(x - step_scale * g.to(torch.float64))
        done = t + 1
    obj = trace[: done + 1].cpu().numpy()
    return PGDResult(x.cpu().numpy(), obj, eta, lip, float(sigma_sq), done, stopped)


def pgd_mn(
    op: SliceOperator,
    target: np.ndarray | torch.Tensor,
    m_s: int,
    *,
    rng: np.random.Generator,
    iters: int = 100,
    x0: np.ndarray | torch.Tensor | None = None,
    forbidden: np.ndarray | torch.Tensor | None = None,
    sigma_max_sq: float | None = None,
    early_stop: bool = False,
    power_max_iter: int = 50,
    power_rtol: float = 1e-4,
    safety: float = 1.02,
) -> PGDResult:
    """PGD for a many-to-many slice (§4.1–§4.4, [J] Alg. 2).

    ``x_{t+1} = Proj_Omega(x_t - eta grad f(x_t))`` with ``Omega = {0 <= x <= u, sum x = m_s}``, ``u = 0`` on
    forbidden cells and 1 elsewhere, ``eta = 1/L``, ``L = 2 sigma^2/m_s^2``.

    Args:
        op: Slice operator of the chosen workloads (its device/dtype are used for the products).
        target: ``(op.n_queries,)`` stacked noisy answers ``a_hat`` (same workload order as ``op``).
        m_s: Number of synthetic edges inside the slice (``>= 1``).
        rng: Numpy generator for the random start and the power-iteration start.
        iters: Number of PGD steps (100 default).
        x0: Optional start (warm start: the current slice of ``B_syn``); projected onto ``Omega`` first. Default:
            indicator of ``m_s`` uniformly random allowed cells.
        forbidden: Optional ``(s1, s2)`` bool mask of cells fixed to 0 (self-relation diagonal).
        sigma_max_sq: Precomputed ``sigma_max(Q)^2``; default :meth:`SliceOperator.sigma_max_sq`.
        early_stop: Stop when ``f`` decreased by less than ``1e-6`` relative over 10 iterations.
        power_max_iter: Power-iteration cap (§4.2).
        power_rtol: Power-iteration relative tolerance.
        safety: Safety factor on the power-iteration estimate.

    Returns:
        :class:`PGDResult`; ``x`` satisfies ``0 <= x <= u`` exactly and ``|sum x - m_s| <= 1e-9 max(1, m_s)``.

    Raises:
        ValueError: on inconsistent shapes, ``m_s`` outside ``[1, #allowed cells]`` or a zero operator.
    """
    s1, s2 = op.shape
    fb = _forbidden_tensor(forbidden, (s1, s2), op.device)
    n_allowed = s1 * s2 - (int(fb.sum()) if fb is not None else 0)
    if not 1 <= m_s <= n_allowed:
        raise ValueError(f"m_s={m_s} must be in [1, {n_allowed}]")
    upper = None if fb is None else (~fb).to(torch.float64)
    if x0 is None:
        start = random_start_mn(s1, s2, m_s, rng, None if fb is None else fb.cpu().numpy())
        x = torch.from_numpy(start).to(op.device)
    else:
        x0t = torch.as_tensor(np.asarray(x0) if not isinstance(x0, torch.Tensor) else x0)
        x = x0t.to(device=op.device, dtype=torch.float64).reshape(s1, s2)
        x = project_capped_simplex(x, m_s, upper)  # no-op (up to rounding) for a feasible warm start

    last_root: list[float] = []

    def project(v: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        # warm-start Newton at the previous step's root (same projection, fewer S evaluations)
        return project_capped_simplex(v, m_s, upper, y0=last_root[0] if last_root else None,
                                      root=last_root)

    sigma_sq = op.sigma_max_sq(rng, power_max_iter, power_rtol, safety) if sigma_max_sq is None else sigma_max_sq
    res = _run_pgd(op, target, m_s, x, project, iters, sigma_sq, early_stop)
    if abs(res.x.sum() - m_s) > sum_tolerance(m_s):  # pragma: no cover - guaranteed by the projection
        raise RuntimeError("PGD iterate lost feasibility")
    return res


def pgd_otm(
    op: SliceOperator,
    target: np.ndarray | torch.Tensor,
    *,
    rng: np.random.Generator,
    iters: int = 20,
    x0: np.ndarray | torch.Tensor | None = None,
    forbidden: np.ndarray | torch.Tensor | None = None,
    sigma_max_sq: float | None = None,
    early_stop: bool = False,
    power_max_iter: int = 50,
    power_rtol: float = 1e-4,
    safety: float = 1.02,
) -> PGDResult:
    """PGD for a one-to-many slice (§4.5, [J] App. C / Alg. 7): rows are children, each on the simplex.

    The objective, gradient and step size are those of :func:`pgd_mn` with ``m_s = s1`` (one edge per child);
    the projection is the batched row-wise simplex projection.

    Args:
        op: Slice operator (rows = children, columns = candidate parents).
        target: ``(op.n_queries,)`` stacked noisy answers.
        rng: Numpy generator (random start, power iteration).
        iters: PGD steps (20 default, as [R]).
        x0: Optional start (e.g. current one-hot parents); projected row-wise first. Default: a uniformly
            random allowed one-hot row per child.
        forbidden: Optional ``(s1, s2)`` bool mask (a child may not be its own parent).
        sigma_max_sq: Precomputed ``sigma_max(Q)^2``.
        early_stop: As in :func:`pgd_mn`.
        power_max_iter: Power-iteration cap.
        power_rtol: Power-iteration relative tolerance.
        safety: Safety factor.

    Returns:
        :class:`PGDResult`; every row of ``x`` sums to 1 (to 1e-9) with entries in ``[0, 1]``.

    Raises:
        ValueError: on inconsistent shapes or a row with every cell forbidden.
    """
    s1, s2 = op.shape
    fb = _forbidden_tensor(forbidden, (s1, s2), op.device)
    if x0 is None:
        start = random_start_otm(s1, s2, rng, None if fb is None else fb.cpu().numpy())
        x = torch.from_numpy(start).to(op.device)
    else:
        x0t = torch.as_tensor(np.asarray(x0) if not isinstance(x0, torch.Tensor) else x0)
        x = project_rows_simplex(x0t.to(device=op.device, dtype=torch.float64).reshape(s1, s2), fb)

    def project(v: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        return project_rows_simplex(v, fb)

    sigma_sq = op.sigma_max_sq(rng, power_max_iter, power_rtol, safety) if sigma_max_sq is None else sigma_max_sq
    return _run_pgd(op, target, s1, x, project, iters, sigma_sq, early_stop)
