"""One privacy accountant per run, in zero-concentrated DP (ρ), with exact conversions.

Conversions (all in float64, bisection to machine precision):

* ``zcdp_delta(ρ, ε)`` / ``zcdp_rho(ε, δ)`` / ``zcdp_epsilon(ρ, δ)``: the optimal conversion of
  Canonne, Kamath & Steinke (NeurIPS 2020, Prop. 12 / Cor. 13), the one Private-PGM and the
  code of Chen et al.'s benchmark ("Benchmarking differentially private tabular data synthesis") use;
  golden value ρ(1, 1e-5) = 0.030557.
  For α > 1: δ = exp((α−1)(αρ − ε)) / (α−1) · (1 − 1/α)^α, minimised over α.
* ``gdp_delta(ε, μ)`` / ``gdp_mu(ε, δ)`` / ``gdp_epsilon(μ, δ)``: the exact Gaussian-DP curve
  δ(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Dong, Roth & Su, "Gaussian differential privacy",
  JRSS-B 2022; PrivLava, Cai, Xiao & Cormode, SIGMOD 2023, Thm 6.2, whose Eq. 6 prints e^{−ε}: the
  factor is e^{+ε}). Valid only when every release of the run is Gaussian; a Gaussian release
  with ratio Δ/σ is (Δ/σ)-GDP and costs ρ = Δ²/(2σ²), so μ = √(2ρ) for the composition.
* ``rho_closed_form(ε, δ)``: ρ = (√(log(1/δ) + ε) − √log(1/δ))², the bound proven in the
  bi-adjacency paper (Alimohammadi et al., App. D.2, Thm 7, with the square root placed as in their
  Thm 6; docs/methods/biadjacency.md §3.2); valid but looser.

The :class:`Accountant` holds ρ as an exact ``fractions.Fraction`` (the rational value of the
float budget), so shares add up exactly and a run can never "overspend by 1e-17". Every release
is charged *before* noise is drawn; an overspend (of the run, or of a component's planned share)
raises :class:`~relviz.errors.BudgetError` and records nothing.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from scipy.special import log_ndtr

from relviz.errors import BudgetError
from relviz.privacy.noise import NoiseName, check_noise, describe_noise

__all__ = [
    "zcdp_delta",
    "zcdp_rho",
    "zcdp_epsilon",
    "gdp_delta",
    "gdp_mu",
    "gdp_epsilon",
    "rho_closed_form",
    "rho_from_epsilon_delta",
    "epsilon_from_rho",
    "LedgerEntry",
    "Accountant",
    "Conversion",
]

Conversion = Literal["zcdp", "gdp", "closed_form"]


def _bisect(f: Callable[[float], bool], lo: float, hi: float, iters: int = 200) -> float:
    """Largest x in [lo, hi] (to float precision) with f(x) true, f monotone true→false."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid):
            lo = mid
        else:
            hi = mid
    return lo


