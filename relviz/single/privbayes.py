"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017), in numpy.

Documented in docs/methods/privbayes.md (the paper: "PrivBayes: Private Data Release via
Bayesian Networks", ACM TODS 42(4), 2017). A Bayesian network is learnt greedily with the exponential mechanism, its
conditional distributions are read off noisy marginals, and rows are drawn by ancestral sampling.

Neighbouring relation (docs/methods/privbayes.md §3). relviz protects add/remove one row of the
table (times the privacy unit's multipliers), like every other mechanism of the run, so that the
one zCDP ledger composes. The paper's analysis is for replace-one neighbours with a public n, and
its mutual-information score has no useful add/remove sensitivity (n·I changes by up to
log(n + 1) + 1 when a row is added, unbounded over n). relviz therefore

* scores a candidate (X, Π) with the paper's own score for general domains, R (TODS §4.4),
  in counts: ``R(X, Π) = ½·Σ_{x,π} |c(x,π) − c(x)·c(π)/n|``. Adding a row at (a, b) changes
  ``c(x)c(π)/n`` by ``[n·c_x e_bᵀ + n·e_a c_πᵀ + n·e_a e_bᵀ − c_x c_πᵀ] / (n(n+1))``, whose L1
  norm is at most ``(3n + 1)/(n + 1) < 3``, and ``c`` by 1 in one cell, so R changes by at most
  ``½(1 + 3) = 2``: sensitivity 2 × the unit's score multiplier, for every n (no public n
  needed; n = 0 → 1 changes R by 0);
* releases a noisy row count n̂ (``count_share`` of ρ) for the θ-usefulness rule, which needs n;
* measures the noisy marginals with L1 sensitivity 1 per marginal under add/remove (the
  paper's Δ₁ = 2 is the replace-one value), × the unit's L1 multiplier (its score multiplier:
  an L1 distance).

Pure ε-DP in the zCDP ledger: the table's ρ is split exactly into ρ_n (count),
ρ₁ = β·(ρ − ρ_n) (structure) and ρ₂ (conditionals). The count and the marginals are Laplace
releases with ε = √(2ρ) (an ε-DP release is ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4), charged
through ``Budget.laplace``; each of the d − 1 structure steps is an exponential mechanism with
ρ₁/(d − 1), charged ε²/8 through ``Budget.exponential`` (Cesar & Rogers 2021), as in MST and AIM.
β (0.3 in the paper, an ε share there) is applied to ρ. ``noise="gaussian"`` swaps the Laplace
releases for Gaussian ones (L2 sensitivities √m and 1 × the histogram multiplier) — more accurate
for the same ρ, no longer pure DP.

Degree k (θ-usefulness, TODS §4.5, θ = 4): the largest k ≤ ``k_max`` for which a typical
(k + 1)-way marginal (``g^(k+1)`` cells, g the geometric mean of the public domain sizes) has
average count ``n̂/cells`` at least θ times the expected absolute noise of one cell when d − k
marginals are released (Laplace: b; Gaussian: σ·√(2/π)). Non-binary domains: a candidate parent
set is allowed only if its own marginal is θ-useful (``cells ≤ n̂/(θ·noise)``) and within
``max_cells``; for each attribute the parent sets are the subsets of the chosen attributes of
the largest size ≤ k that has an allowed one. With k = 0 there is nothing to learn: the structure
budget is added to the conditionals'.

Conditionals: each released marginal is clipped at zero; ``Pr[X_i | Π_i]`` is read from the
released marginal that contains ``{X_i} ∪ Π_i`` (empty parent slices fall back to the uniform
distribution). Only marginals not contained in another are released (the paper's d − k).

Why relviz writes this itself: no maintained package implements PrivBayes on numpy 2 / pandas 3
(dpmm and synthcity pin numpy 1 / pandas 2); it is a greedy loop, group-by counts and a
vectorised ancestral sampler (inverse CDF with one ``searchsorted`` over offset cumulative tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import ClassVar, Literal

import numpy as np

from relviz.errors import ParameterError
from relviz.privacy.budget import Budget, to_fraction
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma, laplace_scale
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.preprocess import RareMergeFit
from relviz.single.registry import register

__all__ = ["PrivBayes", "PrivBayesModel", "r_score"]

SOURCE = "PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017), docs/methods/privbayes.md"
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def r_score(counts: np.ndarray) -> float:
    """``½·Σ |c(x,π) − c(x)c(π)/n|`` of a ``(|X|, cells(Π))`` count table (0 for an empty table).

    Add/remove sensitivity 2 (module docstring)."""
    n = counts.sum()
    if n <= 0:
        return 0.0
    indep = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / n
    return 0.5 * float(np.abs(counts - indep).sum())


@dataclass(frozen=True)
class PrivBayesModel:
    """A fitted Bayesian network.

    Attributes:
        attributes: Attribute names in table order.
        order: Indices of the attributes in sampling (network) order.
        parents: ``parents[i]``: indices of the parents of ``order[i]``.
        conditionals: ``conditionals[i]``: ``(cells(parents), |X|)`` cumulative probabilities.
        sizes: Domain sizes in table order.
        total: Noisy row count n̂.
        total_variance: Variance of ``total`` (the row count's noise: ``σ²`` or ``2b²``).
    """

    attributes: tuple[str, ...]
    order: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]
    conditionals: tuple[np.ndarray, ...]
    sizes: tuple[int, ...]
    total: float
    total_variance: float = math.inf

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        out = np.zeros((n, len(self.attributes)), dtype=np.int64)
        for x, pa, cum in zip(self.order, self.parents, self.conditionals):
            idx = np.zeros(n, dtype=np.int64)
            for p in pa:
                idx = idx * self.sizes[p] + out[:, p]
            k = cum.shape[1]
            offset = (cum + np.arange(cum.shape[0])[:, None]).ravel()
            pos = np.searchsorted(offset, idx + rng.random(n), side="right")
            out[:, x] = np.minimum(pos - idx * k, k - 1)
        return out


@register
@dataclass(frozen=True)
class PrivBayes(RareMergeFit):
    """PrivBayes with the R score under add/remove neighbours (see the module docstring).

    Args:
        beta: Share of the ρ left after the count that learns the network (0.3 in the paper).
        theta: θ of θ-usefulness (4 in the paper).
        k_max: Largest number of parents (at most 3).
        max_cells: Largest (k + 1)-way marginal (1e5 cells).
        count_share: Share of ρ spent on the noisy row count n̂.
        noise: ``"laplace"`` (pure ε-DP, the paper) or ``"gaussian"``.
        max_candidates: Most (X, Π) candidates scored per step; beyond it a uniformly random
            subset (public randomness) is scored.
        max_domain: Largest attribute domain accepted (codes).
        rare_merge: Categorical attributes to merge rare categories of first (Chen et al.'s
            Algorithm 1, 10 % of ρ; ``relviz.single.preprocess.rare_merge_columns`` lists those
            with ≥ 100 declared categories).
        merge_theta: θ of the merge (0.2 % of the noisy column total).
    """

    name: ClassVar[str] = "privbayes"
    label: ClassVar[str] = "PrivBayes (Bayesian network, pure ε-DP)"
    gaussian_only: ClassVar[bool] = False
    beta: float = 0.3
    theta: float = 4.0
    k_max: int = 3
    max_cells: int = 100_000
    count_share: float = 0.01
    noise: Literal["laplace", "gaussian"] = "laplace"
    max_candidates: int = 2000
    max_domain: int = 100_000
    rare_merge: tuple[str, ...] = ()
    merge_theta: float = 0.002

    def __post_init__(self) -> None:
        if not 0 < self.beta < 1:
            raise ParameterError("beta", "beta must be in (0, 1)")
        if not self.theta > 0:
            raise ParameterError("theta", "theta must be positive")
        if int(self.k_max) != self.k_max or not 0 <= self.k_max <= 3:
            raise ParameterError("k_max", "k_max must be an integer in 0…3")
        if not 0 < self.count_share < 1:
            raise ParameterError("count_share", "count_share must be in (0, 1)")
        if self.noise not in ("laplace", "gaussian"):
            raise ParameterError("noise", "noise must be 'laplace' or 'gaussian'")
        object.__setattr__(self, "rare_merge", tuple(self.rare_merge))
        if not 0 <= self.merge_theta < 1:
            raise ParameterError("merge_theta", "merge_theta must be in [0, 1)")
        for name, low in (("max_cells", 4), ("max_candidates", 1), ("max_domain", 2)):
            if getattr(self, name) < low:
                raise ParameterError(name, f"{name} must be ≥ {low}")

    # -- public, data-free -----------------------------------------------------------------------
    def _split(self, rho: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        rho_n = to_fraction(self.count_share) * rho
        rho1 = to_fraction(self.beta) * (rho - rho_n)
        return rho_n, rho1, rho - rho_n - rho1

    def _cell_noise(self, m: int, rho2: Fraction, histogram_sensitivity: float,
                    score_sensitivity: float) -> float:
        """Expected |noise| of one cell when ``m`` marginals share ρ₂."""
        if self.noise == "laplace":
            return laplace_scale(score_sensitivity * m, rho2)
        return gaussian_sigma(histogram_sensitivity * math.sqrt(m), rho2) * _SQRT_2_OVER_PI

    def _noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float) -> dict[str, float]:
        """Noise standard deviations known before the run (public; reads no data).

        Laplace releases are given as their standard deviation √2·b. The conditionals' value
        assumes d − 1 marginals (k ≥ 1; with k = 0, d marginals and the structure budget); the
        ledger records the actual one.
        """
        rho = Fraction(rho)
        d = len(table.attributes)
        if d <= 1:
            from relviz.single.independent import Independent

            return Independent().noise_scales(table, rho, histogram_sensitivity=histogram_sensitivity,
                                              score_sensitivity=score_sensitivity)
        rho_n, _, rho2 = self._split(rho)
        m = d - 1
        if self.noise == "laplace":
            return {"row count (Laplace, std)": math.sqrt(2) * laplace_scale(score_sensitivity, rho_n),
                    f"conditional marginals ({m}, Laplace, std)":
                        math.sqrt(2) * laplace_scale(score_sensitivity * m, rho2)}
        return {"row count": gaussian_sigma(histogram_sensitivity, rho_n),
                f"conditional marginals ({m})": gaussian_sigma(histogram_sensitivity * math.sqrt(m), rho2)}

    # -- fit -----------------------------------------------------------------------------------
    def _fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
             score_sensitivity: float, progress: Reporter) -> PrivBayesModel:
        attrs = tuple(data.attributes)
        sizes = tuple(int(s) for s in data.sizes)
        d = len(attrs)
        if d <= 1:
            from relviz.single.mst import fit_single_attribute

            return fit_single_attribute(data, budget, histogram_sensitivity=histogram_sensitivity,  # type: ignore[return-value]
                                        score_sensitivity=score_sensitivity, progress=progress)
        rho_n, rho1, rho2 = self._split(budget.rho)
        rng = budget.rng

        # 0. noisy row count (θ-usefulness needs n) ----------------------------------------------
        progress(0.02, "measuring the row count")
        if self.noise == "laplace":
            y, b = budget.laplace(np.array([data.total()]), rho=rho_n, sensitivity=score_sensitivity,
                                  label="row count", source=SOURCE + " (n for θ-usefulness)", integer=True)
            n_variance = 2.0 * float(b) ** 2
        else:
            y, sigma_n = budget.gaussian(np.array([data.total()]), rho=rho_n, sensitivity=histogram_sensitivity,
                                         label="row count", source=SOURCE + " (n for θ-usefulness)", integer=True)
            n_variance = float(sigma_n) ** 2
        n_hat = max(float(y[0]), 1.0)

        # 1. degree k and the allowed parent sets (public: n̂, ρ₂, domains) --------------------
        g = math.exp(float(np.mean(np.log(sizes))))
        k = 0
        for kk in range(1, min(int(self.k_max), d - 1) + 1):  # at most d − 1 parents
            noise = self._cell_noise(d - kk, rho2, histogram_sensitivity, score_sensitivity)
            if n_hat / g ** (kk + 1) >= self.theta * noise:
                k = kk
        if k == 0:
            rho2, rho1 = rho2 + rho1, Fraction(0)
        cell_limit = min(float(self.max_cells),
                         n_hat / (self.theta * self._cell_noise(max(d - k, 1), rho2, histogram_sensitivity,
                                                                score_sensitivity)))

        def cells(xs: tuple[int, ...]) -> int:
            return int(np.prod([sizes[i] for i in xs])) if xs else 1

        def parent_sets(x: int, chosen: list[int]) -> list[tuple[int, ...]]:
            for size in range(min(k, len(chosen)), 0, -1):
                sets = [p for p in combinations(sorted(chosen), size) if cells((x,) + p) <= cell_limit]
                if sets:
                    return sets
            return [()]

        # 2. structure: greedy, exponential mechanism on R ------------------------------------------
        first = int(rng.integers(d))
        order, parents = [first], [()]
        scores_cache: dict[tuple[int, tuple[int, ...]], float] = {}
        steps = d - 1 if k > 0 else 0
        step_rho = [rho1 / steps] * steps if steps else []
        if steps:
            step_rho[-1] = rho1 - sum(step_rho[:-1], Fraction(0))
        for step in range(steps):
            rest = [x for x in range(d) if x not in order]
            cands = [(x, p) for x in rest for p in parent_sets(x, order)]
            if len(cands) > self.max_candidates:
                keep = np.sort(rng.choice(len(cands), size=self.max_candidates, replace=False))
                cands = [cands[i] for i in keep]
            scores = np.empty(len(cands))
            for j, (x, p) in enumerate(cands):
                if (x, p) not in scores_cache:
                    counts = data.marginal(tuple(attrs[i] for i in (x,) + p)).reshape(sizes[x], cells(p))
                    scores_cache[(x, p)] = r_score(counts)
                scores[j] = scores_cache[(x, p)]
            j = budget.exponential(scores, rho=step_rho[step], sensitivity=2.0 * score_sensitivity,
                                   label=f"network step {step + 1} of {steps}", source=SOURCE + " Alg. 4 (R score)")
            x, p = cands[j]
            order.append(x)
            parents.append(p)
            progress(0.05 + 0.6 * (step + 1) / steps, f"{attrs[x]} ← {', '.join(attrs[i] for i in p) or '∅'}")
        if k == 0:  # no structure: the attributes in table order, independent
            order = list(range(d))
            parents = [()] * d

        # 3. noisy marginals of the maximal sets {X_i} ∪ Π_i ---------------------------------------
        sets = [tuple(sorted((x,) + p)) for x, p in zip(order, parents)]
        released: list[tuple[int, ...]] = []
        for s in sets:
            if s in released or any(set(s) < set(t) for t in sets):
                continue
            released.append(s)
        m = len(released)
        exact = [data.marginal(tuple(attrs[i] for i in s)) for s in released]
        label = f"conditional marginals ({m})"
        src = SOURCE + " Alg. 1 line 3"
        if self.noise == "laplace":
            noisy, _ = budget.laplace(np.concatenate(exact), rho=rho2, sensitivity=score_sensitivity * m,
                                      label=label, source=src, integer=True)
        else:
            noisy, _ = budget.gaussian(np.concatenate(exact), rho=rho2,
                                       sensitivity=histogram_sensitivity * math.sqrt(m), label=label,
                                       source=src, integer=True)
        tables = {s: np.clip(v, 0, None).reshape([sizes[i] for i in s])
                  for s, v in zip(released, np.split(noisy, np.cumsum([len(e) for e in exact])[:-1]))}

        # 4. conditionals Pr[X | Π] (post-processing) ----------------------------------------------
        conds = []
        for x, p, s in zip(order, parents, sets):
            home = next(t for t in released if set(s) <= set(t))
            arr = tables[home]
            keep = (x,) + p  # axes wanted, parents first in the end
            drop = tuple(ax for ax, i in enumerate(home) if i not in keep)
            arr = arr.sum(axis=drop) if drop else arr
            rest = [i for i in home if i in keep]
            arr = np.transpose(arr, [rest.index(i) for i in p + (x,)]).reshape(cells(p), sizes[x])
            tot = arr.sum(axis=1, keepdims=True)
            prob = np.where(tot > 0, arr / np.where(tot > 0, tot, 1.0), 1.0 / sizes[x])
            cum = np.cumsum(prob, axis=1)
            cum[:, -1] = 1.0
            conds.append(cum)
        progress(1.0, "fitted")
        return PrivBayesModel(attrs, tuple(order), tuple(parents), tuple(conds), sizes, n_hat, n_variance)
