"""What PE's LLM text APIs say to a model, and what they keep of its replies.

Prompt files (``prompts/<name>.txt``, or a file of the user's) hold the ``[random.*]`` and
``[vary.*]`` sections; :func:`load_prompts` reads one and :func:`check_prompts` refuses one
that lacks a section or a placeholder (:data:`PLACEHOLDERS`).  A variation prompt shows its
sample with blanks (:func:`mask`), whole, or among others of its selection (:func:`few_shot`).
A reply is kept as a text of the task only when :func:`clean_reply` finds one in it; a reply
cut at the token limit keeps its whole sentences (:func:`whole_sentences`).  Used by both
backends (:mod:`~safeshare.synth.pe.openai_client`, :mod:`~safeshare.synth.pe.local`).

>>> prompts = load_prompts()
>>> sorted(prompts)
['random.system', 'random.user', 'vary.system', 'vary.user']
>>> import numpy as np
>>> mask("the food was cold", 0.5, np.random.default_rng(0))
'the food _ _'
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.errors import InputError

PLACEHOLDERS = {
    "random.system": frozenset(),
    "random.user": frozenset({"label", "keywords"}),
    "vary.system": frozenset(),
    "vary.user": frozenset({"label", "masked", "text", "words", "examples"}),
}
"""Each prompt section and the placeholders it may use.  ``vary.user`` must show the model the
sample it varies: ``{masked}`` (its words with a share ``degree`` blanked), ``{text}`` (whole),
or ``{examples}`` (it and other selected samples, one per line); ``{words}`` is its length in
words, so a prompt can ask for the voted samples' lengths (adaptive length)."""

SHOWN = ("masked", "text", "examples")
"""The placeholders of which ``vary.user`` must use one."""

EXAMPLES = 3
"""Selected samples shown by ``{examples}``: the one varied, then others of the same selection."""


def bundled_prompts() -> list[str]:
    """The names of the prompt files that ship with safeshare (``aug_pe``: fill-in-the-blanks,
    Aug-PE's variation; ``paraphrase``: a whole rewrite at the sample's length, for small
    models; ``few_shot``: a new text like the selected ones).

    >>> bundled_prompts()
    ['aug_pe', 'few_shot', 'paraphrase']
    """
    folder = resources.files("safeshare.synth.pe") / "prompts"
    names = (f.name.removesuffix(".txt") for f in folder.iterdir() if f.name.endswith(".txt"))
    return sorted(n for n in names if n != "reviews")  # (reviews.txt is the vocabulary)


def load_prompts(source: str | Path = "aug_pe") -> dict[str, str]:
    """The ``[section]`` texts of a prompt file: a file of yours (a ``Path``) or a bundled one
    by name (``safeshare/synth/pe/prompts/<name>.txt``), checked by :func:`check_prompts`."""
    file: Any
    if isinstance(source, Path):
        file, where = source, str(source)
        if not file.is_file():
            raise InputError(
                f"--prompts {where}: no such file; give a prompt file (UTF-8) or the name of a "
                f"bundled one ({', '.join(bundled_prompts())})"
            )
    else:
        file = resources.files("safeshare.synth.pe") / "prompts" / f"{source}.txt"
        where = f"safeshare/synth/pe/prompts/{source}.txt"
        if not file.is_file():
            raise InputError(f"no bundled prompt file {source!r} in safeshare/synth/pe/prompts/")
    try:
        text = file.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        raise InputError(f"--prompts {where}: not a UTF-8 text file") from None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#") or (current is None and not line.strip()):
            continue
        if line.startswith("[") and line.strip().endswith("]"):
            current = sections.setdefault(line.strip()[1:-1], [])
        elif current is not None:
            current.append(line)
    prompts = {k: "\n".join(v).strip() for k, v in sections.items()}
    check_prompts(prompts, where)
    return prompts


def placeholders(template: str) -> set[str]:
    """The ``{names}`` a prompt template fills (``ValueError`` if it is not a template).

    >>> sorted(placeholders("Fill this {label} text: {masked} ({{braces}})"))
    ['label', 'masked']
    """
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def check_prompts(prompts: dict[str, str], where: str = "the prompts") -> None:
    """Refuse prompts that lack a section, name an unknown placeholder or show no sample in
    ``vary.user`` (none of :data:`SHOWN`: the model would never see the text it varies).

    >>> check_prompts({"random.system": "", "random.user": "Write {topic}.",
    ...                "vary.system": "", "vary.user": "Fill: {masked}"}, "p.txt")
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: p.txt: [random.user] uses {topic}; it may use only {keywords}, {label}
    """
    missing = [name for name in PLACEHOLDERS if name not in prompts]
    if missing:
        raise InputError(
            f"{where}: no [{'], ['.join(missing)}] section; a prompt file has the sections "
            f"{', '.join(f'[{n}]' for n in PLACEHOLDERS)}"
        )
    used: dict[str, set[str]] = {}
    for name, allowed in PLACEHOLDERS.items():
        try:
            used[name] = placeholders(prompts[name])
        except ValueError as error:
            raise InputError(f"{where}: [{name}] is not a valid template ({error})") from None
        unknown = sorted(used[name] - allowed)
        if unknown:
            may = ", ".join(f"{{{a}}}" for a in sorted(allowed)) or "no placeholders"
            raise InputError(f"{where}: [{name}] uses {{{unknown[0]}}}; it may use only {may}")
    if not used["vary.user"] & set(SHOWN):
        raise InputError(
            f"{where}: [vary.user] must contain {{masked}}, {{text}} or {{examples}} (the "
            "synthetic text to vary); write literal braces as {{ and }}"
        )


