"""PrivSyn (Zhang, Wang, Li, He, Chen & Ji 2021): DenseMarg selection, consistency, GUM — in numpy.

Documented in docs/methods/privsyn.md, with the settings of Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data Synthesis"
(Tables 6 and 16: 10 % of ρ on the selection scores, 10 % on the 1-way marginals, 80 % on the
2-way marginals; 501 consistency iterations; 50 GUM iterations). The paper: "PrivSyn:
Differentially Private Data Synthesis", USENIX Security 2021.

1. Measure every 1-way marginal (Gaussian; one release, L2 sensitivity √d × the unit's histogram
   multiplier).
2. DenseMarg: for every pair with at most ``max_cells`` cells, ``InDif_ij = ‖M_ij − M_i M_jᵀ/n‖₁``
   (counts; ``n`` the pair's own total). Adding a row changes ``M_ij`` by 1 in one cell and
   ``M_i M_jᵀ/n`` by less than 3 in L1 (see relviz.single.privbayes), so each score has
   add/remove sensitivity 4 (× the unit's score multiplier) and the vector of P scores L2
   sensitivity ``4·√P`` — noise std ``√(8P/ρ_sel)`` at multiplier 1, as in the benchmark's code.
   Then greedily choose the set S minimising ``Σ_{i∈S} N_i + Σ_{i∉S} InDif_i``, where the noise
   error of the selected marginals under the L1-optimal allocation ``ρ_i ∝ c_i^{2/3}`` (c_i cells)
   is ``Σ_{i∈S} N_i = √(2/π)·Δ·Z^{3/2}/√(2ρ₂)``, ``Z = Σ_{i∈S} c_i^{2/3}``: add the pair with the
   largest ``InDif_i − (ΔN when i joins)`` while it is positive (noisy scores only).
3. Measure each selected pair with its own Gaussian release, ``ρ_i = ρ₂·c_i^{2/3}/Z`` (exact
   fractions; the last one takes the remainder so the ledger ends at exactly ρ).
4. Consistency (post-processing): for every attribute, the projections of all marginals holding it
   are replaced by their inverse-variance average (the difference spread evenly over the cells
   that project onto a value), then every marginal is made non-negative with its total kept
   ("norm-sub"); repeated ``consistency_iters`` times or until nothing moves.
5. GUM (at sampling, on the consistent marginals only): start from n rows drawn from the 1-way
   marginals; for ``update_iters`` iterations, visit every marginal (random order) and move a
   fraction α_t of the surplus rows of over-represented cells to under-represented cells —
   half by *duplicating* a whole row of the destination cell (keeps the row's other attributes
   coherent), half by *replacing* the two values — with α_t decaying from ``alpha0``.

relviz's deviations, all public: overlapping selected marginals are not merged into larger cliques
(the original's optional step); GUM runs at ``sample`` with the requested number of rows, so the
model keeps only noisy, post-processed marginals; the exact move rule (half duplicate, half
replace, α_t = alpha0/(1 + t/10)) is relviz's reading of the paper's "gradually update".

Why relviz writes this itself: no package ships PrivSyn (only research code exists). All
steps are vectorised numpy (bincounts, within-cell ranks, one row copy per move).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import ClassVar

import numpy as np

from relviz.errors import ParameterError
from relviz.privacy.budget import Budget, to_fraction
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.privacy.ranking import rank_within_groups
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.preprocess import RareMergeFit
from relviz.single.registry import register

__all__ = ["PrivSyn", "PrivSynModel", "select_dense_marginals", "make_consistent", "gum"]

SOURCE = "PrivSyn (Zhang et al. 2021), docs/methods/privsyn.md"
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

Marginal = tuple[tuple[int, ...], np.ndarray, float]
"""(attribute indices, counts shaped by their domain sizes, noise std per cell)."""


def in_dif(counts: np.ndarray) -> float:
    """``‖M_ij − M_i M_jᵀ/n‖₁`` of a 2-d count table (add/remove sensitivity 4)."""
    n = counts.sum()
    if n <= 0:
        return 0.0
    return float(np.abs(counts - np.outer(counts.sum(axis=1), counts.sum(axis=0)) / n).sum())


def select_dense_marginals(scores: np.ndarray, cells: np.ndarray, *, rho2: float,
                           sensitivity: float) -> list[int]:
    """DenseMarg's greedy choice on noisy InDif scores (public post-processing).

    Args:
        scores: ``(P,)`` noisy InDif of each pair.
        cells: ``(P,)`` cells of each pair.
        rho2: ρ the selected marginals will share.
        sensitivity: L2 sensitivity of one marginal (histogram multiplier).

    Returns:
        Indices of the selected pairs, in selection order.
    """
    k = _SQRT_2_OVER_PI * sensitivity / math.sqrt(2 * rho2)
    c23 = np.asarray(cells, dtype=np.float64) ** (2 / 3)
    chosen: list[int] = []
    free = np.ones(len(scores), dtype=bool)
    z = 0.0
    while free.any():
        gain = np.where(free, scores - k * ((z + c23) ** 1.5 - z ** 1.5), -np.inf)
        i = int(np.argmax(gain))
        if not gain[i] > 0:
            break
        chosen.append(i)
        free[i] = False
        z += c23[i]
    return chosen


def _norm_sub(v: np.ndarray, total: float) -> np.ndarray:
    """Non-negative ``v`` with sum ``total`` (clip negatives, take the excess evenly off the
    positive cells, repeat)."""
    v = np.asarray(v, dtype=np.float64).copy()
    if total <= 0:
        return np.zeros_like(v)
    for _ in range(100):
        v = np.clip(v, 0, None)
        excess = v.sum() - total
        pos = v > 0
        if abs(excess) <= 1e-9 * max(total, 1.0) or not pos.any():
            break
        if excess < 0:  # spread the shortfall evenly over all cells
            v += -excess / v.size
            break
        v[pos] -= excess / pos.sum()
    if v.sum() <= 0:
        return np.full_like(v, total / v.size)
    return v


def make_consistent(marginals: list[Marginal], sizes: tuple[int, ...], *, iters: int = 501,
                    tol: float = 1e-6) -> list[np.ndarray]:
    """PrivSyn's consistency post-processing (see the module docstring, step 4).

    Returns:
        Non-negative count arrays (same shapes) that agree on every shared attribute and have a
        common total.
    """
    arrs = [np.asarray(m[1], dtype=np.float64).copy() for m in marginals]
    var_cell = [m[2] ** 2 for m in marginals]
    holders: dict[int, list[tuple[int, int]]] = {}
    for j, (attrs, _, _) in enumerate(marginals):
        for ax, a in enumerate(attrs):
            holders.setdefault(a, []).append((j, ax))
    w_tot = np.array([1.0 / (v * a.size) for v, a in zip(var_cell, arrs)])
    for _ in range(int(iters)):
        before = [a.copy() for a in arrs]
        total = float(np.sum([a.sum() * w for a, w in zip(arrs, w_tot)]) / w_tot.sum())
        for a, hs in holders.items():
            if len(hs) < 2:
                continue
            projs, weights = [], []
            for j, ax in hs:
                other = tuple(i for i in range(arrs[j].ndim) if i != ax)
                projs.append(arrs[j].sum(axis=other) if other else arrs[j])
                per = arrs[j].size / sizes[a]  # cells summed into one projected value
                weights.append(1.0 / (var_cell[j] * per))
            w = np.array(weights)
            target = np.tensordot(w, np.array(projs), axes=1) / w.sum()
            for (j, ax), p in zip(hs, projs):
                per = arrs[j].size / sizes[a]
                shape = [1] * arrs[j].ndim
                shape[ax] = sizes[a]
                arrs[j] = arrs[j] + ((target - p) / per).reshape(shape)
        arrs = [_norm_sub(a, total) for a in arrs]
        moved = max(float(np.abs(a - b).max()) for a, b in zip(arrs, before))
        if moved <= tol * max(total, 1.0):
            break
    return arrs


def gum(targets: list[tuple[tuple[int, ...], np.ndarray]], sizes: tuple[int, ...], n: int,
        rng: np.random.Generator, *, iters: int = 50, alpha0: float = 1.0) -> np.ndarray:
    """The Gradually Update Method: rows whose marginals approach ``targets``.

    Args:
        targets: ``(attribute indices, non-negative counts)``; every attribute needs a 1-way target.
        sizes: Domain sizes.
        n: Rows to synthesise.
        rng: Random source.
        iters: Update iterations (each visits every target once).
        alpha0: Initial step (share of a cell's surplus moved); α_t = alpha0/(1 + t/10).

    Returns:
        ``(n, d)`` int64 codes.
    """
    d = len(sizes)
    x = np.zeros((n, d), dtype=np.int64)
    one = {attrs[0]: t for attrs, t in targets if len(attrs) == 1}
    for a in range(d):
        p = np.clip(one[a], 0, None)
        p = p / p.sum() if p.sum() > 0 else np.full(sizes[a], 1.0 / sizes[a])
        x[:, a] = rng.choice(sizes[a], size=n, p=p)
    if n == 0:
        return x
    multi = [(attrs, t) for attrs, t in targets if len(attrs) >= 2]
    for it in range(int(iters)):
        alpha = alpha0 / (1.0 + it / 10.0)
        for j in rng.permutation(len(multi)):
            _gum_step(x, multi[j][0], multi[j][1], sizes, alpha, rng)
    return x


def _gum_step(x: np.ndarray, attrs: tuple[int, ...], target: np.ndarray, sizes: tuple[int, ...],
              alpha: float, rng: np.random.Generator) -> None:
    n = x.shape[0]
    c = int(np.prod([sizes[a] for a in attrs]))
    cell = np.zeros(n, dtype=np.int64)
    for a in attrs:
        cell = cell * sizes[a] + x[:, a]
    s = np.bincount(cell, minlength=c).astype(np.float64)
    t = target.ravel()
    t = t * (n / t.sum()) if t.sum() > 0 else np.full(c, n / c)
    diff = s - t
    out_q = np.floor(alpha * np.clip(diff, 0, None) + rng.random(c)).astype(np.int64)
    out_q = np.minimum(out_q, s.astype(np.int64))
    in_q = np.floor(alpha * np.clip(-diff, 0, None) + rng.random(c)).astype(np.int64)
    m = int(min(out_q.sum(), in_q.sum()))
    if m == 0:
        return
    order = np.lexsort((rng.random(n), cell))  # rows grouped by cell, random within a cell
    sc = cell[order]
    rank = rank_within_groups(sc)
    movers = order[rank < out_q[sc]]
    movers = movers[rng.permutation(len(movers))[:m]]
    dest = np.repeat(np.arange(c), in_q)
    dest = dest[rng.permutation(len(dest))[:m]]
    # duplicate a random row of the destination cell (when it has one), else replace the values
    start = np.concatenate([[0], np.cumsum(np.bincount(sc, minlength=c))[:-1]])
    have = s[dest] > 0
    dup = have & (rng.random(m) < 0.5)
    if dup.any():
        src = order[start[dest[dup]] + np.floor(rng.random(int(dup.sum())) * s[dest[dup]]).astype(np.int64)]
        x[movers[dup]] = x[src]
    rep = ~dup
    if rep.any():
        rest = dest[rep]
        for a in reversed(attrs):
            x[movers[rep], a] = rest % sizes[a]
            rest = rest // sizes[a]


@dataclass(frozen=True)
class PrivSynModel:
    """Consistent noisy marginals; ``sample`` runs GUM on them.

    Attributes:
        attributes: Attribute names in table order.
        sizes: Domain sizes.
        marginals: ``(attribute indices, consistent counts)``: every 1-way, then the selected pairs.
        total: Estimated rows (common total of the consistent marginals).
        update_iters, alpha0: GUM settings.
        total_variance: Variance of ``total``, taken as that of the inverse-variance mean of the
            noisy marginals' sums, ``1/Σ 1/(σ²·cells)`` (the weights consistency starts from).
    """

    attributes: tuple[str, ...]
    sizes: tuple[int, ...]
    marginals: tuple[tuple[tuple[int, ...], np.ndarray], ...]
    total: float
    update_iters: int = 50
    alpha0: float = 1.0
    total_variance: float = math.inf

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((self.attributes[a], self.attributes[b]) for ab, _ in self.marginals if len(ab) == 2
                     for a, b in [ab])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return gum(list(self.marginals), self.sizes, int(n), rng, iters=self.update_iters, alpha0=self.alpha0)


@register
@dataclass(frozen=True)
class PrivSyn(RareMergeFit):
    """PrivSyn: DenseMarg selection, consistency, GUM (see the module docstring).

    Args:
        select_share, oneway_share: Shares of ρ for the InDif scores and the 1-way marginals (the
            rest measures the selected pairs): 0.1 and 0.1 in the benchmark.
        consistency_iters: Consistency rounds (501 in the benchmark; stops early when stable).
        update_iters: GUM iterations (50 in the benchmark).
        alpha0: GUM's initial step.
        max_cells: Largest 2-way marginal considered.
        max_domain: Largest attribute domain accepted (codes).
        rare_merge: Categorical attributes to merge rare categories of first (Chen et al.'s
            Algorithm 1, 10 % of ρ; ``relviz.single.preprocess.rare_merge_columns`` lists those
            with ≥ 100 declared categories).
        merge_theta: θ of the merge (0.2 % of the noisy column total).
    """

    name: ClassVar[str] = "privsyn"
    label: ClassVar[str] = "PrivSyn (dense 2-way marginals, GUM)"
    gaussian_only: ClassVar[bool] = True
    select_share: float = 0.1
    oneway_share: float = 0.1
    consistency_iters: int = 501
    update_iters: int = 50
    alpha0: float = 1.0
    max_cells: int = 1_000_000
    max_domain: int = 100_000
    rare_merge: tuple[str, ...] = ()
    merge_theta: float = 0.002

    def __post_init__(self) -> None:
        for name in ("select_share", "oneway_share"):
            if not 0 < getattr(self, name) < 1:
                raise ParameterError(name, f"{name} must be in (0, 1)")
        if not self.select_share + self.oneway_share < 1:
            raise ParameterError("select_share", "select_share + oneway_share must be below 1")
        for name, low in (("consistency_iters", 1), ("update_iters", 1), ("max_cells", 4), ("max_domain", 2)):
            v = getattr(self, name)
            if int(v) != v or v < low:
                raise ParameterError(name, f"{name} must be an integer ≥ {low}")
        object.__setattr__(self, "rare_merge", tuple(self.rare_merge))
        if not 0 <= self.merge_theta < 1:
            raise ParameterError("merge_theta", "merge_theta must be in [0, 1)")
        if not 0 < self.alpha0 <= 1:
            raise ParameterError("alpha0", "alpha0 must be in (0, 1]")

    def _split(self, rho: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        rho_sel = to_fraction(self.select_share) * rho
        rho1 = to_fraction(self.oneway_share) * rho
        return rho1, rho_sel, rho - rho1 - rho_sel

    def _noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float) -> dict[str, float]:
        """σ of the releases known before the run (public): the 1-way marginals and the InDif
        scores (the pairs' σ depend on which are selected)."""
        rho = Fraction(rho)
        d = len(table.attributes)
        if d <= 1:
            from relviz.single.independent import Independent

            return Independent().noise_scales(table, rho, histogram_sensitivity=histogram_sensitivity,
                                              score_sensitivity=score_sensitivity)
        rho1, rho_sel, _ = self._split(rho)
        sizes = [a.size for a in table.attributes]
        p = sum(1 for i, j in combinations(range(d), 2) if sizes[i] * sizes[j] <= self.max_cells)
        out = {f"1-way marginals ({d} attributes)": gaussian_sigma(histogram_sensitivity * math.sqrt(d), rho1)}
        if p:
            out[f"InDif scores ({p} pairs)"] = gaussian_sigma(4 * score_sensitivity * math.sqrt(p), rho_sel)
        return out

    def _fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
             score_sensitivity: float, progress: Reporter) -> PrivSynModel:
        attrs = tuple(data.attributes)
        sizes = tuple(int(s) for s in data.sizes)
        d = len(attrs)
        if d <= 1:
            from relviz.single.mst import fit_single_attribute

            return fit_single_attribute(data, budget, histogram_sensitivity=histogram_sensitivity,  # type: ignore[return-value]
                                        score_sensitivity=score_sensitivity, progress=progress)
        rho1, rho_sel, rho2 = self._split(budget.rho)
        pairs = [(i, j) for i, j in combinations(range(d), 2) if sizes[i] * sizes[j] <= self.max_cells]
        if not pairs:  # nothing to select: the whole budget on the 1-way marginals
            rho1, rho_sel, rho2 = budget.rho, Fraction(0), Fraction(0)

        # 1. one-way marginals ----------------------------------------------------------------
        progress(0.02, "measuring 1-way marginals")
        exact1 = [data.marginal((a,)) for a in attrs]
        noisy1, sigma1 = budget.gaussian(
            np.concatenate(exact1), rho=rho1, sensitivity=histogram_sensitivity * math.sqrt(d),
            label=f"1-way marginals ({d} attributes)", source=SOURCE + " step 1", integer=True)
        marginals: list[Marginal] = [((i,), y, sigma1) for i, y in
                                     enumerate(np.split(noisy1, np.cumsum(sizes)[:-1]))]

        # 2. DenseMarg selection ------------------------------------------------------------------
        chosen: list[int] = []
        if pairs:
            progress(0.1, "scoring pairs (InDif)")
            exact2 = {p: data.marginal((attrs[p[0]], attrs[p[1]])) for p in pairs}
            scores = np.array([in_dif(exact2[p].reshape(sizes[p[0]], sizes[p[1]])) for p in pairs])
            noisy_scores, _ = budget.gaussian(
                scores, rho=rho_sel, sensitivity=4 * score_sensitivity * math.sqrt(len(pairs)),
                label=f"InDif scores ({len(pairs)} pairs)", module="select", source=SOURCE + " DenseMarg",
                integer=False)
            cells = np.array([sizes[i] * sizes[j] for i, j in pairs])
            chosen = select_dense_marginals(noisy_scores, cells, rho2=float(rho2),
                                            sensitivity=histogram_sensitivity)
            if not chosen:  # nothing worth measuring: the pairs' budget goes to the single best pair
                chosen = [int(np.argmax(noisy_scores))]

            # 3. measure the selected pairs, ρ_i ∝ cells^(2/3) ---------------------------------------
            w = [Fraction(float(cells[i]) ** (2 / 3)).limit_denominator(10**6) for i in chosen]
            shares = [rho2 * wi / sum(w, Fraction(0)) for wi in w]
            shares[-1] = rho2 - sum(shares[:-1], Fraction(0))
            for k, (i, r) in enumerate(zip(chosen, shares)):
                a, b = pairs[i]
                y, sigma = budget.gaussian(exact2[(a, b)], rho=r, sensitivity=histogram_sensitivity,
                                           label=f"2-way marginal {attrs[a]} × {attrs[b]}",
                                           source=SOURCE + " step 3", integer=True)
                marginals.append(((a, b), y.reshape(sizes[a], sizes[b]), sigma))
                progress(0.2 + 0.5 * (k + 1) / len(chosen), f"measured {attrs[a]} × {attrs[b]}")

        # 4. consistency (post-processing) ---------------------------------------------------------
        progress(0.75, "making the marginals consistent")
        consistent = make_consistent(marginals, sizes, iters=self.consistency_iters)
        total = max(float(consistent[0].sum()), 1.0)
        progress(1.0, "fitted")
        inv = sum(1.0 / (float(m[2]) ** 2 * np.size(m[1])) for m in marginals)
        return PrivSynModel(attrs, sizes, tuple((m[0], c) for m, c in zip(marginals, consistent)), total,
                            int(self.update_iters), float(self.alpha0), 1.0 / inv if inv > 0 else math.inf)
