"""MST — the Maximum-Spanning-Tree mechanism (McKenna, Miklau & Sheldon 2021) on Private-PGM.

Documented in docs/methods/mst.md (the paper: McKenna, Miklau & Sheldon, "Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data", Journal of Privacy and
Confidentiality 11(3), 2021). With the table's ρ split in thirds:

1. measure all d 1-way marginals with the Gaussian mechanism (concatenated vector, L2
   sensitivity √d per row × the unit's histogram multiplier; ρ/3);
2. compress each large domain by the 3σ rule: values whose noisy count is below 3σ merge into
   one rare value (the merged measurement is re-weighted by ``mbi``'s
   ``LinearMeasurement.compress``);
3. fit an independence model to the 1-way measurements and score every pair by
   ``w_ab = ‖x_ab − x̂_ab‖₁``; build a maximum spanning tree Kruskal-style, each of the d − 1
   edges chosen by the exponential mechanism among pairs joining two components (score
   sensitivity 1 × the unit's score multiplier; ρ/3 split evenly over the d − 1 steps);
4. measure the d − 1 selected 2-way marginals (L2 sensitivity √(d−1) per row; ρ/3);
5. estimate a graphical model from all measurements (``mbi`` mirror descent) and sample.

relviz's deviations, all public and documented: only domains with more than
``compress_above`` codes are compressed (small domains keep fixed shapes so JAX reuses its
compiled code across runs; compressing them buys little); the independence model's 2-way
marginals are computed directly as outer products of the non-negative least-squares 1-way
estimates (what ``mbi`` returns for 1-way cliques, without a JIT compile); mbi samples with the
global numpy RNG, so sampling runs inside a context that seeds it from the caller's generator and
restores it afterwards. Two options, off by default, serve PrivLava's line-1 model
(docs/methods/mst.md §4): ``joint`` attribute groups that are one tree node (a split
attribute's digits), and the ``"excess"`` selection score (L1 minus its expectation for an
independent pair, computed from the noisy 1-way estimates).

**Latent columns** (``fit(latent=…, own_sensitivity=…)``, used by PrivLava's augmented tables,
docs/methods/privlava.md §4): when some attributes are latent columns whose values change on
rows the neighbour leaves otherwise untouched, a marginal without any of them has a smaller
sensitivity (``own_sensitivity``). The 1-way and the 2-way marginals are then each released as
two Gaussian vectors, one without and one with latent columns, the step's ρ split by their
numbers of marginals, so that every marginal gets ``σ = Δ·√n/√(2ρ_step)`` with its own ``Δ``
(the same cost as ``n`` marginals of sensitivity 1 at ``σ/Δ``: Σ Δ²/σ² is unchanged per
marginal). A selection score of a pair with a latent column is scaled by ``own/full`` score
sensitivity, so every candidate's score has the own sensitivity and the exponential mechanism
runs at it (the scaling is public). Without ``latent`` a fit is exactly as above.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import ClassVar

import numpy as np

from relviz.encoding import code_dtype
from relviz.errors import ParameterError, Problem
from relviz.mbi_runtime import import_mbi
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.privacy.postprocessing import project_counts
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.registry import register

__all__ = ["MST", "MSTModel", "sample_mbi"]

SOURCE = "MST (McKenna, Miklau & Sheldon 2021), docs/methods/mst.md"


def mbi_total_variance(measurements: list) -> float:
    """Variance of the total mbi estimates from ``measurements`` (``math.inf`` when none counts).

    mbi's ``estimation.minimum_variance_unbiased_total`` averages the sums of the identity
    measurements (a compressed one carries a weighted query and is left out) with weights
    ``1/(σ²·cells)``, the inverse variance of each sum; the average's variance is then
    ``1/Σ 1/(σ²·cells)``. The size reconciliation (``relviz.privacy.postprocessing.
    reconcile_sizes``) weighs a table's total by it.
    """
    from mbi.factor import Factor
    from mbi.marginal_loss import DatavectorQuery

    inv = 0.0
    for m in measurements:
        identity = isinstance(m.query, DatavectorQuery) or m.query == Factor.datavector
        if identity and getattr(m.query, "use_for_total_estimation", True):
            inv += 1.0 / (float(m.stddev) ** 2 * np.size(m.noisy_measurement))
    return 1.0 / inv if inv > 0 else math.inf


@contextlib.contextmanager
def global_numpy_seed(rng: np.random.Generator):  # noqa: ANN201
    """Seed numpy's global RNG from ``rng`` for the duration (mbi samples with it), then restore."""
    state = np.random.get_state()
    np.random.seed(int(rng.integers(0, 2**32 - 1)))
    try:
        yield
    finally:
        np.random.set_state(state)


