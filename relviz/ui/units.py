"""The three privacy units side by side, in plain words, with the σ each buys (no widget imports).

relviz protects one of three units (:class:`~relviz.schema.PrivacyUnit`, derivations in
``relviz/privacy/sensitivity.py`` and ``docs/privacy.md``):

* **entity unit** — one row of the protected table and everything that depends on it;
* **row unit** (``neighbour="row"``) — one row of any private table with every relationship
  attached to it;
* **tuple unit** (``neighbour="tuple"``) — one row of any private table with its own values and
  its own foreign keys.

:func:`unit_options` says, for a given schema, what each unit protects *on that schema* (naming its
tables), whether it is usable (and if not, why, in a sentence), and the noise standard deviation σ
of every release of the default plan (:meth:`relviz.plan.Plan.default`) under that unit, read from
:meth:`relviz.plan.Plan.noise_preview` (no sensitivity is computed here). σ itself reads no data;
the sizes it is compared with are read from the data when a database is given, and are then
labelled :data:`~relviz.privacy.measure.CURATOR_VIEW`.

Nothing here raises on a schema an editor may still be fixing: a missing cap, a cycle or a public
entity become readable reasons.

>>> from relviz import Schema, Table, Attribute, PrivacyUnit
>>> s = Schema((Table("people", ("id",), (Attribute.categorical("x", [0, 1]),)),), (),
...            PrivacyUnit(entity="people"))
>>> [(o.kind, o.selected, o.valid) for o in unit_options(s, 1.0, 1e-6)]
[('entity', True, True), ('row', False, True), ('tuple', False, True)]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from relviz.database import Database
from relviz.errors import error_reason
from relviz.privacy.measure import CURATOR_VIEW
from relviz.schema import PrivacyUnit, Schema

__all__ = ["UNIT_KINDS", "UnitOption", "UnitRelease", "entity_candidates", "unit_options",
           "unit_table", "with_unit"]

UNIT_KINDS = ("entity", "row", "tuple")

_TITLES = {"entity": "Entity unit", "row": "Row unit", "tuple": "Tuple unit"}


@dataclass(frozen=True)
class UnitRelease:
    """The main release of one plan component under one unit.

    Attributes:
        name: Table, FK or relation name.
        kind: ``"table"``, ``"edge"`` or ``"relation"``.
        method: Mechanism or relational method of the default plan.
        release: What the σ is for (the method's first release label), or ``""``.
        sigma: Noise standard deviation of that release, or ``None`` (``note`` says why).
        n: Size a typical cell is compared with, or ``None``.
        n_label: What ``n`` is and where it comes from (``CURATOR_VIEW`` when read from the data).
        note: Why σ is unavailable (empty otherwise).
    """

    name: str
    kind: str
    method: str
    release: str
    sigma: float | None
    n: float | None = None
    n_label: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "method": self.method,
                "release": self.release, "sigma": self.sigma, "n": self.n,
                "n_label": self.n_label, "note": self.note}


@dataclass(frozen=True)
class UnitOption:
    """One privacy unit, as it would apply to the schema at hand.

    Attributes:
        kind: ``"entity"``, ``"row"`` or ``"tuple"``.
        title: Short name, e.g. ``"Entity unit (planes)"``.
        entity: The protected table (entity unit only), else ``None``.
        selected: Whether this is the schema's current unit.
        valid: Whether the unit can be used on this schema as it stands.
        reasons: Why not (plain sentences; empty when valid).
        description: What it protects on this schema, in plain words (names the tables).
        releases: σ of each release of the default plan under this unit (empty when no plan could
            be made; ``reasons`` says why).
        unit: The candidate :class:`~relviz.schema.PrivacyUnit` (``None`` when there is none).
    """

    kind: str
    title: str
    entity: str | None
    selected: bool
    valid: bool
    reasons: tuple[str, ...]
    description: str
    releases: tuple[UnitRelease, ...] = ()
    unit: PrivacyUnit | None = field(default=None, compare=False)

    def sigma(self, name: str) -> float | None:
        """σ of the release of component ``name`` (``None`` when unavailable or unknown)."""
        return next((r.sigma for r in self.releases if r.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "entity": self.entity,
                "selected": self.selected, "valid": self.valid, "reasons": list(self.reasons),
                "description": self.description,
                "releases": [r.to_dict() for r in self.releases]}


# -- plain words -----------------------------------------------------------------------------------
def _one(table: str) -> str:
    """``"one plane"`` for ``planes``; ``"one row of T"`` when the name is not a plain plural."""
    low = table.lower()
    if low.endswith("ies") and len(low) > 4:
        return f"one {table[:-3]}y"
    if low.endswith("s") and not low.endswith("ss") and len(low) > 2 and table.isidentifier():
        return f"one {table[:-1].replace('_', ' ')}"
    return f"one row of {table}"


def _noun(table: str) -> str:
    return _one(table)[len("one "):]


def _poss(table: str) -> str:
    """``"plane's"`` for ``planes``, ``"census row's"`` otherwise."""
    one = _one(table)
    return f"{table} row's" if one.startswith("one row of ") else f"{one[len('one '):]}'s"


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _cap_text(unit: PrivacyUnit, fk_name: str) -> str:
    cap = unit.caps.get(fk_name)
    return f"τ = {int(cap):,}" if cap is not None else "τ (not set yet)"


def _public_sentence(schema: Schema) -> str:
    public = [t.name for t in schema.tables if t.public]
    if not public:
        return ""
    verb = "is" if len(public) == 1 else "are"
    return f" {_and(public)} {verb} public: released as they are, not protected."


def _entity_text(schema: Schema, unit: PrivacyUnit, entity: str) -> str:
    private = set(schema.private_tables)
    parts: list[str] = []
    seen = {entity}
    level = [entity]
    first = True
    while level:
        nxt: list[str] = []
        for parent in level:
            for fk in schema.fks_into(parent):
                if fk.child in private and fk.child not in seen and not fk.self_referential:
                    who = "its" if first else "their"
                    parts.append(f"all of {who} {fk.child} (up to {_cap_text(unit, fk.name)} per "
                                 f"{_noun(parent)}, through {fk.child}.{'+'.join(fk.columns)})")
                    seen.add(fk.child)
                    nxt.append(fk.child)
        level, first = nxt, False
    whole = _one(entity) + (" and " + ", and ".join(parts) if parts else "")
    tail = ("" if parts else " Nothing else depends on it, so this hides just that row.")
    return (f"Hides {whole}: whether that {_noun(entity)} is in the data at all, with all of its "
            f"values and every row that depends on it.{tail} Table sizes are not public under "
            f"this unit (they change with the {_noun(entity)})." + _public_sentence(schema))


def _row_level_parts(schema: Schema) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
    """(private tables, "a flight's carrier, tailnum" phrases, (parent, child, cap) links)."""
    private = list(schema.private_tables)
    own = []
    for t in private:
        cols = [", ".join(fk.columns) for fk in schema.fks_from(t)]
        if cols:
            own.append(f"{_poss(t)} {_and(cols)}")
    links = [(fk.parent, fk.child, fk.name) for fk in schema.foreign_keys
             if fk.child in private and fk.parent in private]
    return private, own, links


def _row_text(schema: Schema, unit: PrivacyUnit) -> str:
    private, own, links = _row_level_parts(schema)
    rows = _or([_one(t) for t in private])
    s = f"Hides {rows}, with every relationship attached to it: its values"
    if own:
        s += f", the rows it points to (a {_and(own)})"
    if links:
        s += ", and which rows point to it (" + "; ".join(
            f"all of a {_poss(p)} {c} may be re-pointed, up to {_cap_text(unit, name)}"
            for p, c, name in links) + ")"
        s += "."
    else:
        s += ". No private table is referenced by another private table, so here it buys the " \
             "same σ as the tuple unit."
    s += f" The number of rows of {_and(private)} is public."
    return s + _public_sentence(schema)


def _tuple_text(schema: Schema, unit: PrivacyUnit) -> str:
    private, own, links = _row_level_parts(schema)
    rows = _or([_one(t) for t in private])
    s = f"Hides {rows}, with its own values"
    s += f" and its own foreign keys (a {_and(own)})." if own else "."
    if links:
        s += " " + " ".join(
            f"A {_poss(p)} set of {c} is not hidden as a whole: it changes one {_noun(c)} at a "
            f"time (at most {_cap_text(unit, name)} of them)." for p, c, name in links)
    s += f" The number of rows of {_and(private)} is public."
    return s + _public_sentence(schema)


# -- units -----------------------------------------------------------------------------------------
def entity_candidates(schema: Schema) -> list[str]:
    """Private tables on which every other private table depends (each could be the entity)."""
    private = set(schema.private_tables)
    out = []
    for t in schema.private_tables:
        try:
            covered = schema.dependants(t) | {t}
        except Exception:  # noqa: BLE001 - an unusable graph: no candidate
            continue
        if private <= covered:
            out.append(t)
    return out


def with_unit(schema: Schema, kind: str, entity: str | None = None) -> Schema:
    """``schema`` under another unit, keeping its caps and settings (``entity`` for the entity
    unit: default, the current entity or the first of :func:`entity_candidates`).

    Raises:
        ValueError: an unknown ``kind``, or no entity table to protect.
    """
    if kind not in UNIT_KINDS:
        raise ValueError(f"unknown privacy unit {kind!r}: one of {', '.join(UNIT_KINDS)}")
    base = schema.privacy_unit or PrivacyUnit()
    if kind == "entity":
        entity = entity or base.entity or next(iter(entity_candidates(schema)), None)
        if entity is None:
            raise ValueError("no private table has every other private table depending on it")
        return schema.with_privacy_unit(replace(base, entity=entity))
    return schema.with_privacy_unit(replace(base, entity=None, neighbour=kind))


_reason_text = error_reason


def _unit_reasons(schema: Schema) -> list[str]:
    """Readable reasons the schema's unit cannot be used as it stands (empty: it can)."""
    probs = schema.problems()
    out: list[str] = []
    caps = [p for p in probs if p.kind == "missing_cap"]
    if caps:
        names = []
        for p in caps:
            fk = next((f for f in schema.foreign_keys if f"'{f.name}'" in p.message), None)
            names.append(f"{fk.name} (its parent {fk.parent} is private)" if fk else p.message)
        out.append("needs a public degree cap τ on " + "; ".join(names)
                   + ": select the arrow and set τ")
    out += [p.message + (f" ({p.table})" if p.table else "")
            for p in probs if p.kind in ("bad_unit", "cycle", "no_privacy_unit")]
    return out


def _releases(schema: Schema, epsilon: float, delta: float, db: Database | None,
              row_counts: dict[str, int] | None) -> tuple[tuple[UnitRelease, ...], list[str]]:
    from relviz.plan import Plan

    try:
        plan = Plan.default(schema, epsilon, delta)
        previews = plan.noise_preview(schema, db, row_counts=row_counts)
    except Exception as e:  # noqa: BLE001 - shown as a reason, never raised into the editor
        return (), [f"no σ: the default plan cannot be made ({_reason_text(e)})"]
    out = tuple(UnitRelease(p.name, p.kind, p.method, next(iter(p.sigmas), ""), p.sigma, p.n,
                            p.n_label, p.note) for p in previews)
    return out, []


def unit_options(schema: Schema, epsilon: float = 1.0, delta: float = 1e-6,
                 db: Database | None = None, *, entity: str | None = None,
                 row_counts: dict[str, int] | None = None) -> list[UnitOption]:
    """The entity, row and tuple units on ``schema``: what each protects, whether it is usable,
    and the σ of each release of ``Plan.default(schema under that unit, epsilon, delta)``.

    Args:
        schema: The schema (its own unit is marked ``selected``; its caps are kept for all three).
        epsilon, delta: The plan's total budget.
        db: The data, for the sizes each σ is compared with (read from the private data: the
            releases' ``n_label`` says :data:`~relviz.privacy.measure.CURATOR_VIEW`).
        entity: Table to protect under the entity unit (default: the current entity, else the
            private table every other private table depends on).
        row_counts: Public row counts (override the data's).

    Returns:
        Three :class:`UnitOption` in the order entity, row, tuple. Never raises on a schema that
        is still being edited: what is wrong is in each option's ``reasons``.
    """
    current = schema.privacy_unit
    cur_kind = current.kind if current is not None else None
    out: list[UnitOption] = []
    no_private = not schema.private_tables
    for kind in UNIT_KINDS:
        ent = None
        try:
            cand = with_unit(schema, kind, entity)
            unit = cand.privacy_unit
            ent = unit.entity
        except Exception as e:  # noqa: BLE001 - no entity to protect
            reason = _reason_text(e)
            if kind == "entity" and not no_private:
                reason = (f"{reason} ({_and(list(schema.private_tables))} are unrelated): the entity "
                          "unit protects one table and what depends on it; make the others public "
                          "or use the row or tuple unit")
            out.append(UnitOption(kind, _TITLES[kind], None, cur_kind == kind, False,
                                  (reason,), "The entity unit needs one private table on which "
                                  "every other private table depends." if kind == "entity" else ""))
            continue
        title = _TITLES[kind] + (f" ({ent})" if ent else "")
        if no_private:
            out.append(UnitOption(kind, title, ent, cur_kind == kind, False,
                                  ("every table is public: there is nothing to protect",),
                                  "Every table is public and released as it is.", (), unit))
            continue
        try:
            if kind == "entity":
                text = _entity_text(cand, unit, ent)  # type: ignore[arg-type]
            elif kind == "row":
                text = _row_text(cand, unit)
            else:
                text = _tuple_text(cand, unit)
        except Exception as e:  # noqa: BLE001 - a half-edited schema: say so
            text = f"(cannot describe this schema yet: {_reason_text(e)})"
        reasons = _unit_reasons(cand)
        releases, more = _releases(cand, epsilon, delta, db, row_counts)
        reasons += more
        selected = cur_kind == kind and (kind != "entity" or current.entity == ent)
        out.append(UnitOption(kind, title, ent, selected, not reasons, tuple(reasons), text,
                              releases, unit))
    return out


def unit_table(schema: Schema, epsilon: float = 1.0, delta: float = 1e-6,
               db: Database | None = None, **kwargs: Any) -> dict[str, Any]:
    """:func:`unit_options` as JSON for the schema editor's table (``{"epsilon", "delta",
    "view", "units": [...]}``; ``view`` is ``CURATOR_VIEW`` when sizes were read from ``db``)."""
    opts = unit_options(schema, epsilon, delta, db, **kwargs)
    return {"epsilon": float(epsilon), "delta": float(delta),
            "view": CURATOR_VIEW if db is not None else "",
            "units": [o.to_dict() for o in opts]}
