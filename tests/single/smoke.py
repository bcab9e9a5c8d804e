"""The offline smoke recipe of the single-table benchmark gates, and a 2-way TVD helper.

Recipe (Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data
Synthesis" context; relviz's offline stand-in): categorical columns with the given domain sizes,
``X0 ~ U{0..s0−1}``, then ``X_i = (7·X_{i−1} + U{0,1,2}) mod s_i``, replaced by a uniform draw with
probability 0.4 — a noisy Markov chain, so a tree captures it and independence does not.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.schema import Attribute, PrivacyUnit, Schema, Table

SMOKE_SIZES = [2, 5, 9, 16, 30, 7, 4, 12, 20, 3]
SMALL_SIZES = [2, 5, 9, 16, 7, 4]


def smoke_db(n: int = 50_000, seed: int = 0, sizes: list[int] = SMOKE_SIZES) -> Database:
    """One private table ``t`` (key ``id``, columns ``a0…``) of the chain recipe."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, sizes[0], n)]
    for s in sizes[1:]:
        x = (7 * cols[-1] + rng.integers(0, 3, n)) % s
        cols.append(np.where(rng.random(n) < 0.4, rng.integers(0, s, n), x))
    df = pd.DataFrame({f"a{i}": c for i, c in enumerate(cols)})
    df.insert(0, "id", np.arange(n))
    t = Table("t", ("id",), tuple(Attribute.categorical(f"a{i}", list(range(s))) for i, s in enumerate(sizes)))
    return Database(Schema((t,), (), PrivacyUnit("t")), {"t": df})


def tvd2(real: np.ndarray, syn: np.ndarray, sizes: list[int], pairs=None) -> np.ndarray:
    """½·Σ|p_real − p_syn| of the 2-way marginals of ``pairs`` (all pairs by default)."""
    pairs = itertools.combinations(range(len(sizes)), 2) if pairs is None else pairs
    out = []
    for i, j in pairs:
        a = np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=sizes[i] * sizes[j]) / len(real)
        b = np.bincount(syn[:, i] * sizes[j] + syn[:, j], minlength=sizes[i] * sizes[j]) / max(len(syn), 1)
        out.append(0.5 * np.abs(a - b).sum())
    return np.array(out)
