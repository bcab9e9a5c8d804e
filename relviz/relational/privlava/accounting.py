"""PrivLava's sensitivities, processing order and noise calibration (public: no data read).

Cai, Xiao & Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under Differential
Privacy", SIGMOD 2023, §6 (Def. 6.3 multipliers, Lemmas 6.4–6.6, the 20 % / 75 % / 5 % split of
Algorithm 2 and the 20 : 4 : 1 split of Algorithm 1), with relviz's resolutions written out in
docs/methods/privlava.md:

* **Entity unit** (the paper's): the tuple multiplier ``μ_t`` and group multiplier ``μ_g`` come
  from :class:`relviz.privacy.sensitivity.Multipliers` (``r``, ``m``, ``g_rem``, ``g_mod``);
  ``strict`` accounting counts a *modified* group or tuple as √2 in L2 (2 in L1), ``paper``
  accounting as 1. A public parent augmented with latent columns has ``m(P) = Σ_{e into P}
  g_mod(e)`` modified rows (its latent columns change; it loses no row).
* **Tuple unit** (relviz's: one row of one private table changes, values and own FK values):
  for each table ``T`` whose row changes, groups of an FK ``e = C → P`` change ``g_T(e) =
  2·[T = C] + m_T(C)`` (the row leaves one group and joins another; each row of ``C`` whose
  inherited latent columns changed changes its group), and ``m_T(P) = Σ_{e into P} g_T(e)`` rows of
  ``P`` get new latent columns (children first). Every changed group or row moves between cells
  (√2 in L2, 2 in L1), so ``Δ_cnt = √2·max_T g_T(e)``, ``Δ_lat = τ·Δ_cnt`` (a group's latent
  contribution has L1 ≤ τ, and ``‖v − v'‖₂ ≤ √2·τ`` for non-negative vectors), table histograms
  ``√2·max_T([T = R] + m_T(R))`` and scores twice the rows. Strict only.
* **Own columns** (relviz's, both units): a row that only gets new latent columns keeps its own
  attribute values, so a marginal or score on a table's own attributes (no latent column) counts
  only the rows the neighbour removes or changes: ``r(R)`` under the entity unit, one row (√2 in
  L2, 2 in L1) under the tuple unit (``T = R``), 0 for a public table
  (``Sensitivities.hist_own``). The single-relation models release those marginals at that
  sensitivity and the ones with a latent column at the full one (``relviz.single.mst``).
* The row unit (a row re-points up to 2τ children) is not covered: :func:`sensitivities` refuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from relviz.errors import Problem
from relviz.privacy.sensitivity import Multipliers
from relviz.schema import ForeignKey, Schema

__all__ = ["Sensitivities", "sensitivities", "fk_order", "Calibration", "calibrate", "latent_k",
           "n_inc", "LAMBDA", "K_MAX", "unit_problems"]

LAMBDA = 20.0
"""λ of λ-usefulness (§4.3 Eq. 5)."""
K_MAX = 25
"""Largest latent domain ``k`` (``K = k² ≤ 625``; docs/methods/privlava.md §2)."""
MEAN_ABS = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class Sensitivities:
    """L2 sensitivities of PrivLava's queries (see the module docstring).

    Attributes:
        cnt: ``{fk: Δ}`` of ``cnt(z)`` and ``cnt(s, z)`` (each).
        latent: ``{fk: Δ}`` of one latent marginal (``τ_e · cnt``).
        hist: ``{table: Δ}`` of a histogram query (marginal, total) on the table as PrivLava
            models it (inherited latent columns included; public tables augmented).
        score: ``{table: Δ}`` of an L1 score on the table (MST selection, ``err~``).
        hist_own, score_own: ``{table: Δ}`` of the same queries on the table's own attributes
            only (no latent column): the rows that only get new latent columns do not change
            them, so only the rows the neighbour removes (entity unit: ``r``) or changes (tuple
            unit: one row, √2 and 2) count; 0 for a public table.
    """

    cnt: dict[str, float]
    latent: dict[str, float]
    hist: dict[str, float]
    score: dict[str, float]
    hist_own: dict[str, float] = field(default_factory=dict)
    score_own: dict[str, float] = field(default_factory=dict)


def unit_problems(schema: Schema) -> list[Problem]:
    """Units PrivLava's accounting does not cover."""
    unit = schema.privacy_unit
    if unit is None:
        return [Problem("no_unit", "PrivLava needs a privacy unit (entity or tuple)")]
    if unit.entity is None and unit.neighbour != "tuple":
        return [Problem("unsupported_unit",
                        "PrivLava's sensitivity analysis covers the entity unit (the paper's: one "
                        "entity and everything depending on it) and the tuple unit (one row of one "
                        "table); under the row unit one row re-points up to 2τ children, which it "
                        "does not bound. Choose the entity or the tuple unit, or another method")]
    return []


