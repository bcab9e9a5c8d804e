"""Fixtures of the evaluation tests: tiny hand-built databases (no downloads, values easy to count by hand).

``stores`` (4 rows) ← ``sales`` (8 rows, FK ``sales.store_id->stores``):

* real degrees of the stores: 3, 2, 3, 0 (store 4 has no sale);
* ``sales.kind`` is categorical and nullable, ``sales.amount`` numeric on [0, 10] (5 bins);
* ``stores.region`` categorical, ``stores.size`` numeric on [0, 100] (4 bins).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

FK = "sales.store_id->stores"


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
    return Schema((stores, sales), (fk,), PrivacyUnit(None, {FK: 10}), name="shop")


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
    return SimpleNamespace(FK=FK, shop_schema=shop_schema, shop_frames=shop_frames, shop=shop,
                           with_sales=with_sales, random_shop=random_shop)
