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


_FIT_AND_COUNT = """
import json, jax
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
import numpy as np, pandas as pd
from relviz import Database, Plan, RelationalSynthesizer
from relviz.mbi_runtime import enable_compilation_cache
from relviz.schema import Attribute, PrivacyUnit, Schema, Table
rng = np.random.default_rng(0)
frame = pd.DataFrame({"id": range(300), **{n: rng.integers(0, 3, 300) for n in "abc"}})
schema = Schema((Table("t", ("id",), tuple(Attribute.categorical(n, [0, 1, 2]) for n in "abc")),), (),
                PrivacyUnit(None, {}))
db = Database(schema, {"t": frame})
RelationalSynthesizer(Plan.default(schema, 1.0, 1e-6), random_state=0).fit(db)
print(json.dumps({"dir": enable_compilation_cache(), "cap": jax.config.jax_compilation_cache_max_size,
                  "hits": sum(e.endswith("/cache_hits") for e in events),
                  "misses": sum(e.endswith("/cache_misses") for e in events)}))
"""


def _fit_in_a_process(env: dict) -> dict:
    import json
    import os
    import subprocess

    out = subprocess.run([sys.executable, "-c", _FIT_AND_COUNT], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compiled_code_is_kept_on_disk_for_the_next_process(tmp_path) -> None:  # noqa: ANN001
    """``RELVIZ_JAX_CACHE=folder``: a first process's MST fit compiles (cache misses) and writes
    its executables there; a second process fitting the same shapes loads them (cache hits, no
    new compilation kept); ``off`` disables the cache."""
    folder = tmp_path / "jax"
    first = _fit_in_a_process({"RELVIZ_JAX_CACHE": str(folder)})
    assert first["dir"] == str(folder) and first["misses"] > 0
    assert first["cap"] == mbi_runtime.CACHE_MAX_BYTES  # least recently used entries evicted past it
    kept = {p.name for p in folder.iterdir()}
    assert len(kept) >= first["misses"] // 2  # an executable per compilation (tiny ones too)
    second = _fit_in_a_process({"RELVIZ_JAX_CACHE": str(folder)})
    assert second["hits"] > 0 and second["misses"] < first["misses"]
    off = _fit_in_a_process({"RELVIZ_JAX_CACHE": "off"})
    assert off["dir"] is None and off["hits"] == 0


def test_an_entry_left_without_its_access_time_is_repaired(tmp_path) -> None:  # noqa: ANN001
    """A process killed between JAX writing ``<key>-cache`` and ``<key>-atime`` leaves an entry
    that makes every later eviction scan fail (so nothing is cached again); the repair gives it
    time 0 (first to be evicted), after which JAX's size-capped cache stores entries again."""
    import warnings

    from jax._src.lru_cache import LRUCache

    (tmp_path / "old-cache").write_bytes(b"x" * 10)
    (tmp_path / "kept-cache").write_bytes(b"y" * 10)
    (tmp_path / "kept-atime").write_bytes((5).to_bytes(8, "little"))
    cache = LRUCache(str(tmp_path), max_size=25)
    with pytest.raises(FileNotFoundError):  # what JAX then hits on every write (and warns)
        cache.put("new", b"z" * 10)
    assert mbi_runtime.repair_compilation_cache(tmp_path) == 1
    assert (tmp_path / "old-atime").read_bytes() == (0).to_bytes(8, "little")
    assert (tmp_path / "kept-atime").read_bytes() == (5).to_bytes(8, "little")  # untouched
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put("new", b"z" * 10)  # over the cap: the repaired (oldest) entry is evicted
    assert not (tmp_path / "old-cache").exists() and (tmp_path / "new-cache").exists()
    assert (tmp_path / "kept-cache").exists()
    assert mbi_runtime.repair_compilation_cache(tmp_path) == 0
