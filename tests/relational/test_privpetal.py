"""PrivPetal (docs/methods/privpetal.md): the testable properties of its spec, on small data.

Groups: A — NPM mathematics (closed form against brute-force permutation relations with exact
fractions, the paper's worked examples, Theorem 3.1, roll-up, symmetry, member cap, R-scores);
B — sensitivities on every one-tuple deletion of tiny databases; C — accounting ([P] Eq. 4–5 test
vectors, the worked example of §4.5, exact plan sums, ledger semantics, hygiene, determinism);
D — the MRF engine (exact BP, junction trees, fitting, size-restricted models, sampling); E —
algorithm components (NPM query post-processing, store, CFS, Phase A, attribute order, MERGE);
F — end to end (integrity on toy schemas, near-noiseless sanity, ε monotonicity); N — nullable
FKs (relviz's addition, docs §5.4: the null-children count, its accounting and the null rows).

[P] = K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation
Relations", SIGMOD 2025. Fits are few and small (module-scoped fixtures).
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import replace
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from relviz import Plan, RelationalSynthesizer
from relviz.database import Database
from relviz.errors import PlanError
from relviz.privacy.accountant import Accountant
from relviz.privacy.budget import Budget
from relviz.privacy.sensitivity import multipliers
from relviz.relational.privpetal import accounting as acc
from relviz.relational.privpetal import algorithms as alg
from relviz.relational.privpetal import mrf, npm
from relviz.relational.privpetal.method import match, standalone
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

SIZE = npm.SIZE


# ------------------------------------------------------------------------------------------------
# Tiny FKs (A, B)
# ------------------------------------------------------------------------------------------------

def tiny_fk(rng: np.random.Generator, n_h: int = 6, max_size: int = 5, h: int = 2, a: int = 2,
            vals: int = 2):
    """Random households (``h`` attributes) with 0…``max_size`` members (``a`` attributes)."""
    hdom = tuple(int(rng.integers(2, vals + 2)) for _ in range(h))
    idom = tuple(int(rng.integers(2, vals + 2)) for _ in range(a))
    hcodes = np.stack([rng.integers(0, d, n_h) for d in hdom], axis=1) if h else np.zeros((n_h, 0), int)
    sizes = rng.integers(0, max_size + 1, n_h)
    parent = np.repeat(np.arange(n_h), sizes)
    icodes = np.stack([rng.integers(0, d, len(parent)) for d in idom], axis=1)
    return hcodes, icodes, parent, hdom, idom


def private(hcodes, icodes, parent, hdom, idom, N, M=None, key=None):  # noqa: ANN001, ANN201, N803
    key = np.arange(len(parent), dtype=np.uint64) if key is None else key
    return npm.PrivateFK(hcodes, icodes, parent, hdom, idom, N, M or N, key)


def exact(priv: npm.PrivateFK, key):  # noqa: ANN001, ANN201
    """Test-only access to an exact NPM (inside the guard, as a release would)."""
    with priv._charged():
        return priv._npm(key).copy()


def all_keys(h: int, a: int, o: int) -> list:
    """Every canonical key over ``h`` household and ``a`` individual attributes with ``D ≤ o``."""
    keys = set()
    hv = [("H", j) for j in range(h)]
    for d in range(0, o + 1):
        iv = [("I", s, k) for s in range(1, d + 1) for k in range(a)]
        for r in range(0, len(hv) + len(iv) + 1):
            for t in itertools.combinations(hv + iv, r):
                if len({v[1] for v in t if v[0] == "I"}) != d:
                    continue
                keys.add(npm.canonical(list(t))[0])
    return sorted(keys)


def brute_npm(key, hcodes, icodes, parent, hdom, idom, N, o):  # noqa: ANN001, ANN201, N803
    """M_{S,s} from the permutation relation P_{s,o} itself ([P] §3.2, Eq. 1), in Fractions."""
    dims = npm.key_dims(key, hdom, idom)
    out = {}
    for t in range(len(hcodes)):
        mem = list(np.flatnonzero(parent == t))
        s = min(len(mem), N)
        k = min(s, o)
        w_s = math.factorial(s) // math.factorial(s - k) if s >= o else math.factorial(s)
        rows = list(itertools.permutations(mem, k))
        assert len(rows) == w_s
        if npm.key_D(key) > k:
            continue
        for r in rows:
            x = (s,) + tuple(int(hcodes[t, j]) for j in key[0]) + \
                tuple(int(icodes[r[n], q]) for n, lt in enumerate(key[1]) for q in lt)
            out[x] = out.get(x, Fraction(0)) + Fraction(1, w_s)
    arr = np.zeros((N + 1,) + dims, dtype=object)
    arr[...] = Fraction(0)
    for x, v in out.items():
        arr[x] = v
    return arr


# -- A. NPM mathematics --------------------------------------------------------------------------

@pytest.mark.parametrize("o", [1, 2, 3])
def test_A1_closed_form_equals_brute_force_permutation_relation(o: int) -> None:
    """A1: the closed form (one bincount over ordered tuples, weights 1/P(m, D)) equals the
    normalised marginal of the explicit permutation relation P_{s,o} for every key with D ≤ o and
    every slice s ≥ D (exact Fractions on the brute-force side; the float closed form agrees to
    1e-12, its only error being rounding of sums of a few hundred terms)."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        hc, ic, par, hd, idm = tiny_fk(rng, n_h=5, max_size=4)
        N = 4  # noqa: N806
        priv = private(hc, ic, par, hd, idm, N)
        for key in all_keys(2, 2, o):
            got = exact(priv, key)
            want = brute_npm(key, hc, ic, par, hd, idm, N, o)
            d = npm.key_D(key)
            lo = max(d, 1) if d else 0
            diff = np.abs(got[lo:] - want[lo:].astype(float)).max()
            assert diff < 1e-12, (o, seed, key, diff)


def _table1():
    """[P] Table 1 data (AGE, EMP individuals; OWN households), one household per size 2, 3, 4."""
    hc = np.array([[1], [0], [0]])  # OWN: Yes=1, No=0 — household of size 2 owns
    emp = {0: [1, 1], 1: [0, 0, 1], 2: [1, 1, 0, 0]}  # Yes=1
    parent = np.repeat([0, 1, 2], [2, 3, 4])
    ic = np.array([[e] for g in (0, 1, 2) for e in emp[g]])
    return hc, ic, parent, (2,), (2,)


@pytest.mark.parametrize("o", [2, 3])
def test_A2_worked_example(o: int) -> None:
    """A2: the table of [P]'s worked example (spec §2.3), for o = 2 and o = 3."""
    hc, ic, par, hd, idm = _table1()
    priv = private(hc, ic, par, hd, idm, 4)
    ee = exact(priv, npm.canonical([("I", 1, 0), ("I", 2, 0)])[0])  # axes (size, EMP_a, EMP_b)
    Y, No = 1, 0  # noqa: N806
    assert [ee[2, Y, Y], ee[3, Y, Y], ee[4, Y, Y]] == pytest.approx([1, 0, 1 / 6])
    assert [ee[2, Y, No], ee[3, Y, No], ee[4, Y, No]] == pytest.approx([0, 1 / 3, 1 / 3])
    assert [ee[2, No, No], ee[3, No, No], ee[4, No, No]] == pytest.approx([0, 1 / 3, 1 / 6])
    oe = exact(priv, npm.canonical([("H", 0), ("I", 1, 0)])[0])  # (size, OWN, EMP)
    assert [oe[2, No, Y], oe[3, No, Y], oe[4, No, Y]] == pytest.approx([0, 1 / 3, 1 / 2])
    assert [oe[2, No, No], oe[3, No, No], oe[4, No, No]] == pytest.approx([0, 2 / 3, 1 / 2])
    assert [oe[2, Y, Y], oe[3, Y, Y], oe[4, Y, Y]] == pytest.approx([1, 0, 0])
    assert np.allclose(ee[2:].sum(axis=(1, 2)), 1) and np.allclose(oe[2:].sum(axis=(1, 2)), 1)
    b = brute_npm(npm.canonical([("I", 1, 0), ("I", 2, 0)])[0], hc, ic, par, hd, idm, 4, o)
    assert np.allclose(b[2:].astype(float), ee[2:])


def test_A3_A5_mass_and_rollup() -> None:
    """A3: every valid slice sums to n_s. A5: summing an NPM over some attributes (dropping a
    letter's whole block lowers D) equals the directly computed NPM of the remaining key on the
    parent's valid slices ([P] Eq. 2)."""
    rng = np.random.default_rng(4)
    hc, ic, par, hd, idm = tiny_fk(rng, n_h=8, max_size=5)
    N = 5  # noqa: N806
    priv = private(hc, ic, par, hd, idm, N)
    n_s = np.bincount(np.minimum(np.bincount(par, minlength=8), N), minlength=N + 1)
    checked = 0
    for key in all_keys(2, 2, 3):
        arr = exact(priv, key)
        d = npm.key_D(key)
        lo = max(d, 1) if d else 0
        assert np.allclose(arr[lo:].reshape(N + 1 - lo, -1).sum(1), n_s[lo:])
        for sub, axes in npm.sub_keys(key):
            ckey, _ = npm.canonical(npm._vars_of(sub))
            child = arr.sum(axis=axes)
            if ckey != sub:
                child, _ = npm._to_canonical(child, sub, ckey)
            assert np.allclose(child[lo:], exact(priv, ckey)[lo:]), (key, sub)
            checked += 1
    assert checked > 100


def test_A4_theorem_3_1_flattened_instances() -> None:
    """A4 ([P] Thm 3.1): for every instance S′ of a key on distinct slots ≤ s, slice s of the NPM
    equals 1/s! × the marginal on S′ of the flattened relation after listing all s! re-orderings
    of each size-s tuple's members."""
    rng = np.random.default_rng(7)
    hc, ic, par, hd, idm = tiny_fk(rng, n_h=6, max_size=4)
    N = 4  # noqa: N806
    priv = private(hc, ic, par, hd, idm, N)
    sizes = np.bincount(par, minlength=6)
    for key in all_keys(1, 2, 3):
        arr = exact(priv, key)
        for s in range(max(npm.key_D(key), 1), N + 1):
            for axes in alg._instance_axes(key, list(range(1, s + 1))):
                count = np.zeros(arr.shape[1:])
                for t in np.flatnonzero(sizes == s):
                    mem = np.flatnonzero(par == t)
                    for perm in itertools.permutations(mem):
                        x = tuple(int(hc[t, v[1]]) if v[0] == "H" else int(ic[perm[v[1] - 1], v[2]])
                                  for v in axes[1:])
                        count[x] += 1
                assert np.allclose(arr[s], count / math.factorial(s)), (key, s, axes)


def test_A6_symmetric_keys_share_one_store_entry() -> None:
    """A6: {I_a.Y, I_b.X} and {I_a.X, I_b.Y} have one canonical key; the instance with the letters
    swapped reads the axis-swapped array."""
    k1, ax1 = npm.canonical([("I", 1, 1), ("I", 2, 0)])
    k2, ax2 = npm.canonical([("I", 1, 0), ("I", 2, 1)])
    assert k1 == k2 == ((), ((0,), (1,)))
    rng = np.random.default_rng(1)
    hc, ic, par, hd, idm = tiny_fk(rng, n_h=8, max_size=4)
    priv = private(hc, ic, par, hd, idm, 4)
    arr = exact(priv, k1)
    # the instance (slot 1 holds attribute 1, slot 2 attribute 0) reads axes (size, I_2.0, I_1.1)
    assert ax1 == [SIZE, ("I", 2, 0), ("I", 1, 1)]
    brute = np.zeros(arr.shape)
    for t in range(8):
        mem = np.flatnonzero(par == t)
        s = len(mem)
        for p, q in itertools.permutations(mem, 2):
            brute[s, ic[q, 0], ic[p, 1]] += 1 / (s * (s - 1))
    assert np.allclose(arr[2:], brute[2:])


def test_A7_member_cap_is_unbiased() -> None:
    """A7: with a member cap M, a group is represented by a uniform M-subset (keyed hash of the
    child keys); averaged over 2,000 independent hash salts the capped NPM converges to the
    uncapped one: max |mean − truth| < 3 standard errors (SE estimated from the 2,000 draws, per
    cell), on a pair key (D = 2) and a one-letter key."""
    rng = np.random.default_rng(3)
    hc, ic, par, hd, idm = tiny_fk(rng, n_h=6, max_size=5, a=2)
    par = np.repeat(np.arange(6), [5, 5, 4, 3, 5, 2])
    ic = np.stack([rng.integers(0, d, len(par)) for d in idm], axis=1)
    N = 5  # noqa: N806
    for key in (npm.canonical([("I", 1, 0), ("I", 2, 1)])[0], npm.canonical([("H", 0), ("I", 1, 0)])[0]):
        truth = exact(private(hc, ic, par, hd, idm, N), key)
        draws = []
        for salt in range(2000):
            keys = np.random.default_rng(salt).permutation(len(par)).astype(np.uint64)
            draws.append(exact(private(hc, ic, par, hd, idm, N, M=3, key=keys), key))
        draws = np.array(draws)
        mean, se = draws.mean(0), draws.std(0) / math.sqrt(len(draws))
        lo = max(npm.key_D(key), 1)
        dev = np.abs(mean - truth)[lo:]
        assert np.all(dev <= 3 * se[lo:] + 1e-12), float((dev / (se[lo:] + 1e-12)).max())


def test_A8_rscores_of_the_worked_example() -> None:
    """A8: R(I_a.EMP, I_b.EMP) = 7/18 and R(H.OWN, I_a.EMP) = 0 under [P] Eq. 3; the pooled
    score of the authors' code for the latter is 7/9."""
    hc, ic, par, hd, idm = _table1()
    priv = private(hc, ic, par, hd, idm, 4)
    with priv._charged():
        assert priv._rscore(("I", 1, 0), ("I", 2, 0), "per_size") == pytest.approx(7 / 18)
        assert priv._rscore(("H", 0), ("I", 1, 0), "per_size") == pytest.approx(0.0)
        assert priv._rscore(("H", 0), ("I", 1, 0), "pooled") == pytest.approx(7 / 9)


# -- B. sensitivities ------------------------------------------------------------------------------

def _all_stats(priv: npm.PrivateFK, mu_seed: int = 0):  # noqa: ANN202
    """Every NPM (all slices), every R-score, an h-score per key against a fixed random model
    marginal, and the group-size vector."""
    h, a = len(priv.hdom), len(priv.idom)
    rng = np.random.default_rng(mu_seed)
    out = {}
    with priv._charged():
        for key in all_keys(h, a, 2):
            arr = priv._npm(key)
            out[("npm", key)] = arr.copy()
            lo = max(npm.key_D(key), 1) if npm.key_D(key) else 0
            mu = rng.random(arr[lo:].shape) * 2
            out[("h", key)] = np.abs(arr[lo:] - mu).sum()
        for u, v in npm.rscore_pairs(h + 1, a):
            out[("r", u, v)] = priv._rscore(u, v, "per_size")
            out[("rp", u, v)] = priv._rscore(u, v, "pooled")
        out["sizes"] = priv._sizes()
    return out


def _compare(x, y):  # noqa: ANN001, ANN202
    worst = {"npm": 0.0, "h": 0.0, "r": 0.0, "sizes_l2": 0.0, "sizes_l1": 0.0}
    for k, v in x.items():
        if k == "sizes":
            worst["sizes_l2"] = float(np.linalg.norm(v - y[k]))
            worst["sizes_l1"] = float(np.abs(v - y[k]).sum())
        elif k[0] == "npm":
            worst["npm"] = max(worst["npm"], float(np.abs(v - y[k]).sum()))
        elif k[0] == "h":
            worst["h"] = max(worst["h"], abs(v - y[k]))
        else:
            worst["r"] = max(worst["r"], abs(v - y[k]))
    return worst


def test_B1_removing_a_group() -> None:
    """B1: deleting one referenced tuple with its group changes every NPM array (all sizes
    together) by L1 ≤ 1, every R-score (Eq. 3 and pooled) by ≤ 2, every h-score against a fixed
    model marginal by ≤ 1, and the group-size vector by L2 ≤ 1 (seeded tiny databases, every
    tuple deleted in turn)."""
    worst = {"npm": 0.0, "h": 0.0, "r": 0.0, "sizes_l2": 0.0}
    for seed in range(4):
        rng = np.random.default_rng(10 + seed)
        hc, ic, par, hd, idm = tiny_fk(rng, n_h=5, max_size=4)
        base = _all_stats(private(hc, ic, par, hd, idm, 4))
        for t in range(len(hc)):
            keep_h = np.arange(len(hc)) != t
            remap = np.cumsum(keep_h) - 1
            keep_i = par != t
            nb = _all_stats(private(hc[keep_h], ic[keep_i], remap[par[keep_i]], hd, idm, 4))
            w = _compare(base, nb)
            for k in worst:
                worst[k] = max(worst[k], w[k])
    assert worst["npm"] <= 1 + 1e-9 and worst["h"] <= 1 + 1e-9
    assert worst["r"] <= 2 + 1e-9 and worst["sizes_l2"] <= 1 + 1e-9
    assert worst["npm"] > 0.5 and worst["r"] > 0.1  # not vacuous


def test_B2_modifying_a_group_including_at_the_cap() -> None:
    """B2 (a public referenced relation: a group loses a child and stays): NPM L1 ≤ 2, R-score
    ≤ 4, h-score ≤ 2, group-size vector L1 ≤ 2 — also for groups at the cap N (there the slice
    changes from N to N − 1)."""
    worst = {"npm": 0.0, "h": 0.0, "r": 0.0, "sizes_l1": 0.0}
    for seed in range(4):
        rng = np.random.default_rng(20 + seed)
        hc, ic, par, hd, idm = tiny_fk(rng, n_h=5, max_size=4)
        par[: 4] = 0  # household 0 holds 4 members: at the cap N = 4
        base = _all_stats(private(hc, ic, par, hd, idm, 4))
        for c in range(len(par)):
            keep = np.arange(len(par)) != c
            w = _compare(base, _all_stats(private(hc, ic[keep], par[keep], hd, idm, 4)))
            for k in worst:
                worst[k] = max(worst[k], w[k])
    assert worst["npm"] <= 2 + 1e-9 and worst["h"] <= 2 + 1e-9
    assert worst["r"] <= 4 + 1e-9 and worst["sizes_l1"] <= 2 + 1e-9
    assert worst["npm"] > 1.0


def chain_schema(tau: int = 2) -> Schema:
    """households (entity) → persons → trips, caps τ."""
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    return Schema(
        (Table("households", ("hid",), (cat("tenure", 2), cat("car", 2))),
         Table("persons", ("pid",), (cat("sex", 2), cat("age", 3))),
         Table("trips", ("tid",), (cat("mode", 3),))),
        (ForeignKey("persons", ("hid",), "households"), ForeignKey("trips", ("pid",), "persons")),
        PrivacyUnit("households", {"persons.hid->households": tau, "trips.pid->persons": tau}),
        name="chain")


def chain_db(n: int, seed: int = 0, tau: int = 2, persons=(1, 3), trips=(0, 3)) -> Database:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    hh = pd.DataFrame({"hid": np.arange(n), "tenure": rng.integers(0, 2, n), "car": rng.integers(0, 2, n)})
    hid = np.repeat(hh["hid"], rng.integers(persons[0], persons[1] + 1, n))
    pp = pd.DataFrame({"pid": np.arange(len(hid)), "hid": hid.to_numpy(),
                       "sex": rng.integers(0, 2, len(hid)), "age": rng.integers(0, 3, len(hid))})
    pid = np.repeat(pp["pid"], rng.integers(trips[0], trips[1] + 1, len(pp)))
    tr = pd.DataFrame({"tid": np.arange(len(pid)), "pid": pid.to_numpy(), "mode": rng.integers(0, 3, len(pid))})
    return Database(chain_schema(tau), {"households": hh, "persons": pp, "trips": tr})


def test_B3_cascade_changes_at_most_dep_groups_downstream() -> None:
    """B3: with the caps enforced, deleting a household (and its closure) changes at most
    dep(persons) = τ groups of the downstream FK trips → persons, the τ_r that
    :func:`fk_sensitivities` derives from the enforced caps (and no group of it survives
    modified: τ_m = 0)."""
    from relviz.database import drop_rows
    from relviz.privacy.measure import enforce_caps

    db = chain_db(12, seed=2, tau=2, persons=(1, 4), trips=(0, 4))
    schema = db.schema
    fk = schema.foreign_key("trips.pid->persons")
    sens = acc.fk_sensitivities(schema, multipliers(schema), fk)
    assert (sens.tau_r, sens.tau_m) == (2, 0)
    trunc, _ = enforce_caps(db)

    def groups(d: Database) -> dict[int, tuple]:
        tr = d["trips"]
        return {int(p): tuple(sorted(tr.loc[tr["pid"] == p, "tid"])) for p in d["persons"]["pid"]}

    base = groups(trunc)
    for i in range(12):
        mask = np.arange(12) == i
        other = groups(enforce_caps(drop_rows(db, "households", mask))[0])
        changed = {p for p in base if other.get(p) != base[p]}
        assert len(changed) <= sens.tau_r
        assert all(p not in other for p in changed)  # removed, never modified


# -- C. accounting ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("eps", "delta", "gamma", "B"), [
    (1.0, 1e-5, 0.268051, 0.0718514),
    (3.2, 1 / 206_209, 0.735272, 0.540625),
    (0.1, 1 / 1_690_642, 0.026672, 0.000711),
    (0.2, 1 / 1_690_642, 0.051113, 0.002612),
    (0.4, 1 / 1_690_642, 0.097986, 0.009601),
    (0.8, 1 / 1_690_642, 0.187510, 0.035160),
    (1.6, 1 / 1_690_642, 0.356932, 0.127401),
    (3.2, 1 / 1_690_642, 0.672098, 0.451716),
    (3.2, 1 / 32_434_489, 0.604715, 0.365680),
])
def test_C1_gamma_star_test_vectors(eps, delta, gamma, B) -> None:  # noqa: ANN001, N803
    """C1: γ*(ε, δ) and B = γ*² of [P] Eq. 4–5 to every digit the spec's table shows; relviz's
    Gaussian-DP conversion buys exactly ρ = B/2."""
    from relviz.privacy.accountant import rho_from_epsilon_delta

    assert round(acc.gamma_star(eps, delta), 6) == pytest.approx(gamma, abs=1e-12)
    assert round(acc.budget_B(eps, delta), 6) == pytest.approx(B, abs=2e-6)
    assert 2 * rho_from_epsilon_delta(eps, delta, "gdp") == pytest.approx(acc.budget_B(eps, delta), rel=1e-8)


def test_C1_tpch_rows_and_reverse_check() -> None:
    """C1: the TPC-H rows (RI comments, rounded: 0.421 / 0.03231) and ε*(0.0718514, 1e-5) = 1.0000."""
    assert round(acc.budget_B(3.2, 1 / 4.25e6), 3) == 0.421
    assert round(acc.budget_B(0.8, 1 / 4.25e6), 5) == 0.03230 or \
        round(acc.budget_B(0.8, 1 / 4.25e6), 4) == 0.0323
    assert round(acc.epsilon_star(0.0718514, 1e-5), 4) == 1.0000


@pytest.mark.parametrize("preset", list(acc.PRESETS))
@pytest.mark.parametrize(("h", "a", "o"), [(15, 17, 3), (6, 4, 1), (1, 5, 2), (1, 3, 1), (4, 6, 2),
                                       (5, 0, 2), (1, 0, 1)])
def test_C2_plan_spends_exactly_the_fk_budget(preset: str, h: int, a: int, o: int) -> None:
    """C2: every preset's plan sums exactly (Fraction) to the FK's ρ, including the o = 1 and
    A_H = {size} redistributions and a child without attributes (a = 0: no refining target, no
    individual quarters); σ = Δ·√(q/b) realises cost exactly b (σ_n check)."""
    rho = Fraction(3, 7)
    plan = acc.plan_fk(rho, h=h, a=a, N=6, o=o, sens=acc.FKSensitivity(1, 0), preset=preset)
    assert plan.planned() == rho
    assert (plan.sens.vec / plan.sigma_n) ** 2 == pytest.approx(2 * float(plan.rho_n), rel=1e-12)
    if o == 1:
        assert plan.rho_intra == 0
    if h == 1:
        assert plan.rho_hsub == 0
    if a == 0:
        assert plan.J == 0 and plan.rho_target == plan.rho_isub == plan.rho_inter == 0


@pytest.mark.parametrize("preset", list(acc.PRESETS))
def test_C2_empty_stage_shares_go_to_the_stages_that_remain(preset: str) -> None:
    """relviz's rule (docs §4.4): with a child without attributes (a = 0) there is no refining
    target, so f_refine is shared by the group sizes, the R-scores and the household model in
    proportion to f_n : f_R : f_init; with A_H = {size} as well only the group sizes remain and
    take the whole ρ. With a > 0 the paper's shares are unchanged (f_n·ρ exactly)."""
    p = acc.PRESETS[preset]
    rho = Fraction(3, 7)
    sens = acc.FKSensitivity(1, 0)
    plan = acc.plan_fk(rho, h=5, a=0, N=6, o=2, sens=sens, preset=preset)
    kept = p.f_n + p.f_R + p.f_init
    assert plan.rho_n == rho * p.f_n / kept
    assert plan.rho_R == rho * p.f_R / kept
    assert plan.rho_hsub == rho * p.f_init / kept
    only_sizes = acc.plan_fk(rho, h=1, a=0, N=6, o=2, sens=sens, preset=preset)
    assert only_sizes.rho_n == rho and only_sizes.planned() == rho
    assert acc.plan_fk(rho, h=5, a=3, N=6, o=2, sens=sens, preset=preset).rho_n == rho * p.f_n


