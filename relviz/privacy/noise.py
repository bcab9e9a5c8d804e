"""Noise samplers behind one switch: numpy's floating-point draws, or OpenDP's exact ones.

Every noisy release of a run draws its noise from the sampler the run's
:class:`~relviz.privacy.accountant.Accountant` names (``accountant.noise``):

* ``"numpy"``: ``rng.normal(0, σ, size)`` and ``rng.gumbel(size)`` from the caller's
  ``numpy.random.Generator`` (PCG64). Fast and reproducible from a seed, but textbook
  floating-point noise: the set of doubles a sampler can output depends on the true answer,
  and Mironov (2012, "On significance of the least significant bits for differential
  privacy", CCS) showed that such gaps can reveal the answer exactly. The privacy
  guarantee holds for the idealised real-valued mechanism, not for its floating-point
  implementation. For study, teaching and tests (seeded runs).
* ``"opendp"``: OpenDP's samplers (the ``opendp`` package, Rust core), which draw from the
  operating system's CSPRNG with exact arithmetic, so the released distribution is exactly
  the one the proof is about:

  - integer-valued queries (counts): the discrete Gaussian N_Z(0, σ²) (Canonne, Kamath &
    Steinke 2020, "The Discrete Gaussian for Differential Privacy", NeurIPS), which is
    ρ-zCDP with ρ = Δ²/(2σ²) for L2 sensitivity Δ, the same cost as the continuous
    Gaussian (CKS 2020, Thm 4 and its multivariate extension; zCDP as in Bun & Steinke
    2016, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower
    Bounds", TCC);
  - real-valued queries: OpenDP's floating-point Gaussian, a discrete Gaussian on the grid
    2^k (inputs rounded to the grid, the rounding charged in the privacy map);
  - the exponential mechanism: report-noisy-max with Gumbel noise of scale 2Δ/ε
    (``opendp.measurements.make_noisy_max`` under zCDP), which *is* the exponential
    mechanism Pr[r] ∝ exp(ε·q_r/(2Δ)) and costs ε²/8 in zCDP (Cesar & Rogers 2021, "Bounding,
    Concentrating, and Truncating: Unifying Privacy Loss Composition for Data Analytics",
    ALT).

  Each OpenDP release is built as an OpenDP measurement and its *own* privacy map is checked
  against the ρ the accountant charges: σ is raised (ε lowered) one float step at a time
  until the map, evaluated at the declared sensitivity, is ≤ ρ exactly, and the σ (ε)
  actually used is the one the ledger records. OpenDP cannot be seeded, so ``random_state``
  does not reproduce its noise (the caller's generator is not used); a seeded run, used in
  tests and teaching, must use ``"numpy"``: :meth:`relviz.plan.Plan.resolved_noise` refuses
  the combination.

Integer or real: the discrete Gaussian is chosen from a *declared*, data-independent
property of the query (``integer=True``, or an integer dtype), never from the values: a
real-valued query whose answers happen to be whole numbers on one database but not on its
neighbour would switch the output between ℤⁿ and the float grid, and that switch alone
would reveal which database was used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any, Literal, get_args

import numpy as np

__all__ = [
    "NoiseName",
    "NOISE_NAMES",
    "check_noise",
    "describe_noise",
    "base_gaussian_sigma",
    "base_em_epsilon",
    "base_laplace_epsilon",
    "GaussianNoise",
    "ExponentialNoise",
    "LaplaceNoise",
    "calibrate_gaussian",
    "calibrate_exponential",
    "calibrate_laplace",
    "opendp_gaussian_rho",
    "opendp_exponential_rho",
]

NoiseName = Literal["numpy", "opendp"]
NOISE_NAMES: tuple[str, ...] = get_args(NoiseName)

_DESCRIPTIONS = {
    "numpy": "numpy PCG64 floating-point draws (seedable; open to the floating-point attacks "
             "of Mironov 2012)",
    "opendp": "OpenDP exact samplers from the OS CSPRNG (discrete Gaussian for integer-valued queries, "
              "Canonne, Kamath & Steinke 2020; not seedable)",
}

# Largest integer a float64 holds exactly: integer releases round-trip through float64.
_EXACT_INT = 2**53
# Float grid 2^k of OpenDP's real-valued Gaussian: fine enough that rounding the inputs to it
# costs a relative 2^-_GRID_BITS of the sensitivity (the map charges it; σ grows by as much).
_GRID_BITS = 30
# At most this many float steps (then geometric steps) while matching OpenDP's privacy map.
_MAX_ULP_STEPS = 64


def check_noise(name: str) -> NoiseName:
    """``name`` if it is a sampler name, else ``ValueError`` listing the choices."""
    if name not in NOISE_NAMES:
        raise ValueError(f"unknown noise sampler {name!r}; choose one of {', '.join(NOISE_NAMES)}")
    return name  # type: ignore[return-value]


def describe_noise(name: str) -> str:
    """One line for a ledger: what the sampler ``name`` draws from, and its caveat."""
    return _DESCRIPTIONS[check_noise(name)]


# -- calibration shared by both samplers ---------------------------------------------------------
def base_gaussian_sigma(sensitivity: float, rho: Fraction | float) -> float:
    """Smallest float σ with Δ²/(2σ²) ≤ ρ exactly (σ = Δ/√(2ρ), rounded up).

    Args:
        sensitivity: L2 sensitivity Δ > 0.
        rho: zCDP budget ρ > 0.

    Returns:
        σ; ``Fraction(Δ)**2 / (2*Fraction(σ)**2) <= Fraction(ρ)`` holds exactly.
    """
    rho = Fraction(rho)
    if rho <= 0 or not sensitivity > 0:
        raise ValueError("sensitivity and rho must be positive")
    sigma = float(sensitivity) / math.sqrt(2 * float(rho))
    d2 = Fraction(float(sensitivity)) ** 2
    while d2 / (2 * Fraction(sigma) ** 2) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def base_em_epsilon(rho: Fraction | float) -> float:
    """Largest float ε with ε²/8 ≤ ρ exactly (ε = √(8ρ), rounded down)."""
    rho = Fraction(rho)
    if rho <= 0:
        raise ValueError("rho must be positive")
    eps = math.sqrt(8 * float(rho))
    while Fraction(eps) ** 2 / 8 > rho:
        eps = math.nextafter(eps, 0.0)
    return eps


def base_laplace_epsilon(rho: Fraction | float) -> float:
    """Largest float ε with ε²/2 ≤ ρ exactly (ε = √(2ρ), rounded down): an ε-DP release is
    ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    rho = Fraction(rho)
    if rho <= 0:
        raise ValueError("rho must be positive")
    eps = math.sqrt(2 * float(rho))
    while Fraction(eps) ** 2 / 2 > rho:
        eps = math.nextafter(eps, 0.0)
    return eps


