"""Text PE without a language model: templates for the random API, word edits for variation.

The CPU floor of text PE (the role an LLM plays in Aug-PE).  All material is public: a
:class:`Vocabulary` file of templates and word lists (``prompts/reviews.txt`` ships with
the package; see its header for the format), never the private texts.  :class:`WordAPI`

* ``random(n, rng)`` fills a random template's ``{slot}`` s with random entries, and
* ``vary(samples, degree, rng)`` edits a share ``degree`` of each text's words: a word is
  replaced by another of its own section (or, if it has none, of any), deleted, swapped
  with its neighbour, or a word of ``[insert]`` goes before it (Aug-PE's masked fill, at
  the word level).

``label`` conditions both on a label's *name* (public, as in a prompt): sections
``slot@label`` replace ``slot``.  Randomness comes only from the ``rng`` passed in.

>>> import numpy as np
>>> api = WordAPI(Vocabulary.bundled("reviews"), label="positive")
>>> first = api.random(3, np.random.default_rng(0))
>>> list(first.columns), len(first)
(['text'], 3)
>>> varied = api.vary(first, 0.5, np.random.default_rng(1))
>>> len(varied), bool((varied["text"] != first["text"]).all())
(3, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from safeshare.data.readers import read_text
from safeshare.errors import InputError

_SLOT = re.compile(r"\{([A-Za-z_]\w*)\}")
_TOKEN = re.compile(r"[\w']+|[^\w\s]")
_NO_SPACE_BEFORE = re.compile(r" ([.,!?;:])")
# shares of the four word edits: replace, delete, swap, insert
EDITS = np.array([0.6, 0.1, 0.15, 0.15])


@dataclass(frozen=True)
class Vocabulary:
    """Named sections of entries (``templates``, slots, ``slot@label``, ``insert``)."""

    sections: Mapping[str, tuple[str, ...]]
    source: str = "<memory>"

    @classmethod
    def parse(cls, text: str, source: str = "<memory>") -> Vocabulary:
        """Read ``[section]`` headers and one entry per line; ``#`` starts a comment line.

        >>> Vocabulary.parse("[templates]\\nA {x}.\\n[x]\\ncat\\ndog").sections["x"]
        ('cat', 'dog')
        """
        sections: dict[str, list[str]] = {}
        current: list[str] | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1].strip(), [])
                continue
            if current is None:
                raise InputError(f"{source}, line {number}: an entry before any [section] header")
            current.append(line)
        vocabulary = cls({k: tuple(dict.fromkeys(v)) for k, v in sections.items()}, source)
        vocabulary._check()
        return vocabulary

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """A vocabulary file (UTF-8)."""
        return cls.parse(read_text(path, "vocabulary file"), str(path))

    @classmethod
    def bundled(cls, name: str) -> Vocabulary:
        """A vocabulary shipped in ``safeshare/synth/pe/prompts/`` (``"reviews"``)."""
        folder = resources.files("safeshare.synth.pe") / "prompts"
        file = folder / f"{name}.txt"
        if not file.is_file():
            known = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))
            raise InputError(f"no bundled vocabulary {name!r}; bundled: {known}")
        return cls.parse(file.read_text(encoding="utf-8"), f"safeshare/synth/pe/prompts/{name}.txt")

    def _check(self) -> None:
        if not self.sections.get("templates"):
            raise InputError(f"{self.source}: no [templates] section (or it is empty)")
        empty = sorted(k for k, v in self.sections.items() if not v)
        if empty:
            raise InputError(f"{self.source}: section(s) {empty} have no entries")
        for template in self.sections["templates"]:
            for slot in _SLOT.findall(template):
                if not self.entries(slot.lower(), None):
                    raise InputError(
                        f"{self.source}: the template {template!r} uses {{{slot}}} but there is "
                        f"no [{slot.lower()}] or [{slot.lower()}@...] section"
                    )

    def labels(self) -> list[str]:
        """The labels some section is conditioned on."""
        return sorted({k.split("@", 1)[1] for k in self.sections if "@" in k})

    def entries(self, slot: str, label: str | None) -> tuple[str, ...]:
        """What fills ``{slot}``: ``slot@label`` if there is one, else ``slot``; without a
        label, ``slot`` and every ``slot@*`` together."""
        if label is not None and f"{slot}@{label}" in self.sections:
            return self.sections[f"{slot}@{label}"]
        if label is not None:
            return self.sections.get(slot, ())
        found = [v for k, v in self.sections.items() if k == slot or k.startswith(f"{slot}@")]
        return tuple(dict.fromkeys(e for entries in found for e in entries))


def _words(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if t[0].isalnum() or t[0] == "_"]


def _join(tokens: Sequence[str]) -> str:
    return _NO_SPACE_BEFORE.sub(r"\1", " ".join(tokens))


class WordAPI:
    """Random and variation APIs over a public :class:`Vocabulary` (one text column)."""

    def __init__(
        self, vocabulary: Vocabulary, *, label: str | None = None, column: str = "text"
    ) -> None:
        if label is not None and label not in vocabulary.labels():
            raise InputError(
                f"the vocabulary {vocabulary.source} has no section for the label {label!r}; "
                f"its labels: {vocabulary.labels()}"
            )
        self.vocabulary = vocabulary
        self.label = label
        self.column = column
        slots = {k.split("@", 1)[0] for k in vocabulary.sections} - {"templates", "insert"}
        self._pools = {s: vocabulary.entries(s, label) for s in sorted(slots)}
        self._templates = vocabulary.entries("templates", label)
        self._inserts = vocabulary.entries("insert", label) or tuple(
            sorted({w for pool in self._pools.values() for w in pool if " " not in w})
        )
        # a word's section, to replace it by a word of the same kind (one-word entries only)
        self._words: dict[str, tuple[str, ...]] = {}
        self._section: dict[str, str] = {}
        for slot, pool in self._pools.items():
            singles = [w[0] for w in (_words(e) for e in pool) if len(w) == 1]
            self._words[slot] = tuple(dict.fromkeys(singles))
            for word in singles:
                self._section.setdefault(word.lower(), slot)
        self._words[""] = tuple(
            dict.fromkeys(w[0] for w in (_words(e) for e in self._inserts) if len(w) == 1)
        ) or tuple(sorted(self._section))

    def for_label(self, label: str) -> WordAPI:
        """The same vocabulary conditioned on ``label``."""
        return WordAPI(self.vocabulary, label=label, column=self.column)

    def _fill(self, template: str, rng: np.random.Generator) -> str:
        def one(match: re.Match[str]) -> str:
            slot = match.group(1)
            pool = self._pools[slot.lower()]
            word = pool[int(rng.integers(len(pool)))]
            return word[:1].upper() + word[1:] if slot[:1].isupper() else word

        return _SLOT.sub(one, template)

    def random(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``n`` texts, each a random template with random fillers."""
        picks = rng.integers(len(self._templates), size=n)
        return pd.DataFrame({self.column: [self._fill(self._templates[i], rng) for i in picks]})

    def _replacement(self, word: str, rng: np.random.Generator) -> str:
        pool = self._words[self._section.get(word.lower(), "")]  # "": words of no section
        others = [w for w in pool if w.lower() != word.lower()] or list(pool)
        new = others[int(rng.integers(len(others)))]
        return new[:1].upper() + new[1:] if word[:1].isupper() else new

    def _edit(self, text: str, degree: float, rng: np.random.Generator) -> str:
        tokens = _TOKEN.findall(text)
        words = [i for i, t in enumerate(tokens) if t[0].isalnum() or t[0] == "_"]
        if not words:
            return self._fill(self._templates[int(rng.integers(len(self._templates)))], rng)
        count = max(1, round(degree * len(words)))
        chosen = set(rng.choice(words, size=min(count, len(words)), replace=False).tolist())
        out: list[str] = []
        for i, token in enumerate(tokens):
            if i not in chosen:
                out.append(token)
                continue
            edit = int(rng.choice(len(EDITS), p=EDITS))
            if edit == 0 or (edit == 1 and len(words) < 3):  # replace (never empty a text)
                out.append(self._replacement(token, rng))
            elif edit == 2 and out and out[-1][0].isalnum():  # swap with the previous word
                out.append(out[-1])
                out[-2] = token
            elif edit == 3:  # insert before
                out.extend([self._inserts[int(rng.integers(len(self._inserts)))], token])
            elif edit == 1:  # delete
                continue
            else:
                out.append(self._replacement(token, rng))
        return _join(out)

    def vary(self, samples: pd.DataFrame, degree: float, rng: np.random.Generator) -> pd.DataFrame:
        """Each text with ``max(1, round(degree * words))`` of its words edited."""
        if not 0 < degree <= 1:
            raise InputError(f"degree must lie in (0, 1], got {degree}")
        if self.column not in samples.columns:
            raise InputError(f"the samples have no column {self.column!r} to vary")
        texts = samples[self.column].astype(str).tolist()
        out = samples.reset_index(drop=True).copy()
        out[self.column] = [self._edit(t, degree, rng) for t in texts]
        return out
