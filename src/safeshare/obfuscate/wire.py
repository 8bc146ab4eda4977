"""The wire format between an obfuscating client and the model server (numpy only, no torch).

A request carries only obfuscated token embeddings, never token ids or text: a JSON object
with the format tag, the fingerprint of the model's embedding table (so a server refuses a
transform made for another model), the array's ``shape`` ``[texts, tokens, dim]``, the
``lengths`` of the texts (real tokens; the rest is padding) and ``data``, the base64 of the
array's little-endian float16 bytes.  A response carries float32 arrays the same way.
:func:`decode_request` validates every field and raises :class:`PayloadError` with an HTTP
status and a reason that names the field, never its contents.

>>> import numpy as np
>>> body = encode_request(np.zeros((1, 3, 4), np.float32), [2], fingerprint="ab")
>>> limits = Limits(dim=4, max_tokens=8, max_texts=2, fingerprint="ab")
>>> request = decode_request(body, limits)
>>> request.embeds.shape, request.lengths.tolist()
((1, 3, 4), [2])
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError

FORMAT = "safeshare-obfuscated/1"
REQUEST_DTYPE = np.dtype("<f2")
RESPONSE_DTYPE = np.dtype("<f4")


class PayloadError(InputError):
    """A request the server refuses: ``status`` is the HTTP code, the message the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """What a server accepts: the model's hidden size and fingerprint, and size limits."""

    dim: int
    max_tokens: int
    max_texts: int
    fingerprint: str
    max_body_bytes: int | None = None

    @property
    def body_bytes(self) -> int:
        """The largest body accepted (by default, a full batch plus 64 KiB of JSON)."""
        if self.max_body_bytes is not None:
            return self.max_body_bytes
        raw = self.max_texts * self.max_tokens * self.dim * REQUEST_DTYPE.itemsize
        return 4 * (raw // 3 + 1) + 65536


@dataclass(frozen=True)
class Request:
    """A validated request: float32 embeddings ``(texts, tokens, dim)`` and real lengths."""

    embeds: Any
    lengths: Any
    transform: str | None = None  # the identity of the transform that made them, if named

    @property
    def mask(self) -> Any:
        """The ``(texts, tokens)`` attention mask (1 on real tokens, 0 on padding)."""
        return (np.arange(self.embeds.shape[1])[None, :] < self.lengths[:, None]).astype(np.int64)


HEX = frozenset("0123456789abcdef")


def encode_array(array: Any, dtype: np.dtype) -> tuple[list[int], str]:
    """``(shape, base64 of the little-endian bytes)`` of ``array`` cast to ``dtype``."""
    data = np.ascontiguousarray(np.asarray(array), dtype=dtype)
    return list(data.shape), base64.b64encode(data.tobytes()).decode("ascii")


def encode_request(
    embeds: Any, lengths: Any, *, fingerprint: str, transform: str | None = None
) -> bytes:
    """The JSON body that sends ``embeds`` (``(texts, tokens, dim)``) as float16, naming the
    transform that made them (its identity, for the server to look up its attack figures)."""
    shape, data = encode_array(embeds, REQUEST_DTYPE)
    lengths = [int(n) for n in np.asarray(lengths).ravel()]
    body = {
        "format": FORMAT,
        "fingerprint": fingerprint,
        "dtype": "float16",
        "shape": shape,
        "lengths": lengths,
        "data": data,
    }
    if transform is not None:
        body["transform"] = transform
    return json.dumps(body).encode("utf-8")


def _positive_ints(value: Any, name: str, count: int | None = None) -> list[int]:
    if (
        not isinstance(value, list)
        or (count is not None and len(value) != count)
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
    ):
        size = f"{count} " if count is not None else ""
        raise PayloadError(400, f"'{name}' must be a list of {size}positive integers")
    return value


def decode_request(body: bytes, limits: Limits) -> Request:
    """Parse and validate a request body against ``limits``; :class:`PayloadError` if bad."""
    if len(body) > limits.body_bytes:
        raise PayloadError(413, f"body of {len(body)} bytes exceeds {limits.body_bytes} bytes")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise PayloadError(400, "body is not JSON; send a safeshare-obfuscated/1 object") from None
    except RecursionError:  # nested deeper than the decoder goes: no request of ours is
        raise PayloadError(
            400, "body is nested too deeply; send a safeshare-obfuscated/1 object"
        ) from None
    if not isinstance(payload, dict):
        raise PayloadError(400, "body must be a JSON object")
    if payload.get("format") != FORMAT:
        raise PayloadError(400, f"'format' must be {FORMAT!r}")
    fingerprint = payload.get("fingerprint")
    if not isinstance(fingerprint, str):
        raise PayloadError(400, "'fingerprint' must be the model's embedding-table fingerprint")
    if fingerprint != limits.fingerprint:
        raise PayloadError(
            409,
            f"the embeddings were made for the model with embedding table {fingerprint[:16]}…, "
            f"this server runs {limits.fingerprint[:16]}…; use a transform trained for it",
        )
    transform = payload.get("transform")
    if transform is not None and not (
        isinstance(transform, str) and len(transform) == 64 and all(c in HEX for c in transform)
    ):
        raise PayloadError(400, "'transform' must be the transform's identity (64 hex digits)")
    if payload.get("dtype") != "float16":
        raise PayloadError(400, "'dtype' must be 'float16' (little-endian)")
    texts, tokens, dim = _positive_ints(payload.get("shape"), "shape", 3)
    if dim != limits.dim:
        raise PayloadError(422, f"embedding size {dim} does not match the model's {limits.dim}")
    if tokens > limits.max_tokens:
        raise PayloadError(413, f"{tokens} tokens exceed the limit of {limits.max_tokens}")
    if texts > limits.max_texts:
        raise PayloadError(413, f"{texts} texts exceed the limit of {limits.max_texts} a request")
    lengths = _positive_ints(payload.get("lengths"), "lengths", texts)
    if max(lengths) > tokens:
        raise PayloadError(422, f"'lengths' must not exceed the {tokens} tokens of 'shape'")
    data = payload.get("data")
    if not isinstance(data, str):
        raise PayloadError(400, "'data' must be a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise PayloadError(400, "'data' is not valid base64") from None
    expected = texts * tokens * dim * REQUEST_DTYPE.itemsize
    if len(raw) != expected:
        raise PayloadError(
            422, f"'data' holds {len(raw)} bytes; shape {[texts, tokens, dim]} needs {expected}"
        )
    embeds = np.frombuffer(raw, dtype=REQUEST_DTYPE).reshape(texts, tokens, dim)
    if not np.isfinite(embeds).all():
        raise PayloadError(422, "embeddings must be finite (no NaN or infinity)")
    return Request(embeds.astype(np.float32), np.asarray(lengths, dtype=np.int64), transform)


def encode_response(name: str, array: Any) -> bytes:
    """The JSON body returning ``array`` as float32 under ``name``."""
    shape, data = encode_array(array, RESPONSE_DTYPE)
    body = {"format": FORMAT, "dtype": "float32", name: {"shape": shape, "data": data}}
    return json.dumps(body).encode("utf-8")


def decode_response(body: bytes, name: str) -> Any:
    """The float32 array ``name`` of a server's response; :class:`InputError` if malformed."""
    try:
        payload = json.loads(body)
        entry = payload[name]
        shape = [int(n) for n in entry["shape"]]
        raw = base64.b64decode(entry["data"], validate=True)
        return np.frombuffer(raw, dtype=RESPONSE_DTYPE).reshape(shape).copy()
    except (
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
        TypeError,
        ValueError,
        binascii.Error,
    ):
        raise InputError(
            f"the server's response has no valid {name!r} array; is the URL a safeshare "
            "obfuscation server of the same version?"
        ) from None
