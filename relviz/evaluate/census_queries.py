"""Census counting queries of the relational DP papers — **curator view (not private)**.

The workload of K. Cai, X. Xiao, G. Cormode, *PrivLava: Synthesizing Relational Data with Foreign
Keys under Differential Privacy*, SIGMOD 2023, §7.2, reused by K. Cai, X. Xiao, Y. Yang,
*PrivPetal: Relational Data Synthesis via Permutation Relations*, SIGMOD 2025, §6.2. Where the
papers are silent, the details follow the authors' public reference implementations: ``s``
uniform in ``{1, …, 7}``, the same person attributes for every ``P_i``, the ``N/N*`` rescaling and
the optional evaluation on a sample of households (they use 200,000).

A query ``Q(s, P_h, c, {P_1..P_c})`` over a household ⟵ person FK counts the households ``h`` with

* ``|h| = s`` (the number of persons whose FK points at ``h``),
* ``h ⊨ P_h`` (a conjunction ``h[A_j] ∈ S_j`` over household attributes), and
* ``c`` **distinct** members ``p_1 … p_c`` with ``p_i ⊨ P_i``. For ``c = 2`` this is Hall's
  condition: ``sat_1 ≠ ∅``, ``sat_2 ≠ ∅`` and ``|sat_1 ∪ sat_2| ≥ 2`` (one member satisfying
  both predicates is not enough).

Generation (:func:`generate_census_queries`; data independent, from the public schema only):
``s`` uniform in ``{1, …, max_size}`` (7); ``P_h`` on ``a`` distinct household attributes chosen
uniformly; the person predicates on ``a`` distinct person attributes chosen uniformly, **the same
attributes for every** ``P_i`` with independent value sets; with ``k = a + c·a`` conditions,
``r = selectivity^{1/k}`` (0.2) and ``|S_j| = max(1, ⌊r·|A_j|⌋)`` (so the joint selectivity
``Π_j |S_j|/|A_j|`` is about 0.2 on uniform data when the domains are large; the floor and the
``max(1, ·)`` move it for small domains). Ordinal attributes (numeric and datetime ones: their
codes are ordered bins) get a contiguous range with a uniformly random start in
``{0, …, |A_j| − |S_j|}``; categorical attributes a uniformly random subset. ``|A_j|`` is the
number of non-null codes of the public domain; a null never satisfies a condition.

Error (PrivLava §7.2, with the authors' rescaling of the synthetic answer):
``rel_err(Q) = |Q(R) − Q(R*)·N/N*| / max{Q(R), 0.01·N}``, ``N``, ``N*`` = real / synthetic
household counts; the workload's score is the mean over its queries.

Evaluation is vectorised on public-domain codes (``relviz.encoding``, cached by
``relviz.evaluate._common.codes``), so real and synthetic databases are compared on the same
domains. Households are grouped by size ``s``: the members of the ``n_s`` households of size
``s`` form an ``(n_s, s)`` matrix of person rows. Queries of that size are processed 64 at a
time as bitsets (one ``uint64`` bit per query): for every attribute a 64-bit lookup table over
its codes says which queries accept the code (a query that does not constrain the attribute
accepts every code), so one gather per attribute gives the predicate bits of all households or
members at once; members are OR-reduced (``c = 1``) or folded with the "at least two"
accumulator ``twos |= ones & x; ones |= x`` (``c = 2``), and the bits are counted with
``np.unpackbits``. Queries are sorted by their attributes first, so that a 64-query block
touches few attributes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import codes, parent_index
from relviz.schema import Attribute, ForeignKey, Schema

__all__ = [
    "CensusQueries",
    "generate_census_queries",
    "census_answers",
    "census_errors",
    "census_error",
    "census_error_summary",
    "relative_errors",
    "CONFIGURATIONS",
]

#: The papers' four panels: ``(c, a)`` = (persons, attributes per predicate).
CONFIGURATIONS: tuple[tuple[int, int], ...] = ((1, 1), (1, 2), (2, 1), (2, 2))
_WORD = 64


def _is_ordinal(attr: Attribute) -> bool:
    return attr.kind in ("numeric", "datetime")


def _relation(schema: Schema, household: str | None, person: str | None) -> ForeignKey:
    """The FK person → household the workload runs on."""
    fks = [fk for fk in schema.foreign_keys
           if (household is None or fk.parent == household) and (person is None or fk.child == person)
           and not fk.self_referential]
    if len(fks) != 1:
        raise ValueError("census queries need exactly one FK person → household; name them with "
                         f"household=…, person=… (candidates: {[fk.name for fk in fks]})")
    return fks[0]


@dataclass(frozen=True, eq=False)
class CensusQueries:
    """A census query workload (arrays, one row per query).

    Attributes:
        household_table, person_table, fk: The relation (FK name ``person → household``).
        c: Number of distinct persons (1 or 2).
        a: Attributes per predicate (the household part uses ``min(a, #attributes)``).
        selectivity: Target joint selectivity (0.2).
        seed: Seed of the generator.
        household_attributes, person_attributes: Candidate attribute names (schema order).
        household_domains, person_domains: ``|A_j|``: non-null codes per candidate attribute.
        sizes: ``(n,)`` the household size ``s`` of each query.
        h_attrs: ``(n, a_h)`` indices into ``household_attributes``.
        h_sets: ``(n, a_h, D_h)`` bool: code ``v`` of ``h_attrs[q, j]`` is in ``S_j``.
        p_attrs: ``(n, a_p)`` indices into ``person_attributes`` (shared by the ``c`` predicates).
        p_sets: ``(n, c, a_p, D_p)`` bool: the value sets of predicate ``i``.
    """

    household_table: str
    person_table: str
    fk: str
    c: int
    a: int
    selectivity: float
    seed: int
    household_attributes: tuple[str, ...]
    person_attributes: tuple[str, ...]
    household_domains: tuple[int, ...]
    person_domains: tuple[int, ...]
    sizes: np.ndarray
    h_attrs: np.ndarray
    h_sets: np.ndarray
    p_attrs: np.ndarray
    p_sets: np.ndarray

    def __len__(self) -> int:
        return int(len(self.sizes))

    @property
    def n_conditions(self) -> int:
        """``k``: attribute conditions per query (the size condition excluded)."""
        return int(self.h_attrs.shape[1] + self.c * self.p_attrs.shape[1])

    def condition_selectivity(self) -> np.ndarray:
        """``(n,)`` ``Π_j |S_j|/|A_j|`` over all ``k`` conditions of each query: the share of
        (household, p_1, …, p_c) tuples satisfying every condition when codes are uniform."""
        hd = np.asarray(self.household_domains, dtype=float)[self.h_attrs]
        pd_ = np.asarray(self.person_domains, dtype=float)[self.p_attrs]
        h = np.prod(self.h_sets.sum(axis=2) / hd, axis=1)
        p = np.prod(self.p_sets.sum(axis=3) / pd_[:, None, :], axis=(1, 2))
        return h * p

    def predicates(self, q: int) -> dict:
        """Query ``q`` in words: ``{"s": …, "household": {attr: codes}, "persons": [{attr: codes}, …]}``."""
        hh = {self.household_attributes[t]: np.flatnonzero(self.h_sets[q, j]).tolist()
              for j, t in enumerate(self.h_attrs[q])}
        ps = [{self.person_attributes[t]: np.flatnonzero(self.p_sets[q, i, j]).tolist()
               for j, t in enumerate(self.p_attrs[q])} for i in range(self.c)]
        return {"s": int(self.sizes[q]), "household": hh, "persons": ps}

    def to_frame(self) -> pd.DataFrame:
        """One row per query: ``s``, the household predicate and each person predicate as text
        (codes of the public domains)."""
        rows = []
        for q in range(len(self)):
            d = self.predicates(q)
            row = {"s": d["s"], "household": _text(d["household"])}
            for i, p in enumerate(d["persons"], 1):
                row[f"person_{i}"] = _text(p)
            rows.append(row)
        return pd.DataFrame(rows)


def _text(pred: dict) -> str:
    return " ∧ ".join(f"{k} ∈ {{{', '.join(map(str, v))}}}" for k, v in pred.items()) or "true"


def _distinct(rng: np.random.Generator, n: int, pool: int, k: int) -> np.ndarray:
    """``(n, k)`` distinct indices of ``range(pool)`` per row, uniformly (random subsets)."""
    if k == 0:
        return np.zeros((n, 0), dtype=np.int64)
    return np.argsort(rng.random((n, pool)), axis=1)[:, :k].astype(np.int64)


def _draw_sets(rng: np.random.Generator, attrs: np.ndarray, domains: Sequence[int],
               ordinal: Sequence[bool], r: float, width: int) -> np.ndarray:
    """``(n, a, width)`` value sets: ``|S| = max(1, ⌊r·|A|⌋)``, a contiguous range with a uniform
    start for ordinal attributes, a uniform random subset for categorical ones."""
    n, a = attrs.shape
    out = np.zeros((n, a, width), dtype=bool)
    for j in range(a):
        for t, d in enumerate(domains):
            rows = np.flatnonzero(attrs[:, j] == t)
            if not len(rows):
                continue
            w = max(1, math.floor(r * d))
            if ordinal[t]:
                start = rng.integers(0, d - w + 1, len(rows))
                cols = start[:, None] + np.arange(w)
            else:
                cols = np.argsort(rng.random((len(rows), d)), axis=1)[:, :w]
            out[rows[:, None], j, cols] = True
    return out


def generate_census_queries(schema: Schema, n: int = 10_000, c: int = 1, a: int = 1, seed: int = 0,
                            *, household: str | None = None, person: str | None = None,
                            selectivity: float = 0.2, max_size: int = 7) -> CensusQueries:
    """Draw the census workload of PrivLava §7.2 / PrivPetal §6.2 from the public schema.

    Args:
        schema: A schema with one FK person → household (or name the tables).
        n: Number of queries (the papers: 10,000 per configuration).
        c: Distinct persons per query, 1 or 2.
        a: Attributes per predicate, ≥ 1.
        seed: Seed of the generator (the workload is data independent and reproducible).
        household, person: Table names when the schema has several FKs.
        selectivity: Joint selectivity target (0.2).
        max_size: ``s`` is uniform in ``{1, …, max_size}`` (7).

    Raises:
        ValueError: for ``c`` outside {1, 2}, ``a < 1``, or a person table without attributes.
    """
    if c not in (1, 2):
        raise ValueError("c must be 1 or 2 (Hall's condition is implemented for two persons)")
    if a < 1 or n < 0 or max_size < 1:
        raise ValueError("need a ≥ 1, n ≥ 0 and max_size ≥ 1")
    fk = _relation(schema, household, person)
    h_all = schema.table(fk.parent).attributes
    p_all = schema.table(fk.child).attributes
    if not p_all:
        raise ValueError(f"person table {fk.child!r} has no attributes")
    a_h, a_p = min(a, len(h_all)), min(a, len(p_all))
    k = a_h + c * a_p
    r = selectivity ** (1.0 / k)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n).astype(np.int64)
    hd = [x.n_values for x in h_all]
    pdm = [x.n_values for x in p_all]
    h_attrs = _distinct(rng, n, len(h_all), a_h)
    p_attrs = _distinct(rng, n, len(p_all), a_p)
    h_sets = _draw_sets(rng, h_attrs, hd, [_is_ordinal(x) for x in h_all], r, max(hd, default=1))
    p_sets = np.stack([_draw_sets(rng, p_attrs, pdm, [_is_ordinal(x) for x in p_all], r, max(pdm))
                       for _ in range(c)], axis=1)
    return CensusQueries(
        household_table=fk.parent, person_table=fk.child, fk=fk.name, c=c, a=a,
        selectivity=float(selectivity), seed=int(seed),
        household_attributes=tuple(x.name for x in h_all),
        person_attributes=tuple(x.name for x in p_all),
        household_domains=tuple(hd), person_domains=tuple(pdm),
        sizes=sizes, h_attrs=h_attrs, h_sets=h_sets, p_attrs=p_attrs, p_sets=p_sets)


# -- evaluation ---------------------------------------------------------------------------------

def _check_domains(db: Database, queries: CensusQueries) -> None:
    for table, names, domains in ((queries.household_table, queries.household_attributes,
                                   queries.household_domains),
                                  (queries.person_table, queries.person_attributes,
                                   queries.person_domains)):
        t = db.schema.table(table)
        got = tuple(t.attribute(x).n_values for x in names)
        if got != tuple(domains):
            raise ValueError(f"{table}: the database's public domains differ from the workload's "
                             f"({dict(zip(names, got))} vs {dict(zip(names, domains))})")


def _luts(sets: np.ndarray, attrs: np.ndarray, used: np.ndarray, sizes: Sequence[int],
          domains: Sequence[int]) -> dict[int, np.ndarray]:
    """Per used attribute ``t``: a ``uint64`` table over its codes whose bit ``b`` says whether
    query ``b`` of the block accepts the code (always, if the query does not constrain ``t``).

    Args:
        sets: ``(L, a, D)`` value sets of the block's queries (one predicate).
        attrs: ``(L, a)`` their attributes.
        used: Attributes used by the block.
        sizes: Code-space size per attribute (the null code included).
        domains: Non-null codes per attribute.
    """
    L = len(attrs)
    bits = np.left_shift(np.uint64(1), np.arange(L, dtype=np.uint64))
    out = {}
    for t in used:
        d = domains[t]
        accept = np.ones((L, sizes[t]), dtype=bool)  # a query that does not constrain t accepts all
        for j in range(attrs.shape[1]):
            rows = np.flatnonzero(attrs[:, j] == t)
            accept[rows, :d] = sets[rows, j, :d]
            accept[rows, d:] = False                 # a null never satisfies a condition
        out[int(t)] = np.bitwise_or.reduce(np.where(accept, bits[:, None], np.uint64(0)), axis=0)
    return out


def _count_bits(words: np.ndarray, L: int) -> np.ndarray:
    """Per bit ``b < L``: how many of ``words`` have bit ``b`` set."""
    if not len(words):
        return np.zeros(L, dtype=np.int64)
    by = np.ascontiguousarray(words.astype("<u8")).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(by, axis=1, bitorder="little")[:, :L].sum(axis=0, dtype=np.int64)


def census_answers(db: Database, queries: CensusQueries,
                   households: np.ndarray | None = None) -> np.ndarray:
    """Exact answers ``Q(db)`` of every query (curator view when ``db`` is real).

    Args:
        db: A database with the workload's tables, FK and public domains.
        queries: From :func:`generate_census_queries`.
        households: Optional subset of household rows to count among (row positions, or a
            boolean mask); sizes are always the full group sizes.

    Returns:
        ``(n,)`` int64 counts.

    Raises:
        ValueError: if the database's domains differ from the workload's.
    """
    _check_domains(db, queries)
    fk = db.schema.foreign_key(queries.fk)
    henc = codes(db, queries.household_table)
    penc = codes(db, queries.person_table)
    hcol = np.array([henc.attributes.index(x) for x in queries.household_attributes], dtype=np.int64)
    pcol = np.array([penc.attributes.index(x) for x in queries.person_attributes], dtype=np.int64)
    hsize = [henc.sizes[i] for i in hcol]
    psize = [penc.sizes[i] for i in pcol]
    pidx = parent_index(db, fk)
    rows = np.flatnonzero(pidx >= 0)
    owner = pidx[rows]
    order = np.argsort(owner, kind="stable")
    rows, owner = rows[order], owner[order]
    n_h = henc.n_rows
    gsize = np.bincount(owner, minlength=n_h)
    starts = np.cumsum(gsize) - gsize
    keep = np.ones(n_h, dtype=bool)
    if households is not None:
        households = np.asarray(households)
        keep = households.astype(bool) if households.dtype == bool else np.isin(np.arange(n_h), households)

    answers = np.zeros(len(queries), dtype=np.int64)
    c = queries.c
    for s in np.unique(queries.sizes):
        qs = np.flatnonzero(queries.sizes == s)
        hs = np.flatnonzero((gsize == s) & keep)
        if not len(hs) or not len(qs):
            continue
        members = rows[starts[hs][:, None] + np.arange(s)]               # (n_s, s) person rows
        hc = henc.codes[hs][:, hcol].T                                  # (n_hattr, n_s)
        pc = np.ascontiguousarray(penc.codes[members][:, :, pcol].transpose(2, 0, 1))  # (n_pattr, n_s, s)
        # sort by attributes so that a block of 64 queries touches few of them
        key = np.lexsort(tuple(np.sort(queries.h_attrs[qs], axis=1).T)
                         + tuple(np.sort(queries.p_attrs[qs], axis=1).T))
        qs = qs[key]
        for b0 in range(0, len(qs), _WORD):
            blk = qs[b0:b0 + _WORD]
            L = len(blk)
            ha, pa = queries.h_attrs[blk], queries.p_attrs[blk]
            hb = np.full(len(hs), np.uint64(2 ** 64 - 1))
            for t, lut in _luts(queries.h_sets[blk], ha, np.unique(ha), hsize,
                                queries.household_domains).items():
                hb &= lut[hc[t]]
            used_p = np.unique(pa)
            pb = []
            for i in range(c):
                x = np.full((len(hs), s), np.uint64(2 ** 64 - 1))
                for t, lut in _luts(queries.p_sets[blk, i], pa, used_p, psize,
                                    queries.person_domains).items():
                    x &= lut[pc[t]]
                pb.append(x)
            if c == 1:
                cond = np.bitwise_or.reduce(pb[0], axis=1)
            else:
                any1 = np.bitwise_or.reduce(pb[0], axis=1)
                any2 = np.bitwise_or.reduce(pb[1], axis=1)
                u = pb[0] | pb[1]
                ones = np.zeros(len(hs), dtype=np.uint64)
                twos = np.zeros(len(hs), dtype=np.uint64)
                for j in range(s):                    # "at least two members satisfy P_1 or P_2"
                    twos |= ones & u[:, j]
                    ones |= u[:, j]
                cond = any1 & any2 & twos
            answers[blk] = _count_bits(hb & cond, L)
    return answers


def relative_errors(real: np.ndarray | float, synthetic: np.ndarray | float, n_real: int,
                    n_synthetic: int) -> np.ndarray:
    """``|Q(R) − Q(R*)·N/N*| / max{Q(R), 0.01·N}`` elementwise (PrivLava §7.2; the ``N/N*``
    rescaling is the authors'). A synthetic database without households answers 0."""
    real = np.asarray(real, dtype=float)
    syn = np.asarray(synthetic, dtype=float)
    scaled = syn * (n_real / n_synthetic) if n_synthetic > 0 else np.zeros_like(syn)
    return np.abs(real - scaled) / np.maximum(real, 0.01 * n_real)


def _subset(n: int, sample: int | None, rng: np.random.Generator) -> np.ndarray | None:
    if sample is None or sample >= n:
        return None
    return np.sort(rng.choice(n, sample, replace=False))


def census_errors(real: Database, synthetic: Database, queries: CensusQueries, *,
                  sample: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Per-query relative errors of a synthetic database — curator view (reads the real data).

    Args:
        real, synthetic: Databases with the workload's tables and public domains.
        queries: The workload.
        sample: Optional: count among this many households drawn uniformly without replacement
            from each database (the authors evaluate on 200,000); ``N``, ``N*`` are then the
            sample sizes.
        seed: Seed of the household samples.

    Returns:
        Frame with columns ``s``, ``real``, ``synthetic``, ``synthetic_scaled``, ``error`` (one
        row per query); ``frame.attrs`` holds ``mean`` (the workload's score), ``n_real``,
        ``n_synthetic``, ``c``, ``a`` and ``seconds``.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n_r = real.row_counts()[queries.household_table]
    n_s = synthetic.row_counts()[queries.household_table]
    sub_r, sub_s = _subset(n_r, sample, rng), _subset(n_s, sample, rng)
    q_r = census_answers(real, queries, sub_r)
    q_s = census_answers(synthetic, queries, sub_s)
    N = n_r if sub_r is None else len(sub_r)
    N_s = n_s if sub_s is None else len(sub_s)
    err = relative_errors(q_r, q_s, N, N_s)
    out = pd.DataFrame({"s": queries.sizes, "real": q_r, "synthetic": q_s,
                        "synthetic_scaled": q_s * (N / N_s) if N_s else np.zeros(len(q_s)),
                        "error": err})
    out.index.name = "query"
    out.attrs.update(mean=float(err.mean()) if len(err) else float("nan"), n_real=int(N),
                     n_synthetic=int(N_s), c=queries.c, a=queries.a,
                     seconds=time.perf_counter() - t0)
    return out


def census_error(real: Database, synthetic: Database, queries: CensusQueries, **kw) -> float:
    """Mean relative error of the workload (the number the papers plot)."""
    return census_errors(real, synthetic, queries, **kw).attrs["mean"]


def census_error_summary(real: Database, synthetic: Database,
                         configurations: Iterable[tuple[int, int]] = CONFIGURATIONS, *,
                         n: int = 10_000, seed: int = 0, sample: int | None = None,
                         household: str | None = None, person: str | None = None) -> pd.DataFrame:
    """Mean census error per ``(c, a)`` panel (workloads drawn from the real schema).

    Returns:
        Frame with columns ``c``, ``a``, ``queries``, ``mean_error``, ``median_error``,
        ``seconds``.
    """
    rows = []
    for c, a in configurations:
        q = generate_census_queries(real.schema, n=n, c=c, a=a, seed=seed, household=household,
                                    person=person)
        e = census_errors(real, synthetic, q, sample=sample, seed=seed)
        rows.append({"c": c, "a": a, "queries": len(q), "mean_error": e.attrs["mean"],
                     "median_error": float(e["error"].median()), "seconds": e.attrs["seconds"]})
    return pd.DataFrame(rows)
