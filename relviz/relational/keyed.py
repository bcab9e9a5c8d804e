"""The FK to a public parent as an attribute of the child: the child's model learns *which* parent.

When the parent table is public (airports, carriers, a product catalogue), its rows and their
identities are public facts, so "which parent row" is just one more categorical attribute of each
child row, over a public domain (the parent's rows). relviz adds that attribute to the child table
before the child's single-table mechanism is fitted, so the mechanism (MST, AIM, …) measures its
marginals with the other child attributes like any other pair; the synthetic child rows then come
with a modelled parent, and every parent attribute (the destination's longitude, time zone, …)
keeps its relation to the child attributes (the flight's distance, air time) through it. The
degree baseline links children at random, which loses every such relation (docs/methods/keyed.md).

Privacy: the attribute is a function of one child row (the parent's row position), so adding it
changes no sensitivity of the child table under any unit; it is released only through the child
mechanism's measurements, charged to the table's budget. The FK's own budget pays for the same
release as the degree baseline's public-parent path, the noisy children per parent row
(:class:`~relviz.relational.degree.DegreeLinker`), which fixes each parent's number of children.

Linking (post-processing, reads no private data): each parent gets the degree baseline's number
of children; a child keeps its modelled parent while that parent has room (children in random
order within a parent), a child left over takes a free slot of a parent with the same public
attributes as its modelled one, and the rest fill the remaining slots at random. So the
degree distribution is the degree baseline's, and the share of children that keep their modelled
parent is reported (``KeyAttributeLink.kept_share``). A child whose modelled parent is null is
the first to be given a null FK.

Why our own code: this is relviz's glue between the single-table mechanisms and the linkers; the
matching is a vectorised group rank (numpy), no library does it with these constraints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, PlanError, Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.degree import DegreeLink, DegreeLinker
from relviz.relational.registry import register
from relviz.schema import Attribute, ForeignKey, Schema

__all__ = ["KeyAttributeLinker", "KeyAttributeLink", "key_attribute_name", "with_key_attributes",
           "match_to_modelled_parents"]


def key_attribute_name(schema: Schema, fk: ForeignKey) -> str:
    """The name of ``fk``'s parent-row attribute in the child table: ``"dest→airports"`` (FK
    columns → parent), with ``#`` appended while it clashes with another column of the child
    (the same name on a schema that already has the attribute, :func:`with_key_attributes`)."""
    name = f"{'+'.join(fk.columns)}→{fk.parent}"
    own = {a.name for a in schema.table(fk.child).attributes if a.description == _description(fk)}
    taken = set(schema.columns(fk.child)) - own  # (a schema that has it already: the same name)
    while name in taken:
        name += "#"
    return name


def _description(fk: ForeignKey) -> str:
    return f"row of the public parent {fk.parent} (the FK {fk.name}, as a child attribute)"


def key_attribute_problems(schema: Schema, fks: list[ForeignKey], n_rows: dict[str, int],
                           max_parents: dict[str, int] | None) -> list[Problem]:
    """Why :func:`with_key_attributes` cannot model ``fks`` (a private parent, or a public parent
    with more rows than its ``max_parents``): one problem per FK, empty when it can."""
    problems = []
    for fk in fks:
        n_p = n_rows[fk.parent]
        if not schema.table(fk.parent).public:
            problems.append(Problem("unsupported_linker", f"{fk.name}: fk-attribute needs a public "
                                    "parent table", fk.child, ", ".join(fk.columns)))
        elif max_parents and n_p > max_parents.get(fk.name, n_p):
            problems.append(Problem(
                "oversized_domain", f"{fk.name}: the public parent {fk.parent!r} has {n_p:,} rows, "
                f"more than fk-attribute's max_parents = {max_parents[fk.name]:,} (a child "
                "attribute with that many values leaves the child's mechanism nothing to measure "
                "it with); use degree, or raise max_parents", fk.child, ", ".join(fk.columns)))
    return problems


def with_key_attributes(db, fks: list[ForeignKey], *, max_parents: dict[str, int] | None = None):  # noqa: ANN001, ANN201 - Database
    """``db`` with one categorical attribute per FK of ``fks`` appended to its child table: the
    row position ``0 … n_parent − 1`` of the child's parent (null for a null FK).

    The domain is the public parent table's row positions (a public fact); the values are a
    function of one child row each, so no sensitivity changes. ``db`` is not modified (the child
    frames are shallow copies with one new column).

    Args:
        db: A :class:`~relviz.database.Database` (validated; after cap enforcement).
        fks: FKs whose parent tables are public.
        max_parents: ``{fk name: most parent rows}``; a larger public parent raises.

    Returns:
        ``(database, {fk name: attribute name})``.

    Raises:
        PlanError: a parent is private or has more rows than its ``max_parents`` (every such FK
            listed).
    """
    from relviz.database import Database

    if hasattr(db, "with_key_attributes"):  # relviz.source.EncodedDatabase: on its codes
        return db.with_key_attributes(fks, max_parents=max_parents)
    schema = db.schema
    problems = key_attribute_problems(schema, fks, db.row_counts(), max_parents)
    if problems:
        raise PlanError(problems)
    frames = {n: db[n] for n in schema.table_names}
    names: dict[str, str] = {}
    for fk in fks:
        idx = db.parent_index(fk)
        n_p = len(db[fk.parent])  # the public parent's rows: the attribute's domain
        name = key_attribute_name(db.schema, fk)  # as the fitted linker names it
        values = pd.Series(pd.array(np.where(idx >= 0, idx, 0), dtype="Int64"),
                           index=frames[fk.child].index).mask(idx < 0)
        frame = frames[fk.child].copy(deep=False)
        frame[name] = values
        frames[fk.child] = frame
        schema = _with_key_attribute(schema, fk, name, n_p)
        names[fk.name] = name
    return Database._adopt(schema, frames), names  # frames: db's, shallow-copied (copy-on-write)


def key_attribute_schema(schema: Schema, fks: list[ForeignKey],
                         parent_rows: Mapping[str, int] | None = None) -> Schema:
    """The schema a child's mechanism sees once :func:`with_key_attributes` has appended the
    parent-row attribute of each FK of ``fks`` (for previews made before any data are read, such
    as ``Plan.noise_preview``: the mechanism's σ's depend on how many attributes it measures).
    A domain is the public parent's row count from ``parent_rows`` where given, else a
    two-value placeholder. FKs to private parents are skipped (fk-attribute refuses them)."""
    parent_rows = dict(parent_rows or {})
    for fk in fks:
        if not schema.table(fk.parent).public:
            continue
        schema = _with_key_attribute(schema, fk, key_attribute_name(schema, fk),
                                     max(int(parent_rows.get(fk.parent, 2)), 1))
    return schema


def _with_key_attribute(schema: Schema, fk: ForeignKey, name: str, n_parent: int) -> Schema:
    """``schema`` with ``fk``'s parent-row attribute ``name`` (domain ``0 … n_parent − 1``)
    appended to the child table."""
    child = schema.table(fk.child)
    attr = Attribute.categorical(name, range(n_parent), nullable=fk.nullable,
                                 description=_description(fk))
    return schema.with_table(replace(child, attributes=(*child.attributes, attr)))


def _keep_by_group(group: np.ndarray, room: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Which of the items (``group``: ``(m,)`` int, ``< 0`` for none) get one of their group's
    ``room[g]`` places: a random subset of each group's items, as many as it has places."""
    m, g = len(group), len(room)
    gg = np.where((group >= 0) & (group < g), group, g)  # no group: sorts last, never kept
    order = np.lexsort((rng.random(m), gg))
    gs = gg[order]
    rank = np.arange(m) - np.searchsorted(gs, gs, side="left")  # position within the group
    keep = np.empty(m, dtype=bool)
    keep[order] = rank < np.append(room, 0)[gs]
    return keep


