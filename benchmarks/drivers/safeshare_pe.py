"""Benchmark driver: safeshare's tabular Private Evolution on integer-coded data, codes as CSV.

Usage: python safeshare_pe.py DATA.csv DOMAIN.json OUT.csv [--epsilon 1] [--delta 1e-9]
[--iterations 10] [--samples 1000] [--degree 0.15] [--selection sample|rank]

The random and variation APIs draw from the public domain sizes only (every column
categorical, as adult-domain.json gives no more); the embedding is one-hot.  Secure
noise.  Prints one line per iteration (CPU seconds so far) and a final ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
from _driver import Job

from safeshare.data import Domain, Table
from safeshare.synth.pe import DomainAPI, PrivateEvolution, TabularEmbedder


def main() -> None:
    """Fit PE on the data and write the synthetic integer codes."""
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("data", "domain", "out"):
        parser.add_argument(name, type=Path)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--degree", type=float, default=0.15)
    parser.add_argument("--selection", choices=("sample", "rank"), default="sample")
    args = parser.parse_args()
    sizes: dict[str, int] = json.loads(args.domain.read_text())
    frame = pd.read_csv(args.data, usecols=list(sizes))[list(sizes)]
    run = Job(frame, sizes, args.out, args.epsilon, args.delta)
    domain = Domain.from_sizes(sizes)
    table = Table({name: frame[name].to_numpy() for name in sizes}, domain)
    started = time.process_time()

    def progress(step: str, done: float) -> None:
        print(f"{time.process_time() - started:8.2f} CPU s  {done:4.0%}  {step}", flush=True)

    model = PrivateEvolution(
        api=DomainAPI(domain),
        embedder=TabularEmbedder(domain),
        epsilon=run.epsilon,
        delta=run.delta,
        iterations=args.iterations,
        samples_per_iteration=args.samples,
        variation_degrees=args.degree,
        selection=args.selection,
        progress=progress,
    ).fit(table)
    fitted = time.process_time()
    synthetic = model.sample()
    run.write(pd.DataFrame({name: synthetic.column(name) for name in sizes}))
    settings = {k: getattr(args, k) for k in ("iterations", "samples", "degree", "selection")}
    result = {
        "settings": settings,
        "sigma": model.sigma_,
        "fit_cpu_s": fitted - started,
        "sample_cpu_s": time.process_time() - fitted,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
