"""Euclidean projections used by the bi-adjacency relational synthesiser.

§ numbers below refer to docs/methods/biadjacency.md; [J] and [R] as defined there.

Two constraint sets appear in the relaxed problem of §4 ([J] Thm 2 and App. C):

* the *capped simplex* ``{x : 0 <= x <= u, sum(x) = m}`` (many-to-many slices, and the input repair step of
  UBS, §5.4), solved by a safeguarded Newton iteration on the scalar dual variable with an exact
  finishing step (§4.3), plus a breakpoint-sorting reference solver used by the tests;
* a batch of independent *probability simplices* (one per child row of a one-to-many slice, §4.5),
  solved by the classical sort-based algorithm, vectorised over rows.

Why relviz writes this itself: no well-kept library implements the relational-synthesis algorithms of [J]
(the authors' reference code uses a heuristic clip-and-rescale "projection" instead of the Euclidean one, see
§10 item 1), and general-purpose QP solvers are orders of magnitude slower than this O(N) routine and do not
give the exact feasibility (``0 <= x <= u`` exactly, ``|sum(x) - m| <= 1e-9 max(1, m)``) that UBS relies on.

All computations run in float64. Inputs may be numpy arrays or torch tensors; the result has the same kind
(torch results stay on the input's device). Numpy inputs and CPU tensors are processed with numpy (large fresh
float64 torch allocations on CPU are several times slower than numpy's), tensors on an accelerator with torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "project_capped_simplex",
    "project_rows_simplex",
    "sum_tolerance",
]

ArrayOrTensor = np.ndarray | torch.Tensor

_MAX_EVALUATIONS = 200


def sum_tolerance(m: float) -> float:
    """Acceptance tolerance on ``|sum(x) - m|`` used throughout (§4.3, §5.4).

    Args:
        m: Target sum.

    Returns:
        ``1e-9 * max(1, |m|)``.
    """
    return 1e-9 * max(1.0, abs(float(m)))


def _to_float64_tensor(a: ArrayOrTensor | float | None, device: torch.device | None = None) -> torch.Tensor | None:
    if a is None:
        return None
    if isinstance(a, torch.Tensor):
        t = a.to(dtype=torch.float64)
        return t if device is None else t.to(device)
    t = torch.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=np.float64)))
    return t if device is None else t.to(device)


def _check_finite(t: torch.Tensor, name: str) -> None:
    if t.numel() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or infinite values")


def _use_torch_backend(v: ArrayOrTensor, backend: str) -> bool:
    """numpy for numpy inputs and CPU tensors (faster large float64 element-wise work), torch on accelerators."""
    if backend not in ("auto", "numpy", "torch"):
        raise ValueError(f"unknown backend {backend!r}")
    if backend == "auto":
        return isinstance(v, torch.Tensor) and v.device.type != "cpu"
    return backend == "torch"


def project_capped_simplex(
    v: ArrayOrTensor,
    m: float,
    u: ArrayOrTensor | float | None = None,
    *,
    return_evaluations: bool = False,
    backend: str = "auto",
    y0: float | None = None,
    root: list[float] | None = None,
) -> ArrayOrTensor | tuple[ArrayOrTensor, int]:
    """Euclidean projection onto ``{x : 0 <= x <= u, sum(x) = m}`` (§4.3, [J] Thm 2).

    The projection is ``clip(v + y*, 0, u)`` where ``y*`` solves the piecewise-linear, non-decreasing equation
    ``S(y) = sum(clip(v + y, 0, u)) = m``. ``y*`` is found by a Newton iteration safeguarded by bisection on the
    bracket ``[-max v, max u - min v]``; because ``S`` is piecewise linear the Newton step is exact once the
    active set is right (typically 3-12 evaluations of ``S`` for ``N = 10^6``). A finishing step then solves
    ``y = (m - sum_{upper} u - sum_{free} v) / |free|`` exactly for the final active set and keeps it if it does
    not increase the residual. Masked entries (``u_i = 0``) are always 0 in the output.

    Args:
        v: Point to project, any shape (flattened internally), numpy array or torch tensor of any float dtype.
        m: Target sum, ``0 <= m <= sum(u)`` (within :func:`sum_tolerance`).
        u: Upper bounds, broadcastable to ``v`` (scalar, array or tensor, ``>= 0``); ``None`` means 1.
        return_evaluations: If True also return the number of evaluations of ``S``.
        backend: ``"auto"`` (numpy for numpy inputs and CPU tensors, torch for tensors on an accelerator, one
            host sync per evaluation), ``"numpy"`` or ``"torch"``.
        y0: Optional first guess of the root ``y*`` (e.g. the previous PGD step's root: consecutive
            projections have nearby roots, so Newton needs fewer evaluations). Clamped into the bracket;
            the result does not depend on it.
        root: Optional one-element list that receives the root ``y*`` (for the next ``y0``).

    Returns:
        The projection, float64, same shape and kind (numpy/torch, device) as ``v``; optionally with the number
        of ``S`` evaluations. Guarantees ``0 <= x <= u`` exactly and ``|sum(x) - m| <= 1e-9 max(1, m)``.

    Raises:
        ValueError: on NaN/inf input, negative upper bounds, an infeasible ``m`` (``m < 0`` or
            ``m > sum(u)``) or an unknown backend.
        RuntimeError: if the requested precision is not reached (should not happen).
    """
    is_tensor = isinstance(v, torch.Tensor)
    if _use_torch_backend(v, backend):
        vt = _to_float64_tensor(v)
        assert vt is not None
        shape = vt.shape
        ut = None if u is None else torch.broadcast_to(_to_float64_tensor(u, vt.device), shape).reshape(-1)
        xt, n_eval = _capped_torch(vt.reshape(-1), float(m), ut, y0, root)
        out: ArrayOrTensor = xt.reshape(shape)
        if not is_tensor:
            out = xt.reshape(shape).cpu().numpy()
    else:
        va = _to_float64_numpy(v)
        shape = va.shape
        ua = None if u is None else np.broadcast_to(_to_float64_numpy(u), shape).reshape(-1)
        xa, n_eval = _capped_numpy(va.reshape(-1), float(m), ua, y0, root)
        out = xa.reshape(shape)
        if is_tensor:
            out = torch.from_numpy(out).to(v.device)
    return (out, n_eval) if return_evaluations else out


def _to_float64_numpy(a: ArrayOrTensor | float) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy().astype(np.float64, copy=False)
    return np.asarray(a, dtype=np.float64)


def _trivial_solution(m: float, n: int, u_sum: float) -> str | None:
    """Validate ``m`` and detect the trivial cases ``m = 0`` ("zeros") and ``m = sum(u)`` ("upper")."""
    tol = sum_tolerance(m)
    if not math.isfinite(m) or m < -tol or m > u_sum + tol:
        raise ValueError(f"infeasible target sum m={m} for upper bounds summing to {u_sum}")
    if m <= 0.0 or n == 0:
        return "zeros"
    if m >= u_sum:
        return "upper"
    return None


def _solve_dual(
    evaluate: Callable[[float], tuple[float, int]],
    active_sums: Callable[[float], tuple[float, float, int]],
    m: float,
    lo: float,
    hi: float,
    y0: float | None = None,
) -> tuple[float, int]:
    """Safeguarded Newton on ``S(y) = m`` plus the exact finishing step (§4.3); backend independent.

    Args:
        evaluate: ``y -> (S(y), F(y))`` with ``F`` the number of free entries ``0 < v_i + y < u_i``.
        active_sums: ``y -> (sum_{upper} u, sum_{free} v, |free|)`` for the active set at ``y``.
        m: Target.
        lo: Bracket with ``S(lo) <= m``.
        hi: Bracket with ``S(hi) >= m``.

    Returns:
        ``(y, number of S evaluations)``.

    Raises:
        RuntimeError: if ``|S(y) - m| > 1e-9 max(1, m)`` at the end (should not happen).
    """
    tol = sum_tolerance(m)
    inner_tol = 0.1 * tol
    y = min(max(0.0 if y0 is None else float(y0), lo), hi)
    s, f = evaluate(y)
    n_eval = 1
    while abs(s - m) > inner_tol and n_eval < _MAX_EVALUATIONS:
        if s < m:
            lo = y
        else:
            hi = y
        y_new = y + (m - s) / f if f > 0 else math.nan
        if not (lo < y_new < hi):
            y_new = 0.5 * (lo + hi)
        if y_new == y or not (lo < y_new < hi):  # bracket collapsed to floating-point resolution
            break
        y = y_new
        s, f = evaluate(y)
        n_eval += 1
    # Finishing step (§4.3): solve exactly on the current active set; keep it if not worse.
    # Skipped when Newton already met 0.1× the required precision (the usual case: the step is exact
    # once the active set is right), which saves two passes over the vector per projection.
    su, sv, nf = active_sums(y) if abs(s - m) > inner_tol else (0.0, 0.0, 0)
    if nf > 0:
        y_fin = (m - su - sv) / nf
        s_fin, _ = evaluate(y_fin)
        n_eval += 1
        if abs(s_fin - m) <= abs(s - m):
            y, s = y_fin, s_fin
    if abs(s - m) > tol:
        raise RuntimeError(f"capped-simplex projection did not converge: |S - m| = {abs(s - m):.3e}")
    return y, n_eval


def _capped_numpy(v: np.ndarray, m: float, u: np.ndarray | None, y0: float | None = None,
                  root: list[float] | None = None) -> tuple[np.ndarray, int]:
    """Numpy backend of :func:`project_capped_simplex` on a flat float64 array."""
    if v.size and not np.isfinite(v).all():
        raise ValueError("v contains NaN or infinite values")
    if u is not None and u.size and (not np.isfinite(u).all() or (u < 0).any()):
        raise ValueError("upper bounds must be finite and non-negative")
    upper: np.ndarray | float = 1.0 if u is None else u
    trivial = _trivial_solution(m, v.size, float(v.size) if u is None else float(u.sum()))
    if trivial == "zeros":
        return np.zeros_like(v), 0
    if trivial == "upper":
        return (np.ones_like(v) if u is None else u.copy()), 0

    def evaluate(y: float) -> tuple[float, int]:
        t = v + y
        f = int(np.count_nonzero((t > 0) & (t < upper)))
        np.clip(t, 0.0, upper, out=t)
        return float(t.sum()), f

    def active_sums(y: float) -> tuple[float, float, int]:
        t = v + y
        low = t <= 0
        up = (t >= upper) & ~low
        free = ~(low | up)
        su = float(np.count_nonzero(up)) if u is None else float(u[up].sum())
        return su, float(v[free].sum()), int(np.count_nonzero(free))

    hi = (1.0 if u is None else float(u.max())) - float(v.min())
    y, n_eval = _solve_dual(evaluate, active_sums, m, -float(v.max()), hi, y0)
    if root is not None:
        root[:] = [y]
    return np.clip(v + y, 0.0, upper), n_eval


def _capped_torch(v: torch.Tensor, m: float, u: torch.Tensor | None, y0: float | None = None,
                  root: list[float] | None = None) -> tuple[torch.Tensor, int]:
    """Torch backend of :func:`project_capped_simplex` (any device; one host sync per evaluation)."""
    _check_finite(v, "v")
    if u is not None:
        _check_finite(u, "u")
        if u.numel() and bool((u < 0).any()):
            raise ValueError("upper bounds must be non-negative")
    trivial = _trivial_solution(m, v.numel(), float(v.numel()) if u is None else float(u.sum()))
    if trivial == "zeros":
        return torch.zeros_like(v), 0
    if trivial == "upper":
        return (torch.ones_like(v) if u is None else u.clone()), 0
    upper: torch.Tensor | float = 1.0 if u is None else u

    def clip_(t: torch.Tensor) -> torch.Tensor:
        t.clamp_(min=0.0)
        return t.clamp_(max=1.0) if u is None else torch.minimum(t, u, out=t)

    def evaluate(y: float) -> tuple[float, int]:
        t = v + y
        free = (t > 0) & (t < upper)
        s_f = torch.stack([clip_(t).sum(), free.sum().to(torch.float64)]).tolist()
        return s_f[0], int(s_f[1])

    def active_sums(y: float) -> tuple[float, float, int]:
        t = v + y
        low = t <= 0
        up = (t >= upper) & ~low
        free = ~(low | up)
        su = up.sum().to(torch.float64) if u is None else torch.where(up, u, 0.0).sum()
        vals = torch.stack([su, torch.where(free, v, 0.0).sum(), free.sum().to(torch.float64)]).tolist()
        return vals[0], vals[1], int(vals[2])

    vmin, vmax = (float(a) for a in torch.aminmax(v))
    hi = (1.0 if u is None else float(u.max())) - vmin
    y, n_eval = _solve_dual(evaluate, active_sums, m, -vmax, hi, y0)
    if root is not None:
        root[:] = [y]
    return clip_(v + y), n_eval


def project_rows_simplex(
    v: ArrayOrTensor, forbidden: ArrayOrTensor | None = None, *, backend: str = "auto"
) -> ArrayOrTensor:
    """Row-wise Euclidean projection onto the probability simplex (§4.5, [J] App. C).

    For each row ``z``: sort descending, find the largest ``r`` with ``z_(r) - (sum_{k<=r} z_(k) - 1)/r > 0``,
    set ``theta = (sum_{k<=r} z_(k) - 1)/r`` and return ``max(z - theta, 0)``. Vectorised over rows (one sort,
    one cumsum). Forbidden cells (e.g. a child that would be its own parent) are fixed to 0 and excluded.

    Args:
        v: Matrix ``(n_rows, n_cols)`` (numpy or torch, any float dtype).
        forbidden: Optional boolean matrix of the same shape; True marks cells fixed to 0.
        backend: ``"auto"`` (numpy for numpy inputs and CPU tensors, torch on accelerators), ``"numpy"`` or
            ``"torch"``.

    Returns:
        Float64 matrix of the same shape and kind; every row sums to 1 (to ~1e-15 relative) and every entry is
        in ``[0, 1]``.

    Raises:
        ValueError: on NaN/inf input, wrong dimensions, a row in which every cell is forbidden, or an unknown
            backend.
    """
    is_tensor = isinstance(v, torch.Tensor)
    if _use_torch_backend(v, backend):
        z = _to_float64_tensor(v)
        assert z is not None
        fb = None
        if forbidden is not None:
            fb = forbidden if isinstance(forbidden, torch.Tensor) else torch.from_numpy(np.asarray(forbidden))
            fb = fb.to(device=z.device, dtype=torch.bool)
        x = _rows_simplex_torch(z, fb)
        return x if is_tensor else x.cpu().numpy()
    za = _to_float64_numpy(v)
    fa = None if forbidden is None else _to_float64_numpy(forbidden).astype(bool)
    xa = _rows_simplex_numpy(za, fa)
    return torch.from_numpy(xa).to(v.device) if is_tensor else xa


def _rows_simplex_numpy(z: np.ndarray, forbidden: np.ndarray | None) -> np.ndarray:
    if z.ndim != 2:
        raise ValueError("project_rows_simplex expects a 2-D matrix")
    if z.size and not np.isfinite(z).all():
        raise ValueError("v contains NaN or infinite values")
    n_cols = z.shape[1]
    if n_cols == 0:
        raise ValueError("rows must have at least one column")
    if forbidden is not None:
        forbidden = forbidden.reshape(z.shape)
        if forbidden.all(axis=1).any():
            raise ValueError("a row has every cell forbidden")
        z = np.where(forbidden, -np.inf, z)
    zs = -np.sort(-z, axis=1)
    finite = np.isfinite(zs)
    css = np.cumsum(np.where(finite, zs, 0.0), axis=1) - 1.0
    with np.errstate(invalid="ignore"):
        cond = finite & (zs - css / np.arange(1, n_cols + 1) > 0)
    r_star = cond.sum(axis=1, keepdims=True)  # the condition holds on a prefix of the sorted row
    theta = np.take_along_axis(css, r_star - 1, axis=1) / r_star
    x = np.clip(z - theta, 0.0, 1.0)
    if forbidden is not None:
        x[forbidden] = 0.0
    return x


def _rows_simplex_torch(z: torch.Tensor, fb: torch.Tensor | None) -> torch.Tensor:
    if z.dim() != 2:
        raise ValueError("project_rows_simplex expects a 2-D matrix")
    _check_finite(z, "v")
    n_cols = z.shape[1]
    if n_cols == 0:
        raise ValueError("rows must have at least one column")
    if fb is not None:
        fb = fb.reshape(z.shape)
        if bool(fb.all(dim=1).any()):
            raise ValueError("a row has every cell forbidden")
        z = z.masked_fill(fb, -math.inf)
    zs, _ = torch.sort(z, dim=1, descending=True)
    finite = torch.isfinite(zs)
    css = torch.cumsum(torch.where(finite, zs, 0.0), dim=1) - 1.0
    r = torch.arange(1, n_cols + 1, dtype=torch.float64, device=z.device)
    cond = finite & (zs - css / r > 0)
    r_star = cond.sum(dim=1, keepdim=True)  # the condition holds on a prefix of the sorted row
    theta = torch.gather(css, 1, r_star - 1) / r_star.to(torch.float64)
    x = (z - theta).clamp_(min=0.0, max=1.0)
    if fb is not None:
        x = x.masked_fill(fb, 0.0)
    return x
