"""Permutation relations without materialising them: normalised permutation marginals (NPMs),
R-scores, h-scores, and the store of noisy NPMs.

K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025 ([P]): §3.1–3.2 (flattened relation, permutation relation ``P_{s,o}``, Eq. 1
``W_s``, the NPM and Theorem 3.1), §4.1 (R-scores, Eq. 3), §4.3 (h-scores), Algorithm 3
(querying an NPM, merging sizes), Eq. 2 (roll-up). Written out in docs/methods/privpetal.md §2.

**Closed form.** For an NPM key ``S = S_H ∪ S_1 ∪ … ∪ S_D`` (household attributes and the
attribute sets of ``D ≤ o`` distinct individuals, ``size`` always included) and ``s ≥ D``::

    M_{S,s}[x] = Σ_{t: size(t)=s} 1[t[S_H] = x_H] · #{ordered D-tuples of distinct members with
                 m_j[S_j] = x_j} / (m!/(m−D)!)

(``m`` = the group's member count after the member cap): each ordered ``D``-tuple is the prefix
of the same number of rows of ``P_s``, which cancels against ``W_s``. Every group adds mass 1 to
its slice, so the value does not depend on ``o`` and a slice sums to ``n_s``. Computed here with
one ``np.bincount`` over a *tuple table* (every ordered ``D``-tuple of distinct members of every
group, built once per ``D`` from ``itertools.permutations`` templates, vectorised over the groups
of each member count) with weights ``1/P(m, D)``.

**Keys.** An NPM is stored once under a canonical key ``(H, L)``: ``H`` the sorted household
attribute indices, ``L`` the letters' attribute tuples (each sorted), sorted lexicographically;
array axes are ``size`` (``0…N``), then ``H``, then each letter's attributes. A *flattened*
variable is ``("S",)`` (size), ``("H", j)`` or ``("I", slot, a)``; :func:`canonical` maps a set of
flattened variables (slots → letters) to its key and the key axes' variables.

**Privacy.** :class:`PrivateFK` holds the true data of one FK. Its only public methods are
*releases*: each computes exact statistics inside a guard and returns them through
:meth:`relviz.privacy.budget.Budget.gaussian` (the run's accountant); an exact computation outside
a release raises (docs/methods/privpetal.md §4.6).

A bare ``docs §N`` below is docs/methods/privpetal.md §N.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import permutations

import numpy as np

from relviz.privacy.budget import Budget
from relviz.relational.privpetal.accounting import MEAN_ABS

__all__ = ["Key", "Var", "SIZE", "canonical", "key_dims", "key_D", "key_name", "instances",
           "GroupIndex", "PrivateFK", "NPMStore", "Entry", "sub_keys", "perm_count",
           "npm_closed_form", "rscore_pairs", "HygieneError"]

Var = tuple
"""A flattened variable: ``("S",)``, ``("H", j)`` or ``("I", slot, a)`` (slots from 1)."""
Key = tuple
"""A canonical NPM key ``(H, L)`` (see the module docstring)."""
SIZE: Var = ("S",)
SOURCE = "PrivPetal (Cai, Xiao & Yang, SIGMOD 2025)"


class HygieneError(RuntimeError):
    """An exact statistic of private data was requested outside a charged release."""


def perm_count(m: np.ndarray | int, d: int) -> np.ndarray | int:
    """``m!/(m−d)!`` (0 when ``m < d``)."""
    out = np.ones_like(m) if isinstance(m, np.ndarray) else 1
    for k in range(d):
        out = out * (m - k)
    return np.maximum(out, 0) if isinstance(m, np.ndarray) else max(out, 0)


# -- keys ----------------------------------------------------------------------------------------

def canonical(vars_: Sequence[Var]) -> tuple[Key, list[Var]]:
    """The canonical key of a set of flattened variables and the variable of every key axis
    (``size`` first). ``size`` may be absent from ``vars_``: keys always include it."""
    hs = sorted({v[1] for v in vars_ if v[0] == "H"})
    slots: dict[int, list[int]] = {}
    for v in vars_:
        if v[0] == "I":
            slots.setdefault(v[1], []).append(v[2])
    letters = sorted((tuple(sorted(set(a))), s) for s, a in slots.items())
    key = (tuple(hs), tuple(lt for lt, _ in letters))
    axes = [SIZE] + [("H", j) for j in hs] + [("I", s, a) for lt, s in letters for a in lt]
    return key, axes


def key_D(key: Key) -> int:  # noqa: N802 - the paper's symbol
    """Number of distinct individuals ``D(S)`` of a key."""
    return len(key[1])


def key_dims(key: Key, hdom: Sequence[int], idom: Sequence[int]) -> tuple[int, ...]:
    """Domain sizes of a key's attribute axes (``size`` excluded)."""
    return tuple(hdom[j] for j in key[0]) + tuple(idom[a] for lt in key[1] for a in lt)


