"""Sensitivities under the privacy unit, each derived from one neighbouring relation per unit.

relviz protects one of three units (:class:`~relviz.schema.PrivacyUnit`); every sensitivity below is
derived from the unit's single definition of a neighbour, and the neighbour tests in
``tests/privacy/test_neighbours.py`` check each derivation on every neighbour of small random
databases. The derivations are written out in ``docs/privacy.md``.

**Entity unit** (Cai, Xiao & Cormode, "PrivLava: synthesizing relational data with foreign keys
under differential privacy", SIGMOD 2023: §2 for the neighbouring relation, §6 Def. 6.3 and
Lemmas 6.4–6.6 for the tuple and group multipliers):
neighbours differ by one tuple of the protected entity table ``R_0`` and every tuple depending on
it. With the public group-size caps ``τ_e``:

* ``r(R)``: tuples of ``R`` removed — ``r(R_0) = 1``, ``r(public) = 0``,
  ``r(R) = Σ_{e = R→X, X private} τ_e · r(X)`` (parents first);
* ``x(e)``: tuples of the child of ``e`` removed although their ``e``-parent survives —
  ``r(R)`` if the parent is public, else ``Σ_{e' ≠ e from R, private target} τ_{e'} r(target)``;
* ``m(R)``: surviving tuples of ``R`` whose columns may change — ``Σ_{e into R} g_mod(e)``
  (children first);
* ``g_rem(e) = r(parent)``; ``g_mod(e) = x(e) + m(child)``.

Sensitivity multipliers ("strict" mode is the default: a modified tuple or group moves mass
from one cell to another, √2 in L2, 2 in L1; "paper" mode drops those factors):

=========================================  =====================  =================
query                                      paper                  strict
=========================================  =====================  =================
histograms of one table (marginals)        ``r + m``              ``r + √2·m``
scores of one table (L1 distances)         ``r + m``              ``r + 2·m``
group-size (degree) histogram of an FK     ``g_rem + g_mod``      ``g_rem + √2·g_mod``
=========================================  =====================  =================

and, relviz's addition, the per-parent child counts of an FK to a *public* parent: removing the
closure removes ``x(e) = r(child)`` child tuples whose parents survive (L2 ``x(e)``: they may all
share one parent), and the links of an FK (bi-adjacency) change by at most ``r + m`` of the child.

**Row unit** (Alimohammadi, Wang, Gulati, Srivastava & Azizan, "Differentially private synthetic
data generation for relational databases", §2.2 after Def. 1): a neighbour changes **one row of one private table: its
attribute values and every relationship attached to it**, i.e. its own FK values (it may move to
another parent, or to null) and the FK values of the rows that reference it (its children may be
re-pointed to other parents, and other rows may be re-pointed to it); both databases satisfy the
caps ``τ_e`` and have the same table sizes (bounded DP). For an FK ``e = C → P``:

* *child moves* ``d_e`` — children of ``e`` whose parent (or null) changes: a row of ``C`` moves
  itself (1); a row of ``P`` sends its ≤ τ children away and takes ≤ τ others (2τ); a row of a
  self-referential ``C = P`` does both (2τ + 1). A public ``P`` never changes: ``d_e = 1``.
* *groups changed* (private ``P``): a row of ``C`` changes its old and new parent's degree (2); a
  row of ``P`` changes itself, ≤ τ receivers and ≤ τ donors (2τ + 1); self-referential: 2τ + 3.
  Each changed group moves one histogram count between two bins (√2 in L2), so the degree
  histogram has L2 sensitivity ``√2·groups`` (triangle inequality over the groups).
* *null count* (nullable FK): a row of ``C`` changes it by 1, a row of ``P`` by ≤ τ (children sent
  to null net of children taken from null), self-referential τ + 1.
* table histograms: one row moves between cells, √2 (scores: 2); per-parent counts to a public
  parent (with the null count): one child moves, √2;
* links of a relation (bi-adjacency): ``d_e`` moves, each √2 in L2 and 2 in L1; a many-to-many
  link table ``L → T1, T2``: a row of ``L`` moves one pair, a row of ``T_i`` 2τ_i pairs, a
  self-relation (``T1 = T2``) 2τ1 + 2τ2.

**Tuple unit** (``PrivacyUnit(entity=None, neighbour="tuple")``): a neighbour changes one row of one
private table, its attribute values and its *own* FK values; a parent's set of children changes
only through its children's rows (bounded, caps hold on both sides). For ``e = C → P``:

* child moves: a row of ``C`` re-points itself (1); a row of ``P`` changes its values, so its ≤ τ
  links change cells (τ); self-referential: τ + 1;
* a degree histogram changes through one child moving between two groups: the two groups move
  one bin each; when the first lands where the second leaves (degrees ``a → a − 1`` and
  ``a − 2 → a − 1``) the change is ``(−1, +2, −1)``, so the L2 sensitivity is √6 (not 2), with
  or without the null count (a move to null changes one group and the null count: √3);
* the null count changes by 1; table histograms √2; per-parent counts √2; a many-to-many link
  table: a row of ``L`` moves one pair, a row of ``T_i`` changes the cells of its τᵢ pairs, a
  self-relation τ₁ + τ₂.

**Truncation.** Caps are enforced before anything is measured (``relviz.privacy.measure``
``enforce_caps``): surplus children beyond ``τ`` are dropped, keeping in each group the τ children
that come first in a keyed hash of their primary key (a rule that depends only on the group's own
rows), or, for an FK whose parent is the entity and ``truncate="parents"``, the parents over the
cap are removed with their dependants. :func:`truncation_stable` says, from the schema alone, for
which FKs this is a *stable* transformation — ``trunc(D − t) = trunc(D) − closure(t)`` — so that
the guarantee holds for the raw database: under the entity unit exactly when no child of the FK can
be removed while its parent survives (``x(e) = 0``); never under the row or tuple unit (a child moving out
of a full group lets a dropped sibling back in). Otherwise the guarantee holds for the truncated
database, and the ledger says so, based on the unit and caps alone (never on whether rows were
actually dropped, which is private).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from relviz.errors import SchemaError
from relviz.schema import ForeignKey, PrivacyUnit, Schema

__all__ = ["Multipliers", "multipliers", "truncation_stable"]


@dataclass(frozen=True)
class Multipliers:
    """Sensitivities of a schema's queries under its privacy unit (see the module docstring).

    Multiply a mechanism's own add/remove-one-row sensitivity by the matching multiplier. Every
    method is public: it reads the schema and the caps, never data.

    Raises (from the row-unit methods):
        SchemaError: an FK with a private parent has no degree cap τ.
    """

    unit: PrivacyUnit
    schema: Schema
    r: dict[str, int]
    m: dict[str, int]
    x: dict[str, int]
    g_rem: dict[str, int]
    g_mod: dict[str, int]

    @property
    def strict(self) -> bool:
        return self.unit.accounting == "strict"

    @property
    def row_unit(self) -> bool:
        """A row-level unit (``"row"`` or ``"tuple"``): table sizes are public."""
        return self.unit.entity is None

    @property
    def tuple_unit(self) -> bool:
        return self.unit.entity is None and self.unit.neighbour == "tuple"

    # -- the row unit's one neighbour: counts derived from "one row and its relationships" -----
    def _tau(self, fk: ForeignKey) -> int:
        """τ of ``fk`` for the row unit (0 for a public parent, whose rows never change)."""
        if self.schema.table(fk.parent).public:
            return 0
        tau = self.unit.caps.get(fk.name)
        if tau is None:
            raise SchemaError(f"FK {fk.name!r} has a private parent and needs a degree cap τ "
                              "for the row-level unit")
        return int(tau)

    def _row_counts(self, fk: ForeignKey) -> tuple[int, int, int]:
        """Row-level units: (links moved, groups changed, null-count change) of ``fk``,
        maximised over the table whose row changes."""
        tau = self._tau(fk)
        if self.tuple_unit:
            return (tau + 1 if fk.self_referential else max(1, tau)), 2, 1
        if fk.self_referential:
            return 2 * tau + 1, 2 * tau + 3, tau + 1
        return max(1, 2 * tau), max(2, 2 * tau + 1), max(1, tau)

    # -- table queries -------------------------------------------------------------------------
    def table_histogram(self, table: str) -> float:
        """L2 multiplier for histogram queries (marginals, totals) on ``table``."""
        if self.row_unit:
            return math.sqrt(2.0)
        r, m = self.r[table], self.m[table]
        return r + (math.sqrt(2.0) if self.strict else 1.0) * m

    def table_score(self, table: str) -> float:
        """Multiplier for score queries (L1 distances between a marginal and a fixed model)."""
        if self.row_unit:
            return 2.0
        r, m = self.r[table], self.m[table]
        return r + (2.0 if self.strict else 1.0) * m

    # -- FK queries ----------------------------------------------------------------------------
    def degree_histogram(self, fk: str) -> float:
        """L2 sensitivity of the histogram of group sizes (children per parent) of ``fk``."""
        if self.tuple_unit:
            self._tau(self.schema.foreign_key(fk))  # the histogram needs a cap
            return math.sqrt(6.0)
        if self.row_unit:
            return math.sqrt(2.0) * self._row_counts(self.schema.foreign_key(fk))[1]
        return self.g_rem[fk] + (math.sqrt(2.0) if self.strict else 1.0) * self.g_mod[fk]

    def null_count(self, fk: str) -> float:
        """Sensitivity of the number of children of ``fk`` with a null FK."""
        f = self.schema.foreign_key(fk)
        if self.row_unit:
            return float(self._row_counts(f)[2])
        return self.table_histogram(f.child)

    def degree_release(self, fk: str, *, with_null: bool) -> float:
        """L2 sensitivity of the degree histogram, with the null count appended when
        ``with_null`` (the two parts change together, so their bounds add in quadrature)."""
        d = self.degree_histogram(fk)
        if self.tuple_unit:  # one child moves: two groups (√6) or one group and the null count (√3)
            return d
        return math.hypot(d, self.null_count(fk)) if with_null else d

    def parent_counts(self, fk: str) -> float:
        """L2 sensitivity of the vector of children per (public) parent of ``fk`` (null count
        included as the last cell)."""
        if self.row_unit:
            return math.sqrt(2.0)
        return float(max(self.x[fk], 0))

    def edges_changed(self, fk: str) -> int:
        """Most links of ``fk`` that one neighbour can add, remove or re-point (``d`` of the
        bi-adjacency method; each counts 2 in L1 and √2 in L2 of a link-count marginal, and at
        most 1 in the number of links)."""
        f = self.schema.foreign_key(fk)
        if self.row_unit:
            return self._row_counts(f)[0]
        return max(1, int(self.r[f.child] + self.m[f.child]))

    def pairs_changed(self, fk1: str, fk2: str) -> int:
        """Most distinct pairs of the many-to-many relation through the link table of ``fk1``
        and ``fk2`` that one neighbour can add, remove or move."""
        f1, f2 = self.schema.foreign_key(fk1), self.schema.foreign_key(fk2)
        if not self.row_unit:
            return max(1, int(self.r[f1.child] + self.m[f1.child]))
        t1, t2 = self._tau(f1), self._tau(f2)
        k = 1 if self.tuple_unit else 2  # tuple: a parent's pairs change cells, none move
        if f1.parent == f2.parent:
            return max(1, k * (t1 + t2))
        return max(1, k * t1, k * t2)

    def link_count_public(self, fk: str) -> bool:
        """Whether the number of links of ``fk`` is a public fact: under the row unit (table
        sizes public) for a non-nullable FK it is the child table's size; never under the entity
        unit."""
        return self.row_unit and not self.schema.foreign_key(fk).nullable


def truncation_stable(schema: Schema) -> dict[str, bool]:
    """For every capped FK with a private child: is cap enforcement a stable transformation?

    Decided from the schema and the unit alone (see the module docstring): under the entity unit
    when no child can be removed while its parent survives (``x(e) = 0``, e.g. the FK whose parent
    is the entity), never under the row unit.

    Returns:
        ``{fk name: stable}``.
    """
    unit = schema.privacy_unit
    if unit is None:
        return {}
    mult = multipliers(schema)
    out = {}
    for name in unit.caps:
        fk = schema.foreign_key(name)
        if schema.table(fk.child).public:
            continue
        out[name] = (not mult.row_unit) and mult.x.get(name, 1) == 0
    return out


def multipliers(schema: Schema) -> Multipliers:
    """Compute the multipliers of ``schema`` under its privacy unit (public, no data; PrivLava
    §6 Def. 6.3, docs/privacy.md).

    Raises:
        SchemaError: if the schema has no privacy unit, a cycle, or a capless FK on a path to the
            entity.
    """
    unit = schema.privacy_unit
    if unit is None:
        raise SchemaError("the schema has no privacy unit")
    order = schema.topological_order()
    private = set(schema.private_tables)
    r = {t: 0 for t in schema.table_names}
    m = {t: 0 for t in schema.table_names}
    x: dict[str, int] = {}
    g_rem: dict[str, int] = {}
    g_mod: dict[str, int] = {}
    if unit.entity is None:
        for fk in schema.foreign_keys:
            x[fk.name] = g_rem[fk.name] = g_mod[fk.name] = 0
        return Multipliers(unit, schema, r, m, x, g_rem, g_mod)

    def cap(fk: ForeignKey) -> int:
        if fk.name not in unit.caps:
            raise SchemaError(f"FK {fk.name!r} is on a path to the protected entity and needs a cap τ")
        return int(unit.caps[fk.name])

    for t in order:  # parents first
        if t == unit.entity:
            r[t] = 1
        elif t in private:
            r[t] = sum(cap(fk) * r[fk.parent] for fk in schema.fks_from(t)
                       if fk.parent in private and not fk.self_referential)
    for fk in schema.foreign_keys:
        if fk.child not in private:
            x[fk.name] = 0
        elif fk.parent not in private:
            x[fk.name] = r[fk.child]
        else:
            x[fk.name] = sum(cap(o) * r[o.parent] for o in schema.fks_from(fk.child)
                             if o.name != fk.name and o.parent in private and not o.self_referential)
        g_rem[fk.name] = r[fk.parent] if fk.parent in private else 0
    for t in reversed(order):  # children first: m(t) needs g_mod of every edge into t
        m[t] = sum(g_mod.get(fk.name, 0) for fk in schema.fks_into(t)
                   if not fk.self_referential) if t in private else 0
        for fk in schema.fks_from(t):
            g_mod[fk.name] = x[fk.name] + m[t]
    return Multipliers(unit, schema, r, m, x, g_rem, g_mod)
