"""Noise samplers: numpy's draws are unchanged, OpenDP's are exact and cost at most what is charged."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from relviz.errors import PlanError
from relviz.plan import Component, Plan
from relviz.privacy.accountant import Accountant
from relviz.privacy.mechanisms import (
    em_epsilon,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
)
from relviz.privacy.noise import (
    calibrate_exponential,
    calibrate_gaussian,
    check_noise,
    opendp_exponential_rho,
    opendp_gaussian_rho,
)

pytest.importorskip("opendp")

CASES = [(1.0, Fraction(1, 100)), (np.sqrt(2), Fraction(1, 3)), (3.3166247903554, 0.0054), (0.37, 2.5)]


def _gauss(values, noise: str, rng=None, **kw):
    acc = Accountant(1e6, delta=1e-6, noise=noise)
    out, sigma = gaussian_mechanism(values, accountant=acc, rho=kw.pop("rho", Fraction(1, 8)),
                                    sensitivity=kw.pop("sensitivity", 1.0),
                                    rng=rng if rng is not None else np.random.default_rng(0),
                                    label="t", component="c", **kw)
    return out, sigma, acc


@pytest.mark.parametrize("noise", ["numpy", "opendp"])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (0,)])
def test_shapes(noise: str, shape: tuple[int, ...]) -> None:
    out, _, _ = _gauss(np.zeros(shape), noise)
    assert out.shape == shape and out.dtype == np.float64
    out, _, _ = _gauss(np.zeros(shape, dtype=np.int64), noise)
    assert out.shape == shape and out.dtype == np.float64


def test_numpy_draws_are_todays() -> None:
    """Seeded runs are unchanged: the same generator calls, in the same order."""
    values = np.arange(12.0).reshape(3, 4)
    rho, delta_sens = Fraction(1, 50), 3.0
    out, sigma, acc = _gauss(values, "numpy", np.random.default_rng(42), rho=rho, sensitivity=delta_sens)
    assert sigma == gaussian_sigma(delta_sens, rho)
    np.testing.assert_array_equal(out, values + np.random.default_rng(42).normal(0.0, sigma, size=(3, 4)))
    # integer dtype: converted to float64 first, exactly as before
    out_i, _, _ = _gauss(values.astype(np.int64), "numpy", np.random.default_rng(42), rho=rho,
                         sensitivity=delta_sens)
    np.testing.assert_array_equal(out_i, out)

    scores = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    eps = em_epsilon(rho)
    ref, rng = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(30):
        logits = eps * (scores - scores.max()) / (2.0 * delta_sens)
        expected = int(np.argmax(logits + ref.gumbel(size=logits.shape)))
        assert exponential_mechanism(scores, accountant=acc, rho=rho, sensitivity=delta_sens,
                                     rng=rng, label="em", component="c") == expected
    assert rng.bit_generator.state == ref.bit_generator.state
    assert acc.ledger[-1].epsilon_em == eps and acc.ledger[-1].sampler == "numpy Gumbel-max"


def test_opendp_gaussian_std() -> None:
    """Empirical s.d. within 5 standard errors of σ (s.e. of a sample s.d. ≈ σ/√(2n))."""
    n = 20_000
    for integer in (False, True):
        values = np.zeros(n, dtype=np.int64 if integer else np.float64)
        out, sigma, acc = _gauss(values, "opendp", rho=Fraction(1, 50), sensitivity=3.0)
        assert sigma == pytest.approx(15.0, rel=1e-8)  # Δ/√(2ρ)
        assert abs(out.std(ddof=1) - sigma) < 5 * sigma / np.sqrt(2 * n)
        assert abs(out.mean()) < 5 * sigma / np.sqrt(n)
        assert acc.ledger[0].sigma == sigma


def test_opendp_discrete_output_is_integer() -> None:
    counts = np.array([[0, 5, 12], [100, 7, 3]], dtype=np.int64)
    out, sigma, acc = _gauss(counts, "opendp", rho=Fraction(1, 2), sensitivity=1.0)
    assert out.shape == counts.shape and np.all(out == np.round(out))
    assert acc.ledger[0].sampler == "opendp discrete Gaussian"
    # float64 counts declared integer-valued get the discrete Gaussian too
    out, _, acc = _gauss(counts.astype(float), "opendp", rho=Fraction(1, 2), integer=True)
    assert np.all(out == np.round(out)) and acc.ledger[0].sampler == "opendp discrete Gaussian"
    # float values are never switched to the discrete Gaussian because they look whole
    _, _, acc = _gauss(counts.astype(float), "opendp", rho=Fraction(1, 2))
    assert acc.ledger[0].sampler.startswith("opendp float Gaussian")


def test_declared_integer_with_fractional_answers_spends_nothing() -> None:
    acc = Accountant(1.0, delta=1e-6, noise="opendp")
    with pytest.raises(ValueError, match="integer"):
        gaussian_mechanism(np.array([0.5, 1.0]), accountant=acc, rho=0.1, sensitivity=1.0,
                           rng=np.random.default_rng(0), label="x", component="c", integer=True)
    assert acc.ledger == ()


@pytest.mark.parametrize("sens,rho", CASES)
@pytest.mark.parametrize("integer,size", [(True, 1), (False, 1), (False, 100_000)])
def test_opendp_gaussian_map_within_charged_rho(sens: float, rho, integer: bool, size: int) -> None:
    """OpenDP's own privacy map at the declared sensitivity is ≤ the ρ the ledger charges."""
    g = calibrate_gaussian("opendp", sens, rho, integer=integer, size=size)
    assert Fraction(opendp_gaussian_rho(sens, g.sigma, integer=integer, size=size, k=g.k)) <= Fraction(rho)
    base = gaussian_sigma(sens, rho)
    assert base <= g.sigma <= base * (1 + 1e-8)  # at most a rounding step more noise
    # and a noticeably smaller σ would be refused by the map
    assert Fraction(opendp_gaussian_rho(sens, base * 0.999, integer=integer, size=size, k=g.k)) > Fraction(rho)


