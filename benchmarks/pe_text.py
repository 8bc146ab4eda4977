"""Do the private votes move text Private Evolution?  An ablation on the UCI sentiment sentences.

The ~3,000 labelled sentences of ``../shared/datasets/text/uci_sentiment_*_labelled.tsv``
(Yelp, Amazon, IMDb; ``sentence<TAB>0|1``) are split 80/20 with a fixed seed; PE never sees
the test split.  Text PE (:class:`~safeshare.synth.pe.labels.LabelledEvolution`, MiniLM
embeddings, delta=1e-5) runs on the training split through the word-level
:class:`~safeshare.synth.pe.words.WordAPI` and the bundled ``reviews`` vocabulary (public
material only: the CPU floor, no language model), with each selection:

* ``sample`` (PE: parents drawn in proportion to the votes, each varied once),
* ``rank`` (Aug-PE: the most voted quarter kept, each varied into three more),

at each budget of ``--epsilons`` (``inf``: no noise, rho = 1e9, sigma ~ 1e-4 votes: what the
votes alone can do), beside **iteration 0** (the random API's first population: no private
data at all).  Each synthetic set is scored as a user would:

* **accuracy**: logistic regression on MiniLM vectors trained on the synthetic texts, tested
  on the real test split (the real training texts give the ceiling);
* **Fréchet distance** to the real test split in MiniLM space (the real training texts give
  the floor);
* words per text and the share of distinct texts.

Accuracy and distance are taken on as many texts of every set (``--compared``, by default
iteration 0's count, evenly spaced rows): both depend on the count.

The votes are worth something when the rows with private votes beat iteration 0 and
``inf`` beats the noisy budgets.  ``--blind`` adds PE without noise whose votes are blind to
the data (the private texts embedded as random directions): what selection and variation do
with votes that carry nothing of the private texts, beside what the private votes buy.  CPU =
user + sys of this process for PE's fit (embeddings included; each run embeds from scratch).

    .venv/bin/python benchmarks/pe_text.py                          # ~25 CPU min on 2 cores
    .venv/bin/python benchmarks/pe_text.py --epsilons 4 inf --selections rank --seeds 0
    .venv/bin/python benchmarks/pe_text.py --selections sample --epsilons inf --blind
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from safeshare.evaluate.text import frechet_distance, spread
from safeshare.synth.pe.labels import LabelledEvolution
from safeshare.synth.pe.text import MiniLMEmbedder
from safeshare.synth.pe.words import Vocabulary, WordAPI

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT.parent / "shared" / "datasets" / "text"
FILES = [f"uci_sentiment_{name}_labelled.tsv" for name in ("yelp", "amazon_cells", "imdb")]
NAMES = {0: "negative", 1: "positive"}
DELTA = 1e-5
NO_NOISE_RHO = 1e9  # sigma = sqrt(T / 2 rho): about 5e-5 votes at T = 5


def load() -> tuple[pd.DataFrame, pd.DataFrame]:
    frames = [
        pd.read_csv(
            TEXT / f, sep="\t", header=None, names=["text", "label"], quoting=csv.QUOTE_NONE
        )
        for f in FILES
    ]
    data = pd.concat(frames, ignore_index=True)
    data["text"] = data["text"].str.strip()
    order = np.random.default_rng(0).permutation(len(data))  # one split for every run
    cut = int(0.8 * len(data))
    return data.iloc[order[:cut]], data.iloc[order[cut:]]


class CachedEmbedder:
    """MiniLM with a cache by text: the scores reuse what PE already embedded."""

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        self.embedder = embedder
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        texts = samples["text"].astype(str).tolist()
        new = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if new:
            vectors = self.embedder.embed(pd.DataFrame({"text": new}))
            self.cache.update(zip(new, vectors, strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 384))


class BlindEmbedder:
    """An embedder that gives the private texts random directions: every vote is cast, without
    noise, but says nothing of the private data.  Beside the no-noise run it shows what the
    data's votes buy over selection and variation alone (the synthetic texts, word salad from
    a public vocabulary, never equal a private text)."""

    def __init__(self, embed: CachedEmbedder, private: pd.DataFrame, seed: int) -> None:
        self.embed_texts, self.private = embed, set(private["text"].astype(str))
        self.rng = np.random.default_rng(seed)

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        vectors = self.embed_texts.embed(samples).copy()
        private = samples["text"].astype(str).isin(self.private).to_numpy()
        random = self.rng.normal(size=(int(private.sum()), vectors.shape[1]))
        vectors[private] = random / np.linalg.norm(random, axis=1, keepdims=True)
        return vectors


def scores(
    embed: CachedEmbedder, texts: pd.DataFrame, test: pd.DataFrame, count: int
) -> dict[str, float]:
    """What a user measures: test accuracy, Fréchet distance to the test split, words, variety.

    The accuracy and the distance are taken on ``count`` evenly spaced texts of every set (both
    depend on how many texts there are: 2,400 PE texts against 200 of iteration 0 would favour
    PE); words and variety on all of them."""
    compared = spread(texts, count)
    classifier = LogisticRegression(max_iter=2000, C=1.0)
    classifier.fit(embed.embed(compared), compared["label"].to_numpy())
    accuracy = (classifier.predict(embed.embed(test)) == test["label"].to_numpy()).mean()
    return {
        "accuracy": float(accuracy),
        "frechet": frechet_distance(embed.embed(compared), embed.embed(test)),
        "words": float(texts["text"].str.split().str.len().mean()),
        "distinct": float(texts["text"].nunique() / len(texts)),
    }


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def evolve(
    args: argparse.Namespace,
    epsilon: float,
    selection: str,
    seed: int,
    train: pd.DataFrame,
    embed: CachedEmbedder,
    blind: bool = False,
) -> tuple[pd.DataFrame, dict]:
    base = WordAPI(Vocabulary.bundled("reviews"))
    embedder = BlindEmbedder(embed, train, seed) if blind else embed
    budget = {"rho": NO_NOISE_RHO} if math.isinf(epsilon) else {"epsilon": epsilon}
    model = LabelledEvolution(
        lambda label: base.for_label(NAMES[label]),
        embedder,
        labels=[0, 1],
        delta=DELTA,
        iterations=args.iterations,
        samples_per_iteration=args.population,
        selection=selection,
        offspring=args.offspring if selection == "rank" else None,
        rng=seed,
        **budget,
    )
    embed.cache.clear()  # every run embeds from scratch: its CPU time is honest
    start = cpu()
    synthetic = model.fit(train).sample(len(train))
    return synthetic, {"pe_cpu_s": cpu() - start, "sigma": model.describe()["sigma"]}


def first_population(args: argparse.Namespace, seed: int) -> pd.DataFrame:
    """Iteration 0: the random API's samples for each label, no private data."""
    base, rng = WordAPI(Vocabulary.bundled("reviews")), np.random.default_rng(seed)
    parts = [
        base.for_label(NAMES[label]).random(args.population, rng).assign(label=label)
        for label in (0, 1)
    ]
    return pd.concat(parts, ignore_index=True)


