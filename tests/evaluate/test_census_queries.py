"""Census counting queries (relviz.evaluate.census_queries; PrivLava §7.2, PrivPetal §6.2).

Checks: the generator's rules; selectivity on uniform data against its exact expectation
(tolerances derived below); Hall's condition on hand-made households; the bitset evaluation
against a brute-force reference (permutations of members) on small random databases, nulls
included; the error formula (regulariser 0.01·N, N/N* rescaling) on hand numbers and end to end.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import pytest

import relviz.datasets as datasets
from relviz.database import Database
from relviz.encoding import encode_table
from relviz.evaluate import census_queries as cq
from relviz.evaluate.census_queries import (
    CONFIGURATIONS,
    CensusQueries,
    census_answers,
    census_error_summary,
    census_errors,
    generate_census_queries,
    relative_errors,
)
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

FK = "persons.hid->households"


# -- small schemas and databases -----------------------------------------------------------------

def hand_schema(y_values: int = 4) -> Schema:
    households = Table("households", ("hid",), (Attribute.categorical("X", [0, 1, 2]),))
    persons = Table("persons", ("pid",), (
        Attribute.categorical("Y", list(range(y_values))),
        Attribute.numeric("Z", 0, 9, bins=10, integer=True),
    ))
    fk = ForeignKey("persons", ("hid",), "households", ("hid",))
    return Schema((households, persons), (fk,), PrivacyUnit("households", {fk.name: 10}))


def hand_db(x: list[int], ys: list[list[int]], schema: Schema | None = None) -> Database:
    """Household ``i`` has ``X = x[i]`` and members with ``Y = ys[i]`` (``Z = 0``)."""
    hid = np.repeat(np.arange(1, len(x) + 1), [len(y) for y in ys])
    y = [v for row in ys for v in row]
    return Database(schema or hand_schema(), {
        "households": pd.DataFrame({"hid": np.arange(1, len(x) + 1), "X": x}),
        "persons": pd.DataFrame({"pid": np.arange(1, len(y) + 1), "hid": hid, "Y": y,
                                 "Z": np.zeros(len(y), dtype=int)}),
    })


def hand_queries(rows: list[tuple[int, set | None, list[set]]], c: int) -> CensusQueries:
    """Queries on ``X`` (household) and ``Y`` (persons): ``(s, X-set or None, [Y-set per P_i])``."""
    n = len(rows)
    h_sets = np.zeros((n, 1, 3), dtype=bool)
    p_sets = np.zeros((n, c, 1, 10), dtype=bool)
    for q, (_, hs, ps) in enumerate(rows):
        h_sets[q, 0, list(hs if hs is not None else {0, 1, 2})] = True
        for i, s in enumerate(ps):
            p_sets[q, i, 0, list(s)] = True
    return CensusQueries(
        household_table="households", person_table="persons", fk=FK, c=c, a=1, selectivity=0.2,
        seed=0, household_attributes=("X",), person_attributes=("Y", "Z"), household_domains=(3,),
        person_domains=(4, 10), sizes=np.array([r[0] for r in rows]),
        h_attrs=np.zeros((n, 1), dtype=np.int64), h_sets=h_sets,
        p_attrs=np.zeros((n, 1), dtype=np.int64), p_sets=p_sets)


def random_db(seed: int, n_h: int = 150) -> Database:
    """Nullable attributes, a nullable FK (persons without a household), empty households."""
    rng = np.random.default_rng(seed)
    households = Table("households", ("hid",), (
        Attribute.categorical("A", list("abcde"), nullable=True),
        Attribute.numeric("B", 0, 20, bins=7),
        Attribute.categorical("C", [0, 1]),
    ))
    persons = Table("persons", ("pid",), (
        Attribute.categorical("U", ["x", "y", "z"]),
        Attribute.numeric("V", 0, 1, bins=6, nullable=True),
        Attribute.categorical("W", [1, 2, 3, 4]),
        Attribute.numeric("T", 0, 50, bins=9, integer=True),
    ))
    fk = ForeignKey("persons", ("hid",), "households", ("hid",), nullable=True)
    schema = Schema((households, persons), (fk,), PrivacyUnit("households", {fk.name: 9}))
    a = rng.choice(list("abcde"), n_h).astype(object)
    a[rng.random(n_h) < 0.1] = None
    hh = pd.DataFrame({"hid": np.arange(1, n_h + 1), "A": a, "B": rng.uniform(0, 20, n_h),
                       "C": rng.integers(0, 2, n_h)})
    sizes = rng.integers(0, 9, n_h)
    hid = np.repeat(hh["hid"].to_numpy(), sizes).astype(float)
    m = len(hid)
    hid[rng.random(m) < 0.05] = np.nan
    v = rng.uniform(0, 1, m)
    v[rng.random(m) < 0.15] = np.nan
    p = pd.DataFrame({"pid": np.arange(1, m + 1), "hid": pd.array(hid, dtype="Int64"),
                      "U": rng.choice(["x", "y", "z"], m), "V": v, "W": rng.integers(1, 5, m),
                      "T": rng.integers(0, 51, m)})
    return Database(schema, {"households": hh, "persons": p})


def reference_answers(db: Database, q: CensusQueries) -> np.ndarray:
    """Brute force: every household, every ordered c-tuple of distinct members."""
    he = encode_table(db.schema.table(q.household_table), db[q.household_table])
    pe = encode_table(db.schema.table(q.person_table), db[q.person_table])
    owner = db.parent_index(q.fk)
    members = [np.flatnonzero(owner == h) for h in range(he.n_rows)]
    out = np.zeros(len(q), dtype=np.int64)
    for k in range(len(q)):
        d = q.predicates(k)
        for h, ms in enumerate(members):
            if len(ms) != d["s"]:
                continue
            if not all(he.column(A)[h] in S for A, S in d["household"].items()):
                continue
            sat = [[all(pe.column(A)[p] in S for A, S in P.items()) for P in d["persons"]] for p in ms]
            out[k] += any(all(sat[t[i]][i] for i in range(q.c))
                          for t in itertools.permutations(range(len(ms)), q.c))
    return out


# -- generation ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("c", "a"), CONFIGURATIONS)
def test_generation_follows_the_rules(c: int, a: int) -> None:
    schema = datasets.load("census", n_households=200).schema
    n = 3_000
    q = generate_census_queries(schema, n=n, c=c, a=a, seed=3)
    assert len(q) == n and q.n_conditions == a + c * a
    counts = np.bincount(q.sizes, minlength=8)[1:]
    assert q.sizes.min() >= 1 and q.sizes.max() <= 7
    assert np.all(np.abs(counts - n / 7) < 6 * math.sqrt(n / 7))            # s uniform on 1..7
    for attrs in (q.h_attrs, q.p_attrs):                                      # distinct attributes
        assert attrs.shape == (n, a)
        assert all(len(set(row)) == a for row in attrs)
    r = 0.2 ** (1 / (a + c * a))
    ht, pt = schema.table("households"), schema.table("persons")
    for sets, attrs, table, names in ((q.h_sets[:, None], q.h_attrs, ht, q.household_attributes),
                                      (q.p_sets, q.p_attrs, pt, q.person_attributes)):
        for i in range(sets.shape[1]):
            for j in range(a):
                for t, name in enumerate(names):
                    rows = np.flatnonzero(attrs[:, j] == t)
                    attr = table.attribute(name)
                    d = attr.n_values
                    assert not sets[rows, i, j, d:].any()
                    S = sets[rows, i, j, :d]
                    assert (S.sum(axis=1) == max(1, math.floor(r * d))).all(), name
                    if attr.kind == "numeric" and len(rows):                     # contiguous ranges
                        first = S.argmax(axis=1)
                        last = d - 1 - S[:, ::-1].argmax(axis=1)
                        assert (last - first + 1 == S.sum(axis=1)).all()
    if c == 2:  # same attributes for both persons, independent value sets
        assert (q.p_sets[:, 0] != q.p_sets[:, 1]).any(axis=(1, 2)).mean() > 0.5
    again = generate_census_queries(schema, n=n, c=c, a=a, seed=3)
    assert all(np.array_equal(getattr(q, f), getattr(again, f))
               for f in ("sizes", "h_attrs", "h_sets", "p_attrs", "p_sets"))
    other = generate_census_queries(schema, n=n, c=c, a=a, seed=4)
    assert not np.array_equal(q.p_sets, other.p_sets)


def test_ordinal_starts_cover_the_range_and_categorical_sets_are_random() -> None:
    schema = datasets.load("census", n_households=200).schema
    q = generate_census_queries(schema, n=10_000, c=1, a=1, seed=0)
    age = q.person_attributes.index("AGE")
    S = q.p_sets[q.p_attrs[:, 0] == age, 0, 0]
    w = math.floor(0.2 ** 0.5 * 86)
    starts = S.argmax(axis=1)
    assert starts.min() == 0 and starts.max() == 86 - w                      # the last start too
    puma = q.household_attributes.index("PUMA")
    P = q.h_sets[q.h_attrs[:, 0] == puma, 0]
    runs = (np.diff(P.astype(int), axis=1) == 1).sum(axis=1)                  # interval starts
    assert (runs > 1).mean() > 0.9                                            # not intervals
    assert np.abs(P.mean(axis=0) - P.mean()).max() < 0.2                     # every code drawn


def test_bad_parameters_are_refused() -> None:
    schema = hand_schema()
    with pytest.raises(ValueError, match="c must be"):
        generate_census_queries(schema, n=10, c=3)
    with pytest.raises(ValueError):
        generate_census_queries(schema, n=10, a=0)


# -- selectivity on uniform data -----------------------------------------------------------------

def _uniform(per_size: int, seed: int) -> Database:
    """3 household and 3 person attributes with 100 codes each, uniform and independent; the
    same number of households of each size 1..7."""
    rng = np.random.default_rng(seed)
    h_attrs = (Attribute.numeric("h0", 0, 100, bins=100), Attribute.categorical("h1", range(100)),
               Attribute.categorical("h2", range(100)))
    p_attrs = (Attribute.numeric("p0", 0, 100, bins=100), Attribute.categorical("p1", range(100)),
               Attribute.categorical("p2", range(100)))
    fk = ForeignKey("persons", ("hid",), "households", ("hid",))
    schema = Schema((Table("households", ("hid",), h_attrs), Table("persons", ("pid",), p_attrs)),
                    (fk,), PrivacyUnit("households", {fk.name: 7}))
    sizes = np.repeat(np.arange(1, 8), per_size)
    n, m = len(sizes), int(sizes.sum())
    hh = {"hid": np.arange(n), "h0": rng.integers(0, 100, n) + 0.5,
          "h1": rng.integers(0, 100, n), "h2": rng.integers(0, 100, n)}
    pp = {"pid": np.arange(m), "hid": np.repeat(np.arange(n), sizes),
          "p0": rng.integers(0, 100, m) + 0.5, "p1": rng.integers(0, 100, m),
          "p2": rng.integers(0, 100, m)}
    return Database(schema, {"households": pd.DataFrame(hh), "persons": pd.DataFrame(pp)})


def _expected_share(q: CensusQueries) -> np.ndarray:
    """P(a household of size s answers yes) when every code is uniform and independent."""
    pi_h = np.prod(q.h_sets.sum(axis=2) / 100, axis=1)
    pi = np.prod(q.p_sets.sum(axis=3) / 100, axis=2)                          # (n, c)
    s = q.sizes.astype(float)
    if q.c == 1:
        return pi_h * (1 - (1 - pi[:, 0]) ** s)
    both = np.prod((q.p_sets[:, 0] & q.p_sets[:, 1]).sum(axis=2) / 100, axis=1)
    union = pi[:, 0] + pi[:, 1] - both
    # Hall: sat1 ≠ ∅, sat2 ≠ ∅, and not "exactly one member, satisfying both, the rest neither"
    hall = (1 - (1 - pi[:, 0]) ** s - (1 - pi[:, 1]) ** s + (1 - union) ** s
            - s * both * (1 - union) ** (s - 1))
    return pi_h * hall


@pytest.mark.parametrize(("c", "a"), CONFIGURATIONS)
def test_selectivity_on_uniform_data(c: int, a: int) -> None:
    per_size = 3_000
    db = _uniform(per_size, seed=c * 10 + a)
    q = generate_census_queries(db.schema, n=1_500, c=c, a=a, seed=5)
    # joint selectivity Π|S_j|/|A_j| of the k = a + c·a conditions: with |A_j| = 100,
    # |S_j| = ⌊100 r⌋ ∈ (100 r − 1, 100 r], so it lies in ((r − 0.01)^k, r^k = 0.2]
    k = a + c * a
    r = 0.2 ** (1 / k)
    sel = q.condition_selectivity()
    assert np.allclose(sel, (math.floor(100 * r) / 100) ** k)
    assert ((r - 0.01) ** k < sel).all() and (sel <= 0.2 + 1e-12).all() and sel.min() > 0.18
    # empirical: each count is Binomial(n_s = 3,000, P) with P = _expected_share; 6 standard
    # deviations (+1 for P near 0) per query: a false alarm somewhere among 1,500 queries has
    # probability < 1,500 · 2e-9
    got = census_answers(db, q)
    P = np.clip(_expected_share(q), 0.0, 1.0)  # the Hall formula can round to −1e-17
    tol = 6 * np.sqrt(per_size * P * (1 - P)) + 1
    assert (np.abs(got - per_size * P) <= tol).all()
    if c == 1:  # single-person households: the share answering yes *is* the joint selectivity
        one = q.sizes == 1
        dev = got[one] / per_size - sel[one]
        assert abs(dev.mean()) < 6 * 0.5 / math.sqrt(per_size)   # each sd ≤ 0.5/√n_s, so the mean's too
        assert abs((got[one] / per_size).mean() - 0.2) < 0.02 + 6 * 0.5 / math.sqrt(per_size)


# -- Hall's condition and the reference --------------------------------------------------------

def test_hall_condition_on_hand_made_households() -> None:
    db = hand_db(x=[0, 1, 0, 0, 2, 0],
                 ys=[[0, 3], [0, 0], [0, 1], [0], [0, 3, 3], [2, 0, 1]])
    two = hand_queries([
        (2, None, [{0}, {0}]),        # H1: one member satisfies both — not enough; H2 yes; H3 no
        (2, None, [{0, 1}, {0}]),     # H2 yes; H3: p1 = the 1, p2 = the 0 → yes; H1 no
        (1, None, [{0}, {0}]),        # one person cannot be two
        (3, None, [{0}, {0}]),        # H5: one 0; H6: one 0 → none
        (3, None, [{0}, {3}]),        # H5 yes
        (3, None, [{3}, {3}]),        # H5: two 3s → yes
        (2, {1}, [{0}, {0}]),         # household predicate: only H2 has X = 1
    ], c=2)
    assert census_answers(db, two).tolist() == [1, 2, 0, 0, 1, 1, 1]
    assert census_answers(db, two).tolist() == reference_answers(db, two).tolist()
    one = hand_queries([
        (2, None, [{0}]),             # H1, H2, H3
        (2, {0}, [{0}]),              # H1, H3
        (3, None, [{1, 2}]),          # H6
        (1, None, [{3}]),             # H4 has Y = 0
    ], c=1)
    assert census_answers(db, one).tolist() == [3, 2, 1, 0]
    # a household subset counts among those households only
    assert census_answers(db, one, households=np.array([0, 1])).tolist() == [2, 1, 0, 0]


@pytest.mark.parametrize(("c", "a"), CONFIGURATIONS)
def test_vectorised_counts_equal_the_reference(c: int, a: int) -> None:
    for db in (random_db(seed=c + 2 * a), datasets.load("census", n_households=150, seed=c + a)):
        q = generate_census_queries(db.schema, n=120, c=c, a=a, seed=a)
        got = census_answers(db, q)
        assert got.tolist() == reference_answers(db, q).tolist()
        assert got.sum() > 0


def test_more_than_64_queries_of_one_size_share_blocks() -> None:
    db = random_db(seed=9, n_h=60)
    q = generate_census_queries(db.schema, n=1_000, c=2, a=1, seed=0, max_size=2)
    ref = reference_answers(db, q)
    assert census_answers(db, q).tolist() == ref.tolist()


def test_domain_mismatch_is_refused() -> None:
    q = generate_census_queries(hand_schema(), n=20, c=1, a=1)
    other = hand_db([0], [[0]], schema=hand_schema(y_values=5))
    with pytest.raises(ValueError, match="public domains differ"):
        census_answers(other, q)


# -- the error -----------------------------------------------------------------------------------

def test_error_formula_on_hand_numbers() -> None:
    e = relative_errors(np.array([50, 5, 50, 0, 200]), np.array([80, 0, 100, 3, 100]), 1_000, 1_000)
    assert np.allclose(e, [30 / 50, 5 / 10, 50 / 50, 3 / 10, 100 / 200])  # regulariser 0.01·N = 10
    # N/N* rescaling: twice as many synthetic households → synthetic answers halved
    assert np.allclose(relative_errors([50, 5], [100, 0], 1_000, 2_000), [0.0, 0.5])
    assert np.allclose(relative_errors([50], [10], 1_000, 500), [30 / 50])
    assert np.allclose(relative_errors([4, 0], [7, 7], 1_000, 0), [4 / 10, 0.0])  # no households


def test_census_errors_end_to_end() -> None:
    real = hand_db(x=[0, 1, 0, 0, 2, 0], ys=[[0, 3], [0, 0], [0, 1], [0], [0, 3, 3], [2, 0, 1]])
    q = generate_census_queries(real.schema, n=400, c=2, a=1, seed=1)
    same = census_errors(real, real, q)
    assert (same["error"] == 0).all() and same.attrs["mean"] == 0.0
    # every household twice: N* = 2N, every synthetic answer doubles, the rescaling undoes it
    h, p = real["households"], real["persons"]
    h2 = pd.concat([h, h.assign(hid=h["hid"] + 100)], ignore_index=True)
    p2 = pd.concat([p, p.assign(pid=p["pid"] + 100, hid=p["hid"] + 100)], ignore_index=True)
    doubled = Database(real.schema, {"households": h2, "persons": p2})
    d = census_errors(real, doubled, q)
    assert d.attrs["n_real"] == 6 and d.attrs["n_synthetic"] == 12
    assert (d["synthetic"] == 2 * d["real"]).all() and (d["error"] == 0).all()
    # drop household 2 (X = 1, Y = [0, 0]) from the synthetic side: the formula, row by row
    fewer = Database(real.schema, {"households": h[h["hid"] != 2], "persons": p[p["hid"] != 2]})
    f = census_errors(real, fewer, q)
    assert np.allclose(f["error"], relative_errors(f["real"], f["synthetic"], 6, 5))
    assert np.allclose(f["synthetic_scaled"], f["synthetic"] * 6 / 5)
    assert f.attrs["mean"] == pytest.approx(f["error"].mean()) and f.attrs["mean"] > 0
    assert cq.census_error(real, fewer, q) == pytest.approx(f.attrs["mean"])


def test_sampled_evaluation() -> None:
    db = datasets.load("census", n_households=300, seed=1)
    q = generate_census_queries(db.schema, n=200, c=1, a=1)
    full = census_errors(db, db, q, sample=10_000)
    assert full.attrs["n_real"] == 300 and full.attrs["mean"] == 0.0
    part = census_errors(db, db, q, sample=120, seed=2)
    assert part.attrs["n_real"] == 120 == part.attrs["n_synthetic"]
    assert part["real"].sum() < full["real"].sum()


def test_summary_has_the_four_panels() -> None:
    db = datasets.load("census", n_households=300, seed=1)
    s = census_error_summary(db, db, n=100)
    assert list(zip(s["c"], s["a"])) == list(CONFIGURATIONS)
    assert (s["mean_error"] == 0).all() and (s["queries"] == 100).all()


@pytest.mark.slow
def test_timing_10000_queries_on_100000_households() -> None:
    """Prints the timings (not asserted: a shared 2-core machine)."""
    from relviz.datasets import census
    from relviz.evaluate._common import codes

    t = time.perf_counter()
    frames = census.generate(100_000, seed=0)
    t_gen = time.perf_counter() - t
    db = Database(census.schema(), frames)
    t = time.perf_counter()
    codes(db, "households")
    codes(db, "persons")
    t_enc = time.perf_counter() - t
    print(f"\ngenerate 10^5 households ({len(frames['persons']):,} persons): {t_gen:.2f} s; "
          f"encode: {t_enc:.2f} s")
    for c, a in CONFIGURATIONS:
        t = time.perf_counter()
        q = generate_census_queries(db.schema, n=10_000, c=c, a=a, seed=0)
        t_q = time.perf_counter() - t
        t = time.perf_counter()
        ans = census_answers(db, q)
        t_a = time.perf_counter() - t
        print(f"c={c} a={a}: generate 10,000 queries {t_q:.2f} s, answer {t_a:.2f} s "
              f"(mean answer {ans.mean():.0f})")
        assert len(ans) == 10_000
