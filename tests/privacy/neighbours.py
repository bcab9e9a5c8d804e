"""Neighbour test harness: tiny databases, their neighbours under the privacy unit, and a replay
of every private release on both (issue 10).

How a fit is compared with a fit on a neighbour
-----------------------------------------------
Releases are adaptive (a selection picks what is measured next, models fitted on noisy answers
choose later queries), so fitting ``D`` and ``D'`` independently would compare different queries.
Instead every release goes through a *tape* that patches the names ``gaussian_mechanism`` and
``exponential_mechanism`` of :mod:`relviz.privacy.budget` (what ``Budget.gaussian`` and
``Budget.exponential`` call):

1. the fit on ``D`` records, per release, its label, component, exact answer vector (or score
   vector), declared sensitivity Δ and its output (noisy vector and σ, or the chosen index);
2. the fit on ``D'`` (same seed) records its own exact answers but *returns D's outputs*; it still
   calls the real mechanism, so the accountant is charged and the generator advances exactly as on
   ``D``. Everything downstream of the releases is then identical, and release ``k`` on ``D'`` is
   the same query as release ``k`` on ``D``;
3. for every release: ``‖v_D − v_D'‖₂ ≤ Δ`` (Gaussian) or ``max_i |s_D[i] − s_D'[i]| ≤ Δ``
   (exponential), Δ the same number on both sides (it must be public), the same label (a label
   is released in the ledger), and the same number of releases.

Neighbours
----------
* entity unit: ``D`` minus one entity row and its closure (:func:`relviz.database.drop_rows`);
* row unit: one row of one private table changes its attribute values, its own FK values (any
  parent below the cap, or null when nullable) and the relationships of the rows that reference
  it (its children may move to other parents below the cap, or to null when nullable; children of
  other parents, or null ones, may move to it up to the cap). Table sizes and keys stay; every
  degree cap holds in the neighbour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st

import relviz.privacy.budget as budget_module
from relviz import relational, single
from relviz.database import Database, drop_rows
from relviz.plan import Plan
from relviz.privacy.measure import enforce_caps
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer

TOL = 1e-9
SEED = 7

# Small hyper-parameters so that one fit of a tiny database takes milliseconds. A method that is
# not listed runs with its defaults (covered, maybe slower).
SMALL_PARAMS: dict[str, dict] = {
    "mst": {"iters": 100},
    "aim": {"rounds": 6, "iters": 50, "final_iters": 50, "time_budget_s": None},
    "privsyn": {"consistency_iters": 10, "update_iters": 2},
    "privbayes": {"theta": 1e-6},  # k ≥ 1 on tiny tables, so the structure steps are exercised
    "biadjacency": {"n_iters": 2, "workloads_per_iter": 1, "pool_size": 4, "slice_cells": 16,
                    "slices_per_iter": 1, "pgd_iters": 5, "otm_pgd_iters": 5, "device": "cpu"},
}


# ------------------------------------------------------------------------------------------------
# Schemas
# ------------------------------------------------------------------------------------------------

def _cat(name: str, cats: Sequence) -> Attribute:
    return Attribute.categorical(name, cats)


def household_schema(tau: int = 2) -> Schema:
    """(a) regions (public) → households (entity) → persons → trips; caps τ on the private FKs."""
    regions = Table("regions", ("region",), (_cat("climate", ["cold", "warm"]),), public=True)
    households = Table("households", ("hid",), (_cat("tenure", ["own", "rent"]),
                                                _cat("car", ["no", "yes"])))
    persons = Table("persons", ("pid",), (_cat("sex", ["F", "M"]), _cat("age", ["0-17", "18-64", "65+"])))
    trips = Table("trips", ("tid",), (_cat("mode", ["car", "bike", "walk"]),))
    fks = (ForeignKey("households", ("region",), "regions"),
           ForeignKey("persons", ("hid",), "households"),
           ForeignKey("trips", ("pid",), "persons"))
    caps = {"persons.hid->households": tau, "trips.pid->persons": tau}
    return Schema((regions, households, persons, trips), fks, PrivacyUnit("households", caps),
                  name="households")


def parent_child_schema(nullable: bool, tau: int = 2) -> Schema:
    """(b) a private parent → a private child under the row unit."""
    parents = Table("parents", ("id",), (_cat("a", ["a0", "a1"]), _cat("b", ["b0", "b1", "b2"])))
    children = Table("children", ("cid",), (_cat("c", ["c0", "c1"]), _cat("e", ["e0", "e1"])))
    fk = ForeignKey("children", ("pid",), "parents", ("id",), nullable=nullable)
    return Schema((parents, children), (fk,), PrivacyUnit(None, {fk.name: tau}),
                  name=f"parent-child ({'nullable' if nullable else 'non-null'} FK)")


def public_parent_schema(entity: bool, nullable: bool = True) -> Schema:
    """(c) a public parent (regions) → a private child (persons), row or entity unit."""
    regions = Table("regions", ("region",), (_cat("climate", ["cold", "warm"]),), public=True)
    persons = Table("persons", ("pid",), (_cat("sex", ["F", "M"]), _cat("age", ["young", "old"])))
    fk = ForeignKey("persons", ("region",), "regions", nullable=nullable)
    unit = PrivacyUnit("persons" if entity else None, {})
    return Schema((regions, persons), (fk,), unit,
                  name=f"public parent ({'entity' if entity else 'row'} unit)")


def selfref_schema(tau: int = 2) -> Schema:
    """(d) persons.mother → persons (nullable), row unit."""
    persons = Table("persons", ("pid",), (_cat("sex", ["F", "M"]), _cat("age", ["young", "old"])))
    fk = ForeignKey("persons", ("mother",), "persons", ("pid",), nullable=True)
    return Schema((persons,), (fk,), PrivacyUnit(None, {fk.name: tau}), name="self-reference")


def m2n_schema(tau: int = 2) -> Schema:
    """(e) students ← enrolments → courses (link table keyed by its two non-null FKs: distinct
    pairs), row unit."""
    students = Table("students", ("sid",), (_cat("year", ["y1", "y2"]), _cat("major", ["m0", "m1"])))
    courses = Table("courses", ("cid",), (_cat("level", ["intro", "adv"]), _cat("dept", ["d0", "d1"])))
    enrolments = Table("enrolments", ("sid", "cid"), (_cat("grade", ["A", "B"]),))
    fks = (ForeignKey("enrolments", ("sid",), "students"), ForeignKey("enrolments", ("cid",), "courses"))
    return Schema((students, courses, enrolments), fks,
                  PrivacyUnit(None, {fks[0].name: tau, fks[1].name: tau}), name="many-to-many")


# ------------------------------------------------------------------------------------------------
# Databases (hypothesis)
# ------------------------------------------------------------------------------------------------

def _fk_column(parent: pd.DataFrame, fk: ForeignKey, idx: np.ndarray) -> dict[str, pd.Series]:
    """FK columns of child rows pointing at parent rows ``idx`` (``-1`` → null)."""
    out = {}
    null = idx < 0
    for cc, pc in zip(fk.columns, fk.parent_columns):
        vals = parent[pc].to_numpy()[np.where(null, 0, idx)] if len(parent) else \
            np.zeros(len(idx), dtype=np.int64)
        s = pd.Series(vals)
        if fk.nullable:
            s = (s.astype("Int64") if parent[pc].dtype.kind in "iu" else s.astype(object)).mask(null)
        out[cc] = s
    return out


def _cap_of(schema: Schema, fk: ForeignKey) -> int | None:
    unit = schema.privacy_unit
    if unit is None or schema.table(fk.parent).public:
        return None
    return unit.caps.get(fk.name)


@st.composite
def databases(draw: st.DrawFn, schema: Schema, *, max_rows: int = 4, min_rows: int = 1,
              over_cap: int = 0, min_degree: dict[str, int] | None = None) -> Database:
    """A random database of ``schema`` with integer keys ``1 … n``.

    The first FK of a table with a capped private parent (not self-referential) is drawn as a
    degree per parent row in ``[min_degree, τ + over_cap]`` (plus 0–2 null children when
    nullable); a table without one gets ``1 … max_rows`` rows and its other FK values are drawn
    uniformly, then cut to the caps greedily (null when nullable, else the row is dropped).
    """
    min_degree = min_degree or {}
    frames: dict[str, pd.DataFrame] = {}
    for name in schema.topological_order():
        table = schema.table(name)
        if table.public:
            frames[name] = public_frames(schema)[name]
            continue
        fks = schema.fks_from(name)
        group = next((fk for fk in fks if not fk.self_referential and _cap_of(schema, fk)), None)
        parent_of: dict[str, np.ndarray] = {}
        if group is not None:
            n_par = len(frames[group.parent])
            hi = _cap_of(schema, group) + over_cap
            degs = draw(st.lists(st.integers(min_degree.get(group.name, 0), hi),
                                 min_size=n_par, max_size=n_par))
            idx = np.repeat(np.arange(n_par), degs).astype(np.int64)
            if group.nullable:
                idx = np.concatenate([idx, -np.ones(draw(st.integers(0, 2)), dtype=np.int64)])
            parent_of[group.name] = idx
            n = len(idx)
        else:
            n = draw(st.integers(min_rows, max_rows))
        keep = np.ones(n, dtype=bool)
        for fk in fks:
            if fk.name in parent_of:
                continue
            n_par = n if fk.self_referential else len(frames[fk.parent])
            lo = -1 if fk.nullable else 0
            if n_par == 0:
                parent_of[fk.name] = -np.ones(n, dtype=np.int64)
                continue
            idx = np.array(draw(st.lists(st.integers(lo, n_par - 1), min_size=n, max_size=n)),
                           dtype=np.int64)
            if fk.self_referential:
                idx[idx == np.arange(n)] = -1
            cap = _cap_of(schema, fk)
            if cap is not None:
                deg = np.zeros(n_par, dtype=np.int64)
                for i, p in enumerate(idx):
                    if p < 0 or not keep[i]:
                        continue
                    if deg[p] < cap + over_cap:
                        deg[p] += 1
                    elif fk.nullable:
                        idx[i] = -1
                    else:
                        keep[i] = False
            parent_of[fk.name] = idx
        cols: dict[str, object] = {}
        keys = np.arange(1, n + 1, dtype=np.int64)
        for c in table.primary_key:
            cols[c] = keys
        for fk in fks:
            parent = pd.DataFrame({c: keys for c in fk.parent_columns}) if fk.self_referential \
                else frames[fk.parent]
            cols.update(_fk_column(parent, fk, parent_of[fk.name]))
        for a in table.attributes:  # half of the columns constant: cells coincide (worst cases)
            if draw(st.booleans()):
                cols[a.name] = [draw(st.sampled_from(a.categories))] * n
            else:
                cols[a.name] = draw(st.lists(st.sampled_from(a.categories), min_size=n, max_size=n))
        df = pd.DataFrame(cols)
        keep &= ~df.duplicated(list(table.primary_key)).to_numpy()  # keys made of FK columns
        frames[name] = df[keep].reset_index(drop=True)
    return Database(schema, {n: frames[n] for n in schema.table_names})


def public_frames(schema: Schema) -> dict[str, pd.DataFrame]:
    """Fixed small frames for the public tables used here."""
    return {t.name: pd.DataFrame({"region": ["N", "S", "E"], "climate": ["cold", "warm", "warm"]})
            for t in schema.tables if t.public}


# ------------------------------------------------------------------------------------------------
# Neighbours
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Neighbour:
    description: str
    db: Database


def entity_neighbours(db: Database) -> Iterator[Neighbour]:
    """``D`` minus one entity row (and its closure), for every entity row."""
    entity = db.schema.privacy_unit.entity
    pk = db.schema.table(entity).primary_key
    frame = db[entity]
    for i in range(len(frame)):
        mask = np.zeros(len(frame), dtype=bool)
        mask[i] = True
        key = tuple(frame.loc[i, list(pk)])
        yield Neighbour(f"{entity} {key[0] if len(key) == 1 else key} removed with its closure",
                        drop_rows(db, entity, mask))


def _write_fk(frames: dict[str, pd.DataFrame], db: Database, fk: ForeignKey, idx: np.ndarray) -> None:
    parent = frames[fk.parent]
    child = frames[fk.child]
    for c, s in _fk_column(parent, fk, idx).items():
        s.index = child.index
        child[c] = s if fk.nullable else s.to_numpy()


def tuple_unit(schema: Schema) -> Schema:
    """The same schema under the tuple unit (one row with its own values and FK values)."""
    from dataclasses import replace

    return schema.with_privacy_unit(replace(schema.privacy_unit, neighbour="tuple"))


def row_neighbour(db: Database, rng: np.random.Generator, *, tries: int = 50,
                  table: str | None = None, row: int | None = None, aligned: bool | None = None,
                  extreme: bool | None = None) -> Neighbour:
    """One row of one private table changes: values, own FKs and (row unit, not tuple unit) the
    FKs that reference it.

    Every capped degree stays ≤ τ (and keys stay unique: a draw that repeats a key is drawn
    again). Half of the draws are *aligned*, to reach the worst cases of cross-table counts: the
    row takes the values of another row, its children leave for parents that look like its new
    self and the children it takes come from parents that looked like its old self (every moved
    link then leaves the same cell for the same cell). Extreme moves (all children out, children
    in up to the cap) are drawn half of the time. ``table``, ``row``, ``aligned`` and ``extreme``
    fix those choices.
    """
    for _ in range(tries):
        out = _row_neighbour(db, rng, table, row, aligned, extreme)
        if out is not None:
            return out
    raise AssertionError("could not draw a row-unit neighbour that keeps the keys unique")


def _signature(df: pd.DataFrame, table: Table, row: int) -> tuple:
    return tuple(df.loc[row, a.name] for a in table.attributes)


def _row_neighbour(db: Database, rng: np.random.Generator, name: str | None, i: int | None,
                   aligned: bool | None, extreme: bool | None) -> Neighbour | None:
    s = db.schema
    caps = s.privacy_unit.caps
    frames = {t: db[t].copy() for t in s.table_names}
    idx = {fk.name: db.parent_index(fk).copy() for fk in s.foreign_keys}
    private = [t for t in s.private_tables if len(frames[t])]
    name = private[int(rng.integers(len(private)))] if name is None else name
    table = s.table(name)
    df = frames[name]
    i = int(rng.integers(len(df))) if i is None else i
    key = df.loc[i, list(table.primary_key)].tolist()
    aligned = bool(rng.random() < 0.5) if aligned is None else aligned

    def extreme_move() -> bool:
        return bool(rng.random() < 0.5) if extreme is None else extreme

    what = ["aligned" if aligned else "random"]
    old_sig = _signature(df, table, i)

    def degree(fk: ForeignKey) -> np.ndarray:
        a = idx[fk.name]
        return np.bincount(a[a >= 0], minlength=len(frames[fk.parent]))

    def key_free(fk: ForeignKey, row: int, p: int) -> bool:
        """Whether re-pointing ``row`` to ``p`` keeps a key made of FK columns unique."""
        pk = set(s.table(fk.child).primary_key)
        key_fks = [f for f in s.fks_from(fk.child) if set(f.columns) <= pk]
        if fk not in key_fks or set().union(*(f.columns for f in key_fks)) != pk:
            return True
        new = tuple(p if f.name == fk.name else idx[f.name][row] for f in key_fks)
        n = len(idx[fk.name])
        keys = {tuple(idx[f.name][r] for f in key_fks) for r in range(n) if r != row}
        return new not in keys

    def allowed(fk: ForeignKey, row: int, exclude: int | None) -> list[int]:
        cap = _cap_of(s, fk)
        deg = degree(fk)
        cur = idx[fk.name][row]
        out = [p for p in range(len(frames[fk.parent]))
               if (cap is None or deg[p] < cap or p == cur) and p != exclude
               and not (fk.self_referential and p == row) and key_free(fk, row, p)]
        return out + ([-1] if fk.nullable else [])

    def pick(options: Sequence[int], prefer: Callable[[int], bool] | None = None) -> int:
        if aligned and prefer is not None:
            best = [p for p in options if prefer(p)]
            options = best or options
        return int(options[int(rng.integers(len(options)))])

    others = [r for r in range(len(df)) if r != i and _signature(df, table, r) != old_sig]
    if aligned and others:
        src = others[int(rng.integers(len(others)))]
        new_sig = _signature(df, table, src)
    else:
        new_sig = tuple(a.categories[int(rng.integers(len(a.categories)))] for a in table.attributes)
    for a, v in zip(table.attributes, new_sig):
        df.loc[i, a.name] = v
    what.append(f"values {old_sig} → {new_sig}")
    for fk in s.fks_from(name):
        old = int(idx[fk.name][i])
        par, ptab = frames[fk.parent], s.table(fk.parent)
        old_par = _signature(par, ptab, old) if old >= 0 else None
        new = pick(allowed(fk, i, None),
                   lambda p, par=par, ptab=ptab, o=old_par: p >= 0 and _signature(par, ptab, p) != o)
        if new != old:
            what.append(f"{fk.name}: parent row {old} → {new}")
        idx[fk.name][i] = new
    # the row unit also re-points the rows that reference this row; the tuple unit does not
    # (a parent's set of children changes only through its children's rows)
    for fk in (s.fks_into(name) if s.privacy_unit.neighbour == "row" else ()):
        cap = caps.get(fk.name)
        arr = idx[fk.name]
        mine = np.flatnonzero(arr == i)
        k_out = len(mine) if extreme_move() else int(rng.integers(0, len(mine) + 1))
        moved_out = 0
        for c in rng.permutation(mine)[:k_out]:
            options = allowed(fk, int(c), i)
            if options:
                # aligned: the child leaves for a parent that looks like the row's new self
                arr[c] = pick(options, lambda p: p >= 0 and _signature(df, table, p) == new_sig)
                moved_out += 1
        room = (cap if cap is not None else len(arr)) - int((arr == i).sum())
        donors = np.flatnonzero((arr != i) & ~(fk.self_referential & (np.arange(len(arr)) == i)))
        donors = np.setdiff1d(donors, mine)  # a child moved out does not come back
        if aligned:  # children of parents that looked like the row's old self first
            like = np.array([arr[c] >= 0 and arr[c] != i and _signature(df, table, arr[c]) == old_sig
                             for c in donors], dtype=bool)
            donors = np.concatenate([rng.permutation(donors[like]), rng.permutation(donors[~like])])
        else:
            donors = rng.permutation(donors)
        k_in = room if extreme_move() else int(rng.integers(0, max(room, 0) + 1))
        taken = 0
        for c in donors:
            if taken >= k_in:
                break
            if key_free(fk, int(c), i):
                arr[c] = i
                taken += 1
        k_in = taken
        if moved_out or k_in:
            what.append(f"{fk.name}: {moved_out} child(ren) moved out, {k_in} moved in")
    for fk in s.foreign_keys:
        if not np.array_equal(idx[fk.name], db.parent_index(fk)):
            _write_fk(frames, db, fk, idx[fk.name])
    if any(frames[t.name].duplicated(list(t.primary_key)).any() for t in s.tables):
        return None
    out = Database(s, frames, validate=False)  # valid by construction (the fit validates it again)
    for fk in s.foreign_keys:
        cap = _cap_of(s, fk)
        if cap is not None:
            assert out.degrees(fk).max(initial=0) <= cap, "neighbour generator broke a cap"
    return Neighbour(f"{name} row {key[0] if len(key) == 1 else key} changed ({'; '.join(what)})", out)


def neighbours(db: Database, rng: np.random.Generator, n_row: int = 4) -> list[Neighbour]:
    """Every entity neighbour (entity unit) or ``n_row`` random row-unit neighbours."""
    if db.schema.privacy_unit.entity is not None:
        return list(entity_neighbours(db))
    return [row_neighbour(db, rng) for _ in range(n_row)]


# ------------------------------------------------------------------------------------------------
# Plans over the registries
# ------------------------------------------------------------------------------------------------

def mechanisms() -> list[str]:
    return list(single.available())


def linkers() -> list[str]:
    return list(relational.available())


def relation_methods() -> list[str]:
    return list(relational.available_relations())


def method_combinations() -> list[tuple[str, str]]:
    """Every mechanism with the first linker, and the first mechanism with every linker."""
    mechs, links = mechanisms(), linkers()
    combos = [(m, links[0]) for m in mechs] + [(mechs[0], lk) for lk in links[1:]]
    return combos


def small(plan: Plan) -> Plan:
    for c in plan.components:
        if c.method in SMALL_PARAMS:
            plan = plan.with_params(c.name, **SMALL_PARAMS[c.method])
    return plan


def make_plan(schema: Schema, mechanism: str, linker: str, *, relation: str | None = None,
              link_table: str | None = None) -> Plan | None:
    """Every private table on ``mechanism``, every private FK on ``linker`` where it applies
    (degree elsewhere), the link table as a ``relation`` when given. ``None`` when ``linker``
    applies to no FK of the schema (nothing to test)."""
    plan = Plan.default(schema, 1.0, 1e-6, mechanism=mechanism, method=linker,
                        fallback=linkers()[0])
    if relation is not None:
        plan = plan.with_relation(schema, link_table, relation)
    elif schema.private_foreign_keys and not any(c.method == linker for c in plan.edges):
        return None
    plan = small(plan)
    # a method whose problems depend on its parameters (k of bi-adjacency) is checked again here
    problems = [p for p in plan.problems(schema)]
    assert not problems, problems
    return plan


# ------------------------------------------------------------------------------------------------
# Recording / replaying tape
# ------------------------------------------------------------------------------------------------

@dataclass
class Release:
    kind: str  # "gaussian" | "exponential" | "laplace"
    label: str
    component: str
    values: np.ndarray  # exact answers, or exact scores
    sensitivity: float
    output: object  # (noisy, sigma) or chosen index


class Misaligned(Exception):
    """The replayed fit asked a different query than the recorded one at the same position."""


@dataclass
class Tape:
    replay: list[Release] | None = None
    releases: list[Release] = field(default_factory=list)

    def _reference(self, rec: Release) -> Release | None:
        if self.replay is None:
            return None
        k = len(self.releases) - 1
        if k >= len(self.replay):
            raise Misaligned(f"release {k} ({rec.kind} {rec.label!r}, {rec.component}) has no "
                             f"counterpart: D made only {len(self.replay)} releases")
        ref = self.replay[k]
        if (ref.kind, ref.component, ref.values.shape) != (rec.kind, rec.component, rec.values.shape):
            raise Misaligned(f"release {k}: D asked {ref.kind} {ref.label!r} ({ref.component}, shape "
                             f"{ref.values.shape}), D' asked {rec.kind} {rec.label!r} ({rec.component}, "
                             f"shape {rec.values.shape})")
        return ref

    def gaussian(self, original: Callable) -> Callable:
        def wrapper(values, **kw):  # noqa: ANN001, ANN202
            exact = np.array(values, dtype=np.float64, copy=True)
            noisy, sigma = original(values, **kw)
            rec = Release("gaussian", kw["label"], kw["component"], exact, float(kw["sensitivity"]),
                          (np.array(noisy, copy=True), sigma))
            self.releases.append(rec)
            ref = self._reference(rec)
            if ref is None:
                return noisy, sigma
            return np.array(ref.output[0], copy=True), ref.output[1]
        return wrapper

    def laplace(self, original: Callable) -> Callable:
        """Like :meth:`gaussian`; the declared Δ is an L1 sensitivity (checked in L1)."""
        def wrapper(values, **kw):  # noqa: ANN001, ANN202
            exact = np.array(values, dtype=np.float64, copy=True)
            noisy, scale = original(values, **kw)
            rec = Release("laplace", kw["label"], kw["component"], exact, float(kw["sensitivity"]),
                          (np.array(noisy, copy=True), scale))
            self.releases.append(rec)
            ref = self._reference(rec)
            if ref is None:
                return noisy, scale
            return np.array(ref.output[0], copy=True), ref.output[1]
        return wrapper

    def exponential(self, original: Callable) -> Callable:
        def wrapper(scores, **kw):  # noqa: ANN001, ANN202
            exact = np.array(scores, dtype=np.float64, copy=True)
            chosen = original(scores, **kw)
            rec = Release("exponential", kw["label"], kw["component"], exact, float(kw["sensitivity"]),
                          chosen)
            self.releases.append(rec)
            ref = self._reference(rec)
            return chosen if ref is None else ref.output
        return wrapper


@contextmanager
def taped(replay: list[Release] | None = None) -> Iterator[Tape]:
    tape = Tape(replay)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(budget_module, "gaussian_mechanism", tape.gaussian(budget_module.gaussian_mechanism))
        mp.setattr(budget_module, "exponential_mechanism",
                   tape.exponential(budget_module.exponential_mechanism))
        mp.setattr(budget_module, "laplace_mechanism", tape.laplace(budget_module.laplace_mechanism))
        yield tape


def _check_ledger(synth: RelationalSynthesizer, tape: Tape) -> list[str]:
    """Every ledger entry came through the tape (no release bypasses it)."""
    ledger = synth.ledger_
    if len(ledger) != len(tape.releases):
        return [f"ledger has {len(ledger)} entries but {len(tape.releases)} releases went through "
                "Budget.gaussian/exponential/laplace: a release bypasses the harness"]
    return [f"ledger entry {k} ({e.label!r}) records Δ = {e.sensitivity} but the mechanism was "
            f"called with Δ = {r.sensitivity}" for k, (e, r) in enumerate(zip(ledger, tape.releases))
            if e.label != r.label or e.sensitivity != r.sensitivity]


def record_fit(db: Database, plan: Plan, seed: int = SEED) -> tuple[RelationalSynthesizer, list[Release]]:
    with taped() as tape:
        synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
    problems = _check_ledger(synth, tape)
    assert not problems, problems
    return synth, tape.releases


@dataclass(frozen=True)
class Violation:
    neighbour: str
    what: str

    def __str__(self) -> str:
        return f"{self.what}\n      neighbour: {self.neighbour}"


def _change(a: Release, b: Release) -> float:
    if a.kind == "gaussian":
        return float(np.linalg.norm((a.values - b.values).ravel()))
    if a.kind == "laplace":
        return float(np.abs(a.values - b.values).sum())
    return float(np.max(np.abs(a.values - b.values)))


def compare_on_neighbour(reference: list[Release], neighbour: Neighbour, plan: Plan,
                         seed: int = SEED) -> list[Violation]:
    """Replay the fit on the neighbour and check every release against its declared Δ."""
    out: list[Violation] = []

    def bad(msg: str) -> None:
        out.append(Violation(neighbour.description, msg))

    with taped(reference) as tape:
        try:
            synth = RelationalSynthesizer(plan, random_state=seed).fit(neighbour.db)
        except Misaligned as e:
            bad(f"release sequence differs: {e}")
            synth = None
    if synth is not None:
        for p in _check_ledger(synth, tape):
            bad(p)
        if len(tape.releases) != len(reference):
            bad(f"D made {len(reference)} releases, D' made {len(tape.releases)} "
                f"(missing: {[r.label for r in reference[len(tape.releases):]]})")
    for k, (a, b) in enumerate(zip(reference, tape.releases)):
        where = f"release {k} [{a.component}] {a.kind} {a.label!r}"
        if a.label != b.label:
            bad(f"{where}: label differs on D' ({b.label!r}): the label holds a private count, or "
                "the query depends on the data outside the releases (answers not compared)")
            continue
        if a.sensitivity != b.sensitivity:
            bad(f"{where}: declared Δ is not public: {a.sensitivity:.6g} on D, {b.sensitivity:.6g} on D'")
        change = _change(a, b)
        if change > a.sensitivity * (1 + TOL):
            norm = {"gaussian": "L2 change", "laplace": "L1 change"}.get(a.kind, "max score change")
            bad(f"{where}: {norm} {change:.6g} > declared Δ {a.sensitivity:.6g} "
                f"(ratio {change / a.sensitivity:.3g})")
    return out


def check_neighbours(db: Database, plan: Plan, nbrs: Sequence[Neighbour], seed: int = SEED
                     ) -> list[Violation]:
    _, reference = record_fit(db, plan, seed)
    out: list[Violation] = []
    for nb in nbrs:
        out += compare_on_neighbour(reference, nb, plan, seed)
    return out


def report(violations: Sequence[Violation], header: str, limit: int = 12) -> str:
    lines = [f"{header}: {len(violations)} violation(s)"]
    lines += [f"  - {v}" for v in violations[:limit]]
    if len(violations) > limit:
        lines.append(f"  … and {len(violations) - limit} more")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Truncation stability
# ------------------------------------------------------------------------------------------------

def key_sets(db: Database) -> dict[str, set[tuple]]:
    """Primary keys of every table, as sets of tuples."""
    out = {}
    for t in db.schema.tables:
        df = db[t.name]
        out[t.name] = set(map(tuple, df[list(t.primary_key)].itertuples(index=False, name=None)))
    return out


def stable_tables(schema: Schema, stable: dict[str, bool]) -> list[str]:
    """Tables whose rows depend only on stable truncations (not below an unstable capped FK)."""
    below: set[str] = set()
    for fk_name, ok in stable.items():
        if not ok:
            child = schema.foreign_key(fk_name).child
            below |= {child} | schema.dependants(child)
    return [t for t in schema.table_names if t not in below]


def truncation_violations(db: Database) -> tuple[list[str], dict[str, bool]]:
    """For every entity ``t``: ``trunc(D − t) == trunc(D) − closure(t)`` on the tables the
    cap report calls stable. Returns the violations and the report's ``stable`` per FK."""
    entity = db.schema.privacy_unit.entity
    trunc, rep = enforce_caps(db)
    stable = {r.fk: bool(r.stable) for r in rep.rows.itertuples()}
    tables = stable_tables(db.schema, stable)
    pk = db.schema.table(entity).primary_key
    out = []
    base_keys = db[entity][list(pk)]
    for i in range(len(base_keys)):
        key = tuple(base_keys.iloc[i])
        mask = np.zeros(len(base_keys), dtype=bool)
        mask[i] = True
        left = key_sets(enforce_caps(drop_rows(db, entity, mask))[0])
        tkeys = trunc[entity][list(pk)]
        tmask = np.array([tuple(r) == key for r in tkeys.itertuples(index=False, name=None)], dtype=bool)
        right = key_sets(drop_rows(trunc, entity, tmask))
        for t in tables:
            if left[t] != right[t]:
                extra, missing = left[t] - right[t], right[t] - left[t]
                out.append(f"{entity} {key[0] if len(key) == 1 else key}: {t} differs "
                           f"({len(extra)} row(s) only in trunc(D − t), e.g. {sorted(extra)[:3]}; "
                           f"{len(missing)} only in trunc(D) − t, e.g. {sorted(missing)[:3]})")
    return out, stable



