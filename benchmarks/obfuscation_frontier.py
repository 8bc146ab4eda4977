"""Utility against the strongest attack: the learned transform's frontier beside Gaussian noise.

Two held-out text classification tasks with the frozen MiniLM: movie-review sentences (UCI
Sentiment, IMDb part; the main case) and SMS spam (the second). For each, 600 texts train the
task head (on clean embeddings) and the transform; 200 unseen texts are sent obfuscated, with a
synthetic name and an 11-digit number planted in each, and attacked by every attack on every
row: nearest neighbour, BeamClean-style (bigram prior) and a learned inverter trained **from
scratch** on the frozen row (never the adversary the transform trained against), each with its
side knowledge from public review sentences of other sites (Amazon, Yelp), never the attacked
texts. Rows: plain Gaussian noise at several sigmas, and the learned transform at several
weights (the main weight on every seed, the others on the first unless ``--all-seeds``). It is
what ``safeshare obfuscate train`` + ``safeshare obfuscate attack`` compute, in worker
processes (one torch thread each).

    HF_HUB_OFFLINE=1 python benchmarks/obfuscation_frontier.py [--tasks imdb,sms]
        [--weights 0.25,0.5,1] [--main-weight 0.5] [--seeds 0,1,2] [--all-seeds]
        [--sigmas 0.02,0.035,0.05,0.1,0.2,0.3] [--steps 150] [--jobs 2]
        [--attacker learned-inverter|nearest-neighbour] [--inverter-steps 300]
        [--same-site 200]   # a stronger attacker: texts of the task's own source too

The Gaussian frontier at utility ``u`` is the least recovery of any Gaussian row whose F1 is at
least ``u - 0.02`` (what the best Gaussian choice keeps while matching the utility, within
0.02); a learned row whose F1 no Gaussian row reaches is compared at the best Gaussian F1.
``--summarise results.json`` prints the summary of an earlier run again. Goal (issue 20): at
equal F1 the strongest attack's token recovery on the learned transform is at most half the
Gaussian frontier's, planted whole names and numbers too, and the learned transform is below
the Gaussian frontier at three utility levels (its three weights).
"""

from __future__ import annotations

import argparse
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
PUBLIC = ("uci_sentiment_amazon_cells_labelled.tsv", "uci_sentiment_yelp_labelled.tsv")
#: task -> (file under datasets/text, its two columns in order)
TASKS = {
    "imdb": ("uci_sentiment_imdb_labelled.tsv", ["text", "label"]),
    "sms": ("sms_spam_collection.tsv", ["label", "text"]),
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
    name, columns = TASKS[task]
    frame = pd.read_csv(TEXT / name, sep="\t", header=None, names=columns, quoting=3)
    order = np.random.default_rng(0).permutation(len(frame))
    train, test = frame.iloc[order[:600]], frame.iloc[order[600:800]]
    public = pd.concat(
        pd.read_csv(TEXT / name, sep="\t", header=None, names=["text", "label"], quoting=3)
        for name in PUBLIC
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
class Job:
    task: str
    weight: float | None  # None: a Gaussian row
    sigma: float | None
    seed: int
    attacker: str
    steps: int
    inverter_steps: int
    same_site: int = 0


class GaussianRow:
    """Plain Gaussian noise in the place of a transform, so a row is attacked exactly as the
    transform is (the audit's Gaussian rows are the same noise)."""

    def __init__(self, sigma: float, fingerprint: str) -> None:
        self.sigma, self.fingerprint, self.head = sigma, fingerprint, None

    def check_model(self, model: Any) -> None:
        ObfuscationTransform.check_model(self, model)  # type: ignore[arg-type]

    def sample(self, embeds: Any, attention_mask: Any, generator: Any) -> Any:
        return gaussian_noise(embeds, attention_mask, self.sigma, generator)


_CACHE: dict[str, Any] = {}


def _setup(task: str, same_site: int) -> tuple[Any, Any, tuple[list[str], ...]]:
    import torch

    from safeshare.obfuscate.head import fit_head
    from safeshare.obfuscate.model import load_model

    torch.set_num_threads(1)
    warnings.simplefilter("ignore", UserWarning)
    if "model" not in _CACHE:
        _CACHE["model"] = load_model(max_length=64)
    key = f"{task} {same_site}"
    if key not in _CACHE:
        data = task_data(task, same_site)
        _CACHE[key] = (fit_head(_CACHE["model"], data[0], data[1]), data)
    head, data = _CACHE[key]
    return _CACHE["model"], head, data


def run(job: Job) -> dict[str, Any]:
    """Train (for a learned row) and attack one row; numbers only."""
    from safeshare.obfuscate.audit import attack_transform, f1_score
    from safeshare.obfuscate.training import train_transform

    model, head, (texts, labels, attacked, truth, public) = _setup(job.task, job.same_site)
    began = cpu_seconds()
    if job.weight is None:
        transform: Any = GaussianRow(float(job.sigma or 0), model.fingerprint)
    else:
        trained = train_transform(
            model,
            texts,
            head=head,
            labels=labels,
            weight=job.weight,
            steps=job.steps,
            attacker=job.attacker,
            seed=job.seed,
        )
        transform = trained.transform
    transform.head = head
    report = attack_transform(
        model,
        transform,
        attacked,
        public,
        labels=truth,
        inverter_steps=job.inverter_steps,
        seed=job.seed,
    )
    condition = report.conditions[0]
    row = condition.to_dict()
    positive = str(report.positive)
    constant = f1_score(truth, [positive] * len(truth), positive)
    return {
        "task": job.task,
        "weight": job.weight,
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


def frontier(gaussian: list[dict[str, Any]], f1: float, key: Any) -> float:
    """The least ``key(row)`` of the Gaussian rows with F1 >= f1 - TOLERANCE (f1 at most the
    best Gaussian F1, so one row at least qualifies)."""
    return float(min(key(row) for row in gaussian if row["f1"] >= f1 - TOLERANCE))


def summarise(rows: list[dict[str, Any]], task: str) -> list[str]:
    gaussian = [r for r in rows if r["task"] == task and r["weight"] is None]
    learned = sorted(
        (r for r in rows if r["task"] == task and r["weight"] is not None),
        key=lambda r: (r["weight"], r["seed"]),
    )
    if not gaussian:
        return [f"{task}: no Gaussian rows"]
    constant = gaussian[0]["constant_f1"]
    lines = [
        f"\n== {task}: clean F1 {gaussian[0]['clean_f1']:.3f}; a constant predictor (every text "
        f"the scored class) {constant:.3f}: a row at most {TOLERANCE} above it keeps no utility",
        f"{'row':<24} {'F1':>6} {'NN':>7} {'beam':>7} {'invert':>7} {'strong':>7} "
        f"{'names':>6} {'numbers':>7} {'bits':>11} {'CPU s':>6}",
    ]
    for row in sorted(gaussian, key=lambda r: r["sigma"]) + learned:
        name = (
            f"Gaussian σ={row['sigma']:g}"
            if row["weight"] is None
            else f"learned w={row['weight']:g} s={row['seed']}"
        )
        found = list(row["recovery"].values())
        cells = " ".join(f"{v:7.1%}" for v in found)
        bits = "-" if row["bits"] is None else f"{row['bits']:.2f}/{row['prior_bits']:.2f}"
        pii = row["pii_entities"]
        lines.append(
            f"{name:<24} {row['f1']:6.3f} {cells} {row['strongest']:7.1%} "
            f"{pii.get('name', 0):6.1%} {pii.get('number', 0):7.1%} {bits:>11} "
            f"{row['cpu_s']:6.0f}"
        )
    lines.append(
        "\nat equal F1 (Gaussian frontier: least recovery of a Gaussian row with F1 >= the "
        f"row's - {TOLERANCE})"
    )
    met = {"tokens": 0, "pii": 0}
    weights = sorted({r["weight"] for r in learned})
    for row in learned:
        if row["f1"] <= constant + TOLERANCE:
            lines.append(
                f"w={row['weight']:g} s={row['seed']}: F1 {row['f1']:.3f}, no better than the "
                "constant predictor: hides by losing the task (not met)"
            )
            continue
        best = max(r["f1"] for r in gaussian)
        if row["f1"] > best + TOLERANCE:  # no Gaussian row keeps this much
            lines.append(
                f"w={row['weight']:g} s={row['seed']}: F1 {row['f1']:.3f} above every Gaussian "
                f"row's; compared at the best Gaussian F1 ({best:.3f})"
            )
        at = min(row["f1"], best)
        bound, names, numbers = (
            frontier(gaussian, at, key)
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
            f"w={row['weight']:g} s={row['seed']}: strongest {row['strongest']:.1%} vs Gaussian "
            f"{bound:.1%} (ratio {row['strongest'] / max(bound, 1e-9):.2f}, "
            f"{'half or less' if tokens_ok else 'NOT half'}); names {pii.get('name', 0):.0%} vs "
            f"{names:.0%}, numbers {pii.get('number', 0):.0%} vs {numbers:.0%} "
            f"({'half or less' if pii_ok else 'NOT half'})"
        )
    mean_rows = []
    for weight in weights:
        runs = [r for r in learned if r["weight"] == weight]
        f1 = float(np.mean([r["f1"] for r in runs]))
        strongest = float(np.mean([r["strongest"] for r in runs]))
        best = max(r["f1"] for r in gaussian)
        bound = frontier(gaussian, min(f1, best), lambda r: r["strongest"])
        mean_rows.append(f1 > constant + TOLERANCE and strongest < bound)
        shown = f"{bound:.1%}"
        lines.append(
            f"weight {weight:g}, mean of {len(runs)} seeds: F1 {f1:.3f}, strongest "
            f"{strongest:.1%}, Gaussian frontier there {shown}"
        )
    lines.append(
        f"{task}: tokens half or less in {met['tokens']}/{len(learned)} runs; planted PII half "
        f"or less in {met['pii']}/{len(learned)}; below the Gaussian frontier at "
        f"{sum(mean_rows)} of {len(weights)} utility levels (weights)"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="imdb")
    parser.add_argument("--weights", default="0.25,0.5,1")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sigmas", default="0.02,0.035,0.05,0.1,0.2,0.3")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument(
        "--main-weight",
        type=float,
        default=0.5,
        help="the weight run on every seed; the others run on the first seed only",
    )
    parser.add_argument("--all-seeds", action="store_true", help="every weight on every seed")
    parser.add_argument("--inverter-steps", type=int, default=300)
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
    common = (args.attacker, args.steps, args.inverter_steps, args.same_site)
    jobs = [
        Job(task, None, float(sigma), 0, *common)
        for task in tasks
        for sigma in args.sigmas.split(",")
    ] + [
        Job(task, float(weight), None, seed, *common)
        for task in tasks
        for weight in args.weights.split(",")
        for seed in (seeds if args.all_seeds or float(weight) == args.main_weight else seeds[:1])
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
                f"  done {row['task']} w={row['weight']} σ={row['sigma']} seed={row['seed']}: "
                f"F1 {row['f1']:.3f}, strongest {row['strongest']:.1%}",
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
