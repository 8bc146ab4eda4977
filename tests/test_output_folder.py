"""Output folders: no command loses a file it did not write, even with --force."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeshare.cli import main
from safeshare.dp.ledger import Ledger
from safeshare.errors import InputError, OutputExistsError
from safeshare.output_folder import MARKER, check_output, remove_stale, staged_output


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> content)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture
def workdir(tmp_path: Path, fair_csv: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder: the data, a notes file and a subfolder; the current directory."""
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "data.csv").write_bytes(fair_csv.read_bytes())
    (work / "notes.txt").write_text("keep me")
    (work / "sub" / "other.csv").write_text("a\n1\n")
    monkeypatch.chdir(work)
    return work


def _ledger_spends(path: Path) -> int:
    return sum(s.releases for s in Ledger(path).datasets()) if path.exists() else 0


@pytest.mark.parametrize(
    "argv",
    [
        ["release", "data.csv", "--epsilon", "1", "--ledger", "{ledger}"],
        ["anonymize", "data.csv", "--config", "anon.yaml"],
        ["train", "data.csv", "--target", "affairs", "--epsilon", "1", "--ledger", "{ledger}"],
        ["evaluate", "--train", "data.csv", "--holdout", "data.csv", "--release", "data.csv"],
        ["obfuscate", "train", "--data", "data.csv"],
    ],
    ids=["release", "anonymize", "train", "evaluate", "obfuscate-train"],
)
@pytest.mark.parametrize("out", [".", "{work}", "{work}/..", "sub/.."])
def test_out_around_the_input_is_refused_with_force(argv, out, workdir, capsys, tmp_path):
    (workdir / "anon.yaml").write_text(
        "quasi_identifiers:\n  age: {hierarchy: auto}\nprivacy:\n  k: 2\n"
    )
    before = _tree(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    argv = [a.format(ledger=ledger) for a in argv]
    code = main([*argv, "--out", out.format(work=workdir), "--force"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error:") and "Traceback" not in err
    assert "current folder" in err or "holds the input" in err
    assert _tree(tmp_path) == before and _ledger_spends(ledger) == 0


def test_a_folder_safeshare_did_not_write_is_never_replaced(workdir, capsys, tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff\xd8")
    code = main(["release", "data.csv", "--out", str(foreign), "--force", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "did not write" in err and "Traceback" not in err
    assert _tree(foreign) == {"cat.jpg": b"\xff\xd8"}


def test_an_earlier_output_is_replaced_with_force(tmp_path):
    out = tmp_path / "release"
    with staged_output(out, force=False) as staging:
        (staging / "old.txt").write_text("from an earlier run")
    with pytest.raises(OutputExistsError, match="pass --force"):
        check_output(out, force=False, inputs=())
    with staged_output(out, force=True) as staging:
        (staging / "new.txt").write_text("this run")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]  # nothing left beside it


@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_an_unwritable_out_fails_before_the_spend(kind, workdir, capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" if kind == "file" else tmp_path / "afile" / "sub"
    ledger = tmp_path / "ledger.sqlite"
    code = main(["release", "data.csv", "--out", str(out), "--force", "--ledger", str(ledger)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "Traceback" not in err
    assert (tmp_path / "afile").read_text() == "x" and _ledger_spends(ledger) == 0


def test_a_failed_write_leaves_the_earlier_output_and_no_staging(tmp_path):
    out = tmp_path / "out"
    with staged_output(out, force=False) as staging:
        (staging / "a.txt").write_text("first")
    with pytest.raises(RuntimeError), staged_output(out, force=True) as staging:
        (staging / "a.txt").write_text("second")
        raise RuntimeError("the run failed")
    assert (out / "a.txt").read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_ledger_inside_the_output_is_an_input(tmp_path):
    out = tmp_path / "out"
    with staged_output(out, force=False) as staging:
        (staging / "ledger.sqlite").write_text("")
    with pytest.raises(OutputExistsError, match="holds the input"):
        check_output(out, force=True, inputs=[out / "ledger.sqlite", None, object()])


def test_not_enough_free_space_is_refused(tmp_path):
    with pytest.raises(InputError, match="MiB free"):
        check_output(tmp_path / "out", force=False, inputs=(), min_free_bytes=2**62)


def test_stale_staging_folders_are_removed_live_ones_kept(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(done.stdout)  # a process that has exited
    stale = tmp_path / f".out.staging-{dead}-abc"
    replaced = tmp_path / f".out.replaced-{dead}-abc"
    live = tmp_path / f".out.staging-{os.getpid()}-def"
    other = tmp_path / f".output.staging-{dead}-ghi"  # another target's
    for folder in (stale, replaced, live, other):
        folder.mkdir()
        (folder / "x").write_text("x")
    remove_stale(tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