def key_name(key: Key, hnames: Sequence[str], inames: Sequence[str]) -> str:
    """Readable name, e.g. ``{size, H.OWN, I_a.EMP, I_b.EMP}`` (public: used in ledger labels)."""
    parts = ["size"] + [f"H.{hnames[j]}" for j in key[0]]
    for n, lt in enumerate(key[1]):
        parts += [f"I_{'abcdefghij'[n]}.{inames[a]}" for a in lt]
    return "{" + ", ".join(parts) + "}"


def instances(key: Key, slots: Sequence[int]) -> Iterator[frozenset]:
    """Flattened instances of ``key``: every assignment of its letters to distinct ``slots``
    (``size`` included; instances equal as sets are listed once)."""
    seen = set()
    for assign in permutations(slots, key_D(key)):
        vs = frozenset([SIZE] + [("H", j) for j in key[0]]
                       + [("I", s, a) for s, lt in zip(assign, key[1]) for a in lt])
        if vs not in seen:
            seen.add(vs)
            yield vs


def sub_keys(key: Key) -> Iterator[tuple[Key, tuple[int, ...]]]:
    """Every proper sub-key (attributes deleted, ``size`` kept) with the axes of ``key`` to sum
    out (roll-up, [P] Eq. 2). Letters that lose every attribute disappear."""
    hs, letters = key
    flat = [("H", j) for j in hs] + [("L", n, a) for n, lt in enumerate(letters) for a in lt]
    n = len(flat)
    for mask in range(1, 2 ** n):
        if mask == 2 ** n - 1:
            continue
        keep = [flat[i] for i in range(n) if not (mask >> i) & 1]
        drop_axes = tuple(1 + i for i in range(n) if (mask >> i) & 1)
        new_h = tuple(v[1] for v in keep if v[0] == "H")
        groups: dict[int, list[int]] = {}
        for v in keep:
            if v[0] == "L":
                groups.setdefault(v[1], []).append(v[2])
        # the kept axes stay in parent order: letters keep their relative order, which is the
        # sorted order of the new key only if it stays sorted (checked by the caller's canonical)
        new_letters = tuple(tuple(groups[g]) for g in sorted(groups))
        yield (new_h, new_letters), drop_axes


# -- group index and the closed form ---------------------------------------------------------------

@dataclass
class GroupIndex:
    """Groups of one FK (true data; lives inside :class:`PrivateFK` only).

    Attributes:
        size: ``(n_H,)`` ``min(|G(t)|, N)``.
        m: ``(n_H,)`` members used for statistics (``min(|G(t)|, M)``).
        ptr: ``(n_H + 1,)`` CSR offsets into ``members``.
        members: child rows, grouped, each group's first ``m`` by the keyed order.
    """

    size: np.ndarray
    m: np.ndarray
    ptr: np.ndarray
    members: np.ndarray

    @classmethod
    def build(cls, parent_of: np.ndarray, n_parent: int, N: int, M: int,  # noqa: N803
              order_key: np.ndarray) -> GroupIndex:
        """Groups from each child's parent row (``-1``: no parent, left out); members in the
        order of ``order_key`` (a keyed hash of the child's key, so the member subset of a group
        depends only on its own rows), the first ``M`` kept."""
        keep = np.flatnonzero(parent_of >= 0)
        p = parent_of[keep]
        order = np.lexsort((order_key[keep], p))
        p_sorted, c_sorted = p[order], keep[order]
        count = np.bincount(p_sorted, minlength=n_parent)
        start = np.r_[0, np.cumsum(count)[:-1]]
        rank = np.arange(len(p_sorted)) - start[p_sorted]
        sel = rank < M
        m = np.minimum(count, M)
        ptr = np.r_[0, np.cumsum(m)].astype(np.int64)
        return cls(np.minimum(count, N).astype(np.int64), m.astype(np.int64), ptr,
                   c_sorted[sel].astype(np.int64))