def mask(text: str, degree: float, rng: np.random.Generator) -> str:
    """``text`` with ``max(1, round(degree * words))`` of its words replaced by ``_``."""
    words = text.split()
    if not words:
        return "_"
    count = min(len(words), max(1, round(degree * len(words))))
    for i in rng.choice(len(words), size=count, replace=False):
        words[int(i)] = "_"
    return " ".join(words)


_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*(?=\s|$)")


def whole_sentences(text: str) -> str:
    """A reply cut at the token limit, up to its last whole sentence (unchanged when it has
    none): a text cut mid-sentence is not a text of the task.

    >>> whole_sentences("The food was cold. The waiter never came back and we")
    'The food was cold.'
    >>> whole_sentences("Too loud and too")
    'Too loud and too'
    """
    ends = list(_SENTENCE_END.finditer(text))
    return text[: ends[-1].end()].strip() if ends else text.strip()


def few_shot(texts: Sequence[str], rng: np.random.Generator) -> list[str]:
    """For each text, it and up to ``EXAMPLES - 1`` other distinct texts of ``texts``, one per
    line (what ``{examples}`` shows).

    >>> few_shot(["Cold food.", "Rude staff."], np.random.default_rng(0))
    ['- Cold food.\\n- Rude staff.', '- Rude staff.\\n- Cold food.']
    """
    distinct = list(dict.fromkeys(texts))
    shown = []
    for text in texts:
        drawn = rng.permutation(len(distinct))[:EXAMPLES]
        others = [distinct[int(j)] for j in drawn if distinct[int(j)] != text]
        shown.append("\n".join(f"- {t}" for t in [text, *others[: EXAMPLES - 1]]))
    return shown


_META = re.compile(
    r"\b(as an ai|language model|i'?m sorry|i apologi[sz]e|i (?:cannot|can'?t|am unable to) "
    r"(?:help|assist|fulfil|fulfill|comply|provide|create|write)|i'?ll (?:create|write|generate|"
    r"rewrite|fill|provide|make)|i will (?:create|write|generate|rewrite|fill|provide|make)|"
    r"here(?: is|'s| are) (?:a|an|the|your|my|one)(?: \w+)? (?:review|text|sentence|version|"
    r"rewrite|completion)|based on (?:your|the) (?:feedback|prompt|instructions?|keywords|"
    r"request)|(?:fill(?:ed)?|filling) (?:in )?(?:the|each) blanks?|rewritten (?:text|review|"
    r"version)|(?:share|write|writing|offer|offering|provide|providing) (?:a|an|my|this|your) "
    r"(?:\w+ )?review|this (?:\w+ )?review (?:provides|describes|is about))\b"
    r"|^(?:sure|certainly|of course|okay)\b[,!.]",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:review|text|sentence|answer|output|rewritten(?: text)?)\s*:\s*", re.I)
# a short lead-in and a colon before the text in quotes: 'You could rephrase it to: "..."'
_QUOTED_AFTER_LEAD = re.compile(r'^[^"“:]{1,60}:\s*["“](?P<text>[^"“”]+)["”]\s*$')


def clean_reply(reply: str, asked: str = "") -> str:
    r"""A reply's text, or "" when it is not a text of the task: no letters or digits, blanks
    left unfilled, a meta-reply or refusal ("I'll create a sentence based on your feedback",
    "As an AI..."), or the prompt ``asked`` copied back.  A preamble line ending in a colon
    ("Here is the review:"), a leading label ("Review: ") and a short lead-in before a quoted
    text ('I would say: "..."') are dropped first.

    >>> clean_reply('  "Great food."  '), clean_reply("..."), clean_reply("The _ was good")
    ('Great food.', '', '')
    >>> clean_reply("Here is the review:\nThe staff were lovely."), clean_reply("Review: Too loud.")
    ('The staff were lovely.', 'Too loud.')
    >>> clean_reply('You could rephrase it to: "The food was too expensive for me."')
    'The food was too expensive for me.'
    >>> clean_reply("I'll create a sentence based on your feedback."), clean_reply("I can't recommend it.")
    ('', "I can't recommend it.")
    """
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        lines = lines[1:]
    text = _LABEL.sub("", " ".join(lines).lstrip("-*#> ")).strip()
    quoted = _QUOTED_AFTER_LEAD.match(text)
    text = quoted["text"].strip() if quoted else text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if not any(c.isalnum() for c in text) or "_" in text.split() or _META.search(text):
        return ""
    first = asked.strip().splitlines()[0] if asked.strip() else ""
    if first and (first[:40].lower() in text.lower() or text.lower() in asked.lower()):
        return ""
    return text
