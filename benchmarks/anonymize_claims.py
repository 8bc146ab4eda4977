"""Whether an anonymization's claims hold for the file as written, over a grid of configs.

For each config the released frame is recounted with pandas alone (grouped by its written
quasi-identifiers, the all-``*`` masked records a class like any other): the smallest class
and the fewest distinct sensitive values, against what the result claims (k-anonymity and
distinct l-diversity, satisfied and achieved).  Two datasets: ``adult-arx`` (ARX's
hierarchies, sensitive ``salary-class``) and the bundled ``fair`` example (``auto``
hierarchies, sensitive ``rate_marriage``); the first 3 to 6 quasi-identifiers, k in 5, 10,
50, with and without l = 2, 1% and 5% suppression, and the suppressed records removed,
masked, or masked after local recoding: 144 configs each.

    .venv/bin/python benchmarks/anonymize_claims.py
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.models import AnonymizationError
from safeshare.data.examples import load_example

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
Dataset = tuple[str, pd.DataFrame, list[str], str, Callable[[str], dict[str, Any]]]


def datasets() -> Iterator[Dataset]:
    folder = SHARED / "datasets" / "adult-arx"
    if (folder / "adult.csv").is_file():
        adult = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
        qis = [c for c in adult.columns if c != "salary-class"]
        yield (
            "adult-arx",
            adult,
            qis,
            "salary-class",
            lambda c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")},
        )
    else:
        print(f"{folder} is missing: adult-arx skipped", file=sys.stderr)
    fair = load_example("fair")[0].astype(str)
    qis = ["age", "yrs_married", "children", "religious", "educ", "occupation"]
    yield "fair", fair, qis, "rate_marriage", lambda c: {"hierarchy": "auto"}


def configs(
    qis: list[str], sensitive: str, spec: Callable[[str], dict[str, Any]]
) -> Iterator[dict]:
    grid = itertools.product(
        [3, 4, 5, 6], [5, 10, 50], [None, 2], [0.01, 0.05], ["remove", "mask", "mask+recode"]
    )
    for n, k, l, limit, mode in grid:  # noqa: E741
        privacy: dict[str, Any] = {"k": k}
        if l is not None:
            privacy["l_diversity"] = {"attribute": sensitive, "l": l}
        yield {
            "quasi_identifiers": {c: spec(c) for c in qis[:n]},
            "sensitive": [sensitive],
            "privacy": privacy,
            "suppression_limit": limit,
            "suppressed_records": "remove" if mode == "remove" else "mask",
            "recode_suppressed": mode == "mask+recode",
            "other_columns": "drop",
        }


def main() -> None:
    for name, frame, all_qis, sensitive, spec in datasets():
        counts = {"configs": 0, "solved": 0, "claim broken": 0, "figure wrong": 0, "unmasked": 0}
        for config in configs(all_qis, sensitive, spec):
            counts["configs"] += 1
            try:
                result = Anonymizer(config).fit(frame)
            except AnonymizationError:
                continue
            counts["solved"] += 1
            qis = list(config["quasi_identifiers"])
            groups = result.frame.groupby(qis)[sensitive]
            k, l = int(groups.size().min()), int(groups.nunique().min())  # noqa: E741
            claims = {m.name: m for m in result.models}
            checks = [("k-anonymity", "k", k, config["privacy"]["k"])]
            if "l_diversity" in config["privacy"]:
                checks.append(("distinct l-diversity", "l", l, 2))
            broken = any(claims[m].satisfied and found < needed for m, _, found, needed in checks)
            wrong = any(claims[m].achieved[key] != found for m, key, found, _ in checks)
            counts["claim broken"] += broken
            counts["figure wrong"] += wrong
            counts["unmasked"] += result.suppressed_records != config["suppressed_records"]
        print(
            f"{name:10s} {counts['configs']} configs, {counts['solved']} solved; a satisfied "
            f"claim the written file breaks: {counts['claim broken']}; an achieved k or l the "
            f"file does not have: {counts['figure wrong']}; masked records removed instead "
            f"(they would have broken a model): {counts['unmasked']}"
        )


if __name__ == "__main__":
    main()
