"""The public text sets the language-model benchmarks share: SMS and the UCI review sentences.

``SAFESHARE_SHARED`` (or ``../shared``) holds ``datasets/text``; labels are not read.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).parents[2] / "shared"))
TEXT = SHARED / "datasets" / "text"
REVIEWS = ("amazon_cells", "imdb", "yelp")


def read_set(name: str) -> list[str]:
    """The texts of one set: ``sms`` (5,574 messages) or ``reviews`` (3,000 sentences)."""
    if name == "sms":
        lines = (TEXT / "sms_spam_collection.tsv").read_text(encoding="utf-8").splitlines()
        return [line.split("\t", 1)[1].strip() for line in lines if "\t" in line]
    if name == "reviews":
        texts = []
        for part in REVIEWS:
            path = TEXT / f"uci_sentiment_{part}_labelled.tsv"
            lines = path.read_text(encoding="utf-8").splitlines()
            texts += [line.rsplit("\t", 1)[0].strip() for line in lines if "\t" in line]
        return [t for t in texts if t]
    raise SystemExit(f"unknown set {name!r}: use sms or reviews")