def _step(x: float, i: int, up: bool) -> float:
    """The ``i``-th adjustment of a noise parameter: one float step, then geometric steps."""
    if i < _MAX_ULP_STEPS:
        return math.nextafter(x, math.inf if up else 0.0)
    factor = 1.0 + 2.0 ** (-40 + (i - _MAX_ULP_STEPS))
    return x * factor if up else x / factor


# -- OpenDP ----------------------------------------------------------------------------------------
@cache
def _dp() -> Any:
    """The OpenDP constructors this module uses, with the ``"contrib"`` features enabled.

    Imported lazily and without ``opendp.prelude``, which also imports OpenDP's optional
    extras (scikit-learn among them) and takes seconds.
    """
    from types import SimpleNamespace

    import opendp.domains as domains
    import opendp.measurements as measurements
    import opendp.measures as measures
    import opendp.metrics as metrics
    import opendp.mod as mod

    mod.enable_features("contrib")
    return SimpleNamespace(
        m=measurements, vector_domain=domains.vector_domain, atom_domain=domains.atom_domain,
        l2_distance=metrics.l2_distance, linf_distance=metrics.linf_distance,
        l1_distance=metrics.l1_distance,
        zero_concentrated_divergence=measures.zero_concentrated_divergence)


def _grid_k(sensitivity: float, size: int) -> int:
    """Exponent k of the float grid 2^k: rounding ``size`` inputs to it moves them by at most
    √size·2^k (L2) ≤ Δ·2^-30, the extra sensitivity OpenDP's map then charges."""
    size = max(int(size), 1)
    k = math.floor(math.log2(float(sensitivity) / math.sqrt(size))) - _GRID_BITS
    return max(k, -1074)


def _opendp_gaussian(sigma: float, *, integer: bool, size: int, k: int | None) -> Any:
    dp = _dp()
    if integer:
        space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T=float)
        return dp.m.make_gaussian(*space, scale=sigma)
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=max(int(size), 1)),
             dp.l2_distance(T=float))
    return dp.m.make_gaussian(*space, scale=sigma, k=k)