@pytest.mark.parametrize("preset", list(acc.PRESETS))
@pytest.mark.parametrize(("h", "a", "o"), [(15, 17, 3), (6, 4, 1), (1, 5, 2), (1, 3, 1)])
def test_C2_nullable_plan_spends_exactly_the_fk_budget(preset: str, h: int, a: int, o: int) -> None:
    """C2 for a nullable FK (relviz's addition): the null-children count takes NULL_SHARE = 1/50
    of the FK's ρ, [P]'s shares split the other 49/50 exactly as before, and the plan still sums
    exactly (Fraction) to the FK's ρ; σ_null = Δ_null/√(2ρ_null)."""
    rho = Fraction(3, 7)
    sens = acc.FKSensitivity(1, 0, 1.0)
    plan = acc.plan_fk(rho, h=h, a=a, N=6, o=o, sens=sens, preset=preset, nullable=True)
    assert plan.planned() == rho and plan.rho == rho
    assert plan.rho_null == rho * acc.NULL_SHARE == rho / 50
    base = acc.plan_fk(rho * Fraction(49, 50), h=h, a=a, N=6, o=o, sens=sens, preset=preset)
    for name in ("rho_n", "rho_R", "rho_hsub", "rho_isub", "rho_inter", "rho_intra", "rho_target"):
        assert getattr(plan, name) == getattr(base, name), name
    assert plan.sigma_null == pytest.approx(1.0 / math.sqrt(2 * float(rho / 50)), rel=1e-12)
    plain = acc.plan_fk(rho, h=h, a=a, N=6, o=o, sens=sens, preset=preset)
    assert plain.rho_null == 0 and math.isinf(plain.sigma_null) and plain.planned() == rho


def test_C3_worked_accounting_example() -> None:
    """C3: the planner reproduces the table of spec §4.5 to 4 significant digits (census-like FK:
    h = 15, a = 17, N = 8, o = 3, Δ* = 1, ε = 3.2, δ = 1/1,690,642, ñ = 616,115, λ = 6, k = 400)."""
    B = 0.451716  # noqa: N806
    want = {
        "ri-census": (6.654, 339.03, 18.99, 21.04, 21.73, 22.40, 51, 0.0026572, 30.67, 4196, 1226.9),
        "relviz": (6.654, 339.03, 20.81, 23.05, 23.81, 24.54, 51, 0.0035429, 17.71, 7267, 1062.6),
        "paper": (6.654, 339.03, 20.81, 23.05, 23.81, 24.54, 136, 0.0013286, 28.92, 4450, 1735.1),
    }
    for preset, row in want.items():
        p = acc.plan_fk(Fraction(B) / 2, h=15, a=17, N=8, o=3, sens=acc.FKSensitivity(1, 0),
                        preset=preset)
        got = (p.sigma_n, p.sigma_R, p.hsub.sigma_mar, p.isub.sigma_mar, p.sigma_inter,
               p.sigma_intra, p.J, 2 * float(p.rho_target), p.sigma_M,
               acc.usefulness_limit(616_115, p.sigma_M, 6, 10**9), p.sigma_h(400))
        for g, w in zip(got, row):
            assert float(f"{g:.4g}") == pytest.approx(float(f"{w:.4g}"), rel=1e-3), (preset, got, row)


def test_C_sensitivities_from_the_enforced_caps() -> None:
    """Δ from the unit and the caps the run enforces (never a constant): census 1 (households
    removed); TPC-H orders → customer τ_m = 1 (Δ* = 2), lineitem → orders τ_r = 1,
    lineitem → partsupp τ_m = the lineitem cap 7 (Δ* = 14, NPM L2 7√2); tuple unit τ_m = 2."""
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    s = Schema((Table("customer", ("c",), (cat("seg", 2),), public=True),
                Table("partsupp", ("ps",), (cat("brand", 3),), public=True),
                Table("orders", ("o",), (cat("prio", 3),)),
                Table("lineitem", ("l",), (cat("mode", 4),))),
               (ForeignKey("orders", ("c",), "customer"), ForeignKey("lineitem", ("o",), "orders"),
                ForeignKey("lineitem", ("ps",), "partsupp")),
               PrivacyUnit("orders", {"lineitem.o->orders": 7, "orders.c->customer": 10,
                                      "lineitem.ps->partsupp": 8}))
    m = multipliers(s)
    got = {fk.name: acc.fk_sensitivities(s, m, fk) for fk in s.private_foreign_keys}
    assert (got["orders.c->customer"].tau_r, got["orders.c->customer"].tau_m) == (0, 1)
    assert got["orders.c->customer"].star == 2
    assert (got["lineitem.o->orders"].tau_r, got["lineitem.o->orders"].tau_m) == (1, 0)
    assert got["lineitem.ps->partsupp"].star == 14
    assert got["lineitem.ps->partsupp"].vec == pytest.approx(7 * math.sqrt(2))
    # the null-children count (relviz's addition): max(1, τ_m) under the entity unit
    assert got["orders.c->customer"].null == 1  # the child is the entity: only itself
    assert got["lineitem.o->orders"].null == 1  # x(e) = 0: a null-order line item never changes
    assert got["lineitem.ps->partsupp"].null == 7  # removed with its order: up to the cap
    t = s.with_privacy_unit(PrivacyUnit(None, dict(s.privacy_unit.caps), neighbour="tuple"))
    assert acc.fk_sensitivities(t, multipliers(t), t.foreign_key("lineitem.o->orders")).star == 4
    assert acc.fk_sensitivities(t, multipliers(t), t.foreign_key("lineitem.o->orders")).null == 1
    r = s.with_privacy_unit(PrivacyUnit(None, dict(s.privacy_unit.caps)))
    assert acc.unit_problems(r) and acc.unit_problems(r)[0].kind == "unsupported_unit"


def test_C5_exact_statistics_only_inside_a_charged_release() -> None:
    """C5: the private object refuses every exact statistic outside a release (hygiene, §4.6);
    inside one, each exact computation goes out through Budget.gaussian."""
    rng = np.random.default_rng(0)
    priv = private(*tiny_fk(rng), N=5)
    with pytest.raises(npm.HygieneError):
        priv._npm(npm.canonical([("I", 1, 0)])[0])
    with pytest.raises(npm.HygieneError):
        priv._sizes()
    with pytest.raises(npm.HygieneError):
        priv._rscore(("H", 0), ("I", 1, 0), "per_size")
    a = Accountant(1.0, delta=1e-6)
    b = Budget(a, "fk", Fraction(1), np.random.default_rng(0))
    priv.release_sizes(b, rho=Fraction(1, 10), sensitivity=1.0, label="sizes")
    priv.release_npm(b, npm.canonical([("I", 1, 0)])[0], lo=1, merge=[], rho=Fraction(1, 10),
                     sensitivity=1.0, label="npm")
    assert [e.label for e in a.ledger] == ["sizes", "npm"]
    assert priv._charging == 0


# -- D. MRF engine -----------------------------------------------------------------------------------

def _random_chordal(rng: np.random.Generator, n: int):  # noqa: ANN202
    nodes = list(range(n))
    edges = {frozenset(e) for e in itertools.combinations(nodes, 2) if rng.random() < 0.4}
    cliques = mrf.triangulate(nodes, edges)
    dom = {v: int(rng.integers(2, 5)) for v in nodes}
    return nodes, cliques, dom


def _brute_joint(cliques, pots, dom, nodes):  # noqa: ANN001, ANN202
    shape = tuple(dom[v] for v in nodes)
    logp = np.zeros(shape)
    for c, p in zip(cliques, pots):
        logp = logp + np.log(p).reshape([dom[v] if v in c else 1 for v in nodes])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_D1_D2_bp_is_exact_and_trees_run_intersection() -> None:
    """D1: junction-tree marginals equal brute-force enumeration (relative error < 1e-10) for
    random potentials on random chordal graphs (≤ 6 variables, ≤ 4 values). D2: one node per
    maximal clique and the running-intersection property."""
    for seed in range(15):
        rng = np.random.default_rng(seed)
        nodes, cliques, dom = _random_chordal(rng, int(rng.integers(2, 7)))
        assert len(set(map(frozenset, cliques))) == len(cliques)
        assert not any(set(c) < set(d) for c in cliques for d in cliques)
        edges = mrf.junction_tree(cliques)
        tree = mrf.JTree(cliques, edges, dom)
        for v in nodes:  # running intersection: the cliques holding v form a subtree
            hold = {i for i, c in enumerate(cliques) if v in c}
            inner = [(i, j) for i, j in edges if i in hold and j in hold]
            assert len(inner) == len(hold) - 1 or len(hold) == 0
        pots = [rng.random(tuple(dom[v] for v in c)) + 0.05 for c in cliques]
        bel = tree.calibrate(pots)
        joint = _brute_joint(cliques, pots, dom, nodes)
        for c, b in zip(cliques, bel):
            want = joint.sum(axis=tuple(i for i, v in enumerate(nodes) if v not in c))
            assert np.max(np.abs(b - want) / want) < 1e-10


def _decomposable(rng: np.random.Generator):  # noqa: ANN202
    """A random distribution on the chain A–B–C–D with size ∈ every clique, and its marginals."""
    vars_ = ["S", "A", "B", "C"]
    dom = {"S": 3, "A": 2, "B": 3, "C": 2}
    cliques = [("S", "A", "B"), ("S", "B", "C")]
    pots = [rng.random((3, 2, 3)) + 0.1, rng.random((3, 3, 2)) + 0.1]
    joint = _brute_joint(cliques, pots, dom, vars_)
    return vars_, dom, cliques, joint


def test_D3_fitting_exact_marginals_recovers_them_and_loss_never_increases() -> None:
    """D3: Private-PGM mirror descent on exact, mutually consistent marginals of a decomposable
    distribution recovers them (max TVD < 1e-3) within 1000 iterations; the loss never increases
    over accepted steps."""
    rng = np.random.default_rng(5)
    vars_, dom, cliques, joint = _decomposable(rng)
    total = 1000.0
    model = mrf.Model(vars_, dom, mrf.JTree(cliques, mrf.junction_tree(cliques), dom), total)
    for c in cliques:
        model.add(mrf.Measurement(c, total * joint.sum(axis=tuple(i for i, v in enumerate(vars_) if v not in c))))
    model.fit(1000, early_stop=False)
    assert all(b <= a + 1e-9 for a, b in zip(model.history, model.history[1:]))
    for c in cliques:
        want = joint.sum(axis=tuple(i for i, v in enumerate(vars_) if v not in c))
        assert 0.5 * np.abs(model.marginal(c) / total - want).sum() < 1e-3


def test_D4_size_restricted_model_equals_per_size_models() -> None:
    """D4 ([P] "an MRF for each s ≥ i"): one model with size in every clique, restricted to sizes
    {i…N}, has the per-slice marginals of separately fitted per-size models (< 1e-4 TVD per
    slice), on marginals of a distribution whose structure changes with the size."""
    rng = np.random.default_rng(8)
    vars_ = ["S", "A", "B", "C"]
    dom = {"S": 3, "A": 3, "B": 2, "C": 3}
    cl = [("S", "A", "B"), ("S", "B", "C")]
    joint_p = _brute_joint(cl, [rng.random((3, 3, 2)) ** 3 + 0.01, rng.random((3, 2, 3)) ** 3 + 0.01],
                           dom, vars_)
    total = 900.0
    ys = [total * joint_p.sum(axis=3), total * joint_p.sum(axis=1)]
    sizes = ys[0].sum(axis=(1, 2))
    joint = mrf.Model(vars_, dom, mrf.JTree(cl, mrf.junction_tree(cl), dom), total)
    joint.add(mrf.Measurement(("S",), sizes))
    for c, y in zip(cl, ys):
        joint.add(mrf.Measurement(c, y))
    joint.fit(3000, early_stop=False)
    for s in range(3):
        d1 = {"A": 3, "B": 2, "C": 3}
        cl1 = [("A", "B"), ("B", "C")]
        one = mrf.Model(list(d1), d1, mrf.JTree(cl1, mrf.junction_tree(cl1), d1), float(sizes[s]))
        for c, y in zip(cl1, ys):
            one.add(mrf.Measurement(c, y[s]))
        one.fit(3000, early_stop=False)
        for c in cl1:
            a = joint.marginal(("S",) + c)[s]
            b = one.marginal(c)
            assert 0.5 * np.abs(a / a.sum() - b / b.sum()).sum() < 1e-4


def test_D5_numpy_engine_agrees_with_mbi() -> None:
    """D5: on a small model with noisy, mutually inconsistent marginals (equal σ, so ``mbi``'s
    1/σ weights do not change the optimum) the numpy engine and ``mbi``'s MirrorDescent reach the
    same fitted marginals (TVD < 1e-3; the loss is strictly convex in the measured marginals, so
    both converge to one optimum)."""
    from relviz.relational.privlava import pgm

    rng = np.random.default_rng(11)
    dom = {"S": 3, "A": 2, "B": 3}
    cl = [("S", "A"), ("S", "B")]
    ys = [rng.random((3, 2)) * 40 + 5, rng.random((3, 3)) * 40 + 5]
    total = float((ys[0].sum() + ys[1].sum()) / 2)
    ours = mrf.Model(list(dom), dom, mrf.JTree(cl, mrf.junction_tree(cl), dom), total)
    for c, y in zip(cl, ys):
        ours.add(mrf.Measurement(c, y))
    ours.fit(3000, early_stop=False)
    theirs = pgm.fit_model(dom, [(c, y.ravel(), 1.0) for c, y in zip(cl, ys)], total, iters=3000)
    for c in cl:
        a = ours.marginal(c) / total
        b = pgm.model_marginal(theirs, c)
        assert 0.5 * np.abs(a - b).sum() < 1e-3, (c, a, b)


def _masked_model(device=None) -> mrf.Model:  # noqa: ANN001
    """A three-clique model with noisy, inconsistent marginals, one with per-slice weights on
    ``size`` and one with a measurement weight: every branch of the fit's loss."""
    rng = np.random.default_rng(21)
    dom = {"S": 3, "A": 4, "B": 3, "C": 2}
    cl = [("S", "A", "B"), ("S", "B", "C")]
    model = mrf.Model(list(dom), dom, mrf.JTree(cl, mrf.junction_tree(cl), dom), 500.0,
                      device=device)
    model.add(mrf.Measurement(("S", "A", "B"), rng.random((3, 4, 3)) * 30 + 2,
                              mask=np.array([1.0, 0.5, 0.0])))
    model.add(mrf.Measurement(("S", "C"), rng.random((3, 2)) * 80 + 5, weight=2.0))
    model.add(mrf.Measurement(("B",), rng.random(3) * 150 + 10))
    return model


def test_D7_torch_engine_fits_what_numpy_fits() -> None:
    """D7 (docs §6, ``device``): the torch engine in float64 on the CPU runs numpy's arithmetic.
    The first 100 losses agree to 1e-10 relative (the libraries may order a sum's terms
    differently, which moves only the last bits). Later the growing Armijo step (×1.01 per
    accepted step) reaches the edge of stability, where those bits grow, so the end is compared
    where it is unique: the loss is strictly convex in the measured marginals, and after 3000
    iterations both engines' fitted marginals are within 1e-3 TVD of each other (D5's bound)."""
    import torch

    a = _masked_model().fit(100, early_stop=False)
    b = _masked_model(torch.device("cpu")).fit(100, early_stop=False)
    np.testing.assert_allclose(b.history, a.history, rtol=1e-10)
    assert all(isinstance(t, np.ndarray) for t in b.theta)
    a = _masked_model().fit(3000, early_stop=False)
    b = _masked_model(torch.device("cpu")).fit(3000, early_stop=False)
    for c in [("S", "C"), ("B",)]:
        x, y = a.marginal(c), b.marginal(c)
        assert 0.5 * np.abs(x / x.sum() - y / y.sum()).sum() < 1e-3, c
    # a fit below the size threshold stays in numpy even with a device set
    small = _masked_model(torch.device("cpu"))
    small.device_min_cells = 10**9
    small.fit(3000, early_stop=False)
    assert small.history == a.history


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_D7_cuda_engine_fits_what_numpy_fits() -> None:
    """D7 on CUDA (float64): the first 100 losses as numpy's to 1e-10 relative, and the fitted
    marginals after 3000 iterations within 1e-3 TVD (see the CPU test for why)."""
    import torch

    a = _masked_model().fit(100, early_stop=False)
    b = _masked_model(torch.device("cuda")).fit(100, early_stop=False)
    np.testing.assert_allclose(b.history, a.history, rtol=1e-10)
    a = _masked_model().fit(3000, early_stop=False)
    b = _masked_model(torch.device("cuda")).fit(3000, early_stop=False)
    for c in [("S", "C"), ("B",)]:
        x, y = a.marginal(c), b.marginal(c)
        assert 0.5 * np.abs(x / x.sum() - y / y.sum()).sum() < 1e-3, c


def test_D7_device_parameter() -> None:
    """``device``: ``"auto"`` runs numpy where torch sees no CUDA; ``"cpu"`` is torch there;
    anything else is refused in words."""
    import torch

    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    assert alg.fit_device("numpy") is None
    assert alg.fit_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert alg.fit_device("auto") is None
    with pytest.raises(ParameterError, match="device"):
        PrivPetal(device="tpu")


def test_D7_same_tables_on_the_torch_engine(household_fit) -> None:  # noqa: ANN001
    """End to end: a whole PrivPetal fit with ``device="cpu"`` (every fit on torch) gives the
    same synthetic tables as the numpy fit of the same seed (the fixture)."""
    db, _, syn, _ = household_fit
    _, again, _ = fit_sample(db, 8.0, seed=2, lam=1.0, device="cpu")
    for t in syn.table_names:
        pd.testing.assert_frame_equal(again[t], syn[t])


def test_D6_conditional_sampling_and_rounding() -> None:
    """D6: the rounded draw gives every value at least ⌊m·p_v⌋ rows and exactly m rows per group
    (fewer than K rows are left to the i.i.d. remainder draw);
    i.i.d. draws of the target given a fixed context match p(target | context) (chi-square
    statistic below the 0.999 quantile for its degrees of freedom)."""
    from scipy.stats import chi2

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(5), size=4)
    group = rng.integers(0, 4, 5000)
    vals = mrf.rounded_draw(group, probs, rng)
    for g in range(4):
        m = int((group == g).sum())
        counts = np.bincount(vals[group == g], minlength=5)
        assert counts.sum() == m and np.all(counts >= np.floor(m * probs[g] - 1e-9))
        assert (counts - np.floor(m * probs[g] + 1e-9)).sum() < len(probs[g])  # remainders < K
    vars_, dom, cliques, joint = _decomposable(np.random.default_rng(2))
    model = mrf.Model(vars_, dom, mrf.JTree(cliques, mrf.junction_tree(cliques), dom), 500.0)
    for c in cliques:
        model.add(mrf.Measurement(c, 500 * joint.sum(axis=tuple(i for i, v in enumerate(vars_) if v not in c))))
    model.fit(500)
    n = 20000
    ctx = {"S": np.full(n, 1), "A": np.full(n, 0), "B": np.full(n, 2)}
    p = mrf.logits_to_probs(model.conditional_logits("C", ctx))
    draw = mrf.draw_from_table(np.zeros(n, dtype=np.int64), p[:1], rng, rounded=False)
    want = model.marginal(("S", "B", "C"))[1, 2]  # C ⟂ A | S, B in this model
    want = want / want.sum()
    assert np.allclose(p[0], want, atol=1e-9)
    obs = np.bincount(draw, minlength=2)
    stat = (((obs - n * want) ** 2) / (n * want)).sum()
    assert stat < chi2.ppf(0.999, 1)


# -- E. algorithm components ----------------------------------------------------------------------

def test_E1_npm_query_post_processing() -> None:
    """E1: with σ = 0 the merging example of spec §3.6 (S = {H.OWN, I_a.EMP}, I = [3, 4],
    ñ_3 = 1.2, ñ_4 = 0.9) gives M̃_3 = (0.70, 0.50), M̃_4 = (0.525, 0.375) for (No, No), (No, Yes);
    without merging M̃_s = (ñ_s/n_s)·M_s; every slice sums to ñ_s; a non-positive block is masked."""
    hc, ic, par, hd, idm = _table1()
    priv = private(hc, ic, par, hd, idm, 4)
    key = npm.canonical([("H", 0), ("I", 1, 0)])[0]
    M = exact(priv, key)  # noqa: N806
    n_noisy = np.array([0.0, 0.0, 1.0, 1.2, 0.9])
    merged = np.concatenate([(M[3] + M[4]).ravel(), M[1].ravel(), M[2].ravel()])
    arr, var, masked = alg.npm_query_post(merged, 0.0, (2, 2), 1, [3, 4], n_noisy, 4)
    assert arr[3, 0] == pytest.approx([0.70, 0.50]) and arr[4, 0] == pytest.approx([0.525, 0.375])
    assert np.allclose(arr[2:].reshape(3, -1).sum(1), n_noisy[2:])
    assert masked.tolist() == [False, True, False, False, False]  # slice 1 is empty: total 0
    assert np.isinf(var[0])
    plain = np.concatenate([M[s].ravel() for s in range(1, 5)])
    arr, _, _ = alg.npm_query_post(plain, 0.0, (2, 2), 1, [], n_noisy, 4)
    for s in (2, 3, 4):
        assert np.allclose(arr[s], n_noisy[s] / M[s].sum() * M[s])
    bad = plain.copy()
    bad[4:8] = -1.0
    _, _, masked = alg.npm_query_post(bad, 1.0, (2, 2), 1, [], n_noisy, 4)
    assert masked.tolist() == [False, True, True, False, False]  # empty slice 1, negative slice 2


def _run(seed: int = 0, N: int = 4, rho: Fraction = Fraction(1, 2), **params):  # noqa: ANN202, N803
    rng = np.random.default_rng(seed)
    hc, ic, par, hd, idm = tiny_fk(rng, n_h=40, max_size=N, h=2, a=3)
    priv = private(hc, ic, par, hd, idm, N)
    a = Accountant(rho, delta=1e-6)
    budget = Budget(a, "fk", rho, np.random.default_rng(seed))
    plan = acc.plan_fk(rho, h=3, a=3, N=N, o=2, sens=acc.FKSensitivity(1, 0))
    p = alg.Params(**{"lam": 0.5, "k": 10, "fit_iters": 40, "refit_iters": 10, "t1_picks": 2,
                      "t1_iters": 2, "n_mrf": 4, **params})
    run = alg._Run("fk", priv, budget, plan, p, ["h0", "h1"], ["i0", "i1", "i2"],
                   lambda f, m="": None, seed)
    return run, a


def test_E2_one_charge_per_key_and_lower_variance_rollups() -> None:
    """E2: querying a key twice charges once; a key obtainable by roll-up is served from the
    store without a charge; of two sources the lower-variance one is kept per slice (a roll-up's
    variance is σ² × the cells summed into one)."""
    run, a = _run()
    run.n_noisy = np.array([1.0, 10, 10, 10, 10])
    big = npm.canonical([("H", 0), ("I", 1, 0), ("I", 1, 1)])[0]
    assert run.npm_query(big, Fraction(1, 100), "test")
    assert not run.npm_query(big, Fraction(1, 100), "test")
    assert len(a.ledger) == 1
    sub = npm.canonical([("I", 1, 0)])[0]
    assert run.store.get(sub, 1) is not None and not run.store.measured(sub)
    assert not run.npm_query(npm.canonical([("I", 1, 0), ("I", 1, 1)])[0], Fraction(0), "test")
    # store semantics with controlled variances: a roll-up summing more cells is noisier
    store = npm.NPMStore(4)
    k1 = npm.canonical([("H", 0), ("I", 1, 0)])[0]             # sums 2 cells into {I_a.0}
    k2 = npm.canonical([("H", 0), ("H", 1), ("I", 1, 0)])[0]   # sums 2·3 cells into {I_a.0}
    shape = lambda k: (5,) + npm.key_dims(k, (2, 3), (2,))  # noqa: E731
    var = np.r_[np.inf, np.ones(4)]
    store.put(k1, np.ones(shape(k1)), var, np.zeros(5, bool), direct=True, provenance="measured")
    first = store.entries[sub].var.copy()
    assert np.allclose(first[1:], 2.0)
    store.put(k2, np.full(shape(k2), 7.0), var, np.zeros(5, bool), direct=True, provenance="measured")
    assert np.allclose(store.entries[sub].var, first) and np.allclose(store.entries[sub].arr[1:], 2.0)
    store.put(sub, np.full((5, 2), 3.0), np.full(5, 0.5), np.zeros(5, bool), direct=True,
              provenance="measured")
    assert np.allclose(store.entries[sub].var, 0.5) and store.measured(sub)
    assert len(a.ledger) == 1


def test_E3_cfs_select_and_usefulness() -> None:
    """E3: CFS_SELECT on a hand-made R̃ table returns the expected picks and ignores non-maximal
    candidates; candidates at or above L(σ) cells are rejected by the usefulness limit."""
    A, B, C, D = ("H", 0), ("H", 1), ("I", 1, 0), ("I", 1, 1)  # noqa: N806
    table = {frozenset((A, B)): 0.9, frozenset((A, C)): 0.1, frozenset((B, C)): 0.0,
             frozenset((C, D)): 0.8, frozenset((A, D)): 0.05, frozenset((B, D)): 0.0}
    R = lambda u, v: table.get(frozenset((u, v)), 0.0)  # noqa: E731, N806
    fs = lambda *v: frozenset((SIZE,) + v)  # noqa: E731
    cands = [fs(A, B), fs(A, C), fs(C, D), fs(A), fs(B, D)]
    picks = alg.cfs_select(cands, [A, C, D], R, lambda s: len(s))
    assert fs(A) not in alg.maximal(cands)
    assert picks == [fs(A, B), fs(C, D)]
    assert alg.cfs_score(A, fs(A, B), R) == pytest.approx(0.9 / math.sqrt(2))
    limit = acc.usefulness_limit(6000.0, 10.0, 6.0, 50_000)
    assert limit == pytest.approx(6000 / (6 * 10 * math.sqrt(2 / math.pi)))
    assert acc.usefulness_limit(1e9, 1e-3, 6.0, 50_000) == 50_000


