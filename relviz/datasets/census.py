"""census: a *generated* census-style database, households 1:N persons (the PrivLava / PrivPetal yardstick).

Why generated: the census databases of the relational DP papers — K. Cai, X. Xiao, G. Cormode,
*PrivLava: Synthesizing Relational Data with Foreign Keys under Differential Privacy*, SIGMOD 2023
(PACMMOD 1(2)), §7.1 and Table 7 (IPUMS USA California: 616,115 households, 1,690,642 persons;
IPUMS International Île-de-France); K. Cai, X. Xiao, Y. Yang, *PrivPetal: Relational Data
Synthesis via Permutation Relations*, SIGMOD 2025, §6.1 — are IPUMS extracts, which IPUMS's
conditions of use do not allow anyone to redistribute. The papers give only record, attribute
and domain-size counts (PrivLava Table 7, PrivPetal Table 5); the attribute list used here —
15 person and 10 household attributes with their domain sizes — is that of the encoded
California sample published with the authors' PrivLava reference implementation. This module
generates a stand-in with that attribute list and with household/person structure planted on
purpose, so that the census query workload (:mod:`relviz.evaluate.census_queries`; PrivLava
§7.2, PrivPetal §6.2) rewards a method that learns it. The numbers are plausible for California
but are *not* IPUMS statistics; nothing here was fitted to IPUMS microdata.

``relviz.datasets.load("census", n_households=5_000, seed=0)``: the default size fits a test in
seconds; ``n_households=PAPER_HOUSEHOLDS`` (616,115) is the papers' California scale. Generation is
vectorised (no per-household Python loop; 10^5 households take 1–2 s on two cores) and deterministic
per ``seed``. The *population* — the 233 PUMA profiles (urbanity, affluence, house-price level,
race mix, immigrant share) — is fixed (drawn once from a constant seed); ``seed`` draws the sample.

Tables (default ``n_households=5,000``, ``seed=0``): households 5,000, persons 14,255
(household sizes 1 to 10, mean 2.85; 10^5 households: 285,124 persons).

Schema (written here, not inferred; every domain ``provenance="declared"``):

* ``households(household_id; FARM, OWNERSHP, ACREHOUS, TAXINCL, PROPINSR, COSTELEC, VALUEH,
  ROOMS, PLUMBING, PUMA)`` — private, **the protected entity**. FARM(2) {non-farm, farm};
  OWNERSHP(3) {N/A, owned, rented}; ACREHOUS(3) {N/A (multi-unit building), house on < 1 acre,
  house on ≥ 1 acre}; TAXINCL(3) {N/A (no mortgage), no, yes} (mortgage payment includes
  property taxes); PROPINSR(60, ordinal) annual property insurance, 60 bins of $100 on
  [0, 6,000] (0 for non-owners); COSTELEC(100, ordinal) annual electricity cost, 100 bins of $60
  on [0, 6,000]; VALUEH(100, ordinal) house value, 100 bins of $20,000 on [0, 2,000,000], 0 for
  non-owners (IPUMS codes them N/A), top-coded at 2,000,000; ROOMS(10) {1, …, 10} (10 = 10 or
  more); PLUMBING(3) {N/A, lacking complete plumbing, complete plumbing}; PUMA(233) {1, …, 233}.
* ``persons(person_id; household_id→households; RELATE, SEX, AGE, MARST, RACE, CITIZEN,
  SPEAKENG, SCHOOL, EDUC, GRADEATT, SCHLTYPE, EMPSTAT, CLASSWKR, INCTOT, DISABWRK)`` — private
  (depends on households). RELATE(8) {head, spouse, child, parent, sibling, grandchild, other
  relative, non-relative}; SEX(2); AGE(86, ordinal) 0…85 (85 = 85 or older), one bin per year;
  MARST(6); RACE(9) (the IPUMS general RACE codes); CITIZEN(4) {N/A (born in the US), born abroad
  of American parents, naturalized citizen, not a citizen}; SPEAKENG(6) {N/A (under 5), speaks
  only English, very well, well, not well, not at all}; SCHOOL(3) {N/A, no, yes}; EDUC(11);
  GRADEATT(8); SCHLTYPE(4) {N/A, not enrolled, public, private}; EMPSTAT(4) {N/A (under 16),
  employed, unemployed, not in labor force}; CLASSWKR(3) {N/A, self-employed, works for wages};
  INCTOT(100, ordinal) total personal income, 100 bins of $2,500 on [0, 250,000] (0 under 15;
  top-coded at 250,000); DISABWRK(3) {N/A (under 16), no, yes}.
  Ordinal attributes are the numeric ones (the query generator draws contiguous ranges on them);
  the others are categorical.

Privacy unit: the **household** (entity table ``households``), as in both papers: a neighbouring
database adds or removes one household with all its members. The FK ``persons.household_id →
households`` has the public cap **τ = MAX_HOUSEHOLD_SIZE = 10 persons per household**: the
generator never makes a larger household, so this is a public property of the data-generating
process (a schema constraint, like a census form with ten person columns), the cap drops nothing
and the guarantee holds as stated. The papers instead take τ from the data (PrivLava uses the 99%
quantile of the household sizes; the authors' code caps at 15 and PrivPetal's at N = 8): a
quantile of the private sizes is itself a statistic of the private data, released without noise
and without being charged to the budget, so relviz does not do that. When no public bound exists,
pick τ from public knowledge, or with a DP quantile that the ledger charges
(``relviz.privacy.caps.dp_degree_cap``).

Planted structure (each checked by ``tests/datasets/test_census.py`` with a statistic that fails on
data whose columns were shuffled independently):

* **Household size**: a latent household type (single adult, couple, couple with children,
  single parent, extended family, non-family roommates) fixes the composition; sizes 1 to 10 with
  a California-like distribution (about 25% one person, 30% two, 14% three, 13% four, 9% five,
  9% six or more; mean 2.85 — Census 2000 put California's average household size at 2.87).
* **RELATE structure**: exactly one head per household (listed first); at most one spouse (or
  unmarried partner, coded non-relative); children come after the head and spouse, are at least
  18 years younger than the head and than the spouse, and siblings are spaced 1–6 years apart;
  the head's parents are older than the head (or both top-coded at 85); MARST "married, spouse
  present" exactly for a head with a (married) spouse and that spouse; nobody under 15 is
  married.
* **Ages within households**: spouse age = head age ± a few years (correlation ≈ 0.95); children's
  ages follow the parents'; roommates are of similar age; head age depends on the household type.
* **PUMA ↔ RACE, CITIZEN, SPEAKENG**: each PUMA has its own race mix (a Dirichlet draw around the
  California mix) and immigrant share; members share the household's race; the head's nativity
  depends on race and PUMA, the members' on the head's; the household language (and so SPEAKENG)
  on nativity and race.
* **Household income** (derived: the sum of the members' INCTOT) **↔ OWNERSHP, VALUEH, ROOMS,
  PROPINSR, TAXINCL**: a latent household socio-economic level (PUMA affluence + noise) drives the
  adults' education and income; ownership, house value, rooms and insurance depend on the realised
  household income; house value also on the PUMA's price level.
* **ROOMS ↔ household size** (strong), **COSTELEC ↔ size, rooms, rurality**, **FARM ↔ rural
  PUMAs**, **ACREHOUS ↔ tenure, farm, rurality**.
* **Person-level chains**: AGE → SCHOOL/GRADEATT/SCHLTYPE/EDUC (school grades follow age), AGE,
  EDUC, DISABWRK → EMPSTAT → CLASSWKR and INCTOT; assortative mating on education (a shared
  household term).

Left out: everything IPUMS has beyond the released attribute list (weights, PERNUM, detailed
codes). Orphans and nulls: none (every person's household exists; no attribute is nullable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = [
    "schema", "generate", "ORPHANS", "INFO", "MAX_HOUSEHOLD_SIZE", "DEFAULT_HOUSEHOLDS",
    "PAPER_HOUSEHOLDS", "HOUSEHOLD_TYPES", "FK", "CATEGORIES",
]

#: Public maximum household size of the generator (the FK cap τ; see the module docstring).
MAX_HOUSEHOLD_SIZE = 10
#: Default number of households (a test-sized database).
DEFAULT_HOUSEHOLDS = 5_000
#: The papers' California scale (PrivLava Table 7).
PAPER_HOUSEHOLDS = 616_115
#: Name of the only FK.
FK = "persons.household_id->households"
#: Latent household types (not part of the released tables).
HOUSEHOLD_TYPES = ("single", "couple", "couple_children", "single_parent", "extended", "roommates")

N_PUMA = 233
_WORLD_SEED = 20230618  # the fixed population (PUMA profiles); the user's seed draws the sample

#: Category lists of the categorical attributes, in code order.
CATEGORIES: dict[str, tuple] = {
    # households
    "FARM": ("non-farm", "farm"),
    "OWNERSHP": ("N/A", "owned", "rented"),
    "ACREHOUS": ("N/A", "house on less than 1 acre", "house on 1 acre or more"),
    "TAXINCL": ("N/A", "no", "yes"),
    "ROOMS": tuple(range(1, 11)),
    "PLUMBING": ("N/A", "lacking complete plumbing", "complete plumbing"),
    "PUMA": tuple(range(1, N_PUMA + 1)),
    # persons
    "RELATE": ("head", "spouse", "child", "parent", "sibling", "grandchild", "other relative",
               "non-relative"),
    "SEX": ("male", "female"),
    "MARST": ("married, spouse present", "married, spouse absent", "separated", "divorced",
              "widowed", "never married"),
    "RACE": ("White", "Black", "American Indian or Alaska Native", "Chinese", "Japanese",
             "Other Asian or Pacific Islander", "Other race", "Two major races",
             "Three or more major races"),
    "CITIZEN": ("N/A", "born abroad of American parents", "naturalized citizen", "not a citizen"),
    "SPEAKENG": ("N/A", "speaks only English", "very well", "well", "not well", "not at all"),
    "SCHOOL": ("N/A", "no", "yes"),
    "EDUC": ("N/A or no schooling", "nursery to grade 4", "grade 5 to 8", "grade 9", "grade 10",
             "grade 11", "grade 12", "1 year of college", "2 to 3 years of college",
             "4 years of college", "5+ years of college"),
    "GRADEATT": ("N/A", "nursery/preschool", "kindergarten", "grade 1 to 4", "grade 5 to 8",
                 "grade 9 to 12", "college undergraduate", "graduate or professional school"),
    "SCHLTYPE": ("N/A", "not enrolled", "public school", "private school"),
    "EMPSTAT": ("N/A", "employed", "unemployed", "not in labor force"),
    "CLASSWKR": ("N/A", "self-employed", "works for wages"),
    "DISABWRK": ("N/A", "no", "yes"),
}

# role codes (RELATE positions)
HEAD, SPOUSE, CHILD, PARENT, SIBLING, GRANDCHILD, OTHER_REL, NONREL = range(8)
# California-like race mix (IPUMS general RACE order)
_RACE_MIX = np.array([0.595, 0.067, 0.010, 0.030, 0.008, 0.075, 0.170, 0.043, 0.002])
# per race: probability that a household head is foreign-born / that a US-born household
# speaks another language at home
_RACE_FOREIGN = np.array([0.12, 0.07, 0.05, 0.65, 0.30, 0.68, 0.55, 0.18, 0.15])
_RACE_LANG = np.array([0.08, 0.03, 0.15, 0.45, 0.15, 0.40, 0.70, 0.20, 0.15])


# -- helpers ----------------------------------------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _pick(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` ``(n, k)`` (rows need not be normalised)."""
    c = np.cumsum(probs, axis=1)
    u = rng.random(len(probs)) * c[:, -1]
    return np.minimum((c < u[:, None]).sum(axis=1), probs.shape[1] - 1)


