"""Does reading through the frozen model help the inverter?  An attack the transform never saw.

The server runs the public model on the obfuscated embeddings, and so can the attacker: this
benchmark trains the learned inverter of ``safeshare obfuscate attack`` (300 steps, from
scratch, on the Amazon and Yelp sentences only) on the model's own hidden states at several
layers, instead of on the obfuscated embeddings themselves, and scores each on the same 200
held-out texts of the task. If a transform kept the task by keeping what the model's layers
need, an attacker reading those layers would see through it. Rows: the learned transform
(``obfuscation_frontier.py``'s main weight, 150 steps, seed 0) and plain Gaussian noise.
Layer ``embeddings`` is the ordinary inverter; ``0`` is the model's embedding output
(position embeddings added, normalised); ``k`` the output of its k-th block.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/obfuscation_model_states.py \\
        [--task imdb] [--weight 0.5] [--sigmas 0.1,0.2] [--layers 0,2,6]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from obfuscation_frontier import RESULTS, GaussianRow, Job, _setup, cpu_seconds
from safeshare.obfuscate.attacks import recovery
from safeshare.obfuscate.inversion import Obfuscator, train_inverter
from safeshare.obfuscate.training import train_transform
from safeshare.obfuscate.transform import torch_generator

STEPS, INVERTER_STEPS, SEED = 150, 300, 0


def read_at(model: Any, obfuscate: Obfuscator, layer: int | None) -> Obfuscator:
    """What the attacker trains on: the obfuscation, or the model's states at ``layer`` of it."""
    if layer is None:
        return obfuscate

    def states(embeds: Any, attention_mask: Any, generator: Any) -> Any:
        sent = obfuscate(embeds, attention_mask, generator)
        output = model.network(
            inputs_embeds=sent, attention_mask=attention_mask, output_hidden_states=True
        )
        return output.hidden_states[layer]

    return states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="imdb")
    parser.add_argument("--weight", type=float, default=0.5)
    parser.add_argument("--sigmas", default="0.1,0.2")
    parser.add_argument("--layers", default="0,2,6")
    args = parser.parse_args()
    import torch

    job = Job(
        args.task, "minilm", args.weight, None, SEED, "learned-inverter", STEPS, INVERTER_STEPS
    )
    model, head, (texts, labels, attacked, _, public) = _setup(job)
    began = cpu_seconds()
    trained = train_transform(
        model, texts, head=head, labels=labels, weight=args.weight, steps=STEPS, seed=SEED
    )
    rows = {f"learned, weight {args.weight:g}": trained.transform.sample}
    rows |= {
        f"Gaussian σ={s}": GaussianRow(float(s), model.fingerprint).sample
        for s in args.sigmas.split(",")
    }
    layers: list[int | None] = [None, *(int(x) for x in args.layers.split(","))]
    batch = model.tokenize(attacked)
    with torch.no_grad():
        clean = model.embed_tokens(batch.input_ids)
    results: dict[str, dict[str, float]] = {}
    for name, obfuscate in rows.items():
        results[name] = {}
        for layer in layers:
            read = read_at(model, obfuscate, layer)
            inverter = train_inverter(model, read, public, steps=INVERTER_STEPS, seed=SEED)
            generator, _ = torch_generator(SEED + 1)
            with torch.no_grad():
                sent = read(clean, batch.attention_mask, generator)
                guesses = inverter.tokens(sent, batch.attention_mask)
            found = recovery(model, guesses, batch.input_ids, batch.attention_mask, "inverter")
            key = "embeddings" if layer is None else f"layer {layer}"
            results[name][key] = found.recovered.value
            print(f"  {name}, {key}: {found.recovered.value:.1%}", flush=True)
    columns = ["embeddings", *(f"layer {x}" for x in layers[1:])]
    print(f"\n{args.task}: tokens the inverter recovers, by what it reads ({len(attacked)} texts)")
    print(f"{'row':26s}" + "".join(f"{c:>12s}" for c in columns))
    for name, found in results.items():
        print(f"{name:26s}" + "".join(f"{found[c]:12.1%}" for c in columns))
    print(f"CPU {cpu_seconds() - began:.0f} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"obfuscation_model_states-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(args), "recovery": results}, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
