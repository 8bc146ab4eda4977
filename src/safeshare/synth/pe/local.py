"""A local language model for text PE: a causal LM loaded by transformers from a path, offline.

:class:`LocalChat` answers the same conversations as :class:`~safeshare.synth.pe.openai_client.
ChatClient` (``chat_many(conversations, seed)``), so :class:`~safeshare.synth.pe.openai_client.
LLMTextAPI` uses it unchanged: the RANDOM and VARIATION prompts come from the same prompt file
(``prompts/aug_pe.txt``), and empty or malformed replies are counted and replaced there, as on
the HTTP path.  The model loads from ``path`` only (``HF_HUB_OFFLINE``, ``local_files_only``):
a folder in Hugging Face format, or a GGUF file (dequantized by transformers, which needs the
``gguf`` package).  Nothing is downloaded; only prompts and synthetic samples reach the model.

Generation runs in batches of ``batch_size`` (left-padded) for at most ``max_new_tokens``.
Sampling (``temperature``, nucleus ``top_p``) draws every token from an explicit
``torch.Generator`` seeded from ``seed`` and the batch's position, inside a logits processor,
so a run with a seeded PE is reproducible without touching torch's global random state.
``threads`` sets torch's (process-wide) thread count: on a CPU shared with other work, 1 can be
several times faster than the default (measured: 6 s against 50 s for a batch of 4 replies of
SmolLM2-135M on 2 busy cores); ``OMP_NUM_THREADS`` does the same from outside.
torch and transformers are imported when the model first loads.

>>> chat = LocalChat("no/such/model", max_new_tokens=32)
>>> chat.max_new_tokens, chat.describe()["backend"]
(32, 'transformers (local)')
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from safeshare._local_models import model_files, quiet_loading
from safeshare.errors import InputError, MissingDependencyError
from safeshare.synth.pe.prompting import whole_sentences

INSTALL = "pip install 'safeshare[text]' (torch, transformers) and, for GGUF files, gguf accelerate"


def _fallback_prompt(messages: Sequence[dict[str, str]]) -> str:
    """A plain prompt for tokenizers without a chat template."""
    parts = [m["content"] for m in messages]
    return "\n\n".join(parts) + "\n\n"


class LocalChat:
    """``chat_many`` through a local causal LM (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        max_new_tokens: int = 64,
        batch_size: int = 8,
        temperature: float = 1.0,
        top_p: float = 0.95,
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InputError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not (temperature > 0 and 0 < top_p <= 1):
            raise InputError(
                f"temperature must be positive and top_p in (0, 1]; got {temperature}, {top_p}"
            )
        self.path = Path(path)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.temperature = temperature
        self.top_p = top_p
        self.device = device
        self.threads = threads
        self.generated = 0  # replies produced so far
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def model(self) -> str:
        """The model's name for the privacy card (the file or folder name, not its full path)."""
        return self.path.name

    def describe(self) -> dict[str, Any]:
        """What the card states about the model (all public)."""
        return {
            "backend": "transformers (local)",
            "model": self.model,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "batch_size": self.batch_size,
        }

    def load(self) -> None:
        """Load the tokenizer and the model (once); imports torch and transformers."""
        if self._model is not None:
            return
        folder, gguf = model_files(self.path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise MissingDependencyError(
                f"--api local needs torch and transformers ({error.name} is missing); install "
                f"them with `{INSTALL}`"
            ) from None
        if self.threads is not None:
            torch.set_num_threads(self.threads)  # process-wide, as torch has it
        options: dict[str, Any] = {"local_files_only": True}
        if gguf is not None:
            options["gguf_file"] = gguf
        try:
            with quiet_loading():
                tokenizer: Any = AutoTokenizer.from_pretrained(str(folder), **options)
                auto: Any = AutoModelForCausalLM
                model: Any = auto.from_pretrained(str(folder), **options)
        except ImportError as error:  # gguf / accelerate for GGUF files
            raise MissingDependencyError(
                f"loading {str(self.path)!r} needs a missing package ({error}); install it with "
                f"`{INSTALL}`"
            ) from None
        except (OSError, ValueError) as error:
            raise InputError(
                f"transformers cannot load the model at {str(self.path)!r} ({error}); give a "
                "causal language model in Hugging Face format or GGUF"
            ) from None
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.to(self.device)
        model.eval()
        self._tokenizer, self._model = tokenizer, model

    def _prompt(self, messages: Sequence[dict[str, str]]) -> str:
        if getattr(self._tokenizer, "chat_template", None):
            text = self._tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
            return str(text)
        return _fallback_prompt(messages)

    def chat_many(self, conversations: Sequence[Sequence[dict[str, str]]], seed: int) -> list[str]:
        """One reply per conversation, in order; batch ``b`` samples with seed ``seed + b``."""
        self.load()
        replies: list[str] = []
        for start in range(0, len(conversations), self.batch_size):
            batch = conversations[start : start + self.batch_size]
            replies.extend(self._generate([self._prompt(c) for c in batch], seed + start))
        self.generated += len(replies)
        return replies

    def _generate(self, prompts: list[str], seed: int) -> list[str]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        inputs = self._tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)
        generator = torch.Generator(device=self.device).manual_seed(seed % 2**63)
        sampler = _Sampler(generator, self.temperature, self.top_p)
        config = cast(Any, GenerationConfig)(
            do_sample=False,  # the sampler picks the token; greedy search then keeps it
            max_new_tokens=self.max_new_tokens,
            pad_token_id=self._tokenizer.pad_token_id,
            eos_token_id=self._tokenizer.eos_token_id,
        )
        with torch.inference_mode():
            output = self._model.generate(
                **inputs, generation_config=config, logits_processor=LogitsProcessorList([sampler])
            )
        new = output[:, inputs["input_ids"].shape[1] :]
        texts = self._tokenizer.batch_decode(new, skip_special_tokens=True)
        ended = (new == self._tokenizer.eos_token_id).any(dim=1).tolist()
        pairs = zip(texts, ended, strict=True)
        return [str(t).strip() if end else whole_sentences(str(t)) for t, end in pairs]


class _Sampler:
    """A logits processor that samples the next token with an explicit generator.

    It returns scores that are -inf everywhere but at the sampled token, so the greedy
    search of ``generate`` takes exactly that token.
    """

    def __init__(self, generator: Any, temperature: float, top_p: float) -> None:
        self.generator = generator
        self.temperature = temperature
        self.top_p = top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        logits = scores.float() / self.temperature
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1:
            ordered, order = torch.sort(probs, descending=True, dim=-1)
            before = torch.cumsum(ordered, dim=-1) - ordered  # mass of the better tokens
            ordered = ordered.masked_fill(before >= self.top_p, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, order, ordered)
        token = torch.multinomial(probs, 1, generator=self.generator)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter(-1, token, 0.0)
