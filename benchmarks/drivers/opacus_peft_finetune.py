"""The peer of ``benchmarks/lm_finetune_speed.py``: DP fine-tuning as Opacus's and peft's docs show.

Runs in ``benchmarks/.venvs/opacus-peft`` (``bash benchmarks/peers/setup_finetune.sh``), so it
imports neither safeshare nor anything the peer venv lacks.  It reads a job folder written by
the benchmark: ``model/`` (the base model as a Hugging Face folder), ``train.pt`` and
``held_out.pt`` (input ids and next-token labels, -100 at padding, made by safeshare's own
tokenization so both contenders see the same tokens) and ``job.json`` (the settings).  peft
puts rank-``rank`` adapters on every Linear layer of the top ``trained_layers`` decoder layers;
Opacus's ``PrivacyEngine.make_private`` wraps the whole network (Poisson sampling, the given
noise multiplier, per-record clipping of each text's mean token loss) with ``grad_sample_mode``
``hooks`` (per-sample gradients) or ``ghost`` (fast gradient clipping).  Every step runs the
whole network.  Prints one JSON line: CPU seconds of the training loop, steps taken, the
held-out perplexity after training and the epsilon Opacus's own RDP accountant gives the run.

    python drivers/opacus_peft_finetune.py JOB_FOLDER [--mode hooks|ghost]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import torch
from opacus import PrivacyEngine
from peft import LoraConfig, get_peft_model
from torch.utils.data import DataLoader, TensorDataset
from transformers import AutoModelForCausalLM

IGNORED = -100
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class RecordLoss(torch.nn.Module):
    """Each text's mean cross-entropy over its real tokens; averaged over the batch unless
    ``reduction`` is ``"none"`` (what Opacus's ghost clipping sets to clip per text)."""

    def __init__(self) -> None:
        super().__init__()
        self.reduction = "mean"

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        each = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), labels, ignore_index=IGNORED, reduction="none"
        )
        per_text = each.sum(dim=1) / (labels != IGNORED).sum(dim=1).clamp(min=1)
        return per_text if self.reduction == "none" else per_text.mean()


def perplexity(model: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> float:
    total, tokens = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(ids), 64):
            logits = model(input_ids=ids[start : start + 64]).logits
            target = labels[start : start + 64]
            total += float(
                torch.nn.functional.cross_entropy(
                    logits.transpose(1, 2), target, ignore_index=IGNORED, reduction="sum"
                )
            )
            tokens += int((target != IGNORED).sum())
    return math.exp(total / max(tokens, 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("job", type=Path)
    parser.add_argument("--mode", choices=("hooks", "ghost"), default="hooks")
    args = parser.parse_args()
    job = json.loads((args.job / "job.json").read_text())
    torch.set_num_threads(job["threads"])
    torch.manual_seed(job["seed"])
    train_ids, train_labels = torch.load(args.job / "train.pt")
    held_ids, held_labels = torch.load(args.job / "held_out.pt")

    model = AutoModelForCausalLM.from_pretrained(args.job / "model", dtype=torch.float32)
    layers = model.config.num_hidden_layers
    config = LoraConfig(
        r=job["rank"],
        lora_alpha=job["alpha"],
        lora_dropout=0.0,
        target_modules=PROJECTIONS,
        layers_to_transform=list(range(layers - job["trained_layers"], layers)),
        bias="none",
    )
    model = get_peft_model(model, config)
    model.train()
    optimizer = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad], lr=job["learning_rate"]
    )
    loader = DataLoader(TensorDataset(train_ids, train_labels), batch_size=job["batch_size"])
    criterion = RecordLoss()
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # secure RNG and optimizer-state advice
        private = engine.make_private(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            noise_multiplier=job["noise_multiplier"],
            max_grad_norm=job["max_grad_norm"],
            poisson_sampling=True,
            grad_sample_mode=args.mode,
            **({"criterion": criterion} if args.mode == "ghost" else {}),
        )
    if args.mode == "ghost":
        model, optimizer, criterion, loader = private
    else:
        model, optimizer, loader = private

    steps = 0
    started = time.process_time()
    while steps < job["steps"]:
        for ids, labels in loader:
            optimizer.zero_grad()
            criterion(model(input_ids=ids).logits, labels).backward()
            optimizer.step()
            steps += 1
            if steps == job["steps"]:
                break
    seconds = time.process_time() - started
    model.eval()
    record = {
        "train_cpu_s": seconds,
        "steps": steps,
        "perplexity": perplexity(model, held_ids, held_labels),
        "epsilon_spent": engine.get_epsilon(job["delta"]),
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
