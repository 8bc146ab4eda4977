"""The neutral scorer: figures in the data's own terms, equal to the shared reference's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.evaluate.neutral import column_distances, neutral_tvd, value_utility
from safeshare.release import SynthesisSettings

from ..conftest import SHARED, needs_shared


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    age = rng.integers(17, 90, n)
    return pd.DataFrame(
        {
            "age": age,
            "hours": np.where(rng.random(n) < 0.5, 40, rng.integers(1, 99, n)),
            "grade": rng.integers(1, 5, n),
            "job": rng.choice(["a", "b", "?", "c d"], n),
            "income": np.where(age + rng.normal(0, 10, n) > 50, ">50K", "<=50K"),
        }
    )


def test_a_column_collapsed_to_one_value_scores_what_an_analyst_sees() -> None:
    real = _table(np.random.default_rng(0), 2000)
    collapsed = real.assign(hours=40)
    distances = column_distances(real, collapsed)
    assert distances["hours"] > 0.3  # half the records are not at 40 hours
    assert distances["age"] == 0.0
    assert neutral_tvd(real, real, 3).mean == 0.0


def test_numbers_compare_by_value_and_text_by_string() -> None:
    real = pd.DataFrame({"grade": ["1", "2"] * 20, "job": ["a", "b"] * 20})
    floats = pd.DataFrame({"grade": [1.0, 2.0] * 20, "job": ["a", "b"] * 20})
    assert neutral_tvd(real, floats, 2).mean == 0.0
    renamed = floats.assign(job=["A", "B"] * 20)
    assert neutral_tvd(real, renamed, 1).max == 1.0


def _reference(folder: Path, real: str, released: str, ways: int) -> tuple[float, float, int]:
    """What ``../shared/tools/neutral_tvd.py real released ways`` prints: mean, max, marginals."""
    script = SHARED.parent / "tools" / "neutral_tvd.py" if SHARED else None
    if script is None or not script.is_file():
        pytest.fail("the shared folder lacks tools/neutral_tvd.py")
    printed = subprocess.run(
        [sys.executable, str(script), real, released, str(ways)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(printed[0]), float(printed[1]), int(printed[2])


@needs_shared
def test_agrees_with_the_shared_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    real, released = _table(rng, 3000), _table(rng, 2500)
    released.loc[released.index[:40], "age"] = np.nan  # missing numbers: a cell of their own
    released.loc[released.index[:30], "job"] = None
    real.to_csv(tmp_path / "real.csv", index=False)
    released.to_csv(tmp_path / "released.csv", index=False)
    for ways in (1, 2, 3):
        mean, largest, marginals = _reference(tmp_path, "real.csv", "released.csv", ways)
        ours = neutral_tvd(
            pd.read_csv(tmp_path / "real.csv"), pd.read_csv(tmp_path / "released.csv"), ways
        )
        assert ours.mean == pytest.approx(mean, abs=1e-4)
        assert ours.max == pytest.approx(largest, abs=1e-4)
        assert ours.marginals == marginals


@needs_shared
def test_the_card_reports_what_the_reference_gives_on_the_written_files(tmp_path: Path) -> None:
    from safeshare.release import release

    table = _table(np.random.default_rng(2), 3000)  # its 'job' writes missing values as '?'
    table.to_csv(tmp_path / "input.csv", index=False)
    result = release(
        tmp_path / "input.csv",
        out=tmp_path / "out",
        seed=0,
        ledger=tmp_path / "l",
        settings=SynthesisSettings(epsilon=4.0),
    )
    utility = result.card["metrics"]["utility"]
    for ways in (1, 3):
        mean, _, _ = _reference(tmp_path, "input.csv", "out/synthetic.csv", ways)
        figure = utility["tvd_vs_input"][f"{ways}way"]["mean"]
        assert figure == pytest.approx(mean, abs=5e-5)  # the reference prints four decimals
    assert "utility_codes" in result.card["metrics"]  # the code-level figure, as a second line


def test_the_independent_columns_baseline_keeps_every_column_and_none_of_their_relations() -> None:
    """Two columns that always agree: the training records shuffled column by column keep each
    column's shares but not the agreement, so a release that keeps it scores far below them."""
    rng = np.random.default_rng(0)

    def agreeing(n: int) -> pd.DataFrame:
        letters = rng.choice(list("abcdefgh"), n)
        return pd.DataFrame({"x": letters, "y": letters})

    train, holdout = agreeing(4000), agreeing(1000)
    utility = value_utility(agreeing(4000), train, holdout, np.random.default_rng(1), ways=(1, 2))
    one_way, two_way = utility.independent
    assert one_way.mean < 0.05 and two_way.mean > 0.8  # 7 of 8 shuffled pairs disagree
    assert utility.vs_holdout[1].mean < 0.05
    assert utility.to_dict()["tvd_independent_columns_baseline"]["2way"]["mean"] == two_way.mean
