"""DP preprocessing of a table before a single-table mechanism: rare-category merge, uniform bins.

Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data Synthesis",
§5.1 (Algorithm 1) and §5.2, with the budget rule of their App. D.2: preprocessing gets 10 % of the
table's ρ when some column needs it, else nothing.

* **Rare-category merge** (Algorithm 1) for categorical attributes whose *declared* category list
  has at least β = 100 entries (decided from the public schema, :func:`rare_merge_columns`; never
  from the data). Their 1-way histograms over the full declared list (zeros included, so the
  release does not reveal which categories occur) are released with the Gaussian mechanism — one
  concatenated release of the k columns, L2 sensitivity √k × the unit's histogram multiplier,
  i.e. ρ/k per column — and every category whose noisy count is below the dual threshold
  ``max(θ·n̂_j, 3σ)`` (θ = 0.2 %, n̂_j the column's noisy total) joins one shared "rare" code.
  The mechanism then sees the merged domain (:class:`MergedTable`, whose marginals are sums of the
  original ones), and sampling draws a merged category uniformly among the rare group's members.
  Fewer than two rare categories: nothing is merged.
* **Uniform bins** on declared bounds are relviz's encoding already (``relviz.encoding``, 100 bins
  by default, no budget); :func:`with_uniform_bins` rebinds numeric attributes, e.g. the 32-bin
  fast preset (:data:`FAST_BINS`).

Mechanisms take the merge through their ``rare_merge`` parameter (the attribute names), e.g.
``get("aim", rare_merge=rare_merge_columns(table))``; :func:`fit_with_rare_merge` spends the
preprocessing share, fits the mechanism on the merged view with the rest, and wraps its model.

Why relviz writes this itself: a histogram, a threshold and a code map; the benchmark's reference
code counts only the categories present in the data, which relviz must not do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from relviz.errors import ParameterError, Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.schema import Table

__all__ = ["BETA", "THETA", "SHARE", "FAST_BINS", "rare_merge_columns", "with_uniform_bins", "MergedTable",
           "MergedModel", "rare_merge", "fit_with_rare_merge", "RareMergeFit", "preprocess_noise_scales", "merge_problems"]

SOURCE = ("rare-category merge (Chen, Li, Gong, McKenna & Wang, \"Benchmarking Differentially Private "
          "Tabular Data Synthesis\", §5.1, Alg. 1)")
BETA = 100
"""Declared category lists at least this long are merged."""
THETA = 0.002
"""Merge threshold θ = 0.2 % of the noisy column total."""
SHARE = Fraction(1, 10)
"""Share of the table's ρ spent on preprocessing when some column needs it."""
FAST_BINS = 32
"""Bins of the fast numeric preset (the default encoding uses 100)."""


def rare_merge_columns(table: Table, beta: int = BETA) -> tuple[str, ...]:
    """Categorical attributes of ``table`` whose declared list has ≥ ``beta`` categories (public)."""
    return tuple(a.name for a in table.attributes if a.kind == "categorical" and len(a.categories or ()) >= beta)


def with_uniform_bins(table: Table, bins: int = FAST_BINS) -> Table:
    """``table`` with every uniformly binned numeric/datetime attribute re-binned to ``bins``
    uniform bins on its declared bounds (explicit public edges are kept)."""
    attrs = tuple(dataclasses.replace(a, bins=int(bins)) if a.kind in ("numeric", "datetime") and a.edges is None
                  else a for a in table.attributes)
    return dataclasses.replace(table, attributes=attrs)


