"""A failure of the machine injected at every step of every paid job, after its spend.

Each job is run once with a profiler that records its steps: every function the job's own
frame (the one holding the paid block) calls after the ledger's spend.  Then the job is run again once
per step, with ``MemoryError`` or a full disk (``OSError``, ENOSPC) raised as that step is
entered.  Whatever the step, the run ends in one ``error:`` line saying it was not charged
(exit 2), the ledger holds no spend, nothing is at ``--out`` and no staging folder is left:
or, where the job itself handles the failure, it ends well and its output is whole.
A step the pipelines share is injected once, in the first job that reaches it.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pandas as pd
import pytest

import safeshare
from safeshare.cli import main
from safeshare.dp.ledger import Ledger
from safeshare.release import job as job_module
from safeshare.release import resume
from tests.conftest import SHARED, needs_shared

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

PACKAGE = str(Path(safeshare.__file__).parent)
RELEASE = str(Path(PACKAGE) / "release")
SPEND = resume.spend_once
PAID = job_module.paid.__wrapped__.__code__  # the paid block's generator: it ends with the block

# each job: its name, its arguments after the data, and which data (fixture) it reads
JOBS: dict[str, tuple[str, list[str]]] = {
    "release mst": ("fair", ["release", "{data}", "--epsilon", "1"]),
    "release aim": ("fair", ["release", "{data}", "--method", "aim", "--workload", "2way"]),
    "release pe": ("fair", ["release", "{data}", "--method", "pe", "--iterations", "2",
                            "--samples", "200", "--epsilon", "2"]),
    "train tabular": ("fair", ["train", "{data}", "--target", "religious", "--epsilon", "2",
                               "--epochs", "1", "--batch-size", "100"]),
    "train text": ("texts", ["train", "{data}", "--target", "label", "--text-column", "text",
                             "--epsilon", "8", "--epochs", "1", "--batch-size", "30",
                             "--max-length", "16"]),
    "train language model": ("texts", ["train", "{data}", "--language-model", "--text-column",
                                       "text", "--epsilon", "8", "--context", "32", "--width",
                                       "16", "--epochs", "1", "--batch-size", "8",
                                       "--accountant", "rdp"]),
}  # fmt: skip


_PLUMBING = (str(Path(RELEASE) / "job.py"), str(Path(RELEASE) / "resume.py"))


def _job_frame(spend: FrameType) -> FrameType | None:
    """The frame of the job's own function: the first release frame above the spend that is
    not the paying plumbing (job.py, resume.py) or a context manager's."""
    frame = spend.f_back
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(RELEASE) and not name.startswith(_PLUMBING):
            return frame
        frame = frame.f_back
    return None


@contextmanager
def _profiled(on_step: Any) -> Iterator[None]:
    """Call ``on_step(code)`` for each step of the job in its paid block, after the spend:
    each function the job's own frame calls (it may raise).  The profiler is installed by
    the spend and removed as the block ends or a step raises: the planning runs at speed."""
    job: FrameType | None = None

    def hook(frame: FrameType, event: str, arg: object) -> None:
        nonlocal job
        if event == "return" and frame.f_code is PAID and arg is None:  # not its yield
            job = None
            sys.setprofile(None)
        elif (
            event == "call"
            and job is not None
            and frame.f_back is job
            and not frame.f_code.co_filename.endswith("contextlib.py")  # the block's own end
        ):
            on_step(frame.f_code)

    def spend_then_profile(*args: Any, **kwargs: Any) -> Any:
        nonlocal job
        spent = SPEND(*args, **kwargs)
        job = _job_frame(sys._getframe())
        sys.setprofile(hook)
        return spent

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(job_module, "spend_once", spend_then_profile)
        try:
            yield
        finally:
            sys.setprofile(None)


def _name(code: CodeType) -> str:
    return f"{Path(code.co_filename).name}:{code.co_qualname}"


def _spends(ledger: Path) -> int:
    return sum(s.releases for s in Ledger(ledger).datasets()) if ledger.exists() else 0


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from safeshare.data.examples import load_example

    folder = tmp_path_factory.mktemp("inject")
    fair = folder / "fair.csv"
    load_example("fair")[0].iloc[:1500].to_csv(fair, index=False)
    files = {"fair": fair}
    if SHARED is not None:
        path = SHARED / "text" / "sms_spam_collection.tsv"
        frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
        files["texts"] = folder / "texts.csv"
        frame.iloc[:60].to_csv(files["texts"], index=False)
    return files


def _run(argv: list[str], folder: Path, on_step: Any) -> tuple[int, Path, Path]:
    out, ledger = folder / "out", folder / "ledger.sqlite"
    with _profiled(on_step):
        code = main([*argv, "--out", str(out), "--ledger", str(ledger), "--seed", "1", "-q"])
    return code, out, ledger


class Injected:
    """Raise ``failure`` the first time ``target`` is entered after the spend."""

    def __init__(self, target: CodeType, failure: BaseException) -> None:
        self.target, self.failure, self.fired = target, failure, False

    def __call__(self, code: CodeType) -> None:
        if code is self.target and not self.fired:
            self.fired = True
            raise self.failure


_SEEN: set[CodeType] = set()


@needs_shared
@pytest.mark.parametrize("job", list(JOBS))
def test_a_failure_at_any_step_after_the_spend_is_refunded_and_writes_nothing(
    job: str, data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, template = JOBS[job]
    argv = [a.format(data=data[source]) for a in template]
    steps: list[CodeType] = []
    code, out, ledger = _run(argv, tmp_path / "record", lambda c: c in steps or steps.append(c))
    assert code == 0, capsys.readouterr().err
    assert _spends(ledger) == 1 and (out / "card.json").exists()
    fresh = [s for s in steps if s not in _SEEN]
    _SEEN.update(steps)
    assert len(steps) >= 3, [_name(s) for s in steps]  # the recorder saw the job's steps
    for i, step in enumerate(fresh):
        failure: BaseException = (
            MemoryError() if i % 2 else OSError(errno.ENOSPC, "No space left on device")
        )
        injected = Injected(step, failure)
        folder = tmp_path / f"step{i}"
        capsys.readouterr()
        code, out, ledger = _run(argv, folder, injected)
        err = capsys.readouterr().err
        where = f"{job}: {type(failure).__name__} at {_name(step)}"
        assert injected.fired, where
        assert "Traceback" not in err, where
        if code == 0:  # the job caught it and went on: then its output is whole
            assert (out / "card.json").exists() and _spends(ledger) == 1, where
            continue
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "not charged" in err, (where, err)
        assert _spends(ledger) == 0, where
        assert not out.exists(), where
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [], where
