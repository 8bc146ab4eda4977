"""The real server on loopback: same outputs as local, every bad payload a 4xx, still running."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from safeshare.errors import InputError, ModelAPIError
from safeshare.obfuscate.client import ObfuscatingClient
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.server import create_app, serve_in_thread
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator
from safeshare.obfuscate.wire import encode_request
from tests.obfuscate.conftest import TEXTS

MAX_TEXTS = 4


@pytest.fixture(scope="module")
def transform(minilm: FrozenModel) -> ObfuscationTransform:
    transform = ObfuscationTransform.for_model(minilm, seed=1)
    with torch.no_grad():
        transform.network.log_scale.bias.fill_(-2.0)  # visible noise, utility still high
    return transform


@pytest.fixture(scope="module")
def url(minilm: FrozenModel) -> Iterator[str]:
    with serve_in_thread(create_app(minilm, max_texts=MAX_TEXTS)) as base:
        yield base


def post(url: str, body: bytes, path: str = "/v1/embed") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url + path, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        text = err.read()
        try:
            return err.code, json.loads(text)
        except json.JSONDecodeError:
            return err.code, {"error": text.decode()}


def still_answers(url: str) -> None:
    with urllib.request.urlopen(url + "/v1/info", timeout=30) as response:
        assert response.status == 200


def local_pooled(model: FrozenModel, sent: Any, mask: Any) -> np.ndarray:
    with torch.no_grad():  # what the server computes from what it received (float16)
        return model.pooled(sent.half().float(), mask).numpy()


def test_server_embeddings_equal_local_ones_of_the_same_obfuscated_inputs(
    minilm: FrozenModel, transform: ObfuscationTransform, url: str
) -> None:
    texts = [*TEXTS, "See you at the station at six", "ok"]  # 6 texts: two requests of <= 4
    client = ObfuscatingClient(transform, url, model=minilm, generator=torch_generator(3)[0])
    got = client.embed(texts)
    assert got.shape == (6, 384) and got.dtype == np.float32
    replay = torch_generator(3)[0]
    expected = np.vstack(
        [
            local_pooled(minilm, *transform.obfuscate(minilm, texts[i : i + MAX_TEXTS], replay))
            for i in range(0, len(texts), MAX_TEXTS)
        ]
    )
    np.testing.assert_allclose(got, expected, atol=2e-5)
    batch = minilm.tokenize(texts)
    with torch.no_grad():
        clean = minilm.pooled_from_ids(batch.input_ids, batch.attention_mask).numpy()
    cosine = (got * clean).sum(axis=1)
    assert cosine.min() > 0.5 and cosine.max() < 0.9999  # noisy, yet the same meaning
    again = client.embed(texts)  # fresh noise on every call
    assert not np.allclose(again, got, atol=1e-4)
    assert client.embed([]).shape == (0, 384)


def valid(model: FrozenModel, texts: int = 1, tokens: int = 8, dim: int = 384) -> dict[str, Any]:
    embeds = np.full((texts, tokens, dim), 0.01, dtype=np.float32)
    return json.loads(encode_request(embeds, [tokens] * texts, fingerprint=model.fingerprint))


def mutated(model: FrozenModel, **changes: Any) -> bytes:
    body = valid(model)
    body.update(changes)
    return json.dumps(body).encode()


def nan_body(model: FrozenModel) -> bytes:
    embeds = np.zeros((1, 8, 384), dtype=np.float32)
    embeds[0, 3, 7] = np.nan
    return encode_request(embeds, [8], fingerprint=model.fingerprint)


BAD = {
    "not JSON": (lambda m: b"hello, this is not json", 400, "not JSON"),
    "JSON but not an object": (lambda m: b"[1, 2, 3]", 400, "JSON object"),
    "wrong format": (lambda m: mutated(m, format="other/9"), 400, "'format'"),
    "wrong fingerprint": (lambda m: mutated(m, fingerprint="0" * 64), 409, "embedding table"),
    "no fingerprint": (lambda m: mutated(m, fingerprint=None), 400, "'fingerprint'"),
    "float32 dtype": (lambda m: mutated(m, dtype="float32"), 400, "'dtype'"),
    "wrong hidden size": (
        lambda m: json.dumps(valid(m, dim=100)).encode(),
        422,
        "does not match the model's 384",
    ),
    "two-axis shape": (lambda m: mutated(m, shape=[8, 384]), 400, "'shape'"),
    "negative shape": (lambda m: mutated(m, shape=[1, -8, 384]), 400, "'shape'"),
    "too many tokens": (lambda m: json.dumps(valid(m, tokens=65)).encode(), 413, "65 tokens"),
    "too many texts": (lambda m: json.dumps(valid(m, texts=5)).encode(), 413, "5 texts"),
    "data shorter than shape": (lambda m: mutated(m, shape=[1, 9, 384]), 422, "needs"),
    "length beyond tokens": (lambda m: mutated(m, lengths=[9]), 422, "'lengths'"),
    "lengths of wrong count": (lambda m: mutated(m, lengths=[8, 8]), 400, "'lengths'"),
    "bad base64": (lambda m: mutated(m, data="@@@not base64@@@"), 400, "base64"),
    "transform not an identity": (lambda m: mutated(m, transform="t1"), 400, "'transform'"),
    "NaN": (nan_body, 422, "finite"),
    "infinity": (
        lambda m: mutated(
            m, data=base64.b64encode(np.full(8 * 384, np.inf, "<f2").tobytes()).decode()
        ),
        422,
        "finite",
    ),
    "oversized body": (lambda m: b"x" * 2_000_000, 413, "exceeds"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_payload_gets_a_4xx_with_a_reason_and_the_server_keeps_running(
    minilm: FrozenModel, url: str, case: str
) -> None:
    make, status, reason = BAD[case]
    code, body = post(url, make(minilm))
    assert code == status, body
    assert reason in body["error"]
    still_answers(url)


def test_a_chunked_body_is_cut_off_at_the_limit(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    chunks = (b"x" * 65536 for _ in range(40))  # 2.6 MB, no Content-Length
    headers = {"Content-Type": "application/json"}
    connection.request("POST", "/v1/embed", body=chunks, encode_chunked=True, headers=headers)
    response = connection.getresponse()
    assert response.status == 413 and b"exceeds" in response.read()
    connection.close()
    still_answers(url)


def _raw(url: str, request: bytes, wait: float = 30.0) -> bytes:
    """Send ``request`` as raw bytes and read what comes back within ``wait`` seconds."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as connection:
        connection.sendall(request)
        return connection.recv(65536)


