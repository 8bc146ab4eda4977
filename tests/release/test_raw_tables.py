"""A raw CSV without a schema, released as an analyst will read it (issue 18)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from safeshare.evaluate.neutral import column_distances
from safeshare.release import SynthesisSettings, release


def _raw_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame(
        {
            "age": age,
            "hours": np.where(rng.random(n) < 0.5, 40, rng.integers(10, 70, n)),
            "gain": np.where(rng.random(n) < 0.9, 0, rng.integers(500, 20_000, n)),
            "job": rng.choice(["nurse", "clerk", "?", "driver"], n, p=[0.4, 0.3, 0.1, 0.2]),
            "income": np.where(age + rng.normal(0, 10, n) > 50, ">50K", "<=50K"),
        }
    )


def _released_text(folder: Path, seed: int) -> pd.DataFrame:
    """``people.csv`` in ``folder`` released at epsilon 4, read back as the file writes it."""
    settings = SynthesisSettings(epsilon=4.0)
    release(folder / "people.csv", out=folder / "out", settings=settings, seed=seed,
            ledger=folder / "ledger")  # fmt: skip
    return pd.read_csv(folder / "out" / "synthetic.csv", dtype=str, keep_default_na=False)


def test_values_come_back_as_the_file_writes_them(tmp_path: Path) -> None:
    table = _raw_table(4000, 0)
    table.to_csv(tmp_path / "people.csv", index=False)
    text = _released_text(tmp_path, seed=1)
    assert (text["job"] == "?").mean() > 0.05  # '?' is written back as '?', not as an empty field
    assert (text["job"] == "").mean() < 0.01
    numbers = text[["age", "hours", "gain"]]
    assert not numbers.apply(lambda c: c.str.contains(r"\.", regex=True)).any().any()
    released = pd.read_csv(tmp_path / "out" / "synthetic.csv")
    assert abs((released["hours"] == 40).mean() - (table["hours"] == 40).mean()) < 0.03
    assert abs((released["gain"] > 0).mean() - (table["gain"] > 0).mean()) < 0.03
    assert max(column_distances(table, released).values()) < 0.05


def test_without_a_spelling_missing_values_stay_empty(tmp_path: Path) -> None:
    table = _raw_table(3000, 2).replace({"job": {"?": None}})
    table.to_csv(tmp_path / "people.csv", index=False)
    text = _released_text(tmp_path, seed=3)
    assert (text["job"] == "").mean() > 0.05 and not (text["job"] == "?").any()


def test_discovery_counts_the_spellings_whatever_the_data_hold(tmp_path: Path) -> None:
    from safeshare.data.readers import Layout
    from safeshare.data.row_order import RowOrder
    from safeshare.release.inputs import FrameInput

    _raw_table(50, 4).replace({"job": {"?": "cook"}}).to_csv(tmp_path / "t.csv", index=False)
    data = FrameInput.from_file(tmp_path / "t.csv", Layout(), None)
    data.split(0.2, RowOrder.draw(np.random.default_rng(0)))
    spellings = data.discovery_spellings()  # no token in the file: still measured, all ''
    assert spellings is not None and len(spellings) == 40 and spellings.columns.empty
