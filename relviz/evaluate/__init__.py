"""Evaluation of a synthetic database against the real one — **curator view (not private)**.

Everything in this package reads the *real* data: its numbers and figures are outside the
differential-privacy guarantee and are for the data curator only (label them "curator view (not
private)" wherever they are shown; ``relviz.plots`` does). The guarantee is the ledger's (ε, δ) and
the privacy unit.

Every score is defined once, in docs/evaluation.md, with SDMetrics' definitions where
SDMetrics has the score:

* :mod:`.marginals` — Column Shapes (KSComplement, TVComplement), Column Pair Trends
  (CorrelationSimilarity, ContingencySimilarity), 1-way / 2-way TVD on public codes ("fidelity
  error"), 1-way frequency frames;
* :mod:`.correlation` — association matrices (Pearson, Cramér's V, correlation ratio η) of a
  table or an FK join, and the Intertable Trends property;
* :mod:`.degree` — degree distributions per FK and CardinalityShapeSimilarity;
* :mod:`.crosstable` — the papers' 3-way cross-table marginal error per relation;
* :mod:`.census_queries` — the census counting queries of PrivLava / PrivPetal (household ⟵
  person FKs) and their relative error;
* :mod:`.tpch_queries` — the eight TPC-H queries of PrivLava / PrivPetal (Q4, Q5, Q7, Q9, Q12,
  Q14, Q17, Q19) through DuckDB, and their average relative error;
* :mod:`.validity` — keys, references, public domains, row counts;
* :mod:`.embedding` — t-SNE maps of real and synthetic rows, and the detection score;
* :mod:`.report` — SDMetrics-style :class:`QualityReport`, relviz's :class:`RelationalReport`;
* :mod:`.html` — a self-contained ``report.html``.

Example:
    >>> from relviz.evaluate import QualityReport, RelationalReport, write_report  # doctest: +SKIP
    >>> q = QualityReport(); q.generate(real_db, synthetic_db); q.get_properties()  # doctest: +SKIP
    >>> print(RelationalReport().generate(real_db, synthetic_db).summary())        # doctest: +SKIP
    >>> write_report("report.html", real_db, synthetic_db, ledger=synth.accountant_.to_dict())  # doctest: +SKIP
"""

from __future__ import annotations

from relviz.evaluate._common import PropertyResult
from relviz.evaluate.census_queries import (
    CensusQueries,
    census_answers,
    census_error,
    census_error_summary,
    census_errors,
    generate_census_queries,
)
from relviz.evaluate.correlation import AssociationComparison, associations, intertable_trends, join_columns
from relviz.evaluate.crosstable import (
    CrossTableError,
    cross_table_error,
    cross_table_error_codes,
    cross_table_errors,
    cross_table_summary,
    link_table_error,
)
from relviz.evaluate.degree import (
    DegreeComparison,
    cardinality,
    cardinality_shape_similarity,
    compare_degrees,
    degree_similarity,
    degree_stats,
)
from relviz.evaluate.embedding import Embedding, detection_score, embed, encode_rows, rows_to_embed
from relviz.evaluate.html import render_report, write_report
from relviz.evaluate.marginals import (
    column_pair_trends,
    column_shapes,
    contingency_similarity,
    correlation_similarity,
    fidelity_summary,
    frequencies,
    ks_complement,
    tv_complement,
    tvd_one_way,
    tvd_two_way,
)
from relviz.evaluate.report import PROPERTIES, QualityReport, RelationalReport
from relviz.evaluate.tpch_queries import TPCHQuery, tpch_errors, tpch_query_answers
from relviz.evaluate.validity import ValidityReport, validity

__all__ = [
    "PROPERTIES",
    "AssociationComparison",
    "CensusQueries",
    "CrossTableError",
    "DegreeComparison",
    "Embedding",
    "PropertyResult",
    "QualityReport",
    "RelationalReport",
    "TPCHQuery",
    "ValidityReport",
    "associations",
    "cardinality",
    "cardinality_shape_similarity",
    "census_answers",
    "census_error",
    "census_error_summary",
    "census_errors",
    "column_pair_trends",
    "column_shapes",
    "compare_degrees",
    "contingency_similarity",
    "correlation_similarity",
    "cross_table_error",
    "cross_table_error_codes",
    "cross_table_errors",
    "cross_table_summary",
    "degree_similarity",
    "degree_stats",
    "detection_score",
    "embed",
    "encode_rows",
    "fidelity_summary",
    "frequencies",
    "generate_census_queries",
    "intertable_trends",
    "join_columns",
    "ks_complement",
    "link_table_error",
    "render_report",
    "rows_to_embed",
    "tpch_errors",
    "tpch_query_answers",
    "tv_complement",
    "tvd_one_way",
    "tvd_two_way",
    "validity",
    "write_report",
]
