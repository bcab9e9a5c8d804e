"""Fixtures of the relational tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def _single_torch_thread(single_torch_thread):  # noqa: ANN001, ANN202
    """Every relational test module runs torch on one intra-op thread (tests/conftest.py)."""
    yield
