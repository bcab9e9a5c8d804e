"""The FK to a large public parent as the parent's public attributes, copied into the child.

fk-attribute (:mod:`relviz.relational.keyed`) models *which* public parent row a child points to
as one child attribute over the parent's rows. For a public parent with many rows (TPC-H's
``partsupp``: 800,000 at scale factor 1) that attribute has too many values for any mechanism to
measure, so relviz refuses it above ``max_parents`` and the degree baseline links such children at
random, which loses every relation between a child attribute and the parent's (a line item's
quantity and its part's brand). This linker, ``"parent-attributes"``, copies instead the parent's
public *attributes* into the child, those of the parent row and of the public tables it points to
(``hops`` FKs up: ``partsupp → part`` gives the part's brand, type, size and container), as child
attributes over their own public domains. The child's mechanism (MST, AIM, PrivLava's child
model, …) then measures their marginals with the child's own attributes like any other pair, and
each synthetic child comes with the attribute values of the parent it should have.

Privacy: each copied value is a function of one child row and public tables (the parent row its
FK names, and that row's public ancestors), so no sensitivity of the child table changes under any
unit; the values are released only through the child mechanism's measurements, charged to the
table's budget. The FK's own budget pays for the degree baseline's public-parent release, the
noisy children per parent row (:class:`~relviz.relational.degree.DegreeLinker`), exactly as
fk-attribute's does (docs/methods/keyed.md §2).

Linking (post-processing: reads the synthetic codes, the fitted release and public tables): each
parent gets the degree baseline's number of children; a child takes a free slot of a parent whose
copied attributes all equal its own, at random among those slots; a child left over (no such
parent with room) drops the copied attributes one at a time and takes a free slot of a parent
that matches the rest; whatever is left fills the remaining slots at random
(:func:`match_by_attributes`). The attribute dropped first is the one the synthetic children's own
attributes say least about (largest mutual information with any of them, bias-corrected:
:func:`association_order`), so an attribute the child's model drew independently of the child
(TPC-H's supply cost) does not decide where a line item goes. The share of children linked to a parent
that matches every copied attribute is reported (``ParentAttributeLink.matched_share``).

Why our own code: like fk-attribute, this is relviz's glue between the single-table mechanisms and
the linkers; the matching is a vectorised group rank (numpy), which no library does with these
constraints. docs/methods/keyed.md §6 describes the method and its measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from relviz.encoding import EncodedTable, code_dtype, encode_table
from relviz.errors import ParameterError, PlanError, Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.degree import DegreeLink, DegreeLinker
from relviz.relational.keyed import KeyAttributeLinker, _fill_within_groups
from relviz.relational.registry import register
from relviz.schema import Attribute, ForeignKey, Schema

__all__ = ["ParentAttributeLinker", "ParentAttributeLink", "ParentAttribute",
           "parent_attribute_sources", "with_parent_attributes", "parent_attribute_schema",
           "parent_attribute_codes",
           "match_by_attributes", "association_order", "public_parent_linker"]


@dataclass(frozen=True)
class ParentAttribute:
    """One public attribute copied into the child of an FK.

    Attributes:
        name: The child attribute's name, ``"<FK columns>→<table>.<attribute>"`` (e.g.
            ``"l_partkey+l_suppkey→part.p_brand"``), with ``#`` appended while it clashes.
        path: The FKs from the FK's parent table to the table that holds the attribute (empty:
            the parent's own attribute), each to a public table.
        table: The table that holds the attribute.
        attribute: Its schema attribute (its public domain).
    """

    name: str
    path: tuple[ForeignKey, ...]
    table: str
    attribute: Attribute

    @property
    def source(self) -> str:
        """``"table.attribute"``, as ``ParentAttributeLinker(attributes=…)`` names it."""
        return f"{self.table}.{self.attribute.name}"


def _reachable(schema: Schema, table: str, hops: int) -> list[tuple[tuple[ForeignKey, ...], str]]:
    """``(path, table)`` of ``table`` and of every public table reached from it through at most
    ``hops`` FKs (each FK of a public table to a public table, self-references skipped), in
    breadth-first order of the schema's FKs."""
    out = [((), table)]
    frontier = [((), table)]
    for _ in range(max(int(hops), 0)):
        nxt = []
        for path, t in frontier:
            for fk in schema.fks_from(t):
                if fk.self_referential or not schema.table(fk.parent).public:
                    continue
                nxt.append(((*path, fk), fk.parent))
        out += nxt
        frontier = nxt
    return out


