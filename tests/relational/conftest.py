"""Fixtures of the relational tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _single_torch_thread():
    """Tiny tensors: one intra-op thread avoids OpenMP oversubscription on small CI machines (restored after)."""
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n_threads)
