"""The count backends (``relviz.privacy.backends``): pandas, DuckDB and Spark give the same counts
for every handle of ``relviz.privacy.measure``, and a seeded run the same synthetic database."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.marginals import Workload
from relviz.privacy.backends import (
    CountBackend,
    Cross,
    DuckDBBackend,
    PandasBackend,
    SparkBackend,
    get_backend,
)
from relviz.privacy.measure import Curator
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table


def _spark_missing() -> str | None:
    if shutil.which("java") is None:
        return "Spark needs Java (no `java` on PATH)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install relviz[spark])"
    return None


@pytest.fixture(scope="module")
def spark() -> SparkBackend:
    why = _spark_missing()
    if why:
        pytest.skip(why)
    backend = SparkBackend()
    yield backend
    backend.close()


@pytest.fixture(params=["duckdb", pytest.param("spark", marks=pytest.mark.slow)])
def other(request: pytest.FixtureRequest) -> CountBackend:
    """A non-default backend. Spark's are slow (over 30 s on two cores, most of it starting the
    session, which the module's tests share)."""
    if request.param == "spark":
        yield request.getfixturevalue("spark")
        return
    backend = DuckDBBackend(threads=1)
    yield backend
    backend.close()


def shop_db() -> tuple[Database, ForeignKey]:
    """shops (composite key city+sid) ← sales (nullable composite FK, one orphan), random."""
    rng = np.random.default_rng(0)
    shops = Table("shops", ("city", "sid"), (Attribute.categorical("kind", ["a", "b", "c"]),
                                             Attribute.numeric("size", 0, 100, bins=4)))
    sales = Table("sales", ("id",), (Attribute.categorical("pay", ["cash", "card"], nullable=True),
                                     Attribute.numeric("amount", 0, 10, bins=5)))
    fk = ForeignKey("sales", ("city", "shop"), "shops", ("city", "sid"), nullable=True)
    schema = Schema((shops, sales), (fk,), PrivacyUnit("shops", {fk.name: 10}), name="shop")
    n_p, n_c = 13, 300
    sh = pd.DataFrame({"city": np.repeat(["x", "y", "z", "w"], 4)[:n_p],
                       "sid": np.tile(np.arange(4), 4)[:n_p],
                       "kind": rng.choice(["a", "b", "c"], n_p), "size": rng.uniform(0, 100, n_p)})
    p = rng.integers(0, n_p - 1, n_c)  # the last shop has no sale
    city = sh["city"].to_numpy()[p].astype(object)
    sid = sh["sid"].to_numpy()[p].astype(float)
    null = rng.random(n_c) < 0.1
    city[null], sid[null] = None, np.nan
    city[0], sid[0] = "x", 9.0  # an orphan: counted with the nulls, never joined
    sa = pd.DataFrame({"id": np.arange(n_c), "city": city, "shop": pd.array(sid, dtype="Int64"),
                       "pay": rng.choice(np.array(["cash", "card", None], dtype=object), n_c),
                       "amount": rng.uniform(0, 10, n_c)})
    return Database.from_frames({"shops": sh, "sales": sa}, schema, validate=False), fk


def _answers(cur: Curator, fk: ForeignKey) -> list[np.ndarray]:
    t, f = cur.table("sales"), cur.foreign_key(fk.name)
    w = [Workload((0,), (1,), (3,), (4,)), Workload((0, 1), (), (3, 5), ()),
         Workload((), (0, 1), (), (3, 4))]
    return [t.marginal(()), t.marginal(("pay",)), t.marginal(("amount", "pay")),
            cur.table("shops").marginal(("size", "kind")),
            f.degrees(), f.parent_counts(), f.degree_histogram(3),
            f.degree_histogram(30, np.array([0, 10, 20, 25])),
            f.cross_marginal(["pay"], ["kind", "size"]), f.cross_marginal([], []),
            f.cross_marginal(["amount"], []), f.cross_marginal([], ["kind"]),
            *f.workload_marginals(w), *f.workload_marginals(w, normalise=False)]