def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP, optimal conversion (CKS 2020, Prop. 12).

    Args:
        rho: zCDP parameter ρ ≥ 0.
        epsilon: ε ≥ 0.

    Returns:
        δ in [0, 1].
    """
    rho, epsilon = float(rho), float(epsilon)
    if rho < 0 or epsilon < 0:
        raise ValueError("rho and epsilon must be non-negative")
    if rho == 0:
        return 0.0

    # d/dα of the log-bound: (2α − 1)ρ − ε + log(1 − 1/α); increasing in α, so bisect its root.
    def deriv(a: float) -> float:
        return (2 * a - 1) * rho - epsilon + math.log1p(-1.0 / a)

    lo, hi = 1.0 + 1e-12, max(2.0, (epsilon + 1) / (2 * rho) + 2)
    while deriv(hi) < 0:
        hi *= 2
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if deriv(mid) < 0:
            lo = mid
        else:
            hi = mid
    a = 0.5 * (lo + hi)
    log_delta = (a - 1) * (a * rho - epsilon) + a * math.log1p(-1.0 / a) - math.log(a - 1.0)
    return min(1.0, math.exp(log_delta)) if log_delta < 700 else 1.0


def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP (optimal conversion).

    >>> round(zcdp_rho(1.0, 1e-5), 6)
    0.030557
    """
    _check_eps_delta(epsilon, delta)
    hi = epsilon + 1.0
    return _bisect(lambda r: zcdp_delta(r, epsilon) <= delta, 0.0, hi)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP."""
    if not 0 < delta < 1:
        raise ValueError("delta must be in (0, 1)")
    rho = float(rho)
    if rho <= 0:
        return 0.0
    hi = rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12
    # f(e) = "δ(ρ, e) > δ" is true for small e and false for large e.
    return _bisect(lambda e: zcdp_delta(rho, e) > delta, 0.0, hi) if zcdp_delta(rho, 0.0) > delta \
        else 0.0


def _log_diff_exp(a: float, b: float) -> float:
    """log(e^a − e^b) for a ≥ b (−inf when equal)."""
    if b == -math.inf or a - b > 50:
        return a
    if a <= b:
        return -math.inf
    return a + math.log(-math.expm1(b - a))


def gdp_delta(epsilon: float, mu: float) -> float:
    """δ(ε; μ) of μ-GDP: Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Dong, Roth & Su; e^{+ε}, not PrivLava's e^{−ε})."""
    if mu <= 0:
        return 0.0
    a = float(log_ndtr(mu / 2 - epsilon / mu))
    b = epsilon + float(log_ndtr(-mu / 2 - epsilon / mu))
    return max(0.0, math.exp(_log_diff_exp(a, b))) if a > b else 0.0


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest μ with δ(ε; μ) ≤ δ (bisection on (0, 100]); the consumption budget is μ²."""
    _check_eps_delta(epsilon, delta)
    return _bisect(lambda m: gdp_delta(epsilon, m) <= delta, 0.0, 100.0)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε; μ) ≤ δ."""
    if mu <= 0:
        return 0.0
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2
    return _bisect(lambda e: gdp_delta(e, mu) > delta, 0.0, hi)


def rho_closed_form(epsilon: float, delta: float) -> float:
    """ρ = (√(log(1/δ) + ε) − √log(1/δ))² (Alimohammadi et al., App. D.2, Thm 7; docs/methods/biadjacency.md §3.2).

    >>> round(rho_closed_form(2.0, 1e-5), 7)
    0.0800454
    """
    _check_eps_delta(epsilon, delta)
    L = math.log(1 / delta)
    return (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2


def rho_from_epsilon_delta(epsilon: float, delta: float, conversion: Conversion = "zcdp") -> float:
    """ρ bought by (ε, δ) under ``conversion`` (``"gdp"``: ρ = μ²/2 for all-Gaussian plans)."""
    if conversion == "zcdp":
        return zcdp_rho(epsilon, delta)
    if conversion == "gdp":
        return gdp_mu(epsilon, delta) ** 2 / 2
    if conversion == "closed_form":
        return rho_closed_form(epsilon, delta)
    raise ValueError(f"unknown conversion {conversion!r}")


def epsilon_from_rho(rho: float, delta: float, conversion: Conversion = "zcdp") -> float:
    """ε at δ for a total ρ under ``conversion`` (the inverse of :func:`rho_from_epsilon_delta`)."""
    if conversion in ("zcdp",):
        return zcdp_epsilon(rho, delta)
    if conversion == "gdp":
        return gdp_epsilon(math.sqrt(2 * float(rho)), delta)
    if conversion == "closed_form":
        return float(rho) + 2 * math.sqrt(float(rho) * math.log(1 / delta))
    raise ValueError(f"unknown conversion {conversion!r}")


def _check_eps_delta(epsilon: float, delta: float) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number (got {epsilon!r})")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) (got {delta!r})")


@dataclass(frozen=True)
class LedgerEntry:
    """One accounted release.

    Attributes:
        label: What was released, e.g. ``"1-way marginals (14)"``.
        component: The plan component that paid: a table name or an FK name.
        module: Step inside the component (``"measure"``, ``"select"``, ``"degree"``…).
        mechanism: ``"gaussian"``, ``"exponential"`` or ``"laplace"`` (pure ε-DP, charged
            ε²/2; ``sensitivity`` is then the L1 sensitivity).
        rho: zCDP cost (exact).
        sensitivity: L2 sensitivity (Gaussian) or score sensitivity (exponential), privacy-unit
            multipliers included.
        sigma: Noise standard deviation: Gaussian σ, or √2·b for the Laplace mechanism (``None``
            for the exponential mechanism).
        epsilon_em: Exponential-mechanism ε (``None`` for Gaussian).
        count: Number of identical releases this entry stands for (ρ is their total).
        source: Paper, algorithm and equation this release implements.
        at: Wall-clock time of the charge (seconds since the epoch).
        sampler: The distribution the noise was drawn from, e.g. ``"numpy normal"`` or
            ``"opendp discrete Gaussian"`` (see :mod:`relviz.privacy.noise`); empty when the
            caller did not say.
    """

    label: str
    component: str
    module: str
    mechanism: str
    rho: Fraction
    sensitivity: float
    sigma: float | None = None
    epsilon_em: float | None = None
    count: int = 1
    source: str = ""
    at: float = field(default_factory=time.time)
    sampler: str = ""

    def to_dict(self, delta: float | None = None, conversion: Conversion = "zcdp") -> dict[str, Any]:
        d = {
            "label": self.label,
            "component": self.component,
            "module": self.module,
            "mechanism": self.mechanism,
            "rho": float(self.rho),
            "rho_exact": f"{self.rho.numerator}/{self.rho.denominator}",
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
            "epsilon_em": self.epsilon_em,
            "count": self.count,
            "source": self.source,
            "sampler": self.sampler,
        }
        if delta is not None:
            d["epsilon_equivalent"] = epsilon_from_rho(float(self.rho), delta, conversion)
        return d


