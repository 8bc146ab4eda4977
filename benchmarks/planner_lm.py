"""Does the compute-aware planner predict DP-SGD language-model losses it never piloted?

    .venv/bin/python benchmarks/planner_lm.py                   # SMS and reviews, ~25 CPU min
    .venv/bin/python benchmarks/planner_lm.py --sets sms --flops 5e11 --widths 40,80 --seed 1
    .venv/bin/python benchmarks/planner_lm.py --pilots form     # the fitted loss model

``plan_compute`` lists the configurations a compute budget (``--flops``) allows for
``--widths`` and ``--batch-sizes`` at (``--epsilon``, ``--delta``).  Pilots of the
byte-level language model (``safeshare.train.language_model``) run on one split of a set's
texts, each scored by its mean loss per byte on held-out texts along the way (a learning
curve):

- ``--pilots curves`` (default): ``noise_batch_pilot_grid``, McKenna et al.'s method.  For
  each candidate size, 4 noise-batch ratios spread over its candidates' range, each run at
  a small batch (4 or more) with the noise scaled to the ratio, as long as the candidates
  it brackets; ``PilotCurves`` reads each candidate's loss off the curves (interpolated in
  log steps and log ratio).  No pilot runs a candidate's (batch, steps, noise).
- ``--pilots form``: short DP-SGD runs at ``--pilot-widths`` x ``--pilot-ratios`` (the
  steps alternating between ``--pilot-steps``, the noise multipliers between
  ``--pilot-sigmas``), and the loss model of ``safeshare.train.loss_model`` (with the size
  terms) fitted to them each way it can be (compute counted in steps or in records
  processed, with or without the learning curves), keeping the least leave-one-out error.

Then every configuration is trained for real, at its planned steps and noise, and scored
as the pilots were.  Printed: each configuration's predicted and measured loss, the
Spearman rank correlation, the mean absolute error beside the spread from the best to the
median configuration (issue goals: rho >= 0.8, error below the spread), and the same
figures for the baselines that would embarrass the planner: a constant prediction (the
pilots' mean loss) and the ranking by sigma/B alone; the CPU seconds and records processed
of the pilots beside those of the configurations; with ``--pilots form``, each way of
fitting's pilots' error beside its held-out figures (what choosing by the pilots missed).

SMS is the set the pilot designs were developed on; the reviews (UCI sentiment: Amazon,
IMDb and Yelp sentences) were not tuned on.  The pilots and this benchmark read the texts
without DP.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from _texts import read_set
from safeshare.train.language_model import (
    LanguageModelSettings,
    count_parameters,
    encode_bytes,
    train_language_model,
)
from safeshare.train.loss_model import LossEstimate, LossModel
from safeshare.train.pilot_curves import PilotCurves
from safeshare.train.pilots import (
    language_model_pilot_grid,
    noise_batch_pilot_grid,
    run_language_model_pilots,
)
from safeshare.train.planner import plan_compute, rank_by_loss, ranking_spread


def measured_loss(train: list[str], held_out: list[str], candidate, width: int, args) -> float:
    """Train the candidate's configuration for real and score it as the pilots are scored."""
    settings = LanguageModelSettings(
        context=args.context,
        width=width,
        layers=args.layers,
        heads=2,
        epochs=candidate.steps * candidate.batch_size / len(train),
        batch_size=candidate.batch_size,
        learning_rate=args.learning_rate,
        accountant="rdp",
    )
    model = train_language_model(
        train, epsilon=args.epsilon, delta=args.delta, settings=settings, seed=args.seed
    )
    scored = float(sum(max(1, min(len(encode_bytes(t)), args.context)) for t in held_out))
    return -float(model.log_likelihoods(held_out).sum()) / scored


def mae(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.abs(a - b)))