SAMPLE_CHUNK_ROWS = 1_000_000
"""Rows per call of mbi's ``synthetic_data`` in :func:`sample_mbi` (its temporaries are a few
int64 arrays per row: about 10⁸ bytes per 10⁶ rows)."""


def sample_mbi(model, n: int, attributes: tuple[str, ...], rng: np.random.Generator,
               mapping: dict[str, np.ndarray] | None = None,
               chunk_rows: int = SAMPLE_CHUNK_ROWS) -> np.ndarray:  # noqa: ANN001 - an mbi model
    """``n`` synthetic rows of an mbi ``MarkovRandomField``, drawn ``chunk_rows`` at a time.

    mbi's ``synthetic_data`` (randomized rounding of the model's marginals, then each attribute
    drawn given those already drawn) holds several int64 arrays of its row count at once, and a
    row-wise ``np.unique`` over them; for a table of 6·10⁷ rows (TPC-H sf 10's line items) that
    is tens of GB. Here each chunk is one call (the same procedure on ``chunk_rows`` rows; the
    last chunk takes the rest), written into one preallocated output, so the peak beyond the
    output is one chunk's. Up to ``chunk_rows`` rows this is exactly one call, as before. The
    rounding error per cell grows from at most 1 to at most one per chunk, far below the
    measurements' noise.

    Args:
        model: A fitted ``mbi.MarkovRandomField``.
        n: Rows to draw (≥ 0).
        attributes: The output's column order (names of the model's domain).
        rng: Seeds mbi's global-RNG draws (:func:`global_numpy_seed`, once per chunk).
        mapping: ``{attribute: original code → compressed code}`` of compressed attributes
            (MST's 3σ rule), undone on each chunk.
        chunk_rows: Rows per call (≥ 1).

    Returns:
        ``(n, len(attributes))`` codes over the original domain, of
        :func:`relviz.encoding.code_dtype` (``uint8`` when every attribute has ≤ 256 values).
    """
    n = int(n)
    mapping = mapping or {}
    sizes = [len(mapping[a]) if a in mapping else int(model.domain[a]) for a in attributes]
    out = np.empty((n, len(attributes)), dtype=code_dtype(sizes))
    for start in range(0, max(n, 1), int(chunk_rows)):
        rows = min(int(chunk_rows), n - start)
        with global_numpy_seed(rng):
            data = model.synthetic_data(rows=max(rows, 1))
            if mapping:
                data = data.decompress(mapping)
        cols = data.to_dict()
        for j, a in enumerate(attributes):
            out[start:start + rows, j] = np.asarray(cols[a])[:rows]
    return out


def _thirds(rho: Fraction) -> tuple[Fraction, Fraction, Fraction]:
    """MST's split: ρ/3 for 1-way marginals, ρ/3 for selection, the rest (exactly ρ/3) for 2-ways."""
    rho1 = rho2 = rho / 3
    return rho1, rho2, rho - rho1 - rho2


def _split_rho(rho: Fraction, n_heavy: int, n: int) -> tuple[Fraction, Fraction]:
    """``(ρ of the marginals without latent columns, ρ of those with)``: ``ρ`` split by count."""
    own = rho * Fraction(n - n_heavy, n) if n else Fraction(0)
    return own, rho - own


def _own_histogram(attrs, latent: Collection[str], full: float,  # noqa: ANN001
                   own_sensitivity: tuple[float, float] | None) -> float | None:
    """The histogram sensitivity of marginals without latent columns, or None when the split
    does not apply (no latent attribute among ``attrs``, only latent ones, or no smaller own
    sensitivity)."""
    lat = set(latent) & set(attrs)
    if not lat or len(lat) == len(attrs) or own_sensitivity is None:
        return None
    own_h, own_s = own_sensitivity
    return float(own_h) if 0 < own_h < full and own_s > 0 else None


