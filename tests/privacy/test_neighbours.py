"""Neighbour tests (issue 10): every release of every registered method stays within the
sensitivity it declares, on every neighbour of small random databases under the privacy unit; cap
enforcement is stable where the cap report says so; the ledger reveals no private count.

The harness (``tests/privacy/neighbours.py``) replays a fit on the neighbour with the noisy outputs
of the fit on ``D``, so that release ``k`` is the same query on both databases, and compares the
exact answers. Methods come from the registries (``relviz.single``, ``relviz.relational`` linkers
and relation methods): a newly registered method is covered without new code.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from relviz.database import drop_rows
from relviz.plan import Plan
from relviz.privacy.budget import Budget
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer
from tests.privacy.neighbours import (
    Misaligned,
    check_neighbours,
    clustered_db,
    compare_on_neighbour,
    databases,
    enforce_caps,
    fixed_household_db,
    household_schema,
    key_sets,
    linkers,
    m2n_schema,
    make_plan,
    mechanisms,
    method_combinations,
    neighbours,
    parent_child_schema,
    public_parent_schema,
    record_fit,
    relation_methods,
    report,
    row_neighbour,
    selfref_schema,
    small,
    taped,
    truncation_violations,
    tuple_unit,
)

# Bounded and reproducible: a fixed derandomised search, no shrinking (each example costs fits).
HARNESS = settings(max_examples=4, derandomize=True, deadline=None, database=None,
                   phases=(Phase.explicit, Phase.generate),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
ROW_NEIGHBOURS = 4  # random row-unit neighbours per database (entity unit: every entity row)


@dataclass(frozen=True)
class Case:
    id: str
    schema: Schema
    draw: dict[str, Any] = field(default_factory=dict)
    link_table: str | None = None
    every_mechanism: bool = False  # else the first mechanism only (each mechanism compiles per domain)

    def __repr__(self) -> str:  # short, for hypothesis' failing-example report
        return f"Case({self.id!r})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass(frozen=True)
class Methods:
    """A plan and the methods it names (short repr)."""

    id: str
    plan: Plan

    def __repr__(self) -> str:
        return f"Methods({self.id!r})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


CASES = [
    Case("households-entity", household_schema(),
         dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1}), every_mechanism=True),
    Case("parent-child-row-nonnull", parent_child_schema(nullable=False), dict(min_rows=2, max_rows=4)),
    Case("parent-child-row-nullable", parent_child_schema(nullable=True), dict(min_rows=2, max_rows=4),
         every_mechanism=True),
    Case("public-parent-row", public_parent_schema(entity=False), dict(min_rows=2, max_rows=6)),
    Case("public-parent-entity", public_parent_schema(entity=True), dict(min_rows=2, max_rows=5)),
    Case("self-reference-row", selfref_schema(), dict(min_rows=3, max_rows=6)),
    Case("many-to-many-row", m2n_schema(), dict(min_rows=2, max_rows=4), link_table="enrolments"),
    Case("parent-child-tuple-nonnull", tuple_unit(parent_child_schema(nullable=False)),
         dict(min_rows=2, max_rows=5)),
    Case("parent-child-tuple-nullable", tuple_unit(parent_child_schema(nullable=True)),
         dict(min_rows=2, max_rows=5)),
    Case("self-reference-tuple", tuple_unit(selfref_schema()), dict(min_rows=3, max_rows=6)),
    Case("many-to-many-tuple", tuple_unit(m2n_schema()), dict(min_rows=2, max_rows=4),
         link_table="enrolments"),
]


def _plans() -> list[Any]:
    """(case, methods): every linker on every case (with the first mechanism), every mechanism on
    the cases marked ``every_mechanism`` (one per unit; with the first linker), and every relation
    method on the cases with a link table."""
    out = []
    for case in CASES:
        combos = method_combinations() if case.every_mechanism else \
            [(mechanisms()[0], link) for link in linkers()]
        for mech, link in combos:
            plan = make_plan(case.schema, mech, link)
            if plan is not None:  # the linker applies to no FK of this schema
                out.append(pytest.param(case, Methods(f"{mech}+{link}", plan),
                                        id=f"{case.id}-{mech}-{link}"))
        if case.link_table:
            for rel in relation_methods():
                plan = make_plan(case.schema, mechanisms()[0], linkers()[0], relation=rel,
                                 link_table=case.link_table)
                out.append(pytest.param(case, Methods(f"{mechanisms()[0]}+relation {rel}", plan),
                                        id=f"{case.id}-{mechanisms()[0]}-relation-{rel}"))
    return out


pytestmark = pytest.mark.usefixtures("single_torch_thread")  # bi-adjacency on tiny tensors


# ------------------------------------------------------------------------------------------------
# Sensitivity of every release
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "methods"), _plans())
@HARNESS
@given(data=st.data())
def test_every_release_within_declared_sensitivity(case: Case, methods: Methods,
                                                   data: st.DataObject) -> None:
    """For every neighbour D' of D under the unit: ‖v_D − v_D'‖₂ ≤ Δ (Gaussian), max |s_D − s_D'|
    ≤ Δ (exponential), Δ and labels identical, the same releases. D satisfies the caps."""
    db = data.draw(databases(case.schema, **case.draw), label="database")
    seed = data.draw(st.integers(0, 2**32 - 1), label="neighbour seed")
    nbrs = neighbours(db, np.random.default_rng(seed), n_row=ROW_NEIGHBOURS)
    violations = check_neighbours(db, methods.plan, nbrs)
    assert not violations, report(violations, f"{case.id} {methods.id} {db!r}")


WORST_CASES = {"parent-child-row-nonnull", "parent-child-row-nullable", "self-reference-row",
               "many-to-many-row", "parent-child-tuple-nonnull", "self-reference-tuple",
               "many-to-many-tuple"}


@pytest.mark.parametrize(("case", "methods"), [p for p in _plans() if p.values[0].id in WORST_CASES])
def test_row_unit_aligned_worst_case(case: Case, methods: Methods) -> None:
    """The derivation's worst case, which random databases rarely reach: a parent row becomes a
    row of the other cluster, sends its τ children to parents like its new self and takes τ
    children of parents like its old self (every moved link leaves the same cell for the same
    cell); every parent row with children is tried."""
    db, table, rows = clustered_db(case.schema)
    rng = np.random.default_rng(0)
    nbrs = [row_neighbour(db, rng, table=table, row=i, aligned=True, extreme=True) for i in rows]
    violations = check_neighbours(db, methods.plan, nbrs)
    assert not violations, report(violations, f"{case.id} {methods.id} {db!r}")


@pytest.mark.parametrize("truncate", ["children", "parents"])
@HARNESS
@given(data=st.data())
def test_entity_unit_with_truncation_within_declared_sensitivity(truncate: str,
                                                                 data: st.DataObject) -> None:
    """The whole pipeline (cap enforcement included) on databases whose groups exceed the caps:
    the guarantee covers the raw database exactly when truncation is stable."""
    schema = household_schema()
    unit = schema.privacy_unit
    schema = schema.with_privacy_unit(PrivacyUnit(unit.entity, unit.caps, truncate=truncate))
    db = data.draw(databases(schema, min_rows=3, max_rows=4, over_cap=2), label="database")
    plan = make_plan(schema, mechanisms()[0], linkers()[0])
    violations = check_neighbours(db, plan, neighbours(db, np.random.default_rng(0)))
    assert not violations, report(violations, f"truncate={truncate} {db!r}")


def test_harness_catches_an_understated_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness is not vacuous: a mechanism declaring a quarter of its Gaussian sensitivity
    is caught."""
    original = Budget.gaussian

    def understated(self, values, *, sensitivity, **kw):  # noqa: ANN001, ANN202
        return original(self, values, sensitivity=sensitivity / 4, **kw)

    monkeypatch.setattr(Budget, "gaussian", understated)
    db = fixed_household_db(6, seed=1)
    plan = make_plan(db.schema, mechanisms()[0], linkers()[0])
    violations = check_neighbours(db, plan, neighbours(db, np.random.default_rng(0)))
    assert any("> declared Δ" in v.what for v in violations)