def test_E4_phase_a_reads_only_the_noisy_store() -> None:
    """E4 ([P] §4.3, docs §8 D1): building a target's model without new queries (Phase A: CFS on
    stored keys, h-scores on the stored noisy arrays) never touches the true data — the private
    object's exact accessors raise — and a stored sentinel NPM far from the model is picked."""
    run, a = _run(seed=3)
    run.n_noisy = np.array([0.0, 10, 10, 10, 10])
    run.R = alg.RScores(npm.rscore_pairs(3, 3), np.ones(len(npm.rscore_pairs(3, 3))),
                        {0: 40.0, 1: 40.0, 2: 30.0})
    run.store.put(((), ()), run.n_noisy.copy(), np.ones(5), np.zeros(5, bool), direct=True,
                  provenance="group sizes", rollup=False)
    sentinel = np.zeros((5, 2, 2))
    sentinel[1:, 1, 0] = 10.0  # all the mass on one cell: far from any fitted model
    key = npm.canonical([("I", 1, 0), ("I", 1, 1)])[0]
    dims = npm.key_dims(key, run.hdom, run.idom)
    sentinel = np.zeros((5,) + dims)
    sentinel[1:, 1, 0] = 10.0
    run.store.put(key, sentinel, np.ones(5), np.zeros(5, bool), direct=True, provenance="measured")

    def boom(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("Phase A read the true data")

    run.priv._npm = boom
    run.priv._rscore = boom
    cond = run.build(("I", 1, 0), [("H", 0), ("H", 1), ("I", 1, 1)], 1, refine=False)
    assert len(a.ledger) == 0
    assert cond.cliques and any(("I", 1, 1) in c for c in cond.cliques)
    probs = mrf.logits_to_probs(cond.logits({SIZE: np.array([0]), ("I", 1, 1): np.array([0]),
                                             ("H", 0): np.array([0]), ("H", 1): np.array([0])}))
    assert probs[0, 1] > 0.9  # the sentinel says: I.0 = 1 whenever I.1 = 0


def test_E5_attribute_order_and_context() -> None:
    """E5 (docs §3.5): NEXT_ATTR maximises Σ R̃n(A, ·)/√|X_A|; the context takes up to ⌊N_MRF/2⌋
    same-slot attributes, then the rest by R̃n with the target, never size."""
    scores = {("I", 2, 0): {("H", 0): 0.9, ("I", 1, 0): 0.5, ("I", 1, 1): 0.1, ("I", 2, 1): 0.3,
                            ("I", 2, 2): 0.2, SIZE: 5.0},
              ("I", 2, 1): {("H", 0): 0.1}, ("I", 2, 2): {("H", 0): 0.4}}

    def R(u, v):  # noqa: ANN001, ANN202, N802
        return scores.get(u, {}).get(v, scores.get(v, {}).get(u, 0.0))

    dom = {("I", 2, 0): 16, ("I", 2, 1): 2, ("I", 2, 2): 2}
    # (0.9 + 0.5 + 0.1)/4 = 0.375 vs 0.1/√2 = 0.07 and 0.4/√2 = 0.28
    assert alg.next_attribute([("I", 2, 0), ("I", 2, 1), ("I", 2, 2)], [("H", 0)], R, dom) == ("I", 2, 2)
    syn = [("H", 0), ("I", 1, 0), ("I", 1, 1), ("I", 2, 1), ("I", 2, 2), SIZE]
    assert alg.context_for(("I", 2, 0), syn, R, 4) == [("I", 2, 1), ("I", 2, 2), ("H", 0), ("I", 1, 0)]
    assert alg.context_for(("I", 2, 0), syn, R, 2) == [("I", 2, 1), ("H", 0)]


def test_E6_match_keeps_copy_one_and_every_first_column_match() -> None:
    """E6: MATCH pairs rows one-to-one (every row of the first copy at most once), makes every
    possible exact match on the first column (Σ_v min(|X_v|, |Y_v|)), and among those prefers
    agreement on the next column."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (500, 3))
    y = rng.integers(0, 3, (420, 3))
    ix, iy = match(x, y, rng)
    assert len(ix) == len(iy) == 420 and len(set(ix)) == 420 and len(set(iy)) == 420
    want = sum(min((x[:, 0] == v).sum(), (y[:, 0] == v).sum()) for v in range(3))
    assert int((x[ix, 0] == y[iy, 0]).sum()) == want
    both = sum(min(((x[:, 0] == v) & (x[:, 1] == w)).sum(), ((y[:, 0] == v) & (y[:, 1] == w)).sum())
               for v in range(3) for w in range(3))
    assert int(((x[ix, 0] == y[iy, 0]) & (x[ix, 1] == y[iy, 1])).sum()) == both


# -- F. end to end ----------------------------------------------------------------------------------

SMALL = dict(k=20, fit_iters=80, refit_iters=20, t1_picks=2, t1_iters=2, n_mrf=4)


def household_schema(N: int = 4, wide: bool = False) -> Schema:  # noqa: N803
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    person_attrs = (cat("age", 6), cat("emp", 2), cat("edu", 3))
    if wide:  # an attribute with more than 20 codes: modelled as two digits, recombined
        person_attrs += (cat("income", 25),)
    return Schema(
        (Table("households", ("hid",), (cat("own", 2), cat("rooms", 3))),
         Table("persons", ("pid",), person_attrs)),
        (ForeignKey("persons", ("hid",), "households"),),
        PrivacyUnit("households", {"persons.hid->households": N}), name="toy-census")


def household_db(n: int, seed: int = 0, N: int = 4, wide: bool = False) -> Database:  # noqa: N803
    """A latent household type drives the household's attributes, its size and each member's
    attributes; the first two members' ages are nearly equal (spouses)."""
    rng = np.random.default_rng(seed)
    typ = rng.integers(0, 3, n)
    own = (rng.random(n) < np.array([0.2, 0.7, 0.9])[typ]).astype(int)
    rooms = np.minimum(typ + rng.integers(0, 2, n), 2)
    size = np.minimum(1 + typ + rng.integers(0, 2, n), N)
    hid = np.repeat(np.arange(n), size)
    rank = np.arange(len(hid)) - np.repeat(np.cumsum(size) - size, size)
    head_age = np.array([1, 3, 4])[typ] + rng.integers(0, 2, n)
    age = np.where(rank == 0, head_age[hid], np.where(rank == 1, head_age[hid],
                                                      rng.integers(0, 2, len(hid))))
    age = np.clip(age + (rng.random(len(hid)) < 0.1), 0, 5)
    emp = ((age >= 2) & (rng.random(len(hid)) < 0.8)).astype(int)
    edu = np.minimum(typ[hid] + (rng.random(len(hid)) < 0.3), 2)
    persons = {"pid": np.arange(len(hid)), "hid": hid, "age": age, "emp": emp, "edu": edu}
    if wide:
        persons["income"] = np.minimum(age * 4 + rng.integers(0, 4, len(hid)), 24)
    return Database(household_schema(N, wide), {
        "households": pd.DataFrame({"hid": np.arange(n), "own": own, "rooms": rooms}),
        "persons": pd.DataFrame(persons)})


def shop_db(seed: int = 0, n_orders: int = 300) -> Database:
    """stores (public, some without orders) ← orders (entity) ← items → products (public):
    a relation with two FKs, one to a public parent."""
    rng = np.random.default_rng(seed)
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    stores = pd.DataFrame({"store_id": np.arange(12), "region": np.arange(12) % 3})
    products = pd.DataFrame({"product_id": np.arange(30), "category": np.arange(30) % 4})
    kind = rng.integers(0, 3, n_orders)
    orders = pd.DataFrame({"order_id": np.arange(n_orders), "store_id": rng.integers(0, 8, n_orders),
                           "kind": kind})
    size = 1 + kind
    oid = np.repeat(np.arange(n_orders), size)
    prod = (kind[oid] * 7 + rng.integers(0, 10, len(oid))) % 30
    items = pd.DataFrame({"item_id": np.arange(len(oid)), "order_id": oid, "product_id": prod,
                          "qty": np.minimum(kind[oid] + rng.integers(0, 2, len(oid)), 3)})
    schema = Schema(
        (Table("stores", ("store_id",), (cat("region", 3),), public=True),
         Table("products", ("product_id",), (cat("category", 4),), public=True),
         Table("orders", ("order_id",), (cat("kind", 3),)),
         Table("items", ("item_id",), (cat("qty", 4),))),
        (ForeignKey("orders", ("store_id",), "stores"), ForeignKey("items", ("order_id",), "orders"),
         ForeignKey("items", ("product_id",), "products")),
        PrivacyUnit("orders", {"items.order_id->orders": 3, "orders.store_id->stores": 60,
                               "items.product_id->products": 40}), name="shop")
    return Database(schema, {"stores": stores, "products": products, "orders": orders, "items": items})


def with_nullable(db: Database, fk_name: str, share: float, seed: int = 0) -> Database:
    """``db`` with ``fk_name`` nullable and a random ``share`` of its children's FK set to null
    (their attributes unchanged: null children distributed as the others)."""
    s = db.schema
    fk = s.foreign_key(fk_name)
    nfk = ForeignKey(fk.child, fk.columns, fk.parent, fk.parent_columns, nullable=True, name=fk.name)
    schema = Schema(tuple(s.tables), tuple(nfk if f.name == fk.name else f for f in s.foreign_keys),
                    s.privacy_unit, s.name)
    child = db[fk.child].copy()
    null = np.random.default_rng(seed).random(len(child)) < share
    for c in fk.columns:
        child[c] = child[c].astype("Int64").mask(null)
    return Database(schema, {**{t: db[t] for t in s.table_names}, fk.child: child})


def fit_sample(db: Database, eps: float, seed: int = 0, **params) -> tuple:  # noqa: ANN003
    plan = Plan.default(db.schema, eps, 1e-6, method="privpetal")
    for e in plan.edges:
        plan = plan.with_params(e.name, **{**SMALL, **params})
    synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
    return synth, synth.sample(), plan


def integrity(real: Database, syn: Database) -> None:
    """F1 checks: unique primary keys, every FK value present in its parent (null only where the
    FK is nullable), group sizes ≤ the cap, every value inside its public domain, public tables released unchanged."""
    s = real.schema
    assert not syn.problems()
    for t in s.tables:
        df = syn[t.name]
        assert not df.duplicated(list(t.primary_key)).any()
        if t.public:
            pd.testing.assert_frame_equal(df.reset_index(drop=True), real[t.name].reset_index(drop=True))
        for a in t.attributes:
            assert set(df[a.name].dropna().unique()) <= set(a.categories), (t.name, a.name)
    for fk in s.private_foreign_keys:
        idx = syn.parent_index(fk)
        assert fk.nullable or (idx >= 0).all(), fk.name
        deg = np.bincount(idx[idx >= 0], minlength=len(syn[fk.parent]))
        assert deg.max(initial=0) <= s.privacy_unit.caps.get(fk.name, np.inf), fk.name


@pytest.fixture(scope="module")
def household_fit():
    db = household_db(600, seed=1, wide=True)
    synth, syn, plan = fit_sample(db, 8.0, seed=2, lam=1.0)
    return db, synth, syn, plan


def test_F1_integrity_two_tables_with_a_factorised_attribute(household_fit) -> None:  # noqa: ANN001
    """F1: households ← persons with a 25-code attribute (two digits, recombined and clipped)."""
    db, synth, syn, _ = household_fit
    integrity(db, syn)
    enc = synth.database_.encodings["persons"]
    assert "income#hi" in enc.names and "income#lo" in enc.names
    assert syn["persons"]["income"].max() <= 24


def test_splits_name_an_attribute_s_factorisation() -> None:
    """``splits``: a named attribute is kept whole (0) or factorised by its own divisor ``d``
    (``(v div d, v mod d)``, quotient domain ``⌈|X|/d⌉``) whatever ``split_above``; encoding then
    decoding gives every code back; a fit carries the encoding to sampling (F1 integrity)."""
    from relviz.encoding import encode_table
    from relviz.relational.privpetal.method import decode, encode, encoding

    db = household_db(300, seed=3, wide=True)
    schema = db.schema
    codes = encode_table(schema.table("persons"), db["persons"])
    default = encoding(schema, "persons", split_above=20)
    assert ("income#hi", "income#lo") == default.names[-2:] and default.dom[-2:] == (3, 10)
    whole = encoding(schema, "persons", split_above=20, splits={"persons.income": 0})
    assert "income" in whole.names and whole.dom[whole.names.index("income")] == 25
    by5 = encoding(schema, "persons", split_above=None, splits={"persons.income": 5})
    j = by5.names.index("income#hi")
    assert by5.dom[j:j + 2] == (5, 5) and by5.div[j:j + 2] == (5, 5)
    for enc in (default, whole, by5):
        x = encode(enc, {"persons": codes}, {})
        assert x.max(axis=0).tolist() < list(enc.dom)
        np.testing.assert_array_equal(decode(enc, schema, "persons", x).codes, codes.codes)
    synth, syn, _ = fit_sample(db, 8.0, seed=2, lam=1.0, splits={"persons.income": 5})
    integrity(db, syn)
    enc = synth.database_.encodings["persons"]
    assert enc.div[enc.names.index("income#lo")] == 5


def test_public_categorical_attributes_are_kept_whole() -> None:
    """docs §3.1: a categorical attribute of a public table is kept whole whatever its size (a
    digit of its code would group unrelated categories), also as a public parent's context
    column; a numeric one of the same public table, and a categorical one of a private table,
    follow ``split_above``; ``splits`` still names a public categorical's own divisor."""
    from relviz.relational.privpetal.method import encoding

    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    schema = Schema(
        (Table("brands", ("bid",), (cat("label", 25),), public=True),
         Table("products", ("pid",), (cat("kind", 40), Attribute.numeric("weight", 0, 99, bins=50,
                                                                          integer=True)),
               public=True),
         Table("sales", ("sid",), (cat("channel", 30),))),
        (ForeignKey("products", ("bid",), "brands"), ForeignKey("sales", ("pid",), "products")),
        PrivacyUnit("sales", {}), name="toy-shop")
    enc = encoding(schema, "products", split_above=20, public_context=1)
    assert enc.names == ("kind", "weight#hi", "weight#lo", "brands.label")
    assert enc.dom == (40, 5, 10, 25)
    assert encoding(schema, "sales", split_above=20).names == ("channel#hi", "channel#lo")
    by8 = encoding(schema, "products", split_above=20, public_context=1,
                   splits={"products.kind": 8, "brands.label": 5})
    assert by8.names == ("kind#hi", "kind#lo", "weight#hi", "weight#lo", "brands.label#hi",
                         "brands.label#lo")
    assert by8.dom == (5, 8, 5, 10, 5, 5)


def test_splits_parameter_is_checked_in_words() -> None:
    """A key without its table, a divisor of 1, a negative or fractional one are all refused at
    once, naming each."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    with pytest.raises(ParameterError, match="splits") as e:
        PrivPetal(splits={"income": 5, "persons.age": 1, "persons.edu": -2, "persons.emp": 2.5,
                          "persons.rooms": "ten"})
    for k in ("income", "persons.age", "persons.edu", "persons.emp", "persons.rooms"):
        assert k in str(e.value)
    assert PrivPetal(splits={"persons.income": 0}).splits == {"persons.income": 0}
    db = household_db(50, seed=0, wide=True)
    plan = Plan.default(db.schema, 1.0, 1e-6, method="privpetal")
    plan = plan.with_params(plan.edges[0].name, splits={"persons.income": 5, "persons.wage": 0})
    msgs = [str(p) for p in plan.problems(db.schema)]
    assert any("persons.wage" in m for m in msgs) and not any("persons.income" in m for m in msgs)


@pytest.mark.parametrize("which", ["chain", "shop"])
def test_F1_integrity_chain_and_two_fks(which: str) -> None:
    """F1: a three-relation chain (households → persons → trips) and a relation with two FKs (one
    to a public parent with childless tuples), whose copies are MERGEd."""
    db = chain_db(150, seed=4) if which == "chain" else shop_db()
    synth, syn, plan = fit_sample(db, 20.0, seed=1, lam=1.0)
    integrity(db, syn)
    if which == "shop":
        assert plan.component("orders.store_id->stores").share == Fraction(1, 2)
        assert plan.component("items.order_id->orders").share == Fraction(1, 4)
        assert len(syn["stores"]) == 12  # the public parent is released whole, childless rows too


def _release_kinds(p: acc.FKPlan) -> dict:
    """Planned ρ of one release of each kind, by ledger label prefix (first match wins)."""
    return {"Alg. 1 line 1": p.rho_n, "Alg. 1 line 2": p.rho_R,
            "Alg. 5 (3)": p.rho_inter_query(), "Alg. 5 (4)": p.rho_intra_query(),
            "Alg. 2 line 10": p.rho_npm_target(), "Alg. 2 line 8": p.rho_hround_target(),
            "Alg. 5 (1) PrivMRF-sub on A_H, h-scores": p.hsub.rho_hround,
            "Alg. 5 (1)": p.hsub.rho_query,
            "Alg. 5 (2) PrivMRF-sub on {size} ∪ A_I, h-scores": p.isub.rho_hround,
            "Alg. 5 (2)": p.isub.rho_query,
            "relviz: children with a null FK": p.rho_null,
            "relviz: children's one-way marginal of ": p.rho_margin_each(),
            "relviz: children per parent value of ": p.rho_children_each()}


def _check_release_costs(p: acc.FKPlan, ledger: list) -> None:
    """Every release of one FK's ``ledger`` costs the planned ρ of its kind. The noise-aware gate
    of Alg. 5 (3) (docs §5.7) spends that step's whole ρ on the ``k ≤ h + a`` picks it keeps, each
    at ``ρ_inter / k`` (every kept pick is a new key: the candidates exclude stored ones), and the
    pair margins (docs §5.10) theirs on the ``k ≤ n_pairs`` pairs kept. Each
    PrivMRF-sub run, and the intra-group step, spends its whole planned ρ (docs §4.4): its NPM
    queries cost one equal ρ, at least the planned per-query one, and with its h-score rounds
    they sum to the step's ρ exactly; a refining target (Alg. 2) releases at its planned ρ's
    scaled by one factor ≥ 1 (what earlier targets left), within ``J·ρ_target`` in all."""
    kinds = _release_kinds(p)
    pairs = [e for e in ledger if e.label.startswith("relviz: parent–child pair margin of ")]
    scores = [e for e in ledger if e.label.startswith("relviz: parent–child pair scores")]
    if pairs:  # pair_margins (docs §5.10): one score vector, n_pairs margins, ρ_pairs in all
        q = (p.h - 1) * p.a
        # fewer than n_pairs only when the public parent's columns imply the rest (docs §5.10)
        assert 1 <= len(pairs) <= p.n_pairs and len(scores) == (1 if p.rho_pair_select else 0)
        kinds["relviz: parent–child pair margin of "] = p.rho_pair_each(len(pairs))
        kinds["relviz: parent–child pair scores"] = p.rho_pair_select
        for e in scores:
            assert e.label == f"relviz: parent–child pair scores ({q} candidates)"
            assert e.sensitivity == pytest.approx(p.sens.score * math.sqrt(q))
            assert e.sigma == pytest.approx(p.sigma_pair_scores)
        assert sum(e.rho for e in pairs + scores) == p.rho_pairs
    else:
        assert not scores
    inter = [e for e in ledger if e.label.startswith("Alg. 5 (3)")]
    if inter:  # none when no candidate is λ-useful
        assert len(inter) <= p.h + p.a
        kinds["Alg. 5 (3)"] = p.rho_inter / len(inter)
        assert sum(e.rho for e in inter) == p.rho_inter
    for step, planned, rho in (("Alg. 5 (1)", p.hsub.rho_query, p.rho_hsub),
                               ("Alg. 5 (2)", p.isub.rho_query, p.rho_isub),
                               ("Alg. 5 (4)", p.rho_intra_query(), p.rho_intra)):
        npms = [e for e in ledger if e.label.startswith(step) and "NPM {" in e.label]
        if not npms:  # none when no candidate is λ-useful
            continue
        each = npms[0].rho
        assert each >= planned and all(e.rho == each for e in npms), step
        kinds[step] = each
        assert sum(e.rho for e in ledger if e.label.startswith(step)) == rho, step
    # Alg. 2: a target releases at one scale of its planned ρ's (≥ 1: the ρ earlier targets did
    # not release is passed on), and the targets together never exceed J·ρ_target
    refine = [e for e in ledger if e.label.startswith("Alg. 2 line")]
    for target in {e.label.split("target ")[1].split(")")[0] for e in refine}:
        mine = [e for e in refine if f"target {target})" in e.label]
        scales = {e.rho / (p.rho_npm_target() if "line 10" in e.label else p.rho_hround_target())
                  for e in mine}
        assert len(scales) == 1 and min(scales) >= 1, target
    assert sum(e.rho for e in refine) <= p.rho_target * p.J
    for e in (e for e in ledger if not e.label.startswith("Alg. 2 line")):
        kind = next(k for k in kinds if e.label.startswith(k))
        assert e.rho == kinds[kind], e.label


def test_C4_ledger_semantics(household_fit) -> None:  # noqa: ANN001
    """C4: every release is labelled by its algorithm line; one charge per NPM key (cached keys
    and roll-ups are free); each release costs the planned per-release ρ of its kind; the realised
    total is at most the plan (and the plan sums to the component's ρ exactly)."""
    db, synth, _, plan = household_fit
    ledger = synth.ledger_
    fk = plan.edges[0].name
    assert all(e.label.startswith("Alg. ") for e in ledger) and all(e.component == fk for e in ledger)
    keys = [e.label.split("NPM ")[1] for e in ledger if "NPM {" in e.label]
    assert keys and len(keys) == len(set(keys))
    method = synth.database_.method
    fkobj = db.schema.foreign_key(fk)
    p, _, _ = method._fk_plan(db.schema, fkobj, Fraction(plan.rho_of(fk)), multipliers(db.schema))
    assert p.planned() == Fraction(plan.rho_of(fk))
    _check_release_costs(p, ledger)
    assert synth.accountant_.spent(fk) <= plan.rho_of(fk)
    assert any("Alg. 2 line 10" in e.label for e in ledger)


def test_C4_a_child_without_attributes_spends_its_whole_plan() -> None:
    """C4 with ``a = 0`` (persons with no attribute but their FK): the refining share is passed
    on (docs §4.4), so the group sizes and the R-scores are released at ``ρ·f/(f_n + f_R +
    f_init)`` (before the rule: ``ρ·f``, with f_refine = 40 % of ρ never spent), every release
    costs the planned ρ of its kind, and the realised total stays within the plan."""
    db = household_db(400, seed=3)
    persons = db["persons"][["pid", "hid"]]
    s = db.schema
    schema = Schema((s.table("households"), Table("persons", ("pid",), ())), s.foreign_keys,
                    s.privacy_unit, name="toy-no-person-attributes")
    db = Database(schema, {"households": db["households"], "persons": persons})
    synth, syn, plan = fit_sample(db, 8.0, seed=1, lam=1.0)
    integrity(db, syn)
    fk = plan.edges[0].name
    p, _, _ = synth.database_.method._fk_plan(schema, schema.foreign_key(fk),
                                              Fraction(plan.rho_of(fk)), multipliers(schema))
    assert p.a == 0 and p.J == 0 and p.planned() == Fraction(plan.rho_of(fk))
    _check_release_costs(p, synth.ledger_)
    pre = acc.PRESETS["relviz"]
    kept = pre.f_n + pre.f_R + pre.f_init
    by_line = {e.label.split(":")[0]: e.rho for e in synth.ledger_}
    assert by_line["Alg. 1 line 1"] == Fraction(plan.rho_of(fk)) * pre.f_n / kept
    assert by_line["Alg. 1 line 2"] == Fraction(plan.rho_of(fk)) * pre.f_R / kept
    assert synth.accountant_.spent(fk) <= plan.rho_of(fk)


def test_C6_same_seed_same_database(household_fit) -> None:  # noqa: ANN001
    """C6: the same seed gives identical tables; another seed different ones."""
    _, synth, syn, _ = household_fit
    again = synth.sample()
    for t in syn.table_names:
        pd.testing.assert_frame_equal(syn[t], again[t])
    other = synth.sample(random_state=99)
    assert not syn["persons"].equals(other["persons"])


# -- N. nullable FKs (relviz's addition, docs §5.4) --------------------------------------------------

NULL_FK = "persons.hid->households"


@pytest.fixture(scope="module")
def nullable_fit():
    """households ← persons with 20 % of the persons' FK null (distributed as the others), a
    large ε (λ = 1) and the default iteration counts (the model of one individual that the null
    rows are drawn from must be fitted to convergence for the attribute check)."""
    db = with_nullable(household_db(800, seed=3), NULL_FK, 0.2, seed=4)
    synth, syn, plan = fit_sample(db, 20.0, seed=5, lam=1.0, fit_iters=300, refit_iters=100)
    return db, synth, syn, plan


def test_N1_null_count_release_and_exact_plan(nullable_fit) -> None:  # noqa: ANN001
    """N1: the fit releases the null-children count once, labelled "relviz: children with a null
    FK", with the declared Δ_null (max(1, τ_m) = 1 here: a null person depends on no household)
    and ρ = ρ_FK/50; every other release costs its planned per-release ρ (C4's kinds, on the
    remaining 49/50); the plan sums exactly to the FK's ρ and the ledger stays within it."""
    db, synth, _, plan = nullable_fit
    rho = Fraction(plan.rho_of(NULL_FK))
    method = synth.database_.method
    p, _, _ = method._fk_plan(db.schema, db.schema.foreign_key(NULL_FK), rho, multipliers(db.schema))
    assert p.planned() == rho and p.rho_null == rho / 50
    null = [e for e in synth.ledger_ if e.label == "relviz: children with a null FK"]
    assert len(null) == 1
    assert null[0].sensitivity == p.sens.null == 1.0 and null[0].rho == p.rho_null
    assert null[0].component == NULL_FK and null[0].sigma == pytest.approx(p.sigma_null, rel=1e-9)
    _check_release_costs(p, [e for e in synth.ledger_ if e.component == NULL_FK])
    assert synth.accountant_.spent(NULL_FK) <= rho


def test_N2_null_rows_count_integrity_and_attributes(nullable_fit) -> None:  # noqa: ANN001
    """N2: the synthetic persons hold round(ñ_null) rows with a null FK, ñ_null = n_null +
    N(0, σ_null²): |synthetic − real| ≤ 4σ_null + 1 (a 4σ Gaussian tail, 6·10⁻⁵, plus the
    rounding; the clamp at 0 only shrinks the gap); the output passes the integrity checks
    (Database.validate included); the null rows' attributes follow the children's distribution:
    total variation ≤ 0.1 on each attribute's 1-way marginal against all real persons (at ε = 20
    the model's own error measured on 20,000 draws was ≤ 0.031; ~390 null rows add a sampling
    error of about 0.03)."""
    db, synth, syn, plan = nullable_fit
    integrity(db, syn)
    real_null = int(db["persons"]["hid"].isna().sum())
    syn_null = syn["persons"]["hid"].isna()
    sigma = next(e.sigma for e in synth.ledger_ if e.label == "relviz: children with a null FK")
    assert 0 < real_null and abs(int(syn_null.sum()) - real_null) <= 4 * sigma + 1, \
        (int(syn_null.sum()), real_null, sigma)
    assert synth.database_.fits[NULL_FK].n_null == pytest.approx(synth.database_.totals["persons"]
                                                                - synth.database_.fits[NULL_FK]
                                                                .n_noisy @ np.arange(5))
    rows = syn["persons"][syn_null.to_numpy()]
    for a in ("age", "emp", "edu"):
        want = db["persons"][a].value_counts(normalize=True)
        got = rows[a].value_counts(normalize=True)
        tvd = 0.5 * float(want.sub(got, fill_value=0).abs().sum())
        assert tvd <= 0.1, (a, tvd)


def test_N3_same_seed_same_database(nullable_fit) -> None:  # noqa: ANN001
    """N3: the same seed gives identical tables (null rows included); another seed differs."""
    _, synth, syn, _ = nullable_fit
    again = synth.sample()
    for t in syn.table_names:
        pd.testing.assert_frame_equal(syn[t], again[t])
    assert not syn["persons"].equals(synth.sample(random_state=7)["persons"])


@pytest.mark.parametrize("which", ["items.product_id->products", "items.order_id->orders",
                                   "both", "chain"])
def test_N4_nullable_fk_in_merge_and_chain(which: str) -> None:
    """N4: MERGE with a nullable FK (the second FK, to a public parent; the first FK, to the
    private parent; both): null rows of either copy are ordinary rows, a row null in one FK gets a
    parent (or a null where that FK is nullable) in the other, and the output passes the
    integrity checks; in a chain, persons with a null household still get trips."""
    if which == "chain":
        db = with_nullable(chain_db(150, seed=4), "persons.hid->households", 0.25)
    else:
        db = shop_db()
        for fk in (["items.product_id->products", "items.order_id->orders"] if which == "both"
                   else [which]):
            db = with_nullable(db, fk, 0.2, seed=len(fk))
    synth, syn, plan = fit_sample(db, 20.0, seed=1, lam=1.0)
    integrity(db, syn)
    for fk in db.schema.private_foreign_keys:
        nulls = int(syn.parent_index(fk).__lt__(0).sum())
        assert (nulls > 0) == fk.nullable, (fk.name, nulls)
    if which == "chain":
        persons = syn["persons"]
        null_pids = set(persons.loc[persons["hid"].isna(), "pid"])
        assert null_pids and set(syn["trips"]["pid"]) & null_pids


def _pair_pearson(db: Database, col: str) -> float:
    """Pearson correlation of ``col`` over ordered pairs of distinct co-members."""
    p = db["persons"]
    m = p.merge(p, on="hid")
    m = m[m["pid_x"] != m["pid_y"]]
    return float(np.corrcoef(m[f"{col}_x"], m[f"{col}_y"])[0, 1])


def test_F2_near_noiseless_sanity() -> None:
    """F2: at ε = 10⁶ (δ = 10⁻⁶, λ = 1) on a toy with a latent household type and spouses of equal
    age, PrivPetal's census query error (PrivLava/PrivPetal workload, c ∈ {1, 2}, a ∈ {1, 2}) is at
    most half the independent + random-linking baseline's, and the intra-group Pearson
    coefficient of age is within 0.05 of the truth."""
    from relviz.evaluate.census_queries import census_error, generate_census_queries

    db = household_db(1500, seed=5)
    _, syn, _ = fit_sample(db, 1e6, seed=0, lam=1.0, fit_iters=300, refit_iters=100, n_mrf=6, k=100)
    base = RelationalSynthesizer(Plan.preset(db.schema, "baseline-80-20", 1e6, 1e-6),
                                 random_state=0).fit(db).sample()
    errs = {"petal": [], "base": []}
    for c in (1, 2):
        for a in (1, 2):
            q = generate_census_queries(db.schema, n=300, c=c, a=a, seed=1, max_size=4)
            errs["petal"].append(census_error(db, syn, q))
            errs["base"].append(census_error(db, base, q))
    assert np.mean(errs["petal"]) <= 0.5 * np.mean(errs["base"]), errs
    assert abs(_pair_pearson(syn, "age") - _pair_pearson(db, "age")) < 0.05


def test_F3_error_falls_with_epsilon() -> None:
    """F3: the mean census query error at ε = 3.2 is below that at ε = 0.2 (3 seeds averaged, a
    2,000-household toy, λ = 1)."""
    from relviz.evaluate.census_queries import census_error, generate_census_queries

    db = household_db(2000, seed=7)
    qs = [generate_census_queries(db.schema, n=200, c=c, a=1, seed=2, max_size=4) for c in (1, 2)]
    mean = {}
    for eps in (0.2, 3.2):
        mean[eps] = np.mean([census_error(db, fit_sample(db, eps, seed=s, lam=1.0)[1], q)
                             for s in range(3) for q in qs])
    assert mean[3.2] < mean[0.2], mean


def test_plan_registry_and_problems() -> None:
    """The method is registered; Plan.default makes one edge per private FK (and a table for a
    private table in no FK); the row unit, missing caps, self-referential FKs and oversized caps
    are plan problems in words, a nullable FK is not (relviz's addition, docs §5.4: its preview
    adds the σ of the null-children count); noise_scales previews every σ without data."""
    from relviz.relational import available_databases

    assert "privpetal" in available_databases()
    db = household_db(50)
    plan = Plan.default(db.schema, 1.0, 1e-6, method="privpetal")
    assert [(c.name, c.kind, c.method) for c in plan.components] == \
        [("persons.hid->households", "edge", "privpetal")]
    assert plan.resolved_conversion() == "gdp" and not plan.problems(db.schema)
    sig = plan.noise_preview(db.schema)[0].sigmas
    assert sig["Alg. 1 line 1 group sizes σ_n"] > 0 and len(sig) == 8
    s = db.schema
    row = s.with_privacy_unit(PrivacyUnit(None, dict(s.privacy_unit.caps)))
    assert any(p.kind == "unsupported_unit" for p in Plan.default(row, 1.0, 1e-6, method="privpetal")
               .problems(row))
    nocap = s.with_privacy_unit(PrivacyUnit("households", {}))
    assert any(p.kind == "missing_cap" for p in plan.problems(nocap))
    big = s.with_privacy_unit(PrivacyUnit("households", {"persons.hid->households": 500}))
    assert any(p.kind == "cap_too_large" for p in plan.problems(big))
    assert standalone(chain_schema()) == []
    nullable = with_nullable(db, "persons.hid->households", 0.2).schema
    nplan = Plan.default(nullable, 1.0, 1e-6, method="privpetal")
    assert not nplan.problems(nullable)
    nsig = nplan.noise_preview(nullable)[0].sigmas
    assert len(nsig) == 9 and nsig["relviz: children with a null FK σ"] > 0
    assert nsig["Alg. 1 line 1 group sizes σ_n"] == pytest.approx(
        sig["Alg. 1 line 1 group sizes σ_n"] * math.sqrt(50 / 49), rel=1e-12)
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    selfref = Schema((Table("persons", ("pid",), (cat("age", 3),)),),
                     (ForeignKey("persons", ("mother",), "persons", ("pid",), nullable=True),),
                     PrivacyUnit("persons", {"persons.mother->persons": 2}))
    assert any(p.kind == "unsupported_fk" and "self-referential" in p.message
               for p in Plan.default(selfref, 1.0, 1e-6, method="privpetal").problems(selfref))


def test_per_fk_parameters_and_cancel() -> None:
    """An edge's own parameters configure its Algorithm 1 run (here: the authors' census preset,
    30 % refinement with T2 = 2 NPMs per target, so σ_M grows on that FK only) and bad ones are
    plan problems; cancelling from a progress callback stops the fit with CancelledError at the
    next step, with the ledger within the plan."""
    from relviz.errors import CancelledError

    db = shop_db(n_orders=60)
    plan = Plan.default(db.schema, 4.0, 1e-6, method="privpetal")
    fk = "items.order_id->orders"
    base = {r.name: r.sigmas for r in plan.noise_preview(db.schema)}
    edited = plan.with_params(fk, preset="ri-census")
    new = {r.name: r.sigmas for r in edited.noise_preview(db.schema)}
    key = next(k for k in new[fk] if k.startswith("Alg. 2 line 10 new NPMs σ_M"))
    assert new[fk][key] > base[fk][key] and new["orders.store_id->stores"] == base["orders.store_id->stores"]
    assert any(p.kind == "bad_parameter" for p in plan.with_params(fk, preset="nope").problems(db.schema))
    synth = RelationalSynthesizer(edited.with_params(fk, **SMALL), random_state=0)
    seen = []

    def progress(e) -> None:  # noqa: ANN001
        seen.append(e.message)
        if e.message.startswith("Alg. 2"):
            synth.cancel()

    synth.progress = progress
    with pytest.raises(CancelledError):
        synth.fit(db)
    assert any(m.startswith("Alg. 2") for m in seen)
    spent = synth.accountant_.spent()
    assert 0 < spent <= Fraction(synth.accountant_.rho_total)


def test_an_edge_without_parameters_runs_on_the_defaults_not_the_first_edge_s() -> None:
    """Parameters set on the plan's first edge configure that FK only: another edge without any
    keeps the defaults (its noise scales and its Algorithm 1 parameters), while the table
    encodings (``splits``) are shared. Until stop 47 the second edge inherited the first's
    (docs/methods/privpetal.md §6.14)."""
    from relviz.relational.privpetal.method import PrivPetal

    db = shop_db(n_orders=60)
    plan = Plan.default(db.schema, 4.0, 1e-6, method="privpetal")
    first, second = (e.name for e in plan.edges[:2])
    assert plan.components[0].name == first
    base = {r.name: r.sigmas for r in plan.noise_preview(db.schema)}
    edited = plan.with_params(first, preset="ri-census", lam=0.25, merge_from=1,
                              splits={"stores.region": 0})
    new = {r.name: r.sigmas for r in edited.noise_preview(db.schema)}
    assert new[first] != base[first] and new[second] == base[second]
    owner = PrivPetal(**edited.component_of_method("privpetal").params)
    comp = {c.name: c for c in edited.components}
    own, other = owner.for_component(comp[first]), owner.for_component(comp[second])
    assert (own.lam, own.merge_from, own.preset) == (0.25, 1, "ri-census")
    defaults = PrivPetal()
    assert other.params() == defaults.params()
    assert (other.lam, other.merge_from, other.preset) == (defaults.lam, None, defaults.preset)
    assert other.splits == own.splits == {"stores.region": 0}


def test_a_table_encoding_on_another_edge_than_the_first_is_a_plan_problem() -> None:
    """The table encodings (``splits``, ``split_above``, ``public_context``) come from the first
    PrivPetal edge, so a differing one on another edge would be ignored: the plan check refuses
    it and names the first edge. Algorithm 1 parameters on another edge are that edge's own (no
    problem), and an encoding repeated with the first edge's value is none either."""
    db = shop_db(n_orders=60)
    plan = Plan.default(db.schema, 4.0, 1e-6, method="privpetal")
    first, second = (e.name for e in plan.edges[:2])
    plan = plan.with_params(first, splits={"stores.region": 0})

    def ignored(p: Plan) -> list:
        return [x for x in p.problems(db.schema) if x.kind == "ignored_parameters"]

    assert ignored(plan) == []
    assert ignored(plan.with_params(second, lam=0.5, merge_from=2)) == []
    assert ignored(plan.with_params(second, splits={"stores.region": 0})) == []
    bad = ignored(plan.with_params(second, split_above=12))
    assert [x.column for x in bad] == [second] and first in bad[0].message \
        and "split_above=12" in bad[0].message
    with pytest.raises(PlanError, match="would be ignored"):
        plan.with_params(second, splits={"stores.region": 2}).validate(db.schema)


def test_parameters_on_the_first_edge_do_not_flatten_another_edge_s_group_sizes() -> None:
    """End to end, near noiseless (ε = 10⁶: every release's σ is far below one count, so the
    fitted ``p(size | kind)`` is the true one, a point mass at ``1 + kind``): with ``merge_from = 1``
    on the first edge only (``orders → stores``), ``items → orders`` still gives every order of kind
    k exactly k + 1 items, on two seeds (0.1 allows a few stray orders of 150). Before stop 47 the
    second edge ran on the first's parameters, merged every size slice of its NPMs, and drew
    sizes independently of kind (means ≈ 2.05 for every kind)."""
    db = shop_db(0, 150)
    plan = Plan.default(db.schema, 1e6, 1e-6, method="privpetal")
    first = plan.components[0].name
    assert first == "orders.store_id->stores"
    plan = plan.with_params(first, **SMALL, merge_from=1)
    for seed in (0, 1):
        syn = RelationalSynthesizer(plan, random_state=seed).fit(db).sample()
        orders, items = syn["orders"], syn["items"]
        size = items.groupby("order_id").size().reindex(orders["order_id"], fill_value=0).to_numpy()
        kind = orders["kind"].to_numpy()
        means = [float(size[kind == k].mean()) for k in range(3)]
        assert np.allclose(means, [1.0, 2.0, 3.0], atol=0.1), (seed, means)


def test_private_rows_read_only_through_the_measurement_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """C5, end to end: during a PrivPetal fit and sample, private rows and links are read only by
    relviz.privacy.measure (the curator), never by the method's own modules."""
    import sys

    reads: list[str] = []
    getitem, parent_index = Database.__getitem__, Database.parent_index

    def who() -> str | None:
        f = sys._getframe(2)
        while f is not None:
            mod = f.f_globals.get("__name__", "")
            if mod == "relviz.privacy.measure" or f.f_code.co_name in ("problems", "validate", "__init__",
                                                                         "_fk_problems"):
                return None
            if mod.startswith("relviz.") and mod != "relviz.database":
                return f"{mod}.{f.f_code.co_name}"
            f = f.f_back
        return None

    def guarded_getitem(self: Database, name: str):  # noqa: ANN202
        if name in self.schema.table_names and not self.schema.table(name).public and who():
            reads.append(f"{who()} read {name}")
        return getitem(self, name)

    def guarded_parent_index(self: Database, fk):  # noqa: ANN001, ANN202
        if who():
            reads.append(f"{who()} read the links of {fk}")
        return parent_index(self, fk)

    db = shop_db(n_orders=80)
    monkeypatch.setattr(Database, "__getitem__", guarded_getitem)
    monkeypatch.setattr(Database, "parent_index", guarded_parent_index)
    fit_sample(db, 5.0, seed=0)
    assert reads == []
    from relviz.relational.privpetal import method as petal_method  # the guard is not vacuous

    exec("def _probe(d):\n    return d['orders']", petal_method.__dict__)
    petal_method.__dict__.pop("_probe")(db)
    assert reads and "orders" in reads[0]


def test_starved_initial_store_warns_in_words() -> None:
    """When no inter-relational or intra-group NPM is λ-useful (Alg. 5 steps 3–4 release
    nothing), the fit says so and names the fix (docs/methods/privpetal.md §7): 40 groups at
    ρ = 1/2 and λ = 10⁶ make the usefulness limit L = ñ/(λσ√(2/π)) < 1 cell, so nothing
    qualifies; at λ = 10⁻⁶ L is capped by L_max and the same run releases NPMs without a warning."""
    import warnings

    run, _ = _run(lam=1e6)
    with pytest.warns(UserWarning, match=r"no inter-relational or intra-group NPM is λ-useful") as rec:
        run.run()
    assert "Plan.with_params(fk, lam=1" in str(rec[0].message)
    run, _ = _run(lam=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        run.run()
    assert run.queries > 0 and not run.starved


def test_consistent_sizes_keep_both_totals_unbiased() -> None:
    """Alg. 1 line 1 post-processing (docs §8 D18): over 400 noise draws (σ = 8 on 16 size slots,
    10 of them empty) the mean number of groups and of children stay within 4 standard errors
    (+1 % for the feasibility clip) of the truth, while clamping at 0 alone inflates the children
    by > 40 % (Σ_s s·E[max(σZ, 0)] over the empty slots, ≈ 0.4σ·Σ s); the result is ≥ 0."""
    from relviz.relational.privpetal.algorithms import consistent_sizes

    rng = np.random.default_rng(0)
    true = np.array([0, 40, 50, 45, 30, 20, 10, 5, 3, 2, 0, 0, 0, 0, 0, 0], float)
    s = np.arange(16)
    got, clamp = [], []
    for _ in range(400):
        y = true + rng.normal(0, 8, 16)
        x = consistent_sizes(y)
        assert (x >= 0).all()
        got.append((x.sum(), s @ x))
        clamp.append((np.maximum(y, 0).sum(), s @ np.maximum(y, 0)))
    got, clamp = np.array(got), np.array(clamp)
    se = got.std(axis=0) / np.sqrt(len(got))
    assert abs(got[:, 0].mean() - true.sum()) <= 4 * se[0] + 0.01 * true.sum()
    assert abs(got[:, 1].mean() - s @ true) <= 4 * se[1] + 0.01 * (s @ true)
    assert clamp[:, 1].mean() > 1.4 * (s @ true)


def test_auto_lambda_interpolates_between_small_data_and_the_paper() -> None:
    """λ = None: 6·√(ñ/616,115) clipped to [1, 6] — the paper's 6 at its census size and above,
    1 on a few thousand groups, monotone in between (docs/methods/privpetal.md §5.1) — then
    lowered by ``admitting_lambda`` where needed (next test)."""
    from relviz.relational.privpetal.algorithms import PAPER_GROUPS, auto_lambda

    assert auto_lambda(PAPER_GROUPS) == pytest.approx(6.0) and auto_lambda(10 * PAPER_GROUPS) == 6.0
    assert auto_lambda(5000) == 1.0 and auto_lambda(0) == 1.0
    xs = [auto_lambda(n) for n in (2e4, 5e4, 1e5, 3e5)]
    assert all(1.0 <= a < b <= 6.0 for a, b in zip(xs, xs[1:]))
    run, _ = _run(lam=None)
    run.run()
    n = float(run.n_noisy.sum())
    assert run.lam == auto_lambda(n) == 1.0
    assert run.lam_one <= run.lam  # one-attribute candidates: lowered where they would not pass


def test_admitting_lambda_lowers_lambda_until_every_attribute_is_measurable() -> None:
    """λ = None on small data: the λ of the one-attribute candidates is lowered (to no less than
    0.15) just enough that every ``{size, A}`` of the PrivMRF-sub runs passes the usefulness
    test, and left alone where they all pass already."""
    from relviz.relational.privpetal.accounting import usefulness_limit
    from relviz.relational.privpetal.algorithms import LAMBDA_MIN, admitting_lambda

    needs = [(60.0, 44), (100.0, 110)]  # (σ, cells) per attribute
    assert admitting_lambda(1.0, 1e7, needs) == 1.0  # plenty of groups: unchanged
    lam = admitting_lambda(1.0, 5_000.0, needs)
    assert LAMBDA_MIN < lam < 1.0
    assert all(c < usefulness_limit(5_000.0, sigma, lam, 50_000) for sigma, c in needs)
    assert admitting_lambda(1.0, 5_000.0 * 1.01, needs) > lam  # monotone in ñ
    assert admitting_lambda(1.0, 10.0, needs) == LAMBDA_MIN  # the floor
    assert admitting_lambda(1.0, 5_000.0, []) == 1.0
    # on the tiny FK of these tests λ = 1 measures no one-attribute NPM of the individuals
    # (Alg. 5 (2)); λ = None lowers their λ (the other candidates keep λ = 1) and measures them
    picks = {}
    for lam in (1.0, None):
        run, a = _run(lam=lam)
        run.run()
        picks[lam] = [e.label for e in a.ledger if e.label.startswith("Alg. 5 (2)") and "CFS" in e.label]
    assert not picks[1.0] and picks[None]
    assert run.lam == 1.0 and LAMBDA_MIN <= run.lam_one < 1.0


# -- per-slice weights of NPM measurements (relviz, docs §8 D25) -------------------------------------

def test_slice_weights_undo_the_rescaling_factor() -> None:
    """A slice rescaled by ``c = ñ_s / Σ noisy`` has noise variance ``σ²c²`` against ``σ²``
    before; its weight is ``min(1, 1/c)``; masked slices weigh 0; roll-ups keep the ratio."""
    sigma2 = 4.0
    c = np.array([np.inf, 0.5, 1.0, 2.0, 400.0])
    var = sigma2 * c ** 2
    masked = np.array([False, False, False, False, False])
    e = npm.Entry(np.zeros((5, 2)), var, masked, True, "measured", np.full(5, sigma2))
    assert np.allclose(e.slice_weights(), [1.0, 1.0, 1.0, 0.5, 1 / 400])
    e.masked[2] = True
    assert e.slice_weights()[2] == 0.0
    store = npm.NPMStore(4)
    key = npm.canonical([("H", 0), ("I", 1, 0)])[0]
    store.put(key, np.ones((5,) + npm.key_dims(key, (2, 3), (2,))), var, np.zeros(5, bool), direct=True,
              provenance="measured", base=np.full(5, sigma2))
    rolled = store.entries[npm.canonical([("I", 1, 0)])[0]]
    assert np.allclose(rolled.slice_weights()[1:], [1.0, 1.0, 0.5, 1 / 400])
    assert npm.Entry(np.zeros(5), var, np.zeros(5, bool), True, "group sizes").slice_weights()[1:].tolist() == [1.0] * 4


def test_weighted_fit_reaches_the_weighted_least_squares_optimum() -> None:
    """Mirror descent with per-slice weights ``w`` minimises ``½ Σ ‖w·(μ − y)‖²``: for two
    measurements of one variable with weights 1 and ½ the optimum is the mean of the ``y`` with
    weights ``w²`` = 1 and ¼, (12, 8) and (2, 18) → (10, 10). (A gradient of ``w·r`` instead of
    ``w²·r`` would stop at the ``w``-weighted mean, (8.67, 11.33).)"""
    s = ("S",)
    dom = {s: 2}
    model = mrf.Model([s], dom, mrf.JTree([(s,)], [], dom), 20.0)
    model.add(mrf.Measurement((s,), np.array([12.0, 8.0]), np.array([1.0, 1.0])))
    model.add(mrf.Measurement((s,), np.array([2.0, 18.0]), np.array([0.5, 0.5])))
    model.fit(2000, early_stop=False)
    assert np.allclose(model.marginal([s]), [10.0, 10.0], atol=1e-3)


def test_an_amplified_slice_no_longer_drags_the_size_marginal() -> None:
    """The census failure in miniature: sizes ``ñ = (0, 100, 20)`` measured alone and inside an
    NPM whose size-2 slice had a noisy total of 0.05, so its rescaling by ``c = 400`` made it
    ``(9000, −8980)``. Unweighted (the spec's loss) the fit moves mass to size 2 to chase 9,000;
    weighted by ``1/c`` the size marginal stays within 1 % of ``ñ``."""
    S, H = ("S",), ("H", 0)
    dom = {S: 3, H: 2}
    n = np.array([0.0, 100.0, 20.0])
    npm_y = np.array([[0.0, 0.0], [50.0, 50.0], [9000.0, -8980.0]])
    var = np.array([np.inf, 1.0, 400.0 ** 2])
    e = npm.Entry(npm_y, var, np.array([True, False, False]), True, "measured", np.ones(3))

    def fit(weights: np.ndarray) -> np.ndarray:
        model = mrf.Model([S, H], dom, mrf.JTree([(S, H)], [], dom), float(n.sum()))
        model.add(mrf.Measurement((S,), n.copy()))
        model.add(mrf.Measurement((S, H), npm_y, weights))
        model.fit(300)
        return model.marginal([S])

    weighted = fit(e.slice_weights())
    assert np.allclose(weighted, n, rtol=0.01, atol=1.0), weighted
    unweighted = fit((~e.masked).astype(np.float64))
    assert unweighted[2] > 2 * n[2], unweighted


# -- mixed mode: FKs PrivPetal does not model are linked (docs §5.5) -------------------------------

def _recapped(db: Database, caps: dict, tuple_unit: bool = False) -> Database:
    """``db`` with the privacy unit's caps replaced by ``caps`` (same entity, or the tuple unit)."""
    unit = PrivacyUnit(None, caps, neighbour="tuple") if tuple_unit else \
        PrivacyUnit(db.schema.privacy_unit.entity, caps)
    s = db.schema.with_privacy_unit(unit)
    return Database(s, {t: db[t] for t in s.table_names})


def _fit_mixed(db: Database, eps: float, seed: int = 0) -> tuple:
    plan = Plan.default(db.schema, eps, 1e-6, method="privpetal")
    for e in plan.edges:
        if e.method == "privpetal":
            plan = plan.with_params(e.name, **SMALL, lam=1.0)
    synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
    return synth, synth.sample(), plan


def test_mixed_mode_links_an_uncapped_fk_to_a_public_parent() -> None:
    """An FK to a public parent with no declared cap is linked — with the degree method, since
    PrivPetal generates the child (items); listed by ``Plan.substitutions`` with the reason —
    the other FKs are modelled; the output keeps every
    F1 property; the linker's releases are in the ledger under its component and every component
    spends at most its planned ρ; ``public="privpetal"`` links nothing (the missing cap is then a
    plan problem, as before)."""
    from relviz.relational.privpetal.method import PrivPetal

    db = shop_db(seed=3)
    caps = dict(db.schema.privacy_unit.caps)
    del caps["items.product_id->products"]
    db = _recapped(db, caps)
    plan = Plan.default(db.schema, 20.0, 1e-6, method="privpetal")
    # the linked FK gets Plan.default's FK share (1/3 over 3 private FKs), the two modelled
    # relations share the rest
    assert {c.name: (c.method, c.share) for c in plan.edges} == {
        "orders.store_id->stores": ("privpetal", Fraction(4, 9)),
        "items.order_id->orders": ("privpetal", Fraction(4, 9)),
        "items.product_id->products": ("degree", Fraction(1, 9))}
    subs = plan.substitutions(db.schema, "privpetal")
    assert len(subs) == 1 and "no declared cap N" in subs[0]
    assert not plan.problems(db.schema)
    bi = plan.with_method("items.product_id->products", "biadjacency")  # learns on synthetic tables
    assert any(p.kind == "unsupported_linker" and "PrivPetal" in p.message for p in bi.problems(db.schema))
    sig = next(p.sigmas for p in plan.noise_preview(db.schema) if p.name == "items.product_id->products")
    assert sig and all(v > 0 for v in sig.values())
    synth, syn, plan = _fit_mixed(db, 20.0, seed=1)
    integrity(db, syn)
    assert set(synth.database_.linkers) == {"items.product_id->products"}
    linked = [e for e in synth.ledger_ if e.component == "items.product_id->products"]
    assert linked and not any(e.label.startswith("Alg. ") for e in linked)
    for c in plan.components:
        assert 0 < synth.accountant_.spent(c.name) <= plan.rho_of(c.name), c.name
    # the degree linker keeps the product popularity that an unlinked draw would lose
    real = np.bincount(db.parent_index(db.schema.foreign_key("items.product_id->products")), minlength=30)
    fake = np.bincount(syn.parent_index(syn.schema.foreign_key("items.product_id->products")), minlength=30)
    assert np.corrcoef(real, fake)[0, 1] > 0.5
    strict = PrivPetal().default_components(db.schema, public="privpetal")
    assert all(m == "privpetal" for _, k, m, _ in strict if k == "edge")
    splan = Plan(20.0, 1e-6, tuple(plan.components[0].__class__(n, k, m, sh) for n, k, m, sh in strict))
    assert any(p.kind == "missing_cap" and p.column == "items.product_id->products"
               for p in splan.problems(db.schema))


def test_mixed_mode_links_an_fk_whose_cap_is_above_the_slot_limit() -> None:
    """A cap above ``MAX_CAP`` on an FK to a private parent (households ← persons ← trips, trips
    per person capped at 100) is linked with the degree method rather than refused: persons are
    still generated by their modelled FK, trips get their own single-table model (in no modelled
    FK) and are linked to the synthetic persons within the cap. A plan that gives a linker to a
    modellable FK to a private parent is refused in words."""
    from relviz.relational.privpetal.method import MAX_CAP

    db = chain_db(200, seed=5)
    db = _recapped(db, {"persons.hid->households": 3, "trips.pid->persons": MAX_CAP + 36})
    plan = Plan.default(db.schema, 20.0, 1e-6, method="privpetal")
    assert {c.name: c.method for c in plan.components} == {
        "persons.hid->households": "privpetal", "trips.pid->persons": "degree", "trips": "mst"}
    assert "above 64" in " ".join(plan.substitutions(db.schema, "privpetal"))
    assert not plan.problems(db.schema)
    synth, syn, plan = _fit_mixed(db, 20.0, seed=2)
    integrity(db, syn)
    assert set(synth.database_.linkers) == {"trips.pid->persons"} and set(synth.database_.singles) == {"trips"}
    assert len(syn["persons"]) > 0 and len(syn["trips"]) > 0
    assert (syn.parent_index(syn.schema.foreign_key("trips.pid->persons")) >= 0).all()
    for c in plan.components:
        assert 0 < synth.accountant_.spent(c.name) <= plan.rho_of(c.name), c.name
    base = chain_db(50, seed=5)
    bad = Plan.default(base.schema, 1.0, 1e-6, method="privpetal")
    bad = Plan(1.0, 1e-6, tuple(c if c.name != "trips.pid->persons" else
                               c.__class__(c.name, c.kind, "degree", c.share) for c in bad.components))
    assert any(p.kind == "mixed_methods" and "cap is above" in p.message for p in bad.problems(base.schema))


def test_public_parent_groups_are_kept_exactly() -> None:
    """The number of groups of a public referenced table is public: the group-size estimate keeps
    it exactly (``consistent_sizes(noisy, groups)``), where the noisy sum of ``N + 1`` noisy
    counts could be far off or ≤ 0 (which left no group at all); without it, the noisy sum."""
    from relviz.relational.privpetal.algorithms import consistent_sizes

    rng = np.random.default_rng(0)
    true = np.bincount(rng.integers(15, 35, 12), minlength=61).astype(float)
    y = true + rng.normal(0, 6.8, 61)
    # the totals are heavily weighted rows of a least-squares problem: met to ~1e-5 relative
    assert consistent_sizes(y, 12).sum() == pytest.approx(12, rel=1e-4)
    assert consistent_sizes(y).sum() == pytest.approx(max(y.sum(), 0), rel=1e-3)
    # an infeasible noisy children total (here Σ s·y_s = 280 − 60·20 < 0): dropped, not clipped
    # to 0 (which gave no child); the projection onto {x ≥ 0, Σ x = 12} then recovers the
    # true sizes, since only the size-60 count (true 0) was pushed below 0
    bad = true.copy()
    bad[60] -= 20
    x = consistent_sizes(bad, 12)
    s = np.arange(61)
    assert s @ bad < 0 and x.sum() == pytest.approx(12, rel=1e-4)
    assert s @ x == pytest.approx(s @ true, rel=1e-3)
    synth, _, _ = fit_sample(shop_db(seed=2), 20.0, seed=3, lam=1.0)
    for fk_name, n in (("orders.store_id->stores", 12), ("items.product_id->products", 30)):
        assert synth.database_.fits[fk_name].n_noisy.sum() == pytest.approx(n, rel=1e-4)


def test_decompose_with_no_group() -> None:
    """DECOMPOSE of an empty flattened relation (an existing referenced table with no row, e.g.
    a generated parent whose estimated size was 0) gives no child instead of failing."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _decompose

    f = SimpleNamespace(idom=(3, 2), N=4)
    child, parent = _decompose({}, np.zeros(0, np.int64), np.zeros(0, np.int64), f)
    assert child.shape == (0, 2) and parent.shape == (0,)
    size = np.array([2, 0, 1])
    cols = {("I", i, k): np.arange(3) * 10 + i + k for i in range(1, 5) for k in range(2)}
    child, parent = _decompose(cols, size, np.array([2, 0, 1]), f)
    # row perm[r] becomes parent r: parent 0 ← row 2 (size 1), parent 1 ← row 0 (size 2)
    assert parent.tolist() == [0, 1, 1]
    assert child[:, 0].tolist() == [21, 1, 2]


# ------------------------------------------------------------------------------------------------
# The noise-aware gate of Alg. 5 (3) (docs/methods/privpetal.md §5.7)
# ------------------------------------------------------------------------------------------------

def _gate_fk(seed: int, planted: bool, n_h: int = 20_000, N: int = 4):  # noqa: ANN202, N803
    """Households with 2 attributes (3 and 4 values), 0…N members with 3 attributes (3, 4, 5
    values), all independent; ``planted``: member attribute 0 copies household attribute 0 with
    probability 0.8."""
    rng = np.random.default_rng(seed)
    hdom, idom = (3, 4), (3, 4, 5)
    hc = np.stack([rng.integers(0, d, n_h) for d in hdom], axis=1)
    parent = np.repeat(np.arange(n_h), rng.integers(0, N + 1, n_h))
    ic = np.stack([rng.integers(0, d, len(parent)) for d in idom], axis=1)
    if planted:
        copy = rng.random(len(parent)) < 0.8
        ic[copy, 0] = hc[parent[copy], 0]
    return private(hc, ic, parent, hdom, idom, N), np.bincount(
        np.bincount(parent, minlength=n_h), minlength=N + 1).astype(float)


def _gate_run(priv: npm.PrivateFK, seed: int, rho: Fraction = Fraction(1, 10)):  # noqa: ANN202
    a = Accountant(rho, delta=1e-6)
    budget = Budget(a, "fk", rho, np.random.default_rng(seed))
    plan = acc.plan_fk(rho, h=3, a=3, N=priv.N, o=2, sens=acc.FKSensitivity(1, 0))
    p = alg.Params(lam=1.0, k=10, fit_iters=40, refit_iters=10, t1_picks=2, t1_iters=2, n_mrf=4)
    run = alg._Run("fk", priv, budget, plan, p, ["h0", "h1"], ["i0", "i1", "i2"],
                   lambda f, m="": None, seed)
    return run, a


def test_gate_null_bound_covers_independent_pairs() -> None:
    """The independence bound of :meth:`_Run.null_rscore` is an upper bound on the expected exact
    R-score (Eq. 3) of a household–member pair that is independent: over 5 seeds of 20,000
    households the mean exact score of each such pair is at most the bound plus 3 standard errors
    of that mean, and above 0.3 of it (the bound is of the right order: for uniform margins it is
    the asymptotic mean of a multinomial residual, and sharing one household across its members
    only lowers the spread)."""
    H, I = [("H", 0), ("H", 1)], [("I", 1, k) for k in range(3)]  # noqa: E741, N806
    scores: dict = {}
    bounds: dict = {}
    for seed in range(5):
        priv, n_s = _gate_fk(seed, planted=False)
        run, _ = _gate_run(priv, seed)
        run.n_noisy = n_s  # the exact group sizes: the bound with ñ_s = n_s
        run.R = alg.RScores(npm.rscore_pairs(3, 3), np.zeros(len(npm.rscore_pairs(3, 3))), {})
        with priv._charged():
            for u in H:
                for v in I:
                    scores.setdefault((u, v), []).append(priv._rscore(u, v, "per_size"))
                    bounds[(u, v)] = run.null_rscore(u, v)
    for pair, xs in scores.items():
        x = np.array(xs)
        se = x.std(ddof=1) / math.sqrt(len(x))
        assert x.mean() <= bounds[pair] + 3 * se, (pair, x.mean(), bounds[pair])
        assert x.mean() >= 0.3 * bounds[pair], (pair, x.mean(), bounds[pair])


def test_gate_keeps_the_planted_association_and_spends_the_whole_step() -> None:
    """With a planted household→member association the gate keeps a pick holding that pair (its
    support is far above 2: its exact R-score is about 8.6·10³ against σ_R ≈ 92 at ρ = 0.1 and
an independence bound of about 200);
    with none, the supports of all 6 household–member pairs behave like standard normals or lower
    (30 values over 5 seeds, at most 4 above z = 2: Binomial(30, 0.023) exceeds 4 with
    probability 10⁻³), and the step's ρ still goes whole to what is kept."""
    run, a = _gate_run(_gate_fk(0, planted=True)[0], 0)
    run.run()
    inter = [e for e in a.ledger if e.label.startswith("Alg. 5 (3)")]
    assert inter and sum(e.rho for e in inter) == run.plan.rho_inter
    assert any("H.h0" in e.label and "I_a.i0" in e.label for e in inter), [e.label for e in inter]
    assert run.support(frozenset((SIZE, ("H", 0), ("I", 1, 0)))) > 5
    above = 0
    for seed in range(5):
        run, a = _gate_run(_gate_fk(seed, planted=False)[0], seed)
        run.run()
        inter = [e for e in a.ledger if e.label.startswith("Alg. 5 (3)")]
        assert inter and sum(e.rho for e in inter) == run.plan.rho_inter
        above += sum(run.support(frozenset((SIZE, u, ("I", 1, k)))) >= 2
                     for u in [("H", 0), ("H", 1)] for k in range(3))
    assert above <= 4


def test_gate_without_keep_best_passes_the_step_to_the_refining_targets() -> None:
    """``inter_keep_best=False`` (docs §5.7): when no Alg. 5 (3) pick passes the gate the step
    measures nothing, and its whole ``ρ_inter`` joins the refining targets' carry, so Algorithm
    2's releases plus the ρ left at the end are exactly ``J·ρ_target + ρ_inter`` (nothing above
    the plan). Without an association that happens on most of 5 seeds (each of the 6 pairs'
    supports behaves like a standard normal or lower; the default keeps the best pick there
    instead, test above); with a planted one the planted pick is kept and measured as under the
    default, with the step's whole ρ."""
    none_kept = 0
    for seed in range(5):
        run, a = _gate_run(_gate_fk(seed, planted=False)[0], seed)
        run.p = replace(run.p, inter_keep_best=False)
        msgs: list[str] = []
        run.rep = lambda f, m="", msgs=msgs: msgs.append(m)  # noqa: ARG005
        run.run()
        last = msgs[-1]
        inter = [e for e in a.ledger if e.label.startswith("Alg. 5 (3)")]
        alg2 = sum(e.rho for e in a.ledger if e.label.startswith("Alg. 2"))
        if inter:
            assert sum(e.rho for e in inter) == run.plan.rho_inter
            assert alg2 + run.refine_carry == run.plan.J * run.plan.rho_target
            assert all(run.support(_npm_vars(e.label)) >= 2 for e in inter)
        else:
            none_kept += 1
            assert run.inter_gated > 0
            assert last.startswith("fitted (") and "picks passed the gate" in last, last
            assert f"ρ {float(run.refine_carry):.3g} left unreleased" in last, last
            assert alg2 + run.refine_carry == run.plan.J * run.plan.rho_target + run.plan.rho_inter
        assert a.spent() <= a.rho_total
    assert none_kept >= 3, none_kept
    run, a = _gate_run(_gate_fk(0, planted=True)[0], 0)
    run.p = replace(run.p, inter_keep_best=False)
    run.run()
    inter = [e for e in a.ledger if e.label.startswith("Alg. 5 (3)")]
    assert inter and sum(e.rho for e in inter) == run.plan.rho_inter
    assert any("H.h0" in e.label and "I_a.i0" in e.label for e in inter), [e.label for e in inter]
    assert run.inter_gated == 0
def _size_fk(seed: int, planted: bool, n_h: int = 20_000, N: int = 4):  # noqa: ANN202, N803
    """Households with 2 attributes (3 and 4 values) and 0…N members (3 attributes); the group
    size is uniform and independent of everything, or (``planted``) ``N`` whenever ``h0 = 0``
    and uniform on ``0…N − 1`` otherwise."""
    rng = np.random.default_rng(seed)
    hdom, idom = (3, 4), (3, 4, 5)
    hc = np.stack([rng.integers(0, d, n_h) for d in hdom], axis=1)
    size = rng.integers(0, N + 1, n_h)
    if planted:
        size = np.where(hc[:, 0] == 0, N, rng.integers(0, N, n_h))
    parent = np.repeat(np.arange(n_h), size)
    ic = np.stack([rng.integers(0, d, len(parent)) for d in idom], axis=1)
    return private(hc, ic, parent, hdom, idom, N), hc


def _size_tv(model) -> float:  # noqa: ANN001
    """Largest total-variation distance between the household model's ``p(size | h0)`` and its
    ``p(size)``."""
    j = np.asarray(model.marginal([SIZE, ("H", 0)]), float)
    cond = j / j.sum(0, keepdims=True)
    ps = j.sum(1) / j.sum()
    return float(0.5 * np.abs(cond - ps[:, None]).sum(0).max())


def test_size_gate_removes_noise_dependence_and_keeps_a_planted_one() -> None:
    """``size_z`` (docs §5.11), on a public parent and on a private one, 3 seeds each:
    * size independent of the household: without the gate the household model's ``p(size | h0)``
      strays from ``p(size)`` by the noise of its measurements (total variation 0.008–0.016 on
      these runs: each (size, h0) cell holds about 1,300 households against a noise σ of tens);
      with ``size_z = 2`` at least 80 % of the blocks are replaced (under independence a block
      reaches z 2 with probability about 0.05 — a chi-square with 2–11 degrees of freedom —
      so Binomial(60, 0.05) keeps more than 12 with probability below 10⁻³), the distance is
      never larger than without the gate and on average at most half of it;
    * size planted on ``h0`` (every ``h0 = 0`` household has ``N`` members): kept, ``p(size = N |
      h0 = 0)`` above 0.9 with the gate as without it (its chi-square z is in the hundreds);
    * the gate is post-processing: the ledger's total ρ and number of releases are the same with
      it and without it."""
    tv: dict = {None: [], 2.0: []}
    blocks = replaced = 0
    for public in (True, False):
        for seed in range(3):
            for planted in (False, True):
                priv, hc = _size_fk(seed, planted)
                fits, ledgers, gated = {}, {}, {}
                for z in (None, 2.0):
                    a = Accountant(Fraction(1, 10), delta=1e-6)
                    budget = Budget(a, "fk", Fraction(1, 10), np.random.default_rng(seed))
                    plan = acc.plan_fk(Fraction(1, 10), h=3, a=3, N=priv.N, o=2,
                                       sens=acc.FKSensitivity(1, 0))
                    p = alg.Params(lam=1.0, k=10, fit_iters=200, refit_iters=50, t1_picks=2,
                                   t1_iters=2, n_mrf=4, size_z=z)
                    run = alg._Run("fk", priv, budget, plan, p, ["h0", "h1"], ["i0", "i1", "i2"],
                                   lambda f, m="": None, seed,
                                   public_hcodes=hc if public else None)
                    fits[z] = run.run().hmodel
                    ledgers[z] = (a.spent(), len(a.ledger))
                    gated[z] = len(run.size_gated)
                assert ledgers[None] == ledgers[2.0]
                assert gated[None] == 0
                if planted:
                    for z, m in fits.items():
                        j = np.asarray(m.marginal([SIZE, ("H", 0)]), float)
                        assert j[priv.N, 0] / j[:, 0].sum() > 0.9, (public, seed, z)
                else:
                    blocks += sum(priv.N + 1 for m in fits[2.0].measurements
                                  if len(m.vars) > 1 and m.vars[0] == SIZE)
                    replaced += gated[2.0]
                    for z in tv:
                        tv[z].append(_size_tv(fits[z]))
                    assert tv[2.0][-1] <= tv[None][-1] + 1e-9, (public, seed, tv)
    assert replaced >= 0.8 * blocks, (replaced, blocks)
    assert min(tv[None]) > 0.005 and np.mean(tv[2.0]) <= 0.5 * np.mean(tv[None]), tv


def _npm_vars(label: str) -> frozenset:
    """The variables of a ledger label ``"… NPM {size, H.h0, I_a.i1}"`` of a ``_gate_run``."""
    names = label.split("NPM {")[1].rstrip("}").split(", ")
    out = [SIZE]
    for x in names[1:]:
        side, attr = x.split(".")
        k = int(attr[1:])
        out.append(("H", k) if side == "H" else ("I", "abcdefgh".index(side[2]) + 1, k))
    return frozenset(out)


def test_refining_gate_drops_noise_candidates_and_keeps_the_planted_one() -> None:
    """``refine_z`` (docs §5.7): Algorithm 2 Phase B considers a new candidate holding parent
    and child columns only if its support reaches ``refine_z``.
    * No association (5 seeds): without the gate the refining targets measure such NPMs (their
      h-scores rank noise: more than 10 over the seeds); with it, every one measured has a pair
      whose support is at least 2, there are at most a fourth as many, and the run counts the
      candidates it held back (``refine_held``, reported when the fit ends).
    * Planted household→member association: on every seed the gate still lets a refining NPM
      holding that pair (``H.h0`` with a member's ``i0``) be measured.
    * Ledger: on every run Algorithm 2's releases plus the ρ carried past the last target are
      exactly ``J·ρ_target`` (what a gated target does not release passes on; nothing above the
      plan), so the gate never overspends (docs §4.4)."""
    mixed: dict = {}
    held: dict = {}
    for planted in (False, True):
        for z in (None, 2.0):
            for seed in range(5):
                run, a = _gate_run(_gate_fk(seed, planted=planted)[0], seed)
                run.p = replace(run.p, refine_z=z)
                run.run()
                alg2 = [e for e in a.ledger if e.label.startswith("Alg. 2")]
                assert sum(e.rho for e in alg2) + run.refine_carry == run.plan.J * run.plan.rho_target
                sets = [_npm_vars(e.label) for e in alg2 if "line 10" in e.label]
                sets = [s for s in sets if any(v[0] == "H" for v in s) and any(v[0] == "I" for v in s)]
                mixed.setdefault((planted, z), []).append(sets)
                held.setdefault((planted, z), []).append(run.refine_held)
                if z is not None:
                    assert all(run.support(s) >= z for s in sets), [run.support(s) for s in sets]
                if planted and z is not None:
                    assert any(("H", 0) in s and any(v[0] == "I" and v[2] == 0 for v in s)
                               for s in sets), sets
    free = sum(len(x) for x in mixed[(False, None)])
    gated = sum(len(x) for x in mixed[(False, 2.0)])
    assert free > 10 and gated <= free / 4, (free, gated)
    assert sum(held[(False, None)]) == 0 and sum(held[(False, 2.0)]) > 0, held


def test_gate_parameter_and_noise_preview() -> None:
    """``inter_z`` and ``refine_z``: a negative or infinite threshold is refused in words (and an
    ``inter_keep_best`` that is not a bool); ``None`` is the paper
    (every pick at the planned ρ); the Budget panel's σ_inter says it is an upper bound under the
    gate and does not under ``None``."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ParameterError, match="inter_z"):
            PrivPetal(inter_z=bad)
        with pytest.raises(ParameterError, match="refine_z"):
            PrivPetal(refine_z=bad)
        with pytest.raises(ParameterError, match="size_z"):
            PrivPetal(size_z=bad)
    for bad in (None, 0, "no"):
        with pytest.raises(ParameterError, match="inter_keep_best"):
            PrivPetal(inter_keep_best=bad)
    db = household_db(200, seed=0)
    fk = Plan.default(db.schema, 1.0, 1e-6, method="privpetal").edges[0]
    keys = list(PrivPetal().noise_scales(db.schema, fk, Fraction(1, 10), multipliers=multipliers(db.schema)))
    assert any(k.startswith("Alg. 5 (3)") and "at most" in k for k in keys)
    keys = list(PrivPetal().noise_scales(db.schema, replace(fk, params={"inter_z": None}),
                                         Fraction(1, 10), multipliers=multipliers(db.schema)))
    assert any(k.startswith("Alg. 5 (3)") and "at most" not in k for k in keys)


def test_authors_tpch_setup_configures_every_fk() -> None:
    """``benchmarks/fidelity.py --setup authors``: PrivPetal's TPC-H plan carries the authors'
    per-FK λ and merging, their encoding (``P_BRAND`` whole, ``P_TYPE`` by 25) on the table
    encodings, and passes the plan checks; the default setup leaves the plan as it was."""
    import benchmarks.fidelity as F
    from relviz import datasets
    from relviz.relational import get_database

    db = datasets.load("tpch", sf=0.01)
    spec = {"dataset": "tpch", "mechanism": "mst", "method": "privpetal", "epsilon": 1.6, "seed": 0}
    schema = db.schema
    for fk in ("orders.o_custkey->customer", "lineitem.l_partkey+l_suppkey->partsupp"):
        schema = schema.with_cap(fk, 8)
    base = Plan.default(schema, 1.6, 1e-6, method="privpetal")
    plan = F._authors_params(base, spec)
    assert F._authors_params(base, {**spec, "method": "privlava"}) is base
    assert not plan.problems(schema)
    own = F.AUTHORS_SETUP["tpch"]["privpetal"]
    for c in plan.edges:
        assert c.params["lam"] == own[c.name]["lam"] and c.params["order"] == 2, c.name
        assert c.params.get("merge_from") == own[c.name].get("merge_from"), c.name
    method = get_database("privpetal", **plan.component_of_method("privpetal").params)
    fk = schema.foreign_key("lineitem.l_partkey+l_suppkey->partsupp")
    _, henc, _ = method._fk_plan(schema, fk, Fraction(1, 100), multipliers(schema))
    assert "part.p_brand" in henc.names and henc.dom[henc.names.index("part.p_brand")] == 25
    assert henc.dom[henc.names.index("part.p_type#hi")] == 6
    # the two parts (docs §6.10): the FKs to public parents' own entries, and everything else
    public = F._authors_params(base, spec, "authors-public-fks", schema)
    generic = F._authors_params(base, spec, "authors-generic", schema)
    assert not public.problems(schema) and not generic.problems(schema)
    for c in base.edges:
        to_public = schema.table(schema.foreign_key(c.name).parent).public
        pub, gen = public.component(c.name).params, generic.component(c.name).params
        assert (pub.get("lam") == own[c.name]["lam"]) is to_public, c.name
        assert (gen.get("lam") == own[c.name]["lam"]) is not to_public, c.name
        assert "order" not in pub and gen["order"] == 2 and gen["splits"], c.name
    # each guarded setup: the setup it builds on, with its guards on the FKs to public / private
    # parents
    layers = [("public-fks-guarded", "authors-public-fks", F.PUBLIC_GUARDS, {}),
              ("guarded-sizes", "public-fks-guarded", {}, F.PRIVATE_PARENT_GUARDS),
              ("guarded-margins", "public-fks-guarded", F.MARGIN_GUARDS, F.MARGIN_GUARDS),
              ("guarded-children", "guarded-margins", {}, F.CHILDREN_GUARDS),
              ("guarded-pairs", "guarded-children", F.PAIR_GUARDS, F.PAIR_GUARDS)]
    built = {"authors-public-fks": public}
    for setup, below, on_public, on_private in layers:
        got = F._authors_params(base, spec, setup, schema)
        assert not got.problems(schema), setup
        for c in base.edges:
            to_public = schema.table(schema.foreign_key(c.name).parent).public
            want = {**built[below].component(c.name).params, **(on_public if to_public else on_private)}
            assert got.component(c.name).params == want, (setup, c.name)
        built[setup] = got
    li = "lineitem.l_orderkey->orders"
    assert built["guarded-sizes"].component(li).params == {"size_calibration": "variables"}
    assert built["guarded-children"].component(li).params == {"child_margins": True,
                                                              "parent_children": True}
    assert F._authors_params(base, spec, "relviz", schema) is base
    for setup, sch in (("authors-generic", None), ("paper", schema)):
        with pytest.raises(ValueError, match="setup"):
            F._authors_params(base, spec, setup, sch)


def test_raked_size_probs_hit_the_released_histogram() -> None:
    """``size_raking`` (docs §6.10): raking the contexts' size distributions makes the rows'
    expected size histogram the released ``ñ_s`` rescaled to the rows (to 1e-6 of the rows, far
    below one row), multiplies each context's odds between sizes by one factor per size (the
    log-ratio to the input is a row constant plus a column constant), gives a size of target 0
    no mass, and leaves a context with mass only on such sizes as it was."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal, raked_size_probs

    rng = np.random.default_rng(3)
    logits = rng.normal(size=(400, 5)) + np.array([2.0, 1.0, 0.0, -1.0, -2.0])
    p = mrf.logits_to_probs(logits)
    counts = rng.integers(1, 30, size=400).astype(float)
    n = counts.sum()
    target = np.array([100.0, 300.0, 0.0, 400.0, 200.0])
    q = raked_size_probs(p, counts, target)
    assert np.allclose(q.sum(axis=1), 1.0)
    assert np.allclose((counts[:, None] * q).sum(axis=0), target * n / target.sum(), atol=1e-6 * n)
    assert q[:, 2].max() == 0.0
    keep = [0, 1, 3, 4]
    r = np.log(q[:, keep]) - np.log(p[:, keep])
    r = r - r.mean(axis=1, keepdims=True)
    assert np.allclose(r, r[0])  # one factor per size, the same in every context
    assert (counts[:, None] * p).sum(axis=0)[3] < 0.2 * n  # (the raking moved mass)
    stuck = np.vstack([p[:3], [[0.0, 0.0, 1.0, 0.0, 0.0]]])
    out = raked_size_probs(stuck, np.ones(4), target)
    assert np.array_equal(out[3], stuck[3])
    with pytest.raises(ParameterError, match="size_raking"):
        PrivPetal(size_raking="yes")


def _rare_public_value() -> tuple[Database, Plan, np.ndarray]:
    """3,000 public parts, 5 % of them of kind 0 with three times the items (Poisson means 3 and
    1, capped at 6); the items' quantity depends on the kind. Returns the database, the
    PrivPetal plan at ε 0.2 and the parts' kinds."""
    rng = np.random.default_rng(0)
    n_p = 3_000
    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    kind = np.where(rng.random(n_p) < 0.05, 0, rng.integers(1, 8, n_p))
    parts = pd.DataFrame({"pid": np.arange(n_p), "kind": kind})
    pid = np.repeat(np.arange(n_p), np.minimum(rng.poisson(1.0 + 2.0 * (kind == 0)), 6))
    items = pd.DataFrame({"iid": np.arange(len(pid)), "pid": pid,
                          "qty": (kind[pid] + rng.integers(0, 2, len(pid))) % 4})
    schema = Schema((Table("parts", ("pid",), (cat("kind", 8),), public=True),
                     Table("items", ("iid",), (cat("qty", 4),))),
                    (ForeignKey("items", ("pid",), "parts"),),
                    PrivacyUnit("items", {"items.pid->parts": 6}), name="rare")
    db = Database(schema, {"parts": parts, "items": items})
    return db, Plan.default(schema, 0.2, 1e-6, method="privpetal"), kind


def _fit_rare(db: Database, plan: Plan, sample: bool = True, **params):  # noqa: ANN003, ANN202
    """PrivPetal on :func:`_rare_public_value`'s FK at λ 0.2 with ``params`` (warnings off):
    the fitted synthesizer and, with ``sample``, a sampled database (else None)."""
    fk = plan.edges[0].name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = RelationalSynthesizer(plan.with_params(fk, **SMALL, lam=0.2, **params),
                                      random_state=0).fit(db)
        return synth, (synth.sample() if sample else None)


def test_size_raking_draws_the_released_size_histogram() -> None:
    """``size_raking=True`` on an FK to a public parent: the synthetic number of children per
    parent follows the released ``ñ_s`` (rescaled to the parents), where Algorithm 4's fitted
    conditionals alone miss it (a rare parent value, 5 %, with more children; ε 0.2, λ 0.2: noisy
    slices for that value). Tolerance: the sizes are independent draws per parent, so each size's
    count is a sum of Bernoullis with variance at most its mean ``m_s``; 4·√m_s + 1 bounds it (the
    rounded sampling only lowers the spread)."""
    db, plan, kind = _rare_public_value()
    n_p = len(kind)
    fk = plan.edges[0].name
    assert plan.edges[0].method == "privpetal"
    worst = {}
    for raking in (False, True):
        synth, syn = _fit_rare(db, plan, size_raking=raking)
        f = synth.database_.fits[fk]
        assert f.size_raking is raking
        target = np.clip(f.n_noisy, 0, None)
        target = target * n_p / target.sum()
        got = np.bincount(np.bincount(syn.parent_index(fk), minlength=n_p), minlength=len(target))
        worst[raking] = float((np.abs(got - target) / (4 * np.sqrt(target) + 1)).max())
    assert worst[True] <= 1.0, worst
    assert worst[False] > 1.0, worst  # the case needs the raking (else this test shows nothing)


def test_debiased_stored_h_score_ranks_misfit_above_noise() -> None:
    """``debias_stored_h`` (docs §6.11): with the model fitting the true NPM, a stored array's
    raw h-score is its noise's L1 norm, about ``√(2/π)·σ`` per cell, and the debiased score is
    0 within 4 standard deviations of a sum of ``n`` folded normals (``σ·√((1 − 2/π)·n)``).
    Between a large stored NPM that the model already fits and a small one it misfits, the raw
    score prefers the large one for its noise and the debiased one the misfit. Masked slices
    count in neither part."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    rng = np.random.default_rng(5)
    sigma, n_sizes = 30.0, 4

    def entry(truth: np.ndarray, masked: np.ndarray) -> npm.Entry:
        var = np.full(n_sizes, sigma ** 2)
        return npm.Entry(truth + rng.normal(0.0, sigma, truth.shape), var, masked, True, "measured")

    none = np.zeros(n_sizes, bool)
    big = np.full((n_sizes, 50, 40), 200.0)  # 2,000 cells a slice, fitted exactly by the model
    e_big = entry(big, none)
    cells = 3 * 2_000  # slices 1…3
    raw = alg.stored_h_score(e_big, big[1:], 1, False)
    deb = alg.stored_h_score(e_big, big[1:], 1, True)
    sd = sigma * math.sqrt((1 - 2 / math.pi) * cells)
    assert abs(raw - math.sqrt(2 / math.pi) * sigma * cells) < 4 * sd
    assert abs(deb) < 4 * sd
    masked = np.array([False, False, True, False])
    e_m = npm.Entry(e_big.arr, e_big.var, masked, True, "measured")
    assert alg.stored_h_score(e_m, big[1:], 1, True) == pytest.approx(
        deb * 2 / 3, abs=4 * sd)  # the masked slice leaves both sums

    small = np.full((n_sizes, 2, 2), 5_000.0)
    small[:, 0, 0] += 2_000.0  # a misfit of 2,000 per slice in each of two cells
    small[:, 1, 1] -= 2_000.0
    e_small = entry(small, none)
    mu_small = np.full((n_sizes - 1, 2, 2), 5_000.0)
    raw_s = alg.stored_h_score(e_small, mu_small, 1, False)
    deb_s = alg.stored_h_score(e_small, mu_small, 1, True)
    assert raw > raw_s  # the paper's score: the fitted large NPM first, for its noise
    assert deb_s > 4 * sd > deb  # debiased: the misfit first
    # the six misfit cells lose their penalty √(2/π)·σ each without folding; the error around
    # that is a sum of 6 normals and 6 centred folded normals (4 standard deviations)
    bias = 6 * math.sqrt(2 / math.pi) * sigma
    assert deb_s == pytest.approx(3 * 4_000 - bias, abs=4 * sigma * math.sqrt(6 + 6 * (1 - 2 / math.pi)))
    with pytest.raises(ParameterError, match="debias_stored_h"):
        PrivPetal(debias_stored_h=1)


def test_slice_lam_masks_blocks_too_thin_for_their_noise() -> None:
    """``slice_lam`` (docs §6.11): with sizes 1…3 merged, the merged block (90 noisy groups over
    2 cells) passes ``min_mass`` = 30 groups per cell and is rescaled as before, the size-0 slice
    (10 groups over 2 cells) is masked; ``min_mass`` 0 masks nothing with positive totals."""
    noisy = np.array([50.0, 41.0, 4.0, 7.0])  # the merged block first, then slice 0
    n_noisy = np.array([10.0, 20.0, 30.0, 40.0])
    arr, var, masked = alg.npm_query_post(noisy, 2.0, (2,), 0, [1, 2, 3], n_noisy, 3, 30.0)
    assert masked.tolist() == [True, False, False, False]
    assert np.allclose(arr[1:].sum(axis=1), n_noisy[1:])
    arr0, _, masked0 = alg.npm_query_post(noisy, 2.0, (2,), 0, [1, 2, 3], n_noisy, 3)
    assert not masked0.any() and np.allclose(arr0[1:], arr[1:])
    assert np.allclose(arr0[0], [4.0 * 10 / 11, 7.0 * 10 / 11])
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal
    with pytest.raises(ParameterError, match="slice_lam"):
        PrivPetal(slice_lam=0.0)


def test_public_margins_fit_the_public_parents_attribute_distribution() -> None:
    """``public_margins`` (docs §6.11): on an FK to a public parent (3,000 parents, a 5 % value;
    ε 0.2, λ 0.2), the model of ``A_H ∪ {size}`` fitted with the parent's exact marginals
    reproduces the public distribution of its attribute (total variation < 0.02; measured
    0.004–0.009 over seeds 0–2), where the noisy NPMs alone leave it 0.14–0.23 away."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    db, plan, kind = _rare_public_value()
    n_p = len(kind)
    fk = plan.edges[0].name
    public = np.bincount(kind, minlength=8) / n_p
    tv = {}
    for pm in (False, True):
        synth, _ = _fit_rare(db, plan, sample=False, public_margins=pm)
        hm = synth.database_.fits[fk].hmodel
        (hv,) = [v for v in hm.vars if v != npm.SIZE]
        p = np.asarray(hm.marginal([hv]))
        tv[pm] = 0.5 * float(np.abs(p / p.sum() - public).sum())
    assert tv[True] < 0.02 < tv[False], tv
    with pytest.raises(ParameterError, match="public_margins"):
        PrivPetal(public_margins="yes")


def test_public_usefulness_counts_the_rarest_public_slice() -> None:
    """``public_usefulness`` (docs §6.12): with a public parent's codes, an NPM's cells are
    ``cells_full · min(r_joint, Π_v r_v)``, ``r = Σc / (c_min · cells with a row)`` over the
    public table's counts ``c`` (1 for a uniform table; structural zeros do not count). Each
    branch of the minimum is reached: a rare value alone, two copies of one variable (the joint,
    not the product of their scarcities) and a sparse joint of uniform variables (the
    product). Without the option, or without public codes, the spec's count."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    run, _ = _run(public_usefulness=True)
    run.hdom = np.array([2, 3])
    N, H0, H1 = run.N, ("H", 0), ("H", 1)  # noqa: N806
    full = lambda s: run.cells_full(s)  # noqa: E731

    def with_codes(h0, h1):  # noqa: ANN001, ANN202
        run.public_hcodes, run._rarest = np.stack([h0, h1], axis=1), {}
        return run

    # 60 rows: h0 = 0 on one row only (r_0 = 60 / (1·2) = 30); h1 uniform (r_1 = 1)
    h0 = np.ones(60, dtype=np.int64)
    h0[0] = 0
    h1 = np.arange(60) % 3
    with_codes(h0, h1)
    s0 = frozenset({npm.SIZE, H0, ("I", 1, 0)})
    assert full(s0) == (N + 1) * 2 * run.idom[0]
    assert run.cells_useful(s0) == pytest.approx(full(s0) * 30)
    s1 = frozenset({npm.SIZE, H1, ("I", 1, 1)})  # uniform: the spec's count
    assert run.cells_useful(s1) == pytest.approx(full(s1))
    s01 = frozenset({npm.SIZE, H0, H1})
    # joint: 4 cells with a row, the rarest 1 row → r_joint = 60 / 4 = 15 < Π r_v = 30
    assert run.cells_useful(s01) == pytest.approx(full(s01) * 15)
    # two copies of a variable with a rare value: r_joint = r_0, not r_0² (h1 ∈ {0, 1})
    with_codes(h0, h0)
    assert run.cells_useful(s01) == pytest.approx(full(s01) * 30)
    # uniform variables with a sparse joint (20/5/5 and 0/15/15 rows): r_joint = 60/(5·5) = 2.4,
    # Π r_v = 1, the product is kept
    j = np.repeat([0, 1, 2, 4, 5], [20, 5, 5, 15, 15])
    with_codes(j // 3, j % 3)
    assert run.cells_useful(s01) == pytest.approx(full(s01))
    s_i = frozenset({npm.SIZE, ("I", 1, 0), ("I", 2, 0)})  # no household variable
    assert run.cells_useful(s_i) == full(s_i)
    off, _ = _run()
    off.hdom, off.public_hcodes = run.hdom, run.public_hcodes
    assert off.cells_useful(s01) == full(s01)
    with pytest.raises(ParameterError, match="public_usefulness"):
        PrivPetal(public_usefulness=1)


def test_size_calibration_reproduces_the_models_clique_margins_on_the_rows() -> None:
    """``size_calibration`` (docs §6.12): Algorithm 4's ``p(size | h0, h1)`` is a product over
    the cliques ``{size, h0}`` and ``{size, h1}``; on rows whose sizes have a three-way
    interaction the model lacks, it misses the model's ``p(size | h0)`` and ``p(size | h1)``
    (by more than 1 % of the rows here); calibrated, the rows' expected ``(size, h)``
    histograms are the model's within 10⁻⁶ of the rows. The model is fitted to the rows' own
    margins, so a table with them exists (the rows' true sizes) and IPF converges to it
    (``tol`` 10⁻⁹)."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal, calibrated_size_probs

    rng = np.random.default_rng(3)
    S, H0, H1 = npm.SIZE, ("H", 0), ("H", 1)  # noqa: N806
    dom = {S: 4, H0: 2, H1: 3}
    h0, h1 = np.repeat(np.arange(2), 3), np.tile(np.arange(3), 2)  # the 6 contexts
    counts = 10_000.0 * rng.dirichlet(np.ones(6) * 3)
    truth = rng.dirichlet(np.ones(4), size=6)  # p(size | context), any interaction
    t0 = np.stack([np.bincount(h0, weights=counts * truth[:, s], minlength=2) for s in range(4)])
    t1 = np.stack([np.bincount(h1, weights=counts * truth[:, s], minlength=3) for s in range(4)])
    cl = [(S, H0), (S, H1)]
    model = mrf.Model([S, H0, H1], dom, mrf.JTree(cl, mrf.junction_tree(cl), dom), counts.sum())
    model.add(mrf.Measurement((S, H0), t0))
    model.add(mrf.Measurement((S, H1), t1))
    model.fit(3000, early_stop=False)
    p = mrf.logits_to_probs(model.conditional_logits(S, {H0: h0, H1: h1}))

    def miss(q: np.ndarray) -> float:
        out = 0.0
        for var, codes, k in ((H0, h0, 2), (H1, h1, 3)):
            m = model.marginal([S, var]).T
            want = m / m.sum(axis=1, keepdims=True) * np.bincount(codes, weights=counts, minlength=k)[:, None]
            got = np.stack([np.bincount(codes, weights=counts * q[:, s], minlength=k) for s in range(4)], 1)
            out = max(out, float(np.abs(got - want).max()))
        return out

    cal = calibrated_size_probs(p, {H0: h0, H1: h1}, counts, model, iters=5000, tol=1e-9)
    assert np.allclose(cal.sum(axis=1), 1.0)
    assert miss(cal) < 1e-6 * counts.sum() < 1e-2 * counts.sum() < miss(p), (miss(cal), miss(p))
    with pytest.raises(ParameterError, match="size_calibration"):
        PrivPetal(size_calibration="yes")


def _mixed_context_toy(target, c0, c1):  # noqa: ANN001, ANN202
    """A model with one clique ``{target, c0, c1}`` (domains 3, 2, 2) fitted on 10,000 rows where
    ``c0 = c1`` on 80 % of them, its ``p(target | c0, c1)`` a fixed ``truth``; then the 4 contexts'
    codes of ``c0`` and ``c1``, the model's conditional for them (checked to be ``truth``) and
    the rows' counts when ``c0`` and ``c1`` keep their shares but are independent (another
    model drew them). Returns ``(model, c0 codes, c1 codes, p, counts)``."""
    dom = {target: 3, c0: 2, c1: 2}
    x0, x1 = np.repeat(np.arange(2), 2), np.tile(np.arange(2), 2)  # the 4 contexts
    fitted_mix = 10_000.0 * np.array([0.4, 0.1, 0.1, 0.4])  # c0 = c1 on 80 % of the rows
    truth = np.array([[0.7, 0.2, 0.1], [0.2, 0.3, 0.5], [0.3, 0.3, 0.4], [0.1, 0.2, 0.7]])
    cl = [(target, c0, c1)]
    model = mrf.Model([target, c0, c1], dom, mrf.JTree(cl, mrf.junction_tree(cl), dom),
                      fitted_mix.sum())
    model.add(mrf.Measurement((target, c0, c1), (fitted_mix[:, None] * truth).T.reshape(3, 2, 2)))
    model.fit(3000, early_stop=False)
    p = mrf.logits_to_probs(model.conditional_logits(target, {c0: x0, c1: x1}))
    assert np.abs(p - truth).max() < 1e-3  # the model is the truth on its one clique
    return model, x0, x1, p, 10_000.0 * np.full(4, 0.25)


def _pair_miss(q: np.ndarray, counts: np.ndarray, wanted: dict) -> float:
    """Largest miss, in rows, of the expected ``(v, target)`` histograms of distributions ``q``
    ``(contexts, k)`` against ``wanted[v] = (codes, joint)``: the joint ``(dom v, k)`` (model
    counts or conditional rows) normalised per ``v`` times the rows with each ``v``."""
    out = 0.0
    for codes, joint in wanted.values():
        cond = joint / joint.sum(axis=1, keepdims=True)
        want = cond * np.bincount(codes, weights=counts, minlength=len(cond))[:, None]
        got = np.stack([np.bincount(codes, weights=counts * q[:, t], minlength=len(cond))
                        for t in range(q.shape[1])], 1)
        out = max(out, float(np.abs(got - want).max()))
    return out


def test_size_calibration_variables_keeps_each_variables_size_relation_on_another_mix() -> None:
    """``size_calibration="variables"`` (docs §6.16): a household model with one clique
    ``{size, h0, h1}`` fitted on rows where ``h0`` and ``h1`` agree 80 % of the time; drawn for
    rows with the same ``h0`` and ``h1`` shares but independent (another FK's model made them),
    Algorithm 4's ``p(size | h0, h1)`` gives another ``p(size | h0)`` than the model's (by more
    than 2 % of the rows here), and the clique calibration alone is the identity (one clique).
    With ``variables`` each variable's expected ``(size, h)`` histogram is the model's
    ``p(size | h)`` times the rows with each ``h``, within 10⁻⁶ of the rows: the two targets share
    one size histogram here (both variables keep their shares), so IPF converges to them."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal, calibrated_size_probs

    S, H0, H1 = npm.SIZE, ("H", 0), ("H", 1)  # noqa: N806
    model, h0, h1, p, counts = _mixed_context_toy(S, H0, H1)

    def miss(q: np.ndarray) -> float:
        return _pair_miss(q, counts, {v: (codes, model.marginal([v, S]))
                                      for v, codes in ((H0, h0), (H1, h1))})

    cliques = calibrated_size_probs(p, {H0: h0, H1: h1}, counts, model, iters=5000, tol=1e-9)
    assert np.abs(cliques - p).max() < 1e-9
    both = calibrated_size_probs(p, {H0: h0, H1: h1}, counts, model, iters=5000, tol=1e-9,
                                 variables=True)
    assert np.allclose(both.sum(axis=1), 1.0) and (both >= 0).all()
    assert miss(both) < 1e-6 * counts.sum() < 2e-2 * counts.sum() < miss(p), (miss(both), miss(p))
    assert PrivPetal(size_calibration="variables").size_calibration == "variables"
    with pytest.raises(ParameterError, match="size_calibration"):
        PrivPetal(size_calibration="cliques")


def test_size_calibration_is_the_identity_with_one_clique_and_runs_in_sampling() -> None:
    """``size_calibration`` end to end on the rare-public-value toy (one household attribute, so
    ``size`` is in one fit-tree clique and Algorithm 4's conditional is already the model's
    ``p(size | kind)``): the calibrated distributions equal the drawn ones (< 10⁻⁹), and a
    database sampled with the option keeps every child's parent and at most ``N`` children."""
    from relviz.relational.privpetal.method import calibrated_size_probs

    db, plan, kind = _rare_public_value()
    fk = plan.edges[0].name
    synth, syn = _fit_rare(db, plan, size_calibration=True)
    f = synth.database_.fits[fk]
    assert f.size_calibration is True
    (hv,) = [v for v in f.hmodel.vars if v != npm.SIZE]
    ctx = np.arange(8)
    counts = np.bincount(kind, minlength=8).astype(float)
    p = mrf.logits_to_probs(f.hmodel.conditional_logits(npm.SIZE, {hv: ctx}))
    cal = calibrated_size_probs(p, {hv: ctx}, counts, f.hmodel)
    assert np.abs(cal - p).max() < 1e-9
    parent = syn.parent_index(fk)
    assert (parent >= 0).all() and (parent < len(kind)).all()
    assert np.bincount(parent, minlength=len(kind)).max() <= f.N
    # "variables" with one household variable: its margin is the clique's, the same draw
    synth_v, syn_v = _fit_rare(db, plan, size_calibration="variables")
    assert synth_v.database_.fits[fk].size_calibration == "variables"
    assert np.array_equal(syn_v.parent_index(fk), parent)


def test_column_calibration_keeps_each_context_variables_relation_on_another_mix() -> None:
    """``column_calibration`` (docs §6.17): a target model with one clique ``{t, a, b}`` fitted
    on rows where ``a`` and ``b`` agree 80 % of the time; its conditional drawn for rows with the
    same ``a`` and ``b`` shares but independent (earlier columns drawn by other models) gives
    another ``p(t | a)`` than the model's, by more than 2 % of the rows. ``target_pairs`` keeps
    the model's ``p(t | v)`` (each row the normalised ``(v, t)`` marginal), and
    :func:`calibrated_column_probs` rakes the drawn distributions to them within 10⁻⁶ of the rows
    (the two targets share one ``t`` histogram here, so IPF converges), rows summing to 1."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.algorithms import target_pairs
    from relviz.relational.privpetal.method import PrivPetal, calibrated_column_probs

    T, A, B = ("I", 1, 0), ("I", 1, 1), ("I", 1, 2)  # noqa: N806
    model, a, b, p, counts = _mixed_context_toy(T, A, B)
    pairs = target_pairs(model, T, [T, A, B])
    assert set(pairs) == {A, B}
    for v in (A, B):
        m = model.marginal([v, T])
        assert pairs[v].shape == (2, 3)
        assert np.allclose(pairs[v], m / m.sum(axis=1, keepdims=True))

    def miss(q: np.ndarray) -> float:
        return _pair_miss(q, counts, {v: (codes, pairs[v]) for v, codes in ((A, a), (B, b))})

    cal = calibrated_column_probs(p, {A: a, B: b}, counts, pairs, iters=5000, tol=1e-9)
    assert np.allclose(cal.sum(axis=1), 1.0) and (cal >= 0).all()
    assert miss(cal) < 1e-6 * counts.sum() < 2e-2 * counts.sum() < miss(p), (miss(cal), miss(p))
    # a variable the rows do not have is ignored; no variable at all: the input back
    only_a = calibrated_column_probs(p, {A: a}, counts, pairs, iters=5000, tol=1e-9)
    assert not np.allclose(only_a, p)
    assert np.array_equal(calibrated_column_probs(p, {}, counts, pairs), p)
    with pytest.raises(ParameterError, match="column_calibration"):
        PrivPetal(column_calibration="yes")


def test_column_calibration_runs_in_sampling_and_keeps_the_fks() -> None:
    """``column_calibration=True`` end to end on the rare-public-value toy: every kept
    conditional carries the model's ``p(target | v)`` for its context variables (rows of
    probabilities or zeros), the fit records the option, and the sampled database keeps every
    child's parent and at most ``N`` children per parent. The fit is the same with and without
    the option (it acts at sampling only): the sizes, drawn before any column, are equal."""
    db, plan, kind = _rare_public_value()
    fk = plan.edges[0].name
    synth, syn = _fit_rare(db, plan, column_calibration=True)
    f = synth.database_.fits[fk]
    assert f.column_calibration is True
    assert any(c.pairs for c in f.conditionals)
    for c in f.conditionals:
        assert set(c.pairs) <= set(c.vars) - {c.target}
        for v, m in c.pairs.items():
            assert m.shape == (c.dom[v], c.dom[c.target])
            assert np.all((np.abs(m.sum(axis=1) - 1) < 1e-9) | (m.sum(axis=1) == 0))
    parent = syn.parent_index(fk)
    assert (parent >= 0).all() and (parent < len(kind)).all()
    assert np.bincount(parent, minlength=len(kind)).max() <= f.N
    _, syn_off = _fit_rare(db, plan)
    assert np.array_equal(np.bincount(syn_off.parent_index(fk), minlength=len(kind)),
                          np.bincount(parent, minlength=len(kind)))


# -- M. the children's one-way marginals (relviz's child_margins, docs §5.8) -----------------------

@pytest.mark.parametrize("preset", list(acc.PRESETS))
@pytest.mark.parametrize(("h", "a", "o", "nullable"),
                         [(15, 17, 3, False), (6, 4, 1, True), (1, 5, 2, False), (1, 3, 1, True)])
def test_C2_child_margins_plan_spends_exactly_the_fk_budget(preset: str, h: int, a: int, o: int,
                                                            nullable: bool) -> None:
    """C2 with ``child_margins``: the ``a`` one-way histograms take MARGIN_SHARE = 1/50 of the
    FK's ρ (none when the child has no attributes), taken before [P]'s split as the null count's
    1/50 is; the other shares are those of the remaining ρ, the plan sums exactly (Fraction) to
    the FK's ρ, and each histogram's σ = Δ_hist·√(a/(2ρ_margins)) realises cost ρ_margins/a."""
    rho = Fraction(3, 7)
    sens = acc.FKSensitivity(1, 0, 1.0, 2.0)
    plan = acc.plan_fk(rho, h=h, a=a, N=6, o=o, sens=sens, preset=preset, nullable=nullable,
                       child_margins=True)
    assert plan.planned() == rho and plan.rho == rho
    assert plan.rho_margins == (rho * acc.MARGIN_SHARE if a else 0)
    rest = rho - plan.rho_margins - plan.rho_null
    base = acc.plan_fk(rest, h=h, a=a, N=6, o=o, sens=sens, preset=preset)
    for name in ("rho_n", "rho_R", "rho_hsub", "rho_isub", "rho_inter", "rho_intra", "rho_target"):
        assert getattr(plan, name) == getattr(base, name), name
    assert plan.rho_margin_each() * a == plan.rho_margins
    assert (2.0 / plan.sigma_margins) ** 2 / 2 == pytest.approx(float(plan.rho_margin_each()),
                                                                rel=1e-12)
    bare = acc.plan_fk(rho, h=h, a=0, N=6, o=o, sens=sens, preset=preset, child_margins=True)
    assert bare.rho_margins == 0 and math.isinf(bare.sigma_margins)


@pytest.fixture(scope="module")
def margins_fit():
    """The rare-public-value toy fitted with ``child_margins=True`` (ε 0.2, λ 0.2)."""
    db, plan, kind = _rare_public_value()
    synth, syn = _fit_rare(db, plan, child_margins=True)
    return db, plan, kind, synth, syn


def test_child_margins_rake_the_drawn_children_to_the_released_histogram(margins_fit) -> None:  # noqa: ANN001
    """Sampling follows the released histogram whatever the model says: with the fit's released
    histogram replaced by one far from the data (shares .55/.05/.10/.30; the real .25 each
    within ±.03), the synthetic children's histogram is within 0.01 of it in total variation (the
    raked expectation is exact to the IPF tolerance, 10⁻⁶ of the rows; what is left is the
    rounding of the draws per context, 0.001–0.004 measured on sampling seeds 3–5), and the
    sizes, drawn before any column, are unchanged. Without the margins the histogram stays near
    the data (0.375–0.378 from the forced one; asserted ≥ 0.2)."""
    db, plan, kind, synth, syn = margins_fit
    fk = plan.edges[0].name
    f = synth.database_.fits[fk]
    saved = f.margins
    want = np.array([0.55, 0.05, 0.10, 0.30])
    try:
        f.margins = [want * 3000.0]
        forced = synth.sample(random_state=3)
        f.margins = None
        plain = synth.sample(random_state=3)
    finally:
        f.margins = saved
    for d, lo, hi in ((forced, 0.0, 0.01), (plain, 0.2, 1.0)):
        h = np.bincount(d["items"]["qty"].to_numpy().astype(int), minlength=4) / len(d["items"])
        assert lo <= 0.5 * np.abs(h - want).sum() <= hi, h
    assert np.array_equal(np.bincount(forced.parent_index(fk), minlength=len(kind)),
                          np.bincount(plain.parent_index(fk), minlength=len(kind)))


def test_slot_margin_targets_keep_each_group_sizes_distribution() -> None:
    """``_margin_by_size`` rakes the model's ``p(column | size)`` so that over the drawn groups'
    children (``s·n_s`` of size ``s``) the histogram is the released one, keeping each size's
    zeros (a value a size never has stays impossible there, as a line number above the group
    size); ``slot_margin_targets`` over the slots of those groups adds up to that histogram, and
    the slot of the largest groups only sees their distribution. Without a model of one
    individual every size gets the same distribution."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _margin_by_size, slot_margin_targets

    N = 3  # noqa: N806
    # the model's p(v | s) for s = 1, 2, 3: value v ≤ s ("line number"), uniform among them
    joint = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]]) * [[50], [30], [20]]
    model = SimpleNamespace(marginal=lambda vars_: joint if len(vars_) == 2 else joint.sum(0))
    size = np.repeat([0, 1, 2, 3], [5, 50, 30, 20])
    target = np.array([120.0, 60.0, 10.0])
    f = SimpleNamespace(margins=[target], N=N, imodel=model)
    p = _margin_by_size(f, size)[0]
    assert p.shape == (N + 1, 3)
    np.testing.assert_allclose(p[1:].sum(axis=1), 1.0)
    assert p[1, 1] == p[1, 2] == p[2, 2] == 0.0
    kids = np.arange(N + 1) * np.bincount(size, minlength=N + 1)
    got = kids @ p
    np.testing.assert_allclose(got / got.sum(), target / target.sum(), atol=1e-6)
    n_sizes = np.bincount(size, minlength=N + 1)
    slots = [slot_margin_targets(p, n_sizes, j) for j in range(1, N + 1)]
    np.testing.assert_allclose(sum(slots), got, rtol=1e-12)
    np.testing.assert_allclose(slots[2] / slots[2].sum(), p[3])
    flat = _margin_by_size(SimpleNamespace(margins=[target], N=N, imodel=None), size)[0]
    np.testing.assert_allclose(flat[1:], np.tile(target / target.sum(), (N, 1)), atol=1e-9)

    def unpaired(vars_):  # noqa: ANN001, ANN202 - no clique pairs the column with size
        if len(vars_) == 2:
            raise ValueError("not in one clique")
        return joint.sum(0)

    def absent(vars_):  # noqa: ANN001, ANN202 - the column is in no clique
        raise ValueError("not in the model")

    for marginal in (unpaired, absent):  # the same distribution for every size, raked
        same = _margin_by_size(SimpleNamespace(margins=[target], N=N,
                                               imodel=SimpleNamespace(marginal=marginal)), size)[0]
        np.testing.assert_allclose(same[1:], np.tile(target / target.sum(), (N, 1)), atol=1e-9)


# -- P. the children per parent value (relviz's parent_children, docs §5.9) -------------------------

@pytest.mark.parametrize("preset", list(acc.PRESETS))
@pytest.mark.parametrize(("h", "a", "o", "nullable", "margins"),
                         [(15, 17, 3, False, True), (6, 4, 1, True, False), (1, 5, 2, False, True),
                          (3, 2, 1, True, False)])
def test_C2_parent_children_plan_spends_exactly_the_fk_budget(preset: str, h: int, a: int, o: int,
                                                              nullable: bool, margins: bool) -> None:
    """C2 with ``parent_children``: the ``h − 1`` histograms of children per parent value take
    CHILDREN_SHARE = 1/50 of the FK's ρ (none when the parent has no attribute, ``h = 1``), taken
    before [P]'s split with the null count's and the one-way marginals' shares; the other shares
    are those of the remaining ρ, the plan sums exactly (Fraction) to the FK's ρ, and each
    histogram's σ = Δ_children·√((h − 1)/(2ρ_children)) realises cost ρ_children/(h − 1)."""
    rho = Fraction(3, 7)
    sens = acc.FKSensitivity(1, 0, 1.0, 2.0, 3.0)
    plan = acc.plan_fk(rho, h=h, a=a, N=6, o=o, sens=sens, preset=preset, nullable=nullable,
                       child_margins=margins, parent_children=True)
    assert plan.planned() == rho and plan.rho == rho
    assert plan.rho_children == (rho * acc.CHILDREN_SHARE if h > 1 else 0)
    rest = rho - plan.rho_children - plan.rho_null - plan.rho_margins
    base = acc.plan_fk(rest, h=h, a=a, N=6, o=o, sens=sens, preset=preset)
    for name in ("rho_n", "rho_R", "rho_hsub", "rho_isub", "rho_inter", "rho_intra", "rho_target"):
        assert getattr(plan, name) == getattr(base, name), name
    if h > 1:
        assert plan.rho_children_each() * (h - 1) == plan.rho_children
        assert (3.0 / plan.sigma_children) ** 2 / 2 == pytest.approx(
            float(plan.rho_children_each()), rel=1e-12)
    else:
        assert math.isinf(plan.sigma_children) and plan.rho_children_each() == 0


