"""A tiny causal language model over bytes, trained from scratch with DP-SGD or without DP.

For memorization studies (:mod:`safeshare.train.extraction`: prefix -> suffix extraction
and canary exposure).  The vocabulary is public: the 256 byte values of UTF-8 and one
begin-of-text token; nothing about it is read from the texts.  The network is GPT-style
(pre-LayerNorm blocks of causal self-attention and an MLP) built from plain
``nn.Embedding``, ``nn.Linear`` and ``nn.LayerNorm`` so Opacus's ghost clipping
computes each record's gradient norm.  The privacy unit is one text (a record): each
text is one padded sequence of at most ``context`` bytes (longer texts are cut, with a
warning), Poisson sampling draws records, and each sequence's whole gradient is
clipped; or, with user ids, a user: all their texts (:mod:`safeshare.train.user_level`).
``epsilon=None`` trains WITHOUT DP (shuffled batches, no clipping, no noise): the baseline
that is free to memorize.  torch is imported lazily.

>>> encode_bytes("hé")
[104, 195, 169]
>>> VOCABULARY, BEGIN
(257, 256)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from safeshare.errors import InputError
from safeshare.train.accounting import Accounting
from safeshare.train.device import describe_device, resolve_device
from safeshare.train.dpsgd import (
    DPSGDSettings,
    check_settings,
    require_torch,
    run_dpsgd,
    torch_generator,
    train_shuffled,
)
from safeshare.train.tabular import read_model, write_model
from safeshare.train.text import check_texts

BEGIN = 256  # the begin-of-text token, after the 256 byte values
VOCABULARY = 257
IGNORED = -100  # label of padding: no loss (CrossEntropyLoss's ignore_index)
KIND = "causal language model"


def encode_bytes(text: str) -> list[int]:
    """The UTF-8 bytes of ``text`` as token ids (the public byte vocabulary)."""
    return list(text.encode("utf-8"))


@dataclass(frozen=True)
class LanguageModelSettings:
    """The network's shape and how it is trained (everything but the data and the budget)."""

    context: int = 64
    width: int = 64
    layers: int = 1
    heads: int = 2
    epochs: float = 5.0
    batch_size: int = 64
    learning_rate: float = 3e-3
    max_grad_norm: float = 1.0
    accountant: Accounting = "pld"

    def __post_init__(self) -> None:
        check_settings(self)
        for name in ("context", "width", "layers", "heads", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} must be a positive whole number, got {value!r}")
        if not 8 <= self.context <= 1024:
            raise InputError(f"context must lie in [8, 1024] bytes, got {self.context!r}")
        if self.width % self.heads:
            raise InputError(f"width {self.width} must be a multiple of heads {self.heads}")


def _network_class() -> Any:
    torch, _ = require_torch()
    nn = torch.nn

    class Block(nn.Module):  # type: ignore[misc,name-defined]
        """Pre-LayerNorm causal self-attention and MLP, on plain Linear layers."""

        def __init__(self, width: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.attention_norm = nn.LayerNorm(width)
            self.query = nn.Linear(width, width)
            self.key = nn.Linear(width, width)
            self.value = nn.Linear(width, width)
            self.attention_out = nn.Linear(width, width)
            self.mlp_norm = nn.LayerNorm(width)
            self.inner = nn.Linear(width, 4 * width)
            self.outer = nn.Linear(4 * width, width)

        def forward(self, hidden: Any) -> Any:
            records, tokens, width = hidden.shape
            size = width // self.heads

            def split(x: Any) -> Any:
                return x.view(records, tokens, self.heads, size).transpose(1, 2)

            normed = self.attention_norm(hidden)
            query, key = split(self.query(normed)), split(self.key(normed))
            scores = query @ key.transpose(-1, -2) / math.sqrt(size)
            future = torch.ones(tokens, tokens, dtype=torch.bool, device=hidden.device).triu(1)
            scores = scores.masked_fill(future, torch.finfo(scores.dtype).min)
            context = scores.softmax(dim=-1) @ split(self.value(normed))
            context = context.transpose(1, 2).reshape(records, tokens, width)
            hidden = hidden + self.attention_out(context)
            inner = torch.nn.functional.gelu(self.inner(self.mlp_norm(hidden)))
            return hidden + self.outer(inner)

    class CausalLM(nn.Module):  # type: ignore[misc,name-defined]
        """Token and position embeddings, blocks, a final LayerNorm and a linear head."""

        def __init__(self, context: int, width: int, layers: int, heads: int) -> None:
            super().__init__()
            self.tokens = nn.Embedding(VOCABULARY, width)
            self.positions = nn.Embedding(context, width)
            self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
            self.final_norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, VOCABULARY)

        def forward(self, ids: Any) -> Any:
            places = torch.arange(ids.shape[1], device=ids.device).repeat(ids.shape[0], 1)
            hidden = self.tokens(ids) + self.positions(places)
            for block in self.blocks:
                hidden = block(hidden)
            return self.head(self.final_norm(hidden))  # (records, tokens, vocabulary)

    return CausalLM


