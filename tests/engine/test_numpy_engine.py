import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.data import Column, Domain, Kind, Table
from safeshare.engine import CountingEngine, NumpyEngine, default_engine


def random_table(sizes: list[int], rows: int, seed: int) -> Table:
    rng = np.random.default_rng(seed)
    domain = Domain(
        tuple(
            Column(
                f"c{i}",
                Kind.CATEGORICAL,
                categories=tuple(map(str, range(s))),
                other=False,
                missing=False,
            )
            for i, s in enumerate(sizes)
        )
    )
    return Table({f"c{i}": rng.integers(0, s, rows) for i, s in enumerate(sizes)}, domain)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    rows=st.integers(0, 200),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_counts_match_pandas(sizes, rows, seed, data):
    table = random_table(sizes, rows, seed)
    columns = data.draw(
        st.lists(st.sampled_from(list(table.columns)), min_size=1, max_size=3, unique=True)
    )
    counts = NumpyEngine().counts(table, columns)
    assert counts.shape == table.domain.shape(columns)
    assert counts.sum() == rows
    frame = pd.DataFrame({c: table.column(c) for c in columns})
    for key, size in frame.value_counts().items():
        assert counts[key if isinstance(key, tuple) else (key,)] == size
    sizes_found = NumpyEngine().group_sizes(table, columns)
    assert sorted(sizes_found.tolist()) == sorted(frame.value_counts().tolist())


def test_default_engine_follows_the_protocol(fair_table):
    engine = default_engine()
    assert isinstance(engine, CountingEngine) and engine.name == "numpy"
    counts = engine.counts(fair_table, ["religious", "children"])
    assert counts.sum() == len(fair_table) == 6366


def test_huge_domains_count_groups_without_a_dense_table():
    table = random_table([60_000, 60_000], 1000, 3)
    sizes = NumpyEngine().group_sizes(table, ["c0", "c1"])
    assert sizes.sum() == 1000 and sizes.max() <= 2
