"""The command line, through its entry point and once as a real process."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from safeshare.cli import main


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_release_then_refusal_then_set_total(tmp_path, fair_csv, capsys):
    schema = Path(__file__).resolve().parents[1] / "src/safeshare/data/schemas/fair.yaml"
    ledger = tmp_path / "ledger.sqlite"
    argv = [
        "release",
        str(fair_csv),
        "--schema",
        str(schema),
        "--out",
        str(tmp_path / "r1"),
        "--seed",
        "1",
        "--ledger",
        str(ledger),
        "--quiet",
    ]
    assert run(argv, capsys)[0] == 0
    assert json.loads((tmp_path / "r1" / "card.json").read_text())["method"] == "mst"

    code, _, err = run([*argv[:5], str(tmp_path / "r2"), *argv[6:]], capsys)
    assert code == 2
    assert err.startswith("error:") and "has spent epsilon=1" in err and "Traceback" not in err
    assert not (tmp_path / "r2").exists()

    code, out, _ = run(
        ["ledger", "set-total", str(fair_csv), "--epsilon", "2", "--ledger", str(ledger)], capsys
    )
    assert code == 0 and "epsilon=2" in out
    code, out, _ = run(["ledger", "list", "--ledger", str(ledger)], capsys)
    assert code == 0 and "fair.csv" in out and "1 / 2" in out
    assert run([*argv[:5], str(tmp_path / "r2"), *argv[6:]], capsys)[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["release", "missing.csv", "--out", "o"], "does not exist"),
        (["release", "{csv}", "--out", "o", "--epsilon", "0"], "epsilon must be a positive number"),
        (
            ["release", "{csv}", "--out", "o", "--delta", "2"],
            "delta must lie strictly between 0 and 1",
        ),
        (
            ["release", "{csv}", "--out", "o", "--schema", "none.yaml"],
            "schema file 'none.yaml' does not exist",
        ),
        (["release", "{csv}", "--out", "{existing}"], "exists; choose another or pass --force"),
        (["demo", "--dataset", "iris", "--out", "o"], "unknown example 'iris'"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(
    tmp_path, fair_csv, capsys, monkeypatch, args, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing").mkdir()
    argv = [a.format(csv=fair_csv, existing=tmp_path / "existing") for a in args]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert message in " ".join(err.split())
    assert err.count("\n") <= 2 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_demo_writes_a_release(tmp_path, capsys):
    code, out, _ = run(["demo", "--out", str(tmp_path / "demo"), "--seed", "3"], capsys)
    assert code == 0
    assert "guarantee" in out and "seeded: not secure" in out
    # the release's figure beside the baseline it must beat, which the card holds too
    card = json.loads((tmp_path / "demo" / "card.json").read_text())
    shuffled = card["metrics"]["utility"]["tvd_independent_columns_baseline"]["3way"]["mean"]
    assert f"each column shuffled on its own: {shuffled:.3f}" in " ".join(out.split())
    assert {p.name for p in (tmp_path / "demo").iterdir()} == {
        ".safeshare-output",
        "card.json",
        "report.html",
        "synthetic.csv",
    }


def test_usage_errors_and_version(capsys):
    assert run(["--version"], capsys)[1].strip() == "0.1.0"
    code, _, err = run(["release", "--epsilon", "1"], capsys)
    assert code == 2 and "Missing argument" in err


def test_a_real_process(tmp_path, fair_csv):
    env = {**os.environ, "SAFESHARE_LEDGER": str(tmp_path / "ledger.sqlite")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "safeshare",
            "release",
            str(fair_csv),
            "--out",
            str(tmp_path / "out"),
            "--epsilon",
            "2",
            "--seed",
            "5",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    card = json.loads((tmp_path / "out" / "card.json").read_text())
    assert card["domain_source"] == "private data, DP"
    failed = subprocess.run(
        [
            sys.executable,
            "-m",
            "safeshare",
            "release",
            str(tmp_path / "nope.csv"),
            "--out",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert failed.returncode == 2 and failed.stderr.startswith("error:")


def test_typer_runner(tmp_path, fair_csv):
    from typer.testing import CliRunner

    from safeshare.cli import app

    runner = CliRunner()
    shown = runner.invoke(app, ["release", "--help"])
    assert shown.exit_code == 0 and "--epsilon" in shown.output and "--unsafe-infer" in shown.output
    done = runner.invoke(
        app, ["release", str(fair_csv), "--out", str(tmp_path / "o"), "--seed", "1", "--quiet"]
    )
    assert done.exit_code == 0, done.output
    assert (tmp_path / "o" / "card.json").exists()


PROGRESS_LINE = re.compile(r"progress: +([0-9.]+) s +([0-9]+)%  (.+)")


def test_progress_lines_name_each_step_and_attack_for_logs(tmp_path, capsys):
    """Piped output shows no bar; ``--progress lines`` prints a plain line per step (each attack
    named as it starts), ``none`` and the default print none, an unknown mode is one error."""
    rows = "".join(f"{'ab'[i % 2]},{i % 5},{'xyz'[i % 3]}\n" for i in range(120))
    table = tmp_path / "t.csv"
    table.write_text("kind,level,colour\n" + rows)
    evaluate = ["evaluate", "--train", str(table), "--holdout", str(table), "--release",
                str(table), "--attacks", "20", "--no-ml", "--seed", "1", "--force"]  # fmt: skip
    code, _, err = run(["--progress", "lines", *evaluate, "--out", str(tmp_path / "a")], capsys)
    assert code == 0, err
    lines = [PROGRESS_LINE.fullmatch(line) for line in err.splitlines() if "progress" in line]
    assert lines and all(lines), err
    steps = [m.group(3) for m in lines if m is not None]
    assert steps[0] == "reading" and steps[-1] == "done"
    assert steps.index("singling out (1 column)") < steps.index("linkability")
    assert steps.index("linkability") < steps.index("membership inference")
    percents = [int(m.group(2)) for m in lines if m is not None]
    assert percents == sorted(percents) and percents[-1] == 100
    for mode in ("none", "auto"):
        code, _, err = run(["--progress", mode, *evaluate, "--out", str(tmp_path / mode)], capsys)
        assert code == 0 and "progress:" not in err
    code, _, err = run(["--progress", "bars", *evaluate, "--out", str(tmp_path / "b")], capsys)
    assert code == 2 and err.strip().splitlines() == [
        "error: --progress 'bars' is unknown; use one of ['auto', 'lines', 'none']"
    ]
    assert not (tmp_path / "b").exists()


def test_an_interrupt_says_so_in_one_line(tmp_path, fair_csv, capsys, monkeypatch):
    # typer turns a KeyboardInterrupt into its own exit (130): the line must still come
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("safeshare.cli.show_progress", interrupted)
    code = main(["risk", str(fair_csv), "--quasi-identifiers", "age", "--out", str(tmp_path / "r")])
    assert code == 130
    assert capsys.readouterr().err.strip() == "error: interrupted; nothing was written"
    assert not (tmp_path / "r").exists()
