"""A small nycflights13 look-alike for the issue-14 tests (deterministic, no I/O, runs in seconds).

airlines (public) ← flights (private, the protected entity: one flight) → planes (public);
flights.tailnum is nullable and null for a sixth of the flights, as in nycflights13. Adding the
nonsense FK planes.manufacturer → airlines makes every plane an orphan: "drop the rows" would then
empty planes and, in cascade, remove every flight with a tail number — the issue's scenario at a
size a browser test can run and synthesise quickly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relviz import Attribute, Database, ForeignKey, Plan, PrivacyUnit, Schema, Table

__all__ = ["NONSENSE_FK", "miniflights_db", "miniflights_frames", "miniflights_plan", "miniflights_schema"]

NONSENSE_FK = ("planes", ["manufacturer"], "airlines")
"""``(child, columns, parent)`` of the FK the issue added by mistake (every plane an orphan)."""

CARRIERS = ["AA", "B6", "DL", "UA"]
MAKERS = ["AIRBUS", "BOEING", "EMBRAER"]
ORIGINS = ["EWR", "JFK", "LGA"]


def miniflights_frames(seed: int = 3, n_planes: int = 40, n_flights: int = 600) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    airlines = pd.DataFrame({"carrier": CARRIERS, "name": ["American", "JetBlue", "Delta", "United"]})
    planes = pd.DataFrame({"tailnum": [f"N{100 + i}" for i in range(n_planes)],
                           "manufacturer": rng.choice(MAKERS, n_planes),
                           "seats": rng.integers(50, 300, n_planes)})
    tail = rng.choice(planes["tailnum"].to_numpy(), n_flights).astype(object)
    tail[rng.random(n_flights) < 1 / 6] = None
    flights = pd.DataFrame({"flight_id": np.arange(1, n_flights + 1),
                            "carrier": rng.choice(CARRIERS, n_flights),
                            "tailnum": tail,
                            "origin": rng.choice(ORIGINS, n_flights),
                            "month": rng.integers(1, 13, n_flights),
                            "dep_delay": np.round(rng.normal(10, 30, n_flights).clip(-30, 200), 0)})
    return {"airlines": airlines, "planes": planes, "flights": flights}


def miniflights_schema() -> Schema:
    return Schema(
        (Table("airlines", ("carrier",), (Attribute.categorical("name", ["American", "JetBlue", "Delta",
                                                                         "United"]),), public=True),
         Table("planes", ("tailnum",), (Attribute.categorical("manufacturer", MAKERS),
                                        Attribute.numeric("seats", 0, 400, bins=8, integer=True)), public=True),
         Table("flights", ("flight_id",), (Attribute.categorical("origin", ORIGINS),
                                           Attribute.numeric("month", 1, 12, bins=12, integer=True),
                                           Attribute.numeric("dep_delay", -60, 240, bins=10)))),
        (ForeignKey("flights", ("carrier",), "airlines", ("carrier",)),
         ForeignKey("flights", ("tailnum",), "planes", ("tailnum",), nullable=True)),
        PrivacyUnit(entity="flights", rationale="one flight; airlines and planes are public registries"),
        name="miniflights")


def miniflights_db() -> Database:
    return Database(miniflights_schema(), miniflights_frames())


def miniflights_plan(epsilon: float = 1.0, delta: float = 1e-6) -> Plan:
    """The default split with the fast independent-marginals mechanism (a run takes seconds)."""
    return Plan.default(miniflights_schema(), epsilon, delta, mechanism="independent")
