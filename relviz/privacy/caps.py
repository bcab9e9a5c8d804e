"""Choosing a degree cap τ with differential privacy: a DP quantile of the degrees.

A cap picked while looking at the real degree histogram (the Schema editor's curator view) is a
function of the private data, so the release built on it is not differentially private; relviz
records such caps (``PrivacyUnit.cap_sources``) and the ledger says so. This module is the DP way:
the exponential mechanism picks τ among public candidates ``lo…hi`` with the quantile utility

    u(τ) = −| #{parents with degree ≤ τ} − q·n |

(Smith, "Privacy-preserving statistical estimation with optimal convergence rates", STOC 2011,
§3; the utility-based exponential mechanism of McSherry & Talwar 2007), and its ρ = ε²/8 (Cesar &
Rogers 2021) is charged to the run's ledger as the first release.

Sensitivity of ``u`` (from the unit's neighbour, ``relviz.privacy.sensitivity``): every parent
whose degree changes moves ``#{degree ≤ τ}`` by at most 1, and every removed parent also moves
``q·n`` by ``q``. Entity unit: ``g_rem + g_mod + q·g_rem`` groups; row unit (table sizes public):
the ``2·hi + 1`` groups one row can change when no parent exceeds ``hi`` (degrees are clipped at
``hi`` first, which is what makes ``hi`` a cap for this release).

Why relviz writes this itself: OpenDP's quantile measurements work on one column of scalars under
its own neighbouring relation; here the sensitivity is the relational unit's, and the release goes
through relviz's one accountant.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from relviz.database import Database
from relviz.errors import SchemaError
from relviz.privacy.accountant import Accountant
from relviz.privacy.measure import Curator
from relviz.privacy.mechanisms import em_epsilon, exponential_mechanism
from relviz.privacy.sensitivity import multipliers

__all__ = ["CapRelease", "dp_degree_cap", "quantile_sensitivity", "with_dp_caps"]


@dataclass(frozen=True)
class CapRelease:
    """A DP-chosen cap.

    Attributes:
        fk: The foreign key.
        tau: The released cap τ.
        quantile: Target quantile ``q`` of the degrees.
        rho: zCDP cost (exact).
        sensitivity: Utility sensitivity used.
        candidates: ``(lo, hi)``, public.
    """

    fk: str
    tau: int
    quantile: float
    rho: Fraction
    sensitivity: float
    candidates: tuple[int, int]

    def source(self) -> dict[str, Any]:
        """The ``PrivacyUnit.cap_sources`` entry of this release."""
        return {"how": "dp", "quantile": self.quantile, "rho": str(self.rho),
                "sensitivity": self.sensitivity, "candidates": list(self.candidates)}


def quantile_sensitivity(db_schema, fk: str, quantile: float, hi: int) -> float:  # noqa: ANN001
    """Sensitivity of the quantile utility of ``fk``'s degrees (see the module docstring).

    Raises:
        SchemaError: no privacy unit.
    """
    unit = db_schema.privacy_unit
    if unit is None:
        raise SchemaError("the schema has no privacy unit")
    # a provisional cap for fk: its own groups' g_rem/g_mod do not depend on it
    mult = multipliers(db_schema.with_cap(fk, hi))
    if mult.row_unit:
        return float(2 * hi + 1)
    return float(mult.g_rem[fk] + mult.g_mod[fk] + quantile * mult.g_rem[fk])


def dp_degree_cap(db: Database, fk: str, *, quantile: float = 0.95, rho: Fraction | float,
                  candidates: tuple[int, int] = (1, 100), rng: np.random.Generator,
                  accountant: Accountant | None = None) -> CapRelease:
    """Release a degree cap τ ≈ the ``quantile`` of ``fk``'s degrees, with ρ-zCDP.

    Args:
        db: The private database (read through the measurement module).
        fk: FK name (child → parent).
        quantile: Target quantile in (0, 1].
        rho: zCDP budget of this release.
        candidates: Public range ``(lo, hi)`` of caps, 1 ≤ lo ≤ hi.
        rng: Noise source.
        accountant: Charged when given (a fresh one of budget ``rho`` otherwise).

    Returns:
        :class:`CapRelease`; put it in the schema with
        ``schema.with_cap(fk, r.tau, source=r.source())`` so the run's ledger charges it.

    Raises:
        ValueError: bad quantile or candidates. BudgetError: the accountant refuses.
    """
    lo, hi = int(candidates[0]), int(candidates[1])
    if not 0 < quantile <= 1:
        raise ValueError("quantile must be in (0, 1]")
    if not 1 <= lo <= hi:
        raise ValueError("candidates must satisfy 1 ≤ lo ≤ hi")
    rho = Fraction(rho)
    schema = db.schema
    sens = quantile_sensitivity(schema, fk, quantile, hi)
    parent = schema.table(schema.foreign_key(fk).parent)
    if parent.public:  # public facts only: the parent's row count bounds the utility's spread
        n_par = int(db.row_counts()[parent.name])
        eps_em = em_epsilon(rho)
        ratio = eps_em * quantile * n_par / (2 * sens)  # log of the largest odds ratio
        if ratio < math.log(hi - lo + 1):
            warnings.warn(
                f"DP cap of {fk}: mostly noise — the public parent {parent.name!r} has {n_par:,} "
                f"rows, so any candidate in {lo}…{hi} is at most e^{ratio:.2f} times as likely as "
                f"any other at ρ = {float(rho):.3g} (utility sensitivity {sens:g}); the cap will be "
                "close to random, and the truncation it implies may drop most of the child rows. "
                "Declare a public cap, or link FKs to public parents with a linker (PrivLava's "
                "mixed mode, preset 'privlava-degree')", UserWarning, stacklevel=2)
        # every candidate at or above the largest degree scores −(1−q)·n, as does the quantile's
        # neighbourhood: the utility cannot prefer the smallest of them, and at a small ρ the
        # plateau's many candidates outweigh the quantile (TPC-H lineitem → partsupp at ε 0.4,
        # real 0.99-quantile 7: τ = 17, 24, 23 drawn)
        elif (plateau := eps_em * (1 - quantile) * n_par / (2 * sens)) < math.log(hi - lo + 1):
            warnings.warn(
                f"DP cap of {fk}: likely above the {quantile:g}-quantile — every candidate above "
                f"the largest degree scores −(1−q)·n = −{(1 - quantile) * n_par:,.0f} (public "
                f"parent {parent.name!r}, {n_par:,} rows), at most e^{plateau:.2f} times less likely "
                f"than the quantile at ρ = {float(rho):.3g}, and there are up to {hi - lo + 1} of "
                f"them, so τ often lands anywhere up to {hi}. Narrow the candidates (a smaller "
                "upper end), spend more ρ on the cap, or declare a public cap",
                UserWarning, stacklevel=2)
    deg = np.minimum(Curator(db).foreign_key(fk).degrees(), hi)
    taus = np.arange(lo, hi + 1)
    below = np.searchsorted(np.sort(deg), taus, side="right")  # #{degree ≤ τ}
    scores = -np.abs(below - quantile * deg.size)
    acc = accountant or Accountant(rho, delta=0.0)
    j = exponential_mechanism(scores.astype(float), accountant=acc, rho=rho, sensitivity=sens,
                              rng=rng, label=f"degree cap of {fk}: DP {quantile:g}-quantile",
                              component="caps", module="caps",
                              source="exponential mechanism, quantile utility (Smith 2011)")
    return CapRelease(fk, int(taus[j]), float(quantile), rho, sens, (lo, hi))


def with_dp_caps(db: Database, *, rho: Fraction | float, quantile: float = 0.99,
                 candidates: tuple[int, int] = (1, 100), rng: np.random.Generator,
                 fks: list[str] | None = None) -> tuple[Database, list[CapRelease]]:
    """Give every private FK without a cap (or those in ``fks``) a DP-chosen cap τ.

    Methods that bound a group's contribution need τ on every private FK (PrivLava: Cai, Xiao &
    Cormode, SIGMOD 2023, §2 and §7.1, where the papers take the non-private 99 % quantile). Each
    release gets ``rho / (number of FKs)`` and goes into ``PrivacyUnit.cap_sources``, so the run's
    ledger charges it first. Caps of FKs to public parents are declared constraints: children
    beyond τ are dropped before the run, which is not a stable transformation there, and the
    ledger says that the guarantee holds for the truncated database.

    Returns:
        ``(database with the new schema, releases)``; the input is not modified.
    """
    schema = db.schema
    unit = schema.privacy_unit
    caps = unit.caps if unit is not None else {}
    todo = fks if fks is not None else [fk.name for fk in schema.private_foreign_keys
                                        if fk.name not in caps]
    if not todo:
        return db, []
    each = Fraction(rho) / len(todo)
    out, releases = db, []
    for name in todo:
        r = dp_degree_cap(out, name, quantile=quantile, rho=each, candidates=candidates, rng=rng)
        releases.append(r)
        out = out.with_schema(out.schema.with_cap(name, r.tau, source=r.source()), validate=False)
    return out, releases


def cap_releases_rho(schema) -> Fraction:  # noqa: ANN001 - Schema
    """Total ρ of the schema's DP-chosen caps (``PrivacyUnit.cap_sources`` with ``how="dp"``)."""
    unit = schema.privacy_unit
    if unit is None:
        return Fraction(0)
    return sum((Fraction(src["rho"]) for src in unit.cap_sources.values() if src.get("how") == "dp"),
               Fraction(0))


def charge_cap_releases(accountant: Accountant, schema) -> None:  # noqa: ANN001 - Schema
    """Record the schema's DP cap releases as the run's first ledger entries (component
    ``"caps"``); they were drawn before the run, by :func:`dp_degree_cap`."""
    unit = schema.privacy_unit
    if unit is None:
        return
    for fk, src in unit.cap_sources.items():
        if src.get("how") != "dp":
            continue
        rho = Fraction(src["rho"])
        accountant.charge(f"degree cap of {fk}: DP {src['quantile']:g}-quantile (released before "
                          f"the run: τ = {unit.caps[fk]})", rho, component="caps", module="caps",
                          mechanism="exponential", sensitivity=float(src["sensitivity"]),
                          epsilon_em=em_epsilon(rho),
                          source="exponential mechanism, quantile utility (Smith 2011)")
