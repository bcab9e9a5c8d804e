"""AIM — the Adaptive and Iterative Mechanism (McKenna, Mullins, Sheldon & Miklau 2022) on Private-PGM.

Documented in docs/methods/aim.md (the paper: "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", PVLDB 15(11), 2022, Alg. 1; the defaults follow the
configuration of Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data Synthesis", §8.2 and Table 7). With the table's zCDP budget ρ, α = 0.9 and
``T = rounds`` (default 16·d):

1. measure every 1-way marginal with the Gaussian mechanism at the first round's measurement share
   ``ρ_meas = αρ/T`` each (one concatenated release, L2 sensitivity √d × the unit's histogram
   multiplier), and fit a graphical model (``mbi`` mirror descent);
2. each round spends ``ρ_sel = (1−α)ρ/T`` on a selection and ``ρ_meas`` on a measurement: keep the
   candidates (every non-empty subset of a workload clique) whose addition keeps the junction
   tree within ``max_model_size · ρ_used/ρ`` MB (or that lie inside a clique of the model already),
   pick one with the exponential mechanism on
   ``q_r = w_r·(‖x_r − x̂_r‖₁ − √(2/π)·σ·n_r)`` (x̂_r the model's marginal, n_r its cells,
   ``w_r = Σ_{s∈W} |r ∩ s|``; score sensitivity ``max_r w_r`` × the unit's score multiplier),
   measure it (L2 sensitivity 1 × the histogram multiplier) and refit the model warm-started from
   the previous one; when the refit moves the selected marginal by no more than its expected noise
   (``‖x̂_new − x̂_old‖₁ ≤ √(2/π)·σ·n_r``), anneal: ``σ ← σ/2``, ``ε_sel ← 2ε_sel``, i.e. both
   ρ shares ×4;
3. when less than two rounds' worth of budget is left, or two more rounds (at the last round's
   measured time) would pass 80 % of ``time_budget_s``, run AIM's own final round with everything that is left (``ρ_sel = (1−α)·rest``,
   ``ρ_meas = α·rest``), so the ledger ends at exactly ρ; the final round's measurement is fitted only by the final fit
   (``final_iters``, run in warm-started blocks of 100 with the clock read between blocks, so it
   stops — after at least 50 — when the next block would pass ``time_budget_s``; post-processing),
   not by a whole round's refit first; then sampling.

Workload: all 2-way marginals with at most ``max_cells`` cells, weight 1 (the benchmark's
configuration).

Privacy: every release goes through :class:`~relviz.privacy.budget.Budget` — the selections
through ``Budget.exponential``, which charges the exponential mechanism's ε²/8 in zCDP
(Cesar & Rogers 2021; ε = √(8ρ_sel)), exactly as MST's tree selection; the measurements through
``Budget.gaussian`` (ρ = Δ²/(2σ²)). Budget shares are exact fractions, so the stopping rule can
never overspend and a completed fit spends exactly the table's ρ. Which candidates pass the size
filter depends only on the model's cliques (released choices) and the public domain. The time
budget reads the clock, never the data: like AIM's annealing it changes the per-round shares
adaptively, and the accountant caps the total at ρ whatever the stopping time (a fully adaptive
zCDP filter; timing side channels are outside the DP model, as for every mechanism).

Why relviz computes the model's candidate marginals itself: ``mbi``'s ``MarkovRandomField.project``
answers a marginal outside the model's cliques by a variable elimination that JAX compiles once per
(query, model structure); AIM scores every candidate against a new model in every round, so that
would compile dozens of programs per round. relviz calibrates the junction tree of the model's
potentials in numpy (HUGIN message passing, as mbi does) and reads every pair marginal off the tree
by passing a conditional along the path between two cliques (Koller & Friedman §10.3, the algorithm
of mbi's ``calculate_many_marginals`` without materialising unions of cliques). The graphical-model
estimation itself (mirror descent, warm starts, sampling) is mbi's.

relviz's deviations, all public: every attribute's 1-way marginal is measured (also attributes in
no workload pair); only 1- and 2-way candidates (the 2-way workload's downward closure); mbi
samples with numpy's global generator, so sampling runs inside :func:`global_numpy_seed` like MST.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import ClassVar

import networkx as nx
import numpy as np

from relviz.errors import ParameterError, Problem
from relviz.mbi_runtime import import_mbi
from relviz.privacy.budget import Budget, to_fraction
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.mst import mbi_total_variance, sample_mbi
from relviz.single.preprocess import RareMergeFit
from relviz.single.registry import register

__all__ = ["AIM", "AIMModel", "model_marginals"]

SOURCE = "AIM (McKenna, Mullins, Sheldon & Miklau 2022, Alg. 1), docs/methods/aim.md"
FINAL_FIT_START = 0.8
"""Share of ``time_budget_s`` after which AIM starts its final round (the rest: the final fit)."""

FINAL_BLOCK = 100
"""Iterations per block of the final fit; the time budget is checked between blocks."""

FINAL_MIN_ITERS = 50
"""The final fit runs at least this many iterations, whatever the clock says (the final round's
measurement must enter the model)."""

FINAL_MARGIN = 1.5
"""The final fit starts another block only if 1.5 × the last block's measured pace still ends
before ``time_budget_s``: on a busy machine a block runs slower than the one before (flights,
269,338 rows, ended 0.1 s past a 120 s budget with a margin of 1)."""

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

Clique = tuple[str, ...]


# ------------------------------------------------------------------------------------------------
# numpy inference on a fitted mbi model (see the module docstring for why)
# ------------------------------------------------------------------------------------------------

def _letters(attrs: list[str]) -> dict[str, str]:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if len(attrs) > len(alphabet) - 1:
        raise ValueError("too many attributes in one contraction")
    return {a: alphabet[i] for i, a in enumerate(attrs)}


def _align(attrs: Clique, arr: np.ndarray, target: Clique) -> np.ndarray:
    """``arr`` over ``attrs`` transposed and reshaped to broadcast against ``target``."""
    perm = [attrs.index(a) for a in target if a in attrs]
    out = np.transpose(arr, perm)
    shape, k = [], 0
    for a in target:
        if a in attrs:
            shape.append(out.shape[k])
            k += 1
        else:
            shape.append(1)
    return out.reshape(shape)


def _project(attrs: Clique, arr: np.ndarray, keep: Clique) -> np.ndarray:
    """Sum ``arr`` (over ``attrs``) down to ``keep`` (in that order)."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    out = arr.sum(axis=drop) if drop else arr
    rest = tuple(a for a in attrs if a in keep)
    return np.transpose(out, [rest.index(a) for a in keep])


