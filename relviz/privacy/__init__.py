"""Privacy: one zCDP accountant per run, noise primitives that spend through it, the privacy
unit's sensitivity multipliers, and the one module that reads private rows."""

from relviz.privacy.accountant import (
    Accountant,
    LedgerEntry,
    epsilon_from_rho,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    rho_closed_form,
    rho_from_epsilon_delta,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_rho,
)
from relviz.privacy.measure import (
    CapReport,
    Curator,
    PrivateForeignKey,
    PrivateTable,
    ReadLog,
    enforce_caps,
)
from relviz.privacy.mechanisms import (
    em_epsilon,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
)
from relviz.privacy.sensitivity import Multipliers, multipliers, truncation_stable

__all__ = [
    "Accountant",
    "LedgerEntry",
    "epsilon_from_rho",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "rho_closed_form",
    "rho_from_epsilon_delta",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
    "em_epsilon",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "Curator",
    "PrivateForeignKey",
    "PrivateTable",
    "ReadLog",
    "CapReport",
    "Multipliers",
    "enforce_caps",
    "multipliers",
    "truncation_stable",
]