def _world() -> dict[str, np.ndarray]:
    """The fixed PUMA profiles (the population), independent of the sampling seed."""
    rng = np.random.default_rng(_WORLD_SEED)
    urban = rng.beta(2.5, 1.0, N_PUMA)                       # most PUMAs urban
    affluence = rng.normal(0.0, 0.30, N_PUMA)                # log-income shift
    price = 0.9 * affluence + 0.7 * (urban - 0.7) + rng.normal(0, 0.15, N_PUMA)
    race = rng.gamma(_RACE_MIX * 6.0 + 0.02, size=(N_PUMA, len(_RACE_MIX)))
    race /= race.sum(axis=1, keepdims=True)                  # segregated race mixes
    immigrant = rng.normal(0.0, 0.5, N_PUMA) + 0.6 * (urban - 0.7)
    weight = rng.gamma(8.0, size=N_PUMA)                     # PUMA populations, roughly equal
    return dict(urban=urban, affluence=affluence, price=price, race=race, immigrant=immigrant,
                weight=weight / weight.sum())


def _within_group_cumsum(values: np.ndarray, group_start: np.ndarray, row_group: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``values`` within contiguous groups (rows of a group are consecutive)."""
    cs = np.cumsum(values)
    before = cs[group_start] - values[group_start]
    return cs - before[row_group]


# -- generation -------------------------------------------------------------------------------------

def generate(n_households: int = DEFAULT_HOUSEHOLDS, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The two tables of the stand-in (vectorised; deterministic per ``seed``).

    Returns:
        ``{"households": …, "persons": …}``; persons sorted by household, the head first.
    """
    n = int(n_households)
    if n < 1:
        raise ValueError("n_households must be ≥ 1")
    world = _world()
    rng = np.random.default_rng(seed)

    # ---- household level: PUMA, race, nativity of the head, type, size --------------------------
    puma = rng.choice(N_PUMA, n, p=world["weight"])
    urban = world["urban"][puma]
    hh_race = _pick(rng, world["race"][puma])
    head_fb = rng.random(n) < _sigmoid(np.log(_RACE_FOREIGN[hh_race] / (1 - _RACE_FOREIGN[hh_race]))
                                       + world["immigrant"][puma])
    farm = rng.random(n) < 0.10 * (1.0 - urban) ** 2
    ses = world["affluence"][puma] + rng.normal(0, 0.55, n) - 0.25 * head_fb  # latent SES

    base = np.array([0.25, 0.21, 0.27, 0.08, 0.09, 0.075])
    tw = np.tile(base, (n, 1))
    tw[:, 0] *= 0.6 + 0.8 * urban
    tw[:, 5] *= 0.4 + 1.2 * urban
    tw[:, 4] *= np.where(head_fb, 2.5, 1.0)
    tw[:, 0] *= np.where(head_fb, 0.6, 1.0)
    htype = _pick(rng, tw)

    size = np.ones(n, dtype=np.int64)
    kids_mean = 1.1 + 0.7 * head_fb
    size = np.where(htype == 1, 2, size)
    size = np.where(htype == 2, 3 + rng.poisson(kids_mean), size)
    size = np.where(htype == 3, 2 + rng.poisson(0.6 + 0.3 * head_fb), size)
    size = np.where(htype == 4, 3 + rng.poisson(2.0 + 1.2 * head_fb), size)
    size = np.where(htype == 5, 2 + rng.poisson(0.45, n), size)
    size = np.minimum(size, MAX_HOUSEHOLD_SIZE)

    # composition: spouse (or partner), children, extra members
    has_sp = (htype == 1) | (htype == 2) | ((htype == 4) & (rng.random(n) < 0.7))
    rest = size - 1 - has_sp
    n_child = np.where((htype == 2) | (htype == 3), rest, 0)
    n_child = np.where(htype == 4, np.floor(rng.random(n) * (rest + 1)).astype(np.int64), n_child)
    partner = has_sp & (rng.random(n) < 0.09)  # unmarried partner (RELATE non-relative)

    # ---- person rows ----------------------------------------------------------------------------
    hh = np.repeat(np.arange(n), size)
    m = len(hh)
    start = np.cumsum(size) - size
    pos = np.arange(m) - start[hh]
    sp_h = has_sp[hh]
    first_child = 1 + sp_h
    is_child = (pos >= first_child) & (pos < first_child + n_child[hh])
    extra = pos >= first_child + n_child[hh]
    role = np.full(m, HEAD, dtype=np.int64)
    role[sp_h & (pos == 1)] = SPOUSE
    role[is_child] = CHILD
    ht = htype[hh]
    ex_role = np.array([PARENT, SIBLING, GRANDCHILD, OTHER_REL, NONREL])[
        _pick(rng, np.tile([0.33, 0.15, 0.30, 0.16, 0.06], (m, 1)))]
    role = np.where(extra & (pos > 0), np.where(ht == 5, NONREL, ex_role), role)
    relate = np.where((role == SPOUSE) & partner[hh], NONREL, role)
    is_head, is_spouse = role == HEAD, role == SPOUSE

    # ---- ages -------------------------------------------------------------------------------------
    old = rng.random(n) < 0.5
    mu = np.select([htype == 0, htype == 1, htype == 2, htype == 3, htype == 4],
                   [np.where(old, 68, 33), np.where(old, 63, 31), 40, 37, 47], 28)
    sd = np.select([htype == 0, htype == 1, htype == 4], [10, 8, 11], 6)
    head_age = np.clip(np.rint(rng.normal(mu, sd)), 18, 85).astype(np.int64)
    # sex of the head; the spouse is mostly of the opposite sex
    p_male = np.select([htype == 0, htype == 3, htype == 5], [0.45, 0.18, 0.55], 0.62)
    head_male = rng.random(n) < p_male
    sp_age = np.clip(head_age + np.rint(rng.normal(np.where(head_male, -2.0, 2.0), 3.5)), 18, 85)
    parent_age = np.where(has_sp, np.minimum(head_age, sp_age), head_age)  # youngest parent
    gap = 20.0 + rng.gamma(2.0, 3.0, n)                                    # age at first child
    spacing = np.where(is_child & (pos > first_child), 1 + np.minimum(rng.poisson(1.5, m), 5), 0)
    child_age = parent_age[hh] - np.floor(gap[hh]) - _within_group_cumsum(spacing, start, hh)

    age = np.zeros(m)
    age[is_head] = head_age
    age[is_spouse] = sp_age[hh[is_spouse]]
    age = np.where(is_child, child_age, age)
    h_age = head_age[hh].astype(float)
    age = np.where(role == PARENT, np.minimum(h_age + 20 + rng.gamma(2.0, 4.0, m), 85), age)
    age = np.where(role == GRANDCHILD, h_age - 38 - rng.gamma(2.0, 4.0, m), age)
    age = np.where(role == SIBLING, h_age + rng.normal(0, 6, m), age)
    age = np.where(role == OTHER_REL, rng.uniform(0, 85, m), age)
    age = np.where(role == NONREL, np.maximum(h_age + rng.normal(0, 5, m), 18), age)
    age = np.where(is_spouse, sp_age[hh], age)  # partners keep the spouse age
    age = np.clip(np.rint(age), 0, 85).astype(np.int64)

    male = rng.random(m) < 0.51
    male = np.where(role == PARENT, rng.random(m) < 0.35, male)
    male = np.where(is_head, head_male[hh], male)
    male = np.where(is_spouse, ~head_male[hh] ^ (rng.random(m) < 0.02), male)
    sex = np.where(male, 0, 1)

    # ---- marital status ---------------------------------------------------------------------------
    a = age.astype(float)
    w = np.stack([np.zeros(m),                                  # married, spouse present
                  0.04 * _sigmoid((a - 25) / 5),                # married, spouse absent
                  0.05 * _sigmoid((a - 28) / 5),                # separated
                  0.25 * _sigmoid((a - 35) / 6),                # divorced
                  0.60 * _sigmoid((a - 72) / 6),                # widowed
                  1.2 * _sigmoid((32 - a) / 5) + 0.05], axis=1)  # never married
    w[role == PARENT, 4] *= 3.0                                 # the head's widowed parents
    w[role == CHILD, 5] += 1.0
    w[(role == HEAD) & (ht == 3), 2:4] *= 2.5                    # single parents
    marst = _pick(rng, w)
    married = (is_head & has_sp[hh] & ~partner[hh]) | (is_spouse & ~partner[hh])
    marst = np.where(married, 0, marst)
    marst = np.where(age < 15, 5, marst)

    # ---- race -------------------------------------------------------------------------------------
    own = hh_race[hh]
    other = _pick(rng, world["race"][puma[hh]])
    u = rng.random(m)
    race = np.where(u < 0.92, own, other)
    race = np.where(is_spouse, np.where(u < 0.85, own, other), race)
    race = np.where(role == NONREL, other, race)
    sp_race = np.full(n, -1)
    sp_rows = np.flatnonzero(is_spouse)
    sp_race[hh[sp_rows]] = race[sp_rows]
    mixed = has_sp & (sp_race != hh_race)
    race = np.where(is_child, np.where(mixed[hh] & (u < 0.5), 7, np.where(u < 0.95, own, other)), race)
    race = np.where(is_head, own, race)

    # ---- nativity, citizenship, language ----------------------------------------------------------
    fb_h = head_fb[hh]
    p_fb = np.select(
        [is_head, is_spouse, role == CHILD, role == PARENT],
        [fb_h.astype(float),
         np.where(fb_h, 0.85, 0.6 * _RACE_FOREIGN[race]),
         np.where(fb_h, np.where(age > 10, 0.40, 0.12), 0.01),
         np.where(fb_h, 0.95, _RACE_FOREIGN[race])],
        np.where(fb_h, 0.65, 0.5 * _RACE_FOREIGN[race]))
    fb = np.where(is_head, fb_h, rng.random(m) < p_fb)
    p_nat = _sigmoid((a - 40) / 10)
    citizen = np.where(rng.random(m) < p_nat, 2, 3)
    citizen = np.where(rng.random(m) < 0.05, 1, citizen)
    citizen = np.where(fb, citizen, 0)
    lang_p = np.where(head_fb, 0.88, np.clip(_RACE_LANG[hh_race] * (1 + 0.5 * world["immigrant"][puma]), 0, 1))
    lang_h = rng.random(n) < lang_p
    lang = lang_h[hh]
    w_fb = np.array([0, 0, 0.30, 0.25, 0.25, 0.20])
    w_us = np.array([0, 0, 0.85, 0.12, 0.03, 0.0])
    sw = np.where(fb[:, None], w_fb, w_us) + np.where(fb[:, None] & (age[:, None] < 18),
                                                       np.array([0, 0, 0.5, 0.2, 0, -0.1]), 0)
    speak = np.where(lang, _pick(rng, np.clip(sw, 0, None)), np.where(rng.random(m) < 0.97, 1, 2))
    speak = np.where(age < 5, 0, speak)

    # ---- schooling ----------------------------------------------------------------------------------
    ses_p = ses[hh]
    p_enr = np.select([age < 3, age < 5, age < 6, age < 17, age < 18, age < 25, age < 35, age < 65],
                      [0.0, 0.5, 0.95, 0.98, 0.92, _sigmoid(-0.2 + 1.5 * ses_p), 0.10, 0.04], 0.01)
    enrolled = rng.random(m) < p_enr
    school = np.where(age < 3, 0, np.where(enrolled, 2, 1))
    grade = np.select([age < 5, age < 6, age < 10, age < 14, age < 18, age < 19], [1, 2, 3, 4, 5, 5], 6)
    grad = (age >= 22) & (rng.random(m) < np.where(age < 25, 0.15, 0.5))
    grade = np.where((age >= 19) & grad, 7, grade)
    gradeatt = np.where(enrolled, grade, 0)
    private = rng.random(m) < np.where(grade >= 6, 0.25, 0.08 + 0.12 * _sigmoid(2 * ses_p))
    schltype = np.where(age < 3, 0, np.where(enrolled, np.where(private, 3, 2), 1))
    # education attained: children by age, adults from a latent score (assortative mating)
    hh_edu = rng.normal(0, 1, n)
    e = 0.8 * ses_p + 0.5 * hh_edu[hh] + 0.75 * rng.normal(0, 1, m) - 0.3 * fb - 0.01 * (a - 45)
    cuts = np.array([-2.2, -1.9, -1.7, -1.5, -0.55, -0.25, 0.3, 0.95])   # grade 5-8 … 5+ years
    educ_adult = 2 + np.searchsorted(cuts, e)
    cap = np.select([age < 19, age < 20, age < 22, age < 23], [6, 7, 8, 9], 10)
    educ_child = np.select([age < 3, age < 10, age < 15, age == 15, age == 16, age == 17],
                           [0, 1, 2, 3, 4, 5], 6)
    educ = np.where(age < 18, educ_child, np.minimum(educ_adult, cap))
    educ = np.where((age >= 3) & (age < 5) & ~enrolled, 0, educ)

    # ---- work, disability, income -------------------------------------------------------------------
    adult = age >= 16
    disab = adult & (rng.random(m) < _sigmoid(-4.2 + 0.05 * (a - 16) - 0.3 * e))
    kids_in_hh = np.bincount(hh, weights=(age < 6), minlength=n)[hh] > 0
    lf = _sigmoid(1.6 + 0.45 * e - 0.7 * (~male & kids_in_hh) - 3.0 * (age >= 65)
                  - 1.8 * ((age < 22) & enrolled) - 2.5 * disab - 0.8 * (a < 18))
    in_lf = adult & (rng.random(m) < lf)
    employed = in_lf & (rng.random(m) < _sigmoid(2.6 + 0.4 * e))
    empstat = np.where(~adult, 0, np.where(employed, 1, np.where(in_lf, 2, 3)))
    self_emp = employed & (rng.random(m) < 0.09 + 0.45 * farm[hh] + 0.03 * (age > 50))
    classwkr = np.where(employed, np.where(self_emp, 1, 2), 0)
    disabwrk = np.where(adult, np.where(disab, 2, 1), 0)
    exp_ = np.clip(a - 18, 0, None)
    log_earn = (9.9 + 0.30 * e + 0.045 * exp_ - 0.0008 * exp_ ** 2 + 0.25 * ses_p - 0.18 * ~male
                + rng.normal(0, 0.55, m) - 0.6 * (a < 20))
    log_other = np.where(age >= 65, 9.6 + 0.3 * e, 7.8) + rng.normal(0, 0.9, m)
    income = np.where(employed, np.exp(log_earn),
                      np.where(in_lf, np.exp(8.3 + rng.normal(0, 0.9, m)),
                               np.where((age >= 65) | (rng.random(m) < 0.5), np.exp(log_other), 0)))
    income = np.where(age < 15, 0, income)
    inctot = np.clip(np.rint(income), 0, 250_000).astype(np.int64)

    # ---- household attributes from the derived household income ---------------------------------
    hh_inc = np.bincount(hh, weights=inctot, minlength=n)
    li = np.log(hh_inc + 5_000.0) - 11.0
    couple = (htype == 1) | (htype == 2)
    own_p = _sigmoid(0.6 + 1.6 * li + 0.035 * (head_age - 45) + 0.6 * couple - 0.9 * (htype == 5)
                     + 1.5 * farm - 0.8 * (urban - 0.7))
    owned = rng.random(n) < own_p
    gq = rng.random(n) < 0.004
    ownershp = np.where(gq, 0, np.where(owned, 1, 2))
    owned = ownershp == 1
    rooms = np.clip(np.rint(2.2 + 0.7 * size + 1.2 * owned + 0.9 * li + 0.6 * farm
                            + rng.normal(0, 0.8, n)), 1, 10).astype(np.int64)
    valueh = np.exp(12.7 + world["price"][puma] + 0.45 * li + 0.07 * (rooms - 5)
                    + rng.normal(0, 0.3, n))
    valueh = np.where(owned, np.clip(np.rint(valueh), 0, 2_000_000), 0).astype(np.int64)
    propinsr = np.where(owned, np.clip(np.rint(valueh * 0.0022 * np.exp(rng.normal(0, 0.25, n))), 0, 6000), 0)
    costelec = np.clip(np.rint((350 + 160 * size + 70 * rooms + 400 * (1 - urban) + 500 * farm)
                               * np.exp(rng.normal(0, 0.25, n))), 0, 6000).astype(np.int64)
    multi = rng.random(n) < np.where(owned, 0.12 * urban, 0.25 + 0.55 * urban) * ~farm
    acre_big = rng.random(n) < 0.02 + 0.6 * farm + 0.15 * (1 - urban)
    acrehous = np.where(multi | gq, 0, np.where(acre_big, 2, 1))
    mortgage = owned & (rng.random(n) < _sigmoid(2.2 - 0.07 * (head_age - 45)))
    taxincl = np.where(mortgage, np.where(rng.random(n) < 0.85, 2, 1), 0)
    lacking = rng.random(n) < 0.004 + 0.03 * (1 - urban) * (li < -0.7)
    plumbing = np.where(gq & (rng.random(n) < 0.5), 0, np.where(lacking, 1, 2))

    def cat(name: str, codes: np.ndarray) -> np.ndarray:
        cats = CATEGORIES[name]
        arr = np.asarray(cats, dtype=object if isinstance(cats[0], str) else np.int64)
        return arr[codes]

    households = pd.DataFrame({
        "household_id": np.arange(1, n + 1, dtype=np.int64),
        "FARM": cat("FARM", farm.astype(np.int64)),
        "OWNERSHP": cat("OWNERSHP", ownershp),
        "ACREHOUS": cat("ACREHOUS", acrehous),
        "TAXINCL": cat("TAXINCL", taxincl),
        "PROPINSR": propinsr.astype(np.int64),
        "COSTELEC": costelec,
        "VALUEH": valueh,
        "ROOMS": cat("ROOMS", rooms - 1),
        "PLUMBING": cat("PLUMBING", plumbing),
        "PUMA": cat("PUMA", puma),
    })
    persons = pd.DataFrame({
        "person_id": np.arange(1, m + 1, dtype=np.int64),
        "household_id": hh.astype(np.int64) + 1,
        "RELATE": cat("RELATE", relate),
        "SEX": cat("SEX", sex),
        "AGE": age,
        "MARST": cat("MARST", marst),
        "RACE": cat("RACE", race),
        "CITIZEN": cat("CITIZEN", citizen),
        "SPEAKENG": cat("SPEAKENG", speak),
        "SCHOOL": cat("SCHOOL", school),
        "EDUC": cat("EDUC", educ),
        "GRADEATT": cat("GRADEATT", gradeatt),
        "SCHLTYPE": cat("SCHLTYPE", schltype),
        "EMPSTAT": cat("EMPSTAT", empstat),
        "CLASSWKR": cat("CLASSWKR", classwkr),
        "INCTOT": inctot,
        "DISABWRK": cat("DISABWRK", disabwrk),
    })
    return {"households": households, "persons": persons}


def _frames(n_households: int = DEFAULT_HOUSEHOLDS, seed: int = 0) -> dict[str, pd.DataFrame]:
    return generate(n_households, seed)


def schema(frames: dict[str, pd.DataFrame] | None = None) -> Schema:
    """The written schema (nothing in it is read from the data; the same for every size and seed).

    Args:
        frames: Ignored (accepted for symmetry with the other dataset modules).
    """
    del frames

    def c(name: str, description: str) -> Attribute:
        return Attribute.categorical(name, CATEGORIES[name], description=description)

    households = Table("households", ("household_id",), (
        c("FARM", "farm status"),
        c("OWNERSHP", "ownership of dwelling"),
        c("ACREHOUS", "house acreage (N/A: multi-unit building)"),
        c("TAXINCL", "mortgage payment includes property taxes (N/A: no mortgage)"),
        Attribute.numeric("PROPINSR", 0, 6_000, bins=60, integer=True,
                          description="annual property insurance cost ($100 bins; 0 for non-owners)"),
        Attribute.numeric("COSTELEC", 0, 6_000, bins=100, integer=True,
                          description="annual electricity cost ($60 bins)"),
        Attribute.numeric("VALUEH", 0, 2_000_000, bins=100, integer=True,
                          description="house value ($20,000 bins; 0 for non-owners; top-coded)"),
        c("ROOMS", "number of rooms (10 = 10 or more)"),
        c("PLUMBING", "plumbing facilities"),
        c("PUMA", "public use microdata area (1…233)"),
    ), description="households (private; the protected entity)")
    persons = Table("persons", ("person_id",), (
        c("RELATE", "relationship to the household head"),
        c("SEX", "sex"),
        Attribute.numeric("AGE", 0, 85, bins=86, integer=True, description="age (85 = 85+)"),
        c("MARST", "marital status"),
        c("RACE", "race (IPUMS general codes)"),
        c("CITIZEN", "citizenship status (N/A: born in the US)"),
        c("SPEAKENG", "speaks English (N/A: under 5)"),
        c("SCHOOL", "school attendance"),
        c("EDUC", "educational attainment"),
        c("GRADEATT", "grade level attending"),
        c("SCHLTYPE", "public or private school"),
        c("EMPSTAT", "employment status (N/A: under 16)"),
        c("CLASSWKR", "class of worker (N/A: not employed)"),
        Attribute.numeric("INCTOT", 0, 250_000, bins=100, integer=True,
                          description="total personal income ($2,500 bins; top-coded)"),
        c("DISABWRK", "work disability (N/A: under 16)"),
    ), description="persons (private; each belongs to one household)")
    fk = ForeignKey("persons", ("household_id",), "households", ("household_id",))
    unit = PrivacyUnit(
        entity="households", caps={fk.name: MAX_HOUSEHOLD_SIZE},
        rationale=(f"a household and all its members are protected (PrivLava, PrivPetal); "
                   f"τ = {MAX_HOUSEHOLD_SIZE} persons per household is the generator's public maximum "
                   "household size (a schema constraint), so the cap drops nothing. The papers take τ "
                   "from the data (the 99% quantile of the household sizes), an unnoised statistic of "
                   "the private data that the budget does not pay for; relviz does not."))
    return Schema((households, persons), (fk,), unit, name="census",
                  description="census-style households and persons (generated stand-in for the "
                              "IPUMS California extract of PrivLava / PrivPetal)")


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (none are generated)."""

INFO = dict(
    title="Census stand-in (generated): households 1:N persons",
    source="generated by relviz (relviz/datasets/census.py) with the attribute list of the IPUMS "
           "California sample published with the PrivLava reference implementation (Cai, Xiao, "
           "Cormode, SIGMOD 2023); not IPUMS data",
    licence="generated data (same licence as relviz)",
    repairs=("no orphans: nothing repaired",),
)