def opendp_gaussian_rho(sensitivity: float, sigma: float, *, integer: bool, size: int = 1,
                        k: int | None = None) -> float:
    """OpenDP's own zCDP cost (its privacy map) of its Gaussian at L2 sensitivity Δ.

    Args:
        sensitivity: Declared L2 sensitivity Δ (a float; for the integer mechanism any real
            Δ bounds the L2 distance of neighbouring integer vectors, CKS 2020).
        sigma: Noise scale σ.
        integer: The discrete Gaussian on ℤⁿ (``True``) or the float Gaussian on the grid 2^k.
        size: Vector length (the float Gaussian's rounding term depends on it).
        k: Float grid exponent (default: :func:`_grid_k`).

    Returns:
        ρ as OpenDP computes it (rounded up by OpenDP).
    """
    if not integer and k is None:
        k = _grid_k(sensitivity, size)
    return float(_opendp_gaussian(sigma, integer=integer, size=size, k=k).map(float(sensitivity)))


def _opendp_laplace(scale: float, *, integer: bool, size: int, k: int | None) -> Any:
    dp = _dp()
    if integer:
        space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
        return dp.m.make_laplace(*space, scale=scale)
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=max(int(size), 1)),
             dp.l1_distance(T=float))
    return dp.m.make_laplace(*space, scale=scale, k=k)


def opendp_laplace_epsilon(sensitivity: float, scale: float, *, integer: bool, size: int = 1,
                           k: int | None = None) -> float:
    """OpenDP's own pure-DP ε (its privacy map) of its Laplace mechanism at L1 sensitivity Δ
    (an integer mechanism is mapped at ⌈Δ⌉, which bounds the L1 distance of integer vectors)."""
    if integer:
        return float(_opendp_laplace(scale, integer=True, size=size, k=None).map(int(math.ceil(sensitivity))))
    if k is None:
        k = _grid_k(sensitivity, size)
    return float(_opendp_laplace(scale, integer=False, size=size, k=k).map(float(sensitivity)))


@lru_cache(maxsize=64)
def _opendp_noisy_max(scale: float) -> Any:
    dp = _dp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)


def opendp_exponential_rho(sensitivity: float, epsilon: float) -> float:
    """OpenDP's zCDP cost of report-noisy-max with Gumbel noise of scale 2Δ/ε at score
    sensitivity Δ (non-monotonic scores: OpenDP charges (2Δ/scale)²/8 = ε²/8)."""
    return float(_opendp_noisy_max(2.0 * float(sensitivity) / epsilon).map(float(sensitivity)))


