"""Where relviz keeps its caches: one folder per kind under one root.

The root is ``$RELVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/relviz`` (``~/.cache/relviz``). Used by
the TPC-H generator's cache (``tpch``), the ε-sweep cache (``sweeps``) and JAX's compiled code
(``jax``, :mod:`relviz.mbi_runtime`). Plain glue: no library to call for two environment
variables.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_folder"]


def cache_folder(kind: str) -> Path:
    """``$RELVIZ_CACHE_DIR/<kind>``, else ``$XDG_CACHE_HOME/relviz/<kind>`` (``~/.cache/relviz/<kind>``).
    The folder is not created."""
    if os.environ.get("RELVIZ_CACHE_DIR"):
        return Path(os.environ["RELVIZ_CACHE_DIR"]) / kind
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "relviz" / kind