def _release(budget: Budget, exact: list[np.ndarray], heavy: list[bool], rho: Fraction,
             full: float, own: float | None, what: str, unit: str, step: str
             ) -> tuple[list[np.ndarray], list[float]]:
    """Release the marginals ``exact`` with the Gaussian mechanism: one vector at sensitivity
    ``full·√n`` when ``own`` is None or none is ``heavy``, else two (without / with latent
    columns) with ``ρ`` split by count (module docstring). Returns the noisy marginals and each
    one's σ, in the order of ``exact``."""
    n = len(exact)
    sizes = [len(x) for x in exact]
    n_heavy = sum(heavy)
    if own is None or n_heavy == 0:
        noisy, sigma = budget.gaussian(np.concatenate(exact), rho=rho, sensitivity=full * math.sqrt(n),
                                       label=f"{what} ({n} {unit})", source=SOURCE + " " + step,
                                       integer=True)
        return np.split(noisy, np.cumsum(sizes)[:-1]), [sigma] * n
    rho_own, rho_heavy = _split_rho(rho, n_heavy, n)
    out: list[np.ndarray] = [np.empty(0)] * n
    sigmas = [0.0] * n
    for flag, r, sens, tag in ((False, rho_own, own, "without latent columns"),
                               (True, rho_heavy, full, "with latent columns")):
        idx = [i for i in range(n) if heavy[i] == flag]
        if not idx:
            continue
        noisy, sigma = budget.gaussian(
            np.concatenate([exact[i] for i in idx]), rho=r, sensitivity=sens * math.sqrt(len(idx)),
            label=f"{what} ({len(idx)} {unit} {tag})", source=SOURCE + " " + step, integer=True)
        for i, piece in zip(idx, np.split(noisy, np.cumsum([sizes[i] for i in idx])[:-1])):
            out[i], sigmas[i] = piece, sigma
    return out, sigmas


@dataclass
class MSTModel:
    """A fitted MST model.

    Attributes:
        model: The ``mbi.MarkovRandomField`` over the (compressed) domain.
        attributes: Attribute names in table order.
        mapping: ``{attribute: original code → compressed code}`` for compressed attributes.
        cliques: The measured cliques of the tree edges (2-way, or wider with ``joint``).
        total: Estimated rows.
        measurements: The noisy releases the model was fitted to, ``(attributes, noisy counts
            (flat, C order, over the compressed domain), σ)``: PrivLava starts its tuple model
            from them (Cai, Xiao & Cormode 2023, Alg. 2 line 1).
        total_variance: Variance of ``total`` (:func:`mbi_total_variance`).
    """

    model: object
    attributes: tuple[str, ...]
    mapping: dict[str, np.ndarray]
    cliques: tuple[tuple[str, ...], ...]
    total: float
    measurements: tuple[tuple[tuple[str, ...], np.ndarray, float], ...] = ()
    total_variance: float = math.inf

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return sample_mbi(self.model, n, self.attributes, rng, self.mapping)


