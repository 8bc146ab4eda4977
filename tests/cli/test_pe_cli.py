"""``safeshare synthesize --method pe``: tables, text, refusals, and resuming after a server fails."""

from __future__ import annotations

import csv
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.dp.ledger import Ledger
from safeshare.report.card import HEADER_FIELDS
from safeshare.synth.pe.evolution import REDRAW_ROUNDS
from tests.conftest import SHARED, needs_shared

FAIR_SCHEMA = Path(__file__).resolve().parents[2] / "src/safeshare/data/schemas/fair.yaml"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tabular_pe_from_the_command_line(tmp_path: Path, fair_csv: Path, capsys) -> None:
    argv = ["synthesize", fair_csv, "--schema", FAIR_SCHEMA, "--method", "pe", "--epsilon", "1"]
    argv += ["--iterations", "2", "--samples", "150", "--seed", "0", "--out", tmp_path / "out"]
    argv += ["--holdout-fraction", "0", "--lookahead", "1", "--neighbour-search", "numpy"]
    argv += ["--selection", "rank", "--offspring", "3"]
    code, out, err = run([*argv, "--ledger", tmp_path / "ledger.sqlite"], capsys)
    assert code == 0, err
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert card["method"] == "pe" and card["model"]["iterations"] == 2
    assert card["model"]["lookahead"] == 1 and card["model"]["neighbour_search"] == "numpy"
    assert card["model"]["selection"] == "rank" and card["model"]["offspring"] == 3
    assert "TVD" in out and "far below AIM" in " ".join(err.split())
    assert "far below AIM" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--neighbour-search", "faiss"], "pip install 'safeshare[faiss]'"),
        (["--neighbour-search", "fast"], "must be one of ['auto', 'numpy', 'faiss']"),
        (
            ["--text-column", "text", "--neighbour-search", "faiss"],
            "pip install 'safeshare[faiss]'",
        ),
    ],
)
def test_a_missing_faiss_is_refused_before_any_spend(
    tmp_path: Path, fair_csv: Path, capsys, monkeypatch, extra: list[str], message: str
) -> None:
    monkeypatch.setattr("safeshare.synth.pe.neighbors.faiss_available", lambda: False)
    text = tmp_path / "reviews.csv"
    pd.DataFrame({"text": ["good food", "bad service"] * 20}).to_csv(text, index=False)
    data = text if "--text-column" in extra else fair_csv
    ledger = tmp_path / "ledger.sqlite"
    argv = ["synthesize", data, "--method", "pe", "--out", tmp_path / "o", "--ledger", ledger]
    if data == fair_csv:
        argv += ["--schema", FAIR_SCHEMA]
    code, _, err = run([*argv, *extra], capsys)
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err
    assert not (tmp_path / "o").exists() and not Ledger(ledger).datasets()


