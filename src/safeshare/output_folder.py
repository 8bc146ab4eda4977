"""Output folders: refused before any work when writing them could lose a file, written
whole or not at all.

Every command that writes a folder (a release, a model, a transform, an evaluation) goes
through :func:`check_output` before it spends budget and :func:`staged_output` to write.
A folder is replaced (``force``) only when it is empty or was written by safeshare (it holds
:data:`MARKER`), and never when it is the current folder, a folder above it, or a folder
that holds an input of the run. Files are written into a staging folder beside the target
and renamed into place when complete; a staging folder left by a killed run is removed by
the next run that writes beside it.

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> with staged_output(out, force=False, inputs=()) as staging:
...     _ = (staging / "note.txt").write_text("hi")
>>> sorted(p.name for p in out.iterdir())
['.safeshare-output', 'note.txt']
>>> check_output(out.parent, force=True, inputs=())
Traceback (most recent call last):
...
safeshare.errors.OutputExistsError: output folder ... holds files safeshare did not write; ...
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from safeshare.errors import InputError, OutputExistsError

MARKER = ".safeshare-output"
"""The file every output folder holds: what lets ``--force`` replace it."""

MIN_FREE_BYTES = 16 * 2**20
"""Free space an output needs at the least (checked before any budget is spent)."""

_STAGING = "staging"
_REPLACED = "replaced"


def check_output(
    out: str | Path,
    *,
    force: bool,
    inputs: Iterable[object],
    min_free_bytes: int = MIN_FREE_BYTES,
) -> Path:
    """Refuse ``out`` unless a run can write it without losing a file; return it as a Path.

    Called before any work and any spend: it refuses an existing folder without ``force``,
    and even with ``force`` a file, a link, the current folder or one above it, a folder
    holding one of ``inputs`` (paths; other values, such as an in-memory frame, are
    skipped), or a non-empty folder safeshare did not write.  It also
    refuses a location that cannot be written or has less than ``min_free_bytes`` free.
    """
    out = Path(out)
    target = _absolute(out)
    _refuse_around_inputs(out, target, [Path(p) for p in inputs if isinstance(p, str | Path)])
    if out.is_symlink():
        raise OutputExistsError(f"output {str(out)!r} is a link; pass the folder it points to")
    if out.exists():
        if not force:
            raise OutputExistsError(
                f"output folder {str(out)!r} exists; choose another or pass --force"
            )
        _refuse_foreign(out)
    _check_writable(out, target, min_free_bytes)
    remove_stale(target)
    return out


@contextmanager
def staged_output(out: str | Path, *, force: bool, inputs: Iterable[object] = ()) -> Iterator[Path]:
    """A staging folder to fill; on a clean exit it becomes ``out`` (with :data:`MARKER`),
    on any failure it is removed and ``out`` is left as it was."""
    out = check_output(out, force=force, inputs=inputs, min_free_bytes=0)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=_own_prefix(out, _STAGING), dir=out.parent))
    try:
        yield staging
        (staging / MARKER).write_text(
            "written by safeshare: `--force` may replace this folder\n", encoding="utf-8"
        )
        staging.chmod(0o755)  # mkdtemp makes it private to the user; give it the usual mode
        _swap_into_place(staging, out, force)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def read_json(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object a file of an output folder holds (a card, a transform's settings), or
    one :class:`InputError` line naming the file: missing, not UTF-8, not a JSON object.

    >>> import tempfile, pathlib
    >>> card = pathlib.Path(tempfile.mkdtemp()) / "card.json"
    >>> _ = card.write_text("{not json")
    >>> read_json(card, "a model's card")
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: ...card.json is not a model's card: not valid JSON at line 1...
    """
    path = Path(path)
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} is missing; pass a folder safeshare wrote") from None
    except (UnicodeDecodeError, IsADirectoryError):
        raise InputError(f"{path} is not {what}: not JSON text") from None
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path} is not {what}: not valid JSON at line {err.lineno}; pass a folder "
            "safeshare wrote (or write it again)"
        ) from None
    except RecursionError:
        raise InputError(f"{path} is not {what}: nested too deeply") from None
    if not isinstance(content, dict):
        raise InputError(f"{path} is not {what}: not a JSON object")
    return content