def test_histogram_sensitivities_of_child_margins_and_parent_children() -> None:
    """Δ_hist (``child_margins``) and Δ_children (``parent_children``) of an FK under the entity
    unit are the child table's histogram multiplier (a parent's values and a surviving child's FK
    never change; a removed household removes up to N = 4 persons, all possibly in one cell: 4).
    Under the tuple unit one row changes its values: Δ_hist = √2; a household row that changes
    its values moves its ≤ τ = 4 persons together, Δ_children = √2·4, and for an FK to a public
    parent only a child re-pointing moves a count, √2."""
    schema = household_schema()
    mult = multipliers(schema)
    for fk in schema.private_foreign_keys:
        sens = acc.fk_sensitivities(schema, mult, fk)
        assert sens.hist == sens.children == mult.table_histogram(fk.child)
    persons = schema.foreign_key("persons.hid->households")
    sens = acc.fk_sensitivities(schema, mult, persons)
    assert sens.hist == sens.children == 4.0
    tup = schema.with_privacy_unit(PrivacyUnit(None, dict(schema.privacy_unit.caps), neighbour="tuple"))
    sens = acc.fk_sensitivities(tup, multipliers(tup), persons)
    tau = int(tup.privacy_unit.caps[persons.name])
    assert sens.hist == math.sqrt(2.0) and sens.children == pytest.approx(math.sqrt(2.0) * tau)
    db, _, _ = _rare_public_value()  # an FK to a public parent under the tuple unit
    rare = db.schema.with_privacy_unit(PrivacyUnit(None, {"items.pid->parts": 6}, neighbour="tuple"))
    assert acc.fk_sensitivities(rare, multipliers(rare), rare.foreign_key("items.pid->parts")
                                ).children == pytest.approx(math.sqrt(2.0))


