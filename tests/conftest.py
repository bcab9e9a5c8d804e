"""Shared fixtures and the small databases behind them, built by hand (no downloads), and
:func:`until` (wait for the widgets' background threads).

* ``tiny_db`` (:func:`tiny_schema`, :func:`tiny_frames`): households 1:N persons, persons N:1
  regions (public), a census-like toy; ``tiny_pair``: a larger one and a synthetic copy.
* ``kit`` (:func:`shop` and friends): ``stores`` (4 rows) ← ``sales`` (8 rows, FK
  ``sales.store_id->stores``), values easy to count by hand, for the evaluation tests: the real
  degrees of the stores are 3, 2, 3, 0 (store 4 has no sale); ``sales.kind`` is categorical and
  nullable, ``sales.amount`` numeric on [0, 10] (5 bins); ``stores.region`` categorical,
  ``stores.size`` numeric on [0, 100] (4 bins). :func:`random_shop` is a larger random one.
* ``clinic_db``: the clinic database of the widget tests and notebooks
  (``tests/ui/notebooks/clinic.py``), with its problems left in for the schema editor;
  ``clinic_ready_db``: the same with every FK, every cap and no orphan, for the budget panel.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from tests.ui.notebooks import clinic


def tiny_schema(entity: str | None = "households", caps: dict | None = None) -> Schema:
    """households 1:N persons, persons N:1 regions (public): a census-like toy."""
    regions = Table("regions", ("region",), (Attribute.categorical("climate", ["cold", "warm"]),),
                    public=True)
    households = Table("households", ("hid",), (
        Attribute.categorical("tenure", ["own", "rent"]),
        Attribute.numeric("income", 0, 200, bins=4),
    ))
    persons = Table("persons", ("pid",), (
        Attribute.categorical("sex", ["F", "M"]),
        Attribute.numeric("age", 0, 100, bins=5, integer=True),
    ))
    fks = (ForeignKey("households", ("region",), "regions"),
           ForeignKey("persons", ("hid",), "households"))
    caps = {"persons.hid->households": 4} if caps is None else caps
    return Schema((regions, households, persons), fks, PrivacyUnit(entity, caps), name="tiny")


def tiny_frames(seed: int = 0, n_h: int = 60) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    regions = pd.DataFrame({"region": ["N", "S", "E"], "climate": ["cold", "warm", "warm"]})
    hh = pd.DataFrame({"hid": np.arange(1, n_h + 1),
                       "region": rng.choice(["N", "S", "E"], n_h),
                       "tenure": rng.choice(["own", "rent"], n_h),
                       "income": rng.uniform(0, 200, n_h).round(1)})
    sizes = rng.integers(1, 5, n_h)
    hid = np.repeat(hh["hid"].to_numpy(), sizes)
    persons = pd.DataFrame({"pid": np.arange(1, len(hid) + 1), "hid": hid,
                            "sex": rng.choice(["F", "M"], len(hid)),
                            "age": rng.integers(0, 101, len(hid))})
    return {"regions": regions, "households": hh, "persons": persons}


@pytest.fixture
def tiny_db() -> Database:
    return Database(tiny_schema(), tiny_frames())


@pytest.fixture(scope="module")
def tiny_pair() -> tuple[Database, Database]:
    """A larger tiny database and a seeded synthetic copy of it (independent marginals, ε = 2)."""
    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer

    real = Database(tiny_schema(), tiny_frames(n_h=80))
    plan = Plan.default(real.schema, 2.0, 1e-6, mechanism="independent")
    return real, RelationalSynthesizer(plan, random_state=0).fit(real).sample()


def until(pred: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Wait until ``pred()`` holds (background threads of the widgets), at most ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


# -- the shop of the evaluation tests ---------------------------------------------------------------

SHOP_FK = "sales.store_id->stores"


def shop_schema(nullable_fk: bool = False) -> Schema:
    stores = Table("stores", ("store_id",), (
        Attribute.categorical("region", ["N", "S"]),
        Attribute.numeric("size", 0, 100, bins=4),
    ))
    sales = Table("sales", ("sale_id",), (
        Attribute.categorical("kind", ["a", "b", "c"], nullable=True),
        Attribute.numeric("amount", 0, 10, bins=5),
    ))
    fk = ForeignKey("sales", ("store_id",), "stores", ("store_id",), nullable=nullable_fk)
    return Schema((stores, sales), (fk,), PrivacyUnit(None, {SHOP_FK: 10}), name="shop")


def shop_frames() -> dict[str, pd.DataFrame]:
    stores = pd.DataFrame({"store_id": [1, 2, 3, 4], "region": ["N", "N", "S", "S"],
                           "size": [10.0, 20.0, 60.0, 90.0]})
    sales = pd.DataFrame({"sale_id": np.arange(1, 9), "store_id": [1, 1, 1, 2, 2, 3, 3, 3],
                          "kind": ["a", "b", "a", "c", None, "b", "a", "c"],
                          "amount": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
    return {"stores": stores, "sales": sales}


def shop(frames: Mapping[str, pd.DataFrame] | None = None, *, validate: bool = True,
         nullable_fk: bool = False) -> Database:
    return Database(shop_schema(nullable_fk), dict(frames or shop_frames()), validate=validate)


def with_sales(**columns: object) -> Database:
    """The real shop with some ``sales`` columns replaced."""
    f = shop_frames()
    sales = f["sales"].copy()
    for k, v in columns.items():
        sales[k] = v
    f["sales"] = sales
    return shop(f)


def random_shop(n_stores: int = 40, n_sales: int = 700, seed: int = 0, shift: float = 0.0) -> Database:
    """A larger random shop (for embeddings and the cross-table error)."""
    rng = np.random.default_rng(seed)
    stores = pd.DataFrame({"store_id": np.arange(n_stores), "region": rng.choice(["N", "S"], n_stores),
                           "size": rng.uniform(0, 100, n_stores)})
    store = rng.integers(0, n_stores, n_sales)
    sales = pd.DataFrame({"sale_id": np.arange(n_sales), "store_id": store,
                          "kind": rng.choice(["a", "b", "c"], n_sales, p=[0.6, 0.3, 0.1]),
                          "amount": np.clip(rng.normal(4 + shift, 1.5, n_sales), 0, 10)})
    return shop({"stores": stores, "sales": sales})


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above as one namespace (``kit.shop()``, ``kit.FK``, …)."""
    return SimpleNamespace(FK=SHOP_FK, shop_schema=shop_schema, shop_frames=shop_frames, shop=shop,
                           with_sales=with_sales, random_shop=random_shop)


# -- the clinic of the widget tests ---------------------------------------------------------------

@pytest.fixture()
def clinic_db() -> Database:
    """The clinic database as the schema editor first sees it (one FK, problems left in)."""
    return clinic.clinic_db()


@pytest.fixture()
def clinic_ready_db(clinic_db: Database) -> Database:
    """The clinic database with every FK, every cap and no orphan, made with the schema editor's
    state (so that the budget panel can compute σ)."""
    from relviz.ui.schema_state import SchemaDraft

    d = SchemaDraft(clinic_db, propose=False)
    assert d.add_foreign_key("prescriptions", "visit_id", "visits")
    assert d.add_foreign_key("visits", "doctor_id", "doctors")
    assert d.set_cap("visits.patient_id->patients", 5)
    assert d.set_cap("prescriptions.visit_id->visits", 3)
    assert d.repair_orphans("drop")
    out = d.database
    assert out is not None and out.problems() == []
    return out


@pytest.fixture(scope="module")
def single_torch_thread():  # noqa: ANN201
    """One intra-op torch thread for a test module (tiny tensors: avoids oversubscribing small
    machines), restored afterwards."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
