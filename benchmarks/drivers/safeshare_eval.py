"""Benchmark driver: safeshare's singling-out (3 columns), linkability and inference attacks.

The three CSVs are read as text, one domain is read from train + control (not DP: the data
owner's evaluation), and each attack runs on the integer codes.  With ``--generalized`` the
synthetic table's generalized values (``20-29``, ``*``) are read as the sets of codes they
cover: singling out writes its predicates over the cells as written (a record matches
``17-26`` when its age lies there), and the distance attacks read each generalized cell at
the distance of the closest code it covers (``safeshare evaluate``'s reading).

python safeshare_eval.py TRAIN.csv CONTROL.csv SYNTHETIC.csv --attacks 500 --seed 0
"""

from __future__ import annotations

import time

import numpy as np
from _eval import COLUMNS_A, COLUMNS_B, SECRET, job, report

from safeshare.data import encode_frame, read_frame
from safeshare.evaluate.generalized import cell_sets
from safeshare.evaluate.inference import inference
from safeshare.evaluate.linkability import linkability
from safeshare.evaluate.singling_out import singling_out
from safeshare.release.evaluation import evaluation_domain


def summary(result: object, seconds: float) -> dict[str, object]:
    return {
        "seconds": seconds,
        "risk": float(result.risk),  # type: ignore[attr-defined]
        "interval": [float(x) for x in result.interval],  # type: ignore[attr-defined]
        "main": float(result.main.value),  # type: ignore[attr-defined]
        "control": float(result.control.value),  # type: ignore[attr-defined]
        "baseline": float(result.baseline.value),  # type: ignore[attr-defined]
    }


def main() -> None:
    args = job(__doc__.splitlines()[0])
    start = time.perf_counter()
    frames = [read_frame(p) for p in (args.train, args.control, args.synthetic)]
    domain, _ = evaluation_domain(frames[0], frames[1])
    train, control = (encode_frame(f, domain)[0] for f in frames[:2])
    covers = None
    if args.generalized:
        cells = cell_sets(frames[2], domain)
        synthetic = cells.impute(np.random.default_rng([args.seed, 1]))
        covers = cells.covers()
    else:
        synthetic = encode_frame(frames[2], domain)[0]
    prepare = time.perf_counter() - start
    rng = np.random.default_rng(args.seed)
    out: dict[str, object] = {"prepare_seconds": prepare}
    start = time.perf_counter()
    result = singling_out(
        synthetic, train, control, rng, attacks=args.attacks, width=3, covers=covers
    )
    out["singling_out"] = summary(result, time.perf_counter() - start)
    start = time.perf_counter()
    result = linkability(
        synthetic,
        train,
        control,
        rng,
        attacks=args.attacks,
        columns_a=COLUMNS_A,
        columns_b=COLUMNS_B,
        covers=covers,
    )
    out["linkability"] = summary(result, time.perf_counter() - start)
    start = time.perf_counter()
    result = inference(synthetic, train, control, SECRET, rng, attacks=args.attacks, covers=covers)
    out["inference"] = summary(result, time.perf_counter() - start)
    report(out)


if __name__ == "__main__":
    main()