def _logsumexp_to(attrs: Clique, arr: np.ndarray, keep: Clique) -> np.ndarray:
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    if not drop:
        return _project(attrs, arr, keep)
    m = arr.max(axis=drop, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.exp(arr - m).sum(axis=drop)) + m.squeeze(axis=drop)
    rest = tuple(a for a in attrs if a in keep)
    return np.transpose(out, [rest.index(a) for a in keep])


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def calibrated_cliques(model: object) -> tuple[nx.Graph, dict[Clique, np.ndarray]]:
    """Junction tree of an mbi model and its clique marginals (probabilities), in numpy.

    HUGIN message passing in log space over the junction tree mbi builds for the model's
    cliques (``mbi.junction_tree.make_junction_tree``), i.e. what ``message_passing_hugin``
    computes, without a JIT compilation.

    Returns:
        ``(junction tree, {maximal clique: array over the clique's attributes, summing to 1})``.
    """
    from mbi import junction_tree

    pot = model.potentials  # type: ignore[attr-defined]
    domain = pot.domain
    factors = []
    for cl in pot.cliques:
        f = pot[cl]
        factors.append((tuple(f.domain.attributes), np.asarray(f.values, dtype=np.float64)))
    jtree, _ = junction_tree.make_junction_tree(domain, [a for a, _ in factors])
    maxc = [tuple(c) for c in junction_tree.maximal_cliques(jtree)]
    shape = {c: tuple(domain.size(a) for a in c) for c in maxc}
    log_b = {c: np.zeros(shape[c]) for c in maxc}
    for attrs, arr in factors:
        home = min((c for c in maxc if set(attrs) <= set(c)), key=lambda c: int(np.prod(shape[c])))
        log_b[home] = log_b[home] + _align(attrs, arr, home)
    msgs: dict[tuple[Clique, Clique], tuple[Clique, np.ndarray]] = {}
    for i, j in junction_tree.message_passing_order(jtree):
        i, j = tuple(i), tuple(j)
        sep = tuple(a for a in i if a in j)
        tau = log_b[i]
        if (j, i) in msgs:
            s_attrs, s_arr = msgs[(j, i)]
            tau = tau - _align(s_attrs, s_arr, i)
        m = _logsumexp_to(i, tau, sep)
        msgs[(i, j)] = (sep, m)
        log_b[j] = log_b[j] + _align(sep, m, j)
    probs = {}
    for c in maxc:
        b = log_b[c] - log_b[c].max()
        p = np.exp(b)
        probs[c] = p / p.sum()
    return nx.relabel_nodes(jtree, {c: tuple(c) for c in jtree.nodes}), probs