def table(rows: list[dict]) -> list[str]:
    lines = [
        f"{'data':28s} {'seeds':>5s} {'accuracy':>17s} {'Fréchet':>17s} {'words':>6s} "
        f"{'distinct':>8s} {'PE CPU s':>8s}"
    ]
    for name in dict.fromkeys(r["case"] for r in rows):
        runs = [r for r in rows if r["case"] == name]
        acc = " / ".join(f"{r['accuracy']:.3f}" for r in runs)
        fid = " / ".join(f"{r['frechet']:.3f}" for r in runs)
        cpu_s = statistics.mean(r.get("pe_cpu_s", 0.0) for r in runs)
        lines.append(
            f"{name:28s} {len(runs):5d} {acc:>17s} {fid:>17s} "
            f"{statistics.mean(r['words'] for r in runs):6.1f} "
            f"{statistics.mean(r['distinct'] for r in runs):8.1%} {cpu_s:8.0f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--population", type=int, default=100, help="samples per label and step")
    parser.add_argument("--selections", nargs="+", default=["sample", "rank"])
    parser.add_argument("--offspring", type=int, default=4, help="rank: samples per selected one")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, math.inf])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--blind", action="store_true", help="also run 'sample' with votes blind to the data"
    )
    parser.add_argument(
        "--compared",
        type=int,
        help="texts of every set scored (default: iteration 0's, 2 x --population)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    if not all((TEXT / f).is_file() for f in FILES):
        print(f"skipped: the sentiment sentences are not under {TEXT}")
        return 0
    train, test = load()
    embed = CachedEmbedder(MiniLMEmbedder(batch_size=64))
    count = args.compared or 2 * args.population  # (iteration 0's size)
    rows = [{"case": "real training texts", **scores(embed, train, test, count)}]
    for seed in args.seeds:
        start = first_population(args, seed)
        rows.append({"case": "iteration 0", "seed": seed, **scores(embed, start, test, count)})
    for selection in args.selections:
        for epsilon in args.epsilons:
            for seed in args.seeds:
                synthetic, cost = evolve(args, epsilon, selection, seed, train, embed)
                case = f"{selection}, epsilon={epsilon:g}"
                scored = scores(embed, synthetic, test, count)
                rows.append({"case": case, "seed": seed, **cost, **scored})
                print(f"{case} seed {seed}: {rows[-1]}", file=sys.stderr, flush=True)
    for seed in args.seeds if args.blind else []:
        synthetic, cost = evolve(args, math.inf, "sample", seed, train, embed, blind=True)
        case = "sample, no noise, blind votes"
        rows.append({"case": case, "seed": seed, **cost, **scores(embed, synthetic, test, count)})
        print(f"{case} seed {seed}: {rows[-1]}", file=sys.stderr, flush=True)
    print(
        f"train {len(train)} / test {len(test)} texts; T={args.iterations}, "
        f"{args.population} samples per label, delta={DELTA:g}; accuracy and Fréchet distance "
        f"on {count} texts of every set; scores per seed"
    )
    print("\n".join(table(rows)))
    args.out.mkdir(parents=True, exist_ok=True)
    file = args.out / f"pe_text-{time.strftime('%Y%m%d-%H%M%S')}.json"
    written = {"args": vars(args) | {"out": str(args.out)}, "rows": rows}
    file.write_text(json.dumps(written, indent=1, default=str))
    print(f"written {file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
