"""Benchmark driver: AIM from the Private-PGM/mbi ``mechanisms/`` folder on mbi 2.0.

The mechanism scripts (``aim.py``, ``mechanism.py``, ``cdp2adp.py``) are third-party code
and are not committed; ``benchmarks/peers/setup.sh`` copies them into
``benchmarks/peers/vendor/private-pgm/``.  Run with the peer's own venv:
``benchmarks/.venvs/mbi/bin/python mbi_aim.py DATA.csv DOMAIN.json OUT.csv [--workload 2way]
[--max-model-size MB] [--rounds N] [--iterations N]``; unset options keep ``aim.py``'s
defaults (``max_model_size=80``, ``rounds=16 * columns``, ``max_iters=1000``).

The newest ``aim.py`` does not run on the released mbi 2.0.0 as it is; the driver adapts
mbi around it, never the vendored file:

* ``aim.py`` warm-starts ``MirrorDescent().estimate(..., potentials=...)``; mbi 2.0.0
  names that argument ``warm_start``.  The driver gives ``aim.py`` a ``MirrorDescent``
  whose ``estimate`` passes ``potentials`` on as ``warm_start``.
* mbi 2.0.0 compiles ``variable_elimination`` (used to project the model onto every
  candidate marginal the model does not hold) once per candidate per model structure,
  which never finished the first round here; the driver runs it uncompiled (the same
  computation, op by op).  Set ``MBI_AIM_JIT=1`` to keep mbi's compilation.

The workload is every k-way marginal with weight 1, as ``aim.py``'s own command line
builds it, but without its ``max_cells`` filter (all of them are kept).  Prints the CPU
seconds after each model fit and a final ``RESULT {json}`` line.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

from _driver import aim_job

VENDOR = Path(__file__).resolve().parent.parent / "peers" / "vendor" / "private-pgm"
NOT_SET_UP = 3  # exit status the harness reads as "peer not set up"
FILES = ("aim.py", "mechanism.py", "cdp2adp.py")


def adapted_estimation(started: float, fits: list[float]) -> Any:
    """An ``estimation`` namespace for ``aim.py``: mbi 2.0's MirrorDescent, warm start renamed."""
    from mbi import estimation

    class MirrorDescent(estimation.MirrorDescent):
        def estimate(self, domain: Any, loss_fn: Any, *args: Any, **kwargs: Any) -> Any:
            if "potentials" in kwargs:
                kwargs["warm_start"] = kwargs.pop("potentials")
            model = super().estimate(domain, loss_fn, *args, **kwargs)
            fits.append(time.process_time() - started)
            print(f"{fits[-1]:8.1f} CPU s  fit {len(fits)}: {len(loss_fn)} measurements")
            return model

    return types.SimpleNamespace(MirrorDescent=MirrorDescent)


def main() -> None:
    """Fit the upstream AIM mechanism on the data and write the synthetic integer codes."""
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    run = aim_job(__doc__)
    missing = [f for f in FILES if not (VENDOR / f).is_file()]
    if missing:
        print(
            f"mbi peer not set up: {VENDOR} lacks {', '.join(missing)}. Run "
            "`bash benchmarks/peers/setup.sh`, or clone https://github.com/ryan112358/mbi "
            f"and copy {', '.join(FILES)} from its mechanisms/ into {VENDOR}/",
            file=sys.stderr,
        )
        sys.exit(NOT_SET_UP)

    import pandas as pd
    from mbi import Dataset, Domain, junction_tree, marginal_oracles

    started = time.process_time()
    jit = os.environ.get("MBI_AIM_JIT") == "1"
    if not jit:
        compiled = marginal_oracles.variable_elimination
        marginal_oracles.variable_elimination = compiled.__wrapped__

    sys.path.insert(0, str(VENDOR))
    import aim

    fits: list[float] = []
    aim.estimation = adapted_estimation(started, fits)

    options = run.options
    settings: dict[str, Any] = {}
    if options["max_model_size"] is not None:
        settings["max_model_size"] = options["max_model_size"]
    if options["rounds"] is not None:
        settings["rounds"] = options["rounds"]
    if options["iterations"] is not None:
        settings["max_iters"] = options["iterations"]
    domain = Domain.fromdict(run.sizes)
    data = Dataset({name: run.frame[name].to_numpy() for name in run.sizes}, domain)
    k = int(options["workload"][0])
    workload = [(cl, 1.0) for cl in itertools.combinations(domain.attributes, k)]

    model, synthetic = aim.AIM(run.epsilon, run.delta, **settings).run(data, workload)
    fitted = time.process_time()
    codes = synthetic.to_dict()
    run.write(pd.DataFrame({name: codes[name] for name in run.sizes}))
    result = {
        "settings": {"workload": options["workload"], **settings},
        "variable_elimination_jit": jit,
        "rounds": len(fits) - 2,  # fits: the 1-way model, one per round, the final one
        "measured": len(domain) + len(fits) - 2,
        "model_size_mb": junction_tree.hypothetical_model_size(domain, list(model.cliques)),
        "fit_cpu_s": fitted - started,
        "sample_cpu_s": time.process_time() - fitted,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
