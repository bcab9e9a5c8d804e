"""benchmarks/link_floor.py: the relinked database keeps every table and degree, breaks the link."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import relviz

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "link_floor.py"
_spec = importlib.util.spec_from_file_location("link_floor", _PATH)
link_floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(link_floor)

FK = "lineitem.l_partkey+l_suppkey->partsupp"


@pytest.fixture(scope="module")
def tpch():
    return relviz.datasets.load("tpch", sf=0.01)


def test_relinked_keeps_tables_and_degrees_and_moves_the_link(tpch):
    before = tpch["lineitem"].copy()
    out = link_floor.relinked(tpch, FK, np.random.default_rng(0))
    li, re = tpch["lineitem"], out["lineitem"]
    assert li.equals(before)  # the caller's frame is untouched
    # every non-FK column and every other table is the real one
    others = [c for c in li.columns if c not in ("l_partkey", "l_suppkey")]
    assert re[others].equals(li[others])
    assert out["orders"].equals(tpch["orders"])
    # each part-supplier keeps its degree, and the composite key moves as one (valid pairs only)
    deg = lambda f: f.groupby(["l_partkey", "l_suppkey"]).size().sort_index()  # noqa: E731
    assert deg(re).equals(deg(li))
    moved = (re["l_partkey"].to_numpy() != li["l_partkey"].to_numpy()).mean()
    # a uniform permutation keeps a row's part with probability about Σ d_p² / n² (tiny here)
    assert moved > 0.99
    # a new seed draws a new link
    again = link_floor.relinked(tpch, FK, np.random.default_rng(1))
    assert not again["lineitem"]["l_partkey"].equals(re["l_partkey"])


def test_relinked_reports_every_unknown_fk(tpch):
    with pytest.raises(KeyError, match="'a'.*'b'"):
        link_floor.relinked(tpch, ["a", "b"], np.random.default_rng(0))


def test_relinking_the_order_link_breaks_q12_and_keeps_q19(tpch):
    """Q12 (ship mode ↔ order priority, the papers' revision) needs ``lineitem → orders``;
    Q19 reads only ``lineitem``'s own columns and ``part`` (Q14 reads the ship date, which the
    order date shifts; Q17 selects no row at sf 0.01), so relinking ``lineitem → orders`` leaves
    it exact (error 0), while Q12 loses the revision's correlation (error > 0)."""
    out = link_floor.relinked(tpch, "lineitem.l_orderkey->orders", np.random.default_rng(0))
    e = link_floor.workload_errors("tpch", tpch, out)
    assert e["Q19"] == pytest.approx(0.0, abs=1e-12)
    assert e["Q12"] > 0.05
