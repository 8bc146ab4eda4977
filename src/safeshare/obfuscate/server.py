"""The model server: a frozen model behind HTTP that accepts only obfuscated embeddings.

:func:`create_app` builds a Starlette application around a :class:`FrozenModel`:

* ``GET /v1/info``: the model's embedding-table fingerprint, hidden size and limits (public);
* ``POST /v1/embed``: a :mod:`safeshare.obfuscate.wire` request (float16 obfuscated token
  embeddings, never token ids or text) in, the pooled sentence embeddings (float32) out.

Every request is size-limited (body bytes, checked while reading; tokens and texts per request)
and validated (format, fingerprint, shape against the model's hidden size, finite values); a
bad one gets a 4xx JSON ``{"error": reason}`` naming the field, and the server keeps running.
Nothing logs request contents (uvicorn's access log has method, path and status only).
:func:`serve` runs it with uvicorn; :func:`serve_in_thread` runs it in a background thread on
a free loopback port (tests, benchmarks).  Both use uvicorn's h11 protocol with a header
timeout (:data:`HEADER_TIMEOUT`), so clients that never finish their headers cannot hold the
connection cap.  starlette, uvicorn and torch are imported lazily.

>>> SERVE_INSTALL.startswith("pip install")
True
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from safeshare.errors import InputError, MissingDependencyError, ModelAPIError
from safeshare.obfuscate.card import TransformCard, unvouched
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.obfuscate.wire import (
    FORMAT,
    Limits,
    PayloadError,
    Request,
    decode_request,
    encode_response,
)

SERVE_INSTALL = "pip install 'safeshare[serve]'"
LOG = logging.getLogger("safeshare.obfuscate.server")
EMBED_PATH = "/v1/embed"
INFO_PATH = "/v1/info"


def limits_for(
    model: FrozenModel,
    *,
    max_tokens: int | None = None,
    max_texts: int = 32,
    max_body_bytes: int | None = None,
) -> Limits:
    """The server's limits for ``model`` (``max_tokens`` defaults to its ``max_length``)."""
    tokens = model.max_length if max_tokens is None else max_tokens
    ceiling = int(getattr(model.network.config, "max_position_embeddings", tokens))
    if not isinstance(tokens, int) or not 1 <= tokens <= ceiling:
        raise InputError(f"max_tokens must be an integer in [1, {ceiling}], not {tokens!r}")
    if not isinstance(max_texts, int) or max_texts < 1:
        raise InputError(f"max_texts must be a positive integer, not {max_texts!r}")
    if max_body_bytes is not None and (not isinstance(max_body_bytes, int) or max_body_bytes < 1):
        raise InputError(f"max_body_bytes must be a positive integer, not {max_body_bytes!r}")
    dim = int(model.table.shape[1])
    return Limits(dim, tokens, max_texts, model.fingerprint, max_body_bytes)


_DRAIN_BYTES = 16 << 20  # of a refused body, read and dropped so the client can read the 413
BODY_TIMEOUT = 10.0  # seconds a request may take between two chunks of its body
MAX_CONNECTIONS = 256  # connections and requests at once; beyond, 503 (uvicorn's limit)
HEADER_TIMEOUT = 10.0  # seconds for a request line and headers, from connect or last response


