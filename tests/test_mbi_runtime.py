"""relviz.mbi_runtime: JAX's compiled code is released before a process runs out of memory maps."""

from __future__ import annotations

import sys

import pytest

from relviz import mbi_runtime


def test_memory_maps_counts_this_process() -> None:
    n = mbi_runtime.memory_maps()
    if n is None:
        pytest.skip("no /proc/self/maps (not Linux)")
    assert n > 10  # any Python process maps its interpreter, libraries, heap and stack


def test_release_clears_jax_caches_only_above_the_share(monkeypatch) -> None:
    """Below the share nothing happens; above it ``jax.clear_caches`` runs once per call."""
    import jax

    mbi_runtime.import_mbi()
    assert "jax" in sys.modules
    calls = []
    monkeypatch.setattr(jax, "clear_caches", lambda: calls.append(1))
    monkeypatch.setattr(mbi_runtime, "_map_limit", lambda: 1000)
    monkeypatch.setattr(mbi_runtime, "memory_maps", lambda: 400)
    assert mbi_runtime.release_compiled_code() is False and calls == []
    monkeypatch.setattr(mbi_runtime, "memory_maps", lambda: 600)
    assert mbi_runtime.release_compiled_code() is True and calls == [1]
    monkeypatch.setattr(mbi_runtime, "_map_limit", lambda: None)  # not Linux: never
    assert mbi_runtime.release_compiled_code() is False and calls == [1]


def test_compiled_code_is_really_released() -> None:
    """A jitted function's executable leaves the cache: the next call compiles again."""
    import jax
    import jax.numpy as jnp

    mbi_runtime.import_mbi()
    f = jax.jit(lambda x: jnp.sin(x) * 3.0)
    f(jnp.ones(7))
    assert f._cache_size() == 1
    jax.clear_caches()
    assert f._cache_size() == 0