@pytest.fixture(scope="module")
def children_fit():
    """The rare-public-value toy fitted with ``parent_children=True`` (ε 0.2, λ 0.2)."""
    db, plan, kind = _rare_public_value()
    synth, syn = _fit_rare(db, plan, parent_children=True)
    return db, plan, kind, synth, syn


# one release per column: (fixture, parameter, label prefix, Budget panel key, encoding side, its
# names, plan attributes: share, each, σ, Δ; FKFit attribute and the array's shape)
HISTOGRAM_RELEASES = {
    "child_margins": ("margins_fit", "relviz: children's one-way marginal of ",
                      "relviz: children's one-way marginals σ (each of 1)", 2, ["qty"],
                      ("rho_margins", "rho_margin_each", "sigma_margins", "hist"), "margins", (4,)),
    "parent_children": ("children_fit", "relviz: children per parent value of ",
                        "relviz: children per parent value σ (each of 1)", 1, ["kind"],
                        ("rho_children", "rho_children_each", "sigma_children", "children"),
                        "children", (8,)),
}


@pytest.mark.parametrize("param", list(HISTOGRAM_RELEASES))
def test_histogram_releases_ledger_and_noise_scales(param: str, request: pytest.FixtureRequest) -> None:
    """``child_margins`` / ``parent_children``: one release per child / parent column, labelled
    "relviz: children's one-way marginal of <column>" / "relviz: children per parent value of
    <column>", each at its share/columns with the declared Δ (1 here: the entity is the item) and
    the σ the Budget panel shows (noise_scales); the ledger's releases sum to the plan's share
    (1/50), every other release costs its planned ρ on the remaining 49/50, and the ledger stays
    within the FK's ρ. Without the option the Budget panel has no such σ; a non-bool value is a
    ParameterError."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    fixture, prefix, key, side, names, (share, each, sigma, sens), attr, shape = \
        HISTOGRAM_RELEASES[param]
    db, plan, _, synth, _ = request.getfixturevalue(fixture)
    fk = plan.edges[0].name
    rho = Fraction(plan.rho_of(fk))
    method = synth.database_.method
    mult = multipliers(db.schema)
    comp = next(c for c in plan.with_params(fk, **{param: True}).edges if c.name == fk)
    planned = method.for_component(comp)._fk_plan(db.schema, db.schema.foreign_key(fk), rho, mult)
    p, enc = planned[0], planned[side]
    assert p.planned() == rho and getattr(p, share) == rho / 50
    rel = [e for e in synth.ledger_ if e.label.startswith(prefix)]
    assert [e.label.rsplit(" ", 1)[1] for e in rel] == list(enc.names) == names
    assert sum(e.rho for e in rel) == getattr(p, share)  # the ledger's histograms = the plan's share
    for e in rel:
        assert e.rho == getattr(p, each)() and e.sensitivity == getattr(p.sens, sens) == 1.0
        assert e.sigma == pytest.approx(getattr(p, sigma), rel=1e-9)
    scales = method.noise_scales(db.schema, comp, rho, multipliers=mult)
    assert scales[key] == pytest.approx(getattr(p, sigma))
    _check_release_costs(p, [e for e in synth.ledger_ if e.component == fk])
    assert synth.accountant_.spent(fk) <= rho
    arrays = getattr(synth.database_.fits[fk], attr)
    assert len(arrays) == 1 and arrays[0].shape == shape and (arrays[0] >= 0).all()
    off = method.noise_scales(db.schema, plan.edges[0], rho, multipliers=mult)
    assert key not in off
    with pytest.raises(ParameterError, match=param):
        PrivPetal(**{param: 1})


def test_parent_children_tilt_the_drawn_sizes_to_the_released_counts(children_fit) -> None:  # noqa: ANN001
    """Sampling follows the released children per parent value whatever the model says: with the
    fit's release replaced by one that doubles kind 0's children (the data: ≈ 450 of ≈ 3,600),
    the synthetic children of kind-0 parts are the forced count within 4 standard deviations of
    the sizes' draw (each part's size is an independent draw with variance at most
    (N/2)² = 9, so 4·√(9·parts of kind 0) + 1 ≈ 147 children), as is every other kind's. Without
    the release kind 0 stays far from the forced count (the test shows nothing otherwise)."""
    db, plan, kind, synth, _ = children_fit
    fk = plan.edges[0].name
    f = synth.database_.fits[fk]
    saved = f.children
    n_x = np.bincount(kind, minlength=8)
    real = np.bincount(kind[db["items"]["pid"].to_numpy()], minlength=8).astype(float)
    want = real.copy()
    want[0] *= 2.0
    scale = float(np.sum(f.n_noisy)) / len(kind)  # the release is in children of ñ parents
    try:
        f.children = [want * scale]
        forced = synth.sample(random_state=3)
        f.children = None
        plain = synth.sample(random_state=3)
    finally:
        f.children = saved
    tol = 4 * np.sqrt(9.0 * n_x) + 1
    got = np.bincount(kind[forced.parent_index(fk)], minlength=8)
    # the targets are scaled to one total (the mean of their totals: here the one release's)
    assert np.all(np.abs(got - want) <= tol), (got, want, tol)
    off = np.bincount(kind[plain.parent_index(fk)], minlength=8)
    assert abs(off[0] - want[0]) > tol[0], (off, want)


def test_tilted_size_probs_meet_every_variables_children_and_the_size_histogram() -> None:
    """``tilted_size_probs`` on random distributions with two household variables: given the
    children per value that a known tilt produces (so a solution exists) and the size histogram
    it gives, the expected children per value of each variable match to 10⁻³ of a child per row
    and the size histogram to 10⁻⁶ (the IPF tolerance); rows sum to 1 and a size a context
    cannot have keeps probability 0. Targets beyond the sizes' range are clipped into it."""
    from relviz.relational.privpetal.method import tilted_size_probs

    rng = np.random.default_rng(0)
    n_ctx, N = 400, 6  # noqa: N806
    s = np.arange(N + 1)
    p = rng.dirichlet(np.ones(N + 1), n_ctx)
    p[:, 0] = 0.0
    p[rng.random((n_ctx, N + 1)) < 0.2] = 0.0
    p[:, 1] += 1e-3
    p /= p.sum(axis=1, keepdims=True)
    codes = {"a": rng.integers(0, 4, n_ctx), "b": rng.integers(0, 3, n_ctx)}
    counts = rng.integers(1, 30, n_ctx).astype(float)
    lam = rng.normal(0, 0.3, 4)[codes["a"]] + rng.normal(0, 0.3, 3)[codes["b"]]
    q0 = p * np.exp(lam[:, None] * s)
    q0 /= q0.sum(axis=1, keepdims=True)
    want = {v: np.bincount(c, weights=counts * (q0 @ s)) for v, c in codes.items()}
    rake = counts @ q0
    q = tilted_size_probs(p, codes, counts, want, rake)
    np.testing.assert_allclose(q.sum(axis=1), 1.0)
    assert np.all(q[p == 0] == 0)
    for v, c in codes.items():
        got = np.bincount(c, weights=counts * (q @ s))
        assert np.max(np.abs(got - want[v]) / np.bincount(c, weights=counts)) < 1e-3, v
    np.testing.assert_allclose(counts @ q, rake, atol=1e-6 * counts.sum())
    # a target above what the sizes allow: that value's rows all go to their largest size
    big = {"a": want["a"] * np.array([10.0, 1, 1, 1])}
    qb = tilted_size_probs(p, codes, counts, big)
    top = np.array([np.flatnonzero(r > 0).max() for r in p])
    rows = codes["a"] == 0
    assert np.all(qb[rows, top[rows]] > 0.99)