SERVED = ["--method", "pe", "--text-column", "t", "--api", "openai-compatible"]
SERVED += ["--base-url", "http://127.0.0.1:1/v1", "--model", "tiny"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--iterations", "3"], "apply to --method pe only"),
        (["--selection", "rank"], "apply to --method pe only"),
        (["--method", "pe", "--selection", "rank", "--offspring", "1"], "at least 2"),
        (["--method", "pe", "--offspring", "2"], "needs rank selection"),
        (["--text-column", "text"], "--text-column needs --method pe"),
        (["--method", "pe", "--text-column", "t", "--api", "openai-compatible"], "--base-url"),
        (["--method", "pe", "--text-column", "t", "--api", "local"], "--model PATH"),
        ([*SERVED, "--temperature", "3"], "--temperature 3.0: give a value from 0 to 2"),
        ([*SERVED, "--rate", "0"], "--rate 0.0: give requests a second, more than 0"),
        ([*SERVED, "--token-prices", "0.15"], "--token-prices '0.15': give two numbers"),
    ],
)
def test_refusals_are_one_line_and_cost_nothing(
    tmp_path: Path, fair_csv: Path, capsys, extra: list[str], message: str
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    argv = ["synthesize", fair_csv, "--out", tmp_path / "o", "--ledger", ledger, *extra]
    code, _, err = run(argv, capsys)
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err
    assert not (tmp_path / "o").exists() and not Ledger(ledger).datasets()


class Reviews(BaseHTTPRequestHandler):
    """A deterministic OpenAI-compatible server: it echoes the prompt's keywords, fills blanks
    with "nice", and after ``budget`` replies answers HTTP 400 (a model that went away)."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        state = self.server.state  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with state["lock"]:
            state["requests"] += 1
            broken = state["requests"] > state["budget"]
        if broken:
            return self._send(400, {"error": "the model is not loaded"})
        user = body["messages"][-1]["content"]
        if "Fill each blank" in user:
            text = user.splitlines()[-1].replace("_", "nice")
        else:
            with state["lock"]:
                state["random"] += 1
            label = user.split()[3]
            topics = user.rsplit(":", 1)[-1].strip().rstrip(".")
            text = f"The {topics} were {'great' if label == 'positive' else 'awful'}."
        usage = {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split())}
        with state["lock"]:  # what the server bills (words stand for tokens)
            state["billed"] = [a + b for a, b in zip(state["billed"], usage.values(), strict=True)]
            state["temperatures"].add(body["temperature"])
        message = {"role": "assistant", "content": text}
        self._send(200, {"choices": [{"message": message}], "usage": usage})

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Reviews)
    httpd.state = {  # type: ignore[attr-defined]
        **{"requests": 0, "random": 0, "budget": 10**9, "lock": threading.Lock()},
        **{"billed": [0, 0], "temperatures": set()},
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@needs_shared
def test_a_failing_server_stops_with_the_resume_command_and_loses_nothing(
    tmp_path: Path, server: ThreadingHTTPServer, capsys
) -> None:
    assert SHARED is not None
    frame = pd.read_csv(
        SHARED / "text" / "uci_sentiment_yelp_labelled.tsv",
        sep="\t",
        header=None,
        names=["text", "label"],
        quoting=csv.QUOTE_NONE,
    ).head(200)
    data = tmp_path / "reviews.csv"
    frame.to_csv(data, index=False)
    ledger, folder = tmp_path / "ledger.sqlite", tmp_path / "run"
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    argv = ["synthesize", data, "--method", "pe", "--text-column", "text", "--label-column"]
    argv += ["label", "--label-names", "0=negative,1=positive", "--api", "openai-compatible"]
    argv += ["--base-url", url, "--model", "tiny", "--epsilon", "4", "--delta", "1e-5"]
    argv += ["--iterations", "2", "--samples", "10", "--seed", "0", "--holdout-fraction", "0"]
    argv += ["--temperature", "0.7", "--rate", "1000", "--token-prices", "0.15,0.60"]
    argv += ["--checkpoint", folder, "--ledger", ledger, "--out", tmp_path / "out"]
    # 10 samples per label and step: label 0 needs 20 replies, label 1's first 10 + 5 of its next
    server.state["budget"] = 35  # type: ignore[attr-defined]
    code, _, err = run(argv, capsys)
    message = " ".join(err.split())
    assert code == 2 and "HTTP 400" in message and "Traceback" not in err
    assert "resume without spending the budget again: safeshare synthesize" in message
    assert f"--checkpoint {folder}" in message and not (tmp_path / "out").exists()
    assert "--temperature 0.7" in message
    assert "--replies-per-request 8 --rate 1000.0 --token-prices 0.15,0.60" in message

    # a copy of the folder that lost its populations but kept its receipt is refused: it
    # would measure the lost histograms again without a charge
    receipt = json.loads((folder / "spend.json").read_text())
    assert receipt["saved"]["measured_histograms"] >= 1
    lost = tmp_path / "lost"
    lost.mkdir()
    shutil.copy(folder / "spend.json", lost / "spend.json")
    server.state.update(requests=0, random=0, budget=10**9, billed=[0, 0])  # type: ignore[attr-defined]
    code, _, err = run([*argv[:-6], "--checkpoint", lost, *argv[-4:]], capsys)
    assert code == 2 and "measured histogram" in " ".join(err.split()), err
    assert server.state["requests"] == 0  # type: ignore[attr-defined]

    code, _, err = run(argv, capsys)
    assert code == 0, err
    # no first population asked again: label 1's 10 variations, then sample()'s redraws of
    # repeated texts, at most one call per written text and round
    written = len(pd.read_csv(tmp_path / "out" / "synthetic.csv"))
    assert server.state["random"] == 0  # type: ignore[attr-defined]
    assert 10 <= server.state["requests"] <= 10 + REDRAW_ROUNDS * written  # type: ignore[attr-defined]
    status = Ledger(ledger).find("reviews.csv")
    assert status.releases == 1 and status.spent_epsilon == 4.0
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert card.keys() >= set(HEADER_FIELDS) and (card["method"], card["data"]) == ("pe", "text")
    assert card["model"]["api"]["base_url"] == url and card["model"]["api"]["model"] == "tiny"
    # the run's requests and the tokens the server billed, priced per million tokens
    usage, (prompt, completion) = card["model"]["api"]["usage"], server.state["billed"]  # type: ignore[attr-defined]
    assert usage["requests"] == server.state["requests"]  # type: ignore[attr-defined]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (prompt, completion) > (0, 0)
    assert usage["cost"] == pytest.approx((0.15 * prompt + 0.60 * completion) / 1e6, abs=1e-6)
    assert server.state["temperatures"] == {0.7}  # type: ignore[attr-defined]
    assert any("resumed from the checkpoint" in n for n in card["notes"])
    # iteration 0, drawn by the first attempt, is read back from the folder to stand beside
    first = card["metrics"]["beside_iteration_0"]["iteration_0"]
    assert first["distinct_share"] > 0 and first["embedding"]["reference"] == "train"
    assert set(pd.read_csv(tmp_path / "out" / "synthetic.csv")["label"]) <= {0, 1}
