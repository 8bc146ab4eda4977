"""Cross-check of the estimation engine against mbi 2.0: the same noisy measurements, both fits.

Issue 10, part 1: safeshare's own graphical-model estimator and mbi's ``MirrorDescent`` are fed
the same noisy marginals of adult-pgm (every 1-way marginal, the 2-way marginals of a random
spanning tree, and a few 3-way marginals chosen at random; Gaussian noise of ``--sigma``
records, from a seeded generator) with the known total.  Both minimise the same weighted
squared error over consistent distributions, so their fitted marginals of the measured sets
should agree; the script prints, per kind of set, the largest and mean total-variation
distance between the two fits, each fit's loss (computed here, in the same way for both), each
fit's mean TVD from the true marginals, and the CPU seconds of each fit.  mbi runs in its own
venv (``bash benchmarks/peers/setup.sh``) through ``drivers/mbi_estimate.py``.

    .venv/bin/python benchmarks/estimation_crosscheck.py [--sigma 20 --triples 4 --seed 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _harness import DRIVERS, VENVS, find_dataset, no_dataset
from safeshare.synth.marginals import Measurement, estimate


def counts(frame: pd.DataFrame, sizes: dict[str, int], clique: tuple[str, ...]) -> np.ndarray:
    """The exact marginal of ``clique`` (axes in the clique's order)."""
    shape = tuple(sizes[a] for a in clique)
    index = np.ravel_multi_index([frame[a].to_numpy() for a in clique], shape)
    return np.bincount(index, minlength=int(np.prod(shape))).reshape(shape).astype(float)


def chosen_cliques(names: list[str], triples: int, rng: np.random.Generator) -> list[tuple]:
    """1-ways, a random spanning tree's pairs and random triples, attributes in domain order."""
    order = {n: i for i, n in enumerate(names)}
    cliques: list[tuple[str, ...]] = [(n,) for n in names]
    shuffled = [names[i] for i in rng.permutation(len(names))]
    for i in range(1, len(shuffled)):
        parent = shuffled[int(rng.integers(0, i))]
        cliques.append(tuple(sorted((parent, shuffled[i]), key=order.__getitem__)))
    small = [n for n in names if n not in ("fnlwgt", "capital-gain", "capital-loss")]
    for _ in range(triples):
        picked = [small[i] for i in rng.choice(len(small), 3, replace=False)]
        cliques.append(tuple(sorted(picked, key=order.__getitem__)))
    return cliques


def loss(fits: list[np.ndarray], measured: list[Measurement]) -> float:
    """The objective both estimators minimise: sum of squared errors in noise deviations."""
    return sum(
        0.5 * float(np.sum(((f - m.values) / m.sigma) ** 2))
        for f, m in zip(fits, measured, strict=True)
    )


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a / a.sum() - b / b.sum()).sum())


def main() -> int:
    """Fit both estimators to the same measurements and compare the fits."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sigma", type=float, default=20.0, help="noise, in records")
    parser.add_argument("--triples", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = find_dataset()
    if folder is None:
        return no_dataset()
    sizes: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    frame = pd.read_csv(folder / "adult.csv", usecols=list(sizes))
    names = list(sizes)
    rng = np.random.default_rng(args.seed)
    cliques = chosen_cliques(names, args.triples, rng)
    exact = [counts(frame, sizes, c) for c in cliques]
    measured = [
        Measurement(c, x + rng.normal(0.0, args.sigma, x.shape), args.sigma)
        for c, x in zip(cliques, exact, strict=True)
    ]
    total = float(len(frame))

    started = time.process_time()
    ours = estimate(sizes, measured, total=total, iterations=args.iterations, tolerance=1e-10)
    ours_cpu = time.process_time() - started
    ours_fits = [ours.model.project(c) for c in cliques]
    print(f"safeshare: {ours.iterations} iterations, {ours_cpu:.1f} CPU s")

    python = VENVS / "mbi" / "bin" / "python"
    if not python.is_file():
        print("mbi is not set up (bash benchmarks/peers/setup.sh): nothing to compare")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        data, out, domain = Path(tmp) / "m.npz", Path(tmp) / "fit.npz", Path(tmp) / "d.json"
        domain.write_text(json.dumps(sizes))
        arrays = {f"y{i}": m.values for i, m in enumerate(measured)}
        sigmas = np.array([args.sigma] * len(measured))
        np.savez(data, cliques=json.dumps(cliques), sigmas=sigmas, total=total, **arrays)
        command = [str(python), str(DRIVERS / "mbi_estimate.py"), str(data), str(domain), str(out)]
        command += ["--iterations", str(args.iterations)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        fitted = np.load(out)
        theirs_cpu = float(fitted["cpu"])
        theirs_fits = [fitted[f"fit{i}"].reshape(x.shape) for i, x in enumerate(exact)]
    print(f"mbi: {args.iterations} iterations, {theirs_cpu:.1f} CPU s (fit only, in-process)")

    print(f"\n{len(cliques)} measured sets, sigma {args.sigma:g} records, total {total:,.0f}")
    print(
        f"{'sets':<8} {'n':>3} {'max TVD(ours, mbi)':>19} {'mean':>9} {'TVD to truth: ours':>19} {'mbi':>8}"
    )
    for size in (1, 2, 3):
        idx = [i for i, c in enumerate(cliques) if len(c) == size]
        if not idx:
            continue
        between = [tvd(ours_fits[i], theirs_fits[i]) for i in idx]
        to_truth = [tvd(ours_fits[i], exact[i]) for i in idx]
        theirs_truth = [tvd(theirs_fits[i], exact[i]) for i in idx]
        print(
            f"{size}-way    {len(idx):>3} {max(between):>19.2e} {statistics.fmean(between):>9.2e} "
            f"{statistics.fmean(to_truth):>19.4f} {statistics.fmean(theirs_truth):>8.4f}"
        )
    ours_loss, theirs_loss = loss(ours_fits, measured), loss(theirs_fits, measured)
    print(
        f"\nloss: safeshare {ours_loss:,.2f}, mbi {theirs_loss:,.2f} (ratio {ours_loss / theirs_loss:.4f})"
    )
    print(f"CPU: mbi / safeshare = {theirs_cpu / max(ours_cpu, 1e-9):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