async def _read_body(request: Any, limit: int) -> bytes:
    """The body, refused with 413 as soon as it (declared or streamed) exceeds ``limit``, and
    with 408 when a chunk takes more than :data:`BODY_TIMEOUT` seconds to come.

    A body declared too large is refused without keeping any of it; a refused body (declared
    or found too large) is read and dropped up to 16 MiB in all, so a client still sending
    gets the answer instead of a reset connection. A body declared beyond 16 MiB is refused
    before any of it is read.
    """
    stream = request.stream().__aiter__()
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise PayloadError(400, "Content-Length must be a non-negative integer")
        if int(declared) > limit:
            if int(declared) <= _DRAIN_BYTES:
                await _drain(stream, 0)
            raise PayloadError(413, f"body of {declared} bytes exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while (chunk := await _next_chunk(stream)) is not None:
        size += len(chunk)
        if size > limit:
            await _drain(stream, size)
            raise PayloadError(413, f"body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _next_chunk(stream: Any) -> bytes | None:
    try:
        return bytes(await asyncio.wait_for(stream.__anext__(), BODY_TIMEOUT))
    except StopAsyncIteration:
        return None
    except TimeoutError:
        raise PayloadError(408, f"the body did not come within {BODY_TIMEOUT:g} s") from None


async def _drain(stream: Any, seen: int) -> None:
    """Read and drop what is left of a refused body, up to :data:`_DRAIN_BYTES` in all."""
    while seen <= _DRAIN_BYTES and (chunk := await _next_chunk(stream)) is not None:
        seen += len(chunk)


def create_app(
    model: FrozenModel,
    *,
    max_tokens: int | None = None,
    max_texts: int = 32,
    max_body_bytes: int | None = None,
    parallel: int = 1,
    token: str | None = None,
    cards: Sequence[TransformCard] = (),
) -> Any:
    """A Starlette app serving ``model``'s pooled embeddings of obfuscated token embeddings.

    At most ``parallel`` forward passes run at once (with one torch thread each, set by
    :func:`serve`, ``parallel`` = cores is fastest on a small CPU).  A request must say
    ``Content-Type: application/json`` (a web page cannot send that cross-site without a
    preflight) and, with ``token``, ``Authorization: Bearer <token>``.  ``cards`` are the
    registered transforms' (:mod:`safeshare.obfuscate.card`): ``/v1/info`` shows their attack
    figures, and a request made with a transform that has none, or that is not registered,
    is served with a ``Warning`` header and the reason logged once.
    """
    try:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route
    except ImportError:
        raise MissingDependencyError(
            f"the obfuscation server needs starlette and uvicorn; install them with "
            f"`{SERVE_INSTALL}`"
        ) from None
    torch = require_torch()
    limits = limits_for(
        model, max_tokens=max_tokens, max_texts=max_texts, max_body_bytes=max_body_bytes
    )
    if not isinstance(parallel, int) or parallel < 1:
        raise InputError(f"parallel must be a positive integer, not {parallel!r}")
    lock = threading.BoundedSemaphore(parallel)  # forward passes at once: one per core
    registry = {card.transform: card for card in cards}
    warned = _Once()

    def pooled(request: Request) -> Any:
        with lock, torch.inference_mode():
            embeds = torch.from_numpy(request.embeds)
            mask = torch.from_numpy(request.mask)
            return model.pooled(embeds, mask).numpy()

    async def info(_: Any) -> Any:
        return JSONResponse(
            {
                "format": FORMAT,
                "fingerprint": limits.fingerprint,
                "dim": limits.dim,
                "max_tokens": limits.max_tokens,
                "max_texts": limits.max_texts,
                "max_body_bytes": limits.body_bytes,
                "outputs": ["embeddings"],
                "transforms": {key: card.public() for key, card in registry.items()},
            }
        )

    async def embed(request: Any) -> Any:
        try:
            _check_headers(request.headers, token)
            decoded = decode_request(await _read_body(request, limits.body_bytes), limits)
        except PayloadError as err:
            close = {"Connection": "close"} if err.status in (401, 408, 413, 415) else None
            return JSONResponse({"error": err.reason}, status_code=err.status, headers=close)
        result = await run_in_threadpool(pooled, decoded)
        problem = unvouched(decoded.transform, registry)
        headers = None
        if problem is not None:
            headers = {"Warning": f'299 safeshare "{problem}"'}
            if warned.first(problem):
                LOG.warning(problem)
        body = encode_response("embeddings", result)
        return Response(body, media_type="application/json", headers=headers)

    routes = [
        Route(INFO_PATH, info, methods=["GET"]),
        Route(EMBED_PATH, embed, methods=["POST"]),
    ]
    return Starlette(routes=routes)


class _Once:
    """Which messages were seen (each is logged once, not once per request)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def first(self, message: str) -> bool:
        with self.lock:
            new = message not in self.seen
            self.seen.add(message)
            return new


def _check_headers(headers: Any, token: str | None) -> None:
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise PayloadError(415, "Content-Type must be application/json")
    if token is not None:
        given = headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise PayloadError(401, "a valid 'Authorization: Bearer <token>' header is needed")


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError(
            f"the obfuscation server needs uvicorn; install it with `{SERVE_INSTALL}`"
        ) from None
    return uvicorn


def _http_protocol(header_timeout: float) -> type[Any]:
    """uvicorn's h11 protocol, closing a connection whose request headers take too long.

    uvicorn arms its keep-alive timer only after a response, and the app never sees a request
    whose headers are unfinished, so a client sending headers slowly (slowloris) would hold its
    connection for ever.  Here a timer runs while no request is being served: from the
    connection's start, and again from the end of each response; a request dispatched to the
    app stops it (the app times out a stalled body itself, see :data:`BODY_TIMEOUT`).  When it
    fires, a client that has sent part of a request gets 408, then the connection is closed.
    """
    if not isinstance(header_timeout, int | float) or not header_timeout > 0:
        raise InputError(f"header_timeout must be a positive number, not {header_timeout!r}")
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._cancel_header_timer()  # headers complete: the app has the request

        def on_response_complete(self) -> None:
            self._arm_header_timer()  # first: super() may dispatch a pipelined request
            super().on_response_complete()

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            if not self.transport.is_closing():
                self._header_timer = self.loop.call_later(header_timeout, self._headers_late)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if self.transport.is_closing():
                return
            if self.conn.our_state is h11.IDLE and self.conn.trailing_data[0]:
                headers = [(b"content-length", b"0"), (b"connection", b"close")]
                answer = h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
                try:
                    self.transport.write(self.conn.send(answer) or b"")
                    self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
                except h11.LocalProtocolError:  # pragma: no cover - h11 refused; just close
                    pass
            self.transport.close()

    return HeaderTimeoutProtocol


def check_address(host: str, port: int) -> None:
    """Refuse an address this machine cannot listen on (a port in use, a host that is not one
    of its own) with one line, before anything starts (uvicorn would say so in its log only).
    Every address ``host`` resolves to is tried, as the server binds them all (``localhost``
    may be both ``::1`` and ``127.0.0.1``).

    >>> check_address("127.0.0.1", 0)
    """
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        raise InputError(
            f"--host {host}: no such address; give an address of this machine"
        ) from None
    with ExitStack() as held:  # (held together: one port for every address, as the server's)
        for family, kind, protocol, _, address in dict.fromkeys(found):
            probe = held.enter_context(socket.socket(family, kind, protocol))
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as the server will)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as err:
                raise InputError(
                    f"cannot listen on {host} port {port} ({err.strerror}): another program "
                    "holds the port, or the address is not this machine's; pick another --port "
                    "or --host"
                ) from None


def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    torch_threads: int | None = 1,
    log_level: str = "info",
) -> None:
    """Run ``app`` with uvicorn until interrupted (the access log shows no request contents).

    ``torch_threads`` sets this process's intra-op threads (None keeps torch's default): one
    thread per forward pass, several passes in parallel, beats two threads fighting for two
    shared cores (MiniLM, 64 tokens, busy machine: 18 ms of CPU a pass with one thread, 55 ms
    with two).
    """
    if torch_threads is not None:
        if not isinstance(torch_threads, int) or torch_threads < 1:
            raise InputError(f"torch_threads must be a positive integer, not {torch_threads!r}")
        require_torch().set_num_threads(torch_threads)
    check_address(host, port)
    _uvicorn().run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        limit_concurrency=MAX_CONNECTIONS,
        http=_http_protocol(HEADER_TIMEOUT),
        ws="none",
    )


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 30.0,
    header_timeout: float = HEADER_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> Iterator[str]:
    """Run ``app`` on ``port`` (0: a free one) of ``host`` in a thread; yields its base URL.

    ``header_timeout`` and ``max_connections`` are :func:`serve`'s limits (smaller in tests).
    """
    uvicorn = _uvicorn()
    protocol = _http_protocol(header_timeout)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    port = listener.getsockname()[1]
    # log_config=None: uvicorn attaches no handler to the sys.stderr of the moment (under a
    # test runner, a capture stream closed when the test ends); its loggers propagate instead
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        log_config=None,
        limit_concurrency=max_connections,
        http=protocol,
        ws="none",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            listener.close()
            raise ModelAPIError(f"the server did not start on {host}:{port} within {timeout} s")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        listener.close()