def model_marginals(model: object, cliques: list[Clique]) -> dict[Clique, np.ndarray]:
    """Marginals (counts, flat C order over each clique's attributes) of 1- and 2-way cliques.

    A pair inside one junction-tree clique is a projection; otherwise ``P(a, ·)`` is passed from
    a clique holding ``a`` along the tree (``P(a, S') = Σ_S P(a, S)·P(S' | S)``), and
    ``P(a, b) = Σ_S P(a, S)·P(b | S)`` at the first clique holding ``b``; attributes in different
    components are independent.

    Args:
        model: A fitted ``mbi.MarkovRandomField``.
        cliques: 1- or 2-attribute cliques.

    Returns:
        ``{clique: counts}``, scaled to the model's total.
    """
    jtree, p = calibrated_cliques(model)
    total = float(model.total)  # type: ignore[attr-defined]
    size = {c: arr.size for c, arr in p.items()}
    holder: dict[str, Clique] = {}
    for c in sorted(p, key=lambda c: size[c]):
        for a in c:
            holder.setdefault(a, c)
    out: dict[Clique, np.ndarray] = {}
    need: dict[str, set[str]] = defaultdict(set)
    for cl in cliques:
        if len(cl) == 1:
            out[cl] = _project(holder[cl[0]], p[holder[cl[0]]], cl).ravel() * total
            continue
        a, b = cl
        inside = next((c for c in sorted(p, key=lambda c: size[c]) if a in c and b in c), None)
        if inside is not None:
            out[cl] = _project(inside, p[inside], cl).ravel() * total
        else:
            need[a].add(b)
    for a, bs in need.items():
        found = _pairs_from(a, bs, jtree, p)
        pa = _project(holder[a], p[holder[a]], (a,))
        for b in bs:
            if b in found:
                joint = found[b]
            else:  # another component of the forest: independent
                pb = _project(holder[b], p[holder[b]], (b,))
                joint = np.outer(pa, pb)
            out[(a, b)] = joint.ravel() * total
    return out


