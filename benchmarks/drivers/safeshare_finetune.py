"""safeshare's side of ``benchmarks/lm_finetune_speed.py``: ``FineTuner`` on the same job.

Reads the job folder the benchmark writes (``model/``, ``texts.json``, ``job.json``), runs the
frozen layers once over the training texts and trains the adapters under DP-SGD (Poisson
sampling, linear-ghost clipping), as ``safeshare train --language-model --base`` does.  Prints
one JSON line: CPU seconds of encoding and training (together: what a user waits for), steps,
the noise multiplier and the held-out perplexity.

    python drivers/safeshare_finetune.py JOB_FOLDER
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import torch

from safeshare.train.fine_tune import Base, FineTuner, FineTuneSettings


def main() -> int:
    folder = Path(sys.argv[1])
    job = json.loads((folder / "job.json").read_text())
    texts = json.loads((folder / "texts.json").read_text())
    torch.set_num_threads(job["threads"])
    settings = FineTuneSettings(
        context=job["context"],
        trained_layers=job["trained_layers"],
        rank=job["rank"],
        alpha=job["alpha"],
        epochs=job["epochs"],
        batch_size=job["batch_size"],
        learning_rate=job["learning_rate"],
        max_grad_norm=job["max_grad_norm"],
    )
    tuner = FineTuner(Base.load(folder / "model"), settings)
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # texts cut to the context: the same for the peer
        model = tuner.train(
            tuner.encode(texts["train"]),
            epsilon=job["epsilon"],
            delta=job["delta"],
            seed=job["seed"],
        )
    seconds = time.process_time() - started
    privacy = model.card["privacy"]
    record = {
        "train_cpu_s": seconds,
        "steps": int(privacy["steps"]),
        "noise_multiplier": float(privacy["noise_multiplier"]),
        "perplexity": model.perplexity(tuner.encode(texts["held_out"])),
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
