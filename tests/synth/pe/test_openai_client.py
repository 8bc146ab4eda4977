"""The OpenAI-compatible client against a real HTTP server on loopback (deterministic replies).

The server implements ``POST /v1/chat/completions``: it checks the request's shape and the
bearer token and answers from the prompt itself (the masked text with blanks filled by
"nice", or "a <label> text"), so these tests check the client's protocol handling, not a model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError, ModelAPIError
from safeshare.synth.pe.backends import TextBackend
from safeshare.synth.pe.openai_client import ChatClient, LLMTextAPI, Requests, Sampling
from safeshare.synth.pe.prompting import load_prompts


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
        if state["down_after"] is not None and state["answered"] >= state["down_after"]:
            return self._send(500, {"error": "the model went away"})
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
        if state["cut"]:  # a reply that ran into the token limit
            text, finish = "The room was dark. The bed was hard and the", "length"
        else:
            finish = "stop"
        n = body.get("n", 1)
        if n > 1 and state["n"] == "refused":
            return self._send(400, {"error": {"message": "'n' must be 1 for this model"}})
        n = 1 if state["n"] == "ignored" else n
        texts = [text] + [f"{text} {k}" for k in range(1, n)]  # n replies, told apart
        reply: dict[str, Any] = {
            "choices": [
                {
                    "index": k,
                    "message": {"role": "assistant", "content": t},
                    "finish_reason": finish,
                }
                for k, t in enumerate(texts)
            ]
        }
        if state["usage"]:  # what the server bills: words stand for tokens here
            usage = {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split())}
            reply["usage"] = usage
        state["answered"] += 1
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
        **{"usage": True, "completion_only": False, "cut": False, "n": "served"},
        **{"answered": 0, "down_after": None},
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def client(
    httpd: ThreadingHTTPServer,
    *,
    max_tokens: int = 96,
    api_key_env: str = "TEST_LLM_KEY",
    sleep: Any = lambda s: None,
    clock: Any = time.monotonic,
    **kw: Any,
) -> ChatClient:
    """A client of the test server; ``kw``: fields of ``Requests``."""
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    return ChatClient(url, "tiny", api_key_env=api_key_env, requests=Requests(**kw),
                      sampling=Sampling(max_tokens), sleep=sleep, clock=clock)  # fmt: skip


def test_random_and_vary_speak_the_protocol(server: ThreadingHTTPServer) -> None:
    api = LLMTextAPI(client(server, concurrency=4, choices=1), label="positive")
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
    chat = ChatClient(
        f"http://127.0.0.1:{port}/v1", "tiny", requests=Requests(retries=2), sleep=lambda s: None
    )
    with pytest.raises(ModelAPIError, match=r"cannot reach .* after 3 attempts.*resume"):
        chat.chat([{"role": "user", "content": "x"}])
    with pytest.raises(InputError, match="concurrency"):
        Requests(concurrency=0)
    with pytest.raises(InputError, match="timeout must be positive"):
        Requests(timeout=0)


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


@pytest.mark.parametrize("name", ["aug_pe", "paraphrase", "few_shot"])
def test_the_bundled_prompt_files_show_the_model_the_text_it_varies(server, name) -> None:
    chat = client(server, concurrency=1, choices=1)  # (one request a text, in order)
    api = LLMTextAPI(chat, label="negative", prompts=load_prompts(name))
    selected = pd.DataFrame(
        {"text": ["Cold soup.", "Rude staff at the desk.", "Cold soup.", "Slow."]}
    )
    api.vary(selected, 0.5, np.random.default_rng(1))
    asked = [b["messages"][1]["content"] for b in server.state["bodies"]]  # type: ignore[attr-defined]
    assert len(asked) == 4 and all("negative review" in a for a in asked)
    if name == "paraphrase":  # the whole text, and its length in words (the adaptive length)
        assert asked[1].endswith("in about 5 words:\nRude staff at the desk.")
    if name == "few_shot":  # the varied text first, then other distinct selected ones
        shown = [[line[2:] for line in a.splitlines() if line.startswith("- ")] for a in asked]
        assert [lines[0] for lines in shown] == selected["text"].tolist()
        for lines in shown:
            assert len(lines) == 3 and len(set(lines)) == 3
            assert set(lines) <= set(selected["text"])
        assert "in about 2 words" in asked[0]


def test_a_bundled_prompt_file_by_name_and_the_temperature_reach_a_local_model(tmp_path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"")  # never loaded: building the API reads nothing
    backend = TextBackend("local", model=str(model), prompts="paraphrase", temperature=0.5)
    backend.check()
    api = backend.build().for_label("negative")
    assert api.client.temperature == 0.5 and api.prompts == load_prompts("paraphrase")
    described = backend.describe()
    assert described["prompts"] == "safeshare/synth/pe/prompts/paraphrase.txt"
    assert described["temperature"] == 0.5
    with pytest.raises(InputError, match="--prompts paraphrases: no such file"):
        TextBackend("local", model=str(model), prompts="paraphrases").check()


@pytest.mark.parametrize("served", ["served", "ignored", "refused"])
def test_a_text_asked_several_times_goes_in_requests_of_several_replies(server, served) -> None:
    server.state["n"] = served  # type: ignore[attr-defined]
    chat = client(server, choices=4, concurrency=1)
    positive = [{"role": "user", "content": "Write one short positive review."}]
    negative = [{"role": "user", "content": "Write one short negative review."}]
    replies = chat.chat_many([positive] * 6 + [negative], seed=10)
    bodies = server.state["bodies"]  # type: ignore[attr-defined]
    assert replies[6] == "a negative text"
    if served == "served":  # 4 + 2 replies of one prompt, 1 of the other: 3 requests
        assert [(b.get("n", 1), b["seed"]) for b in bodies] == [(4, 10), (2, 14), (1, 16)]
        told_apart = ["a positive text"] + [f"a positive text {k}" for k in (1, 2, 3)]
        assert replies[:6] == told_apart + told_apart[:2]
        assert chat.usage.requests == 3 and chat.choices == 4
    else:  # the rest asked one at a time, and so from then on
        assert replies[:6] == ["a positive text"] * 6
        several = [b["n"] for b in bodies if b.get("n", 1) > 1]
        assert several == [4, 2] and chat.choices == 1  # (both asked before any answer)
        assert bodies[-1].get("n", 1) == 1


class WordCounts:
    """A small public embedder: each text's counts of a few words."""

    words = ("a", "positive", "text", "nice", "the", "food")

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        texts = samples["text"].astype(str).str.lower().str.split()
        return np.array([[t.count(w) for w in self.words] for t in texts], dtype=float) + 0.1


