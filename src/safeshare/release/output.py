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

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.errors import OutputExistsError
from safeshare.report.card import write_card


def check_output(out: Path, force: bool) -> None:
    """Refuse an existing output directory before any work (and any budget) is spent."""
    if out.exists() and not force:
        raise OutputExistsError(
            f"output directory {str(out)!r} exists; choose another or pass --force"
        )


def write_release(
    out: Path, files: Mapping[str, pd.DataFrame | dict[str, Any] | str], force: bool
) -> None:
    """Write ``files`` (CSV for frames, the privacy card for dicts, text otherwise) atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, content in files.items():
            if isinstance(content, pd.DataFrame):
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
