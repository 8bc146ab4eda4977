"""A population with mixed column kinds and dependent columns, for planted-answer tests."""

from __future__ import annotations

import numpy as np
import pytest

from safeshare.data import Column, Domain, Kind, Role, Table

DOMAIN = Domain(
    (
        Column("region", Kind.CATEGORICAL, Role.QUASI_IDENTIFIER, categories=tuple("abcdefghij")),
        Column(
            "age", Kind.NUMERIC, Role.QUASI_IDENTIFIER, edges=tuple(range(20, 71, 2)), integer=True
        ),
        Column("education", Kind.ORDINAL, Role.QUASI_IDENTIFIER, categories=tuple("123456")),
        Column("sex", Kind.CATEGORICAL, Role.QUASI_IDENTIFIER, categories=("F", "M")),
        Column("hours", Kind.NUMERIC, edges=tuple(range(0, 81, 4)), integer=True),
        Column("income", Kind.NUMERIC, edges=tuple(range(0, 201, 5)), integer=True),
        Column("diagnosis", Kind.CATEGORICAL, Role.SENSITIVE, categories=tuple("pqrstu")),
    )
)


def draw(rows: int, seed: int) -> Table:
    """Records of one population: education, hours and income follow age; diagnosis follows region."""
    rng = np.random.default_rng(seed)
    region = rng.integers(0, 10, rows)
    age = rng.integers(0, 25, rows)
    education = np.clip(age // 5 + rng.integers(-1, 2, rows), 0, 5)
    sex = rng.integers(0, 2, rows)
    hours = np.clip(10 + age // 3 + rng.integers(-4, 5, rows), 0, 19)
    income = np.clip(education * 5 + rng.integers(0, 16, rows), 0, 39)
    diagnosis = np.where(rng.random(rows) < 0.6, region % 6, rng.integers(0, 6, rows))
    return Table(
        {
            "region": region,
            "age": age,
            "education": education,
            "sex": sex,
            "hours": hours,
            "income": income,
            "diagnosis": diagnosis,
        },
        DOMAIN,
    )


@pytest.fixture(scope="module")
def train() -> Table:
    return draw(3000, 1)


@pytest.fixture(scope="module")
def holdout() -> Table:
    return draw(1500, 2)


@pytest.fixture(scope="module")
def fresh() -> Table:
    """An independent sample of the same population: a release that learned nothing of train."""
    return draw(3000, 3)
