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
"""

from __future__ import annotations

import functools
import warnings

__all__ = ["import_mbi", "memory_maps", "release_compiled_code"]


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


def import_mbi():  # noqa: ANN201 - the mbi module
    """``mbi``, imported with float64 JAX, after :func:`release_compiled_code`."""
    import jax

    release_compiled_code()
    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi
