"""PrivPetal's Algorithms 1, 2, 3 and 5 for one foreign key, and PrivMRF-sub.

K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025 ([P]):

* **Algorithm 1** (one FK, [P] §4): noisy group sizes ``ñ_s`` (line 1), noisy R-scores (line 2,
  Eq. 3), the initial NPM store (Algorithm 5), then one model per attribute of the flattened
  relation, slot by slot (Algorithm 2), in the greedy attribute order of the authors' code;
* **Algorithm 5** ([P] App. D): PrivMRF-sub on ``A_H`` (the household model) and on
  ``{size} ∪ A_{I_a}``, CFS-selected inter-relational NPMs, CFS-selected intra-group NPMs for
  ``d = 2 … o`` letters, each part a quarter of the initialisation budget;
* **Algorithm 2** ([P] §4.3): a model over the target, ``size`` and the ``N_MRF`` synthesised
  attributes most correlated with it; Phase A adds stored NPMs chosen by CFS and by h-scores on
  the *noisy* stored arrays (free, [P] §4.3 "third adaptation"; the authors' code uses the true
  NPMs there — docs/methods/privpetal.md §8 D1); Phase B (the first ``J`` targets) queries
  ``T2`` new NPMs chosen by noisy h-scores on the true data;
* **Algorithm 3**: an NPM query, one Gaussian release of the whole array (sizes in the merging
  interval summed into one block), each slice rescaled to ``ñ_s``, then its roll-ups stored;
* **PrivMRF-sub** ([P] §4.1, App. D; Cai, Zhang, Xiao, "Data synthesis via differentially private
  Markov random fields", VLDB 2021): a graph searched on noisy R-scores, initial marginals picked by
  correlation-based feature selection (CFS, [P] Eq. 14 in the authors' form), then
  ``⌊|V|/2⌋`` marginals picked by noisy h-scores.

Everything here except the charged releases of :class:`~relviz.relational.privpetal.npm.PrivateFK`
is post-processing of noisy outputs and public facts (docs §4.6): candidate sets, CFS, graph
search, merging decisions, normalisers and schedules read no private data.

A bare ``docs §N`` below is docs/methods/privpetal.md §N.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations, permutations
from statistics import NormalDist

import numpy as np

from relviz.marginals import mixed_radix_codes
from relviz.privacy.budget import Budget
from relviz.relational.privpetal.accounting import MEAN_ABS, FKPlan, SubPlan, schedule, usefulness_limit
from relviz.relational.privpetal.mrf import (
    TORCH_MIN_CELLS,
    JTree,
    Measurement,
    Model,
    greedy_graph,
    junction_tree,
)
from relviz.relational.privpetal.npm import (
    SIZE,
    Entry,
    Key,
    NPMStore,
    PrivateFK,
    Var,
    canonical,
    key_D,
    key_name,
    rscore_pairs,
)

PAIR_LEVEL = 0.05
"""``pair_margins``' threshold level: a pair is measured only when its noisy score clears the
``1 − PAIR_LEVEL/q`` normal quantile times the scores' σ (Bonferroni over the ``q`` candidates:
with no association anywhere, some pair clears it with probability at most ``PAIR_LEVEL``;
docs/methods/privpetal.md §5.10)."""

__all__ = ["Params", "RScores", "FKFit", "Conditional", "fit_fk", "cfs_select", "cfs_score",
           "next_attribute", "context_for", "npm_query_post", "maximal"]

SOURCE = "PrivPetal (Cai, Xiao & Yang, SIGMOD 2025)"


def crosses(variables: Iterable[Var]) -> bool:
    """Whether a candidate holds both a household (parent) and an individual (child) variable:
    an inter-relational NPM (docs §3.4, §5.7)."""
    vs = list(variables)
    return any(v[0] == "H" for v in vs) and any(v[0] == "I" for v in vs)


@dataclass(frozen=True)
class Params:
    """Hyper-parameters of one Algorithm 1 run (docs/methods/privpetal.md §5.1: the paper's
    constants where it has them, a CPU profile elsewhere)."""

    order: int = 3
    member_cap: int | None = None
    lam: float | None = None
    max_cells: int = 50_000
    k_max: int = 5
    n_mrf: int = 10
    t1_picks: int = 4
    t1_iters: int = 8
    k: int = 200
    clique_cells: int = 100_000
    model_cells: int = 500_000
    sub_clique_cells: int = 200_000
    sub_model_cells: int = 1_000_000
    fit_iters: int = 1000
    refit_iters: int = 300
    merge_from: int | None = None
    rscore_mode: str = "per_size"
    sampling: str = "rounded"
    slice_weights: str = "noise"
    device: str = "auto"
    inter_z: float | None = 2.0
    inter_keep_best: bool = True
    refine_z: float | None = 2.0
    size_z: float | None = None
    size_raking: bool = False
    debias_stored_h: bool = False
    public_margins: bool = False
    slice_lam: float | None = None
    public_usefulness: bool = False
    size_calibration: bool | str = False
    column_calibration: bool = False
    child_margins: bool = False
    parent_children: bool = False
    pair_margins: int = 0
    pool_totals: bool = True


#: Weight of an exact public marginal in a model loss (``public_margins``): its residual counts
#: as that of a measurement with a √10 times smaller noise than the noisy NPMs' weight 1.
PUBLIC_WEIGHT = 10.0


def fit_device(device: str):  # noqa: ANN201
    """The ``torch.device`` of the model fits (``Model.fit``), or None for numpy: ``"auto"``
    gives CUDA when present and numpy otherwise (numpy is faster on a CPU: the fits are many
    small arrays, where torch's per-operation cost dominates; docs/methods/privpetal.md §5.6);
    ``"numpy"``; ``"cpu"`` or ``"cuda[:n]"`` for torch there.

    Raises:
        ValueError: CUDA was asked for and torch sees none.
    """
    if device == "numpy":
        return None
    import torch

    from relviz.relational.torch_device import resolve_device

    if device == "auto" and not torch.cuda.is_available():
        return None
    return resolve_device(device)


# -- R-scores ------------------------------------------------------------------------------------

@dataclass
class RScores:
    """Noisy base R-scores and their normalised lookup for flattened variables ([P] §4.1)."""

    pairs: list[tuple[Var, Var]]
    noisy: np.ndarray
    totals: dict[int, float]  # D → noisy number of contributing groups Σ_{s≥D} ñ_s
    index: dict[tuple[Var, Var], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {p: i for i, p in enumerate(self.pairs)}

    def base(self, u: Var, v: Var) -> tuple[tuple[Var, Var], int]:
        """The base pair of two flattened variables and its ``D`` (docs §2.5 expansion)."""
        if u[0] == "I" and v[0] == "I" and u[1] != v[1]:
            p, q = sorted((u[2], v[2]))
            return (("I", 1, p), ("I", 2, q)), 2
        def b(x: Var) -> Var:
            return ("I", 1, x[2]) if x[0] == "I" else x
        bu, bv = b(u), b(v)
        d = 1 if (bu[0] == "I" or bv[0] == "I") else 0
        return ((bu, bv) if (bu, bv) in self.index else (bv, bu)), d

    def __call__(self, u: Var, v: Var) -> float:
        """Normalised noisy R-score ``R̃(u, v) / Σ_{s≥D} ñ_s`` (post-processing)."""
        if u == v:
            return 0.0
        pair, d = self.base(u, v)
        i = self.index.get(pair)
        if i is None:
            return 0.0
        t = self.totals.get(d, 0.0)
        return float(self.noisy[i]) / t if t > 0 else 0.0


def cfs_score(target: Var, s: frozenset, R: Callable[[Var, Var], float]) -> float:  # noqa: N803
    """CFS score ``ρ(A, S)`` of the authors' code ([P] Eq. 14, docs §2.7), ``size`` left out of
    ``C = S ∖ {A}`` (every candidate holds it; under Eq. 3 its R-scores are 0 plus noise)."""
    c = [v for v in s if v != target and v != SIZE]
    num = max(0.0, sum(R(target, b) for b in c))
    den = 2.0 * (len(c) + sum(R(b, b2) for b, b2 in combinations(c, 2)))
    return num / math.sqrt(max(1.0, den))


def maximal(cands: Sequence[frozenset]) -> list[frozenset]:
    """The candidates that are no strict subset of another candidate."""
    cset = set(cands)
    non = set()
    for t in cands:
        rest = [v for v in t if v != SIZE]
        for r in range(1, len(rest)):
            for sub in combinations(rest, r):
                u = frozenset((SIZE,) + sub) if SIZE in t else frozenset(sub)
                if u in cset:
                    non.add(u)
    return [c for c in cands if c not in non]


def cfs_select(cands: Sequence[frozenset], targets: Sequence[Var], R: Callable[[Var, Var], float],  # noqa: N803
               dom: Callable[[frozenset], int]) -> list[frozenset]:
    """CFS_SELECT (docs §2.7): among the maximal candidates, per target the one containing it with
    the largest CFS score (ties: smaller domain, then lexicographic); the distinct picks."""
    mx = maximal(list(dict.fromkeys(cands)))
    picks: list[frozenset] = []
    for t in targets:
        best, best_key = None, None
        for c in mx:
            if t not in c:
                continue
            k = (-cfs_score(t, c, R), dom(c), sorted(map(repr, c)))
            if best_key is None or k < best_key:
                best, best_key = c, k
        if best is not None and best not in picks:
            picks.append(best)
    return picks


def next_attribute(candidates: Sequence[Var], synthesised: Sequence[Var], R: Callable[[Var, Var], float],  # noqa: N803
                   dom: dict) -> Var:
    """NEXT_ATTR (the authors' rule, docs §3.5): the candidate maximising
    ``Σ_{B ∈ Syn} R̃n(A, B) / √|X_A|``; ties by attribute index."""
    return max(candidates, key=lambda a: (sum(R(a, b) for b in synthesised) / math.sqrt(dom[a]),
                                          -a[2]))


def context_for(target: Var, synthesised: Sequence[Var], R: Callable[[Var, Var], float], n_mrf: int  # noqa: N803
                ) -> list[Var]:
    """The target's context ([P] Alg. 2 line 1 with the authors' quota): up to ``⌊N_MRF/2⌋``
    synthesised attributes of its own slot, the rest from other slots and the household, each
    ranked by ``R̃n(target, ·)`` (ties: earlier synthesised first); ``size`` excluded."""
    syn = [v for v in synthesised if v != SIZE]
    same = [v for v in syn if v[0] == "I" and v[1] == target[1]]
    other = [v for v in syn if not (v[0] == "I" and v[1] == target[1])]
    rank = {v: i for i, v in enumerate(syn)}

    def top(vs: list[Var], n: int) -> list[Var]:
        return sorted(vs, key=lambda v: (-R(target, v), rank[v]))[:max(n, 0)]

    chosen = top(same, n_mrf // 2)
    return chosen + top(other, n_mrf - len(chosen))


# -- NPM queries ----------------------------------------------------------------------------------

def npm_query_post(noisy: np.ndarray, sigma: float, dims: tuple[int, ...], lo: int, merge: Sequence[int],
                   n_noisy: np.ndarray, N: int, min_mass: float = 0.0  # noqa: N803
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Post-processing of an NPM release ([P] Alg. 3, docs §3.6): the merged block and every other
    slice ``s`` become ``ñ_s · block / Σ block``; a block with a non-positive noisy total is masked,
    and so is one whose noisy groups per cell, ``Σ_{s ∈ block} ñ_s / cells``, are below
    ``min_mass`` (``slice_lam``: λ-usefulness per independently noised block, docs §6.11).

    Returns:
        ``(arr (N+1, *dims), var (N+1,), masked (N+1,))``; slices ``< lo`` are unavailable
        (``var = inf``).
    """
    cells = int(np.prod(dims)) if dims else 1
    arr = np.zeros((N + 1,) + dims)
    var = np.full(N + 1, np.inf)
    masked = np.zeros(N + 1, dtype=bool)
    pos = 0
    blocks: list[tuple[list[int], np.ndarray]] = []
    if merge:
        blocks.append((list(merge), noisy[pos:pos + cells]))
        pos += cells
    for s in range(lo, N + 1):
        if s in merge:
            continue
        blocks.append(([s], noisy[pos:pos + cells]))
        pos += cells
    for sizes, block in blocks:
        tot = float(block.sum())
        thin = float(np.clip(n_noisy[sizes], 0, None).sum()) / cells < min_mass
        for s in sizes:
            if tot > 0 and not thin:
                c = n_noisy[s] / tot
                arr[s] = (block * c).reshape(dims)
                var[s] = sigma ** 2 * c ** 2
            else:
                masked[s] = True
                var[s] = sigma ** 2
    return arr, var, masked


# -- the fitted per-attribute conditional ---------------------------------------------------------

@dataclass
class Conditional:
    """What sampling needs of one target's model: the target, the model's variables and
    domains, the lowest size ``lo``, and the fitted log-potentials of the cliques holding the
    target (all noisy-derived)."""

    target: Var
    lo: int
    vars: list[Var]
    dom: dict
    cliques: list[tuple]
    theta: list[np.ndarray]
    pairs: dict | None = None
    """``{v: (dom[v], dom[target]) float64}``: the model's ``p(target | v)`` for each context
    variable ``v`` whose pair with the target lies in a clique of the model's junction trees
    (rows of a ``v`` with no mass are 0); ``column_calibration`` rakes the drawn columns to them
    (docs/methods/privpetal.md §6.17). None when the FK was fitted without that option (they
    are kept only then) or pickled before it existed."""

    def logits(self, codes: dict) -> np.ndarray:
        n = len(next(iter(codes.values()))) if codes else 0
        out = np.zeros((n, self.dom[self.target]))
        for c, th in zip(self.cliques, self.theta):
            p = c.index(self.target)
            t = np.moveaxis(th, p, -1)
            idx = tuple(np.asarray(codes[v]) for v in c if v != self.target)
            out += t[idx] if idx else np.broadcast_to(t, (n, t.shape[-1]))
        return out


@dataclass
class FKFit:
    """Everything Algorithm 1 keeps for one FK (all differentially private).

    ``n_null`` and ``imodel`` serve relviz's nullable-FK addition (docs §5.4, not in [P]):
    ``n_null`` is the noisy number of children with a null FK (clamped at 0; 0 for a non-nullable
    FK), ``imodel`` the model of one individual that Algorithm 5 (2) fits (PrivMRF-sub on
    ``{size} ∪ A_{I_1}``, sizes ``1…N``; None when the child has no attributes), from which
    those children's attributes are drawn.

    ``margins`` serves relviz's ``child_margins`` (docs §5.8, not in [P]): per child column, the
    released histogram of the children in groups over it, clamped at 0 (None without it);
    ``children`` serves ``parent_children`` (docs §5.9): per household column, the released
    children per parent value, clamped at 0 (None without it); ``pair_margins`` serves the
    option of that name (docs §5.10): ``{(household column, child column): (hdom, idom)}`` the
    released parent–child pair margins as released (noisy counts, not clamped: sampling pools
    rows before it clamps), ``pair_sigma`` each one's σ, a public fact of the plan (None
    without them).
    """

    fk: str
    n_noisy: np.ndarray
    hvars: list[Var]
    hdom: tuple[int, ...]
    idom: tuple[int, ...]
    N: int  # noqa: N815
    hmodel: Model
    conditionals: list[Conditional]
    rscores: RScores
    store_keys: int = 0
    queries: int = 0
    sampling: str = "rounded"
    n_null: float = 0.0
    imodel: Model | None = None
    size_raking: bool = False
    size_calibration: bool | str = False
    column_calibration: bool = False
    margins: list[np.ndarray] | None = None
    children: list[np.ndarray] | None = None
    pair_margins: dict[tuple[int, int], np.ndarray] | None = None
    pair_picks: list[tuple[str, str]] | None = None
    """``pair_margins``: the (household column, child column) names of the released pair
    margins, best score first."""
    pair_scores: list[tuple[float, str, str]] | None = None
    """``pair_margins``: every candidate pair's released (noisy) score with the columns' names,
    largest first (None when every candidate was planned, so none was scored)."""
    pair_sigma: dict[tuple[int, int], float] | None = None
    """``pair_margins``: each released pair margin's noise σ (counts), for pooling at sampling
    (docs §5.10)."""


# -- one FK ----------------------------------------------------------------------------------------

class _Run:
    """State of one Algorithm 1 run (private object, store, budget, plan, progress)."""

    def __init__(self, fk: str, priv: PrivateFK, budget: Budget, plan: FKPlan, params: Params,
                 hnames: Sequence[str], inames: Sequence[str], rep: Callable[[float, str], None],
                 seed: int, public_groups: int | None = None,
                 public_hcodes: np.ndarray | None = None) -> None:
        self.fk, self.priv, self.budget, self.plan, self.p = fk, priv, budget, plan, params
        self.public_hcodes = public_hcodes  # a public parent's codes, else None
        self._rarest: dict[tuple, float] = {}
        self._public_q: dict[tuple, np.ndarray] = {}  # size gate: public counts per ``T``
        self.device = fit_device(params.device)
        # "auto" sends only the large fits to CUDA; an explicit device takes them all
        self.min_cells = TORCH_MIN_CELLS if params.device == "auto" else 0
        self.public_groups = public_groups
        self.hnames, self.inames = list(hnames), list(inames)
        self.N = priv.N
        self.hdom, self.idom = priv.hdom, priv.idom
        self.rep = rep
        self.seed = seed
        self.store = NPMStore(self.N)
        self.queries = 0
        self.refine_carry = Fraction(0)  # refining ρ a target did not release (docs §4.4)
        self.refine_held = 0  # Phase B candidates the refining gate held back (docs §5.7)
        self.inter_gated = 0  # Alg. 5 (3) picks of which none passed the gate (docs §5.7)
        self.size_gated: set[tuple] = set()  # household blocks the size gate made independent
        self.pair_picks: list[tuple[str, str]] | None = None  # pair_margins' picks (§5.10)
        self.pair_scores: list[tuple[float, str, str]] | None = None  # … and released scores
        self.pair_sigma: dict[tuple[int, int], float] | None = None  # each pair margin's σ
        self._determines: dict[tuple[int, int], bool] = {}  # :meth:`determines`, memoised
        # Alg. 5 steps (3)/(4) that released no NPM: {step: (usefulness limit L, cells of the
        # smallest candidate)}; reported by :meth:`run` (docs/methods/privpetal.md §7)
        self.starved: dict[str, tuple[float, int]] = {}
        self.lam = float(params.lam) if params.lam is not None else 6.0  # set from ñ in run()
        self.lam_one = self.lam
        self.imodel: Model | None = None  # Alg. 5 (2)'s model of one individual (kept)

    # helpers ---------------------------------------------------------------------------------
    def rng(self, *tag: int | str) -> np.random.Generator:
        words = [self.seed & 0xFFFFFFFF, zlib.crc32(self.fk.encode())]
        words += [t if isinstance(t, int) else zlib.crc32(str(t).encode()) for t in tag]
        return np.random.default_rng(words)

    def vdom(self, v: Var, lo: int = 0) -> int:
        if v == SIZE:
            return self.N + 1 - lo
        return self.hdom[v[1]] if v[0] == "H" else self.idom[v[2]]

    def cells_full(self, s: frozenset | Sequence[Var]) -> int:
        """Cells with the whole size domain (the usefulness test, docs §2.8)."""
        out = self.N + 1
        for v in s:
            if v != SIZE:
                out *= self.vdom(v)
        return out

    def cells_useful(self, s: frozenset | Sequence[Var]) -> float:
        """The cells that the usefulness test (docs §2.8) compares with ``L(σ)``.

        :meth:`cells_full` by default (the paper's count, docs §2.8). With ``public_usefulness``
        and a public referenced table (relviz's addition, docs/methods/privpetal.md §6.12): the
        cells ``cells_full(s) · r``, ``r ≥ 1`` the scarcity of the NPM's rarest public slice, so
        that the test asks every public value combination of ``s``'s household variables ``X_H``
        to be λ-useful, not only the average cell. ``r = min(r_joint, Π_v r_v)`` (public data
        only):

        - ``r_joint = 1 / (c · p_min)``: ``p_min`` the smallest nonzero share of the public
          table's rows in one cell of ``X_H``, ``c`` the cells with a row (cells with none are
          structural zeros: their NPM cells are exactly 0);
        - ``r_v``, the same for variable ``v`` alone; their product is the scarcity of the
          rarest combination were the variables independent.

        ``r_joint`` is exact for the public table but, where ``X_H`` has about as many cells as
        the table rows, it measures the table's sampling sparsity, not a rare value; the product
        is robust there but overstates dependent variables (the two halves of a split
        attribute). Their minimum is the scarcity both bound; for a uniform ``X_H`` it is 1."""
        full = self.cells_full(s)
        hv = sorted(v for v in s if v != SIZE and v[0] == "H")
        if not (self.p.public_usefulness and hv and self.public_hcodes is not None):
            return float(full)
        key = tuple(hv)
        if key not in self._rarest:
            each = math.prod(self._scarcity((v,)) for v in hv)
            self._rarest[key] = min(self._scarcity(key), each) if len(hv) > 1 else each
        return full * self._rarest[key]

    def _scarcity(self, hv: tuple) -> float:
        """``1 / (c · p_min)`` over the public table's cells of ``hv`` (see :meth:`cells_useful`);
        a single variable's is kept in ``_rarest`` (it is its own one-variable entry there)."""
        if len(hv) == 1 and hv in self._rarest:
            return self._rarest[hv]
        c = public_counts(self.public_hcodes, hv, {v: self.vdom(v) for v in hv})
        nz = c[c > 0]
        r = float(nz.sum()) / (float(nz.min()) * nz.size)
        if len(hv) == 1:
            self._rarest[hv] = r
        return r

    def name(self, key: Key) -> str:
        return key_name(key, self.hnames, self.inames)

    def vname(self, v: Var) -> str:
        if v == SIZE:
            return "size"
        return f"H.{self.hnames[v[1]]}" if v[0] == "H" else f"I_{v[1]}.{self.inames[v[2]]}"

    def order_key(self, v: Var) -> tuple:
        return (0,) if v == SIZE else ((1, v[1]) if v[0] == "H" else (2, v[1], v[2]))

    def sort(self, vs) -> list[Var]:  # noqa: ANN001
        return sorted(vs, key=self.order_key)

    def total(self, lo: int) -> float:
        return float(self.n_noisy[lo:].sum())

    # Algorithm 3 ---------------------------------------------------------------------------
    def npm_query(self, key: Key, rho: Fraction, label: str) -> bool:
        """NPM_QUERY: one charged release unless ``key`` was measured directly already."""
        if self.store.measured(key) or rho <= 0:
            return False
        d = key_D(key)
        lo = max(d, 1) if d else 0
        merge = self.merged_sizes(lo)
        noisy, sigma = self.priv.release_npm(self.budget, key, lo=lo, merge=merge, rho=rho,
                                             sensitivity=self.plan.sens.vec,
                                             label=f"{label}: NPM {self.name(key)}",
                                             source=SOURCE + " Alg. 3")
        dims = tuple(self.vdom(v) for v in canonical(_vars(key))[1][1:])
        min_mass = self.p.slice_lam * sigma * MEAN_ABS if self.p.slice_lam is not None else 0.0
        arr, var, masked = npm_query_post(noisy, sigma, dims, lo, merge, self.n_noisy, self.N,
                                          min_mass)
        self.store.put(key, arr, var, masked, direct=True, provenance="measured",
                       base=np.where(np.isfinite(var), sigma ** 2, np.inf))
        self.queries += 1
        return True

    # measurements ----------------------------------------------------------------------------
    def measurement(self, axes: Sequence[Var], key: Key, lo: int, model: Model,
                    household: bool = False) -> Measurement | None:
        """The stored slices ``s ≥ lo`` of ``key`` as a measurement on the flattened variables
        ``axes`` (one per key axis, ``size`` first), in the model's variable order;
        ``household``: a measurement of Algorithm 5 (1)'s household model, which ``size_z``
        gates (:meth:`size_gate`)."""
        e = self.store.get(key, lo)
        if e is None:
            return None
        gl = model.sorted_vars(axes)
        y = np.transpose(e.arr[lo:], [list(axes).index(v) for v in gl])
        if self.p.slice_weights == "noise":  # relviz (docs §8 D25): min(1, 1/c_s) per slice
            mask = e.slice_weights()[lo:]
        else:  # the spec's unweighted loss: masked slices out
            mask = (~e.masked[lo:]).astype(np.float64)
        if household and self.p.size_z is not None and e.direct and gl[0] == SIZE and len(gl) > 1:
            y = self.size_gate(tuple(gl), y, e, lo, mask)
        return Measurement(tuple(gl), y, None if bool((mask == 1.0).all()) else mask)

    def merged_sizes(self, lo: int) -> list[int]:
        """The sizes ``s ≥ lo`` that an NPM release over ``lo…N`` merges into one noisy block
        (``merge_from…N``, docs §3.4); empty where fewer than two would merge."""
        if self.p.merge_from is None:
            return []
        merge = list(range(max(self.p.merge_from, lo), self.N + 1))
        return merge if len(merge) > 1 else []

    def size_blocks(self, lo: int) -> list[list[int]]:
        """The sizes ``s ≥ lo`` of one NPM release that share one noisy block: the merged sizes
        (:meth:`merged_sizes`, as :meth:`npm_query` merges them) and every other size alone."""
        merge = self.merged_sizes(lo)
        return ([merge] if merge else []) + [[s] for s in range(lo, self.N + 1) if s not in merge]

    def size_gate(self, vars_: tuple, y: np.ndarray, e: Entry, lo: int, mask: np.ndarray
                  ) -> np.ndarray:
        """The size gate (``size_z``, relviz's addition, docs §5.11) on a household-model
        measurement of ``size`` and household columns ``T``: every independently noised block of
        sizes whose noisy profile over ``T`` is consistent with ``T``'s own distribution (a
        public parent's exact one, else the measurement's own pooled over its blocks) is
        replaced by its total times that distribution, so the model gets no size–``T``
        dependence there from noise alone. Consistent: ``(χ² − df)/√(2·df) < size_z``, with
        ``χ² = Σ_t (y_t − n·q_t)² / (σ² + n·q_t(1 − q_t))`` (Gaussian noise plus multinomial
        sampling), ``df`` the cells of ``T`` with ``q_t > 0`` less one. Post-processing of the
        release and public data; the ledger is unchanged.

        Args:
            vars_: The measurement's variables, ``size`` first. y: ``(N + 1 − lo, *dims)`` its
                stored slices (counts). e: The stored entry (``var``, ``base``). mask: Per-slice
                loss weights (0: left out).

        Returns:
            ``y`` with the consistent blocks replaced (a copy; ``y`` itself is not changed)."""
        T = list(vars_[1:])  # noqa: N806
        flat = y.reshape(y.shape[0], -1).astype(np.float64)
        base = e.var if e.base is None else e.base
        blocks = [b for b in self.size_blocks(lo)
                  if all(mask[s - lo] > 0 and np.isfinite(e.var[s]) for s in b)
                  and flat[[s - lo for s in b]].sum() > 0]
        if self.public_hcodes is not None:
            key = tuple(T)
            if key not in self._public_q:  # the household model is rebuilt many times
                self._public_q[key] = public_counts(self.public_hcodes, T,
                                                    {v: self.vdom(v) for v in T}).ravel()
            q = self._public_q[key]
        else:
            q = sum((flat[[s - lo for s in b]].sum(0) for b in blocks), np.zeros(flat.shape[1]))
            q = np.clip(q, 0.0, None)
        if not blocks or q.sum() <= 0:
            return y
        q = q / q.sum()
        cells = q > 0
        df = int(cells.sum()) - 1
        if df < 1:
            return y
        out = flat.copy()
        for b in blocks:
            rows = [s - lo for s in b]
            yb = flat[rows].sum(0)
            nb = float(yb.sum())
            c = sum(math.sqrt(e.var[s] / base[s]) if base[s] > 0 else 1.0 for s in b)
            noise = float(base[b[0]]) * c * c
            ex = nb * q
            chi = float((((yb - ex) ** 2) / (noise + ex * (1 - q)))[cells].sum())
            if (chi - df) / math.sqrt(2 * df) < self.p.size_z:
                out[rows] = np.outer(flat[rows].sum(1), q)
                self.size_gated.add((vars_, tuple(b)))
        return out.reshape(y.shape)

    def model_in_key_axes(self, model: Model, axes: Sequence[Var]) -> np.ndarray:
        return model.marginal(list(axes))

    # PrivMRF-sub ----------------------------------------------------------------------------
    def privmrf_sub(self, V: list[Var], sub: SubPlan, lo: int, tag: str, targets: list[Var],  # noqa: N803
                    household: bool = False) -> Model:
        """PRIVMRF_SUB (docs §3.3) over ``V`` (``size`` included) with sizes ``lo…N``.

        ``household``: ``V`` is Algorithm 5 (1)'s ``A_H ∪ {size}``; when the parent is public and
        ``public_margins`` is on (``public_hcodes`` set), its exact clique marginals of ``A_H``
        are fitted too (docs §6.11)."""
        dom = {v: self.vdom(v, lo) for v in V}
        others = [v for v in V if v != SIZE]
        n_size = self.N + 1 - lo
        graph = greedy_graph(others, dom, self.R, clique_cap=self.p.sub_clique_cells / n_size,
                             total_cap=self.p.sub_model_cells / n_size) if others else []
        cliques = [tuple([SIZE] + list(c)) for c in graph] or [(SIZE,)]
        search = JTree(cliques, junction_tree(cliques), dom)
        model = Model(V, dom, search, self.total(lo), device=self.device,
                      device_min_cells=self.min_cells)
        model.add(Measurement((SIZE,), self.n_noisy[lo:].copy()))
        fixed = 1
        if household and self.p.public_margins and self.public_hcodes is not None:
            # relviz (docs §6.11): a public parent's attribute distribution is public and exact
            for c in cliques:
                rest = model.sorted_vars([v for v in c if v != SIZE])
                if rest:
                    model.add(Measurement(rest, public_counts(self.public_hcodes, rest, dom),
                                          weight=PUBLIC_WEIGHT))
                    fixed += 1
        n_all = float(self.n_noisy.sum())
        limit = usefulness_limit(n_all, sub.sigma_mar, self.lam, self.p.max_cells)
        limit_one = usefulness_limit(n_all, sub.sigma_mar, self.lam_one, self.p.max_cells)
        cand: list[frozenset] = []
        seen = set()
        for c in cliques:
            rest = [v for v in c if v != SIZE]
            for r in range(1, min(len(rest), self.p.k_max - 1) + 1):
                for t in combinations(rest, r):
                    s = frozenset((SIZE,) + t)
                    if s not in seen and self.cells_useful(s) < (limit_one if r == 1 else limit):
                        seen.add(s)
                        cand.append(s)
        measured: list[frozenset] = []
        used = 0
        picks = cfs_select(cand, targets, self.R, self.cells_full)
        rho_query = self.sub_rho_query(sub, picks, cand)
        for s in picks:
            if used >= sub.q:
                break
            key, _ = canonical(list(s))
            if self.npm_query(key, rho_query, f"Alg. 5 {tag}, CFS pick"):
                used += 1
            measured.append(s)
        self._add_all(model, measured, lo, household=household)
        model.fit(self.p.fit_iters)
        rng = self.rng("sub", tag)
        for rnd, r_t in enumerate(sub.rounds):
            pool = [s for s in cand if s not in measured]
            if not pool or sub.rho_hround <= 0:
                break
            pick = rng.choice(len(pool), size=min(self.p.k, len(pool)), replace=False)
            ct = [pool[i] for i in sorted(pick)]
            items = []
            for s in ct:
                key, axes = canonical(list(s))
                items.append((key, model.marginal(axes)))
            h = self.priv.release_hscores(self.budget, items, lo=lo, rho=sub.rho_hround,
                                          sensitivity_each=self.plan.sens.h,
                                          label=f"Alg. 5 {tag}, h-scores round {rnd + 1} "
                                                f"({len(ct)} candidates)",
                                          source=SOURCE + " App. D, PrivMRF-sub")
            for i in np.argsort(-h, kind="stable")[:r_t]:
                s = ct[int(i)]
                key, _ = canonical(list(s))
                if used < sub.q and self.npm_query(key, rho_query, f"Alg. 5 {tag}, h-score pick"):
                    used += 1
                measured.append(s)
            self._add_all(model, measured, lo, reset=True, keep=fixed, household=household)
            model.fit(self.p.refit_iters)
        return model

    def sub_rho_query(self, sub: SubPlan, picks: Sequence[frozenset], cand: Sequence[frozenset]
                      ) -> Fraction:
        """ρ of each NPM query of one PrivMRF-sub run: the run's NPM share (its ρ less the
        h-score rounds that will run) over the queries it will make (relviz's rule, docs §4.4).

        The plan sets ``q = |V| + ⌊|V|/2⌋`` queries, ``|V|`` for the CFS picks and one per pick
        of the h-score rounds; CFS often picks fewer sets than ``|V|``, and a small candidate pool
        empties before the last rounds, so a run at the planned ``ρ/q`` left part of its ρ
        unspent (TPC-H sf 1: 15–36 %). Which and how many queries the run makes follows from
        the CFS picks and the candidate pool, both computed from released values (noisy
        R-scores, ``ñ_s``) and public domains before any of this run's releases, so the ρ per
        query is post-processing of earlier releases and the run's total is the planned one, as
        §5.7's gate (a privacy filter: Feldman and Zrnic, NeurIPS 2021). Each query's ρ is at
        least the planned ``sub.rho_query``; a round's pick of a key measured earlier would cost
        nothing (none does: every candidate is new here), which only leaves ρ unspent."""
        if sub.rho_query <= 0:
            return sub.rho_query
        novel = {s for s in picks if not self.store.measured(canonical(list(s))[0])}
        n_cfs = len(picks)
        queries = 0
        for i, s in enumerate(picks):  # the CFS loop below: up to q releases
            if queries >= sub.q:
                n_cfs = i
                break
            queries += s in novel
        done = set(picks[:n_cfs])
        pool = sum(1 for s in cand if s not in done)
        rounds = 0
        if sub.rho_hround > 0:
            for r_t in sub.rounds:
                if pool <= 0:
                    break
                rounds += 1
                take = min(r_t, self.p.k, pool, max(sub.q - queries, 0))
                queries += take
                pool -= min(r_t, self.p.k, pool)
        if queries == 0:
            return sub.rho_query
        return max(sub.rho_query, (sub.rho - rounds * sub.rho_hround) / queries)

    def _add_all(self, model: Model, sets: Sequence[frozenset], lo: int, reset: bool = False,
                 keep: int = 1, household: bool = False) -> None:
        if reset:  # the first ``keep`` measurements (ñ_s, exact public marginals) stay
            model.measurements = model.measurements[:keep]
        for s in sets:
            key, axes = canonical(list(s))
            m = self.measurement(axes, key, lo, model, household)
            if m is not None:
                model.add(m)

    # the noise-aware gate of Alg. 5 (3) (relviz's addition, docs §5.7) ---------------------
    def sigma_R(self) -> float:
        """σ of each released R-score (the plan's, :attr:`FKPlan.sigma_R`; 0 if none was released)."""
        return self.plan.sigma_R if self.plan.rho_R > 0 and self.R.pairs else 0.0

    def null_rscore(self, u: Var, v: Var) -> float:
        """Upper bound on the expected R-score of ``u``, ``v`` when they are independent (sampling
        alone): ``½·√(2/π)·Σ_s √(n_s·(|X_u|−1)(|X_v|−1))`` over the sizes ``s ≥ D`` of Eq. 3
        (the whole relation at once under ``rscore_mode="pooled"``), from the noisy ``ñ_s`` and
        the public domains (docs §5.7). Each cell of the independence residual has standard
        deviation ``√(n·p_i·p_j·(1−p_i)(1−p_j))``, its mean absolute value is ``√(2/π)`` times
        that, and ``Σ_i √(p_i(1−p_i)) ≤ √(|X|−1)`` (Cauchy–Schwarz)."""
        _, d = self.R.base(u, v)
        n = np.maximum(self.n_noisy[max(d, 1):], 0.0)
        cells = max(self.vdom(u) - 1, 0) * max(self.vdom(v) - 1, 0)
        root = math.sqrt(float(n.sum())) if self.p.rscore_mode == "pooled" else float(np.sqrt(n).sum())
        return 0.5 * MEAN_ABS * math.sqrt(cells) * root

    def support(self, s: frozenset) -> float:
        """Evidence of a parent–child association inside candidate ``s``: the largest
        ``(R̃(u, v) − null_rscore(u, v)) / σ_R`` over its pairs of a household (parent) and an
        individual (child) attribute; ``-inf`` if it has none (docs §5.7)."""
        zs = [self.evidence(u, v) for u in s for v in s if u[0] == "H" and v[0] == "I"]
        return max((z for z in zs if z is not None), default=-math.inf)

    def evidence(self, u: Var, v: Var) -> float | None:
        """``(R̃(u, v) − null_rscore(u, v)) / σ_R`` of a household and an individual variable,
        None where the pair has no released base R-score or no R-score was released at all
        (docs §5.7). Post-processing."""
        pair, _ = self.R.base(u, v)
        i = self.R.index.get(pair)
        if i is None or self.sigma_R() <= 0:
            return None
        return (float(self.R.noisy[i]) - self.null_rscore(u, v)) / self.sigma_R()

    def supported(self, picks: Sequence[frozenset], z: float) -> list[frozenset]:
        """The CFS picks of Alg. 5 (3) whose :meth:`support` is at least ``z``; if none is, the
        single best supported pick with ``inter_keep_best``, else none (docs §5.7). Post-processing of the noisy R-scores and
        ``ñ``; the caller spends the step's whole ρ on what is kept."""
        zs = [self.support(s) for s in picks]
        kept = [s for s, v in zip(picks, zs) if v >= z]
        if kept or not self.p.inter_keep_best:
            return kept
        return [picks[int(np.argmax(zs))]]

    def refine_supported(self, s: frozenset) -> bool:
        """Whether Algorithm 2 Phase B may consider the new candidate ``s`` (docs §5.7, the
        refining gate): a candidate holding both a household (parent) and an individual (child)
        column needs :meth:`support` at least ``refine_z``; a candidate of one side only, a run
        with ``refine_z=None`` (the paper) or one without released R-scores always may.
        Post-processing of the noisy R-scores and ``ñ``; a target left with fewer candidates
        passes the ρ it does not release on (docs §4.4)."""
        z = self.p.refine_z
        if z is None or self.sigma_R() <= 0:
            return True
        if not crosses(s):
            return True
        if self.support(s) >= z:
            return True
        self.refine_held += 1
        return False

    # Algorithm 5 -------------------------------------------------------------------------
    def init_store(self) -> Model:
        h1, a = len(self.hdom), len(self.idom)
        hvars = [("H", j) for j in range(h1)]
        ivars = [("I", 1, k) for k in range(a)]
        self.rep(0.06, "Alg. 5 (1): PrivMRF-sub on the household attributes and size")
        if h1 and self.plan.rho_hsub > 0:
            hmodel = self.privmrf_sub([SIZE] + hvars, self.plan.hsub, 0, "(1) PrivMRF-sub on A_H",
                                      hvars, household=True)
        else:  # A_H = {size}: the size distribution is ñ_s already (docs §8 D16)
            dom = {SIZE: self.N + 1, **{v: self.vdom(v) for v in hvars}}
            hmodel = Model([SIZE] + hvars, dom, JTree([(SIZE,)], [], dom), self.total(0),
                           device=self.device, device_min_cells=self.min_cells)
            hmodel.add(Measurement((SIZE,), self.n_noisy.copy()))
            hmodel.fit(self.p.fit_iters)
        if not a:
            return hmodel
        self.rep(0.12, "Alg. 5 (2): PrivMRF-sub on size and one individual")
        if self.plan.rho_isub > 0:
            self.imodel = self.privmrf_sub([SIZE] + ivars, self.plan.isub, 1,
                                           "(2) PrivMRF-sub on {size} ∪ A_I", ivars)
        self.rep(0.18, "Alg. 5 (3): inter-relational NPMs")
        rho_q = self.plan.rho_inter_query()
        if rho_q > 0 and hvars:
            sigma = self.plan.sens.vec / math.sqrt(2 * float(rho_q))
            limit = usefulness_limit(float(self.n_noisy.sum()), sigma, self.lam, self.p.max_cells)
            cand = []
            pool = hvars + ivars
            for r in range(2, self.p.k_max):
                for t in combinations(pool, r):
                    if not crosses(t):
                        continue
                    s = frozenset((SIZE,) + t)
                    if self.cells_useful(s) < limit and canonical(list(s))[0] not in self.store:
                        cand.append(s)
            self.starved["inter-relational"] = (limit, (self.N + 1) * min(self.hdom) * min(self.idom))
            picks = cfs_select(cand, pool, self.R, self.cells_full)
            if self.p.inter_z is not None and picks and self.sigma_R() > 0:
                m = len(picks)
                picks = self.supported(picks, self.p.inter_z)
                if picks:
                    rho_q = self.plan.rho_inter / len(picks)  # the quarter over the kept picks
                else:  # none passed: the step's ρ goes to the refining targets (docs §4.4)
                    self.refine_carry += Fraction(self.plan.rho_inter)
                    self.inter_gated = m
                    self.starved.pop("inter-relational", None)
                self.rep(0.2, f"Alg. 5 (3): {len(picks)} of {m} inter-relational picks kept by the "
                              f"noise-aware gate (z ≥ {self.p.inter_z:g}, docs §5.7)"
                              + ("" if picks else "; its ρ passes to Algorithm 2's refining targets"))
            for s in picks:
                if self.npm_query(canonical(list(s))[0], rho_q, "Alg. 5 (3) inter-relational"):
                    self.starved.pop("inter-relational", None)
        self.rep(0.24, "Alg. 5 (4): intra-group NPMs")
        rho_q = self.plan.rho_intra_query()
        if rho_q > 0:
            sigma = self.plan.sens.vec / math.sqrt(2 * float(rho_q))
            limit = usefulness_limit(float(self.n_noisy.sum()), sigma, self.lam, self.p.max_cells)
            picks: list[tuple[int, Key]] = []  # (d, NPM key) of every CFS pick
            for d in range(2, self.plan.o + 1):
                pool = [("I", slot, k) for slot in range(1, d + 1) for k in range(a)]
                cand = []
                seen = set()
                for r in range(d, self.p.k_max):
                    for t in combinations(pool, r):
                        if len({v[1] for v in t}) != d:
                            continue
                        s = frozenset((SIZE,) + t)
                        if self.cells_useful(s) >= limit:
                            continue
                        key = canonical(list(s))[0]
                        if key in self.store or (key, s) in seen:
                            continue
                        seen.add((key, s))
                        cand.append(s)
                targets = [("I", d, k) for k in range(a)]
                if d == 2:  # pairs of co-members; triples refine them (not reported)
                    self.starved["intra-group"] = (limit, (self.N + 1) * min(self.idom) ** 2)
                picks += [(d, canonical(list(s))[0])
                          for s in cfs_select(cand, targets, self.R, self.cells_full)]
            # relviz's rule (docs §4.4): the quarter's ρ over the new keys picked, not the
            # planned (o − 1)·a queries (the picks follow from released values and public
            # domains, so this is post-processing of earlier releases, as in sub_rho_query)
            new = sum(1 for key in {key for _, key in picks} if not self.store.measured(key))
            rho_q = max(rho_q, self.plan.rho_intra / new) if new else rho_q
            for d, key in picks:
                if self.npm_query(key, rho_q, f"Alg. 5 (4) intra-group (d = {d})"):
                    self.starved.pop("intra-group" if d == 2 else None, None)
        return hmodel

    # Algorithm 2 ---------------------------------------------------------------------------
    def build(self, target: Var, syn: list[Var], j: int, refine: bool) -> Conditional:
        i = target[1]
        lo = i
        p = self.p
        context = context_for(target, syn, self.R, p.n_mrf)
        V = self.sort([SIZE] + context + [target])  # noqa: N806
        dom = {v: self.vdom(v, lo) for v in V}
        initial = [(target, v) for v in V if v != target] + \
            [(SIZE, v) for v in V if v not in (SIZE, target)]
        cliques = greedy_graph(V, dom, self.R, initial=initial, clique_cap=p.clique_cells,
                               total_cap=p.model_cells)
        search = JTree(cliques, junction_tree(cliques), dom)
        model = Model(V, dom, search, self.total(lo), device=self.device,
                      device_min_cells=self.min_cells)
        model.add(Measurement((SIZE,), self.n_noisy[lo:].copy()))
        slots = sorted({v[1] for v in V if v[0] == "I"})
        csets = [set(c) for c in cliques]
        measured: set[frozenset] = set()
        rng = self.rng("target", j)
        tname = self.vname(target)

        def inside(vs) -> bool:  # noqa: ANN001
            return any(set(vs) <= c for c in csets)

        def add(s: frozenset) -> int:
            key, _ = canonical(list(s))
            n = 0
            for axes in _instance_axes(key, slots):
                vs = frozenset(axes)
                if vs in measured or not set(vs) <= set(V) or not inside(vs):
                    continue
                m = self.measurement(axes, key, lo, model)
                if m is not None:
                    model.add(m)
                    measured.add(vs)
                    n += 1
            return n

        # Phase A: stored NPMs (no cost)
        subsets: list[frozenset] = []
        seen = set()
        for c in cliques:
            rest = [v for v in c if v != SIZE]
            for r in range(1, len(rest) + 1):
                for t in combinations(rest, r):
                    s = frozenset((SIZE,) + t)
                    if s not in seen:
                        seen.add(s)
                        subsets.append(s)
        existing = [s for s in subsets if self.store.get(canonical(list(s))[0], lo) is not None]
        existing_keys = {canonical(list(s))[0] for s in existing}
        for s in cfs_select(existing, [v for v in V if v != SIZE], self.R, self.cells_full):
            add(s)
        model.fit(p.fit_iters)
        for r_t in schedule(p.t1_picks, p.t1_iters):
            pool = [s for s in existing if s not in measured]
            if not pool:
                break
            pick = rng.choice(len(pool), size=min(p.k, len(pool)), replace=False)
            ct = [pool[int(x)] for x in sorted(pick)]
            scores = []
            for s in ct:  # h-scores on the stored noisy NPMs ([P] §4.3): free
                key, axes = canonical(list(s))
                e = self.store.get(key, lo)
                mu = model.marginal(axes)
                scores.append(stored_h_score(e, mu, lo, p.debias_stored_h))
            added = sum(add(ct[int(x)]) for x in np.argsort(-np.asarray(scores), kind="stable")[:r_t])
            if added:  # nothing new: the fit would not change
                model.fit(p.refit_iters)
        # Phase B: new NPMs (the first J targets)
        if refine and self.plan.J:
            # relviz's rule (docs §4.4): a target that releases less than its ρ (no new
            # λ-useful candidate, or a pool that empties before its last round) passes the rest
            # on, spread evenly over the targets still to refine (decided from released values:
            # post-processing of earlier releases, a privacy filter as in sub_rho_query)
            extra = self.refine_carry / max(self.plan.J - j + 1, 1)
            self.refine_carry -= extra
            avail = self.plan.rho_target + extra
            scale = avail / self.plan.rho_target
            rho_npm = self.plan.rho_npm_target() * scale
            rho_h = self.plan.rho_hround_target() * scale
            spent = Fraction(0)
            sigma_m = self.plan.sigma_M
            limit = usefulness_limit(float(self.n_noisy.sum()), sigma_m, self.lam, p.max_cells)
            new = []
            for s in subsets:
                if len(s) > p.k_max or len(s) < 2:
                    continue
                key = canonical(list(s))[0]
                if key_D(key) > self.plan.o or key in existing_keys or self.store.measured(key):
                    continue
                if self.cells_useful(s) < limit and self.refine_supported(s):
                    new.append(s)
            for rnd, r_t in enumerate(schedule(self.plan.t2, 10)):
                pool = [s for s in new if s not in measured and
                        not self.store.measured(canonical(list(s))[0])]
                if not pool:
                    break
                pick = rng.choice(len(pool), size=min(p.k, len(pool)), replace=False)
                ct = [pool[int(x)] for x in sorted(pick)]
                items = []
                for s in ct:
                    key, axes = canonical(list(s))
                    items.append((key, model.marginal(axes)))
                h = self.priv.release_hscores(
                    self.budget, items, lo=lo, rho=rho_h, sensitivity_each=self.plan.sens.h,
                    label=f"Alg. 2 line 8 ({tname}, target {j}): h-scores round {rnd + 1} "
                          f"({len(ct)} candidates)", source=SOURCE + " Alg. 2 line 8")
                spent += rho_h
                for x in np.argsort(-h, kind="stable")[:r_t]:
                    s = ct[int(x)]
                    if self.npm_query(canonical(list(s))[0], rho_npm,
                                      f"Alg. 2 line 10 ({tname}, target {j})"):
                        spent += rho_npm
                    add(s)
                model.fit(p.refit_iters)
            self.refine_carry += avail - spent
        tree = model.fit_tree
        cl, th = [], []
        if tree is not None:
            for c, t in zip(tree.cliques, model.theta):
                if target in c:
                    cl.append(c)
                    th.append(t)
        pairs = target_pairs(model, target, V) if p.column_calibration else None
        return Conditional(target, lo, list(V), dom, cl, th, pairs)

    # Algorithm 1 ------------------------------------------------------------------------------
    def run(self) -> FKFit:
        plan, p = self.plan, self.p
        N, h1, a = self.N, len(self.hdom), len(self.idom)  # noqa: N806
        self.rep(0.0, "Alg. 1 line 1: noisy group sizes ñ_s")
        noisy = self.priv.release_sizes(self.budget, rho=plan.rho_n, sensitivity=plan.sens.vec,
                                        label="Alg. 1 line 1: group sizes ñ_s",
                                        source=SOURCE + " Alg. 1 line 1")
        n_null = 0.0
        if plan.rho_null > 0:  # a nullable FK: relviz's addition (docs §5.4), not in [P]
            n_null = max(self.priv.release_null_count(
                self.budget, rho=plan.rho_null, sensitivity=plan.sens.null,
                label="relviz: children with a null FK",
                source=SOURCE + " (relviz's nullable-FK addition)"), 0.0)
        margins = children = None
        hists: list[tuple[np.ndarray, float]] = []  # released histograms of all the children
        if plan.rho_margins > 0:  # children's one-way marginals: relviz's addition (docs §5.8)
            raw = self.priv.release_child_margins(
                self.budget, rho_each=plan.rho_margin_each(), sensitivity=plan.sens.hist,
                names=self.inames, source=SOURCE + " (relviz's child_margins addition)")
            hists += [(m, plan.sigma_margins) for m in raw]
            margins = [np.maximum(m, 0.0) for m in raw]
        if plan.rho_children > 0:  # children per parent value: relviz's addition (docs §5.9)
            raw = self.priv.release_parent_children(
                self.budget, rho_each=plan.rho_children_each(), sensitivity=plan.sens.children,
                names=self.hnames, source=SOURCE + " (relviz's parent_children addition)")
            hists += [(c, plan.sigma_children) for c in raw]
            children = [np.maximum(c, 0.0) for c in raw]
        pooled = (pooled_children_total(noisy, plan.sigma_n, hists, self.public_groups)
                  if p.pool_totals else None)  # relviz (docs §5.12): from every release of it
        self.n_noisy = consistent_sizes(noisy, self.public_groups, children=pooled)
        self.lam = auto_lambda(float(self.n_noisy.sum())) if p.lam is None else float(p.lam)
        self.lam_one = self.lam  # λ of the one-attribute candidates {size, A} of PrivMRF-sub
        if p.lam is None:  # relviz's default: lowered where they would not all be measured
            cells = [(plan.isub.sigma_mar, self.cells_full([("I", 1, k)]))
                     for k in range(a) if plan.rho_isub > 0]
            cells += [(plan.hsub.sigma_mar, self.cells_full([("H", j)]))
                      for j in range(h1) if plan.rho_hsub > 0]
            self.lam_one = admitting_lambda(self.lam, float(self.n_noisy.sum()), cells)
        sigma_n = plan.sigma_n
        self.store.put(((), ()), self.n_noisy.copy(), np.full(N + 1, sigma_n ** 2),
                       np.zeros(N + 1, dtype=bool), direct=True, provenance="group sizes", rollup=False)
        self.rep(0.03, "Alg. 1 line 2: noisy R-scores")
        pairs = rscore_pairs(h1 + 1, a)
        if pairs and plan.rho_R > 0:
            rs = self.priv.release_rscores(self.budget, pairs, mode=p.rscore_mode, rho=plan.rho_R,
                                           sensitivity_each=plan.sens.r,
                                           label=f"Alg. 1 line 2: R-scores ({len(pairs)} base pairs)",
                                           source=SOURCE + " Alg. 1 line 2, Eq. 3")
        else:
            rs = np.zeros(len(pairs))
        totals = {d: float(self.n_noisy[d:].sum()) for d in (0, 1, 2)}
        if p.rscore_mode == "pooled":
            totals = {0: totals[0], 1: totals[1], 2: totals[2]}
        self.R = RScores(pairs, rs, totals)
        pair_margins = None
        if plan.rho_pairs > 0:  # parent–child pair margins: relviz's addition (docs §5.10)
            pair_margins = self.release_pair_margins()
        hmodel = self.init_store()
        conds: list[Conditional] = []
        syn: list[Var] = [("H", j) for j in range(h1)]
        dom_all = {("I", i, k): self.idom[k] for i in range(1, N + 1) for k in range(a)}
        j = 0
        n_targets = N * a
        done = 0
        for i in range(1, N + 1):
            if a == 0 or self.total(i) <= 0:
                done += a
                continue
            left = [("I", i, k) for k in range(a)]
            while left:
                t = next_attribute(left, syn, self.R, dom_all) if syn else left[0]
                left.remove(t)
                j += 1
                self.rep(0.3 + 0.7 * done / max(n_targets, 1),
                         f"Alg. 2: model of {self.vname(t)} (target {done + 1} of {n_targets})")
                conds.append(self.build(t, syn, j, refine=j <= plan.J))
                syn.append(t)
                done += 1
        gates = []
        if self.inter_gated:
            gates.append(f"none of Alg. 5 (3)'s {self.inter_gated} inter-relational picks passed "
                         "the gate")
        if self.refine_held:
            gates.append(f"the refining gate held back {self.refine_held} candidates with parent "
                         "and child columns")
        if gates:
            gates.append(f"ρ {float(self.refine_carry):.3g} left unreleased (docs §5.7)")
        if self.size_gated:
            gates.append(f"the size gate found no size dependence in {len(self.size_gated)} "
                         "household blocks (docs §5.11)")
        held = "".join(f"; {g}" for g in gates)
        self.rep(1.0, f"fitted ({self.queries} NPM queries, {len(self.store.entries)} stored NPMs"
                      f"{held})")
        if a and self.starved:
            names = list(self.starved)
            which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
            steps = "; ".join(f"{k}: L = {lim:,.0f} cells, the smallest candidate has {c:,}"
                              for k, (lim, c) in self.starved.items())
            fix = ("λ = 6 is the paper's constant for 10⁵–10⁶ groups; lower λ per FK "
                   "(Plan.with_params(fk, lam=1, merge_from=...)), merge large sizes or spend more ε"
                   if self.lam > 1 else
                   "merge large sizes (Plan.with_params(fk, merge_from=...)), coarsen the child "
                   "attributes' domains or spend more ε")
            warnings.warn(
                f"PrivPetal {self.fk}: no {which} NPM is λ-useful at λ = {self.lam:.2g} with about "
                f"{self.total(0):,.0f} groups ({steps}), so the child attributes get little or no "
                f"dependence on their parent or on each other. {fix} "
                "(docs/methods/privpetal.md §7)", UserWarning, stacklevel=2)
        return FKFit(self.fk, self.n_noisy, [SIZE] + [("H", k) for k in range(h1)], self.hdom,
                     self.idom, N, hmodel, conds, self.R, len(self.store.entries), self.queries,
                     p.sampling, n_null, self.imodel, bool(p.size_raking), p.size_calibration,
                     bool(p.column_calibration), margins, children, pair_margins,
                     self.pair_picks, self.pair_scores, self.pair_sigma)

    def determines(self, j0: int, j: int) -> bool:
        """A public parent's column ``j0`` determines its column ``j`` (each value of ``j0``
        occurs with one value of ``j`` in the public table; TPC-H: ``p_brand`` determines
        ``p_mfgr``), so a released pair margin of ``j0`` with a child column implies ``j``'s.
        False for a private parent (its table is not public). docs §5.10."""
        if self.public_hcodes is None or j0 == j:
            return j0 == j
        if (j0, j) not in self._determines:  # one pass over the public table per column pair
            pairs = np.unique(self.public_hcodes[:, j0].astype(np.int64) * self.hdom[j]
                              + self.public_hcodes[:, j])
            self._determines[(j0, j)] = len(pairs) == len(np.unique(self.public_hcodes[:, j0]))
        return self._determines[(j0, j)]

    def release_pair_margins(self) -> dict[tuple[int, int], np.ndarray]:
        """``pair_margins`` (relviz's addition, docs §5.10): at most ``plan.n_pairs`` pairs of
        a household and a child column, those with the largest released scores (one Gaussian
        release of every candidate's,
        :meth:`~relviz.relational.privpetal.npm.PrivateFK.release_pair_scores` at
        ``plan.rho_pair_select``) that clear ``Φ⁻¹(1 − PAIR_LEVEL/q)·σ_score``, skipping a pair
        whose parent column a kept pair's determines on the same child column
        (:meth:`determines`, public data); the single best when none clears it, every candidate
        when all are planned. Each is released as the children's two-way histogram at
        ``plan.rho_pair_each(kept)``, so the step spends its planned ρ. Returns them as released
        (noisy counts, not clamped) and keeps each one's σ in ``pair_sigma``."""
        plan = self.plan
        cand = [(j, k) for j in range(len(self.hdom)) for k in range(len(self.idom))]
        if not cand or not plan.n_pairs:
            return {}
        kept = cand
        if plan.rho_pair_select > 0:
            total = float(np.arange(self.N + 1) @ self.n_noisy)  # released children in groups
            scores = self.priv.release_pair_scores(
                self.budget, cand, rho=plan.rho_pair_select, sensitivity_each=plan.sens.score,
                total=total, label=f"relviz: parent–child pair scores ({len(cand)} candidates)",
                source=SOURCE + " (relviz's pair_margins addition)")
            # post-processing: the best scores above the public threshold (the largest of q
            # null draws stays below it with probability 1 − PAIR_LEVEL), skipping pairs a kept
            # one implies; the single best when none clears it (the step spends its plan)
            cut = NormalDist().inv_cdf(1.0 - PAIR_LEVEL / len(cand)) * plan.sigma_pair_scores
            order = np.argsort(-scores, kind="stable")
            kept = []
            for q in order:
                if scores[q] < cut:
                    break
                j, k = cand[int(q)]
                if not any(k == k0 and self.determines(j0, j) for j0, k0 in kept):
                    kept.append((j, k))
                if len(kept) == plan.n_pairs:
                    break
            kept = kept or [cand[int(order[0])]]
            self.pair_scores = sorted(((float(s), self.hnames[j], self.inames[k])
                                       for s, (j, k) in zip(scores, cand)), key=lambda t: -t[0])
        self.pair_picks = [(self.hnames[j], self.inames[k]) for j, k in kept]
        names = [f"{a} × {b}" for a, b in self.pair_picks]
        self.rep(0.04, f"relviz: {len(kept)} parent–child pair margins ({', '.join(names)})")
        rho_each = plan.rho_pair_each(len(kept))
        noisy = self.priv.release_pair_margins(
            self.budget, kept, rho_each=rho_each, sensitivity=plan.sens.children, names=names,
            source=SOURCE + " (relviz's pair_margins addition)")
        self.pair_sigma = {jk: plan.sigma_pair_each(len(kept)) for jk in kept}
        return {jk: np.asarray(m, dtype=np.float64) for jk, m in zip(kept, noisy)}


def target_pairs(model: Model, target: Var, vars_: Sequence[Var]) -> dict:
    """``{v: (dom[v], dom[target])}``: ``model``'s ``p(target | v)`` for each ``v`` of
    ``vars_`` (other than the target) whose pair lies in a clique of its junction trees; a value
    of ``v`` with no model mass gets a row of zeros. Post-processing of the fitted model."""
    out = {}
    for v in vars_:
        if v == target:
            continue
        try:
            m = np.asarray(model.marginal([v, target]), dtype=np.float64)
        except ValueError:  # the pair is in no clique: the model has no direct pair margin
            continue
        tot = m.sum(axis=1, keepdims=True)
        out[v] = np.divide(m, tot, out=np.zeros_like(m), where=tot > 0)
    return out


def public_counts(codes: np.ndarray, vars_: Sequence[Var], dom: dict) -> np.ndarray:
    """Exact counts of a public table's rows over the household variables ``vars_`` (``("H",
    j)``: column ``j`` of ``codes``, ``(rows, h−1)`` int), shape ``[dom[v] for v in vars_]``.
    Public data only (``public_margins``, docs §6.11)."""
    dims = [int(dom[v]) for v in vars_]
    flat = mixed_radix_codes(codes, [v[1] for v in vars_], dims)
    return np.bincount(flat, minlength=int(np.prod(dims))).reshape(dims).astype(np.float64)


def stored_h_score(e: Entry, mu: np.ndarray, lo: int, debias: bool) -> float:
    """The h-score of a stored NPM against the model's marginal ``mu`` (shape ``e.arr[lo:]``):
    ``Σ_{s ≥ lo} ‖M̃_s − μ_s‖₁`` over the slices that are not masked ([P] §4.3, free: ``M̃`` is
    the stored noisy array).

    With ``debias`` (relviz's addition, docs/methods/privpetal.md §6.11) the L1 norm that the
    stored noise alone gives is subtracted: ``√(2/π)·Σ_s c·√var_s``, ``c`` the cells of a slice
    and ``var_s`` the noise variance per cell that the store keeps (after the rescaling to
    ``ñ_s``, roll-ups included). Where the model already fits the true NPM each residual cell is
    that noise, whose mean absolute value is ``√(2/π)·√var_s``, so the raw score grows with the
    candidate's cells and noise and ranks the largest, noisiest stored NPMs first; debiased, a
    candidate scores above 0 only by the misfit the noise does not explain (the penalty of
    McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and Iterative Mechanism for
    Differentially Private Synthetic Data", VLDB 2022, §4.2). Post-processing of stored noisy
    arrays and their public variances."""
    keep = ~e.masked[lo:]
    h = float(np.abs(e.arr[lo:] - mu)[keep].sum())
    if debias:
        cells = int(np.prod(e.arr.shape[1:]))
        sd = np.sqrt(e.var[lo:][keep])
        h -= MEAN_ABS * cells * float(sd[np.isfinite(sd)].sum())
    return h


def _vars(key: Key) -> list[Var]:
    return [("H", j) for j in key[0]] + [("I", n + 1, a) for n, lt in enumerate(key[1]) for a in lt]


def _instance_axes(key: Key, slots: Sequence[int]) -> list[list[Var]]:
    """Axis variables (``size`` first) of every flattened instance of ``key`` on distinct
    ``slots`` (instances equal as sets listed once)."""
    out, seen = [], set()
    for assign in permutations(slots, key_D(key)):
        axes = [SIZE] + [("H", j) for j in key[0]] + [("I", s, a) for s, lt in zip(assign, key[1])
                                                        for a in lt]
        fs = frozenset(axes)
        if fs not in seen:
            seen.add(fs)
            out.append(axes)
    return out


PAPER_GROUPS = 616_115
"""Households of the paper's census (Cai, Xiao & Yang, SIGMOD 2025, Table 5), where λ = 6."""


def auto_lambda(n_groups: float) -> float:
    """λ of λ-usefulness when none is given (relviz): ``6·√(ñ/616,115)`` clipped to ``[1, 6]``.

    The paper's λ = 6 at its 616,115 census households; the authors' code lowers λ per dataset
    and ε (6 … 0.15, docs §5.1); relviz interpolates on the noisy number of groups ``ñ``
    (post-processing of Alg. 1 line 1), with the floor 1 measured on the 5,000-household census
    stand-in (mean census query error at ε = 1.6: λ = 6 → 1.57, 2 → 0.71, 1 → 0.35; 2 seeds).
    """
    return float(min(6.0, max(1.0, 6.0 * math.sqrt(max(n_groups, 0.0) / PAPER_GROUPS))))


LAMBDA_MIN = 0.15
"""The lowest λ :func:`admitting_lambda` goes to: the authors' code's lowest per-dataset λ
(docs §5.1)."""


def admitting_lambda(lam: float, n_groups: float, needs: Sequence[tuple[float, int]]) -> float:
    """The λ of the one-attribute candidates ``{size, A}`` of the two PrivMRF-sub runs (Alg. 5
    (1) and (2)): ``lam``, lowered (not below :data:`LAMBDA_MIN`) until every one of them is
    λ-useful; ``needs`` holds ``(σ of that run's NPM queries, cells of {size, A})`` per attribute.
    Larger candidates keep ``lam``. Without it, on small data (a few thousand groups) or small ε
    no candidate passes, nothing is measured and every child attribute comes out uniform. The
    released total ñ and the planned σ decide, so this is post-processing. Lowering λ for every
    candidate instead measured worse where λ = 1 already measured most of them (docs §6.1)."""
    need = min((n_groups / (c * sigma * MEAN_ABS) for sigma, c in needs
                if math.isfinite(sigma) and sigma > 0 and c > 0), default=math.inf)
    return float(max(LAMBDA_MIN, min(lam, need * (1 - 1e-9))))


def pooled_children_total(noisy: np.ndarray, sigma_n: float,
                          histograms: Sequence[tuple[np.ndarray, float]],
                          groups: float | None = None) -> float:
    """The number of children in groups, ``Σ_s s·n_s``, estimated from every release that holds
    it (``pool_totals``; relviz's addition, docs/methods/privpetal.md §5.12): the inverse-variance
    weighted mean of the unbiased estimates

    - from the group sizes ``ñ_s = n_s + N(0, σ_n²)``: ``Σ_s s·ñ_s`` (variance ``σ_n²·Σ_s s²``),
      or, when the number of groups ``G`` is public, ``Σ_s s·ñ_s + s̄·(G − Σ_s ñ_s)`` with
      ``s̄`` the mean of ``0…N`` (variance ``σ_n²·Σ_s (s − s̄)²``: the residual of the groups
      total, known exactly, removes the part of the noise along it);
    - from each released histogram of all the children (a child column's one-way marginal,
      §5.8, or the children per parent value, §5.9; each child row in exactly one cell, and
      the caps are enforced, so every cell sum is ``Σ_s s·n_s``): its sum of ``c`` cells
      (variance ``σ²·c``).

    Post-processing of released values with public weights (σ, cells, ``G``): no privacy cost.
    On TPC-H's ``orders → customer`` at ε 0.2 the sizes alone give ± 2,950 orders (σ_n = 175,
    N = 9); with ``G`` and the six order-column marginals (σ = 465) ± 420.

    Args:
        noisy: float ``(N + 1,)``, the raw noisy group sizes. sigma_n: Their σ.
        histograms: ``(noisy histogram, its per-cell σ)`` pairs (raw, not clamped).
        groups: The exact number of groups where the referenced table is public.

    Returns:
        The pooled estimate (float, children)."""
    y = np.asarray(noisy, dtype=np.float64)
    s = np.arange(y.size, dtype=np.float64)
    if groups is None:
        est, var = [float(s @ y)], [sigma_n ** 2 * float(s @ s)]
    else:
        c = s - s.mean()
        est = [float(s @ y) + float(s.mean()) * (float(groups) - float(y.sum()))]
        var = [sigma_n ** 2 * float(c @ c)]
    for h, sigma in histograms:
        if math.isfinite(sigma):
            est.append(float(np.sum(h)))
            var.append(sigma ** 2 * np.size(h))
    v = np.asarray(var)
    if not np.isfinite(v).any():
        return float(s @ y)
    if (v <= 0).any():  # an exact estimate (σ = 0)
        return float(np.asarray(est)[v <= 0][0])
    w = 1.0 / v
    return float(w @ np.asarray(est) / w.sum())


def consistent_sizes(noisy: np.ndarray, groups: float | None = None,
                     children: float | None = None) -> np.ndarray:
    """Non-negative group counts ``ñ_s`` (``s = 0…N``) closest to the noisy ones in L2 that keep
    their two unbiased totals: the number of groups ``Σ_s ñ_s`` and of children ``Σ_s s·ñ_s``
    (clipped to be feasible). Post-processing of Alg. 1 line 1's release (relviz; docs/methods/
    privpetal.md §8 D18): clamping each noisy count at 0 alone (the spec's rule) turns the noise
    on the many empty large sizes into phantom groups — on galton (205 families, N = 15) at
    ε = 1, 1,544 synthetic children for 934 real ones.

    The children total's noise grows as ``σ·√(Σ_s s²)`` (± 1,850 children for ``N = 60`` and
    σ = 6.8): when the noisy total is infeasible (``≤ 0``, or ``≥ N`` children per group) it is
    dropped and only the number of groups is kept (then the result is the L2 projection onto
    ``{x ≥ 0, Σ x = groups}``). Clipping it instead gave no child at all, or every group at the
    cap.

    Args:
        noisy: float array, shape ``(N + 1,)``.
        groups: The exact number of groups when it is public (the referenced table is public:
            released whole, never truncated): it replaces the noisy ``Σ_s ñ_s`` (no privacy
            cost). With few groups and many sizes the noisy sum can be far off, or ≤ 0, which
            left no group at all. (Not for a private referenced table under a row-level unit:
            its size after the caps, and the number of children with a non-null FK, can change
            with one row; the neighbour tests of docs/privacy.md catch the changed control flow.)
        children: A better unbiased estimate of the children total than ``Σ_s s·ñ_s``
            (:func:`pooled_children_total`), kept instead of it.

    Returns:
        float64 array, same shape, ``≥ 0``.
    """
    from scipy.optimize import lsq_linear

    y = np.asarray(noisy, dtype=np.float64)
    s = np.arange(y.size, dtype=np.float64)
    groups = max(float(y.sum()) if groups is None else float(groups), 0.0)
    children = float(s @ y) if children is None else float(children)
    if groups <= 0.0:
        return np.zeros_like(y)
    scale = max(1.0, float(np.abs(y).max()))
    w = 1e3  # the totals as heavily weighted rows: met to ~1e-5 relative
    a = np.vstack([np.eye(y.size), w * np.ones((1, y.size))])
    b = np.concatenate([y, [w * groups]])
    if 0.0 < children < float(s[-1]) * groups:  # a feasible children total: kept too
        a = np.vstack([a, w * s[None, :] / max(s[-1], 1.0)])
        b = np.concatenate([b, [w * children / max(s[-1], 1.0)]])
    b = b / scale
    x = lsq_linear(a, b, bounds=(0.0, np.inf), method="bvls").x * scale
    return np.maximum(x, 0.0)


def fit_fk(fk: str, priv: PrivateFK, budget: Budget, plan: FKPlan, params: Params,
           hnames: Sequence[str], inames: Sequence[str], rep: Callable[[float, str], None],
           seed: int, public_groups: int | None = None,
           public_hcodes: np.ndarray | None = None) -> FKFit:
    """Algorithm 1 of [P] on one FK (see the module docstring); every release charged to
    ``budget`` as planned by ``plan``. ``public_groups``: the number of referenced tuples of a
    public referenced table, else ``None`` (see :func:`consistent_sizes`); ``public_hcodes``:
    that table's household codes ``(rows, h−1)`` (public), used with ``public_margins``."""
    return _Run(fk, priv, budget, plan, params, hnames, inames, rep, seed, public_groups,
                public_hcodes).run()
