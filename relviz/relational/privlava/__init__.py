"""PrivLava (Cai, Xiao & Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under
Differential Privacy", SIGMOD 2023): a latent-variable group model per foreign key.

Registered as the database method ``"privlava"`` (``Plan.default(schema, ε, δ, method="privlava")``).
Modules: :mod:`~relviz.relational.privlava.accounting` (sensitivities, order, calibration),
:mod:`~relviz.relational.privlava.em` (group model, Algorithm 1), :mod:`~relviz.relational.privlava.pgm`
(the ``mbi`` adapter: potentials, conditional sampling), :mod:`~relviz.relational.privlava.method`
(Algorithms 2–4). Documented in docs/methods/privlava.md.
"""

from relviz.relational.privlava.method import FittedPrivLava, PrivLava

__all__ = ["PrivLava", "FittedPrivLava"]
