"""Empirical privacy audit: a statistical LOWER bound on ε for each method's most sensitive release.

What it measures
----------------
For each method (single-table mechanisms, 1:N linkers, the M:N relation method) the audit builds a
tiny pair of neighbouring databases ``D``, ``D'`` under the schema's declared privacy unit, chosen
so that the method's audited release differs as much as the unit allows (an entity unit: ``D'`` is
``D`` without one household and the persons that depend on it; the row unit: one row of ``D``
changes its values and the relationships attached to it). It then calls the method's public
``fit`` ``N`` times on each database, with a fresh random seed every time, on the real code path
(cap enforcement, :class:`~relviz.privacy.measure.Curator`, the schema's multipliers, a
:class:`~relviz.privacy.budget.Budget` on a fresh accountant). The noisy releases are captured by
wrapping the mechanisms that :class:`Budget` calls (``gaussian_mechanism`` and
``exponential_mechanism`` as referenced by ``relviz.privacy.budget``); a run stops right after
the audited release (what follows is post-processing, or later releases that are not audited).

Each run is reduced to one scalar, the Neyman–Pearson statistic of the pair (the auditor knows
both databases): for a Gaussian release ``y`` the log-likelihood ratio
``log N(y; f(D), σ_D²) − log N(y; f(D'), σ_D'²)`` (with equal σ, the projection of ``y`` on
``f(D) − f(D')``); for an exponential-mechanism choice ``i`` the log-ratio of its probabilities
under the two score vectors. Then the standard distinguishing test of DP auditing (Ding, Wang,
Wang, Zhang & Kifer, "Detecting Violations of Differential Privacy", CCS 2018; Jagielski, Ullman &
Oprea, "Auditing Differentially Private Machine Learning: How Private is Private SGD?", NeurIPS
2020; Nasr, Song, Thakurta, Papernot & Carlini, "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning", IEEE S&P 2021): for a threshold ``t`` and the event
``S = {stat ≥ t}`` (or its complement), with ``TPR = P_D[S]`` and ``FPR = P_D'[S]`` (and the
reverse roles of ``D`` and ``D'``), (ε, δ)-DP requires ``TPR ≤ e^ε·FPR + δ``, so

    ε_lb = max over t, S, direction of  log((TPR_low − δ) / FPR_high),

where ``TPR_low`` and ``FPR_high`` are one-sided Clopper–Pearson bounds (``scipy.stats.beta``) at
level α/2 each, so that ``ε_lb`` holds with confidence ≥ 1 − α (α = 0.05). The threshold, event
and direction are chosen on the first third of the runs and the bound is computed on the other
two thirds only, so the maximisation does not inflate the bound.

The claimed ε is the tightest (ε, δ) that the accounted cost of the audited release alone implies:
for a Gaussian release of cost ρ the exact Gaussian-DP curve with μ = √(2ρ) (Dong, Roth & Su,
"Gaussian Differential Privacy", 2022; ``relviz.privacy.accountant.gdp_epsilon``); for an
exponential-mechanism choice the smaller of its pure ε and the zCDP conversion of ε²/8 (Canonne,
Kamath & Steinke 2020; ``zcdp_epsilon``). Releases before the audited one are either irrelevant
to its output distribution or held fixed at one public value on both databases (MST's noisy
1-way marginals when its first tree edge is audited; bi-adjacency's noisy link count m̂ when its
measurement is audited): adaptive composition requires every step to be private for every value
of the earlier outputs. ρ is chosen so that the claim is about ε = 1 at
δ = 1e-5.

Two exact checks come with each row: ``Δ real/claim``, the realised sensitivity of the pair
(``‖f(D) − f(D')‖₂``, or the largest score change) over the sensitivity the release was charged
for (> 1 is a sensitivity bug, proven by the pair), and ``pair ε``, the exact ε of the pair
itself (Gaussian with equal σ: ``gdp_epsilon(‖f(D) − f(D')‖/σ, δ)``; exponential: the largest
log-probability ratio). A row fails when ``ε_lb > claimed`` or ``pair ε > claimed`` or
``Δ real/claim > 1``; the script then prints the failure loudly and exits with status 1. A
warning is printed when the noise scale differs between ``D`` and ``D'`` (a noise scale that
depends on the data is not covered by the Gaussian mechanism's accounting).

Two deliberately broken controls show that the audit detects violations: the independent
mechanism told a histogram sensitivity 4× too small, and MST's selection told a score sensitivity
4× too small. Their lower bounds should exceed their claims (they are expected to "fail"; they do
not set the exit status).

How to run
----------
``python benchmarks/privacy_audit.py`` (defaults: ``--runs 5000`` per side, 40 % of that for
bi-adjacency whose fit is slower; about 4 minutes on 2 shared cores). Options: ``--runs N``,
``--methods independent,mst,degree,biadjacency,control``, ``--seed S``, ``--epsilon E`` (target
claim), ``--delta D``, ``--out PATH`` (JSON; a CSV with the same stem is written beside it;
default ``benchmarks/results/privacy_audit.json``). ``--runs 200`` is a smoke run (< 1 min).

Limitations
-----------
A lower bound is evidence, not proof: ``ε_lb ≤ claimed`` on these pairs does not show that the
implementation is private (other pairs, other releases, the composition of releases, floating
point, and the sampling of the noise are not covered). With N runs per side the bound cannot
exceed about ``log(N/ln(1/α))`` and, for a correct mechanism at claimed ε ≈ 1 and δ = 1e-5, it
stays well below the claim (δ is far smaller than 1/N, so the tails where the privacy loss is
largest are never observed). Only ``ε_lb > claimed`` (at 95 % confidence), ``pair ε > claimed``
or ``Δ real/claim > 1`` are findings. Each audit targets one release; for bi-adjacency the
configuration is reduced (k = 2 and one attribute per table: a single cross-table workload, so
the measured workload is fixed and its selection step, with one candidate, is not audited).
The worst-case pairs are constructed by hand (and, for MST's selection, by a small search over
data sets); a stronger pair may exist.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's relviz (not an editable install's)

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import beta as beta_dist

import relviz.privacy.budget as budget_module
from relviz.database import Database
from relviz.encoding import EncodedTable, encode_table
from relviz.privacy.accountant import Accountant, gdp_epsilon, gdp_mu, zcdp_epsilon
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.privacy.mechanisms import em_epsilon
from relviz.privacy.sensitivity import multipliers
from relviz.progress import silent
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

try:  # cap enforcement moved from sensitivity.py to measure.py; accept either
    from relviz.privacy.measure import enforce_caps
except ImportError:  # pragma: no cover
    from relviz.privacy.sensitivity import enforce_caps  # type: ignore[no-redef]

ALPHA = 0.05  # confidence of the lower bound: 1 − α
SELECT_FRACTION = 1 / 3  # runs used to choose the threshold; the bound uses the others
TAU = 3  # degree cap persons.hid → households in the audit schemas
COMPONENT = "audited component"
_TARGET = (1.0, 1e-5)  # (ε, δ) the audited releases' claims aim at (set by main)
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "privacy_audit.json"


# ---------------------------------------------------------------------------------------------
# capturing releases
# ---------------------------------------------------------------------------------------------
@dataclass
class Release:
    """One accounted release as the mechanism made it."""

    kind: str  # "gaussian" | "exponential"
    label: str
    exact: np.ndarray  # exact answers (Gaussian) or scores (exponential)
    output: Any  # noisy vector or chosen index
    sigma: float | None
    sensitivity: float
    rho: Fraction
    epsilon_em: float | None = None


class _Stop(Exception):
    """Raised inside ``fit`` right after the audited release (the rest is not audited)."""


class Capture:
    """Wrap the mechanisms that :class:`Budget` calls; record every release of a run.

    Args:
        target: Substring of the audited release's ledger label.
        kind: ``"gaussian"`` or ``"exponential"``.
        fix: ``{label prefix: vector}``: Gaussian releases whose output is replaced by a fixed
            public value (the same on both databases) after being charged as usual.
    """

    def __init__(self, target: str, kind: str, fix: dict[str, np.ndarray] | None = None) -> None:
        self.target, self.kind, self.fix = target, kind, dict(fix or {})
        self.releases: list[Release] = []
        self.hit: Release | None = None

    def reset(self) -> None:
        self.releases, self.hit = [], None

    def _record(self, rel: Release) -> None:
        self.releases.append(rel)
        if rel.kind == self.kind and self.target in rel.label:
            self.hit = rel
            raise _Stop

    def __enter__(self) -> Capture:
        self._g, self._e = budget_module.gaussian_mechanism, budget_module.exponential_mechanism
        orig_g, orig_e = self._g, self._e

        def gaussian(values, **kw):  # noqa: ANN001, ANN202
            noisy, sigma = orig_g(values, **kw)
            label = str(kw.get("label", ""))
            for prefix, value in self.fix.items():
                if label.startswith(prefix):
                    noisy = np.array(value, dtype=np.float64, copy=True)
            self._record(Release("gaussian", label, np.asarray(values, dtype=np.float64).copy(),
                                 np.asarray(noisy, dtype=np.float64).copy(), float(sigma),
                                 float(kw["sensitivity"]), Fraction(kw["rho"])))
            return noisy, sigma

        def exponential(scores, **kw):  # noqa: ANN001, ANN202
            i = orig_e(scores, **kw)
            # the ε the mechanism used, as its ledger entry records it
            ledger = kw["accountant"].ledger
            eps = getattr(ledger[-1], "epsilon_em", None) if ledger else None
            self._record(Release("exponential", str(kw.get("label", "")),
                                 np.asarray(scores, dtype=np.float64).copy(), int(i), None,
                                 float(kw["sensitivity"]), Fraction(kw["rho"]),
                                 float(eps) if eps else em_epsilon(Fraction(kw["rho"]))))
            return i

        budget_module.gaussian_mechanism = gaussian
        budget_module.exponential_mechanism = exponential
        return self

    def __exit__(self, *exc: object) -> None:
        budget_module.gaussian_mechanism, budget_module.exponential_mechanism = self._g, self._e


# ---------------------------------------------------------------------------------------------
# the audit test (Clopper–Pearson bounds, held-out threshold)
# ---------------------------------------------------------------------------------------------
def _cp_low(k: np.ndarray, n: int, a: float) -> np.ndarray:
    k = np.asarray(k, dtype=float)
    return np.where(k > 0, beta_dist.ppf(a, np.maximum(k, 1e-12), n - k + 1), 0.0)


def _cp_high(k: np.ndarray, n: int, a: float) -> np.ndarray:
    k = np.asarray(k, dtype=float)
    return np.where(k < n, beta_dist.ppf(1 - a, k + 1, np.maximum(n - k, 1e-12)), 1.0)


def _counts_ge(sorted_x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return len(sorted_x) - np.searchsorted(sorted_x, t, side="left")


def _bounds(a: np.ndarray, b: np.ndarray, t: np.ndarray, delta: float, alpha: float
            ) -> dict[tuple[int, int], np.ndarray]:
    """CP lower bounds on ε for every threshold, event (0: ≥ t, 1: < t) and direction
    (0: a is D, 1: b is D)."""
    sa, sb = np.sort(a), np.sort(b)
    na, nb = len(a), len(b)
    ka, kb = _counts_ge(sa, t), _counts_ge(sb, t)
    out = {}
    for event, (ca, cb) in enumerate([(ka, kb), (na - ka, nb - kb)]):
        for direction, (kt, nt, kf, nf) in enumerate([(ca, na, cb, nb), (cb, nb, ca, na)]):
            tpr = _cp_low(kt, nt, alpha / 2) - delta
            fpr = _cp_high(kf, nf, alpha / 2)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[(event, direction)] = np.where(tpr > 0, np.log(np.maximum(tpr, 1e-300) / fpr), 0.0)
    return out


def epsilon_lower_bound(stat_d: np.ndarray, stat_dp: np.ndarray, delta: float,
                        alpha: float = ALPHA, select: float = SELECT_FRACTION) -> dict[str, float]:
    """ε lower bound (confidence 1 − α) from samples of the statistic on D and on D'.

    The threshold, event and direction are chosen on the first ``select`` share of each sample;
    the bound is computed on the rest.
    """
    stat_d, stat_dp = np.asarray(stat_d, float), np.asarray(stat_dp, float)
    k1, k0 = max(1, int(len(stat_d) * select)), max(1, int(len(stat_dp) * select))
    sel_d, ev_d = stat_d[:k1], stat_d[k1:]
    sel_p, ev_p = stat_dp[:k0], stat_dp[k0:]
    cand = np.unique(np.concatenate([sel_d, sel_p]))
    if cand.size > 512:
        cand = np.unique(np.quantile(cand, np.linspace(0, 1, 512)))
    sel = _bounds(sel_d, sel_p, cand, delta, alpha)
    (event, direction), scores = max(sel.items(), key=lambda kv: float(kv[1].max()))
    t = cand[int(np.argmax(scores))]
    held = _bounds(ev_d, ev_p, np.array([t]), delta, alpha)[(event, direction)][0]
    # point estimate on the held-out runs (no confidence correction), for information
    in_d = (ev_d >= t) if event == 0 else (ev_d < t)
    in_p = (ev_p >= t) if event == 0 else (ev_p < t)
    p, q = (in_d.mean(), in_p.mean()) if direction == 0 else (in_p.mean(), in_d.mean())
    point = math.log(p / q) if p > 0 and q > 0 else (math.inf if p > 0 else 0.0)
    return {"epsilon_lb": max(0.0, float(held)), "epsilon_point": float(point), "threshold": float(t),
            "event": ">= t" if event == 0 else "< t", "direction": "D vs D'" if direction == 0 else "D' vs D"}


# ---------------------------------------------------------------------------------------------
# neighbouring databases
# ---------------------------------------------------------------------------------------------
def census_schema(entity: bool, with_regions: bool = True, n_person_attrs: int = 3) -> Schema:
    """regions (public) 1:N households 1:N persons; entity unit: households; else the row unit."""
    regions = Table("regions", ("region",), (Attribute.categorical("climate", ["cold", "warm"]),),
                    public=True)
    households = Table("households", ("hid",), (
        Attribute.categorical("tenure", ["own", "rent"]),
        Attribute.numeric("income", 0, 200, bins=4),
    )[: 2 if with_regions else 1])
    persons = Table("persons", ("pid",), (
        Attribute.categorical("sex", ["F", "M"]),
        Attribute.numeric("age", 0, 100, bins=5, integer=True),
        Attribute.categorical("employed", ["yes", "no"]),
    )[:n_person_attrs])
    fks = [ForeignKey("persons", ("hid",), "households")]
    tables = [households, persons]
    if with_regions:
        fks.insert(0, ForeignKey("households", ("region",), "regions"))
        tables.insert(0, regions)
    unit = PrivacyUnit("households" if entity else None, {"persons.hid->households": TAU})
    return Schema(tuple(tables), tuple(fks), unit, name="audit")


def _frames(households: list[dict], persons: list[dict], schema: Schema) -> dict[str, pd.DataFrame]:
    hh = pd.DataFrame(households)
    pp = pd.DataFrame(persons)
    hcols = ["hid"] + (["region"] if "regions" in schema.table_names else []) + \
        [a.name for a in schema.table("households").attributes]
    pcols = ["pid", "hid"] + [a.name for a in schema.table("persons").attributes]
    out = {"households": hh[hcols], "persons": pp[pcols].reset_index(drop=True)}
    if "regions" in schema.table_names:
        out["regions"] = pd.DataFrame({"region": ["N", "S", "E"], "climate": ["cold", "warm", "warm"]})
    return out


def _base(seed: int = 0, n_h: int = 40) -> tuple[list[dict], list[dict]]:
    """A fixed random base population: households with 1…τ persons."""
    rng = np.random.default_rng(seed)
    hh, pp = [], []
    for h in range(1, n_h + 1):
        hh.append({"hid": h, "region": str(rng.choice(["N", "S", "E"])),
                   "tenure": str(rng.choice(["own", "rent"])), "income": float(rng.uniform(0, 200))})
        for _ in range(int(rng.integers(1, TAU + 1))):
            pp.append({"pid": len(pp) + 1, "hid": h, "sex": str(rng.choice(["F", "M"])),
                       "age": int(rng.integers(0, 101)), "employed": str(rng.choice(["yes", "no"]))})
    return hh, pp


def entity_pair(person: tuple[str, int, str] = ("F", 5, "yes"), schema: Schema | None = None,
                base: tuple[list[dict], list[dict]] | None = None, validate: bool = True
                ) -> tuple[Database, Database]:
    """D = base + household h* with τ identical persons; D' = D without h* and its persons."""
    schema = schema or census_schema(entity=True)
    hh, pp = base or _base()
    sex, age, emp = person
    star = {"hid": 999, "region": "N", "tenure": "own", "income": 10.0}
    kids = [{"pid": 10_000 + j, "hid": 999, "sex": sex, "age": age, "employed": emp} for j in range(TAU)]
    d = Database(schema, _frames(hh + [star], pp + kids, schema), validate=validate)
    dp = Database(schema, _frames(hh, pp, schema), validate=validate)
    return d, dp


def row_pair_values() -> tuple[Database, Database]:
    """Row unit: one person row changes every attribute value."""
    schema = census_schema(entity=False)
    hh, pp = _base()
    pp2 = [dict(p) for p in pp]
    pp[0].update(sex="F", age=5, employed="yes")
    pp2[0].update(sex="M", age=95, employed="no")
    return Database(schema, _frames(hh, pp, schema)), Database(schema, _frames(hh, pp2, schema))


def row_pair_relationships(schema: Schema, move_attr: bool) -> tuple[Database, Database]:
    """Row unit: household h* changes (tenure own → rent when ``move_attr``) and re-points its
    relationships: its τ children move to τ receiver households, and it takes one child from each
    of τ donor households (2τ children move; 2τ + 1 groups change size or not)."""
    hh, pp = _base(n_h=30 if move_attr else 40)
    star = 900
    hh = [dict(h) for h in hh]
    hh.append({"hid": star, "region": "N", "tenure": "own", "income": 10.0})
    receivers = list(range(901, 901 + TAU))
    donors = list(range(911, 911 + TAU))
    for h in receivers:  # rent households (the moved children land in (F, rent))
        hh.append({"hid": h, "region": "S", "tenure": "rent", "income": 50.0})
    for h in donors:  # own households with 2 F children each (one leaves for h*)
        hh.append({"hid": h, "region": "E", "tenure": "own", "income": 150.0})
    pid = 20_000
    kids_star, donor_kids = [], []
    for _ in range(TAU):
        pid += 1
        kids_star.append({"pid": pid, "hid": star, "sex": "F", "age": 5, "employed": "yes"})
    for h in donors:
        for _ in range(2):
            pid += 1
            donor_kids.append({"pid": pid, "hid": h, "sex": "F", "age": 5, "employed": "yes"})
    if move_attr:  # receivers need one child each (room for one more under τ)
        for h in receivers:
            pid += 1
            donor_kids.append({"pid": pid, "hid": h, "sex": "M", "age": 50, "employed": "no"})
    d_persons = pp + kids_star + donor_kids
    dp_persons = [dict(p) for p in d_persons]
    by_pid = {p["pid"]: p for p in dp_persons}
    for child, h in zip(kids_star, receivers):
        by_pid[child["pid"]]["hid"] = h
    for h in donors:
        first = next(p for p in donor_kids if p["hid"] == h)
        by_pid[first["pid"]]["hid"] = star
    hh_p = [dict(h) for h in hh]
    if move_attr:
        next(h for h in hh_p if h["hid"] == star)["tenure"] = "rent"
    return (Database(schema, _frames(hh, d_persons, schema)),
            Database(schema, _frames(hh_p, dp_persons, schema)))


def biadjacency_entity_pair() -> tuple[Database, Database]:
    """Entity unit, a small relation: D' has 2 links, D adds h* (rent) with τ F children."""
    schema = census_schema(entity=True, with_regions=False, n_person_attrs=1)
    hh = [{"hid": 1, "tenure": "own"}, {"hid": 2, "tenure": "own"}]
    pp = [{"pid": 1, "hid": 1, "sex": "M"}, {"pid": 2, "hid": 2, "sex": "M"}]
    star = {"hid": 999, "tenure": "rent"}
    kids = [{"pid": 100 + j, "hid": 999, "sex": "F"} for j in range(TAU)]
    return (Database(schema, _frames(hh + [star], pp + kids, schema)),
            Database(schema, _frames(hh, pp, schema)))


def _enrol_schema() -> Schema:
    students = Table("students", ("sid",), (Attribute.categorical("grp", ["a", "b"]),))
    courses = Table("courses", ("cid",), (Attribute.categorical("level", ["x", "y"]),))
    enrol = Table("enrol", ("sid", "cid"), ())
    fks = (ForeignKey("enrol", ("sid",), "students"), ForeignKey("enrol", ("cid",), "courses"))
    return Schema((students, courses, enrol), fks,
                  PrivacyUnit(None, {"enrol.sid->students": TAU, "enrol.cid->courses": TAU}),
                  name="audit-m2n")


