"""LLM text APIs for PE through any OpenAI-compatible server (vLLM, Ollama, llama.cpp, hosted).

:class:`ChatClient` speaks ``POST {base_url}/chat/completions`` with the standard library
(``urllib``): requests run ``concurrency`` at a time and at most ``rate`` a second,
failures (connection errors, 408, 429, 5xx) are retried with jittered exponential backoff
(``Retry-After`` honoured), the tokens each reply's ``usage`` reports are added up
(:class:`TokenUsage`), a model that rejects ``max_tokens`` is asked with
``max_completion_tokens`` instead, the API key is read from an environment variable, and a
server that stays unreachable stops the run with a :class:`ModelAPIError` naming the URL
(PE's checkpoint keeps finished iterations).
:class:`LLMTextAPI` implements PE's random and variation APIs with Aug-PE-style prompts
from ``prompts/aug_pe.txt``: RANDOM asks for a text of the label with public keywords,
VARIATION masks a share ``degree`` of a synthetic text's words and asks to fill them.
Only prompts and synthetic samples are sent; private records never are.  A reply that is
not a text of the task (empty, blanks left, a meta-reply or refusal, the prompt copied back:
:func:`clean_reply`) is asked again up to ``reasks`` times (``reasked``), then counted
(``failures``) and replaced: by the input sample for a variation, by a public template for
a random sample.

Prompt files and the cleaning of replies live in :mod:`~safeshare.synth.pe.prompting`.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from safeshare.errors import InputError, ModelAPIError
from safeshare.synth.pe.prompting import (
    clean_reply,
    few_shot,
    load_prompts,
    mask,
    placeholders,
    whole_sentences,
)
from safeshare.synth.pe.words import Vocabulary, WordAPI

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass
class TokenUsage:
    """What a server billed, from the ``usage`` of its replies: requests answered, tokens of
    the prompts and of the completions, and replies that reported no usage.

    >>> usage = TokenUsage()
    >>> usage.add({"prompt_tokens": 30, "completion_tokens": 12})
    >>> usage.add(None)
    >>> usage.cost((0.15, 0.60)), usage.unreported
    (1.17e-05, 1)
    """

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unreported: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, usage: Any) -> None:
        """Count one answered request and its ``usage`` (a dict, or None when not reported)."""
        with self._lock:
            self.requests += 1
            if not isinstance(usage, dict):
                self.unreported += 1
                return
            self.prompt_tokens += _tokens(usage.get("prompt_tokens"))
            self.completion_tokens += _tokens(usage.get("completion_tokens"))

    def cost(self, prices: tuple[float, float]) -> float:
        """The cost at ``prices`` (per million prompt tokens, per million completion tokens)."""
        return (self.prompt_tokens * prices[0] + self.completion_tokens * prices[1]) / 1e6

    @classmethod
    def total(cls, usages: Sequence[TokenUsage]) -> TokenUsage:
        """The usages added up (several clients, one per backend built)."""
        out = cls()
        for usage in usages:
            out.requests += usage.requests
            out.prompt_tokens += usage.prompt_tokens
            out.completion_tokens += usage.completion_tokens
            out.unreported += usage.unreported
        return out

    def to_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "requests_without_usage": self.unreported,
        }


def _tokens(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class _Pacer:
    """At most ``rate`` requests started a second, across threads (None: no limit)."""

    def __init__(
        self, rate: float | None, sleep: Callable[[float], None], clock: Callable[[], float]
    ) -> None:
        self.gap = 0.0 if rate is None else 1.0 / rate
        self.sleep, self.clock = sleep, clock
        self.next = -math.inf
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.gap:
            return
        with self.lock:
            now = self.clock()
            start = max(now, self.next)
            self.next = start + self.gap
        if start > now:
            self.sleep(start - now)


@dataclass(frozen=True)
class Requests:
    """How a :class:`ChatClient` asks: requests in parallel, retries (jittered exponential
    backoff from ``backoff`` seconds), each request's timeout in seconds, at most ``rate``
    requests a second (None: no limit), and replies asked per request (``n``)."""

    concurrency: int = 8
    retries: int = 4
    backoff: float = 1.0
    timeout: float = 120.0
    rate: float | None = None
    choices: int = 8

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.retries < 0 or self.backoff < 0:
            raise InputError("concurrency must be >= 1, retries and backoff >= 0")
        if not self.timeout > 0:
            raise InputError(f"the timeout must be positive, got {self.timeout!r}")
        if self.rate is not None and not self.rate > 0:
            raise InputError(f"the request rate must be positive, got {self.rate}")
        if not isinstance(self.choices, int) or self.choices < 1:
            raise InputError(
                f"choices (replies a request) must be at least 1, got {self.choices!r}"
            )


@dataclass(frozen=True)
class Sampling:
    """What each reply may be: at most ``max_tokens`` tokens, at ``temperature``."""

    max_tokens: int = 96
    temperature: float = 1.0


class ChatClient:
    """A minimal OpenAI-compatible chat client with concurrency, a rate limit, jittered
    retries and token accounting (:attr:`usage`).

    >>> client = ChatClient("http://127.0.0.1:8080/v1", "SmolLM2",
    ...                     requests=Requests(concurrency=2, rate=5.0), sampling=Sampling(48))
    >>> client.url, client.choices
    ('http://127.0.0.1:8080/v1/chat/completions', 8)
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        requests: Requests | None = None,
        sampling: Sampling | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: np.random.Generator | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = os.environ.get(api_key_env)  # None: servers without authentication
        self.requests = requests or Requests()
        self.sampling = sampling or Sampling()
        self.sleep = sleep
        self.usage = TokenUsage()
        self.tokens_field = "max_tokens"  # "max_completion_tokens" once the model asks for it
        self.choices = self.requests.choices  # 1 once the server refuses or ignores n > 1
        self._pacer = _Pacer(self.requests.rate, sleep, clock)
        # (timing only: when a retry goes, never what is sent)
        self._jitter = jitter if jitter is not None else np.random.default_rng()
        self._jitter_lock = threading.Lock()

    def _post(self, body: bytes) -> tuple[int, bytes, str | None]:
        self._pacer.wait()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.requests.timeout) as response:
                return response.status, response.read(), None
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Retry-After")

    def chat(self, messages: Sequence[dict[str, str]], seed: int | None = None) -> str:
        """The reply's text to one conversation (retried; ``ModelAPIError`` when it fails)."""
        return self._complete(messages, seed, 1)[0]

    def _complete(self, messages: Sequence[dict[str, str]], seed: int | None, n: int) -> list[str]:
        """Up to ``n`` replies to one conversation in one request (one when the server refuses
        ``n``, and from then on; fewer when it ignores it)."""
        problem = ""
        attempt = 0
        while attempt <= self.requests.retries:
            if attempt:
                self.sleep(self._wait(attempt))
            attempt += 1
            try:
                status, raw, retry_after = self._post(self._body(messages, seed, n))
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                problem = f"cannot reach {self.url} ({getattr(error, 'reason', error)})"
                continue
            if status in RETRY_STATUS:
                problem = f"{self.url} answered HTTP {status}"
                if retry_after and retry_after.isdigit():
                    self.sleep(float(retry_after))
                continue
            detail = raw.decode("utf-8", "replace")[:300]
            if status == 400 and self._asks_completion_tokens(detail):
                self.tokens_field = "max_completion_tokens"  # (the same request, not a retry)
                attempt -= 1
                continue
            if status == 400 and n > 1:  # (servers that take one reply a request)
                self.choices = n = 1
                attempt -= 1
                continue
            if status != 200:
                raise ModelAPIError(
                    f"{self.url} answered HTTP {status}: {detail}; check base_url, model "
                    f"({self.model!r}) and the API key"
                )
            return self._replies(raw)
        raise ModelAPIError(
            f"{problem} after {self.requests.retries + 1} attempts; start the server or fix base_url, "
            "then fit again with the same checkpoint folder to resume"
        )

    def _body(self, messages: Sequence[dict[str, str]], seed: int | None, n: int) -> bytes:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            self.tokens_field: self.sampling.max_tokens,
            "temperature": self.sampling.temperature,
        }
        if n > 1:
            payload["n"] = n
        if seed is not None:
            payload["seed"] = seed
        return json.dumps(payload).encode()

    def _asks_completion_tokens(self, detail: str) -> bool:
        """Whether a 400 says the model takes ``max_completion_tokens``, not ``max_tokens``
        (OpenAI's reasoning models), while the client still sends the latter."""
        return self.tokens_field == "max_tokens" and "max_completion_tokens" in detail

    def _wait(self, attempt: int) -> float:
        """Before retry ``attempt``: half the exponential step, plus up to another half at
        random (clients that failed together do not retry together)."""
        step = self.requests.backoff * 2 ** (attempt - 1)
        with self._jitter_lock:
            return step / 2 + float(self._jitter.uniform(0, step / 2))

    def _replies(self, raw: bytes) -> list[str]:
        """The texts of a completion's choices (a choice cut at the token limit keeps its whole
        sentences)."""
        try:
            answer = json.loads(raw)
            choices = answer["choices"]
            contents = [(c["message"]["content"], c.get("finish_reason")) for c in choices]
            if not contents:
                raise IndexError
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelAPIError(
                f"{self.url} answered with no chat completion in its JSON"
            ) from None
        self.usage.add(answer.get("usage") if isinstance(answer, dict) else None)
        return [_choice_text(text, finish) for text, finish in contents]

    def chat_many(self, conversations: Sequence[Sequence[dict[str, str]]], seed: int) -> list[str]:
        """Replies to many conversations, ``concurrency`` requests at a time, in order.

        A conversation asked several times goes in requests of up to :attr:`choices` replies
        (the API's ``n``), so its prompt is sent and billed once a request; the rest is asked
        again where a server answers fewer."""
        groups: dict[str, list[int]] = {}
        for i, conversation in enumerate(conversations):
            groups.setdefault(json.dumps(list(conversation), sort_keys=True), []).append(i)
        replies: list[str | None] = [None] * len(conversations)
        pending = list(groups.values())
        with ThreadPoolExecutor(max_workers=self.requests.concurrency) as pool:
            while pending:
                asks = sorted(
                    (
                        rows[start : start + self.choices]
                        for rows in pending
                        for start in range(0, len(rows), self.choices)
                    ),
                    key=lambda rows: rows[0],
                )  # (in the order asked)
                futures = [
                    pool.submit(self._complete, conversations[rows[0]], seed + rows[0], len(rows))
                    for rows in asks
                ]
                pending, failed = [], None
                for rows, future in zip(asks, futures, strict=True):
                    try:
                        answered = future.result()[: len(rows)]
                    except ModelAPIError as error:  # the others still finish, and are kept
                        failed = failed or error
                        continue
                    for row, text in zip(rows, answered, strict=False):
                        replies[row] = text
                    if len(answered) < len(rows):  # a server that ignores n: one at a time
                        self.choices = 1
                        pending.append(rows[len(answered) :])
                if failed is not None:
                    failed.answered = {i: r for i, r in enumerate(replies) if r is not None}
                    raise failed
        return [r if r is not None else "" for r in replies]