def run_set(name: str, args: argparse.Namespace) -> dict[str, float]:
    rng = np.random.default_rng(args.seed)
    texts = read_set(name)
    order = rng.permutation(len(texts))
    held_out = [texts[i] for i in order[: args.held_out]]
    train = [texts[i] for i in order[args.held_out : args.held_out + args.texts]]
    widths = [int(w) for w in args.widths.split(",")]
    sizes = {
        count_parameters(
            LanguageModelSettings(context=args.context, width=w, layers=args.layers)
        ): w
        for w in widths
    }
    plan = plan_compute(
        len(train),
        args.epsilon,
        args.delta,
        tokens_per_record=args.context,
        flops=args.flops,
        model_sizes=list(sizes),
        batch_sizes=[int(b) for b in args.batch_sizes.split(",")],
        accountant="rdp",
    )
    if args.pilots == "curves":
        grid = noise_batch_pilot_grid(plan, sizes)
    else:
        ratios = [c.noise_batch_ratio for c in plan.candidates]
        pilot_ratios = np.geomspace(min(ratios) / 1.2, max(ratios) * 1.2, args.pilot_ratios)
        sigmas = [c.noise_multiplier for c in plan.candidates]  # the plan's, before any data
        grid = language_model_pilot_grid(
            [int(w) for w in args.pilot_widths.split(",")],
            [float(r) for r in pilot_ratios],
            [int(s) for s in args.pilot_steps.split(",")],
            (min(sigmas), max(sigmas))
            if args.pilot_sigmas == "plan"
            else [float(s) for s in args.pilot_sigmas.split(",")],
        )
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # texts cut to the context: counted by the runs
        study = run_language_model_pilots(
            train, grid, held_out=held_out, context=args.context, layers=args.layers,
            learning_rate=args.learning_rate, rng=rng,
        )  # fmt: skip
    pilot_cpu = time.process_time() - started
    if args.pilots == "curves":
        model: LossEstimate = PilotCurves.fit(study.points())
        variants: dict[tuple[str, bool], LossEstimate] = {}
        how = f"read off their curves (leave-one-out error {model.error:.4f} nats/byte)"
    else:
        fitted = LossModel.fit(study.points())
        model = fitted
        # every way of fitting the planner tried, each to be scored on the held-out runs too
        variants = {
            (compute, curves): LossModel.fit(study.points(), compute=compute, curves=curves)
            for compute, curves, _ in fitted.tried
        }
        how = (
            f"loss model (T = {fitted.compute}, {'with' if fitted.curves else 'without'} the "
            f"curves, the least leave-one-out error of {len(fitted.tried)} ways) error "
            f"{fitted.error:.4f} nats/byte, exponents c {fitted.c:g}, e {fitted.e:g}, "
            f"h {fitted.h:g}, g {fitted.g:g}"
        )
    ranked = rank_by_loss(plan, model)
    pilot_records = sum(r.batch_size * r.steps for r in study.runs)
    print(
        f"\n{name}: {len(train)} training texts, {len(held_out)} held out; {len(grid)} "
        f"{args.pilots} pilots (widths {sorted({p.width for p in grid})}, batches "
        f"{sorted({r.batch_size for r in study.runs})}, steps "
        f"{sorted({r.steps for r in study.runs})}) in {pilot_cpu:.0f} CPU s, "
        f"{len(study.points())} points with their learning curves, {pilot_records:,} records "
        f"processed; {how}" + (f"; ranking refused: {ranked.refused}" if ranked.refused else ""),
        flush=True,
    )
    predicted, measured, by_ratio = [], [], []
    by_variant: dict[tuple[str, bool], list[float]] = {key: [] for key in variants}
    started = time.process_time()
    print(
        f"  {'width':>5} {'params':>7} {'batch':>5} {'steps':>5} {'sigma':>7} {'sigma/B':>9} "
        f"{'predicted':>9} {'measured':>8}"
    )
    for candidate, prediction in zip(ranked.candidates, ranked.predictions, strict=True):
        width = sizes[candidate.parameters]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = measured_loss(train, held_out, candidate, width, args)
        predicted.append(prediction.loss)
        measured.append(loss)
        for key, variant in variants.items():
            by_variant[key].append(
                variant.predict(
                    candidate.noise_batch_ratio,
                    candidate.steps,
                    candidate.parameters,
                    candidate.batch_size,
                )
            )
        by_ratio.append(candidate.noise_batch_ratio)
        print(
            f"  {width:>5} {candidate.parameters:>7} {candidate.batch_size:>5} "
            f"{candidate.steps:>5} {candidate.noise_multiplier:>7.3f} "
            f"{candidate.noise_batch_ratio:>9.5f} {prediction.loss:>9.4f} {loss:>8.4f}",
            flush=True,
        )
    runs_cpu = time.process_time() - started
    run_records = sum(c.batch_size * c.steps for c in ranked.candidates)
    p, m = np.array(predicted), np.array(measured)
    rho = float(spearmanr(p, m).statistic)
    error = mae(p, m)
    spread = ranking_spread(list(m))
    constant = np.full_like(m, np.mean([r.loss for r in study.runs]))
    rho_ratio = float(spearmanr(by_ratio, m).statistic)
    print(
        f"  Spearman {rho:.3f} (goal >= 0.8; sigma/B alone {rho_ratio:.3f}); mean absolute "
        f"error {error:.4f} (constant prediction {mae(constant, m):.4f}) against the spread "
        f"best to median {spread:.4f} (goal: error below it); {len(m)} configurations over "
        f"{len(sizes)} sizes in {runs_cpu:.0f} CPU s, {run_records:,} records processed "
        f"(the pilots: {pilot_cpu / runs_cpu:.0%} of the CPU, "
        f"{pilot_records / run_records:.0%} of the records)"
    )
    for (compute, curves), guesses in by_variant.items():  # what the choice by pilots missed
        g = np.array(guesses)
        chosen = isinstance(model, LossModel) and (compute, curves) == (
            model.compute,
            model.curves,
        )
        print(
            f"    T = {compute:<7} {'with' if curves else 'without'} curves: leave-one-out "
            f"{variants[compute, curves].error:.4f}, held-out Spearman "
            f"{float(spearmanr(g, m).statistic):.3f}, error {mae(g, m):.4f}"
            + ("  (chosen)" if chosen else "")
        )
    if args.out is not None:  # the pilots and the held-out runs, to refit other forms later
        record = {
            "set": name,
            "pilots": study.describe()["runs"],
            "loss_model": model.describe(),
            "held_out": [
                {**c.describe(), "predicted": float(a), "measured": float(b)}
                for c, a, b in zip(ranked.candidates, predicted, measured, strict=True)
            ],
        }
        with args.out.open("a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")
    return {"rho": rho, "error": error, "spread": spread}


