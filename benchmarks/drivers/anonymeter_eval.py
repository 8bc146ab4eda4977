"""Benchmark driver: anonymeter 1.1.0's singling-out (multivariate, 3 columns), linkability and
inference attacks, each against the training records with a control set.

python anonymeter_eval.py TRAIN.csv CONTROL.csv SYNTHETIC.csv --attacks 500 --seed 0
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from _eval import COLUMNS_A, COLUMNS_B, SECRET, job, report
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator


def risk(evaluator: object) -> dict[str, object]:
    value = evaluator.risk(confidence_level=0.95)  # type: ignore[attr-defined]
    results = evaluator.results(confidence_level=0.95)  # type: ignore[attr-defined]
    return {
        "risk": float(value.value),
        "interval": [float(value.ci[0]), float(value.ci[1])],
        "main": float(results.attack_rate.value),
        "control": None if results.control_rate is None else float(results.control_rate.value),
        "baseline": float(results.baseline_rate.value),
    }


def main() -> None:
    args = job(__doc__.splitlines()[0])
    # anonymeter draws its targets with numpy's global state: seed it for repeatable runs
    np.random.seed(args.seed)  # noqa: NPY002
    train, control, synthetic = (pd.read_csv(p) for p in (args.train, args.control, args.synthetic))
    if args.generalized:  # a column the release wrote as text ("17-26") is compared as text
        for column in synthetic.columns:
            numeric = pd.api.types.is_numeric_dtype
            if not numeric(synthetic[column]) and numeric(train[column]):
                for frame in (train, control, synthetic):
                    frame[column] = frame[column].astype(str)
    out: dict[str, object] = {}
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    so = SinglingOutEvaluator(
        ori=train, syn=synthetic, control=control, n_attacks=args.attacks, seed=args.seed
    )
    so.evaluate(mode="multivariate")
    out["singling_out"] = {"seconds": time.perf_counter() - start, **risk(so)}
    start = time.perf_counter()
    link = LinkabilityEvaluator(
        ori=train,
        syn=synthetic,
        control=control,
        n_attacks=args.attacks,
        aux_cols=(COLUMNS_A, COLUMNS_B),
    )
    link.evaluate(n_jobs=1)
    out["linkability"] = {"seconds": time.perf_counter() - start, **risk(link)}
    start = time.perf_counter()
    known = [c for c in train.columns if c != SECRET]
    inference = InferenceEvaluator(
        ori=train,
        syn=synthetic,
        control=control,
        aux_cols=known,
        secret=SECRET,
        n_attacks=args.attacks,
    )
    inference.evaluate(n_jobs=1)
    out["inference"] = {"seconds": time.perf_counter() - start, **risk(inference)}
    report(out)


if __name__ == "__main__":
    main()