def test_every_handle_gives_the_same_counts(other: CountBackend) -> None:
    db, fk = shop_db()
    ref, cur = Curator(db), Curator(db, backend=other)
    expected, got = _answers(ref, fk), _answers(cur, fk)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)
    assert expected[5][-1] > 1  # the null/orphan bucket is exercised
    assert [(r.target, r.query, r.rows) for r in cur.log.reads] == \
        [(r.target, r.query, r.rows) for r in ref.log.reads]


@pytest.mark.parametrize("seed", range(3))
def test_random_codes(seed: int) -> None:
    """Backends agree on random codes, column subsets and parent indices (DuckDB; Spark above)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, 4)
    codes = np.stack([rng.integers(0, s, 500) for s in sizes], axis=1)
    pcodes = np.stack([rng.integers(0, s, 40) for s in sizes[:2]], axis=1)
    idx = rng.integers(-2, 40, 500)
    a, b = PandasBackend(), DuckDBBackend(threads=1)
    cols = list(rng.permutation(4)[:rng.integers(0, 5)])
    csz = [int(sizes[c]) for c in cols]
    np.testing.assert_array_equal(a.marginal(codes, cols, csz), b.marginal(codes, cols, csz))
    small = codes.astype(np.uint8)  # relviz.encoding.code_dtype: engines count the small type
    np.testing.assert_array_equal(a.marginal(codes, cols, csz), b.marginal(small, cols, csz))
    np.testing.assert_array_equal(a.parent_counts(idx, 40), b.parent_counts(idx, 40))
    q = [Cross(tuple(cols), (1, 0), (*csz, int(sizes[1]), int(sizes[0]))), Cross((), (), ())]
    for x, y in zip(a.cross(codes, pcodes, idx, q), b.cross(codes, pcodes, idx, q)):
        np.testing.assert_array_equal(x, y)
    b.close()


def test_get_backend() -> None:
    assert isinstance(Curator(shop_db()[0]).backend, PandasBackend)
    assert isinstance(get_backend("duckdb"), DuckDBBackend)
    mine = PandasBackend()
    assert get_backend(mine) is mine and isinstance(mine, CountBackend)
    with pytest.raises(ValueError, match="unknown count backend"):
        get_backend("polars")
    with pytest.raises(TypeError):
        get_backend(object())  # type: ignore[arg-type]


def test_a_seeded_run_is_the_same_on_every_backend(other: CountBackend) -> None:
    """Same counts → same noise draws → the same synthetic database (and the same ledger)."""
    import relviz.datasets
    from relviz.synthesizer import RelationalSynthesizer

    db = relviz.datasets.load("galton")
    ref = RelationalSynthesizer(random_state=7).fit(db)
    run = RelationalSynthesizer(random_state=7, backend=other).fit(db)
    expected, got = ref.sample(), run.sample()
    for t in db.schema.tables:
        pd.testing.assert_frame_equal(got[t.name], expected[t.name])
    assert [(r.target, r.query) for r in run.curator_log_.reads] == \
        [(r.target, r.query) for r in ref.curator_log_.reads]
    assert [(e.component, e.rho) for e in run.ledger_] == [(e.component, e.rho) for e in ref.ledger_]
    # the fit's end released every private array the engine had registered; the backend (the
    # caller's) stays usable
    assert other._reg._tables == {}
    np.testing.assert_array_equal(other.marginal(np.zeros((3, 1), dtype=np.uint8), [0], [1]), [3])
    other.forget()


def test_cli_backend_option() -> None:
    from relviz.cli import _parser

    args = _parser().parse_args(["synth", "--dataset", "galton", "--out", "x", "--backend", "duckdb"])
    assert args.backend == "duckdb"
    assert _parser().parse_args(["synth", "--dataset", "galton", "--out", "x"]).backend == "pandas"