class Accountant:
    """zCDP accountant of one run: exact sums, per-component caps, a ledger.

    Args:
        rho_total: Total budget ρ (converted exactly to a ``Fraction``).
        delta: The run's δ (for ε reporting).
        epsilon: The (ε, δ) target the budget came from, if any (for reporting).
        conversion: How (ε, δ) ↔ ρ is converted (``"zcdp"``, ``"gdp"``, ``"closed_form"``);
            under ``"gdp"`` only Gaussian releases are accepted.
        budgets: Optional ``{component: ρ}`` caps (exact), e.g. from a :class:`~relviz.plan.Plan`;
            their sum must not exceed ``rho_total``.
        unit: Description of the privacy unit protected (recorded in the ledger).
        notes: Free-text facts recorded in the ledger (public facts used, truncation…).
        noise: The noise sampler every release of the run draws from (see
            :mod:`relviz.privacy.noise`): ``"numpy"`` (floating-point, seedable; the default
            here, so that direct uses stay reproducible) or ``"opendp"`` (exact, from the OS
            CSPRNG, not seedable). Recorded in the ledger.

    Thread-safe: a background run charges while a widget reads.
    """

    def __init__(
        self,
        rho_total: Fraction | float,
        *,
        delta: float,
        epsilon: float | None = None,
        conversion: Conversion = "zcdp",
        budgets: Mapping[str, Fraction | float] | None = None,
        unit: str = "",
        notes: list[str] | None = None,
        noise: NoiseName = "numpy",
    ) -> None:
        self.noise: NoiseName = check_noise(noise)
        self.rho_total = Fraction(rho_total)
        if self.rho_total < 0:
            raise ValueError("rho_total must be non-negative")
        self.delta = float(delta)
        self.epsilon = epsilon
        self.conversion: Conversion = conversion
        self.budgets = {k: Fraction(v) for k, v in (budgets or {}).items()}
        if sum(self.budgets.values(), Fraction(0)) > self.rho_total:
            raise BudgetError("component budgets add up to more than the total budget")
        self.unit = unit
        self.notes: list[str] = list(notes or [])
        self._entries: list[LedgerEntry] = []
        self._spent = Fraction(0)  # running totals keep charge() O(1)
        self._spent_by: dict[str, Fraction] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[LedgerEntry], None]] = []

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float, *, conversion: Conversion = "zcdp",
                           **kw: Any) -> Accountant:
        """An accountant whose total ρ is what (ε, δ) buys under ``conversion``."""
        rho = rho_from_epsilon_delta(epsilon, delta, conversion)
        return cls(rho, delta=delta, epsilon=epsilon, conversion=conversion, **kw)

    # -- state ---------------------------------------------------------------------------------
    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._entries)

    def spent(self, component: str | None = None) -> Fraction:
        """Exact ρ spent (by one component when given)."""
        with self._lock:
            return self._spent if component is None else self._spent_by.get(component, Fraction(0))

    def remaining(self, component: str | None = None) -> Fraction:
        """Exact ρ left (in a component's planned budget when given)."""
        if component is None:
            return self.rho_total - self.spent()
        if component not in self.budgets:
            raise KeyError(f"no budget for component {component!r}")
        return self.budgets[component] - self.spent(component)

    def epsilon_spent(self, delta: float | None = None) -> float:
        """ε at δ (the run's by default) of everything spent so far."""
        return epsilon_from_rho(float(self.spent()), delta or self.delta, self.conversion)

    def on_charge(self, listener: Callable[[LedgerEntry], None]) -> None:
        """Call ``listener(entry)`` after every successful charge (e.g. a live ledger bar)."""
        self._listeners.append(listener)

    def __getstate__(self) -> dict:
        """Pickled without its lock and its listeners (callbacks of a live view, e.g. a widget's
        ledger bar): a loaded accountant has a fresh lock and no listener, and goes on
        refusing any charge past its budgets."""
        with self._lock:
            state = dict(self.__dict__)
            state["_entries"] = list(self._entries)
        del state["_lock"]
        state["_listeners"] = []
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- charging ------------------------------------------------------------------------------
    def charge(
        self,
        label: str,
        rho: Fraction | float,
        *,
        component: str,
        module: str,
        mechanism: Literal["gaussian", "exponential", "laplace"],
        sensitivity: float,
        sigma: float | None = None,
        epsilon_em: float | None = None,
        count: int = 1,
        source: str = "",
        sampler: str = "",
    ) -> LedgerEntry:
        """Record a release of cost ``rho``; call this *before* drawing any noise.

        ``sampler`` names the distribution the noise will be drawn from (ledger only).

        Raises:
            BudgetError: if the release would exceed the total budget or the component's
                planned budget, or if a non-Gaussian release is charged under the GDP
                conversion. Nothing is recorded then.
        """
        rho = Fraction(rho)
        if rho <= 0:
            raise BudgetError(f"{label}: a release must cost a positive ρ (got {float(rho)!r})")
        if self.conversion == "gdp" and mechanism != "gaussian":
            raise BudgetError(f"{label}: the Gaussian-DP conversion only covers Gaussian releases; "
                              "use conversion='zcdp' for plans with selection steps")
        entry = LedgerEntry(label, component, module, mechanism, rho, float(sensitivity),
                            None if sigma is None else float(sigma), epsilon_em, int(count), source,
                            sampler=sampler)
        with self._lock:
            spent = self._spent
            if spent + rho > self.rho_total:
                raise BudgetError(
                    f"{label}: ρ = {float(rho):.6g} would bring the run to {float(spent + rho):.6g} > "
                    f"budget {float(self.rho_total):.6g}; nothing was released")
            c_spent = self._spent_by.get(component, Fraction(0))
            if component in self.budgets:
                if c_spent + rho > self.budgets[component]:
                    raise BudgetError(
                        f"{label}: component {component!r} would spend {float(c_spent + rho):.6g} > its "
                        f"planned {float(self.budgets[component]):.6g}; nothing was released")
            self._entries.append(entry)
            self._spent = spent + rho
            self._spent_by[component] = c_spent + rho
        for listener in list(self._listeners):
            listener(entry)
        return entry

    # -- export --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        spent = self.spent()
        by_component: dict[str, Fraction] = {}
        for e in self.ledger:
            by_component[e.component] = by_component.get(e.component, Fraction(0)) + e.rho
        return {
            "unit": self.unit,
            "conversion": self.conversion,
            "noise": self.noise,
            "noise_description": describe_noise(self.noise),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho_total": float(self.rho_total),
            "rho_total_exact": f"{self.rho_total.numerator}/{self.rho_total.denominator}",
            "rho_spent": float(spent),
            "rho_spent_exact": f"{spent.numerator}/{spent.denominator}",
            "epsilon_spent": self.epsilon_spent(),
            "components": {
                k: {"planned": float(self.budgets[k]) if k in self.budgets else None, "spent": float(v)}
                for k, v in {**{k: Fraction(0) for k in self.budgets}, **by_component}.items()
            },
            "notes": list(self.notes),
            "entries": [e.to_dict(self.delta, self.conversion) for e in self.ledger],
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def summary(self) -> str:
        """A few lines for a terminal."""
        lines = [f"ρ spent {float(self.spent()):.6g} of {float(self.rho_total):.6g} "
                 f"(ε = {self.epsilon_spent():.4g} at δ = {self.delta:g}, {self.conversion} conversion)",
                 f"noise: {self.noise} ({describe_noise(self.noise)})"]
        by: dict[str, Fraction] = {}
        for e in self.ledger:
            by[e.component] = by.get(e.component, Fraction(0)) + e.rho
        for k, v in by.items():
            planned = self.budgets.get(k)
            lines.append(f"  {k}: ρ {float(v):.6g}" + (f" of {float(planned):.6g}" if planned else ""))
        return "\n".join(lines)
