"""Public domains → integer codes and back.

Each attribute of a table is mapped to codes ``0 … size−1`` using only its public domain
(:class:`relviz.schema.Attribute`): a categorical attribute by position in its declared category
list, a numeric or datetime attribute by its bin on the public bounds (uniform bins, or explicit
public edges; the uniform binning of Chen et al., "Benchmarking differentially private tabular
data synthesis", §5.2, with ``x = upper`` in the last bin), a null by the last code when the
attribute is nullable. Decoding draws a value uniformly inside the bin
(integers uniformly among the integers of the bin, dates of a ``date=True`` attribute uniformly
among its whole days) so 1-way plots show no spikes. Datetimes given as text are read as ISO 8601
(:func:`parse_datetimes`).

Nothing here looks at the data to choose a domain; values outside the domain are reported by
:func:`column_problems` (``Database.validate`` collects them) and never silently clipped.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.errors import DataError, Problem
from relviz.schema import DAY_SECONDS, Attribute, Table

__all__ = ["EncodedTable", "encode_column", "decode_column", "column_problems", "encode_table",
           "decode_table", "parse_datetimes"]

_BOUND_TOL = 1e-9


@dataclass(frozen=True)
class EncodedTable:
    """Integer codes of a table's attributes over their public domains.

    Attributes:
        name: Table name.
        attributes: Attribute names, in schema order.
        sizes: Domain size of each attribute (codes are ``0 … size−1``).
        codes: ``(n_rows, n_attributes)`` array of non-negative integers: from
            :func:`encode_table` and the table mechanisms' samples, the smallest unsigned type
            that holds every code (:func:`code_dtype`: ``uint8`` up to 256 values per attribute),
            other producers may use int64. Consumers combine columns with
            :func:`relviz.marginals.mixed_radix_codes` (int64), never with arithmetic in the
            codes' own type.
    """

    name: str
    attributes: tuple[str, ...]
    sizes: tuple[int, ...]
    codes: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    def column(self, attribute: str) -> np.ndarray:
        return self.codes[:, self.attributes.index(attribute)]

    def domain(self) -> dict[str, int]:
        return dict(zip(self.attributes, self.sizes))


def parse_datetimes(s: pd.Series) -> pd.Series:
    """Datetimes from a column of datetimes or text (the caller's series is not modified).

    Text is read as ISO 8601 (pandas' ``format="ISO8601"``, so ``"1996-01-02"`` and
    ``"1996-01-02T10:00"`` mix freely); values that are not ISO are parsed with pandas' format
    inference; what still fails is ``NaT``. Time-zone-aware values are converted to naive UTC.

    Returns:
        A ``datetime64`` Series with ``s``'s index.
    """
    if pd.api.types.is_datetime64_any_dtype(s):
        ts = s
    else:
        ts = pd.to_datetime(s, format="ISO8601", errors="coerce")
        retry = ts.isna() & s.notna()
        if retry.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "could not infer format"
                other = pd.to_datetime(s[retry], errors="coerce")
            if getattr(other.dt, "tz", None) is not None:
                other = other.dt.tz_convert("UTC").dt.tz_localize(None)
            if getattr(ts.dt, "tz", None) is not None:
                ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
            ts = ts.astype("datetime64[ns]")
            ts[retry] = other.astype("datetime64[ns]")
    if getattr(ts.dt, "tz", None) is not None:
        ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
    return ts


def _numeric_values(attr: Attribute, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Float values (seconds for datetimes) and a mask of entries that failed to parse."""
    null = s.isna().to_numpy()
    if attr.kind == "datetime":
        ts = parse_datetimes(s)
        vals = ts.to_numpy(dtype="datetime64[ns]").astype("int64").astype(float) / 1e9
        bad = ts.isna().to_numpy() & ~null
        vals[ts.isna().to_numpy()] = np.nan
    else:
        num = pd.to_numeric(s, errors="coerce")
        vals = num.to_numpy(dtype=float, na_value=np.nan)
        bad = np.isnan(vals) & ~null
    return vals, bad


def category_index(categories: Sequence[object], s: pd.Series) -> np.ndarray:
    """Position of each value of ``s`` in ``categories``: ``(n,)`` int64, ``-1`` for a null or a
    value not in the list.

    Arrow-backed string columns (pandas' ``str`` dtype, what Parquet, DuckDB and CSV readers
    give) are matched by Arrow's ``index_in`` kernel, without turning them into Python objects
    (about 8× faster than ``pd.Index.get_indexer`` on 6·10⁶ strings); anything else by
    ``get_indexer``. Both give the same positions.
    """
    arrow = getattr(s.array, "__arrow_array__", None)
    if arrow is not None and len(categories) and all(isinstance(c, str) for c in categories):
        import pyarrow as pa
        import pyarrow.compute as pc

        values = arrow()
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) \
                or pa.types.is_string_view(values.type):
            found = pc.index_in(values, value_set=pa.array(list(categories)).cast(values.type))
            return np.asarray(found.fill_null(-1).to_numpy(), dtype=np.int64)
    return np.asarray(pd.Index(categories).get_indexer(s), dtype=np.int64)