@register
@dataclass(frozen=True)
class MST:
    """MST on ``mbi`` (Private-PGM).

    Args:
        iters: Mirror-descent iterations of the final fit (≥ 100; the reference code uses
            5000; 1000 by default, docs/methods/mst.md §4).
        compress_above: Domains with more codes than this are compressed by the 3σ rule.
        max_cells: 2-way marginals with more cells are not candidates for the tree.
        max_domain: Largest attribute domain accepted (codes).
        required: Attribute pairs that are tree edges whatever the scores (a public choice; PrivLava
            requires its latent pair, whose joint state is one group type). They are measured
            with the other 2-way marginals and take no selection step.
        joint: Attribute groups that are one node of the tree (a public choice; PrivLava's
            line-1 model passes the two digits of each split attribute, docs/methods/privlava.md
            §5): a node's "1-way" marginal is its group's joint marginal, a tree edge's marginal
            spans both nodes' attributes, ``max_cells`` bounds that product, and ``d`` counts
            nodes. The fit is then MST on the whole attributes, in the digit coding. Grouped
            attributes are never compressed.
        score: ``"l1"`` (MST's ``‖x_ab − x̂_ab‖₁``) or ``"excess"``: that minus its expectation
            when the two are independent, ``√(2/π)·√n̂·(Σ√p̂_a)(Σ√p̂_b)`` (the binomial cells'
            mean absolute deviations, from the noisy 1-way estimates and total: post-processing,
            so the score's sensitivity is unchanged). The L1 score of an independent pair grows as
            ``√(n·cells)``, so with a few large nodes the tree becomes a star around the largest;
            the excess ranks pairs by dependence.
    """

    name: ClassVar[str] = "mst"
    latent_sensitivity: ClassVar[bool] = True  # fit(latent=…, own_sensitivity=…): module docstring
    label: ClassVar[str] = "MST (maximum spanning tree, Private-PGM)"
    gaussian_only: ClassVar[bool] = False
    iters: int = 1000
    compress_above: int = 64
    max_cells: int = 1_000_000
    max_domain: int = 10_000
    required: tuple[tuple[str, str], ...] = ()
    joint: tuple[tuple[str, ...], ...] = ()
    score: str = "l1"

    def __post_init__(self) -> None:
        if self.score not in ("l1", "excess"):
            raise ParameterError("score", "score must be 'l1' or 'excess'")
        object.__setattr__(self, "joint", tuple(tuple(g) for g in self.joint))
        seen = [a for g in self.joint for a in g]
        if len(seen) != len(set(seen)) or any(len(g) < 2 for g in self.joint):
            raise ParameterError("joint", "joint groups must be disjoint and have ≥ 2 attributes each")
        if int(self.iters) != self.iters or self.iters < 100:
            raise ParameterError("iters", "iters must be an integer ≥ 100")
        for name, low in (("compress_above", 2), ("max_cells", 4), ("max_domain", 2)):
            if getattr(self, name) < low:
                raise ParameterError(name, f"{name} must be ≥ {low}")

    def problems(self, table: Table) -> list[Problem]:
        return [Problem("oversized_domain",
                        f"{a.size:,} codes exceed MST's limit of {self.max_domain:,} (its 2-way "
                        "marginals would not fit); coarsen the bins or the category list",
                        table.name, a.name)
                for a in table.attributes if a.size > self.max_domain]

    def noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float, latent: Collection[str] = (),
                     own_sensitivity: tuple[float, float] | None = None) -> dict[str, float]:
        """σ of every Gaussian release :meth:`fit` makes on ``table`` with budget ``rho``.

        Public computation (reads no data): the same ρ thirds and sensitivities as ``fit``, so the
        values equal the ``sigma`` of the ledger entries a fit records. The 2-way σ assumes that
        all ``d − 1`` tree edges are selected (true unless ``max_cells`` keeps two components
        apart, in which case ``fit`` measures fewer marginals with a smaller σ). The selection
        steps (ρ/3 split over the ``d − 1`` steps) use the exponential mechanism, which adds no
        Gaussian noise, so they have no entry here.

        Args:
            table: The table (its attributes fix ``d``).
            rho: The table's ρ (exact ``Fraction`` as in ``Plan.rho_of``; floats are converted).
            histogram_sensitivity: The unit's histogram multiplier for the table.
            score_sensitivity: The unit's score multiplier (selection only; no σ depends on it).
            latent, own_sensitivity: As in :meth:`fit`; then the 1-way and 2-way releases are
                each listed twice, without and with latent columns.

        Returns:
            ``{release label: σ}`` in release order; σ is per cell of the released vector.
        """
        rho = Fraction(rho)
        nodes = _nodes(table.attribute_names, self.joint)
        d = len(nodes)
        if len(table.attributes) <= 1:
            from relviz.single.independent import Independent

            return Independent().noise_scales(table, rho, histogram_sensitivity=histogram_sensitivity,
                                              score_sensitivity=score_sensitivity)
        if d <= 1:  # one node: all of ρ on its joint marginal (fit's fit_single_attribute rule)
            return {f"joint marginal ({' × '.join(nodes[0])})":
                    gaussian_sigma(histogram_sensitivity, rho)}
        rho1, _, rho3 = _thirds(rho)
        own = _own_histogram(table.attribute_names, latent, histogram_sensitivity, own_sensitivity)
        if own is None:
            return {
                f"1-way marginals ({d} attributes)": gaussian_sigma(histogram_sensitivity * math.sqrt(d), rho1),
                f"2-way marginals ({d - 1} tree edges)":
                    gaussian_sigma(histogram_sensitivity * math.sqrt(d - 1), rho3),
            }
        n_lat = sum(1 for v in nodes if set(v) & set(latent))
        return {  # σ = Δ·√n/√(2ρ_step) for each group (module docstring)
            f"1-way marginals ({d - n_lat} attributes without latent columns)":
                gaussian_sigma(own * math.sqrt(d), rho1),
            f"1-way marginals ({n_lat} attributes with latent columns)":
                gaussian_sigma(histogram_sensitivity * math.sqrt(d), rho1),
            "2-way marginals (tree edges without latent columns)":
                gaussian_sigma(own * math.sqrt(d - 1), rho3),
            "2-way marginals (tree edges with latent columns)":
                gaussian_sigma(histogram_sensitivity * math.sqrt(d - 1), rho3),
        }

    def fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
            score_sensitivity: float, progress: Reporter, latent: Collection[str] = (),
            own_sensitivity: tuple[float, float] | None = None) -> MSTModel:
        """Fit MST to ``data`` within ``budget`` (module docstring).

        Args:
            histogram_sensitivity, score_sensitivity: The unit's multipliers for the table (for
                every marginal and score when ``latent`` is empty).
            latent: Attributes whose values may change on rows the neighbour otherwise leaves
                alone (PrivLava's latent columns, docs/methods/privlava.md §4).
            own_sensitivity: ``(histogram, score)`` multipliers of marginals and scores without
                any ``latent`` attribute; ignored unless positive and below the full ones.
        """
        mbi = import_mbi()
        attrs = tuple(data.attributes)
        sizes = dict(zip(attrs, data.sizes))
        rho = budget.rho
        if len(attrs) <= 1:  # nothing to select: all budget on the 1-way marginal (or the count)
            return fit_single_attribute(data, budget, histogram_sensitivity=histogram_sensitivity,
                                        score_sensitivity=score_sensitivity, progress=progress)
        nodes = _nodes(attrs, self.joint)
        d = len(nodes)
        node_of = {a: v for v in nodes for a in v}
        if d <= 1:  # one joint node: all of ρ on its marginal
            return self._fit_one_node(data, budget, nodes[0], histogram_sensitivity, progress)
        rho1, rho2, rho3 = _thirds(rho)

        # 1. one-way marginals (a joint node's: its group's joint marginal) --------------------
        progress(0.02, "measuring 1-way marginals")
        own = _own_histogram(attrs, latent, histogram_sensitivity, own_sensitivity)
        heavy_attr = {a: own is not None and a in set(latent) for a in attrs}
        heavy = {v: any(heavy_attr[a] for a in v) for v in nodes}
        exact1 = [data.marginal(v) for v in nodes]
        noisy1, sig1 = _release(budget, exact1, [heavy[v] for v in nodes], rho1,
                                histogram_sensitivity, own, "1-way marginals", "attributes", "step 1")
        y1 = dict(zip(nodes, noisy1))
        sigma_of = dict(zip(nodes, sig1))
        # a pair's score with a latent column is scaled to the own score sensitivity (public)
        score_scale = 1.0 if own is None else float(own_sensitivity[1]) / score_sensitivity  # type: ignore[index]
        score_sens = score_sensitivity * score_scale

        # 2. compression (3σ rule; single-attribute nodes only) ----------------------------------
        mapping: dict[str, np.ndarray] = {}
        for v in nodes:
            a = v[0]
            if len(v) == 1 and sizes[a] > self.compress_above:
                rare = y1[v] < 3 * sigma_of[v]
                if 2 <= rare.sum() < sizes[a]:
                    codes = np.empty(sizes[a], dtype=np.int64)
                    codes[~rare] = np.arange((~rare).sum())
                    codes[rare] = (~rare).sum()
                    mapping[a] = codes
        full_domain = mbi.Domain(attrs, [sizes[a] for a in attrs])
        csize = {a: int(mapping[a].max()) + 1 if a in mapping else sizes[a] for a in attrs}
        domain = mbi.Domain(attrs, [csize[a] for a in attrs])
        ncells = {v: int(np.prod([csize[a] for a in v])) for v in nodes}

        def measurement(y: np.ndarray, clique: tuple[str, ...], sigma: float):  # noqa: ANN202
            m = mbi.LinearMeasurement(y, clique, stddev=sigma)
            return m.compress(mapping, full_domain) if any(a in mapping for a in clique) else m

        meas1 = [measurement(y1[v], v, sigma_of[v]) for v in nodes]

        # 3. selection: Kruskal with the exponential mechanism -------------------------------------
        progress(0.15, "selecting 2-way marginals")
        total = float(np.average([y.sum() for y in y1.values()]))
        total = max(total, 1.0)
        p1 = {}
        for v in nodes:
            y = y1[v] if v[0] not in mapping else np.bincount(mapping[v[0]], weights=y1[v],
                                                              minlength=csize[v[0]])
            p1[v] = project_counts(y, total) / total
        pairs = [(a, b) for a, b in combinations(nodes, 2) if ncells[a] * ncells[b] <= self.max_cells]
        weights = {}
        root = {v: float(np.sqrt(p1[v]).sum()) for v in nodes}
        for a, b in pairs:
            x_ab = _compressed(data.marginal(a + b), a + b, sizes, mapping, csize)
            w = float(np.abs(x_ab - total * np.outer(p1[a], p1[b]).ravel()).sum())
            if self.score == "excess":  # minus the independent pair's expected L1 (public)
                w -= math.sqrt(2 / math.pi) * math.sqrt(total) * root[a] * root[b]
            weights[(a, b)] = w * (score_scale if heavy[a] or heavy[b] else 1.0)
        comp = {v: i for i, v in enumerate(nodes)}
        selected: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for ra, rb in self.required:
            if ra in node_of and rb in node_of:
                a, b = node_of[ra], node_of[rb]
                if comp[a] != comp[b]:
                    selected.append((a, b))
                    old_c, new_c = comp[b], comp[a]
                    comp = {k: (new_c if v == old_c else v) for k, v in comp.items()}
        n_steps = d - 1 - len(selected)
        step_rho = [rho2 / n_steps] * (n_steps - 1) if n_steps > 0 else []
        if n_steps > 0:
            step_rho.append(rho2 - sum(step_rho, Fraction(0)))
        for step in range(n_steps):
            cands = [p for p in pairs if comp[p[0]] != comp[p[1]]]
            if not cands:  # remaining components cannot be joined (max_cells): budget unspent
                break
            scores = np.array([weights[p] for p in cands])
            i = budget.exponential(scores, rho=step_rho[step], sensitivity=score_sens,
                                   label=f"tree edge {step + 1} of {n_steps}", source=SOURCE + " step 3")
            a, b = cands[i]
            selected.append((a, b))
            old, new = comp[b], comp[a]
            comp = {k: (new if v == old else v) for k, v in comp.items()}
            progress(0.15 + 0.25 * (step + 1) / n_steps, f"selected {'·'.join(a)} × {'·'.join(b)}")

        if n_steps <= 0:  # every edge was required: the selection budget measures them instead
            rho3 = rho3 + rho2
        # 4. two-way marginals ------------------------------------------------------------------
        meas2 = []
        cliques = tuple(a + b for a, b in selected)
        if selected:
            exact2 = [data.marginal(c) for c in cliques]
            noisy2, sig2 = _release(budget, exact2, [heavy[a] or heavy[b] for a, b in selected],
                                    rho3, histogram_sensitivity, own, "2-way marginals", "tree edges",
                                    "step 4")
            meas2 = [measurement(y, c, sigma2) for c, y, sigma2 in zip(cliques, noisy2, sig2)]

        # 5. estimation --------------------------------------------------------------------------
        progress(0.45, "estimating the graphical model")
        done = {"i": 0}
        n_cb = max(1, self.iters // 50)

        def callback(_: object) -> None:
            done["i"] += 1
            progress(0.45 + 0.55 * min(done["i"] / n_cb, 1.0), "estimating the graphical model")

        model = mbi.estimation.MirrorDescent().estimate(domain, meas1 + meas2, iters=self.iters,
                                                        callback_fn=callback)
        progress(1.0, "fitted")
        released = tuple((tuple(m.clique), np.asarray(m.noisy_measurement, dtype=np.float64),
                          float(m.stddev)) for m in meas1 + meas2)
        return MSTModel(model, attrs, mapping, cliques, float(model.total), released,
                        mbi_total_variance(meas1 + meas2))

    def _fit_one_node(self, data: PrivateTable, budget: Budget, node: tuple[str, ...],
                      histogram_sensitivity: float, progress: Reporter) -> MSTModel:
        """Every attribute in one ``joint`` group: all of ρ on its joint marginal."""
        mbi = import_mbi()
        attrs = tuple(data.attributes)
        progress(0.05, "measuring the joint marginal")
        y, sigma = budget.gaussian(data.marginal(node), rho=budget.rho, sensitivity=histogram_sensitivity,
                                   label=f"joint marginal ({' × '.join(node)})", source=SOURCE + " step 1",
                                   integer=True)
        meas = [mbi.LinearMeasurement(y, node, stddev=sigma)]
        domain = mbi.Domain(attrs, list(data.sizes))
        model = mbi.estimation.MirrorDescent().estimate(domain, meas, iters=self.iters)
        progress(1.0, "fitted")
        return MSTModel(model, attrs, {}, (), float(model.total),
                        ((node, np.asarray(y, dtype=np.float64), float(sigma)),), mbi_total_variance(meas))


def _nodes(attrs: tuple[str, ...] | list[str], joint: tuple[tuple[str, ...], ...]
           ) -> list[tuple[str, ...]]:
    """The tree's nodes: each ``joint`` group present in ``attrs`` (in ``attrs`` order, at its
    first attribute's place) and every other attribute alone."""
    attrs = tuple(attrs)
    group = {a: g for g in joint for a in g}
    out: list[tuple[str, ...]] = []
    for a in attrs:
        g = group.get(a)
        if g is None or not set(g) <= set(attrs):
            out.append((a,))
        elif a == next(x for x in attrs if x in g):
            out.append(tuple(x for x in attrs if x in g))
    return out


def _compressed(x: np.ndarray, clique: tuple[str, ...], sizes: dict[str, int],
                mapping: dict[str, np.ndarray], csize: dict[str, int]) -> np.ndarray:
    """A flat (C order) marginal over ``clique`` with its compressed attributes' codes merged."""
    if not any(a in mapping for a in clique):
        return x
    maps = [mapping.get(a, np.arange(sizes[a])) for a in clique]
    idx = np.ravel_multi_index(np.ix_(*maps), [csize[a] for a in clique]).ravel()
    return np.bincount(idx, weights=x, minlength=int(np.prod([csize[a] for a in clique])))


def fit_single_attribute(data, budget: Budget, *, histogram_sensitivity: float,  # noqa: ANN001
                         score_sensitivity: float, progress: Reporter) -> _IndependentAsMST:
    """A table with ≤ 1 attribute has nothing to select: every graphical-model mechanism (MST,
    AIM, PrivBayes, PrivSyn) spends its whole budget on the 1-way marginal (or the count)."""
    from relviz.single.independent import Independent

    m = Independent().fit(data, budget, histogram_sensitivity=histogram_sensitivity,
                          score_sensitivity=score_sensitivity, progress=progress)
    return _IndependentAsMST(m, tuple(data.attributes))


@dataclass
class _IndependentAsMST:
    """MST on a table with ≤ 1 attribute is its 1-way marginal (no tree to select)."""

    inner: object
    attributes: tuple[str, ...]

    @property
    def total(self) -> float:
        return self.inner.total  # type: ignore[attr-defined]

    @property
    def total_variance(self) -> float:
        return self.inner.total_variance  # type: ignore[attr-defined]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.inner.sample(n, rng)  # type: ignore[attr-defined]