def test_a_resumed_step_reads_back_the_replies_paid_for_before_the_server_failed(
    server, tmp_path
) -> None:
    from safeshare.synth.pe.evolution import PrivateEvolution

    private = pd.DataFrame({"text": ["the food was nice", "a nice text", "positive food"] * 40})
    api = LLMTextAPI(client(server, retries=0, concurrency=2, choices=1), label="positive")

    def fit() -> PrivateEvolution:  # secure randomness (no rng), with a checkpoint
        model = PrivateEvolution(
            api, WordCounts(), epsilon=50.0, delta=1e-5, iterations=2,
            samples_per_iteration=8, checkpoint=tmp_path / "run",
        )  # fmt: skip
        return model.fit(private)

    server.state["down_after"] = 14  # type: ignore[attr-defined]  # the first 8, then 6 of 8
    with pytest.raises(ModelAPIError, match="HTTP 500"):
        fit()
    bodies = server.state["bodies"]  # type: ignore[attr-defined]
    failed = {json.dumps(b["messages"]) for b in bodies[-2:]}  # (concurrency 2: the last two)
    asked = len(bodies)
    server.state["down_after"] = None  # type: ignore[attr-defined]
    fit()
    again = [json.dumps(b["messages"]) for b in bodies[asked:]]
    assert len(again) == 2 and set(again) == failed  # the 6 answered ones were read back
    assert api.client.reused == 6
    assert (tmp_path / "run" / "seeds.json").is_file()


def test_a_reply_cut_at_the_token_limit_keeps_its_whole_sentences(server) -> None:
    server.state["cut"] = True  # type: ignore[attr-defined]
    api = LLMTextAPI(client(server), label="negative")
    assert api.random(2, np.random.default_rng(0))["text"].tolist() == ["The room was dark."] * 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("{masked}", "the text"),
            r"\[vary.user\] must contain \{masked\}, \{text\} or \{examples\}",
        ),
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
        ('You could rephrase it to: "The soup was cold."', "The soup was cold."),
        ('I would say: "Great staff, slow kitchen."', "Great staff, slow kitchen."),
        ('My verdict: "meh" at best.', 'My verdict: "meh" at best.'),  # a text, kept whole
        ("Here is the best pizza in town.", "Here is the best pizza in town."),
        ("I can't recommend it enough.", "I can't recommend it enough."),
        ("I will never come back.", "I will never come back."),
        ("The instructions were confusing.", "The instructions were confusing."),
    ],
)
def test_meta_replies_and_refusals_are_told_from_texts(reply: str, kept: str) -> None:
    from safeshare.synth.pe.prompting import clean_reply

    asked = 'Fill each blank "_" in this negative review with one or more words:\nthe _ was _'
    assert clean_reply(reply, asked) == kept
