"""Timings of the bi-adjacency kernels (docs/methods/biadjacency.md §8).

Run from the repository root::

    python benchmarks/biadjacency_kernels.py [--threads N] [--repeats R]

Prints: UBS for N = 10^6, m = 10^3; capped-simplex projection for N = 10^6 (numpy and torch backends);
one PGD iteration with q = 8 workloads on a 10^6-cell slice (numpy bincount/gather reference vs the torch
``SliceOperator``); power-iteration cost. All on CPU unless CUDA is available (then torch rows also run there).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from relviz.marginals import enumerate_workloads
from relviz.relational.biadjacency.device import resolve_device
from relviz.relational.biadjacency.pgd import pgd_mn
from relviz.relational.biadjacency.projection import project_capped_simplex
from relviz.relational.biadjacency.ubs import ubs
from relviz.relational.biadjacency.workloads import SliceOperator, slice_codes

MOVIE_DOMAINS = [2] * 18
USER_DOMAINS = [2, 7, 21]


def timeit(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median and minimum wall time in seconds over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def report(name: str, t: tuple[float, float]) -> None:
    print(f"{name:<62s} median {1e3 * t[0]:9.2f} ms   min {1e3 * t[1]:9.2f} ms")


def bench_ubs(repeats: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.random(10**6)
    x = project_capped_simplex(x * 1000 / x.sum(), 1000.0)
    report("UBS N=1e6 m=1e3 (shuffle)", timeit(lambda: ubs(x, 1000, rng), repeats))
    report("UBS N=1e6 m=1e3 (no shuffle)", timeit(lambda: ubs(x, 1000, rng, shuffle=False), repeats))
    x32 = x.astype(np.float32)  # sum off by float32 rounding -> input repair
    report("UBS N=1e6 m=1e3 (float32 input, repair)", timeit(lambda: ubs(x32, 1000, rng), repeats))


def bench_projection(repeats: int) -> None:
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1.0):
        v = rng.normal(size=10**6) * scale + 1e-3
        _, n_eval = project_capped_simplex(v, 1000.0, return_evaluations=True)
        report(f"projection N=1e6 numpy (scale {scale:g}, {n_eval} evals)",
               timeit(lambda v=v: project_capped_simplex(v, 1000.0), repeats))
        vt = torch.from_numpy(v).to(resolve_device("auto"))
        report(f"projection N=1e6 torch backend on {vt.device.type} (scale {scale:g})",
               timeit(lambda vt=vt: project_capped_simplex(vt, 1000.0, backend="torch"), repeats))


class NumpyOperator:
    """Spec §8 numpy reference: bincount over fused cell indices (forward) and a gather (transpose)."""

    def __init__(self, a_list, b_list, c1s, c2s):
        self.fused = [(a[:, None] * c2 + b[None, :]).reshape(-1) for a, b, c2 in zip(a_list, b_list, c2s, strict=True)]
        self.sizes = [c1 * c2 for c1, c2 in zip(c1s, c2s, strict=True)]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        self.shape = (a_list[0].size, b_list[0].size)

    def forward(self, x: np.ndarray) -> np.ndarray:
        xf = x.reshape(-1)
        pairs = zip(self.fused, self.sizes, strict=True)
        return np.concatenate([np.bincount(f, weights=xf, minlength=s) for f, s in pairs])

    def transpose(self, r: np.ndarray) -> np.ndarray:
        out = np.zeros(self.fused[0].size)
        for w, f in enumerate(self.fused):
            out += r[self.offsets[w] : self.offsets[w + 1]][f]
        return out.reshape(self.shape)


def bench_pgd_iteration(repeats: int) -> None:
    rng = np.random.default_rng(2)
    s1 = s2 = 1000
    p1 = rng.uniform(0.05, 0.5, len(MOVIE_DOMAINS))
    codes1 = (rng.random((s1, len(MOVIE_DOMAINS))) < p1).astype(np.int64)
    codes2 = np.stack([rng.integers(0, d, s2) for d in USER_DOMAINS], axis=1)
    wls = enumerate_workloads(MOVIE_DOMAINS, USER_DOMAINS, 3)
    chosen = [wls[i] for i in rng.choice(len(wls), size=8, replace=False)]
    rows, cols = np.arange(s1), np.arange(s2)
    a_list, b_list = slice_codes(codes1, codes2, rows, cols, chosen)
    c1s, c2s = [w.C1 for w in chosen], [w.C2 for w in chosen]
    m_s = 500
    x = project_capped_simplex(rng.random((s1, s2)), float(m_s))
    print(f"slice {s1}x{s2}, q=8 workloads, C1*C2 = {[c1 * c2 for c1, c2 in zip(c1s, c2s, strict=True)]}")

    nop = NumpyOperator(a_list, b_list, c1s, c2s)
    target = nop.forward(x) / m_s + rng.normal(0, 0.01, sum(nop.sizes))
    eta = 1.0

    def numpy_step() -> np.ndarray:
        r = nop.forward(x) / m_s - target
        g = nop.transpose(r) * (2.0 / m_s)
        return project_capped_simplex(x - eta * g, float(m_s))

    report("numpy forward (8 workloads, bincount)", timeit(lambda: nop.forward(x), repeats))
    r_np = nop.forward(x) / m_s - target
    report("numpy transpose (8 workloads, gather)", timeit(lambda: nop.transpose(r_np), repeats))
    report("numpy PGD iteration (fwd + transpose + projection)", timeit(numpy_step, repeats))

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        op = SliceOperator(a_list, b_list, c1s, c2s, device=dev, dtype=torch.float32)
        xt = torch.from_numpy(x).to(op.device)
        tt = torch.from_numpy(target).to(device=op.device, dtype=torch.float32)

        sigma_sq = op.sigma_max_sq(None)  # analytic bound: no power iteration inside the timed loop
        n_it = 10

        def torch_pgd(op=op, tt=tt, sigma_sq=sigma_sq, n_it=n_it) -> object:
            return pgd_mn(op, tt, m_s, rng=np.random.default_rng(0), iters=n_it, x0=x, sigma_max_sq=sigma_sq)

        report(f"torch {dev} forward (8 workloads, index_add, fp32)",
               timeit(lambda op=op, xt=xt: op.forward(xt), repeats))
        rt = op.forward(xt) / m_s - tt
        report(f"torch {dev} transpose (8 workloads, index_select, fp32)",
               timeit(lambda op=op, rt=rt: op.transpose(rt), repeats))
        t_pgd = timeit(torch_pgd, max(1, repeats // 2))
        report(f"torch {dev} PGD iteration via pgd_mn (mean of {n_it})", (t_pgd[0] / n_it, t_pgd[1] / n_it))
        res = op.power_iteration(np.random.default_rng(3))
        lo, hi = op.spectral_bounds()
        t_pow = timeit(lambda op=op: op.power_iteration(np.random.default_rng(3)), max(1, repeats // 3))
        report(f"torch {dev} power iteration ({res.iterations} iters, converged={res.converged})", t_pow)
        print(f"    sigma^2 estimate {res.sigma_sq:.6g}, certified upper {res.upper:.6g}, "
              f"analytic [{lo:.6g}, {hi:.6g}], per-iteration {1e3 * t_pow[0] / res.iterations:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, numpy {np.__version__}, torch threads {torch.get_num_threads()}, "
          f"device auto -> {resolve_device('auto')}")
    bench_ubs(args.repeats)
    bench_projection(args.repeats)
    bench_pgd_iteration(args.repeats)


if __name__ == "__main__":
    main()