def is_copied_attribute(name: str) -> bool:
    """Whether a child attribute's name is one that parent-attributes gives a copied parent
    attribute (``"<FK columns>→<table>.<attribute>"``, :func:`parent_attribute_sources`);
    fk-attribute's row attribute (``"<FK columns>→<table>"``) is not one."""
    _, arrow, tail = str(name).partition("→")
    return bool(arrow) and "." in tail


def parent_attribute_sources(schema: Schema, fk: ForeignKey, attributes: Sequence[str] | None = None,
                             hops: int = 1) -> list[ParentAttribute]:
    """The public attributes that ``parent-attributes`` copies into ``fk``'s child, in the given
    order (the matching's order with ``order="given"``: the last is dropped first when no parent
    with the full tuple has room).

    Args:
        schema: The schema (``fk``'s parent must be public).
        fk: The FK.
        attributes: ``"table.attribute"`` (or a bare attribute name, when only one reachable
            table has it) of the parent or of a public table ``hops`` FKs up from it, in matching
            order; ``None`` (default): every attribute of the parent and of those tables, ordered
            by domain size (fewest values first, so the coarsest are kept longest), ties in
            schema order.
        hops: How many FKs up from the parent to look (default 1: ``partsupp``'s own and its
            ``part``'s and ``supplier``'s attributes).

    Returns:
        One :class:`ParentAttribute` per copied attribute, each with its child attribute's name.

    Raises:
        PlanError: ``fk``'s parent is private, a named attribute is unknown, ambiguous or
            repeated, or nothing is left to copy (every problem listed).
    """
    cols = ", ".join(fk.columns)
    if not schema.table(fk.parent).public:
        raise PlanError([Problem("unsupported_linker", f"{fk.name}: parent-attributes copies a "
                                 "public parent's attributes, which needs a public parent table",
                                 fk.child, cols)])
    reach = _reachable(schema, fk.parent, hops)
    found: list[tuple[tuple[ForeignKey, ...], str, Attribute]] = []
    for path, t in reach:
        seen = {(p, tt) for p, tt, _ in found}
        if (path, t) in seen:
            continue
        found += [(path, t, a) for a in schema.table(t).attributes]
    problems: list[Problem] = []
    if attributes is None:
        order = sorted(range(len(found)), key=lambda i: (found[i][2].size, i))
        chosen = [found[i] for i in order]
    else:
        chosen = []
        for spec in attributes:
            t, _, a = str(spec).rpartition(".")
            hits = [f for f in found if f[2].name == a and (not t or f[1] == t)]
            if len(hits) != 1:
                known = ", ".join(f"{f[1]}.{f[2].name}" for f in found) or "none"
                why = "is not an attribute of" if not hits else "names several attributes of"
                problems.append(Problem("unknown_attribute", f"{fk.name}: {spec!r} {why} "
                                        f"{fk.parent} or a public table {hops} FK(s) up from it "
                                        f"(known: {known})", fk.child, cols))
                continue
            if hits[0] in chosen:
                problems.append(Problem("duplicate_attribute", f"{fk.name}: {spec!r} is named "
                                        "twice", fk.child, cols))
                continue
            chosen.append(hits[0])
    if not chosen and not problems:
        problems.append(Problem("unsupported_linker", f"{fk.name}: {fk.parent} and the public "
                                f"tables {hops} FK(s) up from it have no attribute to copy; use "
                                "degree or fk-attribute", fk.child, cols))
    if problems:
        raise PlanError(problems)
    taken = set(schema.columns(fk.child))
    out = []
    for path, t, a in chosen:
        name = f"{'+'.join(fk.columns)}→{t}.{a.name}"
        while name in taken:
            name += "#"
        taken.add(name)
        out.append(ParentAttribute(name, path, t, a))
    return out


