"""Bi-adjacency relational synthesis (docs/methods/biadjacency.md).

Citations in this package: **[J]** is Alimohammadi, Wang, Gulati, Srivastava & Azizan, "Differentially Private
Synthetic Data Generation for Relational Databases" (journal version), with its own section, algorithm, lemma and
theorem numbers; **[W]** the same authors' earlier working paper; **[R]** their reference implementation
(github.com/azizanlab/dp-relational). A bare "§" number refers to a section of docs/methods/biadjacency.md.

The relational methods are :class:`~.linker.BiadjacencyLinker` (one-to-many, per FK; registered as
``"biadjacency"``) and :class:`~.linker.BiadjacencyRelation` (many-to-many through a link table),
built on :func:`~.algorithm.learn_relation` (§3, [J] Alg. 1 and 4) and its numerical core.

Submodules: :mod:`.algorithm` (the iterative algorithm, budget calibration), :mod:`.linker` (the
relviz methods), :mod:`.batched` (disjoint slices as one tensor, §8),
:mod:`.workloads` (the factorised query operator of a slice), :mod:`.device` (where the kernels run),
:mod:`.projection` (capped-simplex and row-simplex projections), :mod:`.pgd` (projected gradient descent on a
slice), :mod:`.ubs` (unbiased sampling and categorical rounding), :mod:`.clipping` (degree clipping),
:mod:`.slicing` (slice selection, initial relation, reinsertion).

The cross-table workloads, the marginals of an edge list and the evaluation metric are shared with the
other relational methods and the evaluation: they are in :mod:`relviz.marginals`.

This package exports the two methods, their fitted models and the algorithm's entry points; the
kernels stay in their submodules. relviz implements these itself because no well-kept library
implements the relational algorithms of [J].
"""

from __future__ import annotations

from relviz.marginals import Workload, enumerate_workloads
from relviz.relational.biadjacency.algorithm import (
    Calibration,
    Measurements,
    RelationResult,
    Settings,
    calibrate,
    learn_relation,
    refit_relation,
)
from relviz.relational.biadjacency.linker import (
    BiadjacencyLink,
    BiadjacencyLinker,
    BiadjacencyRelation,
    BiadjacencyRelationModel,
)
from relviz.relational.biadjacency.ubs import categorical_rounding, ubs

__all__ = [
    "BiadjacencyLink",
    "BiadjacencyLinker",
    "BiadjacencyRelation",
    "BiadjacencyRelationModel",
    "Calibration",
    "Measurements",
    "RelationResult",
    "Settings",
    "Workload",
    "calibrate",
    "categorical_rounding",
    "enumerate_workloads",
    "learn_relation",
    "refit_relation",
    "ubs",
]