# ------------------------------------------------------------------------------------------------
# Truncation stability
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("truncate", ["children", "parents"])
@settings(max_examples=15, derandomize=True, deadline=None, database=None,
          phases=(Phase.explicit, Phase.generate), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncation_stable_where_reported(truncate: str, data: st.DataObject) -> None:
    """trunc(D − t) == trunc(D) − closure(t) (primary-key sets per table) for every entity t, on
    every table below only FKs the cap report calls stable."""
    schema = household_schema()
    unit = schema.privacy_unit
    schema = schema.with_privacy_unit(PrivacyUnit(unit.entity, unit.caps, truncate=truncate))
    db = data.draw(databases(schema, min_rows=2, max_rows=6, over_cap=3))
    violations, _ = truncation_violations(db)
    assert not violations, "\n".join([f"{len(violations)} unstable truncation(s):"] + violations[:10])


def test_household_person_truncation_is_stable_on_60_neighbours() -> None:
    """The FK whose parent is the entity is reported stable, and is: every household has 3–4
    persons (τ = 2) and removing any one of the 60 leaves the others' kept persons unchanged."""
    db = fixed_household_db(60, seed=3, persons=(3, 4), trips=(0, 1))
    fk = "persons.hid->households"
    trunc, rep = enforce_caps(db)
    row = rep.rows.set_index("fk").loc[fk]
    assert int(row["rows_removed"]) > 0
    assert bool(row["stable"]), "the FK whose parent is the entity must be reported stable"
    households = db["households"]
    broken = []
    for i in range(len(households)):
        mask = np.arange(len(households)) == i
        left = key_sets(enforce_caps(drop_rows(db, "households", mask))[0])
        tmask = trunc["households"]["hid"].to_numpy() == households["hid"].iloc[i]
        right = key_sets(drop_rows(trunc, "households", tmask))
        if left["persons"] != right["persons"]:
            broken.append(f"household {households['hid'].iloc[i]}: "
                          f"{len(left['persons'] ^ right['persons'])} person(s) differ")
    assert not broken, (f"{len(broken)} of {len(households)} neighbours break "
                        f"trunc(D − t) == trunc(D) − closure(t) for {fk}: " + "; ".join(broken[:5]))


# ------------------------------------------------------------------------------------------------
# The ledger is public: no exact private count in it
# ------------------------------------------------------------------------------------------------

def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [] if len(a) == len(b) else [f"{path}: {len(a)} vs {len(b)} items"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += _diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} on D vs {b!r} on D'"]


def test_ledger_reveals_no_private_count() -> None:
    """CLI-equivalent fit + sample on D and on each entity neighbour D' (same seed; bi-adjacency
    and degree linkers; caps exceeded in D). D' replays D's noisy outputs, so both runs ask the
    same queries and make the same choices; the ledger JSON (labels, notes, sensitivities, σ, ρ, …)
    must then be identical: anything that differs is a private count published in the ledger.
    The same holds for every other released artefact: the fitted models (pickled), the synthetic
    tables, the plan and the schema."""
    db = fixed_household_db(8, seed=5, persons=(1, 3), trips=(0, 3))
    schema = db.schema
    assert "biadjacency" in linkers()
    plan = Plan.default(schema, 1.0, 1e-6, mechanism=mechanisms()[0], method="biadjacency",
                        fallback=linkers()[0]).with_method("trips.pid->persons", linkers()[0])
    plan = small(plan)
    assert {c.method for c in plan.edges} == {"biadjacency", linkers()[0]}

    def ledger(d, replay=None):  # noqa: ANN001, ANN202
        with taped(replay) as tape:
            synth = RelationalSynthesizer(plan, random_state=11)
            synth.fit(d)
            syn = synth.sample()
        # everything a release writes besides the ledger: the fitted models (pickled), the
        # synthetic tables (which the SQLite file and Parquet files hold), plan and schema
        released = {"models": pickle.dumps((synth.models_, synth.links_, synth.relations_)),
                    "tables": {t: syn[t].to_csv(index=False) for t in syn.table_names},
                    "plan": json.dumps(synth.plan_.to_dict(), sort_keys=True),
                    "schema": json.dumps(synth.schema_.to_dict(), sort_keys=True)}
        return synth.accountant_.to_dict(), tape.releases, released

    reference, releases, artefacts = ledger(db)
    differing = []
    for nb in neighbours(db, np.random.default_rng(0)):
        try:
            other, _, other_artefacts = ledger(nb.db, releases)
        except Misaligned as e:
            differing.append(f"{nb.description}: release sequence differs: {e}")
            continue
        diffs = sorted(_diff(reference, other), key=lambda d: not d.startswith(".notes"))
        diffs += [f"released {k} differ" for k in artefacts if artefacts[k] != other_artefacts[k]]
        if diffs:
            differing.append(f"{nb.description}:\n      " + "\n      ".join(diffs[:8])
                             + (f"\n      … {len(diffs) - 8} more" if len(diffs) > 8 else ""))
    assert not differing, (f"the ledger differs on {len(differing)} of {len(db['households'])} "
                           "neighbours:\n  " + "\n  ".join(differing[:3]))


# ------------------------------------------------------------------------------------------------
# Database methods (issue 11): every release of Denorm / PrivLava within its declared Δ
# ------------------------------------------------------------------------------------------------

from relviz.database import Database  # noqa: E402
from tests.privacy.neighbours import (  # noqa: E402
    SEED,
    database_methods,
    entity_neighbours,
    household_person_schema,
    make_database_plan,
)

DATABASE_CASES = [
    Case("household-person-entity", household_person_schema(),
         dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
    # childless private parents: PrivLava's groups of size 0 (docs/methods/privlava.md §5)
    Case("household-person-childless-entity", household_person_schema(), dict(min_rows=2, max_rows=4)),
    Case("parent-child-row-nonnull", parent_child_schema(nullable=False), dict(min_rows=2, max_rows=4)),
    Case("parent-child-tuple-nonnull", tuple_unit(parent_child_schema(nullable=False)),
         dict(min_rows=2, max_rows=5)),
    Case("public-parent-entity", public_parent_schema(entity=True), dict(min_rows=2, max_rows=5)),
]


def _database_plans() -> list[Any]:
    out = []
    for case in DATABASE_CASES:
        for method in database_methods():
            plan = make_database_plan(case.schema, method)
            if plan is not None:
                out.append(pytest.param(case, Methods(method, plan), id=f"{case.id}-{method}"))
    return out


@pytest.mark.parametrize(("case", "methods"), _database_plans())
@HARNESS
@given(data=st.data())
def test_database_method_releases_within_declared_sensitivity(case: Case, methods: Methods,
                                                              data: st.DataObject) -> None:
    """As :func:`test_every_release_within_declared_sensitivity`, for the plans of database
    methods (the joined table's marginals, the group sizes, the public-parent counts)."""
    db = data.draw(databases(case.schema, **case.draw), label="database")
    seed = data.draw(st.integers(0, 2**32 - 1), label="neighbour seed")
    nbrs = neighbours(db, np.random.default_rng(seed), n_row=ROW_NEIGHBOURS)
    violations = check_neighbours(db, methods.plan, nbrs)
    assert not violations, report(violations, f"{case.id} {methods.id} {db!r}")


def _state_diff(a: Any, b: Any, path: str = "", depth: int = 0) -> list[str]:
    """Paths where two fitted models differ: arrays by shape and value, containers and objects
    field by field, anything else by its pickle."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a_, b_ = np.asarray(a), np.asarray(b)
        if a_.shape != b_.shape:
            return [f"{path}: shape {a_.shape} vs {b_.shape}"]
        return [] if np.array_equal(a_, b_, equal_nan=a_.dtype.kind == "f") else [f"{path}: values"]
    if depth < 8:
        if isinstance(a, dict) and isinstance(b, dict):
            if set(a) != set(b):
                return [f"{path}: keys {sorted(map(str, set(a) ^ set(b)))}"]
            return [d for k in a for d in _state_diff(a[k], b[k], f"{path}[{k!r}]", depth + 1)]
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return [f"{path}: {len(a)} vs {len(b)} items"]
            return [d for i, (x, y) in enumerate(zip(a, b))
                    for d in _state_diff(x, y, f"{path}[{i}]", depth + 1)]
        if type(a) is type(b) and hasattr(a, "__dict__") and a.__dict__ and \
                type(a).__module__.startswith("relviz"):
            return _state_diff(vars(a), vars(b), path, depth)
    return [] if pickle.dumps(a) == pickle.dumps(b) else [f"{path}: differs"]


def _check_replayed_models(db: Database, plan: Plan, nbrs: list[Any], what: str) -> None:
    """Fit on ``db``, replay its releases on each neighbour, and assert the fitted models agree."""
    reference, releases = record_fit(db, plan)
    differing = []
    for nb in nbrs:
        with taped(releases):
            try:
                other = RelationalSynthesizer(plan, random_state=SEED).fit(nb.db)
            except Misaligned as e:
                differing.append(f"{nb.description}: release sequence differs: {e}")
                continue
        diffs = [d for name in ("database_", "models_", "links_", "relations_")
                 for d in _state_diff(getattr(reference, name, None), getattr(other, name, None),
                                      name)]
        if diffs:
            differing.append(f"{nb.description}: " + "; ".join(diffs[:6]))
    assert not differing, f"{what}: the fitted models differ on neighbours:\n  " + \
        "\n  ".join(differing[:4])


@pytest.mark.parametrize("method", database_methods())
def test_fitted_database_model_holds_releases_only(method: str) -> None:
    """A fitted database model (``synth.database_``, and any linker or table model beside it:
    what ``sample`` reads) must be a function of the releases and public facts only. The fit on
    each entity neighbour D' replays D's noisy outputs, so both fits see the same releases; the
    two fitted models must then be identical, field by field. Anything that differs was derived
    from the private rows outside a mechanism (before this test: PrivLava kept every real
    parent's E-step assignment ``z_G``, per group)."""
    full = fixed_household_db(7, seed=3, persons=(1, 3))
    schema = household_person_schema()
    db = Database(schema, {"households": full["households"].drop(columns="region"),
                           "persons": full["persons"]})
    plan = make_database_plan(schema, method)
    if plan is None:
        pytest.skip(f"{method} refuses the household-person schema")
    _check_replayed_models(db, plan, list(entity_neighbours(db)), method)


@pytest.mark.parametrize(("mechanism", "linker"), method_combinations())
def test_fitted_table_and_link_models_hold_releases_only(mechanism: str, linker: str) -> None:
    """As :func:`test_fitted_database_model_holds_releases_only`, for every single-table
    mechanism and every linker (the fitted per-table models, FK links and relations) on the
    household database with its caps exceeded, against every entity neighbour."""
    db = fixed_household_db(6, seed=4, persons=(1, 3), trips=(0, 3))
    plan = make_plan(db.schema, mechanism, linker)
    if plan is None:
        pytest.skip(f"{linker} applies to no FK of the household schema")
    _check_replayed_models(db, plan, list(entity_neighbours(db)), f"{mechanism}/{linker}")


@pytest.mark.parametrize(("case", "methods"), _database_plans())
@settings(max_examples=2, derandomize=True, deadline=None, database=None,
          phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(data=st.data())
def test_fitted_database_model_holds_releases_only_on_every_unit(case: Case, methods: Methods,
                                                                 data: st.DataObject) -> None:
    """As :func:`test_fitted_database_model_holds_releases_only`, on the schemas of
    :func:`test_database_method_releases_within_declared_sensitivity` (entity and tuple units,
    a public parent with a nullable FK), drawn at random, and their neighbours."""
    db = data.draw(databases(case.schema, **case.draw), label="database")
    seed = data.draw(st.integers(0, 2**32 - 1), label="neighbour seed")
    nbrs = neighbours(db, np.random.default_rng(seed), n_row=ROW_NEIGHBOURS)
    _check_replayed_models(db, methods.plan, nbrs, f"{case.id} {methods.id}")


# ------------------------------------------------------------------------------------------------
# Off-by-default options that change which marginals are released: MST's ``joint`` nodes and
# ``score="excess"`` (docs/methods/mst.md §4), PrivLava's ``line1_whole`` (docs/methods/privlava.md §5)
# ------------------------------------------------------------------------------------------------

def _order_items_schema(tuple_: bool = False) -> Schema:
    """orders (entity) ← items (cap 3), items with an 8-code categorical ``c`` (split into two
    digits by PrivLava's ``split_domains=4``) beside ``x`` and ``y``."""
    orders = Table("orders", ("oid",), (Attribute.categorical("kind", ["a", "b"]),))
    items = Table("items", ("iid",), (Attribute.categorical("c", list("stuvwxyz")),
                                      Attribute.categorical("x", ["p", "q", "r"]),
                                      Attribute.categorical("y", ["n", "m"])))
    s = Schema((orders, items), (ForeignKey("items", ("oid",), "orders"),),
               PrivacyUnit("orders", {"items.oid->orders": 3}), name="orders-items")
    return tuple_unit(s) if tuple_ else s


def _option_plans() -> list[Any]:
    out = []
    for unit in ("entity", "tuple"):
        schema = _order_items_schema(unit == "tuple")
        case = Case(f"orders-items-{unit}", schema,
                    dict(min_rows=2, max_rows=4, min_degree={"items.oid->orders": 1}))
        for tag, joint in (("two-nodes", (("c", "x"),)), ("one-node", (("c", "x", "y"),))):
            plan = make_plan(schema, "mst", linkers()[0]).with_params(
                "items", joint=joint, score="excess")
            out.append(pytest.param(case, Methods(f"mst-joint-{tag}", plan),
                                    id=f"{case.id}-mst-joint-{tag}-excess"))
        # ε large so that latent modelling is λ-useful on a few rows and ``c`` is split
        plan = Plan.default(schema, 1e6, 1e-6, method="privlava")
        plan = plan.with_params(plan.edges[0].name, T=2, T_C=1, n_C=40, k_max=3, iters=100,
                                split_domains=4, line1_whole=True)
        out.append(pytest.param(case, Methods("privlava-line1-whole", plan),
                                id=f"{case.id}-privlava-line1-whole"))
    return out


@pytest.mark.parametrize(("case", "methods"), _option_plans())
@HARNESS
@given(data=st.data())
def test_joint_marginal_options_within_declared_sensitivity(case: Case, methods: Methods,
                                                            data: st.DataObject) -> None:
    """MST with ``joint`` groups (two nodes; one node: a single joint-marginal release) and the
    ``excess`` selection score, and PrivLava with ``line1_whole`` (Alg. 2 line 1's tree over the
    split categorical's digit pair as one node): every release within its declared Δ on every
    neighbour, under the entity and the tuple unit. The reference fit must release the grouped
    attributes' joint marginal (``c × x``, ``c × x × y``, or PrivLava's ``c#hi × c#lo``) so that
    the check is not vacuous."""
    import warnings

    import relviz.relational.privlava.method as privlava_method

    db = data.draw(databases(case.schema, **case.draw), label="database")
    seed = data.draw(st.integers(0, 2**32 - 1), label="neighbour seed")
    nbrs = neighbours(db, np.random.default_rng(seed), n_row=ROW_NEIGHBOURS)
    ok = {  # (label, size) of the release that measures the group
        "mst-joint-two-nodes": lambda label, size: label.startswith("1-way") and size == 8 * 3 + 2,
        "mst-joint-one-node": lambda label, size: label == "joint marginal (c × x × y)",
        # line 1's node marginals: (c#hi, c#lo) as one node of 3 × 3 codes, then x and y
        "privlava-line1-whole": lambda label, size: label.startswith("1-way") and size == 9 + 3 + 2,
    }[methods.id]
    # line1_whole's 1,000 mirror-descent iterations serve convergence, not privacy
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        mp.setattr(privlava_method, "WHOLE_ITERS", 100)
        warnings.simplefilter("ignore")  # tiny tables: "mostly noise" warnings
        _, reference = record_fit(db, methods.plan)
        violations = check_neighbours(db, methods.plan, nbrs)
    labels = [(r.label, r.values.size) for r in reference]
    assert any(ok(*x) for x in labels), labels
    assert not violations, report(violations, f"{case.id} {methods.id} {db!r}")


# ------------------------------------------------------------------------------------------------
# PrivPetal (issue 16): its releases on schemas that exercise every kind of FK
# ------------------------------------------------------------------------------------------------


# A large ε and a tiny λ make every candidate NPM λ-useful on databases of a few rows, so that
# every kind of release (group sizes, R-scores, PrivMRF-sub NPMs and h-scores, inter- and
# intra-group NPMs, Phase B h-scores and NPMs, and relviz's children's one-way marginals,
# children per parent value and parent–child pair margins) is
# replayed; small iteration counts keep it fast.
PETAL_PARAMS = dict(lam=1e-4, k=6, fit_iters=15, refit_iters=5, t1_picks=1, t1_iters=1, n_mrf=3,
                    child_margins=True, parent_children=True, pair_margins=2)


def _petal_shop(nullable_depot: bool = False) -> Schema:
    """regions (public) ← orders (entity) ← items → depots (public): a child with two FKs; the
    second (to a public parent) nullable when ``nullable_depot``."""
    cat = lambda name, n: Attribute.categorical(name, [f"{name}{i}" for i in range(n)])  # noqa: E731
    climate = Attribute.categorical("climate", ["cold", "warm"])  # as public_frames() holds
    regions = Table("regions", ("region",), (climate,), public=True)
    depots = Table("depots", ("region",), (climate,), public=True)
    orders = Table("orders", ("oid",), (cat("prio", 2), cat("kind", 3)))
    items = Table("items", ("iid",), (cat("mode", 3), cat("qty", 2)))
    fks = (ForeignKey("orders", ("region",), "regions"), ForeignKey("items", ("oid",), "orders"),
           ForeignKey("items", ("depot",), "depots", ("region",), nullable=nullable_depot))
    return Schema((regions, depots, orders, items), fks, PrivacyUnit(
        "orders", {fks[0].name: 4, fks[1].name: 2, fks[2].name: 8}),
        name="two FKs, the second nullable" if nullable_depot else "two FKs")


def _petal_tuple(schema: Schema) -> Schema:
    """``schema`` under the tuple unit proper (``entity=None``; :func:`tuple_unit` keeps an
    entity, and an entity unit with ``neighbour="tuple"`` is still the entity unit)."""
    return schema.with_privacy_unit(PrivacyUnit(None, dict(schema.privacy_unit.caps), neighbour="tuple"))


def _petal_household_person_nullable() -> Schema:
    """households (entity) ← persons with a nullable FK."""
    hp = household_person_schema()
    fk = hp.foreign_keys[0]
    return Schema(tuple(hp.tables), (ForeignKey(fk.child, fk.columns, fk.parent, fk.parent_columns,
                                                nullable=True),),
                  hp.privacy_unit, name="household-person (nullable FK)")


def _petal_schemas() -> list[Case]:
    chain = household_schema()  # regions (public) → households (entity) → persons → trips
    chain = chain.with_privacy_unit(PrivacyUnit(
        "households", {**chain.privacy_unit.caps, "households.region->regions": 4}))
    shop = _petal_shop()
    fks = shop.foreign_keys
    # nullable FKs (relviz's addition, docs/methods/privpetal.md §5.4): the null-children count
    # has Δ_null = max(1, τ_m) under the entity unit and 1 under the tuple unit
    hp_null = _petal_household_person_nullable()
    shop_null = _petal_shop(nullable_depot=True)
    mixed = shop.with_privacy_unit(PrivacyUnit("orders", {fks[0].name: 4, fks[1].name: 2}))
    return [
        Case("petal-household-person-entity", household_person_schema(),
             dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
        Case("petal-chain-public-parent-entity", chain,
             dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
        Case("petal-two-fks-entity", shop, dict(min_rows=2, max_rows=4,
                                                min_degree={fks[1].name: 1})),
        Case("petal-household-person-tuple", _petal_tuple(household_person_schema()),
             dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
        # a null person depends on no household: Δ_null = 1 and the count never changes
        Case("petal-nullable-household-person-entity", hp_null,
             dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
        # one person moves between a household and null: the count changes by 1 = Δ_null
        Case("petal-nullable-household-person-tuple", _petal_tuple(hp_null),
             dict(min_rows=2, max_rows=4, min_degree={"persons.hid->households": 1})),
        # removing an order removes up to 2 items with a null depot: Δ_null = x(e) = 2 (tight)
        Case("petal-two-fks-nullable-second-entity", shop_null,
             dict(min_rows=2, max_rows=4, min_degree={fks[1].name: 1})),
        # mixed mode (docs/methods/privpetal.md §5.5): the uncapped FK to a public parent is
        # linked with the degree method inside the PrivPetal plan, under both units
        Case("petal-mixed-uncapped-public-parent-entity", mixed,
             dict(min_rows=2, max_rows=4, min_degree={fks[1].name: 1})),
        Case("petal-mixed-uncapped-public-parent-tuple", _petal_tuple(mixed),
             dict(min_rows=2, max_rows=4, min_degree={fks[1].name: 1})),
        # the same FK with parent-attributes: the depot's region attributes are copied into
        # items, a child PrivPetal generates (docs/methods/privpetal.md §5.5)
        Case("petal-mixed-parent-attributes-entity", mixed,
             dict(min_rows=2, max_rows=4, min_degree={fks[1].name: 1})),
        Case("petal-mixed-parent-attributes-tuple", _petal_tuple(mixed),
             dict(min_rows=2, max_rows=4, min_degree={fks[1].name: 1})),
    ]


def _petal_plan(schema: Schema) -> Plan:
    plan = Plan.default(schema, 1e4, 1e-6, method="privpetal")
    for c in plan.edges:
        if c.method == "privpetal":  # (mixed mode: a linked FK keeps its linker's defaults)
            plan = plan.with_params(c.name, **PETAL_PARAMS)
    assert not plan.problems(schema), plan.problems(schema)
    return plan


@pytest.mark.parametrize("case", _petal_schemas(), ids=lambda c: c.id)
@HARNESS
@given(data=st.data())
def test_privpetal_releases_within_declared_sensitivity(case: Case, data: st.DataObject) -> None:
    """Every PrivPetal release (Algorithm 1 lines 1–2, Algorithm 5, Algorithm 2 Phase B,
    Algorithm 3) stays within its declared Δ on every neighbour: removed groups (τ_r), groups
    that lose children under a public parent (τ_m), the cascade of a three-level chain, the two
    FKs of one child, the tuple unit, the null-children count of a nullable FK and the children's
    one-way marginals, children per parent value and parent–child pair scores and margins
    (relviz's additions). The reference fit must release NPMs and h-scores, one one-way marginal
    per child column and one histogram of children per parent column of every modelled FK, one
    vector of pair scores where there are more candidate pairs than picks (and the null count
    where an FK is nullable), so the check is not vacuous."""
    from relviz.relational.privpetal.method import PrivPetal

    db = data.draw(databases(case.schema, **case.draw), label="database")
    seed = data.draw(st.integers(0, 2**32 - 1), label="neighbour seed")
    plan = _petal_plan(case.schema)
    if "parent-attributes" in case.id:
        plan = plan.with_method("items.depot->depots", "parent-attributes")
    nbrs = neighbours(db, np.random.default_rng(seed), n_row=ROW_NEIGHBOURS)
    fitted, reference = record_fit(db, plan)
    labels = " | ".join(r.label for r in reference)
    assert "NPM {" in labels and "h-scores" in labels and "R-scores" in labels, labels
    model = fitted.model_schema_  # with the attributes parent-attributes copies (mixed cases)
    nullable = [fk for fk in case.schema.private_foreign_keys if fk.nullable]
    assert sum(r.label == "relviz: children with a null FK" for r in reference) == len(nullable)
    linked = {c.name for c in plan.edges if c.method != "privpetal"}
    modelled = [fk for fk in case.schema.private_foreign_keys if fk.name not in linked]
    assert sum(r.label.startswith("relviz: children's one-way marginal of ") for r in reference) \
        == sum(len(model.table(fk.child).attributes) for fk in modelled)
    enc = PrivPetal(**PETAL_PARAMS)._encoding
    for fk in modelled:
        names = enc(case.schema, fk.parent, 1).names
        got = [r.label.rsplit(" ", 1)[1] for r in reference if r.component == fk.name
               and r.label.startswith("relviz: children per parent value of ")]
        assert got == list(names), (fk.name, got, names)
        # pair_margins: one vector of scores wherever there are more candidates than picks
        a = sum(r.component == fk.name and r.label.startswith("relviz: children's one-way "
                                                                 "marginal of ") for r in reference)
        scores = [r for r in reference if r.component == fk.name
                  and r.label.startswith("relviz: parent–child pair scores")]
        assert len(scores) == int(len(names) * a > PETAL_PARAMS["pair_margins"]), (fk.name, a)
    assert linked == ({"items.depot->depots"} if "mixed" in case.id else set())
    if "parent-attributes" in case.id:  # the depot's public attributes, copied into items,
        # are columns of PrivPetal's flattened relation
        assert {c.method for c in plan.edges if c.name in linked} == {"parent-attributes"}
        assert "relviz: children's one-way marginal of depot→" in labels, labels
    assert all(any(r.component == n for r in reference) for n in linked)  # the linker released
    violations = []
    for nb in nbrs:
        violations += compare_on_neighbour(reference, nb, plan)
    assert not violations, report(violations, f"{case.id} privpetal {db!r}")


def _petal_null_worst_case(which: str) -> tuple[Plan, Any, list[Any]]:
    """A fixed database and the neighbours that change PrivPetal's null-children count the most:
    ``tuple``: one person moves from a household to null (change 1 = Δ_null); ``entity``: the
    order whose two items (the cap) both have a null depot is removed (change 2 = x(e) = Δ_null)."""
    import pandas as pd

    from relviz.database import Database
    from tests.privacy.neighbours import Neighbour, entity_neighbours

    if which == "tuple":
        schema = _petal_tuple(_petal_household_person_nullable())
        hh = pd.DataFrame({"hid": [1, 2], "tenure": ["own", "rent"], "car": ["no", "yes"]})
        pp = pd.DataFrame({"pid": [1, 2, 3, 4], "hid": pd.array([1, 1, 2, None], dtype="Int64"),
                           "sex": ["F", "M", "F", "M"], "age": ["0-17", "18-64", "65+", "18-64"]})
        db = Database(schema, {"households": hh, "persons": pp})
        moved = pp.copy()
        moved["hid"] = pd.array([1, None, 2, None], dtype="Int64")
        nbrs = [Neighbour("persons row 2: household 1 → null", Database(schema, {"households": hh,
                                                                               "persons": moved}))]
    else:
        schema = _petal_shop(nullable_depot=True)
        frames = {t.name: pd.DataFrame({"region": ["N", "S", "E"], "climate": ["cold", "warm", "warm"]})
                  for t in schema.tables if t.public}
        frames["orders"] = pd.DataFrame({"oid": [1, 2], "region": ["N", "S"], "prio": ["prio0", "prio1"],
                                         "kind": ["kind0", "kind2"]})
        frames["items"] = pd.DataFrame({"iid": [1, 2, 3], "oid": [1, 1, 2],
                                        "depot": pd.array([None, None, "E"], dtype=object),
                                        "mode": ["mode0", "mode1", "mode2"], "qty": ["qty0", "qty1", "qty1"]})
        db = Database(schema, frames)
        nbrs = list(entity_neighbours(db))
    return _petal_plan(schema), db, nbrs


@pytest.mark.parametrize("which", ["tuple", "entity"])
def test_privpetal_null_count_sensitivity_is_reached(monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    """The null-children count (relviz's nullable-FK addition) on the neighbours that change it
    the most: within its declared Δ_null (1 under the tuple unit; x(e) = 2 for items with a null
    depot under the orders entity), and the harness reports a violation once Δ_null is halved, so
    the bound is reached (the random databases above need not reach it)."""
    plan, db, nbrs = _petal_null_worst_case(which)
    reference = _petal_bound_reached(monkeypatch, db, plan, nbrs, "null", "children with a null FK",
                                     f"privpetal null count ({which})")
    null = [r for r in reference if r.label == "relviz: children with a null FK"]
    assert len(null) == 1 and null[0].sensitivity == (1.0 if which == "tuple" else 2.0)


def _petal_bound_reached(monkeypatch: pytest.MonkeyPatch, db: Any, plan: Plan, nbrs: list[Any],
                         field: str, what: str, tag: str) -> list[Any]:
    """PrivPetal's releases on ``db`` stay within their declared sensitivities on ``nbrs``, and
    with ``FKSensitivity.<field>`` halved the harness reports an L2 violation of a release whose
    description holds ``what`` (so that bound is reached). Returns the reference releases."""
    import dataclasses

    from relviz.relational.privpetal import method as petal_method

    _, reference = record_fit(db, plan)
    violations = [v for nb in nbrs for v in compare_on_neighbour(reference, nb, plan)]
    assert not violations, report(violations, tag)
    original = petal_method.fk_sensitivities
    monkeypatch.setattr(petal_method, "fk_sensitivities", lambda *a, **k: dataclasses.replace(
        original(*a, **k), **{field: getattr(original(*a, **k), field) / 2}))
    _, halved = record_fit(db, plan)
    violations = [v for nb in nbrs for v in compare_on_neighbour(halved, nb, plan)]
    assert any(what in v.what and "L2 change" in v.what for v in violations), \
        report(violations, f"{tag}, {field} halved")
    return reference


@pytest.mark.parametrize(("field", "what", "prefix"), [
    ("hist", "one-way marginal of mode", "relviz: children's one-way marginal of "),
    ("children", "children per parent value of prio", "relviz: children per parent value of "),
    ("children", "pair margin of", "relviz: parent–child pair margin of ")])
def test_privpetal_histogram_sensitivity_is_reached(monkeypatch: pytest.MonkeyPatch, field: str,
                                                    what: str, prefix: str) -> None:
    """The children's one-way marginals (``child_margins``), the children per parent value
    (``parent_children``) and the parent–child pair margins (``pair_margins``), relviz's
    additions, on the neighbour that changes them the most: removing the order whose two items
    (the cap) share a mode, and are both children of a ``prio0`` order, changes that cell of
    either histogram by 2 = r(items) = Δ_hist = Δ_children; within the declared Δ, and the
    harness reports a violation once Δ is halved, so the bound is reached. A pair margin (of a
    parent column and ``mode`` or ``qty``) moves by 2 or by √2 on that neighbour, above the
    halved Δ of 1 either way."""
    import pandas as pd

    from relviz.database import Database
    from tests.privacy.neighbours import entity_neighbours

    schema = _petal_shop()
    frames = {t.name: pd.DataFrame({"region": ["N", "S"], "climate": ["cold", "warm"]})
              for t in schema.tables if t.public}
    frames["orders"] = pd.DataFrame({"oid": [1, 2], "region": ["N", "S"], "prio": ["prio0", "prio1"],
                                     "kind": ["kind0", "kind2"]})
    frames["items"] = pd.DataFrame({"iid": [1, 2, 3], "oid": [1, 1, 2], "depot": ["N", "S", "S"],
                                    "mode": ["mode1", "mode1", "mode2"], "qty": ["qty0", "qty1", "qty1"]})
    db = Database(schema, frames)
    nbrs = list(entity_neighbours(db))
    reference = _petal_bound_reached(monkeypatch, db, _petal_plan(schema), nbrs, field, what,
                                     f"privpetal {field}")
    rel = [r for r in reference if r.label.startswith(prefix) and r.component == "items.oid->orders"]
    assert rel and {r.sensitivity for r in rel} == {2.0}


# ------------------------------------------------------------------------------------------------
# The single-table benchmark's mechanisms (issue 17): AIM, PrivBayes (Laplace), PrivSyn
# ------------------------------------------------------------------------------------------------

BENCHMARK_MECHANISMS = ["aim", "privbayes", "privsyn"]


@pytest.mark.parametrize("mechanism", BENCHMARK_MECHANISMS)
def test_benchmark_mechanisms_on_every_entity_neighbour(mechanism: str) -> None:
    """Every release of AIM, PrivBayes and PrivSyn on every table of a fixed household database
    (groups above the caps, so truncation runs) stays within its declared sensitivity on every
    entity neighbour (the random databases of the test above cover them too)."""
    db = fixed_household_db(5, seed=3, persons=(1, 3), trips=(0, 3))
    plan = make_plan(db.schema, mechanism, linkers()[0])
    violations = check_neighbours(db, plan, neighbours(db, np.random.default_rng(0)))
    assert not violations, report(violations, f"{mechanism} {db!r}")


@pytest.mark.parametrize("kind", ["laplace", "exponential"])
def test_harness_catches_an_understated_privbayes_sensitivity(monkeypatch: pytest.MonkeyPatch,
                                                              kind: str) -> None:
    """The harness checks Laplace releases in L1 and PrivBayes' R-score selections: a quarter of
    either declared sensitivity is caught."""
    original = getattr(Budget, kind)

    def understated(self, values, *, sensitivity, **kw):  # noqa: ANN001, ANN202
        return original(self, values, sensitivity=sensitivity / 4, **kw)

    monkeypatch.setattr(Budget, kind, understated)
    db = fixed_household_db(6, seed=1, persons=(1, 3))
    plan = make_plan(db.schema, "privbayes", linkers()[0])
    violations = check_neighbours(db, plan, neighbours(db, np.random.default_rng(0)))
    word = "L1 change" if kind == "laplace" else "max score change"
    assert any(word in v.what for v in violations), report(violations, kind)
