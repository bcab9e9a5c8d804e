"""PrivLava's E-step (docs/methods/privlava.md §2, §5): seconds per EM iteration's scoring and
statistics, scipy.sparse vs torch (CPU, and CUDA when present), on a census-sized synthetic
group structure.

    .venv/bin/python benchmarks/privlava_estep.py [--groups 200000] [--k 10] [--attrs 15]

Prints one line per backend: seconds (best of 3) and the largest posterior difference to scipy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's relviz (not an editable install's)

import numpy as np

from relviz.relational.privlava.em import EMState, Groups, LatentSpec, e_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=200_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--attrs", type=int, default=15)
    ap.add_argument("--tau", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    size = rng.integers(1, args.tau + 1, args.groups)
    group = np.repeat(np.arange(args.groups), size)
    doms = rng.integers(2, 20, args.attrs)
    attrs = tuple(f"a{i}" for i in range(args.attrs))
    codes = rng.integers(0, doms, size=(len(group), args.attrs))
    k = args.k
    spec = LatentSpec("Z1", "Z2", k, 1, args.tau)
    g = Groups(codes, attrs, dict(zip(attrs, doms.tolist())), group, size, np.arange(args.groups),
               np.arange(args.groups, dtype=np.uint64))
    pots = [((a, "Z1"), rng.normal(size=(d, k))) for a, d in zip(attrs, doms)]
    pots += [((a, "Z2"), rng.normal(size=(d, k))) for a, d in zip(attrs, doms)]
    pots.append((("Z1", "Z2"), rng.normal(size=(k, k))))
    latent = [((a,), ("Z1",)) for a in attrs] + [((a,), ("Z2",)) for a in attrs] + [((), ("Z1", "Z2"))]
    state = EMState(np.full(k * k, 1 / k**2), np.full((spec.sizes, k * k), 1 / spec.sizes), first=False)
    log_pz = np.log(np.full(k * k, 1 / k**2))
    print(f"{args.groups:,} groups, {len(group):,} tuples, d = {args.attrs}, K = {k * k}, "
          f"{len(latent)} latent marginals")
    backends = [("scipy.sparse (cpu)", None)]
    try:
        import torch

        backends.append(("torch cpu", torch.device("cpu")))
        if torch.cuda.is_available():
            backends.append(("torch cuda", torch.device("cuda")))
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    ref = None
    for name, dev in backends:
        best = np.inf
        for _ in range(3):
            t = time.perf_counter()
            out = e_step(g, state, spec, pots, log_pz, latent, hard=False, salt=0, device=dev)
            best = min(best, time.perf_counter() - t)
        diff = 0.0 if ref is None else float(np.abs(out[0] - ref[0]).max() / max(ref[0].max(), 1))
        ref = out if ref is None else ref
        print(f"  {name:20s} {best:7.2f} s per E-step   max rel. diff of cnt(z) vs scipy {diff:.1e}")


if __name__ == "__main__":
    main()