# ------------------------------------------------------------------------------------------------
# Fixed databases (deterministic tests)
# ------------------------------------------------------------------------------------------------

def fixed_household_db(n_households: int, *, seed: int = 0, persons: tuple[int, int] = (1, 2),
                       trips: tuple[int, int] = (0, 2), tau: int = 2,
                       truncate: str = "children") -> Database:
    """A household database with ``persons`` / ``trips`` children per parent (inclusive ranges;
    above τ to exercise the caps)."""
    schema = household_schema(tau)
    if truncate != "children":
        unit = schema.privacy_unit
        schema = schema.with_privacy_unit(PrivacyUnit(unit.entity, unit.caps, truncate=truncate))
    rng = np.random.default_rng(seed)
    regions = public_frames(schema)["regions"]
    hh = pd.DataFrame({"hid": np.arange(1, n_households + 1),
                       "region": rng.choice(regions["region"].to_numpy(), n_households),
                       "tenure": rng.choice(["own", "rent"], n_households),
                       "car": rng.choice(["no", "yes"], n_households)})
    hid = np.repeat(hh["hid"].to_numpy(), rng.integers(persons[0], persons[1] + 1, n_households))
    pp = pd.DataFrame({"pid": np.arange(1, len(hid) + 1), "hid": hid,
                       "sex": rng.choice(["F", "M"], len(hid)),
                       "age": rng.choice(["0-17", "18-64", "65+"], len(hid))})
    pid = np.repeat(pp["pid"].to_numpy(), rng.integers(trips[0], trips[1] + 1, len(pp)))
    tr = pd.DataFrame({"tid": np.arange(1, len(pid) + 1), "pid": pid,
                       "mode": rng.choice(["car", "bike", "walk"], len(pid))})
    return Database(schema, {"regions": regions, "households": hh, "persons": pp, "trips": tr})