def m2n_row_pair() -> tuple[Database, Database]:
    """Row unit, many-to-many: student s* changes group a → b and re-points its pairs: its τ
    pairs move to τ receiver students of group b, and it takes one pair from each of τ donor
    students of group a (2τ pairs move from (a, x) to (b, x))."""
    rng = np.random.default_rng(3)
    students = [{"sid": i, "grp": str(rng.choice(["a", "b"]))} for i in range(1, 31)]
    courses = [{"cid": c, "level": str(rng.choice(["x", "y"]))} for c in range(1, 41)]
    pairs: set[tuple[int, int]] = set()
    per_student = {s["sid"]: 0 for s in students}
    per_course = {c["cid"]: 0 for c in courses}
    for s in students:  # a random base relation respecting both caps
        for c in rng.permutation(40)[:int(rng.integers(1, TAU + 1))] + 1:
            if per_course[int(c)] < TAU - 1:
                pairs.add((s["sid"], int(c)))
                per_student[s["sid"]] += 1
                per_course[int(c)] += 1
    star, receivers, donors = 100, [101, 102, 103][:TAU], [111, 112, 113][:TAU]
    students += [{"sid": star, "grp": "a"}] + [{"sid": r, "grp": "b"} for r in receivers] + \
        [{"sid": d, "grp": "a"} for d in donors]
    x_courses = list(range(201, 201 + 2 * TAU))  # level-x courses used only here
    courses += [{"cid": c, "level": "x"} for c in x_courses]
    star_pairs = [(star, c) for c in x_courses[:TAU]]
    donor_pairs = [(d, c) for d, c in zip(donors, x_courses[TAU:])]
    d_pairs = sorted(pairs) + star_pairs + donor_pairs
    dp_pairs = sorted(pairs) + [(r, c) for r, (_, c) in zip(receivers, star_pairs)] + \
        [(star, c) for _, c in donor_pairs]
    schema = _enrol_schema()
    st = pd.DataFrame(students)
    st_p = st.copy()
    st_p.loc[st_p["sid"] == star, "grp"] = "b"
    co = pd.DataFrame(courses)
    en = pd.DataFrame(d_pairs, columns=["sid", "cid"])
    en_p = pd.DataFrame(dp_pairs, columns=["sid", "cid"])
    return (Database(schema, {"students": st, "courses": co, "enrol": en}),
            Database(schema, {"students": st_p, "courses": co, "enrol": en_p}))


