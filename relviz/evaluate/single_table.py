"""The single-table benchmark's three measures — **curator view (not private)**.

Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data Synthesis",
§8.3 and their evaluation code; every function reads real data, so its numbers are outside the DP
guarantee (docs/evaluation.md):

* :func:`fidelity_error` — total variation distance of low-order marginals. Numeric (and
  datetime) columns are put into 100 points over the joint [min, max] of the real and synthetic
  values, ``round(99·(x − min)/(max − min))`` (so the two end bins are half-width, as the
  benchmark's code does), categorical columns keep their values (null is a value); for each pair
  ``½·Σ|p_syn − p_real|`` over the union of observed cells; the **fidelity error** is the mean over
  pairs (also returned: per-pair and per-column TVD, the mean 1-way TVD).
* :func:`query_error` — 1,000 random queries (fixed seed), each a conjunction over 3 distinct
  attributes: a range ``lo ≤ x ≤ hi`` on a numeric attribute (two uniform draws between the real
  data's min and max, sorted), a point ``x = v`` on a categorical one (v uniform over the real
  data's values); the error is the mean ``|q(syn) − q(real)|`` of the answered fractions.
  ``benchmark_mode=True`` reproduces the benchmark code's averaging over the 1-, 2- and
  3-attribute prefixes of every query.
* :func:`ml_efficacy` — train on synthetic, test on real (TSTR) against train on real, test on
  real (TRTR): scikit-learn RandomForest and HistGradientBoosting with fixed hyper-parameters;
  macro-F1 (the benchmark's headline), accuracy and ROC-AUC (binary) for a categorical target, R²
  and RMSE for a numeric one. Categorical features are ordinal codes over the union of values.
* :func:`holdout_split` (the benchmark evaluates on a held-out test split) and
  :func:`exact_match_rate` (share of synthetic rows equal to some training row: a heuristic, not
  a privacy measure).

Why relviz writes these itself: they are a few vectorised numpy/pandas lines each, and the
benchmark's exact binning and query protocol have no package implementation; the models are
scikit-learn's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.schema import Table

__all__ = ["FidelityResult", "fidelity_error", "query_error", "ml_efficacy", "holdout_split", "exact_match_rate",
           "benchmark_codes"]

BINS = 100


def _numeric(table: Table) -> dict[str, bool]:
    return {a.name: a.kind in ("numeric", "datetime") for a in table.attributes}


def _as_float(s: pd.Series) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(s):
        out = s.astype("int64").to_numpy(dtype=np.float64)
        out[s.isna().to_numpy()] = np.nan
        return out
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)


def benchmark_codes(real: pd.Series, syn: pd.Series, numeric: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Joint codes of one column of the real and synthetic frames (the benchmark's binning).

    Returns:
        ``(real codes, synthetic codes, number of codes)``, int64; null is its own code.
    """
    if numeric:
        r, s = _as_float(real), _as_float(syn)
        both = np.concatenate([r, s])
        finite = both[np.isfinite(both)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        span = hi - lo if hi > lo else 1.0

        def code(x: np.ndarray) -> np.ndarray:
            out = np.full(x.shape, BINS, dtype=np.int64)  # null
            ok = np.isfinite(x)
            out[ok] = np.rint((BINS - 1) * (x[ok] - lo) / span).astype(np.int64)
            return out

        return code(r), code(s), BINS + 1
    cats = pd.Categorical(pd.concat([real.astype(object), syn.astype(object)], ignore_index=True))
    codes = cats.codes.astype(np.int64)
    codes = np.where(codes < 0, len(cats.categories), codes)  # null
    return codes[: len(real)], codes[len(real):], len(cats.categories) + 1


@dataclass(frozen=True)
class FidelityResult:
    """Fidelity error and its parts.

    Attributes:
        error: Mean 2-way TVD over attribute pairs (the benchmark's fidelity error; 0 = identical).
        mean_1way: Mean 1-way TVD over attributes.
        pairs: Frame ``a, b, tvd`` sorted worst first.
        columns: Frame ``attribute, tvd``.
    """

    error: float
    mean_1way: float
    pairs: pd.DataFrame
    columns: pd.DataFrame

    def worst(self, k: int = 10) -> pd.DataFrame:
        return self.pairs.head(k)


def _tvd(a: np.ndarray, b: np.ndarray, size: int) -> float:
    pa = np.bincount(a, minlength=size) / max(len(a), 1)
    pb = np.bincount(b, minlength=size) / max(len(b), 1)
    return 0.5 * float(np.abs(pa - pb).sum())


def fidelity_error(real: pd.DataFrame, syn: pd.DataFrame, table: Table,
                   attributes: Sequence[str] | None = None) -> FidelityResult:
    """The benchmark's fidelity error (mean 2-way TVD) with its binning (module docstring).

    Args:
        real: Real rows (the held-out test split to follow the benchmark).
        syn: Synthetic rows.
        table: The table's schema (which columns are numeric).
        attributes: Columns to compare (default: the table's attributes).
    """
    attrs = list(attributes or [a.name for a in table.attributes])
    num = _numeric(table)
    codes = {a: benchmark_codes(real[a], syn[a], num.get(a, False)) for a in attrs}
    cols = pd.DataFrame({"attribute": attrs, "tvd": [_tvd(*codes[a]) for a in attrs]})
    rows = []
    for a, b in itertools.combinations(attrs, 2):
        ra, sa, na = codes[a]
        rb, sb, nb = codes[b]
        rows.append((a, b, _tvd(ra * nb + rb, sa * nb + sb, na * nb)))
    pairs = pd.DataFrame(rows, columns=["a", "b", "tvd"]).sort_values("tvd", ascending=False, ignore_index=True)
    err = float(pairs["tvd"].mean()) if len(pairs) else float(cols["tvd"].mean() if len(cols) else 0.0)
    return FidelityResult(err, float(cols["tvd"].mean()) if len(cols) else 0.0, pairs, cols)


def query_error(real: pd.DataFrame, syn: pd.DataFrame, table: Table, *, n_queries: int = 1000,
                width: int = 3, seed: int = 0, benchmark_mode: bool = False,
                attributes: Sequence[str] | None = None) -> float:
    """Mean absolute error of random range/point conjunctions (module docstring).

    Args:
        real, syn: Real (test) and synthetic rows.
        table: The table's schema (numeric columns get ranges, the others points).
        n_queries: Number of queries (1,000 in the benchmark).
        width: Attributes per query (3), capped at the number of attributes.
        seed: Seed of the queries (fixed, so every synthetic table answers the same queries).
        benchmark_mode: Average over the 1…width-attribute prefixes of every query, as the
            benchmark's code does; default: full queries only.
    """
    attrs = list(attributes or [a.name for a in table.attributes])
    if not attrs or len(real) == 0:
        return float("nan")
    num = _numeric(table)
    rng = np.random.default_rng(seed)
    width = min(width, len(attrs))
    rv = {a: (_as_float(real[a]) if num.get(a) else real[a].astype(object).to_numpy()) for a in attrs}
    sv = {a: (_as_float(syn[a]) if num.get(a) else syn[a].astype(object).to_numpy()) for a in attrs}
    values = {a: pd.unique(real[a].dropna().astype(object)) for a in attrs if not num.get(a)}
    errs = []
    for _ in range(int(n_queries)):
        cols = rng.choice(len(attrs), size=width, replace=False)
        mr = np.ones(len(real), dtype=bool)
        ms = np.ones(len(syn), dtype=bool)
        for k, c in enumerate(cols):
            a = attrs[c]
            if num.get(a):
                x = rv[a][np.isfinite(rv[a])]
                lo, hi = (np.sort(rng.uniform(x.min(), x.max(), 2)) if x.size else (0.0, 0.0))
                mr &= (rv[a] >= lo) & (rv[a] <= hi)
                ms &= (sv[a] >= lo) & (sv[a] <= hi)
            else:
                v = values[a][rng.integers(len(values[a]))] if len(values[a]) else None
                mr &= rv[a] == v
                ms &= sv[a] == v
            if benchmark_mode or k == width - 1:
                errs.append(abs(mr.mean() - (ms.mean() if len(syn) else 0.0)))
    return float(np.mean(errs))


def holdout_split(df: pd.DataFrame, fraction: float = 0.2, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, holdout)``: a uniformly random ``fraction`` of the rows held back (fixed seed)."""
    if not 0 < fraction < 1:
        raise ValueError("fraction must be in (0, 1)")
    rng = np.random.default_rng(seed)
    hold = rng.random(len(df)) < fraction
    return df[~hold].reset_index(drop=True), df[hold].reset_index(drop=True)


def _features(frames: list[pd.DataFrame], cols: list[str], num: dict[str, bool]) -> list[np.ndarray]:
    out = [np.empty((len(f), len(cols))) for f in frames]
    for j, c in enumerate(cols):
        if num.get(c):
            for o, f in zip(out, frames):
                o[:, j] = _as_float(f[c])
        else:
            cats = pd.Categorical(pd.concat([f[c].astype(object) for f in frames], ignore_index=True))
            codes = cats.codes.astype(np.float64)
            codes[codes < 0] = np.nan
            start = 0
            for o, f in zip(out, frames):
                o[:, j] = codes[start:start + len(f)]
                start += len(f)
    return out


def ml_efficacy(train: pd.DataFrame, test: pd.DataFrame, syn: pd.DataFrame, table: Table, target: str, *,
                seed: int = 0) -> pd.DataFrame:
    """TSTR (train on ``syn``) and TRTR (train on ``train``), both tested on ``test``.

    Args:
        train: Real training rows (what the synthesiser saw).
        test: Real held-out rows.
        syn: Synthetic rows.
        table: The table's schema.
        target: The column to predict (categorical: classification; numeric: regression).
        seed: Models' random state.

    Returns:
        Frame ``model, setting ("TSTR" | "TRTR"), metric, value`` (macro_f1, accuracy, roc_auc for
        binary targets; r2, rmse for numeric targets).
    """
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.metrics import accuracy_score, f1_score, mean_squared_error, r2_score, roc_auc_score

    num = _numeric(table)
    feats = [a.name for a in table.attributes if a.name != target]
    x_train, x_test, x_syn = _features([train, test, syn], feats, num)
    regression = bool(num.get(target))
    if regression:
        y_train, y_test, y_syn = (_as_float(f[target]) for f in (train, test, syn))
        models = {"random_forest": lambda: RandomForestRegressor(n_estimators=100, random_state=seed, n_jobs=1),
                  "hist_gradient_boosting": lambda: HistGradientBoostingRegressor(random_state=seed)}
    else:
        cats = pd.Categorical(pd.concat([f[target].astype(str) for f in (train, test, syn)], ignore_index=True))
        codes = cats.codes
        y_train, y_test, y_syn = codes[:len(train)], codes[len(train):len(train) + len(test)], codes[len(train) + len(test):]
        models = {"random_forest": lambda: RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1),
                  "hist_gradient_boosting": lambda: HistGradientBoostingClassifier(random_state=seed)}
    rows = []
    for name, make in models.items():
        for setting, (x, y) in (("TRTR", (x_train, y_train)), ("TSTR", (x_syn, y_syn))):
            keep = np.isfinite(y) if regression else np.ones(len(y), dtype=bool)
            if keep.sum() == 0 or (not regression and len(np.unique(y)) < 2):
                rows += [(name, setting, m, float("nan")) for m in (("r2", "rmse") if regression else ("macro_f1", "accuracy"))]
                continue
            model = make()
            if name == "random_forest":  # no NaN support in older forests: nulls as −1
                model.fit(np.nan_to_num(x[keep], nan=-1.0), y[keep])
                pred_in = np.nan_to_num(x_test, nan=-1.0)
            else:
                model.fit(x[keep], y[keep])
                pred_in = x_test
            pred = model.predict(pred_in)
            if regression:
                ok = np.isfinite(y_test)
                rows += [(name, setting, "r2", float(r2_score(y_test[ok], pred[ok]))),
                         (name, setting, "rmse", float(np.sqrt(mean_squared_error(y_test[ok], pred[ok]))))]
                continue
            rows += [(name, setting, "macro_f1", float(f1_score(y_test, pred, average="macro"))),
                     (name, setting, "accuracy", float(accuracy_score(y_test, pred)))]
            if len(cats.categories) == 2 and len(np.unique(y_test)) == 2:
                proba = model.predict_proba(pred_in)
                pos = list(model.classes_).index(1) if 1 in model.classes_ else None
                score = proba[:, pos] if pos is not None else np.zeros(len(y_test))
                rows.append((name, setting, "roc_auc", float(roc_auc_score(y_test, score))))
    return pd.DataFrame(rows, columns=["model", "setting", "metric", "value"])


def exact_match_rate(train: pd.DataFrame, syn: pd.DataFrame, columns: Sequence[str]) -> float:
    """Share of synthetic rows identical (on ``columns``) to some training row — a heuristic
    sanity check, **not** a privacy measure (the guarantee is the ledger's)."""
    cols = list(columns)
    if len(syn) == 0:
        return 0.0
    key = pd.util.hash_pandas_object(train[cols].astype(str), index=False)
    skey = pd.util.hash_pandas_object(syn[cols].astype(str), index=False)
    return float(skey.isin(set(key)).mean())
