"""How relviz imports Private-PGM (``mbi``) and keeps JAX's compiled code within the process's limits.

:func:`import_mbi` imports ``mbi`` with float64 JAX (mbi 2.0 warns that float32 can stall for
more than 10⁵ rows). Every mbi-based fit (MST, AIM, PrivLava's models) calls it first, and it
first calls :func:`release_compiled_code`.

Why :func:`release_compiled_code` exists: XLA's CPU backend maps the machine code of every
compiled executable into the process, and JAX keeps them in its caches for the life of the process.
PrivLava compiles mbi's estimator for many model shapes: about 3,500 memory maps per fit on the
census stand-in, measured with ``/proc/self/maps``. Linux limits a process to
``vm.max_map_count`` maps (65,530 by default). Past that limit LLVM fails with "Cannot allocate
memory" and the process segfaults, after about 18 PrivLava fits in one Python process.
Long-running processes hit this: a Jupyter session running a sweep, or
``benchmarks/fidelity.py``, whose census grid died at run 18.

When the process holds more than half the limit, :func:`release_compiled_code` clears JAX's caches
(``jax.clear_caches``). Later fits recompile (seconds) instead of crashing. Measured: 18
PrivLava fits on a 500-household census stand-in kept the process at about 1,430 maps when the
caches were cleared after each fit, against 13,459, 24,231 and 34,713 maps after 3, 6 and 9 fits
without clearing.

**Compiled code kept on disk** (:func:`enable_compilation_cache`). Most of a small fit's time is
XLA compiling mbi's estimator, not estimating: profiled on TPC-H sf 0.1 (MST on ``orders`` and
``lineitem``, the degree method on the FKs), 20 of the fit's 36 s were in
``backend_compile`` (159 compilations) and 4 s more in lowering. JAX's persistent compilation
cache keeps the compiled executables on disk, keyed by the computation, its options and the
backend, so another process fitting the same schema loads them instead. The estimator's main
loop holds the noisy measurements as constants, so a run with other noise (another seed or ε)
compiles that one again. Measured with ``RELVIZ_JAX_CACHE`` on an empty folder, TPC-H sf 0.01
(2-core machine, one core busy): fit 24.0 s cold (164 compilations), 5.4 s for the same run
again (164 loaded), 11.1 s with another seed (163 loaded, 1 compiled); sf 0.1: 29.4 s → 18.0 s.
It holds compiled code: the shapes (public domain sizes) and, in that main loop, released noisy
measurements, which are public anyway; no private value. Folder: ``$RELVIZ_JAX_CACHE`` if set (``off`` disables
it), else ``$RELVIZ_CACHE_DIR/jax`` or ``$XDG_CACHE_HOME/relviz/jax`` (``~/.cache/relviz/jax``),
one subfolder per CPU (its model and instruction-set flags), since XLA's CPU code is compiled
for the host; a cache folder that the user configured in JAX is left alone. Every run with new
noise adds its main loop (a few hundred kB), so the folder is capped at
:data:`CACHE_MAX_BYTES` (JAX deletes the least recently used entries past it).
"""

from __future__ import annotations

import functools
import os
import warnings

__all__ = ["import_mbi", "memory_maps", "release_compiled_code", "enable_compilation_cache",
           "repair_compilation_cache", "CACHE_MAX_BYTES"]

CACHE_MAX_BYTES = 1 << 30
"""Size cap of the on-disk compilation cache (1 GiB; this session's benchmarks filled 41 MB)."""


@functools.cache
def _map_limit() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):  # not Linux: no such limit to guard
        return None


def memory_maps() -> int | None:
    """Memory maps this process holds (``/proc/self/maps`` lines), or ``None`` off Linux."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def release_compiled_code(share: float = 0.5) -> bool:
    """Clear JAX's caches when this process holds more than ``share`` of ``vm.max_map_count``
    memory maps (see the module docstring). Returns whether it cleared them. A no-op off Linux
    and before JAX is imported."""
    import sys

    limit = _map_limit()
    if limit is None or "jax" not in sys.modules:
        return False
    used = memory_maps()
    if used is None or used <= share * limit:
        return False
    sys.modules["jax"].clear_caches()
    return True


def _cpu_key() -> str:
    """A short key of this host's CPU (model name and instruction-set flags; the platform's
    processor string off Linux)."""
    import hashlib
    import platform

    text = platform.machine() + platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features", "CPU part"))]
        text += "".join(sorted(set(lines)))
    except OSError:
        pass
    return f"{platform.machine() or 'cpu'}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@functools.cache
def enable_compilation_cache() -> str | None:
    """Keep JAX's compiled executables on disk (see the module docstring); returns the folder, or
    ``None`` when disabled (``RELVIZ_JAX_CACHE=off``), already configured by the user, or not
    writable. Every compilation is kept (JAX's default keeps only those over 1 s: mbi's are
    about 0.1 s each, but there are hundreds)."""
    from pathlib import Path

    import jax

    setting = os.environ.get("RELVIZ_JAX_CACHE", "").strip()
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if jax.config.jax_compilation_cache_dir:  # the user's own choice
        return None
    if setting:
        folder = Path(setting).expanduser()
    else:
        from relviz.cache import cache_folder

        folder = cache_folder("jax") / _cpu_key()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            return None
    except OSError:
        return None
    repair_compilation_cache(folder)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_compilation_cache_max_size", CACHE_MAX_BYTES)
    return str(folder)


def repair_compilation_cache(folder: str | os.PathLike) -> int:
    """Give every entry of a JAX compilation cache folder its access-time file; returns how many
    were missing.

    JAX's size-capped cache (``jax._src.lru_cache.LRUCache``) writes ``<key>-cache`` and then
    ``<key>-atime``. A process killed between the two (a timeout, the out-of-memory killer) leaves
    an entry without its time, and from then on every eviction scan in every process fails on it:
    no executable is stored again and each attempt warns ("Error writing persistent compilation
    cache entry"). Such entries get time 0, so that they are the first evicted. Runs under the
    cache's own file lock (``.lockfile``), as JAX's reads and writes do; when the lock is not
    free within 10 s, or the folder cannot be written, nothing is repaired (returns 0): the cache
    is an optimisation and never stops an import.
    """
    from pathlib import Path

    import filelock

    folder = Path(folder)
    fixed = 0
    try:
        with filelock.FileLock(str(folder / ".lockfile"), timeout=10):
            for entry in folder.glob("*-cache"):
                atime = folder / (entry.name.removesuffix("-cache") + "-atime")
                if not atime.exists():
                    atime.write_bytes((0).to_bytes(8, "little"))
                    fixed += 1
    except (filelock.Timeout, OSError):
        return 0
    return fixed


def import_mbi():  # noqa: ANN201 - the mbi module
    """``mbi``, imported with float64 JAX, after :func:`release_compiled_code` and with the
    on-disk compilation cache enabled (:func:`enable_compilation_cache`)."""
    import jax

    release_compiled_code()
    enable_compilation_cache()
    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi
