"""``safeshare pac`` end to end: output, card and report written atomically; one-line errors."""

import json
from pathlib import Path

import pytest
import typer

from safeshare import cli
from safeshare.cli.pac import pac_command
from safeshare.report.card import REQUIRED_FIELDS

FUNCTIONS = """
import numpy as np

def summary(frame):
    return {"age": frame["age"].mean(), "affairs": frame["affairs"].mean(),
            "share_very_happy": (frame["rate_marriage"] == 5).mean()}

def jittery(frame):
    return frame["age"].mean() + np.random.default_rng().normal()

def population(generator):
    import pandas as pd
    return pd.DataFrame({"age": generator.normal(29, 7, 500), "affairs": generator.exponential(0.7, 500),
                         "rate_marriage": generator.integers(1, 6, 500)})
"""


@pytest.fixture
def pac_main(monkeypatch):
    """The CLI's entry point with ``pac`` registered as the project will register it."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("pac")(pac_command)

    @app.callback()
    def _root() -> None:
        """safeshare."""

    monkeypatch.setattr(cli, "app", app)
    return cli.main


@pytest.fixture
def workdir(tmp_path, fair_csv, monkeypatch):
    (tmp_path / "stats.py").write_text(FUNCTIONS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path, fair_csv


def test_release_writes_output_card_and_report(pac_main, workdir, capsys):
    tmp, data = workdir
    argv = ["pac", "--data", str(data), "--function", "stats:summary", "--mi", "0.0625",
            "--out", "pac", "--samples", "256", "--attack", "--seed", "1"]  # fmt: skip
    assert pac_main(argv) == 0
    out = tmp / "pac"
    assert sorted(p.name for p in out.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "output.json",
        "report.html",
    ]
    output = json.loads((out / "output.json").read_text())
    assert set(output) == {"age", "affairs", "share_very_happy"}
    assert 20 < output["age"] < 40
    card = json.loads((out / "card.json").read_text())
    assert card.keys() >= REQUIRED_FIELDS
    assert card["method"] == "pac" and card["epsilon"] is None and card["secure_noise"] is False
    assert round(card["pac"]["bound"]["posterior_success"], 3) == 0.675
    assert card["dp_equivalent_epsilon"] == pytest.approx(0.7305, abs=1e-4)
    assert "not the worst case" in card["guarantee"] and card["output"] == output
    attack = card["metrics"]["membership_attack"]
    assert attack["under_bound"] and attack["bound"] == pytest.approx(0.6749, abs=1e-4)
    html = (out / "report.html").read_text()
    assert "<script" not in html and 'src="http' not in html and "<svg" in html
    assert "not</strong> a worst-case guarantee" in html
    printed = capsys.readouterr().out
    assert "posterior success" in printed and "67.49%" in printed


def test_function_from_a_file_and_a_user_sampler(pac_main, workdir):
    tmp, data = workdir
    argv = ["pac", "--data", str(data), "--function", f"{tmp / 'stats.py'}:summary", "--mi", "0.5",
            "--sampler", "stats:population", "--out", "pac", "--samples", "128", "--quiet"]  # fmt: skip
    assert pac_main(argv) == 0
    card = json.loads((tmp / "pac" / "card.json").read_text())
    assert card["pac"]["secret"] == "user sampler" and card["secure_noise"] is True


@pytest.mark.parametrize(
    ("function", "extra", "message"),
    [
        ("stats:summary", ["--mi", "1e-7"], "swamp the output"),
        ("stats:jittery", ["--mi", "0.1"], "not deterministic"),
        ("stats", ["--mi", "0.1"], "must look like 'module:function'"),
        ("nosuchmodule:f", ["--mi", "0.1"], "cannot import 'nosuchmodule'"),
        ("stats:nothing", ["--mi", "0.1"], "has no function 'nothing'"),
        ("stats:summary", ["--mi", "-1"], "positive number of nats"),
        ("stats:summary", ["--mi", "0.1", "--samples", "10"], "at least 64 black-box runs"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    pac_main, workdir, capsys, function, extra, message
):
    tmp, data = workdir
    argv = ["pac", "--data", str(data), "--function", function, "--out", "pac", "--quiet", *extra]
    assert pac_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "Traceback" not in err
    assert not (tmp / "pac").exists()
    assert not [p for p in Path(tmp).iterdir() if p.name.startswith(".pac")]


def test_existing_output_is_refused_before_any_run(pac_main, workdir, capsys):
    tmp, data = workdir
    (tmp / "pac").mkdir()
    argv = [
        "pac",
        "--data",
        str(data),
        "--function",
        "stats:summary",
        "--mi",
        "0.1",
        "--out",
        "pac",
    ]
    assert pac_main(argv) == 2
    assert "exists" in capsys.readouterr().err
