"""Public-domain encoding and decoding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.encoding import column_problems, decode_column, encode_column
from relviz.errors import DataError
from relviz.schema import Attribute


def test_categorical_roundtrip_with_nulls() -> None:
    a = Attribute.categorical("c", ["x", "y", "z"], nullable=True)
    s = pd.Series(["y", None, "x", "z"])
    codes = encode_column(a, s)
    assert codes.tolist() == [1, 3, 0, 2]
    back = decode_column(a, codes, np.random.default_rng(0))
    assert back.isna().tolist() == [False, True, False, False]
    assert back.dropna().tolist() == ["y", "x", "z"]


def test_numeric_bins_and_uniform_decoding() -> None:
    a = Attribute.numeric("x", 0, 10, bins=5)
    codes = encode_column(a, pd.Series([0.0, 1.99, 2.0, 9.99, 10.0]))
    assert codes.tolist() == [0, 0, 1, 4, 4]  # x = upper lands in the last bin
    rng = np.random.default_rng(1)
    vals = decode_column(a, np.full(20000, 2), rng)
    assert vals.between(4, 6).all()
    # uniform inside the bin: mean 5, variance 4/12; 6-sigma tolerance on the mean
    assert abs(vals.mean() - 5) < 6 * np.sqrt(4 / 12 / 20000)


def test_integer_attribute_exact_roundtrip_and_integer_draws() -> None:
    a = Attribute.numeric("m", 1, 12, bins=12, integer=True)
    s = pd.Series(np.arange(1, 13))
    assert (decode_column(a, encode_column(a, s), np.random.default_rng(0)) == s).all()
    b = Attribute.numeric("n", 0, 100, bins=4, integer=True)
    vals = decode_column(b, np.zeros(5000, int), np.random.default_rng(0))
    assert set(vals.unique()) <= set(range(0, 25)) and vals.dtype == np.int64
    assert set(decode_column(b, np.full(5000, 3), np.random.default_rng(0)).unique()) == set(range(75, 101))


def test_datetime_roundtrip() -> None:
    a = Attribute.datetime("t", "2020-01-01", "2021-01-01", bins=12, nullable=True)
    s = pd.Series(pd.to_datetime(["2020-01-15", None, "2020-12-31"]))
    codes = encode_column(a, s)
    assert codes[1] == 12 and codes[0] == 0 and codes[2] == 11
    back = decode_column(a, codes, np.random.default_rng(0))
    assert back.isna().tolist() == [False, True, False]
    assert (back.dropna() >= pd.Timestamp("2020-01-01")).all()


def test_problems_are_reported_not_clipped() -> None:
    a = Attribute.numeric("x", 0, 10, bins=5)
    probs = column_problems(a, pd.Series([1, 11, -1, None, "abc"], dtype=object), "t")
    kinds = {p.kind for p in probs}
    assert kinds == {"null_value", "out_of_bounds", "not_parsable"}
    with pytest.raises(DataError):
        encode_column(a, pd.Series([11.0]))


@pytest.mark.parametrize("dtype", ["str", object, "string[pyarrow]", "category"])
def test_category_index_matches_get_indexer_on_every_string_storage(dtype) -> None:
    """The Arrow fast path (``index_in``) and pandas' ``get_indexer`` give the same positions,
    -1 for nulls and unknown values, whatever the column's storage."""
    from relviz.encoding import category_index

    cats = ["AIR", "MAIL", "SHIP", "REG AIR"]
    vals = ["SHIP", None, "AIR", "BOAT", "REG AIR", "MAIL", "ship", None]
    s = pd.Series(vals, dtype=dtype, index=np.arange(len(vals)) * 3)
    got = category_index(cats, s)
    assert got.dtype == np.int64
    assert got.tolist() == [2, -1, 0, -1, 3, 1, -1, -1]
    assert category_index([1, 2, 3], pd.Series([3, 1, 7])).tolist() == [2, 0, -1]


def test_encoded_tables_use_the_smallest_unsigned_code_type() -> None:
    """A table's code matrix takes the smallest unsigned type holding its largest domain
    (``uint8`` up to 256 values, ``uint16`` above), with the same codes as each column's int64
    encoding; combining columns goes through int64 (no wrap-around in the small type)."""
    from relviz.encoding import code_dtype, encode_table
    from relviz.marginals import mixed_radix_codes
    from relviz.schema import Table

    assert code_dtype([2, 256]) == np.uint8 and code_dtype([257]) == np.uint16
    assert code_dtype([]) == np.uint8 and code_dtype([70_000]) == np.uint32
    rng = np.random.default_rng(0)
    small = Attribute.categorical("a", [f"c{i}" for i in range(200)])
    wide = Attribute.categorical("b", list(range(300)))
    df = pd.DataFrame({"a": [f"c{i}" for i in rng.integers(0, 200, 1000)],
                       "b": rng.integers(0, 300, 1000)})
    before = df.copy()
    one = encode_table(Table("t", (), (small,)), df)
    two = encode_table(Table("t", (), (small, wide)), df)
    assert one.codes.dtype == np.uint8 and two.codes.dtype == np.uint16
    assert (one.codes[:, 0] == encode_column(small, df["a"])).all()
    assert (two.codes[:, 1] == encode_column(wide, df["b"])).all()
    pd.testing.assert_frame_equal(df, before)
    flat = mixed_radix_codes(one.codes[:, [0, 0]], [0, 1], [200, 200])
    assert flat.dtype == np.int64 and flat.max() > 255
    assert (flat == one.codes[:, 0].astype(np.int64) * 201).all()