def count_parameters(settings: LanguageModelSettings) -> int:
    """The network's parameters at ``settings``' shape (no weights drawn): a model size for
    the planner.

    >>> count_parameters(LanguageModelSettings(context=64, width=48))
    56369
    """
    return int(sum(p.numel() for p in build_network(settings, None).parameters()))


def build_network(settings: LanguageModelSettings, generator: Any | None) -> Any:
    """The network; weights N(0, 0.02) from ``generator`` (None: left for loading)."""
    torch, _ = require_torch()
    module = _network_class()(settings.context, settings.width, settings.layers, settings.heads)
    if generator is not None:
        with torch.no_grad():
            for layer in module.modules():
                if isinstance(layer, torch.nn.Linear | torch.nn.Embedding):
                    layer.weight.normal_(0.0, 0.02, generator=generator)
                if isinstance(layer, torch.nn.Linear):
                    layer.bias.zero_()
    return module


def sequences(texts: Sequence[str], context: int) -> tuple[Any, Any, int]:
    """Inputs ``(records, context)`` (begin token, then bytes) and next-byte labels.

    Texts are cut to ``context`` bytes; padding has label -100 (no loss).  Returns the
    inputs, the labels and how many texts were cut.
    """
    torch, _ = require_torch()
    ids = torch.zeros((len(texts), context), dtype=torch.long)
    labels = torch.full((len(texts), context), IGNORED, dtype=torch.long)
    cut = 0
    for row, text in enumerate(texts):
        data = encode_bytes(text)
        cut += len(data) > context
        data = data[:context]
        inputs = [BEGIN, *data[:-1]] if data else [BEGIN]
        ids[row, : len(inputs)] = torch.tensor(inputs)
        if data:
            labels[row, : len(data)] = torch.tensor(data)
    return ids, labels, cut


def training_sequences(texts: Sequence[str], context: int, column: str) -> tuple[Any, Any]:
    """:func:`sequences` for training: warns how many texts were cut (never which)."""
    ids, labels, cut = sequences(texts, context)
    if cut:
        warnings.warn(
            f"{cut} of {len(texts)} texts in column {column!r} are longer than {context} bytes "
            "and were cut to it; raise context to keep more",
            UserWarning,
            stacklevel=3,
        )
    return ids, labels


@dataclass(frozen=True)
class LanguageModel:
    """A trained byte-level causal language model and its card."""

    module: Any
    settings: LanguageModelSettings
    card: dict[str, Any]
    unit: ClassVar[str] = "bytes"  # what prefixes, suffixes and the context count

    @property
    def context(self) -> int:
        return self.settings.context

    def units(self, text: str) -> list[int]:
        """The text as the model reads it: its UTF-8 bytes."""
        return encode_bytes(text)

    def log_likelihoods(self, texts: Sequence[str], *, chunk: int = 1024) -> Any:
        """Each text's total log-likelihood (nats) of its first ``context`` bytes, as numpy."""
        import numpy as np

        torch, _ = require_torch()
        texts = list(texts)
        longest = max((len(encode_bytes(t)) for t in texts), default=1)
        width = max(1, min(self.context, longest))
        out = np.zeros(len(texts), dtype=np.float64)
        place = next(self.module.parameters()).device  # the training device, mid-training
        self.module.eval()
        with torch.no_grad():
            for start in range(0, len(texts), chunk):
                ids, labels, _ = sequences(texts[start : start + chunk], width)
                logits = self.module(ids.to(place)).cpu()
                loss = torch.nn.functional.cross_entropy(
                    logits.transpose(1, 2), labels, ignore_index=IGNORED, reduction="none"
                )
                out[start : start + len(ids)] = -loss.sum(dim=1).double().numpy()
        return out

    def losses(self, texts: Sequence[str]) -> Any:
        """Per-text mean negative log-likelihood per byte (what a loss attack scores)."""
        import numpy as np

        counts = np.array([max(1, min(len(encode_bytes(t)), self.context)) for t in texts])
        return -self.log_likelihoods(texts) / counts

    def greedy(self, prompts: Sequence[Sequence[int]], tokens: int) -> list[list[int]]:
        """The ``tokens`` most likely next bytes after each prompt (all of one length)."""
        torch, _ = require_torch()
        lengths = {len(p) for p in prompts}
        if len(lengths) > 1:
            raise InputError("greedy decoding takes prompts of one length; cut them to one")
        length = lengths.pop() if lengths else 0
        if length + tokens > self.context:
            raise InputError(
                f"prompt ({length}) + decoded ({tokens}) bytes exceed the model's context "
                f"({self.context}); ask for fewer"
            )
        ids = torch.tensor([[BEGIN, *p] for p in prompts], dtype=torch.long).view(-1, length + 1)
        self.module.eval()
        with torch.no_grad():
            for _ in range(tokens):
                logits = self.module(ids)[:, -1, :BEGIN]  # never the begin token
                ids = torch.cat([ids, logits.argmax(dim=1, keepdim=True)], dim=1)
        return [row[length + 1 :] for row in ids.tolist()]

    def save(
        self, out: str | Path, *, force: bool = False, extra: dict[str, str] | None = None
    ) -> Path:
        """``model.safetensors`` (weights only, no pickle), ``card.json`` and ``extra`` text
        files (name -> content), written atomically."""
        return write_model(out, self.module, self.card, force=force, extra=extra)

    @classmethod
    def load(cls, folder: str | Path) -> LanguageModel:
        """A model written by :meth:`save`."""
        card, weights = read_model(folder, KIND, "LanguageModel.save")
        settings = LanguageModelSettings(**card["settings"])
        module = build_network(settings, None)
        module.load_state_dict(weights)
        return cls(module, settings, card)