def fk_order(schema: Schema, linked: frozenset[str] | set[str] = frozenset()) -> list[ForeignKey]:
    """Private FKs in PrivLava's ascending order ``<`` (PrivLava §5): every FK of a child before the FKs
    of its parents; within one child, FKs to public parents first and to private parents last,
    then by name. Synthesis runs in the reverse order. FKs in ``linked`` (to public parents,
    linked by a per-FK linker in relviz's mixed mode) are left out."""
    order = list(reversed(schema.topological_order()))  # children first
    out: list[ForeignKey] = []
    for t in order:
        if schema.table(t).public:
            continue
        fks = sorted((f for f in schema.fks_from(t) if f.name not in linked),
                     key=lambda f: (not schema.table(f.parent).public, f.name))
        out.extend(fks)
    return out


def _cap(schema: Schema, fk: ForeignKey) -> int:
    unit = schema.privacy_unit
    tau = unit.caps.get(fk.name) if unit is not None else None
    if tau is None:
        raise KeyError(f"PrivLava needs a group-size cap τ on {fk.name}")
    return int(tau)


def sensitivities(schema: Schema, mult: Multipliers, linked: frozenset[str] | set[str] = frozenset()
                  ) -> Sensitivities:
    """The docs/methods/privlava.md §4 sensitivities of every PrivLava query on ``schema`` (public); FKs in ``linked``
    carry no latent columns (mixed mode).

    Raises:
        KeyError: a private FK has no cap τ.
        ValueError: the unit is not covered (:func:`unit_problems`).
    """
    if unit_problems(schema):
        raise ValueError("; ".join(p.message for p in unit_problems(schema)))
    order = fk_order(schema, linked)
    private = set(schema.private_tables)
    tables = {fk.parent for fk in order} | {fk.child for fk in order} | private
    cnt, latent, hist, score = {}, {}, {}, {}
    if mult.tuple_unit:
        g_max = {fk.name: 0 for fk in order}
        h_max = {t: 0 for t in tables}
        for T in private:
            m = {t: 0 for t in tables}
            for fk in order:  # children first
                g = (2 if fk.child == T else 0) + m[fk.child]
                g_max[fk.name] = max(g_max[fk.name], g)
                m[fk.parent] += g
            for t in tables:
                h_max[t] = max(h_max[t], (1 if t == T else 0) + m[t])
        for fk in order:
            cnt[fk.name] = math.sqrt(2.0) * g_max[fk.name]
            latent[fk.name] = _cap(schema, fk) * cnt[fk.name]
        for t in tables:
            hist[t] = math.sqrt(2.0) * max(h_max[t], 1)
            score[t] = 2.0 * max(h_max[t], 1)
        own = {t: 1.0 if t in private else 0.0 for t in tables}  # only T = t changes own columns
        return Sensitivities(cnt, latent, hist, score, {t: math.sqrt(2.0) * v for t, v in own.items()},
                             {t: 2.0 * v for t, v in own.items()})
    a2, a1 = (math.sqrt(2.0), 2.0) if mult.strict else (1.0, 1.0)
    m_aug = {t: 0 for t in tables}
    for fk in order:
        cnt[fk.name] = mult.g_rem[fk.name] + a2 * mult.g_mod[fk.name]
        latent[fk.name] = _cap(schema, fk) * cnt[fk.name]
        m_aug[fk.parent] += mult.g_mod[fk.name]
    hist_own, score_own = {}, {}
    for t in tables:
        if t in private:
            r, m = mult.r[t], mult.m[t]
        else:
            r, m = 0, m_aug[t]
        hist[t] = r + a2 * m
        score[t] = r + a1 * m
        hist_own[t] = score_own[t] = float(r)  # surviving rows keep their own columns
    return Sensitivities(cnt, latent, hist, score, hist_own, score_own)


