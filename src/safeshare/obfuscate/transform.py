"""The obfuscation transform: per-token mean shift and noise scale, from the whole sequence.

A small network (a linear projection, one transformer encoder layer over the sequence, two
linear heads) reads the clean token embeddings ``e`` of a text and gives each token a mean
shift ``mu`` and a log-scale ``s``; the client sends ``o = clip(e + mu + exp(s) * z)`` with
``z ~ N(0, I)`` freshly drawn on every call (the reparameterization, so training can follow
gradients through the sample).  ``clip`` rescales a token whose norm exceeds the largest norm
of the model's embedding table, keeping ``o`` in the range the model was trained on.

Randomness is an explicit ``torch.Generator``: :func:`torch_generator` seeds one from
``secrets`` unless a seed is given (tests, reproducible research), and nothing touches torch's
global seed.  :meth:`ObfuscationTransform.save` writes ``transform.safetensors`` and
``transform.json`` (the configuration and the SHA-256 fingerprint of the model's embedding
table), and a :class:`~safeshare.obfuscate.head.ClassificationHead` when one is attached;
:meth:`ObfuscationTransform.load` refuses a transform (or head) made for another model.

>>> config = TransformConfig(dim=384)
>>> config.hidden, config.max_log_scale
(128, 1.0)
"""

from __future__ import annotations

import dataclasses
import json
import math
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from safeshare.errors import InputError
from safeshare.obfuscate.head import ClassificationHead
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.output_folder import read_json, read_weights, staged_output

WEIGHTS = "transform.safetensors"
CONFIG = "transform.json"
FORMAT = "safeshare-obfuscation-transform/1"


def torch_generator(seed: int | None = None) -> tuple[Any, bool]:
    """``(generator, seeded)``: a CPU ``torch.Generator`` seeded from ``secrets`` unless ``seed``."""
    torch = require_torch()
    generator = torch.Generator()
    if seed is None:
        generator.manual_seed(secrets.randbits(63))
        return generator, False
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed (--seed) must be a non-negative integer or None, not {seed!r}")
    generator.manual_seed(seed)
    return generator, True


@dataclass(frozen=True)
class TransformConfig:
    """The network's shape and limits (all public: they go into ``transform.json``)."""

    dim: int
    hidden: int = 128
    heads: int = 4
    min_log_scale: float = -6.0
    max_log_scale: float = 1.0
    max_norm: float | None = None

    def __post_init__(self) -> None:
        if self.dim < 1 or self.hidden < 1 or self.hidden % self.heads:
            raise InputError(
                f"dim={self.dim}, hidden={self.hidden}, heads={self.heads}: need positive sizes "
                "and hidden divisible by heads"
            )
        if not self.min_log_scale < self.max_log_scale:
            raise InputError(
                f"min_log_scale {self.min_log_scale} must be below max_log_scale "
                f"{self.max_log_scale}"
            )


@cache
def _network_class() -> Any:
    torch = require_torch()
    nn = torch.nn

    class _Network(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self, config: TransformConfig) -> None:
            super().__init__()
            self.config = config
            self.project = nn.Linear(config.dim, config.hidden)
            self.mix = nn.TransformerEncoderLayer(
                config.hidden,
                config.heads,
                dim_feedforward=2 * config.hidden,
                dropout=0.0,
                batch_first=True,
            )
            self.mean = nn.Linear(config.hidden, config.dim)
            self.log_scale = nn.Linear(config.hidden, config.dim)

        def forward(self, embeds: Any, attention_mask: Any) -> tuple[Any, Any]:
            hidden = self.mix(self.project(embeds), src_key_padding_mask=attention_mask == 0)
            low, high = self.config.min_log_scale, self.config.max_log_scale
            squashed = torch.sigmoid(self.log_scale(hidden))
            return self.mean(hidden), low + (high - low) * squashed

    return _Network