# -- Q. the parent–child pair margins (relviz's pair_margins, docs §5.10) ---------------------------

@pytest.mark.parametrize("preset", list(acc.PRESETS))
@pytest.mark.parametrize(("h", "a", "m", "margins"),
                         [(15, 17, 3, True), (6, 4, 1, False), (1, 5, 2, True), (3, 2, 9, False),
                          (4, 0, 2, False)])
def test_C2_pair_margins_plan_spends_exactly_the_fk_budget(preset: str, h: int, a: int, m: int,
                                                           margins: bool) -> None:
    """C2 with ``pair_margins = m``: the pair margins take PAIR_SHARE = 1/25 of the FK's ρ (none
    without a parent column, ``h = 1``, or a child column, ``a = 0``), taken before [P]'s split
    with the other additions' shares; at most ``(h − 1)·a`` pairs are planned, the other shares
    are those of the remaining ρ, the plan sums exactly (Fraction) to the FK's ρ, and with all
    the choice (one vector of the ``(h − 1)·a`` candidates' scores) costing PAIR_SELECT_SHARE of
    ρ_pairs at σ = Δ_score·√(q/(2ρ)) (none when every candidate is planned), each margin's
    σ = Δ_children·√(m/(2ρ)) realises cost ρ/m of what the choice leaves."""
    rho = Fraction(3, 7)
    sens = acc.FKSensitivity(1, 0, 1.0, 2.0, 3.0)
    plan = acc.plan_fk(rho, h=h, a=a, N=6, o=2, sens=sens, preset=preset, child_margins=margins,
                       pair_margins=m)
    assert plan.planned() == rho and plan.rho == rho
    n = min(m, (h - 1) * a)
    assert plan.n_pairs == n and plan.rho_pairs == (rho * acc.PAIR_SHARE if n else 0)
    rest = rho - plan.rho_pairs - plan.rho_margins
    base = acc.plan_fk(rest, h=h, a=a, N=6, o=2, sens=sens, preset=preset)
    for name in ("rho_n", "rho_R", "rho_hsub", "rho_isub", "rho_inter", "rho_intra", "rho_target"):
        assert getattr(plan, name) == getattr(base, name), name
    if n:
        # the choice takes PAIR_SELECT_SHARE unless every candidate is planned (nothing to choose)
        choose = n < (h - 1) * a
        assert plan.rho_pair_select == (plan.rho_pairs * acc.PAIR_SELECT_SHARE if choose else 0)
        assert plan.rho_pair_each(n) * n + plan.rho_pair_select == plan.rho_pairs
        assert (3.0 / plan.sigma_pairs) ** 2 / 2 == pytest.approx(float(plan.rho_pair_each(n)),
                                                                  rel=1e-12)
        if choose:  # one vector of (h − 1)·a scores, each of Δ_score = 8 (the default)
            q = (h - 1) * a
            assert (8.0 * math.sqrt(q) / plan.sigma_pair_scores) ** 2 / 2 == \
                pytest.approx(float(plan.rho_pair_select), rel=1e-12)
        else:
            assert math.isinf(plan.sigma_pair_scores)
    else:
        assert math.isinf(plan.sigma_pairs) and plan.rho_pair_each(1) == 0
        assert plan.rho_pair_select == 0
    with pytest.raises(ValueError, match="pair_margins"):
        acc.plan_fk(rho, h=h, a=a, N=6, o=2, sens=sens, pair_margins=-1)


@pytest.fixture(scope="module")
def pairs_fit():
    """The rare-public-value toy fitted with ``pair_margins=1`` (ε 0.2, λ 0.2)."""
    db, plan, kind = _rare_public_value()
    synth, syn = _fit_rare(db, plan, pair_margins=1)
    return db, plan, kind, synth, syn


def test_pair_margins_release_ledger_and_noise_scales(pairs_fit) -> None:  # noqa: ANN001
    """``pair_margins=1`` on the toy (one parent column ``kind``, one child column ``qty``): one
    release labelled "relviz: parent–child pair margin of kind × qty", at the plan's whole
    ``ρ_pairs`` (1/25 of the FK's ρ) with Δ_children (1: the entity is the item) and the σ the
    Budget panel shows; every other release costs its planned ρ and the ledger stays within the
    FK's ρ. The fit keeps the release as released (noisy counts, shape (8 kinds, 4 quantities))
    with the ledger's σ in ``pair_sigma``. Without the option the Budget panel has no such σ; a
    bool or negative value is a ParameterError."""
    from relviz.errors import ParameterError
    from relviz.relational.privpetal.method import PrivPetal

    db, plan, _, synth, _ = pairs_fit
    fk = plan.edges[0].name
    rho = Fraction(plan.rho_of(fk))
    method = synth.database_.method
    mult = multipliers(db.schema)
    comp = next(c for c in plan.with_params(fk, pair_margins=1).edges if c.name == fk)
    p = method.for_component(comp)._fk_plan(db.schema, db.schema.foreign_key(fk), rho, mult)[0]
    assert p.planned() == rho and p.rho_pairs == rho / 25 and p.n_pairs == 1
    rel = [e for e in synth.ledger_ if e.label.startswith("relviz: parent–child pair margin of ")]
    assert [e.label for e in rel] == ["relviz: parent–child pair margin of kind × qty"]
    assert rel[0].rho == p.rho_pairs and rel[0].sensitivity == p.sens.children == 1.0
    assert rel[0].sigma == pytest.approx(p.sigma_pairs, rel=1e-9)
    scales = method.noise_scales(db.schema, comp, rho, multipliers=mult)
    key = "relviz: parent–child pair margins σ (each of at most 1; fewer kept share the same ρ)"
    assert scales[key] == pytest.approx(p.sigma_pairs)
    _check_release_costs(p, [e for e in synth.ledger_ if e.component == fk])
    assert synth.accountant_.spent(fk) <= rho
    got = synth.database_.fits[fk].pair_margins
    assert list(got) == [(0, 0)] and got[(0, 0)].shape == (8, 4)
    assert synth.database_.fits[fk].pair_sigma == {(0, 0): pytest.approx(rel[0].sigma, rel=1e-9)}
    assert key not in method.noise_scales(db.schema, plan.edges[0], rho, multipliers=mult)
    for bad in (True, -1, 1.5):
        with pytest.raises(ParameterError, match="pair_margins"):
            PrivPetal(pair_margins=bad)


