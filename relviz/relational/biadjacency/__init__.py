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
:mod:`.workloads` (cross-table workloads, marginals, factorised query operator, evaluation metric),
:mod:`.projection` (capped-simplex and row-simplex projections), :mod:`.pgd` (projected gradient descent on a
slice), :mod:`.ubs` (unbiased sampling and categorical rounding), :mod:`.clipping` (degree clipping),
:mod:`.slicing` (slice selection, initial relation, reinsertion).

relviz implements these itself because no well-kept library implements the relational algorithms of [J].
"""

from __future__ import annotations

from relviz.relational.biadjacency.algorithm import (
    Calibration,
    Measurements,
    RelationResult,
    Settings,
    calibrate,
    learn_relation,
    refit_relation,
    schedule,
)
from relviz.relational.biadjacency.clipping import (
    clip_degrees,
    degree_clip_mask,
    rank_within_groups,
)
from relviz.relational.biadjacency.pgd import (
    PGDResult,
    pgd_mn,
    pgd_otm,
    random_start_mn,
    random_start_otm,
    resolve_device,
    slice_objective,
)
from relviz.relational.biadjacency.projection import (
    project_capped_simplex,
    project_capped_simplex_exact,
    project_rows_simplex,
    sum_tolerance,
)
from relviz.relational.biadjacency.slicing import (
    Slice,
    check_edge_list,
    choose_slice_mn,
    choose_slice_otm,
    initial_edges_mn,
    initial_parents_otm,
    m_syn_rule,
    reinsert,
    reinsert_otm,
    slice_shape_mn,
    slice_shape_otm,
)
from relviz.relational.biadjacency.ubs import (
    categorical_rounding,
    merge_groups,
    ubs,
    ubs_many,
)
from relviz.relational.biadjacency.workloads import (
    MarginalErrorReport,
    PowerIterationResult,
    SliceOperator,
    Workload,
    all_marginals,
    cross_marginal_error,
    enumerate_workloads,
    marginal_counts,
    marginal_from_edges,
    mixed_radix_codes,
    slice_codes,
    workload_codes,
)

__all__ = [
    "Calibration",
    "Measurements",
    "RelationResult",
    "Settings",
    "calibrate",
    "learn_relation",
    "refit_relation",
    "schedule",
    "MarginalErrorReport",
    "PGDResult",
    "PowerIterationResult",
    "Slice",
    "SliceOperator",
    "Workload",
    "all_marginals",
    "categorical_rounding",
    "check_edge_list",
    "choose_slice_mn",
    "choose_slice_otm",
    "clip_degrees",
    "cross_marginal_error",
    "degree_clip_mask",
    "enumerate_workloads",
    "initial_edges_mn",
    "initial_parents_otm",
    "m_syn_rule",
    "marginal_counts",
    "marginal_from_edges",
    "merge_groups",
    "mixed_radix_codes",
    "pgd_mn",
    "pgd_otm",
    "project_capped_simplex",
    "project_capped_simplex_exact",
    "project_rows_simplex",
    "random_start_mn",
    "random_start_otm",
    "rank_within_groups",
    "reinsert",
    "reinsert_otm",
    "resolve_device",
    "slice_codes",
    "slice_objective",
    "slice_shape_mn",
    "slice_shape_otm",
    "sum_tolerance",
    "ubs",
    "ubs_many",
    "workload_codes",
]