# ---------------------------------------------------------------------------------------------
# audits
# ---------------------------------------------------------------------------------------------
@dataclass
class Audit:
    """One audited release of one method on one neighbouring pair.

    Attributes:
        key: ``--methods`` group.
        method, release, pair: Table columns.
        kind, target: The audited release (mechanism and label substring).
        build: Returns ``(D, D')``.
        fit: ``fit(curator, budget, multipliers, schema, synthetic)`` calls the method's public fit.
        rho: ρ given to the component (chosen so the audited release's claim is about ε).
        runs_share: Share of ``--runs`` this audit uses (slow fits use fewer runs).
        fix: Optional ``(D, D') -> {label prefix: vector}`` of earlier releases held fixed.
        control: A deliberately broken configuration (expected to be detected).
    """

    key: str
    method: str
    release: str
    pair: str
    kind: str
    target: str
    build: Callable[[], tuple[Database, Database]]
    fit: Callable[..., Any]
    rho: Callable[[float, float], Fraction]
    runs_share: float = 1.0
    fix: Callable[[Database, Database], dict[str, np.ndarray]] | None = None
    control: bool = False
    note: str = ""


def _gauss_rho(share: float) -> Callable[[float, float], Fraction]:
    """ρ of the component when the audited Gaussian release gets ``share`` of it and should cost
    the ρ that is (ε, δ) on the exact Gaussian curve."""
    return lambda eps, delta: Fraction(gdp_mu(eps, delta) ** 2 / 2) / Fraction(share)


def _em_rho(share: Fraction) -> Callable[[float, float], Fraction]:
    """ρ of the component when the audited exponential-mechanism call (pure ε_em = target ε) gets
    ``share`` of it."""
    return lambda eps, delta: Fraction(eps) ** 2 / 8 / share


def _fit_single(name: str, table: str, hist_scale: float = 1.0, score_scale: float = 1.0,
                **params: Any) -> Callable[..., Any]:
    def fit(cur: Curator, budget: Budget, mult, schema, synthetic) -> Any:  # noqa: ANN001
        from relviz.single import get

        return get(name, **params).fit(cur.table(table), budget,
                                       histogram_sensitivity=mult.table_histogram(table) * hist_scale,
                                       score_sensitivity=mult.table_score(table) * score_scale,
                                       progress=silent())
    return fit


def _fit_linker(name: str, fk: str, **params: Any) -> Callable[..., Any]:
    def fit(cur: Curator, budget: Budget, mult, schema, synthetic) -> Any:  # noqa: ANN001
        from relviz.relational import get

        linker = get(name, **params)
        return linker.fit(cur.foreign_key(fk), budget, schema=schema, multipliers=mult,
                          progress=silent(),
                          synthetic=synthetic if getattr(linker, "needs_synthetic_tables", False) else None)
    return fit


def _fit_relation(name: str, table: str, **params: Any) -> Callable[..., Any]:
    def fit(cur: Curator, budget: Budget, mult, schema, synthetic) -> Any:  # noqa: ANN001
        from relviz.relational import get_relation

        fk1, fk2 = schema.fks_from(table)
        method = get_relation(name, **params)
        return method.fit(cur.link(fk1, fk2), budget, schema=schema, multipliers=mult,
                          progress=silent(),
                          synthetic=synthetic if getattr(method, "needs_synthetic_tables", False) else None)
    return fit


def _mst_one_way_fixed(d: Database, dp: Database) -> dict[str, np.ndarray]:
    """Hold MST's noisy 1-way marginals at D's exact 1-way marginals on both databases."""
    enc = encode_table(d.schema.table("persons"), d["persons"])
    vec = np.concatenate([np.bincount(enc.codes[:, j], minlength=s).astype(float)
                          for j, s in enumerate(enc.sizes)])
    return {"1-way marginals": vec}


def _em_distinguishability(rel_d: Release, rel_p: Release) -> float:
    """How well one choice of the exponential mechanism separates D from D': the largest
    log-ratio of the probability of a set of candidates, over sets that have probability ≥ 0.2
    on the side where they are likelier (so that N runs can estimate it)."""
    lp = rel_d.epsilon_em * rel_d.exact / (2 * rel_d.sensitivity)
    lq = rel_p.epsilon_em * rel_p.exact / (2 * rel_p.sensitivity)
    p, q = np.exp(lp - logsumexp(lp)), np.exp(lq - logsumexp(lq))
    k = p.size
    best = 0.0
    for mask in range(1, 2 ** k - 1):
        sel = np.array([(mask >> j) & 1 for j in range(k)], dtype=bool)
        ps, qs = float(p[sel].sum()), float(q[sel].sum())
        for num, den in ((ps, qs), (qs, ps)):
            if num >= 0.2 and den > 0:
                best = max(best, math.log(num / den))
    return best


def _mst_worst_case(audit: Audit) -> tuple[int, tuple[str, int, str]]:
    """The base population (seed) and the values of h*'s persons that make MST's first tree-edge
    choice easiest to tell apart: a small search (8 bases × 20 value combinations), as auditing
    tools search for worst-case neighbours (Ding et al. 2018)."""
    best, arg = -1.0, (0, ("F", 5, "yes"))
    rho = audit.rho(*_TARGET)
    for seed in range(8):
        base = _base(seed)
        for sex in ("F", "M"):
            for age in (5, 25, 45, 65, 85):
                for emp in ("yes", "no"):
                    d, dp = entity_pair((sex, age, emp), base=base, validate=False)
                    fix = _mst_one_way_fixed(d, dp)
                    rel_d, rel_p = (_one_release(audit, db, fix, rho) for db in (d, dp))
                    gap = _em_distinguishability(rel_d, rel_p)
                    if gap > best:
                        best, arg = gap, (seed, (sex, age, emp))
    return arg


def _mst_em_audit(method: str, score_scale: float, control: bool, note: str = "") -> Audit:
    """MST's first tree-edge choice (1-way output held fixed) on a searched worst-case pair."""
    em_share = Fraction(1, 3) / 2  # MST: ρ/3 for selection over d − 1 = 2 steps
    audit = Audit("mst", method, "tree edge 1 of 2 (exponential; 1-way output held fixed)", ENTITY,
                  "exponential", "tree edge 1", lambda: (None, None),  # type: ignore[arg-type]
                  _fit_single("mst", "persons", score_scale=score_scale), _em_rho(em_share),
                  fix=_mst_one_way_fixed, control=control, note=note)
    audit.key = "control" if control else "mst"

    def build() -> tuple[Database, Database]:
        seed, person = _mst_worst_case(audit)
        return entity_pair(person, base=_base(seed))

    audit.build = build
    return audit