def column_problems(attr: Attribute, s: pd.Series, table: str) -> list[Problem]:
    """Everything wrong with one column against its public domain.

    Reports nulls in a non-nullable attribute, unknown categories, unparsable numbers/dates and
    numbers outside the public bounds, each with a row count and up to five offending values.
    """
    out: list[Problem] = []
    null = s.isna()
    if null.any() and not attr.nullable:
        out.append(Problem("null_value", "nulls in a non-nullable attribute", table, attr.name,
                           int(null.sum())))
    if attr.kind == "categorical":
        unknown = s[~null.to_numpy() & (category_index(attr.categories, s) < 0)]
        if len(unknown):
            out.append(Problem("unknown_category",
                               f"values not in the declared category list ({len(attr.categories)} "
                               "categories)", table, attr.name, len(unknown),
                               tuple(pd.unique(unknown))[:5]))
        return out
    vals, bad = _numeric_values(attr, s)
    if bad.any():
        what = "dates" if attr.kind == "datetime" else "numbers"
        out.append(Problem("not_parsable", f"values that are not {what}", table, attr.name,
                           int(bad.sum()), tuple(pd.unique(s[bad]))[:5]))
    lo, hi = attr.bounds_numeric()
    tol = _BOUND_TOL * max(1.0, abs(lo), abs(hi))
    with np.errstate(invalid="ignore"):
        outside = (vals < lo - tol) | (vals > hi + tol)
    if outside.any():
        ex = s[outside]
        out.append(Problem("out_of_bounds",
                           f"values outside the public bounds [{attr.lower}, {attr.upper}]",
                           table, attr.name, int(outside.sum()), tuple(pd.unique(ex))[:5]))
    return out


def encode_column(attr: Attribute, s: pd.Series, *, checked: bool = False) -> np.ndarray:
    """Codes of one column, shape ``(n,)`` int64.

    Args:
        checked: The column is known to satisfy the domain (a validated
            :class:`~relviz.database.Database`'s): skip :func:`column_problems`.

    Raises:
        DataError: if the column violates the domain (see :func:`column_problems`).
    """
    problems = [] if checked else column_problems(attr, s, "")
    if problems:
        raise DataError(problems)
    null = s.isna().to_numpy()
    if attr.kind == "categorical":
        codes = category_index(attr.categories, s)
    else:
        vals, _ = _numeric_values(attr, s)
        edges = attr.bin_edges()
        codes = np.searchsorted(edges, np.nan_to_num(vals, nan=edges[0]), side="right") - 1
        codes = np.clip(codes, 0, len(edges) - 2).astype(np.int64)
    if attr.nullable:
        codes[null] = attr.n_values
    return codes


def _category_series(cats: Sequence[object], codes: np.ndarray, nullable: bool) -> pd.Series:
    null = codes >= len(cats)
    if all(isinstance(c, (bool, np.bool_)) for c in cats):
        arr = np.asarray(cats, dtype=bool)[np.where(null, 0, codes)]
        s = pd.Series(arr, dtype="boolean" if nullable else bool)
    elif all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cats):
        arr = np.asarray(cats, dtype=np.int64)[np.where(null, 0, codes)]
        s = pd.Series(arr, dtype="Int64" if nullable else np.int64)
    elif all(isinstance(c, (int, float, np.number)) for c in cats):
        s = pd.Series(np.asarray(cats, dtype=float)[np.where(null, 0, codes)])
    else:
        arr = np.asarray([str(c) for c in cats], dtype=object)[np.where(null, 0, codes)]
        s = pd.Series(arr, dtype="str")
    if null.any():
        s[null] = pd.NA if s.dtype != float else np.nan
    return s


