"""PE's nearest-neighbour vote search: numpy (blocked float32 products) against faiss (issue 5).

Both backends of :func:`safeshare.synth.pe.neighbors.nearest` run once on the same data,
by default 40,000 private x 10,000 synthetic unit vectors of 384 dimensions (MiniLM's size),
clustered around 2,000 centres as sentence embeddings are; the script checks that they
return the same neighbours and prints the wall and CPU seconds of each and the ratio.
Threads are limited to ``--threads`` (default 1: the machine is shared) for both.

    .venv/bin/python benchmarks/pe_neighbors.py
    .venv/bin/python benchmarks/pe_neighbors.py --private 4000 --synthetic 1000 --k 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--private", type=int, default=40_000)
    parser.add_argument("--synthetic", type=int, default=10_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--k", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)  # before numpy and faiss load their BLAS

    import numpy as np

    from safeshare.synth.pe.neighbors import faiss_available, nearest

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(2_000, args.dims))

    def cloud(n: int) -> np.ndarray:
        vectors = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, args.dims))
        return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), np.float32)

    private, synthetic = cloud(args.private), cloud(args.synthetic)
    print(
        f"{args.private} private x {args.synthetic} synthetic, {args.dims}-d, k={args.k}, "
        f"{args.threads} thread(s)"
    )
    if not faiss_available():
        sys.exit("faiss is not installed: pip install faiss-cpu")
    results, seconds = {}, {}
    for method in ("blas", "faiss"):
        wall, cpu = time.perf_counter(), time.process_time()
        results[method] = nearest(private, synthetic, args.k, method=method)
        seconds[method] = (time.perf_counter() - wall, time.process_time() - cpu)
        print(f"{method:6s} wall {seconds[method][0]:7.2f} s   cpu {seconds[method][1]:7.2f} s")
    same = bool(np.array_equal(results["blas"], results["faiss"]))
    print(f"same neighbours: {same}")
    print(f"ratio numpy/faiss wall: {seconds['blas'][0] / seconds['faiss'][0]:.2f}x")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