ENTITY = f"entity households (τ={TAU}): D' = D − h* − its {TAU} persons"
ROW_VALUES = "row unit: one persons row changes all its values"
ROW_PARENT = f"row unit: households row h* re-points its relationships ({2 * TAU} children move)"
ROW_PARENT_ATTR = f"row unit: h* changes tenure and re-points ({2 * TAU} links move)"
BIA_ENTITY = (f"entity households (τ={TAU}), small relation: D' = D − h* − its {TAU} persons "
              "(m = 5 → 2)")


def _bia_default(name: str, relation: bool = False) -> float:
    """A bi-adjacency hyper-parameter's default (0 when the installed version has none)."""
    from relviz.relational import get_class, get_relation_class

    cls = get_relation_class("biadjacency") if relation else get_class("biadjacency")
    return float(getattr(cls, name, 0.0))


def _link_count_fixed(table: str) -> Callable[[Database, Database], dict[str, np.ndarray]]:
    """Hold the noisy link count (an earlier release) at D's exact count on both databases."""
    return lambda d, dp: {"number of": np.array([float(len(d[table]))])}


def _audits() -> list[Audit]:
    bia = {"k": 2, "n_iters": 1, "workloads_per_iter": 1}
    return [
        Audit("independent", "independent", "1-way marginals of persons (Gaussian)", ENTITY,
              "gaussian", "1-way marginals", entity_pair, _fit_single("independent", "persons"),
              _gauss_rho(1.0)),
        Audit("independent", "independent", "1-way marginals of persons (Gaussian)", ROW_VALUES,
              "gaussian", "1-way marginals", row_pair_values, _fit_single("independent", "persons"),
              _gauss_rho(1.0)),
        Audit("mst", "mst", "1-way marginals of persons (Gaussian, step 1)", ENTITY, "gaussian",
              "1-way marginals", entity_pair, _fit_single("mst", "persons"), _gauss_rho(1 / 3)),
        _mst_em_audit("mst", 1.0, control=False),
        Audit("degree", "degree", "degree histogram persons→households (Gaussian)", ENTITY,
              "gaussian", "degree histogram", entity_pair,
              _fit_linker("degree", "persons.hid->households"), _gauss_rho(1.0)),
        Audit("degree", "degree", "degree histogram persons→households (Gaussian)", ROW_PARENT,
              "gaussian", "degree histogram",
              lambda: row_pair_relationships(census_schema(entity=False), move_attr=False),
              _fit_linker("degree", "persons.hid->households"), _gauss_rho(1.0)),
        Audit("degree", "degree", "children per regions row (Gaussian, public parent)", ENTITY,
              "gaussian", "children per regions row", entity_pair,
              _fit_linker("degree", "households.region->regions"), _gauss_rho(1.0)),
        Audit("biadjacency", "biadjacency (1:N)", "measure workload sex×tenure (Gaussian)",
              ROW_PARENT_ATTR, "gaussian", "measure workload",
              lambda: row_pair_relationships(census_schema(False, False, 1), move_attr=True),
              _fit_linker("biadjacency", "persons.hid->households", **bia, init_share=0.7),
              _gauss_rho((1 - 0.7) * 0.8), runs_share=0.4,
              note="k = 2 with one attribute per table: one workload, so the measured workload "
                   "is fixed; m is public here (row unit, non-null FK)"),
        Audit("biadjacency", "biadjacency (1:N)", "number of links (Gaussian)", BIA_ENTITY,
              "gaussian", "number of links", biadjacency_entity_pair,
              _fit_linker("biadjacency", "persons.hid->households", **bia, init="random"),
              _gauss_rho(_bia_default("count_share")), runs_share=0.4,
              note="init='random': with the degree start m̂ is derived from released sizes"),
        Audit("biadjacency", "biadjacency (1:N)", "measure workload sex×tenure (Gaussian; m̂ fixed)",
              BIA_ENTITY, "gaussian", "measure workload", biadjacency_entity_pair,
              _fit_linker("biadjacency", "persons.hid->households", **bia, init="random"),
              _gauss_rho((1 - _bia_default("count_share")) * 0.8),
              runs_share=0.4, fix=_link_count_fixed("persons"),
              note="the noisy link count m̂ (an earlier release) is held at D's m on both sides"),
        Audit("biadjacency", "biadjacency (M:N)", "measure workload grp×level (Gaussian; m̂ fixed)",
              f"row unit: student s* changes group and re-points its pairs ({2 * TAU} pairs move)",
              "gaussian", "measure workload", m2n_row_pair,
              _fit_relation("biadjacency", "enrol", **bia),
              _gauss_rho((1 - _bia_default("count_share", relation=True)) * 0.8), runs_share=0.4,
              fix=_link_count_fixed("enrol"),
              note="the noisy number of distinct pairs m̂ is held at D's value on both sides"),
        Audit("control", "CONTROL independent, Δ/4", "1-way marginals of persons (Gaussian)", ENTITY,
              "gaussian", "1-way marginals", entity_pair,
              _fit_single("independent", "persons", hist_scale=0.25), _gauss_rho(1.0), control=True,
              note="deliberately broken: histogram sensitivity understated 4×"),
        _mst_em_audit("CONTROL mst, score Δ/4", 0.25, control=True,
                      note="deliberately broken: score sensitivity understated 4×"),
    ]


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
class _Side:
    """Everything one database needs for repeated fits (curator, multipliers, synthetic tables)."""

    def __init__(self, db: Database, synthetic_from: Database) -> None:
        truncated, _ = enforce_caps(db)
        self.schema = db.schema
        self.curator = Curator(truncated)
        self.mult = multipliers(db.schema)
        self._synthetic_from = synthetic_from
        self._encoded: dict[str, EncodedTable] = {}

    def synthetic(self, name: str) -> EncodedTable:
        """The synthetic tables a relational method learns on: fixed and public (D's tables)."""
        if name not in self._encoded:
            self._encoded[name] = encode_table(self.schema.table(name), self._synthetic_from[name])
        return self._encoded[name]


