"""Text Private Evolution on the UCI sentiment sentences (issue 5), CPU floor: no language model.

The ~3,000 labelled sentences of ``../shared/datasets/text/uci_sentiment_*_labelled.tsv``
(Yelp, Amazon, IMDb; ``sentence<TAB>0|1``) are split 80/20 with a fixed seed.  Text PE
(:class:`~safeshare.synth.pe.labels.LabelledEvolution` over the word-level
:class:`~safeshare.synth.pe.words.WordAPI` and the bundled ``reviews`` vocabulary, MiniLM
embeddings) runs at epsilon=4, delta=1e-5 (a fixed public value, below 1/n for n=2,400
records) on the training split.  A logistic regression on MiniLM embeddings is trained on

* the real training text (the ceiling),
* the synthetic text (the goal: >= 90% of the real accuracy on the test split),
* the iteration-0 samples of the random API (public material only: the no-data baseline),

and scored on the held-out real test split.  CPU = user + sys of this process (PE's fit and
sampling, embeddings included), measured with ``resource.getrusage``.  Labels 0/1 map to
the public names "negative"/"positive" (the dataset's documentation).

    .venv/bin/python benchmarks/pe_text.py                    # ~4 min on 2 cores
    .venv/bin/python benchmarks/pe_text.py --iterations 3 --population 300 --seeds 0 1
    .venv/bin/python benchmarks/pe_text.py --iterations 3 --population 200 --seeds 0 1 --lookahead 2
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from safeshare.synth.pe.labels import LabelledEvolution
from safeshare.synth.pe.text import MiniLMEmbedder
from safeshare.synth.pe.words import Vocabulary, WordAPI

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT.parent / "shared" / "datasets" / "text"
FILES = [f"uci_sentiment_{name}_labelled.tsv" for name in ("yelp", "amazon_cells", "imdb")]
NAMES = {0: "negative", 1: "positive"}
EPSILON, DELTA, GOAL = 4.0, 1e-5, 0.90


def load() -> pd.DataFrame:
    frames = [
        pd.read_csv(
            TEXT / f, sep="\t", header=None, names=["text", "label"], quoting=csv.QUOTE_NONE
        )
        for f in FILES
    ]
    frame = pd.concat(frames, ignore_index=True)
    frame["text"] = frame["text"].str.strip()
    return frame


class CachedEmbedder:
    """MiniLM with a cache by text: the classifier features reuse what PE already embedded."""

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


def accuracy(embed: CachedEmbedder, train: pd.DataFrame, test: pd.DataFrame) -> float:
    classifier = LogisticRegression(max_iter=2000, C=1.0)
    classifier.fit(embed.embed(train), train["label"].to_numpy())
    return float((classifier.predict(embed.embed(test)) == test["label"].to_numpy()).mean())


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(args: argparse.Namespace, seed: int, data: pd.DataFrame, embed: CachedEmbedder) -> dict:
    order = np.random.default_rng(0).permutation(len(data))  # the split is fixed across seeds
    cut = int(0.8 * len(data))
    train, test = data.iloc[order[:cut]], data.iloc[order[cut:]]
    base = WordAPI(Vocabulary.bundled("reviews"))
    model = LabelledEvolution(
        lambda label: base.for_label(NAMES[label]),
        embed,
        labels=[0, 1],
        epsilon=EPSILON,
        delta=DELTA,
        iterations=args.iterations,
        samples_per_iteration=args.population,
        selection=args.selection,
        lookahead=args.lookahead,
        rng=seed,
    )
    embed.cache.clear()  # every run embeds from scratch: its CPU time is honest
    start_cpu, start_wall = cpu(), time.perf_counter()
    synthetic = model.fit(train).sample(len(train))
    pe_cpu, pe_wall = cpu() - start_cpu, time.perf_counter() - start_wall
    rng = np.random.default_rng(seed)
    initial = pd.concat(
        [
            base.for_label(NAMES[label]).random(args.population, rng).assign(label=label)
            for label in (0, 1)
        ],
        ignore_index=True,
    )
    real, synth, public = (accuracy(embed, x, test) for x in (train, synthetic, initial))
    return {
        "seed": seed,
        "n_train": len(train),
        "n_test": len(test),
        "accuracy_real": real,
        "accuracy_synthetic": synth,
        "accuracy_initial_public": public,
        "ratio": synth / real,
        "pe_cpu_s": pe_cpu,
        "pe_wall_s": pe_wall,
        "distinct_synthetic_texts": int(synthetic["text"].nunique()),
        "noisy_label_counts": model.label_counts_.tolist(),
        "privacy": model.describe(),
        "examples": synthetic.head(6).to_dict("records"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--population", type=int, default=400, help="samples per label and step")
    parser.add_argument("--selection", choices=["rank", "sample"], default="sample")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--lookahead", type=int, default=0, help="variations per sample for the vote (0: off)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    if not all((TEXT / f).is_file() for f in FILES):
        print(f"skipped: the sentiment sentences are not under {TEXT}")
        return 0
    data = load()
    embed = CachedEmbedder(MiniLMEmbedder(batch_size=64))
    results = [run(args, seed, data, embed) for seed in args.seeds]
    for r in results:
        print(
            f"seed {r['seed']}: real {r['accuracy_real']:.3f}  synthetic "
            f"{r['accuracy_synthetic']:.3f}  iteration-0 public {r['accuracy_initial_public']:.3f}"
            f"  ratio {r['ratio']:.3f}  PE CPU {r['pe_cpu_s']:.0f} s (wall {r['pe_wall_s']:.0f} s)"
        )
    privacy = results[0]["privacy"]
    ratio = statistics.median(r["ratio"] for r in results)
    print(
        f"epsilon={privacy['epsilon_exact_gdp']:.3f} delta={DELTA:g} T={args.iterations} "
        f"lookahead={args.lookahead} "
        f"sigma={privacy['sigma']:.3f} label-count sigma={privacy['label_count_sigma']:.2f}"
    )
    print(
        f"goal: synthetic/real accuracy >= {GOAL}: median {ratio:.3f} -> "
        f"{'met' if ratio >= GOAL else 'NOT met'}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    file = args.out / f"pe_text-{time.strftime('%Y%m%d-%H%M%S')}.json"
    file.write_text(
        json.dumps(
            {"args": vars(args) | {"out": str(args.out)}, "runs": results}, indent=2, default=str
        )
    )
    print(f"written {file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
