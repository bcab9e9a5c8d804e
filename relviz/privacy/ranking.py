"""Within-group ranks: the vectorised cumcount used by cap enforcement and degree clipping.

Why relviz writes this itself: it is three numpy lines (a stable sort and a running group start),
used on private rows inside ``relviz.privacy.measure`` and on the bi-adjacency edge lists.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank_within_groups"]


def rank_within_groups(keys: np.ndarray) -> np.ndarray:
    """Rank of each element among the elements with the same key, in array order (a vectorised cumcount).

    Args:
        keys: ``(n,)`` integer keys.

    Returns:
        ``(n,)`` int64: ``r[i] = #{j < i : keys[j] == keys[i]}``.
    """
    keys = np.asarray(keys)
    n = keys.size
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sk[1:] != sk[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - group_start
    return ranks