def n_inc(d: int) -> int:
    """Latent marginals added per selection round: ``max(1, round(d/4))`` (docs/methods/privlava.md §2)."""
    return max(1, int(round(d / 4)))


@dataclass(frozen=True)
class Calibration:
    """ρ and σ of every release of one Algorithm 2 run (PrivLava §6; docs/methods/privlava.md §4; in zCDP: consumption = 2ρ).

    Attributes:
        rho_obs: ρ of line 1 (the single-relation run on the child).
        rho_z, rho_size: ρ of each ``cnt(z)`` / ``cnt(s, z)`` release (one per EM iteration).
        rho_latent: ρ of each latent marginal release.
        rho_err: ρ of each ``err~`` score.
        sigma_z, sigma_size, sigma_latent, sigma_err: The resulting σ's.
        m0: Initial latent marginals ``2d + 1``; ``L_tot``: latent releases planned.
    """

    rho_obs: Fraction
    rho_z: Fraction
    rho_size: Fraction
    rho_latent: Fraction
    rho_err: Fraction
    sigma_z: float
    sigma_size: float
    sigma_latent: float
    sigma_err: float
    m0: int
    L_tot: int  # noqa: N815 - the paper's symbol
    n_it: int


def _sigma(delta: float, rho: Fraction) -> float:
    return delta / math.sqrt(2.0 * float(rho)) if rho > 0 else math.inf


def calibrate(rho: Fraction, *, d: int, delta_cnt: float, delta_latent: float, delta_err: float,
              T: int = 6, T_C: int = 2, n_C: int = 400,  # noqa: N803 - the paper's symbols
              split: tuple[Fraction, Fraction, Fraction] = (Fraction(1, 5), Fraction(3, 4), Fraction(1, 20)),
              em_split: tuple[int, int, int] = (20, 4, 1), m0_paper: bool = False) -> Calibration:
    """Split ``rho`` of one FK's Algorithm 2 run and derive every σ (docs/methods/privlava.md §4).

    ``split`` = (line 1, all Algorithm 1 calls, ``err~`` scores); ``em_split`` = latent marginals :
    ``cnt(s, z)`` : ``cnt(z)`` over the run's ``N_it = T + T_C`` iterations. ``m_0 = 2d + 1``
    (``2d`` with ``m0_paper``). When every planned release is made the run spends ``rho`` exactly.
    """
    rho = Fraction(rho)
    obs, em, sel = (rho * s for s in split)
    total = sum(em_split)
    lat_t, size_t, z_t = (em * Fraction(w, total) for w in em_split)
    n_it = T + T_C
    m0 = 2 * d + (0 if m0_paper else 1)
    L_tot = n_it * m0 + n_inc(d) * T_C * (T_C + 1) // 2  # noqa: N806
    rho_latent = lat_t / L_tot
    rho_size = size_t / n_it
    rho_z = z_t / n_it
    rho_err = sel / (n_C * T_C) if n_C * T_C else Fraction(0)
    return Calibration(obs, rho_z, rho_size, rho_latent, rho_err,
                       _sigma(delta_cnt, rho_z), _sigma(delta_cnt, rho_size),
                       _sigma(delta_latent, rho_latent), _sigma(delta_err, rho_err), m0, L_tot, n_it)


def latent_k(n_noisy: float, sigma_latent: float, max_domain: int, *, lam: float = LAMBDA,
             k_max: int = K_MAX) -> tuple[int, bool]:
    """The latent domain size ``k`` of §4.7: the largest ``k ≤ k_max`` with ``{Z₁, Z₂}`` and every
    ``{Z_i, A}`` λ-useful (``ñ/|M| ≥ λ·√(2/π)·σ_ℓ``). Returns ``(k, useful)``; ``useful`` is False
    when even ``k = 2`` fails (then ``k = 2``)."""
    thr = lam * MEAN_ABS * sigma_latent
    best = 0
    for k in range(2, k_max + 1):
        if n_noisy / (k * k) >= thr and n_noisy / (k * max(max_domain, 1)) >= thr:
            best = k
    return (best, True) if best else (2, False)