def main() -> int:
    # dp-accounting logs each Renyi order it drops at large sampling rates: noise here
    logging.getLogger("absl").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="sms,reviews")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--held-out", type=int, default=300)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--flops", type=float, default=1e12)
    parser.add_argument("--widths", default="48,96", help="held-out model sizes (widths)")
    parser.add_argument("--batch-sizes", default="16,32,64,128")
    parser.add_argument(
        "--pilots",
        choices=("curves", "form"),
        default="curves",
        help="curves: noise-batch pilots at the candidates' sizes, read off their curves "
        "(PilotCurves); form: short pilots at --pilot-widths, a loss model fitted to them",
    )
    parser.add_argument("--pilot-widths", default="32,64,128", help="with --pilots form")
    parser.add_argument("--pilot-ratios", type=int, default=4)
    parser.add_argument("--pilot-steps", default="60,180,540")
    parser.add_argument(
        "--pilot-sigmas",
        default="plan",
        help="the pilots' noise multipliers, alternating (plan: the candidates' least and "
        "greatest; 2 was the pilots' one before)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=None, help="append each set's pilots and runs (JSON lines)"
    )
    args = parser.parse_args()
    results = {name: run_set(name, args) for name in args.sets.split(",")}
    print(
        "\n"
        + "; ".join(
            f"{name}: Spearman {r['rho']:.2f}, error {r['error']:.4f} vs spread {r['spread']:.4f}"
            for name, r in results.items()
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