def _child_attribute(fk: ForeignKey, pa: ParentAttribute) -> Attribute:
    """The child attribute of ``pa``: its source's domain, nullable when the FK or an FK on the
    path is (a child with a null FK, or a parent with a null ancestor, has no value)."""
    nullable = pa.attribute.nullable or fk.nullable or any(p.nullable for p in pa.path)
    via = " → ".join([fk.parent, *(p.parent for p in pa.path)])
    return replace(pa.attribute, name=pa.name, nullable=nullable,
                   description=f"{pa.source} of the public parent row (the FK {fk.name}, via "
                               f"{via}), as a child attribute")


def parent_attribute_schema(schema: Schema, fk: ForeignKey, sources: Sequence[ParentAttribute]) -> Schema:
    """``schema`` with the attributes of ``sources`` appended to ``fk``'s child table (for
    previews made before any data are read, and for :func:`with_parent_attributes`)."""
    child = schema.table(fk.child)
    extra = tuple(_child_attribute(fk, pa) for pa in sources)
    return schema.with_table(replace(child, attributes=(*child.attributes, *extra)))


def _ancestor_rows(parent_index, path: Sequence[ForeignKey], n_parent: int) -> np.ndarray:  # noqa: ANN001
    """Row of the table at the end of ``path`` for each of the ``n_parent`` rows of the table
    where it starts, ``(n_parent,)`` int64 (``-1``: a null FK on the way). ``parent_index(fk)``
    gives one FK's parent rows."""
    rows = np.arange(n_parent, dtype=np.int64)
    for p in path:
        step = np.asarray(parent_index(p), dtype=np.int64)
        rows = np.where(rows >= 0, step[np.maximum(rows, 0)], -1) if len(step) else \
            np.full(n_parent, -1, dtype=np.int64)
    return rows


def parent_attribute_codes(public_codes, parent_index, fk: ForeignKey,  # noqa: ANN001
                           sources: Sequence[ParentAttribute], n_parent: int) -> EncodedTable:
    """The codes of the copied attributes on the public parent's rows, ``(n_parent, a)``: what
    the link matches the synthetic children against. ``public_codes(table)`` gives a public
    table's :class:`EncodedTable`, ``parent_index(fk)`` one FK's parent rows. A parent row with a
    null ancestor gets the attribute's null code."""
    attrs = [_child_attribute(fk, pa) for pa in sources]
    sizes = tuple(a.size for a in attrs)
    codes = np.empty((n_parent, len(attrs)), dtype=code_dtype(sizes))
    for j, (pa, a) in enumerate(zip(sources, attrs)):
        rows = _ancestor_rows(parent_index, pa.path, n_parent)
        col = public_codes(pa.table).column(pa.attribute.name).astype(np.int64)
        codes[:, j] = np.where(rows >= 0, col[np.maximum(rows, 0)] if len(col) else 0, a.n_values)
    return EncodedTable(fk.parent, tuple(a.name for a in attrs), sizes, codes)


