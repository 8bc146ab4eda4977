"""The evaluation report renders in headless Chromium: no console errors, a non-trivial screenshot."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from safeshare.evaluate.assessment import EvaluationOptions
from safeshare.release.evaluation import EvaluationFiles, evaluate_files

CHROMIUM = next(
    (
        p
        for p in (
            "/usr/bin/chromium",
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p and Path(p).exists()
    ),
    None,
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Chromium (Debian: apt-get install chromium); absent here"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, fair) -> Path:
    frame, schema = fair
    folder = tmp_path_factory.mktemp("report")
    order = np.random.default_rng(0).permutation(len(frame))
    for name, rows in (
        ("train", order[:3000]),
        ("holdout", order[3000:6000]),
        ("release", order[:2000]),
    ):
        frame.iloc[rows].to_csv(folder / f"{name}.csv", index=False)
    files = EvaluationFiles(
        train=folder / "train.csv",
        holdout=folder / "holdout.csv",
        release=folder / "release.csv",
        schema=schema,
    )
    evaluate_files(files, out=folder / "eval", options=EvaluationOptions(attacks=150), seed=0)
    return folder / "eval" / "report.html"


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_report_holds_no_record_and_loads_nothing(report):
    html = report.read_text()
    assert "<script" not in html
    assert 'src="http' not in html and 'href="http' not in html
    evaluation = json.loads((report.parent / "evaluation.json").read_text())
    worst = evaluation["headline"]["risk"]["worst_attack"]
    assert "Threat models" in html
    assert (f"Strongest: {worst}" if worst else "No attack does better") in html


@needs_chromium
def test_the_report_renders_in_chromium(report, tmp_path):
    shot = tmp_path / "shot.png"
    run = chromium(
        [
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2400",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        tmp_path / "profile",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    from PIL import Image

    image = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert image.shape[0] >= 2000 and image.shape[1] >= 1000
    assert (image < 200).mean() > 0.02  # text and charts, not a blank page
    assert image.std() > 20
    dom = chromium(["--dump-dom", report.as_uri()], tmp_path / "profile2")
    assert "Evaluation of release.csv" in dom.stdout and dom.stdout.count("<svg") >= 4
