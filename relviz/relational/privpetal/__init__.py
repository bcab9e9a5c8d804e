"""PrivPetal (Cai, Xiao & Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025): each foreign key's children are synthesised as a *flattened relation* whose models
are learnt from noisy normalised marginals of *permutation relations*.

Registered as the database method ``"privpetal"`` (``Plan.default(schema, ε, δ, method="privpetal")``).
Modules: :mod:`~relviz.relational.privpetal.accounting` (sensitivities, budget split, calibration),
:mod:`~relviz.relational.privpetal.npm` (closed-form NPMs, R-scores, the guarded private object,
the NPM store), :mod:`~relviz.relational.privpetal.mrf` (structure search, junction trees,
Private-PGM estimation, sampling), :mod:`~relviz.relational.privpetal.algorithms` (Algorithms 1,
2, 3, 5 and PrivMRF-sub), :mod:`~relviz.relational.privpetal.method` (Algorithm 4, sampling,
decomposition, MERGE). Documented in docs/methods/privpetal.md.
"""

from relviz.relational.privpetal.method import FittedPrivPetal, PrivPetal

__all__ = ["PrivPetal", "FittedPrivPetal"]