class MergedTable:
    """A :class:`~relviz.privacy.measure.PrivateTable` seen through a public code map.

    Marginals are the original (logged) marginals summed over merged codes.

    Attributes:
        name, attributes: As the original table.
        sizes: Domain sizes after merging.
        mapping: ``{attribute: original code → merged code}`` of the merged attributes.
    """

    def __init__(self, inner: PrivateTable, mapping: dict[str, np.ndarray]) -> None:
        self._inner = inner
        self.mapping = mapping
        self.name = inner.name
        self.attributes = inner.attributes
        self._full = dict(zip(inner.attributes, inner.sizes))
        self.sizes = tuple(int(mapping[a].max()) + 1 if a in mapping else int(s)
                           for a, s in zip(inner.attributes, inner.sizes))

    def domain(self) -> dict[str, int]:
        return dict(zip(self.attributes, self.sizes))

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        attrs = tuple(attrs)
        x = self._inner.marginal(attrs)
        if not any(a in self.mapping for a in attrs):
            return x
        size = dict(zip(self.attributes, self.sizes))
        idx = np.zeros(1, dtype=np.int64)
        for a in attrs:
            m = self.mapping.get(a, np.arange(self._full[a]))
            idx = (idx[:, None] * size[a] + m[None, :]).ravel()
        return np.bincount(idx, weights=x, minlength=int(np.prod([size[a] for a in attrs])))

    def total(self) -> int:
        return self._inner.total()


@dataclass
class MergedModel:
    """A model fitted on a :class:`MergedTable`; sampling undoes the merge uniformly.

    Attributes:
        inner: The mechanism's model (codes over the merged domain).
        attributes: Attribute names in table order.
        mapping: ``{attribute: original code → merged code}``.
    """

    inner: object
    attributes: tuple[str, ...]
    mapping: dict[str, np.ndarray]

    @property
    def total(self) -> float:
        return float(self.inner.total)  # type: ignore[attr-defined]

    @property
    def total_variance(self) -> float:
        return float(getattr(self.inner, "total_variance", math.inf))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        codes = np.asarray(self.inner.sample(n, rng), dtype=np.int64).copy()  # type: ignore[attr-defined]
        for a, m in self.mapping.items():
            j = self.attributes.index(a)
            col = codes[:, j]
            out = np.empty_like(col)
            order = np.argsort(m, kind="stable")  # original codes grouped by merged code
            start = np.searchsorted(m[order], np.arange(int(m.max()) + 1))
            count = np.bincount(m, minlength=int(m.max()) + 1)
            out[:] = order[start[col] + np.floor(rng.random(len(col)) * count[col]).astype(np.int64)]
            codes[:, j] = out
        return codes


def rare_merge(data: PrivateTable, budget: Budget, rho: Fraction, *, attributes: Sequence[str],
               histogram_sensitivity: float, theta: float = THETA) -> dict[str, np.ndarray]:
    """Algorithm 1: release the 1-way histograms of ``attributes`` and merge their rare categories.

    Args:
        data: The private table.
        budget: The table's budget (the release is charged to it, module ``"preprocess"``).
        rho: ρ of the release (shared equally by the columns).
        attributes: Attributes to merge (public choice).
        histogram_sensitivity: The unit's histogram multiplier.
        theta: Merge threshold as a share of the noisy column total.

    Returns:
        ``{attribute: original code → merged code}`` for the attributes with ≥ 2 rare categories
        (kept categories keep their order; the rare code is the last).
    """
    attributes = tuple(attributes)
    k = len(attributes)
    exact = [data.marginal((a,)) for a in attributes]
    noisy, sigma = budget.gaussian(np.concatenate(exact), rho=rho, sensitivity=histogram_sensitivity * math.sqrt(k),
                                   label=f"rare-category merge: 1-way counts ({k} attributes)",
                                   module="preprocess", source=SOURCE, integer=True)
    mapping = {}
    for a, y in zip(attributes, np.split(noisy, np.cumsum([len(e) for e in exact])[:-1])):
        rare = y < max(theta * float(y.sum()), 3 * sigma)
        if rare.sum() < 2:
            continue
        m = np.empty(len(y), dtype=np.int64)
        m[~rare] = np.arange(int((~rare).sum()))
        m[rare] = int((~rare).sum())
        mapping[a] = m
    return mapping


def preprocess_noise_scales(table: Table, rho: Fraction, attributes: Sequence[str],
                            histogram_sensitivity: float) -> tuple[dict[str, float], Fraction]:
    """``({label: σ} of the merge release, ρ left for the mechanism)`` (public, no data)."""
    k = len(tuple(attributes))
    if k == 0:
        return {}, Fraction(rho)
    rho_pre = SHARE * Fraction(rho)
    return ({f"rare-category merge: 1-way counts ({k} attributes)":
             gaussian_sigma(histogram_sensitivity * math.sqrt(k), rho_pre)}, Fraction(rho) - rho_pre)