def _pairs_from(a: str, bs: set[str], jtree: nx.Graph, p: dict[Clique, np.ndarray]) -> dict[str, np.ndarray]:
    """``{b: P(a, b)}`` for the ``b`` reachable from a clique holding ``a`` (see model_marginals)."""
    start = min((c for c in p if a in c), key=lambda c: p[c].size)
    found: dict[str, np.ndarray] = {}
    # stack entries: (clique, parent, F) where F is None when a ∈ clique, else (S, P(a, S))
    stack: list[tuple[Clique, Clique | None, tuple[Clique, np.ndarray] | None]] = [(start, None, None)]
    while stack:
        c, parent, f = stack.pop()
        if f is None:  # a ∈ c
            for b in bs:
                if b in c and b not in found:
                    found[b] = _project(c, p[c], (a, b))
        else:
            s, pas = f
            ps = _project(c, p[c], s)
            for b in bs:
                if b in c and b not in found:
                    u = s + (b,) if b not in s else s
                    cond = _safe_div(_project(c, p[c], u), _align(s, ps, u))
                    found[b] = _contract(a, s, pas, u, cond, (b,))
        for nb in jtree.neighbors(c):
            nb = tuple(nb)
            if nb == parent:
                continue
            s2 = tuple(x for x in c if x in nb)
            if a in nb:
                stack.append((nb, c, None))
            elif f is None:
                stack.append((nb, c, (s2, _project(c, p[c], (a,) + s2))))
            else:
                s, pas = f
                u = s + tuple(x for x in s2 if x not in s)
                cond = _safe_div(_project(c, p[c], u), _align(s, _project(c, p[c], s), u))
                stack.append((nb, c, (s2, _contract(a, s, pas, u, cond, s2))))
    return found


def _contract(a: str, s: Clique, pas: np.ndarray, u: Clique, cond: np.ndarray, keep: Clique) -> np.ndarray:
    """``Σ_{u \\ keep} P(a, S)·P(U)`` → array over ``(a,) + keep``."""
    lab = _letters(list(dict.fromkeys(s + u + keep)) + ["__a__"])
    la = lab["__a__"]
    spec = f"{la}{''.join(lab[x] for x in s)},{''.join(lab[x] for x in u)}->{la}{''.join(lab[x] for x in keep)}"
    return np.einsum(spec, pas, cond)


def _merged(mbi: object, released: list[tuple[Clique, np.ndarray, float]]) -> list:
    """One ``LinearMeasurement`` per measured clique: repeated measurements ``y_k`` (σ_k) of a
    clique become their inverse-variance mean with σ = (Σ σ_k⁻²)^(-1/2).

    Σ_k ½‖(x − y_k)/σ_k‖² equals ½‖(x − ȳ)/σ‖² plus a constant, so the estimate is unchanged,
    and the list keeps one entry per clique: JAX then recompiles mbi's estimator only when a new
    clique enters the model, not every time a clique is measured again.
    """
    acc: dict[Clique, list[np.ndarray | float]] = {}
    for cl, y, sigma in released:
        w = 1.0 / sigma**2
        if cl in acc:
            acc[cl][0] = acc[cl][0] + w * np.asarray(y)  # type: ignore[operator]
            acc[cl][1] = acc[cl][1] + w  # type: ignore[operator]
        else:
            acc[cl] = [w * np.asarray(y, dtype=np.float64), w]
    return [mbi.LinearMeasurement(num / w, cl, stddev=float(1.0 / math.sqrt(w)))  # type: ignore[attr-defined]
            for cl, (num, w) in acc.items()]


# ------------------------------------------------------------------------------------------------
# The mechanism
# ------------------------------------------------------------------------------------------------

@dataclass
class AIMModel:
    """A fitted AIM model.

    Attributes:
        model: The ``mbi.MarkovRandomField``.
        attributes: Attribute names in table order.
        cliques: The marginals measured after the 1-way ones, in selection order.
        total: Estimated rows (mbi's minimum-variance total of the noisy measurements).
        rounds: Selection rounds run (the last one is the final round).
        stopped_by_time: Whether ``time_budget_s`` triggered the final round.
        measurements: The noisy releases ``(attributes, noisy counts, σ)`` the model was fitted to.
        total_variance: Variance of ``total`` (``relviz.single.mst.mbi_total_variance``).
        final_iterations: Iterations the final fit ran (fewer than ``final_iters`` when the time
            budget cut it).
    """

    model: object
    attributes: tuple[str, ...]
    cliques: tuple[Clique, ...]
    total: float
    rounds: int
    stopped_by_time: bool
    measurements: tuple[tuple[Clique, np.ndarray, float], ...] = ()
    total_variance: float = math.inf
    final_iterations: int = 0

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return sample_mbi(self.model, n, self.attributes, rng)