def train_language_model(
    texts: Sequence[str],
    *,
    epsilon: float | None,
    delta: float | None = None,
    settings: LanguageModelSettings | None = None,
    text_column: str = "text",
    seed: int | None = None,
    progress: Callable[[str, float], None] | None = None,
    user_column: str | None = None,
    users: Any = None,
    max_records_per_user: int = 64,
    device: str = "auto",
    after_step: Callable[[int, LanguageModel], None] | None = None,
) -> LanguageModel:
    """Train the byte-level LM on ``texts`` under (epsilon, delta)-DP, unit = one text.

    ``epsilon=None`` trains without DP (a baseline for memorization studies).
    ``delta`` defaults to 1 / (10 x texts).  ``seed``: an integer (reproducible, the
    card says NOT secure) or None (OS-seeded).  ``device``: where the steps run
    (:mod:`safeshare.train.device`); the model comes back on the CPU.

    With ``users`` (one id per text; ``user_column`` names them) the privacy unit is a
    **user**, all their texts (:mod:`safeshare.train.user_level`; a text's loss is its mean
    token loss, as at record level): ``settings.batch_size`` is then the expected users per
    batch, ``delta`` defaults to 1 / (10 x users) and each user keeps at most
    ``max_records_per_user`` texts (drawn at random).  User-level training needs DP.

    ``after_step(steps_taken, model)`` (record-level DP runs) sees the model in training
    after every step, e.g. to score a learning curve (its card is still empty).
    """
    torch, opacus = require_torch()
    place = resolve_device(device)
    settings = settings or LanguageModelSettings()
    texts = check_texts(texts, text_column)
    if after_step is not None and (epsilon is None or users is not None or user_column):
        raise InputError("after_step follows record-level DP training only")
    if users is not None or user_column is not None:
        return _train_users(
            texts,
            users,
            user_column,
            max_records_per_user,
            epsilon=epsilon,
            delta=delta,
            settings=settings,
            text_column=text_column,
            seed=seed,
            progress=progress,
            device=place,
        )
    records = len(texts)
    dp = None
    if epsilon is not None:
        dp = DPSGDSettings.of(
            settings, records=records, epsilon=epsilon, delta=delta, clipping="ghost"
        )
    generator, seeded = torch_generator(seed)
    ids, labels = training_sequences(texts, settings.context, text_column)
    module = build_network(settings, generator)

    def adam(params: Any) -> Any:
        return torch.optim.Adam(params, lr=settings.learning_rate)

    if dp is not None:
        run = run_dpsgd(
            module,
            ids,
            labels,
            dp,
            make_optimizer=adam,
            generator=generator,
            seeded=seeded,
            progress=progress,
            device=place,
            after_step=None
            if after_step is None
            else lambda taken: after_step(taken, LanguageModel(module, settings, {})),
        )
        privacy = {
            **run.privacy(),
            "privacy_unit": "record (one text: one sequence of at most "
            f"{settings.context} bytes; Poisson sampling over texts, each sequence's whole "
            "gradient clipped)",
            "public": "the number of texts, the byte vocabulary and the network's shape",
        }
        epochs = run.steps_taken * dp.sampling_rate
    else:
        epochs = train_shuffled(
            module,
            ids,
            labels,
            batch_size=settings.batch_size,
            epochs=settings.epochs,
            optimizer=adam(module.parameters()),
            generator=generator,
            loss=lambda logits, target: torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), target, ignore_index=IGNORED
            ),
            device=place,
        )
        privacy = {"guarantee": "none (not differentially private)", "epsilon": None}
    card = {
        "model": _model_card(settings, text_column, module),
        "settings": asdict(settings),
        "privacy": privacy,
        "training": {
            "records": records,
            "epochs": epochs,
            "optimizer": "adam",
            "seeded": seeded,
            "device": describe_device(place),
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return LanguageModel(module, settings, card)


def _model_card(settings: LanguageModelSettings, text_column: str, module: Any) -> dict[str, Any]:
    return {
        "kind": KIND,
        "vocabulary": "UTF-8 bytes (256) and a begin-of-text token: public, nothing "
        "read from the texts",
        "architecture": f"GPT-style, {settings.layers} pre-LayerNorm block(s), width "
        f"{settings.width}, {settings.heads} heads, trained from scratch",
        "context": settings.context,
        "truncation": f"texts longer than {settings.context} bytes are cut to it",
        "text_column": text_column,
        "parameters": int(sum(p.numel() for p in module.parameters())),
        "weights": "model.safetensors",
    }


def sequence_loss(output: Any, labels: Any) -> Any:
    """The mean cross-entropy over the tokens whose label is not -100 (0 when none is).

    ``output`` (records, tokens, vocabulary), ``labels`` (records, tokens); with one record,
    that record's loss, the one record-level DP-SGD clips (``_steps`` in train/dpsgd.py).
    """
    torch, _ = require_torch()
    total = torch.nn.functional.cross_entropy(
        output.transpose(1, 2), labels, ignore_index=IGNORED, reduction="sum"
    )
    return total / (labels != IGNORED).sum().clamp(min=1)


def longest_text(labels: Any) -> int:
    """The labelled tokens of the longest text among ``labels``' rows (at least 1)."""
    return max(int((labels != IGNORED).sum(dim=1).max()), 1) if labels.shape[0] else 1


def trim_labels(inputs: tuple[Any, ...], labels: Any) -> tuple[tuple[Any, ...], Any]:
    """Cut the columns past the longest text (all padding: causal attention never sees them)."""
    tokens = longest_text(labels)
    return tuple(x[:, :tokens] for x in inputs), labels[:, :tokens]


USER_CHUNK = 64  # texts whose per-record gradients a user-level step holds at once


def _train_users(
    texts: list[str],
    users: Any,
    user_column: str | None,
    cap: int,
    *,
    epsilon: float | None,
    delta: float | None,
    settings: LanguageModelSettings,
    text_column: str,
    seed: int | None,
    progress: Callable[[str, float], None] | None,
    device: Any,
) -> LanguageModel:
    """:func:`train_language_model` with a user as the privacy unit."""
    from safeshare.train.user_level import (
        PerRecord,
        check_user_ids,
        run_user_dpsgd,
        user_privacy,
        user_settings,
    )

    torch, opacus = require_torch()
    column, budget = check_user_ids(users, user_column, epsilon, len(texts), "text")
    generator, seeded = torch_generator(seed)
    grouped, dp = user_settings(
        users,
        cap,
        generator,
        batch_size=settings.batch_size,
        epochs=settings.epochs,
        epsilon=budget,
        delta=delta,
        max_grad_norm=settings.max_grad_norm,
        accountant=settings.accountant,
    )
    kept = [texts[i] for i in grouped.rows]
    ids, labels = training_sequences(kept, settings.context, text_column)
    module = build_network(settings, generator)
    run = run_user_dpsgd(
        module,
        (ids,),
        labels,
        grouped.user,
        dp,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=settings.learning_rate),
        generator=generator,
        seeded=seeded,
        progress=progress,
        per_record=PerRecord(loss=sequence_loss, trim=trim_labels, chunk=USER_CHUNK),
        device=device,
    )
    privacy = {
        **user_privacy(run, column, grouped, cap),
        "public": "the number of users, the byte vocabulary and the network's shape",
    }
    card = {
        "model": _model_card(settings, text_column, module),
        "settings": asdict(settings),
        "privacy": privacy,
        "training": {
            "records": len(texts),
            "records_used": len(kept),
            "users": grouped.users,
            "epochs": run.steps_taken * dp.sampling_rate,
            "optimizer": "adam",
            "seeded": seeded,
            "device": run.device,
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return LanguageModel(module, settings, card)