def with_parent_attributes(db, fks: dict[str, Sequence[ParentAttribute]]):  # noqa: ANN001, ANN201 - Database
    """``db`` with the copied public attributes appended to each FK's child table, and the codes
    of those attributes on each public parent's rows.

    The values are functions of one child row and public tables (its parent row and that row's
    public ancestors), so no sensitivity changes. ``db`` is not modified (child frames are
    shallow copies with the new columns).

    Args:
        db: A :class:`~relviz.database.Database` (validated; after cap enforcement) or an
            :class:`~relviz.source.EncodedDatabase`.
        fks: ``{fk name: sources}`` from :func:`parent_attribute_sources`.

    Returns:
        ``(database, {fk name: EncodedTable of the parent rows' codes})``: the second is public
        (:func:`parent_attribute_codes`), what ``ParentAttributeLink`` matches against.
    """
    from relviz.database import Database

    schema = db.schema
    encoded = hasattr(db, "encoded")  # relviz.source.EncodedDatabase: work on its codes
    counts = db.row_counts()
    cache: dict[str, EncodedTable] = {}

    def public_codes(name: str) -> EncodedTable:
        if name not in cache:
            cache[name] = db.encoded(name) if encoded else encode_table(schema.table(name), db[name])
        return cache[name]

    steps: dict[str, np.ndarray] = {}

    def parent_index(fk: ForeignKey) -> np.ndarray:  # one read per FK, whatever shares it
        if fk.name not in steps:
            steps[fk.name] = np.asarray(db.parent_index(fk), dtype=np.int64)
        return steps[fk.name]

    classes: dict[str, EncodedTable] = {}
    for name, sources in fks.items():
        fk = schema.foreign_key(name)
        classes[name] = parent_attribute_codes(public_codes, parent_index, fk, sources,
                                               int(counts[fk.parent]))
    if encoded:
        return db.with_parent_attributes(fks, classes), classes
    frames = {n: db[n] for n in schema.table_names}
    for name, sources in fks.items():
        fk = schema.foreign_key(name)
        idx = parent_index(fk)
        n_p = int(counts[fk.parent])
        frame = frames[fk.child].copy(deep=False)
        for pa in sources:  # the raw values, encoded later with the copied domain
            rows = _ancestor_rows(parent_index, pa.path, n_p)
            at = np.where(idx >= 0, rows[np.maximum(idx, 0)] if n_p else -1, -1)
            src = db[pa.table][pa.attribute.name].reset_index(drop=True)
            vals = src.take(np.maximum(at, 0)).reset_index(drop=True) if len(src) else \
                pd.Series([None] * len(at), dtype=object)
            vals.index = frame.index
            frame[pa.name] = vals.mask(pd.Series(at < 0, index=frame.index))
        frames[fk.child] = frame
        schema = parent_attribute_schema(schema, fk, sources)
    return Database._adopt(schema, frames), classes  # frames: db's, shallow-copied


