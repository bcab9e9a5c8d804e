"""PrivPetal's Markov random fields: structure search, junction trees, Private-PGM estimation in
numpy, and sampling.

K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025 ([P]): §4.1 (PrivMRF-style structure search on noisy R-scores), §4.3 and Algorithm 2
(one model per attribute of the flattened relation, "an MRF for each s ≥ i"), §4.4 (sampling).
The estimator is Private-PGM's (McKenna, Sheldon & Miklau, "Graphical-model based estimation and
inference for differential privacy", ICML 2019, Algorithm 1: mirror descent on the potentials with
exact junction-tree marginals and Armijo backtracking), the one ``mbi`` implements and the
other mechanisms of relviz use (``relviz.single.mst``, ``relviz.relational.privlava.pgm``).

Why numpy and not ``mbi``'s JAX estimator: PrivPetal fits about ``N·a·(1 + T1 + T2)`` models of
different shapes (hundreds per FK); ``mbi`` compiles one XLA program per clique structure, measured
at 30–45 s per structure on the development machine (2 shared cores) against well under a second
for a whole fit here (docs/methods/privpetal.md §5). The estimator is the same (tested against
``mbi`` on small models: ``tests/relational/test_privpetal.py``); this module adds what PrivPetal
needs and ``mbi`` does not offer: measurements with masked size slices, warm starts across changing
clique sets, candidate marginals outside the measured cliques, and column-by-column conditional
sampling with the variance-reduced rounding of the authors' code. The fit's inner loop runs in
numpy or, through :class:`ArrayEngine`, in torch on a device (docs §5.6).

Conventions: variables are hashable ids with a global order (``size`` first); every clique lists
its variables in that order, so a separator is an ordered subsequence of both of its cliques and
messages broadcast without transposes. Models always hold ``size`` in every clique (PrivPetal's
candidates all contain it), so a size-restricted model ``s ∈ {i…N}`` is exactly the paper's family
of per-size MRFs with one structure (docs §3.5).

A bare ``docs §N`` below is docs/methods/privpetal.md §N.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["ArrayEngine", "NUMPY", "TORCH_MIN_CELLS", "engine_for", "triangulate", "junction_tree",
           "greedy_graph", "perfect_elimination_order", "measured_tree", "JTree", "Measurement",
           "Model", "rounded_draw", "draw_from_table", "logits_to_probs", "cells"]


def cells(vars_: Sequence[Hashable], dom: Mapping[Hashable, int]) -> int:
    out = 1
    for v in vars_:
        out *= int(dom[v])
    return out


# -- structure -------------------------------------------------------------------------------------

def triangulate(nodes: Sequence[Hashable], edges: set[frozenset], *,
                order: Sequence[Hashable] | None = None) -> list[tuple]:
    """Maximal cliques of the graph made chordal by min-degree elimination (ties: the order of
    ``nodes``), or by eliminating in ``order`` when given; each clique in ``nodes`` order ([P]
    §4.1; docs §3.3 GREEDY_GRAPH)."""
    pos = {v: i for i, v in enumerate(nodes)}
    adj = {v: set() for v in nodes}
    for e in edges:
        u, v = tuple(e)
        adj[u].add(v)
        adj[v].add(u)
    left = set(nodes)
    found: list[frozenset] = []
    fixed = list(order) if order is not None else None
    while left:
        v = fixed.pop(0) if fixed else min(left, key=lambda x: (len(adj[x] & left), pos[x]))
        nb = adj[v] & left
        found.append(frozenset(nb | {v}))
        for a in nb:
            adj[a] |= nb - {a}
        left.remove(v)
    maximal = [c for c in found if not any(c < d for d in found)]
    out, seen = [], set()
    for c in maximal:
        if c not in seen:
            seen.add(c)
            out.append(tuple(sorted(c, key=pos.__getitem__)))
    return out


def junction_tree(cliques: Sequence[tuple]) -> list[tuple[int, int]]:
    """Edges of a maximum spanning tree of the cliques weighted by separator size (Kruskal; a
    junction tree when the cliques are those of a chordal graph)."""
    k = len(cliques)
    sets = [set(c) for c in cliques]
    cand = sorted(((len(sets[i] & sets[j]), i, j) for i in range(k) for j in range(i + 1, k)),
                  key=lambda t: (-t[0], t[1], t[2]))
    parent = list(range(k))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    out = []
    for _, i, j in cand:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            out.append((i, j))
    return out


def greedy_graph(nodes: Sequence[Hashable], dom: Mapping[Hashable, int],
                 score: Callable[[Hashable, Hashable], float], *, initial: Sequence[tuple] = (),
                 clique_cap: float, total_cap: float,
                 pairs: Sequence[tuple] | None = None) -> list[tuple]:
    """GREEDY_GRAPH ([P] §4.1; the authors' ``local_search_by_R``, docs §3.3): scan the pairs in
    descending noisy R-score, add the first whose addition keeps every maximal clique of the
    triangulated graph within ``clique_cap`` cells and their sum within ``total_cap``, and keeps
    the sum of the added pairs' scores positive; restart from the top after every addition (a
    pair refused once is not tried again: adding edges never shrinks a clique). Returns the
    maximal cliques of the final triangulated graph."""
    edges = {frozenset(e) for e in initial}
    if pairs is None:
        pairs = [(u, v) for i, u in enumerate(nodes) for v in nodes[i + 1:]]
    scored = sorted(((score(u, v), i, (u, v)) for i, (u, v) in enumerate(pairs)
                     if frozenset((u, v)) not in edges), key=lambda t: (-t[0], t[1]))
    refused: set[int] = set()
    total = 0.0

    def fits(es: set[frozenset]) -> bool:
        cl = triangulate(nodes, es)
        sizes = [cells(c, dom) for c in cl]
        return max(sizes, default=0) <= clique_cap and sum(sizes) <= total_cap

    added = True
    while added:
        added = False
        for s, i, (u, v) in scored:
            if i in refused or frozenset((u, v)) in edges:
                continue
            if total + s <= 0:
                break  # descending scores: no later pair keeps the sum positive either
            trial = edges | {frozenset((u, v))}
            if fits(trial):
                edges = trial
                total += s
                added = True
                break
            refused.add(i)
    return triangulate(nodes, edges)


# -- where the estimator's arrays live -------------------------------------------------------

class ArrayEngine:
    """The array library of the estimator's inner loop (``Model.fit``, ``JTree.calibrate``):
    numpy (``device=None``), or torch in float64 on ``device`` (docs/methods/privpetal.md §5.6:
    ``device="auto"`` puts the large fits on CUDA when present). Only the operations whose numpy
    and torch spellings or speeds differ go through it (sums over axes: :meth:`marginalize`); the
    rest (``max()``, ``reshape``, arithmetic, ``xp.exp``) is written once for both.

    Args:
        device: None (numpy) or a ``torch.device``.
    """

    def __init__(self, device=None) -> None:  # noqa: ANN001
        self.device = device
        if device is None:
            self.xp = np
        else:
            import torch

            self.xp = torch

    def array(self, a) -> np.ndarray:  # noqa: ANN001
        """``a`` as a float64 array of this engine."""
        a = np.asarray(a, dtype=np.float64)
        return a if self.device is None else self.xp.as_tensor(a, device=self.device)

    def numpy(self, a) -> np.ndarray:  # noqa: ANN001
        return a if self.device is None else a.detach().cpu().numpy()

    def zeros(self, shape: tuple) -> np.ndarray:
        if self.device is None:
            return np.zeros(shape)
        return self.xp.zeros(shape, dtype=self.xp.float64, device=self.device)

    def copy(self, a) -> np.ndarray:  # noqa: ANN001
        return np.array(a, dtype=np.float64, copy=True) if self.device is None else a.clone()

    def normalize(self, a, *, uniform: bool = False) -> np.ndarray:  # noqa: ANN001
        """``a / a.sum()``; an all-zero ``a`` stays zero, or becomes uniform with ``uniform``."""
        s = a.sum()
        if self.device is None:
            if s > 0:
                return a / s
            return np.full(a.shape, 1.0 / a.size) if uniform else a
        xp = self.xp
        out = a / xp.where(s > 0, s, xp.ones_like(s))
        return xp.where(s > 0, out, xp.full_like(a, 1.0 / a.numel())) if uniform else out

    def marginalize(self, a, axes: tuple):  # noqa: ANN001, ANN201
        """``a`` summed over ``axes`` (the others kept, in order). numpy through ``einsum`` from
        :data:`EINSUM_MIN_CELLS` cells: its single-operand reduction is 1.5–4× faster than
        ``ndarray.sum`` over strided axes of the fits' many-axis cliques (a 45,056-cell clique of
        7 axes summed to 3 of them: 374 → 142 µs, 92 → 23 µs, 14 → 9 µs on one core); below, its
        fixed cost makes it the slower one (40 cells: 1.7 against 1.3 µs)."""
        if not axes:
            return a
        if self.device is not None:
            return a.sum(dim=axes)
        if a.size < EINSUM_MIN_CELLS:
            return a.sum(axis=axes)
        return np.einsum(_reduction(a.ndim, axes), a)

    def safe_div(self, a, b) -> np.ndarray:  # noqa: ANN001
        """``a / b`` where ``b > 0``, else 0."""
        if self.device is None:
            return np.divide(a, b, out=np.zeros_like(b), where=b > 0)
        xp = self.xp
        return xp.where(b > 0, a / xp.where(b > 0, b, xp.ones_like(b)), xp.zeros_like(b))

    def dot(self, a, b):  # noqa: ANN001, ANN201
        """``Σ a·b`` (a numpy float, or a 0-d tensor: no host synchronisation)."""
        return np.vdot(a, b) if self.device is None else (a * b).sum()


EINSUM_MIN_CELLS = 512
"""Arrays from this many cells are summed through ``einsum`` (:meth:`ArrayEngine.marginalize`):
measured on one core, ``ndarray.sum`` is faster up to a few hundred cells (1.2–1.3 against
1.7 µs at 40–120 cells) and ``einsum`` from about 640 (2.1 against 2.6 µs)."""


@functools.lru_cache(maxsize=4096)
def _reduction(ndim: int, axes: tuple) -> str:
    """The ``einsum`` subscripts that sum ``axes`` out of an ``ndim``-axis array."""
    letters = string.ascii_letters[:ndim]
    return letters + "->" + "".join(c for i, c in enumerate(letters) if i not in axes)


NUMPY = ArrayEngine()
"""The default engine."""

TORCH_MIN_CELLS = 1 << 16
"""Under ``device="auto"``, a fit goes to CUDA only when its junction tree holds at least this
many cells (65,536). Below, numpy is the faster choice: an operation of the fit on a
10⁴-cell clique costs numpy 13–21 µs on one core of the development machine (``exp`` after a
shift, a sum over an axis), about a CUDA kernel's launch and torch's dispatch together
(10–20 µs), while at 10⁵ cells numpy needs 0.2–0.8 ms, dozens of launches. An estimate from the
numpy side only: no GPU was lent to measure the crossing (docs/methods/privpetal.md §5.6)."""


def engine_for(device) -> ArrayEngine:  # noqa: ANN001
    """The engine of a resolved device (None: numpy)."""
    return NUMPY if device is None else ArrayEngine(device)


# -- junction-tree calibration (probability space, normalised messages) -----------------------

class JTree:
    """A junction tree over cliques whose variables follow one global order.

    Args:
        cliques: Tuples of variables (each in the global order).
        edges: Tree (or forest) edges between clique indices.
        dom: Domain size of every variable.
    """

    def __init__(self, cliques: Sequence[tuple], edges: Sequence[tuple[int, int]],
                 dom: Mapping[Hashable, int]) -> None:
        self.cliques = [tuple(c) for c in cliques]
        self.dom = dict(dom)
        self.shapes = [tuple(self.dom[v] for v in c) for c in self.cliques]
        k = len(self.cliques)
        nb: dict[int, list[int]] = {i: [] for i in range(k)}
        for i, j in edges:
            nb[i].append(j)
            nb[j].append(i)
        self.parent = [-1] * k
        self.order: list[int] = []
        seen = [False] * k
        for r in range(k):  # BFS per component
            if seen[r]:
                continue
            seen[r] = True
            queue = [r]
            while queue:
                n = queue.pop(0)
                self.order.append(n)
                for m in nb[n]:
                    if not seen[m]:
                        seen[m] = True
                        self.parent[m] = n
                        queue.append(m)
        # per non-root node n: axes of n summed for the message to its parent, and the shape
        # of the separator broadcast in the parent and in n
        self._up: dict[int, tuple] = {}
        for n in self.order:
            p = self.parent[n]
            if p < 0:
                continue
            sep = [v for v in self.cliques[n] if v in self.cliques[p]]
            sum_n = tuple(i for i, v in enumerate(self.cliques[n]) if v not in sep)
            sum_p = tuple(i for i, v in enumerate(self.cliques[p]) if v not in sep)
            shape_p = tuple(self.dom[v] if v in sep else 1 for v in self.cliques[p])
            shape_n = tuple(self.dom[v] if v in sep else 1 for v in self.cliques[n])
            self._up[n] = (sum_n, sum_p, shape_p, shape_n)

    def calibrate(self, pots: Sequence[np.ndarray], engine: ArrayEngine | None = None
                  ) -> list[np.ndarray]:
        """Clique marginals (each sums to 1) of ``p(x) ∝ Π_C pots_C(x_C)`` (non-negative
        factors, axes in clique order), by two passes of sum-product with normalised messages;
        numpy arrays, or torch tensors when ``engine`` runs on torch (no host synchronisation)."""
        eng = engine or NUMPY
        acc = [eng.copy(p) for p in pots]
        up: dict[int, np.ndarray] = {}
        for n in reversed(self.order):
            p = self.parent[n]
            if p < 0:
                continue
            sum_n, _, shape_p, _ = self._up[n]
            msg = eng.normalize(eng.marginalize(acc[n], sum_n))
            up[n] = msg
            acc[p] *= msg.reshape(shape_p)
        belief: list[np.ndarray | None] = [None] * len(acc)
        for n in self.order:
            p = self.parent[n]
            if p < 0:
                b = acc[n]
            else:
                _, sum_p, _, shape_n = self._up[n]
                down = eng.marginalize(belief[p], sum_p)
                msg = up[n]
                down = eng.safe_div(down.reshape(msg.shape), msg)
                b = acc[n] * down.reshape(shape_n)
            belief[n] = eng.normalize(b, uniform=True)
        return belief  # type: ignore[return-value]

    def marginal(self, beliefs: Sequence[np.ndarray], vars_: Sequence[Hashable]) -> np.ndarray | None:
        """Probabilities on ``vars_`` (axes in the global order of ``vars_`` as given, which must
        follow the global order) from the smallest clique holding them, or None."""
        best = None
        for i, c in enumerate(self.cliques):
            if set(vars_) <= set(c) and (best is None or len(c) < len(self.cliques[best])):
                best = i
        if best is None:
            return None
        c = self.cliques[best]
        axes = tuple(i for i, v in enumerate(c) if v not in vars_)
        return beliefs[best].sum(axis=axes) if axes else beliefs[best]


def perfect_elimination_order(cliques: Sequence[tuple]) -> list:
    """A perfect elimination order of the chordal graph whose maximal cliques are ``cliques``
    (reverse of a maximum cardinality search, Tarjan & Yannakakis 1984)."""
    adj: dict = {}
    for c in cliques:
        for v in c:
            adj.setdefault(v, set()).update(u for u in c if u != v)
    weight = {v: 0 for v in adj}
    order = []
    left = list(adj)
    while left:
        v = max(left, key=lambda x: weight[x])
        left.remove(v)
        order.append(v)
        for u in adj[v]:
            if u in weight and u in left:
                weight[u] += 1
    return order[::-1]


def measured_tree(search: Sequence[tuple], sets: Sequence[tuple], order: Mapping[Hashable, int]
                  ) -> tuple[list[tuple], list[tuple[int, int]], list[int]]:
    """The junction tree of the measured sets inside a search junction tree (docs §3.8,
    model-family remark): the graph of the measured sets is triangulated by eliminating its
    vertices in a perfect elimination order of the (chordal) search graph, so every fill edge is
    a search edge and every clique lies in a search clique. Returns ``(cliques, edges, origin)``,
    clique ``i`` inside search clique ``origin[i]``."""
    peo = [v for v in perfect_elimination_order(search) if any(v in s for s in sets)]
    edges = {frozenset((u, v)) for s in sets for i, u in enumerate(s) for v in s[i + 1:]}
    cl = triangulate(peo, edges, order=peo)
    cl = [tuple(sorted(c, key=order.__getitem__)) for c in cl]
    origin = []
    for c in cl:
        hold = [i for i, sc in enumerate(search) if set(c) <= set(sc)]
        if not hold:
            raise ValueError(f"clique {c} of the measured sets lies in no search clique")
        origin.append(min(hold, key=lambda i: len(search[i])))
    return cl, junction_tree(cl), origin


# -- the model -------------------------------------------------------------------------------------

@dataclass
class Measurement:
    """A noisy marginal: ``vars`` (global order), ``y`` (axes in that order, counts), optional
    ``mask`` over the first axis (``size``): a weight per slice in ``[0, 1]`` on the residual
    (0 = left out of the loss), ``weight``."""

    vars: tuple
    y: np.ndarray
    mask: np.ndarray | None = None
    weight: float = 1.0


@dataclass
class Model:
    """An MRF over ``vars`` (global order = list order; ``size`` first when present) with a
    search junction tree (candidate marginals) and potentials on the junction tree of its
    measurements, fitted by Private-PGM mirror descent (module docstring).

    Attributes:
        vars: Variables in global order.
        dom: Domain sizes.
        search: Maximal cliques of the search graph (``JTree``).
        total: Model total (noisy, ``Σ ñ_s`` over its sizes).
        measurements: The noisy marginals fitted.
        theta: Log-potentials on the fit tree's cliques.
        device: Where :meth:`fit` runs its iterations: None (numpy) or a ``torch.device``
            (:class:`ArrayEngine`); the fitted potentials are numpy arrays either way.
        device_min_cells: Fits whose junction tree holds fewer cells run in numpy even when
            ``device`` is set (see :data:`TORCH_MIN_CELLS`).
    """

    vars: list
    dom: dict
    search: JTree
    total: float
    measurements: list[Measurement] = field(default_factory=list)
    fit_tree: JTree | None = None
    origin: list[int] = field(default_factory=list)
    theta: list[np.ndarray] = field(default_factory=list)
    loss: float = float("nan")
    history: list[float] = field(default_factory=list)
    device: object = None
    device_min_cells: int = 0
    _beliefs_search: list[np.ndarray] | None = None
    _beliefs_fit: list[np.ndarray] | None = None

    @property
    def order(self) -> dict:
        return {v: i for i, v in enumerate(self.vars)}

    def sorted_vars(self, vs) -> tuple:  # noqa: ANN001
        o = self.order
        return tuple(sorted(vs, key=o.__getitem__))

    # -- fitting ---------------------------------------------------------------------------------
    def add(self, m: Measurement) -> None:
        self.measurements.append(m)

    def fit(self, iters: int = 300, *, early_stop: bool = True) -> Model:
        """Mirror descent on ``½ Σ_m w_m ‖mask·(μ_m(θ) − y_m)‖²`` (warm start from the previous
        potentials of the cliques that persist; new cells start at 0), with the adaptive Armijo
        step of Private-PGM (×1.01 after an accepted step, ×½ otherwise; at most 25 halvings in
        a row). Early stop: every 100 iterations after 19 % of ``iters``, when the loss fell by
        less than 1 %."""
        if not self.measurements:
            self.fit_tree, self.origin, self.theta = None, [], []
            self._beliefs_search = self._beliefs_fit = None
            return self
        sets = [m.vars for m in self.measurements]
        cl, edges, origin = measured_tree(self.search.cliques, sets, self.order)
        old = (self.fit_tree, self.theta)
        tree = JTree(cl, edges, self.dom)
        theta = [np.zeros(s) for s in tree.shapes]
        if old[0] is not None:  # warm start: old potentials broadcast into the new cliques
            for c_old, th in zip(old[0].cliques, old[1]):
                j = next((i for i, c in enumerate(tree.cliques) if set(c_old) <= set(c)), None)
                if j is not None:
                    theta[j] = theta[j] + _broadcast(th, c_old, tree.cliques[j])
        assign = []
        for m in self.measurements:
            j = min((i for i, c in enumerate(tree.cliques) if set(m.vars) <= set(c)),
                    key=lambda i: len(tree.cliques[i]))
            c = tree.cliques[j]
            axes = tuple(i for i, v in enumerate(c) if v not in m.vars)
            shape = tuple(self.dom[v] if v in m.vars else 1 for v in c)
            assign.append((j, axes, shape))
        total = float(max(self.total, 1e-9))
        per_clique = np.bincount([a[0] for a in assign], minlength=len(tree.cliques))
        alpha = 1.0 / (total * max(1, int(per_clique.max())))
        big = sum(int(np.prod(sh)) for sh in tree.shapes) >= self.device_min_cells
        eng = engine_for(self.device if big else None)
        xp = eng.xp
        ys = [eng.array(m.y) for m in self.measurements]
        # per-slice weights w on the first axis: loss ½‖w·r‖², gradient w²·r
        ws = [None if m.mask is None else eng.array(m.mask).reshape((-1,) + (1,) * (m.y.ndim - 1))
              for m in self.measurements]

        def evaluate(th: list) -> tuple[float, list, list]:  # noqa: ANN001
            pots = [xp.exp(t - t.max()) for t in th]
            bel = tree.calibrate(pots, eng)
            mu = [b * total for b in bel]
            grad = [eng.zeros(s) for s in tree.shapes]
            loss = 0.0
            for m, y, w, (j, axes, shape) in zip(self.measurements, ys, ws, assign):
                r = eng.marginalize(mu[j], axes) - y
                g = r
                if w is not None:
                    r = r * w
                    g = r * w
                loss = loss + 0.5 * m.weight * eng.dot(r, r)
                grad[j] += (m.weight * g).reshape(shape)
            return float(loss), mu, grad

        theta = [eng.array(t) for t in theta]
        loss, mu, grad = evaluate(theta)
        history = [loss]
        halvings = 0
        for it in range(int(iters)):
            trial = [t - alpha * g for t, g in zip(theta, grad)]
            trial = [xp.maximum(t, t.max() - 60.0) for t in trial]
            loss2, mu2, grad2 = evaluate(trial)
            gain = float(sum(eng.dot(g, a - b) for g, a, b in zip(grad, mu, mu2)))
            if loss - loss2 >= 0.5 * alpha * gain:
                theta, loss, mu, grad = trial, loss2, mu2, grad2
                alpha *= 1.01
                halvings = 0
            else:
                alpha *= 0.5
                halvings += 1
                if halvings > 25:
                    break
            history.append(loss)
            if early_stop and it + 1 >= 0.19 * iters and (it + 1) % 100 == 0 and len(history) > 100:
                if history[-101] > 0 and loss / history[-101] > 0.99:
                    break
        theta = [eng.numpy(t) for t in theta]
        mu = [eng.numpy(m) for m in mu]
        self.fit_tree, self.origin, self.theta, self.loss = tree, origin, theta, loss
        self.history = history
        self._beliefs_fit = [m / total for m in mu]
        self._beliefs_search = None
        return self

    # -- marginals -------------------------------------------------------------------------------
    def beliefs_fit(self) -> list[np.ndarray]:
        if self._beliefs_fit is None and self.fit_tree is not None:
            self._beliefs_fit = self.fit_tree.calibrate([np.exp(t - t.max()) for t in self.theta])
        return self._beliefs_fit or []

    def marginal(self, vars_: Sequence[Hashable]) -> np.ndarray:
        """Model counts (``total ×`` probabilities) on ``vars_`` (any order given; axes follow
        it): from the fit tree when one of its cliques holds them, else from the search tree with
        the potentials embedded (PrivPetal's candidates always lie in a search clique).

        Raises:
            ValueError: ``vars_`` lie in no clique of the search tree.
        """
        want = tuple(vars_)
        gl = self.sorted_vars(want)
        arr = None
        if self.fit_tree is not None:
            arr = self.fit_tree.marginal(self.beliefs_fit(), gl)
        if arr is None:
            if self._beliefs_search is None:
                pots = [np.ones(s) for s in self.search.shapes]
                if self.fit_tree is not None:
                    for c, th, o in zip(self.fit_tree.cliques, self.theta, self.origin):
                        pots[o] = pots[o] * _broadcast(np.exp(th - th.max()), c, self.search.cliques[o])
                self._beliefs_search = self.search.calibrate(pots)
            arr = self.search.marginal(self._beliefs_search, gl)
            if arr is None:
                raise ValueError(f"{want} lies in no clique of the search junction tree")
        if gl != want:
            arr = np.transpose(arr, [gl.index(v) for v in want])
        return arr * self.total

    # -- sampling --------------------------------------------------------------------------------
    def conditional_logits(self, target: Hashable, codes: Mapping[Hashable, np.ndarray]) -> np.ndarray:
        """``log p(target | rest) + const`` for every row: ``Σ_{C ∋ target} θ_C(row, ·)``
        ([P] §4.4, docs §3.9), shape ``(n, |X_target|)``."""
        n = len(next(iter(codes.values()))) if codes else 0
        out = np.zeros((n, self.dom[target]))
        if self.fit_tree is None:
            return out
        for c, th in zip(self.fit_tree.cliques, self.theta):
            if target not in c:
                continue
            p = c.index(target)
            t = np.moveaxis(th, p, -1)
            idx = tuple(np.asarray(codes[v]) for v in c if v != target)
            out += t[idx] if idx else np.broadcast_to(t, (n, t.shape[-1]))
        return out

    def tilted(self, var: Hashable, weights: np.ndarray) -> Model:
        """A copy whose distribution is ``p(x)·w[x_var] / Z`` (``w ≥ 0``, one per code of
        ``var``): ``log w`` added to the potential of one fit clique holding ``var``, so that
        sampling it is exact. relviz's nullable-FK addition (docs §5.4) draws a child with a null
        FK from the model of one individual tilted by ``size``: a slice of an NPM holds one unit of
        mass per group, so weighting it by the group size turns "a member of a random group" into
        "a random child". A model with no fit (no measurement) is returned unchanged."""
        w = np.asarray(weights, dtype=np.float64)
        if self.fit_tree is None or var not in self.dom:
            return replace(self)
        j = next((i for i, c in enumerate(self.fit_tree.cliques) if var in c), None)
        if j is None:
            return replace(self)
        c = self.fit_tree.cliques[j]
        theta = list(self.theta)
        logw = np.log(np.maximum(w, 1e-300))
        theta[j] = theta[j] + _broadcast(logw, (var,), c)
        return replace(self, measurements=list(self.measurements), theta=theta,
                       _beliefs_search=None, _beliefs_fit=None)

    def sample_all(self, n: int, rng: np.random.Generator, *, rounded: bool = True
                   ) -> dict[Hashable, np.ndarray]:
        """``n`` rows by ancestral sampling over the fit tree (docs §3.9): the root clique's
        variables one at a time, then each clique's new variables given the drawn ones; variables
        in no clique are uniform."""
        out: dict[Hashable, np.ndarray] = {}
        if self.fit_tree is not None:
            bel = self.beliefs_fit()
            tree = self.fit_tree
            for i in tree.order:
                c = tree.cliques[i]
                for v in c:
                    if v in out:
                        continue
                    cond = [u for u in c if u in out]
                    keep = cond + [v]
                    axes = tuple(k for k, u in enumerate(c) if u not in keep)
                    marg = bel[i].sum(axis=axes) if axes else bel[i]
                    present = [u for u in c if u in keep]
                    marg = np.transpose(marg, [present.index(u) for u in keep])
                    table = marg.reshape(-1, self.dom[v])
                    if cond:
                        flat = np.ravel_multi_index(tuple(out[u] for u in cond),
                                                    tuple(self.dom[u] for u in cond))
                    else:
                        flat = np.zeros(n, dtype=np.int64)
                    out[v] = draw_from_table(flat, table, rng, rounded=rounded)
        for v in self.vars:
            if v not in out:
                out[v] = rng.integers(0, self.dom[v], size=n)
        return out


def _broadcast(arr: np.ndarray, src: Sequence, dst: Sequence) -> np.ndarray:
    """``arr`` (axes ``src``, a subsequence of ``dst`` in the same order) shaped to broadcast
    against axes ``dst``."""
    shape = [arr.shape[list(src).index(v)] if v in src else 1 for v in dst]
    return arr.reshape(shape)


# -- draws -------------------------------------------------------------------------------------------

def rounded_draw(group: np.ndarray, probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One value per row, rows grouped by ``group`` (indices into ``probs``, ``(G, K)``
    non-negative rows): a group of ``m`` rows gets ``⌊m·p_v⌋`` rows of each value ``v``, the
    ``m − Σ⌊m·p_v⌋`` others i.i.d. ∝ the fractional parts, in random order within the group (the
    authors' variance-reduced draw; docs §3.9). Vectorised over the groups."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    used, inv = np.unique(group, return_inverse=True)
    p = np.asarray(probs, dtype=np.float64)[used]
    s = p.sum(axis=1, keepdims=True)
    p = np.where(s > 0, p / np.where(s > 0, s, 1.0), 1.0 / p.shape[1])
    m = np.bincount(inv, minlength=len(used)).astype(np.float64)
    exp = m[:, None] * p
    base = np.floor(exp + 1e-9)
    counts = base.astype(np.int64)
    rem = (m - base.sum(axis=1)).astype(np.int64)
    frac = np.maximum(exp - base, 0.0)
    if rem.sum() > 0:
        rows = np.repeat(np.arange(len(used)), np.maximum(rem, 0))
        fr = frac[rows]
        fs = fr.sum(axis=1, keepdims=True)
        fr = np.where(fs > 0, fr / np.where(fs > 0, fs, 1.0), p[rows])
        extra = _categorical(fr, rng)
        np.add.at(counts, (rows, extra), 1)
    k = p.shape[1]
    values = np.repeat(np.tile(np.arange(k), len(used)), counts.ravel())  # group-major
    order = np.lexsort((rng.random(n), inv))  # rows sorted by group, random within
    out = np.empty(n, dtype=np.int64)
    out[order] = values
    return out


def _categorical(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random(len(p))[:, None]
    return np.minimum((cdf < u).sum(axis=1), p.shape[1] - 1).astype(np.int64)


def draw_from_table(group: np.ndarray, table: np.ndarray, rng: np.random.Generator, *,
                    rounded: bool = True) -> np.ndarray:
    """Draw one value per row from ``table[group[row]]`` (rounded or i.i.d.)."""
    if rounded:
        return rounded_draw(group, table, rng)
    p = np.asarray(table, dtype=np.float64)[group]
    s = p.sum(axis=1, keepdims=True)
    p = np.where(s > 0, p / np.where(s > 0, s, 1.0), 1.0 / p.shape[1])
    return _categorical(p, rng)


def logits_to_probs(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)
