"""Shared fixtures: a tiny valid relational database built by hand (no downloads)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table


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
