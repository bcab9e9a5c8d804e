"""Where the bi-adjacency kernels run: one device specification, resolved once (§8).

§ numbers refer to docs/methods/biadjacency.md. The resolution itself is shared with PrivLava
(:mod:`relviz.relational.torch_device`).
"""

from __future__ import annotations

from relviz.relational.torch_device import resolve_device

__all__ = ["resolve_device"]