def _run_once(audit: Audit, side: _Side, cap: Capture, rho: Fraction, rng: np.random.Generator,
              delta: float) -> Release:
    acc = Accountant(rho, delta=delta, budgets={COMPONENT: rho})
    budget = Budget(acc, COMPONENT, rho, rng)
    cap.reset()
    try:
        audit.fit(side.curator, budget, side.mult, side.schema, side.synthetic)
    except _Stop:
        pass
    if cap.hit is None:
        made = ", ".join(f"{r.kind}: {r.label}" for r in cap.releases) or "none"
        raise RuntimeError(f"the audited release ({audit.kind} '{audit.target}') was not made; "
                           f"releases: {made}")
    return cap.hit


def _one_release(audit: Audit, db: Database, fix: dict[str, np.ndarray] | None, rho: Fraction,
                 delta: float = 1e-5, synthetic_from: Database | None = None) -> Release:
    side = _Side(db, synthetic_from or db)
    with Capture(audit.target, audit.kind, fix) as cap:
        return _run_once(audit, side, cap, rho, np.random.default_rng(0), delta)


def _em_pair_epsilon(q_d: np.ndarray, q_dp: np.ndarray, eps_d: float, eps_dp: float,
                     sens_d: float = 1.0, sens_dp: float = 1.0) -> float:
    lp = eps_d * q_d / (2 * sens_d)
    lq = eps_dp * q_dp / (2 * sens_dp)
    llr = (lp - logsumexp(lp)) - (lq - logsumexp(lq))
    return float(np.abs(llr).max())


def _sample(audit: Audit, side: _Side, n: int, rho: Fraction, seed: int, index: int, which: int,
            delta: float, fix: dict[str, np.ndarray] | None) -> tuple[list[Release], np.ndarray]:
    first: Release | None = None
    outputs = []
    with Capture(audit.target, audit.kind, fix) as cap:
        for i in range(n):
            rel = _run_once(audit, side, cap, rho, np.random.default_rng([seed, index, which, i]), delta)
            if first is None:
                first = rel
            elif rel.exact.shape != first.exact.shape or not np.allclose(rel.exact, first.exact) \
                    or rel.sigma != first.sigma:
                raise RuntimeError("the exact answers (or σ) of the audited release changed between runs")
            outputs.append(rel.output)
    assert first is not None
    return [first], np.asarray(outputs)


def run_audit(audit: Audit, index: int, runs: int, seed: int, epsilon: float, delta: float
              ) -> dict[str, Any]:
    t0 = time.perf_counter()
    global _TARGET
    _TARGET = (epsilon, delta)
    d, dp = audit.build()
    fix = audit.fix(d, dp) if audit.fix else None
    rho = audit.rho(epsilon, delta)
    n = max(30, int(round(runs * audit.runs_share)))
    sides = [_Side(d, d), _Side(dp, d)]
    (rel_d,), out_d = _sample(audit, sides[0], n, rho, seed, index, 1, delta, fix)
    (rel_p,), out_p = _sample(audit, sides[1], n, rho, seed, index, 0, delta, fix)
    row: dict[str, Any] = {"method": audit.method, "release": audit.release, "pair": audit.pair,
                           "label": rel_d.label, "runs_per_side": n, "control": audit.control,
                           "note": audit.note, "warnings": []}
    rho_rel = max(rel_d.rho, rel_p.rho)
    row["rho"] = float(rho_rel)
    if audit.kind == "gaussian":
        mu_d, mu_p = rel_d.exact, rel_p.exact
        if mu_d.shape != mu_p.shape:
            raise RuntimeError("the audited release has different shapes on D and D'")
        s_d, s_p = float(rel_d.sigma), float(rel_p.sigma)
        k = mu_d.size

        def llr(y: np.ndarray) -> np.ndarray:
            return (-((y - mu_d) ** 2).sum(axis=1) / (2 * s_d ** 2) - k * math.log(s_d)
                    + ((y - mu_p) ** 2).sum(axis=1) / (2 * s_p ** 2) + k * math.log(s_p))

        stat_d, stat_p = llr(out_d), llr(out_p)
        realised = float(np.linalg.norm(mu_d - mu_p))
        claimed_sens = min(rel_d.sensitivity, rel_p.sensitivity)
        row["claimed_epsilon"] = gdp_epsilon(math.sqrt(2 * float(rho_rel)), delta)
        row["claim_basis"] = "Gaussian-DP curve, μ = √(2ρ)"
        row["sigma_d"], row["sigma_d_prime"] = s_d, s_p
        if not math.isclose(s_d, s_p, rel_tol=1e-12):
            row["pair_epsilon"] = math.nan
            row["warnings"].append(f"noise scale depends on the data: σ = {s_d:.4g} on D, "
                                   f"{s_p:.4g} on D' (charged sensitivity {rel_d.sensitivity:.4g} vs "
                                   f"{rel_p.sensitivity:.4g})")
        else:
            row["pair_epsilon"] = gdp_epsilon(realised / s_d, delta) if realised > 0 else 0.0
    else:
        q_d, q_p = rel_d.exact, rel_p.exact
        if q_d.shape != q_p.shape:
            raise RuntimeError("the candidate lists differ between D and D'")
        e_d, e_p = float(rel_d.epsilon_em), float(rel_p.epsilon_em)
        lp = e_d * q_d / (2 * rel_d.sensitivity)
        lq = e_p * q_p / (2 * rel_p.sensitivity)
        llr_i = (lp - logsumexp(lp)) - (lq - logsumexp(lq))
        stat_d, stat_p = llr_i[out_d.astype(int)], llr_i[out_p.astype(int)]
        realised = float(np.abs(q_d - q_p).max())
        claimed_sens = min(rel_d.sensitivity, rel_p.sensitivity)
        row["claimed_epsilon"] = min(max(e_d, e_p), zcdp_epsilon(float(rho_rel), delta))
        row["claim_basis"] = "exponential mechanism: min(pure ε, zCDP conversion of ε²/8)"
        row["pair_epsilon"] = float(np.abs(llr_i).max())
        row["choice_rates_d"] = np.bincount(out_d.astype(int), minlength=q_d.size).tolist()
        row["choice_rates_d_prime"] = np.bincount(out_p.astype(int), minlength=q_d.size).tolist()
    row["delta"] = delta
    row["sensitivity_claimed"] = claimed_sens
    row["sensitivity_realised"] = realised
    row["sensitivity_ratio"] = realised / claimed_sens if claimed_sens > 0 else math.inf
    row.update(epsilon_lower_bound(stat_d, stat_p, delta))
    tol = 1e-9
    row["lb_exceeds_claim"] = row["epsilon_lb"] > row["claimed_epsilon"] + tol
    row["pair_exceeds_claim"] = bool(row["pair_epsilon"] > row["claimed_epsilon"] + tol)
    row["sensitivity_exceeded"] = row["sensitivity_ratio"] > 1 + 1e-9
    row["violation"] = bool(row["lb_exceeds_claim"] or row["pair_exceeds_claim"]
                            or row["sensitivity_exceeded"])
    row["seconds"] = time.perf_counter() - t0
    return row


