"""The FK-DAG schema editor: an anywidget over :class:`~relviz.ui.schema_state.SchemaDraft`.

Tables are drawn as cards (name, rows, primary key, attributes with kind and domain size, a
public / private / entity badge) in a layered layout with parents above children; foreign keys are
arrows from the child to the parent labelled with their columns; FKs proposed from the data are
dashed. The user drags from a child table onto its parent and picks the child column(s); selects an
arrow to set its degree cap τ (seeing the real degree distribution, labelled "curator view (not
private)", and how many child rows each cap truncates), re-point it or delete it; selects a table
to mark it public or protect it as the entity; accepts or rejects proposals. When the schema was
proposed by :func:`~relviz.schema.infer_schema` (a Studio opened on the user's own frames), a
"Proposals to review (n)" section under the graph lists every one of ``Schema.proposals`` per table,
marked by kind ("excluded: identifier", "datetime", "public (small reference table)", …) with the
proposal and its reason in plain words; each is accepted (kept as proposed) or, where that is one
clear edit, rejected (a reference table made private, ``integer=True`` dropped, an ISO date kept as
text), and the row then shows its state (:meth:`SchemaDraft.schema_review`; Undo takes a decision
back). Problems are listed under the graph, all at once. Under them a table compares the three privacy units on the schema at
hand: what each protects, in plain words naming the tables, whether it can be used (and why not),
and the σ each release of the default plan would get under it at the editor's ``epsilon`` and
``delta`` (:func:`relviz.ui.units.unit_table`); the selected unit is highlighted, and a button
switches to another.

Protocol (state only in traitlets tagged ``sync=True``; no custom messages): the front end sets
``request`` (``{"op": ..., "seq": ...}``, see :meth:`SchemaDraft.apply`) and ``selected``; Python
applies the request through the draft and answers with ``graph``, ``problems``, ``message``
(``{"ok", "op", "message", "seq"}``), ``units`` (the privacy-unit table) and, for a selected FK,
``detail`` (its degree view). A
refused edit changes nothing and the graph is redrawn from Python's state. Python-side edits
(``editor.schema = ...`` or the methods below) redraw the graph the same way.

Destructive repairs ask first: "drop the rows" sends ``{"op": "repair", "how": "drop"}`` and Python
answers with ``confirm`` (what the repair would remove from each table, the cascade included,
from :meth:`SchemaDraft.repair_preview`); only ``{"op": "repair", ..., "confirmed": true}``
applies it, and ``{"op": "dismiss"}`` drops the question. Every applied edit can be undone
(``{"op": "undo"}``, the Undo button; the graph's ``undo`` names the edit). An exception in a
request is logged (:mod:`relviz.ui._errors`) and shown as the message (``"error": true``); the
graph is redrawn from Python's state. ``data_version`` changes whenever the data under the schema
do (a repair or its undo): the Studio follows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anywidget
import traitlets

from relviz.database import Database
from relviz.schema import Schema
from relviz.ui._assets import asset
from relviz.ui._errors import error_text, guard
from relviz.ui.schema_state import EditResult, SchemaDraft, problem_dict

__all__ = ["SchemaEditor"]


class SchemaEditor(anywidget.AnyWidget):
    """Edit a database's schema as a graph of tables and foreign keys.

    Args:
        source: A :class:`~relviz.database.Database` (row counts, type checks, orphans, degree
            distributions and FK proposals come from its data) or a bare
            :class:`~relviz.schema.Schema`.
        propose: Offer the FKs :func:`~relviz.schema.propose_foreign_keys` finds in the data.
        height: Height of the graph area in pixels.
        epsilon, delta: The plan's budget, for the σ in the privacy-unit table (assign to update).

    Attributes:
        schema: The edited :class:`~relviz.schema.Schema` (assign to replace it; observable).
        draft: The plain-Python state (:class:`~relviz.ui.schema_state.SchemaDraft`).

    Example:
        >>> editor = SchemaEditor(relviz.datasets.load("nycflights13"))  # doctest: +SKIP
        >>> editor                                                        # doctest: +SKIP
        >>> editor.schema.to_json()                                       # doctest: +SKIP
    """

    _esm = asset("schema_editor.js")
    _css = asset("schema_editor.css")

    graph = traitlets.Dict().tag(sync=True)
    problems = traitlets.List().tag(sync=True)
    message = traitlets.Dict().tag(sync=True)
    request = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)
    height = traitlets.Int(520).tag(sync=True)
    units = traitlets.Dict().tag(sync=True)
    epsilon = traitlets.Float(1.0).tag(sync=True)
    delta = traitlets.Float(1e-6).tag(sync=True)
    confirm = traitlets.Dict().tag(sync=True)

    schema = traitlets.Instance(Schema)
    data_version = traitlets.Int(0)

    def __init__(self, source: Database | Schema, *, propose: bool = True, height: int = 520,
                 epsilon: float = 1.0, delta: float = 1e-6, **kwargs: Any) -> None:
        self.draft = SchemaDraft(source, propose=propose)
        super().__init__(height=height, schema=self.draft.schema, epsilon=float(epsilon),
                         delta=float(delta), **kwargs)
        self._refresh(None)

    # -- plain-Python access ------------------------------------------------------------------
    @property
    def database(self) -> Database | None:
        """The data under the edited schema (not validated), or ``None`` for a bare schema."""
        return self.draft.database

    @property
    def history(self) -> list[EditResult]:
        return self.draft.history

    # -- Python-side edits (each redraws the widget) -------------------------------------------
    def add_foreign_key(self, child: str, columns: Sequence[str] | str, parent: str, **kw: Any) -> EditResult:
        return self._refresh(self.draft.add_foreign_key(child, columns, parent, **kw))

    def remove_foreign_key(self, name: str) -> EditResult:
        return self._refresh(self.draft.remove_foreign_key(name))

    def repoint_foreign_key(self, name: str, parent: str) -> EditResult:
        return self._refresh(self.draft.repoint_foreign_key(name, parent))

    def set_public(self, table: str, public: bool = True) -> EditResult:
        return self._refresh(self.draft.set_public(table, public))

    def set_entity(self, table: str | None) -> EditResult:
        return self._refresh(self.draft.set_entity(table))

    def set_unit(self, kind: str, entity: str | None = None) -> EditResult:
        """``"entity"``, ``"row"`` or ``"tuple"`` (``SchemaDraft.set_unit``; the caps are kept)."""
        return self._refresh(self.draft.set_unit(kind, entity))

    def set_cap(self, fk: str, cap: int | None) -> EditResult:
        return self._refresh(self.draft.set_cap(fk, cap))

    def set_cap_dp(self, fk: str, **kwargs) -> EditResult:  # noqa: ANN003
        """τ from a DP quantile of the degrees (``SchemaDraft.set_cap_dp``; charged to the run)."""
        return self._refresh(self.draft.set_cap_dp(fk, **kwargs))

    def accept_proposal(self, name: str) -> EditResult:
        return self._refresh(self.draft.accept_proposal(name))

    def reject_proposal(self, name: str) -> EditResult:
        return self._refresh(self.draft.reject_proposal(name))

    def accept_schema_proposal(self, pid: str) -> EditResult:
        """Keep one of ``draft.schema_proposals()`` (what ``infer_schema`` proposed) as proposed."""
        return self._refresh(self.draft.accept_schema_proposal(pid))

    def reject_schema_proposal(self, pid: str) -> EditResult:
        """Undo one of ``draft.schema_proposals()`` in the schema (``SchemaDraft.reject_schema_proposal``)."""
        return self._refresh(self.draft.reject_schema_proposal(pid))

    def repair_orphans(self, how: Literal["drop", "null"] = "null", fk: str | None = None) -> EditResult:
        """Repair at once (a Python call is its own confirmation; the button asks first)."""
        return self._refresh(self.draft.repair_orphans(how, fk))

    def undo(self) -> EditResult:
        """Undo the last applied edit (a repair's rows come back)."""
        return self._refresh(self.draft.undo())

    # -- synchronisation -------------------------------------------------------------------------
    def _refresh(self, result: EditResult | None, seq: Any = None) -> EditResult:
        d = self.draft
        with self.hold_sync():
            if result is not None and self.confirm:
                self.confirm = {}  # any answer closes an open question
            if self.schema is not d.schema:
                self.schema = d.schema
            if self.data_version != d.data_version:
                self.data_version = d.data_version
            self.graph = d.graph()
            self.problems = [problem_dict(p) for p in d.problems()]
            self.units = d.unit_table(self.epsilon, self.delta)
            self._refresh_detail()
            if result is not None:
                self.message = {**result.to_dict(), "seq": seq}
        return result  # type: ignore[return-value]

    def _refresh_detail(self) -> None:
        sel = self.selected or ""
        if sel.startswith("edge:"):
            name = sel[len("edge:"):]
            if name in {fk.name for fk in self.draft.schema.foreign_keys}:
                self.detail = self.draft.degree_view(name)
                return
            self.selected = ""
        elif sel.startswith("proposal:"):
            if sel[len("proposal:"):] not in {p.fk.name for p in self.draft.proposals()}:
                self.selected = ""
        elif sel.startswith("node:") and sel[len("node:"):] not in self.draft.schema.table_names:
            self.selected = ""
        self.detail = {}

    @traitlets.observe("request")
    def _on_request(self, change: dict[str, Any]) -> None:
        req = change["new"] or {}
        op = req.get("op")
        if not op:
            return
        seq = req.get("seq")

        def show(e: BaseException) -> None:
            self.message = {"ok": False, "op": str(op), "error": True, "seq": seq,
                            "message": error_text(f"applying {op!r}", e)}
            self._refresh(None)  # redraw from Python's state: nothing half-applied is left shown

        with guard(f"applying the schema edit {op!r}", show):
            if op == "repair" and req.get("how") == "drop" and not req.get("confirmed"):
                self._ask_repair(req, seq)
            elif op == "dismiss":
                self.confirm = {}
                self.message = {"ok": True, "op": "dismiss", "message": "nothing changed", "seq": seq}
            else:
                self._refresh(self.draft.apply(req), seq)

    def _ask_repair(self, req: dict[str, Any], seq: Any) -> None:
        """Show what dropping the orphan rows would remove, and wait for a confirmation."""
        preview = self.draft.repair_preview("drop", req.get("fk") or None)
        if not preview["ok"]:
            self._refresh(self.draft._refuse("repair", preview["reason"]), seq)
            return
        self.confirm = {**preview, "op": "repair", "seq": seq,
                        "title": f"Drop {preview['removed']:,} row(s)? This changes the data the runs use "
                                 "(Undo restores them)."}

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        with guard("showing the selection"), self.hold_sync():
            self._refresh_detail()

    @traitlets.observe("epsilon", "delta")
    def _on_budget(self, change: dict[str, Any]) -> None:
        if getattr(self, "draft", None) is not None:
            with guard("updating the privacy-unit table"):
                self.units = self.draft.unit_table(self.epsilon, self.delta)

    @traitlets.observe("schema")
    def _on_schema(self, change: dict[str, Any]) -> None:
        new = change["new"]
        if new is not None and new is not self.draft.schema:
            self._refresh(self.draft.set_schema(new))