def test_a_huge_declared_body_is_refused_before_it_is_read(url: str) -> None:
    started = time.monotonic()
    answer = _raw(
        url,
        b"POST /v1/embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 999999999999\r\n\r\n{}",
    )
    assert answer.startswith(b"HTTP/1.1 413") and time.monotonic() - started < 10
    still_answers(url)


def test_a_stalled_body_times_out(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from safeshare.obfuscate import server

    monkeypatch.setattr(server, "BODY_TIMEOUT", 0.5)
    answer = _raw(
        url,
        b"POST /v1/embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{",
        wait=10,
    )
    assert answer.startswith(b"HTTP/1.1 408")
    still_answers(url)


def test_only_json_from_a_token_holder_is_served(minilm: FrozenModel, url: str) -> None:
    body = json.dumps([[[[]]]] * 2).encode()
    request = urllib.request.Request(url + "/v1/embed", data=body, method="POST")  # form type
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 415
    code, answer = post(url, b"[" * 50_000 + b"]" * 50_000)
    assert code == 400 and "nested too deeply" in answer["error"]
    with serve_in_thread(create_app(minilm, token="s3cret")) as guarded:
        assert post(guarded, b"{}")[0] == 401
        request = urllib.request.Request(
            guarded + "/v1/embed",
            data=b"{}",
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer s3cret"},
        )
        with pytest.raises(urllib.error.HTTPError) as bad:  # past the token: the payload's 400
            urllib.request.urlopen(request, timeout=30)
        assert bad.value.code == 400


def test_wrong_method_and_path_are_4xx(url: str) -> None:
    for path, method in (("/v1/embed", "GET"), ("/v1/tokens", "POST")):
        request = urllib.request.Request(url + path, data=b"{}", method=method)
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        assert caught.value.code in (404, 405)
    still_answers(url)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_server_raises_model_api_error_after_retries(
    minilm: FrozenModel, transform: ObfuscationTransform
) -> None:
    client = ObfuscatingClient(
        transform, f"http://127.0.0.1:{free_port()}", model=minilm, retries=2, backoff=0.05
    )
    start = time.monotonic()
    with pytest.raises(ModelAPIError, match="after 3 attempts") as caught:
        client.embed(TEXTS)
    assert time.monotonic() - start >= 0.05 + 0.1  # backed off between the attempts
    assert "meeting" not in str(caught.value) and "Friday" not in str(caught.value)


def test_the_client_retries_until_a_late_server_is_up(
    minilm: FrozenModel, transform: ObfuscationTransform
) -> None:
    port = free_port()
    app = create_app(minilm, max_texts=MAX_TEXTS)
    ready = threading.Event()

    def late() -> None:
        time.sleep(0.3)
        with serve_in_thread(app, port=port):
            ready.set()
            time.sleep(5)

    threading.Thread(target=late, daemon=True).start()
    client = ObfuscatingClient(
        transform, f"http://127.0.0.1:{port}", model=minilm, retries=6, backoff=0.1
    )
    assert client.embed(TEXTS[:1]).shape == (1, 384)
    assert ready.is_set()


def test_refusals_name_the_reason(
    minilm: FrozenModel, transform: ObfuscationTransform, url: str
) -> None:
    with serve_in_thread(create_app(minilm, max_body_bytes=2000)) as small:
        client = ObfuscatingClient(transform, small, model=minilm, retries=0)
        with pytest.raises(ModelAPIError, match=r"HTTP 413\): body of \d+ bytes exceeds 2000"):
            client.embed(TEXTS[:1])
        still_answers(small)
    other = ObfuscationTransform(transform.config, "f" * 64, seed=0)
    with pytest.raises(InputError, match="trained for the model"):
        ObfuscatingClient(other, url, model=minilm)
    longer = FrozenModel.wrap(minilm.network, minilm.tokenizer, max_length=128)
    client = ObfuscatingClient(transform, url, model=longer)
    with pytest.raises(InputError, match="load the model with max_length=64"):
        client.embed([" ".join(["word"] * 100)])
    with pytest.raises(InputError, match="http://HOST:PORT"):
        ObfuscatingClient(transform, "localhost:8080", model=minilm)


PARTIAL_HEADERS = b"POST /v1/embed HTTP/1.1\r\nHost: x\r\n"  # the blank line never comes


def _stall(url: str) -> socket.socket:
    """A connection that sends part of a request's headers, then nothing more."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=5)
    connection.sendall(PARTIAL_HEADERS)
    return connection


def _until_closed(connection: socket.socket, wait: float = 3.0) -> bytes | None:
    """What the server sends before it closes ``connection``; None if still open after ``wait``."""
    connection.settimeout(wait)
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return received


def test_a_client_stalling_in_its_headers_gets_408_and_is_closed(minilm: FrozenModel) -> None:
    with serve_in_thread(create_app(minilm), header_timeout=0.5) as base:
        started = time.monotonic()
        with _stall(base) as stalled:
            answer = _until_closed(stalled)
        assert answer is not None, "a client stalling in its headers kept its connection"
        assert answer.startswith(b"HTTP/1.1 408") and 0.4 < time.monotonic() - started < 2
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as silent:
            assert _until_closed(silent) == b""  # nothing begun: closed without an answer
        kept = http.client.HTTPConnection(host, int(port), timeout=5)
        kept.request("GET", "/v1/info")  # a served request, then the next one's headers stall
        assert kept.getresponse().read() and kept.sock is not None
        kept.sock.sendall(PARTIAL_HEADERS)
        started = time.monotonic()
        answer = _until_closed(kept.sock)
        assert answer is not None and answer.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 2
        kept.close()
        still_answers(base)


def test_stalled_headers_cannot_hold_the_connection_cap(minilm: FrozenModel) -> None:
    with serve_in_thread(create_app(minilm), header_timeout=1.0, max_connections=50) as base:
        stalled = [_stall(base) for _ in range(50)]
        with pytest.raises(urllib.error.HTTPError) as full:
            urllib.request.urlopen(base + "/v1/info", timeout=5)
        assert full.value.code == 503  # the cap is full of stalled clients
        deadline = time.monotonic() + 3  # they all began together: all closed by then
        answers = [_until_closed(c, max(0.05, deadline - time.monotonic())) for c in stalled]
        for connection in stalled:
            connection.close()
        assert None not in answers, "clients stalling in their headers kept their connections"
        still_answers(base)


# any JSON a client may send: scalars, lists and objects nested a few levels, keys that the
# request format uses mixed with others
_KEYS = st.sampled_from(["format", "fingerprint", "shape", "data", "mask", "dtype", "x", ""])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_JSON)
def test_any_json_body_gets_an_answer_never_a_server_error(url: str, body: Any) -> None:
    code, answer = post(url, json.dumps(body).encode())
    assert 400 <= code < 500, (code, answer)
    assert isinstance(answer.get("error"), str) and "Traceback" not in answer["error"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=300))
def test_any_bytes_get_an_answer_never_a_server_error(url: str, body: bytes) -> None:
    code, answer = post(url, body)
    assert 400 <= code < 500, (code, answer)