def _choice_text(content: Any, finish: Any) -> str:
    """A choice's text; cut at the token limit, up to its last whole sentence."""
    if not isinstance(content, str):
        return ""
    return whole_sentences(content) if finish == "length" else content.strip()


class Chat(Protocol):
    """What the LLM APIs need of a model: replies to conversations (a server or a local model)."""

    def chat_many(self, conversations: Sequence[Sequence[dict[str, str]]], seed: int) -> list[str]:
        """One reply per conversation, in order."""
        ...


class LLMTextAPI:
    """PE's random and variation APIs through a :class:`ChatClient` (or any :class:`Chat`) and
    Aug-PE prompts."""

    def __init__(
        self,
        client: Chat,
        *,
        label: str | None = None,
        vocabulary: Vocabulary | None = None,
        prompts: dict[str, str] | None = None,
        keywords: int = 3,
        column: str = "text",
        reasks: int = 2,
    ) -> None:
        if not isinstance(reasks, int) or reasks < 0:
            raise InputError(f"reasks must be a non-negative integer, got {reasks!r}")
        self.client = client
        self.label = label
        words = vocabulary or Vocabulary.bundled("reviews")
        # the fallback texts use the label's sections where the vocabulary has them
        self.words = WordAPI(words, label=label if label in words.labels() else None)
        self.prompts = prompts or load_prompts()
        self.keywords = keywords
        self.column = column
        self.reasks = reasks
        self.failures = 0
        self.reasked = 0

    def keep_replies(self, path: str | Path) -> None:
        """Keep every reply in ``path`` as it comes and read it back when the same request is
        asked again (:class:`~safeshare.synth.pe.replies.StoredReplies`; PE's checkpoint calls
        this, so a resumed step never pays for a reply twice)."""
        from safeshare.synth.pe.replies import StoredReplies

        inner = self.client.chat if isinstance(self.client, StoredReplies) else self.client
        self.client = StoredReplies(inner, path)

    def for_label(self, label: str) -> LLMTextAPI:
        """The same client and prompts for another label (its own failure count)."""
        return LLMTextAPI(
            self.client,
            label=label,
            vocabulary=self.words.vocabulary,
            prompts=self.prompts,
            keywords=self.keywords,
            column=self.column,
            reasks=self.reasks,
        )

    def _ask(self, kind: str, fields: list[dict[str, str]], rng: np.random.Generator) -> list[str]:
        """The cleaned replies ("" where a reply stayed unusable after :attr:`reasks` more
        tries: a meta-reply, a refusal, the prompt copied, blanks left; see :func:`clean_reply`)."""
        system, user = self.prompts[f"{kind}.system"], self.prompts[f"{kind}.user"]
        label = self.label or "any"
        asked = [user.format(label=label, **f) for f in fields]
        replies = [""] * len(asked)
        pending = list(range(len(asked)))
        for attempt in range(self.reasks + 1):
            conversations = [
                [{"role": "system", "content": system}, {"role": "user", "content": asked[i]}]
                for i in pending
            ]
            answers = self.client.chat_many(conversations, int(rng.integers(2**31)))
            for i, answer in zip(pending, answers, strict=True):
                replies[i] = clean_reply(answer, asked[i])
            pending = [i for i in pending if not replies[i]]
            self.reasked += len(pending) if attempt < self.reasks else 0
            if not pending:
                break
        return replies

    def random(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``n`` texts written for the label around public keywords."""
        nouns = self.words.vocabulary.entries("noun", self.label) or ("anything",)
        fields = [
            {"keywords": ", ".join(rng.choice(list(nouns), size=self.keywords))} for _ in range(n)
        ]
        replies = self._ask("random", fields, rng)
        fallback = self.words.random(n, rng)[self.column].tolist()
        return pd.DataFrame({self.column: self._checked(replies, fallback)})

    def vary(self, samples: pd.DataFrame, degree: float, rng: np.random.Generator) -> pd.DataFrame:
        """Each text varied by the model: with the bundled prompts, a share ``degree`` of its
        words masked and refilled (see :data:`PLACEHOLDERS` for the other ways)."""
        if not 0 < degree <= 1:
            raise InputError(f"degree must lie in (0, 1], got {degree}")
        texts = samples[self.column].astype(str).tolist()
        fields: list[dict[str, str]] = [
            {"text": text, "words": str(len(text.split()))} for text in texts
        ]
        used = placeholders(self.prompts["vary.user"])  # (only what is shown draws randomness)
        if "masked" in used:
            for field, text in zip(fields, texts, strict=True):
                field["masked"] = mask(text, degree, rng)
        if "examples" in used:
            for field, shown in zip(fields, few_shot(texts, rng), strict=True):
                field["examples"] = shown
        replies = self._ask("vary", fields, rng)
        out = samples.reset_index(drop=True).copy()
        out[self.column] = self._checked(replies, texts)
        return out

    def _checked(self, replies: list[str], fallback: list[str]) -> list[str]:
        good = [r if r else f for r, f in zip(replies, fallback, strict=True)]
        self.failures += sum(1 for r in replies if not r)
        return good


# a reply about the task instead of a text: the model talks to the user, refuses or explains
