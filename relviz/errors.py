"""Errors raised by relviz.

Every error that is about *input* (a schema, a database, a plan) collects all the problems it
found and reports them together, each with the table, the column, how many rows are affected and
up to five offending values, so that a user can fix everything in one pass (the idiom of SDV's
multi-table ``InvalidDataError``).

Which error says what: :class:`SchemaError` (the schema), :class:`DataError` (the data under the
schema), :class:`PlanError` (the plan: shares, methods, what a method cannot model),
:class:`ParameterError` (one hyper-parameter out of its range; also a ``ValueError``),
:class:`NotFittedError` (a model used before ``fit``; also a ``ValueError`` and an
``AttributeError``, scikit-learn's convention), :class:`BudgetError` and :class:`CancelledError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Problem",
    "RelvizError",
    "SchemaError",
    "DataError",
    "PlanError",
    "ParameterError",
    "NotFittedError",
    "BudgetError",
    "CancelledError",
    "error_reason",
]

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Problem:
    """One problem found while validating a schema, a database or a plan.

    Attributes:
        kind: Short machine-readable category, e.g. ``"cycle"``, ``"orphan"``,
            ``"duplicate_key"``, ``"null_key"``, ``"unknown_category"``, ``"out_of_bounds"``.
        message: One sentence a person can act on.
        table: The table concerned, if any.
        column: The column(s) concerned, if any (composite keys are joined with ``", "``).
        count: Number of rows affected (0 when not row-based).
        examples: Up to five offending values.
    """

    kind: str
    message: str
    table: str | None = None
    column: str | None = None
    count: int = 0
    examples: tuple[Any, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "examples", tuple(self.examples)[:MAX_EXAMPLES])

    def __str__(self) -> str:
        where = ".".join(p for p in (self.table, self.column) if p)
        head = f"[{self.kind}] " + (f"{where}: " if where else "")
        tail = ""
        if self.count:
            tail += f" ({self.count:,} row{'s' if self.count != 1 else ''}"
            if self.examples:
                tail += ", e.g. " + ", ".join(repr(_as_python(v)) for v in self.examples)
            tail += ")"
        elif self.examples:
            tail += " (e.g. " + ", ".join(repr(_as_python(v)) for v in self.examples) + ")"
        return head + self.message + tail


def _as_python(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (so messages print ``3``, not ``np.int64(3)``);
    anything else unchanged."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


class RelvizError(Exception):
    """Base class of every error relviz raises on purpose."""


class _ProblemsError(RelvizError):
    """An error carrying a list of :class:`Problem` objects, all reported at once."""

    headline = "problems found"

    def __init__(self, problems: Iterable[Problem] | str, headline: str | None = None):
        if isinstance(problems, str):
            problems = [Problem("error", problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        if headline is not None:
            self.headline = headline
        super().__init__(self._render())

    def _render(self) -> str:
        n = len(self.problems)
        lines = [f"{self.headline} ({n} problem{'s' if n != 1 else ''}):"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)

    def kinds(self) -> set[str]:
        """The set of problem kinds, handy in tests and UIs."""
        return {p.kind for p in self.problems}


class SchemaError(_ProblemsError):
    """The schema itself is inconsistent (unknown tables/columns, cycles, bad domains)."""

    headline = "invalid schema"


class DataError(_ProblemsError):
    """The data do not satisfy the schema (keys, orphans, nulls, domains)."""

    headline = "the database does not satisfy its schema"


class PlanError(_ProblemsError):
    """A synthesis plan is inconsistent with its schema (shares, mechanisms, public tables)."""

    headline = "invalid plan"


class ParameterError(RelvizError, ValueError):
    """A hyper-parameter of a mechanism or relational method is out of its range.

    A ``ValueError`` too, so ``except ValueError`` keeps working.

    Attributes:
        parameter: The parameter's name (as passed, e.g. ``"init_share"``).
    """

    def __init__(self, parameter: str, message: str) -> None:
        self.parameter = parameter
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.parameter, str(self))


class NotFittedError(RelvizError, ValueError, AttributeError):
    """A model was used before ``fit`` (e.g. ``sample()``).

    A ``ValueError`` and an ``AttributeError`` too, as scikit-learn's ``NotFittedError``, so code
    written for either convention catches it.
    """


class BudgetError(RelvizError):
    """A release would exceed the privacy budget; nothing was released."""


class CancelledError(RelvizError):
    """A run was cancelled by the user; the session and the ledger stay valid."""


def error_reason(e: BaseException) -> str:
    """One line for a note or a refusal: a relviz error's problems, a KeyError's key, else the
    message."""
    problems = getattr(e, "problems", None)
    if problems:
        return "; ".join(p.message for p in problems)
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    return str(e)
