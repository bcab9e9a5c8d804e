"""Where relviz's torch kernels run: one device specification, resolved once.

Shared by the bi-adjacency kernels (docs/methods/biadjacency.md §8) and PrivLava's E-step
(docs/methods/privlava.md §5).
"""

from __future__ import annotations

import torch

__all__ = ["resolve_device"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Turn a device specification into a ``torch.device``.

    Args:
        device: ``"auto"`` (CUDA if available, else CPU), any string accepted by ``torch.device``, or a device.

    Returns:
        The resolved ``torch.device``.

    Raises:
        ValueError: if CUDA is requested but not available.
    """
    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA device requested but torch.cuda.is_available() is False")
    return dev