def read_weights(path: str | Path, load: Callable[[str], Any]) -> Any:
    """Tensors read by ``load`` (a safetensors loader) from ``path``, or one
    :class:`InputError` line when the file is not safetensors."""
    from safetensors import SafetensorError

    try:
        return load(str(path))
    except FileNotFoundError:
        raise InputError(f"{path} is missing; pass a folder safeshare wrote") from None
    except (SafetensorError, OSError, ValueError):
        raise InputError(
            f"{path} is not a safetensors file of weights; pass a folder safeshare wrote"
        ) from None


def is_safeshare_output(folder: Path) -> bool:
    """True for a folder written by :func:`staged_output` (or an empty one)."""
    return (folder / MARKER).is_file() or not any(folder.iterdir())


def remove_stale(target: Path) -> None:
    """Remove staging folders beside ``target`` whose writing process is gone (a killed run)."""
    parent = target.parent
    if not parent.is_dir():
        return
    prefixes = [_prefix(target, kind) for kind in (_STAGING, _REPLACED)]
    for folder in parent.iterdir():
        prefix = next((p for p in prefixes if folder.name.startswith(p)), None)
        if prefix is None or folder.is_symlink() or not folder.is_dir():
            continue
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _swap_into_place(staging: Path, out: Path, force: bool) -> None:
    if not out.exists():
        staging.rename(out)
        return
    if not force:
        raise OutputExistsError(f"output folder {str(out)!r} appeared during the run")
    _refuse_foreign(out)
    old = Path(tempfile.mkdtemp(prefix=_own_prefix(out, _REPLACED), dir=out.parent))
    out.rename(old / out.name)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _refuse_foreign(out: Path) -> None:
    if not out.is_dir():
        raise OutputExistsError(
            f"output {str(out)!r} is a file, not an output folder; choose a folder name"
        )
    if not is_safeshare_output(out):
        raise OutputExistsError(
            f"output folder {str(out)!r} holds files safeshare did not write; "
            "--force replaces only an earlier safeshare output: choose a new folder"
        )


def _refuse_around_inputs(out: Path, target: Path, inputs: list[Path]) -> None:
    here = _absolute(Path.cwd())
    if target == here or target in here.parents:
        raise OutputExistsError(
            f"output folder {str(out)!r} is the current folder or one above it; "
            "write to a new folder, e.g. --out release/"
        )
    for path in inputs:
        source = _absolute(path)
        if target == source or target in source.parents:
            raise OutputExistsError(
                f"output folder {str(out)!r} holds the input {str(path)!r}; "
                "write to a folder of its own, e.g. --out release/"
            )


def _check_writable(out: Path, target: Path, min_free_bytes: int) -> None:
    existing = target.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"cannot create output folder {str(out)!r}: {str(existing)!r} is a file; "
            "choose another location"
        )
    try:  # a real probe: permissions, read-only file systems and quotas all show here
        probe = tempfile.mkdtemp(prefix=".safeshare-probe-", dir=existing)
    except OSError as err:
        raise InputError(
            f"cannot write output folder {str(out)!r}: {str(existing)!r} is not writable "
            f"({err.strerror}); choose another location"
        ) from None
    os.rmdir(probe)
    free = shutil.disk_usage(existing).free
    if free < min_free_bytes:
        raise InputError(
            f"cannot write output folder {str(out)!r}: {free // 2**20} MiB free where "
            f"{str(existing)!r} lies, {min_free_bytes // 2**20} MiB needed; free some space"
        )


def _prefix(target: Path, kind: str) -> str:
    return f".{target.name}.{kind}-"


def _own_prefix(target: Path, kind: str) -> str:
    return f"{_prefix(target, kind)}{os.getpid()}-"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _absolute(path: Path) -> Path:
    with suppress(OSError):
        return path.resolve()
    return Path(os.path.abspath(path))
