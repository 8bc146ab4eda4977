"""Do the private votes move tabular Private Evolution?  An ablation on adult-pgm.

Tabular PE (:class:`~safeshare.synth.pe.evolution.PrivateEvolution` with the public domain's
:class:`~safeshare.synth.pe.tabular.DomainAPI` and one-hot embedding, the settings of
``drivers/safeshare_pe.py``) at epsilon 1 and without noise (rho = 1e9), beside **iteration 0**
(the random API's first population: uniform codes, no private data, resampled to the data's
size as PE's release resamples its last population), MST and AIM at epsilon 1, and the two
baselines a release must beat: the records with each column shuffled on its own (independent
columns) and a bootstrap resample.  Every set has as many rows as the data and is scored by the
neutral scorer (``safeshare.evaluate.neutral``: mean TVD over all 364 3-way marginals) against
the full data.  delta = 1e-9; the domain (adult-domain.json) is public.

    .venv/bin/python benchmarks/pe_tabular.py                 # ~5 CPU min
    .venv/bin/python benchmarks/pe_tabular.py --seeds 0 --iterations 5
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from _harness import find_dataset, no_dataset
from safeshare.data import Domain, Table
from safeshare.evaluate.neutral import neutral_tvd
from safeshare.synth import AIM, MST
from safeshare.synth.pe import DomainAPI, PrivateEvolution, TabularEmbedder

DELTA = 1e-9
NO_NOISE_RHO = 1e9  # sigma = sqrt(T / 2 rho): about 7e-5 votes at T = 10


def frame_of(table: Table, names: list[str]) -> pd.DataFrame:
    return pd.DataFrame({name: table.column(name) for name in names})


def pe(
    table: Table, domain: Domain, epsilon: float, seed: int, args: argparse.Namespace
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """PE's release (the data's size) and its iteration 0, resampled alike."""
    budget = {"rho": NO_NOISE_RHO} if math.isinf(epsilon) else {"epsilon": epsilon}
    model = PrivateEvolution(
        api=DomainAPI(domain),
        embedder=TabularEmbedder(domain),
        delta=DELTA,
        iterations=args.iterations,
        samples_per_iteration=args.samples,
        variation_degrees=0.15,
        rng=seed,
        **budget,
    )
    started = time.process_time()
    model.fit(table)
    cpu = time.process_time() - started
    names = list(domain.names)
    released = frame_of(model.sample(len(table)), names)
    first = model.initial_
    if first is None:  # (drawn by this very fit: there is no checkpoint to lose it)
        raise RuntimeError("PE kept no first population")
    rows = np.random.default_rng(seed).integers(0, len(first), len(table))
    return released, first.iloc[rows].reset_index(drop=True)[names], cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    folder = find_dataset()
    if folder is None:
        return no_dataset()
    sizes: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    names = list(sizes)
    real = pd.read_csv(folder / "adult.csv", usecols=names)[names]
    domain = Domain.from_sizes(sizes)
    table = Table({name: real[name].to_numpy() for name in names}, domain)
    rows: list[dict[str, Any]] = []

    def score(case: str, seed: int | None, synthetic: pd.DataFrame, cpu: float = 0.0) -> None:
        tvd = neutral_tvd(real, synthetic, 3).mean
        rows.append({"case": case, "seed": seed, "tvd3": tvd, "cpu_s": cpu})
        print(f"{case} seed {seed}: 3-way TVD {tvd:.4f} ({cpu:.0f} CPU s)", file=sys.stderr)

    for seed in args.seeds:
        rng = np.random.default_rng(seed)
        score("bootstrap", seed, real.iloc[rng.integers(0, len(real), len(real))])
        shuffled = pd.DataFrame({name: rng.permutation(real[name].to_numpy()) for name in names})
        score("independent columns", seed, shuffled)
        for epsilon in (1.0, math.inf):
            released, first, cpu = pe(table, domain, epsilon, seed, args)
            if math.isinf(epsilon):
                score("iteration 0 (uniform codes)", seed, first)
            score(f"PE, epsilon={epsilon:g}", seed, released, cpu)
        for name, method in (("MST", MST), ("AIM", AIM)):
            started = time.process_time()
            model = method(epsilon=1.0, delta=DELTA, rng=seed).fit(table)
            cpu = time.process_time() - started
            score(f"{name}, epsilon=1", seed, frame_of(model.sample(len(table)), names), cpu)
    print(f"adult-pgm: {len(real)} rows, {len(names)} columns; T={args.iterations}, "
          f"{args.samples} samples; mean 3-way TVD (neutral scorer) per seed")  # fmt: skip
    for case in dict.fromkeys(str(r["case"]) for r in rows):
        runs = [r for r in rows if r["case"] == case]
        tvd = " / ".join(f"{r['tvd3']:.4f}" for r in runs)
        cpu = np.mean([r["cpu_s"] for r in runs])
        print(f"{case:30s} {tvd:>17s} {cpu:8.0f} CPU s")
    args.out.mkdir(parents=True, exist_ok=True)
    file = args.out / f"pe_tabular-{time.strftime('%Y%m%d-%H%M%S')}.json"
    file.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}))
    print(f"written {file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
