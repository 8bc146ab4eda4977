"""The report's charts draw aggregates only: no bar shows a handful of training records."""

from __future__ import annotations

import numpy as np
import pandas as pd

from safeshare.data.domain import Column, Domain, Kind
from safeshare.data.table import Table
from safeshare.report.html import RARE, SMALL_CELL, worst_columns


def _table(values: list[str], domain: Domain) -> Table:
    table, _ = Table.from_frame(pd.DataFrame({"job": values}), domain)
    return table


def test_a_category_held_by_fewer_than_ten_training_records_is_drawn_empty() -> None:
    domain = Domain((Column("job", Kind.CATEGORICAL, categories=("clerk", "pilot", "astronaut")),))
    train = _table(["clerk"] * 40 + ["pilot"] * SMALL_CELL + ["astronaut"] * 2, domain)
    release = _table(["clerk"] * 26 + ["pilot"] * 26, domain)

    [(name, labels, real, released)] = worst_columns(train, release)

    assert labels[:2] == ("clerk", "pilot") and labels[2] == RARE  # two people: not named
    shares = dict(zip(labels, real, strict=True))
    assert name == "job"
    assert shares[RARE] == 0.0  # nor drawn
    assert shares["pilot"] == SMALL_CELL / 52  # ten people: drawn, over the true total
    assert shares["clerk"] == 40 / 52
    np.testing.assert_allclose(released[:2], [0.5, 0.5])


def test_the_columns_are_ranked_by_how_far_the_release_is_from_them() -> None:
    domain = Domain(
        (
            Column("near", Kind.CATEGORICAL, categories=("a", "b")),
            Column("far", Kind.CATEGORICAL, categories=("a", "b")),
        )
    )
    train, _ = Table.from_frame(pd.DataFrame({"near": ["a", "b"] * 20, "far": ["a"] * 40}), domain)
    release, _ = Table.from_frame(
        pd.DataFrame({"near": ["a", "b"] * 20, "far": ["b"] * 40}), domain
    )

    assert [panel[0] for panel in worst_columns(train, release)] == ["far", "near"]
