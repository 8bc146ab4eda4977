"""Writing a release: everything or nothing.

Files are written into a temporary directory beside the target and renamed into place
only when all of them are complete, so a failed run leaves no half-written release.

>>> import tempfile, pathlib, pandas as pd
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> write_release(out, {"data.csv": pd.DataFrame({"a": [1]}), "note.txt": "hi"}, force=False)
>>> sorted(p.name for p in out.iterdir())
['data.csv', 'note.txt']
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from safeshare.data.table import Table
from safeshare.errors import OutputExistsError
from safeshare.report.card import write_card

if TYPE_CHECKING:
    from safeshare.synth.base import Synthesizer

CHUNK_ROWS = 1_000_000  # released records sampled, decoded and written at a time


def check_output(out: Path, force: bool) -> None:
    """Refuse an existing output directory before any work (and any budget) is spent."""
    if out.exists() and not force:
        raise OutputExistsError(
            f"output directory {str(out)!r} exists; choose another or pass --force"
        )


def write_release(
    out: Path, files: Mapping[str, pd.DataFrame | dict[str, Any] | str | Path], force: bool
) -> None:
    """Write ``files`` atomically: CSV for frames, the privacy card for dicts, a finished
    file moved in for paths, text otherwise."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.move(content, staging / name)
            elif isinstance(content, pd.DataFrame):
                content.to_csv(staging / name, index=False)
            elif isinstance(content, dict):
                write_card(content, staging / name)
            else:
                (staging / name).write_text(content, encoding="utf-8")
        if out.exists():
            if not force:
                raise OutputExistsError(f"output directory {str(out)!r} appeared during the run")
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        staging.chmod(0o755)  # mkdtemp makes it private to the user; give it the usual mode
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@dataclass(frozen=True)
class SampledRelease:
    """The released records: the first chunk in memory, and what ``synthetic.csv`` will hold."""

    first: Table
    first_frame: pd.DataFrame
    content: pd.DataFrame | Path

    def discard(self) -> None:
        """Remove a streamed file that was not moved into a release (a failed run)."""
        if isinstance(self.content, Path):
            self.content.unlink(missing_ok=True)


def sample_release(
    synthesizer: Synthesizer, rows: int, rng: np.random.Generator, workdir: Path
) -> SampledRelease:
    """Sample and decode ``rows`` records; beyond :data:`CHUNK_ROWS` they stream to a file.

    Each chunk is an independent draw from the fitted model, so a release of any size
    needs memory for one chunk only.
    """
    if rows <= CHUNK_ROWS:
        table = synthesizer.sample(rows)
        frame = table.decode(rng)
        return SampledRelease(table, frame, frame)
    workdir.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".synthetic-", suffix=".csv", dir=workdir)
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            first = synthesizer.sample(CHUNK_ROWS)
            first_frame = first.decode(rng)
            first_frame.to_csv(stream, index=False)
            for start in range(CHUNK_ROWS, rows, CHUNK_ROWS):
                chunk = synthesizer.sample(min(CHUNK_ROWS, rows - start))
                chunk.decode(rng).to_csv(stream, header=False, index=False)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return SampledRelease(first, first_frame, path)