def _fill_within_groups(g_child: np.ndarray, g_parent: np.ndarray, room: np.ndarray,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Give children free slots of parents in their own group, at random within the group.

    Args:
        g_child: ``(m,)`` int, each child's group (``< 0``: none, never placed).
        g_parent: ``(n_p,)`` int ≥ 0, each parent's group.
        room: ``(n_p,)`` int ≥ 0, free slots per parent.
        rng: Which children of a group get its slots, and which slots.

    Returns:
        ``(placed (m,) bool, parent row of each placed child (placed.sum(),) int64)``.
    """
    n_p = len(room)
    n_g = int(max(g_parent.max(initial=-1), g_child.max(initial=-1))) + 1
    g_room = np.bincount(g_parent, weights=room, minlength=n_g).astype(np.int64)
    take = _keep_by_group(g_child, g_room, rng)
    if not take.any():
        return take, np.empty(0, dtype=np.int64)
    slots = np.repeat(np.arange(n_p, dtype=np.int64), room)
    slots = slots[rng.permutation(len(slots))]
    slots = slots[np.argsort(g_parent[slots], kind="stable")]
    first = np.searchsorted(g_parent[slots], np.arange(n_g), side="left")
    tg = g_child[take]
    order = np.argsort(tg, kind="stable")
    rank = np.arange(len(tg)) - np.searchsorted(tg[order], tg[order], side="left")
    chosen = np.empty(len(tg), dtype=np.int64)
    chosen[order] = slots[first[tg[order]] + rank]
    return take, chosen


def match_to_modelled_parents(modelled: np.ndarray, counts: np.ndarray, rng: np.random.Generator,
                              groups: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Assign children to parent slots, keeping each child's modelled parent while it has room.

    Three rounds: (1) a child keeps its modelled parent while that parent has room (a random
    subset of its children when it has fewer slots); (2) with ``groups``, a child left over takes
    a free slot of a parent in its modelled parent's group (parents with the same public
    attributes: another A320 for a flight whose modelled plane is full), at random within the
    group; (3) the rest fill the remaining slots at random.

    Args:
        modelled: ``(m,)`` int, each child's modelled parent row (``< 0`` or ``≥ n_p``: none).
        counts: ``(n_p,)`` int ≥ 0, slots per parent, summing to ``m``.
        rng: Random order within a parent or group, and of the last round.
        groups: ``(n_p,)`` int ≥ 0, a public group id per parent row, or ``None``.

    Returns:
        ``(parent row per child (m,) int64, number of children that kept their modelled parent)``.

    Raises:
        ValueError: the slots do not add up to the children.
    """
    m, n_p = len(modelled), len(counts)
    counts = np.asarray(counts, dtype=np.int64)
    if int(counts.sum()) != m:
        raise ValueError(f"{int(counts.sum())} slots for {m} children")
    k = np.asarray(modelled, dtype=np.int64)
    valid = (k >= 0) & (k < n_p)
    out = np.full(m, -1, dtype=np.int64)
    keep = _keep_by_group(np.where(valid, k, -1), counts, rng)
    out[keep] = k[keep]
    kept = int(keep.sum())
    room = counts - np.bincount(k[keep], minlength=n_p)
    rest = np.flatnonzero(~keep)
    if groups is not None and len(rest) and n_p:
        groups = np.asarray(groups, dtype=np.int64)
        g_child = np.where(valid[rest], groups[np.where(valid[rest], k[rest], 0)], -1)
        take, chosen = _fill_within_groups(g_child, groups, room, rng)
        out[rest[take]] = chosen
        room -= np.bincount(chosen, minlength=n_p)
        rest = rest[~take]
    out[rest] = np.repeat(np.arange(n_p, dtype=np.int64), room)[rng.permutation(len(rest))]
    return out, kept


@dataclass
class KeyAttributeLink:
    """A fitted fk-attribute link: the degree baseline's public-parent counts and the name of the
    child's parent-row attribute.

    Attributes:
        degree: The degree baseline's fitted public-parent model (noisy children per parent).
        attribute: Name of the parent-row attribute in the child's codes.
        kept_share: After :meth:`link`, the share of linked children that kept their modelled
            parent (the rest filled the remaining slots at random); ``nan`` before.
    """

    degree: DegreeLink
    attribute: str
    kept_share: float = field(default=float("nan"))

    @property
    def size_facts(self):  # noqa: ANN201 - tuple[SizeFact, ...]
        return self.degree.size_facts

    def link(self, child: EncodedTable, parent: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> np.ndarray:
        """Parent row of every synthetic child (``-1``: null), ``(child.n_rows,)`` int64.

        Raises:
            ValueError: the child's codes lack the parent-row attribute (a table not drawn by the
                model that learned it), or the parent table is empty while children need one.
        """
        if self.attribute not in child.attributes:
            raise ValueError(f"the synthetic {child.name} codes have no {self.attribute!r} "
                             "attribute to link by")
        n_c, n_p = child.n_rows, parent.n_rows
        modelled = child.column(self.attribute).astype(np.int64)  # n_p (nullable): null
        out = np.full(n_c, -1, dtype=np.int64)
        n_null = int(round(self.degree.null_share * n_c))
        order = np.lexsort((rng.random(n_c), modelled < n_p))  # modelled nulls first
        rows = order[n_null:]
        target = len(rows)
        if target == 0:
            return out
        if n_p == 0:
            raise ValueError("cannot link children to an empty parent table")
        counts = self.degree.parent_degrees(n_p, target, rng)
        progress(0.5, "matching children to their modelled parents")
        groups = (np.unique(parent.codes, axis=0, return_inverse=True)[1].reshape(-1)
                  if parent.codes.shape[1] else None)  # parents alike in every public attribute
        out[rows], kept = match_to_modelled_parents(modelled[rows], counts, rng, groups)
        self.kept_share = kept / target
        progress(1.0, f"{self.kept_share:.0%} of the children kept their modelled parent")
        return out


@register
@dataclass(frozen=True)
class KeyAttributeLinker(DegreeLinker):
    """FK to a public parent modelled as a child attribute (module docstring).

    Args:
        max_parents: Most rows of the public parent (the attribute's domain size); a larger
            parent is refused at fit time with a ``PlanError`` before anything is read.
        zero, public: As :class:`~relviz.relational.degree.DegreeLinker` (the post-processing of
            the noisy children per parent row).
    """

    name: ClassVar[str] = "fk-attribute"
    label: ClassVar[str] = ("FK as a child attribute (public parent: the child's mechanism models "
                            "which parent; degree-matched links)")
    models_key_attribute: ClassVar[bool] = True
    max_parents: int = 5000

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.max_parents, int) and self.max_parents >= 1):
            raise ParameterError("max_parents", "max_parents must be an integer ≥ 1")

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        if not schema.table(fk.parent).public:
            return [Problem("unsupported_linker", "fk-attribute models the FK as a child "
                            "attribute over the parent's rows, which needs a public parent table",
                            fk.child, ", ".join(fk.columns))]
        return []

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter, synthetic: object = None) -> KeyAttributeLink:
        """The degree baseline's public-parent release (noisy children per parent row, charged
        to ``budget``); the child's parent-row attribute is modelled by the child's mechanism."""
        link = super().fit(rel, budget, schema=schema, multipliers=multipliers, progress=progress)
        return KeyAttributeLink(link, key_attribute_name(schema, rel.fk))