def decode_column(attr: Attribute, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
    """Values of one column from codes (uniform draw inside each numeric bin).

    Args:
        attr: The attribute.
        codes: ``(n,)`` integer codes in ``[0, attr.size)``.
        rng: Source of the within-bin draws.

    Returns:
        A Series: categories as declared (str/int/bool), floats or nullable integers for numeric,
        ``datetime64[ns]`` for datetimes (at midnight for ``date=True``); nulls where the code is
        the null code.
    """
    codes = np.asarray(codes, dtype=np.int64)
    if attr.kind == "categorical":
        return _category_series(attr.categories, codes, attr.nullable)  # type: ignore[arg-type]
    edges = attr.bin_edges()
    n_bins = len(edges) - 1
    null = codes >= n_bins
    c = np.where(null, 0, codes)
    a, b = edges[c], edges[c + 1]
    u = rng.random(len(c))
    if attr.kind == "datetime" and attr.date:  # whole days, uniformly among the bin's days
        days = _whole_numbers(a / DAY_SECONDS, b / DAY_SECONDS, c == n_bins - 1, u)
        out = pd.to_datetime(np.where(null, 0, days).astype(np.int64) * 86_400, unit="s")
        return pd.Series(out).astype("datetime64[ns]").mask(null)
    if attr.integer:
        vals = _whole_numbers(a, b, c == n_bins - 1, u)
        if null.any():
            return pd.Series(np.where(null, 0, vals).astype(np.int64), dtype="Int64").mask(null)
        return pd.Series(vals.astype(np.int64))
    vals = a + u * (b - a)
    vals[null] = np.nan
    if attr.kind == "datetime":
        out = pd.to_datetime(np.where(null, 0, vals) * 1e9, unit="ns")
        return pd.Series(out).mask(null)
    return pd.Series(vals)


def _whole_numbers(a: np.ndarray, b: np.ndarray, last: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A whole number drawn uniformly among those in each bin ``[a, b)`` (``[a, b]`` in the last
    bin, where ``last``), from uniforms ``u``; the rounded middle when the bin holds none."""
    lo_i = np.ceil(a - 1e-9)
    hi_i = np.where(last, np.floor(b + 1e-9), np.ceil(b - 1e-9) - 1)
    empty = hi_i < lo_i
    vals = lo_i + np.floor(u * (hi_i - lo_i + 1))
    return np.where(empty, np.round((a + b) / 2), np.minimum(vals, hi_i))


def code_dtype(sizes: Sequence[int]) -> np.dtype:
    """The smallest unsigned integer type that holds codes ``0 … max(sizes) − 1``.

    A table's codes are one ``(n, d)`` matrix; at 6·10⁷ rows (TPC-H sf 10's line items) its
    int64 form is 8 bytes a cell (4.3 GB for nine attributes) where ``uint8`` needs one
    (issue 15, item 4: memory at scale).
    """
    return np.min_scalar_type(max(max((int(s) for s in sizes), default=1) - 1, 0))


def encode_table(table: Table, df: pd.DataFrame, *, checked: bool = False) -> EncodedTable:
    """Encode every attribute of ``table`` from ``df`` (which must hold those columns); ``checked``
    as in :func:`encode_column`.

    Returns:
        An :class:`EncodedTable` whose codes are ``(len(df), n_attributes)`` of
        :func:`code_dtype` (filled column by column: one int64 column at a time beside them).

    Raises:
        DataError: unless ``checked``, when a column violates its domain.
    """
    sizes = tuple(a.size for a in table.attributes)
    codes = np.empty((len(df), len(sizes)), dtype=code_dtype(sizes))
    for j, a in enumerate(table.attributes):
        codes[:, j] = encode_column(a, df[a.name], checked=checked)
    return EncodedTable(table.name, table.attribute_names, sizes, codes)


def decode_table(table: Table, enc: EncodedTable, rng: np.random.Generator) -> pd.DataFrame:
    """Decode an :class:`EncodedTable` back to a frame with the table's attribute columns."""
    return pd.DataFrame({a.name: decode_column(a, enc.codes[:, i], rng)
                         for i, a in enumerate(table.attributes)})
