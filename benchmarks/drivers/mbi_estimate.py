"""Benchmark driver: mbi's mirror descent on measurements written by estimation_crosscheck.py.

Usage: python mbi_estimate.py MEASUREMENTS.npz DOMAIN.json OUT.npz [--iterations 3000]

Reads the noisy marginals (``y<i>``), their attribute sets (``cliques`` as JSON) and noise
scales, fits mbi 2.0's ``MirrorDescent`` in float64 with the known total, and writes the
fitted marginal of every measured set (``fit<i>``) and the CPU seconds of the fit.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main() -> None:
    """Fit mbi's estimator to the measurements and write the fitted marginals."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("measurements", type=Path)
    parser.add_argument("domain", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--iterations", type=int, default=3000)
    args = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from mbi import Domain, LinearMeasurement, estimation

    sizes: dict[str, int] = json.loads(args.domain.read_text())
    saved = np.load(args.measurements)
    cliques = [tuple(c) for c in json.loads(str(saved["cliques"]))]
    sigmas = saved["sigmas"]
    total = float(saved["total"])
    measurements = [
        LinearMeasurement(saved[f"y{i}"].ravel(), clique, float(sigmas[i]))
        for i, clique in enumerate(cliques)
    ]
    domain = Domain(list(sizes), list(sizes.values()))
    started = time.process_time()
    model = estimation.MirrorDescent().estimate(
        domain, measurements, known_total=total, iters=args.iterations
    )
    fits = {f"fit{i}": np.asarray(model.project(c).datavector()) for i, c in enumerate(cliques)}
    cpu = time.process_time() - started
    np.savez(args.out, cpu=cpu, **fits)


if __name__ == "__main__":
    main()
