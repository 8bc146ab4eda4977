"""Benchmark driver: smartnoise-synth's MST on integer-coded data, synthetic codes as CSV.

The column transformer is fitted on the public domain (codes ``0..size-1`` of every
column), not on the data, so no budget goes to preprocessing and every contender models
the same domain.  Run with the peer's own venv:
``benchmarks/.venvs/smartnoise/bin/python smartnoise_mst.py DATA.csv DOMAIN.json OUT.csv``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from _driver import job
from snsynth import Synthesizer, TableTransformer
from snsynth.transform.label import LabelTransformer


def domain_transformer(sizes: dict[str, int]) -> TableTransformer:
    """A transformer whose labels are the codes ``0..size-1`` of each column, in order."""
    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in sizes])
    rows = max(sizes.values())
    public = pd.DataFrame({name: np.arange(rows) % size for name, size in sizes.items()})
    transformer.fit(public, epsilon=0.0)
    return transformer


def main() -> None:
    """Fit smartnoise MST on the data and write the synthetic integer codes."""
    run = job(__doc__)
    sizes = run.sizes
    transformer = domain_transformer(sizes)
    if transformer.cardinality != list(sizes.values()):
        raise SystemExit(f"transformer domain {transformer.cardinality} != {list(sizes.values())}")

    synth = Synthesizer.create("mst", epsilon=run.epsilon, delta=run.delta)
    synth.fit(
        run.frame,
        transformer=transformer,
        categorical_columns=list(sizes),
        preprocessor_eps=0.0,
    )
    if synth.epsilon != run.epsilon:
        raise SystemExit(f"smartnoise spent budget on preprocessing (left {synth.epsilon})")
    run.write(pd.DataFrame(synth.sample(len(run.frame)), columns=list(sizes)))


if __name__ == "__main__":
    main()