def merge_problems(table: Table, attributes: Sequence[str]) -> list:
    """Problems of a ``rare_merge`` list on ``table``: unknown or non-categorical attributes."""
    from relviz.errors import Problem

    kinds = {a.name: a.kind for a in table.attributes}
    return [Problem("bad_parameter", f"rare_merge names {a!r}, which is not a categorical attribute of the "
                    "table", table.name, a) for a in attributes if kinds.get(a) != "categorical"]


def check_merge_attributes(table_attributes: Sequence[str], attributes: Sequence[str]) -> None:
    unknown = [a for a in attributes if a not in table_attributes]
    if unknown:
        raise ParameterError("rare_merge", f"rare_merge names attributes the table does not have: {unknown}")


def fit_with_rare_merge(fit: Callable[[PrivateTable, Budget], object], data: PrivateTable, budget: Budget, *,
                        attributes: Sequence[str], histogram_sensitivity: float,
                        theta: float = THETA) -> object:
    """Spend :data:`SHARE` of ``budget`` on :func:`rare_merge`, then ``fit`` the mechanism on the
    merged view with the rest; returns its model wrapped in :class:`MergedModel` (or the model
    unchanged when ``attributes`` is empty)."""
    attributes = tuple(attributes)
    if not attributes:
        return fit(data, budget)
    check_merge_attributes(data.attributes, attributes)
    rho_pre = SHARE * budget.rho
    mapping = rare_merge(data, budget, rho_pre, attributes=attributes, histogram_sensitivity=histogram_sensitivity,
                         theta=theta)
    inner = Budget(budget.accountant, budget.component, budget.rho - rho_pre, budget.rng)
    model = fit(MergedTable(data, mapping) if mapping else data, inner)
    return MergedModel(model, tuple(data.attributes), mapping) if mapping else model


class RareMergeFit:
    """What AIM, PrivBayes and PrivSyn share around the rare-category merge: ``fit`` (the merge
    first, :func:`fit_with_rare_merge`, then the mechanism's own ``_fit`` on the merged view),
    ``problems`` (attributes over ``max_domain`` that are not merged, bad merge lists) and
    ``noise_scales`` (the merge's σ, then the mechanism's own ``_noise_scales`` on the rest).
    ``label``'s first word names the mechanism in messages."""

    label: ClassVar[str]
    rare_merge: tuple[str, ...]
    merge_theta: float
    max_domain: int

    def problems(self, table: Table) -> list[Problem]:
        """Every attribute over ``max_domain`` codes that is not merged, and the merge list's
        problems (:func:`merge_problems`)."""
        who = self.label.split()[0]
        return [Problem("oversized_domain", f"{a.size:,} codes exceed {who}'s limit of "
                        f"{self.max_domain:,}; coarsen the bins or the category list", table.name, a.name)
                for a in table.attributes if a.size > self.max_domain and a.name not in self.rare_merge] + \
            merge_problems(table, self.rare_merge)

    def noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float) -> dict[str, float]:
        """σ of the releases known before the run (public; reads no data): the rare-category merge
        when ``rare_merge`` names attributes (10 % of ρ), then the mechanism's own (its
        ``_noise_scales``; computed on the declared domains)."""
        pre, rest = preprocess_noise_scales(table, Fraction(rho), self.rare_merge, histogram_sensitivity)
        return {**pre, **self._noise_scales(table, rest, histogram_sensitivity=histogram_sensitivity,  # type: ignore[attr-defined]
                                            score_sensitivity=score_sensitivity)}

    def fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
            score_sensitivity: float, progress: Callable[..., None]):  # noqa: ANN201 - the mechanism's model
        """Spend ``budget`` on ``data`` (after the rare-category merge when ``rare_merge`` names
        attributes)."""
        return fit_with_rare_merge(
            lambda d, b: self._fit(d, b, histogram_sensitivity=histogram_sensitivity,  # type: ignore[attr-defined]
                                   score_sensitivity=score_sensitivity, progress=progress),
            data, budget, attributes=self.rare_merge, histogram_sensitivity=histogram_sensitivity,
            theta=self.merge_theta)