# -- calibrated releases -------------------------------------------------------------------------
@dataclass(frozen=True)
class GaussianNoise:
    """A calibrated Gaussian release: the sampler, σ, and how values are perturbed.

    Attributes:
        noise: Sampler name.
        sigma: Noise standard deviation actually used (the ledger records it).
        integer: Discrete Gaussian on ℤ (OpenDP, integer-valued query) or real-valued noise.
        size: Number of values released.
        k: OpenDP float grid exponent (``None`` for numpy and for the discrete Gaussian).
    """

    noise: NoiseName
    sigma: float
    integer: bool
    size: int
    k: int | None = None

    @property
    def kind(self) -> str:
        """Short ledger tag: which distribution was drawn."""
        if self.noise == "numpy":
            return "numpy normal"
        return "opendp discrete Gaussian" if self.integer else f"opendp float Gaussian (grid 2^{self.k})"

    def check(self, values: np.ndarray) -> np.ndarray:
        """The answers as OpenDP takes them (int64 or finite float64), or ``ValueError``.

        Call it before charging, so that a bad input spends nothing.
        """
        values = np.asarray(values)
        if values.size != self.size:
            raise ValueError(f"calibrated for {self.size} values, got {values.size}")
        return _as_int64(values) if self.integer else _as_finite_float(values)

    def sample(self, values: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """``values`` plus noise, as float64 of the same shape.

        Args:
            values: Exact answers (``size`` of them, any shape).
            rng: The numpy sampler's generator (unused by OpenDP, which cannot be seeded).
        """
        if self.noise == "numpy":
            values = np.asarray(values, dtype=np.float64)
            return values + rng.normal(0.0, self.sigma, size=values.shape)  # type: ignore[union-attr]
        exact = self.check(values)
        if exact.size == 0:
            return np.zeros(exact.shape, dtype=np.float64)
        meas = _opendp_gaussian(self.sigma, integer=self.integer, size=exact.size, k=self.k)
        out = meas(exact.ravel().tolist())
        return np.asarray(out, dtype=np.float64).reshape(exact.shape)


@dataclass(frozen=True)
class ExponentialNoise:
    """A calibrated exponential-mechanism choice (Gumbel-max / report-noisy-max).

    Attributes:
        noise: Sampler name.
        epsilon: The mechanism's ε (ledger); probabilities ∝ exp(ε·q/(2Δ)).
        sensitivity: Score sensitivity Δ.
    """

    noise: NoiseName
    epsilon: float
    sensitivity: float

    @property
    def kind(self) -> str:
        return "numpy Gumbel-max" if self.noise == "numpy" else "opendp report-noisy-max (Gumbel)"

    @property
    def scale(self) -> float:
        """Gumbel scale 2Δ/ε in score units (what OpenDP's ``make_noisy_max`` takes)."""
        return 2.0 * float(self.sensitivity) / self.epsilon

    def sample(self, scores: np.ndarray, rng: np.random.Generator | None) -> int:
        """Index of the chosen candidate (higher scores are better)."""
        scores = np.asarray(scores, dtype=np.float64)
        if self.noise == "numpy":
            logits = self.epsilon * (scores - scores.max()) / (2.0 * self.sensitivity)
            return int(np.argmax(logits + rng.gumbel(size=logits.shape)))  # type: ignore[union-attr]
        if not np.all(np.isfinite(scores)):
            raise ValueError("the exact exponential mechanism needs finite scores")
        return int(_opendp_noisy_max(self.scale)(scores.tolist()))


@dataclass(frozen=True)
class LaplaceNoise:
    """A calibrated Laplace release (pure ε-DP, charged ε²/2 in zCDP).

    Attributes:
        noise: Sampler name.
        scale: Laplace scale b (standard deviation √2·b).
        epsilon: Pure-DP ε = Δ₁/b of the release (OpenDP: its own map).
        integer: Discrete Laplace on ℤ (OpenDP, integer-valued query) or real-valued noise.
        size: Number of values released.
        k: OpenDP float grid exponent (``None`` for numpy and for the discrete Laplace).
    """

    noise: NoiseName
    scale: float
    epsilon: float
    integer: bool
    size: int
    k: int | None = None

    @property
    def kind(self) -> str:
        if self.noise == "numpy":
            return "numpy laplace"
        return "opendp discrete Laplace" if self.integer else f"opendp float Laplace (grid 2^{self.k})"

    @property
    def std(self) -> float:
        return math.sqrt(2.0) * self.scale

    def check(self, values: np.ndarray) -> np.ndarray:
        """The answers as OpenDP takes them (int64 or finite float64), or ``ValueError``."""
        values = np.asarray(values)
        if values.size != self.size:
            raise ValueError(f"calibrated for {self.size} values, got {values.size}")
        return _as_int64(values) if self.integer else _as_finite_float(values)

    def sample(self, values: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """``values`` plus Laplace noise, as float64 of the same shape."""
        if self.noise == "numpy":
            values = np.asarray(values, dtype=np.float64)
            return values + rng.laplace(0.0, self.scale, size=values.shape)  # type: ignore[union-attr]
        exact = self.check(values)
        if exact.size == 0:
            return np.zeros(exact.shape, dtype=np.float64)
        meas = _opendp_laplace(self.scale, integer=self.integer, size=exact.size, k=self.k)
        return np.asarray(meas(exact.ravel().tolist()), dtype=np.float64).reshape(exact.shape)


def calibrate_laplace(noise: str, sensitivity: float, rho: Fraction | float, *, integer: bool = False,
                      size: int = 1) -> LaplaceNoise:
    """The Laplace release of zCDP cost at most ``rho``: ε = √(2ρ) (rounded down), b = Δ₁/ε
    (rounded up until Δ₁/b ≤ ε exactly); with OpenDP, b is raised until OpenDP's own pure-DP map
    at Δ₁ is an ε with ε²/2 ≤ ρ exactly.

    Args:
        noise: ``"numpy"`` or ``"opendp"``.
        sensitivity: L1 sensitivity Δ₁.
        rho: ρ charged for the release.
        integer: The query is integer-valued on every database (counts).
        size: Number of values released.
    """
    noise = check_noise(noise)
    if not sensitivity > 0:
        raise ValueError("sensitivity must be positive")
    rho = Fraction(rho)
    eps = base_laplace_epsilon(rho)
    d1 = Fraction(float(sensitivity))
    scale = float(sensitivity) / eps
    while d1 / Fraction(scale) > Fraction(eps):
        scale = math.nextafter(scale, math.inf)
    if noise == "numpy":
        return LaplaceNoise("numpy", scale, float(sensitivity) / scale, bool(integer), int(size))
    k = None if integer else _grid_k(sensitivity, size)
    for i in range(_MAX_ULP_STEPS + 200):
        got = opendp_laplace_epsilon(sensitivity, scale, integer=integer, size=size, k=k)
        if Fraction(got) ** 2 / 2 <= rho:
            return LaplaceNoise("opendp", scale, got, bool(integer), int(size), k)
        scale = max(_step(scale, i, up=True), scale * got / eps) if i == 0 else _step(scale, i - 1, up=True)
    raise RuntimeError("could not match OpenDP's Laplace privacy map to the charged ρ")


def calibrate_gaussian(noise: str, sensitivity: float, rho: Fraction | float, *, integer: bool = False,
                       size: int = 1) -> GaussianNoise:
    """The Gaussian release of cost at most ``rho`` under sampler ``noise``.

    numpy: σ = Δ/√(2ρ) rounded up (:func:`base_gaussian_sigma`). OpenDP: that σ, raised until
    OpenDP's privacy map at Δ is ≤ ρ exactly (its maps round up, and the float Gaussian adds
    the rounding of the inputs to its grid).

    Args:
        noise: ``"numpy"`` or ``"opendp"``.
        sensitivity: L2 sensitivity Δ.
        rho: ρ charged for the release.
        integer: The query is integer-valued on every database (counts): OpenDP then uses the
            discrete Gaussian. Must be a property of the query, not of its answers.
        size: Number of values released.

    Returns:
        The calibrated :class:`GaussianNoise`.
    """
    noise = check_noise(noise)
    rho = Fraction(rho)
    sigma = base_gaussian_sigma(sensitivity, rho)
    if noise == "numpy":
        return GaussianNoise("numpy", sigma, bool(integer), int(size))
    k = None if integer else _grid_k(sensitivity, size)
    for i in range(_MAX_ULP_STEPS + 200):
        cost = Fraction(opendp_gaussian_rho(sensitivity, sigma, integer=integer, size=size, k=k))
        if cost <= rho:
            return GaussianNoise("opendp", sigma, bool(integer), int(size), k)
        # the map is ∝ 1/σ²: jump once to the σ it asks for, then creep up by float steps
        sigma = max(_step(sigma, i, up=True), sigma * math.sqrt(float(cost / rho))) if i == 0 \
            else _step(sigma, i - 1, up=True)
    raise RuntimeError("could not match OpenDP's Gaussian privacy map to the charged ρ")


def calibrate_exponential(noise: str, sensitivity: float, rho: Fraction | float) -> ExponentialNoise:
    """The exponential-mechanism choice of cost at most ``rho`` (ε²/8 ≤ ρ) under ``noise``.

    numpy: ε = √(8ρ) rounded down (:func:`base_em_epsilon`). OpenDP: that ε, lowered until
    OpenDP's zCDP map of report-noisy-max (scale 2Δ/ε) at Δ is ≤ ρ exactly.
    """
    noise = check_noise(noise)
    if not sensitivity > 0:
        raise ValueError("sensitivity must be positive")
    eps = base_em_epsilon(rho)
    if noise == "numpy":
        return ExponentialNoise("numpy", eps, float(sensitivity))
    rho = Fraction(rho)
    for i in range(_MAX_ULP_STEPS + 200):
        cost = Fraction(opendp_exponential_rho(sensitivity, eps))
        if cost <= rho:
            return ExponentialNoise("opendp", eps, float(sensitivity))
        # the map is ∝ ε²: jump once to the ε it allows, then creep down by float steps
        eps = min(_step(eps, i, up=False), eps * math.sqrt(float(rho / cost))) if i == 0 \
            else _step(eps, i - 1, up=False)
    raise RuntimeError("could not match OpenDP's noisy-max privacy map to the charged ρ")


# -- input checks --------------------------------------------------------------------------------
def _as_int64(values: np.ndarray) -> np.ndarray:
    """Integer answers as int64, or ``ValueError`` (a query declared integer-valued is not)."""
    if np.issubdtype(values.dtype, np.integer) or values.dtype == np.bool_:
        out = values.astype(np.int64)
        if out.size and int(np.abs(out).max()) >= _EXACT_INT:
            raise ValueError("integer answers beyond 2^53 cannot be returned exactly as float64")
        return out
    v = np.asarray(values, dtype=np.float64)
    if not (np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < _EXACT_INT)):
        raise ValueError("a query declared integer-valued returned non-integer answers")
    return v.astype(np.int64)


def _as_finite_float(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError("the exact Gaussian mechanism needs finite values")
    return v
