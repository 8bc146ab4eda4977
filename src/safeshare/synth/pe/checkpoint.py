"""Checkpoints of a PE run: one Parquet file per population and a JSON state, never pickle.

After every step (a population drawn, its votes measured) the population is written to
``population-NNN.parquet`` (the samples plus ``__pe_parent__`` and ``__pe_votes__``
columns) and ``state.json`` names the latest one, each through a temporary file and a
rename, so a run killed at any point resumes from its last finished step.  A measured
population is never measured again on resume (that would spend the budget twice).
Checkpoints hold only synthetic samples and DP votes, never private records.

>>> import tempfile, numpy as np, pandas as pd
>>> from safeshare.synth.pe.population import Population
>>> store = Checkpoint(tempfile.mkdtemp(), {"iterations": 3})
>>> store.save(Population.random(pd.DataFrame({"x": [1, 2]})).with_votes(np.array([0.5, 2.0])))
>>> store.load().votes.tolist()
[0.5, 2.0]
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.errors import InputError
from safeshare.synth.pe.population import Population

FORMAT = "safeshare-pe-checkpoint"
VERSION = 1
PARENT = "__pe_parent__"
VOTES = "__pe_votes__"
SEEDS = "seeds.json"
REPLIES = "replies.jsonl"


def measured_in(folder: str | Path) -> int:
    """The histograms measured by the populations kept under ``folder``: each run's latest
    population (one run per label where there are several), counted only where its file is
    still there.

    >>> import tempfile, numpy as np, pandas as pd
    >>> from safeshare.synth.pe.population import Population
    >>> folder = tempfile.mkdtemp()
    >>> first = Population.random(pd.DataFrame({"x": [1, 2]}))
    >>> Checkpoint(folder, {}).save(first.with_votes(np.array([0.5, 2.0])))
    >>> measured_in(folder)
    1
    """
    total = 0
    for path in sorted(Path(folder).rglob("state.json")):
        try:
            state = json.loads(path.read_text())
        except json.JSONDecodeError:  # not a state this module wrote: it keeps nothing
            continue
        if state.get("format") == FORMAT and (path.parent / str(state.get("latest"))).is_file():
            total += int(state["iteration"]) + int(bool(state["measured"]))
    return total


def _population_file(iteration: int) -> str:
    return f"population-{iteration:03d}.parquet"


class Checkpoint:
    """A folder holding one run's populations; ``settings`` must match to resume."""

    def __init__(self, folder: str | Path, settings: Mapping[str, Any]) -> None:
        self.folder = Path(folder)
        self.settings = json.loads(json.dumps(dict(settings)))  # JSON-normalised

    @property
    def state_path(self) -> Path:
        return self.folder / "state.json"

    def save(self, population: Population) -> None:
        """Write ``population`` (atomically), then point the state at it."""
        clash = {PARENT, VOTES} & set(map(str, population.samples.columns))
        if clash:
            raise InputError(f"sample column(s) {sorted(clash)} are reserved; rename them")
        self.folder.mkdir(parents=True, exist_ok=True)
        name = _population_file(population.iteration)
        frame = population.samples.copy()
        frame.columns = [str(c) for c in frame.columns]
        frame[PARENT] = population.parents
        votes = population.votes
        frame[VOTES] = votes if votes is not None else np.full(len(population), np.nan)
        self._atomic(name, lambda path: frame.to_parquet(path, index=False))
        state = {
            "format": FORMAT,
            "version": VERSION,
            "settings": self.settings,
            "latest": name,
            "iteration": population.iteration,
            "measured": population.measured,
        }
        self._atomic("state.json", lambda path: path.write_text(json.dumps(state, indent=2)))

    def load(self) -> Population | None:
        """The latest saved population, or None for a folder without a checkpoint."""
        if not self.state_path.is_file():
            return None
        try:
            state = json.loads(self.state_path.read_text())
        except json.JSONDecodeError:
            raise InputError(
                f"{self.state_path} is not valid JSON; delete the folder to start afresh"
            ) from None
        if state.get("format") != FORMAT or state.get("version") != VERSION:
            raise InputError(f"{self.state_path} is not a PE checkpoint of version {VERSION}")
        saved = state.get("settings", {})
        for key in sorted(set(saved) | set(self.settings)):
            if saved.get(key) != self.settings.get(key):
                raise InputError(
                    f"the checkpoint in {self.folder} was written with {key}={saved.get(key)!r}, "
                    f"this run has {key}={self.settings.get(key)!r}; resume with the same "
                    "settings or give a new checkpoint folder"
                )
        frame = pd.read_parquet(self.folder / state["latest"])
        parents = frame.pop(PARENT).to_numpy(dtype=np.int64)
        votes = frame.pop(VOTES).to_numpy(dtype=float)
        measured = bool(state["measured"])
        return Population(frame, parents, int(state["iteration"]), votes if measured else None)

    def public_seed(self, step: int) -> int:
        """The seed of a step's public choices (prompts, masks, selection), drawn securely the
        first time and kept in ``seeds.json``: a resumed step makes the same requests, so the
        replies already paid for are read back (:mod:`safeshare.synth.pe.replies`).  It seeds no
        DP noise."""
        path = self.folder / SEEDS
        seeds = json.loads(path.read_text()) if path.is_file() else {}
        if str(step) not in seeds:
            seeds[str(step)] = secrets.randbits(128)
            self.folder.mkdir(parents=True, exist_ok=True)
            self._atomic(SEEDS, lambda file: file.write_text(json.dumps(seeds)))
        return int(seeds[str(step)])

    @property
    def replies_path(self) -> Path:
        """Where an LLM API keeps its replies (:meth:`LLMTextAPI.keep_replies`)."""
        return self.folder / REPLIES

    def first(self) -> pd.DataFrame | None:
        """The samples of the first population (iteration 0, drawn before any vote), when the
        folder still holds them."""
        path = self.folder / _population_file(0)
        if not path.is_file():
            return None
        return pd.read_parquet(path).drop(columns=[PARENT, VOTES])

    def _atomic(self, name: str, write: Any) -> None:
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=self.folder)
        os.close(handle)
        path = Path(temporary)
        try:
            write(path)
            path.replace(self.folder / name)
        finally:
            path.unlink(missing_ok=True)