@register
@dataclass(frozen=True)
class AIM(RareMergeFit):
    """AIM on ``mbi`` (Private-PGM) with the benchmark's 2-way workload.

    Args:
        alpha: Share of each round's ρ spent on the measurement (0.9 in the paper).
        rounds: ``T``, the number of rounds the first round is sized for (``None``: 16·d); must
            exceed the number of attributes (the 1-way marginals cost d rounds' measurements).
        max_model_size: Junction-tree size cap in MB (80 in the paper; the benchmark used 100).
        max_cells: Largest 2-way marginal in the workload (2.5e5 cells).
        iters: Mirror-descent iterations per refit (warm-started).
        final_iters: Iterations of the final fit (the reference code uses 2500; run in full).
        tol: A refit stops early once the loss improves by at most this relative amount over
            two blocks of 50 iterations (mbi's ``tol``; ``None``: always ``iters``).
        time_budget_s: Seconds the whole fit should take: the next round is AIM's final round
            (spends all that is left) once two more rounds would pass 80 % of it, and the final
            fit stops between blocks of 100 iterations when the next would pass it (at least 50
            run); ``None`` for no
            limit. Privacy is unaffected (only when the budget is spent and
            how long the model is refined depend on the clock).
        max_domain: Largest attribute domain accepted (codes).
        rare_merge: Categorical attributes to merge rare categories of first (Chen et al.'s
            Algorithm 1, 10 % of ρ; ``relviz.single.preprocess.rare_merge_columns`` lists those
            with ≥ 100 declared categories).
        merge_theta: θ of the merge (0.2 % of the noisy column total).
    """

    name: ClassVar[str] = "aim"
    label: ClassVar[str] = "AIM (adaptive 2-way workload, Private-PGM)"
    gaussian_only: ClassVar[bool] = False
    alpha: float = 0.9
    rounds: int | None = None
    max_model_size: float = 80.0
    max_cells: int = 250_000
    iters: int = 1000
    final_iters: int = 2500
    tol: float | None = 1e-4
    time_budget_s: float | None = 600.0
    max_domain: int = 10_000
    rare_merge: tuple[str, ...] = ()
    merge_theta: float = 0.002

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ParameterError("alpha", "alpha must be in (0, 1)")
        if self.rounds is not None and (int(self.rounds) != self.rounds or self.rounds < 2):
            raise ParameterError("rounds", "rounds must be an integer ≥ 2 (or None for 16·d)")
        if not self.max_model_size > 0:
            raise ParameterError("max_model_size", "max_model_size must be positive (MB)")
        for name, low in (("iters", 50), ("final_iters", 50)):
            v = getattr(self, name)
            if int(v) != v or v < low:
                raise ParameterError(name, f"{name} must be an integer ≥ {low}")
        for name, low in (("max_cells", 4), ("max_domain", 2)):
            if getattr(self, name) < low:
                raise ParameterError(name, f"{name} must be ≥ {low}")
        if self.tol is not None and not self.tol >= 0:
            raise ParameterError("tol", "tol must be ≥ 0 (or None)")
        object.__setattr__(self, "rare_merge", tuple(self.rare_merge))
        if not 0 <= self.merge_theta < 1:
            raise ParameterError("merge_theta", "merge_theta must be in [0, 1)")
        if self.time_budget_s is not None and not self.time_budget_s >= 0:
            raise ParameterError("time_budget_s", "time_budget_s must be ≥ 0 seconds (or None)")

    # -- public, data-free -----------------------------------------------------------------------
    def _rounds(self, d: int) -> int:
        return int(self.rounds) if self.rounds is not None else 16 * d

    def _shares(self, rho: Fraction, d: int) -> tuple[Fraction, Fraction]:
        """First round's (ρ_sel, ρ_meas) = ((1−α)ρ/T, αρ/T), exact."""
        alpha = to_fraction(self.alpha)
        t = self._rounds(d)
        return (1 - alpha) * rho / t, alpha * rho / t

    def problems(self, table: Table) -> list[Problem]:
        out = super().problems(table)
        d = len(table.attributes)
        if self.rounds is not None and d > 1 and self.rounds <= d:
            out.append(Problem("bad_parameter", f"rounds = {self.rounds} must exceed the {d} attributes "
                               "(the 1-way marginals alone cost d rounds' measurement budget)", table.name))
        return out

    def _noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float) -> dict[str, float]:
        """σ of the releases known before the run: the 1-way marginals and the first round's
        measurement (annealing halves σ later; the final round's σ depends on what is left).

        Public computation (reads no data); the values equal the ``sigma`` of the matching ledger
        entries of a fit.
        """
        rho = Fraction(rho)
        d = len(table.attributes)
        if d <= 1:
            from relviz.single.independent import Independent

            return Independent().noise_scales(table, rho, histogram_sensitivity=histogram_sensitivity,
                                              score_sensitivity=score_sensitivity)
        _, rho_meas = self._shares(rho, d)
        return {
            f"1-way marginals ({d} attributes)": gaussian_sigma(histogram_sensitivity * math.sqrt(d),
                                                                d * rho_meas),
            "selected marginal (first round; annealing halves σ)":
                gaussian_sigma(histogram_sensitivity, rho_meas),
        }

    # -- fit -----------------------------------------------------------------------------------
    def _fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
             score_sensitivity: float, progress: Reporter) -> AIMModel:
        t_start = time.perf_counter()
        attrs = tuple(data.attributes)
        sizes = dict(zip(attrs, data.sizes))
        d = len(attrs)
        rho = budget.rho
        if d <= 1:
            from relviz.single.mst import fit_single_attribute

            return fit_single_attribute(data, budget, histogram_sensitivity=histogram_sensitivity,  # type: ignore[return-value]
                                        score_sensitivity=score_sensitivity, progress=progress)
        if self.rounds is not None and self.rounds <= d:
            raise ParameterError("rounds", f"rounds = {self.rounds} must exceed the {d} attributes")
        mbi = import_mbi()
        domain = mbi.Domain(attrs, [sizes[a] for a in attrs])
        rho_sel, rho_meas = self._shares(rho, d)
        alpha = to_fraction(self.alpha)

        # workload: every pair within max_cells, weight 1; candidates = its downward closure
        workload = [(a, b) for a, b in combinations(attrs, 2) if sizes[a] * sizes[b] <= self.max_cells]
        weights: dict[Clique, int] = {}
        for a in attrs:
            weights[(a,)] = sum(1 for w in workload if a in w)
        for w in workload:
            weights[w] = 2 + sum(1 for v in workload if v != w and set(v) & set(w))
        candidates = [c for c in weights if weights[c] > 0]
        answers = {c: data.marginal(c) for c in candidates}
        cells = {c: int(np.prod([sizes[a] for a in c])) for c in candidates}

        # 1. one-way marginals ---------------------------------------------------------------
        progress(0.01, "measuring 1-way marginals")
        exact1 = [answers[(a,)] if (a,) in answers else data.marginal((a,)) for a in attrs]
        noisy1, sigma1 = budget.gaussian(
            np.concatenate(exact1), rho=d * rho_meas, sensitivity=histogram_sensitivity * math.sqrt(d),
            label=f"1-way marginals ({d} attributes)", source=SOURCE + " line 3", integer=True)
        released: list[tuple[Clique, np.ndarray, float]] = [
            ((a,), y, sigma1) for a, y in zip(attrs, np.split(noisy1, np.cumsum([sizes[a] for a in attrs])[:-1]))]
        used = d * rho_meas
        estimator = mbi.estimation.MirrorDescent()

        def fit_model(iters: int, warm: object | None, frac: float, tol: float | None = self.tol) -> object:
            def callback(_: object) -> None:
                progress(frac, "estimating the graphical model")
            return estimator.estimate(domain, _merged(mbi, released), iters=iters, warm_start=warm,
                                      callback_fn=callback, tol=tol)

        model = fit_model(self.iters, None, 0.02)
        t_round = time.perf_counter() - t_start  # the last round's wall time (here: the first fit)
        t_iter = t_round / self.iters  # seconds per mirror-descent iteration (JIT included: safe)

        # 2. rounds ---------------------------------------------------------------------------
        selected: list[Clique] = []
        rounds = 0
        by_time = False
        terminate = False
        while not terminate:
            rounds += 1
            rest = rho - used
            t0 = time.perf_counter()
            # the final round when this round and one more would pass 80 % of the time budget
            # (the final fit then gets the rest: its iterations are cut to fit, see below)
            timed_out = (self.time_budget_s is not None
                         and t0 - t_start + 2 * t_round > FINAL_FIT_START * self.time_budget_s)
            if rest < 2 * (rho_sel + rho_meas) or timed_out:
                by_time = timed_out and not rest < 2 * (rho_sel + rho_meas)
                rho_sel = (1 - alpha) * rest
                rho_meas = rest - rho_sel
                terminate = True
            used += rho_sel + rho_meas
            sigma = gaussian_sigma(histogram_sensitivity, rho_meas)
            limit = self.max_model_size * float(used / rho)
            free = set()
            for cl in model.cliques:  # type: ignore[attr-defined]
                free.update(c for c in candidates if set(c) <= set(cl))
            small = [c for c in candidates if c in free or
                     mbi.junction_tree.hypothetical_model_size(domain, list(model.cliques) + [c]) <= limit]
            est = model_marginals(model, small)
            scores = np.array([weights[c] * (np.abs(answers[c] - est[c]).sum() - _SQRT_2_OVER_PI * sigma * cells[c])
                               for c in small])
            i = budget.exponential(scores, rho=rho_sel, sensitivity=score_sensitivity * max(weights[c] for c in small),
                                   label=f"AIM round {rounds}: selection", source=SOURCE + " line 9")
            cl = small[i]
            y, sigma = budget.gaussian(answers[cl], rho=rho_meas, sensitivity=histogram_sensitivity,
                                       label=f"AIM round {rounds}: marginal {' × '.join(cl)}",
                                       source=SOURCE + " line 10", integer=True)
            released.append((cl, y, sigma))
            selected.append(cl)
            frac = 0.05 + 0.85 * float(used / rho)
            progress(frac, f"round {rounds}: measured {' × '.join(cl)} (ρ {float(used / rho):.0%} used)")
            if terminate:  # the final fit below refits with this measurement, in clock-checked
                break      # blocks: no whole refit here that could overrun time_budget_s
            before = est[cl]
            t_fit = time.perf_counter()
            model = fit_model(self.iters, model, frac)
            t_iter = (time.perf_counter() - t_fit) / self.iters
            t_round = time.perf_counter() - t0
            after = model_marginals(model, [cl])[cl]
            if np.abs(after - before).sum() <= _SQRT_2_OVER_PI * sigma * cells[cl]:
                rho_sel, rho_meas = 4 * rho_sel, 4 * rho_meas  # σ/2, 2ε (budget annealing)

        # 3. final fit ------------------------------------------------------------------------
        progress(0.92, "final fit")
        # in blocks, warm-started, with the clock read between blocks (post-processing: the
        # privacy is unchanged). A single call sized from earlier rounds' speed overran the
        # budget when the machine got busier (fit 157 s at a 120 s budget, load 4 on 2 cores).
        deadline = math.inf if self.time_budget_s is None else t_start + self.time_budget_s
        done = 0
        while done < self.final_iters:
            block = min(FINAL_BLOCK if done else FINAL_MIN_ITERS, self.final_iters - done)
            if done >= FINAL_MIN_ITERS and time.perf_counter() + FINAL_MARGIN * block * t_iter > deadline:
                break
            t_fit = time.perf_counter()
            model = fit_model(block, model, 0.92 + 0.08 * done / self.final_iters, None)
            t_iter = (time.perf_counter() - t_fit) / block
            done += block
        progress(1.0, "fitted")
        return AIMModel(model, attrs, tuple(selected), float(model.total), rounds, by_time, tuple(released),
                        mbi_total_variance(_merged(mbi, released)), done)
