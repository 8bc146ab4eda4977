"""Benchmark driver: smartnoise-synth's AIM on integer-coded data, synthetic codes as CSV.

The column transformer is fitted on the public domain (codes ``0..size-1`` of every column),
not on the data, as in ``smartnoise_mst.py``: no budget goes to preprocessing and every
contender models the same domain.  ``--workload kway`` becomes ``degree=k`` with no
``max_cells`` filter (every k-way marginal is kept); ``--max-model-size`` and ``--rounds``
pass through.  smartnoise fixes 1,000 mirror-descent iterations per fit (no warm start), so
``--iterations`` must be 1000 or unset.  Run with the peer's own venv:
``benchmarks/.venvs/smartnoise/bin/python smartnoise_aim.py DATA.csv DOMAIN.json OUT.csv``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any

import pandas as pd
from _driver import aim_job
from smartnoise_mst import domain_transformer
from snsynth import Synthesizer

ITERATIONS = 1000  # hard-coded in snsynth's AIMSynthesizer


def main() -> None:
    """Fit smartnoise AIM on the data and write the synthetic integer codes."""
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    run = aim_job(__doc__)
    options = run.options
    if options["iterations"] not in (None, ITERATIONS):
        raise SystemExit(f"smartnoise AIM always runs {ITERATIONS} iterations per fit")
    sizes = run.sizes
    transformer = domain_transformer(sizes)
    if transformer.cardinality != list(sizes.values()):
        raise SystemExit(f"transformer domain {transformer.cardinality} != {list(sizes.values())}")

    settings: dict[str, Any] = {
        "degree": int(options["workload"][0]),
        "max_cells": math.prod(sizes.values()),
    }
    if options["max_model_size"] is not None:
        settings["max_model_size"] = options["max_model_size"]
    if options["rounds"] is not None:
        settings["rounds"] = options["rounds"]
    started = time.process_time()
    synth = Synthesizer.create("aim", epsilon=run.epsilon, delta=run.delta, **settings)
    synth.fit(
        run.frame,
        transformer=transformer,
        categorical_columns=list(sizes),
        preprocessor_eps=0.0,
    )
    if synth.epsilon != run.epsilon:
        raise SystemExit(f"smartnoise spent budget on preprocessing (left {synth.epsilon})")
    fitted = time.process_time()
    run.write(pd.DataFrame(synth.sample(len(run.frame)), columns=list(sizes)))
    result = {
        "settings": {"workload": options["workload"], **settings},
        "fit_cpu_s": fitted - started,
        "sample_cpu_s": time.process_time() - fitted,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