def test_pair_block_size_pools_until_a_block_cell_is_twice_its_noise() -> None:
    """``g = ⌈(z·σ·cols/n̄)²⌉`` clipped to ``1…rows`` (docs §5.10): TPC-H's ``P_TYPE ×
    l_quantity#hi`` at ε 0.4 (150 × 11 cells, 2·10⁶ children, σ 1,135) pools 4 types
    (``(2·1135·11/13,333)² = 3.51``); a block of ``g`` holds ``g·n̄/cols`` children per cell
    against ``σ·√g`` of noise, and ``g − 1`` would miss the ratio ``z``. Strong rows, σ = 0 or ∞
    and one row are not pooled; a released total ≤ 0 pools every row."""
    from relviz.relational.privpetal.method import PAIR_BLOCK_Z, pair_block_size

    g = pair_block_size(2e6, 150, 11, 1135.0)
    assert g == 4
    nbar = 2e6 / 150
    assert g * nbar / 11 >= PAIR_BLOCK_Z * 1135.0 * math.sqrt(g)
    assert (g - 1) * nbar / 11 < PAIR_BLOCK_Z * 1135.0 * math.sqrt(g - 1)
    assert pair_block_size(2e6, 25, 11, 1135.0) == 1  # the brand: 8·10⁴ children a row
    assert pair_block_size(2e6, 150, 11, 0.0) == 1
    assert pair_block_size(2e6, 150, 11, math.inf) == 1
    assert pair_block_size(100.0, 1, 11, 1135.0) == 1
    assert pair_block_size(-5.0, 40, 3, 10.0) == 40
    assert pair_block_size(10.0, 40, 3, 1e6) == 40


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_margins_pool_noisy_rows_before_sampling(seed: int) -> None:
    """A noisy release (64 parent values × 5 child values, 200 children each, σ = 60: a mean cell
    of 40 against σ 60) of a ``p(k | x)`` that moves slowly with the code ``x``: the targets
    :func:`_pair_targets` gives pool ``g = ⌈(2·60·5/200)²⌉ = 9`` codes at the exact total (8–17
    with the released total's noise, σ·√320 ≈ 1,070 on 12,800), which divides each cell's noise
    by ``√g ≥ 2.8`` and adds the small bias of the trend within a block; the rows' mean total
    variation distance from the truth is asserted below 0.6 times the unpooled one (unpooled
    0.33–0.38 from noise of 0.3 per cell of about 0.2; pooled 0.13–0.21; the ratio 0.39–0.58 on
    seeds 0–11, the blocks projected onto non-negative counts of their noisy sums and raked to
    the column totals: the trend within a block and the noise of the sums keep it above
    ``1/√g``). Without ``pair_sigma`` (a fit pickled before it) the
    rows are not pooled, and a margin that sums to ≤ 0 over every child value is skipped."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _pair_targets, pair_block_size

    rng = np.random.default_rng(seed)
    x = np.arange(64)
    logits = np.outer(x / 63.0, np.arange(5) - 2.0)
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    noisy = truth * 200.0 + rng.normal(0.0, 60.0, truth.shape)
    pooled = _pair_targets(SimpleNamespace(pair_margins={(2, 1): noisy}, pair_sigma={(2, 1): 60.0}))
    plain = _pair_targets(SimpleNamespace(pair_margins={(2, 1): noisy}, pair_sigma=None))

    def tv(p: np.ndarray) -> float:
        return float(0.5 * np.abs(p - truth).sum(axis=1).mean())

    got, raw = pooled[1][("H", 2)], plain[1][("H", 2)]
    assert got.shape == raw.shape == (64, 5) and np.allclose(got.sum(axis=1), 1.0)
    g = pair_block_size(float(noisy.sum()), 64, 5, 60.0)  # 9 at the exact total
    assert g >= 8 and np.array_equal(got[0], got[g - 1]) and not np.array_equal(got[g - 1], got[g])
    assert tv(got) < 0.6 * tv(raw), (tv(got), tv(raw))
    assert _pair_targets(SimpleNamespace(pair_margins={(0, 0): -np.ones((4, 3))},
                                         pair_sigma={(0, 0): 1.0})) == {}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_targets_do_not_shrink_a_skewed_relation_toward_uniform(seed: int) -> None:
    """A released pair margin of 300 parent values × 10 child values, 10,000 children a row,
    each row putting 0.9 on one value and 0.1/9 on the others, σ = 300 (no pooling:
    ``⌈(2·300·10/10,000)²⌉ = 1``). Clamping the noisy cells at 0 adds ``E[max(0, X)]`` ≈ 183
    children (``X ~ N(111, 300²)``) to each small cell, about 1,650 a row, so the dominant share
    comes out near 9,000/10,650 ≈ 0.85 (asserted below 0.87; measured 0.83–0.87 on seeds 0–5 at
    30 rows). :func:`_pair_targets` projects each row onto the non-negative counts with its noisy
    sum and rakes the rows to the projected column totals (docs §5.10); the projection removes
    most of that positive part (what is left, the small cells' noise above the projection's
    threshold, costs about 0.01), so the mean dominant share is asserted within 0.02 of 0.9
    (that 0.01 plus 4 standard errors of the mean over 300 rows, 0.004 each; measured 0.886–0.894
    on seeds 0–11)."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _pair_targets

    rng = np.random.default_rng(seed)
    rows, k, n, sigma = 300, 10, 10_000.0, 300.0
    truth = np.full((rows, k), 0.1 / 9)
    top = np.arange(rows) % k
    truth[np.arange(rows), top] = 0.9
    noisy = truth * n + rng.normal(0.0, sigma, truth.shape)
    got = _pair_targets(SimpleNamespace(pair_margins={(0, 1): noisy}, pair_sigma={(0, 1): sigma}))
    p = got[1][("H", 0)]
    assert p.shape == (rows, k) and np.allclose(p.sum(axis=1), 1.0) and (p >= 0).all()
    share = p[np.arange(rows), top]
    assert abs(float(share.mean()) - 0.9) < 0.02, share.mean()
    clamped = np.maximum(noisy, 0.0)
    clamped /= clamped.sum(axis=1, keepdims=True)
    assert float(clamped[np.arange(rows), top].mean()) < 0.87


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_targets_keep_child_values_no_parent_value_has_near_empty(seed: int) -> None:
    """40 parent values × 10 child values, 2,000 children a row, all of them on the first five
    child values (TPC-H's `l_quantity#hi` above 5 is nearly empty for every part), σ = 150. A
    row projected alone keeps about 0.1 of its mass on the five empty values (measured
    0.08–0.11; clamped 0.10–0.13): its positive noise there. The column totals over the 40 rows
    carry noise σ·√40 ≈ 950 against 16,000 on each used value, so raking the rows to them
    (:func:`_pair_targets`, docs §5.10) leaves under 0.05 there (about 5 × 400/80,000 from the
    projected totals' positive part; measured 0.002–0.040 on seeds 0–11)."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _pair_targets

    rng = np.random.default_rng(seed)
    truth = np.zeros((40, 10))
    truth[:, :5] = rng.dirichlet(np.full(5, 5.0), size=40)
    noisy = truth * 2000.0 + rng.normal(0.0, 150.0, truth.shape)
    p = _pair_targets(SimpleNamespace(pair_margins={(0, 1): noisy}, pair_sigma={(0, 1): 150.0}))[1][("H", 0)]
    assert np.allclose(p.sum(axis=1), 1.0) and (p >= 0).all()
    assert float(p[:, 5:].sum(axis=1).mean()) < 0.05
    clamped = np.maximum(noisy, 0.0)
    clamped /= clamped.sum(axis=1, keepdims=True)
    assert float(clamped[:, 5:].sum(axis=1).mean()) > 0.08


def test_pair_targets_pool_the_column_totals_of_every_margin_of_a_child_column() -> None:
    """Two released margins of the same child column (5 × 4 at σ 2, 20 × 4 at σ 1) count the same
    children over it: :func:`_pooled_columns` weighs their column sums by ``1/(H·σ²)`` (1/20 and
    1/20 here, so the plain mean of the two), takes a margin without a σ as it is, and
    :func:`_pair_targets` rakes every margin's rows to those pooled totals: both targets, weighted
    by their rows' sums, give the same distribution of the child column."""
    from types import SimpleNamespace

    from relviz.relational.privpetal.method import _pair_targets, _pooled_columns

    rng = np.random.default_rng(3)
    a = rng.uniform(50.0, 150.0, (5, 4))
    b = rng.uniform(10.0, 40.0, (20, 4))
    cols = _pooled_columns({(0, 2): a, (1, 2): b}, {(0, 2): 2.0, (1, 2): 1.0})
    assert np.allclose(cols[2], (a.sum(axis=0) + b.sum(axis=0)) / 2)
    assert np.allclose(_pooled_columns({(0, 2): a, (1, 2): b}, {(1, 2): 1.0})[2], a.sum(axis=0))
    got = _pair_targets(SimpleNamespace(pair_margins={(0, 2): a, (1, 2): b},
                                        pair_sigma={(0, 2): 2.0, (1, 2): 1.0}))[2]
    pa = (got[("H", 0)] * a.sum(axis=1, keepdims=True)).sum(axis=0)
    pb = (got[("H", 1)] * b.sum(axis=1, keepdims=True)).sum(axis=0)
    want = cols[2] / cols[2].sum()
    assert np.allclose(pa / pa.sum(), want, atol=1e-6) and np.allclose(pb / pb.sum(), want, atol=1e-6)


def test_pair_margins_rake_the_drawn_children_to_the_released_relation(pairs_fit) -> None:  # noqa: ANN001
    """Sampling follows the released pair margin whatever the model says: with the fit's release
    replaced by one (at σ 1: no rows pooled) that gives every kind ``x`` the quantity ``(x + 2) mod 4`` with probability
    .85 (the data: ``(x + {0, 1}) mod 4``, so never ``x + 2``), the synthetic items' ``p(qty |
    kind)``, averaged over the items, is within 0.03 of it in total variation (the raked
    expectation is exact to the IPF tolerance; what is left is the rounding of the draws per
    context over ≈ 3,600 items, measured 0.008–0.010 on sampling seeds 3–5), and the sizes,
    drawn before any column, are unchanged. Without the pair margin it stays far (asserted
    ≥ 0.5, measured 0.62–0.63; the data's own relation puts no mass on ``x + 2``)."""
    db, plan, kind, synth, _ = pairs_fit
    fk = plan.edges[0].name
    f = synth.database_.fits[fk]
    saved = f.pair_margins
    want = np.full((8, 4), 0.05)
    want[np.arange(8), (np.arange(8) + 2) % 4] = 0.85
    saved_sigma = f.pair_sigma
    try:
        f.pair_margins, f.pair_sigma = {(0, 0): want * 400.0}, {(0, 0): 1.0}  # rows not pooled
        forced = synth.sample(random_state=3)
        f.pair_margins = None
        plain = synth.sample(random_state=3)
    finally:
        f.pair_margins, f.pair_sigma = saved, saved_sigma

    def miss(d) -> float:  # noqa: ANN001
        k = kind[d.parent_index(fk)]
        q = d["items"]["qty"].to_numpy().astype(int)
        joint = np.zeros((8, 4))
        np.add.at(joint, (k, q), 1.0)
        rows = joint.sum(axis=1)
        cond = joint / np.maximum(rows, 1)[:, None]
        return float((rows * 0.5 * np.abs(cond - want).sum(axis=1)).sum() / rows.sum())

    assert miss(forced) <= 0.03, miss(forced)
    assert miss(plain) >= 0.5, miss(plain)
    assert np.array_equal(np.bincount(forced.parent_index(fk), minlength=len(kind)),
                          np.bincount(plain.parent_index(fk), minlength=len(kind)))


class _ScoreBudget:
    """A stand-in for ``Budget`` in the pair choice: records the exact score vector and returns
    it unchanged (no noise)."""

    def __init__(self) -> None:
        self.exact: list[np.ndarray] = []

    def gaussian(self, values, **kw):  # noqa: ANN001, ANN003, ANN201
        self.exact.append(np.asarray(values, dtype=np.float64).copy())
        return self.exact[-1].copy(), 0.0


def _planted_pairs(rng: np.random.Generator, n_h: int = 4000):  # noqa: ANN202
    """Households (A: 8 codes, B: 5 codes, C: 3 codes) with 1–5 children (X: 4 codes,
    X = A mod 4 w.p. .7; Y: 3 codes, Y = C w.p. .2; Z: 6 codes, independent)."""
    A = rng.integers(0, 8, n_h)  # noqa: N806
    C = rng.integers(0, 3, n_h)  # noqa: N806
    hcodes = np.stack([A, rng.integers(0, 5, n_h), C], axis=1)
    parent = np.repeat(np.arange(n_h), rng.integers(1, 6, n_h))
    n = len(parent)
    x = np.where(rng.random(n) < 0.7, A[parent] % 4, rng.integers(0, 4, n))
    y = np.where(rng.random(n) < 0.2, C[parent], rng.integers(0, 3, n))
    icodes = np.stack([x, y, rng.integers(0, 6, n)], axis=1)
    return private(hcodes, icodes, parent, (8, 5, 3), (4, 3, 6), 5), n


def test_pair_scores_rank_the_planted_pairs_first() -> None:
    """``PrivateFK.release_pair_scores`` (docs §5.10) on households whose child column ``X``
    follows the parent's ``A`` and ``Y`` (weakly) its ``C``: over 4 data seeds the exact scores
    rank ``(A, X)`` then ``(C, Y)`` first, and every independent pair scores within its
    sampling noise of 0 (below a sixth of ``(C, Y)``'s). Released through a real budget at
    ρ 0.05 (σ = 4·√9/√0.1 ≈ 38 children on ≈ 12,000), the best two are the same on every seed:
    one Gaussian release, labelled, at the given ρ with L2 sensitivity √9·4."""
    cand = [(j, k) for j in range(3) for k in range(3)]
    for seed in range(4):
        priv, n = _planted_pairs(np.random.default_rng(seed))
        fake = _ScoreBudget()
        priv.release_pair_scores(fake, cand, rho=Fraction(1, 20), sensitivity_each=4.0,
                                 total=float(n), label="scores")
        exact = dict(zip(cand, fake.exact[0]))
        assert sorted(cand, key=lambda c: -exact[c])[:2] == [(0, 0), (2, 1)], exact
        others = [exact[c] for c in cand if c not in ((0, 0), (2, 1))]
        assert max(np.abs(others)) < exact[(2, 1)] / 6, exact
        acct = Accountant(Fraction(1), delta=1e-6)
        budget = Budget(acct, "fk", Fraction(1), np.random.default_rng(seed))
        noisy = priv.release_pair_scores(budget, cand, rho=Fraction(1, 20), sensitivity_each=4.0,
                                         total=float(n), label="scores")
        assert [cand[q] for q in np.argsort(-noisy)[:2]] == [(0, 0), (2, 1)]
        (e,) = acct.ledger
        assert (e.label, e.rho, e.sensitivity) == ("scores", Fraction(1, 20), 12.0)


def test_pair_score_moves_less_than_4_per_child_row() -> None:
    """The pair score's bound (``FKSensitivity.score``, docs §5.10: < 4 per child row added or
    removed): on 60 random small FKs, removing any one child row moves every candidate's score
    by less than 4, and the largest move seen (3.08 when written) exceeds 2, so a bound of half
    would be wrong."""
    worst = 0.0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        hc, ic, parent, hdom, idom = tiny_fk(rng, n_h=int(rng.integers(3, 9)), max_size=3,
                                             h=3, a=2, vals=3)
        if len(parent) < 2:
            continue
        cand = [(j, k) for j in range(3) for k in range(2)]
        ref = _ScoreBudget()
        private(hc, ic, parent, hdom, idom, 3).release_pair_scores(
            ref, cand, rho=Fraction(1), sensitivity_each=4.0, total=10.0, label="s")
        for row in range(len(parent)):
            keep = np.arange(len(parent)) != row
            nb = _ScoreBudget()
            private(hc, ic[keep], parent[keep], hdom, idom, 3).release_pair_scores(
                nb, cand, rho=Fraction(1), sensitivity_each=4.0, total=10.0, label="s")
            move = float(np.abs(ref.exact[0] - nb.exact[0]).max())
            assert move < 4.0, (seed, row, move)
            worst = max(worst, move)
    assert worst > 2.0, worst


def test_pair_scores_sigma_in_the_budget_panel() -> None:
    """With ``pair_margins=1`` on an FK with several candidate pairs (the neighbour harness's
    households → persons), the Budget panel's noise scales carry the score vector's σ (what
    the plan releases: ``Δ_score·√q/√(2ρ_select)``, Δ_score = 4·(r + 2m) of the child table)
    beside the margin's; with every candidate measured there is no score row."""
    from relviz.plan import Plan
    from relviz.relational.privpetal.method import PrivPetal
    from tests.privacy.neighbours import fixed_household_db

    db = fixed_household_db(12, seed=1)
    schema, mult = db.schema, multipliers(db.schema)
    fk = schema.foreign_key("persons.hid->households")
    rho = Fraction(1, 10)
    base = Plan.default(schema, 1.0, 1e-6, method="privpetal")
    me = PrivPetal()
    for m in (1, 10 ** 6):
        comp = base.with_params(fk.name, pair_margins=m).component(fk.name)
        p = me.for_component(comp)._fk_plan(schema, fk, rho, mult)[0]
        q = (p.h - 1) * p.a
        scales = me.noise_scales(schema, comp, rho, multipliers=mult)
        key = (f"relviz: parent–child pair scores σ (each of {q} candidates, one vector; at most "
               f"{p.n_pairs} above the threshold are measured)")
        if m == 1:
            assert q > 1 and p.sens.score == 4.0 * mult.table_score(fk.child)
            assert scales[key] == pytest.approx(p.sens.score * math.sqrt(q / (2 * float(p.rho_pair_select))))
        else:
            assert p.n_pairs == q and key not in scales
        assert scales[f"relviz: parent–child pair margins σ (each of at most {p.n_pairs}; fewer "
                      "kept share the same ρ)"] == \
            pytest.approx(p.sigma_pairs)


def test_pair_margins_skip_a_pair_the_public_parent_implies() -> None:
    """``_Run.release_pair_margins`` (docs §5.10) keeps the best scored pairs but skips one whose
    parent column a kept pair's determines in the public parent table: households with ``A``
    (8 codes), ``A2 = A // 2`` and ``C`` (3 codes), children ``X`` ← ``A`` and ``Y`` ← ``C``
    (weakly). The exact scores rank ``(A, X)``, ``(A2, X)``, ``(C, Y)``; with the parent public
    the two margins are ``(A, X)`` and ``(C, Y)`` (``A`` determines ``A2``), with a private
    parent ``(A, X)`` and ``(A2, X)``; the ledger gets the one score vector at ρ_select and the
    two margins sharing the rest of ρ_pairs either way."""
    rng = np.random.default_rng(5)
    n_h = 4000
    A = rng.integers(0, 8, n_h)  # noqa: N806
    C = rng.integers(0, 3, n_h)  # noqa: N806
    hcodes = np.stack([A, A // 2, C], axis=1)
    parent = np.repeat(np.arange(n_h), rng.integers(1, 6, n_h))
    n = len(parent)
    x = np.where(rng.random(n) < 0.7, A[parent] % 4, rng.integers(0, 4, n))
    y = np.where(rng.random(n) < 0.3, C[parent], rng.integers(0, 3, n))
    icodes = np.stack([x, y], axis=1)
    rho = Fraction(1)
    p = alg.Params(lam=1.0, k=10, fit_iters=40, refit_iters=10, t1_picks=2, t1_iters=2, n_mrf=4)
    for public, want in ((True, [("A", "X"), ("C", "Y")]), (False, [("A", "X"), ("A2", "X")])):
        priv = private(hcodes, icodes, parent, (8, 4, 3), (4, 3), 5)
        a = Accountant(rho, delta=1e-6)
        budget = Budget(a, "fk", rho, np.random.default_rng(0))
        plan = acc.plan_fk(rho, h=4, a=2, N=5, o=2, sens=acc.FKSensitivity(1, 0), pair_margins=2)
        run = alg._Run("fk", priv, budget, plan, p, ["A", "A2", "C"], ["X", "Y"],
                       lambda f, m="": None, 0, public_hcodes=hcodes if public else None)
        run.n_noisy = np.bincount(np.bincount(parent, minlength=n_h), minlength=6).astype(float)
        assert run.determines(0, 1) is public and not run.determines(1, 0)
        assert not run.determines(0, 2) and run.determines(2, 2)
        got = run.release_pair_margins()
        assert run.pair_picks == want, (public, run.pair_scores)
        assert [(s[1], s[2]) for s in run.pair_scores[:3]] == [("A", "X"), ("A2", "X"), ("C", "Y")]
        assert [m.shape for m in got.values()] == [(8, 4), (3, 3) if public else (4, 4)]
        labels = [e.label for e in a.ledger]
        assert labels == ["relviz: parent–child pair scores (6 candidates)"] + \
            [f"relviz: parent–child pair margin of {j} × {k}" for j, k in want]
        assert sum(e.rho for e in a.ledger) == plan.rho_pairs


@pytest.mark.parametrize("seed", range(3))
def test_pair_margins_measure_only_pairs_above_the_threshold(seed: int) -> None:
    """``_Run.release_pair_margins`` (docs §5.10) measures only pairs whose noisy score clears
    ``Φ⁻¹(1 − PAIR_LEVEL/q)·σ_score``: with ``pair_margins=3`` on :func:`_planted_pairs`
    (``(A, X)`` and, weakly, ``(C, Y)`` associated; q = 9 candidates) at ρ_FK = 1 the score σ
    is ``4·√9/√(2·ρ_select)`` ≈ 38 against exact scores in the thousands for the planted pairs
    and within sampling noise of 0 for the others, so exactly the two planted pairs are measured
    (not a third); with the children's columns shuffled (no association) no score clears it
    and the single best is measured. Either way the ledger spends ``rho_pairs`` exactly. Three
    seeds: a third pick from noise has probability ≤ 0.05 per seed by the Bonferroni bound."""
    rng = np.random.default_rng(seed)
    priv, n = _planted_pairs(rng)
    p = alg.Params(lam=1.0, k=10, fit_iters=40, refit_iters=10, t1_picks=2, t1_iters=2, n_mrf=4)
    for shuffled in (False, True):
        if shuffled:
            perm = rng.permutation(len(priv._i))
            priv = private(priv._h.copy(), priv._i[perm].copy(), priv._parent.copy(), (8, 5, 3),
                           (4, 3, 6), 5)
        rho = Fraction(1)
        a = Accountant(rho, delta=1e-6)
        budget = Budget(a, "fk", rho, np.random.default_rng(seed))
        plan = acc.plan_fk(rho, h=4, a=3, N=5, o=2, sens=acc.FKSensitivity(1, 0), pair_margins=3)
        run = alg._Run("fk", priv, budget, plan, p, ["A", "B", "C"], ["X", "Y", "Z"],
                       lambda f, m="": None, 0)
        run.n_noisy = np.bincount(np.bincount(priv._parent, minlength=4000),
                                  minlength=6).astype(float)
        run.release_pair_margins()
        cut = NormalDist().inv_cdf(1 - alg.PAIR_LEVEL / 9) * plan.sigma_pair_scores
        above = [(s[1], s[2]) for s in run.pair_scores if s[0] >= cut]
        if shuffled:
            assert above == [] and len(run.pair_picks) == 1, run.pair_scores
            assert run.pair_picks[0] == run.pair_scores[0][1:]
        else:
            assert run.pair_picks == above == [("A", "X"), ("C", "Y")], run.pair_scores
        assert sum(e.rho for e in a.ledger) == plan.rho_pairs


def test_pooled_children_total_is_unbiased_and_tighter() -> None:
    """``pool_totals`` (docs §5.12): the children total pooled from the group sizes and six
    released histograms of all the children is unbiased and has the inverse-variance formula's
    spread, here a seventh of the sizes' own total's (TPC-H ``orders → customer`` at ε 0.2:
    σ_n = 175, N = 9, six histograms of 3–12 cells at σ = 465, a public number of groups).
    Over 4,000 noise draws (seeded): the mean is within 4 standard errors of the truth, the
    standard deviation within 10 % of the formula's (a sample standard deviation of 4,000
    normal draws has a relative standard error of 1/√8,000 ≈ 1.1 %), and the sizes-only
    estimate given the exact number of groups has ``σ_n·√Σ(s − s̄)²``."""
    rng = np.random.default_rng(0)
    n = np.array([6955, 19614, 28858, 30199, 24565, 17153, 10669, 6065, 3174, 2748], float)
    s = np.arange(n.size, dtype=float)
    total, groups = float(s @ n), float(n.sum())
    cells = [3, 7, 12, 4, 8, 5]
    hists = [np.full(c, total / c) for c in cells]
    sn, sh, reps = 175.0, 465.0, 4000
    pooled, alone, raw = [], [], []
    for _ in range(reps):
        y = n + rng.normal(0, sn, n.size)
        hs = [(h + rng.normal(0, sh, h.size), sh) for h in hists]
        pooled.append(alg.pooled_children_total(y, sn, hs, groups))
        alone.append(alg.pooled_children_total(y, sn, [], groups))
        raw.append(alg.pooled_children_total(y, sn, hs[:0]))
        assert raw[-1] == pytest.approx(float(s @ y))
    c = s - s.mean()
    sd_alone = sn * math.sqrt(float(c @ c))
    sd_pooled = 1 / math.sqrt(1 / sd_alone ** 2 + sum(1 / (sh ** 2 * k) for k in cells))
    sd_raw = sn * math.sqrt(float(s @ s))
    for est, sd in ((pooled, sd_pooled), (alone, sd_alone), (raw, sd_raw)):
        est = np.asarray(est)
        assert abs(est.mean() - total) < 4 * sd / math.sqrt(reps)
        assert est.std() == pytest.approx(sd, rel=0.10)
    assert sd_pooled < sd_raw / 6


def _recorded(release, store: dict, key: str):  # noqa: ANN001, ANN202
    """``release`` that also keeps its raw output in ``store[key]``."""
    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        store[key] = release(*args, **kwargs)
        return store[key]
    return wrapped


def test_pool_totals_gives_the_sizes_the_pooled_children_total() -> None:
    """With ``child_margins`` on and a public parent, Algorithm 1's consistent group sizes hold
    the children total that :func:`pooled_children_total` gives from the run's own raw releases
    (the sizes and the one-way histograms), and with ``pool_totals=False`` the sizes' own total;
    both runs see the same releases (post-processing) and stay within the budget."""
    priv, _ = _gate_fk(0, planted=False)
    seen: dict[bool, float] = {}
    releases: list[dict] = []
    for pool in (True, False):
        rho = Fraction(1, 10)
        a = Accountant(rho, delta=1e-6)
        budget = Budget(a, "fk", rho, np.random.default_rng(3))
        plan = acc.plan_fk(rho, h=3, a=3, N=priv.N, o=2, sens=acc.FKSensitivity(1, 0),
                           child_margins=True)
        p = alg.Params(lam=1.0, k=10, fit_iters=40, refit_iters=10, t1_picks=2, t1_iters=2,
                       n_mrf=4, child_margins=True, pool_totals=pool)
        groups = 20_000  # _gate_fk's households, all public here
        run = alg._Run("fk", priv, budget, plan, p, ["h0", "h1"], ["i0", "i1", "i2"],
                       lambda f, m="": None, 0, public_groups=groups)
        got: dict = {}
        run.priv.release_sizes = _recorded(run.priv.release_sizes, got, "n")
        run.priv.release_child_margins = _recorded(run.priv.release_child_margins, got, "m")
        try:
            run.run()
        finally:
            del run.priv.release_sizes, run.priv.release_child_margins
        s = np.arange(run.n_noisy.size)
        want = alg.pooled_children_total(got["n"], plan.sigma_n,
                                         [(m, plan.sigma_margins) for m in got["m"]], groups) \
            if pool else float(s @ got["n"])
        seen[pool] = float(s @ run.n_noisy)
        assert seen[pool] == pytest.approx(want, rel=1e-4), (pool, seen[pool], want)
        assert a.spent() <= a.rho_total
        releases.append(got)
    assert np.array_equal(releases[0]["n"], releases[1]["n"])
    assert all(np.array_equal(x, y) for x, y in zip(releases[0]["m"], releases[1]["m"]))
    assert seen[True] != seen[False]
