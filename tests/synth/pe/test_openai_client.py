"""The OpenAI-compatible client against a real HTTP server on loopback (deterministic replies).

The server implements ``POST /v1/chat/completions``: it checks the request's shape and the
bearer token and answers from the prompt itself (the masked text with blanks filled by
"nice", or "a <label> text"), so these tests check the client's protocol handling, not a model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError, ModelAPIError
from safeshare.synth.pe.backends import TextBackend
from safeshare.synth.pe.openai_client import ChatClient, LLMTextAPI, load_prompts


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        state = self.server.state  # type: ignore[attr-defined]
        state["requests"] += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state["bodies"].append(body)
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": "no such route"})
        if self.headers.get("Authorization") != "Bearer sekrit":
            return self._send(401, {"error": "bad key"})
        if state["fail"] > 0:
            state["fail"] -= 1
            return self._send(503, {"error": "busy"}, {"Retry-After": "0"})
        if body.get("model") != "tiny":
            return self._send(400, {"error": "unknown model"})
        if state["completion_only"] and "max_tokens" in body:  # as OpenAI's reasoning models
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            return self._send(400, {"error": {"message": message}})
        user = body["messages"][-1]["content"]
        if "Fill each blank" in user:
            text = user.splitlines()[-1].replace("_", "nice")
        else:
            text = "a " + user.split()[3] + " text" if state["empty"] == 0 else ""
        if state["meta"] > 0:  # a small model talking about the task instead of doing it
            text = "I'll create a sentence based on your feedback: " + text
            state["meta"] -= 1
        state["empty"] = max(0, state["empty"] - 1)
        reply: dict[str, Any] = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]
        }
        if state["usage"]:  # what the server bills: words stand for tokens here
            usage = {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split())}
            reply["usage"] = usage
        self._send(200, reply)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    monkeypatch.setenv("TEST_LLM_KEY", "sekrit")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.state = {  # type: ignore[attr-defined]
        **{"requests": 0, "bodies": [], "fail": 0, "empty": 0, "meta": 0},
        **{"usage": True, "completion_only": False},
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def client(httpd: ThreadingHTTPServer, **kw: Any) -> ChatClient:
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    options: dict[str, Any] = {"api_key_env": "TEST_LLM_KEY", "sleep": lambda s: None}
    return ChatClient(url, "tiny", **(options | kw))


def test_random_and_vary_speak_the_protocol(server: ThreadingHTTPServer) -> None:
    api = LLMTextAPI(client(server, concurrency=4), label="positive")
    first = api.random(6, np.random.default_rng(0))
    assert first["text"].tolist() == ["a positive text"] * 6
    varied = api.vary(
        pd.DataFrame({"text": ["the food was cold"] * 5}), 0.5, np.random.default_rng(1)
    )
    assert all(t.count("nice") == 2 and len(t.split()) == 4 for t in varied["text"])
    bodies = server.state["bodies"]  # type: ignore[attr-defined]
    assert len(bodies) == 11 and {b["model"] for b in bodies} == {"tiny"}
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]
    assert len({b["seed"] for b in bodies[:6]}) == 6  # one seed per request, from the rng


def test_busy_server_is_retried_with_jittered_backoff(server: ThreadingHTTPServer) -> None:
    server.state["fail"] = 2  # type: ignore[attr-defined]
    waits: list[float] = []
    chat = client(server, concurrency=1, backoff=0.5, sleep=waits.append)
    assert chat.chat([{"role": "user", "content": "Write one short negative review"}]) == (
        "a negative text"
    )
    first, second = [w for w in waits if w > 0]  # (Retry-After: 0 sleeps 0)
    assert 0.25 <= first <= 0.5 and 0.5 <= second <= 1.0  # half the step, plus up to half
    many = [client(server, backoff=1.0)._wait(3) for _ in range(200)]
    assert min(many) >= 2.0 and max(many) <= 4.0 and len(set(many)) > 150


def test_the_tokens_each_reply_reports_are_added_up(server: ThreadingHTTPServer) -> None:
    chat = client(server, concurrency=3)
    conversations = [[{"role": "user", "content": f"Write one short {w} review"}] for w in "abc"]
    assert chat.chat_many(conversations, seed=0) == ["a a text", "a b text", "a c text"]
    assert chat.usage.to_dict() == {
        "requests": 3, "prompt_tokens": 15, "completion_tokens": 9, "requests_without_usage": 0,
    }  # fmt: skip
    assert chat.usage.cost((1.0, 2.0)) == pytest.approx((15 * 1.0 + 9 * 2.0) / 1e6)
    server.state["usage"] = False  # type: ignore[attr-defined]
    chat.chat([{"role": "user", "content": "Write one short d review"}])
    assert chat.usage.requests == 4 and chat.usage.unreported == 1


def test_a_model_that_rejects_max_tokens_is_asked_with_max_completion_tokens(
    server: ThreadingHTTPServer,
) -> None:
    state = server.state  # type: ignore[attr-defined]
    state["completion_only"] = True
    chat = client(server, concurrency=1, retries=0, max_tokens=50)
    assert chat.chat([{"role": "user", "content": "Write one short e review"}]) == "a e text"
    chat.chat([{"role": "user", "content": "Write one short f review"}])
    sent = [b.get("max_tokens", b.get("max_completion_tokens")) for b in state["bodies"]]
    assert state["requests"] == 3 and sent == [50, 50, 50]  # one refusal, then never again
    assert "max_completion_tokens" in state["bodies"][-1] and chat.usage.requests == 2


def test_requests_keep_to_the_rate_limit(server: ThreadingHTTPServer) -> None:
    now = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    chat = client(server, concurrency=1, rate=4.0, sleep=sleep, clock=lambda: now[0])
    for word in "wxyz":
        chat.chat([{"role": "user", "content": f"Write one short {word} review"}])
    assert waits == [0.25, 0.25, 0.25]  # four requests a quarter of a second apart
    with pytest.raises(InputError, match="rate"):
        client(server, rate=0.0)


def test_empty_replies_are_counted_and_replaced(server: ThreadingHTTPServer) -> None:
    server.state["empty"] = 2  # type: ignore[attr-defined]
    api = LLMTextAPI(client(server, concurrency=1), label="negative", reasks=0)
    texts = api.random(4, np.random.default_rng(2))["text"]
    assert api.failures == 2 and texts.str.len().min() > 0
    assert (texts == "a negative text").sum() == 2


def test_meta_replies_are_asked_again_then_replaced(server: ThreadingHTTPServer) -> None:
    state = server.state  # type: ignore[attr-defined]
    state["meta"] = 3
    api = LLMTextAPI(client(server, concurrency=1), label="negative")
    texts = api.random(4, np.random.default_rng(2))["text"]
    assert texts.tolist() == ["a negative text"] * 4  # the 3 meta-replies were asked again
    assert api.reasked == 3 and api.failures == 0 and state["requests"] == 7
    state["meta"] = 100  # a model that never does the task: 1 + 2 asks each, then replaced
    texts = api.random(2, np.random.default_rng(3))["text"]
    assert api.failures == 2 and not texts.str.contains("feedback").any()
    assert state["requests"] == 7 + 6


def test_client_errors_are_not_retried_and_name_the_fix(server: ThreadingHTTPServer) -> None:
    with pytest.raises(ModelAPIError, match=r"HTTP 400.*unknown model.*'other'"):
        ChatClient(
            f"http://127.0.0.1:{server.server_address[1]}/v1",
            "other",
            api_key_env="TEST_LLM_KEY",
        ).chat([{"role": "user", "content": "hi"}])
    assert server.state["requests"] == 1  # type: ignore[attr-defined]
    with pytest.raises(ModelAPIError, match="HTTP 401"):
        client(server, api_key_env="NO_SUCH_KEY_VARIABLE").chat([{"role": "user", "content": "x"}])


def test_unreachable_server_stops_with_a_resumable_message() -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens there now
    chat = ChatClient(f"http://127.0.0.1:{port}/v1", "tiny", retries=2, sleep=lambda s: None)
    with pytest.raises(ModelAPIError, match=r"cannot reach .* after 3 attempts.*resume"):
        chat.chat([{"role": "user", "content": "x"}])
    with pytest.raises(InputError, match="concurrency"):
        ChatClient("http://127.0.0.1:1/v1", "tiny", concurrency=0)


PROMPTS = """# a prompt file of a user's own
[random.system]
You write hotel reviews.
[random.user]
Write one short {label} hotel review about {keywords}.
[vary.system]
You rewrite hotel reviews.
[vary.user]
Fill each blank "_" of this {label} hotel review:
{masked}
"""


def test_a_prompt_file_of_ones_own_reaches_the_server(server, tmp_path) -> None:
    path = tmp_path / "hotels.txt"
    path.write_text(PROMPTS, encoding="utf-8")
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    backend = TextBackend(
        "openai-compatible", base_url=url, model="tiny", api_key_env="TEST_LLM_KEY", prompts=path
    )
    backend.check()
    api = backend.build().for_label("positive")
    api.random(2, np.random.default_rng(0))
    api.vary(pd.DataFrame({"text": ["the room was cold"]}), 0.5, np.random.default_rng(1))
    bodies = server.state["bodies"]  # type: ignore[attr-defined]
    assert bodies[0]["messages"][0]["content"] == "You write hotel reviews."
    assert bodies[0]["messages"][1]["content"].startswith("Write one short positive hotel review")
    varied = bodies[-1]["messages"][1]["content"].splitlines()
    assert varied[0].endswith("positive hotel review:") and varied[1].count("_") == 2
    assert backend.describe()["prompts"] == str(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("{masked}", "the text"), r"\[vary.user\] must contain \{masked\}"),
        (lambda t: t.replace("{keywords}", "{topic}"), r"uses \{topic\}; it may use only"),
        (lambda t: t.replace("[vary.system]", "[vary.sys]"), r"no \[vary.system\] section"),
        (lambda t: t.replace("{label} hotel", "{label hotel", 1), "not a valid template"),
    ],
)
def test_a_prompt_file_without_its_placeholders_is_refused(tmp_path, edit, message) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text(edit(PROMPTS), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_prompts(path)
    with pytest.raises(InputError, match="no such file"):
        load_prompts(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("I'll create a sentence based on your feedback.", ""),
        ("As an AI language model, I cannot write reviews.", ""),
        ("I'm sorry, but I can't help with that.", ""),
        ("Sure! The food was great.", ""),
        ("Here's a rewritten version: great food.", ""),
        ("Fill each blank with one word.", ""),  # the prompt copied back
        ("I'd like to share a positive review: I'm glad of a great coffee", ""),
        ("This positive review provides information about a novel's style.", ""),
        ('--- "Thanks for offering a positive review on these items."', ""),
        ("Here is the review:\nThe staff were lovely.", "The staff were lovely."),
        ("Here is the best pizza in town.", "Here is the best pizza in town."),
        ("I can't recommend it enough.", "I can't recommend it enough."),
        ("I will never come back.", "I will never come back."),
        ("The instructions were confusing.", "The instructions were confusing."),
    ],
)
def test_meta_replies_and_refusals_are_told_from_texts(reply: str, kept: str) -> None:
    from safeshare.synth.pe.openai_client import clean_reply

    asked = 'Fill each blank "_" in this negative review with one or more words:\nthe _ was _'
    assert clean_reply(reply, asked) == kept