def _fmt(x: float, nd: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def print_table(rows: list[dict[str, Any]], delta: float) -> None:
    head = (f"{'method':<26}{'release':<50}{'N/side':>7}{'claimed ε':>11}{'ε_lb (95%)':>12}"
            f"{'ε̂ point':>10}{'pair ε':>9}{'Δ real/claim':>14}  verdict")
    print(f"\nPrivacy audit: empirical ε lower bounds (δ = {delta:g}; Clopper–Pearson 95 %, "
          "held-out threshold)\n")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['method']:<26}{r['release'][:49]:<50}  ERROR: {r['error']}")
            continue
        if r["control"]:
            verdict = "detected (as intended)" if r["lb_exceeds_claim"] else "NOT DETECTED"
        else:
            verdict = "VIOLATION" if r["violation"] else "ok (lb ≤ claim)"
        print(f"{r['method']:<26}{r['release'][:49]:<50}{r['runs_per_side']:>7}"
              f"{_fmt(r['claimed_epsilon']):>11}{_fmt(r['epsilon_lb']):>12}"
              f"{_fmt(max(r['epsilon_point'], 0.0)):>10}{_fmt(r['pair_epsilon']):>9}"
              f"{_fmt(r['sensitivity_ratio'], 2):>14}  {verdict}")
        print(f"{'':<26}  pair: {r['pair']}  [{r['seconds']:.1f} s]")
        for w in r["warnings"]:
            print(f"{'':<26}  WARNING: {w}")


def write_results(rows: list[dict[str, Any]], out: Path, meta: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "audits": rows}, indent=2,
                                                   default=str))
    cols = ["method", "release", "pair", "label", "runs_per_side", "claimed_epsilon", "claim_basis",
            "epsilon_lb", "epsilon_point", "pair_epsilon", "sensitivity_claimed",
            "sensitivity_realised", "sensitivity_ratio", "rho", "delta", "violation", "control",
            "seconds", "error"]
    with out.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5000, help="fits per database for cheap releases "
                    "(bi-adjacency uses 40 %% of it); default 5000")
    ap.add_argument("--methods", default="independent,mst,degree,biadjacency,control",
                    help="comma-separated groups: independent, mst, degree, biadjacency, control")
    ap.add_argument("--seed", type=int, default=20240610)
    ap.add_argument("--epsilon", type=float, default=1.0, help="target claimed ε of each release")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON path (CSV beside it)")
    args = ap.parse_args(argv)
    wanted = {m.strip() for m in args.methods.split(",") if m.strip()}
    audits = _audits()
    unknown = wanted - {a.key for a in audits}
    if unknown:
        ap.error(f"unknown method group(s): {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    rows = []
    for i, audit in enumerate(audits):
        if audit.key not in wanted:
            continue
        print(f"auditing {audit.method}: {audit.release} — {audit.pair}", file=sys.stderr, flush=True)
        try:
            rows.append(run_audit(audit, i, args.runs, args.seed, args.epsilon, args.delta))
        except Exception as exc:  # noqa: BLE001 - report every audit, then fail
            rows.append({"method": audit.method, "release": audit.release, "pair": audit.pair,
                         "control": audit.control, "error": f"{type(exc).__name__}: {exc}"})
    wall = time.perf_counter() - t0
    print_table(rows, args.delta)
    print(f"\nwall time: {wall:.1f} s")
    meta = {"runs": args.runs, "seed": args.seed, "epsilon_target": args.epsilon, "delta": args.delta,
            "alpha": ALPHA, "select_fraction": SELECT_FRACTION, "wall_seconds": wall}
    write_results(rows, args.out, meta)
    print(f"results: {args.out.with_suffix('.json')} and {args.out.with_suffix('.csv')}")
    bad = [r for r in rows if not r.get("control") and r.get("violation")]
    errors = [r for r in rows if "error" in r]
    missed = [r for r in rows if r.get("control") and "error" not in r and not r["lb_exceeds_claim"]]
    for r in bad:
        why = [w for w, k in (("ε_lb > claimed ε", "lb_exceeds_claim"),
                              ("the pair's exact ε > claimed ε", "pair_exceeds_claim"),
                              ("realised sensitivity > charged sensitivity", "sensitivity_exceeded"))
               if r.get(k)]
        print(f"\n!!! PRIVACY VIOLATION: {r['method']} — release '{r['label']}' on pair "
              f"[{r['pair']}]: {'; '.join(why)} (claimed ε = {r['claimed_epsilon']:.3f}, "
              f"ε_lb = {r['epsilon_lb']:.3f}, pair ε = {_fmt(r['pair_epsilon'])}, "
              f"Δ realised/charged = {r['sensitivity_ratio']:.3f})", file=sys.stdout)
    for r in missed:
        print(f"\nnote: control '{r['method']}' was not detected with these runs "
              "(too few runs to separate it from its claim)")
    if errors:
        print(f"\n{len(errors)} audit(s) could not run (see ERROR rows)")
    return 1 if bad else (2 if errors else 0)


if __name__ == "__main__":
    sys.exit(main())
