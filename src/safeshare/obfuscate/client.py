"""The client: obfuscate locally, send only float16 embeddings, get the model's output back.

``ObfuscatingClient(transform, url).embed(texts)`` tokenizes the texts and samples the
obfuscation on this machine (fresh noise on every call, from a ``secrets``-seeded generator
unless one is passed); the request carries only the obfuscated embeddings (see
:mod:`safeshare.obfuscate.wire`), never text or token ids.  The server's ``/v1/info`` is read
once to check that it runs the model the transform was trained for and to learn its limits;
batches are split to fit them.  Connection errors (and 502/503/504) are retried with
exponential backoff; a server that stays unreachable, or refuses a request, raises
:class:`~safeshare.errors.ModelAPIError` with the reason.  Uses only the standard library's
``urllib`` for HTTP.

``classify(texts)`` needs a transform saved with a classification head
(``safeshare obfuscate train --label-column``): the server returns pooled embeddings of the
obfuscated inputs and the head is applied **here**, so the server sees neither the texts nor
the decision about them, and it stays one generic endpoint for every task.

>>> check_url("http://127.0.0.1:8080/")
'http://127.0.0.1:8080'
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError, ModelAPIError
from safeshare.obfuscate.card import identity
from safeshare.obfuscate.model import FrozenModel, load_model
from safeshare.obfuscate.server import EMBED_PATH, INFO_PATH
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator
from safeshare.obfuscate.wire import decode_response, encode_request

RETRY_STATUS = frozenset({502, 503, 504})


@dataclass(frozen=True)
class Classification:
    """Labels and class probabilities ``(texts, classes)`` of texts classified via a server."""

    classes: tuple[str, ...]
    labels: list[str]
    probabilities: Any


def check_url(url: str) -> str:
    """``url`` without a trailing slash; :class:`InputError` unless it is an http(s) URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"server URL {url!r} must look like http://HOST:PORT")
    return url.rstrip("/")


def _reason(err: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(err.read())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return err.reason if isinstance(err.reason, str) else "no reason given"
    return str(body.get("error", "no reason given")) if isinstance(body, dict) else str(body)


class ObfuscatingClient:
    """Send texts to an obfuscation server as obfuscated embeddings; raw text stays here."""

    def __init__(
        self,
        transform: ObfuscationTransform,
        url: str,
        *,
        model: FrozenModel | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.25,
        generator: Any = None,
        token: str | None = None,
    ) -> None:
        if retries < 0 or backoff < 0 or timeout <= 0:
            raise InputError(
                f"retries={retries}, backoff={backoff}, timeout={timeout}: need retries >= 0, "
                "backoff >= 0 and timeout > 0"
            )
        self.url = check_url(url)
        self.transform = transform
        self.model = model if model is not None else load_model()
        transform.check_model(self.model)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._generator = generator if generator is not None else torch_generator()[0]
        self._info: dict[str, Any] | None = None
        self._token = token  # the server's bearer token, if it asks for one
        self.identity = identity(transform)  # what the requests name the transform by
        self.server_warnings: set[str] = set()  # what the server warned of (Warning headers)

    def _call(self, path: str, body: bytes | None = None) -> bytes:
        """One HTTP exchange, retried on connection errors; the response body."""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        last = "no attempt made"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url + path, data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    data: bytes = response.read()
                    warning = response.headers.get("Warning")
                    if warning:
                        self.server_warnings.add(warning)
                    return data
            except urllib.error.HTTPError as err:
                reason = _reason(err)
                if err.code in RETRY_STATUS:
                    last = f"HTTP {err.code}: {reason}"
                    continue
                raise ModelAPIError(
                    f"the server at {self.url} refused the request (HTTP {err.code}): {reason}"
                ) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
                last = str(getattr(err, "reason", err)) or type(err).__name__
        raise ModelAPIError(
            f"could not reach the obfuscation server at {self.url} after {self.retries + 1} "
            f"attempts ({last}); check that it runs (`safeshare obfuscate serve`) and the URL"
        )

    def info(self) -> dict[str, Any]:
        """The server's model fingerprint and limits (read once); refuses another model."""
        if self._info is None:
            try:
                info = json.loads(self._call(INFO_PATH))
                fingerprint, dim = str(info["fingerprint"]), int(info["dim"])
                int(info["max_tokens"]), int(info["max_texts"])
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
                raise ModelAPIError(
                    f"{self.url}{INFO_PATH} did not answer like a safeshare obfuscation server"
                ) from None
            if fingerprint != self.transform.fingerprint or dim != self.transform.config.dim:
                raise InputError(
                    f"the server at {self.url} runs the model with embedding table "
                    f"{fingerprint[:16]}…, this transform is for {self.transform.fingerprint[:16]}…;"
                    " use a transform trained for the server's model"
                )
            self._info = info
        return self._info

    def request_body(self, texts: Sequence[str]) -> bytes:
        """Obfuscate ``texts`` (fresh noise) into one request body: what leaves this machine."""
        sent, mask = self.transform.obfuscate(self.model, list(texts), self._generator)
        mask = np.asarray(mask)
        lengths = mask.sum(axis=1)
        if not np.array_equal(mask, np.arange(mask.shape[1])[None, :] < lengths[:, None]):
            raise InputError("the tokenizer pads on the left; set tokenizer.padding_side='right'")
        info = self.info()
        if mask.shape[1] > int(info["max_tokens"]):
            raise InputError(
                f"texts of {mask.shape[1]} tokens exceed the server's limit of "
                f"{info['max_tokens']}; load the model with max_length={info['max_tokens']}"
            )
        return encode_request(
            sent.numpy(), lengths, fingerprint=self.transform.fingerprint, transform=self.identity
        )

    def embed(self, texts: Sequence[str]) -> Any:
        """The model's pooled sentence embeddings ``(len(texts), dim)`` (float32) via the server."""
        if isinstance(texts, str):
            raise InputError("texts must be a list of strings; wrap a single text in a list")
        texts = list(texts)
        step = int(self.info()["max_texts"])
        parts = [
            decode_response(
                self._call(EMBED_PATH, self.request_body(texts[i : i + step])), "embeddings"
            )
            for i in range(0, len(texts), step)
        ]
        if not parts:
            return np.zeros((0, self.transform.config.dim), dtype=np.float32)
        return np.vstack(parts)

    def classify(self, texts: Sequence[str]) -> Classification:
        """Labels and probabilities from the transform's head on the server's pooled outputs."""
        head = self.transform.head
        if head is None:
            raise InputError(
                "this transform has no classification head; train it with "
                "`safeshare obfuscate train --label-column LABEL` (or attach a "
                "ClassificationHead to transform.head)"
            )
        head.check_model(self.model)
        probabilities = head.probabilities(self.embed(texts))
        labels = [head.classes[i] for i in probabilities.argmax(axis=1)]
        return Classification(head.classes, labels, probabilities)
