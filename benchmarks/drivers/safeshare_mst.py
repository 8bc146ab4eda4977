"""Benchmark driver: safeshare's MST on integer-coded data, synthetic codes written as CSV.

Usage: python safeshare_mst.py DATA.csv DOMAIN.json OUT.csv [--epsilon 1] [--delta 1e-9]
"""

from __future__ import annotations

import pandas as pd
from _driver import job

from safeshare.data import Domain, Table
from safeshare.synth import MST


def main() -> None:
    """Fit MST on the data (secure noise) and write the synthetic integer codes."""
    run = job(__doc__)
    domain = Domain.from_sizes(run.sizes)
    table = Table({name: run.frame[name].to_numpy() for name in run.sizes}, domain)
    synthetic = MST(epsilon=run.epsilon, delta=run.delta).fit(table).sample()
    run.write(pd.DataFrame({name: synthetic.column(name) for name in run.sizes}))


if __name__ == "__main__":
    main()