def _prefix_groups(child: np.ndarray, parent: np.ndarray, sizes: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Joint group ids of the first ``j`` columns, ``j = 1 … a``, shared by children and
    parents: ``[(child ids (m,), parent ids (n_p,))]`` (dense, re-numbered after each column so
    no product of domain sizes overflows)."""
    m = len(child)
    both = np.concatenate([child, parent], axis=0).astype(np.int64)
    ids = np.zeros(len(both), dtype=np.int64)
    out = []
    for j, size in enumerate(sizes):
        ids = ids * int(size) + both[:, j]
        ids = np.unique(ids, return_inverse=True)[1].reshape(-1)
        out.append((ids[:m], ids[m:]))
    return out


def match_by_attributes(child: np.ndarray, parent: np.ndarray, sizes: Sequence[int],
                        counts: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Assign children to parent slots by their copied attribute values.

    Rounds ``j = a, a − 1, …, 1``: a child not yet placed takes a free slot of a parent whose
    first ``j`` attributes equal its own, at random among those slots; then the rest fill the
    remaining slots at random.

    Args:
        child: ``(m, a)`` int codes of the children's copied attributes.
        parent: ``(n_p, a)`` int codes of the same attributes on the parent rows.
        sizes: The ``a`` domain sizes (codes are below them).
        counts: ``(n_p,)`` int ≥ 0, slots per parent, summing to ``m``.
        rng: Random choices.

    Returns:
        ``(parent row per child (m,) int64, number placed in round a: every attribute equal)``.

    Raises:
        ValueError: the slots do not add up to the children, or the shapes disagree.
    """
    child = np.asarray(child, dtype=np.int64).reshape(len(child), -1)
    parent = np.asarray(parent, dtype=np.int64).reshape(len(parent), -1)
    m, n_p = len(child), len(parent)
    counts = np.asarray(counts, dtype=np.int64)
    if int(counts.sum()) != m:
        raise ValueError(f"{int(counts.sum())} slots for {m} children")
    if len(counts) != n_p or child.shape[1] != parent.shape[1] or child.shape[1] != len(sizes):
        raise ValueError(f"shapes disagree: children {child.shape}, parents {parent.shape}, "
                         f"{len(counts)} counts, {len(sizes)} sizes")
    out = np.full(m, -1, dtype=np.int64)
    room = counts.copy()
    rest = np.arange(m)
    exact = 0
    levels = _prefix_groups(child, parent, sizes) if m and n_p else []
    for j in range(len(levels) - 1, -1, -1):
        if not len(rest):
            break
        g_child, g_parent = levels[j]
        take, chosen = _fill_within_groups(g_child[rest], g_parent, room, rng)
        out[rest[take]] = chosen
        room -= np.bincount(chosen, minlength=n_p)
        if j == len(levels) - 1:
            exact = int(take.sum())
        rest = rest[~take]
    out[rest] = np.repeat(np.arange(n_p, dtype=np.int64), room)[rng.permutation(len(rest))]
    return out, exact


def association_order(codes: np.ndarray, sizes: Sequence[int], others: np.ndarray,
                      other_sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Order the copied attributes by how much the synthetic children's other attributes say
    about them, most first (post-processing of synthetic codes only).

    Each copied attribute's score is its largest mutual information (nats) with one of the
    child's other attributes, less the Miller–Madow bias ``(r − 1)(c − 1)/(2n)`` of the plug-in
    estimate (Miller 1955), so an attribute the model drew independently of the child's own
    attributes scores about 0 whatever its domain size.

    Args:
        codes: ``(n, a)`` int codes of the copied attributes. sizes: their domain sizes.
        others: ``(n, b)`` int codes of the child's other attributes. other_sizes: theirs.

    Returns:
        ``(order (a,) int, scores (a,) float)``: the attribute indices, highest score first
        (ties in the given order), and the scores.
    """
    n, a = codes.shape
    scores = np.zeros(a)
    if n == 0 or others.shape[1] == 0:
        return np.arange(a), scores
    for j in range(a):
        best = 0.0
        x = codes[:, j].astype(np.int64)
        px = np.bincount(x, minlength=int(sizes[j])) / n
        for k in range(others.shape[1]):
            y = others[:, k].astype(np.int64)
            c = int(other_sizes[k])
            joint = np.bincount(x * c + y, minlength=int(sizes[j]) * c).reshape(-1, c) / n
            py = joint.sum(axis=0)
            nz = joint > 0
            mi = float((joint[nz] * np.log(joint[nz] / np.outer(px, py)[nz])).sum())
            bias = (np.count_nonzero(px) - 1) * (np.count_nonzero(py) - 1) / (2 * n)
            best = max(best, mi - bias)
        scores[j] = best
    return np.argsort(-scores, kind="stable"), scores


@dataclass
class ParentAttributeLink:
    """A fitted parent-attributes link: the degree baseline's public-parent counts, the copied
    attributes' names in the child's codes and their codes on the parent rows.

    Attributes:
        degree: The degree baseline's fitted public-parent model (noisy children per parent).
        attributes: Names of the copied attributes in the child's codes, in matching order.
        parent_codes: ``(n_parent, a)`` codes of those attributes on the public parent's rows
            (public; the smallest unsigned dtype that holds them, :func:`relviz.encoding.code_dtype`).
        sizes: Their ``a`` domain sizes.
        order: ``"auto"``: the matching keeps longest the copied attributes the synthetic
            children's other attributes say most about (:func:`association_order`);
            ``"given"``: ``attributes``' order.
        matched_share: After :meth:`link`, the share of linked children whose parent matches
            every copied attribute; ``nan`` before.
        matched_order: After :meth:`link`, the copied attributes in the order the matching
            kept them (the last is dropped first).
        matched_prefix: After :meth:`link`, for ``j = 1 … a``, the share of linked children
            whose parent matches the first ``j`` attributes of ``matched_order``.
        association: After :meth:`link` with ``order="auto"``, ``{attribute: score}`` of
            :func:`association_order` (nats): what the synthetic children's own attributes say
            about each copied attribute.
    """

    degree: DegreeLink
    attributes: tuple[str, ...]
    parent_codes: np.ndarray
    sizes: tuple[int, ...]
    order: str = "auto"
    matched_share: float = field(default=float("nan"))
    matched_order: tuple[str, ...] = ()
    association: dict[str, float] = field(default_factory=dict)
    matched_prefix: tuple[float, ...] = ()

    @property
    def size_facts(self):  # noqa: ANN201 - tuple[SizeFact, ...]
        return self.degree.size_facts

    def link(self, child: EncodedTable, parent: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> np.ndarray:
        """Parent row of every synthetic child (``-1``: null), ``(child.n_rows,)`` int64.

        Children whose copied attributes are all null (a null FK in the data) are the first
        given a null FK, as many as the degree release's null share asks for.

        Raises:
            ValueError: the child's codes lack a copied attribute (a table not drawn by the
                model that learned them), the parent table's rows are not those the link was
                fitted on, or the parent table is empty while children need one.
        """
        missing = [a for a in self.attributes if a not in child.attributes]
        if missing:
            raise ValueError(f"the synthetic {child.name} codes have no {', '.join(map(repr, missing))} "
                             "attribute to link by")
        n_c, n_p = child.n_rows, parent.n_rows
        if n_p != len(self.parent_codes):
            raise ValueError(f"the parent table has {n_p:,} rows, the link was fitted on "
                             f"{len(self.parent_codes):,}")
        codes = np.stack([child.column(a).astype(np.int64) for a in self.attributes], axis=1) \
            if n_c else np.zeros((0, len(self.attributes)), dtype=np.int64)
        out = np.full(n_c, -1, dtype=np.int64)
        n_null = int(round(self.degree.null_share * n_c))
        null = (codes >= np.asarray(self.sizes) - 1).all(axis=1) if n_c else np.zeros(0, bool)
        order = np.lexsort((rng.random(n_c), ~null))  # children with no parent values first
        rows = order[n_null:]
        if len(rows) == 0:
            return out
        if n_p == 0:
            raise ValueError("cannot link children to an empty parent table")
        linked = codes[rows]  # the copied codes of the children to link
        counts = self.degree.parent_degrees(n_p, len(rows), rng)
        cols = np.arange(len(self.attributes))
        if self.order == "auto":  # keep longest what the child's own attributes depend on
            rest = [i for i, a in enumerate(child.attributes) if a not in self.attributes]
            cols, scores = association_order(linked, self.sizes, child.codes[np.ix_(rows, rest)],
                                             [child.sizes[i] for i in rest])
            self.association = {a: float(v) for a, v in zip(self.attributes, scores)}
        self.matched_order = tuple(self.attributes[i] for i in cols)
        progress(0.5, "matching children to parents with their attribute values")
        out[rows], exact = match_by_attributes(linked[:, cols], self.parent_codes[:, cols],
                                               [self.sizes[i] for i in cols], counts, rng)
        self.matched_share = exact / len(rows)
        same = linked[:, cols] == self.parent_codes[out[rows]][:, cols]
        self.matched_prefix = tuple(float(x) for x in np.cumprod(same, axis=1).mean(axis=0))
        first = self.matched_order[0].rpartition(".")[2] if self.matched_order else ""
        progress(1.0, f"{self.matched_prefix[0]:.0%} of the children linked to a parent with "
                      f"their {first}, {self.matched_share:.0%} with all "
                      f"{len(self.attributes)} attribute values")
        return out


@register
@dataclass(frozen=True)
class ParentAttributeLinker(KeyAttributeLinker):
    """FK to a public parent modelled through the parent's public attributes, copied into the
    child (module docstring).

    Args:
        attributes: ``"table.attribute"`` names of the parent's attributes and of the public
            tables ``hops`` FKs up from it, in matching order; ``None`` (default): all of them,
            fewest values first (:func:`parent_attribute_sources`).
        hops: How many FKs up from the parent to look (default 1).
        order: Which copied attributes the matching keeps longest when no parent with all the
            child's values has room: ``"auto"`` (default) those the synthetic children's own
            attributes say most about (:func:`association_order`, post-processing), or
            ``"given"``, ``attributes``' order.
        zero, public: As :class:`~relviz.relational.degree.DegreeLinker`.
    """

    name: ClassVar[str] = "parent-attributes"
    label: ClassVar[str] = ("Parent attributes (public parent: its public attributes modelled in "
                            "the child; linked to parents with those values)")
    models_parent_attributes: ClassVar[bool] = True
    attributes: tuple[str, ...] | None = None
    hops: int = 1
    order: str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.order not in ("auto", "given"):
            raise ParameterError("order", "order must be 'auto' or 'given'")
        if self.attributes is not None:
            if isinstance(self.attributes, str) or not all(isinstance(a, str) for a in self.attributes):
                raise ParameterError("attributes", "attributes must be a list of "
                                     "'table.attribute' names, or None for all")
            object.__setattr__(self, "attributes", tuple(self.attributes))
        if not (isinstance(self.hops, int) and self.hops >= 0):
            raise ParameterError("hops", "hops must be an integer ≥ 0")

    def sources(self, schema: Schema, fk: ForeignKey) -> list[ParentAttribute]:
        """The attributes copied into ``fk``'s child (:func:`parent_attribute_sources`)."""
        return parent_attribute_sources(schema, fk, self.attributes, self.hops)

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        try:
            self.sources(schema, fk)
        except PlanError as e:
            return list(e.problems)
        return []

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter, synthetic: object = None) -> ParentAttributeLink:
        """The degree baseline's public-parent release (noisy children per parent row, charged
        to ``budget``); the copied attributes are modelled by the child's mechanism.

        Raises:
            ValueError: ``rel`` carries no parent attribute codes (the FK was not prepared by
                :func:`with_parent_attributes`, as ``RelationalSynthesizer.fit`` does).
        """
        codes = getattr(rel, "parent_attributes", None)
        if codes is None:
            raise ValueError(f"{rel.fk.name}: parent-attributes needs the parent rows' attribute "
                             "codes; fit it through RelationalSynthesizer")
        link = DegreeLinker.fit(self, rel, budget, schema=schema, multipliers=multipliers,
                                progress=progress)
        return ParentAttributeLink(link, tuple(codes.attributes), np.asarray(codes.codes),
                                   tuple(int(s) for s in codes.sizes), self.order)


def public_parent_linker(schema: Schema, fk_name: str, public: str = "auto") -> str:
    """The linker a database method's mixed mode gives an FK to a public parent that it links
    (PrivLava's and PrivPetal's ``default_components``): ``public`` when it names one; for
    ``"auto"``, ``"parent-attributes"`` where the parent or a public table one FK up has an
    attribute to copy, so that the method's model of the child learns how a child goes with its
    parent's public attributes (docs/methods/keyed.md §6; docs/methods/privlava.md §2,
    docs/methods/privpetal.md §5.5), else ``"degree"``."""
    if public != "auto":
        return public
    copies = not ParentAttributeLinker().problems(schema, schema.foreign_key(fk_name))
    return "parent-attributes" if copies else "degree"
