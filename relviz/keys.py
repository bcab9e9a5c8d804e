"""The public format of synthetic keys: ``KeyFormat`` (declared on a table's primary-key columns),
its proposal from the shape of real keys, and :func:`format_synthetic_keys`, the last step of
sampling.

A synthesizer numbers the rows of each private table ``1 … n`` (surrogate keys: real key values
are never released) and copies parent keys into foreign-key columns. Code written for the real
schema expects the real key's type and shape, though (``planes.tailnum`` is text like
``"N10156"``, not ``17``), so a table may declare a :class:`KeyFormat` per primary-key column:
``dtype="str"`` with a ``prefix``, a zero-padding ``width`` and a ``suffix`` turns the surrogate
``17`` into ``"N00017"``; ``dtype="int"`` (the default when nothing is declared) keeps integers.
:func:`format_synthetic_keys` applies each format to the primary-key column and to every
foreign-key column that refers to it, directly or through other keys (composite keys included), so
joins still match.

A key format is **public schema information**, like a domain: declare it from public knowledge
(the registry's documented format, the DDL's column type). :func:`propose_key_format` reads the
real keys to *propose* one (``provenance="inferred"``); like an inferred domain it is not public
until the curator confirms it, and synthesis refuses it until then (or marks the release as not
differentially private when explicitly allowed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from relviz.errors import Problem

# ``schema`` arguments are relviz.schema.Schema objects; not imported here (relviz.schema
# imports this module).
__all__ = ["KeyFormat", "propose_key_format", "key_roots", "format_synthetic_keys"]

_TEMPLATE = re.compile(r"^(?P<prefix>[^{}]*)\{(?::(?P<zero>0)?(?P<width>\d+)?d)?\}(?P<suffix>[^{}]*)$")
_SHAPE = re.compile(r"^(\D*)(\d+)(.*)$", re.DOTALL)


@dataclass(frozen=True)
class KeyFormat:
    """The public format of the synthetic values of one primary-key column.

    Synthetic key number ``k`` (``1 … n``) becomes ``prefix + str(k).zfill(width) + suffix`` for
    ``dtype="str"``, and stays the integer ``k`` for ``dtype="int"``.

    Attributes:
        column: The primary-key column.
        dtype: ``"str"`` (text keys) or ``"int"`` (integer keys; no prefix, suffix or width).
        prefix: Text before the number.
        width: Zero-pad the number to this many digits (0: no padding); longer numbers are kept
            whole, so keys stay unique.
        suffix: Text after the number.
        provenance: ``"declared"`` (public) or ``"inferred"`` (read from the real keys by
            :func:`propose_key_format`: a proposal to confirm, as with domains).

    Raises:
        SchemaError: at construction, for an unknown dtype, a negative or huge width, or an int
            format with a prefix, suffix or width.
    """

    column: str
    dtype: Literal["str", "int"] = "str"
    prefix: str = ""
    width: int = 0
    suffix: str = ""
    provenance: Literal["declared", "inferred"] = "declared"

    def __post_init__(self) -> None:
        from relviz.errors import SchemaError

        problems = self.problems()
        if problems:
            raise SchemaError(problems, headline=f"invalid key format for {self.column!r}")

    def problems(self) -> list[Problem]:
        """What is wrong with this format alone (empty when fine)."""
        out: list[Problem] = []

        def bad(msg: str) -> None:
            out.append(Problem("bad_key_format", msg, column=self.column))

        if self.dtype not in ("str", "int"):
            bad(f"key dtype must be 'str' or 'int' (got {self.dtype!r})")
        if not isinstance(self.width, int) or isinstance(self.width, bool) or not 0 <= self.width <= 64:
            bad(f"width must be an integer in [0, 64] (got {self.width!r})")
        if not isinstance(self.prefix, str) or not isinstance(self.suffix, str):
            bad("prefix and suffix must be text")
        elif self.dtype == "int" and (self.prefix or self.suffix or self.width):
            bad("an integer key has no prefix, suffix or width (use dtype='str')")
        elif self.suffix[:1].isdigit():
            bad("a suffix must not start with a digit (keys would not stay unique)")
        if self.provenance not in ("declared", "inferred"):
            bad(f"provenance must be 'declared' or 'inferred' (got {self.provenance!r})")
        return out

    @property
    def template(self) -> str:
        """The format as a Python format string, e.g. ``"N{:05d}"`` (``"{}"`` for plain ints)."""
        if self.dtype == "int":
            return "{}"
        esc = lambda t: t.replace("{", "{{").replace("}", "}}")  # noqa: E731
        spec = f":0{self.width}d" if self.width else ""
        return f"{esc(self.prefix)}{{{spec}}}{esc(self.suffix)}"

    def example(self, k: int = 1) -> str | int:
        """The synthetic key number ``k`` in this format (``k`` itself for integer keys)."""
        return int(k) if self.dtype == "int" else f"{self.prefix}{str(int(k)).zfill(self.width)}{self.suffix}"

    def apply(self, values: pd.Series) -> pd.Series:
        """Format surrogate key numbers.

        Args:
            values: Integer key numbers (``int64`` or nullable ``Int64``/object with nulls).

        Returns:
            A Series with the same index: the integers unchanged for ``dtype="int"``, else a
            ``str`` Series (nulls stay null). The caller's series is not modified.
        """
        if self.dtype == "int":
            return values.copy()
        null = values.isna().to_numpy()
        nums = pd.to_numeric(values, errors="raise").to_numpy(dtype=float, na_value=0.0)
        digits = np.where(null, 0, nums).astype(np.int64).astype(str)
        text = np.char.add(np.char.add(self.prefix, np.char.zfill(digits, self.width)), self.suffix)
        out = pd.Series(text.astype(object), index=values.index, dtype="str")
        return out.mask(null) if null.any() else out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"dtype": self.dtype}
        for key in ("prefix", "width", "suffix"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        if self.provenance != "declared":
            d["provenance"] = self.provenance
        return d

    @classmethod
    def from_dict(cls, column: str, d: Mapping[str, Any] | str) -> KeyFormat:
        """From ``{"dtype", "prefix", "width", "suffix", "provenance"}`` or a format string such as
        ``"N{:05d}"`` (one integer field; ``"{}"`` alone keeps text keys as bare numbers)."""
        if isinstance(d, str):
            return cls.from_template(column, d)
        d = dict(d)
        if "format" in d:
            base = cls.from_template(column, d.pop("format"))
            return cls(column, "str", base.prefix, base.width, base.suffix,
                       provenance=d.get("provenance", "declared"))
        return cls(column=column, **d)

    @classmethod
    def from_template(cls, column: str, template: str) -> KeyFormat:
        """From a format string with one integer field: ``"N{:05d}"``, ``"C-{}"``, ``"{:d}X"``.

        Raises:
            SchemaError: when ``template`` is not of that shape.
        """
        from relviz.errors import SchemaError

        m = _TEMPLATE.match(template or "")
        if m is None:
            raise SchemaError([Problem("bad_key_format", "a key format string needs exactly one "
                                       f"integer field such as 'N{{:05d}}' (got {template!r})",
                                       column=column)])
        width = int(m["width"]) if m["width"] and m["zero"] else 0
        return cls(column, "str", m["prefix"], width, m["suffix"])


def propose_key_format(column: str, values: pd.Series, *,
                       min_share: float = 0.9) -> tuple[KeyFormat | None, str]:
    """Propose the format of a primary-key column from the shape of its real values.

    Integer keys need no format (synthetic keys are integers by default): ``(None, reason)``.
    Text keys: when at least ``min_share`` of the values are ``<prefix><digits>[<anything>]``
    with one common prefix, the proposal is that prefix and the most common digit count as the
    zero-padding width (``"N10156"`` → ``KeyFormat(prefix="N", width=5)``); a suffix is kept when
    every value has the same one. Other text keys become the numbers ``"1" … "n"`` as text.

    Reads the data: the proposal is marked ``provenance="inferred"`` and is not a public fact
    until the curator confirms it.

    Args:
        column: Column name.
        values: The real key values (any dtype; nulls ignored).
        min_share: Share of values that must follow the pattern.

    Returns:
        ``(format or None, one-sentence reason)``.
    """
    v = values.dropna()
    if pd.api.types.is_bool_dtype(v) or pd.api.types.is_numeric_dtype(v):
        return None, "integer key: synthetic keys are the integers 1 … n"
    text = v.astype(str)
    if len(text) > 20_000:
        text = text.sample(20_000, random_state=0)
    parts = text.str.extract(_SHAPE)
    matched = parts[0].notna()
    if len(text) and matched.mean() >= min_share:
        prefixes = parts.loc[matched, 0].value_counts()
        prefix, count = prefixes.index[0], int(prefixes.iloc[0])
        if count >= min_share * len(text) and not parts.loc[matched, 1].str.fullmatch("0+").all():
            ok = matched & (parts[0] == prefix)
            lengths = parts.loc[ok, 1].str.len().value_counts()
            width = int(lengths.index[0]) if lengths.iloc[0] >= 0.5 * ok.sum() else 0
            suffixes = parts.loc[ok, 2].unique()
            suffix = str(suffixes[0]) if len(suffixes) == 1 and not str(suffixes[0])[:1].isdigit() else ""
            fmt = KeyFormat(column, "str", str(prefix), width, suffix, provenance="inferred")
            return fmt, (f"text key: {ok.mean():.0%} of the values are {prefix!r} + digits"
                         + (f" (mostly {width})" if width else "")
                         + (f" + {suffix!r}" if suffix else "")
                         + f"; synthetic keys will look like {fmt.example(1)!r}, {fmt.example(2)!r}, …"
                         " — confirm this format is public")
    fmt = KeyFormat(column, "str", provenance="inferred")
    return fmt, ("text key without a common prefix + number shape: synthetic keys will be the "
                 "numbers '1', '2', … as text — declare a prefix or format string if the real "
                 "keys follow a public pattern")


def key_roots(schema: Any) -> dict[tuple[str, str], tuple[str, str]]:
    """For every key column, the primary-key column its values come from.

    A primary-key column that is not a foreign-key column is its own root; a foreign-key column
    takes the root of the parent column it references, followed through chains of keys
    (``lineitem.l_partkey → partsupp.ps_partkey → part.p_partkey``) and composite keys.

    Returns:
        ``{(table, column): (root table, root column)}`` for every PK and FK column (a column in
        a cycle of FKs has no root and is left out).
    """
    refs: dict[tuple[str, str], tuple[str, str]] = {}
    for fk in schema.foreign_keys:
        for c, pc in zip(fk.columns, fk.parent_columns):
            refs.setdefault((fk.child, c), (fk.parent, pc))
    cols = {(t.name, c) for t in schema.tables for c in t.primary_key} | set(refs)
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for col in cols:
        seen = {col}
        cur = col
        while cur in refs:
            cur = refs[cur]
            if cur in seen:
                break
            seen.add(cur)
        else:
            out[col] = cur
    return out


def format_synthetic_keys(schema: Any, frames: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Give synthetic keys their public format: the last step of sampling.

    Each private table's primary-key columns that are not foreign-key columns hold surrogate
    numbers ``1 … n``; a column with a declared :class:`KeyFormat` (``Table.key_format``) gets
    its format, and so does every foreign-key column whose root (:func:`key_roots`) it is, so
    every join still matches. Public tables (copied verbatim) and keys referring to them are not
    touched; columns without a format keep their integers.

    Args:
        schema: The synthetic database's schema.
        frames: ``{table: DataFrame}`` holding the surrogate key numbers (not modified).

    Returns:
        A new ``{table: DataFrame}``; frames without a formatted key are passed through as is.
    """
    formats: dict[tuple[str, str], KeyFormat] = {}
    for t in schema.tables:
        if t.public:
            continue
        for f in t.key_format:
            formats[(t.name, f.column)] = f
    if not formats:
        return dict(frames)
    out = dict(frames)
    for (table, col), root in key_roots(schema).items():
        fmt = formats.get(root)
        if fmt is None or fmt.dtype == "int" or table not in out or col not in out[table].columns:
            continue
        if (table, col) != root and schema.table(table).public:
            continue  # a public table's keys are real values (and cannot refer to a private table)
        df = out[table] if out[table] is not frames.get(table) else out[table].copy()
        df[col] = fmt.apply(df[col])
        out[table] = df
    return out
