"""The degree baseline: a noisy degree distribution per FK, then random assignment.

This is the baseline the relational papers compare against (the per-relation synthesis with
noisy group-size histograms of PrivLava, Cai, Xiao & Cormode, SIGMOD 2023, §7.1; a random
relation with the degree structure kept; docs/methods/degree.md). Per foreign key
``child → parent``:

* **private parent** (synthetic parent rows have no identity in common with the real ones):
  release the distribution of group sizes (children per parent) with the Gaussian mechanism.

  - *tuple unit* (default ``tuple_release="cumulative"``): the **cumulative counts**
    ``C_d = #{parents with fewer than d children}`` at every degree ``d = 1…τ``
    (:func:`cumulative_edges`), the null count appended for a nullable FK. One tuple-unit
    neighbour moves one child, which changes two degrees by one each; each crosses at most one
    threshold, so at most two cells change by 1: L2 sensitivity ``√2`` whatever the thresholds
    (:meth:`DegreeLinker.cumulative_sensitivity`), against ``√6`` for the histogram.
    Post-processing (free): the number of parents ``n`` is public, and ``C`` is non-decreasing
    from 0 to ``n``;
    the closest such curve to the noisy one (isotonic regression clipped to ``[0, n]``,
    :func:`~relviz.privacy.postprocessing.project_monotone`; the maximum-likelihood estimate under
    the i.i.d. Gaussian noise and these public constraints) is differenced into a histogram. Each
    ``C_d`` carries its own noise σ, where the CDF of a noisy histogram at the ``k``-th bin carries
    ``σ_h·√k`` (``σ_h = √3·σ``), and the Kolmogorov–Smirnov distance the degree metric measures is
    an error of the CDF: nycflights13 flights → planes (tuple unit, ε = 1, seeds 0–4) goes from
    0.959…0.973 to 0.984…0.989.
  - *row and entity units*, or ``tuple_release="histogram"``: the histogram of group sizes —
    how many parents have 0, 1, …, τ children (degrees above the cap τ count in the last bin;
    for caps of 16 and more, public geometric bins above degree 3, :func:`degree_bin_edges`);
    its L2 sensitivity is the privacy unit's group multiplier
    (``Multipliers.degree_histogram``). For a nullable FK the number of children
    with a null FK is appended (the two parts compose in L2). Post-processing: under row-level
    units (public table sizes) the projection onto the public number of parents and mean degree
    when the histogram is informative (``σ·√bins < n``), else clipping at 0; under the entity unit
    the projection onto the simplex scaled to the noisy total. (The cumulative release does not
    pay off there: a row-unit neighbour re-points up to 2τ links whose threshold crossings can all
    fall on one cell, and an entity-unit neighbour removes a group, which changes every ``C_d``
    above its degree.)

  Linking draws a degree for every synthetic parent from that distribution (stratified), thins
  (or tops up proportionally) the slots to exactly the number of non-null synthetic children,
  and assigns children to slots at random.
* **public parent** (parent identities are public): release the vector of children per parent
  (plus the null count) with the Gaussian mechanism (sensitivity ``Multipliers.parent_counts``);
  post-process (free, from the noisy vector and σ alone). The noisy count is
  ``y_i = c_i + N(0, σ²)``. First an empirical-Bayes model of the counts (:func:`fit_count_model`):
  Poisson(λ) — children pick their parent at random — or zero-inflated Poisson (a share π₀ of
  childless parents), fitted by maximum likelihood on ``y`` with the mean held at ``ȳ``, the
  zero inflation kept only when it pays BIC's ``ln(n)/2``. The model is used when the noisy counts
  do not reject it (Kolmogorov–Smirnov distance between their empirical CDF and the model's
  prediction ``P(y ≤ x)`` below the 1 % level) and the noise is at least the counts' Poisson
  spread (``λ ≤ σ²``); a marginal rejection (not at the 0.1 % level) stands only when the free
  deconvolution beats the model by BIC (:func:`count_model_holds`). Linking then gives the parent with the ``i``-th smallest noisy count the
  model's quantile at ``(i + ½)/n``, the rate scaled to the synthetic number of children (rank
  from the data, values from the estimated distribution: Shen & Louis, JRSS-B 1998). On TPC-H
  (σ ≈ 14 for ~3.4 orders per customer) the zero rule below emptied most parents (KS similarity
  0.23); the model gives 0.96. Otherwise the **deconvolved** distribution (nonparametric
  maximum likelihood, Kiefer & Wolfowitz 1956, fitted by EM; :func:`deconvolve_counts`), ranked
  the same way, when it beats the zero rule's share of childless parents by BIC (nycflights13
  flights → planes at ε = 1: KS similarity 0.83 → 0.91, docs/methods/degree.md §3). Else
  (**zero rule**, ``public="zero"`` always): a parent with
  no child is ≤ 0 after noise with probability ½, so ``ẑ = 2·#{noisy ≤ 0}`` estimates how many
  parents have no child; the ``n − ẑ`` largest noisy counts are kept and the others set to 0
  (``zero="auto"``). Clipping at 0 alone gave half of nycflights13's 1,455 never-used airports
  some departures; a fixed 2σ threshold instead emptied the ~480 planes with few flights. The kept
  counts become proportions; linking gives each parent its share of the synthetic children by
  randomised rounding (exact total) and assigns children at random.

Relationships to attributes are not modelled: a child's parent is independent of the child's
and the parent's attributes. That is what bi-adjacency (issue 5) improves on, and, for a public
parent, fk-attribute (``relviz.relational.keyed``, docs/methods/keyed.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import ClassVar

import numpy as np
from scipy import stats

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.privacy.postprocessing import SizeFact, project_counts, project_counts_moment, project_monotone
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.registry import register
from relviz.schema import ForeignKey, Schema

__all__ = ["CountModel", "Deconvolution", "DegreeLinker", "DegreeLink", "cumulative_edges", "deconvolve_counts", "fit_count_model",
           "noisy_count_density", "round_counts"]

SOURCE = ("degree baseline: noisy degree histogram + random assignment "
          "(docs/methods/degree.md; Gaussian mechanism, Bun & Steinke 2016)")


ZERO_KEEP_SIGMAS = 3.0  # noisy per-parent counts at or above 3σ are never zeroed by the auto rule


def degree_bin_edges(tau: int, bins: str = "auto") -> np.ndarray:
    """Public bin starts of the degree histogram ``0…τ``.

    ``"exact"``: one bin per degree. ``"auto"``: the same for caps below :data:`BINNED_FROM`;
    for larger caps one bin per degree up to :data:`EXACT_DEGREES` − 1, then bins that grow
    geometrically by :data:`BIN_GROWTH` (each at least one wider than the last): a cap of 1,500
    gives 18 bins instead of 1,501 (measured on nycflights13 flights per plane, tuple unit with
    the histogram release, ε = 1, 5 seeds: mean KS similarity 0.965 against 0.951 with 40 bins
    of growth 1.2; the tuple unit's default cumulative release uses :func:`cumulative_edges`). Every
    sensitivity of the histogram holds for any public binning (a changed group still moves one
    count between two bins), while the noise each bin carries is spread over far fewer bins.

    Returns:
        ``(k,)`` int64 starts, ``0 = e_0 < … ≤ τ``.
    """
    if bins == "exact" or tau < BINNED_FROM:
        return np.arange(tau + 1, dtype=np.int64)
    edges = list(range(EXACT_DEGREES))
    width = 1
    while True:
        width = max(width + 1, int(np.ceil(edges[-1] * (BIN_GROWTH - 1))))
        nxt = edges[-1] + width
        if nxt > tau:
            break
        edges.append(nxt)
    return np.array(edges, dtype=np.int64)


BINNED_FROM = 16  # caps below 16 keep one bin per degree
EXACT_DEGREES = 4  # above, degrees 0…3 get a bin each
BIN_GROWTH = 1.5  # then each bin is about half as wide as the degree where it starts

CUMULATIVE_EXACT = 4096  # tuple unit: a cumulative count at every degree up to this many cells
CUMULATIVE_GROWTH = 1.01  # above: thresholds 1 % apart (the release's σ does not grow with them)
TUPLE_CUMULATIVE_SENSITIVITY = float(np.sqrt(2.0))  # see DegreeLinker.cumulative_sensitivity


def cumulative_edges(tau: int) -> np.ndarray:
    """Public thresholds of the tuple unit's cumulative release, as bin starts ``0 = e_0 < e_1 <
    … ≤ τ``: the release is ``#{degree < e_k}`` for ``k = 1 … K − 1``.

    Every degree ``1…τ`` when ``τ <`` :data:`CUMULATIVE_EXACT`; above, every degree below
    ``CUMULATIVE_EXACT / 4`` and then thresholds :data:`CUMULATIVE_GROWTH` apart (at most a few
    thousand cells whatever τ; more thresholds cost no accuracy, since the L2 sensitivity of the
    release is the same for any set of them, only computing time).

    Returns:
        ``(K,)`` int64 starts.
    """
    if tau < CUMULATIVE_EXACT:
        return np.arange(tau + 1, dtype=np.int64)
    edges = list(range(CUMULATIVE_EXACT // 4))
    while True:
        nxt = max(edges[-1] + 1, int(np.ceil(edges[-1] * CUMULATIVE_GROWTH)))
        if nxt > tau:
            break
        edges.append(nxt)
    return np.array(edges, dtype=np.int64)


def round_counts(weights: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Non-negative integers proportional to ``weights`` that sum to exactly ``total``.

    Randomised rounding: floor of the expected counts plus a multinomial draw of the remainder on
    the fractional parts (unbiased: ``E[counts] = total · w / Σw``).
    """
    w = np.clip(np.asarray(weights, dtype=float), 0, None)
    if total <= 0:
        return np.zeros(len(w), dtype=np.int64)
    if w.sum() <= 0:
        w = np.ones(len(w))
    expected = w / w.sum() * total
    base = np.floor(expected).astype(np.int64)
    rest = int(total - base.sum())
    if rest > 0:
        frac = expected - base
        extra = rng.choice(len(w), size=rest, replace=False, p=frac / frac.sum())
        base[extra] += 1
    return base


# --- public parent: a Poisson model of the per-parent counts (empirical Bayes) -------------------
EXACT_RATE = 50.0  # rates up to this use the exact Poisson ⊛ Gaussian likelihood; above, N(λ, λ + σ²)
DISPERSION_LEVEL = 0.01  # the index-of-dispersion test's level (fit_count_model)
GOF_CRITICAL = 1.63  # √n·D above this rejects the model (Kolmogorov distribution, level 1 %)
RATE_GRID = 200  # candidate rates of the zero-inflated fit
LIKELIHOOD_BLOCK = 2048  # noisy values per block of the count model's likelihood (memory bound)
LIKELIHOOD_EXACT_MAX = 20_000  # distinct noisy values up to which the likelihood uses each one
LIKELIHOOD_BIN = 0.05  # above: the noisy values binned at this many σ (the binned release's likelihood)
GOF_EXACT_MAX = 20_000  # distinct noisy values up to which the GOF evaluates the CDF at each one
GOF_GRID = 0.01
"""Grid step, in σ, of the goodness-of-fit CDF above :data:`GOF_EXACT_MAX` distinct noisy values
(when that is more than four per grid point): the model's CDF ``F`` is computed on the grid and
interpolated linearly. ``F`` is a mixture of normal CDFs of standard deviation at least σ, so
``|F''| ≤ 1/(σ²·√(2πe))`` and the interpolation error is at most ``h²/8·|F''| ≤ 3.1·10⁻⁶`` at
``h = 0.01σ``: on the KS statistic ``√n·D`` at most 0.009 at 8·10⁶ parents (TPC-H sf 10's
partsupp), against the critical 1.63."""


def _exact_rates(y: np.ndarray, lam: np.ndarray, sigma: float, cdf: bool) -> np.ndarray:
    """``(n, J)`` density (or CDF) at ``y`` of ``Poisson(λ_j) + N(0, σ²)``, exact sum over counts."""
    top = float(lam.max(initial=0.0))
    k = np.arange(int(np.ceil(top + 10.0 * np.sqrt(top + 1.0) + 10.0)) + 1)
    pmf = stats.poisson.pmf(k[:, None], lam[None, :])  # (K, J)
    z = (y[:, None] - k[None, :]) / sigma
    g = stats.norm.cdf(z) if cdf else stats.norm.pdf(z) / sigma
    return g @ pmf


def noisy_count_density(y: np.ndarray, lam: np.ndarray, sigma: float, *, cdf: bool = False) -> np.ndarray:
    """Density (or CDF) at ``y`` of a count ``c ~ Poisson(λ)`` released as ``c + N(0, σ²)``.

    Exact (a sum over counts) for ``λ ≤`` :data:`EXACT_RATE`; above, the normal approximation
    ``N(λ, λ + σ²)`` of the Poisson (its skewness ``λ^{-1/2}`` is then below 0.15).

    Returns:
        ``(n, J)`` float64 for ``n`` values ``y`` and ``J`` rates ``λ``.
    """
    y = np.asarray(y, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    out = np.empty((y.size, lam.size))
    small = lam <= EXACT_RATE
    if small.any():
        out[:, small] = _exact_rates(y, lam[small], sigma, cdf)
    if (~small).any():
        sd = np.sqrt(lam[~small] + sigma ** 2)
        z = (y[:, None] - lam[None, ~small]) / sd[None, :]
        out[:, ~small] = stats.norm.cdf(z) if cdf else stats.norm.pdf(z) / sd[None, :]
    return out


@dataclass(frozen=True)
class CountModel:
    """Zero-inflated Poisson model of the children per public parent (``zero = 0``: Poisson).

    Attributes:
        rate: λ of the Poisson part (children per parent that is not structurally childless).
        zero: Share of structurally childless parents π₀.
        gof: √n·D, the Kolmogorov–Smirnov distance between the noisy counts and the model's
            prediction for them (the model is used when it is below :data:`GOF_CRITICAL`).
    """

    rate: float
    zero: float
    gof: float

    def quantiles(self, probs: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """Smallest integers ``k`` with ``P(c ≤ k) ≥ p`` under the model with rate ``scale·λ``."""
        probs = np.asarray(probs, dtype=np.float64)
        # P(c ≤ k) = π₀ + (1 − π₀)·F_λ(k) ≥ p  ⇔  F_λ(k) ≥ (p − π₀)/(1 − π₀)
        q = np.clip((probs - self.zero) / max(1.0 - self.zero, 1e-300), 0.0, 1.0)
        k = stats.poisson.ppf(q, self.rate * scale)
        return np.where(probs <= self.zero, 0, np.nan_to_num(k, nan=0.0)).astype(np.int64)


def _binned_log_likelihood(y: np.ndarray, lam: np.ndarray, zero: np.ndarray, sigma: float) -> np.ndarray:
    """Log-likelihood of every (rate, zero share) of :func:`fit_count_model` for the noisy counts
    ``y`` binned at ``LIKELIHOOD_BIN·σ``: ``Σ_b m_b·log P(y ∈ b)``, with ``P(y ∈ b)`` the model's
    CDF difference over bin ``b`` (the exact likelihood of the binned values, which are
    post-processing of the release). Used above :data:`LIKELIHOOD_EXACT_MAX` distinct values
    when there are fewer bins than distinct values (continuous Gaussian noise gives one per
    parent: 8·10⁵ at TPC-H sf 1's partsupp), where its cost follows the number of bins (the
    range of ``y`` over ``LIKELIHOOD_BIN·σ``), not of parents. A bin is a twentieth of the noise's σ, so the binned values keep nearly all the
    information about the rate (Sheppard's correction: the bin adds ``w²/12`` = 0.0002·σ² of
    variance); ``tests/relational/test_degree.py`` compares the two fits."""
    width = LIKELIHOOD_BIN * sigma
    lo, hi = float(y.min()), float(y.max())
    n_bins = max(1, int(np.ceil((hi - lo) / width)) + 1)
    edges = lo - width / 2 + width * np.arange(n_bins + 1)
    mult = np.bincount(np.clip(((y - edges[0]) // width).astype(np.int64), 0, n_bins - 1),
                       minlength=n_bins)
    keep = np.flatnonzero(mult)
    ll = np.zeros(len(lam))
    for i in range(0, len(keep), LIKELIHOOD_BLOCK):
        b = keep[i:i + LIKELIHOOD_BLOCK]
        up = noisy_count_density(edges[b + 1], lam, sigma, cdf=True)
        down = noisy_count_density(edges[b], lam, sigma, cdf=True)
        up0, down0 = stats.norm.cdf(edges[b + 1] / sigma), stats.norm.cdf(edges[b] / sigma)
        ll += _mixture_log_likelihood(mult[b], up0 - down0, up - down, zero)
    return ll


def _mixture_log_likelihood(weights: np.ndarray, childless: np.ndarray, counts: np.ndarray,
                            zero: np.ndarray) -> np.ndarray:
    """``Σ_i w_i·log(π₀·childless_i + (1 − π₀)·counts_ij)`` for every rate ``j`` of the
    zero-inflated model (``zero`` holds π₀ per rate): the densities (or bin probabilities) of an
    observation under a childless parent (``(n,)``) and under each rate's Poisson (``(n, J)``)."""
    p = zero[None, :] * childless[:, None] + (1.0 - zero[None, :]) * counts
    return weights @ np.log(np.clip(p, 1e-300, None))


def fit_count_model(noisy: np.ndarray, sigma: float, *, tested: bool = True) -> CountModel | None:
    """Empirical-Bayes fit of the per-parent counts from their noisy release (post-processing).

    The release is ``y_i = c_i + N(0, σ²)``. Two nested models of the counts ``c_i`` are fitted
    by maximum likelihood on ``y`` (each count's likelihood integrates its unseen value):
    Poisson(λ) — children pick their parent at random, the relation of the degree baseline — and
    the zero-inflated Poisson (a share π₀ of parents is childless, the others Poisson(λ)). The
    mean is held at the noisy mean ``ȳ`` (``(1 − π₀)·λ = ȳ``), so each fit is a search over one
    parameter. The zero-inflated model is kept when it raises the log-likelihood by more than
    BIC's price of its extra parameter (``ln(n)/2``, Schwarz 1978). The chosen model is then
    checked against the noisy counts themselves: the Kolmogorov–Smirnov distance between their
    empirical CDF and the model's prediction ``P(y ≤ x)``; above :data:`GOF_CRITICAL`/√n (level 1 %)
    the counts carry structure the model does not have and ``None`` is returned; the same when
    their spread fails the index-of-dispersion test (``Σ(y − ȳ)²`` against the model's variance
    of ``y``, χ²(n − 1), level 1 %). ``None`` also
    when ``λ > σ²``: the noise is then smaller than the Poisson spread of the counts, each noisy
    count is already a fair draw of its parent's count, and the zero rule keeps them.

    Args:
        noisy: ``(n,)`` noisy counts. sigma: Their noise σ.
        tested: ``False`` skips the two tests (the maximum-likelihood model, for
            :func:`count_model_holds`).

    Returns:
        The model, or ``None`` when it is rejected (or ``ȳ ≤ 0``).
    """
    y = np.asarray(noisy, dtype=np.float64)
    n = y.size
    mean = float(y.mean()) if n else 0.0
    if n < 2 or mean <= 0 or sigma <= 0:
        return None
    top = max(float(y.max()), mean)
    lam = np.unique(np.geomspace(mean, top + 1e-9, RATE_GRID))
    zero = 1.0 - mean / lam
    # the log-likelihood of every rate, over the distinct noisy values (each weighted by how
    # often it occurs) in blocks of LIKELIHOOD_BLOCK: memory (block × rates × exact counts), not
    # (parents × …) — 800,000 TPC-H partsupp rows at sf 1 took ~8 GB at once
    u, mult = np.unique(y, return_counts=True)
    if len(u) > LIKELIHOOD_EXACT_MAX and (u[-1] - u[0]) / (LIKELIHOOD_BIN * sigma) < len(u):
        ll = _binned_log_likelihood(y, lam, zero, sigma)
    else:
        ll = np.zeros(len(lam))
        for i in range(0, len(u), LIKELIHOOD_BLOCK):
            ub = u[i:i + LIKELIHOOD_BLOCK]
            ll += _mixture_log_likelihood(mult[i:i + LIKELIHOOD_BLOCK],
                                          stats.norm.pdf(ub / sigma) / sigma,
                                          noisy_count_density(ub, lam, sigma), zero)
    best = int(np.argmax(ll))
    j = best if ll[best] - ll[0] > 0.5 * np.log(n) else 0
    model_rate, model_zero = float(lam[j]), float(zero[j])
    if model_rate > sigma ** 2:  # the noise is smaller than the counts' own Poisson spread:
        return None  # each noisy count is then a good draw of its parent's count (the zero rule)
    # goodness of fit: ECDF of y against P(y ≤ x); integer releases (discrete Gaussian) compare
    # with the continuous prediction half a unit on (a continuity correction)
    half = 0.5 if np.all(y == np.round(y)) else 0.0
    v, counts = np.unique(y, return_counts=True)
    ecdf = np.cumsum(counts) / n

    def pred(x: np.ndarray) -> np.ndarray:
        out = np.empty(len(x))
        for i in range(0, len(x), LIKELIHOOD_BLOCK):  # in blocks, as the likelihood above
            xb = x[i:i + LIKELIHOOD_BLOCK]
            out[i:i + LIKELIHOOD_BLOCK] = model_zero * stats.norm.cdf(xb / sigma) + (1.0 - model_zero) \
                * noisy_count_density(xb, np.array([model_rate]), sigma, cdf=True)[:, 0]
        return out

    step = GOF_GRID * sigma
    points = (v[-1] - v[0] + 2 * half + 3 * step) / step  # grid size, before building it
    if len(v) > GOF_EXACT_MAX and points * 4 < len(v):  # the CDF on a grid, interpolated
        grid = np.arange(v[0] - half - step, v[-1] + half + 2 * step, step)
        at_grid = pred(grid)

        def pred_at(x: np.ndarray) -> np.ndarray:
            return np.interp(x, grid, at_grid)
    else:
        pred_at = pred
    d = max(float(np.abs(ecdf - pred_at(v + half)).max()),
            float(np.abs(np.append(0.0, ecdf[:-1]) - pred_at(v - half)).max()))
    gof = float(np.sqrt(n) * d)
    # and the spread: the index-of-dispersion test (Fisher 1950; Cochran, Biometrics 10, 1954)
    # with the model's variance of y, (1 − π₀)·λ·(1 + π₀·λ) + σ²: a sum of squares above the
    # χ²(n − 1) 99 % quantile says the counts vary more than the model allows. The KS test above
    # has little power on few parents (65 schools: Poisson kept in 2 of 20 noise seeds, KS
    # similarity 0.71 against the zero rule's 0.92; this test rejects both)
    model = CountModel(model_rate, model_zero, gof)
    return None if tested and count_model_rejected(y, sigma, model) else model


def count_model_rejected(noisy: np.ndarray, sigma: float, model: CountModel, *,
                         gof_critical: float = GOF_CRITICAL, level: float = DISPERSION_LEVEL) -> bool:
    """The tests of :func:`fit_count_model`: the model's KS statistic ``model.gof`` above
    ``gof_critical``, or the index-of-dispersion statistic ``Σ(y − ȳ)²`` over the model's variance
    of ``y``, ``(1 − π₀)·λ·(1 + π₀·λ) + σ²``, above the χ²(n − 1) quantile ``1 − level``."""
    y = np.asarray(noisy, dtype=np.float64)
    var = (1.0 - model.zero) * model.rate * (1.0 + model.zero * model.rate) + sigma ** 2
    spread = float(((y - y.mean()) ** 2).sum() / var)
    return model.gof > gof_critical or spread > float(stats.chi2.ppf(1.0 - level, len(y) - 1))


NPMLE_MASS = 0.999  # the deconvolution's atoms counted for BIC: those that carry this much mass
GOF_CRITICAL_STRONG = 1.95  # √n·D of the Kolmogorov distribution at level 0.1 %
DISPERSION_STRONG = 0.001  # the index-of-dispersion test's level for a clear rejection


def count_model_holds(noisy: np.ndarray, sigma: float, model: CountModel) -> bool:
    """Whether a count model the tests of :func:`fit_count_model` rejected still explains the
    noisy counts as well as the free deconvolution (post-processing).

    Each test rejects a true model 1 % of the time, and when the noise dwarfs the counts (TPC-H
    orders per customer: λ ≈ 3.4 at σ = 32) the fallbacks are far worse than the model (KS
    similarity 0.68 and 0.09 on the one seed of ten that was rejected at ε 0.4 and 0.2, against
    0.97). A clear rejection (either test at level 0.1 %: :data:`GOF_CRITICAL_STRONG`,
    :data:`DISPERSION_STRONG`) stands; a marginal one is confirmed only when the deconvolved
    distribution (:func:`deconvolve_counts`, the same Gaussian likelihood) beats the model's
    log-likelihood by BIC's price of its extra parameters, ``ln(n)/2`` per atom beyond the
    model's two (the atoms holding :data:`NPMLE_MASS` of its mass).
    """
    y = np.asarray(noisy, dtype=np.float64)
    if count_model_rejected(y, sigma, model, gof_critical=GOF_CRITICAL_STRONG, level=DISPERSION_STRONG):
        return False
    u, mult = np.unique(y, return_counts=True)
    dens = model.zero * stats.norm.pdf(u / sigma) / sigma + (1.0 - model.zero) \
        * noisy_count_density(u, np.array([model.rate]), sigma)[:, 0]
    ll_model = float(mult @ np.log(np.clip(dens, 1e-300, None)))
    free = deconvolve_counts(y, sigma)
    mix = np.zeros(len(u))
    for i in range(0, len(u), LIKELIHOOD_BLOCK):
        ub = u[i:i + LIKELIHOOD_BLOCK]
        mix[i:i + LIKELIHOOD_BLOCK] = stats.norm.pdf((ub[:, None] - free.support[None, :]) / sigma) \
            @ free.probs / sigma
    ll_free = float(mult @ np.log(np.clip(mix, 1e-300, None)))
    atoms = int(np.searchsorted(np.cumsum(np.sort(free.probs)[::-1]), NPMLE_MASS) + 1)
    return ll_free - ll_model <= 0.5 * np.log(len(y)) * max(atoms - 2, 1)


DECONV_INTEGERS = 400  # support of the deconvolved distribution: every count 0…400, then
DECONV_GEOMETRIC = 200  # 200 geometric points up to max y + 3σ
DECONV_ITERATIONS = 3000  # EM iterations (stops earlier once the log-likelihood gains < 1e-10·n)


@dataclass(frozen=True)
class Deconvolution:
    """Distribution of the children per public parent, deconvolved from their noisy release.

    Attributes:
        support: ``(K,)`` float64 candidate counts (integers ``0…400``, then geometric).
        probs: ``(K,)`` float64 probabilities (sum 1).
        loglik: Log-likelihood of the noisy counts under ``probs`` (Gaussian noise, up to a
            constant shared by every fit of the same data).
    """

    support: np.ndarray
    probs: np.ndarray
    loglik: float

    def quantiles(self, probs: np.ndarray) -> np.ndarray:
        """Smallest support points ``k`` with ``P(c ≤ k) ≥ p``, int64."""
        cdf = np.cumsum(self.probs)
        cdf = cdf / cdf[-1]
        i = np.minimum(np.searchsorted(cdf, np.asarray(probs, dtype=np.float64), side="left"),
                       len(self.support) - 1)
        return self.support[i].astype(np.int64)


def deconvolve_counts(noisy: np.ndarray, sigma: float, *, zero: float | None = None) -> Deconvolution:
    """Nonparametric maximum-likelihood estimate of the distribution of counts ``c_i`` from
    ``y_i = c_i + N(0, σ²)`` (post-processing of the release; no private value is read).

    The Kiefer–Wolfowitz NPMLE ("Consistency of the maximum likelihood estimator in the presence
    of infinitely many incidental parameters", Ann. Math. Statist. 27, 1956) on a fixed grid of
    counts, fitted by EM (Laird, "Nonparametric maximum likelihood estimation of a mixing
    distribution", JASA 73, 1978): ``w ← w · Lᵀ(1/Lw)/n`` with ``L_ik = φ((y_i − s_k)/σ)``. The
    noisy counts are grouped on a grid of width ``max(1, σ/20)`` (a shift of at most σ/40, far
    below the noise) so each iteration costs (distinct values × grid points), not (parents ×
    grid points). Our own code: a few lines of EM; the libraries that fit NPMLEs need a convex
    solver (Koenker & Mizera 2014's interior point) that is not a dependency here.

    Args:
        noisy: ``(n,)`` noisy counts. sigma: Their noise σ (> 0).
        zero: Hold the mass at count 0 fixed at this share (the other counts ≥ 1 are fitted);
            ``None`` fits it too.

    Returns:
        The :class:`Deconvolution`.
    """
    y = np.asarray(noisy, dtype=np.float64)
    h = max(1.0, sigma / 20.0)
    top = max(float(y.max(initial=0.0)) + 3.0 * sigma, 1.0)
    ints = np.arange(0, min(DECONV_INTEGERS, int(np.ceil(top))) + 1, dtype=np.float64)
    support = ints if top <= ints[-1] else np.unique(
        np.concatenate([ints, np.round(np.geomspace(ints[-1], top, DECONV_GEOMETRIC))]))
    u, cnt = np.unique(np.round(y / h) * h, return_counts=True)
    d2 = (u[:, None] - support[None, :]) ** 2 / (2.0 * sigma * sigma)
    off = d2.min(axis=1)
    lik = np.exp(-(d2 - off[:, None]))  # each row scaled by its largest entry (no underflow)
    n = float(cnt.sum())
    w = np.full(len(support), 1.0 / len(support))
    if zero is not None:
        w[0], w[1:] = zero, (1.0 - zero) / max(len(support) - 1, 1)
    prev = -np.inf
    for _ in range(DECONV_ITERATIONS):
        p = np.maximum(lik @ w, 1e-300)  # a weight can underflow to 0 when σ is tiny
        ll = float(cnt @ np.log(p))
        w = w * (lik.T @ (cnt / p)) / n
        if zero is not None:
            w[1:] *= (1.0 - zero) / max(float(w[1:].sum()), 1e-300)
            w[0] = zero
        if ll - prev < 1e-10 * n:
            break
        prev = ll
    loglik = float(cnt @ (np.log(np.maximum(lik @ w, 1e-300)) - off))
    return Deconvolution(support, w / w.sum(), loglik)


@dataclass(frozen=True)
class DegreeLink:
    """A fitted degree model for one FK.

    Attributes:
        public_parent: Whether the parent table is public (per-parent counts were released).
        weights: Public parent: non-negative weight per parent row; private parent: probability
            of each degree bin.
        null_share: Share of children with a null FK (0 for a non-nullable FK).
        cap: τ (private parent) or 0.
        edges: Private parent: the public bin starts (bin ``k`` holds degrees ``edges[k] …
            edges[k+1] − 1``, the last one up to τ); ``None``: one bin per degree ``0…τ``.
        model: Public parent: the fitted count model (:func:`fit_count_model`); ``weights`` are
            then the noisy counts, used only to rank the parents. ``None``: ``weights`` are the
            zero rule's proportions (or, with ``deconvolution``, the noisy counts).
        deconvolution: Public parent: the deconvolved count distribution
            (:func:`deconvolve_counts`) when neither the count model nor the zero rule was kept.
        size_facts: When table sizes are private (entity unit), what the release says about them
            (:meth:`DegreeLinker.size_facts`), for the synthesizer's size reconciliation.
    """

    public_parent: bool
    weights: np.ndarray
    null_share: float
    cap: int
    edges: np.ndarray | None = None
    model: CountModel | None = None
    deconvolution: Deconvolution | None = None
    size_facts: tuple[SizeFact, ...] = ()

    def mean_degree(self) -> float:
        """Private parent: the mean of :meth:`draw_degrees`' distribution (children per parent)."""
        edges = np.arange(self.cap + 1) if self.edges is None else self.edges
        hi = np.append(edges[1:], self.cap + 1)
        w = np.asarray(self.weights, dtype=np.float64)
        return float(w @ ((edges + hi - 1) / 2.0) / max(float(w.sum()), 1e-300))

    def draw_degrees(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` degrees from the fitted distribution, int64, in random order.

        Stratified: the ``i``-th degree is the distribution's quantile at ``(i + U_i)/n`` (one
        uniform draw per stratum), so the ``n`` degrees follow the fitted distribution up to
        ``1/n`` in every quantile instead of the ``≈ 1/√n`` of independent draws; within a bin
        the degree is uniform.
        """
        edges = np.arange(self.cap + 1) if self.edges is None else self.edges
        u = (np.arange(n) + rng.random(n)) / max(n, 1)
        cdf = np.cumsum(self.weights)
        b = np.minimum(np.searchsorted(cdf / cdf[-1], u, side="right"), len(edges) - 1)
        hi = np.append(edges[1:], self.cap + 1)
        lo = edges[b]
        deg = lo + np.floor(rng.random(n) * (hi[b] - lo)).astype(np.int64)
        return rng.permutation(deg.astype(np.int64))

    def model_degrees(self, target: int, rng: np.random.Generator) -> np.ndarray:
        """Public parent with a count model: the model's degrees, assigned by rank of noisy count.

        The rate is scaled so that the expected total is ``target`` (every parent's expected
        number of children scales alike); the ``i``-th smallest noisy count (ties in random
        order) gets the model's quantile at ``(i + ½)/n``, so the degrees follow the model up to
        ``1/n`` in every quantile and a parent's rank is its noisy count's (Shen & Louis 1998's
        rank-then-histogram estimate of an ensemble).
        """
        m, n = self.model, len(self.weights)
        probs = (np.arange(n) + 0.5) / n
        if m is None:  # the deconvolved distribution (its total is matched by the caller)
            assert self.deconvolution is not None
            values = self.deconvolution.quantiles(probs)
        else:
            scale = target / max(n * (1.0 - m.zero) * m.rate, 1e-300)
            values = m.quantiles(probs, scale)
        order = np.lexsort((rng.random(n), self.weights))
        deg = np.empty(n, dtype=np.int64)
        deg[order] = values
        return deg

    def parent_degrees(self, n_p: int, target: int, rng: np.random.Generator) -> np.ndarray:
        """Children per synthetic parent row, ``(n_p,)`` int64 summing to ``target``: the count
        model's or deconvolution's degrees ranked by noisy count (public parent), the kept noisy
        proportions rounded (public parent, zero rule), or degrees drawn from the fitted
        distribution (private parent); never above τ unless ``target > τ·n_p``."""
        ranked = self.model is not None or self.deconvolution is not None
        if self.public_parent and ranked and len(self.weights) == n_p:
            return match_total(self.model_degrees(target, rng), target, rng, cap=self.cap)
        if self.public_parent:
            w = self.weights if len(self.weights) == n_p else np.ones(n_p)
            return round_counts(w, target, rng)
        return match_total(self.draw_degrees(n_p, rng), target, rng, cap=self.cap)

    def link(self, child: EncodedTable, parent: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> np.ndarray:
        n_c, n_p = child.n_rows, parent.n_rows
        out = np.full(n_c, -1, dtype=np.int64)
        n_null = int(round(self.null_share * n_c))
        rows = rng.permutation(n_c)[n_null:]  # children that get a parent
        target = len(rows)
        if target == 0:
            return out
        if n_p == 0:
            raise ValueError("cannot link children to an empty parent table")
        counts = self.parent_degrees(n_p, target, rng)
        progress(0.5, "assigning children")
        slots = np.repeat(np.arange(n_p, dtype=np.int64), counts)
        out[rows] = slots[rng.permutation(target)]
        return out


def match_total(deg: np.ndarray, target: int, rng: np.random.Generator, *, cap: int = 0,
                offset: float = 0.0, strict_cap: bool = False) -> np.ndarray:
    """Degrees close to ``deg`` with exactly ``target`` children in all.

    Too many: the slots are thinned uniformly (keeps the shape of the distribution). Too few: the
    deficit is added in proportion to ``deg + offset`` among the parents below ``cap`` (``0``: no
    cap), in rounds until it is placed. Shared by the degree baseline (``offset`` 0) and Denorm's
    group sizes (``offset`` 1) so that no synthetic parent exceeds a published cap τ; only when
    ``target`` exceeds ``τ·len(deg)`` (more synthetic children than the cap allows) does the rest
    go in proportion to ``deg + offset`` over every parent, since every child needs a parent
    (``strict_cap``: stop at the cap instead and return fewer, for Denorm, which generates the
    children from the sizes).

    Args:
        deg: ``(n,)`` non-negative int degrees.
        target: Total number of children (≥ 0).
        cap: τ, or 0 for none.
        offset: Added to the top-up weights (1: childless parents can get children too).
        strict_cap: Never exceed ``cap``, even if the total then falls short of ``target``.

    Returns:
        ``(n,)`` int64 degrees summing to ``target`` (at most ``target`` with ``strict_cap``).
    """
    deg = np.asarray(deg, dtype=np.int64)
    n = len(deg)
    s = int(deg.sum())
    if s == 0 and offset == 0:
        deg, s = np.ones(n, dtype=np.int64), n
    if s >= target:
        slots = np.repeat(np.arange(n), deg)
        keep = rng.choice(s, size=target, replace=False)
        return np.bincount(slots[keep], minlength=n).astype(np.int64)
    deficit = target - s
    while deficit > 0 and cap > 0:
        room = cap - deg
        w = np.where(room > 0, deg + offset, 0.0)
        if w.sum() <= 0:
            w = (room > 0).astype(np.float64)
            if w.sum() == 0:
                break
        add = np.minimum(rng.multinomial(deficit, w / w.sum()), np.maximum(room, 0))
        deg = deg + add
        deficit = target - int(deg.sum())
    if deficit > 0 and not (strict_cap and cap > 0):
        w = deg + offset
        w = w if w.sum() > 0 else np.ones(n)
        deg = deg + rng.multinomial(deficit, w / w.sum())
    return deg


@register
@dataclass(frozen=True)
class DegreeLinker:
    """Noisy degree distribution per FK, random assignment (no attribute correlation).

    Args:
        zero: Public parent post-processing: ``"auto"`` (keep the ``n − 2·#{noisy ≤ 0}`` largest
            noisy counts, zero the rest) or a number ``k`` (zero the counts below ``k·σ``; 0 keeps
            every positive count).
        bins: Private parent: ``"auto"`` (exact small degrees, geometric bins above,
            :func:`degree_bin_edges`) or ``"exact"`` (one bin per degree ``0…τ``).
        public: Public parent: ``"auto"`` (the Poisson count model when the noisy counts fit it,
            :func:`fit_count_model`; else the deconvolved distribution when it beats the zero
            rule by BIC, :func:`deconvolve_counts`; else the zero rule) or ``"zero"`` (always the
            zero rule).
        tuple_release: Private parent under the tuple unit: ``"cumulative"`` (the numbers of
            parents with fewer than ``d`` children, sensitivity √2, fitted by isotonic
            regression; :meth:`cumulative_sensitivity`) or ``"histogram"`` (the degree histogram,
            sensitivity √6, as under the other units).
    """

    name: ClassVar[str] = "degree"
    label: ClassVar[str] = "Degree baseline (noisy degree histogram + random links)"
    gaussian_only: ClassVar[bool] = True
    needs_synthetic_tables: ClassVar[bool] = False
    zero: str | float = "auto"
    bins: str = "auto"
    public: str = "auto"
    tuple_release: str = "cumulative"

    def __post_init__(self) -> None:
        if self.zero != "auto" and not (isinstance(self.zero, (int, float)) and self.zero >= 0):
            raise ParameterError("zero", "zero must be 'auto' or a number ≥ 0")
        if self.bins not in ("auto", "exact"):
            raise ParameterError("bins", "bins must be 'auto' or 'exact'")
        if self.public not in ("auto", "zero"):
            raise ParameterError("public", "public must be 'auto' or 'zero'")
        if self.tuple_release not in ("cumulative", "histogram"):
            raise ParameterError("tuple_release", "tuple_release must be 'cumulative' or 'histogram'")

    def _zeroed(self, noisy: np.ndarray, sigma: float) -> np.ndarray:
        """Post-processing of noisy per-parent counts (see the class docstring)."""
        if self.zero == "auto":
            # ẑ = 2·#{noisy ≤ 0} estimates the childless parents; but a parent whose noisy count
            # is ≥ 3σ is kept whatever ẑ says (a childless one gets there with probability
            # 0.13 %): when almost every parent is childless ẑ can reach n and would otherwise
            # zero every weight (issue: flights.origin spread over all 1,458 airports).
            n_zero = min(len(noisy), 2 * int((noisy <= 0).sum()),
                         int((noisy < ZERO_KEEP_SIGMAS * sigma).sum()))
            keep = np.argsort(-noisy, kind="stable")[: len(noisy) - n_zero]
            out = np.zeros_like(noisy)
            out[keep] = np.clip(noisy[keep], 0, None)
            return out if out.any() else np.clip(noisy, 0, None)
        return np.where(noisy >= float(self.zero) * sigma, np.clip(noisy, 0, None), 0.0)

    @staticmethod
    def _deconvolve(noisy: np.ndarray, sigma: float, zeroed: np.ndarray) -> Deconvolution | None:
        """The deconvolved count distribution, or ``None`` when the zero rule explains the noisy
        counts about as well (docs/methods/degree.md §3, "Deconvolution").

        Two NPMLEs (:func:`deconvolve_counts`) are compared: one free, one with the zero rule's
        share of childless parents held fixed. The free fit is kept when it raises the
        log-likelihood by more than BIC's ``ln(n)/2`` for its one extra free parameter; otherwise
        the zero rule stands. The zero rule is right when the childless parents are apart from
        the others (airports: 1,455 unused, 3 with 10⁵ flights), where the free fit cannot tell
        0 from 1 child (the noise mean is resolved to σ/√n); the free fit is right when many
        parents have a few children, which the zero rule counts as childless (planes with 1–3
        flights at σ = 16)."""
        free = deconvolve_counts(noisy, sigma)
        fixed = deconvolve_counts(noisy, sigma, zero=float((zeroed <= 0).mean()))
        return free if free.loglik - fixed.loglik > 0.5 * np.log(len(noisy)) else None

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        unit = schema.privacy_unit
        if not schema.table(fk.parent).public and (unit is None or fk.name not in unit.caps):
            return [Problem("missing_cap", "the degree baseline needs a public degree cap τ for an FK "
                            "with a private parent", fk.child, ", ".join(fk.columns))]
        return []

    def noise_scales(self, schema: Schema, fk: ForeignKey, rho: Fraction | float, *,
                     multipliers: Multipliers) -> dict[str, float]:
        """σ of the Gaussian release :meth:`fit` makes for ``fk`` with budget ``rho``.

        Public computation (reads no data): the same sensitivity and ρ as ``fit``, so the value
        equals the ``sigma`` of the ledger entry a fit records.

        Args:
            schema: The schema (public or private parent, caps).
            fk: The foreign key.
            rho: The FK's ρ (exact ``Fraction`` as in ``Plan.rho_of``; floats are converted).
            multipliers: The privacy unit's multipliers (``relviz.privacy.sensitivity.multipliers``).

        Returns:
            ``{release label: σ}``: for a public parent, the children per parent row (one cell per
            parent, plus the null count when nullable); for a private parent, the degree histogram
            ``0…τ`` (one cell per degree, plus the null count when nullable).
        """
        rho = Fraction(rho)
        if schema.table(fk.parent).public:
            label = f"children per {fk.parent} row" + (" + null count" if fk.nullable else "")
            return {label: gaussian_sigma(multipliers.parent_counts(fk.name), rho)}
        tau = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        null = " + null count" if fk.nullable else ""
        if self._cumulative(multipliers, tau):
            return {self._cum_label(tau) + null: gaussian_sigma(self.cumulative_sensitivity(multipliers), rho)}
        sens = multipliers.degree_release(fk.name, with_null=fk.nullable)
        return {self._hist_label(tau) + null: gaussian_sigma(sens, rho)}

    def cdf_noise(self, schema: Schema, fk: ForeignKey, rho: Fraction | float, *,
                  multipliers: Multipliers) -> float | None:
        """Typical largest noise of the released degree CDF, in parents (public; reads no data).

        The Kolmogorov–Smirnov distance the degree metric measures is an error of the CDF, so
        this scale, divided by the number of parents, is the KS error the release's noise alone
        costs. Histogram release over ``K`` bins: the CDF at bin ``k`` sums ``k`` noisy cells,
        a random walk whose largest excursion is of order ``σ·√K``. Cumulative release (tuple
        unit): ``K`` independent cells, whose largest is about ``σ·√(2 ln K)``.

        Returns:
            That scale (parents), or ``None`` for a public parent (per-parent counts, no CDF).
        """
        if schema.table(fk.parent).public:
            return None
        (sigma,) = self.noise_scales(schema, fk, rho, multipliers=multipliers).values()
        tau = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        if self._cumulative(multipliers, tau):
            cells = len(cumulative_edges(tau) if self.bins == "auto" else np.arange(tau + 1))
            return float(sigma * np.sqrt(2.0 * np.log(max(cells, 2))))
        return float(sigma * np.sqrt(len(degree_bin_edges(tau, self.bins))))

    @staticmethod
    def _hist_label(tau: int) -> str:
        return f"degree histogram 0…{tau}"

    @staticmethod
    def _cum_label(tau: int) -> str:
        return f"parents with fewer than d children, d = 1…{tau}"

    def _cumulative(self, multipliers: Multipliers, tau: int) -> bool:
        """Whether the private-parent release is the cumulative one (public rule: unit, τ, option)."""
        return multipliers.tuple_unit and self.tuple_release == "cumulative" and tau >= 1

    @staticmethod
    def cumulative_sensitivity(multipliers: Multipliers) -> float:
        """L2 sensitivity of the tuple unit's cumulative release (null count included).

        The release is ``C_k = #{parents with degree < e_k}`` at public thresholds ``e_1 < … <
        e_{K−1}`` (:func:`cumulative_edges`), plus the null count for a nullable FK. A tuple-unit
        neighbour changes one row and its own FK values (sizes and caps kept): either a child
        moves from parent ``a`` to parent ``b`` (``a``'s degree falls by one, ``b``'s rises by
        one), or between a parent and null (one degree changes by one, the null count by one), or
        only attributes change (nothing). A degree changing by one crosses at most one threshold,
        so it changes at most one ``C_k``, by 1. Hence at most two cells change, by 1 each: L2
        ``√2``, for any set of thresholds (the histogram's ``√6`` comes from the two groups'
        changes overlapping as ``(−1, +2, −1)``; cumulative counts have no such overlap, the two
        changes cancel instead). A self-referential FK is the same: the changed row's own FK moves
        it between two groups, its children's rows are unchanged.

        Raises:
            ValueError: the unit is not the tuple unit (the row unit re-points up to 2τ links,
                whose crossings can all fall on one threshold; the histogram is released there).
        """
        if not multipliers.tuple_unit:
            raise ValueError("the cumulative degree release is derived for the tuple unit only")
        return TUPLE_CUMULATIVE_SENSITIVITY

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter, synthetic: object = None) -> DegreeLink:
        fk = rel.fk
        progress(0.0, "measuring degrees")
        if schema.table(fk.parent).public:
            exact = rel.parent_counts()
            if not fk.nullable:
                exact = exact[:-1]
            noisy, sigma = budget.gaussian(
                exact, rho=budget.rho, sensitivity=multipliers.parent_counts(fk.name),
                label=f"children per {fk.parent} row ({rel.n_parent:,} parents"
                      + (" + null" if fk.nullable else "") + ")", module="degree", source=SOURCE, integer=True)
            vals = np.asarray(noisy[:-1] if fk.nullable else noisy, dtype=np.float64)
            # one maximum-likelihood fit; a rejection by its tests is confirmed by BIC
            ml = fit_count_model(vals, sigma, tested=False) if self.public == "auto" else None
            model = ml if ml is not None and (not count_model_rejected(vals, sigma, ml) or (
                len(vals) > 1 and count_model_holds(vals, sigma, ml))) else None
            deconv = None
            w = vals if model is not None else self._zeroed(vals, sigma)
            if model is None and self.public == "auto" and len(vals) > 1:
                deconv = self._deconvolve(vals, sigma, w)
                if deconv is not None:
                    w = vals
            null_share = 0.0
            if fk.nullable:  # the noisy null count against the noisy number of linked children
                ranked = model is not None or deconv is not None
                linked = max(float(vals.sum()), 0.0) if ranked else float(w.sum())
                null = max(float(noisy[-1]), 0.0)
                null_share = null / (null + linked) if null + linked > 0 else 0.0
            facts: tuple[SizeFact, ...] = ()
            if not multipliers.row_unit:  # Σ noisy counts: the linked children, unbiased
                facts = (SizeFact({fk.child: 1.0 - null_share}, float(vals.sum()),
                                  sd=sigma * float(np.sqrt(len(vals))),
                                  label=f"{fk.name}: Σ noisy children per {fk.parent} row"),)
            progress(1.0, "fitted")
            return DegreeLink(True, w, null_share, 0, model=model, deconvolution=deconv, size_facts=facts)
        tau = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        if self._cumulative(multipliers, tau):
            return self._fit_cumulative(rel, budget, tau, multipliers, progress)
        sigma = gaussian_sigma(multipliers.degree_release(fk.name, with_null=fk.nullable), budget.rho)
        edges = degree_bin_edges(tau, self.bins)
        # a public rule (σ, the bins and, under row-level units, the number of parents are
        # public): a histogram whose noise outweighs its counts (σ·√bins ≥ parents) is released
        # per degree and only clipped (see below)
        informative = multipliers.row_unit and sigma * np.sqrt(len(edges)) < rel.n_parent
        if multipliers.row_unit and not informative:
            edges = degree_bin_edges(tau, "exact")
        hist = rel.degree_histogram(tau, edges)
        exact = np.append(hist, rel.parent_counts()[-1]) if fk.nullable else hist
        noisy, _ = budget.gaussian(
            exact, rho=budget.rho, sensitivity=multipliers.degree_release(fk.name, with_null=fk.nullable),
            label=self._hist_label(tau) + (" + null count" if fk.nullable else ""), module="degree",
            source=SOURCE, integer=True)
        hist_noisy, null_noisy = (noisy[:-1], max(noisy[-1], 0.0)) if fk.nullable else (noisy, 0.0)
        # post-processing (free): the closest valid histogram that agrees with what is known
        hi = np.append(edges[1:], tau + 1)
        mids = (edges + hi - 1) / 2.0  # mean degree of a bin under the uniform in-bin draw
        if informative:
            # table sizes are public under row-level units: the histogram must count every
            # parent and, with the noisy null count, every linked child (its mean degree); the
            # projection onto both constraints removes the tail that noise in empty high-degree
            # bins would otherwise add
            n_child = rel.child_rows()
            n_linked = max(n_child - null_noisy, 0.0) if fk.nullable else float(n_child)
            counts = project_counts_moment(hist_noisy, float(rel.n_parent), mids, n_linked)
            null_share = float(np.clip(null_noisy / max(n_child, 1), 0.0, 1.0)) if fk.nullable else 0.0
        else:
            # entity unit (sizes are private: the noisy number of parents), or a histogram that is
            # mostly noise (σ·√bins ≥ parents): projecting it on the public sizes would put every
            # parent at the cap — the truncated data's answer, far from the raw degrees (KS
            # similarity 0.34 against 0.57 for this rule on nycflights13 planes, row unit, τ = 30)
            counts = (np.clip(hist_noisy, 0, None) if multipliers.row_unit
                      else project_counts(hist_noisy, max(float(hist_noisy.sum()), 1.0)))
            n_linked = float(np.dot(counts, mids))
            null_share = null_noisy / (null_noisy + n_linked) if null_noisy + n_linked > 0 else 0.0
        if counts.sum() <= 0:
            counts = np.ones_like(counts)
        p = counts / counts.sum()
        link = DegreeLink(False, p, float(null_share), tau, None if len(edges) == tau + 1 else edges)
        if not multipliers.row_unit:  # σ: the histogram's, computed above
            link = replace(link, size_facts=self.size_facts(fk, link, float(hist_noisy.sum()),
                                                            sigma * float(np.sqrt(len(edges)))))
        progress(1.0, "fitted")
        return link

    @staticmethod
    def size_facts(fk: ForeignKey, link: DegreeLink, parents: float, sd: float) -> tuple[SizeFact, ...]:
        """What a private parent's degree release says about the table sizes (sizes private).

        Two facts: the noisy histogram's sum estimates the number of parents (standard
        deviation ``σ·√bins``), and the synthetic children must number the fitted mean degree
        times the parents (``(1 − null share)·n_child = μ·n_parent``), so that :meth:`DegreeLink.link`
        realises the fitted degree distribution instead of thinning or topping it up to an
        unrelated total (the tie also keeps ``n_child ≤ τ·n_parent``, the public cap). Without
        them the two tables' sizes are separate noisy totals: galton at ε = 0.5 (entity unit,
        τ = 15) drew 23 families for 475 children in one run, every family at the cap.

        Args:
            fk: The FK. link: Its fitted private-parent link. parents: ``Σ`` noisy histogram.
            sd: The sum's standard deviation.

        Returns:
            ``(estimate, tie)`` (:class:`~relviz.privacy.postprocessing.SizeFact`); the estimate
            alone for a self-referential FK.
        """
        mu = link.mean_degree()
        estimate = SizeFact({fk.parent: 1.0}, parents, sd=sd, label=f"{fk.name}: Σ noisy degree histogram")
        if fk.child == fk.parent:  # one table: every row is a parent and a child, no tie
            return (estimate,)
        return (estimate, SizeFact({fk.child: 1.0 - link.null_share, fk.parent: -mu}, 0.0, "tie",
                                   label=f"{fk.name}: children = mean degree {mu:.3g} × parents"))

    def _fit_cumulative(self, rel: PrivateForeignKey, budget: Budget, tau: int,
                        multipliers: Multipliers, progress: Reporter) -> DegreeLink:
        """Tuple unit, private parent: release the cumulative counts, fit them by isotonic
        regression (see :meth:`cumulative_sensitivity` and docs/methods/degree.md §3)."""
        fk = rel.fk
        edges = cumulative_edges(tau) if self.bins == "auto" else np.arange(tau + 1, dtype=np.int64)
        hist = rel.degree_histogram(tau, edges)
        below = np.cumsum(hist)[:-1]  # C_k = #{degree < e_k}, k = 1 … K − 1
        exact = np.append(below, rel.parent_counts()[-1]) if fk.nullable else below
        noisy, _ = budget.gaussian(
            exact, rho=budget.rho, sensitivity=self.cumulative_sensitivity(multipliers),
            label=self._cum_label(tau) + (" + null count" if fk.nullable else ""), module="degree",
            source=SOURCE, integer=True)
        below_noisy, null_noisy = (noisy[:-1], max(float(noisy[-1]), 0.0)) if fk.nullable else (noisy, 0.0)
        # post-processing (free): the number of parents n is public under the tuple unit and the
        # counts are a non-decreasing curve from 0 to n; its closest such curve (isotonic
        # regression, the maximum-likelihood fit under Gaussian noise) differenced gives the
        # histogram. Each C_k carries its own noise (σ, not σ·√k as a summed histogram would).
        n = float(rel.n_parent)
        fitted = project_monotone(below_noisy, 0.0, n)
        counts = np.diff(np.concatenate(([0.0], fitted, [n])))
        if counts.sum() <= 0:
            counts = np.ones_like(counts)
        n_child = rel.child_rows()
        null_share = float(np.clip(null_noisy / max(n_child, 1), 0.0, 1.0)) if fk.nullable else 0.0
        progress(1.0, "fitted")
        return DegreeLink(False, counts / counts.sum(), null_share, tau,
                          None if len(edges) == tau + 1 else edges)