def clustered_db(schema: Schema) -> tuple[Database, str, list[int]]:
    """A row-unit database built for the worst case of cross-table counts, with the table and rows
    whose aligned, extreme neighbours reach it.

    The parent table of the first capped FK has two clusters: rows ``0…2`` share the first
    category of every attribute and each has τ children; rows ``3…5`` share the second and have
    none. Children share one signature. Changing a cluster-A row into a cluster-B one, sending its
    τ children to cluster-B parents and taking τ children of cluster-A parents moves 2τ links
    from one cell to the same other cell.

    Supports the schemas of this module with a capped private parent: parent → child (nullable or
    not), self-reference, many-to-many.
    """
    unit = schema.privacy_unit
    fk = next(f for f in schema.foreign_keys if f.name in unit.caps and not schema.table(f.parent).public)
    tau = int(unit.caps[fk.name])
    parent = schema.table(fk.parent)

    def attrs(table: Table, n: int, cluster: Callable[[int], int]) -> dict[str, list]:
        return {a.name: [a.categories[min(cluster(j), len(a.categories) - 1)] for j in range(n)]
                for a in table.attributes}

    a_rows = [0, 1, 2]
    if fk.self_referential:  # rows 0–2 mothers (A), 3–5 childless (B), 6… the children
        n = 6 + tau * len(a_rows)
        mother = [None] * 6 + [p + 1 for p in a_rows for _ in range(tau)]
        cluster = lambda j: 0 if j < 3 else (1 if j < 6 else 2)  # noqa: E731
        df = pd.DataFrame({parent.primary_key[0]: np.arange(1, n + 1),
                           fk.columns[0]: pd.array(mother, dtype="Int64"), **attrs(parent, n, cluster)})
        return Database(schema, {parent.name: df}), parent.name, a_rows
    frames = {parent.name: pd.DataFrame({parent.primary_key[0]: np.arange(1, 7),
                                         **attrs(parent, 6, lambda j: 0 if j < 3 else 1)})}
    child = schema.table(fk.child)
    pid = np.repeat(np.arange(1, 4), tau)
    cols: dict[str, object] = {}
    others = [f for f in schema.fks_from(child.name) if f.name != fk.name]
    for other in others:  # the second parent of a link table: distinct pairs, caps kept
        optab = schema.table(other.parent)
        n_o = max(2 * tau, 4)
        frames[other.parent] = pd.DataFrame({optab.primary_key[0]: np.arange(1, n_o + 1),
                                             **attrs(optab, n_o, lambda j: 0)})
        cols[other.columns[0]] = (np.arange(len(pid)) % n_o) + 1
    cols[fk.columns[0]] = pd.array(pid, dtype="Int64") if fk.nullable else pid
    if child.primary_key and not set(child.primary_key) <= {c for f in schema.fks_from(child.name)
                                                             for c in f.columns}:
        cols = {child.primary_key[0]: np.arange(1, len(pid) + 1), **cols}
    df = pd.DataFrame({**cols, **attrs(child, len(pid), lambda j: 0)})
    if fk.nullable:  # two children without a parent
        extra = df.iloc[:2].copy()
        extra[fk.columns[0]] = pd.array([None, None], dtype="Int64")
        extra[child.primary_key[0]] = [len(df) + 1, len(df) + 2]
        df = pd.concat([df, extra], ignore_index=True)
    frames[child.name] = df
    for t in schema.tables:
        if t.public:
            frames[t.name] = public_frames(schema)[t.name]
    return Database(schema, frames), parent.name, a_rows


# ------------------------------------------------------------------------------------------------
# Database methods (Denorm, PrivLava): they own the whole plan
# ------------------------------------------------------------------------------------------------

def database_methods() -> list[str]:
    return list(relational.available_databases())


def household_person_schema(tau: int = 2) -> Schema:
    """(f) households (entity) → persons, the census shape a database method joins."""
    s = household_schema(tau)
    return Schema((s.table("households"), s.table("persons")),
                  (ForeignKey("persons", ("hid",), "households"),),
                  PrivacyUnit("households", {"persons.hid->households": tau}), name="household-person")


def make_database_plan(schema: Schema, method: str) -> Plan | None:
    """The default plan of database method ``method`` (small hyper-parameters); ``None`` when
    the method refuses the schema."""
    plan = small(Plan.default(schema, 1.0, 1e-6, method=method))
    return None if plan.problems(schema) else plan