def tuple_table(g: GroupIndex, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered ``d``-tuple of distinct members of every group: ``(groups (T,), member rows
    (T, d), weights 1/P(m, d) (T,))`` — vectorised per member count."""
    grp_parts, row_parts, w_parts = [], [], []
    for mm in np.unique(g.m):
        mm = int(mm)
        if mm < d:
            continue
        gs = np.flatnonzero(g.m == mm)
        tmpl = np.array(list(permutations(range(mm), d)), dtype=np.int64).reshape(-1, d)
        pos = g.ptr[gs][:, None, None] + tmpl[None, :, :]
        grp_parts.append(np.repeat(gs, len(tmpl)))
        row_parts.append(g.members[pos.reshape(-1, d)])
        w_parts.append(np.full(len(gs) * len(tmpl), 1.0 / perm_count(mm, d)))
    if not grp_parts:
        return np.zeros(0, np.int64), np.zeros((0, d), np.int64), np.zeros(0)
    return np.concatenate(grp_parts), np.concatenate(row_parts), np.concatenate(w_parts)


def npm_closed_form(key: Key, g: GroupIndex, hcodes: np.ndarray, icodes: np.ndarray,
                    hdom: Sequence[int], idom: Sequence[int], N: int,  # noqa: N803
                    table: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The NPM of ``key`` on every slice ``0…N`` (slices ``< max(D, 1)`` are zero for ``D ≥ 1``),
    shape ``(N + 1, *dims)`` float64 (docs/methods/privpetal.md §2.3)."""
    dims = key_dims(key, hdom, idom)
    d = key_D(key)
    cells = int(np.prod(dims)) if dims else 1
    if d == 0:
        flat = g.size.astype(np.int64)
        for j in key[0]:
            flat = flat * hdom[j] + hcodes[:, j]
        out = np.bincount(flat, minlength=(N + 1) * cells).astype(np.float64)
        return out.reshape((N + 1,) + dims)
    grp, rows, w = table if table is not None else tuple_table(g, d)
    flat = g.size[grp].astype(np.int64)
    for j in key[0]:
        flat = flat * hdom[j] + hcodes[grp, j]
    for n, lt in enumerate(key[1]):
        for a in lt:
            flat = flat * idom[a] + icodes[rows[:, n], a]
    out = np.bincount(flat, weights=w, minlength=(N + 1) * cells)
    return out.reshape((N + 1,) + dims)


def rscore_pairs(h: int, a: int) -> list[tuple[Var, Var]]:
    """The base pairs of [P] §4.1 in a fixed order: every unordered pair of distinct attributes
    of ``A_H ∪ A_{I_a}`` (``size`` included, household index ``h − 1`` stands for nothing: ``size``
    is ``("S",)``), then every ``(I_a.A_p, I_b.A_q)`` with ``p ≤ q``. ``h`` counts ``size``."""
    base = [SIZE] + [("H", j) for j in range(h - 1)] + [("I", 1, k) for k in range(a)]
    out = [(base[i], base[j]) for i in range(len(base)) for j in range(i + 1, len(base))]
    out += [(("I", 1, p), ("I", 2, q)) for p in range(a) for q in range(p, a)]
    return out


# -- the private object ----------------------------------------------------------------------------

class PrivateFK:
    """The true data of one FK (``R_I → R_H``) and the charged releases PrivPetal makes on it.

    Args:
        hcodes: ``(n_H, h−1)`` codes of the household attributes (``size`` excluded).
        icodes: ``(n_I, a)`` codes of the individual attributes.
        parent_of: ``(n_I,)`` parent row of every child (``-1``: none).
        hdom, idom: Public domain sizes.
        N: Group-size cap (enforced before: :func:`relviz.privacy.measure.enforce_caps`).
        M: Member cap for statistics.
        member_key: ``(n_I,)`` keyed hash of each child's key (member subsets, docs §1.5).
    """

    def __init__(self, hcodes: np.ndarray, icodes: np.ndarray, parent_of: np.ndarray,
                 hdom: Sequence[int], idom: Sequence[int], N: int, M: int,  # noqa: N803
                 member_key: np.ndarray) -> None:
        self._h = np.asarray(hcodes, dtype=np.int64)
        self._i = np.asarray(icodes, dtype=np.int64)
        self.hdom = tuple(int(x) for x in hdom)
        self.idom = tuple(int(x) for x in idom)
        self.N, self.M = int(N), int(M)
        self._g = GroupIndex.build(np.asarray(parent_of, np.int64), len(self._h), self.N, self.M,
                                   np.asarray(member_key))
        self._parent = np.asarray(parent_of, dtype=np.int64)
        self._in_group = self._parent >= 0  # children with a parent (in the FR)
        self._n_null = int((~self._in_group).sum())  # children with a null FK
        self._tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._cache: dict[Key, np.ndarray] = {}
        self._charging = 0

    # -- guard ---------------------------------------------------------------------------------
    @contextmanager
    def _charged(self) -> Iterator[None]:
        self._charging += 1
        try:
            yield
        finally:
            self._charging -= 1

    def _check(self) -> None:
        if not self._charging:
            raise HygieneError("an exact statistic of the private data was requested outside a "
                               "charged release (docs/methods/privpetal.md §4.6)")

    def _table(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if d not in self._tables:
            self._tables[d] = tuple_table(self._g, d)
        return self._tables[d]

    def _npm(self, key: Key) -> np.ndarray:
        self._check()
        if key not in self._cache:
            if len(self._cache) > 4096:
                self._cache.clear()
            d = key_D(key)
            self._cache[key] = npm_closed_form(key, self._g, self._h, self._i, self.hdom, self.idom,
                                               self.N, self._table(d) if d else None)
        return self._cache[key]

    def _sizes(self) -> np.ndarray:
        self._check()
        return np.bincount(self._g.size, minlength=self.N + 1).astype(np.float64)

    def _null_count(self) -> float:
        self._check()
        return float(self._n_null)

    def _child_histogram(self, k: int) -> np.ndarray:
        self._check()
        return np.bincount(self._i[self._in_group, k], minlength=self.idom[k]).astype(np.float64)

    def _parent_children(self, j: int) -> np.ndarray:
        self._check()
        return np.bincount(self._h[:, j], weights=self._g.size.astype(np.float64),
                           minlength=self.hdom[j])

    def _pair_counts(self, j: int, k: int) -> np.ndarray:
        self._check()
        kids = np.flatnonzero(self._in_group)
        flat = self._h[self._parent[kids], j] * self.idom[k] + self._i[kids, k]
        return np.bincount(flat, minlength=self.hdom[j] * self.idom[k]).astype(np.float64) \
            .reshape(self.hdom[j], self.idom[k])

    # -- releases --------------------------------------------------------------------------------
    def release_null_count(self, budget: Budget, *, rho: Fraction, sensitivity: float, label: str,
                           source: str = "") -> float:
        """The number of children with a null FK plus ``N(0, σ²)`` (a nullable FK; relviz's
        addition, not in [P]: those children are in no group, so in no other statistic here;
        docs/methods/privpetal.md §5.4)."""
        with self._charged():
            exact = np.array([self._null_count()])
            noisy, _ = budget.gaussian(exact, rho=rho, sensitivity=sensitivity, label=label,
                                       source=source or SOURCE, integer=True)
        return float(np.asarray(noisy, dtype=np.float64)[0])

    def release_child_margins(self, budget: Budget, *, rho_each: Fraction, sensitivity: float,
                              names: Sequence[str], source: str = "") -> list[np.ndarray]:
        """For each child column ``k``, the histogram of the children in groups (a non-null FK)
        over it plus ``N(0, σ²)`` per cell, one release of ρ ``rho_each`` each (``child_margins``;
        relviz's addition, not in [P]: docs/methods/privpetal.md §5.8). ``sensitivity`` is the
        child table's histogram multiplier (``FKSensitivity.hist``: ``r + √2·m`` child rows
        removed / changed by one entity, ``√2`` under the tuple unit), since each child row is in
        one cell of each histogram.

        Returns:
            ``a`` float64 arrays, shape ``(idom[k],)``, in children (unclipped noisy counts).
        """
        return self._release_histograms(budget, self._child_histogram, names, rho_each=rho_each,
                                        sensitivity=sensitivity, source=source,
                                        label="relviz: children's one-way marginal of")

    def release_parent_children(self, budget: Budget, *, rho_each: Fraction, sensitivity: float,
                                names: Sequence[str], source: str = "") -> list[np.ndarray]:
        """For each household (parent) column ``j``, the number of children in groups whose
        parent has each value, plus ``N(0, σ²)`` per cell, one release of ρ ``rho_each`` each
        (``parent_children``; relviz's addition, not in [P]: docs/methods/privpetal.md §5.9).
        ``sensitivity`` is ``FKSensitivity.children``: the child table's histogram multiplier
        under the entity unit (each child row is in one cell, and a parent's values never
        change), ``√2·max(1, τ)`` under the tuple unit (a parent row that changes its values
        moves its children together).

        Returns:
            ``h − 1`` float64 arrays, shape ``(hdom[j],)``, in children (unclipped noisy counts).
        """
        return self._release_histograms(budget, self._parent_children, names, rho_each=rho_each,
                                        sensitivity=sensitivity, source=source,
                                        label="relviz: children per parent value of")

    def release_pair_margins(self, budget: Budget, pairs: Sequence[tuple[int, int]], *,
                             rho_each: Fraction, sensitivity: float, names: Sequence[str],
                             source: str = "") -> list[np.ndarray]:
        """For each ``(j, k)`` of ``pairs``, the two-way histogram of the children in groups over
        (their parent's household column ``j``, their own column ``k``) plus ``N(0, σ²)`` per
        cell, one release of ρ ``rho_each`` each (``pair_margins``; relviz's addition, not in
        [P]: docs/methods/privpetal.md §5.10). ``sensitivity`` is ``FKSensitivity.children``:
        each child row is in one cell; under the entity unit a parent's values and a surviving
        child's FK never change (the child table's histogram multiplier), under the tuple unit a
        parent row that changes its values moves its children together (``√2·max(1, τ)``).

        Args:
            pairs: ``(household column, child column)`` indices, chosen from released values.
            names: One label suffix per pair.

        Returns:
            One float64 array per pair, shape ``(hdom[j], idom[k])``, in children (unclipped
            noisy counts).
        """
        pairs = list(pairs)
        return self._release_histograms(budget, lambda q: self._pair_counts(*pairs[q]), names,
                                        rho_each=rho_each, sensitivity=sensitivity, source=source,
                                        label="relviz: parent–child pair margin of")

    def release_pair_scores(self, budget: Budget, candidates: Sequence[tuple[int, int]], *,
                            rho: Fraction, sensitivity_each: float, total: float, label: str,
                            source: str = "") -> np.ndarray:
        """For each ``(j, k)`` of ``candidates`` (household column, child column), how far the
        children's two-way histogram ``N`` over (their parent's ``j``, their own ``k``) is from
        independence, ``‖N − r·cᵀ/n‖₁ − √(2/π)·√(cells·total)``, plus ``N(0, σ²)``: one Gaussian
        release of the whole vector at ρ ``rho`` (``pair_margins``' choice; relviz's addition,
        not in [P]: docs/methods/privpetal.md §5.10). The penalty is the expected L1 distance
        of independent columns with uniform margins over ``total`` children (public: ``total``
        is released), so that large domains do not win on sampling noise. Adding or removing
        one child row moves each score by less than 4
        (:attr:`~relviz.relational.privpetal.accounting.FKSensitivity.score` scales that to the
        privacy unit as ``sensitivity_each``); the vector's L2 sensitivity is
        ``√q·sensitivity_each`` for ``q`` candidates.

        Returns:
            float64 array, shape ``(len(candidates),)``, in children (noisy scores).
        """
        cand = list(candidates)
        with self._charged():
            self._check()
            kids = np.flatnonzero(self._in_group)
            hc = {j: self._h[self._parent[kids], j] for j in {j for j, _ in cand}}
            ic = {k: self._i[kids, k] for k in {k for _, k in cand}}
            exact = np.empty(len(cand))
            for q, (j, k) in enumerate(cand):
                dj, dk = self.hdom[j], self.idom[k]
                n = np.bincount(hc[j] * dk + ic[k], minlength=dj * dk).astype(np.float64) \
                    .reshape(dj, dk)
                tot = n.sum()
                pred = np.outer(n.sum(axis=1), n.sum(axis=0)) / tot if tot > 0 else n
                exact[q] = float(np.abs(n - pred).sum()) - MEAN_ABS * math.sqrt(n.size * max(total, 0.0))
            noisy, _ = budget.gaussian(exact, rho=rho, sensitivity=sensitivity_each * math.sqrt(len(cand)),
                                       label=label, source=source or SOURCE, integer=False)
        return np.asarray(noisy, dtype=np.float64)

    def _release_histograms(self, budget: Budget, exact: Callable[[int], np.ndarray],
                            names: Sequence[str], *, rho_each: Fraction, sensitivity: float,
                            label: str, source: str) -> list[np.ndarray]:
        """``exact(k) + N(0, σ²)`` per cell for each column ``k`` of ``names``, one charged
        release of ρ ``rho_each`` each, labelled ``"<label> <name>"``."""
        out = []
        with self._charged():
            for k, name in enumerate(names):
                noisy, _ = budget.gaussian(exact(k), rho=rho_each, sensitivity=sensitivity,
                                           label=f"{label} {name}", source=source or SOURCE,
                                           integer=True)
                out.append(np.asarray(noisy, dtype=np.float64))
        return out

    def release_sizes(self, budget: Budget, *, rho: Fraction, sensitivity: float, label: str,
                      source: str = "") -> np.ndarray:
        """``ñ_s = n_s + N(0, σ²)`` for ``s = 0…N`` ([P] Alg. 1 line 1)."""
        with self._charged():
            exact = self._sizes()
            noisy, _ = budget.gaussian(exact, rho=rho, sensitivity=sensitivity, label=label,
                                       source=source or SOURCE, integer=True)
        return np.asarray(noisy, dtype=np.float64)

    def release_npm(self, budget: Budget, key: Key, *, lo: int, merge: Sequence[int], rho: Fraction,
                    sensitivity: float, label: str, source: str = "") -> tuple[np.ndarray, float]:
        """One NPM query ([P] Alg. 3): slices ``lo…N`` of ``key``; the slices in ``merge`` (a
        data-independent interval ∩ ``[lo, N]``) are summed into one block. Released as one
        vector: ``[merged block, then each other slice]`` (a group adds mass 1 to exactly one
        block).

        Returns:
            ``(noisy vector, σ)``.
        """
        with self._charged():
            arr = self._npm(key)
            sizes = [s for s in range(lo, self.N + 1) if s not in set(merge)]
            parts = []
            if merge:
                parts.append(arr[list(merge)].sum(axis=0).ravel())
            parts += [arr[s].ravel() for s in sizes]
            exact = np.concatenate(parts) if parts else np.zeros(0)
            noisy, sigma = budget.gaussian(exact, rho=rho, sensitivity=sensitivity, label=label,
                                           source=source or SOURCE, integer=False)
        return np.asarray(noisy, dtype=np.float64), float(sigma)

    def release_rscores(self, budget: Budget, pairs: Sequence[tuple[Var, Var]], *, mode: str,
                        rho: Fraction, sensitivity_each: float, label: str,
                        source: str = "") -> np.ndarray:
        """Noisy R-scores of ``pairs`` ([P] §4.1, Eq. 3; ``mode="pooled"``: the authors' pooled
        variant), one vector release with L2 sensitivity ``√q·Δ_R``."""
        with self._charged():
            exact = np.array([self._rscore(u, v, mode) for u, v in pairs], dtype=np.float64)
            noisy, _ = budget.gaussian(exact, rho=rho, sensitivity=sensitivity_each * math.sqrt(len(pairs)),
                                       label=label, source=source or SOURCE, integer=False)
        return np.asarray(noisy, dtype=np.float64)

    def release_hscores(self, budget: Budget, cands: Sequence[tuple[Key, np.ndarray]], *, lo: int,
                        rho: Fraction, sensitivity_each: float, label: str,
                        source: str = "") -> np.ndarray:
        """Noisy h-scores ``Σ_{s≥lo} ‖M_{S,s} − μ_{S,s}‖₁ + N(0, σ²)`` of new candidates ([P] §4.3,
        Alg. 2 line 8): ``cands`` are ``(key, model marginal with axes in key order, sizes lo…N)``;
        the model marginals come from noisy data (fixed), so each score has sensitivity Δ*."""
        with self._charged():
            exact = np.array([np.abs(self._npm(k)[lo:] - mu).sum() for k, mu in cands],
                             dtype=np.float64)
            noisy, _ = budget.gaussian(exact, rho=rho, sensitivity=sensitivity_each * math.sqrt(len(cands)),
                                       label=label, source=source or SOURCE, integer=False)
        return np.asarray(noisy, dtype=np.float64)

    # -- exact R-scores (inside a release only) --------------------------------------------------
    def _rscore(self, u: Var, v: Var, mode: str) -> float:
        self._check()
        if u == SIZE or v == SIZE:
            if mode != "pooled":
                return 0.0  # size is constant inside a slice: Eq. 3 gives 0 exactly
            other = v if u == SIZE else u
            joint = self._npm(canonical([other])[0])  # (N+1, X): joint of size and the attribute
            d = 1 if other[0] == "I" else 0
            j = joint[d:].reshape(self.N + 1 - d, -1)
            n = j.sum()
            if n <= 0:
                return 0.0
            return 0.5 * float(np.abs(j - np.outer(j.sum(1), j.sum(0)) / n).sum())
        key, axes = canonical([u, v])
        joint = self._npm(key)
        d = key_D(key)
        lo = max(d, 1) if d else 0
        ia, ib = axes.index(u), axes.index(v)
        j = np.moveaxis(joint, (0, ia, ib), (0, 1, 2))[lo:]
        if d == 2:  # cross pair: the marginals are one-letter NPMs
            mu = self._npm(canonical([("I", 1, u[2])])[0])[lo:]
            mv = self._npm(canonical([("I", 1, v[2])])[0])[lo:]
        else:
            mu, mv = j.sum(axis=2), j.sum(axis=1)
        n = mu.sum(axis=1)
        if mode == "pooled":
            jt, a, b, tot = j.sum(0), mu.sum(0), mv.sum(0), n.sum()
            return 0.5 * float(np.abs(jt - np.outer(a, b) / tot).sum()) if tot > 0 else 0.0
        ok = n > 0
        prod = mu[ok][:, :, None] * mv[ok][:, None, :] / n[ok][:, None, None]
        return 0.5 * float(np.abs(j[ok] - prod).sum())


# -- the store of noisy NPMs ---------------------------------------------------------------------------

@dataclass
class Entry:
    """One stored noisy NPM ([P] §4.2, docs §3.7): never true data.

    Attributes:
        arr: ``(N + 1, *dims)`` noisy counts; slice ``s`` sums to ``ñ_s`` where valid.
        var: ``(N + 1,)`` noise variance per cell of each slice (``inf``: not available).
        masked: ``(N + 1,)`` slices whose noisy total was ≤ 0 (left out of model losses).
        direct: Measured directly (not a roll-up).
        provenance: ``"group sizes"``, ``"measured"`` or ``"roll-up"``.
        base: ``(N + 1,)`` the variance per cell of each slice before the rescaling to ``ñ_s``
            (``σ²``, times the cells summed for a roll-up): ``var / base = c²``, the square of
            the rescaling factor ``c = ñ_s / Σ noisy slice`` (:meth:`slice_weights`). ``None``:
            the same as ``var``.
    """

    arr: np.ndarray
    var: np.ndarray
    masked: np.ndarray
    direct: bool
    provenance: str
    base: np.ndarray | None = None

    def slice_weights(self) -> np.ndarray:
        """Per-slice weight ``min(1, 1/c_s)`` of the residual in a model's loss (relviz; docs
        §8 D25): ``1/c_s = √(base/var)`` is the noise standard deviation a slice had before its
        rescaling to ``ñ_s`` over the one it has after. A slice whose noisy total is a small
        positive number is multiplied by a large ``c`` (noise included: values of ±10⁴ for a
        slice of 20 groups on the census stand-in), and unweighted it dominates the fit; a
        slice rescaled by ``c ≤ 1`` keeps weight 1 (the spec's unweighted loss). Private-PGM's
        ``1/σ`` weighting, applied within one measurement. Masked slices: 0."""
        base = self.var if self.base is None else self.base
        w = np.ones(self.var.shape)
        ok = np.isfinite(self.var) & (self.var > 0) & np.isfinite(base)
        w[ok] = np.minimum(1.0, np.sqrt(base[ok] / self.var[ok]))
        w[self.masked] = 0.0
        return w

    def covers(self, lo: int) -> bool:
        """Whether every slice ``s ≥ lo`` is available (masked slices count as available)."""
        return bool(np.all(np.isfinite(self.var[lo:]) | self.masked[lo:]))


@dataclass
class NPMStore:
    """Canonical key → :class:`Entry` (docs/methods/privpetal.md §3.7)."""

    N: int  # noqa: N815
    entries: dict[Key, Entry] = field(default_factory=dict)

    def __contains__(self, key: Key) -> bool:
        return key in self.entries

    def get(self, key: Key, lo: int = 0) -> Entry | None:
        """The entry of ``key`` if it covers every slice ``s ≥ lo``."""
        e = self.entries.get(key)
        return e if e is not None and e.covers(lo) else None

    def measured(self, key: Key) -> bool:
        e = self.entries.get(key)
        return e is not None and e.direct

    def put(self, key: Key, arr: np.ndarray, var: np.ndarray, masked: np.ndarray, *,
            direct: bool, provenance: str, rollup: bool = True, base: np.ndarray | None = None) -> None:
        """Store ``arr`` (per slice, the lower-variance estimate wins; ties keep the earlier),
        then its roll-ups ([P] Eq. 2; docs §3.6 ROLLUP). ``base``: :attr:`Entry.base` (``None``:
        ``var``)."""
        base = np.asarray(var if base is None else base, dtype=np.float64)
        self._merge(key, arr, var, masked, direct, provenance, base)
        if not rollup:
            return
        for sub, axes in sub_keys(key):
            ckey, _ = canonical(_vars_of(sub))
            child = arr.sum(axis=axes)
            cells = int(np.prod([arr.shape[a] for a in axes])) if axes else 1
            if ckey != sub:  # letters out of canonical order: permute the axes
                child, sub = _to_canonical(child, sub, ckey)
            self._merge(ckey, child, var * cells, masked.copy(), False, "roll-up", base * cells)

    def _merge(self, key: Key, arr: np.ndarray, var: np.ndarray, masked: np.ndarray, direct: bool,
               provenance: str, base: np.ndarray) -> None:
        old = self.entries.get(key)
        if old is None:
            self.entries[key] = Entry(arr.copy(), var.copy(), masked.copy(), direct, provenance, base.copy())
            return
        eff_new = np.where(masked, np.inf, var)
        eff_old = np.where(old.masked, np.inf, old.var)
        better = (eff_new < eff_old) | (~np.isfinite(old.var) & np.isfinite(var))
        if better.any():
            old.arr[better] = arr[better]
            old.base[better] = base[better]
            old.var[better] = var[better]
            old.masked[better] = masked[better]
        if direct:
            old.direct, old.provenance = True, provenance


def _vars_of(key: Key) -> list[Var]:
    return [("H", j) for j in key[0]] + [("I", n + 1, a) for n, lt in enumerate(key[1]) for a in lt]


def _to_canonical(arr: np.ndarray, key: Key, ckey: Key) -> tuple[np.ndarray, Key]:
    """Permute ``arr`` (axes of non-canonical ``key``) to the axes of its canonical key."""
    _, axes = canonical(_vars_of(key))
    src = [SIZE] + _vars_of(key)
    perm = [src.index(v) for v in axes]
    return np.transpose(arr, perm), ckey
