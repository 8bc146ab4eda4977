"""Benchmark driver: safeshare's AIM on integer-coded data, synthetic codes written as CSV.

Usage: python safeshare_aim.py DATA.csv DOMAIN.json OUT.csv [--epsilon 1] [--delta 1e-9]
[--workload 3way|2way] [--max-model-size MB] [--rounds N] [--iterations N]

Unset options keep AIM's defaults (``max_model_size=80``, rounds ``4 * columns``, 100
iterations per round).  Secure noise.  Prints one line per round (CPU seconds so far) and a
final ``RESULT {json}`` line with what the mechanism did.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pandas as pd
from _driver import aim_job

from safeshare.data import Domain, Table
from safeshare.synth import AIM


def main() -> None:
    """Fit AIM on the data and write the synthetic integer codes."""
    run = aim_job(__doc__)
    options = run.options
    settings: dict[str, Any] = {"workload": options["workload"]}
    if options["max_model_size"] is not None:
        settings["max_model_size"] = options["max_model_size"]
    if options["rounds"] is not None:
        settings["max_rounds"] = options["rounds"]
    if options["iterations"] is not None:
        settings["iterations"] = options["iterations"]
    domain = Domain.from_sizes(run.sizes)
    table = Table({name: run.frame[name].to_numpy() for name in run.sizes}, domain)

    started = time.process_time()

    def progress(step: str, done: float) -> None:
        print(f"{time.process_time() - started:8.2f} CPU s  {done:4.0%}  {step}", flush=True)

    model = AIM(epsilon=run.epsilon, delta=run.delta, progress=progress, **settings).fit(table)
    fitted = time.process_time()
    synthetic = model.sample()
    run.write(pd.DataFrame({name: synthetic.column(name) for name in run.sizes}))
    described = model.describe()
    result = {
        "settings": settings,
        "rounds": described["rounds"],
        "measured": len(described["measured"]),
        "model_size_mb": described["model_size_mb"],
        "notes": described["notes"],
        "fit_cpu_s": fitted - started,
        "sample_cpu_s": time.process_time() - fitted,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