@pytest.mark.parametrize("sens,rho", CASES)
def test_opendp_exponential_map_within_charged_rho(sens: float, rho) -> None:
    e = calibrate_exponential("opendp", sens, rho)
    assert e.scale == pytest.approx(2 * sens / e.epsilon)
    assert Fraction(opendp_exponential_rho(sens, e.epsilon)) <= Fraction(rho)
    assert e.epsilon == pytest.approx(np.sqrt(8 * float(rho)), rel=1e-12)
    assert Fraction(e.epsilon) ** 2 / 8 <= Fraction(rho)


def test_opendp_exponential_mechanism_frequencies() -> None:
    acc = Accountant(1e6, delta=1e-6, noise="opendp")

    def pick(scores: np.ndarray) -> int:
        return exponential_mechanism(scores, accountant=acc, rho=Fraction(1, 8), sensitivity=1.0,
                                     rng=np.random.default_rng(0), label="em", component="c")

    # ε = 1: a gap of 200 in score makes any other choice e^-100 as likely
    huge = np.array([0.0, 3.0, 200.0, 1.0])
    assert all(pick(huge) == 2 for _ in range(200))
    # unequal scores: the exponential mechanism's probabilities, 5 binomial s.d. per cell
    scores = np.array([0.0, 1.0, 2.0, 4.0])
    n = 3_000
    freq = np.bincount([pick(scores) for _ in range(n)], minlength=4) / n
    p = np.exp(em_epsilon(Fraction(1, 8)) * scores / 2)
    p /= p.sum()
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n)), (freq, p)
    # equal scores: uniform; Pearson χ² with 3 d.o.f. has P(χ² > 25) ≈ 1.6e-5
    n, k = 1_200, 4
    counts = np.bincount([pick(np.full(k, 7.5)) for _ in range(n)], minlength=k)
    chi2 = float(((counts - n / k) ** 2 / (n / k)).sum())
    assert chi2 < 25.0, counts
    assert acc.ledger[-1].sampler == "opendp report-noisy-max (Gumbel)"


def test_opendp_ignores_the_generator() -> None:
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    _gauss(np.zeros(5), "opendp", rng)
    assert rng.bit_generator.state == state


def test_ledger_records_the_sampler() -> None:
    for noise in ("numpy", "opendp"):
        _, _, acc = _gauss(np.zeros(3), noise)
        d = json.loads(acc.to_json())
        assert d["noise"] == noise and noise in acc.summary()
        assert d["entries"][0]["sampler"].startswith(noise)
    assert Accountant(1.0, delta=1e-6).noise == "numpy"  # direct uses stay reproducible
    with pytest.raises(ValueError):
        Accountant(1.0, delta=1e-6, noise="secure")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        check_noise("numpy2")


def test_plan_noise_round_trip_and_resolution() -> None:
    plan = Plan(1.0, 1e-6, (Component("t", "table", "mst", Fraction(1)),))
    assert plan.noise == "auto"
    assert plan.resolved_noise(seeded=False) == "opendp"
    assert plan.resolved_noise(seeded=True) == "numpy"
    for noise in ("numpy", "opendp", "auto"):
        p = plan.with_noise(noise)  # type: ignore[arg-type]
        assert Plan.from_json(p.to_json()) == p and Plan.from_json(p.to_json()).noise == noise
    d = plan.with_noise("numpy").to_dict()
    del d["noise"]
    assert Plan.from_dict(d).noise == "auto"  # plans saved before the field: the default
    assert plan.with_noise("numpy").resolved_noise(seeded=False) == "numpy"
    with pytest.raises(PlanError):
        plan.with_noise("opendp").resolved_noise(seeded=True)
    with pytest.raises(PlanError):
        plan.with_noise("fast")  # type: ignore[arg-type]