class ObfuscationTransform:
    """The learned stochastic transform for one model (``fingerprint``), ready to sample."""

    def __init__(self, config: TransformConfig, fingerprint: str, *, seed: int | None = None):
        torch = require_torch()
        self.config = config
        self.fingerprint = fingerprint
        self.head: ClassificationHead | None = None  # saved and loaded with the transform
        init, _ = torch_generator(seed)
        self.network = _network_class()(config)
        with torch.no_grad():  # our own init, drawn from an explicit generator only
            for name, parameter in self.network.named_parameters():
                if parameter.dim() >= 2:
                    torch.nn.init.xavier_uniform_(parameter, generator=init)
                elif "norm" in name and name.endswith("weight"):
                    parameter.fill_(1.0)
                else:
                    parameter.zero_()
            self.network.mean.weight.zero_()
            self.network.log_scale.weight.mul_(0.1)
            start = (math.log(0.02) - config.min_log_scale) / (
                config.max_log_scale - config.min_log_scale
            )
            self.network.log_scale.bias.fill_(math.log(start / (1 - start)))
        self.network.eval()  # training switches it on; eval and train paths differ in rounding

    @classmethod
    def for_model(
        cls,
        model: FrozenModel,
        *,
        hidden: int = 128,
        max_noise: float | None = None,
        seed: int | None = None,
    ) -> ObfuscationTransform:
        """A fresh (untrained) transform for ``model``; norms are limited to its table's.

        ``max_noise``: the largest noise scale a token may get (None: ``e``, the default
        ceiling ``exp(max_log_scale)``); it must lie above the starting scale, 0.02.
        """
        table = model.table
        config = TransformConfig(
            dim=int(table.shape[1]), hidden=hidden, max_norm=float(table.norm(dim=1).max())
        )
        if max_noise is not None:
            if not 0.02 < max_noise < math.inf:
                raise InputError(
                    f"max_noise must be a finite number above the starting scale 0.02, not "
                    f"{max_noise!r}"
                )
            config = dataclasses.replace(config, max_log_scale=math.log(max_noise))
        return cls(config, model.fingerprint, seed=seed)

    def parameters(self) -> Any:
        return self.network.parameters()

    def distribution(self, embeds: Any, attention_mask: Any) -> tuple[Any, Any]:
        """Per-token mean shift and log-scale, ``(n, length, dim)`` each."""
        return self.network(embeds, attention_mask)

    def sample(self, embeds: Any, attention_mask: Any, generator: Any) -> Any:
        """One fresh obfuscation of ``embeds`` (differentiable; padding positions kept as is)."""
        torch = require_torch()
        shift, log_scale = self.distribution(embeds, attention_mask)
        noise = torch.randn(embeds.shape, generator=generator, dtype=embeds.dtype)
        out = embeds + shift + torch.exp(log_scale) * noise
        out = clip_norm(out, self.config.max_norm)
        keep = attention_mask.unsqueeze(-1).to(out.dtype)
        return out * keep + embeds * (1 - keep)

    def obfuscate(self, model: FrozenModel, texts: list[str], generator: Any) -> tuple[Any, Any]:
        """``(obfuscated embeddings, attention mask)`` of ``texts``: what a client sends."""
        self.check_model(model)
        torch = require_torch()
        batch = model.tokenize(texts)
        with torch.no_grad():
            embeds = model.embed_tokens(batch.input_ids)
            return self.sample(embeds, batch.attention_mask, generator), batch.attention_mask

    def check_model(self, model: FrozenModel) -> None:
        """Refuse a model whose embedding table differs from the one this transform is for."""
        if model.fingerprint != self.fingerprint:
            raise InputError(
                f"this transform was trained for the model with embedding table "
                f"{self.fingerprint[:16]}…, not {model.fingerprint[:16]}…; train a transform "
                "for this model"
            )

    def save(
        self, folder: str | Path, *, force: bool = False, extra: Mapping[str, str] | None = None
    ) -> Path:
        """Write the weights (safetensors), ``transform.json`` and the ``extra`` text files
        (name -> content) into ``folder``, all or nothing."""
        from safetensors.torch import save_file

        with staged_output(folder, force=force) as staging:
            state = {k: v.detach().contiguous() for k, v in self.network.state_dict().items()}
            save_file(state, str(staging / WEIGHTS))
            meta = {
                "format": FORMAT,
                "fingerprint": self.fingerprint,
                "config": asdict(self.config),
            }
            (staging / CONFIG).write_text(json.dumps(meta, indent=2))
            if self.head is not None:
                self.head.write(staging)
            for name, content in (extra or {}).items():
                if name in (WEIGHTS, CONFIG) or Path(name).name != name:
                    raise InputError(f"extra file name {name!r} must be a plain, new file name")
                (staging / name).write_text(content, encoding="utf-8")
        return Path(folder)

    @classmethod
    def load(cls, folder: str | Path, model: FrozenModel) -> ObfuscationTransform:
        """Read a saved transform; refuse it when it was made for another model."""
        from safetensors.torch import load_file

        path = Path(folder)
        if not (path / CONFIG).is_file() or not (path / WEIGHTS).is_file():
            raise InputError(f"{path} has no {CONFIG} and {WEIGHTS}; pass a saved transform folder")
        meta = read_json(path / CONFIG, f"a {FORMAT} file")
        if meta.get("format") != FORMAT:
            raise InputError(
                f"{path / CONFIG} is not a {FORMAT} file (format {meta.get('format')!r})"
            )
        try:
            config = TransformConfig(**meta["config"])
        except (KeyError, TypeError):
            raise InputError(
                f"{path / CONFIG} lacks a transform's settings; train the transform again"
            ) from None
        transform = cls(config, str(meta.get("fingerprint")), seed=0)
        transform.check_model(model)
        state = read_weights(path / WEIGHTS, load_file)
        try:
            transform.network.load_state_dict(state)
        except RuntimeError:  # other tensor names or shapes than the settings say
            raise InputError(
                f"{path / WEIGHTS} does not hold this transform's weights; train it again"
            ) from None
        transform.network.eval()
        transform.head = ClassificationHead.read(path, model)
        return transform


def clip_norm(embeds: Any, max_norm: float | None) -> Any:
    """Rescale the vectors (last axis) whose norm exceeds ``max_norm``; None keeps them."""
    if max_norm is None:
        return embeds
    norms = embeds.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    return embeds * (max_norm / norms).clamp(max=1.0)


def gaussian_noise(embeds: Any, attention_mask: Any, sigma: float, generator: Any) -> Any:
    """The baseline: i.i.d. ``N(0, sigma^2)`` added to every real token's embedding."""
    torch = require_torch()
    if not sigma >= 0:
        raise InputError(f"sigma must be >= 0, not {sigma!r}")
    noise = torch.randn(embeds.shape, generator=generator, dtype=embeds.dtype)
    return embeds + sigma * noise * attention_mask.unsqueeze(-1).to(embeds.dtype)
